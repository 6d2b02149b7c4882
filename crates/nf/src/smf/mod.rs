//! The SMF as a sans-IO state machine: Nsmf_PDUSession CreateSMContext, UpdateSMContext and
//! ReleaseSMContext (TS 29.502 §5.2.2.2–§5.2.2.4) for the UE-requested PDU session
//! establishment of TS 23.502 §4.3.2.2.1, with N4 towards one UPF (TS 29.244).
//!
//! One [`Smf`] runs per worker. SBI requests come in with [`Smf::handle_request`], replies to
//! its own SBI calls with [`Smf::handle_reply`], PFCP datagrams with [`Smf::handle_pfcp`];
//! everything it wants done goes out through [`Smf::poll_action`]. It owns no socket, timer
//! or thread: PFCP retransmission (T1/N1) is the runtime's, which reports a request that was
//! never answered with [`Smf::pfcp_timeout`].
//!
//! Establishment, step numbers of TS 23.502 figure 4.3.2.2.1-1:
//! 1. (3) CreateSMContext: multipart JSON `SmContextCreateData` + N1 PDU Session Establishment
//!    Request. DNN, slice and PDU session type are checked here; a refusal is a 403 with
//!    `SmContextCreateError` and an N1 PDU Session Establishment Reject (TS 24.501 §6.4.1.4).
//! 2. (4) Nudm_SDM_Get sm-data: session AMBR, default 5QI and ARP.
//! 3. A UE IPv4 address from this worker's share of the DNN's pool (#26 when exhausted).
//! 4. (10a) PFCP Session Establishment: UL PDR (CHOOSE F-TEID, outer header removal) → FAR
//!    forward to core; DL PDR (UE IP) → FAR buffer; QER gate open with the session AMBR as
//!    MBR; URR on volume.
//! 5. (5) 201 `SmContextCreatedData`, then (11) Namf_Communication N1N2MessageTransfer with
//!    the N1 PDU Session Establishment Accept and the N2 PDU Session Resource Setup Request
//!    Transfer.
//! 6. (15–16) UpdateSMContext with `PDU_RES_SETUP_RSP`: the gNB's F-TEID → PFCP Session
//!    Modification (DL FAR forwards with an outer header) → 200 `upCnxState: ACTIVATED`.
//!
//! Release: ReleaseSMContext → PFCP Session Deletion → 204; a UE-requested release (N1 PDU
//! Session Release Request in UpdateSMContext, TS 23.502 §4.3.4.2) → PFCP Session Deletion
//! → 200 with the N1 PDU Session Release Command and the N2 Release Command Transfer.
//!
//! # Ownership
//!
//! SM context refs and CP SEIDs carry the worker that created them in their top 16 bits
//! (their layout is in [`ids::smf`]), so the SBI and PFCP transports can steer later messages
//! to the owner without a table. In the sharded mode a request for a context of another
//! worker is handed over ([`Action::Forward`]); in the locked baseline every worker sees every
//! context. Outstanding calls (UDM, AMF, UPF transactions) stay with the worker
//! that made them: replies come back to their sender.

mod duplicate;
#[cfg(test)]
mod limits_tests;
pub mod n2;
mod n4;
pub mod nas;
#[doc(hidden)]
pub mod nsmf_requests;
pub mod pool;
pub mod restoration;

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use ids::smf::{
    format_sm_context_ref, owner_of_sm_context_ref, parse_sm_context_ref, sm_context_ref,
};
use ids::{WorkerId, Workers};
use pfcp::ie::NodeId;
use pfcp::message::{SessionEstablishmentRequest, SessionModificationRequest};
use pfcp::requests::{self, SessionSpec};
use pfcp::Message;
use sbi::message::decode_json;
use sbi::model::{
    N1MessageContainer, N1N2MessageTransferReqData, N2InfoContainer, N2InfoContent,
    N2SmInformation, ProblemDetails, RefToBinaryData, SessionManagementSubscriptionData,
    SmContextCreateData, SmContextCreateError, SmContextCreatedData, SmContextUpdateData,
    SmContextUpdatedData, Snssai,
};
use sbi::multipart::{self, Part};
use sbi::problem::Cause;
use sbi::validate::{self, decode_valid, query, rules, Violation};
use sbi::{NfType, SbiRequest, SbiResponse};
use serde::Serialize;
use thiserror::Error;

use crate::state::ContextMap;
use n4::{Held, PfcpPending, Then, Waiter};
use nas::GsmCause;
use pool::Ipv4Range;

/// `{apiRoot}/nsmf-pdusession/v1` (TS29502_Nsmf_PDUSession.yaml `servers`).
pub const NSMF_PDUSESSION: &str = "/nsmf-pdusession/v1";
/// `{apiRoot}/namf-comm/v1` (TS29518_Namf_Communication.yaml `servers`).
pub const NAMF_COMM: &str = "/namf-comm/v1";
/// `{apiRoot}/nudm-sdm/v2`.
pub const NUDM_SDM: &str = "/nudm-sdm/v2";

/// Content-Id of the N1 part in the bodies the SMF builds.
pub const N1_ID: &str = "n1SmMsg";
/// Content-Id of the N2 part.
pub const N2_ID: &str = "n2SmInfo";

/// Errors of the N1/N2 helpers.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SmError {
    /// An N1 SM container that does not decode or is not the expected message.
    #[error("N1 SM: {0}")]
    N1(String),
    /// N2 SM information that does not decode.
    #[error("N2 SM: {0}")]
    N2(String),
    /// A message could not be encoded (a value out of range).
    #[error("encoding: {0}")]
    Encode(String),
}

/// A DNN this SMF serves and the IPv4 pool of its UEs.
#[derive(Debug, Clone)]
pub struct DnnPool {
    /// The DNN.
    pub dnn: String,
    /// Pool network.
    pub net: Ipv4Addr,
    /// Its prefix length.
    pub prefix_len: u8,
}

