//! GDAL's error reports: kept off stderr (they reach the user as our
//! one-line errors instead) and counted, so that a write GDAL reports as
//! failed fails the run.
//!
//! Many GDAL write paths report failures only through `CPLError`, not in a
//! return value: writing cached blocks on flush, and closing a dataset
//! (`GDALClose` returns nothing in GDAL 3.6). A full disk shows only there.
//! And a dirty block may be written out by whichever thread next needs room
//! in GDAL's block cache. So failures are counted twice: every failure on
//! the thread it happened on ([`on_this_thread`] wraps a writer's own GDAL
//! calls: a thread-local count, so it is this output's), and every failure
//! of a write on any thread (a writer takes a [`Mark`] when it starts and
//! fails at [`Mark::check`] if one came after it). Only writes enter the
//! second count: a failure to open or read an input (a deleted tile, a
//! corrupt one) belongs to the thread, and so the task, that read it, and
//! in a batch must not fail another task's output. A write failure on
//! another thread may be another output's (GDAL cannot say whose block it
//! was writing): it fails every output in progress, and since such
//! failures come from the disk, `batch run` retries them on a plain rerun.

use gdal::errors::CplErrType;
use mapfilter_core::error::{Error, Result};
use std::cell::{Cell, RefCell};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Failures (`CE_Failure`, `CE_Fatal`) of writes GDAL reported so far.
static FAILURES: AtomicU64 = AtomicU64::new(0);
/// The latest such failure's message.
static LAST: Mutex<String> = Mutex::new(String::new());

thread_local! {
    /// Every failure GDAL reported on this thread, and the latest message.
    static LOCAL: Cell<u64> = const { Cell::new(0) };
    static LOCAL_LAST: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Whether a failure is of a write (GDAL's and libtiff's messages for
/// writing blocks, flushing and a full disk all say so), not of opening or
/// reading an input.
fn is_write(msg: &str) -> bool {
    let m = msg.to_ascii_lowercase();
    ["writ", "flush", "no space", "disk full", "quota"]
        .iter()
        .any(|w| m.contains(w))
}

/// Installs the handler (once; later calls do nothing).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        gdal::config::set_error_handler(|class, _, msg| {
            if matches!(class, CplErrType::Failure | CplErrType::Fatal) {
                LOCAL.with(|n| n.set(n.get() + 1));
                LOCAL_LAST.with(|l| *l.borrow_mut() = msg.to_string());
                if is_write(msg) {
                    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = msg.to_string();
                    FAILURES.fetch_add(1, Ordering::SeqCst);
                }
                log::debug!("GDAL failure: {msg}");
            } else if class == CplErrType::Warning {
                log::debug!("GDAL warning: {msg}");
            }
        })
    });
}

/// The count of failures at one moment.
#[derive(Clone, Copy, Debug)]
pub struct Mark(u64);

impl Mark {
    pub fn now() -> Self {
        install();
        Mark(FAILURES.load(Ordering::SeqCst))
    }

    /// Fails if GDAL reported a failure since the mark, with its message.
    pub fn check(self, what: &str) -> Result<()> {
        if FAILURES.load(Ordering::SeqCst) == self.0 {
            return Ok(());
        }
        let last = LAST.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let cause = if last.is_empty() {
            "GDAL reported a failure".to_string()
        } else {
            last
        };
        Err(Error::io(format!("{what}: {cause}")))
    }
}

/// Runs `call` (a writer's own GDAL call) and fails, with GDAL's message, if
/// GDAL reported any failure on this thread meanwhile.
pub fn on_this_thread<T>(what: &str, call: impl FnOnce() -> T) -> Result<T> {
    install();
    let before = LOCAL.with(Cell::get);
    let value = call();
    if LOCAL.with(Cell::get) == before {
        return Ok(value);
    }
    let last = LOCAL_LAST.with(|l| l.borrow().clone());
    Err(Error::io(format!("{what}: {last}")))
}

/// Turns a GDAL error into a one-line [`Error`].
pub fn gdal_error(e: gdal::errors::GdalError) -> Error {
    use gdal::errors::GdalError;
    match e {
        GdalError::CplError { msg, .. } | GdalError::NullPointer { msg, .. } if !msg.is_empty() => {
            Error::io(msg)
        }
        other => Error::io(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_opens_are_told_from_writes() {
        for input in [
            "IReadBlock failed at X offset 0, Y offset 0: TIFFReadEncodedStrip() failed.",
            "/tiles/t_1_1.tif: No such file or directory",
            "`/tiles/t.tif' not recognized as a supported file format.",
        ] {
            assert!(!is_write(input), "{input}");
        }
        for output in [
            "TIFFAppendToStrip:Write error at scanline 3",
            "Failed to write 65536 bytes",
            "An error occurred while writing a dirty block from GDALRasterBand::IRasterIO",
            "No space left on device",
        ] {
            assert!(is_write(output), "{output}");
        }
    }
}
