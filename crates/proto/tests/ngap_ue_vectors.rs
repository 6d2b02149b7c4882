//! UE-associated NGAP messages of registration: PDUs other implementations sent
//! (captures in the test fixtures of oxirush-ngap 0.5.0, from lab runs of free5GC v4.2.3
//! and PacketRusher), every builder round trip, and faulty PDUs.
#![allow(clippy::unwrap_used)]

use proto::ids::{defaults, Snssai, Tac, Tai};
use proto::nas::{
    self, AuthenticationRequest, AuthenticationResponse, NasMessage, Ngksi, RegistrationAccept,
    RegistrationRequest, RegistrationType, STmsi, SecurityModeCommand, UeSecurityCapability,
};
use proto::ngap::{
    self, Cause, Criticality, DownlinkNasTransport, ErrorIndication, IeDiagnostic,
    InitialContextSetupFailure, InitialContextSetupRequest, InitialContextSetupResponse,
    InitialUeMessage, MessageKind, NasNonDeliveryIndication, NrCgi, ParseError, ProtocolCause,
    RadioNetworkCause, RrcEstablishmentCause, TypeOfError, UeAmbr, UeContextReleaseCommand,
    UeContextReleaseComplete, UeContextReleaseRequest, UeNgapIds, UeSecurityCapabilities,
    UplinkNasTransport, UserLocation,
};
use security::Kgnb;

mod common;

use common::{
    assert_wrong_message, captured, for_each_prefix_and_bit_flip, hex, plmn_208_93,
    wireshark_dissects,
};

/// InitialUEMessage sent by PacketRusher: a REGISTRATION REQUEST with a null-scheme SUCI.
const PR_INITIAL_UE_MESSAGE: &str = "000f404200000500550002000100260018177e004179000d0102f8390000000000000000102e0220200079000f4002f839000008000002f839000001005a4001180070400100";
/// UplinkNASTransport sent by PacketRusher: an AUTHENTICATION RESPONSE.
const PR_UPLINK_AUTH_RESPONSE: &str = "002e403c000004000a0002000100550002000100260016157e00572d10fc5764060459a2f6ab8f41d630bdaca20079400f4002f839000008000002f839000001";
/// InitialContextSetupResponse sent by PacketRusher.
const PR_ICS_RESPONSE: &str = "200e000f000002000a00020001005500020001";
/// UEContextReleaseComplete sent by PacketRusher.
const PR_RELEASE_COMPLETE: &str = "2029000f000002000a40020001005540020001";
/// DownlinkNASTransport sent by free5GC: an AUTHENTICATION REQUEST.
const F5GC_DL_AUTH_REQUEST: &str = "0004403e000003000a000200010055000200000026002b2a7e00560002000021cd5c5af5444d91e369196d063119dbe820105fc2be10849080001296434701604095";
/// DownlinkNASTransport sent by free5GC: a SECURITY MODE COMMAND, integrity protected
/// with the new context.
const F5GC_DL_SMC: &str =
    "00044027000003000a0002000100550002000000260014137e03cfac058a007e005d2200022020e1360102";
/// DownlinkNASTransport sent by free5GC: an AUTHENTICATION REJECT.
const F5GC_DL_AUTH_REJECT: &str = "00044017000003000a0002000600550002000000260004037e0058";
/// InitialContextSetupRequest sent by free5GC, with a protected REGISTRATION ACCEPT.
const F5GC_ICS_REQUEST: &str = "000e0080a0000009000a00020001005500020000001c00070002f839cafe0000000005020101020300770009080004000000000000005e00205aee4061f9eaa8c6e8a2c22a02fd741ed9d0c8c59b2a7885672a2775f2f44bdb002440040002f839002240088609720200ffff0100264034337e029697855301e48857409cf124d617184068507f7fd6e4f5a38d2c6c2204a5ce35c1a65a981ef5f4a42304827a96b809e101";
/// UEContextReleaseCommand sent by free5GC: the ID pair, radioNetwork user-inactivity.
const F5GC_RELEASE_COMMAND: &str = "002900110000020072000400010000000f40020500";
/// F5GC_DL_AUTH_REJECT with its NAS-PDU IE removed: the IE count 3 → 2 and the open
/// type length 0x17 → 0x0f.
const DL_WITHOUT_NAS_PDU: &str = "0004400f000002000a00020006005500020000";

