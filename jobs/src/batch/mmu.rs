//! `batch run` of a plan with a minimum mapping unit (`batch plan --mmu`):
//! the sieve phase, and where a task's smoothing goes before it; and the
//! check of a task's output path that every task's writing goes through.
//!
//! A patch may cross tiles, so no task can sieve its own window: the result
//! must be the sieve of the whole smoothed mosaic, as `smooth --mmu` of the
//! merged mosaic computes it. So a task of such a plan smooths its window
//! into `DIR/smoothed/NAME.tif` (not its output) and records it in
//! `state/task-K.smoothed.json`. Once every task of a mosaic is smoothed,
//! one run sieves the mosaic as one raster, streaming over the VRT of the
//! smoothed windows (`DIR/smoothed/mosaic-M.vrt`, in bounded memory), and
//! writes each task's final output window `out/NAME.tif` from the sieve's
//! strips (temp file + rename, as every output of the batch), then
//! `state/mosaic-M.sieved.json` (what the sieve changed), then the tasks'
//! done records, and only then, everything synced, removes the smoothed
//! windows and their records.
//!
//! Where the sieve phase runs: in the run that finds, after its own tasks,
//! every task of a mosaic smoothed (for sharded runs, the shard that
//! smooths a mosaic's last task; with worker processes, the parent once its
//! workers are done), guarded by the claim `state/mosaic-M.claim` (a lease
//! like a task's, refreshed by a heartbeat and taken over once its holder
//! is dead), so that one run sieves a mosaic. A run that finds the claim
//! held waits for it (or, with `--no-wait`, lists the mosaic's tasks as
//! held by others: exit 75). A shard whose mosaic still lacks tasks of
//! other shards leaves its smoothed windows for the run that smooths the
//! last one, says so, and exits 0 (its share is done; the mosaic is that
//! run's).
//!
//! Resume: a mosaic is complete when every task's final output matches its
//! done record (and then a task counts as done); otherwise a task counts as
//! done when its smoothed window matches its smoothed record, and any rerun
//! (`batch run DIR`, any share of the mosaic) that finds every window
//! smoothed sieves it again from the start. Final outputs are never
//! written unsieved or half-written, the smoothed windows stay until every
//! final output and record is on disk, and a run whose sieve failed exits
//! 1.

use super::mosaic::{self, Member};
use super::plan::{MosaicPlan, Plan, Settings, Task};
use super::records::{self, DoneRecord, State, Syncer, hostname};
use super::request::{MosaicSieved, RunRequest, RunSummary};
use super::tally::nonzero;
use mapfilter_core::classes::CodeTally;
use mapfilter_core::error::{Error, Result};
use mapfilter_core::io::ClassSink;
use mapfilter_core::output::Target;
use mapfilter_core::sieve::{SieveOptions, sieve};
use mapfilter_gdal::class_raster::ClassRaster;
use mapfilter_gdal::output_raster::{OutputRaster, OutputSpec};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tiles::Rect;

pub use super::plan::SMOOTHED_DIR;

/// How often a run waiting for another's sieve looks at its claim.
const POLL: Duration = Duration::from_millis(250);

/// Where `task` smooths to in a plan with `--mmu`, relative to the batch.
pub fn smoothed_output(task: &Task) -> PathBuf {
    Path::new(SMOOTHED_DIR).join(task.output.file_name().unwrap_or_default())
}

/// The record of mosaic `m`'s sieve in the state directory.
fn sieved_name(m: usize) -> String {
    format!("mosaic-{m}.sieved.json")
}

/// What the sieve of a mosaic did, for `batch report`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SievedRecord {
    /// The plan it was done under.
    pub plan: u32,
    pub host: String,
    #[serde(flatten)]
    pub sieved: MosaicSieved,
}

/// The record of mosaic `m`'s sieve under plan `plan`, if there is one.
pub fn sieved_record(state: &State, m: usize, plan: u32) -> Option<SievedRecord> {
    state
        .read_named::<SievedRecord>(&sieved_name(m))
        .filter(|r| r.plan == plan && r.sieved.mosaic == m)
}

