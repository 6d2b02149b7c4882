//! The emulated UE: a USIM and the 5GMM side of NAS (TS 24.501 §5) for registration,
//! authentication, security mode control, identification and de-registration.
//!
//! Sans-IO: [`Ue::registration_request`] and [`Ue::deregistration_request`] give the
//! NAS octets to send, [`Ue::handle_downlink_nas`] takes each NAS message the network
//! sent and returns what the UE answers. The gNB side ([`crate::gnb::GnbUes`]) carries
//! those octets over N2; nothing here knows about NGAP, sockets or clocks.
//!
//! Once a security mode control procedure has succeeded, every uplink message is
//! protected with the UE's 5G NAS security context (TS 24.501 §4.4.5) and every
//! downlink message must verify under it (§4.4.4.2), except the few that the
//! network may send in clear.

#[cfg(test)]
mod backoff_tests;
mod session;
mod usim;

use proto::ids::{Plmn, Snssai, Tai};
use proto::nas::{
    may_be_unprotected, AccessType, AuthenticationFailure, AuthenticationRequest,
    AuthenticationResponse, DeregistrationRequestUeOriginating, Direction, FiveGmmCause,
    FiveGmmStatus, Guti, IdentityRequest, IdentityResponse, IdentityType, MobileIdentity, NasCount,
    NasError, NasMessage, NasSecurityContext, NasSecurityError, Ngksi, ProtectionScheme,
    RegistrationAccept, RegistrationComplete, RegistrationRequest, RegistrationType, SchemeOutput,
    SecurityHeaderType, SecurityModeCommand, SecurityModeComplete, SecurityModeReject, Suci,
    TimerValue, UeSecurityCapability,
};
use security::kdf::{self, Abba, ServingNetworkName, Supi};
use security::suci::{self, HomeNetworkPublicKey};
use security::{Kamf, Kgnb, Rand};
use thiserror::Error;
use tracing::debug;

pub use session::{SessionRefusal, SessionRequest, SessionState, UeSession};
use usim::{Usim, UsimCheck};
pub use usim::{DELTA, IND_BITS};

/// The `tracing` target of the debug event logged for every AUTN whose MAC verified, with
/// the UE's SUPI and the AUTN's SQN: `RUST_LOG=info,steer5g::sqn=debug` shows them.
pub const SQN_LOG_TARGET: &str = "steer5g::sqn";

/// How the UE hides its SUPI in an initial registration (TS 33.501 §6.12.2).
#[derive(Debug, Clone)]
pub enum SuciScheme {
    /// The null scheme: the MSIN in clear.
    Null,
    /// ECIES (Profile A or B, from the key) with the home network public key of
    /// identifier `key_id`.
    Ecies {
        /// The home network public key; its profile selects the scheme.
        key: HomeNetworkPublicKey,
        /// Home network public key identifier (TS 24.501 §9.11.3.4).
        key_id: u8,
    },
}

/// What a UE is made of: the USIM record and what the ME announces.
#[derive(Debug, Clone)]
pub struct UeConfig {
    /// SUPI, `imsi-` and its digits.
    pub supi: String,
    /// The subscriber key K.
    pub k: [u8; 16],
    /// OPc.
    pub opc: [u8; 16],
    /// SQN last issued to the subscriber (the store's value).
    pub sqn: u64,
    /// The serving (and home) PLMN; its MCC and MNC head the IMSI.
    pub plmn: Plmn,
    /// SUCI protection.
    pub suci: SuciScheme,
    /// Routing indicator, 1 to 4 digits ("0000" by default).
    pub routing_indicator: String,
    /// UE security capability (NEA0-3 and NIA0-3 by default).
    pub capability: UeSecurityCapability,
    /// Requested NSSAI.
    pub requested_nssai: Vec<Snssai>,
    /// IMEISV, 16 digits, sent when the network asks for it.
    pub imeisv: String,
}

impl UeConfig {
    /// A UE of a store subscriber in `plmn`, with the null scheme, routing indicator
    /// "0000", every algorithm, the subscribed slices as requested NSSAI.
    pub fn from_subscriber(sub: &store::Subscriber, plmn: Plmn) -> Result<Self, UeError> {
        let requested_nssai = sub
            .slices
            .iter()
            .map(|s| Snssai::new(s.sst, s.sd))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| UeError::Config(e.to_string()))?;
        Ok(Self {
            sqn: sub.sqn,
            requested_nssai,
            ..Self::new(sub.supi.clone(), sub.k, sub.opc(), plmn)
        })
    }

    /// A UE of `supi` with keys `k` and `opc` in `plmn`: SQN 0, the default slice (SST 1)
    /// as requested NSSAI, the null scheme, routing indicator "0000", every algorithm.
    pub fn new(supi: impl Into<String>, k: [u8; 16], opc: [u8; 16], plmn: Plmn) -> Self {
        Self {
            supi: supi.into(),
            k,
            opc,
            sqn: 0,
            plmn,
            suci: SuciScheme::Null,
            routing_indicator: "0000".into(),
            capability: UeSecurityCapability::ALL,
            requested_nssai: vec![proto::ids::defaults::SNSSAI],
            imeisv: "4370816125816151".into(),
        }
    }
}

