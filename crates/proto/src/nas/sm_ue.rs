//! The UE side of PDU session management (TS 24.501 §6.4.1, §6.4.3, §6.3.3): the 5GSM
//! messages of establishment and release, and the UL / DL NAS TRANSPORT (§8.2.10,
//! §8.2.11) that carries them between the UE and the AMF.
//!
//! Each 5GSM message is a plain struct with its header fields (PDU session ID, PTI);
//! [`SmMessage`] reads any of them. IE values the emulator acts on are typed, others
//! are kept as octets. Decoding is total.

use std::net::Ipv4Addr;

use oxirush_nas::nas_5gs as ox;
use oxirush_nas::nas_5gs::{Nas5gmmMessage, Nas5gsMessage, Nas5gsmMessage};

use super::ie::{nssai_from_octets, nssai_to_octets};
use super::NasError;
use crate::ids::Snssai;

/// Extended protocol discriminator of 5GSM (TS 24.007 §11.2.3.1.1A).
pub const EPD_5GSM: u8 = 0x2e;
/// UL NAS TRANSPORT message type (TS 24.501 Table 9.7.1).
pub const UL_NAS_TRANSPORT: u8 = 0x67;
/// DL NAS TRANSPORT message type.
pub const DL_NAS_TRANSPORT: u8 = 0x68;
/// Payload container type "N1 SM information" (§9.11.3.40).
pub const PAYLOAD_N1_SM: u8 = 0x01;
/// Request type "initial request" (§9.11.3.47).
pub const REQUEST_INITIAL: u8 = 0x01;
/// PDU session type IPv4 (§9.11.4.11).
pub const PDU_SESSION_TYPE_IPV4: u8 = 0x01;
/// SSC mode 1 (§9.11.4.16).
pub const SSC_MODE_1: u8 = 0x01;
/// 5GSM cause #36 regular deactivation (§9.11.4.2).
pub const CAUSE_REGULAR_DEACTIVATION: u8 = 36;

fn codec(e: oxirush_nas::nas_5gs::NasError) -> NasError {
    NasError::Codec(e.to_string())
}

fn invalid(ie: &'static str, reason: impl Into<String>) -> NasError {
    NasError::InvalidIe {
        ie,
        reason: reason.into(),
    }
}

/// An S-NSSAI IE value (§9.11.2.8), without its length octet.
fn snssai_value(s: &Snssai) -> Result<Vec<u8>, NasError> {
    let mut v = nssai_to_octets(std::slice::from_ref(s))?;
    v.remove(0);
    Ok(v)
}

fn snssai_from_value(v: &[u8]) -> Result<Snssai, NasError> {
    let len = u8::try_from(v.len()).map_err(|_| invalid("S-NSSAI", "too long"))?;
    let mut framed = vec![len];
    framed.extend_from_slice(v);
    nssai_from_octets(&framed)?
        .into_iter()
        .next()
        .ok_or_else(|| invalid("S-NSSAI", "empty"))
}

/// A DNN as §9.11.2.1B encodes it: the labels of an APN (TS 23.003 §9.1), each after
/// its length.
pub fn dnn_to_octets(dnn: &str) -> Result<Vec<u8>, NasError> {
    let mut v = Vec::with_capacity(dnn.len() + 1);
    for label in dnn.split('.') {
        let len = u8::try_from(label.len())
            .ok()
            .filter(|l| (1..=63).contains(l))
            .ok_or_else(|| invalid("DNN", format!("label {label:?} is not 1..63 octets")))?;
        v.push(len);
        v.extend_from_slice(label.as_bytes());
    }
    if v.len() > 100 {
        return Err(invalid("DNN", "longer than 100 octets"));
    }
    Ok(v)
}

/// The dotted DNN of §9.11.2.1B octets.
pub fn dnn_from_octets(mut v: &[u8]) -> Result<String, NasError> {
    let mut labels = Vec::new();
    while let Some((&len, rest)) = v.split_first() {
        let label = rest
            .get(..usize::from(len))
            .ok_or_else(|| invalid("DNN", "a label runs past the end"))?;
        labels.push(String::from_utf8_lossy(label).into_owned());
        v = &rest[usize::from(len)..];
    }
    Ok(labels.join("."))
}

