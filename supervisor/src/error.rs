//! The supervisor's errors. A program's own errno is part of its run and never appears here:
//! these are ddbx's failures, each saying what was expected, what was found, and where.

use std::path::PathBuf;

/// Why the supervisor could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The recording cannot be used (missing, corrupt, another format version).
    #[error("{0}")]
    BadRecording(String),
    /// The command to run cannot be started.
    #[error("{0}")]
    BadCommand(String),
    /// An operating-system call ddbx needs failed.
    #[error("{what}: {source}")]
    Io {
        /// What ddbx was doing, and on which file.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
}

impl Error {
    /// An [`Error::Io`] saying what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }

    /// An [`Error::Io`] about a path.
    pub fn io_at(what: &str, path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Io {
            what: format!("{what} {}", path.display()),
            source,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A path, for messages.
pub(crate) fn shown(path: &std::path::Path) -> String {
    PathBuf::from(path).display().to_string()
}
