//! Median filter: branch-free selection networks for 3×3 and 5×5, a
//! generic selection for larger windows.
//!
//! The networks are derived, not typed in: Batcher's odd-even merge sort
//! for the next power of two, cut to the window's size (wires past it hold
//! +∞ and never move), then pruned backwards to what the middle wire needs.
//! A comparator of which only one output matters becomes a single min or
//! max. The 0-1 principle test below checks every network on all 2ⁿ inputs.
//! The host runs the 5×5 network written out as straight-line code on 16
//! pixels at once (vector min/max, wires in registers; a test holds it
//! equal to the derived one); the OpenCL kernel gets the list as macros.

use super::per_band;
use super::strip::{self, RowKernel, Rows, Source};
use crate::bail;
use crate::error::Result;
use crate::pixel::{Pixel, Plane};
use std::cmp::Ordering;

/// What a comparator keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// `a ← min, b ← max`.
    Both,
    /// `a ← min(a, b)` only.
    Min,
    /// `b ← max(a, b)` only.
    Max,
}

/// A comparator on wires `a < b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comparator {
    pub a: usize,
    pub b: usize,
    pub keep: Keep,
}

/// The pruned network leaving the median of `n` values on wire `n / 2`.
pub fn median_network(n: usize) -> Vec<Comparator> {
    let mut p2 = 1;
    while p2 < n {
        p2 *= 2;
    }
    let mut sort = Vec::new();
    let mut p = 1;
    while p < p2 {
        let mut k = p;
        while k >= 1 {
            let mut j = k % p;
            while j + k < p2 {
                for i in 0..k.min(p2 - j - k) {
                    if (i + j) / (2 * p) == (i + j + k) / (2 * p) && i + j + k < n {
                        sort.push((i + j, i + j + k));
                    }
                }
                j += 2 * k;
            }
            k /= 2;
        }
        p *= 2;
    }
    let mut needed = vec![false; n];
    needed[n / 2] = true;
    let mut net = Vec::new();
    for &(a, b) in sort.iter().rev() {
        let keep = match (needed[a], needed[b]) {
            (false, false) => continue,
            (true, true) => Keep::Both,
            (true, false) => Keep::Min,
            (false, true) => Keep::Max,
        };
        net.push(Comparator { a, b, keep });
        needed[a] = true;
        needed[b] = true;
    }
    net.reverse();
    net
}

