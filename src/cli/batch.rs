//! `mapfilter batch plan|run|report`: whole datasets as plans of seam-free
//! tasks (see [`crate::batch`]).

use super::output_args::OverwriteArg;
use crate::bail;
use crate::batch::plan::{Plan, PlanRequest};
use crate::batch::request::{Spawner, WorkerRole};
use crate::batch::run::RunRequest;
use crate::batch::share::Share;
use crate::batch::{report, run as batch_run, slurm};
use crate::device::DeviceChoice;
use crate::error::{Error, Result};
use crate::output::Target;
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct BatchArgs {
    #[command(subcommand)]
    command: BatchCommand,
}

#[derive(Subcommand, Debug)]
enum BatchCommand {
    /// Plan a dataset: DIR/plan.json (one task per output tile) and DIR/tasks.geojson.
    Plan(Box<PlanArgs>),
    /// Run a plan's tasks (all, a shard, or one), skipping those done; resumable. With
    /// --mmu, the run that smooths a mosaic's last task sieves the mosaic.
    Run(RunArgs),
    /// Sum a batch up: DIR/report.json, DIR/report.html, DIR/mosaic.vrt (and --cog).
    Report(ReportArgs),
}

#[derive(Args, Debug)]
struct PlanArgs {
    /// Input rasters: files, directories, globs ('tiles/*.tif'), @list.txt, VRTs.
    /// Rasters on one grid form one mosaic; tasks read their halo from it.
    #[arg(required = true)]
    inputs: Vec<String>,
    /// The batch directory (plan, state, outputs under DIR/out/).
    #[arg(long)]
    out: PathBuf,
    /// Cut every single-raster mosaic into N x N tasks.
    #[arg(long, value_name = "N")]
    grid: Option<usize>,
    /// Also run the exact baseline in every task and report agreement and kappa (naive).
    #[arg(long, value_name = "METHOD")]
    compare_with: Option<String>,
    /// With --compare-with: compare only N tasks, spread over the plan (default: all).
    #[arg(long, value_name = "N")]
    compare_sample: Option<usize>,
    /// Also write a job script: slurm (DIR/batch.sbatch, one array task per shard).
    #[arg(long, value_enum)]
    emit: Option<Emit>,
    /// slurm: array tasks (shards).
    #[arg(long, default_value_t = 16)]
    shards: usize,
    /// slurm: array tasks running at once (the %K of --array).
    #[arg(long, default_value_t = 8)]
    slurm_parallel: usize,
    /// slurm: CPUs per array task.
    #[arg(long, default_value_t = 4)]
    slurm_cpus: usize,
    /// slurm: memory per array task.
    #[arg(long, default_value = "8G")]
    slurm_mem: String,
    /// slurm: time limit per array task.
    #[arg(long, default_value = "04:00:00")]
    slurm_time: String,
    /// slurm: GPUs per array task (--gres=gpu:N). Default: 1 with --device gpu
    /// or a device index, else none.
    #[arg(long, value_name = "N")]
    slurm_gpus: Option<usize>,
    #[command(flatten)]
    smoothing: super::smoothing_args::SmoothingArgs,
    /// Say what the plan would be (tasks, mosaics, kernel in pixels, method, tasks in
    /// flight on this machine) and stop: nothing is written and no pixel is read.
    #[arg(long, conflicts_with = "emit")]
    dry_run: bool,
    /// --dry-run plus the engine's time: the method runs (devices started) on a synthetic
    /// sample of whole tiles of 16 classes, scaled to the tasks' pixels. No input pixel is
    /// read and nothing is written.
    #[arg(long, conflicts_with = "emit")]
    estimate: bool,
    #[command(flatten)]
    overwrite: OverwriteArg,
    /// The band of class codes in every input (-b), its nodata (--src-nodata) and the
    /// outputs' (--dst-nodata), as `smooth` takes them.
    #[command(flatten)]
    bands: super::input_args::SmoothInputArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Emit {
    Slurm,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The batch directory.
    dir: PathBuf,
    /// Run shard I of N (tasks whose number modulo N is I). Default: from
    /// SLURM_ARRAY_TASK_ID/COUNT or JOB_COMPLETION_INDEX + MAPFILTER_SHARDS, else all.
    #[arg(long, conflicts_with = "task")]
    shard: Option<String>,
    /// Run this one task.
    #[arg(long)]
    task: Option<usize>,
    /// Run failed tasks again (by default they are listed and left; a
    /// failure of the environment, such as a full disk, is always retried).
    #[arg(long)]
    retry_failed: bool,
    /// Do not wait for tasks held by other live runs: exit with code 75
    /// (EX_TEMPFAIL) if any is left, so a scheduler can run this again.
    #[arg(long)]
    no_wait: bool,
    /// Exit 0 even when tasks of the share failed, are done without part
    /// of their halo (degraded) or, with --no-wait, are held by other runs.
    #[arg(long)]
    allow_incomplete: bool,
    /// Tasks in flight at once (default: sized to the node: a task per 4
    /// cores, with GPUs or without, within the memory available). Each
    /// task computes on a pool of its own: the cores (or
    /// RAYON_NUM_THREADS) its GDAL codecs leave, shared out among the tasks.
    #[arg(long)]
    jobs: Option<usize>,
    /// No progress bar and no lines per task.
    #[arg(long, short)]
    quiet: bool,
    /// Take over a claim (of any host) not refreshed for this long, e.g.
    /// 10m, 90s, 1h. Claims are refreshed every 30 s, or a quarter of this if
    /// less; the hosts' clocks must agree to well within it.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    stale_after: String,
    /// Worker processes (default: one per GPU when the plan's device is
    /// `all` and NVIDIA's driver shows two GPUs or more, each process
    /// seeing its own GPU; else 1). Each plans its tasks in flight and
    /// threads for its share of the cores and memory.
    #[arg(long, value_name = "N")]
    processes: Option<usize>,
    /// Internal: this process is worker I of N of a run (prints its
    /// summary as JSON on standard output).
    #[arg(long, value_name = "I/N", hide = true, requires = "worker_device")]
    worker: Option<String>,
    /// Internal: the device a worker computes on.
    #[arg(long, value_name = "DEVICE", hide = true, requires = "worker")]
    worker_device: Option<String>,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// The batch directory.
    dir: PathBuf,
    /// Also write one Cloud Optimized GeoTIFF of the outputs (MODE overviews).
    #[arg(long)]
    cog: Option<PathBuf>,
    /// Exit 0 even when tasks are pending, failed or degraded (the report is
    /// written either way; without this such a batch exits 1).
    #[arg(long)]
    allow_incomplete: bool,
    /// Unit of the class areas: ha, km2, m2 (mosaics in metres), or auto (by size).
    #[arg(long, default_value = "auto")]
    area_unit: String,
    /// Labelled reference points (GeoPackage, CSV with x and y, any OGR point source): the mosaic's accuracy and class areas with 95 % intervals.
    #[arg(long, value_name = "POINTS", requires = "label")]
    reference: Option<PathBuf>,
    /// The field of the --reference points holding the reference class codes.
    #[arg(long, value_name = "FIELD", requires = "reference")]
    label: Option<String>,
    /// The strata the reference sample was drawn from (default: the input mosaic, as `mapfilter sample` on it draws them).
    #[arg(long, value_name = "RASTER", requires = "reference")]
    strata: Option<PathBuf>,
    #[command(flatten)]
    palette: super::palette_arg::PaletteArg,
    #[command(flatten)]
    overwrite: OverwriteArg,
}

pub fn run(args: BatchArgs) -> Result<()> {
    match args.command {
        BatchCommand::Plan(a) => plan(*a),
        BatchCommand::Run(a) => run_tasks(a),
        BatchCommand::Report(a) => report_cmd(a),
    }
}

fn plan(a: PlanArgs) -> Result<()> {
    // Every option is checked before anything is written.
    let options = a.smoothing.plan_options(&a.bands)?;
    // The job script's values are checked before anything is written.
    let dir = std::path::absolute(&a.out).unwrap_or(a.out.clone());
    let slurm_options = |tasks: usize| slurm::SlurmOptions {
        shards: a.shards.min(tasks).max(1),
        parallel: a.slurm_parallel,
        cpus_per_task: a.slurm_cpus,
        mem: a.slurm_mem.clone(),
        time: a.slurm_time.clone(),
        gpus: match (a.slurm_gpus, &a.smoothing.device) {
            (Some(n), _) => n,
            (None, Some(DeviceChoice::Gpu | DeviceChoice::Index(_))) => 1,
            _ => 0,
        },
    };
    if a.emit.is_some() {
        slurm::check(&dir, &slurm_options(1))?;
    }
    let plan = Plan::make(&PlanRequest {
        inputs: &a.inputs,
        dir: &a.out,
        options,
        grid: a.grid,
        compare_with: a.compare_with.clone(),
        compare_sample: a.compare_sample,
        overwrite: a.overwrite.overwrite,
        allow_subpixel: a.smoothing.allow_subpixel,
        dry_run: a.dry_run || a.estimate,
    })?;
    if a.dry_run || a.estimate {
        println!("{}", dry_run_text(&plan, &a.out, a.estimate)?);
        return Ok(());
    }
    if let Some(Emit::Slurm) = a.emit {
        std::fs::create_dir_all(dir.join("logs"))
            .map_err(|e| Error::io(format!("cannot make {}/logs: {e}", dir.display())))?;
        let exe = std::env::current_exe()
            .map_err(|e| Error::io(format!("cannot tell where mapfilter is: {e}")))?;
        let text = slurm::script(&dir, &exe, &slurm_options(plan.tasks.len()))?;
        let target = Target::check(&dir.join("batch.sbatch"), true, &[])?;
        crate::output::text::write(&crate::output::Destination::File(target), &text)?;
        eprintln!("wrote {}", dir.join("batch.sbatch").display());
    }
    eprintln!(
        "planned {} tasks over {} mosaic(s) in {}",
        plan.tasks.len(),
        plan.mosaics.len(),
        a.out.display()
    );
    Ok(())
}

fn run_tasks(a: RunArgs) -> Result<()> {
    let share = match (&a.shard, a.task) {
        (Some(s), _) => Share::parse_shard(s)?,
        (None, Some(k)) => Share::Task(k),
        (None, None) => Share::from_env(|k| crate::switches::environment().job_array_var(k))?
            .unwrap_or(Share::All),
    };
    let jobs = a.jobs;
    if jobs == Some(0) {
        bail!(
            usage,
            "--jobs 0 runs nothing",
            hint = "give --jobs 1 or more"
        );
    }
    let stale_after = humantime::parse_duration(a.stale_after.trim())
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::usage(format!(
                "--stale-after {}: not a duration of more than 0",
                a.stale_after
            ))
            .hint("give a number with a unit, e.g. --stale-after 10m or 90s")
        })?;
    if a.processes == Some(0) {
        bail!(
            usage,
            "--processes 0 runs nothing",
            hint = "give --processes 1 or more"
        );
    }
    let worker = a
        .worker
        .as_deref()
        .map(|w| worker_role(w, a.worker_device.as_deref()))
        .transpose()?;
    let command = |role: &WorkerRole| worker_command(&a, role);
    let spawner = Spawner {
        processes: a.processes,
        command: &command,
    };
    let s = batch_run::run(&RunRequest {
        dir: &a.dir,
        share,
        retry_failed: a.retry_failed,
        jobs,
        quiet: a.quiet,
        stale_after,
        // Workers leave to their siblings what they hold; the parent
        // waits for what another run holds.
        wait: !a.no_wait && worker.is_none(),
        only: None,
        worker: worker.as_ref(),
        spawn: Some(&spawner),
    })?;
    if worker.is_some() {
        // The parent reads this line and says what the run did.
        let line = serde_json::to_string(&s)
            .map_err(|e| Error::io(format!("cannot write the worker's summary: {e}")))?;
        println!("{line}");
        return Ok(());
    }
    if !a.quiet {
        eprintln!(
            "batch: {} tasks in this share: {} done now ({:.1} Mpx in {:.2} s), {} done before, {} failed, {} held by another run",
            s.selected,
            s.done_now,
            s.pixels_now as f64 / 1e6,
            s.seconds,
            s.already_done,
            s.failed.len(),
            s.busy.len()
        );
        for device in &s.devices {
            eprintln!("batch: device {device}");
        }
        for m in &s.sieved {
            eprintln!(
                "batch: minimum mapping unit of mosaic {}: {} px, {} pixels changed ({} of {} patches merged) over its {} tasks in {:.2} s",
                m.mosaic, m.threshold, m.pixels_changed, m.merged, m.polygons, m.tasks, m.seconds
            );
        }
        if !s.awaiting_sieve.is_empty() {
            eprintln!(
                "batch: {} task(s) smoothed; their mosaic is sieved (the minimum mapping unit) and their outputs written by the run that smooths its last task (or by `batch run` again)",
                s.awaiting_sieve.len()
            );
        }
    }
    for f in &s.failed {
        match f.kind {
            Some(kind) => eprintln!("failed task {} ({kind}): {}", f.task, f.error),
            None => eprintln!("failed task {}: {}", f.task, f.error),
        }
    }
    let incomplete = run_outcome(&s);
    match incomplete {
        Some(e) if a.allow_incomplete => {
            eprintln!("batch: incomplete (--allow-incomplete): {e}");
            Ok(())
        }
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `--worker I/N` with `--worker-device D`.
fn worker_role(text: &str, device: Option<&str>) -> Result<WorkerRole> {
    let Share::Shard { index, count } = Share::parse_shard(text)? else {
        unreachable!("parse_shard gives a shard");
    };
    Ok(WorkerRole {
        index,
        count,
        device: DeviceChoice::from_arg(device)?,
    })
}

/// The command line of worker `role` of this run: this binary, `batch run`
/// with the same directory, share and options (its share of `--jobs`).
fn worker_command(a: &RunArgs, role: &WorkerRole) -> std::process::Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| "mapfilter".into());
    let mut c = std::process::Command::new(exe);
    for _ in 0..super::logging::verbosity() {
        c.arg("-v");
    }
    c.arg("batch").arg("run").arg(&a.dir);
    c.arg("--worker")
        .arg(format!("{}/{}", role.index, role.count))
        .arg("--worker-device")
        .arg(role.device.to_string())
        .arg("--stale-after")
        .arg(&a.stale_after);
    if let Some(shard) = &a.shard {
        c.arg("--shard").arg(shard);
    }
    if let Some(task) = a.task {
        c.arg("--task").arg(task.to_string());
    }
    if let Some(jobs) = a.jobs {
        c.arg("--jobs").arg(jobs.div_ceil(role.count).to_string());
    }
    if a.retry_failed {
        c.arg("--retry-failed");
    }
    if a.quiet {
        c.arg("--quiet");
    }
    c
}

