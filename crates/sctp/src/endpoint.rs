//! The endpoint: many associations behind one set of SCTP ports. It demultiplexes packets
//! by (local port, remote address, remote port), answers INITs statelessly with signed
//! cookies (RFC 9260 §5.1.3), and applies the out-of-the-blue rules (§8.4).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::association::{random_tag, Association, Ctx, InitAckParams, NewAssoc};
use crate::config::EndpointConfig;
use crate::cookie::{CookieData, CookieError};
use crate::types::{
    AssocId, AssocInfo, ClosedError, ConnectError, EndpointStats, Event, SendError, State, Transmit,
};
use crate::wire::{
    chunk_type, emit_tlv, finish_packet, param_type, Chunk, ChunkIter, CommonHeader, ErrorCause,
    InitChunk, Packet, Param, COMMON_HEADER_LEN,
};

type Key = (u16, SocketAddr, u16);

/// Largest cookie life extension granted to a Cookie Preservative (RFC 9260 §5.2.6 lets the
/// receiver ignore the suggestion; a bound keeps replay windows short).
const MAX_COOKIE_PRESERVATIVE: Duration = Duration::from_secs(30);

/// Most bytes of unrecognized parameters echoed back in an INIT ACK.
const MAX_UNRECOGNIZED_ECHO: usize = 512;

