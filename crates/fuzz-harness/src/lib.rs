//! Fuzz harnesses: each function takes arbitrary bytes and drives one decoder or state machine
//! with them. The cargo-fuzz targets in `fuzz/` are one line each around these functions, and
//! the stable test suite replays the saved corpus (`fuzz/corpus/<target>/`) through the same
//! functions, so what a fuzzer once found stays tested without a nightly toolchain.
//!
//! A harness panics only when the code under test breaks a promise (a panic inside it, or an
//! invariant checked here); arbitrary input must never do that.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use sctp::wire::{finish_packet, Packet};
use sctp::{AssocId, Endpoint, EndpointConfig, Event};

mod smf_n4;

pub use smf_n4::{smf_n4, smf_n4_stats};

/// A harness: arbitrary bytes in, a panic only on a broken promise.
pub type Harness = fn(&[u8]);

/// The harnesses, by the name of their cargo-fuzz target.
pub const TARGETS: &[(&str, Harness)] = &[
    ("sctp_packet", sctp_packet),
    ("sctp_endpoint", sctp_endpoint),
    ("ngap_decode", ngap_decode),
    ("ngap_peek", ngap_peek),
    ("amf_n2", amf_n2),
    ("nas_decode", nas_decode),
    ("nas_unprotect", nas_unprotect),
    ("sbi_json", sbi_json),
    ("suci_deconceal", suci_deconceal),
    ("subscriber_csv", subscriber_csv),
    ("pfcp_decode", pfcp_decode),
    ("upf_node", upf_node),
    ("smf_n4", smf_n4),
    ("sbi_multipart", sbi_multipart),
    ("userplane_packets", userplane_packets),
    ("udr_provisioning", udr_provisioning),
];

/// The SCTP packet decoder: header, checksum, every chunk and its parameters.
pub fn sctp_packet(data: &[u8]) {
    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let _ = packet.verify_checksum();
    if let Ok((_, chunks)) = packet.parse() {
        for c in &chunks {
            let _ = format!("{c:?}");
        }
    }
    for c in packet.chunks() {
        let _ = format!("{c:?}");
    }
}

const SERVER_PORT: u16 = 38412;
const CLIENT_PORT: u16 = 40000;

fn addr(last: u8) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, last), 9899))
}

/// Moves packets both ways until neither side has anything to send (bounded).
fn exchange(now: Instant, client: &mut Endpoint, server: &mut Endpoint) {
    for _ in 0..64 {
        let mut moved = false;
        while let Some(t) = client.poll_transmit(now) {
            server.handle(now, addr(1), &t.packet);
            moved = true;
        }
        while let Some(t) = server.poll_transmit(now) {
            client.handle(now, addr(2), &t.packet);
            moved = true;
        }
        if !moved {
            break;
        }
    }
}

/// An SCTP endpoint fed a sequence of arbitrary packets, timer expiries and user calls, after
/// a real handshake so that the established association's paths are reachable. Each packet
/// may get the association's verification tag and a correct CRC32c patched in (the first
/// op byte's bits), so the fuzzer gets past both checks and into the chunk handling.
///
/// Input: a sequence of ops `[op, len_hi, len_lo, bytes...]`.
pub fn sctp_endpoint(data: &[u8]) {
    let start = Instant::now();
    let mut now = start;
    let mut server = Endpoint::new(EndpointConfig {
        listen_port: Some(SERVER_PORT),
        rng_seed: 1,
        ..EndpointConfig::default()
    });
    let mut client = Endpoint::new(EndpointConfig {
        rng_seed: 2,
        ..EndpointConfig::default()
    });
    let Ok(cid) = client.connect(now, addr(2), CLIENT_PORT, SERVER_PORT) else {
        return;
    };
    exchange(now, &mut client, &mut server);
    let server_vtag = client.info(cid).map(|i| i.peer_vtag).unwrap_or(0);
    let mut sid: Option<AssocId> = None;
    while let Some((id, ev)) = server.poll_event() {
        if let Event::Connected { .. } = ev {
            sid = Some(id);
        }
    }

    let mut rest = data;
    while let [op, hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (body, next) = tail.split_at(len);
        rest = next;
        match op % 8 {
            0..=3 => {
                let mut pkt = body.to_vec();
                if op & 1 != 0 {
                    if let Some(v) = pkt.get_mut(4..8) {
                        v.copy_from_slice(&server_vtag.to_be_bytes());
                    }
                    if let Some(p) = pkt.get_mut(0..4) {
                        p[..2].copy_from_slice(&CLIENT_PORT.to_be_bytes());
                        p[2..].copy_from_slice(&SERVER_PORT.to_be_bytes());
                    }
                }
                if op & 2 != 0 {
                    finish_packet(&mut pkt);
                }
                server.handle(now, addr(1), &pkt);
            }
            4 => {
                let ms = body.first().copied().unwrap_or(1);
                now += Duration::from_millis(u64::from(ms) * 50);
                server.handle_timeout(now);
                client.handle_timeout(now);
            }
            5 => {
                if let Some(id) = sid {
                    let stream = u16::from(body.first().copied().unwrap_or(0) % 20);
                    let _ = server.send(
                        id,
                        stream,
                        60,
                        op & 0x10 != 0,
                        bytes::Bytes::copy_from_slice(body),
                    );
                }
            }
            6 => exchange(now, &mut client, &mut server),
            _ => {
                client.handle(now, addr(2), body);
            }
        }
        while server.poll_transmit(now).is_some() {}
        while server.poll_event().is_some() {}
        while client.poll_event().is_some() {}
        if let Some(t) = server.poll_timeout() {
            // A timer in the past would make a runtime spin.
            assert!(t + Duration::from_secs(3600) > start, "timer before start");
        }
    }
}

