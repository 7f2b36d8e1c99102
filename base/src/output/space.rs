//! Telling a full disk from other write failures, so the message says so.

use std::path::Path;

/// Below this many free bytes a failed write is taken for a full disk.
const NEARLY_FULL: u64 = 4 << 20;

/// "the disk holding DIR is full (… free; the output had reached …)" when
/// `dir`'s filesystem is (nearly) full after a failed write of `written`
/// bytes, else `None`.
pub fn disk_full_cause(dir: &Path, written: Option<u64>) -> Option<String> {
    let free = free_bytes(dir)?;
    if free >= NEARLY_FULL {
        return None;
    }
    let reached = written
        .map(|w| format!("; the output had reached {} when it failed", bytes(w)))
        .unwrap_or_default();
    Some(format!(
        "the disk holding {} is full ({} free{reached})",
        dir.display(),
        bytes(free)
    ))
}

/// Whether an I/O error is the disk being full (or over quota).
pub fn is_disk_full(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct from a NUL-terminated path.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(c.as_ptr(), &mut s) == 0).then(|| s.f_bavail as u64 * s.f_frsize as u64)
    }
}

#[cfg(not(unix))]
fn free_bytes(_dir: &Path) -> Option<u64> {
    None
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}