/// The network as OpenCL C statements on an array `v` (`CE`, `CMIN`, `CMAX` macros).
pub fn network_cl(n: usize) -> String {
    median_network(n)
        .iter()
        .map(|c| {
            let m = match c.keep {
                Keep::Both => "CE",
                Keep::Min => "CMIN",
                Keep::Max => "CMAX",
            };
            format!("{m}({},{})", c.a, c.b)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A median of side `size` (odd, ≥ 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Median {
    pub size: usize,
}

/// Pixels processed together by the host's 5×5 network: 32 for Byte (one
/// AVX2 vector per wire), 16 for wider samples.
const LANES: usize = 16;

/// [`LANES`] for Byte samples.
const BYTE_LANES: usize = 32;

impl Median {
    pub fn new(size: usize) -> Result<Self> {
        if size < 3 || size.is_multiple_of(2) || size > 99 {
            bail!(
                usage,
                format!("median side must be odd and between 3 and 99, got {size}"),
                hint = "write median:3 or median:5"
            );
        }
        Ok(Median { size })
    }

    pub fn radius(&self) -> usize {
        self.size / 2
    }

    /// The plain reference: sort the window, take the middle.
    pub fn reference<T: Pixel>(&self, input: &[Plane<T>], nd: Option<T>) -> Vec<Plane<T>> {
        per_band(input, self.radius(), nd, |win| {
            let mut buf = win.to_vec();
            buf.sort_by(f32::total_cmp);
            buf[buf.len() / 2]
        })
    }

    /// The fast host path (no nodata) on bands padded by the radius.
    pub fn fast<T: Pixel>(&self, input: &[Plane<T>]) -> Vec<Plane<T>> {
        self.fast_on(Source::Padded(input))
    }

    /// The fast host path (no nodata), through [`strip::run`]: sorted
    /// columns for 3×3 ([`Median3`]), the straight-line 5×5 network on
    /// [`LANES`] pixels at once, and `select_nth_unstable` for larger
    /// windows (and rows narrower than LANES).
    pub fn fast_on<T: Pixel>(&self, src: Source<'_, T>) -> Vec<Plane<T>> {
        match self.size {
            3 => strip::run(&Median3, src),
            n => strip::run(&MedianN(n), src),
        }
    }
}

/// Output columns the 3×3 median works on at a time (its temporaries stay in registers and L1).
const BLOCK: usize = 256;

/// The 3×3 median by sorted columns (Paeth), two output rows at a time.
pub struct Median3;

impl<T: Pixel> RowKernel<T> for Median3 {
    type Out = T;
    type Scratch = Vec<T>;

    fn radius(&self) -> usize {
        1
    }

    #[inline(always)]
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [T]], spare: &mut Vec<T>) {
        let mut rows = out[0].chunks_exact_mut(w).enumerate();
        while let Some((y, o1)) = rows.next() {
            let r = |i: usize| src.row(y + i);
            match rows.next() {
                Some((_, o2)) => median3_pair([r(0), r(1), r(2), r(3)], [o1, o2]),
                None => {
                    spare.resize(w, T::default());
                    median3_pair([r(0), r(1), r(2), r(2)], [o1, &mut spare[..]]);
                }
            }
        }
    }
}

/// Two output rows of the 3×3 median from four input rows `v` (each at
/// least `w + 2` long, `w` = the output rows' length), in blocks of
/// [`BLOCK`] columns (the last block overlapping the one before it; rows
/// narrower than a block go through zero-extended copies).
#[inline(always)]
fn median3_pair<T: Pixel>(v: [&[T]; 4], out: [&mut [T]; 2]) {
    let w = out[0].len();
    let mut cols = Cols::new();
    if w < BLOCK {
        let mut t = [[T::default(); BLOCK + 2]; 4];
        for (t, v) in t.iter_mut().zip(v) {
            t[..w + 2].copy_from_slice(&v[..w + 2]);
        }
        let res = cols.medians(t.each_ref());
        for (o, r) in out.into_iter().zip(&res) {
            o.copy_from_slice(&r[..w]);
        }
        return;
    }
    let mut x0 = 0;
    loop {
        let x = x0.min(w - BLOCK);
        let res = cols.medians(v.map(|r| r[x..x + BLOCK + 2].try_into().expect("block")));
        out[0][x..x + BLOCK].copy_from_slice(&res[0]);
        out[1][x..x + BLOCK].copy_from_slice(&res[1]);
        if x + BLOCK == w {
            break;
        }
        x0 += BLOCK;
    }
}

/// Columns written at once at the end of a block of [`Cols`] (a multiple of every vector width).
const TAIL: usize = 32;

/// The sorted columns of one block of [`median3_pair`]: the low, middle
/// and high sample of every column for each of the two output rows.
struct Cols<T> {
    lo: [[T; BLOCK + 2]; 2],
    mi: [[T; BLOCK + 2]; 2],
    hi: [[T; BLOCK + 2]; 2],
}

impl<T: Pixel> Cols<T> {
    #[inline(always)]
    fn new() -> Self {
        let zero = [[T::default(); BLOCK + 2]; 2];
        Cols {
            lo: zero,
            mi: zero,
            hi: zero,
        }
    }

    /// Sorts columns `at..at + N`: the middle pair sorted once, then each
    /// outer sample merged into it.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // one column of four inputs and six outputs
    fn sort<const N: usize>(&mut self, v: &[&[T; BLOCK + 2]; 4], at: usize) {
        for i in at..at + N {
            let (p0, p1) = (v[1][i].lo(v[2][i]), v[1][i].hi(v[2][i]));
            for (j, e) in [v[0][i], v[3][i]].into_iter().enumerate() {
                self.lo[j][i] = e.lo(p0);
                self.hi[j][i] = e.hi(p1);
                self.mi[j][i] = p0.hi(e.lo(p1));
            }
        }
    }

    /// One block: the median is `med3(max of the lows, med3 of the
    /// middles, min of the highs)` of three neighbouring columns. Every
    /// step is a min or max over whole fixed-size arrays, which the
    /// compiler vectorises; the last columns are sorted again by a
    /// [`TAIL`]-wide pass, so no narrow store is read back by a vector load
    /// (a store-forwarding stall).
    #[inline(always)]
    fn medians(&mut self, v: [&[T; BLOCK + 2]; 4]) -> [[T; BLOCK]; 2] {
        self.sort::<BLOCK>(&v, 0);
        self.sort::<TAIL>(&v, BLOCK + 2 - TAIL);
        let mut out = [[T::default(); BLOCK]; 2];
        for (j, out) in out.iter_mut().enumerate() {
            fn three<T>(a: &[T; BLOCK + 2]) -> [&[T; BLOCK]; 3] {
                std::array::from_fn(|k| a[k..k + BLOCK].try_into().expect("block"))
            }
            let ([l0, l1, l2], [m0, m1, m2], [h0, h1, h2]) =
                (three(&self.lo[j]), three(&self.mi[j]), three(&self.hi[j]));
            for x in 0..BLOCK {
                let l = l0[x].hi(l1[x]).hi(l2[x]);
                let h = h0[x].lo(h1[x]).lo(h2[x]);
                let m = med3(m0[x], m1[x], m2[x]);
                out[x] = med3(l, m, h);
            }
        }
        out
    }
}

#[inline(always)]
fn med3<T: Pixel>(a: T, b: T, c: T) -> T {
    a.lo(b).hi(a.hi(b).lo(c))
}

/// Medians of side 5 and more: the 5×5 network on [`LANES`] pixels at once
/// where rows are that wide, else `select_nth_unstable`.
pub struct MedianN(usize);

impl<T: Pixel> RowKernel<T> for MedianN {
    type Out = T;
    type Scratch = Vec<T>;

    fn radius(&self) -> usize {
        self.0 / 2
    }

    #[inline(always)]
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [T]], buf: &mut Vec<T>) {
        let n = self.0;
        for (y, o) in out[0].chunks_exact_mut(w).enumerate() {
            let rows = || std::array::from_fn(|k| src.row(y + k));
            if n == 5 && size_of::<T>() == 1 && w >= BYTE_LANES {
                median5_row::<T, BYTE_LANES>(rows(), o);
                continue;
            }
            if n == 5 && w >= LANES {
                median5_row::<T, LANES>(rows(), o);
                continue;
            }
            for (x, o) in o.iter_mut().enumerate() {
                buf.clear();
                (0..n).for_each(|ky| buf.extend_from_slice(&src.row(y + ky)[x..x + n]));
                let mid = buf.len() / 2;
                let (_, m, _) = buf.select_nth_unstable_by(mid, |a, b| {
                    a.partial_cmp(b).unwrap_or(Ordering::Equal)
                });
                *o = *m;
            }
        }
    }
}

