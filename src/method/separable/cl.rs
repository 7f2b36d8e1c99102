//! The fast methods on an OpenCL device (`kernels/svd.cl`, `kernels/dct5.cl`,
//! `kernels/rank.cl`), twins of [`SeparableHost`](super::separable::SeparableHost).
//!
//! Per tile: the class tile goes up once; per class, pass 1 (down columns)
//! and pass 2 (along rows, times the class weight) write that class's score
//! plane; svd fuses its ranks inside both passes, so no rank returns to the
//! host. One ranking launch picks the winners and flags the pixels whose
//! margin is not certified; winners and flags come down together. In f32 the
//! plan's bounds are recomputed with the f32 unit roundoff (taps rounded to
//! f32 first, so the effective kernel is what the device applies). With
//! `--exact` the flagged pixels are recomputed on the host with the naive
//! method's integer arithmetic, so the result is byte-identical to naive.

use super::{Bounds, Filter, SeparablePlan};
use crate::bail;
use crate::classes::NO_CLASS;
use crate::device::tune::{self, Setting};
use crate::device::{
    Args, Buffer, BuildOptions, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_WRITE_ONLY, Device,
    DeviceTimes, Event, PinnedHost, Queue, TimeCounters, cl_error, event_ns,
};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::method::dct5::rot::{self as dct5_rot, Rot};
use crate::method::naive::{exact_pixel, taps};
use crate::method::{ClassSmoother, ClassTile, Finished, PendingTile, SmoothParams};
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING};
use rayon::prelude::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Unit roundoff of the device's working precision (f32).
pub const DEVICE_UNIT_ROUNDOFF: f64 = f32::EPSILON as f64 / 2.0;

/// The `__constant` buffer size every full-profile OpenCL device offers;
/// svd's factors beyond it are read from `__global` (`TAPS_GLOBAL`).
const MIN_CONSTANT_BYTES: usize = 64 * 1024;

/// The plan as the device runs it: taps rounded to f32 (dct5 filters keep
/// their f64 coefficients; [`dct5_rot::device_bounds`] accounts for the f32
/// constants and the device's own recursion).
pub fn device_plan(plan: &SeparablePlan) -> SeparablePlan {
    let conv = |f: &Filter| match f {
        Filter::Taps(t) => Filter::Taps(t.iter().map(|&v| v as f32 as f64).collect()),
        Filter::Dct5(d) => Filter::Dct5(d.clone()),
    };
    SeparablePlan {
        size: plan.size,
        terms: plan
            .terms
            .iter()
            .map(|t| super::Term {
                column: conv(&t.column),
                row: conv(&t.row),
            })
            .collect(),
    }
}

/// What the kernels need, flattened to f32.
enum Shape {
    Svd {
        u: Vec<f32>,
        v: Vec<f32>,
        rank: usize,
    },
    Dct5(Rot),
}

/// A fast method on one OpenCL device; certified when `exact`.
pub struct SeparableCl {
    device: Device,
    name: String,
    size: usize,
    shape: Shape,
    bounds: Bounds,
    exact: bool,
    times: TimeCounters,
    pixels: AtomicU64,
    recomputed: AtomicU64,
    /// dct5's device and staging buffers of tiles no longer in flight,
    /// reused by the next ones (one set per tile in flight).
    dct5: Mutex<Vec<Dct5Buffers>>,
    /// dct5's setting from the tune database, if any.
    tuned: Option<Setting>,
}

/// Work-group size of dct5's row pass unless tuned (the column pass is
/// fixed at 32 by its kernel, which transposes 32 columns in local memory).
const DCT5_ROWS_GROUP: usize = 64;

/// A device buffer that grows on demand and is otherwise reused.
struct Grow<T> {
    buf: Option<Buffer<T>>,
    len: usize,
}

impl<T> Default for Grow<T> {
    fn default() -> Self {
        Grow { buf: None, len: 0 }
    }
}

impl<T> Grow<T> {
    /// A buffer of at least `len` elements.
    fn get(&mut self, dev: &Device, len: usize, flags: u64) -> Result<&mut Buffer<T>> {
        if self.buf.is_none() || self.len < len {
            self.buf = None;
            self.buf = Some(dev.buffer(len, flags)?);
            self.len = len;
        }
        Ok(self.buf.as_mut().expect("allocated just above"))
    }
}

