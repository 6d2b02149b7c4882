//! PDU Session Management (TS 38.413 §8.2.1, §8.2.2): PDU SESSION RESOURCE SETUP
//! REQUEST / RESPONSE and PDU SESSION RESOURCE RELEASE COMMAND / RESPONSE, and the
//! transfers they carry (§9.3.4).
//!
//! A transfer is an OCTET STRING holding its own APER encoding: the SMF writes and reads
//! it, the AMF only carries it between N11 and N2, and the gNB reads it. So each transfer
//! here has a standalone `encode`/`decode`, and the messages hold transfers as octets.

use std::net::Ipv4Addr;

use oxirush_ngap::ngap as asn;
use oxirush_ngap::{build_ngap_ie, extract_ngap_ies, BitString};

use super::convert::{snssai_from_asn, snssai_to_asn};
use super::setup_support::{codec, decode_message, pdu_of};
use super::ue::{check_amf_id, encode_fn, ue_id_ies};
use super::{Cause, EncodeError, NgapPdu, ParseError, UeAmbr};
use crate::ids::{IdError, Snssai};

/// Protocol IE IDs of the transfers and lists of this module (TS 38.413 §9.4.7).
pub mod pdu_ie_id {
    /// PDU Session Resource Setup List SU Req.
    pub const SETUP_LIST_SU_REQ: u16 = 74;
    /// PDU Session Resource To Release List Rel Cmd.
    pub const TO_RELEASE_LIST_REL_CMD: u16 = 79;
    /// UL NG-U UP TNL Information.
    pub const UL_NGU_UP_TNL_INFORMATION: u16 = 139;
    /// PDU Session Type.
    pub const PDU_SESSION_TYPE: u16 = 134;
    /// QoS Flow Setup Request List.
    pub const QOS_FLOW_SETUP_REQUEST_LIST: u16 = 136;
}

fn malformed(what: &str) -> impl Fn(oxirush_ngap::Error) -> ParseError + '_ {
    move |e| ParseError::Malformed(format!("{what}: {e}"))
}

/// One end of an NG-U GTP-U tunnel (TS 38.413 §9.3.2.2 UP Transport Layer Information,
/// GTP Tunnel alternative): an IPv4 transport address and a TEID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GtpTunnel {
    /// Transport Layer Address (§9.3.2.4), IPv4 only here.
    pub addr: Ipv4Addr,
    /// GTP-TEID (§9.3.2.5).
    pub teid: u32,
}

impl GtpTunnel {
    fn to_asn(self) -> asn::UPTransportLayerInformation<'static> {
        asn::UPTransportLayerInformation::gTPTunnel(asn::GTPTunnel::new(
            asn::TransportLayerAddress(BitString::from(self.addr.octets())),
            asn::GTPTEID(self.teid.to_be_bytes()),
            None,
        ))
    }

    fn from_asn(u: &asn::UPTransportLayerInformation<'_>) -> Result<Self, IdError> {
        let asn::UPTransportLayerInformation::gTPTunnel(t) = u else {
            return Err(IdError::Number("a UP TNL information extension".into()));
        };
        let bits = &t.transport_layer_address.0;
        // §9.3.2.4: 32 bits is IPv4, 160 bits is IPv4 followed by IPv6; either way the
        // IPv4 address is the first four octets. An IPv6-only address has no use here.
        match (bits.len(), bits.as_octets()) {
            (32 | 160, [a, b, c, d, ..]) => Ok(Self {
                addr: Ipv4Addr::new(*a, *b, *c, *d),
                teid: u32::from_be_bytes(t.gtp_teid.0),
            }),
            (n, _) => Err(IdError::Number(format!(
                "a transport layer address of {n} bits, not IPv4"
            ))),
        }
    }
}

/// PDU Session Type (TS 38.413 §9.3.1.52).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PduSessionType {
    /// IPv4.
    Ipv4,
    /// IPv6.
    Ipv6,
    /// IPv4v6.
    Ipv4v6,
    /// Ethernet.
    Ethernet,
    /// Unstructured.
    Unstructured,
}

impl PduSessionType {
    fn to_asn(self) -> asn::PDUSessionType {
        match self {
            Self::Ipv4 => asn::PDUSessionType::ipv4,
            Self::Ipv6 => asn::PDUSessionType::ipv6,
            Self::Ipv4v6 => asn::PDUSessionType::ipv4v6,
            Self::Ethernet => asn::PDUSessionType::ethernet,
            Self::Unstructured => asn::PDUSessionType::unstructured,
        }
    }

    fn from_asn(t: asn::PDUSessionType) -> Option<Self> {
        Some(match t {
            asn::PDUSessionType::ipv4 => Self::Ipv4,
            asn::PDUSessionType::ipv6 => Self::Ipv6,
            asn::PDUSessionType::ipv4v6 => Self::Ipv4v6,
            asn::PDUSessionType::ethernet => Self::Ethernet,
            asn::PDUSessionType::unstructured => Self::Unstructured,
            #[allow(unreachable_patterns)]
            _ => return None,
        })
    }
}

