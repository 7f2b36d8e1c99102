//! The class scan of a raster on several threads: its rows cut into bands,
//! each read through a handle of its own (GDAL handles are not
//! thread-safe), the counts added up, and the handles kept to serve later
//! reads of their bands ([`BandedRaster`]).
//!
//! `batch plan` scans a mosaic for its classes once; on one thread a
//! mosaic of 16 tiles of 105 Mpx took about 4 s on the 4-GPU node, longer
//! than `batch run` smoothing it (issue 39). A whole `smooth` on two
//! threads scans its input before the engine starts, and the engine then
//! finds each band's blocks decoded in its handle's cache (decision 0041).
//! On more threads its reads go side by side through several handles
//! ([`InterleavedRaster`]).

use super::class_raster::{BandChoice, ClassRaster};
use mapfilter_core::classes::{ClassTable, CodeHistogram};
use mapfilter_core::error::Result;
use mapfilter_core::io::ClassSource;
use mapfilter_core::progress::Progress;
use std::ops::Range;
use std::path::Path;
use tiles::Rect;

/// Rows per band are a multiple of this: the block height of tiled
/// GeoTIFFs (and of GDAL's VRTs of them), so no block is decoded twice.
const ROW_ALIGN: usize = 512;

/// Bands of rows below this many pixels are not worth a thread in a
/// mosaic's scan (`batch plan`).
const MIN_BAND_PIXELS: usize = 16 << 20;

/// The same for a whole `smooth` on few threads ([`BandedRaster`]), whose
/// scan is all the engine waits for. Two bands scanned 26 Mpx maps 5–25 %
/// faster on 2 cores, but the 4 Mpx MODIS crop's whole command was 5 %
/// slower (a second handle opened while the output's thread is busy).
pub const MIN_SMOOTH_BAND_PIXELS: usize = 8 << 20;

/// The class table of the raster at `path` (default band), as
/// [`ClassRaster::scan_classes`] finds it, read on up to `threads` threads.
pub fn classes_in_parallel(path: &Path, threads: usize) -> Result<ClassTable> {
    BandedRaster::open(path, BandChoice::default(), threads, MIN_BAND_PIXELS)?
        .scan_classes(&Progress::hidden())
}

/// A raster opened once per band of its rows: a scan reads the bands side
/// by side, each through its own handle (GDAL handles are not
/// thread-safe), and later reads of a band go through the handle that
/// scanned it, so they find its blocks decoded in GDAL's block cache (which
/// keeps blocks per handle).
pub struct BandedRaster {
    /// The bands' rows, top to bottom, and their handles.
    bands: Vec<(Range<usize>, ClassRaster)>,
}

impl BandedRaster {
    /// Opens `choice` of `path` once per band of at most `threads` bands of
    /// at least `min_band_pixels` (but the last), whole blocks each.
    pub fn open(
        path: &Path,
        choice: BandChoice,
        threads: usize,
        min_band_pixels: usize,
    ) -> Result<Self> {
        let open = || ClassRaster::open_without_projection_with(path, choice);
        let first = open()?;
        let rows = bands(
            first.meta.width,
            first.meta.height,
            threads,
            min_band_pixels,
        );
        // The others side by side: a mosaic's VRT of many tiles takes a
        // while to open.
        let others = on_threads((1..rows.len()).map(|_| open));
        let mut handles = vec![first];
        for other in others {
            handles.push(other?);
        }
        Ok(BandedRaster {
            bands: rows.into_iter().zip(handles).collect(),
        })
    }

    /// The handle of the first band (the raster's metadata).
    pub fn first_mut(&mut self) -> &mut ClassRaster {
        &mut self.bands[0].1
    }

    /// The classes present, the bands scanned side by side.
    pub fn scan_classes(&mut self, progress: &Progress) -> Result<ClassTable> {
        let strips = self.bands.iter().map(|(rows, r)| r.strips_in(rows)).sum();
        progress.start(strips, "scan");
        let parts = on_threads(
            self.bands
                .iter_mut()
                .map(|(rows, raster)| || raster.count_rows(rows.clone(), progress)),
        );
        progress.finish();
        class_table(parts, &self.bands[0].1)
    }
}

impl ClassSource for BandedRaster {
    fn size(&self) -> (usize, usize) {
        self.bands[0].1.size()
    }

