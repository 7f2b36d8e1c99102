//! Everything mapfilter writes goes through this module, so that no run ever
//! loses data.
//!
//! - [`Target`] checks an output path before any computation: a directory,
//!   device, FIFO or socket is refused, an existing file is replaced only with
//!   `--overwrite`, and no input (by any path: symlink, hard link, bind mount)
//!   is ever an output: the files a VRT input reads are inputs too
//!   (see `reads.rs`).
//! - [`TempFile`] is where the bytes go first: created exclusively (never
//!   through a planted symlink) with an unpredictable name beside the target,
//!   locked while its process lives, and removed on every failure, on drop,
//!   and by the signal handler ([`crate::interrupt`]). [`TempFile::commit`]
//!   syncs it and renames it onto the target (refusing to replace a file that
//!   appeared meanwhile unless `--overwrite`), then syncs the directory.
//!   Leftovers of killed runs are recognised by their lock and swept.
//! - [`text`] writes JSON, CSV, Markdown and HTML outputs through the same
//!   path, with `-` meaning standard output; [`csv`] makes the CSV text.
//!
//! GDAL-free: the GeoTIFF writer (`mapfilter::gdal::output_raster::OutputRaster`) writes into
//! a [`TempFile`] and commits it the same way.

pub mod csv;
mod reads;
mod space;
mod target;
mod temp;
pub mod text;

pub use space::disk_full_cause;
pub use target::{Destination, NAME_MAX, Target, distinct, parent_dir};
pub use temp::{PREFIX as TEMP_PREFIX, TempFile, abandon_all, sweep_unlocked, without_cleanup};
