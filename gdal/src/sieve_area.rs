//! The ground area of a GDAL dataset's pixel for a sieve threshold given
//! as an area ([`mapfilter_core::sieve::threshold`] has the formulas: projected
//! rasters in their linear unit, geographic ones on the ellipsoid at the
//! raster's centre latitude).

use mapfilter_core::error::{Error, Result};
use mapfilter_core::sieve::threshold::{geographic_pixel_area, projected_pixel_area};

fn no_size(why: &str) -> Error {
    Error::input(format!(
        "an area needs the pixel size, but the raster {why}"
    ))
    .hint("give the threshold in pixels")
}

/// Area in m² of a pixel of `ds` (`mapfilter_core::sieve::threshold`'s module doc), or why it has none.
pub fn dataset_pixel_area(ds: &gdal::Dataset) -> Result<f64> {
    let gt = ds
        .geo_transform()
        .map_err(|_| no_size("has no geotransform"))?;
    let srs = ds
        .spatial_ref()
        .map_err(|_| no_size("has no coordinate system"))?;
    pixel_area(gt, ds.raster_size(), &srs)
}

/// Area in m² of a pixel of a raster of `size` pixels with geotransform
/// `gt` in the coordinate system `wkt` (a batch's mosaic, from its plan),
/// as [`dataset_pixel_area`] measures it.
pub fn pixel_area_of(gt: [f64; 6], size: (usize, usize), wkt: &str) -> Result<f64> {
    if wkt.trim().is_empty() {
        return Err(no_size("has no coordinate system"));
    }
    let srs = gdal::spatial_ref::SpatialRef::from_wkt(wkt)
        .map_err(|_| no_size("has a coordinate system GDAL cannot read"))?;
    pixel_area(gt, size, &srs)
}

fn pixel_area(
    gt: [f64; 6],
    (w, h): (usize, usize),
    srs: &gdal::spatial_ref::SpatialRef,
) -> Result<f64> {
    let area = if srs.is_geographic() {
        let latitude = gt[3] + gt[4] * w as f64 / 2.0 + gt[5] * h as f64 / 2.0;
        let axes = (
            srs.semi_major().map_err(|_| no_size("has no ellipsoid"))?,
            srs.semi_minor().map_err(|_| no_size("has no ellipsoid"))?,
        );
        geographic_pixel_area(&gt, srs.angular_units(), axes, latitude)
    } else if srs.is_projected() || srs.is_local() {
        projected_pixel_area(&gt, srs.linear_units())
    } else {
        return Err(no_size(
            "has neither a projected nor a geographic coordinate system",
        ));
    };
    if !(area.is_finite() && area > 0.0) {
        return Err(no_size("has a degenerate geotransform"));
    }
    Ok(area)
}
