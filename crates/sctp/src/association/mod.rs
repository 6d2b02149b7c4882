//! One SCTP association as a sans-IO state machine (RFC 9260 §4 to §9), shaped like
//! quinn-proto's `Connection`: fed parsed packets and timer expiries, polled for packets.
//!
//! The endpoint owns demultiplexing, cookies and out-of-the-blue handling; everything that
//! needs the association's state (verification tags, TSNs, timers) lives here.

mod recv;
mod send;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::config::AssociationConfig;
use crate::cookie::CookieData;
use crate::types::{
    AssocCounters, AssocId, AssocInfo, CloseReason, EndpointStats, Event, SendError, State,
    MAX_MESSAGE_SIZE,
};
use crate::wire::{
    self, chunk_type, data_flags, emit_sack, emit_tlv, finish_packet, pad4, param_type, Chunk,
    ChunkIter, CommonHeader, DataChunk, ErrorCause, InitChunk, Param, COMMON_HEADER_LEN,
    DATA_HEADER_LEN,
};

use recv::{DataOutcome, RecvState};
use send::SendQueue;

/// Mutable endpoint state an association reports into.
pub(crate) struct Ctx<'a> {
    pub(crate) stats: &'a mut EndpointStats,
    pub(crate) events: &'a mut VecDeque<(AssocId, Event)>,
}

/// Parameters common to both ways of creating an association.
pub(crate) struct NewAssoc<'a> {
    pub(crate) id: AssocId,
    pub(crate) cfg: &'a AssociationConfig,
    pub(crate) remote: SocketAddr,
    pub(crate) local_port: u16,
    pub(crate) remote_port: u16,
    pub(crate) my_vtag: u32,
    pub(crate) my_tsn: u32,
    pub(crate) rng_seed: u64,
    pub(crate) now: Instant,
}

/// What the INIT ACK answering an INIT for an existing association carries (§5.2.1, §5.2.2).
pub(crate) struct InitAckParams {
    pub(crate) initiate_tag: u32,
    pub(crate) initial_tsn: u32,
    pub(crate) local_tie_tag: u32,
    pub(crate) peer_tie_tag: u32,
}

const HB_INFO_LEN: usize = 16;
/// Size of a SACK without gap blocks or duplicates.
const SACK_BASE_LEN: usize = 16;

/// An association.
pub(crate) struct Association {
    id: AssocId,
    state: State,
    remote: SocketAddr,
    local_port: u16,
    remote_port: u16,
    my_vtag: u32,
    peer_vtag: u32,
    my_initial_tsn: u32,
    cfg: AssociationConfig,
    pmtu: usize,
    rng: SmallRng,
    epoch: Instant,
    hb_nonce: u64,
    out_streams: u16,
    in_streams: u16,
    send: SendQueue,
    recv: RecvState,
    peer_rwnd: u32,
    cwnd: usize,
    ssthresh: usize,
    partial_bytes_acked: usize,
    /// Fast Recovery exit point (§7.2.4): the highest TSN outstanding when it began.
    fast_recovery: Option<u32>,
    /// The first packet after entering fast retransmit ignores cwnd (§7.2.4 step 3).
    fast_bypass: bool,
    burst_left: usize,
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    t1: Option<Instant>,
    t2: Option<Instant>,
    t3: Option<Instant>,
    hb_timer: Option<Instant>,
    sack_timer: Option<Instant>,
    init_retries: u32,
    cookie: Vec<u8>,
    cookie_preservative: Option<u32>,
    hb_outstanding: bool,
    error_count: u32,
    sack_now: bool,
    packets_since_sack: u32,
    init_pending: bool,
    ctrl: VecDeque<Vec<u8>>,
    gap_scratch: Vec<(u16, u16)>,
    counters: AssocCounters,
    /// Set while the endpoint has this association in its transmit list.
    pub(crate) queued: bool,
}

fn chunk_bytes(c: &Chunk<'_>) -> Vec<u8> {
    let mut v = Vec::with_capacity(c.buffer_len());
    c.emit(&mut v);
    v
}

fn max_duration(a: Duration, b: Duration) -> Duration {
    if a > b {
        a
    } else {
        b
    }
}

impl Association {
    fn new(p: NewAssoc<'_>) -> Self {
        let mut rng = SmallRng::seed_from_u64(p.rng_seed);
        let pmtu = p.cfg.effective_pmtu();
        Association {
            id: p.id,
            state: State::CookieWait,
            remote: p.remote,
            local_port: p.local_port,
            remote_port: p.remote_port,
            my_vtag: p.my_vtag,
            peer_vtag: 0,
            my_initial_tsn: p.my_tsn,
            cfg: p.cfg.clone(),
            pmtu,
            hb_nonce: rng.gen(),
            rng,
            epoch: p.now,
            out_streams: 0,
            in_streams: 0,
            send: SendQueue::new(p.my_tsn, 0),
            recv: RecvState::new(0, 0, p.cfg.max_reassembly_fragments),
            peer_rwnd: 0,
            cwnd: initial_cwnd(pmtu),
            ssthresh: usize::MAX,
            partial_bytes_acked: 0,
            fast_recovery: None,
            fast_bypass: false,
            burst_left: p.cfg.max_burst.max(1),
            srtt: None,
            rttvar: Duration::ZERO,
            rto: p.cfg.rto_initial,
            t1: None,
            t2: None,
            t3: None,
            hb_timer: None,
            sack_timer: None,
            init_retries: 0,
            cookie: Vec::new(),
            cookie_preservative: None,
            hb_outstanding: false,
            error_count: 0,
            sack_now: false,
            packets_since_sack: 0,
            init_pending: false,
            ctrl: VecDeque::new(),
            gap_scratch: Vec::new(),
            counters: AssocCounters::default(),
            queued: false,
        }
    }

    /// Active open: queue an INIT (RFC 9260 §5.1 step A).
    pub(crate) fn connect(p: NewAssoc<'_>) -> Self {
        let now = p.now;
        let mut a = Association::new(p);
        a.init_pending = true;
        a.t1 = Some(now + a.rto);
        a
    }

