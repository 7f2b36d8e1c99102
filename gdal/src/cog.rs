//! A Cloud Optimized GeoTIFF copy of a finished dataset (a batch's mosaic
//! VRT), written by GDAL's COG driver into a temp file beside the target
//! and renamed on success.

use super::class_raster;
use super::errors::Mark;
use super::errors::gdal_error;
use mapfilter_core::error::Result;
use mapfilter_core::output::{Target, TempFile};
use std::path::Path;

/// One COG of the VRT at `vrt`, overviews resampled by MODE (the class most
/// common under each overview pixel: no class is made up).
pub fn write_cog(vrt: &Path, target: &Target) -> Result<()> {
    if !vrt.exists() {
        mapfilter_core::bail!(
            input,
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
    // clean-up runs; a signal stops it early.
    mapfilter_core::output::without_cleanup(|| {
        create_copy_interruptible(&src, &driver, temp.path(), &options).map(drop)
    })
    .map_err(|e| gdal_error(e).context(format!("cannot write {}", target.shown().display())))?;
    mark.check(&format!("cannot write {}", target.shown().display()))?;
    temp.commit(target)
}

/// GDAL's `CreateCopy` (as [`gdal::Dataset::create_copy`]) with a progress
/// callback that stops it once a stopping signal was received: a COG of a
/// large mosaic takes minutes, and the signal's clean-up waits for it (see
/// [`mapfilter_core::output::without_cleanup`]) only a short while.
pub fn create_copy_interruptible(
    src: &gdal::Dataset,
    driver: &gdal::Driver,
    path: &Path,
    options: &gdal::raster::RasterCreationOptions,
) -> gdal::errors::Result<gdal::Dataset> {
    unsafe extern "C" fn go_on(
        _done: std::ffi::c_double,
        _message: *const std::ffi::c_char,
        _data: *mut std::ffi::c_void,
    ) -> std::ffi::c_int {
        std::ffi::c_int::from(!mapfilter_core::interrupt::received())
    }
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
        gdal::errors::GdalError::BadArgument(format!("{} holds a NUL byte", path.display()))
    })?;
    // SAFETY: valid driver, dataset and option list handles that outlive
    // the call; the callback touches no data of GDAL's.
    let made = unsafe {
        gdal_sys::GDALCreateCopy(
            driver.c_driver(),
            name.as_ptr(),
            src.c_dataset(),
            0,
            options.as_ptr(),
            Some(go_on),
            std::ptr::null_mut(),
        )
    };
    if made.is_null() {
        // SAFETY: GDAL's message of this thread's last error, copied at once.
        let msg = unsafe { std::ffi::CStr::from_ptr(gdal_sys::CPLGetLastErrorMsg()) }
            .to_string_lossy()
            .into_owned();
        let msg = if mapfilter_core::interrupt::received() {
            "stopped by a signal".to_string()
        } else {
            msg
        };
        return Err(gdal::errors::GdalError::NullPointer {
            method_name: "GDALCreateCopy",
            msg,
        });
    }
    // SAFETY: a dataset GDAL just made, owned by the returned value.
    Ok(unsafe { gdal::Dataset::from_c_dataset(made) })
}
