//! The one job that needs no GDAL: a code plane in memory smoothed as
//! `smooth` smooths a file ([`plane`]; the Python package's entry point).
//! The `mapfilter` crate's `job` module re-exports it as `job::plane`,
//! beside the jobs that read and write files.

pub mod plane;
