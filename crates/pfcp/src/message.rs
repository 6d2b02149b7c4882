//! PFCP messages (TS 29.244 §7.4 node messages, §7.5 session messages) as typed values.
//!
//! Parsing checks the header, walks the IEs once, and applies the message's presence rules
//! (M/C per the §7.4/§7.5 tables; those of the grouped IEs of session requests are the table
//! in [`crate::presence`], which the receiver applies with its own context); an error names
//! the IE at fault so the response can carry Cause and Offending IE. Unknown IEs are kept per message and emitted back in place order
//! after the known ones; vendor IEs are dropped.

use crate::error::{Cause, DecodeError};
use crate::header::{HeaderRepr, Packet};
use crate::ie::{
    emit_remove, emit_unknown, keep_unknown, mandatory, parse_remove, put_u16, put_u32, put_u8,
    set_once, ty, u16_ie, u32_ie, u8_ie, walk, CreatePdr, CreatedPdr, FSeid, Far, IeIter, NodeId,
    Qer, RawIe, UnknownIe, UpdatePdr, Urr, UsageReport,
};

/// Message type numbers (TS 29.244 §7.3, Table 7.3-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageType {
    /// 1.
    HeartbeatRequest,
    /// 2.
    HeartbeatResponse,
    /// 5.
    AssociationSetupRequest,
    /// 6.
    AssociationSetupResponse,
    /// 9.
    AssociationReleaseRequest,
    /// 10.
    AssociationReleaseResponse,
    /// 50.
    SessionEstablishmentRequest,
    /// 51.
    SessionEstablishmentResponse,
    /// 52.
    SessionModificationRequest,
    /// 53.
    SessionModificationResponse,
    /// 54.
    SessionDeletionRequest,
    /// 55.
    SessionDeletionResponse,
    /// 56.
    SessionReportRequest,
    /// 57.
    SessionReportResponse,
}

impl MessageType {
    /// The wire value.
    pub fn value(self) -> u8 {
        match self {
            MessageType::HeartbeatRequest => 1,
            MessageType::HeartbeatResponse => 2,
            MessageType::AssociationSetupRequest => 5,
            MessageType::AssociationSetupResponse => 6,
            MessageType::AssociationReleaseRequest => 9,
            MessageType::AssociationReleaseResponse => 10,
            MessageType::SessionEstablishmentRequest => 50,
            MessageType::SessionEstablishmentResponse => 51,
            MessageType::SessionModificationRequest => 52,
            MessageType::SessionModificationResponse => 53,
            MessageType::SessionDeletionRequest => 54,
            MessageType::SessionDeletionResponse => 55,
            MessageType::SessionReportRequest => 56,
            MessageType::SessionReportResponse => 57,
        }
    }
    /// The type for a wire value, if known here.
    pub fn from_value(v: u8) -> Option<Self> {
        Some(match v {
            1 => MessageType::HeartbeatRequest,
            2 => MessageType::HeartbeatResponse,
            5 => MessageType::AssociationSetupRequest,
            6 => MessageType::AssociationSetupResponse,
            9 => MessageType::AssociationReleaseRequest,
            10 => MessageType::AssociationReleaseResponse,
            50 => MessageType::SessionEstablishmentRequest,
            51 => MessageType::SessionEstablishmentResponse,
            52 => MessageType::SessionModificationRequest,
            53 => MessageType::SessionModificationResponse,
            54 => MessageType::SessionDeletionRequest,
            55 => MessageType::SessionDeletionResponse,
            56 => MessageType::SessionReportRequest,
            57 => MessageType::SessionReportResponse,
            _ => return None,
        })
    }
    /// TS 29.244 §7.2.2.1: session messages (type ≥ 50) carry a SEID, node messages do not.
    pub fn is_session(self) -> bool {
        self.value() >= 50
    }
}

/// Heartbeat Request/Response (TS 29.244 §7.4.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// Recovery Time Stamp (M), NTP seconds.
    pub recovery_time_stamp: u32,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

