//! `smooth` takes shortcuts on its fixed costs (no class scan for a Byte
//! band with nodata, the output made on its own thread): the results and the
//! metadata must be those of the full path, byte for byte.
#![cfg(feature = "gdal")]

use crate::common;

use common::{TestRaster, files_in, read_raster, write_raster};
use gdal::Dataset;
use gdal::raster::GdalDataType;
use std::path::Path;

/// A 70×50 Byte raster of blobs of codes 2, 5, 9 and 200, holes of nodata
/// `nodata`, with a colour table.
fn byte_input(path: &Path, nodata: u16) {
    byte_input_sized(path, nodata, (70, 50));
}

/// [`byte_input`]'s pattern at `width` × `height`.
fn byte_input_sized(path: &Path, nodata: u16, (width, height): (usize, usize)) {
    let data: Vec<u16> = (0..width * height)
        .map(|i| {
            let (x, y) = (i % width, i / width);
            if (x * 7 + y * 3) % 23 == 0 {
                nodata
            } else {
                [2, 5, 9, 200][(x / 9 + y / 6) % 4]
            }
        })
        .collect();
    write_raster(
        path,
        &TestRaster {
            width,
            height,
            data: &data,
            data_type: GdalDataType::UInt8,
            nodata: Some(nodata as f64),
            colors: true,
        },
    );
}

/// Runs `smooth` with `extra` options; stderr on success.
fn smooth(input: &Path, out: &Path, extra: &[&str]) -> String {
    smooth_with(input, out, extra, &[])
}

/// [`smooth`] with GDAL's block cache of `cache_mb` megabytes: at 0 no
/// raster fits, so Byte rasters with nodata are not scanned.
fn smooth_cached(input: &Path, out: &Path, extra: &[&str], cache_mb: u32) -> String {
    smooth_with(
        input,
        out,
        extra,
        &[("GDAL_CACHEMAX", &cache_mb.to_string())],
    )
}

/// [`smooth`] with the environment variables `env` set.
fn smooth_with(input: &Path, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut args = vec![
        "smooth",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "-k",
        "gaussian:1.5",
        "--tile",
        "32",
    ];
    args.extend_from_slice(extra);
    args.push("--overwrite");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mapfilter"));
    cmd.args(&args);
    cmd.envs(env.iter().copied());
    let run = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "{args:?}: {stderr}");
    stderr
}

/// Everything an output carries, as text: size, geotransform, CRS, nodata,
/// colour table; plus its pixels.
fn contents(path: &Path) -> (String, Vec<u16>) {
    let ds = Dataset::open(path).unwrap();
    let band = ds.rasterband(1).unwrap();
    let colors = band.color_table().map(|ct| {
        (0..ct.entry_count())
            .map(|i| ct.entry_as_rgb(i))
            .collect::<Vec<_>>()
    });
    let meta = format!(
        "{:?} {:?} {} {:?} {:?} {:?}",
        ds.raster_size(),
        ds.geo_transform().unwrap(),
        ds.spatial_ref().unwrap().to_wkt().unwrap(),
        band.band_type(),
        band.no_data_value(),
        colors
    );
    (meta, read_raster(path).2)
}

/// "N classes" of the summary line.
fn classes_said(stderr: &str) -> &str {
    let summary = stderr
        .lines()
        .find(|l| l.starts_with("wrote "))
        .expect("a summary line");
    let end = summary.find(" classes").expect("summary names the classes");
    summary[..end].rsplit(' ').next().unwrap()
}

