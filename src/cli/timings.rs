//! `--timings`: one line per stage of a command on stderr (stage name,
//! milliseconds in the stage, milliseconds since the command started), so
//! users see where the fixed costs of a run go; on several devices, one
//! line per device. Prints nothing unless enabled.

use std::time::Instant;

/// A stage clock: [`Timings::stage`] closes the stage that ran since the last call.
pub struct Timings {
    enabled: bool,
    start: Instant,
    last: Instant,
}

impl Timings {
    pub fn new(enabled: bool) -> Self {
        let now = Instant::now();
        Timings {
            enabled,
            start: now,
            last: now,
        }
    }

    /// Ends the stage `name` (it ran since the previous stage ended) and prints its line.
    pub fn stage(&mut self, name: &str) {
        let now = Instant::now();
        if self.enabled {
            let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
            eprintln!(
                "timing {name:<8} {:8.1} ms  (at {:8.1} ms)",
                ms(self.last, now),
                ms(self.start, now)
            );
        }
        self.last = now;
    }

    /// Prints how long a stage's own thread (`read`, `write`) was busy.
    pub fn busy(&self, name: &str, time: std::time::Duration) {
        if self.enabled {
            eprintln!(
                "timing {name:<8} {:8.1} ms  (busy on its own thread)",
                time.as_secs_f64() * 1e3
            );
        }
    }

    /// Prints what one device of a run on several did.
    pub fn device(&self, share: &crate::method::multi::DeviceShare) {
        if self.enabled {
            eprintln!("timing device   {share}");
        }
    }

    /// Prints the line of work `name` that ran from `from` to `to` on another thread.
    pub fn background(&self, name: &str, from: Instant, to: Instant) {
        if self.enabled {
            let ms = |a: Instant, b: Instant| (b.max(a) - a).as_secs_f64() * 1e3;
            eprintln!(
                "timing {name:<8} {:8.1} ms  (at {:8.1} ms, on its own thread)",
                ms(from, to),
                ms(self.start, to)
            );
        }
    }
}