/// Association Setup Request (§7.4.4.1) and Response (§7.4.4.2); `cause` only in the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssociationSetup {
    /// Node ID (M).
    pub node_id: NodeId,
    /// Cause (M in the response).
    pub cause: Option<Cause>,
    /// Recovery Time Stamp (M).
    pub recovery_time_stamp: u32,
    /// UP Function Features bitmask, octets as sent (§8.2.25).
    pub up_function_features: Option<Vec<u8>>,
    /// CP Function Features bitmask, octets as sent (§8.2.58).
    pub cp_function_features: Option<Vec<u8>>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

/// Association Release Request (§7.4.4.5) and Response (§7.4.4.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssociationRelease {
    /// Node ID (M).
    pub node_id: NodeId,
    /// Cause (M in the response).
    pub cause: Option<Cause>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

/// Session Establishment Request (§7.5.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEstablishmentRequest {
    /// Node ID (M).
    pub node_id: NodeId,
    /// CP F-SEID (M).
    pub cp_f_seid: FSeid,
    /// Create PDR (M, one or more).
    pub create_pdr: Vec<CreatePdr>,
    /// Create FAR (M, one or more).
    pub create_far: Vec<Far>,
    /// Create URR.
    pub create_urr: Vec<Urr>,
    /// Create QER.
    pub create_qer: Vec<Qer>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

/// Session Establishment Response (§7.5.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEstablishmentResponse {
    /// Node ID (M).
    pub node_id: NodeId,
    /// Cause (M).
    pub cause: Cause,
    /// Offending IE (C: when the cause blames one IE).
    pub offending_ie: Option<u16>,
    /// UP F-SEID (C: when accepted).
    pub up_f_seid: Option<FSeid>,
    /// Created PDR (C: for each PDR whose F-TEID the UP function chose).
    pub created_pdr: Vec<CreatedPdr>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

/// Session Modification Request (§7.5.4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionModificationRequest {
    /// CP F-SEID (C: when the CP function changes it).
    pub cp_f_seid: Option<FSeid>,
    /// Remove PDR: PDR IDs.
    pub remove_pdr: Vec<u16>,
    /// Remove FAR: FAR IDs.
    pub remove_far: Vec<u32>,
    /// Remove URR: URR IDs.
    pub remove_urr: Vec<u32>,
    /// Remove QER: QER IDs.
    pub remove_qer: Vec<u32>,
    /// Create PDR.
    pub create_pdr: Vec<CreatePdr>,
    /// Create FAR.
    pub create_far: Vec<Far>,
    /// Create URR.
    pub create_urr: Vec<Urr>,
    /// Create QER.
    pub create_qer: Vec<Qer>,
    /// Update PDR.
    pub update_pdr: Vec<UpdatePdr>,
    /// Update FAR.
    pub update_far: Vec<Far>,
    /// Update URR.
    pub update_urr: Vec<Urr>,
    /// Update QER.
    pub update_qer: Vec<Qer>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

/// Session Modification (§7.5.5), Deletion (§7.5.7) and Report (§7.5.9) Responses share this
/// shape: Cause, Offending IE, and the lists each may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionResponse {
    /// Cause (M).
    pub cause: Cause,
    /// Offending IE (C).
    pub offending_ie: Option<u16>,
    /// Created PDR (Modification Response only).
    pub created_pdr: Vec<CreatedPdr>,
    /// Usage Reports (Modification and Deletion Responses).
    pub usage_reports: Vec<UsageReport>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

impl SessionResponse {
    /// A response with only a cause.
    pub fn new(cause: Cause) -> Self {
        SessionResponse {
            cause,
            offending_ie: None,
            created_pdr: Vec::new(),
            usage_reports: Vec::new(),
            unknown: Vec::new(),
        }
    }
}

/// Session Report Request (§7.5.8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionReportRequest {
    /// Report Type flags (M, §8.2.21): bit 2 USAR (usage report).
    pub report_type: u8,
    /// Usage Reports (C: when USAR).
    pub usage_reports: Vec<UsageReport>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

