//! Ethernet frames in and out of the AF_XDP path, sans-IO: reading the outer
//! Ethernet/IPv4/UDP of an N3 frame, and writing the frames that leave (the inner packet
//! with a new Ethernet header, or a G-PDU around it). The GTP-U and rule logic itself is
//! `upf::userspace::rules`.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use upf::userspace::craft::checksum;
use upf::userspace::rules::gtpu_header;
use upf::userspace::{TunReason, GTPU_PORT};

/// Ethernet header length.
pub(crate) const ETH_LEN: usize = 14;
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];

/// A MAC address.
pub(crate) type Mac = [u8; 6];

/// The outer headers of a UDP datagram in an Ethernet frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Udp<'a> {
    pub(crate) src_mac: Mac,
    pub(crate) src_ip: Ipv4Addr,
    pub(crate) src_port: u16,
    pub(crate) payload: &'a [u8],
}

/// The IPv4 packet in an Ethernet frame (not yet cut to its total length).
pub(crate) fn ipv4_of(frame: &[u8]) -> Result<&[u8], TunReason> {
    match frame.get(12..14) {
        Some(t) if t == ETHERTYPE_IPV4 => Ok(&frame[ETH_LEN..]),
        Some(_) => Err(TunReason::DropMalformed),
        None => Err(TunReason::DropTruncated),
    }
}

/// Reads the Ethernet/IPv4/UDP headers of a frame the N3 program redirected (RFC 791,
/// RFC 768); the payload is cut to the UDP length.
pub(crate) fn udp_of(frame: &[u8]) -> Result<Udp<'_>, TunReason> {
    let ip = ipv4_of(frame)?;
    let h = ip.get(..20).ok_or(TunReason::DropTruncated)?;
    if h[0] >> 4 != 4 || h[9] != 17 {
        return Err(TunReason::DropMalformed);
    }
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if ihl < 20 || total < ihl {
        return Err(TunReason::DropMalformed);
    }
    let ip = ip.get(..total).ok_or(TunReason::DropTruncated)?;
    let udp = ip.get(ihl..).ok_or(TunReason::DropTruncated)?;
    let uh = udp.get(..8).ok_or(TunReason::DropTruncated)?;
    let ulen = usize::from(u16::from_be_bytes([uh[4], uh[5]]));
    if ulen < 8 {
        return Err(TunReason::DropMalformed);
    }
    let payload = udp.get(8..ulen).ok_or(TunReason::DropTruncated)?;
    let mut src_mac = [0u8; 6];
    src_mac.copy_from_slice(&frame[6..12]);
    Ok(Udp {
        src_mac,
        src_ip: Ipv4Addr::new(h[12], h[13], h[14], h[15]),
        src_port: u16::from_be_bytes([uh[0], uh[1]]),
        payload,
    })
}

fn eth(buf: &mut [u8], dst: Mac, src: Mac) {
    buf[0..6].copy_from_slice(&dst);
    buf[6..12].copy_from_slice(&src);
    buf[12..14].copy_from_slice(&ETHERTYPE_IPV4);
}

/// Decrements the TTL of the IPv4 header at the start of `ip` and patches its checksum
/// incrementally (RFC 1624 eqn. 3: the TTL is the high octet of its 16-bit word).
pub(crate) fn decrement_ttl(ip: &mut [u8]) {
    if ip.len() < 20 {
        return;
    }
    ip[8] = ip[8].wrapping_sub(1);
    let sum = u32::from(u16::from_be_bytes([ip[10], ip[11]])) + 0x0100;
    let folded = (sum & 0xffff) + (sum >> 16);
    ip[10..12].copy_from_slice(&(folded as u16).to_be_bytes());
}