/// Exit code of `batch run --no-wait` when tasks are held by other runs
/// (`EX_TEMPFAIL` of sysexits.h: try again later).
pub const EXIT_HELD: i32 = 75;

/// Why a run's share is not complete, as the error it exits with: failed
/// tasks (1), tasks held by others with --no-wait (75), degraded tasks (1).
fn run_outcome(s: &batch_run::RunSummary) -> Option<Error> {
    let list = |ids: &mut dyn Iterator<Item = usize>| {
        ids.map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
    };
    if !s.failed.is_empty() {
        let ids = list(&mut s.failed.iter().map(|f| f.task));
        let cause = format!("{} task(s) failed: {ids}", s.failed.len());
        // A failure of the environment is retried by a plain rerun; one of
        // the inputs needs them fixed first.
        let hint = if s.failed.iter().all(|f| f.environment) {
            "the disk or the batch's folders failed (full, missing or not writable): fix that and run again"
        } else {
            "fix their inputs and run again with --retry-failed; `batch report` lists them"
        };
        return Some(Error::incomplete(cause).hint(hint));
    }
    if let Some((m, error)) = s.sieve_failed.first() {
        return Some(
            Error::incomplete(format!(
                "the minimum mapping unit of mosaic {m} failed, so its outputs are not all written: {error}"
            ))
            .hint("fix the cause and run again: the smoothed tasks are kept, and the mosaic is sieved again"),
        );
    }
    if !s.busy.is_empty() {
        let cause = format!(
            "{} task(s) held by other runs: {}",
            s.busy.len(),
            list(&mut s.busy.iter().copied())
        );
        return Some(
            Error::incomplete(cause)
                .hint("run again later (or without --no-wait to wait for them)")
                .exit_code(EXIT_HELD),
        );
    }
    if !s.degraded.is_empty() {
        let cause = format!(
            "{} task(s) done without part of their halo (degraded): {}",
            s.degraded.len(),
            list(&mut s.degraded.iter().copied())
        );
        return Some(Error::incomplete(cause).hint(
            "a neighbouring input could not be read: fix it and run again with --retry-failed",
        ));
    }
    None
}

