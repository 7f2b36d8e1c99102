//! `mapfilter batch`: seam-free tasks (outputs put together equal one
//! `smooth` of the whole map, byte for byte), resume after SIGKILL at random
//! moments and after SIGINT, failure isolation, two runs on one plan at
//! once, stale claims of other hosts, progress lines, category names; a
//! resumed run never exits 0 with a task missing (zombie holders, reused
//! PIDs, claims of other hosts), writes stay in the batch.

#![cfg(feature = "gdal")]
use crate::common;

use common::*;
use gdal::Metadata;
use gdal::raster::GdalDataType;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

/// The options of `smooth` that say how to smooth, which `batch plan`
/// takes too (declared once: `cli::smoothing_args`).
const SMOOTHING_OPTIONS: [&str; 30] = [
    "kernel",
    "kernel-size",
    "allow-subpixel",
    "class-weights",
    "border",
    "fill-nodata",
    "tile",
    "of",
    "compress",
    "compress-level",
    "co",
    "device",
    "variant",
    "method",
    "rank",
    "energy",
    "terms",
    "exact",
    "ties",
    "keep",
    "no-vote",
    "only-isolated",
    "iterations",
    "confidence",
    "confidence-scale",
    "mmu",
    "mmu-connectivity",
    "band",
    "src-nodata",
    "dst-nodata",
];

/// Every smoothing option of `smooth` is one of `batch plan`, with the same
/// help, default and choices (`describe --json`), the input options `-b`,
/// `--src-nodata` and `--dst-nodata` included; the one a plan cannot honour
/// (`--confidence`) is refused with the reason before anything is written.
#[test]
fn smooth_and_batch_plan_take_the_same_smoothing_options() {
    let described: serde_json::Value =
        serde_json::from_slice(&mapfilter_ok(&["describe", "--json"]).stdout).unwrap();
    let options = |command: &str| -> Vec<serde_json::Value> {
        described["commands"][command]["options"]
            .as_array()
            .unwrap_or_else(|| panic!("describe has no options of {command}"))
            .clone()
    };
    let (smooth, plan) = (options("smooth"), options("batch plan"));
    let find = |opts: &[serde_json::Value], name: &str| {
        opts.iter()
            .find(|o| o["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no --{name}"))
    };
    for name in SMOOTHING_OPTIONS {
        assert_eq!(find(&smooth, name), find(&plan, name), "--{name}");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("batch");
    // (option, value, what the refusal says): refused before anything is written.
    let refusals = [(
        "--confidence",
        "conf.tif",
        "batch plan does not take --confidence",
    )];
    for (option, value, says) in refusals {
        let refused = mapfilter(&[
            "batch",
            "plan",
            "in.tif",
            "--out",
            out.to_str().unwrap(),
            "-k",
            "gaussian:1",
            option,
            value,
        ]);
        assert!(!refused.status.success(), "{option}");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(err.contains(says), "{option}: {err}");
        assert!(
            !out.exists(),
            "{option}: a refused plan wrote {}",
            out.display()
        );
    }
}

/// A map with blobs of 6 classes and nodata holes (code 9 where `nodata`).
pub(crate) fn map(dir: &Path, (w, h): (usize, usize), nodata: Option<u16>, seed: u64) -> PathBuf {
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
pub(crate) fn cut(map: &Path, xs: &[usize], ys: &[usize]) -> PathBuf {
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
pub(crate) fn assert_mosaic_equals(batch: &Path, whole: &Path) {
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

/// `smooth` of `map` with `opts` into whole.tif beside it, and `batch plan`
/// of `input` (the map or its tiles) with `opts` and `plan_extra` into
/// batch/ there: (whole, batch).
fn whole_and_plan(
    map: &Path,
    input: &Path,
    opts: &[&str],
    plan_extra: &[&str],
) -> (PathBuf, PathBuf) {
    let dir = map.parent().unwrap();
    let whole = dir.join("whole.tif");
    let mut args = vec![
        "smooth",
        map.to_str().unwrap(),
        whole.to_str().unwrap(),
        "-q",
    ];
    args.extend(opts);
    mapfilter_ok(&args);
    let batch = dir.join("batch");
    let mut args = vec![
        "batch",
        "plan",
        input.to_str().unwrap(),
        "--out",
        batch.to_str().unwrap(),
    ];
    args.extend(opts);
    args.extend(plan_extra);
    mapfilter_ok(&args);
    (whole, batch)
}

fn seam_case(nodata: Option<u16>, smooth_opts: &[&str], grid: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (151, 113), nodata, 7);
    let (input, plan_extra) = match grid {
        // One raster cut into tasks by --grid.
        Some(g) => (map.clone(), vec!["--grid", g]),
        // Uneven tiles, none a multiple of the engine's tile (--tile 32).
        None => (cut(&map, &[0, 37, 100, 151], &[0, 45, 113]), vec![]),
    };
    let (whole, batch) = whole_and_plan(&map, &input, smooth_opts, &plan_extra);
    mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "-q"]);
    assert_mosaic_equals(&batch, &whole);
}

/// `batch plan -b 2 --src-nodata 9 --dst-nodata 250` over tiles of a
/// two-band raster (band 1 noise, band 2 the classes with holes coded 9
/// and no nodata in the file) gives, put together, the pixels and nodata of
/// `smooth -b 2 --src-nodata 9 --dst-nodata 250` of the whole raster; the
/// plan keeps the three options; without `-b` the plan refuses the
/// two-band raster as `smooth` does, and a `--dst-nodata` that is a class
/// is refused before anything is written.
#[test]
fn batch_plan_reads_the_band_and_nodata_smooth_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (131, 97);
    let classes = synth_with_holes((w, h), 6, mapfilter::synth::Pattern::Simplex, 3, 9.0, 40, 9);
    let path = dir.path().join("two.tif");
    {
        let driver = gdal::DriverManager::get_driver_by_name("GTiff").unwrap();
        let mut ds = driver
            .create_with_band_type::<u8, _>(&path, w, h, 2)
            .unwrap();
        ds.set_geo_transform(&[500_000.0, 30.0, 0.0, 6_200_000.0, 0.0, -30.0])
            .unwrap();
        let noise: Vec<u8> = (0..w * h).map(|i| (i * 7919 % 251) as u8).collect();
        let bands = [noise, classes.data.iter().map(|&v| v as u8).collect()];
        for (b, data) in bands.into_iter().enumerate() {
            let mut buffer = gdal::raster::Buffer::new((w, h), data);
            let mut band = ds.rasterband(b + 1).unwrap();
            band.write((0, 0), (w, h), &mut buffer).unwrap();
        }
    }
    let p = path.to_str().unwrap();
    let whole = dir.path().join("whole.tif");
    let options = [
        "-k",
        "gaussian:1.5",
        "-b",
        "2",
        "--src-nodata",
        "9",
        "--dst-nodata",
        "250",
        "--tile",
        "32",
    ];
    let mut args = vec!["smooth", p, whole.to_str().unwrap(), "-q"];
    args.extend(options);
    mapfilter_ok(&args);
    let tiles = cut(&path, &[0, 50, 131], &[0, 40, 97]);
    let batch = dir.path().join("batch");
    let b = batch.to_str().unwrap();
    let mut plan = vec!["batch", "plan", tiles.to_str().unwrap(), "--out", b];
    plan.extend(options);
    mapfilter_ok(&plan);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("plan.json")).unwrap()).unwrap();
    let o = &written["options"];
    assert_eq!(
        (&o["band"], &o["src_nodata"], &o["dst_nodata"]),
        (&2.into(), &"9".into(), &250.into())
    );
    mapfilter_ok(&["batch", "run", b, "-q"]);
    assert_mosaic_equals(&batch, &whole);
    // One raster read whole, through a VRT of its band 2.
    let single = dir.path().join("single");
    let mut plan = vec![
        "batch",
        "plan",
        p,
        "--out",
        single.to_str().unwrap(),
        "--grid",
        "2",
    ];
    plan.extend(options);
    mapfilter_ok(&plan);
    mapfilter_ok(&["batch", "run", single.to_str().unwrap(), "-q"]);
    assert_mosaic_equals(&single, &whole);
    // Refused before anything is written: no band named on two bands, and
    // an output nodata that is a class.
    let refused_dir = dir.path().join("refused");
    for (extra, says) in [
        (&["-k", "gaussian:1.5"][..], "has 2 bands"),
        (
            &["-k", "gaussian:1.5", "-b", "2", "--dst-nodata", "3"][..],
            "--dst-nodata 3 is a class",
        ),
    ] {
        let mut args = vec!["batch", "plan", p, "--out", refused_dir.to_str().unwrap()];
        args.extend(extra);
        let refused = mapfilter(&args);
        assert!(!refused.status.success(), "{extra:?}");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!refused_dir.join("plan.json").exists(), "{extra:?}");
    }
}

