//! `--pattern` (`gen`, `bench`): clap's side of [`crate::synth::Pattern`],
//! so the library needs no clap.

use crate::synth::Pattern;

/// `--pattern`: which synthetic data set to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PatternArg {
    /// Smooth blobs: simplex noise cut into `classes` bands of equal width.
    Simplex,
    /// Every pixel an independent, uniformly drawn class.
    Random,
}

impl From<PatternArg> for Pattern {
    fn from(arg: PatternArg) -> Self {
        match arg {
            PatternArg::Simplex => Pattern::Simplex,
            PatternArg::Random => Pattern::Random,
        }
    }
}
