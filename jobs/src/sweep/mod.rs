//! Parameter sweeps: the thesis' experiments (run time and agreement against
//! image size, kernel size, class count and kernel rank) for every method and
//! device a TOML config lists, on synthetic inputs made on the fly.
//!
//! GDAL-free on purpose: inputs come from [`SynthRaster`] (tile by tile, never
//! a file), outputs go to memory through [`engine::smooth`], and agreement is
//! measured with [`mapfilter_core::metrics`] against the config's exact reference
//! method, so the same binary runs on machines without libgdal (the GPU
//! machine). [`output`] writes CSV and JSON; [`report`] the HTML.
//!
//! A config (see `benches/sweeps/*.toml`):
//!
//! ```toml
//! title = "Run time against image size"
//! methods = ["naive@host", "svd@gpu"]
//! reference = "naive@host"   # exact baseline for agreement; "none" skips it
//! repeats = 3                # timed runs per point (median reported)
//! [base]                     # settings shared by every experiment
//! kernel = "gaussian"        # family (gaussian, box, disc) sized by kernel_size, or a full spec
//! kernel_size = 7
//! classes = 8
//! [[experiment]]
//! name = "image_size"
//! vary = "size"              # size, kernel_size, classes, rank, terms, tile,
//!                            # iterations or only_isolated
//! values = [256, 512, 1024]
//! set = { classes = 16 }     # optional overrides for this experiment
//! ```
//!
//! The smoothing policies are settings too (docs/semantics.md#policies):
//! `ties = "smallest"`, `keep = "0,3"`, `no_vote = "5"`, `only_isolated = 3`,
//! `iterations = 2`.
//! `input = "map.tif"` (or a list) runs every experiment on real class
//! rasters instead ([`source`]); size, class count and pattern then come
//! from the raster, so experiments may vary kernel_size, rank, terms or tile.

pub mod methods;
pub mod output;
pub mod report;
pub mod source;

use mapfilter_core::bail;
use mapfilter_core::classes::{ClassTable, ClassWeights};
use mapfilter_core::engine::{self, SmoothJob};
use mapfilter_core::error::{Error, Result};
use mapfilter_core::io::MemRaster;
use mapfilter_core::kernel::KernelSpec;
use mapfilter_core::method::ClassSmoother;
use mapfilter_core::method::policy::{Policies, PolicyText};
use mapfilter_core::metrics;
use mapfilter_core::progress::Progress;
use mapfilter_core::synth::{Pattern, SynthRaster};
use methods::{MethodCache, MethodName, MethodOptions};
use serde::{Deserialize, Serialize};
pub use source::Source;
use std::path::Path;
use std::time::Duration;
use tiles::Border;

/// A sweep config as written in TOML.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// `METHOD@DEVICE` names run at every point.
    pub methods: Vec<String>,
    /// Exact method the others are compared with; `"none"` skips agreement.
    #[serde(default = "default_reference")]
    pub reference: String,
    /// Timed runs per method and point; the median is reported.
    #[serde(default = "default_repeats")]
    pub repeats: usize,
    /// One untimed run per method and point before the timed ones (caches, JIT).
    #[serde(default)]
    pub warmup: bool,
    /// Real class rasters to run every experiment on instead of synthetic
    /// ones: `input = "map.tif"` or a list (relative to the config file).
    #[serde(default, deserialize_with = "source::one_or_many")]
    pub input: Vec<String>,
    #[serde(default)]
    pub base: Settings,
    #[serde(rename = "experiment")]
    pub experiments: Vec<Experiment>,
}

fn default_reference() -> String {
    "naive@host".into()
}

fn default_repeats() -> usize {
    1
}

/// One experiment: one setting varied over `values`, the rest fixed.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Short name (file-name safe), e.g. `fig4_1_image_size`.
    pub name: String,
    /// Heading in the report; the name when empty.
    #[serde(default)]
    pub title: String,
    pub vary: Variable,
    pub values: Vec<usize>,
    /// Settings for this experiment on top of the config's `base`.
    #[serde(default)]
    pub set: Settings,
    /// Methods for this experiment instead of the config's.
    #[serde(default)]
    pub methods: Option<Vec<String>>,
    /// Plot run time on a log₁₀ axis.
    #[serde(default)]
    pub log_time: bool,
}

impl Experiment {
    pub fn heading(&self) -> &str {
        if self.title.is_empty() {
            &self.name
        } else {
            &self.title
        }
    }
}