    /// Passive open from a valid COOKIE ECHO (RFC 9260 §5.1.5).
    pub(crate) fn from_cookie(p: NewAssoc<'_>, c: &CookieData, ctx: &mut Ctx<'_>) -> Self {
        let now = p.now;
        let mut a = Association::new(p);
        a.setup_peer(c);
        a.ctrl.push_back(chunk_bytes(&Chunk::CookieAck));
        a.become_established(now, ctx);
        a
    }

    fn setup_peer(&mut self, c: &CookieData) {
        self.my_vtag = c.local_tag;
        self.peer_vtag = c.peer_tag;
        self.my_initial_tsn = c.local_tsn;
        self.apply_peer(
            c.peer_tsn,
            c.peer_rwnd,
            c.outbound_streams,
            c.inbound_streams,
        );
    }

    fn apply_peer(&mut self, peer_tsn: u32, peer_rwnd: u32, out: u16, inb: u16) {
        self.out_streams = out;
        self.in_streams = inb;
        self.send = SendQueue::new(self.my_initial_tsn, out);
        self.recv = RecvState::new(peer_tsn, inb, self.cfg.max_reassembly_fragments);
        self.peer_rwnd = peer_rwnd;
        // RFC 9260 §7.2.1: initial ssthresh may be arbitrarily high; use the peer's window.
        self.ssthresh = peer_rwnd as usize;
        self.cwnd = initial_cwnd(self.pmtu);
        self.partial_bytes_acked = 0;
        self.fast_recovery = None;
    }

    fn become_established(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        tracing::debug!(assoc = %self.id, remote = %self.remote, out = self.out_streams,
            inb = self.in_streams, "association established");
        self.state = State::Established;
        self.t1 = None;
        self.init_retries = 0;
        self.cookie = Vec::new();
        ctx.stats.associations_established += 1;
        ctx.events.push_back((
            self.id,
            Event::Connected {
                remote: self.remote,
                local_port: self.local_port,
                remote_port: self.remote_port,
                inbound_streams: self.in_streams,
                outbound_streams: self.out_streams,
            },
        ));
        self.arm_heartbeat(now);
    }

    fn arm_heartbeat(&mut self, now: Instant) {
        if self.cfg.heartbeat_interval.is_zero() {
            self.hb_timer = None;
            return;
        }
        // RFC 9260 §8.3: HB.interval plus RTO with jitter of +/- 50%.
        let rto_us = self.rto.as_micros().min(u128::from(u32::MAX)) as u64;
        let jitter = Duration::from_micros(rto_us / 2 + self.rng.gen_range(0..=rto_us));
        self.hb_timer = Some(now + self.cfg.heartbeat_interval + jitter);
    }

    // ---- accessors used by the endpoint ----

    pub(crate) fn id(&self) -> AssocId {
        self.id
    }

    pub(crate) fn my_vtag(&self) -> u32 {
        self.my_vtag
    }

    /// (our tag, peer's tag).
    pub(crate) fn tags(&self) -> (u32, u32) {
        (self.my_vtag, self.peer_vtag)
    }

    pub(crate) fn state(&self) -> State {
        self.state
    }

