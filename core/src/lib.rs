//! mapfilter-core: the layers of mapfilter that need neither GDAL nor the
//! command line: the model, the inputs of the computation, the OpenCL
//! devices, the class methods and image ops, both engines, the sieve, the
//! metrics and the accuracy estimators, and smoothing a code plane in
//! memory ([`job::plane`]). The `mapfilter` crate (GDAL raster I/O, jobs,
//! reports, sweeps, batch, the CLI) builds on it and re-exports every
//! module under the same name, so `mapfilter::engine` is this crate's
//! [`engine`]; this crate cannot name that one (docs/architecture.md).
//!
//! Layers, from the bottom: [`io`] and [`pixel`] (the model: sources, sinks,
//! in-memory rasters, sample types), [`kernel`] and [`classes`] define the
//! inputs of the computation; [`method`] defines what each method computes
//! (a plain host reference per method); [`engine`] drives tiles through a
//! method with bounded memory.

pub mod accuracy;
pub mod classes;
pub mod confidence;
pub mod cpu;
pub mod device;
pub mod engine;
pub mod error;
pub mod filter;
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
pub mod sieve;
pub mod switches;
pub mod synth;

pub use error::{Error, Result};
