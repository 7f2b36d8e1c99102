//! Smoothing one class raster into one GeoTIFF: [`SmoothSpec`] says what,
//! [`run`] does it (open, decide the classes, make the output on its own
//! thread, run the engine, finish the output) and returns a [`SmoothReport`].
//!
//! A spec may name a window of the input's output grid
//! ([`SmoothSpec::window`]): only that window is computed and written, from
//! the window plus the kernel's halo read from the input, so that windows
//! of one input put side by side equal one run over the whole input (exact
//! methods). `batch` relies on it.

use super::observer::{Observer, Tap};
use mapfilter_core::classes::{ClassTable, ClassWeights};
use mapfilter_core::device::DeviceChoice;
use mapfilter_core::engine::{self, RunStats, SmoothJob};
use mapfilter_core::error::{Result, Setting};
use mapfilter_core::io::{ClassSink, ClassSource, MemRaster};
use mapfilter_core::kernel::Kernel;
use mapfilter_core::method::ClassSmoother;
use mapfilter_core::method::bridged::Bridged;
use mapfilter_core::method::policy::Policies;
use mapfilter_core::method::select::{MethodSpec, smoother_for};
use mapfilter_core::method::starting::Starting;
use mapfilter_core::output::Target;
use mapfilter_core::progress::Progress;
use mapfilter_gdal::class_raster::{BandChoice, ClassRaster, ClassType, RasterMeta};
use mapfilter_gdal::confidence::ConfidenceSpec;
use mapfilter_gdal::deferred_output::DeferredOutput;
use mapfilter_gdal::output_options::OutputCompression;
use mapfilter_gdal::output_raster::OutputSpec;
use mapfilter_gdal::scan::{BandedRaster, InterleavedRaster, MIN_SMOOTH_BAND_PIXELS};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tiles::{Border, Rect};

/// The method and where it runs, as named by the user.
#[derive(Clone, Debug)]
pub struct MethodChoice {
    pub spec: MethodSpec,
    pub device: DeviceChoice,
}

impl MethodChoice {
    /// Builds the smoother for `kernel`.
    pub fn build(&self, kernel: &Kernel) -> Result<Box<dyn ClassSmoother>> {
        smoother_for(&self.spec, &self.device, kernel)
    }

    /// How reports name it, e.g. `dct5@host`.
    pub fn label(&self) -> String {
        format!("{}@{}", self.spec.method(), self.device)
    }
}

/// Where the class table of a run comes from.
#[derive(Clone, Debug)]
pub enum Classes {
    /// Scan the input when something needs the classes present, else take
    /// every code but nodata (see [`scan_first`]).
    Auto {
        /// The caller needs the classes present (a report, `--explain`).
        need_present: bool,
    },
    /// A table decided by the caller (e.g. once for all windows of a batch).
    Given(ClassTable),
}

/// What to smooth, how, and where to write it.
#[derive(Clone, Debug)]
pub struct SmoothSpec {
    pub input: PathBuf,
    /// The input's band of classes and its nodata (`-b`, `--src-nodata`).
    pub band: BandChoice,
    /// The output's nodata code (`--dst-nodata`) instead of the input's;
    /// refused where it is a class of the input.
    pub dst_nodata: Option<u16>,
    pub target: Target,
    pub kernel: Kernel,
    pub weights: ClassWeights,
    pub border: Border,
    pub fill_nodata: bool,
    /// The engine's tile side; `None`: the method's default
    /// ([`engine::default_tile`]).
    pub tile: Option<usize>,
    pub compression: OutputCompression,
    pub classes: Classes,
    /// A window of the output grid (the whole output's coordinates) to
    /// compute and write instead of the whole output.
    pub window: Option<Rect>,
    /// Ties, kept and silent classes, isolated pixels, iterations.
    pub policies: Policies,
    /// Per-pixel vote weights (`--confidence`).
    pub confidence: Option<ConfidenceSpec>,
}

/// What a run did.
#[derive(Debug)]
pub struct SmoothReport {
    /// Size of what was written.
    pub width: usize,
    pub height: usize,
    pub job: SmoothJob,
    pub stats: RunStats,
}

