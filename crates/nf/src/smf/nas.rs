//! The 5GSM messages of a PDU session (TS 24.501 §6.4.1, §6.4.3, §8.3) on top of the
//! `oxirush-nas` codec: what the SMF reads from the UE and what it builds for it.

use std::net::Ipv4Addr;

use oxirush_nas::nas_5gs as ox;

use super::SmError;

/// 5GSM causes the SMF sends (TS 24.501 §9.11.4.2).
pub use ox::GsmCause;

/// What the SMF needs from a PDU Session Establishment Request (§8.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EstablishmentRequest {
    /// PDU session identity (header octet 2).
    pub psi: u8,
    /// Procedure transaction identity (header octet 3).
    pub pti: u8,
    /// The requested PDU session type; `None` when the UE left it out (§6.4.1.2: the network
    /// then picks).
    pub pdu_type: Option<u8>,
}

/// What a UE sends in an N1 SM container once a session exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UeSm {
    /// PDU Session Release Request (§8.3.12).
    ReleaseRequest {
        /// PTI.
        pti: u8,
    },
    /// PDU Session Release Complete (§8.3.15).
    ReleaseComplete,
    /// Any other 5GSM message type.
    Other(u8),
}

fn decode(octets: &[u8]) -> Result<(ox::Nas5gsmHeader, ox::Nas5gsmMessage), SmError> {
    match ox::Nas5gsMessage::decode(octets) {
        Ok(ox::Nas5gsMessage::Gsm(h, m)) => Ok((h, m)),
        Ok(_) => Err(SmError::N1("not a 5GSM message".into())),
        Err(e) => Err(SmError::N1(e.to_string())),
    }
}

/// Decodes the N1 SM container of CreateSMContext.
pub fn establishment_request(octets: &[u8]) -> Result<EstablishmentRequest, SmError> {
    match decode(octets)? {
        (h, ox::Nas5gsmMessage::PduSessionEstablishmentRequest(r)) => Ok(EstablishmentRequest {
            psi: h.pdu_session_identity,
            pti: h.procedure_transaction_identity,
            pdu_type: r.pdu_session_type.as_ref().map(|t| t.session_type_raw()),
        }),
        _ => Err(SmError::N1(
            "not a PDU Session Establishment Request".into(),
        )),
    }
}

/// Decodes an N1 SM container of UpdateSMContext.
pub fn ue_sm(octets: &[u8]) -> Result<UeSm, SmError> {
    let (h, m) = decode(octets)?;
    Ok(match m {
        ox::Nas5gsmMessage::PduSessionReleaseRequest(_) => UeSm::ReleaseRequest {
            pti: h.procedure_transaction_identity,
        },
        ox::Nas5gsmMessage::PduSessionReleaseComplete(_) => UeSm::ReleaseComplete,
        other => UeSm::Other(other.message_type().as_u8()),
    })
}

/// The (unit, value) pair of a session AMBR field (§9.11.4.14) for `bps`: the finest unit
/// whose 16-bit value holds it, rounding down.
fn ambr_field(bps: u64) -> (u8, u16) {
    // Units 1 kbps (0x01), 1 Mbps (0x06), 1 Gbps (0x0B), 1 Tbps (0x10), 1 Pbps (0x15).
    const UNITS: [(u8, u64); 5] = [
        (0x01, 1_000),
        (0x06, 1_000_000),
        (0x0B, 1_000_000_000),
        (0x10, 1_000_000_000_000),
        (0x15, 1_000_000_000_000_000),
    ];
    for (unit, div) in UNITS {
        if let Ok(v) = u16::try_from(bps / div) {
            return (unit, v);
        }
    }
    (0x15, u16::MAX)
}

/// What goes into a PDU Session Establishment Accept.
#[derive(Debug, Clone)]
pub struct AcceptSpec<'a> {
    /// PSI and PTI echoed from the request.
    pub psi: u8,
    /// PTI.
    pub pti: u8,
    /// The UE's IPv4 address.
    pub ue_ip: Ipv4Addr,
    /// Session AMBR, bit/s (uplink, downlink).
    pub ambr_bps: (u64, u64),
    /// 5QI of the default QoS flow (QFI 1).
    pub five_qi: u8,
    /// The slice.
    pub sst: u8,
    /// Its SD.
    pub sd: Option<[u8; 3]>,
    /// The DNN.
    pub dnn: &'a str,
}

/// The QFI of the default QoS flow.
pub const DEFAULT_QFI: u8 = 1;

