//! The fast host methods against the exact baseline: the certified mode is
//! byte-identical to naive on random cases (proptest), svd and dct5 agree
//! with naive at the accuracy docs/semantics.md#methods promises.

use crate::common;

use mapfilter::engine::{SmoothJob, smooth_in_memory};
use mapfilter::io::MemRaster;
use mapfilter::kernel::{Kernel, KernelSpec, parse_matrix};
use mapfilter::method::ClassSmoother;
use mapfilter::method::certified::Certified;
use mapfilter::method::dct5::CERTIFIED_TERMS;
use mapfilter::method::naive::NaiveHost;
use mapfilter::method::separable::SeparableHost;
use mapfilter::method::separable::svd::RankChoice;
use mapfilter::method::separable::{self, svd};
use mapfilter::synth::{Pattern, SynthRaster};
use proptest::prelude::*;
use tiles::Border;

const NODATA: u16 = 255;

fn job(
    kernel: Kernel,
    data: &[u16],
    weights: &str,
    border: Border,
    fill: bool,
    tile: usize,
) -> SmoothJob {
    common::class_job(&kernel, data, weights, (border, fill), tile, NODATA)
}

fn agreement(a: &MemRaster, b: &MemRaster) -> f64 {
    let same = a.data.iter().zip(&b.data).filter(|(x, y)| x == y).count();
    same as f64 / a.data.len() as f64
}

fn kernel_strategy() -> impl Strategy<Value = Kernel> {
    prop_oneof![
        (0.4f64..3.0).prop_map(|s| KernelSpec::Gaussian {
            sigma: s,
            size: None
        }
        .build()
        .unwrap()),
        (0usize..4).prop_map(|r| KernelSpec::Box { size: 2 * r + 1 }.build().unwrap()),
        (1usize..4).prop_map(|r| KernelSpec::Disc { radius: r }.build().unwrap()),
        Just(parse_matrix("1 1 1\n1 5 1\n1 1 1").unwrap()),
        Just(
            parse_matrix("0.5 2 0.1 0 0\n1 1 3 1 0.2\n0 4 9 2 1\n1 0 1 1 7\n3 1 0 0.5 1").unwrap()
        ),
    ]
}

fn raster_strategy() -> impl Strategy<Value = MemRaster> {
    (
        1usize..40,
        1usize..40,
        1u16..6,
        0u32..30,
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(w, h, classes, nodata_pct, seed, blobs)| {
            let pattern = if blobs {
                Pattern::Simplex
            } else {
                Pattern::Random
            };
            let synth = SynthRaster::new(w, h, classes, pattern, seed).with_scale(6.0);
            let holes = SynthRaster::new(w, h, 100, Pattern::Random, seed ^ 0xABCD);
            let data = (0..w * h)
                .map(|i| {
                    let (x, y) = (i % w, i / w);
                    if (holes.code(x, y) as u32) < nodata_pct {
                        NODATA
                    } else {
                        synth.code(x, y) * 3 + 1
                    }
                })
                .collect();
            MemRaster::new(w, h, data)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, .. ProptestConfig::default() })]

    /// `--exact` over svd (every kernel) and dct5 (Gaussian and box) gives naive's bytes.
    #[test]
    fn exact_mode_is_byte_identical(
        input in raster_strategy(),
        kernel in kernel_strategy(),
        terms in 0usize..4,
        rank in prop_oneof![Just(None), (1usize..3).prop_map(Some)],
        weighted in any::<bool>(),
        valid in any::<bool>(),
        fill in any::<bool>(),
        tile in 4usize..40,
    ) {
        let border = if valid { Border::Valid } else { Border::Same };
        let weights = if weighted { "1:2,4:0.7,10:3" } else { "" };
        let job = job(kernel.clone(), &input.data, weights, border, fill, tile);
        let Ok(expected) = smooth_in_memory(&input, &job, &NaiveHost) else {
            // Valid border wider than the raster: nothing to compare.
            return Ok(());
        };
        let choice = rank.map_or(RankChoice::Numerical, RankChoice::Fixed);
        let mut methods = vec![SeparableHost::new("svd", svd::plan(&kernel, choice), &kernel)];
        let terms = terms.min(kernel.radius());
        if let Ok(p) = separable::dct5_plan(&kernel, terms) {
            methods.push(SeparableHost::new("dct5", p, &kernel));
        }
        if let Ok(p) = separable::dct5_plan_certified(&kernel, CERTIFIED_TERMS) {
            methods.push(SeparableHost::new("dct5 on a longer period", p, &kernel));
        }
        for fast in methods {
            let certified = Certified::new(fast);
            let got = smooth_in_memory(&input, &job, &certified).unwrap();
            prop_assert_eq!(&got, &expected, "{}", certified.name());
        }
    }
}

