//! The AMF's registration procedures as a sans-IO state machine: initial registration
//! with 5G AKA through the AUSF, Security Mode Control, UECM registration and SDM,
//! Initial Context Setup carrying the REGISTRATION ACCEPT, REGISTRATION COMPLETE;
//! mobility and periodic registration with the 5G-GUTI; UE-originating deregistration
//! and UE context release (TS 23.502 §4.2.2.2.2, §4.2.2.3.2; TS 24.501 §5.4, §5.5;
//! TS 33.501 §6.1.3.2, §6.7.2).
//!
//! One [`Amf`] runs per worker. Inputs: UE-associated NGAP ([`Amf::handle_ngap`]), the
//! replies to its SBI calls ([`Amf::handle_sbi_reply`]) and time ([`Amf::handle_timeout`]).
//! Outputs: [`Amf::poll_action`] and [`Amf::poll_timeout`]. It owns no socket, thread or
//! clock. [`route`] tells the runtime which worker a message belongs to.
//!
//! # Ownership
//!
//! Connected UEs live in `M` under their AMF-UE-NGAP-ID, UEs without an N2 connection in
//! `P` under their 5G-TMSI. Both identifiers encode the worker that allocated them. A
//! message is acted on only if the context exists, its association is the one the
//! message came on and its RAN-UE-NGAP-ID matches: the identifier routes, it never
//! proves ownership. Anything else is answered with an ERROR INDICATION and touches no
//! context.
//!
//! # Choices
//!
//! - An AUTHENTICATION FAILURE with #20 (MAC failure) for a UE identified by its SUCI ends
//!   in AUTHENTICATION REJECT: the vector came from the UDM for that very SUCI, so there is
//!   no other identity to try. For a UE identified by its 5G-GUTI the AMF asks for the SUCI
//!   first (TS 24.501 §5.4.1.3.7 c).
//! - A registration with an unknown 5G-GUTI, or one whose integrity check fails and whose
//!   context cannot be read, runs the identification procedure for the SUCI (§5.5.1.2.2).
//! - A registration with a known 5G-GUTI that fails the integrity check is authenticated
//!   again with the SUPI (§4.4.4.3, §5.4.1.1).
//! - The INITIAL CONTEXT SETUP REQUEST is sent on every registration that arrives in an
//!   INITIAL UE MESSAGE: the N2 connection is new and NAS security is active.

mod session;
mod ue;

pub mod route;

#[cfg(test)]
mod admission_tests;
#[cfg(test)]
pub(crate) mod test_initial_ue;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode};
use ids::amf::{amf_ue_ngap_id, owner_of_amf_ue_ngap_id, owner_of_tmsi, tmsi};
use ids::{WorkerId, Workers};
use proto::ids::{Guami, Snssai, Tai};
use proto::nas::{
    self, AccessType, AuthenticationReject, AuthenticationRequest, CipheringAlgorithm,
    DeregistrationAcceptUeOriginating, Direction, FiveGmmCause, FiveGmmStatus, Guti,
    IdentityRequest, IdentityType, IntegrityAlgorithm, MobileIdentity, NasMessage,
    NasSecurityContext, NasSecurityError, Ngksi, RegistrationAccept, RegistrationReject,
    RegistrationRequest, RegistrationResult, RegistrationType, SchemeOutput, SecurityHeaderType,
    SecurityModeCommand, Suci, TimerValue,
};
use proto::ngap::{
    self, Cause, DownlinkNasTransport, ErrorIndication, InitialContextSetupFailure,
    InitialContextSetupRequest, InitialContextSetupResponse, InitialUeMessage, MessageKind,
    NasCause, NgapPdu, ProtocolCause, RadioNetworkCause, UeContextReleaseCommand,
    UeContextReleaseComplete, UeContextReleaseRequest, UeNgapIds, UeSecurityCapabilities,
    UplinkNasTransport,
};
use sbi::discovery::NfType;
use sbi::message::decode_json;
use sbi::model::{
    AccessAndMobilitySubscriptionData, Amf3GppAccessRegistration, AuthData5g, AuthResult,
    AuthenticationInfo, ConfirmationData, ConfirmationDataResponse, HexBytes, PlmnId,
    ProblemDetails, RatType, ResynchronizationInfo, SmfSelectionSubscriptionData,
    UeAuthenticationCtx,
};
use sbi::paths::build;
use sbi::problem::GmmCause;
use security::kdf::{self, Abba, ServingNetworkName, Supi};
use security::{HxresStar, Kseaf, Rand, ResStar};
use tracing::{debug, warn};

use crate::amf::overload::{Hysteresis, OverloadConfig};
use crate::amf::pm::{Counter, Pm, RegKind};
use crate::state::ContextMap;

pub use route::{route, Route};
pub use session::{PduSession, SessionState, SessionStats};
use ue::{AuthRun, TimerKind};
pub use ue::{IdleUe, UeContext, UeState};

/// T3560 and T3550 (TS 24.501 Table 10.2.1): 6 s.
pub const DEFAULT_RETRANSMISSION_TIMER: Duration = Duration::from_secs(6);
/// The AMF's NAS timers (TS 24.501 §10.2 Tables 10.2.1 and 10.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NasTimers {
    /// REGISTRATION ACCEPT retransmitted until REGISTRATION COMPLETE.
    pub t3550: Duration,
    /// AUTHENTICATION REQUEST and SECURITY MODE COMMAND retransmitted.
    pub t3560: Duration,
    /// IDENTITY REQUEST retransmitted.
    pub t3570: Duration,
    /// Periodic registration update timer sent in REGISTRATION ACCEPT; `None` sends it
    /// deactivated (§5.3.7: the UE then does no periodic registration).
    pub t3512: Option<Duration>,
    /// T3502 sent in REGISTRATION ACCEPT; `None` leaves the IE out (the UE takes 12 min).
    pub t3502: Option<Duration>,
}

impl Default for NasTimers {
    /// 6 s retransmissions, T3512 54 min, T3502 12 min (the tables' defaults).
    fn default() -> Self {
        NasTimers {
            t3550: DEFAULT_RETRANSMISSION_TIMER,
            t3560: DEFAULT_RETRANSMISSION_TIMER,
            t3570: DEFAULT_RETRANSMISSION_TIMER,
            t3512: Some(Duration::from_secs(54 * 60)),
            t3502: Some(Duration::from_secs(12 * 60)),
        }
    }
}

/// A timer's value as NAS carries it (whole seconds; the encoder picks the unit).
fn nas_timer(t: Option<Duration>) -> TimerValue {
    match t {
        Some(d) => TimerValue::Seconds(u32::try_from(d.as_secs()).unwrap_or(u32::MAX)),
        None => TimerValue::Deactivated,
    }
}

/// Retransmissions before a procedure is aborted (§5.4.1.3.7, §5.4.2.7, §5.5.1.2.8: on the
/// fifth expiry).
pub const MAX_RETRANSMISSIONS: u8 = 4;
/// How long a UE CONTEXT RELEASE COMMAND waits for its COMPLETE before the AMF drops the
/// N2 part anyway.
pub const RELEASE_GUARD: Duration = Duration::from_secs(5);
/// ABBA of the current releases (TS 33.501 Annex A.7.1).
const ABBA: [u8; 2] = [0, 0];

/// How one AMF worker is set up.
#[derive(Debug, Clone)]
pub struct AmfConfig {
    /// This worker.
    pub worker: WorkerId,
    /// All workers of the process.
    pub workers: Workers,
    /// The AMF's GUAMI (its PLMN is the serving network).
    pub guami: Guami,
    /// The TAI list handed to registered UEs.
    pub tais: Vec<Tai>,
    /// The S-NSSAIs this AMF serves.
    pub slices: Vec<Snssai>,
    /// NAS integrity algorithms, most preferred first (TS 33.501 §6.7.2).
    pub integrity: Vec<IntegrityAlgorithm>,
    /// NAS ciphering algorithms, most preferred first.
    pub ciphering: Vec<CipheringAlgorithm>,
    /// Authenticate on every registration, even with a valid security context.
    pub always_auth: bool,
    /// The AMF's NF instance id (UUID), sent to the UDM.
    pub instance_id: String,
    /// `scheme://host:port` of the AMF, for the UDM's deregistration callback.
    pub api_root: String,
    /// T3550, T3560, T3570 and the T3512 and T3502 values sent to UEs.
    pub timers: NasTimers,
    /// Most UEs kept without an N2 connection on this worker; the oldest goes first.
    pub max_idle: usize,
    /// Most connected UE contexts on this worker (in the locking baseline, `workers ×`
    /// this over the shared map). A registration beyond it is rejected with 5GMM #22 and
    /// T3346; the rejected UE keeps a context until its release completes, so up to
    /// [`reject_headroom`] more may exist, and an INITIAL UE MESSAGE beyond those is
    /// dropped and counted ([`AmfStats::initial_ue_dropped`]).
    pub max_ue_contexts: usize,
    /// T3346 sent with 5GMM #22 (TS 24.501 §5.3.9, §10.2): how long a rejected UE waits.
    pub t3346: Duration,
    /// Overload control by registrations in flight; `None` turns it off.
    pub overload: Option<OverloadConfig>,
    /// The UEs whose NGAP and NAS messages are logged (`--trace-supi`).
    pub trace: crate::trace::Trace,
    /// Tell the UDM when a UE deregisters (Nudm_UECM_Update with purgeFlag, TS 23.502
    /// §4.5.3), so that it knows the AMF no longer holds the UE.
    pub uecm_purge: bool,
    /// Subscribe to changes of a registering UE's access and mobility data (Nudm_SDM_
    /// Subscribe, TS 23.502 §4.2.2.2.2 step 14c), with the `sdm-notify` callback.
    pub sdm_subscribe: bool,
}

/// Contexts allowed beyond [`AmfConfig::max_ue_contexts`] for UEs being rejected (each
/// lives until its UE CONTEXT RELEASE COMPLETE): a sixteenth of the limit, at least 64.
pub fn reject_headroom(max_ue_contexts: usize) -> usize {
    (max_ue_contexts / 16).max(64)
}

impl AmfConfig {
    /// The project defaults for `worker`: GUAMI 001-01/02/001/00, TAI 001-01-000001,
    /// SST 1, NIA2, NIA1, NIA3 and NEA2, NEA1, NEA3, NEA0, 6 s timers.
    pub fn new(worker: WorkerId, workers: Workers) -> Self {
        use proto::ids::defaults;
        Self {
            worker,
            workers,
            guami: defaults::GUAMI,
            tais: vec![defaults::TAI],
            slices: vec![defaults::SNSSAI],
            integrity: vec![
                IntegrityAlgorithm::Nia2,
                IntegrityAlgorithm::Nia1,
                IntegrityAlgorithm::Nia3,
            ],
            ciphering: vec![
                CipheringAlgorithm::Nea2,
                CipheringAlgorithm::Nea1,
                CipheringAlgorithm::Nea3,
                CipheringAlgorithm::Nea0,
            ],
            always_auth: false,
            instance_id: "00000000-0000-4000-8000-00000000a3f0".to_owned(),
            api_root: "http://127.0.0.1:7777".to_owned(),
            timers: NasTimers::default(),
            max_idle: 100_000,
            max_ue_contexts: 250_000,
            t3346: Duration::from_secs(30),
            overload: Some(OverloadConfig::default()),
            trace: crate::trace::Trace::default(),
            uecm_purge: true,
            sdm_subscribe: true,
        }
    }

    /// The serving network name of the GUAMI's PLMN (TS 24.501 §9.12.1).
    pub fn serving_network_name(&self) -> String {
        let p = self.guami.plmn;
        ServingNetworkName::from_plmn(&p.mcc_str(), &p.mnc_str())
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default()
    }
}

