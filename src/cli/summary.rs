//! `--json FILE|-`: a machine-readable summary of a run (what ran, inputs
//! and outputs, method, device, timings, figures) for `smooth` and
//! `filter`, written once the run is done; `-` is standard output.

use crate::error::{Error, Result};
use crate::output::{self, Destination, Target};
use crate::report::numbers::Provenance;
use clap::Args;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone, Default)]
pub struct JsonArg {
    /// Write a JSON summary of the run (inputs, outputs, method, device, timings, figures) to FILE; `-`: standard output.
    #[arg(long = "json", value_name = "FILE|-")]
    pub json: Option<PathBuf>,
}

/// Where the summary goes, checked before any work.
pub struct JsonSummary {
    dest: Option<Destination>,
}

impl JsonSummary {
    /// Checks `--json` against the inputs and the run's other outputs
    /// (`others`: files; `stdout_taken`: another output already goes to
    /// standard output).
    pub fn check(
        arg: &JsonArg,
        overwrite: bool,
        inputs: &[&Path],
        others: &[&Target],
        stdout_taken: bool,
    ) -> Result<Self> {
        let dest = arg
            .json
            .as_deref()
            .map(|p| Destination::check(p, overwrite, inputs))
            .transpose()?;
        match &dest {
            Some(Destination::Stdout) if stdout_taken => crate::bail!(
                usage,
                "--json - and another output both write to standard output",
                hint = "send one of them to a file"
            ),
            Some(Destination::File(t)) => {
                let mut all = others.to_vec();
                all.push(t);
                output::distinct(&all)?;
            }
            _ => {}
        }
        Ok(JsonSummary { dest })
    }

    /// Writes `fields` with the command's name and the provenance.
    pub fn write(&self, command: &str, fields: Value) -> Result<()> {
        let Some(dest) = &self.dest else {
            return Ok(());
        };
        let mut value = json!({ "command": command });
        if let (Some(map), Value::Object(more)) = (value.as_object_mut(), fields) {
            map.extend(more);
            let provenance = serde_json::to_value(Provenance::now())
                .map_err(|e| Error::io(format!("cannot write the JSON summary: {e}")))?;
            map.insert("provenance".into(), provenance);
        }
        let text = serde_json::to_string_pretty(&value)
            .map_err(|e| Error::io(format!("cannot write the JSON summary: {e}")))?;
        output::text::write(dest, &(text + "\n"))
    }
}

/// `smooth --json`'s fields.
pub struct SmoothFacts<'a> {
    pub input: &'a std::path::Path,
    /// The input band read (1-based).
    pub band: usize,
    pub output: &'a std::path::Path,
    pub report: Option<&'a std::path::Path>,
    /// `--device` as given, `None` for its default (`auto`).
    pub device: Option<String>,
    pub kernel: &'a super::kernel_args::BuiltKernel,
    pub method_label: &'a str,
    pub method: &'a dyn crate::method::ClassSmoother,
    pub job: &'a crate::engine::SmoothJob,
    pub stats: &'a crate::engine::RunStats,
    pub size: (usize, usize),
    pub seconds: f64,
}

impl SmoothFacts<'_> {
    pub fn fields(&self) -> Value {
        let (k, job) = (&self.kernel.kernel, self.job);
        let classes: Vec<Value> = job
            .classes
            .codes()
            .iter()
            .zip(job.classes.counts())
            .map(|(c, n)| json!({ "code": c, "input_pixels": n }))
            .collect();
        json!({
            "input": self.input,
            "band": self.band,
            "output": self.output,
            "report": self.report,
            "width": self.size.0,
            "height": self.size.1,
            "kernel": {
                "given": self.kernel.given,
                "side": k.size(),
                "sigma_pixels": k.sigma(),
                "conversion": self.kernel.conversion,
            },
            "method": self.method_label,
            "method_run": self.method.name(),
            "exact": self.method.is_exact(),
            "device": self.device.as_deref().unwrap_or("auto"),
            "border": format!("{:?}", job.border).to_lowercase(),
            "tile": job.tile,
            "tiles": self.stats.totals.tiles,
            "output_nodata": job.output_nodata,
            "classes": classes,
            "seconds": { "engine": self.stats.totals.wall.as_secs_f64(), "total": self.seconds },
        })
    }
}
