//! `batch run`: runs a share of a plan's tasks, several in flight, each one
//! a windowed smoothing job ([`crate::job::smooth`]), skipping tasks whose
//! output matches its done record, claiming each task before working on it,
//! and going on past failed tasks (listed at the end).

use super::plan::{MosaicPlan, Plan, Settings, Task};
use super::records::{self, Comparison, Counts, DoneRecord, FailedRecord, State, Syncer, hostname};
use crate::bail;
use crate::classes::CodeTally;
use crate::error::{Error, Result};
use crate::gdal::class_raster::ClassRaster;
use crate::io::ClassSource;
use crate::job::observer::{Observer, Silent, Tap};
use crate::job::smooth::{self as job, Classes, SmoothSpec};
use crate::method::ClassSmoother;
use crate::method::naive::NaiveHost;
use crate::output::Target;
use crate::progress::{Progress, Steps};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tiles::Rect;

/// Which tasks a run takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    All,
    /// Tasks whose index modulo `count` is `index`.
    Shard {
        index: usize,
        count: usize,
    },
    Task(usize),
}

impl Share {
    /// `I/N` as given to `--shard`.
    pub fn parse_shard(text: &str) -> Result<Share> {
        let hint = "write --shard I/N with 0 <= I < N, e.g. --shard 0/4";
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| Error::new(format!("--shard {text}: no '/'")).hint(hint))?;
        let parse = |s: &str| {
            s.trim().parse::<usize>().map_err(|_| {
                Error::new(format!("--shard {text}: '{s}' is not a number")).hint(hint)
            })
        };
        Self::shard(parse(i)?, parse(n)?).map_err(|e| e.hint(hint))
    }

    fn shard(index: usize, count: usize) -> Result<Share> {
        if count == 0 || index >= count {
            bail!(format!("shard {index} of {count} does not exist"));
        }
        Ok(Share::Shard { index, count })
    }

    /// The share a job array gives this process: SLURM's
    /// `SLURM_ARRAY_TASK_ID`/`SLURM_ARRAY_TASK_COUNT` (less
    /// `SLURM_ARRAY_TASK_MIN`), or Kubernetes' `JOB_COMPLETION_INDEX` with
    /// the count in `MAPFILTER_SHARDS`. `None` outside a job array.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Share>> {
        let num = |name: &str| -> Result<Option<usize>> {
            var(name)
                .map(|v| {
                    v.trim().parse::<usize>().map_err(|_| {
                        Error::new(format!("${name} is '{v}', not a number"))
                            .hint("run inside a job array, or give --shard I/N")
                    })
                })
                .transpose()
        };
        if let (Some(id), Some(count)) =
            (num("SLURM_ARRAY_TASK_ID")?, num("SLURM_ARRAY_TASK_COUNT")?)
        {
            let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            return Self::shard(id.saturating_sub(min), count).map(Some);
        }
        if let Some(index) = num("JOB_COMPLETION_INDEX")? {
            let count = num("MAPFILTER_SHARDS")?.ok_or_else(|| {
                Error::new("JOB_COMPLETION_INDEX is set but MAPFILTER_SHARDS is not")
                    .hint("set MAPFILTER_SHARDS to the Job's completions")
            })?;
            return Self::shard(index, count).map(Some);
        }
        Ok(None)
    }

    fn takes(&self, task: usize) -> bool {
        match *self {
            Share::All => true,
            Share::Shard { index, count } => task % count == index,
            Share::Task(k) => task == k,
        }
    }
}

/// How to run.
pub struct RunRequest<'a> {
    pub dir: &'a Path,
    pub share: Share,
    pub retry_failed: bool,
    /// Tasks in flight at once (`None`: sized to the node, see
    /// [`super::workers`]).
    pub jobs: Option<usize>,
    pub quiet: bool,
    /// Claims not refreshed for this long are taken over (any host).
    pub stale_after: Duration,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub selected: usize,
    /// Done before this run (output matched its record).
    pub already_done: usize,
    pub done_now: usize,
    /// Failed now, or before and not retried: (task, error).
    pub failed: Vec<(usize, String)>,
    /// Held by another live run.
    pub busy: Vec<usize>,
    pub seconds: f64,
    pub pixels_now: u64,
    /// What each device did when several shared the tiles (else empty).
    pub devices: Vec<crate::method::multi::Share>,
}

