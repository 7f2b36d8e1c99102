//! Several devices in one run: [`Shared`] is a [`ClassSmoother`] over one
//! smoother per device (`--device all`, `--device 1,2`).
//!
//! Tiles submitted to it go into one queue. Each device has a worker thread
//! that pulls the next tile whenever it has room (as many tiles as its own
//! method keeps in flight), so a fast GPU takes many tiles and a slow CPU
//! device few, and both stay busy. The engine still finishes tiles in
//! order, so a tile's result does not depend on which device computed it
//! beyond what the method itself guarantees: exact methods (naive, svd and
//! dct5 with `--exact`) give the same bytes on every device, so a shared
//! run gives the bytes of a run on one. Approximate methods give, tile by
//! tile, what the device that took the tile gives.
//!
//! Methods that compact tiles on their device ([`ClassSmoother::takes_codes`])
//! skip the queue: the calling thread stages each tile straight into the
//! pinned memory of the member with the fewest tiles in flight (staging is
//! the host's work either way, and a queued tile would first be compacted
//! and copied on the calling thread), and the engine waits for it there.

use super::{ClassSmoother, ClassTile, CodeTile, PendingTile, Promised, SmoothParams};
use crate::classes::{CodeMap, TileCompaction};
use crate::device::DeviceTimes;
use crate::error::{Error, Result};
use crate::io::RowsMut;
use crate::kernel::Kernel;
use crossbeam_channel::{Receiver, Sender};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What one device of a shared run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceShare {
    /// The member's position in the list and its method's name, e.g.
    /// `#1 naive/pthread-... (fast)`.
    pub device: String,
    pub tiles: u64,
    pub pixels: u64,
    /// Wall time during which the device held at least one tile.
    pub busy: Duration,
    /// Its profiled device time (`None` on the host).
    pub times: Option<DeviceTimes>,
}

impl std::fmt::Display for DeviceShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} tiles, {:.1} Mpx, busy {:.1} ms",
            self.device,
            self.tiles,
            self.pixels as f64 / 1e6,
            self.busy.as_secs_f64() * 1e3
        )?;
        if let Some(t) = self.times {
            write!(f, ", kernels {:.1} ms", t.kernel_ns as f64 / 1e6)?;
        }
        Ok(())
    }
}

/// The depth ([`ClassSmoother::depth`]) of a run shared by members of
/// these depths (`None`: a host member): every member's room and one tile
/// waiting for each, so that a device finishing a tile finds the next one
/// queued.
pub fn shared_depth(members: impl IntoIterator<Item = Option<usize>>) -> usize {
    members
        .into_iter()
        .map(|depth| depth.map_or(2, |d| d + 2))
        .sum::<usize>()
        .saturating_sub(1)
}

/// A tile and its parameters owned, for a thread other than the
/// caller's to smooth.
pub(super) struct OwnedTile {
    classes: Vec<u16>,
    width: usize,
    height: usize,
    halo: usize,
    n_classes: usize,
    weights: Vec<u32>,
    kernel: Arc<Kernel>,
    fill_nodata: bool,
    ties: crate::method::policy::Ties,
    /// Per-pixel vote weights (`--confidence`), copied too.
    confidence: Option<Vec<u16>>,
}

impl OwnedTile {
    /// A copy of `tile` and `params` (their kernel as `kernel`).
    pub(super) fn of(tile: &ClassTile, params: &SmoothParams, kernel: Arc<Kernel>) -> Self {
        OwnedTile {
            classes: tile.classes.to_vec(),
            width: tile.width,
            height: tile.height,
            halo: tile.halo,
            n_classes: tile.n_classes,
            weights: params.class_weights.to_vec(),
            kernel,
            fill_nodata: params.fill_nodata,
            ties: params.ties,
            confidence: params.confidence.map(<[u16]>::to_vec),
        }
    }

    /// `f` of the tile and its parameters, borrowed again.
    pub(super) fn with<R>(&self, f: impl FnOnce(&ClassTile, &SmoothParams) -> R) -> R {
        let tile = ClassTile {
            width: self.width,
            height: self.height,
            halo: self.halo,
            n_classes: self.n_classes,
            classes: &self.classes,
        };
        let params = SmoothParams {
            kernel: &self.kernel,
            class_weights: &self.weights,
            fill_nodata: self.fill_nodata,
            ties: self.ties,
            confidence: self.confidence.as_deref(),
        };
        f(&tile, &params)
    }
}

