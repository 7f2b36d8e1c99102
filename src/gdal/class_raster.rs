//! Raster I/O through GDAL: opening and checking inputs, reading windows,
//! writing GeoTIFF outputs safely (temp file beside the target, renamed on
//! success, removed on failure) with georeferencing, nodata, colour table and
//! category names carried over.
//!
//! Nothing here loads a whole raster: reads and writes are windowed, so the
//! engine's memory stays bounded by its tile size.

use crate::bail;
use crate::classes::{ClassTable, CodeHistogram};
use crate::error::{Error, Result};
use crate::gdal::errors::Mark;
use crate::io::{ClassSink, ClassSource};
use crate::output::{Target, TempFile, parent_dir};
use crate::progress::Progress;
use gdal::raster::{ColorTable, GdalDataType, RasterCreationOptions};
use gdal::{Dataset, DriverManager};
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use tiles::Rect;

/// Silences GDAL's own printing to stderr: its messages reach the user
/// through our one-line errors instead, and failures are counted
/// ([`crate::gdal::errors`]).
pub fn quiet_gdal() {
    crate::gdal::errors::install();
}

/// Opens any raster GDAL can read, with a one-line error for the usual failures.
pub fn open(path: &Path) -> Result<Dataset> {
    quiet_gdal();
    if !path.exists() {
        bail!(
            format!("{}: no such file", path.display()),
            hint = "check the input path"
        );
    }
    if path.is_dir() && !path.join("hdr.adf").exists() {
        bail!(
            format!("{}: is a directory, not a raster", path.display()),
            hint = "give a raster file such as a GeoTIFF"
        );
    }
    let ds = Dataset::open(path).map_err(|_| {
        Error::new(format!("{}: not a raster GDAL can read", path.display()))
            .hint("give a GeoTIFF or another GDAL raster format (`gdalinfo` tells what GDAL sees)")
    })?;
    if ds.raster_count() == 0 {
        bail!(
            format!("{}: holds no raster band", path.display()),
            hint = "give a raster file, not a vector one"
        );
    }
    Ok(ds)
}

/// The width of a pixel of `ds` in metres (along a row; for a geographic
/// CRS along the parallel at the raster's centre latitude, on its
/// ellipsoid), or why it has none: what kernels in metres are converted with.
pub fn pixel_width(ds: &Dataset) -> Result<crate::kernel::PixelWidth> {
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
    Error::new(format!(
        "a kernel in metres needs the pixel size, but the raster {why}"
    ))
    .hint("give the kernel in pixels (e.g. gaussian:2.5)")
}

