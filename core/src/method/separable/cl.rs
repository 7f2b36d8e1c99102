//! The fast methods on an OpenCL device (`kernels/svd.cl`, `kernels/dct5.cl`,
//! `kernels/rank.cl`), twins of [`SeparableHost`](super::SeparableHost).
//!
//! Per tile: the class tile goes up once; per class, pass 1 (down columns)
//! and pass 2 (along rows, times the class weight) write that class's score
//! plane; svd fuses its ranks inside both passes, so no rank returns to the
//! host. One ranking launch picks the winners and flags the pixels whose
//! margin is not certified; winners and flags come down together. In f32 the
//! plan's bounds are recomputed with the f32 unit roundoff (taps rounded to
//! f32 first, so the effective kernel is what the device applies). With
//! `--exact` the flagged pixels are recomputed with the naive method's
//! integer arithmetic, so the result is byte-identical to naive: on the
//! device by `naive_flagged` (`kernels/naive.cl`, twin of
//! [`ExactPixels`]) right after the ranking, or on the host where the
//! device cannot (confidence-weighted votes, `--ties undecided` with byte
//! winners). On the host it was 60 % of a 4-GPU batch's CPU samples
//! (issue 39); on the device it is two more kernels per tile.
//!
//! Confidence-weighted votes (`--confidence`): the tile's quantised
//! confidences go up beside the classes (staged in pinned memory in the
//! same slot), and pass 1 of both methods, built with `-D WEIGHTED`, weighs
//! each pixel of the class by its confidence over the tile's largest
//! ([`Votes`], the twin of what the kernels read), as the host's weighted
//! indicator does. The certified recomputation reads the same staging.

use super::{Bounds, Filter, SeparablePlan};
use crate::bail;
use crate::classes::{CodeMap, NO_CLASS, TileCompaction};
use crate::io::RowsMut;
use crate::device::tune::{self, Setting};
use crate::device::{
    Args, Buffer, BuildOptions, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_WRITE_ONLY, Device,
    DeviceTimes, Flight, Grow, PinnedHost, SlotPool, TileStream,
};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::method::dct5::rot::{self as dct5_rot, Rot};
use crate::method::naive::row_prefix_sums;
use crate::method::{ClassSmoother, ClassTile, CodeTile, Finished, PendingTile, SmoothParams};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

mod exact;

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
        contenders: None,
    }
}

/// The samples pass 1 reads with `--confidence` (`WEIGHTED` in
/// `kernels/svd.cl` and `kernels/dct5.cl`), as plain Rust: a pixel of the
/// class weighs `votes[i] · inv_top` in f32, `inv_top` being
/// [`vote_scale`](super::vote_scale) rounded to f32; other pixels 0.
pub struct Votes<'a> {
    votes: &'a [u16],
    inv_top: f32,
}

impl<'a> Votes<'a> {
    /// The votes of one tile (the padded tile, as its classes).
    pub fn new(votes: &'a [u16]) -> Self {
        Votes {
            votes,
            inv_top: super::vote_scale(votes) as f32,
        }
    }

    /// The kernels' `inv_top` argument.
    pub fn inv_top(&self) -> f32 {
        self.inv_top
    }

    /// Sample `i` of the weighted indicator of a class that pixel `i`
    /// holds (`holds`) or not.
    #[inline]
    pub fn sample(&self, i: usize, holds: bool) -> f32 {
        if holds {
            f32::from(self.votes[i]) * self.inv_top
        } else {
            0.0
        }
    }

