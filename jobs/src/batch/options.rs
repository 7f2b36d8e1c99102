//! The smoothing options of a batch as `plan.json` keeps them: the typed
//! values `smooth` takes (the kernel with its unit, method and its options,
//! devices, policies, output encoding, the inputs' band and nodata, the
//! minimum mapping unit), written as the words a user types so that plans
//! of earlier versions still read, and checked when a plan loads.

use mapfilter_core::classes::ClassWeights;
use mapfilter_core::device::DeviceChoice;
use mapfilter_core::error::{Error, Result, Setting};
use mapfilter_core::kernel::{Kernel, KernelArg};
use mapfilter_core::method::naive::cl::Variant;
use mapfilter_core::method::policy::{Policies, Ties};
use mapfilter_core::method::select::{FastOptions, Method, MethodSpec};
use mapfilter_core::sieve::Connectivity;
use mapfilter_core::sieve::threshold::Threshold;
use mapfilter_gdal::class_raster::{BandChoice, Nodata};
use mapfilter_gdal::output_options::{Compression, OutputCompression, OutputFormat};
use serde::{Deserialize, Serialize};
use tiles::Border;

use super::mosaic::Group;
use crate::job::smooth::MethodChoice;
use mapfilter_core::bail;

/// The smoothing options of a batch, as the user gave them (a kernel in
/// metres converted to pixels with the mosaics' pixel width when planned).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SmoothOptions {
    /// The kernel: in a request as the user gave it (pixels or metres), in
    /// a plan in pixels (`gaussian:SIGMA`, `box:N`, `disc:R`, `file:PATH`).
    #[serde(with = "super::as_text")]
    pub kernel: KernelArg,
    pub size: Option<usize>,
    /// The kernel as given, when its length was in metres; absent in older plans.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "super::as_text::option"
    )]
    pub kernel_given: Option<KernelArg>,
    /// How that length became pixels (reports, `--explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_conversion: Option<String>,
    /// `CODE:WEIGHT,...`; none: `null`.
    #[serde(default, with = "super::as_text::or_default")]
    pub class_weights: ClassWeights,
    /// `same` or `valid`.
    #[serde(with = "super::as_text")]
    pub border: Border,
    pub fill_nodata: bool,
    /// The engine's tile side; `None` (or absent): the method's own default
    /// (1024 on a GPU, 512 on the host). Plans made before this was
    /// optional stored 512 whatever the device.
    #[serde(default)]
    pub tile: Option<usize>,
    pub method: Method,
    pub rank: Option<usize>,
    pub energy: Option<f64>,
    pub terms: Option<usize>,
    pub exact: bool,
    #[serde(default, with = "super::as_text::option")]
    pub device: Option<DeviceChoice>,
    #[serde(default, with = "super::as_text::option")]
    pub variant: Option<Variant>,
    /// none, deflate, lzw or zstd.
    #[serde(with = "super::as_text")]
    pub compress: Compression,
    pub compress_level: Option<u8>,
    /// The policies (docs/semantics.md#policies), each absent or `null` in
    /// older plans (their defaults).
    #[serde(default, with = "super::as_text::or_default")]
    pub ties: Ties,
    #[serde(
        default,
        serialize_with = "super::as_text::codes::serialize",
        deserialize_with = "super::as_text::codes::keep"
    )]
    pub keep: Vec<u16>,
    #[serde(
        default,
        serialize_with = "super::as_text::codes::serialize",
        deserialize_with = "super::as_text::codes::no_vote"
    )]
    pub no_vote: Vec<u16>,
    #[serde(default)]
    pub only_isolated: Option<u32>,
    #[serde(default = "passes::one", with = "passes")]
    pub iterations: usize,
    /// `GTiff` or `COG` (`--of`); absent in plans of GeoTIFF outputs.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "super::as_text::option"
    )]
    pub format: Option<OutputFormat>,
    /// The driver's creation options (`--co KEY=VALUE`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub creation_options: Vec<(String, String)>,
    /// `-b`: the band of class codes in every input (absent: band 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<usize>,
    /// `--src-nodata`: every input's nodata instead of its file's, a
    /// number or `none`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "super::as_text::option"
    )]
    pub src_nodata: Option<Nodata>,
    /// `--dst-nodata`: the outputs' nodata code, no class of a mosaic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_nodata: Option<u16>,
    /// The minimum mapping unit (`--mmu`), applied to each mosaic as one
    /// raster once its tasks are smoothed (see [`super::mmu`]); absent in
    /// plans without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmu: Option<MmuOption>,
}

