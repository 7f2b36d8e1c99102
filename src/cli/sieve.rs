//! `mapfilter sieve` (minimum mapping unit) and `smooth --mmu`: argument
//! parsing and file handling around [`crate::sieve`].

use super::compress_args::CompressArgs;
use crate::bail;
use crate::error::{Error, Result};
use crate::gdal::class_raster::{self, ClassRaster};
use crate::gdal::output_options::OutputCompression;
use crate::gdal::output_raster::{OutputRaster, OutputSpec};
use crate::gdal::sieve_area::dataset_pixel_area;
use crate::output::{Target, TempFile};
use crate::progress::Progress;
use crate::sieve::threshold::Threshold;
use crate::sieve::{CACHE_BYTES, Connectivity, SieveOptions, SieveStats, sieve};
use clap::Args;
use gdal::Dataset;
use std::path::{Path, PathBuf};

/// Help shared by `--threshold` and `--mmu` on how areas become pixels.
const AREA_HELP: &str = "A polygon is a patch of connected pixels of one code; it goes when it has fewer pixels than the threshold (or a smaller area), taking the code of its largest neighbour as gdal_sieve.py does. Nodata pixels belong to no polygon and never change. Areas use the pixel size: projected rasters in their linear unit, converted to metres; geographic ones in metres on the ellipsoid at the raster's centre latitude. The exact rule: docs/sieve.md.";

#[derive(Args, Debug)]
#[command(after_help = AREA_HELP)]
pub struct SieveArgs {
    /// Input class raster (band 1, Byte or UInt16 codes), any format GDAL reads.
    pub input: PathBuf,
    /// Output GeoTIFF (written to a temp file beside it, renamed on success).
    pub output: PathBuf,
    /// Polygons smaller than this join their largest neighbour: pixels (25)
    /// or an area (25ha, 1acre, 0.5km2, 2500m2: below that area).
    #[arg(long, short = 's', value_name = "PIXELS|AREA")]
    pub threshold: String,
    /// Pixels that touch: 4 (edges, gdal_sieve.py's default) or 8 (edges and corners).
    #[arg(long, short = 'c', default_value = "4", value_parser = parse_connectivity, value_name = "4|8")]
    pub connectivity: Connectivity,
    /// Rows read at a time (default: about 4 M pixels); the result does not depend on it.
    #[arg(long, hide = true)]
    pub strip_rows: Option<usize>,
    /// MiB of runs kept between passes (default 256); the result does not depend on it.
    #[arg(long, hide = true)]
    pub cache_mib: Option<usize>,
    /// Round an area of at most one pixel up to 2 pixels (single pixels go),
    /// with a warning, instead of refusing it.
    #[arg(long)]
    pub allow_subpixel: bool,
    #[command(flatten)]
    pub compression: CompressArgs,
    /// No progress bar and no summary.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub overwrite: super::output_args::OverwriteArg,
}

pub(super) fn parse_connectivity(text: &str) -> Result<Connectivity, String> {
    text.parse::<u8>()
        .ok()
        .and_then(Connectivity::from_number)
        .ok_or_else(|| format!("'{text}' is not 4 or 8"))
}

pub fn run(args: SieveArgs) -> Result<()> {
    let threshold: Threshold = args.threshold.parse()?;
    // An area becomes pixels (or is refused) before anything is written.
    let threshold = Threshold::Pixels(threshold_pixels(
        &class_raster::open(&args.input)?,
        &args.input,
        &threshold,
        args.allow_subpixel,
    )?);
    let target = Target::check(&args.output, args.overwrite.overwrite, &[&args.input])?;
    let stats = sieve_file(
        &args.input,
        &target,
        &threshold,
        Layout {
            connectivity: args.connectivity,
            strip_rows: args.strip_rows,
            cache_bytes: args.cache_mib.map_or(CACHE_BYTES, |m| m << 20),
        },
        args.compression.compression()?,
        args.quiet,
    )?;
    if !args.quiet {
        eprintln!("wrote {} ({})", args.output.display(), summary(&stats));
    }
    Ok(())
}

