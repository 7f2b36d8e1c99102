//! Image ops on OpenCL devices: every op of a chain runs as one kernel of
//! `kernels/filter_*.cl` (work-groups load their tile plus halo into local
//! memory, mapping the border in the load; pyramid steps and colour
//! conversions, which share no window between neighbours at one scale,
//! read global memory directly), and intermediates stay on the device
//! between ops; only the tile's input goes up and its result down.
//!
//! Kernels are specialised with `-D` options (sample types, radius, border,
//! nodata, bands, op parameters), built once per option set through the
//! device layer's program cache, and kept per op with their constant buffers
//! (weights, taps) for the runner's life. Each kernel mirrors its host
//! reference operation for operation (no contraction, correctly rounded
//! division), so results match the reference bit for bit, except where a
//! similarity needs `exp` (bilateral on Float32 or by luma), which may
//! differ in the last bits.
//!
//! Tiles stream through the device layer's [`TileStream`]: the engine
//! submits a tile ([`ChainRunner::submit`]) and finishes it up to
//! [`DeviceRunner::depth`] tiles later, so tile k+1 goes up and tile k−1
//! comes down while tile k's kernels run. A tile's memory (pinned staging,
//! device buffers) is a [`staging::Slot`] from a [`SlotPool`], reused by
//! later tiles; its commands' profiled times feed the `--timings` device
//! line through the stream's counters.
//!
//! Every op of a chain streams this way, each tile on its own window plus
//! halo. Denoising's level buffers are made per tile, so its submission
//! waits for its kernels (its tile still overlaps the others' transfers).
//! Histograms ([`histogram`]) are whole-raster statistics, not tiles: they
//! run one plane at a time outside the stream.

pub mod pyramid_build;
pub mod pyramid_levels;
pub mod pyramid_store;
mod staging;

use super::bilateral::Distance;
use super::border::{BorderMode, Win};
use super::color::Color;
use super::denoise::{Denoise, Plan};
use super::engine::{ChainRunner, Pending};
use super::histogram::{BandHistogram, Binning};
use super::laplacian::Detail;
use super::median;
use super::op::{Chain, Op, Step, TileAt};
use super::pyramid::Pyr;
use crate::bail;
use crate::device::{
    Args, Buffer, BuildOptions, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, Device, DeviceTimes, Flight,
    Kernel, Queue, SlotPool, TileStream, raw_source, source,
};
use crate::error::{Result, Setting};
use crate::pixel::{Bands, Pixel, Plane, SampleType};
use crate::with_bands;
use staging::Slot;
use std::any::Any;
use std::collections::HashMap;
use std::sync::Mutex;

/// Work-group side.
pub(super) const LOCAL: usize = 16;

/// Tiles in flight beyond the one being submitted (see [`DeviceRunner::depth`]).
pub const DEPTH: usize = 2;

/// Runs chains on one OpenCL device, several tiles in flight.
pub struct DeviceRunner {
    pub device: Device,
    /// The device's queues, and the upload, kernel and download times of
    /// every tile so far (profiled device time of the commands; with the
    /// overlap they may run at once).
    pub stream: TileStream,
    /// Tiles the engine keeps in flight beyond the one it submits (see
    /// [`DEPTH`]); 0 finishes every tile before the next goes up.
    pub depth: usize,
    /// Write results into the input's planes where the type matches (default);
    /// `false` allocates every result anew (to measure what that costs).
    pub recycle: bool,
    kernels: Mutex<HashMap<String, Built>>,
    slots: SlotPool<Slot>,
}

/// A tile in flight: its commands, the memory they use, and what its result
/// is made of. The flight is declared first: dropped unfinished (an error on
/// the way), it waits for its commands before the slot's memory goes.
struct InFlight {
    flight: Flight,
    slot: Slot,
    input: Option<Bands>,
    t_out: SampleType,
    bands_out: usize,
    size: (usize, usize),
}

