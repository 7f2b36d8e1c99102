//! `mapfilter smooth`: class smoothing of one raster into a new GeoTIFF.

use super::compress_args::CompressArgs;
use super::fast_args::FastArgs;
use super::output_args::OverwriteArg;
use super::timings::Timings;
use crate::classes::{ClassTable, ClassWeights};
use crate::deferred_output::DeferredOutput;
use crate::device::DeviceChoice;
use crate::engine::{self, RunStats, SmoothJob};
use crate::error::Result;
use crate::kernel::{Kernel, KernelSpec};
use crate::method::ClassSmoother;
use crate::method::select::smoother_for;
use crate::output::Target;
use crate::progress::Progress;
use crate::raster::{ClassRaster, ClassType, OutputSpec};
use clap::{Args, ValueEnum};
use gdal::raster::GdalDataType;
use std::path::PathBuf;
use tiles::Border;

#[derive(Args, Debug)]
pub struct SmoothArgs {
    /// Input class raster (band 1, Byte or UInt16 codes), any format GDAL reads.
    pub input: PathBuf,
    /// Output GeoTIFF (written to a temp file beside it, renamed on success;
    /// an existing file only with --overwrite).
    pub output: PathBuf,
    /// Kernel: gaussian:SIGMA, box:N, disc:RADIUS or file:PATH (square matrix, odd size).
    #[arg(long, short)]
    pub kernel: String,
    /// Side of a gaussian kernel (odd); default 2·floor(3σ)+1 (the thesis' 6σ+1 rounded down to odd).
    #[arg(long)]
    pub size: Option<usize>,
    /// Class weights ("priorities") as CODE:WEIGHT[,CODE:WEIGHT...]; others weigh 1.
    #[arg(long)]
    pub class_weights: Option<String>,
    /// Border handling: `same` keeps the size, `valid` crops N/2 pixels on every side.
    #[arg(long, value_enum, default_value_t = BorderArg::Same)]
    pub border: BorderArg,
    /// Smooth nodata pixels too (fills holes from their neighbours).
    #[arg(long)]
    pub fill_nodata: bool,
    /// Tile side in pixels (default: 2048 for methods on a GPU, else 512).
    #[arg(long)]
    pub tile: Option<usize>,
    #[command(flatten)]
    pub compression: CompressArgs,
    /// Where to run: auto, host, cpu, gpu or an index from `mapfilter devices`
    /// (default: $MAPFILTER_DEVICE, else auto).
    #[arg(long)]
    pub device: Option<String>,
    /// Device variant of the method (naive: fast, buffer, image, local).
    #[arg(long)]
    pub variant: Option<String>,
    #[command(flatten)]
    pub fast: FastArgs,
    /// Print the method chosen (and, for auto, the cost model's reasons) before running.
    #[arg(long)]
    pub explain: bool,
    /// Print one line per stage (setup, open, scan, engine, finish, and the output's own thread) with its time to stderr.
    #[arg(long)]
    pub timings: bool,
    /// No progress bar and no summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also run the exact baseline and write a report (HTML; .json/.md by extension; `-`: standard output): run times, speed-up, agreement, confusion, maps.
    #[arg(long)]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub overwrite: OverwriteArg,
    #[command(flatten)]
    pub mmu: super::sieve::MmuArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BorderArg {
    Same,
    Valid,
}

impl From<BorderArg> for Border {
    fn from(b: BorderArg) -> Self {
        match b {
            BorderArg::Same => Border::Same,
            BorderArg::Valid => Border::Valid,
        }
    }
}

pub fn run(args: SmoothArgs) -> Result<()> {
    let mut timings = Timings::new(args.timings);
    let kernel = args
        .kernel
        .parse::<KernelSpec>()?
        .with_size(args.size)?
        .build()?;
    let weights: ClassWeights = args.class_weights.as_deref().unwrap_or("").parse()?;
    let device = DeviceChoice::from_arg(args.device.as_deref())?;
    let method = smoother_for(
        &args.fast.method,
        device,
        args.variant.as_deref(),
        &kernel,
        &args.fast.options(),
    )?;
    let overwrite = args.overwrite.overwrite;
    let target = Target::check(&args.output, overwrite, &[&args.input])?;
    let report = args
        .report
        .as_deref()
        .map(|p| super::compare::ReportTarget::check(p, &target, overwrite, &args.input))
        .transpose()?;
    let mmu = args.mmu.plan(&args.input, &target)?;
    timings.stage("setup");
    let ((width, height), job, stats) = std::thread::scope(|scope| {
        // The output's own thread reads the input's coordinate system and
        // makes the output (see `DeferredOutput`) while this one goes on.
        let output = DeferredOutput::spawn(scope, mmu.target().clone(), args.input.clone());
        let tile = args
            .tile
            .unwrap_or_else(|| engine::default_tile(method.as_ref()));
        let how = (kernel, &weights, device, method.as_ref(), tile);
        smooth_into(&args, how, output, &mut timings)
    })?;
    mmu.apply(&target, args.compression.compression()?, args.quiet)?;
    if let Some(report) = &report {
        let run = super::compare::SmoothRun {
            input: &args.input,
            output: &args.output,
            job: &job,
            method: method.as_ref(),
            method_label: &format!("{}@{device}", args.fast.method),
            stats: &stats,
            quiet: args.quiet,
        };
        super::compare::smooth_report(&run, report)?;
    }
    if !args.quiet {
        let k = job.kernel.size();
        eprintln!(
            "wrote {} ({width}x{height}, {} classes, kernel {k}x{k}, {} in {:.3} s, {} tiles)",
            args.output.display(),
            stats.classes_present,
            method.name(),
            stats.wall.as_secs_f64(),
            stats.tiles
        );
        if let Some(line) = method.summary() {
            eprintln!("{}: {line}", method.name());
        }
    }
    Ok(())
}

/// Opens the input, finds its classes, smooths it into `output` (handing
/// it its spec as soon as that is known) and finishes the output: the
/// output size, the job and the engine's figures.
fn smooth_into(
    args: &SmoothArgs,
    (kernel, weights, device, method, tile): (
        Kernel,
        &ClassWeights,
        DeviceChoice,
        &dyn ClassSmoother,
        usize,
    ),
    mut output: DeferredOutput,
    timings: &mut Timings,
) -> Result<((usize, usize), SmoothJob, RunStats)> {
    let mut input = ClassRaster::open_without_projection(&args.input)?;
    timings.stage("open");
    let border: Border = args.border.into();
    let grid = engine::tile_grid(input.meta.width, input.meta.height, &kernel, border, tile)?;
    let (width, height) = grid.output_size();
    let spec = OutputSpec {
        width,
        height,
        bands: 1,
        data_type: match input.class_type {
            ClassType::Byte => GdalDataType::UInt8,
            ClassType::UInt16 => GdalDataType::UInt16,
        },
        geo_transform: input.meta.shifted_transform(grid.offset()),
        projection: String::new(),
        nodata: None,
        colors: input.meta.colors.clone(),
        category_names: input.meta.category_names.clone(),
        compression: args.compression.compression()?,
    };
    let with_nodata = |nodata: Option<u16>| OutputSpec {
        nodata: nodata.map(f64::from),
        ..spec.clone()
    };
    // The output's nodata is the input's where it has one, so the output
    // can be made while the classes are scanned.
    let input_nodata = input.nodata_code();
    if input_nodata.is_some() {
        output.make(with_nodata(input_nodata));
    }
    let progress = Progress::new(args.quiet, "smooth");
    let max_code = input.class_type.max_code();
    let classes = if scan_first(args, &input) {
        let classes = input.scan_classes(&progress)?;
        timings.stage("scan");
        classes
    } else {
        let classes = ClassTable::every_code(max_code, input_nodata)?;
        timings.stage("classes");
        classes
    };
    let output_nodata = classes.output_nodata(max_code);
    output.make(with_nodata(output_nodata));
    let job = SmoothJob {
        class_weights: weights.quantise(&classes),
        output_nodata,
        kernel,
        classes,
        border,
        fill_nodata: args.fill_nodata,
        tile,
    };
    if args.explain {
        eprintln!("{}", explain(args, &job, device, method)?);
    }
    let stats = engine::smooth(&mut input, &mut output, &job, method, &progress)?;
    timings.stage("engine");
    let (made_from, made_to) = output.finish()?;
    timings.stage("finish");
    timings.background("output", made_from, made_to);
    Ok(((width, height), job, stats))
}

/// Whether to scan the raster for its classes before smoothing.
///
/// A Byte band with a nodata value can instead take every other code as a
/// class (tiles hold only the classes they meet, in code order, so results
/// are the same) unless something needs the classes actually present:
/// class weights (scaled by the largest weight of a class present), the
/// report and `--explain` (which show them). On a machine of two cores a
/// raster that fits in GDAL's block cache is scanned in any case: the scan
/// decodes its blocks before the engine starts, while the output's thread
/// works on the other core, and the engine then finds them decoded
/// (docs/decisions/0007-class-scan.md). Elsewhere the scan is skipped and
/// with it a whole single-threaded decoding pass.
fn scan_first(args: &SmoothArgs, input: &ClassRaster) -> bool {
    input.class_type != ClassType::Byte
        || input.nodata_code().is_none()
        || args
            .class_weights
            .as_deref()
            .is_some_and(|w| !w.trim().is_empty())
        || args.report.is_some()
        || args.explain
        || (input.fits_block_cache() && few_cores())
}

/// Whether the run has so few threads (rayon's pool: the cores, or
/// `RAYON_NUM_THREADS`) that decoding the input ahead (the scan) beats
/// decoding it inside the engine. Measured both ways: on 2 cores the scan
/// first is faster; on 16 (with the GPU or the host computing) skipping it
/// is (BENCHMARKS.md, "Whole command against gdal_translate").
fn few_cores() -> bool {
    rayon::current_num_threads() <= 2
}

/// What `--explain` prints: the method, and auto's cost model for a tile
/// of `--tile` holding every class of the raster.
fn explain(
    args: &SmoothArgs,
    job: &SmoothJob,
    device: DeviceChoice,
    method: &dyn ClassSmoother,
) -> Result<String> {
    let exact = if method.is_exact() {
        "exact"
    } else {
        "approximate"
    };
    let mut text = format!("method: {} ({exact})", method.name());
    if args.fast.method == "auto" {
        let auto = crate::method::select::auto(
            device,
            args.variant.as_deref(),
            &job.kernel,
            &args.fast.options(),
        )?;
        text += "\n";
        text += &auto.explain_tile(job.classes.len(), job.tile);
    }
    Ok(text)
}