/// An SCTP endpoint holding any number of associations.
///
/// Not thread-safe by design: one endpoint lives on one core, driven by its I/O loop.
pub struct Endpoint {
    config: EndpointConfig,
    rng: SmallRng,
    epoch: Option<Instant>,
    assocs: HashMap<AssocId, Association>,
    by_key: HashMap<Key, AssocId>,
    ports: HashMap<u16, usize>,
    next_id: u32,
    dirty: VecDeque<AssocId>,
    transmits: VecDeque<Transmit>,
    events: VecDeque<(AssocId, Event)>,
    stats: EndpointStats,
    scratch_ids: Vec<AssocId>,
    /// Recently closed associations, remembered so a retransmitted SHUTDOWN ACK (our
    /// SHUTDOWN COMPLETE was lost) still gets its SHUTDOWN COMPLETE after the port is freed.
    linger: HashMap<Key, Instant>,
    linger_order: VecDeque<(Instant, Key)>,
    last_now: Option<Instant>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("listen_port", &self.config.listen_port)
            .field("associations", &self.assocs.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// What a first pass over a packet's chunks found.
struct Summary {
    count: usize,
    first: u8,
    has_abort: bool,
    has_shutdown_ack: bool,
    has_no_reply: bool,
    solo_violation: bool,
}

fn summarize(chunks: &[u8]) -> Option<Summary> {
    let mut s = Summary {
        count: 0,
        first: 0,
        has_abort: false,
        has_shutdown_ack: false,
        has_no_reply: false,
        solo_violation: false,
    };
    for raw in ChunkIter::new(chunks) {
        let raw = raw.ok()?;
        Chunk::parse(raw).ok()?;
        if s.count == 0 {
            s.first = raw.ty;
        }
        s.count += 1;
        match raw.ty {
            chunk_type::ABORT => s.has_abort = true,
            chunk_type::SHUTDOWN_ACK => s.has_shutdown_ack = true,
            chunk_type::SHUTDOWN_COMPLETE | chunk_type::COOKIE_ACK | chunk_type::ERROR => {
                s.has_no_reply = true
            }
            _ => {}
        }
        if matches!(
            raw.ty,
            chunk_type::INIT | chunk_type::INIT_ACK | chunk_type::SHUTDOWN_COMPLETE
        ) && s.count > 1
        {
            s.solo_violation = true;
        }
    }
    if s.count > 1
        && matches!(
            s.first,
            chunk_type::INIT | chunk_type::INIT_ACK | chunk_type::SHUTDOWN_COMPLETE
        )
    {
        s.solo_violation = true;
    }
    (s.count > 0).then_some(s)
}

impl Endpoint {
    /// Creates an endpoint.
    pub fn new(config: EndpointConfig) -> Self {
        Endpoint {
            rng: SmallRng::seed_from_u64(config.rng_seed),
            config,
            epoch: None,
            assocs: HashMap::new(),
            by_key: HashMap::new(),
            ports: HashMap::new(),
            next_id: 1,
            dirty: VecDeque::new(),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            stats: EndpointStats::default(),
            scratch_ids: Vec::new(),
            linger: HashMap::new(),
            linger_order: VecDeque::new(),
            last_now: None,
        }
    }

    fn epoch(&mut self, now: Instant) -> Instant {
        self.last_now = Some(now);
        *self.epoch.get_or_insert(now)
    }

    fn prune_linger(&mut self, now: Instant) {
        while let Some(&(t, key)) = self.linger_order.front() {
            if t > now {
                break;
            }
            self.linger_order.pop_front();
            if self.linger.get(&key) == Some(&t) {
                self.linger.remove(&key);
            }
        }
    }

    /// A packet for a port we no longer own: answer only a SHUTDOWN ACK for an association
    /// that closed moments ago (RFC 9260 §8.4 rule 5), else count and ignore it.
    fn on_foreign(&mut self, now: Instant, remote: SocketAddr, pkt: &Packet<&[u8]>) {
        let hdr = CommonHeader::parse(pkt);
        if !self.linger.is_empty() {
            self.prune_linger(now);
            let key = (hdr.dst_port, remote, hdr.src_port);
            if self.linger.contains_key(&key)
                && pkt.verify_checksum()
                && matches!(pkt.chunks().next(), Some(Ok(c)) if c.ty == chunk_type::SHUTDOWN_ACK)
            {
                self.reply(
                    &hdr,
                    remote,
                    hdr.verification_tag,
                    &Chunk::ShutdownComplete { t_bit: true },
                );
                return;
            }
        }
        self.stats.foreign_port += 1;
    }

    fn micros_since_epoch(&mut self, now: Instant) -> u64 {
        let e = self.epoch(now);
        now.saturating_duration_since(e)
            .as_micros()
            .min(u128::from(u64::MAX)) as u64
    }

    fn alloc_id(&mut self) -> AssocId {
        loop {
            let id = AssocId(self.next_id);
            self.next_id = self.next_id.wrapping_add(1).max(1);
            if !self.assocs.contains_key(&id) {
                return id;
            }
        }
    }

    fn insert(&mut self, a: Association) -> AssocId {
        let key = a.key();
        let id = a.id();
        *self.ports.entry(key.0).or_insert(0) += 1;
        self.by_key.insert(key, id);
        self.assocs.insert(id, a);
        id
    }

    /// Opens an association from `local_port` to `remote`/`remote_port` (sends INIT).
    pub fn connect(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        local_port: u16,
        remote_port: u16,
    ) -> Result<AssocId, ConnectError> {
        self.epoch(now);
        if local_port == 0 || remote_port == 0 {
            return Err(ConnectError::InvalidPort);
        }
        if !remote.is_ipv4() {
            return Err(ConnectError::UnsupportedAddress);
        }
        if self.by_key.contains_key(&(local_port, remote, remote_port)) {
            return Err(ConnectError::AlreadyExists);
        }
        if self.assocs.len() >= self.config.max_associations {
            return Err(ConnectError::TooManyAssociations);
        }
        let id = self.alloc_id();
        let my_vtag = random_tag(&mut self.rng);
        let my_tsn = self.rng.gen();
        let rng_seed = self.rng.gen();
        let a = Association::connect(NewAssoc {
            id,
            cfg: &self.config.association,
            remote,
            local_port,
            remote_port,
            my_vtag,
            my_tsn,
            rng_seed,
            now,
        });
        let id = self.insert(a);
        self.after_op(id);
        Ok(id)
    }

    /// Handles one received SCTP packet (common header onward) from `remote`. Never panics.
    ///
    /// Packets for ports this endpoint does not own are counted in `foreign_port` and not
    /// answered, with one exception: a SHUTDOWN ACK for an association of this endpoint that
    /// closed within the last 2 × RTO.Max gets its SHUTDOWN COMPLETE (our first one was lost).
    pub fn handle(&mut self, now: Instant, remote: SocketAddr, packet: &[u8]) {
        self.stats.packets_received += 1;
        let Ok(pkt) = Packet::new_checked(packet) else {
            self.stats.malformed += 1;
            return;
        };
        // Ports first: a raw socket sees every SCTP packet in the namespace, and packets for
        // other stacks must cost as little as possible and never be answered.
        let hdr = CommonHeader::parse(&pkt);
        if !self.owns_port(hdr.dst_port) {
            self.on_foreign(now, remote, &pkt);
            return;
        }
        if !pkt.verify_checksum() {
            // RFC 9260 §6.8: silently discard.
            self.stats.bad_checksum += 1;
            tracing::trace!(%remote, "SCTP packet with bad CRC32c dropped");
            return;
        }
        self.epoch(now);
        let chunks = pkt.chunk_bytes();
        let Some(sum) = summarize(chunks) else {
            self.stats.malformed += 1;
            return;
        };
        if sum.solo_violation {
            // RFC 9260 §6.10: INIT, INIT ACK and SHUTDOWN COMPLETE travel alone.
            self.stats.malformed += 1;
            return;
        }
        let key = (hdr.dst_port, remote, hdr.src_port);
        let existing = self.by_key.get(&key).copied();
        match sum.first {
            chunk_type::INIT => {
                if hdr.verification_tag != 0 {
                    // RFC 9260 §8.5.1 A.
                    self.stats.bad_vtag += 1;
                    return;
                }
                self.on_init(now, remote, &hdr, chunks, existing);
                return;
            }
            chunk_type::COOKIE_ECHO => {
                self.on_cookie_echo(now, remote, &hdr, chunks, existing);
                return;
            }
            _ => {}
        }
        if let Some(id) = existing {
            if let Some(a) = self.assocs.get_mut(&id) {
                let mut ctx = Ctx {
                    stats: &mut self.stats,
                    events: &mut self.events,
                };
                a.handle_packet(now, hdr.verification_tag, chunks, false, &mut ctx);
            }
            self.after_op(id);
            return;
        }
        // RFC 9260 §8.4: out-of-the-blue packet.
        self.stats.out_of_the_blue += 1;
        if sum.has_abort {
            return;
        }
        if sum.has_shutdown_ack {
            // §8.4 rule 5: SHUTDOWN COMPLETE with the T bit, reflecting the packet's tag.
            self.reply(
                &hdr,
                remote,
                hdr.verification_tag,
                &Chunk::ShutdownComplete { t_bit: true },
            );
            return;
        }
        if sum.has_no_reply {
            return;
        }
        self.stats.aborts_sent += 1;
        self.reply(
            &hdr,
            remote,
            hdr.verification_tag,
            &Chunk::Abort {
                t_bit: true,
                causes: &[],
            },
        );
    }

    /// Queues a single-chunk packet answering `hdr` (ports swapped).
    fn reply(&mut self, hdr: &CommonHeader, remote: SocketAddr, vtag: u32, chunk: &Chunk<'_>) {
        let mut buf = Vec::with_capacity(COMMON_HEADER_LEN + chunk.buffer_len());
        CommonHeader {
            src_port: hdr.dst_port,
            dst_port: hdr.src_port,
            verification_tag: vtag,
        }
        .emit(&mut buf);
        chunk.emit(&mut buf);
        finish_packet(&mut buf);
        self.transmits.push_back(Transmit {
            remote,
            packet: buf,
        });
    }

    fn reply_abort(
        &mut self,
        hdr: &CommonHeader,
        remote: SocketAddr,
        vtag: u32,
        causes: &[ErrorCause],
    ) {
        let enc = ErrorCause::emit_all(causes);
        self.stats.aborts_sent += 1;
        self.reply(
            hdr,
            remote,
            vtag,
            &Chunk::Abort {
                t_bit: false,
                causes: &enc,
            },
        );
    }

    fn on_init(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        hdr: &CommonHeader,
        chunks: &[u8],
        existing: Option<AssocId>,
    ) {
        let init = match ChunkIter::new(chunks)
            .next()
            .map(|r| r.and_then(Chunk::parse))
        {
            Some(Ok(Chunk::Init(i))) => i,
            _ => return,
        };
        if init.initiate_tag == 0 {
            // RFC 9260 §3.3.2: silently discard.
            self.stats.malformed += 1;
            return;
        }
        if init.outbound_streams == 0 || init.inbound_streams == 0 {
            // RFC 9260 §3.3.2: zero streams → ABORT "Invalid Mandatory Parameter".
            self.stats.init_zero_streams += 1;
            self.reply_abort(
                hdr,
                remote,
                init.initiate_tag,
                &[ErrorCause::InvalidMandatoryParameter],
            );
            return;
        }
        let Some((extra_life, unrecognized)) = self.scan_init_params(&init) else {
            self.reply_abort(
                hdr,
                remote,
                init.initiate_tag,
                &[ErrorCause::UnresolvableAddress(Vec::new())],
            );
            return;
        };
        let params = match existing.and_then(|id| self.assocs.get_mut(&id)) {
            Some(a) => {
                if a.state() == State::ShutdownAckSent {
                    a.resend_shutdown_ack();
                    if let Some(id) = existing {
                        self.after_op(id);
                    }
                    return;
                }
                a.init_ack_params(&mut self.rng)
            }
            None => {
                if self.config.listen_port != Some(hdr.dst_port) {
                    // §8.4 rule 3: we cannot take this INIT; ABORT with its Initiate Tag.
                    self.stats.out_of_the_blue += 1;
                    self.reply_abort(hdr, remote, init.initiate_tag, &[]);
                    return;
                }
                if self.assocs.len() >= self.config.max_associations {
                    self.stats.associations_refused += 1;
                    self.reply_abort(hdr, remote, init.initiate_tag, &[ErrorCause::OutOfResource]);
                    return;
                }
                InitAckParams {
                    initiate_tag: random_tag(&mut self.rng),
                    initial_tsn: self.rng.gen(),
                    local_tie_tag: 0,
                    peer_tie_tag: 0,
                }
            }
        };
        let SocketAddr::V4(remote4) = remote else {
            return;
        };
        let cfg = &self.config.association;
        let lifetime = self
            .config
            .cookie_lifetime
            .saturating_add(extra_life.min(MAX_COOKIE_PRESERVATIVE));
        let cookie = CookieData {
            timestamp_us: 0,
            lifetime_ms: lifetime.as_millis().min(u128::from(u32::MAX)) as u32,
            local_tag: params.initiate_tag,
            peer_tag: init.initiate_tag,
            local_tsn: params.initial_tsn,
            peer_tsn: init.initial_tsn,
            peer_rwnd: init.a_rwnd,
            // RFC 9260 §5.1.2: use the smaller of our OS and the peer's MIS, and vice versa.
            outbound_streams: cfg.outbound_streams.min(init.inbound_streams),
            inbound_streams: cfg.max_inbound_streams.min(init.outbound_streams),
            local_port: hdr.dst_port,
            remote_port: hdr.src_port,
            remote: remote4,
            local_tie_tag: params.local_tie_tag,
            peer_tie_tag: params.peer_tie_tag,
        };
        let cookie = CookieData {
            timestamp_us: self.micros_since_epoch(now),
            ..cookie
        };
        let cookie_bytes = cookie.encode(&self.config.cookie_key);
        let cfg = &self.config.association;
        let mut p = Vec::with_capacity(cookie_bytes.len() + 8 + unrecognized.len());
        Param::StateCookie(&cookie_bytes).emit(&mut p);
        p.extend_from_slice(&unrecognized);
        let ack = Chunk::InitAck(InitChunk {
            initiate_tag: params.initiate_tag,
            a_rwnd: cfg.a_rwnd,
            outbound_streams: cfg.outbound_streams,
            inbound_streams: cfg.max_inbound_streams,
            initial_tsn: params.initial_tsn,
            params: &p,
        });
        // The INIT ACK goes to the INIT's Initiate Tag (RFC 9260 §8.5.1).
        self.reply(hdr, remote, init.initiate_tag, &ack);
    }

    /// Walks INIT parameters (RFC 9260 §3.2.1). Returns the requested cookie life extension
    /// and the encoded "Unrecognized Parameter" parameters to echo, or `None` when the INIT
    /// must be refused (Host Name Address, §3.3.2.1.3).
    fn scan_init_params(&mut self, init: &InitChunk<'_>) -> Option<(Duration, Vec<u8>)> {
        let mut extra = Duration::ZERO;
        let mut unrec = Vec::new();
        for p in init.params() {
            let Ok(raw) = p else { break };
            match Param::parse(raw) {
                Ok(Param::CookiePreservative(ms)) => extra = Duration::from_millis(u64::from(ms)),
                Ok(Param::HostNameAddress(_)) => return None,
                Ok(Param::Unknown(r)) => {
                    let (cont, report) = r.unknown_action();
                    if report && unrec.len() + r.bytes.len() <= MAX_UNRECOGNIZED_ECHO {
                        emit_tlv(&mut unrec, param_type::UNRECOGNIZED_PARAMETER, r.bytes);
                    }
                    if !cont {
                        break;
                    }
                }
                // Extra IPv4/IPv6 addresses are ignored: single-homed only.
                Ok(_) => {}
                Err(_) => break,
            }
        }
        Some((extra, unrec))
    }

    fn on_cookie_echo(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        hdr: &CommonHeader,
        chunks: &[u8],
        existing: Option<AssocId>,
    ) {
        let cookie = match ChunkIter::new(chunks)
            .next()
            .map(|r| r.and_then(Chunk::parse))
        {
            Some(Ok(Chunk::CookieEcho { cookie })) => cookie,
            _ => return,
        };
        let c = match CookieData::decode(cookie, &self.config.cookie_key) {
            Ok(c) => c,
            Err(CookieError::BadMac) | Err(CookieError::Malformed) => {
                // RFC 9260 §5.1.5 step 2: not ours; discard silently.
                self.stats.forged_cookies += 1;
                tracing::debug!(%remote, "COOKIE ECHO with invalid cookie dropped");
                return;
            }
        };
        if hdr.verification_tag != c.local_tag {
            // §5.1.5 step 3 / §8.5.1: the packet must carry the tag from our INIT ACK.
            self.stats.bad_vtag += 1;
            return;
        }
        if c.local_port != hdr.dst_port
            || c.remote_port != hdr.src_port
            || c.remote_addr() != remote
        {
            // A genuine cookie replayed from another peer.
            self.stats.forged_cookies += 1;
            return;
        }
        let now_us = self.micros_since_epoch(now);
        let expiry = c
            .timestamp_us
            .saturating_add(u64::from(c.lifetime_ms).saturating_mul(1000));
        // RFC 9260 §5.2.4 step 3: a cookie whose tags are the existing association's own is
        // valid however old (a retransmitted COOKIE ECHO after a lost COOKIE ACK).
        let same_tags = existing
            .and_then(|id| self.assocs.get(&id))
            .is_some_and(|a| a.tags() == (c.local_tag, c.peer_tag));
        if now_us > expiry && !same_tags {
            // RFC 9260 §5.1.5 step 3, §3.3.10.3: report how stale it is.
            self.stats.stale_cookies += 1;
            let staleness_us = (now_us - expiry).min(u64::from(u32::MAX)) as u32;
            let enc = ErrorCause::emit_all(&[ErrorCause::StaleCookie { staleness_us }]);
            self.reply(hdr, remote, c.peer_tag, &Chunk::Error { causes: &enc });
            return;
        }
        if c.timestamp_us > now_us && !same_tags {
            // From another incarnation of this endpoint (different epoch): unusable.
            self.stats.stale_cookies += 1;
            return;
        }
        if let Some(id) = existing {
            let process_rest = match self.assocs.get_mut(&id) {
                Some(a) => {
                    let mut ctx = Ctx {
                        stats: &mut self.stats,
                        events: &mut self.events,
                    };
                    a.on_cookie_echo(&c, now, &mut ctx)
                }
                None => false,
            };
            if process_rest {
                self.handle_rest(now, id, chunks);
            }
            self.after_op(id);
            return;
        }
        if self.assocs.len() >= self.config.max_associations {
            self.stats.associations_refused += 1;
            self.reply_abort(hdr, remote, c.peer_tag, &[ErrorCause::OutOfResource]);
            return;
        }
        let id = self.alloc_id();
        let rng_seed = self.rng.gen();
        let mut ctx = Ctx {
            stats: &mut self.stats,
            events: &mut self.events,
        };
        let a = Association::from_cookie(
            NewAssoc {
                id,
                cfg: &self.config.association,
                remote,
                local_port: hdr.dst_port,
                remote_port: hdr.src_port,
                my_vtag: c.local_tag,
                my_tsn: c.local_tsn,
                rng_seed,
                now,
            },
            &c,
            &mut ctx,
        );
        let id = self.insert(a);
        self.handle_rest(now, id, chunks);
        self.after_op(id);
    }

    /// Processes the chunks bundled after a COOKIE ECHO.
    fn handle_rest(&mut self, now: Instant, id: AssocId, chunks: &[u8]) {
        if let Some(a) = self.assocs.get_mut(&id) {
            let mut ctx = Ctx {
                stats: &mut self.stats,
                events: &mut self.events,
            };
            let vtag = a.my_vtag();
            a.handle_packet(now, vtag, chunks, true, &mut ctx);
        }
    }

    /// After anything touched an association: queue it for transmission, and retire it
    /// (flushing its last packets) once closed.
    fn after_op(&mut self, id: AssocId) {
        let Some(a) = self.assocs.get_mut(&id) else {
            return;
        };
        if a.is_closed() {
            self.retire(id);
            return;
        }
        if !a.queued {
            a.queued = true;
            self.dirty.push_back(id);
        }
    }

    fn retire(&mut self, id: AssocId) {
        let Some(mut a) = self.assocs.remove(&id) else {
            return;
        };
        // Closed associations only flush queued control chunks (ABORT, SHUTDOWN COMPLETE).
        while let Some(packet) = a.poll_final() {
            self.transmits.push_back(Transmit {
                remote: a.key().1,
                packet,
            });
        }
        let key = a.key();
        if self.by_key.get(&key) == Some(&id) {
            self.by_key.remove(&key);
        }
        if let Some(now) = self.last_now {
            let until = now + self.config.association.rto_max.saturating_mul(2);
            self.linger.insert(key, until);
            self.linger_order.push_back((until, key));
        }
        if let Some(n) = self.ports.get_mut(&key.0) {
            *n -= 1;
            if *n == 0 {
                self.ports.remove(&key.0);
            }
        }
    }

    /// Processes expired timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.epoch(now);
        self.prune_linger(now);
        let mut ids = std::mem::take(&mut self.scratch_ids);
        ids.clear();
        ids.extend(
            self.assocs
                .iter()
                .filter(|(_, a)| a.next_timeout().is_some_and(|t| t <= now))
                .map(|(id, _)| *id),
        );
        for &id in &ids {
            if let Some(a) = self.assocs.get_mut(&id) {
                let mut ctx = Ctx {
                    stats: &mut self.stats,
                    events: &mut self.events,
                };
                a.handle_timeout(now, &mut ctx);
            }
            self.after_op(id);
        }
        self.scratch_ids = ids;
    }

    /// The earliest timer of any association.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.assocs.values().filter_map(|a| a.next_timeout()).min()
    }

