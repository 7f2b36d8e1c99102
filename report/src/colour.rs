//! Generated class colours: hues a golden angle apart, so neighbouring class
//! indices get clearly different colours. Used by `gen` (colour tables of
//! synthetic rasters) and the quick-look pictures (codes without a colour).

/// The golden angle in degrees (360° · (2 − φ)).
pub const GOLDEN_ANGLE: f64 = 137.507_764;

/// Opaque RGBA of the HSV colour (`hue` in degrees, any value; `s`, `v` in 0..=1).
pub fn hsv_rgba(hue: f64, s: f64, v: f64) -> [u8; 4] {
    let h = hue.rem_euclid(360.0) / 60.0;
    let c = v * s;
    let x = c * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = v - c;
    let to = |f: f64| ((f + m) * 255.0).round() as u8;
    [to(r), to(g), to(b), 255]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_hues() {
        // Full saturation and value: the six sector boundaries are the
        // primaries and secondaries.
        assert_eq!(hsv_rgba(0.0, 1.0, 1.0), [255, 0, 0, 255]);
        assert_eq!(hsv_rgba(120.0, 1.0, 1.0), [0, 255, 0, 255]);
        assert_eq!(hsv_rgba(240.0, 1.0, 1.0), [0, 0, 255, 255]);
        assert_eq!(hsv_rgba(300.0, 1.0, 1.0), [255, 0, 255, 255]);
        assert_eq!(hsv_rgba(420.0, 1.0, 1.0), [255, 255, 0, 255]);
        // No saturation: grey of the value.
        assert_eq!(hsv_rgba(77.0, 0.0, 0.5), [128, 128, 128, 255]);
    }
}
