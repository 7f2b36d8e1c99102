//! The fast methods on the OpenCL test device (PoCL here) against their host
//! twins: the float scores agree (winners identical except near-ties, which
//! must be rare), and the certified mode is byte-identical to naive.

use crate::common;

use mapfilter::device::test_device;
use mapfilter::engine::{self, SmoothJob, smooth_in_memory};
use mapfilter::io::MemRaster;
use mapfilter::io::{ClassSink, ClassSource};
use mapfilter::kernel::{Kernel, KernelSpec};
use mapfilter::method::ClassSmoother;
use mapfilter::method::naive::NaiveHost;
use mapfilter::method::naive::cl::{NaiveCl, Variant};
use mapfilter::method::separable::SeparableHost;
use mapfilter::method::separable::cl::SeparableCl;
use mapfilter::method::separable::svd::RankChoice;
use mapfilter::method::separable::{self, svd};
use mapfilter::progress::Progress;
use mapfilter::synth::{Pattern, SynthRaster};
use tiles::Border;
use tiles::Rect;

const NODATA: u16 = 255;

/// Blobs (or noise) of `classes` classes with scattered nodata.
fn input(w: usize, h: usize, classes: u16, pattern: Pattern, seed: u64) -> MemRaster {
    common::synth_with_holes((w, h), classes, pattern, seed, 8.0, 50, NODATA)
}

fn job(kernel: &Kernel, data: &[u16], weights: &str, tile: usize, fill: bool) -> SmoothJob {
    common::class_job(kernel, data, weights, (Border::Same, fill), tile, NODATA)
}

#[test]
fn device_matches_host_and_exact_matches_naive() {
    let Some(dev) = test_device() else { return };
    let cases = [
        ("gaussian:2.5", 4, Pattern::Random, "", 64, false),
        ("gaussian:1", 3, Pattern::Simplex, "1:3,2:0.5", 40, true),
        ("gaussian:5", 6, Pattern::Simplex, "", 100, false),
        ("box:5", 3, Pattern::Random, "", 33, false),
        ("disc:3", 5, Pattern::Simplex, "0:2", 50, true),
    ];
    for (spec, classes, pattern, weights, tile, fill) in cases {
        let kernel: Kernel = spec.parse::<KernelSpec>().unwrap().build().unwrap();
        let raster = input(97, 83, classes, pattern, 7);
        let job = job(&kernel, &raster.data, weights, tile, fill);
        let naive = smooth_in_memory(&raster, &job, &NaiveHost).unwrap();
        let mut plans = vec![("svd", svd::plan(&kernel, RankChoice::Numerical))];
        if let Ok(p) = separable::dct5_plan(&kernel, 3.min(kernel.radius())) {
            plans.push(("dct5", p));
        }
        for (name, plan) in plans {
            let host = SeparableHost::new(name, plan.clone(), &kernel);
            let cl = SeparableCl::new(dev.clone(), name, &plan, &kernel, false).unwrap();
            let a = smooth_in_memory(&raster, &job, &host).unwrap();
            let b = smooth_in_memory(&raster, &job, &cl).unwrap();
            let differ = a.data.iter().zip(&b.data).filter(|(x, y)| x != y).count();
            // f32 against f64: only near-ties may flip.
            assert!(
                differ * 1000 <= a.data.len(),
                "{spec} {name}: {differ} differ"
            );
            let exact = SeparableCl::new(dev.clone(), name, &plan, &kernel, true).unwrap();
            assert!(exact.is_exact());
            let c = smooth_in_memory(&raster, &job, &exact).unwrap();
            assert_eq!(c, naive, "{spec} {}", exact.name());
        }
    }
}

/// A raster in memory behind the window interface alone: what a file gives
/// the engine, so that it copies every window in and out.
struct Windowed(MemRaster);

impl ClassSource for Windowed {
    fn size(&self) -> (usize, usize) {
        self.0.size()
    }
    fn read(&mut self, window: Rect, buf: &mut [u16]) -> mapfilter::error::Result<()> {
        self.0.read(window, buf)
    }
}

impl ClassSink for Windowed {
    fn write(&mut self, window: Rect, codes: &[u16]) -> mapfilter::error::Result<()> {
        self.0.write(window, codes)
    }
}

