//! An exact method computed on the host while its devices start: the first
//! tiles of a run do not wait for the driver.
//!
//! NVIDIA's OpenCL driver takes 0.21–0.35 s to start one GPU (about 1.2 s
//! for four) and a run waits for it once its first tiles are read
//! ([`Starting`]). Every exact method gives the same bytes on the host as
//! on any device, so for an exact method (bridged by its [`host_twin`]: a
//! certified method itself, naive the host's fastest exact method)
//! [`Bridged`] hands each tile submitted before the devices are up to the
//! twin on the host, on threads of its own (the run's pool is sized for staging
//! beside the GPUs, and several tiles compute at once there, as the engine
//! keeps them in flight for a device); every tile submitted once they are
//! up goes to them. The output is the devices' own, bit for bit, whoever
//! computed a tile; only the time to it changes. An approximate method is
//! never bridged: its host and device results differ, and which tiles the
//! host took depends on timing.

use super::multi::{self, KernelCopy, OwnedTile};
use super::spec::MethodSpec;
use super::starting::Starting;
use super::{
    ClassSmoother, ClassTile, CodeTile, DEFAULT_DEPTH, PendingTile, Promised, SmoothParams,
    submit_compacted,
};
use crate::classes::TileCompaction;
use crate::device::{DeviceKind, DeviceTimes};
use crate::error::{Error, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Output pixels of the largest tile the host takes (a 2048² one): a
/// larger one (`--tile`) could keep the started devices waiting on it
/// longer than they took to start, so it waits for them instead.
pub const MAX_HOST_TILE: usize = 1 << 22;

/// Whether a run on devices of this kind (`gpu`: a GPU) computes its first
/// tiles on the host while they start: on GPUs unless
/// `MAPFILTER_HOST_START=0`, on other OpenCL devices (PoCL) only with
/// `MAPFILTER_HOST_START=1` (their tests must run on them).
pub fn wanted(gpu: bool) -> bool {
    crate::switches::get().host_start.unwrap_or(gpu)
}

/// The method a run of `spec` on devices computes on the host while they
/// start, or `None` where it is not bridged. A certified method (dct5 or
/// svd `--exact`) is its own twin: exact, so the same bytes, and fast on
/// the host too. Any other exact method (naive) is bridged by the host's
/// fastest exact method, `auto --exact`, which gives the same bytes:
/// naive's own host tiles, whose cost grows with the kernel's area, held
/// the GPU's first ones back (on one H200 at σ = 5 a 415 Mpx `smooth`
/// took 0.97–1.11× the run that waits; decision 0044). Never an
/// approximate method.
pub fn host_twin(spec: &MethodSpec) -> Option<MethodSpec> {
    let method = spec.method();
    if method.is_certifiable() && spec.options().exact {
        return Some(spec.clone());
    }
    if !method.is_exact() {
        return None;
    }
    let exact = crate::method::family::FastOptions {
        exact: true,
        ..Default::default()
    };
    MethodSpec::new("auto".parse().ok()?, None, exact).ok()
}

/// What the host computed.
#[derive(Default)]
struct HostTally {
    tiles: AtomicU64,
    pixels: AtomicU64,
}

/// An exact method on devices still starting, computed on its host twin
/// until they are up.
pub struct Bridged<'s> {
    host: Arc<dyn ClassSmoother>,
    pool: rayon::ThreadPool,
    kernel: KernelCopy,
    device: &'s Starting,
    kind: DeviceKind,
    gpus: usize,
    depth: usize,
    tally: Arc<HostTally>,
    /// Output pixels handed to the devices.
    device_pixels: AtomicU64,
}

impl<'s> Bridged<'s> {
    /// `host`: the method on the host, on `host_threads` threads of its
    /// own; `device`: the same method starting on `gpus` GPUs (0: one
    /// device of `kind` that is not a GPU). The engine sizes its tiles and
    /// keeps tiles in flight as it would for the devices, so that the run
    /// after the start is theirs.
    pub fn new(
        host: Box<dyn ClassSmoother>,
        host_threads: usize,
        device: &'s Starting,
        kind: DeviceKind,
        gpus: usize,
    ) -> Result<Self> {
        if !host.is_exact() || host.runs_on().is_some() {
            return Err(Error::internal(format!(
                "only an exact method on the host bridges a device's start, not {}",
                host.name()
            )));
        }
        let depth = match gpus {
            0 | 1 => DEFAULT_DEPTH,
            n => multi::shared_depth(std::iter::repeat_n(Some(DEFAULT_DEPTH), n)),
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(host_threads.max(1))
            .thread_name(|i| format!("mapfilter-bridge-{i}"))
            .build()
            .map_err(|e| Error::resource(format!("cannot start the host's threads: {e}")))?;
        Ok(Bridged {
            host: Arc::from(host),
            pool,
            kernel: KernelCopy::default(),
            device,
            kind,
            gpus,
            depth,
            tally: Arc::default(),
            device_pixels: AtomicU64::new(0),
        })
    }

    /// The devices' method once started (its error if the start failed),
    /// `None` while they start.
    fn started(&self) -> Result<Option<&'s dyn ClassSmoother>> {
        self.device.try_get().transpose()
    }