    /// What weighing adds to the error bound of every score, for a plan
    /// whose passes amplify input errors by at most `a_max` (Σ over terms
    /// of the two passes' L1 norms) at unit roundoff `u`: `inv_top` and
    /// the product are each rounded once, so a sample is off by at most
    /// `2u + u²` of a value at most 1 (3u covers it and the bounds'
    /// inputs of `1 + 2u`).
    pub fn rounding(a_max: f64, u: f64) -> f64 {
        3.0 * u * a_max
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
    stream: TileStream,
    name: String,
    size: usize,
    shape: Shape,
    bounds: Bounds,
    /// Σ over the plan's terms of the two passes' L1 norms (see
    /// [`Votes::rounding`]).
    a_max: f64,
    exact: bool,
    /// The kernel's row prefix sums on the device, for `naive_flagged`
    /// (certified only).
    prefix: Option<Buffer<u32>>,
    pixels: AtomicU64,
    recomputed: AtomicU64,
    /// Of `recomputed`, the pixels recomputed on the device.
    recomputed_on_device: AtomicU64,
    /// Buffers of tiles no longer in flight.
    slots: SlotPool<Slot>,
    /// dct5's setting from the tune database, if any.
    tuned: Option<Setting>,
}

/// Work-group size of dct5's row pass unless tuned (the column pass is
/// fixed at 32 by its kernel, which transposes 32 columns in local memory).
const DCT5_ROWS_GROUP: usize = 64;

/// The device buffers and host staging of one tile in flight. dct5's class
/// codes travel as bytes when every local index and the nodata value fit
/// in one (fewer than 255 classes), halving both transfers.
#[derive(Default)]
struct Slot {
    codes8: Grow<u8>,
    codes16: Grow<u16>,
    planes1: Grow<f32>,
    planes2: Grow<f32>,
    winners8: Grow<u8>,
    winners16: Grow<u16>,
    flags: Grow<u8>,
    weights: Grow<f32>,
    /// dct5's constants, svd's factors.
    consts: Option<Buffer<f32>>,
    factors: Option<(Buffer<f32>, Buffer<f32>)>,
    /// The classes as u16 (svd, wide dct5, the certified recomputation)
    /// and the winners of a u16 download.
    codes_host: Vec<u16>,
    wide_host: Vec<u16>,
    /// Page-locked staging of the byte-narrowed codes (up) and winners (down).
    pinned8: Option<PinnedHost<u8>>,
    /// A tile staged as global indices ([`SeparableCl::start_codes`]): the
    /// table to its local ones, on the host and on the device.
    table_host: Vec<u8>,
    table: Grow<u8>,
    flags_host: Vec<u8>,
    /// The class weights as uploaded.
    cw: Vec<f32>,
    /// `--confidence`: the tile's quantised confidences, staged in pinned
    /// memory (the certified recomputation reads them there) and on the device.
    votes_host: Option<PinnedHost<u16>>,
    votes: Grow<u16>,
    /// The certified recomputation on the device: the tile's quantised
    /// class weights (on the host until uploaded), and how many pixels it
    /// recomputed (counted there, so the flags need not come down).
    qweights: Grow<u32>,
    qweights_host: Vec<u32>,
    redone: Grow<u32>,
    redone_host: Vec<u32>,
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
        let a_max = plan.terms.iter().map(|t| t.column.l1() * t.row.l1()).sum();
        let shape = match &plan.terms[0].row {
            Filter::Dct5(d) => {
                if plan.terms.len() != 1 {
                    bail!(internal, "a dct5 plan has exactly one separable term");
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
            a_max,
            exact,
            prefix: match exact {
                true => Some(device.buffer_from(
                    &row_prefix_sums(kernel.quantised(), kernel.size()),
                    CL_MEM_READ_ONLY,
                )?),
                false => None,
            },
            stream: TileStream::new(device),
            pixels: AtomicU64::new(0),
            recomputed: AtomicU64::new(0),
            recomputed_on_device: AtomicU64::new(0),
            slots: SlotPool::default(),
            tuned: None,
        };
        let me = match me.shape {
            Shape::Dct5(_) => {
                let tuned = tune::tuned(me.device().info(), tune::DCT5);
                me.with_tuning(tuned)
            }
            Shape::Svd { .. } => me,
        };
        // Build the programs now: a compiler error surfaces here, not mid-run.
        me.device().program(me.source(), &me.options())?;
        me.device().program("rank", &BuildOptions::new())?;
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
            Some(&[g]) if g > 0 && g <= self.device().info().max_work_group => g,
            _ => DCT5_ROWS_GROUP,
        }
    }

    fn source(&self) -> &'static str {
        match self.shape {
            Shape::Svd { .. } => "svd",
            Shape::Dct5(_) => "dct5",
        }
    }

