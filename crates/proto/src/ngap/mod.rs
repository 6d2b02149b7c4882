//! NGAP (TS 38.413) for steer5g: a thin layer over `oxirush-ngap`.
//!
//! The rest of the workspace sees only the types of this module: an opaque [`NgapPdu`]
//! that [`decode`] and [`encode`] move to and from aligned PER, one plain struct per
//! message we build or read (`parse` from a PDU, `to_pdu`/`encode` back), the typed
//! [`Cause`], and what clause 10 of TS 38.413 has a receiver answer to a faulty
//! message ([`ProtocolFault`], [`CriticalityDiagnostics`]). Keeping the codec's
//! generated types behind this seam lets us pin and upgrade it in one place.
//!
//! Decoding is total: any byte string gives a PDU or an error, never a panic.

mod cause;
mod convert;
mod diagnostics;
mod error_indication;
mod overload;
mod pdu_session;
mod peek;
mod setup;
mod ue;
use setup as setup_support;

use oxirush_ngap::ngap as asn;
use oxirush_ngap::{ErrorKind, NgapPduKind};
use thiserror::Error;

pub use cause::{Cause, MiscCause, NasCause, ProtocolCause, RadioNetworkCause, TransportCause};
pub use diagnostics::{CriticalityDiagnostics, IeDiagnostic, ProtocolFault, TypeOfError};
pub use error_indication::ErrorIndication;
pub use overload::{OverloadAction, OverloadStart, OverloadStop};
pub use pdu_session::{
    pdu_ie_id, Arp, GtpTunnel, PduSessionAmbr, PduSessionResourceReleaseCommand,
    PduSessionResourceReleaseCommandTransfer, PduSessionResourceReleaseResponse,
    PduSessionResourceReleaseResponseTransfer, PduSessionResourceSetupRequest,
    PduSessionResourceSetupRequestTransfer, PduSessionResourceSetupResponse,
    PduSessionResourceSetupResponseTransfer, PduSessionResourceSetupUnsuccessfulTransfer,
    PduSessionSetupItem, PduSessionTransferItem, PduSessionType, QosFlowRequest,
};
pub use peek::{peek, Peek, PeekError};
pub use setup::{
    BroadcastPlmn, NgSetupFailure, NgSetupRequest, NgSetupResponse, PagingDrx, PlmnSupport,
    SupportedTa, TimeToWait,
};
pub use ue::{
    DownlinkNasTransport, InitialContextSetupFailure, InitialContextSetupRequest,
    InitialContextSetupResponse, InitialUeMessage, NasNonDeliveryIndication, NrCgi,
    RrcEstablishmentCause, UeAmbr, UeContextReleaseCommand, UeContextReleaseComplete,
    UeContextReleaseRequest, UeNgapIds, UeSecurityCapabilities, UplinkNasTransport, UserLocation,
    AMF_UE_NGAP_ID_MAX,
};

use crate::ids::IdError;

/// SCTP Payload Protocol Identifier of NGAP (TS 38.412 §7).
pub const SCTP_PPID: u32 = 60;
/// The AMF's SCTP port for NGAP (TS 38.412 §7).
pub const SCTP_PORT: u16 = 38412;
/// The stream that carries non-UE-associated signalling such as NG Setup: TS 38.412 §7
/// reserves one stream pair for it, and implementations use stream 0.
pub const NON_UE_STREAM: u16 = 0;

/// Procedure codes of TS 38.413 §9.4.7 that steer5g names.
pub mod procedure {
    /// Downlink NAS Transport.
    pub const DOWNLINK_NAS_TRANSPORT: u8 = 4;
    /// Initial Context Setup.
    pub const INITIAL_CONTEXT_SETUP: u8 = 14;
    /// NAS Non Delivery Indication.
    pub const NAS_NON_DELIVERY_INDICATION: u8 = 19;
    /// UE Context Release.
    pub const UE_CONTEXT_RELEASE: u8 = 41;
    /// UE Context Release Request.
    pub const UE_CONTEXT_RELEASE_REQUEST: u8 = 42;
    /// Uplink NAS Transport.
    pub const UPLINK_NAS_TRANSPORT: u8 = 46;
    /// Error Indication.
    pub const ERROR_INDICATION: u8 = 9;
    /// Initial UE Message.
    pub const INITIAL_UE_MESSAGE: u8 = 15;
    /// NG Reset.
    pub const NG_RESET: u8 = 20;
    /// NG Setup.
    pub const NG_SETUP: u8 = 21;
    /// PDU Session Resource Release.
    pub const PDU_SESSION_RESOURCE_RELEASE: u8 = 28;
    /// PDU Session Resource Setup.
    pub const PDU_SESSION_RESOURCE_SETUP: u8 = 29;
}

