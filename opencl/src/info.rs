//! What OpenCL devices this machine has: enumeration in a stable order (the
//! `INDEX` of `--device`) and the figures `mapfilter devices` prints.

use super::cl_error;
use mapfilter_base::error::{Error, Result, Setting};
use opencl3::device::{
    CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU,
    Device as ClDevice,
};
use opencl3::platform::get_platforms;
use std::sync::Mutex;

/// The broad kind of a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    Gpu,
    Cpu,
    Accelerator,
    Other,
}

impl std::fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceKind::Gpu => "gpu",
            DeviceKind::Cpu => "cpu",
            DeviceKind::Accelerator => "accelerator",
            DeviceKind::Other => "other",
        })
    }
}

/// One OpenCL device as enumerated: where it is and what it offers.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// Position in [`list_devices`] (platforms in order, their devices in order).
    pub index: usize,
    pub platform: String,
    pub name: String,
    pub kind: DeviceKind,
    pub compute_units: u32,
    /// Global memory in bytes.
    pub global_mem: u64,
    /// Local (work-group shared) memory in bytes.
    pub local_mem: u64,
    /// Largest single allocation in bytes.
    pub max_alloc: u64,
    pub max_work_group: usize,
    pub image_support: bool,
    /// Device version string, e.g. `OpenCL 3.0 CUDA`.
    pub version: String,
    /// The driver's version string (keys the tune database).
    pub driver: String,
    /// Highest OpenCL C version, e.g. `OpenCL C 1.2`.
    pub c_version: String,
    pub(super) raw: ClDevice,
}

impl DeviceInfo {
    fn query(index: usize, platform: &str, raw: ClDevice) -> Result<Self> {
        let e = cl_error("querying an OpenCL device");
        let ty = raw.dev_type().map_err(&e)?;
        let kind = if ty & CL_DEVICE_TYPE_GPU != 0 {
            DeviceKind::Gpu
        } else if ty & CL_DEVICE_TYPE_CPU != 0 {
            DeviceKind::Cpu
        } else if ty & CL_DEVICE_TYPE_ACCELERATOR != 0 {
            DeviceKind::Accelerator
        } else {
            DeviceKind::Other
        };
        Ok(DeviceInfo {
            index,
            platform: platform.to_string(),
            name: raw.name().map_err(&e)?.trim().to_string(),
            kind,
            compute_units: raw.max_compute_units().map_err(&e)?,
            global_mem: raw.global_mem_size().map_err(&e)?,
            local_mem: raw.local_mem_size().map_err(&e)?,
            max_alloc: raw.max_mem_alloc_size().map_err(&e)?,
            max_work_group: raw.max_work_group_size().map_err(&e)?,
            image_support: raw.image_support().unwrap_or(false),
            version: raw.version().map_err(&e)?.trim().to_string(),
            driver: raw.driver_version().unwrap_or_default().trim().to_string(),
            c_version: raw
                .opencl_c_version()
                .unwrap_or_default()
                .trim()
                .to_string(),
            raw,
        })
    }
}

/// Whether the OpenCL loader (libOpenCL) could be loaded at all.
pub fn opencl_available() -> bool {
    let _guard = ENUMERATING.lock().unwrap_or_else(|p| p.into_inner());
    get_platforms().is_ok()
}

/// Serialises enumeration (the ICD loader's first initialisation is not
/// thread-safe everywhere: ocl-icd crashes when two threads race into it)
/// and holds the devices once listed.
static ENUMERATING: Mutex<Option<Vec<DeviceInfo>>> = Mutex::new(None);

/// Every device of every platform, in a stable order.
///
/// Errors when OpenCL is missing altogether (no loader, no platform); a
/// machine with OpenCL but without devices gives an empty list.
///
/// The list is made once per process (a run asks for it again for every
/// device it opens, and the devices do not change under it); a failure is
/// not kept, so a later call tries again.
pub fn list_devices() -> Result<Vec<DeviceInfo>> {
    let mut guard = ENUMERATING.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(listed) = &*guard {
        return Ok(listed.clone());
    }
    let listed = enumerate()?;
    *guard = Some(listed.clone());
    Ok(listed)
}

/// [`list_devices`] without the list kept: asks the loader and drivers.
fn enumerate() -> Result<Vec<DeviceInfo>> {
    let start = std::time::Instant::now();
    let platforms = get_platforms().map_err(|e| {
        Error::device(format!("OpenCL is not available ({e})")).hint(format!(
            "install an OpenCL driver (e.g. apt-get install pocl-opencl-icd) or use {}",
            Setting::Device.is("host")
        ))
    })?;
    let mut out = Vec::new();
    for p in platforms {
        let name = p.name().unwrap_or_else(|_| "?".into());
        // A platform without devices reports an error here; it simply has none.
        let Ok(ids) = p.get_devices(CL_DEVICE_TYPE_ALL) else {
            continue;
        };
        for id in ids {
            out.push(DeviceInfo::query(out.len(), &name, ClDevice::new(id))?);
        }
    }
    // What OpenCL's start-up costs before any context (`-vv`): loading
    // the drivers and their first initialisation are most of it.
    log::debug!(
        "OpenCL: {} device(s) listed in {:.1} ms",
        out.len(),
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(out)
}

/// Bytes as a short human figure (`7.8 GiB`, `64 KiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 || u == 0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The device table of `mapfilter devices`, one line per device.
pub fn device_table(devices: &[DeviceInfo]) -> String {
    let mut s = format!(
        "{:>3}  {:<5} {:<36} {:>4} {:>10} {:>9} {:>6}  {:<14} {}\n",
        "idx", "type", "name", "CUs", "global", "local", "image", "version", "platform"
    );
    for d in devices {
        let version: String = d
            .version
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        s += &format!(
            "{:>3}  {:<5} {:<36} {:>4} {:>10} {:>9} {:>6}  {:<14} {}\n",
            d.index,
            d.kind.to_string(),
            d.name.chars().take(36).collect::<String>(),
            d.compute_units,
            human_bytes(d.global_mem),
            human_bytes(d.local_mem),
            if d.image_support { "yes" } else { "no" },
            version,
            d.platform
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(64 * 1024), "64 KiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
