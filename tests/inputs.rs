//! Input options as in GDAL's tools: `-b BAND` for `smooth`, `info` and
//! `compare`, the refusal of a multi-band raster given to `smooth` without
//! `-b`, `--src-nodata` / `--dst-nodata`, and `filter`'s warning on a
//! raster with a colour table.
#![cfg(feature = "gdal")]

mod common;

use common::{mapfilter, mapfilter_ok, read_raster};
use std::path::{Path, PathBuf};
use std::process::Command;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

fn nodata_of(path: &Path) -> Option<f64> {
    let ds = gdal::Dataset::open(path).unwrap();
    ds.rasterband(1).unwrap().no_data_value()
}

#[test]
fn multi_band_smooth_needs_b_and_b_reads_that_band() {
    let dir = tempfile::tempdir().unwrap();
    let photo = data("photo_grace_hopper.tif");
    let out = dir.path().join("out.tif");
    let refused = mapfilter(&["smooth", s(&photo), s(&out), "-k", "box:3", "-q"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("3 bands") && err.contains("-b BAND"), "{err}");
    assert!(!out.exists());

    // -b 2 smooths band 2: the same pixels as smoothing band 2 extracted by GDAL.
    let band2 = dir.path().join("band2.tif");
    let extracted = Command::new("gdal_translate")
        .args(["-q", "-b", "2", s(&photo), s(&band2)])
        .status()
        .unwrap();
    assert!(extracted.success());
    let from_extract = dir.path().join("extract.tif");
    mapfilter_ok(&["smooth", s(&photo), s(&out), "-k", "box:3", "-b", "2", "-q"]);
    mapfilter_ok(&["smooth", s(&band2), s(&from_extract), "-k", "box:3", "-q"]);
    assert_eq!(read_raster(&out), read_raster(&from_extract));
    // And not band 1's.
    let band1 = dir.path().join("b1.tif");
    mapfilter_ok(&[
        "smooth",
        s(&photo),
        s(&band1),
        "-k",
        "box:3",
        "-b",
        "1",
        "-q",
    ]);
    assert_ne!(read_raster(&out), read_raster(&band1));

    let none = dir.path().join("none.tif");
    let bad = mapfilter(&["smooth", s(&photo), s(&none), "-k", "box:3", "-b", "4"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("-b 4 is not a band"));
}

#[test]
fn info_and_compare_take_b() {
    let dir = tempfile::tempdir().unwrap();
    let photo = data("photo_grace_hopper.tif");
    let info = |band: &str| {
        let out = mapfilter_ok(&["info", s(&photo), "--json", "-b", band]).stdout;
        serde_json::from_slice::<serde_json::Value>(&out).unwrap()
    };
    let (one, three) = (info("1"), info("3"));
    assert_eq!(one["band"], 1);
    assert_eq!(three["band"], 3);
    assert_ne!(one["classes"], three["classes"]);
    // compare -b reads the same band of both: band 2 against itself agrees fully,
    // band 2 against its own smoothing does not.
    let smoothed = dir.path().join("smoothed.tif");
    mapfilter_ok(&[
        "smooth",
        s(&photo),
        s(&smoothed),
        "-k",
        "box:5",
        "-b",
        "2",
        "-q",
    ]);
    let json = |args: &[&str]| {
        let mut all = vec!["compare", "--json", "-", "-q"];
        all.extend_from_slice(args);
        let out = mapfilter_ok(&all).stdout;
        serde_json::from_slice::<serde_json::Value>(&out).unwrap()
    };
    let same = json(&[s(&photo), s(&photo), "-b", "2"]);
    assert_eq!(same["summary"]["differing_pixels"], 0);
    let refused = mapfilter(&["compare", s(&photo), s(&photo), "-q"]);
    assert_eq!(refused.status.code(), Some(1));
    let band2 = dir.path().join("band2.tif");
    assert!(
        Command::new("gdal_translate")
            .args(["-q", "-b", "2", s(&photo), s(&band2)])
            .status()
            .unwrap()
            .success()
    );
    let differs = json(&[s(&band2), s(&smoothed)]);
    assert!(differs["summary"]["differing_pixels"].as_u64().unwrap() > 0);
}

#[test]
fn src_and_dst_nodata_override_the_files() {
    let dir = tempfile::tempdir().unwrap();
    // The simplex map has no nodata; classes 0..7.
    let input = data("synthetic_simplex_512.tif");
    assert_eq!(nodata_of(&input), None);
    let plain = dir.path().join("plain.tif");
    let masked = dir.path().join("masked.tif");
    mapfilter_ok(&["smooth", s(&input), s(&plain), "-k", "box:5", "-q"]);
    mapfilter_ok(&[
        "smooth",
        s(&input),
        s(&masked),
        "-k",
        "box:5",
        "--src-nodata",
        "0",
        "-q",
    ]);
    // Code 0 is nodata now: it stays where it was and spreads nowhere.
    assert_eq!(nodata_of(&masked), Some(0.0));
    let (_, _, before) = read_raster(&input);
    let (_, _, after) = read_raster(&masked);
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(*b == 0, *a == 0);
    }
    assert_ne!(read_raster(&plain), read_raster(&masked));

    // --dst-nodata: the output's nodata code, the classes unchanged.
    let moved = dir.path().join("moved.tif");
    mapfilter_ok(&[
        "smooth",
        s(&input),
        s(&moved),
        "-k",
        "box:5",
        "--src-nodata",
        "0",
        "--dst-nodata",
        "200",
        "-q",
    ]);
    assert_eq!(nodata_of(&moved), Some(200.0));
    let (_, _, moved_px) = read_raster(&moved);
    for (a, m) in after.iter().zip(&moved_px) {
        assert_eq!(if *a == 0 { 200 } else { *a }, *m);
    }
    // A code that is a class is refused, and so is one the type cannot hold.
    for code in ["3", "300"] {
        let bad = mapfilter(&[
            "smooth",
            s(&input),
            s(&dir.path().join("bad.tif")),
            "-k",
            "box:3",
            "--dst-nodata",
            code,
            "-q",
        ]);
        assert_eq!(bad.status.code(), Some(1), "--dst-nodata {code}");
        assert_eq!(String::from_utf8_lossy(&bad.stderr).lines().count(), 1);
    }
    // `none` drops the file's nodata: every code is a class.
    let modis = data("modis_igbp_2019_2048.tif");
    let info = mapfilter_ok(&["info", s(&modis), "--json", "--src-nodata", "none"]).stdout;
    let info: serde_json::Value = serde_json::from_slice(&info).unwrap();
    assert_eq!(info["nodata"], serde_json::Value::Null);
    assert_eq!(info["nodata_pixels"], 0);
    let bad = mapfilter(&["info", s(&modis), "--src-nodata", "twelve"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn filter_warns_on_a_colour_table() {
    let dir = tempfile::tempdir().unwrap();
    let classes = data("synthetic_simplex_512.tif");
    let run = mapfilter_ok(&[
        "filter",
        s(&classes),
        s(&dir.path().join("f.tif")),
        "--op",
        "median:3",
        "-q",
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("colour table") && err.contains("classes"),
        "{err}"
    );
    // Imagery without one: no warning.
    let run = mapfilter_ok(&[
        "filter",
        s(&data("dem_jacksboro.tif")),
        s(&dir.path().join("g.tif")),
        "--op",
        "median:3",
        "-q",
    ]);
    assert!(
        run.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}
