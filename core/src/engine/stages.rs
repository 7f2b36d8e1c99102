//! The stages of a tile's trip through the engine's pipeline
//! ([`crate::pipeline::run_deferred`]), one type each: the [`Reader`] (a
//! source window, or a tile staged and submitted from a raster in memory),
//! the [`Submitter`] (compaction and the method, on the pool or with the
//! policies around it), the [`Finisher`] (waiting and mapping back to
//! codes) and the [`Writer`]; with [`Paths`], which path a run's tiles
//! take, and [`CodeSubmit`], a tile handed over as its window of codes.

use super::{
    Around, Flight, InFlight, Read, RunStats, RunTally, SmoothJob, TileWork, check_nodata,
    pool_depth, pools_tiles,
};
use crate::classes::{NO_GLOBAL8, TileCompaction};
use crate::error::{Error, Result};
use crate::io::{ClassSink, ClassSource, RowsMut};
use crate::method::{ClassSmoother, ClassTile, CodeTile, Finished, SmoothParams};
use crate::pipeline;
use crate::progress::Progress;
use std::time::{Duration, Instant};
use tiles::TileGrid;

/// Where a run's codes go: an output in memory, or else the sink.
pub(super) type OutputEnds<'o> = (Option<&'o mut [u16]>, Option<&'o mut dyn ClassSink>);

/// The output in memory where results may be mapped straight into it
/// (`in_memory`: a device method without policies around it), checked to
/// hold `len` codes; else the sink.
pub(super) fn output_in_place(
    sink: &mut dyn ClassSink,
    in_memory: bool,
    len: usize,
) -> Result<OutputEnds<'_>> {
    if !(in_memory && sink.resident_mut().is_some()) {
        return Ok((None, Some(sink)));
    }
    let all = sink.resident_mut().expect("checked above");
    if all.len() != len {
        return Err(
            Error::usage("the output in memory is not the size of the run's output")
                .hint("size it by SmoothJob::grid(..).output_size()"),
        );
    }
    Ok((Some(all), None))
}

/// Buffers that go back to the stage that fills them, so that tiles after
/// the first few allocate nothing. A fresh tile-sized buffer is pages the
/// kernel faults in and zeroes on first touch: the tiles' fresh outputs
/// and padded windows were 7 % of the CPU samples of a 105 Mpx `--exact`
/// run on the host (decision 0039). What a taken buffer holds is stale.
pub(super) struct Recycler {
    back: crossbeam_channel::Sender<Vec<u16>>,
    free: crossbeam_channel::Receiver<Vec<u16>>,
}

impl Recycler {
    pub(super) fn new() -> Self {
        let (back, free) = crossbeam_channel::unbounded();
        Recycler { back, free }
    }

    /// A buffer given back earlier, or else a new empty one.
    pub(super) fn take(&self) -> Vec<u16> {
        self.free.try_recv().unwrap_or_default()
    }

    /// A buffer taken for `len` values, each set to `value`.
    pub(super) fn take_filled(&self, len: usize, value: u16) -> Vec<u16> {
        let mut buffer = self.take();
        buffer.clear();
        buffer.resize(len, value);
        buffer
    }

    pub(super) fn give(&self, buffer: Vec<u16>) {
        // Never disconnected: this holds both ends.
        let _ = self.back.send(buffer);
    }
}

/// The writing stage: a tile's codes into the sink (none where they went
/// into an output in memory), its buffer back to the stage that fills it.
pub(super) struct Writer<'o> {
    pub(super) sink: Option<&'o mut dyn ClassSink>,
    pub(super) outs: &'o Recycler,
    /// Time spent writing.
    pub(super) time: Duration,
}

impl<'o> Writer<'o> {
    /// Writes into `sink` (none: the output lies in memory, written in
    /// place), giving each tile's buffer back to `outs`.
    pub(super) fn new(sink: Option<&'o mut dyn ClassSink>, outs: &'o Recycler) -> Self {
        Writer {
            sink,
            outs,
            time: Duration::ZERO,
        }
    }

