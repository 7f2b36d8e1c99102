//! The tile engine: streams a class raster through a method tile by tile.
//!
//! Runs on [`crate::pipeline`]: a reader thread reads tile i+1 (source
//! window only, never the whole raster) while the calling thread smooths
//! tile i and a writer thread writes tile i−1, so memory is bounded by tile
//! size × pipeline depth. The compute thread itself keeps up to
//! [`ClassSmoother::depth`] + 1 tiles submitted to the method
//! ([`ClassSmoother::submit`]): a device method enqueues each tile's upload,
//! kernel and download on separate queues and returns, so its transfers
//! overlap the previous tile's kernel. Host methods
//! ([`ClassSmoother::host_parallel`]) get each tile (up to
//! `ON_POOL_MAX_TILE` a side, or larger where few are in flight) started
//! as a job on the rayon pool instead,
//! so the threads that finish a tile's last bands move on to the next tile
//! rather than wait; a tile done waits its turn to be written without
//! holding back the next ones ([`pipeline::run_deferred`]).
//! A raster in memory is staged from in place by the reader thread, and
//! where the output lies in memory too, tile order no longer matters:
//! bands of tile rows then run end to end on several threads ([`ResidentBands`]).
//! The engine owns class compaction per tile and the mapping back to codes;
//! sources and sinks own the pixels' storage (GDAL files or memory).

use crate::classes::{ClassTable, CodeMap, NO_CLASS, TileCompaction};
use crate::error::{Error, Result};
use crate::io::{
    ClassSink, ClassSource, DEFAULT_TILE, MemRaster, ON_POOL_MAX_PIXELS, ON_POOL_MAX_TILE, RowsMut,
};
use crate::kernel::Kernel;
use crate::method::policy::{self, Policies, Settle};
use crate::method::{ClassSmoother, ClassTile, PendingTile, SmoothParams};
use crate::pipeline::{self, RunTotals};
use crate::progress::Progress;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tiles::{Border, TileGrid};

mod stages;
use stages::{CodeSubmit, Finisher, Paths, Reader, Recycler, Submitter, Writer, output_in_place};

/// Default tile side for methods on a GPU: a 512² tile leaves a GPU idle
/// between its few milliseconds of kernels (BENCHMARKS.md, "Whole command
/// against gdal_translate"), and a 2048² one makes the host's stages
/// around it (the 8 MiB tile of codes mapped, tallied, narrowed and handed
/// to GDAL's encoder) run out of the cores' caches. On one H200 (16
/// cores), 1024² against 2048²: a batch of 16 compressible tiles 1.94–2.16
/// against 2.28–2.38 s (`--exact`) and 2.05–2.07 against 2.32–2.33 s
/// (naive), each task's writing 0.15–0.23 against 0.33–0.40 s; one whole
/// `smooth` of 415 Mpx 1.04–1.11 against 1.13–1.31 s (dct5); the realistic
/// set as fast (issue 39, decision 0040).
pub const GPU_TILE: usize = 1024;

/// The tile side a run of `method` uses unless told otherwise: a tuned one
/// (the largest, on several devices), else the one the method prefers
/// (fft's grows with the kernel), else by the kind of device.
pub fn default_tile(method: &dyn ClassSmoother) -> usize {
    if let Some(tile) = method.tuned().iter().filter_map(|s| s.tile).max() {
        return tile;
    }
    if let Some(tile) = method.preferred_tile() {
        return tile;
    }
    match method.runs_on() {
        Some(crate::device::DeviceKind::Gpu) => GPU_TILE,
        _ => DEFAULT_TILE,
    }
}

/// What to compute, independent of where pixels live.
#[derive(Clone, Debug)]
pub struct SmoothJob {
    pub kernel: Kernel,
    pub classes: ClassTable,
    /// Quantised weight per global class index.
    pub class_weights: Vec<u32>,
    pub border: Border,
    pub fill_nodata: bool,
    pub tile: usize,
    /// Code written where the result is nodata (`None`: no code is free).
    pub output_nodata: Option<u16>,
    /// Ties, kept and silent classes, isolated pixels, iterations. The
    /// undecided code of `--ties undecided:CODE` must be a class of
    /// `classes` when there is more than one iteration (a later pass reads it).
    pub policies: Policies,
}

impl SmoothJob {
    pub fn grid(&self, width: usize, height: usize) -> Result<TileGrid> {
        let halo = self.policies.checked_halo(self.kernel.radius())?;
        tile_grid(width, height, halo, self.border, self.tile)
    }

    /// The input pixels each side of an output pixel that reach it: the
    /// kernel's radius once per iteration.
    pub fn halo(&self) -> usize {
        self.policies.halo(self.kernel.radius())
    }
}

/// The tiles of a `width` × `height` raster for a window of radius `halo`
/// ([`SmoothJob::halo`]), `border` and tiles of side `tile`:
/// [`SmoothJob::grid`], for callers that need the output's size before the
/// job is complete.
pub fn tile_grid(
    width: usize,
    height: usize,
    halo: usize,
    border: Border,
    tile: usize,
) -> Result<TileGrid> {
    Ok(TileGrid::new(width, height, halo, border, tile)?)
}

