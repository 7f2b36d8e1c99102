//! Which polygon a small polygon joins, as GDAL's sieve decides it.
//!
//! Every pair of touching pixels of two polygons is an *adjacency event*
//! at a position in GDAL's scan order (row, column, then the direction:
//! up, up-left, up-right, left). A polygon's *largest neighbour* is the
//! largest polygon it has an event with; among equally large ones, the one
//! whose first event comes first. Events are reduced per chunk in parallel
//! ([`Neighbours`]) and the reductions combined in any order: the rule is
//! a minimum over a total order, so the result does not depend on how the
//! raster was cut.
//!
//! A small polygon then follows largest neighbours until it reaches one of
//! at least the threshold ([`resolve`]); a chain that ends or loops first
//! leaves it unchanged.

use super::Connectivity;
use super::polygons::Polygons;
use super::runs::{ChunkLabels, MASKED, Run};

/// Directions of an event, in GDAL's order within a pixel.
const UP: u64 = 0;
const UP_LEFT: u64 = 1;
const UP_RIGHT: u64 = 2;
const LEFT: u64 = 3;

/// Best neighbour found so far for one polygon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub size: u64,
    /// Position of the first event with it: `(y · width + x) · 4 + direction`.
    pub pos: u64,
    pub polygon: u32,
}

impl Candidate {
    #[inline]
    fn beats(&self, other: &Candidate) -> bool {
        self.size > other.size || (self.size == other.size && self.pos < other.pos)
    }
}

/// No candidate yet.
const NONE: Candidate = Candidate {
    size: 0,
    pos: u64::MAX,
    polygon: u32::MAX,
};

/// Best neighbours found by one chunk, by entry of the polygon table:
/// densely for the chunk's own entries (from `base`), as a list for
/// entries of the chunk above (events along its top edge).
#[derive(Debug)]
pub struct ChunkNeighbours {
    base: u32,
    own: Vec<Candidate>,
    above: Vec<(u32, Candidate)>,
}

impl ChunkNeighbours {
    /// For a chunk of `components` entries from `base`.
    pub fn new(base: u32, components: usize) -> Self {
        ChunkNeighbours {
            base,
            own: vec![NONE; components],
            above: Vec::new(),
        }
    }

    #[inline]
    fn offer(&mut self, entry: u32, candidate: Candidate) {
        match self.own.get_mut(entry.wrapping_sub(self.base) as usize) {
            Some(c) => {
                if candidate.beats(c) {
                    *c = candidate
                }
            }
            None => self.above.push((entry, candidate)),
        }
    }
}

/// Best neighbours of the small polygons, by root entry.
#[derive(Debug, Default)]
pub struct Neighbours {
    best: Vec<Candidate>,
}

impl Neighbours {
    /// For a table of `entries` entries.
    pub fn new(entries: usize) -> Self {
        Neighbours {
            best: vec![NONE; entries],
        }
    }

    #[inline]
    fn offer(&mut self, polygon: u32, candidate: Candidate) {
        let c = &mut self.best[polygon as usize];
        if candidate.beats(c) {
            *c = candidate
        }
    }

    /// Takes in a chunk's reduction.
    pub fn absorb(&mut self, chunk: ChunkNeighbours, polygons: &Polygons) {
        for (i, c) in chunk.own.iter().enumerate() {
            if c.polygon != u32::MAX {
                self.offer(polygons.root(chunk.base + i as u32), *c);
            }
        }
        for (entry, c) in chunk.above {
            self.offer(polygons.root(entry), c);
        }
    }

    /// The largest neighbour of polygon (root) `polygon`, if it has one.
    pub fn get(&self, polygon: u32) -> Option<u32> {
        Some(self.best[polygon as usize].polygon).filter(|&p| p != u32::MAX)
    }
}

/// What the event scan needs to know about polygons.
pub struct EventScan<'a> {
    pub polygons: &'a Polygons,
    pub threshold: u64,
    pub width: u64,
    pub conn: Connectivity,
}

