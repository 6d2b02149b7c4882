//! What the AMF keeps per UE: the context of a UE with an N2 connection ([`UeContext`]) and
//! what survives the connection for a later registration with the 5G-GUTI ([`IdleUe`]).

use std::time::Instant;

use proto::ids::Snssai;
use proto::nas::{
    Guti, NasCount, NasSecurityContext, RegistrationRequest, SecurityHeaderType,
    UeSecurityCapability,
};
use security::{HxresStar, Kamf, Rand};

/// Where a UE stands in its 5GMM procedures (TS 24.501 §5.4, §5.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UeState {
    /// IDENTITY REQUEST sent for the SUCI (§5.4.3), T3570 running.
    WaitIdentity,
    /// POST `ue-authentications` sent to the AUSF.
    WaitAuthVector,
    /// AUTHENTICATION REQUEST sent (§5.4.1.3), T3560 running.
    WaitAuthResponse,
    /// PUT `5g-aka-confirmation` sent to the AUSF.
    WaitConfirmation,
    /// SECURITY MODE COMMAND sent (§5.4.2), T3560 running.
    WaitSmcComplete,
    /// Nudm_UECM_Registration sent.
    WaitUecm,
    /// Nudm_SDM_Get am-data sent.
    WaitSdm,
    /// Nudm_SDM_Get smf-select-data sent.
    WaitSmfSelect,
    /// INITIAL CONTEXT SETUP REQUEST with the REGISTRATION ACCEPT sent, T3550 running.
    WaitIcsResponse,
    /// INITIAL CONTEXT SETUP RESPONSE received, T3550 running.
    WaitRegistrationComplete,
    /// REGISTRATION COMPLETE received: 5GMM-REGISTERED.
    Registered,
    /// UE CONTEXT RELEASE COMMAND sent, waiting for its COMPLETE.
    Releasing,
}

impl UeState {
    /// Whether a registration is under way: from the INITIAL UE MESSAGE (or a new
    /// REGISTRATION REQUEST) until REGISTRATION COMPLETE or the release. These contexts are
    /// the AMF's overload signal ([`crate::amf::overload`]).
    pub fn is_registering(self) -> bool {
        !matches!(self, UeState::Registered | UeState::Releasing)
    }
}

/// The timers of one UE (TS 24.501 §10.2 Table 10.2.1), plus the guard of a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TimerKind {
    /// AUTHENTICATION REQUEST / SECURITY MODE COMMAND retransmission.
    T3560,
    /// REGISTRATION ACCEPT retransmission.
    T3550,
    /// IDENTITY REQUEST retransmission.
    T3570,
    /// No UE CONTEXT RELEASE COMPLETE came: drop the N2 part anyway.
    ReleaseGuard,
}

/// An authentication in progress: what the SEAF holds between the AUSF's 201 and the
/// confirmation (TS 33.501 §6.1.3.2 steps 5-10).
#[derive(Debug, Clone)]
pub(crate) struct AuthRun {
    pub(crate) rand: Rand,
    pub(crate) hxres_star: HxresStar,
    /// The `5g-aka-confirmation` link: whole when the AUSF gave an `http://` URI (its
    /// authority names the instance holding the context), else its path.
    pub(crate) confirm_path: String,
    /// Synch failures answered in this procedure (§5.4.1.3.7 f: the second in a row ends it).
    pub(crate) resyncs: u8,
}

/// The context of one UE with an N2 connection, keyed by its AMF-UE-NGAP-ID.
#[derive(Debug, Clone)]
pub struct UeContext {
    pub(crate) amf_ue_ngap_id: u64,
    pub(crate) ran_ue_ngap_id: u32,
    pub(crate) assoc: u32,
    pub(crate) stream: u16,
    pub(crate) state: UeState,
    /// The `supiOrSuci` the authentication runs with.
    pub(crate) supi_or_suci: Option<String>,
    pub(crate) supi: Option<String>,
    pub(crate) guti: Option<Guti>,
    /// The current NAS security context (during the SMC, the new one).
    pub(crate) sec: Option<NasSecurityContext>,
    /// Whether the secure exchange of NAS messages is established on this connection
    /// (TS 24.501 §4.4.4.3): from then on only verified messages are processed.
    pub(crate) secured: bool,
    pub(crate) kamf: Option<Kamf>,
    /// The ngKSI of the authentication in progress.
    pub(crate) new_ksi: u8,
    pub(crate) auth: Option<AuthRun>,
    pub(crate) registration: Option<RegistrationRequest>,
    pub(crate) caps: Option<UeSecurityCapability>,
    pub(crate) allowed_nssai: Vec<Snssai>,
    /// The default DNN of each subscribed S-NSSAI (SMF selection subscription data, TS
    /// 29.503 §6.1.6.2.5), for a PDU session request that names none.
    pub(crate) default_dnns: Vec<(Snssai, String)>,
    /// COUNT of the last verified uplink message (the KgNB input, TS 33.501 Annex A.9).
    pub(crate) last_ul_count: NasCount,
    /// The SBI call whose reply this UE waits for; any other reply is stale.
    pub(crate) pending_call: Option<u64>,
    pub(crate) timer: Option<(Instant, TimerKind)>,
    pub(crate) retransmissions: u8,
    /// The plain message a timer retransmits, and how it is protected.
    pub(crate) retransmit: Option<(Vec<u8>, SecurityHeaderType)>,
    /// Keep the security context after the release (for the 5G-GUTI).
    pub(crate) park: bool,
    /// Whether the registration is an initial one (UECM is then registered).
    pub(crate) initial: bool,
    /// Whether the gNB holds an AS context for this connection (INITIAL CONTEXT SETUP
    /// succeeded): a later accept on it goes in a DOWNLINK NAS TRANSPORT.
    pub(crate) as_context: bool,
    /// PDU sessions (TS 23.502 §4.3.2.2.1), see [`super::session`].
    pub(crate) sessions: Vec<super::session::PduSession>,
    /// Counted among the worker's registrations in flight (see `Local::account`).
    pub(crate) counted: bool,
    /// The kind of the registration in progress, as the measurements count it.
    pub(crate) reg_kind: crate::amf::pm::RegKind,
    /// Counted among the registered UEs (REGISTRATION COMPLETE received, not deregistered
    /// or rejected since).
    pub(crate) registered: bool,
}

