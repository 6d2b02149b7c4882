//! The INITIAL UE MESSAGE (TS 38.413 §9.2.5.1) with an initial REGISTRATION REQUEST by
//! null-scheme SUCI (TS 24.501 §8.2.6) that the AMF's and the host's unit tests open a UE
//! with, written once so that each test names only what it is about.

#![allow(clippy::unwrap_used)]

use proto::ids::{defaults, Snssai};
use proto::nas::{
    MobileIdentity, NasMessage, Ngksi, ProtectionScheme, RegistrationRequest, RegistrationType,
    SchemeOutput, Suci, UeSecurityCapability,
};
use proto::ngap::{InitialUeMessage, NrCgi, RrcEstablishmentCause, UserLocation};

/// The PDU of UE `n` (SUPI `imsi-00101` and `n` in 10 digits) under `ran_ue_ngap_id`,
/// asking for `requested_nssai`.
pub(crate) fn initial_ue_pdu(
    n: u32,
    ran_ue_ngap_id: u32,
    requested_nssai: Option<Vec<Snssai>>,
) -> Vec<u8> {
    let req = RegistrationRequest {
        registration_type: RegistrationType::Initial,
        follow_on_request: false,
        ngksi: Ngksi::NO_KEY,
        mobile_identity: MobileIdentity::Suci(Suci {
            plmn: defaults::PLMN,
            routing_indicator: "0000".to_owned(),
            scheme: ProtectionScheme::Null,
            hn_key_id: 0,
            output: SchemeOutput::Msin(format!("{n:010}")),
        }),
        ue_security_capability: Some(UeSecurityCapability {
            nea: 0xf0,
            nia: 0x70,
            eps: None,
        }),
        requested_nssai,
        last_visited_tai: None,
        nas_message_container: None,
    };
    InitialUeMessage {
        ran_ue_ngap_id,
        nas_pdu: NasMessage::RegistrationRequest(req).encode().unwrap(),
        user_location: UserLocation::Nr {
            nr_cgi: NrCgi {
                plmn: defaults::PLMN,
                cell_id: 0x12345,
            },
            tai: defaults::TAI,
        },
        rrc_establishment_cause: Some(RrcEstablishmentCause::MoSignalling),
        five_g_s_tmsi: None,
        ue_context_requested: false,
    }
    .encode()
    .unwrap()
}
