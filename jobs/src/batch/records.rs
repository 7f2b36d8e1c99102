//! The state of a batch, one file per task under `DIR/state/`:
//!
//! - `task-K.claim`: made by atomic create (`O_EXCL`, which network
//!   filesystems honour where `flock` is unreliable) by the run working on
//!   task K, removed when it is done, when the task fails, and by the
//!   signal handler on SIGINT/SIGTERM/SIGHUP. It names the host, the
//!   process and the process's start time, and is a lease: its holder
//!   refreshes its mtime (a heartbeat, see [`refresh_held`]). A claim is
//!   stale, and taken over, when its process is dead (same host: gone, a
//!   zombie nobody reaped, or its PID now another process's, told by the
//!   start time) or when it was not refreshed for longer than the lease
//!   (any host: a node that died). Ages are the local clock against
//!   the file's mtime, so on a network filesystem the hosts' clocks must
//!   agree to well within the lease.
//! - `task-K.halo.vrt`, `task-K.baseline.tif`: scratch files of the run
//!   holding the claim of task K.
//! - `task-K.done.json`: written atomically once the output is in place:
//!   the output's size and CRC-32, timings, class counts. A task whose
//!   output still matches its record is done.
//! - With a minimum mapping unit (`batch plan --mmu`, see [`super::mmu`]):
//!   `task-K.smoothed.json`, the record of a task's smoothed window (as a
//!   done record, of `smoothed/NAME.tif`), until its mosaic is sieved;
//!   `mosaic-M.claim`, held by the run sieving mosaic M (a claim as a
//!   task's); `mosaic-M.sieved.json`, what that sieve changed.
//! - `task-K.failed.json`: the error of a failed task. A failure of the
//!   environment (a full disk, a missing or unwritable folder) is marked
//!   so, and a plain rerun tries its task again.
//!
//! Every file here is read with a size limit, without following a symlink
//! and only if it is a regular file (a record linked to `/dev/zero` or a
//! FIFO is not read), and a record counts only if it agrees with its task
//! ([`DoneRecord::agrees_with`]): a forged one cannot make the report's
//! sums wrap. Records are written by rename over their name, never through
//! a symlink planted there.
//!
//! Durability: outputs and records are moved into place by rename (atomic)
//! without waiting for the disk; a [`Syncer`] thread of the run syncs them
//! (and their directories) in passes while the workers go on, and the run
//! waits for it before it ends, so a finished run's files are on disk as
//! with `smooth`. Claims are never synced. That keeps every guarantee,
//! because nothing is trusted without a check:
//! - A process killed at any moment (SIGKILL) loses nothing written: the
//!   kernel's page cache outlives it. Only a crash of the machine can lose
//!   unsynced data.
//! - After such a crash a record may be missing (the task runs again and
//!   writes the same bytes), or be empty or garbled (it does not parse:
//!   the same), or have survived when its output did not (the output is
//!   missing, empty, short or zero-filled: its size or CRC-32 no longer
//!   matches, so the task runs again). A record counts only while its
//!   output matches its size and checksum ([`State::done_and_intact`]);
//!   the outputs of exact methods are deterministic, so a task done twice
//!   gives the same bytes.
//! - A claim only matters while its holder lives; after a crash its
//!   process is gone. A claim left empty by a crash does not read, so it
//!   cannot name its process: it is taken for stale once not modified for
//!   longer than the lease (live claims are refreshed well within it).

use super::plan::Task;
use mapfilter_core::error::{Error, Result};
use mapfilter_core::output::{self, Destination, Target};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// How long a claim may go unrefreshed before another run takes it over,
/// unless `batch run --stale-after` says otherwise.
pub const DEFAULT_STALE_AFTER: Duration = Duration::from_secs(600);
/// The longest time between two refreshes of a held claim.
const MAX_HEARTBEAT: Duration = Duration::from_secs(30);
/// Scratch files of a task, kept in the state directory while it is claimed.
const SCRATCH: [&str; 2] = ["halo.vrt", "baseline.tif"];

/// Pixel counts by class code (codes with no pixel left out).
pub type Counts = Vec<(u16, u64)>;

/// Largest claim read: a claim is a line of JSON.
const MAX_CLAIM: u64 = 4 << 10;

