//! The emulator's user plane on N3: uplink G-PDUs (GTP-U T-PDUs with a UL PDU Session
//! Container, TS 29.281 §5, TS 38.415 §5.5.2.2) carrying an inner IPv4 UDP datagram or
//! ICMP echo request from the UE's address to a DN address, and downlink G-PDUs
//! demultiplexed by TEID back to the UE whose probe they answer.
//!
//! Sans-IO: [`UserPlane::build_uplink`] writes one packet for a session into a buffer,
//! [`UserPlane::handle_downlink`] takes one received datagram, and the caller owns the
//! socket and the clock (nanoseconds of its choosing). Each probe carries a sequence
//! number and its send time, so a reply gives latency and the probes never answered
//! give loss. [`Pacer`] spreads a packet rate over time; [`udp`] is a small
//! loop over a `std` UDP socket; [`traffic`] is the engine on top: a plan of many
//! sessions, a rate, a size and bounds in, a serializable report out. [`relay`] and [`tun`]
//! carry the kernel's own traffic instead: one TUN device per UE, its packets relayed
//! to and from the session's tunnel.

pub mod relay;
pub mod traffic;
pub mod tun;
pub mod udp;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};

use hdrhistogram::Histogram;
use pfcp::gtpu::{self, ExtHeader, PduSessionContainer, Repr};
use proto::ngap::GtpTunnel;
use thiserror::Error;

/// The GTP-U UDP port (TS 29.281 §4.4.2.3).
pub const GTPU_PORT: u16 = 2152;
/// IPv4 header without options.
const IPV4_LEN: usize = 20;
const UDP_LEN: usize = 8;
const ICMP_LEN: usize = 8;
const PROTO_ICMP: u8 = 1;
const PROTO_UDP: u8 = 17;
/// Marks a probe payload: "S5GP".
const MAGIC: u32 = 0x5335_4750;
/// magic, session index, sequence, send time.
const PROBE_LEN: usize = 4 + 4 + 8 + 8;

/// One PDU session as the user plane needs it: from the UE's accept (its address)
/// and the gNB's session table (the tunnel ends and the QFI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpSession {
    /// The UE's IPv4 address.
    pub ue_ip: Ipv4Addr,
    /// The UPF's N3 end: where uplink goes, with its TEID.
    pub upf: GtpTunnel,
    /// The gNB's downlink TEID.
    pub gnb_teid: u32,
    /// QFI of the uplink PDU Session Container.
    pub qfi: u8,
}

impl UpSession {
    /// The session of a UE whose accept gave it `ue_ip`, on the gNB's `session`.
    pub fn new(ue_ip: Ipv4Addr, session: &crate::gnb::GnbSession) -> Self {
        Self {
            ue_ip,
            upf: session.upf,
            gnb_teid: session.gnb.teid,
            qfi: session.qfi,
        }
    }
}

/// The inner packet of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    /// A UDP datagram to `dn:port`, which the DN echoes.
    Udp {
        /// Source port on the UE.
        src_port: u16,
        /// Destination port on the DN.
        dst_port: u16,
    },
    /// An ICMP echo request (RFC 792), identifier = session index.
    IcmpEcho,
}

/// What to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowConfig {
    /// DN address the probes go to.
    pub dn: Ipv4Addr,
    /// UDP or ICMP.
    pub kind: ProbeKind,
    /// Inner IPv4 packet size (total length), at least the headers plus 24 octets of
    /// probe, at most 65535.
    pub inner_size: usize,
    /// UDP port of the UPF's GTP-U endpoint ([`GTPU_PORT`]; another in tests).
    pub upf_port: u16,
}

impl Default for FlowConfig {
    fn default() -> Self {
        Self {
            dn: Ipv4Addr::new(192, 0, 2, 1),
            kind: ProbeKind::Udp {
                src_port: 40000,
                dst_port: 9,
            },
            inner_size: 128,
            upf_port: GTPU_PORT,
        }
    }
}

impl FlowConfig {
    fn l4_len(&self) -> usize {
        match self.kind {
            ProbeKind::Udp { .. } => UDP_LEN,
            ProbeKind::IcmpEcho => ICMP_LEN,
        }
    }

    fn min_size(&self) -> usize {
        IPV4_LEN + self.l4_len() + PROBE_LEN
    }
}

