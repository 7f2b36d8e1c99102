//! Class rasters in through GDAL: opening and checking inputs (one-line
//! errors for the usual failures), their metadata (georeferencing, pixel
//! width, SRS, nodata, colour table, category names), the band to read,
//! and reading windows as a [`ClassSource`]. Outputs are written by
//! [`super::output_raster`] with the options of [`super::output_options`];
//! GDAL's errors are mapped in [`super::errors`].
//!
//! Nothing here loads a whole raster: reads are windowed, so the engine's
//! memory stays bounded by its tile size.

use super::errors::gdal_error;
use gdal::Dataset;
use gdal::raster::GdalDataType;
use mapfilter_core::bail;
use mapfilter_core::classes::{ClassTable, CodeHistogram};
use mapfilter_core::error::{Error, Result, Setting};
use mapfilter_core::io::ClassSource;
use mapfilter_core::progress::Progress;
use std::ffi::CStr;
use std::path::{Path, PathBuf};
use tiles::Rect;

/// Silences GDAL's own printing to stderr: its messages reach the user
/// through our one-line errors instead, and failures are counted
/// ([`crate::errors`]).
pub fn quiet_gdal() {
    crate::errors::install();
}

/// Cores from which one run's input is decoded on GDAL's threads
/// ([`ClassRaster::open_decoding_in_parallel`]): it paid on the 64-core
/// node, and on a 16-core one it did not (decision 0014: the GPU command
/// unchanged, the host's 0.06–0.5 s slower), so not below 32
/// (docs/decisions/0016-node-throughput.md).
const PARALLEL_DECODING_CORES: usize = 32;

/// Opens any raster GDAL can read, with a one-line error for the usual failures.
pub fn open(path: &Path) -> Result<Dataset> {
    quiet_gdal();
    if !path.exists() {
        bail!(
            input,
            format!("{}: no such file", path.display()),
            hint = "check the input path"
        );
    }
    if path.is_dir() && !path.join("hdr.adf").exists() {
        bail!(
            input,
            format!("{}: is a directory, not a raster", path.display()),
            hint = "give a raster file such as a GeoTIFF"
        );
    }
    let ds = Dataset::open(path).map_err(|_| {
        Error::input(format!("{}: not a raster GDAL can read", path.display()))
            .hint("give a GeoTIFF or another GDAL raster format (`gdalinfo` tells what GDAL sees)")
    })?;
    if ds.raster_count() == 0 {
        bail!(
            input,
            format!("{}: holds no raster band", path.display()),
            hint = "give a raster file, not a vector one"
        );
    }
    Ok(ds)
}

/// The width of a pixel of `ds` in metres (along a row; for a geographic
/// CRS along the parallel at the raster's centre latitude, on its
/// ellipsoid), or why it has none: what kernels in metres are converted with.
pub fn pixel_width(ds: &Dataset) -> Result<mapfilter_core::kernel::PixelWidth> {
    let gt = ds
        .geo_transform()
        .map_err(|_| no_width("has no geotransform"))?;
    let srs = ds
        .spatial_ref()
        .map_err(|_| no_width("has no coordinate system"))?;
    pixel_width_of(gt, ds.raster_size().1, &srs)
}

/// Why a kernel in metres has no pixel width: the raster `why`.
fn no_width(why: &str) -> Error {
    Error::input(format!(
        "a kernel in metres needs the pixel size, but the raster {why}"
    ))
    .hint("give the kernel in pixels (e.g. gaussian:2.5)")
}

/// [`pixel_width`] of a grid given by its geotransform `gt`, its height in
/// pixels `h` (a geographic grid's centre latitude) and its coordinate
/// system as WKT (a mosaic's, whose VRT is not written yet).
pub fn pixel_width_of_wkt(
    gt: [f64; 6],
    h: usize,
    wkt: &str,
) -> Result<mapfilter_core::kernel::PixelWidth> {
    if wkt.trim().is_empty() {
        return Err(no_width("has no coordinate system"));
    }
    let srs = gdal::spatial_ref::SpatialRef::from_wkt(wkt)
        .map_err(|_| no_width("has a coordinate system GDAL cannot read"))?;
    pixel_width_of(gt, h, &srs)
}