/// How one SMF worker is set up.
#[derive(Debug, Clone)]
pub struct SmfConfig {
    /// This worker.
    pub worker: WorkerId,
    /// All workers.
    pub workers: Workers,
    /// `scheme://host:port` of this SMF, for `Location`.
    pub api_root: String,
    /// The SMF's PFCP Node ID.
    pub node_id: NodeId,
    /// The SMF's PFCP address (CP F-SEID).
    pub pfcp_ip: Ipv4Addr,
    /// The UPF's PFCP address.
    pub upf: SocketAddr,
    /// Served DNNs.
    pub dnns: Vec<DnnPool>,
    /// Served slices.
    pub slices: Vec<Snssai>,
    /// URR volume threshold, octets.
    pub urr_volume_threshold: u64,
    /// How often the SMF heartbeats the UPF to find out that it restarted
    /// ([`restoration`]); `None` sends none.
    pub heartbeat_interval: Option<Duration>,
    /// The SMF's Recovery Time Stamp (TS 29.244 §8.2.65): one per process, so that every
    /// worker's association says the same.
    pub recovery_time_stamp: u32,
}

/// Where an SM context is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmState {
    /// Waiting for the subscription (Nudm_SDM).
    Subscription,
    /// Waiting for the PFCP Session Establishment Response.
    Establishing,
    /// User plane set up on the UPF, waiting for the NG-RAN's tunnel (`ACTIVATING`).
    Activating,
    /// PFCP Session Modification with the gNB's F-TEID under way.
    Modifying,
    /// Downlink forwards to the gNB (`ACTIVATED`).
    Active,
    /// PFCP Session Deletion under way.
    Releasing,
}

/// One PDU session's context.
#[derive(Debug, Clone)]
pub struct SmContext {
    /// The UE.
    pub supi: String,
    /// PDU session id.
    pub psi: u8,
    /// PTI of the establishment.
    pub pti: u8,
    /// DNN.
    pub dnn: String,
    /// Slice.
    pub snssai: Snssai,
    /// The UE's address once allocated.
    pub ue_ip: Option<Ipv4Addr>,
    /// CP SEID (ours; equal to the SM context ref).
    pub cp_seid: u64,
    /// Octets the UPF reported in usage reports (TS 29.244 §7.5.8.2).
    pub reported_octets: u64,
    /// UP SEID (the UPF's).
    pub up_seid: Option<u64>,
    /// The UPF's N3 end (TEID, address).
    pub ul_tunnel: Option<(u32, Ipv4Addr)>,
    /// The gNB's N3 end.
    pub dl_tunnel: Option<(u32, Ipv4Addr)>,
    /// Session AMBR (uplink, downlink), bit/s.
    pub ambr_bps: (u64, u64),
    /// Default QoS flow's 5QI.
    pub five_qi: u8,
    /// Its ARP priority level.
    pub arp_priority: u8,
    /// State.
    pub state: SmState,
}

/// A request handed to the worker owning its SM context; pass it to
/// [`Smf::handle_forwarded`].
#[derive(Debug, Clone)]
pub struct Forwarded(SbiRequest);

/// Work the SMF hands to its runtime.
#[derive(Debug)]
#[non_exhaustive]
pub enum Action {
    /// Answer request `req_id`.
    Respond {
        /// The request.
        req_id: u64,
        /// The answer.
        response: SbiResponse,
    },
    /// Hand the request to worker `to` ([`Smf::handle_forwarded`]).
    Forward {
        /// The owner.
        to: WorkerId,
        /// The request.
        req_id: u64,
        /// What to hand over.
        request: Forwarded,
    },
    /// Send an SBI request and report the reply with [`Smf::handle_reply`] under `call_id`;
    /// a transport failure or timeout is a reply with status 504 and no body.
    Call {
        /// Identifies the reply.
        call_id: u64,
        /// Which NF.
        nf: NfType,
        /// HTTP method.
        method: Method,
        /// Path, with the query if any, without the authority.
        path: String,
        /// `Content-Type` of `body`.
        content_type: &'static str,
        /// Body (empty for GET).
        body: Bytes,
    },
    /// Send a PFCP message to `to` from this worker's own PFCP socket: each worker numbers
    /// its requests on its own, so workers sharing a source address and port would collide
    /// in the UPF's duplicate detection (TS 29.244 §6.4). The runtime retransmits requests
    /// and reports one never answered with [`Smf::pfcp_timeout`] and its sequence number.
    Pfcp {
        /// The UPF.
        to: SocketAddr,
        /// Sequence number of the request.
        sequence: u32,
        /// The message.
        bytes: Vec<u8>,
    },
    /// Send a PFCP response to `to` (the UPF's request is answered once: the UPF
    /// retransmits, and a duplicate gets the same answer again from the SMF).
    PfcpResponse {
        /// The UPF.
        to: SocketAddr,
        /// The message.
        bytes: Vec<u8>,
    },
}

crate::summed_counters! {
    /// Counters of one SMF worker.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct SmfStats {
        /// SM contexts created (201).
        pub created: u64,
        /// Establishments rejected with an N1 reject.
        pub rejected: u64,
        /// Sessions whose user plane reached ACTIVATED.
        pub activated: u64,
        /// Sessions released.
        pub released: u64,
        /// N1N2MessageTransfers the AMF accepted.
        pub n1n2_sent: u64,
        /// N1N2MessageTransfers that failed.
        pub n1n2_failed: u64,
        /// Requests for a context of another worker.
        pub misrouted: u64,
        /// PFCP messages that answered no outstanding request.
        pub stray_pfcp: u64,
        /// Usage reports received in Session Report Requests.
        pub usage_reports: u64,
        /// Responses to our PFCP requests whose body did not decode: each failed its request.
        pub pfcp_unparsed: u64,
        /// UPF sessions deleted after their establishment was abandoned (its answer unusable,
        /// or the SM context released meanwhile).
        pub abandoned_deleted: u64,
        /// Deletions of such sessions that failed (unanswered, undecodable, refused).
        pub abandoned_delete_failed: u64,
        /// Establishments the UPF accepted without naming the session: nothing can delete it.
        pub abandoned_unnamed: u64,
        /// CreateSMContexts refused because the worker held [`Smf::set_max_contexts`] SM
        /// contexts (also in `rejected`).
        pub context_limit_rejects: u64,
        /// Heartbeats sent to the UPF.
        pub heartbeats_sent: u64,
        /// Heartbeats the UPF did not answer (after every retransmission).
        pub heartbeats_unanswered: u64,
        /// Restarts of the UPF seen (a new Recovery Time Stamp).
        pub upf_restarts: u64,
        /// PFCP sessions established again on a restarted UPF.
        pub sessions_restored: u64,
        /// Sessions the restarted UPF did not take back, released here.
        pub restore_failed: u64,
        /// SM contexts released because their UE created the same PDU session ID again.
        pub duplicates_released: u64,
        /// PDU Session Resource Setup Response Transfers refused for an unusable gNB address
        /// (each session then released by the network).
        pub bad_tunnels: u64,
        /// Network-requested releases sent to the AMF (N1N2MessageTransfer).
        pub network_releases: u64,
        /// CreateSMContext requests received (TS 28.552 SM.PduSessionCreationReq).
        pub create_requests: u64,
        /// PFCP Session Establishment Requests sent for new sessions, not counting
        /// retransmissions or the re-establishments on a restarted UPF (SM.N4SessionEstabReq).
        pub n4_establish_requests: u64,
        /// Of those, establishments the UPF refused, answered unusably or not at all
        /// (SM.N4SessionEstabFail).
        pub n4_establish_failures: u64,
        /// PFCP Session Report Requests received (SM.N4SessionReport).
        pub n4_reports: u64,
        /// Of those, answered Request accepted (SM.N4SessionReportSucc).
        pub n4_reports_accepted: u64,
    }
}

