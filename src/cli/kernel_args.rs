//! `smooth --kernel` and `--kernel-size`: a kernel in pixels or in metres,
//! built with the input's pixel width, and how reports describe it.

use crate::error::Result;
use crate::kernel::{Kernel, KernelArg, KernelSpec};
use std::path::{Path, PathBuf};

/// The kernel of a run, as given and as built.
pub struct BuiltKernel {
    pub kernel: Kernel,
    /// How a length in metres became pixels (`--explain`, reports).
    pub conversion: Option<String>,
    /// The spec as the user gave it.
    pub given: String,
    /// The kernel file read (`file:PATH`), an input of the run.
    pub file: Option<PathBuf>,
}

/// Builds `--kernel TEXT` (and `--kernel-size`) for the raster at `input`;
/// the input is opened only for a length in metres. A kernel that comes
/// out 1x1 is refused, or rounded up with a warning with `allow_subpixel`
/// ([`KernelArg::resolve`]).
pub fn build(
    text: &str,
    size: Option<usize>,
    input: &Path,
    allow_subpixel: bool,
) -> Result<BuiltKernel> {
    let arg: KernelArg = text.parse()?;
    let file = match &arg {
        KernelArg::Pixels(KernelSpec::File { path }) => Some(path.clone()),
        _ => None,
    };
    let resolved = arg.resolve(
        size,
        || {
            let ds = crate::gdal::class_raster::open(input)?;
            crate::gdal::class_raster::pixel_width(&ds).map_err(|e| e.context(input.display()))
        },
        allow_subpixel,
    )?;
    if let Some(w) = &resolved.warning {
        log::warn!("{w}");
    }
    let conversion = resolved.conversion;
    Ok(BuiltKernel {
        kernel: resolved.spec.build()?,
        conversion,
        given: text.to_string(),
        file,
    })
}

impl BuiltKernel {
    /// The report's rows: the kernel as given, σ with its unit, the side.
    pub fn settings(&self) -> Vec<(String, String)> {
        let mut rows = vec![("kernel".to_string(), self.given.clone())];
        if let Some(sigma) = self.kernel.sigma() {
            rows.push(("σ (pixels)".into(), format!("{sigma:.4} px")));
        }
        if let Some(c) = &self.conversion {
            rows.push(("kernel in metres".into(), c.clone()));
        }
        let n = self.kernel.size();
        rows.push(("kernel side".into(), format!("{n} px ({n}x{n})")));
        rows
    }
}
