//! `--device auto|host|cpu|gpu|INDEX` (default from `MAPFILTER_DEVICE`):
//! parsing, and resolving a choice to an open [`Device`] or the host path.

use super::{Device, DeviceInfo, DeviceKind, list_devices};
use crate::bail;
use crate::error::{Error, Result};
use std::str::FromStr;

/// Environment variable giving the default of `--device`.
pub const DEVICE_ENV: &str = "MAPFILTER_DEVICE";

/// Where a method should run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// The first GPU, else the host. An OpenCL CPU device pays its platform
    /// listing and program build on every run and speeds up naive only
    /// (BENCHMARKS.md, "Naive: PoCL against the host"), so `auto` does not
    /// pick one; `cpu` still does. Without any OpenCL device a warning says so.
    #[default]
    Auto,
    /// The plain Rust path (rayon), no OpenCL.
    Host,
    /// The first OpenCL CPU device (PoCL).
    Cpu,
    /// The first OpenCL GPU.
    Gpu,
    /// A device by its index in `mapfilter devices`.
    Index(usize),
}

impl FromStr for DeviceChoice {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(DeviceChoice::Auto),
            "host" => Ok(DeviceChoice::Host),
            "cpu" => Ok(DeviceChoice::Cpu),
            "gpu" => Ok(DeviceChoice::Gpu),
            other => other.parse().map(DeviceChoice::Index).map_err(|_| {
                Error::new(format!("unknown device '{text}'"))
                    .hint("use auto, host, cpu, gpu or an index from `mapfilter devices`")
            }),
        }
    }
}

impl std::fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceChoice::Auto => f.write_str("auto"),
            DeviceChoice::Host => f.write_str("host"),
            DeviceChoice::Cpu => f.write_str("cpu"),
            DeviceChoice::Gpu => f.write_str("gpu"),
            DeviceChoice::Index(i) => write!(f, "{i}"),
        }
    }
}

impl DeviceChoice {
    /// The `--device` value if given, else `MAPFILTER_DEVICE`, else `auto`.
    pub fn from_arg(arg: Option<&str>) -> Result<Self> {
        match arg {
            Some(a) => a.parse(),
            None => match std::env::var(DEVICE_ENV) {
                Ok(v) => v.parse().map_err(|e: Error| e.context(DEVICE_ENV)),
                Err(_) => Ok(DeviceChoice::Auto),
            },
        }
    }

    /// Opens the chosen device; `None` means the host path.
    ///
    /// `auto` never fails for lack of OpenCL: it falls back to the host and
    /// prints one warning line. Explicit `cpu`, `gpu` and indices fail with a hint.
    pub fn resolve(self) -> Result<Option<Device>> {
        if self == DeviceChoice::Host {
            return Ok(None);
        }
        if self == DeviceChoice::Auto && !super::icd::gpu_possible() {
            log::info!("no installed OpenCL driver offers a GPU; running on the host");
            return Ok(None);
        }
        let devices = match list_devices() {
            Ok(d) => d,
            Err(e) if self == DeviceChoice::Auto => {
                log::warn!("{e}; running on the host");
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let first = |kind: DeviceKind| devices.iter().find(|d| d.kind == kind);
        let pick: Option<&DeviceInfo> = match self {
            DeviceChoice::Auto => first(DeviceKind::Gpu),
            DeviceChoice::Cpu => first(DeviceKind::Cpu),
            DeviceChoice::Gpu => first(DeviceKind::Gpu),
            DeviceChoice::Index(i) => devices.get(i),
            DeviceChoice::Host => unreachable!("handled above"),
        };
        match (pick, self) {
            (Some(info), DeviceChoice::Auto) => match Device::open(info.index) {
                Ok(d) => Ok(Some(d)),
                Err(e) => {
                    log::warn!("{e}; running on the host");
                    Ok(None)
                }
            },
            (Some(info), _) => Device::open(info.index).map(Some),
            (None, DeviceChoice::Auto) => {
                if devices.is_empty() {
                    log::warn!("no OpenCL device; running on the host");
                }
                Ok(None)
            }
            (None, DeviceChoice::Index(i)) => bail!(
                format!("there is no OpenCL device {i} ({} found)", devices.len()),
                hint = "`mapfilter devices` lists the indices"
            ),
            (None, _) => bail!(
                format!("no OpenCL {self} device found"),
                hint = "`mapfilter devices` lists what there is; --device host runs without OpenCL"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!("auto".parse::<DeviceChoice>().unwrap(), DeviceChoice::Auto);
        assert_eq!("HOST".parse::<DeviceChoice>().unwrap(), DeviceChoice::Host);
        assert_eq!(" gpu".parse::<DeviceChoice>().unwrap(), DeviceChoice::Gpu);
        assert_eq!("cpu".parse::<DeviceChoice>().unwrap(), DeviceChoice::Cpu);
        assert_eq!("2".parse::<DeviceChoice>().unwrap(), DeviceChoice::Index(2));
        let e = "tpu".parse::<DeviceChoice>().unwrap_err().to_string();
        assert!(
            e.starts_with("unknown device 'tpu'") && !e.contains('\n'),
            "{e}"
        );
        assert!("-1".parse::<DeviceChoice>().is_err());
    }

    #[test]
    fn host_needs_no_opencl() {
        assert!(DeviceChoice::Host.resolve().unwrap().is_none());
    }

    #[test]
    fn missing_index_is_a_one_line_error() {
        if let Ok(list) = list_devices() {
            let e = DeviceChoice::Index(list.len() + 7).resolve().unwrap_err();
            assert!(e.to_string().contains("no OpenCL device"), "{e}");
        }
    }
}
