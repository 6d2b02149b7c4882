//! The NFs of one host, built over the stores of its placement.

use sbi::NfType;

use super::placement::{Placement, Stores};
use super::{HostConfig, NfStats};
use crate::amf::registration::{Amf, IdleUe, UeContext};
use crate::ausf::{Ausf, AuthContext};
use crate::smf::{SmContext, Smf};
use crate::udm::{Udm, UeRecord};
use store::SqnShard;

/// The AMF of a host of placement `P`.
pub type HostAmf<P> =
    Amf<<P as Placement>::Map<u64, UeContext>, <P as Placement>::Map<u32, IdleUe>>;
/// The AUSF of a host of placement `P`.
pub type HostAusf<P> = Ausf<<P as Placement>::Map<String, AuthContext>>;
/// The UDM of a host of placement `P`.
pub type HostUdm<P> =
    Udm<<P as Placement>::Map<String, UeRecord>, <P as Placement>::Map<(), SqnShard>>;
/// The SMF of a host of placement `P`.
pub type HostSmf<P> = Smf<<P as Placement>::Map<u64, SmContext>>;

pub(super) struct Nfs<P: Placement> {
    pub(super) amf: HostAmf<P>,
    pub(super) ausf: HostAusf<P>,
    pub(super) udm: HostUdm<P>,
    pub(super) smf: Option<HostSmf<P>>,
}

impl<P: Placement> Nfs<P> {
    /// Every NF of worker `cfg.worker` over `stores`.
    pub(super) fn new(cfg: &HostConfig, stores: Stores<P>) -> Self {
        let (worker, workers) = (cfg.worker, cfg.workers);
        let mut amf = cfg.amf.clone();
        amf.worker = worker;
        amf.workers = workers;
        amf.trace = cfg.trace.clone();
        let mut ausf = cfg.ausf.clone();
        ausf.worker = worker;
        ausf.workers = workers;
        let mut udm = cfg.udm.clone();
        udm.worker = worker;
        udm.workers = workers;
        let smf = cfg.smf.clone().map(|mut smf| {
            smf.worker = worker;
            smf.workers = workers;
            let mut smf = Smf::new(smf, stores.smf_contexts);
            smf.set_trace(cfg.trace.clone());
            smf
        });
        Nfs {
            amf: Amf::new(amf, stores.amf_ues, stores.amf_idle),
            ausf: Ausf::new(ausf, stores.ausf_contexts),
            udm: Udm::new(udm, cfg.store.clone(), stores.udm_records, stores.udm_sqn),
            smf,
        }
    }

    pub(super) fn stats(&self) -> NfStats {
        NfStats {
            amf: self.amf.stats(),
            amf_sessions: self.amf.session_stats(),
            ausf: self.ausf.stats(),
            udm: self.udm.stats(),
            smf: self.smf.as_ref().map(Smf::stats).unwrap_or_default(),
        }
    }

    /// An SQN write completed (or failed).
    pub(super) fn sqn_done(&mut self, supi: &str, claim: Option<store::sqn::Claim>) {
        match claim {
            Some(claim) => self.udm.sqn_claimed(supi, claim),
            None => self.udm.sqn_persist_failed(supi),
        }
    }

    /// Whether this host serves requests of `nf`.
    pub(super) fn serves(&self, nf: NfType) -> bool {
        match nf {
            NfType::Amf | NfType::Ausf | NfType::Udm => true,
            NfType::Smf => self.smf.is_some(),
            _ => false,
        }
    }
}