    /// The margin the ranking certifies with
    /// ([`Bounds::certify_margin`]): the method's bounds, plus what
    /// weighing the votes in f32 adds to each score's rounding (`weighted`).
    fn margin(&self, weighted: bool) -> f32 {
        let mut bounds = self.bounds;
        if weighted {
            bounds.rounding += Votes::rounding(self.a_max, DEVICE_UNIT_ROUNDOFF);
        }
        bounds.certify_margin() as f32
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
    /// Enqueues one tile on a slot of its own and returns it in flight.
    /// Nothing here waits for the device, so the next tile's host work
    /// overlaps this one's transfers and kernels.
    fn start(&self, tile: &ClassTile, params: &SmoothParams) -> Result<SepPending<'_>> {
        let mut pending = SepPending {
            flight: Flight::default(),
            slot: Some(self.slots.take()),
            method: self,
            outputs: tile.output_len(),
            narrow: false,
            certify: None,
            device_flags: false,
        };
        let slot = pending.slot.as_mut().expect("just taken");
        let dct5 = matches!(self.shape, Shape::Dct5(_));
        pending.device_flags = self.exact && self.recomputes_on_device(tile.n_classes, params);
        let host_recomputes = self.exact && !pending.device_flags;
        // The classes as uploaded (u16) and, where the host recomputes, as
        // it reads them after the device is done.
        if host_recomputes || !dct5 || tile.n_classes >= 255 {
            slot.codes_host.clear();
            slot.codes_host.extend_from_slice(tile.classes);
        }
        let inv_top = match params.confidence {
            Some(votes) => Some(self.stage_votes(slot, tile, votes)?),
            None => None,
        };
        pending.narrow = if dct5 {
            self.enqueue_dct5(&mut pending.flight, slot, tile, params, inv_top, false)?
        } else {
            self.enqueue_svd(&mut pending.flight, slot, tile, params, inv_top)?;
            false
        };
        if host_recomputes {
            pending.certify = Some(Certify {
                width: tile.width,
                height: tile.height,
                halo: tile.halo,
                n_classes: tile.n_classes,
                kernel: params.kernel.clone(),
                class_weights: params.class_weights.to_vec(),
                fill_nodata: params.fill_nodata,
                ties: params.ties,
                weighted: inv_top.is_some(),
            });
        }
        Ok(pending)
    }

    /// Copies the tile's quantised confidences into the slot's pinned
    /// staging and returns the kernels' `inv_top` ([`Votes`]).
    fn stage_votes(&self, slot: &mut Slot, tile: &ClassTile, votes: &[u16]) -> Result<f32> {
        if votes.len() != tile.classes.len() {
            bail!(internal, "the tile's confidences do not cover its classes");
        }
        let staging = PinnedHost::ensure(&mut slot.votes_host, self.device(), votes.len())?;
        staging.as_mut_slice()[..votes.len()]
            .par_chunks_mut(1 << 16)
            .zip(votes.par_chunks(1 << 16))
            .for_each(|(s, v)| s.copy_from_slice(v));
        Ok(Votes::new(votes).inv_top())
    }

    /// Enqueues the upload of the staged confidences of a tile of `len`
    /// pixels (before the tile's `flush_uploads`).
    fn upload_votes(&self, flight: &mut Flight, bufs: &mut Slot, len: usize) -> Result<()> {
        let dev = self.device();
        let b = bufs.votes.get(dev, len, CL_MEM_READ_ONLY)?;
        let staged = &bufs.votes_host.as_ref().expect("staged").as_slice()[..len];
        // SAFETY: the staging lies in the slot, which the pending tile keeps
        // until its flight is waited for.
        unsafe { self.stream.write(flight, b, staged) }
    }

    /// dct5 on one tile given as codes, enqueued: the codes are staged as
    /// global indices straight into pinned memory (pad, narrowing and class
    /// scan in one pass on the pool) and mapped to local indices by the
    /// device's first kernel, so no compacted copy is made on the host.
    /// `None` for a tile of too many classes for bytes ([`CodeTile::stage`]).
    fn start_codes(
        &self,
        tile: &CodeTile,
        params: &SmoothParams,
    ) -> Result<Option<(TileCompaction, SepPending<'_>)>> {
        let t = tile.tile;
        let (w, h) = (t.padded_width, t.padded_height);
        let outputs = (w - 2 * tile.halo) * (h - 2 * tile.halo);
        let mut pending = SepPending {
            flight: Flight::default(),
            slot: Some(self.slots.take()),
            method: self,
            outputs,
            narrow: true,
            certify: None,
            device_flags: false,
        };
        let slot = pending.slot.as_mut().expect("just taken");
        let n_codes = w * h;
        let staging = PinnedHost::ensure(&mut slot.pinned8, self.device(), n_codes.max(outputs))?;
        let Some((local, class_tile)) = tile.stage(&mut staging.as_mut_slice()[..n_codes]) else {
            self.slots.give(pending.slot.take().expect("just taken"));
            return Ok(None);
        };
        slot.table_host.clear();
        slot.table_host.extend_from_slice(&local.device_table());
        let weights = local.weights(params.class_weights);
        self.check(&class_tile)?;
        let params = SmoothParams {
            class_weights: &weights,
            ..*params
        };
        // Certified, the compacted tile lies on the device only, so its
        // flagged pixels are recomputed there (submit_codes checks that it can).
        if self.exact && !self.recomputes_on_device(class_tile.n_classes, &params) {
            bail!(internal, "a certified tile compacted on the device must be recomputed there");
        }
        pending.device_flags = self.exact;
        self.enqueue_dct5(&mut pending.flight, slot, &class_tile, &params, None, true)?;
        Ok(Some((local, pending)))
    }

