//! What a `batch run` is asked to do and what it did: the request (its
//! share, waiting, tasks in flight, worker processes) and the summary, which
//! a worker process prints as JSON for its parent.

use super::share::Share;
use mapfilter_core::device::DeviceChoice;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

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
    /// Wait for tasks held by other live runs (else return them as busy).
    pub wait: bool,
    /// Only these tasks of the share (`None`: all of them).
    pub only: Option<&'a [usize]>,
    /// This run is one of a run's worker processes (see [`super::processes`]).
    pub worker: Option<&'a WorkerRole>,
    /// How this run may start worker processes (`None`: it does not).
    pub spawn: Option<&'a Spawner<'a>>,
}

/// What a run did (a worker process prints it as JSON for its parent).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RunSummary {
    pub selected: usize,
    /// Done before this run (output matched its record).
    pub already_done: usize,
    pub done_now: usize,
    /// The tasks done now.
    pub done: Vec<usize>,
    /// Failed now, or before and not retried.
    pub failed: Vec<TaskFailure>,
    /// Held by another live run (only when not waiting).
    pub busy: Vec<usize>,
    /// Done, but without the halo of neighbours that could not be read.
    pub degraded: Vec<usize>,
    pub seconds: f64,
    pub pixels_now: u64,
    /// Mosaics sieved by this run (a plan with `--mmu`).
    #[serde(default)]
    pub sieved: Vec<MosaicSieved>,
    /// Tasks of the share smoothed whose mosaic is not sieved yet: tasks
    /// of it outside this run's share are not smoothed (a plan with
    /// `--mmu`; the run that smooths the last of them sieves it).
    #[serde(default)]
    pub awaiting_sieve: Vec<usize>,
    /// Mosaics whose sieve failed in this run, with the error (their
    /// tasks' final outputs are not all written; a plain rerun tries again).
    #[serde(default)]
    pub sieve_failed: Vec<(usize, String)>,
    /// What each device did when several shared the tiles (else empty).
    #[serde(skip)]
    pub devices: Vec<mapfilter_core::method::multi::DeviceShare>,
}

/// A mosaic sieved as one raster (`batch plan --mmu`): what its minimum
/// mapping unit did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MosaicSieved {
    pub mosaic: usize,
    /// The threshold in pixels.
    pub threshold: u64,
    pub polygons: usize,
    /// Polygons under the threshold that joined a neighbour.
    pub merged: usize,
    pub pixels_changed: u64,
    /// Its tasks, whose final outputs this wrote.
    pub tasks: usize,
    pub seconds: f64,
}

/// A task that failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskFailure {
    pub task: usize,
    pub error: String,
    /// The error's kind, where known (records of earlier versions have none).
    #[serde(default)]
    pub kind: Option<mapfilter_core::error::Kind>,
    /// Caused by the environment (disk, folders), not the task's inputs.
    pub environment: bool,
}

impl RunRequest<'_> {
    /// Whether the request takes `task` (its share, and `only`).
    pub fn takes(&self, task: &super::plan::Task) -> bool {
        self.share.takes(task.id) && self.only.is_none_or(|o| o.contains(&task.id))
    }
}

impl RunSummary {
    pub(super) fn sorted(mut self, start: Instant) -> Self {
        self.failed.sort_by_key(|f| f.task);
        self.done.sort();
        self.busy.sort();
        self.degraded.sort();
        self.awaiting_sieve.sort();
        self.awaiting_sieve.dedup();
        self.seconds = start.elapsed().as_secs_f64();
        self
    }
}

/// One of a run's worker processes: which it is and what it computes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerRole {
    pub index: usize,
    pub count: usize,
    /// The device choice that replaces the plan's in this worker.
    pub device: DeviceChoice,
}

/// How a run may start worker processes.
pub struct Spawner<'a> {
    /// Worker processes asked for (`--processes`); `None`: one per GPU of a
    /// plan on `all` GPUs, else one (the run stays in this process).
    pub processes: Option<usize>,
    /// The command line of a worker (the binary, `batch run`, the batch
    /// directory and the run's options, marked as worker `role`).
    pub command: &'a (dyn Fn(&WorkerRole) -> Command + Sync),
}
