//! `mapfilter bench-filter`: times image ops on a synthetic in-memory image
//! (no GDAL, so it runs on the GPU machine), one JSON line per run with
//! total (wall), CPU (all threads), kernel and transfer milliseconds.
//!
//! `total_ms` is one whole runner call on the image as one tile, host
//! planes in → host planes out: on a device that is the copies into pinned
//! staging, upload, kernels, download and the copies out (the way
//! `benches/filters/bench_filters.py --umat` times OpenCV from a host array to the
//! `.get()` of its result), in steady state: after `--warmup` untimed runs
//! that build the kernels and allocate the staging memory kept between calls.
//! `kernel_ms`, `upload_ms`, `download_ms` are the profiled device times of
//! those commands (they overlap in time, strip by strip).
//!
//! A level op first (`scale-space:..`, `gaussian-pyramid:..`) with
//! `scharr:N` ops after it, on a device, times the device-held pyramid
//! instead ([`super::bench_pyramid`]).

use crate::device::{Device, DeviceChoice};
use crate::error::{Error, Result};
use crate::filter::device::{DeviceRunner, histogram};
use crate::filter::engine::{ChainRunner, HostRunner};
use crate::filter::histogram::{BandHistogram, Binning};
use crate::filter::levels::Levels;
use crate::filter::op::TileAt;
use crate::filter::run_on::RunOn;
use crate::filter::{BorderMode, Chain, Win};
use crate::io::MemImage;
use crate::pixel::{Bands, Pixel, Plane, SampleType};
use crate::with_bands;
use clap::Args;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct BenchFilterArgs {
    /// An op (repeat for a chain), as for `filter`, or `histogram` (256 bins per band).
    #[arg(long = "op", required = true)]
    pub ops: Vec<String>,
    /// Image size in pixels: N (square) or WxH.
    #[arg(
        long = "raster-size",
        alias = "size",
        value_name = "N|WxH",
        default_value = "4096"
    )]
    pub size: String,
    /// Band count.
    #[arg(long, default_value_t = 3)]
    pub bands: usize,
    /// Sample type: u8, u16, i16, f32.
    #[arg(long = "type", default_value = "u8")]
    pub sample_type: String,
    /// host (fast host paths), host-reference, or an OpenCL device: auto, cpu, gpu, INDEX.
    #[arg(long, default_value = "host")]
    pub device: RunOn,
    /// Timed runs.
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Untimed runs first (they build the kernels and allocate the staging memory).
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Allocate every result anew instead of writing it into the input's
    /// planes (the runner owns its input; by default it reuses that memory).
    #[arg(long)]
    pub fresh_output: bool,
    /// After the timed runs, compare the last result with the host reference
    /// (plain per-pixel ops) bit for bit; prints one more JSON line with "check".
    #[arg(long)]
    pub check: bool,
    /// Border mode.
    #[arg(long, default_value = "reflect101")]
    pub border: BorderMode,
}

/// `--type`'s sample type.
fn sample_type(name: &str) -> Result<SampleType> {
    Ok(match name {
        "u8" => SampleType::U8,
        "u16" => SampleType::U16,
        "i16" => SampleType::I16,
        "f32" => SampleType::F32,
        other => crate::bail!(
            usage,
            format!("unknown type '{other}'"),
            hint = "use u8, u16, i16 or f32"
        ),
    })
}

/// The OpenCL device `--device` names (none for the host paths), and the
/// name the JSON lines give it.
fn resolve_device(run_on: &RunOn) -> Result<(Option<Device>, String)> {
    Ok(match run_on {
        RunOn::Reference | RunOn::Choice(DeviceChoice::Host) => (None, run_on.to_string()),
        RunOn::Choice(choice) => match choice.resolve()? {
            Some(dev) => {
                let name = dev.info().name.clone();
                (Some(dev), name)
            }
            None => (None, "host".into()),
        },
    })
}

