//! SIGINT, SIGTERM and SIGHUP (Ctrl-C, `timeout`, SLURM, systemd, a closed
//! terminal): the run stops at once, leaving nothing behind.
//!
//! A thread of its own waits for the signals (signal-hook), so the handler
//! can do real work: it removes every temp file of the process (the
//! registry of [`crate::output`], kept locked so that nothing is created or
//! committed after), says so in one line and exits with the shell's code
//! for the signal (130, 143, 129). Existing outputs are never touched: they
//! are only ever replaced by a rename of a complete file, and a rename in
//! progress finishes before the registry is taken. Installed first thing in
//! `main`, so it covers every command from start to exit.
//!
//! What else a command holds that must go with it (the claims of `batch
//! run`) it registers with [`at_stop`].
//!
//! Library callers that run without the handler can still poll [`check`].

use crate::error::{Error, Result};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// Clean-ups run by the handler after the temp files are removed.
static AT_STOP: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

/// Has the handler run `cleanup` before the process exits on a signal. It
/// runs on the signal thread while other threads may still be working: it
/// must take what it removes from them under a lock it keeps.
pub fn at_stop(cleanup: fn()) {
    AT_STOP
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(cleanup);
}

/// The signal received, 0 while none has been.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The signals that stop a run.
const STOPPING: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Installs the handler (once; later calls do nothing).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new(STOPPING) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    stop(signal);
                }
            });
    });
}

/// Removes the temp files and exits with 128 + the signal's number.
fn stop(signal: i32) -> ! {
    RECEIVED.store(signal, Ordering::SeqCst);
    crate::output::abandon_all();
    for cleanup in AT_STOP.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        cleanup();
    }
    eprintln!(
        "mapfilter: interrupted by {}: temp files removed (an output is the old file, or the new one where it was complete before the signal)",
        name(signal)
    );
    // SAFETY: ends the process without running destructors or atexit
    // handlers on other threads' data (some may be inside GDAL or OpenCL).
    unsafe { libc::_exit(128 + signal) }
}

fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Fails once a stopping signal was received.
pub fn check() -> Result<()> {
    match RECEIVED.load(Ordering::Relaxed) {
        0 => Ok(()),
        signal => Err(Error::new(format!("interrupted by {}", name(signal)))
            .hint("no output was written; run again to finish")),
    }
}
