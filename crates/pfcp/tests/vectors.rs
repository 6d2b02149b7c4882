//! PFCP and GTP-U byte vectors: decode to the expected values, re-encode byte for byte, reject
//! malformed input with the right Cause, and never panic on any prefix or bit flip.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::Ipv4Addr;

use pfcp::gtpu;
use pfcp::ie::{ApplyAction, FTeid, Interface, NodeId, OuterHeaderCreation, Triggers};
use pfcp::message::{Message, SessionReportRequest};
use pfcp::{Cause, DecodeError, PfcpMessage};

#[test]
fn every_pfcp_vector_round_trips() {
    for (name, v) in common::pfcp_vectors() {
        let m = PfcpMessage::parse(&v).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.emit(), v, "{name}: re-encode differs");
        assert_eq!(m.header.msg_type, v[1], "{name}");
    }
}

#[test]
fn session_establishment_request_fields() {
    let m = PfcpMessage::parse(&common::session_establishment_request()).unwrap();
    assert_eq!(m.header.seid, Some(0));
    assert_eq!(m.header.sequence, 4);
    let Message::SessionEstablishmentRequest(r) = m.message else {
        panic!("wrong message")
    };
    assert_eq!(r.node_id, NodeId::Ipv4(Ipv4Addr::new(10, 0, 0, 4)));
    assert_eq!(r.cp_f_seid.seid, 1);
    assert_eq!(r.create_pdr.len(), 2);
    let ul = &r.create_pdr[0];
    assert_eq!(ul.pdr_id, 1);
    assert_eq!(ul.precedence, 255);
    assert_eq!(ul.pdi.source_interface, Interface::ACCESS);
    assert_eq!(
        ul.pdi.f_teid,
        Some(FTeid::Choose {
            ipv4: true,
            ipv6: false,
            choose_id: Some(1)
        })
    );
    assert_eq!(
        ul.pdi.network_instance.as_deref(),
        Some(&b"\x08internet"[..])
    );
    assert_eq!(ul.outer_header_removal.unwrap().description, 0);
    assert_eq!(
        (ul.far_id, &ul.urr_ids[..], &ul.qer_ids[..]),
        (Some(1), &[1][..], &[1][..])
    );
    let dl = &r.create_pdr[1];
    let ue = dl.pdi.ue_ip_address.unwrap();
    assert_eq!(ue.ipv4, Some(Ipv4Addr::new(10, 45, 0, 2)));
    assert!(ue.destination);
    assert_eq!(
        dl.pdi.sdf_filters[0].flow_description.as_deref(),
        Some(&b"permit out ip from any to assigned"[..])
    );
    assert!(r.create_far[0].apply_action.unwrap().has(ApplyAction::FORW));
    let fp = r.create_far[0].forwarding_parameters.as_ref().unwrap();
    assert_eq!(fp.destination_interface, Some(Interface::CORE));
    assert!(r.create_far[1]
        .apply_action
        .unwrap()
        .has(ApplyAction::BUFF | ApplyAction::NOCP));
    let urr = &r.create_urr[0];
    assert_eq!(urr.volume_threshold.unwrap().total, Some(1_000_000_000));
    assert_eq!(urr.time_threshold, Some(3600));
    assert_eq!(
        urr.reporting_triggers,
        Some(Triggers(Triggers::VOLTH | Triggers::TIMTH))
    );
    let qer = &r.create_qer[0];
    assert_eq!(qer.mbr.unwrap().ul_kbps, 1_000_000);
    assert_eq!(qer.mbr.unwrap().dl_kbps, 2_000_000);
}

#[test]
fn modification_and_report_fields() {
    let m = PfcpMessage::parse(&common::session_modification_request()).unwrap();
    assert_eq!(m.header.priority, Some(3));
    let Message::SessionModificationRequest(r) = m.message else {
        panic!("wrong message")
    };
    assert_eq!(r.remove_pdr, vec![3]);
    let fp = r.update_far[0].forwarding_parameters.as_ref().unwrap();
    assert_eq!(
        fp.outer_header_creation,
        Some(OuterHeaderCreation::gtpu_ipv4(
            1,
            Ipv4Addr::new(10, 0, 0, 9)
        ))
    );
    assert_eq!(r.update_qer[0].gate_status.unwrap().ul, 1);

    let m = PfcpMessage::parse(&common::session_report_request()).unwrap();
    let Message::SessionReportRequest(r) = m.message else {
        panic!("wrong message")
    };
    assert_eq!(r.report_type, SessionReportRequest::USAR);
    let u = &r.usage_reports[0];
    assert_eq!((u.urr_id, u.ur_seqn), (1, 1));
    assert_eq!(u.trigger, Triggers(Triggers::VOLTH));
    let v = u.volume.unwrap();
    assert_eq!(
        (v.total, v.uplink, v.downlink),
        (Some(3000), Some(1000), Some(2000))
    );
    assert_eq!(u.duration, Some(120));

    let m = PfcpMessage::parse(&common::session_deletion_response()).unwrap();
    let Message::SessionDeletionResponse(r) = m.message else {
        panic!("wrong message")
    };
    assert_eq!(r.cause, Cause::REQUEST_ACCEPTED);
    assert_eq!(r.usage_reports[0].trigger, Triggers(Triggers::TERMR));
}