impl SessionReportRequest {
    /// Report Type USAR bit.
    pub const USAR: u8 = 0x02;
}

/// A PFCP message body.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Message {
    /// Heartbeat Request.
    HeartbeatRequest(Heartbeat),
    /// Heartbeat Response.
    HeartbeatResponse(Heartbeat),
    /// Association Setup Request.
    AssociationSetupRequest(AssociationSetup),
    /// Association Setup Response.
    AssociationSetupResponse(AssociationSetup),
    /// Association Release Request.
    AssociationReleaseRequest(AssociationRelease),
    /// Association Release Response.
    AssociationReleaseResponse(AssociationRelease),
    /// Session Establishment Request.
    SessionEstablishmentRequest(SessionEstablishmentRequest),
    /// Session Establishment Response.
    SessionEstablishmentResponse(SessionEstablishmentResponse),
    /// Session Modification Request.
    SessionModificationRequest(SessionModificationRequest),
    /// Session Modification Response.
    SessionModificationResponse(SessionResponse),
    /// Session Deletion Request (no IEs modelled; unknown ones kept).
    SessionDeletionRequest(Vec<UnknownIe>),
    /// Session Deletion Response.
    SessionDeletionResponse(SessionResponse),
    /// Session Report Request.
    SessionReportRequest(SessionReportRequest),
    /// Session Report Response.
    SessionReportResponse(SessionResponse),
}

impl Message {
    /// This message's type.
    pub fn msg_type(&self) -> MessageType {
        match self {
            Message::HeartbeatRequest(_) => MessageType::HeartbeatRequest,
            Message::HeartbeatResponse(_) => MessageType::HeartbeatResponse,
            Message::AssociationSetupRequest(_) => MessageType::AssociationSetupRequest,
            Message::AssociationSetupResponse(_) => MessageType::AssociationSetupResponse,
            Message::AssociationReleaseRequest(_) => MessageType::AssociationReleaseRequest,
            Message::AssociationReleaseResponse(_) => MessageType::AssociationReleaseResponse,
            Message::SessionEstablishmentRequest(_) => MessageType::SessionEstablishmentRequest,
            Message::SessionEstablishmentResponse(_) => MessageType::SessionEstablishmentResponse,
            Message::SessionModificationRequest(_) => MessageType::SessionModificationRequest,
            Message::SessionModificationResponse(_) => MessageType::SessionModificationResponse,
            Message::SessionDeletionRequest(_) => MessageType::SessionDeletionRequest,
            Message::SessionDeletionResponse(_) => MessageType::SessionDeletionResponse,
            Message::SessionReportRequest(_) => MessageType::SessionReportRequest,
            Message::SessionReportResponse(_) => MessageType::SessionReportResponse,
        }
    }

    /// Decodes the IEs of a message of type `t`.
    pub fn parse(t: MessageType, ies: &[u8]) -> Result<Self, DecodeError> {
        use MessageType as T;
        Ok(match t {
            T::HeartbeatRequest => Message::HeartbeatRequest(parse_heartbeat(ies)?),
            T::HeartbeatResponse => Message::HeartbeatResponse(parse_heartbeat(ies)?),
            T::AssociationSetupRequest => {
                Message::AssociationSetupRequest(parse_assoc_setup(ies, false)?)
            }
            T::AssociationSetupResponse => {
                Message::AssociationSetupResponse(parse_assoc_setup(ies, true)?)
            }
            T::AssociationReleaseRequest => {
                Message::AssociationReleaseRequest(parse_assoc_release(ies, false)?)
            }
            T::AssociationReleaseResponse => {
                Message::AssociationReleaseResponse(parse_assoc_release(ies, true)?)
            }
            T::SessionEstablishmentRequest => {
                Message::SessionEstablishmentRequest(parse_est_req(ies)?)
            }
            T::SessionEstablishmentResponse => {
                Message::SessionEstablishmentResponse(parse_est_rsp(ies)?)
            }
            T::SessionModificationRequest => {
                Message::SessionModificationRequest(parse_mod_req(ies)?)
            }
            T::SessionModificationResponse => {
                Message::SessionModificationResponse(parse_session_rsp(ies, ty::USAGE_REPORT_SMR)?)
            }
            T::SessionDeletionRequest => {
                let mut unknown = Vec::new();
                for ie in IeIter::new(ies) {
                    keep_unknown(&mut unknown, &ie?);
                }
                Message::SessionDeletionRequest(unknown)
            }
            T::SessionDeletionResponse => {
                Message::SessionDeletionResponse(parse_session_rsp(ies, ty::USAGE_REPORT_SDR)?)
            }
            T::SessionReportRequest => Message::SessionReportRequest(parse_report_req(ies)?),
            // §7.5.9: the Session Report Response carries no Usage Report; type 0 never matches.
            T::SessionReportResponse => Message::SessionReportResponse(parse_session_rsp(ies, 0)?),
        })
    }

