//! Filtering one continuous raster through a chain of image ops into new
//! GeoTIFFs: [`FilterSpec`] says what, [`FilterPlan::new`] parses the ops
//! and checks every output before any work, [`run`] does it and returns a
//! [`FilterReport`].
//!
//! A level op (a pyramid or a scale space) expands into one chain per
//! level: each level to its own file beside the output, or (pyramids) the
//! levels as the output's overviews. On an OpenCL device a Gaussian
//! pyramid or scale space (alone or followed by `scharr:N`) runs as one
//! device job instead ([`mapfilter_core::filter::device::pyramid_levels`]): the
//! levels are built and filtered on the device and written whole.

use super::observer::Observer;
use gdal::raster::GdalDataType;
use mapfilter_core::error::{Result, Setting};
use mapfilter_core::filter::device::pyramid_levels::{self, LevelJob};
use mapfilter_core::filter::device::pyramid_store::Store;
use mapfilter_core::filter::engine::{self, FilterJob};
use mapfilter_core::filter::levels::{Levels, Split};
use mapfilter_core::filter::run_on::RunOn;
use mapfilter_core::filter::{BorderMode, Chain};
use mapfilter_core::io::{ImageSink, ImageSource};
use mapfilter_core::output::{self, Target};
use mapfilter_gdal::image_raster::{ImageRaster, LevelSink, gdal_type};
use mapfilter_gdal::output_options::OutputCompression;
use mapfilter_gdal::output_raster::{OutputRaster, OutputSpec};
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where a level op's levels go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelOutput {
    /// `OUTPUT_L0.tif`, `OUTPUT_L1.tif`, … (scale spaces `OUTPUT_O0_S0.tif`, …).
    Files,
    /// Level 0 in the output, level k as its k-th overview.
    Overviews,
}

/// What to filter, how, and where to write it.
#[derive(Clone, Debug)]
pub struct FilterSpec {
    pub input: PathBuf,
    pub output: PathBuf,
    /// The ops as given (`--op`), one chain run in one pass.
    pub ops: Vec<String>,
    pub levels: LevelOutput,
    pub run_on: RunOn,
    pub border: BorderMode,
    pub tile: usize,
    /// The output's data type instead of the chain's (values rounded and
    /// clamped as gdal_translate -ot does); refused where nodata does not fit.
    pub output_type: Option<GdalDataType>,
    /// Compression of continuous outputs.
    pub compression: OutputCompression,
    pub overwrite: bool,
}

impl FilterSpec {
    /// Every file the run reads: the input and the ops' kernel files.
    pub fn inputs(&self) -> Vec<&Path> {
        let mut inputs = vec![self.input.as_path()];
        inputs.extend(mapfilter_core::filter::op::files_read(&self.ops));
        inputs
    }
}

/// The spec's chains and their outputs, every one checked.
pub struct FilterPlan {
    runs: Runs,
    /// The level op and the ops around it, where there is one.
    split: Option<Split>,
}

enum Runs {
    /// One chain per output (no level op, or levels as files).
    Chains(Vec<(Chain, Target)>),
    /// Every level's chain into one output and its overviews.
    Overviews {
        levels: Levels,
        chains: Vec<Chain>,
        target: Target,
    },
}

impl FilterPlan {
    /// Parses the ops (expanding a level op) and checks every output path,
    /// before anything is read or written but the input's first band.
    pub fn new(spec: &FilterSpec) -> Result<Self> {
        warn_if_classes(&spec.input)?;
        let inputs = spec.inputs();
        let check = |path: &Path| Target::check(path, spec.overwrite, &inputs);
        let Some((levels, before, after)) = Levels::split(&spec.ops)? else {
            let chain = Chain::parse(&spec.ops)?;
            let target = check(&spec.output)?;
            return Ok(FilterPlan {
                runs: Runs::Chains(vec![(chain, target)]),
                split: None,
            });
        };
        if spec.levels == LevelOutput::Overviews {
            let chains = levels
                .chains(&before, &after)
                .iter()
                .map(|l| Chain::parse(&l.ops))
                .collect::<Result<Vec<_>>>()?;
            let target = check(&spec.output)?;
            return Ok(FilterPlan {
                runs: Runs::Overviews {
                    levels: levels.clone(),
                    chains,
                    target,
                },
                split: Some((levels, before, after)),
            });
        }
        let mut runs = Vec::new();
        for level in levels.chains(&before, &after) {
            let target = check(&level_path(&spec.output, &level.suffix))?;
            runs.push((Chain::parse(&level.ops)?, target));
        }
        let plan = FilterPlan {
            runs: Runs::Chains(runs),
            split: Some((levels, before, after)),
        };
        output::distinct(&plan.targets())?;
        Ok(plan)
    }

