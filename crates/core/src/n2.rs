//! One worker's N2 side: its SCTP socket(s), the associations that reached them, and the
//! non-UE-associated NGAP state of those associations ([`AmfN2`]: NG Setup).
//! UE-associated messages are returned to the worker for routing by owner.
//!
//! Where associations live (the mechanism is chosen per transport and reported at start-up,
//! so an operator can tell whether associations are steered or only hashed):
//!
//! * UDP encapsulation (RFC 6951): one `SO_REUSEPORT` socket per worker on the
//!   encapsulation port. The `sk_reuseport` program reads the SCTP source port (the first
//!   two bytes of the UDP payload, RFC 9260 §3.1) and picks socket `port % workers`, so
//!   every packet of an association, INIT and COOKIE ECHO included, reaches one worker,
//!   which runs its own endpoint. Without BPF the kernel's reuseport hash of the 4-tuple
//!   does the same as long as the group does not change: associations still stay whole,
//!   only their placement is the kernel's.
//! * Raw IP (protocol 132): the kernel gives every raw socket a copy of every packet and
//!   has no reuseport for them, so associations stay on worker 0 and UE messages are
//!   handed off from there.
//!
//! Association ids are core-wide: the owning worker sits in the top 8 bits
//! ([`ids::n2::assoc_owner`]), so a reply produced on any worker goes straight to the worker
//! that owns the association.
//!
//! Known gap: each worker's [`AmfN2`] sees only its own gNBs, so nothing compares Global
//! gNB IDs across associations on different workers (two associations announcing the same
//! gNB are both accepted). No such check existed when one worker held every association
//! either; if one is wanted, a registry touched only at NG Setup (not on the UE path) is
//! the place for it.

use std::collections::HashMap;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use ids::n2::{assoc_id, ASSOC_COUNTER_MASK};
use nf::amf::n2::{AmfN2, AmfN2Config, N2Output};
use nf::amf::overload::OverloadSignal;
use nf::amf::registration::{self, Route};
use nf::host::UeNgap;
use proto::ids::GlobalRanNodeId;
use sctp::{AssocId, Endpoint, EndpointConfig, Event};
use sctp_io::{SctpSocket, Transport};
use steer::{WorkerId, Workers};
use steer5g_config::{N2Config, Transport as TransportKind};

use crate::{BpfPolicy, CoreError, N2Placement, N2WorkerReport};

/// SCTP Payload Protocol Identifier of NGAP (TS 38.412 §7).
const NGAP_PPID: u32 = 60;

/// The UDP encapsulation sockets of every worker, bound before the workers start so that a
/// bind error is reported synchronously.
pub(crate) struct UdpGroup {
    /// Worker i takes `sockets[i]`.
    pub(crate) sockets: Vec<Option<UdpSocket>>,
    pub(crate) local: SocketAddrV4,
    pub(crate) placement: N2Placement,
    pub(crate) steering: Option<steer_bpf::Steering>,
}

