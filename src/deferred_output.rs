//! Creating the output GeoTIFF off the critical path.
//!
//! GDAL reads an input's coordinate system, and writes an output's as
//! GeoTIFF keys, through PROJ's SQLite database: tens of milliseconds of CPU
//! that the single-threaded start of a run (open, class scan) would wait
//! for. A [`DeferredOutput`] does all of it on one thread of its own (one
//! PROJ context, so the database is opened once): it opens a second handle
//! of the input (GDAL handles are not thread-safe; distinct ones are), reads
//! its coordinate system, waits for the rest of the [`OutputSpec`], creates
//! the [`OutputRaster`] and writes its header. The caller meanwhile scans
//! and starts the engine. Tiles that come before the output is ready are
//! held in memory (up to [`HOLD_BYTES`], then the writer waits), so a slow
//! start of the output does not stall the computation.
//!
//! The output keeps [`OutputRaster`]'s guarantees: a temp file beside the
//! target, renamed by [`DeferredOutput::finish`] only; a run that fails or
//! never sends the spec leaves nothing behind (dropping joins the thread
//! and drops what it made).

use crate::engine::ClassSink;
use crate::error::{Error, Result};
use crate::raster::{self, OutputRaster, OutputSpec};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Instant;
use tiles::Rect;

/// Most bytes of tiles held while the output is being made.
pub const HOLD_BYTES: usize = 64 << 20;

/// An output being created on a scoped thread; a [`ClassSink`] that holds
/// tiles until it is ready.
pub struct DeferredOutput<'scope> {
    making: Option<ScopedJoinHandle<'scope, Result<Made>>>,
    made: Option<OutputRaster>,
    /// When the thread started and finished making the output.
    span: Option<(Instant, Instant)>,
    /// Tiles written before the output was ready, in order.
    held: Vec<(Rect, Vec<u16>)>,
    held_bytes: usize,
}

/// What the thread hands back: the output and when it started and finished.
type Made = (OutputRaster, Instant, Instant);

impl<'scope> DeferredOutput<'scope> {
    /// Starts the thread: it reads the coordinate system of `srs_of` (the
    /// input), then creates `target` from the spec sent on the returned
    /// sender, with that coordinate system in place of `spec.projection`.
    /// Dropping the sender unsent cancels the output.
    pub fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        target: PathBuf,
        srs_of: PathBuf,
    ) -> (Self, Sender<OutputSpec>) {
        let (send, spec): (Sender<OutputSpec>, Receiver<OutputSpec>) = channel();
        let making = scope.spawn(move || {
            let start = Instant::now();
            let projection = raster::open(&srs_of)?.projection();
            let mut spec = spec
                .recv()
                .map_err(|_| Error::new("output cancelled before it was created"))?;
            spec.projection = projection;
            let mut out = OutputRaster::create(&target, &spec)?;
            out.write_header()?;
            Ok((out, start, Instant::now()))
        });
        let output = DeferredOutput {
            making: Some(making),
            made: None,
            span: None,
            held: Vec::new(),
            held_bytes: 0,
        };
        (output, send)
    }

    /// The output, once its thread is done (waits for it the first time,
    /// then writes the tiles held meanwhile).
    fn output(&mut self) -> Result<&mut OutputRaster> {
        if let Some(making) = self.making.take() {
            let (made, start, end) = making
                .join()
                .map_err(|_| Error::new("the thread creating the output panicked"))??;
            self.made = Some(made);
            self.span = Some((start, end));
        }
        let out = self
            .made
            .as_mut()
            .ok_or_else(|| Error::new("the output could not be created"))?;
        for (window, codes) in self.held.drain(..) {
            out.write(window, &codes)?;
        }
        self.held_bytes = 0;
        Ok(out)
    }

    /// Waits for the output, writes the tiles held, closes it and moves it
    /// onto the target. Returns when the thread started and finished making
    /// the output.
    pub fn finish(mut self) -> Result<(Instant, Instant)> {
        self.output()?;
        self.made.take().expect("output made").finish()?;
        Ok(self.span.expect("set with the output"))
    }
}

impl Drop for DeferredOutput<'_> {
    fn drop(&mut self) {
        // An unfinished output: wait for its thread, then drop what it made
        // (OutputRaster's own drop removes the temp file).
        if let Some(making) = self.making.take() {
            let _ = making.join();
        }
    }
}

impl ClassSink for DeferredOutput<'_> {
    fn write(&mut self, window: Rect, codes: &[u16]) -> Result<()> {
        let bytes = std::mem::size_of_val(codes);
        let pending = self.making.as_ref().is_some_and(|m| !m.is_finished());
        if pending && self.held_bytes + bytes <= HOLD_BYTES {
            self.held.push((window, codes.to_vec()));
            self.held_bytes += bytes;
            return Ok(());
        }
        self.output()?.write(window, codes)
    }
}
