//! Helpers shared by the integration tests: writing small test rasters with
//! GDAL, reading rasters back, running the CLI, and a brute-force reference.
#![allow(dead_code, unused_imports)]

#[cfg(feature = "gdal")]
pub use gdal_io::*;

/// Writing and reading test rasters through GDAL, running the CLI.
#[cfg(feature = "gdal")]
mod gdal_io {
    use gdal::raster::{ColorEntry, ColorTable, GdalDataType, PaletteInterpretation, RgbaEntry};
    use gdal::{Dataset, DriverManager};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};

    pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    pub fn fixture(name: &str) -> PathBuf {
        Path::new(FIXTURES).join(name)
    }

    /// A small GeoTIFF description for tests.
    pub struct TestRaster<'a> {
        pub width: usize,
        pub height: usize,
        pub data: &'a [u16],
        pub data_type: GdalDataType,
        pub nodata: Option<f64>,
        pub colors: bool,
    }

    /// Writes `r` as a GeoTIFF in UTM 33N with 30 m pixels.
    pub fn write_raster(path: &Path, r: &TestRaster) {
        let driver = DriverManager::get_driver_by_name("GTiff").unwrap();
        let mut ds = match r.data_type {
            GdalDataType::UInt8 => driver
                .create_with_band_type::<u8, _>(path, r.width, r.height, 1)
                .unwrap(),
            GdalDataType::UInt16 => driver
                .create_with_band_type::<u16, _>(path, r.width, r.height, 1)
                .unwrap(),
            GdalDataType::Float32 => driver
                .create_with_band_type::<f32, _>(path, r.width, r.height, 1)
                .unwrap(),
            other => panic!("unsupported {other:?}"),
        };
        ds.set_geo_transform(&[500_000.0, 30.0, 0.0, 6_200_000.0, 0.0, -30.0])
            .unwrap();
        let srs = gdal::spatial_ref::SpatialRef::from_epsg(32633).unwrap();
        ds.set_spatial_ref(&srs).unwrap();
        let mut band = ds.rasterband(1).unwrap();
        let shape = (r.width, r.height);
        match r.data_type {
            GdalDataType::UInt8 => {
                let mut b =
                    gdal::raster::Buffer::new(shape, r.data.iter().map(|&v| v as u8).collect());
                band.write((0, 0), shape, &mut b).unwrap();
            }
            GdalDataType::UInt16 => {
                let mut b = gdal::raster::Buffer::new(shape, r.data.to_vec());
                band.write((0, 0), shape, &mut b).unwrap();
            }
            _ => {
                let mut b =
                    gdal::raster::Buffer::new(shape, r.data.iter().map(|&v| v as f32).collect());
                band.write((0, 0), shape, &mut b).unwrap();
            }
        }
        if r.nodata.is_some() {
            band.set_no_data_value(r.nodata).unwrap();
        }
        if r.colors {
            let mut ct = ColorTable::new(PaletteInterpretation::Rgba);
            for i in 0..8u16 {
                let e = RgbaEntry {
                    r: (i * 30) as i16,
                    g: 255 - (i * 20) as i16,
                    b: (i * 7) as i16,
                    a: 255,
                };
                ct.set_color_entry(i, &ColorEntry::Rgba(e));
            }
            band.set_color_table(&ct);
        }
    }

    /// Reads band 1 as u16 with its size.
    pub fn read_raster(path: &Path) -> (usize, usize, Vec<u16>) {
        let ds = Dataset::open(path).unwrap();
        let (w, h) = ds.raster_size();
        let band = ds.rasterband(1).unwrap();
        let mut buf = vec![0u16; w * h];
        band.read_into_slice((0, 0), (w, h), (w, h), &mut buf, None)
            .unwrap();
        (w, h, buf)
    }

    /// Runs the mapfilter binary.
    pub fn mapfilter(args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_mapfilter"))
            .args(args)
            .output()
            .expect("run mapfilter")
    }

    /// Runs the mapfilter binary and asserts that it succeeded (showing its
    /// stderr if not).
    pub fn mapfilter_ok(args: &[&str]) -> Output {
        let run = mapfilter(args);
        assert!(
            run.status.success(),
            "mapfilter {args:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        run
    }
}

