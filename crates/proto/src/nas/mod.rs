//! NAS-5GS (TS 24.501) for steer5g: the 5GMM messages of registration, typed, over
//! `oxirush-nas`, and NAS security (§4.4) over the `security` crate.
//!
//! `oxirush-nas` frames each message (header, IEIs, lengths, IE order); the IE values
//! that registration needs are read and written by our own types ([`MobileIdentity`],
//! [`Ngksi`], [`UeSecurityCapability`], ...), so the rest of the workspace never sees
//! the codec's generated types. Each message is a plain struct with `parse` and
//! `encode`, and [`NasMessage`] reads any of them. Decoding is total: any octets give
//! a message or a [`NasError`], never a panic.
//!
//! Parsing keeps the IEs of this layer and drops the others, which a receiver may do
//! with optional IEs it does not act on (TS 24.501 §7.6.1).

mod cause;
mod identity;
mod ie;
mod messages;
mod security;
pub mod sm_ue;

use oxirush_nas::nas_5gs::{Nas5gmmMessage, Nas5gsMessage};
use thiserror::Error;

pub use ::security::nas::{Bearer, Direction};
pub use cause::{FiveGmmCause, FiveGsmCause};
pub use identity::{Guti, MobileIdentity, ProtectionScheme, STmsi, SchemeOutput, Suci};
pub use ie::{
    AccessType, AdditionalSecurityInformation, CipheringAlgorithm, IdentityType,
    IntegrityAlgorithm, Ngksi, RegistrationResult, RegistrationType, TimerValue,
    UeSecurityCapability,
};
pub use messages::{
    AuthenticationFailure, AuthenticationReject, AuthenticationRequest, AuthenticationResponse,
    DeregistrationAcceptUeOriginating, DeregistrationRequestUeOriginating, FiveGmmStatus,
    IdentityRequest, IdentityResponse, RegistrationAccept, RegistrationComplete,
    RegistrationReject, RegistrationRequest, SecurityModeCommand, SecurityModeComplete,
    SecurityModeReject,
};
pub use security::{
    may_be_unprotected, NasCount, NasSecurityContext, NasSecurityError, SecurityHeaderType,
    Unprotected, BEARER_3GPP, BEARER_NON_3GPP,
};

/// Extended protocol discriminator of 5GMM (TS 24.007 §11.2.3.1.1A).
pub const EPD_5GMM: u8 = 0x7e;

/// 5GMM message types (TS 24.501 Table 9.7.1).
pub mod message_type {
    /// Registration request.
    pub const REGISTRATION_REQUEST: u8 = 0x41;
    /// Registration accept.
    pub const REGISTRATION_ACCEPT: u8 = 0x42;
    /// Registration complete.
    pub const REGISTRATION_COMPLETE: u8 = 0x43;
    /// Registration reject.
    pub const REGISTRATION_REJECT: u8 = 0x44;
    /// Deregistration request (UE originating).
    pub const DEREGISTRATION_REQUEST_UE_ORIGINATING: u8 = 0x45;
    /// Deregistration accept (UE originating).
    pub const DEREGISTRATION_ACCEPT_UE_ORIGINATING: u8 = 0x46;
    /// Deregistration request (UE terminated).
    pub const DEREGISTRATION_REQUEST_UE_TERMINATED: u8 = 0x47;
    /// Deregistration accept (UE terminated).
    pub const DEREGISTRATION_ACCEPT_UE_TERMINATED: u8 = 0x48;
    /// Service request.
    pub const SERVICE_REQUEST: u8 = 0x4c;
    /// Service reject.
    pub const SERVICE_REJECT: u8 = 0x4d;
    /// Control plane service request.
    pub const CONTROL_PLANE_SERVICE_REQUEST: u8 = 0x4f;
    /// Authentication request.
    pub const AUTHENTICATION_REQUEST: u8 = 0x56;
    /// Authentication response.
    pub const AUTHENTICATION_RESPONSE: u8 = 0x57;
    /// Authentication reject.
    pub const AUTHENTICATION_REJECT: u8 = 0x58;
    /// Authentication failure.
    pub const AUTHENTICATION_FAILURE: u8 = 0x59;
    /// Authentication result.
    pub const AUTHENTICATION_RESULT: u8 = 0x5a;
    /// Identity request.
    pub const IDENTITY_REQUEST: u8 = 0x5b;
    /// Identity response.
    pub const IDENTITY_RESPONSE: u8 = 0x5c;
    /// Security mode command.
    pub const SECURITY_MODE_COMMAND: u8 = 0x5d;
    /// Security mode complete.
    pub const SECURITY_MODE_COMPLETE: u8 = 0x5e;
    /// Security mode reject.
    pub const SECURITY_MODE_REJECT: u8 = 0x5f;
    /// 5GMM status.
    pub const FIVEGMM_STATUS: u8 = 0x64;
}