#[test]
fn skipped_scan_gives_the_scanned_result_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    for nodata in [255, 0, 9] {
        let input = dir.path().join(format!("in{nodata}.tif"));
        byte_input(&input, nodata);
        let out = |name: &str| dir.path().join(format!("{name}{nodata}.tif"));
        // No scan (no room in the block cache, or threads to decode in the
        // engine); scans because it fits on two threads, forced by
        // --explain and by class weights that change nothing (integer weight 1).
        let timed = ["--timings"];
        let fast = smooth_cached(&input, &out("fast"), &timed, 0);
        assert!(fast.contains("timing classes"), "{fast}");
        let many = smooth_with(&input, &out("many"), &timed, &[("RAYON_NUM_THREADS", "8")]);
        assert!(many.contains("timing classes"), "{many}");
        let scanned = smooth_with(
            &input,
            &out("scanned"),
            &timed,
            &[("RAYON_NUM_THREADS", "2")],
        );
        assert!(scanned.contains("timing scan"), "{scanned}");
        let explained = smooth_cached(&input, &out("explained"), &["--explain"], 0);
        let weighted = smooth_cached(
            &input,
            &out("weighted"),
            &["--class-weights", "5:1", "--timings"],
            0,
        );
        assert!(weighted.contains("timing scan"), "{weighted}");
        let want = contents(&out("explained"));
        for name in ["fast", "many", "scanned", "weighted"] {
            assert_eq!(contents(&out(name)), want, "{name}, nodata {nodata}");
        }
        // The input's metadata is carried over.
        let input_meta = contents(&input).0;
        assert_eq!(want.0, input_meta, "nodata {nodata}");
        // Nodata 9 is a class code of the data: 3 classes then, else 4.
        let n = if nodata == 9 { "3" } else { "4" };
        for summary in [&fast, &scanned, &explained, &weighted] {
            assert_eq!(classes_said(summary), n, "{summary}");
        }
        let left: Vec<_> = files_in(dir.path())
            .into_iter()
            .filter(|n| n.contains("mapfilter-tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn weights_of_classes_absent_from_the_raster_change_nothing() {
    // Real-valued weights are scaled by the largest weight of a class
    // present: a weight on an absent code must not shift that scale.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    byte_input(&input, 255);
    let (a, b) = (dir.path().join("a.tif"), dir.path().join("b.tif"));
    smooth(&input, &a, &["--class-weights", "5:1.5", "-q"]);
    smooth(&input, &b, &["--class-weights", "5:1.5,77:40", "-q"]);
    assert_eq!(contents(&a), contents(&b));
}

#[test]
fn timings_name_every_stage() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    byte_input(&input, 255);
    let stderr = smooth(&input, &dir.path().join("out.tif"), &["--timings", "-q"]);
    for stage in ["setup", "open", "scan", "engine", "finish", "output"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("timing {stage} "))),
            "no {stage} line in {stderr}"
        );
    }
    assert!(!stderr.contains("wrote"), "-q prints no summary: {stderr}");
}

/// The host dct5 scorer's AVX2 lanes and its plain ones
/// (`MAPFILTER_SIMD=baseline`) write the same file, with and without
/// filling nodata and in the certified mode.
#[test]
fn plain_lanes_write_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    byte_input(&input, 255);
    for extra in [&[][..], &["--fill-nodata"], &["--exact"]] {
        let mut args = vec!["--method", "dct5", "--device", "host", "-q"];
        args.extend_from_slice(extra);
        let (fast, plain) = (dir.path().join("fast.tif"), dir.path().join("plain.tif"));
        smooth(&input, &fast, &args);
        smooth_with(&input, &plain, &args, &[("MAPFILTER_SIMD", "baseline")]);
        assert_eq!(contents(&fast), contents(&plain), "{extra:?}");
    }
}

/// `--device I,I` (the test device opened twice, two devices sharing the
/// tiles) writes one device's bytes for every method, exact or not, and
/// `--timings` says what each device did.
#[test]
fn two_devices_write_one_device_bytes() {
    let Some(dev) = mapfilter::device::test_device() else {
        return;
    };
    let one = dev.info().index.to_string();
    let two = format!("{one},{one}");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    byte_input(&input, 255);
    let methods: [&[&str]; 4] = [
        &["--method", "naive"],
        &["--method", "dct5"],
        &["--method", "dct5", "--exact"],
        &["--method", "svd"],
    ];
    for (i, method) in methods.into_iter().enumerate() {
        let (a, b) = (
            dir.path().join(format!("one{i}.tif")),
            dir.path().join(format!("two{i}.tif")),
        );
        smooth(&input, &a, &[method, &["--device", &one]].concat());
        let said = smooth(
            &input,
            &b,
            &[method, &["--device", &two, "--timings"]].concat(),
        );
        assert_eq!(contents(&a), contents(&b), "{method:?}");
        let shares: Vec<&str> = said
            .lines()
            .filter(|l| l.starts_with("timing device"))
            .collect();
        assert_eq!(shares.len(), 2, "{said}");
        assert!(
            shares[0].contains("#0 ") && shares[1].contains("#1 ") && shares[0].contains("busy"),
            "{said}"
        );
    }
}

