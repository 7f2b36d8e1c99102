//! `batch plan`: the tasks of a dataset and what they share, in
//! `DIR/plan.json` (with `DIR/tasks.geojson`, the footprints).
//!
//! Every task writes one window of its mosaic's output grid. The class
//! table decides two things that must be the same in every window for the
//! outputs to join without seams: the quantised class weights and the
//! output nodata code. Both are decided here, once per mosaic, exactly as
//! `smooth` of the whole mosaic decides them: a Byte mosaic with a nodata
//! value and integer weights takes every code but nodata (no pixel is
//! read); any other mosaic is scanned once for its classes.

use super::mosaic::{self, Group, Member};
pub use super::options::{MmuOption, Settings, SmoothOptions};
use mapfilter_core::bail;
use mapfilter_core::classes::ClassTable;
use mapfilter_core::error::{Error, Result, Setting};
use mapfilter_core::kernel::{KernelArg, KernelSpec, PixelWidth};
use mapfilter_core::output::{self, Destination, Target};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tiles::{Border, Rect};

/// The plan's file in the batch directory.
pub const PLAN_FILE: &str = "plan.json";
/// Version of the plan's format.
const VERSION: u32 = 1;
/// The folder of a batch's outputs: every task writes one file directly in it.
pub const OUT_DIR: &str = "out";
/// The folder of the tasks' smoothed windows before a minimum mapping unit
/// (see [`super::mmu`]), in the batch directory.
pub const SMOOTHED_DIR: &str = "smoothed";
/// The most tasks a plan may have: a plan.json of tasks takes about 300
/// bytes per task, and every run reads it whole.
const MAX_TASKS: usize = 1 << 20;

/// The class table every task of a mosaic uses.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClassPlan {
    /// Every code but nodata (Byte mosaics with nodata and integer weights).
    pub every_code: bool,
    /// The codes present (when scanned).
    pub codes: Vec<u16>,
    pub nodata: Option<u16>,
    pub max_code: u16,
    /// The code written where the result is nodata.
    pub output_nodata: Option<u16>,
}

impl ClassPlan {
    pub fn table(&self) -> Result<ClassTable> {
        if self.every_code {
            ClassTable::every_code(self.max_code, self.nodata)
        } else {
            ClassTable::from_codes(&self.codes, self.nodata)
        }
    }
}

/// One mosaic (or single raster) and its output grid.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MosaicPlan {
    /// The raster read: an input, or a VRT of the inputs in the batch directory.
    pub source: PathBuf,
    pub width: usize,
    pub height: usize,
    pub output_width: usize,
    pub output_height: usize,
    /// Geotransform of the output grid.
    pub output_geo_transform: [f64; 6],
    pub classes: ClassPlan,
    pub members: Vec<Member>,
    /// The minimum mapping unit of this mosaic in pixels (`--mmu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmu_pixels: Option<u64>,
}

/// One output file: a window of a mosaic's output grid.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Task {
    pub id: usize,
    pub mosaic: usize,
    /// The input it stands for.
    pub input: PathBuf,
    /// x, y, width, height in the mosaic's output grid.
    pub window: [usize; 4],
    /// Relative to the batch directory.
    pub output: PathBuf,
}

impl Task {
    pub fn rect(&self) -> Rect {
        let [x, y, w, h] = self.window;
        Rect::new(x, y, w, h)
    }

    pub fn pixels(&self) -> u64 {
        self.window[2] as u64 * self.window[3] as u64
    }
}

/// Everything `batch run` and `batch report` need.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    pub version: u32,
    pub options: SmoothOptions,
    /// `naive`: every task (or those of `compare_tasks`) also runs the
    /// exact baseline and records the confusion against it.
    pub compare_with: Option<String>,
    /// The tasks compared with the baseline when only a sample is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_tasks: Option<Vec<usize>>,
    pub mosaics: Vec<MosaicPlan>,
    pub tasks: Vec<Task>,
}

