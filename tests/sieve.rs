//! `mapfilter sieve` and `smooth --mmu` against GDAL's own sieve
//! (`gdal_sieve.py`, Debian's python3-gdal): byte-identical on the bundled
//! maps and on generated ones (many patch sizes, ties, checkerboards,
//! nodata), for both connectivities and several thresholds; the same result
//! whatever the strip height; areas equal to their pixel counts; bad
//! thresholds refused in one line; and, in process, against GDAL's rule
//! transcribed pixel by pixel on random maps with random strip heights.
//! Without gdal_sieve.py the comparisons
//! are skipped with a message, unless `MAPFILTER_REQUIRE_GDAL_SIEVE` is set
//! (as `scripts/test.sh` and CI do), where they fail.
#![cfg(feature = "gdal")]

use crate::common;

use common::{Rng, TestRaster, files_in, mapfilter, mapfilter_ok, read_raster, write_raster};
use gdal::raster::GdalDataType;
use mapfilter::io::MemRaster;
use mapfilter::progress::Progress;
use mapfilter::sieve::{CACHE_BYTES, Connectivity, SieveOptions, sieve};
use std::path::{Path, PathBuf};
use std::process::Command;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data");

/// Whether gdal_sieve.py runs here; fails when it must and does not.
fn have_gdal_sieve() -> bool {
    let ok = Command::new("gdal_sieve.py")
        .arg("-h")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("gdal_sieve"));
    if !ok {
        assert!(
            std::env::var_os("MAPFILTER_REQUIRE_GDAL_SIEVE").is_none(),
            "MAPFILTER_REQUIRE_GDAL_SIEVE is set but gdal_sieve.py does not run (apt-get install python3-gdal)"
        );
        eprintln!("skipping: gdal_sieve.py not found (apt-get install python3-gdal)");
    }
    ok
}

fn gdal_sieve(input: &Path, output: &Path, threshold: u64, conn: u8) -> Vec<u16> {
    let run = Command::new("gdal_sieve.py")
        .args([
            "-q",
            "-st",
            &threshold.to_string(),
            &format!("-{conn}"),
            "-of",
            "GTiff",
        ])
        .arg(input)
        .arg(output)
        .output()
        .expect("run gdal_sieve.py");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    read_raster(output).2
}

fn ours(input: &Path, output: &Path, threshold: &str, conn: u8, extra: &[&str]) -> Vec<u16> {
    let _ = std::fs::remove_file(output);
    let mut args = vec![
        "sieve",
        input.to_str().unwrap(),
        output.to_str().unwrap(),
        "--threshold",
        threshold,
        "--connectivity",
    ];
    let conn = conn.to_string();
    args.push(&conn);
    args.push("-q");
    args.extend_from_slice(extra);
    mapfilter_ok(&args);
    read_raster(output).2
}

/// Compares every (threshold, connectivity) on `input`.
fn same_as_gdal(dir: &Path, input: &Path, thresholds: &[u64], extra: &[&str]) {
    for &t in thresholds {
        for conn in [4u8, 8] {
            let expected = gdal_sieve(input, &dir.join("gdal.tif"), t, conn);
            let got = ours(input, &dir.join("ours.tif"), &t.to_string(), conn, extra);
            let differ = expected.iter().zip(&got).filter(|(a, b)| a != b).count();
            assert!(
                differ == 0 && expected.len() == got.len(),
                "{}: -st {t} -{conn} {extra:?}: {differ} pixels differ",
                input.display()
            );
        }
    }
}

#[test]
fn identical_to_gdal_sieve_on_the_bundled_maps() {
    if !have_gdal_sieve() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, thresholds) in [
        ("modis_igbp_2019_2048.tif", &[3u64, 40][..]),
        ("ne_continents_1440x720.tif", &[2, 25][..]),
        ("synthetic_simplex_512.tif", &[10, 300][..]),
    ] {
        same_as_gdal(dir.path(), &Path::new(DATA).join(name), thresholds, &[]);
    }
    // Strips of 7 rows, read three times: patches span hundreds of strips;
    // strips of 64 rows, the first few kept from the first pass.
    let modis = Path::new(DATA).join("modis_igbp_2019_2048.tif");
    same_as_gdal(
        dir.path(),
        &modis,
        &[12],
        &["--strip-rows", "7", "--cache-mib", "0"],
    );
    same_as_gdal(
        dir.path(),
        &modis,
        &[12],
        &["--strip-rows", "64", "--cache-mib", "1"],
    );
}

