//! Kernels over 255 (up to `kernel::PER_TAP_MAX_SIZE` = 511, the widest
//! every method takes; wider ones: large_kernels.rs): σ = 64 (N = 385), a
//! 301² box and a 261² disc through every exact method, byte-identical to
//! `NaiveHost` untiled: naive on the host, every naive OpenCL variant and
//! CPU path, `--exact` dct5 and svd on the host and on the OpenCL test
//! device (PoCL here), with a tile smaller than the halo among the tile
//! sizes. dct5 (K = 3) on the device agrees with the host. Rasters are
//! small (a naive pixel costs up to 148k taps at N = 385) but wider than
//! 64 + R, so windows hold pixels at columns dx > 255 of the kernel.

use crate::common;

use mapfilter::device::test_device;
use mapfilter::engine::{SmoothJob, smooth_in_memory};
use mapfilter::io::MemRaster;
use mapfilter::kernel::{Kernel, KernelSpec};
use mapfilter::method::ClassSmoother;
use mapfilter::method::certified::Certified;
use mapfilter::method::dct5::CERTIFIED_TERMS;
use mapfilter::method::naive::NaiveHost;
use mapfilter::method::naive::cl::{CpuPaths, NaiveCl, Variant};
use mapfilter::method::separable::SeparableHost;
use mapfilter::method::separable::cl::SeparableCl;
use mapfilter::method::separable::svd::RankChoice;
use mapfilter::method::separable::{self, svd};
use mapfilter::synth::Pattern;
use tiles::Border;

const NODATA: u16 = 255;

/// Blobs (or noise) of `classes` classes with scattered nodata.
fn input(w: usize, h: usize, classes: u16, pattern: Pattern, seed: u64) -> MemRaster {
    common::synth_with_holes((w, h), classes, pattern, seed, 12.0, 40, NODATA)
}

fn job(kernel: &Kernel, data: &[u16], tile: usize, fill: bool) -> SmoothJob {
    common::class_job(kernel, data, "", (Border::Same, fill), tile, NODATA)
}

struct Case {
    kernel: Kernel,
    raster: MemRaster,
    fill: bool,
    reference: MemRaster,
}

impl Case {
    fn new(spec: &str, raster: MemRaster, fill: bool) -> Self {
        let kernel: Kernel = spec.parse::<KernelSpec>().unwrap().build().unwrap();
        assert!(kernel.size() > 255, "{spec}");
        let reference = smooth_in_memory(
            &raster,
            &job(&kernel, &raster.data, 1 << 20, fill),
            &NaiveHost,
        )
        .unwrap();
        Case {
            kernel,
            raster,
            fill,
            reference,
        }
    }

    /// `method` at every tile size gives the reference's bytes.
    fn check(&self, method: &dyn ClassSmoother, tiles: &[usize]) {
        for &t in tiles {
            let job = job(&self.kernel, &self.raster.data, t, self.fill);
            let got = smooth_in_memory(&self.raster, &job, method).unwrap();
            let differ = got
                .data
                .iter()
                .zip(&self.reference.data)
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(
                differ,
                0,
                "{} (N = {}) tile {t}: {differ} pixels differ from naive/host",
                method.name(),
                self.kernel.size()
            );
        }
    }

    /// Share of pixels on which `a` and `b` agree (whole raster, one tile).
    fn agreement(&self, a: &dyn ClassSmoother, b: &dyn ClassSmoother) -> f64 {
        let job = job(&self.kernel, &self.raster.data, 1 << 20, self.fill);
        let x = smooth_in_memory(&self.raster, &job, a).unwrap();
        let y = smooth_in_memory(&self.raster, &job, b).unwrap();
        let same = x.data.iter().zip(&y.data).filter(|(p, q)| p == q).count();
        same as f64 / x.data.len() as f64
    }
}

/// The tile smaller than every halo here (R = 130..192).
const SMALL_TILE: usize = 40;

