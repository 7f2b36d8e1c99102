//! `mapfilter sweep`: runs a sweep config (the thesis' experiments on
//! synthetic inputs) and writes CSV, JSON and an HTML report. GDAL-free, so it
//! is in every build, the `--no-default-features` one for GPU machines too;
//! real inputs and `--reference` (every output scored against labelled
//! points, [`crate::accuracy::ReferenceSample`]) need the gdal feature.

use crate::error::Result;
use crate::sweep::{self, Config, Event};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Sweep config (TOML), e.g. benches/sweeps/smoke.toml.
    pub config: PathBuf,
    /// Directory for results.csv, results.json and report.html (created if missing).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Repeats per point instead of the config's.
    #[arg(long)]
    pub repeats: Option<usize>,
    /// Check the config and list the runs (experiment, value, method, kernel, input) without running them.
    #[arg(long)]
    pub dry_run: bool,
    /// No line per finished run.
    #[arg(long, short)]
    pub quiet: bool,
    /// Labelled reference points (GeoPackage, CSV with x and y, any OGR point source): every output is scored against them (accuracy and class areas with 95 % intervals). Needs one `input` raster in the config.
    #[arg(long, value_name = "POINTS", requires = "label")]
    pub reference: Option<PathBuf>,
    /// The field of the --reference points holding the reference class codes.
    #[arg(long, value_name = "FIELD", requires = "reference")]
    pub label: Option<String>,
    /// The strata the reference sample was drawn from, on the input's grid (default: the sweep's input, as `mapfilter sample INPUT` draws it).
    #[arg(long, value_name = "RASTER", requires = "reference")]
    pub strata: Option<PathBuf>,
    /// Unit of the areas in the report with --reference: ha, km2, m2 (maps in metres), or auto (by size). --palette gives the classes' colours and names there.
    #[arg(long, default_value = "auto")]
    pub area_unit: String,
    #[command(flatten)]
    pub palette: super::palette_arg::PaletteArg,
    #[command(flatten)]
    pub overwrite: super::output_args::OverwriteArg,
}

pub fn run(args: SweepArgs) -> Result<()> {
    let mut config = Config::load(&args.config)?;
    if let Some(r) = args.repeats {
        config.repeats = r.max(1);
    }
    if args.dry_run {
        println!(
            "{}: {} experiments, {} runs of {} repeat(s)",
            config.title,
            config.experiments.len(),
            config.runs(),
            config.repeats
        );
        for (i, line) in config.list_runs()?.iter().enumerate() {
            println!("{:>4}  {line}", i + 1);
        }
        return Ok(());
    }
    let mut inputs = vec![args.config.clone()];
    inputs.extend(config.input.iter().map(PathBuf::from));
    inputs.extend(args.reference.iter().chain(&args.strata).cloned());
    let files = sweep::output::ResultFiles::prepare(&args.out, args.overwrite.overwrite, inputs)?;
    let sources = load_inputs(&config.input)?;
    let scoring = match &args.reference {
        Some(points) => Some(scoring(&args, points, &config, &sources)?),
        None => None,
    };
    let mut saved = Ok(());
    let result = sweep::run_scored(&config, &sources, scoring, |event, i, n| {
        if let Event::Checkpoint(so_far) = event {
            // Each finished experiment is on disk at once: a sweep cut short keeps them.
            if saved.is_ok() {
                saved = files.write(so_far).map(|_| ());
            }
            return;
        }
        if args.quiet {
            return;
        }
        match event {
            Event::Finished(r) => eprintln!(
                "[{i}/{n}] {} {}={} {}: {:.4} s, agreement {}{}",
                r.experiment,
                r.variable.name(),
                r.value,
                r.method,
                r.seconds,
                r.agreement_percent
                    .map_or("–".into(), |a| format!("{a:.4} %")),
                r.accuracy.as_ref().map_or(String::new(), |a| format!(
                    ", overall accuracy {} % ± {}",
                    crate::report::numbers::fixed(100.0 * a.overall.value, 2),
                    crate::report::numbers::fixed(100.0 * crate::accuracy::Z95 * a.overall.se, 2)
                ))
            ),
            Event::Failed(f) => eprintln!(
                "[{i}/{n}] {} {}={} {}: FAILED: {}",
                f.experiment,
                f.variable.name(),
                f.value,
                f.method,
                f.error
            ),
            Event::Checkpoint(_) => {}
        }
    })?;
    saved?;
    let files = files.write(&result)?;
    if !args.quiet {
        for f in files {
            eprintln!("wrote {}", f.display());
        }
    }
    if !result.failures.is_empty() {
        crate::bail!(
            incomplete,
            format!(
                "{} of {} runs failed (listed in results.json and report.html)",
                result.failures.len(),
                config.runs()
            ),
            hint = "the other runs' results were written"
        );
    }
    Ok(())
}

