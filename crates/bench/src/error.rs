//! Why a scenario (or the demo) did not succeed.

/// Why a scenario (or the demo) did not succeed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// Bad settings: a flag out of range, or a combination that cannot run.
    #[error("{0}")]
    Invalid(String),
    /// A needed privilege is missing (CAP_NET_RAW, CAP_BPF, CAP_SYS_NICE, namespaces).
    #[error("{0}")]
    Privilege(String),
    /// The load generator could not run.
    #[error(transparent)]
    Load(#[from] ran::load::LoadError),
    /// The in-process core could not start or stop.
    #[error(transparent)]
    Core(#[from] steer5g_core::CoreError),
    /// An SCTP socket could not be bound.
    #[error(transparent)]
    Bind(#[from] sctp_io::BindError),
    /// A file or a socket failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The run failed: a procedure failed, a target was missed, nothing was measured.
    #[error("{0}")]
    Failed(String),
}