/// What the reader hands on: a source window (with its confidences), or a
/// tile it submitted itself from a raster in memory.
enum Read<'m> {
    Window(Vec<u16>, Option<Vec<u16>>),
    Submitted(InFlight<'m>),
}

/// A tile on its way through the method: submitted to it, or (host
/// methods on the pool) handed whole to a pool job.
enum Flight<'m> {
    Method(InFlight<'m>),
    Pooled(Pooled),
}

impl Flight<'_> {
    /// Whether the tile's pool job is over (waiting for it costs nothing);
    /// a method's tiles are waited for in order.
    fn done(&self) -> bool {
        match self {
            Flight::Method(_) => false,
            Flight::Pooled(pooled) => pooled.over.load(Ordering::Acquire),
        }
    }
}

/// A tile submitted to the method and not yet waited for.
struct InFlight<'m> {
    local: TileCompaction,
    pending: Box<dyn PendingTile + 'm>,
    /// Time spent in [`ClassSmoother::submit`].
    submit_time: Duration,
}

/// Figures of one run.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Tiles, pixels, compute and wall time, as the image engine counts
    /// them. Its compute time is the time the engine spent in the method
    /// or waiting for it (all tiles): with tiles in flight (devices, host
    /// tiles on the pool) the time the method worked beside the engine's
    /// own work is not counted twice.
    pub totals: RunTotals,
    /// Largest number of classes any tile had to process.
    pub max_tile_classes: usize,
    /// Mean number of classes per tile.
    pub mean_tile_classes: f64,
    /// Classes present in the raster (the union of the tiles' classes; the
    /// source windows cover the raster), so callers need not scan for it.
    pub classes_present: usize,
    /// Busy time of each stage of the run, summed over its tiles.
    pub stages: StageTimes,
}

/// How long each stage of a run was busy, on the thread that runs it: the
/// host-side share of a device run, beside the device's own times.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    /// Reading source windows (the reader thread).
    pub read: Duration,
    /// Padding and compacting tiles before they go to the method.
    pub prepare: Duration,
    /// Handing tiles to the method ([`ClassSmoother::submit`]).
    pub submit: Duration,
    /// Waiting for the method's results.
    pub wait: Duration,
    /// Mapping local indices back to codes.
    pub map_back: Duration,
    /// Writing tiles to the sink (the writer thread).
    pub sink: Duration,
}

/// Smooths `source` into `sink` with `method`, tile by tile.
pub fn smooth(
    source: &mut dyn ClassSource,
    sink: &mut dyn ClassSink,
    job: &SmoothJob,
    method: &dyn ClassSmoother,
    progress: &Progress,
) -> Result<RunStats> {
    smooth_weighted(source, None, sink, job, method, progress)
}

/// [`smooth`] with each pixel's vote weighted by `confidence` (quantised
/// weights on the source's grid, docs/semantics.md#confidence); methods
/// that do not weigh votes ([`ClassSmoother::weighs_votes`]) are refused.
pub fn smooth_weighted(
    source: &mut dyn ClassSource,
    confidence: Option<&mut dyn ClassSource>,
    sink: &mut dyn ClassSink,
    job: &SmoothJob,
    method: &dyn ClassSmoother,
    progress: &Progress,
) -> Result<RunStats> {
    let start = Instant::now();
    let (width, height) = source.size();
    if let Some(c) = &confidence {
        check_confidence(c.size(), (width, height), method)?;
    }
    let grid = job.grid(width, height)?;
    let lut = job.classes.index_lut();
    progress.start(grid.len() as u64, "tiles");
    let mut class_weights = job.class_weights.clone();
    job.policies.apply_no_vote(&job.classes, &mut class_weights);
    let around = Around::for_job(job, &lut, &class_weights, confidence.is_some())?;
    let paths = Paths::of(job, method, around.is_some());
    // A raster in memory is staged from in place, and a device's results
    // are mapped straight into an output in memory: the copies in and out
    // would be most of a device run's host memory traffic.
    let (resident, source) = source_in_place(source, paths.takes_codes);
    let (out_w, out_h) = grid.output_size();
    let params = SmoothParams {
        kernel: &job.kernel,
        class_weights: &class_weights,
        fill_nodata: job.fill_nodata,
        ties: job.policies.ties,
        confidence: None,
    };
    let codes = CodeSubmit {
        grid: &grid,
        lut: &lut,
        method,
        params: &params,
    };
    let in_memory = paths.on_device && around.is_none();
    let (mut in_place, sink) = output_in_place(sink, in_memory, out_w * out_h)?;
    // Where no code is free for nodata, NO_CLASS stays and is reported below.
    let fill = job.output_nodata.unwrap_or(NO_CLASS);
    let tie = job.policies.ties.undecided().unwrap_or(NO_CLASS);
    if let (Some(all), Some(out)) = (resident, in_place.as_deref_mut()) {
        // Both ends in memory: every tile writes its own window, so tile
        // order no longer matters and bands of tile rows run end to end on
        // several threads, spreading the host's staging and mapping.
        let bands = ResidentBands {
            grid: &grid,
            job,
            fill,
            tie,
            out_w,
            // Each thread keeps two tiles in flight: as many in all as
            // the pipeline keeps.
            threads: (method.depth() + 1).div_ceil(2).max(2),
        };
        let stats = bands.run_resident(all, width, out, &codes, progress)?;
        return settled(method, stats, start);
    }
    // Buffers go back to the stage that fills them, so that tiles after
    // the first few allocate nothing.
    let (raws, paddeds, outs) = (Recycler::new(), Recycler::new(), Recycler::new());
    // Each pool job, when over, wakes the engine waiting for any of them.
    let (job_over, jobs_over) = crossbeam_channel::unbounded::<()>();
    let mut reader = Reader {
        source,
        confidence,
        resident,
        width,
        codes: &codes,
        raws: &raws,
        time: Duration::ZERO,
    };
    let mut submitter = Submitter {
        codes: &codes,
        paths,
        job,
        class_weights: &class_weights,
        around: around.as_ref(),
        fill,
        tie,
        raws: &raws,
        paddeds: &paddeds,
        outs: &outs,
        job_over: &job_over,
        time: Duration::ZERO,
    };
    let mut finisher = Finisher {
        job,
        fill,
        tie,
        on_device: paths.on_device,
        in_place,
        out_w,
        outs: &outs,
        tally: RunTally::new(job.classes.len()),
        pooled_prepare: Duration::ZERO,
        map_time: Duration::ZERO,
    };
    let mut writer = Writer::new(sink, &outs);
    let depth = paths.depth(method, resident.is_some());
    let running = paths.running(&jobs_over);
    rayon::in_place_scope(|scope| {
        pipeline::run_deferred(
            grid.tiles(),
            |tile| reader.read(tile),
            |tile, read| submitter.submit(scope, tile, read),
            |tile, flight| finisher.finish(tile, flight),
            (depth, running),
            |tile, codes| writer.write(tile, codes, progress),
        )
    })?;
    let stats = finisher.stats(&reader, &submitter, &writer);
    progress.finish();
    settled(method, stats, start)
}

