//! The output format and encoding options shared by the commands that
//! write rasters (`smooth`, `filter`, `gen`): `--of`, `--compress`,
//! `--compress-level`, `--co`.

use crate::error::Result;
use crate::gdal::class_raster::{Compression, OutputCompression, OutputFormat};
use crate::gdal::creation_options::parse_key_value;

/// `--of`, `--compress`, `--compress-level` and `--co`.
#[derive(clap::Args, Clone, Debug)]
pub struct CompressArgs {
    /// Output format: GTiff (tiled GeoTIFF) or COG (Cloud Optimized GeoTIFF with overviews:
    /// MODE resampling for class rasters, AVERAGE for `filter` output).
    #[arg(long = "of", value_enum, ignore_case = true, default_value_t = OutputFormat::GTiff, value_name = "FORMAT")]
    pub format: OutputFormat,
    /// GeoTIFF compression of the output.
    #[arg(long, value_enum, default_value_t = Compression::Deflate)]
    pub compress: Compression,
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
        OutputCompression::new(self.compress, self.compress_level)?
            .with_format(self.format, self.creation_options.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(compress: Compression, compress_level: Option<u8>) -> CompressArgs {
        CompressArgs {
            format: OutputFormat::GTiff,
            compress,
            compress_level,
            creation_options: Vec::new(),
        }
    }

    #[test]
    fn levels_are_checked_per_codec() {
        assert!(args(Compression::Deflate, None).compression().is_ok());
        assert!(args(Compression::Deflate, Some(12)).compression().is_ok());
        assert!(args(Compression::Zstd, Some(22)).compression().is_ok());
        for (codec, level) in [
            (Compression::Deflate, 0),
            (Compression::Deflate, 13),
            (Compression::Zstd, 23),
            (Compression::Lzw, 5),
            (Compression::None, 1),
        ] {
            let err = args(codec, Some(level))
                .compression()
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("--compress-level") && err.contains("hint"),
                "{err}"
            );
        }
    }
}
