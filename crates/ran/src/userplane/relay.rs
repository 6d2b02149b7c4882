//! The per-UE TUN relay's packet logic (`steer5g ran --tun`), without any I/O: an IP packet
//! the kernel wrote to a UE's TUN becomes an uplink G-PDU (TS 29.281 §5.1) on the session's
//! uplink TEID with a UL PDU Session Container carrying its QFI (TS 38.415 §5.5.2.2), and a
//! G-PDU from the UPF on a session's downlink TEID gives back the inner packet to write to
//! that UE's TUN. The caller ([`super::tun`]) owns the devices, the N3 socket and the loop.
//!
//! Only IPv4 packets of the UE's own address go up (a kernel also writes IPv6 router
//! solicitations or packets of other sources to a fresh device), and only IPv4 packets to
//! the UE's address come down: anything else is counted and dropped, never forwarded.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};

use pfcp::gtpu::{self, ExtHeader, PduSessionContainer, Repr};
use serde::Serialize;

use super::{UpError, UpSession};

/// IPv4 header without options: the least an inner packet must hold.
const IPV4_LEN: usize = 20;

/// Why a packet was not relayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// No session of that index.
    NoSession,
    /// Not an IPv4 packet (too short, or another version).
    NotIpv4,
    /// Uplink from another source address than the UE's.
    WrongSource,
    /// Downlink to another destination than the UE's.
    WrongDestination,
    /// Downlink that is no valid G-PDU (or another GTP-U message).
    NotGpdu,
    /// Downlink on a TEID of no session.
    UnknownTeid(u32),
    /// Uplink too long for a G-PDU's length field.
    TooLong,
}

/// Packets and octets (inner IP packets) one way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Flow {
    /// Packets relayed.
    pub packets: u64,
    /// Their inner octets.
    pub bytes: u64,
}

impl Flow {
    fn add(&mut self, len: usize) {
        self.packets += 1;
        self.bytes += len as u64;
    }
}

/// The counters of one session's TUN.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SessionCounters {
    /// TUN → N3.
    pub uplink: Flow,
    /// N3 → TUN.
    pub downlink: Flow,
    /// Uplink packets dropped (not IPv4 from the UE's address).
    pub uplink_dropped: u64,
    /// Downlink packets dropped (not IPv4 to the UE's address).
    pub downlink_dropped: u64,
}

/// The relay of a set of sessions, each one TUN.
#[derive(Debug)]
pub struct Relay {
    sessions: Vec<UpSession>,
    by_teid: HashMap<u32, usize>,
    upf_port: u16,
    counters: Vec<SessionCounters>,
    /// Downlink datagrams no session could take (unknown TEID, no G-PDU).
    unmatched: u64,
}

impl Relay {
    /// A relay for `sessions` (session `i` is TUN `i`), sending uplink to the UPF's N3
    /// address on `upf_port`.
    pub fn new(sessions: Vec<UpSession>, upf_port: u16) -> Result<Self, UpError> {
        let mut by_teid = HashMap::with_capacity(sessions.len());
        for (i, s) in sessions.iter().enumerate() {
            if by_teid.insert(s.gnb_teid, i).is_some() {
                return Err(UpError::DuplicateTeid(s.gnb_teid));
            }
        }
        Ok(Self {
            counters: vec![SessionCounters::default(); sessions.len()],
            sessions,
            by_teid,
            upf_port,
            unmatched: 0,
        })
    }

    /// The sessions.
    pub fn sessions(&self) -> &[UpSession] {
        &self.sessions
    }

    /// Each session's counters, in session order.
    pub fn counters(&self) -> &[SessionCounters] {
        &self.counters
    }

    /// Downlink datagrams for no session.
    pub fn unmatched(&self) -> u64 {
        self.unmatched
    }

