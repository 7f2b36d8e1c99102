//! Method resolution for sweeps and reports: `METHOD@DEVICE` names (e.g.
//! `naive@host`, `svd@gpu`) to a [`ClassSmoother`].
//!
//! Names are `METHOD[:VARIANT][@DEVICE]`: `naive@host`, `naive@gpu`,
//! `naive:local@cpu`, `svd@gpu`, `dct5@host`, `auto@gpu`, `naive@0`; the
//! variant `exact` of a fast method certifies it (`svd:exact@gpu`, the
//! `--exact` of `smooth`). Which methods, variants and devices exist is
//! decided by [`mapfilter_core::method::select`], the one place that builds smoothers;
//! this module only parses the names sweeps use and passes them on.

use mapfilter_core::bail;
use mapfilter_core::device::DeviceChoice;
use mapfilter_core::error::{Error, Result};
use mapfilter_core::kernel::Kernel;
use mapfilter_core::method::ClassSmoother;
use mapfilter_core::method::naive::cl::Variant;
use mapfilter_core::method::select::{self, FastOptions, Method, MethodSpec};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// A method on a device, as named in configs: `METHOD[:VARIANT][@DEVICE]`
/// (device `host` by default, the method's default variant). Names are
/// not case-sensitive.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MethodName {
    pub method: Method,
    /// The device variant (naive's, also auto's naive candidate).
    pub variant: Option<Variant>,
    /// The variant `exact` of a fast method: certified.
    pub certified: bool,
    /// The device as named (lowercase), checked to parse.
    pub device: String,
}

impl FromStr for MethodName {
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
                usage,
                format!("method '{text}' is not METHOD[:VARIANT]@DEVICE"),
                hint = "e.g. naive@host, naive:local@gpu, svd@cpu"
            );
        }
        device.parse::<DeviceChoice>()?;
        let method: Method = method.to_ascii_lowercase().parse()?;
        let variant = variant.map(str::to_ascii_lowercase);
        let certified = method.is_certifiable() && variant.as_deref() == Some("exact");
        let variant = match variant {
            Some(_) if certified => None,
            v => v.as_deref().map(str::parse::<Variant>).transpose()?,
        };
        Ok(MethodName {
            method,
            variant,
            certified,
            device: device.to_ascii_lowercase(),
        })
    }
}

impl fmt::Display for MethodName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.certified, self.variant) {
            (true, _) => write!(f, "{}:exact@{}", self.method, self.device),
            (false, Some(v)) => write!(f, "{}:{}@{}", self.method, v.name(), self.device),
            (false, None) => write!(f, "{}@{}", self.method, self.device),
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

/// Builds the method `name` names on its device (opening it) for `kernel`,
/// or says what exists. Rank and terms reach the methods that take them
/// only (naive ignores both, so one sweep can vary the rank for svd beside
/// naive).
pub fn resolve(
    name: &MethodName,
    options: &MethodOptions,
    kernel: &Kernel,
) -> Result<Box<dyn ClassSmoother>> {
    let device: DeviceChoice = name.device.parse()?;
    let takes = name.method.family().accepts();
    let fast = FastOptions {
        rank: options.rank.filter(|_| takes.rank),
        energy: None,
        terms: options.terms.filter(|_| takes.terms),
        exact: name.certified,
    };
    MethodSpec::new(name.method, name.variant, fast)
        .and_then(|spec| select::smoother_for(&spec, &device, kernel))
        .map_err(|e| e.context(format!("method {name}")))
}

/// Methods built once per (name, options, kernel) and reused: opening a
/// device and compiling its programs stays out of the timed runs.
#[derive(Default)]
pub struct MethodCache {
    built: HashMap<CacheKey, Box<dyn ClassSmoother>>,
}

/// A method as built: name, options and the kernel (side and exact weights).
type CacheKey = (MethodName, MethodOptions, usize, Vec<u32>);

impl MethodCache {
    pub fn get(
        &mut self,
        spec: &MethodName,
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
        let s: MethodName = "Naive".parse().unwrap();
        assert_eq!(s.to_string(), "naive@host");
        let k = mapfilter_core::kernel::KernelSpec::Box { size: 3 }
            .build()
            .unwrap();
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
        let v: MethodName = "naive:Local@GPU".parse().unwrap();
        assert_eq!(
            (v.variant, v.device.as_str()),
            (Some(Variant::Local), "gpu")
        );
        assert_eq!(v.to_string(), "naive:local@gpu");
        let e = "warp@host".parse::<MethodName>().unwrap_err();
        assert!(e.to_string().contains("unknown method 'warp'"), "{e}");
        let e = "naive:exact@host".parse::<MethodName>().unwrap_err();
        assert!(e.to_string().contains("unknown naive variant"), "{e}");
        assert!("naive@moon".parse::<MethodName>().is_err());
        assert!("naive:@gpu".parse::<MethodName>().is_err());
        let mut cache = MethodCache::default();
        let a = cache.get(&s, &MethodOptions::default(), &k).unwrap() as *const _ as *const u8;
        let b = cache.get(&s, &MethodOptions::default(), &k).unwrap() as *const _ as *const u8;
        assert_eq!(a, b, "built once");
        assert!("@gpu".parse::<MethodName>().is_err());
    }
}
