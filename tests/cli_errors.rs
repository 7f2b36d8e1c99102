//! Bad input: a one-line cause and hint, a non-zero exit, no output left
//! behind (not the target, not a temp file) and the input untouched.
#![cfg(feature = "gdal")]

use crate::common;

use common::{TestRaster, files_in, fixture, mapfilter, write_raster};
use gdal::raster::GdalDataType;
use std::path::Path;

/// Runs `smooth` expecting failure; checks the message and that `dir` holds
/// only `keep` afterwards.
fn fails(args: &[&str], expect: &str, dir: &Path, keep: &[&str]) {
    let run = mapfilter(args);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{args:?} succeeded");
    assert_eq!(run.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr}"
    );
    assert!(
        stderr.contains(expect),
        "{args:?}: '{stderr}' lacks '{expect}'"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(files_in(dir), keep, "{args:?} left files behind");
}

#[test]
fn bad_inputs_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out.tif");
    let out = out.to_str().unwrap();
    let good = fixture("classes_72x64.tif");
    let good = good.to_str().unwrap();

    // Missing file.
    fails(
        &["smooth", "/nonexistent/in.tif", out, "-k", "box:3"],
        "no such file",
        d,
        &[],
    );

    // A file that is not a raster.
    let text = d.join("notes.txt");
    std::fs::write(&text, "not a raster\n").unwrap();
    fails(
        &["smooth", text.to_str().unwrap(), out, "-k", "box:3"],
        "not a raster",
        d,
        &["notes.txt"],
    );
    std::fs::remove_file(&text).unwrap();

    // A Float32 band.
    let float = d.join("float.tif");
    write_raster(
        &float,
        &TestRaster {
            width: 4,
            height: 4,
            data: &[1; 16],
            data_type: GdalDataType::Float32,
            nodata: None,
            colors: false,
        },
    );
    fails(
        &["smooth", float.to_str().unwrap(), out, "-k", "box:3"],
        "Float32",
        d,
        &["float.tif"],
    );
    std::fs::remove_file(&float).unwrap();

    // More than 256 classes.
    let many = d.join("many.tif");
    let codes: Vec<u16> = (0..300).collect();
    write_raster(
        &many,
        &TestRaster {
            width: 30,
            height: 10,
            data: &codes,
            data_type: GdalDataType::UInt16,
            nodata: None,
            colors: false,
        },
    );
    fails(
        &["smooth", many.to_str().unwrap(), out, "-k", "box:3"],
        "300 distinct class codes",
        d,
        &["many.tif"],
    );
    std::fs::remove_file(&many).unwrap();

    // The same with a nodata value: the output is being made (on its own
    // thread) while the scan fails; its temp file goes too.
    write_raster(
        &many,
        &TestRaster {
            width: 30,
            height: 10,
            data: &codes,
            data_type: GdalDataType::UInt16,
            nodata: Some(299.0),
            colors: false,
        },
    );
    fails(
        &["smooth", many.to_str().unwrap(), out, "-k", "box:3"],
        "299 distinct class codes",
        d,
        &["many.tif"],
    );
    std::fs::remove_file(&many).unwrap();

    // Even, empty and malformed kernels; sigma ≤ 0.
    fails(&["smooth", good, out, "-k", "box:4"], "even", d, &[]);
    let empty = d.join("empty.txt");
    std::fs::write(&empty, "\n# nothing\n").unwrap();
    let spec = format!("file:{}", empty.display());
    fails(
        &["smooth", good, out, "-k", &spec],
        "empty",
        d,
        &["empty.txt"],
    );
    std::fs::remove_file(&empty).unwrap();
    fails(
        &["smooth", good, out, "-k", "gaussian:0"],
        "sigma must be > 0",
        d,
        &[],
    );
    fails(
        &["smooth", good, out, "-k", "gaussian:-2"],
        "sigma must be > 0",
        d,
        &[],
    );
    fails(
        &["smooth", good, out, "-k", "wave:3"],
        "unknown kernel",
        d,
        &[],
    );
    fails(
        &["smooth", good, out, "-k", "box:3", "--class-weights", "3:0"],
        "must be > 0",
        d,
        &[],
    );

    // Output equal to input (also through another spelling of the path).
    let copy = d.join("in.tif");
    std::fs::copy(good, &copy).unwrap();
    let before = std::fs::read(&copy).unwrap();
    let copy_s = copy.to_str().unwrap();
    fails(
        &["smooth", copy_s, copy_s, "-k", "box:3"],
        "is the input",
        d,
        &["in.tif"],
    );
    let other_spelling = format!("{}/./in.tif", d.display());
    fails(
        &["smooth", copy_s, &other_spelling, "-k", "box:3"],
        "is the input",
        d,
        &["in.tif"],
    );
    assert_eq!(std::fs::read(&copy).unwrap(), before, "input modified");
    std::fs::remove_file(&copy).unwrap();

    // Output directory that does not exist, or cannot be written (/proc refuses files even to root).
    fails(
        &["smooth", good, "/nonexistent/dir/out.tif", "-k", "box:3"],
        "does not exist",
        d,
        &[],
    );
    fails(
        &["smooth", good, "/proc/out.tif", "-k", "box:3"],
        "cannot create output",
        d,
        &[],
    );

    // A valid border on a raster smaller than the window.
    fails(
        &["smooth", good, out, "-k", "box:101", "--border", "valid"],
        "smaller than",
        d,
        &[],
    );
}