/// How `batch plan` was asked to plan.
pub struct PlanRequest<'a> {
    pub inputs: &'a [String],
    pub dir: &'a Path,
    pub options: SmoothOptions,
    /// Cut each single-raster mosaic into `grid` × `grid` tasks.
    pub grid: Option<usize>,
    pub compare_with: Option<String>,
    /// Compare only this many tasks, spread over the plan.
    pub compare_sample: Option<usize>,
    pub overwrite: bool,
    /// Round a kernel that comes out 1x1 up to the smallest that smooths
    /// instead of refusing it.
    pub allow_subpixel: bool,
    /// Make the plan without writing anything or reading any pixel.
    pub dry_run: bool,
}

impl Plan {
    /// Reads `DIR/plan.json`.
    pub fn load(dir: &Path) -> Result<Plan> {
        let path = dir.join(PLAN_FILE);
        if !path.exists() {
            bail!(
                usage,
                format!("{}: no plan here", dir.display()),
                hint = format!(
                    "make one with `mapfilter batch plan INPUT... {}`",
                    Setting::Out.is("DIR")
                )
            );
        }
        let text = mapfilter_core::limits::read_text_file(&path, "batch plan")?;
        let plan: Plan = serde_json::from_str(&text).map_err(|e| {
            Error::input(format!("{}: not a batch plan: {e}", path.display()))
                .hint("make it again with `mapfilter batch plan`")
        })?;
        if plan.version != VERSION {
            bail!(
                input,
                format!(
                    "{}: plan version {} is not {VERSION}",
                    path.display(),
                    plan.version
                ),
                hint = "make it again with this mapfilter's `batch plan`"
            );
        }
        plan.validate().map_err(|e| {
            e.context(format!("{}: not a valid plan", path.display()))
                .hint("make it again with `mapfilter batch plan`")
        })?;
        Ok(plan)
    }

    /// Checks every number and path `batch run` and `batch report` index
    /// or write by, so that no plan.json makes them panic, loop or write
    /// outside the batch's `out/` (see [`output_name`]), or over an input.
    pub fn validate(&self) -> Result<()> {
        if self.options.tile == Some(0) {
            bail!(input, "tile side 0");
        }
        if self.tasks.len() > MAX_TASKS {
            bail!(
                input,
                format!("{} tasks, more than {MAX_TASKS}", self.tasks.len())
            );
        }
        if let Some(mmu) = &self.options.mmu {
            mmu.threshold()?;
            mmu.connectivity()?;
        }
        let mut inputs = std::collections::HashSet::new();
        for (m, mosaic) in self.mosaics.iter().enumerate() {
            let fail = |what: &str| Err(Error::input(format!("mosaic {m}: {what}")));
            match (&self.options.mmu, mosaic.mmu_pixels) {
                (Some(_), Some(n)) if n >= 1 => {}
                (None, None) => {}
                _ => {
                    return fail(&format!(
                        "its minimum mapping unit in pixels does not match {}",
                        Setting::Mmu
                    ));
                }
            }
            let margin_x = mosaic.width.checked_sub(mosaic.output_width);
            let margin_y = mosaic.height.checked_sub(mosaic.output_height);
            // Valid borders trim the same halo off every side.
            if margin_x.is_none() || margin_x != margin_y || margin_x.is_some_and(|d| d % 2 != 0) {
                return fail("its output grid is not its grid less a halo on every side");
            }
            if mosaic.output_width == 0 || mosaic.output_height == 0 {
                return fail("an empty output grid");
            }
            // Pixel counts are u64 products: a grid of at most 2^50 pixels
            // (a petapixel) keeps every sum of them far from wrapping.
            if (mosaic.width as u64)
                .checked_mul(mosaic.height as u64)
                .is_none_or(|p| p > 1 << 50)
            {
                return fail("a grid larger than 2^50 pixels");
            }
            if !mosaic.output_geo_transform.iter().all(|g| g.is_finite()) {
                return fail("a geotransform that is not finite");
            }
            if mosaic.members.is_empty() {
                return fail("no member rasters");
            }
            for member in &mosaic.members {
                let inside = |at: usize, size: usize, limit: usize| {
                    size > 0 && at.checked_add(size).is_some_and(|end| end <= limit)
                };
                if !inside(member.x, member.width, mosaic.width)
                    || !inside(member.y, member.height, mosaic.height)
                {
                    return fail(&format!("{} lies outside it", member.path.display()));
                }
                inputs.insert(member.path.clone());
            }
            inputs.insert(mosaic.source.clone());
        }
        let mut outputs = std::collections::HashSet::new();
        for (i, task) in self.tasks.iter().enumerate() {
            let fail = |what: String| Err(Error::input(format!("task {i}: {what}")));
            if task.id != i {
                return fail(format!("numbered {}", task.id));
            }
            let Some(mosaic) = self.mosaics.get(task.mosaic) else {
                return fail(format!("mosaic {} is not in the plan", task.mosaic));
            };
            let [x, y, w, h] = task.window;
            let inside = |at: usize, size: usize, limit: usize| {
                size > 0 && at.checked_add(size).is_some_and(|end| end <= limit)
            };
            if !inside(x, w, mosaic.output_width) || !inside(y, h, mosaic.output_height) {
                return fail("its window lies outside its mosaic's output grid".into());
            }
            let name = output_name(&task.output)?;
            if !outputs.insert(name.to_os_string()) {
                return fail(format!(
                    "{} is also another task's output",
                    task.output.display()
                ));
            }
            inputs.insert(task.input.clone());
        }
        // An output is never an input: compared by the file name in out/
        // (inputs elsewhere may share a name) and, at run time, by the file
        // itself (see `run`).
        for input in &inputs {
            let mut parts = input.components().rev();
            let (Some(name), Some(parent)) = (parts.next(), parts.next()) else {
                continue;
            };
            if parent.as_os_str() == OUT_DIR && outputs.contains(name.as_os_str()) {
                bail!(
                    input,
                    format!("the input {} may be a task's output", input.display())
                );
            }
        }
        if let Some(sample) = &self.compare_tasks
            && sample.iter().any(|&t| t >= self.tasks.len())
        {
            bail!(input, "a compared task is not in the plan");
        }
        Ok(())
    }