/// Rectangles of many sizes over a few classes, salt noise, a checkerboard
/// (ties and cycles of one-pixel polygons), diagonal lines (8-connected
/// only), and with `nodata` blobs of that code.
fn patchy(w: usize, h: usize, seed: u64, classes: u16, nodata: Option<u16>) -> Vec<u16> {
    let mut rng = Rng(seed);
    let mut px = vec![0u16; w * h];
    for _ in 0..w * h / 40 {
        let (rw, rh) = (1 + rng.below(30) as usize, 1 + rng.below(20) as usize);
        let (x0, y0) = (rng.below(w as u64) as usize, rng.below(h as u64) as usize);
        let c = rng.below(u64::from(classes)) as u16;
        for y in y0..(y0 + rh).min(h) {
            for x in x0..(x0 + rw).min(w) {
                px[y * w + x] = c;
            }
        }
    }
    for _ in 0..w * h / 25 {
        let i = rng.below((w * h) as u64) as usize;
        px[i] = rng.below(u64::from(classes)) as u16;
    }
    for y in 0..h / 6 {
        for x in 0..w / 6 {
            px[y * w + x] = ((x + y) % 2) as u16 + 1;
        }
    }
    for d in 0..h.min(w) / 2 {
        px[(h / 2 + d / 2) * w + w / 2 + d / 2 + (d % 2)] = classes;
    }
    if let Some(nd) = nodata {
        for _ in 0..12 {
            let (cx, cy, r) = (
                rng.below(w as u64) as i64,
                rng.below(h as u64) as i64,
                1 + rng.below(12) as i64,
            );
            for y in (cy - r).max(0)..(cy + r).min(h as i64) {
                for x in (cx - r).max(0)..(cx + r).min(w as i64) {
                    if (x - cx).pow(2) + (y - cy).pow(2) <= r * r {
                        px[y as usize * w + x as usize] = nd;
                    }
                }
            }
        }
        for _ in 0..200 {
            px[rng.below((w * h) as u64) as usize] = nd;
        }
    }
    px
}

fn write(
    dir: &Path,
    name: &str,
    w: usize,
    h: usize,
    data: &[u16],
    ty: GdalDataType,
    nodata: Option<u16>,
) -> PathBuf {
    let path = dir.join(name);
    write_raster(
        &path,
        &TestRaster {
            width: w,
            height: h,
            data,
            data_type: ty,
            nodata: nodata.map(f64::from),
            colors: false,
        },
    );
    path
}

#[test]
fn identical_to_gdal_sieve_on_generated_maps() {
    if !have_gdal_sieve() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (257, 190);
    let cases = [
        ("plain.tif", 1u64, 4u16, None, GdalDataType::UInt8),
        ("nodata.tif", 2, 5, Some(255u16), GdalDataType::UInt8),
        ("nodata0.tif", 3, 3, Some(0), GdalDataType::UInt8),
        ("uint16.tif", 4, 6, Some(60_000), GdalDataType::UInt16),
    ];
    for (name, seed, classes, nodata, ty) in cases {
        let data = patchy(w, h, seed, classes, nodata);
        let input = write(dir.path(), name, w, h, &data, ty, nodata);
        same_as_gdal(dir.path(), &input, &[2, 5, 40], &[]);
        same_as_gdal(
            dir.path(),
            &input,
            &[9],
            &["--strip-rows", "1", "--cache-mib", "0"],
        );
    }
}

/// A serpent one pixel wide crossing every row, in a field of noise.
fn serpent(w: usize, h: usize) -> Vec<u16> {
    let mut rng = Rng(7);
    let mut px: Vec<u16> = (0..w * h).map(|_| 1 + rng.below(3) as u16).collect();
    for y in 0..h {
        let x = if (y / 2) % 2 == 0 { 1 } else { w - 2 };
        px[y * w + x] = 9;
        if y % 2 == 1 {
            for xx in 1..w - 1 {
                px[y * w + xx] = 9;
            }
        }
    }
    px
}

fn sieve_mem(
    src: &MemRaster,
    threshold: u64,
    conn: Connectivity,
    (strip_rows, cache_bytes): (Option<usize>, usize),
) -> Vec<u16> {
    let mut out = MemRaster::filled(src.width, src.height, 0);
    let options = SieveOptions {
        strip_rows,
        cache_bytes,
        ..SieveOptions::new(threshold, conn, Some(3))
    };
    sieve(&mut src.clone(), &mut out, &options, &Progress::hidden()).unwrap();
    out.data
}