impl UdpGroup {
    /// Binds one socket per worker on the encapsulation address of `cfg`, steered by SCTP
    /// source port when `bpf` allows and the kernel lets us.
    pub(crate) fn bind(
        cfg: &N2Config,
        workers: Workers,
        bpf: BpfPolicy,
    ) -> Result<Self, CoreError> {
        let addr = SocketAddrV4::new(cfg.addr, cfg.udp_port);
        let err = |source: std::io::Error| CoreError::Bind {
            what: format!("N2 udp {addr}"),
            source,
        };
        // SO_REUSEPORT would let this core silently join another process's group on the
        // same port and take part of its associations: make sure nobody is bound there yet.
        if addr.port() != 0 {
            drop(UdpSocket::bind(addr).map_err(err)?);
        }
        let n = workers.count();
        if n == 1 {
            let s = UdpSocket::bind(addr).map_err(err)?;
            let local = v4_local(&s).map_err(err)?;
            return Ok(UdpGroup {
                sockets: vec![Some(s)],
                local,
                placement: N2Placement::Worker0,
                steering: None,
            });
        }
        if bpf == BpfPolicy::Off {
            let sockets = bind_reuseport(addr, n).map_err(err)?;
            let local = sockets
                .first()
                .map(v4_local)
                .transpose()
                .map_err(err)?
                .unwrap_or(addr);
            return Ok(UdpGroup {
                sockets: sockets.into_iter().map(Some).collect(),
                local,
                placement: N2Placement::KernelHash("BPF steering turned off".to_owned()),
                steering: None,
            });
        }
        // RFC 9260 §3.1: the SCTP common header starts with the 16-bit source port.
        let spec = steer_bpf::IdSpec::new(0, 2, 0)
            .map_err(|e| CoreError::N2(format!("SCTP source port id spec: {e}")))?;
        let opts = steer_bpf::GroupOptions {
            require_bpf: bpf == BpfPolicy::Require,
        };
        let group = steer_bpf::ReuseportGroup::bind_udp(addr.into(), n, spec, &opts).map_err(
            |e| match e {
                steer_bpf::Error::Socket { source, .. } => err(source),
                other => CoreError::N2Steering(other),
            },
        )?;
        let placement = match group.unsteered_reason() {
            None => N2Placement::SourcePort,
            Some(why) => N2Placement::KernelHash(why.to_string()),
        };
        let local = match group.local_addr() {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => addr,
        };
        let (sockets, steering) = group.into_parts();
        Ok(UdpGroup {
            sockets: sockets.into_iter().map(Some).collect(),
            local,
            placement,
            steering,
        })
    }
}

fn v4_local(s: &UdpSocket) -> std::io::Result<SocketAddrV4> {
    match s.local_addr()? {
        SocketAddr::V4(a) => Ok(a),
        SocketAddr::V6(_) => Err(std::io::Error::other("not IPv4")),
    }
}

/// `n` UDP sockets sharing `addr` with `SO_REUSEPORT` and no steering program: the kernel
/// hashes each datagram's 4-tuple onto one of them.
fn bind_reuseport(addr: SocketAddrV4, n: u16) -> std::io::Result<Vec<UdpSocket>> {
    use socket2::{Domain, Protocol, Socket, Type};
    let mut addr = addr;
    let mut out = Vec::with_capacity(usize::from(n));
    for _ in 0..n {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
        s.set_reuse_port(true)?;
        s.bind(&SocketAddr::V4(addr).into())?;
        let s: UdpSocket = s.into();
        if addr.port() == 0 {
            addr = v4_local(&s)?;
        }
        out.push(s);
    }
    Ok(out)
}

/// The bounds of one worker's N2 endpoints (DESIGN.md principle 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct N2Limits {
    /// Associations of this worker's raw IP endpoint (worker 0 holds them all: the whole
    /// `limits.n2_max_associations`).
    pub(crate) raw_associations: usize,
    /// Associations of this worker's UDP encapsulation endpoint: the limit split evenly
    /// (rounded up) between the workers of the group, each of which owns the associations
    /// its socket receives.
    pub(crate) udp_associations: usize,
    /// Receive window of each association, bytes.
    pub(crate) receive_window: u32,
    /// Fragments each association holds for reassembly.
    pub(crate) max_fragments: usize,
    /// RTO, retransmission counts and heartbeat interval (`[sctp]`, RFC 9260 §16).
    pub(crate) timers: steer5g_config::SctpTimers,
}

impl N2Limits {
    /// The configuration's `[limits]` and `[sctp]` for one of `workers` workers.
    pub(crate) fn new(cfg: &steer5g_config::Config, workers: Workers) -> Self {
        let l = &cfg.limits;
        let total = usize::try_from(l.n2_max_associations).unwrap_or(usize::MAX);
        N2Limits {
            raw_associations: total,
            udp_associations: total.div_ceil(usize::from(workers.count())),
            receive_window: l.sctp_receive_window,
            max_fragments: usize::try_from(l.sctp_max_fragments).unwrap_or(usize::MAX),
            timers: cfg.sctp,
        }
    }
}

