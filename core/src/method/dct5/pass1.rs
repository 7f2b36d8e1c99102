//! Pass 1 of the host band scorer: one class down the columns of its box,
//! straight from the class codes into its plane.

use super::job::{Job, Scratch};
use super::masks::{Extent, MASK_CLASSES, holds};
use super::planes::PlaneAt;
use super::recursion::{ClassColumns, Lanes, Tables, WIDE, segment};
use crate::method::ranking::LANES;
use crate::method::simd4::F64x4;

/// Where the plane of a class with box `e` in the band's input lies (see
/// [`PlaneAt`]): span columns `xa..xb + 2R`, the rows of the strips that
/// hold the outputs `ya..yb` whose windows meet the box; `None` where no
/// output of the band (`bh` rows) reaches the box.
pub(super) fn place(job: &Job, e: Extent, bh: usize) -> Option<PlaneAt> {
    let r = job.tab.r;
    let (ya, yb) = (e.rows.0.saturating_sub(2 * r), bh.min(e.rows.1 + 1));
    let (xa, xb) = (e.cols.0.saturating_sub(2 * r), job.ow.min(e.cols.1 + 1));
    (ya < yb && xa < xb).then_some(PlaneAt {
        xa,
        xb,
        sa: ya / LANES,
        sb: yb.div_ceil(LANES),
    })
}

/// Pass 1 of class `c` (box `e` in the band's input) down its columns into
/// its plane, placed by [`place`] (`scratch.at[c]`), over only what pass 2
/// reads: the plane columns of the strip's runs (`scratch.runs`) plus 2R.
/// A group of [`WIDE`] columns that no run reads is skipped (outputs decided
/// alone, such as the sea's, need no scores), and one that is read runs down
/// to the last strip that reads it only. The start of a group's segment
/// stays where it was (the rows whose windows first reach the class), so
/// every value that is computed is the same, bit for bit. What pass 2 reads
/// and pass 1 does not compute (columns and rows without the class) is set
/// to exactly 0.
#[inline(always)]
pub(super) fn pass1<const T: usize, const H: bool, S: F64x4>(
    job: &Job,
    c: usize,
    e: Extent,
    bh: usize,
    base: usize,
    scratch: &mut Scratch,
) {
    let r = job.tab.r;
    let at = scratch.at[c];
    if at.sa >= at.sb {
        return; // not placed: no output reaches the class
    }
    let xa = at.xa;
    // The outputs whose windows meet the box (as in `place`).
    let (ya, yb) = (e.rows.0.saturating_sub(2 * r), bh.min(e.rows.1 + 1));
    let (strip_len, strips) = (at.strip_len(r), at.sb - at.sa);
    let (box_first, box_end) = (e.cols.0 - xa, e.cols.1 + 1 - xa);
    last_reads(job, c, box_first..box_end, scratch);
    let reads = &scratch.reads;
    // Every element is written below; the values left from an earlier band
    // need no clearing.
    scratch.planes[c].resize(strip_len * strips);
    let plane = scratch.planes[c].values_mut();
    for strip in plane.chunks_exact_mut(strip_len) {
        strip[..box_first * LANES].fill(0.0);
        strip[box_end * LANES..].fill(0.0);
    }
    // The lines of columns `c0..c0 + n` in strips `range` (of the plane).
    let clear = |plane: &mut [f64], c0: usize, n: usize, range: std::ops::Range<usize>| {
        for strip in plane
            .chunks_exact_mut(strip_len)
            .take(range.end)
            .skip(range.start)
        {
            strip[c0 * LANES..(c0 + n) * LANES].fill(0.0);
        }
    };
    let span = job.ow + 2 * r;
    // The blocks of the box's rows: no other block holds the class.
    let boxed = e.rows.0 / LANES..e.rows.1 / LANES + 1;
    // With the masks on, each column's union of its blocks tells a group
    // without the class at once.
    let masked = job.tile.n_classes <= MASK_CLASSES;
    for (c0, &read) in (box_first..box_end).step_by(WIDE).zip(reads.iter()) {
        if read == 0 {
            continue; // no run reads these columns
        }
        let n = WIDE.min(box_end - c0);
        let group = xa + c0..xa + c0 + n;
        let absent = masked
            && !scratch.presence.columns[group.clone()]
                .iter()
                .any(|&m| holds(m, c));
        // The blocks of input rows where the class occurs in these columns:
        // outputs whose windows miss them are exactly 0.
        let in_block = |b: &usize| {
            scratch.presence.blocks[b * span..][group.clone()]
                .iter()
                .any(|&m| holds(m, c))
        };
        // Searched only where the masks have not ruled the group out.
        let first = if absent {
            None
        } else {
            boxed.clone().find(in_block)
        };
        let Some(first) = first else {
            clear(plane, c0, n, 0..read); // no pixel of the class: exactly 0
            continue;
        };
        // Block `first` holds the class, so the search from the end stops
        // there at the latest.
        let last = boxed.clone().rfind(in_block).unwrap_or(first);
        let gya = ya.max((first * LANES).saturating_sub(2 * r));

        // Cut at the last strip read: a recursion's outputs do not depend
        // on where it stops.
        let gyb = yb.min((last + 1) * LANES).min((at.sa + read) * LANES);
        if gya >= gyb {
            clear(plane, c0, n, 0..read);
            continue;
        }
        let (top, rows) = (gya - at.sa * LANES, gyb - gya);
        // Every output goes straight to its column's line in the plane
        // (below), so the strips not wholly inside top..top + rows are
        // cleared first: those wholly outside it, and the partly covered
        // first and last. (Gathering a line's rows in a buffer and copying
        // whole lines cost pass 1 more cycles: each copy read back values
        // just stored lane by lane.)
        clear(plane, c0, n, 0..top.div_ceil(LANES));
        clear(plane, c0, n, (top + rows) / LANES..read);
        let lines = Lines { strip_len, c0, top };
        let (base, width) = (base + gya * job.tile.width + xa + c0, box_end - c0);
        if n == WIDE {
            let lanes = ClassColumns::<true>::of(job.tile, base, width, c);
            lines.fill::<T, H, S, _>(&job.tab, &lanes, rows, plane, |o, line| {
                o.store_strided(line, 0, LANES)
            });
        } else {
            let lanes = ClassColumns::<false>::of(job.tile, base, width, c);
            lines.fill::<T, H, S, _>(&job.tab, &lanes, rows, plane, |o, line| {
                for (j, v) in o.to_array().into_iter().take(n).enumerate() {
                    line[j * LANES] = v;
                }
            });
        }
    }
}

