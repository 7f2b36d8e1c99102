//! `mapfilter batch`: seam-free tasks (outputs put together equal one
//! `smooth` of the whole map, byte for byte), resume after SIGKILL at random
//! moments, failure isolation, and two runs on one plan at once.

#![cfg(feature = "gdal")]
mod common;

use common::*;
use gdal::Metadata;
use gdal::raster::GdalDataType;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A map with blobs of 6 classes and nodata holes (code 9 where `nodata`).
fn map(dir: &Path, (w, h): (usize, usize), nodata: Option<u16>, seed: u64) -> PathBuf {
    let raster = synth_with_holes(
        (w, h),
        6,
        mapfilter::synth::Pattern::Simplex,
        seed,
        9.0,
        if nodata.is_some() { 40 } else { 1 },
        nodata.unwrap_or(0),
    );
    let path = dir.join("map.tif");
    write_raster(
        &path,
        &TestRaster {
            width: w,
            height: h,
            data: &raster.data,
            data_type: GdalDataType::UInt8,
            nodata: nodata.map(f64::from),
            colors: true,
        },
    );
    path
}

/// Cuts `map` at the given column and row boundaries into tiles/.
fn cut(map: &Path, xs: &[usize], ys: &[usize]) -> PathBuf {
    let tiles = map.parent().unwrap().join("tiles");
    std::fs::create_dir_all(&tiles).unwrap();
    for (r, y) in ys.windows(2).enumerate() {
        for (c, x) in xs.windows(2).enumerate() {
            let out = tiles.join(format!("t_{r}_{c}.tif"));
            let status = Command::new("gdal_translate")
                .args(["-q", "-of", "GTiff", "-srcwin"])
                .args([x[0], y[0], x[1] - x[0], y[1] - y[0]].map(|v| v.to_string()))
                .arg(map)
                .arg(&out)
                .status()
                .expect("gdal_translate (gdal-bin) runs");
            assert!(status.success());
        }
    }
    tiles
}

/// The outputs of a batch put together on the grid of `whole` (the single
/// `smooth` output), checked pixel for pixel and in their nodata.
fn assert_mosaic_equals(batch: &Path, whole: &Path) {
    let (w, h, expected) = read_raster(whole);
    let ds = gdal::Dataset::open(whole).unwrap();
    let nodata = ds.rasterband(1).unwrap().no_data_value();
    let gt = ds.geo_transform().unwrap();
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("plan.json")).unwrap()).unwrap();
    let mut covered = vec![false; w * h];
    for task in plan["tasks"].as_array().unwrap() {
        let out = batch.join(task["output"].as_str().unwrap());
        let win: Vec<usize> = task["window"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let (tw, th, data) = read_raster(&out);
        assert_eq!((tw, th), (win[2], win[3]), "{}", out.display());
        let tds = gdal::Dataset::open(&out).unwrap();
        assert_eq!(
            tds.rasterband(1).unwrap().no_data_value(),
            nodata,
            "nodata of {}",
            out.display()
        );
        let tgt = tds.geo_transform().unwrap();
        assert!((tgt[0] - (gt[0] + win[0] as f64 * gt[1])).abs() < 1e-6);
        assert!((tgt[3] - (gt[3] + win[1] as f64 * gt[5])).abs() < 1e-6);
        for y in 0..th {
            for x in 0..tw {
                let i = (win[1] + y) * w + win[0] + x;
                assert!(
                    !covered[i],
                    "pixel ({x}, {y}) of {} written twice",
                    out.display()
                );
                covered[i] = true;
                assert_eq!(
                    data[y * tw + x],
                    expected[i],
                    "{} pixel ({x}, {y}) differs from smooth of the whole map",
                    out.display()
                );
            }
        }
    }
    assert!(covered.iter().all(|&c| c), "the tasks leave pixels out");
}

