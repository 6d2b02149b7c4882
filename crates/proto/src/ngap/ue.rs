//! UE-associated signalling of registration (TS 38.413 §8.2, §8.3, §8.6): INITIAL UE
//! MESSAGE, DOWNLINK and UPLINK NAS TRANSPORT, NAS NON DELIVERY INDICATION, INITIAL
//! CONTEXT SETUP REQUEST / RESPONSE / FAILURE, UE CONTEXT RELEASE COMMAND / COMPLETE
//! and UE CONTEXT RELEASE REQUEST, with the IE types they share.
//!
//! IEs are built in the order of each message's object set (TS 38.413 §9.4.4), so
//! [`NgapPdu::check`](super::NgapPdu::check) of what we send finds nothing.

use oxirush_ngap::ngap as asn;
use oxirush_ngap::{build_ngap_ie, extract_ngap_ies, BitString, Bits};
use security::Kgnb;

use super::convert::{
    guami_from_asn, guami_to_asn, plmn_from_asn, plmn_to_asn, snssai_from_asn, snssai_to_asn,
    tac_from_asn, tac_to_asn,
};
use super::setup_support::{codec, decode_message, pdu_of};
use super::{ie_id, Cause, CriticalityDiagnostics, EncodeError, NgapPdu, ParseError};
use crate::ids::{Guami, IdError, Plmn, Snssai, Tai};
use crate::nas::{STmsi, UeSecurityCapability};

/// AMF UE NGAP ID is INTEGER (0..2^40-1) (TS 38.413 §9.3.3.1).
pub const AMF_UE_NGAP_ID_MAX: u64 = (1 << 40) - 1;

pub(super) fn check_amf_id(id: u64) -> Result<u64, EncodeError> {
    if id > AMF_UE_NGAP_ID_MAX {
        return Err(EncodeError::Codec(format!(
            "AMF UE NGAP ID {id} exceeds 40 bits"
        )));
    }
    Ok(id)
}

fn invalid(id: u16) -> impl Fn(IdError) -> ParseError {
    move |source| ParseError::InvalidValue { id, source }
}

fn nas_pdu(bytes: &[u8]) -> asn::NASPDU<'_> {
    asn::NASPDU(bytes.into())
}

/// NR Cell Global Identity (TS 38.413 §9.3.1.7): PLMN and a 36-bit NR cell identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NrCgi {
    /// PLMN.
    pub plmn: Plmn,
    /// NR Cell Identity, 36 bits: the gNB ID in its leading bits, then the cell.
    pub cell_id: u64,
}

/// User Location Information (TS 38.413 §9.3.1.16). Only the NR alternative is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UserLocation {
    /// NR: the cell and the TAI.
    Nr {
        /// NR-CGI.
        nr_cgi: NrCgi,
        /// TAI.
        tai: Tai,
    },
    /// E-UTRA, N3IWF or a later alternative: received, not typed.
    Other,
}

impl UserLocation {
    fn to_asn(self) -> Result<asn::UserLocationInformation<'static>, EncodeError> {
        match self {
            Self::Nr { nr_cgi, tai } => {
                let cell = Bits::new(nr_cgi.cell_id, 36).map_err(|_| {
                    EncodeError::Id(IdError::TooWide {
                        what: "NR Cell Identity",
                        value: nr_cgi.cell_id,
                        bits: 36,
                    })
                })?;
                Ok(asn::UserLocationInformation::userLocationInformationNR(
                    asn::UserLocationInformationNR::new(
                        asn::NRCGI::new(plmn_to_asn(&nr_cgi.plmn), asn::NRCellIdentity(cell), None),
                        asn::TAI::new(plmn_to_asn(&tai.plmn), tac_to_asn(&tai.tac), None),
                        None,
                        None,
                    ),
                ))
            }
            Self::Other => Err(EncodeError::Codec(
                "only an NR user location is sent".into(),
            )),
        }
    }

    fn from_asn(u: &asn::UserLocationInformation<'_>) -> Result<Self, IdError> {
        Ok(match u {
            asn::UserLocationInformation::userLocationInformationNR(nr) => Self::Nr {
                nr_cgi: NrCgi {
                    plmn: plmn_from_asn(&nr.nr_cgi.plmn_identity)?,
                    cell_id: nr.nr_cgi.nr_cell_identity.0.value(),
                },
                tai: Tai {
                    plmn: plmn_from_asn(&nr.tai.plmn_identity)?,
                    tac: tac_from_asn(&nr.tai.tac),
                },
            },
            _ => Self::Other,
        })
    }
}

