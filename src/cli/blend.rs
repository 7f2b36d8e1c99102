//! `mapfilter blend`: two rasters of one grid into one, by a weighted sum
//! (`cv2.addWeighted`) or by an alpha band ([`crate::filter::blend`]),
//! strip by strip, on the host or an OpenCL device (`--device`,
//! [`crate::filter::blend_cl`]).

use super::compress_args::CompressArgs;
use crate::bail;
use crate::device::{Device, DeviceChoice};
use crate::error::Result;
use crate::filter::blend::{Blend, BlendNodata};
use crate::filter::blend_cl;
use crate::gdal::image_raster::{ImageRaster, gdal_type};
use crate::gdal::output_raster::{OutputRaster, OutputSpec};
use crate::io::{ImageSink, ImageSource};
use crate::output::Target;
use crate::pixel::Bands;
use crate::with_bands;
use clap::Args;
use std::path::PathBuf;
use tiles::Rect;

/// Rows per strip.
const STRIP: usize = 256;

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

/// Refuses `other` unless it lies on `first`'s grid.
fn same_grid(first: &ImageRaster, other: &ImageRaster) -> Result<()> {
    let (a, b) = (&first.meta, &other.meta);
    let close = match (a.geo_transform, b.geo_transform) {
        (Some(x), Some(y)) => x
            .iter()
            .zip(&y)
            .all(|(p, q)| (p - q).abs() <= 1e-9 * p.abs().max(q.abs()).max(x[1].abs()).max(1e-12)),
        (None, None) => true,
        _ => false,
    };
    if (a.width, a.height) != (b.width, b.height) || !close || a.projection != b.projection {
        bail!(
            input,
            format!(
                "{} is not on the grid of {} ({}x{} vs {}x{}, or another geotransform or coordinate system)",
                other.path().display(),
                first.path().display(),
                b.width,
                b.height,
                a.width,
                a.height
            ),
            hint = "resample it onto the first raster's grid: gdalwarp -te XMIN YMIN XMAX YMAX -ts WIDTH HEIGHT -t_srs SRS"
        );
    }
    Ok(())
}

pub fn run(args: BlendArgs) -> Result<()> {
    let mut first = ImageRaster::open(&args.first)?;
    let mut second = ImageRaster::open(&args.second)?;
    same_grid(&first, &second)?;
    let mut alpha = match &args.alpha {
        Some(p) => {
            let a = ImageRaster::open(p)?;
            same_grid(&first, &a)?;
            if a.bands != 1 {
                bail!(
                    usage,
                    format!("--alpha {}: {} bands, one expected", p.display(), a.bands),
                    hint = "pick the band with gdal_translate -b N"
                );
            }
            Some(a)
        }
        None => None,
    };
    let blend = match (&args.weights, &args.alpha, args.alpha_band) {
        (Some(w), _, _) => parse_weights(w)?,
        (None, None, None) => parse_weights("0.5,0.5")?,
        _ => Blend::Alpha,
    };
    if let Some(n) = args.alpha_band
        && (n == 0 || n > first.bands || first.bands < 2)
    {
        bail!(
            usage,
            format!(
                "--alpha-band {n}: {} has {} bands",
                args.first.display(),
                first.bands
            ),
            hint = "give a band from 1 to the band count, other than the only one"
        );
    }
    let colour_bands = first.bands - args.alpha_band.map_or(0, |_| 1);
    if second.bands != colour_bands || second.sample_type != first.sample_type {
        bail!(
            input,
            format!(
                "{} has {} {} bands, {} needs {colour_bands} {} bands",
                args.second.display(),
                second.bands,
                second.sample_type.name(),
                args.first.display(),
                first.sample_type.name()
            ),
            hint = "convert with gdal_translate -ot TYPE -b N"
        );
    }
    let mut inputs = vec![args.first.as_path(), args.second.as_path()];
    inputs.extend(args.alpha.as_deref());
    let target = Target::check(&args.output, args.overwrite.overwrite, &inputs)?;
    let (w, h) = (first.meta.width, first.meta.height);
    let spec = OutputSpec {
        width: w,
        height: h,
        bands: colour_bands,
        data_type: gdal_type(first.sample_type),
        geo_transform: first.meta.geo_transform,
        projection: first.meta.projection.clone(),
        nodata: first.meta.nodata,
        colors: Vec::new(),
        category_names: Vec::new(),
        compression: args.compression.compression()?.continuous(),
    };
    let mut output = OutputRaster::create(&target, &spec)?;
    let nd = BlendNodata {
        a: first.meta.nodata,
        b: second.meta.nodata,
        alpha: match &alpha {
            Some(a) => a.meta.nodata,
            None => args.alpha_band.and(first.meta.nodata),
        },
    };
    let device = args.device.resolve()?;
    let start = std::time::Instant::now();
    for y in (0..h).step_by(STRIP) {
        let window = Rect::new(0, y, w, STRIP.min(h - y));
        let mut a = first.read(window)?;
        let b = second.read(window)?;
        let weight = match (&mut alpha, args.alpha_band) {
            (Some(r), _) => Some(r.read(window)?),
            (None, Some(n)) => Some(take_band(&mut a, n - 1)),
            (None, None) => None,
        };
        let out = blend_bands(device.as_ref(), blend, &a, &b, weight.as_ref(), nd)?;
        output.write(window, &out)?;
    }
    output.finish()?;
    if !args.quiet {
        eprintln!(
            "wrote {} ({w}x{h}, {colour_bands} bands, {} in {:.3} s)",
            target.shown().display(),
            device.as_ref().map_or("host", |d| d.info().name.as_str()),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Removes band `i` from `bands` and returns it.
fn take_band(bands: &mut Bands, i: usize) -> Bands {
    with_bands!(bands, p => crate::pixel::Pixel::wrap(vec![p.remove(i)]))
}

/// `blend` over `a` and `b` (one type) with the alpha band `weight`.
fn blend_bands(
    device: Option<&Device>,
    blend: Blend,
    a: &Bands,
    b: &Bands,
    weight: Option<&Bands>,
    nd: BlendNodata,
) -> Result<Bands> {
    macro_rules! typed {
        ($pa:ident, $pb:ident) => {
            Ok(match (weight, device) {
                (None, None) => crate::pixel::Pixel::wrap(blend.apply::<_, u8>($pa, $pb, None, nd)),
                (None, Some(d)) => {
                    crate::pixel::Pixel::wrap(blend_cl::apply::<_, u8>(d, blend, $pa, $pb, None, nd)?)
                }
                (Some(wb), None) => with_bands!(wb, pw => crate::pixel::Pixel::wrap(
                    blend.apply($pa, $pb, Some(&pw[0]), nd)
                )),
                (Some(wb), Some(d)) => with_bands!(wb, pw => crate::pixel::Pixel::wrap(
                    blend_cl::apply(d, blend, $pa, $pb, Some(&pw[0]), nd)?
                )),
            })
        };
    }
    match (a, b) {
        (Bands::U8(pa), Bands::U8(pb)) => typed!(pa, pb),
        (Bands::U16(pa), Bands::U16(pb)) => typed!(pa, pb),
        (Bands::I16(pa), Bands::I16(pb)) => typed!(pa, pb),
        (Bands::F32(pa), Bands::F32(pb)) => typed!(pa, pb),
        _ => bail!(
            input,
            "the two rasters have different sample types",
            hint = "convert with gdal_translate -ot TYPE"
        ),
    }
}