/// A finished task.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DoneRecord {
    pub task: usize,
    /// The plan it was done under ([`super::plan::Plan::fingerprint`]): a
    /// record of an earlier plan in the same directory never counts.
    #[serde(default)]
    pub plan: u32,
    pub output: PathBuf,
    pub size: u64,
    pub crc32: u32,
    /// Wall time of the task (smoothing, writing, counting).
    pub seconds: f64,
    /// Of which in the engine.
    pub engine_seconds: f64,
    pub pixels: u64,
    pub host: String,
    /// Input and output pixels of the window by code (nodata included).
    pub input_counts: Counts,
    pub output_counts: Counts,
    pub nodata: Option<u16>,
    pub output_nodata: Option<u16>,
    /// Against the exact baseline, when the plan asked for it.
    pub comparison: Option<Comparison>,
    /// Neighbouring inputs that could not be read: the halo from them was
    /// taken as nodata, so this output's edge may differ from a run over
    /// the whole mosaic. `--retry-failed` runs such tasks again.
    #[serde(default)]
    pub missing_halo: Vec<PathBuf>,
    /// Where the engine's time went (absent in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<StageSeconds>,
}

/// Busy seconds of a task's engine stages, each on the thread that runs it
/// (`batch run -v` prints them): what a slow task waited for.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StageSeconds {
    /// Reading and decoding source windows (the reader thread).
    pub read: f64,
    /// Padding and compacting tiles before the method.
    pub prepare: f64,
    /// Waiting for the method's results (device kernels, host tiles).
    pub wait: f64,
    /// Encoding and writing the output (the writer thread).
    pub write: f64,
}

impl From<&mapfilter_core::engine::StageTimes> for StageSeconds {
    fn from(s: &mapfilter_core::engine::StageTimes) -> Self {
        StageSeconds {
            read: s.read.as_secs_f64(),
            prepare: s.prepare.as_secs_f64(),
            wait: (s.submit + s.wait).as_secs_f64(),
            write: s.sink.as_secs_f64(),
        }
    }
}

impl DoneRecord {
    /// Whether the record can be the record of `task`: its number, output
    /// and pixels, and counts that add up to its pixels (checked, so a
    /// forged record cannot overflow a sum here or in the report).
    pub fn agrees_with(&self, task: &Task) -> bool {
        let total = |counts: &Counts| {
            counts
                .iter()
                .try_fold(0u64, |sum, &(_, n)| sum.checked_add(n))
        };
        let compared = self.comparison.as_ref().is_none_or(|c| {
            c.pairs
                .iter()
                .try_fold(c.one_only, |sum, &(_, _, n)| sum.checked_add(n))
                .is_some_and(|n| n <= self.pixels)
        });
        self.task == task.id
            && self.output == task.output
            && self.pixels == task.pixels()
            && total(&self.input_counts) == Some(self.pixels)
            && total(&self.output_counts) == Some(self.pixels)
            && compared
            && self.seconds.is_finite()
            && self.seconds >= 0.0
            && self.engine_seconds.is_finite()
            && self.engine_seconds >= 0.0
    }
}

/// A confusion matrix of one task against the exact baseline: counts of
/// (baseline code, output code) pairs of pixels valid in both, and the
/// pixels valid in one only.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    pub pairs: Vec<(u16, u16, u64)>,
    pub one_only: u64,
}

/// A failed task.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FailedRecord {
    pub task: usize,
    #[serde(default)]
    pub plan: u32,
    pub error: String,
    /// The error's kind (`Kind::name`: usage, input, resource, device, io,
    /// …), for scripts that sort failures; absent in records of earlier
    /// versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub host: String,
    /// Caused by the environment (disk full, a folder missing or not
    /// writable), not by the task's inputs: a plain rerun tries it again.
    #[serde(default)]
    pub environment: bool,
}

/// The state directory of a batch.
pub struct State {
    dir: PathBuf,
    batch: PathBuf,
    /// Claims not refreshed for this long are stale; also the lease this
    /// run's claims promise.
    stale_after: Duration,
}