    /// The uploads of a dct5 tile: the rotation's constants (once per
    /// slot), the codes (staged as bytes where they fit, unless `staged`),
    /// the class weights in units of the largest, and the votes when
    /// weighted (`inv_top`).
    fn upload_dct5(
        &self,
        flight: &mut Flight,
        bufs: &mut Slot,
        tile: &ClassTile,
        params: &SmoothParams,
        inv_top: Option<f32>,
        staged: bool,
    ) -> Result<()> {
        let Shape::Dct5(rot) = &self.shape else {
            unreachable!("upload_dct5 runs dct5 shapes only")
        };
        let stream = &self.stream;
        let dev = stream.device();
        let (ow, oh, w) = (tile.output_width(), tile.output_height(), tile.width);
        let classes = tile.n_classes;
        let narrow = classes < 255;
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
        // SAFETY (every transfer below): the host memory lies in the slot,
        // which the pending tile keeps until its flight is waited for.
        if staged {
            let table = bufs.table.get(dev, 256, CL_MEM_READ_ONLY)?;
            unsafe { stream.write(flight, table, &bufs.table_host)? };
        }
        if narrow {
            if !staged {
                let staging = PinnedHost::ensure(&mut bufs.pinned8, dev, n_codes.max(ow * oh))?;
                staging.as_mut_slice()[..n_codes]
                    .par_iter_mut()
                    .zip(tile.classes.par_iter())
                    .for_each(|(s, &c)| *s = c as u8);
            }
            // Read-write: a staged tile is mapped in place.
            let b = bufs.codes8.get(dev, n_codes, CL_MEM_READ_WRITE)?;
            let staging = bufs.pinned8.as_ref().expect("staged above");
            unsafe { stream.write(flight, b, &staging.as_slice()[..n_codes])? };
        } else {
            let b = bufs.codes16.get(dev, n_codes, CL_MEM_READ_ONLY)?;
            unsafe { stream.write(flight, b, &bufs.codes_host)? };
        }
        let weights = bufs.weights.get(dev, bufs.cw.len(), CL_MEM_READ_ONLY)?;
        unsafe { stream.write(flight, weights, &bufs.cw)? };
        if inv_top.is_some() {
            self.upload_votes(flight, bufs, n_codes)?;
        }
        self.upload_exact_weights(flight, bufs, tile, params)?;
        stream.flush_uploads()?;
        Ok(())
    }

