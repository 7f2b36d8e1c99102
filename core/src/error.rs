//! The one error type of mapfilter: a one-line cause plus an optional hint.
//!
//! Every failure a user can provoke (bad path, bad kernel spec, unsupported
//! raster) becomes an [`Error`] whose `Display` is a single line; the CLI
//! prints it and exits non-zero. Nothing here panics on user input.

use std::fmt;

/// A failure with a one-line cause and, where one helps, a hint on what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    cause: String,
    hint: Option<String>,
    /// The process exit code the CLI gives this error (1 unless a command
    /// documents another, e.g. `batch run --no-wait`'s 75).
    exit_code: i32,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with only a cause.
    pub fn new(cause: impl Into<String>) -> Self {
        Error {
            cause: cause.into(),
            hint: None,
            exit_code: 1,
        }
    }

    /// The same error, ending the process with `code` instead of 1.
    pub fn exit_code(mut self, code: i32) -> Self {
        self.exit_code = code;
        self
    }

    /// The exit code the CLI gives this error.
    pub fn code(&self) -> i32 {
        self.exit_code
    }

    /// Adds (or replaces) the hint shown after the cause.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn cause(&self) -> &str {
        &self.cause
    }

    pub fn hint_text(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// Prefixes the cause with context, e.g. the file being read.
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.cause = format!("{context}: {}", self.cause);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the sources put in their messages.
        let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        write!(f, "{}", one_line(&self.cause))?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {})", one_line(hint))?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(e.to_string())
    }
}

impl From<tiles::GridError> for Error {
    fn from(e: tiles::GridError) -> Self {
        let hint = match e {
            tiles::GridError::ZeroTile => "give --tile a side of at least 1 pixel, e.g. --tile 512",
            tiles::GridError::InputSmallerThanWindow { .. } => {
                "use --border same, or a smaller kernel"
            }
        };
        Error::new(e.to_string()).hint(hint)
    }
}

/// Shorthand for `Err(Error::new(..).hint(..))`.
#[macro_export]
macro_rules! bail {
    ($cause:expr) => {
        return Err($crate::error::Error::new($cause))
    };
    ($cause:expr, hint = $hint:expr) => {
        return Err($crate::error::Error::new($cause).hint($hint))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line_with_hint() {
        let e = Error::new("bad\nthing").hint("try\tthis");
        assert_eq!(e.to_string(), "bad thing (hint: try this)");
        assert_eq!(Error::new("x").context("a.tif").to_string(), "a.tif: x");
    }
}
