//! N2 SM information (TS 38.413 §9.3.4) on top of the `oxirush-ngap` codec: the transfers the
//! SMF builds for the NG-RAN and the one it reads back. They travel as aligned-PER open types
//! inside the `application/vnd.3gpp.ngap` parts of the SBI messages.

use std::net::Ipv4Addr;

use oxirush_ngap::aper::BitString;
use oxirush_ngap::build_ngap_ie;
use oxirush_ngap::ngap::{
    decode_open_type, encode_open_type, AllocationAndRetentionPriority, BitRate, Cause, CauseNas,
    FiveQI, GTPTunnel, NonDynamic5QIDescriptor, PDUSessionAggregateMaximumBitRate,
    PDUSessionResourceReleaseCommandTransfer, PDUSessionResourceSetupRequestTransfer,
    PDUSessionResourceSetupResponseTransfer, PDUSessionType, PreEmptionCapability,
    PreEmptionVulnerability, PriorityLevelARP, ProtocolIEContainer, QosCharacteristics,
    QosFlowIdentifier, QosFlowLevelQosParameters, QosFlowSetupRequestItem, QosFlowSetupRequestList,
    TransportLayerAddress, UPTransportLayerInformation, GTPTEID,
};

use super::SmError;

/// What the SMF puts in a PDU Session Resource Setup Request Transfer (§9.3.4.1).
#[derive(Debug, Clone, Copy)]
pub struct SetupRequest {
    /// The UPF's N3 address (UL NG-U UP TNL Information).
    pub upf_ip: Ipv4Addr,
    /// The uplink TEID the UPF chose.
    pub ul_teid: u32,
    /// Session AMBR, bit/s (uplink, downlink).
    pub ambr_bps: (u64, u64),
    /// QFI of the one QoS flow.
    pub qfi: u8,
    /// Its 5QI.
    pub five_qi: u8,
    /// Its ARP priority level.
    pub arp_priority: u8,
}

fn enc(e: oxirush_ngap::Error) -> SmError {
    SmError::Encode(e.to_string())
}

/// Encodes a PDU Session Resource Setup Request Transfer: the session AMBR, the UPF end of the
/// N3 tunnel, PDU session type IPv4 and one non-GBR QoS flow.
pub fn setup_request_transfer(s: &SetupRequest) -> Result<Vec<u8>, SmError> {
    let tunnel = GTPTunnel::new(
        TransportLayerAddress(BitString::from(s.upf_ip.octets())),
        GTPTEID(s.ul_teid.to_be_bytes()),
        None,
    );
    let flow = QosFlowSetupRequestItem::new(
        QosFlowIdentifier(u64::from(s.qfi)),
        QosFlowLevelQosParameters::new(
            QosCharacteristics::nonDynamic5QI(NonDynamic5QIDescriptor::new(
                FiveQI(u64::from(s.five_qi)),
                None,
                None,
                None,
                None,
            )),
            AllocationAndRetentionPriority::new(
                PriorityLevelARP(s.arp_priority),
                PreEmptionCapability::shall_not_trigger_pre_emption,
                PreEmptionVulnerability::pre_emptable,
                None,
            ),
            None,
            None,
            None,
            None,
        ),
        None,
        None,
    );
    let ambr =
        PDUSessionAggregateMaximumBitRate::new(BitRate(s.ambr_bps.1), BitRate(s.ambr_bps.0), None);
    let transfer = PDUSessionResourceSetupRequestTransfer::new(ProtocolIEContainer(vec![
        build_ngap_ie!(
            PDUSessionResourceSetupRequestTransfer,
            PDUSessionAggregateMaximumBitRate(ambr)
        )
        .map_err(enc)?,
        build_ngap_ie!(
            PDUSessionResourceSetupRequestTransfer,
            UL_NGU_UP_TNLInformation(UPTransportLayerInformation::gTPTunnel(tunnel))
        )
        .map_err(enc)?,
        build_ngap_ie!(
            PDUSessionResourceSetupRequestTransfer,
            PDUSessionType(PDUSessionType::ipv4)
        )
        .map_err(enc)?,
        build_ngap_ie!(
            PDUSessionResourceSetupRequestTransfer,
            QosFlowSetupRequestList(QosFlowSetupRequestList(vec![flow]))
        )
        .map_err(enc)?,
    ]));
    Ok(encode_open_type(&transfer).map_err(enc)?.into_vec())
}

