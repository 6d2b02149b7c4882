//! The AF_XDP user-space path end to end in ran/upf/dn namespaces. Every packet is checked
//! byte for byte where it lands, and the path's own counters (AF_XDP sockets, the XDP
//! redirect program, the per-reason counters) prove that it, and nothing else, carried it.
#![allow(clippy::unwrap_used)]

use std::net::{SocketAddrV4, UdpSocket};
use std::time::Duration;

use pfcp::gtpu::{Packet, Repr};
use upf::userspace::craft;
use upf::userspace::testbed::{
    downlink_rule, recv_within, ue_ip, uplink_rule, Host, Rig, Testbed, N3_UPF, N6_DN, UE_POOL,
    UE_POOL_LEN,
};
use upf::userspace::TunReason;
use upf::{Datapath, UsageId};
use upf_afxdp::{AfXdpDatapath, AfXdpOptions};

const DN_PORT: u16 = 9000;
const UE_PORT: u16 = 5000;
/// Packets in flight before the sender waits for them (keeps the receivers' socket
/// buffers from overflowing).
const WINDOW: u32 = 50;

type Bed = Rig<AfXdpDatapath>;

fn bed(tag: &str) -> Option<Bed> {
    if !testkit::privilege::require("upf AF_XDP path") {
        return None;
    }
    let bed = Testbed::new(tag).unwrap();
    let dp = AfXdpDatapath::start(&AfXdpOptions {
        netns: Some(bed.ns(Host::Upf).to_owned()),
        n3_iface: bed.n3_upf.clone(),
        n6_iface: bed.n6_upf.clone(),
        n3_addr: N3_UPF,
        ue_pool: (UE_POOL, UE_POOL_LEN),
        n6_gateway: None,
        frames: 1024,
    })
    .unwrap();
    Some(Rig::new(bed, dp, DN_PORT).unwrap())
}

fn teid(i: u32) -> u32 {
    0x0300_0000 | i
}

fn gnb_teid(i: u32) -> u32 {
    0x00c0_0000 | i
}

fn recv(sock: &UdpSocket) -> Option<(Vec<u8>, std::net::SocketAddr)> {
    recv_within(sock, Duration::from_secs(3))
}

/// The XDP program on `iface` in the UPF namespace is the one with `id` (not the fast
/// path's `upf_n3`/`upf_n6`).
fn assert_attached(b: &Bed, iface: &str, id: u32, name: &str) {
    let out = b
        .bed
        .exec(Host::Upf, "ip")
        .args(["-d", "link", "show", "dev", iface])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("prog/xdp id {id} name {name} ")),
        "{iface}: {text}"
    );
}