fn pixel_width_of(
    gt: [f64; 6],
    h: usize,
    srs: &gdal::spatial_ref::SpatialRef,
) -> Result<mapfilter_core::kernel::PixelWidth> {
    use mapfilter_core::kernel::PixelWidth;
    if srs.is_geographic() {
        if gt[2] != 0.0 || gt[4] != 0.0 {
            return Err(no_width(
                "is rotated (a geographic grid that is not north-up)",
            ));
        }
        let latitude = (gt[3] + gt[5] * h as f64 / 2.0) * srs.angular_units().to_degrees();
        let axes = match (srs.semi_major(), srs.semi_minor()) {
            (Ok(a), Ok(b)) if a > 0.0 && b > 0.0 && b <= a => (a, b),
            _ => return Err(no_width("has no ellipsoid")),
        };
        let ellipsoid = srs
            .get_attr_value("SPHEROID", 0)
            .ok()
            .flatten()
            .filter(|n| !n.is_empty() && n != "unknown")
            .unwrap_or_else(|| format!("a = {} m, b = {:.3} m", axes.0, axes.1));
        let dlon = gt[1] * srs.angular_units().to_degrees();
        Ok(PixelWidth::geographic(dlon, latitude, axes, &ellipsoid))
    } else if srs.is_projected() || srs.is_local() {
        let unit = srs.linear_units_name().unwrap_or_else(|| "unit".into());
        Ok(PixelWidth::projected(
            gt[1].hypot(gt[4]),
            srs.linear_units(),
            &unit,
        ))
    } else {
        Err(no_width(
            "has neither a projected nor a geographic coordinate system",
        ))
    }
}

/// The geotransform `g` moved so that pixel (0, 0) is `g`'s pixel (x, y).
pub fn shift_transform(g: [f64; 6], x: f64, y: f64) -> [f64; 6] {
    [
        g[0] + x * g[1] + y * g[2],
        g[1],
        g[2],
        g[3] + x * g[4] + y * g[5],
        g[4],
        g[5],
    ]
}

/// Georeferencing and display metadata that outputs inherit from inputs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RasterMeta {
    pub width: usize,
    pub height: usize,
    pub geo_transform: Option<[f64; 6]>,
    /// Coordinate system as WKT ("" when none).
    pub projection: String,
    pub nodata: Option<f64>,
    /// Colour table entries as RGBA (band 1).
    pub colors: Vec<[i16; 4]>,
    /// Category names by code (band 1).
    pub category_names: Vec<String>,
}

impl RasterMeta {
    /// Everything, the coordinate system included.
    pub fn read(ds: &Dataset) -> Result<Self> {
        Ok(RasterMeta {
            projection: ds.projection(),
            ..Self::read_without_projection(ds)?
        })
    }

    /// Everything but the coordinate system (left ""): GDAL builds that
    /// through PROJ's database, which costs more than the rest together.
    pub fn read_without_projection(ds: &Dataset) -> Result<Self> {
        Self::read_band(ds, 1)
    }

    /// [`RasterMeta::read_without_projection`] of band `band` (1-based).
    pub fn read_band(ds: &Dataset, band: usize) -> Result<Self> {
        let (width, height) = ds.raster_size();
        let band = ds.rasterband(band).map_err(gdal_error)?;
        let colors = band
            .color_table()
            .map(|ct| {
                (0..ct.entry_count())
                    .filter_map(|i| ct.entry_as_rgb(i))
                    .map(|e| [e.r, e.g, e.b, e.a])
                    .collect()
            })
            .unwrap_or_default();
        // SAFETY: the band handle is valid while `band` lives; GDAL owns the list.
        let category_names = unsafe {
            let list = gdal_sys::GDALGetRasterCategoryNames(band.c_rasterband());
            let mut names = Vec::new();
            if !list.is_null() {
                let mut i = 0;
                while !(*list.add(i)).is_null() {
                    names.push(CStr::from_ptr(*list.add(i)).to_string_lossy().into_owned());
                    i += 1;
                }
            }
            names
        };
        Ok(RasterMeta {
            width,
            height,
            geo_transform: ds.geo_transform().ok(),
            projection: String::new(),
            nodata: band.no_data_value(),
            colors,
            category_names,
        })
    }

