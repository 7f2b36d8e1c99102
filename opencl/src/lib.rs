//! mapfilter-opencl, the device layer: OpenCL devices (over the `opencl3`
//! crate, which loads libOpenCL at run time, so the binary starts on
//! machines without OpenCL). mapfilter-core re-exports it as `device`.
//!
//! This crate owns everything about *where* kernels run, and the kernels'
//! sources (`kernels/*.cl`); the methods (each in its folder of
//! mapfilter-core, host reference and device twin side by side) own
//! *what* they compute, and reach OpenCL through this crate's API only. The API other modules use:
//!
//! - [`list_devices`] / [`DeviceInfo`]: enumeration in a stable order
//!   (the `INDEX` of `--device`); [`device_table`] prints it.
//! - [`DeviceChoice`]: `auto|host|cpu|gpu|INDEX|all|LIST` (default
//!   `MAPFILTER_DEVICE`), [`DeviceChoice::resolve`] gives `Some(Device)` or
//!   `None` for the host path; [`DeviceChoice::members`] the devices of a
//!   run on several.
//! - [`Device`]: a cheap clonable handle (one per device and instance per
//!   process, see [`Device::open`], [`Device::open_instance`]) holding a context, three in-order queues (upload,
//!   compute, download: see [`Queue`]) with profiling on, and a program cache
//!   keyed by (source name, build options). [`Device::program`] builds an
//!   embedded `kernels/*.cl` source with [`BuildOptions`] (`-D` defines);
//!   a failed build is an [`Error`] carrying the compiler's log.
//! - Buffers: [`Device::buffer`], [`Device::upload`], [`Device::download`]
//!   (blocking helpers); [`Args`] sets kernel arguments in order and
//!   [`Device::launch`] enqueues an ND-range returning its [`Event`];
//!   [`event_ns`] reads an event's profiled duration; [`TimeCounters`]
//!   sums [`DeviceTimes`] (upload, kernel, download) for reports.
//! - [`stream`]: the streaming layer every device method uses ([`TileStream`]:
//!   a tile's uploads, kernels and downloads on the three queues, ordered by
//!   events, several tiles in flight; [`SlotPool`] and [`Grow`]: per-tile
//!   device buffers reused across tiles; [`PinnedHost`]: pinned staging).
//! - [`tune`]: the per-device database of tuned work-group shapes and
//!   tile sides (`mapfilter tune` writes it, runs read it).
//! - [`test_device`]: the device tests run on (the OpenCL CPU device, i.e.
//!   PoCL, when present), or `None` with a printed reason when the machine
//!   has no OpenCL at all.

mod choice;
mod icd;
mod info;
mod pinned;
mod sources;
pub mod stream;
pub mod tune;

pub use pinned::PinnedHost;
pub use stream::{Flight, Grow, SlotPool, TileStream};

pub use choice::{DEVICE_ENV, DeviceChoice, Member};
pub use icd::nvidia_gpus;
pub use info::{DeviceInfo, DeviceKind, device_table, human_bytes, list_devices, opencl_available};
pub use opencl3::event::Event;
pub use opencl3::kernel::Kernel;
pub use opencl3::memory::{
    Buffer, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_WRITE_ONLY, ClMem, Image,
};
/// What the device twins that keep a tile in an image (naive's image
/// variant, the pyramid store) create it with.
pub use opencl3::memory::{
    CL_FLOAT, CL_MEM_COPY_HOST_PTR, CL_MEM_OBJECT_IMAGE2D, CL_R, CL_RGBA, CL_SIGNED_INT16,
    CL_UNSIGNED_INT8, CL_UNSIGNED_INT16,
};
pub use opencl3::program::Program;
pub use opencl3::types::{CL_NON_BLOCKING, cl_image_desc, cl_image_format};
pub use sources::{BuildOptions, SOURCES, raw_source, source, with_common};

use mapfilter_base::error::{Error, Result, Setting};
use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::error_codes::ClError;
use opencl3::types::{CL_BLOCKING, cl_event};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Turns an OpenCL status into an [`Error`] saying what was being done.
pub fn cl_error(what: &'static str) -> impl Fn(ClError) -> Error {
    move |e| {
        Error::device(format!("OpenCL failed while {what}: {e}")).hint(format!(
            "try {}, or check the driver with `clinfo`",
            Setting::Device.is("host")
        ))
    }
}

