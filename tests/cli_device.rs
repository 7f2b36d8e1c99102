//! The device-related CLI without GDAL inputs: `devices`, `bench --check`,
//! and one-line errors for bad typed values (`--device`, `--variant`,
//! `--method`, `--border`).

use std::process::Command;

fn mapfilter(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(args)
        .env_remove("MAPFILTER_DEVICE")
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_device_is_one_line_error() {
    let (ok, _, err) = mapfilter(&["bench", "--device", "tpu", "--size", "16"]);
    assert!(!ok);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("unknown device 'tpu'") && err.contains("hint"),
        "{err}"
    );
    let (ok, _, err) = mapfilter(&[
        "bench",
        "--device",
        "host",
        "--variant",
        "warp",
        "--size",
        "16",
    ]);
    assert!(!ok && err.contains("unknown naive variant 'warp'"), "{err}");
    let (ok, _, err) = mapfilter(&["bench", "--device", "99", "--size", "16"]);
    assert!(!ok && err.trim().lines().count() == 1, "{err}");
}

/// Typed values are refused while the arguments are parsed, each in one
/// line with a hint, in every command that takes them.
#[test]
fn bad_typed_values_are_one_line_errors() {
    for (args, want) in [
        (
            &[
                "filter", "in.tif", "out.tif", "--op", "box:3", "--device", "tpu",
            ][..],
            "unknown device 'tpu'",
        ),
        (
            &[
                "filter", "in.tif", "out.tif", "--op", "box:3", "--border", "weird",
            ][..],
            "unknown border mode 'weird'",
        ),
        (
            &["bench-filter", "--op", "box:3", "--border", "constant:x"][..],
            "border constant 'x' is not a number",
        ),
        (
            &["histogram", "in.tif", "--device", "tpu"][..],
            "unknown device 'tpu'",
        ),
        (
            &["bench", "--method", "fancy", "--size", "16"][..],
            "unknown method 'fancy'",
        ),
        (
            &[
                "smooth", "in.tif", "out.tif", "-k", "box:3", "--method", "Naive",
            ][..],
            "unknown method 'Naive'",
        ),
    ] {
        let (ok, _, err) = mapfilter(args);
        assert!(!ok, "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(want) && err.contains("hint"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn devices_lists_and_bench_checks() {
    let (ok, out, _) = mapfilter(&["devices"]);
    assert!(ok && out.contains("host:"), "{out}");
    let (ok, out, err) = mapfilter(&[
        "bench",
        "--device",
        "auto",
        "--size",
        "40",
        "--classes",
        "3,200",
        "--kernel",
        "box:3,gaussian:1",
        "--tile",
        "16",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--check",
    ]);
    assert!(ok, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines
            .iter()
            .all(|l| l["check"] == "identical" && l["tiles"] == 9),
        "{out}"
    );
}

/// `--device I,I` on the test device (PoCL here) opens it twice as two
/// devices sharing the tiles: exact methods give the host reference's bytes
/// and every device reports its share of the tiles.
#[test]
fn two_contexts_share_the_tiles_of_exact_methods() {
    let Some(dev) = mapfilter::device::test_device() else {
        return;
    };
    let list = format!("{0},{0}", dev.info().index);
    for method in [
        &["--method", "naive"][..],
        &["--method", "dct5", "--exact"],
        &["--method", "svd", "--exact"],
    ] {
        let mut args = vec![
            "bench",
            "--device",
            &list,
            "--size",
            "70",
            "--classes",
            "5",
            "--kernel",
            "gaussian:2",
            "--tile",
            "16",
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--check",
        ];
        args.extend_from_slice(method);
        let (ok, out, err) = mapfilter(&args);
        assert!(ok, "{method:?}: {err}");
        let line: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(line["check"], "identical", "{method:?}: {out}");
        let devices = line["devices"].as_array().expect("one share per device");
        assert_eq!(devices.len(), 2, "{out}");
        let tiles: u64 = devices.iter().map(|d| d["tiles"].as_u64().unwrap()).sum();
        assert_eq!(tiles, line["tiles"].as_u64().unwrap(), "{out}");
    }
}

/// dct5 and naive compact their tiles on the device; on `--device I,I`
/// each context stages the tiles it takes. The result is the one
/// context's, byte for byte, whichever context took which tile.
#[test]
fn two_contexts_give_one_contexts_bytes_when_the_device_compacts() {
    let Some(dev) = mapfilter::device::test_device() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let input = path("in.tif");
    let (ok, _, err) = mapfilter(&[
        "gen",
        &input,
        "--raster-size",
        "301x173",
        "--classes",
        "7",
        "--pattern",
        "simplex",
    ]);
    assert!(ok, "{err}");
    let one = dev.info().index.to_string();
    let two = format!("{one},{one}");
    for method in [
        &["--method", "dct5"][..],
        &["--method", "naive"],
        &["--method", "naive", "--variant", "buffer"],
    ] {
        let mut outputs = Vec::new();
        for (device, out) in [(&one, path("one.tif")), (&two, path("two.tif"))] {
            let mut args = vec![
                "smooth",
                "-q",
                "--overwrite",
                &input,
                &out,
                "-k",
                "gaussian:2",
                "--tile",
                "48",
                "--device",
                device,
            ];
            args.extend_from_slice(method);
            let (ok, _, err) = mapfilter(&args);
            assert!(ok, "{method:?} {device}: {err}");
            outputs.push(std::fs::read(&out).unwrap());
        }
        assert!(
            outputs[0] == outputs[1],
            "{method:?}: two contexts changed the output"
        );
    }
    let (ok, out, err) = mapfilter(&[
        "bench",
        "--device",
        &two,
        "--method",
        "dct5",
        "--size",
        "70",
        "--classes",
        "5",
        "--kernel",
        "gaussian:2",
        "--tile",
        "16",
        "--repeat",
        "1",
        "--warmup",
        "0",
    ]);
    assert!(ok, "{err}");
    let line: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let devices = line["devices"].as_array().expect("one share per context");
    let tiles: Vec<u64> = devices
        .iter()
        .map(|d| d["tiles"].as_u64().unwrap())
        .collect();
    assert!(
        tiles.iter().all(|&t| t > 0),
        "both contexts take tiles: {out}"
    );
    assert_eq!(
        tiles.iter().sum::<u64>(),
        line["tiles"].as_u64().unwrap(),
        "{out}"
    );
}

/// Several devices are for the class methods: a command on one device says
/// so in one line.
#[test]
fn several_devices_where_one_is_needed_is_a_one_line_error() {
    let (ok, _, err) = mapfilter(&[
        "bench-filter",
        "--device",
        "0,1",
        "--op",
        "median:3",
        "--size",
        "16",
    ]);
    assert!(!ok, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (ok, _, err) = mapfilter(&["bench", "--device", "0,all", "--size", "16"]);
    assert!(
        !ok && err.contains("cannot be part of the device list"),
        "{err}"
    );
}

/// A tune database that cannot be used (not JSON, another format) is
/// ignored with one warning; a usable one is named at -v; MAPFILTER_TUNE=off
/// ignores it.
#[test]
fn tune_database_is_used_or_ignored_never_fatal() {
    let Some(dev) = mapfilter::device::test_device() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let index = dev.info().index.to_string();
    let run = |db: &std::path::Path, env: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
            .args([
                "bench",
                "--device",
                &index,
                "--method",
                "dct5",
                "--kernel",
                "gaussian:2",
                "--size",
                "48",
                "--classes",
                "4",
                "--tile",
                "24",
                "--repeat",
                "1",
                "--warmup",
                "0",
                "-v",
            ])
            .env_remove("MAPFILTER_DEVICE")
            .env_remove("MAPFILTER_TUNE")
            .env("MAPFILTER_TUNE_DB", db)
            .envs(env.iter().copied())
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        err
    };
    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, "{\"format\": 1, \"settings\": [tru").unwrap();
    let foreign = dir.path().join("foreign.json");
    std::fs::write(&foreign, r#"{"format": 7, "settings": []}"#).unwrap();
    for bad in [&corrupt, &foreign] {
        let err = run(bad, &[]);
        assert_eq!(
            err.matches("ignoring the tune database").count(),
            1,
            "{err}"
        );
    }
    let good = dir.path().join("tune.json");
    let text = serde_json::json!({"format": 1, "settings": [{
        "device": dev.info().name, "driver": dev.info().driver, "kernel": "dct5",
        "shape": [32], "tile": 512
    }]});
    std::fs::write(&good, text.to_string()).unwrap();
    let err = run(&good, &[]);
    assert!(err.contains("tuned dct5 shape 32, tile 512"), "{err}");
    let err = run(&good, &[("MAPFILTER_TUNE", "off")]);
    assert!(
        !err.contains("tuned dct5") && !err.contains("ignoring"),
        "{err}"
    );
}
