//! Real class rasters as sweep inputs (`input = "map.tif"` or a list in
//! the config): each is read into memory once, by the caller (the sweep
//! itself stays GDAL-free), with its classes and nodata, and every
//! experiment runs every method on it instead of a synthetic raster.

use mapfilter_core::classes::{ClassTable, CodeHistogram};
use mapfilter_core::error::Result;
use mapfilter_core::io::MemRaster;
use serde::{Deserialize, Deserializer};

/// A real input of a sweep, in memory.
#[derive(Clone, Debug)]
pub struct Source {
    /// How records and plots name it (the file name).
    pub label: String,
    pub raster: MemRaster,
    /// The classes present (nodata left out).
    pub table: ClassTable,
}

impl Source {
    /// A raster read by the caller, with its nodata code.
    pub fn new(label: String, raster: MemRaster, nodata: Option<u16>) -> Result<Self> {
        let mut hist = CodeHistogram::default();
        hist.add(&raster.data);
        let table =
            ClassTable::from_histogram(&hist, nodata).map_err(|e| e.context(label.as_str()))?;
        Ok(Source {
            label,
            raster,
            table,
        })
    }
}

/// `input = "a.tif"` or `input = ["a.tif", "b.tif"]`.
pub fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}
