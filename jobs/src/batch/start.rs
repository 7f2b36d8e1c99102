//! What a `batch run` starts with: its tasks in flight and their threads
//! (see [`super::workers`]), its methods with their devices opened, and the
//! first tasks' windows, read while those devices start.

use super::plan::{MosaicPlan, Plan, Settings, Task};
use super::request::RunRequest;
use super::workers::{Node, Workers};
use crate::job::smooth::Prefetched;
use mapfilter_core::error::Result;
use mapfilter_core::method::{ClassSmoother, select};
use mapfilter_gdal::class_raster::ClassRaster;
use std::time::Instant;
use tiles::Rect;

/// The tasks in flight with their compute threads (`--jobs`, else sized to
/// the node, or to this worker process's share of it, for `tasks` tasks).
pub(super) fn plan_workers(req: &RunRequest, tasks: usize) -> Workers {
    match req.jobs {
        // The compute threads the user gave (`RAYON_NUM_THREADS`), else
        // every core, shared out among the tasks in flight.
        Some(jobs) => Workers::split(jobs.min(tasks.max(1)), rayon::current_num_threads()),
        None => {
            let node = Node::here().share(req.worker.map_or(1, |w| w.count));
            let workers = node.workers(tasks);
            size_pool(workers.pool_threads);
            workers
        }
    }
}

/// The smoothers the run's workers take turns on (their devices opened).
fn methods(req: &RunRequest, settings: &Settings, workers: Workers) -> Result<Methods> {
    let choice = &settings.method;
    // A worker process computes on its own device(s).
    let device = req.worker.map_or(&choice.device, |w| &w.device);
    let members = select::per_member(&choice.spec, device, &settings.kernel)?;
    // Tasks are independent: with a task in flight per device at least,
    // each device runs whole tasks of its own (worker i on device i mod
    // n), so no tile waits on a queue shared across devices and each
    // device's tiles stay on its own context. Fewer tasks in flight than
    // devices share their tiles instead, so that every device works.
    if workers.jobs >= members.len() {
        Ok(members)
    } else {
        Ok(vec![select::shared(members)?])
    }
}

/// The smoothers of a run, one per device (or one shared).
pub(super) type Methods = Vec<Box<dyn ClassSmoother>>;

/// Largest window read ahead for a task while the devices start.
const PREFETCH_MAX: u64 = super::workers::TASK_MEMORY / 2;

/// Builds the methods (starting their devices) while the first tasks'
/// windows are read into memory, each on a thread of its own: NVIDIA's
/// driver takes 0.35 s per GPU to start (1.2 s for four), as long as a
/// task of 100 Mpx takes to read. Host methods start at once: their tasks
/// read as they compute.
pub(super) fn methods_beside_first_reads(
    req: &RunRequest,
    ctx_parts: (&Plan, &Settings),
    first: &[&Task],
    workers: Workers,
) -> Result<(Methods, Vec<(usize, Prefetched)>)> {
    let (plan, settings) = ctx_parts;
    let device = req.worker.map_or(&settings.method.device, |w| &w.device);
    if *device == mapfilter_core::device::DeviceChoice::Host {
        return Ok((methods(req, settings, workers)?, Vec::new()));
    }
    // Within a quarter of the memory available, whatever `--jobs`.
    let mut budget = Node::here().memory.map_or(u64::MAX, |m| m / 4);
    let start = Instant::now();
    std::thread::scope(|s| {
        let building = s.spawn(|| methods(req, settings, workers));
        let reads: Vec<_> = first
            .iter()
            .map(|task| {
                let mosaic = &plan.mosaics[task.mosaic];
                let window = view(settings, mosaic, task);
                let bytes = 2 * window.area();
                let fits = window.area() <= PREFETCH_MAX && bytes <= budget;
                budget = budget.saturating_sub(if fits { bytes } else { 0 });
                s.spawn(move || {
                    if !fits {
                        return None;
                    }
                    // A read that fails is left to the task, which reports it.
                    // Only pixels are read here: no coordinate system.
                    let mut raster = ClassRaster::open_without_projection(&mosaic.source).ok()?;
                    Prefetched::read(&mut raster, window)
                        .ok()
                        .map(|p| (task.id, p))
                })
            })
            .collect();
        let prefetched: Vec<(usize, Prefetched)> = reads
            .into_iter()
            .filter_map(|r| r.join().ok().flatten())
            .collect();
        let read = start.elapsed();
        let methods = building
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        log::info!(
            "batch: {} task window(s) ({:.1} Mpx) read ahead in {:.2} s while the devices started ({:.2} s)",
            prefetched.len(),
            prefetched.iter().map(|(_, p)| p.window.area()).sum::<u64>() as f64 / 1e6,
            read.as_secs_f64(),
            start.elapsed().as_secs_f64()
        );
        Ok((methods, prefetched))
    })
}

/// Gives the host's compute pool `threads` threads, unless the user sized
/// it (`RAYON_NUM_THREADS`) or something in this process already used it
/// (then it keeps its size: the run is as before, not wrong).
fn size_pool(threads: usize) {
    if mapfilter_core::switches::environment().rayon_threads_set {
        return;
    }
    if let Err(e) = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
    {
        log::debug!("the compute pool keeps its size: {e}");
    }
}

/// A task's window in its mosaic's pixels, with the kernel's halo.
pub(super) fn view(settings: &Settings, mosaic: &MosaicPlan, task: &Task) -> Rect {
    let offset = (mosaic.width - mosaic.output_width) / 2;
    let r = (settings.policies).halo(settings.kernel.radius());
    let [x, y, w, h] = task.window;
    let (x, y) = (x + offset, y + offset);
    let (x0, y0) = (x.saturating_sub(r), y.saturating_sub(r));
    let x1 = (x + w + r).min(mosaic.width);
    let y1 = (y + h + r).min(mosaic.height);
    Rect::new(x0, y0, x1 - x0, y1 - y0)
}
