//! The fixtures in tests/fixtures (expected outputs from an independent
//! implementation of docs/semantics.md, see tests/fixtures/README.md) must be
//! reproduced byte for byte by every exact method, on every device and tile size.
#![cfg(feature = "gdal")]

use crate::common;

use common::{exact_methods, fixture, mapfilter, read_raster};
use mapfilter::classes::ClassWeights;
use mapfilter::engine::{self, SmoothJob};
use mapfilter::gdal::class_raster::ClassRaster;
use mapfilter::io::MemRaster;
use mapfilter::kernel::KernelSpec;
use mapfilter::progress::Progress;
use tiles::Border;

/// (fixture name, kernel spec) pairs of tests/fixtures (as `CASES` in its generate.py).
fn cases() -> Vec<(&'static str, String)> {
    vec![
        (
            "thesis3x3",
            format!("file:{}", fixture("kernel_thesis_3x3.txt").display()),
        ),
        ("box5", "box:5".to_string()),
        (
            "disc_r3",
            format!("file:{}", fixture("kernel_disc_r3.txt").display()),
        ),
    ]
}

const TILE_SIZES: [usize; 7] = [1, 2, 7, 13, 32, 64, 1000];

/// Tile sizes for a method: all of them for the host reference; the others
/// skip the tiny tiles (one launch or one certification per 1–4 pixels makes
/// the suite slow without covering anything new: halo and border arithmetic
/// is shared and the host run covers it) but keep tiles that do not divide
/// the raster and one larger than it.
fn tile_sizes(method_name: &str) -> &'static [usize] {
    if method_name == "naive/host" {
        &TILE_SIZES
    } else {
        &[7, 13, 64, 1000]
    }
}

#[test]
fn every_exact_method_and_tile_size_reproduces_the_fixtures() {
    for (name, spec) in cases() {
        let kernel = spec.parse::<KernelSpec>().unwrap().build().unwrap();
        for (border, border_name) in [(Border::Same, "same"), (Border::Valid, "valid")] {
            let (ew, eh, expected) =
                read_raster(&fixture(&format!("expected_{name}_{border_name}.tif")));
            for (method_name, method) in exact_methods(&kernel) {
                for &tile in tile_sizes(&method_name) {
                    let mut input = ClassRaster::open(&fixture("classes_72x64.tif")).unwrap();
                    let classes = input.scan_classes(&Progress::hidden()).unwrap();
                    let job = SmoothJob {
                        class_weights: ClassWeights::default().quantise(&classes),
                        output_nodata: classes.output_nodata(255),
                        kernel: kernel.clone(),
                        classes,
                        border,
                        fill_nodata: false,
                        tile,
                        policies: Default::default(),
                    };
                    let mut out = MemRaster::filled(ew, eh, 0);
                    engine::smooth(
                        &mut input,
                        &mut out,
                        &job,
                        method.as_ref(),
                        &Progress::hidden(),
                    )
                    .unwrap();
                    assert!(
                        out.data == expected,
                        "{method_name}, {name} {border_name}, tile {tile}: {} pixels differ",
                        out.data
                            .iter()
                            .zip(&expected)
                            .filter(|(a, b)| a != b)
                            .count()
                    );
                }
            }
        }
    }
}

#[test]
fn cli_output_matches_fixtures_with_georeferencing() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("classes_72x64.tif");
    let in_ds = gdal::Dataset::open(&input).unwrap();
    let in_gt = in_ds.geo_transform().unwrap();
    for (name, spec) in cases() {
        for border in ["same", "valid"] {
            let out = dir.path().join(format!("{name}_{border}.tif"));
            let run = mapfilter(&[
                "smooth",
                input.to_str().unwrap(),
                out.to_str().unwrap(),
                "--kernel",
                &spec,
                "--border",
                border,
                "--tile",
                "17",
                "--quiet",
            ]);
            assert!(
                run.status.success(),
                "{}",
                String::from_utf8_lossy(&run.stderr)
            );
            let expected_path = fixture(&format!("expected_{name}_{border}.tif"));
            assert_eq!(
                read_raster(&out),
                read_raster(&expected_path),
                "{name} {border}"
            );
            let ds = gdal::Dataset::open(&out).unwrap();
            let exp = gdal::Dataset::open(&expected_path).unwrap();
            assert_eq!(ds.geo_transform().unwrap(), exp.geo_transform().unwrap());
            assert_eq!(
                ds.spatial_ref().unwrap().auth_code().unwrap(),
                in_ds.spatial_ref().unwrap().auth_code().unwrap()
            );
            let band = ds.rasterband(1).unwrap();
            assert_eq!(band.no_data_value(), Some(255.0));
            if border == "valid" {
                let r = spec_radius(&spec) as f64;
                assert_eq!(ds.geo_transform().unwrap()[0], in_gt[0] + r * in_gt[1]);
                assert_eq!(ds.geo_transform().unwrap()[3], in_gt[3] + r * in_gt[5]);
            }
        }
    }
}

fn spec_radius(spec: &str) -> usize {
    spec.parse::<KernelSpec>()
        .unwrap()
        .build()
        .unwrap()
        .radius()
}
