//! How many tasks a batch run keeps in flight, and how many threads the
//! host's compute pool gets beside them, from what the node has: its cores,
//! its GPUs (those the plan's device choice opened) and its memory.
//!
//! Every task in flight has threads of its own that GDAL keeps busy (the
//! reader decoding the source's blocks, the writer encoding the output's),
//! while the engine's compute runs on the shared rayon pool (host methods)
//! or on the devices (GPU methods, whose tiles the pool maps back to codes).
//! The plan gives each task one core for GDAL's codecs and the pool the
//! rest, so that neither oversubscribes the cores: on the 64-core node two
//! tasks in flight left GDAL on two cores, and a pool of 64 threads beside
//! 16 tasks' codecs would have fought them (issue 39).

/// Memory a task in flight may need: a few tiles of the pipeline, GDAL's
/// blocks of its windows and, on the host, the method's scratch.
const TASK_MEMORY: u64 = 512 << 20;

/// Most tasks in flight per GPU by default.
const PER_GPU: usize = 2;

/// Up to this many cores, the pool keeps them all.
const SMALL: usize = 4;

/// What the node offers a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    pub cpus: usize,
    /// GPUs the run's method computes on (0: the host computes).
    pub gpus: usize,
    /// Memory available to the run, if known.
    pub memory: Option<u64>,
}

/// Tasks in flight and the compute pool's threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workers {
    pub jobs: usize,
    pub pool_threads: usize,
}

impl Node {
    /// This machine, for a run on `gpus` GPUs.
    pub fn here(gpus: usize) -> Node {
        Node {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            gpus,
            memory: Some(crate::limits::available_memory()),
        }
    }

    /// The default plan for `tasks` tasks. On the host the pool computes,
    /// so a task in flight per 8 cores keeps the codecs fed while leaving
    /// the pool most cores; on GPUs the codecs are the work left to the
    /// cores, so a task per 3 cores, but no more than 2 per GPU (the
    /// earlier default's count on one GPU): more per GPU looked slower on
    /// one GPU and faster on four, in runs biased by the first run's
    /// OpenCL compile, so it is left to be measured (BENCHMARKS.md, "The
    /// node's throughput").
    pub fn workers(&self, tasks: usize) -> Workers {
        let cpus = self.cpus.max(1);
        let wanted = if self.gpus == 0 {
            cpus.div_ceil(8)
        } else {
            (cpus / 3).min(PER_GPU * self.gpus).max(1)
        };
        let by_memory = self
            .memory
            .map_or(usize::MAX, |m| (m / TASK_MEMORY).max(1) as usize);
        let jobs = wanted.min(by_memory).min(tasks.max(1)).max(1);
        // On a few cores the engine is most of the work and the codecs'
        // threads mostly wait: the pool keeps every core there.
        let pool_threads = if cpus <= SMALL { cpus } else { cpus - jobs };
        Workers { jobs, pool_threads }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_plan_never_oversubscribes_the_cores() {
        for cpus in 1..=256 {
            for gpus in 0..=8 {
                for memory in [None, Some(1 << 30), Some(24 << 30), Some(512 << 30)] {
                    for tasks in [1, 3, 16, 1000] {
                        let node = Node { cpus, gpus, memory };
                        let w = node.workers(tasks);
                        assert!(w.jobs >= 1 && w.pool_threads >= 1, "{node:?}: {w:?}");
                        assert!(w.jobs <= tasks, "{node:?}: {w:?}");
                        // A core per task's codecs, the rest to the pool.
                        if cpus > SMALL {
                            assert!(w.jobs + w.pool_threads <= cpus, "{node:?}: {w:?}");
                        }
                        if let Some(m) = memory {
                            assert!(w.jobs as u64 * TASK_MEMORY <= m.max(TASK_MEMORY));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_node_is_used() {
        // (cores, GPUs, tasks) → (tasks in flight, pool threads).
        let cases = [
            // The 4-GPU, 64-core node: 2 tasks per GPU, the rest computes.
            ((64, 4, 100), (8, 56)),
            ((64, 4, 8), (8, 56)),
            // The host alone on 64 cores: 8 tasks, 56 threads computing.
            ((64, 0, 100), (8, 56)),
            // The 16-core one-GPU node.
            ((16, 1, 16), (2, 14)),
            // The 2-core machine: one task, both cores computing.
            ((2, 0, 100), (1, 2)),
        ];
        for ((cpus, gpus, tasks), (jobs, pool_threads)) in cases {
            let node = Node {
                cpus,
                gpus,
                memory: Some(24 << 30),
            };
            let want = Workers { jobs, pool_threads };
            assert_eq!(node.workers(tasks), want, "{node:?}, {tasks} tasks");
        }
    }
}
