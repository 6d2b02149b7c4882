//! The 5GMM messages of registration (TS 24.501 §8.2), as plain structs.

use oxirush_nas::nas_5gs as ox;
use oxirush_nas::nas_5gs::Nas5gmmMessage as M;

use super::identity::{Guti, MobileIdentity};
use super::ie::{
    algorithms_from_octet, algorithms_to_octet, nssai_from_octets, nssai_to_octets,
    tai_from_octets, tai_list_from_octets, tai_list_to_octets, tai_to_octets, timer2_octet,
    timer2_value, timer3_octet, timer3_value, AccessType, AdditionalSecurityInformation,
    CipheringAlgorithm, IdentityType, IntegrityAlgorithm, Ngksi, RegistrationResult,
    RegistrationType, TimerValue, UeSecurityCapability,
};
use super::{message_type as t, FiveGmmCause, NasError, NasMessage};
use crate::ids::{Snssai, Tai};

/// REGISTRATION REQUEST (TS 24.501 §8.2.6), UE → AMF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationRequest {
    /// 5GS registration type.
    pub registration_type: RegistrationType,
    /// Follow-on request pending (FOR bit of §9.11.3.7).
    pub follow_on_request: bool,
    /// ngKSI.
    pub ngksi: Ngksi,
    /// 5GS mobile identity: a SUCI or a 5G-GUTI.
    pub mobile_identity: MobileIdentity,
    /// UE security capability (IEI 2E; mandatory in an initial registration, §8.2.6.4).
    pub ue_security_capability: Option<UeSecurityCapability>,
    /// Requested NSSAI (IEI 2F).
    pub requested_nssai: Option<Vec<Snssai>>,
    /// Last visited registered TAI (IEI 52).
    pub last_visited_tai: Option<Tai>,
    /// NAS message container (IEI 71): the whole request, in an initial message that
    /// carries only the cleartext IEs (§4.4.6).
    pub nas_message_container: Option<Vec<u8>>,
}

/// REGISTRATION ACCEPT (TS 24.501 §8.2.7), AMF → UE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationAccept {
    /// 5GS registration result.
    pub result: RegistrationResult,
    /// 5G-GUTI (IEI 77).
    pub guti: Option<Guti>,
    /// TAI list (IEI 54); empty when absent.
    pub tai_list: Vec<Tai>,
    /// Allowed NSSAI (IEI 15); empty when absent.
    pub allowed_nssai: Vec<Snssai>,
    /// T3512 value (IEI 5E).
    pub t3512: Option<TimerValue>,
    /// T3502 value (IEI 16, GPRS timer 2).
    pub t3502: Option<TimerValue>,
}

/// REGISTRATION COMPLETE (TS 24.501 §8.2.8), UE → AMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegistrationComplete;

/// REGISTRATION REJECT (TS 24.501 §8.2.9), AMF → UE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistrationReject {
    /// 5GMM cause.
    pub cause: FiveGmmCause,
    /// T3346 value (IEI 5F): with #22 Congestion, how long the UE waits before it tries
    /// again (§5.5.1.2.5, §5.3.9).
    pub t3346: Option<TimerValue>,
    /// T3502 value (IEI 16).
    pub t3502: Option<TimerValue>,
}

/// AUTHENTICATION REQUEST (TS 24.501 §8.2.1), AMF → UE, for 5G AKA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticationRequest {
    /// ngKSI of the new context.
    pub ngksi: Ngksi,
    /// ABBA (§9.11.3.10), `00 00` today.
    pub abba: Vec<u8>,
    /// RAND (IEI 21).
    pub rand: [u8; 16],
    /// AUTN (IEI 20).
    pub autn: [u8; 16],
}

/// AUTHENTICATION RESPONSE (TS 24.501 §8.2.2), UE → AMF, for 5G AKA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthenticationResponse {
    /// RES* (IEI 2D).
    pub res_star: [u8; 16],
}

