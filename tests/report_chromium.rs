//! The HTML reports render in headless Chromium: no console errors, every
//! map decoded, every plot laid out, no horizontal scroll at 1280 pixels
//! (scripts/check-report.sh). The 20+ class reports run whenever chromium
//! is installed, and must run where `MAPFILTER_REQUIRE_CHROMIUM` is set
//! (scripts/test.sh); the sweeps on the bundled data are ignored by default
//! (`cargo test --test integration report_chromium -- --ignored`).
#![cfg(feature = "gdal")]

use crate::common::{TestRaster, write_raster};
use gdal::raster::GdalDataType;
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

/// Whether chromium is here to render with; without it the test skips,
/// unless `MAPFILTER_REQUIRE_CHROMIUM` says it must not.
fn chromium() -> bool {
    let found = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("MAPFILTER_REQUIRE_CHROMIUM").is_none(),
            "MAPFILTER_REQUIRE_CHROMIUM is set but chromium does not run (apt-get install chromium)"
        );
        eprintln!("skipped: no chromium (apt-get install chromium)");
    }
    found
}

/// 22 classes in blocks of 40 pixels, 12 % of pixels speckled into the
/// next class (smoothing has something to do), no colour table (the
/// categorical palette draws them), nodata 0.
fn twenty_two_classes(path: &Path) {
    let (w, h) = (320, 240);
    let data: Vec<u16> = (0..h)
        .flat_map(|y: usize| {
            (0..w).map(move |x: usize| {
                let code = 1 + ((x / 40) + 7 * (y / 40)) % 22;
                let speckle = (x * 7919 + y * 104_729 + x * y * 31) % 100 < 12;
                (if speckle { code % 22 + 1 } else { code }) as u16
            })
        })
        .collect();
    write_raster(
        path,
        &TestRaster {
            width: w,
            height: h,
            data: &data,
            data_type: GdalDataType::UInt8,
            nodata: Some(0.0),
            colors: false,
        },
    );
}

/// Every report that draws classes, at 22 classes, fits a 1280-pixel
/// window without a horizontal scroll (page or table), renders its maps
/// and plots, and names classes from a --palette file.
#[test]
fn reports_of_22_classes_fit_the_page_in_chromium() {
    if !chromium() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    twenty_two_classes(Path::new(&p("in.tif")));
    std::fs::write(
        p("classes.txt"),
        "5 31 120 180 Open water\n1 0 100 0 Broadleaf forest with a long name\n",
    )
    .unwrap();
    let (input, palette) = (p("in.tif"), p("classes.txt"));
    mapfilter(&[
        "smooth",
        &input,
        &p("out.tif"),
        "-k",
        "gaussian:1.5",
        "--method",
        "naive",
        "-q",
    ]);
    mapfilter(&[
        "compare",
        &input,
        &p("out.tif"),
        "--html",
        &p("compare.html"),
        "--palette",
        &palette,
        "-q",
    ]);
    let html = std::fs::read_to_string(p("compare.html")).unwrap();
    assert!(html.contains("5 Open water") && html.contains("class=\"matrix\""));
    check(&dir.path().join("compare.html"), 3, 2);
    // A sample labelled with the input's classes, assessed on the output.
    mapfilter(&[
        "sample",
        &input,
        "--out",
        &p("s.gpkg"),
        "--allocation",
        "fixed:8",
        "--seed",
        "1",
        "-q",
    ]);
    let labelled = p("s.gpkg");
    mapfilter(&[
        "assess",
        &p("out.tif"),
        &labelled,
        "--label",
        "stratum",
        "--strata",
        &input,
        "--html",
        &p("assess.html"),
        "--palette",
        &palette,
        "-q",
    ]);
    check(&dir.path().join("assess.html"), 0, 0);
    std::fs::write(
        p("sweep.toml"),
        format!(
            "title = \"σ against the sample\"\nmethods = [\"naive@host\"]\nreference = \"none\"\n\
             input = \"{input}\"\n[base]\nkernel = \"gaussian\"\n[[experiment]]\nname = \"sigma\"\n\
             vary = \"kernel_size\"\nvalues = [3, 7, 11]\n"
        ),
    )
    .unwrap();
    mapfilter(&[
        "sweep",
        &p("sweep.toml"),
        "--out",
        &p("sweep"),
        "--reference",
        &labelled,
        "--label",
        "stratum",
        "--palette",
        &palette,
        "-q",
    ]);
    check(&dir.path().join("sweep/report.html"), 0, 3);
    let batch = p("batch");
    mapfilter(&[
        "batch",
        "plan",
        &input,
        "--out",
        &batch,
        "--grid",
        "2",
        "-k",
        "gaussian:1.5",
        "--device",
        "host",
    ]);
    mapfilter(&["batch", "run", &batch, "-q"]);
    mapfilter(&[
        "batch",
        "report",
        &batch,
        "--reference",
        &labelled,
        "--label",
        "stratum",
        "--area-unit",
        "ha",
        "--palette",
        &palette,
    ]);
    check(&dir.path().join("batch/report.html"), 3, 0);
}
