//! `batch run` as one worker process per GPU: how a plan on `all` GPUs is
//! dealt out to processes, starting them, and joining what they did.
//!
//! Why processes and not only threads: NVIDIA's OpenCL driver starts every
//! GPU a process can see, one after the other, when the platforms are
//! listed (1.2 s for four on the 4-GPU node, 0.36 s for one), and a
//! process's GDAL (block cache, its locks, the allocator's arenas) is shared
//! by every task in it. One process per GPU, each seeing its GPU only
//! (`CUDA_VISIBLE_DEVICES`), starts the GPUs side by side and gives each
//! GPU's tasks a GDAL of their own, as `gdal_translate` copies run side by
//! side. Each worker plans its tasks in flight and threads for its share of
//! the node ([`super::workers::Node::share`]).
//!
//! The workers take tasks from the same list through the claims of
//! [`super::records`] (a task claimed by a sibling is left to it), never
//! wait for each other, and each prints what it did as one JSON line on its
//! standard output. The parent holds no claim and opens no device: it
//! waits for the workers, merges their summaries, and runs in-process only
//! what none of them finished nor failed (tasks held by another run, which
//! it waits for as a plain run does). A worker that fails or is killed
//! fails the run (its tasks stay claimed by a dead process, so the next run
//! takes them over). The workers have a process group of their own, so a
//! Ctrl-C reaches the parent only, which passes the signal on to each
//! worker once and waits for them to clean up (within the handler's
//! deadline); a parent killed outright takes its workers with it
//! (`PR_SET_PDEATHSIG`).

use super::request::{RunRequest, RunSummary, Spawner, TaskFailure, WorkerRole};
use mapfilter_core::device::DeviceChoice;
use mapfilter_core::error::{Error, Result};
use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The workers running, for the signal handler to pass a signal on to.
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// How long the signal handler waits for the workers to clean up: within
/// its own deadline.
const WORKERS_PATIENCE: Duration = Duration::from_millis(800);

/// A worker process to start: its role and the NVIDIA GPUs it may see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub role: WorkerRole,
    /// `CUDA_VISIBLE_DEVICES` of the worker (`None`: inherited).
    pub gpus: Option<String>,
}

/// The worker processes for a plan on `device` on a node whose NVIDIA GPUs
/// are `gpus` (as [`mapfilter_core::device::nvidia_gpus`] names them): empty when the
/// run stays in this process. `all` on two GPUs or more: one per GPU (or
/// `asked` of them, the GPUs dealt out in turn); any other device: `asked`
/// workers on the plan's device, each with its share of the cores.
pub fn slots(asked: Option<usize>, device: &DeviceChoice, gpus: &[String]) -> Vec<Slot> {
    let on_gpus = *device == DeviceChoice::All && !gpus.is_empty();
    let count = match asked {
        Some(n) => n,
        None if on_gpus && gpus.len() >= 2 => gpus.len(),
        None => 1,
    };
    if count < 2 {
        return Vec::new();
    }
    (0..count)
        .map(|index| {
            let role = |device| WorkerRole {
                index,
                count,
                device,
            };
            if !on_gpus {
                return Slot {
                    role: role(device.clone()),
                    gpus: None,
                };
            }
            // Worker i sees GPUs i, i + count, ...; more workers than
            // GPUs share them in turn.
            let mine: Vec<&str> = if count <= gpus.len() {
                gpus.iter()
                    .skip(index)
                    .step_by(count)
                    .map(String::as_str)
                    .collect()
            } else {
                vec![gpus[index % gpus.len()].as_str()]
            };
            let device = if mine.len() == 1 {
                DeviceChoice::Gpu
            } else {
                DeviceChoice::All
            };
            Slot {
                role: role(device),
                gpus: Some(mine.join(",")),
            }
        })
        .collect()
}