/// Work the AMF hands to its runtime.
#[derive(Debug)]
#[non_exhaustive]
pub enum Action {
    /// Send an NGAP PDU (SCTP PPID 60).
    Ngap {
        /// The association.
        assoc: u32,
        /// The SCTP stream.
        stream: u16,
        /// The encoded PDU.
        pdu: Vec<u8>,
    },
    /// Send a request to another NF and report its reply with [`Amf::handle_sbi_reply`]
    /// under `call_id`. The runtime must answer every call: a transport failure or timeout
    /// is a reply with status 504 and an empty body.
    Call {
        /// Identifies the reply.
        call_id: u64,
        /// Which NF.
        nf: NfType,
        /// HTTP method.
        method: Method,
        /// Path (no authority).
        path: String,
        /// `Content-Type` of `body`: JSON, or multipart for Nsmf calls with N1/N2 parts.
        content_type: &'static str,
        /// Body (empty for a GET).
        body: Bytes,
    },
    /// Answer SBI request `req_id` served with [`Amf::handle_request`].
    Respond {
        /// The request.
        req_id: u64,
        /// The answer.
        response: sbi::SbiResponse,
    },
}

crate::summed_counters! {
    /// Counters of one AMF worker.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct AmfStats {
        /// UE contexts created by an INITIAL UE MESSAGE.
        pub ues_created: u64,
        /// REGISTRATION COMPLETEs received.
        pub registrations: u64,
        /// REGISTRATION REJECTs sent.
        pub registration_rejects: u64,
        /// AUTHENTICATION REJECTs sent.
        pub authentication_rejects: u64,
        /// Resynchronisations asked of the AUSF.
        pub resyncs: u64,
        /// IDENTITY REQUESTs for the SUCI: a registration with a 5G-GUTI this AMF has no
        /// context for (another AMF's, or one it lost).
        pub identifications: u64,
        /// UE contexts dropped on the UDM's deregistration notification (another AMF took
        /// the UE, or the subscription was withdrawn).
        pub dereg_notifications: u64,
        /// SDM subscriptions the UDM accepted.
        pub sdm_subscriptions: u64,
        /// SDM subscriptions it refused or never answered.
        pub sdm_subscription_failures: u64,
        /// The UDM's notifications of a changed subscription, each dropping the kept copy.
        pub sdm_notifications: u64,
        /// Deregistrations.
        pub deregistrations: u64,
        /// Protected uplink NAS messages discarded for a MAC that does not verify.
        pub mac_failures: u64,
        /// Uplink NAS messages discarded for lack of protection (§4.4.4.3).
        pub unprotected_discarded: u64,
        /// 5GMM STATUS messages sent.
        pub statuses: u64,
        /// ERROR INDICATIONs sent.
        pub error_indications: u64,
        /// Downlink NAS retransmissions.
        pub retransmissions: u64,
        /// Procedures aborted after the last retransmission.
        pub aborted: u64,
        /// UE contexts released.
        pub releases: u64,
        /// SBI replies for no outstanding call, or for a UE that moved on.
        pub stray_replies: u64,
        /// UEs whose deregistration the UDM acknowledged (Nudm_UECM_Update, purgeFlag).
        pub purges: u64,
        /// Purges the UDM refused or never answered.
        pub purge_failures: u64,
        /// Registrations rejected with #22 and T3346 because the worker was overloaded
        /// (TS 23.501 §5.19.5.2).
        pub congestion_rejects: u64,
        /// Registrations rejected with #22 and T3346 because the worker held
        /// [`AmfConfig::max_ue_contexts`].
        pub context_limit_rejects: u64,
        /// INITIAL UE MESSAGEs dropped because even the rejects' headroom was used up.
        pub initial_ue_dropped: u64,
        /// Times the worker entered overload.
        pub overload_starts: u64,
        /// Registrations in flight now (a gauge: the overload signal).
        pub registrations_in_flight: u64,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    AuthVector,
    Confirmation,
    Uecm,
    Sdm,
    SmfSelect,
    /// Nsmf CreateSMContext for PDU session `psi`.
    SmCreate(u8),
    /// Nsmf UpdateSMContext for PDU session `psi`.
    SmUpdate(u8),
    /// Nsmf ReleaseSMContext of a UE whose context is gone.
    SmRelease,
    /// Nudm_UECM_Update with purgeFlag of a UE that deregistered.
    UecmPurge,
    /// Nudm_SDM_Subscribe for a registering UE; the registration does not wait for it.
    SdmSubscribe,
    /// Nsmf ReleaseSMContext of an SM context created for a UE, or a PDU session, that was
    /// gone when the creation's answer came.
    SmOrphan,
}

/// One AMF worker. `M` holds the connected UEs by AMF-UE-NGAP-ID, `P` the UEs without an
/// N2 connection by 5G-TMSI: [`crate::state::ShardMap`]s in the sharded mode, clones of
/// [`crate::state::LockedMap`]s in the locking baseline.
///
/// Each message, reply or timer touches a UE context in one access to `M`
/// ([`ContextMap::with`], or [`ContextMap::with_remove`] when the context ends): the
/// procedure step runs on `&mut UeContext` inside it and hands its output back as
/// [`Effects`], which go to the runtime's queue and the timer list once the access is over.
/// The context stays in the map from its INITIAL UE MESSAGE until its release, so in the
/// locking baseline every other worker sees it at every moment.
#[derive(Debug)]
pub struct Amf<M, P> {
    ues: M,
    idle: P,
    /// What a procedure step may touch besides the UE context.
    local: Local,
    timers: BTreeSet<(Instant, u64)>,
    idle_order: VecDeque<u32>,
    /// SUPI → 5G-TMSI of the idle contexts this worker kept, so that a new registration of
    /// the SUPI replaces its previous one (TS 23.502 §4.2.2.2.2: one UE context per SUPI).
    idle_supi: HashMap<String, u32>,
    actions: VecDeque<Action>,
    /// Overload transitions not yet polled ([`Amf::poll_overload`]).
    overload_changes: VecDeque<bool>,
}

/// The worker's own state that procedure steps read and update beside the UE context:
/// configuration, counters, identifier allocation, outstanding calls, and the output of
/// the step in progress. Nothing here is shared between workers.
#[derive(Debug)]
struct Local {
    cfg: AmfConfig,
    snn: String,
    next_ue: u32,
    next_tmsi: u32,
    next_call: u64,
    calls: HashMap<u64, (u64, CallKind)>,
    /// Who each outstanding ReleaseSMContext of an ended UE context was for (its context is
    /// gone when the answer comes): the UE as its failure line names it, the association
    /// and the RAN-UE-NGAP-ID.
    releasing: HashMap<u64, (String, u32, u32)>,
    /// Who each outstanding purge was for, as in `releasing`.
    purging: HashMap<u64, (String, u32, u32)>,
    /// The UE's 5GSM message each outstanding Nsmf call carries, sent back to the UE if the
    /// call fails without an answer for it (see [`session`]).
    sm_n1: HashMap<u64, Vec<u8>>,
    /// SUPI → AMF-UE-NGAP-ID of the UEs with PDU sessions this worker set up, so an
    /// N1N2MessageTransfer naming the SUPI finds its UE (see [`session`]).
    supi_index: HashMap<String, u64>,
    /// SUPI → AMF-UE-NGAP-ID of the registered UEs with an N2 connection here, so that the
    /// UDM's deregistration notification (which names the SUPI) finds its UE.
    connected_supi: HashMap<String, u64>,
    stats: AmfStats,
    sm_stats: session::SessionStats,
    /// The TS 28.552 measurements.
    pm: Pm,
    /// Registered UEs counted up by this worker minus those counted down, wrapping: in the
    /// locking baseline a UE registered on one worker may deregister on another, so only
    /// the sum over the workers is the gauge.
    registered: u64,
    /// The output of the step in progress, taken as [`Effects`] when it ends.
    out: Effects,
    /// Registrations in flight on this worker (see [`Local::account`]).
    in_flight: u64,
    /// The overload state of `in_flight`, with overload control on.
    overload: Option<Hysteresis>,
}

/// What one procedure step hands back to be done after its access to the UE context:
/// messages to send, SBI calls and answers, changes to the timer list, in order, and the
/// SUPIs whose kept idle context a new registration has superseded.
#[derive(Debug, Default)]
struct Effects {
    actions: Vec<Action>,
    timers: Vec<TimerOp>,
    superseded: Vec<String>,
}

/// A change to the worker's timer list, keyed by (deadline, AMF-UE-NGAP-ID).
#[derive(Debug, Clone, Copy)]
enum TimerOp {
    Set(Instant, u64),
    Cancel(Instant, u64),
}