    /// The area of a pixel: in the CRS's unit² for a projected raster, in
    /// m² on the CRS's ellipsoid (WGS84 where it names none) row by row for
    /// a north-up geographic one.
    pub fn pixel_area(&self) -> mapfilter_core::pixel_area::PixelArea {
        use gdal::spatial_ref::SpatialRef;
        use mapfilter_core::pixel_area::PixelArea;
        let srs = SpatialRef::from_wkt(&self.projection).ok();
        if let (Some(s), Some(gt)) = (&srs, self.geo_transform)
            && s.is_geographic()
            && gt[2] == 0.0
            && gt[4] == 0.0
        {
            let (a, b) = match (s.semi_major(), s.semi_minor()) {
                (Ok(a), Ok(b)) if a > 0.0 && b > 0.0 && b <= a => (a, b),
                _ => (6_378_137.0, 6_356_752.314_245_179),
            };
            return PixelArea::geographic(gt, self.height, a, b);
        }
        let unit = srs.and_then(|s| {
            if s.is_projected() || s.is_local() {
                s.linear_units_name()
            } else if s.is_geographic() {
                Some("degree".into())
            } else {
                None
            }
        });
        PixelArea::from_geotransform(self.geo_transform, unit.as_deref())
    }

    /// The geotransform of an output whose pixel (0,0) is input pixel (offset, offset).
    pub fn shifted_transform(&self, offset: usize) -> Option<[f64; 6]> {
        self.geo_transform
            .map(|g| shift_transform(g, offset as f64, offset as f64))
    }
}

/// Storage type of a class raster band.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassType {
    Byte,
    UInt16,
}

impl ClassType {
    pub fn max_code(self) -> u16 {
        match self {
            ClassType::Byte => u8::MAX as u16,
            ClassType::UInt16 => u16::MAX,
        }
    }

    /// The GDAL sample type of an output of these codes.
    pub fn gdal_type(self) -> gdal::raster::GdalDataType {
        match self {
            ClassType::Byte => gdal::raster::GdalDataType::UInt8,
            ClassType::UInt16 => gdal::raster::GdalDataType::UInt16,
        }
    }

    /// Bytes a pixel takes in the file.
    pub fn bytes(self) -> usize {
        match self {
            ClassType::Byte => 1,
            ClassType::UInt16 => 2,
        }
    }
}

/// Which band of an input holds the classes and what its nodata is: GDAL's
/// `-b BAND` and `--src-nodata` (the `Default` takes band 1 of a single-band
/// raster, with the file's nodata).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BandChoice {
    /// 1-based band; `None`: band 1, and a raster of several bands is refused
    /// (its bands are rarely classes: an RGB photo's band 1 would smooth as
    /// 256 "classes").
    pub band: Option<usize>,
    /// Replaces the file's nodata value; `Some(None)` ignores it.
    pub nodata: Option<Option<f64>>,
}

impl BandChoice {
    /// The band to read, checked against the raster's band count.
    pub fn resolve(&self, path: &Path, bands: usize) -> Result<usize> {
        match self.band {
            None if bands > 1 => bail!(
                input,
                format!(
                    "{}: has {bands} bands, and class smoothing reads one",
                    path.display()
                ),
                hint = "pick the band of class codes with -b BAND (e.g. -b 1), or extract it with gdal_translate -b BAND"
            ),
            None => Ok(1),
            Some(b) if b == 0 || b > bands => bail!(
                usage,
                format!(
                    "{}: -b {b} is not a band (the raster has {bands})",
                    path.display()
                ),
                hint = "bands are numbered from 1, as in GDAL (`mapfilter info` shows the count)"
            ),
            Some(b) => Ok(b),
        }
    }
}

