//! Kernel lengths in metres (`gaussian:75m`, `box:90m`, `disc:1km`) give
//! the same output as their pixel equivalents, on a projected and on a
//! geographic raster; `--explain` says the conversion; option names mean one
//! thing across commands, the old spellings still work.
#![cfg(feature = "gdal")]

use crate::common;

use common::{files_in, mapfilter, mapfilter_ok, read_raster};
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

/// `synthetic_simplex_512.tif` with 500 m pixels (as a MODIS land-cover
/// product reprojected to EPSG:3035): lengths under a pixel there.
fn coarse(dir: &Path) -> PathBuf {
    let path = dir.join("in500.tif");
    let made = std::process::Command::new("gdal_translate")
        .args(["-q", "-a_ullr", "500000", "5000000", "756000", "4744000"])
        .args([s(&data("synthetic_simplex_512.tif")), s(&path)])
        .status()
        .unwrap();
    assert!(made.success());
    path
}

#[test]
fn lengths_and_areas_under_a_pixel_are_refused_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let input = coarse(dir.path());
    let out = dir.path().join("out.tif");
    let refused = |args: &[&str], says: &[&str]| {
        let run = mapfilter(args);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        for s in says {
            assert!(err.contains(s), "{args:?}: {err}");
        }
        assert!(err.contains("--allow-subpixel"), "{err}");
        assert_eq!(files_in(dir.path()), ["in500.tif"], "{args:?}");
    };
    let (i, o) = (s(&input), s(&out));
    // A Gaussian of 100 m on 500 m pixels is σ = 0.2 px: a 1x1 kernel.
    refused(
        &["smooth", i, o, "-k", "gaussian:100m"],
        &[
            "σ = 100 m / 500.0000 m = 0.2000 px",
            "1x1",
            "σ ≥ 1/3 px (166.7 m)",
        ],
    );
    refused(
        &["smooth", i, o, "-k", "gaussian:0.2"],
        &["kernel gaussian:0.2: a 1x1"],
    );
    refused(&["smooth", i, o, "-k", "box:1"], &["kernel box:1: a 1x1"]);
    refused(
        &["smooth", i, o, "-k", "gaussian:3", "--kernel-size", "1"],
        &["1x1"],
    );
    // 1 ha on 25 ha pixels removes nothing.
    refused(
        &["sieve", i, o, "--threshold", "1ha"],
        &[
            "0.0400 pixels of 250000.0 m² (25.0000 ha)",
            "removes nothing",
        ],
    );
    refused(
        &["smooth", i, o, "-k", "box:3", "--mmu", "1ha"],
        &["--mmu", "removes nothing"],
    );
    refused(
        &[
            "batch",
            "plan",
            i,
            "--out",
            s(&dir.path().join("b")),
            "-k",
            "gaussian:100m",
        ],
        &["0.2000 px", "1x1"],
    );
    refused(
        &[
            "batch",
            "plan",
            i,
            "--out",
            s(&dir.path().join("b")),
            "-k",
            "box:3",
            "--mmu",
            "1ha",
            "--device",
            "host",
        ],
        &["--mmu", "removes nothing"],
    );
    // With --allow-subpixel: rounded up, with a warning, to what acts.
    let run = mapfilter_ok(&[
        "smooth",
        i,
        o,
        "-k",
        "gaussian:100m",
        "--allow-subpixel",
        "-q",
    ]);
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(
        said.contains("warn") && said.contains("rounded up"),
        "{said}"
    );
    let same = dir.path().join("same.tif");
    mapfilter_ok(&["smooth", i, s(&same), "-k", "gaussian:1", "-q"]);
    // Compared without printing the rasters (a failure would print 262144 codes).
    assert!(read_raster(&out) == read_raster(&same));
    assert!(read_raster(&out) != read_raster(&input), "it smooths");
    let sieved = dir.path().join("sieved.tif");
    let run = mapfilter_ok(&[
        "sieve",
        i,
        s(&sieved),
        "-s",
        "1ha",
        "--allow-subpixel",
        "-q",
    ]);
    assert!(String::from_utf8_lossy(&run.stderr).contains("rounded up to 2 pixels"));
    let two = dir.path().join("two.tif");
    mapfilter_ok(&["sieve", i, s(&two), "-s", "2", "-q"]);
    assert!(read_raster(&sieved) == read_raster(&two));
    assert!(read_raster(&sieved) != read_raster(&input), "it sieves");
}

