//! `mapfilter smooth`: class smoothing of one raster into a new GeoTIFF.

use super::output_args::OverwriteArg;
use super::timings::Timings;
use crate::batch::workers::Node;
use crate::device::DeviceChoice;
use crate::engine::SmoothJob;
use crate::error::Result;
use crate::gdal::confidence::ConfidenceSpec;
use crate::job::observer::Observer;
use crate::job::smooth::{self as job, Classes, MethodChoice, SmoothSpec};
use crate::method::ClassSmoother;
use crate::method::bridged::{self, Bridged};
use crate::method::starting::Starting;
use crate::output::{Destination, Target};
use crate::progress::Progress;
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;
use tiles::Border;

#[derive(Args, Debug)]
pub struct SmoothArgs {
    /// Input class raster (Byte or UInt16 codes; band 1, or -b BAND), any format GDAL reads.
    pub input: PathBuf,
    /// Output GeoTIFF (written to a temp file beside it, renamed on success;
    /// an existing file only with --overwrite).
    pub output: PathBuf,
    #[command(flatten)]
    pub smoothing: super::smoothing_args::SmoothingArgs,
    /// Print the method chosen (and, for auto, the cost model's reasons), then run the
    /// job; --dry-run prints what would run without running it.
    #[arg(long)]
    pub explain: bool,
    /// Say what would run and stop: the input's header, the kernel in pixels (and metres),
    /// the output's size and tiles, the method chosen and why (auto: its cost model, for
    /// the classes the header names), the engine's memory. No pixel is read and nothing
    /// is written.
    #[arg(long, conflicts_with_all = ["report", "baseline", "json", "timings"])]
    pub dry_run: bool,
    /// --dry-run plus the engine's time: the method runs (devices started) on a synthetic
    /// sample of whole tiles with the classes expected, scaled to the output's pixels.
    /// The input's pixels are still not read, and nothing is written.
    #[arg(long, conflicts_with_all = ["report", "baseline", "json", "timings"])]
    pub estimate: bool,
    /// Print one line per stage (setup, open, scan or classes, method: what was left of the devices' start, engine, finish, and the output's own thread) with its time to stderr,
    /// and on several devices one line per device (tiles, busy time, kernel time).
    #[arg(long)]
    pub timings: bool,
    /// No progress bar and no summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also run the exact baseline and write a report (HTML; .json/.md by extension; `-`: standard output): run times, speed-up, agreement, confusion, maps.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// With --report: an exact output (`--method naive`, same input, kernel and border) to compare with instead of running the baseline again; checked to be on the output's grid.
    #[arg(long, requires = "report", value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    #[command(flatten)]
    pub overwrite: OverwriteArg,
    #[command(flatten)]
    pub bands: super::input_args::SmoothInputArgs,
    #[command(flatten)]
    pub json: super::summary::JsonArg,
}

/// Where a smoothing writes: the output, the report and the JSON summary.
struct Outputs<'a> {
    target: Target,
    report: Option<crate::job::compare::ReportTarget<'a>>,
    json: super::summary::JsonSummary,
}

/// Checks every output before any work: none may replace a file the run
/// reads (input, baseline, confidence, kernel file), nor another output.
fn check_outputs<'a>(
    args: &'a SmoothArgs,
    built: &super::kernel_args::BuiltKernel,
    confidence: Option<&ConfidenceSpec>,
) -> Result<Outputs<'a>> {
    let overwrite = args.overwrite.overwrite;
    // Every file the run reads: no output may replace one.
    let mut inputs = vec![args.input.as_path()];
    inputs.extend(args.baseline.as_deref());
    inputs.extend(confidence.map(|c| c.path.as_path()));
    inputs.extend(built.file.as_deref());
    let target = Target::check(&args.output, overwrite, &inputs)?;
    let report = args
        .report
        .as_deref()
        .map(|p| crate::job::compare::ReportTarget::check(p, &target, overwrite, &inputs))
        .transpose()?;
    let json = super::summary::JsonSummary::check(
        &args.json,
        overwrite,
        &inputs,
        &[&target],
        report
            .as_ref()
            .is_some_and(|r| r.dest == Destination::Stdout),
    )?;
    Ok(Outputs {
        target,
        report,
        json,
    })
}

