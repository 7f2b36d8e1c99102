//! SIGINT, SIGTERM and SIGHUP (Ctrl-C, `timeout`, SLURM, systemd, a closed
//! terminal): the run stops at once, leaving nothing behind.
//!
//! A thread of its own waits for the signals (signal-hook), so the handler
//! can do real work: it removes every temp file of the process (the
//! registry of [`crate::output`]: nothing is created or committed after),
//! says so in one line and exits with the shell's code for the signal
//! (130, 143, 129). Existing outputs are never touched: they are only ever
//! replaced by a rename of a complete file, and a rename in progress
//! finishes before the temp files go. Installed first thing in `main`, so
//! it covers every command from start to exit.
//!
//! The process ends within [`DEADLINE`] of the first signal, and at once on
//! a second one: the clean-up runs on a thread of its own while this one
//! keeps listening, so a clean-up that waits (on a lock another thread holds
//! across a read of a FIFO or a hung NFS file, or on a long GDAL call) cannot
//! keep the process alive. Past the deadline, or on the second signal, the
//! temp files are removed without waiting for anything and the process
//! exits. Long GDAL copies (a COG) poll [`received`] and stop early.
//!
//! What else a command holds that must go with it (the claims of `batch
//! run`) it registers with [`at_stop`].
//!
//! Library callers that run without the handler can still poll [`check`].

use crate::error::{Error, Result};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Clean-ups run by the handler after the temp files are removed.
static AT_STOP: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

/// Has the handler run `cleanup` before the process exits on a signal. It
/// runs on a thread of its own while other threads may still be working:
/// it must take what it removes from them under a lock it keeps, and is
/// cut short by the exit at [`DEADLINE`] if it waits longer.
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

/// How long after the first signal the process exits at the latest.
pub const DEADLINE: Duration = Duration::from_millis(900);

/// How long the clean-up waits for a commit or a by-name create in
/// progress to finish before it removes the temp files anyway.
const PATIENCE: Duration = Duration::from_millis(500);

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
                let Some(signal) = signals.forever().next() else {
                    return;
                };
                RECEIVED.store(signal, Ordering::SeqCst);
                let (done, cleaned) = std::sync::mpsc::channel();
                let cleaner = std::thread::Builder::new()
                    .name("signal clean-up".into())
                    .spawn(move || {
                        clean_up();
                        let _ = done.send(());
                    });
                let started = Instant::now();
                let finished = cleaner.is_ok()
                    && loop {
                        if cleaned.try_recv().is_ok() {
                            break true;
                        }
                        let again = signals.pending().next().is_some();
                        if again || started.elapsed() >= DEADLINE {
                            break false;
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    };
                if !finished {
                    // The clean-up waits on something: remove the temp
                    // files without waiting, and go.
                    crate::output::abandon_all(Duration::ZERO);
                }
                exit(signal)
            });
    });
}

/// Removes the temp files and runs the clean-ups of [`at_stop`].
fn clean_up() {
    crate::output::abandon_all(PATIENCE);
    for cleanup in AT_STOP.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        cleanup();
    }
}

/// Says so in one line and exits with 128 + the signal's number.
fn exit(signal: i32) -> ! {
    let line = format!(
        "mapfilter: interrupted by {}: temp files removed (an output is the old file, or the new one where it was complete before the signal)\n",
        name(signal)
    );
    // SAFETY: a plain write(2) to stderr, not through Rust's stderr lock,
    // which a thread blocked on a full pipe may hold; then the end of the
    // process without running destructors or atexit handlers on other
    // threads' data (some may be inside GDAL or OpenCL).
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
        libc::_exit(128 + signal)
    }
}

fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Whether a stopping signal was received: for long library calls that
/// can stop early (GDAL's progress callbacks).
pub fn received() -> bool {
    RECEIVED.load(Ordering::Relaxed) != 0
}

/// The stopping signal received, if one was: to pass it on to child
/// processes.
pub fn received_signal() -> Option<i32> {
    match RECEIVED.load(Ordering::Relaxed) {
        0 => None,
        signal => Some(signal),
    }
}

/// After a run that stopped because a signal came: leaves the exit to the
/// signal's thread, which removes the temp files and exits with 128 + N
/// within [`DEADLINE`]. Without this wait the run's own error could end the
/// process first, with exit code 1 (a race `no_data_loss` caught).
pub fn leave_exit_to_the_signal() {
    if received() {
        std::thread::sleep(2 * DEADLINE);
    }
}

/// Fails once a stopping signal was received.
pub fn check() -> Result<()> {
    match RECEIVED.load(Ordering::Relaxed) {
        0 => Ok(()),
        signal => Err(
            Error::interrupted(format!("interrupted by {}", name(signal)))
                .hint("no output was written; run again to finish"),
        ),
    }
}