/// Allocation and Retention Priority (TS 38.413 §9.3.1.19).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Arp {
    /// Priority Level, 1 (highest) to 15.
    pub priority: u8,
    /// Pre-emption Capability: may trigger pre-emption.
    pub may_preempt: bool,
    /// Pre-emption Vulnerability: pre-emptable.
    pub preemptable: bool,
}

/// One QoS flow of the QoS Flow Setup Request List (TS 38.413 §9.3.4.1), non-GBR with a
/// standardised 5QI (the Non Dynamic 5QI Descriptor of §9.3.1.28).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QosFlowRequest {
    /// QoS Flow Identifier, 0..63 (§9.3.1.51).
    pub qfi: u8,
    /// 5QI (§9.3.1.28).
    pub five_qi: u16,
    /// ARP.
    pub arp: Arp,
}

impl QosFlowRequest {
    /// Flow `qfi` of 5QI `five_qi` at ARP priority `arp_priority`, neither triggering
    /// pre-emption nor protected from it: the ARP a subscription's default QoS flow usually
    /// carries (TS 23.501 §5.7.2.2).
    pub fn new(qfi: u8, five_qi: u16, arp_priority: u8) -> Self {
        QosFlowRequest {
            qfi,
            five_qi,
            arp: Arp {
                priority: arp_priority,
                may_preempt: false,
                preemptable: true,
            },
        }
    }

    fn to_asn(self) -> Result<asn::QosFlowSetupRequestItem, EncodeError> {
        check_qfi(self.qfi)?;
        if !(1..=15).contains(&self.arp.priority) {
            return Err(EncodeError::Codec(format!(
                "ARP priority level {} is not 1..15",
                self.arp.priority
            )));
        }
        let cap = if self.arp.may_preempt {
            asn::PreEmptionCapability::may_trigger_pre_emption
        } else {
            asn::PreEmptionCapability::shall_not_trigger_pre_emption
        };
        let vul = if self.arp.preemptable {
            asn::PreEmptionVulnerability::pre_emptable
        } else {
            asn::PreEmptionVulnerability::not_pre_emptable
        };
        Ok(asn::QosFlowSetupRequestItem::new(
            asn::QosFlowIdentifier(self.qfi.into()),
            asn::QosFlowLevelQosParameters::new(
                asn::QosCharacteristics::nonDynamic5QI(asn::NonDynamic5QIDescriptor::new(
                    asn::FiveQI(self.five_qi.into()),
                    None,
                    None,
                    None,
                    None,
                )),
                asn::AllocationAndRetentionPriority::new(
                    asn::PriorityLevelARP(self.arp.priority),
                    cap,
                    vul,
                    None,
                ),
                None,
                None,
                None,
                None,
            ),
            None,
            None,
        ))
    }

    fn from_asn(i: &asn::QosFlowSetupRequestItem) -> Result<Self, IdError> {
        let p = &i.qos_flow_level_qos_parameters;
        // A dynamic 5QI carries its characteristics instead of a standard 5QI; the
        // emulator has no use for them, so it reads the 5QI when present.
        let five_qi = match &p.qos_characteristics {
            asn::QosCharacteristics::nonDynamic5QI(d) => d.five_qi.0,
            asn::QosCharacteristics::dynamic5QI(d) => d.five_qi.as_ref().map_or(0, |q| q.0),
            _ => 0,
        };
        let arp = &p.allocation_and_retention_priority;
        Ok(Self {
            qfi: narrow(i.qos_flow_identifier.0, 63, "QFI")?,
            five_qi: narrow(five_qi, 255, "5QI")?,
            arp: Arp {
                priority: arp.priority_level_arp.0,
                may_preempt: matches!(
                    arp.pre_emption_capability,
                    asn::PreEmptionCapability::may_trigger_pre_emption
                ),
                preemptable: matches!(
                    arp.pre_emption_vulnerability,
                    asn::PreEmptionVulnerability::pre_emptable
                ),
            },
        })
    }
}

fn check_qfi(qfi: u8) -> Result<(), EncodeError> {
    if qfi > 63 {
        return Err(EncodeError::Codec(format!("QFI {qfi} exceeds 63")));
    }
    Ok(())
}

fn narrow<T: TryFrom<u64>>(v: u64, max: u64, what: &str) -> Result<T, IdError> {
    if v > max {
        return Err(IdError::Number(format!("{what} {v} exceeds {max}")));
    }
    T::try_from(v).map_err(|_| IdError::Number(format!("{what} {v} does not fit")))
}

/// PDU Session Aggregate Maximum Bit Rate (TS 38.413 §9.3.1.102), in bit/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PduSessionAmbr {
    /// Downlink.
    pub dl: u64,
    /// Uplink.
    pub ul: u64,
}

/// PDU Session Resource Setup Request Transfer (TS 38.413 §9.3.4.1), SMF → gNB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionResourceSetupRequestTransfer {
    /// PDU Session Aggregate Maximum Bit Rate (conditional: present for a non-GBR flow).
    pub ambr: Option<PduSessionAmbr>,
    /// UL NG-U UP TNL Information (mandatory): the UPF's N3 end.
    pub ul_tunnel: GtpTunnel,
    /// PDU Session Type (mandatory).
    pub pdu_session_type: PduSessionType,
    /// QoS Flow Setup Request List (mandatory, 1..64).
    pub qos_flows: Vec<QosFlowRequest>,
}

