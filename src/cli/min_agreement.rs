//! `compare --min-agreement P`: a quality gate for scripts, failing the run
//! (exit 1) when the candidate agrees with the reference on less than P %
//! of the valid pixels. Reports asked for are written first either way.

use crate::error::Result;
use crate::metrics::Summary;

#[derive(clap::Args, Clone, Debug, Default)]
pub struct MinAgreementArg {
    /// Exit with status 1 when the agreement (% of valid pixels) is below P, after writing the reports.
    #[arg(long, value_name = "P", value_parser = percent)]
    pub min_agreement: Option<f64>,
}

impl MinAgreementArg {
    /// Fails when an agreement was asked for and `summary` falls short of it
    /// (or has no valid pixel to agree on).
    pub fn check(&self, summary: &Summary) -> Result<()> {
        let Some(min) = self.min_agreement else {
            return Ok(());
        };
        match summary.agreement_percent {
            Some(a) if a >= min => Ok(()),
            Some(a) => crate::bail!(
                input,
                format!("agreement {a:.4} % is below --min-agreement {min} %"),
                hint =
                    "the reports, if any, were written; compare them to see where the maps differ"
            ),
            None => crate::bail!(
                input,
                format!("no valid pixel to agree on, so --min-agreement {min} % is not met"),
                hint = "the rasters are nodata everywhere in one of them"
            ),
        }
    }
}

fn percent(s: &str) -> std::result::Result<f64, String> {
    let p: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number (a percentage such as 99.5)"))?;
    if (0.0..=100.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("{p} is not a percentage between 0 and 100"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_are_checked() {
        assert_eq!(percent("99.5"), Ok(99.5));
        assert!(percent("101").is_err());
        assert!(percent("-1").is_err());
        assert!(percent("x").is_err());
    }
}