    /// dct5 on one tile, enqueued: the codes go up once (as bytes from
    /// pinned memory where the classes fit), pass 1 and pass 2 run for
    /// every class in one launch each (planes stored transposed, so every
    /// access is coalesced), the ranking in a third; winners (and, in the
    /// certified mode, the flags) come down into the slot. Returns whether
    /// the winners come down as bytes. `staged`: the codes lie in pinned
    /// staging as global indices, with the table to local ones in the slot.
    fn enqueue_dct5(
        &self,
        flight: &mut Flight,
        bufs: &mut Slot,
        tile: &ClassTile,
        params: &SmoothParams,
        inv_top: Option<f32>,
        staged: bool,
    ) -> Result<bool> {
        let Shape::Dct5(rot) = &self.shape else {
            unreachable!("enqueue_dct5 runs dct5 shapes only")
        };
        let stream = &self.stream;
        let dev = stream.device();
        let (ow, oh, w) = (tile.output_width(), tile.output_height(), tile.width);
        let classes = tile.n_classes;
        let ohp = oh.next_multiple_of(32);
        let narrow = classes < 255;
        let opts = self
            .options()
            .define("CODE", if narrow { "uchar" } else { "ushort" })
            .flag("WEIGHTED", inv_top.is_some());
        let rank_opts = BuildOptions::new().define("CODE", if narrow { "uchar" } else { "ushort" });
        self.upload_dct5(flight, bufs, tile, params, inv_top, staged)?;
        let n_codes = w * tile.height;
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
        let (p1, p2) = (bufs.planes1.buf(), bufs.planes2.buf());
        let weights = bufs.weights.buf();
        let flags = bufs.flags.buf();
        let (wi, ohi, owi, ohpi) = (w as i32, oh as i32, ow as i32, ohp as i32);
        if staged {
            stream.map_codes(flight, bufs.codes8.buf(), bufs.table.buf(), n_codes)?;
        }
        let cols = dev.kernel("dct5", &opts, "dct5_cols_t")?;
        let rows = dev.kernel("dct5", &opts, "dct5_rows_t")?;
        let rank = dev.kernel("rank", &rank_opts, "rank_scores_t")?;
        fn codes_arg<'k>(a: Args<'k>, bufs: &Slot, narrow: bool) -> Args<'k> {
            if narrow {
                a.mem(bufs.codes8.buf())
            } else {
                a.mem(bufs.codes16.buf())
            }
        }
        let a = codes_arg(Args::new(&cols), bufs, narrow)
            .scalar(wi)
            .scalar(ohi)
            .scalar(ohpi)
            .scalar(seg1 as i32)
            .mem(co)
            .mem(p1);
        votes_args(a, bufs, inv_top).done()?;
        stream.launch(
            flight,
            &cols,
            &[w, oh.div_ceil(seg1), planes],
            Some(&[32, 1, 1]),
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
        stream.launch(
            flight,
            &rows,
            &[oh, ow.div_ceil(seg2), planes],
            Some(&[self.rows_group(), 1, 1]),
        )?;
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
            .scalar(self.margin(inv_top.is_some()));
        let a = if narrow {
            a.mem(bufs.winners8.buf())
        } else {
            a.mem(bufs.winners16.buf())
        };
        a.mem(flags).done()?;
        stream.launch_bounded(flight, &rank, &[oh, ow])?;
        for k in [cols, rows, rank] {
            flight.keep(k);
        }
        let on_device = self.enqueue_flagged(flight, bufs, tile, params, narrow)?;
        stream.flush_kernels()?;
        self.enqueue_downloads(flight, bufs, ow * oh, narrow, on_device)?;
        Ok(narrow)
    }

    /// svd on one tile, enqueued: per class, the column pass (all ranks)
    /// and the row pass write that class's score plane; then the ranking.
    fn enqueue_svd(
        &self,
        flight: &mut Flight,
        bufs: &mut Slot,
        tile: &ClassTile,
        params: &SmoothParams,
        inv_top: Option<f32>,
    ) -> Result<()> {
        let Shape::Svd { u, v, rank: terms } = &self.shape else {
            unreachable!("enqueue_svd runs svd shapes only")
        };
        let stream = &self.stream;
        let dev = stream.device();
        let (ow, oh, w) = (tile.output_width(), tile.output_height(), tile.width);
        let classes = tile.n_classes;
        if bufs.factors.is_none() {
            bufs.factors = Some((
                dev.buffer_from(u, CL_MEM_READ_ONLY)?,
                dev.buffer_from(v, CL_MEM_READ_ONLY)?,
            ));
        }
        let cls = bufs.codes16.get(dev, w * tile.height, CL_MEM_READ_ONLY)?;
        // SAFETY (every transfer): the host memory lies in the slot, which
        // the pending tile keeps until its flight is waited for.
        unsafe { stream.write(flight, cls, &bufs.codes_host)? };
        if inv_top.is_some() {
            self.upload_votes(flight, bufs, w * tile.height)?;
        }
        self.upload_exact_weights(flight, bufs, tile, params)?;
        stream.flush_uploads()?;
        bufs.planes1.get(dev, terms * w * oh, CL_MEM_READ_WRITE)?;
        bufs.planes2
            .get(dev, classes.max(1) * ow * oh, CL_MEM_READ_WRITE)?;
        bufs.winners16.get(dev, ow * oh, CL_MEM_WRITE_ONLY)?;
        bufs.flags.get(dev, ow * oh, CL_MEM_WRITE_ONLY)?;
        let slot: &Slot = bufs;
        let (p, s) = (slot.planes1.buf(), slot.planes2.buf());
        let cls = slot.codes16.buf();
        let (ub, vb) = slot.factors.as_ref().expect("set above");
        let opts = self.options().flag("WEIGHTED", inv_top.is_some());
        let wmax = params.max_class_weight();
        let (wi, ohi, owi) = (w as i32, oh as i32, ow as i32);
        let cols = dev.kernel("svd", &opts, "svd_cols")?;
        let rows = dev.kernel("svd", &opts, "svd_rows")?;
        // A launch keeps the arguments it was enqueued with, so one kernel
        // object serves every class.
        for c in 0..classes {
            let cw = (params.class_weights[c] as f64 / wmax) as f32;
            let a = Args::new(&cols)
                .mem(cls)
                .scalar(wi)
                .scalar(ohi)
                .scalar(c as u16)
                .mem(ub)
                .mem(p);
            votes_args(a, slot, inv_top).done()?;
            stream.launch_bounded(flight, &cols, &[w, oh])?;
            let sc = (c * ow * oh) as u64;
            Args::new(&rows)
                .mem(p)
                .scalar(wi)
                .scalar(ohi)
                .scalar(owi)
                .mem(vb)
                .scalar(cw)
                .mem(s)
                .scalar(sc)
                .done()?;
            stream.launch_bounded(flight, &rows, &[ow, oh])?;
        }
        flight.keep(cols);
        flight.keep(rows);
        let rank = dev.kernel("rank", &BuildOptions::new(), "rank_scores")?;
        Args::new(&rank)
            .mem(s)
            .scalar(classes as i32)
            .scalar(owi)
            .scalar(ohi)
            .mem(cls)
            .scalar(wi)
            .scalar(tile.halo as i32)
            .scalar(params.fill_nodata as i32)
            .scalar(self.bounds.tie_tolerance(DEVICE_UNIT_ROUNDOFF) as f32)
            .scalar(self.margin(inv_top.is_some()))
            .mem(slot.winners16.buf())
            .mem(slot.flags.buf())
            .done()?;
        stream.launch_bounded(flight, &rank, &[ow, oh])?;
        flight.keep(rank);
        let on_device = self.enqueue_flagged(flight, bufs, tile, params, false)?;
        stream.flush_kernels()?;
        self.enqueue_downloads(flight, bufs, ow * oh, false, on_device)
    }

    /// The winners (bytes into pinned staging, or u16) and, certified, the
    /// count of pixels the device recomputed (`recomputed_on_device`) or
    /// else the flags, for the host to recompute, come down after the
    /// tile's last kernel.
    fn enqueue_downloads(
        &self,
        flight: &mut Flight,
        bufs: &mut Slot,
        outputs: usize,
        narrow: bool,
        recomputed_on_device: bool,
    ) -> Result<()> {
        let stream = &self.stream;
        // SAFETY (every transfer): as in the enqueue functions.
        if narrow {
            let staging = bufs.pinned8.as_mut().expect("staged with the codes");
            let host = &mut staging.as_mut_slice()[..outputs];
            unsafe { stream.read(flight, bufs.winners8.buf(), host)? };
        } else {
            bufs.wide_host.resize(outputs, 0);
            unsafe { stream.read(flight, bufs.winners16.buf(), &mut bufs.wide_host)? };
        }
        if recomputed_on_device {
            bufs.redone_host.resize(1, 0);
            unsafe { stream.read(flight, bufs.redone.buf(), &mut bufs.redone_host)? };
        } else if self.exact {
            bufs.flags_host.resize(outputs, 0);
            unsafe { stream.read(flight, bufs.flags.buf(), &mut bufs.flags_host)? };
        }
        stream.flush_downloads()
    }
}