impl PduSessionResourceSetupRequestTransfer {
    /// Encodes the transfer (the octets of the OCTET STRING of the item).
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        if self.qos_flows.is_empty() || self.qos_flows.len() > 64 {
            return Err(EncodeError::Codec(
                "the QoS Flow Setup Request List has 1 to 64 items".into(),
            ));
        }
        let flows = self
            .qos_flows
            .iter()
            .map(|f| f.to_asn())
            .collect::<Result<Vec<_>, _>>()?;
        type T<'a> = asn::PDUSessionResourceSetupRequestTransfer<'a>;
        let mut ies = Vec::with_capacity(4);
        // §9.3.4.1 object set order: AMBR (130), UL NG-U (139), ..., type (134),
        // ..., QoS flows (136).
        if let Some(a) = self.ambr {
            ies.push(build_ngap_ie!(
                PDUSessionResourceSetupRequestTransfer,
                PDUSessionAggregateMaximumBitRate(asn::PDUSessionAggregateMaximumBitRate::new(
                    asn::BitRate(a.dl),
                    asn::BitRate(a.ul),
                    None
                ))
            )?);
        }
        ies.push(build_ngap_ie!(
            PDUSessionResourceSetupRequestTransfer,
            UL_NGU_UP_TNLInformation(self.ul_tunnel.to_asn())
        )?);
        ies.push(build_ngap_ie!(
            PDUSessionResourceSetupRequestTransfer,
            PDUSessionType(self.pdu_session_type.to_asn())
        )?);
        ies.push(build_ngap_ie!(
            PDUSessionResourceSetupRequestTransfer,
            QosFlowSetupRequestList(asn::QosFlowSetupRequestList(flows))
        )?);
        let t: T<'_> =
            asn::PDUSessionResourceSetupRequestTransfer::new(asn::ProtocolIEContainer(ies));
        Ok(asn::encode_open_type(&t)?.to_vec())
    }

    /// Decodes a transfer.
    pub fn decode(octets: &[u8]) -> Result<Self, ParseError> {
        let t: asn::PDUSessionResourceSetupRequestTransfer<'_> =
            asn::decode_open_type(octets).map_err(malformed("setup request transfer"))?;
        let (ambr, tunnel, kind, flows) = codec((|| {
            extract_ngap_ies!(t, PDUSessionResourceSetupRequestTransfer,
                opt ambr: PduSessionAmbr = PDUSessionAggregateMaximumBitRate(a) => PduSessionAmbr {
                    dl: a.pdu_session_aggregate_maximum_bit_rate_dl.0,
                    ul: a.pdu_session_aggregate_maximum_bit_rate_ul.0,
                },
                req tunnel: Result<GtpTunnel, IdError> = UL_NGU_UP_TNLInformation(u) =>
                    GtpTunnel::from_asn(&u),
                req kind: asn::PDUSessionType = PDUSessionType(k) => k,
                req flows: Vec<Result<QosFlowRequest, IdError>> = QosFlowSetupRequestList(l) =>
                    l.0.iter().map(QosFlowRequest::from_asn).collect(),
            );
            Ok((ambr, tunnel, kind, flows))
        })())?;
        let invalid = |id| move |source| ParseError::InvalidValue { id, source };
        Ok(Self {
            ambr,
            ul_tunnel: tunnel.map_err(invalid(pdu_ie_id::UL_NGU_UP_TNL_INFORMATION))?,
            pdu_session_type: PduSessionType::from_asn(kind).ok_or_else(|| {
                ParseError::InvalidValue {
                    id: pdu_ie_id::PDU_SESSION_TYPE,
                    source: IdError::Number("a PDU session type of a later release".into()),
                }
            })?,
            qos_flows: flows
                .into_iter()
                .collect::<Result<_, _>>()
                .map_err(invalid(pdu_ie_id::QOS_FLOW_SETUP_REQUEST_LIST))?,
        })
    }
}

/// PDU Session Resource Setup Response Transfer (TS 38.413 §9.3.4.2), gNB → SMF: the
/// gNB's N3 end and the QoS flows it accepted on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionResourceSetupResponseTransfer {
    /// DL QoS Flow per TNL Information: UP transport layer information.
    pub dl_tunnel: GtpTunnel,
    /// DL QoS Flow per TNL Information: associated QoS flow list (QFIs, 1..64).
    pub qos_flows: Vec<u8>,
}

