//! Why a load run could not be set up or did not finish.

/// Why a load run could not be set up or did not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The settings or the input cannot be used: a subscriber CSV, a key file, a gNB count.
    #[error("{0}")]
    Invalid(String),
    /// A needed privilege is missing (entering a network namespace, a raw IP socket).
    #[error("{0}")]
    Privilege(String),
    /// The gNBs' SCTP socket could not be bound.
    #[error(transparent)]
    Bind(#[from] sctp_io::BindError),
    /// The socket failed while the run was under way.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The run itself failed.
    #[error("{0}")]
    Failed(String),
}