impl State {
    pub fn open(batch: &Path) -> Result<State> {
        let dir = batch.join("state");
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::io(format!("cannot make {}: {e}", dir.display()))
                .hint("the batch directory must be writable")
        })?;
        real_dir(&dir)?;
        Ok(State {
            dir,
            batch: batch.to_path_buf(),
            stale_after: DEFAULT_STALE_AFTER,
        })
    }

    /// The same state with claims stale after `lease` without a refresh.
    pub fn with_stale_after(self, lease: Duration) -> State {
        State {
            stale_after: lease,
            ..self
        }
    }

    /// How often this run refreshes its claims: several times per lease.
    pub fn heartbeat(&self) -> Duration {
        (self.stale_after / 4).clamp(Duration::from_millis(50), MAX_HEARTBEAT)
    }

    fn file(&self, task: usize, kind: &str) -> PathBuf {
        self.dir.join(format!("task-{task}.{kind}"))
    }

    /// A scratch file of `task` (`halo.vrt` or `baseline.tif`): only the
    /// holder of its claim writes it, and the signal handler removes it.
    pub fn scratch(&self, task: usize, kind: &str) -> PathBuf {
        debug_assert!(SCRATCH.contains(&kind));
        let path = self.file(task, kind);
        std::path::absolute(&path).unwrap_or(path)
    }

    /// The task's done record, if it has one that reads.
    pub fn done(&self, task: usize) -> Option<DoneRecord> {
        let text = read_bounded(
            &self.file(task, "done.json"),
            mapfilter_core::limits::MAX_TEXT_FILE,
        )?;
        serde_json::from_str(&text).ok()
    }

    /// The task's done record if it is of plan `plan`, agrees with the
    /// task, and its output (a regular file, not a symlink) still matches
    /// it.
    pub fn done_and_intact(&self, task: &Task, plan: u32) -> Option<DoneRecord> {
        let rec = self
            .done(task.id)
            .filter(|r| r.plan == plan && r.agrees_with(task))?;
        let path = self.batch.join(&task.output);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        (meta.is_file() && meta.len() == rec.size && checksum(&path).ok()? == rec.crc32)
            .then_some(rec)
    }

    /// The task's failure under plan `plan`, if it has one.
    pub fn failed(&self, task: usize, plan: u32) -> Option<FailedRecord> {
        let text = read_bounded(
            &self.file(task, "failed.json"),
            mapfilter_core::limits::MAX_TEXT_FILE,
        )?;
        serde_json::from_str(&text)
            .ok()
            .filter(|r: &FailedRecord| r.plan == plan && r.task == task)
    }

    /// The task's record of its smoothed window before the minimum mapping
    /// unit (`task-K.smoothed.json`, a plan with `--mmu`), if it is of plan
    /// `plan`, agrees with the task written at `output` (relative to the
    /// batch), and that file still matches it.
    /// With `checked` false the file's checksum is not read (its size is
    /// still compared): a cheap look before the full check.
    pub fn smoothed_and_intact(
        &self,
        task: &Task,
        output: &Path,
        plan: u32,
        checked: bool,
    ) -> Option<DoneRecord> {
        let text = read_bounded(
            &self.smoothed_path(task.id),
            mapfilter_core::limits::MAX_TEXT_FILE,
        )?;
        let rec: DoneRecord = serde_json::from_str(&text).ok()?;
        let there = Task {
            output: output.to_path_buf(),
            ..task.clone()
        };
        if rec.plan != plan || !rec.agrees_with(&there) {
            return None;
        }
        let path = self.batch.join(output);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let intact = meta.is_file()
            && meta.len() == rec.size
            && (!checked || checksum(&path).ok()? == rec.crc32);
        intact.then_some(rec)
    }

    /// Where the record of a task's smoothed window is (a plan with `--mmu`).
    pub fn smoothed_path(&self, task: usize) -> PathBuf {
        self.file(task, "smoothed.json")
    }

    /// Records a task's smoothed window (a plan with `--mmu`).
    pub fn write_smoothed(&self, rec: &DoneRecord) -> Result<()> {
        self.write(rec.task, "smoothed.json", rec)?;
        let _ = std::fs::remove_file(self.file(rec.task, "failed.json"));
        Ok(())
    }

    /// A record of the batch's own, `state/NAME` (a mosaic's, say).
    pub fn named_path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The record `state/NAME`, if it reads as a `T`.
    pub fn read_named<T: serde::de::DeserializeOwned>(&self, name: &str) -> Option<T> {
        let text = read_bounded(
            &self.named_path(name),
            mapfilter_core::limits::MAX_TEXT_FILE,
        )?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the record `state/NAME` as [`State::write_done`] writes.
    pub fn write_named<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        self.write_path(&self.named_path(name), value)
    }

    pub fn write_done(&self, rec: &DoneRecord) -> Result<()> {
        self.write(rec.task, "done.json", rec)?;
        let _ = std::fs::remove_file(self.file(rec.task, "failed.json"));
        Ok(())
    }

    pub fn write_failed(&self, rec: &FailedRecord) -> Result<()> {
        self.write(rec.task, "failed.json", rec)
    }

    fn write<T: Serialize>(&self, task: usize, kind: &str, value: &T) -> Result<()> {
        self.write_path(&self.file(task, kind), value)
    }

    fn write_path<T: Serialize>(&self, path: &Path, value: &T) -> Result<()> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| Error::io(format!("cannot encode a record: {e}")))?;
        let path = path.to_path_buf();
        // A record is replaced by a rename over its name. Whatever else is
        // there (a symlink, which `Target` would follow out of the state
        // directory; a FIFO) is not a record of ours: it goes first.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            std::fs::remove_file(&path).map_err(|e| {
                Error::io(format!("cannot replace {}: {e}", path.display()))
                    .hint("remove it; the state directory holds only the batch's records")
            })?;
        }
        // Synced by the run's [`Syncer`], not here (see the module's comment).
        let target = Target::check(&path, true, &[])?.synced_later();
        output::text::write(&Destination::File(target), &text)
    }

    /// Where the done record of `task` is.
    pub fn done_path(&self, task: usize) -> PathBuf {
        self.file(task, "done.json")
    }

    /// Where the failure record of `task` is.
    pub fn failed_path(&self, task: usize) -> PathBuf {
        self.file(task, "failed.json")
    }

    /// Claims `task` for this process: `None` when a live run holds it.
    ///
    /// The claim is written whole to a file of its own, then hard-linked to
    /// its name: the link is the atomic create (it fails if the name
    /// exists, also over NFS), and a claim is never seen half written. The
    /// registry of held claims stays locked throughout, so a signal never
    /// finds a claim made but not registered (or a draft left).
    pub fn claim(&self, task: usize) -> Result<Option<Claim>> {
        let scratch = SCRATCH.map(|k| self.scratch(task, k)).to_vec();
        self.claim_named(&format!("task-{task}"), scratch)
    }

    /// Claims `STEM.claim` as [`State::claim`] claims a task's; `scratch`:
    /// files of the holder removed with the claim on a signal.
    pub fn claim_named(&self, stem: &str, scratch: Vec<PathBuf>) -> Result<Option<Claim>> {
        let path = self.dir.join(format!("{stem}.claim"));
        let mut registry = held();
        for _ in 0..2 {
            let token = ClaimToken::mine(self.stale_after);
            let draft = self.dir.join(draft_name(stem, &token));
            let text = serde_json::to_string(&token).unwrap_or_default();
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&draft)
                .and_then(|mut f| f.write_all(text.as_bytes()));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&draft);
                return Err(Error::io(format!("cannot claim {}: {e}", path.display()))
                    .hint("the batch directory must be writable"));
            }
            let linked = std::fs::hard_link(&draft, &path);
            let _ = std::fs::remove_file(&draft);
            match linked {
                Ok(()) => {
                    registry.push(Held {
                        path: path.clone(),
                        token: token.clone(),
                        scratch,
                    });
                    return Ok(Some(Claim { path, token }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if !self.take_over_stale(&path) {
                        return Ok(None);
                    }
                }
                Err(e) => {
                    return Err(Error::io(format!("cannot claim {}: {e}", path.display()))
                        .hint("the batch directory must be writable"));
                }
            }
        }
        Ok(None)
    }

    /// Removes stale claims (see [`State::is_stale`]) and drafts of claims
    /// left by processes of this host that died.
    pub fn sweep_leftovers(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        // Held so that a signal never finds a claim renamed aside.
        let _registry = held();
        let this_host = file_safe(&hostname());
        for e in entries.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".claim") {
                self.take_over_stale(&e.path());
                continue;
            }
            if !name.contains(".claim.draft.") {
                continue;
            }
            // A draft names its host and process, so one of this host's
            // dead processes is a leftover even if it was killed before
            // writing a byte of it. Any other draft that does not read yet
            // may be being written: only an old one is a leftover.
            let dead = match draft_owner(&name) {
                Some((host, pid)) if host == this_host => !process_alive(pid, None),
                _ => match read_token(&e.path()) {
                    Some(t) => !t.is_alive(),
                    None => age(&e.path()).is_some_and(|age| age.as_secs() > 60),
                },
            };
            if dead {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Whether the claim `token` read at `path` is stale: its process is
    /// gone (same host), or it was not refreshed for longer than both this
    /// run's `--stale-after` and the lease its holder promised.
    fn is_stale(&self, token: &ClaimToken, path: &Path) -> bool {
        if !token.is_alive() {
            return true;
        }
        let lease = token
            .lease()
            .map_or(self.stale_after, |l| l.max(self.stale_after));
        age(path).is_some_and(|age| age > lease)
    }

    /// Whether the claim at `path`, whose token read as `token`, is stale.
    /// Claims are linked into place whole, so one that does not read was
    /// left empty by a crash (see the module's comment): stale once older
    /// than the lease.
    fn is_stale_claim(&self, token: Option<&ClaimToken>, path: &Path) -> bool {
        match token {
            Some(t) => self.is_stale(t, path),
            None => age(path).is_some_and(|age| age > self.stale_after),
        }
    }

    /// Removes the claim at `path` if it is stale; true if removed. The
    /// claim is first renamed aside (one run wins the rename), then checked
    /// again: a claim that took its place, or was refreshed, meanwhile is
    /// put back.
    fn take_over_stale(&self, path: &Path) -> bool {
        let seen = read_token(path);
        if !self.is_stale_claim(seen.as_ref(), path) {
            return false;
        }
        let aside = path.with_extension(format!("claim.stale-{}", std::process::id()));
        if std::fs::rename(path, &aside).is_err() {
            return false;
        }
        match read_token(&aside) {
            moved if moved == seen && self.is_stale_claim(moved.as_ref(), &aside) => {
                let _ = std::fs::remove_file(&aside);
                let holder = seen.map_or("a crashed run".into(), |t| {
                    format!("{} (process {})", t.host, t.pid)
                });
                log::warn!("took over the stale claim {} of {holder}", path.display());
                true
            }
            _ => {
                // Not the stale claim read: put it back unless a new one is there.
                let _ = std::fs::hard_link(&aside, path);
                let _ = std::fs::remove_file(&aside);
                false
            }
        }
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether any task is claimed, or being claimed, now (a claim that
    /// does not read counts too).
    pub fn has_claims(&self) -> bool {
        std::fs::read_dir(&self.dir).is_ok_and(|entries| {
            entries.filter_map(|e| e.ok()).any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.ends_with(".claim") || name.contains(".claim.")
            })
        })
    }

    /// Removes the tasks' scratch files (see [`State::scratch`]): for a
    /// caller that knows no task is claimed.
    pub fn remove_scratch(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            let scratch = SCRATCH.iter().any(|k| {
                name.ends_with(&format!(".{k}")) || name.ends_with(&format!(".{k}.aux.xml"))
            });
            if name.starts_with("task-") && scratch {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Tasks claimed now, with their claims.
    pub fn claims(&self) -> Vec<(usize, ClaimToken)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name
                    .strip_prefix("task-")?
                    .strip_suffix(".claim")?
                    .parse()
                    .ok()?;
                Some((id, read_token(&e.path())?))
            })
            .collect()
    }
}

