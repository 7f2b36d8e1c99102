//! `--json FILE|-` run summaries of `smooth`, `filter` and `compare` parse
//! and say what ran; `smooth --report --baseline FILE` reuses an exact
//! output and reports the same figures as a run that recomputes it.
#![cfg(feature = "gdal")]

use crate::common;

use common::{mapfilter, mapfilter_ok};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

#[test]
fn smooth_filter_and_compare_summaries_parse() {
    let dir = tempfile::tempdir().unwrap();
    let input = data("synthetic_simplex_512.tif");
    let out = dir.path().join("out.tif");
    let run = mapfilter_ok(&[
        "smooth",
        s(&input),
        s(&out),
        "-k",
        "gaussian:75m",
        "--device",
        "host",
        "--json",
        "-",
        "-q",
    ]);
    let j = parse(&run.stdout);
    assert_eq!(j["command"], "smooth");
    assert_eq!(j["output"], s(&out));
    assert_eq!(j["kernel"]["given"], "gaussian:75m");
    assert_eq!(j["kernel"]["sigma_pixels"], 2.5);
    assert_eq!(j["kernel"]["side"], 15);
    assert_eq!(j["method"], "naive@host");
    assert_eq!(j["exact"], true);
    assert_eq!(
        (j["width"].as_u64(), j["height"].as_u64()),
        (Some(512), Some(512))
    );
    // The class counts are the input's.
    let counted: u64 = j["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["input_pixels"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 512 * 512);
    assert!(j["seconds"]["total"].as_f64().unwrap() >= j["seconds"]["engine"].as_f64().unwrap());
    assert!(
        j["provenance"]["version"]
            .as_str()
            .unwrap()
            .starts_with("mapfilter ")
    );

    // To a file, with the summary line still on stderr.
    let summary = dir.path().join("filter.json");
    let run = mapfilter_ok(&[
        "filter",
        s(&data("dem_jacksboro.tif")),
        s(&dir.path().join("f.tif")),
        "--op",
        "gaussian-pyramid:2",
        "--op",
        "box:3",
        "--json",
        s(&summary),
    ]);
    assert!(run.stdout.is_empty());
    let f = parse(&std::fs::read(&summary).unwrap());
    assert_eq!(f["command"], "filter");
    let outputs = f["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2);
    assert!(outputs[0]["output"].as_str().unwrap().ends_with("f_L0.tif"));
    assert_eq!(
        outputs[1]["width"].as_u64().unwrap(),
        outputs[0]["width"].as_u64().unwrap().div_ceil(2)
    );

    let c = parse(&mapfilter_ok(&["compare", s(&input), s(&out), "--json", "-", "-q"]).stdout);
    assert_eq!(c["command"], "compare");
    assert!(c["summary"]["agreement_percent"].as_f64().unwrap() < 100.0);
    assert!(c["seconds"]["total"].as_f64().is_some());

    // Two outputs on standard output are refused before any work.
    let other = dir.path().join("other.tif");
    let both = mapfilter(&[
        "smooth",
        s(&input),
        s(&other),
        "-k",
        "box:3",
        "--json",
        "-",
        "--report",
        "-",
    ]);
    assert_eq!(both.status.code(), Some(1));
    assert!(!other.exists());
}

#[test]
fn baseline_reuse_gives_the_same_report() {
    let dir = tempfile::tempdir().unwrap();
    let input = data("synthetic_simplex_512.tif");
    let base = dir.path().join("base.tif");
    mapfilter_ok(&[
        "smooth",
        s(&input),
        s(&base),
        "-k",
        "disc:3",
        "--device",
        "host",
        "-q",
    ]);
    let report = |name: &str, extra: &[&str]| {
        let out = dir.path().join(format!("{name}.tif"));
        let json = dir.path().join(format!("{name}.json"));
        let mut args = vec![
            "smooth",
            s(&input),
            s(&out),
            "-k",
            "disc:3",
            "--device",
            "host",
            "-q",
            "--report",
            s(&json),
        ];
        args.extend_from_slice(extra);
        mapfilter_ok(&args);
        parse(&std::fs::read(&json).unwrap())
    };
    let svd = ["--method", "svd", "--rank", "1"];
    let fresh = report("fresh", &svd);
    let reused = report("reused", &[&svd[..], &["--baseline", s(&base)]].concat());
    assert_eq!(fresh["summary"], reused["summary"]);
    assert!(fresh["summary"]["differing_pixels"].as_u64().unwrap() > 0);
    assert!(fresh["run"]["speedup"].as_f64().is_some());
    assert_eq!(reused["run"]["baseline_seconds"], Value::Null);
    assert_eq!(reused["run"]["speedup"], Value::Null);
    // The report records the kernel as given and its side in pixels.
    let settings = reused["run"]["settings"].to_string();
    assert!(
        settings.contains("disc:3") && settings.contains("7 px (7x7)"),
        "{settings}"
    );

    // Another grid is refused with a hint.
    let wrong = mapfilter(&[
        "smooth",
        s(&input),
        s(&dir.path().join("w.tif")),
        "-k",
        "disc:3",
        "-q",
        "--report",
        s(&dir.path().join("w.json")),
        "--baseline",
        s(&data("modis_igbp_2019_2048.tif")),
    ]);
    assert_eq!(wrong.status.code(), Some(1));
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(err.contains("--baseline") && err.contains("hint"), "{err}");
    // Refused before any work: no output was made.
    assert!(!dir.path().join("w.tif").exists());
    // The naive method against the naive baseline claims no speed-up.
    let same = report("same", &["--method", "naive"]);
    assert_eq!(same["run"]["speedup"], Value::Null);
    assert!(same["run"]["baseline_seconds"].as_f64().is_some());
}
