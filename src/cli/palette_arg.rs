//! `--palette FILE`, shared by the commands that draw class maps or name
//! classes in a report (compare, batch report, sweep, assess): the file is
//! read once, before any work, by [`crate::report::palette::PaletteFile`].

use crate::error::Result;
use crate::report::palette::PaletteFile;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
pub struct PaletteArg {
    /// Class colours and names for the report: a GDAL colour file (`value r g b [a] [name]` per line, .clr/.txt) or a QGIS paletted style (.qml). Default: the raster's colour table, else a palette that keeps 20+ classes apart (water blue).
    #[arg(long, value_name = "FILE")]
    pub palette: Option<PathBuf>,
}

impl PaletteArg {
    /// The file read, if one was given. (The GDAL-free build draws no
    /// classes: there `sweep --reference`, the one user, refuses first.)
    #[cfg_attr(not(feature = "gdal"), allow(dead_code))]
    pub fn read(&self) -> Result<Option<PaletteFile>> {
        self.palette.as_deref().map(PaletteFile::read).transpose()
    }
}