/// Runs the request's share of the plan in `dir`.
pub fn run(req: &RunRequest) -> Result<RunSummary> {
    let start = Instant::now();
    let plan = Plan::load(req.dir)?;
    if let Share::Task(k) = req.share
        && k >= plan.tasks.len()
    {
        bail!(
            format!("task {k} is not in the plan ({} tasks)", plan.tasks.len()),
            hint = "tasks are numbered from 0; see tasks.geojson"
        );
    }
    let settings = plan.options.settings()?;
    let state = State::open(req.dir)?.with_stale_after(req.stale_after);
    records::release_on_signal();
    state.sweep_leftovers();
    let fingerprint = plan.fingerprint();
    let mut summary = RunSummary::default();
    let mut todo = Vec::new();
    let finished = |task: &Task| {
        state
            .done_and_intact(task, fingerprint)
            .is_some_and(|rec| !req.retry_failed || rec.missing_halo.is_empty())
    };
    for task in plan.tasks.iter().filter(|t| req.share.takes(t.id)) {
        summary.selected += 1;
        if finished(task) {
            summary.already_done += 1;
        } else if let (false, Some(f)) = (req.retry_failed, state.failed(task.id, fingerprint)) {
            summary.failed.push((task.id, f.error));
        } else {
            todo.push(task);
        }
    }
    if todo.is_empty() {
        // Nothing to run: no device is opened (an OpenCL start-up and its
        // program builds take longer than checking a finished plan).
        summary.failed.sort();
        summary.seconds = start.elapsed().as_secs_f64();
        return Ok(summary);
    }
    let method = settings.method.build(&settings.kernel)?;
    let jobs = match req.jobs {
        Some(jobs) => jobs,
        None => {
            let workers = super::workers::Node::here(method.gpus()).workers(todo.len());
            size_pool(workers.pool_threads);
            workers.jobs
        }
    };
    let progress = BatchProgress::new(req.quiet, todo.len(), todo.iter().map(|t| t.pixels()).sum());
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let ctx = Context {
        dir: req.dir,
        plan: &plan,
        settings: &settings,
        method: method.as_ref(),
        state: &state,
        finished: &finished,
        fingerprint,
        syncer: Syncer::start(),
        opened: Opened::new(plan.mosaics.len()),
    };
    let (stop_heartbeat, stopped) = crossbeam_channel::bounded::<()>(0);
    std::thread::scope(|scope| {
        // Refreshes this run's claims until the workers are done.
        scope.spawn(|| {
            while stopped
                .recv_timeout(state.heartbeat())
                .is_err_and(|e| e.is_timeout())
            {
                records::refresh_held();
            }
        });
        let workers: Vec<_> = (0..jobs.clamp(1, todo.len().max(1)))
            .map(|_| {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(task) = todo.get(i) else { break };
                        let mut observer = progress.observer(task);
                        let outcome = ctx.attempt(task, &mut observer);
                        progress.finished(task, &observer, &outcome);
                        results
                            .lock()
                            .expect("results lock")
                            .push((task.id, outcome));
                    }
                })
            })
            .collect();
        let joined: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        drop(stop_heartbeat);
        if let Some(panicked) = joined.into_iter().find_map(|j| j.err()) {
            std::panic::resume_unwind(panicked);
        }
    });
    progress.finish();
    // What this run wrote is on disk before it says it is done.
    ctx.syncer.finish()?;
    summary.devices = method.take_shares();
    for (id, outcome) in results.into_inner().expect("results lock") {
        match outcome {
            Outcome::Done(rec) => {
                summary.done_now += 1;
                summary.pixels_now += rec.pixels;
            }
            Outcome::AlreadyDone => summary.already_done += 1,
            Outcome::Busy => summary.busy.push(id),
            Outcome::Failed(e) => summary.failed.push((id, e)),
        }
    }
    summary.failed.sort();
    summary.busy.sort();
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// Gives the host's compute pool `threads` threads, unless the user sized
/// it (`RAYON_NUM_THREADS`) or something in this process already used it
/// (then it keeps its size: the run is as before, not wrong).
fn size_pool(threads: usize) {
    if std::env::var_os("RAYON_NUM_THREADS").is_some() {
        return;
    }
    if let Err(e) = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
    {
        log::debug!("the compute pool keeps its size: {e}");
    }
}