pub fn run(args: BenchFilterArgs) -> Result<()> {
    let (w, h) = parse_size(&args.size)?;
    // Input, output and the reference as 32-bit samples per band.
    crate::limits::check_in_memory(w, h, 12 * args.bands.max(1), "a bench image")?;
    let t = sample_type(&args.sample_type)?;
    let border = args.border;
    let image = synthetic(t, w, h, args.bands.max(1));
    let op_label = args.ops.join(" ");
    let (device, device_name) = resolve_device(&args.device)?;
    let print = |i: usize, total: f64, cpu: f64, k: Option<(f64, f64, f64)>| {
        let (kernel, up, down) = match k {
            Some((a, b, c)) => (format!("{a:.3}"), format!("{b:.3}"), format!("{c:.3}")),
            None => ("null".into(), "null".into(), "null".into()),
        };
        println!(
            "{{\"op\":{:?},\"width\":{w},\"height\":{h},\"bands\":{},\"type\":{:?},\"device\":{:?},\"run\":{i},\"total_ms\":{total:.3},\"cpu_ms\":{cpu:.3},\"kernel_ms\":{kernel},\"upload_ms\":{up},\"download_ms\":{down}}}",
            op_label, args.bands, args.sample_type, device_name
        );
    };
    if args.ops.len() == 1 && args.ops[0] == "histogram" {
        let b = Binning::for_type(t, None, Some((0.0, 256.0)))?.expect("range given");
        for i in 0..args.warmup + args.repeat {
            let (t0, c0) = (Instant::now(), cpu_ms());
            with_bands!(&image.bands, p => hist_all(p, &b, device.as_ref()))?;
            if i >= args.warmup {
                print(
                    i + 1 - args.warmup,
                    t0.elapsed().as_secs_f64() * 1e3,
                    cpu_ms() - c0,
                    None,
                );
            }
        }
        return Ok(());
    }
    // A level op first, on a device: the device pyramid bench.
    if let (Some(dev), Some(levels)) = (&device, Levels::parse(&args.ops[0])) {
        let bench = super::bench_pyramid::PyramidBench {
            sample_type: &args.sample_type,
            warmup: args.warmup,
            repeat: args.repeat,
            check: args.check,
            border: args.border,
        };
        return super::bench_pyramid::run(&bench, dev, &image, &levels?, &args.ops[1..]);
    }
    let chain = Chain::parse(&args.ops)?;
    chain.check(args.bands, t, border, None)?;
    let runner: Box<dyn ChainRunner> = match device {
        Some(dev) => {
            let mut r = DeviceRunner::new(dev);
            r.recycle = !args.fresh_output;
            r.check(&chain, args.bands)?;
            Box::new(r)
        }
        None => Box::new(HostRunner {
            reference: args.device == RunOn::Reference,
        }),
    };
    let whole = Win::new(0, 0, w, h);
    let (ow, oh) = chain.out_size((w, h));
    let at = TileAt {
        have: whole,
        image: (w, h),
        out: Win::new(0, 0, ow, oh),
        border,
        nd: None,
    };
    let mut last = None;
    for i in 0..args.warmup + args.repeat {
        let input = image.bands.clone();
        let (t0, c0) = (Instant::now(), cpu_ms());
        let out = runner.run(&chain, input, &at)?;
        let total = t0.elapsed().as_secs_f64() * 1e3;
        let cpu = cpu_ms() - c0;
        last = Some(std::hint::black_box(out));
        let times = runner.device_times();
        if i >= args.warmup {
            let ms = |ns: u64| ns as f64 / 1e6;
            print(
                i + 1 - args.warmup,
                total,
                cpu,
                times.map(|t| (ms(t.kernel_ns), ms(t.upload_ns), ms(t.download_ns))),
            );
        }
    }
    if args.check {
        let got = match last {
            Some(out) => out,
            None => runner.run(&chain, image.bands.clone(), &at)?,
        };
        let want = chain.run_tile_host(image.bands.clone(), &at, true);
        let (differ, all) = differing(&got, &want);
        let verdict = if differ == 0 {
            "identical".to_string()
        } else {
            format!("{differ} of {all} samples differ")
        };
        println!(
            "{{\"op\":{op_label:?},\"width\":{w},\"height\":{h},\"bands\":{},\"type\":{:?},\"device\":{device_name:?},\"check\":{verdict:?}}}",
            args.bands, args.sample_type
        );
    }
    Ok(())
}

