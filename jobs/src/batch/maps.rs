//! The batch report's pictures and areas: one pass, strip by strip, over
//! the outputs' mosaic and the input read where tasks are done (a failed
//! task's input may not read at all), giving quick-look maps of the input,
//! of the mosaic and of where smoothing changed the class, and each
//! class's area before and after over the finished tasks, row by row in
//! ground units (a geographic mosaic's pixels shrink toward the poles).

use super::plan::Plan;
use mapfilter_core::error::Result;
use mapfilter_core::io::ClassSource;
use mapfilter_core::metrics::{
    MISMATCH_BOTH_NODATA, MISMATCH_DIFFERS, MISMATCH_EQUAL, MISMATCH_NODATA,
};
use mapfilter_core::pixel_area::PixelArea;
use mapfilter_gdal::class_raster::ClassRaster;
use mapfilter_report::palette::PaletteFile;
use mapfilter_report::quicklook::{DEFAULT_SIDE, Palette, QuickLook};
use std::collections::BTreeMap;
use std::path::Path;
use tiles::Rect;

/// Pixels per strip read.
const STRIP_PIXELS: usize = 1 << 21;

/// What the pass over a mosaic gives the report.
pub struct MosaicPictures {
    pub input_png: Vec<u8>,
    pub output_png: Vec<u8>,
    pub change_png: Vec<u8>,
    /// The classes' colours (legends) and names (by code).
    pub palette: Palette,
    pub names: Vec<String>,
    pub pixel_area: PixelArea,
    /// Area per class (in `pixel_area.unit`): (input, output), finished
    /// tasks only.
    pub areas: BTreeMap<u16, (f64, f64)>,
    /// Valid pixels of finished tasks, and those whose class changed.
    pub compared: u64,
    pub changed: u64,
}

/// Reads the rows `y..y + height` of `source` into `out` (full width),
/// only inside `windows` (in the output grid, `offset` pixels from the
/// source's origin); elsewhere `fill`. Marks the pixels read in `covered`.
fn read_covered(
    source: &mut ClassRaster,
    offset: (usize, usize),
    windows: &[[usize; 4]],
    strip: Rect,
    fill: u16,
    out: &mut Vec<u16>,
    covered: &mut Vec<bool>,
) -> Result<()> {
    let w = strip.width;
    out.clear();
    out.resize(strip.area() as usize, fill);
    covered.clear();
    covered.resize(strip.area() as usize, false);
    let mut part = Vec::new();
    for &[x, y, tw, th] in windows {
        let (top, bottom) = (y.max(strip.y), (y + th).min(strip.y + strip.height));
        if top >= bottom {
            continue;
        }
        let rect = Rect {
            x: x + offset.0,
            y: top + offset.1,
            width: tw,
            height: bottom - top,
        };
        part.resize(rect.area() as usize, 0);
        source.read(rect, &mut part)?;
        for row in top..bottom {
            let at = (row - strip.y) * w + x;
            let from = (row - top) * tw;
            out[at..at + tw].copy_from_slice(&part[from..from + tw]);
            covered[at..at + tw].iter_mut().for_each(|c| *c = true);
        }
    }
    Ok(())
}

/// The pass over mosaic `m` of `plan` in `dir`, its outputs' VRT at
/// `mosaic` (written by the report), tasks `done` finished.
pub fn scan(
    dir: &Path,
    plan: &Plan,
    m: usize,
    mosaic: &Path,
    done: &[[usize; 4]],
    palette: Option<&PaletteFile>,
) -> Result<MosaicPictures> {
    let mp = &plan.mosaics[m];
    let mut output = ClassRaster::open(mosaic)?;
    let mut input = ClassRaster::open(&dir.join(&mp.source))?;
    let (w, h) = output.size();
    // The output grid's origin in the input's pixels (`--border valid`
    // moves it in by the kernel's radius).
    let offset = match input.meta.geo_transform {
        Some(g) if g[1] != 0.0 && g[5] != 0.0 => {
            let o = mp.output_geo_transform;
            (
                ((o[0] - g[0]) / g[1]).round().max(0.0) as usize,
                ((o[3] - g[3]) / g[5]).round().max(0.0) as usize,
            )
        }
        _ => (0, 0),
    };
    let (in_nodata, out_nodata) = (input.nodata_code(), output.nodata_code());
    let in_fill = in_nodata.unwrap_or(u16::MAX);
    let out_fill = out_nodata.unwrap_or(u16::MAX);
    let mut ql_in = QuickLook::classes(w, h, DEFAULT_SIDE, in_fill);
    let mut ql_out = QuickLook::classes(w, h, DEFAULT_SIDE, out_fill);
    let mut ql_change = QuickLook::mismatch(w, h, DEFAULT_SIDE);
    let pixel_area = output.meta.pixel_area();
    let mut areas: BTreeMap<u16, (f64, f64)> = BTreeMap::new();
    let (mut compared, mut changed) = (0u64, 0u64);
    let rows = (STRIP_PIXELS / w.max(1)).clamp(1, h.max(1));
    let (mut before, mut after, mut covered, mut change) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for y in (0..h).step_by(rows) {
        mapfilter_core::interrupt::check()?;
        let strip = Rect::new(0, y, w, rows.min(h - y));
        read_covered(
            &mut input,
            offset,
            done,
            strip,
            in_fill,
            &mut before,
            &mut covered,
        )?;
        after.resize(strip.area() as usize, 0);
        output.read(strip, &mut after)?;
        change.clear();
        for (i, (&b, &a)) in before.iter().zip(&after).enumerate() {
            let row = y + i / w;
            let area = pixel_area
                .row_areas
                .get(row)
                .copied()
                .unwrap_or(pixel_area.area);
            let (b_ok, a_ok) = (Some(b) != in_nodata, Some(a) != out_nodata);
            let code = if !covered[i] || (!b_ok && !a_ok) {
                MISMATCH_BOTH_NODATA
            } else if b_ok != a_ok {
                MISMATCH_NODATA
            } else if a == b {
                MISMATCH_EQUAL
            } else {
                MISMATCH_DIFFERS
            };
            if covered[i] {
                if b_ok {
                    areas.entry(b).or_default().0 += area;
                }
                if a_ok {
                    areas.entry(a).or_default().1 += area;
                }
                if b_ok && a_ok {
                    compared += 1;
                    changed += u64::from(a != b);
                }
            }
            change.push(code);
        }
        ql_in.add(strip, &before);
        ql_out.add(strip, &after);
        ql_change.add(strip, &change);
    }
    let codes: Vec<u16> = areas.keys().copied().collect();
    let (palette, names) = mapfilter_report::palette::choose_for_two(
        palette,
        (&output.meta.colors, &output.meta.category_names),
        (&input.meta.colors, &input.meta.category_names),
        &codes,
        out_nodata,
    );
    Ok(MosaicPictures {
        input_png: ql_in.to_png(&palette.with_nodata(Some(in_fill)))?,
        output_png: ql_out.to_png(&palette.with_nodata(Some(out_fill)))?,
        change_png: ql_change.to_png(&Palette::mismatch())?,
        palette,
        names,
        pixel_area,
        areas,
        compared,
        changed,
    })
}
