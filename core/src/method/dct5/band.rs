//! The host dct5 scorer, band by band and class by class over only the
//! pixels a class can reach (the fast path of the separable plans' ranking
//! for dct5 plans).
//!
//! The output is cut into bands of at most one segment of rows (a multiple
//! of [`LANES`]); bands run in parallel, each with its thread's scratch
//! (kept across bands and tiles). One scan of a band's input rows finds
//! every class's bounding box and, per block of [`LANES`] rows and per
//! column, the set of classes there. A class absent from the band costs
//! nothing. Every strip's runs of outputs per class (what pass 2 will
//! score) are found first; then a present class runs pass 1 down the
//! columns of its box that hold it, per group of [`WIDE`] columns only over
//! the rows whose windows reach its blocks there (everything else stays
//! exactly 0) and only in the groups that some run reads, down to the last
//! strip that reads them (a class whose outputs are all decided alone, as
//! the sea over an ocean, costs no pass 1 there), straight from the class
//! codes into a strip-major plane on whole cache lines. Pass 1 runs a
//! piece of the band's strips ahead of pass 2 ([`PIECE_BYTES`] of planes,
//! each column's recursion carried from piece to piece), so that large
//! kernels keep a few strips per class, not the band. Pass 2 then
//! goes strip by strip ([`LANES`] output rows), every class in turn, so
//! that the strip's ranking slots stay in cache (cleared there, just before
//! the first class folds in): along the rows, over the runs of outputs
//! whose windows (in that strip) hold the class, folding each score into
//! the ranking at once. Where only decisions are wanted, one strip's slots
//! serve every strip of the band in turn: a band's worth (36 bytes an
//! output, 75 MB for a band of 1024 rows of 2048) streamed through memory
//! and faulted in.
//! Outside those runs the exact score is zero, and a zero score never
//! changes a ranking slot (see `SlotsMut::update`).
//!
//! An output whose windows in the strip hold one class only is decided
//! without scores (`SlotsMut::single`): with the centre not nodata, that
//! class holds the centre, whose kernel weight is positive, so it is the one
//! class with a positive exact score — the exact answer, certified with the
//! widest margin. Where only decisions are wanted such outputs skip their
//! slots altogether and go straight to the output (`decide_strip`). (With
//! `--fill-nodata` a window may hold no class at all, so the shortcut is
//! off there.)
//!
//! The recursion runs lines in step on one vector ([`F64Lanes`]): pass 1
//! [`WIDE`] columns, pass 2 four or eight rows of a strip, its state
//! in registers (one copy of the code per number of terms; on AVX2 or
//! AVX-512 vectors where the CPU has them, element for element the same
//! arithmetic). The
//! arithmetic is that of [`Dct5::segment_pass`] (same seeds, same
//! recursion, same order of sums) on segments no longer than
//! [`Dct5::segment`], so
//! [`Dct5::rounding_bound`] holds unchanged; a score skipped where it is
//! exactly zero is within any bound too. Plans of more than [`MAX_TERMS`]
//! terms take the generic path.

use super::Dct5;
use super::contenders::{ContenderKernel, relative_weights};
use super::job::{Isa, Job, Scratch};
use super::masks::{MASK_CLASSES, find_extents, for_each_class, window_unions};
use super::pass1::{box_columns, groups, pass1, place};
use super::planes::{LanePlane, PlaneAt};
pub(crate) use super::recursion::MAX_TERMS;
use super::recursion::{Strip, Tables, WIDE, segment};
use crate::classes::NO_CLASS;
use crate::method::ranking::{LANES, Ranking, SlotsMut, fill_strip_centres};
use crate::method::simd::F64Lanes;
use crate::method::{ClassTile, SmoothParams};
use rayon::prelude::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m256d, __m512d};

