//! Pure tile geometry for neighbourhood filters on large rasters.
//!
//! A filter with a square window of radius `halo` reads, for every output tile,
//! the tile grown by `halo` on each side. This crate owns that arithmetic and
//! nothing else: the grid of output tiles, each tile's read window clamped to
//! the input, where the clamped window lands inside the halo-padded buffer,
//! and the stitching order. It knows nothing of GDAL, OpenCL or pixel types
//! beyond `Copy`, so it can be tested alone.
//!
//! Coordinates: an output pixel `(x, y)` looks at the input pixel
//! `(x + offset, y + offset)`, where `offset` is 0 for the `same` border
//! (output as large as the input) and `halo` for the `valid` border (output
//! shrunk by `2·halo`, only windows that lie wholly inside the input).

use std::fmt;

/// An axis-aligned window of pixels, `x`/`y` its top-left corner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rect {
    pub x: usize,
    pub y: usize,
    pub width: usize,
    pub height: usize,
}

impl Rect {
    pub fn new(x: usize, y: usize, width: usize, height: usize) -> Self {
        Rect {
            x,
            y,
            width,
            height,
        }
    }

    /// Number of pixels in the window (as `u64`: rasters may exceed 2³² pixels).
    pub fn area(&self) -> u64 {
        self.width as u64 * self.height as u64
    }

    pub fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0
    }

    /// The part of `self` that lies in `other`, if they overlap.
    pub fn intersection(&self, other: &Rect) -> Option<Rect> {
        let x0 = self.x.max(other.x);
        let y0 = self.y.max(other.y);
        // Saturating: a window near 2^64 ends at the end of the address space.
        let x1 = (self.x.saturating_add(self.width)).min(other.x.saturating_add(other.width));
        let y1 = (self.y.saturating_add(self.height)).min(other.y.saturating_add(other.height));
        (x0 < x1 && y0 < y1).then(|| Rect::new(x0, y0, x1 - x0, y1 - y0))
    }
}

/// How the output raster relates to the input at its borders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Border {
    /// Output as large as the input; windows reaching outside see padding.
    Same,
    /// Output shrunk by the halo on every side; every window lies inside the input.
    Valid,
}

impl Border {
    /// Every border by its name, as [`Border::name`] and parsing spell it.
    pub const ALL: [Border; 2] = [Border::Same, Border::Valid];

    /// The border's name: `same` or `valid`.
    pub fn name(self) -> &'static str {
        match self {
            Border::Same => "same",
            Border::Valid => "valid",
        }
    }
}

