//! `mapfilter sample`: a stratified random sample of a map's pixels for
//! labelling from reference data — strata the map's classes or another
//! raster, allocation proportional, equal, fixed or Olofsson's, seeded and
//! reproducible, points at pixel centres in the map's CRS (GeoPackage or
//! CSV). Two streaming passes over the rasters ([`crate::accuracy::scan`]).

use super::output_args::OverwriteArg;
use crate::accuracy::{self, Allocation};
use crate::error::Result;
use crate::gdal::class_raster::{BandChoice, ClassRaster};
use crate::gdal::points::{self, DrawnPoint};
use crate::output::Target;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SampleArgs {
    /// The class raster (map) to sample: any GDAL raster, a batch mosaic VRT too.
    pub map: PathBuf,
    /// Where the points go: a GeoPackage (.gpkg), or CSV (.csv: id,x,y,stratum,map_label).
    #[arg(long)]
    pub out: PathBuf,
    /// Seed of the random draw: the same seed, map and options draw the same points.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Strata other than the map's classes: a class raster on the map's grid.
    #[arg(long, value_name = "RASTER")]
    pub strata: Option<PathBuf>,
    /// Points per stratum: proportional (to area), equal, fixed:N (N per stratum),
    /// or olofsson (total from --target-se and --expected-users, rare strata raised to --min-per-class).
    #[arg(long, default_value = "olofsson")]
    pub allocation: Allocation,
    /// Total number of points (proportional and equal need it; overrides olofsson's computed total).
    #[arg(short = 'n', long = "total", value_name = "TOTAL")]
    pub total: Option<u64>,
    /// olofsson: the standard error of overall accuracy the sample should reach.
    #[arg(long, default_value_t = 0.01)]
    pub target_se: f64,
    /// olofsson: the user's accuracy conjectured for every class.
    #[arg(long, default_value_t = 0.8)]
    pub expected_users: f64,
    /// Fewest points in any stratum (a stratum with fewer pixels gets them all); the estimators need 2.
    /// Default: 50 with olofsson, 2 otherwise.
    #[arg(long, value_name = "N")]
    pub min_per_class: Option<u64>,
    /// No summary on standard output.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub overwrite: OverwriteArg,
    /// -b and --src-nodata apply to the map.
    #[command(flatten)]
    pub bands: super::input_args::BandArgs,
}

pub fn run(args: SampleArgs) -> Result<()> {
    let mut inputs = vec![args.map.as_path()];
    inputs.extend(args.strata.as_deref());
    let target = Target::check(&args.out, args.overwrite.overwrite, &inputs)?;
    let mut map = ClassRaster::open_with(&args.map, args.bands.choice())?;
    let mut strata = args
        .strata
        .as_deref()
        .map(|p| ClassRaster::open_with(p, BandChoice::default()))
        .transpose()?;
    let pixel_area = map.meta.pixel_area();
    let gt = map.meta.geo_transform;
    let projection = map.meta.projection.clone();
    let map_nodata = map.nodata_code();
    let strata_nodata = strata.as_ref().and_then(|s| s.nodata_code());
    let mut layers = accuracy::scan::Layers {
        map: &mut map,
        map_nodata,
        strata: strata
            .as_mut()
            .map(|s| (s as &mut dyn crate::io::ClassSource, strata_nodata)),
    };
    let found = accuracy::scan::strata(&mut layers, &pixel_area)?;
    let rule = match args.allocation {
        Allocation::Olofsson { .. } => Allocation::Olofsson {
            target_se: args.target_se,
            expected_users: args.expected_users,
        },
        other => other,
    };
    let min = args.min_per_class.unwrap_or(match rule {
        Allocation::Olofsson { .. } => 50,
        _ => 2,
    });
    let pixels: Vec<u64> = found.iter().map(|s| s.pixels).collect();
    let areas: Vec<f64> = found.iter().map(|s| s.area).collect();
    let counts = accuracy::allocation::allocate(rule, &pixels, &areas, args.total, min)?;
    let drawn = accuracy::scan::draw(&mut layers, &found, &counts, args.seed)?;
    // Pixel centres in the map's coordinates (pixel coordinates without a geotransform).
    let centre = |col: usize, row: usize| {
        let (c, r) = (col as f64 + 0.5, row as f64 + 0.5);
        match gt {
            Some(g) => (g[0] + c * g[1] + r * g[2], g[3] + c * g[4] + r * g[5]),
            None => (c, r),
        }
    };
    let points: Vec<DrawnPoint> = drawn
        .iter()
        .map(|d| {
            let (x, y) = centre(d.col, d.row);
            DrawnPoint {
                x,
                y,
                stratum: d.stratum,
                map: d.map,
            }
        })
        .collect();
    points::write(&target, &points, &projection)?;
    if !args.quiet {
        println!(
            "{} points in {} strata written to {} (seed {})",
            points.len(),
            found.len(),
            args.out.display(),
            args.seed
        );
        for (s, n) in found.iter().zip(&counts) {
            println!("stratum {}: {} of {} pixels", s.code, n, s.pixels);
        }
    }
    Ok(())
}