#[test]
fn sigma_64_through_every_exact_method() {
    let case = Case::new(
        "gaussian:64",
        input(130, 24, 4, Pattern::Simplex, 11),
        false,
    );
    assert_eq!(case.kernel.size(), 385);
    // The reference has both classes and nodata in it (a real test).
    assert!(case.reference.data.contains(&NODATA));
    assert!(case.reference.data.iter().any(|&v| v != NODATA));
    case.check(&NaiveHost, &[SMALL_TILE]);
    let plan = separable::dct5_plan(&case.kernel, 3).unwrap();
    let svd_plan = svd::plan(&case.kernel, RankChoice::Numerical);
    assert_eq!(svd_plan.terms.len(), 1);
    let host_exact = Certified::new(SeparableHost::new("dct5", plan.clone(), &case.kernel));
    case.check(&host_exact, &[1 << 20, SMALL_TILE]);
    let longer = separable::dct5_plan_certified(&case.kernel, CERTIFIED_TERMS).unwrap();
    let longer_exact = Certified::new(SeparableHost::new("dct5", longer, &case.kernel));
    case.check(&longer_exact, &[1 << 20, SMALL_TILE]);
    let svd_exact = Certified::new(SeparableHost::new("svd", svd_plan.clone(), &case.kernel));
    case.check(&svd_exact, &[1 << 20]);
    let Some(dev) = test_device() else { return };
    for v in [Variant::Buffer, Variant::Image, Variant::Local] {
        case.check(&NaiveCl::new(dev.clone(), v).unwrap(), &[1 << 20]);
    }
    case.check(
        &NaiveCl::new(dev.clone(), Variant::Fast).unwrap(),
        &[1 << 20, SMALL_TILE],
    );
    for (runs, mask) in [(true, true), (true, false), (false, false)] {
        let paths = CpuPaths {
            runs: Some(runs),
            mask: Some(mask),
            ..CpuPaths::default()
        };
        let m = NaiveCl::new(dev.clone(), Variant::Fast)
            .unwrap()
            .with_cpu_paths(paths);
        case.check(&m, &[1 << 20]);
    }
    let cl_exact = SeparableCl::new(dev.clone(), "dct5", &plan, &case.kernel, true).unwrap();
    case.check(&cl_exact, &[1 << 20, SMALL_TILE]);
    let cl_svd = SeparableCl::new(dev.clone(), "svd", &svd_plan, &case.kernel, true).unwrap();
    case.check(&cl_svd, &[1 << 20]);
    // dct5 K = 3 in f32 on the device against f64 on the host: only
    // near-ties may differ.
    let host = SeparableHost::new("dct5", plan.clone(), &case.kernel);
    let cl = SeparableCl::new(dev, "dct5", &plan, &case.kernel, false).unwrap();
    let agree = case.agreement(&host, &cl);
    assert!(agree >= 0.999, "dct5 host vs device agree on {agree}");
}

#[test]
fn box_301_through_every_exact_method() {
    // Noise: the fast variant's sliding histogram (alike kernel rows).
    let case = Case::new("box:301", input(120, 36, 3, Pattern::Random, 5), true);
    case.check(&NaiveHost, &[SMALL_TILE]);
    let plan = separable::dct5_plan(&case.kernel, 3).unwrap();
    let host_exact = Certified::new(SeparableHost::new("dct5", plan.clone(), &case.kernel));
    case.check(&host_exact, &[SMALL_TILE]);
    let Some(dev) = test_device() else { return };
    for v in Variant::ALL {
        case.check(&NaiveCl::new(dev.clone(), v).unwrap(), &[1 << 20]);
    }
    case.check(
        &NaiveCl::new(dev.clone(), Variant::Fast).unwrap(),
        &[SMALL_TILE],
    );
    let cl_exact = SeparableCl::new(dev, "dct5", &plan, &case.kernel, true).unwrap();
    case.check(&cl_exact, &[1 << 20, SMALL_TILE]);
}

#[test]
fn disc_130_through_every_exact_method() {
    // A disc is not separable: svd at a high rank, whose factors
    // (rank × 261 floats) are over 64 KiB and so read from __global.
    let case = Case::new("disc:130", input(110, 30, 3, Pattern::Simplex, 8), false);
    assert_eq!(case.kernel.size(), 261);
    case.check(&NaiveHost, &[SMALL_TILE]);
    let plan = svd::plan(&case.kernel, RankChoice::Numerical);
    assert!(
        plan.terms.len() * 261 * 4 > 64 * 1024,
        "rank {}",
        plan.terms.len()
    );
    let host_exact = Certified::new(SeparableHost::new("svd", plan.clone(), &case.kernel));
    case.check(&host_exact, &[1 << 20]);
    let Some(dev) = test_device() else { return };
    for v in [Variant::Local, Variant::Fast] {
        case.check(
            &NaiveCl::new(dev.clone(), v).unwrap(),
            &[1 << 20, SMALL_TILE],
        );
    }
    let cl_exact = SeparableCl::new(dev, "svd", &plan, &case.kernel, true).unwrap();
    case.check(&cl_exact, &[1 << 20]);
}

#[test]
fn sigma_over_500_is_a_one_line_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mapfilter"))
        .args(["bench", "--size", "16", "--kernel", "gaussian:500.5"])
        .args(["--method", "dct5", "--device", "host"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("3003x3003") && err.contains("3001"), "{err}");
}
