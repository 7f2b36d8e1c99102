//! A whole pyramid held on an OpenCL device, in one of the three storages
//! issue 23's reference compared, and Scharr ∂x/∂y run over every level from
//! there (`kernels/pyramid_scharr.cl`):
//!
//! - [`Store::Lut`]: one buffer holding every level (rows padded to a
//!   pitch), found through a level table (offset, width, height, pitch); one
//!   launch covers the whole pyramid.
//! - [`Store::Image`]: one `image2d_t` per level, one launch per level.
//! - [`Store::Separate`]: one buffer per level, one launch per level.
//!
//! The levels go up once and stay on the device for every filter run over
//! them; the derivatives of all levels land in one Float32 buffer (per
//! level ∂x then ∂y). The three kernels share the border mapping and the
//! host reference's order of operations ([`Scharr::reference`], which
//! [`scharr_host`] wraps), so every storage gives the host's bits.
//! `MAPFILTER_PYRAMID_STORE` ([`crate::switches`]) picks the storage.

use super::pyramid_build::BuiltLevels;
use crate::bail;
use crate::device::{
    Args, Buffer, BuildOptions, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, Device, Event, Image, Kernel,
    Queue, event_ns,
};
use crate::device::{
    CL_FLOAT, CL_MEM_COPY_HOST_PTR, CL_MEM_OBJECT_IMAGE2D, CL_R, CL_SIGNED_INT16, CL_UNSIGNED_INT8,
    CL_UNSIGNED_INT16, cl_image_desc, cl_image_format,
};
use crate::error::{Error, Result, Setting};
use crate::filter::border::{BorderMode, Win, pad};
use crate::filter::scharr::Scharr;
use crate::pixel::{Pixel, Plane, SampleType};

/// How a pyramid's levels are held on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    Lut,
    Image,
    Separate,
}

const HINT: &str = "set MAPFILTER_PYRAMID_STORE to lut, image or separate";

/// Elements of a level-table row: offset, width, height, pitch, first row
/// in the launch's row space, output offset.
const LUT_ROW: usize = 6;

impl Store {
    pub const ALL: [Store; 3] = [Store::Lut, Store::Image, Store::Separate];

    /// The storage without a switch: images, the fastest of the three on
    /// the GPU (BENCHMARKS.md, "Pyramids, demosaic, colour"); PoCL has
    /// them too.
    pub const DEFAULT: Store = Store::Image;

    pub fn name(self) -> &'static str {
        match self {
            Store::Lut => "lut",
            Store::Image => "image",
            Store::Separate => "separate",
        }
    }

    pub fn parse(s: &str) -> Result<Store> {
        match Self::ALL.into_iter().find(|st| st.name() == s.trim()) {
            Some(st) => Ok(st),
            None => bail!(usage, format!("unknown pyramid store '{s}'"), hint = HINT),
        }
    }

    /// The storage `MAPFILTER_PYRAMID_STORE` names, else [`Store::DEFAULT`].
    pub fn chosen() -> Result<Store> {
        match &crate::switches::get().pyramid_store {
            Some(s) => Self::parse(s),
            None => Ok(Self::DEFAULT),
        }
    }
}

/// Where one level lies in the single-buffer storage and in the output.
#[derive(Clone, Copy, Debug)]
struct Slot {
    width: usize,
    height: usize,
    /// Element offset and row pitch in the single buffer (separate buffers
    /// and images use offset 0 and pitch = width).
    offset: usize,
    pitch: usize,
    /// Float offset of the level's ∂x in the output (∂y follows).
    out: usize,
}

enum Held<T> {
    Lut { data: Buffer<T>, table: Buffer<i32> },
    Images(Vec<Image>),
    Separate(Vec<Buffer<T>>),
}

/// A pyramid's levels on a device, with the output buffer its filters write.
pub struct DevicePyramid<T> {
    store: Store,
    slots: Vec<Slot>,
    held: Held<T>,
    out: Buffer<f32>,
}

/// Level rows in the single buffer start on multiples of this many elements.
const PITCH_ALIGN: usize = 32;

