//! The errors a subcommand ends with, each mapped to its exit status (the README's
//! conventions: 1 the run failed, 2 bad usage or input, 3 a missing privilege).

/// Why a run did not succeed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// Bad usage or bad input: exit status 2.
    #[error("{0}")]
    Usage(String),
    /// A needed privilege (CAP_NET_RAW, CAP_BPF, namespaces) is missing: exit status 3.
    #[error("{0}")]
    Privilege(String),
    /// The run itself failed (a procedure failed, a target was missed): exit status 1.
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    pub(crate) fn exit_status(&self) -> u8 {
        match self {
            CliError::Failed(_) => 1,
            CliError::Usage(_) => 2,
            CliError::Privilege(_) => 3,
        }
    }
}

impl From<steer5g_config::ConfigError> for CliError {
    fn from(e: steer5g_config::ConfigError) -> Self {
        CliError::Usage(e.to_string())
    }
}

/// An address the user chose that cannot be bound (taken, or not this host's): bad input,
/// exit 2, for N2, SBI, PFCP and metrics alike.
pub(crate) fn unbindable(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::AddrInUse | std::io::ErrorKind::AddrNotAvailable
    )
}

impl From<sctp_io::BindError> for CliError {
    fn from(e: sctp_io::BindError) -> Self {
        match &e {
            sctp_io::BindError::Privilege(_) => CliError::Privilege(e.to_string()),
            sctp_io::BindError::Io { source, .. } if unbindable(source) => {
                CliError::Usage(e.to_string())
            }
            _ => CliError::Failed(e.to_string()),
        }
    }
}

impl From<steer5g_core::CoreError> for CliError {
    /// Bad settings are usage errors (2), a missing CAP_NET_RAW is a privilege error (3),
    /// anything else a failed run (1).
    fn from(e: steer5g_core::CoreError) -> Self {
        match e {
            steer5g_core::CoreError::Config(_) => CliError::Usage(e.to_string()),
            steer5g_core::CoreError::N2Bind {
                source: sctp_io::BindError::Privilege(_),
                ..
            } => CliError::Privilege(e.to_string()),
            steer5g_core::CoreError::N2Bind {
                source: sctp_io::BindError::Io { ref source, .. },
                ..
            }
            | steer5g_core::CoreError::Bind { ref source, .. }
                if unbindable(source) =>
            {
                CliError::Usage(e.to_string())
            }
            steer5g_core::CoreError::N2Steering(steer_bpf::Error::NotPermitted(_)) => {
                CliError::Privilege(e.to_string())
            }
            // --require-bpf and the program could not be loaded (mostly: no CAP_BPF).
            steer5g_core::CoreError::Bpf { .. } => CliError::Privilege(e.to_string()),
            other => CliError::Failed(other.to_string()),
        }
    }
}

impl From<ran::load::LoadError> for CliError {
    fn from(e: ran::load::LoadError) -> Self {
        use ran::load::LoadError;
        match e {
            LoadError::Invalid(m) => CliError::Usage(m),
            LoadError::Privilege(m) => CliError::Privilege(m),
            LoadError::Bind(b) => CliError::from(b),
            other => CliError::Failed(other.to_string()),
        }
    }
}

impl From<bench::BenchError> for CliError {
    fn from(e: bench::BenchError) -> Self {
        use bench::BenchError;
        match e {
            BenchError::Invalid(m) => CliError::Usage(m),
            BenchError::Privilege(m) => CliError::Privilege(m),
            BenchError::Load(l) => CliError::from(l),
            BenchError::Core(c) => CliError::from(c),
            BenchError::Bind(b) => CliError::from(b),
            other => CliError::Failed(other.to_string()),
        }
    }
}

impl From<lab::LabError> for CliError {
    fn from(e: lab::LabError) -> Self {
        match e {
            lab::LabError::Privilege(m) => CliError::Privilege(m),
            other => CliError::Failed(other.to_string()),
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        if unbindable(&e) {
            CliError::Usage(e.to_string())
        } else {
            CliError::Failed(e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_required_bpf_load_that_fails_is_a_missing_privilege() {
        let e = steer5g_core::CoreError::Bpf {
            nf: sbi::NfType::Udm,
            addr: std::net::SocketAddr::from(([127, 0, 0, 12], 7777)),
            source: steer_bpf::Error::NotPermitted("no CAP_BPF".into()),
        };
        let cli = CliError::from(e);
        assert_eq!(cli.exit_status(), 3);
        assert!(cli.to_string().contains("SBI UDM 127.0.0.12:7777"), "{cli}");
    }

    #[test]
    fn a_taken_address_is_bad_input_and_other_socket_errors_a_failure() {
        let taken = || std::io::Error::from(std::io::ErrorKind::AddrInUse);
        let sbi = steer5g_core::CoreError::Bind {
            what: "SBI AUSF 127.0.0.11:7777".into(),
            source: taken(),
        };
        assert_eq!(CliError::from(sbi).exit_status(), 2);
        let n2 = steer5g_core::CoreError::N2Bind {
            transport: steer5g_config::Transport::Udp,
            source: sctp_io::BindError::Io {
                what: "udp 127.0.0.5:9899".into(),
                source: taken(),
            },
        };
        assert_eq!(CliError::from(n2).exit_status(), 2);
        assert_eq!(CliError::from(taken()).exit_status(), 2);
        let other = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(CliError::from(other).exit_status(), 1);
    }
}