/// What one attempt at a task came to.
enum Outcome {
    Done(Box<DoneRecord>),
    AlreadyDone,
    Busy,
    Failed(String),
}

struct Context<'a> {
    dir: &'a Path,
    plan: &'a Plan,
    settings: &'a Settings,
    method: &'a dyn ClassSmoother,
    state: &'a State,
    /// Whether a task counts as finished (its output matches its record).
    finished: &'a (dyn Fn(&Task) -> bool + Sync),
    fingerprint: u32,
    /// Syncs outputs and records off the workers' path (see `records`).
    syncer: Syncer,
    /// The mosaics' handles, shared by the workers.
    opened: Opened,
}

impl Context<'_> {
    fn attempt(&self, task: &Task, observer: &mut TaskObserver) -> Outcome {
        let claim = match self.state.claim(task.id) {
            Ok(Some(c)) => c,
            Ok(None) => return Outcome::Busy,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        // Another run may have finished it between the check and the claim.
        if (self.finished)(task) {
            return Outcome::AlreadyDone;
        }
        let outcome = match self.run_task(task, observer) {
            Ok(rec) => match self.state.write_done(&rec) {
                Ok(()) => {
                    self.syncer.add(self.dir.join(&task.output));
                    self.syncer.add(self.state.done_path(task.id));
                    Outcome::Done(Box::new(rec))
                }
                Err(e) => Outcome::Failed(e.to_string()),
            },
            // An interrupted task is not a failed one: no record.
            Err(e) if crate::interrupt::check().is_err() => Outcome::Failed(e.to_string()),
            Err(e) => {
                let error = e.to_string();
                let written = self.state.write_failed(&FailedRecord {
                    task: task.id,
                    plan: self.fingerprint,
                    error: error.clone(),
                    host: hostname(),
                });
                if written.is_ok() {
                    self.syncer.add(self.state.failed_path(task.id));
                }
                Outcome::Failed(error)
            }
        };
        drop(claim);
        outcome
    }

    fn run_task(&self, task: &Task, observer: &mut TaskObserver) -> Result<DoneRecord> {
        crate::interrupt::check()?;
        let t0 = Instant::now();
        let mosaic = &self.plan.mosaics[task.mosaic];
        let output = self.dir.join(&task.output);
        let spec = self.spec(mosaic, task, &output)?;
        let mut missing_halo = Vec::new();
        let center = Self::center(mosaic, task);
        observer.tally = Some(Arc::new(Tally::new(center, mosaic.classes.max_code)));
        let done = match self
            .opened
            .smooth(task.mosaic, &spec, self.method, observer)
        {
            Ok(done) => done,
            Err(e) => {
                // A neighbour that cannot be read fails this task only if
                // its halo cannot be taken as nodata instead.
                let bad = self.unreadable_neighbours(mosaic, task);
                if bad.is_empty() || mosaic.classes.nodata.is_none() {
                    let e = match bad.first() {
                        Some(b) => e.hint(format!(
                            "its halo reaches {}, which cannot be read (and the mosaic has no nodata to stand in)",
                            b.display()
                        )),
                        None => e,
                    };
                    return Err(e.context(format!("task {}", task.id)));
                }
                let vrt = self.vrt_without(mosaic, task, &bad)?;
                let spec = SmoothSpec {
                    input: vrt.clone(),
                    ..spec
                };
                observer.tally = Some(Arc::new(Tally::new(center, mosaic.classes.max_code)));
                let done = job::run(&spec, self.method, observer);
                let _ = std::fs::remove_file(&vrt);
                missing_halo = bad;
                done.map_err(|e| e.context(format!("task {}", task.id)))?
            }
        };
        let engine_seconds = done.stats.wall.as_secs_f64();
        let center = Self::center(mosaic, task);
        let whole = Rect::new(0, 0, task.window[2], task.window[3]);
        // The counts of the pixels the engine moved. A count that does not
        // cover the window exactly (the engine read or wrote some pixel
        // other than once) is taken from the file instead.
        let tally = observer.tally.take().expect("set before the run");
        let (input_counts, output_counts) = tally.counts();
        let input_counts = match input_counts {
            Some(c) => c,
            None => count(
                &mut ClassRaster::open_without_projection(&mosaic.source)?,
                center,
            )?,
        };
        let output_counts = match output_counts {
            Some(c) => c,
            None => count(&mut ClassRaster::open_without_projection(&output)?, whole)?,
        };
        let comparison = match self.plan.compare_with.as_deref() {
            Some("naive") if self.plan.compares(task.id) => {
                let mut out = ClassRaster::open_without_projection(&output)?;
                Some(self.compare(mosaic, task, &mut out)?)
            }
            _ => None,
        };
        Ok(DoneRecord {
            task: task.id,
            plan: self.fingerprint,
            output: task.output.clone(),
            size: std::fs::metadata(&output)
                .map_err(|e| Error::new(format!("{}: {e}", output.display())))?
                .len(),
            crc32: super::records::checksum(&output)?,
            seconds: t0.elapsed().as_secs_f64(),
            engine_seconds,
            pixels: task.pixels(),
            host: hostname(),
            input_counts,
            output_counts,
            nodata: mosaic.classes.nodata,
            output_nodata: done.job.output_nodata,
            comparison,
            missing_halo,
        })
    }

    /// The task's window in the mosaic's pixels.
    fn center(mosaic: &MosaicPlan, task: &Task) -> Rect {
        let offset = (mosaic.width - mosaic.output_width) / 2;
        Rect::new(
            task.window[0] + offset,
            task.window[1] + offset,
            task.window[2],
            task.window[3],
        )
    }

    /// The task's window in the mosaic's pixels, with the kernel's halo.
    fn view(&self, mosaic: &MosaicPlan, task: &Task) -> Rect {
        let offset = (mosaic.width - mosaic.output_width) / 2;
        let r = (self.settings.policies).halo(self.settings.kernel.radius());
        let [x, y, w, h] = task.window;
        let (x, y) = (x + offset, y + offset);
        let (x0, y0) = (x.saturating_sub(r), y.saturating_sub(r));
        let x1 = (x + w + r).min(mosaic.width);
        let y1 = (y + h + r).min(mosaic.height);
        Rect::new(x0, y0, x1 - x0, y1 - y0)
    }

    /// Other inputs of the mosaic under the task's halo whose pixels there
    /// cannot be read (the task's own input is the task's own failure).
    fn unreadable_neighbours(&self, mosaic: &MosaicPlan, task: &Task) -> Vec<std::path::PathBuf> {
        if mosaic.members.len() < 2 || !readable(&task.input, None) {
            return Vec::new();
        }
        let view = self.view(mosaic, task);
        mosaic
            .members
            .iter()
            .filter(|m| m.path != task.input)
            .filter_map(|m| {
                let both = view.intersection(&Rect::new(m.x, m.y, m.width, m.height))?;
                Some((
                    m,
                    Rect::new(both.x - m.x, both.y - m.y, both.width, both.height),
                ))
            })
            .filter(|(m, part)| !readable(&m.path, Some(*part)))
            .map(|(m, _)| m.path.clone())
            .collect()
    }

    /// A VRT of the mosaic without `bad` (their pixels read as nodata).
    fn vrt_without(
        &self,
        mosaic: &MosaicPlan,
        task: &Task,
        bad: &[std::path::PathBuf],
    ) -> Result<std::path::PathBuf> {
        let members: Vec<_> = mosaic
            .members
            .iter()
            .filter(|m| !bad.contains(&m.path))
            .cloned()
            .collect();
        let mut info = super::mosaic::read_infos(std::slice::from_ref(&task.input))?
            .pop()
            .ok_or_else(|| Error::new("no input to describe"))?;
        info.nodata = mosaic.classes.nodata.map(f64::from);
        let g = mosaic.output_geo_transform;
        let offset = ((mosaic.width - mosaic.output_width) / 2) as f64;
        let gt = [
            g[0] - offset * g[1],
            g[1],
            g[2],
            g[3] - offset * g[5],
            g[4],
            g[5],
        ];
        let xml = super::mosaic::vrt_xml(&members, (mosaic.width, mosaic.height), gt, &info);
        let path = self.state.scratch(task.id, "halo.vrt");
        crate::output::text::write(
            &crate::output::Destination::File(Target::check(&path, true, &[])?),
            &xml,
        )?;
        Ok(path)
    }

    fn spec(&self, mosaic: &MosaicPlan, task: &Task, output: &Path) -> Result<SmoothSpec> {
        // A task's output is replaced: it is only ever a complete output of
        // this very task (temp file + rename) that lacks its record.
        // Synced by the run's `Syncer`, off the workers' path.
        let target = Target::check(output, true, &[&mosaic.source, &task.input])?.synced_later();
        Ok(SmoothSpec {
            input: mosaic.source.clone(),
            band: Default::default(),
            dst_nodata: None,
            target,
            kernel: self.settings.kernel.clone(),
            weights: self.settings.weights.clone(),
            border: self.settings.border,
            fill_nodata: self.plan.options.fill_nodata,
            tile: Some(self.plan.options.tile),
            compression: self.settings.compression.clone(),
            classes: Classes::Given(mosaic.classes.table()?),
            window: Some(task.rect()),
            policies: self.settings.policies.clone(),
            confidence: None,
        })
    }

    /// Runs the exact baseline on the task's window into a scratch file and
    /// counts the pairs of codes against the output.
    fn compare(
        &self,
        mosaic: &MosaicPlan,
        task: &Task,
        out: &mut ClassRaster,
    ) -> Result<Comparison> {
        let scratch = self.state.scratch(task.id, "baseline.tif");
        let spec = self.spec(mosaic, task, &scratch)?;
        let result = (|| {
            job::run(&spec, &NaiveHost, &mut Silent)?;
            let mut base = ClassRaster::open_without_projection(&scratch)?;
            let nodata = base.nodata_code();
            let (w, h) = (task.window[2], task.window[3]);
            let mut pairs = std::collections::BTreeMap::new();
            let mut one_only = 0;
            for (a, b) in strips(&mut base, out, Rect::new(0, 0, w, h))? {
                for (&p, &q) in a.iter().zip(&b) {
                    match (Some(p) == nodata, Some(q) == nodata) {
                        (false, false) => *pairs.entry((p, q)).or_insert(0u64) += 1,
                        (true, true) => {}
                        _ => one_only += 1,
                    }
                }
            }
            Ok(Comparison {
                pairs: pairs.into_iter().map(|((p, q), n)| (p, q, n)).collect(),
                one_only,
            })
        })();
        let _ = std::fs::remove_file(&scratch);
        result
    }
}

