//! A labelled reference sample placed on a map's grid, and the scoring of
//! any map on that grid against it: the one path from "points with
//! reference labels" to an [`Assessment`] that `assess`, `sweep
//! --reference` and `batch report --reference` share. The points are read
//! (and transformed into the map's CRS) by `job::reference`; here they
//! become pixels once, so a sweep scores each of its outputs without
//! reading the points again.

use super::estimate::{self, Assessment, SamplePoint};
use super::scan::{self, Layers};
use crate::bail;
use crate::error::{Result, Setting};
use crate::io::ClassSource;
use crate::pixel_area::PixelArea;
use tiles::Rect;

/// One reference point: its position in the file (for messages), its map
/// coordinates, the pixel holding them and its reference class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Located {
    pub id: usize,
    pub x: f64,
    pub y: f64,
    pub col: usize,
    pub row: usize,
    pub label: u16,
}

/// A reference sample on one grid.
#[derive(Clone, Debug, PartialEq)]
pub struct ReferenceSample {
    pub points: Vec<Located>,
}

/// The pixel holding map coordinates (`x`, `y`), if inside a raster of
/// `size` with geotransform `gt` (none: pixel coordinates).
pub fn pixel_of(
    gt: Option<[f64; 6]>,
    size: (usize, usize),
    x: f64,
    y: f64,
) -> Option<(usize, usize)> {
    let (c, r) = match gt {
        Some(g) => {
            let det = g[1] * g[5] - g[2] * g[4];
            if det == 0.0 {
                return None;
            }
            let (dx, dy) = (x - g[0], y - g[3]);
            ((g[5] * dx - g[2] * dy) / det, (g[1] * dy - g[4] * dx) / det)
        }
        None => (x, y),
    };
    let inside = c >= 0.0 && r >= 0.0 && c < size.0 as f64 && r < size.1 as f64;
    inside.then(|| (c.floor() as usize, r.floor() as usize))
}

/// The code of `raster` at pixel (`col`, `row`).
fn code_at(raster: &mut dyn ClassSource, col: usize, row: usize) -> Result<u16> {
    let mut v = [0u16];
    raster.read(
        Rect {
            x: col,
            y: row,
            width: 1,
            height: 1,
        },
        &mut v,
    )?;
    Ok(v[0])
}

impl ReferenceSample {
    /// Places `(id, x, y, label)` points on a grid of `size` pixels with
    /// geotransform `gt`; `source` names the points' file in messages.
    /// Refuses an empty sample and points outside the grid.
    pub fn locate(
        points: impl IntoIterator<Item = (usize, f64, f64, u16)>,
        gt: Option<[f64; 6]>,
        size: (usize, usize),
        source: &str,
    ) -> Result<Self> {
        let (mut inside, mut outside) = (Vec::new(), Vec::new());
        for (id, x, y, label) in points {
            match pixel_of(gt, size, x, y) {
                Some((col, row)) => inside.push(Located {
                    id,
                    x,
                    y,
                    col,
                    row,
                    label,
                }),
                None => outside.push((id, x, y)),
            }
        }
        if let Some(&(id, x, y)) = outside.first() {
            bail!(
                input,
                format!(
                    "{} of {} points lie outside the map (the first: point {id} at {x}, {y})",
                    outside.len(),
                    outside.len() + inside.len(),
                ),
                hint = "give points drawn from this map (`mapfilter sample`), in its coordinate system or one GDAL can transform"
            );
        }
        if inside.is_empty() {
            bail!(
                input,
                format!("{source}: holds no point"),
                hint = "label the points `mapfilter sample` drew and give that file"
            );
        }
        Ok(ReferenceSample { points: inside })
    }

