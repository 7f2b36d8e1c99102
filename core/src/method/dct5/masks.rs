//! Where the classes lie in a band's input, for the host band scorer: per
//! block of [`LANES`] rows and per column the set of classes there
//! (presence masks), each class's bounding box, and the union of the masks
//! over each output's windows.

use crate::method::ClassTile;
use crate::method::ranking::LANES;

/// Where one class lies in a band's input: rows and columns, inclusive.
#[derive(Clone, Copy)]
pub(super) struct Extent {
    pub(super) rows: (usize, usize),
    pub(super) cols: (usize, usize),
}

/// A band's presence masks and boxes, kept per thread from band to band.
#[derive(Default)]
pub(super) struct Presence {
    pub(super) extents: Vec<Option<Extent>>,
    /// Per block of [`LANES`] input rows and input column of the band (row
    /// block major): bit `c` set where class `c` occurs there (all bits set
    /// when there are more than [`MASK_CLASSES`] classes).
    pub(super) blocks: Vec<u64>,
    /// Per input column: the union of its blocks (where [`find_extents`]
    /// finds the boxes' columns).
    pub(super) columns: Vec<u64>,
}

/// Classes the per-column presence masks can tell apart.
pub(super) const MASK_CLASSES: usize = 64;

/// Whether class `c` occurs in a column with presence mask `mask`.
#[inline(always)]
pub(super) fn holds(mask: u64, c: usize) -> bool {
    c >= MASK_CLASSES || mask >> c & 1 == 1
}

/// `out[o] = masks[o] | … | masks[o + width − 1]` for every `o` with a
/// full window (van Herk / Gil-Werman: a prefix and a suffix union per
/// block of `width`, three operations per output whatever the width).
pub(super) fn window_unions(
    masks: &[u64],
    width: usize,
    out: &mut Vec<u64>,
    prefix: &mut Vec<u64>,
    suffix: &mut Vec<u64>,
) {
    let n = masks.len();
    out.clear();
    if n < width {
        return;
    }
    // Block by block, not by a remainder per element: `i % width` with a
    // width known only at run time is a division, three per output (about
    // 40 cycles each), and this runs once per strip and span column.
    prefix.clear();
    prefix.extend_from_slice(masks);
    suffix.clear();
    suffix.extend_from_slice(masks);
    for block in prefix.chunks_mut(width) {
        for i in 1..block.len() {
            block[i] |= block[i - 1];
        }
    }
    for block in suffix.chunks_mut(width) {
        for i in (0..block.len() - 1).rev() {
            block[i] |= block[i + 1];
        }
    }
    // A window from a block's start is that block's suffix union, which
    // the block's last prefix union equals: one expression for every `o`.
    out.extend(
        suffix[..=n - width]
            .iter()
            .zip(&prefix[width - 1..])
            .map(|(&s, &p)| s | p),
    );
}

/// Per column, the union of the blocks of rows `s..s + width` of a band's
/// presence masks ([`Presence::blocks`]; blocks past the last are empty),
/// for `s` = 0, 1, 2, … in turn: van Herk / Gil-Werman down the columns
/// (as [`window_unions`] along a row), a few unions of rows per strip
/// whatever the window, where taking the window's rows one by one cost
/// `width` of them (at σ = 150, 114 rows of 5,000 masks for every strip
/// of 8 output rows: a tenth of the band scorer's samples).
#[derive(Default)]
pub(super) struct ColumnUnions {
    /// The suffix unions of the current chunk of `width` block rows (from
    /// `chunk`): row `i` is the union of the chunk's rows `i..`.
    suffix: Vec<u64>,
    chunk: usize,
    /// The union of the rows from the chunk's end up to `prefix_end`.
    prefix: Vec<u64>,
    prefix_end: usize,
}

