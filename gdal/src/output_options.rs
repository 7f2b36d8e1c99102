//! How outputs are encoded: the GeoTIFF compression codecs, the output
//! formats (GeoTIFF or COG), the resampling of a COG's overviews, and
//! [`OutputCompression`], which turns them into GDAL creation options.
//! Plain data: the CLI maps its flags onto these types and
//! [`super::output_raster`] writes with them.

use mapfilter_core::bail;
use mapfilter_core::error::{Error, Result, Setting};

/// GeoTIFF compression codecs of outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    None,
    #[default]
    Deflate,
    Lzw,
    Zstd,
}

impl Compression {
    pub const ALL: [Compression; 4] = [
        Compression::None,
        Compression::Deflate,
        Compression::Lzw,
        Compression::Zstd,
    ];

    /// The codec's name as `--compress` and batch plans spell it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Deflate => "deflate",
            Compression::Lzw => "lzw",
            Compression::Zstd => "zstd",
        }
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A codec by name, in any case (batch plans give it as text).
impl std::str::FromStr for Compression {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::usage(format!("compression '{s}' is not known"))
                    .hint("use none, deflate, lzw or zstd")
            })
    }
}

/// DEFLATE level of outputs unless one is given. GDAL's default is 6; at 5
/// libdeflate stays with its faster parser and compresses in much less
/// CPU time for slightly larger files on smoothed land cover
/// (docs/decisions/0002-deflate-level-5.md).
pub const DEFAULT_DEFLATE_LEVEL: u8 = 5;

/// Output file formats (`--of`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// A tiled GeoTIFF.
    #[default]
    GTiff,
    /// A Cloud Optimized GeoTIFF with overviews, made by GDAL's COG driver.
    Cog,
}

impl OutputFormat {
    pub const ALL: [OutputFormat; 2] = [OutputFormat::GTiff, OutputFormat::Cog];

    /// GDAL's name of the driver that writes it.
    pub fn driver(self) -> &'static str {
        match self {
            OutputFormat::GTiff => "GTiff",
            OutputFormat::Cog => "COG",
        }
    }
}

impl std::fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.driver())
    }
}

/// A format by its driver's name, in any case (`--of`, batch plans).
impl std::str::FromStr for OutputFormat {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        OutputFormat::ALL
            .into_iter()
            .find(|f| f.driver().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::usage(format!("output format '{s}' is neither GTiff nor COG")).hint(format!(
                    "use {} or {}",
                    Setting::Of.is("GTiff"),
                    Setting::Of.is("COG")
                ))
            })
    }
}

/// How the overviews of a COG are computed: the most frequent value for
/// class codes (an average of codes is no class), the mean for continuous
/// data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OverviewResampling {
    #[default]
    Mode,
    Average,
}

impl OverviewResampling {
    pub(super) fn gdal_name(self) -> &'static str {
        match self {
            OverviewResampling::Mode => "MODE",
            OverviewResampling::Average => "AVERAGE",
        }
    }
}

/// How an output is encoded: its format, the codec and, for DEFLATE
/// (1–12) and ZSTD (1–22), its level (`None`: [`DEFAULT_DEFLATE_LEVEL`],
/// GDAL's default for ZSTD), the user's own creation options (`--co`,
/// applied last so they win) and, for a COG, how its overviews are
/// resampled (MODE unless [`OutputCompression::continuous`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputCompression {
    codec: Compression,
    level: Option<u8>,
    pub(super) format: OutputFormat,
    pub(super) extra: Vec<(String, String)>,
    pub(super) overviews: OverviewResampling,
}

impl OutputCompression {
    /// `codec` at `level`, refused where the codec has no such level.
    pub fn new(codec: Compression, level: Option<u8>) -> Result<Self> {
        let most = match codec {
            Compression::Deflate => 12,
            Compression::Zstd => 22,
            Compression::None | Compression::Lzw => 0,
        };
        match level {
            Some(l) if most == 0 => bail!(
                usage,
                format!(
                    "{}: {} compression has no levels",
                    Setting::CompressLevel.is(l),
                    codec.name()
                ),
                hint = format!(
                    "levels are for {} and zstd",
                    Setting::Compress.is("deflate")
                )
            ),
            Some(l) if !(1..=most).contains(&l) => bail!(
                usage,
                format!(
                    "{}: {} takes levels 1 to {most}",
                    Setting::CompressLevel.is(l),
                    codec.name()
                ),
                hint = "higher levels make smaller files, more slowly"
            ),
            _ => Ok(OutputCompression {
                codec,
                level,
                ..Default::default()
            }),
        }
    }

    /// The same in `format` with the user's creation options `extra`,
    /// refused unless the format's driver lists every key (and, where it
    /// lists the values a key takes, the value).
    pub fn with_format(self, format: OutputFormat, extra: Vec<(String, String)>) -> Result<Self> {
        crate::creation_options::check(format.driver(), &extra)?;
        Ok(OutputCompression {
            format,
            extra,
            ..self
        })
    }

    /// The same for continuous data: COG overviews are averaged.
    pub fn continuous(self) -> Self {
        OutputCompression {
            overviews: OverviewResampling::Average,
            ..self
        }
    }

    pub fn format(&self) -> OutputFormat {
        self.format
    }

    /// COG driver options: the codec, its level, the overviews' resampling,
    /// then the user's.
    pub(super) fn cog_options(&self) -> Vec<(String, String)> {
        let mut options = vec![
            ("BIGTIFF".to_string(), "IF_SAFER".to_string()),
            ("NUM_THREADS".to_string(), "ALL_CPUS".to_string()),
            (
                "OVERVIEW_RESAMPLING".to_string(),
                self.overviews.gdal_name().to_string(),
            ),
        ];
        let codec = match self.codec {
            Compression::None => "NONE",
            Compression::Deflate => "DEFLATE",
            Compression::Lzw => "LZW",
            Compression::Zstd => "ZSTD",
        };
        options.push(("COMPRESS".to_string(), codec.to_string()));
        match (self.codec, self.level) {
            (Compression::Deflate, level) => options.push((
                "LEVEL".to_string(),
                level.unwrap_or(DEFAULT_DEFLATE_LEVEL).to_string(),
            )),
            (Compression::Zstd, Some(level)) => {
                options.push(("LEVEL".to_string(), level.to_string()))
            }
            _ => {}
        }
        options.extend(self.extra.iter().cloned());
        options
    }

    /// GTiff creation options for it.
    pub(super) fn creation_options(&self) -> Vec<(&'static str, String)> {
        let codec = match self.codec {
            Compression::None => return Vec::new(),
            Compression::Deflate => "DEFLATE",
            Compression::Lzw => "LZW",
            Compression::Zstd => "ZSTD",
        };
        let mut options = vec![
            ("COMPRESS", codec.to_string()),
            ("NUM_THREADS", "ALL_CPUS".to_string()),
        ];
        match (self.codec, self.level) {
            (Compression::Deflate, level) => {
                options.push(("ZLEVEL", level.unwrap_or(DEFAULT_DEFLATE_LEVEL).to_string()))
            }
            (Compression::Zstd, Some(level)) => options.push(("ZSTD_LEVEL", level.to_string())),
            _ => {}
        }
        options
    }
}
