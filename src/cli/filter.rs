//! `mapfilter filter`: a chain of image ops over a continuous raster into a
//! new GeoTIFF with the input's georeferencing and nodata. The arguments
//! become a [`FilterSpec`]; the work is [`crate::job::filter`].

use super::compress_args::CompressArgs;
use super::summary::JsonSummary;
use crate::error::Result;
use crate::filter::BorderMode;
use crate::filter::run_on::RunOn;
use crate::io::DEFAULT_TILE;
use crate::job::filter::{self as job, FilterPlan, FilterReport, FilterSpec};
use crate::job::observer::Observer;
use crate::progress::Progress;
use clap::Args;
use gdal::raster::GdalDataType;
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct FilterArgs {
    /// Input raster (any band count; Byte, UInt16, Int16 or Float32), any format GDAL reads.
    pub input: PathBuf,
    /// Output GeoTIFF (written to a temp file beside it, renamed on success).
    pub output: PathBuf,
    /// An op, repeat for a chain run in one pass: box:N, gaussian:SIGMA[:SIZE],
    /// sharpen:3|5, kernel:PATH, median:N, bilateral:SD:SR[:gray|luma|color],
    /// scharr:3|5|7|9 (two Float32 bands ∂x, ∂y per band), oil:R:LEVELS[:MIN:MAX],
    /// pyrdown (half the size, ⌈w/2⌉×⌈h/2⌉), pyrup (twice the size): OpenCV's
    /// pyrDown/pyrUp; the geotransform follows (pixel size ×2 or ×½);
    /// gray, ycbcr (Y, Cb, Cr), hsv: bands 1-3 as R, G, B, as OpenCV's cvtColor;
    /// demosaic:RGGB|BGGR|GRBG|GBRG[:bilinear|ea|mhc]: one Bayer band to R, G, B;
    /// denoise:LEVELS:SD:SR: bilateral (σ_d SD, σ_r SR) on every level of a
    /// Laplacian pyramid of LEVELS (2-8) levels, then its reconstruction;
    /// laplacian-level (g − pyrup(pyrdown(g))), laplacian-top: one Laplacian level,
    /// signed (Byte gives Int16, other types Float32; nodata −32768 or NaN).
    /// Sizes, radii and σ are in pixels.
    /// Level ops (one per command; the ops after it run on every level, each
    /// level to its own file OUTPUT_L0.tif, OUTPUT_L1.tif, …, or
    /// OUTPUT_O0_S0.tif, …, or with --levels overviews into OUTPUT and its
    /// overviews): gaussian-pyramid:LEVELS, laplacian-pyramid:LEVELS
    /// (LEVELS−1 detail levels and the Gaussian top, all signed as laplacian-level),
    /// scale-space:OCTAVES:SCALES[:SIGMA0] (σ = SIGMA0·2^(s/SCALES), SIGMA0 1.6).
    #[arg(long = "op", required = true)]
    pub ops: Vec<String>,
    /// What ops see beyond the edge: replicate, reflect101, constant:V, nodata.
    #[arg(long, default_value = "reflect101")]
    pub border: BorderMode,
    /// Where a level op's levels go: files (OUTPUT_L0.tif, … with the geotransform of
    /// each level) or overviews (level 0 in OUTPUT, level k as its k-th GeoTIFF overview,
    /// which GDAL places over the base's extent; pyramids only, not scale-space).
    #[arg(long, value_enum, default_value = "files")]
    pub levels: LevelOutput,
    /// Where to run: host (fast host paths), host-reference (plain per-pixel references),
    /// or an OpenCL device: auto, cpu, gpu, INDEX.
    #[arg(long, default_value = "host")]
    pub device: RunOn,
    /// Tile side in pixels.
    #[arg(long, default_value_t = DEFAULT_TILE)]
    pub tile: usize,
    /// Output data type (default: the chain's, e.g. Float32 for scharr): values are rounded and
    /// clamped to it as gdal_translate -ot does; the nodata value must fit it.
    #[arg(long = "ot", value_enum, ignore_case = true, value_name = "TYPE")]
    pub output_type: Option<OutputType>,
    #[command(flatten)]
    pub compression: CompressArgs,
    /// No progress bar and no summary.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub overwrite: super::output_args::OverwriteArg,
    #[command(flatten)]
    pub json: super::summary::JsonArg,
}

pub fn run(args: FilterArgs) -> Result<()> {
    let started = std::time::Instant::now();
    let spec = FilterSpec {
        input: args.input.clone(),
        output: args.output.clone(),
        ops: args.ops.clone(),
        levels: match args.levels {
            LevelOutput::Files => job::LevelOutput::Files,
            LevelOutput::Overviews => job::LevelOutput::Overviews,
        },
        run_on: args.device.clone(),
        border: args.border,
        tile: args.tile,
        output_type: args.output_type.map(OutputType::gdal),
        compression: args.compression.compression()?.continuous(),
        overwrite: args.overwrite.overwrite,
    };
    let plan = FilterPlan::new(&spec)?;
    let json = JsonSummary::check(
        &args.json,
        spec.overwrite,
        &spec.inputs(),
        &plan.targets(),
        false,
    )?;
    let report = job::run(&spec, plan, &mut CliObserver { quiet: args.quiet })?;
    if !args.quiet {
        for output in &report.outputs {
            eprintln!("{}", output.line());
        }
    }
    json.write("filter", summary(&args, &report, started))
}

/// The command line's view of a filter job: the progress bar unless `--quiet`.
struct CliObserver {
    quiet: bool,
}

impl Observer for CliObserver {
    fn progress(&self, label: &str) -> Progress {
        Progress::new(self.quiet, label)
    }
}

/// `--json`'s fields: the run and one entry per output written.
fn summary(args: &FilterArgs, report: &FilterReport, started: std::time::Instant) -> Value {
    json!({
        "input": args.input,
        "ops": args.ops,
        "border": args.border.to_string(),
        "device": args.device.to_string(),
        "outputs": report.outputs,
        "seconds": { "total": started.elapsed().as_secs_f64() },
    })
}

/// Where the levels of a level op go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LevelOutput {
    Files,
    Overviews,
}

/// Output data types of `filter --ot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputType {
    #[value(name = "Byte")]
    Byte,
    #[value(name = "UInt16")]
    UInt16,
    #[value(name = "Int16")]
    Int16,
    #[value(name = "Float32")]
    Float32,
}

impl OutputType {
    fn gdal(self) -> GdalDataType {
        match self {
            OutputType::Byte => GdalDataType::UInt8,
            OutputType::UInt16 => GdalDataType::UInt16,
            OutputType::Int16 => GdalDataType::Int16,
            OutputType::Float32 => GdalDataType::Float32,
        }
    }
}