/// A plan opens its inputs as `smooth` does: a Byte raster whose nodata
/// (-9999) is no code of its band is refused with `smooth`'s message, not
/// read with a nodata that saturates to code 0.
#[test]
fn batch_plan_refuses_a_nodata_no_code_can_hold() {
    let dir = tempfile::tempdir().unwrap();
    let data = vec![3u16; 40 * 30];
    let path = dir.path().join("bad.tif");
    write_raster(
        &path,
        &TestRaster {
            width: 40,
            height: 30,
            data: &data,
            data_type: GdalDataType::UInt8,
            nodata: Some(-9999.0),
            colors: false,
        },
    );
    let out = dir.path().join("batch");
    let p = path.to_str().unwrap();
    for command in [
        &["smooth", p, "out.tif"][..],
        &["batch", "plan", p, "--out", out.to_str().unwrap()],
    ] {
        let mut args = command.to_vec();
        args.extend(["-k", "gaussian:1"]);
        let refused = mapfilter(&args);
        assert!(!refused.status.success(), "{command:?}");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(
            err.contains("is not a valid code for this band"),
            "{command:?}: {err}"
        );
    }
    assert!(!out.join("plan.json").exists());
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
/// Tasks in flight each open a handle of the mosaic, and only the first
/// reads its coordinate system: every output still carries the map's.
#[test]
fn every_output_keeps_the_coordinate_system_with_several_tasks_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let batch = small_plan(dir.path(), "b");
    mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "--jobs", "4", "-q"]);
    let want = gdal::Dataset::open(dir.path().join("map.tif"))
        .unwrap()
        .projection();
    assert!(want.contains("PROJCS"), "{want}");
    let outputs = outputs(&batch);
    assert_eq!(outputs.len(), 16);
    for (name, _) in outputs {
        let got = gdal::Dataset::open(batch.join("out").join(&name))
            .unwrap()
            .projection();
        assert_eq!(got, want, "{name}");
    }
}

/// With GDAL's block cache far smaller than the tasks' windows, where other
/// tasks' threads evict input blocks and output blocks waiting for their
/// flush, a batch's outputs still hold the pixels of one `smooth` of the
/// whole map (decision 0043 measured bounding the cache for batches).
#[test]
fn a_block_cache_smaller_than_the_windows_gives_the_pixels_of_one_smooth() {
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (640, 640), Some(9), 5);
    let options = ["-k", "gaussian:3", "--tile", "64", "--device", "host"];
    let (whole, batch) = whole_and_plan(&map, &map, &options, &["--grid", "4"]);
    // 100000 bytes: a quarter of the map.
    mapfilter_ok(&[
        "batch",
        "--config",
        "GDAL_CACHEMAX",
        "100000",
        "run",
        batch.to_str().unwrap(),
        "--jobs",
        "4",
        "-q",
    ]);
    assert_mosaic_equals(&batch, &whole);
}

fn small_plan(dir: &Path, name: &str) -> PathBuf {
    plan_of_map(
        dir,
        name,
        &["-k", "gaussian:3", "--tile", "64", "--grid", "4"],
    )
}

/// A plan of a 320x320 map (made once in `dir`) with `options`, on the host.
pub(crate) fn plan_of_map(dir: &Path, name: &str, options: &[&str]) -> PathBuf {
    let map = dir.join("map.tif");
    if !map.exists() {
        self::map(dir, (320, 320), Some(9), 11);
    }
    let batch = dir.join(name);
    let mut args = vec![
        "batch",
        "plan",
        map.to_str().unwrap(),
        "--out",
        batch.to_str().unwrap(),
        "--device",
        "host",
    ];
    args.extend(options);
    mapfilter_ok(&args);
    batch
}

