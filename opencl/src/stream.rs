//! The device streaming layer: how every device method keeps several tiles
//! in flight on one device.
//!
//! A [`TileStream`] drives a device's three in-order queues ([`Queue`]):
//! a tile's uploads go on the upload queue, its kernels on the compute
//! queue behind the uploads' events, its downloads on the download queue
//! behind the last kernel's event. Nothing blocks, so while tile k's
//! kernels run, tile k+1 goes up and tile k−1 comes down. The commands of
//! one tile are collected in a [`Flight`], which [`TileStream::finish`]
//! waits for and whose profiled times it adds to the stream's counters
//! (the `--timings` device line and `MAPFILTER_KERNEL_TIMES`).
//!
//! Memory is reused, never allocated per tile: a method keeps the device
//! buffers and host staging of one tile in a slot of its own type, built
//! from [`Grow`] (device buffers grown on demand) and [`PinnedHost`](super::PinnedHost)
//! (page-locked staging, in `device::pinned`), and takes slots from a
//! [`SlotPool`]: a slot is out while its tile is in flight and back once
//! waited for, so memory stays bounded by the tiles in flight and no lock
//! is held while a tile runs.

use super::{Buffer, Device, DeviceTimes, Event, Kernel, Queue, TimeCounters};
use super::{cl_error, event_ns};
use mapfilter_base::error::Result;
use opencl3::types::CL_NON_BLOCKING;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A device buffer that grows on demand and is otherwise reused; its
/// contents are not kept when it grows.
pub struct Grow<T> {
    buf: Option<Buffer<T>>,
    len: usize,
}

impl<T> Default for Grow<T> {
    fn default() -> Self {
        Grow { buf: None, len: 0 }
    }
}

impl<T> Grow<T> {
    /// The buffer, with room for at least `len` elements.
    pub fn get(&mut self, dev: &Device, len: usize, flags: u64) -> Result<&mut Buffer<T>> {
        if self.buf.is_none() || self.len < len {
            self.buf = None; // free the old one first
            self.buf = Some(dev.buffer(len, flags)?);
            self.len = len;
        }
        Ok(self.buf.as_mut().expect("allocated just above"))
    }

    /// The buffer as [`Grow::get`] last sized it.
    pub fn buf(&self) -> &Buffer<T> {
        self.buf.as_ref().expect("sized with get before use")
    }

    /// The buffer as [`Grow::get`] last sized it, mutably.
    pub fn buf_mut(&mut self) -> &mut Buffer<T> {
        self.buf.as_mut().expect("sized with get before use")
    }
}

/// Slots (a method's per-tile buffers) of tiles no longer in flight.
pub struct SlotPool<S> {
    free: Mutex<Vec<S>>,
}

impl<S> Default for SlotPool<S> {
    fn default() -> Self {
        SlotPool {
            free: Mutex::new(Vec::new()),
        }
    }
}

impl<S: Default> SlotPool<S> {
    /// A slot no tile in flight uses (a new, empty one if all are out).
    pub fn take(&self) -> S {
        self.lock().pop().unwrap_or_default()
    }