/// Per group of [`WIDE`] columns of the box of class `c` (plane columns
/// `boxed`, groups from its first), the strips of the plane that pass 2
/// reads there, `0..scratch.reads[g]` (none for 0), from the class's runs.
fn last_reads(job: &Job, c: usize, boxed: std::ops::Range<usize>, scratch: &mut Scratch) {
    let (r, at, n) = (job.tab.r, scratch.at[c], job.tile.n_classes);
    let reads = &mut scratch.reads;
    reads.clear();
    reads.resize(boxed.len().div_ceil(WIDE), 0);
    for s in at.sa..at.sb {
        for &(a, b) in &scratch.runs[s * n + c] {
            // Run outputs a..b read plane columns a − xa .. b − xa + 2R.
            let lo = (a - at.xa).max(boxed.start);
            let hi = (b - at.xa + 2 * r).min(boxed.end);
            if lo < hi {
                let groups = (lo - boxed.start) / WIDE..=(hi - 1 - boxed.start) / WIDE;
                reads[groups].fill(s - at.sa + 1);
            }
        }
    }
}

/// Where pass 1 puts a group of columns' outputs in a plane laid out as
/// [`PlaneAt`] says: the group's first column `c0` and first row `top`
/// (both counted from the plane's first), and a strip's length.
struct Lines {
    strip_len: usize,
    c0: usize,
    top: usize,
}

impl Lines {
    /// Runs a segment of `rows` outputs on `lanes` into `plane`: `store(o,
    /// line)` puts the lanes of output `o` at `line[0]`, `line[LANES]`, ...
    /// (one row of the group's lines). The place moves on row by row, and
    /// to the next strip after the last row of one, instead of being
    /// worked out again for every output.
    #[inline(always)]
    fn fill<const T: usize, const H: bool, S: F64x4, L: Lanes>(
        &self,
        tab: &Tables,
        lanes: &L,
        rows: usize,
        plane: &mut [f64],
        store: impl Fn(S, &mut [f64]),
    ) {
        let mut at = self.top / LANES * self.strip_len + self.c0 * LANES + self.top % LANES;
        let mut row_in_line = self.top % LANES;
        segment::<_, S, T, H>(
            tab,
            lanes,
            rows,
            #[inline(always)]
            |i, o: S| {
                debug_assert_eq!(row_in_line, (self.top + i) % LANES);
                store(o, &mut plane[at..]);
                (at, row_in_line) = (at + 1, row_in_line + 1);
                if row_in_line == LANES {
                    (at, row_in_line) = (at + self.strip_len - LANES, 0);
                }
            },
        );
    }
}
