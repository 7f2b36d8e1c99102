//! A Cloud Optimized GeoTIFF copy of a finished dataset (a batch's mosaic
//! VRT), written by GDAL's COG driver into a temp file beside the target
//! and renamed on success.

use super::class_raster::{self, gdal_error};
use super::errors::Mark;
use crate::error::Result;
use crate::output::{Target, TempFile};
use std::path::Path;

/// One COG of the VRT at `vrt`, overviews resampled by MODE (the class most
/// common under each overview pixel: no class is made up).
pub fn write_cog(vrt: &Path, target: &Target) -> Result<()> {
    if !vrt.exists() {
        crate::bail!(
            "no finished task to put in a COG",
            hint = "run the batch first with `mapfilter batch run`"
        );
    }
    let src = class_raster::open(vrt)?;
    let driver = gdal::DriverManager::get_driver_by_name("COG").map_err(gdal_error)?;
    let temp = TempFile::beside(target)?;
    let mut options = gdal::raster::RasterCreationOptions::new();
    for (k, v) in [
        ("COMPRESS", "DEFLATE"),
        ("OVERVIEW_RESAMPLING", "MODE"),
        ("BIGTIFF", "IF_SAFER"),
    ] {
        options.set_name_value(k, v).map_err(gdal_error)?;
    }
    let mark = Mark::now();
    // Made and closed by name (sidecars included): not while a signal's
    // clean-up runs.
    crate::output::without_cleanup(|| src.create_copy(&driver, temp.path(), &options).map(drop))
        .map_err(|e| gdal_error(e).context(format!("cannot write {}", target.shown().display())))?;
    mark.check(&format!("cannot write {}", target.shown().display()))?;
    temp.commit(target)
}
