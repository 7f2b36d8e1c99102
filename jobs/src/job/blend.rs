//! Blending two images of one grid as a job: a weighted sum or alpha
//! blending (a weight raster, or a band of the first) in strips, on the
//! host or an OpenCL device (the same bits), into a GeoTIFF with the first
//! raster's georeferencing (`mapfilter blend`). The arithmetic is the
//! core's [`mapfilter_core::filter::blend`] and its device twin.

use mapfilter_core::bail;
use mapfilter_core::device::Device;
use mapfilter_core::error::{Result, Setting};
use mapfilter_core::filter::blend::{Blend, BlendNodata};
use mapfilter_core::filter::blend_cl;
use mapfilter_core::io::{ImageSink, ImageSource};
use mapfilter_core::output::Target;
use mapfilter_core::pixel::{Bands, Pixel};
use mapfilter_core::with_bands;
use mapfilter_gdal::image_raster::{ImageRaster, gdal_type};
use mapfilter_gdal::output_options::OutputCompression;
use mapfilter_gdal::output_raster::{OutputRaster, OutputSpec};
use std::path::PathBuf;
use tiles::Rect;

/// Rows per strip.
const STRIP: usize = 256;

/// What to blend, how, and where to.
pub struct BlendSpec {
    pub first: PathBuf,
    pub second: PathBuf,
    /// A one-band weight raster on the same grid (alpha blending).
    pub alpha: Option<PathBuf>,
    /// The band of the first raster (from 1) that holds the weights (alpha
    /// blending); it is left out of the output.
    pub alpha_band: Option<usize>,
    pub blend: Blend,
    pub target: Target,
    pub compression: OutputCompression,
    /// The OpenCL device to blend on; `None`: the host.
    pub device: Option<Device>,
}

/// What a blend wrote.
pub struct BlendReport {
    pub width: usize,
    pub height: usize,
    pub bands: usize,
    pub seconds: f64,
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

/// Blends the spec's rasters into its target.
pub fn run(spec: &BlendSpec) -> Result<BlendReport> {
    let mut first = ImageRaster::open(&spec.first)?;
    let mut second = ImageRaster::open(&spec.second)?;
    same_grid(&first, &second)?;
    let mut alpha = match &spec.alpha {
        Some(p) => {
            let a = ImageRaster::open(p)?;
            same_grid(&first, &a)?;
            if a.bands != 1 {
                bail!(
                    usage,
                    format!(
                        "{}: {} bands, one expected",
                        Setting::Alpha.is(p.display()),
                        a.bands
                    ),
                    hint = "pick the band with gdal_translate -b N"
                );
            }
            Some(a)
        }
        None => None,
    };
    if let Some(n) = spec.alpha_band
        && (n == 0 || n > first.bands || first.bands < 2)
    {
        bail!(
            usage,
            format!(
                "{}: {} has {} bands",
                Setting::AlphaBand.is(n),
                spec.first.display(),
                first.bands
            ),
            hint = "give a band from 1 to the band count, other than the only one"
        );
    }
    let colour_bands = first.bands - spec.alpha_band.map_or(0, |_| 1);
    if second.bands != colour_bands || second.sample_type != first.sample_type {
        bail!(
            input,
            format!(
                "{} has {} {} bands, {} needs {colour_bands} {} bands",
                spec.second.display(),
                second.bands,
                second.sample_type.name(),
                spec.first.display(),
                first.sample_type.name()
            ),
            hint = "convert with gdal_translate -ot TYPE -b N"
        );
    }
    let (w, h) = (first.meta.width, first.meta.height);
    let out_spec = OutputSpec {
        width: w,
        height: h,
        bands: colour_bands,
        data_type: gdal_type(first.sample_type),
        geo_transform: first.meta.geo_transform,
        projection: first.meta.projection.clone(),
        nodata: first.meta.nodata,
        colors: Vec::new(),
        category_names: Vec::new(),
        compression: spec.compression.clone().continuous(),
    };
    let mut output = OutputRaster::create(&spec.target, &out_spec)?;
    let nd = BlendNodata {
        a: first.meta.nodata,
        b: second.meta.nodata,
        alpha: match &alpha {
            Some(a) => a.meta.nodata,
            None => spec.alpha_band.and(first.meta.nodata),
        },
    };
    let start = std::time::Instant::now();
    for y in (0..h).step_by(STRIP) {
        let window = Rect::new(0, y, w, STRIP.min(h - y));
        let mut a = first.read(window)?;
        let b = second.read(window)?;
        let weight = match (&mut alpha, spec.alpha_band) {
            (Some(r), _) => Some(r.read(window)?),
            (None, Some(n)) => Some(take_band(&mut a, n - 1)),
            (None, None) => None,
        };
        let out = blend_bands(
            spec.device.as_ref(),
            spec.blend,
            &a,
            &b,
            weight.as_ref(),
            nd,
        )?;
        output.write(window, &out)?;
    }
    output.finish()?;
    Ok(BlendReport {
        width: w,
        height: h,
        bands: colour_bands,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Removes band `i` from `bands` and returns it.
fn take_band(bands: &mut Bands, i: usize) -> Bands {
    with_bands!(bands, p => Pixel::wrap(vec![p.remove(i)]))
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
                (None, None) => Pixel::wrap(blend.apply::<_, u8>($pa, $pb, None, nd)),
                (None, Some(d)) => {
                    Pixel::wrap(blend_cl::apply::<_, u8>(d, blend, $pa, $pb, None, nd)?)
                }
                (Some(wb), None) => with_bands!(wb, pw => Pixel::wrap(
                    blend.apply($pa, $pb, Some(&pw[0]), nd)
                )),
                (Some(wb), Some(d)) => with_bands!(wb, pw => Pixel::wrap(
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
