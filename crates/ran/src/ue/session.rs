//! The UE's PDU sessions (TS 24.501 §6.4.1 establishment, §6.4.3 UE-requested
//! release, §6.3.3 network-requested release): 5GSM messages carried in UL / DL NAS
//! TRANSPORT under the 5GMM security context, one state machine per session.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use proto::ids::Snssai;
use proto::nas::sm_ue::{
    self, DlNasTransport, PduSessionEstablishmentRequest, PduSessionReleaseComplete,
    PduSessionReleaseRequest, SessionAmbr, SmMessage, UlNasTransport,
};
use proto::nas::{FiveGmmCause, FiveGsmCause};
use tracing::debug;

use super::{DiscardReason, Ue, UeError, UeEvent, UeOutput, UeState};

/// Why the network refused a PDU session procedure: the SMF's 5GSM cause, or the 5GMM cause
/// of a DL NAS TRANSPORT that brought the UE's own 5GSM message back because the AMF could
/// not forward it (TS 24.501 §5.4.5.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionRefusal {
    /// PDU SESSION ESTABLISHMENT REJECT from the SMF.
    Sm(FiveGsmCause),
    /// The AMF did not forward the message.
    NotForwarded(FiveGmmCause),
}

impl std::fmt::Display for SessionRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionRefusal::Sm(c) => write!(f, "5GSM cause {c}"),
            SessionRefusal::NotForwarded(c) => write!(f, "not forwarded, 5GMM cause {c}"),
        }
    }
}

/// What a UE asks for when it establishes a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRequest {
    /// PDU session ID, 1..=15 (TS 24.007 §11.2.3.1b).
    pub pdu_session_id: u8,
    /// DNN.
    pub dnn: String,
    /// S-NSSAI.
    pub snssai: Snssai,
}

impl Default for SessionRequest {
    /// Session 1 to DNN `internet` on slice SST 1: the load generator's session.
    fn default() -> Self {
        Self {
            pdu_session_id: 1,
            dnn: "internet".into(),
            snssai: Snssai { sst: 1, sd: None },
        }
    }
}

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// ESTABLISHMENT REQUEST sent (PDU SESSION ACTIVE PENDING, §6.1.3.2.1).
    ActivePending,
    /// ESTABLISHMENT ACCEPT received (PDU SESSION ACTIVE).
    Active,
    /// RELEASE REQUEST sent (PDU SESSION INACTIVE PENDING).
    InactivePending,
}

/// One PDU session of a UE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UeSession {
    /// PDU session ID.
    pub pdu_session_id: u8,
    /// PTI of the UE-requested procedure under way, 0 when none.
    pub pti: u8,
    /// State.
    pub state: SessionState,
    /// The UE's IPv4 address (PDU address of the accept).
    pub ue_ip: Option<Ipv4Addr>,
    /// QFIs of the authorized QoS rules.
    pub qfis: Vec<u8>,
    /// Session-AMBR.
    pub ambr: Option<SessionAmbr>,
}

/// The sessions of one UE and its PTI allocator.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    by_id: BTreeMap<u8, UeSession>,
    last_pti: u8,
}

impl Sessions {
    /// §9.6 / TS 24.007 §11.2.3.1a: the UE allocates PTIs 1..=254.
    fn next_pti(&mut self) -> u8 {
        self.last_pti = if self.last_pti >= 254 {
            1
        } else {
            self.last_pti + 1
        };
        self.last_pti
    }

    pub(super) fn clear(&mut self) {
        self.by_id.clear();
    }
}

impl Ue {
    /// The session `id`, if any.
    pub fn pdu_session(&self, id: u8) -> Option<&UeSession> {
        self.sessions.by_id.get(&id)
    }

    /// Every session.
    pub fn pdu_sessions(&self) -> impl Iterator<Item = &UeSession> {
        self.sessions.by_id.values()
    }

    /// TS 24.501 §6.4.1.2: a PDU SESSION ESTABLISHMENT REQUEST (IPv4, SSC mode 1) in a
    /// protected UL NAS TRANSPORT (request type initial). Gives the NAS octets for
    /// UPLINK NAS TRANSPORT.
    pub fn pdu_session_establishment_request(
        &mut self,
        req: &SessionRequest,
    ) -> Result<Vec<u8>, UeError> {
        if self.state != UeState::Registered || self.nas.is_none() {
            return Err(UeError::Session("the UE is not registered"));
        }
        if !(1..=15).contains(&req.pdu_session_id) {
            return Err(UeError::Session("a PDU session ID is 1..=15"));
        }
        if self.sessions.by_id.contains_key(&req.pdu_session_id) {
            return Err(UeError::Session("the PDU session already exists"));
        }
        let pti = self.sessions.next_pti();
        let sm = SmMessage::EstablishmentRequest(PduSessionEstablishmentRequest {
            pdu_session_id: req.pdu_session_id,
            pti,
            pdu_session_type: Some(sm_ue::PDU_SESSION_TYPE_IPV4),
            ssc_mode: Some(sm_ue::SSC_MODE_1),
        });
        let ul = UlNasTransport {
            payload_container_type: sm_ue::PAYLOAD_N1_SM,
            payload: sm.encode()?,
            pdu_session_id: Some(req.pdu_session_id),
            request_type: Some(sm_ue::REQUEST_INITIAL),
            snssai: Some(req.snssai),
            dnn: Some(req.dnn.clone()),
        };
        let out = self.send(&ul.encode()?)?;
        self.sessions.by_id.insert(
            req.pdu_session_id,
            UeSession {
                pdu_session_id: req.pdu_session_id,
                pti,
                state: SessionState::ActivePending,
                ue_ip: None,
                qfis: Vec::new(),
                ambr: None,
            },
        );
        Ok(out)
    }

