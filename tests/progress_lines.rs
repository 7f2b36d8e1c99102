//! `MAPFILTER_PROGRESS=lines`: the machine-readable progress that programs
//! running mapfilter (the QGIS provider) read from stderr: one
//! `progress: PERCENT LABEL UNIT` line per whole percent, in order, from 0 to
//! 100 per phase; nothing without the variable (stderr is not a terminal
//! here) or with `--quiet`.
#![cfg(feature = "gdal")]

use std::process::Command;

const SIMPLEX: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/data/synthetic_simplex_512.tif"
);

/// Runs mapfilter with `MAPFILTER_PROGRESS` set to `mode` (or unset); returns
/// stderr's progress lines as (percent, "label unit").
fn progress_lines(args: &[&str], mode: Option<&str>) -> Vec<(f64, String)> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mapfilter"));
    cmd.args(args)
        .arg("--overwrite")
        .env_remove("MAPFILTER_PROGRESS");
    if let Some(mode) = mode {
        cmd.env("MAPFILTER_PROGRESS", mode);
    }
    let out = cmd.output().expect("run mapfilter");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("progress: "))
        .map(|rest| {
            let (percent, phase) = rest.split_once(' ').expect("percent and phase");
            (percent.parse().expect("a number"), phase.to_string())
        })
        .collect()
}

#[test]
fn smooth_prints_progress_lines_per_phase() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    let out = out.to_str().unwrap();
    let args = ["smooth", SIMPLEX, out, "-k", "gaussian:1", "--tile", "64"];
    let lines = progress_lines(&args, Some("lines"));
    let tiles: Vec<f64> = lines
        .iter()
        .filter(|(_, phase)| phase == "smooth tiles")
        .map(|&(p, _)| p)
        .collect();
    // 64 tiles: one line per whole percent reached, 0 and 100 included.
    assert_eq!(tiles.len(), 65, "{lines:?}");
    assert_eq!(tiles.first(), Some(&0.0));
    assert_eq!(tiles.last(), Some(&100.0));
    assert!(tiles.windows(2).all(|w| w[0] < w[1]), "{tiles:?}");
    assert!(progress_lines(&args, None).is_empty());
    let quiet = [&args[..], &["--quiet"]].concat();
    assert!(progress_lines(&quiet, Some("lines")).is_empty());
}

#[test]
fn filter_and_compare_print_progress_lines() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    let out = out.to_str().unwrap();
    let lines = progress_lines(
        &["filter", SIMPLEX, out, "--op", "box:3", "--tile", "128"],
        Some("lines"),
    );
    assert_eq!(lines.last(), Some(&(100.0, "filter tiles".to_string())));
    let lines = progress_lines(&["compare", SIMPLEX, SIMPLEX], Some("lines"));
    assert_eq!(lines.last(), Some(&(100.0, "compare strips".to_string())));
}