    /// Encapsulates `packet`, read from session `session`'s TUN, into `out` (replacing
    /// its contents) and gives the UPF endpoint to send it to.
    pub fn uplink(
        &mut self,
        session: usize,
        packet: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<SocketAddrV4, Dropped> {
        let (Some(s), Some(c)) = (self.sessions.get(session), self.counters.get_mut(session))
        else {
            return Err(Dropped::NoSession);
        };
        let verdict = match ipv4_addrs(packet) {
            None => Err(Dropped::NotIpv4),
            Some((src, _)) if src != s.ue_ip => Err(Dropped::WrongSource),
            Some(_) => Ok(()),
        };
        if let Err(d) = verdict {
            c.uplink_dropped += 1;
            return Err(d);
        }
        let mut gtp = Repr::g_pdu(s.upf.teid, packet.len());
        gtp.extensions
            .push(ExtHeader::PduSessionContainer(PduSessionContainer::uplink(
                s.qfi,
            )));
        let hlen = gtp.header_len();
        out.clear();
        out.resize(hlen + packet.len(), 0);
        if gtp.emit(out).is_err() {
            // Only a packet longer than a GTP-U length field holds gets here; a TUN's MTU
            // keeps them far shorter.
            c.uplink_dropped += 1;
            return Err(Dropped::TooLong);
        }
        out[hlen..].copy_from_slice(packet);
        c.uplink.add(packet.len());
        Ok(SocketAddrV4::new(s.upf.addr, self.upf_port))
    }

    /// Decapsulates one datagram received on the gNB's N3 socket: the session whose TUN
    /// takes the inner packet, and the packet.
    pub fn downlink<'a>(&mut self, datagram: &'a [u8]) -> Result<(usize, &'a [u8]), Dropped> {
        let r = self.classify(datagram);
        match r {
            Ok((session, inner)) => {
                if let Some(c) = self.counters.get_mut(session) {
                    c.downlink.add(inner.len());
                }
            }
            Err(Dropped::WrongDestination | Dropped::NotIpv4) => {}
            Err(_) => self.unmatched += 1,
        }
        r
    }

    fn classify<'a>(&mut self, datagram: &'a [u8]) -> Result<(usize, &'a [u8]), Dropped> {
        let p = gtpu::Packet::new_checked(datagram).map_err(|_| Dropped::NotGpdu)?;
        if p.msg_type() != gtpu::msg_type::G_PDU {
            return Err(Dropped::NotGpdu);
        }
        let teid = p.teid();
        let &session = self.by_teid.get(&teid).ok_or(Dropped::UnknownTeid(teid))?;
        // The payload ends where the length field says; its slice of `datagram` itself
        // outlives the packet view.
        let len = p.payload().map_err(|_| Dropped::NotGpdu)?.len();
        let end = p.total_len();
        let inner = end
            .checked_sub(len)
            .and_then(|start| datagram.get(start..end))
            .ok_or(Dropped::NotGpdu)?;
        let ue_ip = self
            .sessions
            .get(session)
            .map(|s| s.ue_ip)
            .ok_or(Dropped::NoSession)?;
        let verdict = match ipv4_addrs(inner) {
            None => Err(Dropped::NotIpv4),
            Some((_, dst)) if dst != ue_ip => Err(Dropped::WrongDestination),
            Some(_) => Ok((session, inner)),
        };
        if verdict.is_err() {
            if let Some(c) = self.counters.get_mut(session) {
                c.downlink_dropped += 1;
            }
        }
        verdict
    }
}