/// [`pixel_width`] of a grid given by its geotransform `gt`, its height in
/// pixels `h` (a geographic grid's centre latitude) and its coordinate
/// system as WKT (a mosaic's, whose VRT is not written yet).
pub fn pixel_width_of_wkt(gt: [f64; 6], h: usize, wkt: &str) -> Result<crate::kernel::PixelWidth> {
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
) -> Result<crate::kernel::PixelWidth> {
    use crate::kernel::PixelWidth;
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
    pub fn pixel_area(&self) -> crate::pixel_area::PixelArea {
        use crate::pixel_area::PixelArea;
        use gdal::spatial_ref::SpatialRef;
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
    fn resolve(&self, path: &Path, bands: usize) -> Result<usize> {
        match self.band {
            None if bands > 1 => bail!(
                format!(
                    "{}: has {bands} bands, and class smoothing reads one",
                    path.display()
                ),
                hint = "pick the band of class codes with -b BAND (e.g. -b 1), or extract it with gdal_translate -b BAND"
            ),
            None => Ok(1),
            Some(b) if b == 0 || b > bands => bail!(
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
/// threads ([`crate::gdal::threads`]), so each thread parses it once and
/// sets the same object on every output (GDAL copies it).
fn with_parsed_srs<T>(
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
    /// handle: see [`crate::gdal::deferred_output`]).
    pub fn open_without_projection(path: &Path) -> Result<Self> {
        Self::open_without_projection_with(path, BandChoice::default())
    }

    /// [`ClassRaster::open_with`] leaving `meta.projection` empty.
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
                format!(
                    "{}: nodata value {nd} is not a valid code for this band",
                    path.display()
                ),
                hint = "fix it with gdal_edit.py -a_nodata VALUE, or override it with --src-nodata VALUE|none"
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
        let mut hist = CodeHistogram::default();
        match self.class_type {
            ClassType::Byte => self.read_strips::<u8>(progress, |s| hist.add_bytes(s))?,
            ClassType::UInt16 => self.read_strips::<u16>(progress, |s| hist.add(s))?,
        }
        Ok(hist)
    }

    /// Reads the whole raster, top to bottom, in strips of about 8 MiB handed to `each`.
    fn read_strips<T>(&mut self, progress: &Progress, mut each: impl FnMut(&[T])) -> Result<()>
    where
        T: gdal::raster::GdalType + Copy + Default,
    {
        let (w, h) = (self.meta.width, self.meta.height);
        let strip = (8 << 20) / w.max(1);
        let strip = strip.clamp(1, h.max(1));
        let mut buf = Vec::new();
        let band = self.ds.rasterband(self.band).map_err(gdal_error)?;
        progress.start(h.div_ceil(strip) as u64, "scan");
        for y in (0..h).step_by(strip) {
            let rows = strip.min(h - y);
            buf.resize(w * rows, T::default());
            crate::interrupt::check()?;
            band.read_into_slice::<T>((0, y as isize), (w, rows), (w, rows), &mut buf, None)
                .map_err(|e| gdal_error(e).context(self.path.display()))?;
            each(&buf);
            progress.inc(1);
        }
        progress.finish();
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

/// GeoTIFF compression codecs of outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    None,
    #[default]
    Deflate,
    Lzw,
    Zstd,
}

impl Compression {
    pub const ALL: [Compression; 4] = [
        Compression::None,
        Compression::Deflate,
        Compression::Lzw,
        Compression::Zstd,
    ];

    /// The codec's name as `--compress` and batch plans spell it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Deflate => "deflate",
            Compression::Lzw => "lzw",
            Compression::Zstd => "zstd",
        }
    }
}

/// A codec by name, in any case (batch plans give it as text).
impl std::str::FromStr for Compression {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::new(format!("compression '{s}' is not known"))
                    .hint("use none, deflate, lzw or zstd")
            })
    }
}

/// DEFLATE level of outputs unless one is given. GDAL's default is 6; at 5
/// libdeflate stays with its faster parser and compresses in much less
/// CPU time for slightly larger files on smoothed land cover
/// (docs/decisions/0002-deflate-level-5.md).
pub const DEFAULT_DEFLATE_LEVEL: u8 = 5;

/// Output file formats (`--of`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// A tiled GeoTIFF.
    #[default]
    GTiff,
    /// A Cloud Optimized GeoTIFF with overviews, made by GDAL's COG driver.
    Cog,
}

impl OutputFormat {
    /// GDAL's name of the driver that writes it.
    pub fn driver(self) -> &'static str {
        match self {
            OutputFormat::GTiff => "GTiff",
            OutputFormat::Cog => "COG",
        }
    }
}

/// How the overviews of a COG are computed: the most frequent value for
/// class codes (an average of codes is no class), the mean for continuous
/// data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OverviewResampling {
    #[default]
    Mode,
    Average,
}

impl OverviewResampling {
    fn gdal_name(self) -> &'static str {
        match self {
            OverviewResampling::Mode => "MODE",
            OverviewResampling::Average => "AVERAGE",
        }
    }
}

/// How an output is encoded: its format, the codec and, for DEFLATE
/// (1–12) and ZSTD (1–22), its level (`None`: [`DEFAULT_DEFLATE_LEVEL`],
/// GDAL's default for ZSTD), the user's own creation options (`--co`,
/// applied last so they win) and, for a COG, how its overviews are
/// resampled (MODE unless [`OutputCompression::continuous`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputCompression {
    codec: Compression,
    level: Option<u8>,
    format: OutputFormat,
    extra: Vec<(String, String)>,
    overviews: OverviewResampling,
}

impl OutputCompression {
    /// `codec` at `level`, refused where the codec has no such level.
    pub fn new(codec: Compression, level: Option<u8>) -> Result<Self> {
        let most = match codec {
            Compression::Deflate => 12,
            Compression::Zstd => 22,
            Compression::None | Compression::Lzw => 0,
        };
        match level {
            Some(l) if most == 0 => bail!(
                format!(
                    "--compress-level {l}: {} compression has no levels",
                    codec.name()
                ),
                hint = "levels are for --compress deflate and zstd"
            ),
            Some(l) if !(1..=most).contains(&l) => bail!(
                format!(
                    "--compress-level {l}: {} takes levels 1 to {most}",
                    codec.name()
                ),
                hint = "higher levels make smaller files, more slowly"
            ),
            _ => Ok(OutputCompression {
                codec,
                level,
                ..Default::default()
            }),
        }
    }

