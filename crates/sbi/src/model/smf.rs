//! Bodies of a PDU session establishment: Nsmf_PDUSession SM contexts
//! (TS29502_Nsmf_PDUSession.yaml), Nudm_SDM session management data
//! (TS29503_Nudm_SDM.yaml `SessionManagementSubscriptionData`) and Namf_Communication
//! N1N2MessageTransfer (TS29518_Namf_Communication.yaml).
//!
//! Only the members the SMF and AMF of this project use are modelled; serde ignores the
//! others on input.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::{not_null, Ambr, Guami, PlmnIdNid, Snssai};
use super::ProblemDetails;

/// Reference to a binary body part by its `Content-Id` (TS 29.571 `RefToBinaryData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefToBinaryData {
    /// The `Content-Id` of the part.
    pub content_id: String,
}

impl RefToBinaryData {
    /// A reference to part `id`.
    pub fn new(id: &str) -> Self {
        Self {
            content_id: id.to_owned(),
        }
    }
}

/// `SmContextCreateData` (TS 29.502 §6.1.6.2.2), the JSON part of CreateSMContext.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SmContextCreateData {
    /// The UE's SUPI.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supi: Option<String>,
    /// PDU session id, 0..=255 (TS 29.571 `PduSessionId`).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pdu_session_id: Option<u8>,
    /// The requested DNN.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dnn: Option<String>,
    /// The requested slice.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s_nssai: Option<Snssai>,
    /// The AMF's NF instance id (uuid).
    pub serving_nf_id: String,
    /// The serving AMF's GUAMI.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guami: Option<Guami>,
    /// Serving PLMN.
    pub serving_network: PlmnIdNid,
    /// `INITIAL_REQUEST` or `EXISTING_PDU_SESSION` ...
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_type: Option<String>,
    /// The N1 SM message (PDU Session Establishment Request).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n1_sm_msg: Option<RefToBinaryData>,
    /// Access type, `3GPP_ACCESS`.
    pub an_type: String,
    /// Where the SMF reports the SM context status.
    pub sm_context_status_uri: String,
}

/// `SmContextCreatedData` (TS 29.502 §6.1.6.2.3).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SmContextCreatedData {
    /// The PDU session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdu_session_id: Option<u8>,
    /// The slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s_nssai: Option<Snssai>,
    /// `ACTIVATED`, `DEACTIVATED`, `ACTIVATING`...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_cnx_state: Option<String>,
}

/// `SmContextUpdateData` (TS 29.502 §6.1.6.2.4), the JSON part of UpdateSMContext.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SmContextUpdateData {
    /// Requested user plane state.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_cnx_state: Option<String>,
    /// An N1 SM message from the UE.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n1_sm_msg: Option<RefToBinaryData>,
    /// N2 SM information from the NG-RAN.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n2_sm_info: Option<RefToBinaryData>,
    /// Its type (`PDU_RES_SETUP_RSP`, ...; TS 29.502 §6.1.6.3.6).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n2_sm_info_type: Option<String>,
}

/// `SmContextUpdatedData` (TS 29.502 §6.1.6.2.5).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SmContextUpdatedData {
    /// The user plane state now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_cnx_state: Option<String>,
    /// An N1 SM message for the UE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n1_sm_msg: Option<RefToBinaryData>,
    /// N2 SM information for the NG-RAN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n2_sm_info: Option<RefToBinaryData>,
    /// Its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n2_sm_info_type: Option<String>,
}

/// `SmContextReleaseData` (TS 29.502 §6.1.6.2.6).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SmContextReleaseData {
    /// Why (`REL_DUE_TO_REACTIVATION`, ...; TS 29.502 §6.1.6.3.3 `Cause`).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// `SmContextCreateError` (TS 29.502 §6.1.6.2.7): the problem, and the N1 SM reject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SmContextCreateError {
    /// The error.
    pub error: ProblemDetails,
    /// The PDU Session Establishment Reject for the UE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n1_sm_msg: Option<RefToBinaryData>,
}

/// `SmContextUpdateError` (TS 29.502 §6.1.6.2.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SmContextUpdateError {
    /// The error.
    pub error: ProblemDetails,
    /// An N1 SM message for the UE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n1_sm_msg: Option<RefToBinaryData>,
}

