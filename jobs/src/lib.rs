//! mapfilter-jobs: a command's work as a typed library call ([`job`]:
//! smooth, filter, compare, assess against reference points), the
//! thesis' experiments from TOML configs ([`sweep`]), and many jobs over
//! a dataset ([`batch`]: plans, worker processes, SLURM arrays, records
//! and resumption, mosaics and their reports).
//!
//! The layer above GDAL (`mapfilter_gdal`) and the reports
//! (`mapfilter_report`), below the command line: nothing here parses
//! arguments or names a flag, and the crate graph keeps it so
//! (docs/architecture.md).

#[cfg(feature = "gdal")]
pub mod batch;
pub mod job;
pub mod sweep;
