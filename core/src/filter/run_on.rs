//! Where image filters run (`filter --device`, `bench-filter --device`): the
//! plain per-pixel host references, or a [`DeviceChoice`] (`host` being the
//! fast host paths), parsed once at the command line; and the chain runner
//! each names.

use super::engine::{ChainRunner, HostRunner};
use crate::device::DeviceChoice;
use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// The runner of an image-filter chain, as the user names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOn {
    /// `host-reference`: the plain per-pixel reference of every op.
    Reference,
    /// `host` (the fast host paths) or an OpenCL device.
    Choice(DeviceChoice),
}

impl RunOn {
    /// The runner this names: `auto` without OpenCL runs on the host.
    pub fn runner(&self) -> Result<Box<dyn ChainRunner>> {
        match self {
            RunOn::Reference => Ok(Box::new(HostRunner { reference: true })),
            RunOn::Choice(choice) => match choice.resolve()? {
                Some(dev) => Ok(Box::new(super::device::DeviceRunner::new(dev))),
                None => Ok(Box::new(HostRunner::default())),
            },
        }
    }
}

impl FromStr for RunOn {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "host-reference" => Ok(RunOn::Reference),
            other => other.parse().map(RunOn::Choice),
        }
    }
}

impl fmt::Display for RunOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunOn::Reference => f.write_str("host-reference"),
            RunOn::Choice(choice) => choice.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!("host-reference".parse::<RunOn>().unwrap(), RunOn::Reference);
        assert_eq!(
            "host".parse::<RunOn>().unwrap(),
            RunOn::Choice(DeviceChoice::Host)
        );
        assert_eq!("GPU".parse::<RunOn>().unwrap().to_string(), "gpu");
        let e = "tpu".parse::<RunOn>().unwrap_err().to_string();
        assert!(
            e.starts_with("unknown device 'tpu'") && e.contains("hint"),
            "{e}"
        );
        let host = RunOn::Choice(DeviceChoice::Host).runner().unwrap();
        let reference = RunOn::Reference.runner().unwrap();
        assert_ne!(host.name(), reference.name());
    }
}