impl<T: Pixel> DevicePyramid<T> {
    /// Uploads `levels` (finest first) into storage `store`.
    pub fn upload(dev: &Device, store: Store, levels: &[Plane<T>]) -> Result<Self> {
        let sizes: Vec<_> = levels.iter().map(|l| (l.width, l.height)).collect();
        let (slots, offset, out) = layout(store, &sizes)?;
        let held = match store {
            Store::Lut => {
                let mut data = vec![T::default(); offset];
                for (l, s) in levels.iter().zip(&slots) {
                    for y in 0..l.height {
                        let at = s.offset + y * s.pitch;
                        data[at..at + l.width].copy_from_slice(l.row(y));
                    }
                }
                Held::Lut {
                    data: dev.buffer_from(&data, CL_MEM_READ_ONLY)?,
                    table: lut_table(dev, &slots)?,
                }
            }
            Store::Separate => Held::Separate(
                levels
                    .iter()
                    .map(|l| dev.buffer_from(&l.data, CL_MEM_READ_ONLY))
                    .collect::<Result<_>>()?,
            ),
            Store::Image => Held::Images(
                levels
                    .iter()
                    .map(|l| image_of(dev, l))
                    .collect::<Result<_>>()?,
            ),
        };
        Ok(DevicePyramid {
            store,
            slots,
            held,
            out: dev.buffer(out, CL_MEM_READ_WRITE)?,
        })
    }

    /// Takes levels built on the device ([`BuiltLevels`]) into storage
    /// `store` without a round trip through the host: separate buffers are
    /// the built ones, the single buffer and the images are filled by
    /// device-side copies. Waits for the copies.
    pub fn from_built(dev: &Device, store: Store, built: BuiltLevels<T>) -> Result<Self> {
        let (slots, offset, out) = layout(store, &built.sizes)?;
        let q = dev.queue(Queue::Compute);
        let sz = std::mem::size_of::<T>();
        let held = match store {
            Store::Separate => Held::Separate(built.levels),
            Store::Lut => {
                let mut data = dev.buffer::<T>(offset, CL_MEM_READ_WRITE)?;
                for (b, s) in built.levels.iter().zip(&slots) {
                    let src_origin = [0usize; 3];
                    let dst_origin = [s.offset * sz, 0, 0];
                    let region = [s.width * sz, s.height, 1];
                    // SAFETY: both rectangles lie inside their buffers (the
                    // layout's offsets and pitches); the copy is waited for below.
                    unsafe {
                        q.enqueue_copy_buffer_rect(
                            b,
                            &mut data,
                            src_origin.as_ptr(),
                            dst_origin.as_ptr(),
                            region.as_ptr(),
                            s.width * sz,
                            0,
                            s.pitch * sz,
                            0,
                            &[],
                        )
                    }
                    .map_err(crate::device::cl_error("copying a pyramid level"))?;
                }
                Held::Lut {
                    data,
                    table: lut_table(dev, &slots)?,
                }
            }
            Store::Image => {
                let mut images = Vec::with_capacity(slots.len());
                for (b, s) in built.levels.iter().zip(&slots) {
                    let mut img = image_empty::<T>(dev, s.width, s.height)?;
                    let origin = [0usize; 3];
                    let region = [s.width, s.height, 1];
                    // SAFETY: the buffer holds width × height samples of the
                    // image's format; the copy is waited for below.
                    unsafe {
                        q.enqueue_copy_buffer_to_image(
                            b,
                            &mut img,
                            0,
                            origin.as_ptr(),
                            region.as_ptr(),
                            &[],
                        )
                    }
                    .map_err(crate::device::cl_error("copying a pyramid level"))?;
                    images.push(img);
                }
                Held::Images(images)
            }
        };
        dev.finish()?;
        Ok(DevicePyramid {
            store,
            slots,
            held,
            out: dev.buffer(out, CL_MEM_READ_WRITE)?,
        })
    }

    pub fn store(&self) -> Store {
        self.store
    }

    /// Enqueues Scharr of `scharr`'s size over every level (no nodata) and
    /// waits; returns the profiled kernel time in nanoseconds.
    pub fn scharr(&mut self, dev: &Device, scharr: Scharr, border: BorderMode) -> Result<u64> {
        let fill = match border {
            BorderMode::Nodata => bail!(
                usage,
                "the device pyramid has no nodata border",
                hint = format!(
                    "use {}, replicate or constant",
                    Setting::Border.is("reflect101")
                )
            ),
            b => b.fill::<T>(None).to_f32(),
        };
        let opts = BuildOptions::new()
            .define("T", T::TYPE.cl_type())
            .define("IMG_READ", image_read(T::TYPE))
            .define("R", scharr.radius())
            .define("BORDER", border.cl_code())
            .define("FILL", cl_float(fill));
        let kernel = |name: &str| dev.kernel("pyramid_scharr", &opts, name);
        let out = &self.out;
        let mut events: Vec<Event> = Vec::new();
        match &self.held {
            Held::Lut { data, table } => {
                let k = kernel("scharr_lut")?;
                let widest = self.slots.iter().map(|s| s.width).max().unwrap_or(1);
                let rows: usize = self.slots.iter().map(|s| s.height).sum();
                Args::new(&k)
                    .mem(data)
                    .mem(table)
                    .scalar(self.slots.len() as i32)
                    .mem(out)
                    .done()?;
                events.push(launch(dev, &k, widest, rows)?);
            }
            Held::Separate(bufs) => {
                let k = kernel("scharr_level")?;
                for (b, s) in bufs.iter().zip(&self.slots) {
                    Args::new(&k)
                        .mem(b)
                        .scalar(s.width as i32)
                        .scalar(s.height as i32)
                        .scalar(s.pitch as i32)
                        .mem(out)
                        .scalar(s.out as i32)
                        .done()?;
                    events.push(launch(dev, &k, s.width, s.height)?);
                }
            }
            Held::Images(images) => {
                let k = kernel("scharr_image")?;
                for (img, s) in images.iter().zip(&self.slots) {
                    Args::new(&k)
                        .mem(img)
                        .scalar(s.width as i32)
                        .scalar(s.height as i32)
                        .mem(out)
                        .scalar(s.out as i32)
                        .done()?;
                    events.push(launch(dev, &k, s.width, s.height)?);
                }
            }
        }
        dev.finish()?;
        Ok(events.iter().map(event_ns).sum())
    }

