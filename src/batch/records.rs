//! The state of a batch, one file per task under `DIR/state/`:
//!
//! - `task-K.claim`: made by atomic create (`O_EXCL`, which network
//!   filesystems honour where `flock` is unreliable) by the run working on
//!   task K, removed when it is done. It names the host and process; a
//!   claim whose process is gone (same host) is stale and taken over.
//! - `task-K.done.json`: written atomically once the output is in place:
//!   the output's size and CRC-32, timings, class counts. A task whose
//!   output still matches its record is done.
//! - `task-K.failed.json`: the error of a failed task.

use super::plan::Task;
use crate::error::{Error, Result};
use crate::output::{self, Destination, Target};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Pixel counts by class code (codes with no pixel left out).
pub type Counts = Vec<(u16, u64)>;

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
    pub host: String,
}

/// The state directory of a batch.
pub struct State {
    dir: PathBuf,
    batch: PathBuf,
}

impl State {
    pub fn open(batch: &Path) -> Result<State> {
        let dir = batch.join("state");
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::new(format!("cannot make {}: {e}", dir.display()))
                .hint("the batch directory must be writable")
        })?;
        Ok(State {
            dir,
            batch: batch.to_path_buf(),
        })
    }

    fn file(&self, task: usize, kind: &str) -> PathBuf {
        self.dir.join(format!("task-{task}.{kind}"))
    }

    /// The task's done record, if it has one that reads.
    pub fn done(&self, task: usize) -> Option<DoneRecord> {
        let text = std::fs::read_to_string(self.file(task, "done.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The task's done record if it is of plan `plan` and its output
    /// still matches it.
    pub fn done_and_intact(&self, task: &Task, plan: u32) -> Option<DoneRecord> {
        let rec = self.done(task.id).filter(|r| r.plan == plan)?;
        let path = self.batch.join(&task.output);
        let size = std::fs::metadata(&path).ok()?.len();
        (size == rec.size && rec.output == task.output && checksum(&path).ok()? == rec.crc32)
            .then_some(rec)
    }

    /// The task's failure under plan `plan`, if it has one.
    pub fn failed(&self, task: usize, plan: u32) -> Option<FailedRecord> {
        let text = std::fs::read_to_string(self.file(task, "failed.json")).ok()?;
        serde_json::from_str(&text)
            .ok()
            .filter(|r: &FailedRecord| r.plan == plan)
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
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| Error::new(format!("cannot encode a record: {e}")))?;
        let target = Target::check(&self.file(task, kind), true, &[])?;
        output::text::write(&Destination::File(target), &text)
    }

    /// Claims `task` for this process: `None` when a live run holds it.
    ///
    /// The claim is written whole to a file of its own, then hard-linked to
    /// its name: the link is the atomic create (it fails if the name
    /// exists, also over NFS), and a claim is never seen half written.
    pub fn claim(&self, task: usize) -> Result<Option<Claim>> {
        let path = self.file(task, "claim");
        for _ in 0..2 {
            let token = ClaimToken::mine();
            let draft = self.dir.join(format!(
                "task-{task}.claim.draft.{}.{}",
                token.pid, token.nonce
            ));
            let text = serde_json::to_string(&token).unwrap_or_default();
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&draft)
                .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&draft);
                return Err(Error::new(format!("cannot claim {}: {e}", path.display()))
                    .hint("the batch directory must be writable"));
            }
            let linked = std::fs::hard_link(&draft, &path);
            let _ = std::fs::remove_file(&draft);
            match linked {
                Ok(()) => return Ok(Some(Claim { path, token })),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if !self.take_over_stale(&path) {
                        return Ok(None);
                    }
                }
                Err(e) => {
                    return Err(Error::new(format!("cannot claim {}: {e}", path.display()))
                        .hint("the batch directory must be writable"));
                }
            }
        }
        Ok(None)
    }

    /// Removes claims and drafts of claims left by processes of this host
    /// that died (a claim of a task whose record was written just before).
    pub fn sweep_leftovers(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".claim") {
                self.take_over_stale(&e.path());
                continue;
            }
            if !name.contains(".claim.draft.") {
                continue;
            }
            // A draft that does not read yet may be being written: only an
            // old one is a leftover.
            let dead = match read_token(&e.path()) {
                Some(t) => !t.is_alive(),
                None => e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age.as_secs() > 60),
            };
            if dead {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Removes the claim at `path` if its process is gone; true if removed.
    /// The claim is first renamed aside (one run wins the rename), then
    /// checked again: a live claim that took its place meanwhile is put back.
    fn take_over_stale(&self, path: &Path) -> bool {
        let Some(seen) = read_token(path) else {
            return false;
        };
        if seen.is_alive() {
            return false;
        }
        let aside = path.with_extension(format!("claim.stale-{}", std::process::id()));
        if std::fs::rename(path, &aside).is_err() {
            return false;
        }
        match read_token(&aside) {
            Some(moved) if moved == seen => {
                let _ = std::fs::remove_file(&aside);
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
}

impl ClaimToken {
    fn mine() -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        ClaimToken {
            host: hostname(),
            pid: std::process::id(),
            nonce: now ^ NEXT.fetch_add(1, Ordering::Relaxed).rotate_left(40),
        }
    }

    /// Whether the process holding it may still be running (always true
    /// for another host's: only its own host can tell).
    pub fn is_alive(&self) -> bool {
        if self.host != hostname() {
            return true;
        }
        // SAFETY: signal 0 only checks that the process exists.
        let r = unsafe { libc::kill(self.pid as libc::pid_t, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
}

fn read_token(path: &Path) -> Option<ClaimToken> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// A task held by this process; dropping it releases the claim.
pub struct Claim {
    path: PathBuf,
    token: ClaimToken,
}

impl Drop for Claim {
    fn drop(&mut self) {
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

/// CRC-32 of a file's bytes.
pub fn checksum(path: &Path) -> Result<u32> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize())
}
