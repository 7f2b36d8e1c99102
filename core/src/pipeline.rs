//! A three-stage tile pipeline, shared by the class engine and the image
//! engine: a reader thread loads tile i+1 while the calling thread computes
//! tile i and a writer thread stores tile i−1 — the double buffering of the
//! streaming paper. At most [`PIPELINE_DEPTH`] tiles wait on each side, so
//! memory is bounded by tile size × pipeline depth.
//!
//! The compute stage may itself keep tiles in flight ([`run_deferred`]): it
//! submits a tile (e.g. enqueues it on a device) and finishes it up to
//! `depth` tiles later, so a device uploads tile i+1 and downloads tile i−1
//! while tile i runs. Tiles that run elsewhere and may be done out of
//! order (jobs on a pool) count against the depth only
//! while they run: a tile done waits its turn to be written.
//!
//! The pipeline knows nothing of pixels: the stages are closures. The
//! first error of any stage stops the run and is returned; later tiles are
//! neither read nor written.

use crate::error::{Error, Result};
use crossbeam_channel::bounded;
use std::collections::VecDeque;
use std::time::Duration;
use tiles::Tile;

/// What a run of either engine did, counted the same way by both: the
/// tiles and output pixels it computed, the time its compute stage spent
/// in the method or op (or waiting for it), and its wall time. The class
/// engine's `engine::RunStats` adds what only class maps have (classes
/// per tile, each stage's busy time); the image engine returns these.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunTotals {
    pub tiles: usize,
    pub pixels: u64,
    pub compute: Duration,
    pub wall: Duration,
}

impl RunTotals {
    /// Counts one finished tile of `pixels` output pixels.
    pub fn tile(&mut self, pixels: u64) {
        self.tiles += 1;
        self.pixels += pixels;
    }

    /// Adds the tiles, pixels and compute time of a part of the same run
    /// (its wall time is the run's, not a sum).
    pub fn absorb(&mut self, part: &RunTotals) {
        self.tiles += part.tiles;
        self.pixels += part.pixels;
        self.compute += part.compute;
    }
}

/// Tiles in flight between reader, compute and writer.
pub const PIPELINE_DEPTH: usize = 2;

/// Runs `read` → `compute` → `write` over `tiles`, in stitching order, with
/// reading and writing on their own threads.
///
/// `read` is called once per tile, in order, on the reader thread; `compute`
/// on the calling thread; `write` in order on the writer thread.
pub fn run<I, O, R, C, W>(
    tiles: impl Iterator<Item = Tile> + Send,
    read: R,
    compute: C,
    write: W,
) -> Result<()>
where
    I: Send,
    O: Send,
    R: FnMut(Tile) -> Result<I> + Send,
    C: FnMut(Tile, I) -> Result<O>,
    W: FnMut(Tile, O) -> Result<()> + Send,
{
    run_deferred(
        tiles,
        read,
        compute,
        |_, out| Ok(out),
        (0, in_order()),
        write,
    )
}

/// What [`run_deferred`] knows of the tiles it submitted: `done` tells a
/// tile whose result is there already (finishing it will not wait);
/// `wait_any` waits until one more submitted tile is done, or returns
/// false at once where it cannot (then the oldest tile is waited for).
pub struct Running<D, A> {
    pub done: D,
    pub wait_any: A,
}

/// [`Running`] for tiles finished in order, each waited for.
pub type InOrder<P> = Running<fn(&P) -> bool, fn() -> bool>;

/// Tiles finished in order, each waited for (a method's own tiles, on a
/// device or not).
pub fn in_order<P>() -> InOrder<P> {
    Running {
        done: |_| false,
        wait_any: || false,
    }
}

