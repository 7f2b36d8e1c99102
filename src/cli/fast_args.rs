//! The method options shared by `smooth` and `bench`: `--method`, and the
//! fast methods' `--rank`, `--energy`, `--terms`, `--exact`.

use crate::error::Result;
use crate::method::naive::cl::Variant;
use crate::method::select::{FastOptions, Method, MethodSpec};
use clap::Args;

/// The method and the fast methods' options (shared by `smooth` and `bench`).
#[derive(Args, Debug, Clone)]
pub struct FastArgs {
    // The help lists every method's descriptor (`method::registry`).
    #[arg(long, default_value = Method::default().name(), help = Method::help())]
    pub method: Method,
    /// svd: keep this many ranks (default: the numerical rank).
    #[arg(long)]
    pub rank: Option<usize>,
    /// svd: keep the fewest ranks holding this share of the energy Σs² (0..1].
    #[arg(long)]
    pub energy: Option<f64>,
    /// dct5: cosine terms K beyond the constant one (default 3; K = R is exact).
    #[arg(long)]
    pub terms: Option<usize>,
    /// Certified mode: fast scores with an error bound, uncertain pixels
    /// recomputed exactly; byte-identical to naive.
    #[arg(long)]
    pub exact: bool,
}

impl FastArgs {
    /// The method with these options and the device `variant`, checked to fit.
    pub fn spec(&self, variant: Option<Variant>) -> Result<MethodSpec> {
        MethodSpec::new(self.method, variant, self.options())
    }

    pub fn options(&self) -> FastOptions {
        FastOptions {
            rank: self.rank,
            energy: self.energy,
            terms: self.terms,
            exact: self.exact,
        }
    }
}
