//! The sockets/TUN user plane end to end in ran/upf/dn namespaces; its own counters prove
//! that it carried the traffic.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

use pfcp::gtpu::Packet;
use upf::userspace::craft;
use upf::userspace::testbed::{
    downlink_rule, recv_within, ue_ip, uplink_rule, Host, Rig, Testbed, N3_UPF, N6_DN, UE_POOL,
    UE_POOL_LEN,
};
use upf::userspace::{TunDatapath, TunOptions, TunReason};
use upf::{Datapath, DownlinkAction, DownlinkRule, UplinkRule, UsageId};

const DN_PORT: u16 = 9000;
const UE_PORT: u16 = 5000;

type Bed = Rig<TunDatapath>;

fn bed(tag: &str) -> Option<Bed> {
    if !testkit::privilege::require("upf sockets/TUN path") {
        return None;
    }
    let bed = Testbed::new(tag).unwrap();
    let dp = TunDatapath::start(&TunOptions {
        netns: Some(bed.ns(Host::Upf).to_owned()),
        n3_addr: N3_UPF,
        tun_name: "upftun0".to_owned(),
        ue_pool: (UE_POOL, UE_POOL_LEN),
        n3_recv_buffer: upf::userspace::DEFAULT_N3_RECV_BUFFER,
    })
    .unwrap();
    Some(Rig::new(bed, dp, DN_PORT).unwrap())
}

fn teid(i: u32) -> u32 {
    0x0200_0000 | i
}

fn uplink(i: u32, qfi: Option<u8>) -> UplinkRule {
    uplink_rule(i, teid(i), qfi)
}

fn downlink(i: u32, qfi: Option<u8>) -> DownlinkRule {
    downlink_rule(i, 0x00b0_0000 | i, qfi)
}

#[test]
fn sessions_carry_udp_and_icmp_both_ways_through_the_tun_device() {
    let Some(mut b) = bed("tune2e") else { return };
    let n = 3u32;
    for i in 0..n {
        let qfi = (i % 2 == 0).then_some(9);
        b.dp.install_uplink(&uplink(i, qfi)).unwrap();
        b.dp.install_downlink(&downlink(i, qfi)).unwrap();
    }
    let mut ul_bytes = vec![0u64; n as usize];
    for i in 0..n {
        let qfi = (i % 2 == 0).then_some(9);
        let ue = ue_ip(i);
        let inner =
            craft::ipv4_udp(ue, N6_DN, UE_PORT, DN_PORT, format!("ul-{i}").as_bytes()).unwrap();
        ul_bytes[i as usize] += inner.len() as u64;
        b.send_gpdu(&craft::g_pdu(teid(i), qfi, &inner).unwrap())
            .unwrap();
        let (got, from) =
            recv_within(&b.dn, Duration::from_secs(3)).expect("uplink did not reach dn");
        assert_eq!(got, format!("ul-{i}").as_bytes());
        assert_eq!(from, SocketAddrV4::new(ue, UE_PORT).into());
        b.dn.send_to(b"answer", SocketAddrV4::new(ue, UE_PORT))
            .unwrap();
        let (t, q, inner) = b.recv_gpdu().expect("no downlink G-PDU");
        assert_eq!((t, q), (0x00b0_0000 | i, qfi));
        assert_eq!(craft::ipv4_addrs(&inner), Some((N6_DN, ue)));
        assert_eq!(&inner[28..], b"answer");

        let echo = craft::icmp_echo(ue, N6_DN, 9, 1, b"ping").unwrap();
        ul_bytes[i as usize] += echo.len() as u64;
        b.send_gpdu(&craft::g_pdu(teid(i), qfi, &echo).unwrap())
            .unwrap();
        let (_, _, reply) = b.recv_gpdu().expect("no downlink G-PDU");
        assert_eq!((reply[9], reply[20]), (1, 0), "ICMP echo reply");
    }
    let c = b.read_when(TunDatapath::counters, |c| {
        c.get(TunReason::DlForwarded) == 2 * u64::from(n)
    });
    assert_eq!(c.get(TunReason::UlForwarded), 2 * u64::from(n), "{c:?}");
    assert_eq!(c.get(TunReason::DlForwarded), 2 * u64::from(n), "{c:?}");
    assert_eq!(c.dropped(), 0, "{c:?}");
    for i in 0..n {
        let u = b.dp.usage(UsageId(i)).unwrap();
        assert_eq!((u.ul_packets, u.dl_packets), (2, 2));
        assert_eq!(u.ul_bytes, ul_bytes[i as usize]);
    }
    assert!(b.dp.cpu_ns() > 0);
    let e = b.end_sessions((0..n).map(|i| (teid(i), i))).unwrap();
    assert_eq!((e.uplink, e.downlink, e.usage), (0, 0, 0));
}

