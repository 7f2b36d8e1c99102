//! Per-pixel vote weights (`--confidence`, the Python package's
//! `confidence=`) quantised to integers once, on the host
//! (docs/semantics.md#confidence): integer values as they are
//! (0..=scale), floating-point ones as `round(v / scale · 65535)`; nodata
//! and NaN weigh 0. GDAL-free, so that the raster reader
//! (`gdal::confidence`) and arrays in memory quantise alike.

use crate::bail;
use crate::error::Result;

/// Quanta of a floating-point confidence of 1 (the scale).
pub const FLOAT_QUANTA: f64 = 65535.0;

/// How stored confidences become integer weights.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantiser {
    /// Floating-point values (else integers, kept as they are).
    pub float: bool,
    /// The value of full confidence.
    pub scale: f64,
    /// A value that weighs 0.
    pub nodata: Option<f64>,
    /// The confidences' name in messages (a file, or "confidence").
    pub name: String,
}

impl Quantiser {
    /// Checks the scale: positive, and for integers a whole number up to 65535.
    pub fn new(float: bool, scale: f64, nodata: Option<f64>, name: &str) -> Result<Self> {
        if !(scale.is_finite() && scale > 0.0) {
            bail!(
                usage,
                format!("{name}: confidence scale {scale} is not a positive number"),
                hint = "e.g. 1 for 0–1 floats, 100 for percentages, 255 for bytes"
            );
        }
        if !float && (scale.fract() != 0.0 || scale > u16::MAX as f64) {
            bail!(
                usage,
                format!("{name}: confidence scale {scale} for integer confidences"),
                hint = "integer confidences take an integer scale up to 65535"
            );
        }
        Ok(Quantiser {
            float,
            scale,
            nodata,
            name: name.to_string(),
        })
    }

    /// The integer weight of one stored value.
    pub fn weight(&self, v: f64) -> Result<u16> {
        if v.is_nan() || self.nodata == Some(v) {
            return Ok(0);
        }
        if !(0.0..=self.scale).contains(&v) {
            bail!(
                input,
                format!("{}: confidence {v} is outside 0..{}", self.name, self.scale),
                hint = "set the confidence scale to the value of full confidence"
            );
        }
        Ok(if self.float {
            (v / self.scale * FLOAT_QUANTA).round() as u16
        } else {
            v as u16
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_semantics() {
        let f = Quantiser::new(true, 1.0, None, "c").unwrap();
        assert_eq!(f.weight(1.0).unwrap(), 65535);
        assert_eq!(f.weight(0.5).unwrap(), 32768);
        assert_eq!(f.weight(f64::NAN).unwrap(), 0);
        assert!(
            f.weight(1.5)
                .unwrap_err()
                .to_string()
                .contains("outside 0..1")
        );
        let i = Quantiser::new(false, 100.0, Some(255.0), "c").unwrap();
        assert_eq!(i.weight(37.0).unwrap(), 37);
        assert_eq!(i.weight(255.0).unwrap(), 0);
        assert!(Quantiser::new(false, 1e6, None, "c").is_err());
        assert!(Quantiser::new(true, 0.0, None, "c").is_err());
    }
}