impl<M, P> Amf<M, P>
where
    M: ContextMap<u64, UeContext>,
    P: ContextMap<u32, IdleUe>,
{
    /// An AMF worker with its (possibly shared) maps.
    pub fn new(cfg: AmfConfig, ues: M, idle: P) -> Self {
        let snn = cfg.serving_network_name();
        let overload = cfg
            .overload
            .map(|o| Hysteresis::new(o.high_mark, o.low_mark));
        Self {
            ues,
            idle,
            local: Local {
                in_flight: 0,
                overload,
                cfg,
                snn,
                next_ue: 0,
                next_tmsi: 0,
                next_call: 0,
                calls: HashMap::new(),
                releasing: HashMap::new(),
                purging: HashMap::new(),
                sm_n1: HashMap::new(),
                supi_index: HashMap::new(),
                connected_supi: HashMap::new(),
                stats: AmfStats::default(),
                sm_stats: session::SessionStats::default(),
                pm: Pm::default(),
                registered: 0,
                out: Effects::default(),
            },
            timers: BTreeSet::new(),
            idle_order: VecDeque::new(),
            idle_supi: HashMap::new(),
            actions: VecDeque::new(),
            overload_changes: VecDeque::new(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> AmfStats {
        AmfStats {
            registrations_in_flight: self.local.in_flight,
            ..self.local.stats
        }
    }

    /// The TS 28.552 measurements of this worker.
    pub fn pm(&self) -> &Pm {
        &self.local.pm
    }

    /// Each measurement slot changed since the last call, with its value.
    pub fn drain_pm(&mut self, f: impl FnMut(usize, u64)) {
        self.local.pm.drain_changed(f)
    }

    /// This worker's share of the registered-UE gauge: counted up minus counted down,
    /// wrapping (see the field). Summed with wrapping over the workers it is the number of
    /// UEs registered now.
    pub fn registered_share(&self) -> u64 {
        self.local.registered
    }

    /// Registrations in flight on this worker: the overload signal.
    pub fn registrations_in_flight(&self) -> u64 {
        self.local.in_flight
    }

    /// Whether this worker is overloaded (rejecting new registrations with #22).
    pub fn is_overloaded(&self) -> bool {
        self.local.overload.is_some_and(|h| h.is_active())
    }

    /// The next overload transition of this worker: `true` it entered overload, `false` it
    /// left it.
    pub fn poll_overload(&mut self) -> Option<bool> {
        self.overload_changes.pop_front()
    }

    /// The configuration.
    pub fn config(&self) -> &AmfConfig {
        &self.local.cfg
    }

    /// Connected UE contexts (in the locking baseline: of every worker).
    pub fn contexts(&self) -> usize {
        self.ues.len()
    }

    /// UEs kept without an N2 connection.
    pub fn idle_contexts(&self) -> usize {
        self.idle.len()
    }

    /// A copy of the context of a connected UE.
    pub fn ue(&mut self, amf_ue_ngap_id: u64) -> Option<UeContext> {
        self.ues.with(&amf_ue_ngap_id, |u| u.cloned())
    }

    /// A copy of what is kept of a UE without an N2 connection.
    pub fn idle_ue(&mut self, tmsi: u32) -> Option<IdleUe> {
        self.idle.with(&tmsi, |u| u.cloned())
    }

    /// The next piece of work for the runtime.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`Amf::handle_timeout`] should run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().map(|(t, _)| *t)
    }

    /// Carries out what a step handed back: its messages and calls go to the runtime's
    /// queue, its timer changes to the timer list.
    fn apply(&mut self, e: Effects) {
        self.actions.extend(e.actions);
        for op in e.timers {
            match op {
                TimerOp::Set(t, id) => self.timers.insert((t, id)),
                TimerOp::Cancel(t, id) => self.timers.remove(&(t, id)),
            };
        }
        for supi in e.superseded {
            self.forget_idle(&supi);
        }
        let l = &mut self.local;
        if let Some(change) = l.overload.as_mut().and_then(|h| h.update(l.in_flight)) {
            if change {
                l.stats.overload_starts += 1;
                warn!(
                    worker = l.cfg.worker.0,
                    in_flight = l.in_flight,
                    "AMF worker overloaded: new registrations rejected with #22"
                );
            } else {
                debug!(
                    worker = l.cfg.worker.0,
                    in_flight = l.in_flight,
                    "AMF worker recovered"
                );
            }
            self.overload_changes.push_back(change);
        }
    }

    /// Applies what was produced outside any UE context access (error indications,
    /// refusals).
    fn flush(&mut self) {
        let e = self.local.take();
        self.apply(e);
    }

    // ---- NGAP in ----

    /// One UE-associated NGAP message received on `assoc`/`stream` from gNB `gnb_id`;
    /// `ready` says whether NG Setup succeeded on the association
    /// ([`crate::amf::n2::AmfN2::is_ready`]). Never panics, whatever `bytes` holds.
    pub fn handle_ngap(
        &mut self,
        now: Instant,
        assoc: u32,
        stream: u16,
        ready: bool,
        gnb_id: u32,
        bytes: &[u8],
    ) {
        self.on_ngap(now, assoc, stream, ready, gnb_id, bytes);
        self.flush();
    }

    fn on_ngap(
        &mut self,
        now: Instant,
        assoc: u32,
        stream: u16,
        ready: bool,
        gnb_id: u32,
        bytes: &[u8],
    ) {
        let l = &mut self.local;
        let pdu = match ngap::decode(bytes) {
            Ok(p) => p,
            Err(e) => {
                // TS 38.413 §10.2: transfer syntax error.
                debug!(assoc, error = %e, "undecodable NGAP message");
                return l.error_indication(
                    assoc,
                    stream,
                    None,
                    None,
                    ProtocolCause::TransferSyntaxError.into(),
                    None,
                );
            }
        };
        let (amf_id, ran_id) = pdu.ue_ngap_ids();
        match pdu.check() {
            Ok(Some(fault)) if fault.rejects() => {
                // §10.3.4.2, §10.3.5, §10.3.6: abstract syntax error.
                let diag = pdu.diagnostics_for_error_indication(&fault.ies);
                return l.error_indication(
                    assoc,
                    stream,
                    amf_id,
                    ran_id,
                    fault.cause.into(),
                    Some(diag),
                );
            }
            Ok(_) => {}
            Err(_) => {
                return l.error_indication(
                    assoc,
                    stream,
                    amf_id,
                    ran_id,
                    ProtocolCause::TransferSyntaxError.into(),
                    None,
                )
            }
        }
        if !ready {
            // TS 38.413 §8.7.1.1: UE-associated signalling needs NG Setup first.
            return l.not_compatible(assoc, stream, &pdu);
        }
        // Every UE-associated message names its UE by the same two IDs (TS 38.413
        // §9.3.3.1-2) and goes through `on_ue`; only the parse and the step differ.
        macro_rules! on_ue {
            ($msg:ty, |$l:ident, $ue:ident, $m:ident| $step:expr) => {
                match <$msg>::parse(&pdu) {
                    Ok($m) => {
                        let (amf, ran) = ($m.amf_ue_ngap_id, $m.ran_ue_ngap_id);
                        let what = pdu.procedure_name();
                        self.on_ue(assoc, stream, amf, ran, |$l, $ue| {
                            $l.trace_ngap($ue, "←", what);
                            $step
                        })
                    }
                    Err(e) => l.parse_failed(assoc, stream, &pdu, &e),
                }
            };
        }
        match pdu.kind() {
            MessageKind::InitialUeMessage => match InitialUeMessage::parse(&pdu) {
                Ok(m) => self.on_initial_ue_message(now, assoc, stream, gnb_id, m),
                Err(e) => l.parse_failed(assoc, stream, &pdu, &e),
            },
            MessageKind::UplinkNasTransport => on_ue!(UplinkNasTransport, |l, ue, m| {
                l.on_uplink_nas(now, ue, &m.nas_pdu);
                false
            }),
            MessageKind::InitialContextSetupResponse => {
                on_ue!(InitialContextSetupResponse, |l, ue, _m| {
                    if ue.state == UeState::WaitIcsResponse {
                        ue.state = UeState::WaitRegistrationComplete;
                        ue.as_context = true;
                    } else {
                        l.not_compatible(assoc, stream, &pdu);
                    }
                    false
                })
            }
            MessageKind::InitialContextSetupFailure => {
                on_ue!(InitialContextSetupFailure, |l, ue, m| {
                    debug!(amf_ue_ngap_id = m.amf_ue_ngap_id, cause = %m.cause, "initial context setup failed");
                    // TS 23.502 §4.2.2.2.2: without an access stratum context the
                    // registration cannot complete; release the connection and keep
                    // the security context.
                    let park = ue.sec.is_some();
                    l.release(now, ue, NasCause::Unspecified.into(), park);
                    false
                })
            }
            MessageKind::UeContextReleaseRequest => on_ue!(UeContextReleaseRequest, |l, ue, m| {
                // TS 23.502 §4.2.6: AN release; a registered UE keeps its context.
                let park = ue.state == UeState::Registered || ue.park;
                l.release(now, ue, m.cause, park);
                false
            }),
            MessageKind::UeContextReleaseComplete => {
                on_ue!(UeContextReleaseComplete, |l, ue, _m| {
                    // The N2 part is gone: the context leaves the map in this access.
                    let done = ue.state == UeState::Releasing;
                    if !done {
                        l.not_compatible(assoc, stream, &pdu);
                    }
                    done
                })
            }
            MessageKind::PduSessionResourceSetupResponse => {
                on_ue!(ngap::PduSessionResourceSetupResponse, |l, ue, m| {
                    l.on_setup_response(ue, m);
                    false
                })
            }
            MessageKind::PduSessionResourceReleaseResponse => {
                on_ue!(ngap::PduSessionResourceReleaseResponse, |l, ue, m| {
                    l.on_release_response(ue, m);
                    false
                })
            }
            MessageKind::NasNonDeliveryIndication | MessageKind::ErrorIndication => {
                debug!(assoc, procedure = pdu.procedure_name(), "noted");
            }
            _ => l.not_compatible(assoc, stream, &pdu),
        }
    }

    /// Runs `step` on the context a UE-associated message names, in one access to the map,
    /// if and only if the message may act on it: owned here, on its association, with its
    /// RAN-UE-NGAP-ID (TS 38.413 §10.6). Otherwise answers with an ERROR INDICATION.
    /// `step` answers whether the N2 part of the UE is gone: the context then leaves the
    /// map in the same access and its release is finished.
    fn on_ue(
        &mut self,
        assoc: u32,
        stream: u16,
        amf: u64,
        ran: u32,
        step: impl FnOnce(&mut Local, &mut UeContext) -> bool,
    ) {
        let unknown = RadioNetworkCause::UnknownLocalUENGAPID;
        let l = &mut self.local;
        if !M::SHARED && owner_of_amf_ue_ngap_id(amf, l.cfg.workers) != Some(l.cfg.worker) {
            return l.error_indication(assoc, stream, Some(amf), Some(ran), unknown.into(), None);
        }
        let ((refused, effects), gone) = self.ues.with_remove(&amf, |u| {
            let (refused, gone) = match u {
                Some(ue) if ue.assoc == assoc && ue.ran_ue_ngap_id == ran => {
                    let gone = step(l, ue);
                    l.account(ue);
                    (None, gone)
                }
                Some(ue) if ue.assoc == assoc => {
                    (Some(RadioNetworkCause::InconsistentRemoteUENGAPID), false)
                }
                // Another gNB's UE: to this association the id is unknown.
                _ => (Some(unknown), false),
            };
            ((refused, l.take()), gone)
        });
        self.apply(effects);
        if let Some(c) = refused {
            let l = &mut self.local;
            l.error_indication(assoc, stream, Some(amf), Some(ran), c.into(), None);
        }
        if let Some(ue) = gone {
            self.finish_release(ue);
        }
    }

    fn on_initial_ue_message(
        &mut self,
        now: Instant,
        assoc: u32,
        stream: u16,
        gnb_id: u32,
        m: InitialUeMessage,
    ) {
        let octets = &m.nas_pdu;
        let header = octets.get(1).map(|h| h & 0x0f);
        // The initial NAS message is a REGISTRATION REQUEST, plain or integrity protected
        // (TS 24.501 §4.4.6); its 5GMM header sits after the security header if any.
        let inner = match header {
            Some(0) => octets.get(..),
            Some(_) => octets.get(7..),
            None => None,
        };
        let mt = inner.and_then(|i| i.get(2)).copied();
        if header == Some(0) && mt != Some(nas::message_type::REGISTRATION_REQUEST) {
            // §4.4.4.3: nothing but the listed messages is processed unprotected, and
            // this AMF has no context yet to read anything else with.
            self.local.stats.unprotected_discarded += 1;
            debug!(assoc, gnb_id, message_type = ?mt, "initial NAS message discarded");
            return;
        }
        // TS 23.501 §5.19.5.2, TS 24.501 §5.5.1.2.5: a worker at its context limit or in
        // overload rejects the registration with #22 and T3346 before reading it.
        let held = self.ues.len_hint();
        let l = &mut self.local;
        let limit = l.cfg.max_ue_contexts.saturating_mul(if M::SHARED {
            usize::from(l.cfg.workers.count())
        } else {
            1
        });
        if held >= limit.saturating_add(reject_headroom(limit)) {
            l.stats.initial_ue_dropped += 1;
            debug!(
                assoc,
                gnb_id, held, "INITIAL UE MESSAGE dropped: no room even to reject"
            );
            return;
        }
        let refusal = if held >= limit {
            Some(Refusal::ContextLimit)
        } else if l.overload.is_some_and(|h| h.is_active()) {
            Some(Refusal::Overload)
        } else {
            None
        };
        let id = amf_ue_ngap_id(l.cfg.worker, l.next_ue);
        l.next_ue = l.next_ue.wrapping_add(1);
        let mut ue = UeContext::new(id, m.ran_ue_ngap_id, assoc, stream);
        l.stats.ues_created += 1;
        if let Some(r) = refusal {
            // Rejected before it is read: its kind from the type octet alone.
            ue.reg_kind = RegKind::of_plain_request(inner);
            l.pm.count(Counter::Req(ue.reg_kind));
            l.congestion_reject(now, &mut ue, r);
            return self.insert_new(ue);
        }
        // The new context is stepped before it is inserted: nobody else can know its id
        // yet, and the insertion is its one access to the map.
        if header == Some(0) {
            match nas::RegistrationRequest::parse(octets) {
                Ok(req) => l.start_registration(now, &mut ue, req, false),
                Err(e) => l.unreadable_registration(now, &mut ue, inner, e.cause()),
            }
            return self.insert_new(ue);
        }
        // A protected REGISTRATION REQUEST: the 5G-GUTI inside names the context to
        // verify it with.
        let plain_req = inner.map(nas::RegistrationRequest::parse);
        let Some(Ok(req)) = plain_req else {
            // Ciphered or malformed: nothing can be read.
            let cause = match plain_req {
                Some(Err(e)) => e.cause(),
                _ => FiveGmmCause::SemanticallyIncorrectMessage,
            };
            l.unreadable_registration(now, &mut ue, inner, cause);
            return self.insert_new(ue);
        };
        let kept = match &req.mobile_identity {
            MobileIdentity::Guti(g) => self.take_idle(g),
            _ => None,
        };
        let l = &mut self.local;
        let Some(kept) = kept else {
            l.start_registration(now, &mut ue, req, false);
            return self.insert_new(ue);
        };
        ue.supi = Some(kept.supi.clone());
        ue.guti = Some(kept.guti);
        ue.kamf = Some(kept.kamf.clone());
        ue.caps = kept.caps;
        ue.allowed_nssai = kept.allowed_nssai.clone();
        ue.default_dnns = kept.default_dnns.clone();
        ue.registered = kept.registered;
        let mut sec = kept.sec;
        match sec.unprotect(octets, Direction::Uplink) {
            Ok(u) => {
                ue.last_ul_count = u.count;
                ue.sec = Some(sec);
                ue.secured = true;
                // Read again from the verified octets: they are what counts.
                match nas::RegistrationRequest::parse(&u.plain) {
                    Ok(req) => l.start_registration(now, &mut ue, req, true),
                    Err(e) => l.unreadable_registration(now, &mut ue, u.plain.get(..), e.cause()),
                }
            }
            Err(e) => {
                // §4.4.4.3: a REGISTRATION REQUEST that fails the integrity check is
                // still processed, by authenticating the UE again.
                debug!(amf_ue_ngap_id = id, error = %e, "initial registration request fails integrity check");
                l.stats.mac_failures += 1;
                ue.sec = Some(sec);
                l.start_registration(now, &mut ue, req, false);
            }
        }
        self.insert_new(ue);
    }

    /// A new context enters the map (replacing any left under a reused id, as a
    /// wrapped-around allocation would), then the output of its first step goes out.
    fn insert_new(&mut self, mut ue: UeContext) {
        self.local.account(&mut ue);
        if let Some(mut old) = self.ues.insert(ue.amf_ue_ngap_id, ue) {
            self.local.uncount(&old);
            self.local.set_registered(&mut old, false);
        }
        self.flush();
    }

    /// The kept context of a 5G-GUTI this AMF allocated, taken out of the idle map.
    fn take_idle(&mut self, g: &Guti) -> Option<IdleUe> {
        let gu = &self.local.cfg.guami;
        if g.plmn != gu.plmn
            || g.amf_region != gu.amf_region_id
            || g.amf_set != gu.amf_set_id
            || g.amf_pointer != gu.amf_pointer
        {
            return None;
        }
        let w = (self.local.cfg.worker, self.local.cfg.workers);
        if !P::SHARED && owner_of_tmsi(g.tmsi, w.1) != Some(w.0) {
            return None;
        }
        let kept = self.idle.remove(&g.tmsi).filter(|k| k.guti == *g)?;
        self.unindex_idle(&kept.supi, g.tmsi);
        Some(kept)
    }

    /// Drops the idle context this worker kept for `supi`, if any: the SUPI has registered
    /// again, with a SUCI or a 5G-GUTI of another AMF, and its old 5G-GUTI and security
    /// context are stale (TS 23.502 §4.2.2.2.2: the AMF holds one UE context per SUPI).
    fn forget_idle(&mut self, supi: &str) {
        let Some(t) = self.idle_supi.remove(supi) else {
            return;
        };
        // Only the SUPI's own context goes: in the locking baseline another worker may
        // have taken it (a registration with its 5G-GUTI) since this worker kept it.
        let (registered, _) = self.idle.with_remove(&t, |k| match k {
            Some(k) if k.supi == supi => (k.registered, true),
            _ => (false, false),
        });
        if registered {
            self.local.unregister_one();
        }
    }

    /// The index entry of `supi`, if it still names the idle context `tmsi`.
    fn unindex_idle(&mut self, supi: &str, tmsi: u32) {
        if self.idle_supi.get(supi) == Some(&tmsi) {
            self.idle_supi.remove(supi);
        }
    }

    /// The N2 part is gone: the context has left the connected map, and what a later
    /// registration with the 5G-GUTI needs is kept if asked for.
    fn finish_release(&mut self, mut ue: UeContext) {
        self.local.stats.releases += 1;
        if let Some(supi) = &ue.supi {
            if self.local.connected_supi.get(supi) == Some(&ue.amf_ue_ngap_id) {
                self.local.connected_supi.remove(supi);
            }
        }
        self.local.uncount(&ue);
        self.local.release_sm_contexts(&mut ue);
        self.flush();
        if let Some((t, _)) = ue.timer {
            self.timers.remove(&(t, ue.amf_ue_ngap_id));
        }
        let UeContext {
            park,
            supi,
            guti,
            kamf,
            sec,
            caps,
            allowed_nssai,
            default_dnns,
            mut registered,
            ..
        } = ue;
        if let (true, Some(supi), Some(guti), Some(kamf), Some(sec)) = (park, supi, guti, kamf, sec)
        {
            let t = guti.tmsi;
            self.forget_idle(&supi);
            self.idle_supi.insert(supi.clone(), t);
            self.idle.insert(
                t,
                IdleUe {
                    supi,
                    guti,
                    kamf,
                    sec,
                    caps,
                    allowed_nssai,
                    default_dnns,
                    registered,
                },
            );
            self.idle_order.push_back(t);
            registered = false;
            // Bounded: the oldest kept context goes first.
            while self.idle_order.len() > self.local.cfg.max_idle {
                if let Some(old) = self.idle_order.pop_front() {
                    if let Some(k) = self.idle.remove(&old) {
                        self.unindex_idle(&k.supi, old);
                        if k.registered {
                            self.local.unregister_one();
                        }
                    }
                }
            }
        }
        // Not kept: a registered UE whose context is gone is registered no more.
        if registered {
            self.local.unregister_one();
        }
    }

    /// The reply to call `call_id`.
    pub fn handle_sbi_reply(
        &mut self,
        now: Instant,
        call_id: u64,
        status: StatusCode,
        body: &[u8],
    ) {
        self.handle_sbi_response(now, call_id, status, None, None, body)
    }

    /// The reply to call `call_id` with the headers the Nsmf answers need: `Location` of a
    /// created SM context and the `Content-Type` of a multipart body.
    pub fn handle_sbi_response(
        &mut self,
        now: Instant,
        call_id: u64,
        status: StatusCode,
        location: Option<&str>,
        content_type: Option<&str>,
        body: &[u8],
    ) {
        let l = &mut self.local;
        let Some((id, kind)) = l.calls.remove(&call_id) else {
            l.stats.stray_replies += 1;
            return;
        };
        match kind {
            // The UE context that asked is gone by design.
            CallKind::SmRelease => return l.on_sm_released(call_id, status, body),
            CallKind::UecmPurge => return l.on_purged(call_id, status, body),
            CallKind::SdmSubscribe => return l.on_sdm_subscribed(status),
            CallKind::SmOrphan => return l.on_orphan_released(status),
            _ => {}
        }
        let effects = self.ues.with(&id, |u| {
            let ue = u?;
            l.on_sbi_response(now, ue, call_id, kind, status, location, content_type, body);
            l.account(ue);
            Some(l.take())
        });
        match effects {
            Some(e) => self.apply(e),
            None => {
                let l = &mut self.local;
                l.sm_n1.remove(&call_id);
                l.stats.stray_replies += 1;
                if let CallKind::SmCreate(psi) = kind {
                    // The UE went while its SM context was being created.
                    l.orphan_created(id, psi, status, location);
                    self.flush();
                }
            }
        }
    }

    // ---- timers ----

    /// Runs the timers whose time is up: retransmissions, aborts and release guards.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(t, id)) = self.timers.first() {
            if t > now {
                break;
            }
            self.timers.pop_first();
            let l = &mut self.local;
            let (effects, gone) = self.ues.with_remove(&id, |u| match u {
                Some(ue) => {
                    let gone = l.on_timer(now, ue, t);
                    l.account(ue);
                    (l.take(), gone)
                }
                None => (Effects::default(), false),
            });
            self.apply(effects);
            if let Some(ue) = gone {
                self.finish_release(ue);
            }
        }
    }
}

