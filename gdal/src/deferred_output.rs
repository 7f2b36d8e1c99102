//! Creating the output GeoTIFF off the critical path.
//!
//! GDAL reads an input's coordinate system, and writes an output's as
//! GeoTIFF keys, through PROJ's SQLite database: tens of milliseconds of CPU
//! that the single-threaded start of a run (open, class scan) would wait
//! for. A [`DeferredOutput`] does all of it on one thread of its own (one
//! PROJ context, so the database is opened once): it opens a second handle
//! of the input (GDAL handles are not thread-safe; distinct ones are), reads
//! its coordinate system, waits for the rest of the [`OutputSpec`], creates
//! the [`OutputRaster`] and writes its header. The thread is one of
//! [`crate::threads`]', which outlive the output, so that a batch of
//! outputs opens PROJ's database once per thread, not once per output. The caller meanwhile scans
//! and starts the engine. Tiles that come before the output is ready are
//! held in memory (up to [`HOLD_BYTES`], then the writer waits), so a slow
//! start of the output does not stall the computation.
//!
//! The output keeps [`OutputRaster`]'s guarantees: a temp file beside the
//! target, renamed by [`DeferredOutput::finish`] only; a run that fails or
//! never sends the spec leaves nothing behind (dropping waits for the
//! thread's job and drops what it made).

use crate::class_raster;
use crate::output_raster::{OutputRaster, OutputSpec};
use mapfilter_core::error::{Error, Result};
use mapfilter_core::io::ClassSink;
use mapfilter_core::output::Target;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::Instant;
use tiles::Rect;

/// Most bytes of tiles held while the output is being made.
pub const HOLD_BYTES: usize = 64 << 20;

/// An output being created on another thread; a [`ClassSink`] that holds
/// tiles until it is ready.
pub struct DeferredOutput {
    /// Where the spec goes; dropped once sent, or before waiting for the
    /// thread, so that it never waits for a spec that cannot come.
    send_spec: Option<Sender<OutputSpec>>,
    /// The thread's answer, until taken.
    making: Option<Receiver<Result<Made>>>,
    made: Option<OutputRaster>,
    /// The thread's error, seen by a write that did not wait for it.
    failed: Option<Error>,
    /// When the thread started and finished making the output.
    span: Option<(Instant, Instant)>,
    /// Tiles written before the output was ready, in order.
    held: Vec<(Rect, Vec<u16>)>,
    held_bytes: usize,
}

/// What the thread hands back: the output and when it started and finished.
type Made = (OutputRaster, Instant, Instant);

impl DeferredOutput {
    /// Starts the thread: it reads the coordinate system of `srs_of` (the
    /// input), then creates `target` from the spec given to
    /// [`DeferredOutput::make`], with that coordinate system in place of
    /// `spec.projection`. Without a spec nothing is created.
    pub fn spawn(target: Target, srs_of: PathBuf) -> Self {
        Self::spawn_with(
            target,
            move || Ok(class_raster::open(&srs_of)?.projection()),
        )
    }

    /// [`DeferredOutput::spawn`] with the coordinate system known already
    /// (as GDAL gives it for the input), so the thread opens no input: for
    /// callers that make many outputs of one input (a batch).
    pub fn spawn_with_projection(target: Target, projection: String) -> Self {
        Self::spawn_with(target, move || Ok(projection))
    }

    fn spawn_with(
        target: Target,
        projection: impl FnOnce() -> Result<String> + Send + 'static,
    ) -> Self {
        let (send, spec): (Sender<OutputSpec>, Receiver<OutputSpec>) = channel();
        let making = crate::threads::run(move || {
            let start = Instant::now();
            let projection = projection()?;
            let mut spec = spec
                .recv()
                .map_err(|_| Error::io("output cancelled before it was created"))?;
            spec.projection = projection;
            let mut out = OutputRaster::create(&target, &spec)?;
            out.write_header()?;
            Ok((out, start, Instant::now()))
        });
        DeferredOutput {
            send_spec: Some(send),
            making: Some(making),
            made: None,
            failed: None,
            span: None,
            held: Vec::new(),
            held_bytes: 0,
        }
    }

    /// Hands the thread the output's spec (the first call only).
    pub fn make(&mut self, spec: OutputSpec) {
        if let Some(send) = self.send_spec.take() {
            // A thread that has failed already reports it when waited for.
            let _ = send.send(spec);
        }
    }