/// The setting an experiment varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Variable {
    /// Side of the square image in pixels.
    Size,
    /// Kernel side N.
    KernelSize,
    /// Number of classes.
    Classes,
    /// Kernel rank kept by `svd`.
    Rank,
    /// DCT terms of `dct5`.
    Terms,
    /// Tile side.
    Tile,
    /// Passes of the whole smoothing (`--iterations`).
    Iterations,
    /// The threshold T of `--only-isolated`.
    OnlyIsolated,
}

impl Variable {
    /// The name used in configs and CSV files.
    pub fn name(self) -> &'static str {
        match self {
            Variable::Size => "size",
            Variable::KernelSize => "kernel_size",
            Variable::Classes => "classes",
            Variable::Rank => "rank",
            Variable::Terms => "terms",
            Variable::Tile => "tile",
            Variable::Iterations => "iterations",
            Variable::OnlyIsolated => "only_isolated",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Variable::Size => "image side (pixels)",
            Variable::KernelSize => "kernel side N",
            Variable::Classes => "classes",
            Variable::Rank => "kernel rank",
            Variable::Terms => "DCT terms K",
            Variable::Tile => "tile side (pixels)",
            Variable::Iterations => "iterations",
            Variable::OnlyIsolated => "only-isolated threshold T",
        }
    }

    /// Whether plots use a log₂ x axis (as the thesis' figures do for sizes and counts).
    pub fn log2_axis(self) -> bool {
        !matches!(
            self,
            Variable::Rank | Variable::Terms | Variable::Iterations | Variable::OnlyIsolated
        )
    }
}

/// Settings of one run; unset fields fall back to `base`, then to defaults.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Side of the square image.
    pub size: Option<usize>,
    /// `gaussian`, `box`, `disc` (sized by `kernel_size`) or a full spec such as `disc:5`.
    pub kernel: Option<String>,
    pub kernel_size: Option<usize>,
    pub classes: Option<u16>,
    /// `simplex` or `random`.
    pub pattern: Option<String>,
    /// Feature size of the simplex pattern in pixels.
    pub scale: Option<f64>,
    pub seed: Option<u64>,
    pub rank: Option<usize>,
    pub terms: Option<usize>,
    pub tile: Option<usize>,
    /// `same` or `valid`.
    pub border: Option<String>,
    /// `--ties`: centre, smallest, largest or undecided:CODE.
    pub ties: Option<String>,
    /// `--keep CODES`, e.g. "0,3".
    pub keep: Option<String>,
    /// `--no-vote CODES`.
    pub no_vote: Option<String>,
    /// `--only-isolated T`.
    pub only_isolated: Option<u32>,
    /// `--iterations N`.
    pub iterations: Option<usize>,
}

impl Settings {
    /// `self` with `over`'s set fields on top.
    fn overlay(&self, over: &Settings) -> Settings {
        macro_rules! pick {
            ($($f:ident),*) => { Settings { $($f: over.$f.clone().or_else(|| self.$f.clone())),* } };
        }
        pick!(
            size,
            kernel,
            kernel_size,
            classes,
            pattern,
            scale,
            seed,
            rank,
            terms,
            tile,
            border,
            ties,
            keep,
            no_vote,
            only_isolated,
            iterations
        )
    }

    fn with(mut self, var: Variable, value: usize) -> Result<Settings> {
        match var {
            Variable::Size => self.size = Some(value),
            Variable::KernelSize => self.kernel_size = Some(value),
            Variable::Classes => {
                self.classes = Some(u16::try_from(value).map_err(|_| {
                    Error::usage(format!("{value} classes is too many")).hint("at most 256")
                })?)
            }
            Variable::Rank => self.rank = Some(value),
            Variable::Terms => self.terms = Some(value),
            Variable::Tile => self.tile = Some(value),
            Variable::Iterations => self.iterations = Some(value),
            Variable::OnlyIsolated => {
                self.only_isolated = Some(u32::try_from(value).map_err(|_| {
                    Error::usage(format!("only_isolated {value} is too large"))
                        .hint("at most the window's pixel count")
                })?)
            }
        }
        Ok(self)
    }

