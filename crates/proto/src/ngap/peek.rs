//! The routing fields of an NGAP PDU, read from its aligned PER octets without decoding
//! the PDU: what the worker that reads an association needs to pick the owner of a
//! UE-associated message, which then decodes it once ([`super::decode`]).
//!
//! The walk follows TS 38.413 §9.4 in X.691 aligned PER:
//!
//! - `NGAP-PDU ::= CHOICE { initiatingMessage, successfulOutcome, unsuccessfulOutcome,
//!   ... }`: an extension bit and a 2-bit index (§9.4.2);
//! - each outcome is `SEQUENCE { procedureCode INTEGER (0..255), criticality ENUMERATED
//!   {reject, ignore, notify}, value OPEN TYPE }`: one aligned octet, 2 bits, then the
//!   message as an open type (a length determinant and its octets, X.691 §11.2, §11.9);
//! - every UE-associated message is `SEQUENCE { protocolIEs ProtocolIE-Container, ... }`:
//!   an extension bit, then the count of IEs as a constrained number of 0..65535 (two
//!   aligned octets), then per IE `id INTEGER (0..65535)`, `criticality` and its value as
//!   an open type (§9.4.3, §9.4.4).
//!
//! Only the IE headers are looked at; the values of AMF-UE-NGAP-ID (id 10), RAN-UE-NGAP-ID
//! (id 85) and, in an INITIAL UE MESSAGE, 5G-S-TMSI (id 26: AMF Set ID of 10 bits, AMF
//! Pointer of 6 bits, 5G-TMSI of 4 octets, §9.3.3.20) are decoded, each by the codec's own
//! type so that the answer is the one the full decode gives. The walk stops as soon as it
//! has them. Like [`super::NgapPdu::ue_ngap_ids`], it takes the first occurrence of each
//! IE, and an IE whose value does not decode gives `None`.

use oxirush_ngap::aper::Reader;
use oxirush_ngap::ngap as asn;
use thiserror::Error;

use super::{kind_of, MessageKind};
use crate::nas::STmsi;

const ID_AMF_UE_NGAP_ID: u64 = 10;
const ID_FIVE_G_S_TMSI: u64 = 26;
const ID_RAN_UE_NGAP_ID: u64 = 85;

/// What routing needs of one NGAP PDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peek {
    /// The message, as [`super::NgapPdu::kind`] names it.
    pub kind: MessageKind,
    /// The procedure code (TS 38.413 §9.4.7).
    pub procedure_code: u8,
    /// The first AMF-UE-NGAP-ID, in the messages that [`Peek::walks`] names.
    pub amf_ue_ngap_id: Option<u64>,
    /// The first RAN-UE-NGAP-ID, likewise.
    pub ran_ue_ngap_id: Option<u32>,
    /// The 5G-S-TMSI of an INITIAL UE MESSAGE.
    pub five_g_s_tmsi: Option<STmsi>,
}

impl Peek {
    /// Whether the IEs of a message of `kind` are looked at: the UE-associated messages
    /// that a gNB sends an AMF. Of any other PDU only the kind is read.
    pub fn walks(kind: MessageKind) -> bool {
        matches!(
            kind,
            MessageKind::InitialUeMessage
                | MessageKind::UplinkNasTransport
                | MessageKind::NasNonDeliveryIndication
                | MessageKind::InitialContextSetupResponse
                | MessageKind::InitialContextSetupFailure
                | MessageKind::UeContextReleaseRequest
                | MessageKind::UeContextReleaseComplete
                | MessageKind::PduSessionResourceSetupResponse
                | MessageKind::PduSessionResourceReleaseResponse
        )
    }
}

/// Octets whose envelope is not an NGAP PDU (TS 38.413 §10.2).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("not an NGAP PDU: {reason}")]
pub struct PeekError {
    /// What the envelope's decoder said.
    pub reason: String,
}