/// Session-AMBR (§9.11.4.14) in kbit/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionAmbr {
    /// Downlink.
    pub dl_kbps: u64,
    /// Uplink.
    pub ul_kbps: u64,
}

impl SessionAmbr {
    /// §9.11.4.14: unit 0x01 is 1 Kbps and each next unit four times the last
    /// (0x06 = 1 Mbps = 1024 Kbps in this power-of-four series). The smallest unit
    /// whose 16-bit value reaches the rate is used, rounding up, so a session is never
    /// granted less than asked.
    fn encode_one(kbps: u64) -> Result<[u8; 3], NasError> {
        for unit in 1u8..=25 {
            let step = 4u64.pow(u32::from(unit - 1));
            if let Ok(v) = u16::try_from(kbps.div_ceil(step)) {
                let [h, l] = v.to_be_bytes();
                return Ok([unit, h, l]);
            }
        }
        Err(invalid(
            "Session-AMBR",
            format!("{kbps} kbit/s does not encode"),
        ))
    }

    fn decode_one(unit: u8, h: u8, l: u8) -> Result<u64, NasError> {
        if unit == 0 || unit > 25 {
            return Err(invalid("Session-AMBR", format!("unit {unit:#04x}")));
        }
        let step = 4u64.pow(u32::from(unit - 1));
        Ok(u64::from(u16::from_be_bytes([h, l])).saturating_mul(step))
    }

    fn to_octets(self) -> Result<Vec<u8>, NasError> {
        let mut v = Self::encode_one(self.dl_kbps)?.to_vec();
        v.extend_from_slice(&Self::encode_one(self.ul_kbps)?);
        Ok(v)
    }

    fn from_octets(v: &[u8]) -> Result<Self, NasError> {
        match v {
            [du, dh, dl, uu, uh, ul, ..] => Ok(Self {
                dl_kbps: Self::decode_one(*du, *dh, *dl)?,
                ul_kbps: Self::decode_one(*uu, *uh, *ul)?,
            }),
            _ => Err(invalid("Session-AMBR", "shorter than 6 octets")),
        }
    }
}

/// The QoS rules IE value (§9.11.4.13) of one default rule that matches all packets of
/// the session and maps them to `qfi`: what an SMF sends for a plain internet session.
pub fn default_qos_rule(qfi: u8) -> Vec<u8> {
    vec![
        1,    // QoS rule identifier
        0x00, // length of the rule (2 octets) ...
        0x06, // ... 6
        // Rule operation code 001 (create new), DQR, one packet filter.
        0b0011_0001,
        // Packet filter: bidirectional (11), identifier 1, one component of one
        // octet: match-all (0x01).
        0x31,
        0x01,
        0x01,
        255,        // precedence
        qfi & 0x3f, // segregation 0, QFI
    ]
}

/// The QFIs of the rules of a QoS rules IE value, as the codec reads them.
pub fn qos_rule_qfis(rules: &[u8]) -> Vec<u8> {
    ox::NasQosRules::new(rules.to_vec())
        .rules()
        .iter()
        .filter_map(|r| r.qfi)
        .collect()
}

/// PDU SESSION ESTABLISHMENT REQUEST (TS 24.501 §8.3.1), UE → SMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PduSessionEstablishmentRequest {
    /// PDU session ID (header).
    pub pdu_session_id: u8,
    /// Procedure transaction identity (header).
    pub pti: u8,
    /// PDU session type (§9.11.4.11); [`PDU_SESSION_TYPE_IPV4`].
    pub pdu_session_type: Option<u8>,
    /// SSC mode (§9.11.4.16).
    pub ssc_mode: Option<u8>,
}

/// PDU SESSION ESTABLISHMENT ACCEPT (TS 24.501 §8.3.2), SMF → UE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionEstablishmentAccept {
    /// PDU session ID (header).
    pub pdu_session_id: u8,
    /// Procedure transaction identity (header).
    pub pti: u8,
    /// Selected PDU session type.
    pub pdu_session_type: u8,
    /// Selected SSC mode.
    pub ssc_mode: u8,
    /// Authorized QoS rules (§9.11.4.13), octets.
    pub qos_rules: Vec<u8>,
    /// Session-AMBR.
    pub session_ambr: SessionAmbr,
    /// PDU address: the UE's IPv4 address.
    pub pdu_address: Option<Ipv4Addr>,
    /// S-NSSAI.
    pub snssai: Option<Snssai>,
    /// DNN.
    pub dnn: Option<String>,
}

