//! `batch run`: runs a share of a plan's tasks, several in flight, each one
//! a windowed smoothing job ([`crate::job::smooth`]), skipping tasks whose
//! output matches its done record, claiming each task before working on it,
//! and going on past failed tasks (listed at the end).
//!
//! A run ends only when every task of its share is done or failed: tasks
//! held by other runs are waited for (their claims polled) and taken over
//! once their holder is dead (see [`super::records`]), unless the request
//! says not to wait, when they are returned as busy. Before a task reads a
//! member of its mosaic, the member's size and georeferencing are checked
//! against the plan; a task writes only `out/NAME` of its plan, never
//! through a symlink and never over an input.

use super::handles::Opened;
use super::mmu::{self, Phase};
use super::plan::{MosaicPlan, Plan, Settings, Task};
use super::records::{self, Comparison, Counts, DoneRecord, FailedRecord, State, Syncer, hostname};
pub use super::request::{RunRequest, RunSummary, TaskFailure};
use super::share::Share;
use super::start::{methods_beside_first_reads, plan_workers, view};
use super::tally::{TaskTally, nonzero};
use super::workers::Workers;
use crate::job::observer::{Observer, Silent, Tap};
use crate::job::smooth::{self as job, Classes, Prefetched, SmoothSpec};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mapfilter_core::bail;
use mapfilter_core::classes::CodeTally;
use mapfilter_core::error::{Error, Kind, Result};
use mapfilter_core::io::ClassSource;
use mapfilter_core::method::ClassSmoother;
use mapfilter_core::method::naive::NaiveHost;
use mapfilter_core::output::Target;
use mapfilter_core::progress::{Progress, Steps};
use mapfilter_gdal::class_raster::ClassRaster;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tiles::Rect;

/// How often a run waiting for tasks held by others looks at their claims.
const POLL: Duration = Duration::from_millis(250);

/// The batch's own `out/` folder, made if missing: outputs go there, never
/// through a symlink.
fn out_dir(dir: &Path) -> Result<std::path::PathBuf> {
    let out = dir.join(super::plan::OUT_DIR);
    records::made_dir(&out)?;
    Ok(out)
}

/// Runs the request's share of the plan in `dir`.
pub fn run(req: &RunRequest) -> Result<RunSummary> {
    let start = Instant::now();
    let plan = Plan::load(req.dir)?;
    if let Share::Task(k) = req.share
        && k >= plan.tasks.len()
    {
        bail!(
            usage,
            format!("task {k} is not in the plan ({} tasks)", plan.tasks.len()),
            hint = "tasks are numbered from 0; see tasks.geojson"
        );
    }
    let settings = plan.options.settings()?;
    let state = State::open(req.dir)?.with_stale_after(req.stale_after);
    let out = out_dir(req.dir)?;
    records::release_on_signal();
    state.sweep_leftovers();
    let fingerprint = plan.fingerprint();
    // With a minimum mapping unit, tasks smooth into smoothed/ and each
    // mosaic is sieved once they all are (see `mmu`).
    let mmu = Phase::new(req, (&plan, &settings), &state)?;
    // A task whose record lacks part of its halo is done, unless failed
    // tasks are being retried: then it is run again.
    let finished = |task: &Task| {
        match &mmu {
            Some(phase) => phase.finished(task),
            None => state.done_and_intact(task, fingerprint),
        }
        .filter(|rec| !req.retry_failed || rec.missing_halo.is_empty())
    };
    // A failure of the task's inputs stays until --retry-failed; one of the
    // environment is tried again by any run.
    let failed_before = |task: &Task| {
        state
            .failed(task.id, fingerprint)
            .filter(|f| !req.retry_failed && !f.environment)
    };
    let (mut summary, mut todo) = sort_out(req, &plan.tasks, &finished, &failed_before);
    if todo.is_empty() {
        // Nothing to run: no device is opened (an OpenCL start-up and its
        // program builds take longer than checking a finished plan).
        mmu::finish(mmu.as_ref(), req, &mut summary)?;
        sweep_temp_files(&out, &state);
        return Ok(summary.sorted(start));
    }
    if let Some(spawner) = req.spawn.filter(|_| req.worker.is_none()) {
        let slots = super::processes::slots(
            spawner.processes,
            &settings.method.device,
            &mapfilter_core::device::nvidia_gpus(),
        );
        if !slots.is_empty() {
            let ids: Vec<usize> = todo.iter().map(|t| t.id).collect();
            let mut summary = super::processes::run(req, spawner, &slots, &ids, summary, &run)?;
            mmu::finish(mmu.as_ref(), req, &mut summary)?;
            return Ok(summary.sorted(start));
        }
    }
    let workers = plan_workers(req, todo.len());
    let first: Vec<&Task> = todo.iter().take(workers.jobs).copied().collect();
    let (methods, prefetched) =
        methods_beside_first_reads(req, (&plan, &settings), &first, workers)?;
    let progress = BatchProgress::new(
        req.quiet,
        req.worker.map(|w| format!("{}/{}", w.index, w.count)),
        todo.len(),
        todo.iter().map(|t| t.pixels()).sum(),
    );
    let ctx = Context {
        dir: req.dir,
        plan: &plan,
        settings: &settings,
        methods: &methods,
        state: &state,
        finished: &|task: &Task| finished(task).is_some(),
        failed_before: &failed_before,
        fingerprint,
        syncer: Syncer::start(),
        opened: Opened::new(plan.mosaics.len()),
        members: Mutex::new(std::collections::HashMap::new()),
        prefetched: Mutex::new(prefetched.into_iter().collect()),
    };
    let mut announced = false;
    loop {
        let busy = summarise_round(&mut summary, run_round(&ctx, &todo, workers, &progress));
        if busy.is_empty() {
            break;
        }
        if !req.wait {
            summary.busy = busy.iter().map(|t| t.id).collect();
            break;
        }
        if !announced && !req.quiet {
            progress.println(&format!(
                "batch: waiting for {} task(s) held by other runs (taken over if their holder dies)",
                busy.len()
            ));
            announced = true;
        }
        mapfilter_core::interrupt::check()?;
        std::thread::sleep(POLL);
        todo = busy;
    }
    progress.finish();
    // What this run wrote is on disk before it says it is done.
    ctx.syncer.finish()?;
    summary.devices = methods.iter().flat_map(|m| m.take_shares()).collect();
    mmu::finish(mmu.as_ref(), req, &mut summary)?;
    if summary.busy.is_empty() {
        sweep_temp_files(&out, &state);
    }
    Ok(summary.sorted(start))
}