/// A configuration the UE cannot run with, or a message it cannot build.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum UeError {
    /// A bad SUPI, MSIN, SQN or slice.
    #[error("invalid UE configuration: {0}")]
    Config(String),
    /// SUCI concealment failed.
    #[error("SUCI concealment: {0}")]
    Suci(#[from] security::Error),
    /// A NAS message does not encode.
    #[error("NAS encoding: {0}")]
    Nas(#[from] NasError),
    /// Protecting a message failed (NAS COUNT exhausted).
    #[error("NAS protection: {0}")]
    Protect(#[from] NasSecurityError),
    /// Mobility or periodic registration, or de-registration, needs a 5G-GUTI and a
    /// NAS security context the UE does not have.
    #[error("no 5G-GUTI / NAS security context for this request")]
    NoContext,
    /// A session procedure that the UE's state does not allow.
    #[error("PDU session: {0}")]
    Session(&'static str),
}

/// The kind of registration the UE starts (TS 24.501 §5.5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegistrationKind {
    /// Initial registration, with a SUCI.
    Initial,
    /// Mobility registration updating, with the 5G-GUTI.
    Mobility,
    /// Periodic registration updating, with the 5G-GUTI.
    Periodic,
}

/// 5GMM state of the UE (TS 24.501 §5.1.3.2.1, main states).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UeState {
    /// 5GMM-DEREGISTERED.
    Deregistered,
    /// 5GMM-REGISTERED-INITIATED.
    RegistrationInitiated,
    /// 5GMM-REGISTERED.
    Registered,
    /// 5GMM-DEREGISTERED-INITIATED.
    DeregistrationInitiated,
}

/// Why a downlink message was dropped without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiscardReason {
    /// Not 5GMM, too short, or a reserved security header type.
    Malformed,
    /// Integrity check failed, or no context to check it with (§4.4.4.2).
    Integrity,
    /// A plain message that may not be received unprotected (§4.4.4.2).
    NotProtected,
    /// A message this UE does not act on in its state.
    Unexpected,
}

/// What one downlink message did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UeEvent {
    /// AUTHENTICATION RESPONSE sent.
    Authenticated,
    /// AUTHENTICATION FAILURE sent with this cause (#20, #21 or #26).
    AuthenticationFailed(FiveGmmCause),
    /// AUTHENTICATION REJECT received: the UE is deregistered.
    AuthenticationRejected,
    /// SECURITY MODE COMPLETE sent: the new context is current.
    SecurityModeCompleted,
    /// SECURITY MODE REJECT sent with this cause.
    SecurityModeRejected(FiveGmmCause),
    /// REGISTRATION ACCEPT received.
    Registered,
    /// REGISTRATION REJECT received with this cause.
    RegistrationRejected(FiveGmmCause),
    /// DEREGISTRATION ACCEPT received.
    Deregistered,
    /// 5GMM STATUS received with this cause.
    Status(FiveGmmCause),
    /// IDENTITY RESPONSE sent.
    IdentityProvided,
    /// 5GMM STATUS sent: a verified message that could not be read.
    StatusSent(FiveGmmCause),
    /// Dropped.
    Discarded(DiscardReason),
    /// PDU SESSION ESTABLISHMENT ACCEPT received.
    PduSessionEstablished {
        /// PDU session ID.
        pdu_session_id: u8,
        /// The UE's IPv4 address.
        ue_ip: Option<std::net::Ipv4Addr>,
    },
    /// PDU SESSION ESTABLISHMENT REJECT received (or the AMF could not route the
    /// request).
    PduSessionRejected {
        /// PDU session ID.
        pdu_session_id: u8,
        /// Who refused, with which cause.
        cause: SessionRefusal,
    },
    /// PDU SESSION RELEASE COMMAND received, RELEASE COMPLETE sent.
    PduSessionReleased {
        /// PDU session ID.
        pdu_session_id: u8,
        /// 5GSM cause.
        cause: u8,
    },
}

/// The UE's answer to one downlink NAS message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UeOutput {
    /// NAS octets to send uplink, if any.
    pub uplink: Option<Vec<u8>>,
    /// What happened.
    pub event: UeEvent,
}

impl UeOutput {
    fn event(event: UeEvent) -> Self {
        Self {
            uplink: None,
            event,
        }
    }

    fn discard(r: DiscardReason) -> Self {
        Self::event(UeEvent::Discarded(r))
    }
}

