#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, UdpSocket};
use std::time::Duration;

use super::*;

const UE_IP: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);

fn session(i: u32) -> UpSession {
    UpSession {
        ue_ip: Ipv4Addr::from(u32::from(UE_IP) + i),
        upf: GtpTunnel {
            addr: Ipv4Addr::LOCALHOST,
            teid: 0x1000 + i,
        },
        gnb_teid: 1 + i,
        qfi: 1,
    }
}

fn inner_of(gpdu: &[u8]) -> (Repr, Vec<u8>) {
    let p = gtpu::Packet::new_checked(gpdu).unwrap();
    (Repr::parse(&p).unwrap(), p.payload().unwrap().to_vec())
}

#[test]
fn checksum_matches_a_known_ipv4_header() {
    // The example header of RFC 1071 practice: 192.168.0.1 → 192.168.0.199, UDP.
    let h = hex_bytes("450000730000400040110000c0a80001c0a800c7");
    assert_eq!(checksum(&h), 0xb861);
    let mut h = h;
    h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
    assert_eq!(checksum(&h), 0);
    // Odd length pads with a zero octet.
    assert_eq!(checksum(&[0x01]), !0x0100);
}

fn hex_bytes(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn uplink_udp_probe_is_well_formed() {
    let cfg = FlowConfig {
        inner_size: 200,
        ..FlowConfig::default()
    };
    let mut up = UserPlane::new(cfg, vec![session(0), session(1)]).unwrap();
    let mut buf = Vec::new();
    let to = up.build_uplink(1, 5, &mut buf).unwrap();
    assert_eq!(to, SocketAddrV4::new(Ipv4Addr::LOCALHOST, GTPU_PORT));
    let (gtp, inner) = inner_of(&buf);
    assert_eq!(gtp.teid, 0x1001);
    assert_eq!(gtp.msg_type, gtpu::msg_type::G_PDU);
    let Some(ExtHeader::PduSessionContainer(c)) = gtp.extensions.first() else {
        panic!("{gtp:?}")
    };
    assert_eq!((c.pdu_type, c.qfi), (PduSessionContainer::UL, 1));
    assert_eq!(inner.len(), 200);
    let (proto, src, dst, l4) = l4_of(&inner).unwrap();
    assert_eq!((proto, src, dst), (PROTO_UDP, session(1).ue_ip, cfg.dn));
    assert!(udp_ok(src, dst, l4));
    assert_eq!(u16::from_be_bytes([l4[4], l4[5]]), 180);
    assert_eq!(up.stats().sent, 1);
    assert_eq!(up.in_flight(), 1);
    assert!(matches!(
        up.build_uplink(2, 0, &mut buf),
        Err(UpError::NoSession(2))
    ));
}

#[test]
fn replies_give_latency_and_duplicates_and_strangers_are_counted() {
    for kind in [
        ProbeKind::IcmpEcho,
        ProbeKind::Udp {
            src_port: 1,
            dst_port: 2,
        },
    ] {
        let cfg = FlowConfig {
            kind,
            ..FlowConfig::default()
        };
        let mut up = UserPlane::new(cfg, vec![session(0), session(1)]).unwrap();
        let mut buf = Vec::new();
        up.build_uplink(0, 1_000, &mut buf).unwrap();
        let down = reflect_gpdu(&buf, 1).unwrap();
        let (gtp, inner) = inner_of(&down);
        assert_eq!(gtp.qfi(), Some(1));
        let (_, src, dst, _) = l4_of(&inner).unwrap();
        assert_eq!((src, dst), (cfg.dn, UE_IP));
        assert_eq!(
            up.handle_downlink(&down, 251_000),
            Downlink::Reply {
                session: 0,
                seq: 0,
                rtt_ns: 250_000
            }
        );
        assert_eq!(
            up.handle_downlink(&down, 252_000),
            Downlink::LateOrDuplicate
        );
        // The reply on another session's TEID is not that session's.
        up.build_uplink(0, 2_000, &mut buf).unwrap();
        assert_eq!(
            up.handle_downlink(&reflect_gpdu(&buf, 2).unwrap(), 3_000),
            Downlink::Malformed
        );
        assert_eq!(
            up.handle_downlink(&reflect_gpdu(&buf, 77).unwrap(), 3_000),
            Downlink::UnknownTeid(77)
        );
        assert_eq!(up.handle_downlink(&[0x30, 0xff], 0), Downlink::Malformed);
        // A flipped bit in the inner packet fails its checksum.
        let mut bad = reflect_gpdu(&buf, 1).unwrap();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(up.handle_downlink(&bad, 0), Downlink::Malformed);
        // The probe still in flight expires as lost.
        up.expire(2_000 + 10, 100);
        assert_eq!(up.in_flight(), 1);
        up.expire(2_000 + 100, 100);
        let s = up.stats();
        assert_eq!((s.sent, s.received, s.lost), (2, 1, 1));
        assert_eq!(s.late_or_duplicate, 1);
        assert_eq!(s.unknown_teid, 1);
        assert_eq!(s.malformed, 3);
        assert_eq!(s.latency_us.len(), 1);
        assert!(s.latency_us.equivalent(s.latency_us.max(), 250));
    }
}

#[test]
fn configuration_is_checked() {
    let small = FlowConfig {
        inner_size: 20,
        ..FlowConfig::default()
    };
    assert!(matches!(
        UserPlane::new(small, vec![]),
        Err(UpError::InnerSize { .. })
    ));
    let mut twice = session(1);
    twice.ue_ip = UE_IP;
    assert_eq!(
        UserPlane::new(FlowConfig::default(), vec![session(1), twice]).unwrap_err(),
        UpError::DuplicateTeid(2)
    );
}

#[test]
fn pacer_spreads_the_rate() {
    let mut p = Pacer::new(1000, 0);
    assert_eq!(p.due(0, 100), 0);
    assert_eq!(p.wait_ns(0), 1_000_000);
    assert_eq!(p.due(10_000_000, 100), 10);
    // A stall issues at most the burst bound, the rest later.
    assert_eq!(p.due(1_000_000_000, 100), 100);
    assert_eq!(p.due(1_000_000_000, 10_000), 890);
    assert_eq!(p.due(u64::MAX, 0), 0);
}

#[test]
fn garbage_downlink_never_panics() {
    let mut up = UserPlane::new(FlowConfig::default(), vec![session(0)]).unwrap();
    let mut buf = Vec::new();
    up.build_uplink(0, 0, &mut buf).unwrap();
    let good = reflect_gpdu(&buf, 1).unwrap();
    for n in 0..good.len() {
        up.handle_downlink(&good[..n], 0);
        let _ = echo_inner(&good[..n]);
    }
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 0xa5;
        up.handle_downlink(&b, 0);
        let _ = reflect_gpdu(&b, 1);
    }
}