    /// Every file of the batch in `dir`: its inputs (members, sources), its
    /// tasks' outputs and the outputs' mosaics.
    pub fn files(&self, dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self
            .mosaics
            .iter()
            .flat_map(|m| {
                m.members
                    .iter()
                    .map(|x| x.path.clone())
                    .chain([m.source.clone()])
            })
            .collect();
        for t in &self.tasks {
            files.push(t.input.clone());
            files.push(dir.join(&t.output));
        }
        files.extend((0..self.mosaics.len()).map(|m| dir.join(mosaic::mosaic_name(m))));
        files.sort();
        files.dedup();
        files
    }

    /// Whether task `id` runs the baseline too.
    pub fn compares(&self, id: usize) -> bool {
        self.compare_with.is_some()
            && self
                .compare_tasks
                .as_ref()
                .is_none_or(|t| t.binary_search(&id).is_ok())
    }

    /// A checksum of everything the plan says (options, mosaics, tasks).
    pub fn fingerprint(&self) -> u32 {
        crc32fast::hash(serde_json::to_string(self).unwrap_or_default().as_bytes())
    }

    /// Plans the batch and writes its files into the directory.
    pub fn make(req: &PlanRequest) -> Result<Plan> {
        // A kernel in pixels and every other option are checked before any
        // input is read; a length in metres needs the mosaics' pixels first.
        let kernel = &req.options.kernel;
        let in_pixels = if kernel.needs_pixel_width() {
            None
        } else {
            let options = kernel_in_pixels(&req.options, kernel, &[], req.allow_subpixel)?;
            let settings = options.settings()?;
            Some((options, settings))
        };
        check_comparison(req)?;
        if let Some(mmu) = &req.options.mmu {
            mmu.threshold()?;
            mmu.connectivity()?;
        }
        let dir = req.dir;
        let paths = without_own_files(super::inputs::expand(req.inputs)?, dir)?;
        let infos = mosaic::read_infos(&paths, req.options.band_choice())?;
        let groups = mosaic::group(&infos);
        if let Some(n) = req.grid {
            check_grid(n, &groups)?;
        }
        let (options, settings) = match in_pixels {
            Some(checked) => checked,
            None => {
                let options = kernel_in_pixels(&req.options, kernel, &groups, req.allow_subpixel)?;
                let settings = options.settings()?;
                (options, settings)
            }
        };
        // Each mosaic's MMU in pixels (an area refused or rounded) before
        // anything is written.
        let mmu_pixels = mmu_pixels(&options, &groups, req.allow_subpixel)?;
        // A dry run writes nothing: the plan is made and returned only.
        let targets = if req.dry_run {
            None
        } else {
            std::fs::create_dir_all(dir.join("out")).map_err(|e| {
                Error::io(format!("cannot make {}: {e}", dir.display()))
                    .hint("give a directory that can be written")
            })?;
            let plan_target = Target::check(&dir.join(PLAN_FILE), req.overwrite, &[])
                .map_err(|e| e.hint(plan_exists_hint()))?;
            let geojson_target = Target::check(&dir.join("tasks.geojson"), true, &[])?;
            Some((plan_target, geojson_target))
        };
        let r = settings.policies.checked_halo(settings.kernel.radius())?;
        let mut mosaics = Vec::new();
        let mut tasks = Vec::new();
        let mut names = std::collections::HashSet::new();
        for (m, group) in groups.iter().enumerate() {
            let as_in_file = group.first.band == 1 && options.src_nodata.is_none();
            let source = mosaic_source(dir, m, group, as_in_file, req.dry_run)?;
            let (offset, ow, oh) = output_extent(group, &source, settings.border, r)?;
            let g = group.geo_transform;
            let o = offset as f64;
            let output_geo_transform = [g[0] + o * g[1], g[1], g[2], g[3] + o * g[5], g[4], g[5]];
            let classes = class_plan(&source, group, &settings, options.dst_nodata, req.dry_run)?;
            for window in windows(group, req.grid, offset, (ow, oh)) {
                let (member, rect, suffix) = window;
                let stem = member
                    .path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| format!("task{}", tasks.len()));
                let name = format!("{stem}{suffix}.tif");
                if !names.insert(name.clone()) {
                    bail!(
                        usage,
                        format!("two inputs would both write out/{name}"),
                        hint = "give inputs with distinct file names"
                    );
                }
                tasks.push(Task {
                    id: tasks.len(),
                    mosaic: m,
                    input: member.path.clone(),
                    window: [rect.x, rect.y, rect.width, rect.height],
                    output: Path::new("out").join(name),
                });
            }
            mosaics.push(MosaicPlan {
                source,
                width: group.width,
                height: group.height,
                output_width: ow,
                output_height: oh,
                output_geo_transform,
                classes,
                members: group.members.clone(),
                mmu_pixels: mmu_pixels[m],
            });
        }
        let plan = Plan {
            version: VERSION,
            options,
            compare_with: req.compare_with.clone(),
            compare_tasks: req
                .compare_sample
                .filter(|&n| n < tasks.len())
                .map(|n| sample(tasks.len(), n)),
            mosaics,
            tasks,
        };
        plan.validate()?;
        let json = serde_json::to_string_pretty(&plan)
            .map_err(|e| Error::internal(format!("cannot encode the plan: {e}")))?;
        if let Some((plan_target, geojson_target)) = targets {
            output::text::write(&Destination::File(geojson_target), &plan.geojson())?;
            output::text::write(&Destination::File(plan_target), &json)?;
        }
        Ok(plan)
    }

    /// The tasks' footprints as a GeoJSON feature collection (in the
    /// mosaics' coordinate system).
    pub fn geojson(&self) -> String {
        let features: Vec<serde_json::Value> = self
            .tasks
            .iter()
            .map(|t| {
                let g = self.mosaics[t.mosaic].output_geo_transform;
                let [x, y, w, h] = t.window.map(|v| v as f64);
                let at = |px: f64, py: f64| {
                    serde_json::json!([g[0] + px * g[1] + py * g[2], g[3] + px * g[4] + py * g[5]])
                };
                serde_json::json!({
                    "type": "Feature",
                    "properties": {
                        "task": t.id,
                        "mosaic": t.mosaic,
                        "input": t.input,
                        "output": t.output,
                        "window": t.window,
                    },
                    "geometry": {
                        "type": "Polygon",
                        "coordinates": [[at(x, y), at(x + w, y), at(x + w, y + h), at(x, y + h), at(x, y)]],
                    }
                })
            })
            .collect();
        serde_json::json!({"type": "FeatureCollection", "features": features}).to_string()
    }
}