/// Protocol IE identifiers of TS 38.413 §9.4.7 that steer5g names.
pub mod ie_id {
    /// AMF Name.
    pub const AMF_NAME: u16 = 1;
    /// Allowed NSSAI.
    pub const ALLOWED_NSSAI: u16 = 0;
    /// AMF UE NGAP ID.
    pub const AMF_UE_NGAP_ID: u16 = 10;
    /// FiveG-S-TMSI.
    pub const FIVE_G_S_TMSI: u16 = 26;
    /// GUAMI.
    pub const GUAMI: u16 = 28;
    /// NAS-PDU.
    pub const NAS_PDU: u16 = 38;
    /// RRC Establishment Cause.
    pub const RRC_ESTABLISHMENT_CAUSE: u16 = 90;
    /// Security Key.
    pub const SECURITY_KEY: u16 = 94;
    /// UE Aggregate Maximum Bit Rate.
    pub const UE_AGGREGATE_MAXIMUM_BIT_RATE: u16 = 110;
    /// UE Context Request.
    pub const UE_CONTEXT_REQUEST: u16 = 112;
    /// UE NGAP IDs.
    pub const UE_NGAP_IDS: u16 = 114;
    /// UE Security Capabilities.
    pub const UE_SECURITY_CAPABILITIES: u16 = 119;
    /// User Location Information.
    pub const USER_LOCATION_INFORMATION: u16 = 121;
    /// Cause.
    pub const CAUSE: u16 = 15;
    /// Criticality Diagnostics.
    pub const CRITICALITY_DIAGNOSTICS: u16 = 19;
    /// Default Paging DRX.
    pub const DEFAULT_PAGING_DRX: u16 = 21;
    /// Global RAN Node ID.
    pub const GLOBAL_RAN_NODE_ID: u16 = 27;
    /// PLMN Support List.
    pub const PLMN_SUPPORT_LIST: u16 = 80;
    /// RAN Node Name.
    pub const RAN_NODE_NAME: u16 = 82;
    /// RAN UE NGAP ID.
    pub const RAN_UE_NGAP_ID: u16 = 85;
    /// Relative AMF Capacity.
    pub const RELATIVE_AMF_CAPACITY: u16 = 86;
    /// Served GUAMI List.
    pub const SERVED_GUAMI_LIST: u16 = 96;
    /// Supported TA List.
    pub const SUPPORTED_TA_LIST: u16 = 102;
    /// Time To Wait.
    pub const TIME_TO_WAIT: u16 = 107;
}

/// The three kinds of NGAP PDU (TS 38.413 §9.4.2), which Criticality Diagnostics call
/// the triggering message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// initiatingMessage.
    InitiatingMessage,
    /// successfulOutcome.
    SuccessfulOutcome,
    /// unsuccessfulOutcome.
    UnsuccessfulOutcome,
}

/// Criticality (TS 38.413 §9.3.1.3 and §10.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Criticality {
    /// Reject IE / procedure.
    Reject,
    /// Ignore IE and notify sender.
    Notify,
    /// Ignore IE.
    Ignore,
}

