//! The requests an SMF sends a UPF for one PDU session, built the way the SMF of TS 23.502
//! §4.3.2.2.1 does: at establishment an uplink PDR (CHOOSE F-TEID) forwarding to the core and
//! a downlink PDR (UE IP) buffering until the gNB's F-TEID is known; then a modification that
//! turns the downlink FAR to forwarding with an outer header.
//!
//! Used by the SMF (crate `nf`), the UPF's tests and the load generators; the values follow
//! TS 29.244 §7.5.

use std::net::Ipv4Addr;

use crate::ie::{
    ApplyAction, CreatePdr, FSeid, FTeid, Far, ForwardingParameters, GateStatus, Interface, Mbr,
    MeasurementMethod, NodeId, OuterHeaderCreation, OuterHeaderRemoval, Pdi, Qer, Triggers,
    UeIpAddress, Urr, Volume,
};
use crate::message::{
    AssociationRelease, AssociationSetup, Heartbeat, SessionEstablishmentRequest,
    SessionModificationRequest,
};
use crate::Message;

/// PDR, FAR ids of the uplink rules.
pub const UL_PDR: u16 = 1;
/// PDR id of the downlink rule.
pub const DL_PDR: u16 = 2;
/// FAR id of the uplink.
pub const UL_FAR: u32 = 1;
/// FAR id of the downlink.
pub const DL_FAR: u32 = 2;
/// The session's one QER.
pub const QER: u32 = 1;
/// The session's one URR.
pub const URR: u32 = 1;

/// What varies between sessions.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    /// The SMF's Node ID.
    pub node_id: NodeId,
    /// CP F-SEID.
    pub cp_seid: u64,
    /// The SMF's PFCP address (in the CP F-SEID).
    pub cp_ip: Ipv4Addr,
    /// The UE's address.
    pub ue_ip: Ipv4Addr,
    /// Gate status of the QER (open in both directions by default).
    pub gate: GateStatus,
    /// MBR of the QER, kbit/s (uplink, downlink); `None` for no QER MBR.
    pub mbr_kbps: Option<(u64, u64)>,
    /// URR volume threshold (total octets), when usage is to be reported on volume.
    pub volume_threshold: Option<u64>,
    /// URR time threshold (seconds), when usage is to be reported on time.
    pub time_threshold: Option<u32>,
}

impl SessionSpec {
    /// A session with open gates, no MBR and no thresholds.
    pub fn new(node_id: NodeId, cp_seid: u64, cp_ip: Ipv4Addr, ue_ip: Ipv4Addr) -> Self {
        SessionSpec {
            node_id,
            cp_seid,
            cp_ip,
            ue_ip,
            gate: GateStatus::default(),
            mbr_kbps: None,
            volume_threshold: None,
            time_threshold: None,
        }
    }
}

/// Association Setup Request (§7.4.4.1).
pub fn association_setup(node_id: NodeId, recovery_time_stamp: u32) -> Message {
    Message::AssociationSetupRequest(AssociationSetup {
        node_id,
        cause: None,
        recovery_time_stamp,
        up_function_features: None,
        // §8.2.58: no CP features claimed.
        cp_function_features: Some(vec![0]),
        unknown: Vec::new(),
    })
}

/// Association Release Request (§7.4.4.5).
pub fn association_release(node_id: NodeId) -> Message {
    Message::AssociationReleaseRequest(AssociationRelease {
        node_id,
        cause: None,
        unknown: Vec::new(),
    })
}

/// Heartbeat Request (§7.4.2.1).
pub fn heartbeat(recovery_time_stamp: u32) -> Message {
    Message::HeartbeatRequest(Heartbeat {
        recovery_time_stamp,
        unknown: Vec::new(),
    })
}