    /// The output pixels the host computed.
    pub fn host_pixels(&self) -> u64 {
        self.tally.pixels.load(Ordering::Relaxed)
    }

    /// The devices' method for a tile of `pixels` outputs: started, or
    /// waited for where the tile is too large for the host; `None`: the
    /// host's tile.
    fn device_for(&self, pixels: usize) -> Result<Option<&'s dyn ClassSmoother>> {
        let device = match self.started()? {
            Some(device) => device,
            None if pixels > MAX_HOST_TILE => self.device.get()?,
            None => return Ok(None),
        };
        self.device_pixels
            .fetch_add(pixels as u64, Ordering::Relaxed);
        Ok(Some(device))
    }

    /// Starts `tile` on the host's threads.
    fn on_host(&self, tile: &ClassTile, params: &SmoothParams) -> Promised {
        let owned = OwnedTile::of(tile, params, self.kernel.of(params.kernel));
        let (host, tally) = (self.host.clone(), self.tally.clone());
        let (reply, result) = crossbeam_channel::bounded(1);
        self.pool.spawn(move || {
            let smoothed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                owned.with(|tile, params| {
                    let mut out = vec![0u16; tile.output_len()];
                    host.smooth(tile, params, &mut out).map(|()| out)
                })
            }))
            .unwrap_or_else(|_| Err(Error::internal("the host's tile panicked")));
            if let Ok(out) = &smoothed {
                tally.tiles.fetch_add(1, Ordering::Relaxed);
                tally.pixels.fetch_add(out.len() as u64, Ordering::Relaxed);
            }
            // The caller is gone only when the run already failed.
            let _ = reply.send(smoothed);
        });
        Promised(result)
    }
}