#[test]
fn packetrusher_initial_ue_message_parses_and_reencodes() {
    let (bytes, pdu) = captured(PR_INITIAL_UE_MESSAGE, MessageKind::InitialUeMessage);
    assert_eq!(pdu.check().unwrap(), None);
    let m = InitialUeMessage::parse(&pdu).unwrap();
    assert_eq!(m.ran_ue_ngap_id, 1);
    assert_eq!(
        m.rrc_establishment_cause,
        Some(RrcEstablishmentCause::MoSignalling)
    );
    assert!(m.ue_context_requested);
    assert_eq!(m.five_g_s_tmsi, None);
    let UserLocation::Nr { nr_cgi, tai } = m.user_location else {
        panic!("{:?}", m.user_location)
    };
    assert_eq!(nr_cgi.plmn, plmn_208_93());
    // NR Cell Identity 0000 0800 0 (36 bits): gNB 000008 of 24 bits, cell 0.
    assert_eq!(nr_cgi.cell_id, 0x0_0000_8000);
    assert_eq!(tai.tac, Tac::new(1).unwrap());
    assert_eq!(m.encode().unwrap(), bytes);

    // The NAS inside: an initial registration with a null-scheme SUCI.
    let reg = RegistrationRequest::parse(&m.nas_pdu).unwrap();
    assert_eq!(reg.registration_type, RegistrationType::Initial);
    assert!(reg.follow_on_request);
    assert_eq!(reg.ngksi, Ngksi::NO_KEY);
    let nas::MobileIdentity::Suci(suci) = &reg.mobile_identity else {
        panic!("{:?}", reg.mobile_identity)
    };
    assert_eq!(suci.plmn, plmn_208_93());
    assert_eq!(suci.scheme, nas::ProtectionScheme::Null);
    assert_eq!(suci.output, nas::SchemeOutput::Msin("0000000001".into()));
    let caps = reg.ue_security_capability.unwrap();
    assert!(caps.supports_nea(nas::CipheringAlgorithm::Nea2));
    assert!(caps.supports_nia(nas::IntegrityAlgorithm::Nia2));
    assert_eq!(reg.encode().unwrap(), m.nas_pdu);
}

#[test]
fn packetrusher_uplink_and_outcomes_parse_and_reencode() {
    let (bytes, pdu) = captured(PR_UPLINK_AUTH_RESPONSE, MessageKind::UplinkNasTransport);
    let m = UplinkNasTransport::parse(&pdu).unwrap();
    assert_eq!((m.amf_ue_ngap_id, m.ran_ue_ngap_id), (1, 1));
    assert!(matches!(m.user_location, Some(UserLocation::Nr { .. })));
    assert_eq!(m.encode().unwrap(), bytes);
    let res = AuthenticationResponse::parse(&m.nas_pdu).unwrap();
    assert_eq!(res.res_star[..2], [0xfc, 0x57]);
    assert_eq!(res.encode().unwrap(), m.nas_pdu);

    let (bytes, pdu) = captured(PR_ICS_RESPONSE, MessageKind::InitialContextSetupResponse);
    let m = InitialContextSetupResponse::parse(&pdu).unwrap();
    assert_eq!((m.amf_ue_ngap_id, m.ran_ue_ngap_id), (1, 1));
    // PacketRusher sends the IDs of the response with criticality reject where the
    // object set says ignore (§9.2.2.2); we send the specification's, so the octets
    // differ in those two criticality fields alone.
    let ours = m.encode().unwrap();
    let differ: Vec<usize> = (0..bytes.len()).filter(|i| bytes[*i] != ours[*i]).collect();
    assert_eq!(differ, [9, 15]);
    assert_eq!((ours[9], ours[15]), (0x40, 0x40));

    let (bytes, pdu) = captured(PR_RELEASE_COMPLETE, MessageKind::UeContextReleaseComplete);
    let m = UeContextReleaseComplete::parse(&pdu).unwrap();
    assert_eq!((m.amf_ue_ngap_id, m.ran_ue_ngap_id), (1, 1));
    assert_eq!(m.encode().unwrap(), bytes);
}

