//! `mapfilter blend`: two rasters of one grid into one, by a weighted sum
//! (`cv2.addWeighted`) or by an alpha band ([`crate::filter::blend`]),
//! strip by strip, on the host or an OpenCL device (`--device`,
//! [`crate::filter::blend_cl`]).

use super::compress_args::CompressArgs;
use crate::device::DeviceChoice;
use crate::error::Result;
use crate::filter::blend::Blend;
use crate::job::blend::BlendSpec;
use crate::output::Target;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BlendArgs {
    /// First raster (Byte, UInt16, Int16 or Float32).
    pub first: PathBuf,
    /// Second raster: same grid (size, geotransform, coordinate system), band count and type.
    pub second: PathBuf,
    /// Output GeoTIFF.
    pub output: PathBuf,
    /// Weighted sum ALPHA,BETA[,GAMMA]: ALPHA·first + BETA·second + GAMMA, rounded and
    /// saturated as OpenCV's addWeighted (identical to it for Byte). Default 0.5,0.5.
    #[arg(long, value_name = "ALPHA,BETA[,GAMMA]", conflicts_with_all = ["alpha", "alpha_band"])]
    pub weights: Option<String>,
    /// Alpha blending with this one-band raster on the same grid as the weight of
    /// the first raster: first·w + second·(1−w), w = alpha/255 (Byte), /65535
    /// (UInt16), /32767 (Int16), or the value clamped to 0..1 (Float32).
    #[arg(long, value_name = "RASTER", conflicts_with = "alpha_band")]
    pub alpha: Option<PathBuf>,
    /// Alpha blending with band N (from 1) of the first raster as the weight
    /// (e.g. 4 for RGBA); that band is left out of the output, and the second
    /// raster has the other bands.
    #[arg(long, value_name = "N")]
    pub alpha_band: Option<usize>,
    /// Where to blend: host, or an OpenCL device (auto, cpu, gpu, INDEX);
    /// both give the same bits.
    #[arg(long, default_value = "host")]
    pub device: DeviceChoice,
    #[command(flatten)]
    pub compression: CompressArgs,
    /// No summary.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub overwrite: super::output_args::OverwriteArg,
}

fn parse_weights(s: &str) -> Result<Blend> {
    let v: Vec<f32> = s
        .split(',')
        .map(|x| x.trim().parse::<f32>())
        .collect::<std::result::Result<_, _>>()
        .ok()
        .filter(|v: &Vec<f32>| (2..=3).contains(&v.len()) && v.iter().all(|x| x.is_finite()))
        .ok_or_else(|| {
            crate::error::Error::usage(format!("--weights '{s}' is not ALPHA,BETA[,GAMMA]"))
                .hint("write e.g. --weights 0.7,0.3 or --weights 1,1,-10")
        })?;
    Ok(Blend::Weighted {
        alpha: v[0],
        beta: v[1],
        gamma: v.get(2).copied().unwrap_or(0.0),
    })
}

pub fn run(args: BlendArgs) -> Result<()> {
    let blend = match (&args.weights, &args.alpha, args.alpha_band) {
        (Some(w), _, _) => parse_weights(w)?,
        (None, None, None) => parse_weights("0.5,0.5")?,
        _ => Blend::Alpha,
    };
    let mut inputs = vec![args.first.as_path(), args.second.as_path()];
    inputs.extend(args.alpha.as_deref());
    let target = Target::check(&args.output, args.overwrite.overwrite, &inputs)?;
    let device = args.device.resolve()?;
    let device_name = device
        .as_ref()
        .map_or("host".to_string(), |d| d.info().name.clone());
    let spec = BlendSpec {
        first: args.first,
        second: args.second,
        alpha: args.alpha,
        alpha_band: args.alpha_band,
        blend,
        target,
        compression: args.compression.compression()?,
        device,
    };
    let done = crate::job::blend::run(&spec)?;
    if !args.quiet {
        eprintln!(
            "wrote {} ({}x{}, {} bands, {device_name} in {:.3} s)",
            spec.target.shown().display(),
            done.width,
            done.height,
            done.bands,
            done.seconds
        );
    }
    Ok(())
}