/// The scorer of `--reference`: the labelled points placed once on the
/// (single) input's grid; each output scored with the input's classes (or
/// `--strata`) as the strata, the areas from the input's pixel size.
#[cfg(feature = "gdal")]
fn scoring<'a>(
    args: &SweepArgs,
    points: &std::path::Path,
    config: &Config,
    sources: &'a [sweep::Source],
) -> Result<sweep::Scoring<'a>> {
    use crate::gdal::class_raster::ClassRaster;
    let [source] = sources else {
        crate::bail!(
            usage,
            format!(
                "--reference scores the outputs of one input raster; the config has {}",
                config.input.len()
            ),
            hint = "set `input = \"map.tif\"` (the map the points were drawn from) in the sweep config"
        );
    };
    let label = args.label.as_deref().unwrap_or_default();
    let input = ClassRaster::open(std::path::Path::new(&config.input[0]))?;
    let size = crate::io::ClassSource::size(&input);
    let sample = crate::job::reference::read_sample(
        points,
        label,
        &input.meta.projection,
        input.meta.geo_transform,
        size,
    )?;
    let (mut strata, strata_nodata, strata_name) = match &args.strata {
        Some(p) => {
            let raster = in_memory(p)?;
            (raster.0, raster.1, p.display().to_string())
        }
        None => (
            source.raster.clone(),
            input.nodata_code(),
            format!("{} (the sweep's input)", config.input[0]),
        ),
    };
    crate::accuracy::scan::check_strata_grid(
        (strata.width, strata.height),
        size,
        "give --strata the raster the sample was drawn from, on the input's grid",
    )?;
    let pixel_area = input.meta.pixel_area();
    let total = pixel_area.area * (size.0 * size.1) as f64;
    let unit =
        crate::report::numbers::AreaUnit::chosen(&args.area_unit, &pixel_area.unit, [total])?;
    let (palette, names) = crate::report::palette::choose(
        args.palette.read()?.as_ref(),
        &input.meta.colors,
        &input.meta.category_names,
        source.table.codes(),
        input.nodata_code(),
    );
    let info = sweep::ReferenceInfo {
        points: format!("{} (label field {label})", points.display()),
        strata: strata_name,
        shown_area_unit: unit.name.clone(),
        unit,
        names,
        palette,
        pixel_area: pixel_area.clone(),
    };
    let score = move |out: &mut crate::io::MemRaster, nodata: Option<u16>| {
        if (out.width, out.height) != size {
            crate::bail!(
                input,
                format!(
                    "the output is {} x {} pixels, the input {} x {}",
                    out.width, out.height, size.0, size.1
                ),
                hint = "score outputs on the input's grid: leave `border` at \"same\""
            );
        }
        sample.score(
            out,
            nodata,
            Some((
                &mut strata as &mut dyn crate::io::ClassSource,
                strata_nodata,
            )),
            &pixel_area,
        )
    };
    Ok(sweep::Scoring {
        info,
        score: Box::new(score),
    })
}

#[cfg(not(feature = "gdal"))]
fn scoring<'a>(
    _: &SweepArgs,
    _: &std::path::Path,
    _: &Config,
    _: &'a [sweep::Source],
) -> Result<sweep::Scoring<'a>> {
    crate::bail!(
        usage,
        "--reference reads points and rasters with GDAL, which this build leaves out",
        hint = "run it with a build that has the gdal feature"
    );
}

/// A class raster read into memory (band 1) with its nodata code.
#[cfg(feature = "gdal")]
fn in_memory(path: &std::path::Path) -> Result<(crate::io::MemRaster, Option<u16>)> {
    let mut raster = crate::gdal::class_raster::ClassRaster::open(path)?;
    let (w, h) = (raster.meta.width, raster.meta.height);
    crate::limits::check_in_memory(w, h, crate::limits::IN_MEMORY_RUN_BYTES, "a sweep input")?;
    let mut data = vec![0u16; w * h];
    crate::io::ClassSource::read(&mut raster, tiles::Rect::new(0, 0, w, h), &mut data)?;
    Ok((crate::io::MemRaster::new(w, h, data), raster.nodata_code()))
}

/// The config's real inputs, each read into memory once (band 1, nodata kept).
#[cfg(feature = "gdal")]
fn load_inputs(paths: &[String]) -> Result<Vec<sweep::Source>> {
    paths
        .iter()
        .map(|p| {
            let path = std::path::Path::new(p);
            let (raster, nodata) = in_memory(path)?;
            sweep::Source::new(crate::job::compare::file_name(path), raster, nodata)
        })
        .collect()
}

#[cfg(not(feature = "gdal"))]
fn load_inputs(paths: &[String]) -> Result<Vec<sweep::Source>> {
    if !paths.is_empty() {
        crate::bail!(
            usage,
            "a sweep on `input` rasters reads them with GDAL, which this build leaves out",
            hint = "run it with a build that has the gdal feature"
        );
    }
    Ok(Vec::new())
}
