//! The fast methods on the OpenCL test device (PoCL here) against their host
//! twins: the float scores agree (winners identical except near-ties, which
//! must be rare), and the certified mode is byte-identical to naive.

use mapfilter::classes::{ClassTable, ClassWeights};
use mapfilter::device::test_device;
use mapfilter::engine::{MemRaster, SmoothJob, smooth_in_memory};
use mapfilter::kernel::{Kernel, KernelSpec};
use mapfilter::method::naive::NaiveHost;
use mapfilter::method::separable::SeparableHost;
use mapfilter::method::separable_cl::SeparableCl;
use mapfilter::method::svd::RankChoice;
use mapfilter::method::{ClassSmoother, dct5, svd};
use mapfilter::synth::{Pattern, SynthRaster};
use tiles::Border;

const NODATA: u16 = 255;

fn input(w: usize, h: usize, classes: u16, pattern: Pattern, seed: u64) -> MemRaster {
    let synth = SynthRaster::new(w, h, classes, pattern, seed).with_scale(8.0);
    let holes = SynthRaster::new(w, h, 50, Pattern::Random, seed + 1);
    let data = (0..w * h)
        .map(|i| {
            if holes.code(i % w, i / w) == 0 {
                NODATA
            } else {
                synth.code(i % w, i / w)
            }
        })
        .collect();
    MemRaster::new(w, h, data)
}

fn job(kernel: &Kernel, data: &[u16], weights: &str, tile: usize, fill: bool) -> SmoothJob {
    let classes = ClassTable::from_codes(data, Some(NODATA)).unwrap();
    SmoothJob {
        class_weights: weights.parse::<ClassWeights>().unwrap().quantise(&classes),
        output_nodata: Some(NODATA),
        kernel: kernel.clone(),
        classes,
        border: Border::Same,
        fill_nodata: fill,
        tile,
    }
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
        if let Ok(p) = dct5::plan(&kernel, 3.min(kernel.radius())) {
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