/// The minimum mapping unit of each mosaic of `groups` in pixels, if
/// `options` have one.
fn mmu_pixels(
    options: &SmoothOptions,
    groups: &[Group],
    allow_subpixel: bool,
) -> Result<Vec<Option<u64>>> {
    groups
        .iter()
        .map(|g| {
            options
                .mmu
                .as_ref()
                .map(|mmu| mmu.pixels(g, allow_subpixel))
                .transpose()
        })
        .collect()
}

/// The file name of a task's output, which must be `out/NAME`: relative,
/// directly in the batch's `out/`, no `..`, not hidden (the temp files of
/// a run are), a GeoTIFF. What is at that name on disk is checked when it
/// is written (no symlink is written through: see `run`).
pub fn output_name(output: &Path) -> Result<&std::ffi::OsStr> {
    use std::path::Component;
    let parts: Vec<Component> = output.components().collect();
    match parts.as_slice() {
        [Component::Normal(dir), Component::Normal(name)]
            if *dir == OUT_DIR
                && !name.to_string_lossy().starts_with('.')
                && Path::new(name).extension().is_some_and(|e| e == "tif") =>
        {
            Ok(name)
        }
        _ => Err(Error::input(format!(
            "output {} is not a file directly in {OUT_DIR}/ named *.tif",
            output.display()
        ))),
    }
}