/// AUTHENTICATION FAILURE (TS 24.501 §8.2.4), UE → AMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthenticationFailure {
    /// #20 MAC failure, #21 synch failure or #26 non-5G authentication unacceptable.
    pub cause: FiveGmmCause,
    /// AUTS (IEI 30), with #21 (§8.2.4.2).
    pub auts: Option<[u8; 14]>,
}

impl AuthenticationFailure {
    /// #20: AUTN's MAC did not verify.
    pub fn mac_failure() -> Self {
        Self {
            cause: FiveGmmCause::MacFailure,
            auts: None,
        }
    }

    /// #21: the SQN was out of range; AUTS lets the home network resynchronise.
    pub fn synch_failure(auts: [u8; 14]) -> Self {
        Self {
            cause: FiveGmmCause::SynchFailure,
            auts: Some(auts),
        }
    }

    /// #26: the separation bit of AMF in AUTN was 0.
    pub fn non_5g_authentication_unacceptable() -> Self {
        Self {
            cause: FiveGmmCause::Non5gAuthenticationUnacceptable,
            auts: None,
        }
    }
}

/// AUTHENTICATION REJECT (TS 24.501 §8.2.5), AMF → UE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuthenticationReject;

/// SECURITY MODE COMMAND (TS 24.501 §8.2.25), AMF → UE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityModeCommand {
    /// Selected integrity algorithm.
    pub nia: IntegrityAlgorithm,
    /// Selected ciphering algorithm.
    pub nea: CipheringAlgorithm,
    /// ngKSI.
    pub ngksi: Ngksi,
    /// Replayed UE security capabilities.
    pub replayed_ue_security_capability: UeSecurityCapability,
    /// IMEISV request (IEI E-).
    pub imeisv_request: bool,
    /// Additional 5G security information (IEI 36).
    pub additional_security_information: Option<AdditionalSecurityInformation>,
    /// ABBA (IEI 38).
    pub abba: Option<Vec<u8>>,
}

/// SECURITY MODE COMPLETE (TS 24.501 §8.2.26), UE → AMF.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecurityModeComplete {
    /// IMEISV (IEI 77), 16 digits.
    pub imeisv: Option<String>,
    /// NAS message container (IEI 71): the whole initial message (§4.4.6).
    pub nas_message_container: Option<Vec<u8>>,
}

impl SecurityModeComplete {
    /// The REGISTRATION REQUEST in the NAS message container, if there is one.
    pub fn registration_request(&self) -> Option<Result<RegistrationRequest, NasError>> {
        self.nas_message_container
            .as_deref()
            .map(RegistrationRequest::parse)
    }
}

/// SECURITY MODE REJECT (TS 24.501 §8.2.27), UE → AMF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecurityModeReject {
    /// 5GMM cause, as #23 or #24.
    pub cause: FiveGmmCause,
}

/// DEREGISTRATION REQUEST, UE originating (TS 24.501 §8.2.12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeregistrationRequestUeOriginating {
    /// Switch off (§9.11.3.20): no DEREGISTRATION ACCEPT follows.
    pub switch_off: bool,
    /// The access to de-register from.
    pub access: AccessType,
    /// ngKSI.
    pub ngksi: Ngksi,
    /// 5GS mobile identity: the 5G-GUTI, or a SUCI.
    pub mobile_identity: MobileIdentity,
}

/// DEREGISTRATION ACCEPT, UE originating (TS 24.501 §8.2.13), AMF → UE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeregistrationAcceptUeOriginating;

/// 5GMM STATUS (TS 24.501 §8.2.29), either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FiveGmmStatus {
    /// 5GMM cause.
    pub cause: FiveGmmCause,
}

/// IDENTITY REQUEST (TS 24.501 §8.2.21), AMF → UE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdentityRequest {
    /// The identity asked for.
    pub identity_type: IdentityType,
}

/// IDENTITY RESPONSE (TS 24.501 §8.2.22), UE → AMF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityResponse {
    /// The identity.
    pub mobile_identity: MobileIdentity,
}