thread_local! {
    /// Each worker thread's scratch, kept from band to band and tile to tile
    /// so that its buffers are allocated (and faulted in) once.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Grows `buffers` to at least `len`, keeping any beyond: a tile of fewer
/// classes than the one before must not free the buffers (the planes above
/// all) that the next tile of more classes needs again, whose pages the
/// kernel would fault in and zero anew (decision 0039).
fn grow<T>(buffers: &mut Vec<T>, len: usize, new: impl FnMut() -> T) {
    if buffers.len() < len {
        buffers.resize_with(len, new);
    }
}

/// The most output rows of a band for radius `r`: two windows' height, at
/// least 64. Short bands keep a band's planes (per class, its rows plus
/// 2R) small enough for the caches and give the threads more bands to
/// share, while the seeds of a band (two sums of 2R + 1 rows per group of
/// columns) stay no more than its rows
/// (docs/decisions/0003-host-dct5-bands-and-segments.md).
fn band_rows(r: usize) -> usize {
    (2 * (2 * r + 1)).max(64)
}

/// Output rows per band for a tile of `oh` rows: bands run in parallel and
/// each pass-1 segment stays within one, so a band is at most `segment`
/// rows. Within that, the tile is cut into a multiple of `threads` bands of
/// (nearly) equal height, a multiple of [`LANES`], so that no thread waits
/// for a last odd band — but never into bands under half of `segment`:
/// each band pays for its seeds (2R + 1 rows twice) whatever its height, so
/// 64 threads cutting a 512-row tile into 8-row bands did 5× the work of
/// 64-row bands (issue 39: the host ran 12× slower at 64 threads than at
/// 16). The engine keeps enough tiles in flight to feed the other threads.
///
/// A wide kernel (`radius` over [`WIDE_RADIUS`]), whose bands are at most
/// two windows high, is cut instead into as many bands of at least R/2
/// rows as the threads take: at σ = 150 on 16 threads, 1024² tiles (nine
/// at once) each ran one band, and seven threads idled. Bands of R/2 rows
/// were faster than bands of R or R/4 there and at σ = 35, and as fast
/// at σ = 85 (`nvidia-h200`, 5 rounds; decision 0029).
fn band_height(segment: usize, oh: usize, threads: usize, radius: usize) -> usize {
    let (most, threads) = ((segment / LANES).max(1) * LANES, threads.max(1));
    let fewest = oh.div_ceil(most);
    let even = fewest.div_ceil(threads) * threads;
    let bands = if oh.div_ceil(even) * 2 >= most {
        even
    } else if radius > WIDE_RADIUS {
        fewest.max((oh / (radius / 2)).min(threads))
    } else {
        fewest
    };
    oh.div_ceil(bands).div_ceil(LANES) * LANES
}

/// Radii past which [`band_height`] cuts a tile into bands of R/2 rows where
/// its threads would otherwise idle (σ ≥ about 22).
const WIDE_RADIUS: usize = 64;

/// The most bytes of pass-1 planes, all classes together, that a band
/// keeps between its passes (pieces of at least a strip). At σ = 5 a band
/// of 17 classes keeps about 5 MB, in one piece as before; at σ = 150 the
/// band's planes were 770 MB (1.5 GB a run on 2 threads, most of its time
/// spent faulting them in and streaming them through memory) and a piece
/// is two strips: 2.10 → 1.45 s on a 4096² MODIS map, 2 cores. Pieces of
/// 1 MB made σ = 5 on the 17-class simplex map 8 % slower and σ = 150 no
/// faster.
const PIECE_BYTES: usize = 8 << 20;

/// Whether the band scorer runs `f` (one copy of its loop per number of
/// terms: up to [`MAX_TERMS`], and from four with a longer period).
pub(crate) fn runs(f: &Dct5) -> bool {
    let terms = f.coeffs().len();
    terms <= MAX_TERMS && (f.is_harmonic() || terms >= 4)
}

/// Where [`rank_tile`] puts its results.
pub(crate) enum Target<'a> {
    /// Every pixel's ranking, margins included (for certification).
    Ranking(&'a mut Ranking),
    /// Only the winners, straight into the tile's output (row-major),
    /// decided strip by strip while the strip's slots are in cache; with
    /// a `margin` (certification), also the pixels whose winner does not
    /// lead by more, found there too.
    Decisions {
        out: &'a mut [u16],
        fill_nodata: bool,
        margin: Option<f64>,
    },
}

/// Scores every class of `tile` with the dct5 filter `f` (used down the
/// columns and along the rows) into `target` (a [`Target::Ranking`] is
/// already reset). `skip`: tile rows/columns outside the kernel's reach on
/// every side; `prune`: the kernel's envelope, where classes that cannot
/// be among an output's best two may be left out ([`super::contenders`]).
/// Returns the uncertain pixels of [`Target::Decisions`] with a margin
/// (none otherwise).
pub(crate) fn rank_tile(
    f: &Dct5,
    tile: &ClassTile,
    params: &SmoothParams,
    (skip, tau): (usize, f64),
    prune: Option<&ContenderKernel>,
    target: Target,
) -> Vec<(u32, u32)> {
    let way = Way {
        isa: Isa::best(),
        piece_bytes: PIECE_BYTES,
        prune,
    };
    rank_tile_on(way, f, tile, params, skip, tau, target)
}

/// How [`rank_tile_on`] runs: on the vectors of `isa` (which the CPU must
/// have), with pass-1 planes of at most `piece_bytes` (at least a strip)
/// per band, pruning with `prune` where given.
#[derive(Clone, Copy)]
struct Way<'a> {
    isa: Isa,
    piece_bytes: usize,
    prune: Option<&'a ContenderKernel>,
}

#[cfg(test)]
impl Way<'_> {
    /// On `isa` with planes of `piece_bytes`, every class scored.
    fn plain(isa: Isa, piece_bytes: usize) -> Self {
        Way {
            isa,
            piece_bytes,
            prune: None,
        }
    }
}

/// [`rank_tile`] the [`Way`] asked.
fn rank_tile_on(
    way: Way,
    f: &Dct5,
    tile: &ClassTile,
    params: &SmoothParams,
    skip: usize,
    tau: f64,
    mut target: Target,
) -> Vec<(u32, u32)> {
    let (ow, oh) = (tile.output_width(), tile.output_height());
    if ow == 0 || oh == 0 {
        return Vec::new();
    }
    if let Target::Decisions {
        out,
        fill_nodata: false,
        ..
    } = &mut target
        && tile.decided_by_centres(params)
    {
        // Every window holds the tile's one class alone: what
        // `decide_strip` gives columns decided alone, nothing undecided,
        // before any of the band's tables are built.
        tile.decide_by_centres(out);
        return Vec::new();
    }
    let q = params.kernel.quantised();
    let weights = relative_weights(params, tile.n_classes);
    let job = Job {
        tab: Tables::new(f),
        tile,
        contenders: way.prune.and_then(|k| k.masks(tile, skip, &weights, tau)),
        weights,
        skip,
        ow,
        oh,
        band: band_height(
            f.segment().min(band_rows(f.radius())),
            oh,
            rayon::current_num_threads(),
            f.radius(),
        ),
        segment: f.segment(),
        tau,
        // Exactly one class has a positive exact score where it is alone in
        // the window and holds the centre: the centre's weight is > 0.
        single_class: !params.fill_nodata
            && q[q.len() / 2] > 0
            && params.class_weights[..tile.n_classes]
                .iter()
                .all(|&w| w > 0),
        isa: way.isa,
        piece_bytes: way.piece_bytes,
    };
    match target {
        Target::Ranking(ranking) => {
            ranking
                .runs_mut(job.band)
                .enumerate()
                .for_each(|(b, mut slots)| {
                    SCRATCH.with_borrow_mut(|scratch| {
                        run_band::<true>(&job, b * job.band, &mut slots, scratch, None)
                    })
                });
            Vec::new()
        }
        Target::Decisions {
            out,
            fill_nodata,
            margin,
        } => {
            let bands: Vec<Vec<(u32, u32)>> = out
                .par_chunks_mut(job.band * ow)
                .enumerate()
                .map(|(b, out)| {
                    SCRATCH.with_borrow_mut(|scratch| {
                        let y0 = b * job.band;
                        let mut slots = std::mem::take(&mut scratch.slots);
                        // One strip's slots, cleared and given their centres
                        // strip by strip in `band`, where they stay in cache.
                        let len = LANES * ow;
                        match margin {
                            Some(_) => slots.size_with_margins_uncleared(len),
                            None => slots.size_uncleared(len),
                        }
                        let mut uncertain = Vec::new();
                        let decide = Decide {
                            out,
                            fill_nodata,
                            certify: margin.map(|margin| Certify {
                                margin,
                                y0,
                                uncertain: &mut uncertain,
                            }),
                        };
                        match margin {
                            Some(_) => run_band::<true>(
                                &job,
                                y0,
                                &mut slots.all_mut(),
                                scratch,
                                Some(decide),
                            ),
                            None => run_band::<false>(
                                &job,
                                y0,
                                &mut slots.all_mut(),
                                scratch,
                                Some(decide),
                            ),
                        }
                        scratch.slots = slots;
                        uncertain
                    })
                })
                .collect();
            bands.concat()
        }
    }
}

