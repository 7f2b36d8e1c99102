//! The ground area of a raster's pixels, from its geotransform and CRS
//! unit: a model type, computed where a raster is opened (GDAL I/O) and
//! used by the accuracy figures and reports, so neither side depends on
//! the other for it.

use serde::Serialize;

/// Area of one pixel, from a geotransform: in map units² for a projected
/// raster; in m² on the ellipsoid for a geographic one, where the area
/// depends on the row's latitude ([`PixelArea::geographic`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PixelArea {
    /// Area of one pixel (a geographic raster: the mean over its rows).
    pub area: f64,
    /// Unit of `area`, e.g. "m²", or "pixels" without georeferencing.
    pub unit: String,
    /// How the area was measured, where that is not plain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Area of a pixel in each row (geographic rasters only).
    #[serde(skip)]
    pub row_areas: Vec<f64>,
}

impl PixelArea {
    /// `|a·e − b·d|` of the geotransform `[x0, a, b, y0, d, e]`; `linear_unit`
    /// names the CRS's unit ("metre" gives "m²"). No geotransform: 1 pixel.
    pub fn from_geotransform(gt: Option<[f64; 6]>, linear_unit: Option<&str>) -> Self {
        match gt {
            Some(g) => {
                let unit = match linear_unit {
                    Some("metre" | "meter" | "m") => "m²".to_string(),
                    Some(u) if !u.is_empty() => format!("{u}²"),
                    _ => "map units²".to_string(),
                };
                PixelArea {
                    area: (g[1] * g[5] - g[2] * g[4]).abs(),
                    unit,
                    note: None,
                    row_areas: Vec::new(),
                }
            }
            None => PixelArea {
                area: 1.0,
                unit: "pixels".to_string(),
                note: None,
                row_areas: Vec::new(),
            },
        }
    }

    /// Pixel areas in m² of a north-up raster in degrees of longitude and
    /// latitude on the ellipsoid of semi-axes `a` ≥ `b` (metres): each row's
    /// is the area of its band of latitudes on the ellipsoid times its share
    /// of longitude (exact on the ellipsoid, not a spherical approximation).
    pub fn geographic(gt: [f64; 6], height: usize, a: f64, b: f64) -> Self {
        let e2 = 1.0 - (b * b) / (a * a);
        let e = e2.sqrt();
        // The authalic integral: area from the equator to latitude φ per
        // radian of longitude is b²/2 · q(φ).
        let q = |phi_deg: f64| {
            let s = phi_deg.clamp(-90.0, 90.0).to_radians().sin();
            let first = s / (1.0 - e2 * s * s);
            let second = if e > 0.0 {
                ((1.0 + e * s) / (1.0 - e * s)).ln() / (2.0 * e)
            } else {
                s
            };
            first + second
        };
        let dlon = gt[1].abs().to_radians();
        let row_areas: Vec<f64> = (0..height)
            .map(|y| {
                let top = gt[3] + y as f64 * gt[5];
                let bottom = top + gt[5];
                b * b / 2.0 * dlon * (q(top) - q(bottom)).abs()
            })
            .collect();
        let area = row_areas.iter().sum::<f64>() / height.max(1) as f64;
        PixelArea {
            area,
            unit: "m²".to_string(),
            note: Some("geographic CRS: each row's pixel area on the ellipsoid".to_string()),
            row_areas,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_area_from_rotated_geotransform() {
        let a = PixelArea::from_geotransform(Some([0.0, 2.0, 1.0, 0.0, 0.5, -3.0]), Some("foot"));
        assert_eq!(a.area, 6.5);
        assert_eq!(a.unit, "foot²");
        assert_eq!(PixelArea::from_geotransform(None, None).unit, "pixels");
    }

    #[test]
    fn geographic_pixel_areas_follow_the_ellipsoid() {
        let (a, b) = (6_378_137.0, 6_356_752.314_245);
        // One degree cells from the equator to the pole: their sum is the
        // WGS84 ellipsoid's area over 360 × 4 (510 065 621.7 km² in all).
        let p = PixelArea::geographic([0.0, 1.0, 0.0, 90.0, 0.0, -1.0], 90, a, b);
        let quarter: f64 = p.row_areas.iter().sum::<f64>() * 360.0;
        assert!(
            (quarter * 2.0 / 1e6 - 510_065_621.7).abs() < 1.0,
            "{quarter}"
        );
        // A 1° cell at the equator: 12 308.8 km² (111.32 km × 110.57 km).
        let eq = p.row_areas[89];
        assert!((eq / 1e6 - 12_308.8).abs() < 1.0, "{eq}");
        assert!(p.row_areas[0] < p.row_areas[89] / 50.0);
        assert_eq!(p.unit, "m²");
    }
}
