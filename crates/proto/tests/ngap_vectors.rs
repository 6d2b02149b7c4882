//! NGAP byte vectors: PDUs that other implementations sent (captures listed in the
//! test fixtures of oxirush-ngap 0.5.0, from lab runs of Open5GS v2.8.0, free5GC v4.2.3
//! and PacketRusher), and PDUs of our defaults whose octets were derived by hand from
//! the TS 38.413 ASN.1 and X.691 aligned PER (the derivation is in each test).
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    assert_octets, assert_wrong_message, captured, for_each_prefix_and_bit_flip, hex, plmn_208_93,
};

use proto::ids::{defaults, GlobalRanNodeId, GnbId, Guami, Plmn, Snssai, Tac};
use proto::ngap::{
    self, BroadcastPlmn, Cause, CriticalityDiagnostics, Direction, ErrorIndication, IeDiagnostic,
    MessageKind, MiscCause, NgSetupFailure, NgSetupRequest, NgSetupResponse, PagingDrx, ParseError,
    PlmnSupport, ProtocolCause, RadioNetworkCause, SupportedTa, TimeToWait, TypeOfError,
};

/// NGSetupRequest sent by PacketRusher 20250225 (gNB 0x000008/24 in 208-93).
const PACKETRUSHER_NG_SETUP_REQUEST: &str = "0015003a000004001b00080002f839100000080052400e05805061636b65745275736865720066001000000000010002f839000010080102030015400140";
/// NGSetupResponse sent by Open5GS v2.8.0.
const OPEN5GS_NG_SETUP_RESPONSE: &str = "201500350000040001000e05806f70656e3567732d616d663000600008000002f83902004000564001ff0050000b0002f83900001008010203";
/// NGSetupResponse sent by free5GC v4.2.3 (two slices).
const FREE5GC_NG_SETUP_RESPONSE: &str = "20150036000005000100050100414d4600600008000002f839cafe0000564001ff005000100002f8390001100801020310081122330013400100";
/// ErrorIndication sent by free5GC: protocol abstract-syntax-error-falsely-constructed-message.
const FREE5GC_ERROR_INDICATION: &str = "00094015000003005540020003000f40016a00134003700f10";
/// ErrorIndication sent by Open5GS: radioNetwork unknown-local-UE-NGAP-ID.
const OPEN5GS_ERROR_INDICATION: &str = "00094015000003000a40020009005540020003000f40020380";

#[test]
fn packetrusher_ng_setup_request_parses_and_reencodes_byte_for_byte() {
    let (bytes, pdu) = captured(PACKETRUSHER_NG_SETUP_REQUEST, MessageKind::NgSetupRequest);
    assert_eq!(pdu.procedure_code(), ngap::procedure::NG_SETUP);
    assert_eq!(pdu.direction(), Direction::InitiatingMessage);
    assert_eq!(pdu.check().unwrap(), None);
    let req = NgSetupRequest::parse(&pdu).unwrap();
    assert_eq!(
        req.global_ran_node_id,
        GlobalRanNodeId::gnb(plmn_208_93(), GnbId::new(8, 24).unwrap())
    );
    assert_eq!(req.ran_node_name.as_deref(), Some("PacketRusher"));
    assert_eq!(
        req.supported_tas,
        vec![SupportedTa {
            tac: Tac::new(1).unwrap(),
            broadcast_plmns: vec![BroadcastPlmn {
                plmn: plmn_208_93(),
                slices: vec![Snssai::new(1, Some(0x010203)).unwrap()],
            }],
        }]
    );
    assert_eq!(req.default_paging_drx, Some(PagingDrx::V128));
    assert_eq!(req.encode().unwrap(), bytes);
}

#[test]
fn open5gs_ng_setup_response_parses_and_reencodes_byte_for_byte() {
    let (bytes, pdu) = captured(OPEN5GS_NG_SETUP_RESPONSE, MessageKind::NgSetupResponse);
    let rsp = NgSetupResponse::parse(&pdu).unwrap();
    assert_eq!(rsp.amf_name, "open5gs-amf0");
    // Open5GS's defaults match ours but for the PLMN: region 2, set 1, pointer 0.
    assert_eq!(
        rsp.served_guamis,
        vec![Guami::new(plmn_208_93(), 2, 1, 0).unwrap()]
    );
    assert_eq!(rsp.relative_amf_capacity, 255);
    assert_eq!(
        rsp.plmn_support,
        vec![PlmnSupport {
            plmn: plmn_208_93(),
            slices: vec![Snssai::new(1, Some(0x010203)).unwrap()],
        }]
    );
    assert_eq!(rsp.encode().unwrap(), bytes);
}

