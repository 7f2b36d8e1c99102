//! The exact naive method on an OpenCL device (`kernels/naive.cl`):
//! byte-identical to [`NaiveHost`](super::NaiveHost) on every device.
//!
//! Four variants ([`Variant`]): the thesis' `buffer`, `image` (RGBA image2d)
//! and `local` (local-memory tiles), and `fast`, the default (zero-weight taps
//! dropped, uchar classes where the tile has at most 255, several outputs
//! per work-item, class block and bin-major histograms in local memory
//! where they fit, winner by tap scan when the kernel has fewer taps than
//! the tile has classes, on CPUs half as many). On CPU devices `fast` has
//! paths of its own (`kernels/naive.cl` describes each): taps as offsets in
//! the tile; on map-like tiles the run path of
//! [`cl_runs`](super::cl_runs) (helper planes built on the host
//! while staging cut each window into blocks of alike rows whose runs cost
//! two look-ups each; uniform windows skip the histogram); for kernels whose
//! rows are all alike (boxes) a histogram that slides down each item's
//! column; for many bins a vectorisable winner search. Each is specialised
//! with `-D` options per class-count bucket and work-group shape, and cached
//! by the device; [`tuning`](super::tuning) holds the
//! shapes and the knobs that force the choices.
//!
//! Confidence-weighted votes (`--confidence`) take a fifth kernel,
//! `naive_weighted`, whatever the variant: the per-pixel quantised
//! confidences are uploaded beside the classes in the same slot, and each
//! tap adds its weight times its pixel's confidence into 64-bit bins.

//! Codes ([`ClassSmoother::submit_codes`], every variant but `image`, whose
//! kernel reads an image that the mapping kernel does not write): the
//! engine hands a tile as its source window of codes, staged as global
//! class indices straight into the slot's pinned upload
//! ([`crate::classes::stage_globals`]) and mapped to local indices on the device
//! by `map_codes` (kernels/codes.cl) before the method's kernel, so the
//! host never compacts it; the run path builds its helper planes from the
//! staged bytes. Winners come down as bytes where they fit (`bytes_out`)
//! and go from the pinned download straight to codes.
//!
//! Streaming: [`ClassSmoother::submit`] enqueues a tile's uploads, kernel
//! and download on the device's [`TileStream`] without blocking, on a slot
//! (device buffers and pinned staging) from the method's [`SlotPool`]. The
//! engine submits tile i+1 before waiting for tile i, so the upload of i+1
//! and the download of i−1 run while the kernel of i does.

use super::cl_runs::{Cells, TileRuns, kernel_sat};
pub use super::tuning::{CpuPaths, FastShape};
use super::tuning::{gpu_fast_shape, shape_override};
use crate::bail;
use crate::classes::{CodeMap, NO_CLASS, TileCompaction};
use crate::io::RowsMut;
use crate::device::tune::{self, Setting};
use crate::device::{
    Args, Buffer, BuildOptions, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_WRITE_ONLY, Device, DeviceKind,
    DeviceTimes, Flight, Grow, Image, Kernel, PinnedHost, Queue, SlotPool, TileStream, cl_error,
};
use crate::error::{Error, Result};
use crate::kernel::Kernel as WeightKernel;
use crate::method::policy::Ties;
use crate::method::{
    ClassSmoother, ClassTile, CodeTile, Finished, PendingTile, SmoothParams, submit_compacted,
};
use crate::switches;
use crate::device::{
    CL_MEM_OBJECT_IMAGE2D, CL_NON_BLOCKING, CL_RGBA, CL_UNSIGNED_INT8, CL_UNSIGNED_INT16,
    cl_image_desc, cl_image_format,
};
use rayon::prelude::*;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

/// How the naive method runs on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Variant {
    /// One work-item per pixel, classes from a plain buffer, private histogram.
    Buffer,
    /// Classes from an RGBA image2d, four pixels per texel.
    Image,
    /// Class rows staged in local memory per work-group, band by band.
    Local,
    /// The fastest: see the module doc.
    #[default]
    Fast,
}

impl Variant {
    pub const ALL: [Variant; 4] = [
        Variant::Buffer,
        Variant::Image,
        Variant::Local,
        Variant::Fast,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Buffer => "buffer",
            Variant::Image => "image",
            Variant::Local => "local",
            Variant::Fast => "fast",
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                Error::usage(format!("unknown naive variant '{s}'"))
                    .hint("use buffer, image, local or fast (the default)")
            })
    }
}

/// The naive method on one OpenCL device.
pub struct NaiveCl {
    stream: TileStream,
    variant: Variant,
    shape: FastShape,
    paths: CpuPaths,
    /// The fast variant's shape from the tune database, if any.
    tuned: Option<Setting>,
    /// The device copy of the last kernel's taps.
    taps: Mutex<Option<Arc<TapSet>>>,
    /// Buffers of tiles no longer in flight.
    slots: SlotPool<Slot>,
    /// Host helper planes of the run path, ready for reuse.
    runs: SlotPool<TileRuns>,
}