/// Session Establishment Request (§7.5.2) of `s`.
pub fn establishment(s: &SessionSpec) -> SessionEstablishmentRequest {
    let mut ul_pdi = Pdi::new(Interface::ACCESS);
    ul_pdi.f_teid = Some(FTeid::Choose {
        ipv4: true,
        ipv6: false,
        choose_id: Some(1),
    });
    ul_pdi.ue_ip_address = Some(UeIpAddress {
        ipv4: Some(s.ue_ip),
        ..UeIpAddress::default()
    });
    let mut dl_pdi = Pdi::new(Interface::CORE);
    dl_pdi.ue_ip_address = Some(UeIpAddress {
        ipv4: Some(s.ue_ip),
        destination: true,
        ..UeIpAddress::default()
    });
    let with_urr = s.volume_threshold.is_some() || s.time_threshold.is_some();
    let urr_ids = if with_urr { vec![URR] } else { Vec::new() };
    let ul = CreatePdr {
        pdr_id: UL_PDR,
        precedence: 200,
        pdi: ul_pdi,
        outer_header_removal: Some(OuterHeaderRemoval {
            description: OuterHeaderRemoval::GTPU_UDP_IPV4,
            ext_header_deletion: None,
        }),
        far_id: Some(UL_FAR),
        urr_ids: urr_ids.clone(),
        qer_ids: vec![QER],
        unknown: Vec::new(),
    };
    let dl = CreatePdr {
        pdr_id: DL_PDR,
        precedence: 200,
        pdi: dl_pdi,
        outer_header_removal: None,
        far_id: Some(DL_FAR),
        urr_ids,
        qer_ids: vec![QER],
        unknown: Vec::new(),
    };
    let ul_far = Far {
        far_id: UL_FAR,
        apply_action: Some(ApplyAction(ApplyAction::FORW)),
        forwarding_parameters: Some(ForwardingParameters {
            destination_interface: Some(Interface::CORE),
            network_instance: None,
            outer_header_creation: None,
            unknown: Vec::new(),
        }),
        unknown: Vec::new(),
    };
    // §5.2.3.1: no gNB tunnel yet, so downlink data is buffered (and the CP notified).
    let dl_far = Far {
        far_id: DL_FAR,
        apply_action: Some(ApplyAction(ApplyAction::BUFF | ApplyAction::NOCP)),
        forwarding_parameters: None,
        unknown: Vec::new(),
    };
    let qer = Qer {
        qer_id: QER,
        gate_status: Some(s.gate),
        mbr: s.mbr_kbps.map(|(ul, dl)| Mbr {
            ul_kbps: ul,
            dl_kbps: dl,
        }),
        unknown: Vec::new(),
    };
    let mut create_urr = Vec::new();
    if with_urr {
        let mut trig = 0;
        if s.volume_threshold.is_some() {
            trig |= Triggers::VOLTH;
        }
        if s.time_threshold.is_some() {
            trig |= Triggers::TIMTH;
        }
        create_urr.push(Urr {
            urr_id: URR,
            measurement_method: Some(MeasurementMethod(
                MeasurementMethod::VOLUM | MeasurementMethod::DURAT,
            )),
            reporting_triggers: Some(Triggers(trig)),
            volume_threshold: s.volume_threshold.map(|t| Volume {
                total: Some(t),
                ..Volume::default()
            }),
            time_threshold: s.time_threshold,
            unknown: Vec::new(),
        });
    }
    SessionEstablishmentRequest {
        node_id: s.node_id.clone(),
        cp_f_seid: FSeid {
            seid: s.cp_seid,
            ipv4: Some(s.cp_ip),
            ipv6: None,
        },
        create_pdr: vec![ul, dl],
        create_far: vec![ul_far, dl_far],
        create_urr,
        create_qer: vec![qer],
        unknown: Vec::new(),
    }
}

/// PFCPSEReq-Flags IE (type 186): flags of a Session Establishment Request.
pub const IE_PFCPSEREQ_FLAGS: u16 = 186;
/// Its RESTI bit (octet 5 bit 1): the request restores a session the UPF lost in a restart,
/// so the F-TEIDs it carries are the ones the UPF allocated before (TS 23.527 §4.3.2).
pub const RESTI: u8 = 0x01;

/// Session Establishment Request that restores session `s` on a UPF that restarted (TS 23.527
/// §4.3.2): the uplink F-TEID the UPF had allocated (`ul`: TEID and N3 address), so the gNB's
/// uplink keeps working, the downlink forwarding to the gNB's F-TEID when it is known (`dl`),
/// and the restoration indication set.
pub fn restoration(
    s: &SessionSpec,
    ul: (u32, Ipv4Addr),
    dl: Option<(u32, Ipv4Addr)>,
) -> SessionEstablishmentRequest {
    let mut req = establishment(s);
    for pdr in &mut req.create_pdr {
        if pdr.pdr_id == UL_PDR {
            pdr.pdi.f_teid = Some(FTeid::Assigned {
                teid: ul.0,
                ipv4: Some(ul.1),
                ipv6: None,
            });
        }
    }
    if let Some((teid, ip)) = dl {
        let fwd = forward_downlink(teid, ip);
        if let (Some(far), Some(new)) = (
            req.create_far.iter_mut().find(|f| f.far_id == DL_FAR),
            fwd.update_far.into_iter().next(),
        ) {
            *far = new;
        }
    }
    req.unknown.push(crate::ie::UnknownIe {
        ie_type: IE_PFCPSEREQ_FLAGS,
        value: vec![RESTI],
    });
    req
}

/// Session Modification Request (§7.5.4) after PDU Session Resource Setup: the downlink FAR
/// forwards to the gNB's F-TEID with a GTP-U/UDP/IPv4 outer header.
pub fn forward_downlink(gnb_teid: u32, gnb_ip: Ipv4Addr) -> SessionModificationRequest {
    SessionModificationRequest {
        update_far: vec![Far {
            far_id: DL_FAR,
            apply_action: Some(ApplyAction(ApplyAction::FORW)),
            forwarding_parameters: Some(ForwardingParameters {
                destination_interface: Some(Interface::ACCESS),
                network_instance: None,
                outer_header_creation: Some(OuterHeaderCreation::gtpu_ipv4(gnb_teid, gnb_ip)),
                unknown: Vec::new(),
            }),
            unknown: Vec::new(),
        }],
        ..SessionModificationRequest::default()
    }
}