/// Notes a round's outcomes in `summary`: the tasks found busy.
fn summarise_round<'t>(
    summary: &mut RunSummary,
    outcomes: Vec<(&'t Task, Outcome)>,
) -> Vec<&'t Task> {
    let mut busy = Vec::new();
    for (task, outcome) in outcomes {
        match outcome {
            Outcome::Done(rec) => {
                summary.done_now += 1;
                summary.done.push(task.id);
                summary.pixels_now += rec.pixels;
                if !rec.missing_halo.is_empty() {
                    summary.degraded.push(task.id);
                }
            }
            Outcome::AlreadyDone => summary.already_done += 1,
            Outcome::Busy => busy.push(task),
            Outcome::Failed(f) => summary.failed.push(f),
        }
    }
    busy
}

/// Removes what killed runs left in `out/`, `state/` and `smoothed/` (temp files no
/// live process holds, scratch files of tasks), once no task is claimed by
/// anyone: every writer of the batch holds a claim, so none is writing.
/// Run at the end of a run that waited for every task, and by a run that
/// finds nothing to do.
fn sweep_temp_files(out: &Path, state: &State) {
    if state.has_claims() {
        return;
    }
    mapfilter_core::output::sweep_unlocked(out);
    mapfilter_core::output::sweep_unlocked(state.dir());
    state.remove_scratch();
    // The smoothed windows' folder (a plan with --mmu): its VRT's temp
    // files, and the folder once empty.
    let smoothed = mapfilter_core::output::parent_dir(out).join(super::plan::SMOOTHED_DIR);
    mapfilter_core::output::sweep_unlocked(&smoothed);
    let _ = std::fs::remove_dir(&smoothed);
}

