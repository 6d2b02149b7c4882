//! Building the packets a gNB and a data network host send (inner IPv4 with UDP or ICMP,
//! G-PDUs around them), for the datapath tests and the bench generator.

use std::net::Ipv4Addr;

use pfcp::gtpu::{ExtHeader, PduSessionContainer, Repr};

/// The Internet checksum (RFC 1071) of `data`, folded, not yet complemented, added to `sum`.
fn sum16(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in chunks.by_ref() {
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([c[0], c[1]])));
    }
    if let [last] = chunks.remainder() {
        sum = sum.wrapping_add(u32::from(*last) << 8);
    }
    sum
}

/// RFC 1071 checksum of `data` (complemented, ready to write).
pub fn checksum(data: &[u8]) -> u16 {
    fold(sum16(0, data))
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload_len: usize) -> Option<[u8; 20]> {
    let total = u16::try_from(payload_len.checked_add(20)?).ok()?;
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h[6] = 0x40; // DF
    h[8] = 64;
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    Some(h)
}

/// An IPv4/UDP packet with a correct UDP checksum; `None` if it would exceed 65535 octets.
pub fn ipv4_udp(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Option<Vec<u8>> {
    let udp_len = u16::try_from(payload.len().checked_add(8)?).ok()?;
    let ip = ipv4(src, dst, 17, usize::from(udp_len))?;
    let mut udp = Vec::with_capacity(usize::from(udp_len));
    udp.extend_from_slice(&sport.to_be_bytes());
    udp.extend_from_slice(&dport.to_be_bytes());
    udp.extend_from_slice(&udp_len.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    // RFC 768 pseudo-header: addresses, protocol, UDP length.
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&udp_len.to_be_bytes());
    let mut c = fold(sum16(sum16(0, &pseudo), &udp));
    if c == 0 {
        c = 0xffff; // 0 means "no checksum" in UDP
    }
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    let mut out = ip.to_vec();
    out.extend_from_slice(&udp);
    Some(out)
}

/// An IPv4 ICMP echo request (RFC 792).
pub fn icmp_echo(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    id: u16,
    seq: u16,
    payload: &[u8],
) -> Option<Vec<u8>> {
    let mut icmp = vec![8, 0, 0, 0];
    icmp.extend_from_slice(&id.to_be_bytes());
    icmp.extend_from_slice(&seq.to_be_bytes());
    icmp.extend_from_slice(payload);
    let c = checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut out = ipv4(src, dst, 1, icmp.len())?.to_vec();
    out.extend_from_slice(&icmp);
    Some(out)
}

/// A G-PDU (TS 29.281 §5.1) carrying `inner` to `teid`, with an uplink PDU Session
/// Container (TS 38.415 §5.5.2.2) when `qfi` is set.
pub fn g_pdu(teid: u32, qfi: Option<u8>, inner: &[u8]) -> Option<Vec<u8>> {
    let mut repr = Repr::g_pdu(teid, inner.len());
    if let Some(q) = qfi {
        repr.extensions
            .push(ExtHeader::PduSessionContainer(PduSessionContainer::uplink(
                q,
            )));
    }
    let hlen = repr.header_len();
    let mut out = vec![0u8; hlen.checked_add(inner.len())?];
    repr.emit(&mut out).ok()?;
    out.get_mut(hlen..)?.copy_from_slice(inner);
    Some(out)
}

/// The inner IPv4 packet's source and destination addresses, if `p` starts with one.
pub fn ipv4_addrs(p: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr)> {
    let h = p.get(..20)?;
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

    #[test]
    fn checksums_verify_to_zero() {
        let p = ipv4_udp(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            1,
            2,
            b"abc",
        )
        .unwrap();
        assert_eq!(checksum(&p[..20]), 0);
        let e = icmp_echo(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            7,
            1,
            b"x",
        )
        .unwrap();
        assert_eq!(checksum(&e[20..]), 0);
        assert_eq!(e.len(), 20 + 8 + 1);
    }

    #[test]
    fn g_pdu_round_trips_through_the_codec() {
        let inner = ipv4_udp(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            1,
            2,
            b"hi",
        )
        .unwrap();
        let g = g_pdu(0x0100_0001, Some(9), &inner).unwrap();
        let pkt = pfcp::gtpu::Packet::new_checked(&g[..]).unwrap();
        let repr = Repr::parse(&pkt).unwrap();
        assert_eq!(repr.teid, 0x0100_0001);
        assert_eq!(repr.qfi(), Some(9));
        assert_eq!(pkt.payload().unwrap(), &inner[..]);
        assert_eq!(
            ipv4_addrs(&inner),
            Some((Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)))
        );
        assert_eq!(ipv4_addrs(&[0x60; 40]), None);
    }
}
