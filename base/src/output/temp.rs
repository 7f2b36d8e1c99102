//! Temp files beside a target: created exclusively, locked while their
//! process lives, removed on failure or signal, committed by rename.
//!
//! Names are `.mapfilter-tmp.PID.RANDOM.NAME` (cut to fit `NAME_MAX` with
//! room for GDAL's sidecars), so a leftover is recognisable. Its owner holds
//! an exclusive `flock` on it for as long as it lives; a later run that can
//! take the lock knows the owner is dead (even if its PID was reused) and
//! removes the file. Every live temp file is listed in one registry, which
//! the signal handler empties before the process exits. The registry is
//! locked only to change the list; what makes or moves a file by name (a
//! commit's renames, GDAL creating its output) holds a gate instead, which
//! the handler waits for a short while, so an interrupt never leaves half a
//! commit and no lock it needs is ever held across slow I/O.

use super::space::{disk_full_cause, is_disk_full};
use super::target::{NAME_MAX, Target};
use crate::error::{Error, Result, Setting};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant, SystemTime};

/// What every temp file's name starts with.
pub const PREFIX: &str = ".mapfilter-tmp.";
/// Files GDAL may write beside a raster, named by appending to its name:
/// they follow it.
const SIDECARS: [&str; 3] = [".aux.xml", ".ovr", ".msk"];
/// Scratch files GDAL's COG driver writes beside the raster while it builds
/// overviews (`NAME.ovr.tmp`, its mask's `NAME.msk.ovr.tmp`): a signal then
/// leaves them, so they go with the temp raster. Never committed.
const SCRATCH: [&str; 2] = [".ovr.tmp", ".msk.ovr.tmp"];
/// Files GDAL may write beside a raster, named by replacing its extension
/// (the world file of `--co TFW=YES`): they follow it too.
const WORLD_FILES: [&str; 1] = ["tfw"];
/// A leftover younger than this is left alone (its owner may be between
/// creating and locking it).
const SWEEP_AGE: Duration = Duration::from_secs(10);

/// The temp files of this process that exist now. Locked only to read or
/// change the list, never across I/O, so that the signal handler always
/// gets it at once.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held across what makes, renames or closes a temp file by name (its
/// creation, a commit's renames, GDAL creating or closing its output), so
/// that the signal handler's clean-up, which waits for it a short while,
/// never races one: a file made or moved after the clean-up would stay.
static GATE: Mutex<()> = Mutex::new(());

/// Set by the signal handler: no temp file is made or committed after.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Takes the gate; once the process is stopping on a signal, waits for
/// the exit instead (the handler removes the temp files, then ends the
/// process within a second).
fn gate() -> MutexGuard<'static, ()> {
    let guard = GATE.lock().unwrap_or_else(|e| e.into_inner());
    if STOPPING.load(Ordering::SeqCst) {
        drop(guard);
        loop {
            std::thread::park();
        }
    }
    guard
}

/// A temp file beside a target (or a scratch file that is never committed).
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    /// Open for the lock (and the final sync) while the file lives.
    file: Option<File>,
}

impl TempFile {
    /// A new temp file in `target`'s directory, after sweeping that
    /// directory's leftovers of dead runs.
    pub fn beside(target: &Target) -> Result<Self> {
        let name = target
            .path()
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        Self::create_in(&target.dir(), &name, target.shown())
    }

    /// A temp file in `dir` that is only ever dropped (scratch data).
    pub fn scratch(dir: &Path, name: &str) -> Result<Self> {
        Self::create_in(dir, name, &dir.join(name))
    }