/// A run's figures once its method has settled ([`ClassSmoother::settle`]:
/// devices still starting waited for, their error the run's), its wall
/// time counted from `start`.
fn settled(method: &dyn ClassSmoother, mut stats: RunStats, start: Instant) -> Result<RunStats> {
    method.settle()?;
    stats.totals.wall = start.elapsed();
    Ok(stats)
}

/// The source raster in memory, where a method that takes source windows
/// of codes (`takes_codes`) may be staged from it in place; else the
/// source to read.
fn source_in_place(
    source: &mut dyn ClassSource,
    takes_codes: bool,
) -> (Option<&[u16]>, Option<&mut dyn ClassSource>) {
    if takes_codes && source.resident().is_some() {
        let source: &dyn ClassSource = source;
        (source.resident(), None)
    } else {
        (None, Some(source))
    }
}

/// Refuses vote weights off the class raster's grid (`size`) or for a
/// method that does not weigh votes.
fn check_confidence(
    votes: (usize, usize),
    size: (usize, usize),
    method: &dyn ClassSmoother,
) -> Result<()> {
    if votes != size {
        return Err(
            Error::input("the confidence raster is not on the class raster's grid")
                .hint("give a confidence raster of the same size"),
        );
    }
    policy::check_confidence(true, method)
}

/// A run whose source and output both lie in memory, by bands of tile
/// rows: each thread takes the next band and stages, submits, waits for
/// and maps its tiles in place, one tile ahead.
struct ResidentBands<'a> {
    grid: &'a TileGrid,
    job: &'a SmoothJob,
    fill: u16,
    tie: u16,
    out_w: usize,
    threads: usize,
}

