//! `mapfilter bench`: times class smoothing on synthetic in-memory rasters
//! (no GDAL, so it runs on the GPU machine's GDAL-free binary) and prints one
//! JSON line per run. Comma lists in --raster-size, --classes and --kernel sweep
//! their product; `--check` compares every configuration with the host
//! reference byte for byte and fails on the first mismatch.

use super::fast_args::FastArgs;
use super::pattern_arg::PatternArg;
use crate::classes::ClassTable;
use crate::device::DeviceChoice;
use crate::engine::{self, SmoothJob};
use crate::error::{Error, Result};
use crate::io::MemRaster;
use crate::kernel::KernelSpec;
use crate::method::ClassSmoother;
use crate::method::naive::NaiveHost;
use crate::method::naive::cl::Variant;
use crate::method::select::smoother_for;
use crate::progress::Progress;
use crate::synth::SynthRaster;
use clap::Args;
use serde_json::json;
use tiles::Border;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Raster side(s) in pixels, comma-separated (square rasters).
    #[arg(
        long = "raster-size",
        alias = "size",
        value_name = "SIDES",
        default_value = "1024"
    )]
    pub size: String,
    /// Class count(s), comma-separated (1..=256).
    #[arg(long, default_value = "16")]
    pub classes: String,
    /// Synthetic pattern: simplex blobs or uniformly random classes.
    #[arg(long, value_enum, default_value_t = PatternArg::Random)]
    pub pattern: PatternArg,
    /// Kernel spec(s), `;`- or comma-separated: box:N, gaussian:SIGMA, disc:R.
    #[arg(long, default_value = "box:15")]
    pub kernel: String,
    #[command(flatten)]
    pub fast: FastArgs,
    /// auto, host, cpu, gpu, a device index, all or a list such as 0,1 (devices
    /// sharing the tiles) (default: $MAPFILTER_DEVICE or auto).
    #[arg(long)]
    pub device: Option<DeviceChoice>,
    /// Device variant of the method (naive: fast, buffer, image, local).
    #[arg(long)]
    pub variant: Option<Variant>,
    /// Tile side in pixels (default: the one `smooth` uses for the method
    /// and device: tuned, else 1024 on a GPU and 512 elsewhere).
    #[arg(long)]
    pub tile: Option<usize>,
    /// Timed runs per configuration.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Untimed runs first (program builds, caches).
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Compare with the host reference byte for byte; a mismatch is an error.
    #[arg(long)]
    pub check: bool,
    /// Seed of the synthetic raster.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Time a real class raster (band 1, read into memory once; nodata kept)
    /// instead of synthetic ones: --raster-size, --classes and --pattern are ignored.
    #[cfg(feature = "gdal")]
    #[arg(long)]
    pub input: Option<std::path::PathBuf>,
}

/// One input raster of the sweep, with its nodata code and a label.
struct BenchInput {
    raster: MemRaster,
    nodata: Option<u16>,
    config: serde_json::Value,
}

/// The rasters to time: the real one of `--input`, else every synthetic
/// size × class count.
fn inputs(args: &BenchArgs) -> Result<Vec<BenchInput>> {
    #[cfg(feature = "gdal")]
    if let Some(path) = &args.input {
        let mut raster = crate::gdal::class_raster::ClassRaster::open(path)?;
        let (w, h) = (raster.meta.width, raster.meta.height);
        let mut data = vec![0u16; w * h];
        crate::io::ClassSource::read(&mut raster, tiles::Rect::new(0, 0, w, h), &mut data)?;
        return Ok(vec![BenchInput {
            raster: MemRaster::new(w, h, data),
            nodata: raster.nodata_code(),
            config: json!({ "input": path.display().to_string(), "size": format!("{w}x{h}") }),
        }]);
    }
    let sizes: Vec<usize> = list(&args.size, "raster-size")?;
    let class_counts: Vec<u16> = list(&args.classes, "classes")?;
    if let Some(c) = class_counts.iter().find(|&&c| c == 0 || c > 256) {
        crate::bail!(usage, format!("--classes {c} is outside 1..=256"));
    }
    for &size in &sizes {
        crate::limits::check_in_memory(
            size,
            size,
            crate::limits::IN_MEMORY_RUN_BYTES,
            "a bench raster",
        )?;
    }
    let mut out = Vec::new();
    for &size in &sizes {
        for &classes in &class_counts {
            let synth = SynthRaster::new(size, size, classes, args.pattern.into(), args.seed);
            out.push(BenchInput {
                raster: MemRaster::new(size, size, synth.to_vec()),
                nodata: None,
                config: json!({
                    "size": size, "classes": classes,
                    "pattern": format!("{:?}", args.pattern).to_lowercase(),
                }),
            });
        }
    }
    Ok(out)
}

fn list<T: std::str::FromStr>(text: &str, what: &str) -> Result<Vec<T>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse().map_err(|_| {
                Error::usage(format!("--{what}: '{s}' is not a number"))
                    .hint(format!("give --{what} as a comma-separated list"))
            })
        })
        .collect()
}

