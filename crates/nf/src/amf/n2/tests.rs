#![allow(clippy::unwrap_used)]

use proto::ids::{defaults, GlobalRanNodeId, GnbId, Plmn, Tac};
use proto::ngap::{
    self, BroadcastPlmn, Cause, Criticality, Direction, ErrorIndication, IeDiagnostic, MessageKind,
    MiscCause, NgSetupFailure, NgSetupRequest, NgSetupResponse, NgapPdu, PagingDrx, ProtocolCause,
    SupportedTa, TypeOfError,
};

use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// NG SETUP REQUEST sent by PacketRusher (PLMN 208-93, TAC 000001).
const PACKETRUSHER_NG_SETUP_REQUEST: &str = "0015003a000004001b00080002f839100000080052400e05805061636b65745275736865720066001000000000010002f839000010080102030015400140";
/// INITIAL UE MESSAGE sent by PacketRusher (RAN UE NGAP ID 1, Registration Request).
const PACKETRUSHER_INITIAL_UE_MESSAGE: &str = "000f404200000500550002000100260018177e004179000d0102f8390000000000000000102e0220200079000f4002f839000008000002f839000001005a4001180070400100";
/// ERROR INDICATION sent by Open5GS (AMF UE 9, RAN UE 3, unknown-local-UE-NGAP-ID).
const OPEN5GS_ERROR_INDICATION: &str = "00094015000003000a40020009005540020003000f40020380";
/// NG SETUP RESPONSE sent by Open5GS.
const OPEN5GS_NG_SETUP_RESPONSE: &str = "201500350000040001000e05806f70656e3567732d616d663000600008000002f83902004000564001ff0050000b0002f83900001008010203";

fn request_for(plmn: Plmn, tac: Tac, name: &str) -> Vec<u8> {
    NgSetupRequest {
        global_ran_node_id: GlobalRanNodeId::gnb(plmn, GnbId::new(0x42, 22).unwrap()),
        ran_node_name: Some(name.to_owned()),
        supported_tas: vec![SupportedTa {
            tac,
            broadcast_plmns: vec![BroadcastPlmn {
                plmn,
                slices: vec![defaults::SNSSAI],
            }],
        }],
        default_paging_drx: Some(PagingDrx::V128),
    }
    .encode()
    .unwrap()
}

fn default_request() -> Vec<u8> {
    request_for(defaults::PLMN, defaults::TAC, "gnb-a")
}