/// One association's parameters: the configuration's timers and bounds over RFC 9260's
/// defaults.
fn sctp_association(limits: &N2Limits) -> sctp::AssociationConfig {
    let t = &limits.timers;
    let (rto_initial, rto_min, rto_max) = t.rto();
    sctp::AssociationConfig {
        a_rwnd: limits.receive_window,
        max_reassembly_fragments: limits.max_fragments,
        rto_initial,
        rto_min,
        rto_max,
        heartbeat_interval: t.heartbeat_interval(),
        max_init_retransmits: t.max_init_retransmits,
        association_max_retrans: t.association_max_retrans,
        path_max_retrans: t.path_max_retrans,
        ..sctp::AssociationConfig::default()
    }
}

struct Sock {
    kind: TransportKind,
    sock: SctpSocket,
}

/// One worker's N2 sockets and associations.
pub(crate) struct N2Side {
    worker: WorkerId,
    socks: Vec<Sock>,
    amf: AmfN2,
    out: Vec<N2Output>,
    ids: HashMap<(usize, AssocId), u32>,
    rev: HashMap<u32, (usize, AssocId)>,
    next: u32,
    /// Associations that came up on this worker.
    associations: u64,
}

impl N2Side {
    /// The gNBs set up on this worker's associations (NG Setup accepted).
    pub(crate) fn gnb_count(&self) -> usize {
        self.amf.ready_gnbs()
    }

    /// Opens this worker's transports: the raw IP socket (`raw`, worker 0 only) and its
    /// socket of the UDP group. `None` when there is none. Must run inside the worker's
    /// runtime.
    pub(crate) fn open(
        worker: WorkerId,
        cfg: &N2Config,
        amf: AmfN2Config,
        limits: N2Limits,
        raw: bool,
        udp: Option<UdpSocket>,
    ) -> Result<Option<Self>, CoreError> {
        let mut transports = Vec::new();
        if raw {
            let t = Transport::bind_raw(cfg.addr).map_err(|source| CoreError::N2Bind {
                transport: TransportKind::Raw,
                source,
            })?;
            transports.push((TransportKind::Raw, t));
        }
        if let Some(s) = udp {
            let t = Transport::from_udp(s).map_err(|source| CoreError::N2Bind {
                transport: TransportKind::Udp,
                source,
            })?;
            transports.push((TransportKind::Udp, t));
        }
        if transports.is_empty() {
            return Ok(None);
        }
        let socks = transports
            .into_iter()
            .map(|(kind, transport)| {
                let max_associations = match kind {
                    TransportKind::Raw => limits.raw_associations,
                    TransportKind::Udp => limits.udp_associations,
                };
                let endpoint = Endpoint::new(EndpointConfig {
                    listen_port: Some(cfg.sctp_port),
                    association: sctp_association(&limits),
                    // RFC 9260 §5.1.3: the cookie key must not be guessable. Each worker
                    // has its own: INIT and COOKIE ECHO come from the same source port,
                    // so they reach the same worker.
                    cookie_key: rand::random(),
                    cookie_lifetime: Duration::from_secs(60),
                    // RFC 9260 §3.3.10.4: INITs beyond it get ABORT "Out of Resource".
                    max_associations,
                    // RFC 9260 §5.3.1: verification tags and initial TSNs must be
                    // unpredictable.
                    rng_seed: rand::random(),
                });
                Sock {
                    kind,
                    sock: SctpSocket::new(transport, endpoint),
                }
            })
            .collect();
        Ok(Some(Self {
            worker,
            socks,
            amf: AmfN2::new(amf),
            out: Vec::new(),
            ids: HashMap::new(),
            rev: HashMap::new(),
            next: 1,
            associations: 0,
        }))
    }

    /// Runs due SCTP timers (a `drive` that lost a race to other work did not) and sends
    /// what every endpoint has ready.
    pub(crate) async fn flush(&mut self) {
        for s in &mut self.socks {
            s.sock.endpoint_mut().handle_timeout(Instant::now());
            if let Err(e) = s.sock.flush().await {
                tracing::warn!(transport = %s.kind, error = %e, "N2 send failed");
            }
        }
    }