    /// TS 24.501 §6.4.3.2: a PDU SESSION RELEASE REQUEST (#36 regular deactivation)
    /// for an active session.
    pub fn pdu_session_release_request(&mut self, id: u8) -> Result<Vec<u8>, UeError> {
        let pti = self.sessions.next_pti();
        let Some(s) = self.sessions.by_id.get(&id) else {
            return Err(UeError::Session("no such PDU session"));
        };
        if s.state != SessionState::Active {
            return Err(UeError::Session("the PDU session is not active"));
        }
        let sm = SmMessage::ReleaseRequest(PduSessionReleaseRequest {
            pdu_session_id: id,
            pti,
            cause: Some(sm_ue::CAUSE_REGULAR_DEACTIVATION),
        });
        let out = self.send(&n1_sm(id, &sm)?)?;
        if let Some(s) = self.sessions.by_id.get_mut(&id) {
            s.pti = pti;
            s.state = SessionState::InactivePending;
        }
        Ok(out)
    }

    /// A verified DL NAS TRANSPORT (§5.4.5.3): its 5GSM payload, to the session.
    pub(super) fn on_dl_nas_transport(&mut self, plain: &[u8]) -> UeOutput {
        let dl = match DlNasTransport::parse(plain) {
            Ok(m) if m.payload_container_type == sm_ue::PAYLOAD_N1_SM => m,
            Ok(_) => return UeOutput::discard(DiscardReason::Unexpected),
            Err(e) => {
                debug!(error = %e, "DL NAS TRANSPORT not understood");
                return UeOutput::discard(DiscardReason::Malformed);
            }
        };
        // §5.4.5.3.3: the AMF could not route the UE's 5GSM message; the payload is
        // the UE's own message back.
        if let (Some(cause), Some(id)) = (dl.fgmm_cause, dl.pdu_session_id) {
            if self.sessions.by_id.remove(&id).is_some() {
                return UeOutput::event(UeEvent::PduSessionRejected {
                    pdu_session_id: id,
                    cause: SessionRefusal::NotForwarded(FiveGmmCause::from_value(cause)),
                });
            }
            return UeOutput::discard(DiscardReason::Unexpected);
        }
        let sm = match SmMessage::parse(&dl.payload) {
            Ok(m) => m,
            Err(e) => {
                debug!(error = %e, "5GSM message not understood");
                return UeOutput::discard(DiscardReason::Malformed);
            }
        };
        let id = sm.pdu_session_id();
        match sm {
            SmMessage::EstablishmentAccept(a) => {
                let Some(s) = self.sessions.by_id.get_mut(&id) else {
                    return UeOutput::discard(DiscardReason::Unexpected);
                };
                if s.state != SessionState::ActivePending || s.pti != a.pti {
                    return UeOutput::discard(DiscardReason::Unexpected);
                }
                s.state = SessionState::Active;
                s.pti = 0;
                s.ue_ip = a.pdu_address;
                s.qfis = sm_ue::qos_rule_qfis(&a.qos_rules);
                s.ambr = Some(a.session_ambr);
                UeOutput::event(UeEvent::PduSessionEstablished {
                    pdu_session_id: id,
                    ue_ip: a.pdu_address,
                })
            }
            SmMessage::EstablishmentReject(r) => {
                let pending = self
                    .sessions
                    .by_id
                    .get(&id)
                    .is_some_and(|s| s.state == SessionState::ActivePending && s.pti == r.pti);
                if !pending {
                    return UeOutput::discard(DiscardReason::Unexpected);
                }
                self.sessions.by_id.remove(&id);
                UeOutput::event(UeEvent::PduSessionRejected {
                    pdu_session_id: id,
                    cause: SessionRefusal::Sm(FiveGsmCause::from_value(r.cause)),
                })
            }
            SmMessage::ReleaseCommand(c) => {
                // §6.3.3.3: release the session and confirm, whether or not the UE
                // still knew it.
                self.sessions.by_id.remove(&id);
                let complete = SmMessage::ReleaseComplete(PduSessionReleaseComplete {
                    pdu_session_id: id,
                    pti: c.pti,
                });
                let uplink = n1_sm(id, &complete).and_then(|p| self.send(&p));
                match uplink {
                    Ok(u) => UeOutput {
                        uplink: Some(u),
                        event: UeEvent::PduSessionReleased {
                            pdu_session_id: id,
                            cause: c.cause,
                        },
                    },
                    Err(e) => {
                        debug!(error = %e, "PDU SESSION RELEASE COMPLETE not sent");
                        UeOutput::discard(DiscardReason::Unexpected)
                    }
                }
            }
            _ => UeOutput::discard(DiscardReason::Unexpected),
        }
    }
}

/// A 5GSM message of an existing session in a plain UL NAS TRANSPORT.
fn n1_sm(id: u8, sm: &SmMessage) -> Result<Vec<u8>, UeError> {
    Ok(UlNasTransport {
        payload_container_type: sm_ue::PAYLOAD_N1_SM,
        payload: sm.encode()?,
        pdu_session_id: Some(id),
        request_type: None,
        snssai: None,
        dnn: None,
    }
    .encode()?)
}
