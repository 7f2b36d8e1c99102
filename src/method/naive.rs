//! The exact baseline ("naive", the thesis' Phase 1) on the host: for every
//! pixel, accumulate the integer kernel weights of each class present in its
//! window and pick the winner. O(N²) per pixel; rows run in parallel (rayon).

use super::{ClassSmoother, ClassTile, SmoothParams, pick_winner};
use crate::classes::NO_CLASS;
use crate::error::Result;
use rayon::prelude::*;

/// The direct histogram method on the host.
#[derive(Clone, Copy, Debug, Default)]
pub struct NaiveHost;

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
        let n = params.kernel.size();
        // Only non-zero weights matter (a disc's corners, a Gaussian's rounded tails).
        let taps: Vec<(usize, u32)> = params
            .kernel
            .quantised()
            .iter()
            .enumerate()
            .filter(|(_, q)| **q > 0)
            .map(|(i, &q)| ((i / n) * tile.width + i % n, q))
            .collect();
        let nodata = tile.nodata();
        let halo = tile.halo;
        out.par_chunks_mut(out_w).enumerate().for_each(|(y, row)| {
            // One extra bin absorbs nodata so the inner loop has no branch.
            let mut acc = vec![0u32; tile.n_classes + 1];
            for (x, slot) in row.iter_mut().enumerate() {
                let origin = y * tile.width + x;
                let centre = tile.classes[origin + halo * tile.width + halo];
                if centre == nodata && !params.fill_nodata {
                    *slot = NO_CLASS;
                    continue;
                }
                acc.iter_mut().for_each(|a| *a = 0);
                let window = &tile.classes[origin..];
                for &(offset, q) in &taps {
                    acc[window[offset] as usize] += q;
                }
                *slot = pick_winner(&acc[..tile.n_classes], params.class_weights, centre);
            }
        });
        Ok(())
    }
}
