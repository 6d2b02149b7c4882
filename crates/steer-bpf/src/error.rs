//! Errors of listener groups and kernel steering.

use std::io;

/// What went wrong while building a listener group or talking to its BPF maps.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The process may not load BPF programs (EPERM/EACCES, no `CAP_BPF` or
    /// `CAP_SYS_ADMIN`). Callers fall back to user-space hand-off and say so, unless
    /// `require_bpf` asked for an error.
    #[error("not permitted to load the sk_reuseport program: {0}")]
    NotPermitted(String),
    /// The crate was built without clang, so no BPF object is embedded.
    #[error("steer-bpf was built without clang: no BPF object embedded")]
    NotBuilt,
    /// libbpf refused the object or the verifier rejected the program.
    #[error("loading a BPF program: {0}")]
    Load(String),
    /// Reading or writing one of the program's maps failed.
    #[error("BPF map {map}: {reason}")]
    Map {
        /// The map's name in `bpf/steer_reuseport.c`.
        map: &'static str,
        /// libbpf's description of the failure.
        reason: String,
    },
    /// Creating, binding, listening on or attaching to a group socket failed.
    #[error("{what}: {source}")]
    Socket {
        /// The step that failed.
        what: &'static str,
        /// The system error.
        #[source]
        source: io::Error,
    },
    /// The worker count is 0 or above [`crate::MAX_WORKERS`].
    #[error("a group needs 1..={max} workers, not {0}", max = crate::MAX_WORKERS)]
    Workers(u16),
    /// An exception named a worker the group does not have.
    #[error("worker {worker} is not one of the group's {workers} workers")]
    NoSuchWorker {
        /// The worker asked for.
        worker: u16,
        /// The group's worker count.
        workers: u16,
    },
    /// Attaching, detaching or querying an XDP program on an interface failed.
    #[error("XDP: {0}")]
    Xdp(String),
    /// An [`crate::IdSpec`] outside what the program can read.
    #[error("bad app id spec: {0}")]
    IdSpec(&'static str),
}

impl Error {
    pub(crate) fn socket(what: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Socket { what, source }
    }

    pub(crate) fn map(map: &'static str) -> impl FnOnce(libbpf_rs::Error) -> Error {
        move |e| Error::Map {
            map,
            reason: e.to_string(),
        }
    }
}
