//! Every environment variable mapfilter reads, read here once per process
//! and only here: the study switches ([`StudySwitches`], `MAPFILTER_*`
//! variables that force one code path or another for measurements and
//! tests; a normal run needs none) and the settings and facts of the
//! machine ([`Environment`]: the default device, the tune database,
//! progress lines, a job array's share, the OpenCL loader's variables).
//! Methods, filters, devices and commands ask [`get`] or [`environment`]
//! for typed values instead of reading the environment; the architecture
//! test (`tests/architecture.rs`) fails on a read anywhere else.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

/// `MAPFILTER_SIMD=baseline`: the plain copies instead of the AVX2 ones;
/// `MAPFILTER_SIMD=avx2`: AVX2 but not AVX-512.
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
/// `MAPFILTER_HOST_START=0|1`: a `smooth` of an exact method (naive, or
/// dct5 or svd `--exact`) whose devices are still starting when its first tiles
/// are ready waits for them (0), or computes those tiles on the host on
/// any OpenCL device, PoCL's too (1); unset, it does so on GPUs only
/// (`method::bridged`).
pub const HOST_START_ENV: &str = "MAPFILTER_HOST_START";

/// Every study switch, as the environment set it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StudySwitches {
    /// [`SIMD_ENV`] is `baseline`.
    pub simd_baseline: bool,
    /// [`SIMD_ENV`] is `avx2`.
    pub simd_avx2_only: bool,
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
    /// [`HOST_START_ENV`], as `tap_scan`.
    pub host_start: Option<bool>,
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
            simd_avx2_only: text(SIMD_ENV).is_some_and(|v| v == "avx2"),
            kernel_times: var(KERNEL_TIMES_ENV).is_some(),
            fast_shape: text(FAST_SHAPE_ENV),
            tap_scan: flag(TAP_SCAN_ENV),
            runs: flag(RUNS_ENV),
            slide: flag(SLIDE_ENV),
            mask: flag(MASK_ENV),
            scan2: flag(SCAN2_ENV),
            pyramid_store: text(PYRAMID_STORE_ENV),
            host_start: flag(HOST_START_ENV),
        }
    }
}

/// The process's study switches, read from the environment on first use.
pub fn get() -> &'static StudySwitches {
    static SWITCHES: OnceLock<StudySwitches> = OnceLock::new();
    SWITCHES.get_or_init(|| StudySwitches::from_lookup(|name| std::env::var_os(name)))
}

/// `MAPFILTER_PROGRESS=lines`: machine-readable progress lines on stderr
/// for the programs that run mapfilter (the QGIS provider).
pub const PROGRESS_ENV: &str = "MAPFILTER_PROGRESS";
/// `MAPFILTER_DEVICE`: the device where `--device` is not given.
pub const DEVICE_ENV: &str = "MAPFILTER_DEVICE";
/// `MAPFILTER_TUNE_DB`: where the database of tuned launch settings lives.
pub const TUNE_DB_ENV: &str = "MAPFILTER_TUNE_DB";
/// `MAPFILTER_TUNE=off` (or `0`, `no`, `false`): runs ignore that database.
pub const TUNE_ENV: &str = "MAPFILTER_TUNE";
/// `MAPFILTER_REQUIRE_OPENCL` (any value; the test scripts set it): a
/// device test finding no OpenCL device fails instead of skipping.
pub const REQUIRE_OPENCL_ENV: &str = "MAPFILTER_REQUIRE_OPENCL";
/// The job-array variables `batch run` takes its share of the tasks from:
/// SLURM's array index, count and minimum, or a Kubernetes indexed Job's
/// completion index with the count in `MAPFILTER_SHARDS`.
pub const JOB_ARRAY_ENV: [&str; 5] = [
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "JOB_COMPLETION_INDEX",
    "MAPFILTER_SHARDS",
];
/// Variables that point the OpenCL ICD loader (or PoCL) at drivers other
/// than the installed vendor files: where one is set, the vendor files do
/// not tell whether a GPU may be offered.
pub const OPENCL_LOADER_ENV: [&str; 4] = [
    "OCL_ICD_VENDORS",
    "OCL_ICD_FILENAMES",
    "OPENCL_VENDOR_PATH",
    "POCL_DEVICES",
];

/// The environment's settings and facts other than the study switches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    /// [`PROGRESS_ENV`] is `lines`.
    pub progress_lines: bool,
    /// [`DEVICE_ENV`] as written (`DeviceChoice` parses it).
    pub device: Option<String>,
    /// [`TUNE_ENV`] turns the tune database off.
    pub tune_off: bool,
    /// The tune database's path: [`TUNE_DB_ENV`], else
    /// `$XDG_CACHE_HOME/mapfilter/tune.json` (an absolute
    /// `XDG_CACHE_HOME`), else `$HOME/.cache/mapfilter/tune.json`.
    pub tune_db: Option<PathBuf>,
    /// [`REQUIRE_OPENCL_ENV`] is set.
    pub require_opencl: bool,
    /// The [`JOB_ARRAY_ENV`] variables that are set, with their values.
    pub job_array: Vec<(&'static str, String)>,
    /// One of [`OPENCL_LOADER_ENV`] is set.
    pub opencl_loader_overridden: bool,
    /// `LD_LIBRARY_PATH`'s directories, where the loader finds drivers
    /// named without a path.
    pub library_path: Vec<PathBuf>,
    /// `RAYON_NUM_THREADS` is set: the user sized rayon's pool.
    pub rayon_threads_set: bool,
    /// `RAYON_NUM_THREADS` as a number, where it is one.
    pub rayon_threads: Option<usize>,
    /// `CUDA_VISIBLE_DEVICES` as written: the NVIDIA GPUs the driver shows.
    pub cuda_visible_devices: Option<String>,
}

