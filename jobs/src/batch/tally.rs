//! A task's class counts, tapped from its engine: the pixels of its window
//! by code as the engine reads them (each once, though tiles overlap by
//! their halo) and of its output as written, so that a task's done record
//! needs no second reading of either.

use super::records::Counts;
use crate::job::observer::Tap;
use mapfilter_core::classes::CodeTally;
use std::sync::Mutex;
use tiles::Rect;

/// Counts by code of a task's window as its engine reads it (each pixel
/// once, though tiles overlap by their halo) and of its output as written,
/// so that a task's record needs no second reading of either.
pub(super) struct TaskTally {
    /// The task's window in the input's pixels.
    center: Rect,
    inner: Mutex<TallyCounts>,
}

struct TallyCounts {
    /// The parts of the window counted already: each read's overlap with it.
    counted: Vec<Rect>,
    /// Scratch of a row's spans not counted yet, and of their next state.
    gaps: Vec<(usize, usize)>,
    next: Vec<(usize, usize)>,
    /// Pixels by code, for every code the band's type holds.
    input: CodeTally,
    output: CodeTally,
    input_pixels: usize,
    output_pixels: usize,
}

impl TaskTally {
    /// The tally of window `center` of a band whose codes are at most
    /// `max_code`.
    pub(super) fn new(center: Rect, max_code: u16) -> Self {
        TaskTally {
            center,
            inner: Mutex::new(TallyCounts {
                counted: Vec::new(),
                gaps: Vec::new(),
                next: Vec::new(),
                input: CodeTally::new(max_code as usize + 1),
                output: CodeTally::new(max_code as usize + 1),
                input_pixels: 0,
                output_pixels: 0,
            }),
        }
    }

    /// The input's and the output's counts, each where every pixel of the
    /// window was seen (else `None`: read them from the files).
    pub(super) fn counts(&self) -> (Option<Counts>, Option<Counts>) {
        let mut t = self.inner.lock().expect("tally lock");
        let t = &mut *t;
        let area = self.center.width * self.center.height;
        let counts =
            |hist: &mut CodeTally, pixels: usize| (pixels == area).then(|| nonzero(hist.counts()));
        (
            counts(&mut t.input, t.input_pixels),
            counts(&mut t.output, t.output_pixels),
        )
    }
}

impl Tap for TaskTally {
    fn read(&self, w: Rect, codes: &[u16]) {
        let Some(both) = w.intersection(&self.center) else {
            return;
        };
        let mut t = self.inner.lock().expect("tally lock");
        let TallyCounts {
            counted,
            gaps,
            next,
            input,
            input_pixels,
            ..
        } = &mut *t;
        // Only earlier reads that overlap this one take pixels from it
        // (with tiles on a grid, its neighbours).
        let overlapping: Vec<Rect> = counted
            .iter()
            .filter_map(|r| r.intersection(&both))
            .collect();
        for y in both.y..both.y + both.height {
            gaps.clear();
            gaps.push((both.x, both.x + both.width));
            for r in overlapping
                .iter()
                .filter(|r| (r.y..r.y + r.height).contains(&y))
            {
                next.clear();
                for &(a, b) in gaps.iter() {
                    let (x0, x1) = (r.x.max(a), (r.x + r.width).min(b));
                    if x0 >= x1 {
                        next.push((a, b));
                        continue;
                    }
                    if a < x0 {
                        next.push((a, x0));
                    }
                    if x1 < b {
                        next.push((x1, b));
                    }
                }
                std::mem::swap(gaps, next);
            }
            let row = (y - w.y) * w.width;
            for &(x0, x1) in gaps.iter() {
                input.add(&codes[row + x0 - w.x..row + x1 - w.x]);
                *input_pixels += x1 - x0;
            }
        }
        counted.push(both);
    }

    fn written(&self, _w: Rect, codes: &[u16]) {
        let mut t = self.inner.lock().expect("tally lock");
        t.output.add(codes);
        t.output_pixels += codes.len();
    }
}

/// The codes of a histogram by code that have pixels, with their counts.
pub(super) fn nonzero(hist: &[u64]) -> Counts {
    hist.iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(c, &n)| (c as u16, n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::observer::Tap;

    #[test]
    fn a_tally_counts_each_pixel_of_its_window_once() {
        // A 4x2 window at (1, 1) of a 6x4 input, read as two tiles that
        // overlap by a column and reach past the window.
        let tally = TaskTally::new(Rect::new(1, 1, 4, 2), u8::MAX as u16);
        let input: Vec<u16> = (0..24).map(|i| (i % 3) as u16).collect();
        let part = |r: Rect| -> Vec<u16> {
            (r.y..r.y + r.height)
                .flat_map(|y| input[y * 6 + r.x..y * 6 + r.x + r.width].to_vec())
                .collect()
        };
        let (left, right) = (Rect::new(0, 0, 4, 4), Rect::new(3, 0, 3, 4));
        tally.read(left, &part(left));
        assert_eq!(tally.counts().0, None, "half the window read");
        tally.read(right, &part(right));
        tally.read(left, &part(left));
        // Rows 1..3, columns 1..5: pixels 7..11 and 13..17, code i % 3.
        assert_eq!(tally.counts().0, Some(vec![(0, 2), (1, 4), (2, 2)]));
        tally.written(Rect::new(0, 0, 4, 1), &[5, 5, 6, 5]);
        assert_eq!(tally.counts().1, None, "half the output written");
        tally.written(Rect::new(0, 1, 4, 1), &[6, 6, 6, 6]);
        assert_eq!(tally.counts().1, Some(vec![(5, 3), (6, 5)]));
    }
}