/// Pass 1's weighing arguments (`WEIGHTED`): the tile's confidences on
/// the device and `inv_top`.
fn votes_args<'k>(a: Args<'k>, bufs: &Slot, inv_top: Option<f32>) -> Args<'k> {
    match inv_top {
        Some(t) => a.mem(bufs.votes.buf()).scalar(t),
        None => a,
    }
}

/// What the certified mode's recomputation needs of a tile once the device
/// is done with it (the classes stay in the slot).
struct Certify {
    width: usize,
    height: usize,
    halo: usize,
    n_classes: usize,
    kernel: Kernel,
    class_weights: Vec<u32>,
    fill_nodata: bool,
    ties: crate::method::policy::Ties,
    /// The votes were weighed: the recomputation reads the slot's staging.
    weighted: bool,
}

/// A tile in flight ([`ClassSmoother::submit`]). The flight comes first, so
/// that dropped unwaited it waits before the slot goes.
struct SepPending<'a> {
    flight: Flight,
    slot: Option<Slot>,
    method: &'a SeparableCl,
    outputs: usize,
    /// The winners come down as bytes (in the slot's pinned staging).
    narrow: bool,
    /// The host's certified recomputation, where the device did not do it.
    certify: Option<Certify>,
    /// The device recomputed the flagged pixels (`naive_flagged`); their
    /// flags came down to be counted.
    device_flags: bool,
}