/// The NGAP decoder, the checks that classify a decoded PDU (TS 38.413 §10), and every typed
/// message reader: each must turn any decodable PDU into a value or an error.
pub fn ngap_decode(data: &[u8]) {
    use proto::ngap as n;
    if let Ok(pdu) = n::decode(data) {
        let _ = pdu.check();
        let _ = pdu.kind();
        let _ = pdu.ue_ngap_ids();
        let _ = n::encode(&pdu);
        let _ = n::NgSetupRequest::parse(&pdu);
        let _ = n::NgSetupResponse::parse(&pdu);
        let _ = n::NgSetupFailure::parse(&pdu);
        let _ = n::ErrorIndication::parse(&pdu);
        let _ = n::InitialUeMessage::parse(&pdu);
        let _ = n::DownlinkNasTransport::parse(&pdu);
        let _ = n::UplinkNasTransport::parse(&pdu);
        let _ = n::InitialContextSetupRequest::parse(&pdu);
        let _ = n::InitialContextSetupResponse::parse(&pdu);
        let _ = n::InitialContextSetupFailure::parse(&pdu);
        let _ = n::UeContextReleaseCommand::parse(&pdu);
        let _ = n::UeContextReleaseComplete::parse(&pdu);
        let _ = n::UeContextReleaseRequest::parse(&pdu);
        if let Ok(m) = n::OverloadStart::parse(&pdu) {
            // What parses re-encodes (the reduction is kept within 1-99 by the parser).
            let _ = m.encode();
        }
        let _ = n::OverloadStop::parse(&pdu);
    }
}

/// The routing peek at an NGAP PDU: total on any input, and for every input the full decoder
/// accepts it gives what the full decode gives (message kind, procedure code, the first
/// AMF-UE-NGAP-ID and RAN-UE-NGAP-ID, and the 5G-S-TMSI of an INITIAL UE MESSAGE that
/// parses).
pub fn ngap_peek(data: &[u8]) {
    use proto::ngap as n;
    let peek = n::peek(data);
    let Ok(pdu) = n::decode(data) else {
        return;
    };
    let p = match peek {
        Ok(p) => p,
        Err(e) => panic!("peek refuses a PDU that decodes: {e}"),
    };
    assert_eq!(p.kind, pdu.kind(), "kind");
    assert_eq!(p.procedure_code, pdu.procedure_code(), "procedure code");
    if n::Peek::walks(p.kind) {
        assert_eq!(
            (p.amf_ue_ngap_id, p.ran_ue_ngap_id),
            pdu.ue_ngap_ids(),
            "ids"
        );
        if let Ok(m) = n::InitialUeMessage::parse(&pdu) {
            assert_eq!(p.five_g_s_tmsi, m.five_g_s_tmsi, "5G-S-TMSI");
            assert_eq!(p.ran_ue_ngap_id, Some(m.ran_ue_ngap_id), "RAN-UE-NGAP-ID");
        }
    }
}

