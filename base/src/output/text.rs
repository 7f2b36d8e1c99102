//! Text outputs (JSON, CSV, Markdown, HTML): to standard output for `-`,
//! else through a [`TempFile`] committed onto the checked target; files made
//! in memory (a GeoPackage of sample points) take the same path.

use super::target::{Destination, Target};
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
                .map_err(|e| Error::io(format!("cannot write to standard output: {e}")))
        }
        Destination::File(target) => write_file(target, text.as_bytes()),
    }
}

/// Writes `bytes` (a text, or a file made in memory such as a GeoPackage)
/// to `target` through a temp file: a failed write leaves an existing file
/// as it was.
pub fn write_file(target: &Target, bytes: &[u8]) -> Result<()> {
    let mut temp = TempFile::beside(target)?;
    temp.file().write_all(bytes).map_err(|e| {
        write_error(
            e,
            &format!("cannot write {}", target.shown().display()),
            &target.dir(),
            Some(bytes.len() as u64),
        )
    })?;
    temp.commit(target)
}

/// `text` with its control characters (line breaks, tabs, ESC, DEL, C1)
/// shown escaped (`\n`, `\u{1b}`): for text from data (category names,
/// paths) printed on a terminal or into a line-based report, where a
/// control character would move the cursor, recolour the terminal or
/// start a new line.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(super::printable("forest"), "forest");
        assert_eq!(
            super::printable("a\x1b]0;pwned\x07\tb\u{9b}"),
            "a\\u{1b}]0;pwned\\u{7}\\tb\\u{9b}"
        );
    }
}