/// The three in-order queues of a device. Uploads, kernels and downloads of
/// different tiles overlap because they sit on different queues; events
/// order the commands of one tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    Upload = 0,
    Compute = 1,
    Download = 2,
}

/// An open OpenCL device: context, queues, program cache. Clones share all of it.
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

struct Inner {
    info: DeviceInfo,
    /// 0 for the device's first context; 1, 2, ... for further ones.
    instance: usize,
    context: Context,
    queues: [CommandQueue; 3],
    programs: Mutex<HashMap<(String, String), Arc<Program>>>,
    builds: AtomicUsize,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({}: {}", self.info().index, self.info().name)?;
        match self.inner.instance {
            0 => f.write_str(")"),
            n => write!(f, ", context {})", n + 1),
        }
    }
}

/// Devices opened so far, by index and instance: each is opened once per
/// process so its program cache is shared by every method and test that uses it.
static OPEN: OnceLock<Mutex<HashMap<(usize, usize), Device>>> = OnceLock::new();

impl Device {
    /// Opens device `index` of [`list_devices`] (or returns the handle
    /// already open in this process).
    pub fn open(index: usize) -> Result<Device> {
        Self::open_instance(index, 0)
    }

    /// Opens context `instance` of device `index`: instance 0 is
    /// [`Device::open`]'s; others are further contexts on the same device,
    /// each with its own queues and program cache (a device named twice in
    /// `--device` shares tiles with itself as two devices).
    pub fn open_instance(index: usize, instance: usize) -> Result<Device> {
        let open = || {
            OPEN.get_or_init(Default::default)
                .lock()
                .unwrap_or_else(|p| p.into_inner())
        };
        if let Some(d) = open().get(&(index, instance)) {
            return Ok(d.clone());
        }
        // Made without the lock, so that several devices open at once (a
        // context takes long to make); two threads opening the same one
        // both make it and the first kept is the one every caller gets.
        let info = list_devices()?.into_iter().nth(index).ok_or_else(|| {
            Error::usage(format!("there is no OpenCL device {index}"))
                .hint("`mapfilter devices` lists the indices")
        })?;
        let start = std::time::Instant::now();
        let context = Context::from_device(&info.raw).map_err(cl_error("creating a context"))?;
        let queue = || -> Result<CommandQueue> {
            // OpenCL ≥ 2.0 entry point first, the 1.2 one where it is missing.
            CommandQueue::create_default_with_properties(&context, CL_QUEUE_PROFILING_ENABLE, 0)
                .or_else(|_| {
                    #[allow(deprecated)]
                    CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
                })
                .map_err(cl_error("creating a command queue"))
        };
        let queues = [queue()?, queue()?, queue()?];
        log::debug!(
            "OpenCL: {} context {instance} and its queues made in {:.1} ms",
            info.name,
            start.elapsed().as_secs_f64() * 1e3
        );
        let device = Device {
            inner: Arc::new(Inner {
                info,
                instance,
                context,
                queues,
                programs: Mutex::default(),
                builds: AtomicUsize::new(0),
            }),
        };
        Ok(open().entry((index, instance)).or_insert(device).clone())
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// Which context of its device this is (0: [`Device::open`]'s).
    pub fn instance(&self) -> usize {
        self.inner.instance
    }

    /// Whether `other` is this very context (not only the same device).
    pub fn same_context(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    pub fn queue(&self, q: Queue) -> &CommandQueue {
        &self.inner.queues[q as usize]
    }

    /// Waits until every queue is empty.
    pub fn finish(&self) -> Result<()> {
        for q in &self.inner.queues {
            q.finish().map_err(cl_error("waiting for the device"))?;
        }
        Ok(())
    }

    /// Programs compiled so far on this device (cache misses).
    pub fn builds(&self) -> usize {
        self.inner.builds.load(Ordering::Relaxed)
    }

    /// The embedded source `name` (`kernels/NAME.cl`, or `NAME.cl` in a
    /// method's folder) built with `opts`,
    /// compiled once per (name, options) and cached.
    pub fn program(&self, name: &str, opts: &BuildOptions) -> Result<Arc<Program>> {
        let text = source(name).ok_or_else(|| {
            Error::internal(format!("no embedded kernel source '{name}'"))
                .hint("put NAME.cl in kernels/ or in its method's folder under src/method/")
        })?;
        self.program_from_source(name, &text, opts)
    }

    /// Like [`Device::program`] for source text given by the caller, cached
    /// under `name` (the caller keeps names unique).
    pub fn program_from_source(
        &self,
        name: &str,
        text: &str,
        opts: &BuildOptions,
    ) -> Result<Arc<Program>> {
        let key = (name.to_string(), opts.render());
        let mut cache = self
            .inner
            .programs
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(&key) {
            return Ok(p.clone());
        }
        self.inner.builds.fetch_add(1, Ordering::Relaxed);
        let start = std::time::Instant::now();
        let mut attempt = 0;
        let program = loop {
            let mut program = Program::create_from_source(self.context(), text)
                .map_err(cl_error("creating a program"))?;
            let Err(e) = program.build(self.context().devices(), &key.1) else {
                break program;
            };
            let log = program
                .get_build_log(self.info().raw.id())
                .unwrap_or_default();
            // PoCL's on-disk kernel cache is not safe against several processes
            // building the same program at once (a temp-file rename fails);
            // such a failure says nothing about the kernel, so build again.
            attempt += 1;
            if attempt < 3 && log.contains("unable to rename temporary") {
                continue;
            }
            return Err(Error::device(format!(
                "building kernels/{name}.cl ({}) failed on {}: {e}; build log: {}",
                key.1,
                self.info().name,
                log.trim()
            ))
            .hint(format!(
                "this is a bug in mapfilter's kernels; {} avoids OpenCL",
                Setting::Device.is("host")
            )));
        };
        log::debug!(
            "OpenCL: {name}.cl ({}) built on {} in {:.1} ms",
            key.1,
            self.info().name,
            start.elapsed().as_secs_f64() * 1e3
        );
        let program = Arc::new(program);
        cache.insert(key, program.clone());
        Ok(program)
    }

    /// Kernel `kernel` of program `name` built with `opts`. Kernels hold their
    /// arguments, so each user takes its own (creating one is cheap).
    pub fn kernel(&self, name: &str, opts: &BuildOptions, kernel: &str) -> Result<Kernel> {
        let program = self.program(name, opts)?;
        Kernel::create(&program, kernel).map_err(cl_error("creating a kernel"))
    }

    /// A device buffer of `len` elements (`flags`: `CL_MEM_READ_ONLY` etc.).
    pub fn buffer<T>(&self, len: usize, flags: u64) -> Result<Buffer<T>> {
        // SAFETY: no host pointer is passed; the size is len elements of T.
        unsafe { Buffer::<T>::create(self.context(), flags, len.max(1), std::ptr::null_mut()) }
            .map_err(cl_error("allocating device memory"))
    }

    /// A buffer holding a copy of `data` (uploaded before returning).
    pub fn buffer_from<T>(&self, data: &[T], flags: u64) -> Result<Buffer<T>> {
        let mut b = self.buffer(data.len(), flags)?;
        self.upload(&mut b, data)?;
        Ok(b)
    }

    /// Copies `data` into the start of `buf` and waits.
    pub fn upload<T>(&self, buf: &mut Buffer<T>, data: &[T]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: blocking write; `data` outlives the call.
        unsafe {
            self.queue(Queue::Upload)
                .enqueue_write_buffer(buf, CL_BLOCKING, 0, data, &[])
        }
        .map_err(cl_error("uploading to the device"))?;
        Ok(())
    }

    /// Copies the start of `buf` into `out` and waits (after all compute).
    pub fn download<T>(&self, buf: &Buffer<T>, out: &mut [T]) -> Result<()> {
        self.queue(Queue::Compute)
            .finish()
            .map_err(cl_error("waiting for the device"))?;
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: blocking read into `out`, which outlives the call.
        unsafe {
            self.queue(Queue::Download)
                .enqueue_read_buffer(buf, CL_BLOCKING, 0, out, &[])
        }
        .map_err(cl_error("downloading from the device"))?;
        Ok(())
    }

    /// Work-groups for a kernel that returns early past its output's
    /// bounds (every work-item checks its global ids against them) and
    /// needs no shape of its own: the driver's choice (`None`) on GPUs; on
    /// CPU devices one fixed shape per number of dimensions, the global
    /// size rounded up to it by [`Device::launch`]. PoCL compiles a
    /// work-group function per kernel and local size, and left to choose
    /// it picks a divisor of the global size: every tile size was another
    /// build (the fixtures tests alone made 344 of them, 85 s with PoCL's
    /// cache empty, against 2 s with it full).
    pub fn bounded_local(&self, dims: usize) -> Option<&'static [usize]> {
        const SHAPES: [&[usize]; 3] = [&[128], &[32, 4], &[32, 4, 1]];
        let shape = SHAPES.get(dims.checked_sub(1)?)?;
        let items: usize = shape.iter().product();
        (self.info().kind == DeviceKind::Cpu && items <= self.info().max_work_group)
            .then_some(*shape)
    }

    /// Enqueues `kernel` (arguments already set with [`Args`]) over `global`
    /// work-items in work-groups of `local` (or the driver's choice), after
    /// the events in `wait`. `global` is rounded up to a multiple of `local`.
    pub fn launch(
        &self,
        q: Queue,
        kernel: &Kernel,
        global: &[usize],
        local: Option<&[usize]>,
        wait: &[&Event],
    ) -> Result<Event> {
        let global: Vec<usize> = match local {
            Some(l) => global
                .iter()
                .zip(l)
                .map(|(g, l)| g.div_ceil(*l).max(1) * l)
                .collect(),
            None => global.to_vec(),
        };
        let wait: Vec<cl_event> = wait.iter().map(|e| e.get()).collect();
        // SAFETY: the kernel's arguments were set through `Args`, whose
        // buffers the caller keeps alive until the returned event completes.
        unsafe {
            self.queue(q).enqueue_nd_range_kernel(
                kernel.get(),
                global.len() as u32,
                std::ptr::null(),
                global.as_ptr(),
                local.map_or(std::ptr::null(), |l| l.as_ptr()),
                &wait,
            )
        }
        .map_err(cl_error("launching a kernel"))
    }
}

/// Sets a kernel's arguments in order; any failure is reported by [`Args::done`].
pub struct Args<'k> {
    kernel: &'k Kernel,
    index: u32,
    error: Option<Error>,
}

