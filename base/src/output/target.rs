//! Checking an output path before any work is done: what may be written
//! there, and whether it may be replaced.

use crate::error::{Error, Result, Setting};
use std::fs::Metadata;
use std::path::{Path, PathBuf};

/// The longest file name Linux filesystems take (`NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// An output path checked by [`Target::check`]: a regular file that may be
/// written (it does not exist, or `--overwrite` was given), in a directory
/// that exists, and none of the inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Where the file is written: the path given, or the file a symlink
    /// given points at (the link stays and shows the new file).
    path: PathBuf,
    /// The path as the user gave it, for messages.
    shown: PathBuf,
    /// Whether an existing file may be replaced (`--overwrite`).
    overwrite: bool,
    /// Whether committing the file syncs it and its directory (see
    /// [`Target::synced_later`]).
    sync: bool,
}

/// Where a text output goes: a checked file or standard output (`-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(Target),
}

impl Destination {
    /// `-` is standard output; anything else is checked as a [`Target`].
    pub fn check(path: &Path, overwrite: bool, inputs: &[&Path]) -> Result<Self> {
        if path.as_os_str() == "-" {
            return Ok(Destination::Stdout);
        }
        Target::check(path, overwrite, inputs).map(Destination::File)
    }
}

impl Target {
    /// Checks `path` as an output of a run reading `inputs`: every file
    /// the run reads (secondary inputs too: a baseline, a kernel file, a
    /// config), each with the sources of a VRT among them.
    pub fn check(path: &Path, overwrite: bool, inputs: &[&Path]) -> Result<Self> {
        let shown = path.to_path_buf();
        if path.as_os_str() == "-" {
            // `-` is standard output where a command writes text
            // ([`Destination`]); a raster is never written there, and a
            // file named `-` is almost never what was meant.
            return Err(Error::usage(
                "output -: this output cannot go to standard output",
            )
            .hint(format!(
                "give a file path (./- for a file named -); - means standard output only for text outputs such as {}",
                Setting::Json.is("-")
            )));
        }
        let name = path.file_name().ok_or_else(|| {
            Error::usage(format!("output {}: not a file name", path.display()))
                .hint("give a file path such as out.tif")
        })?;
        if name.len() > NAME_MAX {
            return Err(Error::usage(format!(
                "output name {} is {} bytes long, more than the {NAME_MAX} a file name may have",
                path.display(),
                name.len()
            ))
            .hint("choose a shorter name"));
        }
        let path = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|_| {
                Error::usage(format!(
                    "output {} is a symlink to a file that does not exist",
                    shown.display()
                ))
                .hint("remove the link or give another output path")
            })?,
            _ => path.to_path_buf(),
        };
        match std::fs::metadata(&path) {
            Ok(meta) => refuse_existing(&shown, &meta, overwrite, inputs)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Error::usage(format!("output {}: {e}", shown.display()))
                    .hint("check the output path"));
            }
        }
        check_directory(&parent_dir(&path), &shown)?;
        Ok(Target {
            path,
            shown,
            overwrite,
            sync: true,
        })
    }

    /// The path written (a symlink given is followed to its file).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path as the user gave it.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    pub fn overwrite(&self) -> bool {
        self.overwrite
    }

    /// The same target, committed by rename without syncing the file or its
    /// directory: for a caller that makes its files durable itself later
    /// (one `syncfs` for many files) and never trusts such a file after a
    /// crash without checking it (`batch` checks each output against the
    /// size and checksum in its record). A rename is still atomic: a
    /// process killed at any moment leaves the old file or the whole new
    /// one; only a crash of the machine can lose unsynced data.
    pub fn synced_later(self) -> Self {
        Target {
            sync: false,
            ..self
        }
    }

    /// Whether committing syncs the file and its directory.
    pub fn syncs(&self) -> bool {
        self.sync
    }

    /// The directory the file is written in.
    pub fn dir(&self) -> PathBuf {
        parent_dir(&self.path)
    }

    /// A key naming the file whatever path reaches it (canonical directory
    /// and file name), to tell two outputs of one run apart.
    fn key(&self) -> PathBuf {
        let dir = self.dir();
        let dir = dir.canonicalize().unwrap_or(dir);
        dir.join(self.path.file_name().unwrap_or_default())
    }
}