/// The minimum mapping unit's side of a run: which mosaics with a task in
/// the run's share were complete when it started, and its sieve phase.
pub struct Phase<'a> {
    finisher: Finisher<'a>,
    complete: Vec<bool>,
}

impl<'a> Phase<'a> {
    /// The phase of a run of `plan` (`None` without `--mmu`), with
    /// `smoothed/` made where a mosaic of the share has work left.
    pub fn new(
        req: &RunRequest,
        (plan, settings): (&'a Plan, &'a Settings),
        state: &'a State,
    ) -> Result<Option<Self>> {
        if plan.options.mmu.is_none() {
            return Ok(None);
        }
        let finisher = Finisher {
            dir: req.dir.to_path_buf(),
            plan,
            settings,
            state,
            fingerprint: plan.fingerprint(),
            retry_failed: req.retry_failed,
        };
        let mut touched = vec![false; plan.mosaics.len()];
        for t in plan.tasks.iter().filter(|t| req.takes(t)) {
            touched[t.mosaic] = true;
        }
        let complete: Vec<bool> = touched
            .iter()
            .enumerate()
            .map(|(m, &t)| t && finisher.complete(m))
            .collect();
        // Made only for a mosaic with work left (a finished batch has none).
        if touched.iter().zip(&complete).any(|(&t, &c)| t && !c) {
            records::made_dir(&req.dir.join(SMOOTHED_DIR))?;
        }
        Ok(Some(Phase { finisher, complete }))
    }

    /// The record that makes `task` done when the run starts: its final
    /// output's in a complete mosaic, else its smoothed window's (its
    /// mosaic is sieved after).
    pub fn finished(&self, task: &Task) -> Option<DoneRecord> {
        if self.complete[task.mosaic] {
            let f = &self.finisher;
            f.state.done_and_intact(task, f.fingerprint)
        } else {
            self.finisher.smoothed(task, true)
        }
    }
}

/// The sieve phase after a run's tasks (`phase`: `None` without `--mmu`):
/// in the run itself, not in its worker processes (their parent runs it
/// once they are done). Fails only when interrupted.
pub fn finish(phase: Option<&Phase>, req: &RunRequest, summary: &mut RunSummary) -> Result<()> {
    let Some(phase) = phase.filter(|_| req.worker.is_none()) else {
        return Ok(());
    };
    let f = &phase.finisher;
    let share: Vec<&Task> = f.plan.tasks.iter().filter(|t| req.takes(t)).collect();
    f.run(req, &share, summary)
}

/// The sieve phase of a run of a plan with `--mmu`.
struct Finisher<'a> {
    dir: PathBuf,
    plan: &'a Plan,
    settings: &'a Settings,
    state: &'a State,
    fingerprint: u32,
    retry_failed: bool,
}

