//! `mapfilter tune`: measures the launch settings of the kernels that have
//! such knobs (naive's fast variant: work-group shape; dct5: the row pass's
//! work-group size) and the tile side, per OpenCL device, on a synthetic
//! 17-class map, and stores the fastest in the tune database
//! ([`crate::device::tune`]) that later runs read. Needs no GDAL.

use crate::classes::ClassTable;
use crate::device::tune::{self, Setting, TuneDb};
use crate::device::{Device, DeviceChoice, DeviceKind};
use crate::engine::{self, SmoothJob};
use crate::error::Result;
use crate::io::MemRaster;
use crate::kernel::{Kernel, KernelSpec};
use crate::method::ClassSmoother;
use crate::method::naive::cl::{NaiveCl, Variant};
use crate::method::separable::cl::SeparableCl;
use crate::synth::{Pattern, SynthRaster};
use clap::Args;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tiles::Border;

#[derive(Args, Debug)]
pub struct TuneArgs {
    /// Devices to tune: all (every GPU, else every OpenCL device), an index, cpu, gpu or a list.
    #[arg(long, default_value = "all")]
    pub device: DeviceChoice,
    /// The database file (default: $MAPFILTER_TUNE_DB, else
    /// $XDG_CACHE_HOME/mapfilter/tune.json, else ~/.cache/mapfilter/tune.json).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Side of the synthetic map, at least 512 (the smallest tile side tried;
    /// default: 4096 on a GPU, 1024 elsewhere).
    #[arg(long, value_parser = parse_size)]
    pub size: Option<usize>,
    /// Seconds per device and kernel after which the candidates left are skipped.
    #[arg(long, default_value_t = 60)]
    pub budget: u64,
    /// Timed runs per candidate (the fastest counts), after one untimed run.
    #[arg(long, default_value_t = 2)]
    pub repeat: usize,
}

/// The class count tuned for (the land-cover maps the project smooths).
const CLASSES: u16 = 17;

/// The smallest tile side tuned, and so the smallest map.
const SMALLEST_TILE: usize = 512;

/// `--size`: a whole number of at least [`SMALLEST_TILE`] (a smaller map
/// has no tile side to try).
fn parse_size(text: &str) -> std::result::Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= SMALLEST_TILE => Ok(n),
        Ok(n) => Err(format!(
            "{n} is smaller than the smallest tile side tried ({SMALLEST_TILE}); give {SMALLEST_TILE} or more"
        )),
        Err(_) => Err(format!("'{text}' is not a whole number")),
    }
}

pub fn run(args: TuneArgs) -> Result<()> {
    let path = match args.db.clone().or_else(tune::db_path) {
        Some(p) => p,
        None => crate::bail!(
            usage,
            "no place for the tune database: neither HOME nor XDG_CACHE_HOME is set",
            hint = "give --db PATH"
        ),
    };
    // An unusable file is replaced, as runs would ignore it.
    let mut db = TuneDb::load(&path).ok().flatten().unwrap_or_default();
    db.format = TuneDb::new().format;
    let devices: Vec<Device> = args.device.members()?.into_iter().flatten().collect();
    if devices.is_empty() {
        crate::bail!(
            device,
            "no OpenCL device to tune",
            hint = "`mapfilter devices` lists them; the host has nothing to tune"
        );
    }
    for dev in &devices {
        let gpu = dev.info().kind == DeviceKind::Gpu;
        let size = args.size.unwrap_or(if gpu { 4096 } else { 1024 });
        crate::limits::check_in_memory(
            size,
            size,
            crate::limits::IN_MEMORY_RUN_BYTES,
            "a tune map",
        )?;
        let raster = MemRaster::new(
            size,
            size,
            SynthRaster::new(size, size, CLASSES, Pattern::Simplex, 1).to_vec(),
        );
        let tiles: Vec<usize> = [SMALLEST_TILE, 1024, 2048, 4096]
            .into_iter()
            .filter(|&t| t <= size && (gpu || t <= 2048))
            .collect();
        let ctx = Sweep {
            dev,
            raster: &raster,
            tiles: &tiles,
            repeat: args.repeat.max(1),
            budget: Duration::from_secs(args.budget),
        };
        let dct5 = ctx.best(tune::DCT5, "gaussian:5", &dct5_shapes(dev))?;
        let naive = ctx.best(tune::NAIVE_FAST, "gaussian:2.5", &naive_shapes(gpu))?;
        for s in [dct5, naive].into_iter().flatten() {
            println!(
                "{}: {s} ({:.1} Mpx/s)",
                dev.info().name,
                s.mpix_s.unwrap_or(0.0)
            );
            db.put(s);
        }
    }
    db.save(&path)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// dct5's row-pass work-group sizes the device takes.
fn dct5_shapes(dev: &Device) -> Vec<Vec<usize>> {
    [64, 32, 128, 256]
        .into_iter()
        .filter(|&g| g <= dev.info().max_work_group)
        .map(|g| vec![g])
        .collect()
}

/// Fast naive shapes `[TX, TY, PY, TILE_LOCAL, HIST_LOCAL]` worth trying:
/// the default of the device kind first.
fn naive_shapes(gpu: bool) -> Vec<Vec<usize>> {
    let gpu_shapes = [
        [32, 8, 4, 1, 1],
        [32, 4, 8, 1, 1],
        [32, 2, 16, 1, 1],
        [32, 8, 1, 1, 1],
        [16, 16, 2, 1, 1],
        [32, 4, 8, 1, 0],
    ];
    let cpu_shapes = [
        [8, 1, 32, 0, 0],
        [16, 1, 16, 0, 0],
        [8, 1, 64, 0, 0],
        [4, 1, 32, 0, 0],
    ];
    let (first, second) = if gpu {
        (&gpu_shapes[..], &cpu_shapes[..])
    } else {
        (&cpu_shapes[..], &gpu_shapes[..])
    };
    first
        .iter()
        .chain(second.iter().take(1))
        .map(|s| s.to_vec())
        .collect()
}

/// One device's measurements.
struct Sweep<'a> {
    dev: &'a Device,
    raster: &'a MemRaster,
    tiles: &'a [usize],
    repeat: usize,
    budget: Duration,
}