/// Smooths the spec's input with `method` into its target.
pub fn run(
    spec: &SmoothSpec,
    method: &dyn ClassSmoother,
    observer: &mut dyn Observer,
) -> Result<SmoothReport> {
    let handles = reading_handles(method.runs_on().is_some());
    run_starting(spec, &|| Ok(method), handles, observer)
}

/// [`run`] with a method that may still be starting (its devices opening
/// on another thread, see [`Starting`]): the input is opened and its classes
/// scanned meanwhile, and the method waited for only when the engine needs
/// it, unless `bridge` (the same method bridged by its host twin, see
/// [`Bridged`]) computes the first tiles while the devices go on starting.
pub fn run_with_start(
    spec: &SmoothSpec,
    method: &Starting,
    bridge: Option<&Bridged>,
    observer: &mut dyn Observer,
) -> Result<SmoothReport> {
    let handles = reading_handles(method.on_device());
    let ready = || -> Result<&dyn ClassSmoother> {
        match bridge {
            Some(bridged) if method.try_get().is_none() => Ok(bridged),
            _ => method.get(),
        }
    };
    run_starting(spec, &ready, handles, observer)
}

/// `handles`: how many handles the engine's reads go through on many
/// threads ([`InterleavedRaster`]).
fn run_starting<'m>(
    spec: &SmoothSpec,
    method: &dyn Fn() -> Result<&'m dyn ClassSmoother>,
    handles: usize,
    observer: &mut dyn Observer,
) -> Result<SmoothReport> {
    observer.stage("setup");
    // Another thread reads the input's coordinate system and makes the
    // output (see `DeferredOutput`) while this one goes on.
    let output = DeferredOutput::spawn(spec.target.clone(), spec.input.clone());
    if few_threads() {
        // A scan on few threads decodes the input ahead of the engine
        // (`scan_first`): its bands side by side, one per thread.
        let threads = rayon::current_num_threads();
        let mut input =
            BandedRaster::open(&spec.input, spec.band, threads, MIN_SMOOTH_BAND_PIXELS)?;
        return smooth_into(spec, method, output, &mut input, observer);
    }
    // The engine's reader decodes on a thread per handle (a read spans
    // several handles' rows).
    let mut input = InterleavedRaster::open(handles, || {
        ClassRaster::open_decoding_in_parallel(&spec.input, spec.band)
    })?;
    smooth_into(spec, method, output, &mut input, observer)
}

/// [`run`] on an input opened already and shared with other runs: `input`
/// is `spec.input` opened with `spec.band` by [`ClassRaster::open_with`]
/// (its `meta.projection` read). For many windows of one input smoothed at
/// once (a batch's workers), so that the input (a mosaic's VRT and the
/// sources GDAL opens under it) is opened and georeferenced once per run,
/// not per window or per worker. Each read holds the lock, the rest of the
/// run does not.
///
/// `prefetched`: pixels of the input read already (while the method's
/// devices started); reads inside its window are served from it.
pub fn run_shared(
    spec: &SmoothSpec,
    input: &Mutex<ClassRaster>,
    prefetched: Option<Prefetched>,
    method: &dyn ClassSmoother,
    observer: &mut dyn Observer,
) -> Result<SmoothReport> {
    observer.stage("setup");
    let projection = locked(input).meta.projection.clone();
    let output = DeferredOutput::spawn_with_projection(spec.target.clone(), projection);
    let mut source = Shared {
        raster: input,
        prefetched,
    };
    smooth_into(spec, &|| Ok(method), output, &mut source, observer)
}

/// A window of an input read into memory ahead of its run.
pub struct Prefetched {
    /// The window, in the input's pixels.
    pub window: Rect,
    pub pixels: MemRaster,
}

impl Prefetched {
    /// Reads `window` of `input`.
    pub fn read(input: &mut ClassRaster, window: Rect) -> Result<Prefetched> {
        let mut data = vec![0u16; window.area() as usize];
        input.read(window, &mut data)?;
        Ok(Prefetched {
            window,
            pixels: MemRaster::new(window.width, window.height, data),
        })
    }