/// Writes `inner` (an IPv4 packet) with an Ethernet header into `buf`, TTL decremented as a
/// router does (RFC 1812 §5.3.1); the frame's length, `None` if it does not fit.
pub(crate) fn write_plain(buf: &mut [u8], dst: Mac, src: Mac, inner: &[u8]) -> Option<usize> {
    let end = ETH_LEN.checked_add(inner.len())?;
    let out = buf.get_mut(..end)?;
    eth(out, dst, src);
    out[ETH_LEN..].copy_from_slice(inner);
    decrement_ttl(&mut out[ETH_LEN..]);
    Some(end)
}

/// Where a G-PDU goes: the outer addresses (UDP port 2152 both ends, TS 29.281 §4.4.2).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tunnel {
    pub(crate) dst_mac: Mac,
    pub(crate) src_mac: Mac,
    pub(crate) src_ip: Ipv4Addr,
    pub(crate) dst_ip: Ipv4Addr,
    pub(crate) teid: u32,
    pub(crate) qfi: Option<u8>,
}

/// Writes a G-PDU carrying `inner` (TTL decremented) in Ethernet/IPv4/UDP into `buf`
/// (Outer Header Creation, TS 29.244 §5.2.2); the frame's length, `None` if it does not
/// fit.
pub(crate) fn write_gtpu(buf: &mut [u8], t: &Tunnel, inner: &[u8]) -> Option<usize> {
    let (gtp, glen) = gtpu_header(t.teid, t.qfi, inner.len());
    let udp_len = 8usize.checked_add(glen)?.checked_add(inner.len())?;
    let ip_len = 20usize.checked_add(udp_len)?;
    let end = ETH_LEN.checked_add(ip_len)?;
    let ip_total = u16::try_from(ip_len).ok()?;
    let out = buf.get_mut(..end)?;
    eth(out, t.dst_mac, t.src_mac);
    let ip = &mut out[ETH_LEN..];
    ip[..20].copy_from_slice(&[
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ]);
    ip[2..4].copy_from_slice(&ip_total.to_be_bytes());
    ip[12..16].copy_from_slice(&t.src_ip.octets());
    ip[16..20].copy_from_slice(&t.dst_ip.octets());
    let c = checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let udp = &mut ip[20..];
    udp[0..2].copy_from_slice(&GTPU_PORT.to_be_bytes());
    udp[2..4].copy_from_slice(&GTPU_PORT.to_be_bytes());
    udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    // RFC 768: zero means no checksum, allowed over IPv4 (TS 29.281 §4.4.2.0).
    udp[6..8].copy_from_slice(&[0, 0]);
    udp[8..8 + glen].copy_from_slice(&gtp[..glen]);
    let body = &mut udp[8 + glen..];
    body.copy_from_slice(inner);
    decrement_ttl(body);
    Some(end)
}

/// Writes `ip` (a whole IPv4 packet, e.g. an Echo Response built by `craft`) with an
/// Ethernet header into `buf`, unchanged.
pub(crate) fn write_raw(buf: &mut [u8], dst: Mac, src: Mac, ip: &[u8]) -> Option<usize> {
    let end = ETH_LEN.checked_add(ip.len())?;
    let out = buf.get_mut(..end)?;
    eth(out, dst, src);
    out[ETH_LEN..].copy_from_slice(ip);
    Some(end)
}

/// Complete IPv4 neighbours of `dev` in the text of `/proc/net/arp` (columns: IP address,
/// HW type, Flags, HW address, Mask, Device; flag 0x2 = ATF_COM, resolved).
pub(crate) fn parse_arp(text: &str, dev: &str) -> HashMap<Ipv4Addr, Mac> {
    let mut out = HashMap::new();
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let [ip, _hw, flags, mac, _mask, d] = cols[..] else {
            continue;
        };
        let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16).unwrap_or(0);
        if d != dev || flags & 0x2 == 0 {
            continue;
        }
        let (Ok(ip), Some(mac)) = (ip.parse::<Ipv4Addr>(), parse_mac(mac)) else {
            continue;
        };
        out.insert(ip, mac);
    }
    out
}

