//! A method whose devices start on another thread while the run does
//! something else, and which the run asks for when it first needs it.
//!
//! NVIDIA's OpenCL driver takes 0.35 s to start one GPU (1.2 s for four, one
//! after the other, across processes too) before a context exists, and a
//! run's first program builds follow. A `smooth` opens its input and scans
//! its classes before the method computes anything (a 415 Mpx map's scan
//! takes longer than the driver's start), so the two can overlap: the run
//! pays only what is left of the start when it needs the method.

use super::ClassSmoother;
use crate::error::{Error, Result};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

type Built = Result<Box<dyn ClassSmoother>>;

/// A method being built, or built.
pub struct Starting {
    built: OnceLock<Built>,
    building: Mutex<Option<JoinHandle<Built>>>,
}

impl Starting {
    /// Starts `build` on a thread of its own.
    pub fn spawn(build: impl FnOnce() -> Built + Send + 'static) -> Self {
        let handle = std::thread::Builder::new()
            .name("mapfilter-method-start".into())
            .spawn(build);
        let starting = Starting {
            built: OnceLock::new(),
            building: Mutex::new(None),
        };
        match handle {
            Ok(h) => *starting.building.lock().unwrap_or_else(|e| e.into_inner()) = Some(h),
            // No thread to spare: the method is built when first asked for.
            Err(e) => {
                let _ = starting.built.set(Err(Error::resource(format!(
                    "cannot start a thread to open the devices: {e}"
                ))));
            }
        }
        starting
    }

    /// A method built already.
    pub fn ready(method: Box<dyn ClassSmoother>) -> Self {
        Starting {
            built: OnceLock::from(Ok(method)),
            building: Mutex::new(None),
        }
    }

    /// Whether the method computes on an OpenCL device, as far as is known
    /// without waiting: one still starting on a thread of its own does
    /// (only devices start so); one built says.
    pub fn on_device(&self) -> bool {
        match self.built.get() {
            Some(Ok(method)) => method.runs_on().is_some(),
            Some(Err(_)) => false,
            None => true,
        }
    }

    /// The method if its start is over (the build's error if it failed),
    /// `None` while it is still starting: never waits.
    pub fn try_get(&self) -> Option<Result<&dyn ClassSmoother>> {
        if self.built.get().is_none() {
            let building = self.building.lock().unwrap_or_else(|e| e.into_inner());
            let running = building.as_ref().is_some_and(|h| !h.is_finished());
            drop(building);
            if running {
                return None;
            }
        }
        Some(self.get())
    }

    /// The method, waiting for its start to finish; the build's error (the
    /// same each time it is asked for).
    pub fn get(&self) -> Result<&dyn ClassSmoother> {
        let built = self.built.get_or_init(|| {
            let handle = self
                .building
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            match handle.map(JoinHandle::join) {
                Some(Ok(built)) => built,
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => Err(Error::internal("the method's start was lost")),
            }
        });
        match built {
            Ok(method) => Ok(method.as_ref()),
            Err(e) => Err(e.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::naive::NaiveHost;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Barrier};

    #[test]
    fn the_build_runs_beside_the_caller_and_is_waited_for_once() {
        // The build cannot finish before the caller reaches the barrier:
        // it runs on another thread while the caller works.
        let barrier = Arc::new(Barrier::new(2));
        let built = Arc::new(AtomicBool::new(false));
        let (b, flag) = (barrier.clone(), built.clone());
        let starting = Starting::spawn(move || {
            b.wait();
            flag.store(true, Ordering::SeqCst);
            Ok(Box::new(NaiveHost) as Box<dyn ClassSmoother>)
        });
        assert!(!built.load(Ordering::SeqCst));
        assert!(starting.on_device());
        assert!(starting.try_get().is_none());
        barrier.wait();
        let first = starting.get().unwrap() as *const dyn ClassSmoother;
        assert!(built.load(Ordering::SeqCst));
        let again = starting.get().unwrap() as *const dyn ClassSmoother;
        assert!(std::ptr::addr_eq(first, again));
        // Built now: a host method.
        assert!(!starting.on_device());
        assert!(starting.try_get().unwrap().is_ok());
        let ready = Starting::ready(Box::new(NaiveHost));
        assert!(ready.get().unwrap().is_exact());
        assert!(!ready.on_device());
    }

    #[test]
    fn a_failed_start_fails_every_ask_with_its_error() {
        let starting = Starting::spawn(|| Err(Error::device("no GPU").hint("use --device host")));
        for _ in 0..2 {
            let e = starting.get().err().unwrap();
            assert_eq!(e.to_string(), "no GPU (hint: use --device host)");
        }
    }
}