/// ARP (TS 29.571 §5.5.2.6 `Arp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Arp {
    /// 1..=15, 1 the highest.
    pub priority_level: u8,
    /// `NOT_PREEMPT` or `MAY_PREEMPT`.
    pub preempt_cap: PreemptCap,
    /// `NOT_PREEMPTABLE` or `PREEMPTABLE`.
    pub preempt_vuln: PreemptVuln,
}

/// TS 29.571 `PreemptionCapability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PreemptCap {
    /// Shall not trigger pre-emption.
    NotPreempt,
    /// May trigger pre-emption.
    MayPreempt,
}

/// TS 29.571 `PreemptionVulnerability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PreemptVuln {
    /// Not pre-emptable.
    NotPreemptable,
    /// Pre-emptable.
    Preemptable,
}

/// `SubscribedDefaultQos` (TS 29.571 §5.5.2.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribedDefaultQos {
    /// 5QI of the default QoS flow.
    #[serde(rename = "5qi")]
    pub five_qi: u8,
    /// Its ARP.
    pub arp: Arp,
}

/// `PduSessionTypes` (TS 29.503 §6.1.6.2.12).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PduSessionTypes {
    /// `IPV4`, `IPV6`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_session_type: Option<String>,
    /// Allowed besides the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_session_types: Option<Vec<String>>,
}

/// `SscModes` (TS 29.503 §6.1.6.2.13).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SscModes {
    /// `SSC_MODE_1`, ...
    pub default_ssc_mode: String,
}

/// `DnnConfiguration` (TS 29.503 §6.1.6.2.11).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DnnConfiguration {
    /// Session types.
    pub pdu_session_types: PduSessionTypes,
    /// SSC modes.
    pub ssc_modes: SscModes,
    /// The default QoS flow's 5QI and ARP.
    #[serde(
        rename = "5gQosProfile",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub qos_profile: Option<SubscribedDefaultQos>,
    /// Session AMBR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_ambr: Option<Ambr>,
}

/// `SessionManagementSubscriptionData` (TS 29.503 §6.1.6.2.10), one per slice; GET
/// `/{supi}/sm-data` answers with an array of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionManagementSubscriptionData {
    /// The slice.
    pub single_nssai: Snssai,
    /// Per DNN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dnn_configurations: Option<BTreeMap<String, DnnConfiguration>>,
}

/// `N1MessageContainer` (TS 29.518 §6.1.6.2.20).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct N1MessageContainer {
    /// `SM` for 5GSM.
    pub n1_message_class: String,
    /// The NAS part.
    pub n1_message_content: RefToBinaryData,
}

/// `N2InfoContent` (TS 29.518 §6.1.6.2.26).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct N2InfoContent {
    /// `PDU_RES_SETUP_REQ`, `PDU_RES_REL_CMD`, ... (TS 29.518 `NgapIeType`).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ngap_ie_type: Option<String>,
    /// The NGAP part.
    pub ngap_data: RefToBinaryData,
}

/// `N2SmInformation` (TS 29.518 §6.1.6.2.24).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct N2SmInformation {
    /// The PDU session.
    pub pdu_session_id: u8,
    /// The NGAP IE.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n2_info_content: Option<N2InfoContent>,
    /// The slice.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s_nssai: Option<Snssai>,
}

/// `N2InfoContainer` (TS 29.518 §6.1.6.2.21).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct N2InfoContainer {
    /// `SM` for session management.
    pub n2_information_class: String,
    /// The SM information.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_info: Option<N2SmInformation>,
}

/// `N1N2MessageTransferReqData` (TS 29.518 §6.1.6.2.1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct N1N2MessageTransferReqData {
    /// The N1 message.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n1_message_container: Option<N1MessageContainer>,
    /// The N2 information.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n2_info_container: Option<N2InfoContainer>,
    /// The PDU session.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pdu_session_id: Option<u8>,
}

/// `N1N2MessageTransferRspData` (TS 29.518 §6.1.6.2.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct N1N2MessageTransferRspData {
    /// `N1_N2_TRANSFER_INITIATED`, `ATTEMPTING_TO_REACH_UE`, ...
    pub cause: String,
}
