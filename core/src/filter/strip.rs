//! The strip runner of the host fast paths: an op's row kernel run over
//! strips of output rows in parallel (bands and strips together), each strip
//! reading its input rows with the border applied on the fly into a small
//! per-thread buffer that stays in cache, and writing straight into the
//! output planes. No padded copy of the tile is made (as OpenCV's
//! `FilterEngine` reads border rows into a ring buffer).
//!
//! Kernels are run through [`dispatch`], which compiles them a second time
//! with AVX2 enabled and takes that copy where the CPU has it (wider
//! vectors for the same code; integer results and the order of every
//! floating-point operation are the same, and no FMA is enabled, so both
//! copies give the same bits). `MAPFILTER_SIMD=baseline` forces the plain copy.

use super::border::{BorderMode, RowPad, Win};
use crate::cpu::avx2;
use crate::pixel::{Pixel, Plane};
use rayon::prelude::*;

/// Rows of samples `stride` apart: a strip's input rows, padded by the
/// kernel's radius on the left and right.
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a, T> {
    data: &'a [T],
    stride: usize,
}

impl<'a, T> Rows<'a, T> {
    pub fn new(data: &'a [T], stride: usize) -> Self {
        Rows { data, stride }
    }

    /// Row `i` (`stride` samples).
    #[inline(always)]
    pub fn row(&self, i: usize) -> &'a [T] {
        &self.data[i * self.stride..(i + 1) * self.stride]
    }
}

/// An op's fast path as a kernel over strips of rows.
pub trait RowKernel<T: Pixel>: Sync {
    type Out: Pixel;
    /// Per-thread working memory, reused from strip to strip.
    type Scratch: Default + Send;
    /// Output planes per input band.
    const OUTS: usize = 1;

    fn radius(&self) -> usize;

    /// Writes the strip's output rows: `out[j]` holds `rows × w` samples of
    /// output plane `j`; `src` holds the `rows + 2r` input rows around them,
    /// each `w + 2r` wide. Implementations are `#[inline(always)]` so that
    /// [`dispatch`] compiles them for AVX2.
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [Self::Out]], s: &mut Self::Scratch);
}

/// Where a kernel's input comes from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a, T> {
    /// Bands already padded by the kernel's radius (read in place).
    Padded(&'a [Plane<T>]),
    /// Bands holding window `have` of a raster of `image` size; the output
    /// covers `target`, and rows are padded per strip by `mode` (`fill` for
    /// constant and nodata).
    Border {
        planes: &'a [Plane<T>],
        have: Win,
        image: (usize, usize),
        target: Win,
        mode: BorderMode,
        fill: T,
    },
}

/// Bytes of padded input rows a strip aims at (well inside L2).
const STRIP_BYTES: usize = 96 << 10;

/// Runs `k` on every band of `src`: `K::OUTS` output planes per band, in band order.
pub fn run<T: Pixel, K: RowKernel<T>>(k: &K, src: Source<'_, T>) -> Vec<Plane<K::Out>> {
    let r = k.radius();
    let (planes, w, h, pad) = match src {
        Source::Padded(p) => {
            let (pw, ph) = p.first().map_or((2 * r, 2 * r), |q| (q.width, q.height));
            (p, pw - 2 * r, ph - 2 * r, None)
        }
        Source::Border {
            planes,
            have,
            image,
            target,
            mode,
            fill,
        } => {
            let want = target.grow(r);
            let pad = RowPad::new(have, image, want, mode, fill);
            (planes, target.width, target.height, Some(pad))
        }
    };
    let mut outs: Vec<Plane<K::Out>> = (0..planes.len() * K::OUTS)
        .map(|_| Plane::zeros(w, h))
        .collect();
    if w == 0 || h == 0 {
        return outs;
    }
    let ww = w + 2 * r;
    let tasks_wanted = 4 * rayon::current_num_threads();
    let per_band = tasks_wanted.div_ceil(planes.len().max(1));
    let strip = (STRIP_BYTES / (ww * size_of::<T>()))
        .clamp(8, 64)
        .min(h.div_ceil(per_band))
        .max(1);
    // Tasks: (band, first row, the strip's rows of each output plane).
    let mut tasks = Vec::new();
    for (b, group) in outs.chunks_mut(K::OUTS).enumerate() {
        let mut chunks: Vec<_> = group
            .iter_mut()
            .map(|p| p.data.chunks_mut(strip * w))
            .collect();
        for i in 0..h.div_ceil(strip) {
            let rows: Vec<&mut [K::Out]> = chunks.iter_mut().filter_map(|c| c.next()).collect();
            tasks.push((b, i * strip, rows));
        }
    }
    tasks.into_par_iter().for_each_init(
        || (Vec::new(), K::Scratch::default()),
        |(buf, scratch), (b, y0, mut out)| {
            let rows = out[0].len() / w + 2 * r;
            let plane = &planes[b];
            let src = match &pad {
                None => Rows::new(&plane.data[y0 * ww..(y0 + rows) * ww], ww),
                Some(pad) => {
                    buf.resize(rows * ww, T::default());
                    for (i, row) in buf.chunks_exact_mut(ww).enumerate() {
                        pad.row_into(plane, y0 + i, row);
                    }
                    Rows::new(&buf[..], ww)
                }
            };
            dispatch(k, src, w, &mut out, scratch);
        },
    );
    outs
}

