//! The XDP fast path end to end in ran/upf/dn namespaces: G-PDUs from a gNB socket in ran
//! reach a host in dn decapsulated, its answers come back encapsulated, and the fast path's
//! own counters prove that it, not the kernel, carried them.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use upf::userspace::craft;
use upf::userspace::testbed::{
    downlink_rule, recv_within, ue_ip, uplink_rule, Host, Rig, Testbed, N3_RAN, N3_UPF, N6_DN,
};
use upf::{
    Datapath, DatapathError, DownlinkAction, DownlinkRule, Gate, UplinkAction, UplinkRule, UsageId,
};
use upf_xdp::{Counters, Reason, XdpDatapath};

const DN_PORT: u16 = 9000;
// Not 5000: Wireshark's TAPA dissector claims that port and flags short payloads as malformed.
const UE_PORT: u16 = 41000;

type Bed = Rig<XdpDatapath>;

fn bed(tag: &str) -> Option<Bed> {
    if !testkit::privilege::require("upf-xdp fast path") {
        return None;
    }
    let bed = Testbed::new(tag).unwrap();
    let dp = common::attach_xdp(&bed);
    Some(Rig::new(bed, dp, DN_PORT).unwrap())
}

fn teid(i: u32) -> u32 {
    // TEIDs encode the owning worker in their top bits (`ids::upf`); worker 1 here.
    0x0100_0000 | i
}

fn uplink(i: u32, qfi: Option<u8>) -> UplinkRule {
    uplink_rule(i, teid(i), qfi)
}

fn downlink(i: u32, qfi: Option<u8>) -> DownlinkRule {
    downlink_rule(i, 0x00a0_0000 | i, qfi)
}

fn counters(b: &Bed) -> Counters {
    b.dp.counters().unwrap()
}

#[test]
fn sessions_carry_udp_and_icmp_both_ways_on_the_fast_path() {
    let Some(b) = bed("xdpe2e") else { return };
    let mut b = b;
    let n = 4u32;
    for i in 0..n {
        let qfi = (i % 2 == 0).then_some(9);
        b.dp.install_uplink(&uplink(i, qfi)).unwrap();
        b.dp.install_downlink(&downlink(i, qfi)).unwrap();
    }
    let mut expect_ul_bytes = vec![0u64; n as usize];
    let mut expect_dl_bytes = vec![0u64; n as usize];
    for i in 0..n {
        let qfi = (i % 2 == 0).then_some(9);
        let ue = ue_ip(i);
        // UDP up, answered by the DN host down.
        let payload = format!("ul-{i}");
        let inner = craft::ipv4_udp(ue, N6_DN, UE_PORT, DN_PORT, payload.as_bytes()).unwrap();
        expect_ul_bytes[i as usize] += inner.len() as u64;
        b.send_gpdu(&craft::g_pdu(teid(i), qfi, &inner).unwrap())
            .unwrap();
        let (got, from) =
            recv_within(&b.dn, Duration::from_secs(3)).expect("uplink did not reach dn");
        assert_eq!(got, payload.as_bytes());
        assert_eq!(from, SocketAddrV4::new(ue, UE_PORT).into());
        let answer = format!("dl-{i}-answer");
        b.dn.send_to(answer.as_bytes(), SocketAddrV4::new(ue, UE_PORT))
            .unwrap();
        let (t, q, inner) = b.recv_gpdu().expect("no downlink G-PDU");
        assert_eq!(t, 0x00a0_0000 | i);
        assert_eq!(q, qfi);
        assert_eq!(craft::ipv4_addrs(&inner), Some((N6_DN, ue)));
        assert_eq!(&inner[28..], answer.as_bytes());
        expect_dl_bytes[i as usize] += inner.len() as u64;

        // ICMP echo up; the DN kernel's echo reply comes back down.
        let echo = craft::icmp_echo(ue, N6_DN, 77, 1 + i as u16, b"ping").unwrap();
        expect_ul_bytes[i as usize] += echo.len() as u64;
        b.send_gpdu(&craft::g_pdu(teid(i), qfi, &echo).unwrap())
            .unwrap();
        let (t, _, reply) = b.recv_gpdu().expect("no downlink G-PDU");
        assert_eq!(t, 0x00a0_0000 | i);
        assert_eq!(craft::ipv4_addrs(&reply), Some((N6_DN, ue)));
        assert_eq!(reply[9], 1, "ICMP");
        assert_eq!(reply[20], 0, "echo reply");
        expect_dl_bytes[i as usize] += reply.len() as u64;
    }
    let c = counters(&b);
    assert_eq!(c.get(Reason::UlForwarded), 2 * u64::from(n), "{c:?}");
    assert_eq!(c.get(Reason::DlForwarded), 2 * u64::from(n), "{c:?}");
    assert_eq!(c.passed(), 0, "the kernel path carried some: {c:?}");
    assert_eq!(c.dropped(), 0, "{c:?}");
    for i in 0..n {
        let u = b.dp.usage(UsageId(i)).unwrap();
        assert_eq!(u.ul_packets, 2);
        assert_eq!(u.dl_packets, 2);
        assert_eq!(u.ul_bytes, expect_ul_bytes[i as usize]);
        assert_eq!(u.dl_bytes, expect_dl_bytes[i as usize]);
        assert_eq!(u.dropped, 0);
    }
    // Every session ends: nothing may stay behind.
    let e = b.end_sessions((0..n).map(|i| (teid(i), i))).unwrap();
    assert_eq!((e.uplink, e.downlink, e.usage), (0, 0, 0));
    assert!(matches!(
        b.dp.remove_uplink(teid(0)),
        Err(DatapathError::NotFound { .. })
    ));
}