impl ResidentBands<'_> {
    /// Runs every tile from the raster in memory `all` (rows `width`
    /// apart) into `out`, submitted as source windows of codes; the tiles'
    /// figures, less the wall time.
    fn run_resident(
        &self,
        all: &[u16],
        width: usize,
        out: &mut [u16],
        codes: &CodeSubmit,
        progress: &Progress,
    ) -> Result<RunStats> {
        let tally = self.run(out, progress, |tile| {
            let at = &all[tile.source.y * width + tile.source.x..];
            codes.submit(tile, at, width)
        })?;
        progress.finish();
        Ok(tally.stats())
    }

    fn run<'m>(
        &self,
        out: &mut [u16],
        progress: &Progress,
        submit: impl Fn(&tiles::Tile) -> Result<InFlight<'m>> + Sync,
    ) -> Result<RunTally> {
        let cols = self.grid.columns();
        let mut rest = out;
        let mut bands = Vec::new();
        for row in 0..self.grid.rows() {
            let first = self.grid.tile(row * cols);
            let (band, tail) =
                std::mem::take(&mut rest).split_at_mut(first.output.height * self.out_w);
            bands.push((row, first.output.y, band));
            rest = tail;
        }
        let threads = self.threads.min(bands.len()).max(1);
        let queue = std::sync::Mutex::new(bands.into_iter());
        let failed = std::sync::atomic::AtomicBool::new(false);
        let tallies: Vec<Result<RunTally>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut tally = RunTally::new(self.job.classes.len());
                        let result = self.work(&queue, &failed, &submit, progress, &mut tally);
                        if result.is_err() {
                            failed.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                        result.map(|()| tally)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join()
                        .unwrap_or_else(|_| Err(Error::internal("a tile thread panicked")))
                })
                .collect()
        });
        let mut all = RunTally::new(self.job.classes.len());
        for tally in tallies {
            all.merge(tally?);
        }
        Ok(all)
    }

    /// One thread's share: bands from `queue` until it is empty.
    fn work<'m, 'o>(
        &self,
        queue: &std::sync::Mutex<std::vec::IntoIter<(usize, usize, &'o mut [u16])>>,
        failed: &std::sync::atomic::AtomicBool,
        submit: &(impl Fn(&tiles::Tile) -> Result<InFlight<'m>> + Sync),
        progress: &Progress,
        tally: &mut RunTally,
    ) -> Result<()> {
        let cols = self.grid.columns();
        loop {
            let next = queue.lock().expect("no thread panics holding it").next();
            let Some((row, y0, band)) = next else {
                return Ok(());
            };
            // Another thread's error ends the run.
            if failed.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(());
            }
            let mut ahead: Option<(tiles::Tile, InFlight)> = None;
            for col in 0..cols {
                let tile = self.grid.tile(row * cols + col);
                let flight = submit(&tile)?;
                if let Some((tile, flight)) = ahead.replace((tile, flight)) {
                    self.finish(tile, flight, band, y0, tally)?;
                    progress.inc(1);
                }
            }
            if let Some((tile, flight)) = ahead {
                self.finish(tile, flight, band, y0, tally)?;
                progress.inc(1);
            }
        }
    }

    /// Waits for `tile` and maps its outputs into `band`, the output's rows
    /// from `y0` on.
    fn finish(
        &self,
        tile: tiles::Tile,
        flight: InFlight,
        band: &mut [u16],
        y0: usize,
        tally: &mut RunTally,
    ) -> Result<()> {
        let map = tally.count(&tile, &flight.local, self.job, self.fill, self.tie);
        let t0 = Instant::now();
        let window = tiles::Rect {
            y: tile.output.y - y0,
            ..tile.output
        };
        flight
            .pending
            .wait_codes(&map, RowsMut::window(band, self.out_w, window))?;
        tally.timed(flight.submit_time, t0.elapsed());
        check_nodata(
            &RowsMut::window(band, self.out_w, window),
            self.job.output_nodata,
        )
    }
}

/// The figures of a run's tiles as they finish.
struct RunTally {
    stats: RunStats,
    class_sum: usize,
    /// Per global class: in some tile.
    present: Vec<bool>,
}

impl RunTally {
    fn new(classes: usize) -> Self {
        RunTally {
            stats: RunStats::default(),
            class_sum: 0,
            present: vec![false; classes],
        }
    }

    /// Counts a finished tile compacted as `local`; returns the map of its
    /// outputs to codes.
    fn count(
        &mut self,
        tile: &tiles::Tile,
        local: &TileCompaction,
        job: &SmoothJob,
        fill: u16,
        tie: u16,
    ) -> CodeMap {
        self.stats.totals.tile(tile.output.area());
        self.stats.max_tile_classes = self.stats.max_tile_classes.max(local.len());
        self.class_sum += local.len();
        for &g in &local.globals {
            self.present[g as usize] = true;
        }
        code_map(local, job, fill, tie)
    }

    /// A tile's time in the method: handing it over, then waiting for it.
    fn timed(&mut self, submit: Duration, wait: Duration) {
        self.stats.totals.compute += submit + wait;
        self.stats.stages.submit += submit;
        self.stats.stages.wait += wait;
    }

    fn merge(&mut self, other: RunTally) {
        let (a, b) = (&mut self.stats, other.stats);
        a.totals.absorb(&b.totals);
        a.max_tile_classes = a.max_tile_classes.max(b.max_tile_classes);
        a.stages.submit += b.stages.submit;
        a.stages.wait += b.stages.wait;
        self.class_sum += other.class_sum;
        self.present
            .iter_mut()
            .zip(other.present)
            .for_each(|(p, q)| *p |= q);
    }

    fn stats(self) -> RunStats {
        let mut stats = self.stats;
        stats.mean_tile_classes = self.class_sum as f64 / stats.totals.tiles.max(1) as f64;
        stats.classes_present = self.present.iter().filter(|&&p| p).count();
        stats
    }
}

/// Tiles a host method keeps on a pool of `threads` beyond the one the
/// engine waits for: a tile's bands feed only a few threads (a method cuts
/// a tile no thinner than its bands stay efficient), so 64 threads need
/// about 32 tiles in flight where 16 need 8. Memory grows with it by a
/// few tiles of at most `ON_POOL_MAX_TILE`², or `ON_POOL_MAX_PIXELS` in
/// all ([`pools_tiles`]; a dct5 ranking of 512² holds 9 MB).
fn pool_depth(method_depth: usize, threads: usize) -> usize {
    method_depth.max(threads.div_ceil(2))
}

/// Whether host tiles of side `tile` go to a pool of `threads`: up to
/// `ON_POOL_MAX_TILE` always, larger ones where the tiles in flight (the
/// pool's and the one the engine waits for) hold at most
/// `ON_POOL_MAX_PIXELS`.
fn pools_tiles(tile: usize, method_depth: usize, threads: usize) -> bool {
    tile <= ON_POOL_MAX_TILE
        || (pool_depth(method_depth, threads) + 1).saturating_mul(tile.saturating_mul(tile))
            <= ON_POOL_MAX_PIXELS
}

