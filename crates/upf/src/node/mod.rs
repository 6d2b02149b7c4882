//! The UPF's N4 side (TS 29.244) as a sans-IO state machine, shaped like quinn-proto: bytes
//! in with [`UpfNode::handle`], timers with [`UpfNode::handle_timeout`] and
//! [`UpfNode::poll_timeout`], datagrams out with [`UpfNode::poll_transmit`]. It owns no socket
//! and reads no clock; the datapath it installs rules into is lent on each call.
//!
//! What it does:
//! - node procedures: Heartbeat (answered, and sent to every associated peer to find a dead
//!   one, §6.2.2), Association Setup/Update/Release (§6.2.6-§6.2.8);
//! - sessions from associated peers only (§6.2.6.1, else cause 72): Establishment,
//!   Modification, Deletion (§7.5.2-§7.5.7), reduced to the datapath's uplink/downlink rules;
//! - every session belongs to the association it was established over: only that
//!   association's addresses (the one it was set up from, its Node ID, the CP F-SEIDs it
//!   gave) may modify or delete it, and anyone else gets exactly the answer an unknown SEID
//!   gets (cause 65, SEID 0), so a peer learns nothing of another's sessions;
//! - at most [`NodeConfig::max_sessions`] sessions, on every datapath (cause 75 beyond);
//! - usage reporting: the datapath's counters are polled on a timer and a Session Report
//!   Request is sent when a URR's volume or time threshold is reached (§5.2.2.3);
//! - errors answered with the Cause of §7.6 and, where an IE or rule is to blame, Offending IE
//!   or Failed Rule ID; a retransmitted request is answered from a cache of responses
//!   (§6.4, [`pfcp::txn::ResponseCache`]), never processed twice; our own requests are
//!   retransmitted after T1 up to N1 times ([`pfcp::txn::Requester`]).

mod session;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use pfcp::header::{HeaderRepr, Packet, HEADER_LEN_NODE, VERSION};
use pfcp::ie::{self, ty, CreatedPdr, FSeid, FTeid, IeIter, NodeId, Triggers, UnknownIe, Volume};
use pfcp::message::{
    rejection, AssociationRelease, AssociationSetup, Heartbeat, SessionEstablishmentRequest,
    SessionEstablishmentResponse, SessionModificationRequest, SessionReportRequest,
    SessionResponse,
};
use pfcp::txn::{CacheConfig, Due, Requester, ResponseCache, Retransmission};
use pfcp::{Cause, DecodeError, Message, PfcpMessage};

use crate::datapath::{Datapath, UsageId};
use session::{sync, Alloc, Installed, Reject, RuleKind, Rules};

/// Association Update Request/Response (§7.4.4.3/§7.4.4.4): not modelled by the codec, so
/// handled from raw IEs.
const ASSOCIATION_UPDATE_REQUEST: u8 = 7;
const ASSOCIATION_UPDATE_RESPONSE: u8 = 8;
/// Version Not Supported Response (§7.4.4.7).
const VERSION_NOT_SUPPORTED_RESPONSE: u8 = 11;
/// Failed Rule ID IE (§8.2.80).
const IE_FAILED_RULE_ID: u16 = 114;
/// UP Function Features we announce (§8.2.25): FTUP (octet 5 bit 1), the UP function
/// allocates F-TEIDs on CHOOSE.
const UP_FEATURES: [u8; 2] = [0x01, 0x00];

/// The default of [`NodeConfig::max_sessions`]: the size of the XDP fast path's rule maps
/// (`max_entries` of `uplink`, `downlink` and `usage` in bpf/upf_xdp.c), so that with one
/// uplink and one downlink rule per session the limit, not a full map, answers first, and
/// every datapath takes the same number of sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 65_536;

/// Settings of one node (one worker's share of the UPF).
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// Our Node ID (§8.2.38).
    pub node_id: NodeId,
    /// The PFCP address put in the UP F-SEID.
    pub pfcp_ip: Ipv4Addr,
    /// The N3 (GTP-U) address put in F-TEIDs we choose.
    pub n3_ip: Ipv4Addr,
    /// This worker's number, written into SEIDs and TEIDs (see [`ids::upf`]).
    pub worker: u8,
    /// Our Recovery Time Stamp (§8.2.65): NTP seconds when the UPF started.
    pub recovery_time_stamp: u32,
    /// Interval between our heartbeats to each associated peer; `None` sends none.
    pub heartbeat_interval: Option<Duration>,
    /// T1: how long we wait for a response before retransmitting a request (§6.4).
    pub t1: Duration,
    /// N1: how many times a request is retransmitted before the peer counts as dead.
    pub n1: u32,
    /// How often the datapath's usage counters are read for threshold checks.
    pub usage_poll: Duration,
    /// How long a response is kept to answer retransmissions (≥ T1 × (N1 + 1) of the peer).
    pub response_cache: Duration,
    /// At most this many responses are cached; the oldest go first.
    pub response_cache_max: usize,
    /// At most this many sessions at a time; an establishment beyond gets cause 75 "No
    /// resources available" (TS 29.244 §8.2.1), whatever the datapath.
    pub max_sessions: usize,
}

impl NodeConfig {
    /// Defaults: heartbeats every 10 s, T1 3 s, N1 3, usage polled every second, responses
    /// kept 60 s, [`DEFAULT_MAX_SESSIONS`] sessions.
    pub fn new(node_id: NodeId, pfcp_ip: Ipv4Addr, n3_ip: Ipv4Addr, recovery: u32) -> Self {
        NodeConfig {
            node_id,
            pfcp_ip,
            n3_ip,
            worker: 0,
            recovery_time_stamp: recovery,
            heartbeat_interval: Some(Duration::from_secs(10)),
            t1: pfcp::txn::DEFAULT_T1,
            n1: pfcp::txn::DEFAULT_N1,
            usage_poll: Duration::from_secs(1),
            response_cache: pfcp::txn::DEFAULT_CACHE_LIFETIME,
            response_cache_max: pfcp::txn::DEFAULT_CACHE_MAX,
            max_sessions: DEFAULT_MAX_SESSIONS,
        }
    }
}

/// One datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Where to.
    pub destination: SocketAddr,
    /// The PFCP message.
    pub contents: Vec<u8>,
}