/// A band's output rows, to be decided strip by strip.
struct Decide<'a> {
    out: &'a mut [u16],
    fill_nodata: bool,
    certify: Option<Certify<'a>>,
}

/// With certification: the margin, the band's first output row and where
/// the pixels the margin leaves undecided go.
struct Certify<'a> {
    margin: f64,
    y0: usize,
    uncertain: &'a mut Vec<(u32, u32)>,
}

fn run_band<const M: bool>(
    job: &Job,
    y0: usize,
    slots: &mut SlotsMut,
    scratch: &mut Scratch,
    decide: Option<Decide>,
) {
    // One copy of the passes per number of terms, so the recursion state
    // stays in registers; the longer periods (`--exact`'s plans) from four
    // terms.
    macro_rules! by_terms {
        ($($t:literal)* ; $($e:literal)*) => {
            match (job.tab.harmonic, job.tab.g.len()) {
                $((true, $t) => Passes::of::<$t, true>(job.isa),)*
                $((false, $e) => Passes::of::<$e, false>(job.isa),)*
                _ => unreachable!("the separable plan sends other dct5 plans the generic way"),
            }
        };
    }
    let passes: Passes<M> = by_terms!(1 2 3 4 5 6 7 8; 4 5 6 7 8);
    match job.isa {
        // SAFETY: `Isa::Avx2` is only chosen where the CPU has AVX2 (`Isa::best`,
        // and the test that names it checks the CPU first).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { band_avx2::<M>(job, y0, slots, scratch, decide, passes) },
        // SAFETY: as for AVX2, with AVX-512 F, BW and VL.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { band_avx512::<M>(job, y0, slots, scratch, decide, passes) },
        Isa::Portable => band::<M, [f64; WIDE]>(job, y0, slots, scratch, decide, passes),
        #[cfg(test)]
        Isa::Portable8 => band::<M, [f64; 8]>(job, y0, slots, scratch, decide, passes),
    }
}

/// The two passes of a band, compiled per number of terms `T` (and period
/// kind `H`, and for pass 2 margins `M`) on one [`Isa`]'s vectors; the
/// rest of [`band`] (the classes' boxes and runs, the slots, the
/// decisions) depends on none of them and is compiled once per ISA: one
/// copy of the whole band per (T, H, M) and ISA made the core's optimised
/// build about half dct5 bands (78 copies of about 20 000 lines of IR).
struct Passes<const M: bool> {
    /// [`pass1`] of a piece of the band's strips.
    pass1: unsafe fn(&Job, (usize, usize), &mut Scratch),
    /// [`pass2`] of one class in one strip.
    pass2: unsafe fn(&Job, &Scratch, (usize, usize, usize), usize, &mut SlotsMut),
}

impl<const M: bool> Passes<M> {
    /// The passes of `T` terms (`H`: the DCT-5's own period) on `isa`'s
    /// vectors; calling them is sound where the CPU has `isa`.
    fn of<const T: usize, const H: bool>(isa: Isa) -> Self {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => Passes {
                pass1: pass1_avx2::<T, H>,
                pass2: pass2_avx2::<T, H, M>,
            },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => Passes {
                pass1: pass1_avx512::<T, H>,
                pass2: pass2_avx512::<T, H, M>,
            },
            Isa::Portable => Passes {
                pass1: pass1::<T, H, [f64; WIDE], [f64; WIDE]>,
                pass2: pass2::<T, H, M, [f64; WIDE]>,
            },
            #[cfg(test)]
            Isa::Portable8 => Passes {
                pass1: pass1::<T, H, [f64; WIDE], [f64; 8]>,
                pass2: pass2::<T, H, M, [f64; 8]>,
            },
        }
    }
}