/// `aa:bb:cc:dd:ee:ff`.
pub(crate) fn parse_mac(s: &str) -> Option<Mac> {
    let mut m = [0u8; 6];
    let mut parts = s.split(':');
    for b in m.iter_mut() {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(m)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pfcp::gtpu::{Packet, Repr};
    use upf::userspace::craft;

    const A: Mac = [2, 0, 0, 0, 0, 1];
    const B: Mac = [2, 0, 0, 0, 0, 2];

    #[test]
    fn gtpu_frame_reads_back() {
        let inner = craft::ipv4_udp(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 9, 0, 1),
            5,
            6,
            b"payload",
        )
        .unwrap();
        let t = Tunnel {
            dst_mac: A,
            src_mac: B,
            src_ip: Ipv4Addr::new(192, 0, 2, 1),
            dst_ip: Ipv4Addr::new(192, 0, 2, 2),
            teid: 0x1234,
            qfi: Some(5),
        };
        let mut buf = [0u8; 2048];
        let n = write_gtpu(&mut buf, &t, &inner).unwrap();
        let u = udp_of(&buf[..n]).unwrap();
        assert_eq!(u.src_mac, B);
        assert_eq!(u.src_ip, Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(u.src_port, GTPU_PORT);
        assert_eq!(checksum(&buf[ETH_LEN..ETH_LEN + 20]), 0);
        let p = Packet::new_checked(u.payload).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!((r.teid, r.qfi()), (0x1234, Some(5)));
        let got = p.payload().unwrap();
        assert_eq!(got[8], inner[8] - 1, "TTL");
        assert_eq!(
            checksum(&got[..20]),
            0,
            "inner checksum after the TTL change"
        );
        assert_eq!(got[20..], inner[20..]);
        assert!(write_gtpu(&mut buf[..60], &t, &inner).is_none());
    }

    #[test]
    fn plain_frame_decrements_ttl() {
        let inner = craft::icmp_echo(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            1,
            1,
            b"x",
        )
        .unwrap();
        let mut buf = [0u8; 128];
        let n = write_plain(&mut buf, A, B, &inner).unwrap();
        assert_eq!(n, ETH_LEN + inner.len());
        assert_eq!(&buf[0..6], &A);
        assert_eq!(buf[ETH_LEN + 8], 63);
        assert_eq!(checksum(&buf[ETH_LEN..ETH_LEN + 20]), 0);
    }

    #[test]
    fn udp_of_is_total() {
        assert_eq!(udp_of(&[]), Err(TunReason::DropTruncated));
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12] = 0x86;
        f[13] = 0xdd;
        assert_eq!(udp_of(&f), Err(TunReason::DropMalformed));
        f[12] = 8;
        f[13] = 0;
        f[14] = 0x45;
        f[14 + 3] = 28;
        f[14 + 9] = 17;
        f[34 + 5] = 200; // UDP length beyond the packet
        assert_eq!(udp_of(&f), Err(TunReason::DropTruncated));
        f[34 + 5] = 8;
        assert_eq!(udp_of(&f).map(|u| u.payload.len()), Ok(0));
        for cut in 0..f.len() {
            let _ = udp_of(&f[..cut]);
        }
    }

    #[test]
    fn arp_table_parses() {
        let t = "IP address       HW type     Flags       HW address            Mask     Device\n\
                 10.203.3.2       0x1         0x6         aa:bb:cc:00:11:22     *        n3\n\
                 10.203.3.3       0x1         0x0         00:00:00:00:00:00     *        n3\n\
                 10.203.6.2       0x1         0x2         aa:bb:cc:00:11:33     *        n6\n";
        let m = parse_arp(t, "n3");
        assert_eq!(m.len(), 1);
        assert_eq!(
            m.get(&Ipv4Addr::new(10, 203, 3, 2)),
            Some(&[0xaa, 0xbb, 0xcc, 0, 0x11, 0x22])
        );
        assert_eq!(parse_mac("1:2:3:4:5"), None);
        assert_eq!(parse_mac("1:2:3:4:5:6:7"), None);
    }
}