    /// Reads `w` into `buf` if it lies inside the window.
    fn serve(&mut self, w: Rect, buf: &mut [u16]) -> Option<Result<()>> {
        let inside = w.x >= self.window.x
            && w.y >= self.window.y
            && w.x + w.width <= self.window.x + self.window.width
            && w.y + w.height <= self.window.y + self.window.height;
        let local = Rect::new(w.x - self.window.x, w.y - self.window.y, w.width, w.height);
        inside.then(|| self.pixels.read(local, buf))
    }
}

/// The input of a run as [`smooth_into`] needs it: the raster (its
/// metadata, a class scan) and its pixels as a source.
trait Input: ClassSource {
    fn with_raster<R>(&mut self, f: impl FnOnce(&mut ClassRaster) -> R) -> R;

    /// The classes present in the whole input.
    fn scan_classes(&mut self, progress: &Progress) -> Result<ClassTable> {
        self.with_raster(|r| r.scan_classes(progress))
    }
}

impl Input for ClassRaster {
    fn with_raster<R>(&mut self, f: impl FnOnce(&mut ClassRaster) -> R) -> R {
        f(self)
    }
}

impl Input for InterleavedRaster {
    fn with_raster<R>(&mut self, f: impl FnOnce(&mut ClassRaster) -> R) -> R {
        f(self.first_mut())
    }

    fn scan_classes(&mut self, progress: &Progress) -> Result<ClassTable> {
        InterleavedRaster::scan_classes(self, progress)
    }
}

impl Input for BandedRaster {
    fn with_raster<R>(&mut self, f: impl FnOnce(&mut ClassRaster) -> R) -> R {
        f(self.first_mut())
    }

    fn scan_classes(&mut self, progress: &Progress) -> Result<ClassTable> {
        BandedRaster::scan_classes(self, progress)
    }
}

/// A raster shared by concurrent runs: GDAL handles are not thread-safe,
/// so every use holds the lock. Reads inside a prefetched window are
/// served from memory.
struct Shared<'a> {
    raster: &'a Mutex<ClassRaster>,
    prefetched: Option<Prefetched>,
}

fn locked(input: &Mutex<ClassRaster>) -> std::sync::MutexGuard<'_, ClassRaster> {
    // A run that panicked while reading leaves the raster as usable as a
    // failed read does.
    input.lock().unwrap_or_else(|e| e.into_inner())
}

impl ClassSource for Shared<'_> {
    fn size(&self) -> (usize, usize) {
        locked(self.raster).size()
    }

    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        match self.prefetched.as_mut().and_then(|p| p.serve(w, buf)) {
            Some(done) => done,
            None => locked(self.raster).read(w, buf),
        }
    }
}

impl Input for Shared<'_> {
    fn with_raster<R>(&mut self, f: impl FnOnce(&mut ClassRaster) -> R) -> R {
        f(&mut locked(self.raster))
    }
}