/// The NAS-5GS message reader (TS 24.501): a plain message parses to a typed message or an
/// error carrying the 5GMM cause to answer with, and what parses re-encodes.
pub fn nas_decode(data: &[u8]) {
    let _ = proto::nas::plain_message_type(data);
    match proto::nas::NasMessage::parse(data) {
        Ok(m) => {
            let _ = m.name();
            let _ = m.encode();
        }
        Err(e) => {
            let _ = e.cause();
        }
    }
}

fn fixed_nas_context() -> proto::nas::NasSecurityContext {
    use proto::nas::{CipheringAlgorithm, IntegrityAlgorithm, NasSecurityContext, Ngksi};
    NasSecurityContext::new(
        Ngksi::native(1),
        security::KnasInt::from_bytes(&[0x11; 16]),
        security::KnasEnc::from_bytes(&[0x22; 16]),
        IntegrityAlgorithm::Nia2,
        CipheringAlgorithm::Nea2,
    )
}

/// NAS security (TS 24.501 §4.4): the AMF's unprotect of uplink octets must reject forged
/// messages without moving its COUNT, and never panic. Half of the inputs are first protected
/// with the right context so that the deciphering and parsing paths are reached.
pub fn nas_unprotect(data: &[u8]) {
    use proto::nas::{Direction, SecurityHeaderType};
    let mut amf = fixed_nas_context();
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let octets = if first & 1 == 1 {
        let mut ue = fixed_nas_context();
        let sht = if first & 2 == 2 {
            SecurityHeaderType::IntegrityProtectedAndCiphered
        } else {
            SecurityHeaderType::IntegrityProtected
        };
        match ue.protect(rest, sht, Direction::Uplink) {
            Ok(o) => o,
            Err(_) => return,
        }
    } else {
        rest.to_vec()
    };
    let before = amf.ul_count;
    match amf.unprotect(&octets, Direction::Uplink) {
        Ok(u) => nas_decode(&u.plain),
        Err(_) => assert_eq!(
            amf.ul_count, before,
            "a rejected message moved the UL COUNT"
        ),
    }
}

/// The SBI JSON bodies (TS 29.509, TS 29.503): any bytes decode to a model or a serde error.
pub fn sbi_json(data: &[u8]) {
    use sbi::model as m;
    let _ = serde_json::from_slice::<m::AuthenticationInfo>(data);
    let _ = serde_json::from_slice::<m::UeAuthenticationCtx>(data);
    let _ = serde_json::from_slice::<m::ConfirmationData>(data);
    let _ = serde_json::from_slice::<m::ConfirmationDataResponse>(data);
    let _ = serde_json::from_slice::<m::AuthenticationInfoRequest>(data);
    let _ = serde_json::from_slice::<m::AuthenticationInfoResult>(data);
    let _ = serde_json::from_slice::<m::AuthEvent>(data);
    let _ = serde_json::from_slice::<m::Amf3GppAccessRegistration>(data);
    let _ = serde_json::from_slice::<m::AccessAndMobilitySubscriptionData>(data);
    let _ = serde_json::from_slice::<m::SmfSelectionSubscriptionData>(data);
    let _ = serde_json::from_slice::<m::Nssai>(data);
    let _ = serde_json::from_slice::<m::ProblemDetails>(data);
}

/// The home network private keys of TS 33.501 Annex C.4.3 (Profile A) and C.4.4 (Profile B),
/// so that the Annex's scheme outputs, saved in the corpus, reach the decryption path.
const ANNEX_C4_HN_PRIVATE_A: [u8; 32] = [
    0xc5, 0x3c, 0x22, 0x20, 0x8b, 0x61, 0x86, 0x0b, 0x06, 0xc6, 0x2e, 0x54, 0x06, 0xa7, 0xb3, 0x30,
    0xc2, 0xb5, 0x77, 0xaa, 0x55, 0x58, 0x98, 0x15, 0x10, 0xd1, 0x28, 0x24, 0x7d, 0x38, 0xbd, 0x1d,
];
const ANNEX_C4_HN_PRIVATE_B: [u8; 32] = [
    0xf1, 0xab, 0x10, 0x74, 0x47, 0x7e, 0xbc, 0xc7, 0xf5, 0x54, 0xea, 0x1c, 0x5f, 0xc3, 0x68, 0xb1,
    0x61, 0x67, 0x30, 0x15, 0x5e, 0x00, 0x41, 0xac, 0x44, 0x7d, 0x63, 0x01, 0x97, 0x5f, 0xec, 0xda,
];

