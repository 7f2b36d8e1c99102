//! Build script of mapfilter-opencl: the table of embedded OpenCL sources
//! ([`embed_kernels`]).

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    embed_kernels();
}

/// Writes `$OUT_DIR/kernel_sources.rs` for `sources`: every
/// `kernels/*.cl` but the common header, as `(name, include_str!(path))`
/// in name order, so a new kernel file is embedded by putting it in
/// `kernels/` (cargo reruns this when the folder changes). A name is the
/// file stem.
fn embed_kernels() {
    println!("cargo:rerun-if-changed=kernels");
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let kernels = Path::new(&root).join("kernels");
    let common = kernels.join("common.cl");
    let mut files: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(&kernels)
        .expect("kernels/ is part of the crate")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            if path.extension()? != "cl" {
                return None;
            }
            Some((path.file_stem()?.to_str()?.to_string(), path))
        })
        .filter(|(_, path)| *path != common)
        .collect();
    files.sort();
    let mut table = String::from("&[\n");
    for (name, path) in &files {
        table += &format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        );
    }
    table += "]\n";
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("kernel_sources.rs"), table).expect("OUT_DIR is writable");
}
