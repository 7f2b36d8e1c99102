//! Pass 1 of the host band scorer: one class down the columns of its box,
//! straight from the class codes into its plane.

use super::job::{Group, Job, Scratch};
use super::masks::{Extent, MASK_CLASSES, holds};
use super::planes::PlaneAt;
use super::recursion::{CARRY_VALUES, Carry, ClassColumns, Lanes, Tables, WIDE, resume};
use crate::method::ranking::LANES;
use crate::method::simd::F64Lanes;

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

/// The groups of [`WIDE`] columns of class `c`'s box `e` in the band's
/// input (placed by [`place`], `scratch.at[c]`) and what pass 1 computes in
/// each (into `scratch.groups[c]`, which the caller empties), over only
/// what pass 2 reads: the plane columns of the strip's runs
/// (`scratch.runs`) plus 2R. A group that no
/// run reads is skipped (outputs decided alone, such as the sea's, need no
/// scores), and one that is read runs down to the last strip that reads it
/// only. The start of a group's segment stays where it was (the rows whose
/// windows first reach the class), so every value that is computed is the
/// same, bit for bit. What pass 2 reads and pass 1 does not compute
/// (columns and rows without the class) is exactly 0.
pub(super) fn groups(
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
    let (box_first, box_end) = box_columns(e, at);
    last_reads(job, c, box_first..box_end, scratch);
    let span = job.ow + 2 * r;
    // The blocks of the box's rows: no other block holds the class.
    let boxed = e.rows.0 / LANES..e.rows.1 / LANES + 1;
    // With the masks on, each column's union of its blocks tells a group
    // without the class at once.
    let masked = job.tile.n_classes <= MASK_CLASSES;
    let (reads, presence, groups) = (&scratch.reads, &scratch.presence, &mut scratch.groups[c]);
    for (c0, &read) in (box_first..box_end).step_by(WIDE).zip(reads.iter()) {
        let n = WIDE.min(box_end - c0);
        let mut group = Group {
            c0,
            n,
            read,
            ..Group::default()
        };
        if read == 0 {
            groups.push(group); // no run reads these columns
            continue;
        }
        let columns = xa + c0..xa + c0 + n;
        let absent = masked
            && !presence.columns[columns.clone()]
                .iter()
                .any(|&m| holds(m, c));
        // The blocks of input rows where the class occurs in these columns:
        // outputs whose windows miss them are exactly 0.
        let in_block = |b: &usize| {
            presence.blocks[b * span..][columns.clone()]
                .iter()
                .any(|&m| holds(m, c))
        };
        // Searched only where the masks have not ruled the group out.
        let first = if absent {
            None
        } else {
            boxed.clone().find(in_block)
        };
        if let Some(first) = first {
            // Block `first` holds the class, so the search from the end
            // stops there at the latest.
            let last = boxed.clone().rfind(in_block).unwrap_or(first);
            let gya = ya.max((first * LANES).saturating_sub(2 * r));
            // Cut at the last strip read: a recursion's outputs do not
            // depend on where it stops.
            let gyb = yb.min((last + 1) * LANES).min((at.sa + read) * LANES);
            if gya < gyb {
                group.top = gya - at.sa * LANES;
                group.rows = gyb - gya;
                group.base = base + gya * job.tile.width + xa + c0;
                group.width = box_end - c0;
                group.held = (
                    (first * LANES).saturating_sub(gya),
                    (last + 1) * LANES - gya,
                );
            }
        }
        groups.push(group);
    }
    // Grown, never cut back: a carry is read only after this band saved it
    // (`Group::next` starts at 0), so one left from an earlier band needs
    // no clearing, and clearing 1,152 bytes per group per class and band
    // (`resize` after a shorter band) was 1.3 % of a globe's samples.
    let carries = &mut scratch.carries[c];
    if carries.len() < groups.len() {
        carries.resize(groups.len(), [0.0; CARRY_VALUES]);
    }
}

/// The plane columns `first..end` of box `e` in a plane placed at `at`.
pub(super) fn box_columns(e: Extent, at: PlaneAt) -> (usize, usize) {
    (e.cols.0 - at.xa, e.cols.1 + 1 - at.xa)
}

/// Span columns whose codes pass 1 reads for every class before moving on
/// ([`pass1`]): about 1,900 input rows of them (σ = 150) stay in L2, so
/// each class after the first finds them there. Class by class over the
/// whole band, every class streamed the band's codes (4–20 MB) down the
/// columns from L3 again, and the seeds' loads of the codes took 29 % of
/// the band scorer's samples.
const CHUNK_COLUMNS: usize = 64;

