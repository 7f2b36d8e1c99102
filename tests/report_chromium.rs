//! The HTML reports render in headless Chromium: no console errors, every
//! map decoded, every plot laid out (scripts/check-report.sh). Ignored by
//! default — it needs Debian's chromium (the script installs it) and takes
//! seconds; run with `cargo test --test integration report_chromium -- --ignored`.
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

/// Renders `report` with scripts/check-report.sh; with `MAPFILTER_SCREENSHOTS=DIR`
/// a screenshot of each report goes to DIR to be looked at.
fn check(report: &Path, min_images: usize, min_plots: usize) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/check-report.sh");
    let mut cmd = Command::new("bash");
    if let Some(dir) = std::env::var_os("MAPFILTER_SCREENSHOTS") {
        let name = report.to_string_lossy().replace(['/', '.'], "_");
        let name = name
            .trim_start_matches('_')
            .rsplit("tmp_")
            .next()
            .unwrap_or("report")
            .to_string();
        cmd.env("SCREENSHOT", Path::new(&dir).join(format!("{name}.png")));
    }
    let run = cmd
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
    // A sweep on two real maps: six series share each plot's legend.
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
    let config = dir.path().join("real.toml");
    std::fs::write(
        &config,
        format!(
            "title = \"real\"\nmethods = [\"naive@host\", \"svd@host\", \"dct5@host\"]\nrepeats = 1\n\
             input = [\"{data}/synthetic_simplex_512.tif\", \"{data}/ne_continents_1440x720.tif\"]\n\
             [base]\nkernel = \"gaussian\"\n[[experiment]]\nname = \"kernel_size\"\nvary = \"kernel_size\"\nvalues = [7, 11]\n"
        ),
    )
    .unwrap();
    mapfilter(&["sweep", config.to_str().unwrap(), "--out", &p("real"), "-q"]);
    check(&dir.path().join("real/report.html"), 0, 2);
}