/// Why a registration is refused before it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// [`AmfConfig::max_ue_contexts`] reached.
    ContextLimit,
    /// The worker is overloaded.
    Overload,
}

impl Local {
    /// The output of the step that just ran.
    fn take(&mut self) -> Effects {
        std::mem::take(&mut self.out)
    }

    /// Keeps the count of registrations in flight in step with `ue`'s state after a step.
    /// In the locking baseline a UE's steps may run on several workers, so each worker's
    /// count is what it saw start and end (never below zero); their sum is the AMF's.
    fn account(&mut self, ue: &mut UeContext) {
        let registering = ue.state.is_registering();
        if registering != ue.counted {
            ue.counted = registering;
            if registering {
                self.in_flight += 1;
            } else {
                self.in_flight = self.in_flight.saturating_sub(1);
            }
        }
    }

    /// A context that leaves the map no longer counts.
    fn uncount(&mut self, ue: &UeContext) {
        if ue.counted {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
    }

    /// Counts the UE among the registered ones, or no longer.
    fn set_registered(&mut self, ue: &mut UeContext, to: bool) {
        if ue.registered != to {
            ue.registered = to;
            if to {
                self.registered = self.registered.wrapping_add(1);
            } else {
                self.unregister_one();
            }
        }
    }

    /// One registered UE fewer: its context went, or stopped counting.
    fn unregister_one(&mut self) {
        self.registered = self.registered.wrapping_sub(1);
    }

    /// A REGISTRATION REQUEST that cannot be read whole: counted under the kind its type
    /// octet names (the fourth of the plain 5GMM message), then rejected.
    fn unreadable_registration(
        &mut self,
        now: Instant,
        ue: &mut UeContext,
        plain: Option<&[u8]>,
        cause: FiveGmmCause,
    ) {
        ue.reg_kind = RegKind::of_plain_request(plain);
        self.pm.count(Counter::Req(ue.reg_kind));
        self.registration_reject(now, ue, cause);
    }

    /// REGISTRATION REJECT with #22 Congestion and T3346 (TS 24.501 §5.5.1.2.5, §5.3.9),
    /// then the release.
    fn congestion_reject(&mut self, now: Instant, ue: &mut UeContext, why: Refusal) {
        match why {
            Refusal::ContextLimit => self.stats.context_limit_rejects += 1,
            Refusal::Overload => self.stats.congestion_rejects += 1,
        }
        self.stats.registration_rejects += 1;
        self.pm
            .count(Counter::Fail(ue.reg_kind, FiveGmmCause::Congestion.value()));
        self.set_registered(ue, false);
        let secs = u32::try_from(self.cfg.t3346.as_secs()).unwrap_or(u32::MAX);
        debug!(
            amf_ue_ngap_id = ue.amf_ue_ngap_id,
            ?why,
            t3346_s = secs,
            "registration rejected: congestion"
        );
        let reject = RegistrationReject::congestion(TimerValue::Seconds(secs));
        self.send_nas(ue, &NasMessage::RegistrationReject(reject));
        self.release(now, ue, NasCause::Unspecified.into(), false);
    }

    /// Whether `ue`'s messages are logged (`--trace-supi`).
    fn traced(&self, ue: &UeContext) -> bool {
        self.cfg.trace.wants(ue.supi.as_deref())
    }

    /// A trace line for a plain NAS message of a traced UE, by its name only.
    fn trace_nas(&self, ue: &UeContext, arrow: &str, plain: &[u8]) {
        if self.traced(ue) {
            let name = nas::plain_message_name(plain).unwrap_or("protected NAS message");
            tracing::info!(target: crate::trace::TARGET, supi = %ue.supi.as_deref().unwrap_or_default(), amf_ue_ngap_id = ue.amf_ue_ngap_id, "NAS {arrow} {name}");
        }
    }

    /// A trace line for an NGAP message of a traced UE.
    fn trace_ngap(&self, ue: &UeContext, arrow: &str, procedure: &str) {
        if self.traced(ue) {
            tracing::info!(target: crate::trace::TARGET, supi = %ue.supi.as_deref().unwrap_or_default(), amf_ue_ngap_id = ue.amf_ue_ngap_id, ran_ue_ngap_id = ue.ran_ue_ngap_id, assoc = ue.assoc, "NGAP {arrow} {procedure}");
        }
    }

    /// Sends a UE-associated NGAP message on the UE's association and stream.
    fn emit_ue(&mut self, ue: &UeContext, pdu: Vec<u8>) {
        if self.traced(ue) {
            let procedure = ngap::decode(&pdu).map_or("NGAP message", |p| p.procedure_name());
            self.trace_ngap(ue, "→", procedure);
        }
        self.emit(Action::Ngap {
            assoc: ue.assoc,
            stream: ue.stream,
            pdu,
        });
    }

    fn emit(&mut self, a: Action) {
        self.out.actions.push(a);
    }

    fn parse_failed(&mut self, assoc: u32, stream: u16, pdu: &NgapPdu, e: &ngap::ParseError) {
        debug!(assoc, procedure = pdu.procedure_name(), error = %e, "NGAP message refused");
        if let Some(fault) = e.fault() {
            let (amf, ran) = pdu.ue_ngap_ids();
            let diag = pdu.diagnostics_for_error_indication(&fault.ies);
            self.error_indication(assoc, stream, amf, ran, fault.cause.into(), Some(diag));
        }
    }

    fn not_compatible(&mut self, assoc: u32, stream: u16, pdu: &NgapPdu) {
        let (amf, ran) = pdu.ue_ngap_ids();
        let diag = pdu.diagnostics_for_error_indication(&[]);
        self.error_indication(
            assoc,
            stream,
            amf,
            ran,
            ProtocolCause::MessageNotCompatibleWithReceiverState.into(),
            Some(diag),
        );
    }

    /// A reply to call `call_id` of `kind` for `ue`.
    #[allow(clippy::too_many_arguments)]
    fn on_sbi_response(
        &mut self,
        now: Instant,
        ue: &mut UeContext,
        call_id: u64,
        kind: CallKind,
        status: StatusCode,
        location: Option<&str>,
        content_type: Option<&str>,
        body: &[u8],
    ) {
        if let CallKind::SmCreate(psi) | CallKind::SmUpdate(psi) = kind {
            // Session calls run beside the 5GMM procedures: they do not take the UE's
            // single call slot.
            let reply = session::SmReply {
                status,
                location,
                content_type,
                body,
                sent: self.sm_n1.remove(&call_id),
            };
            return match kind {
                CallKind::SmCreate(_) => self.on_sm_created(ue, psi, reply),
                _ => self.on_sm_updated(ue, psi, reply),
            };
        }
        if ue.pending_call != Some(call_id) {
            self.stats.stray_replies += 1;
            return;
        }
        ue.pending_call = None;
        let status = status.as_u16();
        match kind {
            CallKind::AuthVector => self.on_auth_vector(now, ue, status, body),
            CallKind::Confirmation => self.on_confirmation(now, ue, status, body),
            CallKind::Uecm => self.on_uecm(now, ue, status, body),
            CallKind::Sdm => self.on_sdm(now, ue, status, body),
            CallKind::SmfSelect => self.on_smf_select(now, ue, status, body),
            CallKind::SmCreate(_)
            | CallKind::SmUpdate(_)
            | CallKind::SmRelease
            | CallKind::UecmPurge
            | CallKind::SdmSubscribe
            | CallKind::SmOrphan => {}
        }
    }

    /// Timer `t` of `ue` is up (if it is still the UE's timer): a retransmission, an abort,
    /// or the end of a release guard, when the answer is that the N2 part is gone.
    fn on_timer(&mut self, now: Instant, ue: &mut UeContext, t: Instant) -> bool {
        let kind = match ue.timer {
            Some((d, k)) if d == t => k,
            _ => return false,
        };
        ue.timer = None;
        match kind {
            TimerKind::ReleaseGuard => return true,
            TimerKind::T3560 | TimerKind::T3550 | TimerKind::T3570 => {
                if ue.retransmissions < MAX_RETRANSMISSIONS {
                    ue.retransmissions += 1;
                    self.stats.retransmissions += 1;
                    if let Some((plain, header)) = ue.retransmit.clone() {
                        if header == SecurityHeaderType::Plain {
                            self.downlink(ue, plain);
                        } else {
                            self.send_protected(ue, &plain, header);
                        }
                    }
                    self.start_timer(now, ue, kind);
                } else {
                    // §5.4.1.3.7 b, §5.4.2.7 b, §5.5.1.2.8 a: abort on the fifth
                    // expiry and release the connection.
                    self.stats.aborted += 1;
                    let what = match kind {
                        TimerKind::T3550 => "T3550 expired (no REGISTRATION COMPLETE)",
                        TimerKind::T3570 => "T3570 expired (no IDENTITY RESPONSE)",
                        _ => "T3560 expired (no answer to the AUTHENTICATION or SECURITY MODE COMMAND)",
                    };
                    ue.log_failure("registration", &what, None);
                    let park = kind == TimerKind::T3550 && ue.sec.is_some();
                    self.release(now, ue, NasCause::Unspecified.into(), park);
                }
            }
        }
        false
    }

    // ---- NAS in ----

    fn on_uplink_nas(&mut self, now: Instant, ue: &mut UeContext, octets: &[u8]) {
        let header = octets.get(1).map(|h| h & 0x0f);
        let (plain, header_type) = if header.is_some_and(|h| h != 0) {
            let Some(sec) = ue.sec.as_mut() else {
                // §4.4.4.3: no context to verify it with.
                self.stats.mac_failures += 1;
                return;
            };
            match sec.unprotect(octets, Direction::Uplink) {
                Ok(u) => {
                    ue.last_ul_count = u.count;
                    (u.plain, u.header_type)
                }
                Err(NasSecurityError::MacFailure) => {
                    // §4.4.4.3: a message whose integrity check fails is discarded.
                    self.stats.mac_failures += 1;
                    debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, "uplink NAS MAC failure");
                    return;
                }
                Err(e) => {
                    self.stats.mac_failures += 1;
                    debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, error = %e, "uplink NAS not verified");
                    return;
                }
            }
        } else {
            let mt = nas::plain_message_type(octets);
            let allowed = mt.is_some_and(|t| nas::may_be_unprotected(t, Direction::Uplink));
            if mt.is_some() && (!allowed || ue.secured) {
                // §4.4.4.3: only the listed messages are processed without integrity
                // protection, and none once the secure exchange is established.
                self.stats.unprotected_discarded += 1;
                debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, message_type = ?mt, "unprotected NAS message discarded");
                return;
            }
            (octets.to_vec(), SecurityHeaderType::Plain)
        };
        self.trace_nas(ue, "←", &plain);
        if header_type != SecurityHeaderType::Plain
            && plain.get(2) == Some(&nas::sm_ue::UL_NAS_TRANSPORT)
        {
            // TS 24.501 §5.4.5.2: 5GSM messages come in UL NAS TRANSPORT, never plain.
            ue.secured = true;
            return self.on_ul_nas_transport(ue, &plain);
        }
        let msg = match NasMessage::parse(&plain) {
            Ok(m) => m,
            Err(e) => {
                // TS 24.501 §7: a message that cannot be read is answered with 5GMM
                // STATUS and the cause of its fault (#96 invalid mandatory information,
                // #97 message type non-existent...).
                debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, error = %e, "undecodable uplink NAS");
                return self.status(ue, e.cause());
            }
        };
        if header_type != SecurityHeaderType::Plain {
            ue.secured = true;
        }
        match msg {
            NasMessage::RegistrationRequest(req) => {
                let protected = header_type != SecurityHeaderType::Plain;
                self.start_registration(now, ue, req, protected)
            }
            NasMessage::IdentityResponse(r) if ue.state == UeState::WaitIdentity => {
                self.on_identity_response(now, ue, r.mobile_identity)
            }
            NasMessage::AuthenticationResponse(r) if ue.state == UeState::WaitAuthResponse => {
                self.on_authentication_response(now, ue, &r.res_star)
            }
            NasMessage::AuthenticationFailure(f) if ue.state == UeState::WaitAuthResponse => {
                self.on_authentication_failure(now, ue, f.cause, f.auts)
            }
            NasMessage::SecurityModeComplete(c) if ue.state == UeState::WaitSmcComplete => {
                // TS 24.501 §5.4.2.3: the complete comes under the new context, integrity
                // protected and ciphered (security header type 4).
                if header_type != SecurityHeaderType::IntegrityProtectedAndCipheredNewContext {
                    self.stats.unprotected_discarded += 1;
                    return;
                }
                self.stop_timer(ue);
                // §4.4.6: the container holds the complete REGISTRATION REQUEST, which
                // replaces the cleartext one.
                if let Some(Ok(req)) = c.registration_request() {
                    if req.ue_security_capability.is_some() {
                        ue.caps = req.ue_security_capability;
                    }
                    ue.registration = Some(req);
                }
                self.after_security(now, ue);
            }
            NasMessage::SecurityModeReject(r) if ue.state == UeState::WaitSmcComplete => {
                // §5.4.2.5: the UE refused the command; the registration cannot go on.
                debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, cause = %r.cause, "security mode rejected");
                self.stop_timer(ue);
                ue.sec = None;
                self.release(now, ue, NasCause::Unspecified.into(), false);
            }
            NasMessage::RegistrationComplete(_)
                if matches!(
                    ue.state,
                    UeState::WaitIcsResponse | UeState::WaitRegistrationComplete
                ) =>
            {
                // §5.5.1.2.4: REGISTRATION COMPLETE stops T3550.
                self.stop_timer(ue);
                ue.state = UeState::Registered;
                ue.park = true;
                self.stats.registrations += 1;
                self.set_registered(ue, true);
                if let Some(supi) = &ue.supi {
                    self.connected_supi.insert(supi.clone(), ue.amf_ue_ngap_id);
                }
            }
            NasMessage::DeregistrationRequestUeOriginating(d) => {
                // §5.5.2.2.2: accept unless switched off, then release the N2 connection.
                self.stop_timer(ue);
                self.stats.deregistrations += 1;
                self.set_registered(ue, false);
                if !d.switch_off {
                    self.send_nas(
                        ue,
                        &NasMessage::DeregistrationAcceptUeOriginating(
                            DeregistrationAcceptUeOriginating,
                        ),
                    );
                }
                let park = ue.sec.is_some() && ue.guti.is_some();
                self.uecm_purge(ue);
                self.release(now, ue, NasCause::Deregister.into(), park);
            }
            NasMessage::FiveGmmStatus(s) => {
                debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, cause = %s.cause, "5GMM STATUS received");
            }
            other => {
                // §7.4: a message not compatible with the protocol state.
                debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, message = other.name(), state = ?ue.state, "unexpected NAS message");
                self.status(ue, FiveGmmCause::MessageTypeNotCompatible);
            }
        }
    }

    /// A REGISTRATION REQUEST: `protected` when it verified under the UE's current
    /// context.
    fn start_registration(
        &mut self,
        now: Instant,
        ue: &mut UeContext,
        req: RegistrationRequest,
        protected: bool,
    ) {
        self.stop_timer(ue);
        if ue.state == UeState::Releasing {
            return;
        }
        ue.initial = req.registration_type == RegistrationType::Initial;
        ue.reg_kind = RegKind::of(req.registration_type);
        self.pm.count(Counter::Req(ue.reg_kind));
        if let Some(c) = req.ue_security_capability {
            ue.caps = Some(c);
        }
        let identity = req.mobile_identity.clone();
        ue.registration = Some(req);
        if ue.caps.is_none() {
            // §5.5.1.2.2: the UE security capability is mandatory in an initial
            // registration and this AMF has none stored.
            return self.registration_reject(now, ue, FiveGmmCause::InvalidMandatoryInformation);
        }
        match identity {
            MobileIdentity::Suci(s) => {
                ue.supi_or_suci = Some(suci_string(&s));
                self.authenticate(now, ue, None);
            }
            MobileIdentity::Guti(_) if protected && !self.cfg.always_auth => {
                // §5.5.1.3.2 / §5.5.1.2.2: the context is valid; no new authentication.
                self.accept(now, ue);
            }
            MobileIdentity::Guti(_) if ue.supi.is_some() => {
                // Known UE, but a new authentication is wanted (always_auth, or the
                // integrity check failed: §4.4.4.3).
                ue.supi_or_suci = ue.supi.clone();
                self.authenticate(now, ue, None);
            }
            _ => self.identify(now, ue),
        }
    }

    /// IDENTITY REQUEST for the SUCI (TS 24.501 §5.4.3.2), T3570.
    fn identify(&mut self, now: Instant, ue: &mut UeContext) {
        self.stats.identifications += 1;
        ue.state = UeState::WaitIdentity;
        let m = NasMessage::IdentityRequest(IdentityRequest {
            identity_type: IdentityType::Suci,
        });
        self.send_nas_retransmitted(now, ue, &m, TimerKind::T3570);
    }

    fn on_identity_response(&mut self, now: Instant, ue: &mut UeContext, id: MobileIdentity) {
        self.stop_timer(ue);
        match id {
            MobileIdentity::Suci(s) => {
                ue.supi = None;
                ue.supi_or_suci = Some(suci_string(&s));
                self.authenticate(now, ue, None);
            }
            // §5.4.3.5 c: not the identity asked for.
            _ => self.registration_reject(now, ue, FiveGmmCause::UeIdentityCannotBeDerived),
        }
    }

    // ---- authentication ----

    /// POST `ue-authentications` (TS 29.509 §5.2.2.2.2), with the resynchronisation
    /// info of a synch failure if any.
    fn authenticate(
        &mut self,
        now: Instant,
        ue: &mut UeContext,
        resync: Option<ResynchronizationInfo>,
    ) {
        let Some(id) = ue.supi_or_suci.clone() else {
            return self.identify(now, ue);
        };
        if resync.is_none() {
            // TS 24.501 §5.4.1.3.2: a new ngKSI, different from the one the UE holds.
            let ue_ksi = ue.registration.as_ref().map_or(7, |r| r.ngksi.ksi).min(7);
            let current = ue.sec.as_ref().map(|s| s.ngksi.ksi);
            let mut k = if ue_ksi >= 7 { 0 } else { (ue_ksi + 1) % 7 };
            if Some(k) == current {
                k = (k + 1) % 7;
            }
            ue.new_ksi = k;
        }
        let body = AuthenticationInfo {
            supi_or_suci: id,
            serving_network_name: self.snn.clone(),
            resynchronization_info: resync,
            pei: None,
            udm_group_id: None,
            routing_indicator: None,
            supported_features: None,
        };
        ue.state = UeState::WaitAuthVector;
        self.call(
            ue,
            CallKind::AuthVector,
            NfType::Ausf,
            Method::POST,
            build::ue_authentications(),
            &body,
        );
    }

    fn on_auth_vector(&mut self, now: Instant, ue: &mut UeContext, status: u16, body: &[u8]) {
        if status != 201 {
            return self.sbi_failed(now, ue, NfType::Ausf, status, body);
        }
        let ctx: UeAuthenticationCtx = match decode_json(body) {
            Ok(c) => c,
            Err(_) => {
                return self.registration_reject(now, ue, gmm(GmmCause::NO_SUITABLE_CELLS_IN_TA))
            }
        };
        let (AuthData5g::Av5gAka(av), Some(href)) = (&ctx.auth_data_5g, ctx.five_g_aka_href())
        else {
            return self.registration_reject(now, ue, gmm(GmmCause::NO_SUITABLE_CELLS_IN_TA));
        };
        let resyncs = ue.auth.as_ref().map_or(0, |a| a.resyncs);
        ue.auth = Some(AuthRun {
            rand: Rand::from_bytes(av.rand.0),
            hxres_star: HxresStar::from_bytes(av.hxres_star.0),
            confirm_path: confirm_link(href).to_owned(),
            resyncs,
        });
        ue.state = UeState::WaitAuthResponse;
        // TS 24.501 §5.4.1.3.2: ngKSI, ABBA, RAND and AUTN, unprotected.
        let m = NasMessage::AuthenticationRequest(AuthenticationRequest {
            ngksi: Ngksi::native(ue.new_ksi),
            abba: ABBA.to_vec(),
            rand: av.rand.0,
            autn: av.autn.0,
        });
        self.pm.count(Counter::AuthReq);
        self.send_nas_retransmitted(now, ue, &m, TimerKind::T3560);
    }

    fn on_authentication_response(&mut self, now: Instant, ue: &mut UeContext, res: &[u8; 16]) {
        self.stop_timer(ue);
        let Some(auth) = ue.auth.as_ref() else {
            return;
        };
        // TS 33.501 §6.1.3.2 step 10: the SEAF checks HRES* against HXRES* before it asks
        // the AUSF to confirm.
        let res_star = ResStar::from_bytes(res);
        if !auth
            .hxres_star
            .accepts(&kdf::hres_star(&auth.rand, &res_star))
        {
            debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, "HRES* mismatch");
            return self.authentication_reject(now, ue);
        }
        let path = auth.confirm_path.clone();
        let body = ConfirmationData {
            res_star: Some(HexBytes(*res)),
            supported_features: None,
        };
        ue.state = UeState::WaitConfirmation;
        self.call(
            ue,
            CallKind::Confirmation,
            NfType::Ausf,
            Method::PUT,
            path,
            &body,
        );
    }

    fn on_authentication_failure(
        &mut self,
        now: Instant,
        ue: &mut UeContext,
        cause: FiveGmmCause,
        auts: Option<[u8; 14]>,
    ) {
        self.stop_timer(ue);
        self.pm.count(Counter::AuthFail(cause.value()));
        match (cause, auts, ue.auth.as_mut()) {
            // TS 24.501 §5.4.1.3.7 f: synch failure: resynchronise once with the AUTS at
            // the UDM (TS 33.501 §6.1.3.3.2), then a new AUTHENTICATION REQUEST.
            (FiveGmmCause::SynchFailure, Some(auts), Some(auth)) if auth.resyncs == 0 => {
                auth.resyncs += 1;
                self.stats.resyncs += 1;
                let info = ResynchronizationInfo {
                    rand: HexBytes(*auth.rand.as_bytes()),
                    auts: HexBytes(auts),
                };
                self.authenticate(now, ue, Some(info));
            }
            // §5.4.1.3.7 c: MAC failure with a UE identified by its 5G-GUTI: ask for the
            // SUCI and start again.
            (FiveGmmCause::MacFailure, _, _)
                if ue
                    .supi_or_suci
                    .as_deref()
                    .is_some_and(|s| !s.starts_with("suci-")) =>
            {
                ue.auth = None;
                ue.supi_or_suci = None;
                self.identify(now, ue);
            }
            // A second synch failure in a row, a MAC failure with the SUCI, non-5G
            // authentication unacceptable: the network gives up (§5.4.1.3.7).
            _ => self.authentication_reject(now, ue),
        }
    }

    fn on_confirmation(&mut self, now: Instant, ue: &mut UeContext, status: u16, body: &[u8]) {
        if status != 200 {
            return self.sbi_failed(now, ue, NfType::Ausf, status, body);
        }
        let Ok(r) = decode_json::<ConfirmationDataResponse>(body) else {
            return self.registration_reject(now, ue, gmm(GmmCause::NO_SUITABLE_CELLS_IN_TA));
        };
        let (AuthResult::AuthenticationSuccess, Some(supi), Some(kseaf)) =
            (r.auth_result, r.supi, r.kseaf)
        else {
            // TS 33.501 §6.1.3.2 step 12: the AUSF said no.
            return self.authentication_reject(now, ue);
        };
        if ue.supi.as_deref().is_some_and(|s| s != supi) {
            // Another subscriber than the one whose context this is.
            return self.authentication_reject(now, ue);
        }
        // TS 33.501 Annex A.7: KAMF from KSEAF, the SUPI and ABBA.
        let kamf = Supi::parse(&supi)
            .or_else(|_| Supi::parse(supi.trim_start_matches("imsi-")))
            .and_then(|s| {
                let abba = Abba::new(&ABBA)?;
                kdf::kamf(&Kseaf::from_bytes(&kseaf.0), &s, &abba)
            });
        let Ok(kamf) = kamf else {
            return self.registration_reject(now, ue, FiveGmmCause::IllegalUe);
        };
        // TS 23.502 §4.2.2.2.2: the SUPI is now known; a context kept from its previous
        // registration is superseded by this one.
        self.out.superseded.push(supi.clone());
        ue.supi = Some(supi);
        ue.kamf = Some(kamf);
        ue.auth = None;
        self.security_mode_command(now, ue);
    }

    // ---- security mode ----

    /// SECURITY MODE COMMAND with the new context (TS 24.501 §5.4.2.2, TS 33.501
    /// §6.7.2): algorithms by the configured preference among those the UE supports,
    /// the replayed UE security capability, integrity protected with the new context
    /// (security header type 3).
    fn security_mode_command(&mut self, now: Instant, ue: &mut UeContext) {
        let (Some(caps), Some(kamf)) = (ue.caps, ue.kamf.as_ref()) else {
            return self.registration_reject(now, ue, FiveGmmCause::InvalidMandatoryInformation);
        };
        let nia = self
            .cfg
            .integrity
            .iter()
            .copied()
            .find(|a| caps.supports_nia(*a));
        let nea = self
            .cfg
            .ciphering
            .iter()
            .copied()
            .find(|a| caps.supports_nea(*a));
        let (Some(nia), Some(nea)) = (nia, nea) else {
            return self.registration_reject(now, ue, FiveGmmCause::UeSecurityCapabilitiesMismatch);
        };
        let ngksi = Ngksi::native(ue.new_ksi);
        ue.sec = Some(NasSecurityContext::new(
            ngksi,
            kdf::knas_int(kamf, nia),
            kdf::knas_enc(kamf, nea),
            nia,
            nea,
        ));
        ue.secured = false;
        ue.state = UeState::WaitSmcComplete;
        let smc = NasMessage::SecurityModeCommand(SecurityModeCommand {
            nia,
            nea,
            ngksi,
            replayed_ue_security_capability: caps,
            imeisv_request: false,
            // §4.4.6: ask for the complete initial message in the SMC COMPLETE.
            additional_security_information: Some(nas::AdditionalSecurityInformation {
                retransmit_initial_message: true,
                horizontal_derivation: false,
            }),
            abba: Some(ABBA.to_vec()),
        });
        let Ok(plain) = smc.encode() else {
            return self.registration_reject(now, ue, FiveGmmCause::ProtocolErrorUnspecified);
        };
        ue.retransmissions = 0;
        ue.retransmit = Some((
            plain.clone(),
            SecurityHeaderType::IntegrityProtectedNewContext,
        ));
        self.send_protected(ue, &plain, SecurityHeaderType::IntegrityProtectedNewContext);
        self.start_timer(now, ue, TimerKind::T3560);
    }

    /// Security is established: UECM registration for an initial registration, then the
    /// subscription; straight to the accept otherwise.
    fn after_security(&mut self, now: Instant, ue: &mut UeContext) {
        if ue.initial || ue.allowed_nssai.is_empty() {
            self.uecm_register(now, ue);
        } else {
            self.accept(now, ue);
        }
    }

    // ---- UDM ----

    /// Nudm_UECM_Registration for 3GPP access (TS 29.503 §5.3.2.2.2).
    fn uecm_register(&mut self, now: Instant, ue: &mut UeContext) {
        let Some(supi) = ue.supi.clone() else {
            return self.registration_reject(now, ue, FiveGmmCause::UeIdentityCannotBeDerived);
        };
        let Some(guami) = self.sbi_guami() else {
            return self.registration_reject(now, ue, FiveGmmCause::ProtocolErrorUnspecified);
        };
        let body = Amf3GppAccessRegistration {
            amf_instance_id: self.cfg.instance_id.clone(),
            supported_features: None,
            purge_flag: None,
            pei: None,
            ims_vo_ps: None,
            dereg_callback_uri: format!(
                "{}{}{supi}/dereg-notify",
                self.cfg.api_root,
                session::CALLBACKS
            ),
            amf_service_name_dereg: None,
            pcscf_restoration_callback_uri: None,
            initial_registration_ind: Some(ue.initial),
            emergency_registration_ind: None,
            guami,
            dr_flag: None,
            rat_type: RatType::Nr,
            urrp_indicator: None,
            ue_srvcc_capability: None,
            registration_time: None,
            no_ee_subscription_ind: None,
            supi: Some(supi.clone()),
            re_registration_required: None,
        };
        ue.state = UeState::WaitUecm;
        self.call(
            ue,
            CallKind::Uecm,
            NfType::Udm,
            Method::PUT,
            build::amf_3gpp_access_registration(&supi),
            &body,
        );
    }

    /// This AMF's GUAMI as the SBI writes it (TS 29.571 `Guami`: the AMF id in 6 hex
    /// digits).
    fn sbi_guami(&self) -> Option<sbi::model::Guami> {
        let g = &self.cfg.guami;
        let amf_id = (u32::from(g.amf_region_id) << 16)
            | (u32::from(g.amf_set_id & 0x3ff) << 6)
            | u32::from(g.amf_pointer & 0x3f);
        let b = amf_id.to_be_bytes();
        let plmn = PlmnId::new(&g.plmn.mcc_str(), &g.plmn.mnc_str())?;
        Some(sbi::model::Guami {
            plmn_id: plmn.into(),
            amf_id: HexBytes([b[1], b[2], b[3]]),
        })
    }

    /// A registered UE deregisters: the UDM is told that this AMF no longer serves it
    /// (TS 23.502 §4.5.3, TS 29.503 §5.3.2.4.2), unless `uecm_purge` is off. The answer
    /// comes after the UE context may have gone, so the call is the AMF's, not the UE's.
    fn uecm_purge(&mut self, ue: &UeContext) {
        let (true, Some(supi), Some(guami)) =
            (self.cfg.uecm_purge, ue.supi.as_deref(), self.sbi_guami())
        else {
            return;
        };
        let body = sbi::model::Amf3GppAccessRegistrationModification {
            guami,
            purge_flag: Some(true),
            pei: None,
            ims_vo_ps: None,
        };
        let Ok(body) = serde_json::to_vec(&body) else {
            return;
        };
        let call_id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        self.calls
            .insert(call_id, (ue.amf_ue_ngap_id, CallKind::UecmPurge));
        self.purging
            .insert(call_id, (ue.who().to_owned(), ue.assoc, ue.ran_ue_ngap_id));
        self.emit(Action::Call {
            call_id,
            nf: NfType::Udm,
            method: Method::PATCH,
            path: build::amf_3gpp_access_registration(supi),
            content_type: sbi::validate::MERGE_PATCH_JSON,
            body: body.into(),
        });
    }

    /// The UDM's answer to a purge: counted, and a failure gets the UE's failure line (the
    /// UDM still takes this AMF for the UE's).
    fn on_purged(&mut self, call_id: u64, status: StatusCode, body: &[u8]) {
        let who = self.purging.remove(&call_id);
        if status.is_success() {
            self.stats.purges += 1;
            return;
        }
        self.stats.purge_failures += 1;
        let cause = answer_cause(status, body);
        let (ue, assoc, ran_ue_ngap_id) = who.unwrap_or_else(|| ("unidentified".to_owned(), 0, 0));
        tracing::info!(
            ue = %ue,
            assoc,
            ran_ue_ngap_id,
            procedure = %"deregistration",
            cause = %format_args!("Nudm_UECM_Update (purge) {cause}"),
            peer = %"UDM",
            "UE procedure failed"
        );
    }

    fn on_uecm(&mut self, now: Instant, ue: &mut UeContext, status: u16, body: &[u8]) {
        if !(200..300).contains(&status) {
            return self.sbi_failed(now, ue, NfType::Udm, status, body);
        }
        let Some(supi) = ue.supi.clone() else {
            return self.registration_reject(now, ue, FiveGmmCause::UeIdentityCannotBeDerived);
        };
        // Nudm_SDM_Get am-data (TS 29.503 §5.2.2.2.3).
        ue.state = UeState::WaitSdm;
        self.call(
            ue,
            CallKind::Sdm,
            NfType::Udm,
            Method::GET,
            build::am_data(&supi),
            &(),
        );
    }

    fn on_sdm(&mut self, now: Instant, ue: &mut UeContext, status: u16, body: &[u8]) {
        if status != 200 {
            return self.sbi_failed(now, ue, NfType::Udm, status, body);
        }
        let Ok(am) = decode_json::<AccessAndMobilitySubscriptionData>(body) else {
            return self.registration_reject(now, ue, gmm(GmmCause::NO_SUITABLE_CELLS_IN_TA));
        };
        let subscribed: Vec<Snssai> = am
            .nssai
            .map(|n| {
                n.default_single_nssais
                    .into_iter()
                    .chain(n.single_nssais.unwrap_or_default())
                    .map(|s| Snssai {
                        sst: s.sst,
                        sd: s
                            .sd
                            .map(|d| u32::from_be_bytes([0, d.0[0], d.0[1], d.0[2]])),
                    })
                    .collect()
            })
            .unwrap_or_default();
        // TS 23.501 §5.15.5.2.1: allowed = requested ∩ subscribed ∩ served; without a
        // usable request, the subscribed defaults this AMF serves.
        let served: Vec<Snssai> = subscribed
            .iter()
            .copied()
            .filter(|s| self.cfg.slices.contains(s))
            .collect();
        let requested = ue
            .registration
            .as_ref()
            .and_then(|r| r.requested_nssai.clone())
            .unwrap_or_default();
        let mut allowed: Vec<Snssai> = served
            .iter()
            .copied()
            .filter(|s| requested.contains(s))
            .collect();
        if allowed.is_empty() {
            allowed = served;
        }
        allowed.truncate(8);
        if allowed.is_empty() {
            // TS 24.501 §5.5.1.2.5: #62 no network slices available.
            return self.registration_reject(now, ue, FiveGmmCause::NoNetworkSlicesAvailable);
        }
        ue.allowed_nssai = allowed;
        // TS 23.502 §4.2.2.2.2 step 14b: the SMF selection subscription data too, whose
        // default DNNs complete a PDU session request that names none (§4.3.2.2.1).
        let Some(supi) = ue.supi.clone() else {
            return self.registration_reject(now, ue, FiveGmmCause::UeIdentityCannotBeDerived);
        };
        ue.state = UeState::WaitSmfSelect;
        self.call(
            ue,
            CallKind::SmfSelect,
            NfType::Udm,
            Method::GET,
            build::smf_select_data(&supi),
            &(),
        );
    }

    /// The SMF selection subscription data: its default DNN per slice kept. Optional data
    /// (TS 29.503 §5.2.2.2.5): a UDM without it (404 DATA_NOT_FOUND, or another error)
    /// leaves the DNN to the UE and the SMF, and the registration goes on.
    fn on_smf_select(&mut self, now: Instant, ue: &mut UeContext, status: u16, body: &[u8]) {
        ue.default_dnns.clear();
        match decode_json::<SmfSelectionSubscriptionData>(body) {
            Ok(sel) if status == 200 => {
                for (key, info) in sel.subscribed_snssai_infos.into_iter().flatten() {
                    let Some(snssai) = sbi::model::Snssai::from_key(&key) else {
                        continue;
                    };
                    let snssai = session::from_model_snssai(&snssai);
                    let default = info
                        .dnn_infos
                        .iter()
                        .find(|d| d.default_dnn_indicator == Some(true))
                        .or_else(|| info.dnn_infos.first());
                    if let Some(d) = default {
                        ue.default_dnns.push((snssai, d.dnn.clone()));
                    }
                }
            }
            _ => debug!(
                amf_ue_ngap_id = ue.amf_ue_ngap_id,
                status, "no SMF selection subscription data"
            ),
        }
        self.sdm_subscribe(ue);
        self.accept(now, ue);
    }

    /// Nudm_SDM_Subscribe (TS 29.503 §5.2.2.3.2) to the UE's access and mobility data,
    /// notified at `namf-callback/v1/{supi}/sdm-notify`; the registration goes on meanwhile.
    fn sdm_subscribe(&mut self, ue: &UeContext) {
        let (true, Some(supi)) = (self.cfg.sdm_subscribe, ue.supi.as_deref()) else {
            return;
        };
        let body = sbi::model::SdmSubscription {
            nf_instance_id: self.cfg.instance_id.clone(),
            implicit_unsubscribe: Some(true),
            expires: None,
            callback_reference: format!(
                "{}{}{supi}/sdm-notify",
                self.cfg.api_root,
                session::CALLBACKS
            ),
            amf_service_name: None,
            monitored_resource_uris: vec![build::am_data(supi)],
            single_nssai: None,
            dnn: None,
            subscription_id: None,
            immediate_report: None,
            supported_features: None,
        };
        let Ok(body) = serde_json::to_vec(&body) else {
            return;
        };
        let call_id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        self.calls
            .insert(call_id, (ue.amf_ue_ngap_id, CallKind::SdmSubscribe));
        self.emit(Action::Call {
            call_id,
            nf: NfType::Udm,
            method: Method::POST,
            path: build::sdm_subscriptions(supi),
            content_type: sbi::multipart::JSON,
            body: body.into(),
        });
    }

    /// The UDM's answer to an SDM subscription: counted.
    fn on_sdm_subscribed(&mut self, status: StatusCode) {
        if status.is_success() {
            self.stats.sdm_subscriptions += 1;
        } else {
            self.stats.sdm_subscription_failures += 1;
            debug!(%status, "Nudm_SDM_Subscribe refused");
        }
    }

    // ---- accept / reject ----

    /// REGISTRATION ACCEPT (TS 24.501 §5.5.1.2.4) with a new 5G-GUTI whose 5G-TMSI names
    /// this worker, in an INITIAL CONTEXT SETUP REQUEST with KgNB; T3550.
    fn accept(&mut self, now: Instant, ue: &mut UeContext) {
        let (Some(kamf), Some(caps)) = (ue.kamf.clone(), ue.caps) else {
            return self.registration_reject(now, ue, FiveGmmCause::ProtocolErrorUnspecified);
        };
        let t = tmsi(self.cfg.worker, self.next_tmsi);
        self.next_tmsi = self.next_tmsi.wrapping_add(1) & 0x00ff_ffff;
        let g = &self.cfg.guami;
        ue.guti = Some(Guti {
            plmn: g.plmn,
            amf_region: g.amf_region_id,
            amf_set: g.amf_set_id,
            amf_pointer: g.amf_pointer,
            tmsi: t,
        });
        let accept = NasMessage::RegistrationAccept(RegistrationAccept {
            result: RegistrationResult {
                access: AccessType::ThreeGpp,
                sms_allowed: false,
            },
            guti: ue.guti,
            tai_list: self.cfg.tais.clone(),
            allowed_nssai: ue.allowed_nssai.clone(),
            t3512: Some(nas_timer(self.cfg.timers.t3512)),
            t3502: self.cfg.timers.t3502.map(|t| nas_timer(Some(t))),
        });
        let Ok(plain) = accept.encode() else {
            return self.registration_reject(now, ue, FiveGmmCause::ProtocolErrorUnspecified);
        };
        let header = SecurityHeaderType::IntegrityProtectedAndCiphered;
        if ue.as_context {
            // A registration on a connection whose AS security is already set up
            // (TS 23.502 §4.2.2.2.2 step 21): the accept goes as plain NAS transport.
            self.send_protected(ue, &plain, header);
            self.pm.count(Counter::Succ(ue.reg_kind));
            ue.state = UeState::WaitRegistrationComplete;
            ue.retransmissions = 0;
            ue.retransmit = Some((plain, header));
            return self.start_timer(now, ue, TimerKind::T3550);
        }
        self.trace_nas(ue, "→", &plain);
        let Some(nas_pdu) = ue
            .sec
            .as_mut()
            .and_then(|s| s.protect(&plain, header, Direction::Downlink).ok())
        else {
            return self.registration_reject(now, ue, FiveGmmCause::ProtocolErrorUnspecified);
        };
        // TS 33.501 §6.9.2.1.1 / Annex A.9: KgNB from KAMF and the uplink NAS COUNT of
        // the message that established or verified the security (here the last one).
        let Ok(kgnb) = kdf::kgnb(&kamf, ue.last_ul_count.as_u32()) else {
            return self.registration_reject(now, ue, FiveGmmCause::ProtocolErrorUnspecified);
        };
        let ics = InitialContextSetupRequest {
            amf_ue_ngap_id: ue.amf_ue_ngap_id,
            ran_ue_ngap_id: ue.ran_ue_ngap_id,
            ue_ambr: None,
            guami: self.cfg.guami,
            allowed_nssai: ue.allowed_nssai.clone(),
            ue_security_capabilities: UeSecurityCapabilities::from_nas(&caps),
            security_key: kgnb,
            nas_pdu: Some(nas_pdu),
        };
        match ics.encode() {
            Ok(pdu) => self.emit_ue(ue, pdu),
            Err(e) => {
                warn!(amf_ue_ngap_id = ue.amf_ue_ngap_id, error = %e, "INITIAL CONTEXT SETUP REQUEST does not encode");
                return self.release(now, ue, NasCause::Unspecified.into(), false);
            }
        }
        self.pm.count(Counter::Succ(ue.reg_kind));
        ue.state = UeState::WaitIcsResponse;
        ue.retransmissions = 0;
        ue.retransmit = Some((plain, header));
        self.start_timer(now, ue, TimerKind::T3550);
    }

    /// REGISTRATION REJECT (TS 24.501 §5.5.1.2.5), then the release of the connection.
    fn registration_reject(&mut self, now: Instant, ue: &mut UeContext, cause: FiveGmmCause) {
        self.reject_registration(now, ue, cause, None);
    }

    /// [`Self::registration_reject`] for the failure of peer `peer`, if one failed.
    fn reject_registration(
        &mut self,
        now: Instant,
        ue: &mut UeContext,
        cause: FiveGmmCause,
        peer: Option<NfType>,
    ) {
        self.stop_timer(ue);
        self.stats.registration_rejects += 1;
        self.pm.count(Counter::Fail(ue.reg_kind, cause.value()));
        // TS 24.501 §5.5.1.2.5, §5.5.1.3.5: a rejected UE is deregistered.
        self.set_registered(ue, false);
        ue.log_failure("registration", &cause, peer);
        self.send_nas(
            ue,
            &NasMessage::RegistrationReject(RegistrationReject::new(cause)),
        );
        ue.sec = None;
        self.release(now, ue, NasCause::Unspecified.into(), false);
    }

    /// AUTHENTICATION REJECT (TS 24.501 §5.4.1.3.5), unprotected, then the release; the
    /// UE's security context is gone.
    fn authentication_reject(&mut self, now: Instant, ue: &mut UeContext) {
        self.stop_timer(ue);
        self.stats.authentication_rejects += 1;
        self.pm.count(Counter::AuthReject);
        self.set_registered(ue, false);
        ue.log_failure("authentication", &"authentication rejected", None);
        ue.sec = None;
        ue.secured = false;
        self.send_nas(ue, &NasMessage::AuthenticationReject(AuthenticationReject));
        self.release(now, ue, NasCause::AuthenticationFailure.into(), false);
    }

    /// An SBI error: the 5GMM cause sbi::problem maps it to, in a REGISTRATION REJECT.
    fn sbi_failed(
        &mut self,
        now: Instant,
        ue: &mut UeContext,
        peer: NfType,
        status: u16,
        body: &[u8],
    ) {
        let cause = decode_json::<ProblemDetails>(body)
            .ok()
            .and_then(|p| {
                let mut p = p;
                if !(400..=599).contains(&p.status.unwrap_or(0)) {
                    p.status = Some(status);
                }
                p.to_5gmm_cause()
            })
            .or_else(|| sbi::problem::to_5gmm_cause(status, None))
            .unwrap_or(GmmCause::PROTOCOL_ERROR_UNSPECIFIED);
        self.reject_registration(now, ue, gmm(cause), Some(peer));
    }

    fn status(&mut self, ue: &mut UeContext, cause: FiveGmmCause) {
        self.stats.statuses += 1;
        self.send_nas(ue, &NasMessage::FiveGmmStatus(FiveGmmStatus { cause }));
    }

    // ---- release ----

    /// UE CONTEXT RELEASE COMMAND (TS 38.413 §8.3.3); the N2 part goes with its
    /// COMPLETE, or after [`RELEASE_GUARD`].
    fn release(&mut self, now: Instant, ue: &mut UeContext, cause: Cause, park: bool) {
        if ue.state == UeState::Releasing {
            return;
        }
        ue.state = UeState::Releasing;
        ue.park = park;
        ue.retransmit = None;
        ue.pending_call = None;
        let cmd = UeContextReleaseCommand {
            ue_ngap_ids: UeNgapIds::Pair {
                amf: ue.amf_ue_ngap_id,
                ran: ue.ran_ue_ngap_id,
            },
            cause,
        };
        match cmd.encode() {
            Ok(pdu) => self.emit_ue(ue, pdu),
            Err(e) => {
                warn!(amf_ue_ngap_id = ue.amf_ue_ngap_id, error = %e, "UE CONTEXT RELEASE COMMAND does not encode")
            }
        }
        let deadline = now + RELEASE_GUARD;
        self.set_timer(ue, deadline, TimerKind::ReleaseGuard);
    }

    // ---- SBI ----

    fn call<T: serde::Serialize>(
        &mut self,
        ue: &mut UeContext,
        kind: CallKind,
        nf: NfType,
        method: Method,
        path: String,
        body: &T,
    ) {
        let body = if method == Method::GET {
            Bytes::new()
        } else {
            match sbi::message::to_json(body) {
                Ok(v) => Bytes::from(v),
                Err(e) => {
                    warn!(error = %e, "SBI request does not encode");
                    return;
                }
            }
        };
        let call_id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        self.calls.insert(call_id, (ue.amf_ue_ngap_id, kind));
        ue.pending_call = Some(call_id);
        self.emit(Action::Call {
            call_id,
            nf,
            method,
            path,
            content_type: sbi::multipart::JSON,
            body,
        });
    }

    // ---- timers ----

    fn start_timer(&mut self, now: Instant, ue: &mut UeContext, kind: TimerKind) {
        let t = &self.cfg.timers;
        let after = match kind {
            TimerKind::T3550 => t.t3550,
            TimerKind::T3560 => t.t3560,
            TimerKind::T3570 => t.t3570,
            TimerKind::ReleaseGuard => RELEASE_GUARD,
        };
        self.set_timer(ue, now + after, kind);
    }

    fn set_timer(&mut self, ue: &mut UeContext, deadline: Instant, kind: TimerKind) {
        if let Some((t, _)) = ue.timer.take() {
            self.out.timers.push(TimerOp::Cancel(t, ue.amf_ue_ngap_id));
        }
        ue.timer = Some((deadline, kind));
        self.out
            .timers
            .push(TimerOp::Set(deadline, ue.amf_ue_ngap_id));
    }

    fn stop_timer(&mut self, ue: &mut UeContext) {
        if let Some((t, k)) = ue.timer {
            if k != TimerKind::ReleaseGuard {
                self.out.timers.push(TimerOp::Cancel(t, ue.amf_ue_ngap_id));
                ue.timer = None;
            }
        }
        ue.retransmit = None;
        ue.retransmissions = 0;
    }

    // ---- downlink ----

    /// Sends a NAS message with a retransmission timer.
    fn send_nas_retransmitted(
        &mut self,
        now: Instant,
        ue: &mut UeContext,
        m: &NasMessage,
        timer: TimerKind,
    ) {
        let Ok(plain) = m.encode() else {
            warn!(message = m.name(), "NAS message does not encode");
            return;
        };
        let header = if ue.secured {
            SecurityHeaderType::IntegrityProtectedAndCiphered
        } else {
            SecurityHeaderType::Plain
        };
        ue.retransmissions = 0;
        ue.retransmit = Some((plain.clone(), header));
        if header == SecurityHeaderType::Plain {
            self.downlink(ue, plain);
        } else {
            self.send_protected(ue, &plain, header);
        }
        self.start_timer(now, ue, timer);
    }

    /// Sends a NAS message: protected once the secure exchange is established, plain
    /// before (TS 24.501 §4.4.4.2 lists what the UE takes unprotected).
    fn send_nas(&mut self, ue: &mut UeContext, m: &NasMessage) {
        let Ok(plain) = m.encode() else {
            warn!(message = m.name(), "NAS message does not encode");
            return;
        };
        if ue.secured && ue.sec.is_some() {
            self.send_protected(
                ue,
                &plain,
                SecurityHeaderType::IntegrityProtectedAndCiphered,
            );
        } else {
            self.downlink(ue, plain);
        }
    }

    fn send_protected(&mut self, ue: &mut UeContext, plain: &[u8], header: SecurityHeaderType) {
        self.trace_nas(ue, "→", plain);
        let Some(sec) = ue.sec.as_mut() else {
            return;
        };
        match sec.protect(plain, header, Direction::Downlink) {
            Ok(p) => self.downlink(ue, p),
            Err(e) => {
                warn!(amf_ue_ngap_id = ue.amf_ue_ngap_id, error = %e, "NAS protection failed")
            }
        }
    }

    fn downlink(&mut self, ue: &UeContext, nas_pdu: Vec<u8>) {
        if nas::plain_message_type(&nas_pdu).is_some() {
            self.trace_nas(ue, "→", &nas_pdu);
        }
        let m = DownlinkNasTransport {
            amf_ue_ngap_id: ue.amf_ue_ngap_id,
            ran_ue_ngap_id: ue.ran_ue_ngap_id,
            nas_pdu,
        };
        match m.encode() {
            Ok(pdu) => self.emit_ue(ue, pdu),
            Err(e) => {
                warn!(amf_ue_ngap_id = ue.amf_ue_ngap_id, error = %e, "DOWNLINK NAS TRANSPORT does not encode")
            }
        }
    }

    /// ERROR INDICATION (TS 38.413 §8.7.4). The error path never fails on the values
    /// that provoked it: if the IDs do not encode, it goes without them.
    fn error_indication(
        &mut self,
        assoc: u32,
        stream: u16,
        amf: Option<u64>,
        ran: Option<u32>,
        cause: Cause,
        diagnostics: Option<ngap::CriticalityDiagnostics>,
    ) {
        self.stats.error_indications += 1;
        let ei = ErrorIndication {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            cause: Some(cause),
            criticality_diagnostics: diagnostics,
        };
        let pdu = ei
            .encode()
            .or_else(|_| ErrorIndication::new(cause).encode());
        match pdu {
            Ok(pdu) => self.emit(Action::Ngap { assoc, stream, pdu }),
            Err(e) => warn!(assoc, error = %e, "ERROR INDICATION does not encode"),
        }
    }
}

