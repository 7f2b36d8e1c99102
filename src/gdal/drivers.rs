//! GDAL's drivers as mapfilter uses them: all registered, less the ones
//! that cost every output and that a raster tool never reads.
//!
//! Creating a dataset, GDAL first identifies whatever is at the path, to
//! delete an older dataset there (`GDALDriver::QuietDelete`). Our outputs
//! are created at a temp path that exists already, empty (it is created
//! exclusively and locked, see `output::temp`), and an empty file is shown
//! to every driver in turn. The vector driver NTF (UK Ordnance Survey
//! transfer files) builds its British National Grid coordinate system from
//! WKT before it looks at the file, and PROJ parses that through its SQLite
//! database: the costliest step of creating a small GeoTIFF, paid once per
//! output (a batch makes thousands). mapfilter reads rasters only, so NTF
//! goes.

use gdal::DriverManager;

/// Vector-only drivers that do costly work for any empty file they are
/// shown, by short name (NTF's is "UK .NTF").
const DROPPED: [&str; 1] = ["UK .NTF"];

/// Registers GDAL's drivers (the first lookup does) less [`DROPPED`]
/// (once; later calls do nothing). Called before any other GDAL call of
/// ours, so that no thread walks the driver list while a driver leaves it.
pub fn prepare() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for name in DROPPED {
            if let Ok(driver) = DriverManager::get_driver_by_name(name) {
                DriverManager::deregister_driver(&driver);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_drivers_are_gone_and_rasters_stay() {
        prepare();
        assert!(DriverManager::get_driver_by_name("UK .NTF").is_err());
        assert!(DriverManager::get_driver_by_name("GTiff").is_ok());
        assert!(DriverManager::get_driver_by_name("VRT").is_ok());
    }
}
