//! Reference points read for scoring: the points of any OGR source or CSV
//! ([`mapfilter_gdal::points::read`], transformed into the map's CRS) placed
//! on a map's grid as a [`ReferenceSample`], the one way in for `assess`,
//! `sweep --reference` and `batch report --reference` (here, between the
//! GDAL layer and the GDAL-free estimators, so neither imports the other).

use mapfilter_core::accuracy::ReferenceSample;
use mapfilter_core::error::Result;
use std::path::Path;

/// The points of `path` with their `label` field, in the CRS `projection`,
/// placed on a grid of `size` pixels with geotransform `gt`.
pub fn read_sample(
    path: &Path,
    label: &str,
    projection: &str,
    gt: Option<[f64; 6]>,
    size: (usize, usize),
) -> Result<ReferenceSample> {
    let points = mapfilter_gdal::points::read(path, label, projection)?;
    ReferenceSample::locate(
        points.iter().map(|p| (p.id, p.x, p.y, p.label)),
        gt,
        size,
        &path.display().to_string(),
    )
}