    /// The same in `format` with the user's creation options `extra`,
    /// refused unless the format's driver lists every key (and, where it
    /// lists the values a key takes, the value).
    pub fn with_format(self, format: OutputFormat, extra: Vec<(String, String)>) -> Result<Self> {
        crate::gdal::creation_options::check(format.driver(), &extra)?;
        Ok(OutputCompression {
            format,
            extra,
            ..self
        })
    }

    /// The same for continuous data: COG overviews are averaged.
    pub fn continuous(self) -> Self {
        OutputCompression {
            overviews: OverviewResampling::Average,
            ..self
        }
    }

    pub fn format(&self) -> OutputFormat {
        self.format
    }

    /// COG driver options: the codec, its level, the overviews' resampling,
    /// then the user's.
    fn cog_options(&self) -> Vec<(String, String)> {
        let mut options = vec![
            ("BIGTIFF".to_string(), "IF_SAFER".to_string()),
            ("NUM_THREADS".to_string(), "ALL_CPUS".to_string()),
            (
                "OVERVIEW_RESAMPLING".to_string(),
                self.overviews.gdal_name().to_string(),
            ),
        ];
        let codec = match self.codec {
            Compression::None => "NONE",
            Compression::Deflate => "DEFLATE",
            Compression::Lzw => "LZW",
            Compression::Zstd => "ZSTD",
        };
        options.push(("COMPRESS".to_string(), codec.to_string()));
        match (self.codec, self.level) {
            (Compression::Deflate, level) => options.push((
                "LEVEL".to_string(),
                level.unwrap_or(DEFAULT_DEFLATE_LEVEL).to_string(),
            )),
            (Compression::Zstd, Some(level)) => {
                options.push(("LEVEL".to_string(), level.to_string()))
            }
            _ => {}
        }
        options.extend(self.extra.iter().cloned());
        options
    }

    /// GTiff creation options for it.
    fn creation_options(&self) -> Vec<(&'static str, String)> {
        let codec = match self.codec {
            Compression::None => return Vec::new(),
            Compression::Deflate => "DEFLATE",
            Compression::Lzw => "LZW",
            Compression::Zstd => "ZSTD",
        };
        let mut options = vec![
            ("COMPRESS", codec.to_string()),
            ("NUM_THREADS", "ALL_CPUS".to_string()),
        ];
        match (self.codec, self.level) {
            (Compression::Deflate, level) => {
                options.push(("ZLEVEL", level.unwrap_or(DEFAULT_DEFLATE_LEVEL).to_string()))
            }
            (Compression::Zstd, Some(level)) => options.push(("ZSTD_LEVEL", level.to_string())),
            _ => {}
        }
        options
    }
}

/// What an output raster looks like.
#[derive(Clone, Debug)]
pub struct OutputSpec {
    pub width: usize,
    pub height: usize,
    pub bands: usize,
    pub data_type: GdalDataType,
    pub geo_transform: Option<[f64; 6]>,
    pub projection: String,
    pub nodata: Option<f64>,
    pub colors: Vec<[i16; 4]>,
    pub category_names: Vec<String>,
    pub compression: OutputCompression,
}

/// A GeoTIFF being written to a [`TempFile`] beside its target; moved onto
/// the target by [`OutputRaster::finish`] only when every write succeeded,
/// removed if dropped unfinished.
pub struct OutputRaster {
    ds: Option<Dataset>,
    /// The file written; taken by a commit.
    temp: Option<TempFile>,
    /// Where it goes; `None` for scratch rasters that are never kept.
    target: Option<Target>,
    /// GDAL's failure count when the raster was created: any failure after
    /// it (on any thread: see [`crate::gdal::errors`]) fails the output.
    mark: Mark,
    data_type: GdalDataType,
    /// Block width and height of the GeoTIFF.
    block: (usize, usize),
    size: (usize, usize),
    /// Whether every write so far covered whole blocks, so that flushing
    /// after each never writes a block twice.
    aligned: bool,
    /// The output's format and options (a COG is made at the end).
    encoding: OutputCompression,
}

