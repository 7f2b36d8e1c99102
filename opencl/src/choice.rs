//! `--device auto|host|cpu|gpu|INDEX|all|LIST` (default from
//! `MAPFILTER_DEVICE`): parsing, and resolving a choice to open
//! [`Device`]s or the host path.
//!
//! `all` and comma lists (`1,2`, `gpu,cpu`, `0,host`) name several devices
//! that share one run's tiles (`method::multi`). `all` is every GPU (every
//! OpenCL device where there is none) and not the host: tiles are written
//! in order, so a slow CPU device holding the oldest tile stalls the GPUs;
//! an OpenCL CPU device already computes on the host's cores, and the
//! host's threads read, compact and write tiles for the devices. A list may
//! still name any mix, `host` included. A
//! device named twice in a list is opened twice, as two contexts with their
//! own queues and program caches: two streams of tiles on one device, and
//! how the tests share tiles between two devices on a machine with one.

use super::{Device, DeviceInfo, DeviceKind, list_devices};
use mapfilter_base::bail;
use mapfilter_base::error::{Error, Result, Setting};
use std::str::FromStr;

pub use mapfilter_base::switches::DEVICE_ENV;

/// Where a method should run.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
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
    /// Every OpenCL device, sharing the tiles (the host when there is none).
    All,
    /// Several devices sharing the tiles, each `host`, `cpu`, `gpu` or an index.
    List(Vec<DeviceChoice>),
}

/// One member of a run's devices: an open device, or the host (`None`).
pub type Member = Option<Device>;

impl FromStr for DeviceChoice {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let lower = text.trim().to_ascii_lowercase();
        if lower.contains(',') {
            let items = lower
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|item| match one(item, text)? {
                    c @ (DeviceChoice::Auto | DeviceChoice::All) => bail!(
                        usage,
                        format!("'{c}' cannot be part of the device list '{text}'"),
                        hint = "list host, cpu, gpu or indices from `mapfilter devices`, e.g. 0,1"
                    ),
                    c => Ok(c),
                })
                .collect::<Result<Vec<_>>>()?;
            return Ok(match <[DeviceChoice; 1]>::try_from(items) {
                Ok([single]) => single,
                Err(items) if items.is_empty() => DeviceChoice::Auto,
                Err(items) => DeviceChoice::List(items),
            });
        }
        one(&lower, text)
    }
}

/// One device name of `--device` (`text`: the whole value, for the error).
fn one(item: &str, text: &str) -> Result<DeviceChoice> {
    match item {
        "auto" | "" => Ok(DeviceChoice::Auto),
        "host" => Ok(DeviceChoice::Host),
        "cpu" => Ok(DeviceChoice::Cpu),
        "gpu" => Ok(DeviceChoice::Gpu),
        "all" => Ok(DeviceChoice::All),
        other => other.parse().map(DeviceChoice::Index).map_err(|_| {
            Error::usage(format!("unknown device '{text}'")).hint(
                "use auto, host, cpu, gpu, all, an index from `mapfilter devices`, or a list such as 0,1",
            )
        }),
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
            DeviceChoice::All => f.write_str("all"),
            DeviceChoice::List(items) => {
                let names: Vec<String> = items.iter().map(ToString::to_string).collect();
                f.write_str(&names.join(","))
            }
        }
    }
}

impl DeviceChoice {
    /// The `--device` value if given, else `MAPFILTER_DEVICE`, else `auto`.
    pub fn from_arg(arg: Option<&str>) -> Result<Self> {
        Self::or_env(arg.map(str::parse).transpose()?)
    }

    /// The parsed `--device` value if given, else `MAPFILTER_DEVICE`, else `auto`.
    pub fn or_env(arg: Option<DeviceChoice>) -> Result<Self> {
        match arg {
            Some(choice) => Ok(choice),
            None => match &mapfilter_base::switches::environment().device {
                Some(v) => v.parse().map_err(|e: Error| e.context(DEVICE_ENV)),
                None => Ok(DeviceChoice::Auto),
            },
        }
    }

    /// Whether the choice names several devices (`all` or a list).
    pub fn is_several(&self) -> bool {
        matches!(self, DeviceChoice::All | DeviceChoice::List(_))
    }

    /// The devices of the run, in order: one for a single choice, every
    /// GPU for `all` (else every OpenCL device; the host when there is
    /// none, with a warning), each item of a list (a device listed again is opened as
    /// another context).
    pub fn members(&self) -> Result<Vec<Member>> {
        match self {
            DeviceChoice::All => {
                let devices = match list_devices() {
                    Ok(d) => d,
                    Err(e) => {
                        log::warn!("{e}; running on the host");
                        return Ok(vec![None]);
                    }
                };
                if devices.is_empty() {
                    log::warn!("no OpenCL device; running on the host");
                    return Ok(vec![None]);
                }
                // Tiles are written in order, so a CPU device (PoCL, about a
                // tenth of a GPU's speed) holding the oldest tile makes the
                // GPUs wait: with a GPU, `all` means every GPU. Lists may
                // still name any mix.
                let gpus: Vec<_> = devices
                    .iter()
                    .filter(|d| d.kind == DeviceKind::Gpu)
                    .collect();
                let chosen: Vec<_> = if gpus.is_empty() {
                    devices.iter().collect()
                } else {
                    gpus
                };
                chosen
                    .iter()
                    .map(|d| Device::open(d.index).map(Some))
                    .collect()
            }
            DeviceChoice::List(items) => {
                let mut opened: Vec<usize> = Vec::new();
                items
                    .iter()
                    .map(|item| {
                        let Some(dev) = item.resolve()? else {
                            return Ok(None);
                        };
                        let index = dev.info().index;
                        let instance = opened.iter().filter(|&&i| i == index).count();
                        opened.push(index);
                        if instance == 0 {
                            Ok(Some(dev))
                        } else {
                            Device::open_instance(index, instance).map(Some)
                        }
                    })
                    .collect()
            }
            single => Ok(vec![single.resolve()?]),
        }
    }

