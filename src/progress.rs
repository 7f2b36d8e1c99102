//! Progress reporting for long work: an indicatif bar on a terminal, nothing
//! otherwise (not a terminal, or `--quiet`). The engine reports through this
//! type only, so methods and I/O never print.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A progress bar that may be hidden.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// Visible on stderr when it is a terminal and `quiet` is false.
    pub fn new(quiet: bool, label: &str) -> Self {
        if quiet || !std::io::stderr().is_terminal() {
            return Self::hidden();
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>10} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg} (eta {eta})",
            )
            .expect("static template"),
        );
        bar.set_prefix(label.to_string());
        Progress { bar }
    }

    /// Draws nothing.
    pub fn hidden() -> Self {
        Progress {
            bar: ProgressBar::hidden(),
        }
    }

    /// Starts a phase of `len` steps named by `unit`.
    pub fn start(&self, len: u64, unit: &str) {
        self.bar.reset();
        self.bar.set_length(len);
        self.bar.set_message(unit.to_string());
    }

    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