/// Who holds a claim.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClaimToken {
    pub host: String,
    pub pid: u32,
    /// Unique per claim, so a claim taken over and made again is told apart.
    pub nonce: u64,
    /// The holder's lease in seconds: it refreshes the claim well within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_after: Option<f64>,
    /// The holder's start time (`/proc/PID/stat` field 22, clock ticks
    /// since boot): a process of the same PID started at another time is
    /// not the holder (the PID was reused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
}

impl ClaimToken {
    fn mine(lease: Duration) -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        ClaimToken {
            host: hostname(),
            pid: std::process::id(),
            nonce: now ^ NEXT.fetch_add(1, Ordering::Relaxed).rotate_left(40),
            stale_after: Some(lease.as_secs_f64()),
            start: process_start(std::process::id()),
        }
    }

    /// The lease its holder promised, if it said.
    fn lease(&self) -> Option<Duration> {
        self.stale_after
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Duration::from_secs_f64(s.min(1e9)))
    }

    /// Whether the process holding it may still be running (always true
    /// for another host's: only its own host can tell, and the lease ends
    /// its claim).
    pub fn is_alive(&self) -> bool {
        self.host != hostname() || process_alive(self.pid, self.start)
    }
}

/// The state letter and start time of process `pid` of this host, from
/// `/proc/PID/stat`; `None` when there is no such process (or no procfs).
fn process_stat(pid: u32) -> Option<(char, u64)> {
    if pid == 0 {
        return None;
    }
    let text = read_bounded(Path::new(&format!("/proc/{pid}/stat")), MAX_CLAIM)?;
    // The command name (field 2) is in parentheses and may hold any
    // character, ')' and spaces included: the fields after the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 was the state; field 22 is 19 further on.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// The start time of process `pid` (see [`ClaimToken::start`]).
pub fn process_start(pid: u32) -> Option<u64> {
    process_stat(pid).map(|(_, start)| start)
}

/// Whether process `pid` of this host is alive and, when `start` is
/// known, is the process that started then. A zombie (killed, not yet
/// reaped by its parent) is dead: it holds nothing and never will; `kill(pid,
/// 0)` would call it alive.
fn process_alive(pid: u32, start: Option<u64>) -> bool {
    if Path::new("/proc/self/stat").exists() {
        return process_stat(pid).is_some_and(|(state, started)| {
            !matches!(state, 'Z' | 'X' | 'x') && start.is_none_or(|s| s == started)
        });
    }
    // Without procfs only existence can be told. Pid 0 and negative pids
    // name process groups in kill(2), never one process.
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The name of a claim's draft: `STEM.claim.draft.HOST.PID.NONCE` (the
/// stem `task-T` for a task).
fn draft_name(stem: &str, token: &ClaimToken) -> String {
    format!(
        "{stem}.claim.draft.{}.{}.{}",
        file_safe(&token.host),
        token.pid,
        token.nonce
    )
}

/// The host and process named by a draft's file name (`None` for a name
/// of another shape, such as the drafts of earlier versions, which named
/// no host).
fn draft_owner(name: &str) -> Option<(&str, u32)> {
    let (_, owner) = name.split_once(".claim.draft.")?;
    let (rest, _nonce) = owner.rsplit_once('.')?;
    let (host, pid) = rest.rsplit_once('.')?;
    Some((host, pid.parse().ok()?))
}

/// `text` with every character but letters, digits, `-` and `.` as `_`.
fn file_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn read_token(path: &Path) -> Option<ClaimToken> {
    serde_json::from_str(&read_bounded(path, MAX_CLAIM)?).ok()
}

/// The text of the regular file at `path` if it has at most `limit` bytes.
/// A symlink is not followed and anything but a regular file is not read
/// (opened non-blocking, so a FIFO cannot hang the run), so a state file
/// linked to `/dev/zero` or planted as a FIFO reads as no record.
pub fn read_bounded(path: &Path, limit: u64) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > limit {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// `dir`, a folder of the batch, made if missing and checked by
/// [`real_dir`] (outputs never go through a symlink).
pub fn made_dir(dir: &Path) -> Result<()> {
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::io(format!("cannot make {}: {e}", dir.display()))
                .hint("the batch directory must be writable")
        })?;
    }
    real_dir(dir)
}