/// The outputs of a batch with their bytes. Temp files of killed runs
/// (hidden, removed by a later run once a few seconds old) are left out.
pub(crate) fn outputs(batch: &Path) -> Vec<(String, Vec<u8>)> {
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

/// Starts `batch run BATCH -q` four times and SIGKILLs each after a delay
/// of `base + r % spread` ms (`(base, spread)`; `r` a xorshift of `seed`),
/// calling `after_kill` once each run is gone: a run killed at moments
/// that fall in every phase of the batch.
pub fn kill_runs_at_random(
    batch: &Path,
    seed: u64,
    (base, spread): (u64, u64),
    mut after_kill: impl FnMut(),
) {
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
        std::thread::sleep(Duration::from_millis(base + state % spread));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        after_kill();
    }
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
        kill_runs_at_random(&batch, seed, (20, 300), || {});
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

/// A 120x90 map cut into 2x2 tiles, smoothed whole (`whole`) and planned
/// on the host, then the pixels of tile t_1_0 (task 2) corrupted (its
/// header still reads).
struct CorruptTile {
    dir: tempfile::TempDir,
    map: PathBuf,
    tiles: PathBuf,
    whole: PathBuf,
    batch: PathBuf,
}

fn corrupt_tile() -> CorruptTile {
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (120, 90), Some(9), 5);
    let tiles = cut(&map, &[0, 60, 120], &[0, 50, 90]);
    let opts = ["-k", "gaussian:1.5", "--device", "host"];
    let (whole, batch) = whole_and_plan(&map, &tiles, &opts, &[]);
    // Corrupt one tile's pixels after planning (the header still reads).
    let bad = tiles.join("t_1_0.tif");
    let mut bytes = std::fs::read(&bad).unwrap();
    bytes.truncate(400);
    std::fs::write(&bad, &bytes).unwrap();
    CorruptTile {
        dir,
        map,
        tiles,
        whole,
        batch,
    }
}

#[test]
fn a_corrupt_tile_fails_its_task_only() {
    let CorruptTile {
        dir: _dir,
        map,
        tiles,
        whole,
        batch,
    } = corrupt_tile();
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
    // The report says so, and exits 1 unless told the batch may be incomplete.
    let report = mapfilter(&["batch", "report", batch.to_str().unwrap()]);
    assert_eq!(report.status.code(), Some(1));
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("1 failed, 0 pending, 3 degraded"), "{text}");
    mapfilter_ok(&[
        "batch",
        "report",
        batch.to_str().unwrap(),
        "--allow-incomplete",
    ]);
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
    // The HTML says so before any figure.
    let html = std::fs::read_to_string(batch.join("report.html")).unwrap();
    let warning = html
        .find("<b>Incomplete:</b> 1 failed, 3 done without part of their halo, 0 pending")
        .expect("the warning");
    assert!(warning < html.find("Class area change").unwrap(), "{html}");
    // A failed task leaves no claim.
    let state = files_in(&batch.join("state"));
    assert!(!state.iter().any(|n| n.contains("claim")), "{state:?}");
    // A second run leaves it failed without --retry-failed.
    let again = mapfilter(&["batch", "run", batch.to_str().unwrap(), "-q"]);
    assert_eq!(again.status.code(), Some(1));
    let allowed = [
        "batch",
        "run",
        batch.to_str().unwrap(),
        "--allow-incomplete",
    ];
    mapfilter_ok(&allowed);
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
    assert_eq!(report["times"].as_array().unwrap().len(), 4, "{report}");
    assert_eq!(report["comparison"]["tasks"], 4);
    let cmp = &report["comparison"];
    let agreement = cmp["agreement"].as_f64().unwrap();
    assert!(agreement > 0.5 && agreement <= 1.0, "{cmp}");
    assert!(cmp["kappa"].as_f64().unwrap() <= 1.0);
    // Percent as in the other reports, and Pontius & Millones beside kappa.
    let percent = cmp["agreement_percent"].as_f64().unwrap();
    assert!((percent - 100.0 * agreement).abs() < 1e-9);
    let q = cmp["quantity_disagreement_percent"].as_f64().unwrap();
    let a = cmp["allocation_disagreement_percent"].as_f64().unwrap();
    assert!((q + a - (100.0 - percent)).abs() < 1e-9, "{cmp}");
    // Provenance and the smoothing settings.
    assert_eq!(report["method"], "dct5");
    assert_eq!(report["kernel"], "gaussian:2");
    assert!(
        report["provenance"]["command_line"]
            .as_str()
            .unwrap()
            .contains("batch report")
    );
    assert!(
        report["provenance"]["version"]
            .as_str()
            .unwrap()
            .starts_with("mapfilter ")
    );
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

/// The state and output files of a batch that are neither records nor
/// outputs: claims, their drafts, temp and scratch files.
pub(crate) fn leftovers(batch: &Path) -> Vec<String> {
    let mut left: Vec<String> = files_in(&batch.join("state"))
        .into_iter()
        .filter(|n| !n.ends_with(".done.json") && !n.ends_with(".failed.json"))
        .collect();
    left.extend(
        files_in(&batch.join("out"))
            .into_iter()
            .filter(|n| n.starts_with(".mapfilter-tmp.")),
    );
    left
}

#[test]
fn sigint_mid_run_leaves_no_claim_and_a_rerun_finishes_identically() {
    let dir = tempfile::tempdir().unwrap();
    // Tasks slow enough (naive, a wide kernel) to be in flight at the signal.
    let options = ["-k", "gaussian:6", "--method", "naive", "--grid", "4"];
    let reference = plan_of_map(dir.path(), "reference", &options);
    mapfilter_ok(&["batch", "run", reference.to_str().unwrap(), "-q"]);
    let expected = outputs(&reference);
    assert_eq!(expected.len(), 16);
    // The last case runs in worker processes: the parent passes the
    // signal on and the workers clean up before it exits.
    for (signal, processes) in [("INT", "1"), ("TERM", "1"), ("INT", "2")] {
        let batch = plan_of_map(
            dir.path(),
            &format!("stopped-{signal}-{processes}"),
            &options,
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
            .args(["batch", "run", batch.to_str().unwrap(), "--jobs", "2"])
            .args(["--processes", processes])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut log = String::new();
        while !log.contains("] task ") {
            assert!(stderr.read_line(&mut log).unwrap() > 0, "{log}");
        }
        // Signal while a (slow) task is claimed.
        let claimed = |n: &String| n.ends_with(".claim");
        let start = std::time::Instant::now();
        while !files_in(&batch.join("state")).iter().any(claimed) {
            assert!(start.elapsed() < Duration::from_secs(20), "{log}");
            std::thread::sleep(Duration::from_millis(1));
        }
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let code = child.wait().unwrap().code();
        std::io::Read::read_to_string(&mut stderr, &mut log).unwrap();
        let expected_code = if signal == "INT" { 130 } else { 143 };
        assert_eq!(code, Some(expected_code), "{log}");
        assert_eq!(leftovers(&batch), Vec::<String>::new(), "{log}");
        let done = files_in(&batch.join("state")).len();
        assert!(done < 16, "the run finished before the signal: {log}");
        mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "-q"]);
        assert!(
            outputs(&batch) == expected,
            "{signal} {processes}: outputs differ"
        );
        assert_eq!(leftovers(&batch), Vec::<String>::new());
    }
}

