//! `batch plan --mmu`: a minimum mapping unit in a batch, seam-free. Each
//! mosaic is sieved as one raster once its tasks are smoothed, so the
//! outputs equal `smooth --mmu` of the merged mosaic (and `sieve` of its
//! `smooth`), not a sieve of each tile; sharded, worker-process and
//! resumed runs give the same bytes; a run whose sieve failed or was held
//! never exits 0 with outputs missing, and a rerun finishes it.

#![cfg(feature = "gdal")]
use crate::batch::{
    assert_mosaic_equals, cut, kill_runs_at_random, leftovers, map, outputs, this_host,
};
use crate::common;

use common::*;
use std::path::{Path, PathBuf};

/// Smoothing on the host, and an MMU of 60 px: patches of the smoothed
/// map that large cross the tiles' edges.
const SMOOTH: [&str; 8] = [
    "-k",
    "gaussian:2",
    "--tile",
    "32",
    "--method",
    "naive",
    "--device",
    "host",
];
const MMU: [&str; 2] = ["--mmu", "60"];

/// A 151x113 map with nodata holes, and it cut into 6 uneven tiles.
fn map_and_tiles(dir: &Path) -> (PathBuf, PathBuf) {
    let map = map(dir, (151, 113), Some(9), 7);
    let tiles = cut(&map, &[0, 37, 100, 151], &[0, 45, 113]);
    (map, tiles)
}