/// PDU SESSION ESTABLISHMENT REJECT (TS 24.501 §8.3.3), SMF → UE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PduSessionEstablishmentReject {
    /// PDU session ID (header).
    pub pdu_session_id: u8,
    /// Procedure transaction identity (header).
    pub pti: u8,
    /// 5GSM cause (§9.11.4.2).
    pub cause: u8,
}

/// PDU SESSION RELEASE REQUEST (TS 24.501 §8.3.12), UE → SMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PduSessionReleaseRequest {
    /// PDU session ID (header).
    pub pdu_session_id: u8,
    /// Procedure transaction identity (header).
    pub pti: u8,
    /// 5GSM cause.
    pub cause: Option<u8>,
}

/// PDU SESSION RELEASE COMMAND (TS 24.501 §8.3.14), SMF → UE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PduSessionReleaseCommand {
    /// PDU session ID (header).
    pub pdu_session_id: u8,
    /// Procedure transaction identity (header): that of the UE's request, or 0.
    pub pti: u8,
    /// 5GSM cause.
    pub cause: u8,
}

/// PDU SESSION RELEASE COMPLETE (TS 24.501 §8.3.15), UE → SMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PduSessionReleaseComplete {
    /// PDU session ID (header).
    pub pdu_session_id: u8,
    /// Procedure transaction identity (header).
    pub pti: u8,
}

/// A 5GSM message of establishment or release.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SmMessage {
    /// PDU SESSION ESTABLISHMENT REQUEST.
    EstablishmentRequest(PduSessionEstablishmentRequest),
    /// PDU SESSION ESTABLISHMENT ACCEPT.
    EstablishmentAccept(PduSessionEstablishmentAccept),
    /// PDU SESSION ESTABLISHMENT REJECT.
    EstablishmentReject(PduSessionEstablishmentReject),
    /// PDU SESSION RELEASE REQUEST.
    ReleaseRequest(PduSessionReleaseRequest),
    /// PDU SESSION RELEASE COMMAND.
    ReleaseCommand(PduSessionReleaseCommand),
    /// PDU SESSION RELEASE COMPLETE.
    ReleaseComplete(PduSessionReleaseComplete),
}

impl SmMessage {
    /// The PDU session ID of the header.
    pub fn pdu_session_id(&self) -> u8 {
        match self {
            Self::EstablishmentRequest(m) => m.pdu_session_id,
            Self::EstablishmentAccept(m) => m.pdu_session_id,
            Self::EstablishmentReject(m) => m.pdu_session_id,
            Self::ReleaseRequest(m) => m.pdu_session_id,
            Self::ReleaseCommand(m) => m.pdu_session_id,
            Self::ReleaseComplete(m) => m.pdu_session_id,
        }
    }

    /// Encodes the plain 5GSM message.
    pub fn encode(&self) -> Result<Vec<u8>, NasError> {
        let (m, id, pti): (Nas5gsmMessage, u8, u8) = match self {
            Self::EstablishmentRequest(r) => {
                let mut m = ox::NasPduSessionEstablishmentRequest::new(
                    // §9.11.4.7: full data rate both ways; the emulator asks no limit.
                    ox::NasIntegrityProtectionMaximumDataRate::new(0xffff),
                );
                m.pdu_session_type = r.pdu_session_type.map(ox::NasPduSessionType::new);
                m.ssc_mode = r.ssc_mode.map(ox::NasSscMode::new);
                (m.into(), r.pdu_session_id, r.pti)
            }
            Self::EstablishmentAccept(a) => {
                let mut m = ox::NasPduSessionEstablishmentAccept::new(
                    ox::NasPduSessionType::new(a.pdu_session_type),
                    ox::NasSscMode::new(a.ssc_mode),
                    ox::NasQosRules::new(a.qos_rules.clone()),
                    ox::NasSessionAmbr::new(a.session_ambr.to_octets()?),
                );
                m.pdu_address = a.pdu_address.map(|ip| {
                    let mut v = vec![PDU_SESSION_TYPE_IPV4];
                    v.extend_from_slice(&ip.octets());
                    ox::NasPduAddress::new(v)
                });
                m.s_nssai = a
                    .snssai
                    .as_ref()
                    .map(|s| snssai_value(s).map(ox::NasSNssai::new))
                    .transpose()?;
                m.dnn = a
                    .dnn
                    .as_deref()
                    .map(|d| dnn_to_octets(d).map(ox::NasDnn::new))
                    .transpose()?;
                (m.into(), a.pdu_session_id, a.pti)
            }
            Self::EstablishmentReject(r) => (
                ox::NasPduSessionEstablishmentReject::new(ox::NasFGsmCause::new(r.cause)).into(),
                r.pdu_session_id,
                r.pti,
            ),
            Self::ReleaseRequest(r) => {
                let mut m = ox::NasPduSessionReleaseRequest::new();
                m.fgsm_cause = r.cause.map(ox::NasFGsmCause::new);
                (m.into(), r.pdu_session_id, r.pti)
            }
            Self::ReleaseCommand(r) => (
                ox::NasPduSessionReleaseCommand::new(ox::NasFGsmCause::new(r.cause)).into(),
                r.pdu_session_id,
                r.pti,
            ),
            Self::ReleaseComplete(r) => (
                ox::NasPduSessionReleaseComplete::new().into(),
                r.pdu_session_id,
                r.pti,
            ),
        };
        Nas5gsMessage::new_5gsm(m, id, pti).encode().map_err(codec)
    }