    /// The last filter's ∂x and ∂y of every level, downloaded.
    pub fn download(&self, dev: &Device) -> Result<Vec<[Plane<f32>; 2]>> {
        let total = self
            .slots
            .last()
            .map_or(0, |s| s.out + 2 * s.width * s.height);
        let mut all = vec![0f32; total];
        dev.download(&self.out, &mut all)?;
        Ok(self
            .slots
            .iter()
            .map(|s| {
                let n = s.width * s.height;
                let part = |i: usize| {
                    let at = s.out + i * n;
                    Plane::new(s.width, s.height, all[at..at + n].to_vec())
                };
                [part(0), part(1)]
            })
            .collect())
    }
}

/// Where each level of `sizes` lies in `store`: the slots, the single
/// buffer's length (elements) and the output's (floats).
fn layout(store: Store, sizes: &[(usize, usize)]) -> Result<(Vec<Slot>, usize, usize)> {
    if sizes.is_empty() || sizes.iter().any(|&(w, h)| w == 0 || h == 0) {
        bail!(
            internal,
            "a device pyramid needs at least one non-empty level",
            hint = "check the pyramid's sizes"
        );
    }
    let mut slots = Vec::with_capacity(sizes.len());
    let (mut offset, mut out) = (0usize, 0usize);
    for &(width, height) in sizes {
        let pitch = match store {
            Store::Lut => width.next_multiple_of(PITCH_ALIGN),
            _ => width,
        };
        slots.push(Slot {
            width,
            height,
            offset,
            pitch,
            out,
        });
        if store == Store::Lut {
            offset += pitch * height;
        }
        out += 2 * width * height;
    }
    if offset.max(out) > i32::MAX as usize {
        bail!(
            resource,
            format!("a pyramid of {out} output values is too large for one device buffer"),
            hint = "use fewer or smaller levels"
        );
    }
    Ok((slots, offset, out))
}

/// The single buffer's level table (see [`LUT_ROW`]).
fn lut_table(dev: &Device, slots: &[Slot]) -> Result<Buffer<i32>> {
    let mut rows = 0;
    let mut table = Vec::with_capacity(LUT_ROW * slots.len());
    for s in slots {
        table.extend([s.offset, s.width, s.height, s.pitch, rows, s.out].map(|v| v as i32));
        rows += s.height;
    }
    dev.buffer_from(&table, CL_MEM_READ_ONLY)
}

/// The plain host counterpart of the device kernels: Scharr of one whole
/// level (no nodata) with `border` beyond its edges, as ∂x and ∂y.
pub fn scharr_host<T: Pixel>(
    level: &Plane<T>,
    scharr: Scharr,
    border: BorderMode,
) -> [Plane<f32>; 2] {
    let (w, h) = (level.width, level.height);
    let r = scharr.radius();
    let whole = Win::new(0, 0, w, h);
    let padded = pad(
        level,
        whole,
        (w, h),
        whole.grow(r),
        border,
        border.fill::<T>(None),
    );
    let [dx, dy]: [Plane<f32>; 2] = scharr
        .reference(&[padded], None)
        .try_into()
        .expect("one band gives two planes");
    [dx, dy]
}

fn image_of<T: Pixel>(dev: &Device, level: &Plane<T>) -> Result<Image> {
    // SAFETY: the host pointer covers width × height samples, copied at creation.
    unsafe {
        image_with(
            dev,
            T::TYPE,
            (level.width, level.height),
            CL_MEM_COPY_HOST_PTR,
            level.data.as_ptr() as *mut _,
        )
    }
}

