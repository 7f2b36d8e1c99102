//! Accuracy and area against reference data, the way map producers publish
//! it: design-based estimators for a stratified random sample of pixels
//! labelled from reference data ([`estimate`]: Olofsson et al. 2014, and
//! Stehman 2014 for strata that differ from the map classes), Pontius &
//! Millones (2011) quantity and allocation disagreement ([`disagreement`]),
//! and the sample design itself: how many points per stratum
//! ([`allocation`]) and which pixels, reproducibly from a seed ([`draw`]),
//! in two passes over the rasters in bounded memory ([`scan`]); a labelled
//! sample placed on a map's grid scores any map on it ([`reference`]).
//!
//! GDAL-free: the commands `sample` and `assess` read rasters and points
//! through `mapfilter::gdal` and hand plain numbers in.

pub mod allocation;
pub mod disagreement;
pub mod draw;
pub mod estimate;
pub mod reference;
pub mod scan;

pub use allocation::Allocation;
pub use disagreement::Disagreement;
pub use estimate::{Assessment, Estimate, SamplePoint, Stratum};
pub use reference::ReferenceSample;

/// The standard normal quantile of a two-sided 95 % interval.
pub const Z95: f64 = 1.959_963_984_540_054;
