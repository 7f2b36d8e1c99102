//! Lanes of f64 for the host dct5 scorer ([`super::dct5::band`]): four on
//! one AVX2 register, eight on one AVX-512 register where the CPU has
//! them, a plain array of any width everywhere else.
//!
//! Every operation is the lane-wise IEEE operation of its scalar twin
//! (separate multiply and add, no fused multiply-add), so every
//! implementation gives the same bits as the scalar reference
//! ([`super::dct5::Dct5::segment_pass`]), whatever the width. Written out
//! for AVX2 because the compiler, left to vectorise arrays of four,
//! scattered the recursion over shuffles and scalar code
//! (docs/decisions/0006-explicit-avx2-lanes.md); for AVX-512 because a
//! recursion's steps depend on each other, so that one vector of eight
//! lines does in a step what two of four do in two (decision 0035).

/// `N` f64 lanes, with per-lane masks of their own type.
pub(crate) trait F64Lanes: Copy {
    /// Lanes in one vector.
    const N: usize;
    /// A true or false per lane.
    type Mask: Copy;
    fn splat(v: f64) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
    /// `v[0..N]`; panics where `v` is shorter.
    fn load(v: &[f64]) -> Self;
    /// Into `v[0..N]`; panics where `v` is shorter.
    fn store(self, v: &mut [f64]);
    /// Lane `j` to `out[at + j·stride]` (one bounds check for all).
    fn store_strided(self, out: &mut [f64], at: usize, stride: usize);
    /// 1.0 where `codes[j] == class`, else 0.0 (`codes` holds `N`).
    fn indicator(codes: &[u16], class: u16) -> Self;
    /// Where `self > o`.
    fn gt(self, o: Self) -> Self::Mask;
    /// Where `self >= o`.
    fn ge(self, o: Self) -> Self::Mask;
    /// Where `codes[j] == class` (`codes` holds `N`).
    fn eq_code(codes: &[u16], class: u16) -> Self::Mask;
    /// Per lane: `a` where `mask`, else `b`.
    fn select(mask: Self::Mask, a: Self, b: Self) -> Self;
    /// `codes[j] = code` where lane `j` of `mask` is set.
    fn put_code(mask: Self::Mask, code: u16, codes: &mut [u16]);
    /// `out[j] = if mask { a[j] } else { b[j] }`.
    fn select_codes(mask: Self::Mask, a: &[u16], b: &[u16], out: &mut [u16]);
}

/// `v[at..at + S::N]`: one bounds check, after which the lanes need none.
#[inline(always)]
pub(crate) fn lanes<S: F64Lanes, T>(v: &[T], at: usize) -> &[T] {
    &v[at..at + S::N]
}

/// [`lanes`], mutably.
#[inline(always)]
pub(crate) fn lanes_mut<S: F64Lanes, T>(v: &mut [T], at: usize) -> &mut [T] {
    &mut v[at..at + S::N]
}