fn plan(tiles: &Path, batch: &Path, extra: &[&str]) {
    let mut args = vec![
        "batch",
        "plan",
        tiles.to_str().unwrap(),
        "--out",
        batch.to_str().unwrap(),
    ];
    args.extend(SMOOTH);
    args.extend(MMU);
    args.extend(extra);
    mapfilter_ok(&args);
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What a finished MMU batch leaves: done records and the mosaic's sieve
/// record in state/, nothing of the smoothed windows.
fn assert_finished_clean(batch: &Path) {
    let smoothed = batch.join("smoothed");
    assert!(
        !smoothed.exists(),
        "the smoothed windows stay: {:?}",
        files_in(&smoothed)
    );
    let state = files_in(&batch.join("state"));
    assert!(
        state
            .iter()
            .all(|n| n.ends_with(".done.json") || n == "mosaic-0.sieved.json"),
        "{state:?}"
    );
    assert!(state.contains(&"mosaic-0.sieved.json".to_string()));
    assert_eq!(leftovers(batch), vec!["mosaic-0.sieved.json".to_string()]);
}

#[test]
fn mmu_batch_equals_smooth_mmu_of_the_merged_mosaic_not_a_sieve_per_tile() {
    let dir = tempfile::tempdir().unwrap();
    let (map, tiles) = map_and_tiles(dir.path());
    let m = map.to_str().unwrap();
    // smooth --mmu of the whole map, and sieve of its smooth: the same.
    let whole = dir.path().join("whole.tif");
    mapfilter_ok(
        &[
            &["smooth", m, whole.to_str().unwrap(), "-q"][..],
            &SMOOTH,
            &MMU,
        ]
        .concat(),
    );
    let smoothed = dir.path().join("smoothed.tif");
    mapfilter_ok(
        &[
            &["smooth", m, smoothed.to_str().unwrap(), "-q"][..],
            &SMOOTH,
        ]
        .concat(),
    );
    let sieved = dir.path().join("sieved.tif");
    mapfilter_ok(&[
        "sieve",
        smoothed.to_str().unwrap(),
        sieved.to_str().unwrap(),
        "-s",
        "60",
        "-q",
    ]);
    assert!(read_raster(&whole) == read_raster(&sieved));
    assert!(
        read_raster(&whole) != read_raster(&smoothed),
        "the MMU acts"
    );
    let batch = dir.path().join("batch");
    plan(&tiles, &batch, &[]);
    let run = mapfilter_ok(&["batch", "run", batch.to_str().unwrap()]);
    let text = stderr(&run);
    assert!(
        text.contains("minimum mapping unit of mosaic 0: 60 px")
            && text.contains("over its 6 tasks"),
        "{text}"
    );
    assert_mosaic_equals(&batch, &whole);
    assert_finished_clean(&batch);
    // The seam matters: sieving each task's window of the smoothing on its
    // own gives other pixels.
    let plain = dir.path().join("plain");
    mapfilter_ok(
        &[
            &[
                "batch",
                "plan",
                tiles.to_str().unwrap(),
                "--out",
                plain.to_str().unwrap(),
            ][..],
            &SMOOTH,
        ]
        .concat(),
    );
    mapfilter_ok(&["batch", "run", plain.to_str().unwrap(), "-q"]);
    let mut differ = 0;
    for (name, _) in outputs(&plain) {
        let tile = plain.join("out").join(&name);
        let alone = dir.path().join(format!("alone-{name}"));
        mapfilter_ok(&[
            "sieve",
            tile.to_str().unwrap(),
            alone.to_str().unwrap(),
            "-s",
            "60",
            "-q",
        ]);
        let mmu = batch.join("out").join(&name);
        differ += read_raster(&alone)
            .2
            .iter()
            .zip(&read_raster(&mmu).2)
            .filter(|(a, b)| a != b)
            .count();
    }
    assert!(
        differ > 0,
        "a sieve per tile gives the same: no patch crosses a tile"
    );
    // The report says what the MMU changed.
    let report = mapfilter_ok(&["batch", "report", batch.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&report.stdout);
    assert!(
        said.contains("minimum mapping unit 60 (4-connected)"),
        "{said}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("report.json")).unwrap()).unwrap();
    assert!(
        json["mmu"]["pixels_changed"].as_u64().unwrap() > 0,
        "{json}"
    );
    assert_eq!(json["mmu"]["sieved"][0]["threshold"], 60);
    // A finished batch runs nothing again.
    let again = mapfilter_ok(&["batch", "run", batch.to_str().unwrap()]);
    let text = stderr(&again);
    assert!(
        text.contains("0 done now") && text.contains("6 done before"),
        "{text}"
    );
    assert!(!text.contains("minimum mapping unit of mosaic"), "{text}");
}

/// Shards, worker processes and runs killed at random moments (in the
/// smoothing or in the sieve) then resumed give the bytes of one run.
#[test]
fn mmu_shards_workers_and_resumed_runs_give_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (_map, tiles) = map_and_tiles(dir.path());
    let reference = dir.path().join("reference");
    plan(&tiles, &reference, &[]);
    mapfilter_ok(&["batch", "run", reference.to_str().unwrap(), "-q"]);
    let expected = outputs(&reference);
    assert_eq!(expected.len(), 6);
    // Shard 0 smooths its tasks and leaves the sieve to the run that
    // smooths the mosaic's last task: no output yet, exit 0, said so.
    let sharded = dir.path().join("sharded");
    plan(&tiles, &sharded, &[]);
    let s = sharded.to_str().unwrap();
    let first = mapfilter_ok(&["batch", "run", s, "--shard", "0/2"]);
    let text = stderr(&first);
    assert!(text.contains("3 task(s) smoothed"), "{text}");
    assert!(outputs(&sharded).is_empty(), "{text}");
    let report = mapfilter(&["batch", "report", s]);
    assert_eq!(report.status.code(), Some(1), "pending until sieved");
    let second = mapfilter_ok(&["batch", "run", s, "--shard", "1/2"]);
    let text = stderr(&second);
    assert!(text.contains("minimum mapping unit of mosaic 0"), "{text}");
    assert!(outputs(&sharded) == expected, "shards: outputs differ");
    assert_finished_clean(&sharded);
    // Worker processes: the parent sieves once its workers are done.
    let workers = dir.path().join("workers");
    plan(&tiles, &workers, &[]);
    mapfilter_ok(&[
        "batch",
        "run",
        workers.to_str().unwrap(),
        "--processes",
        "2",
        "-q",
    ]);
    assert!(outputs(&workers) == expected, "workers: outputs differ");
    assert_finished_clean(&workers);
    for seed in [1u64, 2, 3] {
        let batch = dir.path().join(format!("killed{seed}"));
        plan(&tiles, &batch, &[]);
        // Whatever a kill left, an output there is a whole, sieved one:
        // the bytes of the uninterrupted run.
        kill_runs_at_random(&batch, seed, (10, 200), || {
            for (name, bytes) in outputs(&batch) {
                let want = expected.iter().find(|(n, _)| *n == name).unwrap();
                assert!(
                    want.1 == bytes,
                    "seed {seed}: {name} is not the sieved output"
                );
            }
        });
        mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "-q"]);
        assert!(outputs(&batch) == expected, "seed {seed}: outputs differ");
        assert_finished_clean(&batch);
    }
}

