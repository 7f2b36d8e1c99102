//! `mapfilter batch` as a SLURM job array on a one-node cluster brought up
//! on this machine by `scripts/slurm-local.sh` (4 shards; outputs
//! byte-identical to a single-process run). Needs root and slurm-wlm +
//! munge: without them it says so and passes, unless
//! `MAPFILTER_REQUIRE_SLURM` is set (CI sets it when running as root).

#![cfg(feature = "gdal")]
use std::process::Command;

#[test]
fn job_array_on_local_slurm_equals_single_run() {
    let root = unsafe { libc::geteuid() } == 0;
    let tools = ["slurmctld", "slurmd", "munged", "sbatch"].iter().all(|t| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !(root && tools) {
        assert!(
            std::env::var_os("MAPFILTER_REQUIRE_SLURM").is_none(),
            "MAPFILTER_REQUIRE_SLURM is set but this is not root with slurm-wlm and munge installed (root: {root}, tools: {tools})"
        );
        eprintln!("skipped: needs root and slurm-wlm + munge (scripts/setup.sh)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/slurm-local.sh"
        ))
        .arg(env!("CARGO_BIN_EXE_mapfilter"))
        .arg(work.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "slurm-local.sh failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("16 outputs byte-identical"));
}

/// Values of `#SBATCH` lines that could end the line, split it or run a
/// command when the script is submitted (a newline in --slurm-mem, a
/// batch directory with a newline, a space or a quote) are refused before
/// anything is planned; needs no SLURM.
#[test]
fn hostile_slurm_values_and_directories_are_refused_before_planning() {
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in.tif");
    let driver = gdal::DriverManager::get_driver_by_name("GTiff").unwrap();
    let mut ds = driver
        .create_with_band_type::<u8, _>(&input, 32, 32, 1)
        .unwrap();
    ds.set_geo_transform(&[0.0, 1.0, 0.0, 32.0, 0.0, -1.0])
        .unwrap();
    drop(ds);
    let plan = |dir: &std::path::Path, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mapfilter"))
            .args(["batch", "plan", input.to_str().unwrap(), "--out"])
            .arg(dir)
            .args(["-k", "box:3", "--device", "host", "--emit", "slurm"])
            .args(extra)
            .output()
            .unwrap()
    };
    let pwned = work.path().join("pwned");
    let cases: [(&str, &[&str]); 5] = [
        ("b1", &["--slurm-mem", "8G\ntouch pwned"]),
        ("b2", &["--slurm-time", "1:00\ntouch pwned"]),
        ("b3\ntouch pwned", &[]),
        ("b 4", &[]),
        ("b'5", &[]),
    ];
    for (name, extra) in cases {
        let dir = work.path().join(name);
        let out = plan(&dir, extra);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name:?} {extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!dir.join("plan.json").exists(), "{name:?}: planned anyway");
        assert!(!dir.join("batch.sbatch").exists());
    }
    // A plain directory gets a script that bash parses, with nothing but
    // its own commands.
    let dir = work.path().join("b6+x@y=z");
    let out = plan(&dir, &["--slurm-mem", "512M", "--slurm-time", "1-00:30:00"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = dir.join("batch.sbatch");
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(
        text.contains("#SBATCH --mem=512M\n#SBATCH --time=1-00:30:00\n"),
        "{text}"
    );
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(syntax.success(), "{text}");
    assert!(!pwned.exists());
}