    /// Waits for packets or timers on any socket, at most until `deadline`. Cancel-safe
    /// between packets.
    pub(crate) async fn drive(&mut self, deadline: Instant) -> std::io::Result<()> {
        let mut it = self.socks.iter_mut();
        match (it.next(), it.next()) {
            (Some(a), None) => a.sock.drive(Some(deadline)).await,
            (Some(a), Some(b)) => {
                tokio::select! {
                    r = a.sock.drive(Some(deadline)) => r,
                    r = b.sock.drive(Some(deadline)) => r,
                }
            }
            _ => {
                tokio::time::sleep_until(deadline.into()).await;
                Ok(())
            }
        }
    }

    fn global(&mut self, sock: usize, id: AssocId) -> u32 {
        if let Some(g) = self.ids.get(&(sock, id)) {
            return *g;
        }
        let mut c = self.next;
        // Skip counter 0 (worker 0's id 0 would read as "no association" to a human)
        // and ids still in use after the counter wrapped.
        while c & ASSOC_COUNTER_MASK == 0 || self.rev.contains_key(&assoc_id(self.worker, c)) {
            c = c.wrapping_add(1);
        }
        self.next = c.wrapping_add(1);
        let g = assoc_id(self.worker, c);
        self.ids.insert((sock, id), g);
        self.rev.insert(g, (sock, id));
        g
    }

    fn forget(&mut self, sock: usize, id: AssocId) -> Option<u32> {
        let g = self.ids.remove(&(sock, id))?;
        self.rev.remove(&g);
        Some(g)
    }

    /// An AMF worker entered or left overload: OVERLOAD START / STOP to this worker's gNBs
    /// as the AMF's overloaded workers change (TS 38.413 §8.7.6, §8.7.7).
    pub(crate) fn overload(&mut self, signal: OverloadSignal) {
        self.amf.overload(signal, &mut self.out);
        for o in std::mem::take(&mut self.out) {
            if let N2Output::Send { assoc, stream, pdu } = o {
                self.send(assoc, stream, pdu);
            }
        }
    }

    /// INITs refused at the association limit and DATA chunks dropped for want of room,
    /// so far, over this worker's endpoints.
    pub(crate) fn refusals(&self) -> (u64, u64) {
        self.socks.iter().fold((0, 0), |(a, d), s| {
            let st = s.sock.endpoint().stats();
            (a + st.associations_refused, d + st.data_dropped)
        })
    }

    /// Queues an NGAP PDU on core-wide association `assoc` (one of this worker's).
    pub(crate) fn send(&mut self, assoc: u32, stream: u16, pdu: Vec<u8>) {
        let Some(&(i, id)) = self.rev.get(&assoc) else {
            tracing::debug!(assoc, "NGAP message for an association that is gone");
            return;
        };
        if let Some(s) = self.socks.get_mut(i) {
            if let Err(e) = s
                .sock
                .endpoint_mut()
                .send(id, stream, NGAP_PPID, false, pdu.into())
            {
                tracing::debug!(assoc, error = %e, "cannot send NGAP message");
            }
        }
    }

    /// Handles every SCTP event: association state and non-UE NGAP here, UE-associated
    /// messages appended to `ue` with their route. Returns the NGAP messages read.
    pub(crate) fn poll(&mut self, workers: Workers, ue: &mut Vec<UeNgap>) -> u64 {
        let mut read = 0u64;
        for i in 0..self.socks.len() {
            loop {
                let Some((id, ev)) = self
                    .socks
                    .get_mut(i)
                    .and_then(|s| s.sock.endpoint_mut().poll_event())
                else {
                    break;
                };
                match ev {
                    Event::Connected { .. } => {
                        self.associations += 1;
                        let g = self.global(i, id);
                        self.amf.association_up(g);
                    }
                    Event::Restarted => {
                        // RFC 9260 §5.2.4: the peer restarted; its gNB context is stale.
                        let g = self.global(i, id);
                        self.amf.association_down(g);
                        self.amf.association_up(g);
                    }
                    Event::Closed { .. } => {
                        if let Some(g) = self.forget(i, id) {
                            self.amf.association_down(g);
                        }
                    }
                    Event::PeerError { causes } => {
                        tracing::warn!(assoc = %id, ?causes, "SCTP ERROR chunk from peer");
                    }
                    Event::Message(m) => {
                        read += 1;
                        let assoc = self.global(i, id);
                        let gnb_id = match self.amf.gnb(assoc).and_then(|g| g.global_ran_node_id) {
                            Some(GlobalRanNodeId::Gnb { gnb_id, .. }) => gnb_id.id(),
                            _ => 0,
                        };
                        let route = registration::route(&m.data, gnb_id, workers);
                        if route == Route::NonUe {
                            self.amf.handle(assoc, m.stream, &m.data, &mut self.out);
                            let out = std::mem::take(&mut self.out);
                            for o in out {
                                if let N2Output::Send { assoc, stream, pdu } = o {
                                    self.send(assoc, stream, pdu);
                                }
                            }
                            continue;
                        }
                        ue.push(UeNgap {
                            route,
                            assoc,
                            stream: m.stream,
                            ready: self.amf.is_ready(assoc),
                            gnb_id,
                            pdu: m.data.to_vec(),
                        });
                    }
                }
            }
        }
        read
    }