/// A nodata value as given (`--src-nodata`, a batch plan's `src_nodata`):
/// a number, or `none` (no nodata: every value is a class).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Nodata(pub Option<f64>);

impl std::str::FromStr for Nodata {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        parse_nodata(text).map(Nodata)
    }
}

impl std::fmt::Display for Nodata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) => write!(f, "{v}"),
            None => write!(f, "none"),
        }
    }
}

/// A nodata value as `--src-nodata` / `--dst-nodata` take it: a number or `none`.
pub fn parse_nodata(text: &str) -> std::result::Result<Option<f64>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    t.parse::<f64>()
        .ok()
        .filter(|v| !v.is_nan())
        .map(Some)
        .ok_or_else(|| format!("'{text}' is neither a number nor 'none'"))
}

/// Runs `f` with the coordinate system `wkt`, parsed once per thread.
///
/// `GDALDataset::SetProjection` parses its text (GIS axis order) and hands
/// the result to `SetSpatialRef`; parsing searches PROJ's database for the
/// datum's name (through every name, for a datum with no EPSG entry). A
/// batch writes many outputs in one coordinate system on a few long-lived
/// threads ([`crate::threads`]), so each thread parses it once and
/// sets the same object on every output (GDAL copies it).
pub(super) fn with_parsed_srs<T>(
    wkt: &str,
    f: impl FnOnce(&gdal::spatial_ref::SpatialRef) -> gdal::errors::Result<T>,
) -> Result<T> {
    use gdal::spatial_ref::{AxisMappingStrategy, SpatialRef};
    use std::cell::RefCell;
    use std::mem::ManuallyDrop;
    // Not dropped when the thread ends: GDAL's PROJ context of the thread
    // may be gone by then (the order of thread-local destructors is not
    // defined).
    thread_local! {
        static PARSED: RefCell<Option<(String, ManuallyDrop<SpatialRef>)>> =
            const { RefCell::new(None) };
    }
    PARSED.with(|parsed| {
        let mut parsed = parsed.borrow_mut();
        if parsed.as_ref().is_none_or(|(text, _)| text != wkt) {
            if let Some((_, old)) = parsed.take() {
                drop(ManuallyDrop::into_inner(old));
            }
            let mut srs = SpatialRef::from_wkt(wkt).map_err(gdal_error)?;
            srs.set_axis_mapping_strategy(AxisMappingStrategy::TraditionalGisOrder);
            *parsed = Some((wkt.to_string(), ManuallyDrop::new(srs)));
        }
        let (_, srs) = parsed.as_ref().expect("parsed above");
        f(srs).map_err(gdal_error)
    })
}

/// An opened class raster: one band of the file (band 1 unless `-b`).
pub struct ClassRaster {
    path: PathBuf,
    ds: Dataset,
    band: usize,
    pub meta: RasterMeta,
    pub class_type: ClassType,
}

