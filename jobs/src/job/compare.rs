//! Comparing two class rasters as a library call: accuracy of a candidate
//! against a reference (agreement, kappa, confusion, per-class figures, area
//! change) streamed strip by strip, with a georeferenced mismatch raster and
//! quick-look maps ([`compare_rasters`]); and [`smooth_report`], the report
//! of `smooth --report`, which runs the exact baseline beside the chosen
//! method and compares the two.

use super::observer::Observer;
use gdal::raster::GdalDataType;
use gdal::spatial_ref::SpatialRef;
use mapfilter_core::bail;
use mapfilter_core::engine::{self, RunStats, SmoothJob};
use mapfilter_core::error::Result;
use mapfilter_core::error::Setting;
use mapfilter_core::method::ClassSmoother;
use mapfilter_core::method::naive::NaiveHost;
use mapfilter_core::metrics::{self, MISMATCH_BOTH_NODATA, Summary};
use mapfilter_core::output::{self, Destination, Target};
use mapfilter_core::pixel_area::PixelArea;
use mapfilter_core::progress::Progress;
use mapfilter_gdal::class_raster::{BandChoice, ClassRaster, RasterMeta};
use mapfilter_gdal::output_options::OutputCompression;
use mapfilter_gdal::output_raster::{OutputRaster, OutputSpec};
use mapfilter_report::compare::{CompareReport, Input, Map, RunComparison};
use mapfilter_report::palette::PaletteFile;
use mapfilter_report::quicklook::{DEFAULT_SIDE, Palette, QuickLook};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// How a title names two files: by file name, or where those are equal
/// (`a/mosaic.vrt`, `b/mosaic.vrt`) with as many parent folders as tell
/// them apart ("mosaic.vrt against mosaic.vrt" says nothing).
pub fn names_apart(a: &Path, b: &Path) -> (String, String) {
    let parts = |p: &Path| -> Vec<String> {
        let full = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        full.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    let (pa, pb) = (parts(a), parts(b));
    if pa == pb {
        return (file_name(a), file_name(b));
    }
    for k in 1..=pa.len().max(pb.len()) {
        let tail = |p: &[String]| p[p.len().saturating_sub(k)..].join("/");
        let (ta, tb) = (tail(&pa), tail(&pb));
        if ta != tb || k >= pa.len().min(pb.len()) {
            return (
                ta.trim_start_matches('/').to_string(),
                tb.trim_start_matches('/').to_string(),
            );
        }
    }
    (file_name(a), file_name(b))
}

pub fn input(role: &str, path: &Path) -> Input {
    Input {
        role: role.into(),
        source: path.display().to_string(),
    }
}

/// What to compare: a candidate class raster against a reference on the
/// same grid, and where the mismatch raster goes.
#[derive(Clone, Debug)]
pub struct CompareSpec {
    pub reference: PathBuf,
    pub candidate: PathBuf,
    /// The band of classes and its nodata, the same for both rasters.
    pub band: BandChoice,
    /// The mismatch raster's checked target, if one is wanted.
    pub mismatch: Option<Target>,
    /// Longest side of the report's quick-look maps, in pixels.
    pub map_side: usize,
    /// `--palette`: class colours and names over the rasters' own.
    pub palette: Option<mapfilter_report::palette::PaletteFile>,
}

/// Compares the spec's rasters strip by strip (writing the mismatch raster
/// if asked) and returns the report: figures, quick-look maps, palette.
pub fn run(spec: &CompareSpec, observer: &mut dyn Observer) -> Result<CompareReport> {
    let mut reference = ClassRaster::open_with(&spec.reference, spec.band)?;
    let mut candidate = ClassRaster::open_with(&spec.candidate, spec.band)?;
    check_same_grid(&reference, &candidate)?;
    observer.stage("open");
    let progress = observer.progress("compare");
    let outcome = compare_rasters(
        &mut reference,
        &mut candidate,
        spec.mismatch.as_ref(),
        spec.map_side,
        spec.palette.as_ref(),
        &progress,
    )?;
    observer.stage("compare");
    let (candidate_name, reference_name) = names_apart(&spec.candidate, &spec.reference);
    Ok(CompareReport {
        title: format!("Accuracy of {candidate_name} against {reference_name}"),
        inputs: vec![
            input("reference", &spec.reference),
            input("candidate", &spec.candidate),
        ],
        run: None,
        summary: outcome.summary,
        maps: outcome.maps,
        palette: Some(outcome.palette),
    })
}

/// Refuses rasters that are not on the same grid: size, geotransform, CRS.
pub fn check_same_grid(a: &ClassRaster, b: &ClassRaster) -> Result<()> {
    let names = format!("{} and {}", a.path().display(), b.path().display());
    check_same_meta(&names, &a.meta, &b.meta)
}

/// What to give as the baseline when the given one does not fit.
fn baseline_hint() -> String {
    format!(
        "give the output of `mapfilter smooth {}` on the same input with the same kernel and {}, or leave {} out to run it",
        Setting::Method.is("naive"),
        Setting::Border,
        Setting::Baseline
    )
}

/// Refuses `--baseline FILE` before any work when it is not on the grid
/// the smoothing of `input` will have (its size less the kernel's border
/// under `--border valid`, the geotransform moved with it).
pub fn check_baseline_grid(
    baseline: &Path,
    input: &ClassRaster,
    kernel: &mapfilter_core::kernel::Kernel,
    border: tiles::Border,
) -> Result<()> {
    let reference = ClassRaster::open(baseline)?;
    let mut expected = input.meta.clone();
    if border == tiles::Border::Valid {
        let r = kernel.radius();
        expected.width = expected.width.saturating_sub(2 * r);
        expected.height = expected.height.saturating_sub(2 * r);
        expected.geo_transform = expected
            .geo_transform
            .map(|g| mapfilter_gdal::class_raster::shift_transform(g, r as f64, r as f64));
    }
    let names = format!(
        "{} and the output of {}",
        baseline.display(),
        input.path().display()
    );
    check_same_meta(&names, &reference.meta, &expected)
        .map_err(|e| e.context(Setting::Baseline).hint(baseline_hint()))
}

fn check_same_meta(names: &str, ma: &RasterMeta, mb: &RasterMeta) -> Result<()> {
    if (ma.width, ma.height) != (mb.width, mb.height) {
        bail!(
            input,
            format!(
                "{names} differ in size: {}x{} against {}x{}",
                ma.width, ma.height, mb.width, mb.height
            ),
            hint = "compare rasters of the same grid; resample one onto the other with gdalwarp -te ... -ts ..."
        );
    }
    let same_transform = match (ma.geo_transform, mb.geo_transform) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            let tol = 1e-6 * (x[1].abs() + x[5].abs()).max(f64::MIN_POSITIVE);
            x.iter().zip(&y).all(|(p, q)| (p - q).abs() <= tol)
        }
        _ => false,
    };
    if !same_transform {
        bail!(
            input,
            format!(
                "{names} differ in georeferencing (geotransform {} against {})",
                show_transform(ma.geo_transform),
                show_transform(mb.geo_transform)
            ),
            hint = "align them first, e.g. gdalwarp with the other raster's -te and -tr"
        );
    }
    if !same_crs(&ma.projection, &mb.projection) {
        bail!(
            input,
            format!("{names} differ in coordinate system"),
            hint = "reproject one with gdalwarp -t_srs, or assign the right one with gdal_edit.py -a_srs"
        );
    }
    Ok(())
}