/// Fails unless `dir` is a directory itself, not a symlink to one: what a
/// batch writes stays inside its directory.
pub fn real_dir(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::input(format!(
            "{} is not a directory of the batch (a symlink or a file)",
            dir.display()
        ))
        .hint("a batch writes only into its own out/ and state/ folders; remove it and run again")),
        Err(e) => Err(Error::io(format!("cannot use {}: {e}", dir.display()))
            .hint("the batch directory must be writable")),
    }
}

/// How long ago the file at `path` was modified (zero if in the future).
fn age(path: &Path) -> Option<Duration> {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    Some(
        SystemTime::now()
            .duration_since(modified)
            .unwrap_or(Duration::ZERO),
    )
}

/// A claim of this process, in the registry.
struct Held {
    path: PathBuf,
    token: ClaimToken,
    /// The task's scratch files, removed with the claim on a signal.
    scratch: Vec<PathBuf>,
}

/// Every claim this process holds now: refreshed by the heartbeat, removed
/// by the signal handler.
static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

fn held() -> MutexGuard<'static, Vec<Held>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `work` while a thread refreshes this process's claims (the run's
/// heartbeat: a task or a mosaic's sieve may outlast a lease).
pub fn with_heartbeat<T>(state: &State, work: impl FnOnce() -> T) -> T {
    let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while stopped
                .recv_timeout(state.heartbeat())
                .is_err_and(|e| e.is_timeout())
            {
                refresh_held();
            }
        });
        let done = work();
        drop(stop);
        done
    })
}

