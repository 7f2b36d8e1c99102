//! Four f64 lanes for the host dct5 scorer ([`super::dct5::band`]): one
//! AVX2 register where the CPU has it, a plain array everywhere else.
//!
//! Every operation is the lane-wise IEEE operation of its scalar twin
//! (separate multiply and add, no fused multiply-add), so both
//! implementations give the same bits as the scalar reference
//! ([`super::dct5::Dct5::segment_pass`]). Written out for AVX2 because the
//! compiler, left to vectorise arrays of four, scattered the recursion
//! over shuffles and scalar code (docs/decisions/0006-explicit-avx2-lanes.md).

/// Four f64 lanes, and per-lane masks of the same type (all bits set where true).
pub(crate) trait F64x4: Copy {
    fn splat(v: f64) -> Self;
    fn from_array(v: [f64; 4]) -> Self;
    fn to_array(self) -> [f64; 4];
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
    fn load(v: &[f64; 4]) -> Self;
    fn store(self, v: &mut [f64; 4]);
    /// Lane `j` to `out[at + j·stride]` (one bounds check for the four).
    fn store_strided(self, out: &mut [f64], at: usize, stride: usize);
    /// 1.0 where `codes[j] == class`, else 0.0.
    fn indicator(codes: &[u16; 4], class: u16) -> Self;
    /// Mask of `self > o`.
    fn gt(self, o: Self) -> Self;
    /// Mask of `self >= o`.
    fn ge(self, o: Self) -> Self;
    /// Mask of `codes[j] == class`.
    fn eq_code(codes: &[u16; 4], class: u16) -> Self;
    /// Per lane: `a` where `mask`, else `b`.
    fn select(mask: Self, a: Self, b: Self) -> Self;
    /// `codes[j] = code` where lane `j` of `mask` is set.
    fn put_code(mask: Self, code: u16, codes: &mut [u16; 4]);
    /// `out[j] = if mask { a[j] } else { b[j] }`.
    fn select_codes(mask: Self, a: &[u16; 4], b: &[u16; 4], out: &mut [u16; 4]);
}

/// `v[at..at + 4]` as an array: one bounds check, after which the lanes
/// need none.
#[inline(always)]
pub(crate) fn four<T>(v: &[T], at: usize) -> &[T; 4] {
    v[at..at + 4].try_into().expect("four lanes")
}

/// [`four`], mutably.
#[inline(always)]
pub(crate) fn four_mut<T>(v: &mut [T], at: usize) -> &mut [T; 4] {
    (&mut v[at..at + 4]).try_into().expect("four lanes")
}

impl F64x4 for [f64; 4] {
    #[inline(always)]
    fn splat(v: f64) -> Self {
        [v; 4]
    }
    #[inline(always)]
    fn from_array(v: [f64; 4]) -> Self {
        v
    }
    #[inline(always)]
    fn to_array(self) -> [f64; 4] {
        self
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
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        std::array::from_fn(|j| self[j].max(o[j]))
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        std::array::from_fn(|j| self[j].min(o[j]))
    }
    #[inline(always)]
    fn load(v: &[f64; 4]) -> Self {
        *v
    }
    #[inline(always)]
    fn store(self, v: &mut [f64; 4]) {
        *v = self;
    }
    #[inline(always)]
    fn store_strided(self, out: &mut [f64], at: usize, stride: usize) {
        let out = &mut out[at..=at + 3 * stride];
        for (j, v) in self.into_iter().enumerate() {
            out[j * stride] = v;
        }
    }
    #[inline(always)]
    fn indicator(codes: &[u16; 4], class: u16) -> Self {
        std::array::from_fn(|j| f64::from(u8::from(codes[j] == class)))
    }
    #[inline(always)]
    fn gt(self, o: Self) -> Self {
        std::array::from_fn(|j| mask(self[j] > o[j]))
    }
    #[inline(always)]
    fn ge(self, o: Self) -> Self {
        std::array::from_fn(|j| mask(self[j] >= o[j]))
    }
    #[inline(always)]
    fn eq_code(codes: &[u16; 4], class: u16) -> Self {
        std::array::from_fn(|j| mask(codes[j] == class))
    }
    #[inline(always)]
    fn select(m: Self, a: Self, b: Self) -> Self {
        std::array::from_fn(|j| if m[j].to_bits() != 0 { a[j] } else { b[j] })
    }
    #[inline(always)]
    fn put_code(m: Self, code: u16, codes: &mut [u16; 4]) {
        for (j, c) in codes.iter_mut().enumerate() {
            if m[j].to_bits() != 0 {
                *c = code;
            }
        }
    }
    #[inline(always)]
    fn select_codes(m: Self, a: &[u16; 4], b: &[u16; 4], out: &mut [u16; 4]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o = if m[j].to_bits() != 0 { a[j] } else { b[j] };
        }
    }
}