/// Procedure counters of one UE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UeCounters {
    /// Registration requests sent.
    pub registration_requests: u64,
    /// Registration accepts received.
    pub registrations_accepted: u64,
    /// Registration rejects received.
    pub registrations_rejected: u64,
    /// Authentication responses sent.
    pub authentications: u64,
    /// Authentication failures #20 sent.
    pub mac_failures: u64,
    /// Authentication failures #21 sent.
    pub synch_failures: u64,
    /// Security mode completes sent.
    pub security_mode_completes: u64,
    /// Security mode rejects sent.
    pub security_mode_rejects: u64,
    /// Deregistration requests sent.
    pub deregistration_requests: u64,
    /// Downlink messages discarded.
    pub discarded: u64,
}

/// KAMF of an authentication, waiting for the SECURITY MODE COMMAND that takes it
/// into use (a non-current 5G NAS security context, TS 33.501 §6.2.1).
#[derive(Clone)]
struct PartialContext {
    ngksi: Ngksi,
    kamf: Kamf,
}

/// One emulated UE.
#[derive(Debug)]
pub struct Ue {
    cfg: UeConfig,
    supi: Supi,
    msin: String,
    snn: ServingNetworkName,
    usim: Usim,
    state: UeState,
    /// A SUCI concealed ahead of time by [`Ue::prepare`].
    prepared_suci: Option<MobileIdentity>,
    guti: Option<Guti>,
    tai_list: Vec<Tai>,
    allowed_nssai: Vec<Snssai>,
    t3512: Option<TimerValue>,
    /// KAMF of the last successful authentication, not yet in use.
    pending: Option<PartialContext>,
    /// KAMF of the current context.
    kamf: Option<PartialContext>,
    nas: Option<NasSecurityContext>,
    /// The plain REGISTRATION REQUEST of the ongoing procedure (§5.4.2.3 puts it in
    /// SECURITY MODE COMPLETE).
    last_registration: Option<Vec<u8>>,
    /// UL NAS COUNT of the SECURITY MODE COMPLETE, the KgNB input.
    kgnb_count: Option<NasCount>,
    switch_off: bool,
    last_cause: Option<FiveGmmCause>,
    /// T3346 of the last REGISTRATION REJECT with #22 (§5.3.9), until the next request.
    t3346: Option<std::time::Duration>,
    counters: UeCounters,
    sessions: session::Sessions,
}

impl core::fmt::Debug for PartialContext {
    // The key stays out of logs.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PartialContext")
            .field("ngksi", &self.ngksi)
            .finish_non_exhaustive()
    }
}

