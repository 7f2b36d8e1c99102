//! The jobs that need no GDAL: a code plane in memory smoothed as
//! `smooth` smooths a file ([`plane`]; the Python package's entry point),
//! and a run's engine time estimated from a timed sample ([`estimate`]).
//! mapfilter-jobs' `job` module re-exports them as `job::plane` and
//! `job::estimate`, beside the jobs that read and write files.

pub mod estimate;
pub mod plane;
