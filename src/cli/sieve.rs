//! `mapfilter sieve` (minimum mapping unit) and `smooth --mmu`: their
//! arguments, onto the sieve job ([`crate::job::sieve`]).

use super::compress_args::CompressArgs;
use crate::error::Result;
use crate::gdal::output_options::OutputCompression;
use crate::job::sieve::{Layout, MmuPlan, sieve_file, summary, threshold_pixels};
use crate::output::Target;
use crate::sieve::threshold::Threshold;
use crate::sieve::{CACHE_BYTES, Connectivity};
use clap::Args;
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

/// `smooth --mmu` and `--mmu-connectivity`.
#[derive(Args, Debug, Clone)]
pub struct MmuArgs {
    /// Minimum mapping unit: after smoothing, polygons smaller than this
    /// (pixels, or an area: 25ha, 1acre, 0.5km2, 2500m2) join their largest
    /// neighbour, as `mapfilter sieve` does (areas as there: geographic
    /// rasters in metres at the centre latitude). In a batch each mosaic is
    /// sieved as one raster once all its tasks are smoothed (by the run that
    /// smooths its last task), so a patch crossing tiles is one patch: the
    /// outputs equal `smooth --mmu` of the merged mosaic.
    #[arg(long, value_name = "PIXELS|AREA")]
    pub mmu: Option<String>,
    /// Pixels that touch for --mmu: 4 or 8.
    #[arg(long, default_value = "4", value_parser = parse_connectivity, value_name = "4|8")]
    pub mmu_connectivity: Connectivity,
}

impl MmuArgs {
    /// The unit checked against `input` and where smoothing writes
    /// ([`MmuPlan::new`]).
    pub fn plan(&self, input: &Path, output: &Target, allow_subpixel: bool) -> Result<MmuPlan> {
        MmuPlan::new(
            self.mmu.as_deref(),
            self.mmu_connectivity,
            input,
            output,
            allow_subpixel,
        )
    }
}

/// Applies `smooth --mmu` once the smoothing is written (says what it did
/// unless `quiet`): the report's rows of what the unit changed, none
/// without one.
pub fn apply_mmu(
    mmu: &mut MmuPlan,
    output: &Target,
    compression: OutputCompression,
    quiet: bool,
) -> Result<Vec<(String, String)>> {
    let Some(done) = mmu.apply(output, compression, quiet)? else {
        return Ok(Vec::new());
    };
    if !quiet {
        eprintln!("minimum mapping unit: {}", summary(&done.stats));
    }
    Ok(done.rows)
}