/// The plain twin, of any width: the reference the vectors are tested
/// against, and what runs where the CPU has neither.
impl<const N: usize> F64Lanes for [f64; N] {
    const N: usize = N;
    type Mask = [bool; N];
    #[inline(always)]
    fn splat(v: f64) -> Self {
        [v; N]
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        std::array::from_fn(|j| self[j] + o[j])
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        std::array::from_fn(|j| self[j] - o[j])
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        std::array::from_fn(|j| self[j] * o[j])
    }
    /// As `maxpd` does: `o` unless `self` is greater (so `o` for two
    /// zeros of either sign, and where either is NaN).
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        std::array::from_fn(|j| if self[j] > o[j] { self[j] } else { o[j] })
    }
    /// As `minpd` does: `o` unless `self` is less.
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        std::array::from_fn(|j| if self[j] < o[j] { self[j] } else { o[j] })
    }
    #[inline(always)]
    fn load(v: &[f64]) -> Self {
        v[..N].try_into().expect("N lanes")
    }
    #[inline(always)]
    fn store(self, v: &mut [f64]) {
        v[..N].copy_from_slice(&self);
    }
    #[inline(always)]
    fn store_strided(self, out: &mut [f64], at: usize, stride: usize) {
        let out = &mut out[at..=at + (N - 1) * stride];
        for (j, v) in self.into_iter().enumerate() {
            out[j * stride] = v;
        }
    }
    #[inline(always)]
    fn indicator(codes: &[u16], class: u16) -> Self {
        let codes = &codes[..N];
        std::array::from_fn(|j| f64::from(u8::from(codes[j] == class)))
    }
    #[inline(always)]
    fn gt(self, o: Self) -> Self::Mask {
        std::array::from_fn(|j| self[j] > o[j])
    }
    #[inline(always)]
    fn ge(self, o: Self) -> Self::Mask {
        std::array::from_fn(|j| self[j] >= o[j])
    }
    #[inline(always)]
    fn eq_code(codes: &[u16], class: u16) -> Self::Mask {
        let codes = &codes[..N];
        std::array::from_fn(|j| codes[j] == class)
    }
    #[inline(always)]
    fn select(m: Self::Mask, a: Self, b: Self) -> Self {
        std::array::from_fn(|j| if m[j] { a[j] } else { b[j] })
    }
    #[inline(always)]
    fn put_code(m: Self::Mask, code: u16, codes: &mut [u16]) {
        for (c, m) in codes[..N].iter_mut().zip(m) {
            if m {
                *c = code;
            }
        }
    }
    #[inline(always)]
    fn select_codes(m: Self::Mask, a: &[u16], b: &[u16], out: &mut [u16]) {
        for (j, o) in out[..N].iter_mut().enumerate() {
            *o = if m[j] { a[j] } else { b[j] };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::F64Lanes;
    use std::arch::x86_64::*;

    // SAFETY (every block below): these methods are only reached from
    // code compiled with `#[target_feature(enable = "avx2")]` after the CPU
    // was found to have AVX2 (`dct5::job::Isa::best`), and every memory
    // access stays within a slice checked to hold four.
    /// `a` where `m`, else `b`, as one `vblendvpd` the compiler cannot see
    /// into: it turned a blend stored back where `b` came from into a
    /// masked store, which AMD cores run several times slower.
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn blend(m: __m256d, a: __m256d, b: __m256d) -> __m256d {
        let out;
        // SAFETY: a register-only instruction of AVX, which the caller has.
        unsafe {
            std::arch::asm!(
                "vblendvpd {out}, {b}, {a}, {m}",
                out = lateout(ymm_reg) out,
                a = in(ymm_reg) a,
                b = in(ymm_reg) b,
                m = in(ymm_reg) m,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        out
    }

    /// Four lane masks of 64 bits as four of 16 (the low half): two signed
    /// saturating packs.
    #[inline(always)]
    unsafe fn narrow(m: __m256d) -> __m128i {
        unsafe {
            let m = _mm256_castpd_si256(m);
            let m = _mm_packs_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256::<1>(m));
            _mm_packs_epi32(m, m)
        }
    }

    /// Four codes, in the low half.
    #[inline(always)]
    fn codes4(codes: &[u16]) -> __m128i {
        let codes = &codes[..4];
        unsafe { _mm_loadl_epi64(codes.as_ptr().cast()) }
    }

    impl F64Lanes for __m256d {
        const N: usize = 4;
        type Mask = __m256d;
        #[inline(always)]
        fn splat(v: f64) -> Self {
            unsafe { _mm256_set1_pd(v) }
        }
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            unsafe { _mm256_add_pd(self, o) }
        }
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            unsafe { _mm256_sub_pd(self, o) }
        }
        #[inline(always)]
        fn mul(self, o: Self) -> Self {
            unsafe { _mm256_mul_pd(self, o) }
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            unsafe { _mm256_max_pd(self, o) }
        }
        #[inline(always)]
        fn min(self, o: Self) -> Self {
            unsafe { _mm256_min_pd(self, o) }
        }
        #[inline(always)]
        fn load(v: &[f64]) -> Self {
            let v = &v[..4];
            unsafe { _mm256_loadu_pd(v.as_ptr()) }
        }
        #[inline(always)]
        fn store(self, v: &mut [f64]) {
            let v = &mut v[..4];
            unsafe { _mm256_storeu_pd(v.as_mut_ptr(), self) }
        }
        #[inline(always)]
        fn store_strided(self, out: &mut [f64], at: usize, stride: usize) {
            let out = &mut out[at..=at + 3 * stride];
            // SAFETY: the four places lie in `out` (checked just above); the
            // halves are stored without shuffling them into place first.
            unsafe {
                let p = out.as_mut_ptr();
                let (lo, hi) = (
                    _mm256_castpd256_pd128(self),
                    _mm256_extractf128_pd::<1>(self),
                );
                _mm_storel_pd(p, lo);
                _mm_storeh_pd(p.add(stride), lo);
                _mm_storel_pd(p.add(2 * stride), hi);
                _mm_storeh_pd(p.add(3 * stride), hi);
            }
        }
        #[inline(always)]
        fn indicator(codes: &[u16], class: u16) -> Self {
            let one = Self::splat(1.0);
            unsafe { _mm256_and_pd(Self::eq_code(codes, class), one) }
        }
        #[inline(always)]
        fn gt(self, o: Self) -> Self {
            unsafe { _mm256_cmp_pd::<_CMP_GT_OQ>(self, o) }
        }
        #[inline(always)]
        fn ge(self, o: Self) -> Self {
            unsafe { _mm256_cmp_pd::<_CMP_GE_OQ>(self, o) }
        }
        #[inline(always)]
        fn eq_code(codes: &[u16], class: u16) -> Self {
            unsafe {
                let eq = _mm_cmpeq_epi16(codes4(codes), _mm_set1_epi16(class as i16));
                _mm256_castsi256_pd(_mm256_cvtepi16_epi64(eq))
            }
        }
        #[inline(always)]
        fn select(m: Self, a: Self, b: Self) -> Self {
            unsafe { blend(m, a, b) }
        }
        #[inline(always)]
        fn put_code(m: Self, code: u16, codes: &mut [u16]) {
            let codes = &mut codes[..4];
            unsafe {
                let old = _mm_loadl_epi64(codes.as_ptr().cast());
                let new = _mm_blendv_epi8(old, _mm_set1_epi16(code as i16), narrow(m));
                _mm_storel_epi64(codes.as_mut_ptr().cast(), new);
            }
        }
        #[inline(always)]
        fn select_codes(m: Self, a: &[u16], b: &[u16], out: &mut [u16]) {
            let out = &mut out[..4];
            unsafe {
                let new = _mm_blendv_epi8(codes4(b), codes4(a), narrow(m));
                _mm_storel_epi64(out.as_mut_ptr().cast(), new);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::F64Lanes;
    use std::arch::x86_64::*;

    // SAFETY (every block below): these methods are only reached from
    // code compiled with `#[target_feature(enable = "avx512f,avx512bw,avx512vl")]`
    // after the CPU was found to have them (`dct5::job::Isa::best`), and
    // every memory access stays within a slice checked to hold eight.
    /// Eight codes.
    #[inline(always)]
    fn codes8(codes: &[u16]) -> __m128i {
        let codes = &codes[..8];
        unsafe { _mm_loadu_si128(codes.as_ptr().cast()) }
    }

    impl F64Lanes for __m512d {
        const N: usize = 8;
        type Mask = __mmask8;
        #[inline(always)]
        fn splat(v: f64) -> Self {
            unsafe { _mm512_set1_pd(v) }
        }
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            unsafe { _mm512_add_pd(self, o) }
        }
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            unsafe { _mm512_sub_pd(self, o) }
        }
        #[inline(always)]
        fn mul(self, o: Self) -> Self {
            unsafe { _mm512_mul_pd(self, o) }
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            unsafe { _mm512_max_pd(self, o) }
        }
        #[inline(always)]
        fn min(self, o: Self) -> Self {
            unsafe { _mm512_min_pd(self, o) }
        }
        #[inline(always)]
        fn load(v: &[f64]) -> Self {
            let v = &v[..8];
            unsafe { _mm512_loadu_pd(v.as_ptr()) }
        }
        #[inline(always)]
        fn store(self, v: &mut [f64]) {
            let v = &mut v[..8];
            unsafe { _mm512_storeu_pd(v.as_mut_ptr(), self) }
        }
        #[inline(always)]
        fn store_strided(self, out: &mut [f64], at: usize, stride: usize) {
            let out = &mut out[at..=at + 7 * stride];
            let mut v = [0.0; 8];
            self.store(&mut v);
            for (j, v) in v.into_iter().enumerate() {
                out[j * stride] = v;
            }
        }
        #[inline(always)]
        fn indicator(codes: &[u16], class: u16) -> Self {
            unsafe { _mm512_maskz_mov_pd(Self::eq_code(codes, class), Self::splat(1.0)) }
        }
        #[inline(always)]
        fn gt(self, o: Self) -> __mmask8 {
            unsafe { _mm512_cmp_pd_mask::<_CMP_GT_OQ>(self, o) }
        }
        #[inline(always)]
        fn ge(self, o: Self) -> __mmask8 {
            unsafe { _mm512_cmp_pd_mask::<_CMP_GE_OQ>(self, o) }
        }
        #[inline(always)]
        fn eq_code(codes: &[u16], class: u16) -> __mmask8 {
            unsafe { _mm_cmpeq_epi16_mask(codes8(codes), _mm_set1_epi16(class as i16)) }
        }
        #[inline(always)]
        fn select(m: __mmask8, a: Self, b: Self) -> Self {
            unsafe { _mm512_mask_blend_pd(m, b, a) }
        }
        #[inline(always)]
        fn put_code(m: __mmask8, code: u16, codes: &mut [u16]) {
            let new =
                unsafe { _mm_mask_blend_epi16(m, codes8(codes), _mm_set1_epi16(code as i16)) };
            let codes = &mut codes[..8];
            unsafe { _mm_storeu_si128(codes.as_mut_ptr().cast(), new) }
        }
        #[inline(always)]
        fn select_codes(m: __mmask8, a: &[u16], b: &[u16], out: &mut [u16]) {
            let new = unsafe { _mm_mask_blend_epi16(m, codes8(b), codes8(a)) };
            let out = &mut out[..8];
            unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), new) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lane of `got` has the bits of the plain lanes `want`.
    fn same_bits<const N: usize, V: F64Lanes>(want: [f64; N], got: V) {
        let mut lanes = [0.0; N];
        got.store(&mut lanes);
        assert_eq!(lanes.map(f64::to_bits), want.map(f64::to_bits));
    }

    /// A vector type gives the bits of the plain lanes of its width, on
    /// every operation.
    fn matches_the_arrays<const N: usize, V: F64Lanes>() {
        assert_eq!(V::N, N);
        let values = [0.1, -2.5, 3.0, 1e-300, 7.0, -0.0, 2.5, f64::NAN];
        let others = [0.3, -2.5, -7.25, 1e300, 7.0, 0.0, -0.0, 1.0];
        let a: [f64; N] = std::array::from_fn(|j| values[j]);
        let b: [f64; N] = std::array::from_fn(|j| others[j]);
        let codes: [u16; N] = std::array::from_fn(|j| [3, 7, 3, 65535, 3, 0, 1, 3][j]);
        let (va, vb) = (V::load(&a), V::load(&b));
        same_bits(a.add(b), va.add(vb));
        same_bits(a.sub(b), va.sub(vb));
        same_bits(a.mul(b), va.mul(vb));
        same_bits(a.max(b), va.max(vb));
        same_bits(a.min(b), va.min(vb));
        same_bits(<[f64; N]>::indicator(&codes, 3), V::indicator(&codes, 3));
        let (m, vm) = (<[f64; N]>::eq_code(&codes, 3), V::eq_code(&codes, 3));
        same_bits(<[f64; N]>::select(m, a, b), V::select(vm, va, vb));
        for (pm, vm) in [(a.gt(b), va.gt(vb)), (a.ge(b), va.ge(vb))] {
            same_bits(<[f64; N]>::select(pm, a, b), V::select(vm, va, vb));
        }
        let (mut want, mut got) = ([1u16; 10], [1u16; 10]);
        <[f64; N]>::put_code(m, 9, &mut want[1..]);
        V::put_code(vm, 9, &mut got[1..]);
        assert_eq!(got, want);
        assert_eq!(want[..5], [1, 9, 1, 9, 1]);
        let (x, y): ([u16; N], [u16; N]) = (
            std::array::from_fn(|j| 10 + j as u16),
            std::array::from_fn(|j| 20 + j as u16),
        );
        let (mut want, mut got) = ([0u16; N], [0u16; N]);
        <[f64; N]>::select_codes(m, &x, &y, &mut want);
        V::select_codes(vm, &x, &y, &mut got);
        assert_eq!(got, want);
        assert_eq!(want[..2], [10, 21]);
        let mut out = [0.0; 10];
        va.store(&mut out[1..]);
        assert_eq!(out[0], 0.0);
        same_bits(a, V::load(&out[1..]));
        let (mut want, mut got) = ([0.0; 30], [0.0; 30]);
        a.store_strided(&mut want, 1, 3);
        va.store_strided(&mut got, 1, 3);
        assert_eq!(want[1 + 3], a[1]);
        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_lanes_match_the_arrays() {
        if std::is_x86_feature_detected!("avx2") {
            matches_the_arrays::<4, std::arch::x86_64::__m256d>();
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_lanes_match_the_arrays() {
        if mapfilter_base::cpu::avx512() {
            // SAFETY: the CPU has the features the lanes are compiled for.
            unsafe { avx512_lanes() }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn avx512_lanes() {
        matches_the_arrays::<8, std::arch::x86_64::__m512d>();
    }
}