/// SUCI deconcealment (TS 33.501 Annex C.3) with the Annex C.4 home-network keys: the first
/// byte picks the profile; arbitrary scheme outputs must be refused (bad point, bad tag)
/// without a panic, and one that passes its MAC check must give a BCD MSIN.
pub fn suci_deconceal(data: &[u8]) {
    use security::suci::{bcd_to_msin, deconceal, HomeNetworkPrivateKey, Profile};
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let (profile, key) = if first & 1 == 0 {
        (Profile::A, &ANNEX_C4_HN_PRIVATE_A)
    } else {
        (Profile::B, &ANNEX_C4_HN_PRIVATE_B)
    };
    if let Ok(hn) = HomeNetworkPrivateKey::from_bytes(profile, key) {
        if let Ok(input) = deconceal(&hn, rest) {
            let _ = bcd_to_msin(&input);
        }
    }
}

/// The subscriber CSV reader shared by `subscriber import` and `ran --subscribers`.
pub fn subscriber_csv(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = store::csv::parse_csv(text);
    }
}

/// The AMF's N2 handler: every input gets at most one answer, on the same association and
/// stream, and every answer is itself a decodable NGAP PDU.
pub fn amf_n2(data: &[u8]) {
    use nf::amf::n2::{AmfN2, AmfN2Config, N2Output};
    let mut amf = AmfN2::new(AmfN2Config::default());
    amf.association_up(7);
    let mut out = Vec::new();
    // Split on a marker so one input can carry several PDUs (NG Setup, then the rest).
    for pdu in data.split(|&b| b == 0xfe) {
        amf.handle(7, 0, pdu, &mut out);
        assert!(out.len() <= 1, "more than one answer to one PDU");
        for o in out.drain(..) {
            if let N2Output::Send { assoc, stream, pdu } = o {
                assert_eq!(
                    (assoc, stream),
                    (7, 0),
                    "answer on another association or stream"
                );
                assert!(
                    proto::ngap::decode(&pdu).is_ok(),
                    "our own answer does not decode"
                );
            }
        }
    }
}

/// The PFCP (TS 29.244) and GTP-U (TS 29.281) decoders; what decodes must re-encode to the
/// same value (the check lives in `pfcp::fuzz_decode`).
pub fn pfcp_decode(data: &[u8]) {
    pfcp::fuzz_decode(data);
}

/// The UPF's PFCP node (crates/upf): an association and one session set up with valid
/// requests, a second SMF associated beside it, then arbitrary datagrams from the first
/// SMF's address, the second's, or an address of no association (the header SEID optionally
/// patched to the live session's, so the fuzzer reaches session modification and deletion,
/// and their refusal to another association or a stranger), with usage counted and time
/// advanced between them. The node takes at most a few sessions, so the limit is reached.
/// Every answer must decode, and after `clear` the datapath must hold nothing (no entries
/// left after sessions end).
///
/// Input: a sequence of ops `[op, len_hi, len_lo, bytes...]`; op bit 0 patches the SEID,
/// bit 1 counts usage, bit 2 advances time, bits 3-4 pick the sender (0, 1: the first SMF,
/// 2: the second, 3: a stranger).
pub fn upf_node(data: &[u8]) {
    let _ = upf_node_stats(data);
}