/// The line that says what was written, and the method's own summary.
/// Refuses `--baseline` before any work unless it lies on the output's
/// grid, so a refusal leaves no output behind.
fn check_baseline(
    baseline: &std::path::Path,
    args: &SmoothArgs,
    kernel: &crate::kernel::Kernel,
) -> Result<()> {
    let input =
        crate::gdal::class_raster::ClassRaster::open_with(&args.input, args.bands.band.choice())?;
    crate::job::compare::check_baseline_grid(baseline, &input, kernel, args.smoothing.border.into())
}

fn say_written(
    output: &std::path::Path,
    (width, height): (usize, usize),
    job: &SmoothJob,
    method: &dyn ClassSmoother,
    stats: &crate::engine::RunStats,
) {
    let k = job.kernel.size();
    eprintln!(
        "wrote {} ({width}x{height}, {} classes, kernel {k}x{k}, {} in {:.3} s, {} tiles)",
        output.display(),
        stats.classes_present,
        method.name(),
        stats.totals.wall.as_secs_f64(),
        stats.totals.tiles
    );
    if let Some(line) = method.summary() {
        eprintln!("{}: {line}", method.name());
    }
}

pub fn run(args: SmoothArgs) -> Result<()> {
    let started = Instant::now();
    if DeviceChoice::or_env(args.smoothing.device.clone())?.is_first_gpu() {
        crate::switches::show_nvidia_first_gpu_only();
    }
    let mut observer = CliObserver {
        timings: Timings::new(args.timings),
        quiet: args.quiet,
        explain: None,
    };
    let built = super::kernel_args::build(
        &args.smoothing.kernel,
        args.smoothing.kernel_size,
        &args.input,
        args.smoothing.allow_subpixel,
    )?;
    if let (true, Some(c)) = (args.explain, &built.conversion) {
        eprintln!("{c}");
    }
    let kernel = built.kernel.clone();
    let weights = args.smoothing.weights()?;
    let policies = args.smoothing.policies.policies()?;
    let confidence = args.smoothing.policies.confidence()?;
    let choice = args.smoothing.choice()?;
    observer.explain = args.explain.then(|| choice.clone());
    let dry_run = args.dry_run || args.estimate;
    let gpus = expected_gpus(&choice.device).filter(|_| !dry_run);
    let method = start_method(&choice, &kernel, &policies, confidence.is_some(), gpus)?;
    if dry_run {
        let text = self::dry_run(&args, &built, &choice, method.get()?, &policies)?;
        println!("{text}");
        return Ok(());
    }
    let Outputs {
        target,
        report,
        json,
    } = check_outputs(&args, &built, confidence.as_ref())?;
    let smoothing = &args.smoothing;
    if let Some(baseline) = &args.baseline {
        check_baseline(baseline, &args, &kernel)?;
    }
    let mut mmu = smoothing
        .mmu
        .plan(&args.input, &target, smoothing.allow_subpixel)?;
    let spec = SmoothSpec {
        input: args.input.clone(),
        band: args.bands.band.choice(),
        dst_nodata: args.bands.dst_nodata,
        target: mmu.target().clone(),
        kernel,
        weights,
        border: args.smoothing.border.into(),
        fill_nodata: args.smoothing.fill_nodata,
        tile: args.smoothing.tile,
        compression: args.smoothing.compression.compression()?,
        classes: Classes::Auto {
            need_present: args.report.is_some() || args.explain || args.json.json.is_some(),
        },
        window: None,
        policies,
        confidence: confidence.clone(),
    };
    let bridged = bridge(&choice, &spec, args.explain, gpus, &method)?;
    let done = run_job(&spec, &method, bridged.as_ref(), gpus, &mut observer)?;
    // The bridge (where there is one) speaks for the devices and counts
    // the tiles its host computed too.
    let method: &dyn ClassSmoother = match &bridged {
        Some(bridged) => bridged,
        None => method.get()?,
    };
    for share in method.take_shares() {
        observer.timings.device(&share);
    }
    let (width, height, job, stats) = (done.width, done.height, done.job, done.stats);
    let compression = args.smoothing.compression.compression()?;
    let mmu_rows = super::sieve::apply_mmu(&mut mmu, &target, compression, args.quiet)?;
    if let Some(report) = &report {
        // With --mmu the report compares the smoothing before it with the
        // exact baseline (also before it), and says what the MMU changed.
        let mut settings = built.settings();
        settings.extend(mmu_rows);
        let run = crate::job::compare::SmoothRun {
            input: &args.input,
            band: args.bands.band.choice(),
            kernel: settings,
            output: mmu.smoothed().unwrap_or(&args.output),
            output_name: &args.output,
            job: &job,
            method,
            method_label: &choice.label(),
            stats: &stats,
            quiet: args.quiet,
            confidence: confidence.as_ref(),
            baseline: args.baseline.as_deref(),
        };
        crate::job::compare::smooth_report(&run, report)?;
    }
    let facts = super::summary::SmoothFacts {
        input: &args.input,
        band: args.bands.band.band.unwrap_or(1),
        output: &args.output,
        report: args.report.as_deref(),
        device: args.smoothing.device.as_ref().map(ToString::to_string),
        kernel: &built,
        method_label: &choice.label(),
        method,
        job: &job,
        stats: &stats,
        size: (width, height),
        seconds: started.elapsed().as_secs_f64(),
    };
    json.write("smooth", facts.fields())?;
    if !args.quiet {
        say_written(&args.output, (width, height), &job, method, &stats);
    }
    Ok(())
}