/// Runs `k.rows`, compiled for AVX2 where the CPU has it.
#[inline]
fn dispatch<T: Pixel, K: RowKernel<T>>(
    k: &K,
    src: Rows<'_, T>,
    w: usize,
    out: &mut [&mut [K::Out]],
    s: &mut K::Scratch,
) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        #[target_feature(enable = "avx2")]
        fn wide<T: Pixel, K: RowKernel<T>>(
            k: &K,
            src: Rows<'_, T>,
            w: usize,
            out: &mut [&mut [K::Out]],
            s: &mut K::Scratch,
        ) {
            k.rows(src, w, out, s)
        }
        // SAFETY: the CPU has AVX2 (checked by `avx2`).
        return unsafe { wide(k, src, w, out, s) };
    }
    k.rows(src, w, out, s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::border::pad;

    /// Copies the centre of each window: the identity through any border.
    struct Centre(usize);
    impl RowKernel<u16> for Centre {
        type Out = u16;
        type Scratch = ();
        const OUTS: usize = 2;
        fn radius(&self) -> usize {
            self.0
        }
        #[inline(always)]
        fn rows(&self, src: Rows<'_, u16>, w: usize, out: &mut [&mut [u16]], _: &mut ()) {
            let r = self.0;
            for (y, o) in out[0].chunks_exact_mut(w).enumerate() {
                o.copy_from_slice(&src.row(y + r)[r..r + w]);
            }
            // The second plane: the top-left corner of each window.
            for (y, o) in out[1].chunks_exact_mut(w).enumerate() {
                o.copy_from_slice(&src.row(y)[..w]);
            }
        }
    }

    #[test]
    fn strips_see_the_padded_window() {
        // A 37×150 raster; the tile holds rows 3.. and the output is cut
        // from it, so strips start at many offsets and meet every border.
        let p = crate::pixel::noise_planes::<u16>(37, 150, 2, 3);
        let image = (37, 150);
        let have = Win::new(0, 3, 37, 147);
        let tile: Vec<Plane<u16>> = p
            .iter()
            .map(|q| {
                pad(
                    q,
                    Win::new(0, 0, 37, 150),
                    image,
                    have,
                    BorderMode::Replicate,
                    0,
                )
            })
            .collect();
        for mode in [
            BorderMode::Reflect101,
            BorderMode::Replicate,
            BorderMode::Constant(9.0),
        ] {
            for r in [0, 1, 3] {
                let target = Win::new(0, 6, 37, 144);
                let got = run(
                    &Centre(r),
                    Source::Border {
                        planes: &tile,
                        have,
                        image,
                        target,
                        mode,
                        fill: 9,
                    },
                );
                for (b, q) in tile.iter().enumerate() {
                    let full = pad(q, have, image, target.grow(r), mode, 9);
                    let want: Vec<u16> = (0..target.height)
                        .flat_map(|y| full.row(y + r)[r..r + target.width].to_vec())
                        .collect();
                    assert_eq!(got[2 * b].data, want, "{mode:?} r={r}");
                    let corner: Vec<u16> = (0..target.height)
                        .flat_map(|y| full.row(y)[..target.width].to_vec())
                        .collect();
                    assert_eq!(got[2 * b + 1].data, corner, "{mode:?} r={r}");
                    // The same through the padded copy.
                    let again = run(&Centre(r), Source::Padded(std::slice::from_ref(&full)));
                    assert_eq!(again[0].data, want);
                }
            }
        }
    }
}