/// Pass 1 of every class down its columns ([`groups`]) into the strips
/// `s0..s1` of the band that its plane holds now (band strip `s` at strip
/// `s − s0` of the plane), each group's segment carried on from the strips
/// before ([`resume`]). The groups run by chunks of [`CHUNK_COLUMNS`] span
/// columns, every class's groups of a chunk in turn; each group's values
/// are what it computes alone, whatever the order. Groups run on `S`
/// (four lanes), or two at once on `P` where it has eight and they
/// [`pair`].
#[inline(always)]
pub(super) fn pass1<const T: usize, const H: bool, S: F64Lanes, P: F64Lanes>(
    job: &Job,
    (s0, s1): (usize, usize),
    scratch: &mut Scratch,
) {
    let n = job.tile.n_classes;
    scratch.cursors.clear();
    scratch.cursors.resize(n, usize::MAX);
    for c in 0..n {
        if !scratch.groups[c].is_empty() && prepare(job, c, (s0, s1), scratch) {
            scratch.cursors[c] = 0;
        }
    }
    let span = job.ow + 2 * job.tab.r;
    for end in (CHUNK_COLUMNS..span + CHUNK_COLUMNS).step_by(CHUNK_COLUMNS) {
        for c in 0..n {
            let xa = scratch.at[c].xa;
            while let Some(&g) = scratch.groups[c].get(scratch.cursors[c])
                && xa + g.c0 < end
            {
                let i = scratch.cursors[c];
                let k = if P::N == 2 * WIDE && pair(&scratch.groups[c], i) {
                    run_groups::<T, H, P>(job, c, (i, 2), (s0, s1), scratch);
                    2
                } else {
                    run_groups::<T, H, S>(job, c, (i, 1), (s0, s1), scratch);
                    1
                };
                scratch.cursors[c] = i + k;
            }
        }
    }
}

/// The strips of a class placed at `at` in the piece `s0..s1`, `lo..hi`
/// counted from its first (as `Group` counts them): its strip k lies at
/// strip k + at.sa − s0 of the plane. Empty where it has none there.
fn piece_strips(at: PlaneAt, (s0, s1): (usize, usize)) -> (usize, usize) {
    match at.sa < at.sb {
        true => (s0.max(at.sa) - at.sa, s1.min(at.sb).saturating_sub(at.sa)),
        false => (0, 0),
    }
}

/// Readies class `c`'s plane for the strips `s0..s1` (sized and the columns
/// outside its box cleared, at its first piece of the band); whether the
/// class has strips there.
#[inline(always)]
fn prepare(job: &Job, c: usize, (s0, s1): (usize, usize), scratch: &mut Scratch) -> bool {
    let (r, at) = (job.tab.r, scratch.at[c]);
    let (lo, hi) = piece_strips(at, (s0, s1));
    let Some(e) = scratch.presence.extents[c].filter(|_| lo < hi) else {
        return false;
    };
    if lo == 0 {
        // The class's first piece of the band: every later one of the band
        // is no longer and lies on the same strips of the plane, where
        // nothing writes outside the box. Every other value pass 2 reads is
        // written by `run_group`; the values left from an earlier piece
        // need no clearing.
        let strip_len = at.strip_len(r);
        let (box_first, box_end) = box_columns(e, at);
        scratch.planes[c].resize(strip_len * (s1 - s0));
        for strip in scratch.planes[c].values_mut().chunks_exact_mut(strip_len) {
            strip[..box_first * LANES].fill(0.0);
            strip[box_end * LANES..].fill(0.0);
        }
    }
    true
}

/// Whether groups `i` and `i + 1` of a class run as one vector of eight
/// lanes: neighbours, both whole, on one segment (the same rows, as far
/// along). Each lane's values are then its column's alone, as on four
/// lanes: the pair reads the rows that hold the class in either group
/// (a seed's term `c·0` leaves its sum's bits as they are) and runs down
/// to the strip the further of the two is read to (a recursion's values
/// do not depend on where it stops; the other's extra strips are not
/// read). Pairs form from the static fields and `next`, which a pair
/// keeps equal, so every piece of the band pairs the same groups and each
/// pair's carry stays in its first group's place.
fn pair(groups: &[Group], i: usize) -> bool {
    let (Some(a), Some(b)) = (groups.get(i), groups.get(i + 1)) else {
        return false;
    };
    (a.n, b.n) == (WIDE, WIDE)
        && (b.c0, b.base) == (a.c0 + WIDE, a.base + WIDE)
        && (a.top, a.rows, a.next) == (b.top, b.rows, b.next)
}

/// Groups `i..i + k` as the one group that runs them ([`pair`]): the
/// first's segment, over the rows that hold the class in any of them, read
/// as far as the furthest.
fn joined(groups: &[Group], (i, k): (usize, usize)) -> Group {
    let mut g = groups[i];
    for o in &groups[i + 1..i + k] {
        g.read = g.read.max(o.read);
        g.held = (g.held.0.min(o.held.0), g.held.1.max(o.held.1));
    }
    g
}