    fn create_in(dir: &Path, name: &str, shown: &Path) -> Result<Self> {
        if sweep_due(dir) {
            sweep(dir);
        }
        let pid = std::process::id();
        let prefix = format!("{PREFIX}{pid}.");
        // RANDOM is 10 characters; the name keeps its end (the extension).
        let room = NAME_MAX - prefix.len() - 10 - 1 - longest_sidecar();
        let tail = tail_of(name, room);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(&tail).rand_bytes(10);
        // A new output is readable like any new file (the umask applies).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let gate = gate();
        // create_new (O_CREAT | O_EXCL): never opens an existing file or follows a symlink.
        let made = builder.tempfile_in(dir).map_err(|e| {
            // tempfile's message names the random path; the OS error is enough.
            let e = e
                .raw_os_error()
                .map_or(e, std::io::Error::from_raw_os_error);
            write_error(
                e,
                &format!("cannot create output {}", shown.display()),
                dir,
                None,
            )
        })?;
        let (file, path) = made.into_parts();
        let path = path.keep().map_err(|e| Error::io(e.to_string()))?;
        live().push(path.clone());
        drop(gate);
        lock(&file);
        Ok(TempFile {
            path,
            file: Some(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the lock again on whatever file is at the path now: for a
    /// scratch file another writer has replaced by rename (the old lock
    /// went with the old file).
    pub fn relock(&mut self) {
        if let Ok(file) = File::open(&self.path) {
            lock(&file);
            self.file = Some(file);
        }
    }

    /// The open file, for writing through it.
    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("open until committed")
    }

    /// Syncs the file (and its sidecars) to disk, moves them onto `target`
    /// and syncs the directory. Without `--overwrite` a file that appeared at
    /// the target meanwhile is not replaced. On failure the temp file goes
    /// and the target is as it was.
    pub fn commit(mut self, target: &Target) -> Result<()> {
        let dir = target.dir();
        let written = std::fs::metadata(&self.path).ok().map(|m| m.len());
        let synced = if target.syncs() {
            self.file().sync_all().and_then(|()| {
                for sidecar in self.sidecars() {
                    File::open(sidecar)?.sync_all()?;
                }
                Ok(())
            })
        } else {
            Ok(())
        };
        synced.map_err(|e| {
            write_error(
                e,
                &format!("cannot write {}", target.shown().display()),
                &dir,
                written,
            )
        })?;
        let gate = gate();
        let moved = self.move_onto(target);
        if moved.is_ok() {
            live().retain(|p| p != &self.path);
            self.file = None;
        }
        drop(gate);
        moved?;
        if target.syncs() {
            sync_dir(&dir);
        }
        log::debug!(
            "moved {} onto {}",
            self.path.display(),
            target.path().display()
        );
        Ok(())
    }

    /// The renames of a commit (sidecars first, the raster last, so that
    /// the target never shows a new raster with an old sidecar's names).
    fn move_onto(&self, target: &Target) -> Result<()> {
        let fail = |e: std::io::Error| {
            Error::io(format!(
                "cannot move the output into place at {}: {e}",
                target.shown().display()
            ))
        };
        if !target.overwrite() && target.path().exists() {
            return Err(appeared(target));
        }
        for (from, to) in sidecar_names(&self.path).zip(sidecar_names(target.path())) {
            if from.exists() {
                std::fs::rename(&from, &to).map_err(fail)?;
            } else if to.exists() {
                // A stale sidecar of the file being replaced.
                std::fs::remove_file(&to).map_err(fail)?;
            }
        }
        if target.overwrite() {
            std::fs::rename(&self.path, target.path()).map_err(fail)
        } else {
            rename_noreplace(&self.path, target.path()).map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    appeared(target)
                } else {
                    fail(e)
                }
            })
        }
    }

    fn sidecars(&self) -> impl Iterator<Item = PathBuf> + '_ {
        sidecar_names(&self.path).filter(|p| p.exists())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            // Removed before it leaves the list: a signal meanwhile removes
            // it too, which is harmless.
            remove_with_sidecars(&self.path);
            live().retain(|p| p != &self.path);
        }
    }
}

/// Runs `make` while no signal can remove temp files: for a library call
/// that creates or closes a file at a registered temp path by name (GDAL
/// opens its output with `O_CREAT | O_TRUNC`, and writes its `.aux.xml`
/// sidecar when the dataset closes). A signal's clean-up waits for it (a
/// short while, see [`abandon_all`]), so the file it makes is there to be
/// removed, not made again after the clean-up. `make` must not create temp
/// files itself.
pub fn without_cleanup<T>(make: impl FnOnce() -> T) -> T {
    let _gate = gate();
    make()
}