/// [`run`] with the compute stage split in two on the calling thread:
/// `submit` starts a tile and `finish` completes it, in order, so that up
/// to `depth + 1` tiles are running (submitted and not done) while later
/// ones are read. With [`in_order`] every tile counts until it is
/// finished, up to `depth` tiles later. Tiles that run elsewhere (jobs on
/// a pool) and may be done out of order are finished as soon as they and
/// those before them are done, and a tile done does not count while it
/// waits its turn, up to `4 × (depth + 1)` held in all: held to
/// `depth + 1` submitted tiles, a slow tile held back every tile after
/// it, and on 16 threads half the threads idled through the second half
/// of a run of wide-kernel tiles (decision 0030).
pub fn run_deferred<I, P, O, R, S, F, W, D, A>(
    tiles: impl Iterator<Item = Tile> + Send,
    mut read: R,
    mut submit: S,
    mut finish: F,
    (depth, mut running): (usize, Running<D, A>),
    mut write: W,
) -> Result<()>
where
    I: Send,
    O: Send,
    R: FnMut(Tile) -> Result<I> + Send,
    S: FnMut(Tile, I) -> Result<P>,
    F: FnMut(Tile, P) -> Result<O>,
    W: FnMut(Tile, O) -> Result<()> + Send,
    D: Fn(&P) -> bool,
    A: FnMut() -> bool,
{
    let cap = 4 * (depth + 1);
    let (read_tx, read_rx) = bounded::<Result<(Tile, I)>>(PIPELINE_DEPTH);
    let (write_tx, write_rx) = bounded::<(Tile, O)>(PIPELINE_DEPTH);
    std::thread::scope(|scope| -> Result<()> {
        let reader = scope.spawn(move || {
            for tile in tiles {
                let item = read(tile).map(|input| (tile, input));
                let failed = item.is_err();
                if read_tx.send(item).is_err() || failed {
                    return;
                }
            }
        });
        let writer = scope.spawn(move || -> Result<()> {
            for (tile, out) in write_rx {
                write(tile, out)?;
            }
            Ok(())
        });
        let computed = (|| -> Result<()> {
            let mut in_flight = VecDeque::new();
            // Finishes the oldest tile in flight; false: the writer failed
            // (its error is reported below).
            let mut finish_oldest = |in_flight: &mut VecDeque<(Tile, P)>| -> Result<bool> {
                let Some((tile, pending)) = in_flight.pop_front() else {
                    return Ok(true);
                };
                let out = finish(tile, pending)?;
                Ok(write_tx.send((tile, out)).is_ok())
            };
            for item in read_rx.iter() {
                let (tile, input) = item?;
                in_flight.push_back((tile, submit(tile, input)?));
                loop {
                    // The front tile done (or too many held): written now,
                    // in order. Then room for another running tile, or wait
                    // for any to be done (the oldest, where that cannot be).
                    let front_done = in_flight.front().is_some_and(|(_, p)| (running.done)(p));
                    if front_done || in_flight.len() > cap {
                        if !finish_oldest(&mut in_flight)? {
                            return Ok(());
                        }
                        continue;
                    }
                    let busy = in_flight.iter().filter(|(_, p)| !(running.done)(p)).count();
                    if busy <= depth {
                        break;
                    }
                    if !(running.wait_any)() && !finish_oldest(&mut in_flight)? {
                        return Ok(());
                    }
                }
            }
            while !in_flight.is_empty() {
                if !finish_oldest(&mut in_flight)? {
                    break;
                }
            }
            Ok(())
        })();
        drop(write_tx);
        drop(read_rx);
        let wrote = writer
            .join()
            .map_err(|_| Error::internal("writer thread panicked"))?;
        reader
            .join()
            .map_err(|_| Error::internal("reader thread panicked"))?;
        computed?;
        wrote
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiles::{Border, TileGrid};

    /// Tiles done out of order do not count against the depth: behind a
    /// first tile that runs on (done only when waited for), the others,
    /// each done at once, are submitted until `4 × (depth + 1)` are held,
    /// against `depth + 1` without knowing they are done; each way every
    /// tile is written, in order.
    #[test]
    fn a_slow_tile_holds_back_the_others_only_past_the_cap() {
        let grid = TileGrid::new(48, 4, 0, Border::Same, 4).unwrap();
        for knows_done in [true, false] {
            let submitted = std::cell::Cell::new(0);
            let at_first_finish = std::cell::Cell::new(None);
            let mut seen = Vec::new();
            let running = Running {
                done: |&(_, done): &(usize, bool)| knows_done && done,
                wait_any: || false,
            };
            run_deferred(
                grid.tiles(),
                |t| Ok(t.index),
                |_, i| {
                    submitted.set(submitted.get() + 1);
                    Ok((i, i != 0))
                },
                |_, (i, _)| {
                    at_first_finish.set(at_first_finish.get().or(Some(submitted.get())));
                    Ok(i)
                },
                (1, running),
                |t, i| {
                    assert_eq!(t.index, i);
                    seen.push(i);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(seen, (0..grid.len()).collect::<Vec<_>>());
            let want = if knows_done { 4 * 2 + 1 } else { 2 };
            assert_eq!(
                at_first_finish.get(),
                Some(want),
                "knows done: {knows_done}"
            );
        }
    }

    #[test]
    fn every_tile_passes_in_order() {
        let grid = TileGrid::new(10, 7, 1, Border::Same, 3).unwrap();
        let mut seen = Vec::new();
        run(
            grid.tiles(),
            |t| Ok(t.index * 2),
            |t, v| Ok((t.index, v + 1)),
            |t, (i, v)| {
                assert_eq!(t.index, i);
                seen.push(v);
                Ok(())
            },
        )
        .unwrap();
        let want: Vec<usize> = (0..grid.len()).map(|i| i * 2 + 1).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn deferred_keeps_depth_plus_one_in_flight_and_order() {
        let grid = TileGrid::new(10, 10, 0, Border::Same, 2).unwrap();
        for depth in [0, 1, 2, 5, 40] {
            let (mut submitted, mut finished) = (0usize, 0usize);
            let in_flight = std::cell::Cell::new(0usize);
            let mut most = 0;
            let mut seen = Vec::new();
            run_deferred(
                grid.tiles(),
                |t| Ok(t.index),
                |_, i| {
                    submitted += 1;
                    in_flight.set(in_flight.get() + 1);
                    most = most.max(in_flight.get());
                    Ok(i * 3)
                },
                |_, p| {
                    finished += 1;
                    in_flight.set(in_flight.get() - 1);
                    Ok(p + 1)
                },
                (depth, in_order()),
                |t, v| {
                    assert_eq!(v, t.index * 3 + 1);
                    seen.push(t.index);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!((submitted, finished), (grid.len(), grid.len()));
            assert_eq!(most, (depth + 1).min(grid.len()));
            assert_eq!(seen, (0..grid.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn first_error_stops_the_run() {
        let grid = TileGrid::new(10, 10, 0, Border::Same, 2).unwrap();
        let err = run(
            grid.tiles(),
            |t| {
                if t.index == 3 {
                    Err(Error::input("bad read"))
                } else {
                    Ok(())
                }
            },
            |_, ()| Ok(()),
            |_, ()| Ok(()),
        )
        .unwrap_err();
        assert_eq!(err.cause(), "bad read");
        let err = run(
            grid.tiles(),
            |_| Ok(()),
            |_, ()| Ok(()),
            |t, ()| {
                if t.index == 1 {
                    Err(Error::input("bad write"))
                } else {
                    Ok(())
                }
            },
        )
        .unwrap_err();
        assert_eq!(err.cause(), "bad write");
    }
}