#[test]
fn malformed_g_pdus_and_closed_gates_are_dropped_and_counted() {
    let Some(mut b) = bed("tunbad") else { return };
    b.dp.install_uplink(&uplink(1, Some(5))).unwrap();
    let mut closed = uplink(2, None);
    closed.gate.open = false;
    b.dp.install_uplink(&closed).unwrap();
    let inner = craft::ipv4_udp(ue_ip(1), N6_DN, UE_PORT, DN_PORT, b"bad").unwrap();
    let good = craft::g_pdu(teid(1), Some(5), &inner).unwrap();
    let with_ext = |ext: [u8; 8]| {
        let mut g = vec![0x34, 255];
        g.extend_from_slice(&u16::try_from(inner.len() + 8).unwrap().to_be_bytes());
        g.extend_from_slice(&teid(1).to_be_bytes());
        g.extend_from_slice(&ext);
        g.extend_from_slice(&inner);
        g
    };
    let cases: Vec<(&str, Vec<u8>, TunReason)> = vec![
        (
            "6-octet header",
            good[..6].to_vec(),
            TunReason::DropTruncated,
        ),
        (
            "length beyond the packet",
            good[..good.len() - 10].to_vec(),
            TunReason::DropTruncated,
        ),
        (
            "unknown TEID",
            craft::g_pdu(0x0fff_ffff, None, &inner).unwrap(),
            TunReason::DropUnknownTeid,
        ),
        (
            "extension of length 0",
            with_ext([0, 0, 0, 0x85, 0, 0, 0, 0]),
            TunReason::DropBadExtension,
        ),
        (
            "unknown required extension",
            with_ext([0, 0, 0, 0xe1, 1, 0, 0, 0]),
            TunReason::DropBadExtension,
        ),
        (
            "downlink container",
            with_ext([0, 0, 0, 0x85, 1, 0x00, 5, 0]),
            TunReason::DropBadExtension,
        ),
        (
            "wrong QFI",
            craft::g_pdu(teid(1), Some(6), &inner).unwrap(),
            TunReason::DropQfiMismatch,
        ),
        (
            "spoofed source",
            craft::g_pdu(
                teid(1),
                Some(5),
                &craft::ipv4_udp(Ipv4Addr::new(10, 9, 9, 9), N6_DN, 1, DN_PORT, b"x").unwrap(),
            )
            .unwrap(),
            TunReason::DropUeMismatch,
        ),
        (
            "inner IHL 3 (RFC 791 §3.1)",
            craft::g_pdu(teid(1), Some(5), &{
                let mut p = inner.clone();
                p[0] = 0x43;
                p
            })
            .unwrap(),
            TunReason::DropInnerHeader,
        ),
        (
            "closed gate",
            craft::g_pdu(
                teid(2),
                None,
                &craft::ipv4_udp(ue_ip(2), N6_DN, 1, DN_PORT, b"x").unwrap(),
            )
            .unwrap(),
            TunReason::DropGateClosed,
        ),
    ];
    for (what, g, reason) in &cases {
        let before = b.dp.counters();
        b.send_gpdu(g).unwrap();
        b.send_gpdu(&good).unwrap();
        let (got, _) = recv_within(&b.dn, Duration::from_secs(3)).expect("barrier packet lost");
        assert_eq!(got, b"bad", "{what}: something else reached dn");
        let d = b.dp.counters().since(&before);
        assert_eq!(d.get(*reason), 1, "{what}: {d:?}");
        assert_eq!(d.dropped(), 1, "{what}: {d:?}");
    }
    assert_eq!(b.dp.usage(UsageId(2)).unwrap().dropped, 1);
}