fn show_transform(gt: Option<[f64; 6]>) -> String {
    gt.map_or("none".into(), |g| {
        format!(
            "[{}, {}, {}, {}, {}, {}]",
            g[0], g[1], g[2], g[3], g[4], g[5]
        )
    })
}

fn same_crs(a: &str, b: &str) -> bool {
    match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, true) => true,
        (false, false) => match (SpatialRef::from_wkt(a), SpatialRef::from_wkt(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        },
        _ => false,
    }
}

/// The pixel area and its unit from a raster's georeferencing.
fn pixel_area(meta: &RasterMeta) -> PixelArea {
    meta.pixel_area()
}

/// Figures and pictures of one comparison.
pub struct Outcome {
    pub summary: Summary,
    pub maps: Vec<Map>,
    pub palette: Palette,
}

/// Streams both rasters strip by strip: confusion matrix, optional mismatch
/// GeoTIFF, quick-look maps of both and of the mismatches.
pub fn compare_rasters(
    reference: &mut ClassRaster,
    candidate: &mut ClassRaster,
    mismatch_target: Option<&Target>,
    map_side: usize,
    palette: Option<&PaletteFile>,
    progress: &Progress,
) -> Result<Outcome> {
    let (w, h) = (reference.meta.width, reference.meta.height);
    let (rn, cn) = (reference.nodata_code(), candidate.nodata_code());
    let mut mismatch_out = match mismatch_target {
        Some(p) => Some(OutputRaster::create(p, &mismatch_spec(&reference.meta))?),
        None => None,
    };
    let mut ql_ref = QuickLook::classes(w, h, map_side, rn.unwrap_or(u16::MAX));
    let mut ql_cand = QuickLook::classes(w, h, map_side, cn.unwrap_or(u16::MAX));
    let mut ql_mis = QuickLook::mismatch(w, h, map_side);
    let area = pixel_area(&reference.meta);
    let mut areas = metrics::AreaTally::new(&area);
    let rows = (metrics::STRIP_PIXELS / w.max(1)).clamp(1, h.max(1));
    progress.start(h.div_ceil(rows) as u64, "strips");
    let confusion = metrics::compare(reference, candidate, rn, cn, |strip| {
        if let Some(out) = mismatch_out.as_mut() {
            out.write_band(1, strip.window, strip.mismatch.to_vec())?;
        }
        ql_ref.add(strip.window, strip.reference);
        ql_cand.add(strip.window, strip.candidate);
        ql_mis.add(strip.window, strip.mismatch);
        areas.iter_mut().for_each(|a| a.add(strip));
        progress.inc(1);
        Ok(())
    })?;
    progress.finish();
    if let Some(out) = mismatch_out {
        out.finish()?;
    }
    // Colours: --palette, else the reference's table, else the
    // candidate's, else categorical; the same for both maps.
    let (ref_palette, names) = mapfilter_report::palette::choose_for_two(
        palette,
        (&reference.meta.colors, &reference.meta.category_names),
        (&candidate.meta.colors, &candidate.meta.category_names),
        confusion.codes(),
        rn,
    );
    let cand_palette = ref_palette.with_nodata(cn);
    let summary = Summary::new(&confusion, (w, h), area, &names).with_areas(areas.as_ref());
    let maps = vec![
        Map {
            caption: format!("reference: {}", file_name(reference.path())),
            png: ql_ref.to_png(&ref_palette)?,
        },
        Map {
            caption: format!("candidate: {}", file_name(candidate.path())),
            png: ql_cand.to_png(&cand_palette)?,
        },
        Map {
            caption: "mismatches (red: class differs, blue: nodata in one only)".into(),
            png: ql_mis.to_png(&Palette::mismatch())?,
        },
    ];
    Ok(Outcome {
        summary,
        maps,
        palette: ref_palette,
    })
}

