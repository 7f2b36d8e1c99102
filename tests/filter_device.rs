//! Image ops on the OpenCL device (PoCL in CI) against the plain host
//! references: every op, every sample type, every border mode, nodata, and
//! chains across several tiles. Exact, except bilateral where the
//! similarity needs `exp` (Float32 and luma), which may differ in the last bits.

use mapfilter::device::test_device;
use mapfilter::filter::device::{DeviceRunner, histogram};
use mapfilter::filter::engine::{FilterJob, HostRunner, MemImage, filter_in_memory};
use mapfilter::filter::histogram::{BandHistogram, Binning};
use mapfilter::filter::pixel::noise_planes as noise;
use mapfilter::filter::{Bands, BorderMode, Chain, Pixel};

fn run(
    img: &MemImage,
    ops: &[&str],
    border: BorderMode,
    tile: usize,
    dev: Option<&DeviceRunner>,
) -> MemImage {
    let job = FilterJob {
        chain: Chain::parse(&ops.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap(),
        border,
        tile,
    };
    match dev {
        Some(d) => filter_in_memory(img, &job, d).unwrap(),
        None => filter_in_memory(img, &job, &HostRunner { reference: true }).unwrap(),
    }
}

#[test]
fn every_op_matches_the_host_reference() {
    let Some(dev) = test_device() else { return };
    let dev = DeviceRunner::new(dev);
    // Every op on 3-band Byte; a few per other type (each op and type is a PoCL build).
    let all = [
        "box:3",
        "box:5",
        "gaussian:1.2",
        "sharpen:3",
        "sharpen:5",
        "median:3",
        "median:5",
        "scharr:3",
        "scharr:7",
        "oil:3:16",
        "bilateral:1.5:40:gray",
        "bilateral:1:60:color",
    ];
    let cases: Vec<(MemImage, Vec<&str>)> = vec![
        (
            MemImage::new(Bands::U8(noise(37, 29, 3, 1)), None),
            all.to_vec(),
        ),
        (
            MemImage::new(Bands::U16(noise(23, 31, 1, 2)), None),
            vec!["gaussian:1.2", "median:3", "bilateral:1.5:900:gray"],
        ),
        (
            MemImage::new(Bands::I16(noise(29, 19, 3, 3)), None),
            vec![
                "box:5",
                "median:5",
                "scharr:7",
                "oil:2:20",
                "bilateral:1:900:color",
            ],
        ),
        (
            MemImage::new(Bands::F32(noise(21, 26, 1, 4)), None),
            vec!["sharpen:5", "median:3", "scharr:3", "bilateral:1:50:gray"],
        ),
    ];
    for (img, ops) in &cases {
        let float = img.bands.sample_type() == mapfilter::filter::SampleType::F32;
        for op in ops {
            let want = run(img, &[op], BorderMode::Reflect101, 16, None);
            let got = run(img, &[op], BorderMode::Reflect101, 16, Some(&dev));
            if float && op.starts_with("bilateral") {
                assert_close(&got, &want, 1e-3, op);
            } else {
                assert_eq!(got, want, "{op} on {:?}", img.bands.sample_type());
            }
        }
    }
    let img = &cases[0].0;
    let want = run(
        img,
        &["bilateral:1:30:luma"],
        BorderMode::Replicate,
        64,
        None,
    );
    let got = run(
        img,
        &["bilateral:1:30:luma"],
        BorderMode::Replicate,
        64,
        Some(&dev),
    );
    assert_close(&got, &want, 1.0, "luma");
}

#[test]
fn borders_nodata_and_chains_match() {
    let Some(dev) = test_device() else { return };
    let dev = DeviceRunner::new(dev);
    let mut planes = noise::<i16>(41, 33, 3, 7);
    for (i, v) in planes[1].data.iter_mut().enumerate() {
        if i % 5 == 0 {
            *v = -9999;
        }
    }
    let img = MemImage::new(Bands::I16(planes), Some(-9999.0));
    let chain = [
        "median:3",
        "gaussian:1",
        "oil:2:10",
        "bilateral:1:900:color",
        "scharr:5",
    ];
    for border in [
        BorderMode::Replicate,
        BorderMode::Reflect101,
        BorderMode::Constant(-7.6),
        BorderMode::Nodata,
    ] {
        let want = run(&img, &chain, border, 1 << 20, None);
        let got = run(&img, &chain, border, 13, Some(&dev));
        assert_eq!(
            format!("{:?}", got.bands),
            format!("{:?}", want.bands),
            "{border:?}"
        ); // NaN nodata compares by its printout
    }
}

#[test]
fn histograms_match() {
    let Some(dev) = test_device() else { return };
    let p = &noise::<u8>(300, 200, 1, 5)[0];
    let b = Binning::for_type(mapfilter::filter::SampleType::U8, None, None)
        .unwrap()
        .unwrap();
    let mut want = BandHistogram::new(1, &b);
    want.add_reference(p, &b, Some(17));
    assert_eq!(histogram(&dev, p, 1, &b, Some(17)).unwrap(), want);
    let p = &noise::<f32>(123, 77, 1, 6)[0];
    let b = Binning::over(50, -400.0, 300.0);
    let mut want = BandHistogram::new(2, &b);
    want.add_reference(p, &b, None);
    assert!(want.outside > 0);
    assert_eq!(histogram(&dev, p, 2, &b, None).unwrap(), want);
}

fn assert_close(got: &MemImage, want: &MemImage, tol: f32, what: &str) {
    fn flat(b: &Bands) -> Vec<f32> {
        mapfilter::with_bands!(b, p => p.iter().flat_map(|p| p.data.iter().map(|v| v.to_f32())).collect())
    }
    let (a, b) = (flat(&got.bands), flat(&want.bands));
    assert_eq!(a.len(), b.len());
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    assert!(worst <= tol, "{what}: worst difference {worst}");
}