    pub(super) fn write(
        &mut self,
        tile: tiles::Tile,
        codes: Option<Vec<u16>>,
        progress: &Progress,
    ) -> Result<()> {
        if let (Some(codes), Some(sink)) = (codes, self.sink.as_deref_mut()) {
            let t0 = Instant::now();
            sink.write(tile.output, &codes)?;
            self.time += t0.elapsed();
            self.outs.give(codes);
        }
        progress.inc(1);
        Ok(())
    }
}

/// Which path a run's tiles take, decided once per run.
#[derive(Clone, Copy)]
pub(super) struct Paths {
    /// Host methods: each tile a job on the rayon pool ([`TileWork`]).
    pub(super) on_pool: bool,
    /// Methods that compact tiles on their device get the source windows.
    pub(super) takes_codes: bool,
    /// Device methods map their outputs to codes as they copy them out.
    pub(super) on_device: bool,
}

impl Paths {
    /// What the pipeline knows of the tiles in flight: a pool job's tile
    /// is done once its job is over, and the engine may wait for any job
    /// (`jobs_over` hears each end); a method's tiles go in order.
    pub(super) fn running<'r>(
        self,
        jobs_over: &'r crossbeam_channel::Receiver<()>,
    ) -> pipeline::Running<impl Fn(&Flight) -> bool, impl FnMut() -> bool + 'r> {
        pipeline::Running {
            done: |flight: &Flight| flight.done(),
            wait_any: move || self.on_pool && jobs_over.recv().is_ok(),
        }
    }

    /// How many tiles the method keeps in flight beyond the pipeline's.
    /// Tiles the reader submitted (`resident`) wait in its channel already.
    pub(super) fn depth(&self, method: &dyn ClassSmoother, resident: bool) -> usize {
        if resident {
            method.depth().saturating_sub(pipeline::PIPELINE_DEPTH)
        } else if self.on_pool {
            pool_depth(method.depth(), rayon::current_num_threads())
        } else {
            method.depth()
        }
    }

    pub(super) fn of(job: &SmoothJob, method: &dyn ClassSmoother, around: bool) -> Self {
        // Not from inside a rayon job: the calling thread waits for its
        // tiles without working, and on a one-thread pool nobody else
        // would run them.
        let on_pool = method.host_parallel()
            && !around
            && rayon::current_thread_index().is_none()
            && pools_tiles(job.tile, method.depth(), rayon::current_num_threads());
        // Where every global index fits a byte below NO_GLOBAL8: up to
        // 255 classes, so that a batch's table of every Byte code but
        // nodata (`every_code`) is staged too. Held to fewer, every tile
        // of such a batch was compacted on the host, on a GPU node 13 % of
        // the CPU of a compressible set (issue 39).
        let takes_codes =
            method.takes_codes() && !around && !on_pool && job.classes.len() <= NO_GLOBAL8 as usize;
        Paths {
            on_pool,
            takes_codes,
            on_device: method.runs_on().is_some(),
        }
    }
}

/// Hands a tile to the method as its source window of codes
/// ([`ClassSmoother::submit_codes`]).
pub(super) struct CodeSubmit<'a> {
    pub(super) grid: &'a TileGrid,
    pub(super) lut: &'a crate::classes::CodeLut,
    pub(super) method: &'a dyn ClassSmoother,
    pub(super) params: &'a SmoothParams<'a>,
}

impl<'a> CodeSubmit<'a> {
    /// Submits `tile`, whose source window starts at `codes` with rows
    /// `stride` apart.
    pub(super) fn submit(
        &self,
        tile: &tiles::Tile,
        codes: &[u16],
        stride: usize,
    ) -> Result<InFlight<'a>> {
        crate::interrupt::check()?;
        let t0 = Instant::now();
        let code_tile = CodeTile {
            tile,
            halo: self.grid.halo(),
            codes,
            stride,
            lut: self.lut,
        };
        let (local, pending) = self.method.submit_codes(&code_tile, self.params)?;
        Ok(InFlight {
            local,
            pending,
            submit_time: t0.elapsed(),
        })
    }
}