fn report_cmd(a: ReportArgs) -> Result<()> {
    let plan = Plan::load(&a.dir)?;
    // The COG never replaces a file the batch reads or wrote: an input, a
    // mosaic, a task's output.
    let mut files = plan.files(&a.dir);
    files.push(a.dir.join(crate::batch::plan::PLAN_FILE));
    let files: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let cog = a
        .cog
        .as_deref()
        .map(|p| Target::check(p, a.overwrite.overwrite, &files))
        .transpose()?;
    let options = report::ReportOptions {
        area_unit: a.area_unit.clone(),
        reference: a
            .reference
            .clone()
            .map(|p| (p, a.label.clone().unwrap_or_default(), a.strata.clone())),
        palette: a.palette.read()?,
    };
    let r = report::write(&a.dir, &plan, cog.as_ref(), &options)?;
    println!(
        "{} of {} tasks done, {} failed, {} pending, {} degraded; report in {}",
        r.done,
        r.tasks,
        r.failed.len(),
        r.pending.len(),
        r.degraded.len(),
        a.dir.join("report.html").display()
    );
    if let Some(mmu) = &r.mmu {
        println!(
            "minimum mapping unit {} ({}-connected): {} pixels changed by the sieve of {} of {} mosaic(s)",
            mmu.given,
            mmu.connectivity,
            mmu.pixels_changed,
            mmu.sieved.len(),
            r.mosaics.len()
        );
    }
    let complete = r.failed.is_empty() && r.pending.is_empty() && r.degraded.is_empty();
    if complete || a.allow_incomplete {
        return Ok(());
    }
    bail!(
        incomplete,
        format!(
            "the batch is incomplete: {} failed, {} pending, {} degraded of {} tasks",
            r.failed.len(),
            r.pending.len(),
            r.degraded.len(),
            r.tasks
        ),
        hint = "run it (batch run) until every task is done, or give --allow-incomplete"
    );
}

