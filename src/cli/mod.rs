//! The command line: argument types (clap) and one module per subcommand.
//! Subcommands parse and check options into typed values, then call the
//! library; they print results and turn errors into one line and an exit code.

#[cfg(feature = "gdal")]
mod assess;
#[cfg(feature = "gdal")]
mod batch;
mod bench;
mod bench_filter;
mod bench_pyramid;
#[cfg(feature = "gdal")]
mod blend;
#[cfg(feature = "gdal")]
pub mod compare;
#[cfg(feature = "gdal")]
mod compress_args;
mod describe;
mod devices;
mod fast_args;
#[cfg(feature = "gdal")]
mod filter;
#[cfg(feature = "gdal")]
mod gen_cmd;
#[cfg(feature = "gdal")]
mod histogram;
#[cfg(feature = "gdal")]
mod info;
#[cfg(feature = "gdal")]
mod input_args;
#[cfg(feature = "gdal")]
mod kernel_args;
mod logging;
#[cfg(feature = "gdal")]
mod min_agreement;
mod output_args;
mod palette_arg;
mod pattern_arg;
#[cfg(feature = "gdal")]
mod policy_args;
#[cfg(feature = "gdal")]
mod sample;
mod scripting;
#[cfg(feature = "gdal")]
mod sieve;
#[cfg(feature = "gdal")]
mod smooth;
#[cfg(feature = "gdal")]
mod smoothing_args;
#[cfg(feature = "gdal")]
mod summary;
mod sweep;
#[cfg(feature = "gdal")]
mod timings;
mod tune;

use crate::error::Result;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "mapfilter",
    version,
    about = "Smooth classified rasters (majority filter) and filter imagery on OpenCL devices, with accuracy reports against the exact baseline"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Set a GDAL configuration option before any GDAL work (as gdal_translate's --config),
    /// e.g. --config GDAL_CACHEMAX 2048; repeatable.
    // Its id is not `config`: `sweep` has an argument of that name.
    #[arg(long = "config", id = "gdal_config", global = true, num_args = 2, value_names = ["KEY", "VALUE"])]
    gdal_config: Vec<String>,
    /// More log lines on stderr: -v what the run does, -vv details (temp files, GDAL warnings),
    /// -vvv per-tile traces. RUST_LOG overrides it.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// How an error is printed on stderr: text (one line, with a hint) or json (one object:
    /// error, hint, kind, code), for scripts and plugins that sort failures by kind.
    #[arg(long, global = true, value_enum, default_value_t = ErrorFormat::Text)]
    error_format: ErrorFormat,
}

/// `--error-format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ErrorFormat {
    Text,
    Json,
}

impl ErrorFormat {
    /// The format asked for on the command line, read from the arguments
    /// themselves: for errors met while clap parses them.
    fn from_args() -> ErrorFormat {
        let args: Vec<String> = std::env::args().collect();
        let json = args
            .windows(2)
            .any(|w| w[0] == "--error-format" && w[1] == "json")
            || args.iter().any(|a| a == "--error-format=json");
        if json {
            ErrorFormat::Json
        } else {
            ErrorFormat::Text
        }
    }

