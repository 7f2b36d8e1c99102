//! The HTML reports render in headless Chromium: no console errors, every
//! map decoded, every plot laid out (scripts/check-report.sh). Ignored by
//! default — it needs Debian's chromium (the script installs it) and takes
//! seconds; run with `cargo test --test report_chromium -- --ignored`.
#![cfg(feature = "gdal")]

use std::path::Path;
use std::process::Command;

fn mapfilter(args: &[&str]) {
    let run = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

fn check(report: &Path, min_images: usize, min_plots: usize) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/check-report.sh");
    let run = Command::new("bash")
        .arg(script)
        .arg(report)
        .arg(min_images.to_string())
        .arg(min_plots.to_string())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
#[ignore = "needs chromium; run with --ignored"]
fn smooth_report_and_sweep_report_render_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    mapfilter(&[
        "gen",
        &p("in.tif"),
        "--size",
        "300x200",
        "--classes",
        "6",
        "-q",
    ]);
    mapfilter(&[
        "smooth",
        &p("in.tif"),
        &p("out.tif"),
        "-k",
        "gaussian:1",
        "--report",
        &p("smooth.html"),
        "-q",
    ]);
    check(&dir.path().join("smooth.html"), 4, 2);
    mapfilter(&[
        "compare",
        &p("in.tif"),
        &p("out.tif"),
        "--html",
        &p("compare.html"),
        "-q",
    ]);
    check(&dir.path().join("compare.html"), 3, 2);
    let smoke = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/sweeps/smoke.toml");
    mapfilter(&["sweep", smoke, "--out", &p("sweep"), "-q"]);
    check(&dir.path().join("sweep/report.html"), 0, 10);
}