#[test]
fn free5gc_downlink_messages_parse_and_reencode() {
    let (bytes, pdu) = captured(F5GC_DL_AUTH_REQUEST, MessageKind::DownlinkNasTransport);
    let m = DownlinkNasTransport::parse(&pdu).unwrap();
    assert_eq!((m.amf_ue_ngap_id, m.ran_ue_ngap_id), (1, 0));
    assert_eq!(m.encode().unwrap(), bytes);
    let auth = AuthenticationRequest::parse(&m.nas_pdu).unwrap();
    assert_eq!(auth.ngksi, Ngksi::native(0));
    assert_eq!(auth.abba, [0, 0]);
    assert_eq!(auth.rand[..3], [0xcd, 0x5c, 0x5a]);
    assert_eq!(auth.autn[..3], [0x5f, 0xc2, 0xbe]);
    assert_eq!(auth.encode().unwrap(), m.nas_pdu);

    let bytes = hex(F5GC_DL_SMC);
    let m = DownlinkNasTransport::parse(&ngap::decode(&bytes).unwrap()).unwrap();
    assert_eq!(m.encode().unwrap(), bytes);
    // Security header type 3: the plain SECURITY MODE COMMAND follows the 7 octets.
    assert_eq!(m.nas_pdu[1], 3);
    assert_eq!(NasMessage::parse(&m.nas_pdu), Err(nas::NasError::Protected));
    let smc = SecurityModeCommand::parse(&m.nas_pdu[7..]).unwrap();
    assert_eq!(smc.nia, nas::IntegrityAlgorithm::Nia2);
    assert_eq!(smc.nea, nas::CipheringAlgorithm::Nea2);
    assert!(smc.imeisv_request);
    assert!(
        smc.additional_security_information
            .unwrap()
            .retransmit_initial_message
    );
    assert_eq!(smc.encode().unwrap(), m.nas_pdu[7..]);

    let m = DownlinkNasTransport::parse(&ngap::decode(&hex(F5GC_DL_AUTH_REJECT)).unwrap()).unwrap();
    assert!(matches!(
        NasMessage::parse(&m.nas_pdu).unwrap(),
        NasMessage::AuthenticationReject(_)
    ));
}

#[test]
fn free5gc_initial_context_setup_request_parses() {
    let pdu = ngap::decode(&hex(F5GC_ICS_REQUEST)).unwrap();
    assert_eq!(pdu.kind(), MessageKind::InitialContextSetupRequest);
    assert_eq!(pdu.check().unwrap(), None);
    let m = InitialContextSetupRequest::parse(&pdu).unwrap();
    assert_eq!((m.amf_ue_ngap_id, m.ran_ue_ngap_id), (1, 0));
    assert_eq!(m.guami.plmn, plmn_208_93());
    assert_eq!(m.guami.amf_region_id, 0xca);
    assert_eq!(m.allowed_nssai[0].sst, 1);
    assert_eq!(m.ue_security_capabilities.nr_encryption, 0x8000 >> 1);
    assert_eq!(m.security_key.as_bytes()[..2], [0x5a, 0xee]);
    assert_eq!(m.nas_pdu.as_ref().unwrap()[..2], [0x7e, 0x02]);
    // Re-encoded without the IEs this layer does not keep, it still reads the same.
    let again = InitialContextSetupRequest::parse(&ngap::decode(&m.encode().unwrap()).unwrap());
    assert_eq!(again.unwrap(), m);
}