/// One line on what a sieve did.
fn summary(stats: &SieveStats) -> String {
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

/// The threshold in pixels for the raster `ds` at `path`.
fn threshold_pixels(
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
struct Layout {
    connectivity: Connectivity,
    strip_rows: Option<usize>,
    cache_bytes: usize,
}

/// Sieves the class raster `input` into a new GeoTIFF `output` that keeps
/// its georeferencing, nodata, colours and category names.
fn sieve_file(
    input: &Path,
    output: &Target,
    threshold: &Threshold,
    layout: Layout,
    compression: OutputCompression,
    quiet: bool,
) -> Result<SieveStats> {
    let ds = class_raster::open(input)?;
    check_mask(&ds, input)?;
    let threshold = threshold_pixels(&ds, input, threshold, false)?;
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
    let band = ds.rasterband(1).map_err(crate::gdal::errors::gdal_error)?;
    let flags = band.mask_flags().map_err(crate::gdal::errors::gdal_error)?;
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

/// `smooth --mmu` and `--mmu-connectivity`.
#[derive(Args, Debug, Clone)]
pub struct MmuArgs {
    /// Minimum mapping unit: after smoothing, polygons smaller than this
    /// (pixels, or an area: 25ha, 1acre, 0.5km2, 2500m2) join their largest
    /// neighbour, as `mapfilter sieve` does (areas as there: geographic
    /// rasters in metres at the centre latitude).
    #[arg(long, value_name = "PIXELS|AREA")]
    pub mmu: Option<String>,
    /// Pixels that touch for --mmu: 4 or 8.
    #[arg(long, default_value = "4", value_parser = parse_connectivity, value_name = "4|8")]
    pub mmu_connectivity: Connectivity,
}

/// What `--mmu` will do, checked before smoothing starts.
/// Where `smooth --mmu` smooths into and what it sieves after: without
/// `--mmu` the output itself; with it a scratch raster beside the output
/// (a registered temp file, removed on any failure or signal), sieved into
/// the output.
#[derive(Debug)]
pub struct MmuPlan {
    target: Target,
    sieve: Option<(Threshold, Connectivity, TempFile)>,
    /// `--mmu` as given.
    given: String,
}

impl MmuArgs {
    /// Checks the unit against `input` (an area needs its pixel size; one
    /// of at most a pixel is refused unless `allow_subpixel`) and picks
    /// where smoothing writes.
    pub fn plan(&self, input: &Path, output: &Target, allow_subpixel: bool) -> Result<MmuPlan> {
        let Some(text) = &self.mmu else {
            return Ok(MmuPlan {
                target: output.clone(),
                sieve: None,
                given: String::new(),
            });
        };
        let threshold: Threshold = text.parse().map_err(|e: Error| e.context("--mmu"))?;
        // In pixels from here: the smoothed raster has the input's pixels.
        let threshold = Threshold::Pixels(
            threshold_pixels(
                &class_raster::open(input)?,
                input,
                &threshold,
                allow_subpixel,
            )
            .map_err(|e| e.context("--mmu"))?,
        );
        let stage = TempFile::scratch(&output.dir(), "mmu-smoothed.tif")?;
        // The smoothed raster replaces the (empty) scratch file by rename.
        let target = Target::check(stage.path(), true, &[input])?;
        Ok(MmuPlan {
            target,
            sieve: Some((threshold, self.mmu_connectivity, stage)),
            given: text.clone(),
        })
    }
}

impl MmuPlan {
    /// Where smoothing writes: the output, or the stage with --mmu.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// With --mmu, sieves the smoothed stage into `output`: what it did,
    /// as rows for a report (`--mmu` as given and in pixels, the pixels and
    /// patches it changed). The stage stays, for a report of the smoothing
    /// before the MMU ([`MmuPlan::smoothed`]), until the plan is dropped.
    pub fn apply(
        &mut self,
        output: &Target,
        compression: OutputCompression,
        quiet: bool,
    ) -> Result<Vec<(String, String)>> {
        let Some((threshold, connectivity, stage)) = &mut self.sieve else {
            return Ok(Vec::new());
        };
        // Locked again: the rename that filled it replaced the locked file.
        stage.relock();
        let stats = sieve_file(
            stage.path(),
            output,
            threshold,
            Layout {
                connectivity: *connectivity,
                strip_rows: None,
                cache_bytes: CACHE_BYTES,
            },
            compression,
            quiet,
        )?;
        if !quiet {
            eprintln!("minimum mapping unit: {}", summary(&stats));
        }
        Ok(vec![
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
        ])
    }

    /// The smoothed raster before the minimum mapping unit, if there is one.
    pub fn smoothed(&self) -> Option<&Path> {
        self.sieve.as_ref().map(|(_, _, stage)| stage.path())
    }
}
