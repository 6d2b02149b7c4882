//! AMF overload (TS 38.413 §8.7.6, §8.7.7): OVERLOAD START (§9.2.6.7) and OVERLOAD STOP
//! (§9.2.6.8), AMF → NG-RAN node, non-UE-associated.

use oxirush_ngap::ngap as asn;
use oxirush_ngap::{build_ngap_ie, extract_ngap_ies};

use super::setup_support::{decode_message, pdu_of};
use super::{EncodeError, NgapPdu, ParseError};

/// The AMF Overload Response's action (TS 38.413 §9.3.1.105): what the NG-RAN node sheds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OverloadAction {
    /// Reject RRC connection establishments for non-emergency mobile originated data.
    RejectNonEmergencyMoData,
    /// Reject RRC connection establishments for signalling.
    RejectRrcSignalling,
    /// Permit emergency sessions and mobile terminated services only.
    EmergencyAndMtOnly,
    /// Permit high priority sessions and mobile terminated services only.
    HighPriorityAndMtOnly,
}

impl OverloadAction {
    fn to_asn(self) -> asn::OverloadAction {
        match self {
            Self::RejectNonEmergencyMoData => asn::OverloadAction::reject_non_emergency_mo_dt,
            Self::RejectRrcSignalling => asn::OverloadAction::reject_rrc_cr_signalling,
            Self::EmergencyAndMtOnly => {
                asn::OverloadAction::permit_emergency_sessions_and_mobile_terminated_services_only
            }
            Self::HighPriorityAndMtOnly => {
                asn::OverloadAction::permit_high_priority_sessions_and_mobile_terminated_services_only
            }
        }
    }

    fn from_asn(a: asn::OverloadAction) -> Option<Self> {
        match a {
            asn::OverloadAction::reject_non_emergency_mo_dt => Some(Self::RejectNonEmergencyMoData),
            asn::OverloadAction::reject_rrc_cr_signalling => Some(Self::RejectRrcSignalling),
            asn::OverloadAction::permit_emergency_sessions_and_mobile_terminated_services_only => {
                Some(Self::EmergencyAndMtOnly)
            }
            asn::OverloadAction::permit_high_priority_sessions_and_mobile_terminated_services_only => {
                Some(Self::HighPriorityAndMtOnly)
            }
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}

/// OVERLOAD START (TS 38.413 §9.2.6.7), AMF → NG-RAN node: the AMF is overloaded; the
/// node reduces the signalling towards it as the IEs say (§8.7.6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OverloadStart {
    /// AMF Overload Response (optional, reject): the action the node takes; absent, the
    /// node chooses (§8.7.6.2).
    pub response: Option<OverloadAction>,
    /// AMF Traffic Load Reduction Indication (optional, ignore, §9.3.1.106): the
    /// percentage of the traffic the node is asked to shed, 1 to 99.
    pub traffic_load_reduction: Option<u8>,
}

impl OverloadStart {
    /// Reads an OVERLOAD START. The Overload Start NSSAI List is not read.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::OverloadStart = decode_message(pdu, "OverloadStart")?;
        extract_ngap_ies!(msg, OverloadStart,
            lax response: asn::OverloadResponse = AMFOverloadResponse(r) => r,
            lax reduction: u8 = AMFTrafficLoadReductionIndication(t) => t.0,
        );
        let response = match response {
            Some(asn::OverloadResponse::overloadAction(a)) => OverloadAction::from_asn(a),
            _ => None,
        };
        Ok(Self {
            response,
            traffic_load_reduction: reduction.filter(|p| (1..=99).contains(p)),
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let mut ies = Vec::new();
        if let Some(a) = self.response {
            ies.push(build_ngap_ie!(
                OverloadStart,
                AMFOverloadResponse(asn::OverloadResponse::overloadAction(a.to_asn()))
            )?);
        }
        if let Some(p) = self.traffic_load_reduction {
            // §9.3.1.106: INTEGER (1..99).
            if !(1..=99).contains(&p) {
                return Err(EncodeError::Codec(format!(
                    "traffic load reduction {p}% is not 1 to 99"
                )));
            }
            ies.push(build_ngap_ie!(
                OverloadStart,
                AMFTrafficLoadReductionIndication(asn::TrafficLoadReductionIndication(p))
            )?);
        }
        pdu_of(&asn::OverloadStart::new(asn::ProtocolIEContainer(ies)))
    }

    /// Builds and encodes the PDU.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        super::encode(&self.to_pdu()?)
    }
}

/// OVERLOAD STOP (TS 38.413 §9.2.6.8), AMF → NG-RAN node: the overload is over; the node
/// resumes normal operation towards the AMF (§8.7.7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OverloadStop;

impl OverloadStop {
    /// Reads an OVERLOAD STOP.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let _: asn::OverloadStop = decode_message(pdu, "OverloadStop")?;
        Ok(Self)
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        pdu_of(&asn::OverloadStop::new(
            asn::ProtocolIEContainer(Vec::new()),
        ))
    }

    /// Builds and encodes the PDU.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        super::encode(&self.to_pdu()?)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ngap::{decode, MessageKind};

    #[test]
    fn overload_start_round_trips_with_its_ies() {
        let m = OverloadStart {
            response: Some(OverloadAction::RejectNonEmergencyMoData),
            traffic_load_reduction: Some(40),
        };
        let octets = m.encode().unwrap();
        let pdu = decode(&octets).unwrap();
        assert_eq!(pdu.kind(), MessageKind::OverloadStart);
        assert_eq!(pdu.check().unwrap(), None);
        assert_eq!(OverloadStart::parse(&pdu).unwrap(), m);
        let bare = OverloadStart::default();
        let pdu = decode(&bare.encode().unwrap()).unwrap();
        assert_eq!(OverloadStart::parse(&pdu).unwrap(), bare);
        let too_much = OverloadStart {
            traffic_load_reduction: Some(100),
            ..bare
        };
        assert!(too_much.encode().is_err());
    }

    #[test]
    fn overload_stop_round_trips() {
        let octets = OverloadStop.encode().unwrap();
        let pdu = decode(&octets).unwrap();
        assert_eq!(pdu.kind(), MessageKind::OverloadStop);
        assert_eq!(OverloadStop::parse(&pdu).unwrap(), OverloadStop);
        // Procedure code 23, initiating message, criticality reject (TS 38.413 §9.4.4).
        assert_eq!(octets[..2], [0x00, 0x17]);
        assert!(OverloadStart::parse(&pdu).is_err());
    }
}
