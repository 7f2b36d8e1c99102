//! Image ops on OpenCL devices: every op of a chain runs as one kernel of
//! `kernels/filter_*.cl` (work-groups load their tile plus halo into local
//! memory, mapping the border in the load), and intermediates stay on the
//! device between ops; only the tile's input goes up and its result down.
//!
//! Kernels are specialised with `-D` options (sample types, radius, border,
//! nodata, bands, op parameters), built once per option set through the
//! device layer's program cache. Each kernel mirrors its host reference
//! operation for operation (no contraction, correctly rounded division), so
//! results match the reference bit for bit, except where a similarity needs
//! `exp` (bilateral on Float32 or by luma), which may differ in the last bits.

use super::bilateral::Distance;
use super::border::{BorderMode, Win};
use super::engine::ChainRunner;
use super::histogram::{BandHistogram, Binning};
use super::median;
use super::op::{Chain, Op, TileAt};
use super::pixel::{Bands, Pixel, Plane, SampleType};
use crate::bail;
use crate::device::{
    Args, Buffer, BuildOptions, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, Device, DeviceChoice,
    DeviceTimes, Event, Kernel, Queue, TimeCounters, event_ns, raw_source, source,
};
use crate::error::Result;
use crate::with_bands;
use std::time::Instant;

/// Work-group side.
const LOCAL: usize = 16;

/// The runner `--device` names (`auto`, `cpu`, `gpu`, `INDEX`; `host` gives the host runner).
pub fn runner(device: &str) -> Result<Box<dyn ChainRunner>> {
    match DeviceChoice::from_arg(Some(device))?.resolve()? {
        Some(dev) => Ok(Box::new(DeviceRunner::new(dev))),
        None => Ok(Box::new(super::engine::HostRunner::default())),
    }
}

/// Runs chains on one OpenCL device.
pub struct DeviceRunner {
    pub device: Device,
    /// Upload, kernel and download times of every tile so far.
    pub times: TimeCounters,
}

impl DeviceRunner {
    pub fn new(device: Device) -> Self {
        DeviceRunner {
            device,
            times: TimeCounters::default(),
        }
    }

    /// Refuses ops that have no kernel.
    pub fn check(&self, chain: &Chain) -> Result<()> {
        for op in &chain.ops {
            if let Op::Median(m) = op
                && m.size > 5
            {
                bail!(
                    format!("median:{} has no OpenCL kernel (sizes 3 and 5 do)", m.size),
                    hint = "use --device host for larger medians"
                );
            }
        }
        Ok(())
    }

    fn kernel(
        &self,
        op: &Op,
        t: SampleType,
        bands: usize,
        border: BorderMode,
        nd: Option<f64>,
    ) -> Result<Kernel> {
        let to = op.out_type(t);
        let joint = matches!(op, Op::Oil(_))
            || matches!(op, Op::Bilateral(b) if b.distance != Distance::Gray);
        let nb = if joint { bands } else { 1 };
        let mut opts = BuildOptions::new()
            .define("T", t.cl_type())
            .define("TO", to.cl_type())
            .define("TO_INT", (to != SampleType::F32) as u8)
            .define("R", op.radius())
            .define("LX", LOCAL)
            .define("LY", LOCAL)
            .define("BORDER", border.cl_code())
            .define("HAS_ND", nd.is_some() as u8)
            .define("NB", nb)
            .raw("-cl-fp32-correctly-rounded-divide-sqrt");
        if let Some(v) = nd {
            opts = opts.define("ND", cl_float(v));
        }
        let local_bytes = nb * (LOCAL + 2 * op.radius()).pow(2) * 4;
        if local_bytes as u64 > self.device.info().local_mem {
            bail!(
                format!(
                    "radius {} needs {local_bytes} bytes of local memory, the device has {}",
                    op.radius(),
                    self.device.info().local_mem
                ),
                hint = "use --device host for this op"
            );
        }
        let (file, name, prelude) = match op {
            Op::Conv(c) => {
                opts = opts.define("N", c.size);
                ("filter_conv", "conv", String::new())
            }
            Op::Median(m) => {
                opts = opts.define("N", m.size);
                let net = format!("#define NETWORK {}\n", median::network_cl(m.size * m.size));
                ("filter_median", "median", net)
            }
            Op::Scharr(_) => ("filter_scharr", "scharr", String::new()),
            Op::Bilateral(b) => {
                let table = b.similarity_table(t, bands).is_some();
                opts = opts
                    .define("DIST", b.distance as u8)
                    .define("NTAPS", b.taps().len())
                    .define("SIM_TABLE", table as u8);
                ("filter_bilateral", "bilateral", String::new())
            }
            Op::Oil(o) => {
                opts = opts.define("LEVELS", o.levels);
                match t.range() {
                    Some((lo, hi)) => {
                        opts = opts
                            .define("INT_BINS", 1)
                            .define("LO", lo as i64)
                            .define("SPAN", (hi - lo) as i64 + 1);
                    }
                    None => opts = opts.define("INT_BINS", 0),
                }
                ("filter_oil", "oil", String::new())
            }
        };
        let text = format!(
            "{}\n{prelude}{}",
            source("filter_tile").expect("embedded"),
            raw_source(file).expect("embedded")
        );
        let cache_name = match op {
            Op::Median(m) => format!("{file}_{}", m.size),
            _ => file.to_string(),
        };
        let program = self.device.program_from_source(&cache_name, &text, &opts)?;
        Kernel::create(&program, name).map_err(crate::device::cl_error("creating a kernel"))
    }