impl fmt::Display for Border {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A border name that is neither `same` nor `valid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownBorder(pub String);

impl fmt::Display for UnknownBorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "border '{}' is neither same nor valid", self.0)
    }
}

impl std::error::Error for UnknownBorder {}

impl std::str::FromStr for Border {
    type Err = UnknownBorder;

    /// `same` or `valid`: the one parser of a border's name (the CLI, plans,
    /// sweeps and the Python binding all read it here).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Border::ALL
            .into_iter()
            .find(|b| b.name() == text)
            .ok_or_else(|| UnknownBorder(text.to_string()))
    }
}

/// Why a grid cannot be laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GridError {
    /// The tile size was zero.
    ZeroTile,
    /// A `valid` border leaves no output: the input is smaller than the window.
    InputSmallerThanWindow {
        width: usize,
        height: usize,
        window: usize,
    },
}

impl fmt::Display for GridError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GridError::ZeroTile => write!(f, "tile size must be at least 1"),
            GridError::InputSmallerThanWindow {
                width,
                height,
                window,
            } => write!(
                f,
                "a {width}x{height} input is smaller than the {window}x{window} window, so a valid border leaves no output"
            ),
        }
    }
}

impl std::error::Error for GridError {}

/// The output raster cut into tiles, with the halo each needs from the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileGrid {
    input_width: usize,
    input_height: usize,
    output_width: usize,
    output_height: usize,
    offset: usize,
    halo: usize,
    tile_width: usize,
    tile_height: usize,
}

impl TileGrid {
    /// Lays out square tiles of side `tile` over the output of a filter with
    /// window radius `halo` on an input of `width`×`height` pixels.
    pub fn new(
        width: usize,
        height: usize,
        halo: usize,
        border: Border,
        tile: usize,
    ) -> Result<Self, GridError> {
        Self::with_tile_shape(width, height, halo, border, tile, tile)
    }

    /// As [`TileGrid::new`] with rectangular tiles (e.g. whole rows for strip I/O).
    pub fn with_tile_shape(
        width: usize,
        height: usize,
        halo: usize,
        border: Border,
        tile_width: usize,
        tile_height: usize,
    ) -> Result<Self, GridError> {
        if tile_width == 0 || tile_height == 0 {
            return Err(GridError::ZeroTile);
        }
        let (output_width, output_height, offset) = match border {
            Border::Same => (width, height, 0),
            Border::Valid => {
                let window = 2 * halo + 1;
                if width < window || height < window {
                    return Err(GridError::InputSmallerThanWindow {
                        width,
                        height,
                        window,
                    });
                }
                (width - 2 * halo, height - 2 * halo, halo)
            }
        };
        Ok(TileGrid {
            input_width: width,
            input_height: height,
            output_width,
            output_height,
            offset,
            halo,
            tile_width: tile_width.min(output_width.max(1)),
            tile_height: tile_height.min(output_height.max(1)),
        })
    }

    pub fn input_size(&self) -> (usize, usize) {
        (self.input_width, self.input_height)
    }

    pub fn output_size(&self) -> (usize, usize) {
        (self.output_width, self.output_height)
    }

    /// Input pixel offset of output pixel (0, 0): 0 for `same`, the halo for `valid`.
    pub fn offset(&self) -> usize {
        self.offset
    }

    pub fn halo(&self) -> usize {
        self.halo
    }

    pub fn tile_size(&self) -> (usize, usize) {
        (self.tile_width, self.tile_height)
    }

    pub fn columns(&self) -> usize {
        self.output_width.div_ceil(self.tile_width)
    }

    pub fn rows(&self) -> usize {
        self.output_height.div_ceil(self.tile_height)
    }

    /// Number of tiles.
    pub fn len(&self) -> usize {
        self.columns() * self.rows()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tile with stitching index `index` (row-major).
    pub fn tile(&self, index: usize) -> Tile {
        let (col, row) = (index % self.columns(), index / self.columns());
        let x = col * self.tile_width;
        let y = row * self.tile_height;
        let output = Rect::new(
            x,
            y,
            self.tile_width.min(self.output_width - x),
            self.tile_height.min(self.output_height - y),
        );
        let axis = |start: usize, len: usize, limit: usize| {
            // Wanted input span, as signed positions: [start + offset - halo, start + offset + len + halo).
            let want_lo = (start + self.offset) as i64 - self.halo as i64;
            let want_hi = (start + self.offset + len + self.halo) as i64;
            let lo = want_lo.max(0);
            let hi = want_hi.min(limit as i64);
            (lo as usize, (hi - lo) as usize, (lo - want_lo) as usize)
        };
        let (sx, sw, pad_left) = axis(x, output.width, self.input_width);
        let (sy, sh, pad_top) = axis(y, output.height, self.input_height);
        Tile {
            index,
            output,
            source: Rect::new(sx, sy, sw, sh),
            padded_width: output.width + 2 * self.halo,
            padded_height: output.height + 2 * self.halo,
            pad_left,
            pad_top,
        }
    }

    /// All tiles in stitching order: row-major, left to right, top to bottom.
    pub fn tiles(&self) -> impl ExactSizeIterator<Item = Tile> + '_ {
        (0..self.len()).map(|i| self.tile(i))
    }
}

/// One output tile and the input it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Position in stitching order.
    pub index: usize,
    /// Window of the output raster this tile writes.
    pub output: Rect,
    /// Window of the input raster to read: the output window shifted by the
    /// border offset, grown by the halo, clamped to the input.
    pub source: Rect,
    /// Width of the halo-padded buffer a filter works on: `output.width + 2·halo`.
    pub padded_width: usize,
    /// Height of the halo-padded buffer: `output.height + 2·halo`.
    pub padded_height: usize,
    /// Column of the padded buffer where the source window's first column lands.
    pub pad_left: usize,
    /// Row of the padded buffer where the source window's first row lands.
    pub pad_top: usize,
}

impl Tile {
    /// Number of elements of the halo-padded buffer.
    pub fn padded_len(&self) -> usize {
        self.padded_width * self.padded_height
    }

    /// Copies `source` (the `source` window, row-major) into `padded`
    /// (the halo-padded buffer, row-major), filling what lies outside the
    /// input with `fill`.
    pub fn pad<T: Copy>(&self, source: &[T], fill: T, padded: &mut Vec<T>) {
        assert_eq!(
            source.len() as u64,
            self.source.area(),
            "source window size"
        );
        padded.clear();
        padded.resize(self.padded_len(), fill);
        if self.source.is_empty() {
            return;
        }
        for (row, src) in source.chunks_exact(self.source.width).enumerate() {
            let start = (self.pad_top + row) * self.padded_width + self.pad_left;
            padded[start..start + self.source.width].copy_from_slice(src);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borders_read_back_their_names() {
        for b in Border::ALL {
            assert_eq!(b.to_string().parse::<Border>(), Ok(b));
        }
        let err = "Same".parse::<Border>().unwrap_err();
        assert_eq!(err.to_string(), "border 'Same' is neither same nor valid");
    }

    #[test]
    fn a_window_near_the_end_of_the_address_space_does_not_overflow() {
        let far = Rect::new(usize::MAX - 1, 0, usize::MAX, 4);
        assert_eq!(far.intersection(&Rect::new(0, 0, 8, 8)), None);
        let all = Rect::new(0, 0, usize::MAX, usize::MAX);
        assert_eq!(
            all.intersection(&Rect::new(2, 3, 4, 5)),
            Some(Rect::new(2, 3, 4, 5))
        );
    }

    #[test]
    fn rects_intersect_where_they_overlap() {
        let a = Rect::new(2, 3, 10, 5);
        assert_eq!(
            a.intersection(&Rect::new(8, 0, 10, 5)),
            Some(Rect::new(8, 3, 4, 2))
        );
        assert_eq!(a.intersection(&a), Some(a));
        // Touching edges share no pixel.
        assert_eq!(a.intersection(&Rect::new(12, 3, 4, 4)), None);
        assert_eq!(a.intersection(&Rect::new(0, 0, 0, 0)), None);
    }

    fn covers_output_once(grid: &TileGrid) {
        let (w, h) = grid.output_size();
        let mut seen = vec![0u8; w * h];
        for t in grid.tiles() {
            for y in t.output.y..t.output.y + t.output.height {
                for x in t.output.x..t.output.x + t.output.width {
                    seen[y * w + x] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&s| s == 1));
    }

    #[test]
    fn same_border_tiles_cover_output_exactly_once() {
        for tile in [1, 3, 7, 10, 64, 1000] {
            let grid = TileGrid::new(23, 17, 2, Border::Same, tile).unwrap();
            assert_eq!(grid.output_size(), (23, 17));
            covers_output_once(&grid);
        }
    }

    #[test]
    fn valid_border_shrinks_output_and_shifts_reads() {
        let grid = TileGrid::new(10, 8, 1, Border::Valid, 4).unwrap();
        assert_eq!(grid.output_size(), (8, 6));
        let t = grid.tile(0);
        // Output (0,0) looks at input (1,1); the 3x3 window starts at (0,0): no padding.
        assert_eq!(t.source, Rect::new(0, 0, 6, 6));
        assert_eq!((t.pad_left, t.pad_top), (0, 0));
        covers_output_once(&grid);
    }

    #[test]
    fn same_border_pads_at_raster_edges() {
        let grid = TileGrid::new(10, 10, 2, Border::Same, 5).unwrap();
        let t = grid.tile(0);
        assert_eq!(t.source, Rect::new(0, 0, 7, 7));
        assert_eq!((t.pad_left, t.pad_top), (2, 2));
        assert_eq!((t.padded_width, t.padded_height), (9, 9));
        let last = grid.tile(3);
        assert_eq!(last.output, Rect::new(5, 5, 5, 5));
        assert_eq!(last.source, Rect::new(3, 3, 7, 7));
        assert_eq!((last.pad_left, last.pad_top), (0, 0));
    }

    #[test]
    fn halo_larger_than_raster_is_clamped() {
        let grid = TileGrid::new(3, 2, 10, Border::Same, 2).unwrap();
        for t in grid.tiles() {
            assert_eq!(t.source, Rect::new(0, 0, 3, 2));
            assert_eq!(t.pad_left, 10 - t.output.x);
        }
    }

    #[test]
    fn valid_border_rejects_small_input() {
        assert!(matches!(
            TileGrid::new(4, 9, 2, Border::Valid, 8),
            Err(GridError::InputSmallerThanWindow { .. })
        ));
        assert_eq!(
            TileGrid::new(4, 4, 0, Border::Same, 0),
            Err(GridError::ZeroTile)
        );
    }

    #[test]
    fn pad_places_source_and_fills_outside() {
        let grid = TileGrid::new(3, 3, 1, Border::Same, 3).unwrap();
        let t = grid.tile(0);
        let src: Vec<u8> = (1..=9).collect();
        let mut padded = Vec::new();
        t.pad(&src, 0, &mut padded);
        #[rustfmt::skip]
        let want = vec![
            0, 0, 0, 0, 0,
            0, 1, 2, 3, 0,
            0, 4, 5, 6, 0,
            0, 7, 8, 9, 0,
            0, 0, 0, 0, 0,
        ];
        assert_eq!(padded, want);
    }

    #[test]
    fn padded_window_matches_direct_indexing() {
        // Every padded pixel equals the input pixel it stands for, or the fill.
        let (w, h, halo) = (13usize, 11usize, 3usize);
        let input: Vec<u32> = (0..(w * h) as u32).collect();
        for border in [Border::Same, Border::Valid] {
            for tile in [1, 2, 5, 13, 40] {
                let grid = TileGrid::new(w, h, halo, border, tile).unwrap();
                for t in grid.tiles() {
                    let src: Vec<u32> = (t.source.y..t.source.y + t.source.height)
                        .flat_map(|y| {
                            (t.source.x..t.source.x + t.source.width).map(move |x| (x, y))
                        })
                        .map(|(x, y)| input[y * w + x])
                        .collect();
                    let mut padded = Vec::new();
                    t.pad(&src, u32::MAX, &mut padded);
                    for py in 0..t.padded_height {
                        for px in 0..t.padded_width {
                            let ix = (t.output.x + grid.offset() + px) as i64 - halo as i64;
                            let iy = (t.output.y + grid.offset() + py) as i64 - halo as i64;
                            let want =
                                if ix >= 0 && iy >= 0 && (ix as usize) < w && (iy as usize) < h {
                                    input[iy as usize * w + ix as usize]
                                } else {
                                    u32::MAX
                                };
                            assert_eq!(padded[py * t.padded_width + px], want);
                        }
                    }
                }
            }
        }
    }
}