impl OutputRaster {
    /// A new output for `target`, written to a temp file beside it.
    pub fn create(target: &Target, spec: &OutputSpec) -> Result<Self> {
        // Category names live in a `NAME.aux.xml` sidecar: its name must fit too.
        let name = target.path().file_name().unwrap_or_default().len();
        if !spec.category_names.is_empty() && name + ".aux.xml".len() > crate::output::NAME_MAX {
            return Err(Error::new(format!(
                "output name {} is too long to carry the category names ({} bytes; a raster with names takes at most {})",
                target.shown().display(),
                name,
                crate::output::NAME_MAX - ".aux.xml".len()
            ))
            .hint("choose a shorter name"));
        }
        let temp = TempFile::beside(target)?;
        Self::create_in(temp, Some(target.clone()), spec)
    }

    /// A raster in `dir` that is dropped, never kept (a report's baseline).
    pub fn scratch(dir: &Path, spec: &OutputSpec) -> Result<Self> {
        Self::create_in(TempFile::scratch(dir, "scratch.tif")?, None, spec)
    }

    /// The file being written (until [`OutputRaster::finish`]).
    pub fn temp_path(&self) -> &Path {
        self.temp.as_ref().expect("until finished").path()
    }

    fn create_in(temp: TempFile, target: Option<Target>, spec: &OutputSpec) -> Result<Self> {
        quiet_gdal();
        let mark = Mark::now();
        let dir = parent_dir(temp.path());
        let path = temp.path().to_path_buf();
        let driver = DriverManager::get_driver_by_name("GTiff").map_err(gdal_error)?;
        let mut options = RasterCreationOptions::new();
        for (k, v) in block_layout(spec.width, spec.height) {
            options.set_name_value(k, &v).map_err(gdal_error)?;
        }
        options
            .set_name_value("BIGTIFF", "IF_SAFER")
            .map_err(gdal_error)?;
        for (k, v) in spec.compression.creation_options() {
            options.set_name_value(k, &v).map_err(gdal_error)?;
        }
        // A COG takes the user's options when it is made from this file.
        if spec.compression.format == OutputFormat::GTiff {
            for (k, v) in &spec.compression.extra {
                options.set_name_value(k, v).map_err(gdal_error)?;
            }
        }
        let create = crate::output::without_cleanup(|| match spec.data_type {
            GdalDataType::UInt8 => driver.create_with_band_type_with_options::<u8, _>(
                &path,
                spec.width,
                spec.height,
                spec.bands,
                &options,
            ),
            GdalDataType::UInt16 => driver.create_with_band_type_with_options::<u16, _>(
                &path,
                spec.width,
                spec.height,
                spec.bands,
                &options,
            ),
            GdalDataType::Int16 => driver.create_with_band_type_with_options::<i16, _>(
                &path,
                spec.width,
                spec.height,
                spec.bands,
                &options,
            ),
            GdalDataType::Float32 => driver.create_with_band_type_with_options::<f32, _>(
                &path,
                spec.width,
                spec.height,
                spec.bands,
                &options,
            ),
            other => Err(gdal::errors::GdalError::BadArgument(format!(
                "cannot write {} rasters",
                other.name()
            ))),
        });
        let ds = create.map_err(|e| {
            Error::new(format!(
                "cannot create output in {}: {}",
                dir.display(),
                gdal_error(e).cause()
            ))
            .hint("check that the directory is writable and has room")
        })?;
        // The shape GDAL made (the user's options may have changed it).
        let block = ds
            .rasterband(1)
            .map(|b| b.block_size())
            .unwrap_or((256, 256));
        log::debug!(
            "writing {} ({}x{}, {} band(s), {})",
            path.display(),
            spec.width,
            spec.height,
            spec.bands,
            spec.data_type.name()
        );
        let mut out = OutputRaster {
            ds: Some(ds),
            temp: Some(temp),
            target,
            mark,
            data_type: spec.data_type,
            block,
            size: (spec.width, spec.height),
            aligned: true,
            encoding: spec.compression.clone(),
        };
        out.set_metadata(spec)?;
        Ok(out)
    }

    fn dataset(&mut self) -> &mut Dataset {
        self.ds.as_mut().expect("dataset open until finish")
    }

    /// Writes the file's header now (TIFF directory and GeoTIFF keys) rather
    /// than with the first block: exporting the coordinate system to GeoTIFF
    /// keys goes through PROJ's database, which a caller may want done on
    /// its own thread, before the tiles come.
    pub fn write_header(&mut self) -> Result<()> {
        self.flush()?;
        self.checked()
    }

