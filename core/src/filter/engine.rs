//! The image tile engine: streams a continuous raster through a [`Chain`]
//! tile by tile, with halo = the chain's radius, through the shared
//! [`crate::pipeline`] (read tile i+1 while tile i runs and tile i−1 is
//! written). Sources and sinks own the pixels (GDAL files or memory);
//! a [`ChainRunner`] decides where the chain runs (host or device).

use super::border::{BorderMode, Win};
use super::op::{Chain, Op, Step, TileAt, pad_bands};
use super::strip::Source;
use crate::error::Result;
use crate::io::{ImageSink, ImageSource, MemImage};
use crate::pipeline::{self, RunTotals};
use crate::pixel::{Bands, Pixel, Plane};
use crate::progress::Progress;
use crate::with_bands;
use std::time::{Duration, Instant};
use tiles::{Border, Rect, TileGrid};

/// Runs a chain on one tile.
///
/// A runner may keep tiles in flight: the engine [`submit`](ChainRunner::submit)s
/// a tile and [`finish`](ChainRunner::finish)es it up to
/// [`depth`](ChainRunner::depth) tiles later, in order. The defaults run each
/// tile at once.
pub trait ChainRunner: Sync {
    fn name(&self) -> String;
    /// Device times since the last call (reset on read); `None` on the host.
    fn device_times(&self) -> Option<crate::device::DeviceTimes> {
        None
    }
    fn run(&self, chain: &Chain, input: Bands, at: &TileAt) -> Result<Bands>;

    /// Tiles kept in flight beyond the one being submitted.
    fn depth(&self) -> usize {
        0
    }

    /// Starts a tile; [`ChainRunner::finish`] gives its result.
    fn submit(&self, chain: &Chain, input: Bands, at: &TileAt) -> Result<Pending> {
        self.run(chain, input, at).map(Pending::Done)
    }

    /// The result of a tile [`ChainRunner::submit`] started.
    fn finish(&self, pending: Pending) -> Result<Bands> {
        match pending {
            Pending::Done(bands) => Ok(bands),
            Pending::InFlight(_) => crate::bail!(
                internal,
                "a tile in flight on a runner that keeps none",
                hint = "this is a bug: please report it"
            ),
        }
    }
}

/// A submitted tile: done, or in flight in a form its runner knows.
pub enum Pending {
    Done(Bands),
    InFlight(Box<dyn std::any::Any>),
}

/// The host runner: plain Rust, rayon over rows.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostRunner {
    /// Use the plain per-pixel references only (no fast paths).
    pub reference: bool,
}

impl ChainRunner for HostRunner {
    fn name(&self) -> String {
        if self.reference {
            "host-reference"
        } else {
            "host"
        }
        .into()
    }

    fn run(&self, chain: &Chain, input: Bands, at: &TileAt) -> Result<Bands> {
        if self.reference {
            return Ok(chain.run_tile_host(input, at, true));
        }
        Ok(run_fast(chain, input, at))
    }
}

/// The chain on the host's fast paths. Ops with a row kernel (convolution,
/// median, Scharr) read the previous op's output, or the tile, through
/// per-strip buffers with the border applied on the fly
/// ([`super::strip::run`]); the others, and every op where the input has a
/// nodata value, get a padded copy ([`pad_bands`]) as the reference does.
fn run_fast(chain: &Chain, input: Bands, at: &TileAt) -> Bands {
    let (mut bands, mut have, mut nd) = (input, at.have, at.nd);
    for Step { op, target, image } in chain.steps(at) {
        let in_type = bands.sample_type();
        let window = TileAt {
            have,
            image,
            out: target,
            border: at.border,
            nd,
        };
        if let Some(out) = op.apply_window(&bands, &window, false) {
            bands = out;
        } else {
            let direct =
                with_bands!(&bands, p => by_rows(op, p, have, image, at.border, target, nd));
            bands = direct.unwrap_or_else(|| {
                let want = target.grow(op.radius());
                let padded = pad_bands(&bands, have, image, want, at.border, nd);
                op.apply_host(&padded, nd, false)
            });
        }
        nd = op.out_nodata(in_type, nd);
        have = target;
    }
    bands
}

