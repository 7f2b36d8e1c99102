//! GDAL round trip: outputs keep size, geotransform, CRS, nodata, colour
//! table and category names; UInt16 classes stay UInt16; `gen` and `info` work.
#![cfg(feature = "gdal")]

use crate::common;

use common::{TestRaster, mapfilter, mapfilter_ok, read_raster, write_raster};
use gdal::raster::GdalDataType;
use gdal::{Dataset, Metadata};

#[test]
fn smooth_keeps_georeferencing_nodata_colours_and_names() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    let data: Vec<u16> = (0..40 * 30).map(|i| ((i / 7) % 5) as u16).collect();
    let mut data = data;
    data[100] = 255;
    write_raster(
        &input,
        &TestRaster {
            width: 40,
            height: 30,
            data: &data,
            data_type: GdalDataType::UInt8,
            nodata: Some(255.0),
            colors: true,
        },
    );
    {
        // Category names through the C API (the gdal crate has no wrapper).
        let ds = Dataset::open_ex(
            &input,
            gdal::DatasetOptions {
                open_flags: gdal::GdalOpenFlags::GDAL_OF_UPDATE,
                ..Default::default()
            },
        )
        .unwrap();
        let band = ds.rasterband(1).unwrap();
        let names: Vec<std::ffi::CString> = ["water", "forest", "urban"]
            .iter()
            .map(|s| std::ffi::CString::new(*s).unwrap())
            .collect();
        let mut ptrs: Vec<*mut std::ffi::c_char> =
            names.iter().map(|s| s.as_ptr() as *mut _).collect();
        ptrs.push(std::ptr::null_mut());
        unsafe { gdal_sys::GDALSetRasterCategoryNames(band.c_rasterband(), ptrs.as_mut_ptr()) };
    }
    let out = dir.path().join("out.tif");
    let run = mapfilter(&[
        "smooth",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "-k",
        "gaussian:1",
        "--tile",
        "16",
        "-q",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let a = Dataset::open(&input).unwrap();
    let b = Dataset::open(&out).unwrap();
    assert_eq!(a.raster_size(), b.raster_size());
    assert_eq!(a.geo_transform().unwrap(), b.geo_transform().unwrap());
    assert_eq!(
        a.spatial_ref().unwrap().to_wkt().unwrap(),
        b.spatial_ref().unwrap().to_wkt().unwrap()
    );
    let (ba, bb) = (a.rasterband(1).unwrap(), b.rasterband(1).unwrap());
    assert_eq!(bb.band_type(), GdalDataType::UInt8);
    assert_eq!(bb.no_data_value(), Some(255.0));
    let (ca, cb) = (ba.color_table().unwrap(), bb.color_table().unwrap());
    assert_eq!(ca.entry_count(), cb.entry_count());
    for i in 0..ca.entry_count() {
        assert_eq!(ca.entry_as_rgb(i), cb.entry_as_rgb(i));
    }
    let meta = mapfilter::gdal::class_raster::RasterMeta::read(&b).unwrap();
    assert_eq!(meta.category_names, vec!["water", "forest", "urban"]);
    // The nodata pixel stays nodata.
    assert_eq!(read_raster(&out).2[100], 255);
    // Output is tiled and compressed.
    let md = b.metadata_item("COMPRESSION", "IMAGE_STRUCTURE");
    assert_eq!(md.as_deref(), Some("DEFLATE"));
    assert_eq!(bb.block_size(), (16, 16));
}

#[test]
fn uint16_classes_stay_uint16() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in16.tif");
    let data: Vec<u16> = (0..20 * 20)
        .map(|i| [1000u16, 40000, 65000][(i / 3) % 3])
        .collect();
    write_raster(
        &input,
        &TestRaster {
            width: 20,
            height: 20,
            data: &data,
            data_type: GdalDataType::UInt16,
            nodata: None,
            colors: false,
        },
    );
    let out = dir.path().join("out16.tif");
    let run = mapfilter(&[
        "smooth",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "-k",
        "box:3",
        "-q",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let b = Dataset::open(&out).unwrap();
    assert_eq!(b.rasterband(1).unwrap().band_type(), GdalDataType::UInt16);
    let (_, _, px) = read_raster(&out);
    assert!(px.iter().all(|v| [1000, 40000, 65000].contains(v)));
}

#[test]
fn gen_writes_georeferenced_classes_and_info_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen.tif");
    for pattern in ["simplex", "random"] {
        let run = mapfilter(&[
            "gen",
            out.to_str().unwrap(),
            "--size",
            "300x200",
            "--classes",
            "6",
            "--pattern",
            pattern,
            "--seed",
            "3",
            "-q",
            "--overwrite",
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let ds = Dataset::open(&out).unwrap();
        assert_eq!(ds.raster_size(), (300, 200));
        assert_eq!(ds.spatial_ref().unwrap().auth_code().unwrap(), 32633);
        let (_, _, px) = read_raster(&out);
        assert!(px.iter().all(|&v| v < 6));
        let info = mapfilter(&["info", out.to_str().unwrap(), "--json"]);
        assert!(info.status.success());
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        assert_eq!(v["width"], 300);
        assert_eq!(v["epsg"], 32633);
        let classes = v["classes"].as_array().unwrap();
        assert_eq!(classes.len(), 6);
        let total: u64 = classes.iter().map(|c| c["pixels"].as_u64().unwrap()).sum();
        assert_eq!(total, 300 * 200);
    }
    // Same seed, same raster.
    let again = dir.path().join("again.tif");
    mapfilter(&[
        "gen",
        again.to_str().unwrap(),
        "--size",
        "300x200",
        "--classes",
        "6",
        "--pattern",
        "random",
        "--seed",
        "3",
        "-q",
    ]);
    assert_eq!(read_raster(&out), read_raster(&again));
    let bad = mapfilter(&["gen", again.to_str().unwrap(), "--size", "300by200"]);
    assert!(!bad.status.success());
}

/// `--compress-level` reaches GDAL: the same raster at DEFLATE level 1 is
/// larger than at level 12 and at the default level (5), and reads back
/// the same.
#[test]
fn compression_levels_reach_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    mapfilter_ok(&[
        "gen",
        "--size",
        "400x300",
        "--classes",
        "6",
        "--quiet",
        input.to_str().unwrap(),
    ]);
    let smooth = |name: &str, level: Option<&str>| {
        let out = dir.path().join(name);
        let mut args = vec!["smooth", "-q", "-k", "box:3", "--device", "host"];
        if let Some(level) = level {
            args.extend(["--compress-level", level]);
        }
        args.extend([input.to_str().unwrap(), out.to_str().unwrap()]);
        mapfilter_ok(&args);
        (std::fs::metadata(&out).unwrap().len(), read_raster(&out).2)
    };
    let (fast, fast_pixels) = smooth("l1.tif", Some("1"));
    let (default, default_pixels) = smooth("default.tif", None);
    let (small, small_pixels) = smooth("l12.tif", Some("12"));
    assert!(
        fast > default && default > small,
        "{fast} {default} {small}"
    );
    assert_eq!(fast_pixels, small_pixels);
    assert_eq!(default_pixels, small_pixels);
}
