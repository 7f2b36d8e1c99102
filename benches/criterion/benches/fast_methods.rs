//! Criterion benches of the fast host methods: dct5 against σ (its cost must
//! not depend on σ), svd at full rank, and the certified mode, on 512² random
//! 4-class rasters. `cargo bench -p mapfilter-benches --bench fast_methods`.

use criterion::{Criterion, criterion_group, criterion_main};
use mapfilter_core::classes::ClassTable;
use mapfilter_core::engine::{SmoothJob, smooth_in_memory};
use mapfilter_core::io::MemRaster;
use mapfilter_core::kernel::KernelSpec;
use mapfilter_core::method::certified::Certified;
use mapfilter_core::method::separable::SeparableHost;
use mapfilter_core::method::separable::svd::RankChoice;
use mapfilter_core::method::separable::{self, svd};
use mapfilter_core::synth::{Pattern, SynthRaster};
use std::hint::black_box;
use tiles::Border;

fn job(sigma: f64, input: &MemRaster) -> SmoothJob {
    let classes = ClassTable::from_codes(&input.data, None).unwrap();
    SmoothJob {
        class_weights: vec![1; classes.len()],
        output_nodata: classes.output_nodata(u16::MAX),
        kernel: KernelSpec::Gaussian { sigma, size: None }.build().unwrap(),
        classes,
        border: Border::Same,
        fill_nodata: false,
        tile: 1024,
        policies: Default::default(),
    }
}

fn benches(c: &mut Criterion) {
    let n = 512;
    let input = MemRaster::new(n, n, SynthRaster::new(n, n, 4, Pattern::Random, 1).to_vec());
    let mut group = c.benchmark_group("dct5_vs_sigma");
    group.sample_size(10);
    for sigma in [1.0, 5.0, 21.0, 42.0] {
        let job = job(sigma, &input);
        let m = SeparableHost::new(
            "dct5",
            separable::dct5_plan(&job.kernel, 3).unwrap(),
            &job.kernel,
        );
        group.bench_function(format!("sigma={sigma}"), |b| {
            b.iter(|| black_box(smooth_in_memory(&input, &job, &m).unwrap()))
        });
    }
    group.finish();
    let mut group = c.benchmark_group("fast_sigma5");
    group.sample_size(10);
    let job = job(5.0, &input);
    let svd_m = SeparableHost::new(
        "svd",
        svd::plan(&job.kernel, RankChoice::Numerical),
        &job.kernel,
    );
    group.bench_function("svd", |b| {
        b.iter(|| black_box(smooth_in_memory(&input, &job, &svd_m).unwrap()))
    });
    let exact = Certified::new(SeparableHost::new(
        "dct5",
        separable::dct5_plan(&job.kernel, 3).unwrap(),
        &job.kernel,
    ));
    group.bench_function("dct5_exact", |b| {
        b.iter(|| black_box(smooth_in_memory(&input, &job, &exact).unwrap()))
    });
    group.finish();
}

criterion_group!(fast, benches);
criterion_main!(fast);