/// Everything dct5 keeps between tiles. Class codes travel as bytes when
/// every local index and the nodata value fit in one (fewer than 255
/// classes), halving both transfers.
#[derive(Default)]
struct Dct5Buffers {
    codes8: Grow<u8>,
    codes16: Grow<u16>,
    planes1: Grow<f32>,
    planes2: Grow<f32>,
    winners8: Grow<u8>,
    winners16: Grow<u16>,
    flags: Grow<u8>,
    weights: Grow<f32>,
    consts: Option<Buffer<f32>>,
    /// Page-locked staging of the byte-narrowed codes (up) and winners (down).
    pinned8: Option<PinnedHost<u8>>,
    flags_host: Vec<u8>,
    /// The class weights as uploaded.
    cw: Vec<f32>,
}

impl SeparableCl {
    /// `plan` (host form) for `kernel` on `device`, named `name` (e.g. "dct5").
    pub fn new(
        device: Device,
        name: &str,
        plan: &SeparablePlan,
        kernel: &Kernel,
        exact: bool,
    ) -> Result<Self> {
        let plan = device_plan(plan);
        let mut bounds = plan.bounds(kernel, DEVICE_UNIT_ROUNDOFF);
        let shape = match &plan.terms[0].row {
            Filter::Dct5(d) => {
                if plan.terms.len() != 1 {
                    bail!("a dct5 plan has exactly one separable term");
                }
                bounds = dct5_rot::device_bounds(bounds.approx, d, DEVICE_UNIT_ROUNDOFF);
                Shape::Dct5(Rot::new(d))
            }
            Filter::Taps(_) => {
                let flat = |pick: fn(&super::Term) -> &Filter| -> Vec<f32> {
                    plan.terms
                        .iter()
                        .flat_map(|t| match pick(t) {
                            Filter::Taps(v) => v.iter().map(|&x| x as f32).collect::<Vec<_>>(),
                            Filter::Dct5(_) => Vec::new(),
                        })
                        .collect()
                };
                Shape::Svd {
                    u: flat(|t| &t.column),
                    v: flat(|t| &t.row),
                    rank: plan.terms.len(),
                }
            }
        };
        let detail = match &shape {
            Shape::Svd { rank, .. } => format!("rank {rank}"),
            Shape::Dct5(rot) => format!("K={}", rot.terms() - 1),
        };
        let base = format!("{name}/{} ({detail})", device.info().name);
        let me = SeparableCl {
            name: if exact {
                format!("exact({base})")
            } else {
                base
            },
            size: plan.size,
            shape,
            bounds,
            exact,
            device,
            times: TimeCounters::default(),
            pixels: AtomicU64::new(0),
            recomputed: AtomicU64::new(0),
            dct5: Mutex::default(),
            tuned: None,
        };
        let me = match me.shape {
            Shape::Dct5(_) => {
                let tuned = tune::tuned(me.device.info(), tune::DCT5);
                me.with_tuning(tuned)
            }
            Shape::Svd { .. } => me,
        };
        // Build the programs now: a compiler error surfaces here, not mid-run.
        me.device.program(me.source(), &me.options())?;
        me.device.program("rank", &BuildOptions::new())?;
        Ok(me)
    }

    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Takes dct5's launch setting from `setting` (a tune database entry)
    /// instead of the database runs read (tests, `mapfilter tune`).
    pub fn with_tuning(mut self, setting: Option<Setting>) -> Self {
        self.tuned = setting;
        self
    }

    /// The row pass's work-group size: the tuned one where it is well-formed
    /// and fits the device.
    fn rows_group(&self) -> usize {
        match self.tuned.as_ref().map(|s| s.shape.as_slice()) {
            Some(&[g]) if g > 0 && g <= self.device.info().max_work_group => g,
            _ => DCT5_ROWS_GROUP,
        }
    }

    fn source(&self) -> &'static str {
        match self.shape {
            Shape::Svd { .. } => "svd",
            Shape::Dct5(_) => "dct5",
        }
    }

    fn options(&self) -> BuildOptions {
        match &self.shape {
            Shape::Svd { rank, .. } => BuildOptions::new()
                .define("N", self.size)
                .define("RANK", rank)
                .flag("TAPS_GLOBAL", rank * self.size * 4 > MIN_CONSTANT_BYTES),
            Shape::Dct5(rot) => BuildOptions::new()
                .define("R", self.size / 2)
                .define("NT", rot.terms()),
        }
    }
}

