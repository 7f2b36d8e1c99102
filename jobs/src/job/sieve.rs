//! The sieve as a job: a class raster's polygons smaller than a threshold
//! merged into their largest neighbour, GeoTIFF in, GeoTIFF out with the
//! input's georeferencing, nodata, colours and category names
//! ([`sieve_file`], `mapfilter sieve`), and the minimum mapping unit of a
//! smoothing ([`MmuPlan`], `smooth --mmu`): the smoothed raster staged
//! beside the output and sieved into it. The algorithm is the core's
//! [`mapfilter_core::sieve`]; this module owns the files around it.

use gdal::Dataset;
use mapfilter_core::bail;
use mapfilter_core::error::{Error, Result, Setting};
use mapfilter_core::output::{Target, TempFile};
use mapfilter_core::progress::Progress;
use mapfilter_core::sieve::threshold::Threshold;
use mapfilter_core::sieve::{CACHE_BYTES, Connectivity, SieveOptions, SieveStats, sieve};
use mapfilter_gdal::class_raster::{self, ClassRaster};
use mapfilter_gdal::output_options::OutputCompression;
use mapfilter_gdal::output_raster::{OutputRaster, OutputSpec};
use mapfilter_gdal::sieve_area::dataset_pixel_area;
use std::path::Path;

/// One line on what a sieve did.
pub fn summary(stats: &SieveStats) -> String {
    format!(
        "threshold {} px: {} of {} polygons were smaller, {} merged, {} pixels changed, in {:.3} s",
        stats.threshold,
        stats.small,
        stats.polygons,
        stats.merged,
        stats.pixels_changed,
        stats.wall.as_secs_f64()
    )
}

/// The threshold in pixels for the raster at `path` (an area converted
/// with its pixel's ground area; one of at most a pixel refused unless
/// `allow_subpixel`).
pub fn threshold_pixels(path: &Path, threshold: &Threshold, allow_subpixel: bool) -> Result<u64> {
    threshold_in(&class_raster::open(path)?, path, threshold, allow_subpixel)
}

/// [`threshold_pixels`] on the raster `ds` already open at `path`.
fn threshold_in(
    ds: &Dataset,
    path: &Path,
    threshold: &Threshold,
    allow_subpixel: bool,
) -> Result<u64> {
    threshold
        .pixels(|| dataset_pixel_area(ds), allow_subpixel)
        .map_err(|e| e.context(path.display()))
}

/// Connectivity and how the raster is gone through.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub connectivity: Connectivity,
    /// Rows read at a time (`None`: about 4 M pixels).
    pub strip_rows: Option<usize>,
    /// Bytes of runs kept between passes.
    pub cache_bytes: usize,
}

impl Layout {
    /// `connectivity` with the default strips and cache.
    pub fn new(connectivity: Connectivity) -> Self {
        Layout {
            connectivity,
            strip_rows: None,
            cache_bytes: CACHE_BYTES,
        }
    }
}

/// Sieves the class raster `input` into a new GeoTIFF `output` that keeps
/// its georeferencing, nodata, colours and category names.
pub fn sieve_file(
    input: &Path,
    output: &Target,
    threshold: &Threshold,
    layout: Layout,
    compression: OutputCompression,
    quiet: bool,
) -> Result<SieveStats> {
    // One open for the mask and the threshold's pixel area.
    let ds = class_raster::open(input)?;
    check_mask(&ds, input)?;
    let threshold = threshold_in(&ds, input, threshold, false)?;
    drop(ds);
    let mut source = ClassRaster::open(input)?;
    let spec = OutputSpec::like(&source, compression);
    let mut sink = OutputRaster::create(output, &spec)?;
    let options = SieveOptions {
        strip_rows: layout.strip_rows,
        cache_bytes: layout.cache_bytes,
        ..SieveOptions::new(threshold, layout.connectivity, source.nodata_code())
    };
    let stats = sieve(
        &mut source,
        &mut sink,
        &options,
        &Progress::new(quiet, "sieve"),
    )?;
    sink.finish()?;
    Ok(stats)
}

