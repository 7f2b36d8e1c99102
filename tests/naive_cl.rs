//! The naive method on OpenCL (PoCL here) against the host reference:
//! byte-identical output for every variant, tile size, border, nodata layout
//! and class count. Skips (printing why) only where there is no OpenCL at all.

use mapfilter::classes::{ClassTable, ClassWeights};
use mapfilter::device::{Device, test_device};
use mapfilter::engine::{SmoothJob, smooth_in_memory};
use mapfilter::io::MemRaster;
use mapfilter::kernel::KernelSpec;
use mapfilter::method::ClassSmoother;
use mapfilter::method::naive::NaiveHost;
use mapfilter::method::naive::cl::{CpuPaths, FastShape, NaiveCl, Variant};
use mapfilter::synth::{Pattern, SynthRaster};
use proptest::prelude::*;
use tiles::Border;

struct Case {
    raster: MemRaster,
    nodata: Option<u16>,
    kernel: &'static str,
    border: Border,
    fill: bool,
    weights: &'static str,
}

fn job(case: &Case, tile: usize) -> SmoothJob {
    let classes = ClassTable::from_codes(&case.raster.data, case.nodata).unwrap();
    let weights: ClassWeights = case.weights.parse().unwrap();
    SmoothJob {
        class_weights: weights.quantise(&classes),
        output_nodata: classes.output_nodata(u16::MAX),
        kernel: case.kernel.parse::<KernelSpec>().unwrap().build().unwrap(),
        classes,
        border: case.border,
        fill_nodata: case.fill,
        tile,
        policies: Default::default(),
    }
}

/// Checks every variant at every tile size against the host, untiled.
fn check(dev: &Device, case: &Case, tiles: &[usize], variants: &[Variant]) {
    let methods: Vec<NaiveCl> = variants
        .iter()
        .map(|&v| NaiveCl::new(dev.clone(), v).unwrap())
        .collect();
    check_methods(case, tiles, &methods);
}

fn check_methods(case: &Case, tiles: &[usize], methods: &[NaiveCl]) {
    let reference = smooth_in_memory(&case.raster, &job(case, 1 << 20), &NaiveHost).unwrap();
    for method in methods {
        for &t in tiles {
            let got = smooth_in_memory(&case.raster, &job(case, t), method).unwrap();
            assert_eq!((got.width, got.height), (reference.width, reference.height));
            if got != reference {
                let i = got
                    .data
                    .iter()
                    .zip(&reference.data)
                    .position(|(a, b)| a != b)
                    .unwrap();
                panic!(
                    "{} tile {t}: first mismatch at pixel {i} ({} vs host {}), kernel {}",
                    method.name(),
                    got.data[i],
                    reference.data[i],
                    case.kernel
                );
            }
        }
    }
}

fn synth(w: usize, h: usize, classes: u16, pattern: Pattern, seed: u64) -> MemRaster {
    MemRaster::new(
        w,
        h,
        SynthRaster::new(w, h, classes, pattern, seed)
            .with_scale(9.0)
            .to_vec(),
    )
}

/// Puts nodata (code 999) in a block, a stripe and scattered pixels.
fn with_nodata(mut r: MemRaster) -> MemRaster {
    let w = r.width;
    for (i, v) in r.data.iter_mut().enumerate() {
        let (x, y) = (i % w, i / w);
        if (x > 5 && x < 14 && y > 3 && y < 11) || y == 20 || i % 37 == 0 {
            *v = 999;
        }
    }
    r
}

#[test]
fn every_variant_tile_and_border_matches_host() {
    let Some(dev) = test_device() else { return };
    let raster = with_nodata(synth(61, 47, 5, Pattern::Simplex, 3));
    for border in [Border::Same, Border::Valid] {
        for fill in [false, true] {
            let case = Case {
                raster: raster.clone(),
                nodata: Some(999),
                kernel: "gaussian:1.5",
                border,
                fill,
                weights: "2:1.5",
            };
            check(&dev, &case, &[16, 23, 64], &Variant::ALL);
        }
    }
    // A box on random classes: ties everywhere, so the tie rule is exercised.
    let ties = Case {
        raster: with_nodata(synth(45, 38, 4, Pattern::Random, 5)),
        nodata: Some(999),
        kernel: "box:3",
        border: Border::Same,
        fill: false,
        weights: "",
    };
    check(&dev, &ties, &[16, 64], &Variant::ALL);
    let ties5 = Case {
        kernel: "box:5",
        fill: true,
        raster: synth(45, 38, 30, Pattern::Random, 6),
        ..ties
    };
    check(&dev, &ties5, &[20], &Variant::ALL);
}

