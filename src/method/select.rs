//! Turns `--method`, `--device` and `--variant` into a class smoother.
//!
//! One place decides which implementation runs where; other methods add an
//! arm to [`class_smoother`] (and their variants to [`variants_of`]).

use super::ClassSmoother;
use super::naive::NaiveHost;
use super::naive_cl::{NaiveCl, Variant};
use crate::bail;
use crate::device::DeviceChoice;
use crate::error::Result;

/// Methods this build knows, for help texts and errors.
pub const METHODS: &[&str] = &["naive"];

/// The variants `method` accepts on a device (the first is the default).
pub fn variants_of(method: &str) -> &'static [&'static str] {
    match method {
        "naive" => &["fast", "buffer", "image", "local"],
        _ => &[],
    }
}

/// The smoother for `method` on `device` (`variant`: `None` for the default).
/// `host` (or `auto` without OpenCL) gives the plain Rust implementation.
pub fn class_smoother(
    method: &str,
    device: DeviceChoice,
    variant: Option<&str>,
) -> Result<Box<dyn ClassSmoother>> {
    match method {
        "naive" => match device.resolve()? {
            None => {
                if let Some(v) = variant {
                    v.parse::<Variant>()?; // still reject nonsense
                }
                Ok(Box::new(NaiveHost))
            }
            Some(dev) => {
                let v = variant.map_or(Ok(Variant::default()), str::parse)?;
                Ok(Box::new(NaiveCl::new(dev, v)?))
            }
        },
        other => bail!(
            format!("unknown method '{other}'"),
            hint = format!("methods: {}", METHODS.join(", "))
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_errors() {
        let m = class_smoother("naive", DeviceChoice::Host, None).unwrap();
        assert_eq!(m.name(), "naive/host");
        assert!(class_smoother("nope", DeviceChoice::Host, None).is_err());
        let e = class_smoother("naive", DeviceChoice::Host, Some("warp"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown naive variant 'warp'"), "{e}");
        assert_eq!(variants_of("naive")[0], "fast");
    }
}
