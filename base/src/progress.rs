//! Progress reporting for long work: an indicatif bar on a terminal, nothing
//! otherwise (not a terminal, or `--quiet`), or, with
//! `MAPFILTER_PROGRESS=lines` in the environment, machine-readable lines on
//! stderr for the programs that run mapfilter (the QGIS provider):
//! `progress: 42.0 smooth tiles` (percent of the phase, label, unit), one
//! per whole percent. The engine reports through this type only, so methods
//! and I/O never print. A progress can also hand its steps to a caller
//! ([`Progress::steps_to`]): `batch run` sums the steps of its tasks into
//! one progress over the whole batch.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

/// Whether `MAPFILTER_PROGRESS=lines` was set (read once per process, in
/// [`crate::switches`]).
pub fn lines_wanted() -> bool {
    crate::switches::environment().progress_lines
}

/// A progress bar that may be hidden.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    lines: Option<Mutex<Lines>>,
    steps: Option<Steps>,
}

/// Where a progress's position goes: called with (position, length) after
/// every change.
#[derive(Clone)]
pub struct Steps(pub Arc<dyn Fn(u64, u64) + Send + Sync>);

impl std::fmt::Debug for Steps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Steps")
    }
}

/// The state of progress lines: the phase, and the last whole percent printed.
#[derive(Debug)]
struct Lines {
    label: String,
    unit: String,
    len: u64,
    pos: u64,
    printed: Option<u64>,
}

impl Lines {
    /// Prints the current percent if its whole part is new.
    fn report(&mut self) {
        let percent = if self.len == 0 {
            100.0
        } else {
            100.0 * self.pos.min(self.len) as f64 / self.len as f64
        };
        let whole = percent.floor() as u64;
        if self.printed.is_some_and(|p| p >= whole) {
            return;
        }
        self.printed = Some(whole);
        let _ = writeln!(
            std::io::stderr().lock(),
            "progress: {percent:.1} {} {}",
            self.label,
            self.unit
        );
    }
}

impl Progress {
    /// Visible on stderr when it is a terminal and `quiet` is false; lines
    /// instead of a bar under `MAPFILTER_PROGRESS=lines`.
    pub fn new(quiet: bool, label: &str) -> Self {
        if !quiet && lines_wanted() {
            return Progress {
                lines: Some(Mutex::new(Lines {
                    label: label.to_string(),
                    unit: String::new(),
                    len: 0,
                    pos: 0,
                    printed: None,
                })),
                ..Self::hidden()
            };
        }
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
        Progress {
            bar,
            lines: None,
            steps: None,
        }
    }

    /// Draws nothing.
    pub fn hidden() -> Self {
        Progress {
            bar: ProgressBar::hidden(),
            lines: None,
            steps: None,
        }
    }

    /// Draws nothing, and tells `steps` every position.
    pub fn steps_to(steps: Steps) -> Self {
        Progress {
            steps: Some(steps),
            ..Self::hidden()
        }
    }

    fn tell(&self) {
        if let Some(steps) = &self.steps {
            (steps.0)(self.bar.position(), self.bar.length().unwrap_or(0));
        }
    }

    /// Runs `f` on the line state, if lines are wanted.
    fn with_lines(&self, f: impl FnOnce(&mut Lines)) {
        if let Some(lines) = &self.lines {
            f(&mut lines.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// Starts a phase of `len` steps named by `unit`.
    pub fn start(&self, len: u64, unit: &str) {
        self.bar.reset();
        self.bar.set_length(len);
        self.bar.set_message(unit.to_string());
        self.with_lines(|l| {
            l.unit = unit.to_string();
            l.len = len;
            l.pos = 0;
            l.printed = None;
            if len > 0 {
                l.report();
            }
        });
        self.tell();
    }

    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
        self.with_lines(|l| {
            l.pos += n;
            l.report();
        });
        self.tell();
    }

    pub fn finish(&self) {
        if let Some(len) = self.bar.length() {
            self.bar.set_position(len);
        }
        self.tell();
        self.bar.finish_and_clear();
        self.with_lines(|l| {
            l.pos = l.len;
            l.report();
        });
    }
}