impl Sweep<'_> {
    /// The fastest of `shapes` at the middle tile side, then the fastest
    /// tile side for it; `None` if no candidate ran.
    fn best(
        &self,
        kernel_name: &str,
        spec: &str,
        shapes: &[Vec<usize>],
    ) -> Result<Option<Setting>> {
        let kernel = spec.parse::<KernelSpec>()?.build()?;
        let start = Instant::now();
        let info = self.dev.info();
        let setting = |shape: &[usize], tile| Setting {
            device: info.name.clone(),
            driver: info.driver.clone(),
            kernel: kernel_name.to_string(),
            shape: shape.to_vec(),
            tile: Some(tile),
            mpix_s: None,
        };
        let mid = self.tiles[self.tiles.len() / 2];
        let mut best: Option<Setting> = None;
        let consider = |best: &mut Option<Setting>, s: Setting, rate: f64| {
            eprintln!("tune {}: {s}: {rate:.1} Mpx/s", info.name);
            if best.as_ref().is_none_or(|b| b.mpix_s < Some(rate)) {
                *best = Some(Setting {
                    mpix_s: Some(rate),
                    ..s
                });
            }
        };
        for shape in shapes {
            if start.elapsed() > self.budget {
                eprintln!(
                    "tune {}: budget spent, {kernel_name} shapes left untried",
                    info.name
                );
                break;
            }
            let s = setting(shape, mid);
            let rate = self.rate(&kernel, &s)?;
            consider(&mut best, s, rate);
        }
        let Some(shape) = best.as_ref().map(|b| b.shape.clone()) else {
            return Ok(None);
        };
        for &tile in self.tiles.iter().filter(|&&t| t != mid) {
            if start.elapsed() > self.budget {
                eprintln!(
                    "tune {}: budget spent, {kernel_name} tiles left untried",
                    info.name
                );
                break;
            }
            let s = setting(&shape, tile);
            let rate = self.rate(&kernel, &s)?;
            consider(&mut best, s, rate);
        }
        Ok(best)
    }

    /// Megapixels a second of the fastest of the timed runs with `setting`.
    fn rate(&self, kernel: &Kernel, setting: &Setting) -> Result<f64> {
        let method: Box<dyn ClassSmoother> = match setting.kernel.as_str() {
            tune::DCT5 => {
                let plan = crate::method::separable::dct5_plan(
                    kernel,
                    crate::method::dct5::DEFAULT_TERMS,
                )?;
                Box::new(
                    SeparableCl::new(self.dev.clone(), "dct5", &plan, kernel, false)?
                        .with_tuning(Some(setting.clone())),
                )
            }
            _ => Box::new(
                NaiveCl::new(self.dev.clone(), Variant::Fast)?.with_tuning(Some(setting.clone())),
            ),
        };
        let table = ClassTable::from_codes(&self.raster.data, None)?;
        let job = SmoothJob {
            class_weights: vec![1; table.len()],
            output_nodata: table.output_nodata(u16::MAX),
            classes: table,
            kernel: kernel.clone(),
            border: Border::Same,
            fill_nodata: false,
            tile: setting.tile.unwrap_or(crate::io::DEFAULT_TILE),
            policies: Default::default(),
        };
        let mut fastest = Duration::MAX;
        for rep in 0..=self.repeat {
            let (_, stats) =
                engine::smooth_in_memory_with_stats(self.raster, &job, method.as_ref())?;
            if rep > 0 {
                fastest = fastest.min(stats.totals.wall);
            }
        }
        Ok(self.raster.data.len() as f64 / fastest.as_secs_f64().max(1e-9) / 1e6)
    }
}