    /// The output, once its thread is done (waits for it the first time,
    /// then writes the tiles held meanwhile).
    fn output(&mut self) -> Result<&mut OutputRaster> {
        self.send_spec = None;
        if let Some(making) = self.making.take() {
            let answer = making.recv();
            self.take(answer)?;
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let out = self
            .made
            .as_mut()
            .ok_or_else(|| Error::io("the output could not be created"))?;
        for (window, codes) in self.held.drain(..) {
            out.write(window, &codes)?;
        }
        self.held_bytes = 0;
        Ok(out)
    }

    fn take(&mut self, answer: Result<Result<Made>, impl Sized>) -> Result<()> {
        let (made, start, end) =
            answer.map_err(|_| Error::internal("the thread creating the output panicked"))??;
        self.made = Some(made);
        self.span = Some((start, end));
        Ok(())
    }

    /// Whether the output is still being made (takes it when it is ready).
    fn pending(&mut self) -> bool {
        let Some(making) = &self.making else {
            return false;
        };
        match making.try_recv() {
            Err(TryRecvError::Empty) => true,
            answer => {
                self.making = None;
                // An error stays for the next write that waits to report.
                if let Err(e) = self.take(answer) {
                    self.failed = Some(e);
                }
                false
            }
        }
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

impl Drop for DeferredOutput {
    fn drop(&mut self) {
        // An unfinished output: wait for its thread, then drop what it made
        // (OutputRaster's own drop removes the temp file).
        self.send_spec = None;
        if let Some(making) = self.making.take() {
            drop(making.recv());
        }
    }
}

impl ClassSink for DeferredOutput {
    fn write(&mut self, window: Rect, codes: &[u16]) -> Result<()> {
        let bytes = std::mem::size_of_val(codes);
        if self.pending() && self.held_bytes + bytes <= HOLD_BYTES {
            self.held.push((window, codes.to_vec()));
            self.held_bytes += bytes;
            return Ok(());
        }
        self.output()?.write(window, codes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class_raster::ClassRaster;
    use crate::output_options::OutputCompression;
    use gdal::DriverManager;
    use gdal::raster::GdalDataType;

    /// A 40×30 Byte GeoTIFF in UTM 33N; the spec of an output like it.
    fn input(dir: &std::path::Path) -> (PathBuf, OutputSpec) {
        let path = dir.join("in.tif");
        let driver = DriverManager::get_driver_by_name("GTiff").unwrap();
        let mut ds = driver
            .create_with_band_type::<u8, _>(&path, 40, 30, 1)
            .unwrap();
        let gt = [500_000.0, 30.0, 0.0, 6_200_000.0, 0.0, -30.0];
        ds.set_geo_transform(&gt).unwrap();
        let srs = gdal::spatial_ref::SpatialRef::from_epsg(32633).unwrap();
        ds.set_spatial_ref(&srs).unwrap();
        let spec = OutputSpec {
            width: 40,
            height: 30,
            bands: 1,
            data_type: GdalDataType::UInt8,
            geo_transform: Some(gt),
            projection: String::new(),
            nodata: Some(255.0),
            colors: Vec::new(),
            category_names: Vec::new(),
            compression: OutputCompression::default(),
        };
        (path, spec)
    }

    fn files(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn held_tiles_reach_the_output_with_the_input_crs() {
        let dir = tempfile::tempdir().unwrap();
        let (input, spec) = input(dir.path());
        let target = dir.path().join("out.tif");
        let checked = Target::check(&target, false, &[&input]).unwrap();
        {
            let mut out = DeferredOutput::spawn(checked.clone(), input.clone());
            // Written before the spec is given: held, whatever the thread does.
            out.write(Rect::new(0, 0, 40, 10), &[3; 400]).unwrap();
            assert_eq!(out.held.len(), 1);
            out.make(spec);
            out.write(Rect::new(0, 10, 40, 20), &[7; 800]).unwrap();
            out.finish().unwrap();
        }
        assert_eq!(files(dir.path()), ["in.tif", "out.tif"]);
        let made = ClassRaster::open(&target).unwrap();
        let source = ClassRaster::open(&input).unwrap();
        assert_eq!(made.meta.projection, source.meta.projection);
        assert!(made.meta.projection.contains("33N"));
        assert_eq!(made.meta.geo_transform, source.meta.geo_transform);
        assert_eq!(made.meta.nodata, Some(255.0));
        let ds = gdal::Dataset::open(&target).unwrap();
        let mut px = vec![0u8; 40 * 30];
        ds.rasterband(1)
            .unwrap()
            .read_into_slice((0, 0), (40, 30), (40, 30), &mut px, None)
            .unwrap();
        assert!(px[..400].iter().all(|&v| v == 3));
        assert!(px[400..].iter().all(|&v| v == 7));
    }

    #[test]
    fn an_unfinished_output_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (input, spec) = input(dir.path());
        let target = Target::check(&dir.path().join("out.tif"), false, &[&input]).unwrap();
        // Never given a spec: nothing is made, and dropping does not wait forever.
        {
            let mut out = DeferredOutput::spawn(target.clone(), input.clone());
            out.write(Rect::new(0, 0, 40, 1), &[1; 40]).unwrap();
        }
        assert_eq!(files(dir.path()), ["in.tif"]);
        // Made and written to, then dropped unfinished: the temp file goes.
        {
            let mut out = DeferredOutput::spawn(target.clone(), input.clone());
            out.make(spec.clone());
            out.write(Rect::new(0, 0, 40, 30), &[1; 1200]).unwrap();
            out.output().unwrap();
            assert!(
                files(dir.path())
                    .iter()
                    .any(|f| f.starts_with(".mapfilter-tmp."))
            );
        }
        assert_eq!(files(dir.path()), ["in.tif"]);
        // An input that is gone: the error comes at the first write that waits.
        {
            let mut out = DeferredOutput::spawn(target.clone(), dir.path().join("gone.tif"));
            out.make(spec);
            let err = out.finish().unwrap_err();
            assert!(err.to_string().contains("no such file"), "{err}");
        }
        assert_eq!(files(dir.path()), ["in.tif"]);
    }
}