#[test]
fn large_kernels_and_all_nodata_regions() {
    let Some(dev) = test_device() else { return };
    // Kernel 63 on a raster smaller than the kernel; a disc drops its corner taps.
    let case = Case {
        raster: with_nodata(synth(40, 33, 7, Pattern::Random, 1)),
        nodata: Some(999),
        kernel: "box:63",
        border: Border::Same,
        fill: false,
        weights: "",
    };
    check(&dev, &case, &[17, 64], &Variant::ALL);
    let disc = Case {
        kernel: "disc:9",
        fill: true,
        ..case
    };
    check(&dev, &disc, &[32], &Variant::ALL);
    // Nodata everywhere: every output is nodata.
    let empty = Case {
        raster: MemRaster::filled(20, 9, 999),
        nodata: Some(999),
        kernel: "box:3",
        border: Border::Same,
        fill: true,
        weights: "",
    };
    check(&dev, &empty, &[8], &Variant::ALL);
}

#[test]
fn many_classes_use_wide_tiles_and_tap_scan() {
    let Some(dev) = test_device() else { return };
    // 256 classes: ushort tiles; box:3 has fewer taps than classes (tap
    // scan). On CPUs the winner search packs score and bin in one ulong when
    // the scores fit (integer class weights), else not (a fractional weight
    // scales the weights to 2^24, times a gaussian's sum of 2^31).
    for (kernel, weights) in [
        ("box:3", "7:3,200:2"),
        ("gaussian:2", "7:3,200:2"),
        ("gaussian:2", "7:1.5,200:2"),
    ] {
        let case = Case {
            raster: synth(70, 52, 256, Pattern::Random, 9),
            nodata: None,
            kernel,
            border: Border::Same,
            fill: false,
            weights,
        };
        check(&dev, &case, &[24, 128], &Variant::ALL);
    }
}

#[test]
fn gpu_and_fixed_shapes_of_fast_match_host() {
    let Some(dev) = test_device() else { return };
    // The GPU heuristic (class block and bin-major histograms in local memory,
    // private histograms when the bins do not fit, global reads when the
    // block does not) and a few fixed shapes, all run here on PoCL.
    let fast = |shape| {
        NaiveCl::new(dev.clone(), Variant::Fast)
            .unwrap()
            .with_shape(shape)
    };
    let methods = [
        fast(FastShape::Gpu),
        fast(FastShape::Fixed(8, 2, 3, true, true)),
        fast(FastShape::Fixed(4, 4, 2, true, false)),
        fast(FastShape::Fixed(16, 1, 5, false, true)),
    ];
    for (classes, kernel) in [
        (6, "box:5"),
        (40, "gaussian:2"),
        (256, "box:3"),
        (3, "box:63"),
        (200, "box:41"),
    ] {
        let case = Case {
            raster: with_nodata(synth(50, 45, classes, Pattern::Random, classes as u64)),
            nodata: Some(999),
            kernel,
            border: Border::Same,
            fill: classes % 2 == 0,
            weights: "",
        };
        check_methods(&case, &[24, 64], &methods);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, .. ProptestConfig::default() })]

    #[test]
    fn random_rasters_match_host(
        classes in 1u16..=256,
        w in 1usize..40,
        h in 1usize..40,
        size in (0usize..6).prop_map(|k| 2 * k + 1),
        tile in 8usize..40,
        seed in 0u64..1000,
        nodata in any::<bool>(),
        fill in any::<bool>(),
        random in any::<bool>(),
    ) {
        let Some(dev) = test_device() else { return Ok(()) };
        let pattern = if random { Pattern::Random } else { Pattern::Simplex };
        let mut raster = synth(w, h, classes, pattern, seed);
        if nodata {
            raster = with_nodata(raster);
        }
        let kernel: &'static str = Box::leak(format!("gaussian:{}", size as f64 / 3.0 + 0.1).into_boxed_str());
        let case = Case {
            raster,
            nodata: nodata.then_some(999),
            kernel,
            border: Border::Same,
            fill,
            weights: "1:2",
        };
        let variant = Variant::ALL[(seed % 4) as usize];
        check(&dev, &case, &[tile], &[variant, Variant::Fast]);
    }
}

