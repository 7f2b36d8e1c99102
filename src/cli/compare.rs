//! `mapfilter compare`: accuracy of a candidate class raster against a
//! reference (agreement, kappa, confusion, per-class figures, area change),
//! with a georeferenced mismatch raster and JSON/Markdown/HTML reports. The
//! comparison is the job [`crate::job::compare::run`]; this module turns
//! the arguments into its spec and writes the reports.

use super::output_args::OverwriteArg;
use crate::error::Result;
use crate::job::compare::{self, CompareSpec};
use crate::job::observer::Observer;
use crate::output::{self, Destination, Target};
use crate::progress::Progress;
use crate::report::compare::CompareReport;
use crate::report::quicklook::DEFAULT_SIDE;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Reference class raster (the exact result, or ground truth).
    pub reference: PathBuf,
    /// Candidate class raster on the same grid.
    pub candidate: PathBuf,
    /// Write the figures as JSON (`-`: standard output).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report (maps, plots, tables; `-`: standard output).
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Write a Markdown report (`-`: standard output).
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Write a georeferenced mismatch GeoTIFF (Byte: 0 equal, 1 differs, 2 nodata in one only, 255 nodata in both).
    #[arg(long)]
    pub mismatch: Option<PathBuf>,
    /// Longest side of the quick-look maps in the HTML report, in pixels.
    #[arg(long, default_value_t = DEFAULT_SIDE)]
    pub map_side: usize,
    /// No progress bar and no summary line.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub overwrite: OverwriteArg,
    #[command(flatten)]
    pub palette: super::palette_arg::PaletteArg,
    #[command(flatten)]
    pub min_agreement: super::min_agreement::MinAgreementArg,
    /// -b and --src-nodata apply to both rasters.
    #[command(flatten)]
    pub bands: super::input_args::BandArgs,
}

/// The report files of one run, checked before any work.
#[derive(Default)]
struct ReportOutputs {
    json: Option<Destination>,
    html: Option<Destination>,
    markdown: Option<Destination>,
}

impl ReportOutputs {
    fn check(
        json: Option<&Path>,
        html: Option<&Path>,
        markdown: Option<&Path>,
        overwrite: bool,
        inputs: &[&Path],
    ) -> Result<Self> {
        let check = |p: Option<&Path>| {
            p.map(|p| Destination::check(p, overwrite, inputs))
                .transpose()
        };
        Ok(ReportOutputs {
            json: check(json)?,
            html: check(html)?,
            markdown: check(markdown)?,
        })
    }

    fn files(&self) -> impl Iterator<Item = &Target> {
        [&self.json, &self.html, &self.markdown]
            .into_iter()
            .flatten()
            .filter_map(|d| match d {
                Destination::File(t) => Some(t),
                Destination::Stdout => None,
            })
    }

    /// Writes the reports; the JSON also gets the run's `facts`.
    fn write(&self, report: &CompareReport, facts: serde_json::Value) -> Result<()> {
        if let Some(d) = &self.json {
            let mut value: serde_json::Value = serde_json::from_str(&report.to_json()?)
                .map_err(|e| crate::Error::io(format!("cannot write the JSON report: {e}")))?;
            if let (Some(map), serde_json::Value::Object(more)) = (value.as_object_mut(), facts) {
                map.extend(more);
            }
            let text = serde_json::to_string_pretty(&value)
                .map_err(|e| crate::Error::io(format!("cannot write the JSON report: {e}")))?;
            output::text::write(d, &(text + "\n"))?;
        }
        if let Some(d) = &self.html {
            output::text::write(d, &report.to_html()?)?;
        }
        if let Some(d) = &self.markdown {
            output::text::write(d, &report.to_markdown())?;
        }
        Ok(())
    }
}

/// Progress bars on the terminal unless `--quiet`.
struct Bars {
    quiet: bool,
}

impl Observer for Bars {
    fn progress(&self, label: &str) -> Progress {
        Progress::new(self.quiet, label)
    }
}

pub fn run(args: CompareArgs) -> Result<()> {
    let started = std::time::Instant::now();
    let inputs = [args.reference.as_path(), args.candidate.as_path()];
    let overwrite = args.overwrite.overwrite;
    let reports = ReportOutputs::check(
        args.json.as_deref(),
        args.html.as_deref(),
        args.markdown.as_deref(),
        overwrite,
        &inputs,
    )?;
    let mismatch = args
        .mismatch
        .as_deref()
        .map(|p| Target::check(p, overwrite, &inputs))
        .transpose()?;
    let mut all: Vec<&Target> = reports.files().collect();
    all.extend(mismatch.as_ref());
    output::distinct(&all)?;
    let spec = CompareSpec {
        reference: args.reference.clone(),
        candidate: args.candidate.clone(),
        band: args.bands.choice(),
        mismatch,
        map_side: args.map_side,
        palette: args.palette.read()?,
    };
    let report = compare::run(&spec, &mut Bars { quiet: args.quiet })?;
    let facts = serde_json::json!({
        "command": "compare",
        "band": args.bands.band.unwrap_or(1),
        "outputs": {
            "html": args.html, "markdown": args.markdown, "mismatch": args.mismatch,
        },
        "min_agreement_percent": args.min_agreement.min_agreement,
        "seconds": { "total": started.elapsed().as_secs_f64() },
    });
    reports.write(&report, facts)?;
    if !args.quiet {
        // Standard output may carry a report; the headline then goes to stderr.
        let to_stdout = [&reports.json, &reports.html, &reports.markdown]
            .into_iter()
            .flatten()
            .any(|d| *d == Destination::Stdout);
        if to_stdout {
            eprintln!("{}", report.headline());
        } else {
            println!("{}", report.headline());
        }
    }
    args.min_agreement.check(&report.summary)
}