#[test]
fn free5gc_release_command_parses_and_reencodes() {
    let (bytes, pdu) = captured(F5GC_RELEASE_COMMAND, MessageKind::UeContextReleaseCommand);
    let m = UeContextReleaseCommand::parse(&pdu).unwrap();
    assert_eq!(m.ue_ngap_ids, UeNgapIds::Pair { amf: 1, ran: 0 });
    assert_eq!(
        m.cause,
        Cause::RadioNetwork(RadioNetworkCause::UserInactivity)
    );
    assert_eq!(m.encode().unwrap(), bytes);
}

fn registration_accept() -> Vec<u8> {
    RegistrationAccept {
        result: nas::RegistrationResult {
            access: nas::AccessType::ThreeGpp,
            sms_allowed: false,
        },
        guti: Some(nas::Guti {
            plmn: defaults::PLMN,
            amf_region: defaults::AMF_REGION_ID,
            amf_set: defaults::AMF_SET_ID,
            amf_pointer: defaults::AMF_POINTER,
            tmsi: 0x0100_0001,
        }),
        tai_list: vec![defaults::TAI],
        allowed_nssai: vec![defaults::SNSSAI],
        t3512: Some(nas::TimerValue::Seconds(3600)),
        t3502: None,
    }
    .encode()
    .unwrap()
}

fn location() -> UserLocation {
    UserLocation::Nr {
        nr_cgi: NrCgi {
            plmn: defaults::PLMN,
            cell_id: 0x0_0000_0010,
        },
        tai: defaults::TAI,
    }
}

/// One of each message, with every optional IE.
pub fn every_message() -> Vec<(&'static str, Vec<u8>)> {
    let caps = UeSecurityCapability::ALL;
    let initial = InitialUeMessage {
        ran_ue_ngap_id: 7,
        nas_pdu: RegistrationRequest {
            registration_type: RegistrationType::Initial,
            follow_on_request: true,
            ngksi: Ngksi::NO_KEY,
            mobile_identity: nas::MobileIdentity::Suci(nas::Suci {
                plmn: defaults::PLMN,
                routing_indicator: "0".into(),
                scheme: nas::ProtectionScheme::Null,
                hn_key_id: 0,
                output: nas::SchemeOutput::Msin("0000000001".into()),
            }),
            ue_security_capability: Some(caps),
            requested_nssai: Some(vec![defaults::SNSSAI]),
            last_visited_tai: None,
            nas_message_container: None,
        }
        .encode()
        .unwrap(),
        user_location: location(),
        rrc_establishment_cause: Some(RrcEstablishmentCause::MoSignalling),
        five_g_s_tmsi: Some(STmsi {
            amf_set: 0x3ff,
            amf_pointer: 0x3f,
            tmsi: 0xdead_beef,
        }),
        ue_context_requested: true,
    };
    let ids = (0xff_ffff_ffff_u64, u32::MAX);
    let dl = DownlinkNasTransport {
        amf_ue_ngap_id: ids.0,
        ran_ue_ngap_id: ids.1,
        nas_pdu: registration_accept(),
    };
    let ul = UplinkNasTransport {
        amf_ue_ngap_id: 1,
        ran_ue_ngap_id: 7,
        nas_pdu: nas::RegistrationComplete.encode().unwrap(),
        user_location: Some(location()),
    };
    let non_delivery = NasNonDeliveryIndication {
        amf_ue_ngap_id: 1,
        ran_ue_ngap_id: 7,
        nas_pdu: registration_accept(),
        cause: Cause::RadioNetwork(RadioNetworkCause::HandoverCancelled),
    };
    let ics = InitialContextSetupRequest {
        amf_ue_ngap_id: 1,
        ran_ue_ngap_id: 7,
        ue_ambr: Some(UeAmbr {
            dl: 1_000_000_000,
            ul: 500_000_000,
        }),
        guami: defaults::GUAMI,
        allowed_nssai: vec![defaults::SNSSAI, Snssai::new(2, Some(0xabcdef)).unwrap()],
        ue_security_capabilities: UeSecurityCapabilities::from_nas(&caps),
        security_key: Kgnb::from_bytes(&[0x5a; 32]),
        nas_pdu: Some(registration_accept()),
    };
    let ics_response = InitialContextSetupResponse {
        amf_ue_ngap_id: 1,
        ran_ue_ngap_id: 7,
    };
    let ics_failure = InitialContextSetupFailure {
        amf_ue_ngap_id: 1,
        ran_ue_ngap_id: 7,
        cause: Cause::RadioNetwork(RadioNetworkCause::Unspecified),
        criticality_diagnostics: None,
    };
    let release_request = UeContextReleaseRequest {
        amf_ue_ngap_id: 1,
        ran_ue_ngap_id: 7,
        cause: Cause::RadioNetwork(RadioNetworkCause::UserInactivity),
    };
    let release_pair = UeContextReleaseCommand {
        ue_ngap_ids: UeNgapIds::Pair { amf: 1, ran: 7 },
        cause: Cause::RadioNetwork(RadioNetworkCause::UserInactivity),
    };
    let release_amf = UeContextReleaseCommand {
        ue_ngap_ids: UeNgapIds::Amf(1),
        cause: Cause::Nas(ngap::NasCause::Deregister),
    };
    let release_complete = UeContextReleaseComplete {
        amf_ue_ngap_id: 1,
        ran_ue_ngap_id: 7,
    };
    let ei = ErrorIndication::for_ue(
        Some(1),
        Some(7),
        ProtocolCause::MessageNotCompatibleWithReceiverState,
    );
    vec![
        ("InitialUEMessage", initial.encode().unwrap()),
        ("DownlinkNASTransport", dl.encode().unwrap()),
        ("UplinkNASTransport", ul.encode().unwrap()),
        ("NASNonDeliveryIndication", non_delivery.encode().unwrap()),
        ("InitialContextSetupRequest", ics.encode().unwrap()),
        (
            "InitialContextSetupResponse",
            ics_response.encode().unwrap(),
        ),
        ("InitialContextSetupFailure", ics_failure.encode().unwrap()),
        ("UEContextReleaseRequest", release_request.encode().unwrap()),
        ("UEContextReleaseCommand", release_pair.encode().unwrap()),
        ("UEContextReleaseCommand", release_amf.encode().unwrap()),
        (
            "UEContextReleaseComplete",
            release_complete.encode().unwrap(),
        ),
        ("ErrorIndication", ei.encode().unwrap()),
    ]
}