/// Every exact method available in this build for `kernel`, by name: the
/// host reference, fft on the host, every naive variant on the OpenCL test device (PoCL here
/// and in CI), and the certified (`--exact`) fast methods on host and device
/// (dct5 only where it applies: gaussian and box kernels).
pub fn exact_methods(
    kernel: &mapfilter::kernel::Kernel,
) -> Vec<(String, Box<dyn mapfilter::method::ClassSmoother>)> {
    use mapfilter::device::{DeviceChoice, test_device};
    use mapfilter::method::ClassSmoother;
    use mapfilter::method::naive::NaiveHost;
    use mapfilter::method::naive::class_smoother;
    use mapfilter::method::select::{FastOptions, Method, MethodSpec, smoother_for};
    let mut methods: Vec<(String, Box<dyn ClassSmoother>)> = vec![
        ("naive/host".into(), Box::new(NaiveHost)),
        (
            "fft/host".into(),
            Box::new(mapfilter::method::fft::FftHost::new(kernel)),
        ),
    ];
    let device = test_device().map(|dev| DeviceChoice::Index(dev.info().index));
    if let Some(device) = &device {
        for &variant in Method::default().variants() {
            let m = class_smoother(device, Some(variant)).unwrap();
            methods.push((format!("{} ({})", m.name(), variant.name()), m));
        }
    }
    let exact = FastOptions {
        exact: true,
        ..FastOptions::default()
    };
    // Every certifiable method of the registry, so a new one is tested here.
    for method in Method::all().filter(|m| m.is_certifiable()) {
        let spec = MethodSpec::new(method, None, exact).unwrap();
        for dev in [Some(DeviceChoice::Host), device.clone()]
            .into_iter()
            .flatten()
        {
            match smoother_for(&spec, &dev, kernel) {
                Ok(m) => methods.push((format!("{method} --exact on {dev:?}"), m)),
                Err(e) if method.name() == "dct5" => eprintln!("dct5 skipped: {e}"),
                Err(e) => panic!("{method} --exact on {dev:?}: {e}"),
            }
        }
    }
    methods
}

/// The names of the files in `dir`, sorted.
pub fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Plain, untiled reference of docs/semantics.md#scores on raw codes with integer
/// weights, written independently of the library: per pixel, per class code,
/// sum the weights of window pixels of that code.
#[allow(clippy::too_many_arguments)] // mirrors the spec's parameters one to one
pub fn brute_force(
    width: usize,
    height: usize,
    codes: &[u16],
    nodata: Option<u16>,
    kernel: &[u64],
    n: usize,
    class_weight: &dyn Fn(u16) -> u64,
    fill_nodata: bool,
    valid: bool,
    out_nodata: u16,
) -> (usize, usize, Vec<u16>) {
    let r = (n / 2) as i64;
    let (ow, oh, off) = if valid {
        (width - 2 * r as usize, height - 2 * r as usize, r)
    } else {
        (width, height, 0)
    };
    let mut out = Vec::with_capacity(ow * oh);
    for oy in 0..oh as i64 {
        for ox in 0..ow as i64 {
            let (cx, cy) = (ox + off, oy + off);
            let centre = codes[cy as usize * width + cx as usize];
            if Some(centre) == nodata && !fill_nodata {
                out.push(out_nodata);
                continue;
            }
            let mut scores = std::collections::BTreeMap::<u16, u64>::new();
            for dy in -r..=r {
                for dx in -r..=r {
                    let (x, y) = (cx + dx, cy + dy);
                    if x < 0 || y < 0 || x >= width as i64 || y >= height as i64 {
                        continue;
                    }
                    let c = codes[y as usize * width + x as usize];
                    if Some(c) == nodata {
                        continue;
                    }
                    *scores.entry(c).or_default() +=
                        kernel[((dy + r) * n as i64 + dx + r) as usize];
                }
            }
            let best = scores
                .iter()
                .map(|(&c, &s)| s * class_weight(c))
                .max()
                .unwrap_or(0);
            let value = if best == 0 {
                out_nodata
            } else if Some(centre) != nodata
                && scores.get(&centre).map(|&s| s * class_weight(centre)) == Some(best)
            {
                centre
            } else {
                // BTreeMap iterates codes ascending: the first best is the smallest code.
                *scores
                    .iter()
                    .find(|(c, s)| **s * class_weight(**c) == best)
                    .unwrap()
                    .0
            };
            out.push(value);
        }
    }
    (ow, oh, out)
}