/// Pass 1 of groups `i..i + k` of class `c` in the piece `s0..s1` (readied
/// by [`prepare`]): one group on four lanes, or two that [`pair`] on eight
/// (their carry in the first's place).
#[inline(always)]
fn run_groups<const T: usize, const H: bool, S: F64Lanes>(
    job: &Job,
    c: usize,
    (i, k): (usize, usize),
    (s0, s1): (usize, usize),
    scratch: &mut Scratch,
) {
    debug_assert_eq!(S::N, k * WIDE);
    let (r, at) = (job.tab.r, scratch.at[c]);
    let (lo, hi) = piece_strips(at, (s0, s1));
    let strip_len = at.strip_len(r);
    let strip_at = |k: usize| (k + at.sa - s0) * strip_len;
    let plane = scratch.planes[c].values_mut();
    let g = joined(&scratch.groups[c], (i, k));
    let carry = &mut scratch.carries[c][i];
    // The columns the groups cover (a last, narrower group runs alone).
    let columns = g.n + (k - 1) * WIDE;
    // The strips of this piece that pass 2 reads in the group.
    let end = hi.min(g.read);
    if lo >= end {
        return;
    }
    // Every output goes straight to its column's line in the plane
    // (below), so the strips not wholly inside the segment are cleared
    // first: those wholly outside it, and the partly covered first and
    // last. (Gathering a line's rows in a buffer and copying whole lines
    // cost pass 1 more cycles: each copy read back values just stored
    // lane by lane.)
    for k in lo..end {
        if g.rows == 0 || k * LANES < g.top || (k + 1) * LANES > g.top + g.rows {
            plane[strip_at(k) + g.c0 * LANES..][..columns * LANES].fill(0.0);
        }
    }
    // The segment's rows in this piece (counted from the class's first).
    let (from, to) = ((lo * LANES).max(g.top), (end * LANES).min(g.top + g.rows));
    if from >= to {
        return;
    }
    debug_assert_eq!(g.next, from - g.top, "pieces in order");
    let lines = Lines {
        strip_len,
        c0: g.c0,
        top: from + at.sa * LANES - s0 * LANES,
    };
    let (rows, upto) = (g.rows, to - g.top);
    // A segment that starts here or ends here needs no state read or
    // kept (a band in one piece: none does).
    let mut state = match g.next {
        0 => Carry::<S, T>::start(),
        next => Carry::<S, T>::load(carry, next),
    };
    // One copy of the loop per kind of lanes (a whole group or the
    // box's last, narrower one).
    macro_rules! fill {
        ($lanes:expr, $store:expr) => {
            lines.fill::<T, H, S, _>(&job.tab, &$lanes, (rows, upto), &mut state, plane, $store)
        };
    }
    let held = g.held.0..g.held.1;
    if g.n == WIDE {
        let lanes = ClassColumns::<true>::of(job.tile, (g.base, g.width), c, held);
        fill!(lanes, |o, line| o.store_strided(line, 0, LANES));
    } else {
        let (lanes, n) = (
            ClassColumns::<false>::of(job.tile, (g.base, g.width), c, held),
            g.n,
        );
        fill!(lanes, |o, line| {
            let mut v = [0.0; WIDE];
            o.store(&mut v);
            for (j, v) in v.into_iter().take(n).enumerate() {
                line[j * LANES] = v;
            }
        });
    }
    let next = match upto < rows {
        true => state.save(carry),
        false => upto,
    };
    for g in &mut scratch.groups[c][i..i + k] {
        g.next = next;
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
/// [`PlaneAt`] says: the group's first column `c0` and the row `top` of
/// its first output in this piece (both counted from the plane's first),
/// and a strip's length.
struct Lines {
    strip_len: usize,
    c0: usize,
    top: usize,
}

impl Lines {
    /// Runs outputs `carry.next..upto` of a segment of `rows` outputs on
    /// `lanes` into `plane`, output `carry.next` at row `top`: `store(o,
    /// line)` puts the lanes of output `o` at `line[0]`, `line[LANES]`, ...
    /// (one row of the group's lines). The place moves on row by row, and
    /// to the next strip after the last row of one, instead of being
    /// worked out again for every output.
    #[inline(always)]
    fn fill<const T: usize, const H: bool, S: F64Lanes, L: Lanes>(
        &self,
        tab: &Tables,
        lanes: &L,
        (rows, upto): (usize, usize),
        carry: &mut Carry<S, T>,
        plane: &mut [f64],
        store: impl Fn(S, &mut [f64]),
    ) {
        let mut at = self.top / LANES * self.strip_len + self.c0 * LANES + self.top % LANES;
        let mut row_in_line = self.top % LANES;
        let first = carry.next;
        resume::<_, S, T, H>(
            tab,
            lanes,
            rows,
            upto,
            carry,
            #[inline(always)]
            |i, o: S| {
                debug_assert_eq!(row_in_line, (self.top + i - first) % LANES);
                store(o, &mut plane[at..]);
                (at, row_in_line) = (at + 1, row_in_line + 1);
                if row_in_line == LANES {
                    (at, row_in_line) = (at + self.strip_len - LANES, 0);
                }
            },
        );
    }
}