/// [`upf_node`], returning the node's counters at the end, so that a test can tell which
/// branches a saved input reaches.
pub fn upf_node_stats(data: &[u8]) -> upf::Stats {
    use pfcp::ie::NodeId;
    use pfcp::requests::{self, SessionSpec};
    use pfcp::{Message, PfcpMessage};
    use upf::{Datapath, Entries, MemoryDatapath, NodeConfig, UpfNode, Usage, UsageId};

    let smf = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 4, 1), 8805));
    let smf_b = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 4, 2), 8805));
    let stranger = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 9, 9, 9), 8805));
    let mut now = Instant::now();
    let mut cfg = NodeConfig::new(
        NodeId::Ipv4(Ipv4Addr::new(10, 0, 4, 7)),
        Ipv4Addr::new(10, 0, 4, 7),
        Ipv4Addr::new(10, 0, 3, 7),
        1,
    );
    cfg.usage_poll = Duration::from_millis(10);
    cfg.max_sessions = 4;
    let mut node = UpfNode::new(now, cfg);
    let mut dp = MemoryDatapath::new();
    let smf_id = NodeId::Ipv4(Ipv4Addr::new(10, 0, 4, 1));
    let mut spec = SessionSpec::new(
        smf_id.clone(),
        0x77,
        Ipv4Addr::new(10, 0, 4, 1),
        Ipv4Addr::new(10, 45, 0, 2),
    );
    spec.volume_threshold = Some(1000);
    let setup = [
        (
            smf,
            PfcpMessage::new(1, None, requests::association_setup(smf_id, 7)),
        ),
        (
            smf,
            PfcpMessage::new(
                2,
                Some(0),
                Message::SessionEstablishmentRequest(requests::establishment(&spec)),
            ),
        ),
        (
            smf_b,
            PfcpMessage::new(
                1,
                None,
                requests::association_setup(NodeId::Ipv4(Ipv4Addr::new(10, 0, 4, 2)), 9),
            ),
        ),
    ];
    let mut seid = 0u64;
    for (from, m) in setup {
        node.handle(now, from, &m.emit(), &mut dp);
        while let Some(t) = node.poll_transmit() {
            if let Ok(PfcpMessage {
                message: Message::SessionEstablishmentResponse(r),
                ..
            }) = PfcpMessage::parse(&t.contents)
            {
                if let Some(f) = r.up_f_seid {
                    seid = f.seid;
                }
            }
        }
    }
    let mut rest = data;
    while let [op, hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (bytes, next) = tail.split_at(len);
        rest = next;
        let mut pkt = bytes.to_vec();
        // A header with the S flag carries the SEID at octets 4..12 (TS 29.244 §7.2.2.4).
        if op & 1 != 0 && pkt.len() >= 12 && pkt[0] & 1 != 0 {
            pkt[4..12].copy_from_slice(&seid.to_be_bytes());
        }
        let from = match (op >> 3) & 3 {
            2 => smf_b,
            3 => stranger,
            _ => smf,
        };
        node.handle(now, from, &pkt, &mut dp);
        if op & 2 != 0 {
            let delta = Usage {
                ul_packets: 1,
                ul_bytes: u64::from(*op) * 10,
                ..Usage::default()
            };
            dp.count(UsageId(u32::from(*lo % 4)), delta);
        }
        if op & 4 != 0 {
            now += Duration::from_millis(u64::from(*op) * 50);
            node.handle_timeout(now, &mut dp);
        }
        while let Some(t) = node.poll_transmit() {
            // Association Update Response (8) and Version Not Supported Response (11) are
            // built from raw IEs: the codec does not model them, only their header.
            if matches!(t.contents.get(1), Some(8 | 11)) {
                assert!(pfcp::Packet::new_checked(&t.contents[..]).is_ok());
                continue;
            }
            assert!(
                PfcpMessage::parse(&t.contents).is_ok(),
                "the UPF sent a PFCP message it cannot decode: {:02x?}",
                t.contents
            );
        }
    }
    node.clear(&mut dp);
    assert_eq!(
        dp.entries().ok(),
        Some(Entries::default()),
        "rules left after clear"
    );
    node.stats().clone()
}

/// The multipart/related codec of the SBI (RFC 2387; N1/N2 binary parts, TS 29.500 §6.1.2.4):
/// what decodes re-encodes to the same parts.
pub fn sbi_multipart(data: &[u8]) {
    sbi::multipart::fuzz_decode(data);
}