#[test]
fn closed_gates_and_drop_fars_drop_and_count() {
    let Some(mut b) = bed("xdpgate") else { return };
    let mut ul = uplink(1, None);
    ul.gate = Gate {
        open: false,
        mbr_bps: 0,
    };
    b.dp.install_uplink(&ul).unwrap();
    let mut dl = downlink(1, None);
    dl.gate.open = false;
    b.dp.install_downlink(&dl).unwrap();
    let inner = craft::ipv4_udp(ue_ip(1), N6_DN, UE_PORT, DN_PORT, b"blocked").unwrap();
    b.send_gpdu(&craft::g_pdu(teid(1), None, &inner).unwrap())
        .unwrap();
    b.dn.send_to(b"blocked", SocketAddrV4::new(ue_ip(1), UE_PORT))
        .unwrap();
    assert!(
        recv_within(&b.dn, Duration::from_millis(300)).is_none(),
        "uplink passed a closed gate"
    );
    assert!(
        recv_within(&b.gnb, Duration::from_millis(300)).is_none(),
        "downlink passed a closed gate"
    );
    let c = counters(&b);
    assert_eq!(c.get(Reason::DropGateClosed), 2, "{c:?}");
    assert_eq!(b.dp.usage(UsageId(1)).unwrap().dropped, 2);

    // Opening the gate (a modification replaces the rule) lets the next packet through.
    b.dp.install_uplink(&uplink(1, None)).unwrap();
    b.send_gpdu(&craft::g_pdu(teid(1), None, &inner).unwrap())
        .unwrap();
    assert!(recv_within(&b.dn, Duration::from_secs(3)).is_some());

    // A drop FAR drops with its own reason.
    let mut ul = uplink(1, None);
    ul.action = UplinkAction::Drop;
    b.dp.install_uplink(&ul).unwrap();
    b.send_gpdu(&craft::g_pdu(teid(1), None, &inner).unwrap())
        .unwrap();
    assert!(recv_within(&b.dn, Duration::from_millis(300)).is_none());
    let c = counters(&b);
    assert_eq!(c.get(Reason::DropFar), 1, "{c:?}");
    assert_eq!(c.get(Reason::UlForwarded), 1, "{c:?}");
    assert_eq!(b.dp.usage(UsageId(1)).unwrap().ul_packets, 1);
}

/// `p` (an IPv4 packet) with TTL `ttl` and its header checksum redone.
fn with_ttl(mut p: Vec<u8>, ttl: u8) -> Vec<u8> {
    p[8] = ttl;
    p[10..12].copy_from_slice(&[0, 0]);
    let c = craft::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

/// Receives one datagram with the TTL it arrived with (IP_RECVTTL).
fn recv_ttl(sock: &UdpSocket) -> Option<(Vec<u8>, u8)> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags, SockaddrIn};
    use std::io::IoSliceMut;
    use std::os::fd::AsRawFd;
    sock.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = vec![0u8; 2048];
    let mut cmsg = nix::cmsg_space!(nix::libc::c_int);
    let mut iov = [IoSliceMut::new(&mut buf)];
    let msg = recvmsg::<SockaddrIn>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        MsgFlags::empty(),
    )
    .ok()?;
    let n = msg.bytes;
    let ttl = msg.cmsgs().unwrap().find_map(|c| match c {
        ControlMessageOwned::Ipv4Ttl(t) => u8::try_from(t).ok(),
        _ => None,
    })?;
    Some((buf[..n].to_vec(), ttl))
}