    /// Fails if GDAL reported a failure since the raster was created,
    /// saying when the disk is full.
    fn checked(&self) -> Result<()> {
        let shown = self.shown();
        self.mark
            .check(&format!("cannot write {}", shown.display()))
            .map_err(|e| self.write_failure(e))
    }

    /// Hands GDAL's cached blocks of this output to the file.
    fn flush(&mut self) -> Result<()> {
        let what = format!("cannot write {}", self.shown().display());
        let ds = self.ds.as_mut().expect("dataset open until finish");
        // A flush also writes the `.aux.xml` sidecar (category names) by
        // name, so a signal's clean-up must not run in the middle of it.
        let flushed = crate::output::without_cleanup(|| {
            crate::gdal::errors::on_this_thread(&what, || ds.flush_cache())
        });
        self.own(flushed)
    }

    /// A failure of this output, saying so when the disk is full.
    fn write_failure(&self, cause: Error) -> Error {
        let dir = parent_dir(self.temp_path());
        let written = std::fs::metadata(self.temp_path()).ok().map(|m| m.len());
        match crate::output::disk_full_cause(&dir, written) {
            Some(full) => Error::new(format!("cannot write {}: {full}", self.shown().display()))
                .hint("free some space or write to another disk; nothing was replaced"),
            None => cause.hint("nothing was replaced"),
        }
    }

    /// The result of one of this output's own GDAL calls, failed also when
    /// GDAL reported a failure on this thread during it.
    fn own<T>(&self, call: Result<Result<T, gdal::errors::GdalError>>) -> Result<T> {
        match call {
            Ok(result) => result.map_err(|e| self.write_failure(gdal_error(e))),
            Err(e) => Err(self.write_failure(e)),
        }
    }

    fn set_metadata(&mut self, spec: &OutputSpec) -> Result<()> {
        let ds = self.dataset();
        if spec.compression.format == OutputFormat::Cog {
            // Carried into the COG, so that `gdalinfo` tells how its
            // overviews were made (GDAL records it nowhere else).
            use gdal::Metadata;
            ds.set_metadata_item(
                "OVERVIEW_RESAMPLING",
                spec.compression.overviews.gdal_name(),
                "",
            )
            .map_err(gdal_error)?;
        }
        if let Some(gt) = spec.geo_transform {
            ds.set_geo_transform(&gt).map_err(gdal_error)?;
        }
        if !spec.projection.is_empty() {
            with_parsed_srs(&spec.projection, |srs| ds.set_spatial_ref(srs))?;
        }
        for b in 1..=spec.bands {
            let mut band = ds.rasterband(b).map_err(gdal_error)?;
            if spec.nodata.is_some() {
                band.set_no_data_value(spec.nodata).map_err(gdal_error)?;
            }
            if !spec.colors.is_empty() {
                let mut ct = ColorTable::new(gdal::raster::PaletteInterpretation::Rgba);
                for (i, c) in spec.colors.iter().enumerate() {
                    ct.set_color_entry(
                        i as u16,
                        &gdal::raster::ColorEntry::Rgba(gdal::raster::RgbaEntry {
                            r: c[0],
                            g: c[1],
                            b: c[2],
                            a: c[3],
                        }),
                    );
                }
                band.set_color_table(&ct);
            }
            if !spec.category_names.is_empty() {
                let cstrings: Vec<CString> = spec
                    .category_names
                    .iter()
                    .map(|s| CString::new(s.replace('\0', "")).expect("no NUL"))
                    .collect();
                let mut ptrs: Vec<*mut std::ffi::c_char> =
                    cstrings.iter().map(|s| s.as_ptr() as *mut _).collect();
                ptrs.push(std::ptr::null_mut());
                // SAFETY: GDAL copies the NULL-terminated list; the strings outlive the call.
                unsafe {
                    gdal_sys::GDALSetRasterCategoryNames(band.c_rasterband(), ptrs.as_mut_ptr());
                }
            }
        }
        Ok(())
    }

