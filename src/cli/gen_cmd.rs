//! `mapfilter gen`: the thesis' synthetic data sets as georeferenced GeoTIFF,
//! written tile by tile so any size fits in memory.

use super::compress_args::CompressArgs;
use super::pattern_arg::PatternArg;
use crate::bail;
use crate::error::Result;
use crate::gdal::output_raster::{OutputRaster, OutputSpec};
use crate::io::{ClassSink, ClassSource};
use crate::output::Target;
use crate::progress::Progress;
use crate::synth::SynthRaster;
use clap::Args;
use gdal::raster::GdalDataType;
use gdal::spatial_ref::SpatialRef;
use std::path::PathBuf;
use tiles::{Border, TileGrid};

#[derive(Args, Debug)]
pub struct GenArgs {
    /// Output GeoTIFF.
    pub output: PathBuf,
    /// Raster size in pixels as WIDTHxHEIGHT, e.g. 1024x1024.
    #[arg(
        long = "raster-size",
        alias = "size",
        value_name = "WIDTHxHEIGHT",
        default_value = "1024x1024"
    )]
    pub size: String,
    /// Number of classes (codes 0..C-1; Byte up to 256, UInt16 above).
    #[arg(long, default_value_t = 8)]
    pub classes: u16,
    /// simplex: smooth blobs cut by evenly spaced thresholds; random: uniform classes.
    #[arg(long, value_enum, default_value_t = PatternArg::Simplex)]
    pub pattern: PatternArg,
    /// Seed of the pattern.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Feature size of the simplex pattern in pixels.
    #[arg(long, default_value_t = 64.0)]
    pub scale: f64,
    #[command(flatten)]
    pub compression: CompressArgs,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub overwrite: super::output_args::OverwriteArg,
}

/// Parses `WIDTHxHEIGHT`.
pub fn parse_size(text: &str) -> Result<(usize, usize)> {
    let parsed = text
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)));
    match parsed {
        Some((w, h)) if w > 0 && h > 0 => Ok((w, h)),
        _ => bail!(
            usage,
            format!("size '{text}' is not WIDTHxHEIGHT"),
            hint = "e.g. --raster-size 1024x1024"
        ),
    }
}

pub fn run(args: GenArgs) -> Result<()> {
    let (width, height) = parse_size(&args.size)?;
    let target = Target::check(&args.output, args.overwrite.overwrite, &[])?;
    if args.classes == 0 {
        bail!(usage, "--classes must be at least 1");
    }
    let mut synth = SynthRaster::new(width, height, args.classes, args.pattern.into(), args.seed)
        .with_scale(args.scale);
    let byte = args.classes <= 256;
    // UTM zone 33N, 30 m pixels: the georeferencing of a Landsat-like land-cover map.
    let projection = SpatialRef::from_epsg(32633)
        .and_then(|s| s.to_wkt())
        .map_err(crate::gdal::errors::gdal_error)?;
    let colors = if byte {
        palette(args.classes as usize)
    } else {
        Vec::new()
    };
    let spec = OutputSpec {
        width,
        height,
        bands: 1,
        data_type: if byte {
            GdalDataType::UInt8
        } else {
            GdalDataType::UInt16
        },
        geo_transform: Some([500_000.0, 30.0, 0.0, 5_000_000.0, 0.0, -30.0]),
        projection,
        nodata: None,
        colors,
        category_names: Vec::new(),
        compression: args.compression.compression()?,
    };
    let mut out = OutputRaster::create(&target, &spec)?;
    let grid = TileGrid::new(width, height, 0, Border::Same, 512)?;
    let progress = Progress::new(args.quiet, "gen");
    progress.start(grid.len() as u64, "tiles");
    let mut buf = Vec::new();
    for tile in grid.tiles() {
        crate::interrupt::check()?;
        buf.resize(tile.output.area() as usize, 0);
        synth.read(tile.output, &mut buf)?;
        out.write(tile.output, &buf)?;
        progress.inc(1);
    }
    progress.finish();
    out.finish()
}

/// Distinct colours for `n` classes (golden-angle hues).
fn palette(n: usize) -> Vec<[i16; 4]> {
    (0..n)
        .map(|i| {
            let v = if i % 2 == 0 { 0.9 } else { 0.7 };
            crate::report::colour::hsv_rgba(i as f64 * 137.508, 0.65, v).map(i16::from)
        })
        .collect()
}
