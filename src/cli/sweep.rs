//! `mapfilter sweep`: runs a sweep config (the thesis' experiments on
//! synthetic inputs) and writes CSV, JSON and an HTML report. GDAL-free, so it
//! is in every build, the `--no-default-features` one for GPU machines too.

use crate::error::Result;
use crate::sweep::{self, Config, Event};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Sweep config (TOML), e.g. benches/sweeps/smoke.toml.
    pub config: PathBuf,
    /// Directory for results.csv, results.json and report.html (created if missing).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Repeats per point instead of the config's.
    #[arg(long)]
    pub repeats: Option<usize>,
    /// Check the config and list the runs without running them.
    #[arg(long)]
    pub dry_run: bool,
    /// No line per finished run.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub overwrite: super::output_args::OverwriteArg,
}

pub fn run(args: SweepArgs) -> Result<()> {
    let mut config = Config::load(&args.config)?;
    if let Some(r) = args.repeats {
        config.repeats = r.max(1);
    }
    if args.dry_run {
        println!(
            "{}: {} experiments, {} runs of {} repeat(s)",
            config.title,
            config.experiments.len(),
            config.runs(),
            config.repeats
        );
        return Ok(());
    }
    let files = sweep::output::ResultFiles::prepare(&args.out, args.overwrite.overwrite)?;
    let mut saved = Ok(());
    let result = sweep::run(&config, |event, i, n| {
        if let Event::Checkpoint(so_far) = event {
            // Each finished experiment is on disk at once: a sweep cut short keeps them.
            if saved.is_ok() {
                saved = files.write(so_far).map(|_| ());
            }
            return;
        }
        if args.quiet {
            return;
        }
        match event {
            Event::Finished(r) => eprintln!(
                "[{i}/{n}] {} {}={} {}: {:.4} s, agreement {}",
                r.experiment,
                r.variable.name(),
                r.value,
                r.method,
                r.seconds,
                r.agreement_percent
                    .map_or("–".into(), |a| format!("{a:.4} %"))
            ),
            Event::Failed(f) => eprintln!(
                "[{i}/{n}] {} {}={} {}: FAILED: {}",
                f.experiment,
                f.variable.name(),
                f.value,
                f.method,
                f.error
            ),
            Event::Checkpoint(_) => {}
        }
    })?;
    saved?;
    let files = files.write(&result)?;
    if !args.quiet {
        for f in files {
            eprintln!("wrote {}", f.display());
        }
    }
    if !result.failures.is_empty() {
        crate::bail!(
            format!(
                "{} of {} runs failed (listed in results.json and report.html)",
                result.failures.len(),
                config.runs()
            ),
            hint = "the other runs' results were written"
        );
    }
    Ok(())
}