/// A kernel's non-zero taps on the device.
struct TapSet {
    quantised: Vec<u32>,
    ksize: usize,
    n_taps: usize,
    /// (dy << 16 | dx, weight) pairs, sorted by dy.
    taps: Buffer<u32>,
    /// First tap of each kernel row, `ksize + 1` entries.
    row_start: Buffer<u32>,
    /// The kernel's summed-area table, (ksize + 1)² entries (`fast` with RUNS).
    sat: Buffer<u32>,
    /// Per tile width: (dy · width + dx, weight) pairs in the order of `taps`
    /// (`fast` with FLAT). A run meets a few widths (edge tiles).
    flat: Mutex<Vec<(usize, Arc<Buffer<u32>>)>>,
}

/// Device buffers and host staging of one tile in flight.
#[derive(Default)]
struct Slot {
    input: Grow<u8>,
    output: Grow<u16>,
    /// The winners as bytes ([`bytes_out`]).
    output8: Grow<u8>,
    weights: Grow<u32>,
    /// The run path's helper planes (run lists, alike-row streaks).
    lists: Grow<u16>,
    down: Grow<u16>,
    /// The classes as the kernel reads them (bytes, or native-endian u16
    /// pairs), and the winners as they come down.
    host_in: Option<PinnedHost<u8>>,
    host_out: Option<PinnedHost<u16>>,
    host_out8: Option<PinnedHost<u8>>,
    /// A tile staged as global indices ([`NaiveCl::submit_codes`]): the
    /// table to its local ones, on the host and on the device.
    table_host: Vec<u8>,
    table: Grow<u8>,
    host_w: Vec<u32>,
    /// The tile's quantised confidences (`--confidence`), on the device and
    /// as staged.
    conf: Grow<u16>,
    host_conf: Vec<u16>,
}

/// Launch shape and specialisation of one tile.
struct Plan {
    kernel: &'static str,
    opts: BuildOptions,
    global: [usize; 2],
    local: Option<[usize; 2]>,
    /// Bytes of the `__local` class tile (0: none).
    tile_local: usize,
    /// Bytes of the `__local` histograms (0: none).
    hist_local: usize,
    band: u32,
    /// The fast variant's run path (helper planes and summed-area table).
    runs: bool,
    /// The fast variant's taps as offsets in the tile (FLAT).
    flat: bool,
}

/// What every variant's plan starts from: the tile's output size, its
/// classes (count, bytes per index, histogram bins), the kernel's side, the
/// device's local memory and kind, and whether the winner search is the
/// plain one (tie rules other than the centre's).
struct PlanBasics<'w> {
    ow: usize,
    oh: usize,
    nc: usize,
    elem: usize,
    nb: usize,
    plain_winner: bool,
    k: usize,
    budget: usize,
    gpu: bool,
    weights: &'w [u32],
}

impl Plan {
    /// A kernel of one work item per output pixel, without local memory.
    fn per_pixel(kernel: &'static str, opts: BuildOptions, global: [usize; 2]) -> Plan {
        Plan {
            kernel,
            opts,
            global,
            local: None,
            tile_local: 0,
            hist_local: 0,
            band: 0,
            runs: false,
            flat: false,
        }
    }
}

/// Whether a tile's winners come down as bytes (`OUT_T` uchar): every
/// local index and NO_CLASS (as 255) fit one, and no UNDECIDED is written.
/// Bytes halve the download and map to codes by one table look-up.
fn bytes_out(n_classes: usize, ties: Ties) -> bool {
    n_classes < 255 && !matches!(ties, Ties::Undecided(_))
}

/// Histogram bins for `n_classes` classes plus the nodata bin, in buckets
/// so that few programs are built: powers of two up to 64, then multiples of 64.
pub(crate) fn bins(n_classes: usize) -> usize {
    let need = n_classes + 1;
    if need <= 64 {
        need.next_power_of_two().max(2)
    } else {
        need.div_ceil(64) * 64
    }
}

impl NaiveCl {
    pub fn new(device: Device, variant: Variant) -> Result<Self> {
        if variant == Variant::Image && !device.info().image_support {
            bail!(
                usage,
                format!("{} has no image support", device.info().name),
                hint = format!("use {}, local or fast", crate::error::Setting::Variant.is("buffer"))
            );
        }
        let tuned = match variant {
            Variant::Fast => tune::tuned(device.info(), tune::NAIVE_FAST),
            _ => None,
        };
        Ok(NaiveCl {
            stream: TileStream::new(device),
            variant,
            shape: FastShape::Auto,
            paths: CpuPaths::default(),
            tuned,
            taps: Mutex::default(),
            slots: SlotPool::default(),
            runs: SlotPool::default(),
        })
    }

    /// Overrides how the fast variant shapes its work-groups (studies, tests).
    pub fn with_shape(mut self, shape: FastShape) -> Self {
        self.shape = shape;
        self
    }

