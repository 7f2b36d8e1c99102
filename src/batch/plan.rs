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
use crate::bail;
use crate::classes::{ClassTable, ClassWeights};
use crate::device::DeviceChoice;
use crate::error::{Error, Result};
use crate::gdal::class_raster::{ClassRaster, Compression, OutputCompression};
use crate::job::smooth::MethodChoice;
use crate::kernel::{Kernel, KernelSpec};
use crate::method::policy::{Policies, PolicyText};
use crate::method::select::{FastOptions, Method, MethodSpec};
use crate::output::{self, Destination, Target};
use crate::progress::Progress;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tiles::{Border, Rect};

/// The plan's file in the batch directory.
pub const PLAN_FILE: &str = "plan.json";
/// Version of the plan's format.
const VERSION: u32 = 1;

/// The smoothing options of a batch, as the user gave them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SmoothOptions {
    pub kernel: String,
    pub size: Option<usize>,
    pub class_weights: Option<String>,
    /// `same` or `valid`.
    pub border: String,
    pub fill_nodata: bool,
    pub tile: usize,
    pub method: Method,
    pub rank: Option<usize>,
    pub energy: Option<f64>,
    pub terms: Option<usize>,
    pub exact: bool,
    pub device: Option<String>,
    pub variant: Option<String>,
    /// none, deflate, lzw or zstd.
    pub compress: String,
    pub compress_level: Option<u8>,
    /// The policies (docs/semantics.md#policies); absent in older plans.
    #[serde(default)]
    pub ties: Option<String>,
    #[serde(default)]
    pub keep: Option<String>,
    #[serde(default)]
    pub no_vote: Option<String>,
    #[serde(default)]
    pub only_isolated: Option<u32>,
    #[serde(default)]
    pub iterations: Option<usize>,
}

/// The typed values of [`SmoothOptions`].
pub struct Settings {
    pub kernel: Kernel,
    pub weights: ClassWeights,
    pub border: Border,
    pub compression: OutputCompression,
    pub method: MethodChoice,
    pub policies: Policies,
}

impl SmoothOptions {
    /// Parses and checks every option.
    pub fn settings(&self) -> Result<Settings> {
        let kernel = self
            .kernel
            .parse::<KernelSpec>()?
            .with_size(self.size)?
            .build()?;
        let weights: ClassWeights = self.class_weights.as_deref().unwrap_or("").parse()?;
        let border = match self.border.as_str() {
            "same" => Border::Same,
            "valid" => Border::Valid,
            other => bail!(format!("border '{other}' is neither same nor valid")),
        };
        let codec: Compression = self.compress.parse()?;
        let compression = OutputCompression::new(codec, self.compress_level)?;
        let options = FastOptions {
            rank: self.rank,
            energy: self.energy,
            terms: self.terms,
            exact: self.exact,
        };
        let variant = self.variant.as_deref().map(str::parse).transpose()?;
        let method = MethodChoice {
            spec: MethodSpec::new(self.method, variant, options)?,
            device: DeviceChoice::from_arg(self.device.as_deref())?,
        };
        let policies = PolicyText {
            ties: self.ties.as_deref(),
            keep: self.keep.as_deref(),
            no_vote: self.no_vote.as_deref(),
            only_isolated: self.only_isolated,
            iterations: self.iterations,
        }
        .parse()?;
        Ok(Settings {
            kernel,
            weights,
            border,
            compression,
            method,
            policies,
        })
    }
}

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
}