/// A loopback run: the test's thread plays the UPF and the DN, reflecting each
/// uplink G-PDU to the gNB's TEID.
#[test]
fn loopback_run_matches_every_probe() {
    let gnb = UdpSocket::bind("127.0.0.1:0").unwrap();
    let upf = UdpSocket::bind("127.0.0.1:0").unwrap();
    let upf_port = upf.local_addr().unwrap().port();
    const COUNT: u64 = 300;
    let sessions: Vec<_> = (0..3).map(session).collect();
    let teids: Vec<_> = sessions.iter().map(|s| (s.upf.teid, s.gnb_teid)).collect();
    let reflector = std::thread::spawn(move || {
        upf.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = vec![0u8; 65536];
        let mut n = 0;
        while n < COUNT {
            let Ok((len, from)) = upf.recv_from(&mut buf) else {
                break;
            };
            let p = gtpu::Packet::new_checked(&buf[..len]).unwrap();
            let gnb_teid = teids.iter().find(|(u, _)| *u == p.teid()).unwrap().1;
            let down = reflect_gpdu(&buf[..len], gnb_teid).unwrap();
            upf.send_to(&down, from).unwrap();
            n += 1;
        }
        n
    });
    let cfg = FlowConfig {
        kind: ProbeKind::IcmpEcho,
        upf_port,
        ..FlowConfig::default()
    };
    let mut up = UserPlane::new(cfg, sessions).unwrap();
    let sent = udp::run(
        &mut up,
        &gnb,
        udp::RunLimits {
            rate_pps: 3000,
            count: COUNT,
            max_duration: Duration::from_secs(30),
            drain: Duration::from_secs(5),
        },
    )
    .unwrap();
    assert_eq!(reflector.join().unwrap(), COUNT);
    let s = up.stats();
    assert_eq!(sent, COUNT);
    assert_eq!(s.sent, COUNT);
    assert_eq!(s.received + s.lost, COUNT);
    assert_eq!(s.received, COUNT, "loopback loses nothing: {s:?}");
    assert_eq!(s.malformed + s.unknown_teid + s.late_or_duplicate, 0);
    assert_eq!(s.latency_us.len(), COUNT);
}