macro_rules! plain_message {
    ($($name:ident: $text:literal;)*) => {$(
        impl $name {
            /// Reads the plain message from its octets.
            pub fn parse(octets: &[u8]) -> Result<Self, NasError> {
                match NasMessage::parse(octets)? {
                    NasMessage::$name(m) => Ok(m),
                    other => Err(NasError::WrongMessage {
                        expected: $text,
                        found: other.name(),
                    }),
                }
            }

            /// The plain message's octets.
            pub fn encode(&self) -> Result<Vec<u8>, NasError> {
                Ok(ox::Nas5gsMessage::new_5gmm(self.ox_message()?).encode()?)
            }
        }

        impl From<$name> for NasMessage {
            fn from(m: $name) -> Self {
                Self::$name(m)
            }
        }
    )*

        pub(super) fn to_ox(m: &NasMessage) -> Result<M, NasError> {
            match m {
                $(NasMessage::$name(m) => m.ox_message(),)*
            }
        }
    };
}

plain_message! {
    RegistrationRequest: "REGISTRATION REQUEST";
    RegistrationAccept: "REGISTRATION ACCEPT";
    RegistrationComplete: "REGISTRATION COMPLETE";
    RegistrationReject: "REGISTRATION REJECT";
    AuthenticationRequest: "AUTHENTICATION REQUEST";
    AuthenticationResponse: "AUTHENTICATION RESPONSE";
    AuthenticationFailure: "AUTHENTICATION FAILURE";
    AuthenticationReject: "AUTHENTICATION REJECT";
    SecurityModeCommand: "SECURITY MODE COMMAND";
    SecurityModeComplete: "SECURITY MODE COMPLETE";
    SecurityModeReject: "SECURITY MODE REJECT";
    DeregistrationRequestUeOriginating: "DEREGISTRATION REQUEST";
    DeregistrationAcceptUeOriginating: "DEREGISTRATION ACCEPT";
    FiveGmmStatus: "5GMM STATUS";
    IdentityRequest: "IDENTITY REQUEST";
    IdentityResponse: "IDENTITY RESPONSE";
}

pub(super) fn supported(mt: u8) -> bool {
    name_of(mt) != "unsupported message"
}

pub(super) fn name_of(mt: u8) -> &'static str {
    match mt {
        t::REGISTRATION_REQUEST => "REGISTRATION REQUEST",
        t::REGISTRATION_ACCEPT => "REGISTRATION ACCEPT",
        t::REGISTRATION_COMPLETE => "REGISTRATION COMPLETE",
        t::REGISTRATION_REJECT => "REGISTRATION REJECT",
        t::AUTHENTICATION_REQUEST => "AUTHENTICATION REQUEST",
        t::AUTHENTICATION_RESPONSE => "AUTHENTICATION RESPONSE",
        t::AUTHENTICATION_FAILURE => "AUTHENTICATION FAILURE",
        t::AUTHENTICATION_REJECT => "AUTHENTICATION REJECT",
        t::SECURITY_MODE_COMMAND => "SECURITY MODE COMMAND",
        t::SECURITY_MODE_COMPLETE => "SECURITY MODE COMPLETE",
        t::SECURITY_MODE_REJECT => "SECURITY MODE REJECT",
        t::DEREGISTRATION_REQUEST_UE_ORIGINATING => "DEREGISTRATION REQUEST",
        t::DEREGISTRATION_ACCEPT_UE_ORIGINATING => "DEREGISTRATION ACCEPT",
        t::FIVEGMM_STATUS => "5GMM STATUS",
        t::IDENTITY_REQUEST => "IDENTITY REQUEST",
        t::IDENTITY_RESPONSE => "IDENTITY RESPONSE",
        _ => "unsupported message",
    }
}

fn identity(i: &MobileIdentity) -> Result<ox::NasFGsMobileIdentity, NasError> {
    Ok(ox::NasFGsMobileIdentity::new(i.encode()?))
}

fn fixed<const N: usize>(ie: &'static str, v: &[u8]) -> Result<[u8; N], NasError> {
    <[u8; N]>::try_from(v).map_err(|_| NasError::InvalidIe {
        ie,
        reason: format!("{} octets, not {N}", v.len()),
    })
}