#[test]
fn a_patch_across_every_strip_is_one_patch() {
    let (w, h) = (23, 64);
    let src = MemRaster::new(w, h, serpent(w, h));
    for conn in [Connectivity::Four, Connectivity::Eight] {
        let whole = sieve_mem(&src, 6, conn, (None, CACHE_BYTES));
        // The serpent (over 600 pixels) stays; noise patches went.
        assert!(src.data.iter().zip(&whole).all(|(&a, &b)| a != 9 || b == 9));
        assert_ne!(whole, src.data);
        // Strips kept from the first pass, none kept, some kept.
        for strip in [1, 2, 3, 5, 63] {
            for cache in [CACHE_BYTES, 0, 2000] {
                assert_eq!(
                    sieve_mem(&src, 6, conn, (Some(strip), cache)),
                    whole,
                    "{conn:?} strip {strip} cache {cache}"
                );
            }
        }
    }
}

#[test]
fn areas_are_their_pixel_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (120, 90);
    let input = write(
        dir.path(),
        "utm.tif",
        w,
        h,
        &patchy(w, h, 5, 4, None),
        GdalDataType::UInt8,
        None,
    );
    // 30 m pixels: 900 m² each.
    for (area, pixels) in [
        ("2.7ha", "30"),
        ("0.5km2", "556"),
        ("1acre", "5"),
        ("8100m2", "9"),
    ] {
        let a = ours(&input, &dir.path().join("a.tif"), area, 4, &[]);
        let p = ours(&input, &dir.path().join("p.tif"), pixels, 4, &[]);
        assert_eq!(a, p, "{area} vs {pixels}");
    }
    // Geographic: 0.25° pixels of ne_continents, measured at the centre
    // latitude (0°): a² (1 − e²) Δλ Δφ on WGS 84.
    // At the equator M = b² / a and N = a, so a pixel is b² Δλ Δφ.
    let b = 6_356_752.314_245_179f64;
    let step = 0.25f64.to_radians();
    let pixel = b * b * step * step;
    let area = format!("{}m2", 9.5 * pixel);
    let continents = Path::new(DATA).join("ne_continents_1440x720.tif");
    let out = dir.path().join("g.tif");
    let run = mapfilter_ok(&[
        "sieve",
        continents.to_str().unwrap(),
        out.to_str().unwrap(),
        "-s",
        &area,
    ]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(text.contains("threshold 10 px"), "{text}");
}

#[test]
fn bad_thresholds_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "in.tif",
        8,
        8,
        &[1; 64],
        GdalDataType::UInt8,
        None,
    );
    let out = dir.path().join("out.tif");
    for bad in ["0", "-3", "abc", "2.5", "5 parsecs", "0ha", "ha"] {
        let arg = format!("--threshold={bad}");
        let run = mapfilter(&[
            "sieve",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            &arg,
        ]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{bad}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{bad}: {err}");
        assert!(
            err.contains("threshold") && err.contains("hint"),
            "{bad}: {err}"
        );
    }
    let run = mapfilter(&[
        "sieve",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "-s",
        "4",
        "-c",
        "6",
    ]);
    assert!(!run.status.success());
    // An area needs a pixel size: a raster without georeferencing has none.
    let bare = dir.path().join("bare.tif");
    let status = Command::new("gdal_translate")
        .args(["-q", "-co", "PROFILE=BASELINE"])
        .arg(&input)
        .arg(&bare)
        .status();
    if status.is_ok_and(|s| s.success()) {
        let _ = std::fs::remove_file(dir.path().join("bare.tif.aux.xml"));
        let run = mapfilter(&[
            "sieve",
            bare.to_str().unwrap(),
            out.to_str().unwrap(),
            "-s",
            "1ha",
        ]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{err}");
        assert!(err.contains("pixel size") && err.contains("hint"), "{err}");
    }
    assert!(!out.exists());
    assert_eq!(files_in(dir.path()), ["bare.tif", "in.tif"]);
}

#[test]
fn smooth_mmu_is_smooth_then_sieve() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (150, 110);
    write(
        dir.path(),
        "in.tif",
        w,
        h,
        &patchy(w, h, 11, 5, Some(255)),
        GdalDataType::UInt8,
        Some(255),
    );
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    for conn in ["4", "8"] {
        mapfilter_ok(&[
            "smooth",
            &p("in.tif"),
            &p("smoothed.tif"),
            "-k",
            "box:3",
            "-q",
            "--device",
            "host",
        ]);
        mapfilter_ok(&[
            "sieve",
            &p("smoothed.tif"),
            &p("sieved.tif"),
            "-s",
            "2.7ha",
            "-c",
            conn,
            "-q",
        ]);
        mapfilter_ok(&[
            "smooth",
            &p("in.tif"),
            &p("mmu.tif"),
            "-k",
            "box:3",
            "-q",
            "--device",
            "host",
            "--mmu",
            "30",
            "--mmu-connectivity",
            conn,
        ]);
        assert_eq!(
            read_raster(Path::new(&p("mmu.tif"))),
            read_raster(Path::new(&p("sieved.tif")))
        );
        assert_ne!(
            read_raster(Path::new(&p("mmu.tif"))),
            read_raster(Path::new(&p("smoothed.tif")))
        );
        if have_gdal_sieve() {
            let g = gdal_sieve(
                Path::new(&p("smoothed.tif")),
                &dir.path().join("gdal.tif"),
                30,
                conn.parse().unwrap(),
            );
            assert_eq!(read_raster(Path::new(&p("mmu.tif"))).2, g);
            std::fs::remove_file(dir.path().join("gdal.tif")).unwrap();
        }
        for f in ["smoothed.tif", "sieved.tif", "mmu.tif"] {
            std::fs::remove_file(p(f)).unwrap();
        }
        // Nothing of the intermediate raster is left behind.
        assert_eq!(files_in(dir.path()), ["in.tif"]);
    }
    // A bad unit fails before smoothing, leaving nothing.
    let run = mapfilter(&[
        "smooth",
        &p("in.tif"),
        &p("mmu.tif"),
        "-k",
        "box:3",
        "--mmu",
        "3 furlongs",
    ]);
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("--mmu"));
    assert_eq!(files_in(dir.path()), ["in.tif"]);
}

