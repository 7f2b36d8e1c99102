//! The raster's polygons: one entry per chunk component (a polygon that
//! spans several chunks has several entries, joined by a union-find), with
//! its code and pixel count. After the labelling pass, [`Polygons::settle`]
//! points every entry at its root and sums the counts into the roots, so
//! later passes look a component's polygon up in O(1).
//!
//! Memory is O(entries): components of the chunks, never pixels.

use super::Connectivity;
use super::runs::{ChunkLabels, MASKED, Run, for_touching};
use crate::bail;
use crate::error::Result;

/// Sizes compare as GDAL's do: counts stop at `i32::MAX`.
pub const SIZE_CAP: u64 = i32::MAX as u64;

#[derive(Debug, Default)]
pub struct Polygons {
    parent: Vec<u32>,
    code: Vec<u16>,
    size: Vec<u64>,
}

impl Polygons {
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Adds the components of a chunk; returns the id of its first one
    /// (the chunk's component `i` is entry `base + i`).
    pub fn add_chunk(&mut self, chunk: &ChunkLabels) -> Result<u32> {
        let base = self.parent.len();
        let end = base + chunk.comp_code.len();
        // The top ids mark masked runs and merge decisions.
        if end >= (MASKED - 2) as usize {
            bail!(
                resource,
                "the raster has more than 4 billion polygon fragments",
                hint = "sieve it in parts (gdal_translate -srcwin), or smooth it first"
            );
        }
        self.parent.extend(base as u32..end as u32);
        self.code.extend_from_slice(&chunk.comp_code);
        self.size.extend_from_slice(&chunk.comp_size);
        Ok(base as u32)
    }

    fn find(&mut self, mut i: u32) -> u32 {
        while self.parent[i as usize] != i {
            let p = self.parent[i as usize];
            self.parent[i as usize] = self.parent[p as usize];
            i = p;
        }
        i
    }

    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi as usize] = lo;
        }
    }

    /// Joins the components of `this` (the first row of a chunk, entries
    /// from `this_base`) with those they touch in `above` (the last row of
    /// the chunk above, entries from `above_base`).
    pub fn join_rows(
        &mut self,
        (this, this_label, this_base): (&[Run], &[u32], u32),
        (above, above_label, above_base): (&[Run], &[u32], u32),
        conn: Connectivity,
    ) {
        for_touching(this, above, conn, |i, j| {
            if this[i].code == above[j].code && !this[i].masked && !above[j].masked {
                self.union(this_base + this_label[i], above_base + above_label[j]);
            }
        });
    }

    /// Points every entry at its root and sums counts into the roots
    /// (capped at [`SIZE_CAP`]). Returns the number of polygons.
    pub fn settle(&mut self) -> usize {
        let mut roots = 0;
        for i in 0..self.parent.len() {
            let r = self.find(i as u32);
            self.parent[i] = r;
            if r as usize == i {
                roots += 1;
            } else {
                let s = std::mem::take(&mut self.size[i]);
                self.size[r as usize] += s;
            }
        }
        for s in &mut self.size {
            *s = (*s).min(SIZE_CAP);
        }
        roots
    }

    /// The polygon (root entry) of entry `i`; after [`Polygons::settle`].
    #[inline]
    pub fn root(&self, i: u32) -> u32 {
        self.parent[i as usize]
    }

    /// Pixel count of a root entry (capped); after [`Polygons::settle`].
    #[inline]
    pub fn size(&self, root: u32) -> u64 {
        self.size[root as usize]
    }

    #[inline]
    pub fn code(&self, root: u32) -> u16 {
        self.code[root as usize]
    }
}
