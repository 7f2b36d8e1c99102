//! Whether an installed OpenCL driver could offer a GPU, told from the ICD
//! loader's vendor files without loading any driver.
//!
//! Listing OpenCL devices loads every installed driver; PoCL, the usual
//! driver of machines without a GPU, brings LLVM with it, tens of
//! milliseconds on every run. `--device auto` never picks a CPU device, so
//! where every installed driver is known to offer CPU devices only (PoCL
//! with no GPU backend installed) or cannot be loaded at all, `auto` goes
//! to the host without loading OpenCL. Anything unknown, or any of the
//! loaders' environment overrides, means "maybe": the devices are listed
//! as usual.

use std::path::{Path, PathBuf};

/// The directory both ICD loaders (Khronos and ocl-icd) read by default.
const VENDORS_DIR: &str = "/etc/OpenCL/vendors";

/// PoCL's device backends that drive GPUs or other accelerators (its
/// `pthread` and `basic` backends run on the CPU).
const POCL_ACCELERATOR_BACKENDS: [&str; 7] = [
    "cuda", "level0", "hsa", "vulkan", "remote", "almaif", "proxy",
];

/// False only when no installed OpenCL driver can offer a GPU.
pub fn gpu_possible() -> bool {
    // The loaders' environment overrides make them look elsewhere.
    if mapfilter_base::switches::environment().opencl_loader_overridden {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(VENDORS_DIR) else {
        // No vendor files: listing finds nothing, cheaply, and says so.
        return true;
    };
    let libraries: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "icd"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|text| text.trim().to_string())
        .collect();
    if libraries.is_empty() {
        return true;
    }
    libraries
        .iter()
        .any(|lib| driver_may_offer_gpu(lib, &library_dirs()))
}

/// Whether the driver library `lib` (as an ICD file names it) may offer a
/// GPU. PoCL is looked for in `dirs` to see its backends; any other driver
/// may, if it loads at all.
fn driver_may_offer_gpu(lib: &str, dirs: &[PathBuf]) -> bool {
    let path = Path::new(lib);
    let is_pocl = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("libpocl."));
    if !is_pocl {
        return loads(lib);
    }
    let found = if path.is_absolute() {
        Some(path.to_path_buf()).filter(|p| p.exists())
    } else {
        dirs.iter().map(|d| d.join(lib)).find(|p| p.exists())
    };
    // A PoCL not found here may still load from somewhere: maybe.
    found.is_none_or(|p| pocl_has_accelerator_backend(&p))
}

/// Whether the dynamic loader can load `lib` (the ICD loader would load it
/// the same way to list its devices).
fn loads(lib: &str) -> bool {
    let Ok(name) = std::ffi::CString::new(lib) else {
        return false;
    };
    // SAFETY: `name` is a valid C string; the handle is closed right away
    // and nothing from the library is used.
    unsafe {
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if handle.is_null() {
            return false;
        }
        libc::dlclose(handle);
    }
    true
}

/// PoCL loads its backends from `pocl/` beside its library.
fn pocl_has_accelerator_backend(libpocl: &Path) -> bool {
    let Some(dir) = libpocl.parent().map(|d| d.join("pocl")) else {
        return true;
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        // Backends built into the library, or somewhere unknown.
        return true;
    };
    entries.filter_map(|e| e.ok()).any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        POCL_ACCELERATOR_BACKENDS
            .iter()
            .any(|b| name.starts_with(&format!("libpocl-devices-{b}")))
    })
}

/// Where the dynamic loader looks for a bare library name:
/// `LD_LIBRARY_PATH`, the directories of `/etc/ld.so.conf.d` (which
/// `ld.so.cache` is built from; NVIDIA's and AMD's installers add theirs
/// there) and the default ones.
fn library_dirs() -> Vec<PathBuf> {
    let mut dirs = mapfilter_base::switches::environment().library_path.clone();
    if let Ok(entries) = std::fs::read_dir("/etc/ld.so.conf.d") {
        for text in entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "conf"))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        {
            dirs.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| l.starts_with('/'))
                    .map(PathBuf::from),
            );
        }
    }
    for d in ["/lib", "/usr/lib", "/lib64", "/usr/lib64"] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// Where NVIDIA's kernel driver lists the GPUs it drives, one folder each.
