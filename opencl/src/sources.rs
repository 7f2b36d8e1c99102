//! The OpenCL C sources embedded in the binary (this crate's
//! `kernels/*.cl`) and the `-D` build options that specialise them.
//!
//! To add a kernel file: put it in `kernels/` (the build script embeds
//! every `.cl` file there) and build it with
//! `device.program("name", &BuildOptions::new().define(..))`; or keep it
//! beside its method in mapfilter-core and build
//! `device.program_from_source("name", &with_common(include_str!("name.cl")), ..)`.

/// Prepended to every source: helpers shared by all kernel files.
const COMMON: &str = include_str!("../kernels/common.cl");

/// Every embedded source by name (the file name without `.cl`): every
/// `kernels/*.cl` but `common.cl`, listed by the build script.
pub const SOURCES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/kernel_sources.rs"));

/// The text of embedded source `name` without the common header.
pub fn raw_source(name: &str) -> Option<&'static str> {
    SOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// The text of embedded source `name`, with the common header, if it exists.
pub fn source(name: &str) -> Option<String> {
    raw_source(name).map(with_common)
}

/// A kernel source with the common header before it: what a method that
/// keeps its own `.cl` file beside its code (`include_str!`) builds with
/// `Device::program_from_source`, as the embedded sources are built.
pub fn with_common(text: &str) -> String {
    format!("{COMMON}\n{text}")
}

/// Build options: `-D NAME=VALUE` defines plus raw flags, rendered in the
/// order given (the order is part of the program cache key).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BuildOptions {
    items: Vec<String>,
}

impl BuildOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `-D name=value`.
    pub fn define(mut self, name: &str, value: impl std::fmt::Display) -> Self {
        self.items.push(format!("-D {name}={value}"));
        self
    }

    /// Adds `-D name` when `on`.
    pub fn flag(mut self, name: &str, on: bool) -> Self {
        if on {
            self.items.push(format!("-D {name}"));
        }
        self
    }

    /// Adds a raw compiler option, e.g. `-cl-fast-relaxed-math`.
    pub fn raw(mut self, option: &str) -> Self {
        self.items.push(option.to_string());
        self
    }

    /// The options string passed to `clBuildProgram`.
    pub fn render(&self) -> String {
        self.items.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_render_in_order() {
        let o = BuildOptions::new()
            .define("NB", 16)
            .flag("HIST_LOCAL", true)
            .flag("OFF", false)
            .raw("-w");
        assert_eq!(o.render(), "-D NB=16 -D HIST_LOCAL -w");
    }

    #[test]
    fn every_kernel_file_is_embedded() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_str().unwrap();
            if name != "common" {
                let text = std::fs::read_to_string(&path).unwrap();
                assert_eq!(raw_source(name), Some(text.as_str()), "{name}");
                files += 1;
            }
        }
        assert_eq!(SOURCES.len(), files);
        assert!(raw_source("naive").is_some() && raw_source("filter_conv").is_some());
    }

    #[test]
    fn sources_are_embedded_with_header() {
        let s = source("naive").unwrap();
        assert!(s.contains("__kernel"));
        assert!(source("nope").is_none());
    }
}
