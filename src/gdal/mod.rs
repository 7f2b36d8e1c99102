//! Every GDAL call of the crate: reading and writing class rasters
//! ([`class_raster`]) and multi-band images ([`image_raster`]), a
//! confidence band read as vote weights ([`confidence`]), a COG copy of a
//! finished mosaic ([`cog`]), checking
//! creation options ([`creation_options`]), making an output on another
//! thread ([`deferred_output`], on the long-lived [`threads`]), keeping
//! GDAL's own error reports off stderr while counting them ([`errors`]),
//! and sparing PROJ's database the same fruitless name search for every
//! output ([`proj_names`]).
//!
//! Inside this folder the extern crate is reached as `gdal::...` from the
//! submodules (where no local item shadows it); elsewhere in the crate a
//! module names these files by their full path (`crate::gdal::class_raster`),
//! never by importing the folder itself, so `gdal` stays the extern crate.

pub mod class_raster;
pub mod cog;
pub mod confidence;
pub mod creation_options;
pub mod deferred_output;
pub mod errors;
pub mod image_raster;
pub mod proj_names;
pub mod threads;

/// Lets GDAL decode the blocks of one read on several threads
/// (`GDAL_NUM_THREADS`, one per thread of the run's pool) unless the user
/// set it (environment or `--config`) or the run has two threads or fewer.
/// The engine reads each tile on one thread; with many cores that reader,
/// decoding DEFLATE block by block, bounds a whole run (BENCHMARKS.md,
/// "Whole command against gdal_translate"). On two cores the class scan
/// decodes the input ahead instead (`job::smooth`), and the threads are
/// busy computing.
pub fn default_decode_threads() {
    let threads = rayon::current_num_threads();
    if threads > 2
        && gdal::config::get_config_option("GDAL_NUM_THREADS", "")
            .unwrap_or_default()
            .is_empty()
    {
        let _ = gdal::config::set_config_option("GDAL_NUM_THREADS", &threads.to_string());
    }
}
