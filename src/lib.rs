//! mapfilter: a tiled batch engine that smooths classified rasters with a
//! weighted class-histogram (majority) filter on OpenCL devices and on the
//! host, and reports how accurate each fast method is against the exact one.
//!
//! Layers, from the bottom: [`kernel`] and [`classes`] define the inputs of
//! the computation; [`method`] defines what each method computes (a plain
//! host reference per method); [`engine`] drives tiles through a method with
//! bounded memory; [`raster`] reads and writes GDAL rasters; [`cli`] is glue.

#[cfg(feature = "gdal")]
pub mod batch;
pub mod classes;
pub mod cli;
#[cfg(feature = "gdal")]
pub mod confidence;
pub mod cpu;
#[cfg(feature = "gdal")]
pub mod creation_options;
#[cfg(feature = "gdal")]
pub mod deferred_output;
pub mod device;
pub mod engine;
pub mod error;
pub mod filter;
#[cfg(feature = "gdal")]
pub mod gdal_errors;
#[cfg(feature = "gdal")]
pub mod gdal_threads;
#[cfg(feature = "gdal")]
pub mod image_raster;
pub mod interrupt;
pub mod job;
pub mod kernel;
pub mod limits;
pub mod linalg;
pub mod method;
pub mod metrics;
pub mod output;
pub mod pipeline;
pub mod progress;
#[cfg(feature = "gdal")]
pub mod raster;
pub mod report;
pub mod sieve;
pub mod sweep;
pub mod switches;
pub mod synth;

pub use error::{Error, Result};