#[test]
fn free5gc_ng_setup_response_parses() {
    let pdu = ngap::decode(&hex(FREE5GC_NG_SETUP_RESPONSE)).unwrap();
    let rsp = NgSetupResponse::parse(&pdu).unwrap();
    assert_eq!(rsp.amf_name, "AMF");
    assert_eq!(
        rsp.served_guamis,
        vec![Guami::new(plmn_208_93(), 0xca, 0x3f8, 0).unwrap()]
    );
    assert_eq!(rsp.plmn_support.len(), 1);
    assert_eq!(
        rsp.plmn_support[0].slices,
        vec![
            Snssai::new(1, Some(0x010203)).unwrap(),
            Snssai::new(1, Some(0x112233)).unwrap()
        ]
    );
    // free5GC adds an empty-ish Criticality Diagnostics.
    assert!(rsp.criticality_diagnostics.is_some());
}

#[test]
fn captured_error_indications_parse() {
    let pdu = ngap::decode(&hex(FREE5GC_ERROR_INDICATION)).unwrap();
    assert_eq!(pdu.kind(), MessageKind::ErrorIndication);
    let ei = ErrorIndication::parse(&pdu).unwrap();
    assert_eq!(ei.ran_ue_ngap_id, Some(3));
    assert_eq!(ei.amf_ue_ngap_id, None);
    assert_eq!(
        ei.cause,
        Some(Cause::Protocol(
            ProtocolCause::AbstractSyntaxErrorFalselyConstructedMessage
        ))
    );
    let d = ei.criticality_diagnostics.unwrap();
    assert_eq!(d.procedure_code, Some(15));

    let pdu = ngap::decode(&hex(OPEN5GS_ERROR_INDICATION)).unwrap();
    let ei = ErrorIndication::parse(&pdu).unwrap();
    assert_eq!((ei.amf_ue_ngap_id, ei.ran_ue_ngap_id), (Some(9), Some(3)));
    assert_eq!(
        ei.cause,
        Some(Cause::RadioNetwork(RadioNetworkCause::UnknownLocalUENGAPID))
    );
    assert_eq!(pdu.ue_ngap_ids(), (Some(9), Some(3)));
}

fn default_request() -> NgSetupRequest {
    NgSetupRequest {
        global_ran_node_id: GlobalRanNodeId::gnb(defaults::PLMN, defaults::GNB_ID),
        ran_node_name: Some(defaults::GNB_NAME.to_owned()),
        supported_tas: vec![SupportedTa {
            tac: defaults::TAC,
            broadcast_plmns: vec![BroadcastPlmn {
                plmn: defaults::PLMN,
                slices: vec![defaults::SNSSAI],
            }],
        }],
        default_paging_drx: Some(PagingDrx::V128),
    }
}

fn default_response() -> NgSetupResponse {
    NgSetupResponse {
        amf_name: defaults::AMF_NAME.to_owned(),
        served_guamis: vec![defaults::GUAMI],
        relative_amf_capacity: defaults::RELATIVE_AMF_CAPACITY,
        plmn_support: vec![PlmnSupport {
            plmn: defaults::PLMN,
            slices: vec![defaults::SNSSAI],
        }],
        criticality_diagnostics: None,
    }
}

/// Our default NG SETUP REQUEST, derived by hand:
/// - `00 15 00 36`: initiatingMessage (CHOICE index 0 of 3, extensible), procedure 21,
///   criticality reject, open type of 54 octets;
/// - `00 00 04`: SEQUENCE extension bit, then 4 IEs (16-bit count);
/// - `00 1b 00 08 | 00 00f110 00 000004`: Global RAN Node ID (27, reject): globalGNB-ID
///   (2-bit index 0), GlobalGNB-ID with no extensions, PLMN 001-01 = `00 f1 10`
///   (§9.3.3.5), gNB-ID choice 0 and length 22 - 22 = 0 in 4 bits, then the 22 bits of 1
///   left-aligned in 3 octets: `00 00 04`;
/// - `00 52 40 0d | 05 00 "steer5g-gnb"`: RAN Node Name (82, ignore), extension bit 0
///   and length 11 - 1 in 8 bits, then 8-bit characters;
/// - `00 66 00 0d | 00 00 000001 00 00f110 0000 0008`: Supported TA List (102, reject):
///   1 item, TAC 000001, 1 broadcast PLMN (4-bit count), the 16-bit count of the slice
///   list (range 1..1024), then S-NSSAI without SD: 5 bits of presence then SST 1 in 8
///   bits across the octet boundary;
/// - `00 15 40 01 40`: Default Paging DRX (21, ignore) v128 = index 2 in 2 bits.
const DEFAULT_NG_SETUP_REQUEST: &str = "00150036 000004
    001b0008 0000f110 00000004
    0052400d 0500 737465657235672d676e62
    0066000d 0000 000001 00 00f110 0000 0008
    0015400140";

