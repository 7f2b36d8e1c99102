//! The two passes of a stratified sample over a map, strip by strip through
//! [`ClassSource`] windows (memory bounded by a strip, whatever the raster
//! or mosaic size): [`strata`] counts each stratum's valid pixels and
//! their area, [`draw`] takes the pixels [`super::draw::Selector`] picks.
//! A pixel is valid where the map is not nodata and, with a strata raster,
//! neither is the stratum. Also used by `assess`, which needs the strata's
//! sizes the sample was drawn from.

use super::draw::Selector;
use super::estimate::Stratum;
use crate::bail;
use crate::error::{Result, Setting};
use crate::io::ClassSource;
use crate::pixel_area::PixelArea;
use tiles::Rect;

/// Pixels per strip read (the map's and the strata's codes: 4 bytes each).
const STRIP_PIXELS: usize = 1 << 21;

/// The map and, where they differ from its classes, the strata.
pub struct Layers<'a> {
    pub map: &'a mut dyn ClassSource,
    pub map_nodata: Option<u16>,
    pub strata: Option<(&'a mut dyn ClassSource, Option<u16>)>,
}

/// A drawn pixel: column, row, stratum and map class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drawn {
    pub col: usize,
    pub row: usize,
    pub stratum: u16,
    pub map: u16,
}

/// Refuses strata of `strata` pixels for a map of `map` pixels, with `hint`.
pub fn check_strata_grid(strata: (usize, usize), map: (usize, usize), hint: &str) -> Result<()> {
    if strata != map {
        bail!(
            input,
            format!(
                "the strata raster is {} x {} pixels, the map {} x {}",
                strata.0, strata.1, map.0, map.1
            ),
            hint = hint
        );
    }
    Ok(())
}

impl Layers<'_> {
    fn check(&self) -> Result<(usize, usize)> {
        let size = self.map.size();
        if let Some((s, _)) = &self.strata {
            check_strata_grid(
                s.size(),
                size,
                &format!(
                    "give {} a raster on the map's grid (gdalwarp -te/-tr to align it)",
                    Setting::Strata
                ),
            )?;
        }
        Ok(size)
    }

    /// Calls `each(col, row, stratum, map)` on every valid pixel, in raster order.
    fn for_each_valid(&mut self, mut each: impl FnMut(usize, usize, u16, u16)) -> Result<()> {
        let (w, h) = self.check()?;
        let rows = (STRIP_PIXELS / w.max(1)).clamp(1, h.max(1));
        let (mut map, mut strata) = (Vec::new(), Vec::new());
        for y in (0..h).step_by(rows) {
            crate::interrupt::check()?;
            let window = Rect {
                x: 0,
                y,
                width: w,
                height: rows.min(h - y),
            };
            map.resize(window.area() as usize, 0);
            self.map.read(window, &mut map)?;
            if let Some((s, _)) = &mut self.strata {
                strata.resize(window.area() as usize, 0);
                s.read(window, &mut strata)?;
            }
            let strata_nodata = self.strata.as_ref().and_then(|(_, nd)| *nd);
            for (i, &m) in map.iter().enumerate() {
                if Some(m) == self.map_nodata {
                    continue;
                }
                let s = if self.strata.is_some() { strata[i] } else { m };
                if self.strata.is_some() && Some(s) == strata_nodata {
                    continue;
                }
                each(i % w, y + i / w, s, m);
            }
        }
        Ok(())
    }
}

/// Each stratum holding a valid pixel, codes ascending, with its pixel
/// count and area (`pixel_area`, row by row where it varies).
pub fn strata(layers: &mut Layers, pixel_area: &PixelArea) -> Result<Vec<Stratum>> {
    let mut pixels = vec![0u64; 1 << 16];
    let mut area = vec![0f64; 1 << 16];
    layers.for_each_valid(|_, row, s, _| {
        pixels[s as usize] += 1;
        area[s as usize] += pixel_area
            .row_areas
            .get(row)
            .copied()
            .unwrap_or(pixel_area.area);
    })?;
    Ok((0..=u16::MAX)
        .filter(|&c| pixels[c as usize] > 0)
        .map(|code| Stratum {
            code,
            pixels: pixels[code as usize],
            area: area[code as usize],
        })
        .collect())
}

/// Draws `counts[h]` pixels of each of `strata` (as [`strata`] returned
/// them for these layers) from `seed`, in raster order.
pub fn draw(
    layers: &mut Layers,
    strata: &[Stratum],
    counts: &[u64],
    seed: u64,
) -> Result<Vec<Drawn>> {
    let pixels: Vec<u64> = strata.iter().map(|s| s.pixels).collect();
    let mut selector = Selector::new(seed, &pixels, counts);
    let mut index = vec![u16::MAX; 1 << 16];
    for (h, s) in strata.iter().enumerate() {
        index[s.code as usize] = h as u16;
    }
    let mut drawn = Vec::with_capacity(counts.iter().sum::<u64>() as usize);
    let mut unknown = None;
    layers.for_each_valid(|col, row, stratum, map| {
        let h = index[stratum as usize];
        if h == u16::MAX {
            unknown = Some(stratum);
        } else if selector.take(h as usize) {
            drawn.push(Drawn {
                col,
                row,
                stratum,
                map,
            });
        }
    })?;
    if unknown.is_some() || selector.missing() > 0 {
        bail!(
            input,
            "the rasters changed between the two passes of the sample",
            hint = "sample rasters that no other process is writing"
        );
    }
    Ok(drawn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemRaster;

    #[test]
    fn counts_and_draws_valid_pixels_only() {
        // 4 x 3, nodata 0 in the map; strata from a second raster with nodata 9.
        let mut map = MemRaster::new(4, 3, vec![1, 1, 2, 0, 1, 2, 2, 2, 0, 1, 1, 2]);
        let mut strata = MemRaster::new(4, 3, vec![5, 5, 5, 5, 6, 6, 9, 6, 6, 6, 6, 6]);
        let area =
            PixelArea::from_geotransform(Some([0.0, 10.0, 0.0, 0.0, 0.0, -10.0]), Some("metre"));
        let mut layers = Layers {
            map: &mut map,
            map_nodata: Some(0),
            strata: Some((&mut strata, Some(9))),
        };
        let s = strata_of(&mut layers, &area);
        assert_eq!(
            s.iter()
                .map(|s| (s.code, s.pixels, s.area))
                .collect::<Vec<_>>(),
            [(5, 3, 300.0), (6, 6, 600.0)]
        );
        let all = draw(&mut layers, &s, &[3, 6], 1).unwrap();
        assert_eq!(all.len(), 9);
        assert!(
            all.iter()
                .all(|d| d.map != 0 && !(d.col == 2 && d.row == 1))
        );
        let some = draw(&mut layers, &s, &[2, 2], 42).unwrap();
        assert_eq!(some, draw(&mut layers, &s, &[2, 2], 42).unwrap());
        assert_eq!(some.iter().filter(|d| d.stratum == 5).count(), 2);
        // Without a strata raster the strata are the map's classes.
        let mut layers = Layers {
            map: &mut map,
            map_nodata: Some(0),
            strata: None,
        };
        let s = strata_of(&mut layers, &area);
        assert_eq!(
            s.iter().map(|s| (s.code, s.pixels)).collect::<Vec<_>>(),
            [(1, 5), (2, 5)]
        );
    }

    fn strata_of(layers: &mut Layers, area: &PixelArea) -> Vec<Stratum> {
        strata(layers, area).unwrap()
    }
}