/// The run's handles of each mosaic: idle ones wait here between tasks, so
/// that a mosaic's VRT, the sources GDAL opens under it (each a GeoTIFF
/// header and its georeferencing) are opened once per worker, not once per
/// task. Each task holds a handle of its own while it runs: GDAL handles are
/// not thread-safe, and one handle shared by every worker serialized all of
/// the batch's decoding behind one lock (issue 39: 16 tasks on 64 cores
/// decoded on about one).
struct Opened(Vec<Mutex<Vec<ClassRaster>>>);

impl Opened {
    fn new(mosaics: usize) -> Self {
        Opened((0..mosaics).map(|_| Mutex::new(Vec::new())).collect())
    }

    /// Smooths `spec` (a window of mosaic `mosaic`, read with the default
    /// band) on an idle handle of the mosaic, opening one if none is idle.
    /// A failed run drops its handle, so that the next task opens it afresh.
    fn smooth(
        &self,
        mosaic: usize,
        spec: &SmoothSpec,
        method: &dyn ClassSmoother,
        observer: &mut dyn Observer,
    ) -> Result<job::SmoothReport> {
        let idle = self.0[mosaic].lock().expect("mosaic lock").pop();
        let raster = match idle {
            Some(raster) => raster,
            None => open_on_gdal_thread(&spec.input)?,
        };
        let raster = Mutex::new(raster);
        let done = job::run_shared(spec, &raster, method, observer);
        if done.is_ok() {
            let raster = raster.into_inner().unwrap_or_else(|e| e.into_inner());
            self.0[mosaic].lock().expect("mosaic lock").push(raster);
        }
        done
    }
}