/// The user-space packet path's per-packet decisions (`upf::userspace::rules`, shared by the
/// sockets/TUN and AF_XDP paths) on arbitrary bytes taken as an uplink G-PDU and as a
/// downlink IP packet, with a forwarding rule installed for TEID 7 and its UE; and the
/// gNB emulator's downlink handler (`ran::userplane`) on the same bytes. Whatever the bytes,
/// an uplink forward hands back a slice of the input, and every probe reply the emulator
/// accepts matches one it sent.
pub fn userplane_packets(data: &[u8]) {
    use ran::userplane::{Downlink, FlowConfig, UpSession, UserPlane};
    use upf::datapath::{DownlinkAction, DownlinkRule, Gate, UplinkAction, UplinkRule, UsageId};
    use upf::userspace::rules::{self, DownlinkVerdict, UplinkVerdict};

    let ue = Ipv4Addr::new(10, 45, 0, 2);
    let gnb = Ipv4Addr::new(10, 0, 3, 2);
    let (mut h, mut r) = rules::channel();
    let installed = h
        .install_uplink(&UplinkRule {
            teid: 7,
            seid: 1,
            pdr_id: 1,
            ue_ip: ue,
            qfi: Some(9),
            action: UplinkAction::Forward,
            gate: Gate::OPEN,
            usage: Some(UsageId(1)),
        })
        .and_then(|()| {
            h.install_downlink(&DownlinkRule {
                ue_ip: ue,
                seid: 1,
                pdr_id: 2,
                action: DownlinkAction::Forward {
                    teid: 9,
                    peer: gnb,
                    qfi: Some(9),
                },
                gate: Gate::OPEN,
                usage: Some(UsageId(1)),
            })
        });
    assert!(installed.is_ok(), "rules install: {installed:?}");
    let mut released = Vec::new();
    r.apply_updates(&mut released);
    if let UplinkVerdict::Forward(inner) = r.uplink(data) {
        assert!(
            data.as_ptr_range().contains(&inner.as_ptr()) || inner.is_empty(),
            "an uplink forward is a slice of the G-PDU"
        );
    }
    if let DownlinkVerdict::Forward { inner, .. } = r.downlink(data) {
        // The IP packet itself: the input up to its Total Length (trailing bytes dropped).
        assert!(
            data.starts_with(inner),
            "downlink forwards a prefix of the packet"
        );
    }

    let session = UpSession {
        ue_ip: ue,
        upf: proto::ngap::GtpTunnel {
            addr: Ipv4Addr::new(10, 0, 3, 1),
            teid: 7,
        },
        gnb_teid: 9,
        qfi: 9,
    };
    let Ok(mut up) = UserPlane::new(FlowConfig::default(), vec![session]) else {
        panic!("a default flow on one session is valid");
    };
    let mut buf = Vec::new();
    let sent = up.build_uplink(0, 1_000, &mut buf).is_ok();
    if let Downlink::Reply { .. } = up.handle_downlink(data, 2_000) {
        assert!(sent, "a reply to a probe that was never sent");
    }
    let _ = up.handle_downlink(&buf, 3_000);
}

/// The UDR's provisioning API: any method, path and body gets an HTTP answer, a problem
/// (`application/problem+json`) for every refusal; a write is reported only when it
/// succeeded; the seeded subscriber's K leaves only when revealed. The first byte picks the
/// method, the second the resource, the rest is the body (and, up to a 0xfe, the query).
pub fn udr_provisioning(data: &[u8]) {
    use nf::udr::{Provisioning, PREFIX};
    use std::sync::Arc;
    const SUPI: &str = "imsi-001010000000001";
    const K: [u8; 16] = [0x5a; 16];
    let store = Arc::new(store::MemStore::new());
    let seeded = store::Subscriber::new(SUPI, K, store::OpOrOpc::Opc([0xa5; 16]));
    if let Ok(s) = seeded {
        let _ = store::SubscriberStore::insert(&*store, &s);
    }
    let api = Provisioning::new(store);
    let [m, r, rest @ ..] = data else { return };
    let method = fuzz_method(*m);
    let resource = [
        String::new(),
        "/import".to_owned(),
        format!("/{SUPI}"),
        format!("/{SUPI}/authentication-data/authentication-subscription"),
        format!("/{SUPI}/00101/provisioned-data"),
        format!("/{SUPI}/00101/provisioned-data/sm-data"),
        "/imsi-001010000000002".to_owned(),
    ][usize::from(*r) % 7]
        .clone();
    let (query, body) = query_and_body(rest);
    let req = sbi::SbiRequest {
        method,
        path: format!("{PREFIX}{resource}"),
        query: query.clone(),
        body: bytes::Bytes::copy_from_slice(body),
        content_type: Some(
            if *m & 0x80 == 0 {
                "application/json-patch+json"
            } else {
                "application/json"
            }
            .to_owned(),
        ),
    };
    let out = api.handle(&req);
    let status = out.response.status.as_u16();
    assert!((200..600).contains(&status), "status {status}");
    if status >= 400 {
        assert_eq!(
            out.response.content_type,
            Some("application/problem+json"),
            "a refusal without a problem"
        );
        assert!(out.changed.is_empty(), "a refused request reported a write");
        assert!(
            serde_json::from_slice::<serde_json::Value>(&out.response.body).is_ok(),
            "a problem that is not JSON"
        );
    }
    let revealed = query.is_some_and(|q| q.contains("reveal=keys"));
    if !revealed {
        let k = "5a".repeat(16);
        let body = String::from_utf8_lossy(&out.response.body);
        assert!(!body.contains(&k), "K left without reveal");
    }
}