/// Octets that are not the 5GMM message asked for, or a value that cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum NasError {
    /// The codec refused the octets or the message (TS 24.501 §7: message too short,
    /// unknown message type, an IE of a wrong length...).
    #[error("NAS codec: {0}")]
    Codec(String),
    /// The message is security protected: unprotect it first (§4.4).
    #[error("the message is security protected")]
    Protected,
    /// A 5GSM message, or a 5GMM message this layer has no struct for.
    #[error("message type {0:#04x} is not a 5GMM message of registration")]
    Unsupported(u8),
    /// Another message than the one asked for.
    #[error("the message is {found}, not {expected}")]
    WrongMessage {
        /// The message asked for.
        expected: &'static str,
        /// The message found.
        found: &'static str,
    },
    /// A conditional IE this layer requires is absent (as RES* in an AUTHENTICATION
    /// RESPONSE of 5G AKA).
    #[error("IE {0} is missing")]
    MissingIe(&'static str),
    /// An IE whose value is not valid (§7.7 invalid mandatory information).
    #[error("IE {ie}: {reason}")]
    InvalidIe {
        /// The IE.
        ie: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl NasError {
    /// The 5GMM cause a receiver answers with in a 5GMM STATUS (TS 24.501 §7).
    pub fn cause(&self) -> FiveGmmCause {
        match self {
            Self::Codec(_) => FiveGmmCause::InvalidMandatoryInformation,
            Self::Protected => FiveGmmCause::MessageNotCompatible,
            Self::Unsupported(_) => FiveGmmCause::MessageTypeNonExistent,
            Self::WrongMessage { .. } => FiveGmmCause::MessageTypeNotCompatible,
            Self::MissingIe(_) => FiveGmmCause::ConditionalIeError,
            Self::InvalidIe { .. } => FiveGmmCause::InvalidMandatoryInformation,
        }
    }
}

impl From<oxirush_nas::nas_5gs::NasError> for NasError {
    fn from(e: oxirush_nas::nas_5gs::NasError) -> Self {
        Self::Codec(e.to_string())
    }
}

/// A plain 5GMM message of registration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NasMessage {
    /// REGISTRATION REQUEST.
    RegistrationRequest(RegistrationRequest),
    /// REGISTRATION ACCEPT.
    RegistrationAccept(RegistrationAccept),
    /// REGISTRATION COMPLETE.
    RegistrationComplete(RegistrationComplete),
    /// REGISTRATION REJECT.
    RegistrationReject(RegistrationReject),
    /// AUTHENTICATION REQUEST.
    AuthenticationRequest(AuthenticationRequest),
    /// AUTHENTICATION RESPONSE.
    AuthenticationResponse(AuthenticationResponse),
    /// AUTHENTICATION FAILURE.
    AuthenticationFailure(AuthenticationFailure),
    /// AUTHENTICATION REJECT.
    AuthenticationReject(AuthenticationReject),
    /// SECURITY MODE COMMAND.
    SecurityModeCommand(SecurityModeCommand),
    /// SECURITY MODE COMPLETE.
    SecurityModeComplete(SecurityModeComplete),
    /// SECURITY MODE REJECT.
    SecurityModeReject(SecurityModeReject),
    /// DEREGISTRATION REQUEST (UE originating).
    DeregistrationRequestUeOriginating(DeregistrationRequestUeOriginating),
    /// DEREGISTRATION ACCEPT (UE originating).
    DeregistrationAcceptUeOriginating(DeregistrationAcceptUeOriginating),
    /// 5GMM STATUS.
    FiveGmmStatus(FiveGmmStatus),
    /// IDENTITY REQUEST.
    IdentityRequest(IdentityRequest),
    /// IDENTITY RESPONSE.
    IdentityResponse(IdentityResponse),
}

/// The message type of plain 5GMM octets, without decoding the rest: what
/// [`may_be_unprotected`] and a dispatcher look at.
pub fn plain_message_type(octets: &[u8]) -> Option<u8> {
    match octets {
        [EPD_5GMM, sht, mt, ..] if sht & 0x0f == 0 => Some(*mt),
        _ => None,
    }
}

/// The name TS 24.501 §8 gives a plain NAS message (`Registration request`, `5GSM
/// message` for one carried by EPD 0x2e), `None` for a protected or truncated one.
pub fn plain_message_name(octets: &[u8]) -> Option<&'static str> {
    match octets {
        [0x2e, _, _, _, ..] => Some("5GSM message"),
        // The transports of TS 24.501 §8.2.10-11, which the 5GMM table leaves to §8.2.
        [EPD_5GMM, _, 0x67, ..] => Some("UL NAS TRANSPORT"),
        [EPD_5GMM, _, 0x68, ..] => Some("DL NAS TRANSPORT"),
        _ => plain_message_type(octets).map(messages::name_of),
    }
}