#[test]
fn exact_mode_past_the_presence_masks() {
    // 100 classes in one tile: more than the dct5 band scorer's 64-class
    // presence masks, so it finds the classes' boxes by scanning every row.
    let input = MemRaster::new(
        90,
        70,
        SynthRaster::new(90, 70, 100, Pattern::Simplex, 11)
            .with_scale(3.0)
            .to_vec(),
    );
    let k: Kernel = "gaussian:2".parse::<KernelSpec>().unwrap().build().unwrap();
    let job = job(k.clone(), &input.data, "", Border::Same, false, 90);
    let expected = smooth_in_memory(&input, &job, &NaiveHost).unwrap();
    let certified = Certified::new(SeparableHost::new(
        "dct5",
        separable::dct5_plan(&k, 3).unwrap(),
        &k,
    ));
    assert_eq!(
        smooth_in_memory(&input, &job, &certified).unwrap(),
        expected
    );
    let mut codes = input.data.clone();
    codes.sort_unstable();
    codes.dedup();
    assert!(codes.len() > 64, "only {} classes", codes.len());
}

#[test]
fn exact_mode_on_the_fixture_kernels_with_ties() {
    // Boxes make many exact ties: all of them must be recomputed, and right.
    let input = MemRaster::new(
        64,
        64,
        SynthRaster::new(64, 64, 3, Pattern::Random, 5).to_vec(),
    );
    for spec in ["box:5", "box:3", "disc:3", "gaussian:1.5"] {
        let k: Kernel = spec.parse::<KernelSpec>().unwrap().build().unwrap();
        let job = job(k.clone(), &input.data, "", Border::Same, false, 24);
        let expected = smooth_in_memory(&input, &job, &NaiveHost).unwrap();
        for fast in [
            SeparableHost::new("svd", svd::plan(&k, RankChoice::Numerical), &k),
            SeparableHost::new(
                "dct5",
                separable::dct5_plan(&k, 3.min(k.radius()))
                    .unwrap_or_else(|_| svd::plan(&k, RankChoice::Fixed(1))),
                &k,
            ),
        ] {
            let certified = Certified::new(fast);
            let got = smooth_in_memory(&input, &job, &certified).unwrap();
            assert_eq!(got, expected, "{spec} {}", certified.name());
            let f = certified.recomputed_fraction();
            assert!(f < 1.0, "{spec}: recomputed {f}");
        }
    }
}

#[test]
fn svd_agrees_with_naive_on_gaussians() {
    // Thesis' simplex data, moderate size; the full Table A sizes run in the bench.
    let input = MemRaster::new(
        256,
        256,
        SynthRaster::new(256, 256, 6, Pattern::Simplex, 3)
            .with_scale(24.0)
            .to_vec(),
    );
    for sigma in [1.0, 2.5, 5.0] {
        let k = KernelSpec::Gaussian { sigma, size: None }.build().unwrap();
        let job = job(k.clone(), &input.data, "", Border::Same, false, 128);
        let expected = smooth_in_memory(&input, &job, &NaiveHost).unwrap();
        let fast = SeparableHost::new("svd", svd::plan(&k, RankChoice::Numerical), &k);
        let got = smooth_in_memory(&input, &job, &fast).unwrap();
        let a = agreement(&got, &expected);
        assert!(a >= 0.99999, "σ={sigma}: {a}");
    }
}

#[test]
fn dct5_agrees_with_naive_on_random_four_classes() {
    // The accuracy target's case, N = 127 (σ = 21) on uniformly random 4-class data,
    // at 256² (measured 99.854 %). The 1024² run is recorded in
    // BENCHMARKS.md: 99.865 % with K = 3, the exact coefficients of the
    // truncated kernel leave ‖k̃ − k‖₁ = 2.4e-3; K = 5 reaches 99.92 %.
    let n = 256;
    let input = MemRaster::new(
        n,
        n,
        SynthRaster::new(n, n, 4, Pattern::Random, 11).to_vec(),
    );
    let k = KernelSpec::Gaussian {
        sigma: 21.0,
        size: None,
    }
    .build()
    .unwrap();
    assert_eq!(k.size(), 127);
    let job = job(k.clone(), &input.data, "", Border::Same, false, n);
    let expected = smooth_in_memory(&input, &job, &NaiveHost).unwrap();
    let fast = SeparableHost::new("dct5", separable::dct5_plan(&k, 3).unwrap(), &k);
    let got = smooth_in_memory(&input, &job, &fast).unwrap();
    let a = agreement(&got, &expected);
    assert!(a >= 0.998, "K=3: {a}");
    let fast = SeparableHost::new("dct5", separable::dct5_plan(&k, 8).unwrap(), &k);
    let a8 = agreement(&smooth_in_memory(&input, &job, &fast).unwrap(), &expected);
    assert!(a8 >= 0.999 && a8 > a, "K=8: {a8}");
}

