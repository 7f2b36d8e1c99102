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
        Error::io(format!("cannot read {what} {}: {e}", path.display()))
            .hint(format!("{what} must be a readable text file"))
    };
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut bytes = Vec::new();
    file.take(MAX_TEXT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > MAX_TEXT_FILE {
        return Err(Error::input(format!(
            "{what} {} is larger than {} MiB",
            path.display(),
            MAX_TEXT_FILE >> 20
        ))
        .hint(format!("a {what} is a small text file")));
    }
    String::from_utf8(bytes).map_err(|_| {
        Error::input(format!("{what} {} is not UTF-8 text", path.display()))
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
    Err(Error::resource(format!(
        "{what} of {width}x{height} needs about {} in memory, more than the {} available",
        gib(needed),
        gib(available as u128)
    ))
    .hint("choose a smaller size"))
}

/// Memory available to new allocations of this process: the least of
/// the machine's (`MemAvailable` of /proc/meminfo), what its cgroups leave
/// (`memory.max` less `memory.current`, at every level; v1's
/// `memory.limit_in_bytes` less `memory.usage_in_bytes`) and what
/// `RLIMIT_AS` (`ulimit -v`) leaves of its address space; a generous bound
/// where none can be read. Past any of them an allocation fails, which
/// aborts the process.
pub fn available_memory() -> u64 {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(1 << 40, |kb| kb.saturating_mul(1024));
    [Some(machine), cgroup_room(), address_space_room()]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(machine)
}

/// What the cgroups of this process leave, the tightest level counting.
fn cgroup_room() -> Option<u64> {
    let number = |path: std::path::PathBuf| -> Option<u64> {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    };
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut room: Option<u64> = None;
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (root, max, current) = match controllers {
            "" => ("/sys/fs/cgroup", "memory.max", "memory.current"),
            c if c.split(',').any(|c| c == "memory") => (
                "/sys/fs/cgroup/memory",
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            ),
            _ => continue,
        };
        // This group and every group above it: each limit applies.
        let mut dir = Path::new(root).join(path.trim_start_matches('/'));
        loop {
            if let (Some(max), Some(current)) = (number(dir.join(max)), number(dir.join(current))) {
                let left = max.saturating_sub(current);
                room = Some(room.map_or(left, |r| r.min(left)));
            }
            if dir == Path::new(root) || !dir.pop() {
                break;
            }
        }
    }
    room
}

/// What `RLIMIT_AS` leaves of the address space (its size now from
/// /proc/self/statm), or `None` without a limit.
#[cfg(unix)]
fn address_space_room() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let pages: u64 = std::fs::read_to_string("/proc/self/statm")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(limit.rlim_cur.saturating_sub(pages.saturating_mul(page)))
}

#[cfg(not(unix))]
fn address_space_room() -> Option<u64> {
    None
}

/// Bytes as GiB with one decimal, for messages.
pub fn gib(bytes: u128) -> String {
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