/// One shared copy of a run's kernel for its owned tiles (a run has one
/// kernel; another replaces it): a large kernel's copy per tile would be
/// megabytes of fresh pages.
#[derive(Default)]
pub(super) struct KernelCopy(Mutex<Option<Arc<Kernel>>>);

impl KernelCopy {
    pub(super) fn of(&self, kernel: &Kernel) -> Arc<Kernel> {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &*held {
            Some(k) if **k == *kernel => k.clone(),
            _ => {
                let k = Arc::new(kernel.clone());
                *held = Some(k.clone());
                k
            }
        }
    }
}

/// A tile handed to the workers, with the caller waiting for its result.
struct Job {
    tile: OwnedTile,
    reply: Sender<Result<Vec<u16>>>,
}

/// One member's figures, written by its worker.
#[derive(Default)]
struct Counters {
    tiles: AtomicU64,
    pixels: AtomicU64,
    busy_ns: AtomicU64,
    /// Tiles submitted straight to the member and not yet waited for.
    in_flight: AtomicUsize,
    /// When the member last went from no tile to one (nanoseconds since
    /// the run's `epoch`), for its busy time on the direct path.
    busy_since: AtomicU64,
    /// Device times taken from the member and not yet reported.
    times: Mutex<Option<DeviceTimes>>,
}

/// One smoother per device sharing the tiles through a queue.
pub struct Shared {
    members: Vec<Arc<dyn ClassSmoother>>,
    counters: Vec<Arc<Counters>>,
    /// `None` only while dropping (closing it stops the workers).
    jobs: Option<Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
    /// The kernel of the last tile, shared by the jobs of a run.
    kernel: KernelCopy,
    /// The origin of the direct path's busy times.
    epoch: Instant,
}

impl Shared {
    /// Shares tiles between `members` (at least one), each on its own device.
    pub fn new(members: Vec<Box<dyn ClassSmoother>>) -> Result<Self> {
        if members.is_empty() {
            crate::bail!(usage, "a shared run needs at least one device");
        }
        let members: Vec<Arc<dyn ClassSmoother>> = members.into_iter().map(Arc::from).collect();
        let counters: Vec<Arc<Counters>> = members.iter().map(|_| Arc::default()).collect();
        let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
        let workers = members
            .iter()
            .zip(&counters)
            .enumerate()
            .map(|(i, (member, counters))| {
                let (member, counters, queue) = (member.clone(), counters.clone(), queue.clone());
                std::thread::Builder::new()
                    .name(format!("mapfilter-device-{i}"))
                    .spawn(move || work(member.as_ref(), &queue, &counters))
                    .map_err(|e| {
                        Error::resource(format!("starting a device's worker thread: {e}"))
                            .hint("the system is out of threads; use one device")
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Shared {
            members,
            counters,
            jobs: Some(jobs),
            workers,
            kernel: KernelCopy::default(),
            epoch: Instant::now(),
        })
    }

    /// The members' device times so far, moved into their counters (so
    /// that both the run's sum and the shares see them).
    fn collect_times(&self) {
        for (m, c) in self.members.iter().zip(&self.counters) {
            if let Some(t) = m.take_device_times() {
                let mut held = c.times.lock().unwrap_or_else(|p| p.into_inner());
                let sum = held.get_or_insert_with(DeviceTimes::default);
                sum.upload_ns += t.upload_ns;
                sum.kernel_ns += t.kernel_ns;
                sum.download_ns += t.download_ns;
            }
        }
    }
}

/// A tile a worker holds: its pending result, output length and caller.
type Held<'m> = (Box<dyn PendingTile + 'm>, usize, Sender<Result<Vec<u16>>>);

/// A member's worker: pulls tiles while it has room for them, waits for
/// its oldest otherwise, and sends each result back to the tile's caller.
fn work(member: &dyn ClassSmoother, queue: &Receiver<Job>, counters: &Counters) {
    // A host member computes in `submit` itself: one tile at a time.
    let room = match member.runs_on() {
        Some(_) => member.depth() + 1,
        None => 1,
    };
    let mut in_flight: VecDeque<Held> = VecDeque::new();
    let mut busy_from: Option<Instant> = None;
    loop {
        let job = if in_flight.is_empty() {
            match queue.recv() {
                Ok(job) => Some(job),
                Err(_) => break,
            }
        } else if in_flight.len() < room {
            queue.try_recv().ok()
        } else {
            None
        };
        if let Some(job) = job {
            busy_from.get_or_insert_with(Instant::now);
            let len = job.tile.with(|tile, _| tile.output_len());
            match job.tile.with(|tile, params| member.submit(tile, params)) {
                Ok(pending) => in_flight.push_back((pending, len, job.reply)),
                // The caller is gone only when the run already failed.
                Err(e) => {
                    let _ = job.reply.send(Err(e));
                }
            }
        } else if let Some(oldest) = in_flight.pop_front() {
            deliver(oldest, counters);
        }
        // Tiles computed in `submit` itself (host members, synchronous
        // paths) go back at once, not after the tiles pulled behind them.
        while in_flight.front().is_some_and(|(p, _, _)| p.ready()) {
            deliver(in_flight.pop_front().expect("checked"), counters);
        }
        if in_flight.is_empty()
            && let Some(from) = busy_from.take()
        {
            let ns = from.elapsed().as_nanos() as u64;
            counters.busy_ns.fetch_add(ns, Ordering::Relaxed);
        }
    }
}

/// Waits for a tile and sends its result to the tile's caller.
fn deliver((pending, len, reply): Held, counters: &Counters) {
    let out = pending.into_output(len);
    if out.is_ok() {
        counters.tiles.fetch_add(1, Ordering::Relaxed);
        counters.pixels.fetch_add(len as u64, Ordering::Relaxed);
    }
    // The caller is gone only when the run already failed.
    let _ = reply.send(out);
}

/// A tile submitted straight to one member: waiting for it counts it in
/// the member's share.
struct Direct<'m> {
    pending: Box<dyn PendingTile + 'm>,
    counters: &'m Counters,
    epoch: Instant,
}

/// Counts a waited-for tile of `len` outputs in `counters`.
fn finished(counters: &Counters, epoch: Instant, len: usize) {
    counters.tiles.fetch_add(1, Ordering::Relaxed);
    counters.pixels.fetch_add(len as u64, Ordering::Relaxed);
    if counters.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
        let now = epoch.elapsed().as_nanos() as u64;
        let since = counters.busy_since.load(Ordering::Relaxed);
        counters
            .busy_ns
            .fetch_add(now.saturating_sub(since), Ordering::Relaxed);
    }
}