/// Session Modification Request that sets the gate status of the session's QER.
pub fn set_gate(gate: GateStatus) -> SessionModificationRequest {
    SessionModificationRequest {
        update_qer: vec![Qer {
            qer_id: QER,
            gate_status: Some(gate),
            mbr: None,
            unknown: Vec::new(),
        }],
        ..SessionModificationRequest::default()
    }
}

/// Session Deletion Request (§7.5.6): no IEs.
pub fn deletion() -> Message {
    Message::SessionDeletionRequest(Vec::new())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::PfcpMessage;

    const SMF: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 4);
    const UE: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);

    fn round_trip(seid: Option<u64>, m: Message) -> Message {
        let sent = PfcpMessage::new(9, seid, m);
        let got = PfcpMessage::parse(&sent.emit()).unwrap();
        assert_eq!(got, sent);
        got.message
    }

    #[test]
    fn every_request_decodes_as_built() {
        let node = NodeId::Ipv4(SMF);
        let mut spec = SessionSpec::new(node.clone(), 0x0003_0000_0000_0001, SMF, UE);
        spec.mbr_kbps = Some((1000, 2000));
        spec.volume_threshold = Some(1 << 20);
        spec.time_threshold = Some(60);
        round_trip(None, association_setup(node.clone(), 7));
        round_trip(None, association_release(node));
        round_trip(None, heartbeat(7));
        round_trip(Some(1), deletion());
        round_trip(
            Some(1),
            Message::SessionModificationRequest(forward_downlink(0x1234, SMF)),
        );
        round_trip(
            Some(1),
            Message::SessionModificationRequest(set_gate(GateStatus { ul: 1, dl: 0 })),
        );
        let Message::SessionEstablishmentRequest(est) = round_trip(
            Some(0),
            Message::SessionEstablishmentRequest(establishment(&spec)),
        ) else {
            panic!("not an establishment");
        };
        assert_eq!(est.cp_f_seid.seid, 0x0003_0000_0000_0001);
        let pdrs: Vec<_> = est
            .create_pdr
            .iter()
            .map(|p| (p.pdr_id, p.far_id))
            .collect();
        assert_eq!(pdrs, [(UL_PDR, Some(UL_FAR)), (DL_PDR, Some(DL_FAR))]);
        assert_eq!(est.create_urr.len(), 1);
        assert_eq!(est.create_qer.len(), 1);
    }

    #[test]
    fn restoration_keeps_the_tunnels_and_says_so() {
        let spec = SessionSpec::new(NodeId::Ipv4(SMF), 5, SMF, UE);
        let upf = Ipv4Addr::new(127, 0, 0, 7);
        let gnb = Ipv4Addr::new(127, 0, 0, 9);
        let Message::SessionEstablishmentRequest(r) = round_trip(
            Some(0),
            Message::SessionEstablishmentRequest(restoration(
                &spec,
                (0x0100_0042, upf),
                Some((0x77, gnb)),
            )),
        ) else {
            panic!("not an establishment");
        };
        let ul = r.create_pdr.iter().find(|p| p.pdr_id == UL_PDR).unwrap();
        assert_eq!(
            ul.pdi.f_teid,
            Some(FTeid::Assigned {
                teid: 0x0100_0042,
                ipv4: Some(upf),
                ipv6: None
            })
        );
        let dl = r.create_far.iter().find(|f| f.far_id == DL_FAR).unwrap();
        assert_eq!(dl.apply_action, Some(ApplyAction(ApplyAction::FORW)));
        let ohc = dl
            .forwarding_parameters
            .as_ref()
            .and_then(|f| f.outer_header_creation);
        assert_eq!(ohc, Some(OuterHeaderCreation::gtpu_ipv4(0x77, gnb)));
        assert_eq!(
            r.unknown,
            vec![crate::ie::UnknownIe {
                ie_type: IE_PFCPSEREQ_FLAGS,
                value: vec![RESTI]
            }]
        );
        // Before the gNB answered, the downlink still buffers.
        let r = restoration(&spec, (1, upf), None);
        let dl = r.create_far.iter().find(|f| f.far_id == DL_FAR).unwrap();
        assert_eq!(
            dl.apply_action,
            Some(ApplyAction(ApplyAction::BUFF | ApplyAction::NOCP))
        );
    }

    #[test]
    fn establishment_buffers_downlink_until_the_gnb_is_known() {
        let spec = SessionSpec::new(NodeId::Ipv4(SMF), 1, SMF, UE);
        let est = establishment(&spec);
        // §5.2.3.1: no gNB tunnel yet.
        let dl = est.create_far.iter().find(|f| f.far_id == DL_FAR).unwrap();
        assert_eq!(
            dl.apply_action,
            Some(ApplyAction(ApplyAction::BUFF | ApplyAction::NOCP))
        );
        // No thresholds, no URR.
        assert!(est.create_urr.is_empty());
        let m = forward_downlink(0x1234, SMF);
        assert_eq!(
            m.update_far[0].apply_action,
            Some(ApplyAction(ApplyAction::FORW))
        );
    }
}