#[test]
fn dct5_takes_the_one_class_of_a_window_exactly() {
    // Two half-planes of classes 3 and 7 with nodata holes, a crude K = 1
    // approximation: wherever a window holds one class only (and the centre
    // is not nodata) the exact answer is that class, and dct5 must give it
    // (the band scorer decides such pixels without scores); nodata centres
    // stay nodata.
    let (w, h, r) = (96usize, 80usize, 12isize);
    let mut data: Vec<u16> = (0..w * h)
        .map(|i| if i % w < w / 2 { 3 } else { 7 })
        .collect();
    for y in 30..36 {
        for x in 10..16 {
            data[y * w + x] = NODATA;
        }
    }
    for i in (0..w * h).step_by(37) {
        data[i] = NODATA;
    }
    let input = MemRaster::new(w, h, data.clone());
    let k = KernelSpec::Gaussian {
        sigma: 4.0,
        size: None,
    }
    .build()
    .unwrap();
    assert_eq!(k.size(), 25);
    let fast = SeparableHost::new("dct5", separable::dct5_plan(&k, 1).unwrap(), &k);
    for tile in [w, 32] {
        let job = job(k.clone(), &input.data, "", Border::Same, false, tile);
        let expected = smooth_in_memory(&input, &job, &NaiveHost).unwrap();
        let got = smooth_in_memory(&input, &job, &fast).unwrap();
        let mut alone = 0;
        for y in 0..h as isize {
            for x in 0..w as isize {
                let mut seen = std::collections::BTreeSet::new();
                for dy in -r..=r {
                    for dx in -r..=r {
                        let (u, v) = (x + dx, y + dy);
                        if (0..w as isize).contains(&u) && (0..h as isize).contains(&v) {
                            let c = data[v as usize * w + u as usize];
                            if c != NODATA {
                                seen.insert(c);
                            }
                        }
                    }
                }
                let i = y as usize * w + x as usize;
                if data[i] == NODATA {
                    assert_eq!(got.data[i], NODATA, "nodata centre ({x},{y})");
                } else if seen.len() == 1 {
                    alone += 1;
                    assert_eq!(got.data[i], expected.data[i], "({x},{y}) tile {tile}");
                    assert_eq!(got.data[i], data[i]);
                }
            }
        }
        assert!(alone > w * h / 3, "{alone} one-class windows");
    }
}

/// Confidence-weighted votes on the fast host methods: svd and dct5 agree
/// with the weighted naive baseline at their usual accuracy, the certified
/// mode of both is byte-identical to it, and the weights do change the map
/// (against the unweighted run), at two tile sizes.
#[test]
fn fast_methods_weigh_votes_by_confidence() {
    let n = 160;
    let input = MemRaster::new(
        n,
        n,
        SynthRaster::new(n, n, 6, Pattern::Simplex, 7)
            .with_scale(12.0)
            .to_vec(),
    );
    // Low confidence along patch borders of another pattern, some zeros.
    let votes = MemRaster::new(
        n,
        n,
        SynthRaster::new(n, n, 200, Pattern::Simplex, 8)
            .with_scale(5.0)
            .to_vec()
            .into_iter()
            .enumerate()
            .map(|(i, v)| if i % 23 == 0 { 0 } else { v * 300 })
            .collect(),
    );
    let run = |method: &dyn ClassSmoother, job: &SmoothJob, weighted: bool| {
        common::smooth_voted(&input, weighted.then_some(&votes), job, method)
    };
    let k = KernelSpec::Gaussian {
        sigma: 2.5,
        size: None,
    }
    .build()
    .unwrap();
    for tile in [48, 1000] {
        let job = job(k.clone(), &input.data, "2:1.5", Border::Same, true, tile);
        let expected = run(&NaiveHost, &job, true);
        let unweighted = run(&NaiveHost, &job, false);
        assert!(
            agreement(&expected, &unweighted) < 0.99,
            "weights change little"
        );
        let fast = [
            SeparableHost::new("svd", svd::plan(&k, RankChoice::Numerical), &k),
            SeparableHost::new("dct5", separable::dct5_plan(&k, 3).unwrap(), &k),
        ];
        for f in fast {
            let a = agreement(&run(&f, &job, true), &expected);
            assert!(a >= 0.999, "{} tile {tile}: {a}", f.name());
            let certified = Certified::new(f);
            assert!(
                run(&certified, &job, true) == expected,
                "{} tile {tile}",
                certified.name()
            );
        }
    }
}
