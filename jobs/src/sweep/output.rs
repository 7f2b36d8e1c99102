//! Writing sweep results: `results.csv` (one row per run, for spreadsheets
//! and the thesis' tables), `results.json` (config, machine and records) and
//! `report.html` (plots), each written to a temp file and renamed into place.

use super::{Record, SweepResult};
use mapfilter_core::error::{Error, Result, Setting};
use mapfilter_core::output::{Destination, Target, text};
use std::path::{Path, PathBuf};

/// CSV columns, in order.
pub const CSV_COLUMNS: [&str; 26] = [
    "experiment",
    "variable",
    "value",
    "method",
    "method_name",
    "exact",
    "width",
    "height",
    "kernel",
    "kernel_side",
    "classes",
    "pattern",
    "rank",
    "terms",
    "tile",
    "repeats",
    "seconds",
    "seconds_min",
    "compute_seconds",
    "mpixels_per_second",
    "agreement_percent",
    "kappa",
    "input",
    "overall_accuracy",
    "overall_accuracy_ci95_low",
    "overall_accuracy_ci95_high",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// One record's fields in the order of [`CSV_COLUMNS`].
fn row(r: &Record) -> [String; 26] {
    let overall = r.accuracy.as_ref().map(|a| a.overall);
    [
        r.experiment.clone(),
        r.variable.name().to_string(),
        r.value.to_string(),
        r.method.clone(),
        r.method_name.clone(),
        r.exact.to_string(),
        r.width.to_string(),
        r.height.to_string(),
        r.kernel.clone(),
        r.kernel_side.to_string(),
        r.classes.to_string(),
        r.pattern.clone(),
        opt(r.rank),
        opt(r.terms),
        r.tile.to_string(),
        r.repeats.to_string(),
        format!("{:.6}", r.seconds),
        format!("{:.6}", r.seconds_min),
        format!("{:.6}", r.compute_seconds),
        format!("{:.3}", r.mpixels_per_second),
        opt(r.agreement_percent.map(|a| format!("{a:.6}"))),
        opt(r.kappa.map(|k| format!("{k:.6}"))),
        r.input.clone().unwrap_or_default(),
        opt(overall.map(|o| format!("{:.6}", o.value))),
        opt(overall.map(|o| format!("{:.6}", o.ci95[0]))),
        opt(overall.map(|o| format!("{:.6}", o.ci95[1]))),
    ]
}

/// The records as CSV text with a header line.
pub fn to_csv(records: &[Record]) -> Result<String> {
    mapfilter_core::output::csv::table(&CSV_COLUMNS, records.iter().map(row))
}

/// The three result files of a sweep in its `--out` directory, checked
/// before the sweep runs.
pub struct ResultFiles {
    dir: PathBuf,
    /// The files the sweep reads (its config and real inputs): never
    /// replaced, at any checkpoint.
    inputs: Vec<PathBuf>,
}

/// The files a sweep writes, in order.
const NAMES: [&str; 3] = ["results.csv", "results.json", "report.html"];

impl ResultFiles {
    /// Checks the files in `dir` (which need not exist yet): existing ones
    /// are refused unless `overwrite`. Once checked, the sweep rewrites its
    /// own files at every checkpoint.
    pub fn prepare(dir: &Path, overwrite: bool, inputs: Vec<PathBuf>) -> Result<Self> {
        let files = ResultFiles {
            dir: dir.to_path_buf(),
            inputs,
        };
        if dir.exists() {
            for name in NAMES {
                Target::check(&dir.join(name), overwrite, &files.inputs())?;
            }
        }
        Ok(files)
    }

    fn inputs(&self) -> Vec<&Path> {
        self.inputs.iter().map(PathBuf::as_path).collect()
    }

    /// Writes `results.csv`, `results.json` and `report.html` (making the
    /// directory on the first call) and returns their paths.
    pub fn write(&self, result: &SweepResult) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            Error::io(format!("cannot create {}: {e}", self.dir.display()))
                .hint(format!("choose a writable {} directory", Setting::Out))
        })?;
        let json = serde_json::to_string_pretty(result)
            .map_err(|e| Error::io(format!("cannot write the JSON results: {e}")))?;
        let html = super::report::to_html(result)?;
        let texts = [to_csv(&result.records)?, json, html];
        let mut paths = Vec::new();
        for (name, text) in NAMES.iter().zip(&texts) {
            let target = Target::check(&self.dir.join(name), true, &self.inputs())?;
            text::write(&Destination::File(target), text)?;
            paths.push(self.dir.join(name));
        }
        Ok(paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Variable;

    #[test]
    fn csv_quotes_and_leaves_missing_values_empty() {
        let r = Record {
            experiment: "e".into(),
            variable: Variable::KernelSize,
            value: 7,
            method: "naive@host".into(),
            method_name: "naive, host".into(),
            exact: true,
            width: 64,
            height: 64,
            kernel: "gaussian:1".into(),
            kernel_side: 7,
            classes: 4,
            pattern: "simplex".into(),
            rank: None,
            terms: Some(3),
            tile: 512,
            repeats: 1,
            seconds: 0.5,
            seconds_min: 0.5,
            compute_seconds: 0.25,
            mpixels_per_second: 0.008192,
            agreement_percent: Some(100.0),
            kappa: None,
            input: None,
            accuracy: None,
        };
        let with_input = Record {
            input: Some("maps/a,\"b\".tif".into()),
            ..r.clone()
        };
        let csv = to_csv(&[r, with_input]).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        // The header the hand-written writer used, then the accuracy
        // against a reference sample (empty without one).
        assert_eq!(
            lines[0],
            "experiment,variable,value,method,method_name,exact,width,height,kernel,kernel_side,classes,pattern,rank,terms,tile,repeats,seconds,seconds_min,compute_seconds,mpixels_per_second,agreement_percent,kappa,input,overall_accuracy,overall_accuracy_ci95_low,overall_accuracy_ci95_high"
        );
        assert_eq!(
            lines[1],
            "e,kernel_size,7,naive@host,\"naive, host\",true,64,64,gaussian:1,7,4,simplex,,3,512,1,0.500000,0.500000,0.250000,0.008,100.000000,,,,,"
        );
        assert!(lines[2].ends_with(",100.000000,,\"maps/a,\"\"b\"\".tif\",,,"));
        // Read back, every row has the header's columns and the fields with
        // commas and quotes come back whole.
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
        assert_eq!(reader.headers().unwrap().len(), CSV_COLUMNS.len());
        assert!(rows.iter().all(|r| r.len() == CSV_COLUMNS.len()));
        assert_eq!(&rows[0][4], "naive, host");
        assert_eq!(&rows[1][22], "maps/a,\"b\".tif");
    }
}