impl UeContext {
    /// The operator's one line for a procedure of this UE that failed: who (the SUPI, else
    /// the SUCI it came with), where (the gNB's association and its UE id), which procedure,
    /// why (the cause by name) and which peer failed, if one did. INFO, so that a failed
    /// UE can be found among a million without debug logs; no key is in any field.
    pub(crate) fn log_failure(
        &self,
        procedure: &str,
        cause: &dyn std::fmt::Display,
        peer: Option<sbi::discovery::NfType>,
    ) {
        let peer = peer.map_or_else(|| "-".to_owned(), |p| p.to_string());
        // `%`: Display, not the quoted Debug form of a string.
        tracing::info!(
            ue = %self.who(),
            assoc = self.assoc,
            ran_ue_ngap_id = self.ran_ue_ngap_id,
            procedure = %procedure,
            cause = %cause,
            peer = %peer,
            "UE procedure failed"
        );
    }

    /// How the failure line names the UE: its SUPI, else the SUCI it came with.
    pub(crate) fn who(&self) -> &str {
        self.supi
            .as_deref()
            .or(self.supi_or_suci.as_deref())
            .unwrap_or("unidentified")
    }

    pub(crate) fn new(amf_ue_ngap_id: u64, ran_ue_ngap_id: u32, assoc: u32, stream: u16) -> Self {
        Self {
            amf_ue_ngap_id,
            ran_ue_ngap_id,
            assoc,
            stream,
            state: UeState::WaitAuthVector,
            supi_or_suci: None,
            supi: None,
            guti: None,
            sec: None,
            secured: false,
            kamf: None,
            new_ksi: 0,
            auth: None,
            registration: None,
            caps: None,
            allowed_nssai: Vec::new(),
            default_dnns: Vec::new(),
            last_ul_count: NasCount::ZERO,
            pending_call: None,
            timer: None,
            retransmissions: 0,
            retransmit: None,
            park: false,
            initial: true,
            as_context: false,
            sessions: Vec::new(),
            counted: false,
            reg_kind: crate::amf::pm::RegKind::Initial,
            registered: false,
        }
    }

    /// AMF-UE-NGAP-ID.
    pub fn amf_ue_ngap_id(&self) -> u64 {
        self.amf_ue_ngap_id
    }

    /// RAN-UE-NGAP-ID.
    pub fn ran_ue_ngap_id(&self) -> u32 {
        self.ran_ue_ngap_id
    }

    /// The SCTP association of the UE's N2 connection.
    pub fn assoc(&self) -> u32 {
        self.assoc
    }

    /// The procedure state.
    pub fn state(&self) -> UeState {
        self.state
    }

    /// The SUPI, once the AUSF confirmed it.
    pub fn supi(&self) -> Option<&str> {
        self.supi.as_deref()
    }

    /// The 5G-GUTI allocated to the UE.
    pub fn guti(&self) -> Option<&Guti> {
        self.guti.as_ref()
    }

    /// The current NAS security context.
    pub fn security(&self) -> Option<&NasSecurityContext> {
        self.sec.as_ref()
    }

    /// The UE's PDU sessions.
    pub fn sessions(&self) -> &[super::session::PduSession] {
        &self.sessions
    }

    /// The allowed NSSAI of the last REGISTRATION ACCEPT.
    pub fn allowed_nssai(&self) -> &[Snssai] {
        &self.allowed_nssai
    }

    /// The subscribed default DNN of `snssai`, from the SMF selection subscription data.
    pub fn default_dnn(&self, snssai: &Snssai) -> Option<&str> {
        self.default_dnns
            .iter()
            .find(|(s, _)| s == snssai)
            .map(|(_, d)| d.as_str())
    }
}

/// What the AMF keeps of a UE without an N2 connection, under its 5G-TMSI, so that a
/// registration with the 5G-GUTI can go on with the same NAS security context
/// (TS 24.501 §4.4.2.1: the context survives the connection).
#[derive(Debug, Clone)]
pub struct IdleUe {
    pub(crate) supi: String,
    pub(crate) guti: Guti,
    pub(crate) kamf: Kamf,
    pub(crate) sec: NasSecurityContext,
    pub(crate) caps: Option<UeSecurityCapability>,
    pub(crate) allowed_nssai: Vec<Snssai>,
    pub(crate) default_dnns: Vec<(Snssai, String)>,
    /// Still counted among the registered UEs (not deregistered before the release).
    pub(crate) registered: bool,
}

impl IdleUe {
    /// The SUPI.
    pub fn supi(&self) -> &str {
        &self.supi
    }

    /// The 5G-GUTI.
    pub fn guti(&self) -> &Guti {
        &self.guti
    }

    /// The kept NAS security context.
    pub fn security(&self) -> &NasSecurityContext {
        &self.sec
    }
}
