//! The output compression options shared by the commands that write
//! GeoTIFFs (`smooth`, `filter`, `gen`).

use crate::error::Result;
use crate::raster::{Compression, OutputCompression};

/// `--compress` and `--compress-level`.
#[derive(clap::Args, Clone, Debug)]
pub struct CompressArgs {
    /// GeoTIFF compression of the output.
    #[arg(long, value_enum, default_value_t = Compression::Deflate)]
    pub compress: Compression,
    /// Compression level: deflate 1-12 (default 5, which takes about half the CPU of GDAL's 6 for slightly larger files), zstd 1-22 (default GDAL's 9).
    #[arg(long, value_name = "LEVEL")]
    pub compress_level: Option<u8>,
}

impl CompressArgs {
    /// The compression asked for, refused where the codec has no such level.
    pub fn compression(&self) -> Result<OutputCompression> {
        OutputCompression::new(self.compress, self.compress_level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(compress: Compression, compress_level: Option<u8>) -> CompressArgs {
        CompressArgs {
            compress,
            compress_level,
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
