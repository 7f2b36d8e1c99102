//! The class scan of a large raster (a batch's mosaic of many tiles) on
//! several threads: its rows cut into bands, each read through a handle of
//! its own (GDAL handles are not thread-safe), the counts added up.
//!
//! `batch plan` scans a mosaic for its classes once; on one thread a
//! mosaic of 16 tiles of 105 Mpx took about 4 s on the 4-GPU node, longer
//! than `batch run` smoothing it (issue 39).

use super::class_raster::ClassRaster;
use mapfilter_core::classes::{ClassTable, CodeHistogram};
use mapfilter_core::error::Result;
use mapfilter_core::progress::Progress;
use std::path::Path;

/// Rows per band are a multiple of this: the block height of tiled
/// GeoTIFFs (and of GDAL's VRTs of them), so no block is decoded twice.
const ROW_ALIGN: usize = 512;

/// Bands of rows below this many pixels are not worth a thread.
const MIN_BAND_PIXELS: usize = 16 << 20;

/// The class table of the raster at `path` (default band), as
/// [`ClassRaster::scan_classes`] finds it, read on up to `threads` threads.
pub fn classes_in_parallel(path: &Path, threads: usize) -> Result<ClassTable> {
    let mut first = ClassRaster::open_without_projection(path)?;
    let (w, h) = (first.meta.width, first.meta.height);
    let nodata = first.nodata_code();
    let bands = bands(w, h, threads);
    let hist = if bands.len() < 2 {
        first.scan_histogram(&Progress::hidden())?
    } else {
        let parts: Vec<Result<CodeHistogram>> = std::thread::scope(|s| {
            let handles: Vec<_> = bands
                .iter()
                .map(|rows| {
                    let rows = rows.clone();
                    s.spawn(move || {
                        ClassRaster::open_without_projection(path)?
                            .scan_rows(rows, &Progress::hidden())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut hist = CodeHistogram::default();
        for part in parts {
            hist.merge(&part?);
        }
        hist
    };
    ClassTable::from_histogram(&hist, nodata).map_err(|e| e.context(path.display()))
}

/// The raster's rows (`width` × `height`) cut into at most `threads` bands
/// of whole blocks, none under [`MIN_BAND_PIXELS`] but the last.
fn bands(width: usize, height: usize, threads: usize) -> Vec<std::ops::Range<usize>> {
    let by_size = (width * height).div_ceil(MIN_BAND_PIXELS).max(1);
    let count = threads.clamp(1, by_size);
    let rows = height.div_ceil(count).next_multiple_of(ROW_ALIGN);
    (0..height)
        .step_by(rows.max(1))
        .map(|y| y..(y + rows).min(height))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_cover_every_row_once_in_whole_blocks() {
        for (w, h, threads) in [
            (40960, 40960, 64),
            (40960, 40960, 2),
            (100, 100, 64),
            (7200, 3600, 16),
            (1, 1, 8),
            (5000, 513, 4),
        ] {
            let b = bands(w, h, threads);
            assert!(!b.is_empty() && b.len() <= threads.max(1));
            assert_eq!(b[0].start, 0);
            assert_eq!(b.last().unwrap().end, h);
            for pair in b.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
                assert_eq!(pair[0].start % ROW_ALIGN, 0);
            }
        }
        // A small raster is one band; a mosaic of 1.7 Gpx uses the threads.
        assert_eq!(bands(100, 100, 64).len(), 1);
        assert_eq!(bands(40960, 40960, 64).len(), 40);
        assert_eq!(bands(40960, 40960, 2).len(), 2);
    }
}