/// The `supiOrSuci` form of a SUCI (TS 29.503 §6.1.6.3.2 `SupiOrSuci`, TS 23.003 §2.2B):
/// `suci-0-<mcc>-<mnc>-<routing indicator>-<scheme>-<key id>-<output>`.
pub fn suci_string(s: &Suci) -> String {
    let output = match &s.output {
        SchemeOutput::Msin(m) => m.clone(),
        SchemeOutput::Concealed(b) => {
            // One formatted string per byte cost more than the rest of this function.
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let mut out = String::with_capacity(b.len() * 2);
            for x in b.iter() {
                out.push(char::from(HEX[usize::from(x >> 4)]));
                out.push(char::from(HEX[usize::from(x & 0x0f)]));
            }
            out
        }
    };
    format!(
        "suci-0-{}-{}-{}-{:x}-{}-{}",
        s.plmn.mcc_str(),
        s.plmn.mnc_str(),
        s.routing_indicator,
        s.scheme.id(),
        s.hn_key_id,
        output
    )
}

/// The path of an absolute URI (`http://host:port/path` → `/path`); a path stays as it is.
/// The confirmation link as the call takes it: an absolute `http://` href whole (its
/// authority names the AUSF instance holding the context, TS 29.509 §6.1.3.2.3.1), else
/// its path (also for an unspecified address, which names no instance).
fn confirm_link(href: &str) -> &str {
    let authority = href
        .strip_prefix("http://")
        .map(|rest| rest.split('/').next().unwrap_or_default());
    match authority {
        // An AUSF bound to every address (0.0.0.0, [::]) names no instance anyone can reach:
        // the directory's address of the AUSF is the better guess.
        Some(a) if a.starts_with("0.0.0.0") || a.starts_with("[::]") => path_of(href),
        Some(_) => href,
        None => path_of(href),
    }
}

fn path_of(uri: &str) -> &str {
    match uri.split_once("://") {
        Some((_, rest)) => rest.find('/').and_then(|i| rest.get(i..)).unwrap_or("/"),
        None => uri,
    }
}

/// What an error answer names as its cause: the problem's application cause, else the
/// status.
fn answer_cause(status: StatusCode, body: &[u8]) -> String {
    decode_json::<ProblemDetails>(body)
        .ok()
        .and_then(|p| p.cause)
        .unwrap_or_else(|| status.to_string())
}

fn gmm(c: GmmCause) -> FiveGmmCause {
    FiveGmmCause::from_value(c.0)
}