/// `options` with its kernel in pixels: a length in metres converted with
/// the pixel width of the mosaics `groups` (which must agree: one kernel
/// for the whole batch, as `smooth` of the merged mosaic would use), a
/// kernel that comes out 1x1 refused or rounded up ([`KernelArg::resolve`]).
fn kernel_in_pixels(
    options: &SmoothOptions,
    kernel: &KernelArg,
    groups: &[Group],
    allow_subpixel: bool,
) -> Result<SmoothOptions> {
    let width = || -> Result<PixelWidth> {
        let widths = groups
            .iter()
            .map(|g| {
                mapfilter_gdal::class_raster::pixel_width_of_wkt(
                    g.geo_transform,
                    g.height,
                    &g.first.projection,
                )
                .map_err(|e| e.context(g.first.path.display()))
            })
            .collect::<Result<Vec<_>>>()?;
        let first = widths
            .first()
            .ok_or_else(|| Error::internal("no mosaic to plan"))?;
        if let Some(other) = widths
            .iter()
            .find(|w| (w.metres - first.metres).abs() > 1e-9 * first.metres)
        {
            bail!(
                input,
                format!(
                    "kernel {}: the mosaics' pixels differ ({:.4} m and {:.4} m wide), so one length in metres would be a different kernel on each",
                    options.kernel, first.metres, other.metres
                ),
                hint = "plan the rasters of each pixel size on their own, or give the kernel in pixels"
            );
        }
        Ok(first.clone())
    };
    let resolved = kernel
        .resolve(options.size, width, allow_subpixel)
        .map_err(|e| e.context(Setting::Kernel))?;
    if let Some(w) = &resolved.warning {
        log::warn!("{w}");
    }
    // A Gaussian's side is stored on its own, as older plans kept it.
    let (spec, size) = match resolved.spec {
        KernelSpec::Gaussian { sigma, size } => (KernelSpec::Gaussian { sigma, size: None }, size),
        other => (other, None),
    };
    let metres = resolved.conversion.is_some();
    Ok(SmoothOptions {
        kernel: KernelArg::Pixels(spec),
        size,
        kernel_given: metres.then(|| options.kernel.clone()),
        kernel_conversion: resolved.conversion,
        ..options.clone()
    })
}

