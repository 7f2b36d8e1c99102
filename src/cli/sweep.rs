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
    /// Check the config and list the runs (experiment, value, method, kernel, input) without running them.
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
        for (i, line) in config.list_runs()?.iter().enumerate() {
            println!("{:>4}  {line}", i + 1);
        }
        return Ok(());
    }
    let mut inputs = vec![args.config.clone()];
    inputs.extend(config.input.iter().map(PathBuf::from));
    let files = sweep::output::ResultFiles::prepare(&args.out, args.overwrite.overwrite, inputs)?;
    let sources = load_inputs(&config.input)?;
    let mut saved = Ok(());
    let result = sweep::run_on(&config, &sources, |event, i, n| {
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

/// The config's real inputs, each read into memory once (band 1, nodata kept).
#[cfg(feature = "gdal")]
fn load_inputs(paths: &[String]) -> Result<Vec<sweep::Source>> {
    paths
        .iter()
        .map(|p| {
            let path = std::path::Path::new(p);
            let mut raster = crate::gdal::class_raster::ClassRaster::open(path)?;
            let (w, h) = (raster.meta.width, raster.meta.height);
            crate::limits::check_in_memory(
                w,
                h,
                crate::limits::IN_MEMORY_RUN_BYTES,
                "a sweep input",
            )?;
            let mut data = vec![0u16; w * h];
            crate::io::ClassSource::read(&mut raster, tiles::Rect::new(0, 0, w, h), &mut data)?;
            let label = crate::job::compare::file_name(path);
            sweep::Source::new(
                label,
                crate::io::MemRaster::new(w, h, data),
                raster.nodata_code(),
            )
        })
        .collect()
}

#[cfg(not(feature = "gdal"))]
fn load_inputs(paths: &[String]) -> Result<Vec<sweep::Source>> {
    if !paths.is_empty() {
        crate::bail!(
            "a sweep on `input` rasters reads them with GDAL, which this build leaves out",
            hint = "run it with a build that has the gdal feature"
        );
    }
    Ok(Vec::new())
}