#[test]
fn uniform_windows_and_few_run_rows_match_host() {
    let Some(dev) = test_device() else { return };
    // Large blobs: uniform windows, one-class rows and rows of a few runs
    // (the fast variant's shortcuts on CPUs) all occur, next to mixed ones.
    for (classes, kernel, scale, nodata) in [
        (2, "box:9", 40.0, false),
        (4, "disc:4", 25.0, true),
        (3, "gaussian:2", 30.0, false),
    ] {
        let raster = MemRaster::new(
            70,
            66,
            SynthRaster::new(70, 66, classes, Pattern::Simplex, 7)
                .with_scale(scale)
                .to_vec(),
        );
        let case = Case {
            raster: if nodata { with_nodata(raster) } else { raster },
            nodata: nodata.then_some(999),
            kernel,
            border: Border::Same,
            fill: nodata,
            weights: "1:2",
        };
        check(&dev, &case, &[32, 64], &[Variant::Fast]);
    }
}

/// The fast variant with its run path forced on, the mask of touched bins
/// on or off, in the CPU shape and in a shape with the class block and the
/// histograms in local memory.
fn run_paths(dev: &Device) -> Vec<NaiveCl> {
    let mut methods = Vec::new();
    for mask in [false, true] {
        for shape in [FastShape::Auto, FastShape::Fixed(4, 2, 3, true, true)] {
            let paths = CpuPaths {
                runs: Some(true),
                mask: Some(mask),
                ..CpuPaths::default()
            };
            methods.push(
                NaiveCl::new(dev.clone(), Variant::Fast)
                    .unwrap()
                    .with_shape(shape)
                    .with_cpu_paths(paths),
            );
        }
    }
    methods
}

#[test]
fn run_path_matches_host_on_maps_noise_and_nodata() {
    let Some(dev) = test_device() else { return };
    let methods = run_paths(&dev);
    // Blobs (uniform windows, blocks of alike rows), noise (rows of many
    // runs take their taps), nodata blocks and stripes; 1 word of mask bits
    // (5 classes), 2 (70) and 5 (256 classes + nodata, ushort classes).
    for (classes, pattern, scale, kernel, nodata, border) in [
        (5, Pattern::Simplex, 30.0, "gaussian:2", true, Border::Same),
        (5, Pattern::Random, 9.0, "box:5", false, Border::Valid),
        (70, Pattern::Simplex, 12.0, "disc:6", true, Border::Same),
        (256, Pattern::Simplex, 20.0, "box:9", true, Border::Same),
        (256, Pattern::Random, 9.0, "gaussian:1", false, Border::Same),
        (2, Pattern::Simplex, 60.0, "box:31", false, Border::Valid),
    ] {
        let raster = MemRaster::new(
            83,
            71,
            SynthRaster::new(83, 71, classes, pattern, classes as u64)
                .with_scale(scale)
                .to_vec(),
        );
        for fill in [false, true] {
            let case = Case {
                raster: if nodata {
                    with_nodata(raster.clone())
                } else {
                    raster.clone()
                },
                nodata: nodata.then_some(999),
                kernel,
                border,
                fill,
                weights: "1:2,3:3",
            };
            check_methods(&case, &[if fill { 29 } else { 64 }], &methods);
        }
    }
}

#[test]
fn run_path_stays_off_on_tiles_wider_than_its_indices() {
    let Some(dev) = test_device() else { return };
    // A tile 66 002 pixels wide: u16 run indices cannot describe it, so the
    // forced run path must step aside (and the result stay exact).
    let w = 66_000;
    let data = (0..w * 3).map(|i| ((i / 700) % 3) as u16).collect();
    let case = Case {
        raster: MemRaster::new(w, 3, data),
        nodata: None,
        kernel: "box:3",
        border: Border::Same,
        fill: false,
        weights: "",
    };
    check_methods(&case, &[1 << 17], &run_paths(&dev)[..1]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, .. ProptestConfig::default() })]

    #[test]
    fn run_path_matches_host_on_random_layouts(
        classes in 1u16..=256,
        w in 1usize..50,
        h in 1usize..50,
        size in (0usize..8).prop_map(|k| 2 * k + 1),
        tile in 8usize..48,
        seed in 0u64..1000,
        scale in 1.0f64..40.0,
        nodata in any::<bool>(),
        fill in any::<bool>(),
        mask in any::<bool>(),
    ) {
        let Some(dev) = test_device() else { return Ok(()) };
        let raster = MemRaster::new(
            w,
            h,
            SynthRaster::new(w, h, classes, Pattern::Simplex, seed)
                .with_scale(scale)
                .to_vec(),
        );
        let kernel: &'static str = Box::leak(format!("disc:{}", size / 2).into_boxed_str());
        let case = Case {
            raster: if nodata { with_nodata(raster) } else { raster },
            nodata: nodata.then_some(999),
            kernel,
            border: Border::Same,
            fill,
            weights: "0:3",
        };
        let method = NaiveCl::new(dev.clone(), Variant::Fast)
            .unwrap()
            .with_cpu_paths(CpuPaths { runs: Some(true), mask: Some(mask), ..CpuPaths::default() });
        check_methods(&case, &[tile], &[method]);
    }
}