impl Finisher<'_> {
    /// Whether every task of mosaic `m` has its final output, matching its
    /// done record (none degraded, when failed tasks are retried: such a
    /// task is smoothed again, and its mosaic sieved again).
    fn complete(&self, m: usize) -> bool {
        self.plan.tasks.iter().filter(|t| t.mosaic == m).all(|t| {
            self.state
                .done_and_intact(t, self.fingerprint)
                .is_some_and(|r| !self.retry_failed || r.missing_halo.is_empty())
        })
    }

    /// The record of a task's smoothed window, if the window matches it
    /// (its checksum read only when `checked`).
    fn smoothed(&self, task: &Task, checked: bool) -> Option<DoneRecord> {
        self.state
            .smoothed_and_intact(task, &smoothed_output(task), self.fingerprint, checked)
    }

    /// Sieves every mosaic with a task in `share` that is not complete and
    /// whose tasks are all smoothed (see the module's comment), noting in
    /// `summary` what it did; fails only when interrupted.
    fn run(&self, req: &RunRequest, share: &[&Task], summary: &mut RunSummary) -> Result<()> {
        let mut mosaics: Vec<usize> = share.iter().map(|t| t.mosaic).collect();
        mosaics.sort();
        mosaics.dedup();
        for m in mosaics {
            let mine: Vec<usize> = share
                .iter()
                .filter(|t| t.mosaic == m)
                .map(|t| t.id)
                .collect();
            self.finish_mosaic(req, m, &mine, summary)?;
        }
        Ok(())
    }

    /// Sieves mosaic `m` unless complete, waiting for a run that holds its
    /// sieve when `req.wait`; `mine`: its tasks in the run's share.
    fn finish_mosaic(
        &self,
        req: &RunRequest,
        m: usize,
        mine: &[usize],
        summary: &mut RunSummary,
    ) -> Result<()> {
        let tasks: Vec<&Task> = self.plan.tasks.iter().filter(|t| t.mosaic == m).collect();
        let mut announced = false;
        loop {
            if self.complete(m) {
                self.sweep_smoothed(m, &tasks);
                return Ok(());
            }
            // A cheap look first; the windows' checksums once claimed.
            let smoothed: Vec<Option<DoneRecord>> =
                tasks.iter().map(|t| self.smoothed(t, false)).collect();
            if smoothed.iter().any(Option::is_none) {
                // Tasks outside this run (other shards, failed ones) are
                // not smoothed yet: the run that smooths the last sieves.
                let mine: std::collections::HashSet<usize> = mine.iter().copied().collect();
                summary.awaiting_sieve.extend(
                    tasks
                        .iter()
                        .zip(&smoothed)
                        .filter(|(t, s)| s.is_some() && mine.contains(&t.id))
                        .map(|(t, _)| t.id),
                );
                return Ok(());
            }
            let vrt = self.dir.join(SMOOTHED_DIR).join(format!("mosaic-{m}.vrt"));
            let claim = match self
                .state
                .claim_named(&format!("mosaic-{m}"), vec![vrt.clone()])
            {
                Ok(claim) => claim,
                Err(e) => {
                    summary.sieve_failed.push((m, e.to_string()));
                    return Ok(());
                }
            };
            let Some(claim) = claim else {
                if !req.wait {
                    summary.busy.extend(mine);
                    return Ok(());
                }
                if !announced && !req.quiet {
                    eprintln!(
                        "batch: waiting for another run's sieve of mosaic {m} (taken over if its holder dies)"
                    );
                    announced = true;
                }
                mapfilter_core::interrupt::check()?;
                std::thread::sleep(POLL);
                continue;
            };
            // Another run may have sieved it between the checks and the claim.
            if self.complete(m) {
                return Ok(());
            }
            let smoothed: Option<Vec<DoneRecord>> =
                tasks.iter().map(|t| self.smoothed(t, true)).collect();
            let Some(smoothed) = smoothed else {
                // A window changed since it was looked at: its task is to
                // be smoothed again, by the next run.
                summary
                    .sieve_failed
                    .push((m, "a smoothed window no longer matches its record".into()));
                return Ok(());
            };
            let done = records::with_heartbeat(self.state, || {
                self.sieve(m, &tasks, smoothed, &vrt, req.quiet)
            });
            let _ = std::fs::remove_file(&vrt);
            drop(claim);
            match done {
                Ok(sieved) => {
                    summary.sieved.push(sieved);
                    self.remove_empty_folder();
                }
                Err(e) if mapfilter_core::interrupt::check().is_err() => return Err(e),
                Err(e) => summary.sieve_failed.push((m, e.to_string())),
            }
            return Ok(());
        }
    }

    /// Sieves mosaic `m` (its `tasks`, smoothed as `smoothed` says) into
    /// the tasks' final outputs and records them (see the module's comment).
    fn sieve(
        &self,
        m: usize,
        tasks: &[&Task],
        smoothed: Vec<DoneRecord>,
        vrt: &Path,
        quiet: bool,
    ) -> Result<MosaicSieved> {
        let t0 = Instant::now();
        let mosaic = &self.plan.mosaics[m];
        let mmu = self
            .plan
            .options
            .mmu
            .as_ref()
            .ok_or_else(|| Error::internal("the plan has no minimum mapping unit"))?;
        let threshold = mosaic
            .mmu_pixels
            .ok_or_else(|| Error::internal(format!("mosaic {m} has no minimum mapping unit")))?;
        self.write_vrt(mosaic, tasks, vrt)?;
        let mut source = ClassRaster::open(vrt)?;
        let options = SieveOptions::new(threshold, mmu.connectivity()?, source.nodata_code());
        let syncer = Syncer::start();
        let mut sink = Splitter {
            finisher: self,
            mosaic,
            parts: tasks.iter().map(|&task| Part::new(task)).collect(),
            syncer: &syncer,
        };
        let stats = sieve(
            &mut source,
            &mut sink,
            &options,
            &mapfilter_core::progress::Progress::new(quiet, "sieve"),
        )
        .map_err(|e| e.context(format!("mosaic {m}: the minimum mapping unit")))?;
        let parts = sink.parts;
        let written = parts
            .into_iter()
            .map(|part| {
                let task = part.task;
                part.written.ok_or_else(|| {
                    Error::io(format!(
                        "mosaic {m}: the sieve left {} unwritten",
                        task.output.display()
                    ))
                })
            })
            .collect::<Result<Vec<Written>>>()?;
        let sieved = MosaicSieved {
            mosaic: m,
            threshold: stats.threshold,
            polygons: stats.polygons,
            merged: stats.merged,
            pixels_changed: stats.pixels_changed,
            tasks: tasks.len(),
            seconds: t0.elapsed().as_secs_f64(),
        };
        // The sieve's record before the tasks' done records: a mosaic whose
        // tasks are all done has it (a kill between the two sieves again).
        self.state.write_named(
            &sieved_name(m),
            &SievedRecord {
                plan: self.fingerprint,
                host: hostname(),
                sieved: sieved.clone(),
            },
        )?;
        syncer.add(self.state.named_path(&sieved_name(m)));
        for ((task, written), rec) in tasks.iter().zip(written).zip(smoothed) {
            let rec = DoneRecord {
                output: task.output.clone(),
                size: written.size,
                crc32: written.crc32,
                output_counts: written.counts,
                ..rec
            };
            self.state.write_done(&rec)?;
            syncer.add(self.state.done_path(task.id));
        }
        // Every final output and record is on disk before the smoothed
        // windows go: a crash before this point sieves again.
        syncer.finish()?;
        self.remove_smoothed(tasks);
        Ok(sieved)
    }

    /// Writes the VRT of the smoothed windows of `tasks` on `mosaic`'s
    /// output grid.
    fn write_vrt(&self, mosaic: &MosaicPlan, tasks: &[&Task], vrt: &Path) -> Result<()> {
        let path = |t: &Task| {
            let p = self.dir.join(smoothed_output(t));
            std::path::absolute(&p).unwrap_or(p)
        };
        let members: Vec<Member> = tasks
            .iter()
            .map(|t| {
                let [x, y, width, height] = t.window;
                Member {
                    path: path(t),
                    x,
                    y,
                    width,
                    height,
                }
            })
            .collect();
        let first = mosaic::read_infos(std::slice::from_ref(&members[0].path), Default::default())?
            .pop()
            .ok_or_else(|| Error::internal("no smoothed window to describe"))?;
        let xml = mosaic::vrt_xml(
            &members,
            (mosaic.output_width, mosaic.output_height),
            mosaic.output_geo_transform,
            &first,
        );
        mapfilter_core::output::text::write(
            &mapfilter_core::output::Destination::File(Target::check(vrt, true, &[])?),
            &xml,
        )
    }

    /// Removes the smoothed windows of `tasks` and their records: once
    /// their mosaic's final outputs are on disk.
    fn remove_smoothed(&self, tasks: &[&Task]) {
        for t in tasks {
            let window = self.dir.join(smoothed_output(t));
            let mut sidecar = window.clone().into_os_string();
            sidecar.push(".aux.xml");
            let _ = std::fs::remove_file(&window);
            let _ = std::fs::remove_file(sidecar);
            let _ = std::fs::remove_file(self.state.smoothed_path(t.id));
        }
    }

    /// Removes what a run killed after sieving mosaic `m` left of its
    /// smoothed windows, once no run holds a claim (none is writing).
    fn sweep_smoothed(&self, m: usize, tasks: &[&Task]) {
        if self.state.has_claims() {
            return;
        }
        self.remove_smoothed(tasks);
        let _ = std::fs::remove_file(self.dir.join(SMOOTHED_DIR).join(format!("mosaic-{m}.vrt")));
        self.remove_empty_folder();
    }

    /// Removes `smoothed/` once empty, unless a run holds a claim (it may
    /// be about to smooth into it).
    fn remove_empty_folder(&self) {
        if !self.state.has_claims() {
            let _ = std::fs::remove_dir(self.dir.join(SMOOTHED_DIR));
        }
    }

    /// The target of `task`'s final output, checked as a task's smoothing
    /// checks its own.
    fn target(&self, mosaic: &MosaicPlan, task: &Task) -> Result<Target> {
        task_target(mosaic, task, &self.dir.join(&task.output))
    }
}

