//! The library job layer: a command's work as a typed library call. A job is
//! built from typed values (paths, a checked [`mapfilter_core::output::Target`], a
//! kernel, class weights, a method choice), runs with an observer that
//! receives its stages and progress, and returns a report struct. The CLI
//! turns clap structs into jobs; `batch` runs many of them.

#[cfg(feature = "gdal")]
pub mod blend;
#[cfg(feature = "gdal")]
pub mod compare;
#[cfg(feature = "gdal")]
pub mod filter;
pub mod observer;
pub use mapfilter_core::job::{estimate, plane};
#[cfg(feature = "gdal")]
pub mod reference;
#[cfg(feature = "gdal")]
pub mod sieve;
#[cfg(feature = "gdal")]
pub mod smooth;