impl EventScan<'_> {
    /// Records an event between entries `a` and `b` at `pos` for whichever
    /// of their polygons is small.
    #[inline]
    fn event(&self, out: &mut ChunkNeighbours, a: u32, b: u32, pos: u64) {
        let (pa, pb) = (self.polygons.root(a), self.polygons.root(b));
        if pa == pb {
            return;
        }
        let (sa, sb) = (self.polygons.size(pa), self.polygons.size(pb));
        if sa < self.threshold {
            out.offer(
                pa,
                Candidate {
                    size: sb,
                    pos,
                    polygon: pb,
                },
            );
        }
        if sb < self.threshold {
            out.offer(
                pb,
                Candidate {
                    size: sa,
                    pos,
                    polygon: pa,
                },
            );
        }
    }

    /// Left events of one row (`y` global), runs labelled from `base`.
    pub fn row(
        &self,
        out: &mut ChunkNeighbours,
        y: u64,
        (runs, labels, base): (&[Run], &[u32], u32),
    ) {
        for i in 1..runs.len() {
            if labels[i] != MASKED && labels[i - 1] != MASKED {
                let pos = (y * self.width + u64::from(runs[i].x0)) * 4 + LEFT;
                self.event(out, base + labels[i], base + labels[i - 1], pos);
            }
        }
    }

    /// Up, up-left and up-right events between row `y` (`this`) and the
    /// row above it.
    pub fn between(
        &self,
        out: &mut ChunkNeighbours,
        y: u64,
        (this, this_label, this_base): (&[Run], &[u32], u32),
        (above, above_label, above_base): (&[Run], &[u32], u32),
    ) {
        let row = y * self.width;
        super::runs::for_touching(this, above, self.conn, |i, j| {
            if this_label[i] == MASKED || above_label[j] == MASKED {
                return;
            }
            if let Some(x4) = first_event(&this[i], &above[j], self.conn) {
                self.event(
                    out,
                    this_base + this_label[i],
                    above_base + above_label[j],
                    row * 4 + x4,
                );
            }
        });
    }

    /// Every event inside a chunk whose first row is `y0`, entries from `base`.
    pub fn chunk(&self, out: &mut ChunkNeighbours, y0: u64, chunk: &ChunkLabels, base: u32) {
        for r in 0..chunk.rows() {
            let (runs, labels) = chunk.row(r);
            self.row(out, y0 + r as u64, (runs, labels, base));
            if r > 0 {
                let (above, above_labels) = chunk.row(r - 1);
                self.between(
                    out,
                    y0 + r as u64,
                    (runs, labels, base),
                    (above, above_labels, base),
                );
            }
        }
    }
}

/// The first event (`x · 4 + direction`) between run `a` and run `b` in the
/// row above, if they touch.
#[inline]
fn first_event(a: &Run, b: &Run, conn: Connectivity) -> Option<u64> {
    let (a0, a1, b0, b1) = (
        u64::from(a.x0),
        u64::from(a.x1),
        u64::from(b.x0),
        u64::from(b.x1),
    );
    let mut first: Option<u64> = None;
    let mut consider = |lo: u64, hi: u64, dir: u64| {
        if lo < hi {
            let key = lo * 4 + dir;
            first = Some(first.map_or(key, |f| f.min(key)));
        }
    };
    // Pixel x of `a` sees x above, x-1 above (up-left), x+1 above (up-right).
    consider(a0.max(b0), a1.min(b1), UP);
    if conn == Connectivity::Eight {
        consider(a0.max(b0 + 1), a1.min(b1 + 1), UP_LEFT);
        consider(a0.max(b0.saturating_sub(1)), a1.min(b1 - 1), UP_RIGHT);
    }
    first
}

/// Where each small polygon goes: `target[p]` is the polygon whose code
/// polygon `p` takes, or [`STAY`] to stay. Only roots are meaningful.
pub fn resolve(polygons: &Polygons, neighbours: &Neighbours, threshold: u64) -> Vec<u32> {
    const UNSEEN: u32 = u32::MAX - 1;
    const ON_PATH: u32 = u32::MAX - 2;
    let n = polygons.len();
    let mut target = vec![STAY; n];
    for p in 0..n as u32 {
        if neighbours.get(p).is_some() {
            target[p as usize] = UNSEEN;
        }
    }
    let mut path: Vec<u32> = Vec::new();
    for start in 0..n as u32 {
        if target[start as usize] != UNSEEN {
            continue;
        }
        path.clear();
        let mut cur = start;
        let result = loop {
            if polygons.size(cur) >= threshold {
                break cur;
            }
            match target[cur as usize] {
                UNSEEN => {}
                // Back on this chain: a loop of equally small polygons.
                ON_PATH => break STAY,
                done => break done,
            }
            target[cur as usize] = ON_PATH;
            path.push(cur);
            match neighbours.get(cur) {
                Some(next) => cur = next,
                None => break STAY,
            }
        };
        for &p in &path {
            target[p as usize] = result;
        }
    }
    target
}

/// [`resolve`]'s mark of a polygon that keeps its code.
pub const STAY: u32 = u32::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    fn run(x0: u32, x1: u32) -> Run {
        Run {
            x0,
            x1,
            code: 1,
            masked: false,
        }
    }

    #[test]
    fn first_events_follow_gdal_order() {
        // Overlapping: the up event at the overlap's first column.
        assert_eq!(
            first_event(&run(2, 5), &run(3, 9), Connectivity::Four),
            Some(3 * 4 + UP)
        );
        // Eight: up-right at x = 2 (sees 3 above) comes before up at x = 3.
        assert_eq!(
            first_event(&run(2, 5), &run(3, 9), Connectivity::Eight),
            Some(2 * 4 + UP_RIGHT)
        );
        // Diagonal only: up-left at x = 5 (sees 4 above).
        assert_eq!(
            first_event(&run(5, 7), &run(1, 5), Connectivity::Eight),
            Some(5 * 4 + UP_LEFT)
        );
        assert_eq!(
            first_event(&run(5, 7), &run(1, 5), Connectivity::Four),
            None
        );
        // Above run starts at 0: up-right from x = 0 is not below -1.
        assert_eq!(
            first_event(&run(0, 1), &run(0, 2), Connectivity::Eight),
            Some(UP)
        );
    }
}