impl PduSessionResourceSetupResponseTransfer {
    /// Encodes the transfer.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        if self.qos_flows.is_empty() || self.qos_flows.len() > 64 {
            return Err(EncodeError::Codec(
                "the Associated QoS Flow List has 1 to 64 items".into(),
            ));
        }
        let flows = self
            .qos_flows
            .iter()
            .map(|q| {
                check_qfi(*q)?;
                Ok(asn::AssociatedQosFlowItem::new(
                    asn::QosFlowIdentifier((*q).into()),
                    None,
                    None,
                ))
            })
            .collect::<Result<Vec<_>, EncodeError>>()?;
        let t = asn::PDUSessionResourceSetupResponseTransfer::new(
            asn::QosFlowPerTNLInformation::new(
                self.dl_tunnel.to_asn(),
                asn::AssociatedQosFlowList(flows),
                None,
            ),
            None,
            None,
            None,
            None,
        );
        Ok(asn::encode_open_type(&t)?.to_vec())
    }

    /// Decodes a transfer.
    pub fn decode(octets: &[u8]) -> Result<Self, ParseError> {
        let t: asn::PDUSessionResourceSetupResponseTransfer<'_> =
            asn::decode_open_type(octets).map_err(malformed("setup response transfer"))?;
        let info = &t.dl_qos_flow_per_tnl_information;
        let bad = |source| ParseError::InvalidValue {
            id: pdu_ie_id::UL_NGU_UP_TNL_INFORMATION,
            source,
        };
        Ok(Self {
            dl_tunnel: GtpTunnel::from_asn(&info.up_transport_layer_information).map_err(bad)?,
            qos_flows: info
                .associated_qos_flow_list
                .0
                .iter()
                .map(|i| narrow(i.qos_flow_identifier.0, 63, "QFI"))
                .collect::<Result<_, _>>()
                .map_err(bad)?,
        })
    }
}

/// PDU Session Resource Setup Unsuccessful Transfer (TS 38.413 §9.3.4.16), gNB → SMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PduSessionResourceSetupUnsuccessfulTransfer {
    /// Cause.
    pub cause: Cause,
}

impl PduSessionResourceSetupUnsuccessfulTransfer {
    /// Encodes the transfer.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let cause = self.cause.to_asn().ok_or(EncodeError::UnknownCause)?;
        let t = asn::PDUSessionResourceSetupUnsuccessfulTransfer::new(cause, None, None);
        Ok(asn::encode_open_type(&t)?.to_vec())
    }

    /// Decodes a transfer.
    pub fn decode(octets: &[u8]) -> Result<Self, ParseError> {
        let t: asn::PDUSessionResourceSetupUnsuccessfulTransfer =
            asn::decode_open_type(octets).map_err(malformed("setup unsuccessful transfer"))?;
        Ok(Self {
            cause: Cause::from_asn(&t.cause),
        })
    }
}

/// PDU Session Resource Release Command Transfer (TS 38.413 §9.3.4.12), SMF → gNB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PduSessionResourceReleaseCommandTransfer {
    /// Cause.
    pub cause: Cause,
}

impl PduSessionResourceReleaseCommandTransfer {
    /// Encodes the transfer.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let cause = self.cause.to_asn().ok_or(EncodeError::UnknownCause)?;
        let t = asn::PDUSessionResourceReleaseCommandTransfer::new(cause, None);
        Ok(asn::encode_open_type(&t)?.to_vec())
    }

    /// Decodes a transfer.
    pub fn decode(octets: &[u8]) -> Result<Self, ParseError> {
        let t: asn::PDUSessionResourceReleaseCommandTransfer =
            asn::decode_open_type(octets).map_err(malformed("release command transfer"))?;
        Ok(Self {
            cause: Cause::from_asn(&t.cause),
        })
    }
}

/// PDU Session Resource Release Response Transfer (TS 38.413 §9.3.4.21), gNB → SMF. Its
/// IEs are all optional (secondary RAT usage), and the emulator sends none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PduSessionResourceReleaseResponseTransfer;

impl PduSessionResourceReleaseResponseTransfer {
    /// Encodes the transfer.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let t = asn::PDUSessionResourceReleaseResponseTransfer::new(None);
        Ok(asn::encode_open_type(&t)?.to_vec())
    }

    /// Decodes a transfer.
    pub fn decode(octets: &[u8]) -> Result<Self, ParseError> {
        let _: asn::PDUSessionResourceReleaseResponseTransfer =
            asn::decode_open_type(octets).map_err(malformed("release response transfer"))?;
        Ok(Self)
    }
}

/// One item of the PDU Session Resource Setup List SU Req (TS 38.413 §9.2.1.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionSetupItem {
    /// PDU Session ID, 0..255 (§9.3.1.50).
    pub pdu_session_id: u8,
    /// PDU Session NAS-PDU: the DL NAS TRANSPORT with the 5GSM message for the UE.
    pub nas_pdu: Option<Vec<u8>>,
    /// S-NSSAI.
    pub snssai: Snssai,
    /// PDU Session Resource Setup Request Transfer, encoded.
    pub transfer: Vec<u8>,
}

/// A PDU session ID with the octets of a transfer: the item of the setup response lists
/// and of the release lists (TS 38.413 §9.2.1.2, §9.2.1.3, §9.2.1.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionTransferItem {
    /// PDU Session ID.
    pub pdu_session_id: u8,
    /// The encoded transfer.
    pub transfer: Vec<u8>,
}