/// Opens `path` on one of [`crate::gdal::threads`]' long-lived threads: its
/// coordinate system is read there through the PROJ context that the
/// outputs' threads keep warm, not through a cold one on a worker.
fn open_on_gdal_thread(path: &Path) -> Result<ClassRaster> {
    let path = path.to_path_buf();
    crate::gdal::threads::run(move || ClassRaster::open(&path))
        .recv()
        .map_err(|_| Error::new("opening the mosaic failed (a GDAL thread stopped)"))?
}

/// Whether `part` of the raster at `path` (all of it when `None`) reads.
fn readable(path: &Path, part: Option<Rect>) -> bool {
    let Ok(mut raster) = ClassRaster::open_without_projection(path) else {
        return false;
    };
    let part = part.unwrap_or(Rect::new(0, 0, raster.meta.width, raster.meta.height));
    count(&mut raster, part).is_ok()
}

/// `window` cut into strips of about `pixels` pixels, top to bottom.
fn strip_rects(window: Rect, pixels: usize) -> impl Iterator<Item = Rect> {
    let rows = (pixels / window.width.max(1)).clamp(1, window.height.max(1));
    (0..window.height).step_by(rows).map(move |y| {
        Rect::new(
            window.x,
            window.y + y,
            window.width,
            rows.min(window.height - y),
        )
    })
}

