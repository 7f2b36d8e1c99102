//! `mapfilter batch plan|run|report`: whole datasets as plans of seam-free
//! tasks (see [`crate::batch`]).

use super::compress_args::CompressArgs;
use super::fast_args::FastArgs;
use super::output_args::OverwriteArg;
use super::smooth::BorderArg;
use crate::bail;
use crate::batch::plan::{Plan, PlanRequest, SmoothOptions};
use crate::batch::run::{RunRequest, Share};
use crate::batch::{report, run as batch_run, slurm};
use crate::device::DeviceChoice;
use crate::error::{Error, Result};
use crate::io::DEFAULT_TILE;
use crate::method::naive::cl::Variant;
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
    /// Run a plan's tasks (all, a shard, or one), skipping those done; resumable.
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
    /// Kernel: gaussian:SIGMA, box:N, disc:RADIUS or file:PATH.
    #[arg(long, short)]
    kernel: String,
    /// Side of a gaussian kernel in pixels (odd).
    #[arg(long = "kernel-size", alias = "size", value_name = "PIXELS")]
    size: Option<usize>,
    /// Class weights as CODE:WEIGHT[,CODE:WEIGHT...].
    #[arg(long)]
    class_weights: Option<String>,
    /// Border handling of the whole mosaic: same or valid.
    #[arg(long, value_enum, default_value_t = BorderArg::Same)]
    border: BorderArg,
    /// Smooth nodata pixels too.
    #[arg(long)]
    fill_nodata: bool,
    /// Engine tile side in pixels.
    #[arg(long, default_value_t = DEFAULT_TILE)]
    tile: usize,
    #[command(flatten)]
    compression: CompressArgs,
    /// Where to run: auto, host, cpu, gpu, a device index, all (every GPU,
    /// else every OpenCL device) or a list such as 0,1 (the devices share the tiles).
    #[arg(long)]
    device: Option<DeviceChoice>,
    /// Device variant of the method.
    #[arg(long)]
    variant: Option<Variant>,
    #[command(flatten)]
    fast: FastArgs,
    #[command(flatten)]
    policies: super::policy_args::PolicyArgs,
    #[command(flatten)]
    overwrite: OverwriteArg,
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
    /// Run failed tasks again (by default they are listed and left).
    #[arg(long)]
    retry_failed: bool,
    /// Tasks in flight at once (default: 2, or 1 on one CPU).
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
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// The batch directory.
    dir: PathBuf,
    /// Also write one Cloud Optimized GeoTIFF of the outputs (MODE overviews).
    #[arg(long)]
    cog: Option<PathBuf>,
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
    let options = SmoothOptions {
        kernel: a.kernel.clone(),
        size: a.size,
        class_weights: a.class_weights.clone(),
        border: match a.border {
            BorderArg::Same => "same".into(),
            BorderArg::Valid => "valid".into(),
        },
        fill_nodata: a.fill_nodata,
        tile: a.tile,
        method: a.fast.method,
        rank: a.fast.rank,
        energy: a.fast.energy,
        terms: a.fast.terms,
        exact: a.fast.exact,
        device: a.device.as_ref().map(ToString::to_string),
        variant: a.variant.map(|v| v.name().to_string()),
        compress: a
            .compression
            .compress
            .to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default(),
        compress_level: a.compression.compress_level,
        ties: a.policies.ties.clone(),
        keep: a.policies.keep.clone(),
        no_vote: a.policies.no_vote.clone(),
        only_isolated: a.policies.only_isolated,
        iterations: a.policies.iterations,
    };
    // Every option is checked before anything is written.
    a.compression.compression()?;
    a.fast.spec(a.variant)?;
    let policies = a.policies.policies()?;
    if a.policies.confidence.is_some() {
        crate::bail!(
            "batch plan does not take --confidence",
            hint = "smooth each raster with its confidence raster: mapfilter smooth IN OUT --confidence CONF"
        );
    }
    // An exact method is; the others only with --exact.
    let exact = a.fast.method.is_exact() || a.fast.exact;
    crate::method::policy::check_method(&policies, exact, a.fast.method.name())?;
    let plan = Plan::make(&PlanRequest {
        inputs: &a.inputs,
        dir: &a.out,
        options,
        grid: a.grid,
        compare_with: a.compare_with.clone(),
        compare_sample: a.compare_sample,
        overwrite: a.overwrite.overwrite,
    })?;
    if let Some(Emit::Slurm) = a.emit {
        let dir = std::path::absolute(&a.out).unwrap_or(a.out.clone());
        std::fs::create_dir_all(dir.join("logs"))
            .map_err(|e| Error::new(format!("cannot make {}/logs: {e}", dir.display())))?;
        let exe = std::env::current_exe()
            .map_err(|e| Error::new(format!("cannot tell where mapfilter is: {e}")))?;
        let text = slurm::script(
            &dir,
            &exe,
            &slurm::SlurmOptions {
                shards: a.shards.min(plan.tasks.len()).max(1),
                parallel: a.slurm_parallel,
                cpus_per_task: a.slurm_cpus,
                mem: a.slurm_mem.clone(),
                time: a.slurm_time.clone(),
                gpus: match (a.slurm_gpus, &a.device) {
                    (Some(n), _) => n,
                    (None, Some(DeviceChoice::Gpu | DeviceChoice::Index(_))) => 1,
                    _ => 0,
                },
            },
        );
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
        (None, None) => Share::from_env(|k| std::env::var(k).ok())?.unwrap_or(Share::All),
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = a.jobs.unwrap_or(if cpus > 1 { 2 } else { 1 });
    if jobs == 0 {
        bail!("--jobs 0 runs nothing", hint = "give --jobs 1 or more");
    }
    let stale_after = humantime::parse_duration(a.stale_after.trim())
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::new(format!(
                "--stale-after {}: not a duration of more than 0",
                a.stale_after
            ))
            .hint("give a number with a unit, e.g. --stale-after 10m or 90s")
        })?;
    let s = batch_run::run(&RunRequest {
        dir: &a.dir,
        share,
        retry_failed: a.retry_failed,
        jobs,
        quiet: a.quiet,
        stale_after,
    })?;
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
    }
    if !s.failed.is_empty() {
        for (id, e) in &s.failed {
            eprintln!("failed task {id}: {e}");
        }
        let ids: Vec<String> = s.failed.iter().map(|f| f.0.to_string()).collect();
        bail!(
            format!("{} task(s) failed: {}", s.failed.len(), ids.join(", ")),
            hint = "fix their inputs and run again with --retry-failed; `batch report` lists them"
        );
    }
    Ok(())
}

fn report_cmd(a: ReportArgs) -> Result<()> {
    let plan = Plan::load(&a.dir)?;
    // The COG is made from the batch: it replaces none of its files (the
    // plan, an input tile through the mosaic VRT, a task's output).
    let read: Vec<PathBuf> = std::iter::once(a.dir.join(crate::batch::plan::PLAN_FILE))
        .chain(plan.mosaics.iter().map(|m| a.dir.join(&m.source)))
        .chain(
            plan.tasks
                .iter()
                .flat_map(|t| [a.dir.join(&t.input), a.dir.join(&t.output)]),
        )
        .collect();
    let inputs: Vec<&Path> = read.iter().map(PathBuf::as_path).collect();
    let cog = a
        .cog
        .as_deref()
        .map(|p| Target::check(p, a.overwrite.overwrite, &inputs))
        .transpose()?;
    let r = report::write(&a.dir, &plan, cog.as_ref())?;
    println!(
        "{} of {} tasks done, {} failed, {} pending; report in {}",
        r.done,
        r.tasks,
        r.failed.len(),
        r.pending.len(),
        a.dir.join("report.html").display()
    );
    Ok(())
}