/// Removes every live temp file of this process, and has every later
/// attempt to make or commit one wait for the exit: for the signal
/// handler, just before the process exits. Waits up to `patience` for a
/// commit or a by-name create in progress to finish; past it (a GDAL call
/// that takes long, a hung filesystem) the files are removed anyway (a
/// file GDAL makes again in the moments before the exit is unlocked, and
/// the next run in its folder sweeps it).
pub fn abandon_all(patience: Duration) {
    STOPPING.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + patience;
    let gate = loop {
        match GATE.try_lock() {
            Ok(g) => break Some(g),
            Err(TryLockError::Poisoned(p)) => break Some(p.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => break None,
        }
    };
    let paths = live().clone();
    for path in &paths {
        remove_with_sidecars(path);
    }
    // Kept for good: nothing is made or committed after.
    std::mem::forget(gate);
}

/// Whether `dir` was not swept by this process for [`SWEEP_AGE`]: a batch
/// writes thousands of files into one folder, and listing it for each
/// would cost time quadratic in the folder's size. A leftover missed now is
/// younger than `SWEEP_AGE` anyway, or is found by the next sweep.
fn sweep_due(dir: &Path) -> bool {
    static SWEPT: Mutex<Vec<(PathBuf, Instant)>> = Mutex::new(Vec::new());
    let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
    let now = Instant::now();
    match swept.iter_mut().find(|(d, _)| d == dir) {
        Some((_, last)) if now.duration_since(*last) < SWEEP_AGE => false,
        Some((_, last)) => {
            *last = now;
            true
        }
        None => {
            swept.push((dir.to_path_buf(), now));
            true
        }
    }
}

/// Removes the leftovers of dead runs in `dir` (see the module doc), with a
/// note on stderr.
fn sweep(dir: &Path) {
    sweep_older_than(dir, SWEEP_AGE);
}

/// Removes every temp file in `dir` whose owner is dead (nobody holds its
/// lock), however young: for a caller that knows no run is about to create
/// one there (a batch with no task claimed), so that a leftover of a
/// killed run does not wait for the next output written beside it.
pub fn sweep_unlocked(dir: &Path) {
    sweep_older_than(dir, Duration::ZERO);
}

fn sweep_older_than(dir: &Path, min_age: Duration) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut swept = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let sidecar = SIDECARS.iter().any(|s| name.ends_with(s))
            || WORLD_FILES
                .iter()
                .any(|e| Path::new(&*name).extension() == Some(std::ffi::OsStr::new(e)));
        if !name.starts_with(PREFIX) || sidecar {
            continue;
        }
        let path = entry.path();
        if is_stale(&path, min_age) {
            remove_with_sidecars(&path);
            swept += 1;
        }
    }
    if swept > 0 {
        log::warn!(
            "removed {swept} temp file(s) left in {} by interrupted runs",
            dir.display()
        );
    }
}

/// A regular file nobody holds the lock of, not modified for `min_age`.
fn is_stale(path: &Path, min_age: Duration) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let old = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age >= min_age);
    if !meta.is_file() || !old {
        return false;
    }
    match File::open(path) {
        Ok(file) => try_lock(&file),
        Err(_) => false,
    }
}

fn remove_with_sidecars(path: &Path) {
    let _ = std::fs::remove_file(path);
    let scratch = SCRATCH.iter().map(|s| with_suffix(path, s));
    for sidecar in sidecar_names(path).chain(scratch) {
        let _ = std::fs::remove_file(sidecar);
    }
}

/// The names GDAL gives the sidecars of the raster at `path`, in one order
/// for every path (so a temp file's pair with its target's).
fn sidecar_names(path: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    SIDECARS
        .iter()
        .map(move |s| with_suffix(path, s))
        .chain(WORLD_FILES.iter().map(move |e| path.with_extension(e)))
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn longest_sidecar() -> usize {
    SIDECARS.iter().map(|s| s.len()).max().unwrap_or(0)
}

/// The last `room` bytes of `name` (on a character boundary), after a dot.
fn tail_of(name: &str, room: usize) -> String {
    let mut start = name.len().saturating_sub(room);
    while !name.is_char_boundary(start) {
        start += 1;
    }
    format!(".{}", &name[start..])
}

fn appeared(target: &Target) -> Error {
    Error::io(format!(
        "output {} appeared while this run was writing it (another run?)",
        target.shown().display()
    ))
    .hint(format!(
        "pass {} to replace it; this run's result was not kept",
        Setting::Overwrite
    ))
}

/// An I/O failure of a write, saying so when the disk is full.
pub(super) fn write_error(
    e: std::io::Error,
    what: &str,
    dir: &Path,
    written: Option<u64>,
) -> Error {
    match disk_full_cause(dir, written) {
        Some(full) if is_disk_full(&e) || written.is_some() => {
            Error::resource(format!("{what}: {full}"))
                .hint("free some space or write to another disk; nothing was replaced")
        }
        _ => Error::io(format!("{what}: {e}")).hint("check that the directory is writable"),
    }
}

#[cfg(unix)]
fn lock(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on an open descriptor. A filesystem without locks only
    // loses the sweep's protection, not the output.
    unsafe {
        libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB);
    }
}