/// The entry points of one ISA: [`band`] and the two passes compiled with
/// its target features (so that the vectors' operations inline), on `$s`
/// in pass 1 and `$p` in pass 2 and the slots (the same arithmetic).
#[cfg(target_arch = "x86_64")]
macro_rules! isa_entry_points {
    ($features:literal, $band:ident, $pass1:ident, $pass2:ident, $s:ty, $p:ty) => {
        #[target_feature(enable = $features)]
        unsafe fn $band<const M: bool>(
            job: &Job,
            y0: usize,
            slots: &mut SlotsMut,
            scratch: &mut Scratch,
            decide: Option<Decide>,
            passes: Passes<M>,
        ) {
            band::<M, $p>(job, y0, slots, scratch, decide, passes)
        }

        #[target_feature(enable = $features)]
        unsafe fn $pass1<const T: usize, const H: bool>(
            job: &Job,
            piece: (usize, usize),
            scratch: &mut Scratch,
        ) {
            pass1::<T, H, $s, $p>(job, piece, scratch)
        }

        #[target_feature(enable = $features)]
        unsafe fn $pass2<const T: usize, const H: bool, const M: bool>(
            job: &Job,
            scratch: &Scratch,
            at: (usize, usize, usize),
            c: usize,
            slots: &mut SlotsMut,
        ) {
            pass2::<T, H, M, $p>(job, scratch, at, c, slots)
        }
    };
}

// AVX2: every line on AVX2 vectors.
#[cfg(target_arch = "x86_64")]
isa_entry_points!("avx2", band_avx2, pass1_avx2, pass2_avx2, __m256d, __m256d);

// AVX-512: pass 1 on AVX2 vectors (its lines are columns, stored a lane at
// a time; pairs of groups on AVX-512), pass 2 and the slots on vectors of
// eight, a strip's rows in one recursion.
#[cfg(target_arch = "x86_64")]
isa_entry_points!(
    "avx2,avx512f,avx512bw,avx512vl",
    band_avx512,
    pass1_avx512,
    pass2_avx512,
    __m256d,
    __m512d
);

/// Output rows `y0..y0 + band` (fewer at the bottom) into their ranking
/// slots: first every strip's runs of outputs per class (what pass 2 will
/// score), then pass 1 of every class present over only what those runs
/// read, then strip by strip pass 2 of every class that reaches the strip,
/// so a strip's slots stay in cache.
#[inline(always)]
fn band<const M: bool, P: F64Lanes>(
    job: &Job,
    y0: usize,
    slots: &mut SlotsMut,
    scratch: &mut Scratch,
    mut decide: Option<Decide>,
    passes: Passes<M>,
) {
    let tile = job.tile;
    let (r, ow, skip, n) = (job.tab.r, job.ow, job.skip, tile.n_classes);
    let bh = job.band.min(job.oh - y0);
    let span = ow + 2 * r;
    let base = (skip + y0) * tile.width + skip;
    find_extents(tile, base, bh + 2 * r, span, &mut scratch.presence);
    grow(&mut scratch.planes, n, LanePlane::default);
    scratch.at.resize(n, PlaneAt::default());
    grow(&mut scratch.groups, n, Vec::new);
    grow(&mut scratch.carries, n, Vec::new);
    for c in 0..n {
        scratch.at[c] = scratch.presence.extents[c]
            .and_then(|e| place(job, e, bh))
            .unwrap_or_default();
    }
    let strips = bh.div_ceil(LANES);
    grow(&mut scratch.runs, strips * n, Vec::new);
    scratch.runs[..strips * n].iter_mut().for_each(Vec::clear);
    scratch.strip_outputs.clear();
    for s in 0..strips {
        strip_runs(job, scratch, (y0, s));
    }
    let mut strip_bytes = 0;
    for c in 0..n {
        scratch.groups[c].clear();
        if let Some(e) = scratch.presence.extents[c] {
            groups(job, c, e, bh, base, scratch);
            let at = scratch.at[c];
            if at.sa < at.sb {
                strip_bytes += at.strip_len(r) * std::mem::size_of::<f64>();
            }
        }
    }
    let shortcut = job.single_class && n <= MASK_CLASSES;
    // Decisions skip the slots of outputs decided alone altogether (see
    // `decide_strip`); a margin of 1 or more would leave them undecided.
    let alone = shortcut
        && decide
            .as_ref()
            .is_some_and(|d| d.certify.as_ref().is_none_or(|c| c.margin < 1.0));
    // Pass 1 of every class runs a piece of the band's strips ahead of
    // pass 2, so that the planes hold that piece, not the band.
    let piece = (job.piece_bytes / strip_bytes.max(1)).clamp(1, strips);
    for s in 0..strips {
        let s0 = s - s % piece;
        if s == s0 {
            let s1 = (s0 + piece).min(strips);
            // SAFETY: `passes` runs on `job.isa`, which the CPU has.
            unsafe { (passes.pass1)(job, (s0, s1), scratch) };
        }
        // Decisions: one strip's slots, reused by every strip and cleared
        // (`size_uncleared`, `size_with_margins_uncleared`) over the
        // columns that are scored; a whole ranking was reset, the band's
        // strips one after another.
        let at = match decide {
            Some(_) => {
                let outputs = &scratch.strip_outputs[s * ow..(s + 1) * ow];
                scored_spans(outputs, alone, &mut scratch.spans);
                for &(a, b) in &scratch.spans {
                    slots.clear(a * LANES, (b - a) * LANES);
                    let centres = slots.centres_mut(a * LANES, (b - a) * LANES);
                    fill_strip_centres(centres, a..b, s * LANES, bh, |x, y| tile.centre(x, y0 + y));
                }
                0
            }
            None => s * ow * LANES,
        };
        for c in 0..n {
            // SAFETY: as for pass 1.
            unsafe { (passes.pass2)(job, scratch, (s, s0, at), c, slots) };
        }
        // Last, so that no score folded in a run-through gap stays.
        if shortcut && !alone {
            let outputs = &scratch.strip_outputs[s * ow..(s + 1) * ow];
            for (x, &m) in outputs.iter().enumerate() {
                if m.is_power_of_two() {
                    slots.single::<M>(at + x * LANES, m.trailing_zeros() as u16);
                }
            }
        }
        if let Some(d) = decide.as_mut() {
            decide_strip::<P>(job, (y0, s, bh), slots, scratch, d);
        }
    }
}