/// RRC Establishment Cause (TS 38.413 §9.3.1.111).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RrcEstablishmentCause {
    /// emergency.
    Emergency,
    /// highPriorityAccess.
    HighPriorityAccess,
    /// mt-Access.
    MtAccess,
    /// mo-Signalling: what a registration uses.
    MoSignalling,
    /// mo-Data.
    MoData,
    /// mo-VoiceCall.
    MoVoiceCall,
    /// mo-VideoCall.
    MoVideoCall,
    /// mo-SMS.
    MoSms,
    /// mps-PriorityAccess.
    MpsPriorityAccess,
    /// mcs-PriorityAccess.
    McsPriorityAccess,
    /// notAvailable.
    NotAvailable,
    /// mo-ExceptionData.
    MoExceptionData,
}

impl RrcEstablishmentCause {
    fn to_asn(self) -> asn::RRCEstablishmentCause {
        use asn::RRCEstablishmentCause as A;
        match self {
            Self::Emergency => A::emergency,
            Self::HighPriorityAccess => A::highPriorityAccess,
            Self::MtAccess => A::mt_Access,
            Self::MoSignalling => A::mo_Signalling,
            Self::MoData => A::mo_Data,
            Self::MoVoiceCall => A::mo_VoiceCall,
            Self::MoVideoCall => A::mo_VideoCall,
            Self::MoSms => A::mo_SMS,
            Self::MpsPriorityAccess => A::mps_PriorityAccess,
            Self::McsPriorityAccess => A::mcs_PriorityAccess,
            Self::NotAvailable => A::notAvailable,
            Self::MoExceptionData => A::mo_ExceptionData,
        }
    }

    fn from_asn(v: asn::RRCEstablishmentCause) -> Option<Self> {
        use asn::RRCEstablishmentCause as A;
        Some(match v {
            A::emergency => Self::Emergency,
            A::highPriorityAccess => Self::HighPriorityAccess,
            A::mt_Access => Self::MtAccess,
            A::mo_Signalling => Self::MoSignalling,
            A::mo_Data => Self::MoData,
            A::mo_VoiceCall => Self::MoVoiceCall,
            A::mo_VideoCall => Self::MoVideoCall,
            A::mo_SMS => Self::MoSms,
            A::mps_PriorityAccess => Self::MpsPriorityAccess,
            A::mcs_PriorityAccess => Self::McsPriorityAccess,
            A::notAvailable => Self::NotAvailable,
            A::mo_ExceptionData => Self::MoExceptionData,
            #[allow(unreachable_patterns)]
            _ => return None,
        })
    }
}

fn s_tmsi_to_asn(t: &STmsi) -> Result<asn::FiveGSTMSI, EncodeError> {
    let set = Bits::new(t.amf_set.into(), 10).map_err(|_| {
        EncodeError::Id(IdError::TooWide {
            what: "AMF Set ID",
            value: t.amf_set.into(),
            bits: 10,
        })
    })?;
    let pointer = Bits::new(t.amf_pointer.into(), 6).map_err(|_| {
        EncodeError::Id(IdError::TooWide {
            what: "AMF Pointer",
            value: t.amf_pointer.into(),
            bits: 6,
        })
    })?;
    Ok(asn::FiveGSTMSI::new(
        asn::AMFSetID(set),
        asn::AMFPointer(pointer),
        asn::FiveGTMSI(t.tmsi.to_be_bytes()),
        None,
    ))
}

pub(super) fn s_tmsi_from_asn(t: &asn::FiveGSTMSI) -> STmsi {
    // The codec holds each field in its ASN.1 size: 10 and 6 bits.
    STmsi {
        amf_set: (t.amf_set_id.0.value() & 0x3ff) as u16,
        amf_pointer: (t.amf_pointer.0.value() & 0x3f) as u8,
        tmsi: u32::from_be_bytes(t.five_g_tmsi.0),
    }
}

/// UE Security Capabilities (TS 38.413 §9.3.1.86): 16-bit maps whose first (most
/// significant) bit is algorithm 1 (128-NEA1/NIA1, EEA1/EIA1); algorithm 0 has no bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UeSecurityCapabilities {
    /// NR Encryption Algorithms.
    pub nr_encryption: u16,
    /// NR Integrity Protection Algorithms.
    pub nr_integrity: u16,
    /// E-UTRA Encryption Algorithms.
    pub eutra_encryption: u16,
    /// E-UTRA Integrity Protection Algorithms.
    pub eutra_integrity: u16,
}