/// Our default NG SETUP RESPONSE, derived by hand as above: successfulOutcome `20`,
/// AMF Name (1, reject) "steer5g-amf"; Served GUAMI List (96, reject): item count
/// (8 bits), presence bits of the item and of the GUAMI, PLMN 001-01, AMF Region ID 8 bits `02`, Set ID 10 bits and Pointer 6 bits packed as
/// `0000000001 000000` = `00 40`; Relative AMF Capacity (86, ignore) 255; PLMN Support
/// List (80, reject) with SST 1.
const DEFAULT_NG_SETUP_RESPONSE: &str = "20150031 000004
    0001000d 0500 737465657235672d616d66
    00600008 00 00 00f110 02 0040
    00564001ff
    00500008 00 00f110 0000 0008";

#[test]
fn default_ng_setup_request_matches_hand_derived_octets() {
    let req = default_request();
    assert_octets(
        &req,
        req.encode().unwrap(),
        DEFAULT_NG_SETUP_REQUEST,
        NgSetupRequest::parse,
    );
}

#[test]
fn default_ng_setup_response_matches_hand_derived_octets() {
    let rsp = default_response();
    assert_octets(
        &rsp,
        rsp.encode().unwrap(),
        DEFAULT_NG_SETUP_RESPONSE,
        NgSetupResponse::parse,
    );
}

/// NG SETUP FAILURE with misc unknown-PLMN-or-SNPN: unsuccessfulOutcome `40`, one IE,
/// Cause (15, ignore): Cause has 6 alternatives (choice-Extensions included, no
/// marker), misc = 4 in 3 bits `100`, then CauseMisc extension bit 0 and
/// unknown-PLMN-or-SNPN = 4 in 3 bits: `1000 1000` = `88`.
#[test]
fn ng_setup_failure_matches_hand_derived_octets() {
    let f = NgSetupFailure::new(MiscCause::UnknownPlmnOrSnpn);
    assert_octets(
        &f,
        f.encode().unwrap(),
        "40150008 000001 000f400188",
        NgSetupFailure::parse,
    );

    // Time To Wait (107, ignore) v5s: extension bit, index 2 in 3 bits = `20`.
    let f = NgSetupFailure {
        time_to_wait: Some(TimeToWait::V5s),
        ..NgSetupFailure::new(MiscCause::Unspecified)
    };
    // misc (100), extension bit 0, unspecified = 5 (101): `1000 1010` = `8a`.
    let want = "4015000d 000002 000f40018a 006b400120";
    assert_octets(&f, f.encode().unwrap(), want, NgSetupFailure::parse);
}

/// ERROR INDICATION with protocol transfer-syntax-error: protocol = 3 (`011`),
/// extension bit 0, index 0 (`000`), pad: `0110 0000` = `60`; procedure 9 is of
/// criticality ignore (`40`).
#[test]
fn error_indication_matches_hand_derived_octets() {
    let ei = ErrorIndication::new(ProtocolCause::TransferSyntaxError);
    assert_octets(
        &ei,
        ei.encode().unwrap(),
        "00094008 000001 000f400160",
        ErrorIndication::parse,
    );
}

