//! Quick-look maps: small PNG pictures of class rasters and mismatch
//! rasters for reports, built while the raster streams past (strips in any
//! size, top to bottom) so no whole raster is ever held.
//!
//! Class maps show, per picture cell, the most frequent class of the
//! pixels it covers (MODE, as GDAL's overviews of class rasters): a map
//! sampled at single pixels looks like noise when each cell covers hundreds.
//! Mismatch maps keep, per picture cell, the worst mismatch of the pixels it
//! covers, so a single differing pixel in a large raster still shows. Colours come from the
//! raster's colour table where it has one.

use mapfilter_core::error::{Error, Result};
use mapfilter_core::io::ClassSource;
use mapfilter_core::metrics::{
    MISMATCH_BOTH_NODATA, MISMATCH_DIFFERS, MISMATCH_EQUAL, MISMATCH_NODATA,
};
use tiles::Rect;

/// Default longest side of a quick-look picture in pixels.
pub const DEFAULT_SIDE: usize = 512;

/// How a picture cell summarises the source pixels it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// The most frequent value among the covered pixels (ties: the lowest).
    Majority,
    /// The worst mismatch code among the covered pixels.
    WorstMismatch,
}

/// A downsampled picture of a raster, filled strip by strip.
#[derive(Clone, Debug)]
pub struct QuickLook {
    pub width: usize,
    pub height: usize,
    src_width: usize,
    src_height: usize,
    mode: Mode,
    /// Source column → picture cell.
    col_map: Vec<usize>,
    cells: Vec<u16>,
    /// Majority: the picture row being tallied and, per cell of it, the
    /// counts of the values seen (few per cell: a short list beats a map).
    tally_row: usize,
    tally: Vec<Vec<(u16, u32)>>,
}

impl QuickLook {
    /// A picture of a `src_width × src_height` class raster, downsampled by
    /// majority to at most `max_side` pixels on its longer side; `fill`
    /// marks cells not yet seen (use the nodata code).
    pub fn classes(src_width: usize, src_height: usize, max_side: usize, fill: u16) -> Self {
        Self::new(src_width, src_height, max_side, Mode::Majority, fill)
    }

    /// A picture of a mismatch raster (values of [`mapfilter_core::metrics`]).
    pub fn mismatch(src_width: usize, src_height: usize, max_side: usize) -> Self {
        Self::new(
            src_width,
            src_height,
            max_side,
            Mode::WorstMismatch,
            MISMATCH_BOTH_NODATA as u16,
        )
    }

    fn new(src_width: usize, src_height: usize, max_side: usize, mode: Mode, fill: u16) -> Self {
        let long = src_width.max(src_height).max(1);
        let scale = (long as f64 / max_side.max(1) as f64).max(1.0);
        let width = ((src_width as f64 / scale).round() as usize).clamp(1, src_width.max(1));
        let height = ((src_height as f64 / scale).round() as usize).clamp(1, src_height.max(1));
        let col_map = (0..src_width).map(|x| x * width / src_width).collect();
        QuickLook {
            width,
            height,
            src_width,
            src_height,
            mode,
            col_map,
            cells: vec![fill; width * height],
            tally_row: 0,
            tally: match mode {
                Mode::Majority => vec![Vec::new(); width],
                Mode::WorstMismatch => Vec::new(),
            },
        }
    }

    /// Writes the tallied picture row's majorities into its cells.
    fn flush_tally(&mut self) {
        let cells = &mut self.cells[self.tally_row * self.width..][..self.width];
        for (cell, counts) in cells.iter_mut().zip(&mut self.tally) {
            if let Some(&(v, _)) = counts
                .iter()
                .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            {
                *cell = v;
            }
            counts.clear();
        }
    }

    /// Adds a full-width strip of source rows (`window.x == 0`).
    pub fn add<T: Copy + Into<u16>>(&mut self, window: Rect, data: &[T]) {
        debug_assert_eq!(window.width, self.src_width);
        let w = self.src_width;
        match self.mode {
            Mode::Majority => {
                for (r, row) in data.chunks_exact(w.max(1)).enumerate() {
                    let sy = window.y + r;
                    let cy = sy * self.height / self.src_height;
                    if cy != self.tally_row {
                        self.flush_tally();
                        self.tally_row = cy;
                    }
                    for (&v, &cx) in row.iter().zip(&self.col_map) {
                        let v: u16 = v.into();
                        let counts = &mut self.tally[cx];
                        match counts.iter_mut().find(|(c, _)| *c == v) {
                            Some((_, n)) => *n += 1,
                            None => counts.push((v, 1)),
                        }
                    }
                    if sy + 1 == self.src_height {
                        self.flush_tally();
                    }
                }
            }
            Mode::WorstMismatch => {
                for (r, row) in data.chunks_exact(w.max(1)).enumerate() {
                    let cy = (window.y + r) * self.height / self.src_height;
                    let cells = &mut self.cells[cy * self.width..][..self.width];
                    for (&v, &cx) in row.iter().zip(&self.col_map) {
                        let v: u16 = v.into();
                        if severity(v) > severity(cells[cx]) {
                            cells[cx] = v;
                        }
                    }
                }
            }
        }
    }

