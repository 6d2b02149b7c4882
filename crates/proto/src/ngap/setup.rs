//! NG Setup (TS 38.413 §8.7.1): NG SETUP REQUEST, RESPONSE and FAILURE (§9.2.6).

use oxirush_ngap::ngap as asn;
use oxirush_ngap::{build_ngap_ie, extract_ngap_ies, Message};

use super::convert::{
    guami_from_asn, guami_to_asn, node_from_asn, node_to_asn, plmn_from_asn, plmn_to_asn,
    slices_from_asn, slices_to_asn, tac_from_asn, tac_to_asn,
};
use super::{ie_id, Cause, CriticalityDiagnostics, EncodeError, NgapPdu, ParseError};
use crate::ids::{GlobalRanNodeId, Guami, IdError, Plmn, Snssai, Tac};

/// Default Paging DRX (TS 38.413 §9.3.1.90), in radio frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PagingDrx {
    /// 32 radio frames.
    V32,
    /// 64 radio frames.
    V64,
    /// 128 radio frames (what UERANSIM and PacketRusher send).
    #[default]
    V128,
    /// 256 radio frames.
    V256,
}

impl PagingDrx {
    fn to_asn(self) -> asn::PagingDRX {
        match self {
            Self::V32 => asn::PagingDRX::v32,
            Self::V64 => asn::PagingDRX::v64,
            Self::V128 => asn::PagingDRX::v128,
            Self::V256 => asn::PagingDRX::v256,
        }
    }

    fn from_asn(v: asn::PagingDRX) -> Option<Self> {
        match v {
            asn::PagingDRX::v32 => Some(Self::V32),
            asn::PagingDRX::v64 => Some(Self::V64),
            asn::PagingDRX::v128 => Some(Self::V128),
            asn::PagingDRX::v256 => Some(Self::V256),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}

/// Time To Wait (TS 38.413 §9.3.1.56): how long a node waits before retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeToWait {
    /// 1 s.
    V1s,
    /// 2 s.
    V2s,
    /// 5 s.
    V5s,
    /// 10 s.
    V10s,
    /// 20 s.
    V20s,
    /// 60 s.
    V60s,
}

impl TimeToWait {
    /// The wait in seconds.
    pub fn seconds(self) -> u32 {
        match self {
            Self::V1s => 1,
            Self::V2s => 2,
            Self::V5s => 5,
            Self::V10s => 10,
            Self::V20s => 20,
            Self::V60s => 60,
        }
    }

    fn to_asn(self) -> asn::TimeToWait {
        match self {
            Self::V1s => asn::TimeToWait::v1s,
            Self::V2s => asn::TimeToWait::v2s,
            Self::V5s => asn::TimeToWait::v5s,
            Self::V10s => asn::TimeToWait::v10s,
            Self::V20s => asn::TimeToWait::v20s,
            Self::V60s => asn::TimeToWait::v60s,
        }
    }

    fn from_asn(v: asn::TimeToWait) -> Option<Self> {
        match v {
            asn::TimeToWait::v1s => Some(Self::V1s),
            asn::TimeToWait::v2s => Some(Self::V2s),
            asn::TimeToWait::v5s => Some(Self::V5s),
            asn::TimeToWait::v10s => Some(Self::V10s),
            asn::TimeToWait::v20s => Some(Self::V20s),
            asn::TimeToWait::v60s => Some(Self::V60s),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}

/// One PLMN broadcast in a supported TA, with the slices supported there
/// (Broadcast PLMN List and TAI Slice Support List of TS 38.413 §9.2.6.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BroadcastPlmn {
    /// The PLMN.
    pub plmn: Plmn,
    /// The slices supported in this TA for this PLMN (at least one on the wire).
    pub slices: Vec<Snssai>,
}

/// One item of the Supported TA List.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SupportedTa {
    /// The TAC.
    pub tac: Tac,
    /// The PLMNs broadcast in it (at least one on the wire).
    pub broadcast_plmns: Vec<BroadcastPlmn>,
}

/// NG SETUP REQUEST (TS 38.413 §9.2.6.1), gNB → AMF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NgSetupRequest {
    /// Global RAN Node ID (mandatory, reject).
    pub global_ran_node_id: GlobalRanNodeId,
    /// RAN Node Name (optional, ignore).
    pub ran_node_name: Option<String>,
    /// Supported TA List (mandatory, reject).
    pub supported_tas: Vec<SupportedTa>,
    /// Default Paging DRX (mandatory, ignore). `None` when absent or not understood:
    /// §10.3.5 has the receiver go on without it, and a sender leaves it out only to
    /// test that.
    pub default_paging_drx: Option<PagingDrx>,
}

