//! Image filters on continuous rasters (any band count; Byte, UInt16, Int16,
//! Float32): what each op computes, apart from how it is run.
//!
//! One module per op family ([`conv`], [`median`], [`bilateral`], [`scharr`],
//! [`blend`] (two rasters into one),
//! [`oil`], [`histogram`], [`pyramid`], [`laplacian`], [`denoise`],
//! [`color`], [`demosaic`]); each has a
//! plain per-pixel host reference (rayon over rows) and, where it pays, a
//! faster host path tested against it. An [`op::Chain`] strings ops together and
//! maps a tile's output window back to the input it needs (its ops' radii,
//! and the resolution changes of pyramid steps); [`engine`] runs a chain
//! over a raster tile by tile, and [`border`] says what ops see beyond the
//! raster's edge; [`levels`] expands pyramid and scale-space ops into one
//! chain per level.
//!
//! Nodata: where the input has a nodata value, a nodata centre gives nodata;
//! nodata neighbours (and, with `--border nodata`, pixels outside the raster)
//! are replaced by the centre pixel's value, so every op (sums, sorting
//! networks, derivatives) keeps one branch-free form. Band-wise ops judge
//! nodata per band; ops that mix bands (colour bilateral, oil paint) treat a
//! pixel as missing when any of its bands is nodata.

pub mod bilateral;
pub mod blend;
pub mod blend_cl;
pub mod border;
pub mod color;
pub mod conv;
pub mod demosaic;
pub mod denoise;
pub mod device;
pub mod engine;
pub mod histogram;
pub mod laplacian;
pub mod levels;
pub mod median;
pub mod oil;
pub mod op;
pub mod pyramid;
pub mod run_on;
pub mod scharr;
pub mod strip;

pub use border::{BorderMode, Win};
pub use op::{Chain, Op};

use crate::pixel::{Pixel, Plane};
use rayon::prelude::*;

/// Luma weights of the first three bands (0.3R + 0.59G + 0.11B), in hundredths.
pub const LUMA_PERCENT: [i64; 3] = [30, 59, 11];

/// Runs a per-pixel op over `input` (bands padded by `r` on every side).
///
/// For each output pixel, `f` gets the `n×n` windows of all bands as `f32`
/// (band-major, row-major inside a band, nodata neighbours already replaced
/// by the centre value) and writes `out_bands` values. Where the centre is
/// nodata the output is `out_nodata` (per band, or for all bands when
/// `joint`). Rows run in parallel.
pub(crate) fn per_pixel<T: Pixel, O: Pixel>(
    input: &[Plane<T>],
    r: usize,
    out_bands: usize,
    nd: Option<T>,
    out_nodata: Option<O>,
    joint: bool,
    f: impl Fn(&[f32], &mut [f32]) + Sync,
) -> Vec<Plane<O>> {
    let n = 2 * r + 1;
    let nn = n * n;
    let bands = input.len();
    let (pw, ph) = (input[0].width, input[0].height);
    let (w, h) = (pw - 2 * r, ph - 2 * r);
    let per_in = out_bands / bands.max(1);
    let rows: Vec<Vec<O>> = (0..h)
        .into_par_iter()
        .map(|y| {
            let mut win = vec![0f32; bands * nn];
            let mut missing = vec![false; bands * nn];
            let mut out = vec![0f32; out_bands];
            let mut row = vec![O::default(); out_bands * w];
            for x in 0..w {
                for (b, plane) in input.iter().enumerate() {
                    for ky in 0..n {
                        let src = &plane.row(y + ky)[x..x + n];
                        for (kx, &v) in src.iter().enumerate() {
                            let i = b * nn + ky * n + kx;
                            win[i] = v.to_f32();
                            missing[i] = nd.is_some_and(|nd| v.same(nd));
                        }
                    }
                }
                if joint {
                    for k in 0..nn {
                        let any = (0..bands).any(|b| missing[b * nn + k]);
                        (0..bands).for_each(|b| missing[b * nn + k] = any);
                    }
                }
                let centre = r * n + r;
                for b in 0..bands {
                    let c = win[b * nn + centre];
                    for k in 0..nn {
                        if missing[b * nn + k] {
                            win[b * nn + k] = c;
                        }
                    }
                }
                f(&win, &mut out);
                for (j, &v) in out.iter().enumerate() {
                    let b = j / per_in.max(1);
                    row[j * w + x] = match out_nodata {
                        Some(ond) if missing[b * nn + centre] => ond,
                        _ => O::from_f32(v),
                    };
                }
            }
            row
        })
        .collect();
    (0..out_bands)
        .map(|j| {
            let mut data = Vec::with_capacity(w * h);
            rows.iter()
                .for_each(|row| data.extend_from_slice(&row[j * w..(j + 1) * w]));
            Plane::new(w, h, data)
        })
        .collect()
}

/// [`per_pixel`] for ops that map each band's window (`(2r+1)²` values,
/// row-major) to one value of the same band: `f(window)`.
pub(crate) fn per_band<T: Pixel>(
    input: &[Plane<T>],
    r: usize,
    nd: Option<T>,
    f: impl Fn(&[f32]) -> f32 + Sync,
) -> Vec<Plane<T>> {
    let nn = (2 * r + 1) * (2 * r + 1);
    per_pixel(input, r, input.len(), nd, nd, false, |win, out| {
        for (o, w) in out.iter_mut().zip(win.chunks_exact(nn)) {
            *o = f(w);
        }
    })
}

/// Runs `f` on every output row in parallel: `f(y, out_row)`.
pub(crate) fn par_rows<O: Send + Copy + Default>(
    w: usize,
    h: usize,
    f: impl Fn(usize, &mut [O]) + Sync,
) -> Plane<O> {
    par_row_chunks(w, h, 1, f)
}

/// `bands` planes of `w`×`h` made row by row in parallel: `f(y, rows)` gets
/// output row `y` of every band side by side (band-major, `bands·w` values).
pub(crate) fn par_band_rows<O: Send + Sync + Copy + Default>(
    w: usize,
    h: usize,
    bands: usize,
    f: impl Fn(usize, &mut [O]) + Sync,
) -> Vec<Plane<O>> {
    let all = par_rows(w * bands, h, f);
    (0..bands)
        .map(|b| {
            let mut data = Vec::with_capacity(w * h);
            all.data
                .chunks_exact((w * bands).max(1))
                .for_each(|row| data.extend_from_slice(&row[b * w..(b + 1) * w]));
            Plane::new(w, h, data)
        })
        .collect()
}

/// A `w`×`h` plane made by `f(y0, rows)` on chunks of `rows` rows in parallel.
fn par_row_chunks<O: Send + Copy + Default>(
    w: usize,
    h: usize,
    rows: usize,
    f: impl Fn(usize, &mut [O]) + Sync,
) -> Plane<O> {
    let mut data = vec![O::default(); w * h];
    if w > 0 {
        data.par_chunks_mut(w * rows)
            .enumerate()
            .for_each(|(i, chunk)| f(i * rows, chunk));
    }
    Plane {
        width: w,
        height: h,
        data,
    }
}
