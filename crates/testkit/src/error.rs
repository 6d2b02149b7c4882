//! The one error type of the test kit.

use std::time::Duration;

/// A test-infrastructure operation that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A program could not be started at all (missing binary, bad path).
    #[error("cannot run `{cmd}`: {source}")]
    Spawn {
        /// The command line.
        cmd: String,
        /// Why the OS refused.
        source: std::io::Error,
    },
    /// A program ran and exited unsuccessfully.
    #[error("`{cmd}` failed ({status}): {stderr}")]
    Failed {
        /// The command line.
        cmd: String,
        /// How it exited.
        status: std::process::ExitStatus,
        /// What it wrote to standard error.
        stderr: String,
    },
    /// Something did not happen in time.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long we waited.
        after: Duration,
    },
    /// A tool's output did not have the expected shape.
    #[error("cannot parse output of {what}: {detail}")]
    Parse {
        /// Which tool or file.
        what: String,
        /// What was wrong.
        detail: String,
    },
    /// A file-system operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What we were doing.
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An argument was out of range.
    #[error("invalid argument: {0}")]
    Invalid(String),
}

/// Result alias of the test kit.
pub type Result<T, E = Error> = std::result::Result<T, E>;
