//! Text outputs (JSON, CSV, Markdown, HTML): to standard output for `-`,
//! else through a [`TempFile`] committed onto the checked target.

use super::target::Destination;
use super::temp::{TempFile, write_error};
use crate::error::{Error, Result};
use std::io::Write;

/// Writes `text` to `dest`: a failed write leaves an existing file as it was.
pub fn write(dest: &Destination, text: &str) -> Result<()> {
    match dest {
        Destination::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| Error::new(format!("cannot write to standard output: {e}")))
        }
        Destination::File(target) => {
            let mut temp = TempFile::beside(target)?;
            temp.file().write_all(text.as_bytes()).map_err(|e| {
                write_error(
                    e,
                    &format!("cannot write {}", target.shown().display()),
                    &target.dir(),
                    Some(text.len() as u64),
                )
            })?;
            temp.commit(target)
        }
    }
}