fn list_len<T>(list: &[T], what: &str) -> Result<(), EncodeError> {
    if list.is_empty() || list.len() > 256 {
        return Err(EncodeError::Codec(format!("{what} has 1 to 256 items")));
    }
    Ok(())
}

impl PduSessionTransferItem {
    fn of(pdu_session_id: u8, transfer: &[u8]) -> Self {
        PduSessionTransferItem {
            pdu_session_id,
            transfer: transfer.to_vec(),
        }
    }
}

/// The codec items of a transfer list (`what`, for the error), each built by `item` from the
/// session ID and the transfer's octets; the list is SIZE(1..256).
fn transfer_items<'a, T>(
    list: &'a [PduSessionTransferItem],
    what: &str,
    item: impl Fn(asn::PDUSessionID, &'a [u8]) -> T,
) -> Result<Vec<T>, EncodeError> {
    list_len(list, what)?;
    Ok(list
        .iter()
        .map(|i| item(asn::PDUSessionID(i.pdu_session_id), &i.transfer))
        .collect())
}

/// PDU SESSION RESOURCE SETUP REQUEST (TS 38.413 §9.2.1.1), AMF → gNB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionResourceSetupRequest {
    /// AMF UE NGAP ID (mandatory, reject).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, reject).
    pub ran_ue_ngap_id: u32,
    /// NAS-PDU (optional, reject): a NAS message for the UE that is not about one session.
    pub nas_pdu: Option<Vec<u8>>,
    /// PDU Session Resource Setup Request List (mandatory, reject), 1..256 items.
    pub sessions: Vec<PduSessionSetupItem>,
    /// UE Aggregate Maximum Bit Rate (optional, ignore).
    pub ue_ambr: Option<UeAmbr>,
}

impl PduSessionResourceSetupRequest {
    /// Reads a PDU SESSION RESOURCE SETUP REQUEST.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::PDUSessionResourceSetupRequest =
            decode_message(pdu, "PDUSessionResourceSetupRequest")?;
        let (amf, ran, nas, list, ambr) = codec((|| {
            extract_ngap_ies!(msg, PDUSessionResourceSetupRequest,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                opt nas: Vec<u8> = NAS_PDU(p) => p.0.to_vec(),
                req list: Vec<PduSessionSetupItem> = PDUSessionResourceSetupListSUReq(l) =>
                    l.0.iter().map(|i| PduSessionSetupItem {
                        pdu_session_id: i.pdu_session_id.0,
                        nas_pdu: i.pdu_session_nas_pdu.as_ref().map(|p| p.0.to_vec()),
                        snssai: snssai_from_asn(&i.s_nssai),
                        transfer: i.pdu_session_resource_setup_request_transfer.to_vec(),
                    }).collect(),
                lax ambr: UeAmbr = UEAggregateMaximumBitRate(a) => UeAmbr {
                    dl: a.ue_aggregate_maximum_bit_rate_dl.0,
                    ul: a.ue_aggregate_maximum_bit_rate_ul.0,
                },
            );
            Ok((amf, ran, nas, list, ambr))
        })())?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            nas_pdu: nas,
            sessions: list,
            ue_ambr: ambr,
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        list_len(&self.sessions, "the PDU Session Resource Setup List")?;
        let items = self
            .sessions
            .iter()
            .map(|s| {
                Ok(asn::PDUSessionResourceSetupItemSUReq::new(
                    asn::PDUSessionID(s.pdu_session_id),
                    s.nas_pdu.as_deref().map(|n| asn::NASPDU(n.into())),
                    snssai_to_asn(&s.snssai)?,
                    s.transfer.as_slice().into(),
                    None,
                ))
            })
            .collect::<Result<Vec<_>, EncodeError>>()?;
        let mut ies = ue_id_ies![PDUSessionResourceSetupRequest, self,];
        if let Some(nas) = &self.nas_pdu {
            ies.push(build_ngap_ie!(
                PDUSessionResourceSetupRequest,
                NAS_PDU(asn::NASPDU(nas.as_slice().into()))
            )?);
        }
        ies.push(build_ngap_ie!(
            PDUSessionResourceSetupRequest,
            PDUSessionResourceSetupListSUReq(asn::PDUSessionResourceSetupListSUReq(items))
        )?);
        if let Some(a) = self.ue_ambr {
            ies.push(build_ngap_ie!(
                PDUSessionResourceSetupRequest,
                UEAggregateMaximumBitRate(asn::UEAggregateMaximumBitRate::new(
                    asn::BitRate(a.dl),
                    asn::BitRate(a.ul),
                    None
                ))
            )?);
        }
        pdu_of(&asn::PDUSessionResourceSetupRequest::new(
            asn::ProtocolIEContainer(ies),
        ))
    }

    encode_fn!();
}

/// PDU SESSION RESOURCE SETUP RESPONSE (TS 38.413 §9.2.1.2), gNB → AMF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionResourceSetupResponse {
    /// AMF UE NGAP ID (mandatory, ignore).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, ignore).
    pub ran_ue_ngap_id: u32,
    /// PDU Session Resource Setup Response List (optional): Setup Response Transfers.
    pub setup: Vec<PduSessionTransferItem>,
    /// PDU Session Resource Failed to Setup List (optional): Setup Unsuccessful
    /// Transfers.
    pub failed: Vec<PduSessionTransferItem>,
}