impl UeSecurityCapabilities {
    /// From the UE security capability of the REGISTRATION REQUEST (TS 24.501
    /// §9.11.3.54), whose maps start at algorithm 0: shifted one bit left.
    pub fn from_nas(c: &UeSecurityCapability) -> Self {
        let shift = |o: u8| u16::from(o << 1) << 8;
        let (eea, eia) = c.eps.unwrap_or((0, 0));
        Self {
            nr_encryption: shift(c.nea),
            nr_integrity: shift(c.nia),
            eutra_encryption: shift(eea),
            eutra_integrity: shift(eia),
        }
    }

    fn to_asn(self) -> asn::UESecurityCapabilities<'static> {
        let b = |v: u16| BitString::from(v.to_be_bytes());
        asn::UESecurityCapabilities::new(
            asn::NRencryptionAlgorithms(b(self.nr_encryption)),
            asn::NRintegrityProtectionAlgorithms(b(self.nr_integrity)),
            asn::EUTRAencryptionAlgorithms(b(self.eutra_encryption)),
            asn::EUTRAintegrityProtectionAlgorithms(b(self.eutra_integrity)),
            None,
        )
    }

    fn from_asn(c: &asn::UESecurityCapabilities<'_>) -> Self {
        // SIZE(16, ...): an extended (longer) map keeps its first 16 bits.
        let v = |b: &BitString<'_>| match b.as_octets() {
            [h, l, ..] => u16::from_be_bytes([*h, *l]),
            [h] => u16::from(*h) << 8,
            [] => 0,
        };
        Self {
            nr_encryption: v(&c.nr_encryption_algorithms.0),
            nr_integrity: v(&c.nr_integrity_protection_algorithms.0),
            eutra_encryption: v(&c.eutra_encryption_algorithms.0),
            eutra_integrity: v(&c.eutra_integrity_protection_algorithms.0),
        }
    }
}

/// UE Aggregate Maximum Bit Rate (TS 38.413 §9.3.1.58), in bit/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UeAmbr {
    /// Downlink.
    pub dl: u64,
    /// Uplink.
    pub ul: u64,
}

/// UE NGAP IDs (TS 38.413 §9.3.3.3 UE NGAP ID pair, or the AMF UE NGAP ID alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UeNgapIds {
    /// Both IDs.
    Pair {
        /// AMF UE NGAP ID.
        amf: u64,
        /// RAN UE NGAP ID.
        ran: u32,
    },
    /// The AMF UE NGAP ID alone.
    Amf(u64),
}

impl UeNgapIds {
    /// The AMF UE NGAP ID either way.
    pub fn amf(&self) -> u64 {
        match self {
            Self::Pair { amf, .. } | Self::Amf(amf) => *amf,
        }
    }
}

macro_rules! encode_fn {
    () => {
        /// Builds and encodes the PDU.
        pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
            super::encode(&self.to_pdu()?)
        }
    };
}

/// The two IEs that open every UE-associated message but the first (TS 38.413 §9.3.3.1,
/// §9.3.3.2), for message `$msg` from `$s`'s `amf_ue_ngap_id` and `ran_ue_ngap_id`, then the
/// message's other IEs; in a function returning `Result<_, EncodeError>`.
macro_rules! ue_id_ies {
    ($msg:ident, $s:expr, $($more:expr),* $(,)?) => {
        vec![
            build_ngap_ie!($msg, AMF_UE_NGAP_ID(check_amf_id($s.amf_ue_ngap_id)?))?,
            build_ngap_ie!($msg, RAN_UE_NGAP_ID($s.ran_ue_ngap_id))?,
            $($more),*
        ]
    };
}
pub(super) use {encode_fn, ue_id_ies};

/// `parse`, `to_pdu` and `encode` of a message holding only the two UE NGAP IDs: `$ty` is
/// ours, `$asn` the message's name in the ASN.1 module, `$what` how its doc names it.
macro_rules! ue_ids_only {
    ($ty:ident, $asn:ident, $what:literal) => {
        impl $ty {
            #[doc = concat!("Reads ", $what, ".")]
            pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
                let msg: asn::$asn = decode_message(pdu, stringify!($asn))?;
                let (amf, ran) = codec((|| {
                    extract_ngap_ies!(msg, $asn,
                        req amf: u64 = AMF_UE_NGAP_ID(id),
                        req ran: u32 = RAN_UE_NGAP_ID(id),
                    );
                    Ok((amf, ran))
                })())?;
                Ok(Self {
                    amf_ue_ngap_id: amf,
                    ran_ue_ngap_id: ran,
                })
            }

            /// Builds the PDU.
            pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
                let ies = ue_id_ies![$asn, self,];
                pdu_of(&asn::$asn::new(asn::ProtocolIEContainer(ies)))
            }

            encode_fn!();
        }
    };
}