impl SepPending<'_> {
    /// Waits for the device and logs the kernels' times.
    fn finish(&mut self) -> Result<()> {
        let method = self.method;
        method.stream.finish(&mut self.flight)?;
        if matches!(method.shape, Shape::Dct5(_)) {
            let ms: Vec<f64> = self
                .flight
                .kernel_ns()
                .iter()
                .map(|&n| n as f64 / 1e6)
                .collect();
            // A tile compacted on the device has the code mapping first.
            let (map, ms) = ms.split_at(ms.len().saturating_sub(3));
            let line = || {
                let map = map
                    .first()
                    .map_or(String::new(), |m| format!(", map {m:.3}"));
                format!(
                    "dct5 kernels (ms): columns {:.3}, rows {:.3}, ranking {:.3}{map}",
                    ms[0], ms[1], ms[2]
                )
            };
            if crate::switches::get().kernel_times {
                // benches/fast-gpu/run.sh reads these lines whatever -v says.
                eprintln!("{}", line());
            } else {
                log::trace!("{}", line());
            }
        }
        Ok(())
    }
}

impl PendingTile for SepPending<'_> {
    /// Byte winners go from the pinned staging straight to codes.
    fn wait_codes(mut self: Box<Self>, map: &CodeMap, mut out: RowsMut) -> Result<()> {
        if !self.narrow || self.certify.is_some() {
            let local = self.into_output(out.len())?;
            out.fill_mapped(&local, |v| map.code(v));
            return Ok(());
        }
        self.finish()?;
        let slot = self.slot.take().expect("present until waited");
        let staged = &slot.pinned8.as_ref().expect("staged").as_slice()[..self.outputs];
        let table = map.byte_table();
        out.fill_mapped(staged, |v| table[v as usize]);
        self.method
            .pixels
            .fetch_add(self.outputs as u64, Ordering::Relaxed);
        if self.device_flags {
            self.method.count_device_recomputed(&slot.redone_host);
        }
        self.method.slots.give(slot);
        Ok(())
    }

    fn wait(mut self: Box<Self>, out: &mut [u16]) -> Result<()> {
        let method = self.method;
        self.finish()?;
        let slot = self.slot.take().expect("present until waited");
        if self.narrow {
            let staged = &slot.pinned8.as_ref().expect("staged").as_slice()[..self.outputs];
            out.par_iter_mut()
                .zip(staged.par_iter())
                .for_each(|(o, &v)| *o = if v == u8::MAX { NO_CLASS } else { v as u16 });
        } else {
            out.copy_from_slice(&slot.wide_host[..self.outputs]);
        }
        method
            .pixels
            .fetch_add(self.outputs as u64, Ordering::Relaxed);
        if self.device_flags {
            method.count_device_recomputed(&slot.redone_host);
        }
        if let Some(c) = &self.certify {
            let tile = ClassTile {
                width: c.width,
                height: c.height,
                halo: c.halo,
                n_classes: c.n_classes,
                classes: &slot.codes_host,
            };
            let votes = c.weighted.then(|| {
                let staged = slot.votes_host.as_ref().expect("staged");
                &staged.as_slice()[..c.width * c.height]
            });
            let params = SmoothParams {
                kernel: &c.kernel,
                class_weights: &c.class_weights,
                fill_nodata: c.fill_nodata,
                ties: c.ties,
                confidence: votes,
            };
            method.recompute(&tile, &params, out, &slot.flags_host);
        }
        method.slots.give(slot);
        Ok(())
    }
}