/// Rows of `window` read from both rasters, in strips.
fn strips(
    a: &mut ClassRaster,
    b: &mut ClassRaster,
    window: Rect,
) -> Result<Vec<(Vec<u16>, Vec<u16>)>> {
    let mut out = Vec::new();
    for r in strip_rects(window, 4 << 20) {
        let mut p = vec![0u16; r.width * r.height];
        let mut q = vec![0u16; r.width * r.height];
        a.read(r, &mut p)?;
        b.read(r, &mut q)?;
        out.push((p, q));
    }
    Ok(out)
}

/// Pixels of `window` by code.
fn count(raster: &mut ClassRaster, window: Rect) -> Result<Counts> {
    let mut tally = CodeTally::new(raster.class_type.max_code() as usize + 1);
    let mut buf = Vec::new();
    for r in strip_rects(window, 8 << 20) {
        buf.resize(r.width * r.height, 0);
        raster.read(r, &mut buf)?;
        tally.add(&buf);
    }
    Ok(nonzero(tally.counts()))
}

/// The codes of a histogram by code that have pixels, with their counts.
fn nonzero(hist: &[u64]) -> Counts {
    hist.iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(c, &n)| (c as u16, n))
        .collect()
}

/// One bar over the batch on a terminal; one line per finished task
/// otherwise; with `MAPFILTER_PROGRESS=lines`, also progress lines over the
/// pixels of the batch. Both the bar and the lines move within tasks.
struct BatchProgress {
    bar: Option<ProgressBar>,
    lines: Option<Arc<Progress>>,
    quiet: bool,
    total: usize,
    finished: AtomicUsize,
}

/// What a task reports while it runs: its engine's steps, as pixels of the
/// batch, and the class counts of what its engine reads and writes.
struct TaskObserver {
    steps: Steps,
    /// Pixels of the task counted so far.
    counted: Arc<AtomicU64>,
    /// The counts of the run under way.
    tally: Option<Arc<Tally>>,
}

impl Observer for TaskObserver {
    fn progress(&self, _label: &str) -> Progress {
        Progress::steps_to(self.steps.clone())
    }