    /// Takes the fast variant's shape from `setting` (a tune database entry)
    /// instead of the database runs read (tests, `mapfilter tune`).
    pub fn with_tuning(mut self, setting: Option<Setting>) -> Self {
        self.tuned = setting;
        self
    }

    /// The tuned fast shape, where it is well-formed, fits the device's
    /// work-groups and leaves the local memory of this tile within `budget`.
    fn tuned_shape(
        &self,
        k: usize,
        elem: usize,
        nb: usize,
        budget: usize,
    ) -> Option<(usize, usize, usize, bool, bool)> {
        let &[tx, ty, py, tl, hl] = self.tuned.as_ref()?.shape.as_slice() else {
            return None;
        };
        let fits = tx > 0
            && ty > 0
            && py > 0
            && tx * ty <= self.device().info().max_work_group
            && (tl != 0) as usize * (tx + k - 1) * (ty * py + k - 1) * elem
                + (hl != 0) as usize * nb * tx * ty * 4
                <= budget;
        fits.then_some((tx, ty, py, tl != 0, hl != 0))
    }

    /// Forces the fast variant's CPU paths (tests, studies).
    pub fn with_cpu_paths(mut self, paths: CpuPaths) -> Self {
        self.paths = paths;
        self
    }

    pub fn device(&self) -> &Device {
        self.stream.device()
    }

    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The device copy of `kernel`'s taps (uploaded once per kernel).
    fn taps(&self, kernel: &WeightKernel) -> Result<Arc<TapSet>> {
        let mut state = self.taps.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = &*state
            && t.quantised == kernel.quantised()
        {
            return Ok(t.clone());
        }
        let n = kernel.size();
        let mut taps = Vec::new();
        let mut row_start = vec![0u32; n + 1];
        for (dy, start) in row_start.iter_mut().take(n).enumerate() {
            *start = (taps.len() / 2) as u32;
            for dx in 0..n {
                let q = kernel.quantised()[dy * n + dx];
                if q > 0 {
                    taps.extend([((dy << 16) | dx) as u32, q]);
                }
            }
        }
        row_start[n] = (taps.len() / 2) as u32;
        let sat = kernel_sat(kernel.quantised(), n);
        let set = Arc::new(TapSet {
            quantised: kernel.quantised().to_vec(),
            ksize: n,
            n_taps: taps.len() / 2,
            taps: self.device().buffer_from(&taps, CL_MEM_READ_ONLY)?,
            row_start: self.device().buffer_from(&row_start, CL_MEM_READ_ONLY)?,
            sat: self.device().buffer_from(&sat, CL_MEM_READ_ONLY)?,
            flat: Mutex::default(),
        });
        *state = Some(set.clone());
        Ok(set)
    }