/// One output row of the 5×5 median (`out.len() ≥ LANES`): the network of
/// [`median_network`]`(25)` written out as straight-line code (the test
/// `written_network_is_the_derived_one` holds the two equal) on [`LANES`]
/// pixels at once, so every wire is a vector register and every comparator
/// a vector min and max. The last block overlaps the one before it.
#[inline(always)]
fn median5_row<T: Pixel, const L: usize>(rows: [&[T]; 5], out: &mut [T]) {
    let w = out.len();
    let rows: [&[T]; 5] = rows.map(|r| &r[..w + 4]);
    let mut x0 = 0;
    loop {
        let x = x0.min(w - L);
        // Written out (`array::from_fn` over the wires is not inlined, and
        // its narrow stores stall the network's vector loads).
        macro_rules! wires {
            ($($k:literal)*) => {
                [$(<[T; L]>::try_from(&rows[$k / 5][x + $k % 5..x + $k % 5 + L]).expect("lanes")),*]
            };
        }
        let mut v: [[T; L]; 25] =
            wires!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24);
        median25(&mut v);
        out[x..x + L].copy_from_slice(&v[12]);
        if x + L == w {
            break;
        }
        x0 += L;
    }
}

/// The comparators of the 25-wire median network, in order: `E` keeps both
/// (min to the first wire, max to the second), `L` the min only, `H` the max only.
macro_rules! median25_network {
    ($m:ident) => {
        $m! {
        E(0,1) E(2,3) E(4,5) E(6,7) E(8,9) E(10,11) E(12,13) E(14,15) E(16,17) E(18,19)
        E(20,21) E(22,23) E(0,2) E(1,3) E(4,6) E(5,7) E(8,10) E(9,11) E(12,14) E(13,15)
        E(16,18) E(17,19) E(20,22) E(21,23) E(1,2) E(5,6) E(9,10) E(13,14) E(17,18) E(21,22)
        E(0,4) E(1,5) E(2,6) E(3,7) E(8,12) E(9,13) E(10,14) E(11,15) E(16,20) E(17,21)
        E(18,22) E(19,23) E(2,4) E(3,5) E(10,12) E(11,13) E(18,20) E(19,21) E(1,2) E(3,4)
        E(5,6) E(9,10) E(11,12) E(13,14) E(17,18) E(19,20) E(21,22) E(0,8) E(1,9) E(2,10)
        E(3,11) E(4,12) E(5,13) E(6,14) L(7,15) E(16,24) E(4,8) E(5,9) E(6,10) E(7,11) E(20,24)
        E(2,4) E(3,5) E(6,8) E(7,9) E(10,12) E(11,13) E(18,20) E(19,21) E(22,24) E(1,2) E(3,4)
        E(5,6) E(7,8) E(9,10) E(11,12) L(13,14) E(17,18) E(19,20) E(21,22) E(23,24) H(0,16)
        H(1,17) H(2,18) H(3,19) H(4,20) H(5,21) L(6,22) L(7,23) L(8,24) H(8,16) H(9,17)
        L(10,18) L(11,19) L(12,20) L(13,21) H(6,10) H(7,11) L(12,16) L(13,17) H(10,12) L(11,13)
        H(11,12)
        }
    };
}