impl<'k> Args<'k> {
    pub fn new(kernel: &'k Kernel) -> Self {
        Args {
            kernel,
            index: 0,
            error: None,
        }
    }

    fn set<T>(mut self, value: &T) -> Self {
        if self.error.is_none() {
            // SAFETY: OpenCL checks the argument size against the kernel's
            // signature; buffers are passed as their cl_mem handle.
            if let Err(e) = unsafe { self.kernel.set_arg(self.index, value) } {
                self.error = Some(cl_error("setting a kernel argument")(e));
            }
        }
        self.index += 1;
        self
    }

    /// A buffer or image argument.
    pub fn mem(self, m: &impl ClMem) -> Self {
        let handle = m.get();
        self.set(&handle)
    }

    /// A scalar argument (`int`, `uint`, `ulong`, ...), by value.
    pub fn scalar<T: Copy>(self, v: T) -> Self {
        self.set(&v)
    }

    /// A `__local` argument of `bytes` bytes.
    pub fn local(mut self, bytes: usize) -> Self {
        if self.error.is_none() {
            // SAFETY: a local argument only carries a size.
            if let Err(e) = unsafe { self.kernel.set_arg_local_buffer(self.index, bytes) } {
                self.error = Some(cl_error("setting a local-memory argument")(e));
            }
        }
        self.index += 1;
        self
    }