/// A sieve that fails (an output's name taken by a folder) fails the run
/// with exit 1 and no task recorded done; one held by another live run
/// gives 75 with `--no-wait`; a rerun once the cause is gone finishes with
/// the bytes of an uninterrupted run, and so does one after an output was
/// damaged.
#[test]
fn a_failed_or_held_sieve_never_exits_0_and_a_rerun_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_map, tiles) = map_and_tiles(dir.path());
    let reference = dir.path().join("reference");
    plan(&tiles, &reference, &[]);
    mapfilter_ok(&["batch", "run", reference.to_str().unwrap(), "-q"]);
    let expected = outputs(&reference);
    let batch = dir.path().join("batch");
    plan(&tiles, &batch, &[]);
    let b = batch.to_str().unwrap();
    let blocked = batch.join("out").join("t_1_1.tif");
    std::fs::create_dir_all(&blocked).unwrap();
    let run = mapfilter(&["batch", "run", b]);
    let text = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{text}");
    assert!(
        text.contains("minimum mapping unit of mosaic 0 failed")
            && text.contains("not a plain file"),
        "{text}"
    );
    let state = files_in(&batch.join("state"));
    assert!(
        !state.iter().any(|n| n.ends_with(".done.json")),
        "{state:?}"
    );
    assert!(!state.iter().any(|n| n.ends_with(".claim")), "{state:?}");
    // Failing again is failing again.
    assert_eq!(mapfilter(&["batch", "run", b, "-q"]).status.code(), Some(1));
    std::fs::remove_dir(&blocked).unwrap();
    // A live run (this test's process) holds the mosaic's sieve.
    let claim = batch.join("state").join("mosaic-0.claim");
    std::fs::write(
        &claim,
        serde_json::json!({"host": this_host(), "pid": std::process::id(), "nonce": 1}).to_string(),
    )
    .unwrap();
    let run = mapfilter(&["batch", "run", b, "--no-wait"]);
    let text = stderr(&run);
    assert_eq!(run.status.code(), Some(75), "{text}");
    assert!(text.contains("held by other runs"), "{text}");
    std::fs::remove_file(&claim).unwrap();
    let run = mapfilter_ok(&["batch", "run", b]);
    let text = stderr(&run);
    assert!(text.contains("minimum mapping unit of mosaic 0"), "{text}");
    assert!(outputs(&batch) == expected, "outputs differ");
    assert_finished_clean(&batch);
    // An output that no longer matches its record: the mosaic is smoothed
    // and sieved again, to the same bytes.
    std::fs::write(batch.join("out").join("t_0_0.tif"), b"not a tile").unwrap();
    let run = mapfilter_ok(&["batch", "run", b]);
    let text = stderr(&run);
    assert!(
        text.contains("6 done now") && text.contains("minimum mapping unit"),
        "{text}"
    );
    assert!(outputs(&batch) == expected, "outputs differ after a redo");
    assert_finished_clean(&batch);
}

/// One raster cut by `--grid` with `--border valid` and an 8-connected MMU
/// in hectares: the outputs equal `smooth --mmu` of the whole raster on its
/// valid extent (the sieve runs on the output grid, the area converted with
/// the input's pixel).
#[test]
fn mmu_with_a_grid_a_valid_border_and_an_area_equals_smooth_mmu() {
    let dir = tempfile::tempdir().unwrap();
    let map = map(dir.path(), (151, 113), Some(9), 3);
    let m = map.to_str().unwrap();
    // The map's pixels are 30 m wide (common::write_raster), so 4.5 ha is
    // 50 px.
    let options = [
        "-k",
        "disc:3",
        "--tile",
        "40",
        "--border",
        "valid",
        "--device",
        "host",
        "--mmu",
        "4.5ha",
        "--mmu-connectivity",
        "8",
    ];
    let whole = dir.path().join("whole.tif");
    mapfilter_ok(&[&["smooth", m, whole.to_str().unwrap(), "-q"][..], &options].concat());
    let batch = dir.path().join("batch");
    let plan_args = [
        "batch",
        "plan",
        m,
        "--out",
        batch.to_str().unwrap(),
        "--grid",
        "3",
    ];
    mapfilter_ok(&[&plan_args[..], &options].concat());
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["mosaics"][0]["mmu_pixels"], 50, "{plan}");
    mapfilter_ok(&["batch", "run", batch.to_str().unwrap(), "-q"]);
    assert_mosaic_equals(&batch, &whole);
    assert_finished_clean(&batch);
}
