//! The smoothing method a user names (`--method`, a sweep's `METHOD@DEVICE`,
//! a batch plan's `"method"`) and its settings: [`Method`] parsed once at
//! the edge, [`MethodSpec`] checked once, so no layer below matches method
//! names as strings or re-checks which option fits which method.

use super::naive::cl::Variant;
use crate::bail;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A class-smoothing method. Serialised as its name (`"naive"`, `"svd"`,
/// `"dct5"`, `"auto"`), the string batch plans have always held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Method {
    /// Exact: one histogram update per kernel tap.
    #[default]
    Naive,
    /// Separable factors of the kernel (truncated SVD).
    Svd,
    /// Constant-time Gaussian and box (DCT-5 recursion).
    Dct5,
    /// A cost model choosing among the others per tile.
    Auto,
}

impl Method {
    /// Every method, in the order help texts and errors list them.
    pub const ALL: [Method; 4] = [Method::Naive, Method::Svd, Method::Dct5, Method::Auto];

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Method::Naive => "naive",
            Method::Svd => "svd",
            Method::Dct5 => "dct5",
            Method::Auto => "auto",
        }
    }

    /// Whether `--rank`, `--energy`, `--terms` and certification apply
    /// (svd, dct5 and auto, which may choose them).
    pub fn is_fast(self) -> bool {
        match self {
            Method::Naive => false,
            Method::Svd | Method::Dct5 | Method::Auto => true,
        }
    }
}

impl FromStr for Method {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match Method::ALL.into_iter().find(|m| m.name() == text) {
            Some(m) => Ok(m),
            None => bail!(
                format!("unknown method '{text}'"),
                hint = format!("methods: {}", Method::ALL.map(Method::name).join(", "))
            ),
        }
    }
}

impl TryFrom<String> for Method {
    type Error = Error;

    fn try_from(text: String) -> Result<Self> {
        text.parse()
    }
}

impl From<Method> for String {
    fn from(m: Method) -> String {
        m.name().to_string()
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Options of the fast methods: `--rank`, `--energy`, `--terms`, `--exact`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FastOptions {
    pub rank: Option<usize>,
    pub energy: Option<f64>,
    pub terms: Option<usize>,
    /// Certify fast results and recompute the rest exactly (byte-identical to naive).
    pub exact: bool,
}

/// A method with its settings, checked to fit together: `--rank` and
/// `--energy` only where svd may run, `--terms` only where dct5 may.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodSpec {
    method: Method,
    variant: Option<Variant>,
    options: FastOptions,
}

impl MethodSpec {
    /// `method` with its device `variant` (naive's, also auto's naive
    /// candidate; the others ignore it) and its fast `options` (naive
    /// ignores `exact`: it is exact), or why they do not fit.
    pub fn new(method: Method, variant: Option<Variant>, options: FastOptions) -> Result<Self> {
        let rank = options.rank.is_some() || options.energy.is_some();
        match method {
            Method::Naive if rank || options.terms.is_some() => bail!(
                "--rank, --energy and --terms apply to --method svd, dct5 or auto",
                hint = "drop them, or choose a fast method"
            ),
            Method::Svd if options.terms.is_some() => bail!(
                "--terms applies to dct5",
                hint = "svd truncates with --rank or --energy"
            ),
            Method::Dct5 if rank => bail!(
                "--rank and --energy apply to svd",
                hint = "dct5 takes --terms K"
            ),
            Method::Naive | Method::Svd | Method::Dct5 | Method::Auto => {}
        }
        Ok(MethodSpec {
            method,
            variant,
            options,
        })
    }

    /// A method with its defaults.
    pub fn plain(method: Method) -> Self {
        MethodSpec {
            method,
            variant: None,
            options: FastOptions::default(),
        }
    }

    pub fn method(&self) -> Method {
        self.method
    }

    pub fn variant(&self) -> Option<Variant> {
        self.variant
    }

    pub fn options(&self) -> &FastOptions {
        &self.options
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Method::ALL {
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<Method>(&json).unwrap(), m);
        }
        let e = "warp".parse::<Method>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown method 'warp' (hint: methods: naive, svd, dct5, auto)"
        );
        assert!(serde_json::from_str::<Method>("\"warp\"").is_err());
        // Names are lowercase, as `--method` has always taken them.
        assert!("Naive".parse::<Method>().is_err());
    }

    #[test]
    fn options_fit_their_method() {
        let rank = FastOptions {
            rank: Some(2),
            ..FastOptions::default()
        };
        let terms = FastOptions {
            terms: Some(2),
            ..FastOptions::default()
        };
        assert!(MethodSpec::new(Method::Svd, None, rank).is_ok());
        assert!(MethodSpec::new(Method::Auto, None, rank).is_ok());
        assert!(MethodSpec::new(Method::Dct5, None, terms).is_ok());
        let e = MethodSpec::new(Method::Naive, None, rank).unwrap_err();
        assert!(
            e.to_string().starts_with("--rank, --energy and --terms"),
            "{e}"
        );
        let e = MethodSpec::new(Method::Svd, None, terms).unwrap_err();
        assert!(e.to_string().starts_with("--terms applies to dct5"), "{e}");
        let e = MethodSpec::new(Method::Dct5, None, rank).unwrap_err();
        assert!(
            e.to_string().starts_with("--rank and --energy apply"),
            "{e}"
        );
    }
}