/// The gNB end of the N3 tunnel from a PDU Session Resource Setup Response Transfer
/// (§9.3.4.2): (TEID, IPv4 address).
pub fn setup_response_transfer(octets: &[u8]) -> Result<(u32, Ipv4Addr), SmError> {
    let t: PDUSessionResourceSetupResponseTransfer<'_> =
        decode_open_type(octets).map_err(|e| SmError::N2(e.to_string()))?;
    let UPTransportLayerInformation::gTPTunnel(g) = t
        .dl_qos_flow_per_tnl_information
        .up_transport_layer_information
    else {
        return Err(SmError::N2("DL tunnel is not a GTP tunnel".into()));
    };
    // §9.3.2.4: 32 bits is IPv4; 160 is IPv4 followed by IPv6, whose IPv4 we use.
    let addr = &g.transport_layer_address.0;
    let ip = match (addr.len(), addr.as_octets().get(..4)) {
        (32 | 160, Some(&[a, b, c, d])) => Ipv4Addr::new(a, b, c, d),
        (n, _) => {
            return Err(SmError::N2(format!(
                "transport layer address of {n} bits has no IPv4"
            )))
        }
    };
    Ok((u32::from_be_bytes(g.gtp_teid.0), ip))
}

/// PDU Session Resource Release Command Transfer (§9.3.4.12) with NAS cause normal release.
pub fn release_command_transfer() -> Result<Vec<u8>, SmError> {
    let t =
        PDUSessionResourceReleaseCommandTransfer::new(Cause::nas(CauseNas::normal_release), None);
    Ok(encode_open_type(&t).map_err(enc)?.into_vec())
}

/// For tests and the RAN simulator: the Response Transfer a gNB sends for QoS flow `qfi`.
pub fn build_setup_response_transfer(
    gnb_ip: Ipv4Addr,
    teid: u32,
    qfi: u8,
) -> Result<Vec<u8>, SmError> {
    use oxirush_ngap::ngap::{
        AssociatedQosFlowItem, AssociatedQosFlowList, QosFlowPerTNLInformation,
    };
    let tunnel = GTPTunnel::new(
        TransportLayerAddress(BitString::from(gnb_ip.octets())),
        GTPTEID(teid.to_be_bytes()),
        None,
    );
    let t = PDUSessionResourceSetupResponseTransfer::new(
        QosFlowPerTNLInformation::new(
            UPTransportLayerInformation::gTPTunnel(tunnel),
            AssociatedQosFlowList(vec![AssociatedQosFlowItem::new(
                QosFlowIdentifier(u64::from(qfi)),
                None,
                None,
            )]),
            None,
        ),
        None,
        None,
        None,
        None,
    );
    Ok(encode_open_type(&t).map_err(enc)?.into_vec())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn transfers_encode_and_check() {
        let octets = setup_request_transfer(&SetupRequest {
            upf_ip: Ipv4Addr::new(127, 0, 0, 7),
            ul_teid: 0x0300_0001,
            ambr_bps: (1_000_000_000, 1_000_000_000),
            qfi: 1,
            five_qi: 9,
            arp_priority: 8,
        })
        .unwrap();
        assert!(PDUSessionResourceSetupRequestTransfer::check(&octets)
            .unwrap()
            .is_empty());
        let rsp = build_setup_response_transfer(Ipv4Addr::new(10, 1, 0, 1), 0x1234, 1).unwrap();
        assert_eq!(
            setup_response_transfer(&rsp).unwrap(),
            (0x1234, Ipv4Addr::new(10, 1, 0, 1))
        );
        for n in 0..rsp.len() {
            assert!(setup_response_transfer(&rsp[..n]).is_err());
        }
        assert!(!release_command_transfer().unwrap().is_empty());
    }
}
