//! How a host is set up: the NFs' settings (the same for every worker of a process; the
//! host writes its own worker into each), how they reach the NFs they call, and how long a
//! call may take.

use std::sync::Arc;
use std::time::Duration;

use ids::{WorkerId, Workers};
use pfcp::txn::Retransmission;
use sbi::{NfType, StaticDirectory};
use store::SubscriberStore;
use thiserror::Error;

use crate::amf::registration::AmfConfig;
use crate::ausf::AusfConfig;
use crate::smf::SmfConfig;
use crate::udm::UdmConfig;

/// How two NFs talk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SbiMode {
    /// HTTP/2 cleartext, made by the I/O layer ([`super::Output::SbiCall`]).
    H2c,
    /// The same request and response bodies handed to the co-located NF inside the host
    /// (and over the mesh to its owner); nothing leaves the process.
    Inproc,
}

/// Everything a host needs. Clock readings come in here too (the AUSF's wall-clock
/// reference), so that the host itself never reads a clock.
#[derive(Clone)]
pub struct HostConfig {
    /// This worker.
    pub worker: WorkerId,
    /// All workers of the process.
    pub workers: Workers,
    /// The AMF (its `worker` and `workers` are set by the host).
    pub amf: AmfConfig,
    /// The AUSF (ditto).
    pub ausf: AusfConfig,
    /// The UDM (ditto).
    pub udm: UdmConfig,
    /// The SMF, if this process hosts one (ditto).
    pub smf: Option<SmfConfig>,
    /// The subscriber store the UDM reads.
    pub store: Arc<dyn SubscriberStore>,
    /// How the AMF, AUSF and UDM talk.
    pub sbi: SbiMode,
    /// How the AMF and the SMF talk (Nsmf_PDUSession, Namf_Communication).
    pub smf_sbi: SbiMode,
    /// Whether this process serves the AMF (a call to an AMF is in-process only then).
    pub hosts_amf: bool,
    /// Shard-aware h2c calls: each on the connection of the server worker owning it, where
    /// the placement allows ([`super::Placement::SHARD_AWARE_CALLS`]).
    pub sbi_pool: bool,
    /// Where the NFs are and how many workers each announces (shard-aware calls).
    pub directory: StaticDirectory,
    /// T1 and N1 of the SMF's PFCP requests (TS 29.244 §6.4).
    pub pfcp: Retransmission,
    /// How long an h2c call of the NFs may take ([`HostConfig::call_timeout`]); they nest
    /// with [`HostConfig::pfcp`] ([`HostConfig::check`]).
    pub sbi_timeouts: SbiTimeouts,
    /// The UEs whose messages are logged (`--trace-supi`): the host's SBI requests and
    /// answers naming them; the AMF's and the SMF's own messages.
    pub trace: crate::trace::Trace,
}

/// The timeout of an SBI call when none is configured: a failed or silent peer is told
/// from a slow one after 5 s.
pub const DEFAULT_SBI_CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// What an Nsmf call waits beyond the SMF's own worst case: an answer that the SMF sends at
/// its last moment still has time to cross the network and the queues of both sides.
pub const NSMF_MARGIN: Duration = Duration::from_secs(3);

/// How long the I/O layer waits for the answer to an h2c call of the host's NFs
/// ([`super::Output::SbiCall`]) before it reports the call failed ([`super::CallFailed`]: a
/// 504 to the caller, TS 29.500 §5.2.7).
///
/// The timers nest: the SMF answers a CreateSMContext after at most one call of its own
/// (Nudm_SDM, [`SbiTimeouts::call`]) and one PFCP transaction, which ends by T1 × (N1 + 1)
/// (TS 29.244 §6.4; 12 s by default). The AMF's Nsmf calls wait longer than both together,
/// so the SMF's answer (and with it the N1 reject for the UE) always comes before the AMF
/// gives up; a timeout then means the SMF is gone or overloaded, which the AMF tells the UE
/// with 5GMM cause #90 (TS 24.501 §5.4.5.2.5). In-process calls have no timeout: they are
/// always answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SbiTimeouts {
    /// Every call but Nsmf: AMF → AUSF and UDM, AUSF → UDM, SMF → UDM and AMF.
    pub call: Duration,
    /// The AMF's Nsmf_PDUSession calls (CreateSMContext, UpdateSMContext, ReleaseSMContext).
    pub nsmf: Duration,
}

impl SbiTimeouts {
    /// `call` for every call, and for Nsmf calls what nests around it and `pfcp`:
    /// `call` + T1 × (N1 + 1) + [`NSMF_MARGIN`].
    pub fn nested(call: Duration, pfcp: Retransmission) -> Self {
        SbiTimeouts {
            call,
            nsmf: call
                .saturating_add(pfcp.give_up_after())
                .saturating_add(NSMF_MARGIN),
        }
    }

    /// The longest of the two (what a client shared by every call must allow).
    pub fn longest(&self) -> Duration {
        self.call.max(self.nsmf)
    }
}

impl Default for SbiTimeouts {
    /// [`DEFAULT_SBI_CALL_TIMEOUT`] nested around the default PFCP timers: 5 s and 20 s.
    fn default() -> Self {
        SbiTimeouts::nested(DEFAULT_SBI_CALL_TIMEOUT, Retransmission::default())
    }
}

/// A host configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The Nsmf call timeout does not exceed the SMF's worst case (its own call and one
    /// PFCP transaction): the AMF would give up on answers that are on their way.
    #[error(
        "Nsmf call timeout {nsmf:?} does not exceed the SMF's worst case {inner:?} \
         (SBI call timeout + PFCP T1 × (N1 + 1))"
    )]
    TimersNotNested {
        /// The Nsmf call timeout.
        nsmf: Duration,
        /// The SMF's worst case.
        inner: Duration,
    },
}

impl std::fmt::Debug for HostConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConfig")
            .field("worker", &self.worker)
            .field("workers", &self.workers)
            .field("sbi", &self.sbi)
            .field("smf_sbi", &self.smf_sbi)
            .field("sbi_pool", &self.sbi_pool)
            .field("smf", &self.smf.is_some())
            .finish_non_exhaustive()
    }
}

impl HostConfig {
    /// Whether the settings can work together: the timers nest (see [`SbiTimeouts`]).
    pub fn check(&self) -> Result<(), ConfigError> {
        let t = self.sbi_timeouts;
        let inner = t.call.saturating_add(self.pfcp.give_up_after());
        if t.nsmf <= inner {
            return Err(ConfigError::TimersNotNested {
                nsmf: t.nsmf,
                inner,
            });
        }
        Ok(())
    }

    /// How long the I/O layer waits for the answer to an h2c call to `nf`.
    pub fn call_timeout(&self, nf: NfType) -> Duration {
        match nf {
            NfType::Smf => self.sbi_timeouts.nsmf,
            _ => self.sbi_timeouts.call,
        }
    }

    /// How `nf` is reached: Nsmf and Namf_Communication follow [`HostConfig::smf_sbi`],
    /// the AUSF and UDM [`HostConfig::sbi`].
    pub fn mode(&self, nf: NfType) -> SbiMode {
        match nf {
            NfType::Smf | NfType::Amf => self.smf_sbi,
            _ => self.sbi,
        }
    }
}
