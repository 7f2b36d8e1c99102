//! `mapfilter batch`: smoothing whole datasets as a plan of tasks.
//!
//! - [`inputs`] turns files, directories, globs and `@list` files into rasters.
//! - [`mosaic`] groups rasters on one grid into a mosaic (a VRT written here).
//! - [`options`] holds the smoothing options a plan keeps, typed.
//! - [`plan`] cuts mosaics into tasks (one output window each) and writes
//!   `plan.json` and `tasks.geojson`; it decides once what every task must
//!   share (the class table, the output nodata), so tasks are seam-free.
//! - [`records`] owns the state directory: claims by atomic create, done
//!   and failed records written atomically, output checksums.
//! - [`run`] runs a share of the tasks, several in flight, resuming, as
//!   [`request`] asks; `start` opens its devices while the first tasks'
//!   windows are read;
//!   [`share`] says which tasks a run takes, `tally` counts a task's
//!   classes from its engine's pixels, and `handles` keeps the mosaics'
//!   open handles between tasks.
//! - [`mmu`] is the sieve phase of a plan with a minimum mapping unit: each
//!   mosaic sieved as one raster once its tasks are smoothed, then cut into
//!   the tasks' final outputs.
//! - [`report`] sums the records into report.json/html, the outputs' mosaic
//!   VRT and an optional Cloud Optimized GeoTIFF; [`maps`] gives it the
//!   quick-look maps and class areas.
//! - [`slurm`] writes a job-array script.
//! - [`workers`] sizes a run to the node: tasks in flight, pool threads;
//!   [`processes`] runs a plan on `all` GPUs as one worker process per GPU.

mod as_text;
mod handles;
pub mod inputs;
pub mod maps;
pub mod mmu;
pub mod mosaic;
pub mod options;
pub mod plan;
pub mod processes;
pub mod records;
pub mod report;
pub mod request;
pub mod run;
pub mod share;
pub mod slurm;
mod start;
mod tally;
pub mod workers;