/// Runs the 25-wire network on `v`, lane by lane.
#[inline(always)]
fn median25<T: Pixel, const L: usize>(v: &mut [[T; L]; 25]) {
    macro_rules! apply {
        ($($k:ident($a:literal, $b:literal))*) => { $( apply!(@ $k v $a $b); )* };
        (@ E $v:ident $a:literal $b:literal) => {{
            let (x, y) = ($v[$a], $v[$b]);
            $v[$a] = std::array::from_fn(|i| x[i].lo(y[i]));
            $v[$b] = std::array::from_fn(|i| x[i].hi(y[i]));
        }};
        (@ L $v:ident $a:literal $b:literal) => {{
            let (x, y) = ($v[$a], $v[$b]);
            $v[$a] = std::array::from_fn(|i| x[i].lo(y[i]));
        }};
        (@ H $v:ident $a:literal $b:literal) => {{
            let (x, y) = ($v[$a], $v[$b]);
            $v[$b] = std::array::from_fn(|i| x[i].hi(y[i]));
        }};
    }
    median25_network!(apply);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::op::tests::{noise_planes, padded};

    /// 0-1 principle: a comparator network selects the median of every
    /// input iff it does of every 0/1 input. Bit-sliced: bit j of word i is
    /// the input with number 64·i + j.
    fn selects_median_of_all_01_inputs(n: usize) {
        assert!(n >= 6, "whole words of 64 inputs");
        let net = median_network(n);
        let total: u64 = 1 << n;
        // Bit `j` of wire `w` is bit `w` of input `64·word + j`: for
        // `w < 6` the same pattern in every word (bit `w` of `j`), above
        // it all ones or all zeros (bit `w − 6` of `word`).
        let low: Vec<u64> = (0..6)
            .map(|w| (0..64u64).filter(|j| j >> w & 1 == 1).map(|j| 1 << j).sum())
            .collect();
        // The `j` of at least `t` ones (none of 7).
        let at_least: Vec<u64> = (0..=7)
            .map(|t| {
                (0..64u64)
                    .filter(|j| j.count_ones() >= t)
                    .fold(0, |m, j| m | 1 << j)
            })
            .collect();
        for word in 0..total / 64 {
            let mut wires: Vec<u64> = (0..n)
                .map(|w| match w {
                    0..6 => low[w],
                    _ => 0u64.wrapping_sub(word >> (w - 6) & 1),
                })
                .collect();
            for c in &net {
                let (x, y) = (wires[c.a], wires[c.b]);
                match c.keep {
                    Keep::Both => (wires[c.a], wires[c.b]) = (x & y, x | y),
                    Keep::Min => wires[c.a] = x & y,
                    Keep::Max => wires[c.b] = x | y,
                }
            }
            // Input `64·word + j` has more ones than zeros where `j` has at
            // least `n/2 + 1 − ones(word)` of them.
            let need = (n / 2 + 1).saturating_sub(word.count_ones() as usize);
            let want = at_least[need.min(7)];
            let got = wires[n / 2];
            assert!(
                got == want,
                "n={n} input={:b}",
                word * 64 + (got ^ want).trailing_zeros() as u64
            );
        }
    }

    #[test]
    fn sorted_columns_select_the_median_of_all_01_inputs() {
        // Two output rows from four input rows of three columns: all 2¹² inputs.
        for bits in 0u32..1 << 12 {
            let v: Vec<u8> = (0..12).map(|i| ((bits >> i) & 1) as u8).collect();
            let rows: [&[u8]; 4] = std::array::from_fn(|r| &v[3 * r..3 * r + 3]);
            let (mut a, mut b) = ([0u8; 1], [0u8; 1]);
            median3_pair(rows, [&mut a, &mut b]);
            let ones = |r: u32| (bits >> (3 * r)) & 0o777;
            assert_eq!(a[0], (ones(0).count_ones() > 4) as u8, "{bits:012b}");
            assert_eq!(b[0], (ones(1).count_ones() > 4) as u8, "{bits:012b}");
        }
    }

    #[test]
    fn networks_select_the_median() {
        selects_median_of_all_01_inputs(9);
        selects_median_of_all_01_inputs(25);
    }

    #[test]
    fn written_network_is_the_derived_one() {
        let mut written = Vec::new();
        macro_rules! collect {
            ($($k:ident($a:literal, $b:literal))*) => {
                $(written.push(Comparator {
                    a: $a,
                    b: $b,
                    keep: match stringify!($k) {
                        "E" => Keep::Both,
                        "L" => Keep::Min,
                        _ => Keep::Max,
                    },
                });)*
            };
        }
        median25_network!(collect);
        assert_eq!(written, median_network(25));
    }

    #[test]
    fn network_sizes() {
        // Min/max operations per pixel (a full comparator counts two).
        let ops = |n| {
            median_network(n)
                .iter()
                .map(|c| if c.keep == Keep::Both { 2 } else { 1 })
                .sum::<usize>()
        };
        assert_eq!(ops(9), 40);
        assert_eq!(ops(25), 202);
    }

    #[test]
    fn fast_path_matches_reference() {
        for size in [3, 5, 7] {
            let m = Median::new(size).unwrap();
            for w in [70, 300] {
                let input = padded(noise_planes::<u8>(w, 9, 2, 5), m.radius());
                assert_eq!(m.fast(&input), m.reference(&input, None));
            }
            let input = padded(noise_planes::<u16>(17, 4, 1, 5), m.radius());
            assert_eq!(m.fast(&input), m.reference(&input, None));
            let input = padded(noise_planes::<f32>(13, 21, 1, 6), m.radius());
            assert_eq!(m.fast(&input), m.reference(&input, None));
        }
    }

    #[test]
    fn median_by_hand_and_nodata() {
        let p = Plane::new(3, 3, vec![9u8, 1, 8, 2, 7, 3, 6, 4, 5]);
        let m = Median::new(3).unwrap();
        assert_eq!(m.reference(std::slice::from_ref(&p), None)[0].data, vec![5]);
        // Nodata 9 is replaced by the centre 7: {7,1,8,2,7,3,6,4,5} → 5.
        assert_eq!(
            m.reference(std::slice::from_ref(&p), Some(9))[0].data,
            vec![5]
        );
        // A nodata centre stays nodata.
        assert_eq!(m.reference(&[p], Some(7))[0].data, vec![7]);
        assert!(Median::new(4).is_err());
    }
}
