//! Scripting interfaces end to end: shell completions and the man page
//! generated from the clap definitions, `-v` logging on stderr, and
//! `compare --min-agreement` as a quality gate.
#![cfg(feature = "gdal")]

use crate::common;

use common::{mapfilter, mapfilter_ok};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn completions_generate_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _mapfilter"),
        ("zsh", "#compdef mapfilter"),
        ("fish", "complete -c mapfilter"),
        ("elvish", "edit:completion:arg-completer[mapfilter]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = mapfilter_ok(&["completions", shell]);
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(marker), "{shell}: no {marker}");
        // Subcommands and their options come from the clap definitions.
        for word in ["smooth", "compare", "min-agreement", "compress-level"] {
            assert!(text.contains(word), "{shell}: no {word}");
        }
    }
    // The bash script is valid bash.
    let out = mapfilter_ok(&["completions", "bash"]);
    let mut bash = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    bash.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let checked = bash.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let bad = mapfilter(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn man_page_renders() {
    let page = mapfilter_ok(&["man"]).stdout;
    let text = String::from_utf8(page.clone()).unwrap();
    assert!(
        text.starts_with(".ie") || text.contains(".TH mapfilter 1"),
        "{text}"
    );
    // groff (man-db's formatter) renders it without a warning.
    let mut groff = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("groff (groff-base, installed with man-db)");
    groff.stdin.take().unwrap().write_all(&page).unwrap();
    let rendered = groff.wait_with_output().unwrap();
    assert!(rendered.status.success());
    assert_eq!(String::from_utf8_lossy(&rendered.stderr), "");
    for word in [
        "SYNOPSIS",
        "\\-\\-config",
        "\\-\\-verbose",
        "smooth",
        "completions",
    ] {
        assert!(text.contains(word), "no {word}");
    }

    let dir = tempfile::tempdir().unwrap();
    let run = mapfilter_ok(&["man", "--dir", s(dir.path())]);
    assert!(String::from_utf8_lossy(&run.stderr).contains("man pages"));
    let smooth = std::fs::read_to_string(dir.path().join("mapfilter-smooth.1")).unwrap();
    assert!(smooth.contains("\\-\\-kernel") || smooth.contains("--kernel"));
    // Pages that exist are kept without --overwrite.
    assert_eq!(
        mapfilter(&["man", "--dir", s(dir.path())]).status.code(),
        Some(1)
    );
}

#[test]
fn verbose_logs_what_the_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let quiet = mapfilter_ok(&[
        "gen",
        "--size",
        "600x600",
        "--of",
        "COG",
        s(&dir.path().join("a.tif")),
    ]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("mapfilter: info"));
    let info = mapfilter_ok(&[
        "-v",
        "gen",
        "--size",
        "600x600",
        "--of",
        "COG",
        s(&dir.path().join("b.tif")),
    ]);
    let err = String::from_utf8_lossy(&info.stderr);
    assert!(err.contains("mapfilter: info: making the COG"), "{err}");
    assert!(!err.contains("mapfilter: debug"), "{err}");
    let debug = mapfilter_ok(&[
        "gen",
        "--size",
        "600x600",
        s(&dir.path().join("c.tif")),
        "-vv",
    ]);
    let err = String::from_utf8_lossy(&debug.stderr);
    assert!(err.contains("mapfilter: debug: moved"), "{err}");
}

#[test]
fn global_options_do_not_clash_with_subcommand_arguments() {
    // `sweep` has a positional argument named `config`, as the global
    // `--config KEY VALUE` is called: both must parse.
    let sweep = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/sweeps/smoke.toml");
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["sweep", sweep, "--out", s(dir.path()), "--dry-run"][..],
        &[
            "-v",
            "sweep",
            sweep,
            "--out",
            s(dir.path()),
            "--dry-run",
            "--config",
            "GDAL_CACHEMAX",
            "64",
        ][..],
    ] {
        mapfilter_ok(args);
    }
}

#[test]
fn min_agreement_gates_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.tif");
    let b = dir.path().join("b.tif");
    mapfilter_ok(&["gen", "--size", "200x200", "--seed", "1", "-q", s(&a)]);
    mapfilter_ok(&["gen", "--size", "200x200", "--seed", "2", "-q", s(&b)]);
    mapfilter_ok(&["compare", s(&a), s(&a), "--min-agreement", "100"]);
    let json = dir.path().join("ab.json");
    let run = mapfilter(&[
        "compare",
        s(&a),
        s(&b),
        "--min-agreement",
        "99",
        "--json",
        s(&json),
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is below --min-agreement 99 %") && err.lines().count() == 1,
        "{err}"
    );
    // The report is written first: a script can look at it.
    let figures: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(figures["summary"]["agreement_percent"].as_f64().unwrap() < 99.0);
    assert_eq!(
        mapfilter(&["compare", s(&a), s(&b), "--min-agreement", "101"])
            .status
            .code(),
        Some(2)
    );
}
