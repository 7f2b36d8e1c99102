//! How a tile's kernel windows break into runs ([`WindowRuns`]), as `auto`'s
//! cost model reads them for the host's naive method: estimated from a
//! lattice of sampled windows, not counted over the tile.
//!
//! The model needs two means, the share of windows holding more than one
//! value and the runs per window row; a few hundred windows tell both.
//! Counted exactly over a quarter of a 512² tile's rows with their halo,
//! they took 0.3–0.7 ms on 16 threads (two parallel passes and their
//! tables), where the methods `auto` chooses between run for 3–10 ms at
//! σ = 1–5 and on 2-class maps at σ = 35–85: auto missed the fastest
//! method's time by over 15 % in running it (BENCHMARKS.md, "auto
//! --exact"). A sampled window costs its sampled rows' pixels, plus its
//! whole window where every sampled row is of one value, to tell a
//! uniform window from one with a feature between the sampled rows.

use crate::method::ClassTile;
use crate::method::cost::WindowRuns;
use rayon::prelude::*;

/// Windows sampled per tile, on a square lattice (fewer on small tiles):
/// as many as [`PIXELS`] allows, within these.
const MIN_SAMPLES: usize = 64;
const MAX_SAMPLES: usize = 256;

/// Pixels whose runs the sample counts per tile: 256 windows to N = 64,
/// 64 from N = 256 (their means then rest on a thousand rows or more).
const PIXELS: usize = 1 << 18;

/// Rows of a window whose runs are counted, evenly spread (all of them in
/// windows of fewer rows).
const ROWS: usize = 16;

/// Samples per task: a sample costs `ROWS` × N pixels, a few microseconds.
const SAMPLES_PER_TASK: usize = 32;

/// The tile's [`WindowRuns`] for N×N windows (`n` = N), estimated from a
/// lattice of up to [`MAX_SAMPLES`] of its output pixels' windows.
pub fn sample_window_runs(tile: &ClassTile, n: usize) -> WindowRuns {
    let (ow, oh) = (tile.output_width(), tile.output_height());
    if ow == 0 || oh == 0 {
        return WindowRuns {
            mixed: 0.0,
            row_runs: 1.0,
        };
    }
    let rows = ROWS.min(n);
    let samples = (PIXELS / (rows * n)).clamp(MIN_SAMPLES, MAX_SAMPLES);
    let side = (samples as f64).sqrt() as usize;
    let (sx, sy) = (side.min(ow), side.min(oh));
    let (mixed, runs) = (0..sx * sy)
        .into_par_iter()
        .with_min_len(SAMPLES_PER_TASK)
        .map(|i| {
            let x = (2 * (i % sx) + 1) * ow / (2 * sx);
            let y = (2 * (i / sx) + 1) * oh / (2 * sy);
            let row = |dy: usize| &tile.classes[(y + dy) * tile.width + x..][..n];
            let value = row(0)[0];
            let (mut runs, mut one_value) = (0usize, true);
            for k in 0..rows {
                let line = row((2 * k + 1) * n / (2 * rows));
                let changes = line[1..].iter().zip(line).filter(|(a, b)| a != b).count();
                runs += 1 + changes;
                one_value &= changes == 0 && line[0] == value;
            }
            // Row by row, each row whole: without a branch per pixel the
            // test runs at SIMD width (a 361² window in microseconds).
            let of_value = |line: &[u16]| line.iter().fold(0, |any, &c| any | (c ^ value)) == 0;
            let mixed = !(one_value && (0..n).all(|dy| of_value(row(dy))));
            (usize::from(mixed), runs)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let windows = (sx * sy) as f64;
    WindowRuns {
        mixed: mixed as f64 / windows,
        row_runs: runs as f64 / (windows * rows as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::naive::window_runs;

    fn tile_of(classes: &[u16], side: usize, halo: usize) -> ClassTile<'_> {
        ClassTile {
            width: side,
            height: side,
            halo,
            n_classes: 4,
            classes,
        }
    }

    /// One value: no window mixed, one run a row. Stripes one pixel wide
    /// across the columns: every window mixed, N runs a row, as counted.
    /// Blobs with a thin line through them that no sampled row crosses at
    /// some lattice windows: those windows are still mixed. On blobs the
    /// sample comes within a few percent of naive's own count.
    #[test]
    fn the_sample_matches_the_count() {
        let (side, n) = (200, 31);
        let halo = n / 2;
        let one = vec![2u16; side * side];
        assert_eq!(
            sample_window_runs(&tile_of(&one, side, halo), n),
            WindowRuns {
                mixed: 0.0,
                row_runs: 1.0
            }
        );
        let stripes: Vec<u16> = (0..side * side).map(|i| (i % side % 2) as u16).collect();
        let tile = tile_of(&stripes, side, halo);
        assert_eq!(sample_window_runs(&tile, n), window_runs(&tile, n));
        // A horizontal line on every row 5 mod 31: between the sampled
        // rows of windows starting on rows 4 mod 31 and 0 and more.
        let lines: Vec<u16> = (0..side * side).map(|i| u16::from(i / side % n == 5)).collect();
        let tile = tile_of(&lines, side, halo);
        assert_eq!(sample_window_runs(&tile, n).mixed, 1.0);
        let blobs: Vec<u16> = (0..side * side)
            .map(|i| {
                let (x, y) = ((i % side) as f64, (i / side) as f64);
                ((x / 70.0).sin() + (y / 50.0).cos() + (x * y / 20000.0).sin() + 3.0) as u16
            })
            .collect();
        let tile = tile_of(&blobs, side, halo);
        let (sampled, counted) = (sample_window_runs(&tile, n), window_runs(&tile, n));
        assert!(counted.mixed > 0.3 && counted.mixed < 0.95, "{counted:?}");
        assert!((sampled.mixed - counted.mixed).abs() < 0.08, "{sampled:?} {counted:?}");
        assert!((sampled.row_runs / counted.row_runs - 1.0).abs() < 0.1, "{sampled:?} {counted:?}");
    }
}