#[test]
fn every_builder_round_trips() {
    let diag = CriticalityDiagnostics {
        procedure_code: Some(21),
        triggering_message: Some(Direction::InitiatingMessage),
        procedure_criticality: Some(ngap::Criticality::Reject),
        ies: vec![IeDiagnostic {
            criticality: ngap::Criticality::Reject,
            id: 27,
            type_of_error: TypeOfError::Missing,
        }],
    };
    let three_digit = Plmn::new("310", "410").unwrap();
    let req = NgSetupRequest {
        global_ran_node_id: GlobalRanNodeId::gnb(three_digit, GnbId::new(u32::MAX, 32).unwrap()),
        ran_node_name: None,
        supported_tas: vec![
            SupportedTa {
                tac: Tac::new(0xffffff).unwrap(),
                broadcast_plmns: vec![
                    BroadcastPlmn {
                        plmn: three_digit,
                        slices: vec![Snssai::new(2, Some(0xabcdef)).unwrap(), defaults::SNSSAI],
                    },
                    BroadcastPlmn {
                        plmn: defaults::PLMN,
                        slices: vec![defaults::SNSSAI],
                    },
                ],
            },
            SupportedTa {
                tac: defaults::TAC,
                broadcast_plmns: vec![BroadcastPlmn {
                    plmn: defaults::PLMN,
                    slices: vec![defaults::SNSSAI],
                }],
            },
        ],
        default_paging_drx: Some(PagingDrx::V32),
    };
    let back = NgSetupRequest::parse(&ngap::decode(&req.encode().unwrap()).unwrap()).unwrap();
    assert_eq!(back, req);

    let rsp = NgSetupResponse {
        criticality_diagnostics: Some(CriticalityDiagnostics {
            procedure_code: None,
            triggering_message: None,
            ..diag.clone()
        }),
        served_guamis: vec![
            defaults::GUAMI,
            Guami::new(three_digit, 0xff, 1023, 63).unwrap(),
        ],
        ..default_response()
    };
    let back = NgSetupResponse::parse(&ngap::decode(&rsp.encode().unwrap()).unwrap()).unwrap();
    assert_eq!(back, rsp);

    let fail = NgSetupFailure {
        cause: Cause::Protocol(ProtocolCause::AbstractSyntaxErrorReject),
        time_to_wait: Some(TimeToWait::V60s),
        criticality_diagnostics: Some(diag.clone()),
    };
    let back = NgSetupFailure::parse(&ngap::decode(&fail.encode().unwrap()).unwrap()).unwrap();
    assert_eq!(back, fail);

    let ei = ErrorIndication {
        amf_ue_ngap_id: Some((1 << 40) - 1),
        ran_ue_ngap_id: Some(u32::MAX),
        cause: Some(Cause::Misc(MiscCause::Unspecified)),
        criticality_diagnostics: Some(diag),
    };
    let back = ErrorIndication::parse(&ngap::decode(&ei.encode().unwrap()).unwrap()).unwrap();
    assert_eq!(back, ei);
    assert!(ErrorIndication {
        amf_ue_ngap_id: Some(1 << 40),
        ..ErrorIndication::default()
    }
    .encode()
    .is_err());
}

#[test]
fn values_outside_their_constraints_do_not_encode() {
    // AMF Name is 1..150 characters: empty does not encode.
    let empty_name = NgSetupResponse {
        amf_name: String::new(),
        ..default_response()
    };
    assert!(empty_name.encode().is_err());
    let long_name = NgSetupResponse {
        amf_name: "a".repeat(151),
        ..default_response()
    };
    assert!(long_name.encode().is_err());
    let odd_name = NgSetupRequest {
        ran_node_name: Some("gnb_1".into()),
        ..default_request()
    };
    assert!(odd_name.encode().is_err());
    // A Supported TA List has at least one item.
    let no_ta = NgSetupRequest {
        supported_tas: vec![],
        ..default_request()
    };
    assert!(no_ta.encode().is_err());
    // Public fields can hold out-of-range values; encoding checks them.
    let wide = NgSetupResponse {
        served_guamis: vec![Guami {
            amf_set_id: 1024,
            ..defaults::GUAMI
        }],
        ..default_response()
    };
    assert!(wide.encode().is_err());
    assert!(NgSetupFailure::new(Cause::Unknown).encode().is_err());
}

/// The PacketRusher request without its Global RAN Node ID, cut by hand: the 12 octets
/// of IE 27 removed, the IE count 4 → 3 and the open type length 0x3a → 0x2e.
const REQUEST_WITHOUT_GLOBAL_RAN_NODE_ID: &str =
    "0015002e0000030052400e05805061636b65745275736865720066001000000000010002f839000010080102030015400140";

#[test]
fn missing_mandatory_ie_is_an_abstract_syntax_error_reject() {
    let pdu = ngap::decode(&hex(REQUEST_WITHOUT_GLOBAL_RAN_NODE_ID)).unwrap();
    assert_eq!(pdu.kind(), MessageKind::NgSetupRequest);
    // TS 38.413 §10.3.5: mandatory, criticality reject, missing.
    let fault = pdu.check().unwrap().unwrap();
    assert_eq!(fault.cause, ProtocolCause::AbstractSyntaxErrorReject);
    assert!(fault.rejects());
    assert_eq!(
        fault.ies,
        vec![IeDiagnostic {
            criticality: ngap::Criticality::Reject,
            id: ngap::ie_id::GLOBAL_RAN_NODE_ID,
            type_of_error: TypeOfError::Missing
        }]
    );
    let err = NgSetupRequest::parse(&pdu).unwrap_err();
    assert_eq!(
        err,
        ParseError::MissingIe {
            id: 27,
            criticality: ngap::Criticality::Reject
        }
    );
    assert_eq!(err.fault().unwrap().ies, fault.ies);
    let d = pdu.diagnostics_for_response(&fault.ies);
    assert_eq!(d.procedure_code, None);
    assert_eq!(d.procedure_criticality, Some(ngap::Criticality::Reject));
}