impl SeparableCl {
    /// Recomputes exactly the pixels flagged in `uncertain` (certified mode).
    fn recompute(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        out: &mut [u16],
        uncertain: &[u8],
    ) {
        let ow = tile.output_width();
        let taps = taps(tile, params);
        let redone: u64 = out
            .par_chunks_mut(ow)
            .zip(uncertain.par_chunks(ow))
            .enumerate()
            .map(|(y, (row, flag))| {
                let mut acc = vec![0u32; tile.n_classes + 1];
                let mut n = 0;
                for (x, (v, &f)) in row.iter_mut().zip(flag).enumerate() {
                    if f != 0 {
                        *v = exact_pixel(tile, params, &taps, x, y, &mut acc);
                        n += 1;
                    }
                }
                n
            })
            .sum();
        self.recomputed.fetch_add(redone, Ordering::Relaxed);
    }

    /// dct5 on one tile, at once: [`SeparableCl::enqueue_dct5`], then
    /// [`SeparableCl::finish_dct5`]. With `scores`, the weighted score
    /// planes also come down, as `ST[c][x][y]` with columns `ohp` (the
    /// output height rounded up to 32) apart.
    fn smooth_dct5(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        out: &mut [u16],
        scores: Option<&mut Vec<f32>>,
    ) -> Result<()> {
        let mut bufs = self.take_slot();
        let flight = self.enqueued(self.enqueue_dct5(&mut bufs, tile, params, Some(&mut *out)))?;
        if let Some(v) = scores {
            let planes = tile.n_classes.max(1);
            let ohp = tile.output_height().next_multiple_of(32);
            v.resize(planes * tile.output_width() * ohp, 0.0);
            let p2 = bufs.planes2.buf.as_ref().expect("allocated");
            self.device.download(p2, v)?;
        }
        let flags = self.finish_dct5(bufs, flight, out)?;
        if self.exact {
            self.recompute(tile, params, out, &flags);
        }
        Ok(())
    }

    /// `enqueued` as it is, or on an error, after the device has finished
    /// what was enqueued (its host memory is about to be freed).
    fn enqueued<T>(&self, enqueued: Result<T>) -> Result<T> {
        if enqueued.is_err() {
            let _ = self.device.finish();
        }
        enqueued
    }

    /// A set of dct5 buffers no tile in flight uses (new ones if all are).
    fn take_slot(&self) -> Dct5Buffers {
        let mut free = self.dct5.lock().unwrap_or_else(|e| e.into_inner());
        free.pop().unwrap_or_default()
    }