    /// Reads a plain 5GSM message.
    pub fn parse(octets: &[u8]) -> Result<Self, NasError> {
        if octets.first() != Some(&EPD_5GSM) {
            return Err(NasError::Codec("not a 5GSM message".into()));
        }
        let Nas5gsMessage::Gsm(h, m) = Nas5gsMessage::decode(octets).map_err(codec)? else {
            return Err(NasError::Codec("not a plain 5GSM message".into()));
        };
        let (id, pti) = (h.pdu_session_identity, h.procedure_transaction_identity);
        Ok(match m {
            Nas5gsmMessage::PduSessionEstablishmentRequest(r) => {
                Self::EstablishmentRequest(PduSessionEstablishmentRequest {
                    pdu_session_id: id,
                    pti,
                    pdu_session_type: r.pdu_session_type.map(|t| t.value & 0x07),
                    ssc_mode: r.ssc_mode.map(|t| t.value & 0x07),
                })
            }
            Nas5gsmMessage::PduSessionEstablishmentAccept(a) => {
                let pdu_address = match a.pdu_address.as_ref().map(|p| p.value.as_slice()) {
                    None => None,
                    Some([t, a, b, c, d, ..]) if t & 0x07 == PDU_SESSION_TYPE_IPV4 => {
                        Some(Ipv4Addr::new(*a, *b, *c, *d))
                    }
                    Some(_) => return Err(invalid("PDU address", "not an IPv4 address")),
                };
                Self::EstablishmentAccept(PduSessionEstablishmentAccept {
                    pdu_session_id: id,
                    pti,
                    pdu_session_type: a.selected_pdu_session_type.value & 0x07,
                    ssc_mode: a.selected_ssc_mode.value & 0x07,
                    qos_rules: a.authorized_qos_rules.value.to_vec(),
                    session_ambr: SessionAmbr::from_octets(&a.session_ambr.value)?,
                    pdu_address,
                    snssai: a
                        .s_nssai
                        .as_ref()
                        .map(|s| snssai_from_value(&s.value))
                        .transpose()?,
                    dnn: a
                        .dnn
                        .as_ref()
                        .map(|d| dnn_from_octets(&d.value))
                        .transpose()?,
                })
            }
            Nas5gsmMessage::PduSessionEstablishmentReject(r) => {
                Self::EstablishmentReject(PduSessionEstablishmentReject {
                    pdu_session_id: id,
                    pti,
                    cause: r.fgsm_cause.value,
                })
            }
            Nas5gsmMessage::PduSessionReleaseRequest(r) => {
                Self::ReleaseRequest(PduSessionReleaseRequest {
                    pdu_session_id: id,
                    pti,
                    cause: r.fgsm_cause.map(|c| c.value),
                })
            }
            Nas5gsmMessage::PduSessionReleaseCommand(r) => {
                Self::ReleaseCommand(PduSessionReleaseCommand {
                    pdu_session_id: id,
                    pti,
                    cause: r.fgsm_cause.value,
                })
            }
            Nas5gsmMessage::PduSessionReleaseComplete(_) => {
                Self::ReleaseComplete(PduSessionReleaseComplete {
                    pdu_session_id: id,
                    pti,
                })
            }
            other => {
                return Err(NasError::Unsupported(other.message_type().as_u8()));
            }
        })
    }
}