fn opt<T, U>(
    v: &Option<T>,
    f: impl FnOnce(&T) -> Result<U, NasError>,
) -> Result<Option<U>, NasError> {
    v.as_ref().map(f).transpose()
}

impl RegistrationRequest {
    fn ox_message(&self) -> Result<M, NasError> {
        let kind = (u8::from(self.follow_on_request) << 3) | self.registration_type.value();
        let mut m = ox::NasRegistrationRequest::new(
            ox::NasFGsRegistrationType::new(kind),
            ox::NasKeySetIdentifier::new(self.ngksi.to_nibble()),
            identity(&self.mobile_identity)?,
        );
        m.ue_security_capability = self
            .ue_security_capability
            .map(|c| ox::NasUeSecurityCapability::new(c.to_octets()));
        m.requested_nssai = opt(&self.requested_nssai, |n| {
            Ok(ox::NasNssai::new(nssai_to_octets(n)?))
        })?;
        m.last_visited_registered_tai = self
            .last_visited_tai
            .map(|t| ox::NasFGsTrackingAreaIdentity::new(tai_to_octets(&t).to_vec()));
        m.nas_message_container = self
            .nas_message_container
            .as_ref()
            .map(|c| ox::NasMessageContainer::new(c.clone()));
        Ok(M::RegistrationRequest(Box::new(m)))
    }

    fn from_ox(m: &ox::NasRegistrationRequest) -> Result<Self, NasError> {
        Ok(Self {
            registration_type: RegistrationType::from_value(m.fgs_registration_type.value)?,
            follow_on_request: m.fgs_registration_type.value & 0x08 != 0,
            ngksi: Ngksi::from_nibble(m.ngksi.value),
            mobile_identity: MobileIdentity::parse(&m.fgs_mobile_identity.value)?,
            ue_security_capability: opt(&m.ue_security_capability, |c| {
                UeSecurityCapability::from_octets(&c.value)
            })?,
            requested_nssai: opt(&m.requested_nssai, |n| nssai_from_octets(&n.value))?,
            last_visited_tai: opt(&m.last_visited_registered_tai, |t| {
                tai_from_octets(&t.value)
            })?,
            nas_message_container: m.nas_message_container.as_ref().map(|c| c.value.to_vec()),
        })
    }
}

impl RegistrationAccept {
    fn ox_message(&self) -> Result<M, NasError> {
        let mut m = ox::NasRegistrationAccept::new(ox::NasFGsRegistrationResult::new(vec![self
            .result
            .value()]));
        m.fg_guti = opt(&self.guti, |g| identity(&MobileIdentity::Guti(*g)))?;
        if !self.tai_list.is_empty() {
            m.tai_list = Some(ox::NasFGsTrackingAreaIdentityList::new(tai_list_to_octets(
                &self.tai_list,
            )?));
        }
        if !self.allowed_nssai.is_empty() {
            m.allowed_nssai = Some(ox::NasNssai::new(nssai_to_octets(&self.allowed_nssai)?));
        }
        m.t3512_value = self
            .t3512
            .map(|t| ox::NasT3512Value::new(vec![timer3_octet(t)]));
        m.t3502_value = self
            .t3502
            .map(|t| ox::NasGprsTimer2::new(vec![timer2_octet(t)]));
        Ok(M::RegistrationAccept(Box::new(m)))
    }

    fn from_ox(m: &ox::NasRegistrationAccept) -> Result<Self, NasError> {
        let guti = match opt(&m.fg_guti, |g| MobileIdentity::parse(&g.value))? {
            None => None,
            Some(MobileIdentity::Guti(g)) => Some(g),
            Some(_) => {
                return Err(NasError::InvalidIe {
                    ie: "5G-GUTI",
                    reason: "another type of identity".into(),
                })
            }
        };
        Ok(Self {
            result: RegistrationResult::from_octets(&m.fgs_registration_result.value)?,
            guti,
            tai_list: opt(&m.tai_list, |l| tai_list_from_octets(&l.value))?.unwrap_or_default(),
            allowed_nssai: opt(&m.allowed_nssai, |n| nssai_from_octets(&n.value))?
                .unwrap_or_default(),
            t3512: m.t3512_value.as_ref().and_then(|t| timer3_value(&t.value)),
            t3502: m.t3502_value.as_ref().and_then(|t| timer2_value(&t.value)),
        })
    }
}