/// Source and destination of an IPv4 packet (RFC 791), `None` for anything else.
fn ipv4_addrs(packet: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr)> {
    let h = packet.get(..IPV4_LEN)?;
    if h[0] >> 4 != 4 {
        return None;
    }
    Some((
        Ipv4Addr::new(h[12], h[13], h[14], h[15]),
        Ipv4Addr::new(h[16], h[17], h[18], h[19]),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proto::ngap::GtpTunnel;

    const UPF: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 2);
    const DN: Ipv4Addr = Ipv4Addr::new(10, 0, 6, 2);

    fn session(i: u8) -> UpSession {
        UpSession {
            ue_ip: Ipv4Addr::new(10, 0, 64, i),
            upf: GtpTunnel {
                addr: UPF,
                teid: 0x100 + u32::from(i),
            },
            gnb_teid: 0x200 + u32::from(i),
            qfi: 9,
        }
    }

    /// An IPv4 header from `src` to `dst` and `payload` octets (no checksum: the relay
    /// never looks at it).
    fn ip(src: Ipv4Addr, dst: Ipv4Addr, payload: usize) -> Vec<u8> {
        let mut p = vec![0u8; IPV4_LEN + payload];
        p[0] = 0x45;
        let len = p.len() as u16;
        p[2..4].copy_from_slice(&len.to_be_bytes());
        p[9] = 6;
        p[12..16].copy_from_slice(&src.octets());
        p[16..20].copy_from_slice(&dst.octets());
        for (i, b) in p[IPV4_LEN..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p
    }

    fn gpdu(teid: u32, inner: &[u8]) -> Vec<u8> {
        let mut gtp = Repr::g_pdu(teid, inner.len());
        gtp.extensions.push(ExtHeader::PduSessionContainer(
            PduSessionContainer::downlink(9),
        ));
        let hlen = gtp.header_len();
        let mut out = vec![0u8; hlen + inner.len()];
        gtp.emit(&mut out).unwrap();
        out[hlen..].copy_from_slice(inner);
        out
    }

    fn relay() -> Relay {
        Relay::new(vec![session(1), session(2)], 2152).unwrap()
    }

    #[test]
    fn uplink_is_a_gpdu_on_the_sessions_teid_with_its_qfi() {
        let mut r = relay();
        let pkt = ip(session(2).ue_ip, DN, 100);
        let mut out = Vec::new();
        let to = r.uplink(1, &pkt, &mut out).unwrap();
        assert_eq!(to, SocketAddrV4::new(UPF, 2152));
        let p = gtpu::Packet::new_checked(&out[..]).unwrap();
        assert_eq!(p.msg_type(), gtpu::msg_type::G_PDU);
        assert_eq!(p.teid(), 0x102);
        assert_eq!(Repr::parse(&p).unwrap().qfi(), Some(9));
        assert_eq!(p.payload().unwrap(), &pkt[..]);
        assert_eq!(
            r.counters()[1].uplink,
            Flow {
                packets: 1,
                bytes: pkt.len() as u64
            }
        );
        assert_eq!(r.counters()[0], SessionCounters::default());
    }

    #[test]
    fn uplink_of_another_source_or_no_ipv4_is_dropped_and_counted() {
        let mut r = relay();
        let mut out = Vec::new();
        let other = ip(session(2).ue_ip, DN, 10);
        assert_eq!(r.uplink(0, &other, &mut out), Err(Dropped::WrongSource));
        let mut v6 = ip(session(1).ue_ip, DN, 10);
        v6[0] = 0x60;
        assert_eq!(r.uplink(0, &v6, &mut out), Err(Dropped::NotIpv4));
        assert_eq!(r.uplink(0, &[0x45; 7], &mut out), Err(Dropped::NotIpv4));
        assert_eq!(r.uplink(5, &other, &mut out), Err(Dropped::NoSession));
        let huge = ip(session(1).ue_ip, DN, 70_000);
        assert_eq!(r.uplink(0, &huge, &mut out), Err(Dropped::TooLong));
        assert_eq!(r.counters()[0].uplink_dropped, 4);
        assert_eq!(r.counters()[0].uplink.packets, 0);
    }

    #[test]
    fn downlink_goes_to_the_session_of_its_teid() {
        let mut r = relay();
        let pkt = ip(DN, session(1).ue_ip, 1300);
        let d = gpdu(0x201, &pkt);
        assert_eq!(r.downlink(&d), Ok((0, &pkt[..])));
        assert_eq!(r.counters()[0].downlink.bytes, pkt.len() as u64);
        assert_eq!(r.counters()[1].downlink.packets, 0);
    }

    #[test]
    fn downlink_that_is_not_for_the_ue_is_dropped() {
        let mut r = relay();
        // Session 0's TEID with session 1's address.
        let d = gpdu(0x201, &ip(DN, session(2).ue_ip, 10));
        assert_eq!(r.downlink(&d), Err(Dropped::WrongDestination));
        assert_eq!(
            r.downlink(&gpdu(0x999, &ip(DN, session(1).ue_ip, 10))),
            Err(Dropped::UnknownTeid(0x999))
        );
        assert_eq!(r.downlink(&[0x30, 0xff, 0]), Err(Dropped::NotGpdu));
        // An echo request (type 1) is GTP-U but no G-PDU.
        let mut echo = gpdu(0x201, &ip(DN, session(1).ue_ip, 10));
        echo[1] = 1;
        assert_eq!(r.downlink(&echo), Err(Dropped::NotGpdu));
        assert_eq!(r.counters()[0].downlink_dropped, 1);
        assert_eq!(r.unmatched(), 3);
        assert_eq!(r.counters()[0].downlink.packets, 0);
    }

    #[test]
    fn every_truncation_of_a_gpdu_is_refused_without_panic() {
        let mut r = relay();
        let d = gpdu(0x201, &ip(DN, session(1).ue_ip, 40));
        for n in 0..d.len() {
            let _ = r.downlink(&d[..n]);
        }
        assert!(r.downlink(&d).is_ok());
    }

    #[test]
    fn two_sessions_on_one_downlink_teid_are_refused() {
        let mut s = session(2);
        s.gnb_teid = session(1).gnb_teid;
        assert!(matches!(
            Relay::new(vec![session(1), s], 2152),
            Err(UpError::DuplicateTeid(_))
        ));
    }
}