/// UL NAS TRANSPORT (TS 24.501 §8.2.10), UE → AMF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UlNasTransport {
    /// Payload container type ([`PAYLOAD_N1_SM`]).
    pub payload_container_type: u8,
    /// Payload container: the plain 5GSM message.
    pub payload: Vec<u8>,
    /// PDU session ID.
    pub pdu_session_id: Option<u8>,
    /// Request type ([`REQUEST_INITIAL`]).
    pub request_type: Option<u8>,
    /// S-NSSAI.
    pub snssai: Option<Snssai>,
    /// DNN.
    pub dnn: Option<String>,
}

impl UlNasTransport {
    /// The plain 5GMM octets.
    pub fn encode(&self) -> Result<Vec<u8>, NasError> {
        let mut m = ox::NasUlNasTransport::new(
            ox::NasPayloadContainerType::new(self.payload_container_type),
            ox::NasPayloadContainer::new(self.payload.clone()),
        );
        m.pdu_session_id = self.pdu_session_id.map(ox::NasPduSessionIdentity2::new);
        m.request_type = self.request_type.map(ox::NasRequestType::new);
        m.s_nssai = self
            .snssai
            .as_ref()
            .map(|s| snssai_value(s).map(ox::NasSNssai::new))
            .transpose()?;
        m.dnn = self
            .dnn
            .as_deref()
            .map(|d| dnn_to_octets(d).map(ox::NasDnn::new))
            .transpose()?;
        Nas5gsMessage::new_5gmm(m).encode().map_err(codec)
    }

    /// Reads plain 5GMM octets.
    pub fn parse(octets: &[u8]) -> Result<Self, NasError> {
        match Nas5gsMessage::decode(octets).map_err(codec)? {
            Nas5gsMessage::Gmm(_, Nas5gmmMessage::UlNasTransport(m)) => Ok(Self {
                payload_container_type: m.payload_container_type.value & 0x0f,
                payload: m.payload_container.value.to_vec(),
                pdu_session_id: m.pdu_session_id.map(|p| p.value),
                request_type: m.request_type.map(|r| r.value & 0x07),
                snssai: m
                    .s_nssai
                    .as_ref()
                    .map(|s| snssai_from_value(&s.value))
                    .transpose()?,
                dnn: m
                    .dnn
                    .as_ref()
                    .map(|d| dnn_from_octets(&d.value))
                    .transpose()?,
            }),
            _ => Err(NasError::WrongMessage {
                expected: "UL NAS TRANSPORT",
                found: "another message",
            }),
        }
    }
}

/// DL NAS TRANSPORT (TS 24.501 §8.2.11), AMF → UE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DlNasTransport {
    /// Payload container type.
    pub payload_container_type: u8,
    /// Payload container: the plain 5GSM message.
    pub payload: Vec<u8>,
    /// PDU session ID.
    pub pdu_session_id: Option<u8>,
    /// 5GMM cause: the AMF could not forward the UE's 5GSM message (§5.4.5.2.5).
    pub fgmm_cause: Option<u8>,
}

impl DlNasTransport {
    /// The plain 5GMM octets.
    pub fn encode(&self) -> Result<Vec<u8>, NasError> {
        let mut m = ox::NasDlNasTransport::new(
            ox::NasPayloadContainerType::new(self.payload_container_type),
            ox::NasPayloadContainer::new(self.payload.clone()),
        );
        m.pdu_session_id = self.pdu_session_id.map(ox::NasPduSessionIdentity2::new);
        m.fgmm_cause = self.fgmm_cause.map(ox::NasFGmmCause::new);
        Nas5gsMessage::new_5gmm(m).encode().map_err(codec)
    }