/// Finds the input's classes, smooths it into `output` (handing it its
/// spec as soon as that is known) and finishes the output.
fn smooth_into<'m>(
    spec: &SmoothSpec,
    method: &dyn Fn() -> Result<&'m dyn ClassSmoother>,
    mut output: DeferredOutput,
    input: &mut impl Input,
    observer: &mut dyn Observer,
) -> Result<SmoothReport> {
    observer.stage("open");
    let (meta, class_type, band, input_nodata, fits_cache) = input.with_raster(|r| {
        (
            r.meta.clone(),
            r.class_type,
            r.band(),
            r.nodata_code(),
            r.fits_block_cache(),
        )
    });
    spec.policies.check()?;
    let halo = spec.policies.checked_halo(spec.kernel.radius())?;
    // The output's size does not depend on the tile side.
    let tile_side = spec.tile.unwrap_or(mapfilter_core::io::DEFAULT_TILE);
    let grid = engine::tile_grid(meta.width, meta.height, halo, spec.border, tile_side)?;
    let offset = grid.offset();
    let window = output_window(spec.window, grid.output_size())?;
    let (width, height) = (window.width, window.height);
    let out_spec = output_spec(&meta, class_type, window, offset, &spec.compression);
    let with_nodata = |nodata: Option<u16>| OutputSpec {
        nodata: nodata.map(f64::from),
        ..out_spec.clone()
    };
    // The output's nodata is the input's where it has one, so the output
    // can be made while the classes are scanned.
    spec.policies.check_nodata(input_nodata)?;
    let max_code = class_type.max_code();
    check_dst_nodata(spec.dst_nodata, max_code)?;
    if input_nodata.is_some() && spec.dst_nodata.is_none() {
        output.make(with_nodata(input_nodata));
    }
    let scan = ScanFacts {
        class_type,
        nodata: input_nodata,
        fits_cache,
    };
    let classes = decide_classes(spec, input, observer, &scan)?;
    // The undecided code is a class: a later pass reads it, and the
    // output's nodata must not be it.
    let classes = super::plane::with_policy_codes(classes, &spec.policies, max_code)?;
    let output_nodata = output_nodata(spec, &classes, max_code, band)?;
    output.make(with_nodata(output_nodata));
    let method = wait_for(method, observer)?; // started during the scan
    let tile = spec.tile.unwrap_or_else(|| engine::default_tile(method));
    let job = SmoothJob {
        class_weights: spec.weights.quantise(&classes),
        output_nodata,
        kernel: spec.kernel.clone(),
        classes,
        border: spec.border,
        fill_nodata: spec.fill_nodata,
        tile,
        policies: spec.policies.clone(),
    };
    observer.before_engine(&job, method)?;
    let progress = observer.progress("smooth");
    let mut votes = spec
        .confidence
        .as_ref()
        .map(|c| c.open(meta.width, meta.height))
        .transpose()?;
    let tap = observer.tap();
    let mut tapped_in = Tapped {
        inner: input,
        tap: tap.clone(),
        busy: Duration::ZERO,
    };
    let mut tapped_out = Tapped {
        inner: &mut output,
        tap,
        busy: Duration::ZERO,
    };
    let votes = votes.as_mut().map(|v| v as &mut dyn ClassSource);
    let stats = if spec.window.is_none() {
        engine::smooth_weighted(
            &mut tapped_in,
            votes,
            &mut tapped_out,
            &job,
            method,
            &progress,
        )?
    } else {
        let at = WindowRun {
            // The window in the input's pixels.
            center: Rect::new(window.x + offset, window.y + offset, width, height),
            halo,
            tile,
            max_code,
        };
        smooth_window(
            &mut tapped_in,
            votes,
            &mut tapped_out,
            &job,
            method,
            &progress,
            &at,
        )?
    };
    observer.stage("engine");
    observer.busy("read", tapped_in.busy);
    observer.busy("write", tapped_out.busy);
    let (made_from, made_to) = output.finish()?;
    observer.stage("finish");
    observer.background("output", made_from, made_to);
    Ok(SmoothReport {
        width,
        height,
        job,
        stats,
    })
}

/// The method, once its start is over (`--timings`' `method` stage: what
/// was left of it after the input's scan).
fn wait_for<'m>(
    method: &dyn Fn() -> Result<&'m dyn ClassSmoother>,
    observer: &mut dyn Observer,
) -> Result<&'m dyn ClassSmoother> {
    let method = method()?;
    observer.stage("method");
    Ok(method)
}

/// The output of `window` (at `offset` in the input's pixels) of an input
/// described by `meta`, in the input's sample type, without nodata yet.
fn output_spec(
    meta: &RasterMeta,
    class_type: ClassType,
    window: Rect,
    offset: usize,
    compression: &OutputCompression,
) -> OutputSpec {
    OutputSpec {
        width: window.width,
        height: window.height,
        bands: 1,
        data_type: class_type.gdal_type(),
        geo_transform: shifted(meta.geo_transform, window.x + offset, window.y + offset),
        projection: String::new(),
        nodata: None,
        colors: meta.colors.clone(),
        category_names: meta.category_names.clone(),
        compression: compression.clone(),
    }
}