    fn tap(&self) -> Option<Arc<dyn Tap>> {
        self.tally.clone().map(|t| t as Arc<dyn Tap>)
    }
}

/// Counts by code of a task's window as its engine reads it (each pixel
/// once, though tiles overlap by their halo) and of its output as written,
/// so that a task's record needs no second reading of either.
struct Tally {
    /// The task's window in the input's pixels.
    center: Rect,
    inner: Mutex<TallyCounts>,
}

struct TallyCounts {
    /// The parts of the window counted already: each read's overlap with it.
    counted: Vec<Rect>,
    /// Scratch of a row's spans not counted yet, and of their next state.
    gaps: Vec<(usize, usize)>,
    next: Vec<(usize, usize)>,
    /// Pixels by code, for every code the band's type holds.
    input: CodeTally,
    output: CodeTally,
    input_pixels: usize,
    output_pixels: usize,
}

impl Tally {
    /// The tally of window `center` of a band whose codes are at most
    /// `max_code`.
    fn new(center: Rect, max_code: u16) -> Self {
        Tally {
            center,
            inner: Mutex::new(TallyCounts {
                counted: Vec::new(),
                gaps: Vec::new(),
                next: Vec::new(),
                input: CodeTally::new(max_code as usize + 1),
                output: CodeTally::new(max_code as usize + 1),
                input_pixels: 0,
                output_pixels: 0,
            }),
        }
    }

    /// The input's and the output's counts, each where every pixel of the
    /// window was seen (else `None`: read them from the files).
    fn counts(&self) -> (Option<Counts>, Option<Counts>) {
        let mut t = self.inner.lock().expect("tally lock");
        let t = &mut *t;
        let area = self.center.width * self.center.height;
        let counts =
            |hist: &mut CodeTally, pixels: usize| (pixels == area).then(|| nonzero(hist.counts()));
        (
            counts(&mut t.input, t.input_pixels),
            counts(&mut t.output, t.output_pixels),
        )
    }
}

impl Tap for Tally {
    fn read(&self, w: Rect, codes: &[u16]) {
        let Some(both) = w.intersection(&self.center) else {
            return;
        };
        let mut t = self.inner.lock().expect("tally lock");
        let TallyCounts {
            counted,
            gaps,
            next,
            input,
            input_pixels,
            ..
        } = &mut *t;
        // Only earlier reads that overlap this one take pixels from it
        // (with tiles on a grid, its neighbours).
        let overlapping: Vec<Rect> = counted
            .iter()
            .filter_map(|r| r.intersection(&both))
            .collect();
        for y in both.y..both.y + both.height {
            gaps.clear();
            gaps.push((both.x, both.x + both.width));
            for r in overlapping
                .iter()
                .filter(|r| (r.y..r.y + r.height).contains(&y))
            {
                next.clear();
                for &(a, b) in gaps.iter() {
                    let (x0, x1) = (r.x.max(a), (r.x + r.width).min(b));
                    if x0 >= x1 {
                        next.push((a, b));
                        continue;
                    }
                    if a < x0 {
                        next.push((a, x0));
                    }
                    if x1 < b {
                        next.push((x1, b));
                    }
                }
                std::mem::swap(gaps, next);
            }
            let row = (y - w.y) * w.width;
            for &(x0, x1) in gaps.iter() {
                input.add(&codes[row + x0 - w.x..row + x1 - w.x]);
                *input_pixels += x1 - x0;
            }
        }
        counted.push(both);
    }

    fn written(&self, _w: Rect, codes: &[u16]) {
        let mut t = self.inner.lock().expect("tally lock");
        t.output.add(codes);
        t.output_pixels += codes.len();
    }
}

