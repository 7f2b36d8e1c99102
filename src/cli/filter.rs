//! `mapfilter filter`: a chain of image ops over a continuous raster into a
//! new GeoTIFF with the input's georeferencing and nodata.

use super::compress_args::CompressArgs;
use super::summary::JsonSummary;
use crate::error::Result;
use crate::filter::engine::{self, DEFAULT_TILE, FilterJob};
use crate::filter::levels::Levels;
use crate::filter::run_on::RunOn;
use crate::filter::{BorderMode, Chain};
use crate::image_raster::{ImageRaster, LevelSink, gdal_type};
use crate::output::{self, Target};
use crate::progress::Progress;
use crate::raster::{OutputRaster, OutputSpec};
use clap::Args;
use gdal::raster::GdalDataType;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

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
    warn_if_classes(&args.input)?;
    let overwrite = args.overwrite.overwrite;
    let Some((levels, before, after)) = Levels::split(&args.ops)? else {
        let chain = Chain::parse(&args.ops)?;
        let target = Target::check(&args.output, overwrite, &[&args.input])?;
        let json = JsonSummary::check(&args.json, overwrite, &[&args.input], &[&target], false)?;
        let done = run_chain(&args, chain, &target)?;
        return json.write("filter", summary(&args, vec![done], started));
    };
    if args.levels == LevelOutput::Overviews {
        let chains = levels
            .chains(&before, &after)
            .iter()
            .map(|l| Chain::parse(&l.ops))
            .collect::<Result<Vec<_>>>()?;
        let target = Target::check(&args.output, overwrite, &[&args.input])?;
        let json = JsonSummary::check(&args.json, overwrite, &[&args.input], &[&target], false)?;
        let done = run_overviews(&args, &levels, chains, &target)?;
        return json.write("filter", summary(&args, vec![done], started));
    }
    // Every level's chain and path checked before the first one runs.
    let mut runs = Vec::new();
    for level in levels.chains(&before, &after) {
        let out = level_path(&args.output, &level.suffix);
        let target = Target::check(&out, overwrite, &[&args.input])?;
        runs.push((Chain::parse(&level.ops)?, target));
    }
    let targets: Vec<&Target> = runs.iter().map(|(_, t)| t).collect();
    output::distinct(&targets)?;
    let json = JsonSummary::check(&args.json, overwrite, &[&args.input], &targets, false)?;
    let mut outputs = Vec::new();
    for (chain, target) in runs {
        outputs.push(run_chain(&args, chain, &target)?);
    }
    json.write("filter", summary(&args, outputs, started))
}

/// `--json`'s fields: the run and one entry per output written.
fn summary(args: &FilterArgs, outputs: Vec<Value>, started: std::time::Instant) -> Value {
    json!({
        "input": args.input,
        "ops": args.ops,
        "border": args.border.to_string(),
        "device": args.device.to_string(),
        "outputs": outputs,
        "seconds": { "total": started.elapsed().as_secs_f64() },
    })
}

/// A colour table marks a class map: image ops take means and medians of
/// its codes, which is rarely meant; said, not refused (codes may be values).
fn warn_if_classes(input: &Path) -> Result<()> {
    let ds = crate::raster::open(input)?;
    let band = ds.rasterband(1).map_err(crate::raster::gdal_error)?;
    if band.color_table().is_some() {
        log::warn!(
            "{}: band 1 has a colour table, so it probably holds classes: filter computes with the codes as numbers (use `mapfilter smooth` to smooth classes)",
            input.display()
        );
    }
    Ok(())
}

/// `OUTPUT` with `_SUFFIX` before its extension.
fn level_path(output: &Path, suffix: &str) -> PathBuf {
    let stem = output.file_stem().unwrap_or_default().to_string_lossy();
    let name = match output.extension() {
        Some(ext) => format!("{stem}_{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}_{suffix}"),
    };
    output.with_file_name(name)
}

/// Where the levels of a level op go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LevelOutput {
    Files,
    Overviews,
}

