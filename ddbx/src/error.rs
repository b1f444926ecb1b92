//! The embedding API's errors, each mapped to a documented exit code.

use crate::exit;

/// Why a ddbx operation failed (not: why the program failed; that is an outcome).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request itself is wrong: bad arguments, unknown actor, unusable output directory,
    /// program not found.
    #[error("{0}")]
    Usage(String),
    /// The recording cannot be used.
    #[error("{0}")]
    BadRecording(String),
    /// The program is one ddbx cannot record (e.g. statically linked).
    #[error("{0}")]
    Unsupported(String),
    /// ddbx failed.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// The exit code the CLI uses for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::BadRecording(_) => exit::BAD_RECORDING,
            Error::Unsupported(_) => exit::UNSUPPORTED,
            Error::Internal(_) => exit::INTERNAL,
        }
    }
}

impl From<ddbx_supervisor::Error> for Error {
    fn from(e: ddbx_supervisor::Error) -> Error {
        match e {
            ddbx_supervisor::Error::BadRecording(m) => Error::BadRecording(m),
            ddbx_supervisor::Error::BadCommand(m) => Error::Usage(m),
            e @ ddbx_supervisor::Error::Io { .. } => Error::Internal(e.to_string()),
        }
    }
}