/// Runs `tasks` with `workers.jobs` workers and a heartbeat: each task's
/// outcome. Each worker computes on a rayon pool of its own
/// (`workers.task_threads`), so that one task's small pieces of work wake
/// only its own threads (see [`super::workers`]).
fn run_round<'t>(
    ctx: &Context,
    tasks: &[&'t Task],
    workers: Workers,
    progress: &BatchProgress,
) -> Vec<(&'t Task, Outcome)> {
    let state = ctx.state;
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    // This run's claims are refreshed until the workers are done.
    records::with_heartbeat(state, || {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers.jobs.clamp(1, tasks.len().max(1)))
                .map(|w| {
                    let (next, results) = (&next, &results);
                    let method = ctx.methods[w % ctx.methods.len()].as_ref();
                    scope.spawn(move || {
                        let work = || loop {
                            let i = next.fetch_add(1, Ordering::SeqCst);
                            let Some(&task) = tasks.get(i) else { break };
                            let mut observer = progress.observer(task);
                            let outcome = ctx.attempt(task, method, &mut observer);
                            progress.finished(task, &observer, &outcome);
                            results.lock().expect("results lock").push((task, outcome));
                        };
                        match task_pool(w, workers.task_threads) {
                            Some(pool) => pool.install(work),
                            None => work(),
                        }
                    })
                })
                .collect();
            let joined: Vec<_> = handles.into_iter().map(|w| w.join()).collect();
            if let Some(panicked) = joined.into_iter().find_map(|j| j.err()) {
                std::panic::resume_unwind(panicked);
            }
        })
    });
    results.into_inner().expect("results lock")
}

/// Worker `w`'s compute pool of `threads` threads; none (the shared pool
/// computes) if the system refuses the threads.
fn task_pool(w: usize, threads: usize) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("mapfilter-task{w}-{i}"))
        .build()
        .inspect_err(|e| log::debug!("worker {w} computes on the shared pool: {e}"))
        .ok()
}

/// What one attempt at a task came to.
enum Outcome {
    Done(Box<DoneRecord>),
    AlreadyDone,
    Busy,
    Failed(TaskFailure),
}

struct Context<'a> {
    dir: &'a Path,
    plan: &'a Plan,
    settings: &'a Settings,
    /// The smoothers the workers compute with: worker i uses method i mod n
    /// (one per device when each takes whole tasks, else one).
    methods: &'a [Box<dyn ClassSmoother>],
    state: &'a State,
    /// Whether a task counts as finished (its output matches its record).
    finished: &'a (dyn Fn(&Task) -> bool + Sync),
    /// The record of a task that failed (in another run) and stays failed.
    failed_before: &'a (dyn Fn(&Task) -> Option<FailedRecord> + Sync),
    fingerprint: u32,
    /// Syncs outputs and records off the workers' path (see `records`).
    syncer: Syncer,
    /// The mosaics' handles, shared by the workers.
    opened: Opened,
    /// Members checked against the plan: how each differs, if it does.
    members: Mutex<std::collections::HashMap<std::path::PathBuf, Option<String>>>,
    /// Windows of the first tasks read while the devices started.
    prefetched: Mutex<std::collections::HashMap<usize, Prefetched>>,
}

/// The request's tasks sorted out: those done before (some degraded) and
/// failed before go to the summary, the rest are to run (in a worker
/// process, from its own part of the list on).
fn sort_out<'p>(
    req: &RunRequest,
    tasks: &'p [Task],
    finished: &dyn Fn(&Task) -> Option<DoneRecord>,
    failed_before: &dyn Fn(&Task) -> Option<FailedRecord>,
) -> (RunSummary, Vec<&'p Task>) {
    let mut summary = RunSummary::default();
    let mut todo = Vec::new();
    let taken = |t: &&Task| req.takes(t);
    for task in tasks.iter().filter(taken) {
        summary.selected += 1;
        if let Some(rec) = finished(task) {
            summary.already_done += 1;
            if !rec.missing_halo.is_empty() {
                summary.degraded.push(task.id);
            }
        } else if let Some(f) = failed_before(task) {
            summary.failed.push(TaskFailure {
                task: task.id,
                error: f.error,
                kind: f.kind.as_deref().and_then(Kind::from_name),
                environment: false,
            });
        } else {
            todo.push(task);
        }
    }
    if let Some(w) = req.worker {
        // Worker i of n starts at the i-th n-th of the list: the workers
        // claim (and read ahead) different tasks first.
        let at = todo.len() * w.index / w.count;
        todo.rotate_left(at);
    }
    (summary, todo)
}