/// The messages this module reads and builds, and everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageKind {
    /// NG SETUP REQUEST (TS 38.413 §9.2.6.1).
    NgSetupRequest,
    /// NG SETUP RESPONSE (§9.2.6.2).
    NgSetupResponse,
    /// NG SETUP FAILURE (§9.2.6.3).
    NgSetupFailure,
    /// ERROR INDICATION (§9.2.7.1).
    ErrorIndication,
    /// INITIAL UE MESSAGE (§9.2.5.1).
    InitialUeMessage,
    /// DOWNLINK NAS TRANSPORT (§9.2.5.2).
    DownlinkNasTransport,
    /// UPLINK NAS TRANSPORT (§9.2.5.3).
    UplinkNasTransport,
    /// NAS NON DELIVERY INDICATION (§9.2.5.5).
    NasNonDeliveryIndication,
    /// INITIAL CONTEXT SETUP REQUEST (§9.2.2.1).
    InitialContextSetupRequest,
    /// INITIAL CONTEXT SETUP RESPONSE (§9.2.2.2).
    InitialContextSetupResponse,
    /// INITIAL CONTEXT SETUP FAILURE (§9.2.2.3).
    InitialContextSetupFailure,
    /// UE CONTEXT RELEASE REQUEST (§9.2.2.4).
    UeContextReleaseRequest,
    /// UE CONTEXT RELEASE COMMAND (§9.2.2.5).
    UeContextReleaseCommand,
    /// UE CONTEXT RELEASE COMPLETE (§9.2.2.6).
    UeContextReleaseComplete,
    /// PDU SESSION RESOURCE SETUP REQUEST (§9.2.1.1).
    PduSessionResourceSetupRequest,
    /// PDU SESSION RESOURCE SETUP RESPONSE (§9.2.1.2).
    PduSessionResourceSetupResponse,
    /// PDU SESSION RESOURCE RELEASE COMMAND (§9.2.1.3).
    PduSessionResourceReleaseCommand,
    /// PDU SESSION RESOURCE RELEASE RESPONSE (§9.2.1.4).
    PduSessionResourceReleaseResponse,
    /// OVERLOAD START (§9.2.6.7).
    OverloadStart,
    /// OVERLOAD STOP (§9.2.6.8).
    OverloadStop,
    /// A message of the specification that this module has no struct for yet.
    Other,
    /// A procedure code that TS 38.413 Rel-19 does not have in this direction.
    UnknownProcedure,
}

/// One NGAP PDU, decoded as far as its envelope: direction, procedure code, criticality
/// and the octets of its message, whose IEs are read on demand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NgapPdu(pub(crate) asn::NGAP_PDU);

/// Octets that are not an NGAP PDU: a transfer syntax error (TS 38.413 §10.2).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("transfer syntax error: {reason}")]
pub struct DecodeError {
    /// What the APER decoder said.
    pub reason: String,
}

/// A value that cannot be put on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// An identity whose fields do not fit their widths.
    #[error("invalid identity: {0}")]
    Id(#[from] IdError),
    /// [`Cause::Unknown`] is only ever received.
    #[error("an unknown cause cannot be sent")]
    UnknownCause,
    /// A value outside its ASN.1 constraint, such as an empty list or a name over 150
    /// characters.
    #[error("does not encode: {0}")]
    Codec(String),
}

impl From<oxirush_ngap::Error> for EncodeError {
    fn from(e: oxirush_ngap::Error) -> Self {
        Self::Codec(e.to_string())
    }
}

/// Why a decoded PDU is not the message asked for, or not a well-formed one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The PDU holds another message.
    #[error("the PDU holds {found}, not {expected}")]
    WrongMessage {
        /// The message asked for.
        expected: &'static str,
        /// The message the PDU holds.
        found: &'static str,
    },
    /// A mandatory IE is missing (TS 38.413 §10.3.5).
    #[error("mandatory IE {id} is missing")]
    MissingIe {
        /// Its protocol IE ID.
        id: u16,
        /// The criticality the object set assigns it.
        criticality: Criticality,
    },
    /// An IE is present whose value does not decode as its type.
    #[error("IE {id} does not decode: {reason}")]
    UndecodableIe {
        /// Its protocol IE ID.
        id: u16,
        /// The criticality it was received with.
        criticality: Criticality,
        /// What the decoder said.
        reason: String,
    },
    /// The message's IE container itself does not decode.
    #[error("the message does not decode: {0}")]
    Malformed(String),
    /// An IE decodes but its value is not valid, as a PLMN identity with non-digits
    /// (TS 38.413 §10.4 semantic error).
    #[error("IE {id}: {source}")]
    InvalidValue {
        /// Its protocol IE ID.
        id: u16,
        /// What is wrong.
        source: IdError,
    },
}

