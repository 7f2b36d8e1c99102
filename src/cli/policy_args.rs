//! The smoothing policies' options, shared by `smooth` and `batch plan`:
//! `--ties`, `--keep`, `--no-vote`, `--only-isolated`, `--iterations`
//! (docs/semantics.md#policies).

use crate::error::Result;
use crate::gdal::confidence::ConfidenceSpec;
use crate::method::policy::{Policies, PolicyText};
use clap::Args;

#[derive(Args, Debug, Clone, Default)]
pub struct PolicyArgs {
    /// Who wins a tie: centre (the centre's class if among the best, else
    /// the smallest code), smallest, largest, or undecided:CODE (ties give
    /// CODE); all but centre need exact scores (naive, or --exact).
    #[arg(long, value_name = "centre|smallest|largest|undecided:CODE")]
    pub ties: Option<String>,
    /// Classes whose pixels never change (they still vote), e.g. 80,190.
    #[arg(long, value_name = "CODES")]
    pub keep: Option<String>,
    /// Classes that cast no vote; their pixels change, or keep their class
    /// where no other class scores.
    #[arg(long, value_name = "CODES")]
    pub no_vote: Option<String>,
    /// A pixel changes only when fewer than T of its neighbours (the other
    /// pixels of the kernel's window with a positive weight) share its class.
    #[arg(long, value_name = "T")]
    pub only_isolated: Option<u32>,
    /// Smooth N times, each pass on the previous one's output.
    #[arg(long, value_name = "N")]
    pub iterations: Option<usize>,
    /// Weight each pixel's vote by its confidence from RASTER (band BAND,
    /// default 1; the class raster's grid), on every method and device:
    /// exact on naive and with --exact, approximate on svd/dct5/auto.
    #[arg(long, value_name = "RASTER[:BAND]")]
    pub confidence: Option<String>,
    /// The confidence value of full confidence (default: from the band's
    /// GDAL scale factor, else 1 for floating-point bands): e.g. 1, 100, 255.
    #[arg(long, value_name = "SCALE", requires = "confidence")]
    pub confidence_scale: Option<f64>,
}

impl PolicyArgs {
    pub fn text(&self) -> PolicyText<'_> {
        PolicyText {
            ties: self.ties.as_deref(),
            keep: self.keep.as_deref(),
            no_vote: self.no_vote.as_deref(),
            only_isolated: self.only_isolated,
            iterations: self.iterations,
        }
    }

    pub fn policies(&self) -> Result<Policies> {
        self.text().parse()
    }

    pub fn confidence(&self) -> Result<Option<ConfidenceSpec>> {
        self.confidence
            .as_deref()
            .map(|c| ConfidenceSpec::parse(c, self.confidence_scale))
            .transpose()
    }
}
