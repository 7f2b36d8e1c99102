//! Bounds on what user input can make mapfilter read or allocate, so that a
//! wrong size or file gives a one-line error instead of exhausting memory
//! (an allocation failure aborts the process with no message of ours).

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// Largest text file read as a kernel or config: a 511×511 matrix of long
/// numbers takes under 8 MiB.
pub const MAX_TEXT_FILE: u64 = 16 << 20;

/// Reads a text file of at most [`MAX_TEXT_FILE`] bytes (`what` names it in
/// messages, e.g. "kernel file"). Reads no further than the limit, so
/// `/dev/zero` or a huge file fails at once.
pub fn read_text_file(path: &Path, what: &str) -> Result<String> {
    let fail = |e: std::io::Error| {
        Error::new(format!("cannot read {what} {}: {e}", path.display()))
            .hint(format!("{what} must be a readable text file"))
    };
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut bytes = Vec::new();
    file.take(MAX_TEXT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > MAX_TEXT_FILE {
        return Err(Error::new(format!(
            "{what} {} is larger than {} MiB",
            path.display(),
            MAX_TEXT_FILE >> 20
        ))
        .hint(format!("a {what} is a small text file")));
    }
    String::from_utf8(bytes).map_err(|_| {
        Error::new(format!("{what} {} is not UTF-8 text", path.display()))
            .hint(format!("a {what} is a small text file"))
    })
}

/// Bytes per pixel of an in-memory smoothing run (bench, sweep): the
/// input, the output and the baseline's output as 16-bit codes, with room
/// for the methods' tile buffers.
pub const IN_MEMORY_RUN_BYTES: usize = 8;

/// Refuses a `width`×`height` raster held in memory at about
/// `bytes_per_pixel` when that is more than the memory available, saying
/// how much it would need.
pub fn check_in_memory(
    width: usize,
    height: usize,
    bytes_per_pixel: usize,
    what: &str,
) -> Result<()> {
    let needed = (width as u128) * (height as u128) * (bytes_per_pixel as u128);
    let available = available_memory();
    if needed <= available as u128 {
        return Ok(());
    }
    Err(Error::new(format!(
        "{what} of {width}x{height} needs about {} in memory, more than the {} available",
        gib(needed),
        gib(available as u128)
    ))
    .hint("choose a smaller size"))
}

/// Memory available to new allocations (`MemAvailable` of /proc/meminfo),
/// or a generous bound where that cannot be read.
pub(crate) fn available_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(1 << 40, |kb| kb * 1024)
}

fn gib(bytes: u128) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_sizes_and_endless_files_are_refused() {
        let e = check_in_memory(100_000, 100_000, 8, "an image").unwrap_err();
        assert!(e.to_string().contains("GiB"), "{e}");
        assert!(check_in_memory(64, 64, 8, "an image").is_ok());
        let e = read_text_file(Path::new("/dev/zero"), "kernel file").unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
    }
}