/// What a pool job needs to take a tile from its source window to its
/// output codes.
#[derive(Clone, Copy)]
struct TileWork<'s> {
    method: &'s dyn ClassSmoother,
    job: &'s SmoothJob,
    lut: &'s crate::classes::CodeLut,
    /// Quantised weight per global class.
    class_weights: &'s [u32],
    halo: usize,
    fill: u16,
    tie: u16,
    /// Where the source windows go back to the reader, and where the
    /// padded tiles and outputs come from.
    raws: &'s Recycler,
    paddeds: &'s Recycler,
    outs: &'s Recycler,
    /// Wakes the engine when the job is over.
    job_over: &'s crossbeam_channel::Sender<()>,
}

/// A tile's output codes from a pool job, with what it found and spent.
struct PooledTile {
    local: TileCompaction,
    out: Vec<u16>,
    prepare: Duration,
    map_back: Duration,
}

/// A tile handed to a pool job, not yet waited for, and whether the job
/// is over.
struct Pooled {
    result: crossbeam_channel::Receiver<Result<PooledTile>>,
    over: Arc<AtomicBool>,
}

/// Marks a pool job over when dropped, its result sent or not (a panic
/// too), and wakes the engine if it waits for any job.
struct JobOver {
    over: Arc<AtomicBool>,
    wake: crossbeam_channel::Sender<()>,
}

impl Drop for JobOver {
    fn drop(&mut self) {
        self.over.store(true, Ordering::Release);
        let _ = self.wake.send(());
    }
}

impl Pooled {
    fn wait(self) -> Result<PooledTile> {
        self.result
            .recv()
            .map_err(|_| Error::internal("a tile's job on the pool stopped without a result"))?
    }
}

impl<'s> TileWork<'s> {
    /// Starts `tile` (its source window `raw`) as a job on the rayon pool
    /// that compacts its classes, smooths it and maps the result to codes:
    /// the host method's bands then share the threads with the tiles
    /// before and after it, and the calling thread only keeps tiles in
    /// order. Compacting and mapping were the calling thread's, through
    /// parallel loops that queued behind the pool's tile jobs: at 64
    /// threads they took 8.7 of a run's 8.8 s (issue 39).
    fn spawn(self, scope: &rayon::Scope<'s>, tile: tiles::Tile, raw: Vec<u16>) -> Pooled {
        let (done, result) = crossbeam_channel::bounded(1);
        let over = Arc::new(AtomicBool::new(false));
        let job_over = JobOver {
            over: over.clone(),
            wake: self.job_over.clone(),
        };
        scope.spawn(move |_| {
            // Dropped last, after the result is sent.
            let _job_over = job_over;
            // The receiver is gone only when the run already failed.
            let _ = done.send(self.run(&tile, raw));
        });
        Pooled { result, over }
    }

    fn run(&self, tile: &tiles::Tile, raw: Vec<u16>) -> Result<PooledTile> {
        let t0 = Instant::now();
        let mut padded = self.paddeds.take();
        let local = TileCompaction::pad_and_compact(&raw, self.lut, tile, &mut padded);
        self.raws.give(raw);
        let weights = local.weights(self.class_weights);
        let class_tile = ClassTile {
            width: tile.padded_width,
            height: tile.padded_height,
            halo: self.halo,
            n_classes: local.len(),
            classes: &padded,
        };
        let params = SmoothParams {
            kernel: &self.job.kernel,
            class_weights: &weights,
            fill_nodata: self.job.fill_nodata,
            ties: self.job.policies.ties,
            confidence: None,
        };
        let prepare = t0.elapsed();
        let mut out = self.outs.take_filled(class_tile.output_len(), 0);
        self.method.smooth(&class_tile, &params, &mut out)?;
        self.paddeds.give(padded);
        let t1 = Instant::now();
        code_map(&local, self.job, self.fill, self.tie).apply(&mut out);
        check_nodata(
            &RowsMut::contiguous(&mut out, tile.output.width),
            self.job.output_nodata,
        )?;
        Ok(PooledTile {
            local,
            out,
            prepare,
            map_back: t1.elapsed(),
        })
    }
}

/// The codes written for a tile's local class indices.
fn code_map(local: &TileCompaction, job: &SmoothJob, fill: u16, tie: u16) -> CodeMap {
    CodeMap {
        codes: local
            .globals
            .iter()
            .map(|&g| job.classes.codes()[g as usize])
            .collect(),
        fill,
        tie,
    }
}

/// What the engine does around the method when policies ask for it
/// ([`Policies::around_method`]), by global class index.
struct Around {
    /// Per global class: never changes.
    keep: Vec<bool>,
    /// The global index of the undecided code, where it is a class.
    undecided: Option<u16>,
    /// Quantised weight per global class, 0 for the silent ones.
    class_weights: Vec<u32>,
}

