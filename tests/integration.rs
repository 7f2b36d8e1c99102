//! The integration tests, as one test binary (`cargo test --test integration`;
//! `autotests = false` in Cargo.toml). Each tests/NAME.rs is a module here:
//! linking the whole crate once instead of once per file saves most of the
//! suite's cold build. A new test file needs its `mod NAME;` line below
//! (`every_test_file_is_a_module` fails otherwise), and `use crate::common;`
//! instead of `mod common;` for the shared helpers.
//!
//! The modules share one process: tests that change process-wide state
//! (environment, current directory, GDAL config options, signal handlers)
//! must not; run the CLI (`CARGO_BIN_EXE_mapfilter`) in a child process
//! with its own environment instead.

mod common;

mod accuracy;
mod architecture;
mod batch;
mod batch_mmu;
mod batch_slurm;
mod bench_layout;
mod bench_renderer;
mod big_kernels;
mod bundled_data;
mod cli_device;
mod cli_errors;
mod compare;
mod deb_package;
mod dry_run;
mod fast_cl;
mod fast_methods;
mod filter_cli;
mod filter_device;
mod fixtures;
mod fixtures_generator;
mod gdal_roundtrip;
mod inputs;
mod json_summary;
mod kernel_units;
mod large_kernels;
mod naive_cl;
mod no_data_loss;
mod opencv_compare;
mod option_fuzz;
mod output_format;
mod policies;
mod progress_lines;
mod qgis_provider;
mod report_chromium;
mod scripting;
mod semantics;
mod sieve;
mod smooth_paths;
mod sweep;

/// Every tests/*.rs file is declared above: with `autotests = false` cargo
/// would not build a file that is not, and its tests would silently not run.
#[test]
fn every_test_file_is_a_module() {
    let root = include_str!("integration.rs");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        if module != "integration" && !root.contains(&format!("\nmod {module};\n")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "add `mod NAME;` to tests/integration.rs for {missing:?}"
    );
}