/// The reader stage: each tile's source window (and its votes), or, from a
/// raster in memory, the tile staged in place and submitted.
pub(super) struct Reader<'a, 's, 'c> {
    pub(super) source: Option<&'s mut dyn ClassSource>,
    pub(super) confidence: Option<&'c mut dyn ClassSource>,
    pub(super) resident: Option<&'s [u16]>,
    pub(super) width: usize,
    pub(super) codes: &'a CodeSubmit<'a>,
    pub(super) raws: &'a Recycler,
    /// Time spent reading.
    pub(super) time: Duration,
}

impl<'a> Reader<'a, '_, '_> {
    pub(super) fn read(&mut self, tile: tiles::Tile) -> Result<Read<'a>> {
        let Some(source) = self.source.as_deref_mut() else {
            // Nothing to read: the reader stages the tile from the raster
            // in place and submits it, so that staging the next tiles
            // overlaps waiting for and mapping this one.
            let all = self.resident.expect("a source or the raster");
            let at = &all[tile.source.y * self.width + tile.source.x..];
            return self
                .codes
                .submit(&tile, at, self.width)
                .map(Read::Submitted);
        };
        let t0 = Instant::now();
        let mut raw = self.raws.take();
        raw.resize(tile.source.area() as usize, 0);
        source.read(tile.source, &mut raw)?;
        // Votes weigh nothing beyond the raster.
        let weights = match self.confidence.as_deref_mut() {
            Some(c) => {
                let mut read = vec![0u16; raw.len()];
                c.read(tile.source, &mut read)?;
                let mut padded = Vec::new();
                tile.pad(&read, 0, &mut padded);
                Some(padded)
            }
            None => None,
        };
        self.time += t0.elapsed();
        Ok(Read::Window(raw, weights))
    }
}

/// The submitting stage: a tile's source window compacted and handed to the
/// method (on the pool for host methods, with the policies around it where
/// they apply), unless the reader submitted it already.
pub(super) struct Submitter<'a> {
    pub(super) codes: &'a CodeSubmit<'a>,
    pub(super) paths: Paths,
    pub(super) job: &'a SmoothJob,
    pub(super) class_weights: &'a [u32],
    pub(super) around: Option<&'a Around>,
    pub(super) fill: u16,
    pub(super) tie: u16,
    /// Where the source windows, the padded tiles and the outputs go back.
    pub(super) raws: &'a Recycler,
    pub(super) paddeds: &'a Recycler,
    pub(super) outs: &'a Recycler,
    /// What each pool job sends when it is over.
    pub(super) job_over: &'a crossbeam_channel::Sender<()>,
    /// Time spent padding and compacting.
    pub(super) time: Duration,
}

impl<'a> Submitter<'a> {
    pub(super) fn submit<'s>(
        &mut self,
        scope: &rayon::Scope<'s>,
        tile: tiles::Tile,
        read: Read<'a>,
    ) -> Result<Flight<'a>>
    where
        'a: 's,
    {
        let (raw, votes) = match read {
            Read::Submitted(flight) => return Ok(Flight::Method(flight)),
            Read::Window(raw, votes) => (raw, votes),
        };
        if self.paths.takes_codes {
            let flight = self.codes.submit(&tile, &raw, tile.source.width)?;
            self.raws.give(raw);
            return Ok(Flight::Method(flight));
        }
        crate::interrupt::check()?;
        let (method, lut) = (self.codes.method, self.codes.lut);
        if self.paths.on_pool {
            let work = TileWork {
                method,
                job: self.job,
                lut,
                class_weights: self.class_weights,
                halo: self.codes.grid.halo(),
                fill: self.fill,
                tie: self.tie,
                raws: self.raws,
                paddeds: self.paddeds,
                outs: self.outs,
                job_over: self.job_over,
            };
            return Ok(Flight::Pooled(work.spawn(scope, tile, raw)));
        }
        let mut padded = self.paddeds.take();
        let t0 = Instant::now();
        let local = TileCompaction::pad_and_compact(&raw, lut, &tile, &mut padded);
        self.time += t0.elapsed();
        self.raws.give(raw);
        if let Some(around) = self.around {
            let t0 = Instant::now();
            let (local, out) = around.smooth(method, self.job, &tile, local, padded, votes)?;
            return Ok(Flight::Method(InFlight {
                local,
                pending: Box::new(Finished(out)),
                submit_time: t0.elapsed(),
            }));
        }
        let weights = local.weights(self.class_weights);
        let class_tile = ClassTile {
            width: tile.padded_width,
            height: tile.padded_height,
            halo: self.codes.grid.halo(),
            n_classes: local.len(),
            classes: &[],
        };
        let t0 = Instant::now();
        let pending = method.submit(
            &ClassTile {
                classes: &padded,
                ..class_tile
            },
            &SmoothParams {
                class_weights: &weights,
                ..*self.codes.params
            },
        )?;
        self.paddeds.give(padded);
        Ok(Flight::Method(InFlight {
            local,
            pending,
            submit_time: t0.elapsed(),
        }))
    }
}