#[test]
fn missing_ignore_ie_is_ignored() {
    // Default Paging DRX is mandatory but of criticality ignore (§10.3.5: go on).
    let req = NgSetupRequest {
        default_paging_drx: None,
        ..default_request()
    };
    let pdu = ngap::decode(&req.encode().unwrap()).unwrap();
    assert_eq!(pdu.check().unwrap(), None);
    assert_eq!(NgSetupRequest::parse(&pdu).unwrap(), req);
}

#[test]
fn wrong_message_is_reported() {
    let pdu = ngap::decode(&hex(OPEN5GS_NG_SETUP_RESPONSE)).unwrap();
    assert_wrong_message(NgSetupRequest::parse(&pdu));
    assert_wrong_message(ErrorIndication::parse(&pdu));
}

#[test]
fn an_undecodable_ie_value_is_a_transfer_syntax_error() {
    // PacketRusher's request with the Supported TA List's value cut to garbage of the
    // same length: the container is fine, IE 102's value is not.
    let mut bytes = hex(PACKETRUSHER_NG_SETUP_REQUEST);
    let at = bytes
        .windows(4)
        .position(|w| w == [0x00, 0x66, 0x00, 0x10])
        .unwrap();
    for b in &mut bytes[at + 4..at + 20] {
        *b = 0xff;
    }
    let pdu = ngap::decode(&bytes).unwrap();
    let err = NgSetupRequest::parse(&pdu).unwrap_err();
    assert!(
        matches!(err, ParseError::UndecodableIe { id: 102, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.fault().unwrap().cause,
        ProtocolCause::TransferSyntaxError
    );
}

#[test]
fn every_prefix_and_bit_flip_of_real_pdus_is_handled() {
    for v in [
        PACKETRUSHER_NG_SETUP_REQUEST,
        OPEN5GS_NG_SETUP_RESPONSE,
        FREE5GC_NG_SETUP_RESPONSE,
        FREE5GC_ERROR_INDICATION,
        OPEN5GS_ERROR_INDICATION,
        DEFAULT_NG_SETUP_REQUEST,
    ] {
        let bytes = hex(v);
        for_each_prefix_and_bit_flip(&bytes, exercise);
    }
    exercise(&[]);
}

fn exercise(bytes: &[u8]) {
    let Ok(pdu) = ngap::decode(bytes) else {
        return;
    };
    let _ = pdu.check();
    let _ = pdu.ue_ngap_ids();
    let _ = pdu.kind();
    if let Err(e) = NgSetupRequest::parse(&pdu) {
        let _ = e.fault();
    }
    let _ = NgSetupResponse::parse(&pdu);
    let _ = NgSetupFailure::parse(&pdu);
    let _ = ErrorIndication::parse(&pdu);
    let _ = ngap::encode(&pdu);
}

/// Non-UE-associated PDUs: `ngap::peek` names the message as the full decode does and
/// reads no UE ids; the runtime hands them to the association's NG Setup handler.
#[test]
fn peek_names_non_ue_messages_like_the_decode() {
    for v in [
        PACKETRUSHER_NG_SETUP_REQUEST,
        OPEN5GS_NG_SETUP_RESPONSE,
        FREE5GC_NG_SETUP_RESPONSE,
        FREE5GC_ERROR_INDICATION,
        OPEN5GS_ERROR_INDICATION,
    ] {
        let bytes = hex(v);
        let pdu = ngap::decode(&bytes).unwrap();
        let p = ngap::peek(&bytes).unwrap();
        assert_eq!(
            (p.kind, p.procedure_code),
            (pdu.kind(), pdu.procedure_code())
        );
        assert!(!ngap::Peek::walks(p.kind));
        assert_eq!((p.amf_ue_ngap_id, p.ran_ue_ngap_id), (None, None));
        for n in 0..bytes.len() {
            assert!(ngap::peek(&bytes[..n]).is_err() || ngap::decode(&bytes[..n]).is_ok());
        }
    }
}
