//! `mapfilter sweep`: every config in benches/sweeps parses, and the smoke
//! config runs end to end into CSV, JSON and an HTML report with plots.

use std::path::Path;
use std::process::Command;

const SWEEPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/sweeps");

#[test]
fn every_bench_config_parses() {
    let mut n = 0;
    for entry in std::fs::read_dir(SWEEPS).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let c = mapfilter::sweep::Config::load(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(c.runs() > 0);
            n += 1;
        }
    }
    assert!(n >= 5, "only {n} configs");
}

#[test]
fn smoke_sweep_writes_csv_json_and_html() {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(["sweep", &format!("{SWEEPS}/smoke.toml"), "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("[20/20]"), "{stderr}");

    let csv = std::fs::read_to_string(out.path().join("results.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 20, "{csv}");
    assert!(lines[0].starts_with("experiment,variable,value,method"));
    assert!(
        lines[1].starts_with("image_size,size,16,naive@host,"),
        "{}",
        lines[1]
    );

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).unwrap())
            .unwrap();
    let records = json["records"].as_array().unwrap();
    assert_eq!(records.len(), 20);
    // The exact method agrees fully; truncated ranks and terms lose accuracy,
    // full rank regains it.
    for r in records {
        let a = r["agreement_percent"].as_f64().unwrap();
        assert!(a > 50.0 && a <= 100.0, "{r}");
        if r["method"] == "naive@host" {
            assert_eq!(a, 100.0, "{r}");
        }
    }
    assert_eq!(records[9]["classes"], 8);
    let svd = |rank: u64| {
        records
            .iter()
            .find(|r| r["method"] == "svd@host" && r["rank"] == rank)
            .unwrap()["agreement_percent"]
            .as_f64()
            .unwrap()
    };
    assert!(svd(1) <= svd(4), "{} {}", svd(1), svd(4));
    assert_eq!(records[17]["terms"], 3);
    assert_eq!(json["config"]["title"], "Smoke sweep");
    // The policies are settings of the config, recorded with the results.
    let policies = &json["config"]["experiment"][5]["set"];
    assert_eq!(policies["ties"], "smallest", "{policies}");
    assert_eq!(policies["only_isolated"], 3, "{policies}");
    assert_eq!(records[19]["variable"], "iterations");

    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    // Six experiments, a run-time and an agreement plot each.
    assert_eq!(html.matches("<svg").count(), 12);
    assert!(html.contains("Run time against class count"));
}

#[test]
fn unknown_method_fails_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    let text = std::fs::read_to_string(Path::new(SWEEPS).join("smoke.toml"))
        .unwrap()
        .replace("methods = [\"naive@host\"]", "methods = [\"nope@host\"]");
    std::fs::write(&config, text).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(["sweep"])
        .arg(&config)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unknown method 'nope'"), "{stderr}");
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_tie_rule_on_an_approximate_method_fails_before_running() {
    let text = std::fs::read_to_string(Path::new(SWEEPS).join("smoke.toml"))
        .unwrap()
        .replace("methods = [\"naive@host\"]", "methods = [\"svd@host\"]");
    let config = mapfilter::sweep::Config::parse(&text).unwrap();
    let err = config.check_methods().unwrap_err().to_string();
    assert!(err.contains("--ties smallest needs exact scores"), "{err}");
    let exact = text.replace("[\"svd@host\"]", "[\"svd:exact@host\"]");
    let config = mapfilter::sweep::Config::parse(&exact).unwrap();
    config.check_methods().unwrap();
}