    /// Appends the IEs of this message.
    pub fn emit(&self, out: &mut Vec<u8>) {
        match self {
            Message::HeartbeatRequest(h) | Message::HeartbeatResponse(h) => {
                put_u32(out, ty::RECOVERY_TIME_STAMP, h.recovery_time_stamp);
                emit_unknown(out, &h.unknown);
            }
            Message::AssociationSetupRequest(a) | Message::AssociationSetupResponse(a) => {
                a.node_id.emit(out);
                if let Some(c) = a.cause {
                    put_u8(out, ty::CAUSE, c.0);
                }
                put_u32(out, ty::RECOVERY_TIME_STAMP, a.recovery_time_stamp);
                if let Some(f) = &a.up_function_features {
                    crate::ie::put_ie(out, ty::UP_FUNCTION_FEATURES, |o| o.extend_from_slice(f));
                }
                if let Some(f) = &a.cp_function_features {
                    crate::ie::put_ie(out, ty::CP_FUNCTION_FEATURES, |o| o.extend_from_slice(f));
                }
                emit_unknown(out, &a.unknown);
            }
            Message::AssociationReleaseRequest(a) | Message::AssociationReleaseResponse(a) => {
                a.node_id.emit(out);
                if let Some(c) = a.cause {
                    put_u8(out, ty::CAUSE, c.0);
                }
                emit_unknown(out, &a.unknown);
            }
            Message::SessionEstablishmentRequest(r) => {
                r.node_id.emit(out);
                r.cp_f_seid.emit(out);
                r.create_pdr.iter().for_each(|p| p.emit(out));
                r.create_far.iter().for_each(|f| f.emit(out, true));
                r.create_urr.iter().for_each(|u| u.emit(out, true));
                r.create_qer.iter().for_each(|q| q.emit(out, true));
                emit_unknown(out, &r.unknown);
            }
            Message::SessionEstablishmentResponse(r) => {
                r.node_id.emit(out);
                put_u8(out, ty::CAUSE, r.cause.0);
                if let Some(o) = r.offending_ie {
                    put_u16(out, ty::OFFENDING_IE, o);
                }
                if let Some(f) = &r.up_f_seid {
                    f.emit(out);
                }
                r.created_pdr.iter().for_each(|p| p.emit(out));
                emit_unknown(out, &r.unknown);
            }
            Message::SessionModificationRequest(r) => {
                if let Some(f) = &r.cp_f_seid {
                    f.emit(out);
                }
                for &id in &r.remove_pdr {
                    emit_remove(out, ty::REMOVE_PDR, ty::PDR_ID, u32::from(id));
                }
                for &id in &r.remove_far {
                    emit_remove(out, ty::REMOVE_FAR, ty::FAR_ID, id);
                }
                for &id in &r.remove_urr {
                    emit_remove(out, ty::REMOVE_URR, ty::URR_ID, id);
                }
                for &id in &r.remove_qer {
                    emit_remove(out, ty::REMOVE_QER, ty::QER_ID, id);
                }
                r.create_pdr.iter().for_each(|p| p.emit(out));
                r.create_far.iter().for_each(|f| f.emit(out, true));
                r.create_urr.iter().for_each(|u| u.emit(out, true));
                r.create_qer.iter().for_each(|q| q.emit(out, true));
                r.update_pdr.iter().for_each(|p| p.emit(out));
                r.update_far.iter().for_each(|f| f.emit(out, false));
                r.update_urr.iter().for_each(|u| u.emit(out, false));
                r.update_qer.iter().for_each(|q| q.emit(out, false));
                emit_unknown(out, &r.unknown);
            }
            Message::SessionModificationResponse(r) => {
                emit_session_rsp(out, r, ty::USAGE_REPORT_SMR)
            }
            Message::SessionDeletionRequest(u) => emit_unknown(out, u),
            Message::SessionDeletionResponse(r) => emit_session_rsp(out, r, ty::USAGE_REPORT_SDR),
            Message::SessionReportRequest(r) => {
                put_u8(out, ty::REPORT_TYPE, r.report_type);
                r.usage_reports
                    .iter()
                    .for_each(|u| u.emit(out, ty::USAGE_REPORT_SRR));
                emit_unknown(out, &r.unknown);
            }
            Message::SessionReportResponse(r) => emit_session_rsp(out, r, 0),
        }
    }
}

