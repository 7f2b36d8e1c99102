//! Image ops on the OpenCL device (PoCL in CI) against the plain host
//! references: every op, every sample type, every border mode, nodata,
//! chains across several tiles, the generic median (sizes above 5), and
//! several tiles in flight at once. Exact, except bilateral where the
//! similarity needs `exp` (Float32 and luma), which may differ in the last bits.

use mapfilter::device::test_device;
use mapfilter::filter::device::{DeviceRunner, histogram};
use mapfilter::filter::engine::{FilterJob, HostRunner, filter_in_memory};
use mapfilter::filter::histogram::{BandHistogram, Binning};
use mapfilter::filter::{BorderMode, Chain};
use mapfilter::io::MemImage;
use mapfilter::pixel::noise_planes as noise;
use mapfilter::pixel::{Bands, Pixel, Plane};

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
        let float = img.bands.sample_type() == mapfilter::pixel::SampleType::F32;
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

/// Debug printouts tell -0 from +0 and compare NaN equal to NaN.
fn same(got: &MemImage, want: &MemImage) -> bool {
    format!("{:?}", got.bands) == format!("{:?}", want.bands)
}

/// Noise with nodata (`nd`) at every 7th sample and, for Float32, the
/// values whose order matters to a sort: ±0, ±∞ and (unless NaN is the
/// nodata) NaN.
fn median_image<T: Pixel>(seed: u64, nd: Option<T>, wrap: fn(Vec<Plane<T>>) -> Bands) -> MemImage {
    let mut planes = noise::<T>(33, 27, 2, seed);
    let special = [-0.0f32, 0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
    for p in &mut planes {
        let n = p.data.len();
        for i in 0..n {
            if let Some(nd) = nd.filter(|_| i % 7 == 3) {
                p.data[i] = nd;
            } else if T::TYPE == mapfilter::pixel::SampleType::F32 && i % 5 == 1 {
                let s = special[(i / 5) % special.len()];
                if !(s.is_nan() && nd.is_some()) {
                    p.data[i] = T::from_f32(s);
                }
            } else if i % 11 == 0 {
                p.data[i] = p.data[(i * 7) % n]; // repeats: ties in the window
            }
        }
    }
    MemImage::new(wrap(planes), nd.map(|v| v.to_f32() as f64))
}

#[test]
fn generic_median_matches_the_host_reference() {
    let Some(dev) = test_device() else { return };
    let dev = DeviceRunner::new(dev);
    let borders = [
        BorderMode::Replicate,
        BorderMode::Reflect101,
        BorderMode::Constant(-3.4),
        BorderMode::Nodata,
    ];
    // Every type meets every border mode, and sizes 7, 9 and 15 each.
    for (ti, ty) in ["u8", "u16", "i16", "f32"].iter().enumerate() {
        for (bi, &border) in borders.iter().enumerate() {
            let size = [7, 9, 15][(ti + bi) % 3];
            let with_nd = border == BorderMode::Nodata;
            let img = match *ty {
                "u8" => median_image::<u8>(1, with_nd.then_some(0), Bands::U8),
                "u16" => median_image::<u16>(2, with_nd.then_some(65535), Bands::U16),
                "i16" => median_image::<i16>(3, with_nd.then_some(-9999), Bands::I16),
                _ => median_image::<f32>(4, with_nd.then_some(f32::NAN), Bands::F32),
            };
            let op = format!("median:{size}");
            let want = run(&img, &[&op], border, 1 << 20, None);
            let got = run(&img, &[&op], border, 16, Some(&dev));
            assert!(same(&got, &want), "{op} on {ty}, {border:?}");
        }
    }
}

#[test]
fn tiles_in_flight_match() {
    let Some(dev) = test_device() else { return };
    let mut dev = DeviceRunner::new(dev);
    let mut serial = DeviceRunner::new(dev.device.clone());
    serial.depth = 0;
    let img = MemImage::new(Bands::U8(noise(45, 71, 3, 8)), None);
    let cases: [&[&str]; 3] = [
        &["median:5"],
        &["scharr:3"],
        &["box:3", "median:7", "scharr:3"],
    ];
    for ops in cases {
        let want = run(&img, ops, BorderMode::Reflect101, 1 << 20, None);
        for tile in [1 << 20, 40, 16] {
            for runner in [&dev, &serial] {
                let got = run(&img, ops, BorderMode::Reflect101, tile, Some(runner));
                assert!(
                    same(&got, &want),
                    "{ops:?}, tile {tile}, depth {}",
                    runner.depth
                );
            }
        }
    }
    // Several tiles were on the device at once, and none with depth 0.
    assert_eq!(dev.stream.most_in_flight(), dev.depth + 1);
    assert_eq!(serial.stream.most_in_flight(), 1);
    let mut planes = noise::<i16>(38, 50, 2, 9);
    planes[0]
        .data
        .iter_mut()
        .step_by(9)
        .for_each(|v| *v = -9999);
    let img = MemImage::new(Bands::I16(planes), Some(-9999.0));
    dev.recycle = false; // results in new planes, not the input's
    for border in [BorderMode::Replicate, BorderMode::Nodata] {
        let want = run(&img, &["gaussian:1"], border, 1 << 20, None);
        let got = run(&img, &["gaussian:1"], border, 24, Some(&dev));
        assert!(same(&got, &want), "{border:?}");
    }
    // Device times are counted for every part.
    let t = mapfilter::filter::engine::ChainRunner::device_times(&dev).unwrap();
    assert!(
        t.kernel_ns > 0 && t.upload_ns > 0 && t.download_ns > 0,
        "{t:?}"
    );
}

#[test]
fn histograms_match() {
    let Some(dev) = test_device() else { return };
    let p = &noise::<u8>(300, 200, 1, 5)[0];
    let b = Binning::for_type(mapfilter::pixel::SampleType::U8, None, None)
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

#[test]
fn pyramid_steps_match_the_host_reference() {
    let Some(dev) = test_device() else { return };
    let dev = DeviceRunner::new(dev);
    let images = [
        MemImage::new(Bands::U8(noise(37, 29, 3, 11)), None),
        MemImage::new(Bands::U16(noise(23, 30, 1, 12)), None),
        MemImage::new(Bands::I16(noise(18, 7, 2, 13)), None),
        MemImage::new(Bands::F32(noise(21, 26, 1, 14)), None),
    ];
    let chains: [&[&str]; 4] = [
        &["pyrdown"],
        &["pyrup"],
        &["pyrdown", "box:3", "pyrup"],
        &["median:3", "pyrup", "scharr:3", "pyrdown"],
    ];
    for img in &images {
        for ops in chains {
            for border in [
                BorderMode::Reflect101,
                BorderMode::Replicate,
                BorderMode::Constant(-3.5),
            ] {
                let want = run(img, ops, border, 1 << 20, None);
                for tile in [16, 1 << 20] {
                    let got = run(img, ops, border, tile, Some(&dev));
                    assert!(
                        same(&got, &want),
                        "{ops:?} on {:?}, {border:?}, tile {tile}",
                        img.bands.sample_type()
                    );
                }
            }
        }
    }
    // Nodata (NaN on Float32, a value on Int16), inside and as the border.
    let mut f = noise::<f32>(25, 19, 1, 15);
    f[0].data.iter_mut().step_by(6).for_each(|v| *v = f32::NAN);
    let mut i = noise::<i16>(25, 19, 2, 16);
    i[1].data.iter_mut().step_by(4).for_each(|v| *v = -9999);
    for img in [
        MemImage::new(Bands::F32(f), Some(f64::NAN)),
        MemImage::new(Bands::I16(i), Some(-9999.0)),
    ] {
        for border in [BorderMode::Nodata, BorderMode::Reflect101] {
            let ops: &[&str] = &["pyrdown", "pyrup", "pyrup"];
            let want = run(&img, ops, border, 1 << 20, None);
            let got = run(&img, ops, border, 13, Some(&dev));
            assert!(same(&got, &want), "nodata {border:?}");
        }
    }
}

#[test]
fn colour_conversions_match_the_host_reference() {
    let Some(dev) = test_device() else { return };
    let dev = DeviceRunner::new(dev);
    let mut f = noise::<f32>(19, 23, 3, 21);
    f[1].data.iter_mut().step_by(7).for_each(|v| *v = f32::NAN);
    f[2].data.iter_mut().step_by(11).for_each(|v| *v = -v.abs());
    let cases = [
        (
            MemImage::new(Bands::U8(noise(37, 29, 3, 17)), None),
            vec!["gray", "ycbcr", "hsv"],
        ),
        (
            MemImage::new(Bands::U16(noise(23, 18, 4, 18)), None),
            vec!["gray", "ycbcr"],
        ),
        (
            MemImage::new(Bands::F32(f), Some(f64::NAN)),
            vec!["gray", "ycbcr", "hsv"],
        ),
    ];
    for (img, ops) in &cases {
        for op in ops {
            for chain in [vec![*op], vec!["box:3", op, "pyrdown"]] {
                let want = run(img, &chain, BorderMode::Reflect101, 1 << 20, None);
                let got = run(img, &chain, BorderMode::Reflect101, 16, Some(&dev));
                assert!(
                    same(&got, &want),
                    "{chain:?} on {:?}",
                    img.bands.sample_type()
                );
            }
        }
    }
    // Every 8-bit colour's HSV (4096 × 4096 would be all of them; a
    // stride of 7 per channel keeps the test quick).
    let vals: Vec<u8> = (0..=255).step_by(7).chain([255]).collect();
    let n = vals.len();
    let plane = |f: &dyn Fn(usize) -> u8| Plane::new(n * n, n, (0..n * n * n).map(f).collect());
    let img = MemImage::new(
        Bands::U8(vec![
            plane(&|i| vals[i / (n * n)]),
            plane(&|i| vals[(i / n) % n]),
            plane(&|i| vals[i % n]),
        ]),
        None,
    );
    for op in ["gray", "ycbcr", "hsv"] {
        let want = run(&img, &[op], BorderMode::Reflect101, 1 << 20, None);
        let got = run(&img, &[op], BorderMode::Reflect101, 1 << 20, Some(&dev));
        assert!(same(&got, &want), "{op} on every colour");
    }
}

#[test]
fn demosaicing_matches_the_host_reference() {
    let Some(dev) = test_device() else { return };
    let dev = DeviceRunner::new(dev);
    let mut planes = noise::<u16>(35, 26, 1, 31);
    planes[0].data.iter_mut().step_by(13).for_each(|v| *v = 7);
    let images = [
        MemImage::new(Bands::U8(noise(37, 29, 1, 30)), None),
        MemImage::new(Bands::U16(planes), Some(7.0)),
        MemImage::new(Bands::U8(noise(2, 5, 1, 32)), None),
    ];
    for img in &images {
        for pattern in ["RGGB", "BGGR", "GRBG", "GBRG"] {
            for method in ["bilinear", "ea", "mhc"] {
                let op = format!("demosaic:{pattern}:{method}");
                for ops in [vec![op.as_str()], vec![op.as_str(), "pyrdown", "hsv"]] {
                    if ops.len() > 1 && img.bands.sample_type() != mapfilter::pixel::SampleType::U8
                    {
                        continue; // hsv takes Byte
                    }
                    let want = run(img, &ops, BorderMode::Reflect101, 1 << 20, None);
                    let got = run(img, &ops, BorderMode::Reflect101, 16, Some(&dev));
                    assert!(
                        same(&got, &want),
                        "{ops:?} on {:?}",
                        img.bands.sample_type()
                    );
                }
            }
        }
    }
}

#[test]
fn laplacian_levels_match_the_host_reference() {
    let Some(dev) = test_device() else { return };
    let dev = DeviceRunner::new(dev);
    let mut i = noise::<i16>(25, 19, 2, 41);
    i[1].data.iter_mut().step_by(4).for_each(|v| *v = -9999);
    let mut f = noise::<f32>(17, 22, 1, 42);
    f[0].data.iter_mut().step_by(6).for_each(|v| *v = f32::NAN);
    let images = [
        MemImage::new(Bands::U8(noise(37, 29, 3, 43)), None),
        MemImage::new(Bands::U16(noise(23, 30, 1, 44)), None),
        MemImage::new(Bands::U8(noise(3, 2, 1, 45)), None),
        MemImage::new(Bands::I16(i), Some(-9999.0)),
        MemImage::new(Bands::F32(f), Some(f64::NAN)),
    ];
    let chains: [&[&str]; 4] = [
        &["laplacian-level"],
        &["pyrdown", "laplacian-level"],
        &["pyrdown", "pyrdown", "laplacian-top"],
        &["box:3", "laplacian-level", "scharr:3"],
    ];
    for img in &images {
        let mut borders = vec![BorderMode::Reflect101, BorderMode::Replicate];
        match img.nodata {
            Some(_) => borders.push(BorderMode::Nodata),
            None => borders.push(BorderMode::Constant(-3.5)),
        }
        for ops in chains {
            for &border in &borders {
                let want = run(img, ops, border, 1 << 20, None);
                for tile in [16, 1 << 20] {
                    let got = run(img, ops, border, tile, Some(&dev));
                    assert!(
                        same(&got, &want),
                        "{ops:?} on {:?}, {border:?}, tile {tile}",
                        img.bands.sample_type()
                    );
                }
            }
        }
    }
}

#[test]
fn denoising_matches_the_host() {
    let Some(dev) = test_device() else { return };
    let dev = DeviceRunner::new(dev);
    let images = [
        MemImage::new(Bands::U8(noise(37, 29, 2, 51)), None),
        MemImage::new(Bands::U16(noise(23, 18, 1, 52)), None),
        MemImage::new(Bands::F32(noise(19, 26, 1, 53)), None),
    ];
    let chains: [&[&str]; 3] = [
        &["denoise:3:1:30"],
        &["denoise:2:1.5:400"],
        &["box:3", "denoise:3:1:20", "pyrdown"],
    ];
    for img in &images {
        for ops in chains {
            for border in [BorderMode::Reflect101, BorderMode::Constant(7.0)] {
                let want = run(img, ops, border, 1 << 20, None);
                for tile in [16, 1 << 20] {
                    let got = run(img, ops, border, tile, Some(&dev));
                    assert!(
                        same(&got, &want),
                        "{ops:?} on {:?}, {border:?}, tile {tile}",
                        img.bands.sample_type()
                    );
                }
            }
        }
    }
}

/// A level op run as one device job (levels built on the device, held in
/// each pyramid storage, Scharr over all of them) against `filter --device
/// host`'s level-by-level path: the fast host paths, level chain by level
/// chain, in tiles.
#[test]
fn device_built_pyramids_match_the_host_level_by_level() {
    use mapfilter::filter::device::pyramid_levels::{self, LevelJob};
    use mapfilter::filter::device::pyramid_store::Store;
    use mapfilter::filter::levels::Levels;
    use mapfilter::with_bands;
    let Some(dev) = test_device() else { return };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let images = [
        MemImage::new(Bands::U8(noise(41, 27, 2, 61)), None),
        MemImage::new(Bands::U16(noise(23, 30, 1, 62)), None),
        MemImage::new(Bands::I16(noise(19, 17, 1, 63)), None),
        MemImage::new(Bands::F32(noise(26, 21, 1, 64)), None),
    ];
    let cases: [(&str, &[&str]); 4] = [
        ("scale-space:3:2", &["scharr:3"]),
        ("scale-space:2:3:1.1", &["scharr:7"]),
        ("gaussian-pyramid:4", &["scharr:5"]),
        ("scale-space:2:2", &[]),
    ];
    // Every type and case on the default storage with reflect101; the
    // other storages and a constant border on Byte (each a PoCL build).
    let byte = |img: &MemImage| img.bands.sample_type() == mapfilter::pixel::SampleType::U8;
    for img in &images {
        for (i, (level_op, after)) in cases.into_iter().enumerate() {
            let levels = Levels::parse(level_op).unwrap().unwrap();
            let borders = match byte(img) && i < 2 {
                true => vec![BorderMode::Reflect101, BorderMode::Constant(7.0)],
                false => vec![BorderMode::Reflect101],
            };
            for border in borders {
                let job = LevelJob::of(&levels, &[], &s(after), None, border)
                    .unwrap()
                    .expect("the device runs it whole");
                let want: Vec<MemImage> = levels
                    .chains(&[], &s(after))
                    .iter()
                    .map(|l| {
                        let job = FilterJob {
                            chain: Chain::parse(&l.ops).unwrap(),
                            border,
                            tile: 16,
                        };
                        filter_in_memory(img, &job, &HostRunner::default()).unwrap()
                    })
                    .collect();
                let stores = match byte(img) && i == 0 {
                    true => Store::ALL.to_vec(),
                    false => vec![Store::DEFAULT],
                };
                for store in stores {
                    let mut got = Vec::new();
                    with_bands!(&img.bands, p => pyramid_levels::run(&dev, store, &job, p, border, |_, b| {
                        got.push(MemImage::new(b, None));
                        Ok(())
                    }))
                    .unwrap();
                    assert_eq!(got.len(), want.len());
                    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            same(g, w),
                            "{level_op} {after:?} level {k} on {:?}, {border:?}, {store:?}",
                            img.bands.sample_type()
                        );
                    }
                }
            }
        }
    }
    // Ops the device does not run whole are left to the level-by-level path.
    let ss = Levels::parse("scale-space:2:2").unwrap().unwrap();
    let r = BorderMode::Reflect101;
    assert!(
        LevelJob::of(&ss, &s(&["box:3"]), &[], None, r)
            .unwrap()
            .is_none()
    );
    assert!(
        LevelJob::of(&ss, &[], &s(&["median:3"]), None, r)
            .unwrap()
            .is_none()
    );
    assert!(LevelJob::of(&ss, &[], &[], Some(0.0), r).unwrap().is_none());
    let lap = Levels::parse("laplacian-pyramid:3").unwrap().unwrap();
    assert!(LevelJob::of(&lap, &[], &[], None, r).unwrap().is_none());
}