    /// dct5 on one tile, enqueued: the codes go up once (as bytes from
    /// pinned memory where the classes fit), pass 1 and pass 2 run for
    /// every class in one launch each (planes stored transposed, so every
    /// access is coalesced), the ranking in a third; winners (and, in the
    /// certified mode, the flags) come down into `bufs`, or for more than
    /// 254 classes into `wide_out`, which the caller keeps until
    /// [`SeparableCl::finish_dct5`]. Nothing here waits for the device, so
    /// the next tile's host work overlaps this one's transfers and kernels.
    fn enqueue_dct5(
        &self,
        bufs: &mut Dct5Buffers,
        tile: &ClassTile,
        params: &SmoothParams,
        wide_out: Option<&mut [u16]>,
    ) -> Result<Dct5Flight> {
        let Shape::Dct5(rot) = &self.shape else {
            unreachable!("enqueue_dct5 runs dct5 shapes only")
        };
        let dev = &self.device;
        let (ow, oh, w) = (tile.output_width(), tile.output_height(), tile.width);
        let classes = tile.n_classes;
        let ohp = oh.next_multiple_of(32);
        let narrow = classes < 255;
        let opts = self
            .options()
            .define("CODE", if narrow { "uchar" } else { "ushort" });
        let rank_opts = BuildOptions::new().define("CODE", if narrow { "uchar" } else { "ushort" });
        let wmax = params.max_class_weight();
        bufs.cw = (0..classes.max(1))
            .map(|c| {
                params
                    .class_weights
                    .get(c)
                    .map_or(0.0, |&v| (v as f64 / wmax) as f32)
            })
            .collect();
        if bufs.consts.is_none() {
            bufs.consts = Some(dev.buffer_from(&rot.constants(), CL_MEM_READ_ONLY)?);
        }
        let n_codes = w * tile.height;
        let up = dev.queue(Queue::Upload);
        let up_err = cl_error("uploading a tile");
        let mut uploads = Vec::with_capacity(2);
        // SAFETY (every non-blocking transfer below): the host memory lies in
        // `bufs` (or `wide_out`, `tile.classes`), which the caller keeps
        // untouched until `finish_dct5` has waited for every event.
        if narrow {
            let staging = PinnedHost::ensure(&mut bufs.pinned8, dev, n_codes.max(ow * oh))?;
            staging.as_mut_slice()[..n_codes]
                .par_iter_mut()
                .zip(tile.classes.par_iter())
                .for_each(|(s, &c)| *s = c as u8);
            let b = bufs.codes8.get(dev, n_codes, CL_MEM_READ_ONLY)?;
            let staging = bufs.pinned8.as_ref().expect("staged above");
            uploads.push(
                unsafe {
                    up.enqueue_write_buffer(
                        b,
                        CL_NON_BLOCKING,
                        0,
                        &staging.as_slice()[..n_codes],
                        &[],
                    )
                }
                .map_err(&up_err)?,
            );
        } else {
            let b = bufs.codes16.get(dev, n_codes, CL_MEM_READ_ONLY)?;
            uploads.push(
                unsafe { up.enqueue_write_buffer(b, CL_BLOCKING, 0, tile.classes, &[]) }
                    .map_err(&up_err)?,
            );
        }
        let weights = bufs.weights.get(dev, bufs.cw.len(), CL_MEM_READ_ONLY)?;
        uploads.push(
            unsafe { up.enqueue_write_buffer(weights, CL_NON_BLOCKING, 0, &bufs.cw, &[]) }
                .map_err(&up_err)?,
        );
        up.flush().map_err(&up_err)?;
        let planes = classes.max(1);
        bufs.planes1.get(dev, planes * w * ohp, CL_MEM_READ_WRITE)?;
        bufs.planes2
            .get(dev, planes * ow * ohp, CL_MEM_READ_WRITE)?;
        bufs.flags.get(dev, ow * oh, CL_MEM_WRITE_ONLY)?;
        if narrow {
            bufs.winners8.get(dev, ow * oh, CL_MEM_WRITE_ONLY)?;
        } else {
            bufs.winners16.get(dev, ow * oh, CL_MEM_WRITE_ONLY)?;
        }
        let co = bufs.consts.as_ref().expect("set above");
        let r = rot.radius();
        let target = dct5_rot::target_items(dev.info().kind, dev.info().compute_units);
        let seg1 = dct5_rot::segment(r, oh, w * planes, target);
        let seg2 = dct5_rot::segment(r, ow, oh * planes, target);
        let (p1, p2) = (bufs.planes1.buf.as_ref(), bufs.planes2.buf.as_ref());
        let (p1, p2) = (p1.expect("allocated"), p2.expect("allocated"));
        let weights = bufs.weights.buf.as_ref().expect("allocated");
        let flags = bufs.flags.buf.as_ref().expect("allocated");
        let (wi, ohi, owi, ohpi) = (w as i32, oh as i32, ow as i32, ohp as i32);
        let cols = dev.kernel("dct5", &opts, "dct5_cols_t")?;
        let rows = dev.kernel("dct5", &opts, "dct5_rows_t")?;
        let rank = dev.kernel("rank", &rank_opts, "rank_scores_t")?;
        fn codes_arg<'k>(a: Args<'k>, bufs: &Dct5Buffers, narrow: bool) -> Args<'k> {
            if narrow {
                a.mem(bufs.codes8.buf.as_ref().expect("allocated"))
            } else {
                a.mem(bufs.codes16.buf.as_ref().expect("allocated"))
            }
        }
        codes_arg(Args::new(&cols), bufs, narrow)
            .scalar(wi)
            .scalar(ohi)
            .scalar(ohpi)
            .scalar(seg1 as i32)
            .mem(co)
            .mem(p1)
            .done()?;
        let waits: Vec<&Event> = uploads.iter().collect();
        let e1 = dev.launch(
            Queue::Compute,
            &cols,
            &[w, oh.div_ceil(seg1), planes],
            Some(&[32, 1, 1]),
            &waits,
        )?;
        Args::new(&rows)
            .mem(p1)
            .scalar(wi)
            .scalar(ohi)
            .scalar(ohpi)
            .scalar(owi)
            .scalar(seg2 as i32)
            .mem(co)
            .mem(weights)
            .mem(p2)
            .done()?;
        let e2 = dev.launch(
            Queue::Compute,
            &rows,
            &[oh, ow.div_ceil(seg2), planes],
            Some(&[self.rows_group(), 1, 1]),
            &[],
        )?;
        let eps = self.bounds.total();
        let a = Args::new(&rank)
            .mem(p2)
            .scalar(classes as i32)
            .scalar(owi)
            .scalar(ohi)
            .scalar(ohpi);
        let a = codes_arg(a, bufs, narrow)
            .scalar(wi)
            .scalar(tile.halo as i32)
            .scalar(params.fill_nodata as i32)
            .scalar(self.bounds.tie_tolerance(DEVICE_UNIT_ROUNDOFF) as f32)
            .scalar((2.0 * eps) as f32);
        let a = if narrow {
            a.mem(bufs.winners8.buf.as_ref().expect("allocated"))
        } else {
            a.mem(bufs.winners16.buf.as_ref().expect("allocated"))
        };
        a.mem(flags).done()?;
        let e3 = dev.launch(Queue::Compute, &rank, &[oh, ow], None, &[])?;
        dev.queue(Queue::Compute)
            .flush()
            .map_err(cl_error("starting a kernel"))?;
        let down = dev.queue(Queue::Download);
        let down_err = cl_error("downloading a tile");
        let mut downloads = Vec::with_capacity(2);
        if narrow {
            let staging = bufs.pinned8.as_mut().expect("staged above");
            let winners = bufs.winners8.buf.as_ref().expect("allocated");
            downloads.push(
                unsafe {
                    down.enqueue_read_buffer(
                        winners,
                        CL_NON_BLOCKING,
                        0,
                        &mut staging.as_mut_slice()[..ow * oh],
                        &[e3.get()],
                    )
                }
                .map_err(&down_err)?,
            );
        } else {
            let out = wide_out.expect("more than 254 classes come down into the caller's output");
            let winners = bufs.winners16.buf.as_ref().expect("allocated");
            downloads.push(
                unsafe { down.enqueue_read_buffer(winners, CL_NON_BLOCKING, 0, out, &[e3.get()]) }
                    .map_err(&down_err)?,
            );
        }
        bufs.flags_host.resize(ow * oh, 0);
        if self.exact {
            downloads.push(
                unsafe {
                    down.enqueue_read_buffer(
                        flags,
                        CL_NON_BLOCKING,
                        0,
                        &mut bufs.flags_host,
                        &[e3.get()],
                    )
                }
                .map_err(&down_err)?,
            );
        }
        down.flush().map_err(&down_err)?;
        Ok(Dct5Flight {
            uploads,
            kernels: [e1, e2, e3],
            downloads,
            _programs: [cols, rows, rank],
            outputs: ow * oh,
            narrow,
        })
    }

    /// Waits for a tile [`SeparableCl::enqueue_dct5`] started, adds its
    /// device times, widens its winners into `out`, gives `bufs` back for
    /// the next tile and returns the certified mode's flags (else nothing).
    fn finish_dct5(
        &self,
        mut bufs: Dct5Buffers,
        flight: Dct5Flight,
        out: &mut [u16],
    ) -> Result<Vec<u8>> {
        for e in flight
            .downloads
            .iter()
            .chain(&flight.kernels)
            .chain(&flight.uploads)
        {
            e.wait().map_err(cl_error("running a tile"))?;
        }
        let each = flight.kernels.each_ref().map(event_ns);
        let ms = each.map(|n| n as f64 / 1e6);
        let line = || {
            format!(
                "dct5 kernels (ms): columns {:.3}, rows {:.3}, ranking {:.3}",
                ms[0], ms[1], ms[2]
            )
        };
        if crate::switches::get().kernel_times {
            // scripts/gpu-fast-bench.sh reads these lines whatever -v says.
            eprintln!("{}", line());
        } else {
            log::trace!("{}", line());
        }
        self.times.add(DeviceTimes {
            upload_ns: flight.uploads.iter().map(event_ns).sum(),
            kernel_ns: each.iter().sum(),
            download_ns: flight.downloads.iter().map(event_ns).sum(),
        });
        if flight.narrow {
            let staged = &bufs.pinned8.as_ref().expect("staged above").as_slice()[..flight.outputs];
            out.par_iter_mut()
                .zip(staged.par_iter())
                .for_each(|(o, &v)| *o = if v == u8::MAX { NO_CLASS } else { v as u16 });
        }
        self.pixels
            .fetch_add(flight.outputs as u64, Ordering::Relaxed);
        let flags = if self.exact {
            std::mem::take(&mut bufs.flags_host)
        } else {
            Vec::new()
        };
        self.dct5
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(bufs);
        Ok(flags)
    }
}