/// Device runs stage a raster in memory in place and map their results
/// straight into an output in memory: byte for byte what windows copied in
/// and out give, for tiles that do not divide the raster, both borders.
#[test]
fn rasters_in_memory_run_in_place_as_through_windows() {
    let Some(dev) = test_device() else { return };
    let kernel: Kernel = "gaussian:2.5"
        .parse::<KernelSpec>()
        .unwrap()
        .build()
        .unwrap();
    let plan = separable::dct5_plan(&kernel, 3).unwrap();
    let raster = input(131, 77, 5, Pattern::Simplex, 3);
    let methods: Vec<Box<dyn ClassSmoother>> = vec![
        Box::new(SeparableCl::new(dev.clone(), "dct5", &plan, &kernel, false).unwrap()),
        Box::new(SeparableCl::new(dev.clone(), "dct5", &plan, &kernel, true).unwrap()),
        Box::new(NaiveCl::new(dev.clone(), Variant::Fast).unwrap()),
    ];
    for border in [Border::Same, Border::Valid] {
        for tile in [29, 64] {
            let mut job = job(&kernel, &raster.data, "", tile, false);
            job.border = border;
            let (w, h) = job.grid(raster.width, raster.height).unwrap().output_size();
            for method in &methods {
                let at = format!("{} {border:?} tile {tile}", method.name());
                let mut in_place = MemRaster::filled(w, h, 0);
                let hidden = Progress::hidden();
                let mut source = raster.clone();
                engine::smooth(&mut source, &mut in_place, &job, method.as_ref(), &hidden).unwrap();
                let mut windows = Windowed(MemRaster::filled(w, h, 0));
                let mut source = Windowed(raster.clone());
                engine::smooth(&mut source, &mut windows, &job, method.as_ref(), &hidden).unwrap();
                assert!(in_place == windows.0, "{at}");
            }
        }
    }
}

/// Quantised confidences for a raster of `w × h`: a smooth field (another
/// pattern's codes, spread over 0..=60000) with a zero at every 23rd pixel.
fn votes(w: usize, h: usize, seed: u64) -> MemRaster {
    let field = SynthRaster::new(w, h, 200, Pattern::Simplex, seed).with_scale(5.0);
    let data = (0..w * h)
        .map(|i| {
            if i % 23 == 0 {
                0
            } else {
                field.code(i % w, i / w) * 300
            }
        })
        .collect();
    MemRaster::new(w, h, data)
}

/// `--confidence` on svd and dct5 on the device: plain runs agree with the
/// weighted naive result at the methods' usual accuracy (and with their
/// weighted host twins), the certified mode is byte-identical to weighted
/// naive, and the weights do change the map, at two tile sizes.
#[test]
fn device_weighs_votes_by_confidence() {
    let Some(dev) = test_device() else { return };
    let (w, h) = (150, 131);
    let raster = input(w, h, 6, Pattern::Simplex, 11);
    let conf = votes(w, h, 12);
    let run = |method: &dyn ClassSmoother, job: &SmoothJob, weighted: bool| {
        common::smooth_voted(&raster, weighted.then_some(&conf), job, method)
    };
    let agree = |a: &MemRaster, b: &MemRaster| {
        let same = a.data.iter().zip(&b.data).filter(|(x, y)| x == y).count();
        same as f64 / a.data.len() as f64
    };
    for (spec, weights, fill) in [("gaussian:2.5", "2:1.5", true), ("box:5", "", false)] {
        let kernel: Kernel = spec.parse::<KernelSpec>().unwrap().build().unwrap();
        let plans = [
            ("svd", svd::plan(&kernel, RankChoice::Numerical)),
            ("dct5", separable::dct5_plan(&kernel, 3).unwrap()),
        ];
        for tile in [37, 1000] {
            let job = job(&kernel, &raster.data, weights, tile, fill);
            let naive = run(&NaiveHost, &job, true);
            let unweighted = run(&NaiveHost, &job, false);
            assert!(
                agree(&naive, &unweighted) < 0.99,
                "{spec}: weights change little"
            );
            for (name, plan) in &plans {
                let at = format!("{spec} {name} tile {tile}");
                let host = SeparableHost::new(*name, plan.clone(), &kernel);
                let cl = SeparableCl::new(dev.clone(), name, plan, &kernel, false).unwrap();
                assert!(cl.weighs_votes(), "{at}");
                let plain = run(&cl, &job, true);
                let a = agree(&plain, &naive);
                assert!(a >= 0.999, "{at}: {a} against weighted naive");
                let a = agree(&plain, &run(&host, &job, true));
                assert!(a >= 0.999, "{at}: {a} against the host twin");
                let exact = SeparableCl::new(dev.clone(), name, plan, &kernel, true).unwrap();
                assert!(run(&exact, &job, true) == naive, "{at}: --exact");
            }
        }
    }
}

