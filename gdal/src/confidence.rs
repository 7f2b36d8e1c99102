//! `smooth --confidence RASTER[:BAND]`: a per-pixel vote weight read beside
//! the class raster and quantised to integers once, on the host
//! (docs/semantics.md#confidence): integer bands as they are (0..=scale),
//! floating-point bands as `round(v / scale · 65535)`. Nodata and NaN
//! weigh 0. Read window by window through [`ClassSource`], so it streams
//! with the class raster's tiles.

use gdal::Dataset;
use gdal::raster::GdalDataType;
use mapfilter_core::bail;
use mapfilter_core::error::{Error, Result, Setting};
use mapfilter_core::io::ClassSource;
use std::path::PathBuf;
use tiles::Rect;

pub use mapfilter_core::confidence::FLOAT_QUANTA;
use mapfilter_core::confidence::Quantiser;

/// `--confidence` and `--confidence-scale` as given.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfidenceSpec {
    pub path: PathBuf,
    pub band: usize,
    /// The value that means full confidence (`None`: from the band's
    /// metadata, else 1 for floating-point bands).
    pub scale: Option<f64>,
}

impl ConfidenceSpec {
    /// Parses `RASTER[:BAND]` (a trailing `:N` is the band when the whole
    /// text is not an existing file).
    pub fn parse(text: &str, scale: Option<f64>) -> Result<Self> {
        let (path, band) = match text.rsplit_once(':') {
            Some((p, b)) if !std::path::Path::new(text).exists() && b.parse::<usize>().is_ok() => {
                (p, b.parse().unwrap_or(1))
            }
            _ => (text, 1),
        };
        if band == 0 {
            bail!(
                usage,
                format!("{} band 0", Setting::Confidence),
                hint = "bands count from 1"
            );
        }
        if let Some(s) = scale
            && !(s.is_finite() && s > 0.0)
        {
            bail!(
                usage,
                format!(
                    "{} is not a positive number",
                    Setting::ConfidenceScale.is(s)
                ),
                hint = "e.g. 1 for 0–1 floats, 100 for percentages, 255 for bytes"
            );
        }
        Ok(ConfidenceSpec {
            path: path.into(),
            band,
            scale,
        })
    }

    /// How reports show it.
    pub fn label(&self) -> String {
        format!("{}:{}", self.path.display(), self.band)
    }

    /// Opens the raster for a class raster of `width` × `height`.
    pub fn open(&self, width: usize, height: usize) -> Result<ConfidenceRaster> {
        let ds = crate::class_raster::open(&self.path)?;
        let name = self.path.display().to_string();
        let gdal = |e: gdal::errors::GdalError| Error::io(format!("{name}: {e}"));
        if self.band > ds.raster_count() {
            bail!(
                usage,
                format!("{name} has no band {}", self.band),
                hint = format!("it has {} band(s)", ds.raster_count())
            );
        }
        let (w, h) = ds.raster_size();
        if (w, h) != (width, height) {
            bail!(
                input,
                format!("{name} is {w}x{h}, the class raster {width}x{height}"),
                hint = "the confidence raster must be on the class raster's grid"
            );
        }
        let band = ds.rasterband(self.band).map_err(gdal)?;
        let float = matches!(
            band.band_type(),
            GdalDataType::Float32 | GdalDataType::Float64
        );
        let scale = match self.scale {
            Some(s) => s,
            // A GDAL scale factor maps the stored values to 0–1 physical ones.
            None => match band.scale() {
                Some(f) if f > 0.0 && f != 1.0 && band.offset().unwrap_or(0.0) == 0.0 => 1.0 / f,
                _ if float => 1.0,
                _ => bail!(
                    usage,
                    format!("{name}: the scale of its integer confidences is not known"),
                    hint = format!(
                        "give {} (percent) or 255 (bytes)",
                        Setting::ConfidenceScale.is(100)
                    )
                ),
            },
        };
        if !float && (scale.fract() != 0.0 || scale > u16::MAX as f64) {
            bail!(
                usage,
                format!(
                    "{} for integer confidences",
                    Setting::ConfidenceScale.is(scale)
                ),
                hint = "integer bands take an integer scale up to 65535"
            );
        }
        let quantiser = Quantiser::new(float, scale, band.no_data_value(), &name)?;
        Ok(ConfidenceRaster {
            ds,
            band: self.band,
            name,
            quantiser,
            size: (w, h),
        })
    }
}

/// An open confidence band, read as quantised weights.
pub struct ConfidenceRaster {
    ds: Dataset,
    band: usize,
    name: String,
    quantiser: Quantiser,
    size: (usize, usize),
}

impl ClassSource for ConfidenceRaster {
    fn size(&self) -> (usize, usize) {
        self.size
    }

    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        if w.is_empty() {
            return Ok(());
        }
        let band = self
            .ds
            .rasterband(self.band)
            .map_err(|e| Error::io(format!("{}: {e}", self.name)))?;
        let mut values = vec![0f64; buf.len()];
        band.read_into_slice::<f64>(
            (w.x as isize, w.y as isize),
            (w.width, w.height),
            (w.width, w.height),
            &mut values,
            None,
        )
        .map_err(|e| Error::io(format!("{}: {e}", self.name)))?;
        for (q, &v) in buf.iter_mut().zip(&values) {
            *q = self.quantiser.weight(v)?;
        }
        Ok(())
    }
}