impl Context<'_> {
    fn attempt(
        &self,
        task: &Task,
        method: &dyn ClassSmoother,
        observer: &mut TaskObserver,
    ) -> Outcome {
        let failure = |e: &Error, environment: bool| {
            Outcome::Failed(TaskFailure {
                task: task.id,
                error: e.to_string(),
                kind: Some(e.kind()),
                environment,
            })
        };
        // Pixels read ahead serve this attempt only.
        let prefetched = self
            .prefetched
            .lock()
            .expect("prefetch lock")
            .remove(&task.id);
        let claim = match self.state.claim(task.id) {
            Ok(Some(c)) => c,
            Ok(None) => return Outcome::Busy,
            Err(e) => return failure(&e, true),
        };
        // Another run may have finished it, or failed it, between the
        // check and the claim (a run that waited for it).
        if (self.finished)(task) {
            return Outcome::AlreadyDone;
        }
        if let Some(f) = (self.failed_before)(task) {
            return Outcome::Failed(TaskFailure {
                task: task.id,
                error: f.error,
                kind: f.kind.as_deref().and_then(Kind::from_name),
                environment: false,
            });
        }
        let outcome = match self.run_task(task, method, observer, prefetched) {
            Ok(rec) => match self.record(&rec) {
                Ok(record) => {
                    self.syncer.add(self.dir.join(&rec.output));
                    self.syncer.add(record);
                    Outcome::Done(Box::new(rec))
                }
                Err(e) => failure(&e, true),
            },
            // An interrupted task is not a failed one: no record.
            Err(e) if mapfilter_core::interrupt::check().is_err() => failure(&e, true),
            Err(e) => {
                let environment = self.environmental(task, &e);
                let written = self.state.write_failed(&FailedRecord {
                    task: task.id,
                    plan: self.fingerprint,
                    error: e.to_string(),
                    kind: Some(e.kind().name().to_string()),
                    host: hostname(),
                    environment,
                });
                if written.is_ok() {
                    self.syncer.add(self.state.failed_path(task.id));
                }
                failure(&e, environment)
            }
        };
        drop(claim);
        outcome
    }

    /// Where `task` writes, relative to the batch: its output, or with a
    /// minimum mapping unit its smoothed window (see `mmu`).
    fn written(&self, task: &Task) -> std::path::PathBuf {
        match self.plan.options.mmu {
            Some(_) => super::mmu::smoothed_output(task),
            None => task.output.clone(),
        }
    }

    /// Records a task done (smoothed, with a minimum mapping unit): where.
    fn record(&self, rec: &DoneRecord) -> Result<std::path::PathBuf> {
        match self.plan.options.mmu {
            Some(_) => {
                self.state.write_smoothed(rec)?;
                Ok(self.state.smoothed_path(rec.task))
            }
            None => {
                self.state.write_done(rec)?;
                Ok(self.state.done_path(rec.task))
            }
        }
    }

    /// Whether the failure `e` of `task` came from the environment rather
    /// than from its inputs: its message names a full disk, a quota, a
    /// read-only file system or a denied permission, or the output folder
    /// and the state folder cannot be written now (a probe file fails: the
    /// disk is full, a file size limit, the folder is gone or read-only).
    /// Such a failure is tried again by the next run.
    fn environmental(&self, task: &Task, e: &Error) -> bool {
        const CAUSES: [&str; 8] = [
            "no space left",
            "disk quota",
            "is full",
            "file too large",
            "read-only file system",
            "permission denied",
            "operation not permitted",
            "too many open files",
        ];
        let text = e.to_string().to_ascii_lowercase();
        if CAUSES.iter().any(|c| text.contains(c)) {
            return true;
        }
        let output = self.dir.join(self.written(task));
        let folder = mapfilter_core::output::parent_dir(&output);
        [folder.as_path(), self.state.dir()]
            .iter()
            .any(|d| probe_write(d).is_err())
    }

    fn run_task(
        &self,
        task: &Task,
        method: &dyn ClassSmoother,
        observer: &mut TaskObserver,
        prefetched: Option<Prefetched>,
    ) -> Result<DoneRecord> {
        mapfilter_core::interrupt::check()?;
        let t0 = Instant::now();
        let mosaic = &self.plan.mosaics[task.mosaic];
        let output = self.dir.join(self.written(task));
        self.check_members(mosaic, task)
            .map_err(|e| e.context(format!("task {}", task.id)))?;
        let spec = self.spec(mosaic, task, &output)?;
        let mut missing_halo = Vec::new();
        let center = Self::center(mosaic, task);
        observer.tally = Some(Arc::new(TaskTally::new(center, mosaic.classes.max_code)));
        let done = match self
            .opened
            .smooth(task.mosaic, &spec, prefetched, method, observer)
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
                observer.tally = Some(Arc::new(TaskTally::new(center, mosaic.classes.max_code)));
                let done = job::run(&spec, method, observer);
                let _ = std::fs::remove_file(&vrt);
                missing_halo = bad;
                done.map_err(|e| e.context(format!("task {}", task.id)))?
            }
        };
        let engine_seconds = done.stats.totals.wall.as_secs_f64();
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
            output: self.written(task),
            size: std::fs::metadata(&output)
                .map_err(|e| Error::io(format!("{}: {e}", output.display())))?
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
            stages: Some((&done.stats.stages).into()),
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
        view(self.settings, mosaic, task)
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
        let choice = self.plan.options.band_choice();
        let mut info = super::mosaic::read_infos(std::slice::from_ref(&task.input), choice)?
            .pop()
            .ok_or_else(|| Error::internal("no input to describe"))?;
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
        mapfilter_core::output::text::write(
            &mapfilter_core::output::Destination::File(Target::check(&path, true, &[])?),
            &xml,
        )?;
        Ok(path)
    }

    /// Fails if a member of `mosaic` under the task's window and halo is
    /// no longer the raster planned: another size, or moved on the ground.
    /// Each member is checked once per run; one that does not open is left
    /// to the read (a neighbour that cannot be read may be taken as nodata).
    fn check_members(&self, mosaic: &MosaicPlan, task: &Task) -> Result<()> {
        let view = self.view(mosaic, task);
        let offset = ((mosaic.width - mosaic.output_width) / 2) as f64;
        let grid = mapfilter_gdal::class_raster::shift_transform(
            mosaic.output_geo_transform,
            -offset,
            -offset,
        );
        for m in &mosaic.members {
            if view
                .intersection(&Rect::new(m.x, m.y, m.width, m.height))
                .is_none()
            {
                continue;
            }
            let known = self
                .members
                .lock()
                .expect("members lock")
                .get(&m.path)
                .cloned();
            let changed = match known {
                Some(changed) => changed,
                None => {
                    let changed = member_change(m, grid);
                    self.members
                        .lock()
                        .expect("members lock")
                        .insert(m.path.clone(), changed.clone());
                    changed
                }
            };
            if let Some(how) = changed {
                bail!(
                    input,
                    format!("{} changed since the plan: {how}", m.path.display()),
                    hint = super::plan::replan_hint()
                );
            }
        }
        Ok(())
    }

    fn spec(&self, mosaic: &MosaicPlan, task: &Task, output: &Path) -> Result<SmoothSpec> {
        let target = mmu::task_target(mosaic, task, output)?;
        Ok(SmoothSpec {
            input: mosaic.source.clone(),
            band: Default::default(),
            dst_nodata: self.plan.options.dst_nodata,
            target,
            kernel: self.settings.kernel.clone(),
            weights: self.settings.weights.clone(),
            border: self.settings.border,
            fill_nodata: self.plan.options.fill_nodata,
            tile: self.plan.options.tile,
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

/// How member `m` differs from what the plan says of it (its size, and its
/// origin and pixel size on the mosaic's grid `grid`), if it does; `None`
/// also when it cannot be opened (a read failure, handled by the task).
fn member_change(m: &super::mosaic::Member, grid: [f64; 6]) -> Option<String> {
    let Ok(raster) = ClassRaster::open_without_projection(&m.path) else {
        return None;
    };
    let meta = &raster.meta;
    if (meta.width, meta.height) != (m.width, m.height) {
        return Some(format!(
            "{}x{} pixels now, {}x{} planned",
            meta.width, meta.height, m.width, m.height
        ));
    }
    let want = mapfilter_gdal::class_raster::shift_transform(grid, m.x as f64, m.y as f64);
    // A file whose georeferencing does not read (a truncated header) is
    // a read failure of its own, not a move.
    let have = meta.geo_transform?;
    // Within a thousandth of a pixel: the plan's grid is the members' own.
    let pixel = grid[1].abs().max(grid[5].abs()).max(f64::MIN_POSITIVE);
    let moved = want
        .iter()
        .zip(&have)
        .any(|(a, b)| (a - b).is_nan() || (a - b).abs() > 1e-3 * pixel);
    moved.then(|| format!("its georeferencing is {have:?} now, {want:?} planned"))
}

/// Writes and removes a probe file of 64 KiB in `dir`: fails when the
/// folder is missing or cannot be written, or the disk cannot take that
/// much (full, over quota, a file size limit). Named as a temp file, so a
/// probe left by a kill is swept like one.
fn probe_write(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let path = dir.join(format!(
        "{}probe.{}.{:?}",
        mapfilter_core::output::TEMP_PREFIX,
        std::process::id(),
        std::thread::current().id()
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| {
            f.write_all(&[0u8; 64 << 10])?;
            f.sync_all()
        });
    let _ = std::fs::remove_file(&path);
    written
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

/// One bar over the batch on a terminal; one line per finished task
/// otherwise; with `MAPFILTER_PROGRESS=lines`, also progress lines over the
/// pixels of the batch. Both the bar and the lines move within tasks.
struct BatchProgress {
    bar: Option<ProgressBar>,
    lines: Option<Arc<Progress>>,
    quiet: bool,
    /// `I/N` of a worker process, which names itself on its lines.
    worker: Option<String>,
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
    tally: Option<Arc<TaskTally>>,
}

impl Observer for TaskObserver {
    fn progress(&self, _label: &str) -> Progress {
        Progress::steps_to(self.steps.clone())
    }

    fn tap(&self) -> Option<Arc<dyn Tap>> {
        self.tally.clone().map(|t| t as Arc<dyn Tap>)
    }
}

impl BatchProgress {
    /// A worker process (`worker`) prints lines per task, no bar: its
    /// siblings print theirs on the same terminal.
    fn new(quiet: bool, worker: Option<String>, tasks: usize, pixels: u64) -> Self {
        let lines =
            (!quiet && worker.is_none() && mapfilter_core::progress::lines_wanted()).then(|| {
                let p = Progress::new(false, "batch");
                p.start(pixels, "px");
                Arc::new(p)
            });
        let bar = (!quiet && worker.is_none() && lines.is_none() && std::io::stderr().is_terminal())
            .then(|| {
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
            worker,
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
        if let Outcome::Busy = outcome {
            // Not finished: waited for, or listed at the end.
            return;
        }
        advance(
            self.bar.as_ref(),
            self.lines.as_deref(),
            &observer.counted,
            task.pixels(),
        );
        let n = self.finished.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{n}/{} tasks", self.total));
            if let Outcome::Failed(f) = outcome {
                bar.println(format!("task {} failed: {}", task.id, f.error));
            }
            return;
        }
        if self.quiet {
            return;
        }
        let what = match outcome {
            Outcome::Done(rec) => {
                let stages = rec.stages.map_or(String::new(), |s| {
                    format!(
                        "; engine {:.2} s: busy reading {:.2} s, preparing {:.2} s, waiting for the method {:.2} s, writing {:.2} s",
                        rec.engine_seconds, s.read, s.prepare, s.wait, s.write
                    )
                });
                format!(
                    "done in {:.2} s ({:.1} Mpx/s){stages}",
                    rec.seconds,
                    rec.pixels as f64 / rec.seconds.max(1e-9) / 1e6
                )
            }
            // A worker's siblings are other runs: not worth a line.
            Outcome::AlreadyDone if self.worker.is_some() => return,
            Outcome::AlreadyDone => "done by another run".into(),
            Outcome::Busy => return,
            Outcome::Failed(f) => format!("FAILED: {}", f.error),
        };
        let count = match &self.worker {
            Some(w) => format!("worker {w}"),
            None => format!("{n}/{}", self.total),
        };
        // One write per line: worker processes share the stream, and a
        // line written in pieces would interleave with a sibling's.
        let line = format!(
            "[{count}] task {} {}: {what}\n",
            task.id,
            task.output.display()
        );
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    }

    /// A line of the run's own, above the bar if there is one.
    fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
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

/// A fuzz of what a batch directory may hold: plan.json with any field
/// changed to any value (an output elsewhere, an index out of range, sizes
/// near 2^64), forged, oversized, linked or garbled records and claims, a
/// symlink planted in `out/`. Whatever it holds, `batch run` and `batch
/// report` return (no panic), and nothing outside `out/`, `state/` and the
/// report's own files changes: inputs, plan.json and a file beside the
/// batch stay byte-identical.
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::batch::plan::{PlanRequest, SmoothOptions};
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    /// Fields of plan.json changed, as JSON pointers.
    const FIELDS: [&str; 24] = [
        "/tasks/0/output",
        "/tasks/1/output",
        "/tasks/0/mosaic",
        "/tasks/0/window/0",
        "/tasks/0/window/2",
        "/tasks/1/window/3",
        "/tasks/0/id",
        "/tasks/1/input",
        "/mosaics/0/width",
        "/mosaics/0/output_width",
        "/mosaics/0/output_height",
        "/mosaics/0/members/0/x",
        "/mosaics/0/members/1/width",
        "/mosaics/0/members/0/path",
        "/mosaics/0/source",
        "/options/tile",
        "/compare_tasks",
        "/tasks/0",
        "/mosaics/0/classes/max_code",
        "/mosaics/0/classes/every_code",
        "/mosaics/0/output_geo_transform/1",
        "/options/kernel",
        "/mosaics",
        "/tasks",
    ];

    /// Values put there; `{root}` is the folder holding the batch.
    fn values(root: &Path) -> Vec<Value> {
        let r = root.display();
        vec![
            json!(7),
            json!(0),
            json!(1),
            json!(24),
            json!(u64::MAX),
            json!(-1),
            json!(1e300),
            json!("../in/a.tif"),
            json!(format!("{r}/victim.tif")),
            json!("out/../plan.json"),
            json!("plan.json"),
            json!("state/task-0.done.json"),
            json!("out/b.tif"),
            json!("out/.mapfilter-tmp.1.x.tif"),
            json!("out/sub/x.tif"),
            json!(format!("{r}/in/b.tif")),
            json!(""),
            Value::Null,
            json!([]),
            json!([5, 0]),
            json!({"a": 1}),
            json!("gaussian:1e9"),
        ]
    }

    /// Records and claims planted in state/ (or out/): what each is.
    const RECORDS: usize = 10;

    fn plant(batch: &Path, task: usize, kind: usize) {
        let state = batch.join("state");
        let file = |k: &str| state.join(format!("task-{task}.{k}"));
        let host = hostname();
        let _ = match kind {
            // A done record of the task's real output whose counts would
            // wrap a sum.
            0 => (|| {
                let path = file("done.json");
                let mut rec: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
                rec["input_counts"] = json!([[1, u64::MAX], [2, u64::MAX]]);
                rec["output_counts"] = json!([[1, u64::MAX]]);
                rec["pixels"] = json!(u64::MAX);
                std::fs::write(&path, rec.to_string()).ok()
            })()
            .is_some(),
            1 => std::os::unix::fs::symlink("/dev/zero", file("done.json")).is_ok(),
            2 => std::fs::write(file("done.json"), [0xff, b'{', 0]).is_ok(),
            3 => std::fs::write(
                file("failed.json"),
                json!({"task": task, "plan": 0, "error": "x", "host": host, "environment": true})
                    .to_string(),
            )
            .is_ok(),
            // A claim of a dead process here; of a live one elsewhere.
            4 => std::fs::write(
                file("claim"),
                json!({"host": host, "pid": 4_194_305, "nonce": 1}).to_string(),
            )
            .is_ok(),
            5 => std::fs::write(
                file("claim"),
                json!({"host": "elsewhere", "pid": 1, "nonce": 1, "stale_after": 1e9}).to_string(),
            )
            .is_ok(),
            6 => std::os::unix::fs::symlink("/dev/zero", file("claim")).is_ok(),
            7 => std::fs::write(file("claim"), vec![b'x'; 1 << 16]).is_ok(),
            // Symlinks in out/ to an input and to the file beside the batch.
            8 => std::os::unix::fs::symlink("../../in/a.tif", batch.join("out/a.tif")).is_ok(),
            _ => std::os::unix::fs::symlink("../../victim.tif", batch.join("out/b.tif")).is_ok(),
        };
    }

    /// Two 24x16 tiles side by side on one grid, codes 0-5 and nodata 9.
    fn inputs(dir: &Path) -> Vec<PathBuf> {
        let driver = gdal::DriverManager::get_driver_by_name("GTiff").unwrap();
        (0..2)
            .map(|i| {
                let path = dir.join(["a.tif", "b.tif"][i]);
                let mut ds = driver
                    .create_with_band_type::<u8, _>(&path, 24, 16, 1)
                    .unwrap();
                let gt = [
                    1000.0 + 24.0 * 10.0 * i as f64,
                    10.0,
                    0.0,
                    5000.0,
                    0.0,
                    -10.0,
                ];
                ds.set_geo_transform(&gt).unwrap();
                let mut band = ds.rasterband(1).unwrap();
                band.set_no_data_value(Some(9.0)).unwrap();
                let data: Vec<u8> = (0..24 * 16)
                    .map(|p| {
                        if p % 37 == 0 {
                            9
                        } else {
                            ((p / 5 + i) % 6) as u8
                        }
                    })
                    .collect();
                let mut buffer = gdal::raster::Buffer::new((24, 16), data);
                band.write((0, 0), (24, 16), &mut buffer).unwrap();
                path
            })
            .collect()
    }

    fn options() -> SmoothOptions {
        SmoothOptions {
            kernel: "gaussian:1".parse().unwrap(),
            size: None,
            kernel_given: None,
            kernel_conversion: None,
            class_weights: Default::default(),
            border: tiles::Border::Same,
            fill_nodata: false,
            tile: Some(16),
            method: "naive".parse().unwrap(),
            rank: None,
            energy: None,
            terms: None,
            exact: false,
            device: Some(mapfilter_core::device::DeviceChoice::Host),
            variant: None,
            compress: mapfilter_gdal::output_options::Compression::Deflate,
            compress_level: None,
            ties: Default::default(),
            keep: Vec::new(),
            no_vote: Vec::new(),
            only_isolated: None,
            iterations: 1,
            format: None,
            creation_options: Vec::new(),
            band: None,
            src_nodata: None,
            dst_nodata: None,
            mmu: None,
        }
    }

    /// Every file under `root` but those a batch may write (`out/`,
    /// `state/`, its reports and outputs' mosaics), with its bytes (a
    /// symlink: its target).
    fn snapshot(root: &Path, batch: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut todo = vec![root.to_path_buf()];
        while let Some(dir) = todo.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let path = e.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let writable = path.parent() == Some(batch)
                    && (["out", "state", "report.json", "report.html", "mosaic.vrt"]
                        .contains(&name.as_str())
                        || name.starts_with("mosaic-out-"));
                if writable {
                    continue;
                }
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.is_dir() {
                    todo.push(path);
                } else if meta.file_type().is_symlink() {
                    let target = std::fs::read_link(&path).unwrap();
                    files.insert(path, target.into_os_string().into_encoded_bytes());
                } else {
                    files.insert(path.clone(), std::fs::read(&path).unwrap());
                }
            }
        }
        files
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn no_batch_directory_makes_run_or_report_panic_or_write_outside(
            run_first in any::<bool>(),
            jobs in 1usize..3,
            records in prop::collection::vec((0usize..2, 0..RECORDS), 0..3),
            changes in prop::collection::vec((0..FIELDS.len(), 0usize..22), 0..3),
        ) {
            let root = tempfile::tempdir().unwrap();
            let root = root.path();
            std::fs::create_dir(root.join("in")).unwrap();
            std::fs::write(root.join("victim.tif"), b"not to be touched").unwrap();
            let tiles = inputs(&root.join("in"));
            let batch = root.join("batch");
            let args: Vec<String> = tiles.iter().map(|p| p.display().to_string()).collect();
            Plan::make(&PlanRequest {
                inputs: &args,
                dir: &batch,
                options: options(),
                grid: None,
                compare_with: Some("naive".into()),
                compare_sample: None,
                overwrite: false,
                allow_subpixel: false,
                dry_run: false,
            })
            .unwrap();
            let request = RunRequest {
                dir: &batch,
                share: Share::All,
                retry_failed: false,
                jobs: Some(jobs),
                quiet: true,
                stale_after: Duration::from_secs(600),
                wait: false,
                only: None,
                worker: None,
                spawn: None,
            };
            if run_first {
                let first = run(&request).unwrap();
                prop_assert_eq!(first.done_now, 2);
            }
            for &(task, kind) in &records {
                plant(&batch, task, kind);
            }
            if !changes.is_empty() {
                let path = batch.join("plan.json");
                let mut plan: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                let values = values(root);
                for &(field, value) in &changes {
                    if let Some(slot) = plan.pointer_mut(FIELDS[field]) {
                        *slot = values[value % values.len()].clone();
                    }
                }
                std::fs::write(&path, plan.to_string()).unwrap();
            }
            let before = snapshot(root, &batch);
            // Errors are fine; a panic fails the case.
            let _ = run(&request);
            if let Ok(plan) = Plan::load(&batch) {
                let _ = crate::batch::report::write(
                    &batch,
                    &plan,
                    None,
                    &crate::batch::report::ReportOptions {
                        area_unit: "auto".into(),
                        ..Default::default()
                    },
                );
            }
            let after = snapshot(root, &batch);
            prop_assert!(before == after, "changed: {:?}", before
                .keys()
                .chain(after.keys())
                .filter(|k| before.get(*k) != after.get(*k))
                .collect::<Vec<_>>());
        }
    }
}