/// The dct5 kernels' float scores against the f64 filter they approximate
/// (the effective DCT-5 taps, both ways, times the class weight): every
/// score within the rounding part of the device bound that `--exact`
/// certifies with. Tiles of several segments per line, nodata included.
#[test]
fn dct5_scores_within_the_device_bound() {
    use mapfilter::method::separable::Filter;
    use mapfilter::method::{ClassTile, SmoothParams};
    let Some(dev) = test_device() else { return };
    use mapfilter::method::separable::cl::{DEVICE_UNIT_ROUNDOFF, Votes};
    let cases = [
        (1.0, 4, 150, 170, false),
        (5.0, 3, 130, 260, false),
        (21.0, 2, 70, 90, false),
        (2.5, 3, 140, 120, true),
        (8.0, 2, 90, 150, true),
    ];
    for (sigma, classes, ow, oh, weighted) in cases {
        let kernel = KernelSpec::Gaussian { sigma, size: None }.build().unwrap();
        let plan = separable::dct5_plan(&kernel, 3).unwrap();
        let Filter::Dct5(d) = &plan.terms[0].row else {
            unreachable!()
        };
        let g = d.effective();
        let r = d.radius();
        let (w, h) = (ow + 2 * r, oh + 2 * r);
        let synth = SynthRaster::new(w, h, classes as u16 + 1, Pattern::Random, 3);
        let codes: Vec<u16> = (0..w * h).map(|i| synth.code(i % w, i / w)).collect();
        // `--confidence`: quantised votes, weighed in f64 by the reference.
        let conf = votes(w, h, 4).data;
        let (scale, votes) = if weighted {
            let top = *conf.iter().max().unwrap() as f64;
            (1.0 / top, Some(conf.as_slice()))
        } else {
            (1.0, None)
        };
        let vote = |i: usize| votes.map_or(1.0, |v| v[i] as f64 * scale);
        let tile = ClassTile {
            width: w,
            height: h,
            halo: r,
            n_classes: classes,
            classes: &codes,
        };
        let weights: Vec<u32> = (0..classes as u32).map(|c| 10 + 7 * c).collect();
        let params = SmoothParams {
            kernel: &kernel,
            class_weights: &weights,
            fill_nodata: false,
            ties: Default::default(),
            confidence: votes,
        };
        let cl = SeparableCl::new(dev.clone(), "dct5", &plan, &kernel, false).unwrap();
        let got = cl.dct5_scores(&tile, &params).unwrap();
        let l1: f64 = g.iter().map(|v| v.abs()).sum();
        let weighing = if weighted {
            Votes::rounding(l1 * l1, DEVICE_UNIT_ROUNDOFF)
        } else {
            0.0
        };
        let bound = cl.bounds().rounding + weighing;
        let wmax = *weights.iter().max().unwrap() as f64;
        let mut worst = 0.0f64;
        for c in 0..classes {
            // Columns first, then rows, in f64.
            let mut cols = vec![0.0f64; w * oh];
            for y in 0..oh {
                for x in 0..w {
                    cols[y * w + x] = (0..g.len())
                        .filter(|&t| codes[(y + t) * w + x] == c as u16)
                        .map(|t| g[t] * vote((y + t) * w + x))
                        .sum();
                }
            }
            for y in 0..oh {
                for x in 0..ow {
                    let s: f64 = (0..g.len()).map(|t| g[t] * cols[y * w + x + t]).sum();
                    let want = s * weights[c] as f64 / wmax;
                    let dev = got[(c * oh + y) * ow + x] as f64;
                    worst = worst.max((dev - want).abs());
                }
            }
        }
        assert!(
            worst <= bound,
            "σ={sigma}: worst score error {worst:e} over the bound {bound:e}"
        );
        assert!(worst > 0.0, "σ={sigma}: the device scores look unset");
        eprintln!(
            "σ={sigma} weighted {weighted}: worst score error {worst:.2e}, bound {bound:.2e}"
        );
    }
}

