//! Reports users hand on: the accuracy report of a comparison (JSON,
//! Markdown, self-contained HTML with quick-look maps and plots) and the
//! HTML report of a sweep. Everything here is GDAL-free; the CLI gathers the
//! figures ([`crate::metrics`]) and pictures ([`quicklook`]) and calls in.

pub mod colour;
pub mod compare;
pub mod page;
pub mod plot;
pub mod quicklook;
pub mod sweep;

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Writes `text` to `path` through a temp file in the same directory, renamed
/// into place on success: a failed write leaves an existing file untouched.
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let fail = |e: std::io::Error| {
        Error::new(format!("cannot write {}: {e}", path.display()))
            .hint("check that the directory exists and is writable")
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".mapfilter-report");
    // Reports are for handing on: readable like any new file (umask applies).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    let mut tmp = builder.tempfile_in(&dir).map_err(fail)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
