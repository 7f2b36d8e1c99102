//! Connected-component labelling of one band of rows ("chunk") on runs:
//! each row is cut into maximal runs of one code, runs of equal code that
//! touch between consecutive rows (4- or 8-connected) are joined with a
//! union-find, and each component gets a local id, numbered in the order of
//! its first run. The numbering only depends on the chunk's pixels, so a
//! later pass that labels the same chunk again gets the same ids.

use super::Connectivity;

/// A run of one code on one row: columns `x0..x1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub x0: u32,
    pub x1: u32,
    pub code: u16,
    /// Masked (nodata) pixels belong to no polygon.
    pub masked: bool,
}

/// Label of masked runs.
pub const MASKED: u32 = u32::MAX;

/// The runs of a chunk and their component ids.
#[derive(Debug, Default)]
pub struct ChunkLabels {
    /// Runs of row `r` are `runs[row_start[r]..row_start[r + 1]]`.
    pub row_start: Vec<usize>,
    pub runs: Vec<Run>,
    /// Local component id per run ([`MASKED`] for masked runs).
    pub label: Vec<u32>,
    /// Code of each local component.
    pub comp_code: Vec<u16>,
    /// Pixel count of each local component (within the chunk).
    pub comp_size: Vec<u64>,
}

impl ChunkLabels {
    pub fn rows(&self) -> usize {
        self.row_start.len().saturating_sub(1)
    }

    /// Runs of row `r` with their labels.
    pub fn row(&self, r: usize) -> (&[Run], &[u32]) {
        let (a, b) = (self.row_start[r], self.row_start[r + 1]);
        (&self.runs[a..b], &self.label[a..b])
    }

    /// The last row's runs and labels (empty for an empty chunk).
    pub fn last_row(&self) -> (&[Run], &[u32]) {
        match self.rows() {
            0 => (&[], &[]),
            n => self.row(n - 1),
        }
    }
}

/// Whether runs `a` (this row) and `b` (the row above) touch.
#[inline]
pub fn touch(a: &Run, b: &Run, conn: Connectivity) -> bool {
    match conn {
        Connectivity::Four => b.x0 < a.x1 && a.x0 < b.x1,
        Connectivity::Eight => b.x0 <= a.x1 && a.x0 <= b.x1,
    }
}

/// Calls `f(i, j)` for every run `i` of `this` touching run `j` of `above`
/// (indices within the slices), in order of `i` then `j`.
#[inline]
pub fn for_touching(
    this: &[Run],
    above: &[Run],
    conn: Connectivity,
    mut f: impl FnMut(usize, usize),
) {
    let mut start = 0;
    for (i, a) in this.iter().enumerate() {
        // Runs above that end before `a` can start touching it end before
        // every later run of this row too.
        while start < above.len() && !reaches(&above[start], a, conn) {
            start += 1;
        }
        let mut j = start;
        while j < above.len() && touch(a, &above[j], conn) {
            f(i, j);
            j += 1;
        }
    }
}

/// Whether run `b` above ends late enough to touch `a` or a run right of it.
#[inline]
fn reaches(b: &Run, a: &Run, conn: Connectivity) -> bool {
    match conn {
        Connectivity::Four => b.x1 > a.x0,
        Connectivity::Eight => b.x1 >= a.x0,
    }
}

/// Cuts one row into runs, appending them to `runs`.
pub fn row_runs(row: &[u16], nodata: Option<u16>, runs: &mut Vec<Run>) {
    let mut x0 = 0usize;
    while x0 < row.len() {
        let code = row[x0];
        let len = row[x0..]
            .iter()
            .position(|&c| c != code)
            .unwrap_or(row.len() - x0);
        runs.push(Run {
            x0: x0 as u32,
            x1: (x0 + len) as u32,
            code,
            masked: Some(code) == nodata,
        });
        x0 += len;
    }
}

fn find(parent: &mut [u32], mut i: u32) -> u32 {
    while parent[i as usize] != i {
        let p = parent[i as usize];
        parent[i as usize] = parent[p as usize];
        i = p;
    }
    i
}

/// Labels `rows` rows of `width` codes (row-major in `pixels`).
pub fn label_chunk(
    pixels: &[u16],
    width: usize,
    nodata: Option<u16>,
    conn: Connectivity,
) -> ChunkLabels {
    let rows = pixels.len().checked_div(width).unwrap_or(0);
    let mut out = ChunkLabels {
        row_start: Vec::with_capacity(rows + 1),
        ..ChunkLabels::default()
    };
    out.row_start.push(0);
    for row in pixels.chunks_exact(width.max(1)).take(rows) {
        row_runs(row, nodata, &mut out.runs);
        out.row_start.push(out.runs.len());
    }
    let mut parent: Vec<u32> = (0..out.runs.len() as u32).collect();
    for r in 1..rows {
        let (above_at, this_at) = (out.row_start[r - 1], out.row_start[r]);
        let above = &out.runs[above_at..this_at];
        let this = &out.runs[this_at..out.row_start[r + 1]];
        for_touching(this, above, conn, |i, j| {
            let (a, b) = (&this[i], &above[j]);
            if a.code == b.code && !a.masked {
                let ra = find(&mut parent, (this_at + i) as u32);
                let rb = find(&mut parent, (above_at + j) as u32);
                if ra != rb {
                    // The older run stays root, so ids follow first runs.
                    let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
                    parent[hi as usize] = lo;
                }
            }
        });
    }
    out.label = vec![MASKED; out.runs.len()];
    for i in 0..out.runs.len() {
        let run = out.runs[i];
        if run.masked {
            continue;
        }
        let root = find(&mut parent, i as u32) as usize;
        let id = if root == i {
            out.comp_code.push(run.code);
            out.comp_size.push(0);
            (out.comp_code.len() - 1) as u32
        } else {
            out.label[root]
        };
        out.label[i] = id;
        out.comp_size[id as usize] += u64::from(run.x1 - run.x0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pixels: &[u16], width: usize, conn: Connectivity) -> Vec<u32> {
        let l = label_chunk(pixels, width, Some(9), conn);
        let mut per_pixel = Vec::new();
        for (run, &id) in l.runs.iter().zip(&l.label) {
            per_pixel.extend(std::iter::repeat_n(id, (run.x1 - run.x0) as usize));
        }
        per_pixel
    }

    #[test]
    fn diagonals_join_only_with_eight() {
        let px = [1, 2, 2, 1];
        assert_eq!(labels(&px, 2, Connectivity::Four), vec![0, 1, 2, 3]);
        assert_eq!(labels(&px, 2, Connectivity::Eight), vec![0, 1, 1, 0]);
    }

    #[test]
    fn u_shape_is_one_component_and_nodata_none() {
        #[rustfmt::skip]
        let px = [
            1, 2, 1,
            1, 2, 1,
            1, 1, 1,
            9, 9, 2,
        ];
        let l = label_chunk(&px, 3, Some(9), Connectivity::Four);
        assert_eq!(l.comp_code, vec![1, 2, 2]);
        assert_eq!(l.comp_size, vec![7, 2, 1]);
        assert_eq!(labels(&px, 3, Connectivity::Four)[9..], [MASKED, MASKED, 2]);
    }
}