/// Rebuilds a message with its length field fixed after editing the body.
fn fix_len(mut v: Vec<u8>) -> Vec<u8> {
    let l = u16::try_from(v.len() - 4).unwrap().to_be_bytes();
    v[2] = l[0];
    v[3] = l[1];
    v
}

fn err_of(v: &[u8]) -> DecodeError {
    PfcpMessage::parse(v).unwrap_err()
}

/// A Session Establishment Request that decodes but breaks the presence table.
fn presence_err_of(v: &[u8]) -> DecodeError {
    let Message::SessionEstablishmentRequest(r) = PfcpMessage::parse(v).unwrap().message else {
        panic!("not a Session Establishment Request")
    };
    pfcp::presence::establishment(&r, &pfcp::presence::Context::default()).unwrap_err()
}

#[test]
fn missing_mandatory_ie_is_cause_66() {
    // Session Establishment Request without its Node ID (first IE, 9 octets at offset 16).
    let mut v = common::session_establishment_request();
    v.drain(16..25);
    let e = err_of(&fix_len(v));
    assert_eq!(e, DecodeError::MandatoryIeMissing { ie_type: 60 });
    assert_eq!(e.cause(), Some(Cause::MANDATORY_IE_MISSING));
    assert_eq!(e.offending_ie(), Some(60));
    // Heartbeat without Recovery Time Stamp.
    let e = err_of(&common::h(&["20 01 0004 000001 00"]));
    assert_eq!(e.offending_ie(), Some(96));
}

#[test]
fn bad_length_is_cause_68() {
    // F-TEID inside the first PDI claims 3 octets (CH with CHID needs 2; the extra octet
    // shifts the next IE out of the PDI's bounds).
    let mut v = common::session_establishment_request();
    let at = v.windows(4).position(|w| w == [0, 0x15, 0, 2]).unwrap();
    v[at + 3] = 3;
    let e = err_of(&v);
    assert_eq!(e.cause(), Some(Cause::INVALID_LENGTH));
    // Recovery Time Stamp of 3 octets.
    let e = err_of(&common::h(&["20 01 000b 000001 00", "0060 0003 e83d1a"]));
    assert_eq!(e, DecodeError::InvalidLength { ie_type: 96 });
}

#[test]
fn incorrect_and_conditional_ies() {
    // F-SEID with neither V4 nor V6: Mandatory IE incorrect (69).
    let mut v = common::session_establishment_request();
    v[16 + 9 + 4] = 0;
    let e = err_of(&v);
    assert_eq!(e, DecodeError::IeIncorrect { ie_type: 57 });
    assert_eq!(e.cause(), Some(Cause::MANDATORY_IE_INCORRECT));
    // Create FAR with FORW but no Forwarding Parameters: Conditional IE missing (67). It
    // decodes; the receiver's presence table (pfcp::presence) refuses it.
    let v = common::h(&[
        "21 32 0032 0000000000000000 000004 00",
        "003c 0005 00 0a000004",
        "0039 000d 02 0000000000000001 0a000004",
        "0001 001f 0038 0002 0001 001d 0004 000000ff 0002 0005 0014 0001 00 006c 0004 00000001",
        "0003 000d 006c 0004 00000001 002c 0001 02",
    ]);
    let e = presence_err_of(&fix_len(v));
    assert_eq!(e, DecodeError::ConditionalIeMissing { ie_type: 4 });
    assert_eq!(e.cause(), Some(Cause::CONDITIONAL_IE_MISSING));
    // The same PDR without its FAR ID (TS 29.244 Table 7.5.2.2-1): FAR ID is the one missing.
    let v = common::h(&[
        "21 32 0032 0000000000000000 000004 00",
        "003c 0005 00 0a000004",
        "0039 000d 02 0000000000000001 0a000004",
        "0001 0017 0038 0002 0001 001d 0004 000000ff 0002 0005 0014 0001 00",
        "0003 000d 006c 0004 00000001 002c 0001 01",
    ]);
    let e = presence_err_of(&fix_len(v));
    assert_eq!(e, DecodeError::ConditionalIeMissing { ie_type: 108 });
    // Report Type USAR without a Usage Report.
    let e = err_of(&common::h(&[
        "21 38 0011 0000000000000001 000007 00",
        "0027 0001 02",
    ]));
    assert_eq!(e, DecodeError::ConditionalIeMissing { ie_type: 80 });
}