impl Ue {
    /// A deregistered UE with a USIM holding `cfg`.
    pub fn new(cfg: UeConfig) -> Result<Self, UeError> {
        let supi = Supi::parse(&cfg.supi).map_err(|e| UeError::Config(e.to_string()))?;
        let prefix = 3 + usize::from(cfg.plmn.mnc_len());
        let msin = supi
            .digits()
            .get(prefix..)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| UeError::Config("SUPI shorter than MCC + MNC".into()))?
            .to_owned();
        if !supi
            .digits()
            .starts_with(&format!("{}{}", cfg.plmn.mcc_str(), cfg.plmn.mnc_str()))
        {
            return Err(UeError::Config("SUPI is not of the PLMN".into()));
        }
        let snn = ServingNetworkName::from_plmn(&cfg.plmn.mcc_str(), &cfg.plmn.mnc_str())?;
        if cfg.sqn > security::Sqn::MAX {
            return Err(UeError::Config("SQN above 48 bits".into()));
        }
        let usim = Usim::new(&cfg.k, &cfg.opc, cfg.sqn);
        Ok(Self {
            cfg,
            supi,
            msin,
            snn,
            usim,
            state: UeState::Deregistered,
            prepared_suci: None,
            guti: None,
            tai_list: Vec::new(),
            allowed_nssai: Vec::new(),
            t3512: None,
            pending: None,
            kamf: None,
            nas: None,
            last_registration: None,
            kgnb_count: None,
            switch_off: false,
            last_cause: None,
            t3346: None,
            counters: UeCounters::default(),
            sessions: session::Sessions::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &UeConfig {
        &self.cfg
    }

    /// 5GMM state.
    pub fn state(&self) -> UeState {
        self.state
    }

    /// Counters.
    pub fn counters(&self) -> &UeCounters {
        &self.counters
    }

    /// The 5G-S-TMSI of the 5G-GUTI, for the INITIAL UE MESSAGE of a registration
    /// with a 5G-GUTI (TS 38.413 §9.2.5.1).
    pub fn s_tmsi(&self) -> Option<proto::nas::STmsi> {
        self.guti.map(|g| g.s_tmsi())
    }

    /// The 5G-GUTI the network assigned, if any.
    pub fn guti(&self) -> Option<&Guti> {
        self.guti.as_ref()
    }

    /// TAI list of the last REGISTRATION ACCEPT.
    pub fn tai_list(&self) -> &[Tai] {
        &self.tai_list
    }

    /// Allowed NSSAI of the last REGISTRATION ACCEPT.
    pub fn allowed_nssai(&self) -> &[Snssai] {
        &self.allowed_nssai
    }

    /// T3512 of the last REGISTRATION ACCEPT.
    pub fn t3512(&self) -> Option<TimerValue> {
        self.t3512
    }

    /// The last 5GMM cause received (reject, status) or sent (failure, reject).
    pub fn last_cause(&self) -> Option<FiveGmmCause> {
        self.last_cause
    }

    /// The back-off of the last REGISTRATION REJECT with #22 Congestion: its T3346 value
    /// (TS 24.501 §5.5.1.2.5, §5.3.9), during which the UE must not try to register again;
    /// `None` without one (or zero, or deactivated: no back-off) and once a new request
    /// is made. The timer itself is the runtime's, which owns the clock.
    ///
    /// §5.3.9 has a UE that got T3346 in a message without integrity protection (as a
    /// reject before authentication is) pick a random value from the default range of
    /// 15-30 minutes instead; the emulator uses the value received, so that a load test can
    /// see the back-off it configured.
    pub fn t3346(&self) -> Option<std::time::Duration> {
        self.t3346
    }

    /// The current 5G NAS security context.
    pub fn nas_context(&self) -> Option<&NasSecurityContext> {
        self.nas.as_ref()
    }

    /// SQN_MS: the highest SQN the USIM accepted.
    pub fn usim_sqn(&self) -> u64 {
        self.usim.sqn_ms()
    }

    /// KgNB from the current KAMF and the UL NAS COUNT of the message that established
    /// or verified the context (TS 33.501 Annex A.9, §6.9.2.1.1): the SECURITY MODE
    /// COMPLETE, or the integrity protected REGISTRATION REQUEST of a mobility or
    /// periodic registration without security mode control. What the gNB should have
    /// received in INITIAL CONTEXT SETUP REQUEST.
    pub fn kgnb(&self) -> Option<Kgnb> {
        let k = self.kamf.as_ref()?;
        let count = self.kgnb_count?;
        kdf::kgnb(&k.kamf, count.as_u32()).ok()
    }

    /// KgNB from the current KAMF and any uplink NAS COUNT.
    pub fn kgnb_for_count(&self, ul_count: u32) -> Option<Kgnb> {
        kdf::kgnb(&self.kamf.as_ref()?.kamf, ul_count).ok()
    }

    /// Test hook: overwrite the USIM's SQN_MS (ahead of the network's to force a
    /// resynchronisation).
    pub fn set_usim_sqn(&mut self, sqn: u64) {
        self.usim.set_sqn(sqn);
    }

    /// Test hook: replace K in the USIM (to force a MAC failure).
    pub fn set_usim_k(&mut self, k: [u8; 16]) {
        self.usim.set_k(&k, &self.cfg.opc);
    }

    /// Conceals the SUCI of the next initial registration now, off the measured path
    /// (the UE may compute it whenever it likes before sending it).
    pub fn prepare(&mut self) -> Result<(), UeError> {
        if self.prepared_suci.is_none() {
            self.prepared_suci = Some(self.conceal()?);
        }
        Ok(())
    }

    fn conceal(&self) -> Result<MobileIdentity, UeError> {
        let (scheme, hn_key_id, output) = match &self.cfg.suci {
            SuciScheme::Null => (
                ProtectionScheme::Null,
                0,
                SchemeOutput::Msin(self.msin.clone()),
            ),
            SuciScheme::Ecies { key, key_id } => {
                let input = suci::msin_to_bcd(&self.msin)?;
                let scheme = match key.profile() {
                    suci::Profile::A => ProtectionScheme::ProfileA,
                    suci::Profile::B => ProtectionScheme::ProfileB,
                };
                (
                    scheme,
                    *key_id,
                    SchemeOutput::Concealed(suci::conceal(key, &input)?),
                )
            }
        };
        Ok(MobileIdentity::Suci(Suci {
            plmn: self.cfg.plmn,
            routing_indicator: self.cfg.routing_indicator.clone(),
            scheme,
            hn_key_id,
            output,
        }))
    }

    fn take_suci(&mut self) -> Result<MobileIdentity, UeError> {
        match self.prepared_suci.take() {
            Some(s) => Ok(s),
            None => self.conceal(),
        }
    }

    /// A REGISTRATION REQUEST (TS 24.501 §5.5.1.2.2, §5.5.1.3.2).
    ///
    /// Initial: the SUCI, ngKSI "no key", in clear; any old context is dropped and the
    /// UE authenticates afresh. Mobility and periodic: the 5G-GUTI and the current
    /// ngKSI, integrity protected (not ciphered, so the AMF can read the identity)
    /// with the current context (§4.4.6).
    pub fn registration_request(&mut self, kind: RegistrationKind) -> Result<Vec<u8>, UeError> {
        self.t3346 = None;
        let (registration_type, ngksi, identity) = match kind {
            RegistrationKind::Initial => {
                self.nas = None;
                self.kamf = None;
                self.pending = None;
                self.kgnb_count = None;
                // A new 5GMM context holds none of the old one's PDU sessions (TS 24.501
                // §6.1.3.2): after a lost AMF, the UE starts over with none.
                self.sessions.clear();
                (RegistrationType::Initial, Ngksi::NO_KEY, self.take_suci()?)
            }
            RegistrationKind::Mobility | RegistrationKind::Periodic => {
                let (Some(guti), Some(nas)) = (self.guti, self.nas.as_ref()) else {
                    return Err(UeError::NoContext);
                };
                let t = if kind == RegistrationKind::Mobility {
                    RegistrationType::MobilityUpdating
                } else {
                    RegistrationType::PeriodicUpdating
                };
                (t, nas.ngksi, MobileIdentity::Guti(guti))
            }
        };
        let req = RegistrationRequest {
            registration_type,
            follow_on_request: false,
            ngksi,
            mobile_identity: identity,
            ue_security_capability: Some(self.cfg.capability),
            requested_nssai: (!self.cfg.requested_nssai.is_empty())
                .then(|| self.cfg.requested_nssai.clone()),
            last_visited_tai: self.tai_list.first().copied(),
            nas_message_container: None,
        };
        let plain = req.encode()?;
        self.last_registration = Some(plain.clone());
        self.state = UeState::RegistrationInitiated;
        self.counters.registration_requests += 1;
        match (kind, self.nas.as_mut()) {
            (RegistrationKind::Initial, _) | (_, None) => Ok(plain),
            (_, Some(nas)) => {
                let count = nas.ul_count;
                let out = nas.protect(
                    &plain,
                    SecurityHeaderType::IntegrityProtected,
                    Direction::Uplink,
                )?;
                // The AMF verifies the context with this message: its COUNT is the KgNB
                // input unless a security mode control procedure follows.
                self.kgnb_count = Some(count);
                Ok(out)
            }
        }
    }

    /// A DEREGISTRATION REQUEST, UE originating, 3GPP access (TS 24.501 §5.5.2.2.1),
    /// with the 5G-GUTI (or a SUCI without one), protected with the current context
    /// if there is one. With `switch_off` the UE is deregistered at once (§5.5.2.2.2:
    /// no answer comes).
    pub fn deregistration_request(&mut self, switch_off: bool) -> Result<Vec<u8>, UeError> {
        let identity = match self.guti {
            Some(g) => MobileIdentity::Guti(g),
            None => self.take_suci()?,
        };
        let msg = DeregistrationRequestUeOriginating {
            switch_off,
            access: AccessType::ThreeGpp,
            ngksi: self.nas.as_ref().map_or(Ngksi::NO_KEY, |n| n.ngksi),
            mobile_identity: identity,
        };
        let out = self.send(&msg.encode()?)?;
        self.counters.deregistration_requests += 1;
        self.switch_off = switch_off;
        self.state = if switch_off {
            UeState::Deregistered
        } else {
            UeState::DeregistrationInitiated
        };
        Ok(out)
    }

    /// Protects an uplink message with the current context (§4.4.5: integrity
    /// protected and ciphered), or sends it plain without one.
    fn send(&mut self, plain: &[u8]) -> Result<Vec<u8>, UeError> {
        match self.nas.as_mut() {
            Some(nas) => Ok(nas.protect(
                plain,
                SecurityHeaderType::IntegrityProtectedAndCiphered,
                Direction::Uplink,
            )?),
            None => Ok(plain.to_vec()),
        }
    }

    fn reply(&mut self, msg: impl Into<NasMessage>, event: UeEvent) -> UeOutput {
        let plain = match msg.into().encode() {
            Ok(p) => p,
            Err(e) => {
                debug!(error = %e, "uplink NAS message does not encode");
                return UeOutput::discard(DiscardReason::Unexpected);
            }
        };
        match self.send(&plain) {
            Ok(uplink) => UeOutput {
                uplink: Some(uplink),
                event,
            },
            Err(e) => {
                debug!(error = %e, "uplink NAS message not protected");
                UeOutput::discard(DiscardReason::Unexpected)
            }
        }
    }

    /// Replies in clear whatever the context: the answers §4.4.4.3 lets the AMF take
    /// unprotected when the UE cannot use (or trust) the context.
    fn reply_plain(&mut self, msg: impl Into<NasMessage>, event: UeEvent) -> UeOutput {
        match msg.into().encode() {
            Ok(p) => UeOutput {
                uplink: Some(p),
                event,
            },
            Err(e) => {
                debug!(error = %e, "uplink NAS message does not encode");
                UeOutput::discard(DiscardReason::Unexpected)
            }
        }
    }

    /// One downlink NAS message. Never panics, whatever `octets` holds.
    pub fn handle_downlink_nas(&mut self, octets: &[u8]) -> UeOutput {
        let out = self.dispatch(octets);
        if matches!(out.event, UeEvent::Discarded(_)) {
            self.counters.discarded += 1;
        }
        out
    }

    fn dispatch(&mut self, octets: &[u8]) -> UeOutput {
        let sht = match octets {
            [proto::nas::EPD_5GMM, sht, _, ..] => *sht & 0x0f,
            _ => return UeOutput::discard(DiscardReason::Malformed),
        };
        let Some(sht) = SecurityHeaderType::from_value(sht) else {
            return UeOutput::discard(DiscardReason::Malformed);
        };
        match sht {
            SecurityHeaderType::Plain => self.on_plain(octets),
            SecurityHeaderType::IntegrityProtectedNewContext => self.on_new_context(octets),
            _ => {
                let Some(nas) = self.nas.as_mut() else {
                    return UeOutput::discard(DiscardReason::Integrity);
                };
                match nas.unprotect(octets, Direction::Downlink) {
                    Ok(u) => self.on_verified(&u.plain),
                    Err(e) => {
                        // §4.4.4.2: a message that fails the integrity check is
                        // discarded.
                        debug!(error = %e, "downlink NAS message discarded");
                        UeOutput::discard(DiscardReason::Integrity)
                    }
                }
            }
        }
    }

    fn on_plain(&mut self, octets: &[u8]) -> UeOutput {
        let Some(t) = proto::nas::plain_message_type(octets) else {
            return UeOutput::discard(DiscardReason::Malformed);
        };
        // §4.4.4.2: only these may come in clear.
        if !may_be_unprotected(t, Direction::Downlink) {
            return UeOutput::discard(DiscardReason::NotProtected);
        }
        let msg = match NasMessage::parse(octets) {
            Ok(m) => m,
            Err(e) => {
                debug!(error = %e, "plain downlink NAS message not understood");
                return UeOutput::discard(DiscardReason::Malformed);
            }
        };
        match msg {
            // §4.4.4.2: a REGISTRATION REJECT with #76 or #78 must be protected.
            NasMessage::RegistrationReject(r) if matches!(r.cause.value(), 76 | 78) => {
                UeOutput::discard(DiscardReason::NotProtected)
            }
            // The accept of a switch-off request never comes; a plain one is only
            // taken for a request that was not a switch off (§4.4.4.2).
            NasMessage::DeregistrationAcceptUeOriginating(_) if self.switch_off => {
                UeOutput::discard(DiscardReason::Unexpected)
            }
            m => self.on_message(m),
        }
    }

    fn on_verified(&mut self, plain: &[u8]) -> UeOutput {
        if proto::nas::plain_message_type(plain) == Some(proto::nas::sm_ue::DL_NAS_TRANSPORT) {
            return self.on_dl_nas_transport(plain);
        }
        match NasMessage::parse(plain) {
            Ok(m) => self.on_message(m),
            Err(NasError::Protected) => UeOutput::discard(DiscardReason::Malformed),
            Err(e) => {
                // §7: a verified message we cannot read is answered with 5GMM STATUS.
                let cause = e.cause();
                self.reply(FiveGmmStatus { cause }, UeEvent::StatusSent(cause))
            }
        }
    }

    fn on_message(&mut self, m: NasMessage) -> UeOutput {
        match m {
            NasMessage::AuthenticationRequest(r) => self.on_authentication_request(&r),
            NasMessage::AuthenticationReject(_) => {
                // §5.4.1.3.5: the USIM is considered invalid for 5GS until switched
                // off; the 5G-GUTI, context and KSI are deleted.
                self.forget();
                self.state = UeState::Deregistered;
                UeOutput::event(UeEvent::AuthenticationRejected)
            }
            NasMessage::RegistrationAccept(a) => self.on_registration_accept(a),
            NasMessage::RegistrationReject(r) => {
                let cause = r.cause.as_received();
                self.last_cause = Some(cause);
                self.counters.registrations_rejected += 1;
                self.t3346 = match (cause, r.t3346) {
                    (FiveGmmCause::Congestion, Some(TimerValue::Seconds(s))) if s > 0 => {
                        Some(std::time::Duration::from_secs(u64::from(s)))
                    }
                    _ => None,
                };
                self.state = UeState::Deregistered;
                // §5.5.1.2.5: these causes delete the 5G-GUTI and the KSI.
                if matches!(
                    cause,
                    FiveGmmCause::IllegalUe
                        | FiveGmmCause::IllegalMe
                        | FiveGmmCause::FiveGsServicesNotAllowed
                        | FiveGmmCause::UeIdentityCannotBeDerived
                        | FiveGmmCause::ImplicitlyDeregistered
                ) {
                    self.forget();
                }
                UeOutput::event(UeEvent::RegistrationRejected(cause))
            }
            NasMessage::DeregistrationAcceptUeOriginating(_) => {
                if self.state != UeState::DeregistrationInitiated {
                    return UeOutput::discard(DiscardReason::Unexpected);
                }
                self.state = UeState::Deregistered;
                // TS 24.501 §5.5.2.2.2: de-registration releases the PDU sessions
                // locally.
                self.sessions.clear();
                UeOutput::event(UeEvent::Deregistered)
            }
            NasMessage::FiveGmmStatus(s) => {
                let cause = s.cause.as_received();
                self.last_cause = Some(cause);
                UeOutput::event(UeEvent::Status(cause))
            }
            NasMessage::IdentityRequest(r) => self.on_identity_request(&r),
            // SECURITY MODE COMMAND is only taken with header type 3 (§4.4.4.2).
            NasMessage::SecurityModeCommand(_) => UeOutput::discard(DiscardReason::Unexpected),
            other => {
                // §7.4: a message of the network the UE does not expect here.
                let cause = FiveGmmCause::MessageTypeNotCompatible;
                debug!(message = other.name(), "unexpected downlink NAS message");
                self.reply(FiveGmmStatus { cause }, UeEvent::StatusSent(cause))
            }
        }
    }

    fn forget(&mut self) {
        self.guti = None;
        self.nas = None;
        self.kamf = None;
        self.pending = None;
        self.kgnb_count = None;
        // Without a 5GMM context there are no sessions (TS 24.501 §6.1.3.2).
        self.sessions.clear();
    }

    /// TS 24.501 §5.4.1.3.2 (UE side) with the USIM of TS 33.102 §6.3.3 and the key
    /// chain of TS 33.501 §6.1.3.2.
    fn on_authentication_request(&mut self, r: &AuthenticationRequest) -> UeOutput {
        let rand = Rand::from_bytes(r.rand);
        let autn = security::Autn::from_bytes(r.autn);
        let check = self.usim.authenticate(&rand, &autn);
        if let Some(sqn) = self.usim.last_seen() {
            // The SQN travels concealed (SQN ⊕ AK) but is no key: tests collect it here to
            // prove that no SQN is handed out twice, across restarts too (TS 33.102 §C.3).
            tracing::debug!(target: SQN_LOG_TARGET, supi = %self.cfg.supi, sqn, "AUTN received");
        }
        let res = match check {
            UsimCheck::Ok(res) => res,
            UsimCheck::MacFailure => {
                self.counters.mac_failures += 1;
                self.last_cause = Some(FiveGmmCause::MacFailure);
                return self.reply_auth_failure(AuthenticationFailure::mac_failure());
            }
            UsimCheck::SynchFailure(auts) => {
                self.counters.synch_failures += 1;
                self.last_cause = Some(FiveGmmCause::SynchFailure);
                return self
                    .reply_auth_failure(AuthenticationFailure::synch_failure(*auts.as_bytes()));
            }
        };
        // TS 33.501 §6.1.3.2: the ME checks the AMF separation bit is set.
        if !Usim::separation_bit(&res.amf) {
            let f = AuthenticationFailure::non_5g_authentication_unacceptable();
            self.last_cause = Some(f.cause);
            return self.reply_auth_failure(f);
        }
        let keys = (|| -> Result<_, security::Error> {
            let res_star = kdf::res_star(&res.ck, &res.ik, &self.snn, &rand, &res.res)?;
            let kausf = kdf::kausf(&res.ck, &res.ik, &self.snn, &autn.sqn_xor_ak())?;
            let kseaf = kdf::kseaf(&kausf, &self.snn)?;
            let kamf = kdf::kamf(&kseaf, &self.supi, &Abba::new(&r.abba)?)?;
            Ok((res_star, kamf))
        })();
        let (res_star, kamf) = match keys {
            Ok(k) => k,
            Err(e) => {
                // Only an ABBA of a wrong length gets here.
                debug!(error = %e, "authentication keys not derived");
                let cause = FiveGmmCause::SemanticallyIncorrectMessage;
                return self.reply(FiveGmmStatus { cause }, UeEvent::StatusSent(cause));
            }
        };
        self.pending = Some(PartialContext {
            ngksi: r.ngksi,
            kamf,
        });
        self.counters.authentications += 1;
        self.reply(
            AuthenticationResponse {
                res_star: *res_star.as_bytes(),
            },
            UeEvent::Authenticated,
        )
    }

    fn reply_auth_failure(&mut self, f: AuthenticationFailure) -> UeOutput {
        let cause = f.cause;
        self.reply(f, UeEvent::AuthenticationFailed(cause))
    }

    /// TS 24.501 §5.4.2.3 and §5.4.2.5 (UE side).
    fn on_new_context(&mut self, octets: &[u8]) -> UeOutput {
        // The command itself is not ciphered: read it to learn which keys check it.
        let Some(smc) = octets
            .get(7..)
            .and_then(|p| SecurityModeCommand::parse(p).ok())
        else {
            return UeOutput::discard(DiscardReason::Malformed);
        };
        let partial = match (&self.pending, &self.kamf) {
            (Some(p), _) if p.ngksi == smc.ngksi => p.clone(),
            (_, Some(k)) if k.ngksi == smc.ngksi => k.clone(),
            _ => return self.reject_smc(FiveGmmCause::SecurityModeRejectedUnspecified),
        };
        if !self.cfg.capability.supports_nia(smc.nia) || !self.cfg.capability.supports_nea(smc.nea)
        {
            return self.reject_smc(FiveGmmCause::UeSecurityCapabilitiesMismatch);
        }
        let mut ctx = NasSecurityContext::new(
            smc.ngksi,
            kdf::knas_int(&partial.kamf, smc.nia),
            kdf::knas_enc(&partial.kamf, smc.nea),
            smc.nia,
            smc.nea,
        );
        // A context taken into use again keeps its uplink COUNT; a new one starts at 0.
        if let (Some(cur), Some(k)) = (&self.nas, &self.kamf) {
            if k.ngksi == smc.ngksi && self.pending.is_none() {
                ctx.ul_count = cur.ul_count;
                ctx.dl_count = cur.dl_count;
            }
        }
        if ctx.unprotect(octets, Direction::Downlink).is_err() {
            // §5.4.2.5: the command cannot be accepted.
            return self.reject_smc(FiveGmmCause::SecurityModeRejectedUnspecified);
        }
        if smc.replayed_ue_security_capability != self.cfg.capability {
            return self.reject_smc(FiveGmmCause::UeSecurityCapabilitiesMismatch);
        }
        let complete = SecurityModeComplete {
            imeisv: smc.imeisv_request.then(|| self.cfg.imeisv.clone()),
            nas_message_container: self.last_registration.clone(),
        };
        let plain = match complete.encode() {
            Ok(p) => p,
            Err(e) => {
                debug!(error = %e, "SECURITY MODE COMPLETE does not encode");
                return self.reject_smc(FiveGmmCause::SecurityModeRejectedUnspecified);
            }
        };
        let count = ctx.ul_count;
        let Ok(uplink) = ctx.protect(
            &plain,
            SecurityHeaderType::IntegrityProtectedAndCipheredNewContext,
            Direction::Uplink,
        ) else {
            return self.reject_smc(FiveGmmCause::SecurityModeRejectedUnspecified);
        };
        self.nas = Some(ctx);
        self.kamf = Some(partial);
        self.pending = None;
        self.kgnb_count = Some(count);
        self.counters.security_mode_completes += 1;
        UeOutput {
            uplink: Some(uplink),
            event: UeEvent::SecurityModeCompleted,
        }
    }

    fn reject_smc(&mut self, cause: FiveGmmCause) -> UeOutput {
        self.counters.security_mode_rejects += 1;
        self.last_cause = Some(cause);
        // §4.4.4.3: SECURITY MODE REJECT goes in clear; the UE keeps its old context.
        self.reply_plain(
            SecurityModeReject { cause },
            UeEvent::SecurityModeRejected(cause),
        )
    }

    /// TS 24.501 §5.5.1.2.4 / §5.5.1.3.4 (UE side).
    fn on_registration_accept(&mut self, a: RegistrationAccept) -> UeOutput {
        if self.state != UeState::RegistrationInitiated {
            return UeOutput::discard(DiscardReason::Unexpected);
        }
        let new_guti = a.guti.is_some();
        if let Some(g) = a.guti {
            self.guti = Some(g);
        }
        self.tai_list = a.tai_list;
        self.allowed_nssai = a.allowed_nssai;
        self.t3512 = a.t3512;
        self.state = UeState::Registered;
        self.last_registration = None;
        self.counters.registrations_accepted += 1;
        // §5.5.1.2.4: REGISTRATION COMPLETE acknowledges a new 5G-GUTI.
        if new_guti {
            self.reply(RegistrationComplete, UeEvent::Registered)
        } else {
            UeOutput::event(UeEvent::Registered)
        }
    }

    /// TS 24.501 §5.4.3.2: the identity asked for; a SUCI is concealed afresh.
    fn on_identity_request(&mut self, r: &IdentityRequest) -> UeOutput {
        let identity = match r.identity_type {
            IdentityType::Suci => match self.take_suci() {
                Ok(s) => s,
                Err(e) => {
                    debug!(error = %e, "SUCI not concealed");
                    MobileIdentity::NoIdentity
                }
            },
            IdentityType::Guti => self
                .guti
                .map_or(MobileIdentity::NoIdentity, MobileIdentity::Guti),
            IdentityType::Imeisv => MobileIdentity::Imeisv(self.cfg.imeisv.clone()),
            IdentityType::Imei => {
                MobileIdentity::Imei(self.cfg.imeisv.get(..14).map_or_else(String::new, |d| {
                    // TS 23.003 §6.2.1: the IMEI's last digit is a check digit;
                    // the emulator sends 0.
                    format!("{d}0")
                }))
            }
            IdentityType::STmsi => self.guti.map_or(MobileIdentity::NoIdentity, |g| {
                MobileIdentity::STmsi(g.s_tmsi())
            }),
            _ => MobileIdentity::NoIdentity,
        };
        self.reply(
            IdentityResponse {
                mobile_identity: identity,
            },
            UeEvent::IdentityProvided,
        )
    }
}
