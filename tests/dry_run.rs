//! `smooth --dry-run` and `batch plan --dry-run` (and `--estimate`): say what would run
//! (kernel in pixels and metres, output and tiles or tasks, method and why,
//! memory or tasks in flight) from the headers alone, and read no pixel and
//! write nothing.
#![cfg(feature = "gdal")]

use crate::common;

use common::{files_in, mapfilter, mapfilter_ok};
use std::path::Path;

const MODIS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/modis_igbp_2019_2048.tif");

/// A VRT in `dir` over a copy of the MODIS map that is then deleted: its
/// header opens, its pixels cannot be read. `extra`: gdalbuildvrt options.
fn headers_only(dir: &Path, extra: &[&str]) -> std::path::PathBuf {
    let copy = dir.join("copy.tif");
    std::fs::copy(MODIS, &copy).unwrap();
    let vrt = dir.join("map.vrt");
    let made = std::process::Command::new("gdalbuildvrt")
        .arg("-q")
        .args(extra)
        .args([vrt.to_str().unwrap(), copy.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::remove_file(&copy).unwrap();
    vrt
}

#[test]
fn a_dry_run_says_what_would_run_and_reads_no_pixel() {
    let dir = tempfile::tempdir().unwrap();
    let vrt = headers_only(dir.path(), &[]);
    let out = dir.path().join("out.tif");
    let (v, o) = (vrt.to_str().unwrap(), out.to_str().unwrap());
    let run = mapfilter_ok(&[
        "smooth",
        v,
        o,
        "-k",
        "gaussian:10km",
        "--method",
        "auto",
        "--device",
        "host",
        "--dry-run",
    ]);
    let said = String::from_utf8_lossy(&run.stdout);
    for line in [
        "dry run:",
        "input: 2048x2048 Byte",
        "kernel: gaussian:10km → 11x11 px (σ = 1.8972 px)",
        "kernel in metres: σ = 10000 m / 5270.9",
        "output: ",
        "2048x2048 (Same border), 16 tile(s) of up to 512x512 px (+5 px halo)",
        "method: auto",
        "classes: ",
        "auto: cost model",
        "memory: about",
    ] {
        assert!(said.contains(line), "{line}\n{said}");
    }
    assert_eq!(files_in(dir.path()), ["map.vrt"]);
    // The same run for real needs the pixels: it fails.
    let real = mapfilter(&["smooth", v, o, "-k", "gaussian:10km", "-q"]);
    assert_eq!(real.status.code(), Some(1));
    assert!(!Path::new(o).exists());
}

#[test]
fn a_dry_run_refuses_what_the_run_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    let run = mapfilter(&[
        "smooth",
        MODIS,
        out.to_str().unwrap(),
        "-k",
        "gaussian:0.2",
        "--dry-run",
    ]);
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("1x1"));
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn a_batch_plan_dry_run_says_what_the_plan_would_be_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // No nodata: a real plan would scan the classes (read every pixel).
    let vrt = headers_only(dir.path(), &["-vrtnodata", "None"]);
    let batch = dir.path().join("batch");
    let (v, b) = (vrt.to_str().unwrap(), batch.to_str().unwrap());
    let run = mapfilter_ok(&[
        "batch",
        "plan",
        v,
        "--out",
        b,
        "-k",
        "gaussian:10km",
        "--grid",
        "4",
        "--device",
        "host",
        "--dry-run",
    ]);
    let said = String::from_utf8_lossy(&run.stdout);
    for line in [
        "dry run: nothing is written",
        "16 tasks over 1 mosaic(s), 4.2 Mpx in all (the largest task 0.3 Mpx)",
        "2048x2048 → output 2048x2048; classes: scanned when planned",
        "kernel in metres: σ = 10000 m / 5270.9",
        "batch run here (defaults): 1 task(s) in flight",
    ] {
        assert!(said.contains(line), "{line}\n{said}");
    }
    assert!(!batch.exists());
    assert_eq!(files_in(dir.path()), ["map.vrt"]);
    // The plan for real needs the pixels (the class scan): it fails.
    let real = mapfilter(&["batch", "plan", v, "--out", b, "-k", "gaussian:10km"]);
    assert_eq!(real.status.code(), Some(1));
}

/// The `estimate:` line of a dry run's text, and its engine time in seconds
/// as a number (however it is written: "0.42 s", "3 min 5 s").
fn estimate_line(said: &str) -> (&str, f64) {
    let line = said
        .lines()
        .find(|l| l.starts_with("estimate: engine about "))
        .unwrap_or_else(|| panic!("no estimate line\n{said}"));
    let time = line["estimate: engine about ".len()..]
        .split(" for ")
        .next()
        .unwrap();
    let mut secs = 0.0;
    let words: Vec<&str> = time.split(' ').collect();
    for pair in words.chunks(2) {
        let n: f64 = pair[0].parse().unwrap();
        secs += n * match pair[1] {
            "s" => 1.0,
            "min" => 60.0,
            "h" => 3600.0,
            other => panic!("unit {other} in {line}"),
        };
    }
    (line, secs)
}

#[test]
fn an_estimate_times_a_synthetic_sample_and_still_reads_no_pixel() {
    let dir = tempfile::tempdir().unwrap();
    let vrt = headers_only(dir.path(), &["-vrtnodata", "None"]);
    let out = dir.path().join("out.tif");
    let (v, o) = (vrt.to_str().unwrap(), out.to_str().unwrap());
    let run = mapfilter_ok(&[
        "smooth",
        v,
        o,
        "-k",
        "box:9",
        "--device",
        "host",
        "--estimate",
    ]);
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(
        said.contains("dry run:") && said.contains("method: "),
        "{said}"
    );
    // Timings are not asserted (the unit tests check the scaling): only
    // that a sample ran and its time was scaled to the whole output.
    let (line, secs) = estimate_line(&said);
    assert!(
        line.contains("for 4.2 Mpx") && line.contains("ns/px"),
        "{line}"
    );
    assert!(secs > 0.0, "{line}");
    assert!(!Path::new(o).exists());
    // The batch plan's estimate: the same sample, scaled to all its tasks.
    let batch = dir.path().join("batch");
    let b = batch.to_str().unwrap();
    let plan = ["batch", "plan", v, "--out", b, "-k", "box:9", "--grid", "4"];
    let run = mapfilter_ok(&[&plan[..], &["--device", "host", "--estimate"]].concat());
    let said = String::from_utf8_lossy(&run.stdout);
    let (line, secs) = estimate_line(&said);
    assert!(line.contains("for 4.2 Mpx") && secs > 0.0, "{line}");
    assert!(!batch.exists());
    assert_eq!(files_in(dir.path()), ["map.vrt"]);
}