/// An image of `w`×`h` samples of `T`, filled later on the device.
fn image_empty<T: Pixel>(dev: &Device, w: usize, h: usize) -> Result<Image> {
    // SAFETY: no host pointer.
    unsafe { image_with(dev, T::TYPE, (w, h), 0, std::ptr::null_mut()) }
}

/// A read-only single-channel image of `t` samples.
///
/// # Safety
/// With `CL_MEM_COPY_HOST_PTR` in `flags`, `host` must point to `w × h`
/// samples of `t`; else it must be null.
unsafe fn image_with(
    dev: &Device,
    t: SampleType,
    (w, h): (usize, usize),
    flags: u64,
    host: *mut std::ffi::c_void,
) -> Result<Image> {
    let format = cl_image_format {
        image_channel_order: CL_R,
        image_channel_data_type: match t {
            SampleType::U8 => CL_UNSIGNED_INT8,
            SampleType::U16 => CL_UNSIGNED_INT16,
            SampleType::I16 => CL_SIGNED_INT16,
            SampleType::F32 => CL_FLOAT,
        },
    };
    // SAFETY: a zeroed descriptor is valid; the fields that matter are set.
    let mut desc: cl_image_desc = unsafe { std::mem::zeroed() };
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = w;
    desc.image_height = h;
    // SAFETY: the caller vouches for `host`.
    unsafe {
        Image::create(
            dev.context(),
            CL_MEM_READ_ONLY | flags,
            &format,
            &desc,
            host,
        )
    }
    .map_err(|e| {
        Error::device(format!(
            "cannot create a {w}x{h} image on {}: {e}",
            dev.info().name
        ))
        .hint(HINT)
    })
}

/// The image read built-in for samples of type `t` (single-channel formats).
fn image_read(t: SampleType) -> &'static str {
    match t {
        SampleType::F32 => "read_imagef",
        SampleType::U8 | SampleType::U16 => "read_imageui",
        SampleType::I16 => "read_imagei",
    }
}

fn cl_float(v: f32) -> String {
    if v.is_nan() {
        "NAN".into()
    } else {
        format!("({v:?}f)")
    }
}

fn launch(dev: &Device, k: &Kernel, w: usize, h: usize) -> Result<Event> {
    dev.launch(Queue::Compute, k, &[w, h], Some(&[16, 16]), &[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::test_device;

    fn level<T: Pixel>(w: usize, h: usize, seed: u32) -> Plane<T> {
        let data = (0..w * h)
            .map(|i| {
                let v = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 24;
                T::from_f32(v as f32 * 0.75)
            })
            .collect();
        Plane::new(w, h, data)
    }

    /// Odd sizes, one-pixel levels and levels narrower than the tap spacing.
    fn pyramid<T: Pixel>() -> Vec<Plane<T>> {
        [
            (37, 23),
            (37, 23),
            (19, 12),
            (10, 6),
            (5, 3),
            (2, 1),
            (1, 1),
        ]
        .iter()
        .enumerate()
        .map(|(i, &(w, h))| level(w, h, i as u32 * 77))
        .collect()
    }

    fn check<T: Pixel>(dev: &Device, sizes: &[usize], borders: &[BorderMode]) {
        let levels = pyramid::<T>();
        let mut held: Vec<_> = Store::ALL
            .iter()
            .map(|&st| DevicePyramid::upload(dev, st, &levels).unwrap())
            .collect();
        for &size in sizes {
            let s = Scharr::new(size).unwrap();
            for &border in borders {
                let want: Vec<_> = levels.iter().map(|l| scharr_host(l, s, border)).collect();
                for p in &mut held {
                    p.scharr(dev, s, border).unwrap();
                    let got = p.download(dev).unwrap();
                    for (l, (g, w)) in got.iter().zip(&want).enumerate() {
                        for d in 0..2 {
                            let same = g[d]
                                .data
                                .iter()
                                .zip(&w[d].data)
                                .all(|(a, b)| a.to_bits() == b.to_bits());
                            assert!(
                                same,
                                "{:?} {:?} scharr:{size} {border:?} level {l} d{d}",
                                T::TYPE,
                                p.store()
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_store_equals_the_host() {
        let Some(dev) = test_device() else { return };
        check::<u8>(&dev, &[3, 5, 7, 9], &[BorderMode::Reflect101]);
        check::<u8>(
            &dev,
            &[5],
            &[BorderMode::Replicate, BorderMode::Constant(7.0)],
        );
        check::<f32>(&dev, &[3, 9], &[BorderMode::Reflect101]);
        check::<i16>(&dev, &[7], &[BorderMode::Reflect101]);
    }

    #[test]
    fn stores_parse_by_name() {
        for st in Store::ALL {
            assert_eq!(Store::parse(st.name()).unwrap(), st);
        }
        assert!(Store::parse("array").is_err());
    }
}