impl NasMessage {
    /// Reads plain 5GMM octets (security header type 0).
    pub fn parse(octets: &[u8]) -> Result<Self, NasError> {
        match octets {
            [EPD_5GMM, sht, ..] if sht & 0x0f != 0 => return Err(NasError::Protected),
            [EPD_5GMM, _, mt, ..] if !messages::supported(*mt) => {
                return Err(NasError::Unsupported(*mt))
            }
            [epd, _, mt, ..] if *epd != EPD_5GMM => return Err(NasError::Unsupported(*mt)),
            _ => {}
        }
        match Nas5gsMessage::decode(octets)? {
            Nas5gsMessage::Gmm(h, m) => messages::from_ox(&m, h.message_type.as_u8()),
            _ => Err(NasError::Protected),
        }
    }

    /// The plain octets.
    pub fn encode(&self) -> Result<Vec<u8>, NasError> {
        let m: Nas5gmmMessage = messages::to_ox(self)?;
        Ok(Nas5gsMessage::new_5gmm(m).encode()?)
    }

    /// The message type (TS 24.501 Table 9.7.1).
    pub fn message_type(&self) -> u8 {
        use message_type as t;
        match self {
            Self::RegistrationRequest(_) => t::REGISTRATION_REQUEST,
            Self::RegistrationAccept(_) => t::REGISTRATION_ACCEPT,
            Self::RegistrationComplete(_) => t::REGISTRATION_COMPLETE,
            Self::RegistrationReject(_) => t::REGISTRATION_REJECT,
            Self::AuthenticationRequest(_) => t::AUTHENTICATION_REQUEST,
            Self::AuthenticationResponse(_) => t::AUTHENTICATION_RESPONSE,
            Self::AuthenticationFailure(_) => t::AUTHENTICATION_FAILURE,
            Self::AuthenticationReject(_) => t::AUTHENTICATION_REJECT,
            Self::SecurityModeCommand(_) => t::SECURITY_MODE_COMMAND,
            Self::SecurityModeComplete(_) => t::SECURITY_MODE_COMPLETE,
            Self::SecurityModeReject(_) => t::SECURITY_MODE_REJECT,
            Self::DeregistrationRequestUeOriginating(_) => t::DEREGISTRATION_REQUEST_UE_ORIGINATING,
            Self::DeregistrationAcceptUeOriginating(_) => t::DEREGISTRATION_ACCEPT_UE_ORIGINATING,
            Self::FiveGmmStatus(_) => t::FIVEGMM_STATUS,
            Self::IdentityRequest(_) => t::IDENTITY_REQUEST,
            Self::IdentityResponse(_) => t::IDENTITY_RESPONSE,
        }
    }

    /// The message's name, as TS 24.501 §8.2 titles it.
    pub fn name(&self) -> &'static str {
        messages::name_of(self.message_type())
    }
}