    /// The taps as (dy · width + dx, weight) for tiles `width` wide (FLAT).
    fn flat_taps(&self, taps: &TapSet, width: usize) -> Result<Arc<Buffer<u32>>> {
        let mut cache = taps.flat.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, b)) = cache.iter().find(|(w, _)| *w == width) {
            return Ok(b.clone());
        }
        let n = taps.ksize;
        let pairs: Vec<u32> = taps
            .quantised
            .iter()
            .enumerate()
            .filter(|&(_, &q)| q > 0)
            .flat_map(|(i, &q)| [((i / n) * width + i % n) as u32, q])
            .collect();
        let buffer = Arc::new(self.device().buffer_from(&pairs, CL_MEM_READ_ONLY)?);
        cache.push((width, buffer.clone()));
        Ok(buffer)
    }

    /// Local memory a work-group may use: what the device has, at most 48 KiB
    /// (the common GPU limit), less a little for the compiler's own use.
    fn local_budget(&self) -> usize {
        (self.device().info().local_mem as usize).min(48 * 1024) - 512
    }

    /// `cells` are the tile's classes as staged (`tile.classes` is not read).
    fn plan(&self, tile: &ClassTile, cells: Cells, taps: &TapSet, params: &SmoothParams) -> Plan {
        let (weights, ties) = (params.class_weights, params.ties);
        let (ow, oh) = (tile.output_width(), tile.output_height());
        let nc = tile.n_classes;
        let elem = if nc > 255 { 2 } else { 1 };
        let nb = bins(nc);
        // Only the plain winner search knows the other tie rules (and only
        // their programs carry the define, so the default's stay as they are).
        let plain_winner = ties != Ties::Centre;
        let base = BuildOptions::new()
            .define("CLS_T", if elem == 1 { "uchar" } else { "ushort" })
            .define("NB", nb);
        let base = if plain_winner {
            base.define("TIES", ties.cl_code())
        } else {
            base
        };
        let base = if bytes_out(nc, ties) {
            base.define("OUT_T", "uchar")
        } else {
            base
        };
        let k = taps.ksize;
        let budget = self.local_budget();
        let gpu = self.device().info().kind == DeviceKind::Gpu;
        let basics = PlanBasics {
            ow,
            oh,
            nc,
            elem,
            nb,
            plain_winner,
            k,
            budget,
            gpu,
            weights,
        };
        if params.confidence.is_some() {
            return Plan::per_pixel("naive_weighted", base, [ow, oh]);
        }
        match self.variant {
            Variant::Buffer => Plan::per_pixel("naive_buffer", base, [ow, oh]),
            Variant::Image => Plan::per_pixel("naive_image", base, [ow, oh]),
            Variant::Local => {
                let (tx, ty) = (16, 8);
                let lw = tx + k - 1;
                let band = (budget / (lw * elem) + 1).saturating_sub(ty).clamp(1, k);
                Plan {
                    kernel: "naive_local",
                    opts: base.define("TX", tx).define("TY", ty),
                    global: [ow, oh],
                    local: Some([tx, ty]),
                    tile_local: lw * (ty + band - 1) * elem,
                    hist_local: 0,
                    band: band as u32,
                    runs: false,
                    flat: false,
                }
            }
            Variant::Fast => self.fast_plan(tile, cells, taps, &basics, base),
        }
    }

    /// The fast variant's work-group shape (TX, TY, PY, TILE_LOCAL,
    /// HIST_LOCAL): the study switch's, a fixed one, the tune database's,
    /// the GPU rule, or the CPU's.
    fn fast_shape(&self, basics: &PlanBasics) -> (usize, usize, usize, bool, bool) {
        let &PlanBasics {
            k,
            elem,
            nb,
            budget,
            gpu,
            ..
        } = basics;
    if let Some(s) = shape_override() {
        s
    } else if let FastShape::Fixed(t, y, p, tl, hl) = self.shape {
        (t, y, p, tl, hl)
    } else if let Some(tuned) = (self.shape == FastShape::Auto)
        .then(|| self.tuned_shape(k, elem, nb, budget))
        .flatten()
    {
        tuned
    } else if gpu || self.shape == FastShape::Gpu {
        gpu_fast_shape(k, elem, nb, budget)
    } else {
        // CPU: work-items run as loops and caches do the staging; many
        // outputs per item amortise clearing the histogram.
        (8, 1, 32, false, false)
    }
    }

    /// The plan of the fast variant: its work-group shape and which of its
    /// paths (tap scan, runs, sliding, masks, two-loop search) it compiles in.
    fn fast_plan(
        &self,
        tile: &ClassTile,
        cells: Cells,
        taps: &TapSet,
        basics: &PlanBasics,
        base: BuildOptions,
    ) -> Plan {
        let &PlanBasics {
            ow,
            oh,
            nc,
            elem,
            nb,
            plain_winner,
            k,
            gpu,
            weights,
            ..
        } = basics;
        // Scanning the taps replaces scanning (and clearing) all bins.
        // On GPUs it pays once the taps are fewer than the classes; on
        // CPUs (PoCL) only below half the classes, where scanning the
        // bins stays cheap longer (docs/decisions/0010).
        let by_taps = if gpu || self.shape == FastShape::Gpu {
            taps.n_taps < nc
        } else {
            2 * taps.n_taps < nc
        };
        // The CPU paths (FLAT, SCAN2, SLIDE, RUNS): on CPUs and fixed
        // shapes (tests); not measured on GPUs, so off there.
        let cpu_shape =
            !(gpu && self.shape == FastShape::Auto || self.shape == FastShape::Gpu);
        // Kernels whose rows are all alike (boxes) can slide each
        // item's histogram down its column (2 rows of taps per output):
        // on noise always the better path, on maps from N = 7 on
        // (docs/decisions/0010).
        let slide_ok = cpu_shape
            && {
                let q = taps.quantised.as_slice();
                q.chunks_exact(k).all(|row| row == &q[..k])
            }
            && (self.paths.slide).or(switches::get().slide).unwrap_or(true);
        // The run path, on map-like tiles: on noise (few equal
        // neighbours) it only costs, so only where at least half the
        // horizontal neighbours are equal.
        let runs = tile.width <= TileRuns::MAX_WIDTH
            && self.paths.runs.or(switches::get().runs).unwrap_or_else(|| {
                cpu_shape && !(slide_ok && k >= 7) && {
                    2 * cells.equal_neighbours() >= tile.width * tile.height
                }
            });
        // A bit per touched bin, so that the winner search and the
        // clearing skip the untouched ones: pays beyond a few bins.
        let mask = runs
            && !plain_winner
            && (self.paths.mask).or(switches::get().mask).unwrap_or(nb > 8);
        let (tx, ty, py, tile_local, hist_local) = self.fast_shape(basics);
        // The two-loop winner search pays for many bins only; with
        // a few dozen it is slower (docs/decisions/0010).
        let scan2 = cpu_shape && !plain_winner && switches::get().scan2.unwrap_or(nb > 64);
        // Score and bin packed in one ulong (score << 9): every score
        // (kernel sum times class weight) must stay below 2^55.
        let packed = scan2 && {
            let sum: u64 = taps.quantised.iter().map(|&q| q as u64).sum();
            let w_max = weights.iter().copied().max().unwrap_or(0) as u64;
            sum.saturating_mul(w_max) < 1 << 55
        };
        let rows = ty * py;
        // Offsets in the tile instead of (dy, dx): on CPUs, where the
        // address arithmetic of each tap is not hidden.
        let flat = cpu_shape && !tile_local;
        // Sliding needs one row of items per group and FLAT.
        let slide = !runs && slide_ok && flat && ty == 1;
        // The run path picks its winner from the classes it saw; a
        // sliding histogram must not be cleared by a tap scan.
        let tap_scan =
            !runs && !slide && !plain_winner && switches::get().tap_scan.unwrap_or(by_taps);
        let tile_bytes = if tile_local {
            (tx + k - 1) * (rows + k - 1) * elem
        } else {
            0
        };
        Plan {
            kernel: "naive_fast",
            opts: base
                .define("TX", tx)
                .define("TY", ty)
                .define("PY", py)
                .flag("TILE_LOCAL", tile_local)
                .flag("HIST_LOCAL", hist_local)
                .flag("TAP_SCAN", tap_scan)
                .flag("FLAT", flat)
                .flag("SCAN2", scan2)
                .flag("PACKED", packed)
                .flag("SLIDE", slide)
                .flag("RUNS", runs)
                .define("KS", if runs { k } else { 1 })
                .define("MASK_WORDS", if mask { nb.div_ceil(64) } else { 0 }),
            global: [ow, oh.div_ceil(rows) * ty],
            local: Some([tx, ty]),
            tile_local: tile_bytes,
            hist_local: if hist_local { nb * tx * ty * 4 } else { 0 },
            band: 0,
            runs,
            flat,
        }
    }

    /// Enqueues `tile` on `slot`. `table`: its classes lie in the slot's
    /// pinned upload as global indices ([`crate::classes::stage_globals`]), which
    /// the device maps to local ones through this table first; otherwise
    /// they are `tile.classes`, staged here.
    fn start(
        &self,
        mut slot: Slot,
        tile: &ClassTile,
        params: &SmoothParams,
        table: Option<[u8; 256]>,
    ) -> Result<ClPending<'_>> {
        if tile.halo != params.kernel.radius() {
            bail!(internal, format!(
                "tile halo {} does not match the kernel radius {}",
                tile.halo,
                params.kernel.radius()
            ));
        }
        if params
            .confidence
            .is_some_and(|c| c.len() != tile.width * tile.height)
        {
            bail!(internal, "the tile's confidences do not cover its classes");
        }
        let taps = self.taps(params.kernel)?;
        let cells = match &table {
            Some(table) => Cells::Staged {
                globals: &slot.host_in.as_ref().expect("staged").as_slice()
                    [..tile.width * tile.height],
                table,
            },
            None => Cells::Local(tile.classes),
        };
        let plan = self.plan(tile, cells, &taps, params);
        // The run path's helper planes, built here while the device runs
        // the previous tile.
        let runs = plan.runs.then(|| {
            let mut runs = self.runs.take();
            runs.rebuild_cells(cells, tile, taps.ksize);
            runs
        });
        let kernel = self.device().kernel("naive", &plan.opts, plan.kernel)?;
        if let Some(table) = &table {
            slot.table_host.clear();
            slot.table_host.extend_from_slice(table);
        }
        let mut pending = ClPending {
            flight: Flight::default(),
            image: None,
            slot: Some(slot),
            runs,
            flat: if plan.flat {
                Some(self.flat_taps(&taps, tile.width)?)
            } else {
                None
            },
            _taps: taps.clone(),
            method: self,
            len: tile.output_len(),
            bytes: bytes_out(tile.n_classes, params.ties),
        };
        pending.enqueue(tile, params, &taps, &plan, kernel, table.is_some())?;
        Ok(pending)
    }
}

