//! How many tasks a batch run keeps in flight, and how many compute threads
//! each gets, from what the node has: its cores, its GPUs (those the plan's
//! device choice opened) and its memory.
//!
//! Every task in flight has threads of its own that GDAL keeps busy (the
//! reader decoding the source's blocks, the writer encoding the output's),
//! while the engine's compute runs on a rayon pool of the task's own (host
//! methods, and the host's share of GPU methods: mapping tiles back to
//! codes, the certified mode's recomputation). The plan gives each task one
//! core for GDAL's codecs and splits the rest between the tasks' pools, so
//! that nothing oversubscribes the cores. Pools per task, not one shared
//! pool: on the 64-core node one pool of 62 threads shared by the tasks
//! made a batch of 16 tiles 6x slower than a pool of 32 (100 s against
//! 17 s, `--device gpu`, `--exact`), its idle threads woken and spinning
//! for every small piece of work of every task (issue 39).

/// Memory a task in flight may need: a few tiles of the pipeline, GDAL's
/// blocks of its windows and, on the host, the method's scratch.
pub const TASK_MEMORY: u64 = 512 << 20;

/// Cores per task in flight by default: one for its GDAL codecs, the rest
/// for its compute pool.
const CORES_PER_TASK: usize = 4;

/// Up to this many cores, the pool keeps them all.
const SMALL: usize = 4;

/// Compute threads per GPU for one run on GPUs (`smooth`): the host's share
/// of a device run (staging tiles, mapping them back to codes) keeps a few
/// threads busy, and more only spin. A 415 Mpx `smooth --device gpu` on the
/// 64-core node took 2.06 s with 8 threads, 2.16 s with 16, 2.18 s with 32
/// and 2.67 s with 64, 32 CPU-seconds of them in rayon's idle spinning
/// (issue 39).
const THREADS_PER_GPU: usize = 8;

/// What the node offers a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    pub cpus: usize,
    /// Memory available to the run, if known.
    pub memory: Option<u64>,
}

/// Tasks in flight and the compute threads: all of them, and each task's
/// own pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workers {
    pub jobs: usize,
    pub pool_threads: usize,
    pub task_threads: usize,
}

impl Workers {
    /// `jobs` tasks in flight sharing `pool_threads` compute threads.
    pub fn split(jobs: usize, pool_threads: usize) -> Workers {
        let jobs = jobs.max(1);
        Workers {
            jobs,
            pool_threads,
            task_threads: (pool_threads / jobs).max(1),
        }
    }
}

impl Node {
    /// This machine.
    pub fn here() -> Node {
        Node {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory: Some(mapfilter_core::limits::available_memory()),
        }
    }

    /// One of `count` equal shares of this node: what each of a run's
    /// worker processes plans its tasks and threads for.
    pub fn share(&self, count: usize) -> Node {
        let count = count.max(1);
        Node {
            cpus: (self.cpus / count).max(1),
            memory: self.memory.map(|m| m / count as u64),
        }
    }

    /// Compute threads for one run on `gpus` GPUs: [`THREADS_PER_GPU`] each,
    /// within the cores.
    pub fn device_run_threads(&self, gpus: usize) -> usize {
        (THREADS_PER_GPU * gpus.max(1)).min(self.cpus).max(1)
    }

    /// The default plan for `tasks` tasks: a task in flight per
    /// [`CORES_PER_TASK`] cores, on the host and with GPUs alike (the GPUs'
    /// tasks keep the cores busy with GDAL's codecs, the mapping back to
    /// codes and the certified recomputation: 16 tasks on 64 cores beat 8
    /// there), within the memory available; each task's pool gets its
    /// share of the cores left beside the codecs.
    pub fn workers(&self, tasks: usize) -> Workers {
        let cpus = self.cpus.max(1);
        let wanted = (cpus / CORES_PER_TASK).max(1);
        let by_memory = self
            .memory
            .map_or(usize::MAX, |m| (m / TASK_MEMORY).max(1) as usize);
        let jobs = wanted.min(by_memory).min(tasks.max(1)).max(1);
        // On a few cores the engine is most of the work and the codecs'
        // threads mostly wait: the pool keeps every core there.
        let pool_threads = if cpus <= SMALL { cpus } else { cpus - jobs };
        Workers::split(jobs, pool_threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_plan_never_oversubscribes_the_cores() {
        for cpus in 1..=256 {
            for memory in [None, Some(1 << 30), Some(24 << 30), Some(512 << 30)] {
                for tasks in [1, 3, 16, 1000] {
                    let node = Node { cpus, memory };
                    let w = node.workers(tasks);
                    assert!(w.jobs >= 1 && w.pool_threads >= 1, "{node:?}: {w:?}");
                    assert!(w.jobs <= tasks, "{node:?}: {w:?}");
                    // A core per task's codecs, the rest to the pools.
                    if cpus > SMALL {
                        assert!(w.jobs + w.pool_threads <= cpus, "{node:?}: {w:?}");
                        assert!(w.jobs * (1 + w.task_threads) <= cpus, "{node:?}: {w:?}");
                    }
                    assert!(w.task_threads >= 1 && w.task_threads <= w.pool_threads);
                    if let Some(m) = memory {
                        assert!(w.jobs as u64 * TASK_MEMORY <= m.max(TASK_MEMORY));
                    }
                }
                for gpus in 0..=8 {
                    let t = Node { cpus, memory }.device_run_threads(gpus);
                    assert!(t >= 1 && t <= cpus, "{cpus} cores, {gpus} GPUs: {t}");
                    assert!(t <= THREADS_PER_GPU * gpus.max(1));
                }
            }
        }
    }

    #[test]
    fn worker_processes_together_never_oversubscribe_the_node() {
        for cpus in 1..=128 {
            for processes in 1..=8 {
                let node = Node {
                    cpus,
                    memory: Some(64 << 30),
                };
                let share = node.share(processes);
                let w = share.workers(1000);
                // Every process plans the same; together they fit the node
                // wherever it has a core per process.
                if cpus >= processes * (SMALL + 1) {
                    let threads = processes * w.jobs * (1 + w.task_threads);
                    assert!(
                        threads <= cpus,
                        "{cpus} cores, {processes} processes: {w:?}"
                    );
                }
                assert!(share.cpus >= 1 && share.cpus * processes <= cpus.max(processes));
                assert_eq!(share.memory, Some((64u64 << 30) / processes as u64));
            }
        }
    }

    #[test]
    fn the_node_is_used() {
        // (cores, tasks) → (tasks in flight, pool threads, per task), the
        // same with GPUs computing or not.
        let cases = [
            // The 64-core node: 16 tasks of 3 compute threads.
            ((64, 100), (16, 48, 3)),
            // Fewer tasks than that: each task's pool is larger.
            ((64, 8), (8, 56, 7)),
            // The 16-core node.
            ((16, 16), (4, 12, 3)),
            // The 2-core machine: one task, both cores computing.
            ((2, 100), (1, 2, 2)),
        ];
        for ((cpus, tasks), (jobs, pool_threads, task_threads)) in cases {
            let node = Node {
                cpus,
                memory: Some(24 << 30),
            };
            let want = Workers {
                jobs,
                pool_threads,
                task_threads,
            };
            assert_eq!(node.workers(tasks), want, "{node:?}, {tasks} tasks");
        }
    }
}
