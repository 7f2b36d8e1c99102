//! Kernel lengths in metres (`gaussian:75m`, `box:90m`, `disc:1km`) give
//! the same output as their pixel equivalents, on a projected and on a
//! geographic raster; `--explain` says the conversion; option names mean one
//! thing across commands, the old spellings still work.
#![cfg(feature = "gdal")]

use crate::common;

use common::{mapfilter, mapfilter_ok, read_raster};
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

/// Smooths `input` with each kernel and asserts the outputs are the same pixels.
fn same_output(input: &Path, dir: &Path, kernels: [&[&str]; 2]) -> String {
    let mut outs = Vec::new();
    let mut explained = String::new();
    for (i, k) in kernels.iter().enumerate() {
        let out = dir.join(format!("{}-{i}.tif", k.join("_").replace([':', '.'], "_")));
        let mut args = vec!["smooth", s(input), s(&out), "-q", "--explain"];
        args.extend_from_slice(k);
        explained += &String::from_utf8_lossy(&mapfilter_ok(&args).stderr);
        outs.push(read_raster(&out));
    }
    assert_eq!(outs[0], outs[1], "{kernels:?}");
    explained
}

#[test]
fn metres_equal_pixels_on_a_projected_raster() {
    // UTM 33N, 30 m pixels.
    let input = data("synthetic_simplex_512.tif");
    let dir = tempfile::tempdir().unwrap();
    let said = same_output(
        &input,
        dir.path(),
        [&["-k", "gaussian:75m"], &["-k", "gaussian:2.5"]],
    );
    assert!(said.contains("σ = 75 m / 30.0000 m = 2.5000 px"), "{said}");
    same_output(&input, dir.path(), [&["-k", "box:90m"], &["-k", "box:3"]]);
    same_output(
        &input,
        dir.path(),
        [&["-k", "disc:0.15km"], &["-k", "disc:5"]],
    );
    // --kernel-size cuts a Gaussian given in metres as one given in pixels.
    same_output(
        &input,
        dir.path(),
        [
            &["-k", "gaussian:150m", "--kernel-size", "9"],
            &["-k", "gaussian:5", "--size", "9"],
        ],
    );
}

#[test]
fn metres_follow_the_parallel_on_a_geographic_raster() {
    // 0.05° pixels, centre latitude 18.8°: 5270.9 m along the parallel.
    let input = data("modis_igbp_2019_2048.tif");
    let dir = tempfile::tempdir().unwrap();
    let said = same_output(
        &input,
        dir.path(),
        [&["-k", "disc:12km"], &["-k", "disc:2"]],
    );
    assert!(
        said.contains("5270.9 m along the parallel at the centre latitude 18.8000°"),
        "{said}"
    );
    same_output(
        &input,
        dir.path(),
        [&["-k", "gaussian:10541.872m"], &["-k", "gaussian:2"]],
    );
    // Less than a pixel is refused in one line; a raster without
    // georeferencing cannot take metres.
    let tiny = mapfilter(&[
        "smooth",
        s(&input),
        s(&dir.path().join("t.tif")),
        "-k",
        "box:3km",
    ]);
    assert_eq!(tiny.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&tiny.stderr).lines().count(), 1);
    let bare = dir.path().join("bare.tif");
    let made = std::process::Command::new("gdal_translate")
        .args([
            "-q",
            "-co",
            "PROFILE=BASELINE",
            "--config",
            "GDAL_PAM_ENABLED",
            "NO",
        ])
        .args([s(&data("synthetic_simplex_512.tif")), s(&bare)])
        .status()
        .unwrap();
    assert!(made.success());
    let out = dir.path().join("no.tif");
    let refused = mapfilter(&["smooth", s(&bare), s(&out), "-k", "gaussian:75m"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("needs the pixel size") && err.contains("in pixels"),
        "{err}"
    );
    // In pixels it runs.
    mapfilter_ok(&["smooth", s(&bare), s(&out), "-k", "gaussian:2.5", "-q"]);
}

#[test]
fn option_names_mean_one_thing() {
    let help = |cmd: &str| {
        let mut args: Vec<&str> = cmd.split(' ').collect();
        args.push("--help");
        String::from_utf8(mapfilter_ok(&args).stdout).unwrap()
    };
    assert!(help("smooth").contains("--kernel-size <PIXELS>"));
    assert!(help("batch plan").contains("--kernel-size <PIXELS>"));
    for cmd in ["gen", "bench", "bench-filter"] {
        assert!(help(cmd).contains("--raster-size"), "{cmd}");
    }
    for cmd in ["smooth", "batch plan", "gen", "bench", "bench-filter"] {
        assert!(!help(cmd).contains("--size"), "{cmd} still shows --size");
    }
    assert!(help("smooth").contains("in pixels unless a unit is given"));
    // The old spelling is a hidden alias.
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.tif");
    let b = dir.path().join("b.tif");
    mapfilter_ok(&["gen", s(&a), "--size", "40x30", "-q"]);
    mapfilter_ok(&["gen", s(&b), "--raster-size", "40x30", "-q"]);
    assert_eq!(read_raster(&a), read_raster(&b));
    assert_eq!(read_raster(&a).0, 40);
}