/// Forges a claim of task `task` by a process of another host, modified
/// `age` ago.
fn forge_claim(batch: &Path, task: usize, lease: Option<f64>, age: Duration) -> PathBuf {
    let path = batch.join("state").join(format!("task-{task}.claim"));
    let mut token = serde_json::json!({"host": "node-that-died", "pid": 1, "nonce": 7});
    if let Some(l) = lease {
        token["stale_after"] = l.into();
    }
    std::fs::write(&path, token.to_string()).unwrap();
    std::fs::File::options()
        .append(true)
        .open(&path)
        .unwrap()
        .set_modified(SystemTime::now() - age)
        .unwrap();
    path
}

/// Runs `args` (a `batch run --no-wait`), which must exit 75 with every task
/// but those held done: its stderr.
fn held(args: &[&str], batch: &Path) -> String {
    let run = mapfilter(args);
    let text = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(75), "{text}");
    assert!(text.contains("held by other runs"), "{text}");
    let claims = files_in(&batch.join("state"))
        .iter()
        .filter(|n| n.ends_with(".claim"))
        .count();
    assert!(claims > 0, "75 with no task held: {text}");
    assert_eq!(outputs(batch).len() + claims, 16, "{text}");
    text
}

#[test]
fn a_claim_of_another_host_is_taken_over_once_not_refreshed_for_stale_after() {
    let dir = tempfile::tempdir().unwrap();
    let batch = small_plan(dir.path(), "stale");
    std::fs::create_dir_all(batch.join("state")).unwrap();
    let b = batch.to_str().unwrap();
    // Refreshed a minute ago: a live holder for a lease of an hour.
    let claim = forge_claim(&batch, 0, None, Duration::from_secs(60));
    let text = held(
        &["batch", "run", b, "--stale-after", "1h", "--no-wait"],
        &batch,
    );
    assert!(text.contains("1 held by another run"), "{text}");
    assert!(claim.exists());
    // Its holder promised a lease of an hour: a shorter --stale-after does
    // not take it.
    forge_claim(&batch, 0, Some(3600.0), Duration::from_secs(60));
    let text = held(
        &["batch", "run", b, "--stale-after", "30s", "--no-wait"],
        &batch,
    );
    assert!(text.contains("1 held by another run"), "{text}");
    // --allow-incomplete: listed, exit 0.
    mapfilter_ok(&["batch", "run", b, "--no-wait", "--allow-incomplete"]);
    // Not refreshed for longer than the lease: the node died, taken over.
    forge_claim(&batch, 0, None, Duration::from_secs(60));
    let run = mapfilter_ok(&["batch", "run", b, "--stale-after", "30s"]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(
        text.contains("1 done now") && text.contains("0 held by another run"),
        "{text}"
    );
    assert!(!claim.exists());
    assert_eq!(outputs(&batch).len(), 16);
    assert_eq!(leftovers(&batch), Vec::<String>::new());
    let bad = mapfilter(&["batch", "run", b, "--stale-after", "soon"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--stale-after soon"));
}

/// Outputs and records are synced in passes, not one by one, so a crash of
/// the machine may leave what unsynced writes leave: a record that did not
/// reach the disk, or an empty one, or a record whose output was lost or
/// zero-filled. Each such task is done again, and only those.
#[test]
fn a_task_whose_output_no_longer_matches_its_record_is_done_again() {
    let dir = tempfile::tempdir().unwrap();
    let batch = small_plan(dir.path(), "lost");
    let b = batch.to_str().unwrap();
    mapfilter_ok(&["batch", "run", b, "-q"]);
    let expected = outputs(&batch);
    assert_eq!(expected.len(), 16);
    let state = batch.join("state");
    let out = batch.join("out");
    let names: Vec<String> = expected.iter().map(|(n, _)| n.clone()).collect();
    let record = |task: usize| state.join(format!("task-{task}.done.json"));
    let output_of = |task: usize| {
        let text = std::fs::read_to_string(record(task)).unwrap();
        let rec: serde_json::Value = serde_json::from_str(&text).unwrap();
        batch.join(rec["output"].as_str().unwrap())
    };
    // Task 0: its output lost (empty); task 1: zero-filled, same size.
    std::fs::write(output_of(0), b"").unwrap();
    let size = std::fs::metadata(output_of(1)).unwrap().len();
    std::fs::write(output_of(1), vec![0u8; size as usize]).unwrap();
    // Task 2: its record empty; task 3: its record missing.
    std::fs::write(record(2), b"").unwrap();
    std::fs::remove_file(record(3)).unwrap();
    let run = mapfilter_ok(&["batch", "run", b]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(
        text.contains("4 done now") && text.contains("12 done before"),
        "{text}"
    );
    assert!(outputs(&batch) == expected, "outputs differ");
    assert_eq!(files_in(&out), names);
}

/// A claim left empty by a crash names no process: it holds its task until
/// it is older than the lease, then it is taken over.
#[test]
fn an_empty_claim_is_taken_over_once_older_than_the_lease() {
    let dir = tempfile::tempdir().unwrap();
    let batch = small_plan(dir.path(), "empty-claim");
    std::fs::create_dir_all(batch.join("state")).unwrap();
    let b = batch.to_str().unwrap();
    let claim = batch.join("state").join("task-5.claim");
    let empty = |age: Duration| {
        std::fs::write(&claim, b"").unwrap();
        std::fs::File::options()
            .append(true)
            .open(&claim)
            .unwrap()
            .set_modified(SystemTime::now() - age)
            .unwrap();
    };
    empty(Duration::from_secs(10));
    let text = held(
        &["batch", "run", b, "--stale-after", "1h", "--no-wait"],
        &batch,
    );
    assert!(text.contains("1 held by another run"), "{text}");
    assert!(claim.exists());
    empty(Duration::from_secs(120));
    let run = mapfilter_ok(&["batch", "run", b, "--stale-after", "60s"]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(
        text.contains("1 done now") && text.contains("0 held by another run"),
        "{text}"
    );
    assert!(!claim.exists());
    assert_eq!(outputs(&batch).len(), 16);
    assert_eq!(leftovers(&batch), Vec::<String>::new());
}

#[test]
fn progress_lines_follow_the_pixels_of_the_batch_within_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let options = ["-k", "gaussian:2", "--tile", "16", "--grid", "2"];
    let batch = plan_of_map(dir.path(), "progress", &options);
    let run = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(["batch", "run", batch.to_str().unwrap(), "--jobs", "1"])
        .env("MAPFILTER_PROGRESS", "lines")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{text}");
    let mut percents = Vec::new();
    let mut before_first_task = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("progress: ") {
            assert!(rest.ends_with(" batch px"), "{line}");
            let p: f64 = rest.split(' ').next().unwrap().parse().unwrap();
            percents.push(p);
        } else if line.starts_with("[1/4]") {
            before_first_task = percents.clone();
        }
    }
    assert_eq!(percents.first(), Some(&0.0), "{text}");
    assert_eq!(percents.last(), Some(&100.0), "{text}");
    assert!(percents.windows(2).all(|w| w[0] < w[1]), "{percents:?}");
    // The first task (a quarter of the pixels) moved the progress on
    // before it finished.
    assert!(
        before_first_task.iter().any(|&p| p > 0.0 && p < 25.0),
        "{text}"
    );
    // The log keeps its line per finished task.
    assert_eq!(text.lines().filter(|l| l.contains(": done in ")).count(), 4);
}

#[test]
fn category_names_reach_the_outputs_and_the_mosaics() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.tif");
    let continents = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/ne_continents_1440x720.tif"
    );
    // gdal_translate keeps the category names (and colours).
    let status = Command::new("gdal_translate")
        .args(["-q", "-srcwin", "600", "150", "240", "120", continents])
        .arg(&map)
        .status()
        .unwrap();
    assert!(status.success());
    let names = |path: &Path| {
        let ds = gdal::Dataset::open(path).unwrap();
        mapfilter::gdal::class_raster::RasterMeta::read_without_projection(&ds)
            .unwrap()
            .category_names
    };
    let expected = names(&map);
    assert!(expected.len() > 2, "{expected:?}");
    let tiles = cut(&map, &[0, 100, 240], &[0, 70, 120]);
    let batch = dir.path().join("batch");
    let b = batch.to_str().unwrap();
    mapfilter_ok(&[
        "batch",
        "plan",
        tiles.to_str().unwrap(),
        "--out",
        b,
        "-k",
        "gaussian:1.5",
        "--device",
        "host",
    ]);
    assert_eq!(names(&batch.join("mosaic-0.vrt")), expected);
    mapfilter_ok(&["batch", "run", b, "-q"]);
    for out in files_in(&batch.join("out"))
        .iter()
        .filter(|n| n.ends_with(".tif"))
    {
        assert_eq!(names(&batch.join("out").join(out)), expected, "{out}");
    }
    mapfilter_ok(&["batch", "report", b]);
    assert_eq!(names(&batch.join("mosaic.vrt")), expected);
}

#[test]
fn compare_sample_runs_the_baseline_on_a_sample_of_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let options = [
        "-k",
        "gaussian:2",
        "--grid",
        "4",
        "--compare-with",
        "naive",
        "--compare-sample",
        "3",
    ];
    let batch = plan_of_map(dir.path(), "sample", &options);
    let b = batch.to_str().unwrap();
    mapfilter_ok(&["batch", "run", b, "-q"]);
    mapfilter_ok(&["batch", "report", b]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["done"], 16);
    assert_eq!(report["comparison"]["tasks"], 3, "{report}");
    let compared = (0..16)
        .filter(|k| {
            let rec = std::fs::read_to_string(batch.join(format!("state/task-{k}.done.json")));
            let rec: serde_json::Value = serde_json::from_str(&rec.unwrap()).unwrap();
            !rec["comparison"].is_null()
        })
        .count();
    assert_eq!(compared, 3);
    let bad = mapfilter(&[
        "batch",
        "plan",
        b,
        "--out",
        b,
        "-k",
        "box:3",
        "--compare-sample",
        "2",
    ]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--compare-sample without"));
}

/// The test device's index alone and named twice (two contexts), and a
/// 151x113 map smoothed whole on it (exact dct5, 32-px tiles) with the
/// options the plans below take.
struct TwoContexts {
    one: String,
    two: String,
    dir: tempfile::TempDir,
    tiles: PathBuf,
    whole: PathBuf,
}

const TWO_CONTEXT_OPTIONS: [&str; 7] = [
    "-k",
    "gaussian:2",
    "--tile",
    "32",
    "--method",
    "dct5",
    "--exact",
];

fn two_contexts() -> Option<TwoContexts> {
    let dev = mapfilter::device::test_device()?;
    let one = dev.info().index.to_string();
    let two = format!("{one},{one}");
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (151, 113), Some(9), 7);
    let whole = dir.path().join("whole.tif");
    let mut args = vec![
        "smooth",
        map.to_str().unwrap(),
        whole.to_str().unwrap(),
        "-q",
    ];
    args.extend(TWO_CONTEXT_OPTIONS);
    args.extend(["--device", &one]);
    mapfilter_ok(&args);
    let tiles = cut(&map, &[0, 37, 100, 151], &[0, 45, 113]);
    Some(TwoContexts {
        one,
        two,
        dir,
        tiles,
        whole,
    })
}