    /// A class picture of `source`, read in full-width strips of about
    /// 8 MiB.
    pub fn sample(source: &mut dyn ClassSource, max_side: usize, fill: u16) -> Result<Self> {
        let (w, h) = source.size();
        let mut q = Self::classes(w, h, max_side, fill);
        let rows = ((4 << 20) / w.max(1)).clamp(1, h.max(1));
        let mut strip = Vec::new();
        for y in (0..h).step_by(rows) {
            let window = Rect::new(0, y, w, rows.min(h - y));
            strip.resize(window.width * window.height, 0u16);
            mapfilter_core::interrupt::check()?;
            source.read(window, &mut strip)?;
            q.add(window, &strip);
        }
        Ok(q)
    }

    /// The cell values, row-major.
    pub fn cells(&self) -> &[u16] {
        &self.cells
    }

    /// Encodes the picture as an RGBA PNG with `palette`.
    pub fn to_png(&self, palette: &Palette) -> Result<Vec<u8>> {
        let rgba: Vec<u8> = self.cells.iter().flat_map(|&c| palette.color(c)).collect();
        encode_png(self.width, self.height, &rgba)
    }
}

/// Which mismatch shows when several fall in one cell: differs > nodata
/// mismatch > equal > common nodata.
fn severity(v: u16) -> u8 {
    match v as u8 {
        MISMATCH_DIFFERS => 3,
        MISMATCH_NODATA => 2,
        MISMATCH_EQUAL => 1,
        _ => 0,
    }
}

/// Encodes 8-bit RGBA pixels as a PNG file in memory.
pub fn encode_png(width: usize, height: usize, rgba: &[u8]) -> Result<Vec<u8>> {
    let png_error = |e: png::EncodingError| Error::io(format!("cannot encode a PNG: {e}"));
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width as u32, height as u32);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header().map_err(png_error)?;
    writer.write_image_data(rgba).map_err(png_error)?;
    writer.finish().map_err(png_error)?;
    Ok(out)
}

/// Colours by class code.
#[derive(Clone, Debug)]
pub struct Palette {
    /// RGBA by code for codes below its length; others get generated colours.
    table: Vec<[u8; 4]>,
    nodata: Option<u16>,
}

impl Palette {
    /// The raster's colour table (RGBA entries by code) where it has one,
    /// generated distinct colours elsewhere; `nodata` is transparent.
    pub fn from_color_table(colors: &[[i16; 4]], nodata: Option<u16>) -> Self {
        Palette {
            table: colors
                .iter()
                .map(|c| c.map(|v| v.clamp(0, 255) as u8))
                .collect(),
            nodata,
        }
    }

    /// Colours given per code (others generated); `nodata` transparent.
    pub fn from_entries(entries: &[(u16, [u8; 4])], nodata: Option<u16>) -> Self {
        let len = entries.iter().map(|e| e.0 as usize + 1).max().unwrap_or(0);
        let mut table = vec![[0, 0, 0, 0]; len];
        for &(code, rgba) in entries {
            table[code as usize] = rgba;
        }
        Palette { table, nodata }
    }

    /// The same colours with `nodata` transparent instead.
    pub fn with_nodata(&self, nodata: Option<u16>) -> Self {
        Palette {
            table: self.table.clone(),
            nodata,
        }
    }

    /// The colours of mismatch maps: equal light grey, differs red, nodata
    /// mismatch blue, common nodata transparent.
    pub fn mismatch() -> Self {
        let mut table = vec![[0, 0, 0, 0]; 256];
        table[MISMATCH_EQUAL as usize] = [225, 225, 225, 255];
        table[MISMATCH_DIFFERS as usize] = [214, 39, 40, 255];
        table[MISMATCH_NODATA as usize] = [31, 119, 180, 255];
        Palette {
            table,
            nodata: Some(MISMATCH_BOTH_NODATA as u16),
        }
    }

