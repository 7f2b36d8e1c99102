//! `batch report`: the records of a batch summed into `report.json` and
//! `report.html` (tasks done, failed and pending, the failed, degraded and
//! pending ones first; time and throughput; class area change; agreement,
//! kappa and quantity and allocation disagreement against the exact
//! baseline when the plan compared; provenance and the smoothing settings;
//! class areas before and after in the unit asked for, quick-look maps of
//! the input, the mosaic and where it changed ([`super::maps`]); with a
//! reference sample, the mosaic's accuracy and class areas with 95 %
//! intervals ([`mapfilter_core::accuracy::ReferenceSample`]), `mosaic.vrt` of the
//! outputs (one per mosaic), and on request one Cloud Optimized GeoTIFF of
//! the outputs with MODE overviews.

use super::mosaic::{Member, mosaic_name, vrt_xml};
use super::plan::Plan;
use super::records::{DoneRecord, State};
use crate::job::compare::file_name;
use mapfilter_core::error::{Error, Result, Setting};
use mapfilter_core::output::{self, Destination, Target};
use mapfilter_gdal::cog;
use mapfilter_report::accuracy::class_label;
use mapfilter_report::compare::{Input, Map};
use mapfilter_report::numbers::{AreaUnit, Provenance, fixed};
use mapfilter_report::page;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Serialize)]
pub struct BatchReport {
    /// Command line, version and date of this report.
    pub provenance: Provenance,
    /// What was smoothed: the first mosaic's input (a file, or the VRT of
    /// the inputs).
    pub input: String,
    /// The smoothing as planned: kernel and method as given.
    pub kernel: String,
    pub method: String,
    /// The minimum mapping unit (`batch plan --mmu`) and what it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mmu: Option<MmuReport>,
    pub tasks: usize,
    pub done: usize,
    pub failed: Vec<FailedTask>,
    pub pending: Vec<usize>,
    /// Done, but without the halo of inputs that could not be read (their
    /// edges may differ from a run over the whole mosaic until run again
    /// with `--retry-failed`).
    pub degraded: Vec<DegradedTask>,
    /// Pixels of the finished tasks' outputs.
    pub pixels_done: u64,
    /// Sum of the finished tasks' wall times.
    pub task_seconds: f64,
    /// Output pixels per second of task time.
    pub megapixels_per_second: f64,
    /// Every finished task's time, by task number.
    pub times: Vec<TaskTime>,
    /// The 20 slowest of them.
    pub slowest: Vec<TaskTime>,
    pub classes: Vec<ClassChange>,
    pub comparison: Option<DatasetComparison>,
    /// The outputs' mosaic VRTs, relative to the batch directory.
    pub mosaics: Vec<PathBuf>,
    /// Class areas before and after over the finished tasks of the first
    /// mosaic, in ground units ([`ReportOptions::area_unit`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub areas: Option<AreaTable>,
    /// Why there are no maps and areas (an input that does not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maps_note: Option<String>,
    /// The first mosaic against the reference sample.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<mapfilter_report::accuracy::AccuracyReport>,
    #[serde(skip)]
    pictures: Vec<mapfilter_report::compare::Map>,
    #[serde(skip)]
    legend: Vec<(String, String)>,
}

/// Class areas before and after smoothing.
#[derive(Debug, Serialize)]
pub struct AreaTable {
    /// The unit of the areas here (the mosaic's CRS: m² for metres).
    pub unit: String,
    /// The unit the HTML shows them in.
    pub shown_unit: String,
    pub pixel_area: mapfilter_core::pixel_area::PixelArea,
    pub classes: Vec<ClassArea>,
    /// Valid pixels of the finished tasks, and those whose class changed.
    pub compared_pixels: u64,
    pub changed_pixels: u64,
}

#[derive(Debug, Serialize)]
pub struct ClassArea {
    pub code: u16,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub input_area: f64,
    pub output_area: f64,
}