impl PduSessionResourceSetupResponse {
    /// Reads a PDU SESSION RESOURCE SETUP RESPONSE.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::PDUSessionResourceSetupResponse =
            decode_message(pdu, "PDUSessionResourceSetupResponse")?;
        let (amf, ran, setup, failed) = codec((|| {
            extract_ngap_ies!(msg, PDUSessionResourceSetupResponse,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                opt setup: Vec<PduSessionTransferItem> = PDUSessionResourceSetupListSURes(l) =>
                    l.0.iter().map(|i| PduSessionTransferItem::of(i.pdu_session_id.0,
                        &i.pdu_session_resource_setup_response_transfer)).collect(),
                opt failed: Vec<PduSessionTransferItem> =
                    PDUSessionResourceFailedToSetupListSURes(l) =>
                    l.0.iter().map(|i| PduSessionTransferItem::of(i.pdu_session_id.0,
                        &i.pdu_session_resource_setup_unsuccessful_transfer)).collect(),
            );
            Ok((amf, ran, setup, failed))
        })())?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            setup: setup.unwrap_or_default(),
            failed: failed.unwrap_or_default(),
        })
    }

    /// Builds the PDU. An empty list is left out (each list is SIZE(1..256)).
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let mut ies = ue_id_ies![PDUSessionResourceSetupResponse, self,];
        if !self.setup.is_empty() {
            let items = transfer_items(
                &self.setup,
                "the PDU Session Resource Setup Response List",
                |id, t| asn::PDUSessionResourceSetupItemSURes::new(id, t.into(), None),
            )?;
            ies.push(build_ngap_ie!(
                PDUSessionResourceSetupResponse,
                PDUSessionResourceSetupListSURes(asn::PDUSessionResourceSetupListSURes(items))
            )?);
        }
        if !self.failed.is_empty() {
            let items = transfer_items(
                &self.failed,
                "the PDU Session Resource Failed to Setup List",
                |id, t| asn::PDUSessionResourceFailedToSetupItemSURes::new(id, t.into(), None),
            )?;
            ies.push(build_ngap_ie!(
                PDUSessionResourceSetupResponse,
                PDUSessionResourceFailedToSetupListSURes(
                    asn::PDUSessionResourceFailedToSetupListSURes(items)
                )
            )?);
        }
        pdu_of(&asn::PDUSessionResourceSetupResponse::new(
            asn::ProtocolIEContainer(ies),
        ))
    }

    encode_fn!();
}

/// PDU SESSION RESOURCE RELEASE COMMAND (TS 38.413 §9.2.1.3), AMF → gNB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionResourceReleaseCommand {
    /// AMF UE NGAP ID (mandatory, reject).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, reject).
    pub ran_ue_ngap_id: u32,
    /// NAS-PDU (optional, ignore): the DL NAS TRANSPORT with the 5GSM release command.
    pub nas_pdu: Option<Vec<u8>>,
    /// PDU Session Resource to Release List (mandatory, reject): Release Command
    /// Transfers.
    pub sessions: Vec<PduSessionTransferItem>,
}

impl PduSessionResourceReleaseCommand {
    /// Reads a PDU SESSION RESOURCE RELEASE COMMAND.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::PDUSessionResourceReleaseCommand =
            decode_message(pdu, "PDUSessionResourceReleaseCommand")?;
        let (amf, ran, nas, list) = codec((|| {
            extract_ngap_ies!(msg, PDUSessionResourceReleaseCommand,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                lax nas: Vec<u8> = NAS_PDU(p) => p.0.to_vec(),
                req list: Vec<PduSessionTransferItem> =
                    PDUSessionResourceToReleaseListRelCmd(l) =>
                    l.0.iter().map(|i| PduSessionTransferItem::of(i.pdu_session_id.0,
                        &i.pdu_session_resource_release_command_transfer)).collect(),
            );
            Ok((amf, ran, nas, list))
        })())?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            nas_pdu: nas,
            sessions: list,
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let items = transfer_items(
            &self.sessions,
            "the PDU Session Resource to Release List",
            |id, t| asn::PDUSessionResourceToReleaseItemRelCmd::new(id, t.into(), None),
        )?;
        let mut ies = ue_id_ies![PDUSessionResourceReleaseCommand, self,];
        if let Some(nas) = &self.nas_pdu {
            ies.push(build_ngap_ie!(
                PDUSessionResourceReleaseCommand,
                NAS_PDU(asn::NASPDU(nas.as_slice().into()))
            )?);
        }
        ies.push(build_ngap_ie!(
            PDUSessionResourceReleaseCommand,
            PDUSessionResourceToReleaseListRelCmd(asn::PDUSessionResourceToReleaseListRelCmd(
                items
            ))
        )?);
        pdu_of(&asn::PDUSessionResourceReleaseCommand::new(
            asn::ProtocolIEContainer(ies),
        ))
    }

    encode_fn!();
}