pub(super) fn codec<T>(r: Result<T, oxirush_ngap::Error>) -> Result<T, ParseError> {
    r.map_err(|e| ParseError::from_codec(&e))
}

pub(super) fn decode_message<'p, M>(
    pdu: &'p NgapPdu,
    expected: &'static str,
) -> Result<M, ParseError>
where
    M: Message<'p, Protocol = oxirush_ngap::Ngap>,
{
    pdu.0.decode_value::<M>().map_err(|e| match e.kind() {
        oxirush_ngap::ErrorKind::WrongMessage => ParseError::WrongMessage {
            expected,
            found: pdu.0.procedure_name(),
        },
        _ => ParseError::Malformed(e.to_string()),
    })
}

/// AMF Name and RAN Node Name are `PrintableString (SIZE(1..150, ...))` (TS 38.413
/// §9.3.3.21, and the RANNodeName type of §9.4.5): we send only root values, from the PrintableString set of
/// X.680 §41.4.
fn check_name(what: &str, name: &str) -> Result<(), EncodeError> {
    let printable = |c: char| c.is_ascii_alphanumeric() || " '()+,-./:=?".contains(c);
    let len = name.chars().count();
    if !(1..=150).contains(&len) || !name.chars().all(printable) {
        return Err(EncodeError::Codec(format!(
            "{what} {name:?} is not 1 to 150 PrintableString characters"
        )));
    }
    Ok(())
}

fn invalid(id: u16) -> impl Fn(IdError) -> ParseError {
    move |source| ParseError::InvalidValue { id, source }
}

pub(super) fn pdu_of<'m, M: Message<'m, Protocol = oxirush_ngap::Ngap>>(
    message: &M,
) -> Result<NgapPdu, EncodeError> {
    Ok(NgapPdu(asn::NGAP_PDU::of_message(message, M::CRITICALITY)?))
}

impl NgSetupRequest {
    /// Reads an NG SETUP REQUEST.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::NGSetupRequest = decode_message(pdu, "NGSetupRequest")?;
        let (node, name, tas, drx) = codec((|| {
            extract_ngap_ies!(msg, NGSetupRequest,
                req node: asn::GlobalRANNodeID = GlobalRANNodeID(n) => n,
                lax name: String = RANNodeName(n) => n.0.into_owned(),
                req tas: asn::SupportedTAList = SupportedTAList(l) => l,
                lax drx: asn::PagingDRX = DefaultPagingDRX(d) => d,
            );
            Ok((node, name, tas, drx))
        })())?;
        let global_ran_node_id =
            node_from_asn(&node).map_err(invalid(ie_id::GLOBAL_RAN_NODE_ID))?;
        let supported_tas = tas
            .0
            .iter()
            .map(|item| {
                let broadcast_plmns = item
                    .broadcast_plmn_list
                    .0
                    .iter()
                    .map(|b| {
                        Ok(BroadcastPlmn {
                            plmn: plmn_from_asn(&b.plmn_identity)?,
                            slices: slices_from_asn(&b.tai_slice_support_list),
                        })
                    })
                    .collect::<Result<Vec<_>, IdError>>()?;
                Ok(SupportedTa {
                    tac: tac_from_asn(&item.tac),
                    broadcast_plmns,
                })
            })
            .collect::<Result<Vec<_>, IdError>>()
            .map_err(invalid(ie_id::SUPPORTED_TA_LIST))?;
        Ok(Self {
            global_ran_node_id,
            ran_node_name: name,
            supported_tas,
            default_paging_drx: drx.and_then(PagingDrx::from_asn),
        })
    }

    /// Builds the PDU, with the criticalities TS 38.413 §9.2.6.1 assigns.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let tas = self
            .supported_tas
            .iter()
            .map(|ta| {
                let plmns = ta
                    .broadcast_plmns
                    .iter()
                    .map(|b| {
                        Ok(asn::BroadcastPLMNItem::new(
                            plmn_to_asn(&b.plmn),
                            slices_to_asn(&b.slices)?,
                            None,
                        ))
                    })
                    .collect::<Result<Vec<_>, IdError>>()?;
                Ok(asn::SupportedTAItem::new(
                    tac_to_asn(&ta.tac),
                    asn::BroadcastPLMNList(plmns),
                    None,
                ))
            })
            .collect::<Result<Vec<_>, IdError>>()?;
        let mut ies = vec![build_ngap_ie!(
            NGSetupRequest,
            GlobalRANNodeID(node_to_asn(&self.global_ran_node_id)?)
        )?];
        if let Some(name) = &self.ran_node_name {
            check_name("RAN Node Name", name)?;
            ies.push(build_ngap_ie!(NGSetupRequest, RANNodeName(name.as_str()))?);
        }
        ies.push(build_ngap_ie!(
            NGSetupRequest,
            SupportedTAList(asn::SupportedTAList(tas))
        )?);
        if let Some(drx) = self.default_paging_drx {
            ies.push(build_ngap_ie!(
                NGSetupRequest,
                DefaultPagingDRX(drx.to_asn())
            )?);
        }
        pdu_of(&asn::NGSetupRequest::new(asn::ProtocolIEContainer(ies)))
    }

    /// Builds and encodes the PDU.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        super::encode(&self.to_pdu()?)
    }
}

