//! What the CPU may run: the one run-time switch for every AVX2 path (image
//! filters' strips, the host dct5 scorer) and the AVX-512 one (the dct5
//! scorer's pass 2). `MAPFILTER_SIMD=baseline` forces the plain copies,
//! `MAPFILTER_SIMD=avx2` stops at AVX2; all give the same bits.

use std::sync::OnceLock;

/// Whether the AVX2 copies may run: the CPU has AVX2 and
/// `MAPFILTER_SIMD` is not `baseline` ([`crate::switches`]). Read once per
/// process.
pub fn avx2() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            !crate::switches::get().simd_baseline && std::arch::is_x86_feature_detected!("avx2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// Whether the AVX-512 copies (F, BW and VL) may run: [`avx2`] holds, the
/// CPU has them and `MAPFILTER_SIMD` is not `avx2`. Read once per process.
pub fn avx512() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            avx2()
                && !crate::switches::get().simd_avx2_only
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vl")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}