impl TwoContexts {
    /// Plans the tiles on `device` into batch `name`.
    fn plan(&self, name: &str, device: &str) -> PathBuf {
        let batch = self.dir.path().join(name);
        let mut plan = vec![
            "batch",
            "plan",
            self.tiles.to_str().unwrap(),
            "--out",
            batch.to_str().unwrap(),
        ];
        plan.extend(TWO_CONTEXT_OPTIONS);
        plan.extend(["--device", device]);
        mapfilter_ok(&plan);
        batch
    }
}

/// `batch run` on two devices (the test device opened twice) with one
/// task in flight: the devices share the tiles of every task, and the
/// mosaic is `smooth` of the whole map on one.
#[test]
fn seam_free_on_two_devices() {
    let Some(t) = two_contexts() else {
        return;
    };
    let batch = t.plan("batch", &t.two);
    let run = mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "--jobs", "1"]);
    let said = String::from_utf8_lossy(&run.stderr);
    assert_eq!(said.matches("batch: device #").count(), 2, "{said}");
    assert_mosaic_equals(&batch, &t.whole);
}

/// With a task in flight per device or more, each device (context) runs
/// whole tasks of its own, none shared: the bytes are those of one
/// device, whatever the tasks in flight.
#[test]
fn each_device_runs_whole_tasks_of_its_own_with_the_same_bytes() {
    let Some(t) = two_contexts() else {
        return;
    };
    for jobs in ["2", "3", "6"] {
        let batch = t.plan(&format!("jobs{jobs}"), &t.two);
        let run = mapfilter_ok(&[
            "-v",
            "batch",
            "run",
            batch.to_str().unwrap(),
            "--jobs",
            jobs,
        ]);
        let said = String::from_utf8_lossy(&run.stderr);
        // The first tasks' windows were read while the devices started
        // (the bytes are checked below).
        let ahead = format!("batch: {jobs} task window(s)");
        assert!(said.contains(&ahead), "{said}");
        // No device shared a task's tiles.
        assert_eq!(said.matches("batch: device #").count(), 0, "{said}");
        assert!(said.contains("6 done now"), "{said}");
        assert_mosaic_equals(&batch, &t.whole);
    }
    // One context, the same.
    let batch = t.plan("one", &t.one);
    mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "--jobs", "2", "-q"]);
    assert_mosaic_equals(&batch, &t.whole);
}