/// Samples whose bits differ between two results, and the sample count.
fn differing(a: &Bands, b: &Bands) -> (usize, usize) {
    fn bits<T: Pixel>(p: &[Plane<T>]) -> Vec<u32> {
        p.iter()
            .flat_map(|p| p.data.iter().map(|v| v.to_f32().to_bits()))
            .collect()
    }
    let (x, y) = (with_bands!(a, p => bits(p)), with_bands!(b, p => bits(p)));
    if a.sample_type() != b.sample_type() || x.len() != y.len() {
        return (x.len().max(y.len()), x.len().max(y.len()));
    }
    (x.iter().zip(&y).filter(|(p, q)| p != q).count(), x.len())
}

/// CPU time of the process so far (all threads, user and system), in ms: on
/// a shared machine a steadier figure than the wall time.
fn cpu_ms() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    ms(u.ru_utime) + ms(u.ru_stime)
}

fn hist_all<T: Pixel>(
    p: &[Plane<T>],
    b: &Binning,
    dev: Option<&Device>,
) -> Result<Vec<BandHistogram>> {
    p.iter()
        .enumerate()
        .map(|(i, plane)| match dev {
            Some(d) => histogram(d, plane, i + 1, b, None),
            None => {
                let mut hist = BandHistogram::new(i + 1, b);
                hist.add(plane, b, None);
                Ok(hist)
            }
        })
        .collect()
}

fn parse_size(s: &str) -> Result<(usize, usize)> {
    let bad = || {
        Error::usage(format!("--raster-size '{s}' is not N or WxH"))
            .hint("write e.g. --raster-size 1920x1080")
    };
    let (a, b) = s.split_once('x').unwrap_or((s, s));
    let (w, h): (usize, usize) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if w == 0 || h == 0 {
        return Err(bad());
    }
    Ok((w, h))
}

/// A photo-like test image: smooth gradients and waves plus noise, full range.
pub fn synthetic(t: SampleType, w: usize, h: usize, bands: usize) -> MemImage {
    fn typed<T: Pixel>(w: usize, h: usize, bands: usize) -> Bands {
        let (lo, hi) = T::TYPE.range().unwrap_or((0.0, 255.0));
        T::wrap(
            (0..bands)
                .map(|b| {
                    let mut s = 0x2545_F491_4F6C_DD1Du64.wrapping_add(b as u64);
                    let data = (0..w * h)
                        .map(|i| {
                            s ^= s << 13;
                            s ^= s >> 7;
                            s ^= s << 17;
                            // Triangle waves (cheap, smooth) plus noise.
                            let tri = |v: usize, p: usize| {
                                let m = (v + 13 * b) % (2 * p);
                                m.min(2 * p - m) as f64 / p as f64
                            };
                            let wave = 0.2 + 0.35 * tri(i % w, 97) + 0.3 * tri(i / w, 61);
                            let noise = (s >> 40) as f64 / (1u64 << 24) as f64 - 0.5;
                            let v = (wave + 0.1 * noise).clamp(0.0, 1.0);
                            T::from_f32((lo + (hi - lo) * v) as f32)
                        })
                        .collect();
                    Plane::new(w, h, data)
                })
                .collect(),
        )
    }
    MemImage::new(crate::with_type!(t, T => typed::<T>(w, h, bands)), None)
}