pub fn run(args: BenchArgs) -> Result<()> {
    let kernels: Vec<&str> = args
        .kernel
        .split([';', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let device = DeviceChoice::or_env(args.device.clone())?;
    let method_spec = args.fast.spec(args.variant)?;
    let variant = args.variant.map_or("default", Variant::name);
    for input in inputs(&args)? {
        let table = ClassTable::from_codes(&input.raster.data, input.nodata)?;
        for spec in &kernels {
            let mut job = SmoothJob {
                class_weights: vec![1; table.len()],
                output_nodata: table.output_nodata(u16::MAX),
                kernel: spec.parse::<KernelSpec>()?.build()?,
                classes: table.clone(),
                border: Border::Same,
                fill_nodata: false,
                tile: args.tile.unwrap_or(crate::io::DEFAULT_TILE),
                policies: Default::default(),
            };
            let method = smoother_for(&method_spec, &device, &job.kernel)?;
            job.tile = args
                .tile
                .unwrap_or_else(|| engine::default_tile(method.as_ref()));
            let mut config = json!({
                "method": args.fast.method, "exact": args.fast.exact, "variant": variant,
                "kernel": spec, "ksize": job.kernel.size(), "tile": job.tile,
                "classes": table.len(),
            });
            for (k, v) in input.config.as_object().into_iter().flatten() {
                config[k] = v.clone();
            }
            bench_one(&args, method.as_ref(), &input.raster, &job, config)?;
        }
    }
    Ok(())
}

fn bench_one(
    args: &BenchArgs,
    method: &dyn ClassSmoother,
    input: &MemRaster,
    job: &SmoothJob,
    config: serde_json::Value,
) -> Result<()> {
    let run = |out: &mut MemRaster, m: &dyn ClassSmoother| {
        engine::smooth(&mut input.clone(), out, job, m, &Progress::hidden())
    };
    let mut out = MemRaster::filled(input.width, input.height, 0);
    for _ in 0..args.warmup {
        run(&mut out, method)?;
    }
    let mut check = serde_json::Value::Null;
    if args.check {
        let mut reference = MemRaster::filled(input.width, input.height, 0);
        run(&mut reference, &NaiveHost)?;
        run(&mut out, method)?;
        if !method.is_exact() {
            // Approximate methods report their agreement with the reference instead.
            let same = out
                .data
                .iter()
                .zip(&reference.data)
                .filter(|(a, b)| a == b)
                .count();
            check = json!({ "agreement": same as f64 / out.data.len().max(1) as f64 });
        } else if let Some(i) = out
            .data
            .iter()
            .zip(&reference.data)
            .position(|(a, b)| a != b)
        {
            let bad = out
                .data
                .iter()
                .zip(&reference.data)
                .filter(|(a, b)| a != b)
                .count();
            crate::bail!(
                internal,
                format!(
                    "MISMATCH: {} differs from the host reference in {bad} pixels, first at ({}, {}) ({} vs {}) for {config}",
                    method.name(),
                    i % input.width,
                    i / input.width,
                    out.data[i],
                    reference.data[i]
                ),
                hint = "this is a bug; report the command line"
            );
        }
        if check.is_null() {
            check = json!("identical");
        }
    }
    method.take_device_times();
    for rep in 0..args.repeat {
        method.take_shares();
        let stats = run(&mut out, method)?;
        let times = method.take_device_times();
        let devices: Vec<serde_json::Value> = method
            .take_shares()
            .iter()
            .map(|s| {
                json!({
                    "device": s.device, "tiles": s.tiles, "pixels": s.pixels,
                    "busy_ms": s.busy.as_secs_f64() * 1e3,
                    "kernel_ms": s.times.map(|t| t.kernel_ns as f64 / 1e6),
                })
            })
            .collect();
        let ms = |ns: u64| ns as f64 / 1e6;
        let total = stats.totals.wall.as_secs_f64() * 1e3;
        let mut line = config.clone();
        let fields = json!({
            "device": method.name(),
            "rep": rep,
            "tiles": stats.totals.tiles,
            "compute_ms": stats.totals.compute.as_secs_f64() * 1e3,
            "kernel_ms": times.map(|t| ms(t.kernel_ns)),
            "upload_ms": times.map(|t| ms(t.upload_ns)),
            "download_ms": times.map(|t| ms(t.download_ns)),
            "transfer_ms": times.map(|t| ms(t.transfer_ns())),
            "total_ms": total,
            "stages_ms": {
                "read": stats.stages.read.as_secs_f64() * 1e3,
                "prepare": stats.stages.prepare.as_secs_f64() * 1e3,
                "submit": stats.stages.submit.as_secs_f64() * 1e3,
                "wait": stats.stages.wait.as_secs_f64() * 1e3,
                "map_back": stats.stages.map_back.as_secs_f64() * 1e3,
                "sink": stats.stages.sink.as_secs_f64() * 1e3,
            },
            "mpix_s": stats.totals.pixels as f64 / total / 1e3,
            "check": check,
            "shape": crate::switches::get().fast_shape,
            "summary": method.summary(),
            "devices": (!devices.is_empty()).then_some(devices),
        });
        if let (Some(l), Some(f)) = (line.as_object_mut(), fields.as_object()) {
            l.extend(f.clone());
        }
        println!("{line}");
    }
    Ok(())
}
