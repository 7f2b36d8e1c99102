//! GDAL's error reports: kept off stderr (they reach the user as our
//! one-line errors instead) and counted, so that a write GDAL reports as
//! failed fails the run.
//!
//! Many GDAL write paths report failures only through `CPLError`, not in a
//! return value: writing cached blocks on flush, and closing a dataset
//! (`GDALClose` returns nothing in GDAL 3.6). A full disk shows only there.
//! And a dirty block may be written out by whichever thread next needs room
//! in GDAL's block cache. So every failure, on any thread, is counted here;
//! a writer takes a [`Mark`] when it starts and fails at [`Mark::check`] if
//! any failure came after it.

use crate::error::{Error, Result};
use gdal::errors::CplErrType;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Failures (`CE_Failure`, `CE_Fatal`) GDAL reported so far.
static FAILURES: AtomicU64 = AtomicU64::new(0);
/// The latest failure's message.
static LAST: Mutex<String> = Mutex::new(String::new());

/// Installs the handler (once; later calls do nothing).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        gdal::config::set_error_handler(|class, _, msg| {
            if matches!(class, CplErrType::Failure | CplErrType::Fatal) {
                *LAST.lock().unwrap_or_else(|e| e.into_inner()) = msg.to_string();
                FAILURES.fetch_add(1, Ordering::SeqCst);
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
        Err(Error::new(format!("{what}: {cause}")))
    }
}