#[test]
fn sliding_histograms_match_host_on_noise_and_nodata() {
    let Some(dev) = test_device() else { return };
    // Boxes have alike rows: on noise (run path off) each item's histogram
    // slides down its column, across nodata centres (skipped outputs) and
    // item boundaries (tile heights not a multiple of 32 rows per item).
    let slide = |shape| {
        NaiveCl::new(dev.clone(), Variant::Fast)
            .unwrap()
            .with_shape(shape)
            .with_cpu_paths(CpuPaths {
                runs: Some(false),
                slide: Some(true),
                ..CpuPaths::default()
            })
    };
    let methods = [
        slide(FastShape::Auto),
        slide(FastShape::Fixed(4, 1, 7, false, true)),
    ];
    for (classes, kernel, border, fill) in [
        (4, "box:5", Border::Same, false),
        (4, "box:5", Border::Valid, true),
        (256, "box:9", Border::Same, true),
        (30, "box:1", Border::Same, false),
        (2, "box:21", Border::Same, true),
    ] {
        let case = Case {
            raster: with_nodata(synth(57, 75, classes, Pattern::Random, classes as u64)),
            nodata: Some(999),
            kernel,
            border,
            fill,
            weights: "1:2",
        };
        check_methods(&case, &[33, 80], &methods);
    }
}

/// Confidence-weighted votes (`--confidence`): every variant runs the
/// weighted kernel, byte-identical to the host for every tie rule, with
/// confidences at the top of their range and class weights near 2³², whose
/// scores need more than 64 bits (the kernel compares 128-bit products), and
/// with confidences of 0 and ties everywhere (two values only).
#[test]
fn confidence_weighted_votes_match_host() {
    use mapfilter::method::ClassTile;
    let Some(dev) = test_device() else { return };
    let mut next = crate::common::xorshift(0x9e37_79b9_7f4a_7c15);
    for kernel in ["box:9", "gaussian:1.5"] {
        let kernel = kernel.parse::<KernelSpec>().unwrap().build().unwrap();
        let halo = kernel.radius();
        let (w, h, nc) = (37 + 2 * halo, 29 + 2 * halo, 6usize);
        for two_values in [false, true] {
            let classes: Vec<u16> = (0..w * h)
                .map(|_| (next() % (nc as u64 + 1)) as u16)
                .collect();
            let votes: Vec<u16> = (0..w * h)
                .map(|_| match (two_values, next() % 4) {
                    (true, 0) => 0,
                    (true, _) => 65535,
                    (false, 0) => 65535 - (next() % 3) as u16,
                    (false, _) => next() as u16,
                })
                .collect();
            let tile = ClassTile {
                width: w,
                height: h,
                halo,
                n_classes: nc,
                classes: &classes,
            };
            let weights = [u32::MAX, u32::MAX, 1, 0, 1 << 31, u32::MAX - 1];
            let votes = Some(votes.as_slice());
            crate::common::each_rule_against_naive(
                &tile,
                &kernel,
                &weights,
                votes,
                |params, want| {
                    for variant in Variant::ALL {
                        let m = NaiveCl::new(dev.clone(), variant).unwrap();
                        let mut got = vec![0u16; tile.output_len()];
                        m.smooth(&tile, params, &mut got).unwrap();
                        let (ties, fill) = (params.ties, params.fill_nodata);
                        assert_eq!(got, want, "{} {ties:?} fill {fill}", m.name());
                    }
                },
            );
        }
    }
}

/// A naive method fed compacted tiles: the engine compacts on the host, as
/// it does for methods that do not take codes.
struct Compacted<'a>(&'a NaiveCl);

