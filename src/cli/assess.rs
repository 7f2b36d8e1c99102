//! `mapfilter assess`: a map's accuracy and class areas from reference
//! points labelled by the user (Olofsson et al. 2014; Stehman 2014 with
//! `--strata`): reads the points (GeoPackage, CSV with x and y, any OGR
//! source; transformed into the map's CRS), looks up the map's class and
//! the stratum at each, counts the strata's pixels in one streaming pass,
//! and writes the estimates as text, JSON, CSV and HTML.

use super::output_args::OverwriteArg;
use crate::accuracy::{self, SamplePoint};
use crate::bail;
use crate::error::Result;
use crate::gdal::class_raster::{BandChoice, ClassRaster};
use crate::gdal::points::ReferencePoint;
use crate::io::ClassSource;
use crate::output::{self, Destination};
use crate::report::accuracy::AccuracyReport;
use crate::report::compare::Input;
use crate::report::numbers::AreaUnit;
use clap::Args;
use std::path::{Path, PathBuf};
use tiles::Rect;

#[derive(Args, Debug)]
pub struct AssessArgs {
    /// The class raster (map) assessed.
    pub map: PathBuf,
    /// The labelled points: GeoPackage, CSV with x and y columns (in the map's CRS), or any OGR point source.
    pub points: PathBuf,
    /// The field (column) of the points holding the reference class codes.
    #[arg(long)]
    pub label: String,
    /// The strata the sample was drawn from, where they are not the map's classes (a raster on the map's grid).
    #[arg(long, value_name = "RASTER")]
    pub strata: Option<PathBuf>,
    /// Write the estimates as JSON (`-`: standard output).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report (`-`: standard output).
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Write one CSV row per class (`-`: standard output).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Unit of the areas shown: ha, km2, m2 (maps in metres), or auto (by size).
    #[arg(long, default_value = "auto")]
    pub area_unit: String,
    /// No summary on standard output.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub overwrite: OverwriteArg,
    /// -b and --src-nodata apply to the map.
    #[command(flatten)]
    pub bands: super::input_args::BandArgs,
}

/// The code of `raster` at pixel (`col`, `row`).
fn code_at(raster: &mut ClassRaster, col: usize, row: usize) -> Result<u16> {
    let mut v = [0u16];
    raster.read(
        Rect {
            x: col,
            y: row,
            width: 1,
            height: 1,
        },
        &mut v,
    )?;
    Ok(v[0])
}

/// The pixel holding map coordinates (`x`, `y`), if inside the raster.
fn pixel_of(gt: Option<[f64; 6]>, size: (usize, usize), x: f64, y: f64) -> Option<(usize, usize)> {
    let (c, r) = match gt {
        Some(g) => {
            let det = g[1] * g[5] - g[2] * g[4];
            if det == 0.0 {
                return None;
            }
            let (dx, dy) = (x - g[0], y - g[3]);
            ((g[5] * dx - g[2] * dy) / det, (g[1] * dy - g[4] * dx) / det)
        }
        None => (x, y),
    };
    let inside = c >= 0.0 && r >= 0.0 && c < size.0 as f64 && r < size.1 as f64;
    inside.then(|| (c.floor() as usize, r.floor() as usize))
}

/// The map's class (and the stratum: the strata raster's, else the map's)
/// under every reference point, which must lie inside the map, on the
/// strata raster's grid, and on neither raster's nodata.
fn sample_points(
    map: &mut ClassRaster,
    mut strata: Option<&mut ClassRaster>,
    reference: &[ReferencePoint],
) -> Result<Vec<SamplePoint>> {
    let (gt, size) = (map.meta.geo_transform, map.size());
    let outside: Vec<_> = reference
        .iter()
        .filter(|p| pixel_of(gt, size, p.x, p.y).is_none())
        .collect();
    if let Some(first) = outside.first() {
        bail!(
            format!(
                "{} of {} points lie outside the map (the first: point {} at {}, {})",
                outside.len(),
                reference.len(),
                first.id,
                first.x,
                first.y
            ),
            hint = "assess points drawn from this map (`mapfilter sample`), in its coordinate system or one GDAL can transform"
        );
    }
    let map_nodata = map.nodata_code();
    let strata_nodata = strata.as_ref().and_then(|s| s.nodata_code());
    if let Some(s) = &strata {
        crate::accuracy::scan::check_strata_grid(
            s.size(),
            size,
            "give --strata the raster the sample was drawn from, on the map's grid",
        )?;
    }
    let mut points = Vec::with_capacity(reference.len());
    for p in reference {
        let (col, row) = pixel_of(gt, size, p.x, p.y).expect("checked inside");
        let m = code_at(map, col, row)?;
        if Some(m) == map_nodata {
            bail!(
                format!(
                    "point {} at {}, {} falls on nodata in the map (pixel {col}, {row})",
                    p.id, p.x, p.y
                ),
                hint = "a sample drawn from this map has no such point: check the map and the points belong together"
            );
        }
        let stratum = match &mut strata {
            Some(s) => {
                let v = code_at(s, col, row)?;
                if Some(v) == strata_nodata {
                    bail!(
                        format!(
                            "point {} at {}, {} falls on nodata in the strata raster",
                            p.id, p.x, p.y
                        ),
                        hint = "give --strata the raster the sample was drawn from"
                    );
                }
                v
            }
            None => m,
        };
        points.push(SamplePoint {
            stratum,
            map: m,
            reference: p.label,
        });
    }
    Ok(points)
}

