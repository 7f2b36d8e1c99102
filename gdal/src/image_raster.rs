//! GDAL I/O of continuous multi-band rasters (Byte, UInt16, Int16, Float32)
//! for the image filters, through windows only: [`ImageRaster`] is an
//! [`ImageSource`], and [`OutputRaster`] (from [`crate::class_raster`]) is an
//! [`ImageSink`] writing every band of a tile; [`LevelSink`] writes one of
//! its overview levels.

use crate::class_raster::{self, RasterMeta};
use crate::errors::gdal_error;
use crate::output_raster::OutputRaster;
use gdal::Dataset;
use gdal::raster::{GdalDataType, GdalType};
use mapfilter_core::bail;
use mapfilter_core::error::Result;
use mapfilter_core::io::{ImageSink, ImageSource};
use mapfilter_core::pixel::{Bands, Pixel, Plane, SampleType};
use mapfilter_core::with_bands;
use std::path::{Path, PathBuf};
use tiles::Rect;

/// An opened continuous raster: all its bands, one sample type.
pub struct ImageRaster {
    path: PathBuf,
    ds: Dataset,
    pub meta: RasterMeta,
    pub sample_type: SampleType,
    pub bands: usize,
}

/// The GDAL type of a sample type.
pub fn gdal_type(t: SampleType) -> GdalDataType {
    match t {
        SampleType::U8 => GdalDataType::UInt8,
        SampleType::U16 => GdalDataType::UInt16,
        SampleType::I16 => GdalDataType::Int16,
        SampleType::F32 => GdalDataType::Float32,
    }
}

impl ImageRaster {
    /// Opens `path`; every band must share one of the four sample types.
    pub fn open(path: &Path) -> Result<Self> {
        let ds = class_raster::open(path)?;
        let meta = RasterMeta::read(&ds)?;
        let bands = ds.raster_count();
        let mut sample_type = None;
        for b in 1..=bands {
            let t = match ds.rasterband(b).map_err(gdal_error)?.band_type() {
                GdalDataType::UInt8 => SampleType::U8,
                GdalDataType::UInt16 => SampleType::U16,
                GdalDataType::Int16 => SampleType::I16,
                GdalDataType::Float32 => SampleType::F32,
                other => bail!(
                    input,
                    format!(
                        "{}: band {b} is {}, image filters read Byte, UInt16, Int16 or Float32",
                        path.display(),
                        other.name()
                    ),
                    hint = "convert with gdal_translate -ot Float32"
                ),
            };
            if sample_type.is_some_and(|s| s != t) {
                bail!(
                    input,
                    format!("{}: bands have different types", path.display()),
                    hint = "convert all bands to one type with gdal_translate -ot"
                );
            }
            sample_type = Some(t);
        }
        Ok(ImageRaster {
            path: path.to_path_buf(),
            ds,
            meta,
            sample_type: sample_type.expect("class_raster::open checks for a band"),
            bands,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_typed<T: Pixel + GdalType>(&self, w: Rect) -> Result<Vec<Plane<T>>> {
        (1..=self.bands)
            .map(|b| {
                let band = self.ds.rasterband(b).map_err(gdal_error)?;
                let mut data = vec![T::default(); w.width * w.height];
                if !w.is_empty() {
                    band.read_into_slice::<T>(
                        (w.x as isize, w.y as isize),
                        (w.width, w.height),
                        (w.width, w.height),
                        &mut data,
                        None,
                    )
                    .map_err(|e| gdal_error(e).context(self.path.display()))?;
                }
                Ok(Plane::new(w.width, w.height, data))
            })
            .collect()
    }
}

impl ImageSource for ImageRaster {
    fn size(&self) -> (usize, usize) {
        (self.meta.width, self.meta.height)
    }
    fn bands(&self) -> usize {
        self.bands
    }
    fn sample_type(&self) -> SampleType {
        self.sample_type
    }
    fn nodata(&self) -> Option<f64> {
        self.meta.nodata
    }
    fn read(&mut self, w: Rect) -> Result<Bands> {
        Ok(mapfilter_core::with_type!(self.sample_type, T => T::wrap(self.read_typed::<T>(w)?)))
    }
}

impl ImageSink for OutputRaster {
    fn write(&mut self, window: Rect, bands: &Bands) -> Result<()> {
        with_bands!(bands, planes => {
            for (i, p) in planes.iter().enumerate() {
                self.write_band(i + 1, window, p.data.clone())?;
            }
            Ok(())
        })
    }
}

/// One level of an [`OutputRaster`] as an [`ImageSink`]: 0 the raster, k its
/// k-th overview.
pub struct LevelSink<'a> {
    pub raster: &'a mut OutputRaster,
    pub level: usize,
}

impl ImageSink for LevelSink<'_> {
    fn write(&mut self, window: Rect, bands: &Bands) -> Result<()> {
        with_bands!(bands, planes => {
            for (i, p) in planes.iter().enumerate() {
                self.raster.write_level_band(self.level, i + 1, window, p.data.clone())?;
            }
            Ok(())
        })
    }
}
