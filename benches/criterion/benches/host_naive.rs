//! Criterion bench of the exact host method (issue 2): 1024² synthetic simplex
//! raster with 16 classes, gaussian σ=2.5 (N=15), through the tile engine in
//! memory (`engine::smooth_in_memory`), so tiling and compaction are included
//! but no GDAL I/O; beside it the same job on the OpenCL CPU device (PoCL,
//! the fast variant; issue 3), when there is one. Run with
//! `cargo bench -p mapfilter-benches --bench host_naive`.

use criterion::{Criterion, criterion_group, criterion_main};
use mapfilter_core::classes::{ClassTable, ClassWeights};
use mapfilter_core::device::{Device, DeviceKind, list_devices};
use mapfilter_core::engine::{SmoothJob, smooth_in_memory};
use mapfilter_core::io::MemRaster;
use mapfilter_core::kernel::KernelSpec;
use mapfilter_core::method::naive::NaiveHost;
use mapfilter_core::method::naive::cl::{NaiveCl, Variant};
use mapfilter_core::synth::{Pattern, SynthRaster};
use std::hint::black_box;
use std::time::Duration;
use tiles::Border;

const SIDE: usize = 1024;
const CLASSES: u16 = 16;

fn job(codes: &[u16]) -> SmoothJob {
    let classes = ClassTable::from_codes(codes, None).expect("classes");
    let weights = ClassWeights::default();
    SmoothJob {
        kernel: KernelSpec::Gaussian {
            sigma: 2.5,
            size: None,
        }
        .build()
        .expect("kernel"),
        class_weights: weights.quantise(&classes),
        output_nodata: None,
        classes,
        border: Border::Same,
        fill_nodata: false,
        tile: 512,
        policies: Default::default(),
    }
}

fn host_naive(c: &mut Criterion) {
    let synth = SynthRaster::new(SIDE, SIDE, CLASSES, Pattern::Simplex, 1);
    let input = MemRaster::new(SIDE, SIDE, synth.to_vec());
    let job = job(&input.data);
    assert_eq!(job.kernel.size(), 15);
    let mut group = c.benchmark_group("host_naive");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    group.bench_function("simplex_1024_c16_gaussian2.5", |b| {
        b.iter(|| smooth_in_memory(black_box(&input), &job, &NaiveHost).expect("smooth"))
    });
    let cpu = list_devices()
        .ok()
        .and_then(|d| d.into_iter().find(|d| d.kind == DeviceKind::Cpu));
    match cpu {
        Some(info) => {
            let device = Device::open(info.index).expect("open the OpenCL CPU device");
            let pocl = NaiveCl::new(device, Variant::Fast).expect("naive on the CPU device");
            group.bench_function("simplex_1024_c16_gaussian2.5_opencl_cpu", |b| {
                b.iter(|| smooth_in_memory(black_box(&input), &job, &pocl).expect("smooth"))
            });
        }
        None => eprintln!("no OpenCL CPU device: the PoCL bench is skipped"),
    }
    group.finish();
}

criterion_group!(benches, host_naive);
criterion_main!(benches);