/// What `batch plan --dry-run` prints: the plan as it would be written.
fn dry_run_text(plan: &Plan, dir: &Path, estimate: bool) -> Result<String> {
    let settings = plan.options.settings()?;
    let pixels: u64 = plan.tasks.iter().map(|t| t.pixels()).sum();
    let largest = plan.tasks.iter().map(|t| t.pixels()).max().unwrap_or(0);
    let mut text = format!(
        "dry run: nothing is written to {} and no pixel is read\n{} tasks over {} mosaic(s), {:.1} Mpx in all (the largest task {:.1} Mpx)",
        dir.display(),
        plan.tasks.len(),
        plan.mosaics.len(),
        pixels as f64 / 1e6,
        largest as f64 / 1e6
    );
    for (m, mosaic) in plan.mosaics.iter().enumerate() {
        let classes = if mosaic.classes.every_code {
            "every code but nodata (no scan)".to_string()
        } else {
            "scanned when planned".to_string()
        };
        text += &format!(
            "\nmosaic {m}: {} ({} raster(s)), {}x{} → output {}x{}; classes: {classes}",
            mosaic.source.display(),
            mosaic.members.len(),
            mosaic.width,
            mosaic.height,
            mosaic.output_width,
            mosaic.output_height
        );
    }
    let k = settings.kernel.size();
    text += &format!("\nkernel: {} → {k}x{k} px", plan.options.kernel);
    if let Some(c) = &plan.options.kernel_conversion {
        text += &format!("\n{c}");
    }
    if let Some(mmu) = &plan.options.mmu {
        for (m, mosaic) in plan.mosaics.iter().enumerate() {
            text += &format!(
                "\nminimum mapping unit of mosaic {m}: {} → {} px ({}-connected), sieved as one raster once its tasks are smoothed",
                mmu.given,
                mosaic.mmu_pixels.unwrap_or(0),
                mmu.connectivity
            );
        }
    }
    let members = crate::method::select::per_member(
        &settings.method.spec,
        &settings.method.device,
        &settings.kernel,
    )?;
    let gpus: usize = members.iter().map(|m| m.gpus()).sum();
    let names: Vec<String> = members.iter().map(|m| m.name()).collect();
    let node = crate::batch::workers::Node::here();
    let workers = node.workers(plan.tasks.len());
    text += &format!(
        "\nmethod: {}\nbatch run here (defaults): {} task(s) in flight, {} compute threads each ({} cores, {} GPU(s) computing)",
        names.join(", "),
        workers.jobs,
        workers.task_threads,
        node.cpus,
        gpus
    );
    if let (true, Some(first)) = (estimate, members.first()) {
        text += "\n";
        text += &estimate_text(
            plan,
            &settings.kernel,
            first.as_ref(),
            members.len(),
            pixels,
        )?;
    }
    Ok(text)
}

/// The batch's engine time, from `method` (the first of `devices` that
/// share the tasks) timed on a synthetic sample: the dry run reads no
/// pixel, so 16 classes stand in for the mosaics' own.
fn estimate_text(
    plan: &Plan,
    kernel: &crate::kernel::Kernel,
    method: &dyn crate::method::ClassSmoother,
    devices: usize,
    pixels: u64,
) -> Result<String> {
    // The sample takes the shape of the largest task (as many of its
    // tiles as the engine runs at once); the time scales to every task.
    let largest = plan.tasks.iter().max_by_key(|t| t.pixels());
    let (width, height) = largest.map_or((1, 1), |t| (t.window[2], t.window[3]));
    let run = crate::job::estimate::RunShape {
        width,
        height,
        tile: plan
            .options
            .tile
            .unwrap_or_else(|| crate::engine::default_tile(method)),
        classes: 16,
    };
    let mut e = crate::job::estimate::estimate(method, kernel, run)?;
    e.run_pixels = pixels;
    let mut text = e.describe();
    if devices > 1 {
        text += &format!(
            "; {devices} devices share the tasks: about {:.2} s each",
            e.engine_secs() / devices as f64
        );
    }
    Ok(text)
}