/// A user plane that cannot be set up or a packet that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum UpError {
    /// The inner size is outside what the probe needs and IPv4 allows.
    #[error("inner size {size} is not in {min}..=65535")]
    InnerSize {
        /// Asked.
        size: usize,
        /// The least.
        min: usize,
    },
    /// Two sessions with the same downlink TEID.
    #[error("downlink TEID {0} is used twice")]
    DuplicateTeid(u32),
    /// No session of that index.
    #[error("no session {0}")]
    NoSession(usize),
    /// GTP-U encoding.
    #[error("GTP-U: {0}")]
    Gtpu(#[from] gtpu::Error),
}

/// Counters and latency of one run.
#[derive(Debug, Clone)]
pub struct UpStats {
    /// Probes sent.
    pub sent: u64,
    /// Replies matched to a probe.
    pub received: u64,
    /// Probes given up on by [`UserPlane::expire`].
    pub lost: u64,
    /// Replies to a probe already answered or expired.
    pub late_or_duplicate: u64,
    /// Downlink datagrams for no session's TEID.
    pub unknown_teid: u64,
    /// Downlink datagrams that are no G-PDU with a probe reply for the session's UE.
    pub malformed: u64,
    /// Round-trip times in microseconds.
    pub latency_us: Histogram<u64>,
}

impl Default for UpStats {
    fn default() -> Self {
        Self {
            sent: 0,
            received: 0,
            lost: 0,
            late_or_duplicate: 0,
            unknown_teid: 0,
            malformed: 0,
            // 1 µs to 60 s at 3 significant digits; values above saturate.
            latency_us: Histogram::new_with_bounds(1, 60_000_000, 3)
                .expect("constant histogram bounds are valid"),
        }
    }
}

/// What one downlink datagram was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Downlink {
    /// The reply to a probe, with its round trip in nanoseconds.
    Reply {
        /// Session index.
        session: usize,
        /// Sequence number.
        seq: u64,
        /// Round trip.
        rtt_ns: u64,
    },
    /// A reply to a probe already answered or expired.
    LateOrDuplicate,
    /// A TEID of no session.
    UnknownTeid(u32),
    /// Not a probe reply.
    Malformed,
}

/// The user plane of a set of sessions.
#[derive(Debug)]
pub struct UserPlane {
    cfg: FlowConfig,
    sessions: Vec<UpSession>,
    by_teid: HashMap<u32, usize>,
    next_seq: u64,
    /// Probes in flight: sequence → (session, send time).
    in_flight: HashMap<u64, (usize, u64)>,
    stats: UpStats,
}

impl UserPlane {
    /// A user plane sending `cfg` probes on `sessions`.
    pub fn new(cfg: FlowConfig, sessions: Vec<UpSession>) -> Result<Self, UpError> {
        if cfg.inner_size < cfg.min_size() || cfg.inner_size > usize::from(u16::MAX) {
            return Err(UpError::InnerSize {
                size: cfg.inner_size,
                min: cfg.min_size(),
            });
        }
        let mut by_teid = HashMap::with_capacity(sessions.len());
        for (i, s) in sessions.iter().enumerate() {
            if by_teid.insert(s.gnb_teid, i).is_some() {
                return Err(UpError::DuplicateTeid(s.gnb_teid));
            }
        }
        Ok(Self {
            cfg,
            sessions,
            by_teid,
            next_seq: 0,
            in_flight: HashMap::new(),
            stats: UpStats::default(),
        })
    }

    /// The sessions.
    pub fn sessions(&self) -> &[UpSession] {
        &self.sessions
    }

    /// The counters.
    pub fn stats(&self) -> &UpStats {
        &self.stats
    }

