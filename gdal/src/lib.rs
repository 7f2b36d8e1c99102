//! mapfilter-gdal: every GDAL call of mapfilter: reading and writing class rasters
//! ([`class_raster`]) and multi-band images ([`image_raster`]), a
//! confidence band read as vote weights ([`confidence`]), a COG copy of a
//! finished mosaic ([`cog`]), checking
//! creation options ([`creation_options`]), sample points as GeoPackage or
//! CSV and reference points from any OGR source ([`points`]), making an output on another
//! thread ([`deferred_output`], on the long-lived [`threads`]), keeping
//! GDAL's own error reports off stderr while counting them ([`errors`]),
//! sparing PROJ's database the same fruitless name search for every
//! output ([`proj_names`]), the class scan of a large raster on several
//! threads ([`scan`]), and the ground area of a dataset's pixel for a
//! sieve threshold ([`sieve_area`]).
//!
//! The layer above the core (`mapfilter_core`) and below the jobs: it
//! knows nothing of reports, jobs or the command line, and the crate graph
//! keeps it so (docs/architecture.md).

pub mod class_raster;
pub mod cog;
pub mod confidence;
pub mod creation_options;
pub mod deferred_output;
pub mod errors;
pub mod image_raster;
pub mod output_options;
pub mod output_raster;
pub mod points;
pub mod proj_names;
pub mod scan;
pub mod sieve_area;
pub mod threads;
