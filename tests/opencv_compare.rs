//! Runs scripts/opencv_compare.py (identical median/box/Scharr, PSNR ≥ 50 dB
//! gaussian/bilateral against OpenCV on the sample photo and DEM) when
//! Debian's /usr/bin/python3 can import cv2; prints a skip message otherwise,
//! unless `MAPFILTER_REQUIRE_OPENCV` is set (as `scripts/test.sh` and CI do),
//! where a missing cv2 fails the test.
#![cfg(feature = "gdal")]

use std::process::Command;

#[test]
fn matches_opencv_on_real_photo_and_dem() {
    let python = "/usr/bin/python3";
    let has_cv2 = Command::new(python)
        .args(["-c", "import cv2, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_cv2 {
        assert!(
            std::env::var_os("MAPFILTER_REQUIRE_OPENCV").is_none(),
            "MAPFILTER_REQUIRE_OPENCV is set but {python} cannot import cv2"
        );
        eprintln!(
            "skipping OpenCV comparison: {python} cannot import cv2 (apt-get install python3-opencv)"
        );
        return;
    }
    let out = Command::new(python)
        .args([
            "scripts/opencv_compare.py",
            "--bin",
            env!("CARGO_BIN_EXE_mapfilter"),
        ])
        .output()
        .expect("run the comparison script");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("all checks passed"), "{text}");
}