/// Runs `todo` (task ids of the request's share, none done yet) in the
/// worker processes of `slots`, then in this process whatever none of them
/// finished nor failed; `summary` holds what the share's scan found.
pub fn run(
    req: &RunRequest,
    spawner: &Spawner,
    slots: &[Slot],
    todo: &[usize],
    mut summary: RunSummary,
    in_process: &dyn Fn(&RunRequest) -> Result<RunSummary>,
) -> Result<RunSummary> {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| mapfilter_core::interrupt::at_stop(stop_workers));
    let children: Vec<Result<Child>> = slots.iter().map(|s| start(spawner, s)).collect();
    let mut first_error = None;
    for (slot, child) in slots.iter().zip(children) {
        let joined = child.and_then(|c| join(c, slot));
        match joined {
            Ok(worker) => merge(&mut summary, worker),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    mapfilter_core::interrupt::check()?;
    if let Some(e) = first_error {
        return Err(e.hint("what the other workers finished is kept: run again to finish the rest"));
    }
    let settled: BTreeSet<usize> = summary
        .done
        .iter()
        .copied()
        .chain(summary.failed.iter().map(|f| f.task))
        .collect();
    let left: Vec<usize> = todo
        .iter()
        .copied()
        .filter(|t| !settled.contains(t))
        .collect();
    if !left.is_empty() {
        // Held by another run when the workers looked: waited for here, and
        // run here if its holder dies.
        let rest = in_process(&RunRequest {
            only: Some(&left),
            spawn: None,
            ..*req
        })?;
        summary.already_done += rest.already_done;
        merge(&mut summary, rest);
    }
    Ok(summary)
}

/// Starts the worker of `slot`: its standard output (the summary) piped,
/// the compute threads a user set shared out, dying with this process.
fn start(spawner: &Spawner, slot: &Slot) -> Result<Child> {
    let mut command = (spawner.command)(&slot.role);
    if let Some(gpus) = &slot.gpus {
        command.env("CUDA_VISIBLE_DEVICES", gpus);
    }
    if let Some(threads) = mapfilter_core::switches::environment().rayon_threads {
        command.env(
            "RAYON_NUM_THREADS",
            (threads / slot.role.count).max(1).to_string(),
        );
    }
    command
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork
    // and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    // A signal before the worker starts: it is not started.
    mapfilter_core::interrupt::check()?;
    let child = command.spawn().map_err(|e| {
        Error::io(format!(
            "cannot start batch worker {} of {}: {e}",
            slot.role.index, slot.role.count
        ))
    })?;
    running.push(child.id() as i32);
    Ok(child)
}

/// At a signal: passes it on to each worker and waits (a while) for them
/// to remove their temp files and release their claims.
fn stop_workers() {
    let Some(signal) = mapfilter_core::interrupt::received_signal() else {
        return;
    };
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    for &pid in running.iter() {
        // SAFETY: signals our own child (reaped children are skipped below).
        unsafe { libc::kill(pid, signal) };
    }
    let start = Instant::now();
    let mut left: Vec<i32> = running.clone();
    while !left.is_empty() && start.elapsed() < WORKERS_PATIENCE {
        // Gone once reaped, here or by the thread waiting for it.
        left.retain(|&pid| {
            let mut status = 0;
            // SAFETY: waits, without blocking, for our own child.
            unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 }
        });
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits for a worker and reads its summary.
fn join(mut child: Child, slot: &Slot) -> Result<RunSummary> {
    let mut out = String::new();
    let read = child.stdout.take().map(|mut s| s.read_to_string(&mut out));
    let status = child.wait();
    RUNNING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|&pid| pid != child.id() as i32);
    let name = match &slot.gpus {
        Some(g) => format!("batch worker {} (GPU {g})", slot.role.index),
        None => format!("batch worker {}", slot.role.index),
    };
    let status = status.map_err(|e| Error::io(format!("{name}: {e}")))?;
    if !status.success() {
        return Err(Error::incomplete(format!("{name} ended with {status}")));
    }
    if let Some(Err(e)) = read {
        return Err(Error::io(format!(
            "{name}: its summary cannot be read: {e}"
        )));
    }
    out.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| Error::internal(format!("{name} printed no summary")))
}

/// Adds what a worker (or the run of the leftovers) did to `summary`.
fn merge(summary: &mut RunSummary, worker: RunSummary) {
    summary.done_now += worker.done_now;
    summary.pixels_now += worker.pixels_now;
    summary.done.extend(worker.done);
    summary.degraded.extend(worker.degraded);
    // A task one worker failed is found failed (its record) by a sibling
    // that claims it after: listed once.
    for f in worker.failed {
        if !summary
            .failed
            .iter()
            .any(|g: &TaskFailure| g.task == f.task)
        {
            summary.failed.push(f);
        }
    }
    summary.devices.extend(worker.devices);
    summary.sieved.extend(worker.sieved);
    summary.awaiting_sieve.extend(worker.awaiting_sieve);
    summary.sieve_failed.extend(worker.sieve_failed);
    // Tasks a worker found busy were held by a sibling or by another run:
    // the first are in a sibling's summary, the rest are run here.
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus(n: usize) -> Vec<String> {
        (0..n).map(|i| i.to_string()).collect()
    }

    #[test]
    fn all_gpus_get_a_worker_each_and_one_gpu_stays_in_process() {
        let s = slots(None, &DeviceChoice::All, &gpus(4));
        let seen: Vec<_> = s.iter().map(|s| s.gpus.clone().unwrap()).collect();
        assert_eq!(seen, ["0", "1", "2", "3"]);
        assert!(
            s.iter()
                .all(|s| s.role.device == DeviceChoice::Gpu && s.role.count == 4)
        );
        assert!(slots(None, &DeviceChoice::All, &gpus(1)).is_empty());
        assert!(slots(None, &DeviceChoice::All, &[]).is_empty());
        assert!(slots(None, &DeviceChoice::Gpu, &gpus(4)).is_empty());
        assert!(slots(None, &DeviceChoice::Host, &gpus(4)).is_empty());
        assert!(slots(Some(1), &DeviceChoice::All, &gpus(4)).is_empty());
    }

    #[test]
    fn gpus_are_dealt_out_in_turn() {
        let s = slots(Some(2), &DeviceChoice::All, &gpus(4));
        let seen: Vec<_> = s.iter().map(|s| s.gpus.clone().unwrap()).collect();
        assert_eq!(seen, ["0,2", "1,3"]);
        assert!(s.iter().all(|s| s.role.device == DeviceChoice::All));
        let s = slots(Some(3), &DeviceChoice::All, &gpus(2));
        let seen: Vec<_> = s.iter().map(|s| s.gpus.clone().unwrap()).collect();
        assert_eq!(seen, ["0", "1", "0"]);
        // Named GPUs keep their names.
        let named = vec!["GPU-a".to_string(), "GPU-b".to_string()];
        let s = slots(None, &DeviceChoice::All, &named);
        assert_eq!(s[1].gpus.as_deref(), Some("GPU-b"));
    }

    #[test]
    fn host_workers_keep_the_plans_device_and_the_gpus_inherited() {
        let s = slots(Some(4), &DeviceChoice::Host, &gpus(4));
        assert_eq!(s.len(), 4);
        assert!(
            s.iter()
                .all(|s| s.role.device == DeviceChoice::Host && s.gpus.is_none())
        );
        assert_eq!(s[3].role.index, 3);
    }
}