/// The events and kernels of a dct5 tile in flight.
struct Dct5Flight {
    uploads: Vec<Event>,
    kernels: [Event; 3],
    downloads: Vec<Event>,
    /// Kept until the tile is done.
    _programs: [crate::device::Kernel; 3],
    outputs: usize,
    narrow: bool,
}

/// A dct5 tile in flight ([`ClassSmoother::submit`]): its buffers and events.
struct Dct5Pending<'a> {
    method: &'a SeparableCl,
    bufs: Option<Dct5Buffers>,
    flight: Option<Dct5Flight>,
}

impl PendingTile for Dct5Pending<'_> {
    fn wait(mut self: Box<Self>, out: &mut [u16]) -> Result<()> {
        let (bufs, flight) = (self.bufs.take(), self.flight.take());
        self.method
            .finish_dct5(
                bufs.expect("present until waited"),
                flight.expect("present until waited"),
                out,
            )
            .map(drop)
    }
}

impl Drop for Dct5Pending<'_> {
    fn drop(&mut self) {
        // A tile dropped unwaited (the run failed): its transfers must end
        // before their host memory is reused or freed.
        if let Some(f) = &self.flight {
            for e in f.downloads.iter().chain(&f.kernels).chain(&f.uploads) {
                let _ = e.wait();
            }
        }
    }
}

