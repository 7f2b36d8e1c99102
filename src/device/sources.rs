//! The OpenCL C sources embedded in the binary (`kernels/*.cl`) and the
//! `-D` build options that specialise them.
//!
//! To add a kernel file: put it in `kernels/`, add one line to [`SOURCES`],
//! and build it with `device.program("name", &BuildOptions::new().define(..))`.

/// Prepended to every source: helpers shared by all kernel files.
const COMMON: &str = include_str!("../../kernels/common.cl");

/// Every embedded source by name (the file name without `.cl`).
pub const SOURCES: &[(&str, &str)] = &[
    ("naive", include_str!("../../kernels/naive.cl")),
    ("svd", include_str!("../../kernels/svd.cl")),
    ("dct5", include_str!("../../kernels/dct5.cl")),
    ("rank", include_str!("../../kernels/rank.cl")),
    ("filter_tile", include_str!("../../kernels/filter_tile.cl")),
    ("filter_conv", include_str!("../../kernels/filter_conv.cl")),
    (
        "filter_median",
        include_str!("../../kernels/filter_median.cl"),
    ),
    (
        "filter_scharr",
        include_str!("../../kernels/filter_scharr.cl"),
    ),
    (
        "filter_bilateral",
        include_str!("../../kernels/filter_bilateral.cl"),
    ),
    ("filter_oil", include_str!("../../kernels/filter_oil.cl")),
    (
        "filter_color",
        include_str!("../../kernels/filter_color.cl"),
    ),
    (
        "filter_demosaic",
        include_str!("../../kernels/filter_demosaic.cl"),
    ),
    (
        "filter_pyramid",
        include_str!("../../kernels/filter_pyramid.cl"),
    ),
    (
        "filter_histogram",
        include_str!("../../kernels/filter_histogram.cl"),
    ),
];

/// The text of embedded source `name` without the common header.
pub fn raw_source(name: &str) -> Option<&'static str> {
    SOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// The text of embedded source `name`, with the common header, if it exists.
pub fn source(name: &str) -> Option<String> {
    SOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| format!("{COMMON}\n{text}"))
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
    fn sources_are_embedded_with_header() {
        let s = source("naive").unwrap();
        assert!(s.contains("__kernel"));
        assert!(source("nope").is_none());
    }
}