/// The mismatch GeoTIFF: Byte, the inputs' grid, nodata 255, a colour table.
fn mismatch_spec(meta: &RasterMeta) -> OutputSpec {
    let palette = Palette::mismatch();
    OutputSpec {
        width: meta.width,
        height: meta.height,
        bands: 1,
        data_type: GdalDataType::UInt8,
        geo_transform: meta.geo_transform,
        projection: meta.projection.clone(),
        nodata: Some(MISMATCH_BOTH_NODATA as f64),
        colors: (0..=255u16)
            .map(|c| match c {
                0..=2 => palette.color(c).map(i16::from),
                _ => [0, 0, 0, 0],
            })
            .collect(),
        // Category names would go to a .aux.xml side file for GeoTIFF; the
        // values are documented in --help and the report instead.
        category_names: Vec::new(),
        compression: OutputCompression::default(),
    }
}

/// What `mapfilter smooth --report` knows about the run it reports on.
pub struct SmoothRun<'a> {
    pub input: &'a Path,
    /// The input's band and nodata, as the method read them.
    pub band: mapfilter_gdal::class_raster::BandChoice,
    /// The kernel as given and as built (rows of the report's settings).
    pub kernel: Vec<(String, String)>,
    /// The method's output, already written (what the report reads).
    pub output: &'a Path,
    /// The output as the user named it (what the report says): `output`
    /// itself, or the run's final output where `output` is the smoothed
    /// raster before a minimum mapping unit (`smooth --mmu`).
    pub output_name: &'a Path,
    pub job: &'a SmoothJob,
    pub method: &'a dyn ClassSmoother,
    /// How the user named the method (e.g. `svd@gpu`).
    pub method_label: &'a str,
    pub stats: &'a RunStats,
    pub quiet: bool,
    /// The run's per-pixel vote weights (`--confidence`), which the
    /// baseline takes too.
    pub confidence: Option<&'a mapfilter_gdal::confidence::ConfidenceSpec>,
    /// An exact output to compare with instead of running the baseline
    /// (`--baseline FILE`); it must be on the output's grid.
    pub baseline: Option<&'a Path>,
}