impl RegistrationComplete {
    fn ox_message(&self) -> Result<M, NasError> {
        Ok(M::RegistrationComplete(Box::new(
            ox::NasRegistrationComplete::new(),
        )))
    }
}

impl RegistrationReject {
    /// A reject with a cause alone.
    pub fn new(cause: FiveGmmCause) -> Self {
        Self {
            cause,
            t3346: None,
            t3502: None,
        }
    }

    /// #22 Congestion with back-off timer T3346 (TS 24.501 §5.5.1.2.5: the network
    /// rejects for general NAS level mobility management congestion control, §5.3.9).
    pub fn congestion(t3346: TimerValue) -> Self {
        Self {
            t3346: Some(t3346),
            ..Self::new(FiveGmmCause::Congestion)
        }
    }

    fn ox_message(&self) -> Result<M, NasError> {
        let mut m = ox::NasRegistrationReject::new(ox::NasFGmmCause::new(self.cause.value()));
        m.t3346_value = self
            .t3346
            .map(|t| ox::NasGprsTimer2::new(vec![timer2_octet(t)]));
        m.t3502_value = self
            .t3502
            .map(|t| ox::NasGprsTimer2::new(vec![timer2_octet(t)]));
        Ok(M::RegistrationReject(Box::new(m)))
    }
}

impl AuthenticationRequest {
    fn ox_message(&self) -> Result<M, NasError> {
        let mut m = ox::NasAuthenticationRequest::new(
            ox::NasKeySetIdentifier::new(self.ngksi.to_nibble()),
            ox::NasAbba::new(self.abba.clone()),
        );
        m.authentication_parameter_rand =
            Some(ox::NasAuthenticationParameterRand::new(self.rand.to_vec()));
        m.authentication_parameter_autn =
            Some(ox::NasAuthenticationParameterAutn::new(self.autn.to_vec()));
        Ok(M::AuthenticationRequest(Box::new(m)))
    }

    fn from_ox(m: &ox::NasAuthenticationRequest) -> Result<Self, NasError> {
        let rand = m
            .authentication_parameter_rand
            .as_ref()
            .ok_or(NasError::MissingIe("RAND"))?;
        let autn = m
            .authentication_parameter_autn
            .as_ref()
            .ok_or(NasError::MissingIe("AUTN"))?;
        Ok(Self {
            ngksi: Ngksi::from_nibble(m.ngksi.value),
            abba: m.abba.value.to_vec(),
            rand: fixed("RAND", &rand.value)?,
            autn: fixed("AUTN", &autn.value)?,
        })
    }
}

impl AuthenticationResponse {
    fn ox_message(&self) -> Result<M, NasError> {
        let mut m = ox::NasAuthenticationResponse::new();
        m.authentication_response_parameter = Some(ox::NasAuthenticationResponseParameter::new(
            self.res_star.to_vec(),
        ));
        Ok(M::AuthenticationResponse(Box::new(m)))
    }

    fn from_ox(m: &ox::NasAuthenticationResponse) -> Result<Self, NasError> {
        let p = m
            .authentication_response_parameter
            .as_ref()
            .ok_or(NasError::MissingIe("authentication response parameter"))?;
        Ok(Self {
            res_star: fixed("authentication response parameter", &p.value)?,
        })
    }
}

impl AuthenticationFailure {
    fn ox_message(&self) -> Result<M, NasError> {
        let mut m = ox::NasAuthenticationFailure::new(ox::NasFGmmCause::new(self.cause.value()));
        m.authentication_failure_parameter = self
            .auts
            .map(|a| ox::NasAuthenticationFailureParameter::new(a.to_vec()));
        Ok(M::AuthenticationFailure(Box::new(m)))
    }

