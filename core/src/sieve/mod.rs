//! Minimum mapping unit: the sieve filter, pixel for pixel as GDAL's
//! `GDALSieveFilter` (`gdal_sieve.py`) computes it, on rasters of any size
//! in bounded memory and on all threads. `docs/sieve.md` states the rule.
//!
//! - [`runs`]: labelling of a band of rows on runs;
//! - [`polygons`]: the polygon table (fragments joined across strips);
//! - [`merge`]: largest neighbours and where each small polygon goes;
//! - [`stream`]: the three passes over strips, from a source to a sink;
//! - [`threshold`]: thresholds given as pixels or as areas.

pub mod merge;
pub mod polygons;
pub mod runs;
pub mod stream;
pub mod threshold;

use crate::error::Result;
use crate::io::{ClassSink, ClassSource};
use crate::progress::Progress;
use std::time::Duration;

/// Which pixels touch: edges only (4) or edges and corners (8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Connectivity {
    /// GDAL's default (`gdal_sieve.py -4`).
    #[default]
    Four,
    Eight,
}

impl Connectivity {
    /// From 4 or 8.
    pub fn from_number(n: u8) -> Option<Self> {
        match n {
            4 => Some(Connectivity::Four),
            8 => Some(Connectivity::Eight),
            _ => None,
        }
    }
}

/// What to sieve.
#[derive(Clone, Debug)]
pub struct SieveOptions {
    /// Polygons of fewer pixels than this join their largest neighbour.
    pub threshold: u64,
    pub connectivity: Connectivity,
    /// Pixels of this code belong to no polygon and never change.
    pub nodata: Option<u16>,
    /// Rows read at a time (`None`: about 4 M pixels in whole 256-row
    /// blocks). Results do not depend on it.
    pub strip_rows: Option<usize>,
    /// Most bytes of runs kept from the first pass for the later ones
    /// (strips beyond are read and labelled again). Results do not depend
    /// on it.
    pub cache_bytes: usize,
}

/// Default [`SieveOptions::cache_bytes`]: whole rasters of tens of
/// megapixels of land cover are read once.
pub const CACHE_BYTES: usize = 256 << 20;

impl SieveOptions {
    /// Polygons under `threshold` pixels go, `connectivity` apart, `nodata`
    /// masked; strips and cache at their defaults.
    pub fn new(threshold: u64, connectivity: Connectivity, nodata: Option<u16>) -> Self {
        SieveOptions {
            threshold,
            connectivity,
            nodata,
            strip_rows: None,
            cache_bytes: CACHE_BYTES,
        }
    }
}

/// Figures of one run.
#[derive(Clone, Debug, Default)]
pub struct SieveStats {
    /// The threshold in pixels.
    pub threshold: u64,
    /// Polygons in the input (nodata is none).
    pub polygons: usize,
    /// Polygons below the threshold.
    pub small: usize,
    /// Small polygons that joined a neighbour.
    pub merged: usize,
    pub pixels_changed: u64,
    pub wall: Duration,
}

/// Sieves `source` into `sink`: every polygon (connected pixels of one
/// code) smaller than `options.threshold` takes the code of its largest
/// neighbour, as `gdal_sieve.py -st THRESHOLD -4|-8` does with the band's
/// nodata as mask. The sink gets full-width strips, top to bottom.
pub fn sieve(
    source: &mut dyn ClassSource,
    sink: &mut dyn ClassSink,
    options: &SieveOptions,
    progress: &Progress,
) -> Result<SieveStats> {
    stream::run(source, sink, options, progress)
}