/// INITIAL UE MESSAGE (TS 38.413 §9.2.5.1), gNB → AMF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialUeMessage {
    /// RAN UE NGAP ID (mandatory, reject).
    pub ran_ue_ngap_id: u32,
    /// NAS-PDU (mandatory, reject).
    pub nas_pdu: Vec<u8>,
    /// User Location Information (mandatory, reject).
    pub user_location: UserLocation,
    /// RRC Establishment Cause (mandatory, ignore). `None` when absent or of a later
    /// release.
    pub rrc_establishment_cause: Option<RrcEstablishmentCause>,
    /// 5G-S-TMSI (optional, reject).
    pub five_g_s_tmsi: Option<STmsi>,
    /// UE Context Request (optional, ignore).
    pub ue_context_requested: bool,
}

impl InitialUeMessage {
    /// Reads an INITIAL UE MESSAGE.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::InitialUEMessage = decode_message(pdu, "InitialUEMessage")?;
        let (ran, nas, uli, rrc, tmsi, ctx) = codec((|| {
            extract_ngap_ies!(msg, InitialUEMessage,
                req ran: u32 = RAN_UE_NGAP_ID(id),
                req nas: Vec<u8> = NAS_PDU(p) => p.0.to_vec(),
                req uli: Result<UserLocation, IdError> = UserLocationInformation(u) =>
                    UserLocation::from_asn(&u),
                lax rrc: asn::RRCEstablishmentCause = RRCEstablishmentCause(c) => c,
                opt tmsi: STmsi = FiveG_S_TMSI(t) => s_tmsi_from_asn(&t),
                lax ctx: asn::UEContextRequest = UEContextRequest(c) => c,
            );
            Ok((ran, nas, uli, rrc, tmsi, ctx))
        })())?;
        Ok(Self {
            ran_ue_ngap_id: ran,
            nas_pdu: nas,
            user_location: uli.map_err(invalid(ie_id::USER_LOCATION_INFORMATION))?,
            rrc_establishment_cause: rrc.and_then(RrcEstablishmentCause::from_asn),
            five_g_s_tmsi: tmsi,
            ue_context_requested: ctx.is_some(),
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let mut ies = vec![
            build_ngap_ie!(InitialUEMessage, RAN_UE_NGAP_ID(self.ran_ue_ngap_id))?,
            build_ngap_ie!(InitialUEMessage, NAS_PDU(nas_pdu(&self.nas_pdu)))?,
            build_ngap_ie!(
                InitialUEMessage,
                UserLocationInformation(self.user_location.to_asn()?)
            )?,
        ];
        if let Some(c) = self.rrc_establishment_cause {
            ies.push(build_ngap_ie!(
                InitialUEMessage,
                RRCEstablishmentCause(c.to_asn())
            )?);
        }
        if let Some(t) = &self.five_g_s_tmsi {
            ies.push(build_ngap_ie!(
                InitialUEMessage,
                FiveG_S_TMSI(s_tmsi_to_asn(t)?)
            )?);
        }
        if self.ue_context_requested {
            ies.push(build_ngap_ie!(
                InitialUEMessage,
                UEContextRequest(asn::UEContextRequest::requested)
            )?);
        }
        pdu_of(&asn::InitialUEMessage::new(asn::ProtocolIEContainer(ies)))
    }

    encode_fn!();
}

/// DOWNLINK NAS TRANSPORT (TS 38.413 §9.2.5.2), AMF → gNB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownlinkNasTransport {
    /// AMF UE NGAP ID (mandatory, reject).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, reject).
    pub ran_ue_ngap_id: u32,
    /// NAS-PDU (mandatory, reject).
    pub nas_pdu: Vec<u8>,
}