/// Runs every level's chain into one GeoTIFF: level 0 the raster, level k
/// its k-th overview (each level ⌈size/2^k⌉, as GDAL sizes overviews).
fn run_overviews(
    args: &FilterArgs,
    levels: &Levels,
    chains: Vec<Chain>,
    target: &Target,
) -> Result<Value> {
    let hint = "write the levels as files (--levels files)";
    if matches!(levels, Levels::ScaleSpace { .. }) {
        crate::bail!(
            "a scale space has several levels of one size, which overviews cannot hold",
            hint = hint
        );
    }
    let mut input = ImageRaster::open(&args.input)?;
    let size = (input.meta.width, input.meta.height);
    for (k, chain) in chains.iter().enumerate() {
        let want = (size.0.div_ceil(1 << k), size.1.div_ceil(1 << k));
        if chain.out_size(size) != want
            || chain.out_type(input.sample_type) != chains[0].out_type(input.sample_type)
        {
            crate::bail!(
                format!(
                    "level {k} is not an overview of level 0 (the ops after the level op change its size or type)"
                ),
                hint = hint
            );
        }
    }
    let (spec, border) = output_spec(args, &chains[0], &input)?;
    let runner = args.device.runner()?;
    let mut output = OutputRaster::create(target, &spec)?;
    let overviews = chains.len() - 1;
    output.add_overviews(overviews)?;
    let progress = Progress::new(args.quiet, "filter");
    let start = std::time::Instant::now();
    for (level, chain) in chains.into_iter().enumerate() {
        let job = FilterJob {
            chain,
            border,
            tile: args.tile,
        };
        let mut sink = LevelSink {
            raster: &mut output,
            level,
        };
        engine::filter(&mut input, &mut sink, &job, runner.as_ref(), &progress)?;
    }
    output.finish()?;
    if !args.quiet {
        eprintln!(
            "wrote {} ({}x{}, {} bands, {} levels as overviews, {} in {:.3} s)",
            target.shown().display(),
            spec.width,
            spec.height,
            spec.bands,
            levels.count(),
            runner.name(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(json!({
        "output": target.shown(),
        "width": spec.width,
        "height": spec.height,
        "bands": spec.bands,
        "data_type": spec.data_type.name(),
        "nodata": spec.nodata.filter(|v| v.is_finite()),
        "overviews": overviews,
        "runner": runner.name(),
        "seconds": start.elapsed().as_secs_f64(),
    }))
}

/// The output of `chain` on `input` (checked), and the border mode.
fn output_spec(
    args: &FilterArgs,
    chain: &Chain,
    input: &ImageRaster,
) -> Result<(OutputSpec, BorderMode)> {
    let border = args.border;
    let nd = input.meta.nodata;
    chain
        .check(input.bands, input.sample_type, border, nd)
        .map_err(|e| e.context(args.input.display()))?;
    let (width, height) = chain.out_size((input.meta.width, input.meta.height));
    let nodata = chain.out_nodata(input.sample_type, nd);
    let data_type = match args.output_type {
        Some(t) => t.checked(nodata)?,
        None => gdal_type(chain.out_type(input.sample_type)),
    };
    let spec = OutputSpec {
        width,
        height,
        bands: chain.out_bands(input.bands),
        data_type,
        geo_transform: input.meta.geo_transform.map(|gt| chain.geo_transform(gt)),
        projection: input.meta.projection.clone(),
        nodata,
        colors: Vec::new(),
        category_names: Vec::new(),
        compression: args.compression.compression()?.continuous(),
    };
    Ok((spec, border))
}

/// Runs one chain from the input into `output`; what was written, for `--json`.
fn run_chain(args: &FilterArgs, chain: Chain, target: &Target) -> Result<Value> {
    let mut input = ImageRaster::open(&args.input)?;
    let (spec, border) = output_spec(args, &chain, &input)?;
    let runner = args.device.runner()?;
    let mut output = OutputRaster::create(target, &spec)?;
    let job = FilterJob {
        chain,
        border,
        tile: args.tile,
    };
    let progress = Progress::new(args.quiet, "filter");
    let stats = engine::filter(&mut input, &mut output, &job, runner.as_ref(), &progress)?;
    output.finish()?;
    if !args.quiet {
        eprintln!(
            "wrote {} ({}x{}, {} bands, {} ops, radius {}, {} in {:.3} s, {} tiles)",
            target.shown().display(),
            spec.width,
            spec.height,
            spec.bands,
            job.chain.ops.len(),
            job.chain.radius(),
            runner.name(),
            stats.wall.as_secs_f64(),
            stats.tiles
        );
    }
    Ok(json!({
        "output": target.shown(),
        "width": spec.width,
        "height": spec.height,
        "bands": spec.bands,
        "data_type": spec.data_type.name(),
        "nodata": spec.nodata.filter(|v| v.is_finite()),
        "radius": job.chain.radius(),
        "runner": runner.name(),
        "tiles": stats.tiles,
        "seconds": stats.wall.as_secs_f64(),
    }))
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
    /// GDAL's type, refused where the output's nodata value has no place in it.
    fn checked(self, nodata: Option<f64>) -> Result<GdalDataType> {
        let (t, range) = match self {
            OutputType::Byte => (GdalDataType::UInt8, Some((0.0, 255.0))),
            OutputType::UInt16 => (GdalDataType::UInt16, Some((0.0, 65535.0))),
            OutputType::Int16 => (GdalDataType::Int16, Some((-32768.0, 32767.0))),
            OutputType::Float32 => (GdalDataType::Float32, None),
        };
        if let (Some(v), Some((lo, hi))) = (nodata, range)
            && (v.is_nan() || v.fract() != 0.0 || v < lo || v > hi)
        {
            crate::bail!(
                format!(
                    "--ot {}: the output's nodata value {v} is not a {} value",
                    t.name(),
                    t.name()
                ),
                hint = "choose a type that holds it (Float32 holds any), or set another nodata on the input with gdal_edit.py -a_nodata"
            );
        }
        Ok(t)
    }
}