/// A lane mask as an f64: all bits set where `b`.
#[inline(always)]
fn mask(b: bool) -> f64 {
    f64::from_bits(if b { u64::MAX } else { 0 })
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::F64x4;
    use std::arch::x86_64::*;

    // SAFETY (every block below): these methods are only reached from
    // code compiled with `#[target_feature(enable = "avx2")]` after the CPU
    // was found to have AVX2 (`dct5::band::Isa::best`), and every memory
    // access stays within an array of four.
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

    impl F64x4 for __m256d {
        #[inline(always)]
        fn splat(v: f64) -> Self {
            unsafe { _mm256_set1_pd(v) }
        }
        #[inline(always)]
        fn from_array(v: [f64; 4]) -> Self {
            unsafe { _mm256_loadu_pd(v.as_ptr()) }
        }
        #[inline(always)]
        fn to_array(self) -> [f64; 4] {
            let mut v = [0.0; 4];
            unsafe { _mm256_storeu_pd(v.as_mut_ptr(), self) };
            v
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
        fn load(v: &[f64; 4]) -> Self {
            unsafe { _mm256_loadu_pd(v.as_ptr()) }
        }
        #[inline(always)]
        fn store(self, v: &mut [f64; 4]) {
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
        fn indicator(codes: &[u16; 4], class: u16) -> Self {
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
        fn eq_code(codes: &[u16; 4], class: u16) -> Self {
            unsafe {
                let c = _mm_loadl_epi64(codes.as_ptr().cast());
                let eq = _mm_cmpeq_epi16(c, _mm_set1_epi16(class as i16));
                _mm256_castsi256_pd(_mm256_cvtepi16_epi64(eq))
            }
        }
        #[inline(always)]
        fn select(m: Self, a: Self, b: Self) -> Self {
            unsafe { blend(m, a, b) }
        }
        #[inline(always)]
        fn put_code(m: Self, code: u16, codes: &mut [u16; 4]) {
            unsafe {
                let old = _mm_loadl_epi64(codes.as_ptr().cast());
                let new = _mm_blendv_epi8(old, _mm_set1_epi16(code as i16), narrow(m));
                _mm_storel_epi64(codes.as_mut_ptr().cast(), new);
            }
        }
        #[inline(always)]
        fn select_codes(m: Self, a: &[u16; 4], b: &[u16; 4], out: &mut [u16; 4]) {
            unsafe {
                let a = _mm_loadl_epi64(a.as_ptr().cast());
                let b = _mm_loadl_epi64(b.as_ptr().cast());
                let new = _mm_blendv_epi8(b, a, narrow(m));
                _mm_storel_epi64(out.as_mut_ptr().cast(), new);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both implementations give the same bits on the same lanes.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_lanes_match_the_arrays() {
        use std::arch::x86_64::__m256d;
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let a = [0.1, -2.5, 3.0, 1e-300];
        let b = [0.3, -2.5, -7.25, 1e300];
        let codes = [3u16, 7, 3, 65535];
        let check = |want: [f64; 4], got: __m256d| {
            let got = got.to_array();
            for j in 0..4 {
                assert_eq!(want[j].to_bits(), got[j].to_bits(), "lane {j}");
            }
        };
        let (va, vb) = (__m256d::from_array(a), __m256d::from_array(b));
        check(a.add(b), va.add(vb));
        check(a.sub(b), va.sub(vb));
        check(a.mul(b), va.mul(vb));
        check(a.max(b), va.max(vb));
        check(a.min(b), va.min(vb));
        check(a.gt(b), va.gt(vb));
        check(a.ge(b), va.ge(vb));
        check(
            <[f64; 4]>::indicator(&codes, 3),
            __m256d::indicator(&codes, 3),
        );
        let m = <[f64; 4]>::eq_code(&codes, 3);
        check(m, __m256d::eq_code(&codes, 3));
        check(
            <[f64; 4]>::select(m, a, b),
            __m256d::select(__m256d::from_array(m), va, vb),
        );
        let (mut want, mut got) = ([1u16, 2, 3, 4, 5], [1u16, 2, 3, 4, 5]);
        <[f64; 4]>::put_code(m, 9, four_mut(&mut want, 1));
        __m256d::put_code(__m256d::from_array(m), 9, four_mut(&mut got, 1));
        assert_eq!(want, [1, 9, 3, 9, 5]);
        assert_eq!(got, want);
        let (x, y) = ([10u16, 11, 12, 13], [20u16, 21, 22, 23]);
        let (mut want, mut got) = ([0u16; 4], [0u16; 4]);
        <[f64; 4]>::select_codes(m, &x, &y, &mut want);
        __m256d::select_codes(__m256d::from_array(m), &x, &y, &mut got);
        assert_eq!(want, [10, 21, 12, 23]);
        assert_eq!(got, want);
        let mut out = [0.0; 5];
        va.store(four_mut(&mut out, 1));
        check(
            <[f64; 4]>::load(four(&out, 1)),
            __m256d::load(four(&out, 1)),
        );
        assert_eq!(out[0], 0.0);
        let (mut want, mut got) = ([0.0; 11], [0.0; 11]);
        a.store_strided(&mut want, 1, 3);
        va.store_strided(&mut got, 1, 3);
        assert_eq!(
            want,
            [0.0, a[0], 0.0, 0.0, a[1], 0.0, 0.0, a[2], 0.0, 0.0, a[3]]
        );
        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits));
    }
}