/// `paths` less the files of the batch in `dir` itself (its mosaics,
/// outputs, state and reports), which a second `batch plan DIR --out DIR`
/// would otherwise take as inputs.
fn without_own_files(paths: Vec<PathBuf>, dir: &Path) -> Result<Vec<PathBuf>> {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return Ok(paths);
    };
    let own = |p: &Path| {
        let Ok(p) = std::fs::canonicalize(p) else {
            return false;
        };
        let Ok(inside) = p.strip_prefix(&dir) else {
            return false;
        };
        let mut parts = inside.components();
        let first = parts
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        let nested = parts.next().is_some();
        match first.as_deref() {
            Some(OUT_DIR | "state" | "logs" | SMOOTHED_DIR) => nested,
            Some(name) => {
                !nested && name.starts_with("mosaic") && name.ends_with(".vrt")
                    || name == "report.html"
                    || name == "report.json"
            }
            None => false,
        }
    };
    let (skipped, kept): (Vec<PathBuf>, Vec<PathBuf>) = paths.into_iter().partition(|p| own(p));
    if !skipped.is_empty() {
        log::warn!(
            "left out {} file(s) of the batch itself, e.g. {}",
            skipped.len(),
            skipped[0].display()
        );
    }
    if kept.is_empty() {
        bail!(
            input,
            format!("no input rasters found outside the batch {}", dir.display()),
            hint = "the batch's own mosaics and outputs are never its inputs"
        );
    }
    Ok(kept)
}

/// The hint when a plan is in the way of a new one.
fn plan_exists_hint() -> String {
    format!(
        "a plan is there already: run it with `batch run`, or plan again with {}",
        Setting::Overwrite
    )
}

/// The hint when an input changed since its plan.
pub(super) fn replan_hint() -> String {
    format!(
        "plan the batch again (batch plan {}), or put the planned file back",
        Setting::Overwrite
    )
}

/// Refuses a `--grid N` that would cut a raster into empty or more tasks
/// than a plan holds (before any loop over N² cells).
fn check_grid(n: usize, groups: &[Group]) -> Result<()> {
    if n == 0 {
        bail!(
            usage,
            format!("{} cuts nothing", Setting::Grid.is(0)),
            hint = format!("give {} 1 or more", Setting::Grid)
        );
    }
    for group in groups.iter().filter(|g| g.members.len() == 1) {
        let m = &group.members[0];
        if n > m.width.min(m.height) || n.saturating_mul(n) > MAX_TASKS {
            bail!(
                usage,
                format!(
                    "{} would cut {} ({}x{}) into cells under a pixel, or into more than {MAX_TASKS} tasks",
                    Setting::Grid.is(n),
                    m.path.display(),
                    m.width,
                    m.height
                ),
                hint = format!("give {} at most the raster's shorter side", Setting::Grid)
            );
        }
    }
    Ok(())
}

/// `n` of `len` task numbers (`n < len`), evenly spread, in order.
fn sample(len: usize, n: usize) -> Vec<usize> {
    (0..n).map(|i| (2 * i + 1) * len / (2 * n)).collect()
}

/// Refuses a `--compare-with` other than naive, and a `--compare-sample`
/// without it or of no task.
fn check_comparison(req: &PlanRequest) -> Result<()> {
    if let Some(c) = &req.compare_with
        && c != "naive"
    {
        bail!(
            usage,
            format!("{}: only naive is a baseline", Setting::CompareWith.is(c))
        );
    }
    match req.compare_sample {
        Some(_) if req.compare_with.is_none() => bail!(
            usage,
            format!(
                "{} without {}",
                Setting::CompareSample,
                Setting::CompareWith
            ),
            hint = format!("add {}", Setting::CompareWith.is("naive"))
        ),
        Some(0) => bail!(
            usage,
            format!("{} compares nothing", Setting::CompareSample.is(0)),
            hint = format!("give 1 or more, or leave out {}", Setting::CompareWith)
        ),
        _ => Ok(()),
    }
}

/// What the tasks of mosaic `m` read: its one member, or a VRT of its
/// members written into `dir` (not on a dry run).
fn mosaic_source(
    dir: &Path,
    m: usize,
    group: &Group,
    as_in_file: bool,
    dry_run: bool,
) -> Result<PathBuf> {
    // One raster read as it is (band 1, its own nodata) is its own source.
    if group.members.len() == 1 && as_in_file {
        return Ok(group.members[0].path.clone());
    }
    let path = dir.join(format!("mosaic-{m}.vrt"));
    let path = std::path::absolute(&path).unwrap_or(path);
    let xml = mosaic::vrt_xml(
        &group.members,
        (group.width, group.height),
        group.geo_transform,
        &group.first,
    );
    if !dry_run {
        let target = Target::check(&path, true, &[])?;
        output::text::write(&Destination::File(target), &xml)?;
    }
    Ok(path)
}