/// The NRF's requests: NFRegister, NFUpdate, NFDeregister, subscriptions, discovery and the
/// token endpoint, on arbitrary bodies and queries after a valid registration. Every answer
/// is a status with a JSON body; a refusal changes no stored profile.
pub fn nrf_request(data: &[u8]) {
    use nf::nrf::{Nrf, NrfConfig, TokenIssuer, NNRF_DISC, NNRF_NFM, OAUTH2_TOKEN};
    use std::sync::OnceLock;
    use std::time::{Duration, Instant, SystemTime};
    const ID: &str = "11111111-1111-4111-8111-111111111111";
    static KEY: OnceLock<Option<(String, String)>> = OnceLock::new();
    let Some((private, public)) = KEY.get_or_init(|| sbi::oauth::generate_key_pair().ok()) else {
        return;
    };
    let (Ok(signer), Ok(client)) = (
        sbi::oauth::Signer::from_pem(private.as_bytes(), None),
        sbi::oauth::PublicKey::from_pem(public.as_bytes()),
    ) else {
        return;
    };
    let issuer = TokenIssuer {
        signer,
        clients: [(ID.to_owned(), client)].into_iter().collect(),
        lifetime_s: 60,
    };
    let mut nrf = Nrf::new(NrfConfig::default(), Some(issuer));
    let (t0, wall) = (Instant::now(), SystemTime::now());
    let profile = serde_json::json!({
        "nfInstanceId": ID, "nfType": "AUSF", "nfStatus": "REGISTERED",
        "ipv4Addresses": ["127.0.0.11"]
    });
    let put = sbi::SbiRequest {
        method: http::Method::PUT,
        path: format!("{NNRF_NFM}/nf-instances/{ID}"),
        query: None,
        body: bytes::Bytes::from(profile.to_string()),
        content_type: Some("application/json".into()),
    };
    let headers = http::HeaderMap::new();
    let _ = nrf.handle(t0, wall, &put, &headers);
    let [m, r, rest @ ..] = data else { return };
    let method = fuzz_method(*m);
    let path = [
        format!("{NNRF_NFM}/nf-instances/{ID}"),
        format!("{NNRF_NFM}/nf-instances"),
        format!("{NNRF_NFM}/subscriptions"),
        format!("{NNRF_NFM}/subscriptions/00000001"),
        format!("{NNRF_DISC}/nf-instances"),
        OAUTH2_TOKEN.to_owned(),
    ][usize::from(*r) % 6]
        .clone();
    let (query, body) = query_and_body(rest);
    let content_type = [
        "application/json",
        "application/json-patch+json",
        "application/x-www-form-urlencoded",
    ][usize::from(*m >> 4) % 3];
    let req = sbi::SbiRequest {
        method,
        path,
        query,
        body: bytes::Bytes::copy_from_slice(body),
        content_type: Some(content_type.into()),
    };
    let before: Vec<_> = nrf.profiles().cloned().collect();
    let out = nrf.handle(t0 + Duration::from_secs(1), wall, &req, &headers);
    let status = out.status.as_u16();
    assert!((200..600).contains(&status), "status {status}");
    if !out.body.is_empty() {
        assert!(
            serde_json::from_slice::<serde_json::Value>(&out.body).is_ok(),
            "an answer that is not JSON"
        );
    }
    if status >= 400 {
        let after: Vec<_> = nrf.profiles().cloned().collect();
        assert_eq!(before, after, "a refused request changed a profile");
    }
    nrf.handle_timeout(t0 + Duration::from_secs(60));
    while nrf.poll_notification().is_some() {}
}

/// The method a fuzz input's byte picks for an SBI request.
fn fuzz_method(m: u8) -> http::Method {
    [
        http::Method::GET,
        http::Method::POST,
        http::Method::PUT,
        http::Method::PATCH,
        http::Method::DELETE,
    ][usize::from(m) % 5]
        .clone()
}

/// A fuzz input's query (the bytes before a 0xfe, if any) and body (the rest).
fn query_and_body(rest: &[u8]) -> (Option<String>, &[u8]) {
    match rest.iter().position(|&b| b == 0xfe) {
        Some(i) => (
            Some(String::from_utf8_lossy(&rest[..i]).into_owned()),
            &rest[i + 1..],
        ),
        None => (None, rest),
    }
}
