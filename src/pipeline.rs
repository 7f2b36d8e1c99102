//! A three-stage tile pipeline (the image-filter engine runs on it; the class
//! engine keeps its own variant with device tiles in flight): a reader thread loads tile i+1 while the calling
//! thread computes tile i and a writer thread stores tile i−1 — the double
//! buffering of the streaming paper. At most [`PIPELINE_DEPTH`] tiles wait on
//! each side, so memory is bounded by tile size × pipeline depth.
//!
//! The pipeline knows nothing of pixels: the three stages are closures. The
//! first error of any stage stops the run and is returned; later tiles are
//! neither read nor written.

use crate::error::{Error, Result};
use crossbeam_channel::bounded;
use tiles::Tile;

/// Tiles in flight between reader, compute and writer.
pub const PIPELINE_DEPTH: usize = 2;

/// Runs `read` → `compute` → `write` over `tiles`, in stitching order, with
/// reading and writing on their own threads.
///
/// `read` is called once per tile, in order, on the reader thread; `compute`
/// on the calling thread; `write` in order on the writer thread.
pub fn run<I, O, R, C, W>(
    tiles: impl Iterator<Item = Tile> + Send,
    mut read: R,
    mut compute: C,
    mut write: W,
) -> Result<()>
where
    I: Send,
    O: Send,
    R: FnMut(Tile) -> Result<I> + Send,
    C: FnMut(Tile, I) -> Result<O>,
    W: FnMut(Tile, O) -> Result<()> + Send,
{
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
            for item in read_rx.iter() {
                let (tile, input) = item?;
                let out = compute(tile, input)?;
                if write_tx.send((tile, out)).is_err() {
                    break; // the writer failed; its error is reported below
                }
            }
            Ok(())
        })();
        drop(write_tx);
        drop(read_rx);
        let wrote = writer
            .join()
            .map_err(|_| Error::new("writer thread panicked"))?;
        reader
            .join()
            .map_err(|_| Error::new("reader thread panicked"))?;
        computed?;
        wrote
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiles::{Border, TileGrid};

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
    fn first_error_stops_the_run() {
        let grid = TileGrid::new(10, 10, 0, Border::Same, 2).unwrap();
        let err = run(
            grid.tiles(),
            |t| {
                if t.index == 3 {
                    Err(Error::new("bad read"))
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
                    Err(Error::new("bad write"))
                } else {
                    Ok(())
                }
            },
        )
        .unwrap_err();
        assert_eq!(err.cause(), "bad write");
    }
}
