//! Build script, two jobs: the start-up time of every binary linked with
//! GDAL (below), and exporting our cache of PROJ's name searches
//! ([`export_proj_name_cache`]). (The method registry and the embedded
//! OpenCL sources are mapfilter-core's build script.)
//!
//! Debian's libgdal pulls in about 110 shared libraries, and loading them
//! is most of the fixed cost of a `mapfilter` run. Most
//! of that is symbol lookup: glibc's loader resolves each of the ~57 000
//! symbol relocations by walking the global scope (the executable, then
//! its libraries breadth-first) until a library defines the symbol, and
//! the heavy providers (Xerces, GEOS, libstdc++, PROJ, ...) sit 15 to 90
//! places deep in libgdal's own list.
//!
//! Naming the heaviest providers as direct dependencies of our binaries
//! moves them to the front of that scope. Nothing else changes: the same
//! libraries are loaded, and every C symbol binds to the same library as
//! before; only C++ template instances that several libraries carry
//! identical copies of (vague linkage) may bind to another copy, each
//! still to one copy for the whole process. libc, libm, BLAS and LAPACK
//! stay where they are, since they define some of the same C symbols.
//! Measured on Debian 12 (GDAL 3.6): an empty program linked with libgdal
//! starts measurably faster with this order (benches/background.md, "Where a run's
//! fixed costs go").
//!
//! Only libraries that libgdal really depends on (per `ldd`) are named, so
//! another GDAL build gets no extra library; where libgdal or `ldd` cannot
//! be found the script does nothing and the link is the plain one.

use std::process::Command;

/// Library name stems, most symbol bindings first (counted with
/// `LD_DEBUG=bindings` on a program linked with Debian 12's libgdal; the
/// libraries with more than ~350 bindings). A stem matches a soname whose
/// part before `.so` is the stem, or the stem followed by `-`.
const HEAVY_PROVIDERS: &[&str] = &[
    "libxerces-c",
    "libgeos",
    "libcrypto",
    "libstdc++",
    "libproj",
    "libpoppler",
    "libkmldom",
    "libsqlite3",
    "libnetcdf",
    "libhdf5_serial",
    "libspatialite",
    "libgeos_c",
    "libgnutls",
    "libnettle",
    "libdfalt",
    "librttopo",
    "libnss3",
    "libunistring",
    "libqhull_r",
    "libLerc",
    "libnssutil3",
    "libldap",
    "libnspr4",
    "libssl",
    "liblcms2",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    order_gdal_providers();
    export_proj_name_cache();
}

/// Exports `gdal/src/proj_names.rs`'s `proj_create_from_name` from our
/// binaries, so that libgdal's calls bind to it (that module says why).
fn export_proj_name_cache() {
    if std::env::var_os("CARGO_FEATURE_GDAL").is_some()
        && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
    {
        // `-u` makes the linker take that object from our library even though
        // no Rust code calls the function.
        println!("cargo:rustc-link-arg=-Wl,-u,proj_create_from_name");
        println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol=proj_create_from_name");
    }
}

/// Names libgdal's heaviest symbol providers as direct dependencies (the
/// module doc says why).
fn order_gdal_providers() {
    if std::env::var_os("CARGO_FEATURE_GDAL").is_none()
        || std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux")
    {
        return;
    }
    let Some(dependencies) = gdal_dependencies() else {
        return;
    };
    let paths: Vec<&str> = HEAVY_PROVIDERS
        .iter()
        .filter_map(|stem| {
            dependencies
                .iter()
                .find(|(soname, _)| matches_stem(soname, stem))
                .map(|(_, path)| path.as_str())
        })
        .collect();
    if paths.is_empty() {
        return;
    }
    println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
    for path in paths {
        println!("cargo:rustc-link-arg={path}");
    }
    println!("cargo:rustc-link-arg=-Wl,--as-needed");
}

/// Whether `soname` (`libgeos.so.3.11.1`) belongs to the library `stem` (`libgeos`).
fn matches_stem(soname: &str, stem: &str) -> bool {
    let name = soname.split(".so").next().unwrap_or(soname);
    name == stem
        || name
            .strip_prefix(stem)
            .is_some_and(|rest| rest.starts_with('-'))
}

/// libgdal's shared-library closure as `(soname, path)`, from `ldd`, on
/// the libgdal the C compiler's linker finds.
fn gdal_dependencies() -> Option<Vec<(String, String)>> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let libgdal = run(&cc, &["-print-file-name=libgdal.so"])?;
    let libgdal = libgdal.trim();
    if !libgdal.starts_with('/') {
        return None; // not found: the compiler echoes the bare name
    }
    let listing = run("ldd", &[libgdal])?;
    Some(
        listing
            .lines()
            .filter_map(|line| {
                let (soname, rest) = line.trim().split_once(" => ")?;
                let path = rest.split_whitespace().next()?;
                path.starts_with('/')
                    .then(|| (soname.to_string(), path.to_string()))
            })
            .collect(),
    )
}

fn run(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).ok())
        .flatten()
}