impl SeparableCl {
    /// dct5's weighted float scores of every class of `tile`, as
    /// `S[c][y][x]` over the output (for tests of the kernels against the
    /// f64 filter and the error bound).
    pub fn dct5_scores(&self, tile: &ClassTile, params: &SmoothParams) -> Result<Vec<f32>> {
        if !matches!(self.shape, Shape::Dct5(_)) {
            bail!("dct5_scores needs a dct5 plan");
        }
        let (ow, oh) = (tile.output_width(), tile.output_height());
        let ohp = oh.next_multiple_of(32);
        let mut out = vec![0u16; ow * oh];
        let mut st = Vec::new();
        self.smooth_dct5(tile, params, &mut out, Some(&mut st))?;
        let planes = st.len() / (ow * ohp).max(1);
        let mut s = vec![0.0f32; planes * ow * oh];
        for c in 0..planes {
            for x in 0..ow {
                for y in 0..oh {
                    s[(c * oh + y) * ow + x] = st[(c * ow + x) * ohp + y];
                }
            }
        }
        Ok(s)
    }
}

impl ClassSmoother for SeparableCl {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn runs_on(&self) -> Option<crate::device::DeviceKind> {
        Some(self.device.info().kind)
    }

    fn is_exact(&self) -> bool {
        self.exact
    }