    pub(crate) fn key(&self) -> (u16, SocketAddr, u16) {
        (self.local_port, self.remote, self.remote_port)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    pub(crate) fn next_timeout(&self) -> Option<Instant> {
        [self.t1, self.t2, self.t3, self.hb_timer, self.sack_timer]
            .into_iter()
            .flatten()
            .min()
    }

    pub(crate) fn info(&self) -> AssocInfo {
        AssocInfo {
            state: self.state,
            remote: self.remote,
            local_port: self.local_port,
            remote_port: self.remote_port,
            inbound_streams: self.in_streams,
            outbound_streams: self.out_streams,
            srtt: self.srtt,
            rto: self.rto,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            flight_size: self.send.flight,
            peer_rwnd: self.peer_rwnd,
            send_buffered: self.send.buffered,
            local_vtag: self.my_vtag,
            peer_vtag: self.peer_vtag,
            next_tsn: self.send.next_tsn,
            peer_cum_tsn: self.recv.cum,
            error_count: self.error_count,
            path_active: self.error_count <= self.cfg.path_max_retrans,
            counters: self.counters.clone(),
        }
    }

    fn max_fragment(&self) -> usize {
        (self.pmtu - COMMON_HEADER_LEN - DATA_HEADER_LEN) & !3
    }

    fn close(&mut self, reason: CloseReason, ctx: &mut Ctx<'_>) {
        if self.state == State::Closed {
            return;
        }
        tracing::debug!(assoc = %self.id, remote = %self.remote, ?reason, "association closed");
        self.state = State::Closed;
        self.t1 = None;
        self.t2 = None;
        self.t3 = None;
        self.hb_timer = None;
        self.sack_timer = None;
        self.sack_now = false;
        self.init_pending = false;
        ctx.stats.associations_closed += 1;
        ctx.events.push_back((self.id, Event::Closed { reason }));
    }

    /// Sends ABORT (when the peer's tag is known) and closes.
    fn abort_with(&mut self, causes: &[ErrorCause], reason: CloseReason, ctx: &mut Ctx<'_>) {
        self.ctrl.clear();
        if self.peer_vtag != 0 || self.state != State::CookieWait {
            let enc = ErrorCause::emit_all(causes);
            self.ctrl.push_back(chunk_bytes(&Chunk::Abort {
                t_bit: false,
                causes: &enc,
            }));
            ctx.stats.aborts_sent += 1;
        }
        self.close(reason, ctx);
    }

    // ---- user calls ----

    pub(crate) fn send(
        &mut self,
        stream: u16,
        ppid: u32,
        unordered: bool,
        data: Bytes,
    ) -> Result<(), SendError> {
        if self.state != State::Established {
            return Err(SendError::NotEstablished);
        }
        if data.is_empty() {
            return Err(SendError::Empty);
        }
        if data.len() > MAX_MESSAGE_SIZE {
            return Err(SendError::TooLarge);
        }
        if stream >= self.out_streams {
            return Err(SendError::InvalidStream);
        }
        if self.send.buffered + data.len() > self.cfg.max_send_buffer {
            return Err(SendError::Full);
        }
        let frag = self.max_fragment();
        self.send.push_message(stream, ppid, unordered, data, frag);
        self.counters.messages_sent += 1;
        Ok(())
    }

    /// Graceful close (RFC 9260 §9.2).
    pub(crate) fn shutdown(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        match self.state {
            State::Established => {
                self.state = State::ShutdownPending;
                self.check_shutdown(now);
            }
            State::CookieWait | State::CookieEchoed => {
                self.abort_with(&[], CloseReason::AbortedLocally, ctx)
            }
            _ => {}
        }
    }

    pub(crate) fn abort(&mut self, ctx: &mut Ctx<'_>) {
        self.abort_with(
            &[ErrorCause::UserInitiatedAbort(Vec::new())],
            CloseReason::AbortedLocally,
            ctx,
        );
    }

    fn check_shutdown(&mut self, now: Instant) {
        match self.state {
            State::ShutdownPending if self.send.is_empty() => {
                self.queue_shutdown();
                self.state = State::ShutdownSent;
                self.t2 = Some(now + self.rto);
                self.t3 = None;
                self.hb_timer = None;
            }
            State::ShutdownReceived if self.send.is_empty() => {
                self.ctrl.push_back(chunk_bytes(&Chunk::ShutdownAck));
                self.state = State::ShutdownAckSent;
                self.t2 = Some(now + self.rto);
                self.t3 = None;
                self.hb_timer = None;
            }
            _ => {}
        }
    }

    fn queue_shutdown(&mut self) {
        self.ctrl.push_back(chunk_bytes(&Chunk::Shutdown {
            cum_tsn_ack: self.recv.cum,
        }));
    }

    // ---- handshake helpers for the endpoint ----

    /// Parameters for an INIT ACK answering an INIT that hit this association.
    pub(crate) fn init_ack_params(&self, rng: &mut impl Rng) -> InitAckParams {
        match self.state {
            // RFC 9260 §5.2.1: same Initiate Tag and TSN as our own INIT; tie-tags zero in
            // COOKIE-WAIT, ours and the peer's in COOKIE-ECHOED.
            State::CookieWait => InitAckParams {
                initiate_tag: self.my_vtag,
                initial_tsn: self.my_initial_tsn,
                local_tie_tag: 0,
                peer_tie_tag: 0,
            },
            State::CookieEchoed => InitAckParams {
                initiate_tag: self.my_vtag,
                initial_tsn: self.my_initial_tsn,
                local_tie_tag: self.my_vtag,
                peer_tie_tag: self.peer_vtag,
            },
            // §5.2.2: a new random tag, with the current tags as tie-tags.
            _ => InitAckParams {
                initiate_tag: random_tag(rng),
                initial_tsn: rng.gen(),
                local_tie_tag: self.my_vtag,
                peer_tie_tag: self.peer_vtag,
            },
        }
    }

    /// RFC 9260 §9.2: an INIT in SHUTDOWN-ACK-SENT is answered by repeating SHUTDOWN ACK.
    pub(crate) fn resend_shutdown_ack(&mut self) {
        self.ctrl.push_back(chunk_bytes(&Chunk::ShutdownAck));
    }

    /// A valid COOKIE ECHO for this existing association: RFC 9260 §5.2.4, Table 7.
    /// Returns whether the rest of the packet should be processed.
    pub(crate) fn on_cookie_echo(
        &mut self,
        c: &CookieData,
        now: Instant,
        ctx: &mut Ctx<'_>,
    ) -> bool {
        let local_match = c.local_tag == self.my_vtag;
        let peer_match = c.peer_tag == self.peer_vtag;
        if !local_match
            && !peer_match
            && c.local_tie_tag == self.my_vtag
            && c.peer_tie_tag == self.peer_vtag
        {
            // Case A: the peer restarted.
            if self.state == State::ShutdownAckSent {
                self.ctrl.push_back(chunk_bytes(&Chunk::ShutdownAck));
                let enc = ErrorCause::emit_all(&[ErrorCause::CookieReceivedWhileShuttingDown]);
                self.ctrl
                    .push_back(chunk_bytes(&Chunk::Error { causes: &enc }));
                return false;
            }
            self.restart(c, now, ctx);
            return true;
        }
        if local_match && peer_match {
            // Case D: a retransmitted COOKIE ECHO (our COOKIE ACK was lost), or the collision
            // finishing; enter ESTABLISHED if not there yet.
            if matches!(self.state, State::CookieWait | State::CookieEchoed) {
                self.apply_peer(
                    c.peer_tsn,
                    c.peer_rwnd,
                    c.outbound_streams,
                    c.inbound_streams,
                );
                self.become_established(now, ctx);
            }
            self.ctrl.push_back(chunk_bytes(&Chunk::CookieAck));
            return true;
        }
        if local_match {
            // Case B: INIT collision; adopt the peer's tag.
            self.peer_vtag = c.peer_tag;
            if matches!(self.state, State::CookieWait | State::CookieEchoed) {
                self.apply_peer(
                    c.peer_tsn,
                    c.peer_rwnd,
                    c.outbound_streams,
                    c.inbound_streams,
                );
                self.become_established(now, ctx);
            }
            self.ctrl.push_back(chunk_bytes(&Chunk::CookieAck));
            return true;
        }
        // Case C (late cookie from an old INIT) and anything else: silently discard.
        false
    }

    fn restart(&mut self, c: &CookieData, now: Instant, ctx: &mut Ctx<'_>) {
        tracing::info!(assoc = %self.id, remote = %self.remote, "peer restarted");
        self.setup_peer(c);
        self.ctrl.clear();
        self.ctrl.push_back(chunk_bytes(&Chunk::CookieAck));
        self.srtt = None;
        self.rttvar = Duration::ZERO;
        self.rto = self.cfg.rto_initial;
        self.t1 = None;
        self.t2 = None;
        self.t3 = None;
        self.sack_timer = None;
        self.sack_now = false;
        self.packets_since_sack = 0;
        self.hb_outstanding = false;
        self.error_count = 0;
        self.state = State::Established;
        ctx.events.push_back((self.id, Event::Restarted));
        self.arm_heartbeat(now);
    }

    // ---- packet input ----

    /// Handles the chunks of a packet addressed to this association. `skip_first` skips a
    /// leading COOKIE ECHO the endpoint already processed (its tag was checked then).
    pub(crate) fn handle_packet(
        &mut self,
        now: Instant,
        vtag: u32,
        chunks: &[u8],
        skip_first: bool,
        ctx: &mut Ctx<'_>,
    ) {
        if self.state == State::Closed {
            return;
        }
        if !skip_first && vtag != self.my_vtag {
            // RFC 9260 §8.5.1 B, C: ABORT and SHUTDOWN COMPLETE with the T bit carry the
            // peer's own tag.
            let reflected = match ChunkIter::new(chunks).next() {
                Some(Ok(r)) => {
                    (r.ty == chunk_type::ABORT || r.ty == chunk_type::SHUTDOWN_COMPLETE)
                        && r.flags & wire::T_BIT != 0
                        && self.peer_vtag != 0
                        && vtag == self.peer_vtag
                }
                _ => false,
            };
            if !reflected {
                ctx.stats.bad_vtag += 1;
                return;
            }
        }
        self.counters.packets_received += 1;
        self.burst_left = self.cfg.max_burst.max(1);
        let had_gaps = self.recv.has_gaps();
        let cum_before = self.recv.cum;
        let mut got_data = false;
        let mut immediate = false;
        for (i, raw) in ChunkIter::new(chunks).enumerate() {
            if self.state == State::Closed {
                break;
            }
            let Ok(raw) = raw else { break };
            if i == 0 && skip_first {
                continue;
            }
            let Ok(chunk) = Chunk::parse(raw) else { break };
            match chunk {
                Chunk::Data(d) => {
                    if matches!(
                        self.state,
                        State::Established
                            | State::ShutdownPending
                            | State::ShutdownSent
                            | State::ShutdownReceived
                    ) {
                        got_data = true;
                        immediate |= self.on_data(&d, ctx);
                    }
                }
                Chunk::Sack(s) => self.on_sack(&s, now, ctx),
                Chunk::Heartbeat { info } => {
                    if self.state != State::CookieWait {
                        self.ctrl
                            .push_back(chunk_bytes(&Chunk::HeartbeatAck { info }));
                    }
                }
                Chunk::HeartbeatAck { info } => self.on_heartbeat_ack(info, now),
                Chunk::Abort { t_bit, .. } => {
                    let ok = if t_bit {
                        vtag == self.peer_vtag && self.peer_vtag != 0
                    } else {
                        vtag == self.my_vtag
                    };
                    if ok {
                        ctx.stats.aborts_received += 1;
                        let causes = chunk.causes().filter_map(Result::ok).collect();
                        self.ctrl.clear();
                        self.close(CloseReason::AbortedByPeer { causes }, ctx);
                    } else {
                        ctx.stats.bad_vtag += 1;
                    }
                    break;
                }
                Chunk::Shutdown { cum_tsn_ack } => self.on_shutdown(cum_tsn_ack, now, ctx),
                Chunk::ShutdownAck => {
                    if matches!(self.state, State::ShutdownSent | State::ShutdownAckSent) {
                        self.ctrl.clear();
                        self.ctrl
                            .push_back(chunk_bytes(&Chunk::ShutdownComplete { t_bit: false }));
                        self.close(CloseReason::ShutdownComplete, ctx);
                    }
                }
                Chunk::ShutdownComplete { t_bit } => {
                    let ok = if t_bit {
                        vtag == self.peer_vtag
                    } else {
                        vtag == self.my_vtag
                    };
                    if ok && self.state == State::ShutdownAckSent {
                        self.close(CloseReason::ShutdownComplete, ctx);
                    }
                }
                Chunk::Error { .. } => self.on_error(&chunk, now, ctx),
                Chunk::CookieAck => {
                    if self.state == State::CookieEchoed {
                        self.become_established(now, ctx);
                    }
                }
                Chunk::InitAck(ia) => {
                    if self.state == State::CookieWait {
                        self.on_init_ack(&ia, now, ctx);
                    }
                }
                // INIT is handled by the endpoint; a COOKIE ECHO not in first position is
                // not a valid handshake (RFC 9260 §6.10 requires it first).
                Chunk::Init(_) | Chunk::CookieEcho { .. } => {}
                Chunk::Unknown(r) => {
                    ctx.stats.unknown_chunks += 1;
                    // RFC 9260 §3.2: the two upper bits of the type say what to do.
                    let action = r.ty >> 6;
                    if action & 1 == 1 {
                        let enc = ErrorCause::emit_all(&[ErrorCause::UnrecognizedChunkType(
                            r.bytes.to_vec(),
                        )]);
                        self.ctrl
                            .push_back(chunk_bytes(&Chunk::Error { causes: &enc }));
                    }
                    if action & 2 == 0 {
                        break;
                    }
                }
            }
        }
        if got_data && self.state != State::Closed {
            self.packets_since_sack += 1;
            if self.state == State::ShutdownSent {
                // RFC 9260 §9.2: DATA in SHUTDOWN-SENT is answered with SHUTDOWN, and T2
                // restarts. The peer is still flushing its queue, so it is alive: T2 expiries
                // while it does so are not failures.
                self.queue_shutdown();
                self.t2 = Some(now + self.rto);
                if self.recv.cum != cum_before || self.recv.has_gaps() {
                    self.error_count = 0;
                }
            }
            // RFC 9260 §6.2: SACK at once on gaps, duplicates, when a gap closes, and for
            // every second packet; otherwise within the delayed-ACK time.
            if immediate
                || self.sack_now
                || had_gaps
                || self.recv.has_gaps()
                || self.packets_since_sack >= 2
                || self.state != State::Established
            {
                self.sack_now = true;
                self.sack_timer = None;
            } else if self.sack_timer.is_none() {
                self.sack_timer = Some(now + self.cfg.sack_delay);
            }
        }
        self.check_shutdown(now);
    }

    /// Returns whether an immediate SACK is wanted.
    fn on_data(&mut self, d: &DataChunk<'_>, ctx: &mut Ctx<'_>) -> bool {
        self.counters.data_chunks_received += 1;
        if d.payload.is_empty() {
            // RFC 9260 §6.2: DATA without user data is answered with ABORT "No User Data".
            self.abort_with(
                &[ErrorCause::NoUserData { tsn: d.tsn }],
                CloseReason::AbortedLocally,
                ctx,
            );
            return false;
        }
        let invalid_stream = d.stream >= self.in_streams;
        let len = if invalid_stream { 0 } else { d.payload.len() };
        let fragment = !(d.beginning() && d.ending());
        match self.recv.accept_tsn(d.tsn, len, fragment, self.cfg.a_rwnd) {
            DataOutcome::Duplicate => {
                self.counters.duplicate_tsns += 1;
                ctx.stats.duplicate_tsns += 1;
                true
            }
            DataOutcome::Dropped => {
                // RFC 9260 §6.2: no room; not acknowledged, so the peer sends it again.
                self.counters.data_dropped += 1;
                ctx.stats.data_dropped += 1;
                false
            }
            DataOutcome::New if invalid_stream => {
                // RFC 9260 §6.5: acknowledge the TSN, report the stream, drop the data.
                ctx.stats.invalid_stream_data += 1;
                let enc = ErrorCause::emit_all(&[ErrorCause::InvalidStreamIdentifier {
                    stream: d.stream,
                }]);
                self.ctrl
                    .push_back(chunk_bytes(&Chunk::Error { causes: &enc }));
                true
            }
            DataOutcome::New => {
                let id = self.id;
                let counters = &mut self.counters;
                let events = &mut *ctx.events;
                self.recv.deliver(d, &mut |m| {
                    counters.messages_delivered += 1;
                    events.push_back((id, Event::Message(m)));
                });
                d.flags & data_flags::I != 0
            }
        }
    }

    fn on_sack(&mut self, s: &wire::SackChunk<'_>, now: Instant, ctx: &mut Ctx<'_>) {
        if !matches!(
            self.state,
            State::Established
                | State::ShutdownPending
                | State::ShutdownSent
                | State::ShutdownReceived
                | State::ShutdownAckSent
        ) {
            return;
        }
        self.counters.sacks_received += 1;
        let has_gaps = s.gap_count() > 0;
        if has_gaps {
            self.counters.sacks_with_gaps_received += 1;
        }
        let flight_before = self.send.flight;
        let Some(r) = self.send.on_sack(s.cum_tsn_ack, s.gaps(), has_gaps) else {
            // RFC 9260 §6.2.1: a SACK for TSNs never sent is a protocol violation.
            self.abort_with(
                &[ErrorCause::ProtocolViolation(
                    b"SACK beyond highest TSN sent".to_vec(),
                )],
                CloseReason::AbortedLocally,
                ctx,
            );
            return;
        };
        if let Some(at) = r.rtt_acked {
            self.rtt_sample(now.saturating_duration_since(at));
        }
        let mtu = self.pmtu;
        if r.newly_fast_marked > 0 {
            self.counters.fast_retransmits += r.newly_fast_marked as u64;
            ctx.stats.fast_retransmits += r.newly_fast_marked as u64;
            // RFC 9260 §7.2.4 step 1-2: halve once per recovery episode.
            if self.fast_recovery.is_none() {
                self.ssthresh = (self.cwnd / 2).max(4 * mtu);
                self.cwnd = self.ssthresh;
                self.partial_bytes_acked = 0;
                self.fast_recovery = Some(self.send.highest_sent());
            }
            self.fast_bypass = true;
        } else if r.cum_advanced && self.fast_recovery.is_none() {
            // RFC 9260 §7.2.1 / §7.2.2: grow only when the window was fully used.
            if self.cwnd <= self.ssthresh {
                if flight_before >= self.cwnd {
                    self.cwnd += r.bytes_acked.min(mtu);
                }
            } else {
                self.partial_bytes_acked += r.bytes_acked;
                if self.partial_bytes_acked >= self.cwnd && flight_before >= self.cwnd {
                    self.partial_bytes_acked -= self.cwnd;
                    self.cwnd += mtu;
                }
            }
        }
        if let Some(exit) = self.fast_recovery {
            if self.send.cum_ack.wrapping_sub(exit) < u32::MAX / 2 {
                self.fast_recovery = None;
            }
        }
        self.peer_rwnd = s.a_rwnd.saturating_sub(self.send.flight as u32);
        if r.bytes_acked > 0 {
            // RFC 9260 §8.3: an acknowledged TSN clears the error counter.
            self.error_count = 0;
        }
        // RFC 9260 §6.3.2 R2, R3.
        if self.send.flight == 0 {
            self.t3 = None;
            self.partial_bytes_acked = 0;
        } else if r.cum_advanced {
            self.t3 = Some(now + self.rto);
        }
    }

    fn rtt_sample(&mut self, r: Duration) {
        // RFC 9260 §6.3.1 C2, C3 with alpha = 1/8, beta = 1/4.
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(r);
                self.rttvar = self.rttvar * 3 / 4 + diff / 4;
                self.srtt = Some(s * 7 / 8 + r / 8);
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        let rto = srtt + max_duration(self.rttvar * 4, Duration::from_millis(1));
        self.rto = rto.clamp(self.cfg.rto_min, self.cfg.rto_max.max(self.cfg.rto_min));
    }

    fn back_off(&mut self) {
        self.rto = self
            .rto
            .saturating_mul(2)
            .min(self.cfg.rto_max.max(self.cfg.rto_min));
    }

    fn on_heartbeat_ack(&mut self, info: &[u8], now: Instant) {
        // The info is our own Heartbeat Info parameter: nonce, then send time.
        let mut it = wire::ParamIter::new(info);
        let Some(Ok(p)) = it.next() else { return };
        let Ok(Param::HeartbeatInfo(v)) = Param::parse(p) else {
            return;
        };
        if v.len() != HB_INFO_LEN {
            return;
        }
        let nonce = wire::be32(v, 0).map(u64::from).unwrap_or(0) << 32
            | wire::be32(v, 4).map(u64::from).unwrap_or(0);
        if nonce != self.hb_nonce {
            return;
        }
        let sent = wire::be32(v, 8).map(u64::from).unwrap_or(0) << 32
            | wire::be32(v, 12).map(u64::from).unwrap_or(0);
        self.counters.heartbeat_acks_received += 1;
        self.hb_outstanding = false;
        self.error_count = 0;
        // The peer sees (and could alter) the info, so the time is not trusted to be sane.
        if let Some(sent_at) = self.epoch.checked_add(Duration::from_nanos(sent)) {
            if sent_at <= now {
                self.rtt_sample(now - sent_at);
            }
        }
    }

    fn send_heartbeat(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let since = now.saturating_duration_since(self.epoch);
        let nanos = since.as_nanos().min(u128::from(u64::MAX)) as u64;
        let mut info = [0u8; HB_INFO_LEN];
        info[..8].copy_from_slice(&self.hb_nonce.to_be_bytes());
        info[8..].copy_from_slice(&nanos.to_be_bytes());
        let mut v = Vec::with_capacity(4 + HB_INFO_LEN);
        emit_tlv(&mut v, param_type::HEARTBEAT_INFO, &info);
        self.ctrl
            .push_back(chunk_bytes(&Chunk::Heartbeat { info: &v }));
        self.hb_outstanding = true;
        self.counters.heartbeats_sent += 1;
        ctx.stats.heartbeats_sent += 1;
    }

    fn on_shutdown(&mut self, cum: u32, now: Instant, ctx: &mut Ctx<'_>) {
        match self.state {
            State::Established | State::ShutdownPending | State::ShutdownReceived => {
                // The SHUTDOWN's cumulative TSN ack acknowledges data like a SACK would.
                if self.send.on_sack(cum, std::iter::empty(), false).is_none() {
                    self.abort_with(
                        &[ErrorCause::ProtocolViolation(
                            b"SHUTDOWN beyond highest TSN sent".to_vec(),
                        )],
                        CloseReason::AbortedLocally,
                        ctx,
                    );
                    return;
                }
                if self.send.flight == 0 {
                    self.t3 = None;
                }
                self.state = State::ShutdownReceived;
                self.check_shutdown(now);
            }
            State::ShutdownSent => {
                // RFC 9260 §9.2: SHUTDOWN collision.
                self.ctrl.push_back(chunk_bytes(&Chunk::ShutdownAck));
                self.state = State::ShutdownAckSent;
                self.t2 = Some(now + self.rto);
            }
            _ => {}
        }
    }

    fn on_error(&mut self, chunk: &Chunk<'_>, now: Instant, ctx: &mut Ctx<'_>) {
        let causes: Vec<ErrorCause> = chunk.causes().filter_map(Result::ok).collect();
        if self.state == State::CookieEchoed {
            let stale = causes.iter().find_map(|c| match c {
                ErrorCause::StaleCookie { staleness_us } => Some(*staleness_us),
                _ => None,
            });
            if let Some(us) = stale {
                // RFC 9260 §5.2.6: start over with an INIT asking for a longer cookie life.
                self.init_retries += 1;
                if self.init_retries > self.cfg.max_init_retransmits {
                    self.close(CloseReason::InitFailed, ctx);
                    return;
                }
                let ms = (us / 1000).saturating_mul(2).max(1000);
                self.cookie_preservative = Some(ms);
                // A fresh INIT is a new association attempt: new tag and TSN, so a peer that
                // already holds a TCB for the old tag treats it as a restart (§5.2.4 A)
                // rather than a late duplicate it must discard.
                self.my_vtag = random_tag(&mut self.rng);
                self.my_initial_tsn = self.rng.gen();
                self.state = State::CookieWait;
                self.peer_vtag = 0;
                self.cookie.clear();
                self.ctrl.clear();
                self.init_pending = true;
                self.t1 = Some(now + self.rto);
                return;
            }
        }
        ctx.events.push_back((self.id, Event::PeerError { causes }));
    }

    fn on_init_ack(&mut self, ia: &InitChunk<'_>, now: Instant, ctx: &mut Ctx<'_>) {
        if ia.initiate_tag == 0 {
            // RFC 9260 §3.3.3: destroy the association.
            self.close(CloseReason::InitFailed, ctx);
            return;
        }
        if ia.outbound_streams == 0 || ia.inbound_streams == 0 {
            ctx.stats.init_zero_streams += 1;
            self.peer_vtag = ia.initiate_tag;
            self.abort_with(
                &[ErrorCause::InvalidMandatoryParameter],
                CloseReason::InitFailed,
                ctx,
            );
            return;
        }
        let mut cookie = None;
        let mut unrecognized = Vec::new();
        for p in ia.params() {
            let Ok(raw) = p else { break };
            match Param::parse(raw) {
                Ok(Param::StateCookie(c)) => cookie = Some(c),
                Ok(Param::Unknown(r)) => {
                    let (cont, report) = r.unknown_action();
                    if report {
                        emit_tlv(
                            &mut unrecognized,
                            param_type::UNRECOGNIZED_PARAMETER,
                            r.bytes,
                        );
                    }
                    if !cont {
                        break;
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let Some(cookie) = cookie else {
            self.peer_vtag = ia.initiate_tag;
            self.abort_with(
                &[ErrorCause::MissingMandatoryParameter {
                    params: vec![param_type::STATE_COOKIE],
                }],
                CloseReason::InitFailed,
                ctx,
            );
            return;
        };
        self.peer_vtag = ia.initiate_tag;
        let out = self.cfg.outbound_streams.min(ia.inbound_streams);
        let inb = self.cfg.max_inbound_streams.min(ia.outbound_streams);
        self.apply_peer(ia.initial_tsn, ia.a_rwnd, out, inb);
        self.cookie = cookie.to_vec();
        self.state = State::CookieEchoed;
        self.init_retries = 0;
        self.t1 = Some(now + self.rto);
        self.ctrl.push_back(chunk_bytes(&Chunk::CookieEcho {
            cookie: &self.cookie,
        }));
        if !unrecognized.is_empty() {
            // RFC 9260 §3.3.3: report them in an ERROR bundled after the COOKIE ECHO.
            let enc = ErrorCause::emit_all(&[ErrorCause::UnrecognizedParameters(unrecognized)]);
            self.ctrl
                .push_back(chunk_bytes(&Chunk::Error { causes: &enc }));
        }
    }

    // ---- timers ----

    pub(crate) fn handle_timeout(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.burst_left = self.cfg.max_burst.max(1);
        if self.t1.is_some_and(|t| t <= now) {
            self.t1 = None;
            self.init_retries += 1;
            if self.init_retries > self.cfg.max_init_retransmits {
                self.close(CloseReason::InitFailed, ctx);
                return;
            }
            self.back_off();
            match self.state {
                State::CookieWait => self.init_pending = true,
                State::CookieEchoed => self.ctrl.push_back(chunk_bytes(&Chunk::CookieEcho {
                    cookie: &self.cookie,
                })),
                _ => {}
            }
            self.t1 = Some(now + self.rto);
        }
        if self.t2.is_some_and(|t| t <= now) {
            self.t2 = None;
            if self.count_error(ctx) {
                return;
            }
            self.back_off();
            match self.state {
                State::ShutdownSent => self.queue_shutdown(),
                State::ShutdownAckSent => self.ctrl.push_back(chunk_bytes(&Chunk::ShutdownAck)),
                _ => {}
            }
            self.t2 = Some(now + self.rto);
        }
        if self.t3.is_some_and(|t| t <= now) {
            self.t3 = None;
            if self.send.has_outstanding() {
                self.counters.t3_expirations += 1;
                tracing::trace!(assoc = %self.id, rto = ?self.rto, "T3-rtx expired");
                if self.count_error(ctx) {
                    return;
                }
                // RFC 9260 §7.2.3 and §6.3.3 E1, E2.
                self.ssthresh = (self.cwnd / 2).max(4 * self.pmtu);
                self.cwnd = self.pmtu;
                self.partial_bytes_acked = 0;
                self.fast_recovery = None;
                self.back_off();
                self.send.mark_all_for_retransmit();
            }
        }
        if self.hb_timer.is_some_and(|t| t <= now) {
            self.hb_timer = None;
            if matches!(self.state, State::Established | State::ShutdownPending) {
                if self.hb_outstanding {
                    // RFC 9260 §8.3: an unanswered HEARTBEAT counts as a failure.
                    self.back_off();
                    if self.count_error(ctx) {
                        return;
                    }
                }
                self.send_heartbeat(now, ctx);
                self.arm_heartbeat(now);
            }
        }
        if self.sack_timer.is_some_and(|t| t <= now) {
            self.sack_timer = None;
            self.sack_now = true;
        }
    }

    /// Counts a failure; closes with CommunicationLost past Association.Max.Retrans (§8.1).
    fn count_error(&mut self, ctx: &mut Ctx<'_>) -> bool {
        self.error_count += 1;
        if self.error_count > self.cfg.association_max_retrans {
            self.close(CloseReason::CommunicationLost, ctx);
            return true;
        }
        false
    }

    // ---- output ----

    fn data_state(&self) -> bool {
        matches!(
            self.state,
            State::Established | State::ShutdownPending | State::ShutdownReceived
        )
    }

    fn data_sendable(&self) -> bool {
        if !self.data_state() {
            return false;
        }
        let s = &self.send;
        if s.retx_pending > 0 && (s.flight < self.cwnd || self.fast_bypass) {
            return true;
        }
        if self.burst_left == 0 || s.flight >= self.cwnd {
            return false;
        }
        match s.queue.get(s.next_new) {
            Some(c) => s.flight == 0 || self.peer_rwnd as usize >= c.data.len(),
            None => false,
        }
    }

    /// Builds the next packet, if any.
    pub(crate) fn poll_transmit(&mut self, now: Instant, ctx: &mut Ctx<'_>) -> Option<Vec<u8>> {
        if self.init_pending {
            self.init_pending = false;
            return Some(self.build_init());
        }
        let want_data = self.data_sendable();
        let sack = self.state != State::Closed
            && self.state != State::CookieWait
            && (self.sack_now || (want_data && self.sack_timer.is_some()));
        if self.ctrl.is_empty() && !sack && !want_data {
            return None;
        }
        let mut buf = self.start_packet();
        // RFC 9260 §6.10: control chunks first.
        self.pack_ctrl(&mut buf);
        if sack && self.pmtu.saturating_sub(buf.len()) >= SACK_BASE_LEN {
            self.build_sack(&mut buf);
        }
        if want_data && self.ctrl.is_empty() {
            self.fill_data(now, &mut buf, ctx);
        }
        if buf.len() == COMMON_HEADER_LEN {
            return None;
        }
        finish_packet(&mut buf);
        self.counters.packets_sent += 1;
        Some(buf)
    }

    /// Packets left to send after the association closed (ABORT, SHUTDOWN COMPLETE).
    pub(crate) fn poll_final(&mut self) -> Option<Vec<u8>> {
        if self.ctrl.is_empty() {
            return None;
        }
        let mut buf = self.start_packet();
        self.pack_ctrl(&mut buf);
        finish_packet(&mut buf);
        self.counters.packets_sent += 1;
        Some(buf)
    }

    fn start_packet(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(self.pmtu);
        CommonHeader {
            src_port: self.local_port,
            dst_port: self.remote_port,
            verification_tag: self.peer_vtag,
        }
        .emit(&mut buf);
        buf
    }

    fn pack_ctrl(&mut self, buf: &mut Vec<u8>) {
        while let Some(c) = self.ctrl.front() {
            if buf.len() > COMMON_HEADER_LEN && buf.len() + c.len() > self.pmtu {
                break;
            }
            buf.extend_from_slice(c);
            self.ctrl.pop_front();
        }
    }

    fn build_init(&mut self) -> Vec<u8> {
        let mut params = Vec::with_capacity(16);
        // Supported Address Types: IPv4 only (RFC 9260 §3.3.2.1.4).
        emit_tlv(
            &mut params,
            param_type::SUPPORTED_ADDRESS_TYPES,
            &param_type::IPV4_ADDRESS.to_be_bytes(),
        );
        if let Some(ms) = self.cookie_preservative {
            Param::CookiePreservative(ms).emit(&mut params);
        }
        let mut buf = Vec::with_capacity(64);
        CommonHeader {
            src_port: self.local_port,
            dst_port: self.remote_port,
            // RFC 9260 §8.5.1 A: INIT goes with tag 0.
            verification_tag: 0,
        }
        .emit(&mut buf);
        Chunk::Init(InitChunk {
            initiate_tag: self.my_vtag,
            a_rwnd: self.cfg.a_rwnd,
            outbound_streams: self.cfg.outbound_streams,
            inbound_streams: self.cfg.max_inbound_streams,
            initial_tsn: self.my_initial_tsn,
            params: &params,
        })
        .emit(&mut buf);
        finish_packet(&mut buf);
        self.counters.packets_sent += 1;
        buf
    }

    fn build_sack(&mut self, buf: &mut Vec<u8>) {
        let room = self.pmtu.saturating_sub(buf.len() + SACK_BASE_LEN);
        let mut gaps = std::mem::take(&mut self.gap_scratch);
        self.recv.gap_blocks(&mut gaps, (room / 4).min(128));
        let room = room.saturating_sub(4 * gaps.len());
        let ndups = self.recv.dups.len().min(room / 4);
        let a_rwnd = (self.cfg.a_rwnd as usize).saturating_sub(self.recv.buffered) as u32;
        emit_sack(
            buf,
            self.recv.cum,
            a_rwnd,
            &gaps,
            self.recv.dups.get(..ndups).unwrap_or(&[]),
        );
        self.counters.sacks_sent += 1;
        if !gaps.is_empty() {
            self.counters.sacks_with_gaps_sent += 1;
        }
        self.gap_scratch = gaps;
        self.recv.dups.clear();
        self.sack_now = false;
        self.sack_timer = None;
        self.packets_since_sack = 0;
    }

    fn fill_data(&mut self, now: Instant, buf: &mut Vec<u8>, ctx: &mut Ctx<'_>) {
        let pmtu = self.pmtu;
        let s = &mut self.send;
        let mut sent_any = false;
        // Retransmissions first (RFC 9260 §6.1 C, §7.2.4 step 3).
        if s.retx_pending > 0 && (s.flight < self.cwnd || self.fast_bypass) {
            self.fast_bypass = false;
            for idx in 0..s.next_new {
                let Some(c) = s.queue.get_mut(idx) else { break };
                if !c.retx {
                    continue;
                }
                if buf.len() + pad4(DATA_HEADER_LEN + c.data.len()) > pmtu {
                    break;
                }
                wire::emit_data(
                    buf,
                    &DataChunk {
                        flags: c.flags,
                        tsn: c.tsn,
                        stream: c.stream,
                        ssn: c.ssn,
                        ppid: c.ppid,
                        payload: &c.data,
                    },
                );
                c.retx = false;
                c.in_flight = true;
                c.sent_count += 1;
                c.miss = 0;
                s.flight += c.data.len();
                s.retx_pending = s.retx_pending.saturating_sub(1);
                if s.rtt_probe.is_some_and(|(t, _)| t == c.tsn) {
                    // Karn's algorithm (RFC 9260 §6.3.1 C5).
                    s.rtt_probe = None;
                }
                self.counters.retransmissions += 1;
                ctx.stats.retransmissions += 1;
                sent_any = true;
                if s.retx_pending == 0 {
                    break;
                }
            }
        }
        // New data (RFC 9260 §6.1 A, B; §7.2.1).
        let mut sent_new = false;
        if self.burst_left > 0 {
            while let Some(c) = s.queue.get_mut(s.next_new) {
                let len = c.data.len();
                if s.flight >= self.cwnd {
                    break;
                }
                if (self.peer_rwnd as usize) < len && s.flight > 0 {
                    break;
                }
                if buf.len() + pad4(DATA_HEADER_LEN + len) > pmtu {
                    break;
                }
                wire::emit_data(
                    buf,
                    &DataChunk {
                        flags: c.flags,
                        tsn: c.tsn,
                        stream: c.stream,
                        ssn: c.ssn,
                        ppid: c.ppid,
                        payload: &c.data,
                    },
                );
                c.sent_count = 1;
                c.in_flight = true;
                s.flight += len;
                self.peer_rwnd = self.peer_rwnd.saturating_sub(len as u32);
                if s.rtt_probe.is_none() {
                    s.rtt_probe = Some((c.tsn, now));
                }
                s.next_new += 1;
                self.counters.data_chunks_sent += 1;
                sent_new = true;
            }
        }
        if sent_new {
            self.burst_left -= 1;
        }
        if (sent_any || sent_new) && self.t3.is_none() {
            self.t3 = Some(now + self.rto);
        }
    }
}

/// RFC 9260 §7.2.1: initial cwnd = min(4 * MTU, max(2 * MTU, 4404)).
fn initial_cwnd(mtu: usize) -> usize {
    (4 * mtu).min((2 * mtu).max(4404))
}

pub(crate) fn random_tag(rng: &mut impl Rng) -> u32 {
    loop {
        let v: u32 = rng.gen();
        if v != 0 {
            return v;
        }
    }
}