impl Around {
    /// What the engine does around the method for `job` (the policies
    /// around it, or vote weights), `None` where the method runs alone.
    fn for_job(
        job: &SmoothJob,
        lut: &crate::classes::CodeLut,
        class_weights: &[u32],
        votes: bool,
    ) -> Result<Option<Around>> {
        let around = (job.policies.around_method() || votes).then(|| Around {
            class_weights: class_weights.to_vec(),
            keep: job.policies.keep_mask(&job.classes),
            undecided: job
                .policies
                .ties
                .undecided()
                .map(|code| lut[code as usize])
                .filter(|&g| g != NO_CLASS),
        });
        if let Some(code) = job.policies.ties.undecided()
            && job.policies.iterations > 1
            && around.as_ref().is_some_and(|a| a.undecided.is_none())
        {
            return Err(Error::usage(format!(
                "the undecided code {code} is not a class of the job"
            ))
            .hint("add it to the class table (job::smooth does)"));
        }
        Ok(around)
    }

    /// Smooths one tile (`padded`, compacted as `local`) with every pass
    /// of the job and the policies around each: pass i reads the tile
    /// grown by the kernel's radius once per pass still to come, and what
    /// lies outside the raster holds no class in every pass. Returns the
    /// last pass's compaction and output.
    fn smooth(
        &self,
        method: &dyn ClassSmoother,
        job: &SmoothJob,
        tile: &tiles::Tile,
        mut local: TileCompaction,
        mut padded: Vec<u16>,
        mut votes: Option<Vec<u16>>,
    ) -> Result<(TileCompaction, Vec<u16>)> {
        let r = job.kernel.radius();
        let (mut w, mut h) = (tile.padded_width, tile.padded_height);
        // The part of the buffer inside the raster: x0, y0, x1, y1.
        let mut raster = [
            tile.pad_left,
            tile.pad_top,
            tile.pad_left + tile.source.width,
            tile.pad_top + tile.source.height,
        ];
        let passes = job.policies.iterations.max(1);
        let mut pass = 1;
        loop {
            let class_tile = ClassTile {
                width: w,
                height: h,
                halo: r,
                n_classes: local.len(),
                classes: &padded,
            };
            let weights: Vec<u32> = local
                .globals
                .iter()
                .map(|&g| self.class_weights[g as usize])
                .collect();
            let params = SmoothParams {
                kernel: &job.kernel,
                class_weights: &weights,
                fill_nodata: job.fill_nodata,
                ties: job.policies.ties,
                confidence: votes.as_deref(),
            };
            let mut out = vec![0u16; class_tile.output_len()];
            method.smooth(&class_tile, &params, &mut out)?;
            let keep: Vec<bool> = local
                .globals
                .iter()
                .map(|&g| self.keep[g as usize])
                .collect();
            let taps = match job.policies.only_isolated {
                Some(_) => crate::method::naive::taps(&class_tile, &params),
                None => Vec::new(),
            };
            let rules = Settle {
                keep: &keep,
                weights: &weights,
                only_isolated: job.policies.only_isolated,
                taps: &taps,
            };
            policy::settle(&class_tile, &rules, &mut out);
            if pass == passes {
                return Ok((local, out));
            }
            pass += 1;
            let (ow, oh) = (class_tile.output_width(), class_tile.output_height());
            let [x0, y0, x1, y1] = raster;
            raster = [
                x0.saturating_sub(r),
                y0.saturating_sub(r),
                x1.saturating_sub(r).min(ow),
                y1.saturating_sub(r).min(oh),
            ];
            let mut next = Vec::new();
            local = policy::next_iteration(&out, ow, raster, &local, self.undecided, &mut next)?;
            // A pixel's confidence stays with it: the next pass's window
            // of weights is this one's less the radius each side.
            votes = votes.map(|v| {
                v.chunks_exact(w)
                    .skip(r)
                    .take(oh)
                    .flat_map(|row| row[r..r + ow].iter().copied())
                    .collect()
            });
            (padded, w, h) = (next, ow, oh);
        }
    }
}

/// Fails where a pixel has no class (NO_CLASS left by the code map) and
/// no code is free to mark nodata.
fn check_nodata(out: &RowsMut, nodata: Option<u16>) -> Result<()> {
    if nodata.is_none() && out.contains(NO_CLASS) {
        return Err(Error::input(
            "a pixel has no class but every code is taken, so none can mark nodata",
        )
        .hint("set a nodata value on the input (gdal_edit.py -a_nodata)"));
    }
    Ok(())
}

/// Smooths an in-memory raster in one call, through the same tiles as a
/// file (`job.tile`): what tests compare methods, devices and tile sizes
/// with (a tile as large as the raster gives the untiled result).
pub fn smooth_in_memory(
    input: &MemRaster,
    job: &SmoothJob,
    method: &dyn ClassSmoother,
) -> Result<MemRaster> {
    smooth_in_memory_with_stats(input, job, method).map(|(out, _)| out)
}

/// [`smooth_in_memory`] with the run's figures.
pub fn smooth_in_memory_with_stats(
    input: &MemRaster,
    job: &SmoothJob,
    method: &dyn ClassSmoother,
) -> Result<(MemRaster, RunStats)> {
    let grid = job.grid(input.width, input.height)?;
    let (ow, oh) = grid.output_size();
    let mut out = MemRaster::filled(ow, oh, 0);
    let stats = smooth(
        &mut input.clone(),
        &mut out,
        job,
        method,
        &Progress::hidden(),
    )?;
    Ok((out, stats))
}

#[cfg(test)]
mod tests {