fn parse_heartbeat(ies: &[u8]) -> Result<Heartbeat, DecodeError> {
    let mut rts = None;
    let unknown = walk(ies, |ie| {
        match ie.ie_type {
            ty::RECOVERY_TIME_STAMP => set_once(&mut rts, u32_ie(ie))?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(Heartbeat {
        recovery_time_stamp: mandatory(rts, ty::RECOVERY_TIME_STAMP)?,
        unknown,
    })
}

fn cause_ie(ie: &RawIe<'_>) -> Result<Cause, DecodeError> {
    u8_ie(ie).map(Cause)
}

fn parse_assoc_setup(ies: &[u8], response: bool) -> Result<AssociationSetup, DecodeError> {
    let (mut node, mut cause, mut rts, mut upf, mut cpf) = (None, None, None, None, None);
    let unknown = walk(ies, |ie| {
        match ie.ie_type {
            ty::NODE_ID => set_once(&mut node, NodeId::parse(ie))?,
            ty::CAUSE if response => set_once(&mut cause, cause_ie(ie))?,
            ty::RECOVERY_TIME_STAMP => set_once(&mut rts, u32_ie(ie))?,
            ty::UP_FUNCTION_FEATURES => set_once(&mut upf, Ok(ie.value.to_vec()))?,
            ty::CP_FUNCTION_FEATURES => set_once(&mut cpf, Ok(ie.value.to_vec()))?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let node_id = mandatory(node, ty::NODE_ID)?;
    if response {
        mandatory(cause, ty::CAUSE)?;
    }
    Ok(AssociationSetup {
        node_id,
        cause,
        recovery_time_stamp: mandatory(rts, ty::RECOVERY_TIME_STAMP)?,
        up_function_features: upf,
        cp_function_features: cpf,
        unknown,
    })
}

fn parse_assoc_release(ies: &[u8], response: bool) -> Result<AssociationRelease, DecodeError> {
    let (mut node, mut cause) = (None, None);
    let unknown = walk(ies, |ie| {
        match ie.ie_type {
            ty::NODE_ID => set_once(&mut node, NodeId::parse(ie))?,
            ty::CAUSE if response => set_once(&mut cause, cause_ie(ie))?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let node_id = mandatory(node, ty::NODE_ID)?;
    if response {
        mandatory(cause, ty::CAUSE)?;
    }
    Ok(AssociationRelease {
        node_id,
        cause,
        unknown,
    })
}

fn parse_est_req(ies: &[u8]) -> Result<SessionEstablishmentRequest, DecodeError> {
    let (mut node, mut fseid) = (None, None);
    let (mut pdr, mut far, mut urr, mut qer) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let unknown = walk(ies, |ie| {
        match ie.ie_type {
            ty::NODE_ID => set_once(&mut node, NodeId::parse(ie))?,
            ty::F_SEID => set_once(&mut fseid, FSeid::parse(ie))?,
            ty::CREATE_PDR => pdr.push(CreatePdr::parse(ie)?),
            ty::CREATE_FAR => far.push(Far::parse(ie, true)?),
            ty::CREATE_URR => urr.push(Urr::parse(ie)?),
            ty::CREATE_QER => qer.push(Qer::parse(ie)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let node_id = mandatory(node, ty::NODE_ID)?;
    let cp_f_seid = mandatory(fseid, ty::F_SEID)?;
    // §7.5.2.1: at least one Create PDR and one Create FAR.
    if pdr.is_empty() {
        return Err(DecodeError::MandatoryIeMissing {
            ie_type: ty::CREATE_PDR,
        });
    }
    if far.is_empty() {
        return Err(DecodeError::MandatoryIeMissing {
            ie_type: ty::CREATE_FAR,
        });
    }
    Ok(SessionEstablishmentRequest {
        node_id,
        cp_f_seid,
        create_pdr: pdr,
        create_far: far,
        create_urr: urr,
        create_qer: qer,
        unknown,
    })
}

fn parse_est_rsp(ies: &[u8]) -> Result<SessionEstablishmentResponse, DecodeError> {
    let (mut node, mut cause, mut off, mut fseid) = (None, None, None, None);
    let mut created = Vec::new();
    let unknown = walk(ies, |ie| {
        match ie.ie_type {
            ty::NODE_ID => set_once(&mut node, NodeId::parse(ie))?,
            ty::CAUSE => set_once(&mut cause, cause_ie(ie))?,
            ty::OFFENDING_IE => set_once(&mut off, u16_ie(ie))?,
            ty::F_SEID => set_once(&mut fseid, FSeid::parse(ie))?,
            ty::CREATED_PDR => created.push(CreatedPdr::parse(ie)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let node_id = mandatory(node, ty::NODE_ID)?;
    let cause = mandatory(cause, ty::CAUSE)?;
    // §7.5.3.1: UP F-SEID is present when the request was accepted.
    if cause.is_accepted() && fseid.is_none() {
        return Err(DecodeError::ConditionalIeMissing {
            ie_type: ty::F_SEID,
        });
    }
    Ok(SessionEstablishmentResponse {
        node_id,
        cause,
        offending_ie: off,
        up_f_seid: fseid,
        created_pdr: created,
        unknown,
    })
}

fn parse_mod_req(ies: &[u8]) -> Result<SessionModificationRequest, DecodeError> {
    let mut r = SessionModificationRequest::default();
    r.unknown = walk(ies, |ie| {
        match ie.ie_type {
            ty::F_SEID => set_once(&mut r.cp_f_seid, FSeid::parse(ie))?,
            ty::REMOVE_PDR => {
                let id = parse_remove(ie, ty::PDR_ID)?;
                r.remove_pdr.push(u16::try_from(id).unwrap_or(u16::MAX));
            }
            ty::REMOVE_FAR => r.remove_far.push(parse_remove(ie, ty::FAR_ID)?),
            ty::REMOVE_URR => r.remove_urr.push(parse_remove(ie, ty::URR_ID)?),
            ty::REMOVE_QER => r.remove_qer.push(parse_remove(ie, ty::QER_ID)?),
            ty::CREATE_PDR => r.create_pdr.push(CreatePdr::parse(ie)?),
            ty::CREATE_FAR => r.create_far.push(Far::parse(ie, true)?),
            ty::CREATE_URR => r.create_urr.push(Urr::parse(ie)?),
            ty::CREATE_QER => r.create_qer.push(Qer::parse(ie)?),
            ty::UPDATE_PDR => r.update_pdr.push(UpdatePdr::parse(ie)?),
            ty::UPDATE_FAR => r.update_far.push(Far::parse(ie, false)?),
            ty::UPDATE_URR => r.update_urr.push(Urr::parse(ie)?),
            ty::UPDATE_QER => r.update_qer.push(Qer::parse(ie)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(r)
}

fn parse_session_rsp(ies: &[u8], usage_type: u16) -> Result<SessionResponse, DecodeError> {
    let (mut cause, mut off) = (None, None);
    let mut r = SessionResponse::new(Cause(0));
    r.unknown = walk(ies, |ie| {
        match ie.ie_type {
            ty::CAUSE => set_once(&mut cause, cause_ie(ie))?,
            ty::OFFENDING_IE => set_once(&mut off, u16_ie(ie))?,
            ty::CREATED_PDR if usage_type == ty::USAGE_REPORT_SMR => {
                r.created_pdr.push(CreatedPdr::parse(ie)?)
            }
            t if t == usage_type && t != 0 => r.usage_reports.push(UsageReport::parse(ie)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    r.cause = mandatory(cause, ty::CAUSE)?;
    r.offending_ie = off;
    Ok(r)
}

fn emit_session_rsp(out: &mut Vec<u8>, r: &SessionResponse, usage_type: u16) {
    put_u8(out, ty::CAUSE, r.cause.0);
    if let Some(o) = r.offending_ie {
        put_u16(out, ty::OFFENDING_IE, o);
    }
    if usage_type == ty::USAGE_REPORT_SMR {
        r.created_pdr.iter().for_each(|p| p.emit(out));
    }
    if usage_type != 0 {
        r.usage_reports.iter().for_each(|u| u.emit(out, usage_type));
    }
    emit_unknown(out, &r.unknown);
}

fn parse_report_req(ies: &[u8]) -> Result<SessionReportRequest, DecodeError> {
    let mut rt = None;
    let mut usage = Vec::new();
    let unknown = walk(ies, |ie| {
        match ie.ie_type {
            ty::REPORT_TYPE => set_once(&mut rt, u8_ie(ie))?,
            ty::USAGE_REPORT_SRR => usage.push(UsageReport::parse(ie)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let report_type = mandatory(rt, ty::REPORT_TYPE)?;
    // §7.5.8.1: Usage Report present when USAR is set.
    if report_type & SessionReportRequest::USAR != 0 && usage.is_empty() {
        return Err(DecodeError::ConditionalIeMissing {
            ie_type: ty::USAGE_REPORT_SRR,
        });
    }
    Ok(SessionReportRequest {
        report_type,
        usage_reports: usage,
        unknown,
    })
}

/// A whole PFCP message: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PfcpMessage {
    /// Header; its `msg_type` is overwritten from `message` on emit.
    pub header: HeaderRepr,
    /// Body.
    pub message: Message,
}

impl PfcpMessage {
    /// A message with sequence number `sequence` and SEID `seid` (session messages) or none.
    pub fn new(sequence: u32, seid: Option<u64>, message: Message) -> Self {
        PfcpMessage {
            header: HeaderRepr {
                msg_type: message.msg_type().value(),
                seid,
                sequence,
                priority: None,
                follow_on: false,
            },
            message,
        }
    }

    /// Decodes the first message in `buf` (a datagram may hold more when FO=1; see
    /// [`Packet::total_len`]). On an IE error, the header is still available through
    /// [`PfcpMessage::parse_header`] to build the rejection.
    pub fn parse(buf: &[u8]) -> Result<Self, DecodeError> {
        let p = Packet::new_checked(buf)?;
        let header = HeaderRepr::parse(&p);
        let t = MessageType::from_value(header.msg_type)
            .ok_or(DecodeError::UnknownMessageType(header.msg_type))?;
        if t.is_session() != header.seid.is_some() {
            return Err(DecodeError::SeidFlag(header.msg_type));
        }
        let message = Message::parse(t, p.payload())?;
        Ok(PfcpMessage { header, message })
    }

    /// Decodes only the header (to answer a request whose body failed to decode).
    pub fn parse_header(buf: &[u8]) -> Result<HeaderRepr, DecodeError> {
        Packet::new_checked(buf).map(|p| HeaderRepr::parse(&p))
    }

    /// Encodes the message.
    pub fn emit(&self) -> Vec<u8> {
        let mut body = Vec::new();
        self.message.emit(&mut body);
        let mut h = self.header;
        h.msg_type = self.message.msg_type().value();
        let mut out = Vec::with_capacity(h.header_len() + body.len());
        h.emit(&mut out, body.len());
        out.extend_from_slice(&body);
        out
    }
}

/// The response that rejects a request of type `request_type` which failed to decode with
/// `err`: Cause and Offending IE from the error (TS 29.244 §7.6), plus the responder's own
/// Node ID and Recovery Time Stamp where the response requires them. `None` when the error
/// allows no answer, or the request has no response with a Cause (Heartbeat) or is itself a
/// response. The caller copies the request's sequence number and sets the peer's SEID (0 when
/// unknown, §7.2.2.4.2).
pub fn rejection(
    request_type: u8,
    err: &DecodeError,
    node_id: &NodeId,
    recovery_time_stamp: u32,
) -> Option<Message> {
    let cause = err.cause()?;
    let offending_ie = err.offending_ie();
    let session = || SessionResponse {
        offending_ie,
        ..SessionResponse::new(cause)
    };
    Some(match MessageType::from_value(request_type)? {
        MessageType::AssociationSetupRequest => {
            Message::AssociationSetupResponse(AssociationSetup {
                node_id: node_id.clone(),
                cause: Some(cause),
                recovery_time_stamp,
                up_function_features: None,
                cp_function_features: None,
                unknown: Vec::new(),
            })
        }
        MessageType::AssociationReleaseRequest => {
            Message::AssociationReleaseResponse(AssociationRelease {
                node_id: node_id.clone(),
                cause: Some(cause),
                unknown: Vec::new(),
            })
        }
        MessageType::SessionEstablishmentRequest => {
            Message::SessionEstablishmentResponse(SessionEstablishmentResponse {
                node_id: node_id.clone(),
                cause,
                offending_ie,
                up_f_seid: None,
                created_pdr: Vec::new(),
                unknown: Vec::new(),
            })
        }
        MessageType::SessionModificationRequest => Message::SessionModificationResponse(session()),
        MessageType::SessionDeletionRequest => Message::SessionDeletionResponse(session()),
        MessageType::SessionReportRequest => Message::SessionReportResponse(session()),
        _ => return None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn rejection_carries_cause_and_offending_ie() {
        let node = NodeId::Ipv4(Ipv4Addr::new(10, 0, 0, 7));
        let err = DecodeError::MandatoryIeMissing {
            ie_type: ty::F_SEID,
        };
        let Some(Message::SessionEstablishmentResponse(r)) = rejection(50, &err, &node, 7) else {
            panic!("wrong response")
        };
        assert_eq!(r.cause, Cause::MANDATORY_IE_MISSING);
        assert_eq!(r.offending_ie, Some(ty::F_SEID));
        // It encodes and decodes (a rejection needs no UP F-SEID).
        let m = PfcpMessage::new(4, Some(0), Message::SessionEstablishmentResponse(r));
        assert_eq!(PfcpMessage::parse(&m.emit()).unwrap(), m);
        let err = DecodeError::InvalidLength { ie_type: 84 };
        let Some(Message::SessionModificationResponse(r)) = rejection(52, &err, &node, 7) else {
            panic!("wrong response")
        };
        assert_eq!((r.cause, r.offending_ie), (Cause::INVALID_LENGTH, Some(84)));
        assert_eq!(rejection(1, &err, &node, 7), None);
        assert_eq!(rejection(50, &DecodeError::Truncated, &node, 7), None);
    }
}
