//! How long a smoothing's engine will take, before it runs: the chosen
//! method timed on a synthetic sample and scaled to the output's pixels
//! (`smooth --estimate`, `batch plan --estimate`).
//!
//! Why a timed sample rather than `auto`'s cost model: the model ranks
//! methods in relative units (fitted on one 16-core host, unfitted on
//! GPUs), while a sample run measures this machine, this device and this
//! method, start-up excluded. The sample is whole tiles of the run's tile
//! side, as many as the engine runs at once, of simplex blobs with the
//! classes the run expects: the input's pixels are not read, so how far
//! its own map is from that sample (more classes per window, shorter runs)
//! is the estimate's error, which the text says.

use crate::classes::ClassTable;
use crate::engine::{self, SmoothJob};
use crate::error::Result;
use crate::io::MemRaster;
use crate::kernel::Kernel;
use crate::method::ClassSmoother;
use crate::progress::Progress;
use crate::synth::{Pattern, SynthRaster};
use std::time::Instant;
use tiles::Border;

/// The most pixels a sample takes: the estimate must cost well under a
/// second wherever the run itself is worth estimating.
const MAX_SAMPLE_PIXELS: usize = 16 << 20;

/// The side of the sample's warm-up run (OpenCL programs, caches, pools).
const WARM_UP_SIDE: usize = 64;

/// A timed sample and what it predicts.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Output pixels of the sample and of the run.
    pub sample_pixels: usize,
    pub run_pixels: u64,
    /// Classes in the sample.
    pub classes: usize,
    /// The sample's engine time in seconds.
    pub sample_secs: f64,
}

impl Estimate {
    /// Nanoseconds of engine time per output pixel, as measured.
    pub fn ns_per_pixel(&self) -> f64 {
        self.sample_secs * 1e9 / self.sample_pixels.max(1) as f64
    }

    /// The run's engine time in seconds.
    pub fn engine_secs(&self) -> f64 {
        self.ns_per_pixel() * self.run_pixels as f64 / 1e9
    }

    /// One line for a dry run.
    pub fn describe(&self) -> String {
        format!(
            "estimate: engine about {} for {:.1} Mpx ({:.1} ns/px: {:.1} Mpx of synthetic blobs of {} classes timed in {:.0} ms with this method on this machine, start-up excluded); a map with more classes per window or shorter runs takes longer, and reading and writing come on top (overlapped with the engine, about what a gdal_translate copy of the input takes)",
            seconds(self.engine_secs()),
            self.run_pixels as f64 / 1e6,
            self.ns_per_pixel(),
            self.sample_pixels as f64 / 1e6,
            self.classes,
            self.sample_secs * 1e3,
        )
    }
}

/// "0.42 s", "3 min 5 s", "2 h 10 min".
fn seconds(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.2} s")
    } else if s < 3600.0 {
        format!("{} min {} s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{} h {} min",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

/// What the run to estimate looks like.
#[derive(Clone, Copy, Debug)]
pub struct RunShape {
    /// Output size of the run.
    pub width: usize,
    pub height: usize,
    /// Its tile side and the classes it expects.
    pub tile: usize,
    pub classes: usize,
}

impl RunShape {
    /// The sample's side in whole tiles: enough tiles for every worker the
    /// engine runs at once (`lanes`), within the run's own size and
    /// [`MAX_SAMPLE_PIXELS`].
    fn sample_size(&self, lanes: usize) -> (usize, usize) {
        let per_side = (lanes.max(1) as f64).sqrt().ceil() as usize;
        let side = per_side * self.tile.max(1);
        let w = side.min(self.width.max(1));
        let h = side
            .min(self.height.max(1))
            .min((MAX_SAMPLE_PIXELS / w).max(1));
        (w, h)
    }
}

/// Times `method` with `kernel` on a synthetic sample shaped like `run`
/// (after a small untimed warm-up run) and scales it to the run's pixels.
pub fn estimate(method: &dyn ClassSmoother, kernel: &Kernel, run: RunShape) -> Result<Estimate> {
    let classes = run.classes.clamp(1, u16::MAX as usize);
    let lanes = rayon::current_num_threads().max(method.depth());
    let (w, h) = run.sample_size(lanes);
    let time = |w: usize, h: usize| -> Result<f64> {
        let data = SynthRaster::new(w, h, classes as u16, Pattern::Simplex, 1).to_vec();
        let table = ClassTable::from_codes(&data, None)?;
        let job = SmoothJob {
            class_weights: vec![1; table.len()],
            output_nodata: table.output_nodata(u16::MAX),
            kernel: kernel.clone(),
            classes: table,
            border: Border::Same,
            fill_nodata: false,
            tile: run.tile.max(1),
            policies: Default::default(),
        };
        let mut input = MemRaster::new(w, h, data);
        let mut out = MemRaster::filled(w, h, 0);
        let start = Instant::now();
        engine::smooth(&mut input, &mut out, &job, method, &Progress::hidden())?;
        Ok(start.elapsed().as_secs_f64())
    };
    time(WARM_UP_SIDE.min(w), WARM_UP_SIDE.min(h))?;
    let sample_secs = time(w, h)?;
    Ok(Estimate {
        sample_pixels: w * h,
        run_pixels: run.width as u64 * run.height as u64,
        classes,
        sample_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;
    use crate::method::naive::NaiveHost;

    #[test]
    fn the_sample_is_whole_tiles_for_every_lane_within_the_run_and_the_cap() {
        let run = RunShape {
            width: 10_000,
            height: 8_000,
            tile: 512,
            classes: 17,
        };
        assert_eq!(run.sample_size(1), (512, 512));
        assert_eq!(run.sample_size(2), (1024, 1024));
        assert_eq!(run.sample_size(16), (2048, 2048));
        let (w, h) = run.sample_size(64);
        assert!(
            w * h <= MAX_SAMPLE_PIXELS && w % 512 == 0 && h % 512 == 0,
            "{w}x{h}"
        );
        let small = RunShape {
            width: 300,
            height: 100,
            ..run
        };
        assert_eq!(small.sample_size(16), (300, 100));
        let gpu = RunShape { tile: 8192, ..run };
        let (w, h) = gpu.sample_size(4);
        assert!(w * h <= MAX_SAMPLE_PIXELS, "{w}x{h}");
    }

    #[test]
    fn an_estimate_scales_the_sample_to_the_run() {
        let kernel = "gaussian:2".parse::<KernelSpec>().unwrap().build().unwrap();
        let run = RunShape {
            width: 4000,
            height: 3000,
            tile: 128,
            classes: 5,
        };
        let e = estimate(&NaiveHost, &kernel, run).unwrap();
        assert_eq!(e.run_pixels, 12_000_000);
        assert!(e.sample_pixels > 0 && e.sample_pixels <= MAX_SAMPLE_PIXELS);
        assert!(e.sample_secs > 0.0);
        let ratio = e.engine_secs() / e.sample_secs;
        let pixels = e.run_pixels as f64 / e.sample_pixels as f64;
        assert!(
            (ratio - pixels).abs() < 1e-6 * pixels,
            "{ratio} vs {pixels}"
        );
        assert!(
            e.describe().starts_with("estimate: engine about "),
            "{}",
            e.describe()
        );
        assert!(!e.describe().contains('\n'));
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(seconds(0.4234), "0.42 s");
        assert_eq!(seconds(185.2), "3 min 5 s");
        assert_eq!(seconds(7800.0), "2 h 10 min");
    }
}