fn seam_case(nodata: Option<u16>, smooth_opts: &[&str], grid: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (151, 113), nodata, 7);
    let whole = dir.path().join("whole.tif");
    let mut args = vec![
        "smooth",
        map.to_str().unwrap(),
        whole.to_str().unwrap(),
        "-q",
    ];
    args.extend(smooth_opts);
    mapfilter_ok(&args);
    let batch = dir.path().join("batch");
    let input = match grid {
        // One raster cut into tasks by --grid.
        Some(_) => map.clone(),
        // Uneven tiles, none a multiple of the engine's tile (--tile 32).
        None => cut(&map, &[0, 37, 100, 151], &[0, 45, 113]),
    };
    let mut plan = vec![
        "batch",
        "plan",
        input.to_str().unwrap(),
        "--out",
        batch.to_str().unwrap(),
    ];
    plan.extend(smooth_opts);
    if let Some(g) = grid {
        plan.extend(["--grid", g]);
    }
    mapfilter_ok(&plan);
    mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "-q"]);
    assert_mosaic_equals(&batch, &whole);
}

#[test]
fn seam_free_naive_with_nodata() {
    seam_case(
        Some(9),
        &[
            "-k",
            "gaussian:2",
            "--tile",
            "32",
            "--method",
            "naive",
            "--device",
            "host",
        ],
        None,
    );
}

#[test]
fn seam_free_dct5_exact_with_fractional_weights_and_no_nodata() {
    // No nodata and fractional weights: the plan scans the mosaic's classes
    // once, so every task quantises the weights and picks the output nodata
    // as smooth of the whole map does.
    seam_case(
        None,
        &[
            "-k",
            "gaussian:2",
            "--tile",
            "32",
            "--method",
            "dct5",
            "--exact",
            "--class-weights",
            "2:1.5",
            "--device",
            "host",
        ],
        None,
    );
}

#[test]
fn seam_free_svd_exact_box_fill_nodata() {
    seam_case(
        Some(9),
        &[
            "-k",
            "box:5",
            "--tile",
            "32",
            "--method",
            "svd",
            "--exact",
            "--fill-nodata",
            "--device",
            "host",
        ],
        None,
    );
}

#[test]
fn seam_free_grid_with_valid_border() {
    seam_case(
        Some(9),
        &[
            "-k", "disc:3", "--tile", "40", "--border", "valid", "--device", "host",
        ],
        Some("3"),
    );
}

/// The policies reach every task through the plan: iterations grow each
/// task's halo (one kernel radius per pass), and the undecided code is a
/// class of the planned table.
#[test]
fn seam_free_with_policies_and_iterations() {
    let policies = [
        "-k",
        "box:3",
        "--tile",
        "32",
        "--iterations",
        "3",
        "--ties",
        "undecided:200",
        "--keep",
        "1",
        "--no-vote",
        "2",
        "--only-isolated",
        "3",
        "--device",
        "host",
    ];
    seam_case(Some(9), &policies, None);
    let valid = [&policies[..], &["--border", "valid"]].concat();
    seam_case(Some(9), &valid, Some("3"));
}

/// A plan of 16 tasks over a 4x4 grid of a 320x320 map.
fn small_plan(dir: &Path, name: &str) -> PathBuf {
    let map = dir.join("map.tif");
    if !map.exists() {
        self::map(dir, (320, 320), Some(9), 11);
    }
    let batch = dir.join(name);
    mapfilter_ok(&[
        "batch",
        "plan",
        map.to_str().unwrap(),
        "--out",
        batch.to_str().unwrap(),
        "-k",
        "gaussian:3",
        "--tile",
        "64",
        "--grid",
        "4",
        "--device",
        "host",
    ]);
    batch
}

/// The outputs of a batch with their bytes. Temp files of killed runs
/// (hidden, removed by a later run once a few seconds old) are left out.
fn outputs(batch: &Path) -> Vec<(String, Vec<u8>)> {
    let out = batch.join("out");
    files_in(&out)
        .into_iter()
        .filter(|n| {
            assert!(n.ends_with(".tif"), "{n} in out/");
            !n.starts_with(".mapfilter-tmp.")
        })
        .map(|n| {
            let bytes = std::fs::read(out.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

#[test]
fn killed_at_random_moments_then_resumed_equals_uninterrupted() {
    let dir = tempfile::tempdir().unwrap();
    let reference = small_plan(dir.path(), "reference");
    mapfilter_ok(&["batch", "run", reference.to_str().unwrap(), "-q"]);
    let expected = outputs(&reference);
    assert_eq!(expected.len(), 16);
    for seed in [1u64, 2, 3] {
        let batch = small_plan(dir.path(), &format!("killed{seed}"));
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut child = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
                .args(["batch", "run", batch.to_str().unwrap(), "-q"])
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20 + state % 300));
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
        }
        mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "-q"]);
        assert!(outputs(&batch) == expected, "seed {seed}: outputs differ");
        // No claim is left behind.
        let state = files_in(&batch.join("state"));
        assert!(state.iter().all(|n| n.ends_with(".done.json")), "{state:?}");
        // A finished plan runs nothing again.
        let again = mapfilter_ok(&["batch", "run", batch.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&again.stderr);
        assert!(
            text.contains("0 done now") && text.contains("16 done before"),
            "{text}"
        );
    }
}