/// Refuses a `--dst-nodata` code the output's type cannot hold.
fn check_dst_nodata(dst_nodata: Option<u16>, max_code: u16) -> Result<()> {
    if let Some(d) = dst_nodata
        && d > max_code
    {
        mapfilter_core::bail!(
            usage,
            format!(
                "{} does not fit the output's type (codes 0..={max_code})",
                Setting::DstNodata.is(d)
            ),
            hint = "give a code the input's band type holds"
        );
    }
    Ok(())
}

/// What a window of the output computed alone needs besides the job: where
/// it lies in the input's pixels, the halo it reads around it, the engine
/// tile asked for, and the largest code of the input's type.
struct WindowRun {
    center: Rect,
    halo: usize,
    tile: usize,
    max_code: u16,
}

/// Smooths the window `at.center` of `input` alone into `output`.
fn smooth_window(
    input: &mut dyn ClassSource,
    votes: Option<&mut dyn ClassSource>,
    output: &mut dyn ClassSink,
    job: &SmoothJob,
    method: &dyn ClassSmoother,
    progress: &Progress,
    at: &WindowRun,
) -> Result<RunStats> {
    let (center, width, height) = (at.center, at.center.width, at.center.height);
    Ok(
        match outside_code(job, method, votes.is_some(), at.max_code) {
            Some(fill) => {
                // The engine computes the window's pixels only: a `valid`
                // grid over the window grown by the halo, where what lies
                // beyond the input reads as a code that is no class. Such
                // pixels vote for nothing, as nodata and the outside of the
                // input do in a run over the whole input.
                let mut source = PaddedView {
                    inner: input,
                    center,
                    halo: at.halo,
                    fill,
                };
                let windowed = SmoothJob {
                    border: Border::Valid,
                    tile: even_tile(width.max(height), at.tile),
                    ..job.clone()
                };
                engine::smooth_weighted(&mut source, None, output, &windowed, method, progress)?
            }
            None => {
                // The part of the input that reaches the window through the
                // kernel, smoothed whole, and the window cut from it: pixels
                // beyond the input contribute nothing, as in a run over the
                // whole input.
                let r = at.halo;
                let (w, h) = input.size();
                let x0 = center.x.saturating_sub(r);
                let y0 = center.y.saturating_sub(r);
                let x1 = (center.x + center.width + r).min(w);
                let y1 = (center.y + center.height + r).min(h);
                let view = Rect::new(x0, y0, x1 - x0, y1 - y0);
                let crop = Rect::new(center.x - x0, center.y - y0, width, height);
                let mut source = ViewSource { inner: input, view };
                let mut vote_view = votes.map(|v| ViewSource { inner: v, view });
                let mut sink = CropSink {
                    inner: output,
                    crop,
                };
                let windowed = SmoothJob {
                    border: Border::Same,
                    tile: even_tile(view.width.max(view.height), at.tile),
                    ..job.clone()
                };
                let votes = vote_view.as_mut().map(|v| v as &mut dyn ClassSource);
                engine::smooth_weighted(&mut source, votes, &mut sink, &windowed, method, progress)?
            }
        },
    )
}

/// The window written, in the output's coordinates: `asked`, checked to lie
/// inside the `full` output (a window from a plan file may be anything,
/// 2^64 - 1 included), or the whole output.
fn output_window(asked: Option<Rect>, full: (usize, usize)) -> Result<Rect> {
    let (full_width, full_height) = full;
    let Some(w) = asked else {
        return Ok(Rect::new(0, 0, full_width, full_height));
    };
    let inside =
        |at: usize, len: usize, full: usize| at.checked_add(len).is_some_and(|end| end <= full);
    if !inside(w.x, w.width, full_width) || !inside(w.y, w.height, full_height) || w.is_empty() {
        mapfilter_core::bail!(
            usage,
            format!(
                "window {}x{} at ({}, {}) is not inside the {full_width}x{full_height} output",
                w.width, w.height, w.x, w.y
            ),
            hint = "plan the windows again with `mapfilter batch plan`"
        );
    }
    Ok(w)
}

/// What deciding the classes needs to know of the input.
struct ScanFacts {
    class_type: ClassType,
    nodata: Option<u16>,
    /// The input fits GDAL's block cache (a scan first is cheap).
    fits_cache: bool,
}