impl ClassSmoother for Compacted<'_> {
    fn name(&self) -> String {
        format!("{} fed compacted tiles", self.0.name())
    }

    fn smooth(
        &self,
        tile: &mapfilter::method::ClassTile,
        params: &mapfilter::method::SmoothParams,
        out: &mut [u16],
    ) -> mapfilter::error::Result<()> {
        self.0.smooth(tile, params, out)
    }

    fn submit(
        &self,
        tile: &mapfilter::method::ClassTile,
        params: &mapfilter::method::SmoothParams,
    ) -> mapfilter::error::Result<Box<dyn mapfilter::method::PendingTile + '_>> {
        self.0.submit(tile, params)
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn runs_on(&self) -> Option<mapfilter::device::DeviceKind> {
        self.0.runs_on()
    }
}

/// Tiles given as codes (fewer than 255 classes) are staged as global
/// indices and compacted on the device by every variant but `image`: the
/// engine prepares nothing on the host, and the bytes are the host
/// reference's and those of the same variant fed compacted tiles, over
/// tile sizes, borders, nodata, tie rules, more than 16 classes, the run
/// path, and tiles of a single class.
#[test]
fn tiles_compacted_on_the_device_match_host() {
    use mapfilter::engine::smooth_in_memory_with_stats;
    use mapfilter::method::policy::Ties;
    use std::time::Duration;
    let Some(dev) = test_device() else { return };
    let mut methods: Vec<NaiveCl> = Variant::ALL
        .iter()
        .map(|&v| NaiveCl::new(dev.clone(), v).unwrap())
        .collect();
    methods.extend(run_paths(&dev));
    for m in &methods {
        assert_eq!(
            m.takes_codes(),
            m.variant() != Variant::Image,
            "{}",
            m.name()
        );
    }
    // Columns 0..30 hold one class (code 3) and the rest blobs of 6, so
    // the first tiles hold a single class; a uniform raster has nothing else.
    let half = {
        let mut r = synth(71, 53, 6, Pattern::Simplex, 11);
        for (i, v) in r.data.iter_mut().enumerate() {
            if i % 71 < 30 {
                *v = 3;
            }
        }
        r
    };
    let cases = [
        (
            with_nodata(synth(61, 47, 5, Pattern::Simplex, 3)),
            Some(999),
            "gaussian:1.5",
            Border::Same,
            false,
        ),
        (
            with_nodata(synth(61, 47, 5, Pattern::Simplex, 3)),
            Some(999),
            "box:5",
            Border::Valid,
            true,
        ),
        (
            with_nodata(synth(67, 45, 40, Pattern::Random, 4)),
            Some(999),
            "gaussian:1",
            Border::Same,
            true,
        ),
        (
            synth(67, 45, 40, Pattern::Simplex, 5),
            None,
            "disc:3",
            Border::Valid,
            false,
        ),
        (half, None, "gaussian:2", Border::Same, false),
        (
            MemRaster::filled(33, 21, 7),
            None,
            "box:3",
            Border::Same,
            false,
        ),
    ];
    let rules = [Ties::Centre, Ties::Largest, Ties::Undecided(5)];
    for (i, (raster, nodata, kernel, border, fill)) in cases.into_iter().enumerate() {
        let ties = rules[i % rules.len()];
        let uniform = raster.data.iter().all(|&v| v == raster.data[0]);
        let case = Case {
            raster,
            nodata,
            kernel,
            border,
            fill,
            weights: "1:2,3:1.5",
        };
        let job = |tile| {
            let mut job = job(&case, tile);
            if let Ties::Undecided(code) = ties {
                job.classes = job.classes.clone().with_code(code, u16::MAX).unwrap();
                job.class_weights = case
                    .weights
                    .parse::<ClassWeights>()
                    .unwrap()
                    .quantise(&job.classes);
                job.output_nodata = job.classes.output_nodata(u16::MAX);
            }
            job.policies.ties = ties;
            job
        };
        let reference = smooth_in_memory(&case.raster, &job(1 << 20), &NaiveHost).unwrap();
        for tile in [16, 41] {
            for m in &methods {
                let (got, stats) =
                    smooth_in_memory_with_stats(&case.raster, &job(tile), m).unwrap();
                let what = format!("{} {kernel} {ties:?} tile {tile}", m.name());
                assert!(got == reference, "{what}: differs from the host");
                if m.takes_codes() {
                    assert_eq!(
                        stats.stages.prepare,
                        Duration::ZERO,
                        "{what}: compacted on the host"
                    );
                }
                if uniform {
                    assert_eq!(stats.max_tile_classes, 1, "{what}");
                }
                let compacted = smooth_in_memory(&case.raster, &job(tile), &Compacted(m)).unwrap();
                assert!(compacted == got, "{what}: compacted tiles differ");
            }
        }
    }
}