/// Settings forced from tune database files (written, read back, looked up
/// for the test device) change how the kernels are launched, never a byte:
/// dct5's row-pass work-groups against the untuned run, naive's fast
/// shapes (CPU and GPU-style, local memory or not) against the host.
#[test]
fn every_tuned_shape_gives_the_same_bytes() {
    use mapfilter::device::tune::{self, Setting, TuneDb};
    use mapfilter::method::naive::cl::{NaiveCl, Variant};
    let Some(dev) = test_device() else { return };
    let dir = tempfile::tempdir().unwrap();
    let raster = input(101, 77, 6, Pattern::Simplex, 5);
    // Forced through a file, as runs read it: the lookup must find it.
    let forced = |kernel: &str, shape: Vec<usize>| -> Option<Setting> {
        let mut db = TuneDb::new();
        db.put(Setting {
            device: dev.info().name.clone(),
            driver: dev.info().driver.clone(),
            kernel: kernel.into(),
            shape,
            tile: Some(512),
            mpix_s: None,
        });
        let path = dir.path().join("tune.json");
        db.save(&path).unwrap();
        let read = TuneDb::load(&path).unwrap().unwrap();
        let found = read.lookup(dev.info(), kernel).cloned();
        assert!(found.is_some(), "{kernel}: not found again");
        found
    };
    let kernel: Kernel = "gaussian:3".parse::<KernelSpec>().unwrap().build().unwrap();
    let job = job(&kernel, &raster.data, "", 40, false);
    let plan = separable::dct5_plan(&kernel, 3).unwrap();
    let untuned = SeparableCl::new(dev.clone(), "dct5", &plan, &kernel, false)
        .unwrap()
        .with_tuning(None);
    let want = smooth_in_memory(&raster, &job, &untuned).unwrap();
    for group in [32, 128, 256, 1] {
        let cl = SeparableCl::new(dev.clone(), "dct5", &plan, &kernel, false)
            .unwrap()
            .with_tuning(forced(tune::DCT5, vec![group]));
        assert_eq!(cl.tuned().len(), 1);
        assert_eq!(
            smooth_in_memory(&raster, &job, &cl).unwrap(),
            want,
            "dct5 rows {group}"
        );
    }
    let kernel: Kernel = "gaussian:1.5"
        .parse::<KernelSpec>()
        .unwrap()
        .build()
        .unwrap();
    let job = job_for(&kernel, &raster);
    let naive = smooth_in_memory(&raster, &job, &NaiveHost).unwrap();
    for shape in [
        vec![16, 1, 16, 0, 0],
        vec![4, 1, 8, 0, 0],
        vec![32, 4, 8, 1, 1],
        vec![16, 8, 2, 1, 0],
        // Does not fit any work-group: the default shape runs instead.
        vec![4096, 4096, 1, 1, 1],
    ] {
        let cl = NaiveCl::new(dev.clone(), Variant::Fast)
            .unwrap()
            .with_tuning(forced(tune::NAIVE_FAST, shape.clone()));
        assert_eq!(
            smooth_in_memory(&raster, &job, &cl).unwrap(),
            naive,
            "naive {shape:?}"
        );
    }
}

fn job_for(kernel: &Kernel, raster: &MemRaster) -> SmoothJob {
    job(kernel, &raster.data, "", 33, false)
}

/// A method seen through `smooth` only: the engine then runs its tiles one
/// at a time, never in flight.
struct AtOnce<'a>(&'a dyn ClassSmoother);

impl ClassSmoother for AtOnce<'_> {
    fn name(&self) -> String {
        self.0.name()
    }
    fn is_exact(&self) -> bool {
        self.0.is_exact()
    }
    fn smooth(
        &self,
        tile: &mapfilter::method::ClassTile,
        params: &mapfilter::method::SmoothParams,
        out: &mut [u16],
    ) -> mapfilter::Result<()> {
        self.0.smooth(tile, params, out)
    }
}