    /// Launches one op from `src` (window `have`) into a new buffer (window `out`).
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        op: &Op,
        src: &Buffer<u8>,
        t: SampleType,
        bands: usize,
        geo: Geo,
        border: BorderMode,
        nd: Option<f64>,
        keep: &mut Vec<Buffer<f32>>,
    ) -> Result<(Buffer<u8>, Event)> {
        let dev = &self.device;
        let to = op.out_type(t);
        let out_bands = op.out_bands(bands);
        let out_len = out_bands * geo.out.width * geo.out.height * to.size();
        let dst = dev.buffer::<u8>(out_len, CL_MEM_READ_WRITE)?;
        let kernel = self.kernel(op, t, bands, border, nd)?;
        let fill = match border {
            BorderMode::Constant(v) => round_to(t, v as f32),
            BorderMode::Nodata => nd.unwrap_or(0.0) as f32,
            _ => 0.0,
        };
        let nd_out = match (nd, to == t) {
            (Some(v), true) => v as f32,
            _ => f32::NAN,
        };
        let mut args = Args::new(&kernel).mem(src).mem(&dst);
        let joint;
        match op {
            Op::Conv(c) => {
                keep.push(dev.buffer_from(&c.weights, CL_MEM_READ_ONLY)?);
                args = args.mem(keep.last().expect("pushed")).scalar(c.scale);
                joint = false;
            }
            Op::Median(_) | Op::Scharr(_) => joint = false,
            Op::Bilateral(b) => {
                let taps: Vec<f32> = b
                    .taps()
                    .iter()
                    .flat_map(|t| [t.dx as f32, t.dy as f32, t.closeness, 0.0])
                    .collect();
                keep.push(dev.buffer_from(&taps, CL_MEM_READ_ONLY)?);
                let sim = b.similarity_table(t, bands).unwrap_or(vec![0.0]);
                keep.push(dev.buffer_from(&sim, CL_MEM_READ_ONLY)?);
                let n = keep.len();
                let inv2 = (0.5 / (b.sigma_r * b.sigma_r)) as f32;
                args = args.mem(&keep[n - 2]).mem(&keep[n - 1]).scalar(inv2);
                joint = b.distance != Distance::Gray;
            }
            Op::Oil(o) => {
                let (lo, hi) = o.range.unwrap_or((0.0, 1.0));
                args = args.scalar(lo as f32).scalar(hi as f32);
                joint = true;
            }
        }
        let g = geo;
        args.scalar(nd_out)
            .scalar(g.have.x as i32)
            .scalar(g.have.y as i32)
            .scalar(g.have.width as i32)
            .scalar(g.have.height as i32)
            .scalar(g.image.0 as i32)
            .scalar(g.image.1 as i32)
            .scalar(g.out.x as i32)
            .scalar(g.out.y as i32)
            .scalar(g.out.width as i32)
            .scalar(g.out.height as i32)
            .scalar(fill)
            .done()?;
        let z = if joint { 1 } else { bands };
        let event = dev.launch(
            Queue::Compute,
            &kernel,
            &[g.out.width, g.out.height, z],
            Some(&[LOCAL, LOCAL, 1]),
            &[],
        )?;
        Ok((dst, event))
    }
}

/// Where an op reads and writes.
#[derive(Clone, Copy, Debug)]
struct Geo {
    have: Win,
    image: (usize, usize),
    out: Win,
}

/// A float literal for `-D`.
fn cl_float(v: f64) -> String {
    if v.is_nan() {
        "NAN".into()
    } else {
        format!("({:?}f)", v as f32)
    }
}

/// `v` as the host pads a constant border of type `t` (rounded, saturated).
fn round_to(t: SampleType, v: f32) -> f32 {
    crate::with_type!(t, T => T::from_f32(v).to_f32())
}

/// The bytes of planes, band after band.
fn to_bytes(bands: &Bands) -> Vec<u8> {
    fn typed<T: Pixel>(p: &[Plane<T>]) -> Vec<u8> {
        let mut out = Vec::new();
        for plane in p {
            // SAFETY: sample types are plain numbers; any byte view of them is valid.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    plane.data.as_ptr() as *const u8,
                    std::mem::size_of_val(plane.data.as_slice()),
                )
            };
            out.extend_from_slice(bytes);
        }
        out
    }
    with_bands!(bands, p => typed(p))
}