/// The command line's view of a smoothing job: `--timings` lines, the
/// progress bar unless `--quiet`, and `--explain`'s text.
struct CliObserver {
    timings: Timings,
    quiet: bool,
    /// `--explain`: the method as named.
    explain: Option<MethodChoice>,
}

impl Observer for CliObserver {
    fn stage(&mut self, name: &str) {
        self.timings.stage(name);
    }

    fn background(&mut self, name: &str, from: Instant, to: Instant) {
        self.timings.background(name, from, to);
    }

    fn busy(&mut self, name: &str, time: std::time::Duration) {
        self.timings.busy(name, time);
    }

    fn before_engine(&mut self, job: &SmoothJob, method: &dyn ClassSmoother) -> Result<()> {
        if let Some(choice) = &self.explain {
            let text = explain(choice, job, method)?;
            eprintln!("{text}");
        }
        Ok(())
    }

    fn progress(&self, label: &str) -> Progress {
        Progress::new(self.quiet, label)
    }
}

/// What `--explain` prints: the method, and auto's cost model for a tile
/// of `--tile` holding every class of the raster.
fn explain(choice: &MethodChoice, job: &SmoothJob, method: &dyn ClassSmoother) -> Result<String> {
    let exact = if method.is_exact() {
        "exact"
    } else {
        "approximate"
    };
    let mut text = format!("method: {} ({exact})", method.name());
    for setting in method.tuned() {
        text += &format!("\ntuned setting used: {setting} ({})", setting.device);
    }
    let more = crate::method::select::explain(
        &choice.spec,
        &choice.device,
        &job.kernel,
        job.classes.len(),
        job.tile,
    )?;
    if let Some(more) = more {
        text += "\n";
        text += &more;
    }
    Ok(text)
}