impl ClassSmoother for Bridged<'_> {
    fn name(&self) -> String {
        match self.started() {
            Ok(Some(device)) => device.name(),
            _ => format!("{} (the devices starting)", self.host.name()),
        }
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        self.submit(tile, params)?.wait(out)
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn weighs_votes(&self) -> bool {
        self.host.weighs_votes()
    }

    fn summary(&self) -> Option<String> {
        // The devices' line where they computed anything.
        let device = match self.started() {
            Ok(Some(device)) if self.device_pixels.load(Ordering::Relaxed) > 0 => device.summary(),
            _ => None,
        };
        let pixels = self.host_pixels();
        let host = (pixels > 0).then(|| {
            let mut line = format!(
                "the host computed {:.1} Mpx of {} tiles while the devices started",
                pixels as f64 / 1e6,
                self.tally.tiles.load(Ordering::Relaxed),
            );
            if let Some(s) = self.host.summary() {
                line += &format!(" ({s})");
            }
            line
        });
        let parts: Vec<String> = device.into_iter().chain(host).collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    fn recompute_counts(&self) -> Option<(u64, u64)> {
        let device = match self.started() {
            Ok(Some(device)) => device.recompute_counts(),
            _ => None,
        };
        let host = self.host.recompute_counts();
        match (device, host) {
            (None, None) => None,
            (d, h) => {
                let (dr, dp) = d.unwrap_or_default();
                let (hr, hp) = h.unwrap_or_default();
                Some((dr + hr, dp + hp))
            }
        }
    }

    fn submit(&self, tile: &ClassTile, params: &SmoothParams) -> Result<Box<dyn PendingTile + '_>> {
        match self.device_for(tile.output_len())? {
            Some(device) => device.submit(tile, params),
            None => Ok(Box::new(self.on_host(tile, params))),
        }
    }

    /// The devices' own answer where they have started; else true: the
    /// engine hands source windows, compacted here for the host.
    fn takes_codes(&self) -> bool {
        match self.started() {
            Ok(Some(device)) => device.takes_codes(),
            _ => true,
        }
    }

    fn submit_codes(
        &self,
        tile: &CodeTile,
        params: &SmoothParams,
    ) -> Result<(TileCompaction, Box<dyn PendingTile + '_>)> {
        let out = tile.tile.output;
        match self.device_for(out.width * out.height)? {
            Some(device) => device.submit_codes(tile, params),
            None => submit_compacted(self, tile, params),
        }
    }

    fn runs_on(&self) -> Option<DeviceKind> {
        Some(self.kind)
    }

    fn gpus(&self) -> usize {
        self.gpus
    }

    fn take_device_times(&self) -> Option<DeviceTimes> {
        match self.started() {
            Ok(Some(device)) => device.take_device_times(),
            _ => None,
        }
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn take_shares(&self) -> Vec<multi::DeviceShare> {
        match self.started() {
            Ok(Some(device)) => device.take_shares(),
            _ => Vec::new(),
        }
    }

    /// Waits for the devices: a run whose tiles the host computed alone
    /// still fails if they did not start, as it would have without the
    /// host's help.
    fn settle(&self) -> Result<()> {
        let device = self.device.get()?;
        if !device.is_exact() {
            return Err(Error::internal(format!(
                "{} is not exact: its tiles cannot be the host's",
                device.name()
            )));
        }
        device.settle()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::ClassTable;
    use crate::engine::{SmoothJob, smooth_in_memory};
    use crate::io::MemRaster;
    use crate::kernel::KernelSpec;
    use crate::method::naive::NaiveHost;
    use crate::method::policy::Policies;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc::{Sender, channel};
    use std::time::Duration;

    /// The host twin: the naive method, which lets the devices' start end
    /// after its `release_after`-th tile and returns only once it has.
    struct Host {
        tiles: AtomicUsize,
        release_after: usize,
        release: Mutex<Option<Sender<()>>>,
        starting: Arc<Starting>,
    }

    impl ClassSmoother for Host {
        fn name(&self) -> String {
            "host".into()
        }
        fn is_exact(&self) -> bool {
            true
        }
        fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
            NaiveHost.smooth(tile, params, out)?;
            if self.tiles.fetch_add(1, Ordering::SeqCst) + 1 == self.release_after {
                if let Some(tx) = self.release.lock().unwrap().take() {
                    tx.send(()).unwrap();
                }
                while self.starting.try_get().is_none() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Ok(())
        }
    }

    /// The "devices": naive again, counting the tiles and rows given them.
    #[derive(Default)]
    struct Device {
        tiles: Arc<AtomicUsize>,
        rows: Arc<AtomicUsize>,
    }

    impl ClassSmoother for Device {
        fn name(&self) -> String {
            "device".into()
        }
        fn is_exact(&self) -> bool {
            true
        }
        fn runs_on(&self) -> Option<DeviceKind> {
            Some(DeviceKind::Gpu)
        }
        fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
            self.tiles.fetch_add(1, Ordering::SeqCst);
            self.rows.fetch_add(tile.output_height(), Ordering::SeqCst);
            NaiveHost.smooth(tile, params, out)
        }
    }

    /// A host twin and devices that start once it has smoothed
    /// `release_after` tiles (or fail to, `fails`), with the devices'
    /// tile and row counts.
    fn bridge(
        release_after: usize,
        fails: bool,
    ) -> (Host, Arc<Starting>, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let (tx, rx) = channel::<()>();
        let device = Device::default();
        let (tiles, rows) = (device.tiles.clone(), device.rows.clone());
        let starting = Arc::new(Starting::spawn(move || {
            let _ = rx.recv();
            if fails {
                return Err(Error::device("no GPU").hint("use --device host"));
            }
            Ok(Box::new(device) as Box<dyn ClassSmoother>)
        }));
        let host = Host {
            tiles: AtomicUsize::new(0),
            release_after,
            release: Mutex::new(Some(tx)),
            starting: starting.clone(),
        };
        (host, starting, tiles, rows)
    }

    /// The codes of an `ow × oh` output's tile with `halo`: [`patches`] of
    /// four classes.
    fn four_classes(ow: usize, oh: usize, halo: usize) -> Vec<u16> {
        let (w, h) = (ow + 2 * halo, oh + 2 * halo);
        patches(w, h).iter().map(|&c| c % 4).collect()
    }

    /// The tile of [`four_classes`]' codes for an output `ow` wide.
    fn tile_of(classes: &[u16], ow: usize, halo: usize) -> ClassTile<'_> {
        let width = ow + 2 * halo;
        ClassTile {
            width,
            height: classes.len() / width,
            halo,
            n_classes: 4,
            classes,
        }
    }

    fn patches(w: usize, h: usize) -> Vec<u16> {
        (0..w * h)
            .map(|i| [2, 5, 7, 11][((i % w) / 9 + (i / w) / 6 + i % 3) % 4])
            .collect()
    }

    /// Every vote weighing 1, nodata kept, the default ties.
    fn plain<'a>(kernel: &'a crate::kernel::Kernel, class_weights: &'a [u32]) -> SmoothParams<'a> {
        SmoothParams {
            kernel,
            class_weights,
            fill_nodata: false,
            ties: Default::default(),
            confidence: None,
        }
    }

    fn job(classes: ClassTable, tile: usize) -> SmoothJob {
        SmoothJob {
            kernel: "gaussian:1.5"
                .parse::<KernelSpec>()
                .unwrap()
                .build()
                .unwrap(),
            class_weights: vec![1; classes.len()],
            output_nodata: classes.nodata(),
            classes,
            border: tiles::Border::Same,
            fill_nodata: false,
            tile,
            policies: Policies::default(),
        }
    }

    /// A tile submitted while the devices start is the host's, the next
    /// one, submitted once they have, theirs; the bytes are the same.
    #[test]
    fn tiles_go_to_the_host_until_the_devices_have_started() {
        let (ow, oh, halo) = (37, 45, 4);
        let classes = four_classes(ow, oh, halo);
        let tile = tile_of(&classes, ow, halo);
        let kernel = "gaussian:1.5"
            .parse::<KernelSpec>()
            .unwrap()
            .build()
            .unwrap();
        let params = plain(&kernel, &[1, 1, 1, 1]);
        let mut want = vec![0; ow * oh];
        NaiveHost.smooth(&tile, &params, &mut want).unwrap();

        let (host, starting, tiles, rows) = bridge(1, false);
        let bridged = Bridged::new(Box::new(host), 2, &starting, DeviceKind::Gpu, 1).unwrap();
        assert_eq!(bridged.name(), "host (the devices starting)");
        let mut got = vec![0; ow * oh];
        bridged
            .submit(&tile, &params)
            .unwrap()
            .wait(&mut got)
            .unwrap();
        assert!(got == want, "the host's tile differs");
        assert_eq!(bridged.host_pixels(), (ow * oh) as u64);
        assert_eq!(tiles.load(Ordering::SeqCst), 0);
        let mut again = vec![0; ow * oh];
        bridged
            .submit(&tile, &params)
            .unwrap()
            .wait(&mut again)
            .unwrap();
        assert!(again == want, "the devices' tile differs");
        assert_eq!(
            (tiles.load(Ordering::SeqCst), rows.load(Ordering::SeqCst)),
            (1, oh)
        );
        assert_eq!(bridged.name(), "device");
        bridged.settle().unwrap();
    }

    /// A tile larger than the host takes waits for the devices.
    #[test]
    fn a_tile_too_large_for_the_host_waits_for_the_devices() {
        let (tx, rx) = channel::<()>();
        let device = Device::default();
        let tiles = device.tiles.clone();
        let starting = Starting::spawn(move || {
            let _ = rx.recv();
            Ok(Box::new(device) as Box<dyn ClassSmoother>)
        });
        let bridged = Bridged::new(Box::new(NaiveHost), 2, &starting, DeviceKind::Gpu, 1).unwrap();
        let side = 2049;
        let classes = vec![0u16; (side + 2) * (side + 2)];
        let tile = ClassTile {
            width: side + 2,
            height: side + 2,
            halo: 1,
            n_classes: 1,
            classes: &classes,
        };
        assert!(tile.output_len() > MAX_HOST_TILE);
        let kernel = "gaussian:0.5"
            .parse::<KernelSpec>()
            .unwrap()
            .build()
            .unwrap();
        let params = plain(&kernel, &[1]);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            tx.send(()).unwrap();
        });
        let out = bridged
            .submit(&tile, &params)
            .unwrap()
            .into_output(tile.output_len())
            .unwrap();
        assert!(out.iter().all(|&v| v == 0));
        assert_eq!(
            (tiles.load(Ordering::SeqCst), bridged.host_pixels()),
            (1, 0)
        );
        release.join().unwrap();
    }

    /// A whole run through the engine (tiles staged from a raster in
    /// memory, several at once) gives the host's bytes, its first tiles
    /// computed on the host and the others on the devices.
    #[test]
    fn a_run_bridged_on_the_host_gives_the_devices_bytes() {
        let (w, h) = (301, 700);
        let data = patches(w, h);
        let input = MemRaster::new(w, h, data.clone());
        let table = ClassTable::from_codes(&data, None).unwrap();
        let job = job(table, 128);
        let want = smooth_in_memory(&input, &job, &NaiveHost).unwrap();
        let (host, starting, tiles, _) = bridge(3, false);
        let bridged = Bridged::new(Box::new(host), 2, &starting, DeviceKind::Gpu, 1).unwrap();
        let got = smooth_in_memory(&input, &job, &bridged).unwrap();
        assert!(got == want, "the bridged run differs from the host's");
        assert!(bridged.host_pixels() > 0);
        assert!(tiles.load(Ordering::SeqCst) > 0);
        assert!(
            bridged
                .summary()
                .unwrap()
                .contains("while the devices started")
        );
    }

    /// Devices that fail to start fail the run: at the next tile when the
    /// host has tiles left, at the end when it computed every one.
    #[test]
    fn devices_that_fail_to_start_fail_the_run_even_where_the_host_finished_it() {
        let (w, h) = (90, 70);
        let data = patches(w, h);
        let input = MemRaster::new(w, h, data.clone());
        let job = job(ClassTable::from_codes(&data, None).unwrap(), 32);
        let tiles = job.grid(w, h).unwrap().len();
        for release_after in [1, tiles] {
            let (host, starting, _, _) = bridge(release_after, true);
            let bridged = Bridged::new(Box::new(host), 2, &starting, DeviceKind::Gpu, 1).unwrap();
            let e = smooth_in_memory(&input, &job, &bridged).err().unwrap();
            assert_eq!(e.to_string(), "no GPU (hint: use --device host)");
        }
    }

    /// A certified method bridges itself, naive the host's fastest exact
    /// method (`auto --exact`), built on the host for any kernel naive
    /// takes and giving naive's bytes; an approximate method is not
    /// bridged.
    #[test]
    fn an_exact_method_has_an_exact_host_twin() {
        let named = |name: &str, exact: bool| {
            let options = crate::method::family::FastOptions {
                exact,
                ..Default::default()
            };
            MethodSpec::new(name.parse().unwrap(), None, options).unwrap()
        };
        let certified = named("dct5", true);
        assert_eq!(host_twin(&certified), Some(certified));
        assert_eq!(host_twin(&named("naive", false)), Some(named("auto", true)));
        assert_eq!(host_twin(&named("dct5", false)), None);
        assert_eq!(host_twin(&named("svd", false)), None);

        let (ow, oh, halo) = (41, 33, 7);
        let classes = four_classes(ow, oh, halo);
        let tile = tile_of(&classes, ow, halo);
        let twin = host_twin(&named("naive", false)).unwrap();
        for kernel in ["gaussian:2", "disc:7"] {
            let kernel = kernel.parse::<KernelSpec>().unwrap().build().unwrap();
            let params = plain(&kernel, &[1, 1, 1, 1]);
            let mut want = vec![0; ow * oh];
            NaiveHost.smooth(&tile, &params, &mut want).unwrap();
            let host = crate::method::select::smoother_for(
                &twin,
                &crate::device::DeviceChoice::Host,
                &kernel,
            )
            .unwrap();
            assert!(
                host.is_exact() && host.runs_on().is_none(),
                "{}",
                host.name()
            );
            let mut got = vec![0; ow * oh];
            host.smooth(&tile, &params, &mut got).unwrap();
            assert!(got == want, "{} differs from naive", host.name());
        }
    }

    #[test]
    fn only_an_exact_host_method_bridges() {
        let starting = Starting::ready(Box::new(NaiveHost));
        let device = Bridged::new(
            Box::new(Device::default()),
            1,
            &starting,
            DeviceKind::Gpu,
            1,
        );
        assert!(device.is_err());
        let two = Bridged::new(Box::new(NaiveHost), 1, &starting, DeviceKind::Gpu, 2).unwrap();
        assert_eq!(two.depth(), multi::shared_depth([Some(DEFAULT_DEPTH); 2]));
        assert_eq!(two.gpus(), 2);
    }
}
