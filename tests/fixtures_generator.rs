//! The fixtures' own generator (tests/fixtures/generate.py, numpy and GDAL's
//! Python bindings, written from docs/semantics.md apart from the library)
//! must reproduce every committed expected output pixel for pixel. Runs when
//! Debian's /usr/bin/python3 can import numpy and osgeo; prints a skip
//! message otherwise, unless `MAPFILTER_REQUIRE_PYTHON_GDAL` is set (as
//! `scripts/test.sh` and CI do), where missing modules fail the test.
//! A second test has the generator and `mapfilter smooth` agree on what the
//! committed fixtures leave out: a quantised Gaussian, fractional class
//! weights and `--fill-nodata`.

use crate::common;

use std::process::Command;

const PYTHON: &str = "/usr/bin/python3";
const GENERATOR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/generate.py");

/// Whether Debian's python can run the generator; fails instead of skipping
/// where `MAPFILTER_REQUIRE_PYTHON_GDAL` says it must.
fn generator_runs() -> bool {
    let has_modules = Command::new(PYTHON)
        .args(["-c", "import numpy, osgeo.gdal"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_modules {
        assert!(
            std::env::var_os("MAPFILTER_REQUIRE_PYTHON_GDAL").is_none(),
            "MAPFILTER_REQUIRE_PYTHON_GDAL is set but {PYTHON} cannot import numpy and osgeo"
        );
        eprintln!(
            "skipping the fixture generator: {PYTHON} cannot import numpy and osgeo (apt-get install python3-numpy python3-gdal)"
        );
    }
    has_modules
}

#[test]
fn generator_reproduces_the_committed_fixtures() {
    if !generator_runs() {
        return;
    }
    let out = Command::new(PYTHON)
        .args([GENERATOR, "--check"])
        .output()
        .expect("run the fixture generator");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("all fixtures reproduced"), "{text}");
    // Three kernels × two borders, and the fifteen policy cases, each compared.
    let compared = text.lines().filter(|l| l.ends_with(" ok")).count();
    assert_eq!(compared, 21, "{text}");
}

#[cfg(feature = "gdal")]
#[test]
fn generator_and_cli_agree_beyond_the_fixtures() {
    if !generator_runs() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = common::fixture("classes_72x64.tif");
    let input = input.to_str().unwrap();
    let cases: [&[&str]; 3] = [
        &["--kernel", "gaussian:1.5"],
        &[
            "--kernel",
            "gaussian:1.5",
            "--class-weights",
            "3:2,7:0.5",
            "--fill-nodata",
        ],
        &["--kernel", "disc:2", "--border", "valid", "--fill-nodata"],
    ];
    for (i, options) in cases.iter().enumerate() {
        let ours = dir.path().join(format!("ours{i}.tif"));
        let theirs = dir.path().join(format!("theirs{i}.tif"));
        let mut args = vec![
            "smooth",
            input,
            ours.to_str().unwrap(),
            "--tile",
            "17",
            "-q",
        ];
        args.extend_from_slice(options);
        common::mapfilter_ok(&args);
        let out = Command::new(PYTHON)
            .args([GENERATOR, "--input", input, "--output"])
            .arg(&theirs)
            .args(*options)
            .output()
            .expect("run the fixture generator");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (a, b) = (common::read_raster(&ours), common::read_raster(&theirs));
        assert_eq!((a.0, a.1), (b.0, b.1), "{options:?}: size");
        let differ = a.2.iter().zip(&b.2).filter(|(x, y)| x != y).count();
        assert_eq!(differ, 0, "{options:?}: pixels differ");
    }
}