/// PDU SESSION RESOURCE RELEASE RESPONSE (TS 38.413 §9.2.1.4), gNB → AMF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionResourceReleaseResponse {
    /// AMF UE NGAP ID (mandatory, ignore).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, ignore).
    pub ran_ue_ngap_id: u32,
    /// PDU Session Resource Released List (mandatory, ignore): Release Response
    /// Transfers.
    pub released: Vec<PduSessionTransferItem>,
}

impl PduSessionResourceReleaseResponse {
    /// Reads a PDU SESSION RESOURCE RELEASE RESPONSE.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::PDUSessionResourceReleaseResponse =
            decode_message(pdu, "PDUSessionResourceReleaseResponse")?;
        let (amf, ran, list) = codec((|| {
            extract_ngap_ies!(msg, PDUSessionResourceReleaseResponse,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                req list: Vec<PduSessionTransferItem> =
                    PDUSessionResourceReleasedListRelRes(l) =>
                    l.0.iter().map(|i| PduSessionTransferItem::of(i.pdu_session_id.0,
                        &i.pdu_session_resource_release_response_transfer)).collect(),
            );
            Ok((amf, ran, list))
        })())?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            released: list,
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let items = transfer_items(
            &self.released,
            "the PDU Session Resource Released List",
            |id, t| asn::PDUSessionResourceReleasedItemRelRes::new(id, t.into(), None),
        )?;
        let ies = ue_id_ies![
            PDUSessionResourceReleaseResponse,
            self,
            build_ngap_ie!(
                PDUSessionResourceReleaseResponse,
                PDUSessionResourceReleasedListRelRes(asn::PDUSessionResourceReleasedListRelRes(
                    items
                ))
            )?,
        ];
        pdu_of(&asn::PDUSessionResourceReleaseResponse::new(
            asn::ProtocolIEContainer(ies),
        ))
    }

    encode_fn!();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{decode, MessageKind, RadioNetworkCause, AMF_UE_NGAP_ID_MAX};
    use super::*;

    fn request_transfer() -> PduSessionResourceSetupRequestTransfer {
        PduSessionResourceSetupRequestTransfer {
            ambr: Some(PduSessionAmbr {
                dl: 1_000_000_000,
                ul: 500_000_000,
            }),
            ul_tunnel: GtpTunnel {
                addr: Ipv4Addr::new(10, 100, 0, 1),
                teid: 0xdead_beef,
            },
            pdu_session_type: PduSessionType::Ipv4,
            qos_flows: vec![QosFlowRequest::new(1, 9, 8)],
        }
    }

    #[test]
    fn setup_request_transfer_round_trips_and_checks_clean() {
        let t = request_transfer();
        let octets = t.encode().unwrap();
        assert!(asn::PDUSessionResourceSetupRequestTransfer::check(&octets)
            .unwrap()
            .is_empty());
        assert_eq!(
            PduSessionResourceSetupRequestTransfer::decode(&octets).unwrap(),
            t
        );
        let bare = PduSessionResourceSetupRequestTransfer { ambr: None, ..t };
        assert_eq!(
            PduSessionResourceSetupRequestTransfer::decode(&bare.encode().unwrap()).unwrap(),
            bare
        );
    }

    #[test]
    fn setup_request_transfer_rejects_bad_values() {
        let mut t = request_transfer();
        t.qos_flows[0].qfi = 64;
        assert!(t.encode().is_err());
        t.qos_flows.clear();
        assert!(t.encode().is_err());
        // Every prefix and every single-octet corruption is an error or a value, never
        // a panic.
        let octets = request_transfer().encode().unwrap();
        for n in 0..octets.len() {
            assert!(PduSessionResourceSetupRequestTransfer::decode(&octets[..n]).is_err());
        }
        for i in 0..octets.len() {
            let mut o = octets.clone();
            o[i] ^= 0xff;
            let _ = PduSessionResourceSetupRequestTransfer::decode(&o);
        }
    }

    #[test]
    fn other_transfers_round_trip() {
        let r = PduSessionResourceSetupResponseTransfer {
            dl_tunnel: GtpTunnel {
                addr: Ipv4Addr::new(127, 0, 0, 2),
                teid: 7,
            },
            qos_flows: vec![1, 5],
        };
        assert_eq!(
            PduSessionResourceSetupResponseTransfer::decode(&r.encode().unwrap()).unwrap(),
            r
        );
        assert!(PduSessionResourceSetupResponseTransfer {
            qos_flows: vec![],
            ..r.clone()
        }
        .encode()
        .is_err());
        let c = PduSessionResourceReleaseCommandTransfer {
            cause: Cause::Nas(super::super::NasCause::NormalRelease),
        };
        assert_eq!(
            PduSessionResourceReleaseCommandTransfer::decode(&c.encode().unwrap()).unwrap(),
            c
        );
        let u = PduSessionResourceSetupUnsuccessfulTransfer {
            cause: Cause::RadioNetwork(RadioNetworkCause::Unspecified),
        };
        assert_eq!(
            PduSessionResourceSetupUnsuccessfulTransfer::decode(&u.encode().unwrap()).unwrap(),
            u
        );
        let z = PduSessionResourceReleaseResponseTransfer;
        assert_eq!(
            PduSessionResourceReleaseResponseTransfer::decode(&z.encode().unwrap()).unwrap(),
            z
        );
        assert!(PduSessionResourceSetupResponseTransfer::decode(&[0xff]).is_err());
        assert!(PduSessionResourceReleaseCommandTransfer::decode(&[]).is_err());
    }

    #[test]
    fn setup_request_and_response_round_trip() {
        let req = PduSessionResourceSetupRequest {
            amf_ue_ngap_id: 3,
            ran_ue_ngap_id: 4,
            nas_pdu: None,
            sessions: vec![PduSessionSetupItem {
                pdu_session_id: 1,
                nas_pdu: Some(vec![0x7e, 0x02, 1, 2, 3]),
                snssai: Snssai { sst: 1, sd: None },
                transfer: request_transfer().encode().unwrap(),
            }],
            ue_ambr: Some(UeAmbr { dl: 10, ul: 20 }),
        };
        let pdu = decode(&req.encode().unwrap()).unwrap();
        assert_eq!(pdu.kind(), MessageKind::PduSessionResourceSetupRequest);
        assert_eq!(pdu.check().unwrap(), None);
        assert_eq!(PduSessionResourceSetupRequest::parse(&pdu).unwrap(), req);
        assert!(PduSessionResourceSetupResponse::parse(&pdu).is_err());

        let res = PduSessionResourceSetupResponse {
            amf_ue_ngap_id: 3,
            ran_ue_ngap_id: 4,
            setup: vec![PduSessionTransferItem {
                pdu_session_id: 1,
                transfer: vec![1, 2, 3],
            }],
            failed: vec![],
        };
        let pdu = decode(&res.encode().unwrap()).unwrap();
        assert_eq!(pdu.kind(), MessageKind::PduSessionResourceSetupResponse);
        assert_eq!(pdu.check().unwrap(), None);
        assert_eq!(PduSessionResourceSetupResponse::parse(&pdu).unwrap(), res);
        assert!(PduSessionResourceSetupRequest {
            sessions: vec![],
            ..req
        }
        .encode()
        .is_err());
    }

    #[test]
    fn corrupted_messages_never_panic() {
        let req = PduSessionResourceSetupRequest {
            amf_ue_ngap_id: 3,
            ran_ue_ngap_id: 4,
            nas_pdu: Some(vec![1, 2]),
            sessions: vec![PduSessionSetupItem {
                pdu_session_id: 1,
                nas_pdu: Some(vec![0x7e, 0x02]),
                snssai: Snssai {
                    sst: 1,
                    sd: Some(5),
                },
                transfer: request_transfer().encode().unwrap(),
            }],
            ue_ambr: None,
        }
        .encode()
        .unwrap();
        for i in 0..req.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut o = req.clone();
                o[i] ^= flip;
                if let Ok(pdu) = decode(&o) {
                    let _ = pdu.check();
                    if let Ok(m) = PduSessionResourceSetupRequest::parse(&pdu) {
                        for s in &m.sessions {
                            let _ = PduSessionResourceSetupRequestTransfer::decode(&s.transfer);
                        }
                    }
                    let _ = PduSessionResourceReleaseCommand::parse(&pdu);
                }
            }
        }
    }

    #[test]
    fn release_command_and_response_round_trip() {
        let cmd = PduSessionResourceReleaseCommand {
            amf_ue_ngap_id: AMF_UE_NGAP_ID_MAX,
            ran_ue_ngap_id: 9,
            nas_pdu: Some(vec![0x7e, 0x00, 0x68]),
            sessions: vec![PduSessionTransferItem {
                pdu_session_id: 5,
                transfer: vec![0x00, 0x00],
            }],
        };
        let pdu = decode(&cmd.encode().unwrap()).unwrap();
        assert_eq!(pdu.kind(), MessageKind::PduSessionResourceReleaseCommand);
        assert_eq!(pdu.check().unwrap(), None);
        assert_eq!(PduSessionResourceReleaseCommand::parse(&pdu).unwrap(), cmd);
        let res = PduSessionResourceReleaseResponse {
            amf_ue_ngap_id: 1,
            ran_ue_ngap_id: 9,
            released: vec![PduSessionTransferItem {
                pdu_session_id: 5,
                transfer: PduSessionResourceReleaseResponseTransfer.encode().unwrap(),
            }],
        };
        let pdu = decode(&res.encode().unwrap()).unwrap();
        assert_eq!(pdu.kind(), MessageKind::PduSessionResourceReleaseResponse);
        assert_eq!(pdu.check().unwrap(), None);
        assert_eq!(PduSessionResourceReleaseResponse::parse(&pdu).unwrap(), res);
        assert!(PduSessionResourceReleaseCommand {
            amf_ue_ngap_id: AMF_UE_NGAP_ID_MAX + 1,
            ..cmd
        }
        .encode()
        .is_err());
    }
}