/// A synthetic class raster (`pattern`, blobs `scale` pixels wide) with
/// nodata `nodata` at about one pixel in `holes` (`holes` codes drawn
/// uniformly; code 0 makes a hole).
pub fn synth_with_holes(
    (w, h): (usize, usize),
    classes: u16,
    pattern: mapfilter::synth::Pattern,
    seed: u64,
    scale: f64,
    holes: u16,
    nodata: u16,
) -> mapfilter::io::MemRaster {
    use mapfilter::synth::{Pattern, SynthRaster};
    let synth = SynthRaster::new(w, h, classes, pattern, seed).with_scale(scale);
    let holes = SynthRaster::new(w, h, holes, Pattern::Random, seed + 1);
    let data = (0..w * h)
        .map(|i| {
            if holes.code(i % w, i / w) == 0 {
                nodata
            } else {
                synth.code(i % w, i / w)
            }
        })
        .collect();
    mapfilter::io::MemRaster::new(w, h, data)
}

/// A smoothing job over `data` with nodata `nodata` (kept as the output's),
/// class weights as `--class-weights` reads them.
pub fn class_job(
    kernel: &mapfilter::kernel::Kernel,
    data: &[u16],
    weights: &str,
    (border, fill_nodata): (tiles::Border, bool),
    tile: usize,
    nodata: u16,
) -> mapfilter::engine::SmoothJob {
    use mapfilter::classes::{ClassTable, ClassWeights};
    let classes = ClassTable::from_codes(data, Some(nodata)).unwrap();
    mapfilter::engine::SmoothJob {
        class_weights: weights.parse::<ClassWeights>().unwrap().quantise(&classes),
        output_nodata: Some(nodata),
        kernel: kernel.clone(),
        classes,
        border,
        fill_nodata,
        tile,
        policies: Default::default(),
    }
}

/// `method` over `input` in memory, each vote weighted by `votes` when
/// given (`smooth --confidence`).
pub fn smooth_voted(
    input: &mapfilter::io::MemRaster,
    votes: Option<&mapfilter::io::MemRaster>,
    job: &mapfilter::engine::SmoothJob,
    method: &dyn mapfilter::method::ClassSmoother,
) -> mapfilter::io::MemRaster {
    use mapfilter::io::{ClassSource, MemRaster};
    let mut out = MemRaster::filled(input.width, input.height, 0);
    let mut votes = votes.cloned();
    mapfilter::engine::smooth_weighted(
        &mut input.clone(),
        votes.as_mut().map(|v| v as &mut dyn ClassSource),
        &mut out,
        job,
        method,
        &mapfilter::progress::Progress::hidden(),
    )
    .unwrap();
    out
}

/// Held by tests that install into, or look at, the system's own paths
/// (the Debian package's `dpkg -i`, the QGIS provider's missing-binary
/// check on the PATH), so that they do not run at once.
pub fn system_paths_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small xorshift64 generator (seed not zero): the same sequence on
/// every machine, so test maps and weights need no crate.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// [`Rng`] as a closure.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut rng = Rng(seed);
    move || rng.next()
}

/// Every tie rule, with and without `--fill-nodata`, on `tile`: calls
/// `check` with the method parameters and naive's result on the host, the
/// reference a device method must give byte for byte.
pub fn each_rule_against_naive(
    tile: &mapfilter::method::ClassTile,
    kernel: &mapfilter::kernel::Kernel,
    class_weights: &[u32],
    confidence: Option<&[u16]>,
    mut check: impl FnMut(&mapfilter::method::SmoothParams, &[u16]),
) {
    use mapfilter::method::ClassSmoother;
    use mapfilter::method::policy::Ties;
    for ties in [
        Ties::Centre,
        Ties::Smallest,
        Ties::Largest,
        Ties::Undecided(9),
    ] {
        for fill_nodata in [false, true] {
            let params = mapfilter::method::SmoothParams {
                kernel,
                class_weights,
                fill_nodata,
                ties,
                confidence,
            };
            let mut want = vec![0u16; tile.output_len()];
            mapfilter::method::naive::NaiveHost
                .smooth(tile, &params, &mut want)
                .unwrap();
            check(&params, &want);
        }
    }
}