#[test]
fn every_builder_round_trips() {
    for (name, bytes) in every_message() {
        let pdu = ngap::decode(&bytes).unwrap();
        assert_eq!(pdu.check().unwrap(), None, "{name}");
        assert_eq!(ngap::encode(&pdu).unwrap(), bytes, "{name}");
        let again = match pdu.kind() {
            MessageKind::InitialUeMessage => InitialUeMessage::parse(&pdu).unwrap().encode(),
            MessageKind::DownlinkNasTransport => {
                DownlinkNasTransport::parse(&pdu).unwrap().encode()
            }
            MessageKind::UplinkNasTransport => UplinkNasTransport::parse(&pdu).unwrap().encode(),
            MessageKind::NasNonDeliveryIndication => {
                NasNonDeliveryIndication::parse(&pdu).unwrap().encode()
            }
            MessageKind::InitialContextSetupRequest => {
                InitialContextSetupRequest::parse(&pdu).unwrap().encode()
            }
            MessageKind::InitialContextSetupResponse => {
                InitialContextSetupResponse::parse(&pdu).unwrap().encode()
            }
            MessageKind::InitialContextSetupFailure => {
                InitialContextSetupFailure::parse(&pdu).unwrap().encode()
            }
            MessageKind::UeContextReleaseRequest => {
                UeContextReleaseRequest::parse(&pdu).unwrap().encode()
            }
            MessageKind::UeContextReleaseCommand => {
                UeContextReleaseCommand::parse(&pdu).unwrap().encode()
            }
            MessageKind::UeContextReleaseComplete => {
                UeContextReleaseComplete::parse(&pdu).unwrap().encode()
            }
            MessageKind::ErrorIndication => ErrorIndication::parse(&pdu).unwrap().encode(),
            k => panic!("{name}: {k:?}"),
        };
        assert_eq!(again.unwrap(), bytes, "{name}");
        assert!(name
            .to_lowercase()
            .starts_with(&pdu.procedure_name().to_lowercase()[..6]));
    }
}