const NVIDIA_GPUS_DIR: &str = "/proc/driver/nvidia/gpus";

/// The NVIDIA GPUs a process of this one would see, as the values of
/// `CUDA_VISIBLE_DEVICES` that show each alone, told without starting the
/// driver (it takes 0.35 s per GPU to start on the 4-GPU node): the items
/// of `CUDA_VISIBLE_DEVICES` where it is set, else one index per GPU of the
/// kernel driver. Empty on machines without NVIDIA's kernel driver.
pub fn nvidia_gpus() -> Vec<String> {
    let count = std::fs::read_dir(NVIDIA_GPUS_DIR).map_or(0, |d| d.count());
    if count == 0 {
        // `CUDA_VISIBLE_DEVICES` alone shows nothing without the driver.
        return Vec::new();
    }
    visible_gpus(
        mapfilter_base::switches::environment()
            .cuda_visible_devices
            .as_deref(),
        count,
    )
}

/// [`nvidia_gpus`] from `CUDA_VISIBLE_DEVICES` (`visible`) and the number
/// of GPUs the kernel driver lists. The driver stops at the first item it
/// cannot use (e.g. `-1`), so the list does too.
fn visible_gpus(visible: Option<&str>, driver_gpus: usize) -> Vec<String> {
    match visible {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .take_while(|item| !item.is_empty() && !item.starts_with('-'))
            .map(String::from)
            .collect(),
        None => (0..driver_gpus).map(|i| i.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_gpus_follow_cuda_visible_devices_or_the_driver() {
        assert_eq!(visible_gpus(None, 4), ["0", "1", "2", "3"]);
        assert_eq!(visible_gpus(None, 0), Vec::<String>::new());
        assert_eq!(visible_gpus(Some("2,3"), 4), ["2", "3"]);
        assert_eq!(visible_gpus(Some(" 1 "), 4), ["1"]);
        assert_eq!(visible_gpus(Some("GPU-5f1c,1"), 4), ["GPU-5f1c", "1"]);
        // Nothing visible, or the list stops at an item the driver rejects.
        assert_eq!(visible_gpus(Some(""), 4), Vec::<String>::new());
        assert_eq!(visible_gpus(Some("-1"), 4), Vec::<String>::new());
        assert_eq!(visible_gpus(Some("0,-1,2"), 4), ["0"]);
    }

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }

    #[test]
    fn pocl_with_cpu_backends_only_offers_no_gpu() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libpocl.so.2");
        touch(&lib);
        touch(&dir.path().join("pocl/libpocl-devices-pthread.so"));
        touch(&dir.path().join("pocl/libpocl-devices-basic.so"));
        let dirs = [dir.path().to_path_buf()];
        assert!(!driver_may_offer_gpu("libpocl.so.2", &dirs));
        // An absolute path in the ICD file is taken as it is.
        assert!(!driver_may_offer_gpu(lib.to_str().unwrap(), &[]));
        // A CUDA backend beside it may drive a GPU.
        touch(&dir.path().join("pocl/libpocl-devices-cuda.so"));
        assert!(driver_may_offer_gpu("libpocl.so.2", &dirs));
    }

    #[test]
    fn any_other_driver_that_loads_may_offer_a_gpu() {
        // Any library that loads stands for a driver here.
        assert!(driver_may_offer_gpu("libc.so.6", &[]));
        let dir = tempfile::tempdir().unwrap();
        let dirs = [dir.path().to_path_buf()];
        // PoCL not found, or without its backend directory: maybe.
        assert!(driver_may_offer_gpu("libpocl.so.2", &dirs));
        touch(&dir.path().join("libpocl.so.2"));
        assert!(driver_may_offer_gpu("libpocl.so.2", &dirs));
    }

    #[test]
    fn a_driver_that_does_not_load_offers_nothing() {
        assert!(!driver_may_offer_gpu(
            "libmapfilter-no-such-driver.so.1",
            &[]
        ));
        assert!(!driver_may_offer_gpu("/nowhere/libamdocl64.so", &[]));
    }

    #[test]
    fn the_search_covers_the_multiarch_dirs() {
        // Debian lists them in /etc/ld.so.conf.d; elsewhere the defaults do.
        let dirs = library_dirs();
        assert!(dirs.iter().any(|d| d.ends_with("lib")), "{dirs:?}");
    }
}
