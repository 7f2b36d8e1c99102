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
    /// One lock each: the reader's thread counts the input while the
    /// writer's counts the output.
    input: Mutex<InputCounts>,
    output: Mutex<Counted>,
}

/// Pixels by code, for every code the band's type holds, and how many.
struct Counted {
    tally: CodeTally,
    pixels: usize,
}

impl Counted {
    fn new(max_code: u16) -> Self {
        Counted {
            tally: CodeTally::new(max_code as usize + 1),
            pixels: 0,
        }
    }
}

struct InputCounts {
    /// The parts of the window counted already: each read's overlap with it.
    counted: Vec<Rect>,
    /// Scratch of a row's spans not counted yet, and of their next state.
    gaps: Vec<(usize, usize)>,
    next: Vec<(usize, usize)>,
    codes: Counted,
}

impl TaskTally {
    /// The tally of window `center` of a band whose codes are at most
    /// `max_code`.
    pub(super) fn new(center: Rect, max_code: u16) -> Self {
        TaskTally {
            center,
            input: Mutex::new(InputCounts {
                counted: Vec::new(),
                gaps: Vec::new(),
                next: Vec::new(),
                codes: Counted::new(max_code),
            }),
            output: Mutex::new(Counted::new(max_code)),
        }
    }

    /// The input's and the output's counts, each where every pixel of the
    /// window was seen (else `None`: read them from the files).
    pub(super) fn counts(&self) -> (Option<Counts>, Option<Counts>) {
        let area = self.center.width * self.center.height;
        let counts = |c: &mut Counted| (c.pixels == area).then(|| nonzero(c.tally.counts()));
        (
            counts(&mut self.input.lock().expect("tally lock").codes),
            counts(&mut self.output.lock().expect("tally lock")),
        )
    }
}

impl Tap for TaskTally {
    fn read(&self, w: Rect, codes: &[u16]) {
        let Some(both) = w.intersection(&self.center) else {
            return;
        };
        let mut t = self.input.lock().expect("tally lock");
        let InputCounts {
            counted,
            gaps,
            next,
            codes: input,
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
                input.tally.add(&codes[row + x0 - w.x..row + x1 - w.x]);
                input.pixels += x1 - x0;
            }
        }
        counted.push(both);
    }

    fn written(&self, _w: Rect, codes: &[u16]) {
        let mut t = self.output.lock().expect("tally lock");
        t.tally.add(codes);
        t.pixels += codes.len();
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