    /// Every output the plan writes.
    pub fn targets(&self) -> Vec<&Target> {
        match &self.runs {
            Runs::Chains(runs) => runs.iter().map(|(_, t)| t).collect(),
            Runs::Overviews { target, .. } => vec![target],
        }
    }
}

/// One output written.
#[derive(Clone, Debug, Serialize)]
pub struct FilterOutput {
    pub output: PathBuf,
    pub width: usize,
    pub height: usize,
    pub bands: usize,
    /// GDAL's name of the output's data type.
    pub data_type: String,
    /// The output's nodata value (a NaN nodata is left out).
    pub nodata: Option<f64>,
    /// The chain's radius (one chain per output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub radius: Option<usize>,
    /// Overviews holding the levels after the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overviews: Option<usize>,
    pub runner: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiles: Option<usize>,
    pub seconds: f64,
    /// Ops in the chain, or levels written as overviews (for [`Self::line`]).
    #[serde(skip)]
    count: usize,
}

impl FilterOutput {
    /// The one line the command prints for it.
    pub fn line(&self) -> String {
        let size = format!("{}x{}, {} bands", self.width, self.height, self.bands);
        let output = self.output.display();
        match (self.radius, self.tiles) {
            (Some(radius), Some(tiles)) => format!(
                "wrote {output} ({size}, {} ops, radius {radius}, {} in {:.3} s, {tiles} tiles)",
                self.count, self.runner, self.seconds
            ),
            _ => format!(
                "wrote {output} ({size}, {} levels as overviews, {} in {:.3} s)",
                self.count, self.runner, self.seconds
            ),
        }
    }
}

/// What a run wrote, in order.
#[derive(Clone, Debug)]
pub struct FilterReport {
    pub outputs: Vec<FilterOutput>,
}

/// Runs the plan of `spec`; the observer gives each output's progress bar
/// (label `filter`).
pub fn run(
    spec: &FilterSpec,
    plan: FilterPlan,
    observer: &mut dyn Observer,
) -> Result<FilterReport> {
    if let Some(outputs) = run_device_levels(spec, &plan, observer)? {
        return Ok(FilterReport { outputs });
    }
    let mut outputs = Vec::new();
    match plan.runs {
        Runs::Chains(runs) => {
            for (chain, target) in runs {
                outputs.push(run_chain(spec, chain, &target, observer)?);
            }
        }
        Runs::Overviews {
            levels,
            chains,
            target,
        } => {
            outputs.push(run_overviews(spec, &levels, chains, &target, observer)?);
        }
    }
    Ok(FilterReport { outputs })
}

/// A colour table marks a class map: image ops take means and medians of
/// its codes, which is rarely meant; said, not refused (codes may be values).
fn warn_if_classes(input: &Path) -> Result<()> {
    let ds = mapfilter_gdal::class_raster::open(input)?;
    let band = ds
        .rasterband(1)
        .map_err(mapfilter_gdal::errors::gdal_error)?;
    if band.color_table().is_some() {
        log::warn!(
            "{}: band 1 has a colour table, so it probably holds classes: filter computes with the codes as numbers (use `mapfilter smooth` to smooth classes)",
            input.display()
        );
    }
    Ok(())
}

/// `OUTPUT` with `_SUFFIX` before its extension.
fn level_path(output: &Path, suffix: &str) -> PathBuf {
    let stem = output.file_stem().unwrap_or_default().to_string_lossy();
    let name = match output.extension() {
        Some(ext) => format!("{stem}_{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}_{suffix}"),
    };
    output.with_file_name(name)
}

/// Runs every level's chain into one GeoTIFF: level 0 the raster, level k
/// its k-th overview (each level ⌈size/2^k⌉, as GDAL sizes overviews).
fn run_overviews(
    spec: &FilterSpec,
    levels: &Levels,
    chains: Vec<Chain>,
    target: &Target,
    observer: &mut dyn Observer,
) -> Result<FilterOutput> {
    let mut input = ImageRaster::open(&spec.input)?;
    check_overviews(levels, &chains, &input)?;
    let out = output_spec(spec, &chains[0], &input)?;
    let runner = spec.run_on.runner()?;
    let mut output = OutputRaster::create(target, &out)?;
    let overviews = chains.len() - 1;
    output.add_overviews(overviews)?;
    let progress = observer.progress("filter");
    let start = Instant::now();
    for (level, chain) in chains.into_iter().enumerate() {
        let job = FilterJob {
            chain,
            border: spec.border,
            tile: spec.tile,
        };
        let mut sink = LevelSink {
            raster: &mut output,
            level,
        };
        engine::filter(&mut input, &mut sink, &job, runner.as_ref(), &progress)?;
    }
    output.finish()?;
    Ok(FilterOutput {
        overviews: Some(overviews),
        count: levels.count(),
        seconds: start.elapsed().as_secs_f64(),
        ..written(target, &out, runner.name())
    })
}