#[test]
fn header_level_errors_have_no_cause() {
    let mut v = common::heartbeat_request();
    v[0] = 0x21; // S=1 on a node message: too short for a session header, and wrong anyway
    assert_eq!(err_of(&v).cause(), None);
    let mut v = common::heartbeat_request();
    v[1] = 200;
    assert_eq!(err_of(&v), DecodeError::UnknownMessageType(200));
    let v = common::h(&["21 01 000c 0000000000000000 000001 00"]);
    assert_eq!(err_of(&v), DecodeError::SeidFlag(1));
}

#[test]
fn unknown_ies_kept_and_vendor_ies_skipped() {
    // Heartbeat Request + unknown IE 1024 (value 0xaabb) + vendor IE 0x8001, enterprise 18681.
    let v = common::h(&[
        "20 01 0019 000001 00",
        "0060 0004 e83d1a00",
        "0400 0002 aabb",
        "8001 0003 48f9 01",
    ]);
    let m = PfcpMessage::parse(&v).unwrap();
    let Message::HeartbeatRequest(hb) = &m.message else {
        panic!("wrong message")
    };
    assert_eq!(hb.unknown.len(), 1);
    assert_eq!(hb.unknown[0].ie_type, 1024);
    assert_eq!(m.emit(), fix_len(v[..22].to_vec()));
}

#[test]
fn prefixes_and_bit_flips_never_panic() {
    let all = common::pfcp_vectors()
        .into_iter()
        .chain(common::gtpu_vectors());
    for (_, v) in all {
        for n in 0..v.len() {
            pfcp::fuzz_decode(&v[..n]);
        }
        for i in 0..v.len() * 8 {
            let mut w = v.clone();
            w[i / 8] ^= 1 << (i % 8);
            pfcp::fuzz_decode(&w);
        }
    }
}

#[test]
fn every_gtpu_vector_round_trips() {
    for (name, v) in common::gtpu_vectors() {
        let p = gtpu::Packet::new_checked(&v[..]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = gtpu::Repr::parse(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut out = vec![0u8; v.len()];
        let hlen = r.emit(&mut out).unwrap();
        out[hlen..].copy_from_slice(p.payload().unwrap());
        assert_eq!(out, v, "{name}");
    }
    let (_, ul) = &common::gtpu_vectors()[1];
    let r = gtpu::Repr::parse(&gtpu::Packet::new_checked(&ul[..]).unwrap()).unwrap();
    assert_eq!(r.qfi(), Some(9));
    assert_eq!(
        r.extensions,
        vec![gtpu::ExtHeader::PduSessionContainer(
            gtpu::PduSessionContainer::uplink(9)
        )]
    );
}

#[test]
fn built_messages_match_vectors() {
    // The SMF side builds the modification's Update FAR from values, not bytes.
    let m = PfcpMessage::parse(&common::session_modification_request()).unwrap();
    let rebuilt = PfcpMessage {
        header: m.header,
        message: m.message.clone(),
    };
    assert_eq!(rebuilt.emit(), common::session_modification_request());
    let hb = PfcpMessage::new(
        1,
        None,
        Message::HeartbeatRequest(pfcp::message::Heartbeat {
            recovery_time_stamp: 0xe83d1a00,
            unknown: Vec::new(),
        }),
    );
    assert_eq!(hb.emit(), common::heartbeat_request());
}

#[test]
fn random_mutations_never_panic_and_reencode_stably() {
    // Deterministic xorshift so a failure reproduces; several byte edits per case reach deeper
    // than single bit flips (lengths and flags changed together).
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let seeds: Vec<Vec<u8>> = common::pfcp_vectors()
        .into_iter()
        .chain(common::gtpu_vectors())
        .map(|(_, v)| v)
        .collect();
    for _ in 0..200_000 {
        let mut v = seeds[(next() % seeds.len() as u64) as usize].clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() % v.len() as u64) as usize;
            v[i] = next() as u8;
        }
        if next() % 4 == 0 {
            let cut = (next() % v.len() as u64) as usize;
            v.truncate(cut);
        }
        pfcp::fuzz_decode(&v);
    }
}