    /// The colour of `code`.
    pub fn color(&self, code: u16) -> [u8; 4] {
        if Some(code) == self.nodata {
            return [0, 0, 0, 0];
        }
        match self.table.get(code as usize) {
            Some(c) if c[3] > 0 || c[..3] != [0, 0, 0] => *c,
            _ => generated(code),
        }
    }

    /// `#rrggbb` of `code` for legends.
    pub fn hex(&self, code: u16) -> String {
        let [r, g, b, _] = self.color(code);
        format!("#{r:02x}{g:02x}{b:02x}")
    }
}

/// A distinct, opaque colour per code: hues a golden angle apart.
fn generated(code: u16) -> [u8; 4] {
    let s = 0.55 + 0.3 * ((code / 7) % 2) as f64;
    super::colour::hsv_rgba(code as f64 * super::colour::GOLDEN_ANGLE, s, 0.85)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majority_over_strips() {
        // 8×4 raster shrunk to 4×2: each cell covers 2×2 pixels; three of
        // them hold the cell's class, one a stray code. Strips split cells.
        let mut data = [0u16; 32];
        for y in 0..4 {
            for x in 0..8 {
                data[y * 8 + x] = (x / 2 + 4 * (y / 2)) as u16;
            }
        }
        for (x, y) in [
            (0, 0),
            (3, 1),
            (4, 0),
            (7, 1),
            (1, 2),
            (2, 3),
            (5, 3),
            (6, 2),
        ] {
            data[y * 8 + x] = 99;
        }
        let mut q = QuickLook::classes(8, 4, 4, 999);
        q.add(Rect::new(0, 0, 8, 1), &data[..8]);
        q.add(Rect::new(0, 1, 8, 3), &data[8..]);
        assert_eq!((q.width, q.height), (4, 2));
        assert_eq!(q.cells(), &[0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn salt_noise_does_not_show_in_a_large_map() {
        // 1 pixel in 5 a stray class: nearest sampling would show about a
        // fifth of the cells stray; the majority shows none.
        let data: Vec<u16> = (0..400 * 400)
            .map(|i| if i % 5 == 0 { 7 } else { 2 })
            .collect();
        let mut q = QuickLook::classes(400, 400, 40, 0);
        q.add(Rect::new(0, 0, 400, 400), &data);
        assert!(q.cells().iter().all(|&c| c == 2));
    }

    #[test]
    fn sampling_a_source_matches_strips() {
        let data: Vec<u16> = (0..60 * 30).map(|i| (i % 13) as u16).collect();
        let mut src = mapfilter_core::io::MemRaster::new(60, 30, data.clone());
        let sampled = QuickLook::sample(&mut src, 20, 0).unwrap();
        let mut streamed = QuickLook::classes(60, 30, 20, 0);
        streamed.add(Rect::new(0, 0, 60, 30), &data);
        assert_eq!((sampled.width, sampled.height), (20, 10));
        assert_eq!(sampled.cells(), streamed.cells());
    }

    #[test]
    fn small_rasters_keep_their_size() {
        let q = QuickLook::classes(72, 64, 512, 0);
        assert_eq!((q.width, q.height), (72, 64));
    }

    #[test]
    fn worst_mismatch_survives_downsampling() {
        let mut m = vec![MISMATCH_EQUAL; 16 * 16];
        m[5 * 16 + 9] = MISMATCH_DIFFERS;
        m[15 * 16 + 15] = MISMATCH_NODATA;
        let mut q = QuickLook::mismatch(16, 16, 4);
        q.add(Rect::new(0, 0, 16, 16), &m);
        assert_eq!((q.width, q.height), (4, 4));
        let mut expected = [MISMATCH_EQUAL as u16; 16];
        expected[4 + 2] = MISMATCH_DIFFERS as u16;
        expected[15] = MISMATCH_NODATA as u16;
        assert_eq!(q.cells(), &expected[..]);
    }

    #[test]
    fn png_has_signature_and_palette_colours() {
        let p = Palette::from_color_table(&[[0, 0, 0, 0], [10, 20, 30, 255]], Some(0));
        assert_eq!(p.color(0), [0, 0, 0, 0]);
        assert_eq!(p.color(1), [10, 20, 30, 255]);
        assert_eq!(p.color(7)[3], 255); // generated, opaque
        assert_ne!(p.color(7), p.color(8));
        assert_eq!(p.hex(1), "#0a141e");
        let mut q = QuickLook::classes(2, 2, 10, 0);
        q.add(Rect::new(0, 0, 2, 2), &[0u16, 1, 7, 1]);
        let png = q.to_png(&p).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }
}