impl BatchProgress {
    fn new(quiet: bool, tasks: usize, pixels: u64) -> Self {
        let lines = (!quiet && crate::progress::lines_wanted()).then(|| {
            let p = Progress::new(false, "batch");
            p.start(pixels, "px");
            Arc::new(p)
        });
        let bar = (!quiet && lines.is_none() && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(pixels), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "     batch [{elapsed_precise}] {wide_bar} {msg} {human_pos}/{human_len} px (eta {eta})",
                )
                .expect("static template"),
            );
            bar.set_message(format!("0/{tasks} tasks"));
            bar
        });
        BatchProgress {
            bar,
            lines,
            quiet,
            total: tasks,
            finished: AtomicUsize::new(0),
        }
    }

    /// The observer of `task`: its engine's fraction done, as its pixels.
    fn observer(&self, task: &Task) -> TaskObserver {
        let counted = Arc::new(AtomicU64::new(0));
        let (bar, lines, c) = (self.bar.clone(), self.lines.clone(), counted.clone());
        let pixels = task.pixels();
        let steps = Steps(Arc::new(move |pos, len| {
            let now = (pixels as u128 * pos.min(len) as u128 / len.max(1) as u128) as u64;
            advance(bar.as_ref(), lines.as_deref(), &c, now);
        }));
        TaskObserver {
            steps,
            counted,
            tally: None,
        }
    }

    fn finished(&self, task: &Task, observer: &TaskObserver, outcome: &Outcome) {
        advance(
            self.bar.as_ref(),
            self.lines.as_deref(),
            &observer.counted,
            task.pixels(),
        );
        let n = self.finished.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{n}/{} tasks", self.total));
            if let Outcome::Failed(e) = outcome {
                bar.println(format!("task {} failed: {e}", task.id));
            }
            return;
        }
        if self.quiet {
            return;
        }
        let what = match outcome {
            Outcome::Done(rec) => format!(
                "done in {:.2} s ({:.1} Mpx/s)",
                rec.seconds,
                rec.pixels as f64 / rec.seconds.max(1e-9) / 1e6
            ),
            Outcome::AlreadyDone => "done by another run".into(),
            Outcome::Busy => "held by another run".into(),
            Outcome::Failed(e) => format!("FAILED: {e}"),
        };
        eprintln!(
            "[{n}/{}] task {} {}: {what}",
            self.total,
            task.id,
            task.output.display()
        );
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if let Some(lines) = &self.lines {
            lines.finish();
        }
    }
}

/// Moves the batch's bar and lines on to `now` pixels of a task of which
/// `counted` were counted (never back).
fn advance(bar: Option<&ProgressBar>, lines: Option<&Progress>, counted: &AtomicU64, now: u64) {
    let before = counted.fetch_max(now, Ordering::SeqCst);
    if now > before {
        if let Some(bar) = bar {
            bar.inc(now - before);
        }
        if let Some(lines) = lines {
            lines.inc(now - before);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::observer::Tap;

    #[test]
    fn a_tally_counts_each_pixel_of_its_window_once() {
        // A 4x2 window at (1, 1) of a 6x4 input, read as two tiles that
        // overlap by a column and reach past the window.
        let tally = Tally::new(Rect::new(1, 1, 4, 2), u8::MAX as u16);
        let input: Vec<u16> = (0..24).map(|i| (i % 3) as u16).collect();
        let part = |r: Rect| -> Vec<u16> {
            (r.y..r.y + r.height)
                .flat_map(|y| input[y * 6 + r.x..y * 6 + r.x + r.width].to_vec())
                .collect()
        };
        let (left, right) = (Rect::new(0, 0, 4, 4), Rect::new(3, 0, 3, 4));
        tally.read(left, &part(left));
        assert_eq!(tally.counts().0, None, "half the window read");
        tally.read(right, &part(right));
        tally.read(left, &part(left));
        // Rows 1..3, columns 1..5: pixels 7..11 and 13..17, code i % 3.
        assert_eq!(tally.counts().0, Some(vec![(0, 2), (1, 4), (2, 2)]));
        tally.written(Rect::new(0, 0, 4, 1), &[5, 5, 6, 5]);
        assert_eq!(tally.counts().1, None, "half the output written");
        tally.written(Rect::new(0, 1, 4, 1), &[6, 6, 6, 6]);
        assert_eq!(tally.counts().1, Some(vec![(5, 3), (6, 5)]));
    }
}