/// Feeds one message and returns the single PDU sent back, checking it went back on
/// the same association and stream.
fn answer(amf: &mut AmfN2, assoc: u32, stream: u16, bytes: &[u8]) -> NgapPdu {
    let mut out = Vec::new();
    amf.handle(assoc, stream, bytes, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    let N2Output::Send {
        assoc: a,
        stream: s,
        pdu,
    } = &out[0];
    assert_eq!((*a, *s), (assoc, stream));
    ngap::decode(pdu).unwrap()
}

fn failure(pdu: &NgapPdu) -> NgSetupFailure {
    assert_eq!(pdu.kind(), MessageKind::NgSetupFailure);
    NgSetupFailure::parse(pdu).unwrap()
}

fn error_indication(pdu: &NgapPdu) -> ErrorIndication {
    assert_eq!(pdu.kind(), MessageKind::ErrorIndication);
    ErrorIndication::parse(pdu).unwrap()
}

fn amf() -> AmfN2 {
    let mut amf = AmfN2::new(AmfN2Config::default());
    amf.association_up(7);
    amf
}

#[test]
fn matching_ng_setup_is_answered_with_our_configuration() {
    let mut amf = amf();
    let rsp = answer(&mut amf, 7, 0, &default_request());
    assert_eq!(rsp.kind(), MessageKind::NgSetupResponse);
    let rsp = NgSetupResponse::parse(&rsp).unwrap();
    assert_eq!(rsp.amf_name, "steer5g-amf");
    assert_eq!(rsp.served_guamis, vec![defaults::GUAMI]);
    assert_eq!(rsp.relative_amf_capacity, 255);
    assert_eq!(rsp.plmn_support.len(), 1);
    assert_eq!(rsp.plmn_support[0].plmn, defaults::PLMN);
    assert_eq!(rsp.plmn_support[0].slices, vec![defaults::SNSSAI]);
    assert_eq!(rsp.criticality_diagnostics, None);

    let ctx = amf.gnb(7).unwrap();
    assert_eq!(ctx.state, SetupState::Ready);
    assert!(amf.is_ready(7));
    assert!(!amf.is_ready(8));
    assert_eq!(ctx.name.as_deref(), Some("gnb-a"));
    assert_eq!(ctx.supported_tas[0].tac, defaults::TAC);
    assert_eq!(amf.stats().ng_setup_ok, 1);
    assert_eq!(amf.gnbs().count(), 1);
}

#[test]
fn wrong_plmn_fails_with_unknown_plmn() {
    let mut amf = amf();
    let req = request_for(Plmn::new("208", "93").unwrap(), defaults::TAC, "x");
    let f = failure(&answer(&mut amf, 7, 0, &req));
    assert_eq!(f.cause, Cause::Misc(MiscCause::UnknownPlmnOrSnpn));
    assert_eq!(amf.stats().ng_setup_failed.unknown_plmn, 1);
    // The association is up, its gNB is not set up.
    assert_eq!((amf.gnbs().count(), amf.ready_gnbs()), (1, 0));
    assert_eq!(
        amf.gnb(7).unwrap().state,
        SetupState::Failed {
            cause: Cause::Misc(MiscCause::UnknownPlmnOrSnpn)
        }
    );
    // 001-010 is not 001-01.
    let req = request_for(Plmn::new("001", "010").unwrap(), defaults::TAC, "x");
    failure(&answer(&mut amf, 7, 0, &req));
    assert_eq!(amf.stats().ng_setup_failed.unknown_plmn, 2);
    // PacketRusher's real request is in 208-93 too.
    failure(&answer(&mut amf, 7, 0, &hex(PACKETRUSHER_NG_SETUP_REQUEST)));
    assert_eq!(amf.stats().ng_setup_failed.unknown_plmn, 3);
}

#[test]
fn no_common_ta_fails() {
    let mut amf = amf();
    let req = request_for(defaults::PLMN, Tac::new(2).unwrap(), "x");
    let f = failure(&answer(&mut amf, 7, 0, &req));
    assert_eq!(f.cause, Cause::Misc(MiscCause::UnknownPlmnOrSnpn));
    assert_eq!(amf.stats().ng_setup_failed.no_common_ta, 1);
    assert_eq!(amf.stats().ng_setup_failed.unknown_plmn, 0);
    assert_eq!(amf.stats().ng_setup_ok, 0);
}

#[test]
fn a_served_tac_in_a_foreign_plmn_is_no_common_ta() {
    // TA 000002 is ours only in 208-93, which we do not serve; TA 000001 is broadcast
    // in 001-01 but we serve only 000003: a PLMN matches, no TA does.
    let mut amf = AmfN2::new(AmfN2Config {
        tacs: vec![Tac::new(2).unwrap(), Tac::new(3).unwrap()],
        ..AmfN2Config::default()
    });
    let foreign = Plmn::new("208", "93").unwrap();
    let req = NgSetupRequest {
        global_ran_node_id: GlobalRanNodeId::gnb(defaults::PLMN, defaults::GNB_ID),
        ran_node_name: None,
        supported_tas: vec![
            SupportedTa {
                tac: Tac::new(2).unwrap(),
                broadcast_plmns: vec![BroadcastPlmn {
                    plmn: foreign,
                    slices: vec![defaults::SNSSAI],
                }],
            },
            SupportedTa {
                tac: defaults::TAC,
                broadcast_plmns: vec![BroadcastPlmn {
                    plmn: defaults::PLMN,
                    slices: vec![defaults::SNSSAI],
                }],
            },
        ],
        default_paging_drx: None,
    };
    failure(&answer(&mut amf, 1, 0, &req.encode().unwrap()));
    assert_eq!(amf.stats().ng_setup_failed.no_common_ta, 1);
    // The rejection's log line shows what was offered beside what is served.
    assert_eq!(
        offered_tas(&req.supported_tas),
        "000002 (208-93), 000001 (001-01)"
    );
    assert_eq!(
        served_tas(&AmfN2Config {
            tacs: vec![Tac::new(2).unwrap(), Tac::new(3).unwrap()],
            ..AmfN2Config::default()
        }),
        "TACs 000002 000003 in PLMNs 001-01"
    );
    assert_eq!(offered_tas(&[]), "none");
}

#[test]
fn repeated_ng_setup_overwrites_the_context() {
    let mut amf = amf();
    answer(&mut amf, 7, 0, &default_request());
    let second = NgSetupRequest {
        global_ran_node_id: GlobalRanNodeId::gnb(defaults::PLMN, GnbId::new(9, 32).unwrap()),
        ran_node_name: None,
        supported_tas: vec![SupportedTa {
            tac: defaults::TAC,
            broadcast_plmns: vec![BroadcastPlmn {
                plmn: defaults::PLMN,
                slices: vec![
                    defaults::SNSSAI,
                    proto::ids::Snssai::new(2, Some(5)).unwrap(),
                ],
            }],
        }],
        default_paging_drx: Some(PagingDrx::V256),
    };
    let rsp = answer(&mut amf, 7, 0, &second.encode().unwrap());
    assert_eq!(rsp.kind(), MessageKind::NgSetupResponse);
    let ctx = amf.gnb(7).unwrap();
    assert_eq!(ctx.global_ran_node_id, Some(second.global_ran_node_id));
    assert_eq!(ctx.name, None);
    assert_eq!(ctx.supported_tas, second.supported_tas);
    assert_eq!(ctx.default_paging_drx, Some(PagingDrx::V256));
    assert_eq!(amf.stats().ng_setup_ok, 2);
    assert_eq!(amf.gnbs().count(), 1);
    // Set up twice, counted once.
    assert_eq!(amf.ready_gnbs(), 1);

    // A failed NG Setup replaces nothing: the gNB stays set up as before.
    let bad = request_for(Plmn::new("999", "99").unwrap(), defaults::TAC, "y");
    failure(&answer(&mut amf, 7, 0, &bad));
    let ctx = amf.gnb(7).unwrap();
    assert_eq!(ctx.state, SetupState::Ready);
    assert_eq!(ctx.global_ran_node_id, Some(second.global_ran_node_id));
    assert_eq!(amf.ready_gnbs(), 1);
}

#[test]
fn associations_are_independent_and_go_down() {
    let mut amf = AmfN2::new(AmfN2Config::default());
    amf.association_up(1);
    amf.association_up(2);
    answer(&mut amf, 1, 0, &default_request());
    assert_eq!(amf.gnb(1).unwrap().state, SetupState::Ready);
    assert_eq!(amf.gnb(2).unwrap().state, SetupState::Pending);
    // Two associations, one gNB set up.
    assert_eq!(amf.ready_gnbs(), 1);
    // An InitialUEMessage on association 2, not set up, is refused there only.
    let ei = error_indication(&answer(
        &mut amf,
        2,
        1,
        &hex(PACKETRUSHER_INITIAL_UE_MESSAGE),
    ));
    assert_eq!(
        ei.cause,
        Some(Cause::Protocol(
            ProtocolCause::MessageNotCompatibleWithReceiverState
        ))
    );
    amf.association_down(1);
    assert!(amf.gnb(1).is_none());
    assert_eq!(amf.gnbs().count(), 1);
    assert_eq!(amf.ready_gnbs(), 0);
    // Data on an association never reported up is taken as up.
    answer(&mut amf, 3, 0, &default_request());
    assert_eq!(amf.gnb(3).unwrap().state, SetupState::Ready);
    assert_eq!(amf.ready_gnbs(), 1);
    // An association reported up again starts over, not set up.
    amf.association_up(3);
    assert_eq!(amf.ready_gnbs(), 0);
}

#[test]
fn error_indication_is_counted_and_never_answered() {
    let mut amf = amf();
    let mut out = Vec::new();
    amf.handle(7, 0, &hex(OPEN5GS_ERROR_INDICATION), &mut out);
    assert!(out.is_empty());
    assert_eq!(amf.stats().error_indications_received, 1);
    assert_eq!(amf.stats().error_indications_sent, 0);
    assert!(amf.gnb(7).is_some());
    // Even a faulty one (§10.5): an Error Indication whose Cause does not decode.
    let faulty = hex("0009400a 000001 000f4003 ffffff");
    amf.handle(7, 0, &faulty, &mut out);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(amf.stats().error_indications_received, 2);
    // And still accepted after setup.
    answer(&mut amf, 7, 0, &default_request());
    amf.handle(7, 0, &hex(OPEN5GS_ERROR_INDICATION), &mut out);
    assert!(out.is_empty());
    assert_eq!(amf.gnb(7).unwrap().state, SetupState::Ready);
}

#[test]
fn garbage_is_a_transfer_syntax_error_on_the_same_stream() {
    let mut amf = amf();
    for garbage in [
        &[][..],
        &[0xff][..],
        &[0xde, 0xad, 0xbe, 0xef][..],
        &[0x00; 64][..],
    ] {
        let pdu = answer(&mut amf, 7, 3, garbage);
        let ei = error_indication(&pdu);
        // §10.2: transfer syntax error, and nothing to say which procedure.
        assert_eq!(
            ei.cause,
            Some(Cause::Protocol(ProtocolCause::TransferSyntaxError))
        );
        assert_eq!(ei.criticality_diagnostics, None);
    }
    assert_eq!(amf.stats().undecodable, 4);
    assert_eq!(amf.stats().error_indications_sent, 4);
    // The association is kept, and NG Setup still works on it.
    assert_eq!(amf.gnb(7).unwrap().state, SetupState::Pending);
    answer(&mut amf, 7, 0, &default_request());
    assert_eq!(amf.gnb(7).unwrap().state, SetupState::Ready);
}

#[test]
fn truncated_real_pdus_are_transfer_syntax_errors() {
    let mut amf = amf();
    let full = hex(PACKETRUSHER_NG_SETUP_REQUEST);
    for n in [1, 3, 4, 10, full.len() / 2, full.len() - 1] {
        let ei = error_indication(&answer(&mut amf, 7, 0, &full[..n]));
        assert_eq!(
            ei.cause,
            Some(Cause::Protocol(ProtocolCause::TransferSyntaxError)),
            "cut at {n}"
        );
    }
    assert_eq!(amf.stats().undecodable, 6);
    assert_eq!(
        amf.stats().ng_setup_ok + amf.stats().ng_setup_failed.unknown_plmn,
        0
    );
}

#[test]
fn message_before_ng_setup_is_not_compatible_with_receiver_state() {
    let mut amf = amf();
    let pdu = answer(&mut amf, 7, 1, &hex(PACKETRUSHER_INITIAL_UE_MESSAGE));
    let ei = error_indication(&pdu);
    assert_eq!(
        ei.cause,
        Some(Cause::Protocol(
            ProtocolCause::MessageNotCompatibleWithReceiverState
        ))
    );
    // §8.7.4.2: the UE-associated message's IDs are echoed.
    assert_eq!(ei.ran_ue_ngap_id, Some(1));
    assert_eq!(ei.amf_ue_ngap_id, None);
    let d = ei.criticality_diagnostics.unwrap();
    assert_eq!(d.procedure_code, Some(ngap::procedure::INITIAL_UE_MESSAGE));
    assert_eq!(d.triggering_message, Some(Direction::InitiatingMessage));
    assert_eq!(d.procedure_criticality, Some(Criticality::Ignore));
    assert_eq!(amf.stats().unexpected, 1);
    assert!(amf.gnb(7).is_some());
}

#[test]
fn messages_this_amf_does_not_handle_are_refused_after_setup_too() {
    let mut amf = amf();
    answer(&mut amf, 7, 0, &default_request());
    // Not handled yet by this AMF.
    error_indication(&answer(
        &mut amf,
        7,
        1,
        &hex(PACKETRUSHER_INITIAL_UE_MESSAGE),
    ));
    // An outcome the AMF never asked for.
    let ei = error_indication(&answer(&mut amf, 7, 0, &hex(OPEN5GS_NG_SETUP_RESPONSE)));
    let d = ei.criticality_diagnostics.unwrap();
    assert_eq!(d.procedure_code, Some(ngap::procedure::NG_SETUP));
    assert_eq!(d.triggering_message, Some(Direction::SuccessfulOutcome));
    assert_eq!(amf.stats().unexpected, 2);
    assert_eq!(amf.gnb(7).unwrap().state, SetupState::Ready);
}

/// PacketRusher's request without IE 27: see proto's vectors for the derivation.
const REQUEST_WITHOUT_GLOBAL_RAN_NODE_ID: &str =
    "0015002e0000030052400e05805061636b65745275736865720066001000000000010002f839000010080102030015400140";

#[test]
fn missing_mandatory_ie_fails_setup_with_abstract_syntax_error_reject() {
    let mut amf = amf();
    let f = failure(&answer(
        &mut amf,
        7,
        0,
        &hex(REQUEST_WITHOUT_GLOBAL_RAN_NODE_ID),
    ));
    // TS 38.413 §10.3.5.
    assert_eq!(
        f.cause,
        Cause::Protocol(ProtocolCause::AbstractSyntaxErrorReject)
    );
    let d = f.criticality_diagnostics.unwrap();
    assert_eq!(d.procedure_code, None);
    assert_eq!(d.procedure_criticality, Some(Criticality::Reject));
    assert_eq!(
        d.ies,
        vec![IeDiagnostic {
            criticality: Criticality::Reject,
            id: ngap::ie_id::GLOBAL_RAN_NODE_ID,
            type_of_error: TypeOfError::Missing,
        }]
    );
    assert_eq!(amf.stats().ng_setup_failed.protocol_error, 1);
}

/// Appends raw IE octets to PacketRusher's request (4 IEs, open type 0x3a octets),
/// fixing the IE count and the length.
fn packetrusher_plus(extra: &[u8]) -> Vec<u8> {
    let mut b = hex(PACKETRUSHER_NG_SETUP_REQUEST);
    b[3] += u8::try_from(extra.len()).unwrap();
    b[6] += 1;
    b.extend_from_slice(extra);
    b
}

#[test]
fn repeated_ie_fails_setup_as_falsely_constructed() {
    let mut amf = amf();
    // Default Paging DRX twice (§10.3.6).
    let f = failure(&answer(
        &mut amf,
        7,
        0,
        &packetrusher_plus(&hex("0015400140")),
    ));
    assert_eq!(
        f.cause,
        Cause::Protocol(ProtocolCause::AbstractSyntaxErrorFalselyConstructedMessage)
    );
}

#[test]
fn unknown_ie_goes_by_its_criticality() {
    // IE 65000, not in the protocol, criticality reject: §10.3.4.2 reject.
    let mut amf = amf();
    let f = failure(&answer(
        &mut amf,
        7,
        0,
        &packetrusher_plus(&hex("fde8000100")),
    ));
    assert_eq!(
        f.cause,
        Cause::Protocol(ProtocolCause::AbstractSyntaxErrorReject)
    );
    assert_eq!(
        f.criticality_diagnostics.unwrap().ies,
        vec![IeDiagnostic {
            criticality: Criticality::Reject,
            id: 65000,
            type_of_error: TypeOfError::NotUnderstood,
        }]
    );

    // The same IE with criticality notify, in a request that is otherwise ours:
    // accepted, and the response lists the IE (§10.3.4.2 ignore and notify).
    let mut ours = default_request();
    ours[3] += 5;
    ours[6] += 1;
    ours.extend_from_slice(&hex("fde8800100"));
    let rsp = answer(&mut amf, 7, 0, &ours);
    let rsp = NgSetupResponse::parse(&rsp).unwrap();
    assert_eq!(
        rsp.criticality_diagnostics.unwrap().ies,
        vec![IeDiagnostic {
            criticality: Criticality::Notify,
            id: 65000,
            type_of_error: TypeOfError::NotUnderstood,
        }]
    );
    assert_eq!(amf.gnb(7).unwrap().state, SetupState::Ready);

    // Criticality ignore: simply ignored.
    let mut ours = default_request();
    ours[3] += 5;
    ours[6] += 1;
    ours.extend_from_slice(&hex("fde8400100"));
    let rsp = NgSetupResponse::parse(&answer(&mut amf, 7, 0, &ours)).unwrap();
    assert_eq!(rsp.criticality_diagnostics, None);
}

#[test]
fn unknown_procedure_goes_by_the_pdu_criticality() {
    let mut amf = amf();
    // Procedure 250, an empty IE container, criticality reject (§10.3.4.1).
    let ei = error_indication(&answer(&mut amf, 7, 0, &hex("00fa0003000000")));
    assert_eq!(
        ei.cause,
        Some(Cause::Protocol(ProtocolCause::AbstractSyntaxErrorReject))
    );
    assert_eq!(
        ei.criticality_diagnostics.unwrap().procedure_code,
        Some(250)
    );
    // Criticality notify: ignored and the sender notified.
    let ei = error_indication(&answer(&mut amf, 7, 0, &hex("00fa8003000000")));
    assert_eq!(
        ei.cause,
        Some(Cause::Protocol(
            ProtocolCause::AbstractSyntaxErrorIgnoreAndNotify
        ))
    );
    // Criticality ignore: ignored.
    let mut out = Vec::new();
    amf.handle(7, 0, &hex("00fa4003000000"), &mut out);
    assert!(out.is_empty());
    assert_eq!(amf.stats().ignored, 1);
    assert_eq!(amf.stats().abstract_syntax_errors, 2);
}

#[test]
fn invalid_plmn_digits_are_a_semantic_error() {
    let mut amf = amf();
    // The broadcast PLMN of PacketRusher's TA replaced by octets that are no TBCD.
    let mut b = hex(PACKETRUSHER_NG_SETUP_REQUEST);
    let at = b.windows(3).rposition(|w| w == [0x02, 0xf8, 0x39]).unwrap();
    b[at..at + 3].copy_from_slice(&[0xab, 0xcd, 0xef]);
    let f = failure(&answer(&mut amf, 7, 0, &b));
    assert_eq!(f.cause, Cause::Protocol(ProtocolCause::SemanticError));
    assert_eq!(amf.stats().ng_setup_failed.semantic_error, 1);
}

#[test]
fn a_response_that_does_not_encode_fails_setup_with_om_intervention() {
    let mut amf = AmfN2::new(AmfN2Config {
        amf_name: String::new(),
        ..AmfN2Config::default()
    });
    let f = failure(&answer(&mut amf, 1, 0, &default_request()));
    assert_eq!(f.cause, Cause::Misc(MiscCause::OmIntervention));
    assert_eq!(amf.stats().ng_setup_failed.misconfigured, 1);
}

/// A small deterministic generator (xorshift64*), so the fuzz test needs no crate and
/// fails the same way every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Feeds `bytes` and checks the invariants: at most one answer, always a well-formed
/// NGAP PDU on the same association and stream, never an answer to an ERROR
/// INDICATION.
fn fuzz_one(amf: &mut AmfN2, bytes: &[u8]) {
    let mut out = Vec::new();
    amf.handle(7, 5, bytes, &mut out);
    assert!(out.len() <= 1, "{bytes:02x?}");
    let is_ei = ngap::decode(bytes).is_ok_and(|p| p.kind() == MessageKind::ErrorIndication);
    if is_ei {
        assert!(out.is_empty(), "answered an ERROR INDICATION: {bytes:02x?}");
    }
    for o in &out {
        let N2Output::Send { assoc, stream, pdu } = o;
        assert_eq!((*assoc, *stream), (7, 5));
        let pdu = ngap::decode(pdu).unwrap();
        assert_eq!(pdu.check().unwrap(), None, "we sent a faulty PDU");
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut amf = amf();
    let mut rng = Rng(0x5eed_5eed_5eed_5eed);
    for _ in 0..10_000 {
        let len = rng.below(80);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        fuzz_one(&mut amf, &bytes);
    }
    let seeds = [
        hex(PACKETRUSHER_NG_SETUP_REQUEST),
        hex(PACKETRUSHER_INITIAL_UE_MESSAGE),
        hex(OPEN5GS_ERROR_INDICATION),
        hex(OPEN5GS_NG_SETUP_RESPONSE),
        default_request(),
        NgSetupFailure::new(MiscCause::Unspecified)
            .encode()
            .unwrap(),
    ];
    for _ in 0..10_000 {
        let mut b = seeds[rng.below(seeds.len())].clone();
        for _ in 0..=rng.below(4) {
            if b.is_empty() {
                break;
            }
            let i = rng.below(b.len());
            match rng.below(5) {
                0 => b[i] ^= 1 << rng.below(8),
                1 => b[i] = rng.next() as u8,
                2 => b.truncate(i),
                3 => b.insert(i, rng.next() as u8),
                _ => {
                    b.remove(i);
                }
            }
        }
        fuzz_one(&mut amf, &b);
    }
    // Everything was counted somewhere, and the AMF still works.
    let s = amf.stats().clone();
    assert!(s.undecodable > 0 && s.error_indications_sent > 0);
    let rsp = answer(&mut amf, 7, 0, &default_request());
    assert_eq!(rsp.kind(), MessageKind::NgSetupResponse);
}

/// TS 38.413 §8.7.6, §8.7.7: OVERLOAD START reaches every gNB that completed NG Setup when
/// the first AMF worker enters overload, and those that set up during it after their
/// response; OVERLOAD STOP when the last worker leaves it.
#[test]
fn overload_start_and_stop_reach_every_ready_gnb() {
    use crate::amf::overload::{OverloadConfig, OverloadSignal};
    let start = OverloadConfig {
        traffic_load_reduction: 40,
        ..OverloadConfig::default()
    }
    .start_message();
    let on = |worker| OverloadSignal {
        worker,
        start: Some(start),
    };
    let off = |worker| OverloadSignal {
        worker,
        start: None,
    };
    let mut amf = amf();
    amf.association_up(8);
    amf.association_up(9);
    answer(&mut amf, 7, 0, &default_request());
    answer(&mut amf, 8, 0, &default_request());
    let sent = |out: &[N2Output]| -> Vec<(u32, MessageKind)> {
        out.iter()
            .map(|N2Output::Send { assoc, stream, pdu }| {
                assert_eq!(*stream, ngap::NON_UE_STREAM);
                (*assoc, ngap::decode(pdu).unwrap().kind())
            })
            .collect()
    };
    let mut out = Vec::new();
    amf.overload(on(1), &mut out);
    // Association 9 has not completed NG Setup.
    assert_eq!(
        sent(&out),
        vec![
            (7, MessageKind::OverloadStart),
            (8, MessageKind::OverloadStart)
        ]
    );
    let N2Output::Send { pdu, .. } = &out[0];
    let got = ngap::OverloadStart::parse(&ngap::decode(pdu).unwrap()).unwrap();
    assert_eq!(got, start);
    assert_eq!(got.traffic_load_reduction, Some(40));
    // A second worker in overload changes nothing for the gNBs.
    out.clear();
    amf.overload(on(0), &mut out);
    assert!(out.is_empty());
    // A gNB that sets up now hears the response, then OVERLOAD START.
    amf.handle(9, 0, &default_request(), &mut out);
    assert_eq!(
        sent(&out),
        vec![
            (9, MessageKind::NgSetupResponse),
            (9, MessageKind::OverloadStart)
        ]
    );
    out.clear();
    amf.overload(off(1), &mut out);
    assert!(out.is_empty());
    amf.overload(off(0), &mut out);
    assert_eq!(
        sent(&out),
        vec![
            (7, MessageKind::OverloadStop),
            (8, MessageKind::OverloadStop),
            (9, MessageKind::OverloadStop)
        ]
    );
    assert_eq!(amf.stats().overload_starts_sent, 3);
    assert_eq!(amf.stats().overload_stops_sent, 3);
}