/// SM contexts one SMF worker holds unless told otherwise ([`Smf::set_max_contexts`]).
pub const DEFAULT_MAX_SM_CONTEXTS: usize = 250_000;

#[derive(Debug)]
enum Pending {
    SmData {
        req_id: u64,
        sm_ref: u64,
    },
    N1N2 {
        sm_ref: u64,
    },
    /// The N1N2MessageTransfer of a network-requested release: the context is gone already.
    N1N2Release,
}

/// Why an establishment failed: the 5GSM cause for the UE and the SBI error for the AMF
/// (TS 29.502 §6.1.3.2.3.1 table 6.1.3.2.3.1-3 for the application errors).
struct Refusal {
    gsm: GsmCause,
    status: u16,
    cause: &'static str,
    detail: String,
    /// The parameter at fault, when one is (`invalidParams`).
    param: Option<Violation>,
}

impl Refusal {
    fn new(gsm: GsmCause, status: u16, cause: &'static str, detail: impl Into<String>) -> Self {
        Refusal {
            gsm,
            status,
            cause,
            detail: detail.into(),
            param: None,
        }
    }

    fn problem(&self) -> ProblemDetails {
        let mut p = problem(self.status, self.cause, self.detail.clone());
        p.invalid_params = self.param.as_ref().map(|v| {
            vec![sbi::model::InvalidParam {
                param: v.param.clone(),
                reason: Some(v.reason.to_owned()),
            }]
        });
        p
    }
}

/// One SMF worker; `M` holds the SM contexts by ref ([`crate::state::ShardMap`] per worker
/// or clones of one [`crate::state::LockedMap`]).
pub struct Smf<M> {
    cfg: SmfConfig,
    contexts: M,
    pools: HashMap<String, Ipv4Range>,
    next_ref: u64,
    recovery: u32,
    next_call: u64,
    next_seq: u32,
    pending: HashMap<u64, Pending>,
    pfcp: HashMap<u32, PfcpPending>,
    /// SM context refs whose establishment was given up on unanswered, oldest first: a
    /// late answer for one of them is undone ([`n4`]).
    given_up: VecDeque<u64>,
    associated: bool,
    actions: VecDeque<Action>,
    stats: SmfStats,
    /// Most SM contexts on this worker.
    max_contexts: usize,
    /// The UPF's life as seen from here ([`restoration`]).
    n4: restoration::N4Watch,
    /// This worker's contexts by SUPI and PDU session ID ([`duplicate`]).
    index: duplicate::SessionIndex,
    /// The subscribers whose PFCP messages are logged (`--trace-supi`).
    trace: crate::trace::Trace,
}

impl<M> std::fmt::Debug for Smf<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smf")
            .field("worker", &self.cfg.worker)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn route(path: &str) -> Option<(Option<&str>, &str)> {
    let rest = path
        .strip_prefix(NSMF_PDUSESSION)?
        .strip_prefix("/sm-contexts")?;
    if rest.is_empty() {
        return Some((None, ""));
    }
    let (r, op) = rest.strip_prefix('/')?.split_once('/')?;
    Some((Some(r), op))
}

fn json_bytes<T: Serialize>(t: &T) -> Bytes {
    Bytes::from(serde_json::to_vec(t).unwrap_or_default())
}

fn problem(status: u16, cause: &str, detail: impl Into<String>) -> ProblemDetails {
    let mut p = ProblemDetails::from_cause(Cause::Other(cause.to_owned()), detail);
    p.status = Some(status);
    p
}

