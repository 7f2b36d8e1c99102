//! `mapfilter assess`: a map's accuracy and class areas from reference
//! points labelled by the user (Olofsson et al. 2014; Stehman 2014 with
//! `--strata`): reads the points (GeoPackage, CSV with x and y, any OGR
//! source; transformed into the map's CRS), looks up the map's class and
//! the stratum at each, counts the strata's pixels in one streaming pass,
//! and writes the estimates as text, JSON, CSV and HTML.

use super::output_args::OverwriteArg;
use crate::error::Result;
use crate::gdal::class_raster::{BandChoice, ClassRaster};
use crate::io::ClassSource;
use crate::output::{self, Destination};
use crate::report::accuracy::AccuracyReport;
use crate::report::compare::Input;
use crate::report::numbers::AreaUnit;
use clap::Args;
use std::path::{Path, PathBuf};

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
    // Class names from a palette file over the map's own (assess draws no map).
    #[command(flatten)]
    pub palette: super::palette_arg::PaletteArg,
    #[command(flatten)]
    pub overwrite: OverwriteArg,
    /// -b and --src-nodata apply to the map.
    #[command(flatten)]
    pub bands: super::input_args::BandArgs,
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
    let reference = crate::job::reference::read_sample(
        &args.points,
        &args.label,
        &map.meta.projection,
        map.meta.geo_transform,
        map.size(),
    )?;
    let map_nodata = map.nodata_code();
    let strata_nodata = strata.as_ref().and_then(|s| s.nodata_code());
    let pixel_area = map.meta.pixel_area();
    let names = match args.palette.read()? {
        Some(file) => file.names_over(&map.meta.category_names),
        None => map.meta.category_names.clone(),
    };
    let assessment = reference.score(
        &mut map,
        map_nodata,
        strata
            .as_mut()
            .map(|s| (s as &mut dyn ClassSource, strata_nodata)),
        &pixel_area,
    )?;
    let unit = AreaUnit::chosen(
        &args.area_unit,
        &pixel_area.unit,
        assessment.classes.iter().map(|c| c.area.value),
    )?;
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
    let report = AccuracyReport {
        title: format!(
            "Accuracy of {} against {} reference points",
            args.map.file_name().unwrap_or_default().to_string_lossy(),
            assessment.points
        ),
        inputs: report_inputs,
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