    /// Ok when every argument was accepted.
    pub fn done(self) -> Result<()> {
        self.error.map_or(Ok(()), Err)
    }
}

/// Device time of a run, from profiled events, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceTimes {
    pub upload_ns: u64,
    pub kernel_ns: u64,
    pub download_ns: u64,
}

impl DeviceTimes {
    /// Upload plus download.
    pub fn transfer_ns(&self) -> u64 {
        self.upload_ns + self.download_ns
    }
}

/// Accumulates [`DeviceTimes`] from any thread.
#[derive(Debug, Default)]
pub struct TimeCounters {
    upload: AtomicU64,
    kernel: AtomicU64,
    download: AtomicU64,
}

impl TimeCounters {
    pub fn add(&self, t: DeviceTimes) {
        self.upload.fetch_add(t.upload_ns, Ordering::Relaxed);
        self.kernel.fetch_add(t.kernel_ns, Ordering::Relaxed);
        self.download.fetch_add(t.download_ns, Ordering::Relaxed);
    }

    /// The sums so far, resetting them to zero.
    pub fn take(&self) -> DeviceTimes {
        DeviceTimes {
            upload_ns: self.upload.swap(0, Ordering::Relaxed),
            kernel_ns: self.kernel.swap(0, Ordering::Relaxed),
            download_ns: self.download.swap(0, Ordering::Relaxed),
        }
    }
}