#[test]
fn af_xdp_path_carries_thousands_of_packets_both_ways() {
    let Some(mut b) = bed("xske2e") else { return };
    let sessions = 4u32;
    let per_session = 500u32;
    let total = u64::from(sessions * per_session);
    for i in 0..sessions {
        let qfi = i.is_multiple_of(2).then_some(9);
        b.dp.install_uplink(&uplink_rule(i, teid(i), qfi)).unwrap();
        b.dp.install_downlink(&downlink_rule(i, gnb_teid(i), qfi))
            .unwrap();
    }
    let [n3_id, n6_id] = b.dp.prog_ids();
    assert_attached(&b, &b.bed.n3_upf, n3_id, "upf_xsk_n3");
    assert_attached(&b, &b.bed.n6_upf, n6_id, "upf_xsk_n6");

    // Uplink: G-PDUs from the gNB arrive at the DN host decapsulated, payload intact.
    let mut ul_bytes = vec![0u64; sessions as usize];
    let mut sent = 0u32;
    while sent < sessions * per_session {
        let burst = WINDOW.min(sessions * per_session - sent);
        for k in sent..sent + burst {
            let i = k % sessions;
            let qfi = i.is_multiple_of(2).then_some(9);
            let payload = format!("ul-{i}-{k}");
            let inner =
                craft::ipv4_udp(ue_ip(i), N6_DN, UE_PORT, DN_PORT, payload.as_bytes()).unwrap();
            ul_bytes[i as usize] += inner.len() as u64;
            let g = craft::g_pdu(teid(i), qfi, &inner).unwrap();
            b.send_gpdu(&g).unwrap();
        }
        for k in sent..sent + burst {
            let i = k % sessions;
            let (got, from) = recv(&b.dn).unwrap_or_else(|| panic!("uplink {k} lost"));
            assert_eq!(got, format!("ul-{i}-{k}").as_bytes());
            assert_eq!(from, SocketAddrV4::new(ue_ip(i), UE_PORT).into());
        }
        sent += burst;
    }

    // Downlink: packets from the DN host reach the gNB as G-PDUs to its TEID.
    let mut sent = 0u32;
    while sent < sessions * per_session {
        let burst = WINDOW.min(sessions * per_session - sent);
        for k in sent..sent + burst {
            let i = k % sessions;
            b.dn.send_to(
                format!("dl-{i}-{k}").as_bytes(),
                SocketAddrV4::new(ue_ip(i), UE_PORT),
            )
            .unwrap();
        }
        for k in sent..sent + burst {
            let i = k % sessions;
            let (g, from) = recv(&b.gnb).unwrap_or_else(|| panic!("downlink {k} lost"));
            assert_eq!(from, SocketAddrV4::new(N3_UPF, 2152).into());
            let p = Packet::new_checked(&g[..]).unwrap();
            let r = Repr::parse(&p).unwrap();
            assert_eq!(
                (r.teid, r.qfi()),
                (gnb_teid(i), i.is_multiple_of(2).then_some(9))
            );
            let inner = p.payload().unwrap();
            assert_eq!(craft::ipv4_addrs(inner), Some((N6_DN, ue_ip(i))));
            assert_eq!(inner[8], 63, "the UPF routed it: TTL 64 - 1");
            assert_eq!(craft::checksum(&inner[..20]), 0);
            assert_eq!(&inner[28..], format!("dl-{i}-{k}").as_bytes());
        }
        sent += burst;
    }

    let c = b.read_when(AfXdpDatapath::counters, |c| {
        c.get(TunReason::DlForwarded) == total
    });
    assert_eq!(c.get(TunReason::UlForwarded), total, "{c:?}");
    assert_eq!(c.get(TunReason::DlForwarded), total, "{c:?}");
    assert_eq!(c.dropped(), 0, "{c:?}");
    // Every packet went through the AF_XDP sockets, redirected by our program.
    let s = b.dp.stats().unwrap();
    assert_eq!((s.n3_rx, s.n6_tx), (total, total), "{s:?}");
    assert_eq!((s.n6_rx, s.n3_tx), (total, total), "{s:?}");
    assert_eq!(s.bpf_to_xsk, 2 * total, "{s:?}");
    assert_eq!(s.n3.rx_dropped + s.n6.rx_dropped, 0, "{s:?}");
    for i in 0..sessions {
        let u = b.dp.usage(UsageId(i)).unwrap();
        let n = u64::from(per_session);
        assert_eq!((u.ul_packets, u.dl_packets, u.dropped), (n, n, 0));
        assert_eq!(u.ul_bytes, ul_bytes[i as usize]);
    }
    assert!(b.dp.cpu_ns() > 0);
    let e = b.end_sessions((0..sessions).map(|i| (teid(i), i))).unwrap();
    assert_eq!((e.uplink, e.downlink, e.usage), (0, 0, 0));
}