/// The job's classes: given, scanned from the input first, or every code
/// of the input's type.
fn decide_classes(
    spec: &SmoothSpec,
    input: &mut impl Input,
    observer: &mut dyn Observer,
    facts: &ScanFacts,
) -> Result<ClassTable> {
    Ok(match &spec.classes {
        Classes::Given(table) => {
            observer.stage("classes");
            table.clone()
        }
        Classes::Auto { need_present } => {
            // A --dst-nodata code must be checked against the classes present.
            let need_present = *need_present || spec.dst_nodata.is_some();
            let (class_type, nodata) = (facts.class_type, facts.nodata);
            if scan_first(spec, need_present, class_type, nodata, facts.fits_cache) {
                let progress = observer.progress("smooth");
                let classes = input.scan_classes(&progress)?;
                observer.stage("scan");
                classes
            } else {
                let classes = ClassTable::every_code(class_type.max_code(), nodata)?;
                observer.stage("classes");
                classes
            }
        }
    })
}

/// The output's nodata: `--dst-nodata` (no class of the input), else the
/// classes' own choice.
fn output_nodata(
    spec: &SmoothSpec,
    classes: &ClassTable,
    max_code: u16,
    band: usize,
) -> Result<Option<u16>> {
    let what = format!("{} (band {band})", spec.input.display());
    output_nodata_of(spec.dst_nodata, classes, max_code, &what)
}

/// The output's nodata for `classes` of a raster described by `what`:
/// `dst_nodata` where it fits the type and is no class, else the classes'
/// own choice (`smooth`, and `batch plan` for each mosaic).
pub fn output_nodata_of(
    dst_nodata: Option<u16>,
    classes: &ClassTable,
    max_code: u16,
    what: &str,
) -> Result<Option<u16>> {
    check_dst_nodata(dst_nodata, max_code)?;
    Ok(match dst_nodata {
        Some(d) if classes.codes().contains(&d) => mapfilter_core::bail!(
            usage,
            format!("{} is a class of {what}", Setting::DstNodata.is(d)),
            hint = "pick a code the input does not hold (`mapfilter info` lists them)"
        ),
        Some(d) => Some(d),
        None => classes.output_nodata(max_code),
    })
}

/// Engine tiles of about the asked side `tile` that split `side` pixels
/// evenly: a window one halo larger than `--tile` runs as one tile, not one
/// tile and three slivers. Exact methods give the same pixels for any tile
/// side.
fn even_tile(side: usize, tile: usize) -> usize {
    let tiles = ((side as f64 / tile.max(1) as f64).round() as usize).max(1);
    side.div_ceil(tiles)
}

/// A code that is no class of `job`, for the pixels beyond the input
/// around a window, or `None` where the window is smoothed with the input
/// around it instead: with vote weights, with policies around the method
/// (their passes tell the outside from pixels of no class), and with
/// approximate methods (whose pixels depend on the tiles' layout, which
/// stays as it was).
fn outside_code(
    job: &SmoothJob,
    method: &dyn ClassSmoother,
    votes: bool,
    max_code: u16,
) -> Option<u16> {
    if votes || job.policies.around_method() || !method.is_exact() {
        return None;
    }
    let codes = job.classes.codes();
    (0..=max_code).find(|c| codes.binary_search(c).is_err())
}

/// The geotransform of an output whose pixel (0,0) is input pixel (x, y).
fn shifted(gt: Option<[f64; 6]>, x: usize, y: usize) -> Option<[f64; 6]> {
    gt.map(|g| mapfilter_gdal::class_raster::shift_transform(g, x as f64, y as f64))
}

/// A source or sink whose pixels a [`Tap`] (if any) sees go by, and the
/// time spent in it (the reader's or the writer's thread's busy time).
struct Tapped<'a, T> {
    inner: &'a mut T,
    tap: Option<Arc<dyn Tap>>,
    busy: Duration,
}

