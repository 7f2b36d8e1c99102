//! What the CPU may run: the one run-time switch for every AVX2 path (image
//! filters' strips, the host dct5 scorer). `MAPFILTER_SIMD=baseline` forces
//! the plain copies, which give the same bits.

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