impl DownlinkNasTransport {
    /// Reads a DOWNLINK NAS TRANSPORT.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::DownlinkNASTransport = decode_message(pdu, "DownlinkNASTransport")?;
        let (amf, ran, nas) = codec((|| {
            extract_ngap_ies!(msg, DownlinkNASTransport,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                req nas: Vec<u8> = NAS_PDU(p) => p.0.to_vec(),
            );
            Ok((amf, ran, nas))
        })())?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            nas_pdu: nas,
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let ies = ue_id_ies![
            DownlinkNASTransport,
            self,
            build_ngap_ie!(DownlinkNASTransport, NAS_PDU(nas_pdu(&self.nas_pdu)))?,
        ];
        pdu_of(&asn::DownlinkNASTransport::new(asn::ProtocolIEContainer(
            ies,
        )))
    }

    encode_fn!();
}

/// UPLINK NAS TRANSPORT (TS 38.413 §9.2.5.3), gNB → AMF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UplinkNasTransport {
    /// AMF UE NGAP ID (mandatory, reject).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, reject).
    pub ran_ue_ngap_id: u32,
    /// NAS-PDU (mandatory, reject).
    pub nas_pdu: Vec<u8>,
    /// User Location Information (mandatory, ignore). `None` when absent or not
    /// understood (§10.3.5: the receiver goes on).
    pub user_location: Option<UserLocation>,
}

impl UplinkNasTransport {
    /// Reads an UPLINK NAS TRANSPORT.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::UplinkNASTransport = decode_message(pdu, "UplinkNASTransport")?;
        let (amf, ran, nas, uli) = codec((|| {
            extract_ngap_ies!(msg, UplinkNASTransport,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                req nas: Vec<u8> = NAS_PDU(p) => p.0.to_vec(),
                lax uli: UserLocation = UserLocationInformation(u) =>
                    UserLocation::from_asn(&u).unwrap_or(UserLocation::Other),
            );
            Ok((amf, ran, nas, uli))
        })())?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            nas_pdu: nas,
            user_location: uli,
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let mut ies = ue_id_ies![
            UplinkNASTransport,
            self,
            build_ngap_ie!(UplinkNASTransport, NAS_PDU(nas_pdu(&self.nas_pdu)))?,
        ];
        if let Some(u) = self.user_location {
            ies.push(build_ngap_ie!(
                UplinkNASTransport,
                UserLocationInformation(u.to_asn()?)
            )?);
        }
        pdu_of(&asn::UplinkNASTransport::new(asn::ProtocolIEContainer(ies)))
    }

    encode_fn!();
}

/// NAS NON DELIVERY INDICATION (TS 38.413 §9.2.5.5), gNB → AMF: a downlink NAS-PDU
/// the gNB could not deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NasNonDeliveryIndication {
    /// AMF UE NGAP ID (mandatory, reject).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, reject).
    pub ran_ue_ngap_id: u32,
    /// NAS-PDU (mandatory, ignore): the one not delivered.
    pub nas_pdu: Vec<u8>,
    /// Cause (mandatory, ignore). [`Cause::Unknown`] when absent or of a later release.
    pub cause: Cause,
}

impl NasNonDeliveryIndication {
    /// Reads a NAS NON DELIVERY INDICATION.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::NASNonDeliveryIndication = decode_message(pdu, "NASNonDeliveryIndication")?;
        let (amf, ran, nas, cause) = codec((|| {
            extract_ngap_ies!(msg, NASNonDeliveryIndication,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                lax nas: Vec<u8> = NAS_PDU(p) => p.0.to_vec(),
                lax cause: asn::Cause = Cause(c) => c,
            );
            Ok((amf, ran, nas, cause))
        })())?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            nas_pdu: nas.unwrap_or_default(),
            cause: cause.as_ref().map_or(Cause::Unknown, Cause::from_asn),
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let cause = self.cause.to_asn().ok_or(EncodeError::UnknownCause)?;
        let ies = ue_id_ies![
            NASNonDeliveryIndication,
            self,
            build_ngap_ie!(NASNonDeliveryIndication, NAS_PDU(nas_pdu(&self.nas_pdu)))?,
            build_ngap_ie!(NASNonDeliveryIndication, Cause(cause))?,
        ];
        pdu_of(&asn::NASNonDeliveryIndication::new(
            asn::ProtocolIEContainer(ies),
        ))
    }

    encode_fn!();
}

