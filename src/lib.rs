//! mapfilter: a tiled batch engine that smooths classified rasters with a
//! weighted class-histogram (majority) filter on OpenCL devices and on the
//! host, and reports how accurate each fast method is against the exact one.
//!
//! Two crates, by layer: `mapfilter-core` (the model, kernels and classes,
//! devices, methods, image ops, engines, sieve, metrics, accuracy: no GDAL,
//! no command line) and this one on top of it (GDAL raster I/O, jobs,
//! reports, sweeps, batch, the CLI). Every module of the core crate is
//! re-exported here under its own name, so `crate::engine` and
//! `mapfilter::engine` name the core's [`engine`]; the core cannot name
//! this crate (docs/architecture.md).
//!
//! Layers, from the bottom: [`io`] and [`pixel`] (the model: sources, sinks,
//! in-memory rasters, sample types), [`kernel`] and [`classes`] define the
//! inputs of the computation; [`method`] defines what each method computes
//! (a plain host reference per method); [`engine`] drives tiles through a
//! method with bounded memory; [`gdal`](crate::gdal) reads and writes GDAL
//! rasters; [`cli`] is glue.

pub use mapfilter_core::{
    accuracy, classes, confidence, cpu, device, engine, error, filter, grain, interrupt, io,
    kernel, limits, linalg, method, metrics, output, pipeline, pixel, pixel_area, progress, sieve,
    switches, synth,
};
pub use mapfilter_core::{bail, with_bands, with_type};

pub mod cli;
#[cfg(feature = "gdal")]
pub use mapfilter_gdal as gdal;
#[cfg(feature = "gdal")]
pub use mapfilter_jobs::batch;
pub use mapfilter_jobs::{job, sweep};
pub use mapfilter_report as report;

pub use mapfilter_core::{Error, Result};