/// A run in worker processes (each with its tasks in flight and, here, two
/// contexts of the test device) gives the bytes of one process; so does one
/// on the host, and a second run finds everything done.
#[test]
fn worker_processes_give_the_bytes_of_one_process() {
    let Some(t) = two_contexts() else {
        return;
    };
    for (name, device, processes, jobs) in [
        ("p2", t.two.as_str(), "2", "4"),
        ("p3", t.one.as_str(), "3", "3"),
        ("host", "host", "4", "1"),
    ] {
        let batch = t.plan(name, device);
        let run = mapfilter_ok(&[
            "batch",
            "run",
            batch.to_str().unwrap(),
            "--processes",
            processes,
            "--jobs",
            jobs,
        ]);
        let said = String::from_utf8_lossy(&run.stderr);
        assert!(said.contains("6 done now"), "{name}: {said}");
        // Which worker takes which task is a race; each task's line names one.
        assert_eq!(said.matches("] task ").count(), 6, "{name}: {said}");
        assert!(said.matches("[worker ").count() == 6, "{name}: {said}");
        assert_mosaic_equals(&batch, &t.whole);
        assert_eq!(leftovers(&batch), Vec::<String>::new(), "{name}");
        let again = mapfilter_ok(&[
            "batch",
            "run",
            batch.to_str().unwrap(),
            "--processes",
            processes,
        ]);
        let said = String::from_utf8_lossy(&again.stderr);
        assert!(
            said.contains("0 done now") && said.contains("6 done before"),
            "{said}"
        );
    }
}

/// This host's name as the kernel has it (what gethostname returns).
pub(crate) fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// The state letter and start time (field 22) of process `pid`.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((fields[0].chars().next()?, fields[19].parse().ok()?))
}

/// Slow tasks (naive, a wide kernel), so a run is killed mid-task.
const SLOW: [&str; 6] = ["-k", "gaussian:6", "--method", "naive", "--grid", "4"];