/// Planes of type `t` from bytes, band after band.
fn from_bytes(t: SampleType, bytes: &[u8], n: usize, w: usize, h: usize) -> Bands {
    fn typed<T: Pixel>(bytes: &[u8], n: usize, w: usize, h: usize) -> Bands {
        let size = std::mem::size_of::<T>();
        T::wrap(
            (0..n)
                .map(|b| {
                    let mut data = vec![T::default(); w * h];
                    let src = &bytes[b * w * h * size..(b + 1) * w * h * size];
                    // SAFETY: `data` has exactly src.len() bytes; every bit pattern is a valid sample.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            src.as_ptr(),
                            data.as_mut_ptr() as *mut u8,
                            src.len(),
                        )
                    };
                    Plane::new(w, h, data)
                })
                .collect(),
        )
    }
    crate::with_type!(t, T => typed::<T>(bytes, n, w, h))
}

impl ChainRunner for DeviceRunner {
    fn name(&self) -> String {
        format!("OpenCL {}", self.device.info().name)
    }

    fn device_times(&self) -> Option<DeviceTimes> {
        Some(self.times.take())
    }

    fn run(&self, chain: &Chain, input: Bands, at: &TileAt) -> Result<Bands> {
        self.check(chain)?;
        let dev = &self.device;
        let t0 = Instant::now();
        let mut buf = dev.buffer_from(&to_bytes(&input), CL_MEM_READ_WRITE)?;
        let upload = t0.elapsed();
        let (mut t, mut bands, mut have, mut nd) =
            (input.sample_type(), input.count(), at.have, at.nd);
        let mut keep = Vec::new();
        let mut events = Vec::new();
        for (op, target) in chain.steps(at) {
            let geo = Geo {
                have,
                image: at.image,
                out: target,
            };
            let (next, event) = self.launch(op, &buf, t, bands, geo, at.border, nd, &mut keep)?;
            events.push(event);
            buf = next;
            if op.out_type(t) != t {
                nd = nd.map(|_| f64::NAN);
            }
            t = op.out_type(t);
            bands = op.out_bands(bands);
            have = target;
        }
        let out = at.out;
        let mut bytes = vec![0u8; bands * out.width * out.height * t.size()];
        let t1 = Instant::now();
        dev.download(&buf, &mut bytes)?;
        let kernel_ns: u64 = events.iter().map(event_ns).sum();
        let download = t1.elapsed().as_nanos() as u64;
        self.times.add(DeviceTimes {
            upload_ns: upload.as_nanos() as u64,
            kernel_ns,
            download_ns: download.saturating_sub(kernel_ns),
        });
        drop(keep);
        Ok(from_bytes(t, &bytes, bands, out.width, out.height))
    }
}

/// Histogram of one plane on the device (see `kernels/filter_histogram.cl`).
pub fn histogram<T: Pixel>(
    dev: &Device,
    plane: &Plane<T>,
    band: usize,
    b: &Binning,
    nd: Option<T>,
) -> Result<BandHistogram> {
    let mut opts = BuildOptions::new()
        .define("T", T::TYPE.cl_type())
        .define("BINS", b.bins)
        .define("HAS_ND", nd.is_some() as u8);
    if let Some(v) = nd {
        opts = opts.define("ND", cl_float(v.to_f32() as f64));
    }
    if (b.bins + 2) * 4 > dev.info().local_mem as usize {
        bail!(
            format!("{} bins do not fit the device's local memory", b.bins),
            hint = "use fewer bins or --device host"
        );
    }
    let kernel = dev.kernel("filter_histogram", &opts, "histogram")?;
    let n = plane.data.len();
    let bytes = to_bytes(&T::wrap(vec![plane.clone()]));
    let src = dev.buffer_from(&bytes, CL_MEM_READ_ONLY)?;
    let counts = dev.buffer_from(&vec![0u32; b.bins + 2], CL_MEM_READ_WRITE)?;
    Args::new(&kernel)
        .mem(&src)
        .scalar(n as u64)
        .scalar(b.lo as f32)
        .scalar(b.hi as f32)
        .scalar(b.scale())
        .mem(&counts)
        .done()?;
    let groups = (n.div_ceil(256 * 64)).clamp(1, 1024);
    dev.launch(Queue::Compute, &kernel, &[groups * 256], Some(&[256]), &[])?;
    let mut out = vec![0u32; b.bins + 2];
    dev.download(&counts, &mut out)?;
    let mut h = BandHistogram::new(band, b);
    h.counts = out[..b.bins].iter().map(|&c| c as u64).collect();
    h.outside = out[b.bins] as u64;
    h.nodata = out[b.bins + 1] as u64;
    Ok(h)
}