    #[test]
    fn host_tiles_in_flight_grow_with_the_threads() {
        assert_eq!(pool_depth(2, 1), 2);
        assert_eq!(pool_depth(2, 16), 8);
        assert_eq!(pool_depth(2, 64), 32);
        // Never fewer than the method asks for.
        assert_eq!(pool_depth(9, 16), 9);
    }

    /// Tiles up to 1024 a side always go to the pool; 2048² ones where
    /// three are in flight (two to four threads), not where nine are
    /// (16 threads); 4096² ones never.
    #[test]
    fn large_tiles_go_to_the_pool_only_where_few_are_in_flight() {
        assert!(pools_tiles(ON_POOL_MAX_TILE, 2, 64));
        assert!(pools_tiles(2048, 2, 2));
        assert!(pools_tiles(2048, 2, 4));
        assert!(!pools_tiles(2048, 2, 16));
        assert!(!pools_tiles(4096, 2, 2));
        assert!(!pools_tiles(usize::MAX, 2, 2));
    }
    use super::*;
    use crate::kernel::KernelSpec;
    use crate::method::CodeTile;
    use crate::method::naive::NaiveHost;
    use smooth_in_memory_with_stats as run;

    fn job(classes: ClassTable, tile: usize) -> SmoothJob {
        SmoothJob {
            kernel: "gaussian:1".parse::<KernelSpec>().unwrap().build().unwrap(),
            class_weights: vec![1; classes.len()],
            output_nodata: classes.nodata(),
            classes,
            border: Border::Same,
            fill_nodata: false,
            tile,
            policies: Policies::default(),
        }
    }

    #[test]
    fn every_code_table_gives_the_scanned_result_and_counts_the_classes() {
        // Codes 3, 9, 200 and nodata 50 in blobs, one code per 7×5 cell.
        let (w, h) = (37, 29);
        let data: Vec<u16> = (0..w * h)
            .map(|i| [3, 9, 50, 200, 9][((i % w) / 7 + (i / w) / 5) % 5])
            .collect();
        let input = MemRaster::new(w, h, data.clone());
        let scanned = ClassTable::from_codes(&data, Some(50)).unwrap();
        assert_eq!(scanned.len(), 3);
        let every = ClassTable::every_code(255, Some(50)).unwrap();
        for tile in [8, 64] {
            let (want, a) = run(&input, &job(scanned.clone(), tile), &NaiveHost).unwrap();
            let (got, b) = run(&input, &job(every.clone(), tile), &NaiveHost).unwrap();
            assert_eq!(got, want, "tile {tile}");
            assert_eq!((a.classes_present, b.classes_present), (3, 3));
        }
    }

    /// A host method behind a switch: whether the engine may run its tiles
    /// on the pool, and a tile on which it fails.
    struct Switched {
        on_pool: bool,
        fail_at_row: Option<usize>,
        tiles: std::sync::atomic::AtomicUsize,
        /// Tiles smoothed on a thread of the rayon pool.
        on_workers: std::sync::atomic::AtomicUsize,
    }

    impl ClassSmoother for Switched {
        fn name(&self) -> String {
            "switched".into()
        }
        fn is_exact(&self) -> bool {
            true
        }
        fn host_parallel(&self) -> bool {
            self.on_pool
        }
        fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
            self.tiles
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if rayon::current_thread_index().is_some() {
                self.on_workers
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            // Tiles of different sizes finish out of order on the pool.
            std::thread::sleep(Duration::from_micros(50 * (tile.height % 7) as u64));
            if self.fail_at_row == Some(tile.height) {
                return Err(Error::input("this tile fails"));
            }
            NaiveHost.smooth(tile, params, out)
        }
    }

    fn switched(on_pool: bool, fail_at_row: Option<usize>) -> Switched {
        Switched {
            on_pool,
            fail_at_row,
            tiles: Default::default(),
            on_workers: Default::default(),
        }
    }

    /// Tiles started on the pool, several at once, give what tiles run one
    /// at a time give, in place, with the same figures.
    #[test]
    fn tiles_on_the_pool_match_tiles_one_at_a_time() {
        let (w, h) = (83, 61);
        let data: Vec<u16> = (0..w * h)
            .map(|i| [4, 8, 15, 16, 23][((i % w) / 3 + (i / w) / 4 + i % 5) % 5])
            .collect();
        let input = MemRaster::new(w, h, data.clone());
        let classes = ClassTable::from_codes(&data, None).unwrap();
        for tile in [9, 16, 32] {
            let pooled = |on_pool| {
                let (out, stats) = run(
                    &input,
                    &job(classes.clone(), tile),
                    &switched(on_pool, None),
                )
                .unwrap();
                (
                    out,
                    stats.totals.tiles,
                    stats.totals.pixels,
                    stats.classes_present,
                )
            };
            assert_eq!(pooled(true), pooled(false), "tile {tile}");
        }
        assert!(NaiveHost.host_parallel());
    }

    /// A tile that fails on the pool stops the run with its error.
    #[test]
    fn a_failing_tile_on_the_pool_stops_the_run() {
        let (w, h) = (40, 100);
        let input = MemRaster::new(w, h, (0..w * h).map(|i| (i % 3) as u16).collect());
        let classes = ClassTable::from_codes(&input.data, None).unwrap();
        // Tiles of 10 rows plus a halo of 3 on each side: inner tiles are 16 high.
        let method = switched(true, Some(16));
        let err = run(&input, &job(classes, 10), &method).unwrap_err();
        assert!(err.to_string().contains("this tile fails"), "{err}");
        let ran = method.tiles.load(std::sync::atomic::Ordering::Relaxed);
        assert!(ran < 40, "{ran} tiles ran after the failure");
    }