/// Refreshes the mtime of every claim this process holds (those still its
/// own), so that no run takes them for stale: the heartbeat of a run.
pub fn refresh_held() {
    let registry = held();
    for h in registry.iter() {
        if read_token(&h.path).as_ref() != Some(&h.token) {
            log::warn!(
                "the claim {} is no longer this run's (taken over as stale?)",
                h.path.display()
            );
            continue;
        }
        let touched = std::fs::File::options()
            .append(true)
            .open(&h.path)
            .and_then(|f| f.set_modified(SystemTime::now()));
        if let Err(e) = touched {
            log::warn!("cannot refresh the claim {}: {e}", h.path.display());
        }
    }
}

/// Removes every claim of this process and its tasks' scratch files, and
/// keeps the registry locked for good so that no claim is made after: for
/// the signal handler, just before the process exits.
fn release_all_held() {
    let registry = held();
    for h in registry.iter() {
        for s in &h.scratch {
            let mut sidecar = s.clone().into_os_string();
            sidecar.push(".aux.xml");
            let _ = std::fs::remove_file(s);
            let _ = std::fs::remove_file(sidecar);
        }
        if read_token(&h.path).as_ref() == Some(&h.token) {
            let _ = std::fs::remove_file(&h.path);
        }
    }
    std::mem::forget(registry);
}