/// A run killed while its parent lives on without reaping it is a zombie:
/// `kill(pid, 0)` calls it alive, but its claims are dead. The next run
/// takes them over and finishes every task (exit 0), leaving no claim,
/// temp or scratch file of the killed run.
#[test]
fn a_zombie_holder_is_taken_over_and_the_resumed_run_finishes_every_task() {
    let dir = tempfile::tempdir().unwrap();
    let reference = plan_of_map(dir.path(), "reference", &SLOW);
    mapfilter_ok(&["batch", "run", reference.to_str().unwrap(), "-q"]);
    let batch = plan_of_map(dir.path(), "zombie", &SLOW);
    let b = batch.to_str().unwrap();
    // sh starts the run, then becomes `sleep`, which never reaps it.
    let script = format!(
        "{} batch run {b} -q --jobs 2 2>/dev/null & exec sleep 1000",
        env!("CARGO_BIN_EXE_mapfilter")
    );
    let state = batch.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let mut parent = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    let start = std::time::Instant::now();
    let holder = loop {
        let claim = files_in(&state).into_iter().find(|n| n.ends_with(".claim"));
        if let Some(text) = claim.and_then(|c| std::fs::read_to_string(state.join(c)).ok()) {
            let token: serde_json::Value = serde_json::from_str(&text).unwrap();
            break token["pid"].as_u64().unwrap() as u32;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no claim made");
        std::thread::sleep(Duration::from_millis(1));
    };
    Command::new("kill")
        .args(["-KILL", &holder.to_string()])
        .status()
        .unwrap();
    while proc_stat(holder).is_some_and(|(s, _)| s != 'Z') {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(proc_stat(holder).map(|s| s.0), Some('Z'), "a zombie");
    assert!(outputs(&batch).len() < 16, "killed after the last task");
    let run = mapfilter(&["batch", "run", b]);
    let text = String::from_utf8_lossy(&run.stderr);
    let _ = parent.kill();
    let _ = parent.wait();
    assert_eq!(run.status.code(), Some(0), "{text}");
    assert!(outputs(&batch) == outputs(&reference), "{text}");
    assert_eq!(leftovers(&batch), Vec::<String>::new(), "{text}");
}

/// A claim naming a live process of this host that started at another
/// time (its PID was reused) is dead; one naming the process as it is
/// holds its task: --no-wait exits 75 with that task missing, never 0.
#[test]
fn a_reused_pid_does_not_hold_a_task_and_a_live_holder_gives_75() {
    let dir = tempfile::tempdir().unwrap();
    let batch = small_plan(dir.path(), "reused");
    std::fs::create_dir_all(batch.join("state")).unwrap();
    let b = batch.to_str().unwrap();
    let mut other = Command::new("sleep").arg("1000").spawn().unwrap();
    let (_, started) = proc_stat(other.id()).unwrap();
    let forge = |task: usize, start: u64| {
        let token = serde_json::json!({
            "host": this_host(), "pid": other.id(), "nonce": 9, "start": start
        });
        std::fs::write(
            batch.join("state").join(format!("task-{task}.claim")),
            token.to_string(),
        )
        .unwrap();
    };
    forge(3, started + 1);
    let run = mapfilter_ok(&["batch", "run", b, "--no-wait"]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(text.contains("16 done now"), "{text}");
    std::fs::remove_dir_all(batch.join("out")).unwrap();
    forge(5, started);
    held(&["batch", "run", b, "--no-wait"], &batch);
    assert!(!batch.join("out").join("map_r1c1.tif").exists());
    // Waiting (the default), the run takes the task once its holder dies.
    let mut waiting = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(["batch", "run", b])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        waiting.try_wait().unwrap().is_none(),
        "waits for the holder"
    );
    let _ = other.kill();
    let _ = other.wait();
    let done = waiting.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{text}");
    assert!(text.contains("waiting for 1 task(s)"), "{text}");
    assert_eq!(outputs(&batch).len(), 16);
    assert_eq!(leftovers(&batch), Vec::<String>::new());
}

/// A claim of another host holds its task for its lease: --no-wait gives
/// 75; a waiting run takes it over once the lease ends and finishes.
#[test]
fn a_foreign_claim_is_waited_for_until_its_lease_ends() {
    let dir = tempfile::tempdir().unwrap();
    let batch = small_plan(dir.path(), "foreign");
    std::fs::create_dir_all(batch.join("state")).unwrap();
    let b = batch.to_str().unwrap();
    forge_claim(&batch, 7, Some(2.0), Duration::ZERO);
    held(
        &["batch", "run", b, "--no-wait", "--stale-after", "1s"],
        &batch,
    );
    forge_claim(&batch, 7, Some(2.0), Duration::ZERO);
    let t0 = std::time::Instant::now();
    let run = mapfilter_ok(&["batch", "run", b, "--stale-after", "1s"]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(t0.elapsed() >= Duration::from_secs(1), "{text}");
    assert!(text.contains("1 done now"), "{text}");
    assert_eq!(outputs(&batch).len(), 16);
    // An expired one is taken at once.
    std::fs::remove_file(batch.join("state/task-2.done.json")).unwrap();
    forge_claim(&batch, 2, Some(60.0), Duration::from_secs(120));
    let run = mapfilter_ok(&["batch", "run", b, "--no-wait", "--stale-after", "1s"]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(text.contains("1 done now"), "{text}");
}

/// 4x4 tiles, one deleted after planning, run with two tasks at once, 20
/// times: only its task fails (its neighbours are done, degraded: their
/// halo there is nodata); no other task ever fails or degrades.
#[test]
fn with_jobs_2_a_deleted_tile_fails_only_its_task_20_times() {
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (160, 160), Some(9), 21);
    let cuts = [0, 40, 80, 120, 160];
    let tiles = cut(&map, &cuts, &cuts);
    let batch = dir.path().join("batch");
    let b = batch.to_str().unwrap();
    mapfilter_ok(&[
        "batch",
        "plan",
        tiles.to_str().unwrap(),
        "--out",
        b,
        "-k",
        "gaussian:1",
        "--device",
        "host",
    ]);
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("plan.json")).unwrap()).unwrap();
    let task_of = |name: &str| {
        plan["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .position(|t| t["input"].as_str().unwrap().ends_with(name))
            .unwrap()
    };
    let bad = task_of("t_1_2.tif");
    let neighbours: Vec<usize> = [
        "t_0_1", "t_0_2", "t_0_3", "t_1_1", "t_1_3", "t_2_1", "t_2_2", "t_2_3",
    ]
    .iter()
    .map(|n| task_of(&format!("{n}.tif")))
    .collect();
    std::fs::remove_file(tiles.join("t_1_2.tif")).unwrap();
    for round in 0..20 {
        for sub in ["out", "state"] {
            let _ = std::fs::remove_dir_all(batch.join(sub));
        }
        let run = mapfilter(&["batch", "run", b, "--jobs", "2", "-q"]);
        let text = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "round {round}: {text}");
        assert!(
            text.contains(&format!("1 task(s) failed: {bad}")),
            "round {round}: {text}"
        );
        let state = files_in(&batch.join("state"));
        let failed: Vec<&String> = state
            .iter()
            .filter(|n| n.ends_with(".failed.json"))
            .collect();
        assert_eq!(
            failed,
            [&format!("task-{bad}.failed.json")],
            "round {round}: {text}"
        );
        // The record and the message say what kind of error it was: the
        // task's input is gone, so not the environment's.
        let rec: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(batch.join("state").join(failed[0])).unwrap(),
        )
        .unwrap();
        let kind = rec["kind"].as_str().unwrap_or_default();
        assert!(["input", "io"].contains(&kind), "round {round}: {rec}");
        assert!(
            text.contains(&format!("failed task {bad} ({kind}): ")),
            "round {round}: {text}"
        );
        assert_eq!(outputs(&batch).len(), 15, "round {round}: {text}");
        for n in state.iter().filter(|n| n.ends_with(".done.json")) {
            let rec: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(batch.join("state").join(n)).unwrap(),
            )
            .unwrap();
            let task = rec["task"].as_u64().unwrap() as usize;
            let degraded = !rec["missing_halo"].as_array().unwrap().is_empty();
            assert_eq!(
                degraded,
                neighbours.contains(&task),
                "round {round}: task {task}"
            );
        }
    }
}

/// A member replaced by a raster of another size after planning fails the
/// tasks that read it, saying so; planning a folder into itself again
/// takes none of the batch's own files as inputs.
#[test]
fn a_changed_member_fails_clearly_and_a_plan_never_takes_its_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (120, 90), Some(9), 5);
    let tiles = cut(&map, &[0, 60, 120], &[0, 50, 90]);
    let t = tiles.to_str().unwrap();
    let opts = ["-k", "gaussian:1.5", "--device", "host"];
    let plan = |extra: &[&str]| {
        let mut args = vec!["batch", "plan", t, "--out", t];
        args.extend(opts);
        args.extend(extra);
        mapfilter_ok(&args);
        let plan: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(tiles.join("plan.json")).unwrap())
                .unwrap();
        plan
    };
    let first = plan(&[]);
    mapfilter_ok(&["batch", "run", t, "-q"]);
    let again = plan(&["--overwrite"]);
    assert_eq!(again["tasks"], first["tasks"], "the same four tiles");
    assert_eq!(again["tasks"].as_array().unwrap().len(), 4);
    // t_0_0 replaced by a 50x50 cut of the map (planned 60x50).
    let t00 = tiles.join("t_0_0.tif");
    let status = Command::new("gdal_translate")
        .args(["-q", "-srcwin", "0", "0", "50", "50"])
        .arg(&map)
        .arg(dir.path().join("smaller.tif"))
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::rename(dir.path().join("smaller.tif"), &t00).unwrap();
    std::fs::remove_dir_all(tiles.join("state")).unwrap();
    let run = mapfilter(&["batch", "run", t, "-q"]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{text}");
    assert!(
        text.contains("t_0_0.tif changed since the plan: 50x50 pixels now, 60x50 planned"),
        "{text}"
    );
    assert!(text.contains("failed task 0"), "{text}");
}