    /// The concrete run settings.
    pub fn point(&self) -> Result<Point> {
        let kernel_size = self.kernel_size.unwrap_or(7);
        let family = self.kernel.clone().unwrap_or_else(|| "gaussian".into());
        let kernel = match family.as_str() {
            _ if family.contains(':') => family.clone(),
            _ if kernel_size.is_multiple_of(2) => bail!(
                usage,
                format!("kernel_size {kernel_size} is not odd"),
                hint = "kernel sides are odd: 3, 5, 7, ..."
            ),
            // σ = (N−1)/6 to 4 decimals (the side is forced to N anyway).
            "gaussian" => {
                let sigma = format!("{:.4}", (kernel_size - 1) as f64 / 6.0);
                format!(
                    "gaussian:{}",
                    sigma.trim_end_matches('0').trim_end_matches('.')
                )
            }
            "box" => format!("box:{kernel_size}"),
            "disc" => format!("disc:{}", kernel_size / 2),
            other => bail!(
                usage,
                format!("kernel '{other}' is neither a family nor a spec"),
                hint = "use gaussian, box, disc, or a spec such as disc:5"
            ),
        };
        let pattern = match self.pattern.as_deref().unwrap_or("simplex") {
            "simplex" => Pattern::Simplex,
            "random" => Pattern::Random,
            other => bail!(
                usage,
                format!("pattern '{other}' is unknown"),
                hint = "simplex or random"
            ),
        };
        let border: Border = self.border.as_deref().unwrap_or("same").parse()?;
        let classes = self.classes.unwrap_or(8);
        if classes == 0 || classes as usize > mapfilter_core::classes::MAX_CLASSES {
            bail!(
                usage,
                format!("{classes} classes is out of range"),
                hint = "between 1 and 256"
            );
        }
        let size = self.size.unwrap_or(1024);
        if size == 0 {
            bail!(usage, "image size 0", hint = "use a positive size");
        }
        mapfilter_core::limits::check_in_memory(
            size,
            size,
            mapfilter_core::limits::IN_MEMORY_RUN_BYTES,
            "a sweep image",
        )?;
        let policies = PolicyText {
            ties: self.ties.as_deref(),
            keep: self.keep.as_deref(),
            no_vote: self.no_vote.as_deref(),
            only_isolated: self.only_isolated,
            iterations: self.iterations,
        }
        .parse()?;
        Ok(Point {
            size,
            // A family kernel gets exactly the requested side (gaussian: σ = (N−1)/6).
            kernel_size: (!family.contains(':')).then_some(kernel_size),
            kernel,
            classes,
            pattern,
            scale: self.scale.unwrap_or(64.0),
            seed: self.seed.unwrap_or(1),
            rank: self.rank,
            terms: self.terms,
            tile: self.tile.unwrap_or(mapfilter_core::io::DEFAULT_TILE),
            border,
            policies,
        })
    }
}

/// Fully resolved settings of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub size: usize,
    pub kernel: String,
    /// Side forced on a Gaussian family kernel.
    pub kernel_size: Option<usize>,
    pub classes: u16,
    pub pattern: Pattern,
    pub scale: f64,
    pub seed: u64,
    pub rank: Option<usize>,
    pub terms: Option<usize>,
    pub tile: usize,
    pub border: Border,
    pub policies: Policies,
}

impl Point {
    pub fn input(&self) -> SynthRaster {
        SynthRaster::new(self.size, self.size, self.classes, self.pattern, self.seed)
            .with_scale(self.scale)
    }

    /// [`Point::job`] with a real input's classes and nodata.
    pub fn job_on(&self, source: Option<&Source>) -> Result<SmoothJob> {
        let mut job = self.job()?;
        if let Some(s) = source {
            job.class_weights = ClassWeights::default().quantise(&s.table);
            job.output_nodata = s.table.output_nodata(u16::MAX);
            job.classes = s.table.clone();
        }
        Ok(job)
    }

    pub fn job(&self) -> Result<SmoothJob> {
        let mut spec: KernelSpec = self.kernel.parse()?;
        if matches!(spec, KernelSpec::Gaussian { .. }) {
            spec = spec.with_size(self.kernel_size)?;
        }
        let kernel = spec.build()?;
        let codes: Vec<u16> = (0..self.classes).collect();
        let mut classes = ClassTable::from_codes(&codes, None)?;
        if let Some(code) = self.policies.ties.undecided() {
            classes = classes.with_code(code, u16::MAX)?;
        }
        Ok(SmoothJob {
            class_weights: ClassWeights::default().quantise(&classes),
            output_nodata: classes.output_nodata(u16::MAX),
            kernel,
            classes,
            border: self.border,
            fill_nodata: false,
            tile: self.tile,
            policies: self.policies.clone(),
        })
    }