/// A built kernel and the constant buffers its arguments point to.
struct Built {
    kernel: Kernel,
    consts: Vec<Buffer<f32>>,
}

impl DeviceRunner {
    pub fn new(device: Device) -> Self {
        DeviceRunner {
            stream: TileStream::new(device.clone()),
            device,
            depth: DEPTH,
            recycle: true,
            kernels: Mutex::default(),
            slots: SlotPool::default(),
        }
    }

    /// Refuses chains whose tiles do not fit the device's local memory.
    pub fn check(&self, chain: &Chain, bands: usize) -> Result<()> {
        let mut b = bands;
        for op in &chain.ops {
            let need = local_bytes(op, b);
            if need as u64 > self.device.info().local_mem {
                bail!(
                    device,
                    format!(
                        "radius {} needs {need} bytes of local memory, the device has {}",
                        op.radius(),
                        self.device.info().local_mem
                    ),
                    hint = format!("use {} for this op", Setting::Device.is("host"))
                );
            }
            b = op.out_bands(b);
        }
        Ok(())
    }

    /// The kernel of `op` on this input, built (and its constants uploaded) once.
    fn kernel<'a>(
        &self,
        cache: &'a mut HashMap<String, Built>,
        op: &Op,
        t: SampleType,
        bands: usize,
        border: BorderMode,
        nd: Option<f64>,
    ) -> Result<&'a Built> {
        let key = format!("{op:?} {t:?} {bands} {border:?} {nd:?}");
        if !cache.contains_key(&key) {
            let built = self.build(op, t, bands, border, nd)?;
            cache.insert(key.clone(), built);
        }
        Ok(&cache[&key])
    }

    fn build(
        &self,
        op: &Op,
        t: SampleType,
        bands: usize,
        border: BorderMode,
        nd: Option<f64>,
    ) -> Result<Built> {
        let dev = &self.device;
        let to = op.out_type(t);
        let nb = joint_bands(op, bands);
        let mut opts = tile_options(t, to, op.radius(), border, nd, nb);
        let mut consts = Vec::new();
        let (file, name, prelude) = match op {
            Op::Conv(c) => {
                opts = opts.define("N", c.size);
                consts.push(dev.buffer_from(&c.weights, CL_MEM_READ_ONLY)?);
                ("filter_conv", "conv", String::new())
            }
            Op::Median(m) if m.size <= 5 => {
                opts = opts.define("N", m.size);
                let net = format!("#define NETWORK {}\n", median::network_cl(m.size * m.size));
                ("filter_median", "median", net)
            }
            Op::Median(m) => {
                let (bits, min) = match t {
                    SampleType::U8 => (8, 0),
                    SampleType::U16 => (16, 0),
                    SampleType::I16 => (16, i16::MIN as i32),
                    SampleType::F32 => (32, 0),
                };
                opts = opts
                    .define("N", m.size)
                    .define("KEY_INT", (t != SampleType::F32) as u8)
                    .define("KEY_BITS", bits)
                    .define("KEY_MIN", min);
                ("filter_median", "median", String::new())
            }
            Op::Scharr(_) => ("filter_scharr", "scharr", String::new()),
            Op::Color(c) => {
                let delta = if t == SampleType::U16 { 32768 } else { 128 };
                opts = opts.define("COLOR", *c as u8).define("DELTA", delta);
                let (sdiv, hdiv) = Color::hsv_tables();
                let tables: Vec<f32> = sdiv.iter().chain(&hdiv).map(|&v| v as f32).collect();
                consts.push(dev.buffer_from(&tables, CL_MEM_READ_ONLY)?);
                ("filter_color", "color", String::new())
            }
            Op::Demosaic(d) => {
                let p = d.pattern.0;
                opts = opts
                    .define("P00", p[0][0])
                    .define("P01", p[0][1])
                    .define("P10", p[1][0])
                    .define("P11", p[1][1])
                    .define("METHOD", d.method as u8);
                ("filter_demosaic", "demosaic", String::new())
            }
            Op::Denoise(_) => bail!(
                internal,
                "denoise runs as several kernels, not one",
                hint = "this is a bug: please report it"
            ),
            Op::Pyr(Pyr::Down) => ("filter_pyramid", "pyrdown", String::new()),
            Op::Pyr(Pyr::Up) => ("filter_pyramid", "pyrup", String::new()),
            Op::Detail(Detail::Level) => ("filter_pyramid", "laplacian_level", String::new()),
            Op::Detail(Detail::Top) => ("filter_pyramid", "laplacian_top", String::new()),
            Op::Bilateral(b) => {
                let sim = b.similarity_table(t, bands);
                opts = opts
                    .define("DIST", b.distance as u8)
                    .define("NTAPS", b.taps().len())
                    .define("SIM_TABLE", sim.is_some() as u8);
                let taps: Vec<f32> = b
                    .taps()
                    .iter()
                    .flat_map(|t| [t.dx as f32, t.dy as f32, t.closeness, 0.0])
                    .collect();
                consts.push(dev.buffer_from(&taps, CL_MEM_READ_ONLY)?);
                consts.push(dev.buffer_from(&sim.unwrap_or(vec![0.0]), CL_MEM_READ_ONLY)?);
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
        let cache_name = match op {
            Op::Median(m) if m.size <= 5 => format!("{file}_{}", m.size),
            _ => file.to_string(),
        };
        let kernel = compile(dev, file, &cache_name, name, &prelude, &opts)?;
        Ok(Built { kernel, consts })
    }

    /// Enqueues one op (several kernels for denoising) from `at.src` into
    /// `at.dst` on `flight`.
    fn step(
        &self,
        kernels: &mut HashMap<String, Built>,
        flight: &mut Flight,
        op: &Op,
        at: &OpAt,
    ) -> Result<()> {
        if let Op::Denoise(d) = op {
            return self.denoise(kernels, flight, d, at);
        }
        let built = self.kernel(kernels, op, at.t, at.bands, at.border, at.nd)?;
        self.launch(built, flight, op, at)
    }

    /// A kernel of denoising's steps, built once per key from
    /// `kernels/FILE.cl` with the tile options and its `extra` defines.
    fn denoise_kernel<'a>(
        &self,
        cache: &'a mut HashMap<String, Built>,
        step: DenoiseKernel,
        border: BorderMode,
        consts: impl FnOnce() -> Result<Vec<Buffer<f32>>>,
    ) -> Result<&'a Built> {
        let DenoiseKernel {
            file,
            name,
            types: (t, to),
            radius: r,
            extra,
        } = step;
        let key = format!("denoise {file} {name} {t:?} {to:?} {r} {border:?} {extra:?}");
        if !cache.contains_key(&key) {
            let mut opts = tile_options(t, to, r, border, None, 1);
            for (k, v) in extra {
                opts = opts.define(k, v);
            }
            let kernel = compile(&self.device, file, file, name, "", &opts)?;
            let consts = consts()?;
            cache.insert(key.clone(), Built { kernel, consts });
        }
        Ok(&cache[&key])
    }

    /// Denoising on the device, step for step as [`super::denoise`]'s host
    /// path: widen the input to Float32, pyrdown per level, the detail
    /// levels, the bilateral on each, the reconstruction into `dst`. Waits
    /// for its kernels (the level buffers are freed on return).
    fn denoise(
        &self,
        kernels: &mut HashMap<String, Built>,
        flight: &mut Flight,
        d: &Denoise,
        at: &OpAt,
    ) -> Result<()> {
        let plan = d.plan(at.geo.out, at.geo.image);
        let mut run = Denoising {
            runner: self,
            kernels,
            flight,
            d,
            bands: at.bands,
            border: at.border,
            fill: match at.border {
                BorderMode::Constant(v) => v as f32,
                _ => 0.0,
            },
        };
        let (g, gwin) = run.gaussian_levels(at, &plan)?;
        let l = d.levels;
        let f = SampleType::F32;
        // From the coarsest level down: each level's detail, smoothed by the
        // bilateral, added to the level above reconstructed so far.
        let mut r: Option<Buffer<u8>> = None;
        let mut rwin = gwin[l - 1];
        for lv in (0..l - 1).rev() {
            let detail = run.alloc(plan.b[lv])?;
            run.add_up(
                (&g[lv], gwin[lv]),
                (&g[lv + 1], gwin[lv + 1], plan.sizes[lv + 1]),
                (&detail, plan.b[lv], f),
                true,
            )?;
            let smooth = run.alloc(plan.t[lv])?;
            let level = Geo {
                have: plan.b[lv],
                image: plan.sizes[lv],
                out: plan.t[lv],
            };
            run.bilateral(&detail, &smooth, level)?;
            let next = if lv == 0 {
                None
            } else {
                Some(run.alloc(plan.t[lv])?)
            };
            let coarse = r.as_ref().unwrap_or(&g[l - 1]);
            let (out, to) = match &next {
                Some(n) => (n, f),
                None => (at.dst, at.t),
            };
            run.add_up(
                (&smooth, plan.t[lv]),
                (coarse, rwin, plan.sizes[lv + 1]),
                (out, plan.t[lv], to),
                false,
            )?;
            r = next;
            rwin = plan.t[lv];
        }
        self.stream.flush_kernels()?;
        run.flight.wait_kernels()
    }

    /// Enqueues one op on `flight` from device buffer `at.src` (window
    /// `at.geo.have`) into buffer `at.dst` (window `at.geo.out`).
    fn launch(&self, built: &Built, flight: &mut Flight, op: &Op, at: &OpAt) -> Result<()> {
        let &OpAt {
            src,
            dst,
            t,
            bands,
            geo,
            border,
            nd,
        } = at;
        let fill = match border {
            BorderMode::Constant(v) => round_to(t, v as f32),
            BorderMode::Nodata => nd.unwrap_or(0.0) as f32,
            _ => 0.0,
        };
        let nd_out = op.out_nodata(t, nd).map_or(f32::NAN, |v| v as f32);
        let kernel = &built.kernel;
        let mut args = Args::new(kernel).mem(src).mem(dst);
        match op {
            Op::Conv(c) => args = args.mem(&built.consts[0]).scalar(c.scale),
            Op::Median(_)
            | Op::Scharr(_)
            | Op::Pyr(_)
            | Op::Demosaic(_)
            | Op::Detail(_)
            | Op::Denoise(_) => {}
            Op::Color(_) => args = args.mem(&built.consts[0]),
            Op::Bilateral(b) => {
                let inv2 = (0.5 / (b.sigma_r * b.sigma_r)) as f32;
                args = args
                    .mem(&built.consts[0])
                    .mem(&built.consts[1])
                    .scalar(inv2);
            }
            Op::Oil(o) => {
                let (lo, hi) = o.range.unwrap_or((0.0, 1.0));
                args = args.scalar(lo as f32).scalar(hi as f32);
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
            .scalar(0i32)
            .done()?;
        let z = if joint_bands(op, bands) > 1 { 1 } else { bands };
        let global = [g.out.width, g.out.height, z];
        self.stream
            .launch(flight, kernel, &global, Some(&[LOCAL, LOCAL, 1]))
    }
}

/// `GEO_ARGS` (see `filter_tile.cl`) after a NaN `nd_out`, for a whole
/// window from row 0.
pub(super) fn geo_args(a: Args<'_>, g: Geo, fill: f32) -> Args<'_> {
    a.scalar(f32::NAN)
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
        .scalar(0i32)
}

/// The build options every `filter_*.cl` kernel takes (see `filter_tile.cl`).
pub(super) fn tile_options(
    t: SampleType,
    to: SampleType,
    r: usize,
    border: BorderMode,
    nd: Option<f64>,
    nb: usize,
) -> BuildOptions {
    let opts = BuildOptions::new()
        .define("T", t.cl_type())
        .define("TO", to.cl_type())
        .define("TO_INT", (to != SampleType::F32) as u8)
        .define("T_INT", (t != SampleType::F32) as u8)
        .define("R", r)
        .define("LX", LOCAL)
        .define("LY", LOCAL)
        .define("BORDER", border.cl_code())
        .define("HAS_ND", nd.is_some() as u8)
        .define("NB", nb)
        .raw("-cl-fp32-correctly-rounded-divide-sqrt");
    match nd {
        Some(v) => opts.define("ND", cl_float(v)),
        None => opts,
    }
}

/// Kernel `name` of `kernels/FILE.cl` (after `filter_tile.cl` and `prelude`),
/// built with `opts` through the device's program cache under `cache_name`.
pub(super) fn compile(
    dev: &Device,
    file: &str,
    cache_name: &str,
    name: &str,
    prelude: &str,
    opts: &BuildOptions,
) -> Result<Kernel> {
    let text = format!(
        "{}\n{prelude}{}",
        source("filter_tile").expect("embedded"),
        raw_source(file).expect("embedded")
    );
    let program = dev.program_from_source(cache_name, &text, opts)?;
    Kernel::create(&program, name).map_err(crate::device::cl_error("creating a kernel"))
}

/// Bands one work-item reads together: all for ops that mix bands, else 1.
fn joint_bands(op: &Op, bands: usize) -> usize {
    let joint = matches!(op, Op::Oil(_) | Op::Color(_))
        || matches!(op, Op::Bilateral(b) if b.distance != Distance::Gray);
    if joint { bands } else { 1 }
}

/// Local memory of a work-group's tile for `op` on `bands` bands (pyramid
/// steps read global memory directly).
pub(super) fn local_bytes(op: &Op, bands: usize) -> usize {
    if op.windowed() || matches!(op, Op::Color(_)) {
        return 0;
    }
    joint_bands(op, bands) * (LOCAL + 2 * op.radius()).pow(2) * 4
}

/// One denoising on the device, step by step: the runner's kernels and the
/// tile's flight, with the settings every step shares.
struct Denoising<'r> {
    runner: &'r DeviceRunner,
    kernels: &'r mut HashMap<String, Built>,
    flight: &'r mut Flight,
    d: &'r Denoise,
    bands: usize,
    border: BorderMode,
    /// The constant border's value (0 for the other borders).
    fill: f32,
}

impl Denoising<'_> {
    /// A Float32 buffer for window `w` of every band.
    fn alloc(&self, w: Win) -> Result<Buffer<u8>> {
        let len = self.bands * w.width * w.height * 4;
        self.runner.device.buffer::<u8>(len, CL_MEM_READ_WRITE)
    }

    /// The Gaussian levels `g` and their windows: level 0 the input window
    /// widened to Float32, each next one its pyrdown.
    fn gaussian_levels(&mut self, at: &OpAt, plan: &Plan) -> Result<(Vec<Buffer<u8>>, Vec<Win>)> {
        let (f, geo) = (SampleType::F32, at.geo);
        let mut gwin = vec![geo.have];
        let mut g = vec![self.alloc(geo.have)?];
        let top = DenoiseKernel {
            file: "filter_pyramid",
            name: "laplacian_top",
            types: (at.t, f),
            radius: 0,
            extra: &[],
        };
        let k = self
            .runner
            .denoise_kernel(self.kernels, top, self.border, || Ok(Vec::new()))?;
        let args = Args::new(&k.kernel).mem(at.src).mem(&g[0]);
        let whole = Geo {
            have: geo.have,
            image: geo.image,
            out: geo.have,
        };
        geo_args(args, whole, self.fill).done()?;
        self.runner.stream.launch(
            self.flight,
            &k.kernel,
            &over(geo.have, self.bands),
            DENOISE_LOCAL,
        )?;
        for lv in 1..self.d.levels {
            let down = DenoiseKernel {
                file: "filter_pyramid",
                name: "pyrdown",
                types: (f, f),
                radius: 0,
                extra: &[],
            };
            let buf = self.alloc(plan.g[lv])?;
            let k = self
                .runner
                .denoise_kernel(self.kernels, down, self.border, || Ok(Vec::new()))?;
            let args = Args::new(&k.kernel).mem(&g[lv - 1]).mem(&buf);
            let at = Geo {
                have: gwin[lv - 1],
                image: plan.sizes[lv - 1],
                out: plan.g[lv],
            };
            geo_args(args, at, self.fill).done()?;
            self.runner.stream.launch(
                self.flight,
                &k.kernel,
                &over(plan.g[lv], self.bands),
                DENOISE_LOCAL,
            )?;
            g.push(buf);
            gwin.push(plan.g[lv]);
        }
        Ok((g, gwin))
    }

    /// `a ± pyrup(b)` (`sub`: minus) into `out` (window `w`, sample type `to`).
    fn add_up(
        &mut self,
        (a, aw): (&Buffer<u8>, Win),
        (b, bw, bsize): (&Buffer<u8>, Win, (usize, usize)),
        (out, w, to): (&Buffer<u8>, Win, SampleType),
        sub: bool,
    ) -> Result<()> {
        let step = DenoiseKernel {
            file: "filter_pyramid",
            name: "add_up",
            types: (SampleType::F32, to),
            radius: 0,
            extra: &[("SUB", (sub as u8).to_string())],
        };
        let k = self
            .runner
            .denoise_kernel(self.kernels, step, self.border, || Ok(Vec::new()))?;
        Args::new(&k.kernel)
            .mem(a)
            .mem(b)
            .mem(out)
            .scalar(aw.x as i32)
            .scalar(aw.y as i32)
            .scalar(aw.width as i32)
            .scalar(aw.height as i32)
            .scalar(bw.x as i32)
            .scalar(bw.y as i32)
            .scalar(bw.width as i32)
            .scalar(bw.height as i32)
            .scalar(bsize.0 as i32)
            .scalar(bsize.1 as i32)
            .scalar(w.x as i32)
            .scalar(w.y as i32)
            .scalar(w.width as i32)
            .scalar(w.height as i32)
            .scalar(self.fill)
            .done()?;
        self.runner
            .stream
            .launch(self.flight, &k.kernel, &over(w, self.bands), DENOISE_LOCAL)
    }

    /// The bilateral of one detail level into `smooth` (window `at.out`).
    fn bilateral(&mut self, detail: &Buffer<u8>, smooth: &Buffer<u8>, at: Geo) -> Result<()> {
        let (d, dev) = (self.d, &self.runner.device);
        let b = &d.bilateral;
        let extra = [
            ("DIST", "0".to_string()),
            ("NTAPS", b.taps().len().to_string()),
            ("SIM_TABLE", "2".to_string()),
            ("SIM_Q", cl_float(d.scale() as f64)),
            ("SIM_N", d.table().len().to_string()),
        ];
        let step = DenoiseKernel {
            file: "filter_bilateral",
            name: "bilateral",
            types: (SampleType::F32, SampleType::F32),
            radius: b.radius,
            extra: &extra,
        };
        let k = self
            .runner
            .denoise_kernel(self.kernels, step, self.border, || {
                let taps: Vec<f32> = b
                    .taps()
                    .iter()
                    .flat_map(|t| [t.dx as f32, t.dy as f32, t.closeness, 0.0])
                    .collect();
                Ok(vec![
                    dev.buffer_from(&taps, CL_MEM_READ_ONLY)?,
                    dev.buffer_from(&d.table(), CL_MEM_READ_ONLY)?,
                ])
            })?;
        let args = Args::new(&k.kernel)
            .mem(detail)
            .mem(smooth)
            .mem(&k.consts[0])
            .mem(&k.consts[1])
            .scalar(0f32);
        geo_args(args, at, self.fill).done()?;
        self.runner.stream.launch(
            self.flight,
            &k.kernel,
            &over(at.out, self.bands),
            DENOISE_LOCAL,
        )
    }
}

