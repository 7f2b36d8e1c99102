//! Kernels past the per-tap limit (`kernel::PER_TAP_MAX_SIZE` = 511), up to
//! `kernel::MAX_SIZE` = 3001 (σ = 500): fft gives naive's bytes on crops of
//! the bundled MODIS map at σ = 100 and 150 (the windows wholly inside the
//! map: `valid`) and on synthetic rasters at σ = 200, a 1001² box and a
//! disc of radius 600 (`same`: windows reaching past the raster), at tile
//! sizes below and above the halo, with class weights and filled nodata;
//! the methods that cannot run such kernels refuse them in one line naming
//! fft, and naive refuses a tile it would take long on. dct5 `--exact` on
//! the host (its fit on a longer period) gives the same bytes on the MODIS
//! crops and at σ = 200.
#![cfg(feature = "gdal")]

use crate::common;

use common::{mapfilter, mapfilter_ok};
use gdal::Dataset;
use mapfilter::engine::smooth_in_memory;
use mapfilter::error::Setting;
use mapfilter::io::MemRaster;
use mapfilter::kernel::{Kernel, KernelSpec};
use mapfilter::method::certified::Certified;
use mapfilter::method::dct5::CERTIFIED_TERMS;
use mapfilter::method::fft::FftHost;
use mapfilter::method::naive::NaiveHost;
use mapfilter::method::separable::{self, SeparableHost};
use mapfilter::method::{ClassSmoother, ClassTile, SmoothParams, policy::Ties};
use tiles::Border;

const NODATA: u16 = 255;

const MODIS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/modis_igbp_2019_2048.tif");

/// The `w`×`h` window of the MODIS map from `(x, y)`.
fn modis_crop(x: usize, y: usize, w: usize, h: usize) -> MemRaster {
    let ds = Dataset::open(MODIS).unwrap();
    let band = ds.rasterband(1).unwrap();
    let buf = band
        .read_as::<u8>((x as isize, y as isize), (w, h), (w, h), None)
        .unwrap();
    MemRaster::new(w, h, buf.data().iter().map(|&v| v as u16).collect())
}

fn kernel(spec: &str) -> Kernel {
    spec.parse::<KernelSpec>().unwrap().build().unwrap()
}

/// fft at each tile side of `tiles` gives the bytes of naive/host in one
/// tile; returns naive's output.
fn fft_equals_naive(
    raster: &MemRaster,
    k: &Kernel,
    (border, fill): (Border, bool),
    weights: &str,
    tiles: &[usize],
) -> MemRaster {
    exact_equals_naive(raster, k, (border, fill), weights, tiles, &FftHost::new(k))
}

/// `method` at each tile side of `tiles` gives the bytes of naive/host in
/// one tile; returns naive's output.
fn exact_equals_naive(
    raster: &MemRaster,
    k: &Kernel,
    (border, fill): (Border, bool),
    weights: &str,
    tiles: &[usize],
    method: &dyn ClassSmoother,
) -> MemRaster {
    let job = |tile| common::class_job(k, &raster.data, weights, (border, fill), tile, NODATA);
    let reference = smooth_in_memory(raster, &job(1 << 20), &NaiveHost).unwrap();
    for &t in tiles {
        let got = smooth_in_memory(raster, &job(t), method).unwrap();
        let differ = got
            .data
            .iter()
            .zip(&reference.data)
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(
            differ,
            0,
            "{} N = {} tile {t}: {differ} pixels differ",
            method.name(),
            k.size()
        );
    }
    reference
}

/// dct5 `--exact` on the host as the CLI builds it: the fit on a longer
/// period, certified.
fn dct5_exact(k: &Kernel) -> Certified<SeparableHost> {
    let plan = separable::dct5_plan_certified(k, CERTIFIED_TERMS).unwrap();
    Certified::new(SeparableHost::new("dct5", plan, k))
}