    /// Hands the blocks of `window` to GDAL's writer (and its compression
    /// threads) now rather than at [`OutputRaster::finish`], so that
    /// compression overlaps the computation of later tiles. Only while every
    /// window so far covered whole blocks: a partial block flushed early
    /// would be compressed twice.
    pub fn flush_written(&mut self, window: Rect) -> Result<()> {
        let (bx, by) = self.block;
        let (w, h) = self.size;
        let whole = |start: usize, len: usize, size: usize, b: usize| {
            start.is_multiple_of(b) && (len.is_multiple_of(b) || start + len == size)
        };
        self.aligned &=
            whole(window.x, window.width, w, bx) && whole(window.y, window.height, h, by);
        if self.aligned {
            self.flush()?;
        }
        self.checked()
    }

    /// Writes `data` (row-major, `window.area()` values) into band `band` (1-based).
    pub fn write_band<T: gdal::raster::GdalType + Copy>(
        &mut self,
        band: usize,
        window: Rect,
        data: Vec<T>,
    ) -> Result<()> {
        self.write_level_band(0, band, window, data)
    }

    /// Adds `count` overview levels (factors 2, 4, …, each ⌈size/factor⌉),
    /// left empty ("NONE") for [`OutputRaster::write_level_band`] to fill.
    pub fn add_overviews(&mut self, count: usize) -> Result<()> {
        let factors: Vec<i32> = (1..=count).map(|k| 1 << k).collect();
        let what = format!("cannot add overviews to {}", self.shown().display());
        let ds = self.dataset();
        let made = crate::gdal::errors::on_this_thread(&what, || {
            ds.build_overviews("NONE", &factors, &[])
        });
        self.own(made)
    }

    /// [`OutputRaster::write_band`] into level `level`: 0 the raster
    /// itself, k its k-th overview ([`OutputRaster::add_overviews`]).
    pub fn write_level_band<T: gdal::raster::GdalType + Copy>(
        &mut self,
        level: usize,
        band: usize,
        window: Rect,
        data: Vec<T>,
    ) -> Result<()> {
        let mut buffer = gdal::raster::Buffer::new((window.width, window.height), data);
        let what = format!("cannot write {}", self.shown().display());
        let mut b = self.dataset().rasterband(band).map_err(gdal_error)?;
        if level > 0 {
            b = b.overview(level - 1).map_err(gdal_error)?;
        }
        let written = crate::gdal::errors::on_this_thread(&what, || {
            b.write(
                (window.x as isize, window.y as isize),
                (window.width, window.height),
                &mut buffer,
            )
        });
        self.own(written)
    }

    /// Flushes and closes the raster, checks that GDAL reported no failure
    /// and reads the file back (a truncated file fails here), then syncs it
    /// and moves it onto the target. A COG is made from that GeoTIFF into a
    /// second temp file, checked the same way, and that one is moved.
    pub fn finish(mut self) -> Result<()> {
        self.close_checked()?;
        let temp = self.temp.take().expect("until finished");
        let Some(target) = &self.target else {
            return Ok(());
        };
        match self.encoding.format {
            OutputFormat::GTiff => temp.commit(target),
            OutputFormat::Cog => {
                let cog = make_cog(temp.path(), target, &self.encoding, self.size)?;
                drop(temp);
                cog.commit(target)
            }
        }
    }

    /// Closes a [`OutputRaster::scratch`] raster, checked like
    /// [`OutputRaster::finish`]; the file lives as long as what is returned.
    pub fn finish_scratch(mut self) -> Result<TempFile> {
        self.close_checked()?;
        Ok(self.temp.take().expect("until finished"))
    }

    fn close_checked(&mut self) -> Result<()> {
        if let Some(ds) = self.ds.take() {
            let what = format!("cannot write {}", self.shown().display());
            let closed = crate::output::without_cleanup(|| {
                crate::gdal::errors::on_this_thread(&what, || ds.close())
            });
            self.own(closed)?;
        }
        self.checked()?;
        let (width, height) = self.size;
        let readable = Dataset::open(self.temp_path())
            .ok()
            .is_some_and(|ds| ds.raster_size() == (width, height));
        if readable {
            return Ok(());
        }
        Err(self.checked().err().unwrap_or_else(|| {
            Error::new(format!(
                "the output written for {} does not read back",
                self.shown().display()
            ))
            .hint("nothing was replaced; check the disk")
        }))
    }

    /// The output as the user named it.
    fn shown(&self) -> PathBuf {
        match &self.target {
            Some(t) => t.shown().to_path_buf(),
            None => self.temp_path().to_path_buf(),
        }
    }
}

