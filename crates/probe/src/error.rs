//! Errors of the probe.

/// What went wrong while loading, attaching or reading the probe.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The process may not load tracing programs: it needs CAP_BPF with CAP_PERFMON, or
    /// CAP_SYS_ADMIN (the CLI exits 3).
    #[error("not permitted to load the probe's BPF programs: {0}")]
    NotPermitted(String),
    /// The crate was built without clang, so no BPF object is embedded.
    #[error("the probe was built without clang: no BPF object embedded")]
    NotBuilt,
    /// libbpf, the verifier or the kernel refused the object or a program's attachment.
    #[error("loading the probe: {0}")]
    Load(String),
    /// Reading or writing one of the probe's maps failed.
    #[error("probe map {map}: {reason}")]
    Map {
        /// The map's name in bpf/probe.c.
        map: &'static str,
        /// libbpf's description of the failure.
        reason: String,
    },
    /// A filter that cannot be resolved (no such namespace or interface).
    #[error("{0}")]
    Filter(String),
    /// The sweep's namespaces, link or traffic could not be set up.
    #[error("sweep topology: {0}")]
    Topology(String),
}

impl Error {
    pub(crate) fn map(map: &'static str) -> impl FnOnce(libbpf_rs::Error) -> Error {
        move |e| Error::Map {
            map,
            reason: e.to_string(),
        }
    }
}