/// The work-group of denoising's kernels.
const DENOISE_LOCAL: Option<&[usize]> = Some(&[LOCAL, LOCAL, 1]);

/// Window `w` of every band, as a launch's global size.
fn over(w: Win, bands: usize) -> [usize; 3] {
    [w.width, w.height, bands]
}

/// One op's enqueue: the buffers it reads and writes, the sample type and
/// band count it reads, where, and the border and nodata it applies.
struct OpAt<'b> {
    src: &'b Buffer<u8>,
    dst: &'b Buffer<u8>,
    t: SampleType,
    bands: usize,
    geo: Geo,
    border: BorderMode,
    nd: Option<f64>,
}

/// One of denoising's kernels: its file and name under `kernels/`, the
/// sample types in and out, its radius and its extra defines.
struct DenoiseKernel<'e> {
    file: &'static str,
    name: &'static str,
    types: (SampleType, SampleType),
    radius: usize,
    extra: &'e [(&'e str, String)],
}

/// Where an op reads and writes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Geo {
    pub(super) have: Win,
    pub(super) image: (usize, usize),
    pub(super) out: Win,
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
pub(super) fn round_to(t: SampleType, v: f32) -> f32 {
    crate::with_type!(t, T => T::from_f32(v).to_f32())
}

/// The bytes of a slice of samples.
fn bytes_of<T: Pixel>(s: &[T]) -> &[u8] {
    // SAFETY: sample types are plain numbers; any byte view of them is valid.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}

/// The bytes of a slice of samples, writable.
fn bytes_of_mut<T: Pixel>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and every byte pattern is a valid sample.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u8, std::mem::size_of_val(s)) }
}

