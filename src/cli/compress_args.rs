//! The output format and encoding options shared by the commands that
//! write rasters (`smooth`, `filter`, `gen`): `--of`, `--compress`,
//! `--compress-level`, `--co`, and clap's side of the library's
//! [`Compression`] and [`OutputFormat`], so the library needs no clap.

use crate::error::Result;
use crate::gdal::creation_options::parse_key_value;
use crate::gdal::output_options::{Compression, OutputCompression, OutputFormat};

/// `--of`, `--compress`, `--compress-level` and `--co`.
#[derive(clap::Args, Clone, Debug)]
pub struct CompressArgs {
    /// Output format: GTiff (tiled GeoTIFF) or COG (Cloud Optimized GeoTIFF with overviews:
    /// MODE resampling for class rasters, AVERAGE for `filter` output).
    #[arg(long = "of", value_enum, ignore_case = true, default_value_t = FormatArg::GTiff, value_name = "FORMAT")]
    pub format: FormatArg,
    /// GeoTIFF compression of the output.
    #[arg(long, value_enum, default_value_t = CompressArg::Deflate)]
    pub compress: CompressArg,
    /// Compression level: deflate 1-12 (default 5, which takes about half the CPU of GDAL's 6 for slightly larger files), zstd 1-22 (default GDAL's 9).
    #[arg(long, value_name = "LEVEL")]
    pub compress_level: Option<u8>,
    /// GDAL creation option of the output format, repeatable (`--co BLOCKXSIZE=512 --co PREDICTOR=2`);
    /// checked against the driver's list (`gdalinfo --format GTiff|COG`), applied after --compress so it wins.
    #[arg(long = "co", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub creation_options: Vec<(String, String)>,
}

impl CompressArgs {
    /// The encoding asked for, refused where the codec has no such level
    /// or the format's driver does not take a creation option.
    pub fn compression(&self) -> Result<OutputCompression> {
        OutputCompression::new(self.compress.into(), self.compress_level)?
            .with_format(self.format.into(), self.creation_options.clone())
    }
}

/// `--compress`: GeoTIFF compression codecs of outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CompressArg {
    None,
    #[default]
    Deflate,
    Lzw,
    Zstd,
}

impl From<CompressArg> for Compression {
    fn from(arg: CompressArg) -> Self {
        match arg {
            CompressArg::None => Compression::None,
            CompressArg::Deflate => Compression::Deflate,
            CompressArg::Lzw => Compression::Lzw,
            CompressArg::Zstd => Compression::Zstd,
        }
    }
}

/// `--of`: output file formats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// A tiled GeoTIFF.
    #[default]
    #[value(name = "GTiff")]
    GTiff,
    /// A Cloud Optimized GeoTIFF with overviews, made by GDAL's COG driver.
    #[value(name = "COG")]
    Cog,
}

impl From<FormatArg> for OutputFormat {
    fn from(arg: FormatArg) -> Self {
        match arg {
            FormatArg::GTiff => OutputFormat::GTiff,
            FormatArg::Cog => OutputFormat::Cog,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    fn args(compress: CompressArg, compress_level: Option<u8>) -> CompressArgs {
        CompressArgs {
            format: FormatArg::GTiff,
            compress,
            compress_level,
            creation_options: Vec::new(),
        }
    }

    #[test]
    fn levels_are_checked_per_codec() {
        assert!(args(CompressArg::Deflate, None).compression().is_ok());
        assert!(args(CompressArg::Deflate, Some(12)).compression().is_ok());
        assert!(args(CompressArg::Zstd, Some(22)).compression().is_ok());
        for (codec, level) in [
            (CompressArg::Deflate, 0),
            (CompressArg::Deflate, 13),
            (CompressArg::Zstd, 23),
            (CompressArg::Lzw, 5),
            (CompressArg::None, 1),
        ] {
            let err = args(codec, Some(level))
                .compression()
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&crate::error::Setting::CompressLevel.to_string())
                    && err.contains("hint"),
                "{err}"
            );
        }
    }

    /// The names clap accepts are the names the library parses and prints.
    #[test]
    fn compress_names_match_the_library() {
        for arg in CompressArg::value_variants() {
            let name = arg.to_possible_value().unwrap().get_name().to_string();
            let codec = Compression::from(*arg);
            assert_eq!(codec.name(), name);
            assert_eq!(name.parse::<Compression>().unwrap(), codec);
        }
        assert_eq!(CompressArg::value_variants().len(), Compression::ALL.len());
    }

    #[test]
    fn format_names_are_the_drivers() {
        for arg in FormatArg::value_variants() {
            let name = arg.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(OutputFormat::from(*arg).driver(), name);
        }
    }
}
