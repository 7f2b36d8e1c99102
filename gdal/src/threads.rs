//! Long-lived threads for GDAL work done off the caller's thread.
//!
//! GDAL keeps a PROJ context per thread, and PROJ opens and warms its SQLite
//! database once per context: reading a coordinate system or writing one as
//! GeoTIFF keys on a fresh thread pays that again, tens of milliseconds of
//! CPU. A batch makes one output per task, so a thread per output paid it
//! per task. [`run`] hands a job to a pool of threads that outlive the job
//! (an idle one if there is one, else a new one), so the database stays
//! open and warm across outputs. The pool only grows to the number of jobs
//! ever waiting at once, and its threads sleep while idle.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    jobs: Mutex<Sender<Job>>,
    queue: Mutex<Receiver<Job>>,
    /// Threads waiting for a job.
    idle: Mutex<usize>,
}

impl Pool {
    fn new() -> Pool {
        let (send, receive) = channel::<Job>();
        Pool {
            jobs: Mutex::new(send),
            queue: Mutex::new(receive),
            idle: Mutex::new(0),
        }
    }

    fn run<T: Send + 'static>(
        &'static self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Receiver<T> {
        let (send, result) = channel();
        {
            // A job never waits for a thread: with none idle, one more starts.
            let mut idle = self.idle.lock().expect("pool lock");
            if *idle == 0 {
                self.spawn_worker();
            } else {
                *idle -= 1;
            }
        }
        let job: Job = Box::new(move || {
            let value = job();
            // Idle before the result is out, so a caller that sends its next
            // job on receiving this result finds this thread free.
            *self.idle.lock().expect("pool lock") += 1;
            let _ = send.send(value);
        });
        self.jobs
            .lock()
            .expect("pool lock")
            .send(job)
            .expect("pool threads never stop");
        result
    }

    fn spawn_worker(&'static self) {
        std::thread::Builder::new()
            .name("mapfilter-gdal".into())
            .spawn(move || {
                loop {
                    let job = self.queue.lock().expect("pool lock").recv();
                    let Ok(job) = job else { return };
                    // A panicking job must not take the thread (and its
                    // count) away; a finished one counted itself idle.
                    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    if run.is_err() {
                        *self.idle.lock().expect("pool lock") += 1;
                    }
                }
            })
            .expect("spawning a GDAL worker thread");
    }
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(Pool::new)
}

/// Runs `job` on a pool thread; its result comes on the returned channel
/// (a job that panics drops its sender, which the receiver sees).
pub fn run<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> Receiver<T> {
    pool().run(job)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of its own, so other tests' GDAL jobs do not share it.
    fn private_pool() -> &'static Pool {
        Box::leak(Box::new(Pool::new()))
    }

    #[test]
    fn jobs_run_and_threads_are_reused() {
        let pool = private_pool();
        let ids: std::collections::HashSet<_> = (0..6)
            .map(|_| pool.run(|| std::thread::current().id()).recv().unwrap())
            .collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        assert!(!ids.contains(&std::thread::current().id()));
    }

    #[test]
    fn jobs_waiting_at_once_each_get_a_thread() {
        // Two jobs that each wait for the other's signal: with a single
        // thread for both this would never end.
        let (a_send, a_recv) = channel::<()>();
        let (b_send, b_recv) = channel::<()>();
        let pool = private_pool();
        let a = pool.run(move || {
            b_send.send(()).unwrap();
            a_recv.recv().is_ok()
        });
        let b = pool.run(move || {
            let got = b_recv.recv().is_ok();
            a_send.send(()).unwrap();
            got
        });
        assert!(a.recv().unwrap() && b.recv().unwrap());
    }

    #[test]
    fn a_panicking_job_drops_its_result_channel() {
        let pool = private_pool();
        let r = pool.run(|| -> u8 { panic!("boom") });
        assert!(r.recv().is_err());
        assert_eq!(pool.run(|| 7).recv().unwrap(), 7);
    }
}