impl SeparableCl {
    /// dct5's weighted float scores of every class of `tile`, as
    /// `S[c][y][x]` over the output (for tests of the kernels against the
    /// f64 filter and the error bound).
    pub fn dct5_scores(&self, tile: &ClassTile, params: &SmoothParams) -> Result<Vec<f32>> {
        if !matches!(self.shape, Shape::Dct5(_)) {
            bail!(internal, "dct5_scores needs a dct5 plan");
        }
        self.check(tile)?;
        let (ow, oh) = (tile.output_width(), tile.output_height());
        let ohp = oh.next_multiple_of(32);
        let mut out = vec![0u16; ow * oh];
        let pending = self.start(tile, params)?;
        // The weighted score planes, as `ST[c][x][y]` with columns `ohp`
        // (the output height rounded up to 32) apart.
        let planes = tile.n_classes.max(1);
        let mut st = vec![0.0f32; planes * ow * ohp];
        let p2 = pending.slot.as_ref().expect("in flight").planes2.buf();
        self.device().download(p2, &mut st)?;
        Box::new(pending).wait(&mut out)?;
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

    fn device(&self) -> &Device {
        self.stream.device()
    }

    /// Refuses a tile whose halo is not the kernel's radius.
    fn check(&self, tile: &ClassTile) -> Result<()> {
        if tile.halo != self.size / 2 {
            bail!(internal, format!(
                "{}: the tile halo {} differs from the kernel radius {}",
                self.name,
                tile.halo,
                self.size / 2
            ));
        }
        Ok(())
    }
}

impl ClassSmoother for SeparableCl {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn runs_on(&self) -> Option<crate::device::DeviceKind> {
        Some(self.device().info().kind)
    }

    fn is_exact(&self) -> bool {
        self.exact
    }

    fn weighs_votes(&self) -> bool {
        true
    }

    /// Every tile is enqueued and left running, so the engine's next tiles
    /// overlap it; the certified mode recomputes its flagged pixels when
    /// the tile is waited for.
    fn submit(&self, tile: &ClassTile, params: &SmoothParams) -> Result<Box<dyn PendingTile + '_>> {
        if tile.output_len() == 0 {
            return Ok(Box::new(Finished(Vec::new())));
        }
        self.check(tile)?;
        Ok(Box::new(self.start(tile, params)?))
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        if tile.output_len() == 0 {
            return Ok(());
        }
        self.submit(tile, params)?.wait(out)
    }

    /// dct5 compacts its tiles on the device; certified, where the device
    /// can recompute the flagged pixels too ([`PendingTile`]s of
    /// `submit_codes` fall back to host compaction where it cannot).
    fn takes_codes(&self) -> bool {
        matches!(self.shape, Shape::Dct5(_))
    }

    fn submit_codes(
        &self,
        tile: &CodeTile,
        params: &SmoothParams,
    ) -> Result<(TileCompaction, Box<dyn PendingTile + '_>)> {
        let t = tile.tile;
        // A tile compacted on the device lies there only: certified, its
        // flagged pixels must be recomputed there too (codes tiles hold
        // fewer than 255 classes: byte winners).
        if !self.takes_codes()
            || t.padded_width <= 2 * tile.halo
            || t.padded_height <= 2 * tile.halo
            || (self.exact && !self.recomputes_on_device(0, params))
        {
            return crate::method::submit_compacted(self, tile, params);
        }
        match self.start_codes(tile, params)? {
            Some((local, pending)) => Ok((local, Box::new(pending))),
            None => crate::method::submit_compacted(self, tile, params),
        }
    }

    fn take_device_times(&self) -> Option<DeviceTimes> {
        Some(self.stream.take_times())
    }

    fn tuned(&self) -> Vec<Setting> {
        self.tuned.iter().cloned().collect()
    }

    fn recompute_counts(&self) -> Option<(u64, u64)> {
        self.exact.then(|| {
            (
                self.recomputed.load(Ordering::Relaxed),
                self.pixels.load(Ordering::Relaxed),
            )
        })
    }

    fn summary(&self) -> Option<String> {
        let (r, p) = self.recompute_counts()?;
        Some(format!(
            "certified {} of {p} pixels, recomputed {r} exactly ({:.3} %), ε = {:.3e}",
            p - r,
            100.0 * r as f64 / p.max(1) as f64,
            self.bounds.total()
        ))
    }
}
