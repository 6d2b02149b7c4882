//! What the emulator tests share: the one subscriber they register (its SUPI, K, OPc and
//! UE configuration) and the PDU session the scripted network gives it (the UPF's end of
//! N3, the UE's address, the Establishment Accept and the setup request transfer), and how
//! NAS crosses the gNB between the scripted AMF and the UE.
// Each test binary uses its own subset of these.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::net::Ipv4Addr;

use proto::ids::defaults;
use proto::nas::sm_ue::{self, PduSessionEstablishmentAccept, SessionAmbr, SmMessage};
use proto::nas::UeSecurityCapability;
use proto::ngap::{
    self, DownlinkNasTransport, GtpTunnel, InitialContextSetupRequest, PduSessionAmbr,
    PduSessionResourceSetupRequestTransfer, PduSessionType, QosFlowRequest, UeSecurityCapabilities,
    UplinkNasTransport, UserLocation,
};
use ran::gnb::{GnbUeEvent, GnbUes};
use ran::ue::UeConfig;
use security::Kgnb;

pub const SUPI: &str = "imsi-001010000000001";
pub const KEY: [u8; 16] = [0x46; 16];
pub const OPC: [u8; 16] = [0xcd; 16];
/// The UPF's end of the N3 tunnel.
pub const UPF: GtpTunnel = GtpTunnel {
    addr: Ipv4Addr::new(127, 0, 0, 9),
    teid: 0x100,
};
pub const UE_IP: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);

pub fn ue_config() -> UeConfig {
    UeConfig::new(SUPI, KEY, OPC, defaults::PLMN)
}

/// The network's acceptance of IPv4 session `id` (procedure `pti`): [`UE_IP`], 100/50 Mbit/s,
/// the default QoS rule of QFI 1, DNN internet.
pub fn establishment_accept(id: u8, pti: u8) -> SmMessage {
    SmMessage::EstablishmentAccept(PduSessionEstablishmentAccept {
        pdu_session_id: id,
        pti,
        pdu_session_type: sm_ue::PDU_SESSION_TYPE_IPV4,
        ssc_mode: sm_ue::SSC_MODE_1,
        qos_rules: sm_ue::default_qos_rule(1),
        session_ambr: SessionAmbr {
            dl_kbps: 100_000,
            ul_kbps: 50_000,
        },
        pdu_address: Some(UE_IP),
        snssai: Some(defaults::SNSSAI),
        dnn: Some("internet".into()),
    })
}

/// The PDU Session Resource Setup Request Transfer of that session: uplink to [`UPF`], one
/// non-GBR flow QFI 1 of 5QI 9.
pub fn setup_transfer() -> Vec<u8> {
    PduSessionResourceSetupRequestTransfer {
        ambr: Some(PduSessionAmbr {
            dl: 100_000_000,
            ul: 50_000_000,
        }),
        ul_tunnel: UPF,
        pdu_session_type: PduSessionType::Ipv4,
        qos_flows: vec![QosFlowRequest::new(1, 9, 8)],
    }
    .encode()
    .unwrap()
}

/// One UE on the gNB's UE-associated N2 side: its id at the gNB and its two NGAP ids.
#[derive(Debug, Clone, Copy)]
pub struct UeN2 {
    pub ue: u64,
    pub amf_ue_ngap_id: u64,
    pub ran_ue_ngap_id: u32,
}

impl UeN2 {
    /// NAS from the AMF in a DOWNLINK NAS TRANSPORT: what the gNB hands this UE, with
    /// nothing sent back on N2.
    pub fn down(self, gnb: &mut GnbUes, nas: Vec<u8>) -> Vec<u8> {
        let pdu = DownlinkNasTransport {
            amf_ue_ngap_id: self.amf_ue_ngap_id,
            ran_ue_ngap_id: self.ran_ue_ngap_id,
            nas_pdu: nas,
        }
        .encode()
        .unwrap();
        let out = gnb.handle_downlink(1, &pdu);
        assert!(out.transmit.is_empty());
        match out.events.as_slice() {
            [GnbUeEvent::NasToUe { ue, nas }] if *ue == self.ue => nas.clone(),
            other => panic!("{other:?}"),
        }
    }

    /// The INITIAL CONTEXT SETUP REQUEST that accepts the registration: `nas` (the
    /// protected Registration Accept) and `security_key`, for the test network's GUAMI and
    /// slice and a UE with every algorithm.
    pub fn initial_context_setup(self, security_key: Kgnb, nas: Vec<u8>) -> Vec<u8> {
        InitialContextSetupRequest {
            amf_ue_ngap_id: self.amf_ue_ngap_id,
            ran_ue_ngap_id: self.ran_ue_ngap_id,
            ue_ambr: None,
            guami: defaults::GUAMI,
            allowed_nssai: vec![defaults::SNSSAI],
            ue_security_capabilities: UeSecurityCapabilities::from_nas(&UeSecurityCapability::ALL),
            security_key,
            nas_pdu: Some(nas),
        }
        .encode()
        .unwrap()
    }

    /// NAS from this UE: the NAS PDU of the UPLINK NAS TRANSPORT the gNB sends, which
    /// carries both NGAP ids and an NR user location (TS 38.413 §9.2.5.3).
    pub fn up(self, gnb: &mut GnbUes, nas: &[u8]) -> Vec<u8> {
        let send = gnb.uplink_nas(self.ue, nas).unwrap();
        let m = UplinkNasTransport::parse(&ngap::decode(&send.pdu).unwrap()).unwrap();
        assert_eq!(
            (m.amf_ue_ngap_id, m.ran_ue_ngap_id),
            (self.amf_ue_ngap_id, self.ran_ue_ngap_id)
        );
        assert!(matches!(m.user_location, Some(UserLocation::Nr { .. })));
        m.nas_pdu
    }
}
