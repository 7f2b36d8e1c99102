//! `mapfilter smooth`: class smoothing of one raster into a new GeoTIFF.

use super::fast_args::FastArgs;
use crate::classes::ClassWeights;
use crate::device::DeviceChoice;
use crate::engine::{self, DEFAULT_TILE, SmoothJob};
use crate::error::Result;
use crate::kernel::KernelSpec;
use crate::method::select::smoother_for;
use crate::progress::Progress;
use crate::raster::{self, ClassRaster, ClassType, Compression, OutputRaster, OutputSpec};
use clap::{Args, ValueEnum};
use gdal::raster::GdalDataType;
use std::path::PathBuf;
use tiles::Border;

#[derive(Args, Debug)]
pub struct SmoothArgs {
    /// Input class raster (band 1, Byte or UInt16 codes), any format GDAL reads.
    pub input: PathBuf,
    /// Output GeoTIFF (written to a temp file beside it, renamed on success).
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
    /// Tile side in pixels.
    #[arg(long, default_value_t = DEFAULT_TILE)]
    pub tile: usize,
    /// GeoTIFF compression of the output.
    #[arg(long, value_enum, default_value_t = Compression::Deflate)]
    pub compress: Compression,
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
    /// No progress bar and no summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also run the exact baseline and write a report (HTML; .json/.md by extension): run times, speed-up, agreement, confusion, maps.
    #[arg(long)]
    pub report: Option<PathBuf>,
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
    raster::check_output_path(&args.input, &args.output)?;
    let mut input = ClassRaster::open(&args.input)?;
    let progress = Progress::new(args.quiet, "smooth");
    let classes = input.scan_classes(&progress)?;
    let job = SmoothJob {
        class_weights: weights.quantise(&classes),
        output_nodata: classes.output_nodata(input.class_type.max_code()),
        kernel,
        classes,
        border: args.border.into(),
        fill_nodata: args.fill_nodata,
        tile: args.tile,
    };
    let grid = job.grid(input.meta.width, input.meta.height)?;
    if args.explain {
        eprintln!("{}", explain(&args, &job, device, method.as_ref())?);
    }
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
        projection: input.meta.projection.clone(),
        nodata: job.output_nodata.map(f64::from),
        colors: input.meta.colors.clone(),
        category_names: input.meta.category_names.clone(),
        compression: args.compress,
    };
    let mut output = OutputRaster::create(&args.output, &spec)?;
    let stats = engine::smooth(&mut input, &mut output, &job, method.as_ref(), &progress)?;
    output.finish()?;
    if let Some(report) = &args.report {
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
            job.classes.len(),
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

/// What `--explain` prints: the method, and auto's cost model for a tile
/// of `--tile` holding every class of the raster.
fn explain(
    args: &SmoothArgs,
    job: &SmoothJob,
    device: DeviceChoice,
    method: &dyn crate::method::ClassSmoother,
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