/// Host tiles run as whole jobs on the pool (compacted, smoothed and mapped
/// there), as many in flight as the threads want: the bytes written do not
/// depend on the pool's size, the tile side or how many tiles are in flight.
#[test]
fn host_outputs_are_the_same_whatever_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    let raster = common::synth_with_holes(
        (301, 203),
        7,
        mapfilter::synth::Pattern::Simplex,
        3,
        6.0,
        30,
        0,
    );
    write_raster(
        &input,
        &TestRaster {
            width: raster.width,
            height: raster.height,
            data: &raster.data,
            data_type: GdalDataType::UInt8,
            nodata: Some(0.0),
            colors: false,
        },
    );
    let methods = [&["--method", "dct5", "--exact"][..], &["--method", "naive"]];
    for (m, method) in methods.into_iter().enumerate() {
        let mut outputs = Vec::new();
        for (threads, tile) in [
            ("1", "32"),
            ("3", "32"),
            ("16", "32"),
            ("16", "64"),
            ("64", "40"),
        ] {
            let out = dir.path().join(format!("out-{m}-{threads}-{tile}.tif"));
            let status = std::process::Command::new(env!("CARGO_BIN_EXE_mapfilter"))
                .args(["smooth", input.to_str().unwrap(), out.to_str().unwrap()])
                .args(["-k", "gaussian:2", "--device", "host", "--tile", tile, "-q"])
                .args(method)
                .env("RAYON_NUM_THREADS", threads)
                .status()
                .unwrap();
            assert!(status.success(), "{method:?} on {threads} threads");
            outputs.push((threads, tile, read_raster(&out).2));
        }
        for (threads, tile, data) in &outputs[1..] {
            assert!(
                *data == outputs[0].2,
                "{method:?}: {threads} threads, tile {tile} differ from one thread"
            );
        }
    }
}

/// On a device whose start can overlap the input's reading (`--device
/// cpu`), the method starts on another thread while the input is opened and
/// scanned, and the run waits for it after the scan (`--timings`' `method`
/// stage): the output is the host's, byte for byte, and a method refused
/// once it is known (approximate scores with `--ties smallest`) is the
/// same one-line error as on the host, with nothing written.
#[test]
fn a_device_started_beside_the_scan_gives_the_hosts_bytes_and_errors() {
    if mapfilter::device::test_device().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    byte_input(&input, 0);
    let exact = ["--method", "dct5", "--exact"];
    let host = dir.path().join("host.tif");
    smooth(&input, &host, &[&exact[..], &["--device", "host"]].concat());
    let cpu = dir.path().join("cpu.tif");
    let said = smooth(
        &input,
        &cpu,
        &[&exact[..], &["--device", "cpu", "--timings"]].concat(),
    );
    assert!(said.contains("timing method"), "{said}");
    assert!(std::fs::read(&host).unwrap() == std::fs::read(&cpu).unwrap());
    // On 16 threads a device's run reads through 4 handles, each its own
    // units of 512 rows, side by side: the host's bytes still.
    let tall = dir.path().join("tall.tif");
    byte_input_sized(&tall, 0, (90, 1700));
    let (tall_host, tall_cpu) = (dir.path().join("th.tif"), dir.path().join("tc.tif"));
    smooth(
        &tall,
        &tall_host,
        &[&exact[..], &["--device", "host"]].concat(),
    );
    smooth_with(
        &tall,
        &tall_cpu,
        &[&exact[..], &["--device", "cpu"]].concat(),
        &[("RAYON_NUM_THREADS", "16")],
    );
    assert!(std::fs::read(&tall_host).unwrap() == std::fs::read(&tall_cpu).unwrap());
    // The host computing the first tiles while PoCL starts
    // (`MAPFILTER_HOST_START=1`; on GPUs the default): the host's bytes
    // still, whichever tiles it took.
    let bridged = dir.path().join("tb.tif");
    let on_cpu = [&exact[..], &["--device", "cpu"]].concat();
    smooth_with(&tall, &bridged, &on_cpu, &[("MAPFILTER_HOST_START", "1")]);
    assert!(std::fs::read(&tall_host).unwrap() == std::fs::read(&bridged).unwrap());
    for f in [tall, tall_host, tall_cpu, bridged] {
        std::fs::remove_file(f).unwrap();
    }
    let refused = |device: &str| {
        let out = dir.path().join(format!("refused-{device}.tif"));
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_mapfilter"))
            .args(["smooth", input.to_str().unwrap(), out.to_str().unwrap()])
            .args(["-k", "gaussian:2", "--method", "dct5", "--ties", "smallest"])
            .args(["--device", device, "-q"])
            .output()
            .unwrap();
        assert!(!run.status.success());
        assert!(!out.exists(), "{device}: an output was left");
        String::from_utf8_lossy(&run.stderr).into_owned()
    };
    let (on_host, on_cpu) = (refused("host"), refused("cpu"));
    assert_eq!(on_cpu.trim().lines().count(), 1, "{on_cpu}");
    assert!(
        on_cpu.contains("--ties smallest is defined on exact scores"),
        "{on_cpu}"
    );
    // The same error but for the method's device in its name.
    let cause = |e: &str| e.split(" computes ").nth(1).map(String::from);
    assert!(
        cause(&on_host).is_some() && cause(&on_host) == cause(&on_cpu),
        "{on_host}{on_cpu}"
    );
    assert_eq!(files_in(dir.path()).len(), 3, "{:?}", files_in(dir.path()));
}