/// Refuses two outputs of one run that are the same file.
pub fn distinct(targets: &[&Target]) -> Result<()> {
    for (i, a) in targets.iter().enumerate() {
        if let Some(b) = targets[i + 1..].iter().find(|b| b.key() == a.key()) {
            return Err(Error::usage(format!(
                "outputs {} and {} are the same file",
                a.shown.display(),
                b.shown.display()
            ))
            .hint("give each output its own path"));
        }
    }
    Ok(())
}

/// Why an existing file at the target cannot be written, if it cannot.
fn refuse_existing(shown: &Path, meta: &Metadata, overwrite: bool, inputs: &[&Path]) -> Result<()> {
    let kind = meta.file_type();
    if kind.is_dir() {
        return Err(
            Error::usage(format!("output {} is a directory", shown.display()))
                .hint("give a file path for the output, e.g. DIR/out.tif"),
        );
    }
    if !kind.is_file() {
        return Err(Error::usage(format!(
            "output {} is not a regular file (a device, FIFO or socket)",
            shown.display()
        ))
        .hint("outputs are written as new regular files; give another path (- for standard output where a command writes text)"));
    }
    // Every file the run reads, VRT sources included: `--overwrite` would
    // otherwise replace a file while (or before) it is read.
    let id = super::reads::identity(meta);
    for input in inputs {
        if let Some(read) = super::reads::by_identity(input)
            .get(&id)
            .filter(|_| cfg!(unix))
        {
            let what = match &read.via {
                None => format!("the input {} itself", input.display()),
                Some(vrt) => format!(
                    "the input {}, a source of the VRT {}",
                    read.path.display(),
                    vrt.display()
                ),
            };
            return Err(
                Error::usage(format!("output {} is {what}", shown.display()))
                    .hint("write to a new file; inputs are never modified"),
            );
        }
    }
    if !overwrite {
        return Err(
            Error::usage(format!("output {} exists", shown.display())).hint(format!(
                "pass {} to replace it, or choose another path",
                Setting::Overwrite
            )),
        );
    }
    Ok(())
}

fn check_directory(dir: &Path, shown: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(
            Error::usage(format!("output directory {} does not exist", dir.display()))
                .hint("create it first or choose another output path"),
        );
    }
    if !writable(dir) {
        return Err(Error::io(format!(
            "cannot write {}: the directory {} is not writable",
            shown.display(),
            dir.display()
        ))
        .hint("choose a directory you can write to"));
    }
    Ok(())
}

#[cfg(unix)]
fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path; access(2) only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

#[cfg(not(unix))]
fn writable(_dir: &Path) -> bool {
    true
}

/// The directory of `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_files_need_overwrite_and_inputs_never_are_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.tif");
        std::fs::write(&input, b"x").unwrap();
        let out = dir.path().join("out.tif");
        assert!(Target::check(&out, false, &[&input]).is_ok());
        std::fs::write(&out, b"old").unwrap();
        let err = Target::check(&out, false, &[&input]).unwrap_err();
        assert!(
            err.to_string().contains("pass overwrite to replace it"),
            "{err}"
        );
        assert!(Target::check(&out, true, &[&input]).is_ok());
        // The input by a hard link, with --overwrite: still refused.
        let link = dir.path().join("link.tif");
        std::fs::hard_link(&input, &link).unwrap();
        let err = Target::check(&link, true, &[&input]).unwrap_err();
        assert!(err.to_string().contains("is the input"), "{err}");
    }

    #[test]
    fn symlinks_are_followed_to_their_file_and_special_files_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.tif");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.tif");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let t = Target::check(&link, true, &[]).unwrap();
        assert_eq!(t.path(), real.canonicalize().unwrap());
        assert!(Target::check(Path::new("/dev/null"), true, &[]).is_err());
        assert!(Target::check(dir.path(), true, &[]).is_err());
        let dangling = dir.path().join("dangling.tif");
        std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
        assert!(Target::check(&dangling, true, &[]).is_err());
        let long = dir.path().join("x".repeat(256));
        assert!(Target::check(&long, true, &[]).is_err());
        assert!(Target::check(&dir.path().join("x".repeat(255)), true, &[]).is_ok());
        assert_eq!(
            Destination::check(Path::new("-"), false, &[]).unwrap(),
            Destination::Stdout
        );
        assert!(Target::check(Path::new("-"), true, &[]).is_err());
        let a = Target::check(&real, true, &[]).unwrap();
        assert!(distinct(&[&a, &t]).is_err());
    }
}