/// Counters of everything the node did, for the `--json` report and for tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages received, by name.
    pub received: BTreeMap<&'static str, u64>,
    /// Messages sent (first transmissions), by name.
    pub sent: BTreeMap<&'static str, u64>,
    /// Causes in the responses we sent, by value.
    pub causes_sent: BTreeMap<u8, u64>,
    /// Messages that failed to decode (each also logged).
    pub malformed: u64,
    /// Messages of a type we do not know, silently discarded (§7.6.4).
    pub unknown_type: u64,
    /// Responses that matched no request of ours, or requests we do not serve.
    pub unexpected: u64,
    /// Retransmitted requests answered from the response cache.
    pub retransmissions_answered: u64,
    /// Our own requests retransmitted after T1.
    pub requests_retransmitted: u64,
    /// Our own requests that got no response after N1 retransmissions.
    pub requests_timed_out: u64,
    /// Associations set up.
    pub associations_setup: u64,
    /// Associations ended (released by the peer, or the peer found dead or restarted).
    pub associations_ended: u64,
    /// Peers found dead by heartbeat.
    pub peers_lost: u64,
    /// Sessions established.
    pub sessions_established: u64,
    /// Sessions deleted by Session Deletion Request.
    pub sessions_deleted: u64,
    /// Sessions dropped because their association ended.
    pub sessions_dropped: u64,
    /// Establishments refused at [`NodeConfig::max_sessions`] (cause 75).
    pub sessions_refused_limit: u64,
    /// Session requests from an address of no association, or naming a Node ID whose
    /// association does not hold the sender's address (cause 72).
    pub session_requests_unassociated: u64,
    /// Modifications and deletions naming a session of another association (answered as an
    /// unknown SEID).
    pub session_requests_foreign: u64,
    /// Association Setup, Update and Release Requests naming an associated Node ID from an
    /// address outside that association.
    pub association_requests_foreign: u64,
    /// Session Report Requests sent.
    pub session_reports: u64,
    /// Usage Reports sent (in reports, modification and deletion responses).
    pub usage_reports: u64,
    /// Datapath operations that failed.
    pub datapath_errors: u64,
    /// Octets received on N3 and forwarded to N6 (inner IP packets), as the sessions' URRs
    /// measured them: read at every usage poll and when a URR goes. Traffic of a session
    /// without a URR is not in it.
    pub n3_ul_bytes: u64,
    /// Octets sent on N3 (inner IP packets), the same way.
    pub n3_dl_bytes: u64,
}

#[derive(Debug)]
struct Association {
    node_id: NodeId,
    peer: SocketAddr,
    recovery: u32,
    next_heartbeat: Option<Instant>,
    heartbeat_pending: Option<u32>,
    /// Addresses the peer declared in the CP F-SEIDs of its live sessions, with how many
    /// sessions declared each (so that they go with the last of them).
    declared: HashMap<IpAddr, u32>,
}

impl Association {
    /// Whether `ip` is one of this association's addresses: the one it was set up from, its
    /// Node ID's, or one it declared in a CP F-SEID.
    fn admits(&self, ip: IpAddr) -> bool {
        self.peer.ip().to_canonical() == ip
            || node_ip(&self.node_id) == Some(ip)
            || self.declared.contains_key(&ip)
    }

    fn declare(&mut self, addrs: &[IpAddr]) {
        for a in addrs {
            *self.declared.entry(*a).or_default() += 1;
        }
    }

    fn undeclare(&mut self, addrs: &[IpAddr]) {
        for a in addrs {
            if let Some(n) = self.declared.get_mut(a) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.declared.remove(a);
                }
            }
        }
    }
}

/// The address of a Node ID of type IPv4 or IPv6 (§8.2.38).
fn node_ip(n: &NodeId) -> Option<IpAddr> {
    match n {
        NodeId::Ipv4(a) => Some(IpAddr::V4(*a)),
        NodeId::Ipv6(a) => Some(IpAddr::V6(*a).to_canonical()),
        NodeId::Fqdn(_) => None,
    }
}

/// The addresses of an F-SEID (§8.2.37).
fn f_seid_addrs(f: &FSeid) -> Vec<IpAddr> {
    f.ipv4
        .map(IpAddr::V4)
        .into_iter()
        .chain(f.ipv6.map(|a| IpAddr::V6(a).to_canonical()))
        .collect()
}

#[derive(Debug)]
struct Session {
    cp_seid: u64,
    cp_peer: SocketAddr,
    node_key: Vec<u8>,
    /// The addresses of its CP F-SEID, declared in its association.
    cp_addrs: Vec<IpAddr>,
    rules: Rules,
    installed: Installed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PendingKind {
    Heartbeat,
    Report,
}

/// What the node attaches to each of its requests in flight.
#[derive(Debug, Clone, Copy)]
struct Pending {
    peer: SocketAddr,
    kind: PendingKind,
}

/// The PFCP side of one UPF worker.
#[derive(Debug)]
pub struct UpfNode {
    cfg: NodeConfig,
    started: Instant,
    associations: HashMap<Vec<u8>, Association>,
    sessions: HashMap<u64, Session>,
    teid_owner: HashMap<u32, u64>,
    ue_ip_owner: HashMap<Ipv4Addr, u64>,
    usage_live: BTreeSet<UsageId>,
    next_seid: u64,
    next_teid: u32,
    next_usage: u32,
    next_seq: u32,
    pending: Requester<Pending>,
    cache: ResponseCache<(SocketAddr, u32)>,
    next_usage_poll: Instant,
    transmits: VecDeque<Transmit>,
    stats: Stats,
}

/// Where the SEID and TEID counters of a node with Recovery Time Stamp `stamp` start: far
/// from where the previous incarnation's did (a stamp is a second later at least). TS 23.527
/// §4.3.2: a restarted UPF should not reuse at once the F-TEIDs it allocated before, which
/// the SMF gives back when it restores its sessions; nor its SEIDs, which requests still in
/// flight from before the restart may name.
fn counter_seed(stamp: u32) -> u64 {
    // Fibonacci hashing spreads consecutive stamps over the whole counter space.
    u64::from(stamp).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16
}

/// The key of a Node ID in the association map: its encoding.
fn node_key(n: &NodeId) -> Vec<u8> {
    let mut v = Vec::new();
    n.emit(&mut v);
    v
}

/// Message names for stats and logs.
fn msg_name(t: u8) -> &'static str {
    match t {
        1 => "heartbeat_request",
        2 => "heartbeat_response",
        5 => "association_setup_request",
        6 => "association_setup_response",
        7 => "association_update_request",
        8 => "association_update_response",
        9 => "association_release_request",
        10 => "association_release_response",
        11 => "version_not_supported_response",
        50 => "session_establishment_request",
        51 => "session_establishment_response",
        52 => "session_modification_request",
        53 => "session_modification_response",
        54 => "session_deletion_request",
        55 => "session_deletion_response",
        56 => "session_report_request",
        57 => "session_report_response",
        _ => "other",
    }
}

/// Requests we answer: their responses are cached against retransmissions.
fn is_request(t: u8) -> bool {
    matches!(t, 1 | 5 | 7 | 9 | 50 | 52 | 54)
}