/// plan.json edited to write elsewhere (out of out/, over an input, over
/// the plan, absolutely) or to index out of range is refused in one line,
/// never a panic; a symlink planted in out/ is not written through.
#[test]
fn a_task_never_writes_outside_out_nor_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let batch = small_plan(dir.path(), "confined");
    let b = batch.to_str().unwrap();
    let plan_path = batch.join("plan.json");
    let original = std::fs::read_to_string(&plan_path).unwrap();
    let map = dir.path().join("map.tif");
    let map_bytes = std::fs::read(&map).unwrap();
    let victim = dir.path().join("victim.tif");
    std::fs::write(&victim, b"keep").unwrap();
    let victim_path = victim.to_str().unwrap();
    for (field, value) in [
        ("/tasks/1/output", serde_json::json!("../map.tif")),
        ("/tasks/1/output", serde_json::json!(victim_path)),
        ("/tasks/1/output", serde_json::json!("plan.json")),
        ("/tasks/1/output", serde_json::json!("out/../plan.json")),
        (
            "/tasks/1/output",
            serde_json::json!("state/task-0.done.json"),
        ),
        ("/tasks/1/output", serde_json::json!("out/map_r0c0.tif")),
        ("/tasks/1/mosaic", serde_json::json!(7)),
        ("/tasks/1/window/2", serde_json::json!(u64::MAX)),
        ("/mosaics/0/output_width", serde_json::json!(1_000_000)),
    ] {
        let mut plan: serde_json::Value = serde_json::from_str(&original).unwrap();
        *plan.pointer_mut(field).unwrap() = value.clone();
        std::fs::write(&plan_path, plan.to_string()).unwrap();
        for cmd in ["run", "report"] {
            let run = mapfilter(&["batch", cmd, b]);
            let text = String::from_utf8_lossy(&run.stderr);
            assert_eq!(run.status.code(), Some(1), "{field} = {value}: {text}");
            assert!(
                text.contains("not a valid plan"),
                "{field} = {value}: {text}"
            );
            assert_eq!(text.lines().count(), 1, "{text}");
        }
        assert_eq!(std::fs::read(&map).unwrap(), map_bytes);
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }
    std::fs::write(&plan_path, &original).unwrap();
    // A symlink in out/ to the input: its task fails, the input is intact.
    std::os::unix::fs::symlink(&map, batch.join("out/map_r0c1.tif")).unwrap();
    let run = mapfilter(&["batch", "run", b, "-q"]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{text}");
    assert!(
        text.contains("1 task(s) failed: 1") && text.contains("symlink"),
        "{text}"
    );
    assert_eq!(std::fs::read(&map).unwrap(), map_bytes);
    assert_eq!(outputs(&batch).len(), 16, "15 written, the link kept");
}

/// A failure of the environment is not sticky: a run under a file size
/// limit (as with a full disk, writes fail) fails its tasks with a hint
/// that is not about inputs; a plain rerun, no --retry-failed, does them.
#[test]
fn a_failure_of_the_environment_is_retried_by_a_plain_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let batch = small_plan(dir.path(), "env");
    let b = batch.to_str().unwrap();
    // Writes past 1 block fail with EFBIG (SIGXFSZ ignored, as exec keeps it).
    let script = format!(
        "trap '' XFSZ; ulimit -f 1; exec {} batch run {b} -q",
        env!("CARGO_BIN_EXE_mapfilter")
    );
    let run = Command::new("sh").args(["-c", &script]).output().unwrap();
    let text = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{text}");
    assert!(text.contains("task(s) failed"), "{text}");
    assert!(!text.contains("fix their inputs"), "{text}");
    assert!(text.contains("run again"), "{text}");
    assert!(outputs(&batch).len() < 16, "{text}");
    let run = mapfilter_ok(&["batch", "run", b]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(text.contains("0 failed"), "{text}");
    assert_eq!(outputs(&batch).len(), 16);
    assert_eq!(leftovers(&batch), Vec::<String>::new());
}

/// In worker processes a task that fails is listed by the run, which exits
/// 1; the others are done; repaired, `--retry-failed` redoes it seam-free.
#[test]
fn worker_processes_report_a_failed_task_and_exit_1() {
    let CorruptTile {
        dir: _dir,
        map,
        tiles,
        whole,
        batch,
    } = corrupt_tile();
    let run = mapfilter(&["batch", "run", batch.to_str().unwrap(), "--processes", "3"]);
    assert_eq!(run.status.code(), Some(1));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("1 task(s) failed: 2"), "{err}");
    assert!(
        err.contains("failed task 2") && err.contains("t_1_0.tif"),
        "{err}"
    );
    assert!(err.contains("3 done now"), "{err}");
    assert_eq!(
        files_in(&batch.join("out")),
        ["t_0_0.tif", "t_0_1.tif", "t_1_1.tif"]
    );
    assert_eq!(leftovers(&batch), Vec::<String>::new());
    std::fs::remove_dir_all(&tiles).unwrap();
    cut(&map, &[0, 60, 120], &[0, 50, 90]);
    let retry = [
        "batch",
        "run",
        batch.to_str().unwrap(),
        "--retry-failed",
        "--processes",
        "3",
    ];
    mapfilter_ok(&retry);
    assert_mosaic_equals(&batch, &whole);
}

/// A worker killed outright fails the run (it did not finish its share: no
/// exit 0); its claims, held by a dead process, are taken over by the next
/// run, which finishes with the bytes of an uninterrupted one.
#[test]
fn a_killed_worker_fails_the_run_and_a_rerun_finishes_identically() {
    let dir = tempfile::tempdir().unwrap();
    let options = ["-k", "gaussian:6", "--method", "naive", "--grid", "4"];
    let reference = plan_of_map(dir.path(), "reference", &options);
    mapfilter_ok(&["batch", "run", reference.to_str().unwrap(), "-q"]);
    let expected = outputs(&reference);
    let batch = plan_of_map(dir.path(), "killed", &options);
    let mut parent = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args([
            "batch",
            "run",
            batch.to_str().unwrap(),
            "--processes",
            "2",
            "--jobs",
            "2",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let children = format!("/proc/{0}/task/{0}/children", parent.id());
    let start = std::time::Instant::now();
    let worker = loop {
        let state = batch.join("state");
        let claimed = state.exists() && files_in(&state).iter().any(|n| n.ends_with(".claim"));
        let pids = std::fs::read_to_string(&children).unwrap_or_default();
        if let (true, Some(pid)) = (claimed, pids.split_whitespace().next()) {
            break pid.to_string();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no worker claimed a task"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        Command::new("kill")
            .args(["-KILL", &worker])
            .status()
            .unwrap()
            .success()
    );
    let status = parent.wait().unwrap();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut parent.stderr.take().unwrap(), &mut log).unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains("batch worker") && log.contains("SIGKILL"),
        "{log}"
    );
    mapfilter_ok(&[
        "batch",
        "run",
        batch.to_str().unwrap(),
        "-q",
        "--stale-after",
        "1s",
    ]);
    assert!(outputs(&batch) == expected, "outputs differ");
    assert_eq!(leftovers(&batch), Vec::<String>::new());
}