/// The report's list of inputs: the map, the points and the strata.
fn report_inputs(args: &AssessArgs) -> Vec<Input> {
    let mut report_inputs = vec![
        Input {
            role: "map".into(),
            source: args.map.display().to_string(),
        },
        Input {
            role: "reference points".into(),
            source: format!("{} (label field {})", args.points.display(), args.label),
        },
    ];
    if let Some(s) = &args.strata {
        report_inputs.push(Input {
            role: "strata".into(),
            source: s.display().to_string(),
        });
    }
    report_inputs
}

pub fn run(args: AssessArgs) -> Result<()> {
    let mut inputs: Vec<&Path> = vec![args.map.as_path(), args.points.as_path()];
    inputs.extend(args.strata.as_deref());
    let overwrite = args.overwrite.overwrite;
    let check = |p: Option<&Path>| {
        p.map(|p| Destination::check(p, overwrite, &inputs))
            .transpose()
    };
    let (json, html, csv) = (
        check(args.json.as_deref())?,
        check(args.html.as_deref())?,
        check(args.csv.as_deref())?,
    );
    let files: Vec<&output::Target> = [&json, &html, &csv]
        .into_iter()
        .flatten()
        .filter_map(|d| match d {
            Destination::File(t) => Some(t),
            Destination::Stdout => None,
        })
        .collect();
    output::distinct(&files)?;
    let mut map = ClassRaster::open_with(&args.map, args.bands.choice())?;
    let mut strata = args
        .strata
        .as_deref()
        .map(|p| ClassRaster::open_with(p, BandChoice::default()))
        .transpose()?;
    let reference = crate::gdal::points::read(&args.points, &args.label, &map.meta.projection)?;
    if reference.is_empty() {
        bail!(
            format!("{}: holds no point", args.points.display()),
            hint = "label the points `mapfilter sample` drew and give that file"
        );
    }
    let map_nodata = map.nodata_code();
    let strata_nodata = strata.as_ref().and_then(|s| s.nodata_code());
    let points = sample_points(&mut map, strata.as_mut(), &reference)?;
    let pixel_area = map.meta.pixel_area();
    let names = map.meta.category_names.clone();
    let found = {
        let mut layers = accuracy::scan::Layers {
            map: &mut map,
            map_nodata,
            strata: strata
                .as_mut()
                .map(|s| (s as &mut dyn ClassSource, strata_nodata)),
        };
        accuracy::scan::strata(&mut layers, &pixel_area)?
    };
    let assessment = accuracy::estimate::assess(&found, &points)?;
    let unit = AreaUnit::chosen(
        &args.area_unit,
        &pixel_area.unit,
        assessment.classes.iter().map(|c| c.area.value),
    )?;
    let report = AccuracyReport {
        title: format!(
            "Accuracy of {} against {} reference points",
            args.map.file_name().unwrap_or_default().to_string_lossy(),
            assessment.points
        ),
        inputs: report_inputs(&args),
        pixel_area,
        unit,
        assessment,
        names,
    };
    if let Some(d) = &json {
        output::text::write(d, &report.to_json()?)?;
    }
    if let Some(d) = &csv {
        output::text::write(d, &report.to_csv()?)?;
    }
    if let Some(d) = &html {
        output::text::write(d, &report.to_html()?)?;
    }
    if !args.quiet {
        let to_stdout = [&json, &html, &csv]
            .into_iter()
            .flatten()
            .any(|d| *d == Destination::Stdout);
        if to_stdout {
            eprint!("{}", report.to_text());
        } else {
            print!("{}", report.to_text());
        }
    }
    Ok(())
}