/// A task's final output as the sieve's strips reach it.
struct Part<'a> {
    task: &'a Task,
    out: Option<OutputRaster>,
    tally: Option<CodeTally>,
    rows: usize,
    written: Option<Written>,
}

/// A final output once committed.
struct Written {
    size: u64,
    crc32: u32,
    counts: records::Counts,
}

impl<'a> Part<'a> {
    fn new(task: &'a Task) -> Self {
        Part {
            task,
            out: None,
            tally: None,
            rows: 0,
            written: None,
        }
    }
}

/// The sieve's sink: each full-width strip of the mosaic cut into the
/// tasks' windows, each task's output opened at its first row and
/// committed at its last.
struct Splitter<'a> {
    finisher: &'a Finisher<'a>,
    mosaic: &'a MosaicPlan,
    parts: Vec<Part<'a>>,
    syncer: &'a Syncer,
}

impl Splitter<'_> {
    /// Opens `part`'s output, with its smoothed window's georeferencing,
    /// nodata, colours and category names.
    fn open(&self, part: &Part) -> Result<(OutputRaster, CodeTally)> {
        let window = self.finisher.dir.join(smoothed_output(part.task));
        let smoothed = ClassRaster::open(&window)?;
        let spec = OutputSpec::like(&smoothed, self.finisher.settings.compression.clone());
        let target = self.finisher.target(self.mosaic, part.task)?;
        let tally = CodeTally::new(smoothed.class_type.max_code() as usize + 1);
        Ok((OutputRaster::create(&target, &spec)?, tally))
    }
}

