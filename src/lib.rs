//! mapfilter: a tiled batch engine that smooths classified rasters with a
//! weighted class-histogram (majority) filter on OpenCL devices and on the
//! host, and reports how accurate each fast method is against the exact one.
//!
//! Layers, from the bottom: [`io`] and [`pixel`] (the model: sources, sinks,
//! in-memory rasters, sample types), [`kernel`] and [`classes`] define the
//! inputs of the computation; [`method`] defines what each method computes
//! (a plain host reference per method); [`engine`] drives tiles through a
//! method with bounded memory; [`gdal`](crate::gdal) reads and writes GDAL
//! rasters; [`cli`] is glue.

pub mod accuracy;
#[cfg(feature = "gdal")]
pub mod batch;
pub mod classes;
pub mod cli;
pub mod confidence;
pub mod cpu;
pub mod device;
pub mod engine;
pub mod error;
pub mod filter;
#[cfg(feature = "gdal")]
pub mod gdal;
pub mod grain;
pub mod interrupt;
pub mod io;
pub mod job;
pub mod kernel;
pub mod limits;
pub mod linalg;
pub mod method;
pub mod metrics;
pub mod output;
pub mod pipeline;
pub mod pixel;
pub mod pixel_area;
pub mod progress;
pub mod report;
pub mod sieve;
pub mod sweep;
pub mod switches;
pub mod synth;

pub use error::{Error, Result};