impl<T: ClassSource> ClassSource for Tapped<'_, T> {
    fn size(&self) -> (usize, usize) {
        self.inner.size()
    }

    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        let t0 = Instant::now();
        self.inner.read(w, buf)?;
        self.busy += t0.elapsed();
        if let Some(tap) = &self.tap {
            tap.read(w, buf);
        }
        Ok(())
    }
}

impl<T: ClassSink> ClassSink for Tapped<'_, T> {
    fn write(&mut self, w: Rect, codes: &[u16]) -> Result<()> {
        if let Some(tap) = &self.tap {
            tap.written(w, codes);
        }
        let t0 = Instant::now();
        let written = self.inner.write(w, codes);
        self.busy += t0.elapsed();
        written
    }
}

/// A window of a source, seen as a source of its own.
struct ViewSource<'a> {
    inner: &'a mut dyn ClassSource,
    view: Rect,
}

impl ClassSource for ViewSource<'_> {
    fn size(&self) -> (usize, usize) {
        (self.view.width, self.view.height)
    }

    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        let shifted = Rect::new(w.x + self.view.x, w.y + self.view.y, w.width, w.height);
        self.inner.read(shifted, buf)
    }
}

/// Window `center` of a source grown by `halo` on every side, as a source
/// of its own; what lies beyond the source reads as `fill`.
struct PaddedView<'a> {
    inner: &'a mut dyn ClassSource,
    center: Rect,
    halo: usize,
    fill: u16,
}

impl PaddedView<'_> {
    /// The part of `w` (in this view's pixels) inside the source, in the
    /// source's pixels.
    fn inside(&self, w: Rect) -> Option<Rect> {
        let (width, height) = self.inner.size();
        let span = |start: usize, len: usize, center: usize, limit: usize| {
            // View pixel v is source pixel v + center - halo.
            let lo = (start + center).saturating_sub(self.halo);
            let hi = (start + len + center).saturating_sub(self.halo).min(limit);
            (lo < hi).then_some((lo, hi - lo))
        };
        let (x, w_in) = span(w.x, w.width, self.center.x, width)?;
        let (y, h_in) = span(w.y, w.height, self.center.y, height)?;
        Some(Rect::new(x, y, w_in, h_in))
    }
}

impl ClassSource for PaddedView<'_> {
    fn size(&self) -> (usize, usize) {
        (
            self.center.width + 2 * self.halo,
            self.center.height + 2 * self.halo,
        )
    }

    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        let inside = self.inside(w);
        if let Some(part) = inside
            && (part.width, part.height) == (w.width, w.height)
        {
            return self.inner.read(part, buf);
        }
        buf.fill(self.fill);
        let Some(part) = inside else {
            return Ok(());
        };
        let mut read = vec![0u16; part.width * part.height];
        self.inner.read(part, &mut read)?;
        // Where the part starts in `w`.
        let dx = part.x + self.halo - self.center.x - w.x;
        let dy = part.y + self.halo - self.center.y - w.y;
        for (row, src) in read.chunks_exact(part.width).enumerate() {
            let at = (dy + row) * w.width + dx;
            buf[at..at + part.width].copy_from_slice(src);
        }
        Ok(())
    }
}

/// A sink that keeps only the pixels inside `crop`, moved to its origin.
struct CropSink<'a> {
    inner: &'a mut dyn ClassSink,
    crop: Rect,
}

impl ClassSink for CropSink<'_> {
    fn write(&mut self, w: Rect, codes: &[u16]) -> Result<()> {
        let c = self.crop;
        let Some(both) = w.intersection(&c) else {
            return Ok(());
        };
        let part = Rect::new(both.x - c.x, both.y - c.y, both.width, both.height);
        if part.width == w.width && part.height == w.height {
            return self.inner.write(part, codes);
        }
        let mut kept = Vec::with_capacity(part.width * part.height);
        for y in both.y..both.y + both.height {
            let start = (y - w.y) * w.width + (both.x - w.x);
            kept.extend_from_slice(&codes[start..start + part.width]);
        }
        self.inner.write(part, &kept)
    }
}

