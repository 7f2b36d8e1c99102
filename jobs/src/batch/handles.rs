//! A batch run's handles of each mosaic ([`Opened`]): opened once per task
//! in flight, not per task, and given the mosaic's coordinate system read
//! once.

use crate::job::observer::Observer;
use crate::job::smooth::{self as job, Prefetched, SmoothSpec};
use mapfilter_core::error::{Error, Result};
use mapfilter_core::method::ClassSmoother;
use mapfilter_gdal::class_raster::ClassRaster;
use std::path::Path;
use std::sync::Mutex;

/// The run's handles of each mosaic: idle ones wait here between tasks, so
/// that a mosaic's VRT, the sources GDAL opens under it (each a GeoTIFF
/// header and its georeferencing) are opened once per worker, not once per
/// task. Each task holds a handle of its own while it runs: GDAL handles are
/// not thread-safe, and one handle shared by every worker serialized all of
/// the batch's decoding behind one lock (issue 39: 16 tasks on 64 cores
/// decoded on about one).
pub(super) struct Opened {
    idle: Vec<Mutex<Vec<ClassRaster>>>,
    /// Each mosaic's coordinate system as GDAL gives it, read by its first
    /// handle only: PROJ's export of a system without an EPSG code (the
    /// MODIS maps') searches its database by name, and handles opened at
    /// once for the first tasks did it together, on fresh PROJ contexts,
    /// behind SQLite's locks (370 thousand context switches in a batch of
    /// 16 tasks in flight on the one-GPU node; decision 0039).
    projection: Vec<Mutex<Option<String>>>,
}

impl Opened {
    pub(super) fn new(mosaics: usize) -> Self {
        Opened {
            idle: (0..mosaics).map(|_| Mutex::new(Vec::new())).collect(),
            projection: (0..mosaics).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// A new handle of mosaic `mosaic` (at `path`), its coordinate system
    /// read by the first one opened and given to the others; the first
    /// holds back the others until it has it.
    fn open(&self, mosaic: usize, path: &Path) -> Result<ClassRaster> {
        let mut known = self.projection[mosaic].lock().expect("mosaic lock");
        if let Some(projection) = known.clone() {
            drop(known);
            let mut raster = open_on_gdal_thread(path, false)?;
            raster.meta.projection = projection;
            return Ok(raster);
        }
        let raster = open_on_gdal_thread(path, true)?;
        *known = Some(raster.meta.projection.clone());
        Ok(raster)
    }

    /// Smooths `spec` (a window of mosaic `mosaic`, read with the default
    /// band) on an idle handle of the mosaic, opening one if none is idle.
    /// A failed run drops its handle, so that the next task opens it afresh.
    pub(super) fn smooth(
        &self,
        mosaic: usize,
        spec: &SmoothSpec,
        prefetched: Option<Prefetched>,
        method: &dyn ClassSmoother,
        observer: &mut dyn Observer,
    ) -> Result<job::SmoothReport> {
        let idle = self.idle[mosaic].lock().expect("mosaic lock").pop();
        let raster = match idle {
            Some(raster) => raster,
            None => self.open(mosaic, &spec.input)?,
        };
        let raster = Mutex::new(raster);
        let done = job::run_shared(spec, &raster, prefetched, method, observer);
        if done.is_ok() {
            let raster = raster.into_inner().unwrap_or_else(|e| e.into_inner());
            self.idle[mosaic].lock().expect("mosaic lock").push(raster);
        }
        done
    }
}

/// Opens `path` on one of [`mapfilter_gdal::threads`]' long-lived threads: its
/// coordinate system (`with_projection`; a VRT's is parsed in any case) is
/// read there through the PROJ context that the outputs' threads keep
/// warm, not through a cold one on a worker.
fn open_on_gdal_thread(path: &Path, with_projection: bool) -> Result<ClassRaster> {
    let path = path.to_path_buf();
    mapfilter_gdal::threads::run(move || match with_projection {
        true => ClassRaster::open(&path),
        false => ClassRaster::open_without_projection(&path),
    })
    .recv()
    .map_err(|_| Error::io("opening the mosaic failed (a GDAL thread stopped)"))?
}
