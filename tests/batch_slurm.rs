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