/// INITIAL CONTEXT SETUP REQUEST (TS 38.413 §9.2.2.1), AMF → gNB, without PDU
/// sessions: what ends a registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialContextSetupRequest {
    /// AMF UE NGAP ID (mandatory, reject).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, reject).
    pub ran_ue_ngap_id: u32,
    /// UE Aggregate Maximum Bit Rate (conditional, reject: present with PDU sessions).
    pub ue_ambr: Option<UeAmbr>,
    /// GUAMI (mandatory, reject).
    pub guami: Guami,
    /// Allowed NSSAI (mandatory, reject), at least one.
    pub allowed_nssai: Vec<Snssai>,
    /// UE Security Capabilities (mandatory, reject).
    pub ue_security_capabilities: UeSecurityCapabilities,
    /// Security Key, KgNB (mandatory, reject).
    pub security_key: Kgnb,
    /// NAS-PDU (optional, ignore): the REGISTRATION ACCEPT, typically.
    pub nas_pdu: Option<Vec<u8>>,
}

impl InitialContextSetupRequest {
    /// Reads an INITIAL CONTEXT SETUP REQUEST.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::InitialContextSetupRequest =
            decode_message(pdu, "InitialContextSetupRequest")?;
        let (amf, ran, ambr, guami, nssai, caps, key, nas) = codec((|| {
            extract_ngap_ies!(msg, InitialContextSetupRequest,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                opt ambr: UeAmbr = UEAggregateMaximumBitRate(a) => UeAmbr {
                    dl: a.ue_aggregate_maximum_bit_rate_dl.0,
                    ul: a.ue_aggregate_maximum_bit_rate_ul.0,
                },
                req guami: asn::GUAMI = GUAMI(g) => g,
                req nssai: Vec<Snssai> = AllowedNSSAI(l) =>
                    l.0.iter().map(|i| snssai_from_asn(&i.s_nssai)).collect(),
                req caps: UeSecurityCapabilities = UESecurityCapabilities(c) =>
                    UeSecurityCapabilities::from_asn(&c),
                req key: Vec<u8> = SecurityKey(k) => k.0.as_octets().to_vec(),
                lax nas: Vec<u8> = NAS_PDU(p) => p.0.to_vec(),
            );
            Ok((amf, ran, ambr, guami, nssai, caps, key, nas))
        })())?;
        let security_key = Kgnb::from_slice(&key).map_err(|_| ParseError::InvalidValue {
            id: ie_id::SECURITY_KEY,
            source: IdError::Number("a Security Key of other than 256 bits".into()),
        })?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            ue_ambr: ambr,
            guami: guami_from_asn(&guami).map_err(invalid(ie_id::GUAMI))?,
            allowed_nssai: nssai,
            ue_security_capabilities: caps,
            security_key,
            nas_pdu: nas,
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let nssai = self
            .allowed_nssai
            .iter()
            .map(|s| Ok(asn::AllowedNSSAIItem::new(snssai_to_asn(s)?, None)))
            .collect::<Result<Vec<_>, IdError>>()?;
        let mut ies = ue_id_ies![InitialContextSetupRequest, self,];
        if let Some(a) = self.ue_ambr {
            ies.push(build_ngap_ie!(
                InitialContextSetupRequest,
                UEAggregateMaximumBitRate(asn::UEAggregateMaximumBitRate::new(
                    asn::BitRate(a.dl),
                    asn::BitRate(a.ul),
                    None
                ))
            )?);
        }
        ies.push(build_ngap_ie!(
            InitialContextSetupRequest,
            GUAMI(guami_to_asn(&self.guami)?)
        )?);
        ies.push(build_ngap_ie!(
            InitialContextSetupRequest,
            AllowedNSSAI(asn::AllowedNSSAI(nssai))
        )?);
        ies.push(build_ngap_ie!(
            InitialContextSetupRequest,
            UESecurityCapabilities(self.ue_security_capabilities.to_asn())
        )?);
        ies.push(build_ngap_ie!(
            InitialContextSetupRequest,
            SecurityKey(asn::SecurityKey(BitString::from(
                self.security_key.as_bytes().as_slice()
            )))
        )?);
        if let Some(nas) = &self.nas_pdu {
            ies.push(build_ngap_ie!(
                InitialContextSetupRequest,
                NAS_PDU(nas_pdu(nas))
            )?);
        }
        pdu_of(&asn::InitialContextSetupRequest::new(
            asn::ProtocolIEContainer(ies),
        ))
    }

    encode_fn!();
}

/// INITIAL CONTEXT SETUP RESPONSE (TS 38.413 §9.2.2.2), gNB → AMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitialContextSetupResponse {
    /// AMF UE NGAP ID (mandatory, ignore).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, ignore).
    pub ran_ue_ngap_id: u32,
}