    /// Each point's stratum, map class and reference class, read from `map`
    /// and `strata` (none: the map's classes are the strata). A point on
    /// nodata is refused: a sample drawn from these rasters has none.
    pub fn sample_points(
        &self,
        map: &mut dyn ClassSource,
        map_nodata: Option<u16>,
        mut strata: Option<(&mut dyn ClassSource, Option<u16>)>,
    ) -> Result<Vec<SamplePoint>> {
        let mut out = Vec::with_capacity(self.points.len());
        for p in &self.points {
            let m = code_at(map, p.col, p.row)?;
            if Some(m) == map_nodata {
                bail!(
                    input,
                    format!(
                        "point {} at {}, {} falls on nodata in the map (pixel {}, {})",
                        p.id, p.x, p.y, p.col, p.row
                    ),
                    hint = "a sample drawn from this map has no such point: check the map and the points belong together"
                );
            }
            let stratum = match &mut strata {
                Some((s, nodata)) => {
                    let v = code_at(&mut **s, p.col, p.row)?;
                    if Some(v) == *nodata {
                        bail!(
                            input,
                            format!(
                                "point {} at {}, {} falls on nodata in the strata raster",
                                p.id, p.x, p.y
                            ),
                            hint = format!(
                                "give {} the raster the sample was drawn from",
                                Setting::Strata
                            )
                        );
                    }
                    v
                }
                None => m,
            };
            out.push(SamplePoint {
                stratum,
                map: m,
                reference: p.label,
            });
        }
        Ok(out)
    }

    /// The estimates for `map` (and `strata`, on its grid) against this
    /// sample: the points' classes, the strata's sizes in one streaming
    /// pass ([`scan::strata`]), then [`estimate::assess`].
    pub fn score(
        &self,
        map: &mut dyn ClassSource,
        map_nodata: Option<u16>,
        strata: Option<(&mut dyn ClassSource, Option<u16>)>,
        pixel_area: &PixelArea,
    ) -> Result<Assessment> {
        let (mut source, nodata) = match strata {
            Some((s, nd)) => (Some(s), nd),
            None => (None, None),
        };
        if let Some(s) = &source {
            scan::check_strata_grid(
                s.size(),
                map.size(),
                &format!(
                    "give {} the raster the sample was drawn from, on the map's grid",
                    Setting::Strata
                ),
            )?;
        }
        // The casts shorten the trait objects' lifetimes to the borrows'.
        let points = self.sample_points(
            map,
            map_nodata,
            source
                .as_deref_mut()
                .map(|s| (s as &mut dyn ClassSource, nodata)),
        )?;
        let found = scan::strata(
            &mut Layers {
                map: map as &mut dyn ClassSource,
                map_nodata,
                strata: source.map(|s| (s as &mut dyn ClassSource, nodata)),
            },
            pixel_area,
        )?;
        estimate::assess(&found, &points)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemRaster;

    #[test]
    fn points_outside_the_grid_or_none_are_refused() {
        let gt = Some([100.0, 10.0, 0.0, 200.0, 0.0, -10.0]);
        let s = ReferenceSample::locate([(1, 105.0, 195.0, 3)], gt, (4, 4), "p.csv").unwrap();
        assert_eq!((s.points[0].col, s.points[0].row), (0, 0));
        let far =
            ReferenceSample::locate([(1, 105.0, 195.0, 3), (2, 0.0, 0.0, 1)], gt, (4, 4), "p")
                .unwrap_err()
                .to_string();
        assert!(
            far.contains("1 of 2 points lie outside the map (the first: point 2"),
            "{far}"
        );
        let none = ReferenceSample::locate([], gt, (4, 4), "p.csv").unwrap_err();
        assert!(none.to_string().contains("p.csv: holds no point"));
    }

    #[test]
    fn scoring_reads_each_point_and_counts_the_strata() {
        // 2 x 2 map: classes 1 1 / 2 2; one point per pixel, one wrong.
        let mut map = MemRaster::new(2, 2, vec![1, 1, 2, 2]);
        let pts = [
            (1, 0.5, 0.5, 1),
            (2, 1.5, 0.5, 2),
            (3, 0.5, 1.5, 2),
            (4, 1.5, 1.5, 2),
        ];
        let s = ReferenceSample::locate(pts, None, (2, 2), "p").unwrap();
        let area = PixelArea::from_geotransform(None, None);
        let a = s.score(&mut map, None, None, &area).unwrap();
        assert_eq!(a.points, 4);
        // Stratum 1: half right; stratum 2: all right; equal weights.
        assert!(
            (a.overall.value - 0.75).abs() < 1e-12,
            "{}",
            a.overall.value
        );
        let mut holed = MemRaster::new(2, 2, vec![0, 1, 2, 2]);
        let err = s.score(&mut holed, Some(0), None, &area).unwrap_err();
        assert!(
            err.to_string()
                .contains("point 1 at 0.5, 0.5 falls on nodata")
        );
    }
}
