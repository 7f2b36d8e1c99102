//! Reports users hand on: the accuracy report of a comparison (JSON,
//! Markdown, self-contained HTML with quick-look maps and plots) and the
//! HTML report of a sweep. Everything here is GDAL-free; the CLI gathers the
//! figures ([`crate::metrics`]) and pictures ([`quicklook`]) and calls in.

pub mod colour;
pub mod compare;
pub mod numbers;
pub mod page;
pub mod plot;
pub mod quicklook;
pub mod sweep;