    fn options(&self) -> MethodOptions {
        MethodOptions {
            rank: self.rank,
            terms: self.terms,
        }
    }
}

/// One measured run: a method at one point of one experiment.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub experiment: String,
    pub variable: Variable,
    pub value: usize,
    /// `METHOD@DEVICE` as configured.
    pub method: String,
    /// The method's own description ([`ClassSmoother::name`]).
    pub method_name: String,
    pub exact: bool,
    pub width: usize,
    pub height: usize,
    pub kernel: String,
    pub kernel_side: usize,
    pub classes: u16,
    pub pattern: String,
    pub rank: Option<usize>,
    pub terms: Option<usize>,
    pub tile: usize,
    pub repeats: usize,
    /// Median wall time of a whole run (engine, all tiles).
    pub seconds: f64,
    pub seconds_min: f64,
    /// Median time spent inside the method.
    pub compute_seconds: f64,
    pub mpixels_per_second: f64,
    /// Agreement with the reference method in percent (`None` without a reference).
    pub agreement_percent: Option<f64>,
    pub kappa: Option<f64>,
    /// The real raster run on (`None`: synthetic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The output scored against a reference sample (`sweep --reference`):
    /// accuracy and class areas with their 95 % intervals.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<mapfilter_core::accuracy::Assessment>,
}

/// Scores a sweep output (with its nodata code) against reference data:
/// `sweep --reference` passes one that places a labelled sample on the
/// input's grid ([`mapfilter_core::accuracy::ReferenceSample::score`]).
pub type Scorer<'a> =
    dyn FnMut(&mut MemRaster, Option<u16>) -> Result<mapfilter_core::accuracy::Assessment> + 'a;

/// What the outputs were scored against, for the reports (the areas in
/// [`Record::accuracy`] are in `pixel_area.unit`).
#[derive(Clone, Debug, Serialize)]
pub struct ReferenceInfo {
    /// The points' file and label field, in words.
    pub points: String,
    /// The raster whose classes are the sample's strata, in words.
    pub strata: String,
    pub pixel_area: mapfilter_core::pixel_area::PixelArea,
    /// The unit the report shows areas in.
    pub shown_area_unit: String,
    #[serde(skip)]
    pub unit: mapfilter_report::numbers::AreaUnit,
    /// Category names by code (may be empty).
    #[serde(skip)]
    pub names: Vec<String>,
    /// The classes' colours in the plots.
    #[serde(skip)]
    pub palette: mapfilter_report::quicklook::Palette,
}

/// A scorer and what it scores against.
pub struct Scoring<'a> {
    pub info: ReferenceInfo,
    pub score: Box<Scorer<'a>>,
}

/// Everything a sweep produced.
#[derive(Clone, Debug, Serialize)]
pub struct SweepResult {
    pub config: Config,
    pub machine: Machine,
    pub records: Vec<Record>,
    pub failures: Vec<Failure>,
    /// What `--reference` scored the outputs against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceInfo>,
}

/// What the sweep ran on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub os: String,
    pub arch: String,
    pub host_threads: usize,
    pub mapfilter_version: String,
}