impl ColumnUnions {
    /// The union for rows `s..s + width` of `blocks` (rows of `span`
    /// masks) into `out`; `s` goes 0, 1, 2, … (0 starts again).
    pub(super) fn next(
        &mut self,
        (blocks, span): (&[u64], usize),
        s: usize,
        width: usize,
        out: &mut Vec<u64>,
    ) {
        let rows = blocks.len() / span;
        let row = |i: usize| &blocks[i * span..(i + 1) * span];
        out.clear();
        if s >= rows {
            out.resize(span, 0);
            return;
        }
        if s.is_multiple_of(width) {
            // A new chunk: its suffix unions, and the prefix starts empty.
            let end = (s + width).min(rows);
            self.suffix.resize((end - s) * span, 0);
            for i in (s..end).rev() {
                let at = (i - s) * span;
                self.suffix[at..at + span].copy_from_slice(row(i));
                if i + 1 < end {
                    let (this, after) = self.suffix[at..].split_at_mut(span);
                    this.iter_mut()
                        .zip(&after[..span])
                        .for_each(|(m, &v)| *m |= v);
                }
            }
            self.chunk = s;
            self.prefix.clear();
            self.prefix.resize(span, 0);
            self.prefix_end = end;
        }
        let last = (s + width).min(rows);
        while self.prefix_end < last {
            let v = row(self.prefix_end);
            self.prefix.iter_mut().zip(v).for_each(|(m, &v)| *m |= v);
            self.prefix_end += 1;
        }
        let suffix = &self.suffix[(s - self.chunk) * span..][..span];
        out.extend(suffix.iter().zip(&self.prefix).map(|(&a, &b)| a | b));
    }
}

/// The bounding box of every class in `rows` lines of `span` codes starting
/// at `base` (lines `tile.width` apart), `None` for an absent class; and
/// per block of [`LANES`] rows and per column, the mask of the classes
/// there ([`Presence::blocks`]). With the masks on
/// (at most [`MASK_CLASSES`] classes) the boxes come from the masks, so
/// their rows are whole blocks (a box may reach up to `LANES − 1` rows
/// past the class, where pass 1 then computes exact zeros); otherwise from
/// a scan of every row.
#[inline(always)]
pub(super) fn find_extents(
    tile: &ClassTile,
    base: usize,
    rows: usize,
    span: usize,
    presence: &mut Presence,
) {
    let n = tile.n_classes;
    let masked = n <= MASK_CLASSES;
    let blocks = &mut presence.blocks;
    blocks.clear();
    blocks.resize(
        rows.div_ceil(LANES) * span,
        if masked { 0 } else { u64::MAX },
    );
    let out = &mut presence.extents;
    out.clear();
    out.resize(n, None);
    if !masked {
        scan_extents(tile, base, rows, span, out);
        return;
    }
    // The mask bit of each local index; no class (index n, nodata) sets
    // none. Written without a table so that the loop vectorises.
    let bit = |v: u16| (1u64 << (v & 63)) & u64::from(usize::from(v) < n).wrapping_neg();
    for i in 0..rows {
        let line = &tile.classes[base + i * tile.width..][..span];
        let block = &mut blocks[i / LANES * span..][..span];
        for (m, &v) in block.iter_mut().zip(line) {
            *m |= bit(v);
        }
    }
    let columns = &mut presence.columns;
    columns.clear();
    columns.resize(span, 0);
    for (b, block) in blocks.chunks_exact(span).enumerate() {
        let mut union = 0;
        for (m, &v) in columns.iter_mut().zip(block) {
            *m |= v;
            union |= v;
        }
        let last_row = ((b + 1) * LANES).min(rows) - 1;
        for_each_class(union, |c| {
            let e = out[c].get_or_insert(Extent {
                rows: (b * LANES, last_row),
                cols: (0, 0),
            });
            e.rows.1 = last_row;
        });
    }
    let (mut lo, mut hi) = ([usize::MAX; MASK_CLASSES], [0; MASK_CLASSES]);
    for (x, &m) in columns.iter().enumerate() {
        for_each_class(m, |c| {
            lo[c] = lo[c].min(x);
            hi[c] = x;
        });
    }
    for (c, e) in out.iter_mut().enumerate() {
        if let Some(e) = e {
            e.cols = (lo[c], hi[c]);
        }
    }
}

/// Calls `f` with every class whose bit is set in `mask`.
#[inline(always)]
pub(super) fn for_each_class(mut mask: u64, mut f: impl FnMut(usize)) {
    while mask != 0 {
        f(mask.trailing_zeros() as usize);
        mask &= mask - 1;
    }
}