impl UpfNode {
    /// A node with no association, started at `now`.
    pub fn new(now: Instant, cfg: NodeConfig) -> Self {
        let seed = counter_seed(cfg.recovery_time_stamp);
        let pending = Requester::new(Retransmission {
            t1: cfg.t1,
            n1: cfg.n1,
        });
        let cache = ResponseCache::new(CacheConfig {
            lifetime: cfg.response_cache,
            max: cfg.response_cache_max,
        });
        UpfNode {
            next_usage_poll: now + cfg.usage_poll,
            cfg,
            started: now,
            associations: HashMap::new(),
            sessions: HashMap::new(),
            teid_owner: HashMap::new(),
            ue_ip_owner: HashMap::new(),
            usage_live: BTreeSet::new(),
            next_seid: seed & ids::upf::SEID_COUNTER_MASK,
            next_teid: seed as u32 & ids::upf::TEID_COUNTER_MASK,
            next_usage: 0,
            next_seq: 0,
            pending,
            cache,
            transmits: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Sessions held now.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Associations held now.
    pub fn association_count(&self) -> usize {
        self.associations.len()
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// When [`UpfNode::handle_timeout`] wants to run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let pending = self.pending.poll_timeout();
        let hb = self.associations.values().filter_map(|a| a.next_heartbeat);
        let usage = (!self.sessions.is_empty()).then_some(self.next_usage_poll);
        let cache = self.cache.poll_timeout();
        pending
            .into_iter()
            .chain(hb)
            .chain(usage)
            .chain(cache)
            .min()
    }

    /// NTP seconds at `now` (§8.2.65 format), from the recovery time stamp and the time
    /// elapsed since the node started.
    fn ntp(&self, now: Instant) -> u32 {
        let secs = now.saturating_duration_since(self.started).as_secs();
        self.cfg
            .recovery_time_stamp
            .wrapping_add(u32::try_from(secs).unwrap_or(u32::MAX))
    }

    fn seq(&mut self) -> u32 {
        self.next_seq = (self.next_seq + 1) & 0x00ff_ffff;
        self.next_seq
    }

    /// One datagram from `from`. A datagram may hold several messages (FO flag, §7.2.2.1).
    pub fn handle(&mut self, now: Instant, from: SocketAddr, bytes: &[u8], dp: &mut dyn Datapath) {
        let mut rest = bytes;
        // Bounded: every turn consumes at least one header's worth of octets.
        while !rest.is_empty() {
            match Packet::new_checked(rest) {
                Ok(p) => {
                    let len = p.total_len();
                    let more = p.follow_on();
                    let (msg, tail) = rest.split_at(len.min(rest.len()));
                    self.handle_one(now, from, msg, dp);
                    if !more {
                        break;
                    }
                    rest = tail;
                }
                Err(DecodeError::UnsupportedVersion(v)) => {
                    self.version_not_supported(from, rest, v);
                    break;
                }
                Err(e) => {
                    self.stats.malformed += 1;
                    tracing::warn!(%from, error = %e, "PFCP datagram dropped");
                    break;
                }
            }
        }
    }

    /// §7.4.4.7 / §7.6.2: a message of another version gets a Version Not Supported
    /// Response holding only a header with our version and the request's sequence number.
    fn version_not_supported(&mut self, from: SocketAddr, raw: &[u8], v: u8) {
        self.stats.malformed += 1;
        tracing::warn!(%from, version = v, "PFCP version not supported");
        let seq_at = if raw.first().is_some_and(|f| f & 0x01 != 0) {
            12
        } else {
            4
        };
        let Some(s) = raw.get(seq_at..seq_at + 3) else {
            return;
        };
        let h = HeaderRepr {
            msg_type: VERSION_NOT_SUPPORTED_RESPONSE,
            seid: None,
            sequence: u32::from_be_bytes([0, s[0], s[1], s[2]]),
            priority: None,
            follow_on: false,
        };
        let mut out = Vec::with_capacity(HEADER_LEN_NODE);
        h.emit(&mut out, 0);
        debug_assert_eq!(out[0] >> 5, VERSION);
        self.count_sent(VERSION_NOT_SUPPORTED_RESPONSE, None);
        self.transmits.push_back(Transmit {
            destination: from,
            contents: out,
        });
    }

    fn handle_one(&mut self, now: Instant, from: SocketAddr, raw: &[u8], dp: &mut dyn Datapath) {
        let Ok(header) = PfcpMessage::parse_header(raw) else {
            self.stats.malformed += 1;
            return;
        };
        let t = header.msg_type;
        *self.stats.received.entry(msg_name(t)).or_default() += 1;
        if is_request(t) {
            // §6.4: a request with a sequence number we already answered is a retransmission.
            if let Some(rsp) = self.cache.get(&(from, header.sequence)) {
                self.stats.retransmissions_answered += 1;
                tracing::debug!(%from, seq = header.sequence, "retransmission answered from cache");
                self.transmits.push_back(Transmit {
                    destination: from,
                    contents: rsp.to_vec(),
                });
                return;
            }
        }
        if t == ASSOCIATION_UPDATE_REQUEST && header.seid.is_none() {
            let payload = Packet::new_checked(raw).map(|p| p.payload().to_vec());
            self.association_update(now, from, header, payload.as_deref().unwrap_or(&[]));
            return;
        }
        // Session requests are checked against the sender before their IEs are looked at:
        // nothing a stranger or another association sends is decoded further.
        if matches!(t, 50 | 52 | 54) && header.seid.is_some() {
            let ip = from.ip().to_canonical();
            if !self.associations.values().any(|a| a.admits(ip)) {
                // §6.2.6.1: sessions only over an established association.
                self.stats.session_requests_unassociated += 1;
                tracing::info!(%from, msg_type = t, "session request from no association");
                return self.refuse_session_request(
                    now,
                    from,
                    header.sequence,
                    t,
                    Cause::NO_ESTABLISHED_ASSOCIATION,
                );
            }
            // §7.2.2.4.2: a session request for a SEID we do not know gets cause 65 in a
            // response whose header SEID is 0. A session of another association is not this
            // sender's to know of: it gets the same answer, octet for octet.
            if t != 50 {
                let seid = header.seid.unwrap_or(0);
                let session = self.sessions.get(&seid);
                let owned = session.is_some_and(|s| {
                    self.associations
                        .get(&s.node_key)
                        .is_some_and(|a| a.admits(ip))
                });
                if !owned {
                    if session.is_some() {
                        self.stats.session_requests_foreign += 1;
                        tracing::warn!(%from, seid, "session request for another association's session refused");
                    } else {
                        tracing::info!(%from, seid, "session context not found");
                    }
                    return self.refuse_session_request(
                        now,
                        from,
                        header.sequence,
                        t,
                        Cause::SESSION_CONTEXT_NOT_FOUND,
                    );
                }
            }
        }
        let msg = match PfcpMessage::parse(raw) {
            Ok(m) => m,
            Err(DecodeError::UnknownMessageType(mt)) => {
                // §7.6.1/§7.6.4: a message of an unknown type is silently discarded (logged and
                // counted).
                self.stats.unknown_type += 1;
                tracing::info!(%from, msg_type = mt, "unknown PFCP message type discarded");
                return;
            }
            Err(e) => {
                self.stats.malformed += 1;
                tracing::warn!(%from, msg_type = t, error = %e, "malformed PFCP message");
                // §7.6.1: an erroneous reply to one of our requests still ends its
                // retransmissions.
                if !is_request(t) {
                    let ours = self
                        .pending
                        .get(header.sequence)
                        .is_some_and(|p| p.peer == from);
                    if ours {
                        self.pending.remove(header.sequence);
                        for a in self.associations.values_mut() {
                            if a.heartbeat_pending == Some(header.sequence) {
                                a.heartbeat_pending = None;
                            }
                        }
                    }
                }
                let peer_seid = match t {
                    50 => Some(0),
                    _ => header
                        .seid
                        .map(|s| self.sessions.get(&s).map_or(0, |x| x.cp_seid)),
                };
                if let Some(body) =
                    rejection(t, &e, &self.cfg.node_id, self.cfg.recovery_time_stamp)
                {
                    self.respond(now, from, header.sequence, peer_seid, body);
                }
                return;
            }
        };
        let seq = header.sequence;
        match msg.message {
            Message::HeartbeatRequest(_) => {
                // §6.2.2.1: answered whether or not an association exists.
                let body = Message::HeartbeatResponse(Heartbeat {
                    recovery_time_stamp: self.cfg.recovery_time_stamp,
                    unknown: Vec::new(),
                });
                self.respond(now, from, seq, None, body);
            }
            Message::HeartbeatResponse(h) => self.heartbeat_response(from, seq, &h, dp),
            Message::AssociationSetupRequest(a) => self.association_setup(now, from, seq, a, dp),
            Message::AssociationReleaseRequest(a) => {
                self.association_release(now, from, seq, a, dp)
            }
            Message::SessionEstablishmentRequest(r) => self.establish(now, from, seq, r, dp),
            Message::SessionModificationRequest(r) => {
                let seid = header.seid.unwrap_or(0);
                self.modify(now, from, seq, seid, r, dp)
            }
            Message::SessionDeletionRequest(_) => {
                let seid = header.seid.unwrap_or(0);
                self.delete(now, from, seq, seid, dp)
            }
            Message::SessionReportResponse(r) => self.report_response(from, seq, header.seid, &r),
            _ => {
                self.stats.unexpected += 1;
                tracing::info!(%from, msg_type = t, "unexpected PFCP message ignored");
            }
        }
    }

    /// What our own addressing allows of the peers a request names: loopback gNBs only when
    /// our N3 address is a loopback one (a rig on one host).
    fn presence_context(&self) -> pfcp::presence::Context {
        pfcp::presence::Context {
            loopback_peers: self.cfg.n3_ip.is_loopback(),
        }
    }

    /// Answers a request of type `t` that breaks the presence table (TS 29.244 §7.6) like a
    /// malformed one: its Cause and Offending IE, counted as malformed.
    fn refuse_erroneous(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u32,
        t: u8,
        seid: Option<u64>,
        e: &DecodeError,
    ) {
        self.stats.malformed += 1;
        tracing::info!(%from, msg_type = t, error = %e, "PFCP request refused");
        if let Some(body) = rejection(t, e, &self.cfg.node_id, self.cfg.recovery_time_stamp) {
            self.respond(now, from, seq, seid, body);
        }
    }

    /// Answers session request type `t` with `cause` alone, header SEID 0 (§7.2.2.4.2: the
    /// sender's SEID is not to be trusted or not known).
    fn refuse_session_request(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u32,
        t: u8,
        cause: Cause,
    ) {
        let body = match t {
            50 => {
                let rej = Reject {
                    cause,
                    offending_ie: None,
                    failed_rule: None,
                };
                return self.est_reject(now, from, seq, rej);
            }
            52 => Message::SessionModificationResponse(SessionResponse::new(cause)),
            _ => Message::SessionDeletionResponse(SessionResponse::new(cause)),
        };
        self.respond(now, from, seq, Some(0), body);
    }

    fn count_sent(&mut self, t: u8, cause: Option<Cause>) {
        *self.stats.sent.entry(msg_name(t)).or_default() += 1;
        if let Some(c) = cause {
            *self.stats.causes_sent.entry(c.0).or_default() += 1;
        }
    }

    /// Sends a response and caches it against retransmissions of the request.
    fn respond(&mut self, now: Instant, to: SocketAddr, seq: u32, seid: Option<u64>, m: Message) {
        let cause = match &m {
            Message::AssociationSetupResponse(a) | Message::AssociationSetupRequest(a) => a.cause,
            Message::AssociationReleaseResponse(a) => a.cause,
            Message::SessionEstablishmentResponse(r) => Some(r.cause),
            Message::SessionModificationResponse(r) | Message::SessionDeletionResponse(r) => {
                Some(r.cause)
            }
            _ => None,
        };
        let t = m.msg_type().value();
        let bytes = PfcpMessage::new(seq, seid, m).emit();
        self.send_response_bytes(now, to, seq, t, cause, bytes);
    }

    fn send_response_bytes(
        &mut self,
        now: Instant,
        to: SocketAddr,
        seq: u32,
        t: u8,
        cause: Option<Cause>,
        bytes: Vec<u8>,
    ) {
        self.count_sent(t, cause);
        self.cache.insert(now, (to, seq), bytes.clone());
        self.transmits.push_back(Transmit {
            destination: to,
            contents: bytes,
        });
    }

    /// Sends a request of ours and tracks it for retransmission.
    fn request(
        &mut self,
        now: Instant,
        to: SocketAddr,
        seid: Option<u64>,
        m: Message,
        kind: PendingKind,
    ) -> u32 {
        let seq = self.seq();
        let t = m.msg_type().value();
        let bytes = PfcpMessage::new(seq, seid, m).emit();
        self.count_sent(t, None);
        self.pending
            .sent(now, seq, bytes.clone(), Pending { peer: to, kind });
        self.transmits.push_back(Transmit {
            destination: to,
            contents: bytes,
        });
        seq
    }

    fn association_setup(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u32,
        a: AssociationSetup,
        dp: &mut dyn Datapath,
    ) {
        let key = node_key(&a.node_id);
        // An association is replaced only from one of its own addresses: another peer quoting
        // its Node ID would otherwise take it over, and with another recovery time stamp tear
        // down its sessions.
        if self
            .associations
            .get(&key)
            .is_some_and(|old| !old.admits(from.ip().to_canonical()))
        {
            self.stats.association_requests_foreign += 1;
            tracing::warn!(%from, node = ?a.node_id, "association setup for another peer's Node ID refused");
            let body = Message::AssociationSetupResponse(AssociationSetup {
                node_id: self.cfg.node_id.clone(),
                cause: Some(Cause::REQUEST_REJECTED),
                recovery_time_stamp: self.cfg.recovery_time_stamp,
                up_function_features: None,
                cp_function_features: None,
                unknown: Vec::new(),
            });
            return self.respond(now, from, seq, None, body);
        }
        // §6.2.6.2.2: a new setup from a Node ID we are associated with replaces the
        // association; if the peer restarted (another recovery time stamp), its sessions are
        // gone on its side, so we drop them too.
        let mut declared = HashMap::new();
        if let Some(old) = self.associations.remove(&key) {
            self.stats.associations_ended += 1;
            if old.recovery != a.recovery_time_stamp {
                self.drop_sessions_of(&key, dp);
            } else {
                // The sessions stay, and so do the addresses they declared.
                declared = old.declared;
            }
        }
        tracing::info!(%from, node = ?a.node_id, "PFCP association set up");
        self.associations.insert(
            key,
            Association {
                node_id: a.node_id,
                peer: from,
                recovery: a.recovery_time_stamp,
                next_heartbeat: self.cfg.heartbeat_interval.map(|i| now + i),
                heartbeat_pending: None,
                declared,
            },
        );
        self.stats.associations_setup += 1;
        let body = Message::AssociationSetupResponse(AssociationSetup {
            node_id: self.cfg.node_id.clone(),
            cause: Some(Cause::REQUEST_ACCEPTED),
            recovery_time_stamp: self.cfg.recovery_time_stamp,
            up_function_features: Some(UP_FEATURES.to_vec()),
            cp_function_features: None,
            unknown: Vec::new(),
        });
        self.respond(now, from, seq, None, body);
    }

    /// §7.4.4.3: Association Update Request, read from raw IEs (the codec does not model it).
    /// We accept it when the association exists; there is nothing in it we act on.
    fn association_update(&mut self, now: Instant, from: SocketAddr, h: HeaderRepr, ies: &[u8]) {
        let mut node = None;
        let mut err = None;
        for ie in IeIter::new(ies) {
            match ie {
                Ok(ie) if ie.ie_type == ty::NODE_ID && node.is_none() => match NodeId::parse(&ie) {
                    Ok(n) => node = Some(n),
                    Err(e) => err = Some(e),
                },
                Ok(_) => {}
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        let (cause, offending) = match (node, err) {
            (_, Some(e)) => {
                self.stats.malformed += 1;
                (
                    e.cause().unwrap_or(Cause::REQUEST_REJECTED),
                    e.offending_ie(),
                )
            }
            (None, None) => {
                self.stats.malformed += 1;
                (Cause::MANDATORY_IE_MISSING, Some(ty::NODE_ID))
            }
            (Some(n), None)
                if self
                    .associations
                    .get(&node_key(&n))
                    .is_some_and(|a| a.admits(from.ip().to_canonical())) =>
            {
                (Cause::REQUEST_ACCEPTED, None)
            }
            // Another peer's association is not the sender's: answered as no association.
            (Some(_), None) => (Cause::NO_ESTABLISHED_ASSOCIATION, None),
        };
        let mut body = Vec::new();
        self.cfg.node_id.emit(&mut body);
        ie::put_ie(&mut body, ty::CAUSE, |o| o.push(cause.0));
        if let Some(o) = offending {
            ie::put_ie(&mut body, ty::OFFENDING_IE, |v| {
                v.extend_from_slice(&o.to_be_bytes())
            });
        }
        let rh = HeaderRepr {
            msg_type: ASSOCIATION_UPDATE_RESPONSE,
            seid: None,
            sequence: h.sequence,
            priority: None,
            follow_on: false,
        };
        let mut out = Vec::new();
        rh.emit(&mut out, body.len());
        out.extend_from_slice(&body);
        self.send_response_bytes(
            now,
            from,
            h.sequence,
            ASSOCIATION_UPDATE_RESPONSE,
            Some(cause),
            out,
        );
    }

    fn association_release(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u32,
        a: AssociationRelease,
        dp: &mut dyn Datapath,
    ) {
        let key = node_key(&a.node_id);
        let ip = from.ip().to_canonical();
        let foreign = self.associations.get(&key).is_some_and(|x| !x.admits(ip));
        if foreign {
            // Not the sender's association to release: answered as if there were none.
            self.stats.association_requests_foreign += 1;
            tracing::warn!(%from, node = ?a.node_id, "association release for another peer's Node ID refused");
        }
        let cause = if !foreign && self.associations.remove(&key).is_some() {
            // §6.2.8.2: the UP function deletes the sessions of the released association.
            self.drop_sessions_of(&key, dp);
            self.stats.associations_ended += 1;
            tracing::info!(%from, node = ?a.node_id, "PFCP association released");
            Cause::REQUEST_ACCEPTED
        } else {
            Cause::NO_ESTABLISHED_ASSOCIATION
        };
        let body = Message::AssociationReleaseResponse(AssociationRelease {
            node_id: self.cfg.node_id.clone(),
            cause: Some(cause),
            unknown: Vec::new(),
        });
        self.respond(now, from, seq, None, body);
    }

    fn heartbeat_response(
        &mut self,
        from: SocketAddr,
        seq: u32,
        h: &Heartbeat,
        dp: &mut dyn Datapath,
    ) {
        let Some(p) = self.pending.get(seq) else {
            self.stats.unexpected += 1;
            return;
        };
        if p.peer != from || p.kind != PendingKind::Heartbeat {
            self.stats.unexpected += 1;
            return;
        }
        self.pending.remove(seq);
        let restarted = self
            .associations
            .iter_mut()
            .find(|(_, a)| a.heartbeat_pending == Some(seq))
            .map(|(k, a)| {
                a.heartbeat_pending = None;
                (k.clone(), a.recovery != h.recovery_time_stamp)
            });
        // §6.2.2.2: a changed recovery time stamp means the peer restarted and lost its
        // sessions; ours of that peer are stale.
        if let Some((key, true)) = restarted {
            tracing::warn!(%from, "PFCP peer restarted; its association and sessions dropped");
            self.associations.remove(&key);
            self.stats.associations_ended += 1;
            self.drop_sessions_of(&key, dp);
        }
    }

    fn report_response(
        &mut self,
        from: SocketAddr,
        seq: u32,
        seid: Option<u64>,
        r: &SessionResponse,
    ) {
        match self.pending.get(seq) {
            Some(p) if p.peer == from && p.kind == PendingKind::Report => {
                self.pending.remove(seq);
                if !r.cause.is_accepted() {
                    tracing::warn!(%from, ?seid, cause = r.cause.0, "session report rejected");
                }
            }
            _ => self.stats.unexpected += 1,
        }
    }

    /// Removes every session of association `key` from the datapath and the node.
    fn drop_sessions_of(&mut self, key: &[u8], dp: &mut dyn Datapath) {
        let seids: Vec<u64> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.node_key == key)
            .map(|(k, _)| *k)
            .collect();
        for seid in seids {
            self.remove_session(seid, dp);
            self.stats.sessions_dropped += 1;
        }
    }

    /// Removes the session's datapath entries and forgets it.
    fn remove_session(&mut self, seid: u64, dp: &mut dyn Datapath) -> Option<Session> {
        let mut s = self.sessions.remove(&seid)?;
        if let Some(a) = self.associations.get_mut(&s.node_key) {
            a.undeclare(&s.cp_addrs);
        }
        if let Err(e) = sync(dp, &session::Desired::default(), &mut s.installed) {
            self.stats.datapath_errors += 1;
            tracing::error!(seid, error = %e, "datapath refused a removal");
        }
        for u in s.rules.urrs.values_mut() {
            account(&mut self.stats, dp, u);
        }
        for u in s.rules.usage_ids() {
            if let Err(e) = session::ignore_missing(dp.remove_usage(u)) {
                self.stats.datapath_errors += 1;
                tracing::error!(seid, error = %e, "datapath refused a usage removal");
            }
            self.usage_live.remove(&u);
        }
        self.teid_owner.retain(|_, v| *v != seid);
        self.ue_ip_owner.retain(|_, v| *v != seid);
        Some(s)
    }

    /// Removes every session (on shutdown), so that the datapath is left empty.
    pub fn clear(&mut self, dp: &mut dyn Datapath) {
        let seids: Vec<u64> = self.sessions.keys().copied().collect();
        for s in seids {
            self.remove_session(s, dp);
        }
    }

    fn new_seid(&mut self) -> u64 {
        loop {
            self.next_seid = (self.next_seid + 1) & ids::upf::SEID_COUNTER_MASK;
            let s = ids::upf::seid(self.cfg.worker, self.next_seid);
            // SEID 0 means "no session" in headers (§7.2.2.4.2); 2^48 live sessions cannot
            // exist, so a free one is found.
            if s != 0 && !self.sessions.contains_key(&s) {
                return s;
            }
        }
    }

    fn est_reject(&mut self, now: Instant, from: SocketAddr, seq: u32, r: Reject) {
        let body = Message::SessionEstablishmentResponse(SessionEstablishmentResponse {
            node_id: self.cfg.node_id.clone(),
            cause: r.cause,
            offending_ie: r.offending_ie,
            up_f_seid: None,
            created_pdr: Vec::new(),
            unknown: failed_rule_ie(&r),
        });
        tracing::info!(%from, cause = r.cause.0, "session establishment rejected");
        // §7.2.2.4.2: the CP F-SEID may be unusable; a rejection goes with SEID 0 unless the
        // caller has one, and establishment rejections use 0 throughout.
        self.respond(now, from, seq, Some(0), body);
    }

    fn establish(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u32,
        r: SessionEstablishmentRequest,
        dp: &mut dyn Datapath,
    ) {
        let key = node_key(&r.node_id);
        let ip = from.ip().to_canonical();
        if !self.associations.get(&key).is_some_and(|a| a.admits(ip)) {
            // §6.2.6.1: sessions only over an established association, and only the peer of
            // that association may open one on it.
            self.stats.session_requests_unassociated += 1;
            tracing::info!(%from, node = ?r.node_id, "session establishment outside the sender's association");
            let rej = Reject {
                cause: Cause::NO_ESTABLISHED_ASSOCIATION,
                offending_ie: None,
                failed_rule: None,
            };
            return self.est_reject(now, from, seq, rej);
        }
        if let Err(e) = pfcp::presence::establishment(&r, &self.presence_context()) {
            return self.refuse_erroneous(now, from, seq, 50, Some(0), &e);
        }
        if self.sessions.len() >= self.cfg.max_sessions {
            // §8.2.1 cause 75: the configured limit holds on every datapath, not only where a
            // table fills up.
            self.stats.sessions_refused_limit += 1;
            tracing::warn!(%from, limit = self.cfg.max_sessions, "session limit reached");
            let rej = Reject {
                cause: Cause::NO_RESOURCES_AVAILABLE,
                offending_ie: None,
                failed_rule: None,
            };
            return self.est_reject(now, from, seq, rej);
        }
        let up_seid = self.new_seid();
        let mut a = Alloc {
            worker: self.cfg.worker,
            next_teid: &mut self.next_teid,
            next_usage: &mut self.next_usage,
            teid_owner: &self.teid_owner,
            ue_ip_owner: &self.ue_ip_owner,
            usage_live: &self.usage_live,
            fresh_teids: BTreeSet::new(),
            fresh_usage: BTreeSet::new(),
            choose: BTreeMap::new(),
            now,
        };
        let built = (|| {
            let mut rules = Rules::default();
            for f in &r.create_far {
                rules.create_far(f)?;
            }
            for q in &r.create_qer {
                rules.create_qer(q)?;
            }
            for u in &r.create_urr {
                rules.create_urr(u, &mut a)?;
            }
            for p in &r.create_pdr {
                rules.create_pdr(p, &mut a)?;
            }
            let want = rules.reduce(up_seid)?;
            check_keys(&want, up_seid, a.teid_owner, a.ue_ip_owner)?;
            Ok::<_, Reject>((rules, want))
        })();
        let (rules, want) = match built {
            Ok(x) => x,
            Err(rej) => return self.est_reject(now, from, seq, rej),
        };
        let mut installed = Installed::default();
        if let Err(e) = sync(dp, &want, &mut installed) {
            self.stats.datapath_errors += 1;
            tracing::error!(error = %e, "datapath refused a session's rules");
            let _ = sync(dp, &session::Desired::default(), &mut installed);
            return self.est_reject(now, from, seq, Reject::datapath(&e));
        }
        self.commit_keys(up_seid, &rules);
        let created = created_pdrs(&rules, self.cfg.n3_ip);
        let cp_addrs = f_seid_addrs(&r.cp_f_seid);
        if let Some(a) = self.associations.get_mut(&key) {
            a.declare(&cp_addrs);
        }
        self.sessions.insert(
            up_seid,
            Session {
                cp_seid: r.cp_f_seid.seid,
                cp_peer: from,
                node_key: key,
                cp_addrs,
                rules,
                installed,
            },
        );
        self.stats.sessions_established += 1;
        tracing::debug!(up_seid, cp_seid = r.cp_f_seid.seid, "session established");
        let body = Message::SessionEstablishmentResponse(SessionEstablishmentResponse {
            node_id: self.cfg.node_id.clone(),
            cause: Cause::REQUEST_ACCEPTED,
            offending_ie: None,
            up_f_seid: Some(FSeid {
                seid: up_seid,
                ipv4: Some(self.cfg.pfcp_ip),
                ipv6: None,
            }),
            created_pdr: created,
            unknown: Vec::new(),
        });
        self.respond(now, from, seq, Some(r.cp_f_seid.seid), body);
    }

    /// Records which TEIDs, UE addresses and usage ids the session now holds.
    fn commit_keys(&mut self, seid: u64, rules: &Rules) {
        self.teid_owner.retain(|_, v| *v != seid);
        self.ue_ip_owner.retain(|_, v| *v != seid);
        for t in rules.teids() {
            self.teid_owner.insert(t, seid);
        }
        for p in rules.pdrs.values() {
            if let Some(ip) = p.ue_ip {
                self.ue_ip_owner.insert(ip, seid);
            }
        }
        self.usage_live.extend(rules.usage_ids());
    }

    fn modify(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u32,
        seid: u64,
        r: SessionModificationRequest,
        dp: &mut dyn Datapath,
    ) {
        let Some(s) = self.sessions.get(&seid) else {
            return;
        };
        let cp_seid = r.cp_f_seid.map_or(s.cp_seid, |f| f.seid);
        let reply_seid = s.cp_seid;
        if let Err(e) = pfcp::presence::modification(&r, &self.presence_context()) {
            return self.refuse_erroneous(now, from, seq, 52, Some(reply_seid), &e);
        }
        let ctx = self.presence_context();
        let mut a = Alloc {
            worker: self.cfg.worker,
            next_teid: &mut self.next_teid,
            next_usage: &mut self.next_usage,
            teid_owner: &self.teid_owner,
            ue_ip_owner: &self.ue_ip_owner,
            usage_live: &self.usage_live,
            fresh_teids: BTreeSet::new(),
            fresh_usage: BTreeSet::new(),
            choose: BTreeMap::new(),
            now,
        };
        let old = s.rules.clone();
        // §7.5.4: removals first, then creations, then updates, all on a copy.
        let built = (|| {
            let mut rules = old.clone();
            for id in &r.remove_pdr {
                rules.remove(RuleKind::Pdr, u32::from(*id))?;
            }
            for id in &r.remove_far {
                rules.remove(RuleKind::Far, *id)?;
            }
            for id in &r.remove_qer {
                rules.remove(RuleKind::Qer, *id)?;
            }
            for id in &r.remove_urr {
                rules.remove(RuleKind::Urr, *id)?;
            }
            for f in &r.create_far {
                rules.create_far(f)?;
            }
            for q in &r.create_qer {
                rules.create_qer(q)?;
            }
            for u in &r.create_urr {
                rules.create_urr(u, &mut a)?;
            }
            for p in &r.create_pdr {
                rules.create_pdr(p, &mut a)?;
            }
            for f in &r.update_far {
                rules.update_far(f, &ctx)?;
            }
            for q in &r.update_qer {
                rules.update_qer(q)?;
            }
            for u in &r.update_urr {
                rules.update_urr(u, &ctx)?;
            }
            for p in &r.update_pdr {
                rules.update_pdr(p, &mut a)?;
            }
            let want = rules.reduce(seid)?;
            check_keys(&want, seid, a.teid_owner, a.ue_ip_owner)?;
            Ok::<_, Reject>((rules, want))
        })();
        let (rules, want) = match built {
            Ok(x) => x,
            Err(rej) => {
                tracing::info!(seid, cause = rej.cause.0, "session modification rejected");
                let body = Message::SessionModificationResponse(SessionResponse {
                    offending_ie: rej.offending_ie,
                    unknown: failed_rule_ie(&rej),
                    ..SessionResponse::new(rej.cause)
                });
                return self.respond(now, from, seq, Some(reply_seid), body);
            }
        };
        let Some(s) = self.sessions.get_mut(&seid) else {
            return;
        };
        if let Err(e) = sync(dp, &want, &mut s.installed) {
            self.stats.datapath_errors += 1;
            tracing::error!(seid, error = %e, "datapath refused modified rules");
            // Put the old rules back (best effort: the datapath already failed once).
            if let Ok(back) = old.reduce(seid) {
                let _ = sync(dp, &back, &mut s.installed);
            }
            let body = Message::SessionModificationResponse(SessionResponse::new(
                Reject::datapath(&e).cause,
            ));
            return self.respond(now, from, seq, Some(reply_seid), body);
        }
        // Usage of removed URRs is reported in the response (§5.2.2.3.1), and forgotten.
        let mut reports = Vec::new();
        let ntp_now = self.ntp(now);
        for (id, u) in &old.urrs {
            if !rules.urrs.contains_key(id) {
                let mut u = u.clone();
                account(&mut self.stats, dp, &mut u);
                if let Some(rep) =
                    usage_report(dp, *id, &mut u, Triggers(Triggers::TERMR), now, ntp_now)
                {
                    reports.push(rep);
                }
                let _ = session::ignore_missing(dp.remove_usage(u.usage));
                self.usage_live.remove(&u.usage);
            }
        }
        let mut rules = rules;
        // Query URR (§7.5.4.10) and QAURR (§8.2.60): an immediate report, IMMER trigger.
        let (queried, all) = session::queried_urrs(&r.unknown);
        for (id, u) in rules.urrs.iter_mut() {
            if all || queried.contains(id) {
                const IMMER: u32 = 0x80;
                if let Some(rep) = usage_report(dp, *id, u, Triggers(IMMER), now, ntp_now) {
                    reports.push(rep);
                }
            }
        }
        self.commit_keys(seid, &rules);
        // Created PDR only for the PDRs whose F-TEID this request made us choose.
        let chose = |id: u16| {
            r.create_pdr.iter().any(|p| p.pdr_id == id)
                || r.update_pdr.iter().any(|p| {
                    p.pdr_id == id
                        && p.pdi
                            .as_ref()
                            .is_some_and(|d| matches!(d.f_teid, Some(FTeid::Choose { .. })))
                })
        };
        let created: Vec<CreatedPdr> = created_pdrs(&rules, self.cfg.n3_ip)
            .into_iter()
            .filter(|c| chose(c.pdr_id))
            .collect();
        if let Some(s) = self.sessions.get_mut(&seid) {
            s.rules = rules;
            s.cp_seid = cp_seid;
            // §7.5.4.1: a new CP F-SEID replaces the old one, and its addresses those the
            // session declared.
            if let Some(f) = &r.cp_f_seid {
                let new = f_seid_addrs(f);
                let old = std::mem::replace(&mut s.cp_addrs, new.clone());
                if let Some(a) = self.associations.get_mut(&s.node_key) {
                    a.declare(&new);
                    a.undeclare(&old);
                }
            }
        }
        self.stats.usage_reports += reports.len() as u64;
        let body = Message::SessionModificationResponse(SessionResponse {
            created_pdr: created,
            usage_reports: reports,
            ..SessionResponse::new(Cause::REQUEST_ACCEPTED)
        });
        self.respond(now, from, seq, Some(cp_seid), body);
    }

    fn delete(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u32,
        seid: u64,
        dp: &mut dyn Datapath,
    ) {
        let ntp_now = self.ntp(now);
        // Final usage (§7.5.7.2, trigger TERMR) is read before the counters are removed.
        let mut reports = Vec::new();
        if let Some(s) = self.sessions.get_mut(&seid) {
            for (id, u) in s.rules.urrs.iter_mut() {
                if let Some(rep) = usage_report(dp, *id, u, Triggers(Triggers::TERMR), now, ntp_now)
                {
                    reports.push(rep);
                }
            }
        }
        let Some(s) = self.remove_session(seid, dp) else {
            return;
        };
        self.stats.sessions_deleted += 1;
        self.stats.usage_reports += reports.len() as u64;
        tracing::debug!(seid, "session deleted");
        let body = Message::SessionDeletionResponse(SessionResponse {
            usage_reports: reports,
            ..SessionResponse::new(Cause::REQUEST_ACCEPTED)
        });
        self.respond(now, from, seq, Some(s.cp_seid), body);
    }

    /// Timers: retransmissions, heartbeats, usage thresholds, expiry of cached responses.
    pub fn handle_timeout(&mut self, now: Instant, dp: &mut dyn Datapath) {
        self.retransmit(now, dp);
        self.heartbeats(now);
        if now >= self.next_usage_poll {
            self.next_usage_poll = now + self.cfg.usage_poll;
            self.check_usage(now, dp);
        }
        self.cache.handle_timeout(now);
    }

    fn retransmit(&mut self, now: Instant, dp: &mut dyn Datapath) {
        while let Some(due) = self.pending.poll_due(now) {
            let (seq, p) = match due {
                Due::Retransmit { bytes, meta, .. } => {
                    self.stats.requests_retransmitted += 1;
                    self.transmits.push_back(Transmit {
                        destination: meta.peer,
                        contents: bytes.to_vec(),
                    });
                    continue;
                }
                Due::GaveUp { sequence, meta } => (sequence, meta),
            };
            self.stats.requests_timed_out += 1;
            if p.kind == PendingKind::Heartbeat {
                // §6.2.2.2 / §6.2.6.2: no heartbeat answer after N1 retries: the peer is dead;
                // its association and sessions go.
                let key = self
                    .associations
                    .iter()
                    .find(|(_, a)| a.heartbeat_pending == Some(seq))
                    .map(|(k, _)| k.clone());
                if let Some(key) = key {
                    if let Some(a) = self.associations.remove(&key) {
                        tracing::warn!(peer = %a.peer, node = ?a.node_id, "PFCP peer lost");
                    }
                    self.stats.peers_lost += 1;
                    self.stats.associations_ended += 1;
                    self.drop_sessions_of(&key, dp);
                }
            }
        }
    }

    fn heartbeats(&mut self, now: Instant) {
        let Some(interval) = self.cfg.heartbeat_interval else {
            return;
        };
        let due: Vec<(Vec<u8>, SocketAddr)> = self
            .associations
            .iter()
            .filter(|(_, a)| {
                a.heartbeat_pending.is_none() && a.next_heartbeat.is_some_and(|t| t <= now)
            })
            .map(|(k, a)| (k.clone(), a.peer))
            .collect();
        for (key, peer) in due {
            let body = Message::HeartbeatRequest(Heartbeat {
                recovery_time_stamp: self.cfg.recovery_time_stamp,
                unknown: Vec::new(),
            });
            let seq = self.request(now, peer, None, body, PendingKind::Heartbeat);
            if let Some(a) = self.associations.get_mut(&key) {
                a.heartbeat_pending = Some(seq);
                a.next_heartbeat = Some(now + interval);
            }
        }
        // An association whose heartbeat is outstanding waits for the answer or the timeout;
        // keep its timer from firing in a loop meanwhile.
        for a in self.associations.values_mut() {
            if a.heartbeat_pending.is_some() && a.next_heartbeat.is_some_and(|t| t <= now) {
                a.next_heartbeat = Some(now + interval);
            }
        }
    }

    /// §5.2.2.3.1: a URR whose volume or time threshold is reached, or whose measurement
    /// period (PERIO) has passed, is reported in a Session Report Request, and its measurement
    /// restarts.
    fn check_usage(&mut self, now: Instant, dp: &mut dyn Datapath) {
        let ntp_now = self.ntp(now);
        let mut out: Vec<(SocketAddr, u64, Vec<pfcp::ie::UsageReport>)> = Vec::new();
        for s in self.sessions.values_mut() {
            let mut reports = Vec::new();
            for (id, u) in s.rules.urrs.iter_mut() {
                let Ok(total) = dp.usage(u.usage) else {
                    continue;
                };
                add_volume(&mut self.stats, &total, &mut u.counted);
                let mut trig = 0;
                if u.triggers.0 & Triggers::VOLTH != 0 {
                    if let Some(th) = u.volume_threshold {
                        let (ul, dl) = delta(&total, &u.base);
                        let hit = |t: Option<u64>, v: u64| t.is_some_and(|t| t > 0 && v >= t);
                        if hit(th.total, ul.saturating_add(dl))
                            || hit(th.uplink, ul)
                            || hit(th.downlink, dl)
                        {
                            trig |= Triggers::VOLTH;
                        }
                    }
                }
                if u.triggers.0 & Triggers::TIMTH != 0 {
                    if let Some(th) = u.time_threshold.filter(|t| *t > 0) {
                        if now.saturating_duration_since(u.since)
                            >= Duration::from_secs(u64::from(th))
                        {
                            trig |= Triggers::TIMTH;
                        }
                    }
                }
                if u.triggers.0 & Triggers::PERIO != 0 {
                    if let Some(p) = u.period.filter(|p| *p > 0) {
                        let elapsed = now.saturating_duration_since(u.since);
                        if elapsed >= Duration::from_secs(u64::from(p)) {
                            trig |= Triggers::PERIO;
                        }
                    }
                }
                if trig != 0 {
                    if let Some(rep) = usage_report(dp, *id, u, Triggers(trig), now, ntp_now) {
                        reports.push(rep);
                    }
                }
            }
            if !reports.is_empty() {
                out.push((s.cp_peer, s.cp_seid, reports));
            }
        }
        for (peer, cp_seid, reports) in out {
            self.stats.session_reports += 1;
            self.stats.usage_reports += reports.len() as u64;
            let body = Message::SessionReportRequest(SessionReportRequest {
                report_type: SessionReportRequest::USAR,
                usage_reports: reports,
                unknown: Vec::new(),
            });
            self.request(now, peer, Some(cp_seid), body, PendingKind::Report);
        }
    }
}

/// Adds what `u`'s counters measured since they were last added to the node's N3 volume.
fn account(stats: &mut Stats, dp: &mut dyn Datapath, u: &mut session::UrrState) {
    if let Ok(total) = dp.usage(u.usage) {
        add_volume(stats, &total, &mut u.counted);
    }
}

fn add_volume(
    stats: &mut Stats,
    total: &crate::datapath::Usage,
    counted: &mut crate::datapath::Usage,
) {
    let (ul, dl) = delta(total, counted);
    stats.n3_ul_bytes = stats.n3_ul_bytes.wrapping_add(ul);
    stats.n3_dl_bytes = stats.n3_dl_bytes.wrapping_add(dl);
    *counted = *total;
}

/// Uplink and downlink octets counted since `base`.
fn delta(total: &crate::datapath::Usage, base: &crate::datapath::Usage) -> (u64, u64) {
    (
        total.ul_bytes.saturating_sub(base.ul_bytes),
        total.dl_bytes.saturating_sub(base.dl_bytes),
    )
}

/// A usage report of URR `id` for the period since its last report, which it closes: the
/// counters at this point become the new base, UR-SEQN advances (§8.2.77).
fn usage_report(
    dp: &mut dyn Datapath,
    id: u32,
    u: &mut session::UrrState,
    trigger: Triggers,
    now: Instant,
    ntp_now: u32,
) -> Option<pfcp::ie::UsageReport> {
    let total = dp.usage(u.usage).ok()?;
    let (ul, dl) = delta(&total, &u.base);
    let ulp = total.ul_packets.saturating_sub(u.base.ul_packets);
    let dlp = total.dl_packets.saturating_sub(u.base.dl_packets);
    let secs = now.saturating_duration_since(u.since).as_secs();
    let secs32 = u32::try_from(secs).unwrap_or(u32::MAX);
    let volume = (u.method.0 & pfcp::ie::MeasurementMethod::VOLUM != 0).then_some(Volume {
        total: Some(ul.saturating_add(dl)),
        uplink: Some(ul),
        downlink: Some(dl),
        total_packets: Some(ulp.saturating_add(dlp)),
        uplink_packets: Some(ulp),
        downlink_packets: Some(dlp),
    });
    let duration = (u.method.0 & pfcp::ie::MeasurementMethod::DURAT != 0).then_some(secs32);
    let rep = pfcp::ie::UsageReport {
        urr_id: id,
        ur_seqn: u.seqn,
        trigger,
        start_time: Some(ntp_now.wrapping_sub(secs32)),
        end_time: Some(ntp_now),
        volume,
        duration,
        unknown: Vec::new(),
    };
    u.seqn = u.seqn.wrapping_add(1);
    u.base = total;
    u.since = now;
    Some(rep)
}

/// Refuses rules whose keys another session holds: installing them would replace that
/// session's rule in the datapath.
fn check_keys(
    want: &session::Desired,
    seid: u64,
    teid_owner: &HashMap<u32, u64>,
    ue_ip_owner: &HashMap<Ipv4Addr, u64>,
) -> Result<(), Reject> {
    for (t, r) in &want.uplink {
        if teid_owner.get(t).is_some_and(|o| *o != seid) {
            return Err(Reject {
                cause: Cause::RULE_CREATION_FAILURE,
                offending_ie: None,
                failed_rule: Some((RuleKind::Pdr, u32::from(r.pdr_id))),
            });
        }
    }
    for (ip, r) in &want.downlink {
        if ue_ip_owner.get(ip).is_some_and(|o| *o != seid) {
            return Err(Reject {
                cause: Cause::RULE_CREATION_FAILURE,
                offending_ie: None,
                failed_rule: Some((RuleKind::Pdr, u32::from(r.pdr_id))),
            });
        }
    }
    Ok(())
}

/// Created PDR for every PDR whose F-TEID we chose (§7.5.3.2).
fn created_pdrs(rules: &Rules, n3: Ipv4Addr) -> Vec<CreatedPdr> {
    rules
        .pdrs
        .iter()
        .filter(|(_, p)| p.chosen)
        .filter_map(|(id, p)| {
            Some(CreatedPdr {
                pdr_id: *id,
                f_teid: Some(FTeid::Assigned {
                    teid: p.teid?,
                    ipv4: Some(n3),
                    ipv6: None,
                }),
                unknown: Vec::new(),
            })
        })
        .collect()
}

/// The Failed Rule ID IE (§8.2.80) of a rule rejection: Rule ID Type, then the id (2 octets
/// for a PDR, 4 for the others).
fn failed_rule_ie(r: &Reject) -> Vec<UnknownIe> {
    let Some((kind, id)) = r.failed_rule else {
        return Vec::new();
    };
    let mut value = vec![kind as u8];
    match kind {
        RuleKind::Pdr => {
            value.extend_from_slice(&u16::try_from(id).unwrap_or(u16::MAX).to_be_bytes())
        }
        _ => value.extend_from_slice(&id.to_be_bytes()),
    }
    vec![UnknownIe {
        ie_type: IE_FAILED_RULE_ID,
        value,
    }]
}

#[cfg(test)]
mod tests;