/// Has the signal handler release this process's claims (once).
pub fn release_on_signal() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| mapfilter_core::interrupt::at_stop(release_all_held));
}

/// A task held by this process; dropping it releases the claim.
pub struct Claim {
    path: PathBuf,
    token: ClaimToken,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut registry = held();
        registry.retain(|h| h.token != self.token);
        if read_token(&self.path).as_ref() == Some(&self.token) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// This machine's host name.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Syncs files to disk on a thread of its own, in passes: each pass syncs
/// every file handed over since the last one, then each of their
/// directories once (for the renames).
pub struct Syncer {
    send: Option<crossbeam_channel::Sender<PathBuf>>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
}

impl Syncer {
    pub fn start() -> Syncer {
        let (send, todo) = crossbeam_channel::unbounded::<PathBuf>();
        let thread = std::thread::spawn(move || {
            let mut first_error = None;
            while let Ok(path) = todo.recv() {
                let mut pass = vec![path];
                pass.extend(todo.try_iter());
                let mut dirs: Vec<PathBuf> = pass.iter().map(|p| output::parent_dir(p)).collect();
                dirs.sort();
                dirs.dedup();
                for path in pass.iter().chain(&dirs) {
                    if let Err(e) = std::fs::File::open(path).and_then(|f| f.sync_all()) {
                        first_error.get_or_insert_with(|| {
                            Error::io(format!("cannot sync {} to disk: {e}", path.display()))
                                .hint("check the disk; the next run checks every output again")
                        });
                    }
                }
            }
            first_error.map_or(Ok(()), Err)
        });
        Syncer {
            send: Some(send),
            thread: Some(thread),
        }
    }

    /// Has `path` synced in the next pass.
    pub fn add(&self, path: PathBuf) {
        if let Some(send) = &self.send {
            let _ = send.send(path);
        }
    }

    /// Waits for every file handed over to be synced: the first error, if
    /// any.
    pub fn finish(mut self) -> Result<()> {
        self.send = None;
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(done)) => done,
            Some(Err(panicked)) => std::panic::resume_unwind(panicked),
            None => Ok(()),
        }
    }
}