ue_ids_only!(
    InitialContextSetupResponse,
    InitialContextSetupResponse,
    "an INITIAL CONTEXT SETUP RESPONSE"
);

/// INITIAL CONTEXT SETUP FAILURE (TS 38.413 §9.2.2.3), gNB → AMF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialContextSetupFailure {
    /// AMF UE NGAP ID (mandatory, ignore).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, ignore).
    pub ran_ue_ngap_id: u32,
    /// Cause (mandatory, ignore). [`Cause::Unknown`] when absent or of a later release.
    pub cause: Cause,
    /// Criticality Diagnostics (optional, ignore).
    pub criticality_diagnostics: Option<CriticalityDiagnostics>,
}

impl InitialContextSetupFailure {
    /// Reads an INITIAL CONTEXT SETUP FAILURE.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::InitialContextSetupFailure =
            decode_message(pdu, "InitialContextSetupFailure")?;
        let (amf, ran, cause, diag) = codec((|| {
            extract_ngap_ies!(msg, InitialContextSetupFailure,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                lax cause: asn::Cause = Cause(c) => c,
                lax diag: asn::CriticalityDiagnostics = CriticalityDiagnostics(d) => d,
            );
            Ok((amf, ran, cause, diag))
        })())?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            cause: cause.as_ref().map_or(Cause::Unknown, Cause::from_asn),
            criticality_diagnostics: diag.as_ref().map(CriticalityDiagnostics::from_asn),
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let cause = self.cause.to_asn().ok_or(EncodeError::UnknownCause)?;
        let mut ies = ue_id_ies![
            InitialContextSetupFailure,
            self,
            build_ngap_ie!(InitialContextSetupFailure, Cause(cause))?,
        ];
        if let Some(d) = &self.criticality_diagnostics {
            ies.push(build_ngap_ie!(
                InitialContextSetupFailure,
                CriticalityDiagnostics(d.to_asn())
            )?);
        }
        pdu_of(&asn::InitialContextSetupFailure::new(
            asn::ProtocolIEContainer(ies),
        ))
    }

    encode_fn!();
}

/// UE CONTEXT RELEASE COMMAND (TS 38.413 §9.2.2.5), AMF → gNB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UeContextReleaseCommand {
    /// UE NGAP IDs (mandatory, reject).
    pub ue_ngap_ids: UeNgapIds,
    /// Cause (mandatory, ignore). [`Cause::Unknown`] when absent or of a later release.
    pub cause: Cause,
}

impl UeContextReleaseCommand {
    /// Reads a UE CONTEXT RELEASE COMMAND.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::UEContextReleaseCommand = decode_message(pdu, "UEContextReleaseCommand")?;
        let (ids, cause) = codec((|| {
            extract_ngap_ies!(msg, UEContextReleaseCommand,
                req ids: asn::UENGAPIDs = UE_NGAP_IDs(i) => i,
                lax cause: asn::Cause = Cause(c) => c,
            );
            Ok((ids, cause))
        })())?;
        let ue_ngap_ids = match ids {
            asn::UENGAPIDs::uE_NGAP_ID_pair(p) => UeNgapIds::Pair {
                amf: p.amf_ue_ngap_id.0,
                ran: p.ran_ue_ngap_id.0,
            },
            asn::UENGAPIDs::aMF_UE_NGAP_ID(a) => UeNgapIds::Amf(a.0),
            _ => {
                return Err(ParseError::InvalidValue {
                    id: ie_id::UE_NGAP_IDS,
                    source: IdError::Number("a UE NGAP IDs extension".into()),
                })
            }
        };
        Ok(Self {
            ue_ngap_ids,
            cause: cause.as_ref().map_or(Cause::Unknown, Cause::from_asn),
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let cause = self.cause.to_asn().ok_or(EncodeError::UnknownCause)?;
        let ids = match self.ue_ngap_ids {
            UeNgapIds::Pair { amf, ran } => {
                asn::UENGAPIDs::uE_NGAP_ID_pair(asn::UENGAPIDPair::new(
                    asn::AMFUENGAPID(check_amf_id(amf)?),
                    asn::RANUENGAPID(ran),
                    None,
                ))
            }
            UeNgapIds::Amf(amf) => {
                asn::UENGAPIDs::aMF_UE_NGAP_ID(asn::AMFUENGAPID(check_amf_id(amf)?))
            }
        };
        let ies = vec![
            build_ngap_ie!(UEContextReleaseCommand, UE_NGAP_IDs(ids))?,
            build_ngap_ie!(UEContextReleaseCommand, Cause(cause))?,
        ];
        pdu_of(&asn::UEContextReleaseCommand::new(
            asn::ProtocolIEContainer(ies),
        ))
    }

    encode_fn!();
}

/// UE CONTEXT RELEASE COMPLETE (TS 38.413 §9.2.2.6), gNB → AMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UeContextReleaseComplete {
    /// AMF UE NGAP ID (mandatory, ignore).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, ignore).
    pub ran_ue_ngap_id: u32,
}