impl ClassSmoother for NaiveCl {
    fn name(&self) -> String {
        format!(
            "naive/opencl-{} on {}",
            self.variant.name(),
            self.device().info().name
        )
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn weighs_votes(&self) -> bool {
        true
    }

    fn runs_on(&self) -> Option<crate::device::DeviceKind> {
        Some(self.device().info().kind)
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        self.submit(tile, params)?.wait(out)
    }

    fn submit(&self, tile: &ClassTile, params: &SmoothParams) -> Result<Box<dyn PendingTile + '_>> {
        if tile.output_len() == 0 {
            return Ok(Box::new(Finished(Vec::new())));
        }
        Ok(Box::new(self.start(self.slots.take(), tile, params, None)?))
    }

    /// Every variant but `image` (its kernel reads an image, which the
    /// mapping kernel does not write) compacts its tiles on the device.
    fn takes_codes(&self) -> bool {
        self.variant != Variant::Image
    }

    /// The codes are staged as global indices straight into the slot's
    /// pinned upload (pad, narrowing and class scan in one pass on the
    /// pool) and mapped to local indices by the device's first kernel
    /// (`map_codes`), so no compacted copy is made on the host.
    fn submit_codes(
        &self,
        tile: &CodeTile,
        params: &SmoothParams,
    ) -> Result<(TileCompaction, Box<dyn PendingTile + '_>)> {
        let t = tile.tile;
        let (w, h) = (t.padded_width, t.padded_height);
        if !self.takes_codes()
            || params.confidence.is_some()
            || w <= 2 * tile.halo
            || h <= 2 * tile.halo
        {
            return submit_compacted(self, tile, params);
        }
        let mut slot = self.slots.take();
        let staging = PinnedHost::ensure(&mut slot.host_in, self.device(), w * h)?;
        let Some((local, class_tile)) = tile.stage(&mut staging.as_mut_slice()[..w * h]) else {
            self.slots.give(slot);
            return submit_compacted(self, tile, params);
        };
        let weights = local.weights(params.class_weights);
        let params = SmoothParams {
            class_weights: &weights,
            ..*params
        };
        let pending = self.start(slot, &class_tile, &params, Some(local.device_table()))?;
        Ok((local, Box::new(pending)))
    }

