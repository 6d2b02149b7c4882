//! How a host is set up: the NFs' settings (the same for every worker of a process; the
//! host writes its own worker into each) and how they reach the NFs they call.

use std::sync::Arc;

use ids::{WorkerId, Workers};
use pfcp::txn::Retransmission;
use sbi::{NfType, StaticDirectory};
use store::SubscriberStore;

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
    /// Shard-aware h2c calls: each on the connection of the server worker owning it, where
    /// the placement allows ([`super::Placement::SHARD_AWARE_CALLS`]).
    pub sbi_pool: bool,
    /// Where the NFs are and how many workers each announces (shard-aware calls).
    pub directory: StaticDirectory,
    /// T1 and N1 of the SMF's PFCP requests (TS 29.244 §6.4).
    pub pfcp: Retransmission,
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
    /// How `nf` is reached: Nsmf and Namf_Communication follow [`HostConfig::smf_sbi`],
    /// the AUSF and UDM [`HostConfig::sbi`].
    pub fn mode(&self, nf: NfType) -> SbiMode {
        match nf {
            NfType::Smf | NfType::Amf => self.smf_sbi,
            _ => self.sbi,
        }
    }
}
