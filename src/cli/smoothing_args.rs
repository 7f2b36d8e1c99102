//! The smoothing options `smooth` and `batch plan` share, declared once:
//! the kernel (with units), class weights, border, nodata filling, tile,
//! output encoding, device and variant, the method and its options, the
//! policies and the minimum mapping unit. Both commands flatten
//! [`SmoothingArgs`] and turn it into typed values through the same
//! methods, so an option is spelt, documented and checked the same way in
//! both; `batch plan` refuses the one it cannot honour (`--confidence`)
//! with the reason. The inputs' band and nodata options are
//! [`SmoothInputArgs`], which both flatten too.

use super::compress_args::CompressArgs;
use super::fast_args::FastArgs;
use super::input_args::SmoothInputArgs;
use super::policy_args::PolicyArgs;
use super::sieve::MmuArgs;
use crate::batch::plan::{MmuOption, SmoothOptions};
use crate::classes::ClassWeights;
use crate::device::DeviceChoice;
use crate::error::Result;
use crate::gdal::output_options::OutputFormat;
use crate::job::smooth::MethodChoice;
use crate::method::naive::cl::Variant;
use crate::method::policy::Policies;
use crate::sieve::Connectivity;
use clap::{Args, ValueEnum};
use tiles::Border;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BorderArg {
    Same,
    Valid,
}

impl From<BorderArg> for Border {
    fn from(b: BorderArg) -> Self {
        match b {
            BorderArg::Same => Border::Same,
            BorderArg::Valid => Border::Valid,
        }
    }
}

#[derive(Args, Debug)]
pub struct SmoothingArgs {
    /// Kernel: gaussian:SIGMA, box:N, disc:RADIUS, in pixels unless a unit is given:
    /// metres or kilometres (gaussian:250m, box:90m, disc:1km) are converted with the
    /// input's pixel width (geographic CRS: along the parallel at its centre latitude;
    /// --explain says how; batch plan: once, with the mosaics' pixel width, which must
    /// agree, and plan.json keeps both); or file:PATH (square matrix, odd size).
    #[arg(long, short)]
    pub kernel: String,
    /// Side of a gaussian kernel in pixels (odd); default 2·floor(3σ)+1 (the thesis' 6σ+1 rounded down to odd).
    #[arg(long = "kernel-size", alias = "size", value_name = "PIXELS")]
    pub kernel_size: Option<usize>,
    /// Round a kernel that comes out 1x1 (a length under a pixel) up to the
    /// smallest that smooths (σ = 1 px, a 3x3 box, a disc of radius 1), and an --mmu area of at most a pixel up
    /// to 2 pixels, with a warning, instead of refusing them.
    #[arg(long)]
    pub allow_subpixel: bool,
    /// Class weights ("priorities") as CODE:WEIGHT[,CODE:WEIGHT...]; others weigh 1.
    #[arg(long)]
    pub class_weights: Option<String>,
    /// Border handling: `same` keeps the size, `valid` crops N/2 pixels on every side
    /// (batch plan: of the whole mosaic).
    #[arg(long, value_enum, default_value_t = BorderArg::Same)]
    pub border: BorderArg,
    /// Smooth nodata pixels too (fills holes from their neighbours).
    #[arg(long)]
    pub fill_nodata: bool,
    /// Tile side in pixels (default: 1024 for methods on a GPU, else 512).
    #[arg(long)]
    pub tile: Option<usize>,
    #[command(flatten)]
    pub compression: CompressArgs,
    /// Where to run: auto, host, cpu, gpu, an index from `mapfilter devices`,
    /// all (every GPU, else every OpenCL device) or a list such as 0,1: several devices share
    /// the tiles, each pulling the next when it has room; in a batch, `all` runs a worker
    /// process per GPU, each with its own tasks
    /// (default: $MAPFILTER_DEVICE, else auto).
    #[arg(long)]
    pub device: Option<DeviceChoice>,
    /// Device variant of the method (naive: fast, buffer, image, local).
    #[arg(long)]
    pub variant: Option<Variant>,
    #[command(flatten)]
    pub fast: FastArgs,
    #[command(flatten)]
    pub policies: PolicyArgs,
    #[command(flatten)]
    pub mmu: MmuArgs,
}

impl SmoothingArgs {
    /// `--class-weights`, parsed.
    pub fn weights(&self) -> Result<ClassWeights> {
        self.class_weights.as_deref().unwrap_or("").parse()
    }

    /// The method with its options and variant, and the devices
    /// (`--device`, else `$MAPFILTER_DEVICE`, else auto).
    pub fn choice(&self) -> Result<MethodChoice> {
        Ok(MethodChoice {
            spec: self.fast.spec(self.variant)?,
            device: DeviceChoice::or_env(self.device.clone())?,
        })
    }

    /// The policies, refused where the method cannot honour them.
    pub fn policies(&self) -> Result<Policies> {
        let policies = self.policies.policies()?;
        // An exact method is; the others only with --exact.
        let exact = self.fast.method.is_exact() || self.fast.exact;
        crate::method::policy::check_method(&policies, exact, self.fast.method.name())?;
        Ok(policies)
    }

    /// What `batch plan` stores in plan.json, with the inputs' band and
    /// nodata options `input`, every option checked first (nothing is
    /// written before); `--confidence` refused, with the reason.
    pub fn plan_options(&self, input: &SmoothInputArgs) -> Result<SmoothOptions> {
        if self.policies.confidence.is_some() {
            crate::bail!(
                usage,
                "batch plan does not take --confidence",
                hint = "smooth each raster with its confidence raster: mapfilter smooth IN OUT --confidence CONF"
            );
        }
        // The devices are not resolved here: a run reads `$MAPFILTER_DEVICE`
        // where it runs when the plan names none.
        self.compression.compression()?;
        self.fast.spec(self.variant)?;
        let policies = self.policies()?;
        Ok(SmoothOptions {
            kernel: self.kernel.parse()?,
            size: self.kernel_size,
            kernel_given: None,
            kernel_conversion: None,
            class_weights: self.weights()?,
            border: self.border.into(),
            fill_nodata: self.fill_nodata,
            tile: self.tile,
            method: self.fast.method,
            rank: self.fast.rank,
            energy: self.fast.energy,
            terms: self.fast.terms,
            exact: self.fast.exact,
            device: self.device.clone(),
            variant: self.variant,
            compress: self.compression.compress.into(),
            compress_level: self.compression.compress_level,
            ties: policies.ties,
            keep: policies.keep,
            no_vote: policies.no_vote,
            only_isolated: policies.only_isolated,
            iterations: policies.iterations,
            format: (self.compression.format == super::compress_args::FormatArg::Cog)
                .then_some(OutputFormat::Cog),
            creation_options: self.compression.creation_options.clone(),
            band: input.band.band,
            src_nodata: input.band.src_nodata,
            dst_nodata: input.dst_nodata,
            mmu: self.mmu.mmu.clone().map(|given| MmuOption {
                given,
                connectivity: match self.mmu.mmu_connectivity {
                    Connectivity::Four => 4,
                    Connectivity::Eight => 8,
                },
            }),
        })
    }
}