/// A job of every Byte code but nodata (255 classes, the table `batch
/// plan` gives such mosaics) still hands its tiles to the device as codes
/// to compact there; a tile that holds all 255 classes, more than the
/// device's byte codes take, is compacted on the host instead. Both give
/// the host's bytes, for naive and certified dct5.
#[test]
fn a_job_of_every_byte_code_is_compacted_on_the_device() {
    use mapfilter::engine::smooth_in_memory_with_stats;
    use mapfilter::method::separable::{self, cl::SeparableCl};
    use std::time::Duration;
    let Some(dev) = test_device() else { return };
    let kernel = "gaussian:1".parse::<KernelSpec>().unwrap().build().unwrap();
    let plan = separable::dct5_plan(&kernel, 1).unwrap();
    let methods: Vec<Box<dyn ClassSmoother>> = vec![
        Box::new(NaiveCl::new(dev.clone(), Variant::Fast).unwrap()),
        Box::new(SeparableCl::new(dev.clone(), "dct5", &plan, &kernel, true).unwrap()),
    ];
    let every = ClassTable::every_code(255, Some(255)).unwrap();
    // Blobs of 5 classes with nodata; then every code, 0 to 255, in each tile.
    let few = synth(61, 47, 5, Pattern::Simplex, 3);
    let all = MemRaster::new(64, 64, (0..64 * 64).map(|i| (i * 7 % 256) as u16).collect());
    for (raster, on_device) in [(few, true), (all, false)] {
        let job = |tile| SmoothJob {
            class_weights: vec![1; every.len()],
            output_nodata: Some(255),
            kernel: kernel.clone(),
            classes: every.clone(),
            border: Border::Same,
            fill_nodata: false,
            tile,
            policies: Default::default(),
        };
        let reference = smooth_in_memory(&raster, &job(1 << 20), &NaiveHost).unwrap();
        for m in &methods {
            let (got, stats) = smooth_in_memory_with_stats(&raster, &job(64), m.as_ref()).unwrap();
            let what = format!("{} on a device: {on_device}", m.name());
            assert!(got == reference, "{what}: differs from the host");
            match on_device {
                true => assert_eq!(stats.stages.prepare, Duration::ZERO, "{what}"),
                false => assert_eq!(stats.max_tile_classes, 255, "{what}"),
            }
        }
    }
}

/// On two contexts of one device (`Shared`), naive members take codes, so
/// the calling thread stages each tile straight into one member's memory:
/// the bytes are one context's, and both take tiles.
#[test]
fn two_contexts_take_codes_and_give_one_contexts_bytes() {
    use mapfilter::engine::smooth_in_memory_with_stats;
    use mapfilter::method::multi::Shared;
    let Some(dev) = test_device() else { return };
    let case = Case {
        raster: with_nodata(synth(90, 70, 20, Pattern::Simplex, 8)),
        nodata: Some(999),
        kernel: "gaussian:2",
        border: Border::Same,
        fill: false,
        weights: "",
    };
    let reference = smooth_in_memory(&case.raster, &job(&case, 1 << 20), &NaiveHost).unwrap();
    for variant in [Variant::Fast, Variant::Buffer] {
        let members: Vec<Box<dyn ClassSmoother>> = (0..2)
            .map(|i| {
                let d = Device::open_instance(dev.info().index, i).unwrap();
                Box::new(NaiveCl::new(d, variant).unwrap()) as Box<dyn ClassSmoother>
            })
            .collect();
        let shared = Shared::new(members).unwrap();
        assert!(shared.takes_codes());
        // Devices pull tiles, so on a loaded machine one context may take
        // all 30 before the other's thread starts: a run where both took
        // tiles is waited for (every run must equal the host's result).
        let mut shares = Vec::new();
        for _attempt in 0..5 {
            let (got, stats) =
                smooth_in_memory_with_stats(&case.raster, &job(&case, 16), &shared).unwrap();
            assert!(
                got == reference,
                "{variant:?}: two contexts differ from the host"
            );
            assert_eq!(stats.stages.prepare, std::time::Duration::ZERO);
            shares = shared.take_shares();
            assert_eq!(shares.len(), 2);
            if shares.iter().all(|s| s.tiles > 0) {
                break;
            }
        }
        assert!(shares.iter().all(|s| s.tiles > 0), "{shares:?}");
    }
}