    /// Graceful SCTP shutdown of every association (RFC 9260 §9.2), bounded by `grace`,
    /// then the counters.
    pub(crate) async fn shutdown(&mut self, grace: Duration) -> N2WorkerReport {
        let now = Instant::now();
        for (i, s) in self.socks.iter_mut().enumerate() {
            let ids: Vec<AssocId> = self
                .ids
                .keys()
                .filter(|(si, _)| *si == i)
                .map(|(_, id)| *id)
                .collect();
            for id in ids {
                let _ = s.sock.endpoint_mut().shutdown(now, id);
            }
        }
        let deadline = Instant::now() + grace;
        while self.socks.iter().any(|s| !s.sock.endpoint().is_empty()) && Instant::now() < deadline
        {
            self.flush().await;
            if self.drive(deadline).await.is_err() {
                break;
            }
            for s in &mut self.socks {
                while s.sock.endpoint_mut().poll_event().is_some() {}
            }
        }
        let mut r = N2WorkerReport {
            worker: self.worker.0,
            associations: self.associations,
            n2: self.amf.stats().clone(),
            gnb_contexts: self.amf.gnbs().cloned().collect(),
            ..N2WorkerReport::default()
        };
        for s in &self.socks {
            r.sctp.push((s.kind, s.sock.endpoint().stats().clone()));
            r.io.push((s.kind, s.sock.io_stats()));
        }
        r
    }
}

/// Adds `o` to `t` (the endpoints of several workers summed per transport).
pub(crate) fn add_endpoint_stats(t: &mut sctp::EndpointStats, o: &sctp::EndpointStats) {
    t.packets_received += o.packets_received;
    t.packets_sent += o.packets_sent;
    t.bad_checksum += o.bad_checksum;
    t.bad_vtag += o.bad_vtag;
    t.malformed += o.malformed;
    t.out_of_the_blue += o.out_of_the_blue;
    t.foreign_port += o.foreign_port;
    t.unknown_chunks += o.unknown_chunks;
    t.stale_cookies += o.stale_cookies;
    t.forged_cookies += o.forged_cookies;
    t.init_zero_streams += o.init_zero_streams;
    t.invalid_stream_data += o.invalid_stream_data;
    t.retransmissions += o.retransmissions;
    t.fast_retransmits += o.fast_retransmits;
    t.associations_established += o.associations_established;
    t.associations_closed += o.associations_closed;
    t.aborts_sent += o.aborts_sent;
    t.aborts_received += o.aborts_received;
    t.heartbeats_sent += o.heartbeats_sent;
    t.duplicate_tsns += o.duplicate_tsns;
    t.data_dropped += o.data_dropped;
    t.associations_refused += o.associations_refused;
}

/// Adds `o` to `t`.
pub(crate) fn add_io_stats(t: &mut sctp_io::IoStats, o: &sctp_io::IoStats) {
    t.wakeups += o.wakeups;
    t.packets_in += o.packets_in;
    t.packets_out += o.packets_out;
    t.send_calls += o.send_calls;
    t.send_errors += o.send_errors;
}