#[test]
fn inner_ttl_is_decremented_both_ways_and_expiring_packets_go_up() {
    let Some(mut b) = bed("xdpttl") else { return };
    b.dp.install_uplink(&uplink(4, None)).unwrap();
    b.dp.install_downlink(&downlink(4, None)).unwrap();
    nix::sys::socket::setsockopt(&b.dn, nix::sys::socket::sockopt::Ipv4RecvTtl, &true).unwrap();
    let ue = ue_ip(4);

    // Uplink: the dn host sees one hop less; the kernel accepting it proves the checksum.
    for ttl in [64u8, 2] {
        let inner = with_ttl(
            craft::ipv4_udp(ue, N6_DN, UE_PORT, DN_PORT, b"ttl").unwrap(),
            ttl,
        );
        b.send_gpdu(&craft::g_pdu(teid(4), None, &inner).unwrap())
            .unwrap();
        let (got, seen) = recv_ttl(&b.dn).expect("uplink lost");
        assert_eq!(got, b"ttl");
        assert_eq!(seen, ttl - 1);
    }
    // Downlink: the inner packet the gNB gets has one hop less and a valid header checksum.
    b.dn.set_ttl(9).unwrap();
    b.dn.send_to(b"down", SocketAddrV4::new(ue, UE_PORT))
        .unwrap();
    let (_, _, inner) = b.recv_gpdu().expect("no downlink G-PDU");
    assert_eq!(inner[8], 8, "inner TTL");
    assert_eq!(craft::checksum(&inner[..20]), 0, "inner header checksum");

    // TTL 1 (and 0) would expire here: handed to the kernel, not forwarded.
    let before = counters(&b);
    for ttl in [1u8, 0] {
        let inner = with_ttl(
            craft::ipv4_udp(ue, N6_DN, UE_PORT, DN_PORT, b"expired").unwrap(),
            ttl,
        );
        b.send_gpdu(&craft::g_pdu(teid(4), None, &inner).unwrap())
            .unwrap();
    }
    b.dn.set_ttl(1).unwrap();
    b.dn.send_to(b"expired", SocketAddrV4::new(ue, UE_PORT))
        .unwrap();
    let d = b.read_when(
        |dp| dp.counters().unwrap().since(&before),
        |d| d.get(Reason::PassTtl) >= 3,
    );
    assert_eq!(d.get(Reason::PassTtl), 3, "{d:?}");
    assert_eq!(d.redirected(), 0, "{d:?}");
    let u = b.dp.usage(UsageId(4)).unwrap();
    assert_eq!(
        (u.ul_packets, u.dl_packets),
        (2, 1),
        "expired ones are not counted"
    );
}