#[test]
fn existing_output_survives_a_failed_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    std::fs::write(&out, b"previous result").unwrap();
    let good = fixture("classes_72x64.tif");
    let run = mapfilter(&[
        "smooth",
        good.to_str().unwrap(),
        out.to_str().unwrap(),
        "-k",
        "box:101",
        "--border",
        "valid",
    ]);
    assert!(!run.status.success());
    assert_eq!(std::fs::read(&out).unwrap(), b"previous result");
}

#[test]
fn interrupted_run_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tif");
    let generated = mapfilter(&[
        "gen",
        input.to_str().unwrap(),
        "--size",
        "1500x1500",
        "--classes",
        "5",
        "-q",
    ]);
    assert!(generated.status.success());
    let out = dir.path().join("out.tif");
    // A slow job (101×101 box over 2.25 Mpix) so that the interrupt lands mid-run.
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args([
            "smooth",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "-k",
            "box:101",
            "--tile",
            "64",
            "-q",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the temp output exists, then interrupt.
    let temp_exists = || {
        std::fs::read_dir(dir.path()).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .contains("mapfilter-tmp")
        })
    };
    let start = std::time::Instant::now();
    while !temp_exists() && start.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(temp_exists(), "temp output never appeared");
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let result = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success());
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(files_in(dir.path()), ["in.tif"]);
}

