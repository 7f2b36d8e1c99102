//! Input options spelled as in GDAL's tools: `-b BAND` (which band holds
//! the classes), `--src-nodata` (the input's nodata instead of the file's)
//! and, for `smooth` and `batch plan`, `--dst-nodata` (the output's).

use crate::gdal::class_raster::BandChoice;
pub use crate::gdal::class_raster::Nodata;
use clap::Args;

fn nodata(text: &str) -> Result<Nodata, String> {
    text.parse()
}

#[derive(Args, Debug, Clone, Copy, Default)]
pub struct BandArgs {
    /// Band of class codes (1-based, as GDAL's -b); needed for a raster of several bands.
    #[arg(short = 'b', long = "band", value_name = "BAND")]
    pub band: Option<usize>,
    /// The input's nodata value instead of the file's: a number, or `none` (every value is a class).
    #[arg(long, value_name = "VALUE|none", value_parser = nodata)]
    pub src_nodata: Option<Nodata>,
}

impl BandArgs {
    pub fn choice(&self) -> BandChoice {
        BandChoice {
            band: self.band,
            nodata: self.src_nodata.map(|n| n.0),
        }
    }
}

/// `smooth`'s input options: the band, and the nodata codes in and out.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct SmoothInputArgs {
    #[command(flatten)]
    pub band: BandArgs,
    /// The output's nodata code instead of the input's (refused where it is a class of the input).
    #[arg(long, value_name = "CODE")]
    pub dst_nodata: Option<u16>,
}