/// `op` through its row kernel on `planes` (window `have` of an
/// `image`-sized raster) into `target`, where it has one and there is no nodata.
fn by_rows<T: Pixel>(
    op: &Op,
    planes: &[Plane<T>],
    have: Win,
    image: (usize, usize),
    border: BorderMode,
    target: Win,
    nd: Option<f64>,
) -> Option<Bands> {
    if nd.is_some() {
        return None;
    }
    let src = Source::Border {
        planes,
        have,
        image,
        target,
        mode: border,
        fill: border.fill(nd),
    };
    Some(match op {
        Op::Conv(c) => T::wrap(c.fast_on(src)),
        Op::Median(m) => T::wrap(m.fast_on(src)),
        Op::Scharr(s) => Bands::F32(s.fast_on(src)),
        _ => return None,
    })
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct FilterJob {
    pub chain: Chain,
    pub border: BorderMode,
    pub tile: usize,
}

/// The tiles of a job on an input of `size`: square tiles of the output
/// raster, each reading the input window [`Chain::source_window`] gives.
pub fn tiles(job: &FilterJob, size: (usize, usize)) -> Result<Vec<tiles::Tile>> {
    let (ow, oh) = job.chain.out_size(size);
    let grid = TileGrid::new(ow, oh, 0, Border::Same, job.tile)?;
    Ok(grid
        .tiles()
        .map(|mut t| {
            let s = job.chain.source_window(win(t.output), size);
            t.source = Rect::new(s.x as usize, s.y as usize, s.width, s.height);
            t
        })
        .collect())
}

/// Filters `source` into `sink` (of the chain's output size), tile by tile.
pub fn filter(
    source: &mut dyn ImageSource,
    sink: &mut dyn ImageSink,
    job: &FilterJob,
    runner: &dyn ChainRunner,
    progress: &Progress,
) -> Result<RunTotals> {
    let start = Instant::now();
    let (w, h) = source.size();
    let nd = source.nodata();
    job.chain
        .check(source.bands(), source.sample_type(), job.border, nd)?;
    let tiles = tiles(job, (w, h))?;
    progress.start(tiles.len() as u64, "tiles");
    let mut stats = RunTotals::default();
    let compute = std::cell::Cell::new(Duration::ZERO);
    pipeline::run_deferred(
        tiles.into_iter(),
        |tile| source.read(tile.source),
        |tile, input| {
            let at = TileAt {
                have: win(tile.source),
                image: (w, h),
                out: win(tile.output),
                border: job.border,
                nd,
            };
            let t0 = Instant::now();
            let pending = runner.submit(&job.chain, input, &at);
            compute.set(compute.get() + t0.elapsed());
            pending
        },
        |tile, pending| {
            let t0 = Instant::now();
            let out = runner.finish(pending)?;
            compute.set(compute.get() + t0.elapsed());
            stats.tile(tile.output.area());
            Ok(out)
        },
        (runner.depth(), pipeline::in_order()),
        |tile, out| {
            sink.write(tile.output, &out)?;
            progress.inc(1);
            Ok(())
        },
    )?;
    progress.finish();
    stats.compute = compute.get();
    stats.wall = start.elapsed();
    Ok(stats)
}

fn win(r: Rect) -> Win {
    Win::new(r.x as i64, r.y as i64, r.width, r.height)
}

/// Filters an in-memory image in one call.
pub fn filter_in_memory(
    input: &MemImage,
    job: &FilterJob,
    runner: &dyn ChainRunner,
) -> Result<MemImage> {
    let (w, h) = job.chain.out_size(input.bands.size());
    let t = job.chain.out_type(input.bands.sample_type());
    let mut out = MemImage::zeros(t, w, h, job.chain.out_bands(input.bands.count()));
    out.nodata = job
        .chain
        .out_nodata(input.bands.sample_type(), input.nodata);
    filter(
        &mut input.clone(),
        &mut out,
        job,
        runner,
        &Progress::hidden(),
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::op::tests::noise_planes;
    use crate::pixel::SampleType;

    fn job(ops: &[&str], border: BorderMode, tile: usize) -> FilterJob {
        let specs: Vec<String> = ops.iter().map(|s| s.to_string()).collect();
        FilterJob {
            chain: Chain::parse(&specs).unwrap(),
            border,
            tile,
        }
    }

    /// The chain run op by op on the whole image, each op one whole-image tile.
    fn one_by_one(input: &MemImage, ops: &[&str], border: BorderMode, reference: bool) -> MemImage {
        let mut img = input.clone();
        let big = 1 << 20;
        for op in ops {
            img = filter_in_memory(&img, &job(&[op], border, big), &HostRunner { reference })
                .unwrap();
        }
        img
    }

    #[test]
    fn tiled_chains_equal_ops_run_one_by_one() {
        let img = MemImage::new(Bands::U8(noise_planes(45, 38, 3, 11)), None);
        let ops = ["median:3", "box:5", "sharpen:3", "scharr:5"];
        for border in [
            BorderMode::Reflect101,
            BorderMode::Replicate,
            BorderMode::Constant(40.0),
        ] {
            let want = one_by_one(&img, &ops, border, false);
            for tile in [7, 16, 64] {
                let got = filter_in_memory(&img, &job(&ops, border, tile), &HostRunner::default())
                    .unwrap();
                assert_eq!(got, want, "{border:?} tile {tile}");
            }
        }
    }

    /// The largest difference between two images' samples.
    fn worst(a: &MemImage, b: &MemImage) -> f32 {
        fn flat(b: &Bands) -> Vec<f32> {
            with_bands!(b, p => p.iter().flat_map(|q| q.data.iter().map(|v| v.to_f32())).collect())
        }
        assert_eq!(a.bands.size(), b.bands.size());
        let (a, b) = (flat(&a.bands), flat(&b.bands));
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn fast_paths_equal_the_reference_on_every_border_and_type() {
        // Wide enough for the full-width blocks of every row kernel, tiles
        // narrow enough for their short-row paths.
        let (w, h) = (260, 19);
        let images = [
            MemImage::new(Bands::U8(noise_planes(w, h, 3, 1)), None),
            MemImage::new(Bands::U16(noise_planes(w, h, 1, 2)), None),
            MemImage::new(Bands::I16(noise_planes(w, h, 2, 3)), None),
            MemImage::new(Bands::F32(noise_planes(w, h, 1, 4)), None),
        ];
        let ops = [
            "box:3",
            "box:5",
            "sharpen:3",
            "sharpen:5",
            "gaussian:1",
            "median:3",
            "median:5",
            "median:7",
            "scharr:3",
            "scharr:7",
        ];
        for img in &images {
            let t = img.bands.sample_type();
            for border in [
                BorderMode::Reflect101,
                BorderMode::Replicate,
                BorderMode::Constant(-7.0),
            ] {
                for op in ops {
                    let want = one_by_one(img, &[op], border, true);
                    for tile in [16, 1 << 20] {
                        let got = filter_in_memory(
                            img,
                            &job(&[op], border, tile),
                            &HostRunner::default(),
                        )
                        .unwrap();
                        let what = format!("{op} {t:?} {border:?} tile {tile}");
                        // Integer sums are exact; `f32` sums in another order
                        // (and Byte Gaussian's fixed point) may differ by rounding.
                        let tol = match (t, op) {
                            (SampleType::F32, "box:3" | "box:5" | "gaussian:1") => 1e-3,
                            (SampleType::F32, "sharpen:3" | "sharpen:5") => 1e-3,
                            (_, "gaussian:1") => 1.0,
                            _ => 0.0,
                        };
                        assert!(worst(&got, &want) <= tol, "{what}: {}", worst(&got, &want));
                        if tol == 0.0 {
                            assert_eq!(got, want, "{what}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn chains_that_change_the_resolution_tile_too() {
        let chains: [&[&str]; 5] = [
            &["pyrdown"],
            &["pyrup"],
            &["box:3", "pyrdown", "median:3", "pyrdown"],
            &["pyrdown", "scharr:3", "pyrup"],
            &["pyrup", "gaussian:1", "pyrdown", "pyrup"],
        ];
        for (w, h) in [(45, 38), (31, 9), (1, 4)] {
            let img = MemImage::new(Bands::I16(noise_planes(w, h, 2, 5)), None);
            for ops in chains {
                for border in [
                    BorderMode::Reflect101,
                    BorderMode::Replicate,
                    BorderMode::Constant(-9.0),
                ] {
                    let want = one_by_one(&img, ops, border, true);
                    let size = Chain::parse(&ops.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                        .unwrap()
                        .out_size((w, h));
                    assert_eq!(want.bands.size(), size);
                    for tile in [5, 16, 1 << 20] {
                        for reference in [true, false] {
                            let got = filter_in_memory(
                                &img,
                                &job(ops, border, tile),
                                &HostRunner { reference },
                            )
                            .unwrap();
                            assert_eq!(got, want, "{ops:?} {border:?} tile {tile} {w}x{h}");
                        }
                    }
                }
            }
        }
        // Nodata: centres decide, missing neighbours take the centre's value.
        let mut planes = noise_planes::<u16>(27, 21, 1, 9);
        planes[0].data.iter_mut().step_by(5).for_each(|v| *v = 0);
        let img = MemImage::new(Bands::U16(planes), Some(0.0));
        let ops = ["pyrdown", "pyrup", "pyrup"];
        let want = one_by_one(&img, &ops, BorderMode::Nodata, true);
        for tile in [7, 32] {
            let got = filter_in_memory(
                &img,
                &job(&ops, BorderMode::Nodata, tile),
                &HostRunner::default(),
            )
            .unwrap();
            assert_eq!(got, want, "nodata tile {tile}");
        }
    }

    #[test]
    fn demosaicing_tiles_too() {
        for (w, h) in [(37, 22), (3, 5), (2, 9)] {
            let img = MemImage::new(Bands::U16(noise_planes(w, h, 1, 7)), None);
            for ops in [
                &["demosaic:RGGB"][..],
                &["demosaic:GBRG:ea", "pyrdown"],
                &["demosaic:BGGR:mhc", "gray"],
                &["demosaic:GRBG:mhc"],
            ] {
                let want = one_by_one(&img, ops, BorderMode::Replicate, true);
                for tile in [4, 9, 1 << 20] {
                    let got = filter_in_memory(
                        &img,
                        &job(ops, BorderMode::Replicate, tile),
                        &HostRunner::default(),
                    )
                    .unwrap();
                    assert_eq!(got, want, "{ops:?} tile {tile} {w}x{h}");
                }
            }
        }
    }

    #[test]
    fn pyramid_steps_scale_the_geotransform() {
        let chain = Chain::parse(&["pyrdown".into(), "box:3".into()]).unwrap();
        let gt = chain.geo_transform([100.0, 10.0, 0.0, 500.0, 0.0, -10.0]);
        // Pixel 0 of the output is centred on input pixel 0: its corner is half a pixel out.
        assert_eq!(gt, [95.0, 20.0, 0.0, 505.0, 0.0, -20.0]);
        let chain = Chain::parse(&["pyrup".into()]).unwrap();
        let gt = chain.geo_transform([100.0, 10.0, 0.0, 500.0, 0.0, -10.0]);
        assert_eq!(gt, [102.5, 5.0, 0.0, 497.5, 0.0, -5.0]);
        assert_eq!(chain.out_size((3, 5)), (6, 10));
    }

    #[test]
    fn nodata_chains_tile_too() {
        let mut planes = noise_planes::<i16>(30, 27, 2, 3);
        for (i, v) in planes[0].data.iter_mut().enumerate() {
            if i % 7 == 0 {
                *v = -9999;
            }
        }
        let img = MemImage::new(Bands::I16(planes), Some(-9999.0));
        let ops = ["median:3", "oil:2:8", "bilateral:1:500:color"];
        let want = one_by_one(&img, &ops, BorderMode::Nodata, true);
        for tile in [5, 13] {
            let got = filter_in_memory(
                &img,
                &job(&ops, BorderMode::Nodata, tile),
                &HostRunner::default(),
            )
            .unwrap();
            assert_eq!(got, want, "tile {tile}");
        }
        // Nodata centres stay nodata.
        let Bands::I16(out) = &want.bands else {
            panic!()
        };
        assert_eq!(out[0].data[0], -9999);
        assert_eq!(out[1].data[0], -9999);
    }
}