    /// The next packet to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.last_now = Some(now);
        if let Some(t) = self.transmits.pop_front() {
            self.stats.packets_sent += 1;
            return Some(t);
        }
        while let Some(id) = self.dirty.pop_front() {
            let Some(a) = self.assocs.get_mut(&id) else {
                continue;
            };
            let mut ctx = Ctx {
                stats: &mut self.stats,
                events: &mut self.events,
            };
            match a.poll_transmit(now, &mut ctx) {
                Some(packet) => {
                    // Round-robin between associations with something to send.
                    self.dirty.push_back(id);
                    self.stats.packets_sent += 1;
                    return Some(Transmit {
                        remote: a.key().1,
                        packet,
                    });
                }
                None => a.queued = false,
            }
        }
        None
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<(AssocId, Event)> {
        self.events.pop_front()
    }

    /// Queues a user message. See [`SendError`] for the refusals.
    pub fn send(
        &mut self,
        id: AssocId,
        stream: u16,
        ppid: u32,
        unordered: bool,
        data: Bytes,
    ) -> Result<(), SendError> {
        let a = self
            .assocs
            .get_mut(&id)
            .ok_or(SendError::UnknownAssociation)?;
        a.send(stream, ppid, unordered, data)?;
        self.after_op(id);
        Ok(())
    }