    /// Probes sent and neither answered nor expired.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Writes the next uplink G-PDU of session `session` into `buf` (replacing its
    /// contents), stamped `now_ns`, and gives the UPF endpoint to send it to.
    pub fn build_uplink(
        &mut self,
        session: usize,
        now_ns: u64,
        buf: &mut Vec<u8>,
    ) -> Result<SocketAddrV4, UpError> {
        let s = *self
            .sessions
            .get(session)
            .ok_or(UpError::NoSession(session))?;
        let seq = self.next_seq;
        let mut gtp = Repr::g_pdu(s.upf.teid, self.cfg.inner_size);
        gtp.extensions
            .push(ExtHeader::PduSessionContainer(PduSessionContainer::uplink(
                s.qfi,
            )));
        let hlen = gtp.header_len();
        buf.clear();
        buf.resize(hlen + self.cfg.inner_size, 0);
        gtp.emit(buf)?;
        let mut probe = [0u8; PROBE_LEN];
        probe[..4].copy_from_slice(&MAGIC.to_be_bytes());
        // Session indexes past 2^32 do not occur (one per emulated UE); truncate.
        probe[4..8].copy_from_slice(&(session as u32).to_be_bytes());
        probe[8..16].copy_from_slice(&seq.to_be_bytes());
        probe[16..24].copy_from_slice(&now_ns.to_be_bytes());
        write_inner(
            &mut buf[hlen..],
            s.ue_ip,
            self.cfg.dn,
            self.cfg.kind,
            session,
            seq,
            &probe,
        );
        self.next_seq += 1;
        self.in_flight.insert(seq, (session, now_ns));
        self.stats.sent += 1;
        Ok(SocketAddrV4::new(s.upf.addr, self.cfg.upf_port))
    }

    /// One datagram received on the gNB's N3 socket at `now_ns`.
    pub fn handle_downlink(&mut self, datagram: &[u8], now_ns: u64) -> Downlink {
        let r = self.classify(datagram, now_ns);
        match r {
            Downlink::Reply { rtt_ns, .. } => {
                self.stats.received += 1;
                // Sub-microsecond round trips count as 1 µs, the histogram's floor.
                self.stats
                    .latency_us
                    .saturating_record((rtt_ns / 1000).max(1));
            }
            Downlink::LateOrDuplicate => self.stats.late_or_duplicate += 1,
            Downlink::UnknownTeid(_) => self.stats.unknown_teid += 1,
            Downlink::Malformed => self.stats.malformed += 1,
        }
        r
    }

    fn classify(&mut self, datagram: &[u8], now_ns: u64) -> Downlink {
        let Ok(p) = gtpu::Packet::new_checked(datagram) else {
            return Downlink::Malformed;
        };
        if p.msg_type() != gtpu::msg_type::G_PDU {
            return Downlink::Malformed;
        }
        let Some(&session) = self.by_teid.get(&p.teid()) else {
            return Downlink::UnknownTeid(p.teid());
        };
        let Ok(inner) = p.payload() else {
            return Downlink::Malformed;
        };
        let Some(ue_ip) = self.sessions.get(session).map(|s| s.ue_ip) else {
            return Downlink::Malformed;
        };
        let Some(probe) = parse_reply(inner, ue_ip, self.cfg.dn) else {
            return Downlink::Malformed;
        };
        match self.in_flight.remove(&probe.seq) {
            Some((s, sent)) if s == session && probe.sent_ns == sent => Downlink::Reply {
                session,
                seq: probe.seq,
                rtt_ns: now_ns.saturating_sub(sent),
            },
            Some(other) => {
                // Not this session's probe: leave it in flight.
                self.in_flight.insert(probe.seq, other);
                Downlink::Malformed
            }
            None => Downlink::LateOrDuplicate,
        }
    }

    /// Counts as lost every probe sent before `now_ns - timeout_ns`.
    pub fn expire(&mut self, now_ns: u64, timeout_ns: u64) {
        let before = self.in_flight.len();
        self.in_flight
            .retain(|_, (_, sent)| now_ns.saturating_sub(*sent) < timeout_ns);
        self.stats.lost += (before - self.in_flight.len()) as u64;
    }

    /// Counts every probe still in flight as lost: the end of a run.
    pub fn finish(&mut self) {
        self.stats.lost += self.in_flight.len() as u64;
        self.in_flight.clear();
    }
}

/// RFC 1071 Internet checksum of `data`, folded, complemented.
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(0, data))
}

