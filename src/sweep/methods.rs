//! Method resolution for sweeps and reports: `METHOD@DEVICE` names (e.g.
//! `naive@host`, `svd@gpu`) to a [`ClassSmoother`].
//!
//! This is the one place that knows which methods and devices exist. Today
//! only the exact host reference is built in; the fast methods (`svd`,
//! `dct5`) and the OpenCL devices are wired here as they land, so sweeps and
//! reports pick them up without other changes.

use crate::bail;
use crate::error::{Error, Result};
use crate::method::ClassSmoother;
use crate::method::naive::NaiveHost;
use std::fmt;
use std::str::FromStr;

/// A method on a device, as named in configs: `METHOD[@DEVICE]` (device `host` by default).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MethodSpec {
    pub method: String,
    pub device: String,
}

impl FromStr for MethodSpec {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let (method, device) = text.split_once('@').unwrap_or((text, "host"));
        let (method, device) = (method.trim(), device.trim());
        if method.is_empty() || device.is_empty() {
            bail!(
                format!("method '{text}' is not METHOD@DEVICE"),
                hint = "e.g. naive@host, svd@gpu, dct5@cpu"
            );
        }
        Ok(MethodSpec {
            method: method.to_ascii_lowercase(),
            device: device.to_ascii_lowercase(),
        })
    }
}

impl fmt::Display for MethodSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.method, self.device)
    }
}

/// Per-run method parameters that sweeps vary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MethodOptions {
    /// Kernel rank kept by `svd` (`None`: full numerical rank).
    pub rank: Option<usize>,
    /// DCT terms of `dct5` (`None`: the method's default).
    pub terms: Option<usize>,
}

/// The methods this build knows, as `METHOD@DEVICE` (for hints and `--help`).
pub fn available() -> Vec<String> {
    vec!["naive@host".to_string()]
}

/// Builds the method `spec` names, or says what exists.
pub fn resolve(spec: &MethodSpec, _options: &MethodOptions) -> Result<Box<dyn ClassSmoother>> {
    match (spec.method.as_str(), spec.device.as_str()) {
        ("naive", "host") => Ok(Box::new(NaiveHost)),
        _ => bail!(
            format!("method {spec} is not available in this build"),
            hint = format!("available: {}", available().join(", "))
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_resolves() {
        let s: MethodSpec = "Naive".parse().unwrap();
        assert_eq!(s.to_string(), "naive@host");
        let m = resolve(&s, &MethodOptions::default()).unwrap();
        assert!(m.is_exact());
        let e = resolve(&"warp@gpu".parse().unwrap(), &MethodOptions::default())
            .err()
            .unwrap();
        assert!(e.to_string().contains("available: naive@host"), "{e}");
        assert!("@gpu".parse::<MethodSpec>().is_err());
    }
}
