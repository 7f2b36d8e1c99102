//! mapfilter-base, the bottom layer of mapfilter: the one error type with
//! its kind and hint ([`error`]), the process environment's settings read
//! once ([`switches`]), every write through checked targets and temporary
//! files ([`output`]), interruption by signal ([`interrupt`]), the CPUs and
//! memory a run may use ([`cpu`], [`limits`]), progress bars
//! ([`progress`]) and the grain of parallel loops ([`grain`]).
//!
//! Every other crate of ours builds on it (mapfilter-core re-exports each
//! module under its own name, so `mapfilter_core::error` is this crate's
//! [`error`]); it knows nothing of rasters, methods, devices or the
//! command line.

pub mod cpu;
pub mod error;
pub mod grain;
pub mod interrupt;
pub mod limits;
pub mod output;
pub mod progress;
pub mod switches;

pub use error::{Error, Result};