    /// Reads each band's part of `w` through that band's handle.
    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        let end = w.y + w.height;
        for (rows, raster) in &mut self.bands {
            let (top, bottom) = (w.y.max(rows.start), end.min(rows.end));
            if top >= bottom {
                continue;
            }
            let part = Rect::new(w.x, top, w.width, bottom - top);
            let at = (top - w.y) * w.width;
            raster.read(part, &mut buf[at..at + part.area() as usize])?;
        }
        Ok(())
    }
}

/// A raster opened several times, its rows dealt out in units of
/// [`ROW_ALIGN`] rows (unit `k` to handle `k mod n`, so each block is
/// decoded by one handle only), for a reader that would otherwise decode
/// alone: a read across several units reads them side by side, a thread
/// per handle, and a scan counts each handle's units side by side, so that
/// the engine later finds them decoded in that handle's cache. A whole
/// `smooth` on a GPU of 16 cores read its 415 Mpx input in 0.62 s on one
/// handle, 97 % of the engine's time (decision 0043).
pub struct InterleavedRaster {
    handles: Vec<ClassRaster>,
}

impl InterleavedRaster {
    /// Opens `choice` of `path` `handles` times (at least once), the others
    /// side by side after the first; `open` opens one handle.
    pub fn open(handles: usize, open: impl Fn() -> Result<ClassRaster> + Sync) -> Result<Self> {
        let first = open()?;
        let units = first.meta.height.div_ceil(ROW_ALIGN);
        let count = handles.clamp(1, units.max(1));
        let mut opened = vec![first];
        for other in on_threads((1..count).map(|_| &open)) {
            opened.push(other?);
        }
        Ok(InterleavedRaster { handles: opened })
    }

    /// The first handle (the raster's metadata).
    pub fn first_mut(&mut self) -> &mut ClassRaster {
        &mut self.handles[0]
    }

    /// The handles opened.
    pub fn handles(&self) -> usize {
        self.handles.len()
    }

    /// The classes present, each handle counting its units, side by side.
    pub fn scan_classes(&mut self, progress: &Progress) -> Result<ClassTable> {
        let n = self.handles.len();
        let height = self.handles[0].meta.height;
        let units_of = |i: usize| {
            (i * ROW_ALIGN..height)
                .step_by(n * ROW_ALIGN)
                .map(move |y| y..(y + ROW_ALIGN).min(height))
        };
        let strips = (0..n)
            .flat_map(|i| units_of(i).map(move |rows| (i, rows)))
            .map(|(i, rows)| self.handles[i].strips_in(&rows))
            .sum();
        progress.start(strips, "scan");
        let parts = on_threads(self.handles.iter_mut().enumerate().map(|(i, raster)| {
            move || -> Result<CodeHistogram> {
                let mut hist = CodeHistogram::default();
                for rows in units_of(i) {
                    hist.merge(&raster.count_rows(rows, progress)?);
                }
                Ok(hist)
            }
        }));
        progress.finish();
        class_table(parts, &self.handles[0])
    }
}

impl ClassSource for InterleavedRaster {
    fn size(&self) -> (usize, usize) {
        self.handles[0].size()
    }

    /// Reads each unit's part of `w` through its handle, the handles side
    /// by side.
    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        let n = self.handles.len();
        if n == 1 {
            // One handle (a host method's run): nothing to split.
            return self.handles[0].read(w, buf);
        }
        let mut parts: Vec<Vec<(Rect, &mut [u16])>> = (0..n).map(|_| Vec::new()).collect();
        let mut rest = &mut buf[..w.area() as usize];
        let mut y = w.y;
        while y < w.y + w.height {
            let end = (y / ROW_ALIGN + 1) * ROW_ALIGN;
            let rows = end.min(w.y + w.height) - y;
            let (part, after) = std::mem::take(&mut rest).split_at_mut(rows * w.width);
            parts[(y / ROW_ALIGN) % n].push((Rect::new(w.x, y, w.width, rows), part));
            rest = after;
            y += rows;
        }
        let reads = self
            .handles
            .iter_mut()
            .zip(parts)
            .filter(|(_, parts)| !parts.is_empty())
            .map(|(raster, parts)| {
                move || -> Result<()> {
                    for (rect, part) in parts {
                        raster.read(rect, part)?;
                    }
                    Ok(())
                }
            });
        on_threads(reads).into_iter().collect()
    }
}

/// The class table of the counts of a scan's `parts`, with the nodata of
/// `first` (a handle of the raster scanned); the first part's error.
fn class_table(parts: Vec<Result<CodeHistogram>>, first: &ClassRaster) -> Result<ClassTable> {
    let mut hist = CodeHistogram::default();
    for part in parts {
        hist.merge(&part?);
    }
    ClassTable::from_histogram(&hist, first.nodata_code())
        .map_err(|e| e.context(first.path().display()))
}

