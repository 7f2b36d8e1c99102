//! The smoothing method a user names (`--method`, a sweep's `METHOD@DEVICE`,
//! a batch plan's `"method"`) and its settings: [`Method`] parsed once at
//! the edge, [`MethodSpec`] checked once, so no layer below matches method
//! names as strings or re-checks which option fits which method.

pub use super::family::FastOptions;
use super::family::{Accepts, Family, Settings, either};
use super::naive::cl::Variant;
use crate::bail;
use crate::error::{Error, Result, Setting};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// A class-smoothing method: one family of [`super::registry`].
/// Serialised as its name (`"naive"`, `"svd"`, `"dct5"`, `"auto"`), the
/// string batch plans have always held. The default is the registry's
/// first (the exact baseline).
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Method(&'static dyn Family);

impl Method {
    /// Every method, in the order help texts and errors list them.
    pub fn all() -> impl Iterator<Item = Method> {
        super::registry().iter().map(|&family| Method(family))
    }

    /// The method `family` describes.
    pub fn of(family: &'static dyn Family) -> Self {
        Method(family)
    }

    /// Its descriptor.
    pub fn family(self) -> &'static dyn Family {
        self.0
    }

    /// The name users type.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// Whether `--exact` and certification apply.
    pub fn is_certifiable(self) -> bool {
        self.0.accepts().certifiable
    }

    /// Whether its results are exact without `--exact`.
    pub fn is_exact(self) -> bool {
        self.0.is_exact()
    }

    /// The device variants it takes (the first is the default).
    pub fn variants(self) -> &'static [Variant] {
        self.0.variants()
    }

    /// `--method`'s help: every method with its help line.
    pub fn help() -> String {
        let methods: Vec<String> = Method::all()
            .map(|m| format!("{} ({})", m.name(), m.0.help()))
            .collect();
        format!("Method: {}", methods.join(", "))
    }
}

impl Default for Method {
    fn default() -> Self {
        Method(super::registry()[0])
    }
}

impl PartialEq for Method {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Method {}

impl Hash for Method {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl fmt::Debug for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Method({})", self.name())
    }
}

impl FromStr for Method {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match Method::all().find(|m| m.name() == text) {
            Some(m) => Ok(m),
            None => bail!(
                usage,
                format!("unknown method '{text}'"),
                hint = format!("methods: {}", names(|_| true).join(", "))
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

/// The names of the methods whose options pass `fits`.
fn names(fits: impl Fn(Accepts) -> bool) -> Vec<&'static str> {
    Method::all()
        .filter(|m| fits(m.family().accepts()))
        .map(Method::name)
        .collect()
}

/// A method with its settings, checked to fit together: `--rank`,
/// `--energy` and `--terms` only where the method's descriptor takes them
/// ([`Family::accepts`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MethodSpec {
    method: Method,
    settings: Settings,
}

impl MethodSpec {
    /// `method` with its device `variant` (naive's, also auto's naive
    /// candidate; the others ignore it) and its fast `options` (an exact
    /// method ignores `exact`), or why they do not fit.
    pub fn new(method: Method, variant: Option<Variant>, options: FastOptions) -> Result<Self> {
        let rank = options.rank.is_some() || options.energy.is_some();
        let terms = options.terms.is_some();
        let fits = method.family().accepts();
        if (rank || terms) && !fits.rank && !fits.terms {
            bail!(
                usage,
                format!(
                    "{}, {} and {} apply to {} {}",
                    Setting::Rank,
                    Setting::Energy,
                    Setting::Terms,
                    Setting::Method,
                    either(&names(|a| a.rank || a.terms))
                ),
                hint = "drop them, or choose a fast method"
            );
        }
        if terms && !fits.terms {
            bail!(
                usage,
                format!(
                    "{} applies to {}",
                    Setting::Terms,
                    either(&names(|a| a.terms && !a.rank))
                ),
                hint = format!(
                    "{method} truncates with {} or {}",
                    Setting::Rank,
                    Setting::Energy
                )
            );
        }
        if rank && !fits.rank {
            bail!(
                usage,
                format!(
                    "{} and {} apply to {}",
                    Setting::Rank,
                    Setting::Energy,
                    either(&names(|a| a.rank && !a.terms))
                ),
                hint = format!("{method} takes {}", Setting::Terms.is("K"))
            );
        }
        Ok(MethodSpec {
            method,
            settings: Settings { variant, options },
        })
    }

    /// A method with its defaults.
    pub fn plain(method: Method) -> Self {
        MethodSpec {
            method,
            settings: Settings::default(),
        }
    }

    pub fn method(&self) -> Method {
        self.method
    }

    pub fn variant(&self) -> Option<Variant> {
        self.settings.variant
    }

    pub fn options(&self) -> &FastOptions {
        &self.settings.options
    }

    /// What its family builds from.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let all: Vec<&str> = Method::all().map(Method::name).collect();
        assert_eq!(all, ["naive", "svd", "dct5", "fft", "auto"]);
        assert_eq!(Method::default().name(), "naive");
        for m in Method::all() {
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<Method>(&json).unwrap(), m);
        }
        let e = "warp".parse::<Method>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown method 'warp' (hint: methods: naive, svd, dct5, fft, auto)"
        );
        assert!(serde_json::from_str::<Method>("\"warp\"").is_err());
        // Names are lowercase, as `--method` has always taken them.
        assert!("Naive".parse::<Method>().is_err());
    }

    fn m(name: &str) -> Method {
        name.parse().unwrap()
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
        assert!(MethodSpec::new(m("svd"), None, rank).is_ok());
        assert!(MethodSpec::new(m("auto"), None, rank).is_ok());
        assert!(MethodSpec::new(m("dct5"), None, terms).is_ok());
        // The messages list the methods whose descriptors take the option.
        let e = MethodSpec::new(m("naive"), None, rank).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rank, energy and terms apply to method svd, dct5 or auto \
             (hint: drop them, or choose a fast method)"
        );
        let e = MethodSpec::new(m("svd"), None, terms).unwrap_err();
        assert_eq!(
            e.to_string(),
            "terms applies to dct5 (hint: svd truncates with rank or energy)"
        );
        let e = MethodSpec::new(m("dct5"), None, rank).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rank and energy apply to svd (hint: dct5 takes terms = K)"
        );
        assert_eq!(
            Method::help(),
            "Method: naive (exact), svd (separable factors), \
             dct5 (constant-time Gaussian), fft (exact, any kernel size, host), \
             auto (cost model per tile)"
        );
    }
}