/// Where `smooth --report` writes: `path` as given (its extension picks
/// the kind: `.json`, `.md`, else HTML) and the checked destination.
pub struct ReportTarget<'a> {
    pub path: &'a Path,
    pub dest: Destination,
}

impl<'a> ReportTarget<'a> {
    /// Checks the report's path before the run (it must differ from the output).
    pub fn check(
        path: &'a Path,
        output: &Target,
        overwrite: bool,
        inputs: &[&Path],
    ) -> Result<Self> {
        let dest = Destination::check(path, overwrite, inputs)?;
        if let Destination::File(t) = &dest {
            output::distinct(&[t, output])?;
        }
        Ok(ReportTarget { path, dest })
    }
}

/// Runs the exact baseline ([`NaiveHost`]) on the same input into a scratch
/// GeoTIFF beside the output (or takes `run.baseline`, checked to be on the
/// output's grid), compares the method's output with it and writes the report.
pub fn smooth_report(run: &SmoothRun, report: &ReportTarget) -> Result<()> {
    let mut method_out = ClassRaster::open(run.output)?;
    let baseline = NaiveHost;
    let mut source = ClassRaster::open_with(run.input, run.band)?;
    let (mut reference, baseline_seconds, _scratch) = match run.baseline {
        Some(path) => {
            let reference = ClassRaster::open(path)?;
            check_same_grid(&reference, &method_out)
                .map_err(|e| e.context(Setting::Baseline).hint(baseline_hint()))?;
            (reference, None, None)
        }
        None => {
            let (file, seconds) = run_baseline(run, &method_out, &mut source)?;
            (ClassRaster::open(file.path())?, Some(seconds), Some(file))
        }
    };
    let progress = Progress::new(run.quiet, "compare");
    let outcome = compare_rasters(
        &mut reference,
        &mut method_out,
        None,
        DEFAULT_SIDE,
        None,
        &progress,
    )?;
    let nodata = source.nodata_code();
    // The input in the outputs' colours (its classes are theirs).
    let input_palette = outcome.palette.with_nodata(nodata);
    let input_map = QuickLook::sample(&mut source, DEFAULT_SIDE, nodata.unwrap_or(u16::MAX))?;
    let mut maps = vec![Map {
        caption: format!("input: {}", file_name(run.input)),
        png: input_map.to_png(&input_palette)?,
    }];
    maps.extend(outcome.maps.into_iter().enumerate().map(|(i, mut m)| {
        m.caption = match i {
            0 => match run.baseline {
                Some(p) => format!("exact baseline (reused: {})", file_name(p)),
                None => format!("exact baseline ({})", baseline.name()),
            },
            1 => format!("{}: {}", run.method_label, file_name(run.output_name)),
            _ => m.caption,
        };
        m
    }));
    let method_seconds = run.stats.totals.wall.as_secs_f64();
    let method_is_baseline = run.method.name() == baseline.name();
    let reused = run.baseline.map(|p| format!(", reused: {}", file_name(p)));
    let report_data = CompareReport {
        // What was smoothed, how, and against what: not "dct5@auto".
        title: format!(
            "{} smoothed with {} by {}, against the exact {}",
            file_name(run.input),
            run.kernel
                .first()
                .map_or_else(|| "its kernel".to_string(), |k| k.1.clone()),
            run.method.name(),
            baseline.name()
        ),
        inputs: vec![input("input", run.input), input("output", run.output_name)],
        run: Some(RunComparison {
            method: format!("{} ({})", run.method_label, run.method.name()),
            method_seconds,
            baseline: format!(
                "naive@host ({}{})",
                baseline.name(),
                reused.unwrap_or_default()
            ),
            baseline_seconds,
            speedup: RunComparison::speedup_of(
                method_is_baseline,
                baseline_seconds,
                method_seconds,
            ),
            settings: run_settings(run),
        }),
        summary: outcome.summary,
        maps,
        palette: Some(outcome.palette),
    };
    let ext = report
        .path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let text = match ext.as_deref() {
        Some("json") => report_data.to_json()?,
        Some("md" | "markdown") => report_data.to_markdown(),
        _ => report_data.to_html()?,
    };
    output::text::write(&report.dest, &text)?;
    if !run.quiet {
        eprintln!(
            "report {}: {}",
            report.path.display(),
            report_data.headline()
        );
    }
    Ok(())
}