#[test]
fn a_corrupt_tile_fails_its_task_only() {
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (120, 90), Some(9), 5);
    let tiles = cut(&map, &[0, 60, 120], &[0, 50, 90]);
    let whole = dir.path().join("whole.tif");
    let opts = ["-k", "gaussian:1.5", "--device", "host"];
    let mut args = vec![
        "smooth",
        map.to_str().unwrap(),
        whole.to_str().unwrap(),
        "-q",
    ];
    args.extend(opts);
    mapfilter_ok(&args);
    let batch = dir.path().join("batch");
    let mut args = vec![
        "batch",
        "plan",
        tiles.to_str().unwrap(),
        "--out",
        batch.to_str().unwrap(),
    ];
    args.extend(opts);
    mapfilter_ok(&args);
    // Corrupt one tile's pixels after planning (the header still reads).
    let bad = tiles.join("t_1_0.tif");
    let mut bytes = std::fs::read(&bad).unwrap();
    bytes.truncate(400);
    std::fs::write(&bad, &bytes).unwrap();
    let run = mapfilter(&["batch", "run", batch.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(1));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("1 task(s) failed: 2"), "{err}");
    assert!(
        err.contains("failed task 2") && err.contains("t_1_0.tif"),
        "{err}"
    );
    // The neighbours are done, their halo over the bad tile taken as nodata.
    let outs = files_in(&batch.join("out"));
    assert_eq!(outs, ["t_0_0.tif", "t_0_1.tif", "t_1_1.tif"], "{err}");
    mapfilter_ok(&["batch", "report", batch.to_str().unwrap()]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["done"], 3);
    assert_eq!(report["failed"][0]["task"], 2);
    assert!(
        report["failed"][0]["input"]
            .as_str()
            .unwrap()
            .ends_with("t_1_0.tif")
    );
    assert_eq!(report["degraded"].as_array().unwrap().len(), 3, "{report}");
    // A second run leaves it failed without --retry-failed.
    let again = mapfilter(&["batch", "run", batch.to_str().unwrap(), "-q"]);
    assert_eq!(again.status.code(), Some(1));
    // Repaired, --retry-failed redoes it and its neighbours: seam-free again.
    std::fs::remove_dir_all(&tiles).unwrap();
    cut(&map, &[0, 60, 120], &[0, 50, 90]);
    mapfilter_ok(&[
        "batch",
        "run",
        batch.to_str().unwrap(),
        "--retry-failed",
        "-q",
    ]);
    assert_mosaic_equals(&batch, &whole);
    mapfilter_ok(&["batch", "report", batch.to_str().unwrap()]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["done"], 4);
    assert_eq!(report["degraded"].as_array().unwrap().len(), 0);
}

#[test]
fn two_runs_at_once_write_every_output_once_and_complete() {
    let dir = tempfile::tempdir().unwrap();
    let reference = small_plan(dir.path(), "reference");
    mapfilter_ok(&["batch", "run", reference.to_str().unwrap(), "-q"]);
    let batch = small_plan(dir.path(), "shared");
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_mapfilter"))
            .args(["batch", "run", batch.to_str().unwrap(), "--jobs", "1"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success());
    // One line per task a run computed: every task was computed exactly once.
    let computed = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .filter(|l| l.contains(": done in "))
            .count()
    };
    assert_eq!(computed(&a) + computed(&b), 16);
    assert_eq!(outputs(&batch), outputs(&reference));
}

