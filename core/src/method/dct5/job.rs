//! What the host dct5 scorer's bands work with: the [`Job`] every band of
//! a tile shares, each thread's [`Scratch`] (with pass 1's groups of
//! columns, [`Group`]) and the vector instructions ([`Isa`]) they run on.
//! It sits below the band driver (`band`) and its first pass (`pass1`),
//! which both use it.

use super::contenders::ContenderMasks;
use super::masks::{ColumnUnions, Presence};
use super::planes::{LanePlane, PlaneAt};
use super::recursion::{CARRY_VALUES, Tables};
use crate::method::ClassTile;
use crate::method::ranking::Slots;

/// Per-thread scratch of a band.
#[derive(Default)]
pub(super) struct Scratch {
    /// Where each class lies in the band's input.
    pub(super) presence: Presence,
    /// Per input column: the classes in the windows of the current strip.
    pub(super) strip_columns: Vec<u64>,
    /// Where [`Scratch::strip_columns`] comes from, strip after strip.
    pub(super) unions: ColumnUnions,
    /// Per output column: the classes in the windows of the current strip.
    pub(super) outputs: Vec<u64>,
    /// [`Scratch::outputs`] of every strip of the band, strip after strip.
    pub(super) strip_outputs: Vec<u64>,
    /// Running unions of [`Scratch::strip_columns`] (see [`window_unions`](super::masks::window_unions)).
    pub(super) prefix: Vec<u64>,
    pub(super) suffix: Vec<u64>,
    /// One strip's decisions in slot order.
    pub(super) decisions: Vec<u16>,
    /// One strip's spans of output columns that are scored, `(first,
    /// end)`: the columns between them are decided alone.
    pub(super) spans: Vec<(usize, usize)>,
    /// Per strip `s` and class `c` (at `s·n + c`), the class's runs of
    /// outputs in the strip, `(first, end)`: what pass 2 scores.
    pub(super) runs: Vec<Vec<(usize, usize)>>,
    /// Per group of columns of the class in pass 1, the strips pass 2 reads.
    pub(super) reads: Vec<usize>,
    /// A band's ranking slots, when the tile's winners go straight to the output.
    pub(super) slots: Slots,
    /// Per class: its pass-1 plane (the strips of one piece of the band)
    /// and where it lies.
    pub(super) planes: Vec<LanePlane>,
    pub(super) at: Vec<PlaneAt>,
    /// Per class: its groups of columns in pass 1 and each group's
    /// recursion between pieces.
    pub(super) groups: Vec<Vec<Group>>,
    pub(super) carries: Vec<Vec<[f64; CARRY_VALUES]>>,
    /// Per class, pass 1's next group in the piece (`usize::MAX`: none
    /// runs; `pass1`).
    pub(super) cursors: Vec<usize>,
}

/// One group of [`WIDE`] columns of a class's box in pass 1 (`pass1::groups`).
#[derive(Clone, Copy, Default)]
pub(super) struct Group {
    /// The group's first plane column, and its columns.
    pub(super) c0: usize,
    pub(super) n: usize,
    /// The strips of the plane (from its first, `PlaneAt::sa`) that pass 2
    /// reads: `0..read`; none for 0.
    pub(super) read: usize,
    /// The group's segment: plane rows `top..top + rows`; none (every value
    /// exactly 0) for `rows` = 0.
    pub(super) top: usize,
    pub(super) rows: usize,
    /// The tile index of the segment's first element, and the box's
    /// columns from `c0` on.
    pub(super) base: usize,
    pub(super) width: usize,
    /// The segment's elements (from its first) in the blocks of rows where
    /// the class occurs in these columns, first to last: every other one
    /// reads 0 (`held.0..held.1`).
    pub(super) held: (usize, usize),
    /// The segment's outputs done so far (its carry's `next`).
    pub(super) next: usize,
}

/// What every band shares.
pub(super) struct Job<'a> {
    pub(super) tab: Tables,
    pub(super) tile: &'a ClassTile<'a>,
    /// Per block of the tile's outputs, the classes that may be among the
    /// best two there (`None`: every class).
    pub(super) contenders: Option<ContenderMasks>,
    pub(super) weights: Vec<f64>,
    /// Tile rows and columns skipped before the kernel's reach (extra halo).
    pub(super) skip: usize,
    pub(super) ow: usize,
    pub(super) oh: usize,
    pub(super) band: usize,
    pub(super) segment: usize,
    pub(super) tau: f64,
    /// Whether an output whose windows hold one class only may take it
    /// without scoring (see [`SlotsMut::single`](crate::method::ranking::SlotsMut::single)).
    pub(super) single_class: bool,
    /// The vectors the bands run on.
    pub(super) isa: Isa,
    /// The most bytes of pass-1 planes a band keeps at once (pieces of at
    /// least a strip).
    pub(super) piece_bytes: usize,
}

/// The vector instructions a band runs on: the same arithmetic, element
/// for element, on either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Isa {
    /// Plain arrays of four ([`F64Lanes`](crate::method::simd::F64Lanes)
    /// for `[f64; 4]`).
    Portable,
    /// Plain arrays, of eight in pass 2 (the plain twin of
    /// [`Isa::Avx512`]), for the tests.
    #[cfg(test)]
    Portable8,
    /// AVX2 registers.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX2 registers in pass 1, AVX-512 in pass 2.
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Isa {
    /// The fastest this CPU has and may run ([`crate::cpu::avx512`],
    /// [`crate::cpu::avx2`]).
    pub(super) fn best() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx512() {
            return Isa::Avx512;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx2() {
            return Isa::Avx2;
        }
        Isa::Portable
    }
}
