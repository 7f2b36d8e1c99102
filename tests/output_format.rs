//! Output formats and GDAL options end to end: `--of COG` (GDAL's COG
//! layout, overviews by MODE for classes and AVERAGE for `filter`),
//! `--co KEY=VALUE` reaching the file or refused in one line, `filter --ot`,
//! and `--config` applied before any GDAL work.
#![cfg(feature = "gdal")]

use crate::common;

use common::{files_in, mapfilter, mapfilter_ok};
use gdal::Dataset;
use std::path::Path;
use std::process::Command;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data");

fn gdalinfo(path: &Path) -> String {
    let out = Command::new("gdalinfo")
        .arg(path)
        .output()
        .expect("gdalinfo");
    assert!(out.status.success(), "gdalinfo {}", path.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Band 1 (or its overview `level`) as bytes.
fn pixels(path: &Path, level: Option<usize>) -> (usize, usize, Vec<u8>) {
    let ds = Dataset::open(path).unwrap();
    let band = ds.rasterband(1).unwrap();
    let band = match level {
        Some(l) => band.overview(l).unwrap(),
        None => band,
    };
    let (w, h) = band.size();
    let buf = band.read_as::<u8>((0, 0), (w, h), (w, h), None).unwrap();
    (w, h, buf.data().to_vec())
}

/// GDAL's own COG validator, where Debian's python has GDAL's bindings
/// (required where `MAPFILTER_REQUIRE_PYTHON_GDAL` is set, as in CI).
fn assert_valid_cog(path: &Path) {
    const VALIDATOR: &str =
        "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_cloud_optimized_geotiff.py";
    if !Path::new(VALIDATOR).exists() {
        assert!(
            std::env::var_os("MAPFILTER_REQUIRE_PYTHON_GDAL").is_none(),
            "MAPFILTER_REQUIRE_PYTHON_GDAL is set but {VALIDATOR} is missing (python3-gdal)"
        );
        eprintln!("skipping GDAL's COG validator: {VALIDATOR} missing");
        return;
    }
    let out = Command::new("/usr/bin/python3")
        .arg(VALIDATOR)
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("is a valid cloud optimized GeoTIFF"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cog_of_classes_has_the_cog_layout_and_mode_overviews() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    let out = dir.path().join("out.tif");
    mapfilter_ok(&[
        "gen",
        "--size",
        "1024x1024",
        "--pattern",
        "random",
        "--classes",
        "8",
        "-q",
        s(&input),
    ]);
    // The COG's full resolution is the GeoTIFF the same run writes.
    let plain = dir.path().join("plain.tif");
    for (path, format) in [(&out, "COG"), (&plain, "GTiff")] {
        mapfilter_ok(&[
            "smooth",
            s(&input),
            s(path),
            "--kernel",
            "box:3",
            "--of",
            format,
            "-q",
        ]);
    }
    let info = gdalinfo(&out);
    assert!(info.contains("LAYOUT=COG"), "{info}");
    assert!(info.contains("Overviews: 512x512"), "{info}");
    assert!(info.contains("OVERVIEW_RESAMPLING=MODE"), "{info}");
    assert!(info.contains("Color Table"), "{info}");
    assert_valid_cog(&out);
    assert_eq!(files_in(dir.path()), ["in.tif", "out.tif", "plain.tif"]);

    let (w, _, full) = pixels(&out, None);
    assert_eq!(full, pixels(&plain, None).2);
    // Every overview pixel is one of the four codes under it (an average
    // of random codes mostly is none of them), and a code held by three
    // or four of them wins.
    let (ow, oh, overview) = pixels(&out, Some(0));
    let mut majorities = 0;
    for y in 0..oh {
        for x in 0..ow {
            let under: Vec<u8> = [(0, 0), (1, 0), (0, 1), (1, 1)]
                .iter()
                .map(|(dx, dy)| full[(2 * y + dy) * w + 2 * x + dx])
                .collect();
            let v = overview[y * ow + x];
            assert!(under.contains(&v), "({x},{y}): {v} not in {under:?}");
            if let Some(&m) = under
                .iter()
                .find(|&&c| under.iter().filter(|&&d| d == c).count() >= 3)
            {
                assert_eq!(v, m, "({x},{y}) under {under:?}");
                majorities += 1;
            }
        }
    }
    assert!(majorities > 100, "{majorities}");
}

#[test]
fn cog_of_filter_output_averages_its_overviews_and_ot_sets_the_type() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("photo.tif");
    let photo = format!("{DATA}/photo_grace_hopper.tif");
    mapfilter_ok(&[
        "filter",
        &photo,
        s(&out),
        "--op",
        "box:3",
        "--of",
        "cog",
        "--ot",
        "UInt16",
        "-q",
    ]);
    let info = gdalinfo(&out);
    assert!(info.contains("LAYOUT=COG"), "{info}");
    assert!(info.contains("Overviews: 256x300"), "{info}");
    assert!(info.contains("OVERVIEW_RESAMPLING=AVERAGE"), "{info}");
    assert!(info.contains("Type=UInt16"), "{info}");
    assert_valid_cog(&out);

    // A nodata value the type cannot hold is refused before any work.
    let dem = format!("{DATA}/dem_jacksboro.tif");
    let bad = dir.path().join("dem.tif");
    let run = mapfilter(&["filter", &dem, s(&bad), "--op", "box:3", "--ot", "Byte"]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--ot Byte") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!bad.exists());
}

#[test]
fn creation_options_reach_the_file_and_unknown_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    mapfilter_ok(&[
        "gen",
        "--size",
        "700x600",
        "--classes",
        "5",
        "-q",
        s(&input),
    ]);
    let plain = dir.path().join("plain.tif");
    let tuned = dir.path().join("tuned.tif");
    let smooth = |out: &Path, extra: &[&str]| {
        let mut args = vec!["smooth", s(&input), s(out), "--kernel", "box:5", "-q"];
        args.extend_from_slice(extra);
        mapfilter(&args)
    };
    assert!(smooth(&plain, &[]).status.success());
    let run = smooth(
        &tuned,
        &[
            "--co",
            "BLOCKXSIZE=512",
            "--co",
            "BLOCKYSIZE=128",
            "--co",
            "PREDICTOR=2",
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let info = gdalinfo(&tuned);
    assert!(info.contains("Block=512x128"), "{info}");
    assert!(info.contains("PREDICTOR=2"), "{info}");
    // Blocks of another shape than the writer's default: the same pixels.
    assert_eq!(pixels(&tuned, None), pixels(&plain, None));
    // A world file (TFW=YES) goes with the raster, under the output's name.
    let world = dir.path().join("world.tif");
    let run = smooth(&world, &["--co", "TFW=YES"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let tfw = std::fs::read_to_string(dir.path().join("world.tfw")).unwrap();
    assert_eq!(tfw.lines().count(), 6, "{tfw}");
    assert!(
        files_in(dir.path())
            .iter()
            .all(|n| !n.contains("mapfilter-tmp")),
        "{:?}",
        files_in(dir.path())
    );

    for (extra, says) in [
        (&["--co", "NO_SUCH_KEY=1"][..], "NO_SUCH_KEY"),
        (&["--of", "COG", "--co", "BLOCKXSIZE=512"][..], "BLOCKXSIZE"),
        (&["--co", "COMPRESS=SNAPPY"][..], "SNAPPY"),
        (&["--co", "TILED"][..], "KEY=VALUE"),
    ] {
        let out = dir.path().join("refused.tif");
        let run = smooth(&out, extra);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{extra:?}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!out.exists());
    }
}

#[test]
fn config_options_apply_before_gdal_starts() {
    let map = format!("{DATA}/synthetic_simplex_512.tif");
    mapfilter_ok(&["info", &map]);
    // GDAL_SKIP only acts when GDAL registers its drivers: set any later,
    // it would change nothing.
    for args in [
        &["--config", "GDAL_SKIP", "GTiff", "info", &map][..],
        &["info", &map, "--config", "GDAL_SKIP", "GTiff"][..],
    ] {
        let run = mapfilter(args);
        assert_eq!(run.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&run.stderr).contains("not a raster GDAL can read"));
    }
}