impl ClassRaster {
    /// Opens `path` and checks that band 1 holds integer class codes.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, BandChoice::default())
    }

    /// Opens the band `choice` names, with its nodata override.
    pub fn open_with(path: &Path, choice: BandChoice) -> Result<Self> {
        let mut raster = Self::open_without_projection_with(path, choice)?;
        raster.meta.projection = raster.ds.projection();
        Ok(raster)
    }

    /// [`ClassRaster::open`] leaving `meta.projection` empty, for callers
    /// that read the coordinate system elsewhere (another thread, another
    /// handle: see [`crate::deferred_output`]).
    pub fn open_without_projection(path: &Path) -> Result<Self> {
        Self::open_without_projection_with(path, BandChoice::default())
    }

    /// [`ClassRaster::open_with`] leaving `meta.projection` empty.
    /// [`ClassRaster::open_without_projection_with`], with GDAL's
    /// multi-threaded decoding of the blocks a window spans (GeoTIFF, GDAL
    /// 3.6 and later): `GDAL_NUM_THREADS=ALL_CPUS` for this thread while the
    /// dataset opens, where the user did not set it (`--config`). For one
    /// run's input, whose reader thread decodes every block alone
    /// otherwise: on the 64-core node a 415 Mpx `smooth` on a GPU took
    /// 1.35–1.52 s with it busy 0.86 s, and 0.87–0.88 s with parallel
    /// decoding (its copy 0.77–0.79 s; issue 39). Not for a batch's tasks,
    /// which decode side by side on every core already, nor on fewer than
    /// [`PARALLEL_DECODING_CORES`] cores, where the engine keeps them busy
    /// (on 2 cores the reader's busy time grew from 31 to 131 ms).
    pub fn open_decoding_in_parallel(path: &Path, choice: BandChoice) -> Result<Self> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::open_with_decoding(path, choice, cores >= PARALLEL_DECODING_CORES)
    }

    /// Opens with GDAL's parallel decoding where `parallel` (and the user
    /// did not set `GDAL_NUM_THREADS`).
    fn open_with_decoding(path: &Path, choice: BandChoice, parallel: bool) -> Result<Self> {
        const KEY: &str = "GDAL_NUM_THREADS";
        let user_set = !gdal::config::get_config_option(KEY, "")
            .unwrap_or_default()
            .is_empty();
        if !parallel
            || user_set
            || gdal::config::set_thread_local_config_option(KEY, "ALL_CPUS").is_err()
        {
            return Self::open_without_projection_with(path, choice);
        }
        let opened = Self::open_without_projection_with(path, choice);
        let _ = gdal::config::clear_thread_local_config_option(KEY);
        opened
    }

    pub fn open_without_projection_with(path: &Path, choice: BandChoice) -> Result<Self> {
        let ds = open(path)?;
        let index = choice.resolve(path, ds.raster_count())?;
        let mut meta = RasterMeta::read_band(&ds, index)?;
        if let Some(nodata) = choice.nodata {
            meta.nodata = nodata;
        }
        let band = ds.rasterband(index).map_err(gdal_error)?;
        let class_type = match band.band_type() {
            GdalDataType::UInt8 => ClassType::Byte,
            GdalDataType::UInt16 => ClassType::UInt16,
            other => bail!(
                input,
                format!(
                    "{}: band {index} is {}, class smoothing needs Byte or UInt16 class codes",
                    path.display(),
                    other.name()
                ),
                hint = "for continuous data use `mapfilter filter`; to smooth classes, convert with gdal_translate -ot Byte"
            ),
        };
        if let Some(nd) = meta.nodata
            && (nd.fract() != 0.0 || nd < 0.0 || nd > class_type.max_code() as f64)
        {
            bail!(
                input,
                format!(
                    "{}: nodata value {nd} is not a valid code for this band",
                    path.display()
                ),
                hint = format!(
                    "fix it with gdal_edit.py -a_nodata VALUE, or override it with {}",
                    Setting::SrcNodata.is("VALUE|none")
                )
            );
        }
        Ok(ClassRaster {
            path: path.to_path_buf(),
            ds,
            band: index,
            meta,
            class_type,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The band read (1-based).
    pub fn band(&self) -> usize {
        self.band
    }

    pub fn nodata_code(&self) -> Option<u16> {
        self.meta.nodata.map(|v| v as u16)
    }

    /// Reads the whole raster in strips and tallies the class codes present
    /// (Byte bands are read as bytes: no conversion, half the memory traffic).
    pub fn scan_classes(&mut self, progress: &Progress) -> Result<ClassTable> {
        let hist = self.scan_histogram(progress)?;
        ClassTable::from_histogram(&hist, self.nodata_code())
            .map_err(|e| e.context(self.path.display()))
    }

    /// Reads the whole raster and counts every code (any number of them).
    pub fn scan_histogram(&mut self, progress: &Progress) -> Result<CodeHistogram> {
        let h = self.meta.height;
        self.scan_rows(0..h, progress)
    }

    /// Reads `rows` of the raster and counts every code in them.
    pub fn scan_rows(
        &mut self,
        rows: std::ops::Range<usize>,
        progress: &Progress,
    ) -> Result<CodeHistogram> {
        progress.start(self.strips_in(&rows), "scan");
        let hist = self.count_rows(rows, progress)?;
        progress.finish();
        Ok(hist)
    }

    /// [`ClassRaster::scan_rows`] as one part of a scan `progress` was
    /// started for: a step per strip of [`ClassRaster::strips_in`].
    pub fn count_rows(
        &mut self,
        rows: std::ops::Range<usize>,
        progress: &Progress,
    ) -> Result<CodeHistogram> {
        let mut hist = CodeHistogram::default();
        match self.class_type {
            ClassType::Byte => self.read_strips::<u8>(rows, progress, |s| hist.add_bytes(s))?,
            ClassType::UInt16 => self.read_strips::<u16>(rows, progress, |s| hist.add(s))?,
        }
        Ok(hist)
    }

    /// Rows per strip a scan reads at once: about 8 MiB of codes.
    fn strip_rows(&self) -> usize {
        ((8 << 20) / self.meta.width.max(1)).max(1)
    }

    /// The strips (progress steps) of a scan of `rows`.
    pub fn strips_in(&self, rows: &std::ops::Range<usize>) -> u64 {
        let end = rows.end.min(self.meta.height);
        end.saturating_sub(rows.start).div_ceil(self.strip_rows()) as u64
    }

    /// Reads `rows`, top to bottom, in strips handed to `each`.
    fn read_strips<T>(
        &mut self,
        rows: std::ops::Range<usize>,
        progress: &Progress,
        mut each: impl FnMut(&[T]),
    ) -> Result<()>
    where
        T: gdal::raster::GdalType + Copy + Default,
    {
        let w = self.meta.width;
        let h = rows.end.min(self.meta.height);
        let strip = self.strip_rows();
        let mut buf = Vec::new();
        let band = self.ds.rasterband(self.band).map_err(gdal_error)?;
        for y in (rows.start..h).step_by(strip) {
            let rows = strip.min(h - y);
            buf.resize(w * rows, T::default());
            mapfilter_core::interrupt::check()?;
            band.read_into_slice::<T>((0, y as isize), (w, rows), (w, rows), &mut buf, None)
                .map_err(|e| gdal_error(e).context(self.path.display()))?;
            each(&buf);
            progress.inc(1);
        }
        Ok(())
    }

    /// Whether the decoded raster fits in half of GDAL's block cache, so
    /// that blocks read once (by a scan) are still there when the engine
    /// reads its tiles.
    pub fn fits_block_cache(&self) -> bool {
        let bytes =
            self.class_type.bytes() as u64 * self.meta.width as u64 * self.meta.height as u64;
        // SAFETY: a plain getter of GDAL's global setting.
        let cache = unsafe { gdal_sys::GDALGetCacheMax64() };
        bytes.saturating_mul(2) <= cache.max(0) as u64
    }
}

impl ClassSource for ClassRaster {
    fn size(&self) -> (usize, usize) {
        (self.meta.width, self.meta.height)
    }

    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        if w.is_empty() {
            return Ok(());
        }
        let band = self.ds.rasterband(self.band).map_err(gdal_error)?;
        band.read_into_slice::<u16>(
            (w.x as isize, w.y as isize),
            (w.width, w.height),
            (w.width, w.height),
            buf,
            None,
        )
        .map_err(|e| gdal_error(e).context(self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapfilter_core::io::ClassSource;

    /// GDAL's parallel decoding gives the pixels of the plain one, over a
    /// window of many blocks.
    #[test]
    fn parallel_decoding_reads_the_same_pixels() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/modis_igbp_2019_2048.tif");
        let window = Rect::new(100, 200, 1500, 900);
        let read = |parallel| {
            let mut r =
                ClassRaster::open_with_decoding(&path, BandChoice::default(), parallel).unwrap();
            let mut buf = vec![u16::MAX; window.area() as usize];
            r.read(window, &mut buf).unwrap();
            buf
        };
        let plain = read(false);
        assert!(plain.iter().any(|&v| v != plain[0]));
        assert_eq!(read(true), plain);
    }
}
