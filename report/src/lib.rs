//! mapfilter-report: the reports users hand on: the accuracy report of a comparison (JSON,
//! Markdown, self-contained HTML with quick-look maps and plots), the
//! accuracy and area of a map against labelled reference points
//! ([`accuracy`]: JSON, CSV, HTML, text), the class colours and names
//! every report draws with ([`palette`]: `--palette` files, a categorical
//! palette for 20+ classes) and the
//! page and plot pieces a sweep's report builds on. Everything here is
//! GDAL-free and knows nothing of sweeps; the CLI gathers the figures ([`mapfilter_core::metrics`]) and pictures
//! ([`quicklook`]) and calls in.

pub mod accuracy;
pub mod colour;
pub mod compare;
pub mod markdown;
pub mod numbers;
pub mod page;
pub mod palette;
pub mod plot;
pub mod quicklook;