    /// Gives a slot back once its tile has been waited for.
    pub fn give(&self, slot: S) {
        self.lock().push(slot);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<S>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The commands of one tile in flight. Dropped unwaited (an error on the
/// way), it waits for them, so that no transfer outlives the host memory
/// it reads or writes: declare it before that memory in the owning struct
/// (fields drop in order).
#[derive(Default)]
pub struct Flight {
    uploads: Vec<Event>,
    kernels: Vec<Event>,
    downloads: Vec<Event>,
    /// The kernels' programs, kept until the tile is done.
    programs: Vec<Kernel>,
    done: bool,
    /// Begun with [`TileStream::flight`]: counted among the tiles in flight.
    counted: bool,
}

impl Flight {
    /// The profiled time of each kernel, in launch order (after the wait).
    pub fn kernel_ns(&self) -> Vec<u64> {
        self.kernels.iter().map(event_ns).collect()
    }

    /// Keeps `kernel` alive until the tile is done.
    pub fn keep(&mut self, kernel: Kernel) {
        self.programs.push(kernel);
    }

    /// Waits for the kernels enqueued so far (e.g. before freeing buffers
    /// that only they use).
    pub fn wait_kernels(&self) -> Result<()> {
        for e in &self.kernels {
            e.wait().map_err(cl_error("running a tile"))?;
        }
        Ok(())
    }

    fn wait_all(&self) -> Result<()> {
        for e in self
            .uploads
            .iter()
            .chain(&self.kernels)
            .chain(&self.downloads)
        {
            e.wait().map_err(cl_error("running a tile"))?;
        }
        Ok(())
    }

    fn times(&self) -> DeviceTimes {
        DeviceTimes {
            upload_ns: self.uploads.iter().map(event_ns).sum(),
            kernel_ns: self.kernels.iter().map(event_ns).sum(),
            download_ns: self.downloads.iter().map(event_ns).sum(),
        }
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.wait_all();
        }
    }
}

/// Tiles streamed through one device's queues, with the device times of
/// every tile finished so far.
pub struct TileStream {
    device: Device,
    times: TimeCounters,
    /// Flights begun with [`TileStream::flight`] and not yet finished.
    open: AtomicUsize,
    /// The most flights open at once.
    most: AtomicUsize,
}

impl TileStream {
    pub fn new(device: Device) -> Self {
        TileStream {
            device,
            times: TimeCounters::default(),
            open: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        }
    }

    /// A new flight, counted among the tiles in flight until finished.
    pub fn flight(&self) -> Flight {
        let open = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.most.fetch_max(open, Ordering::Relaxed);
        let mut flight = Flight::default();
        flight.counted = true;
        flight
    }

    /// The most tiles in flight at once so far: flights begun with
    /// [`TileStream::flight`] and not yet finished (one dropped unfinished
    /// stays counted).
    pub fn most_in_flight(&self) -> usize {
        self.most.load(Ordering::Relaxed)
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Enqueues the upload of `host` into the start of `buf`.
    ///
    /// # Safety
    /// `host` must stay alive and untouched until `flight` has been waited
    /// for (finished or dropped).
    pub unsafe fn write<T>(
        &self,
        flight: &mut Flight,
        buf: &mut Buffer<T>,
        host: &[T],
    ) -> Result<()> {
        if host.is_empty() {
            return Ok(());
        }
        // SAFETY: the caller keeps `host` until the flight is waited for.
        let ev = unsafe {
            self.device.queue(Queue::Upload).enqueue_write_buffer(
                buf,
                CL_NON_BLOCKING,
                0,
                host,
                &[],
            )
        }
        .map_err(cl_error("uploading a tile"))?;
        flight.uploads.push(ev);
        Ok(())
    }

    /// Records an upload the caller enqueued itself (e.g. an image write).
    pub fn uploaded(&self, flight: &mut Flight, ev: Event) {
        flight.uploads.push(ev);
    }

    /// Starts the uploads enqueued so far.
    pub fn flush_uploads(&self) -> Result<()> {
        self.device
            .queue(Queue::Upload)
            .flush()
            .map_err(cl_error("uploading a tile"))
    }

    /// Enqueues `kernel` (arguments set) on the compute queue: the tile's
    /// first kernel waits for its uploads, later ones follow in queue order.
    pub fn launch(
        &self,
        flight: &mut Flight,
        kernel: &Kernel,
        global: &[usize],
        local: Option<&[usize]>,
    ) -> Result<()> {
        let waits: Vec<&Event> = if flight.kernels.is_empty() {
            flight.uploads.iter().collect()
        } else {
            Vec::new()
        };
        let ev = self
            .device
            .launch(Queue::Compute, kernel, global, local, &waits)?;
        flight.kernels.push(ev);
        Ok(())
    }

    /// [`TileStream::launch`] of a kernel that checks its global ids
    /// against its output's bounds, in [`Device::bounded_local`]'s
    /// work-groups.
    pub fn launch_bounded(
        &self,
        flight: &mut Flight,
        kernel: &Kernel,
        global: &[usize],
    ) -> Result<()> {
        let local = self.device.bounded_local(global.len());
        self.launch(flight, kernel, global, local)
    }

    /// Enqueues the mapping of the first `n` bytes of `codes` in place
    /// through the 256 bytes of `table` (kernels/codes.cl `map_codes`; its
    /// plain twin is mapfilter-core's `classes::map_bytes`): a tile staged as
    /// global class indices becomes the method's local indices on the
    /// device. As the tile's first kernel, it waits for the uploads.
    pub fn map_codes(
        &self,
        flight: &mut Flight,
        codes: &Buffer<u8>,
        table: &Buffer<u8>,
        n: usize,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let kernel = self
            .device
            .kernel("codes", &super::BuildOptions::new(), "map_codes")?;
        super::Args::new(&kernel)
            .mem(codes)
            .mem(table)
            .scalar(n as u32)
            .done()?;
        self.launch(flight, &kernel, &[n.div_ceil(4)], Some(&[64]))?;
        flight.keep(kernel);
        Ok(())
    }

    /// Starts the kernels enqueued so far.
    pub fn flush_kernels(&self) -> Result<()> {
        self.device
            .queue(Queue::Compute)
            .flush()
            .map_err(cl_error("starting a kernel"))
    }

    /// Enqueues the download of the start of `buf` into `host`, after the
    /// tile's last kernel.
    ///
    /// # Safety
    /// `host` must stay alive and untouched until `flight` has been waited
    /// for (finished or dropped).
    pub unsafe fn read<T>(
        &self,
        flight: &mut Flight,
        buf: &Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        if host.is_empty() {
            return Ok(());
        }
        let after: Vec<_> = flight.kernels.last().map(|e| e.get()).into_iter().collect();
        // SAFETY: the caller keeps `host` until the flight is waited for.
        let ev = unsafe {
            self.device.queue(Queue::Download).enqueue_read_buffer(
                buf,
                CL_NON_BLOCKING,
                0,
                host,
                &after,
            )
        }
        .map_err(cl_error("downloading a tile"))?;
        flight.downloads.push(ev);
        Ok(())
    }

    /// Starts the downloads enqueued so far.
    pub fn flush_downloads(&self) -> Result<()> {
        self.device
            .queue(Queue::Download)
            .flush()
            .map_err(cl_error("downloading a tile"))
    }

    /// Waits for every command of `flight` and adds its device times to
    /// the stream's; the flight then holds the profiled times (e.g.
    /// [`Flight::kernel_ns`]).
    pub fn finish(&self, flight: &mut Flight) -> Result<DeviceTimes> {
        flight.wait_all()?;
        if flight.counted && !flight.done {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        flight.done = true;
        let t = flight.times();
        self.times.add(t);
        Ok(t)
    }

    /// Device times of the tiles finished since the last call.
    pub fn take_times(&self) -> DeviceTimes {
        self.times.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Args, BuildOptions, CL_MEM_READ_WRITE, PinnedHost, test_device};

    /// The device's code mapping equals its plain twin, whatever the
    /// length (tails of one to three bytes included).
    #[test]
    fn mapped_codes_equal_the_plain_twin() {
        let Some(dev) = test_device() else { return };
        let stream = TileStream::new(dev.clone());
        let mut table = [0u8; 256];
        for (i, t) in table.iter_mut().enumerate() {
            *t = (i * 37 % 251) as u8;
        }
        let table_buf = dev.buffer_from(&table, CL_MEM_READ_WRITE).unwrap();
        for n in [1usize, 3, 4, 5, 255, 4099, 70_001] {
            let codes: Vec<u8> = (0..n).map(|i| (i * 13 + i / 7) as u8).collect();
            let mut buf = dev.buffer_from(&codes, CL_MEM_READ_WRITE).unwrap();
            let mut flight = stream.flight();
            // A tail past n must stay untouched.
            let n_mapped = n - n / 5;
            unsafe { stream.write(&mut flight, &mut buf, &codes).unwrap() };
            stream
                .map_codes(&mut flight, &buf, &table_buf, n_mapped)
                .unwrap();
            stream.finish(&mut flight).unwrap();
            let mut got = vec![0u8; n];
            dev.download(&buf, &mut got).unwrap();
            let mut want = codes.clone();
            // The definition (the core's `classes::map_bytes` is its
            // parallel host twin).
            want[..n_mapped]
                .iter_mut()
                .for_each(|c| *c = table[*c as usize]);
            assert_eq!(got, want, "n {n}");
        }
    }

    /// A bounded launch covers every output once, whatever its shape:
    /// sizes that no work-group divides (the global rounded up on CPU
    /// devices, whose work-items past the bounds return at once).
    #[test]
    fn bounded_launches_cover_every_output_once() {
        let Some(dev) = test_device() else { return };
        let src = "__kernel void mark(__global uint *a, uint w, uint h) {
            uint x = get_global_id(0), y = get_global_id(1);
            if (x >= w || y >= h) return;
            a[y * w + x] += 1 + x + 1000 * y;
        }";
        let program = dev
            .program_from_source("bounded_test", src, &BuildOptions::new())
            .unwrap();
        let stream = TileStream::new(dev.clone());
        if dev.info().kind == crate::DeviceKind::Cpu {
            assert!(dev.bounded_local(2).is_some(), "a CPU device's shape");
        }
        for (w, h) in [(1usize, 1usize), (13, 7), (33, 5), (128, 4), (257, 9)] {
            let zeros = vec![0u32; w * h];
            let buf = dev.buffer_from(&zeros, CL_MEM_READ_WRITE).unwrap();
            let kernel = opencl3::kernel::Kernel::create(&program, "mark").unwrap();
            Args::new(&kernel)
                .mem(&buf)
                .scalar(w as u32)
                .scalar(h as u32)
                .done()
                .unwrap();
            let mut flight = stream.flight();
            stream
                .launch_bounded(&mut flight, &kernel, &[w, h])
                .unwrap();
            stream.finish(&mut flight).unwrap();
            let mut got = vec![0u32; w * h];
            dev.download(&buf, &mut got).unwrap();
            let want: Vec<u32> = (0..w * h)
                .map(|i| (1 + i % w + 1000 * (i / w)) as u32)
                .collect();
            assert_eq!(got, want, "{w}x{h}");
        }
    }

    /// Several tiles in flight at once on one stream, each on a slot of its
    /// own from the pool, come back in order and intact; slots are reused.
    #[test]
    fn tiles_in_flight_round_trip_and_reuse_slots() {
        let Some(dev) = test_device() else { return };
        let src = "__kernel void add1(__global uint *a) { a[get_global_id(0)] += 1; }";
        let program = dev
            .program_from_source("stream_test", src, &BuildOptions::new())
            .unwrap();
        let stream = TileStream::new(dev.clone());
        #[derive(Default)]
        struct Slot {
            buf: Grow<u32>,
            up: Option<PinnedHost<u32>>,
            down: Vec<u32>,
        }
        let pool = SlotPool::<Slot>::default();
        let mut in_flight = std::collections::VecDeque::new();
        let mut results = Vec::new();
        for tile in 0..6u32 {
            let n = 1000 + tile as usize * 7;
            let mut slot = pool.take();
            let mut flight = Flight::default();
            let up = PinnedHost::ensure(&mut slot.up, &dev, n).unwrap();
            for (i, v) in up.as_mut_slice()[..n].iter_mut().enumerate() {
                *v = tile * 10_000 + i as u32;
            }
            slot.down.resize(n, 0);
            let buf = slot.buf.get(&dev, n, CL_MEM_READ_WRITE).unwrap();
            let kernel = opencl3::kernel::Kernel::create(&program, "add1").unwrap();
            unsafe {
                let up = slot.up.as_ref().unwrap();
                stream.write(&mut flight, buf, &up.as_slice()[..n]).unwrap();
            }
            stream.flush_uploads().unwrap();
            Args::new(&kernel).mem(slot.buf.buf()).done().unwrap();
            stream.launch(&mut flight, &kernel, &[n], None).unwrap();
            flight.keep(kernel);
            stream.flush_kernels().unwrap();
            unsafe {
                let (b, d) = (&slot.buf, &mut slot.down);
                stream.read(&mut flight, b.buf(), d).unwrap();
            }
            stream.flush_downloads().unwrap();
            in_flight.push_back((tile, n, slot, flight));
            if in_flight.len() > 2 {
                let (t, n, slot, mut flight) = in_flight.pop_front().unwrap();
                stream.finish(&mut flight).unwrap();
                results.push((t, n, slot.down.clone()));
                pool.give(slot);
            }
        }
        for (t, n, slot, mut flight) in in_flight {
            stream.finish(&mut flight).unwrap();
            results.push((t, n, slot.down.clone()));
            pool.give(slot);
        }
        for (i, (t, n, down)) in results.iter().enumerate() {
            assert_eq!(*t, i as u32);
            let want: Vec<u32> = (0..*n).map(|j| t * 10_000 + j as u32 + 1).collect();
            assert_eq!(down, &want);
        }
        // Three tiles were in flight at most: the pool holds three slots.
        assert_eq!(pool.lock().len(), 3);
    }
}