#[cfg(unix)]
fn try_lock(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on an open descriptor; the lock goes with the file.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

#[cfg(not(unix))]
fn lock(_file: &File) {}

#[cfg(not(unix))]
fn try_lock(_file: &File) -> bool {
    false
}

/// `rename` that fails with `AlreadyExists` rather than replace `to`:
/// `renameat2(RENAME_NOREPLACE)`, else a hard link (which never replaces)
/// and an unlink, for filesystems without it.
#[cfg(target_os = "linux")]
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c =
        |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: two NUL-terminated paths, relative to the working directory.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        _ => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

/// Makes a rename durable. Some filesystems cannot sync a directory; the
/// file itself is synced already, so that is not an error.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_commit_moves_the_file_and_a_drop_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.json");
        let target = Target::check(&out, false, &[]).unwrap();
        let mut t = TempFile::beside(&target).unwrap();
        std::io::Write::write_all(t.file(), b"new").unwrap();
        assert!(t.path().file_name().unwrap().len() <= NAME_MAX);
        t.commit(&target).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        let t = TempFile::beside(&target).unwrap();
        assert_eq!(names(dir.path()).len(), 2);
        drop(t);
        assert_eq!(names(dir.path()), ["out.json"]);
    }

    #[test]
    fn without_overwrite_a_file_that_appeared_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.txt");
        let target = Target::check(&out, false, &[]).unwrap();
        let mut t = TempFile::beside(&target).unwrap();
        std::io::Write::write_all(t.file(), b"mine").unwrap();
        std::fs::write(&out, b"theirs").unwrap();
        let err = t.commit(&target).unwrap_err();
        assert!(err.to_string().contains("appeared"), "{err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"theirs");
        assert_eq!(names(dir.path()), ["out.txt"]);
    }

    #[test]
    fn a_world_file_follows_its_raster_and_replaces_a_stale_one() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.tif");
        std::fs::write(&out, b"old").unwrap();
        std::fs::write(dir.path().join("out.tfw"), b"stale").unwrap();
        let target = Target::check(&out, true, &[]).unwrap();
        let t = TempFile::beside(&target).unwrap();
        std::fs::write(t.path().with_extension("tfw"), b"world").unwrap();
        t.commit(&target).unwrap();
        assert_eq!(std::fs::read(dir.path().join("out.tfw")).unwrap(), b"world");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }

    #[test]
    fn the_first_temp_file_in_a_folder_sweeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(".mapfilter-tmp.1.abcdefghij.out.tif");
        std::fs::write(&stale, b"partial").unwrap();
        File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        let _t = TempFile::scratch(dir.path(), "next.tif").unwrap();
        assert!(!stale.exists());
    }

    #[test]
    fn long_names_fit_and_leftovers_of_dead_runs_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let name = "n".repeat(NAME_MAX);
        let target = Target::check(&dir.path().join(&name), false, &[]).unwrap();
        let t = TempFile::beside(&target).unwrap();
        assert!(t.path().file_name().unwrap().len() + longest_sidecar() <= NAME_MAX);
        drop(t);
        // A leftover nobody locks, old enough: swept by the next run.
        let stale = dir.path().join(".mapfilter-tmp.1.abcdefghij.out.tif");
        std::fs::write(&stale, b"partial").unwrap();
        std::fs::write(with_suffix(&stale, ".aux.xml"), b"x").unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(old)
            .unwrap();
        // A live one (locked by this process) is kept, however old.
        let live_one = TempFile::scratch(dir.path(), "live.tif").unwrap();
        File::options()
            .write(true)
            .open(live_one.path())
            .unwrap()
            .set_modified(old)
            .unwrap();
        // This process swept the folder moments ago: the next sweep is due
        // later, and is run here directly.
        assert!(!sweep_due(dir.path()));
        sweep(dir.path());
        assert!(!stale.exists());
        assert!(!with_suffix(&stale, ".aux.xml").exists());
        assert!(live_one.path().exists());
    }
}