#[test]
fn ids_and_values_outside_their_constraints_do_not_encode() {
    let dl = DownlinkNasTransport {
        amf_ue_ngap_id: 1 << 40,
        ran_ue_ngap_id: 0,
        nas_pdu: vec![0x7e],
    };
    assert!(dl.encode().is_err());
    let mut ul = UplinkNasTransport {
        amf_ue_ngap_id: 1,
        ran_ue_ngap_id: 0,
        nas_pdu: vec![0x7e],
        user_location: Some(UserLocation::Nr {
            nr_cgi: NrCgi {
                plmn: defaults::PLMN,
                cell_id: 1 << 36,
            },
            tai: Tai {
                plmn: defaults::PLMN,
                tac: defaults::TAC,
            },
        }),
    };
    assert!(ul.encode().is_err());
    ul.user_location = Some(UserLocation::Other);
    assert!(ul.encode().is_err());
    let release = UeContextReleaseCommand {
        ue_ngap_ids: UeNgapIds::Amf(1),
        cause: Cause::Unknown,
    };
    assert!(release.encode().is_err());
}

#[test]
fn missing_nas_pdu_is_an_abstract_syntax_error_reject() {
    let pdu = ngap::decode(&hex(DL_WITHOUT_NAS_PDU)).unwrap();
    assert_eq!(pdu.kind(), MessageKind::DownlinkNasTransport);
    let fault = pdu.check().unwrap().unwrap();
    assert_eq!(fault.cause, ProtocolCause::AbstractSyntaxErrorReject);
    let missing = vec![IeDiagnostic {
        criticality: Criticality::Reject,
        id: ngap::ie_id::NAS_PDU,
        type_of_error: TypeOfError::Missing,
    }];
    assert_eq!(fault.ies, missing);
    let err = DownlinkNasTransport::parse(&pdu).unwrap_err();
    assert_eq!(
        err,
        ParseError::MissingIe {
            id: ngap::ie_id::NAS_PDU,
            criticality: Criticality::Reject
        }
    );
    assert_eq!(err.fault().unwrap().ies, missing);
    // The ERROR INDICATION that answers it carries the IDs (§8.7.4.2).
    assert_eq!(pdu.ue_ngap_ids(), (Some(6), Some(0)));
}

#[test]
fn wrong_message_is_reported() {
    let pdu = ngap::decode(&hex(F5GC_DL_AUTH_REQUEST)).unwrap();
    assert_wrong_message(UplinkNasTransport::parse(&pdu));
    assert_wrong_message(InitialUeMessage::parse(&pdu));
}

#[test]
fn every_prefix_and_bit_flip_of_real_pdus_is_handled() {
    for v in [
        PR_INITIAL_UE_MESSAGE,
        PR_UPLINK_AUTH_RESPONSE,
        PR_ICS_RESPONSE,
        F5GC_DL_SMC,
        F5GC_ICS_REQUEST,
        F5GC_RELEASE_COMMAND,
    ] {
        let bytes = hex(v);
        for_each_prefix_and_bit_flip(&bytes, exercise);
    }
}

fn exercise(bytes: &[u8]) {
    let Ok(pdu) = ngap::decode(bytes) else {
        return;
    };
    let _ = pdu.check();
    if let Ok(m) = InitialUeMessage::parse(&pdu) {
        let _ = NasMessage::parse(&m.nas_pdu);
    }
    if let Ok(m) = UplinkNasTransport::parse(&pdu) {
        let _ = NasMessage::parse(&m.nas_pdu);
    }
    if let Ok(m) = DownlinkNasTransport::parse(&pdu) {
        let _ = NasMessage::parse(&m.nas_pdu);
    }
    let _ = InitialContextSetupRequest::parse(&pdu);
    let _ = InitialContextSetupResponse::parse(&pdu);
    let _ = UeContextReleaseCommand::parse(&pdu);
}