/// The bytes of every band.
fn band_bytes(bands: &Bands) -> Vec<&[u8]> {
    with_bands!(bands, p => p.iter().map(|p| bytes_of(&p.data)).collect())
}

/// The bytes of every band, writable.
fn band_bytes_mut(bands: &mut Bands) -> Vec<&mut [u8]> {
    with_bands!(bands, p => p.iter_mut().map(|p| bytes_of_mut(&mut p.data)).collect())
}

/// `n` planes of `w`×`h` samples of type `t` for a result, made from the
/// `input` planes where given and the type matches (their memory is already mapped
/// in, so writing it costs no page faults), else newly allocated (not
/// written: the download fills every sample).
fn result_planes(input: Option<Bands>, t: SampleType, n: usize, w: usize, h: usize) -> Bands {
    fn typed<T: Pixel>(input: Option<Bands>, n: usize, w: usize, h: usize) -> Bands {
        let recycled: Vec<Plane<T>> = input.map_or(Vec::new(), |input| {
            with_bands!(input, p => {
                let any: Box<dyn Any> = Box::new(p);
                any.downcast::<Vec<Plane<T>>>().map(|b| *b).unwrap_or_default()
            })
        });
        let mut recycled = recycled.into_iter();
        T::wrap(
            (0..n)
                .map(|_| {
                    let data = match recycled.next() {
                        Some(mut p) if p.data.len() >= w * h => {
                            p.data.truncate(w * h);
                            p.data
                        }
                        _ => vec![T::default(); w * h],
                    };
                    Plane::new(w, h, data)
                })
                .collect(),
        )
    }
    crate::with_type!(t, T => typed::<T>(input, n, w, h))
}