/// [`find_extents`]'s boxes by a scan of every row (exact rows and columns).
fn scan_extents(
    tile: &ClassTile,
    base: usize,
    rows: usize,
    span: usize,
    out: &mut [Option<Extent>],
) {
    let n = tile.n_classes;
    // Column bounds per class and row, folded into the boxes row by row.
    let mut lo = vec![usize::MAX; n + 1];
    let mut hi = vec![0usize; n + 1];
    for i in 0..rows {
        let line = &tile.classes[base + i * tile.width..][..span];
        for (x, &v) in line.iter().enumerate() {
            let v = (v as usize).min(n);
            lo[v] = lo[v].min(x);
            hi[v] = x;
        }
        for c in 0..n {
            if lo[c] != usize::MAX {
                let e = out[c].get_or_insert(Extent {
                    rows: (i, i),
                    cols: (lo[c], hi[c]),
                });
                e.rows.1 = i;
                e.cols = (e.cols.0.min(lo[c]), e.cols.1.max(hi[c]));
                lo[c] = usize::MAX;
                hi[c] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_unions_match_the_definition() {
        let masks: Vec<u64> = (0..37u64).map(|i| 1 << (i * 7 % 13)).collect();
        let (mut out, mut p, mut q) = (Vec::new(), Vec::new(), Vec::new());
        for width in [1, 2, 3, 5, 8, 36, 37] {
            window_unions(&masks, width, &mut out, &mut p, &mut q);
            assert_eq!(out.len(), masks.len() + 1 - width);
            for (o, &m) in out.iter().enumerate() {
                let want = masks[o..o + width].iter().fold(0, |a, &b| a | b);
                assert_eq!(m, want, "width {width} output {o}");
            }
        }
        window_unions(&masks, 38, &mut out, &mut p, &mut q);
        assert!(out.is_empty());
    }

    /// Strip after strip, the unions of the rows `s..s + width` (rows past
    /// the last empty), as taking the rows one by one gives them, for
    /// windows shorter and longer than the rows; and again from strip 0.
    #[test]
    fn column_unions_match_the_definition() {
        let (span, rows) = (5, 23);
        let blocks: Vec<u64> = (0..span * rows as u64)
            .map(|i| 1 << (i * 11 % 17) | u64::from(i % 9 == 0) << 40)
            .collect();
        let mut unions = ColumnUnions::default();
        let mut out = Vec::new();
        for width in [1, 2, 3, 7, 22, 23, 30] {
            for _ in 0..2 {
                for s in 0..rows + 2 {
                    unions.next((&blocks, span as usize), s, width, &mut out);
                    let want: Vec<u64> = (0..span as usize)
                        .map(|x| {
                            (s..(s + width).min(rows))
                                .map(|b| blocks[b * span as usize + x])
                                .fold(0, |a, v| a | v)
                        })
                        .collect();
                    assert_eq!(out, want, "width {width}, strip {s}");
                }
            }
        }
    }

    /// The boxes taken from the masks hold every pixel of their class, and
    /// their rows reach past the exact box by less than a block.
    #[test]
    fn mask_boxes_hold_their_class() {
        let (w, h, n) = (37, 29, 5);
        let classes: Vec<u16> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                // Class 4 in a small patch only, class 3 nowhere, nodata (5) in a corner.
                if (20..24).contains(&x) && (9..12).contains(&y) {
                    4
                } else if x < 3 && y < 3 {
                    5
                } else {
                    ((x * 7 + y * 3) / 11 % 3) as u16
                }
            })
            .collect();
        let tile = ClassTile {
            width: w,
            height: h,
            halo: 0,
            n_classes: n,
            classes: &classes,
        };
        let (base, rows, span) = (w + 1, h - 2, w - 3);
        let mut exact = vec![None; n];
        scan_extents(&tile, base, rows, span, &mut exact);
        let mut presence = Presence::default();
        find_extents(&tile, base, rows, span, &mut presence);
        assert!(exact[3].is_none() && presence.extents[3].is_none());
        for (c, (&exact, &mask)) in exact.iter().zip(&presence.extents).enumerate() {
            let (Some(e), Some(m)) = (exact, mask) else {
                assert!(exact.is_none() && mask.is_none(), "class {c}");
                continue;
            };
            assert_eq!(m.cols, e.cols, "class {c}");
            assert!(
                m.rows.0 <= e.rows.0 && e.rows.0 - m.rows.0 < LANES,
                "class {c}"
            );
            assert!(
                m.rows.1 >= e.rows.1 && m.rows.1 - e.rows.1 < LANES,
                "class {c}"
            );
            assert!(m.rows.1 < rows);
        }
        assert_eq!(exact[4].unwrap().rows, (8, 10));
    }

    #[test]
    fn presence_masks_stop_at_64_classes() {
        assert!(holds(0b100, 2) && !holds(0b100, 1));
        assert!(
            holds(0, MASK_CLASSES),
            "classes past the mask are always present"
        );
    }
}
