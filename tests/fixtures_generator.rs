//! The fixtures' own generator (tests/fixtures/generate.py, numpy and GDAL's
//! Python bindings, written from docs/semantics.md apart from the library)
//! must reproduce every committed expected output pixel for pixel. Runs when
//! Debian's /usr/bin/python3 can import numpy and osgeo; prints a skip
//! message otherwise, unless `MAPFILTER_REQUIRE_PYTHON_GDAL` is set (as
//! `scripts/test.sh` and CI do), where missing modules fail the test.

use std::process::Command;

const PYTHON: &str = "/usr/bin/python3";
const GENERATOR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/generate.py");

#[test]
fn generator_reproduces_the_committed_fixtures() {
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
    // Three kernels × two borders, each compared.
    let compared = text.lines().filter(|l| l.ends_with(" ok")).count();
    assert_eq!(compared, 6, "{text}");
}