impl ClassSink for Splitter<'_> {
    fn write(&mut self, window: Rect, codes: &[u16]) -> Result<()> {
        let width = window.width;
        for i in 0..self.parts.len() {
            let rect = self.parts[i].task.rect();
            let y0 = rect.y.max(window.y);
            let y1 = (rect.y + rect.height).min(window.y + window.height);
            if y0 >= y1 {
                continue;
            }
            if self.parts[i].out.is_none() {
                let (out, tally) = self.open(&self.parts[i])?;
                self.parts[i].out = Some(out);
                self.parts[i].tally = Some(tally);
            }
            let mut rows = Vec::with_capacity(rect.width * (y1 - y0));
            for y in y0..y1 {
                let at = (y - window.y) * width + rect.x - window.x;
                rows.extend_from_slice(&codes[at..at + rect.width]);
            }
            let part = &mut self.parts[i];
            let local = Rect::new(0, y0 - rect.y, rect.width, y1 - y0);
            part.out
                .as_mut()
                .expect("opened above")
                .write(local, &rows)?;
            part.tally.as_mut().expect("opened above").add(&rows);
            part.rows += y1 - y0;
            if part.rows == rect.height {
                part.out.take().expect("opened above").finish()?;
                let path = self.finisher.dir.join(&part.task.output);
                let size = std::fs::metadata(&path)
                    .map_err(|e| Error::io(format!("{}: {e}", path.display())))?
                    .len();
                part.written = Some(Written {
                    size,
                    crc32: records::checksum(&path)?,
                    counts: nonzero(part.tally.take().expect("opened above").counts()),
                });
                self.syncer.add(path);
            }
        }
        Ok(())
    }
}

