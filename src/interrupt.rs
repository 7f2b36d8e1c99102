//! Ctrl-C handling for long runs: the first interrupt asks the engine to stop
//! at the next tile boundary, so outputs are dropped cleanly (temp file
//! removed, target untouched); a second interrupt exits at once.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler (once; later calls do nothing).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if REQUESTED.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
    });
}

/// Fails once an interrupt was requested.
pub fn check() -> Result<()> {
    if REQUESTED.load(Ordering::Relaxed) {
        return Err(Error::new("interrupted").hint("no output was written; run again to finish"));
    }
    Ok(())
}