/// One PLMN the AMF serves and its slices (TS 38.413 §9.2.6.2 PLMN Support List).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlmnSupport {
    /// The PLMN.
    pub plmn: Plmn,
    /// The slices supported (at least one on the wire).
    pub slices: Vec<Snssai>,
}

/// NG SETUP RESPONSE (TS 38.413 §9.2.6.2), AMF → gNB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NgSetupResponse {
    /// AMF Name (mandatory, reject), 1 to 150 printable characters.
    pub amf_name: String,
    /// Served GUAMI List (mandatory, reject).
    pub served_guamis: Vec<Guami>,
    /// Relative AMF Capacity (mandatory, ignore).
    pub relative_amf_capacity: u8,
    /// PLMN Support List (mandatory, reject).
    pub plmn_support: Vec<PlmnSupport>,
    /// Criticality Diagnostics (optional, ignore): IEs of the request that were ignored
    /// and notified (§10.3.4.2).
    pub criticality_diagnostics: Option<CriticalityDiagnostics>,
}

impl NgSetupResponse {
    /// Reads an NG SETUP RESPONSE.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::NGSetupResponse = decode_message(pdu, "NGSetupResponse")?;
        let (name, guamis, capacity, plmns, diag) = codec((|| {
            extract_ngap_ies!(msg, NGSetupResponse,
                req name: String = AMFName(n) => n.0.into_owned(),
                req guamis: Vec<asn::GUAMI> = ServedGUAMIList(l) =>
                    l.0.into_iter().map(|i| i.guami).collect(),
                lax capacity: u8 = RelativeAMFCapacity(c) => c.0,
                req plmns: asn::PLMNSupportList = PLMNSupportList(l) => l,
                lax diag: asn::CriticalityDiagnostics = CriticalityDiagnostics(d) => d,
            );
            Ok((name, guamis, capacity, plmns, diag))
        })())?;
        let served_guamis = guamis
            .iter()
            .map(guami_from_asn)
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid(ie_id::SERVED_GUAMI_LIST))?;
        let plmn_support = plmns
            .0
            .iter()
            .map(|p| {
                Ok(PlmnSupport {
                    plmn: plmn_from_asn(&p.plmn_identity)?,
                    slices: slices_from_asn(&p.slice_support_list),
                })
            })
            .collect::<Result<Vec<_>, IdError>>()
            .map_err(invalid(ie_id::PLMN_SUPPORT_LIST))?;
        Ok(Self {
            amf_name: name,
            served_guamis,
            // §10.3.5: a missing IE of criticality ignore is ignored; 0 is "no
            // capacity", what a gNB assumes of an AMF that says nothing.
            relative_amf_capacity: capacity.unwrap_or(0),
            plmn_support,
            criticality_diagnostics: diag.as_ref().map(CriticalityDiagnostics::from_asn),
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let guamis = self
            .served_guamis
            .iter()
            .map(|g| Ok(asn::ServedGUAMIItem::new(guami_to_asn(g)?, None, None)))
            .collect::<Result<Vec<_>, IdError>>()?;
        let plmns = self
            .plmn_support
            .iter()
            .map(|p| {
                Ok(asn::PLMNSupportItem::new(
                    plmn_to_asn(&p.plmn),
                    slices_to_asn(&p.slices)?,
                    None,
                ))
            })
            .collect::<Result<Vec<_>, IdError>>()?;
        check_name("AMF Name", &self.amf_name)?;
        let mut ies = vec![
            build_ngap_ie!(NGSetupResponse, AMFName(self.amf_name.as_str()))?,
            build_ngap_ie!(
                NGSetupResponse,
                ServedGUAMIList(asn::ServedGUAMIList(guamis))
            )?,
            build_ngap_ie!(
                NGSetupResponse,
                RelativeAMFCapacity(asn::RelativeAMFCapacity(self.relative_amf_capacity))
            )?,
            build_ngap_ie!(
                NGSetupResponse,
                PLMNSupportList(asn::PLMNSupportList(plmns))
            )?,
        ];
        if let Some(d) = &self.criticality_diagnostics {
            ies.push(build_ngap_ie!(
                NGSetupResponse,
                CriticalityDiagnostics(d.to_asn())
            )?);
        }
        pdu_of(&asn::NGSetupResponse::new(asn::ProtocolIEContainer(ies)))
    }

    /// Builds and encodes the PDU.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        super::encode(&self.to_pdu()?)
    }
}

