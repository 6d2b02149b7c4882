//! Wireshark as an independent oracle: every PDU we build must dissect as the message
//! we meant, with no malformed packet or expert warning (an encoder checked only against
//! its own decoder can be wrong in the same way twice).
//! Skipped, with a note, where `tshark`/`text2pcap` are not installed.
#![allow(clippy::unwrap_used)]

mod common;

use common::wireshark_dissects;
use proto::ids::{defaults, GlobalRanNodeId, Plmn, Snssai};
use proto::ngap::{
    BroadcastPlmn, Cause, Criticality, CriticalityDiagnostics, Direction, ErrorIndication,
    IeDiagnostic, MiscCause, NgSetupFailure, NgSetupRequest, NgSetupResponse, PagingDrx,
    PlmnSupport, ProtocolCause, SupportedTa, TimeToWait, TypeOfError,
};

fn pdus() -> Vec<(&'static str, Vec<u8>)> {
    let three_digit = Plmn::new("310", "410").unwrap();
    let request = NgSetupRequest {
        global_ran_node_id: GlobalRanNodeId::gnb(defaults::PLMN, defaults::GNB_ID),
        ran_node_name: Some(defaults::GNB_NAME.into()),
        supported_tas: vec![SupportedTa {
            tac: defaults::TAC,
            broadcast_plmns: vec![
                BroadcastPlmn {
                    plmn: defaults::PLMN,
                    slices: vec![defaults::SNSSAI],
                },
                BroadcastPlmn {
                    plmn: three_digit,
                    slices: vec![Snssai::new(2, Some(0xabcdef)).unwrap()],
                },
            ],
        }],
        default_paging_drx: Some(PagingDrx::V128),
    };
    let notify = CriticalityDiagnostics {
        procedure_code: None,
        triggering_message: None,
        procedure_criticality: Some(Criticality::Reject),
        ies: vec![IeDiagnostic {
            criticality: Criticality::Notify,
            id: 65000,
            type_of_error: TypeOfError::NotUnderstood,
        }],
    };
    let response = NgSetupResponse {
        amf_name: defaults::AMF_NAME.into(),
        served_guamis: vec![defaults::GUAMI],
        relative_amf_capacity: defaults::RELATIVE_AMF_CAPACITY,
        plmn_support: vec![PlmnSupport {
            plmn: defaults::PLMN,
            slices: vec![defaults::SNSSAI],
        }],
        criticality_diagnostics: Some(notify),
    };
    let failure = NgSetupFailure {
        cause: Cause::Protocol(ProtocolCause::AbstractSyntaxErrorReject),
        time_to_wait: Some(TimeToWait::V5s),
        criticality_diagnostics: Some(CriticalityDiagnostics {
            procedure_code: None,
            triggering_message: None,
            procedure_criticality: Some(Criticality::Reject),
            ies: vec![IeDiagnostic {
                criticality: Criticality::Reject,
                id: 27,
                type_of_error: TypeOfError::Missing,
            }],
        }),
    };
    let ei = ErrorIndication {
        amf_ue_ngap_id: Some(5),
        ran_ue_ngap_id: Some(1),
        cause: Some(Cause::Protocol(
            ProtocolCause::MessageNotCompatibleWithReceiverState,
        )),
        criticality_diagnostics: Some(CriticalityDiagnostics {
            procedure_code: Some(15),
            triggering_message: Some(Direction::InitiatingMessage),
            procedure_criticality: Some(Criticality::Ignore),
            ies: vec![],
        }),
    };
    vec![
        ("NGSetupRequest", request.encode().unwrap()),
        ("NGSetupResponse", response.encode().unwrap()),
        ("NGSetupFailure", failure.encode().unwrap()),
        (
            "NGSetupFailure",
            NgSetupFailure::new(MiscCause::UnknownPlmnOrSnpn)
                .encode()
                .unwrap(),
        ),
        ("ErrorIndication", ei.encode().unwrap()),
        (
            "ErrorIndication",
            ErrorIndication::new(ProtocolCause::TransferSyntaxError)
                .encode()
                .unwrap(),
        ),
    ]
}

#[test]
fn wireshark_dissects_every_pdu_we_build() {
    let Some(verbose) = wireshark_dissects(&pdus(), "ngap") else {
        return;
    };
    // Wireshark reads the 3-digit MNC as we wrote it (TS 38.413 §9.3.3.5 order).
    assert!(verbose.contains("(410)"), "{verbose}");
}