/// `batch plan --mmu` and `--mmu-connectivity`, as given; each mosaic's
/// threshold in pixels is in [`MosaicPlan::mmu_pixels`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MmuOption {
    /// Pixels (`25`) or an area (`25ha`, `1acre`, `0.5km2`, `2500m2`).
    pub given: String,
    /// Pixels that touch: 4 or 8.
    pub connectivity: u8,
}

impl MmuOption {
    /// The threshold as given, parsed.
    pub fn threshold(&self) -> Result<Threshold> {
        self.given
            .parse()
            .map_err(|e: Error| e.context(Setting::Mmu))
    }

    pub fn connectivity(&self) -> Result<Connectivity> {
        Connectivity::from_number(self.connectivity).ok_or_else(|| {
            Error::usage(format!(
                "{} is neither 4 nor 8",
                Setting::MmuConnectivity.is(self.connectivity)
            ))
        })
    }

    /// The threshold in pixels of a mosaic `group` (an area converted with
    /// its pixel's ground area, as `smooth --mmu` of the merged mosaic
    /// converts it); an area of at most a pixel refused unless
    /// `allow_subpixel`.
    pub(super) fn pixels(&self, group: &Group, allow_subpixel: bool) -> Result<u64> {
        let area = || {
            mapfilter_gdal::sieve_area::pixel_area_of(
                group.geo_transform,
                (group.width, group.height),
                &group.first.projection,
            )
        };
        self.threshold()?
            .pixels(area, allow_subpixel)
            .map_err(|e| e.context(format!("{}: {}", Setting::Mmu, group.first.path.display())))
    }
}

impl SmoothOptions {
    /// The band of every input and its nodata (`-b`, `--src-nodata`).
    pub fn band_choice(&self) -> BandChoice {
        BandChoice {
            band: self.band,
            nodata: self.src_nodata.map(|n| n.0),
        }
    }
}

/// The typed values of [`SmoothOptions`].
pub struct Settings {
    pub kernel: Kernel,
    pub weights: ClassWeights,
    pub border: Border,
    pub compression: OutputCompression,
    pub method: MethodChoice,
    pub policies: Policies,
}

impl SmoothOptions {
    /// Parses and checks every option.
    pub fn settings(&self) -> Result<Settings> {
        let KernelArg::Pixels(spec) = &self.kernel else {
            bail!(
                internal,
                format!("the plan's kernel {} is not in pixels", self.kernel)
            );
        };
        let kernel = spec.clone().with_size(self.size)?.build()?;
        let compression = OutputCompression::new(self.compress, self.compress_level)?.with_format(
            self.format.unwrap_or_default(),
            self.creation_options.clone(),
        )?;
        let options = FastOptions {
            rank: self.rank,
            energy: self.energy,
            terms: self.terms,
            exact: self.exact,
        };
        let method = MethodChoice {
            spec: MethodSpec::new(self.method, self.variant, options)?,
            device: DeviceChoice::or_env(self.device.clone())?,
        };
        let policies = Policies {
            ties: self.ties,
            keep: self.keep.clone(),
            no_vote: self.no_vote.clone(),
            only_isolated: self.only_isolated,
            iterations: self.iterations,
        };
        policies.check()?;
        Ok(Settings {
            kernel,
            weights: self.class_weights.clone(),
            border: self.border,
            compression,
            method,
            policies,
        })
    }
}