#[test]
fn batch_plan_takes_metres_and_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let input = coarse(dir.path());
    let batch = dir.path().join("batch");
    // 1.5 km on 500 m pixels: σ = 3 px, converted once for the whole mosaic.
    mapfilter_ok(&[
        "batch",
        "plan",
        s(&input),
        "--out",
        s(&batch),
        "-k",
        "gaussian:1.5km",
        "--grid",
        "2",
    ]);
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(batch.join("plan.json")).unwrap()).unwrap();
    let options = &plan["options"];
    assert_eq!(options["kernel"], "gaussian:3");
    assert_eq!(options["kernel_given"], "gaussian:1.5km");
    assert!(
        options["kernel_conversion"]
            .as_str()
            .unwrap()
            .contains("σ = 1500 m / 500.0000 m = 3.0000 px")
    );
    mapfilter_ok(&["batch", "run", s(&batch), "-q"]);
    mapfilter_ok(&["batch", "report", s(&batch)]);
    let whole = dir.path().join("whole.tif");
    mapfilter_ok(&["smooth", s(&input), s(&whole), "-k", "gaussian:1.5km", "-q"]);
    assert!(read_raster(&batch.join("mosaic.vrt")) == read_raster(&whole));
    // Mosaics of different pixel sizes would each need another kernel.
    let fine = dir.path().join("fine.tif");
    let made = std::process::Command::new("gdal_translate")
        .args(["-q", "-a_ullr", "0", "1000", "512", "488"])
        .args([s(&data("synthetic_simplex_512.tif")), s(&fine)])
        .status()
        .unwrap();
    assert!(made.success());
    let mixed = mapfilter(&[
        "batch",
        "plan",
        s(&input),
        s(&fine),
        "--out",
        s(&dir.path().join("mixed")),
        "-k",
        "gaussian:1.5km",
    ]);
    let err = String::from_utf8_lossy(&mixed.stderr);
    assert_eq!(mixed.status.code(), Some(1), "{err}");
    assert!(
        err.contains("pixels differ") && err.contains("500.0000 m"),
        "{err}"
    );
    assert!(!dir.path().join("mixed").exists());
    // A minimum mapping unit in hectares becomes pixels with the mosaic's
    // pixel area (100 ha on 25 ha pixels: 4 px), stored typed in plan.json,
    // and the batch equals `smooth --mmu` of the whole raster.
    let mmu_batch = dir.path().join("mmu");
    let mmu_args = ["-k", "box:3", "--mmu", "100ha", "--mmu-connectivity", "8"];
    let dry = mapfilter_ok(
        &[
            &[
                "batch",
                "plan",
                s(&input),
                "--out",
                s(&mmu_batch),
                "--dry-run",
            ][..],
            &mmu_args,
        ]
        .concat(),
    );
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(text.contains("100ha → 4 px (8-connected)"), "{text}");
    assert!(!mmu_batch.exists(), "a dry run writes nothing");
    mapfilter_ok(
        &[
            &[
                "batch",
                "plan",
                s(&input),
                "--out",
                s(&mmu_batch),
                "--grid",
                "2",
            ][..],
            &mmu_args,
        ]
        .concat(),
    );
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(mmu_batch.join("plan.json")).unwrap())
            .unwrap();
    assert_eq!(
        plan["options"]["mmu"],
        serde_json::json!({"given": "100ha", "connectivity": 8})
    );
    assert_eq!(plan["mosaics"][0]["mmu_pixels"], 4);
    mapfilter_ok(&["batch", "run", s(&mmu_batch), "-q"]);
    mapfilter_ok(&["batch", "report", s(&mmu_batch)]);
    let whole_mmu = dir.path().join("whole_mmu.tif");
    mapfilter_ok(&[&["smooth", s(&input), s(&whole_mmu), "-q"][..], &mmu_args].concat());
    assert!(read_raster(&mmu_batch.join("mosaic.vrt")) == read_raster(&whole_mmu));
    // An area of at most a pixel is refused before anything is written, as
    // smooth refuses it; --allow-subpixel rounds it up to 2 px.
    let tiny = dir.path().join("tiny");
    let sub = mapfilter(&[
        "batch",
        "plan",
        s(&input),
        "--out",
        s(&tiny),
        "-k",
        "box:3",
        "--mmu",
        "10ha",
    ]);
    let err = String::from_utf8_lossy(&sub.stderr);
    assert_eq!(sub.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--mmu")
            && err.contains("at most one pixel")
            && err.contains("--allow-subpixel"),
        "{err}"
    );
    assert!(!tiny.exists());
    mapfilter_ok(&[
        "batch",
        "plan",
        s(&input),
        "--out",
        s(&tiny),
        "-k",
        "box:3",
        "--mmu",
        "10ha",
        "--allow-subpixel",
    ]);
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tiny.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["mosaics"][0]["mmu_pixels"], 2);
}
