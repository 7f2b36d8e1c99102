//! `mapfilter sweep`: every config in benches/sweeps parses, and the smoke
//! config runs end to end into CSV, JSON and an HTML report with plots.

use mapfilter::error::Setting;
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
    assert!(
        err.contains(&format!(
            "{} is defined on exact scores",
            Setting::Ties.is("smallest")
        )),
        "{err}"
    );
    let exact = text.replace("[\"svd@host\"]", "[\"svd:exact@host\"]");
    let config = mapfilter::sweep::Config::parse(&exact).unwrap();
    config.check_methods().unwrap();
}

/// A config in a temp dir whose `input` names the bundled real maps.
#[cfg(feature = "gdal")]
fn real_config(dir: &Path) -> std::path::PathBuf {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
    let config = dir.join("real.toml");
    std::fs::write(
        &config,
        format!(
            r#"title = "real"
methods = ["naive@host", "svd@host"]
repeats = 1
input = ["{data}/synthetic_simplex_512.tif", "{data}/ne_continents_1440x720.tif"]
[base]
kernel = "disc"
[[experiment]]
name = "kernel_size"
vary = "kernel_size"
values = [3, 7]
"#
        ),
    )
    .unwrap();
    config
}

#[cfg(feature = "gdal")]
#[test]
fn sweep_runs_every_method_on_real_rasters_and_dry_run_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = real_config(dir.path());
    let out = dir.path().join("out");
    let listed = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args([
            "sweep",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert!(listed.status.success());
    let text = String::from_utf8(listed.stdout).unwrap();
    // A header and one line per run: 2 values x 2 methods x 2 inputs.
    assert_eq!(text.lines().count(), 1 + 8, "{text}");
    assert!(
        text.contains("kernel_size=7 svd@host kernel disc:3 on "),
        "{text}"
    );
    assert!(text.contains("ne_continents_1440x720.tif"));
    assert!(!out.exists(), "a dry run writes nothing");

    let run = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args([
            "sweep",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let records = json["records"].as_array().unwrap();
    assert_eq!(records.len(), 8);
    for r in records {
        let input = r["input"].as_str().unwrap();
        let (w, h) = if input == "ne_continents_1440x720.tif" {
            (1440, 720)
        } else {
            (512, 512)
        };
        assert_eq!(
            (r["width"].as_u64(), r["height"].as_u64()),
            (Some(w), Some(h))
        );
        assert!(
            r["method"]
                .as_str()
                .unwrap()
                .ends_with(&format!(" on {input}"))
        );
        // svd of a disc at rank 1 is approximate, naive is the reference.
        if r["method"].as_str().unwrap().starts_with("naive") {
            assert_eq!(r["agreement_percent"], 100.0);
        }
    }
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    // The input's column, then the accuracy against a reference sample
    // (empty without --reference).
    assert!(
        csv.lines().next().unwrap().ends_with(
            ",input,overall_accuracy,overall_accuracy_ci95_low,overall_accuracy_ci95_high"
        )
    );

    // Varying what a real input fixes is refused before anything runs.
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("\"kernel_size\"\nvalues", "\"classes\"\nvalues");
    std::fs::write(&config, text).unwrap();
    let bad = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args([
            "sweep",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--overwrite",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("real input fixes"));
}