ue_ids_only!(
    UeContextReleaseComplete,
    UEContextReleaseComplete,
    "a UE CONTEXT RELEASE COMPLETE"
);

/// UE CONTEXT RELEASE REQUEST (TS 38.413 §9.2.2.4), gNB → AMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UeContextReleaseRequest {
    /// AMF UE NGAP ID (mandatory, reject).
    pub amf_ue_ngap_id: u64,
    /// RAN UE NGAP ID (mandatory, reject).
    pub ran_ue_ngap_id: u32,
    /// Cause (mandatory, ignore). [`Cause::Unknown`] when absent or of a later release.
    pub cause: Cause,
}

impl UeContextReleaseRequest {
    /// Reads a UE CONTEXT RELEASE REQUEST.
    pub fn parse(pdu: &NgapPdu) -> Result<Self, ParseError> {
        let msg: asn::UEContextReleaseRequest = decode_message(pdu, "UEContextReleaseRequest")?;
        let (amf, ran, cause) = codec((|| {
            extract_ngap_ies!(msg, UEContextReleaseRequest,
                req amf: u64 = AMF_UE_NGAP_ID(id),
                req ran: u32 = RAN_UE_NGAP_ID(id),
                lax cause: asn::Cause = Cause(c) => c,
            );
            Ok((amf, ran, cause))
        })())?;
        Ok(Self {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            cause: cause.as_ref().map_or(Cause::Unknown, Cause::from_asn),
        })
    }

    /// Builds the PDU.
    pub fn to_pdu(&self) -> Result<NgapPdu, EncodeError> {
        let cause = self.cause.to_asn().ok_or(EncodeError::UnknownCause)?;
        let ies = ue_id_ies![
            UEContextReleaseRequest,
            self,
            build_ngap_ie!(UEContextReleaseRequest, Cause(cause))?,
        ];
        pdu_of(&asn::UEContextReleaseRequest::new(
            asn::ProtocolIEContainer(ies),
        ))
    }

    encode_fn!();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nas_capabilities_map_to_ngap_bitmaps() {
        // NAS: EA0..EA3 and IA0..IA3 (f0 f0), EEA0/EEA2 and EIA2 (a0 20).
        let nas = UeSecurityCapability {
            nea: 0xf0,
            nia: 0xf0,
            eps: Some((0xa0, 0x20)),
        };
        // NGAP has no bit for algorithm 0: NEA1..3 are the first three bits.
        let c = UeSecurityCapabilities::from_nas(&nas);
        assert_eq!(c.nr_encryption, 0xe000);
        assert_eq!(c.nr_integrity, 0xe000);
        assert_eq!(c.eutra_encryption, 0x4000);
        assert_eq!(c.eutra_integrity, 0x4000);
        assert_eq!(UeSecurityCapabilities::from_asn(&c.to_asn()), c);
    }

    #[test]
    fn s_tmsi_and_ids_convert_and_check_widths() {
        let t = STmsi {
            amf_set: 0x3ff,
            amf_pointer: 0x3f,
            tmsi: 0x0102_0304,
        };
        assert_eq!(s_tmsi_from_asn(&s_tmsi_to_asn(&t).unwrap()), t);
        assert!(s_tmsi_to_asn(&STmsi {
            amf_set: 0x400,
            ..t
        })
        .is_err());
        assert!(s_tmsi_to_asn(&STmsi {
            amf_pointer: 0x40,
            ..t
        })
        .is_err());
        assert_eq!(
            check_amf_id(AMF_UE_NGAP_ID_MAX).unwrap(),
            AMF_UE_NGAP_ID_MAX
        );
        assert!(check_amf_id(AMF_UE_NGAP_ID_MAX + 1).is_err());
        assert_eq!(UeNgapIds::Pair { amf: 3, ran: 4 }.amf(), 3);
    }
}