/// What `smooth --dry-run` prints: the run as it would go, from the input's
/// header and the options alone (no pixel read, nothing written).
fn dry_run(
    args: &SmoothArgs,
    built: &super::kernel_args::BuiltKernel,
    choice: &MethodChoice,
    method: &dyn ClassSmoother,
    policies: &crate::method::policy::Policies,
) -> Result<String> {
    let input =
        crate::gdal::class_raster::ClassRaster::open_with(&args.input, args.bands.band.choice())?;
    let meta = &input.meta;
    let kernel = &built.kernel;
    let mut text = format!(
        "dry run: {} is not read beyond its header; nothing is written\ninput: {}x{} {:?}, nodata {}",
        args.input.display(),
        meta.width,
        meta.height,
        input.class_type,
        input
            .nodata_code()
            .map_or("none".to_string(), |c| c.to_string())
    );
    let n = kernel.size();
    text += &format!("\nkernel: {} → {n}x{n} px", built.given);
    if let Some(sigma) = kernel.sigma() {
        text += &format!(" (σ = {sigma:.4} px)");
    }
    if let Some(c) = &built.conversion {
        text += &format!("\n{c}");
    }
    let halo = policies.checked_halo(kernel.radius())?;
    let tile = args
        .smoothing
        .tile
        .unwrap_or_else(|| crate::engine::default_tile(method));
    let border: Border = args.smoothing.border.into();
    let grid = crate::engine::tile_grid(meta.width, meta.height, halo, border, tile)?;
    let (ow, oh) = grid.output_size();
    text += &format!(
        "\noutput: {} {ow}x{oh} ({border:?} border), {} tile(s) of up to {tile}x{tile} px (+{halo} px halo)",
        args.output.display(),
        grid.len()
    );
    let exact = if method.is_exact() {
        "exact"
    } else {
        "approximate"
    };
    text += &format!("\nmethod: {} ({exact})", method.name());
    // The classes are not scanned: the header's category names (or the
    // codes of a Byte band) stand in for them in auto's cost model.
    let named = meta.category_names.iter().filter(|n| !n.is_empty()).count();
    let classes = if named > 0 { named } else { 16 };
    if let Some(more) =
        crate::method::select::explain(&choice.spec, &choice.device, kernel, classes, tile)?
    {
        let from = if named > 0 {
            "the header's category names"
        } else {
            "no category names in the header: assumed"
        };
        text += &format!("\nclasses: {classes} ({from})\n{more}");
    }
    // Each tile in flight holds its codes with the halo (u16) and its
    // result; the method's own scratch comes on top.
    let side = (tile + 2 * halo) as u64;
    let in_flight = (method.depth() + 2) as u64;
    text += &format!(
        "\nmemory: about {} MiB of tiles in flight ({in_flight} tiles of {side}x{side} codes and their results), plus the method's scratch",
        (in_flight * side * side * 4) >> 20
    );
    if args.estimate {
        let run = crate::job::estimate::RunShape {
            width: ow,
            height: oh,
            tile,
            classes,
        };
        text += "\n";
        text += &crate::job::estimate::estimate(method, kernel, run)?.describe();
    }
    Ok(text)
}

/// The run's method, checked against the policies and `--confidence`
/// (`weighs`): its devices start on another thread while the job opens and
/// scans the input where the run's GPUs are known beforehand (`gpus`; its
/// compute pool is sized by them), else it is built here.
fn start_method(
    choice: &MethodChoice,
    kernel: &crate::kernel::Kernel,
    policies: &crate::method::policy::Policies,
    weighs: bool,
    gpus: Option<usize>,
) -> Result<Starting> {
    let (choice, kernel, policies) = (choice.clone(), kernel.clone(), policies.clone());
    let build = move || -> Result<Box<dyn ClassSmoother>> {
        let method = choice.build(&kernel)?;
        crate::method::policy::check_method(&policies, method.is_exact(), &method.name())?;
        crate::method::policy::check_confidence(weighs, method.as_ref())?;
        Ok(method)
    };
    Ok(match gpus {
        Some(_) => Starting::spawn(build),
        None => Starting::ready(build()?),
    })
}