/// Parses a TS 29.571 `BitRate` (`"1 Gbps"`, `"2.5 Mbps"`) into bit/s.
pub fn parse_bit_rate(s: &str) -> Option<u64> {
    let (num, unit) = s.trim().split_once(' ')?;
    let mult: u64 = match unit {
        "bps" => 1,
        "Kbps" => 1_000,
        "Mbps" => 1_000_000,
        "Gbps" => 1_000_000_000,
        "Tbps" => 1_000_000_000_000,
        _ => return None,
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v = int.parse::<u64>().ok()?.checked_mul(mult)?;
    let mut scale = mult;
    for d in frac.bytes() {
        scale /= 10;
        v = v.checked_add(u64::from(d - b'0').checked_mul(scale)?)?;
    }
    Some(v)
}

impl<M: ContextMap<u64, SmContext>> Smf<M> {
    /// An SMF worker.
    pub fn new(cfg: SmfConfig, contexts: M) -> Self {
        let pools = cfg
            .dnns
            .iter()
            .map(|d| {
                (
                    d.dnn.clone(),
                    Ipv4Range::share(d.net, d.prefix_len, cfg.worker.0, cfg.workers.count()),
                )
            })
            .collect();
        Smf {
            cfg,
            contexts,
            pools,
            next_ref: 1,
            recovery: 0,
            next_call: 1,
            next_seq: 1,
            pending: HashMap::new(),
            pfcp: HashMap::new(),
            given_up: VecDeque::new(),
            trace: crate::trace::Trace::default(),
            associated: false,
            actions: VecDeque::new(),
            stats: SmfStats::default(),
            max_contexts: DEFAULT_MAX_SM_CONTEXTS,
            n4: restoration::N4Watch::default(),
            index: duplicate::SessionIndex::default(),
        }
    }

    /// Bounds the SM contexts of this worker (in the locking baseline, `workers ×` this
    /// over the shared map): a CreateSMContext beyond it is refused with 500
    /// INSUFFICIENT_RESOURCES (TS 29.500 §5.2.7.2) and an N1 PDU SESSION ESTABLISHMENT
    /// REJECT with 5GSM #26 "insufficient resources" (TS 24.501 §6.4.1.4).
    pub fn set_max_contexts(&mut self, max: usize) {
        self.max_contexts = max;
    }

    /// Logs the PFCP messages of these subscribers' sessions (`--trace-supi`).
    pub fn set_trace(&mut self, trace: crate::trace::Trace) {
        self.trace = trace;
    }

    /// The SUPI of context `sm_ref` if it is traced.
    fn traced(&mut self, sm_ref: u64) -> Option<String> {
        if !self.trace.is_on() {
            return None;
        }
        let supi = self.contexts.with(&sm_ref, |c| c.map(|c| c.supi.clone()))?;
        self.trace.wants(Some(&supi)).then_some(supi)
    }

    /// Counters.
    pub fn stats(&self) -> SmfStats {
        self.stats
    }

    /// The next piece of work.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// A copy of the context of `sm_ref` (tests, CLI).
    pub fn context(&mut self, sm_ref: &str) -> Option<SmContext> {
        let r = parse_sm_context_ref(sm_ref)?;
        self.contexts.with(&r, |c| c.cloned())
    }

    /// Number of SM contexts this worker sees.
    pub fn context_count(&self) -> usize {
        self.contexts.len()
    }

    /// Addresses of `dnn` this worker has handed out.
    pub fn addresses_in_use(&self, dnn: &str) -> usize {
        self.pools.get(dnn).map_or(0, Ipv4Range::in_use)
    }

    /// Whether the PFCP association with the UPF is up.
    pub fn associated(&self) -> bool {
        self.associated
    }

    /// Starts the PFCP association with the UPF (TS 29.244 §6.2.6).
    pub fn associate(&mut self, recovery_time_stamp: u32) {
        self.recovery = recovery_time_stamp;
        let m = requests::association_setup(self.cfg.node_id.clone(), recovery_time_stamp);
        self.associating();
        self.send_pfcp(None, m, PfcpPending::Association);
    }

    fn respond(&mut self, req_id: u64, response: SbiResponse) {
        self.actions.push_back(Action::Respond { req_id, response });
    }

    fn problem(&mut self, req_id: u64, p: ProblemDetails) {
        self.respond(req_id, SbiResponse::problem(&p));
    }

    fn multipart_response(status: StatusCode, parts: &[Part]) -> SbiResponse {
        match multipart::encode(parts) {
            Ok(body) => SbiResponse {
                status,
                headers: http::HeaderMap::new(),
                body,
                content_type: Some(multipart::CONTENT_TYPE),
            },
            Err(e) => SbiResponse::problem(&ProblemDetails::unspecified_nf_failure(e.to_string())),
        }
    }

    fn call(
        &mut self,
        nf: NfType,
        method: Method,
        path: String,
        ct: &'static str,
        body: Bytes,
        p: Pending,
    ) {
        let call_id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        self.pending.insert(call_id, p);
        self.actions.push_back(Action::Call {
            call_id,
            nf,
            method,
            path,
            content_type: ct,
            body,
        });
    }

    /// A request from the SBI server.
    pub fn handle_request(&mut self, req_id: u64, req: SbiRequest) {
        if let Some((Some(r), _)) = route(&req.path) {
            if !M::SHARED {
                if let Some(owner) = owner_of_sm_context_ref(r) {
                    if owner != self.cfg.worker && self.cfg.workers.contains(owner) {
                        self.stats.misrouted += 1;
                        self.actions.push_back(Action::Forward {
                            to: owner,
                            req_id,
                            request: Forwarded(req),
                        });
                        return;
                    }
                }
            }
        }
        self.dispatch(req_id, req);
    }

    /// A request another worker handed over with [`Action::Forward`].
    pub fn handle_forwarded(&mut self, req_id: u64, fwd: Forwarded) {
        self.dispatch(req_id, fwd.0);
    }

    fn dispatch(&mut self, req_id: u64, req: SbiRequest) {
        let Some((r, op)) = route(&req.path) else {
            return self.problem(req_id, ProblemDetails::resource_not_found(&req.path));
        };
        if req.method != Method::POST {
            return self.problem(
                req_id,
                ProblemDetails::method_not_allowed(req.method.as_str(), &req.path),
            );
        }
        // TS 29.502 §6.1.3: no operation served here takes a query parameter.
        if let Err(p) = query::check(req.query.as_deref(), query::NONE) {
            return self.problem(req_id, p);
        }
        let found = r
            .and_then(parse_sm_context_ref)
            .map(|v| (v, self.contexts.with(&v, |c| c.is_some())));
        match (r, op, found) {
            (None, _, _) => self.create(req_id, &req),
            (Some(_), "modify", Some((v, true))) => self.update(req_id, v, &req),
            (Some(_), "release", Some((v, true))) => self.release(req_id, v, &req),
            (Some(r), "modify" | "release", _) => self.problem(
                req_id,
                ProblemDetails::context_not_found(format!("no SM context {r}")),
            ),
            _ => self.problem(req_id, ProblemDetails::resource_not_found(&req.path)),
        }
    }

    /// The JSON root and binary parts of a request body (multipart or plain JSON).
    #[allow(clippy::result_large_err)]
    fn parts(req: &SbiRequest) -> Result<(Bytes, Vec<Part>), ProblemDetails> {
        let ct = req.content_type.as_deref().unwrap_or("");
        if ct.to_ascii_lowercase().starts_with("multipart/") {
            let parts = multipart::decode(ct, &req.body)
                .map_err(|e| ProblemDetails::invalid_msg_format(e.to_string()))?;
            let json = multipart::json_part(&parts)
                .map(|p| p.body.clone())
                .ok_or_else(|| ProblemDetails::invalid_msg_format("no JSON part"))?;
            Ok((json, parts))
        } else {
            Ok((req.body.clone(), Vec::new()))
        }
    }

    /// The JSON part of `req` decoded and checked as `T` ([`decode_valid`]), and its parts.
    #[allow(clippy::result_large_err)]
    fn decode<T>(req: &SbiRequest) -> Result<(T, Vec<Part>), ProblemDetails>
    where
        T: serde::de::DeserializeOwned + serde::Serialize + sbi::validate::Validate,
    {
        let (json, parts) = Self::parts(req)?;
        Ok((decode_valid(&json)?, parts))
    }

    /// CreateSMContext (TS 29.502 §5.2.2.2.1).
    fn create(&mut self, req_id: u64, req: &SbiRequest) {
        self.stats.create_requests += 1;
        let (data, parts): (SmContextCreateData, _) = match Self::decode(req) {
            Ok(x) => x,
            Err(p) => return self.problem(req_id, p),
        };
        // `decode_valid` refuses a body without them; the fallbacks never run.
        let Some(supi) = data.supi.clone() else {
            return self.problem(req_id, ProblemDetails::mandatory_ie_missing("/supi"));
        };
        let Some(n1_ref) = &data.n1_sm_msg else {
            return self.problem(req_id, ProblemDetails::mandatory_ie_missing("/n1SmMsg"));
        };
        let Some(n1) = multipart::find_part(&parts, &n1_ref.content_id) else {
            return self.problem(
                req_id,
                ProblemDetails::mandatory_ie_incorrect("/n1SmMsg", "no part with this Content-Id"),
            );
        };
        let est = match nas::establishment_request(&n1.body) {
            Ok(e) => e,
            // TS 29.502 table 6.1.3.2.3.1-3: N1_SM_ERROR for an N1 SM message in error.
            Err(e) => return self.problem(req_id, problem(403, "N1_SM_ERROR", e.to_string())),
        };
        // The 5GSM header's identities (the codec refuses the reserved values, 16 to 255 and
        // PTI 255): "none assigned" cannot open a session. The UE learns why (TS 24.501
        // §7.3.1 a: #81 for the PTI; §7.3.2: #43 for the PDU session identity).
        let n1_fault = |reason: &'static str| Violation {
            param: "/n1SmMsg".to_owned(),
            missing: false,
            reason,
        };
        let header = match (
            rules::pdu_session_id(est.psi),
            rules::pti_ue_allocated(est.pti),
        ) {
            (Err(reason), _) => Some((GsmCause::InvalidPduSessionIdentity, reason)),
            (_, Err(reason)) => Some((GsmCause::InvalidPtiValue, reason)),
            _ => None,
        };
        if let Some((gsm, reason)) = header {
            let mut r = Refusal::new(gsm, 403, "N1_SM_ERROR", reason);
            r.param = Some(n1_fault(reason));
            return self.refuse(req_id, est.psi, est.pti, r);
        }
        // TS 29.502 §6.1.6.2.2: pduSessionId is the PDU session of the N1 message; a body
        // that names another is contradictory and the AMF's to correct.
        let psi = data.pdu_session_id.unwrap_or(est.psi);
        if psi != est.psi {
            let p = validate::problem(
                Cause::MandatoryIeIncorrect,
                &[Violation {
                    param: "/pduSessionId".to_owned(),
                    missing: false,
                    reason: "TS 24.007 §11.2.3.1b: differs from the PDU session identity of the N1 SM message",
                }],
            );
            return self.problem(req_id, p);
        }
        let refuse = |s: &mut Self, r: Refusal| s.refuse(req_id, psi, est.pti, r);
        // TS 24.501 §6.4.1.2: IPv4 only here; IPv4v6 gets IPv4 (the UE learns it from the
        // selected PDU session type); anything else is #28.
        match est.pdu_type {
            None | Some(1) | Some(3) => {}
            Some(t) => {
                return refuse(
                    self,
                    Refusal::new(
                        GsmCause::UnknownPduSessionType,
                        403,
                        "PDUTYPE_NOT_SUPPORTED",
                        format!("PDU session type {t} not supported"),
                    ),
                )
            }
        }
        let dnn = data.dnn.clone().unwrap_or_default();
        if !self.pools.contains_key(&dnn) {
            return refuse(
                self,
                Refusal::new(
                    GsmCause::MissingOrUnknownDnn,
                    403,
                    "DNN_NOT_SUPPORTED",
                    format!("DNN {dnn:?} not served"),
                ),
            );
        }
        let snssai = data.s_nssai.unwrap_or(Snssai { sst: 1, sd: None });
        if !self.cfg.slices.contains(&snssai) {
            return refuse(
                self,
                Refusal::new(
                    GsmCause::MissingOrUnknownDnnInASlice,
                    403,
                    "SNSSAI_DENIED",
                    format!("slice {} not served", snssai.to_key()),
                ),
            );
        }
        let limit = self.max_contexts.saturating_mul(if M::SHARED {
            usize::from(self.cfg.workers.count())
        } else {
            1
        });
        if self.contexts.len_hint() >= limit {
            self.stats.context_limit_rejects += 1;
            return refuse(
                self,
                Refusal::new(
                    GsmCause::InsufficientResources,
                    500,
                    "INSUFFICIENT_RESOURCES",
                    format!("{limit} SM contexts held"),
                ),
            );
        }
        // The CP SEID is the SM context ref itself: one counter, one layout, and a Session
        // Report from the UPF names its context directly.
        self.replace_duplicate(&supi, psi);
        let sm_ref = sm_context_ref(self.cfg.worker, self.next_ref);
        self.next_ref = self.next_ref.wrapping_add(1);
        let cp_seid = sm_ref;
        self.index_session(&supi, psi, sm_ref);
        self.contexts.insert(
            sm_ref,
            SmContext {
                supi: supi.clone(),
                psi,
                pti: est.pti,
                dnn: dnn.clone(),
                snssai,
                ue_ip: None,
                cp_seid,
                reported_octets: 0,
                up_seid: None,
                ul_tunnel: None,
                dl_tunnel: None,
                ambr_bps: (0, 0),
                five_qi: 9,
                arp_priority: 8,
                state: SmState::Subscription,
            },
        );
        // TS 29.503 §6.1.3.7: GET {supi}/sm-data with the DNN as a query parameter; the
        // slice is matched here on the answer.
        let path = format!("{NUDM_SDM}/{supi}/sm-data?dnn={dnn}");
        self.call(
            NfType::Udm,
            Method::GET,
            path,
            multipart::JSON,
            Bytes::new(),
            Pending::SmData { req_id, sm_ref },
        );
    }

    /// Answers CreateSMContext with a reject: `SmContextCreateError` and the N1 PDU Session
    /// Establishment Reject (TS 29.502 §5.2.2.2.1: "including the N1 SM message").
    fn refuse(&mut self, req_id: u64, psi: u8, pti: u8, r: Refusal) {
        self.stats.rejected += 1;
        let err = SmContextCreateError {
            error: r.problem(),
            n1_sm_msg: Some(RefToBinaryData::new(N1_ID)),
        };
        let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::FORBIDDEN);
        let response = match nas::establishment_reject(psi, pti, r.gsm) {
            Ok(n1) => Self::multipart_response(
                status,
                &[
                    Part::json(json_bytes(&err)),
                    Part::binary(multipart::NAS_5G, N1_ID, n1),
                ],
            ),
            Err(_) => SbiResponse::problem(&err.error),
        };
        self.respond(req_id, response);
    }

    /// Drops a context that never reached the UPF and refuses its creation.
    fn abandon(&mut self, req_id: u64, sm_ref: u64, r: Refusal) {
        self.abandon_held(req_id, sm_ref, r, Held::Nothing);
    }

    /// The reply to an SBI call.
    pub fn handle_reply(&mut self, call_id: u64, status: StatusCode, body: &[u8]) {
        match self.pending.remove(&call_id) {
            Some(Pending::SmData { req_id, sm_ref }) => self.sm_data(req_id, sm_ref, status, body),
            Some(Pending::N1N2 { sm_ref }) => {
                if status.is_success() {
                    self.stats.n1n2_sent += 1;
                } else {
                    // The UE cannot learn of its session: give the resources back.
                    self.stats.n1n2_failed += 1;
                    self.delete_session(sm_ref, None, Then::Nothing);
                }
            }
            Some(Pending::N1N2Release) => {
                if status.is_success() {
                    self.stats.n1n2_sent += 1;
                } else {
                    self.stats.n1n2_failed += 1;
                }
            }
            None => {}
        }
    }

    fn sm_data(&mut self, req_id: u64, sm_ref: u64, status: StatusCode, body: &[u8]) {
        let Some(ctx) = self.contexts.with(&sm_ref, |c| c.cloned()) else {
            return self.released_meanwhile(req_id);
        };
        if !status.is_success() {
            // The UDM refusing the subscriber is a refusal of the UE; the UDM failing or not
            // answering (the runtime reports that as 504) is a network problem, and the UE
            // may try again later.
            let r = if status.is_client_error() {
                Refusal::new(
                    GsmCause::UserAuthenticationOrAuthorizationFailed,
                    403,
                    "SUBSCRIPTION_DENIED",
                    format!("UDM answered {status}"),
                )
            } else {
                Refusal::new(
                    GsmCause::InsufficientResources,
                    504,
                    "NETWORK_FAILURE",
                    format!("UDM answered {status}"),
                )
            };
            return self.abandon(req_id, sm_ref, r);
        }
        let list: Vec<SessionManagementSubscriptionData> = match decode_json(body) {
            Ok(l) => l,
            Err(p) => {
                return self.abandon(
                    req_id,
                    sm_ref,
                    Refusal::new(
                        GsmCause::InsufficientResources,
                        500,
                        "UNSPECIFIED_NF_FAILURE",
                        format!("sm-data: {}", p.detail.unwrap_or_default()),
                    ),
                )
            }
        };
        let conf = list
            .iter()
            .filter(|s| s.single_nssai == ctx.snssai)
            .find_map(|s| s.dnn_configurations.as_ref()?.get(&ctx.dnn).cloned());
        let Some(conf) = conf else {
            return self.abandon(
                req_id,
                sm_ref,
                Refusal::new(
                    GsmCause::MissingOrUnknownDnn,
                    403,
                    "DNN_DENIED",
                    format!(
                        "{} not subscribed in slice {}",
                        ctx.dnn,
                        ctx.snssai.to_key()
                    ),
                ),
            );
        };
        // Without a subscribed session AMBR or QoS profile, TS 23.501 §5.7.2 leaves the
        // values to local policy: 1 Gbit/s each way, 5QI 9, ARP 8.
        let ambr = conf
            .session_ambr
            .as_ref()
            .and_then(|a| Some((parse_bit_rate(&a.uplink)?, parse_bit_rate(&a.downlink)?)))
            .unwrap_or((1_000_000_000, 1_000_000_000));
        let (five_qi, arp) = conf
            .qos_profile
            .map_or((9, 8), |q| (q.five_qi, q.arp.priority_level));
        let Some(ip) = self.pools.get_mut(&ctx.dnn).and_then(Ipv4Range::allocate) else {
            return self.abandon(
                req_id,
                sm_ref,
                Refusal::new(
                    GsmCause::InsufficientResources,
                    500,
                    "INSUFFICIENT_RESOURCES_SLICE_DNN",
                    format!("IPv4 pool of {} exhausted", ctx.dnn),
                ),
            );
        };
        self.contexts.with(&sm_ref, |c| {
            if let Some(c) = c {
                c.ue_ip = Some(ip);
                c.ambr_bps = ambr;
                c.five_qi = five_qi;
                c.arp_priority = arp;
                c.state = SmState::Establishing;
            }
        });
        let mut spec =
            SessionSpec::new(self.cfg.node_id.clone(), ctx.cp_seid, self.cfg.pfcp_ip, ip);
        // TS 29.244 §8.2.8: MBR in kbit/s.
        spec.mbr_kbps = Some((ambr.0 / 1000, ambr.1 / 1000));
        spec.volume_threshold = Some(self.cfg.urr_volume_threshold);
        let est: SessionEstablishmentRequest = requests::establishment(&spec);
        self.establish_when_associated(req_id, sm_ref, est);
    }

    /// The UPF set the session up: 201 and the N1N2MessageTransfer, unless the context was
    /// released meanwhile.
    fn established(&mut self, req_id: u64, sm_ref: u64, up_seid: u64, ul: (u32, Ipv4Addr)) {
        let ctx = self.contexts.with(&sm_ref, |c| match c {
            Some(c) if c.state == SmState::Establishing => {
                c.up_seid = Some(up_seid);
                c.ul_tunnel = Some(ul);
                c.state = SmState::Activating;
                Some(c.clone())
            }
            _ => None,
        });
        let Some(ctx) = ctx else {
            // Released while the UPF was setting up: undo that too.
            self.released_meanwhile(req_id);
            return self.undo(sm_ref, up_seid);
        };
        let (n1, n2) = match self.accept_messages(&ctx) {
            Ok(x) => x,
            Err(e) => {
                self.problem(
                    req_id,
                    ProblemDetails::unspecified_nf_failure(e.to_string()),
                );
                return self.undo(sm_ref, up_seid);
            }
        };
        self.stats.created += 1;
        let created = SmContextCreatedData {
            pdu_session_id: Some(ctx.psi),
            s_nssai: Some(ctx.snssai),
            up_cnx_state: Some("ACTIVATING".into()),
        };
        let location = format!(
            "{}{NSMF_PDUSESSION}/sm-contexts/{}",
            self.cfg.api_root,
            format_sm_context_ref(sm_ref)
        );
        self.respond(req_id, SbiResponse::created(&location, &created));
        // TS 23.502 §4.3.2.2.1 step 11: N1 accept and N2 setup request to the AMF.
        if !self.n1n2_transfer(&ctx, "PDU_RES_SETUP_REQ", n1, n2, Pending::N1N2 { sm_ref }) {
            self.stats.n1n2_failed += 1;
            self.delete_session(sm_ref, None, Then::Nothing);
        }
    }

    /// Namf_Communication N1N2MessageTransfer (TS 29.518 §5.2.2.3.1) of `n1` and the N2 SM
    /// information `n2` of type `ie_type` for `ctx`'s session; false if it did not encode.
    fn n1n2_transfer(
        &mut self,
        ctx: &SmContext,
        ie_type: &str,
        n1: Vec<u8>,
        n2: Vec<u8>,
        pending: Pending,
    ) -> bool {
        let body = N1N2MessageTransferReqData {
            n1_message_container: Some(N1MessageContainer {
                n1_message_class: "SM".into(),
                n1_message_content: RefToBinaryData::new(N1_ID),
            }),
            n2_info_container: Some(N2InfoContainer {
                n2_information_class: "SM".into(),
                sm_info: Some(N2SmInformation {
                    pdu_session_id: ctx.psi,
                    n2_info_content: Some(N2InfoContent {
                        ngap_ie_type: Some(ie_type.into()),
                        ngap_data: RefToBinaryData::new(N2_ID),
                    }),
                    s_nssai: Some(ctx.snssai),
                }),
            }),
            pdu_session_id: Some(ctx.psi),
        };
        let parts = [
            Part::json(json_bytes(&body)),
            Part::binary(multipart::NAS_5G, N1_ID, n1),
            Part::binary(multipart::NGAP, N2_ID, n2),
        ];
        let Ok(bytes) = multipart::encode(&parts) else {
            return false;
        };
        self.call(
            NfType::Amf,
            Method::POST,
            format!("{NAMF_COMM}/ue-contexts/{}/n1-n2-messages", ctx.supi),
            multipart::CONTENT_TYPE,
            bytes,
            pending,
        );
        true
    }

    /// The SMF-requested release of TS 23.502 §4.3.4.2 (steps 3b, 4), after the N4 session
    /// is gone: the N1 PDU SESSION RELEASE COMMAND with no PTI (TS 24.501 §6.3.3.2: the
    /// network starts the procedure) and #26 "insufficient resources", and the N2 Release
    /// Command Transfer with the NGAP `cause`, to the AMF.
    fn network_release(&mut self, ctx: &SmContext, cause: proto::ngap::Cause) {
        let msgs = nas::release_command(ctx.psi, 0, GsmCause::InsufficientResources)
            .and_then(|n1| Ok((n1, n2::release_command_transfer_with(cause)?)));
        let sent = match msgs {
            Ok((n1, n2)) => {
                self.n1n2_transfer(ctx, "PDU_RES_REL_CMD", n1, n2, Pending::N1N2Release)
            }
            Err(_) => false,
        };
        if sent {
            self.stats.network_releases += 1;
        } else {
            self.stats.n1n2_failed += 1;
        }
    }

    /// The answer to a creation whose context a ReleaseSMContext removed meanwhile.
    fn released_meanwhile(&mut self, req_id: u64) {
        self.problem(
            req_id,
            ProblemDetails::context_not_found("SM context released during its establishment"),
        );
    }

    fn accept_messages(&self, ctx: &SmContext) -> Result<(Vec<u8>, Vec<u8>), SmError> {
        let ip = ctx
            .ue_ip
            .ok_or_else(|| SmError::Encode("no UE address".into()))?;
        let (teid, upf_ip) = ctx
            .ul_tunnel
            .ok_or_else(|| SmError::Encode("no UL tunnel".into()))?;
        let n1 = nas::establishment_accept(&nas::AcceptSpec {
            psi: ctx.psi,
            pti: ctx.pti,
            ue_ip: ip,
            ambr_bps: ctx.ambr_bps,
            five_qi: ctx.five_qi,
            sst: ctx.snssai.sst,
            sd: ctx.snssai.sd.map(|s| s.0),
            dnn: &ctx.dnn,
        })?;
        let n2 = n2::setup_request_transfer(&n2::SetupRequest {
            upf_ip,
            ul_teid: teid,
            ambr_bps: ctx.ambr_bps,
            qfi: nas::DEFAULT_QFI,
            five_qi: ctx.five_qi,
            arp_priority: ctx.arp_priority,
        })?;
        Ok((n1, n2))
    }

    /// UpdateSMContext (TS 29.502 §5.2.2.3).
    fn update(&mut self, req_id: u64, sm_ref: u64, req: &SbiRequest) {
        let (data, parts): (SmContextUpdateData, _) = match Self::decode(req) {
            Ok(x) => x,
            Err(p) => return self.problem(req_id, p),
        };
        let part = |r: &Option<RefToBinaryData>| {
            r.as_ref()
                .and_then(|r| multipart::find_part(&parts, &r.content_id))
                .map(|p| p.body.clone())
        };
        if let Some(n1) = part(&data.n1_sm_msg) {
            return match nas::ue_sm(&n1) {
                Ok(nas::UeSm::ReleaseRequest { pti }) => self.delete_session(
                    sm_ref,
                    Some(Waiter {
                        req_id,
                        ue_release: Some(pti),
                    }),
                    Then::Nothing,
                ),
                // §4.3.4.2 step 10: the context is already gone; nothing left to do.
                Ok(nas::UeSm::ReleaseComplete) => self.respond(req_id, SbiResponse::no_content()),
                Ok(nas::UeSm::Other(t)) => self.problem(
                    req_id,
                    problem(
                        403,
                        "N1_SM_ERROR",
                        format!("5GSM message type {t:#04x} not handled"),
                    ),
                ),
                Err(e) => self.problem(req_id, problem(403, "N1_SM_ERROR", e.to_string())),
            };
        }
        match data.n2_sm_info_type.as_deref() {
            Some("PDU_RES_SETUP_RSP") => {
                let Some(n2) = part(&data.n2_sm_info) else {
                    return self.problem(req_id, ProblemDetails::mandatory_ie_missing("/n2SmInfo"));
                };
                let dl = match n2::setup_response_transfer(&n2) {
                    Ok(d) => d,
                    Err(e) => {
                        return self.problem(req_id, problem(403, "N2_SM_ERROR", e.to_string()))
                    }
                };
                if let Err(reason) = n2::usable_n3_address(dl.1) {
                    return self.refuse_tunnel(req_id, sm_ref, reason);
                }
                let up_seid = self.contexts.with(&sm_ref, |c| {
                    let c = c?;
                    if c.state != SmState::Activating && c.state != SmState::Active {
                        return None;
                    }
                    c.dl_tunnel = Some(dl);
                    c.state = SmState::Modifying;
                    c.up_seid
                });
                let Some(up_seid) = up_seid else {
                    return self.problem(
                        req_id,
                        problem(
                            400,
                            "MANDATORY_IE_INCORRECT",
                            "the SM context is not awaiting N2",
                        ),
                    );
                };
                let m: SessionModificationRequest = requests::forward_downlink(dl.0, dl.1);
                self.send_pfcp(
                    Some(up_seid),
                    Message::SessionModificationRequest(m),
                    PfcpPending::Modify { req_id, sm_ref },
                );
            }
            Some(other) => self.problem(
                req_id,
                ProblemDetails::mandatory_ie_incorrect(
                    "/n2SmInfoType",
                    format!("{other} not handled"),
                ),
            ),
            None => {
                // Nothing to change: report the state as it is.
                let st = self.contexts.with(&sm_ref, |c| c.map(|c| c.state));
                let body = SmContextUpdatedData {
                    up_cnx_state: Some(
                        if st == Some(SmState::Active) {
                            "ACTIVATED"
                        } else {
                            "ACTIVATING"
                        }
                        .into(),
                    ),
                    ..Default::default()
                };
                self.respond(req_id, SbiResponse::json(StatusCode::OK, &body));
            }
        }
    }

    /// The gNB's N3 address in a PDU Session Resource Setup Response Transfer can be no
    /// tunnel end (see [`n2::usable_n3_address`]). The update is refused naming the N2 SM
    /// information (400 MANDATORY_IE_INCORRECT, TS 29.502 §5.2.2.3.1 with TS 29.500
    /// §5.2.7.2), the UPF is never told to forward there, and a session waiting for its
    /// tunnel is released by the network (TS 23.502 §4.3.4.2): PFCP Session Deletion, then
    /// the N1 PDU SESSION RELEASE COMMAND and the N2 Release Command Transfer with the NGAP
    /// cause "transport resource unavailable" (TS 38.413 §9.3.1.2) go to the AMF. The SM
    /// context, the UE's address and the UPF's rules are gone; the AMF releases the
    /// session at the gNB and the UE.
    fn refuse_tunnel(&mut self, req_id: u64, sm_ref: u64, reason: &'static str) {
        self.stats.bad_tunnels += 1;
        self.problem(
            req_id,
            validate::problem(
                Cause::MandatoryIeIncorrect,
                &[Violation {
                    param: "/n2SmInfo".to_owned(),
                    missing: false,
                    reason,
                }],
            ),
        );
        let waiting = self.contexts.with(&sm_ref, |c| {
            c.is_some_and(|c| matches!(c.state, SmState::Activating | SmState::Active))
        });
        if waiting {
            let cause = proto::ngap::Cause::Transport(
                proto::ngap::TransportCause::TransportResourceUnavailable,
            );
            self.delete_session(sm_ref, None, Then::Network(cause));
        }
    }

    /// ReleaseSMContext (TS 29.502 §5.2.2.4); its body is optional and checked when there.
    fn release(&mut self, req_id: u64, sm_ref: u64, req: &SbiRequest) {
        if !req.body.is_empty() {
            if let Err(p) = Self::decode::<sbi::model::SmContextReleaseData>(req) {
                return self.problem(req_id, p);
            }
        }
        let w = Waiter {
            req_id,
            ue_release: None,
        };
        self.delete_session(sm_ref, Some(w), Then::Nothing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_rates_parse() {
        assert_eq!(parse_bit_rate("1 Gbps"), Some(1_000_000_000));
        assert_eq!(parse_bit_rate("2.5 Mbps"), Some(2_500_000));
        assert_eq!(parse_bit_rate("0.0001 bps"), Some(0));
        assert_eq!(parse_bit_rate("18446744073709551615 Tbps"), None);
        assert_eq!(parse_bit_rate("1Gbps"), None);
        assert_eq!(parse_bit_rate(" Gbps"), None);
        assert_eq!(parse_bit_rate("-1 Gbps"), None);
    }

    #[test]
    fn routes() {
        assert_eq!(route("/nsmf-pdusession/v1/sm-contexts"), Some((None, "")));
        assert_eq!(
            route("/nsmf-pdusession/v1/sm-contexts/abc/modify"),
            Some((Some("abc"), "modify"))
        );
        assert_eq!(route("/nsmf-pdusession/v1/sm-contexts/abc"), None);
        assert_eq!(route("/nudm-sdm/v2/x"), None);
    }
}