    fn take_device_times(&self) -> Option<DeviceTimes> {
        Some(self.stream.take_times())
    }

    fn tuned(&self) -> Vec<Setting> {
        self.tuned.iter().cloned().collect()
    }
}

/// A tile in flight: owns its slot until waited for. The flight comes
/// first, so that dropped unwaited it waits before the memory goes.
struct ClPending<'a> {
    flight: Flight,
    image: Option<Image>,
    slot: Option<Slot>,
    /// The run path's helper planes.
    runs: Option<TileRuns>,
    /// The taps as offsets for this tile's width (FLAT).
    flat: Option<Arc<Buffer<u32>>>,
    _taps: Arc<TapSet>,
    method: &'a NaiveCl,
    /// Outputs of the tile.
    len: usize,
    /// They come down as bytes ([`bytes_out`]).
    bytes: bool,
}

impl ClPending<'_> {
    /// Stages the tile's classes (narrowed to bytes where they fit) and
    /// enqueues its uploads, kernel and download. `staged`: the classes lie
    /// in the pinned upload already, as global indices, and the table to
    /// local ones in the slot ([`NaiveCl::start`]).
    fn enqueue(
        &mut self,
        tile: &ClassTile,
        params: &SmoothParams,
        taps: &TapSet,
        plan: &Plan,
        kernel: Kernel,
        staged: bool,
    ) -> Result<()> {
        let in_len = self.upload(tile, params, plan, staged)?;
        self.set_args(tile, params, taps, plan, &kernel)?;
        let stream = &self.method.stream;
        let slot = self.slot.as_mut().expect("slot present until waited");
        // Every upload is enqueued: the mapping, as the first kernel, waits
        // for them all, and the method's kernel follows it in queue order.
        if staged {
            stream.map_codes(&mut self.flight, slot.input.buf(), slot.table.buf(), in_len)?;
        }
        match &plan.local {
            Some(local) => stream.launch(&mut self.flight, &kernel, &plan.global, Some(local))?,
            None => stream.launch_bounded(&mut self.flight, &kernel, &plan.global)?,
        }
        self.flight.keep(kernel);
        stream.flush_kernels()?;
        if self.bytes {
            let host = &mut slot.host_out8.as_mut().expect("sized above").as_mut_slice()[..self.len];
            unsafe { stream.read(&mut self.flight, slot.output8.buf(), host)? };
        } else {
            let host = &mut slot.host_out.as_mut().expect("sized above").as_mut_slice()[..self.len];
            unsafe { stream.read(&mut self.flight, slot.output.buf(), host)? };
        }
        stream.flush_downloads()
    }

    /// Stages the tile's classes (unless `staged`) and enqueues the uploads:
    /// weights, classes (as a buffer or an image), the table of a staged
    /// tile, confidences and the run lists. Returns the classes' bytes.
    fn upload(
        &mut self,
        tile: &ClassTile,
        params: &SmoothParams,
        plan: &Plan,
        staged: bool,
    ) -> Result<usize> {
        let stream = &self.method.stream;
        let dev = stream.device();
        let slot = self.slot.as_mut().expect("slot present until waited");
        let wide = tile.n_classes > 255;
        let elem = if wide { 2 } else { 1 };
        // Image rows are whole RGBA texels: pad the width to a multiple of 4.
        let as_image = plan.kernel == "naive_image";
        let row = if as_image {
            tile.width.div_ceil(4) * 4
        } else {
            tile.width
        };
        let in_len = row * tile.height * elem;
        debug_assert!(!staged || (!wide && !as_image), "staged tiles are plain bytes");
        if !staged {
            let host_in =
                &mut PinnedHost::ensure(&mut slot.host_in, dev, in_len)?.as_mut_slice()[..in_len];
            stage_classes(host_in, tile, row * elem, wide);
        }
        if self.bytes {
            PinnedHost::ensure(&mut slot.host_out8, dev, self.len)?;
        } else {
            PinnedHost::ensure(&mut slot.host_out, dev, self.len)?;
        }
        slot.host_w.clear();
        slot.host_w.extend_from_slice(params.class_weights);
        if slot.host_w.is_empty() {
            slot.host_w.push(0);
        }
        let weights = slot
            .weights
            .get(dev, crate::classes::MAX_CLASSES, CL_MEM_READ_ONLY)?;
        // SAFETY (every transfer below): the host memory lies in the slot
        // (or `runs`), which stays in `self` until the flight is waited for.
        unsafe { stream.write(&mut self.flight, weights, &slot.host_w)? };
        let host_in = &slot.host_in.as_ref().expect("staged above").as_slice()[..in_len];
        if as_image {
            let format = cl_image_format {
                image_channel_order: CL_RGBA,
                image_channel_data_type: if wide {
                    CL_UNSIGNED_INT16
                } else {
                    CL_UNSIGNED_INT8
                },
            };
            let texels = row / 4;
            let info = dev.info();
            // SAFETY: a zeroed descriptor is valid; the fields that matter are set.
            let mut desc: cl_image_desc = unsafe { std::mem::zeroed() };
            desc.image_type = CL_MEM_OBJECT_IMAGE2D;
            desc.image_width = texels;
            desc.image_height = tile.height;
            let mut img = unsafe {
                Image::create(
                    dev.context(),
                    CL_MEM_READ_ONLY,
                    &format,
                    &desc,
                    std::ptr::null_mut(),
                )
            }
            .map_err(|err| {
                Error::device(format!(
                    "cannot create a {texels}x{} image on {}: {err}",
                    tile.height, info.name
                ))
                .hint(image_hint())
            })?;
            let origin = [0usize; 3];
            let region = [texels, tile.height, 1];
            let ev = unsafe {
                dev.queue(Queue::Upload).enqueue_write_image(
                    &mut img,
                    CL_NON_BLOCKING,
                    origin.as_ptr(),
                    region.as_ptr(),
                    row * elem,
                    0,
                    host_in.as_ptr() as *mut _,
                    &[],
                )
            }
            .map_err(cl_error("uploading a tile"))?;
            stream.uploaded(&mut self.flight, ev);
            self.image = Some(img);
        } else {
            // Read-write: a staged tile is mapped in place.
            let input = slot.input.get(dev, in_len, CL_MEM_READ_WRITE)?;
            unsafe { stream.write(&mut self.flight, input, host_in)? };
        }
        if staged {
            let table = slot.table.get(dev, 256, CL_MEM_READ_ONLY)?;
            unsafe { stream.write(&mut self.flight, table, &slot.table_host)? };
        }
        if let Some(conf) = params.confidence {
            slot.host_conf.clear();
            slot.host_conf.extend_from_slice(conf);
            let buf = slot.conf.get(dev, conf.len(), CL_MEM_READ_ONLY)?;
            unsafe { stream.write(&mut self.flight, buf, &slot.host_conf)? };
        }
        if let Some(runs) = &self.runs {
            let need = runs.down.len();
            let lists = slot.lists.get(dev, 3 * need, CL_MEM_READ_ONLY)?;
            unsafe { stream.write(&mut self.flight, lists, &runs.lists)? };
            let down = slot.down.get(dev, need, CL_MEM_READ_ONLY)?;
            unsafe { stream.write(&mut self.flight, down, &runs.down)? };
        }
        stream.flush_uploads()?;
        Ok(in_len)
    }

    /// Sizes the output and sets the kernel's arguments.
    fn set_args(
        &mut self,
        tile: &ClassTile,
        params: &SmoothParams,
        taps: &TapSet,
        plan: &Plan,
        kernel: &Kernel,
    ) -> Result<()> {
        let dev = self.method.stream.device();
        let slot = self.slot.as_mut().expect("slot present until waited");
        let (tw, th) = (tile.width as u32, tile.height as u32);
        let (ow, oh) = (tile.output_width() as u32, tile.output_height() as u32);
        let nc = tile.n_classes as u32;
        let (halo, fill) = (tile.halo as u32, params.fill_nodata as u32);
        let n_taps = taps.n_taps as u32;
        let ksize = taps.ksize as u32;
        if self.bytes {
            slot.output8.get(dev, self.len, CL_MEM_WRITE_ONLY)?;
        } else {
            slot.output.get(dev, self.len, CL_MEM_WRITE_ONLY)?;
        }
        // Every variant's signature: the classes (buffer and row width, or
        // image), the tile height (`local`, `fast`), the taps (with a count, or
        // row starts for `local`), then one shared tail, then per-variant extras.
        let banded = matches!(plan.kernel, "naive_local" | "naive_fast");
        let mut args = Args::new(kernel);
        args = match &self.image {
            Some(img) => args.mem(img),
            None if plan.kernel == "naive_weighted" => {
                args.mem(slot.input.buf()).mem(slot.conf.buf()).scalar(tw)
            }
            None => args.mem(slot.input.buf()).scalar(tw),
        };
        if banded {
            args = args.scalar(th);
        }
        args = match &self.flat {
            Some(flat) => args.mem(&**flat),
            None => args.mem(&taps.taps),
        };
        args = if plan.kernel == "naive_local" {
            args.mem(&taps.row_start)
        } else {
            args.scalar(n_taps)
        };
        args = args
            .mem(slot.weights.buf())
            .scalar(nc)
            .scalar(ow)
            .scalar(oh)
            .scalar(halo)
            .scalar(fill);
        args = if self.bytes {
            args.mem(slot.output8.buf())
        } else {
            args.mem(slot.output.buf())
        };
        if banded {
            args = args.scalar(ksize);
        }
        if plan.runs {
            args = args
                .mem(&taps.row_start)
                .mem(&taps.sat)
                .mem(slot.lists.buf())
                .mem(slot.down.buf());
        }
        if plan.kernel == "naive_local" {
            args = args.scalar(plan.band);
        }
        if plan.tile_local > 0 {
            args = args.local(plan.tile_local);
        }
        if plan.hist_local > 0 {
            args = args.local(plan.hist_local);
        }
        args.done()?;
        Ok(())
    }
}