    fn from_ox(m: &ox::NasAuthenticationFailure) -> Result<Self, NasError> {
        let cause = FiveGmmCause::from_value(m.fgmm_cause.value);
        let auts = opt(&m.authentication_failure_parameter, |p| {
            fixed("authentication failure parameter", &p.value)
        })?;
        // §8.2.4.2: the parameter is sent with #21; without it the AMF cannot
        // resynchronise, which is a conditional IE error (§7.7.2).
        if cause == FiveGmmCause::SynchFailure && auts.is_none() {
            return Err(NasError::MissingIe("authentication failure parameter"));
        }
        Ok(Self { cause, auts })
    }
}

impl AuthenticationReject {
    fn ox_message(&self) -> Result<M, NasError> {
        Ok(M::AuthenticationReject(Box::new(
            ox::NasAuthenticationReject::new(),
        )))
    }
}

impl SecurityModeCommand {
    fn ox_message(&self) -> Result<M, NasError> {
        let mut m = ox::NasSecurityModeCommand::new(
            ox::NasSecurityAlgorithms::new(algorithms_to_octet(self.nea, self.nia)),
            ox::NasKeySetIdentifier::new(self.ngksi.to_nibble()),
            ox::NasUeSecurityCapability::new(self.replayed_ue_security_capability.to_octets()),
        );
        // §9.11.3.28: 001 "IMEISV requested".
        m.imeisv_request = self.imeisv_request.then(|| ox::NasImeisvRequest::new(1));
        m.additional_5g_security_information = self
            .additional_security_information
            .map(|a| ox::NasAdditional5gSecurityInformation::new(vec![a.value()]));
        m.abba = self.abba.as_ref().map(|a| ox::NasAbba::new(a.clone()));
        Ok(M::SecurityModeCommand(Box::new(m)))
    }

    fn from_ox(m: &ox::NasSecurityModeCommand) -> Result<Self, NasError> {
        let (nea, nia) = algorithms_from_octet(m.selected_nas_security_algorithms.value)?;
        Ok(Self {
            nia,
            nea,
            ngksi: Ngksi::from_nibble(m.ngksi.value),
            replayed_ue_security_capability: UeSecurityCapability::from_octets(
                &m.replayed_ue_security_capabilities.value,
            )?,
            imeisv_request: m
                .imeisv_request
                .as_ref()
                .is_some_and(|r| r.value & 0x07 == 1),
            additional_security_information: m
                .additional_5g_security_information
                .as_ref()
                .map(|a| AdditionalSecurityInformation::from_octets(&a.value)),
            abba: m.abba.as_ref().map(|a| a.value.to_vec()),
        })
    }
}

impl SecurityModeComplete {
    fn ox_message(&self) -> Result<M, NasError> {
        let mut m = ox::NasSecurityModeComplete::new();
        m.imeisv = opt(&self.imeisv, |d| {
            identity(&MobileIdentity::Imeisv(d.clone()))
        })?;
        m.nas_message_container = self
            .nas_message_container
            .as_ref()
            .map(|c| ox::NasMessageContainer::new(c.clone()));
        Ok(M::SecurityModeComplete(Box::new(m)))
    }

    fn from_ox(m: &ox::NasSecurityModeComplete) -> Result<Self, NasError> {
        let imeisv = match opt(&m.imeisv, |i| MobileIdentity::parse(&i.value))? {
            None => None,
            Some(MobileIdentity::Imeisv(d)) => Some(d),
            Some(_) => {
                return Err(NasError::InvalidIe {
                    ie: "IMEISV",
                    reason: "another type of identity".into(),
                })
            }
        };
        Ok(Self {
            imeisv,
            nas_message_container: m.nas_message_container.as_ref().map(|c| c.value.to_vec()),
        })
    }
}

impl SecurityModeReject {
    fn ox_message(&self) -> Result<M, NasError> {
        Ok(M::SecurityModeReject(Box::new(
            ox::NasSecurityModeReject::new(ox::NasFGmmCause::new(self.cause.value())),
        )))
    }
}