/// Reads the routing fields of one NGAP PDU. Total, and bounded: the envelope, then the
/// IE headers of the message up to the last IE it needs, and the values of at most three
/// IEs. An error only when the envelope itself does not decode, where [`super::decode`]
/// fails too; a message container that ends early or does not decode leaves the fields
/// not yet found `None`.
pub fn peek(bytes: &[u8]) -> Result<Peek, PeekError> {
    let bad = |e: oxirush_ngap::aper::Error| PeekError {
        reason: e.to_string(),
    };
    let mut r = Reader::new(bytes);
    let alternative = r.choice(3, 0, true).map_err(bad)?;
    let code = r.unsigned(0, 255).map_err(bad)? as u8;
    let criticality = match r.unsigned(0, 2).map_err(bad)? {
        0 => asn::Criticality::reject,
        1 => asn::Criticality::ignore,
        _ => asn::Criticality::notify,
    };
    let value = r.open_type().map_err(bad)?;
    r.finish().map_err(bad)?;
    let kind = kind_of(envelope(alternative, code, criticality).kind());
    let mut p = Peek {
        kind,
        procedure_code: code,
        amf_ue_ngap_id: None,
        ran_ue_ngap_id: None,
        five_g_s_tmsi: None,
    };
    if Peek::walks(kind) {
        walk(&value, kind == MessageKind::InitialUeMessage, &mut p);
    }
    Ok(p)
}

/// An envelope with no message, to have the codec name the message kind.
fn envelope(alternative: u64, code: u8, criticality: asn::Criticality) -> asn::NGAPPDU<'static> {
    let procedure_code = asn::ProcedureCode(code);
    let value = oxirush_ngap::aper::Octets::borrowed(&[]);
    match alternative {
        0 => asn::NGAPPDU::initiatingMessage(asn::InitiatingMessage {
            procedure_code,
            criticality,
            value,
        }),
        1 => asn::NGAPPDU::successfulOutcome(asn::SuccessfulOutcome {
            procedure_code,
            criticality,
            value,
        }),
        _ => asn::NGAPPDU::unsuccessfulOutcome(asn::UnsuccessfulOutcome {
            procedure_code,
            criticality,
            value,
        }),
    }
}

/// Walks the protocol IEs of a message, filling in what it finds; stops at the end of
/// the container, at the first fault, or once every wanted field is decided.
fn walk(message: &[u8], s_tmsi: bool, p: &mut Peek) {
    let mut r = Reader::new(message);
    // The message's extension bit; its root is the container alone.
    if r.bit().is_err() {
        return;
    }
    let Ok(count) = r.size(0, 65535) else {
        return;
    };
    let (mut amf, mut ran, mut tmsi) = (false, false, !s_tmsi);
    for _ in 0..count {
        if amf && ran && tmsi {
            return;
        }
        let Ok(id) = r.unsigned(0, 65535) else {
            return;
        };
        if r.unsigned(0, 2).is_err() {
            return;
        }
        let Ok(value) = r.open_type() else {
            return;
        };
        match id {
            ID_AMF_UE_NGAP_ID if !amf => {
                amf = true;
                p.amf_ue_ngap_id = asn::decode_open_type::<asn::AMFUENGAPID>(&value)
                    .ok()
                    .map(|v| v.0);
            }
            ID_RAN_UE_NGAP_ID if !ran => {
                ran = true;
                p.ran_ue_ngap_id = asn::decode_open_type::<asn::RANUENGAPID>(&value)
                    .ok()
                    .map(|v| v.0);
            }
            ID_FIVE_G_S_TMSI if !tmsi => {
                tmsi = true;
                p.five_g_s_tmsi = asn::decode_open_type::<asn::FiveGSTMSI>(&value)
                    .ok()
                    .map(|t| super::ue::s_tmsi_from_asn(&t));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncations_never_panic() {
        let pdu = hex_pdu();
        for n in 0..pdu.len() {
            let _ = peek(&pdu[..n]);
        }
        assert!(peek(&[]).is_err());
        assert!(peek(&[0xff; 7]).is_err());
        let mut trailing = pdu.clone();
        trailing.push(0);
        assert!(peek(&trailing).is_err(), "an octet after the PDU");
    }

    #[test]
    fn reads_a_ue_context_release_request() {
        let p = peek(&hex_pdu()).unwrap();
        assert_eq!(p.kind, MessageKind::UeContextReleaseRequest);
        assert_eq!(p.procedure_code, 42);
        assert_eq!((p.amf_ue_ngap_id, p.ran_ue_ngap_id), (Some(42), Some(7)));
        assert_eq!(p.five_g_s_tmsi, None);
    }

    /// A UE CONTEXT RELEASE REQUEST: AMF-UE-NGAP-ID 42, RAN-UE-NGAP-ID 7, a cause.
    fn hex_pdu() -> Vec<u8> {
        vec![
            0x00, 0x2a, 0x40, 0x15, 0x00, 0x00, 0x03, 0x00, 0x0a, 0x00, 0x02, 0x00, 0x2a, 0x00,
            0x55, 0x00, 0x02, 0x00, 0x07, 0x00, 0x0f, 0x40, 0x02, 0x05, 0x00,
        ]
    }
}
