//! mapfilter-core: the layers of mapfilter that need neither GDAL nor the
//! command line: the model, the inputs of the computation, the class
//! methods and image ops (each host reference beside its device twin),
//! both engines, the sieve, the metrics and the accuracy estimators, and
//! smoothing a code plane in memory ([`job::plane`]). It builds on
//! mapfilter-base (error, settings, output, interruption, limits,
//! progress) and mapfilter-opencl (the device layer, [`device`]), and
//! re-exports their modules under their own names, so `crate::error` and
//! `crate::device` read as before the split. The crates above it (GDAL
//! raster I/O, reports, jobs with sweeps and batch, the CLI) build on it,
//! and the CLI crate re-exports every module under the same name, so
//! `mapfilter::engine` is this crate's [`engine`]; this crate cannot name
//! those (docs/architecture.md).
//!
//! Layers, from the bottom: [`io`] and [`pixel`] (the model: sources, sinks,
//! in-memory rasters, sample types), [`kernel`] and [`classes`] define the
//! inputs of the computation; [`method`] defines what each method computes
//! (a plain host reference per method); [`engine`] drives tiles through a
//! method with bounded memory.

pub mod accuracy;
pub mod classes;
pub mod confidence;
pub mod engine;
pub mod filter;
pub mod io;
pub mod job;
pub mod kernel;
pub mod linalg;
pub mod method;
pub mod metrics;
pub mod pipeline;
pub mod pixel;
pub mod pixel_area;
pub mod sieve;
pub mod synth;

pub use mapfilter_base::{Error, Result, bail};
pub use mapfilter_base::{cpu, error, grain, interrupt, limits, output, progress, switches};
/// The device layer (the mapfilter-opencl crate).
pub use mapfilter_opencl as device;