#[test]
fn bad_g_pdus_are_dropped_and_counted_and_echo_is_answered() {
    let Some(mut b) = bed("xskbad") else { return };
    b.dp.install_uplink(&uplink_rule(1, teid(1), None)).unwrap();
    let inner = craft::ipv4_udp(ue_ip(1), N6_DN, UE_PORT, DN_PORT, b"bad").unwrap();
    let to_upf = SocketAddrV4::new(N3_UPF, 2152);
    // Unknown TEID.
    let g = craft::g_pdu(teid(2), None, &inner).unwrap();
    b.gnb.send_to(&g, to_upf).unwrap();
    // Shorter than the GTP-U header.
    b.gnb.send_to(&[0x30, 255, 0, 4, 0], to_upf).unwrap();
    // Header length beyond the datagram.
    let good = craft::g_pdu(teid(1), None, &inner).unwrap();
    b.gnb.send_to(&good[..good.len() - 5], to_upf).unwrap();
    // An inner IPv4 header of IHL 3 (RFC 791 §3.1: at least 5).
    let mut short_ihl = inner.clone();
    short_ihl[0] = 0x43;
    let g = craft::g_pdu(teid(1), None, &short_ihl).unwrap();
    b.gnb.send_to(&g, to_upf).unwrap();
    // A packet from the DN to a UE address without a rule.
    b.dn.send_to(b"nobody", SocketAddrV4::new(ue_ip(7), UE_PORT))
        .unwrap();
    // Echo Request (TS 29.281 §7.2.1), sequence number 0x1234.
    let echo = [0x32, 1, 0, 4, 0, 0, 0, 0, 0x12, 0x34, 0, 0];
    b.gnb.send_to(&echo, to_upf).unwrap();
    let (rsp, from) = recv(&b.gnb).expect("no echo response");
    assert_eq!(from, to_upf.into());
    assert_eq!((rsp[1], rsp[8], rsp[9]), (2, 0x12, 0x34), "{rsp:?}");
    // Then the good one, which must be the only thing the DN host sees.
    b.gnb.send_to(&good, to_upf).unwrap();
    let (got, _) = recv(&b.dn).expect("good G-PDU lost");
    assert_eq!(got, b"bad");

    let c = b.read_when(AfXdpDatapath::counters, |c| {
        c.get(TunReason::UlForwarded) == 1
    });
    assert_eq!(c.get(TunReason::DropUnknownTeid), 1, "{c:?}");
    assert_eq!(c.get(TunReason::DropTruncated), 2, "{c:?}");
    assert_eq!(c.get(TunReason::DropNoRule), 1, "{c:?}");
    assert_eq!(c.get(TunReason::EchoAnswered), 1, "{c:?}");
    assert_eq!(c.get(TunReason::DropInnerHeader), 1, "{c:?}");
    assert_eq!(c.get(TunReason::UlForwarded), 1, "{c:?}");
    assert_eq!(c.dropped(), 5, "{c:?}");
    let s = b.dp.stats().unwrap();
    assert_eq!((s.n3_rx, s.n6_rx, s.n3_tx, s.n6_tx), (6, 1, 1, 1), "{s:?}");
    b.dp.remove_uplink(teid(1)).unwrap();
    b.dp.remove_usage(UsageId(1)).unwrap();
    assert_eq!(b.dp.entries().unwrap(), upf::Entries::default());
}

#[test]
fn af_xdp_g_pdus_decode_cleanly_in_wireshark() {
    let Some(mut b) = bed("xskshark") else { return };
    for i in 0..2 {
        let qfi = (i == 0).then_some(9);
        b.dp.install_uplink(&uplink_rule(i, teid(i), qfi)).unwrap();
        b.dp.install_downlink(&downlink_rule(i, gnb_teid(i), qfi))
            .unwrap();
    }
    let file = std::env::temp_dir().join(format!(
        "upf-afxdp-{}-{}.pcapng",
        std::process::id(),
        b.bed.n3_ran
    ));
    let cap = testkit::capture::Capture::start(
        Some(b.bed.ns(Host::Ran)),
        &b.bed.n3_ran,
        "udp port 2152",
        &file,
    )
    .unwrap();
    for i in 0..2u32 {
        let qfi = (i == 0).then_some(9);
        let inner = craft::ipv4_udp(ue_ip(i), N6_DN, UE_PORT, DN_PORT, b"shark").unwrap();
        let g = craft::g_pdu(teid(i), qfi, &inner).unwrap();
        b.send_gpdu(&g).unwrap();
        recv(&b.dn).expect("uplink lost");
        // Not "down": Wireshark's TAPA heuristic claims that 4-octet payload and reports
        // it malformed.
        b.dn.send_to(b"shark", SocketAddrV4::new(ue_ip(i), UE_PORT))
            .unwrap();
        recv(&b.gnb).expect("downlink lost");
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
    // The downlink G-PDUs the AF_XDP path built, as Wireshark reads them.
    let g = testkit::tshark::g_pdus_from(&path, N3_UPF).unwrap();
    let _ = std::fs::remove_file(&path);
    let teids: Vec<_> = g.iter().map(|p| (p.teid, p.ip_checksum_good)).collect();
    assert_eq!(
        teids,
        [(gnb_teid(0), true), (gnb_teid(1), true)],
        "TEIDs, good outer checksums"
    );
    assert_eq!(g[0].qfi, Some(9), "QFI 9 in the container");
}