/// GDAL's sieve transcribed step by step from its description in
/// docs/sieve.md, on a whole raster in memory: polygon ids in order of
/// first pixel, largest neighbours updated pixel pair by pixel pair in
/// GDAL's scan order, then GDAL's walk over the polygons in id order with
/// its visited set. Independent of the library's strips, runs and order.
fn gdal_rule(
    w: usize,
    h: usize,
    px: &[u16],
    nodata: Option<u16>,
    threshold: u64,
    eight: bool,
) -> Vec<u16> {
    let masked = |i: usize| Some(px[i]) == nodata;
    let mut id = vec![usize::MAX; w * h];
    let mut size = Vec::new();
    for start in 0..w * h {
        if masked(start) || id[start] != usize::MAX {
            continue;
        }
        let poly = size.len();
        size.push(0u64);
        id[start] = poly;
        let mut stack = vec![start];
        while let Some(i) = stack.pop() {
            size[poly] += 1;
            let (x, y) = ((i % w) as i64, (i / w) as i64);
            for (dx, dy) in [
                (1, 0),
                (-1, 0),
                (0, 1),
                (0, -1),
                (1, 1),
                (1, -1),
                (-1, 1),
                (-1, -1),
            ] {
                if !eight && dx != 0 && dy != 0 {
                    continue;
                }
                let (nx, ny) = (x + dx, y + dy);
                if nx < 0 || ny < 0 || nx >= w as i64 || ny >= h as i64 {
                    continue;
                }
                let j = ny as usize * w + nx as usize;
                if !masked(j) && id[j] == usize::MAX && px[j] == px[i] {
                    id[j] = poly;
                    stack.push(j);
                }
            }
        }
    }
    let n = size.len();
    let mut big = vec![usize::MAX; n];
    let mut compare = |a: usize, b: usize| {
        let (p, q) = (id[a], id[b]);
        if p == usize::MAX || q == usize::MAX || p == q {
            return;
        }
        if big[p] == usize::MAX || size[big[p]] < size[q] {
            big[p] = q;
        }
        if big[q] == usize::MAX || size[big[q]] < size[p] {
            big[q] = p;
        }
    };
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if y > 0 {
                compare(i, i - w);
                if eight && x > 0 {
                    compare(i, i - w - 1);
                }
                if eight && x + 1 < w {
                    compare(i, i - w + 1);
                }
            }
            if x > 0 {
                compare(i, i - 1);
            }
        }
    }
    for p in 0..n {
        if size[p] >= threshold {
            big[p] = usize::MAX;
            continue;
        }
        if big[p] == usize::MAX {
            continue;
        }
        let mut visited = std::collections::HashSet::from([p]);
        let mut fin = p;
        let found = loop {
            fin = big[fin];
            if fin == usize::MAX {
                break false;
            }
            if size[fin] >= threshold {
                break true;
            }
            if !visited.insert(fin) {
                break false;
            }
        };
        if !found {
            big[p] = usize::MAX;
            continue;
        }
        let mut cur = p;
        while big[cur] != fin {
            let next = big[cur];
            big[cur] = fin;
            cur = next;
        }
    }
    let code: Vec<u16> = (0..n)
        .map(|p| px[id.iter().position(|&q| q == p).unwrap()])
        .collect();
    (0..w * h)
        .map(|i| match id[i] {
            usize::MAX => px[i],
            p if big[p] != usize::MAX => code[big[p]],
            _ => px[i],
        })
        .collect()
}