/// The spans of output columns of a strip (`outputs`: the classes in each
/// column's windows) that are scored: all of them, or with `alone` only
/// those not decided alone (one class in the windows), into `spans`.
fn scored_spans(outputs: &[u64], alone: bool, spans: &mut Vec<(usize, usize)>) {
    spans.clear();
    if !alone {
        spans.push((0, outputs.len()));
        return;
    }
    let mut start = None;
    for (x, &m) in outputs.iter().enumerate() {
        match (m.is_power_of_two(), start) {
            (false, None) => start = Some(x),
            (true, Some(a)) => {
                spans.push((a, x));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(a) = start {
        spans.push((a, outputs.len()));
    }
}

/// Strip `s` of the band from output row `y0` (`bh` rows) into its output
/// rows, and with certification its undecided pixels: the winners of the
/// scored spans (`Scratch::spans`) from their slots, and every column
/// between them (decided alone, see [`scored_spans`]) without slots. There
/// one class `c` holds every window, and so each centre that is not
/// nodata, which makes `c` the one class with a positive exact score (its
/// score 1 over 0): the decision is `c` (the centre, within any tie
/// tolerance), or none at a nodata centre (deciding alone implies no
/// filling), and no margin under 1 leaves it undecided.
/// What `SlotsMut::single` and the winner rule give there, without
/// clearing, filling, folding, deciding and scanning the slots of most of
/// a strip of a map of large patches.
#[inline(always)]
fn decide_strip<S: F64Lanes>(
    job: &Job,
    (y0, s, bh): (usize, usize, usize),
    slots: &SlotsMut,
    scratch: &mut Scratch,
    d: &mut Decide,
) {
    let (tile, ow, nodata) = (job.tile, job.ow, job.tile.nodata());
    let rows = LANES.min(bh - s * LANES);
    let decisions = &mut scratch.decisions;
    decisions.resize(ow * LANES, 0);
    for &(a, b) in &scratch.spans {
        let run = &mut decisions[a * LANES..b * LANES];
        slots.decide_run::<S>(a * LANES, job.tau, nodata, d.fill_nodata, run);
    }
    // Row by row: the columns decided alone from the window's class and
    // the centre, then a span's from its decisions, up to the next span.
    let outputs = &scratch.strip_outputs[s * ow..(s + 1) * ow];
    let out = &mut d.out[s * LANES * ow..][..rows * ow];
    for (j, row) in out.chunks_exact_mut(ow).enumerate() {
        let centres = &tile.centre_row(y0 + s * LANES + j)[..ow];
        let mut x = 0;
        for &(a, b) in scratch.spans.iter().chain(&[(ow, ow)]) {
            let alone = row[x..a].iter_mut().zip(&outputs[x..a]).zip(&centres[x..a]);
            for ((o, &m), &centre) in alone {
                *o = match centre == nodata {
                    true => NO_CLASS,
                    false => m.trailing_zeros() as u16,
                };
            }
            for (o, x) in row[a..b].iter_mut().zip(a..b) {
                *o = decisions[x * LANES + j];
            }
            x = b;
        }
    }
    if let Some(c) = d.certify.as_mut() {
        let y = c.y0 + s * LANES;
        for &(a, b) in &scratch.spans {
            let undecided =
                slots.undecided(a * LANES, (b - a) * LANES, c.margin, nodata, d.fill_nodata);
            c.uncertain.extend(
                undecided
                    .filter(|i| i % LANES < rows)
                    .map(|i| ((a + i / LANES) as u32, (y + i % LANES) as u32)),
            );
        }
    }
}

/// The classes in the windows of strip `s`'s outputs (appended to
/// [`Scratch::strip_outputs`]) and per class the runs of outputs that it
/// reaches (within its plane), that are not decided alone and where it
/// may be among the best two ([`Job::contenders`]) ([`Scratch::runs`] at
/// `s·n + c`); outputs in short gaps between runs score (about) 0.
/// Re-seeding costs about 2(2R+1) steps: shorter gaps are run through.
/// `y0`: the band's first output row.
#[inline(always)]
fn strip_runs(job: &Job, scratch: &mut Scratch, (y0, s): (usize, usize)) {
    let (tile, r, ow) = (job.tile, job.tab.r, job.ow);
    let (n, span) = (tile.n_classes, ow + 2 * r);
    // The strip's outputs read input rows s·LANES .. s·LANES + LANES + 2R:
    // blocks s ..= ((s + 1)·LANES + 2R − 1) / LANES.
    let width = (LANES + 2 * r - 1) / LANES + 1;
    let blocks = (&scratch.presence.blocks[..], span);
    (scratch.unions).next(blocks, s, width, &mut scratch.strip_columns);
    window_unions(
        &scratch.strip_columns,
        2 * r + 1,
        &mut scratch.outputs,
        &mut scratch.prefix,
        &mut scratch.suffix,
    );
    let outputs = &scratch.outputs;
    scratch.strip_outputs.extend_from_slice(outputs);
    let shortcut = job.single_class && n <= MASK_CLASSES;
    let gap = 2 * (2 * r + 1);
    let (places, runs) = (&scratch.at, &mut scratch.runs[s * n..(s + 1) * n]);
    // Outputs `a..b` that class `c`'s windows reach, within its plane; a run
    // closer than `gap` to the class's last one joins it.
    let mut reach = |c: usize, (a, b): (usize, usize)| {
        let at = places[c];
        let (a, b) = (a.max(at.xa), b.min(at.xb));
        if (at.sa..at.sb).contains(&s) && a < b {
            match runs[c].last_mut() {
                Some((_, end)) if a < *end + gap => *end = b,
                _ => runs[c].push((a, b)),
            }
        }
    };
    if n <= MASK_CLASSES {
        // The classes each output's windows hold, from its mask, less
        // those that cannot be among its best two there, and none where
        // one class alone decides. Masks change little from one output to
        // the next (a window moves by one column): a class's runs are read
        // off where its bit changes, in order.
        let contend = job
            .contenders
            .as_ref()
            .map(|k| (k.row(y0 + s * LANES), k.block()));
        let (mut before, mut starts) = (0u64, [0usize; MASK_CLASSES]);
        for x in 0..=outputs.len() {
            let m = match outputs.get(x) {
                Some(&m) if !(shortcut && m.is_power_of_two()) => {
                    contend.map_or(m, |(row, b)| m & row[x / b])
                }
                _ => 0,
            };
            let changed = m ^ before;
            if changed != 0 {
                for_each_class(changed & before, |c| reach(c, (starts[c], x)));
                for_each_class(changed & m, |c| starts[c] = x);
                before = m;
            }
        }
    } else {
        // Masks all set: every class may be anywhere.
        for c in 0..n {
            reach(c, (0, outputs.len()));
        }
    }
}

/// Pass 2 of class `c` in strip `s` (of the piece from strip `s0` that the
/// planes hold): along the rows over the class's runs of outputs, each
/// score folded into the strip's ranking slots (from slot `at` on) at once.
#[inline(always)]
fn pass2<const T: usize, const H: bool, const M: bool, S: F64Lanes>(
    job: &Job,
    scratch: &Scratch,
    (s, s0, slot0): (usize, usize, usize),
    c: usize,
    slots: &mut SlotsMut,
) {
    let r = job.tab.r;
    let at = scratch.at[c];
    let runs = &scratch.runs[s * job.tile.n_classes + c];
    if runs.is_empty() {
        return;
    }
    let plane = scratch.planes[c].values();
    let strip = &plane[(s - s0) * at.strip_len(r)..][..at.strip_len(r)];
    // Pass 1 leaves the plane's columns outside the class's box at 0.
    let boxed = scratch.presence.extents[c].map_or((0, 0), |e| box_columns(e, at));
    let weight = job.weights[c];
    for &(a, b) in runs.iter() {
        for (a, h) in (a..b)
            .step_by(job.segment)
            .flat_map(|a| (0..LANES).step_by(S::N).map(move |h| (a, h)))
        {
            let from = a - at.xa;
            let lanes = Strip {
                data: &strip[from * LANES + h..],
                stride: LANES,
                nonzero: boxed.0.saturating_sub(from)..boxed.1.saturating_sub(from),
            };
            segment::<_, S, T, H>(
                &job.tab,
                &lanes,
                job.segment.min(b - a),
                #[inline(always)]
                |i, o| {
                    let scores = S::splat(weight).mul(o);
                    let at = slot0 + (a + i) * LANES + h;
                    if M {
                        slots.update(at, c as u16, scores, job.tau);
                    } else {
                        slots.update_winner(at, c as u16, scores, job.tau);
                    }
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Kernel, KernelSpec};

    /// The AVX2 and AVX-512 bands (where the CPU has them) and the plain
    /// ones of eight lanes in pass 2 give the same bits as the plain ones
    /// of four: every ranking slot and every decision, with uneven
    /// weights, nodata, a class past the tile's right edge and a width
    /// that is no multiple of the lanes; for the DCT-5 and for a longer
    /// period (`--exact`'s plans).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_bands_match_plain_bands() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let kernel = KernelSpec::Gaussian {
            sigma: 1.7,
            size: None,
        }
        .build()
        .unwrap();
        let (g, terms) = crate::method::dct5::one_d_kernel(&kernel, 3).unwrap();
        let longer = Dct5::extended(&g, 4, 17).unwrap();
        assert!(!longer.is_harmonic() && runs(&longer));
        for f in [Dct5::new(&g, terms).unwrap(), longer] {
            bands_match(&kernel, &f);
        }
    }

    /// A `w × h` tile (halo included) of `n` classes, index `n` nodata.
    fn tile_of(classes: &[u16], (w, h): (usize, usize), halo: usize, n: usize) -> ClassTile<'_> {
        ClassTile {
            width: w,
            height: h,
            halo,
            n_classes: n,
            classes,
        }
    }

    /// The ways [`bands_match`] holds against the plain one of four lanes.
    #[cfg(target_arch = "x86_64")]
    fn others() -> Vec<Way<'static>> {
        let mut ways = vec![
            Way::plain(Isa::Portable8, PIECE_BYTES),
            Way::plain(Isa::Avx2, PIECE_BYTES),
            Way::plain(Isa::Avx2, 1),
        ];
        if crate::cpu::avx512() {
            ways.extend([
                Way::plain(Isa::Avx512, PIECE_BYTES),
                Way::plain(Isa::Avx512, 1),
            ]);
        }
        ways
    }

    #[cfg(target_arch = "x86_64")]
    fn bands_match(kernel: &Kernel, f: &Dct5) {
        let (halo, n) = (kernel.radius(), 6);
        let (w, h) = (97 + 2 * halo, 75 + 2 * halo);
        // Blocky classes with speckle, a nodata patch (index n).
        let classes: Vec<u16> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                if (30..36).contains(&x) && (10..19).contains(&y) {
                    n as u16
                } else if (x * 31 + y * 17) % 23 == 0 {
                    5
                } else {
                    ((x / 9 + y / 7 + x * y / 97) % 5) as u16
                }
            })
            .collect();
        let tile = tile_of(&classes, (w, h), halo, n);
        let weights = [3, 1, 2, 2, 1, 4];
        let (ow, oh, nodata, tau) = (
            tile.output_width(),
            tile.output_height(),
            tile.nodata(),
            1e-12,
        );
        for fill_nodata in [false, true] {
            let params = SmoothParams {
                kernel,
                class_weights: &weights,
                fill_nodata,
                ties: Default::default(),
                confidence: None,
            };
            let rank = |way: Way| {
                let mut ranking = Ranking::default();
                ranking.reset(ow, oh, tau, |x, y| tile.centre(x, y));
                let target = Target::Ranking(&mut ranking);
                rank_tile_on(way, f, &tile, &params, 0, tau, target);
                let mut out = vec![0; ow * oh];
                let target = Target::Decisions {
                    out: &mut out,
                    fill_nodata,
                    margin: None,
                };
                rank_tile_on(way, f, &tile, &params, 0, tau, target);
                (ranking, out)
            };
            // The vectors against plain; and pass 1 a strip at a time (each
            // segment carried over up to 8 pieces of a band) against whole
            // bands.
            let (plain, plain_out) = rank(Way::plain(Isa::Portable, PIECE_BYTES));
            let ranked: Vec<_> = others().into_iter().map(rank).collect();
            for (other, other_out) in &ranked {
                assert_eq!(&plain_out, other_out, "decisions, fill {fill_nodata}");
                for y in 0..oh {
                    for x in 0..ow {
                        let ((a, b), (c, d)) = (plain.best_two(x, y), other.best_two(x, y));
                        assert_eq!(
                            (a.to_bits(), b.to_bits()),
                            (c.to_bits(), d.to_bits()),
                            "({x}, {y}), fill {fill_nodata}"
                        );
                        assert_eq!(
                            plain.decide(x, y, nodata, fill_nodata),
                            other.decide(x, y, nodata, fill_nodata),
                        );
                    }
                }
            }
            let decided = plain_out
                .iter()
                .filter(|&&c| c != crate::classes::NO_CLASS)
                .count();
            assert!(decided > ow * oh / 2, "only {decided} decided");
            // With a margin, the same decisions, and undecided the pixels
            // the whole tile's ranking leaves undecided (over several bands).
            for margin in [0.0, 0.05, 0.3] {
                for way in [Way::plain(Isa::Portable, PIECE_BYTES)]
                    .into_iter()
                    .chain(others())
                {
                    let mut out = vec![0; ow * oh];
                    let target = Target::Decisions {
                        out: &mut out,
                        fill_nodata,
                        margin: Some(margin),
                    };
                    let mut found = rank_tile_on(way, f, &tile, &params, 0, tau, target);
                    let mut want = plain.uncertain(margin, nodata, fill_nodata);
                    found.sort();
                    want.sort();
                    assert_eq!(out, plain_out, "margin {margin}, fill {fill_nodata}");
                    assert_eq!(found, want, "margin {margin}, fill {fill_nodata}");
                }
            }
            assert!(plain.uncertain(0.3, nodata, fill_nodata).len() > ow * oh / 10);
        }
    }

    /// A tile of one class and nodata (the sea and a nodata margin) gives
    /// the whole tile's ranking's decisions and no undecided pixel, at
    /// every margin; so does a tile of nodata only.
    #[test]
    fn a_tile_of_one_class_matches_the_ranking() {
        let kernel = gaussian(1.7);
        let halo = kernel.radius();
        let (w, h) = (70 + 2 * halo, 60 + 2 * halo);
        for all_nodata in [false, true] {
            // Local indices: class 0, nodata `n` (the tile's class count).
            let n = usize::from(!all_nodata);
            let classes: Vec<u16> = (0..w * h)
                .map(|i| {
                    let (x, y) = (i % w, i / w);
                    let nodata = all_nodata || y < 12 || (30..33).contains(&x) && y > 40;
                    if nodata { n as u16 } else { 0 }
                })
                .collect();
            let tile = tile_of(&classes, (w, h), halo, n);
            assert_eq!(tile.n_classes, n);
            let (ow, oh, tau) = (tile.output_width(), tile.output_height(), 1e-12);
            let params = params_of(&kernel, &[2]);
            let (f, ranking, want) = ranked_plainly(&tile, &params, tau);
            let missing = want.iter().filter(|&&c| c == NO_CLASS).count();
            assert!(missing > ow * 5 && (all_nodata || missing < ow * oh / 2));
            for margin in [None, Some(0.0), Some(0.999)] {
                let mut out = vec![7; ow * oh];
                let target = Target::Decisions {
                    out: &mut out,
                    fill_nodata: false,
                    margin,
                };
                let way = Way::plain(Isa::Portable, PIECE_BYTES);
                let found = rank_tile_on(way, &f, &tile, &params, 0, tau, target);
                assert_eq!(out, want, "margin {margin:?}");
                let uncertain =
                    margin.map_or(Vec::new(), |m| ranking.uncertain(m, tile.nodata(), false));
                assert_eq!(found, uncertain, "margin {margin:?}");
                assert!(found.is_empty());
            }
        }
    }

    /// A Gaussian kernel of `sigma`.
    fn gaussian(sigma: f64) -> Kernel {
        KernelSpec::Gaussian { sigma, size: None }.build().unwrap()
    }

    /// Plain parameters: `kernel`, `class_weights`, no filling.
    fn params_of<'a>(kernel: &'a Kernel, class_weights: &'a [u32]) -> SmoothParams<'a> {
        SmoothParams {
            kernel,
            class_weights,
            fill_nodata: false,
            ties: Default::default(),
            confidence: None,
        }
    }

    /// The dct5 filter (K = 3) of `params`' kernel, and `tile`'s whole
    /// ranking on the plain way with the decisions it writes: what the
    /// decisions' shortcuts are held to.
    fn ranked_plainly(
        tile: &ClassTile,
        params: &SmoothParams,
        tau: f64,
    ) -> (Dct5, Ranking, Vec<u16>) {
        let (g, terms) = crate::method::dct5::one_d_kernel(params.kernel, 3).unwrap();
        let f = Dct5::new(&g, terms).unwrap();
        let (ow, oh) = (tile.output_width(), tile.output_height());
        let mut ranking = Ranking::default();
        ranking.reset(ow, oh, tau, |x, y| tile.centre(x, y));
        let way = Way::plain(Isa::Portable, PIECE_BYTES);
        rank_tile_on(way, &f, tile, params, 0, tau, Target::Ranking(&mut ranking));
        let mut want = vec![0; ow * oh];
        ranking.write(&mut want, tile.nodata(), false);
        (f, ranking, want)
    }

    /// Outputs decided alone (one class in their windows) go straight to
    /// the decisions without their slots: the same decisions and the same
    /// undecided pixels as the whole tile's ranking, on a map of large
    /// patches where most columns of a strip are decided alone, with
    /// nodata inside a patch and on its edge, on every way.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn outputs_decided_alone_match_the_ranking() {
        let kernel = gaussian(1.7);
        let (halo, n) = (kernel.radius(), 4);
        let (w, h) = (130 + 2 * halo, 150 + 2 * halo);
        let classes: Vec<u16> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                let nodata = (40..44).contains(&x) && (20..23).contains(&y)
                    || (60..62).contains(&x) && (y + 2) % 53 < 3;
                match nodata {
                    true => n as u16,
                    false => ((x / 29 + 3 * (y / 50)) % n) as u16,
                }
            })
            .collect();
        let tile = tile_of(&classes, (w, h), halo, n);
        let (ow, oh, nodata, tau) = (
            tile.output_width(),
            tile.output_height(),
            tile.nodata(),
            1e-12,
        );
        let params = params_of(&kernel, &[1, 3, 2, 1]);
        let (f, ranking, want) = ranked_plainly(&tile, &params, tau);
        let way = Way::plain(Isa::Portable, PIECE_BYTES);
        let missing = want.iter().filter(|&&c| c == NO_CLASS).count();
        assert!((10..ow * oh / 10).contains(&missing), "{missing} nodata");
        for way in [way].into_iter().chain(others()) {
            for margin in [None, Some(0.0), Some(0.05), Some(0.999)] {
                let mut out = vec![0; ow * oh];
                let target = Target::Decisions {
                    out: &mut out,
                    fill_nodata: false,
                    margin,
                };
                let mut found = rank_tile_on(way, &f, &tile, &params, 0, tau, target);
                assert_eq!(out, want, "margin {margin:?}");
                let mut uncertain =
                    margin.map_or(Vec::new(), |m| ranking.uncertain(m, nodata, false));
                found.sort();
                uncertain.sort();
                assert_eq!(found, uncertain, "margin {margin:?}");
            }
        }
        // Most of the map is decided alone.
        let alone = (0..oh)
            .flat_map(|y| (0..ow).map(move |x| (x, y)))
            .filter(|&(x, y)| ranking.best_two(x, y) == (1.0, 0.0))
            .count();
        assert!(alone > ow * oh / 3, "{alone} alone");
    }

    #[test]
    fn bands_split_a_tile_evenly_between_threads() {
        // 512 rows, at most 124 per band, 2 threads: 6 bands of 88 (the last
        // 72), not 4 of 120 and one of 32.
        assert_eq!(band_height(124, 512, 2, 15), 88);
        for (segment, oh, threads) in [(124, 512, 2), (64, 1000, 3), (64, 512, 16), (9, 5, 1)] {
            let band = band_height(segment, oh, threads, 15);
            assert!(band.is_multiple_of(LANES) && band > 0, "{band}");
            assert!(
                band <= (segment / LANES).max(1) * LANES,
                "{band} > {segment}"
            );
            assert_eq!(
                oh.div_ceil(band) % threads,
                0,
                "{oh} rows in bands of {band}"
            );
        }
    }

    #[test]
    fn bands_are_never_cut_thin_to_feed_many_threads() {
        // 64 threads on a 512-row tile of σ = 5 (bands of at most 64 rows):
        // 8 bands of 64, not 64 of 8, whose seeds would cost 5× their rows.
        assert_eq!(band_height(64, 512, 64, 15), 64);
        assert_eq!(band_height(64, 512, 32, 15), 64);
        // A wide kernel's long bands are not cut to 32 rows for 16 threads.
        assert_eq!(band_height(504, 512, 16, 63), 256);
        for threads in 1..=128 {
            for oh in [8, 100, 512, 1000, 2048] {
                let band = band_height(64, oh, threads, 15);
                assert!(
                    band >= 32.min(oh.div_ceil(LANES) * LANES),
                    "{oh} rows, {threads}: {band}"
                );
                assert!(band <= 64, "{band}");
            }
        }
    }

    #[test]
    fn a_wide_kernels_tile_feeds_its_threads() {
        // σ = 150 (R = 450, bands of at most 1800 rows): a 1024-row tile
        // runs four bands on 16 threads, not one; a 2048-row one nine, and
        // two on 2 threads, as before.
        assert_eq!(band_height(1802, 1024, 16, 450), 256);
        assert_eq!(band_height(1802, 2048, 16, 450), 232);
        assert_eq!(band_height(1802, 2048, 2, 450), 1024);
        assert_eq!(band_height(1802, 1024, 1, 450), 1024);
        // σ = 35 (R = 105): nine bands of 64 rows on 16 threads.
        assert_eq!(band_height(422, 512, 16, 105), 64);
        for threads in 1..=128 {
            for oh in [100, 512, 1024, 2048] {
                let band = band_height(1802, oh, threads, 450);
                assert!(band >= 225.min(oh), "{oh}, {threads}: {band}");
                assert!(
                    oh.div_ceil(band) <= threads.max(oh.div_ceil(1800)),
                    "{oh}, {threads}: {band}"
                );
            }
        }
    }
}