impl DeviceRunner {
    /// Enqueues `chain` on one tile: its input goes up, every op runs on the
    /// device (ping-ponging between the slot's two buffers, in order on the
    /// compute queue), its result comes down, all without waiting.
    fn enqueue(&self, chain: &Chain, input: &Bands, at: &TileAt) -> Result<(Flight, Slot)> {
        let dev = &self.device;
        let stream = &self.stream;
        let mut kernels = self.kernels.lock().unwrap_or_else(|p| p.into_inner());
        let mut slot = self.slots.take();
        let mut flight = stream.flight();
        // SAFETY: the slot travels with the flight (see `InFlight`) until
        // the flight is waited for.
        unsafe { slot.stage_in(stream, &mut flight, &band_bytes(input))? };
        stream.flush_uploads()?;
        let (mut t, mut bands, mut have, mut nd) =
            (input.sample_type(), input.count(), at.have, at.nd);
        let mut from = 0;
        for Step { op, target, image } in chain.steps(at) {
            let geo = Geo {
                have,
                image,
                out: target,
            };
            let to = op.out_type(t);
            let len = op.out_bands(bands) * target.width * target.height * to.size();
            slot.buffer(dev, 1 - from, len)?;
            let op_at = OpAt {
                src: slot.get(from),
                dst: slot.get(1 - from),
                t,
                bands,
                geo,
                border: at.border,
                nd,
            };
            self.step(&mut kernels, &mut flight, op, &op_at)?;
            stream.flush_kernels()?;
            from = 1 - from;
            nd = op.out_nodata(t, nd);
            (t, bands, have) = (to, op.out_bands(bands), target);
        }
        let len = bands * at.out.width * at.out.height * t.size();
        // SAFETY: as above.
        unsafe { slot.stage_out(stream, &mut flight, from, len)? };
        stream.flush_downloads()?;
        Ok((flight, slot))
    }
}

