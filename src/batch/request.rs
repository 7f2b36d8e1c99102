//! What a `batch run` is asked to do and what it did: the request (its
//! share, waiting, tasks in flight, worker processes) and the summary, which
//! a worker process prints as JSON for its parent.

use super::share::Share;
use crate::device::DeviceChoice;
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
    /// What each device did when several shared the tiles (else empty).
    #[serde(skip)]
    pub devices: Vec<crate::method::multi::Share>,
}

/// A task that failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskFailure {
    pub task: usize,
    pub error: String,
    /// Caused by the environment (disk, folders), not the task's inputs.
    pub environment: bool,
}

impl RunSummary {
    pub(super) fn sorted(mut self, start: Instant) -> Self {
        self.failed.sort_by_key(|f| f.task);
        self.done.sort();
        self.busy.sort();
        self.degraded.sort();
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
