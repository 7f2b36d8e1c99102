//! The one error type of mapfilter: a kind, a one-line cause and an optional
//! hint.
//!
//! Every failure a user can provoke (bad path, bad kernel spec, unsupported
//! raster) becomes an [`Error`] whose `Display` is a single line; the CLI
//! prints it and exits non-zero. Nothing here panics on user input.
//!
//! The [`Kind`] says what failed (a setting, the data, a limit, a device, a
//! read or write, ...) so that each front end can answer in its own terms:
//! the CLI keeps one line and an exit code, Python raises the matching
//! exception class. Messages name the settings they refer to through
//! [`Setting`], never as a CLI flag: each front end renders them in its own
//! spelling (`--tile`, `tile=`, `tile`; see [`setting`]).

use std::fmt;

pub mod setting;

pub use setting::{Front, Setting};

/// What failed, for the front ends to report it in their own terms
/// (an exit code, an exception class, a JSON field). Serialised as its
/// [`Kind::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An option or argument value, or a combination of them, is wrong:
    /// the same request with other settings would work.
    Usage,
    /// The data given cannot be used: a raster, a file's content, grids
    /// that do not match.
    Input,
    /// A limit of memory, disk or size is in the way.
    Resource,
    /// An OpenCL device or its driver failed.
    Device,
    /// Reading or writing failed (a file, a directory, a stream).
    Io,
    /// A signal stopped the run.
    Interrupted,
    /// The work is not finished (failed or held tasks); running again
    /// continues it.
    Incomplete,
    /// A broken invariant of mapfilter itself: a bug to report.
    Internal,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Kind; 8] = [
        Kind::Usage,
        Kind::Input,
        Kind::Resource,
        Kind::Device,
        Kind::Io,
        Kind::Interrupted,
        Kind::Incomplete,
        Kind::Internal,
    ];

    /// The kind's name in machine-readable output (JSON, Python's
    /// `Error.kind`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Usage => "usage",
            Kind::Input => "input",
            Kind::Resource => "resource",
            Kind::Device => "device",
            Kind::Io => "io",
            Kind::Interrupted => "interrupted",
            Kind::Incomplete => "incomplete",
            Kind::Internal => "internal",
        }
    }

    /// The kind [`Kind::name`] gives `name`, if any.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failure of one [`Kind`], with a one-line cause and, where one helps,
/// a hint on what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: Kind,
    cause: String,
    hint: Option<String>,
    /// The process exit code the CLI gives this error (1 unless a command
    /// documents another, e.g. `batch run --no-wait`'s 75).
    exit_code: i32,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` with only a cause.
    pub fn of(kind: Kind, cause: impl Into<String>) -> Self {
        Error {
            kind,
            cause: cause.into(),
            hint: None,
            exit_code: 1,
        }
    }

    /// A wrong option or argument value, or combination ([`Kind::Usage`]).
    pub fn usage(cause: impl Into<String>) -> Self {
        Error::of(Kind::Usage, cause)
    }

    /// Data that cannot be used ([`Kind::Input`]).
    pub fn input(cause: impl Into<String>) -> Self {
        Error::of(Kind::Input, cause)
    }

    /// A memory, disk or size limit ([`Kind::Resource`]).
    pub fn resource(cause: impl Into<String>) -> Self {
        Error::of(Kind::Resource, cause)
    }

    /// An OpenCL device or driver failure ([`Kind::Device`]).
    pub fn device(cause: impl Into<String>) -> Self {
        Error::of(Kind::Device, cause)
    }

    /// A read or write failure ([`Kind::Io`]).
    pub fn io(cause: impl Into<String>) -> Self {
        Error::of(Kind::Io, cause)
    }

    /// A run stopped by a signal ([`Kind::Interrupted`]).
    pub fn interrupted(cause: impl Into<String>) -> Self {
        Error::of(Kind::Interrupted, cause)
    }

    /// Work left unfinished ([`Kind::Incomplete`]).
    pub fn incomplete(cause: impl Into<String>) -> Self {
        Error::of(Kind::Incomplete, cause)
    }

    /// A bug of mapfilter's ([`Kind::Internal`]).
    pub fn internal(cause: impl Into<String>) -> Self {
        Error::of(Kind::Internal, cause)
    }

    /// What failed.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The same error as another kind, e.g. a read failure that a caller
    /// knows to be the data's fault.
    pub fn with_kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
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
        // An interrupted system call is retried where it matters; one that
        // reaches here is a read or write that failed like any other.
        Error::io(e.to_string())
    }
}

impl From<tiles::GridError> for Error {
    fn from(e: tiles::GridError) -> Self {
        let hint = match e {
            tiles::GridError::ZeroTile => format!(
                "give {} a side of at least 1 pixel, e.g. {}",
                Setting::Tile,
                Setting::Tile.is(512)
            ),
            tiles::GridError::InputSmallerThanWindow { .. } => {
                format!("use {}, or a smaller kernel", Setting::Border.is("same"))
            }
        };
        Error::usage(e.to_string()).hint(hint)
    }
}

impl From<tiles::UnknownBorder> for Error {
    fn from(e: tiles::UnknownBorder) -> Self {
        Error::usage(e.to_string()).hint(format!(
            "{} keeps the input's size, {} crops the kernel's halo",
            Setting::Border.is("same"),
            Setting::Border.is("valid")
        ))
    }
}

/// Shorthand for `return Err(Error::KIND(..).hint(..))`, e.g.
/// `bail!(usage, "no op given", hint = OPS_HINT)`.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $cause:expr) => {
        return Err($crate::error::Error::$kind($cause))
    };
    ($kind:ident, $cause:expr, hint = $hint:expr) => {
        return Err($crate::error::Error::$kind($cause).hint($hint))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line_with_hint() {
        let e = Error::usage("bad\nthing").hint("try\tthis");
        assert_eq!(e.to_string(), "bad thing (hint: try this)");
        assert_eq!(Error::io("x").context("a.tif").to_string(), "a.tif: x");
    }

    #[test]
    fn every_error_has_a_kind_that_context_and_hints_keep() {
        let e = Error::resource("too big").hint("smaller").context("a.tif");
        assert_eq!(e.kind(), Kind::Resource);
        assert_eq!(e.code(), 1);
        assert_eq!(e.with_kind(Kind::Input).kind(), Kind::Input);
        let from_io: Error = std::io::Error::other("disk gone").into();
        assert_eq!(from_io.kind(), Kind::Io);
        let grid: Error = tiles::GridError::ZeroTile.into();
        assert_eq!(grid.kind(), Kind::Usage);
        let names: std::collections::BTreeSet<_> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), Kind::ALL.len());
        // Records (a batch's failed tasks) store the name and read it back.
        for kind in Kind::ALL {
            assert_eq!(Kind::from_name(kind.name()), Some(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<Kind>(&json).unwrap(), kind);
        }
        assert_eq!(Kind::from_name("disk"), None);
    }

    #[test]
    fn bail_takes_the_kind_first() {
        fn refuse() -> Result<()> {
            crate::bail!(device, "no GPU", hint = "use the host");
        }
        let e = refuse().unwrap_err();
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            (Kind::Device, "no GPU (hint: use the host)")
        );
    }
}