/// The results of `jobs`, in order: the first on the calling thread, each
/// other on a scoped thread of its own (a panic goes on in the caller), so
/// that one job starts no thread.
fn on_threads<T: Send>(jobs: impl Iterator<Item = impl FnOnce() -> T + Send>) -> Vec<T> {
    let mut jobs = jobs.fuse();
    let Some(first) = jobs.next() else {
        return Vec::new();
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs.map(|job| s.spawn(job)).collect();
        let mut results = vec![first()];
        results.extend(
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
        );
        results
    })
}

/// The raster's rows (`width` × `height`) cut into at most `threads` bands
/// of whole blocks, none under `min_pixels` but the last.
fn bands(width: usize, height: usize, threads: usize, min_pixels: usize) -> Vec<Range<usize>> {
    let by_size = (width * height).div_ceil(min_pixels).max(1);
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

    /// Bands scanned side by side find the classes one handle finds, and a
    /// window across their boundary reads the pixels one handle reads.
    #[test]
    fn banded_raster_scans_and_reads_as_one_handle() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/modis_igbp_2019_2048.tif");
        let mut banded = BandedRaster::open(&path, BandChoice::default(), 2, 1 << 20).unwrap();
        assert_eq!(banded.bands.len(), 2);
        assert_eq!(banded.bands[0].0, 0..1024);
        let mut one = ClassRaster::open(&path).unwrap();
        let hidden = Progress::hidden();
        let classes = banded.scan_classes(&hidden).unwrap();
        assert_eq!(classes.codes(), one.scan_classes(&hidden).unwrap().codes());
        for window in [Rect::new(100, 900, 700, 300), Rect::new(0, 1500, 2048, 10)] {
            let mut expected = vec![u16::MAX; window.area() as usize];
            one.read(window, &mut expected).unwrap();
            let mut got = vec![u16::MAX; window.area() as usize];
            banded.read(window, &mut got).unwrap();
            assert!(expected.iter().any(|&v| v != expected[0]));
            assert_eq!(got, expected);
        }
    }

    /// Units dealt out to three handles: a scan side by side finds the
    /// classes one handle finds, and windows within a unit, across two and
    /// across every unit read the pixels one handle reads.
    #[test]
    fn interleaved_raster_scans_and_reads_as_one_handle() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/modis_igbp_2019_2048.tif");
        let open = || ClassRaster::open_without_projection_with(&path, BandChoice::default());
        let mut interleaved = InterleavedRaster::open(3, open).unwrap();
        assert_eq!(interleaved.handles(), 3);
        // More handles than units of rows: one per unit.
        assert_eq!(InterleavedRaster::open(9, open).unwrap().handles(), 4);
        let mut one = ClassRaster::open(&path).unwrap();
        let hidden = Progress::hidden();
        let classes = interleaved.scan_classes(&hidden).unwrap();
        assert_eq!(classes.codes(), one.scan_classes(&hidden).unwrap().codes());
        for window in [
            Rect::new(100, 20, 700, 300),
            Rect::new(3, 500, 900, 30),
            Rect::new(0, 0, 2048, 2048),
            Rect::new(0, 1023, 64, 1025),
        ] {
            let mut expected = vec![u16::MAX; window.area() as usize];
            one.read(window, &mut expected).unwrap();
            let mut got = vec![u16::MAX; window.area() as usize];
            interleaved.read(window, &mut got).unwrap();
            assert!(expected.iter().any(|&v| v != expected[0]));
            assert_eq!(got, expected, "{window:?}");
        }
    }

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
            let b = bands(w, h, threads, MIN_BAND_PIXELS);
            assert!(!b.is_empty() && b.len() <= threads.max(1));
            assert_eq!(b[0].start, 0);
            assert_eq!(b.last().unwrap().end, h);
            for pair in b.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
                assert_eq!(pair[0].start % ROW_ALIGN, 0);
            }
        }
        // A small raster is one band; a mosaic of 1.7 Gpx uses the threads.
        assert_eq!(bands(100, 100, 64, MIN_BAND_PIXELS).len(), 1);
        assert_eq!(bands(40960, 40960, 64, MIN_BAND_PIXELS).len(), 40);
        assert_eq!(bands(40960, 40960, 2, MIN_BAND_PIXELS).len(), 2);
    }
}