/// The profiled run time of a completed command in nanoseconds (0 if unknown).
pub fn event_ns(e: &Event) -> u64 {
    match (e.profiling_command_start(), e.profiling_command_end()) {
        (Ok(s), Ok(t)) => t.saturating_sub(s),
        _ => 0,
    }
}

/// The device tests run on: the first OpenCL CPU device (PoCL) if present,
/// else the first device. `None`, with the reason printed, only when the
/// machine has no OpenCL at all; a device that exists but fails to open panics.
/// With `MAPFILTER_REQUIRE_OPENCL` set (as `scripts/test.sh` and CI do), a
/// missing OpenCL device fails the test instead of skipping it.
pub fn test_device() -> Option<Device> {
    let skip = |why: String| {
        if mapfilter_base::switches::environment().require_opencl {
            panic!("MAPFILTER_REQUIRE_OPENCL is set but {why}");
        }
        eprintln!("skipping device test: {why}");
        None
    };
    let devices = match list_devices() {
        Ok(d) if !d.is_empty() => d,
        Ok(_) => return skip("OpenCL has no devices on this machine".into()),
        Err(e) => return skip(e.to_string()),
    };
    let pick = devices
        .iter()
        .find(|d| d.kind == DeviceKind::Cpu)
        .unwrap_or(&devices[0]);
    Some(Device::open(pick.index).unwrap_or_else(|e| panic!("opening {}: {e}", pick.name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_cache_hits_and_build_log_shows() {
        let Some(dev) = test_device() else { return };
        // A context of its own: other tests build on the shared one at the
        // same time, which its build counter would count.
        let dev = Device::open_instance(dev.info().index, 99).unwrap();
        let opts = BuildOptions::new().define("MF_TEST_CACHE", 1);
        let text = "__kernel void twice(__global int *a) { a[get_global_id(0)] *= 2; }";
        let p1 = dev.program_from_source("cache-test", text, &opts).unwrap();
        let builds = dev.builds();
        let p2 = dev.program_from_source("cache-test", text, &opts).unwrap();
        assert!(Arc::ptr_eq(&p1, &p2));
        assert_eq!(dev.builds(), builds, "second request must hit the cache");
        // Other options are another program.
        let other = BuildOptions::new().define("MF_TEST_CACHE", 2);
        dev.program_from_source("cache-test", text, &other).unwrap();
        assert_eq!(dev.builds(), builds + 1);

        // And it runs.
        let kernel = Kernel::create(&p1, "twice").unwrap();
        let mut buf = dev.buffer_from(&[1i32, 2, 3], CL_MEM_READ_WRITE).unwrap();
        Args::new(&kernel).mem(&buf).done().unwrap();
        dev.launch(Queue::Compute, &kernel, &[3], None, &[])
            .unwrap();
        let mut out = [0i32; 3];
        dev.download(&buf, &mut out).unwrap();
        assert_eq!(out, [2, 4, 6]);
        dev.upload(&mut buf, &[5]).unwrap();

        let bad = "__kernel void broken(__global int *a) { a[0] = undefined_name; }";
        let e = dev
            .program_from_source("broken-test", bad, &opts)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("build log") && e.contains("undefined_name"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn embedded_program_builds_and_is_cached() {
        let Some(dev) = test_device() else { return };
        let opts = BuildOptions::new().define("MF_TEST_EMBEDDED", 1);
        let a = dev.program("naive", &opts);
        // The naive source needs its own defines; only the cache is checked here.
        if let Ok(a) = a {
            assert!(Arc::ptr_eq(&a, &dev.program("naive", &opts).unwrap()));
        }
        assert!(dev.program("no-such-source", &opts).is_err());
        assert_eq!(
            Device::open(dev.info().index).unwrap().builds(),
            dev.builds()
        );
    }
}