#[test]
fn shards_split_the_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let batch = small_plan(dir.path(), "sharded");
    for i in 0..3 {
        mapfilter_ok(&[
            "batch",
            "run",
            batch.to_str().unwrap(),
            "--shard",
            &format!("{i}/3"),
            "-q",
        ]);
        assert_eq!(files_in(&batch.join("out")).len(), [6, 11, 16][i]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(["batch", "run", batch.to_str().unwrap()])
        .env("SLURM_ARRAY_TASK_ID", "1")
        .env("SLURM_ARRAY_TASK_COUNT", "3")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("batch: 5 tasks in this share"), "{text}");
}

#[test]
fn report_sums_the_batch_compares_with_naive_and_writes_a_cog() {
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (600, 560), Some(9), 3);
    let batch = dir.path().join("batch");
    mapfilter_ok(&[
        "batch",
        "plan",
        map.to_str().unwrap(),
        "--out",
        batch.to_str().unwrap(),
        "-k",
        "gaussian:2",
        "--method",
        "dct5",
        "--terms",
        "1",
        "--grid",
        "2",
        "--compare-with",
        "naive",
        "--device",
        "host",
    ]);
    mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "-q"]);
    let cog = dir.path().join("all.tif");
    mapfilter_ok(&[
        "batch",
        "report",
        batch.to_str().unwrap(),
        "--cog",
        cog.to_str().unwrap(),
    ]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["done"], 4);
    assert_eq!(report["pixels_done"], 600 * 560);
    let cmp = &report["comparison"];
    let agreement = cmp["agreement"].as_f64().unwrap();
    assert!(agreement > 0.5 && agreement <= 1.0, "{cmp}");
    assert!(cmp["kappa"].as_f64().unwrap() <= 1.0);
    // Every pixel valid in both is in the confusion.
    let (_, _, data) = read_raster(&map);
    let valid = data.iter().filter(|&&c| c != 9).count() as u64;
    assert!(cmp["pixels"].as_u64().unwrap() <= 600 * 560);
    assert!(
        cmp["pixels"].as_u64().unwrap() >= valid - valid / 10,
        "{cmp}"
    );
    let input_total: u64 = report["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["input_pixels"].as_u64().unwrap())
        .sum();
    assert_eq!(input_total, valid);
    assert!(
        std::fs::read_to_string(batch.join("report.html"))
            .unwrap()
            .contains("kappa")
    );
    // The outputs' mosaic and the COG hold the same pixels.
    let (w, h, joined) = read_raster(&batch.join("mosaic.vrt"));
    assert_eq!((w, h), (600, 560));
    assert_eq!(read_raster(&cog).2, joined);
    let ds = gdal::Dataset::open(&cog).unwrap();
    assert_eq!(
        ds.metadata_item("LAYOUT", "IMAGE_STRUCTURE").as_deref(),
        Some("COG")
    );
}

/// `batch run` on two devices (the test device opened twice, sharing the
/// tiles of every task) puts together to `smooth` of the whole map on one.
#[test]
fn seam_free_on_two_devices() {
    let Some(dev) = mapfilter::device::test_device() else {
        return;
    };
    let one = dev.info().index.to_string();
    let two = format!("{one},{one}");
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (151, 113), Some(9), 7);
    let opts = [
        "-k",
        "gaussian:2",
        "--tile",
        "32",
        "--method",
        "dct5",
        "--exact",
    ];
    let whole = dir.path().join("whole.tif");
    let mut args = vec![
        "smooth",
        map.to_str().unwrap(),
        whole.to_str().unwrap(),
        "-q",
    ];
    args.extend(opts);
    args.extend(["--device", &one]);
    mapfilter_ok(&args);
    let batch = dir.path().join("batch");
    let tiles = cut(&map, &[0, 37, 100, 151], &[0, 45, 113]);
    let mut plan = vec![
        "batch",
        "plan",
        tiles.to_str().unwrap(),
        "--out",
        batch.to_str().unwrap(),
    ];
    plan.extend(opts);
    plan.extend(["--device", &two]);
    mapfilter_ok(&plan);
    let run = mapfilter_ok(&["batch", "run", batch.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&run.stderr);
    assert_eq!(said.matches("batch: device #").count(), 2, "{said}");
    assert_mosaic_equals(&batch, &whole);
}