/// What `batch report` adds to the records' sums.
#[derive(Debug, Default)]
pub struct ReportOptions {
    /// `ha`, `km2`, `m2` or `auto`.
    pub area_unit: String,
    /// The labelled points, their label field and the strata raster
    /// (default: the input mosaic, which the sample was drawn from).
    pub reference: Option<(PathBuf, String, Option<PathBuf>)>,
    pub palette: Option<mapfilter_report::palette::PaletteFile>,
}

#[derive(Debug, Serialize)]
pub struct FailedTask {
    pub task: usize,
    pub input: PathBuf,
    pub error: String,
    /// The error's kind (`Kind::name`); absent in records of earlier versions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct DegradedTask {
    pub task: usize,
    pub missing_halo: Vec<PathBuf>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TaskTime {
    pub task: usize,
    pub output: PathBuf,
    pub seconds: f64,
    pub megapixels_per_second: f64,
}

/// Pixels of one class before and after smoothing, over the finished tasks.
#[derive(Debug, Serialize)]
pub struct ClassChange {
    pub code: u16,
    pub input_pixels: u64,
    pub output_pixels: u64,
    pub change_percent: Option<f64>,
}

/// The finished tasks against the exact baseline.
#[derive(Debug, Serialize)]
pub struct DatasetComparison {
    /// Finished tasks compared (all, or the plan's sample).
    pub tasks: usize,
    pub pixels: u64,
    pub agreement: f64,
    /// `agreement` in percent, as the other reports write it.
    pub agreement_percent: f64,
    pub kappa: f64,
    /// Pontius & Millones (2011), beside kappa: percent of the compared
    /// pixels; quantity + allocation = 100 − agreement.
    pub quantity_disagreement_percent: Option<f64>,
    pub allocation_disagreement_percent: Option<f64>,
    /// Pixels nodata in one of the two only.
    pub one_only: u64,
    /// (baseline code, output code, pixels).
    pub confusion: Vec<(u16, u16, u64)>,
}

/// The minimum mapping unit of a batch and what its sieves changed.
#[derive(Debug, Serialize)]
pub struct MmuReport {
    /// `--mmu` as given.
    pub given: String,
    pub connectivity: u8,
    /// Each mosaic sieved so far: its threshold in pixels, the patches it
    /// merged and the pixels it changed.
    pub sieved: Vec<super::request::MosaicSieved>,
    /// Pixels changed by the sieves, in all.
    pub pixels_changed: u64,
}

/// What the sieves of the batch in `state` changed, if it has an MMU.
fn mmu_report(plan: &Plan, state: &State) -> Option<MmuReport> {
    let mmu = plan.options.mmu.as_ref()?;
    let sieved: Vec<_> = (0..plan.mosaics.len())
        .filter_map(|m| super::mmu::sieved_record(state, m, plan.fingerprint()))
        .map(|r| r.sieved)
        .collect();
    Some(MmuReport {
        given: mmu.given.clone(),
        connectivity: mmu.connectivity,
        pixels_changed: sieved
            .iter()
            .fold(0u64, |sum, s| sum.saturating_add(s.pixels_changed)),
        sieved,
    })
}

/// Sums the records of the batch in `dir`.
pub fn summarise(dir: &Path, plan: &Plan) -> Result<BatchReport> {
    let state = State::open(dir)?;
    let fingerprint = plan.fingerprint();
    let mut failed = Vec::new();
    let mut pending = Vec::new();
    let mut done = Vec::new();
    for task in &plan.tasks {
        if let Some(rec) = state.done_and_intact(task, fingerprint) {
            done.push(rec);
        } else if let Some(f) = state.failed(task.id, fingerprint) {
            failed.push(FailedTask {
                task: task.id,
                input: task.input.clone(),
                error: f.error,
                kind: f.kind,
            });
        } else {
            pending.push(task.id);
        }
    }
    let degraded = done
        .iter()
        .filter(|r| !r.missing_halo.is_empty())
        .map(|r| DegradedTask {
            task: r.task,
            missing_halo: r.missing_halo.clone(),
        })
        .collect();
    // Records agree with their tasks (each pixel count is its window's), and
    // sums saturate rather than wrap whatever the plan's windows are.
    let pixels_done = done
        .iter()
        .fold(0u64, |sum, r| sum.saturating_add(r.pixels));
    let task_seconds: f64 = done.iter().map(|r| r.seconds).sum();
    let times: Vec<TaskTime> = done
        .iter()
        .map(|r| TaskTime {
            task: r.task,
            output: r.output.clone(),
            seconds: r.seconds,
            megapixels_per_second: r.pixels as f64 / r.seconds.max(1e-9) / 1e6,
        })
        .collect();
    let mut slowest = times.clone();
    slowest.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    slowest.truncate(20);
    let classes = class_changes(&done);
    let comparison = plan.compare_with.as_ref().map(|_| {
        let mut pairs: BTreeMap<(u16, u16), u64> = BTreeMap::new();
        let mut one_only = 0;
        let compared: Vec<_> = done.iter().filter_map(|r| r.comparison.as_ref()).collect();
        for c in &compared {
            one_only = c.one_only.saturating_add(one_only);
            for &(p, q, n) in &c.pairs {
                let sum = pairs.entry((p, q)).or_default();
                *sum = sum.saturating_add(n);
            }
        }
        let confusion: Vec<(u16, u16, u64)> =
            pairs.into_iter().map(|((p, q), n)| (p, q, n)).collect();
        let (agreement, kappa, pixels) = agreement_kappa(&confusion);
        let disagreement = disagreement(&confusion);
        DatasetComparison {
            tasks: compared.len(),
            pixels,
            agreement,
            agreement_percent: 100.0 * agreement,
            kappa,
            quantity_disagreement_percent: disagreement.map(|d| 100.0 * d.quantity),
            allocation_disagreement_percent: disagreement.map(|d| 100.0 * d.allocation),
            one_only,
            confusion,
        }
    });
    Ok(BatchReport {
        provenance: Provenance::now(),
        input: plan
            .mosaics
            .first()
            .map_or_else(String::new, |m| file_name(&m.source)),
        kernel: plan.options.kernel.to_string(),
        method: plan.options.method.to_string(),
        mmu: mmu_report(plan, &state),
        tasks: plan.tasks.len(),
        done: done.len(),
        failed,
        pending,
        degraded,
        pixels_done,
        task_seconds,
        megapixels_per_second: pixels_done as f64 / task_seconds.max(1e-9) / 1e6,
        times,
        slowest,
        classes,
        comparison,
        mosaics: (0..plan.mosaics.len()).map(mosaic_name).collect(),
        areas: None,
        maps_note: None,
        accuracy: None,
        pictures: Vec::new(),
        legend: Vec::new(),
    })
}

/// Pixels per class before and after over the finished tasks (nodata of
/// either side left out), with the change in percent.
fn class_changes(done: &[DoneRecord]) -> Vec<ClassChange> {
    let mut classes: BTreeMap<u16, (u64, u64)> = BTreeMap::new();
    for r in done {
        for &(c, n) in &r.input_counts {
            if Some(c) != r.nodata {
                let sum = &mut classes.entry(c).or_default().0;
                *sum = sum.saturating_add(n);
            }
        }
        for &(c, n) in &r.output_counts {
            if Some(c) != r.output_nodata {
                let sum = &mut classes.entry(c).or_default().1;
                *sum = sum.saturating_add(n);
            }
        }
    }
    classes
        .into_iter()
        .map(|(code, (i, o))| ClassChange {
            code,
            input_pixels: i,
            output_pixels: o,
            change_percent: (i > 0).then(|| (o as f64 - i as f64) / i as f64 * 100.0),
        })
        .collect()
}

/// Agreement, Cohen's kappa and the pixel count of a confusion given as
/// (reference, candidate, count) triples.
pub fn agreement_kappa(pairs: &[(u16, u16, u64)]) -> (f64, f64, u64) {
    let sum = |it: &mut dyn Iterator<Item = u64>| it.fold(0u64, u64::saturating_add);
    let n = sum(&mut pairs.iter().map(|p| p.2));
    if n == 0 {
        return (1.0, 1.0, 0);
    }
    let equal = sum(&mut pairs.iter().filter(|p| p.0 == p.1).map(|p| p.2));
    let mut rows: BTreeMap<u16, u64> = BTreeMap::new();
    let mut cols: BTreeMap<u16, u64> = BTreeMap::new();
    for &(p, q, k) in pairs {
        for (map, code) in [(&mut rows, p), (&mut cols, q)] {
            let total = map.entry(code).or_default();
            *total = total.saturating_add(k);
        }
    }
    let nf = n as f64;
    let po = equal as f64 / nf;
    let pe: f64 = rows
        .iter()
        .map(|(c, r)| *r as f64 * *cols.get(c).unwrap_or(&0) as f64 / (nf * nf))
        .sum();
    let kappa = if pe >= 1.0 {
        1.0
    } else {
        (po - pe) / (1.0 - pe)
    };
    (po, kappa, n)
}

/// Quantity and allocation disagreement of a confusion given as
/// (reference, candidate, count) triples.
fn disagreement(pairs: &[(u16, u16, u64)]) -> Option<mapfilter_core::accuracy::Disagreement> {
    let mut codes: Vec<u16> = pairs.iter().flat_map(|p| [p.0, p.1]).collect();
    codes.sort_unstable();
    codes.dedup();
    let n = codes.len();
    let mut counts = vec![0u64; n * n];
    for &(p, q, k) in pairs {
        let (i, j) = (
            codes.binary_search(&p).unwrap_or(0),
            codes.binary_search(&q).unwrap_or(0),
        );
        counts[i * n + j] = counts[i * n + j].saturating_add(k);
    }
    mapfilter_core::accuracy::Disagreement::of_counts(n, &counts)
}

/// Writes report.json, report.html and the outputs' mosaic VRTs; with
/// `cog`, one Cloud Optimized GeoTIFF of the first mosaic.
pub fn write(
    dir: &Path,
    plan: &Plan,
    cog: Option<&Target>,
    options: &ReportOptions,
) -> Result<BatchReport> {
    let mut report = summarise(dir, plan)?;
    let state = State::open(dir)?;
    let fingerprint = plan.fingerprint();
    for (m, mosaic) in plan.mosaics.iter().enumerate() {
        let members: Vec<Member> = plan
            .tasks
            .iter()
            .filter(|t| t.mosaic == m && state.done_and_intact(t, fingerprint).is_some())
            .map(|t| Member {
                path: std::path::absolute(dir.join(&t.output)).unwrap_or(dir.join(&t.output)),
                x: t.window[0],
                y: t.window[1],
                width: t.window[2],
                height: t.window[3],
            })
            .collect();
        let Some(first) = members.first() else {
            continue;
        };
        let mut info =
            super::mosaic::read_infos(std::slice::from_ref(&first.path), Default::default())?
                .pop()
                .ok_or_else(|| Error::internal("no output to describe"))?;
        info.nodata = mosaic.classes.output_nodata.map(f64::from).or(info.nodata);
        let xml = vrt_xml(
            &members,
            (mosaic.output_width, mosaic.output_height),
            mosaic.output_geo_transform,
            &info,
        );
        let target = Target::check(&dir.join(mosaic_name(m)), true, &[])?;
        output::text::write(&Destination::File(target), &xml)?;
    }
    add_maps_and_accuracy(dir, plan, options, &mut report)?;
    let json = serde_json::to_string_pretty(&report)
        .map_err(|e| Error::internal(format!("cannot encode the report: {e}")))?;
    output::text::write(
        &Destination::File(Target::check(&dir.join("report.json"), true, &[])?),
        &json,
    )?;
    output::text::write(
        &Destination::File(Target::check(&dir.join("report.html"), true, &[])?),
        &html(&report)?,
    )?;
    if let Some(target) = cog {
        cog::write_cog(&dir.join(mosaic_name(0)), target)?;
    }
    Ok(report)
}

/// The quick-look maps, class areas and accuracy of the first mosaic.
/// A mosaic that does not read (an input broken since planning) leaves a
/// note instead of maps; a bad reference sample is an error.
fn add_maps_and_accuracy(
    dir: &Path,
    plan: &Plan,
    options: &ReportOptions,
    report: &mut BatchReport,
) -> Result<()> {
    let mosaic = dir.join(mosaic_name(0));
    let state = State::open(dir)?;
    let fingerprint = plan.fingerprint();
    let done: Vec<[usize; 4]> = plan
        .tasks
        .iter()
        .filter(|t| t.mosaic == 0 && state.done_and_intact(t, fingerprint).is_some())
        .map(|t| t.window)
        .collect();
    if done.is_empty() || !mosaic.exists() {
        if options.reference.is_some() {
            mapfilter_core::bail!(
                incomplete,
                format!(
                    "{}: no task of the batch is done, there is no mosaic to assess",
                    Setting::Reference
                ),
                hint = "run the batch first (mapfilter batch run DIR)"
            );
        }
        return Ok(());
    }
    match super::maps::scan(dir, plan, 0, &mosaic, &done, options.palette.as_ref()) {
        Ok(p) => {
            let values = p.areas.values().flat_map(|&(a, b)| [a, b]);
            let unit = AreaUnit::chosen(&options.area_unit, &p.pixel_area.unit, values)?;
            report.legend = p
                .areas
                .keys()
                .map(|&c| (p.palette.hex(c), class_label(&p.names, c)))
                .collect();
            report.pictures = vec![
                Map {
                    caption: format!("input: {}", file_name(&plan.mosaics[0].source)),
                    png: p.input_png,
                },
                Map {
                    caption: format!("smoothed: {}", mosaic_name(0).display()),
                    png: p.output_png,
                },
                Map {
                    caption: "where smoothing changed the class (red; grey: unchanged, blue: nodata in one only)".into(),
                    png: p.change_png,
                },
            ];
            report.areas = Some(AreaTable {
                unit: p.pixel_area.unit.clone(),
                shown_unit: unit.name.clone(),
                classes: p
                    .areas
                    .iter()
                    .map(|(&code, &(i, o))| ClassArea {
                        code,
                        name: p.names.get(code as usize).cloned().unwrap_or_default(),
                        input_area: i,
                        output_area: o,
                    })
                    .collect(),
                pixel_area: p.pixel_area,
                compared_pixels: p.compared,
                changed_pixels: p.changed,
            });
        }
        Err(e) => report.maps_note = Some(format!("no maps or areas: {e}")),
    }
    if let Some((points, label, strata)) = &options.reference {
        report.accuracy = Some(assess_mosaic(
            dir,
            plan,
            &mosaic,
            points,
            label,
            strata.as_deref(),
            options,
        )?);
    }
    Ok(())
}

/// The first mosaic scored against the labelled points, the input mosaic
/// (or `strata`) giving the strata.
fn assess_mosaic(
    dir: &Path,
    plan: &Plan,
    mosaic: &Path,
    points: &Path,
    label: &str,
    strata: Option<&Path>,
    options: &ReportOptions,
) -> Result<mapfilter_report::accuracy::AccuracyReport> {
    use mapfilter_core::io::ClassSource;
    use mapfilter_gdal::class_raster::ClassRaster;
    let mut map = ClassRaster::open(mosaic)?;
    let strata_path = strata.map_or_else(|| dir.join(&plan.mosaics[0].source), Path::to_path_buf);
    let mut strata_raster = ClassRaster::open(&strata_path)?;
    let sample = crate::job::reference::read_sample(
        points,
        label,
        &map.meta.projection,
        map.meta.geo_transform,
        map.size(),
    )?;
    let (map_nodata, strata_nodata) = (map.nodata_code(), strata_raster.nodata_code());
    let pixel_area = map.meta.pixel_area();
    let assessment = sample
        .score(
            &mut map,
            map_nodata,
            Some((&mut strata_raster as &mut dyn ClassSource, strata_nodata)),
            &pixel_area,
        )
        .map_err(|e| {
            if strata.is_none() && e.to_string().contains("strata raster is") {
                e.hint(format!(
                    "the output grid differs from the input's ({}): give {} on the output grid",
                    Setting::Border.is("valid"),
                    Setting::Strata
                ))
            } else {
                e
            }
        })?;
    let unit = AreaUnit::chosen(
        &options.area_unit,
        &pixel_area.unit,
        assessment.classes.iter().map(|c| c.area.value),
    )?;
    let names = match &options.palette {
        Some(f) => f.names_over(&map.meta.category_names),
        None => map.meta.category_names.clone(),
    };
    Ok(mapfilter_report::accuracy::AccuracyReport {
        title: format!(
            "Accuracy of {} against {} reference points",
            mosaic_name(0).display(),
            assessment.points
        ),
        inputs: vec![
            Input {
                role: "map".into(),
                source: mosaic.display().to_string(),
            },
            Input {
                role: "reference points".into(),
                source: format!("{} (label field {label})", points.display()),
            },
            Input {
                role: "strata".into(),
                source: strata_path.display().to_string(),
            },
        ],
        pixel_area,
        unit,
        assessment,
        names,
    })
}

/// What the minimum mapping unit did, if the batch has one.
fn mmu_html(r: &BatchReport) -> String {
    let Some(mmu) = &r.mmu else {
        return String::new();
    };
    let pixels: Vec<String> = mmu.sieved.iter().map(|s| s.threshold.to_string()).collect();
    format!(
        "<p>Minimum mapping unit <code>{}</code> ({} px, {}-connected), each mosaic sieved as one raster: {} pixels changed by it in {} of {} mosaic(s). The comparison with the baseline is of the smoothing before it; the class areas are of the outputs after it.</p>",
        page::escape(&mmu.given),
        if pixels.is_empty() {
            "–".to_string()
        } else {
            pixels.join(", ")
        },
        mmu.connectivity,
        mmu.pixels_changed,
        mmu.sieved.len(),
        r.mosaics.len()
    )
}

fn html(r: &BatchReport) -> Result<String> {
    let p = &r.provenance;
    let mut body = format!(
        "<ul><li>kernel <code>{}</code>, method {}</li><li>command: <code>{}</code></li><li>{}, {}</li></ul>",
        page::escape(&r.kernel),
        page::escape(&r.method),
        page::escape(&p.command_line),
        page::escape(&p.version),
        page::escape(&p.date)
    );
    body += &mmu_html(r);
    body += &format!(
        "<p class=\"headline\">{} of {} tasks done, {} failed, {} degraded, {} pending; {:.1} Mpx in {:.1} s of task time ({:.2} Mpx/s).</p>",
        r.done,
        r.tasks,
        r.failed.len(),
        r.degraded.len(),
        r.pending.len(),
        r.pixels_done as f64 / 1e6,
        r.task_seconds,
        r.megapixels_per_second
    );
    // What is not finished comes first, before any figure: a report of an
    // incomplete batch must not read as a complete one.
    if !(r.failed.is_empty() && r.degraded.is_empty() && r.pending.is_empty()) {
        body += &format!(
            "<p class=\"warning\"><b>Incomplete:</b> {} failed, {} done without part of their halo, {} pending; the figures below cover the {} finished tasks only.</p>",
            r.failed.len(),
            r.degraded.len(),
            r.pending.len(),
            r.done
        );
    }
    if !r.failed.is_empty() {
        body += "<h2>Failed tasks</h2>";
        let rows: Vec<Vec<String>> = r
            .failed
            .iter()
            .map(|f| {
                vec![
                    f.task.to_string(),
                    page::escape(&f.input.display().to_string()),
                    f.kind.as_deref().unwrap_or("").to_string(),
                    page::escape(&f.error),
                ]
            })
            .collect();
        body += &page::table(&["task", "input", "kind", "error"], &rows);
    }
    if !r.degraded.is_empty() {
        body += &format!(
            "<h2>Tasks done without part of their halo</h2><p>Their edges may differ from a run over the whole mosaic; run again with <code>{}</code> once the inputs read.</p>",
            Setting::RetryFailed
        );
        let rows: Vec<Vec<String>> = r
            .degraded
            .iter()
            .map(|d| {
                let missing: Vec<String> = d
                    .missing_halo
                    .iter()
                    .map(|p| page::escape(&p.display().to_string()))
                    .collect();
                vec![d.task.to_string(), missing.join("<br>")]
            })
            .collect();
        body += &page::table(&["task", "unreadable neighbours"], &rows);
    }
    if !r.pending.is_empty() {
        let list: Vec<String> = r.pending.iter().map(|t| t.to_string()).collect();
        body += &format!("<h2>Pending tasks</h2><p>{}</p>", list.join(", "));
    }
    if let Some(c) = &r.comparison {
        let pct = |v: Option<f64>| v.map_or("–".into(), |v| format!("{} %", fixed(v, 4)));
        body += &format!(
            "<h2>Against the exact baseline</h2><p>agreement {} %, kappa {}, quantity disagreement {}, allocation disagreement {} over {} pixels of {} task(s) ({} nodata in one only).</p>",
            fixed(c.agreement_percent, 4),
            fixed(c.kappa, 5),
            pct(c.quantity_disagreement_percent),
            pct(c.allocation_disagreement_percent),
            c.pixels,
            c.tasks,
            c.one_only
        );
    }
    body += &maps_html(r)?;
    body += &areas_html(r);
    if let Some(a) = &r.accuracy {
        body += &accuracy_html(a);
    }
    body += "<h2>Slowest tasks</h2>";
    let rows: Vec<Vec<String>> = r
        .slowest
        .iter()
        .map(|t| {
            vec![
                t.task.to_string(),
                page::escape(&t.output.display().to_string()),
                format!("{:.3}", t.seconds),
                format!("{:.2}", t.megapixels_per_second),
            ]
        })
        .collect();
    body += &page::table(&["task", "output", "seconds", "Mpx/s"], &rows);
    // The title says what was smoothed and how.
    let title = format!(
        "Batch report: {} smoothed with {} by {}",
        r.input, r.kernel, r.method
    );
    page::page(&title, &body)
}

/// The quick-look maps with their legend, or why there are none.
fn maps_html(r: &BatchReport) -> Result<String> {
    if let Some(note) = &r.maps_note {
        return Ok(format!("<h2>Maps</h2><p>{}</p>", page::escape(note)));
    }
    if r.pictures.is_empty() {
        return Ok(String::new());
    }
    let mut s = String::from("<h2>Maps</h2><div class=\"maps\">");
    for m in &r.pictures {
        s += &format!(
            "<figure><img class=\"map\" alt=\"{0}\" src=\"{1}\"><figcaption>{0}</figcaption></figure>",
            page::escape(&m.caption),
            page::png_data_uri(&m.png)
        );
    }
    s += "</div><p class=\"legend\">";
    for (hex, label) in &r.legend {
        s += &format!(
            "<span class=\"item\"><span class=\"swatch\" style=\"background:{hex}\"></span>{}</span>",
            page::escape(label)
        );
    }
    s += "</p>";
    Ok(s)
}

/// Class areas before and after (ground units where the mosaic has them;
/// else the records' pixel counts).
fn areas_html(r: &BatchReport) -> String {
    let mut s = String::from("<h2>Class area change</h2>");
    let Some(t) = &r.areas else {
        let rows: Vec<Vec<String>> = r
            .classes
            .iter()
            .map(|c| {
                vec![
                    c.code.to_string(),
                    c.input_pixels.to_string(),
                    c.output_pixels.to_string(),
                    c.change_percent
                        .map_or("".into(), |p| format!("{} %", signed(p, 2))),
                ]
            })
            .collect();
        s += &page::table(&["class", "input pixels", "output pixels", "change"], &rows);
        return s;
    };
    let unit = AreaUnit::chosen(&t.shown_unit.replace('²', "2"), &t.unit, [0.0])
        .unwrap_or_else(|_| AreaUnit::for_values(&t.unit, [0.0]));
    s += &format!(
        "<p>Over the {} finished task(s): smoothing changed the class of {} of {} pixels ({} %). Areas in {}.</p>",
        r.done,
        t.changed_pixels,
        t.compared_pixels,
        fixed(
            100.0 * t.changed_pixels as f64 / t.compared_pixels.max(1) as f64,
            2
        ),
        page::escape(&unit.name)
    );
    let rows: Vec<Vec<String>> = t
        .classes
        .iter()
        .map(|c| {
            let label = r
                .legend
                .iter()
                .find(|(_, l)| l == &class_label_of(c))
                .map_or(String::new(), |(hex, _)| {
                    format!("<span class=\"swatch\" style=\"background:{hex}\"></span>")
                });
            let change = c.output_area - c.input_area;
            vec![
                label + &page::escape(&class_label_of(c)),
                unit.show(c.input_area),
                unit.show(c.output_area),
                plus(unit.show(change)),
                if c.input_area > 0.0 {
                    format!("{} %", signed(100.0 * change / c.input_area, 2))
                } else {
                    "–".into()
                },
            ]
        })
        .collect();
    let header = [
        "class".to_string(),
        format!("before ({})", unit.name),
        format!("after ({})", unit.name),
        format!("change ({})", unit.name),
        "change (%)".to_string(),
    ];
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    s += &page::table(&header, &rows);
    s
}

fn class_label_of(c: &ClassArea) -> String {
    if c.name.trim().is_empty() {
        c.code.to_string()
    } else {
        format!("{} {}", c.code, c.name)
    }
}

/// `v` with `digits` decimals and a sign (+ for gains; none for zero).
fn signed(v: f64, digits: usize) -> String {
    plus(fixed(v, digits))
}

/// A written figure with "+" before a gain (zero and losses as they are).
fn plus(s: String) -> String {
    if s.starts_with('-') || s.chars().all(|c| c == '0' || c == '.') {
        s
    } else {
        format!("+{s}")
    }
}

/// The accuracy section: headline figures and the classes table.
fn accuracy_html(a: &mapfilter_report::accuracy::AccuracyReport) -> String {
    let esc = |rows: Vec<Vec<String>>| -> Vec<Vec<String>> {
        rows.into_iter()
            .map(|r| r.iter().map(|c| page::escape(c)).collect())
            .collect()
    };
    let mut s = format!(
        "<h2>{}</h2><p>Stratified estimators (Olofsson et al. 2014; Stehman 2014 where the strata differ from the map classes), strata from <code>{}</code>; intervals are 95 % (±1.96 standard errors).</p>",
        page::escape(&a.title),
        page::escape(a.inputs.last().map_or("", |i| i.source.as_str()))
    );
    let headline = a.headline().into_iter().map(|r| r.to_vec()).collect();
    s += &page::table(&["figure", "value"], &esc(headline));
    let (header, rows) = a.class_table();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    s += &page::table(&header, &esc(rows));
    s
}