/// The finishing stage: a tile waited for and mapped back to codes, into
/// its place in an output in memory or into a buffer for the writer.
pub(super) struct Finisher<'a, 'o> {
    pub(super) job: &'a SmoothJob,
    pub(super) fill: u16,
    pub(super) tie: u16,
    pub(super) on_device: bool,
    pub(super) in_place: Option<&'o mut [u16]>,
    pub(super) out_w: usize,
    pub(super) outs: &'a Recycler,
    pub(super) tally: RunTally,
    /// Pool jobs' compaction, summed over their threads.
    pub(super) pooled_prepare: Duration,
    pub(super) map_time: Duration,
}

impl Finisher<'_, '_> {
    /// The run's figures, with each stage's busy time.
    pub(super) fn stats(self, reader: &Reader, submitter: &Submitter, writer: &Writer) -> RunStats {
        let mut stats = self.tally.stats();
        stats.stages.read = reader.time;
        stats.stages.prepare = submitter.time + self.pooled_prepare;
        stats.stages.map_back = self.map_time;
        stats.stages.sink = writer.time;
        stats
    }

    pub(super) fn finish(&mut self, tile: tiles::Tile, flight: Flight) -> Result<Option<Vec<u16>>> {
        let (job, fill, tie) = (self.job, self.fill, self.tie);
        let flight = match flight {
            Flight::Method(flight) => flight,
            Flight::Pooled(pooled) => {
                let t0 = Instant::now();
                let done = pooled.wait()?;
                self.tally.count(&tile, &done.local, job, fill, tie);
                self.tally.timed(Duration::ZERO, t0.elapsed());
                self.pooled_prepare += done.prepare;
                self.map_time += done.map_back;
                return Ok(Some(done.out));
            }
        };
        let map = self.tally.count(&tile, &flight.local, job, fill, tie);
        let t0 = Instant::now();
        if let Some(all) = self.in_place.as_deref_mut() {
            // Waited for and mapped into its place in the output.
            let rows = RowsMut::window(all, self.out_w, tile.output);
            flight.pending.wait_codes(&map, rows)?;
            self.tally.timed(flight.submit_time, t0.elapsed());
            check_nodata(
                &RowsMut::window(all, self.out_w, tile.output),
                job.output_nodata,
            )?;
            return Ok(None);
        }
        let mut out = self.outs.take();
        let len = tile.output.area() as usize;
        let (waited, mapped) = if flight.pending.ready() || !self.on_device {
            // Host results (or a device's with the outputs copied out
            // first): waiting and mapping are apart. The recycled buffer
            // taken above is dropped, so that the sink's returns do not
            // pile up in the channel.
            out = flight.pending.into_output(len)?;
            let waited = t0.elapsed();
            map.apply(&mut out);
            (waited, t0.elapsed() - waited)
        } else {
            // The wait and the copy out, mapped on the way.
            out.resize(len, 0);
            let rows = RowsMut::contiguous(&mut out, tile.output.width);
            flight.pending.wait_codes(&map, rows)?;
            (t0.elapsed(), Duration::ZERO)
        };
        self.tally.timed(flight.submit_time, waited);
        self.map_time += mapped;
        check_nodata(
            &RowsMut::contiguous(&mut out, tile.output.width),
            job.output_nodata,
        )?;
        Ok(Some(out))
    }
}