/// NG SETUP FAILURE (TS 38.413 §9.2.6.3), AMF → gNB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NgSetupFailure {
    /// Cause (mandatory, ignore). [`Cause::Unknown`] when absent or of a later release.
    pub cause: Cause,
    /// Time To Wait (optional, ignore).
    pub time_to_wait: Option<TimeToWait>,
    /// Criticality Diagnostics (optional, ignore).
    pub criticality_diagnostics: Option<CriticalityDiagnostics>,
}

impl NgSetupFailure {
    /// A failure with a cause alone.
    pub fn new(cause: impl Into<Cause>) -> Self {
        Self {
            cause: cause.into(),
            time_to_wait: None,
            criticality_diagnostics: None,
        }
    }

    /// Reads an NG SETUP FAILURE.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::NGSetupFailure = decode_message(pdu, "NGSetupFailure")?;
        // Only `lax` fields: an IE that does not decode counts as absent, so nothing
        // here fails.
        extract_ngap_ies!(msg, NGSetupFailure,
            lax cause: asn::Cause = Cause(c) => c,
            lax wait: asn::TimeToWait = TimeToWait(t) => t,
            lax diag: asn::CriticalityDiagnostics = CriticalityDiagnostics(d) => d,
        );

        Ok(Self {
            cause: cause.as_ref().map_or(Cause::Unknown, Cause::from_asn),
            time_to_wait: wait.and_then(TimeToWait::from_asn),
            criticality_diagnostics: diag.as_ref().map(CriticalityDiagnostics::from_asn),
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let cause = self.cause.to_asn().ok_or(EncodeError::UnknownCause)?;
        let mut ies = vec![build_ngap_ie!(NGSetupFailure, Cause(cause))?];
        if let Some(t) = self.time_to_wait {
            ies.push(build_ngap_ie!(NGSetupFailure, TimeToWait(t.to_asn()))?);
        }
        if let Some(d) = &self.criticality_diagnostics {
            ies.push(build_ngap_ie!(
                NGSetupFailure,
                CriticalityDiagnostics(d.to_asn())
            )?);
        }
        pdu_of(&asn::NGSetupFailure::new(asn::ProtocolIEContainer(ies)))
    }

    /// Builds and encodes the PDU.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        super::encode(&self.to_pdu()?)
    }
}