/// `method` bridged by its host twin ([`bridged::host_twin`]: a certified
/// method itself, naive `auto --exact`), where the run computes its first tiles on the host
/// while the devices start ([`Bridged`]): devices that start beside the
/// run (`gpus`), GPUs, or any OpenCL device with `MAPFILTER_HOST_START=1`.
/// Not with `--confidence` or
/// `--explain` (which names the devices' method before the run), nor
/// where the tune database gives a tile side (the devices' tile is then
/// theirs to say).
fn bridge<'s>(
    choice: &MethodChoice,
    spec: &SmoothSpec,
    explain: bool,
    gpus: Option<usize>,
    method: &'s Starting,
) -> Result<Option<Bridged<'s>>> {
    let Some(gpus) = gpus else {
        return Ok(None);
    };
    if !bridged::wanted(gpus > 0)
        || explain
        || spec.confidence.is_some()
        || crate::device::tune::sets_tiles()
    {
        return Ok(None);
    }
    let Some(twin) = bridged::host_twin(&choice.spec) else {
        return Ok(None);
    };
    let host = MethodChoice {
        spec: twin,
        device: DeviceChoice::Host,
    };
    // A method the policies refuse is refused by the devices' start, with
    // its cause.
    let Ok(host) = host.build(&spec.kernel) else {
        return Ok(None);
    };
    let allowed =
        crate::method::policy::check_method(&spec.policies, host.is_exact(), &host.name());
    if !host.is_exact() || allowed.is_err() {
        return Ok(None);
    }
    let kind = if gpus > 0 {
        crate::device::DeviceKind::Gpu
    } else {
        crate::device::DeviceKind::Cpu
    };
    Bridged::new(host, bridge_threads(), method, kind, gpus).map(Some)
}

/// Most threads of the host while it computes a device run's first tiles:
/// a host `smooth` on the 64-core node was fastest on 16 (issue 39).
const BRIDGE_THREADS_MAX: usize = 16;

/// The host's threads while a device run's devices start ([`Bridged`]):
/// the cores (at most [`BRIDGE_THREADS_MAX`]), not the run's pool sized
/// for staging beside its GPUs; as many as the user gave rayon's pool
/// (`RAYON_NUM_THREADS`) where they did.
fn bridge_threads() -> usize {
    let env = crate::switches::environment();
    match env
        .rayon_threads
        .filter(|&t| env.rayon_threads_set && t > 0)
    {
        Some(threads) => threads,
        None => Node::here().cpus.clamp(1, BRIDGE_THREADS_MAX),
    }
}

/// Runs the job on a compute pool sized for its GPUs (`gpus` where known
/// before the method is).
fn run_job(
    spec: &SmoothSpec,
    method: &Starting,
    bridge: Option<&Bridged>,
    gpus: Option<usize>,
    observer: &mut CliObserver,
) -> Result<job::SmoothReport> {
    let pool = match gpus {
        Some(gpus) => device_run_pool(gpus),
        None => device_run_pool(method.get()?.gpus()),
    };
    match pool {
        Some(pool) => pool.install(|| job::run_with_start(spec, method, bridge, observer)),
        None => job::run_with_start(spec, method, bridge, observer),
    }
}

/// The GPUs a run on `device` computes on, where that is known before any
/// driver starts, so that its devices can start while the input is read:
/// `gpu`, and `auto` where NVIDIA's driver shows a GPU (one); `all` (every
/// GPU NVIDIA's driver shows); `cpu` (none). `None` for the host (nothing
/// to start), indices, lists and machines whose GPUs only OpenCL can tell.
fn expected_gpus(device: &DeviceChoice) -> Option<usize> {
    let nvidia = crate::device::nvidia_gpus().len();
    match device {
        DeviceChoice::Gpu | DeviceChoice::Auto if nvidia > 0 => Some(1),
        DeviceChoice::All if nvidia > 0 => Some(nvidia),
        DeviceChoice::Cpu => Some(0),
        _ => None,
    }
}

/// A compute pool sized for a run on `gpus` GPUs
/// ([`Node::device_run_threads`]), unless the user sized rayon's pool
/// (`RAYON_NUM_THREADS`) or the run is on the host (no GPU: it takes every
/// core).
fn device_run_pool(gpus: usize) -> Option<rayon::ThreadPool> {
    if crate::switches::environment().rayon_threads_set || gpus == 0 {
        return None;
    }
    let threads = Node::here().device_run_threads(gpus);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("mapfilter-host-{i}"))
        .build()
        .inspect_err(|e| log::debug!("the run computes on the shared pool: {e}"))
        .ok()
}