/// Wireshark as an independent oracle (an encoder checked only against its own decoder can
/// be wrong in the same way twice): each PDU dissects as
/// the message meant, NGAP and the NAS-5GS inside, with no malformed packet and no
/// expert info. Skipped, with a note, where `tshark`/`text2pcap` are not installed.
#[test]
fn wireshark_dissects_every_ue_pdu() {
    let mut pdus = every_message();
    // A DOWNLINK NAS TRANSPORT of an integrity-protected SECURITY MODE COMMAND.
    let mut ctx = nas::NasSecurityContext::new(
        Ngksi::native(0),
        security::KnasInt::from_bytes(&[1; 16]),
        security::KnasEnc::from_bytes(&[2; 16]),
        nas::IntegrityAlgorithm::Nia2,
        nas::CipheringAlgorithm::Nea2,
    );
    let smc = SecurityModeCommand {
        nia: nas::IntegrityAlgorithm::Nia2,
        nea: nas::CipheringAlgorithm::Nea2,
        ngksi: Ngksi::native(0),
        replayed_ue_security_capability: UeSecurityCapability::ALL,
        imeisv_request: true,
        additional_security_information: Some(nas::AdditionalSecurityInformation {
            retransmit_initial_message: true,
            horizontal_derivation: false,
        }),
        abba: None,
    };
    let protected = ctx
        .protect(
            &smc.encode().unwrap(),
            nas::SecurityHeaderType::IntegrityProtectedNewContext,
            nas::Direction::Downlink,
        )
        .unwrap();
    let dl_smc = DownlinkNasTransport {
        amf_ue_ngap_id: 1,
        ran_ue_ngap_id: 7,
        nas_pdu: protected,
    };
    pdus.push(("DownlinkNASTransport", dl_smc.encode().unwrap()));
    let Some(verbose) = wireshark_dissects(&pdus, "ngap-ue") else {
        return;
    };
    // The NAS-5GS dissector ran on our NAS, plain and protected.
    for nas in [
        "Registration request",
        "Registration accept",
        "Registration complete",
        "Security mode command",
        "5G-GUTI",
        "Integrity protected with new 5GS security context",
    ] {
        assert!(
            verbose.contains(nas),
            "tshark does not show {nas:?}:\n{verbose}"
        );
    }
}

/// What `ngap::peek` reads equals what the full decode gives, on `bytes` the full decoder
/// accepts: the kind, the procedure code, the first UE NGAP IDs, the 5G-S-TMSI.
fn peek_agrees(bytes: &[u8]) {
    let Ok(pdu) = ngap::decode(bytes) else {
        return;
    };
    let p = ngap::peek(bytes).expect("peek reads what decode reads");
    assert_eq!(p.kind, pdu.kind());
    assert_eq!(p.procedure_code, pdu.procedure_code());
    if ngap::Peek::walks(p.kind) {
        assert_eq!((p.amf_ue_ngap_id, p.ran_ue_ngap_id), pdu.ue_ngap_ids());
        if let Ok(m) = InitialUeMessage::parse(&pdu) {
            assert_eq!(p.five_g_s_tmsi, m.five_g_s_tmsi);
        }
    } else {
        assert_eq!(
            (p.amf_ue_ngap_id, p.ran_ue_ngap_id, p.five_g_s_tmsi),
            (None, None, None)
        );
    }
}