#[test]
fn echo_is_answered_and_a_buffering_far_releases_on_forward() {
    let Some(mut b) = bed("tunecho") else { return };
    // Echo Request, S=1, sequence 0x1234 (TS 29.281 §7.2.1).
    b.send_gpdu(&[0x32, 1, 0, 4, 0, 0, 0, 0, 0x12, 0x34, 0, 0])
        .unwrap();
    let (rsp, _) = recv_within(&b.gnb, Duration::from_secs(3)).expect("no Echo Response");
    let p = Packet::new_checked(&rsp[..]).unwrap();
    assert_eq!(p.msg_type(), pfcp::gtpu::msg_type::ECHO_RESPONSE);
    assert_eq!(p.sequence(), Some(0x1234));

    let mut dl = downlink(4, None);
    dl.action = DownlinkAction::Buffer;
    b.dp.install_downlink(&dl).unwrap();
    for k in 0..3u8 {
        b.dn.send_to(&[k], SocketAddrV4::new(ue_ip(4), UE_PORT))
            .unwrap();
    }
    let c = b.read_when(TunDatapath::counters, |c| c.get(TunReason::Buffered) == 3);
    assert_eq!(c.get(TunReason::Buffered), 3, "{c:?}");
    assert!(
        recv_within(&b.gnb, Duration::from_millis(200)).is_none(),
        "a buffered packet left"
    );
    b.dp.install_downlink(&downlink(4, None)).unwrap();
    // The thread applies the change on its next wake-up; send one more packet to wake it.
    b.dn.send_to(&[3], SocketAddrV4::new(ue_ip(4), UE_PORT))
        .unwrap();
    for k in 0..4u8 {
        let (_, _, inner) = b.recv_gpdu().expect("no downlink G-PDU");
        assert_eq!(inner[28..], [k], "buffered packets leave first, in order");
    }
    assert_eq!(b.dp.counters().get(TunReason::EchoAnswered), 1);
}

/// `NodeConfig::max_sessions` holds on the TUN path: the session past it gets PFCP cause 75
/// and installs nothing.
#[test]
fn the_session_limit_holds_on_the_tun_path() {
    use pfcp::ie::NodeId;
    use pfcp::requests::{self, SessionSpec};
    use pfcp::{Cause, Message};
    use upf::{ServiceOptions, UpfService};

    let Some(b) = bed("tunlimit") else { return };
    let Rig { dp, bed: _bed, .. } = b;
    let mut opts =
        ServiceOptions::new(std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), N3_UPF);
    opts.node.max_sessions = 1;
    let svc = UpfService::start(opts, Box::new(dp)).unwrap();
    let mut p = common::peer(svc.local_addr());
    let node = NodeId::Ipv4(Ipv4Addr::LOCALHOST);
    p.request(None, requests::association_setup(node.clone(), 1));
    let mut causes = Vec::new();
    for i in 0..2 {
        let spec = SessionSpec::new(
            node.clone(),
            u64::from(i) + 1,
            Ipv4Addr::LOCALHOST,
            ue_ip(i),
        );
        let r = p.request(
            Some(0),
            Message::SessionEstablishmentRequest(requests::establishment(&spec)),
        );
        let Message::SessionEstablishmentResponse(e) = r.message else {
            panic!("{r:?}")
        };
        causes.push(e.cause);
    }
    assert_eq!(
        causes,
        [Cause::REQUEST_ACCEPTED, Cause::NO_RESOURCES_AVAILABLE]
    );
    let report = svc.stop().unwrap();
    assert_eq!(report.datapath, "tun");
    assert_eq!(report.sessions_at_stop, 1);
    assert_eq!(report.stats.sessions_refused_limit, 1);
    assert_eq!(report.entries_after, Some(upf::Entries::default()));
}