impl Plan {
    /// Reads `DIR/plan.json`.
    pub fn load(dir: &Path) -> Result<Plan> {
        let path = dir.join(PLAN_FILE);
        if !path.exists() {
            bail!(
                format!("{}: no plan here", dir.display()),
                hint = "make one with `mapfilter batch plan INPUT... --out DIR`"
            );
        }
        let text = crate::limits::read_text_file(&path, "batch plan")?;
        let plan: Plan = serde_json::from_str(&text).map_err(|e| {
            Error::new(format!("{}: not a batch plan: {e}", path.display()))
                .hint("make it again with `mapfilter batch plan`")
        })?;
        if plan.version != VERSION {
            bail!(
                format!(
                    "{}: plan version {} is not {VERSION}",
                    path.display(),
                    plan.version
                ),
                hint = "make it again with this mapfilter's `batch plan`"
            );
        }
        Ok(plan)
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
        let settings = req.options.settings()?;
        if let Some(c) = &req.compare_with
            && c != "naive"
        {
            bail!(format!("--compare-with {c}: only naive is a baseline"));
        }
        match req.compare_sample {
            Some(_) if req.compare_with.is_none() => bail!(
                "--compare-sample without --compare-with",
                hint = "add --compare-with naive"
            ),
            Some(0) => bail!(
                "--compare-sample 0 compares nothing",
                hint = "give 1 or more, or leave out --compare-with"
            ),
            _ => {}
        }
        let dir = req.dir;
        std::fs::create_dir_all(dir.join("out")).map_err(|e| {
            Error::new(format!("cannot make {}: {e}", dir.display()))
                .hint("give a directory that can be written")
        })?;
        let plan_target = Target::check(&dir.join(PLAN_FILE), req.overwrite, &[]).map_err(|e| {
            e.hint(
                "a plan is there already: run it with `batch run`, or plan again with --overwrite",
            )
        })?;
        let geojson_target = Target::check(&dir.join("tasks.geojson"), true, &[])?;
        let paths = super::inputs::expand(req.inputs)?;
        let infos = mosaic::read_infos(&paths)?;
        let groups = mosaic::group(&infos);
        let r = settings.policies.checked_halo(settings.kernel.radius())?;
        let mut mosaics = Vec::new();
        let mut tasks = Vec::new();
        let mut names = std::collections::HashSet::new();
        for (m, group) in groups.iter().enumerate() {
            let source = if group.members.len() == 1 {
                group.members[0].path.clone()
            } else {
                let path = dir.join(format!("mosaic-{m}.vrt"));
                let path = std::path::absolute(&path).unwrap_or(path);
                let xml = mosaic::vrt_xml(
                    &group.members,
                    (group.width, group.height),
                    group.geo_transform,
                    &group.first,
                );
                output::text::write(&Destination::File(Target::check(&path, true, &[])?), &xml)?;
                path
            };
            let (offset, ow, oh) = match settings.border {
                Border::Same => (0, group.width, group.height),
                Border::Valid => {
                    if group.width <= 2 * r || group.height <= 2 * r {
                        bail!(
                            format!(
                                "{}: {}x{} is no larger than the kernel, nothing is left with --border valid",
                                source.display(),
                                group.width,
                                group.height
                            ),
                            hint = "use --border same or a smaller kernel"
                        );
                    }
                    (r, group.width - 2 * r, group.height - 2 * r)
                }
            };
            let g = group.geo_transform;
            let o = offset as f64;
            let output_geo_transform = [g[0] + o * g[1], g[1], g[2], g[3] + o * g[5], g[4], g[5]];
            let classes = class_plan(&source, group, &settings.weights, &settings.policies)?;
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
            });
        }
        let plan = Plan {
            version: VERSION,
            options: req.options.clone(),
            compare_with: req.compare_with.clone(),
            compare_tasks: req
                .compare_sample
                .filter(|&n| n < tasks.len())
                .map(|n| sample(tasks.len(), n)),
            mosaics,
            tasks,
        };
        let json = serde_json::to_string_pretty(&plan)
            .map_err(|e| Error::new(format!("cannot encode the plan: {e}")))?;
        output::text::write(&Destination::File(geojson_target), &plan.geojson())?;
        output::text::write(&Destination::File(plan_target), &json)?;
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

/// `n` of `len` task numbers (`n < len`), evenly spread, in order.
fn sample(len: usize, n: usize) -> Vec<usize> {
    (0..n).map(|i| (2 * i + 1) * len / (2 * n)).collect()
}

/// The class table of one mosaic, decided as `smooth` of the whole mosaic
/// decides it.
fn class_plan(
    source: &Path,
    group: &Group,
    weights: &ClassWeights,
    policies: &Policies,
) -> Result<ClassPlan> {
    let max_code = if group.first.data_type == "Byte" {
        u8::MAX as u16
    } else {
        u16::MAX
    };
    let nodata = group.first.nodata.map(|v| v as u16);
    let every_code = max_code == u8::MAX as u16 && nodata.is_some() && weights.is_integral();
    let table = if every_code {
        ClassTable::every_code(max_code, nodata)?
    } else {
        let mut raster = ClassRaster::open(source)?;
        raster.scan_classes(&Progress::hidden())?
    };
    policies.check_nodata(nodata)?;
    // As `smooth` does: the undecided code is a class (see job::smooth).
    let table = match policies.ties.undecided() {
        Some(code) => table.with_code(code, max_code)?,
        None => table,
    };
    Ok(ClassPlan {
        every_code,
        codes: if every_code {
            Vec::new()
        } else {
            table.codes().to_vec()
        },
        nodata,
        max_code,
        output_nodata: table.output_nodata(max_code),
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