/// The output of a mosaic under `border` for a kernel of radius `r`: its
/// offset into the mosaic, width and height.
fn output_extent(
    group: &Group,
    source: &Path,
    border: Border,
    r: usize,
) -> Result<(usize, usize, usize)> {
    Ok(match border {
        Border::Same => (0, group.width, group.height),
        Border::Valid => {
            if group.width <= 2 * r || group.height <= 2 * r {
                bail!(
                    usage,
                    format!(
                        "{}: {}x{} is no larger than the kernel, nothing is left with {}",
                        source.display(),
                        group.width,
                        group.height,
                        Setting::Border.is("valid")
                    ),
                    hint = format!("use {} or a smaller kernel", Setting::Border.is("same"))
                );
            }
            (r, group.width - 2 * r, group.height - 2 * r)
        }
    })
}

/// The class table of one mosaic, decided as `smooth` of the whole mosaic
/// decides it.
///
/// `dry_run`: no pixel is read; a mosaic that needs its classes scanned
/// gets none (`codes` empty, `every_code` false).
fn class_plan(
    source: &Path,
    group: &Group,
    settings: &Settings,
    dst_nodata: Option<u16>,
    dry_run: bool,
) -> Result<ClassPlan> {
    let max_code = if group.first.data_type == "Byte" {
        u8::MAX as u16
    } else {
        u16::MAX
    };
    let nodata = group.first.nodata.map(|v| v as u16);
    // A --dst-nodata code is checked against the classes present, so they
    // are scanned, as `smooth` scans them.
    let every_code = max_code == u8::MAX as u16
        && nodata.is_some()
        && settings.weights.is_integral()
        && dst_nodata.is_none();
    let table = if every_code {
        ClassTable::every_code(max_code, nodata)?
    } else if dry_run {
        ClassTable::from_codes(&[], nodata)?
    } else {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        mapfilter_gdal::scan::classes_in_parallel(source, threads)?
    };
    settings.policies.check_nodata(nodata)?;
    // As `smooth` does: the undecided code is a class (see job::smooth).
    let table = match settings.policies.ties.undecided() {
        Some(code) => table.with_code(code, max_code)?,
        None => table,
    };
    let what = source.display().to_string();
    let output_nodata = crate::job::smooth::output_nodata_of(dst_nodata, &table, max_code, &what)?;
    Ok(ClassPlan {
        every_code,
        codes: if every_code {
            Vec::new()
        } else {
            table.codes().to_vec()
        },
        nodata,
        max_code,
        output_nodata,
    })
}

/// The output windows of a group: one per member (or `grid`² cuts of a
/// single raster), clipped to the output grid; with the member and a name
/// suffix.
fn windows(
    group: &Group,
    grid: Option<usize>,
    offset: usize,
    (ow, oh): (usize, usize),
) -> Vec<(Member, Rect, String)> {
    let clip = |x: usize, y: usize, w: usize, h: usize| {
        let x0 = x.saturating_sub(offset).min(ow);
        let y0 = y.saturating_sub(offset).min(oh);
        let x1 = (x + w).saturating_sub(offset).min(ow);
        let y1 = (y + h).saturating_sub(offset).min(oh);
        Rect::new(x0, y0, x1.saturating_sub(x0), y1.saturating_sub(y0))
    };
    let mut out = Vec::new();
    match grid {
        Some(n) if n > 1 && group.members.len() == 1 => {
            let m = &group.members[0];
            for row in 0..n {
                for col in 0..n {
                    let (x0, x1) = (m.width * col / n, m.width * (col + 1) / n);
                    let (y0, y1) = (m.height * row / n, m.height * (row + 1) / n);
                    let rect = clip(x0, y0, x1 - x0, y1 - y0);
                    if !rect.is_empty() {
                        out.push((m.clone(), rect, format!("_r{row}c{col}")));
                    }
                }
            }
        }
        _ => {
            for m in &group.members {
                let rect = clip(m.x, m.y, m.width, m.height);
                if !rect.is_empty() {
                    out.push((m.clone(), rect, String::new()));
                }
            }
        }
    }
    out
}