/// The GeoTIFF block layout of an output of `width`×`height`: 256² tiles;
/// 16² tiles where a side is shorter, unless the raster is also large (a
/// thin raster, 1×10⁸ say): there, 16² tiles would be millions of blocks,
/// each compressed on its own (minutes for what takes a second), so it is
/// written in strips of about 64 K pixels (one row where a row is longer).
fn block_layout(width: usize, height: usize) -> Vec<(&'static str, String)> {
    const STRIP_PIXELS: usize = 1 << 16;
    const LARGE: usize = 1 << 20;
    let tiles = |side: usize| {
        vec![
            ("TILED", "YES".to_string()),
            ("BLOCKXSIZE", side.to_string()),
            ("BLOCKYSIZE", side.to_string()),
        ]
    };
    if width.min(height) >= 256 {
        tiles(256)
    } else if width.saturating_mul(height) <= LARGE {
        tiles(16)
    } else {
        let rows = (STRIP_PIXELS / width.max(1)).clamp(1, height.max(1));
        vec![
            ("TILED", "NO".to_string()),
            ("BLOCKYSIZE", rows.to_string()),
        ]
    }
}

/// Copies the GeoTIFF at `source` into a COG in a new temp file beside
/// `target` with GDAL's COG driver (overviews, tiles and IFDs laid out as
/// the COG layout wants), checked and read back before it may be committed.
fn make_cog(
    source: &Path,
    target: &Target,
    encoding: &OutputCompression,
    size: (usize, usize),
) -> Result<TempFile> {
    let mark = Mark::now();
    let temp = TempFile::beside(target)?;
    let shown = target.shown().display();
    log::info!(
        "making the COG of {shown} (overviews by {})",
        encoding.overviews.gdal_name()
    );
    let input = Dataset::open(source).map_err(gdal_error)?;
    let driver = DriverManager::get_driver_by_name("COG").map_err(gdal_error)?;
    let mut options = RasterCreationOptions::new();
    for (k, v) in encoding.cog_options() {
        options.set_name_value(&k, &v).map_err(gdal_error)?;
    }
    crate::interrupt::check()?;
    // The copy creates its file by name: a signal's clean-up waits for it
    // (a short while: a signal stops the copy) rather than leave a file made
    // after the clean-up.
    let made = crate::output::without_cleanup(|| {
        super::cog::create_copy_interruptible(&input, &driver, temp.path(), &options)
    })
    .map_err(|e| {
        Error::new(format!(
            "cannot write {shown} as COG: {}",
            gdal_error(e).cause()
        ))
    })?;
    crate::output::without_cleanup(|| made.close()).map_err(gdal_error)?;
    let fail = |e: Error| {
        let dir = parent_dir(temp.path());
        let written = std::fs::metadata(temp.path()).ok().map(|m| m.len());
        match crate::output::disk_full_cause(&dir, written) {
            Some(full) => Error::new(format!("cannot write {shown}: {full}"))
                .hint("free some space or write to another disk; nothing was replaced"),
            None => e.hint("nothing was replaced"),
        }
    };
    mark.check(&format!("cannot write {shown} as COG"))
        .map_err(fail)?;
    let readable = Dataset::open(temp.path())
        .ok()
        .is_some_and(|ds| ds.raster_size() == size);
    if !readable {
        return Err(fail(Error::new(format!(
            "the COG written for {shown} does not read back"
        ))));
    }
    Ok(temp)
}

impl Drop for OutputRaster {
    fn drop(&mut self) {
        // The dataset closes before its temp file goes.
        crate::output::without_cleanup(|| drop(self.ds.take()));
        self.temp.take();
    }
}

impl ClassSink for OutputRaster {
    fn write(&mut self, window: Rect, codes: &[u16]) -> Result<()> {
        match self.data_type {
            GdalDataType::UInt8 => {
                self.write_band(1, window, codes.iter().map(|&c| c as u8).collect())
            }
            _ => self.write_band(1, window, codes.to_vec()),
        }?;
        self.flush_written(window)
    }
}

/// Turns a GDAL error into a one-line [`Error`].
pub fn gdal_error(e: gdal::errors::GdalError) -> Error {
    use gdal::errors::GdalError;
    match e {
        GdalError::CplError { msg, .. } | GdalError::NullPointer { msg, .. } if !msg.is_empty() => {
            Error::new(msg)
        }
        other => Error::new(other.to_string()),
    }
}