#[test]
fn matches_gdals_rule_on_random_maps_whatever_the_strips() {
    let mut rng = Rng(0x5eed);
    for case in 0..300 {
        let (w, h) = (1 + rng.below(24) as usize, 1 + rng.below(20) as usize);
        let classes = 2 + rng.below(3) as u16;
        // Noise, or blocks of noise for polygons of many sizes.
        let block = 1 + rng.below(4) as usize;
        let cells: Vec<u16> = (0..w * h)
            .map(|_| rng.below(u64::from(classes) + 1) as u16)
            .collect();
        let px: Vec<u16> = (0..w * h)
            .map(|i| cells[(i / w / block) * w + (i % w) / block])
            .collect();
        let nodata = (rng.below(2) == 0).then_some(classes);
        let threshold = 2 + rng.below(12);
        let eight = rng.below(2) == 0;
        let expected = gdal_rule(w, h, &px, nodata, threshold, eight);
        let conn = if eight {
            Connectivity::Eight
        } else {
            Connectivity::Four
        };
        let strip = 1 + rng.below(h as u64) as usize;
        let cache = [0, 300, CACHE_BYTES][rng.below(3) as usize];
        let mut out = MemRaster::filled(w, h, 0);
        let options = SieveOptions {
            strip_rows: Some(strip),
            cache_bytes: cache,
            ..SieveOptions::new(threshold, conn, nodata)
        };
        sieve(
            &mut MemRaster::new(w, h, px.clone()),
            &mut out,
            &options,
            &Progress::hidden(),
        )
        .unwrap();
        assert_eq!(
            out.data, expected,
            "case {case}: {w}x{h}, threshold {threshold}, eight {eight}, nodata {nodata:?}, strip {strip}, cache {cache}, input {px:?}"
        );
    }
}

/// A checkerboard is one polygon per pixel: a few dozen bytes each. Under
/// an address-space limit (`ulimit -v`) too small for its polygon table,
/// sieve stops with one line (exit 1), not an allocation abort (SIGABRT),
/// and leaves no temp file.
#[test]
fn a_sieve_beyond_the_memory_available_fails_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (4000, 4000);
    let data: Vec<u16> = (0..w * h).map(|i| ((i % w + i / w) % 2) as u16).collect();
    let input = write(
        dir.path(),
        "checker.tif",
        w,
        h,
        &data,
        GdalDataType::UInt8,
        None,
    );
    let out = dir.path().join("out.tif");
    let limited = format!(
        "ulimit -v {LIMIT_KIB} && exec {} sieve {} {} -s 4 -q",
        env!("CARGO_BIN_EXE_mapfilter"),
        input.display(),
        out.display()
    );
    let o = Command::new("bash")
        .args(["-c", &limited])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{:?}: {err}", o.status);
    assert!(err.contains("sieve needs at least"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(files_in(dir.path()), ["checker.tif"]);
}

/// The address space `ulimit -v` leaves the sieve above in KiB: the
/// binary, GDAL and the threads take a few hundred MiB of it, the 16 M
/// polygons would take about 900 MiB more.
const LIMIT_KIB: u64 = 900 << 10;

/// A thin raster (one pixel wide, or one row) costs what a square one of
/// as many pixels costs, and gives GDAL's result: its output is written in
/// strips, not in millions of 16² tiles (a 1×10⁸ raster did not finish in
/// 250 s; 2·10⁶ pixels took 19 times the square's time).
#[test]
fn thin_rasters_sieve_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let n = 2_000_000;
    let mut rng = Rng(11);
    let data: Vec<u16> = (0..n).map(|_| rng.below(3) as u16).collect();
    let time = |w: usize, h: usize, name: &str| {
        let input = write(dir.path(), name, w, h, &data, GdalDataType::UInt8, None);
        let start = std::time::Instant::now();
        ours(&input, &dir.path().join("ours.tif"), "4", 4, &[]);
        (start.elapsed(), input)
    };
    let (square, _) = time(1000, 2000, "square.tif");
    for (w, h) in [(1, n), (n, 1)] {
        let (took, input) = time(w, h, "thin.tif");
        assert!(
            took < square * 4 + std::time::Duration::from_secs(1),
            "{w}x{h}: {took:?}, a square of as many pixels {square:?}"
        );
        if have_gdal_sieve() {
            same_as_gdal(dir.path(), &input, &[4], &[]);
        }
    }
}
