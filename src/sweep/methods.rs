//! Method resolution for sweeps and reports: `METHOD@DEVICE` names (e.g.
//! `naive@host`, `svd@gpu`) to a [`ClassSmoother`].
//!
//! Names are `METHOD[:VARIANT][@DEVICE]`: `naive@host`, `naive@gpu`,
//! `naive:local@cpu`, `svd@gpu`, `dct5@host`, `auto@gpu`, `naive@0`; the
//! variant `exact` of a fast method certifies it (`svd:exact@gpu`, the
//! `--exact` of `smooth`). Which methods, variants and devices exist is
//! decided by [`crate::method::select`], the one place that builds smoothers;
//! this module only parses the names sweeps use and passes them on.

use crate::bail;
use crate::device::DeviceChoice;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::method::ClassSmoother;
use crate::method::select::{self, FastOptions};
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

/// Builds the method `spec` names on its device (opening it) for `kernel`,
/// or says what exists. Rank and terms reach the fast methods only (naive
/// ignores them, so one sweep can vary the rank for svd beside naive).
pub fn resolve(
    spec: &MethodSpec,
    options: &MethodOptions,
    kernel: &Kernel,
) -> Result<Box<dyn ClassSmoother>> {
    let device: DeviceChoice = spec.device.parse()?;
    let fast_method = spec.method != "naive";
    let (variant, exact) = match spec.variant.as_deref() {
        Some("exact") if fast_method => (None, true),
        v => (v, false),
    };
    let fast = FastOptions {
        rank: options
            .rank
            .filter(|_| spec.method == "svd" || spec.method == "auto"),
        energy: None,
        terms: options
            .terms
            .filter(|_| spec.method == "dct5" || spec.method == "auto"),
        exact,
    };
    select::smoother_for(&spec.method, &device, variant, kernel, &fast)
        .map_err(|e| e.context(format!("method {spec}")))
}

/// Methods built once per (name, options, kernel) and reused: opening a
/// device and compiling its programs stays out of the timed runs.
#[derive(Default)]
pub struct MethodCache {
    built: HashMap<CacheKey, Box<dyn ClassSmoother>>,
}

/// A method as built: name, options and the kernel (side and exact weights).
type CacheKey = (MethodSpec, MethodOptions, usize, Vec<u32>);

impl MethodCache {
    pub fn get(
        &mut self,
        spec: &MethodSpec,
        options: &MethodOptions,
        kernel: &Kernel,
    ) -> Result<&dyn ClassSmoother> {
        let key = (
            spec.clone(),
            *options,
            kernel.size(),
            kernel.quantised().to_vec(),
        );
        if !self.built.contains_key(&key) {
            let method = resolve(spec, options, kernel)?;
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
        let k = crate::kernel::KernelSpec::Box { size: 3 }.build().unwrap();
        let m = resolve(&s, &MethodOptions::default(), &k).unwrap();
        assert!(m.is_exact());
        let rank1 = MethodOptions {
            rank: Some(1),
            terms: None,
        };
        // Rank goes to svd, not to naive (which would refuse it).
        assert!(resolve(&s, &rank1, &k).is_ok());
        let svd = resolve(&"svd@host".parse().unwrap(), &rank1, &k).unwrap();
        assert!(svd.name().contains("rank 1"), "{}", svd.name());
        let exact = resolve(&"svd:exact@host".parse().unwrap(), &rank1, &k).unwrap();
        assert!(exact.is_exact());
        let v: MethodSpec = "naive:Local@GPU".parse().unwrap();
        assert_eq!(
            (v.variant.as_deref(), v.device.as_str()),
            (Some("local"), "gpu")
        );
        assert_eq!(v.to_string(), "naive:local@gpu");
        let e = resolve(&"warp@host".parse().unwrap(), &MethodOptions::default(), &k)
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("method warp@host: unknown method"),
            "{e}"
        );
        assert!("naive@moon".parse::<MethodSpec>().is_err());
        assert!("naive:@gpu".parse::<MethodSpec>().is_err());
        let mut cache = MethodCache::default();
        let a = cache.get(&s, &MethodOptions::default(), &k).unwrap() as *const _ as *const u8;
        let b = cache.get(&s, &MethodOptions::default(), &k).unwrap() as *const _ as *const u8;
        assert_eq!(a, b, "built once");
        assert!("@gpu".parse::<MethodSpec>().is_err());
    }
}