/// `p` (an IPv4 packet) with its first octet (version, IHL) replaced, checksum redone.
fn with_byte0(p: &[u8], b: u8) -> Vec<u8> {
    let mut p = p.to_vec();
    p[0] = b;
    p[10..12].copy_from_slice(&[0, 0]);
    let c = craft::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

/// `p` with its Total Length replaced, checksum redone.
fn with_total_len(p: &[u8], len: u16) -> Vec<u8> {
    let mut p = p.to_vec();
    p[2..4].copy_from_slice(&len.to_be_bytes());
    p[10..12].copy_from_slice(&[0, 0]);
    let c = craft::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

/// A G-PDU header by hand, for what the codec refuses to build.
fn raw_gtpu(flags: u8, msg: u8, length: u16, teid: u32, rest: &[u8]) -> Vec<u8> {
    let mut g = vec![flags, msg];
    g.extend_from_slice(&length.to_be_bytes());
    g.extend_from_slice(&teid.to_be_bytes());
    g.extend_from_slice(rest);
    g
}

#[test]
fn malformed_g_pdus_are_dropped_and_counted_never_forwarded() {
    let Some(mut b) = bed("xdpbad") else { return };
    b.dp.install_uplink(&uplink(2, Some(5))).unwrap();
    let inner = craft::ipv4_udp(ue_ip(2), N6_DN, UE_PORT, DN_PORT, b"bad").unwrap();
    let good = craft::g_pdu(teid(2), Some(5), &inner).unwrap();
    let len = |extra: usize| u16::try_from(inner.len() + extra).unwrap();

    let cases: Vec<(&str, Vec<u8>, Reason)> = vec![
        ("6-octet header", good[..6].to_vec(), Reason::DropTruncated),
        (
            "length beyond the packet",
            good[..good.len() - 10].to_vec(),
            Reason::DropTruncated,
        ),
        (
            "unknown TEID",
            craft::g_pdu(0x0fff_ffff, None, &inner).unwrap(),
            Reason::DropUnknownTeid,
        ),
        (
            "extension of length 0",
            raw_gtpu(
                0x34,
                255,
                len(8),
                teid(2),
                &[[0, 0, 0, 0x85, 0, 0, 0, 0].as_slice(), &inner].concat(),
            ),
            Reason::DropBadExtension,
        ),
        (
            "unknown comprehension-required extension",
            raw_gtpu(
                0x34,
                255,
                len(8),
                teid(2),
                &[[0, 0, 0, 0xe1, 1, 0, 0, 0].as_slice(), &inner].concat(),
            ),
            Reason::DropBadExtension,
        ),
        (
            "downlink container on the uplink",
            raw_gtpu(
                0x34,
                255,
                len(8),
                teid(2),
                &[[0, 0, 0, 0x85, 1, 0x00, 5, 0].as_slice(), &inner].concat(),
            ),
            Reason::DropBadExtension,
        ),
        (
            "chain running past the packet",
            raw_gtpu(0x34, 255, 8, teid(2), &[0, 0, 0, 0x85, 4, 0x10, 5, 0]),
            Reason::DropBadExtension,
        ),
        (
            "wrong QFI",
            craft::g_pdu(teid(2), Some(6), &inner).unwrap(),
            Reason::DropQfiMismatch,
        ),
        (
            "spoofed UE source",
            craft::g_pdu(
                teid(2),
                Some(5),
                &craft::ipv4_udp(Ipv4Addr::new(10, 9, 9, 9), N6_DN, UE_PORT, DN_PORT, b"x")
                    .unwrap(),
            )
            .unwrap(),
            Reason::DropUeMismatch,
        ),
        (
            "GTP version 2",
            raw_gtpu(0x50, 255, len(0), teid(2), &inner),
            Reason::DropMalformed,
        ),
        // RFC 791 §3.1: IHL ≥ 5 and IHL × 4 ≤ Total Length, else no IPv4 header.
        (
            "inner IHL 3",
            craft::g_pdu(teid(2), Some(5), &with_byte0(&inner, 0x43)).unwrap(),
            Reason::DropInnerHeader,
        ),
        (
            "inner IHL 0",
            craft::g_pdu(teid(2), Some(5), &with_byte0(&inner, 0x40)).unwrap(),
            Reason::DropInnerHeader,
        ),
        (
            "inner header longer than the packet",
            craft::g_pdu(teid(2), Some(5), &with_byte0(&inner, 0x4f)).unwrap(),
            Reason::DropInnerHeader,
        ),
        (
            "inner Total Length past the G-PDU",
            craft::g_pdu(teid(2), Some(5), &with_total_len(&inner, 600)).unwrap(),
            Reason::DropTruncated,
        ),
        (
            "inner version 6",
            craft::g_pdu(teid(2), Some(5), &with_byte0(&inner, 0x65)).unwrap(),
            Reason::DropMalformed,
        ),
    ];
    for (what, g, reason) in &cases {
        let before = counters(&b);
        b.send_gpdu(g).unwrap();
        // The next well-formed packet is a barrier: once it arrived, the bad one was seen.
        b.send_gpdu(&good).unwrap();
        let (got, _) = recv_within(&b.dn, Duration::from_secs(3)).expect("barrier packet lost");
        assert_eq!(got, b"bad", "{what}: something else reached dn");
        let d = counters(&b).since(&before);
        assert_eq!(d.get(*reason), 1, "{what}: {d:?}");
        assert_eq!(d.dropped(), 1, "{what}: {d:?}");
        assert_eq!(d.get(Reason::UlForwarded), 1, "{what}: {d:?}");
    }
    assert!(recv_within(&b.dn, Duration::from_millis(300)).is_none());
    let u = b.dp.usage(UsageId(2)).unwrap();
    assert_eq!(u.ul_packets, cases.len() as u64, "only the good ones count");
}

#[test]
fn signalling_and_buffering_go_to_user_space() {
    let Some(mut b) = bed("xdppass") else { return };
    b.dp.install_uplink(&uplink(3, None)).unwrap();
    let mut dl = downlink(3, None);
    dl.action = DownlinkAction::Buffer;
    b.dp.install_downlink(&dl).unwrap();
    // End Marker, Error Indication (Echo Requests are answered here: see below).
    for g in [
        raw_gtpu(0x30, 254, 0, teid(3), &[]),
        raw_gtpu(0x30, 26, 0, 0, &[]),
    ] {
        b.send_gpdu(&g).unwrap();
    }
    b.dn.send_to(
        b"to a buffering session",
        SocketAddrV4::new(ue_ip(3), UE_PORT),
    )
    .unwrap();
    // Nothing forwards them in this bed (no user-space path runs), so wait for the counts.
    let mut c = counters(&b);
    for _ in 0..50 {
        if c.get(Reason::PassSignalling) == 2 && c.get(Reason::PassBuffer) == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        c = counters(&b);
    }
    assert_eq!(c.get(Reason::PassSignalling), 2, "{c:?}");
    assert_eq!(c.get(Reason::PassBuffer), 1, "{c:?}");
    assert_eq!(c.redirected(), 0, "{c:?}");
    assert_eq!(c.dropped(), 0, "{c:?}");
}

#[test]
fn fast_path_g_pdus_decode_cleanly_in_wireshark() {
    let Some(mut b) = bed("xdpshark") else { return };
    for i in 0..2 {
        let qfi = (i == 0).then_some(9);
        b.dp.install_uplink(&uplink(i, qfi)).unwrap();
        b.dp.install_downlink(&downlink(i, qfi)).unwrap();
    }
    let dir = tempfile_dir();
    let file = dir.join("n3.pcapng");
    let ran_ns = b.bed.ns(Host::Ran).to_owned();
    let cap =
        testkit::capture::Capture::start(Some(&ran_ns), &b.bed.n3_ran, "udp port 2152", &file)
            .unwrap();
    for i in 0..2u32 {
        let qfi = (i == 0).then_some(9);
        let inner = craft::ipv4_udp(ue_ip(i), N6_DN, UE_PORT, DN_PORT, b"shark").unwrap();
        b.send_gpdu(&craft::g_pdu(teid(i), qfi, &inner).unwrap())
            .unwrap();
        recv_within(&b.dn, Duration::from_secs(3)).expect("uplink lost");
        b.dn.send_to(b"down", SocketAddrV4::new(ue_ip(i), UE_PORT))
            .unwrap();
        b.recv_gpdu().expect("no downlink G-PDU");
    }
    let path = cap.stop().unwrap();
    let report = testkit::tshark::check(&path, &[]).unwrap();
    assert_eq!(report.total(), 4, "{}", report.summary());
    assert_eq!(report.malformed, 0, "{:?}", report.malformed_details());
    assert_eq!(
        report.expert_count(testkit::tshark::Severity::Error),
        0,
        "{}",
        report.summary()
    );
    // The downlink ones, as Wireshark reads them: TEID and, for session 0, the QFI.
    let g = testkit::tshark::g_pdus_from(&path, N3_UPF).unwrap();
    let teids: Vec<_> = g.iter().map(|p| (p.teid, p.ip_checksum_good)).collect();
    assert_eq!(
        teids,
        [(0x00a0_0000, true), (0x00a0_0001, true)],
        "TEIDs, good outer checksums"
    );
    assert_eq!(g[0].qfi, Some(9), "QFI 9 in the container");
    let _ = std::fs::remove_dir_all(dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "upf-xdp-shark-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// TS 29.281 §7.2.1: an Echo Request "shall" be answered. The fast path answers it itself
/// (no user-space path runs in this bed): type 2, the request's sequence number, TEID 0, the
/// Recovery IE (§8.2), from the N3 address and port 2152 to the request's source port,
/// whatever the request's length.
#[test]
fn echo_requests_are_answered_on_the_fast_path() {
    let Some(b) = bed("xdpecho") else { return };
    let before = counters(&b);
    // (request, its sequence number): S=1 as §7.2.1 asks; with a Private Extension IE
    // (type 255, §8.6) making it longer than the response; and one without S.
    let cases: [(Vec<u8>, [u8; 2]); 3] = [
        (raw_gtpu(0x32, 1, 4, 0, &[0x12, 0x34, 0, 0]), [0x12, 0x34]),
        (
            raw_gtpu(
                0x32,
                1,
                4 + 7,
                0,
                &[0xbe, 0xef, 0, 0, 255, 0, 4, 0, 1, 9, 9],
            ),
            [0xbe, 0xef],
        ),
        (raw_gtpu(0x30, 1, 0, 0, &[]), [0, 0]),
    ];
    for (req, seq) in &cases {
        b.send_gpdu(req).unwrap();
        let (rsp, from) = recv_within(&b.gnb, Duration::from_secs(3)).expect("no Echo Response");
        assert_eq!(from, SocketAddrV4::new(N3_UPF, 2152).into());
        assert_eq!(
            rsp,
            [0x32, 2, 0, 6, 0, 0, 0, 0, seq[0], seq[1], 0, 0, 14, 0],
            "{req:02x?}"
        );
    }
    // From another source port too: the answer goes back there.
    let other = b
        .bed
        .udp(Host::Ran, SocketAddrV4::new(N3_RAN, 40152))
        .unwrap();
    other
        .send_to(&cases[0].0, SocketAddrV4::new(N3_UPF, 2152))
        .unwrap();
    let (rsp, _) = recv_within(&other, Duration::from_secs(3)).expect("no Echo Response");
    assert_eq!(rsp[1], 2);
    let d = counters(&b).since(&before);
    assert_eq!(d.get(Reason::EchoAnswered), 4, "{d:?}");
    assert_eq!(d.passed(), 0, "{d:?}");
    assert_eq!(d.dropped(), 0, "{d:?}");
}

/// An outer IPv4 fragment of a G-PDU is handed to the kernel, which reassembles it for the
/// user-space path behind the fast path: a G-PDU larger than the N3 link's MTU, fragmented
/// by the gNB's own stack, reaches the data network whole.
#[test]
fn fragmented_g_pdus_reach_the_dn_through_the_path_behind() {
    use upf::userspace::testbed::{UE_POOL, UE_POOL_LEN};
    use upf::userspace::tiered::Tiered;
    use upf::userspace::{TunDatapath, TunOptions, TunReason};

    let Some(b) = bed("xdpfrag") else { return };
    let Rig { dp, gnb, dn, bed } = b;
    let tun = TunDatapath::start(&TunOptions {
        netns: Some(bed.ns(Host::Upf).to_owned()),
        n3_addr: N3_UPF,
        tun_name: "upftun0".to_owned(),
        ue_pool: (UE_POOL, UE_POOL_LEN),
        n3_recv_buffer: upf::userspace::DEFAULT_N3_RECV_BUFFER,
    })
    .unwrap();
    let mut t = Tiered::new(dp, tun, "xdp+tun");
    t.install_uplink(&uplink(6, None)).unwrap();
    // 2400 octets of payload: the G-PDU is fragmented on the 1500-octet N3 link, and the
    // inner packet (DF clear) once more by the UPF's kernel on N6.
    let payload: Vec<u8> = (0..2400u32).map(|i| (i % 251) as u8).collect();
    let mut inner = craft::ipv4_udp(ue_ip(6), N6_DN, UE_PORT, DN_PORT, &payload).unwrap();
    inner[6] = 0; // DF off
    let inner = with_byte0(&inner, 0x45);
    let before = t.fast.counters().unwrap();
    gnb.send_to(
        &craft::g_pdu(teid(6), None, &inner).unwrap(),
        SocketAddrV4::new(N3_UPF, 2152),
    )
    .unwrap();
    dn.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = vec![0u8; 4096];
    let (n, from) = dn
        .recv_from(&mut buf)
        .expect("the fragmented G-PDU was lost");
    assert_eq!(&buf[..n], &payload[..]);
    assert_eq!(from, SocketAddrV4::new(ue_ip(6), UE_PORT).into());
    let d = t.fast.counters().unwrap().since(&before);
    assert!(d.get(Reason::PassFragment) >= 2, "{d:?}");
    assert_eq!(d.dropped(), 0, "{d:?}");
    // The DN can read the packet before the TUN thread has counted it: wait, bounded.
    let mut forwarded = t.slow.counters().get(TunReason::UlForwarded);
    for _ in 0..100 {
        if forwarded >= 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        forwarded = t.slow.counters().get(TunReason::UlForwarded);
    }
    assert_eq!(forwarded, 1);
    t.remove_uplink(teid(6)).unwrap();
    t.remove_usage(UsageId(6)).unwrap();
}