#[test]
fn peek_reads_the_routing_fields_of_captured_pdus() {
    let p = ngap::peek(&hex(PR_INITIAL_UE_MESSAGE)).unwrap();
    assert_eq!(p.kind, MessageKind::InitialUeMessage);
    assert_eq!((p.ran_ue_ngap_id, p.five_g_s_tmsi), (Some(1), None));
    let p = ngap::peek(&hex(PR_UPLINK_AUTH_RESPONSE)).unwrap();
    assert_eq!(p.kind, MessageKind::UplinkNasTransport);
    assert_eq!((p.amf_ue_ngap_id, p.ran_ue_ngap_id), (Some(1), Some(1)));
    let p = ngap::peek(&hex(PR_ICS_RESPONSE)).unwrap();
    assert_eq!(p.kind, MessageKind::InitialContextSetupResponse);
    assert_eq!((p.amf_ue_ngap_id, p.ran_ue_ngap_id), (Some(1), Some(1)));
    let p = ngap::peek(&hex(PR_RELEASE_COMPLETE)).unwrap();
    assert_eq!(p.kind, MessageKind::UeContextReleaseComplete);
    // A downlink message: the kind only.
    let p = ngap::peek(&hex(F5GC_DL_AUTH_REQUEST)).unwrap();
    assert_eq!(p.kind, MessageKind::DownlinkNasTransport);
    assert_eq!(p.amf_ue_ngap_id, None);
    for v in [
        PR_INITIAL_UE_MESSAGE,
        PR_UPLINK_AUTH_RESPONSE,
        PR_ICS_RESPONSE,
        PR_RELEASE_COMPLETE,
        F5GC_DL_AUTH_REQUEST,
        F5GC_DL_SMC,
        F5GC_DL_AUTH_REJECT,
        F5GC_ICS_REQUEST,
        F5GC_RELEASE_COMMAND,
        DL_WITHOUT_NAS_PDU,
    ] {
        peek_agrees(&hex(v));
    }
}

#[test]
fn peek_agrees_with_the_decode_on_every_message_we_build() {
    let mut pdus = every_message();
    let setup = ngap::PduSessionResourceSetupResponse {
        amf_ue_ngap_id: 0x02_0000_0007,
        ran_ue_ngap_id: 9,
        setup: vec![ngap::PduSessionTransferItem {
            pdu_session_id: 1,
            transfer: vec![
                0x00, 0x03, 0xe0, 0x0a, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01,
            ],
        }],
        failed: Vec::new(),
    };
    pdus.push(("PDUSessionResourceSetupResponse", setup.encode().unwrap()));
    let release = ngap::PduSessionResourceReleaseResponse {
        amf_ue_ngap_id: 0xff_ffff_ffff,
        ran_ue_ngap_id: u32::MAX,
        released: vec![ngap::PduSessionTransferItem {
            pdu_session_id: 1,
            transfer: vec![0x00],
        }],
    };
    pdus.push((
        "PDUSessionResourceReleaseResponse",
        release.encode().unwrap(),
    ));
    let mut kinds = std::collections::BTreeSet::new();
    for (name, bytes) in &pdus {
        let p = ngap::peek(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        if ngap::Peek::walks(p.kind) {
            kinds.insert(format!("{:?}", p.kind));
            assert!(p.ran_ue_ngap_id.is_some(), "{name}");
        }
        peek_agrees(bytes);
    }
    // Every kind the AMF routes by its ids, built by our own encoders.
    assert_eq!(kinds.len(), 9, "{kinds:?}");
    let initial = pdus
        .iter()
        .find(|(n, _)| *n == "InitialUEMessage")
        .map(|(_, b)| ngap::peek(b).unwrap())
        .unwrap();
    assert!(initial.five_g_s_tmsi.is_some());
}

#[test]
fn peek_agrees_on_every_prefix_and_bit_flip() {
    let mut inputs: Vec<Vec<u8>> = [
        PR_INITIAL_UE_MESSAGE,
        PR_UPLINK_AUTH_RESPONSE,
        PR_ICS_RESPONSE,
        PR_RELEASE_COMPLETE,
        F5GC_RELEASE_COMMAND,
    ]
    .iter()
    .map(|v| hex(v))
    .collect();
    inputs.extend(every_message().into_iter().map(|(_, b)| b));
    for bytes in inputs {
        for_each_prefix_and_bit_flip(&bytes, peek_agrees);
    }
}