    /// Approximate dct5 tiles of fewer than 255 classes are enqueued and
    /// left running, so the engine's next tiles overlap them; the rest run
    /// at once.
    fn submit(&self, tile: &ClassTile, params: &SmoothParams) -> Result<Box<dyn PendingTile + '_>> {
        let in_flight = matches!(self.shape, Shape::Dct5(_))
            && !self.exact
            && tile.n_classes < 255
            && tile.output_len() > 0
            && tile.halo == self.size / 2;
        if !in_flight {
            let mut out = vec![0u16; tile.output_len()];
            self.smooth(tile, params, &mut out)?;
            return Ok(Box::new(Finished(out)));
        }
        let mut bufs = self.take_slot();
        let flight = self.enqueued(self.enqueue_dct5(&mut bufs, tile, params, None))?;
        Ok(Box::new(Dct5Pending {
            method: self,
            bufs: Some(bufs),
            flight: Some(flight),
        }))
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        let (ow, oh) = (tile.output_width(), tile.output_height());
        if ow == 0 || oh == 0 {
            return Ok(());
        }
        if tile.halo != self.size / 2 {
            bail!(format!(
                "{}: the tile halo {} differs from the kernel radius {}",
                self.name,
                tile.halo,
                self.size / 2
            ));
        }
        if let Shape::Dct5(_) = self.shape {
            return self.smooth_dct5(tile, params, out, None);
        }
        let dev = &self.device;
        let w = tile.width;
        let classes = tile.n_classes;
        let t0 = Instant::now();
        let cls = dev.buffer_from(tile.classes, CL_MEM_READ_ONLY)?;
        let upload_ns = t0.elapsed().as_nanos() as u64;
        let terms = match self.shape {
            Shape::Svd { rank, .. } => rank,
            Shape::Dct5(_) => 1,
        };
        let p = dev.buffer::<f32>(terms * w * oh, CL_MEM_READ_WRITE)?;
        let s = dev.buffer::<f32>(classes.max(1) * ow * oh, CL_MEM_READ_WRITE)?;
        let winners = dev.buffer::<u16>(ow * oh, CL_MEM_WRITE_ONLY)?;
        let flags = dev.buffer::<u8>(ow * oh, CL_MEM_WRITE_ONLY)?;
        let opts = self.options();
        let wmax = params.max_class_weight();
        let mut events = Vec::with_capacity(2 * classes + 1);
        let (wi, ohi, owi) = (w as i32, oh as i32, ow as i32);
        match &self.shape {
            Shape::Svd { u, v, .. } => {
                let ub = dev.buffer_from(u, CL_MEM_READ_ONLY)?;
                let vb = dev.buffer_from(v, CL_MEM_READ_ONLY)?;
                let cols = dev.kernel("svd", &opts, "svd_cols")?;
                let rows = dev.kernel("svd", &opts, "svd_rows")?;
                for c in 0..classes {
                    let cw = (params.class_weights[c] as f64 / wmax) as f32;
                    Args::new(&cols)
                        .mem(&cls)
                        .scalar(wi)
                        .scalar(ohi)
                        .scalar(c as u16)
                        .mem(&ub)
                        .mem(&p)
                        .done()?;
                    let e1 = dev.launch(Queue::Compute, &cols, &[w, oh], None, &[])?;
                    let sc = (c * ow * oh) as u64;
                    Args::new(&rows)
                        .mem(&p)
                        .scalar(wi)
                        .scalar(ohi)
                        .scalar(owi)
                        .mem(&vb)
                        .scalar(cw)
                        .mem(&s)
                        .scalar(sc)
                        .done()?;
                    let e2 = dev.launch(Queue::Compute, &rows, &[ow, oh], None, &[])?;
                    events.extend([e1, e2]);
                }
            }
            Shape::Dct5(_) => unreachable!("dct5 tiles take smooth_dct5"),
        }
        let rank = dev.kernel("rank", &BuildOptions::new(), "rank_scores")?;
        let eps = self.bounds.total();
        Args::new(&rank)
            .mem(&s)
            .scalar(classes as i32)
            .scalar(owi)
            .scalar(ohi)
            .mem(&cls)
            .scalar(wi)
            .scalar(tile.halo as i32)
            .scalar(params.fill_nodata as i32)
            .scalar(self.bounds.tie_tolerance(DEVICE_UNIT_ROUNDOFF) as f32)
            .scalar((2.0 * eps) as f32)
            .mem(&winners)
            .mem(&flags)
            .done()?;
        events.push(dev.launch(Queue::Compute, &rank, &[ow, oh], None, &[])?);
        let t1 = Instant::now();
        dev.download(&winners, out)?;
        let mut uncertain = vec![0u8; ow * oh];
        if self.exact {
            dev.download(&flags, &mut uncertain)?;
        }
        // The download waited for every kernel: their events are complete.
        let kernel_ns: u64 = events.iter().map(event_ns).sum();
        let download_ns = (t1.elapsed().as_nanos() as u64).saturating_sub(kernel_ns);
        self.times.add(DeviceTimes {
            upload_ns,
            kernel_ns,
            download_ns,
        });
        if self.exact {
            self.recompute(tile, params, out, &uncertain);
        }
        self.pixels.fetch_add((ow * oh) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn take_device_times(&self) -> Option<DeviceTimes> {
        Some(self.times.take())
    }

    fn tuned(&self) -> Vec<Setting> {
        self.tuned.iter().cloned().collect()
    }

    fn summary(&self) -> Option<String> {
        if !self.exact {
            return None;
        }
        let (r, p) = (
            self.recomputed.load(Ordering::Relaxed),
            self.pixels.load(Ordering::Relaxed),
        );
        Some(format!(
            "certified {} of {p} pixels, recomputed {r} exactly ({:.3} %), ε = {:.3e}",
            p - r,
            100.0 * r as f64 / p.max(1) as f64,
            self.bounds.total()
        ))
    }
}
