//! `mapfilter filter` and `mapfilter histogram` end to end on the committed
//! sample rasters: georeferencing and nodata kept, band counts, tiled run
//! equal to a one-tile run, one-line errors.
#![cfg(feature = "gdal")]

use std::path::Path;
use std::process::Command;

fn mapfilter(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(args)
        .output()
        .expect("run mapfilter")
}

fn gdalinfo(path: &Path) -> String {
    let out = Command::new("gdalinfo")
        .arg(path)
        .output()
        .expect("gdalinfo");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read_all(path: &Path) -> Vec<u8> {
    // Pixel values only, independent of the file's layout: through a raw ENVI copy.
    let raw = path.with_extension("bin");
    let ok = Command::new("gdal_translate")
        .args(["-q", "-of", "ENVI"])
        .arg(path)
        .arg(&raw)
        .status()
        .expect("gdal_translate");
    assert!(ok.success());
    std::fs::read(raw).unwrap()
}

#[test]
fn photo_chain_keeps_georeference_and_tiles_agree() {
    let dir = tempfile::tempdir().unwrap();
    let tiled = dir.path().join("tiled.tif");
    let whole = dir.path().join("whole.tif");
    let ops = ["--op", "median:3", "--op", "gaussian:1", "--op", "scharr:3"];
    for (out, tile) in [(&tiled, "100"), (&whole, "4096")] {
        let mut args = vec![
            "filter",
            "data/photo_grace_hopper.tif",
            out.to_str().unwrap(),
        ];
        args.extend(ops);
        args.extend(["--tile", tile, "--quiet", "--compress", "none"]);
        let o = mapfilter(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let info = gdalinfo(&tiled);
    assert!(
        info.contains("Origin = (1000000.000000000000000,6000600.000000000000000)"),
        "{info}"
    );
    assert!(
        info.contains("Band 6 Block"),
        "two derivative bands per colour band: {info}"
    );
    assert!(info.contains("Type=Float32"));
    assert_eq!(read_all(&tiled), read_all(&whole));
}

#[test]
fn dem_keeps_nodata_and_histogram_counts_every_pixel() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dem.tif");
    let o = mapfilter(&[
        "filter",
        "data/dem_jacksboro.tif",
        out.to_str().unwrap(),
        "--op",
        "median:5",
        "--border",
        "nodata",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let info = gdalinfo(&out);
    assert!(info.contains("NoData Value=-32768"), "{info}");
    assert!(info.contains("Type=Int16"));

    let json = dir.path().join("h.json");
    let o = mapfilter(&[
        "histogram",
        "data/dem_jacksboro.tif",
        "--bins",
        "10",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let h: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let counts: u64 = h[0]["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(counts, 403 * 344);
    // Min and max of the DEM (gdalinfo -stats: 236, 1076).
    assert_eq!(h[0]["lo"], 236.0);
    assert_eq!(h[0]["hi"], 1076.0);

    let o = mapfilter(&["histogram", "data/photo_grace_hopper.tif"]);
    let h: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(h.as_array().unwrap().len(), 3);
    assert_eq!(h[2]["counts"].as_array().unwrap().len(), 256);
}

#[test]
fn bad_input_gets_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.tif");
    for (args, needle) in [
        (vec!["--op", "median:4"], "median side must be odd"),
        (
            vec!["--op", "box:3", "--border", "mirror"],
            "unknown border mode",
        ),
        (vec!["--op", "bilateral:2:20:luma"], "needs 3 bands"),
        (vec!["--op", "box:3", "--device", "nosuch"], "device"),
    ] {
        let mut a = vec!["filter", "data/dem_jacksboro.tif", out.to_str().unwrap()];
        a.extend(args);
        let o = mapfilter(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out.exists());
    }
}

#[test]
fn pyramid_steps_resize_and_georeference_and_levels_go_to_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("half.tif");
    let o = mapfilter(&[
        "filter",
        "data/photo_grace_hopper.tif",
        out.to_str().unwrap(),
        "--op",
        "pyrdown",
        "--op",
        "gray",
        "--tile",
        "64",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let info = gdalinfo(&out);
    assert!(info.contains("Size is 256, 300"), "{info}");
    // Output pixel 0 is centred on input pixel 0: its corner half an input pixel out.
    assert!(
        info.contains("Origin = (999999.500000000000000,6000600.500000000000000)"),
        "{info}"
    );
    assert!(
        info.contains("Pixel Size = (2.000000000000000,-2.000000000000000)"),
        "{info}"
    );
    assert!(!info.contains("Band 2"), "gray gives one band: {info}");

    let base = dir.path().join("pyr.tif");
    let o = mapfilter(&[
        "filter",
        "data/photo_grace_hopper.tif",
        base.to_str().unwrap(),
        "--op",
        "gaussian-pyramid:3",
        "--op",
        "scharr:3",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (k, size) in ["512, 600", "256, 300", "128, 150"].iter().enumerate() {
        let info = gdalinfo(&dir.path().join(format!("pyr_L{k}.tif")));
        assert!(
            info.contains(&format!("Size is {size}")),
            "level {k}: {info}"
        );
        assert!(
            info.contains("Band 6 Block"),
            "Scharr on every level: {info}"
        );
    }
    assert!(!base.exists());
    // Level 1 equals pyrdown then Scharr run as one chain.
    let one = dir.path().join("one.tif");
    let o = mapfilter(&[
        "filter",
        "data/photo_grace_hopper.tif",
        one.to_str().unwrap(),
        "--op",
        "pyrdown",
        "--op",
        "scharr:3",
        "--quiet",
    ]);
    assert!(o.status.success());
    assert_eq!(read_all(&one), read_all(&dir.path().join("pyr_L1.tif")));
}

#[test]
fn levels_as_overviews_equal_the_level_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("lap.tif");
    let one = dir.path().join("one.tif");
    let ops = ["--op", "laplacian-pyramid:3", "--quiet", "--tile", "96"];
    let o = mapfilter(
        &[
            &[
                "filter",
                "data/photo_grace_hopper.tif",
                files.to_str().unwrap(),
            ],
            &ops[..],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = mapfilter(
        &[
            &[
                "filter",
                "data/photo_grace_hopper.tif",
                one.to_str().unwrap(),
            ],
            &ops[..],
            &["--levels", "overviews"],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let info = gdalinfo(&one);
    assert!(info.contains("Overviews: 256x300, 128x150"), "{info}");
    assert!(info.contains("Type=Int16"), "{info}");
    for k in 0..3 {
        let level = dir.path().join(format!("level{k}.tif"));
        let mut cmd = Command::new("gdal_translate");
        cmd.arg("-q");
        if k > 0 {
            cmd.args(["-ovr", &(k - 1).to_string()]);
        }
        assert!(cmd.arg(&one).arg(&level).status().unwrap().success());
        let file = dir.path().join(format!("lap_L{k}.tif"));
        assert_eq!(read_all(&level), read_all(&file), "level {k}");
    }
    // A scale space has several levels of one size: refused in one line.
    let o = mapfilter(&[
        "filter",
        "data/photo_grace_hopper.tif",
        dir.path().join("ss.tif").to_str().unwrap(),
        "--op",
        "scale-space:2:2",
        "--levels",
        "overviews",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--levels files"),
        "{err}"
    );
}

#[test]
fn blend_mixes_rasters_of_one_grid_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mix.tif");
    let o = mapfilter(&[
        "blend",
        "data/photo_grace_hopper.tif",
        "data/photo_grace_hopper.tif",
        out.to_str().unwrap(),
        "--weights",
        "0.25,0.75",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // a·¼ + a·¾ = a (the photo read through a copy: read_all writes beside its file).
    let photo = dir.path().join("photo.tif");
    std::fs::copy("data/photo_grace_hopper.tif", &photo).unwrap();
    assert_eq!(read_all(&out), read_all(&photo));
    let o = mapfilter(&[
        "blend",
        "data/photo_grace_hopper.tif",
        "data/dem_jacksboro.tif",
        dir.path().join("bad.tif").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("is not on the grid") && err.contains("gdalwarp"),
        "{err}"
    );
}

/// `filter --device DEV` with a scale space and Scharr (and a Gaussian
/// pyramid into overviews) runs as one device job; its files hold the same
/// pixels and georeferencing as `--device host`'s level-by-level path, on
/// the bundled photo and an odd-sized window of it.
#[test]
fn device_pyramid_job_writes_the_host_files() {
    let Some(dev) = mapfilter::device::test_device() else {
        return;
    };
    let dev = dev.info().index.to_string();
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("odd.tif");
    let ok = Command::new("gdal_translate")
        .args([
            "-q",
            "-srcwin",
            "3",
            "5",
            "203",
            "157",
            "data/photo_grace_hopper.tif",
        ])
        .arg(&odd)
        .status()
        .unwrap();
    assert!(ok.success());
    let cases: [(&Path, &[&str], &[&str]); 3] = [
        (
            &odd,
            &["scale-space:2:2", "scharr:5"],
            &["O0_S0", "O0_S1", "O1_S0", "O1_S1"],
        ),
        (
            Path::new("data/photo_grace_hopper.tif"),
            &["scale-space:3:1:1.2", "scharr:3"],
            &["O0_S0", "O1_S0", "O2_S0"],
        ),
        (&odd, &["gaussian-pyramid:3", "scharr:3"], &[""]),
    ];
    for (n, (input, ops, suffixes)) in cases.iter().enumerate() {
        let overviews = suffixes == &[""];
        let mut files = Vec::new();
        for device in ["host", dev.as_str()] {
            let out = dir.path().join(format!("c{n}_{device}.tif"));
            let mut args = vec!["filter", input.to_str().unwrap(), out.to_str().unwrap()];
            for op in ops.iter() {
                args.extend(["--op", op]);
            }
            args.extend(["--device", device, "--quiet"]);
            if overviews {
                args.extend(["--levels", "overviews"]);
            }
            let o = mapfilter(&args);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            files.push(out);
        }
        for s in suffixes.iter() {
            let level = |f: &Path| match s.is_empty() {
                true => f.to_path_buf(),
                false => f.with_file_name(format!(
                    "{}_{s}.tif",
                    f.file_stem().unwrap().to_string_lossy()
                )),
            };
            let (host, device) = (level(&files[0]), level(&files[1]));
            assert_eq!(read_all(&host), read_all(&device), "{ops:?} level {s}");
            let geo = |f: &Path| {
                let info = gdalinfo(f);
                let keep = |l: &&str| {
                    l.starts_with("Origin")
                        || l.starts_with("Pixel Size")
                        || l.contains("Overviews")
                };
                info.lines().filter(keep).collect::<Vec<_>>().join("\n")
            };
            assert_eq!(geo(&host), geo(&device), "{ops:?} level {s}");
        }
        if overviews {
            for k in 0..2 {
                let get = |f: &Path| {
                    let raw = dir.path().join(format!(
                        "ovr{k}_{}.tif",
                        f.file_stem().unwrap().to_string_lossy()
                    ));
                    let ok = Command::new("gdal_translate")
                        .args(["-q", "-ovr", &k.to_string()])
                        .arg(f)
                        .arg(&raw)
                        .status()
                        .unwrap();
                    assert!(ok.success());
                    read_all(&raw)
                };
                assert_eq!(get(&files[0]), get(&files[1]), "overview {k}");
            }
        }
    }
}