impl ChainRunner for DeviceRunner {
    fn name(&self) -> String {
        format!("OpenCL {}", self.device.info().name)
    }

    fn device_times(&self) -> Option<DeviceTimes> {
        Some(self.stream.take_times())
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn run(&self, chain: &Chain, input: Bands, at: &TileAt) -> Result<Bands> {
        let pending = self.submit(chain, input, at)?;
        self.finish(pending)
    }

    fn submit(&self, chain: &Chain, input: Bands, at: &TileAt) -> Result<Pending> {
        let (t_in, bands_in) = (input.sample_type(), input.count());
        self.check(chain, bands_in)?;
        let (t_out, bands_out) = (chain.out_type(t_in), chain.out_bands(bands_in));
        let out = at.out;
        if out.width == 0 || out.height == 0 || bands_in == 0 {
            let planes = result_planes(Some(input), t_out, bands_out, out.width, out.height);
            return Ok(Pending::Done(planes));
        }
        let (flight, slot) = self.enqueue(chain, &input, at)?;
        Ok(Pending::InFlight(Box::new(InFlight {
            flight,
            slot,
            input: self.recycle.then_some(input),
            t_out,
            bands_out,
            size: (out.width, out.height),
        })))
    }

    fn finish(&self, pending: Pending) -> Result<Bands> {
        let tile = match pending {
            Pending::Done(bands) => return Ok(bands),
            Pending::InFlight(tile) => tile,
        };
        let Ok(tile) = tile.downcast::<InFlight>() else {
            bail!(
                internal,
                "a tile in flight from another runner",
                hint = "this is a bug: please report it"
            );
        };
        let InFlight {
            mut flight,
            slot,
            input,
            t_out,
            bands_out,
            size: (w, h),
        } = *tile;
        self.stream.finish(&mut flight)?;
        let mut result = result_planes(input, t_out, bands_out, w, h);
        slot.copy_out(&mut band_bytes_mut(&mut result));
        self.slots.give(slot);
        Ok(result)
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
            device,
            format!("{} bins do not fit the device's local memory", b.bins),
            hint = format!("use fewer bins or {}", Setting::Device.is("host"))
        );
    }
    let kernel = dev.kernel("filter_histogram", &opts, "histogram")?;
    let n = plane.data.len();
    let src = dev.buffer_from(bytes_of(&plane.data), CL_MEM_READ_ONLY)?;
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