/// The tile's classes into `host_in`, rows of `row_bytes` (zero-padded):
/// as bytes, or as native-endian `u16` where `wide`.
fn stage_classes(host_in: &mut [u8], tile: &ClassTile, row_bytes: usize, wide: bool) {
    let elem = if wide { 2 } else { 1 };
    host_in
        .par_chunks_exact_mut(row_bytes)
        .zip(tile.classes.par_chunks_exact(tile.width))
        .for_each(|(dst, src)| {
            let (used, pad) = dst.split_at_mut(tile.width * elem);
            if wide {
                for (d, s) in used.chunks_exact_mut(2).zip(src) {
                    d.copy_from_slice(&s.to_ne_bytes());
                }
            } else {
                for (d, s) in used.iter_mut().zip(src) {
                    *d = *s as u8;
                }
            }
            pad.fill(0);
        });
}

/// A tile's winners in the slot's pinned download.
enum Winners<'a> {
    Wide(&'a [u16]),
    /// [`bytes_out`]: 255 stands for NO_CLASS.
    Bytes(&'a [u8]),
}

impl ClPending<'_> {
    /// Waits for the tile and hands its outputs (in the slot's pinned
    /// download) to `take` before the slot goes back to the pool.
    fn finish_with(mut self: Box<Self>, take: impl FnOnce(Winners)) -> Result<()> {
        let method = self.method;
        method.stream.finish(&mut self.flight)?;
        let slot = self.slot.take().expect("slot present until waited");
        take(if self.bytes {
            Winners::Bytes(&slot.host_out8.as_ref().expect("sized").as_slice()[..self.len])
        } else {
            Winners::Wide(&slot.host_out.as_ref().expect("sized").as_slice()[..self.len])
        });
        method.slots.give(slot);
        if let Some(runs) = self.runs.take() {
            method.runs.give(runs);
        }
        Ok(())
    }
}

