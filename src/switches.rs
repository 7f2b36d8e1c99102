//! The study switches: `MAPFILTER_*` environment variables that force one
//! code path or another for measurements and tests (a normal run needs
//! none). They are read here, once per process, and only here: methods,
//! filters and commands ask [`get`] instead of reading the environment.

use std::ffi::OsString;
use std::sync::OnceLock;

/// `MAPFILTER_SIMD=baseline`: the plain copies instead of the AVX2 ones.
pub const SIMD_ENV: &str = "MAPFILTER_SIMD";
/// `MAPFILTER_KERNEL_TIMES` (any value): the OpenCL fast methods print
/// every tile's kernel times.
pub const KERNEL_TIMES_ENV: &str = "MAPFILTER_KERNEL_TIMES";
/// `MAPFILTER_FAST_SHAPE=TX,TY,PY,TILE_LOCAL,HIST_LOCAL` (e.g. `32,4,8,1,1`)
/// overrides the work-group shape of the naive OpenCL fast variant.
pub const FAST_SHAPE_ENV: &str = "MAPFILTER_FAST_SHAPE";
/// `MAPFILTER_TAP_SCAN=0|1` forces the fast variant's winner search (1: by
/// the window's taps, 0: over all bins).
pub const TAP_SCAN_ENV: &str = "MAPFILTER_TAP_SCAN";
/// `MAPFILTER_RUNS=0|1` forces the fast variant's run path (CPU devices)
/// off or on.
pub const RUNS_ENV: &str = "MAPFILTER_RUNS";
/// `MAPFILTER_SLIDE=0|1` forces the fast variant's sliding histogram (CPU
/// devices, alike kernel rows) off or on.
pub const SLIDE_ENV: &str = "MAPFILTER_SLIDE";
/// `MAPFILTER_MASK=0|1` forces the run path's mask of touched bins (1) or
/// the scan over all bins (0).
pub const MASK_ENV: &str = "MAPFILTER_MASK";
/// `MAPFILTER_SCAN2=0|1` forces the CPU winner search over all bins in two
/// vectorisable loops (1) or in one (0).
pub const SCAN2_ENV: &str = "MAPFILTER_SCAN2";
/// `MAPFILTER_PYRAMID_STORE=lut|image|separate` forces how a pyramid's
/// levels are held on an OpenCL device (`filter::device::pyramid_store`).
pub const PYRAMID_STORE_ENV: &str = "MAPFILTER_PYRAMID_STORE";

/// Every study switch, as the environment set it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StudySwitches {
    /// [`SIMD_ENV`] is `baseline`.
    pub simd_baseline: bool,
    /// [`KERNEL_TIMES_ENV`] is set.
    pub kernel_times: bool,
    /// [`FAST_SHAPE_ENV`] as written (the naive OpenCL method parses it).
    pub fast_shape: Option<String>,
    /// [`TAP_SCAN_ENV`]: `Some` where `0` or `1`, else no override.
    pub tap_scan: Option<bool>,
    /// [`RUNS_ENV`], as `tap_scan`.
    pub runs: Option<bool>,
    /// [`SLIDE_ENV`], as `tap_scan`.
    pub slide: Option<bool>,
    /// [`MASK_ENV`], as `tap_scan`.
    pub mask: Option<bool>,
    /// [`SCAN2_ENV`], as `tap_scan`.
    pub scan2: Option<bool>,
    /// [`PYRAMID_STORE_ENV`] as written (the pyramid store parses it).
    pub pyramid_store: Option<String>,
}

impl StudySwitches {
    /// The switches from `var` (a variable's value, `None` where unset),
    /// logging each one set at `-vv`.
    pub fn from_lookup(var: impl Fn(&str) -> Option<OsString>) -> Self {
        let text = |name: &str| {
            let value = var(name)?;
            log::debug!("study switch {name}={}", value.to_string_lossy());
            value.into_string().ok()
        };
        let flag = |name: &str| match text(name)?.trim() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        };
        StudySwitches {
            simd_baseline: text(SIMD_ENV).is_some_and(|v| v == "baseline"),
            kernel_times: var(KERNEL_TIMES_ENV).is_some(),
            fast_shape: text(FAST_SHAPE_ENV),
            tap_scan: flag(TAP_SCAN_ENV),
            runs: flag(RUNS_ENV),
            slide: flag(SLIDE_ENV),
            mask: flag(MASK_ENV),
            scan2: flag(SCAN2_ENV),
            pyramid_store: text(PYRAMID_STORE_ENV),
        }
    }
}

/// The process's study switches, read from the environment on first use.
pub fn get() -> &'static StudySwitches {
    static SWITCHES: OnceLock<StudySwitches> = OnceLock::new();
    SWITCHES.get_or_init(|| StudySwitches::from_lookup(|name| std::env::var_os(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> StudySwitches {
        StudySwitches::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn unset_switches_override_nothing() {
        assert_eq!(read(&[]), StudySwitches::default());
    }

    #[test]
    fn switches_read_as_documented() {
        let s = read(&[
            (SIMD_ENV, "baseline"),
            (KERNEL_TIMES_ENV, ""),
            (FAST_SHAPE_ENV, "32,4,8,1,1"),
            (TAP_SCAN_ENV, "0"),
            (RUNS_ENV, " 1 "),
            (SLIDE_ENV, "yes"),
            (MASK_ENV, "1"),
        ]);
        assert!(s.simd_baseline && s.kernel_times);
        assert_eq!(s.fast_shape.as_deref(), Some("32,4,8,1,1"));
        assert_eq!(
            (s.tap_scan, s.runs, s.slide, s.mask, s.scan2),
            (Some(false), Some(true), None, Some(true), None)
        );
        // Only `baseline` itself turns the AVX2 copies off.
        assert!(!read(&[(SIMD_ENV, "Baseline")]).simd_baseline);
        assert!(!read(&[(SIMD_ENV, "avx2")]).simd_baseline);
    }
}
