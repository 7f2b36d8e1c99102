//! Option strings from a fuzzer: kernels, image ops, class weights and sizes
//! never panic or abort the CLI; it exits 0, 1 or 2 (usage) only.
#![cfg(feature = "gdal")]

use proptest::prelude::*;
use std::process::Command;

const MAP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/classes_72x64.tif"
);

/// Strings shaped like option values: a known word, separators, numbers
/// (huge, tiny, negative, NaN) and noise.
fn option_text() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        Just("gaussian"),
        Just("box"),
        Just("disc"),
        Just("file"),
        Just("median"),
        Just("bilateral"),
        Just("scharr"),
        Just("oil"),
        Just("kernel"),
        Just("sharpen"),
        Just("x"),
        Just(""),
    ];
    let number = prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("1e308".to_string()),
        Just("1e-320".to_string()),
        Just("99999999999999999999".to_string()),
        Just("4294967297".to_string()),
        (0u32..600).prop_map(|n| n.to_string()),
        (0.0f64..100.0).prop_map(|f| format!("{f}")),
    ];
    let part = prop_oneof![number, "[ -~]{0,6}".prop_map(|s| s)];
    (
        word,
        prop::collection::vec(part, 0..4),
        prop_oneof![Just(":"), Just(","), Just("x")],
    )
        .prop_map(|(w, parts, sep)| {
            let mut s = w.to_string();
            for p in parts {
                s.push_str(sep);
                s.push_str(&p);
            }
            s
        })
}

fn exits_cleanly(args: &[&str]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("OUT", out.to_str().unwrap()))
        .collect();
    let o = Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(&args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    prop_assert!(
        matches!(o.status.code(), Some(0..=2)),
        "{args:?}: {:?} {stderr}",
        o.status
    );
    prop_assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn kernels(spec in option_text()) {
        exits_cleanly(&["smooth", MAP, "OUT", "-k", &spec, "-q", "--tile", "32"])?;
    }

    #[test]
    fn image_ops(spec in option_text()) {
        exits_cleanly(&["filter", MAP, "OUT", "--op", &spec, "-q"])?;
    }

    #[test]
    fn class_weights(spec in option_text()) {
        exits_cleanly(&["smooth", MAP, "OUT", "-k", "box:3", "--class-weights", &spec, "-q"])?;
    }

    #[test]
    fn policies(spec in option_text()) {
        for option in ["--ties", "--keep", "--no-vote", "--only-isolated", "--iterations"] {
            exits_cleanly(&["smooth", MAP, "OUT", "-k", "box:3", option, &spec, "-q"])?;
        }
    }

    #[test]
    fn sizes(spec in option_text()) {
        exits_cleanly(&["gen", "OUT", "--size", &spec, "-q"])?;
        exits_cleanly(&["bench", "--size", &spec, "--repeat", "1", "--warmup", "0", "--device", "host", "--kernel", "box:3"])?;
    }
}