impl ParseError {
    /// The protocol cause and the IE to report for this error, per TS 38.413 §10:
    /// §10.3.5 for a missing IE (by its criticality), §10.2 for an IE that does not
    /// decode, §10.4 for a semantic error. `None` where the receiver goes on: a missing
    /// IE of criticality ignore.
    pub fn fault(&self) -> Option<ProtocolFault> {
        let (cause, ie) = match self {
            Self::MissingIe { id, criticality } => {
                let cause = diagnostics::cause_by_criticality(*criticality)?;
                (cause, Some((*id, *criticality, TypeOfError::Missing)))
            }
            Self::UndecodableIe {
                id, criticality, ..
            } => (
                ProtocolCause::TransferSyntaxError,
                Some((*id, *criticality, TypeOfError::NotUnderstood)),
            ),
            Self::Malformed(_) => (ProtocolCause::TransferSyntaxError, None),
            Self::InvalidValue { .. } => (ProtocolCause::SemanticError, None),
            Self::WrongMessage { .. } => {
                (ProtocolCause::MessageNotCompatibleWithReceiverState, None)
            }
        };
        // §9.3.1.3: an IE of criticality ignore is never listed.
        let ies = ie
            .filter(|(_, c, _)| *c != Criticality::Ignore)
            .map(|(id, criticality, type_of_error)| IeDiagnostic {
                criticality,
                id,
                type_of_error,
            })
            .into_iter()
            .collect();
        Some(ProtocolFault {
            cause,
            ies,
            description: self.to_string(),
        })
    }

    pub(crate) fn from_codec(e: &oxirush_ngap::Error) -> Self {
        let ie = e.ie();
        match (e.kind(), ie) {
            (ErrorKind::MissingIe, Some(ie)) => Self::MissingIe {
                id: ie.id,
                criticality: convert::criticality_from_aper(ie.criticality),
            },
            (ErrorKind::UndecodableIe, Some(ie)) => Self::UndecodableIe {
                id: ie.id,
                criticality: convert::criticality_from_aper(ie.criticality),
                reason: e.reason(),
            },
            _ => Self::Malformed(e.to_string()),
        }
    }
}

/// Decodes one NGAP PDU (TS 38.413 §9.4) from the payload of one SCTP DATA message.
///
/// Only the envelope is decoded here; the IEs of the message are decoded when a
/// message struct parses them, so a faulty IE fails that parse alone.
pub fn decode(bytes: &[u8]) -> Result<NgapPdu, DecodeError> {
    DECODES.with(|n| n.set(n.get().wrapping_add(1)));
    asn::NGAP_PDU::decode(bytes)
        .map(NgapPdu)
        .map_err(|e| DecodeError {
            reason: e.to_string(),
        })
}

thread_local! {
    /// Calls of [`decode`] on this thread.
    static DECODES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many times [`decode`] ran on the calling thread: what shows that a message is
/// decoded once between the worker that reads it and the one that owns it.
pub fn decode_count() -> u64 {
    DECODES.with(std::cell::Cell::get)
}

/// Encodes one NGAP PDU in aligned PER.
pub fn encode(pdu: &NgapPdu) -> Result<Vec<u8>, EncodeError> {
    Ok(pdu.0.encode()?)
}

impl NgapPdu {
    /// The procedure code (TS 38.413 §9.4.7).
    pub fn procedure_code(&self) -> u8 {
        self.0.procedure_code()
    }

    /// The name of the procedure, or `"Unknown"`.
    pub fn procedure_name(&self) -> &'static str {
        self.0.procedure_name()
    }

    /// Initiating message, successful or unsuccessful outcome.
    pub fn direction(&self) -> Direction {
        match &self.0 {
            asn::NGAP_PDU::initiatingMessage(_) => Direction::InitiatingMessage,
            asn::NGAP_PDU::successfulOutcome(_) => Direction::SuccessfulOutcome,
            asn::NGAP_PDU::unsuccessfulOutcome(_) => Direction::UnsuccessfulOutcome,
            // The codec marks the PDU CHOICE non-exhaustive; NGAP-PDU has an extension
            // marker, and a later alternative is no outcome we could answer.
            _ => Direction::UnsuccessfulOutcome,
        }
    }

    /// The criticality the PDU carries for its procedure.
    pub fn criticality(&self) -> Criticality {
        convert::criticality_from_asn(self.0.criticality())
    }

    /// Which message the PDU holds.
    pub fn kind(&self) -> MessageKind {
        kind_of(self.0.kind())
    }

    /// Compares the message's IE container with the object set of its message
    /// (TS 38.413 §10.3): which IEs are there, in which order, how often and with which
    /// criticality, without decoding their values. Gives the fault the receiver answers,
    /// or `None` when it goes on (no deviation, or only ones it ignores).
    ///
    /// A procedure code that the receiver does not comprehend is handled by the PDU's
    /// criticality (§10.3.4.1); IEs in a wrong order or repeated make a falsely
    /// constructed message (§10.3.6); a not comprehended or missing IE goes by its
    /// criticality (§10.3.4.2, §10.3.5).
    ///
    /// # Errors
    /// The message's octets are not an IE container: a transfer syntax error (§10.2).
    pub fn check(&self) -> Result<Option<ProtocolFault>, DecodeError> {
        let deviations = self.0.check_structure().map_err(|e| DecodeError {
            reason: e.to_string(),
        })?;
        Ok(diagnostics::fault_of(&deviations))
    }

    /// The Criticality Diagnostics of the response message of this PDU's procedure for
    /// `ies` (TS 38.413 §9.3.1.3: the Procedure Code and Triggering Message are only
    /// in an ERROR INDICATION).
    pub fn diagnostics_for_response(&self, ies: &[IeDiagnostic]) -> CriticalityDiagnostics {
        CriticalityDiagnostics {
            procedure_code: None,
            triggering_message: None,
            procedure_criticality: Some(self.criticality()),
            ies: ies.to_vec(),
        }
    }

    /// The Criticality Diagnostics of an ERROR INDICATION answering this PDU for `ies`
    /// (TS 38.413 §9.3.1.3, §10.3.4.1).
    pub fn diagnostics_for_error_indication(&self, ies: &[IeDiagnostic]) -> CriticalityDiagnostics {
        CriticalityDiagnostics {
            procedure_code: Some(self.procedure_code()),
            triggering_message: Some(self.direction()),
            procedure_criticality: Some(self.criticality()),
            ies: ies.to_vec(),
        }
    }

    /// The AMF and RAN UE NGAP IDs the message carries, each `None` when absent or
    /// undecodable: what an ERROR INDICATION answering a UE-associated message echoes
    /// (TS 38.413 §8.7.4.2).
    pub fn ue_ngap_ids(&self) -> (Option<u64>, Option<u32>) {
        let amf = self
            .0
            .ie::<oxirush_ngap::ie::AMF_UE_NGAP_ID>()
            .and_then(Result::ok)
            .map(|id| id.0);
        let ran = self
            .0
            .ie::<oxirush_ngap::ie::RAN_UE_NGAP_ID>()
            .and_then(Result::ok)
            .map(|id| id.0);
        (amf, ran)
    }
}