/// Refuses levels that GeoTIFF overviews cannot hold: a scale space, or
/// levels after the first that are not ⌈size/2^k⌉ of its type.
fn check_overviews(levels: &Levels, chains: &[Chain], input: &ImageRaster) -> Result<()> {
    let hint = format!(
        "write the levels as files ({})",
        Setting::Levels.is("files")
    );
    if matches!(levels, Levels::ScaleSpace { .. }) {
        mapfilter_core::bail!(
            usage,
            "a scale space has several levels of one size, which overviews cannot hold",
            hint = hint
        );
    }
    let size = (input.meta.width, input.meta.height);
    for (k, chain) in chains.iter().enumerate() {
        let want = (size.0.div_ceil(1 << k), size.1.div_ceil(1 << k));
        if chain.out_size(size) != want
            || chain.out_type(input.sample_type) != chains[0].out_type(input.sample_type)
        {
            mapfilter_core::bail!(
                usage,
                format!(
                    "level {k} is not an overview of level 0 (the ops after the level op change its size or type)"
                ),
                hint = hint
            );
        }
    }
    Ok(())
}

/// Runs the plan's level op as one device job where it can
/// ([`LevelJob::of`], `--device` naming an OpenCL device); `None` leaves
/// it to the level-by-level path.
fn run_device_levels(
    spec: &FilterSpec,
    plan: &FilterPlan,
    observer: &mut dyn Observer,
) -> Result<Option<Vec<FilterOutput>>> {
    let Some((levels, before, after)) = &plan.split else {
        return Ok(None);
    };
    let mapfilter_core::filter::run_on::RunOn::Choice(choice) = &spec.run_on else {
        return Ok(None);
    };
    let mut input = ImageRaster::open(&spec.input)?;
    let Some(job) = LevelJob::of(levels, before, after, input.meta.nodata, spec.border)? else {
        return Ok(None);
    };
    let Some(dev) = choice.resolve()? else {
        return Ok(None);
    };
    let chains = levels
        .chains(before, after)
        .iter()
        .map(|l| Chain::parse(&l.ops))
        .collect::<Result<Vec<_>>>()?;
    let specs = chains
        .iter()
        .map(|c| output_spec(spec, c, &input))
        .collect::<Result<Vec<_>>>()?;
    let store = Store::chosen()?;
    let runner = format!(
        "OpenCL {}, pyramid on the device ({} store)",
        dev.info().name,
        store.name()
    );
    let (w, h) = input.size();
    let progress = observer.progress("filter");
    progress.start(chains.len() as u64, "levels");
    let start = Instant::now();
    let bands = input.read(tiles::Rect::new(0, 0, w, h))?;
    let whole = |k: usize| tiles::Rect::new(0, 0, specs[k].width, specs[k].height);
    let mut outputs = Vec::new();
    match &plan.runs {
        Runs::Chains(runs) => {
            let mut levels = Vec::with_capacity(runs.len());
            mapfilter_core::with_bands!(&bands, p => pyramid_levels::run(&dev, store, &job, p, spec.border, |k, out| {
                levels.push((k, out));
                Ok(())
            }))?;
            // Every level is its own file: they are encoded and written side
            // by side, where one after another the writes would be the
            // command's longest stage.
            outputs = levels
                .into_par_iter()
                .map(|(k, out)| {
                    let (chain, target) = &runs[k];
                    let mut raster = OutputRaster::create(target, &specs[k])?;
                    raster.write(whole(k), &out)?;
                    raster.finish()?;
                    Ok(FilterOutput {
                        radius: Some(chain.radius()),
                        tiles: Some(1),
                        count: chain.ops.len(),
                        seconds: start.elapsed().as_secs_f64(),
                        ..written(target, &specs[k], runner.clone())
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            progress.inc(outputs.len() as u64);
        }
        Runs::Overviews { target, .. } => {
            check_overviews(levels, &chains, &input)?;
            let mut raster = OutputRaster::create(target, &specs[0])?;
            raster.add_overviews(chains.len() - 1)?;
            mapfilter_core::with_bands!(&bands, p => pyramid_levels::run(&dev, store, &job, p, spec.border, |k, out| {
                LevelSink { raster: &mut raster, level: k }.write(whole(k), &out)?;
                progress.inc(1);
                Ok(())
            }))?;
            raster.finish()?;
            outputs.push(FilterOutput {
                overviews: Some(chains.len() - 1),
                count: levels.count(),
                seconds: start.elapsed().as_secs_f64(),
                ..written(target, &specs[0], runner)
            });
        }
    }
    progress.finish();
    Ok(Some(outputs))
}

/// The output of `chain` on `input` (checked).
fn output_spec(spec: &FilterSpec, chain: &Chain, input: &ImageRaster) -> Result<OutputSpec> {
    let nd = input.meta.nodata;
    chain
        .check(input.bands, input.sample_type, spec.border, nd)
        .map_err(|e| e.context(spec.input.display()))?;
    let (width, height) = chain.out_size((input.meta.width, input.meta.height));
    let nodata = chain.out_nodata(input.sample_type, nd);
    let data_type = match spec.output_type {
        Some(t) => checked_type(t, nodata)?,
        None => gdal_type(chain.out_type(input.sample_type)),
    };
    Ok(OutputSpec {
        width,
        height,
        bands: chain.out_bands(input.bands),
        data_type,
        geo_transform: input.meta.geo_transform.map(|gt| chain.geo_transform(gt)),
        projection: input.meta.projection.clone(),
        nodata,
        colors: Vec::new(),
        category_names: Vec::new(),
        compression: spec.compression.clone(),
    })
}

/// Runs one chain from the input into `target`.
fn run_chain(
    spec: &FilterSpec,
    chain: Chain,
    target: &Target,
    observer: &mut dyn Observer,
) -> Result<FilterOutput> {
    let mut input = ImageRaster::open(&spec.input)?;
    let out = output_spec(spec, &chain, &input)?;
    let runner = spec.run_on.runner()?;
    let mut output = OutputRaster::create(target, &out)?;
    let job = FilterJob {
        chain,
        border: spec.border,
        tile: spec.tile,
    };
    let progress = observer.progress("filter");
    let stats = engine::filter(&mut input, &mut output, &job, runner.as_ref(), &progress)?;
    output.finish()?;
    Ok(FilterOutput {
        radius: Some(job.chain.radius()),
        tiles: Some(stats.tiles),
        count: job.chain.ops.len(),
        seconds: stats.wall.as_secs_f64(),
        ..written(target, &out, runner.name())
    })
}

/// What every output reports about itself.
fn written(target: &Target, out: &OutputSpec, runner: String) -> FilterOutput {
    FilterOutput {
        output: target.shown().to_path_buf(),
        width: out.width,
        height: out.height,
        bands: out.bands,
        data_type: out.data_type.name(),
        nodata: out.nodata.filter(|v| v.is_finite()),
        radius: None,
        overviews: None,
        runner,
        tiles: None,
        seconds: 0.0,
        count: 0,
    }
}

/// `t` for an output whose nodata is `nodata`, refused where the value has
/// no place in it.
fn checked_type(t: GdalDataType, nodata: Option<f64>) -> Result<GdalDataType> {
    let range = match t {
        GdalDataType::UInt8 => Some((0.0, 255.0)),
        GdalDataType::UInt16 => Some((0.0, 65535.0)),
        GdalDataType::Int16 => Some((-32768.0, 32767.0)),
        _ => None,
    };
    if let (Some(v), Some((lo, hi))) = (nodata, range)
        && (v.is_nan() || v.fract() != 0.0 || v < lo || v > hi)
    {
        mapfilter_core::bail!(
            usage,
            format!(
                "{}: the output's nodata value {v} is not a {} value",
                Setting::Ot.is(t.name()),
                t.name()
            ),
            hint = "choose a type that holds it (Float32 holds any), or set another nodata on the input with gdal_edit.py -a_nodata"
        );
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_paths_and_types() {
        assert_eq!(
            level_path(Path::new("d/out.tif"), "L1"),
            Path::new("d/out_L1.tif")
        );
        assert_eq!(level_path(Path::new("out"), "L0"), Path::new("out_L0"));
        assert!(checked_type(GdalDataType::UInt8, Some(-1.0)).is_err());
        assert!(checked_type(GdalDataType::Int16, Some(-32768.0)).is_ok());
        assert!(checked_type(GdalDataType::UInt16, Some(f64::NAN)).is_err());
        assert!(checked_type(GdalDataType::Float32, Some(f64::NAN)).is_ok());
    }
}
