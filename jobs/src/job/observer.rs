//! How a job talks back to whoever started it: stages, work on other
//! threads, progress bars and a tap on the pixels, through one
//! [`Observer`] that every job (smooth, filter, compare) takes. The CLI's
//! observers print timings and bars; `batch` counts classes through the
//! tap; [`Silent`] observes nothing.

use mapfilter_core::engine::SmoothJob;
use mapfilter_core::error::Result;
use mapfilter_core::method::ClassSmoother;
use mapfilter_core::progress::Progress;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tiles::Rect;

/// What a run reports to whoever started it. Every method has a default
/// that does nothing.
pub trait Observer {
    /// The stage `name` ended now.
    fn stage(&mut self, _name: &str) {}
    /// Work `name` ran from `from` to `to` on another thread.
    fn background(&mut self, _name: &str, _from: Instant, _to: Instant) {}
    /// Time a stage's own thread spent working (`read`, `write`: the
    /// engine's reader and writer threads), the rest of it waiting.
    fn busy(&mut self, _name: &str, _time: Duration) {}
    /// The method chosen and the job, before the engine starts.
    fn before_engine(&mut self, _job: &SmoothJob, _method: &dyn ClassSmoother) -> Result<()> {
        Ok(())
    }
    /// A progress bar for a phase named `label` (hidden by default).
    fn progress(&self, _label: &str) -> Progress {
        Progress::hidden()
    }
    /// What sees the pixels the engine reads and writes (none by default).
    fn tap(&self) -> Option<Arc<dyn Tap>> {
        None
    }
}

/// Sees the pixels of a run as the engine moves them, so that a caller can
/// count them without reading the input or the output again.
pub trait Tap: Send + Sync {
    /// Codes of `window`, in the input's pixels, as read. Tiles overlap by
    /// their halo, so a pixel may be read more than once.
    fn read(&self, _window: Rect, _codes: &[u16]) {}
    /// Codes of `window`, in the written output's pixels, as written (each
    /// pixel once).
    fn written(&self, _window: Rect, _codes: &[u16]) {}
}

/// An observer that observes nothing.
pub struct Silent;

impl Observer for Silent {}