/// The settings table of a `smooth --report`: kernel, job, policies,
/// confidence, tiles and what the method said of its run.
fn run_settings(run: &SmoothRun) -> Vec<(String, String)> {
    let job = run.job;
    run.kernel
        .iter()
        .cloned()
        .chain([
            ("classes".into(), job.classes.len().to_string()),
            ("tile".into(), job.tile.to_string()),
            ("border".into(), format!("{:?}", job.border).to_lowercase()),
            ("fill nodata".into(), job.fill_nodata.to_string()),
        ])
        .chain(job.policies.settings())
        .chain([(
            "confidence".into(),
            run.confidence.map_or("none".into(), |c| c.label()),
        )])
        .chain([
            ("tiles".into(), run.stats.totals.tiles.to_string()),
            ("method exact".into(), run.method.is_exact().to_string()),
        ])
        .chain(run.method.summary().map(|m| ("method run".into(), m)))
        .collect()
}

/// Runs the exact baseline on the run's input into a scratch GeoTIFF beside
/// the output (removed when dropped) and times it.
fn run_baseline(
    run: &SmoothRun,
    method_out: &ClassRaster,
    source: &mut ClassRaster,
) -> Result<(output::TempFile, f64)> {
    let dir = output::parent_dir(run.output);
    let meta = &method_out.meta;
    let spec = OutputSpec {
        width: meta.width,
        height: meta.height,
        bands: 1,
        data_type: method_out.class_type.gdal_type(),
        geo_transform: meta.geo_transform,
        projection: meta.projection.clone(),
        nodata: meta.nodata,
        colors: meta.colors.clone(),
        category_names: meta.category_names.clone(),
        compression: OutputCompression::default(),
    };
    let progress = Progress::new(run.quiet, "baseline");
    let mut out = OutputRaster::scratch(&dir, &spec)?;
    let t0 = Instant::now();
    let mut votes = run
        .confidence
        .map(|c| c.open(source.meta.width, source.meta.height))
        .transpose()?;
    let votes = votes
        .as_mut()
        .map(|v| v as &mut dyn mapfilter_core::io::ClassSource);
    engine::smooth_weighted(source, votes, &mut out, run.job, &NaiveHost, &progress)?;
    let file = out.finish_scratch()?;
    Ok((file, t0.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_tell_files_of_one_name_apart() {
        let (a, b) = names_apart(
            Path::new("/d/run1/mosaic.vrt"),
            Path::new("/d/run2/mosaic.vrt"),
        );
        assert_eq!(
            (a.as_str(), b.as_str()),
            ("run1/mosaic.vrt", "run2/mosaic.vrt")
        );
        let (a, b) = names_apart(Path::new("/x/a.tif"), Path::new("/y/b.tif"));
        assert_eq!((a.as_str(), b.as_str()), ("a.tif", "b.tif"));
        let (a, b) = names_apart(Path::new("/x/a.tif"), Path::new("/x/a.tif"));
        assert_eq!((a.as_str(), b.as_str()), ("a.tif", "a.tif"));
    }
}