/// PDU Session Establishment Accept (§8.3.2) for an IPv4, SSC mode 1 session with one default
/// QoS rule (match-all, precedence 255, QFI 1) and its QoS flow description carrying the 5QI
/// (§6.4.1.3: the network provides the default QoS rule and the flow's parameters).
pub fn establishment_accept(s: &AcceptSpec<'_>) -> Result<Vec<u8>, SmError> {
    let filter = ox::QosPacketFilter::Match {
        direction: ox::QosPacketFilterDirection::Bidirectional,
        identifier: 1,
        components: vec![ox::QosPacketFilterComponent::MatchAll],
    };
    let rule = ox::QosRule::new(1, ox::QosRuleOpCode::Create)
        .with_default_rule(true)
        .with_packet_filters(vec![filter])
        .with_precedence(255)
        .with_qfi(DEFAULT_QFI);
    let enc = |e: ox::ValueError| SmError::Encode(e.to_string());
    let rules = ox::NasQosRules::from_rules(&[rule]).map_err(enc)?;
    let flow = ox::QosFlowDescription::new(
        DEFAULT_QFI,
        ox::QosFlowOpCode::Create,
        true,
        vec![ox::QosFlowParameter::FiveQi(s.five_qi)],
    );
    let flows = ox::NasQosFlowDescriptions::from_descriptions(&[flow]).map_err(enc)?;
    let mut ambr = ox::NasSessionAmbr::new(vec![]);
    let (ul_unit, ul) = ambr_field(s.ambr_bps.0);
    let (dl_unit, dl) = ambr_field(s.ambr_bps.1);
    ambr.set_uplink(ul_unit, ul);
    ambr.set_downlink(dl_unit, dl);
    let accept = ox::NasPduSessionEstablishmentAccept::new(
        ox::NasPduSessionType::from_session_type(ox::PduSessionTypeValue::Ipv4),
        ox::NasSscMode::from_mode(ox::SscModeValue::Ssc1),
        rules,
        ambr,
    )
    .with_pdu_address(ox::NasPduAddress::from_ipv4(s.ue_ip.octets()))
    .with_s_nssai(ox::NasSNssai::from_sst_sd(s.sst, s.sd))
    .with_authorized_qos_flow_descriptions(flows)
    .with_dnn(ox::NasDnn::from_string(s.dnn).map_err(enc)?);
    encode(ox::Nas5gsMessage::new_5gsm(accept, s.psi, s.pti))
}

/// PDU Session Establishment Reject (§8.3.3) with `cause`.
pub fn establishment_reject(psi: u8, pti: u8, cause: GsmCause) -> Result<Vec<u8>, SmError> {
    let m = ox::NasPduSessionEstablishmentReject::new(ox::NasFGsmCause::from_cause(cause));
    encode(ox::Nas5gsMessage::new_5gsm(m, psi, pti))
}

/// PDU Session Release Command (§8.3.14) with `cause`.
pub fn release_command(psi: u8, pti: u8, cause: GsmCause) -> Result<Vec<u8>, SmError> {
    let m = ox::NasPduSessionReleaseCommand::new(ox::NasFGsmCause::from_cause(cause));
    encode(ox::Nas5gsMessage::new_5gsm(m, psi, pti))
}

fn encode(m: ox::Nas5gsMessage) -> Result<Vec<u8>, SmError> {
    m.encode().map_err(|e| SmError::Encode(e.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ambr_units() {
        assert_eq!(ambr_field(1_000_000_000), (0x06, 1000));
        assert_eq!(ambr_field(64_000), (0x01, 64));
        assert_eq!(ambr_field(100_000_000_000), (0x0B, 100));
        assert_eq!(ambr_field(u64::MAX), (0x15, 18_446));
    }

    #[test]
    fn accept_decodes_with_what_went_in() {
        let octets = establishment_accept(&AcceptSpec {
            psi: 5,
            pti: 1,
            ue_ip: Ipv4Addr::new(10, 45, 0, 2),
            ambr_bps: (1_000_000_000, 2_000_000_000),
            five_qi: 9,
            sst: 1,
            sd: Some([0, 0, 1]),
            dnn: "internet",
        })
        .unwrap();
        let (h, m) = decode(&octets).unwrap();
        assert_eq!(
            (h.pdu_session_identity, h.procedure_transaction_identity),
            (5, 1)
        );
        let ox::Nas5gsmMessage::PduSessionEstablishmentAccept(a) = m else {
            panic!("{m:?}")
        };
        assert_eq!(a.pdu_address.unwrap().ipv4(), Some([10, 45, 0, 2]));
        assert_eq!(a.session_ambr.uplink_kbps(), Some(1_000_000));
        assert_eq!(a.session_ambr.downlink_kbps(), Some(2_000_000));
        let rules = a.authorized_qos_rules.rules();
        assert_eq!(rules.len(), 1);
        assert!(rules[0].dqr);
        assert_eq!(rules[0].qfi, Some(1));
        let flows = a
            .authorized_qos_flow_descriptions
            .unwrap()
            .try_descriptions()
            .unwrap();
        assert_eq!(flows[0].params, vec![ox::QosFlowParameter::FiveQi(9)]);
        assert_eq!(a.dnn.unwrap().as_string().as_deref(), Some("internet"));
    }

    #[test]
    fn reject_and_requests() {
        let r = establishment_reject(3, 7, GsmCause::MissingOrUnknownDnn).unwrap();
        let (_, m) = decode(&r).unwrap();
        let ox::Nas5gsmMessage::PduSessionEstablishmentReject(j) = m else {
            panic!()
        };
        assert_eq!(j.fgsm_cause.cause_raw(), 27);
        let rate = ox::NasIntegrityProtectionMaximumDataRate::new(0xffff);
        let req =
            ox::Nas5gsMessage::new_5gsm(ox::NasPduSessionEstablishmentRequest::new(rate), 5, 1)
                .encode()
                .unwrap();
        assert_eq!(
            establishment_request(&req).unwrap(),
            EstablishmentRequest {
                psi: 5,
                pti: 1,
                pdu_type: None
            }
        );
        assert!(establishment_request(&r).is_err());
        assert!(establishment_request(&[]).is_err());
        let rel = ox::Nas5gsMessage::new_5gsm(ox::NasPduSessionReleaseRequest::new(), 5, 2)
            .encode()
            .unwrap();
        assert_eq!(ue_sm(&rel).unwrap(), UeSm::ReleaseRequest { pti: 2 });
        for n in 0..req.len() {
            let _ = establishment_request(&req[..n]);
        }
    }
}