#[test]
fn unbounded_or_wrong_inputs_get_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out.tif");
    let out = out.to_str().unwrap();
    let good = fixture("classes_72x64.tif");
    let good = good.to_str().unwrap();
    // Reading a kernel stops at its limit: /dev/zero does not fill memory.
    fails(
        &["smooth", good, out, "-k", "file:/dev/zero"],
        "larger than",
        d,
        &[],
    );
    fails(
        &["filter", good, out, "--op", "kernel:/dev/zero"],
        "larger than",
        d,
        &[],
    );
    // Sizes beyond memory: an error, not an allocation abort.
    let huge = mapfilter(&["bench", "--size", "100000", "--method", "naive"]);
    assert_eq!(
        huge.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&huge.stderr)
    );
    assert!(String::from_utf8_lossy(&huge.stderr).contains("in memory"));
    let config = d.join("big.toml");
    std::fs::write(
        &config,
        "title = \"t\"\nmethods = [\"naive@host\"]\n[[experiment]]\nname = \"s\"\nvary = \"size\"\nvalues = [100000]\n",
    )
    .unwrap();
    let sweep = mapfilter(&[
        "sweep",
        config.to_str().unwrap(),
        "--out",
        d.join("sw").to_str().unwrap(),
    ]);
    assert_eq!(
        sweep.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&sweep.stderr)
    );
    assert!(String::from_utf8_lossy(&sweep.stderr).contains("in memory"));
    // Non-finite filter weights are refused like smooth's.
    for bad in ["nan", "inf", "1e39"] {
        let k = d.join("k.txt");
        std::fs::write(&k, format!("1 1 1\n1 {bad} 1\n1 1 1\n")).unwrap();
        let spec = format!("kernel:{}", k.display());
        fails(
            &["filter", good, out, "--op", &spec],
            "not a finite",
            d,
            &["big.toml", "k.txt"],
        );
        std::fs::remove_file(&k).unwrap();
    }
    // Messages that used to mislead.
    fails(
        &["smooth", good, out, "-k", "gaussian:1e-300"],
        "kernel gaussian:1e-300: a 1x1 kernel",
        d,
        &["big.toml"],
    );
    let tile = mapfilter(&["smooth", good, out, "-k", "box:3", "--tile", "0"]);
    let e = String::from_utf8_lossy(&tile.stderr);
    assert!(e.contains("--tile") && !e.contains("--border"), "{e}");
    // A kernel file that is no matrix: the message says where, never what
    // the file holds (it may be one readable only through this run).
    let secret = d.join("secret.txt");
    std::fs::write(
        &secret,
        "root:$6$s3cr3t:19000:0:99999:7:::
",
    )
    .unwrap();
    let k = format!("file:{}", secret.display());
    let f = format!("kernel:{}", secret.display());
    for args in [
        &["smooth", good, out, "-k", &k][..],
        &["filter", good, out, "--op", &f][..],
    ] {
        let run = mapfilter(args);
        let e = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{e}");
        assert!(e.contains("line 1, value 1: not a number"), "{e}");
        assert!(!e.contains("s3cr3t") && !e.contains("root"), "{e}");
    }
    // Sizes that used to panic: a tune map smaller than every tile side.
    let db = d.join("tune.json");
    let run = mapfilter(&["tune", "--size", "511", "--db", db.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{e}");
    assert!(
        e.contains("smaller than the smallest tile side") && !e.contains("panicked"),
        "{e}"
    );
    // `-` is no raster output: refused, no file named `-` made.
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .current_dir(d)
        .args(["smooth", good, "-", "-k", "box:3"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{e}");
    assert!(e.contains("standard output"), "{e}");
    assert!(!d.join("-").exists());
}

#[test]
fn tiny_kernel_weights_are_scaled_by_their_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = fixture("classes_72x64.tif");
    let good = good.to_str().unwrap();
    let k = d.join("tiny.txt");
    std::fs::write(
        &k,
        "1e-300 1e-300 1e-300\n1e-300 1e-300 1e-300\n1e-300 1e-300 1e-300\n",
    )
    .unwrap();
    let (a, b) = (d.join("tiny.tif"), d.join("box.tif"));
    common::mapfilter_ok(&[
        "smooth",
        good,
        a.to_str().unwrap(),
        "-k",
        &format!("file:{}", k.display()),
        "-q",
    ]);
    common::mapfilter_ok(&["smooth", good, b.to_str().unwrap(), "-k", "box:3", "-q"]);
    assert_eq!(common::read_raster(&a), common::read_raster(&b));
}

#[test]
fn info_describes_many_classes_and_nan_nodata() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let many = d.join("many.tif");
    common::mapfilter_ok(&[
        "gen",
        many.to_str().unwrap(),
        "--size",
        "64x64",
        "--classes",
        "300",
        "--pattern",
        "random",
        "-q",
    ]);
    let info = common::mapfilter_ok(&["info", many.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("classes:     300"));
    let float = d.join("nan.tif");
    write_raster(
        &float,
        &TestRaster {
            width: 4,
            height: 4,
            data: &[1; 16],
            data_type: GdalDataType::Float32,
            nodata: Some(f64::NAN),
            colors: false,
        },
    );
    let json = common::mapfilter_ok(&["info", float.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["nodata"], "NaN");
}

/// `--error-format json`: each failure is one JSON object on stderr with
/// the cause, the hint, the kind and the exit code, for the errors of a
/// run and for a typed option's refusal while the arguments are parsed;
/// the text format is unchanged.
#[test]
fn errors_as_json_say_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    let out = out.to_str().unwrap();
    let good = fixture("classes_72x64.tif");
    let good = good.to_str().unwrap();
    let missing = dir.path().join("missing.tif");
    let missing = missing.to_str().unwrap();
    for (args, kind) in [
        (vec!["smooth", missing, out, "-k", "gaussian:2"], "input"),
        (
            vec!["smooth", good, out, "-k", "gaussian:2", "--device", "nope"],
            "usage",
        ),
        (
            vec!["smooth", good, out, "-k", "gaussian:2", "--tile", "0"],
            "usage",
        ),
    ] {
        for form in [
            &["--error-format", "json"][..],
            &["--error-format=json"][..],
        ] {
            let run = mapfilter(&[&args[..], form].concat());
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert_eq!(run.status.code(), Some(1), "{args:?}: {stderr}");
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
            let v: serde_json::Value = serde_json::from_str(stderr.trim()).unwrap();
            assert_eq!(v["kind"], kind, "{args:?}: {v}");
            assert_eq!(v["code"], 1, "{v}");
            assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
            assert!(v["hint"].is_string() || v["hint"].is_null(), "{v}");
        }
        let text = mapfilter(&args);
        let stderr = String::from_utf8_lossy(&text.stderr);
        assert!(stderr.starts_with("mapfilter: error: "), "{stderr}");
    }
    assert!(files_in(dir.path()).is_empty());
}
