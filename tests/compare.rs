//! `mapfilter compare` and `mapfilter smooth --report` end to end: figures
//! in the JSON report, the georeferenced mismatch raster, refusal of rasters
//! on different grids, and the smoothing report against the exact baseline.
#![cfg(feature = "gdal")]

use crate::common;

use common::{TestRaster, files_in, mapfilter, mapfilter_ok, read_raster, write_raster};
use gdal::Dataset;
use gdal::raster::GdalDataType;
use std::path::Path;

fn byte_raster(path: &Path, width: usize, height: usize, data: &[u16], nodata: Option<f64>) {
    write_raster(
        path,
        &TestRaster {
            width,
            height,
            data,
            data_type: GdalDataType::UInt8,
            nodata,
            colors: true,
        },
    );
}

/// The hand-computed pair of `metrics::tests::hand_computed_pair_with_nodata`
/// (reference nodata 0, candidate nodata 9), as GeoTIFFs with 30 m pixels.
#[test]
fn compare_writes_figures_reports_and_mismatch_raster() {
    let dir = tempfile::tempdir().unwrap();
    let (r, c) = (dir.path().join("ref.tif"), dir.path().join("cand.tif"));
    byte_raster(&r, 3, 4, &[1, 1, 2, 2, 0, 3, 0, 3, 3, 1, 2, 3], Some(0.0));
    byte_raster(&c, 3, 4, &[1, 2, 2, 2, 3, 9, 9, 3, 1, 1, 2, 3], Some(9.0));
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let run = mapfilter(&[
        "compare",
        &p("ref.tif"),
        &p("cand.tif"),
        "--json",
        &p("r.json"),
        "--html",
        &p("r.html"),
        "--markdown",
        &p("r.md"),
        "--mismatch",
        &p("mismatch.tif"),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("agreement 77.7778 % of 9 valid pixels"),
        "{stdout}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("r.json")).unwrap()).unwrap();
    let s = &json["summary"];
    assert_eq!(s["valid_pixels"], 9);
    assert_eq!(s["equal_pixels"], 7);
    assert_eq!(s["nodata"]["reference_only"], 1);
    assert_eq!(s["nodata"]["candidate_only"], 1);
    assert_eq!(s["nodata"]["both"], 1);
    assert_eq!(s["pixel_area"]["area"], 900.0);
    assert_eq!(s["pixel_area"]["unit"], "m²");
    assert_eq!(s["classes"][2]["code"], 3);
    assert_eq!(s["classes"][2]["area_change"], -900.0);
    assert_eq!(
        s["confusion"]["rows"],
        serde_json::json!([[2, 1, 0], [0, 3, 0], [1, 0, 2]])
    );
    let kappa = s["kappa"].as_f64().unwrap();
    let pe = 27.0 / 81.0;
    assert!((kappa - (7.0 / 9.0 - pe) / (1.0 - pe)).abs() < 1e-12);
    // Pontius & Millones beside kappa: reference totals 3, 3, 3 against
    // candidate totals 3, 4, 2 give quantity 1/9; class 1's one miss each
    // way gives allocation 1/9; together the 2/9 that disagree.
    let q = s["quantity_disagreement_percent"].as_f64().unwrap();
    let a = s["allocation_disagreement_percent"].as_f64().unwrap();
    assert!((q - 100.0 / 9.0).abs() < 1e-9, "{q}");
    assert!((a - 100.0 / 9.0).abs() < 1e-9, "{a}");

    let html = std::fs::read_to_string(p("r.html")).unwrap();
    assert_eq!(html.matches("data:image/png;base64,").count(), 3);
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(
        html.contains("allocation disagreement (Pontius &amp; Millones)</td><td>11.1111 %"),
        "{html}"
    );
    assert!(
        std::fs::read_to_string(p("r.md"))
            .unwrap()
            .contains("| **3** | 1 | 0 | 2 |")
    );

    let (w, h, m) = read_raster(&dir.path().join("mismatch.tif"));
    assert_eq!((w, h), (3, 4));
    assert_eq!(m, vec![0, 1, 0, 0, 2, 2, 255, 0, 1, 0, 0, 0]);
    let ds = Dataset::open(dir.path().join("mismatch.tif")).unwrap();
    assert_eq!(
        ds.geo_transform().unwrap(),
        [500_000.0, 30.0, 0.0, 6_200_000.0, 0.0, -30.0]
    );
    assert_eq!(ds.spatial_ref().unwrap().auth_code().unwrap(), 32633);
    let band = ds.rasterband(1).unwrap();
    assert_eq!(band.no_data_value(), Some(255.0));
    let ct = band.color_table().unwrap();
    assert_eq!(ct.entry_as_rgb(1).unwrap().r, 214);
    assert_eq!(
        files_in(dir.path()),
        [
            "cand.tif",
            "mismatch.tif",
            "r.html",
            "r.json",
            "r.md",
            "ref.tif"
        ]
    );
}

/// Different size, geotransform or CRS: one line with a hint, exit 1, nothing written.
#[test]
fn rasters_on_different_grids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    byte_raster(&dir.path().join("a.tif"), 4, 4, &[1; 16], None);
    byte_raster(&dir.path().join("small.tif"), 4, 3, &[1; 12], None);
    byte_raster(&dir.path().join("shifted.tif"), 4, 4, &[1; 16], None);
    byte_raster(&dir.path().join("crs.tif"), 4, 4, &[1; 16], None);
    {
        let mut ds = Dataset::open_ex(
            dir.path().join("shifted.tif"),
            gdal::DatasetOptions {
                open_flags: gdal::GdalOpenFlags::GDAL_OF_UPDATE,
                ..Default::default()
            },
        )
        .unwrap();
        ds.set_geo_transform(&[500_030.0, 30.0, 0.0, 6_200_000.0, 0.0, -30.0])
            .unwrap();
        let mut ds = Dataset::open_ex(
            dir.path().join("crs.tif"),
            gdal::DatasetOptions {
                open_flags: gdal::GdalOpenFlags::GDAL_OF_UPDATE,
                ..Default::default()
            },
        )
        .unwrap();
        ds.set_spatial_ref(&gdal::spatial_ref::SpatialRef::from_epsg(32632).unwrap())
            .unwrap();
    }
    let before = files_in(dir.path());
    for (other, expect) in [
        ("small.tif", "differ in size: 4x4 against 4x3"),
        ("shifted.tif", "differ in georeferencing"),
        ("crs.tif", "differ in coordinate system"),
    ] {
        let run = mapfilter(&[
            "compare",
            &p("a.tif"),
            &p(other),
            "--html",
            &p("r.html"),
            "--mismatch",
            &p("m.tif"),
        ]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(expect) && stderr.contains("hint:"),
            "{stderr}"
        );
    }
    assert_eq!(files_in(dir.path()), before);
}

/// `smooth --report` runs the exact baseline beside the method and compares:
/// the exact method agrees 100 %, the report holds the run times and 4 maps,
/// and the baseline's temp files are gone.
#[test]
fn smooth_report_compares_with_the_exact_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let made = mapfilter(&[
        "gen",
        &p("in.tif"),
        "--size",
        "64x48",
        "--classes",
        "5",
        "-q",
    ]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    for (report, check) in [("r.html", "<b>100.0000 %</b>"), ("r.json", "\"speedup\"")] {
        let run = mapfilter(&[
            "smooth",
            &p("in.tif"),
            &p("out.tif"),
            "-k",
            "box:5",
            "--report",
            &p(report),
            "--quiet",
            // The second report's run writes out.tif again.
            "--overwrite",
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let text = std::fs::read_to_string(p(report)).unwrap();
        assert!(text.contains(check), "{report} lacks {check}");
    }
    let html = std::fs::read_to_string(p("r.html")).unwrap();
    assert_eq!(html.matches("data:image/png;base64,").count(), 4);
    assert!(html.contains("speed-up"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("r.json")).unwrap()).unwrap();
    assert_eq!(json["summary"]["agreement_percent"], 100.0);
    assert_eq!(json["summary"]["differing_pixels"], 0);
    assert!(json["run"]["baseline_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(
        files_in(dir.path()),
        ["in.tif", "out.tif", "r.html", "r.json"]
    );
}

/// `smooth --mmu --report`: the report compares the smoothing before the
/// minimum mapping unit with the exact baseline (naive against itself: no
/// pixel differs), and says what the MMU changed, in its settings.
#[test]
fn a_report_with_a_minimum_mapping_unit_keeps_the_two_effects_apart() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    mapfilter_ok(&[
        "gen",
        &p("in.tif"),
        "--raster-size",
        "96x80",
        "--classes",
        "6",
        "--pattern",
        "random",
        "-q",
    ]);
    mapfilter_ok(&[
        "smooth",
        &p("in.tif"),
        &p("out.tif"),
        "-k",
        "box:3",
        "--method",
        "naive",
        "--mmu",
        "12",
        "--report",
        &p("r.json"),
        "-q",
    ]);
    let text = std::fs::read_to_string(p("r.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["summary"]["differing_pixels"], 0, "{text}");
    assert_eq!(json["summary"]["agreement_percent"], 100.0);
    assert!(
        text.contains("minimum mapping unit") && text.contains("12 (12 px, 4-connected)"),
        "{text}"
    );
    assert!(
        text.contains("changed by the minimum mapping unit"),
        "{text}"
    );
    // The output is the sieved one, and the report names it.
    assert!(text.contains("out.tif"));
    assert!(!text.contains("mmu-smoothed"), "{text}");
    assert_eq!(files_in(dir.path()), ["in.tif", "out.tif", "r.json"]);
}