impl Environment {
    /// The environment from `var` (a variable's value, `None` where unset).
    pub fn from_lookup(var: impl Fn(&str) -> Option<OsString>) -> Self {
        let text = |name: &str| var(name).and_then(|v| v.into_string().ok());
        let tune_db = var(TUNE_DB_ENV).map(PathBuf::from).or_else(|| {
            let cache = var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
            Some(cache.join("mapfilter").join("tune.json"))
        });
        Environment {
            progress_lines: text(PROGRESS_ENV).is_some_and(|v| v.trim() == "lines"),
            device: text(DEVICE_ENV),
            tune_off: text(TUNE_ENV)
                .is_some_and(|v| matches!(v.trim(), "off" | "0" | "no" | "false")),
            tune_db,
            require_opencl: var(REQUIRE_OPENCL_ENV).is_some(),
            job_array: JOB_ARRAY_ENV
                .iter()
                .filter_map(|&name| Some((name, text(name)?)))
                .collect(),
            opencl_loader_overridden: OPENCL_LOADER_ENV.iter().any(|v| var(v).is_some()),
            library_path: var("LD_LIBRARY_PATH")
                .map(|v| std::env::split_paths(&v).collect())
                .unwrap_or_default(),
            rayon_threads_set: var("RAYON_NUM_THREADS").is_some(),
            rayon_threads: text("RAYON_NUM_THREADS").and_then(|v| v.trim().parse().ok()),
            cuda_visible_devices: text("CUDA_VISIBLE_DEVICES"),
        }
    }

    /// The value of the job-array variable `name` (one of [`JOB_ARRAY_ENV`]).
    pub fn job_array_var(&self, name: &str) -> Option<String> {
        self.job_array
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    }
}

/// The process's environment, read on first use.
pub fn environment() -> &'static Environment {
    static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();
    ENVIRONMENT.get_or_init(|| Environment::from_lookup(|name| std::env::var_os(name)))
}

/// For a run that will use the first GPU only (`--device gpu` or `auto`):
/// NVIDIA's OpenCL driver starts every GPU it can see when the platforms are
/// listed, 0.33 s for one and 1.09 s for four on the 4-GPU node (with
/// persistence mode on), so where `CUDA_VISIBLE_DEVICES` is not set it is
/// set to the first GPU, the one the listing would have put first. Other
/// drivers ignore it. Must run before any other thread exists (the
/// environment is not thread-safe to change): at the start of a command.
pub fn show_nvidia_first_gpu_only() {
    if std::env::var_os("CUDA_VISIBLE_DEVICES").is_some() {
        return;
    }
    // SAFETY: called at a command's start, before it starts any thread.
    unsafe { std::env::set_var("CUDA_VISIBLE_DEVICES", "0") };
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
        assert!(read(&[(SIMD_ENV, "avx2")]).simd_avx2_only);
        assert!(!read(&[(SIMD_ENV, "baseline")]).simd_avx2_only);
    }

    #[test]
    fn the_environment_reads_as_documented() {
        let env = |vars: &[(&str, &str)]| {
            Environment::from_lookup(|name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            })
        };
        let none = env(&[]);
        assert_eq!(none, Environment::default());
        let set = env(&[
            (PROGRESS_ENV, " lines "),
            (DEVICE_ENV, "cpu"),
            (TUNE_ENV, "off"),
            ("HOME", "/home/u"),
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("LD_LIBRARY_PATH", "/a:/b"),
            ("OCL_ICD_VENDORS", "/v"),
        ]);
        assert!(set.progress_lines && set.tune_off && set.opencl_loader_overridden);
        assert_eq!(set.device.as_deref(), Some("cpu"));
        assert_eq!(
            set.job_array_var("SLURM_ARRAY_TASK_ID").as_deref(),
            Some("3")
        );
        assert_eq!(set.job_array_var("SLURM_ARRAY_TASK_COUNT"), None);
        assert_eq!(set.library_path, [PathBuf::from("/a"), PathBuf::from("/b")]);
        let db = |vars: &[(&str, &str)]| env(vars).tune_db;
        assert_eq!(
            db(&[("HOME", "/home/u")]),
            Some(PathBuf::from("/home/u/.cache/mapfilter/tune.json"))
        );
        // A relative XDG_CACHE_HOME is ignored; MAPFILTER_TUNE_DB wins.
        assert_eq!(
            db(&[("XDG_CACHE_HOME", "rel"), ("HOME", "/h")]),
            Some(PathBuf::from("/h/.cache/mapfilter/tune.json"))
        );
        assert_eq!(
            db(&[("XDG_CACHE_HOME", "/c"), (TUNE_DB_ENV, "/t.json")]),
            Some(PathBuf::from("/t.json"))
        );
    }
}