/// The hint when the device cannot make a tile's image.
fn image_hint() -> String {
    format!(
        "use a smaller {} or {}",
        crate::error::Setting::Tile,
        crate::error::Setting::Variant.is("fast")
    )
}

/// `out[i] = f(host[i])` in parallel blocks.
fn map_into<T: Copy + Sync>(out: &mut [u16], host: &[T], f: impl Fn(T) -> u16 + Sync) {
    out.par_chunks_mut(1 << 14)
        .zip(host.par_chunks(1 << 14))
        .for_each(|(o, h)| o.iter_mut().zip(h).for_each(|(o, &v)| *o = f(v)))
}

impl PendingTile for ClPending<'_> {
    fn wait(self: Box<Self>, out: &mut [u16]) -> Result<()> {
        self.finish_with(|host| match host {
            Winners::Wide(h) => out.copy_from_slice(h),
            Winners::Bytes(h) => map_into(out, h, |v| if v == u8::MAX { NO_CLASS } else { v as u16 }),
        })
    }

    /// The outputs go from the pinned download straight to codes.
    fn wait_codes(self: Box<Self>, map: &CodeMap, mut out: RowsMut) -> Result<()> {
        self.finish_with(|host| match host {
            Winners::Wide(h) => out.fill_mapped(h, |v| map.code(v)),
            Winners::Bytes(h) => {
                let table = map.byte_table();
                out.fill_mapped(h, |v| table[v as usize])
            }
        })
    }
}