fn sum(mut acc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in chunks.by_ref() {
        acc = acc.wrapping_add(u32::from(u16::from_be_bytes([c[0], c[1]])));
        acc = (acc & 0xffff) + (acc >> 16);
    }
    if let [last] = chunks.remainder() {
        acc = acc.wrapping_add(u32::from(*last) << 8);
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Writes an IPv4 header (RFC 791, no options, DF, TTL 64) for a packet filling `out`.
fn write_ipv4(out: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr, proto: u8, id: u16) {
    let total = u16::try_from(out.len()).unwrap_or(u16::MAX);
    let h = &mut out[..IPV4_LEN];
    h.fill(0);
    h[0] = 0x45;
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6] = 0x40;
    h[8] = 64;
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = checksum(h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
}

/// The UDP checksum over the pseudo-header (RFC 768) of the datagram `udp`; 0 is sent
/// as all ones.
fn udp_checksum(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> u16 {
    match !fold(udp_sum(src, dst, udp)) {
        0 => 0xffff,
        c => c,
    }
}

/// Writes the inner packet into `out` (whose length is the inner size): headers, the
/// probe, then zero padding.
fn write_inner(
    out: &mut [u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    kind: ProbeKind,
    session: usize,
    seq: u64,
    probe: &[u8; PROBE_LEN],
) {
    let ident = session as u16;
    match kind {
        ProbeKind::Udp { src_port, dst_port } => {
            write_ipv4(out, src, dst, PROTO_UDP, seq as u16);
            let udp = &mut out[IPV4_LEN..];
            let len = u16::try_from(udp.len()).unwrap_or(u16::MAX);
            udp[..UDP_LEN].fill(0);
            udp[0..2].copy_from_slice(&src_port.to_be_bytes());
            udp[2..4].copy_from_slice(&dst_port.to_be_bytes());
            udp[4..6].copy_from_slice(&len.to_be_bytes());
            udp[UDP_LEN..UDP_LEN + PROBE_LEN].copy_from_slice(probe);
            let c = udp_checksum(src, dst, udp);
            udp[6..8].copy_from_slice(&c.to_be_bytes());
        }
        ProbeKind::IcmpEcho => {
            write_ipv4(out, src, dst, PROTO_ICMP, seq as u16);
            let icmp = &mut out[IPV4_LEN..];
            icmp[..ICMP_LEN].fill(0);
            icmp[0] = 8; // echo request
            icmp[4..6].copy_from_slice(&ident.to_be_bytes());
            icmp[6..8].copy_from_slice(&(seq as u16).to_be_bytes());
            icmp[ICMP_LEN..ICMP_LEN + PROBE_LEN].copy_from_slice(probe);
            let c = checksum(icmp);
            icmp[2..4].copy_from_slice(&c.to_be_bytes());
        }
    }
}

struct Probe {
    seq: u64,
    sent_ns: u64,
}

/// The L4 payload of an inner IPv4 packet with valid checksums, with its protocol, or
/// `None`.
fn l4_of(inner: &[u8]) -> Option<(u8, Ipv4Addr, Ipv4Addr, &[u8])> {
    let h = inner.get(..IPV4_LEN)?;
    let ihl = usize::from(h[0] & 0x0f) * 4;
    if h[0] >> 4 != 4 || ihl < IPV4_LEN {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let pkt = inner.get(..total)?;
    if checksum(pkt.get(..ihl)?) != 0 {
        return None;
    }
    let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
    let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
    Some((h[9], src, dst, pkt.get(ihl..)?))
}

/// A DN's reply to a probe: from `dn` to `ue`, checksums valid.
fn parse_reply(inner: &[u8], ue: Ipv4Addr, dn: Ipv4Addr) -> Option<Probe> {
    let (proto, src, dst, l4) = l4_of(inner)?;
    if src != dn || dst != ue {
        return None;
    }
    let data = match proto {
        PROTO_UDP => {
            let c = u16::from_be_bytes([*l4.get(6)?, *l4.get(7)?]);
            // RFC 768: checksum 0 means none was computed.
            if c != 0 && !udp_ok(src, dst, l4) {
                return None;
            }
            l4.get(UDP_LEN..)?
        }
        PROTO_ICMP => {
            if *l4.first()? != 0 || checksum(l4) != 0 {
                return None;
            }
            l4.get(ICMP_LEN..)?
        }
        _ => return None,
    };
    let p = data.get(..PROBE_LEN)?;
    if u32::from_be_bytes([p[0], p[1], p[2], p[3]]) != MAGIC {
        return None;
    }
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&p[i..i + 8]);
        u64::from_be_bytes(b)
    };
    Some(Probe {
        seq: u64_at(8),
        sent_ns: u64_at(16),
    })
}

/// A received UDP datagram's checksum verifies: the sum over pseudo-header and
/// datagram, checksum included, is all ones.
fn udp_ok(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> bool {
    fold(udp_sum(src, dst, udp)) == 0xffff
}

/// The unfolded one's-complement sum of the UDP pseudo-header (RFC 768) and of `udp`.
fn udp_sum(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> u32 {
    let len = u16::try_from(udp.len()).unwrap_or(u16::MAX);
    let mut acc = sum(0, &src.octets());
    acc = sum(acc, &dst.octets());
    acc = sum(acc, &[0, PROTO_UDP]);
    acc = sum(acc, &len.to_be_bytes());
    sum(acc, udp)
}

/// What a DN answers to an inner probe packet: a UDP datagram with addresses and ports
/// swapped, or the ICMP echo reply (RFC 792), checksums recomputed. `None` for any
/// other packet. For tests and loopback runs that stand in for the UPF and the DN.
pub fn echo_inner(inner: &[u8]) -> Option<Vec<u8>> {
    let (proto, src, dst, l4) = l4_of(inner)?;
    let mut out = vec![0u8; IPV4_LEN + l4.len()];
    let id = u16::from_be_bytes([inner[4], inner[5]]);
    match proto {
        PROTO_UDP if l4.len() >= UDP_LEN && udp_ok(src, dst, l4) => {
            write_ipv4(&mut out, dst, src, PROTO_UDP, id);
            let udp = &mut out[IPV4_LEN..];
            udp.copy_from_slice(l4);
            udp[0..2].copy_from_slice(&l4[2..4]);
            udp[2..4].copy_from_slice(&l4[0..2]);
            udp[6..8].fill(0);
            let c = udp_checksum(dst, src, udp);
            udp[6..8].copy_from_slice(&c.to_be_bytes());
        }
        PROTO_ICMP if l4.len() >= ICMP_LEN && l4[0] == 8 && checksum(l4) == 0 => {
            write_ipv4(&mut out, dst, src, PROTO_ICMP, id);
            let icmp = &mut out[IPV4_LEN..];
            icmp.copy_from_slice(l4);
            icmp[0] = 0;
            icmp[2..4].fill(0);
            let c = checksum(icmp);
            icmp[2..4].copy_from_slice(&c.to_be_bytes());
        }
        _ => return None,
    }
    Some(out)
}

/// What a UPF does to an uplink G-PDU in a loopback run: the inner packet's echo in a
/// downlink G-PDU to `gnb_teid` with a DL PDU Session Container. `None` when the
/// datagram is no G-PDU with an echoable packet.
pub fn reflect_gpdu(uplink: &[u8], gnb_teid: u32) -> Option<Vec<u8>> {
    let p = gtpu::Packet::new_checked(uplink).ok()?;
    let r = Repr::parse(&p).ok()?;
    let reply = echo_inner(p.payload().ok()?)?;
    let mut gtp = Repr::g_pdu(gnb_teid, reply.len());
    gtp.extensions.push(ExtHeader::PduSessionContainer(
        PduSessionContainer::downlink(r.qfi().unwrap_or(0)),
    ));
    let hlen = gtp.header_len();
    let mut out = vec![0u8; hlen + reply.len()];
    gtp.emit(&mut out).ok()?;
    out[hlen..].copy_from_slice(&reply);
    Some(out)
}

/// Spreads `rate` packets per second from `start_ns`: how many are due by `now_ns`.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    rate: u64,
    start_ns: u64,
    issued: u64,
}

impl Pacer {
    /// A pacer of `rate` packets/s (at least 1) starting at `start_ns`.
    pub fn new(rate: u64, start_ns: u64) -> Self {
        Self {
            rate: rate.max(1),
            start_ns,
            issued: 0,
        }
    }

    /// Packets due now, at most `max` (a burst bound after a stall); counts them as
    /// issued.
    pub fn due(&mut self, now_ns: u64, max: u64) -> u64 {
        let elapsed = now_ns.saturating_sub(self.start_ns);
        let target = (u128::from(elapsed) * u128::from(self.rate) / 1_000_000_000) as u64;
        let n = target.saturating_sub(self.issued).min(max);
        self.issued += n;
        n
    }

    /// Nanoseconds from `now_ns` until the next packet is due.
    pub fn wait_ns(&self, now_ns: u64) -> u64 {
        let next = u128::from(self.issued + 1) * 1_000_000_000 / u128::from(self.rate);
        let at = u128::from(self.start_ns) + next;
        (at.saturating_sub(u128::from(now_ns))).min(u128::from(u64::MAX)) as u64
    }
}

#[cfg(test)]
mod tests;