    /// Whether a run with this choice uses the first GPU and no other
    /// device (`gpu`, and `auto` where there is one).
    pub fn is_first_gpu(&self) -> bool {
        matches!(self, DeviceChoice::Gpu | DeviceChoice::Auto)
    }

    /// Opens the chosen device; `None` means the host path.
    ///
    /// `auto` never fails for lack of OpenCL: it falls back to the host and
    /// prints one warning line. Explicit `cpu`, `gpu` and indices fail with
    /// a hint, as do `all` and lists (they name several devices: see
    /// [`DeviceChoice::members`]).
    pub fn resolve(&self) -> Result<Option<Device>> {
        if *self == DeviceChoice::Host {
            return Ok(None);
        }
        if self.is_several() {
            bail!(
                usage,
                format!(
                    "{} names several devices, and this command runs on one",
                    Setting::Device.is(self)
                ),
                hint = "several devices apply to smooth, batch and bench; name one device here"
            );
        }
        if *self == DeviceChoice::Auto && !super::icd::gpu_possible() {
            log::info!("no installed OpenCL driver offers a GPU; running on the host");
            return Ok(None);
        }
        let devices = match list_devices() {
            Ok(d) => d,
            Err(e) if *self == DeviceChoice::Auto => {
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
            DeviceChoice::Index(i) => devices.get(*i),
            _ => unreachable!("handled above"),
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
                usage,
                format!("there is no OpenCL device {i} ({} found)", devices.len()),
                hint = "`mapfilter devices` lists the indices"
            ),
            (None, _) => bail!(
                device,
                format!("no OpenCL {self} device found"),
                hint = format!(
                    "`mapfilter devices` lists what there is; {} runs without OpenCL",
                    Setting::Device.is("host")
                )
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
        assert_eq!("All".parse::<DeviceChoice>().unwrap(), DeviceChoice::All);
        let list = "1, 2,gpu,host".parse::<DeviceChoice>().unwrap();
        assert_eq!(
            list,
            DeviceChoice::List(vec![
                DeviceChoice::Index(1),
                DeviceChoice::Index(2),
                DeviceChoice::Gpu,
                DeviceChoice::Host
            ])
        );
        assert_eq!(list.to_string(), "1,2,gpu,host");
        assert!(list.is_several() && DeviceChoice::All.is_several());
        assert_eq!(
            "3,".parse::<DeviceChoice>().unwrap(),
            DeviceChoice::Index(3)
        );
        let e = "tpu".parse::<DeviceChoice>().unwrap_err().to_string();
        assert!(
            e.starts_with("unknown device 'tpu'") && !e.contains('\n'),
            "{e}"
        );
        assert!("-1".parse::<DeviceChoice>().is_err());
        for bad in ["0,all", "auto,1", "0,tpu"] {
            let e = bad.parse::<DeviceChoice>().unwrap_err().to_string();
            assert!(e.contains(bad) && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn host_needs_no_opencl() {
        assert!(DeviceChoice::Host.resolve().unwrap().is_none());
        let list = DeviceChoice::List(vec![DeviceChoice::Host, DeviceChoice::Host]);
        let members = list.members().unwrap();
        assert!(members.len() == 2 && members.iter().all(Option::is_none));
        let e = list.resolve().unwrap_err().to_string();
        assert!(e.contains("several devices"), "{e}");
    }

    #[test]
    fn missing_index_is_a_one_line_error() {
        if let Ok(list) = list_devices() {
            let e = DeviceChoice::Index(list.len() + 7).resolve().unwrap_err();
            assert!(e.to_string().contains("no OpenCL device"), "{e}");
        }
    }

    /// A device listed twice is two contexts: separate handles, same device.
    #[test]
    fn a_device_listed_twice_opens_twice() {
        let Some(dev) = super::super::test_device() else {
            return;
        };
        let i = dev.info().index;
        let list = DeviceChoice::List(vec![DeviceChoice::Index(i), DeviceChoice::Index(i)]);
        let members = list.members().unwrap();
        let (a, b) = (members[0].as_ref().unwrap(), members[1].as_ref().unwrap());
        assert_eq!(a.info().index, b.info().index);
        assert!(!a.same_context(b));
        // Opening the list again gives the same two contexts.
        let again = list.members().unwrap();
        assert!(again[1].as_ref().unwrap().same_context(b));
    }
}