    /// Prints `e` on stderr in this format.
    fn print(self, e: &crate::Error) {
        match self {
            ErrorFormat::Text => eprintln!("mapfilter: error: {e}"),
            ErrorFormat::Json => eprintln!(
                "{}",
                serde_json::json!({
                    "error": e.cause(),
                    "hint": e.hint_text(),
                    "kind": e.kind().name(),
                    "code": e.code(),
                })
            ),
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Smooth a classified raster with a weighted class-histogram (majority) filter.
    #[cfg(feature = "gdal")]
    Smooth(Box<smooth::SmoothArgs>),
    /// Minimum mapping unit: merge polygons smaller than a threshold into their largest neighbour (as gdal_sieve.py).
    #[cfg(feature = "gdal")]
    Sieve(sieve::SieveArgs),
    /// Smooth whole datasets: plan seam-free tasks, run them (resumable, sharded, SLURM arrays), report.
    #[cfg(feature = "gdal")]
    Batch(batch::BatchArgs),
    /// Describe a raster: size, georeferencing, nodata, classes present with pixel counts.
    #[cfg(feature = "gdal")]
    Info(info::InfoArgs),
    /// Generate a synthetic class raster (the thesis' simplex and random data sets) as GeoTIFF.
    #[cfg(feature = "gdal")]
    Gen(gen_cmd::GenArgs),
    /// Filter a continuous raster (imagery, elevation) with a chain of image ops in one pass.
    #[cfg(feature = "gdal")]
    Filter(filter::FilterArgs),
    /// Blend two rasters of one grid: weighted sum (as OpenCV's addWeighted) or alpha blending.
    #[cfg(feature = "gdal")]
    Blend(blend::BlendArgs),
    /// Per-band histograms of a raster as JSON or CSV.
    #[cfg(feature = "gdal")]
    Histogram(histogram::HistogramArgs),
    /// Time image ops on a synthetic in-memory image (no GDAL needed): JSON lines.
    BenchFilter(bench_filter::BenchFilterArgs),
    /// Compare a candidate class raster with a reference: agreement, kappa, confusion, per-class IoU and area change, mismatch raster, reports.
    #[cfg(feature = "gdal")]
    Compare(compare::CompareArgs),
    /// Draw a stratified random sample of a map's pixels for labelling from reference data (GeoPackage or CSV points).
    #[cfg(feature = "gdal")]
    Sample(sample::SampleArgs),
    /// Estimate a map's accuracy and class areas with 95 % intervals from labelled reference points (Olofsson et al. 2014).
    #[cfg(feature = "gdal")]
    Assess(assess::AssessArgs),
    /// Run a sweep config (run time and agreement against image size, kernel size, classes, rank) on synthetic inputs; writes CSV, JSON and an HTML report.
    Sweep(sweep::SweepArgs),
    /// List the OpenCL devices (index, type, memory, version) usable with --device.
    Devices(devices::DevicesArgs),
    /// Time a method on synthetic rasters (no GDAL needed); one JSON line per run.
    Bench(bench::BenchArgs),
    /// Measure work-group shapes and tile sides per OpenCL device and store the fastest in the tune database later runs use.
    Tune(tune::TuneArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(scripting::CompletionsArgs),
    /// Print the man page mapfilter(1) on stdout, or write one page per subcommand with --dir.
    Man(scripting::ManArgs),
    /// Describe every command and option (names, help, defaults, choices) as JSON, from the same definitions as --help.
    Describe(describe::DescribeArgs),
}

/// Parses the arguments, runs the command, and returns the process exit code.
pub fn main() -> i32 {
    // First: a signal at any moment from here on removes temp files and exits 128 + N.
    crate::interrupt::install();
    // Every message of this process, from any layer, names settings as flags.
    crate::error::setting::set_front(crate::error::Front::Cli);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    logging::init(cli.verbose);
    let format = cli.error_format;
    match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            crate::interrupt::leave_exit_to_the_signal();
            format.print(&e);
            e.code()
        }
    }
}

/// A typed option's own refusal (a bad `--device`, `--method`, `--border`,
/// ...) is one line with a hint and exit code 1, like every error of a run;
/// clap's usage errors, `--help` and `--version` keep clap's output and codes.
fn usage_error(e: clap::Error) -> i32 {
    use std::error::Error as _;
    if let Some(err) = e.source().and_then(|s| s.downcast_ref::<crate::Error>()) {
        ErrorFormat::from_args().print(err);
        return 1;
    }
    e.exit()
}

fn run(cli: Cli) -> Result<()> {
    set_gdal_config(&cli.gdal_config)?;
    match cli.command {
        #[cfg(feature = "gdal")]
        Command::Smooth(args) => smooth::run(*args),
        #[cfg(feature = "gdal")]
        Command::Sieve(args) => sieve::run(args),
        #[cfg(feature = "gdal")]
        Command::Batch(args) => batch::run(args),
        #[cfg(feature = "gdal")]
        Command::Info(args) => info::run(args),
        #[cfg(feature = "gdal")]
        Command::Gen(args) => gen_cmd::run(args),
        #[cfg(feature = "gdal")]
        Command::Filter(args) => filter::run(args),
        #[cfg(feature = "gdal")]
        Command::Histogram(args) => histogram::run(args),
        #[cfg(feature = "gdal")]
        Command::Blend(args) => blend::run(args),
        #[cfg(feature = "gdal")]
        Command::Compare(args) => compare::run(args),
        #[cfg(feature = "gdal")]
        Command::Sample(args) => sample::run(args),
        #[cfg(feature = "gdal")]
        Command::Assess(args) => assess::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Devices(args) => devices::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Tune(args) => tune::run(args),
        Command::BenchFilter(args) => bench_filter::run(args),
        Command::Completions(args) => scripting::completions(args),
        Command::Man(args) => scripting::man(args),
        Command::Describe(args) => describe::run(args),
    }
}

/// Applies `--config KEY VALUE` pairs (clap gives them flat, two by two).
fn set_gdal_config(pairs: &[String]) -> Result<()> {
    for pair in pairs.chunks(2) {
        if let [key, value] = pair {
            log::debug!("GDAL config {key}={value}");
            #[cfg(feature = "gdal")]
            gdal::config::set_config_option(key, value).map_err(|e| {
                crate::Error::usage(format!("--config {key} {value}: {e}"))
                    .hint("keys and values are plain text without NUL bytes")
            })?;
            #[cfg(not(feature = "gdal"))]
            {
                let _ = (key, value);
                crate::bail!(
                    usage,
                    "--config needs GDAL, which this build leaves out",
                    hint = "use a build with the gdal feature"
                );
            }
        }
    }
    Ok(())
}