/// gdal_sieve.py leaves out the pixels of the band's mask; a nodata value
/// is the one mask this command reads, so others are refused.
fn check_mask(ds: &Dataset, input: &Path) -> Result<()> {
    let band = ds
        .rasterband(1)
        .map_err(mapfilter_gdal::errors::gdal_error)?;
    let flags = band
        .mask_flags()
        .map_err(mapfilter_gdal::errors::gdal_error)?;
    if !(flags.is_all_valid() || flags.is_nodata()) {
        bail!(
            input,
            format!(
                "{}: band 1 has a mask other than a nodata value (an alpha band or a mask file)",
                input.display()
            ),
            hint = "set a nodata value instead (gdal_translate -a_nodata CODE), or drop the mask"
        );
    }
    Ok(())
}

/// What a minimum mapping unit will do, checked before smoothing starts:
/// where the smoothing writes and what is sieved after. Without a unit the
/// output itself; with one a scratch raster beside the output (a
/// registered temp file, removed on any failure or signal), sieved into
/// the output.
#[derive(Debug)]
pub struct MmuPlan {
    target: Target,
    sieve: Option<(Threshold, Connectivity, TempFile)>,
    /// The unit as given.
    given: String,
}

/// What a minimum mapping unit did ([`MmuPlan::apply`]).
#[derive(Debug)]
pub struct MmuDone {
    pub stats: SieveStats,
    /// Rows for a report: the unit as given and in pixels, the pixels and
    /// patches it changed.
    pub rows: Vec<(String, String)>,
}

impl MmuPlan {
    /// Checks the unit `mmu` (pixels or an area, as given) against `input`
    /// (an area needs its pixel size; one of at most a pixel is refused
    /// unless `allow_subpixel`) and picks where smoothing writes.
    pub fn new(
        mmu: Option<&str>,
        connectivity: Connectivity,
        input: &Path,
        output: &Target,
        allow_subpixel: bool,
    ) -> Result<MmuPlan> {
        let Some(text) = mmu else {
            return Ok(MmuPlan {
                target: output.clone(),
                sieve: None,
                given: String::new(),
            });
        };
        let threshold: Threshold = text.parse().map_err(|e: Error| e.context(Setting::Mmu))?;
        // In pixels from here: the smoothed raster has the input's pixels.
        let threshold = Threshold::Pixels(
            threshold_pixels(input, &threshold, allow_subpixel)
                .map_err(|e| e.context(Setting::Mmu))?,
        );
        let stage = TempFile::scratch(&output.dir(), "mmu-smoothed.tif")?;
        // The smoothed raster replaces the (empty) scratch file by rename.
        let target = Target::check(stage.path(), true, &[input])?;
        Ok(MmuPlan {
            target,
            sieve: Some((threshold, connectivity, stage)),
            given: text.to_string(),
        })
    }

    /// Where smoothing writes: the output, or the stage with a unit.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// With a unit, sieves the smoothed stage into `output` and says what
    /// it did: the sieve's figures ([`summary`]) and rows for a report (the
    /// unit as given and in pixels, the pixels and patches it changed). The
    /// stage stays, for a report of the smoothing before the MMU
    /// ([`MmuPlan::smoothed`]), until the plan is dropped.
    pub fn apply(
        &mut self,
        output: &Target,
        compression: OutputCompression,
        quiet: bool,
    ) -> Result<Option<MmuDone>> {
        let Some((threshold, connectivity, stage)) = &mut self.sieve else {
            return Ok(None);
        };
        // Locked again: the rename that filled it replaced the locked file.
        stage.relock();
        let stats = sieve_file(
            stage.path(),
            output,
            threshold,
            Layout::new(*connectivity),
            compression,
            quiet,
        )?;
        let rows = vec![
            (
                "minimum mapping unit".into(),
                format!(
                    "{} ({} px, {}-connected), applied after smoothing: the comparison is of the smoothed output before it",
                    self.given,
                    stats.threshold,
                    if *connectivity == Connectivity::Eight {
                        8
                    } else {
                        4
                    }
                ),
            ),
            (
                "changed by the minimum mapping unit".into(),
                format!(
                    "{} pixels, in {} of {} patches",
                    stats.pixels_changed, stats.merged, stats.polygons
                ),
            ),
        ];
        Ok(Some(MmuDone { stats, rows }))
    }

    /// The smoothed raster before the minimum mapping unit, if there is one.
    pub fn smoothed(&self) -> Option<&Path> {
        self.sieve.as_ref().map(|(_, _, stage)| stage.path())
    }
}