impl PendingTile for Direct<'_> {
    fn wait(self: Box<Self>, out: &mut [u16]) -> Result<()> {
        let (len, direct) = (out.len(), *self);
        direct.pending.wait(out)?;
        finished(direct.counters, direct.epoch, len);
        Ok(())
    }

    fn wait_codes(self: Box<Self>, map: &CodeMap, out: RowsMut) -> Result<()> {
        let (len, direct) = (out.len(), *self);
        direct.pending.wait_codes(map, out)?;
        finished(direct.counters, direct.epoch, len);
        Ok(())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Closing the queue ends every worker once its tiles are done.
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl ClassSmoother for Shared {
    fn name(&self) -> String {
        let names: Vec<String> = self.members.iter().map(|m| m.name()).collect();
        names.join(" + ")
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        self.submit(tile, params)?.wait(out)
    }

    fn weighs_votes(&self) -> bool {
        self.members.iter().all(|m| m.weighs_votes())
    }

    fn is_exact(&self) -> bool {
        self.members.iter().all(|m| m.is_exact())
    }

    fn summary(&self) -> Option<String> {
        let lines: Vec<String> = self
            .members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.summary().map(|s| format!("#{i}: {s}")))
            .collect();
        (!lines.is_empty()).then(|| lines.join("; "))
    }

    fn submit(&self, tile: &ClassTile, params: &SmoothParams) -> Result<Box<dyn PendingTile + '_>> {
        let (reply, result) = crossbeam_channel::bounded(1);
        let job = Job {
            tile: OwnedTile::of(tile, params, self.kernel.of(params.kernel)),
            reply,
        };
        self.jobs
            .as_ref()
            .and_then(|q| q.send(job).ok())
            .ok_or_else(|| Error::device("every device of the run has stopped"))?;
        Ok(Box::new(Promised(result)))
    }

    fn takes_codes(&self) -> bool {
        self.members.iter().all(|m| m.takes_codes())
    }

    fn submit_codes(
        &self,
        tile: &CodeTile,
        params: &SmoothParams,
    ) -> Result<(TileCompaction, Box<dyn PendingTile + '_>)> {
        let i = (0..self.members.len())
            .min_by_key(|&i| self.counters[i].in_flight.load(Ordering::Relaxed))
            .expect("a shared run has members");
        let counters = &self.counters[i];
        if counters.in_flight.fetch_add(1, Ordering::Relaxed) == 0 {
            let now = self.epoch.elapsed().as_nanos() as u64;
            counters.busy_since.store(now, Ordering::Relaxed);
        }
        match self.members[i].submit_codes(tile, params) {
            Ok((local, pending)) => Ok((
                local,
                Box::new(Direct {
                    pending,
                    counters,
                    epoch: self.epoch,
                }),
            )),
            Err(e) => {
                counters.in_flight.fetch_sub(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// A GPU among the members sizes the tiles for it.
    fn runs_on(&self) -> Option<crate::device::DeviceKind> {
        let kinds: Vec<_> = self.members.iter().map(|m| m.runs_on()).collect();
        if kinds.contains(&Some(crate::device::DeviceKind::Gpu)) {
            return Some(crate::device::DeviceKind::Gpu);
        }
        kinds.into_iter().flatten().next()
    }

    fn gpus(&self) -> usize {
        self.members.iter().map(|m| m.gpus()).sum()
    }

    fn take_device_times(&self) -> Option<DeviceTimes> {
        self.collect_times();
        let mut sum: Option<DeviceTimes> = None;
        for c in &self.counters {
            if let Some(t) = *c.times.lock().unwrap_or_else(|p| p.into_inner()) {
                let s = sum.get_or_insert_with(DeviceTimes::default);
                s.upload_ns += t.upload_ns;
                s.kernel_ns += t.kernel_ns;
                s.download_ns += t.download_ns;
            }
        }
        sum
    }

    fn depth(&self) -> usize {
        shared_depth(self.members.iter().map(|m| m.runs_on().map(|_| m.depth())))
    }

    fn tuned(&self) -> Vec<crate::device::tune::Setting> {
        self.members.iter().flat_map(|m| m.tuned()).collect()
    }

    fn take_shares(&self) -> Vec<DeviceShare> {
        self.collect_times();
        self.members
            .iter()
            .zip(&self.counters)
            .enumerate()
            .map(|(i, (m, c))| DeviceShare {
                device: format!("#{i} {}", m.name()),
                tiles: c.tiles.swap(0, Ordering::Relaxed),
                pixels: c.pixels.swap(0, Ordering::Relaxed),
                busy: Duration::from_nanos(c.busy_ns.swap(0, Ordering::Relaxed)),
                times: c.times.lock().unwrap_or_else(|p| p.into_inner()).take(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::ClassTable;
    use crate::engine::{SmoothJob, smooth_in_memory, smooth_in_memory_with_stats};
    use crate::io::MemRaster;
    use crate::kernel::KernelSpec;
    use crate::method::naive::NaiveHost;
    use std::sync::atomic::AtomicUsize;
    use tiles::Border;

    fn input() -> (MemRaster, SmoothJob) {
        let (w, h) = (90, 70);
        let data: Vec<u16> = (0..w * h)
            .map(|i| [2, 5, 7, 11][((i % w) / 4 + (i / w) / 3 + i % 7) % 4])
            .collect();
        let classes = ClassTable::from_codes(&data, None).unwrap();
        let job = SmoothJob {
            kernel: "gaussian:1".parse::<KernelSpec>().unwrap().build().unwrap(),
            class_weights: vec![1; classes.len()],
            output_nodata: classes.nodata(),
            classes,
            border: Border::Same,
            fill_nodata: false,
            tile: 10,
            policies: Default::default(),
        };
        (MemRaster::new(w, h, data), job)
    }

    /// The host method, slowed down: each of its tiles waits (up to a
    /// second) until the fast member has finished two more tiles.
    struct Slow {
        fast: Arc<AtomicUsize>,
        /// Tiles started (shared with [`Counted`], which waits for the first).
        done: Arc<AtomicUsize>,
    }

    impl ClassSmoother for Slow {
        fn name(&self) -> String {
            "slow".into()
        }
        fn is_exact(&self) -> bool {
            true
        }
        fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
            let goal = 2 * (self.done.fetch_add(1, Ordering::SeqCst) + 1);
            let until = Instant::now() + Duration::from_secs(1);
            while self.fast.load(Ordering::SeqCst) < goal && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            NaiveHost.smooth(tile, params, out)
        }
    }

    /// The host method, counting its tiles. It starts only once the slow
    /// member has taken a tile (or a second has passed): on a loaded
    /// machine the slow member's thread may otherwise start only after the
    /// fast one has taken every tile.
    struct Counted {
        done: Arc<AtomicUsize>,
        slow_started: Arc<AtomicUsize>,
    }

    impl ClassSmoother for Counted {
        fn name(&self) -> String {
            "counted".into()
        }
        fn is_exact(&self) -> bool {
            true
        }
        fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
            let until = Instant::now() + Duration::from_secs(1);
            while self.slow_started.load(Ordering::SeqCst) == 0 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            NaiveHost.smooth(tile, params, out)?;
            self.done.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    /// Devices pull tiles: the fast member takes more than the slow one,
    /// and the result is the one-device result.
    #[test]
    fn the_faster_member_takes_more_tiles_and_the_result_is_the_same() {
        let (input, job) = input();
        let want = smooth_in_memory(&input, &job, &NaiveHost).unwrap();
        let fast = Arc::new(AtomicUsize::new(0));
        let slow = Arc::new(AtomicUsize::new(0));
        let shared = Shared::new(vec![
            Box::new(Slow {
                fast: fast.clone(),
                done: slow.clone(),
            }),
            Box::new(Counted {
                done: fast.clone(),
                slow_started: slow,
            }),
        ])
        .unwrap();
        let (got, stats) = smooth_in_memory_with_stats(&input, &job, &shared).unwrap();
        assert_eq!(got, want);
        let shares = shared.take_shares();
        assert_eq!(shares.len(), 2);
        assert_eq!(
            shares.iter().map(|s| s.tiles).sum::<u64>(),
            stats.totals.tiles as u64
        );
        assert_eq!(
            shares.iter().map(|s| s.pixels).sum::<u64>(),
            stats.totals.pixels
        );
        // Each slow tile waited for two fast ones, but for its last one,
        // which may have found the queue empty.
        assert!(
            shares[1].tiles + 2 >= 2 * shares[0].tiles && shares[0].tiles > 0,
            "{shares:?}"
        );
        assert!(shares[0].busy > Duration::ZERO && shares[0].device.starts_with("#0 slow"));
        // Taken: the next call starts from zero.
        assert!(shared.take_shares().iter().all(|s| s.tiles == 0));
    }

    /// A member that fails stops the run with its error; dropping the
    /// shared method afterwards ends its workers. The host member waits (up
    /// to 1 s) for the failing one's first tile: on a loaded machine it
    /// could otherwise take every tile before the failing member's thread
    /// starts (flaked once in the full suite: the run succeeded).
    #[test]
    fn a_failing_member_stops_the_run() {
        struct Failing(Arc<AtomicUsize>);
        impl ClassSmoother for Failing {
            fn name(&self) -> String {
                "failing".into()
            }
            fn is_exact(&self) -> bool {
                true
            }
            fn smooth(&self, _: &ClassTile, _: &SmoothParams, _: &mut [u16]) -> Result<()> {
                self.0.fetch_add(1, Ordering::SeqCst);
                Err(Error::device("this device fails"))
            }
        }
        let (input, job) = input();
        let failed = Arc::new(AtomicUsize::new(0));
        let host = Counted {
            done: Arc::new(AtomicUsize::new(0)),
            slow_started: failed.clone(),
        };
        let shared = Shared::new(vec![Box::new(Failing(failed)), Box::new(host)]).unwrap();
        let e = smooth_in_memory(&input, &job, &shared).unwrap_err();
        assert!(e.to_string().contains("this device fails"), "{e}");
        drop(shared);
    }

    /// Two contexts of the test device (PoCL) share the tiles of the
    /// OpenCL naive method and give the host's bytes.
    #[test]
    fn two_contexts_of_one_device_give_the_host_result() {
        let Some(dev) = crate::device::test_device() else {
            return;
        };
        let (input, job) = input();
        let want = smooth_in_memory(&input, &job, &NaiveHost).unwrap();
        let second = crate::device::Device::open_instance(dev.info().index, 1).unwrap();
        let members: Vec<Box<dyn ClassSmoother>> = [dev, second]
            .into_iter()
            .map(|d| {
                Box::new(crate::method::naive::cl::NaiveCl::new(d, Default::default()).unwrap())
                    as Box<dyn ClassSmoother>
            })
            .collect();
        let shared = Shared::new(members).unwrap();
        assert!(shared.is_exact());
        let got = smooth_in_memory(&input, &job, &shared).unwrap();
        assert_eq!(got, want);
        let shares = shared.take_shares();
        assert!(shares.iter().all(|s| s.times.is_some()), "{shares:?}");
    }
}
