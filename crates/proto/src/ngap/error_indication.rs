//! Error Indication (TS 38.413 §8.7.4): ERROR INDICATION (§9.2.7.1), either way.

use oxirush_ngap::ngap as asn;
use oxirush_ngap::{build_ngap_ie, extract_ngap_ies};

use super::setup_support::{decode_message, pdu_of};
use super::{Cause, CriticalityDiagnostics, EncodeError, NgapPdu, ParseError};

/// ERROR INDICATION (TS 38.413 §9.2.7.1). Every IE is optional; §8.7.4.2 asks for at
/// least one of Cause and Criticality Diagnostics, and for the UE NGAP IDs when the
/// error concerns a UE-associated logical connection.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorIndication {
    /// AMF UE NGAP ID (40 bits).
    pub amf_ue_ngap_id: Option<u64>,
    /// RAN UE NGAP ID.
    pub ran_ue_ngap_id: Option<u32>,
    /// Cause.
    pub cause: Option<Cause>,
    /// Criticality Diagnostics.
    pub criticality_diagnostics: Option<CriticalityDiagnostics>,
}

/// AMF UE NGAP ID is INTEGER (0..2^40-1) (TS 38.413 §9.3.3.1).
const AMF_UE_NGAP_ID_MAX: u64 = (1 << 40) - 1;

impl ErrorIndication {
    /// An indication with a cause alone.
    pub fn new(cause: impl Into<Cause>) -> Self {
        Self {
            cause: Some(cause.into()),
            ..Self::default()
        }
    }

    /// An indication about one UE-associated logical connection: the IDs it has
    /// (§8.7.4.2 asks for both when both are known) and the cause.
    pub fn for_ue(
        amf_ue_ngap_id: Option<u64>,
        ran_ue_ngap_id: Option<u32>,
        cause: impl Into<Cause>,
    ) -> Self {
        Self {
            amf_ue_ngap_id,
            ran_ue_ngap_id,
            cause: Some(cause.into()),
            criticality_diagnostics: None,
        }
    }

    /// Reads an ERROR INDICATION. IEs that do not decode are left out: all are of
    /// criticality ignore, and §10.5 has errors in an ERROR INDICATION handled locally.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::ErrorIndication = decode_message(pdu, "ErrorIndication")?;
        // Only `lax` fields: an IE that does not decode counts as absent, so nothing
        // here fails.
        extract_ngap_ies!(msg, ErrorIndication,
            lax amf: u64 = AMF_UE_NGAP_ID(id),
            lax ran: u32 = RAN_UE_NGAP_ID(id),
            lax cause: asn::Cause = Cause(c) => c,
            lax diag: asn::CriticalityDiagnostics = CriticalityDiagnostics(d) => d,
        );

        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            cause: cause.as_ref().map(Cause::from_asn),
            criticality_diagnostics: diag.as_ref().map(CriticalityDiagnostics::from_asn),
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let mut ies = Vec::new();
        if let Some(id) = self.amf_ue_ngap_id {
            if id > AMF_UE_NGAP_ID_MAX {
                return Err(EncodeError::Codec(format!(
                    "AMF UE NGAP ID {id} exceeds 40 bits"
                )));
            }
            ies.push(build_ngap_ie!(ErrorIndication, AMF_UE_NGAP_ID(id))?);
        }
        if let Some(id) = self.ran_ue_ngap_id {
            ies.push(build_ngap_ie!(ErrorIndication, RAN_UE_NGAP_ID(id))?);
        }
        if let Some(c) = self.cause {
            let c = c.to_asn().ok_or(EncodeError::UnknownCause)?;
            ies.push(build_ngap_ie!(ErrorIndication, Cause(c))?);
        }
        if let Some(d) = &self.criticality_diagnostics {
            ies.push(build_ngap_ie!(
                ErrorIndication,
                CriticalityDiagnostics(d.to_asn())
            )?);
        }
        pdu_of(&asn::ErrorIndication::new(asn::ProtocolIEContainer(ies)))
    }

    /// Builds and encodes the PDU.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        super::encode(&self.to_pdu()?)
    }
}