impl Machine {
    pub fn this() -> Self {
        Machine {
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            host_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            mapfilter_version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

impl Config {
    /// Reads and checks a config file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = mapfilter_core::limits::read_text_file(path, "sweep config")?;
        let mut config = Self::parse(&text).map_err(|e| e.context(path.display()))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        for input in &mut config.input {
            if Path::new(input.as_str()).is_relative() {
                *input = dir.join(input.as_str()).display().to_string();
            }
        }
        Ok(config)
    }

    /// Parses and checks config text (every point and method name, nothing run).
    pub fn parse(text: &str) -> Result<Self> {
        let config: Config = toml::from_str(text).map_err(|e| {
            Error::usage(format!("bad sweep config: {}", e.message()))
                .hint("see benches/sweeps/smoke.toml for the format")
        })?;
        if config.repeats == 0 {
            bail!(usage, "repeats must be at least 1");
        }
        if config.experiments.is_empty() {
            bail!(
                usage,
                "the config has no [[experiment]]",
                hint = "add at least one"
            );
        }
        config.reference_spec()?;
        for e in &config.experiments {
            if !config.input.is_empty() && matches!(e.vary, Variable::Size | Variable::Classes) {
                bail!(
                    usage,
                    format!(
                        "experiment '{}' varies {}, which a real input fixes",
                        e.name,
                        e.vary.name()
                    ),
                    hint = "on `input` rasters vary kernel_size, rank, terms or tile"
                );
            }
            if e.values.is_empty() {
                bail!(usage, format!("experiment '{}' has no values", e.name));
            }
            if e.name.is_empty()
                || !e
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                bail!(
                    usage,
                    format!("experiment name '{}' is not file-name safe", e.name),
                    hint = "use letters, digits, '_' and '-'"
                );
            }
            for m in config.methods_of(e) {
                m.parse::<MethodName>()?;
            }
            if let Some(set) = &e.methods
                && set.is_empty()
            {
                bail!(usage, format!("experiment '{}' lists no methods", e.name));
            }
            for &v in &e.values {
                config.settings(e, v)?.point()?.job()?;
            }
        }
        Ok(config)
    }

    /// Checks that this build has every method the config names (before hours of runs).
    pub fn check_methods(&self) -> Result<()> {
        self.check_methods_with(&mut MethodCache::default())
    }

    fn check_methods_with(&self, cache: &mut MethodCache) -> Result<()> {
        let reference = self.reference_spec()?;
        for e in &self.experiments {
            // Each method as it first runs in the experiment (kernel, rank, terms).
            let point = self.settings(e, e.values[0])?.point()?;
            let job = point.job()?;
            for m in self.methods_of(e) {
                let method = cache.get(&m.parse()?, &point.options(), &job.kernel)?;
                mapfilter_core::method::policy::check_method(&point.policies, method.is_exact(), m)
                    .map_err(|err| err.context(format!("experiment '{}'", e.name)))?;
            }
            if let Some(r) = &reference {
                cache.get(r, &point.options(), &job.kernel)?;
            }
        }
        Ok(())
    }

    fn reference_spec(&self) -> Result<Option<MethodName>> {
        match self.reference.trim() {
            "none" | "" => Ok(None),
            r => Ok(Some(r.parse()?)),
        }
    }

    fn methods_of<'a>(&'a self, e: &'a Experiment) -> &'a [String] {
        e.methods.as_deref().unwrap_or(&self.methods)
    }

    fn settings(&self, e: &Experiment, value: usize) -> Result<Settings> {
        self.base.overlay(&e.set).with(e.vary, value)
    }

    /// Number of (point, method, input) runs.
    pub fn runs(&self) -> usize {
        self.experiments
            .iter()
            .map(|e| e.values.len() * self.methods_of(e).len())
            .sum::<usize>()
            * self.input.len().max(1)
    }

    /// Every run in order, one line each (`sweep --dry-run`).
    pub fn list_runs(&self) -> Result<Vec<String>> {
        let inputs: Vec<Option<&str>> = if self.input.is_empty() {
            vec![None]
        } else {
            self.input.iter().map(|i| Some(i.as_str())).collect()
        };
        let mut lines = Vec::new();
        for e in &self.experiments {
            for &value in &e.values {
                let p = self.settings(e, value)?.point()?;
                for input in &inputs {
                    let on = match input {
                        Some(i) => format!("on {i}"),
                        None => format!(
                            "on {}x{0} {} ({} classes)",
                            p.size,
                            format!("{:?}", p.pattern).to_lowercase(),
                            p.classes
                        ),
                    };
                    for m in self.methods_of(e) {
                        lines.push(format!(
                            "{} {}={value} {m} kernel {} {on}",
                            e.name,
                            e.vary.name(),
                            p.kernel
                        ));
                    }
                }
            }
        }
        Ok(lines)
    }
}

/// What [`run`] reports as it goes.
pub enum Event<'a> {
    /// A method finished a point.
    Finished(&'a Record),
    /// A method failed at a point (the sweep goes on without it).
    Failed(&'a Failure),
    /// An experiment is complete: everything measured so far, to save in
    /// case a later one is cut short (a time limit, a crash).
    Checkpoint(&'a SweepResult),
}

/// A run that failed: an overnight sweep keeps going and says which.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    pub experiment: String,
    pub variable: Variable,
    pub value: usize,
    pub method: String,
    pub error: String,
}

/// Runs every experiment of `config`, reporting each run to `log` with its
/// number and the total. A method failing at one point (out of device memory,
/// say) is recorded as a [`Failure`] and the sweep goes on; a config naming a
/// method this build or machine lacks fails before anything runs.
pub fn run(config: &Config, log: impl FnMut(Event, usize, usize)) -> Result<SweepResult> {
    run_on(config, &[], log)
}

/// [`run`] on real rasters (the config's `input`, read by the caller):
/// every experiment on each of them; none: synthetic inputs.
pub fn run_on(
    config: &Config,
    sources: &[Source],
    log: impl FnMut(Event, usize, usize),
) -> Result<SweepResult> {
    run_scored(config, sources, None, log)
}

/// [`run_on`], each output also scored by `score` (its result in
/// [`Record::accuracy`]); a scoring error fails that run only.
pub fn run_scored(
    config: &Config,
    sources: &[Source],
    mut scoring: Option<Scoring>,
    mut log: impl FnMut(Event, usize, usize),
) -> Result<SweepResult> {
    let info = scoring.as_ref().map(|s| s.info.clone());
    let mut cache = MethodCache::default();
    config.check_methods_with(&mut cache)?;
    let reference = config.reference_spec()?;
    let total = config.runs();
    let (mut records, mut failures) = (Vec::new(), Vec::new());
    let mut done = 0;
    let inputs: Vec<Option<&Source>> = if sources.is_empty() {
        vec![None]
    } else {
        sources.iter().map(Some).collect()
    };
    for e in &config.experiments {
        for (&value, source) in e
            .values
            .iter()
            .flat_map(|v| inputs.iter().map(move |s| (v, *s)))
        {
            let point = config.settings(e, value)?.point()?;
            let job = point.job_on(source)?;
            let options = point.options();
            let specs = config
                .methods_of(e)
                .iter()
                .map(|m| m.parse::<MethodName>())
                .collect::<Result<Vec<_>>>()?;
            let mut fail = |spec: &MethodName, err: Error, done: usize| {
                let f = failure(
                    e,
                    value,
                    label(spec, source, sources.len()),
                    err.to_string(),
                );
                log(Event::Failed(&f), done, total);
                failures.push(f);
            };
            // The reference output: reused from the methods when listed there.
            let mut baseline: Option<MemRaster> = None;
            if let Some(r) = &reference
                && !specs.contains(r)
            {
                let made = cache
                    .get(r, &options, &job.kernel)
                    .and_then(|m| run_once(&point, &job, m, source));
                match made {
                    Ok((out, _)) => baseline = Some(out),
                    Err(err) => fail(r, err, done),
                }
            }
            let mut outputs = Vec::new();
            for spec in &specs {
                let timed = cache.get(spec, &options, &job.kernel).and_then(|m| {
                    Ok((
                        (m.name(), m.is_exact()),
                        time_method(config, &point, &job, m, source)?,
                    ))
                });
                match timed {
                    Ok((about, (times, output))) => {
                        if Some(spec) == reference.as_ref() && baseline.is_none() {
                            baseline = Some(output.clone());
                        }
                        outputs.push((spec, about, times, output));
                    }
                    Err(err) => {
                        done += 1;
                        fail(spec, err, done);
                    }
                }
            }
            for (spec, about, times, mut output) in outputs {
                let (agreement, kappa) = match &baseline {
                    Some(b) => agree(b, &output)?,
                    None => (None, None),
                };
                let (method_name, exact) = about;
                let measured = Measured {
                    method_name,
                    exact,
                    times: &times,
                    agreement_percent: agreement,
                    kappa,
                };
                let mut record = make_record(e, value, &point, &job, spec, measured);
                if let Some(s) = source {
                    on_input(&mut record, s, label(spec, source, sources.len()), &job)?;
                }
                done += 1;
                if let Some(scoring) = scoring.as_mut() {
                    match (scoring.score)(&mut output, job.output_nodata) {
                        Ok(a) => record.accuracy = Some(a),
                        Err(err) => {
                            let error = format!("scoring against the reference: {err}");
                            let f = failure(e, value, record.method.clone(), error);
                            log(Event::Failed(&f), done, total);
                            failures.push(f);
                            continue;
                        }
                    }
                }
                log(Event::Finished(&record), done, total);
                records.push(record);
            }
        }
        let so_far = sweep_result(config, records.clone(), failures.clone(), info.clone());
        log(Event::Checkpoint(&so_far), done, total);
    }
    Ok(sweep_result(config, records, failures, info))
}

/// A failed run of `method` at `value` of experiment `e`.
fn failure(e: &Experiment, value: usize, method: String, error: String) -> Failure {
    Failure {
        experiment: e.name.clone(),
        variable: e.vary,
        value,
        method,
        error,
    }
}

/// The sweep's result so far on this machine.
fn sweep_result(
    config: &Config,
    records: Vec<Record>,
    failures: Vec<Failure>,
    reference: Option<ReferenceInfo>,
) -> SweepResult {
    SweepResult {
        config: config.clone(),
        machine: Machine::this(),
        records,
        failures,
        reference,
    }
}

/// A record of a run on input `s` rather than a generated raster: its
/// label, size, classes and throughput over the output grid.
fn on_input(record: &mut Record, s: &Source, method: String, job: &SmoothJob) -> Result<()> {
    record.method = method;
    (record.width, record.height) = (s.raster.width, s.raster.height);
    record.classes = s.table.len() as u16;
    record.pattern = "input".into();
    record.input = Some(s.label.clone());
    let (ow, oh) = job.grid(s.raster.width, s.raster.height)?.output_size();
    record.mpixels_per_second = (ow * oh) as f64 / 1e6 / record.seconds.max(1e-12);
    Ok(())
}

/// The optional warm-up and the timed repeats of one method at one point:
/// (wall, compute) per repeat and the last output.
fn time_method(
    config: &Config,
    point: &Point,
    job: &SmoothJob,
    method: &dyn ClassSmoother,
    source: Option<&Source>,
) -> Result<(Vec<(Duration, Duration)>, MemRaster)> {
    if config.warmup {
        run_once(point, job, method, source)?;
    }
    let mut times = Vec::new();
    let mut output = None;
    for _ in 0..config.repeats {
        let (out, stats) = run_once(point, job, method, source)?;
        times.push((stats.totals.wall, stats.totals.compute));
        output = Some(out);
    }
    Ok((times, output.expect("repeats ≥ 1")))
}

/// What the runs of one method at one point measured.
struct Measured<'a> {
    /// The smoother's own name and whether it is exact.
    method_name: String,
    exact: bool,
    /// Wall and compute time of every repeat.
    times: &'a [(Duration, Duration)],
    /// Agreement with the reference method's output, where there is one.
    agreement_percent: Option<f64>,
    kappa: Option<f64>,
}

/// The record of `spec`'s runs at `point` (the experiment's variable at
/// `value`).
fn make_record(
    e: &Experiment,
    value: usize,
    point: &Point,
    job: &SmoothJob,
    spec: &MethodName,
    measured: Measured,
) -> Record {
    let Measured {
        method_name,
        exact,
        times,
        agreement_percent,
        kappa,
    } = measured;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let seconds = median(times.iter().map(|t| t.0.as_secs_f64()).collect());
    let seconds_min = times
        .iter()
        .map(|t| t.0.as_secs_f64())
        .fold(f64::INFINITY, f64::min);
    let (ow, oh) = job
        .grid(point.size, point.size)
        .map(|g| g.output_size())
        .unwrap_or((point.size, point.size));
    Record {
        experiment: e.name.clone(),
        variable: e.vary,
        value,
        method: spec.to_string(),
        method_name,
        exact,
        width: point.size,
        height: point.size,
        kernel: point.kernel.clone(),
        kernel_side: job.kernel.size(),
        classes: point.classes,
        pattern: format!("{:?}", point.pattern).to_lowercase(),
        rank: point.rank,
        terms: point.terms,
        tile: point.tile,
        repeats: times.len(),
        seconds,
        seconds_min,
        compute_seconds: median(times.iter().map(|t| t.1.as_secs_f64()).collect()),
        mpixels_per_second: (ow * oh) as f64 / 1e6 / seconds.max(1e-12),
        agreement_percent,
        kappa,
        input: None,
        accuracy: None,
    }
}

/// How records name a method: with the input's name where several inputs
/// share the plots.
fn label(spec: &MethodName, source: Option<&Source>, inputs: usize) -> String {
    match source {
        Some(s) if inputs > 1 => format!("{spec} on {}", s.label),
        _ => spec.to_string(),
    }
}

/// One run of `method` on the point's synthetic input (or the real one),
/// into memory.
fn run_once(
    point: &Point,
    job: &SmoothJob,
    method: &dyn ClassSmoother,
    source: Option<&Source>,
) -> Result<(MemRaster, engine::RunStats)> {
    let progress = Progress::hidden();
    if let Some(s) = source {
        let (ow, oh) = job.grid(s.raster.width, s.raster.height)?.output_size();
        let mut out = MemRaster::filled(ow, oh, 0);
        let stats = engine::smooth(&mut s.raster.clone(), &mut out, job, method, &progress)?;
        return Ok((out, stats));
    }
    let mut input = point.input();
    let (ow, oh) = job.grid(point.size, point.size)?.output_size();
    let mut out = MemRaster::filled(ow, oh, 0);
    let stats = engine::smooth(&mut input, &mut out, job, method, &progress)?;
    Ok((out, stats))
}

/// Agreement (percent) and kappa of `candidate` against `reference`.
fn agree(reference: &MemRaster, candidate: &MemRaster) -> Result<(Option<f64>, Option<f64>)> {
    let m = metrics::compare(
        &mut reference.clone(),
        &mut candidate.clone(),
        None,
        None,
        |_| Ok(()),
    )?;
    Ok((m.agreement().map(|a| 100.0 * a), m.kappa()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
        title = "t"
        methods = ["naive@host"]
        [base]
        kernel = "box"
        kernel_size = 3
        classes = 3
        [[experiment]]
        name = "size"
        vary = "size"
        values = [16, 32]
        [[experiment]]
        name = "kernel"
        vary = "kernel_size"
        values = [3, 5]
        set = { kernel = "gaussian", size = 24, pattern = "random" }
    "#;

    #[test]
    fn settings_overlay_and_points() {
        let c = Config::parse(CONFIG).unwrap();
        assert_eq!(c.runs(), 4);
        let p = c.settings(&c.experiments[1], 5).unwrap().point().unwrap();
        assert_eq!(p.size, 24);
        assert_eq!(p.classes, 3);
        assert_eq!(p.pattern, Pattern::Random);
        assert_eq!(p.job().unwrap().kernel.size(), 5);
        let p = c.settings(&c.experiments[0], 32).unwrap().point().unwrap();
        assert_eq!((p.size, p.kernel.as_str()), (32, "box:3"));
    }

    #[test]
    fn bad_configs_are_one_line_errors() {
        let bad = CONFIG.replace("values = [3, 5]", "values = [4]");
        assert!(
            Config::parse(&bad)
                .unwrap_err()
                .to_string()
                .contains("not odd")
        );
        let bad = CONFIG.replace("naive@host", "nope@host");
        // Method names are typed: an unknown one fails with the config.
        let e = Config::parse(&bad).unwrap_err();
        assert!(e.to_string().contains("unknown method 'nope'"), "{e}");
        let bad = CONFIG.replace("naive@host", "naive:exact@host");
        let e = Config::parse(&bad).unwrap_err();
        assert!(e.to_string().contains("unknown naive variant"), "{e}");
        let bad = CONFIG.replace("classes = 3", "colours = 3");
        let e = Config::parse(&bad).unwrap_err().to_string();
        assert!(e.contains("bad sweep config") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn exact_reference_agrees_fully() {
        let c = Config::parse(CONFIG).unwrap();
        let mut seen = 0;
        let mut checkpoints = Vec::new();
        let r = run(&c, |ev, i, n| {
            match ev {
                Event::Finished(_) => seen = i,
                Event::Checkpoint(so_far) => checkpoints.push(so_far.records.len()),
                Event::Failed(f) => panic!("{}", f.error),
            }
            assert_eq!(n, 4);
        })
        .unwrap();
        assert_eq!(seen, 4);
        assert_eq!(checkpoints, [2, 4]);
        assert_eq!(r.records.len(), 4);
        for rec in &r.records {
            assert_eq!(rec.agreement_percent, Some(100.0));
            assert!(rec.exact && rec.seconds > 0.0);
        }
        assert_eq!(r.records[1].width, 32);
        assert_eq!(r.records[3].kernel_side, 5);
    }

    /// A point that fails (a kernel larger than the image under border
    /// `valid`) is recorded and the sweep goes on.
    #[test]
    fn failed_points_are_recorded_and_skipped() {
        let text = CONFIG
            .replace(
                "classes = 3",
                "classes = 3\nborder = \"valid\"\nkernel_size = 21",
            )
            .replace("kernel_size = 3\n", "");
        let c = Config::parse(&text).unwrap();
        let mut failed = 0;
        let r = run(&c, |ev, _, _| {
            if let Event::Failed(f) = ev {
                assert!(f.error.contains("kernel"), "{}", f.error);
                failed += 1;
            }
        })
        .unwrap();
        // size 16 < 21 fails, size 32 runs; the kernel_size experiment (24²) runs.
        assert_eq!(failed, 1);
        assert_eq!(r.failures.len(), 1);
        assert_eq!((r.failures[0].value, r.records.len()), (16, 3));
        let html = report::to_html(&r).unwrap();
        assert!(html.contains("Failed runs"));
    }
}