/// CRC-32 of a file's bytes.
pub fn checksum(path: &Path) -> Result<u32> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
    let mut hasher = crc32fast::Hasher::new();
    // Outputs of a batch are mostly small: a small buffer, zeroed per file.
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make_old(path: &Path) {
        std::fs::File::options()
            .append(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
    }

    #[test]
    fn a_claim_refreshed_by_the_heartbeat_is_kept_and_an_unrefreshed_one_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let lease = Duration::from_secs(60);
        let state = State::open(dir.path()).unwrap().with_stale_after(lease);
        let mine = state.claim(0).unwrap().expect("a free task");
        let path = dir.path().join("state").join("task-0.claim");
        make_old(&path);
        refresh_held();
        let other = State::open(dir.path()).unwrap().with_stale_after(lease);
        assert!(other.claim(0).unwrap().is_none(), "refreshed, so live");
        make_old(&path);
        let theirs = other.claim(0).unwrap().expect("not refreshed: stale");
        // The first holder's release leaves the new claim alone.
        drop(mine);
        assert!(path.exists());
        drop(theirs);
        assert!(!path.exists());
        assert_eq!(
            std::fs::read_dir(dir.path().join("state")).unwrap().count(),
            0
        );
    }

    /// A process killed between creating its claim's draft and writing
    /// it leaves an empty draft: the next run on its host removes it; an
    /// empty draft of a live process, or of another host, is left to be
    /// written (another host's goes once it is old).
    #[test]
    fn empty_drafts_of_dead_processes_of_this_host_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let state = State::open(dir.path()).unwrap();
        let token = |host: String, pid: u32| ClaimToken {
            host,
            pid,
            nonce: 7,
            stale_after: None,
            start: None,
        };
        // A pid beyond Linux's largest (4194304) is never alive.
        let dead = draft_name("task-1", &token(hostname(), 4_194_305));
        let live = draft_name("task-2", &token(hostname(), std::process::id()));
        let remote = draft_name("task-3", &token("another-host".into(), 4_194_305));
        let remote_old = draft_name("task-4", &token("another-host".into(), 4_194_305));
        let old_style = "task-5.claim.draft.4194305.7".to_string();
        let folder = dir.path().join("state");
        for name in [&dead, &live, &remote, &remote_old, &old_style] {
            std::fs::File::create(folder.join(name)).unwrap();
        }
        make_old(&folder.join(&remote_old));
        assert_eq!(
            draft_owner(&dead),
            Some((file_safe(&hostname()).as_str(), 4_194_305))
        );
        assert_eq!(draft_owner(&old_style), None);
        state.sweep_leftovers();
        let mut left: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want = vec![live, remote, old_style];
        want.sort();
        assert_eq!(left, want);
    }

    /// A claim's holder is dead when its process exited but was not reaped
    /// (a zombie: `kill(pid, 0)` still succeeds) and when its PID is now
    /// another process's (another start time).
    #[test]
    fn zombies_and_reused_pids_are_dead_holders() {
        let me = std::process::id();
        let start = process_start(me).expect("procfs");
        assert!(process_alive(me, Some(start)));
        assert!(process_alive(me, None));
        assert!(!process_alive(me, Some(start + 1)), "another start: reused");
        assert!(!process_alive(0, None));
        assert!(!process_alive(4_194_305, None));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not waited for: once it exits it is our zombie.
        let t0 = std::time::Instant::now();
        while process_stat(pid).is_some_and(|(state, _)| state != 'Z') {
            assert!(t0.elapsed() < Duration::from_secs(10), "never a zombie");
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: signal 0 only checks that the process exists.
        assert_eq!(
            unsafe { libc::kill(pid as libc::pid_t, 0) },
            0,
            "kill sees it"
        );
        assert!(!process_alive(pid, None), "a zombie holds nothing");
        child.wait().unwrap();
        assert!(!process_alive(pid, None));
    }

    /// Records and claims are read only as small regular files: a symlink
    /// to /dev/zero, a FIFO or an oversized file reads as nothing.
    #[test]
    fn state_files_are_read_bounded_and_never_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, "{}").unwrap();
        assert_eq!(read_bounded(&small, 2).as_deref(), Some("{}"));
        assert_eq!(read_bounded(&small, 1), None, "over the limit");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert_eq!(read_bounded(&zero, 1 << 20), None);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&small, &link).unwrap();
        assert_eq!(read_bounded(&link, 10), None, "links are not followed");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(read_bounded(&fifo, 10), None, "a FIFO does not hang");
        // A done record linked to /dev/zero is no record; writing the record
        // replaces the link, not /dev/zero.
        let state = State::open(dir.path()).unwrap();
        std::os::unix::fs::symlink("/dev/zero", state.done_path(3)).unwrap();
        assert!(state.done(3).is_none());
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, state.failed_path(3)).unwrap();
        state
            .write_failed(&FailedRecord {
                task: 3,
                plan: 1,
                error: "e".into(),
                kind: Some("input".into()),
                host: "h".into(),
                environment: false,
            })
            .unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(state.failed(3, 1).is_some());
    }
}
