//! How the fast naive variant on OpenCL (`naive::cl`) is tuned: the
//! work-group shape ([`FastShape`], the GPU default `gpu_fast_shape`), the
//! CPU paths a caller may force ([`CpuPaths`]), and the `MAPFILTER_*` study
//! knobs that override the defaults from the environment.

/// How the fast variant picks its work-group shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FastShape {
    /// By device kind (the default).
    #[default]
    Auto,
    /// The GPU choice on any device (tests run the GPU code paths on PoCL).
    Gpu,
    /// Fixed (TX, TY, PY, TILE_LOCAL, HIST_LOCAL).
    Fixed(usize, usize, usize, bool, bool),
}

/// Forces the fast variant's CPU paths on or off (tests, studies); `None`
/// leaves the choice to `MAPFILTER_RUNS` / `MAPFILTER_MASK` /
/// `MAPFILTER_SLIDE`, else to the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuPaths {
    /// The run path (helper planes, blocks of alike rows).
    pub runs: Option<bool>,
    /// With the run path: the mask of touched bins.
    pub mask: Option<bool>,
    /// Without the run path, for kernels whose rows are all alike: the
    /// histogram slides down each item's column.
    pub slide: Option<bool>,
}

/// Tuning knob for studies: `MAPFILTER_FAST_SHAPE=TX,TY,PY,TILE_LOCAL,HIST_LOCAL`
/// (e.g. `32,4,8,1,1`) overrides the fast variant's chosen shape.
pub const FAST_SHAPE_ENV: &str = "MAPFILTER_FAST_SHAPE";

pub(super) fn shape_override() -> Option<(usize, usize, usize, bool, bool)> {
    let text = knob(FAST_SHAPE_ENV)?;
    let v: Vec<usize> = text
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    (v.len() == 5 && v[..3].iter().all(|&n| n > 0))
        .then(|| (v[0], v[1], v[2], v[3] != 0, v[4] != 0))
}

/// Tuning knob for studies: `MAPFILTER_TAP_SCAN=0|1` forces the fast
/// variant's winner search (1: by the window's taps, 0: over all bins).
pub const TAP_SCAN_ENV: &str = "MAPFILTER_TAP_SCAN";

/// Tuning knob for studies: `MAPFILTER_RUNS=0|1` forces the fast variant's
/// run path (CPU devices) off or on.
pub const RUNS_ENV: &str = "MAPFILTER_RUNS";

/// Tuning knob for studies: `MAPFILTER_SLIDE=0|1` forces the fast
/// variant's sliding histogram (CPU devices, alike kernel rows) off or on.
pub const SLIDE_ENV: &str = "MAPFILTER_SLIDE";

/// Tuning knob for studies: `MAPFILTER_MASK=0|1` forces the run path's
/// mask of touched bins (1) or the scan over all bins (0).
pub const MASK_ENV: &str = "MAPFILTER_MASK";

/// Tuning knob for studies: `MAPFILTER_SCAN2=0|1` forces the CPU winner
/// search over all bins in two vectorisable loops (1) or in one (0).
pub const SCAN2_ENV: &str = "MAPFILTER_SCAN2";

/// Every knob above, read from the environment once per process (not on
/// every tile), and logged at `-vv` where set.
fn knob(name: &str) -> Option<&'static str> {
    static KNOBS: std::sync::OnceLock<Vec<(&'static str, String)>> = std::sync::OnceLock::new();
    KNOBS
        .get_or_init(|| {
            [
                FAST_SHAPE_ENV,
                TAP_SCAN_ENV,
                RUNS_ENV,
                SLIDE_ENV,
                MASK_ENV,
                SCAN2_ENV,
            ]
            .into_iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k, v)))
            .inspect(|(k, v)| log::debug!("tuning knob {k}={v}"))
            .collect()
        })
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.as_str())
}

/// A `0|1` tuning knob from the environment; anything else is no override.
pub(super) fn env_flag(name: &str) -> Option<bool> {
    match knob(name)?.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// GPU shape of the fast variant: (TX, TY, PY, TILE_LOCAL, HIST_LOCAL).
/// Prefers class block and histograms both in local memory with the largest
/// work-group that fits; else private histograms with the block local if it fits.
pub(super) fn gpu_fast_shape(
    k: usize,
    elem: usize,
    nb: usize,
    budget: usize,
) -> (usize, usize, usize, bool, bool) {
    let tx = 32;
    // Big kernels: work per pixel dwarfs the block's halo, so keep one output
    // per item for parallelism; small ones amortise the halo over 32 rows.
    let rows_for = |ty: usize| if k >= 31 { ty } else { ty.max(32) };
    for wg in [256, 128, 64, 32] {
        let ty = wg / tx;
        let rows = rows_for(ty);
        let tile = (tx + k - 1) * (rows + k - 1) * elem;
        if tile + nb * wg * 4 <= budget {
            return (tx, ty, rows / ty, true, true);
        }
    }
    let ty = 4;
    let rows = rows_for(ty);
    let tile = (tx + k - 1) * (rows + k - 1) * elem;
    (tx, ty, rows / ty, tile <= budget, false)
}