/// `iterations`: one pass is `null`, as plans wrote it before the field
/// was typed.
mod passes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn one() -> usize {
        1
    }

    pub fn serialize<S: Serializer>(n: &usize, s: S) -> Result<S::Ok, S::Error> {
        match n {
            1 => s.serialize_none(),
            n => s.serialize_u64(*n as u64),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        Ok(Option::<usize>::deserialize(d)?.unwrap_or(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapfilter_core::kernel::KernelSpec;

    /// The options of a plan.json as plans wrote them when these fields
    /// were text: they read into typed values, and the plan writes them
    /// back as the same words.
    #[test]
    fn options_of_older_plans_read_typed_and_write_back_the_same() {
        let older = serde_json::json!({
            "kernel": "gaussian:2.5", "size": null, "class_weights": null,
            "border": "valid", "fill_nodata": false, "tile": null,
            "method": "naive", "rank": null, "energy": null, "terms": null,
            "exact": false, "device": "0,1", "variant": "image",
            "compress": "zstd", "compress_level": 9, "ties": null, "keep": null,
            "no_vote": null, "only_isolated": null, "iterations": null,
            "format": "COG"
        });
        let options: SmoothOptions = serde_json::from_value(older.clone()).unwrap();
        assert_eq!(options.border, Border::Valid);
        assert_eq!(
            options.device,
            Some(DeviceChoice::List(vec![
                DeviceChoice::Index(0),
                DeviceChoice::Index(1)
            ]))
        );
        assert_eq!(options.variant, Some(Variant::Image));
        assert_eq!(options.compress, Compression::Zstd);
        assert_eq!(options.format, Some(OutputFormat::Cog));
        assert_eq!(serde_json::to_value(&options).unwrap(), older);
        let settings = options.settings().unwrap();
        assert_eq!(settings.border, Border::Valid);
        assert_eq!(settings.policies, Policies::default());
        // A word no parser knows fails the load with the parser's message.
        let mut bad = older.clone();
        bad["compress"] = "brotli".into();
        let err = serde_json::from_value::<SmoothOptions>(bad).unwrap_err();
        assert!(err.to_string().contains("compression 'brotli'"), "{err}");
        // The kernel, its weights and the policies are typed too: set, they
        // read as what the options mean and write back as the same words.
        let mut set = older;
        for (key, value) in [
            ("kernel", "disc:3".into()),
            ("kernel_given", "disc:90m".into()),
            ("class_weights", "3:2,7:0.5".into()),
            ("ties", "undecided:250".into()),
            ("keep", "80,190".into()),
            ("no_vote", "5".into()),
            ("only_isolated", 3.into()),
            ("iterations", 2.into()),
            ("band", 2.into()),
            ("src_nodata", "none".into()),
            ("dst_nodata", 250.into()),
        ] {
            set[key] = value;
        }
        let options: SmoothOptions = serde_json::from_value(set.clone()).unwrap();
        assert_eq!(
            options.kernel,
            KernelArg::Pixels(KernelSpec::Disc { radius: 3 })
        );
        assert!(options.kernel_given.as_ref().unwrap().needs_pixel_width());
        assert_eq!(options.ties, Ties::Undecided(250));
        assert_eq!(
            (options.keep.as_slice(), options.no_vote.as_slice()),
            (&[80, 190][..], &[5][..])
        );
        assert_eq!(serde_json::to_value(&options).unwrap(), set);
        assert_eq!(
            options.band_choice(),
            BandChoice {
                band: Some(2),
                nodata: Some(None)
            }
        );
        let settings = options.settings().unwrap();
        assert_eq!(settings.kernel.size(), 7);
        assert_eq!(settings.policies.iterations, 2);
        assert!(!settings.weights.is_empty());
        for (key, value, said) in [
            ("keep", "80,x", "'x' is not a class code"),
            ("ties", "fair", "fair"),
            ("kernel", "cone:3", "unknown kernel kind 'cone'"),
            ("class_weights", "3", "class weight '3' has no ':'"),
        ] {
            let mut bad = set.clone();
            bad[key] = value.into();
            let err = serde_json::from_value::<SmoothOptions>(bad)
                .unwrap_err()
                .to_string();
            assert!(err.contains(said), "{key}: {err}");
        }
    }
}