impl DeregistrationRequestUeOriginating {
    fn ox_message(&self) -> Result<M, NasError> {
        let kind = (u8::from(self.switch_off) << 3) | self.access.value();
        Ok(M::DeregistrationRequestUeOriginating(Box::new(
            ox::NasDeregistrationRequestUeOriginating::new(
                ox::NasDeRegistrationType::new(kind),
                ox::NasKeySetIdentifier::new(self.ngksi.to_nibble()),
                identity(&self.mobile_identity)?,
            ),
        )))
    }

    fn from_ox(m: &ox::NasDeregistrationRequestUeOriginating) -> Result<Self, NasError> {
        let kind = m.de_registration_type.value;
        Ok(Self {
            switch_off: kind & 0x08 != 0,
            access: AccessType::from_value("de-registration type", kind)?,
            ngksi: Ngksi::from_nibble(m.ngksi.value),
            mobile_identity: MobileIdentity::parse(&m.fgs_mobile_identity.value)?,
        })
    }
}

impl DeregistrationAcceptUeOriginating {
    fn ox_message(&self) -> Result<M, NasError> {
        Ok(M::DeregistrationAcceptUeOriginating(Box::new(
            ox::NasDeregistrationAcceptUeOriginating::new(),
        )))
    }
}

impl FiveGmmStatus {
    fn ox_message(&self) -> Result<M, NasError> {
        Ok(M::FiveGmmStatus(Box::new(ox::NasFGmmStatus::new(
            ox::NasFGmmCause::new(self.cause.value()),
        ))))
    }
}

impl IdentityRequest {
    fn ox_message(&self) -> Result<M, NasError> {
        Ok(M::IdentityRequest(Box::new(ox::NasIdentityRequest::new(
            ox::NasFGsIdentityType::new(self.identity_type.value()),
        ))))
    }
}

impl IdentityResponse {
    fn ox_message(&self) -> Result<M, NasError> {
        Ok(M::IdentityResponse(Box::new(ox::NasIdentityResponse::new(
            identity(&self.mobile_identity)?,
        ))))
    }
}

pub(super) fn from_ox(m: &M, message_type: u8) -> Result<NasMessage, NasError> {
    Ok(match m {
        M::RegistrationRequest(m) => RegistrationRequest::from_ox(m)?.into(),
        M::RegistrationAccept(m) => RegistrationAccept::from_ox(m)?.into(),
        M::RegistrationComplete(_) => RegistrationComplete.into(),
        M::RegistrationReject(m) => RegistrationReject {
            cause: FiveGmmCause::from_value(m.fgmm_cause.value),
            t3346: m.t3346_value.as_ref().and_then(|t| timer2_value(&t.value)),
            t3502: m.t3502_value.as_ref().and_then(|t| timer2_value(&t.value)),
        }
        .into(),
        M::AuthenticationRequest(m) => AuthenticationRequest::from_ox(m)?.into(),
        M::AuthenticationResponse(m) => AuthenticationResponse::from_ox(m)?.into(),
        M::AuthenticationFailure(m) => AuthenticationFailure::from_ox(m)?.into(),
        M::AuthenticationReject(_) => AuthenticationReject.into(),
        M::SecurityModeCommand(m) => SecurityModeCommand::from_ox(m)?.into(),
        M::SecurityModeComplete(m) => SecurityModeComplete::from_ox(m)?.into(),
        M::SecurityModeReject(m) => SecurityModeReject {
            cause: FiveGmmCause::from_value(m.fgmm_cause.value),
        }
        .into(),
        M::DeregistrationRequestUeOriginating(m) => {
            DeregistrationRequestUeOriginating::from_ox(m)?.into()
        }
        M::DeregistrationAcceptUeOriginating(_) => DeregistrationAcceptUeOriginating.into(),
        M::FiveGmmStatus(m) => FiveGmmStatus {
            cause: FiveGmmCause::from_value(m.fgmm_cause.value),
        }
        .into(),
        M::IdentityRequest(m) => IdentityRequest {
            identity_type: IdentityType::from_value(m.identity_type.value)?,
        }
        .into(),
        M::IdentityResponse(m) => IdentityResponse {
            mobile_identity: MobileIdentity::parse(&m.mobile_identity.value)?,
        }
        .into(),
        _ => return Err(NasError::Unsupported(message_type)),
    })
}