/// Whether to scan the raster for its classes before smoothing.
///
/// A Byte band with a nodata value can instead take every other code as a
/// class (tiles hold only the classes they meet, in code order, so results
/// are the same) unless something needs the classes actually present:
/// class weights (scaled by the largest weight of a class present), the
/// report and `--explain` (which show them). On two threads a raster that
/// fits in GDAL's block cache is scanned in any case: the scan decodes its
/// blocks before the engine starts, while the output's thread works on the
/// other core, and the engine then finds them decoded
/// (docs/decisions/0007-class-scan.md). Elsewhere the scan is skipped and
/// with it a whole single-threaded decoding pass.
fn scan_first(
    spec: &SmoothSpec,
    need_present: bool,
    class_type: ClassType,
    nodata: Option<u16>,
    fits_block_cache: bool,
) -> bool {
    class_type != ClassType::Byte
        || nodata.is_none()
        || !spec.weights.is_empty()
        || need_present
        || (fits_block_cache && few_threads())
}

/// Handles a whole `smooth` reads its input through on many threads
/// ([`InterleavedRaster`]): for a method `on_device`, one per 4 compute
/// threads, at most 4 (a device tile's read, 1024 rows and its halo, spans
/// 3 or 4 units of 512 rows). A method on the host reads through one: its
/// compute keeps the cores busy, and four handles made a 415 Mpx `smooth
/// --exact` on 16 cores 3–8 % slower (decision 0043).
fn reading_handles(on_device: bool) -> usize {
    match on_device {
        true => (rayon::current_num_threads() / 4).clamp(1, 4),
        false => 1,
    }
}

/// Whether the run has so few threads (rayon's pool: the cores, or
/// `RAYON_NUM_THREADS`) that decoding the input ahead (the scan) beats
/// decoding it inside the engine. Measured both ways: on 2 cores the scan
/// first is faster; on 16 (with the GPU or the host computing) skipping it
/// is (BENCHMARKS.md, "Whole command against gdal_translate").
fn few_threads() -> bool {
    rayon::current_num_threads() <= 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapfilter_core::io::MemRaster;

    #[test]
    fn crop_sink_keeps_the_crop_only() {
        let mut out = MemRaster::filled(2, 2, 0);
        let mut sink = CropSink {
            inner: &mut out,
            crop: Rect::new(1, 1, 2, 2),
        };
        // A 3x3 write at the origin: rows 1..3, columns 1..3 are kept.
        sink.write(Rect::new(0, 0, 3, 3), &[1, 2, 3, 4, 5, 6, 7, 8, 9])
            .unwrap();
        assert_eq!(out.data, vec![5, 6, 8, 9]);
    }

    #[test]
    fn padded_view_fills_beyond_the_source() {
        // Pixel (0, 0) of a 3x2 source grown by 1: a 3x3 view whose first
        // row and column lie beyond the source.
        let mut raster = MemRaster::new(3, 2, vec![1, 2, 3, 4, 5, 6]);
        let mut view = PaddedView {
            inner: &mut raster,
            center: Rect::new(0, 0, 1, 1),
            halo: 1,
            fill: 9,
        };
        assert_eq!(view.size(), (3, 3));
        let mut buf = [0u16; 9];
        view.read(Rect::new(0, 0, 3, 3), &mut buf).unwrap();
        assert_eq!(buf, [9, 9, 9, 9, 1, 2, 9, 4, 5]);
        // A part wholly inside reads straight through.
        let mut buf = [0u16; 2];
        view.read(Rect::new(1, 2, 2, 1), &mut buf).unwrap();
        assert_eq!(buf, [4, 5]);
        // A part wholly outside is all fill.
        let mut buf = [0u16; 3];
        view.read(Rect::new(0, 0, 3, 1), &mut buf).unwrap();
        assert_eq!(buf, [9, 9, 9]);
    }

    #[test]
    fn view_source_reads_shifted() {
        let mut raster = MemRaster::new(3, 2, vec![1, 2, 3, 4, 5, 6]);
        let mut view = ViewSource {
            inner: &mut raster,
            view: Rect::new(1, 0, 2, 2),
        };
        let mut buf = [0u16; 2];
        view.read(Rect::new(0, 1, 2, 1), &mut buf).unwrap();
        assert_eq!(buf, [5, 6]);
    }
}
