//! How the fast naive variant on OpenCL (`naive::cl`) is tuned: the
//! work-group shape ([`FastShape`], the GPU default `gpu_fast_shape`), the
//! CPU paths a caller may force ([`CpuPaths`]), and the parsing of the
//! `MAPFILTER_FAST_SHAPE` study switch (read in [`crate::switches`]).

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

/// The work-group shape `MAPFILTER_FAST_SHAPE` forces
/// ([`crate::switches::FAST_SHAPE_ENV`]), where it names one.
pub(super) fn shape_override() -> Option<(usize, usize, usize, bool, bool)> {
    let text = crate::switches::get().fast_shape.as_deref()?;
    let v: Vec<usize> = text
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    (v.len() == 5 && v[..3].iter().all(|&n| n > 0))
        .then(|| (v[0], v[1], v[2], v[3] != 0, v[4] != 0))
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
