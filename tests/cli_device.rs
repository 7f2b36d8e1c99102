//! The device-related CLI without GDAL inputs: `devices`, `bench --check`,
//! and one-line errors for bad `--device` / `--variant` values.

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