/// The checked target of `task`'s output at `output` (its smoothing, or
/// with an MMU its final window): never written through a symlink (it
/// could lead anywhere) nor over a file that is not a plain one, nor over
/// an input: a member of the mosaic may be under out/ by another name (a
/// hard link, a plan edited by hand). A task's output is replaced: it is
/// only ever a complete output of this very task (temp file + rename) that
/// lacks its record. Synced by the run's `Syncer`, off the workers' path.
pub(super) fn task_target(mosaic: &MosaicPlan, task: &Task, output: &Path) -> Result<Target> {
    if let Ok(meta) = std::fs::symlink_metadata(output)
        && !meta.is_file()
    {
        mapfilter_core::bail!(
            input,
            format!(
                "{} is a symlink or not a plain file: a task's output is never written through one",
                output.display()
            ),
            hint = "remove it; a batch writes only plain files in its out/ folder"
        );
    }
    let mut inputs: Vec<&Path> = mosaic.members.iter().map(|m| m.path.as_path()).collect();
    inputs.extend([mosaic.source.as_path(), task.input.as_path()]);
    Ok(Target::check(output, true, &inputs)?.synced_later())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::plan::{MmuOption, PlanRequest, SmoothOptions};
    use crate::batch::request::RunRequest;
    use crate::batch::share::Share;

    /// Two 24x16 tiles side by side on one projected grid (10 m pixels),
    /// stripes of codes 1-3 that run across the seam, nodata 9.
    fn tiles(dir: &Path) -> Vec<String> {
        let driver = gdal::DriverManager::get_driver_by_name("GTiff").unwrap();
        let srs = gdal::spatial_ref::SpatialRef::from_epsg(32633).unwrap();
        (0..2)
            .map(|i| {
                let path = dir.join(["a.tif", "b.tif"][i]);
                let mut ds = driver
                    .create_with_band_type::<u8, _>(&path, 24, 16, 1)
                    .unwrap();
                let gt = [500_000.0 + 240.0 * i as f64, 10.0, 0.0, 5e6, 0.0, -10.0];
                ds.set_geo_transform(&gt).unwrap();
                ds.set_spatial_ref(&srs).unwrap();
                let mut band = ds.rasterband(1).unwrap();
                band.set_no_data_value(Some(9.0)).unwrap();
                let data: Vec<u8> = (0..24 * 16)
                    .map(|p| [1, 2, 3][(p / 24 + p % 24 / 7) % 3])
                    .collect();
                let mut buffer = gdal::raster::Buffer::new((24, 16), data);
                band.write((0, 0), (24, 16), &mut buffer).unwrap();
                path.display().to_string()
            })
            .collect()
    }

    fn options(mmu: &str) -> SmoothOptions {
        let mut options: SmoothOptions = serde_json::from_value(serde_json::json!({
            "kernel": "box:3", "size": null, "class_weights": null, "border": "same",
            "fill_nodata": false, "tile": 16, "method": "naive", "rank": null,
            "energy": null, "terms": null, "exact": false, "device": "host",
            "variant": null, "compress": "deflate", "compress_level": null,
        }))
        .unwrap();
        options.mmu = Some(MmuOption {
            given: mmu.into(),
            connectivity: 8,
        });
        options
    }

    fn request(dir: &Path, share: Share) -> RunRequest<'_> {
        RunRequest {
            dir,
            share,
            retry_failed: false,
            jobs: Some(1),
            quiet: true,
            stale_after: Duration::from_secs(600),
            wait: true,
            only: None,
            worker: None,
            spawn: None,
        }
    }

    fn plan(root: &Path, mmu: &str) -> (PathBuf, Plan) {
        let inputs = tiles(root);
        let batch = root.join("batch");
        let plan = Plan::make(&PlanRequest {
            inputs: &inputs,
            dir: &batch,
            options: options(mmu),
            grid: None,
            compare_with: None,
            compare_sample: None,
            overwrite: false,
            allow_subpixel: false,
            dry_run: false,
        })
        .unwrap();
        (batch, plan)
    }

    /// An area becomes pixels with the mosaic's pixel area (1 ha on 100 m²
    /// pixels: 100 px), kept in plan.json; a plan made before --mmu (no
    /// field) still reads, and a plan whose fields disagree does not.
    #[test]
    fn the_plan_keeps_the_mmu_typed_and_old_plans_still_read() {
        let root = tempfile::tempdir().unwrap();
        let (batch, plan) = plan(root.path(), "1ha");
        assert_eq!(plan.mosaics[0].mmu_pixels, Some(100));
        let loaded = Plan::load(&batch).unwrap();
        assert_eq!(loaded.options.mmu, plan.options.mmu);
        let path = batch.join("plan.json");
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let with = json.clone();
        json["options"].as_object_mut().unwrap().remove("mmu");
        json["mosaics"][0]
            .as_object_mut()
            .unwrap()
            .remove("mmu_pixels");
        std::fs::write(&path, json.to_string()).unwrap();
        assert_eq!(Plan::load(&batch).unwrap().options.mmu, None);
        for (pointer, value) in [
            ("/options/mmu/connectivity", serde_json::json!(6)),
            ("/mosaics/0/mmu_pixels", serde_json::Value::Null),
            ("/mosaics/0/mmu_pixels", serde_json::json!(0)),
            ("/options/mmu/given", serde_json::json!("0")),
        ] {
            let mut bad = with.clone();
            *bad.pointer_mut(pointer).unwrap() = value;
            std::fs::write(&path, bad.to_string()).unwrap();
            let e = Plan::load(&batch).expect_err(pointer).to_string();
            assert!(e.contains("not a valid plan"), "{pointer}: {e}");
        }
    }

    /// Shard 0 smooths its task and leaves the sieve (no output, the task
    /// awaiting it); shard 1 smooths the last task and sieves the mosaic:
    /// every output, done records, the sieve's record, nothing of smoothed/.
    #[test]
    fn the_run_that_smooths_a_mosaics_last_task_sieves_it() {
        let root = tempfile::tempdir().unwrap();
        let (batch, plan) = plan(root.path(), "20");
        let first =
            super::super::run::run(&request(&batch, Share::Shard { index: 0, count: 2 })).unwrap();
        assert_eq!((first.done_now, first.awaiting_sieve.clone()), (1, vec![0]));
        assert!(first.sieved.is_empty());
        assert!(!batch.join(&plan.tasks[0].output).exists());
        assert!(batch.join(smoothed_output(&plan.tasks[0])).exists());
        let second =
            super::super::run::run(&request(&batch, Share::Shard { index: 1, count: 2 })).unwrap();
        assert_eq!(second.sieved.len(), 1, "{second:?}");
        assert_eq!(second.sieved[0].threshold, 20);
        assert!(second.awaiting_sieve.is_empty());
        let state = State::open(&batch).unwrap();
        let fingerprint = plan.fingerprint();
        for task in &plan.tasks {
            let rec = state.done_and_intact(task, fingerprint).expect("done");
            assert_eq!(rec.output, task.output);
            assert!(!state.smoothed_path(task.id).exists());
        }
        assert!(sieved_record(&state, 0, fingerprint).is_some());
        assert!(!batch.join(SMOOTHED_DIR).exists());
        // A finished batch: nothing to do, and smoothed/ not made again.
        let again = super::super::run::run(&request(&batch, Share::All)).unwrap();
        assert_eq!((again.done_now, again.already_done), (0, 2));
        assert!(again.sieved.is_empty());
        assert!(!batch.join(SMOOTHED_DIR).exists());
    }
}
