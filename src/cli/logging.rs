//! `-v`/`-vv`/`-vvv`: the level of the `log` records printed on stderr
//! (warnings always; `-v` adds what the run does, `-vv` details such as
//! temp files, GDAL's own warnings and tuning knobs, `-vvv` per-tile
//! traces). `RUST_LOG` (env_logger's syntax) overrides it, per module too.
//! Results, the `wrote …` summaries and the one-line error are printed
//! directly, not logged.

use log::LevelFilter;

/// The level `-v` given `count` times asks for.
pub fn level(count: u8) -> LevelFilter {
    match count {
        0 => LevelFilter::Warn,
        1 => LevelFilter::Info,
        2 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    }
}

/// How many `-v` give the level in force (for a child process of this one:
/// batch's workers, which need GDAL).
#[cfg(feature = "gdal")]
pub fn verbosity() -> u8 {
    match log::max_level() {
        LevelFilter::Off | LevelFilter::Error | LevelFilter::Warn => 0,
        LevelFilter::Info => 1,
        LevelFilter::Debug => 2,
        LevelFilter::Trace => 3,
    }
}

/// Installs the logger (once; later calls do nothing): `mapfilter: LEVEL: message`.
pub fn init(verbose: u8) {
    use std::io::Write;
    let mut builder = env_logger::Builder::new();
    builder
        .filter_level(level(verbose))
        .format(|out, record| {
            writeln!(
                out,
                "mapfilter: {}: {}",
                record.level().as_str().to_lowercase(),
                record.args()
            )
        })
        .parse_env("RUST_LOG");
    let _ = builder.try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_v_raises_the_level() {
        assert_eq!(level(0), LevelFilter::Warn);
        assert_eq!(level(1), LevelFilter::Info);
        assert_eq!(level(2), LevelFilter::Debug);
        assert_eq!(level(5), LevelFilter::Trace);
    }
}