    /// Called from inside a rayon job (here on a one-thread pool, where a
    /// waiting caller would leave nobody to run its tiles), the engine runs
    /// host tiles one at a time and finishes.
    #[test]
    fn a_run_inside_a_rayon_job_finishes() {
        let (w, h) = (30, 30);
        let input = MemRaster::new(w, h, (0..w * h).map(|i| (i % 4) as u16).collect());
        let classes = ClassTable::from_codes(&input.data, None).unwrap();
        let job = job(classes, 8);
        let want = run(&input, &job, &switched(true, None)).unwrap().0;
        let (done, result) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            let _ = done.send(pool.install(|| run(&input, &job, &switched(true, None))));
        });
        let got = result
            .recv_timeout(Duration::from_secs(60))
            .expect("the run inside a one-thread pool did not finish")
            .unwrap()
            .0;
        assert_eq!(got, want);
    }

    /// Small tiles go to the pool; tiles too large for
    /// [`ON_POOL_MAX_PIXELS`] stay one at a time on the calling thread
    /// (memory), as do all tiles of a method that is not host-parallel.
    #[test]
    fn only_small_host_tiles_go_to_the_pool() {
        let (w, h) = (ON_POOL_MAX_TILE + 4, 12);
        let input = MemRaster::new(w, h, (0..w * h).map(|i| (i / 7 % 3) as u16).collect());
        let classes = ClassTable::from_codes(&input.data, None).unwrap();
        let workers = |tile, on_pool| {
            let method = switched(on_pool, None);
            let (_, stats) = run(&input, &job(classes.clone(), tile), &method).unwrap();
            let on = method.on_workers.load(std::sync::atomic::Ordering::Relaxed);
            (stats.totals.tiles, on)
        };
        assert_eq!(workers(ON_POOL_MAX_TILE / 2, true), (3, 3));
        assert_eq!(workers(4097, true), (1, 0));
        assert_eq!(workers(ON_POOL_MAX_TILE / 2, false), (3, 0));
    }

    /// A device method that compacts on its device and fails at its fifth
    /// tile: a run with both ends in memory (bands on several threads)
    /// returns that error rather than hang or panic, and one through the
    /// window interface does too.
    #[test]
    fn a_failing_tile_stops_a_run_in_bands() {
        struct FailsAtFifth(std::sync::atomic::AtomicUsize);
        impl ClassSmoother for FailsAtFifth {
            fn name(&self) -> String {
                "fails-at-fifth".into()
            }
            fn is_exact(&self) -> bool {
                true
            }
            fn smooth(
                &self,
                tile: &ClassTile,
                params: &SmoothParams,
                out: &mut [u16],
            ) -> Result<()> {
                NaiveHost.smooth(tile, params, out)
            }
            fn runs_on(&self) -> Option<crate::device::DeviceKind> {
                Some(crate::device::DeviceKind::Cpu)
            }
            fn takes_codes(&self) -> bool {
                true
            }
            fn submit_codes(
                &self,
                tile: &CodeTile,
                params: &SmoothParams,
            ) -> Result<(TileCompaction, Box<dyn PendingTile + '_>)> {
                let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n == 4 {
                    return Err(Error::input("the fifth tile fails"));
                }
                crate::method::submit_compacted(self, tile, params)
            }
        }
        let (w, h) = (64, 64);
        let input = MemRaster::new(w, h, (0..w * h).map(|i| (i / 5 % 3) as u16).collect());
        let classes = ClassTable::from_codes(&input.data, None).unwrap();
        let job = job(classes, 16);
        let method = FailsAtFifth(Default::default());
        let err = run(&input, &job, &method).unwrap_err();
        assert!(err.to_string().contains("fifth tile"), "{err}");
        // The same method through windows gives the same error; counting
        // from past the fifth it never fails, and the bands give the
        // host's bytes (tiles that fall back to host compaction included).
        let method = FailsAtFifth(Default::default());
        let mut windows = Windows(input.clone());
        let mut out = Windows(MemRaster::filled(w, h, 0));
        let err = smooth(&mut windows, &mut out, &job, &method, &Progress::hidden()).unwrap_err();
        assert!(err.to_string().contains("fifth tile"), "{err}");
        let method = FailsAtFifth(5.into());
        let want = smooth_in_memory(&input, &job, &NaiveHost).unwrap();
        assert_eq!(smooth_in_memory(&input, &job, &method).unwrap(), want);
    }

    /// A raster in memory behind the window interface alone.
    struct Windows(MemRaster);

    impl ClassSource for Windows {
        fn size(&self) -> (usize, usize) {
            self.0.size()
        }
        fn read(&mut self, window: tiles::Rect, buf: &mut [u16]) -> Result<()> {
            self.0.read(window, buf)
        }
    }

    impl ClassSink for Windows {
        fn write(&mut self, window: tiles::Rect, codes: &[u16]) -> Result<()> {
            self.0.write(window, codes)
        }
    }
}