/// The message kind of a codec's PDU kind.
fn kind_of(k: NgapPduKind) -> MessageKind {
    match k {
        NgapPduKind::Initiating_NGSetup => MessageKind::NgSetupRequest,
        NgapPduKind::Successful_NGSetup => MessageKind::NgSetupResponse,
        NgapPduKind::Unsuccessful_NGSetup => MessageKind::NgSetupFailure,
        NgapPduKind::Initiating_ErrorIndication => MessageKind::ErrorIndication,
        NgapPduKind::Initiating_InitialUEMessage => MessageKind::InitialUeMessage,
        NgapPduKind::Initiating_DownlinkNASTransport => MessageKind::DownlinkNasTransport,
        NgapPduKind::Initiating_UplinkNASTransport => MessageKind::UplinkNasTransport,
        NgapPduKind::Initiating_NASNonDeliveryIndication => MessageKind::NasNonDeliveryIndication,
        NgapPduKind::Initiating_InitialContextSetup => MessageKind::InitialContextSetupRequest,
        NgapPduKind::Successful_InitialContextSetup => MessageKind::InitialContextSetupResponse,
        NgapPduKind::Unsuccessful_InitialContextSetup => MessageKind::InitialContextSetupFailure,
        NgapPduKind::Initiating_UEContextReleaseRequest => MessageKind::UeContextReleaseRequest,
        NgapPduKind::Initiating_UEContextRelease => MessageKind::UeContextReleaseCommand,
        NgapPduKind::Successful_UEContextRelease => MessageKind::UeContextReleaseComplete,
        NgapPduKind::Initiating_PDUSessionResourceSetup => {
            MessageKind::PduSessionResourceSetupRequest
        }
        NgapPduKind::Successful_PDUSessionResourceSetup => {
            MessageKind::PduSessionResourceSetupResponse
        }
        NgapPduKind::Initiating_PDUSessionResourceRelease => {
            MessageKind::PduSessionResourceReleaseCommand
        }
        NgapPduKind::Successful_PDUSessionResourceRelease => {
            MessageKind::PduSessionResourceReleaseResponse
        }
        NgapPduKind::Initiating_OverloadStart => MessageKind::OverloadStart,
        NgapPduKind::Initiating_OverloadStop => MessageKind::OverloadStop,
        NgapPduKind::Other { .. } => MessageKind::UnknownProcedure,
        _ => MessageKind::Other,
    }
}