    /// Reads plain 5GMM octets.
    pub fn parse(octets: &[u8]) -> Result<Self, NasError> {
        match Nas5gsMessage::decode(octets).map_err(codec)? {
            Nas5gsMessage::Gmm(_, Nas5gmmMessage::DlNasTransport(m)) => Ok(Self {
                payload_container_type: m.payload_container_type.value & 0x0f,
                payload: m.payload_container.value.to_vec(),
                pdu_session_id: m.pdu_session_id.map(|p| p.value),
                fgmm_cause: m.fgmm_cause.map(|c| c.value),
            }),
            _ => Err(NasError::WrongMessage {
                expected: "DL NAS TRANSPORT",
                found: "another message",
            }),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn accept() -> PduSessionEstablishmentAccept {
        PduSessionEstablishmentAccept {
            pdu_session_id: 1,
            pti: 1,
            pdu_session_type: PDU_SESSION_TYPE_IPV4,
            ssc_mode: SSC_MODE_1,
            qos_rules: default_qos_rule(1),
            session_ambr: SessionAmbr {
                dl_kbps: 1_048_576,
                ul_kbps: 500,
            },
            pdu_address: Some(Ipv4Addr::new(10, 45, 0, 2)),
            snssai: Some(Snssai { sst: 1, sd: None }),
            dnn: Some("internet".into()),
        }
    }

    #[test]
    fn sm_messages_round_trip() {
        let msgs = [
            SmMessage::EstablishmentRequest(PduSessionEstablishmentRequest {
                pdu_session_id: 1,
                pti: 1,
                pdu_session_type: Some(PDU_SESSION_TYPE_IPV4),
                ssc_mode: Some(SSC_MODE_1),
            }),
            SmMessage::EstablishmentAccept(accept()),
            SmMessage::EstablishmentReject(PduSessionEstablishmentReject {
                pdu_session_id: 2,
                pti: 3,
                cause: 27,
            }),
            SmMessage::ReleaseRequest(PduSessionReleaseRequest {
                pdu_session_id: 1,
                pti: 4,
                cause: Some(CAUSE_REGULAR_DEACTIVATION),
            }),
            SmMessage::ReleaseCommand(PduSessionReleaseCommand {
                pdu_session_id: 1,
                pti: 0,
                cause: CAUSE_REGULAR_DEACTIVATION,
            }),
            SmMessage::ReleaseComplete(PduSessionReleaseComplete {
                pdu_session_id: 1,
                pti: 0,
            }),
        ];
        for m in msgs {
            let octets = m.encode().unwrap();
            assert_eq!(octets[0], EPD_5GSM);
            assert_eq!(SmMessage::parse(&octets).unwrap(), m, "{octets:02x?}");
            for n in 0..octets.len() {
                let _ = SmMessage::parse(&octets[..n]);
            }
        }
    }

    #[test]
    fn default_rule_maps_to_its_qfi() {
        assert_eq!(qos_rule_qfis(&default_qos_rule(5)), vec![5]);
    }

    #[test]
    fn transports_round_trip() {
        let ul = UlNasTransport {
            payload_container_type: PAYLOAD_N1_SM,
            payload: SmMessage::EstablishmentAccept(accept()).encode().unwrap(),
            pdu_session_id: Some(1),
            request_type: Some(REQUEST_INITIAL),
            snssai: Some(Snssai {
                sst: 1,
                sd: Some(0x010203),
            }),
            dnn: Some("internet".into()),
        };
        let o = ul.encode().unwrap();
        assert_eq!(&o[..3], &[0x7e, 0x00, UL_NAS_TRANSPORT]);
        assert_eq!(UlNasTransport::parse(&o).unwrap(), ul);
        assert!(DlNasTransport::parse(&o).is_err());
        let dl = DlNasTransport {
            payload_container_type: PAYLOAD_N1_SM,
            payload: vec![0x2e, 1, 0, 0xd3],
            pdu_session_id: Some(1),
            fgmm_cause: None,
        };
        let o = dl.encode().unwrap();
        assert_eq!(DlNasTransport::parse(&o).unwrap(), dl);
        assert_eq!(
            dnn_from_octets(&dnn_to_octets("a.bc").unwrap()).unwrap(),
            "a.bc"
        );
        assert!(dnn_to_octets("").is_err());
    }

    #[test]
    fn session_ambr_units() {
        for kbps in [0, 1, 65535, 65536 * 4, 1_048_576] {
            let a = SessionAmbr {
                dl_kbps: kbps,
                ul_kbps: kbps,
            };
            assert_eq!(
                SessionAmbr::from_octets(&a.to_octets().unwrap()).unwrap(),
                a
            );
        }
    }
}