    /// Starts a graceful shutdown (RFC 9260 §9.2); queued data is delivered first.
    pub fn shutdown(&mut self, now: Instant, id: AssocId) -> Result<(), ClosedError> {
        self.epoch(now);
        let a = self.assocs.get_mut(&id).ok_or(ClosedError)?;
        let mut ctx = Ctx {
            stats: &mut self.stats,
            events: &mut self.events,
        };
        a.shutdown(now, &mut ctx);
        self.after_op(id);
        Ok(())
    }

    /// Aborts the association (RFC 9260 §9.1): sends ABORT and forgets it.
    pub fn abort(&mut self, now: Instant, id: AssocId) -> Result<(), ClosedError> {
        self.epoch(now);
        let a = self.assocs.get_mut(&id).ok_or(ClosedError)?;
        let mut ctx = Ctx {
            stats: &mut self.stats,
            events: &mut self.events,
        };
        a.abort(&mut ctx);
        self.after_op(id);
        Ok(())
    }

    /// A snapshot of an association's state and counters.
    pub fn info(&self, id: AssocId) -> Option<AssocInfo> {
        self.assocs.get(&id).map(|a| a.info())
    }

    /// Endpoint-wide counters.
    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// Whether `port` is the listen port or the local port of an open association.
    pub fn owns_port(&self, port: u16) -> bool {
        self.config.listen_port == Some(port) || self.ports.contains_key(&port)
    }

    /// Number of live associations.
    pub fn len(&self) -> usize {
        self.assocs.len()
    }

    /// Whether there are no live associations.
    pub fn is_empty(&self) -> bool {
        self.assocs.is_empty()
    }

    /// The association for a (local port, remote address, remote port) triple, if any.
    pub fn lookup(&self, local_port: u16, remote: SocketAddr, remote_port: u16) -> Option<AssocId> {
        self.by_key.get(&(local_port, remote, remote_port)).copied()
    }

    /// The configuration this endpoint runs with.
    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }
}