/// dct5 tiles left in flight on the device (buffers reused from tile to
/// tile, several sets at once) give the bytes of tiles run one at a time,
/// with few classes and with 255 (codes as 16 bits).
#[test]
fn dct5_tiles_in_flight_match_tiles_at_once() {
    let Some(dev) = test_device() else { return };
    let kernel: Kernel = "gaussian:2".parse::<KernelSpec>().unwrap().build().unwrap();
    let plan = separable::dct5_plan(&kernel, 3).unwrap();
    for (classes, tile) in [(5, 24), (256, 64)] {
        let raster = input(90, 71, classes, Pattern::Random, 9);
        let job = job(&kernel, &raster.data, "", tile, false);
        let cl = SeparableCl::new(dev.clone(), "dct5", &plan, &kernel, false).unwrap();
        let in_flight = smooth_in_memory(&raster, &job, &cl).unwrap();
        let at_once = smooth_in_memory(&raster, &job, &AtOnce(&cl)).unwrap();
        assert_eq!(in_flight, at_once, "{classes} classes");
    }
}

/// The certified recomputation on the device (`naive_flagged`) against
/// naive on the host, tile by tile: every tie rule, fill or not, class
/// weights up to u32::MAX, byte (6 classes) and u16 (300 classes) tiles,
/// dct5 and svd. Noise and a box kernel make exact ties, so pixels are
/// flagged; where the device can recompute (all but `--ties undecided` with
/// byte winners) it did every one of them. The engine's paths (device
/// compaction included) are checked against naive by the tests above.
#[test]
fn certified_recomputation_on_the_device_matches_naive() {
    use mapfilter::method::ClassTile;
    use mapfilter::method::policy::Ties;
    let Some(dev) = test_device() else { return };
    let mut next = common::xorshift(0x2545_f491_4f6c_dd1d);
    for spec in ["box:5", "gaussian:1.5"] {
        let kernel = spec.parse::<KernelSpec>().unwrap().build().unwrap();
        let halo = kernel.radius();
        let plan = separable::dct5_plan(&kernel, 3.min(halo)).unwrap();
        let svd_plan = svd::plan(&kernel, RankChoice::Numerical);
        let methods = [
            SeparableCl::new(dev.clone(), "dct5", &plan, &kernel, true).unwrap(),
            SeparableCl::new(dev.clone(), "svd", &svd_plan, &kernel, true).unwrap(),
        ];
        // Noise (short runs), and blocks whose runs cross whole window rows
        // (the device finds each row's runs itself, cut at the window's edge).
        for (nc, blocks) in [(6usize, false), (300, false), (6, true)] {
            let (w, h) = (41 + 2 * halo, 23 + 2 * halo);
            // Few distinct classes per window even with 300 in the tile.
            let classes: Vec<u16> = (0..w * h)
                .map(|i| match (blocks, next() % 5) {
                    (true, _) if next().is_multiple_of(40) => nc as u16,
                    (true, _) => ((i % w / 13 + i / w / 3) % nc) as u16,
                    (false, 0) => nc as u16,
                    (false, k) => ((i / 7 + k as usize) % nc) as u16,
                })
                .collect();
            let tile = ClassTile {
                width: w,
                height: h,
                halo,
                n_classes: nc,
                classes: &classes,
            };
            let mut weights = vec![1u32 << 20; nc];
            weights[..4].copy_from_slice(&[u32::MAX, 1, 0, u32::MAX - 1]);
            common::each_rule_against_naive(&tile, &kernel, &weights, None, |params, want| {
                for m in &methods {
                    let before = m.recompute_counts().unwrap();
                    let on_device = m.recomputed_on_device();
                    let mut got = vec![0u16; tile.output_len()];
                    m.smooth(&tile, params, &mut got).unwrap();
                    let (ties, fill) = (params.ties, params.fill_nodata);
                    let what = format!(
                        "{} {spec} {nc} classes blocks {blocks} {ties:?} fill {fill}",
                        m.name()
                    );
                    assert_eq!(got, want, "{what}");
                    let redone = m.recompute_counts().unwrap().0 - before.0;
                    let redone_here = m.recomputed_on_device() - on_device;
                    // A box on noise ties exactly: flagged whatever the method.
                    assert!(redone > 0 || spec != "box:5", "{what}: nothing was flagged");
                    let bytes = m.name().contains("dct5") && nc < 255;
                    let host_only = bytes && matches!(ties, Ties::Undecided(_));
                    let expected = if host_only { 0 } else { redone };
                    assert_eq!(redone_here, expected, "{what}");
                }
            });
        }
    }
}