/// Codes in `data` other than nodata.
fn codes(data: &[u16]) -> usize {
    let mut seen: Vec<u16> = data.iter().copied().filter(|&v| v != NODATA).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

#[test]
fn modis_crops_at_sigma_100_and_150() {
    // Crops whose 64x48 outputs (windows wholly inside the map) hold 3 or
    // more classes at that σ, found on the whole map's fft output.
    for (sigma, (x, y), tiles) in [
        (100.0, (1168, 608), &[1 << 20, 24][..]),
        (150.0, (960, 448), &[1 << 20][..]),
    ] {
        let k = kernel(&format!("gaussian:{sigma}"));
        let n = k.size();
        let crop = modis_crop(x, y, n - 1 + 64, n - 1 + 48);
        assert!(codes(&crop.data) >= 6, "{} classes", codes(&crop.data));
        let out = fft_equals_naive(&crop, &k, (Border::Valid, false), "", tiles);
        assert_eq!((out.width, out.height), (64, 48));
        let dct5 = dct5_exact(&k);
        exact_equals_naive(&crop, &k, (Border::Valid, false), "", tiles, &dct5);
        assert!(
            codes(&out.data) >= 3,
            "σ = {sigma}: {} classes",
            codes(&out.data)
        );
    }
}

/// Classes 1 (left half) and 2 (right half), scattered pixels of class 3
/// (3 in `sparse`) and nodata (1 in `sparse`): even at σ = 200, wider than
/// the raster, each half keeps its class near its edge.
fn halves(w: usize, h: usize, seed: u64, sparse: u64) -> MemRaster {
    let mut next = common::xorshift(seed);
    let data = (0..w * h)
        .map(|i| match next() % sparse {
            0 => NODATA,
            1..=3 => 3,
            _ if i % w < w / 2 => 1,
            _ => 2,
        })
        .collect();
    MemRaster::new(w, h, data)
}

#[test]
fn sigma_200_with_nodata_weights_and_small_tiles() {
    let k = kernel("gaussian:200");
    assert_eq!(k.size(), 1201);
    let raster = halves(150, 130, 5, 40);
    let out = fft_equals_naive(&raster, &k, (Border::Same, true), "3:2", &[1 << 20, 64]);
    assert!(codes(&out.data) >= 2);
    let out = fft_equals_naive(&raster, &k, (Border::Same, false), "", &[1 << 20]);
    assert!(codes(&out.data) >= 2 && out.data.contains(&NODATA));
    let dct5 = dct5_exact(&k);
    exact_equals_naive(
        &raster,
        &k,
        (Border::Same, true),
        "3:2",
        &[1 << 20, 64],
        &dct5,
    );
}

#[test]
fn boxes_and_discs_over_1000() {
    for (spec, w) in [("box:1001", 1100), ("disc:600", 1300)] {
        let k = kernel(spec);
        assert!(k.size() > 1000);
        // Wider than the kernel, so that windows differ along the rows.
        let raster = halves(w, 24, 9, 2000);
        let out = fft_equals_naive(&raster, &k, (Border::Same, true), "", &[1 << 20, 200]);
        assert!(codes(&out.data) >= 2, "{spec}");
    }
}

/// Every tie rule: boxes tie often (their scores are pixel counts).
#[test]
fn box_ties_follow_every_rule() {
    let k = kernel("box:601");
    let (ow, oh) = (40, 30);
    let (w, h) = (ow + 600, oh + 600);
    let mut next = common::xorshift(3);
    // Stripes 2 pixels wide of classes 0 and 1: many exact ties.
    let cells: Vec<u16> = (0..w * h)
        .map(|i| {
            if next().is_multiple_of(50) {
                2
            } else {
                ((i % w) / 2 % 2) as u16
            }
        })
        .collect();
    let tile = ClassTile {
        width: w,
        height: h,
        halo: 300,
        n_classes: 2,
        classes: &cells,
    };
    let weights = [1u32, 1];
    for ties in [
        Ties::Centre,
        Ties::Smallest,
        Ties::Largest,
        Ties::Undecided(7),
    ] {
        let params = SmoothParams {
            kernel: &k,
            class_weights: &weights,
            fill_nodata: true,
            ties,
            confidence: None,
        };
        let run = |m: &dyn ClassSmoother| {
            let mut out = vec![0u16; ow * oh];
            m.smooth(&tile, &params, &mut out).unwrap();
            out
        };
        assert_eq!(run(&FftHost::new(&k)), run(&NaiveHost), "{ties:?}");
    }
}

#[test]
fn naive_refuses_a_tile_it_would_take_long_on() {
    let k = kernel("box:3001");
    let (ow, oh) = (200, 200);
    let (w, h) = (ow + 3000, oh + 3000);
    let mut next = common::xorshift(8);
    // Noise: every window row holds hundreds of runs.
    let cells: Vec<u16> = (0..w * h).map(|_| (next() % 3) as u16).collect();
    let tile = ClassTile {
        width: w,
        height: h,
        halo: 1500,
        n_classes: 3,
        classes: &cells,
    };
    let params = SmoothParams {
        kernel: &k,
        class_weights: &[1, 1, 1],
        fill_nodata: false,
        ties: Ties::Centre,
        confidence: None,
    };
    let e = NaiveHost
        .smooth(&tile, &params, &mut vec![0; ow * oh])
        .unwrap_err()
        .to_string();
    assert!(
        !e.contains('\n')
            && e.contains("CPU minutes")
            && e.contains(&Setting::Method.is("fft").to_string()),
        "{e}"
    );
}

#[test]
fn cli_takes_sigma_500_and_refuses_what_cannot_run_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/synthetic_simplex_512.tif"
    );
    let out = dir.path().join("o.tif");
    let out = out.to_str().unwrap();
    // fft at the largest σ: one tile, a 3512² plane.
    let run = mapfilter_ok(&[
        "smooth",
        input,
        out,
        "-k",
        "gaussian:500",
        "--method",
        "fft",
    ]);
    let text =
        String::from_utf8_lossy(&run.stderr).to_string() + &String::from_utf8_lossy(&run.stdout);
    assert!(
        text.contains("3001x3001") && text.contains("fft/host"),
        "{text}"
    );
    // Past σ = 500, and svd at any wide kernel: one line, a hint.
    for (args, needle) in [
        (&["-k", "gaussian:501"][..], "3007x3007"),
        (
            &["-k", "gaussian:100", "--method", "svd"][..],
            "--method fft",
        ),
        (
            &["-k", "gaussian:100", "--method", "svd", "--exact"][..],
            "--method fft",
        ),
    ] {
        let mut all = vec!["smooth", input, out, "--overwrite"];
        all.extend_from_slice(args);
        let r = mapfilter(&all);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(needle) && err.trim().lines().count() <= 2,
            "{args:?}: {err}"
        );
    }
}
