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

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let (send, receive) = channel::<Job>();
        Pool {
            jobs: Mutex::new(send),
            queue: Mutex::new(receive),
            idle: Mutex::new(0),
        }
    })
}

/// Runs `job` on a pool thread; its result comes on the returned channel
/// (a job that panics drops its sender, which the receiver sees).
pub fn run<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> Receiver<T> {
    let (send, result) = channel();
    let pool = pool();
    {
        // A job never waits for a thread: with none idle, one more starts.
        let mut idle = pool.idle.lock().expect("pool lock");
        if *idle == 0 {
            spawn_worker(pool);
        } else {
            *idle -= 1;
        }
    }
    let job: Job = Box::new(move || {
        let _ = send.send(job());
    });
    pool.jobs
        .lock()
        .expect("pool lock")
        .send(job)
        .expect("pool threads never stop");
    result
}

fn spawn_worker(pool: &'static Pool) {
    std::thread::Builder::new()
        .name("mapfilter-gdal".into())
        .spawn(move || {
            loop {
                let job = pool.queue.lock().expect("pool lock").recv();
                let Ok(job) = job else { return };
                // A panicking job must not take the thread (and its count) away.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                *pool.idle.lock().expect("pool lock") += 1;
            }
        })
        .expect("spawning a GDAL worker thread");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_and_threads_are_reused() {
        let first = run(|| std::thread::current().id()).recv().unwrap();
        // The worker marks itself idle just after sending; give it a moment.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let ids: std::collections::HashSet<_> = (0..5)
            .map(|_| {
                let id = run(|| std::thread::current().id()).recv().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
                id
            })
            .collect();
        assert!(ids.len() <= 2, "{ids:?}");
        assert_ne!(first, std::thread::current().id());
    }

    #[test]
    fn jobs_waiting_at_once_each_get_a_thread() {
        // Two jobs that each wait for the other's signal: with a single
        // thread for both this would never end.
        let (a_send, a_recv) = channel::<()>();
        let (b_send, b_recv) = channel::<()>();
        let a = run(move || {
            b_send.send(()).unwrap();
            a_recv.recv().is_ok()
        });
        let b = run(move || {
            let got = b_recv.recv().is_ok();
            a_send.send(()).unwrap();
            got
        });
        assert!(a.recv().unwrap() && b.recv().unwrap());
    }

    #[test]
    fn a_panicking_job_drops_its_result_channel() {
        let r = run(|| -> u8 { panic!("boom") });
        assert!(r.recv().is_err());
        assert_eq!(run(|| 7).recv().unwrap(), 7);
    }
}
