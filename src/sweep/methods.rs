//! Method resolution for sweeps and reports: `METHOD@DEVICE` names (e.g.
//! `naive@host`, `svd@gpu`) to a [`ClassSmoother`].
//!
//! Names are `METHOD[:VARIANT][@DEVICE]`: `naive@host`, `naive@gpu`,
//! `naive:local@cpu`, `naive@0`. Which methods, variants and devices exist is
//! decided by [`crate::method::select`], the one place that builds smoothers;
//! this module only parses the names sweeps use and passes them on.

use crate::bail;
use crate::device::DeviceChoice;
use crate::error::{Error, Result};
use crate::method::{ClassSmoother, select};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// A method on a device, as named in configs: `METHOD[:VARIANT][@DEVICE]`
/// (device `host` by default, the method's default variant).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MethodSpec {
    pub method: String,
    pub variant: Option<String>,
    pub device: String,
}

impl FromStr for MethodSpec {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let (method, device) = text.split_once('@').unwrap_or((text, "host"));
        let (method, variant) = match method.split_once(':') {
            Some((m, v)) => (m.trim(), Some(v.trim())),
            None => (method.trim(), None),
        };
        let device = device.trim();
        if method.is_empty() || device.is_empty() || variant == Some("") {
            bail!(
                format!("method '{text}' is not METHOD[:VARIANT]@DEVICE"),
                hint = "e.g. naive@host, naive:local@gpu, svd@cpu"
            );
        }
        device.parse::<DeviceChoice>()?;
        Ok(MethodSpec {
            method: method.to_ascii_lowercase(),
            variant: variant.map(str::to_ascii_lowercase),
            device: device.to_ascii_lowercase(),
        })
    }
}

impl fmt::Display for MethodSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.variant {
            Some(v) => write!(f, "{}:{v}@{}", self.method, self.device),
            None => write!(f, "{}@{}", self.method, self.device),
        }
    }
}

/// Per-run method parameters that sweeps vary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MethodOptions {
    /// Kernel rank kept by `svd` (`None`: full numerical rank).
    pub rank: Option<usize>,
    /// DCT terms of `dct5` (`None`: the method's default).
    pub terms: Option<usize>,
}

/// Builds the method `spec` names on its device (opening it), or says what exists.
///
/// `options` (rank, DCT terms) are not used by any method yet; they reach the
/// methods that take them once [`select`] does.
pub fn resolve(spec: &MethodSpec, _options: &MethodOptions) -> Result<Box<dyn ClassSmoother>> {
    let device: DeviceChoice = spec.device.parse()?;
    select::class_smoother(&spec.method, device, spec.variant.as_deref())
        .map_err(|e| e.context(format!("method {spec}")))
}

/// Methods built once per (name, options) and reused: opening a device and
/// compiling its programs stays out of the timed runs and happens once.
#[derive(Default)]
pub struct MethodCache {
    built: HashMap<(MethodSpec, MethodOptions), Box<dyn ClassSmoother>>,
}

impl MethodCache {
    pub fn get(
        &mut self,
        spec: &MethodSpec,
        options: &MethodOptions,
    ) -> Result<&dyn ClassSmoother> {
        let key = (spec.clone(), *options);
        if !self.built.contains_key(&key) {
            let method = resolve(spec, options)?;
            self.built.insert(key.clone(), method);
        }
        Ok(self.built[&key].as_ref())
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
        let v: MethodSpec = "naive:Local@GPU".parse().unwrap();
        assert_eq!(
            (v.variant.as_deref(), v.device.as_str()),
            (Some("local"), "gpu")
        );
        assert_eq!(v.to_string(), "naive:local@gpu");
        let e = resolve(&"warp@host".parse().unwrap(), &MethodOptions::default())
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("method warp@host: unknown method"),
            "{e}"
        );
        assert!("naive@moon".parse::<MethodSpec>().is_err());
        assert!("naive:@gpu".parse::<MethodSpec>().is_err());
        let mut cache = MethodCache::default();
        let a = cache.get(&s, &MethodOptions::default()).unwrap() as *const _ as *const u8;
        let b = cache.get(&s, &MethodOptions::default()).unwrap() as *const _ as *const u8;
        assert_eq!(a, b, "built once");
        assert!("@gpu".parse::<MethodSpec>().is_err());
    }
}
