//! The exact baseline ("naive", the thesis' Phase 1) on the host: for every
//! pixel, accumulate the integer kernel weights of each class present in its
//! window and pick the winner. O(N²) per pixel; rows run in parallel (rayon).
//! [`exact_pixel`] is the one-pixel form, reused by the certified mode.

use super::{ClassSmoother, ClassTile, SmoothParams, pick_winner};
use crate::classes::NO_CLASS;
use crate::error::Result;
use rayon::prelude::*;

/// The direct histogram method on the host.
#[derive(Clone, Copy, Debug, Default)]
pub struct NaiveHost;

/// The non-zero quantised kernel weights as (offset in the tile, weight),
/// offsets relative to the window's top-left pixel.
pub fn taps(tile: &ClassTile, params: &SmoothParams) -> Vec<(usize, u32)> {
    let n = params.kernel.size();
    // Only non-zero weights matter (a disc's corners, a Gaussian's rounded tails).
    params
        .kernel
        .quantised()
        .iter()
        .enumerate()
        .filter(|(_, q)| **q > 0)
        .map(|(i, &q)| ((i / n) * tile.width + i % n, q))
        .collect()
}

/// The exact result at output pixel `(x, y)`; `acc` is scratch of
/// `n_classes + 1` bins (one extra bin absorbs nodata so the loop has no branch).
#[inline]
pub fn exact_pixel(
    tile: &ClassTile,
    params: &SmoothParams,
    taps: &[(usize, u32)],
    x: usize,
    y: usize,
    acc: &mut [u32],
) -> u16 {
    let origin = y * tile.width + x;
    let centre = tile.classes[origin + tile.halo * tile.width + tile.halo];
    if centre == tile.nodata() && !params.fill_nodata {
        return NO_CLASS;
    }
    acc.iter_mut().for_each(|a| *a = 0);
    let window = &tile.classes[origin..];
    for &(offset, q) in taps {
        acc[window[offset] as usize] += q;
    }
    pick_winner(&acc[..tile.n_classes], params.class_weights, centre)
}

impl ClassSmoother for NaiveHost {
    fn name(&self) -> String {
        "naive/host".into()
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        let out_w = tile.output_width();
        if out_w == 0 {
            return Ok(());
        }
        let taps = taps(tile, params);
        out.par_chunks_mut(out_w).enumerate().for_each(|(y, row)| {
            let mut acc = vec![0u32; tile.n_classes + 1];
            for (x, slot) in row.iter_mut().enumerate() {
                *slot = exact_pixel(tile, params, &taps, x, y, &mut acc);
            }
        });
        Ok(())
    }
}
