//! The gNB's UE-associated N2 signalling (TS 38.413 §8.2, §8.3.1, §8.3.3, §8.6): per UE
//! a RAN UE NGAP ID, INITIAL UE MESSAGE and UPLINK NAS TRANSPORT up, and DOWNLINK NAS
//! TRANSPORT, INITIAL CONTEXT SETUP REQUEST, UE CONTEXT RELEASE COMMAND and ERROR
//! INDICATION down, demultiplexed to UEs by RAN UE NGAP ID.
//!
//! Sans-IO like [`super::Gnb`]: the caller names each UE by a [`UeKey`] of its choosing
//! (its index in the load generator), hands NAS octets in, and gets NGAP octets with
//! their SCTP stream, and [`GnbUeEvent`]s, back.

use std::collections::HashMap;

use proto::ids::{Plmn, Tac, Tai};
use proto::nas::STmsi;
use proto::ngap::{
    self, Cause, EncodeError, ErrorIndication, InitialContextSetupRequest,
    InitialContextSetupResponse, InitialUeMessage, MessageKind, NgapPdu, NrCgi, ProtocolCause,
    RadioNetworkCause, RrcEstablishmentCause, UeContextReleaseCommand, UeContextReleaseComplete,
    UeContextReleaseRequest, UeNgapIds, UplinkNasTransport, UserLocation,
};
use security::Kgnb;
use thiserror::Error;
use tracing::debug;

use super::GnbConfig;

mod sessions;
pub use sessions::GnbSession;

/// How the caller names a UE.
pub type UeKey = u64;

/// RAN UE NGAP ID is INTEGER (0..2^32-1) (TS 38.413 §9.3.3.2).
pub type RanUeNgapId = u32;

/// One NGAP message to send, with its SCTP stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct N2Send {
    /// SCTP stream: never [`ngap::NON_UE_STREAM`] for UE-associated signalling.
    pub stream: u16,
    /// The NGAP octets.
    pub pdu: Vec<u8>,
}

/// Why an uplink message could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum GnbUeError {
    /// The UE already has an N2 connection: release it first.
    #[error("UE {0} already has a UE-associated logical connection")]
    AlreadyConnected(UeKey),
    /// The UE has no N2 connection (no INITIAL UE MESSAGE, or released).
    #[error("UE {0} has no UE-associated logical connection")]
    NotConnected(UeKey),
    /// No AMF UE NGAP ID yet: the AMF has not answered the INITIAL UE MESSAGE.
    #[error("UE {0} has no AMF UE NGAP ID yet")]
    NoAmfId(UeKey),
    /// The message does not encode.
    #[error("NGAP encoding: {0}")]
    Encode(#[from] EncodeError),
}

/// What a downlink message meant for a UE, or for the gNB.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GnbUeEvent {
    /// A NAS message for the UE (DOWNLINK NAS TRANSPORT, or the NAS-PDU of INITIAL
    /// CONTEXT SETUP REQUEST).
    NasToUe {
        /// The UE.
        ue: UeKey,
        /// The NAS octets.
        nas: Vec<u8>,
    },
    /// INITIAL CONTEXT SETUP REQUEST: the AS security key, answered with a response.
    ContextSetup {
        /// The UE.
        ue: UeKey,
        /// KgNB.
        kgnb: Kgnb,
    },
    /// UE CONTEXT RELEASE COMMAND: the UE's N2 state is gone (complete sent).
    Released {
        /// The UE.
        ue: UeKey,
        /// The AMF's cause.
        cause: Cause,
    },
    /// ERROR INDICATION about a UE of this gNB.
    ErrorIndication {
        /// The UE, when the IDs named one.
        ue: Option<UeKey>,
        /// The cause, if any.
        cause: Option<Cause>,
    },
    /// A UE-associated message for a RAN UE NGAP ID this gNB does not know: an ERROR
    /// INDICATION with unknown-local-UE-NGAP-ID went back (§10.6).
    UnknownUe {
        /// The procedure.
        procedure: &'static str,
        /// The RAN UE NGAP ID it named, if any.
        ran_ue_ngap_id: Option<RanUeNgapId>,
    },
    /// A UE-associated message whose IEs could not be read (an ERROR INDICATION
    /// went back).
    Malformed {
        /// The procedure.
        procedure: &'static str,
    },
    /// Not an NGAP PDU: an ERROR INDICATION went back (§10.2).
    Undecodable,
    /// PDU SESSION RESOURCE SETUP REQUEST: a session set up (response sent).
    PduSessionSetup(GnbSession),
    /// PDU SESSION RESOURCE SETUP REQUEST: a session that could not be set up.
    PduSessionFailed {
        /// The UE.
        ue: UeKey,
        /// PDU session ID.
        pdu_session_id: u8,
        /// Why.
        cause: Cause,
    },
    /// PDU SESSION RESOURCE RELEASE COMMAND: a session released (response sent).
    PduSessionReleased {
        /// The UE.
        ue: UeKey,
        /// PDU session ID.
        pdu_session_id: u8,
    },
    /// Not UE-associated (NG Setup, an ERROR INDICATION without UE IDs...): for
    /// [`super::Gnb::handle`].
    NotUeAssociated {
        /// The procedure.
        procedure: &'static str,
    },
}

/// What one downlink message gave.
#[derive(Debug, Clone, Default)]
pub struct GnbUeOutput {
    /// Events, in order.
    pub events: Vec<GnbUeEvent>,
    /// NGAP messages to send back.
    pub transmit: Vec<N2Send>,
}

#[derive(Debug)]
struct UeN2 {
    key: UeKey,
    amf_ue_ngap_id: Option<u64>,
    stream: u16,
    kgnb: Option<Kgnb>,
    /// A UE CONTEXT RELEASE REQUEST went for it: it stays until the AMF's command.
    releasing: bool,
}

/// The UE-associated N2 side of one gNB.
#[derive(Debug)]
pub struct GnbUes {
    tai: Tai,
    nr_cgi: NrCgi,
    ue_streams: u16,
    next_id: RanUeNgapId,
    by_ran_id: HashMap<RanUeNgapId, UeN2>,
    by_key: HashMap<UeKey, RanUeNgapId>,
    sessions: sessions::SessionTable,
}

impl GnbUes {
    /// The UE side of a gNB of `cfg`, serving NR cell `cell` (the low bits of the
    /// 36-bit NR Cell Identity under the gNB ID, TS 38.300 §8.2) and spreading UEs over
    /// SCTP streams 1..=`ue_streams` (at least one).
    pub fn new(cfg: &GnbConfig, cell: u64, ue_streams: u16) -> Self {
        let cell_bits = 36u32.saturating_sub(u32::from(cfg.gnb_id_bits));
        let cell_mask = (1u64 << cell_bits) - 1;
        let cell_id = (u64::from(cfg.gnb_id) << cell_bits | (cell & cell_mask)) & ((1 << 36) - 1);
        Self::with_location(
            Tai {
                plmn: cfg.plmn,
                tac: cfg.tac,
            },
            NrCgi {
                plmn: cfg.plmn,
                cell_id,
            },
            ue_streams,
        )
    }

    /// The UE side of a gNB at an explicit TAI and NR-CGI.
    pub fn with_location(tai: Tai, nr_cgi: NrCgi, ue_streams: u16) -> Self {
        Self {
            tai,
            nr_cgi,
            ue_streams: ue_streams.max(1),
            next_id: 1,
            by_ran_id: HashMap::new(),
            by_key: HashMap::new(),
            sessions: sessions::SessionTable::default(),
        }
    }

    /// The User Location Information this gNB reports.
    pub fn user_location(&self) -> UserLocation {
        UserLocation::Nr {
            nr_cgi: self.nr_cgi,
            tai: self.tai,
        }
    }

    /// The PLMN and TAC of the cell.
    pub fn tai(&self) -> (Plmn, Tac) {
        (self.tai.plmn, self.tai.tac)
    }

    /// Number of UEs with an N2 connection.
    pub fn len(&self) -> usize {
        self.by_ran_id.len()
    }

    /// Whether no UE has an N2 connection.
    pub fn is_empty(&self) -> bool {
        self.by_ran_id.is_empty()
    }

    /// The RAN UE NGAP ID of a UE.
    pub fn ran_ue_ngap_id(&self, ue: UeKey) -> Option<RanUeNgapId> {
        self.by_key.get(&ue).copied()
    }

    /// The AMF UE NGAP ID learned for a UE.
    pub fn amf_ue_ngap_id(&self, ue: UeKey) -> Option<u64> {
        self.by_key
            .get(&ue)
            .and_then(|id| self.by_ran_id.get(id))
            .and_then(|u| u.amf_ue_ngap_id)
    }

    /// KgNB of a UE, once INITIAL CONTEXT SETUP REQUEST brought it.
    pub fn kgnb(&self, ue: UeKey) -> Option<&Kgnb> {
        self.by_key
            .get(&ue)
            .and_then(|id| self.by_ran_id.get(id))
            .and_then(|u| u.kgnb.as_ref())
    }

    fn allocate(&mut self) -> RanUeNgapId {
        // Skip IDs still in use after a wrap.
        loop {
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1);
            if !self.by_ran_id.contains_key(&id) {
                return id;
            }
        }
    }

    /// INITIAL UE MESSAGE (TS 38.413 §8.6.1) for a UE without an N2 connection: a new
    /// RAN UE NGAP ID, the gNB's location, RRC cause mo-Signalling, and the 5G-S-TMSI
    /// when the UE registers with a 5G-GUTI.
    pub fn initial_ue_message(
        &mut self,
        ue: UeKey,
        nas: &[u8],
        s_tmsi: Option<STmsi>,
    ) -> Result<N2Send, GnbUeError> {
        if self.by_key.contains_key(&ue) {
            return Err(GnbUeError::AlreadyConnected(ue));
        }
        let id = self.allocate();
        let pdu = InitialUeMessage {
            ran_ue_ngap_id: id,
            nas_pdu: nas.to_vec(),
            user_location: self.user_location(),
            rrc_establishment_cause: Some(RrcEstablishmentCause::MoSignalling),
            five_g_s_tmsi: s_tmsi,
            ue_context_requested: false,
        }
        .encode()?;
        let stream = 1 + (id % u32::from(self.ue_streams)) as u16;
        self.by_ran_id.insert(
            id,
            UeN2 {
                key: ue,
                amf_ue_ngap_id: None,
                stream,
                kgnb: None,
                releasing: false,
            },
        );
        self.by_key.insert(ue, id);
        Ok(N2Send { stream, pdu })
    }

    /// UPLINK NAS TRANSPORT (TS 38.413 §8.6.3) for a UE whose AMF UE NGAP ID is known.
    pub fn uplink_nas(&mut self, ue: UeKey, nas: &[u8]) -> Result<N2Send, GnbUeError> {
        let id = *self.by_key.get(&ue).ok_or(GnbUeError::NotConnected(ue))?;
        let u = self
            .by_ran_id
            .get(&id)
            .ok_or(GnbUeError::NotConnected(ue))?;
        let amf = u.amf_ue_ngap_id.ok_or(GnbUeError::NoAmfId(ue))?;
        let pdu = UplinkNasTransport {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: id,
            nas_pdu: nas.to_vec(),
            user_location: Some(self.user_location()),
        }
        .encode()?;
        Ok(N2Send {
            stream: u.stream,
            pdu,
        })
    }

    /// Drops a UE's N2 state locally (the runtime gave up on it). A UE whose release was
    /// asked for ([`GnbUes::release_request`]) stays until the AMF's UE CONTEXT RELEASE
    /// COMMAND, which is answered then.
    pub fn forget(&mut self, ue: UeKey) {
        let Some(id) = self.by_key.get(&ue).copied() else {
            return;
        };
        if self.by_ran_id.get(&id).is_some_and(|u| u.releasing) {
            return;
        }
        self.by_key.remove(&ue);
        self.by_ran_id.remove(&id);
        self.sessions.drop_ue(ue);
    }

    /// TS 38.413 §8.3.2: UE CONTEXT RELEASE REQUEST for a UE the gNB gives up on (its radio
    /// connection lost), so that the AMF releases its context rather than keep it for a UE
    /// that is gone. `None` when the AMF does not know the UE yet: its N2 state is dropped
    /// here (the AMF's own timers end what it holds).
    pub fn release_request(
        &mut self,
        ue: UeKey,
        cause: RadioNetworkCause,
    ) -> Result<Option<N2Send>, GnbUeError> {
        let Some(id) = self.by_key.get(&ue).copied() else {
            return Ok(None);
        };
        let Some(u) = self.by_ran_id.get_mut(&id) else {
            return Ok(None);
        };
        let Some(amf) = u.amf_ue_ngap_id else {
            self.forget(ue);
            return Ok(None);
        };
        if u.releasing {
            return Ok(None);
        }
        let pdu = UeContextReleaseRequest {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: id,
            cause: cause.into(),
        }
        .encode()?;
        u.releasing = true;
        Ok(Some(N2Send {
            stream: u.stream,
            pdu,
        }))
    }

    /// One NGAP message from the AMF. Never panics, whatever `pdu` holds.
    pub fn handle_downlink(&mut self, stream: u16, pdu: &[u8]) -> GnbUeOutput {
        let mut out = GnbUeOutput::default();
        match ngap::decode(pdu) {
            Ok(p) => self.handle_pdu(stream, &p, &mut out),
            Err(e) => {
                debug!(error = %e, "undecodable NGAP message");
                queue(
                    &mut out,
                    stream,
                    ErrorIndication::new(ProtocolCause::TransferSyntaxError),
                );
                out.events.push(GnbUeEvent::Undecodable);
            }
        }
        out
    }

    /// One decoded NGAP message from the AMF, its results added to `out`.
    pub fn handle_pdu(&mut self, stream: u16, pdu: &NgapPdu, out: &mut GnbUeOutput) {
        let procedure = pdu.procedure_name();
        match pdu.kind() {
            MessageKind::DownlinkNasTransport => match ngap::DownlinkNasTransport::parse(pdu) {
                Ok(m) => {
                    if let Some(ue) =
                        self.bind(stream, m.ran_ue_ngap_id, m.amf_ue_ngap_id, procedure, out)
                    {
                        out.events.push(GnbUeEvent::NasToUe { ue, nas: m.nas_pdu });
                    }
                }
                Err(e) => malformed(stream, pdu, procedure, &e, out),
            },
            MessageKind::InitialContextSetupRequest => {
                match InitialContextSetupRequest::parse(pdu) {
                    Ok(m) => self.on_context_setup(stream, m, procedure, out),
                    Err(e) => malformed(stream, pdu, procedure, &e, out),
                }
            }
            MessageKind::UeContextReleaseCommand => match UeContextReleaseCommand::parse(pdu) {
                Ok(m) => self.on_release(stream, m, out),
                Err(e) => malformed(stream, pdu, procedure, &e, out),
            },
            MessageKind::PduSessionResourceSetupRequest => {
                self.on_pdu_session_setup(stream, pdu, procedure, out)
            }
            MessageKind::PduSessionResourceReleaseCommand => {
                self.on_pdu_session_release(stream, pdu, procedure, out)
            }
            MessageKind::ErrorIndication => {
                let ei = ErrorIndication::parse(pdu).unwrap_or_default();
                match ei.ran_ue_ngap_id {
                    Some(ran) => {
                        let ue = self.by_ran_id.get(&ran).map(|u| u.key);
                        out.events.push(GnbUeEvent::ErrorIndication {
                            ue,
                            cause: ei.cause,
                        });
                    }
                    None if ei.amf_ue_ngap_id.is_some() => {
                        let ue = self
                            .by_ran_id
                            .values()
                            .find(|u| u.amf_ue_ngap_id == ei.amf_ue_ngap_id)
                            .map(|u| u.key);
                        out.events.push(GnbUeEvent::ErrorIndication {
                            ue,
                            cause: ei.cause,
                        });
                    }
                    None => out.events.push(GnbUeEvent::NotUeAssociated { procedure }),
                }
            }
            _ => out.events.push(GnbUeEvent::NotUeAssociated { procedure }),
        }
    }

    /// Finds the UE of a downlink message and learns (or checks) its AMF UE NGAP ID
    /// (§8.6.2.1: the first downlink message carries it).
    fn bind(
        &mut self,
        stream: u16,
        ran: RanUeNgapId,
        amf: u64,
        procedure: &'static str,
        out: &mut GnbUeOutput,
    ) -> Option<UeKey> {
        let Some(u) = self.by_ran_id.get_mut(&ran) else {
            unknown_ue(stream, Some(amf), ran, procedure, out);
            return None;
        };
        match u.amf_ue_ngap_id {
            None => u.amf_ue_ngap_id = Some(amf),
            Some(known) if known != amf => {
                // §10.6: an AMF UE NGAP ID that does not match the one stored.
                queue(
                    out,
                    u.stream,
                    ErrorIndication::for_ue(
                        Some(amf),
                        Some(ran),
                        RadioNetworkCause::InconsistentRemoteUENGAPID,
                    ),
                );
                out.events.push(GnbUeEvent::Malformed { procedure });
                return None;
            }
            Some(_) => {}
        }
        Some(u.key)
    }

    /// TS 38.413 §8.3.1.2: store the security key, answer with the response, and give
    /// the NAS-PDU to the UE.
    fn on_context_setup(
        &mut self,
        stream: u16,
        m: InitialContextSetupRequest,
        procedure: &'static str,
        out: &mut GnbUeOutput,
    ) {
        let Some(ue) = self.bind(stream, m.ran_ue_ngap_id, m.amf_ue_ngap_id, procedure, out) else {
            return;
        };
        let Some(u) = self.by_ran_id.get_mut(&m.ran_ue_ngap_id) else {
            return;
        };
        u.kgnb = Some(m.security_key.clone());
        let rsp = InitialContextSetupResponse {
            amf_ue_ngap_id: m.amf_ue_ngap_id,
            ran_ue_ngap_id: m.ran_ue_ngap_id,
        };
        match rsp.encode() {
            Ok(pdu) => out.transmit.push(N2Send {
                stream: u.stream,
                pdu,
            }),
            Err(e) => debug!(error = %e, "INITIAL CONTEXT SETUP RESPONSE does not encode"),
        }
        out.events.push(GnbUeEvent::ContextSetup {
            ue,
            kgnb: m.security_key,
        });
        if let Some(nas) = m.nas_pdu {
            out.events.push(GnbUeEvent::NasToUe { ue, nas });
        }
    }

    /// TS 38.413 §8.3.3.2: release the UE's N2 state and confirm.
    fn on_release(&mut self, stream: u16, m: UeContextReleaseCommand, out: &mut GnbUeOutput) {
        let ran = match m.ue_ngap_ids {
            UeNgapIds::Pair { ran, .. } => Some(ran),
            UeNgapIds::Amf(amf) => self
                .by_ran_id
                .iter()
                .find(|(_, u)| u.amf_ue_ngap_id == Some(amf))
                .map(|(id, _)| *id),
        };
        let amf = m.ue_ngap_ids.amf();
        let Some((ran, u)) = ran.and_then(|r| self.by_ran_id.remove(&r).map(|u| (r, u))) else {
            let ran = match m.ue_ngap_ids {
                UeNgapIds::Pair { ran, .. } => ran,
                UeNgapIds::Amf(_) => 0,
            };
            unknown_ue(stream, Some(amf), ran, "UEContextRelease", out);
            return;
        };
        self.by_key.remove(&u.key);
        self.sessions.drop_ue(u.key);
        match (UeContextReleaseComplete {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
        })
        .encode()
        {
            Ok(pdu) => out.transmit.push(N2Send {
                stream: u.stream,
                pdu,
            }),
            Err(e) => debug!(error = %e, "UE CONTEXT RELEASE COMPLETE does not encode"),
        }
        out.events.push(GnbUeEvent::Released {
            ue: u.key,
            cause: m.cause,
        });
    }
}

fn queue(out: &mut GnbUeOutput, stream: u16, ei: ErrorIndication) {
    match ei.encode() {
        Ok(pdu) => out.transmit.push(N2Send { stream, pdu }),
        Err(e) => debug!(error = %e, "ERROR INDICATION does not encode"),
    }
}

/// §10.6: a message for a UE-associated connection the gNB does not have.
fn unknown_ue(
    stream: u16,
    amf: Option<u64>,
    ran: RanUeNgapId,
    procedure: &'static str,
    out: &mut GnbUeOutput,
) {
    queue(
        out,
        stream,
        ErrorIndication::for_ue(amf, Some(ran), RadioNetworkCause::UnknownLocalUENGAPID),
    );
    out.events.push(GnbUeEvent::UnknownUe {
        procedure,
        ran_ue_ngap_id: Some(ran),
    });
}

/// §10.3: a message whose IEs cannot be read; the AMF hears of it by ERROR INDICATION.
fn malformed(
    stream: u16,
    pdu: &NgapPdu,
    procedure: &'static str,
    e: &ngap::ParseError,
    out: &mut GnbUeOutput,
) {
    debug!(error = %e, procedure, "UE-associated message not understood");
    let fault = e.fault();
    let cause = fault
        .as_ref()
        .map_or(ProtocolCause::Unspecified, |f| f.cause);
    let ies = fault.map(|f| f.ies).unwrap_or_default();
    let (amf, ran) = pdu.ue_ngap_ids();
    queue(
        out,
        stream,
        ErrorIndication {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            cause: Some(cause.into()),
            criticality_diagnostics: Some(pdu.diagnostics_for_error_indication(&ies)),
        },
    );
    out.events.push(GnbUeEvent::Malformed { procedure });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proto::ids::defaults;
    use proto::ngap::{DownlinkNasTransport, NasCause};

    use super::*;

    const AMF: u64 = 77;

    fn gnb() -> GnbUes {
        GnbUes::new(&GnbConfig::default(), 5, 3)
    }

    fn dl(ran: RanUeNgapId, amf: u64) -> Vec<u8> {
        DownlinkNasTransport {
            amf_ue_ngap_id: amf,
            ran_ue_ngap_id: ran,
            nas_pdu: vec![0x7e, 0x00, 0x5b, 0x01],
        }
        .encode()
        .unwrap()
    }

    #[test]
    fn ues_get_distinct_ids_and_streams_and_s_tmsi_goes_up() {
        let mut g = gnb();
        let s_tmsi = STmsi {
            amf_set: 1,
            amf_pointer: 0,
            tmsi: 0xabcd,
        };
        let mut ids = Vec::new();
        let mut streams = Vec::new();
        for ue in 0..6 {
            let send = g
                .initial_ue_message(ue, &[0x7e, 0, 0x41], (ue == 3).then_some(s_tmsi))
                .unwrap();
            let m = InitialUeMessage::parse(&ngap::decode(&send.pdu).unwrap()).unwrap();
            assert_eq!(Some(m.ran_ue_ngap_id), g.ran_ue_ngap_id(ue));
            assert_eq!(m.five_g_s_tmsi, (ue == 3).then_some(s_tmsi));
            assert!((1..=3).contains(&send.stream));
            ids.push(m.ran_ue_ngap_id);
            streams.push(send.stream);
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 6);
        streams.sort_unstable();
        streams.dedup();
        assert_eq!(streams, vec![1, 2, 3]);
        assert_eq!(
            g.initial_ue_message(0, &[0x7e], None),
            Err(GnbUeError::AlreadyConnected(0))
        );
        assert_eq!(g.len(), 6);
    }

    #[test]
    fn amf_id_is_learned_then_checked() {
        let mut g = gnb();
        g.initial_ue_message(9, &[0x7e, 0, 0x41], None).unwrap();
        let ran = g.ran_ue_ngap_id(9).unwrap();
        let out = g.handle_downlink(1, &dl(ran, AMF));
        assert!(matches!(out.events[0], GnbUeEvent::NasToUe { ue: 9, .. }));
        assert_eq!(g.amf_ue_ngap_id(9), Some(AMF));
        // Another AMF UE NGAP ID for the same RAN UE NGAP ID: inconsistent.
        let out = g.handle_downlink(1, &dl(ran, AMF + 1));
        assert!(matches!(out.events[0], GnbUeEvent::Malformed { .. }));
        let ei = ErrorIndication::parse(&ngap::decode(&out.transmit[0].pdu).unwrap()).unwrap();
        assert_eq!(
            ei.cause,
            Some(RadioNetworkCause::InconsistentRemoteUENGAPID.into())
        );
        assert_eq!(ei.ran_ue_ngap_id, Some(ran));
        // Unknown RAN UE NGAP ID.
        let out = g.handle_downlink(1, &dl(ran + 100, AMF));
        assert!(matches!(
            out.events[0],
            GnbUeEvent::UnknownUe {
                ran_ue_ngap_id: Some(r),
                ..
            } if r == ran + 100
        ));
        let ei = ErrorIndication::parse(&ngap::decode(&out.transmit[0].pdu).unwrap()).unwrap();
        assert_eq!(
            ei.cause,
            Some(RadioNetworkCause::UnknownLocalUENGAPID.into())
        );
    }

    #[test]
    fn release_by_amf_id_alone_and_error_indications() {
        let mut g = gnb();
        g.initial_ue_message(1, &[0x7e, 0, 0x41], None).unwrap();
        let ran = g.ran_ue_ngap_id(1).unwrap();
        g.handle_downlink(1, &dl(ran, AMF));

        let ei = ErrorIndication::for_ue(Some(AMF), Some(ran), NasCause::Unspecified)
            .encode()
            .unwrap();
        let out = g.handle_downlink(1, &ei);
        assert_eq!(
            out.events,
            vec![GnbUeEvent::ErrorIndication {
                ue: Some(1),
                cause: Some(NasCause::Unspecified.into())
            }]
        );
        assert!(out.transmit.is_empty(), "§10.5: never answered");
        let ei = ErrorIndication::new(ProtocolCause::Unspecified)
            .encode()
            .unwrap();
        assert!(matches!(
            g.handle_downlink(0, &ei).events[0],
            GnbUeEvent::NotUeAssociated { .. }
        ));

        let rel = UeContextReleaseCommand {
            ue_ngap_ids: UeNgapIds::Amf(AMF),
            cause: Cause::Nas(NasCause::NormalRelease),
        }
        .encode()
        .unwrap();
        let out = g.handle_downlink(1, &rel);
        assert!(matches!(out.events[0], GnbUeEvent::Released { ue: 1, .. }));
        let c =
            UeContextReleaseComplete::parse(&ngap::decode(&out.transmit[0].pdu).unwrap()).unwrap();
        assert_eq!((c.amf_ue_ngap_id, c.ran_ue_ngap_id), (AMF, ran));
        assert!(g.is_empty());
        // The key is free again.
        g.initial_ue_message(1, &[0x7e, 0, 0x41], None).unwrap();
        assert_ne!(g.ran_ue_ngap_id(1), Some(ran));
    }

    #[test]
    fn nr_cell_identity_carries_the_gnb_id() {
        let cfg = GnbConfig {
            gnb_id: 0x3f_ffff,
            ..GnbConfig::default()
        };
        let g = GnbUes::new(&cfg, 0x3fff, 1);
        let UserLocation::Nr { nr_cgi, tai } = g.user_location() else {
            panic!()
        };
        assert_eq!(nr_cgi.cell_id, (1 << 36) - 1);
        assert_eq!(tai, defaults::TAI);
    }

    #[test]
    fn a_ue_given_up_on_is_released_by_request_and_kept_until_the_command() {
        let mut g = gnb();
        // Not known to the AMF yet: nothing to ask, the state goes.
        g.initial_ue_message(4, &[0x7e, 0, 0x41], None).unwrap();
        assert_eq!(
            g.release_request(4, RadioNetworkCause::RadioConnectionWithUeLost),
            Ok(None)
        );
        assert!(g.is_empty());
        g.initial_ue_message(5, &[0x7e, 0, 0x41], None).unwrap();
        let ran = g.ran_ue_ngap_id(5).unwrap();
        g.handle_downlink(1, &dl(ran, AMF));
        let req = g
            .release_request(5, RadioNetworkCause::RadioConnectionWithUeLost)
            .unwrap()
            .unwrap();
        let m = UeContextReleaseRequest::parse(&ngap::decode(&req.pdu).unwrap()).unwrap();
        assert_eq!((m.amf_ue_ngap_id, m.ran_ue_ngap_id), (AMF, ran));
        assert_eq!(
            m.cause,
            Cause::RadioNetwork(RadioNetworkCause::RadioConnectionWithUeLost)
        );
        // Asked once; forgetting it now keeps it for the AMF's command.
        assert_eq!(
            g.release_request(5, RadioNetworkCause::RadioConnectionWithUeLost),
            Ok(None)
        );
        g.forget(5);
        assert_eq!(g.len(), 1);
        let rel = UeContextReleaseCommand {
            ue_ngap_ids: UeNgapIds::Pair { amf: AMF, ran },
            cause: Cause::RadioNetwork(RadioNetworkCause::RadioConnectionWithUeLost),
        }
        .encode()
        .unwrap();
        let out = g.handle_downlink(1, &rel);
        assert_eq!(out.transmit.len(), 1, "the command is answered");
        assert!(g.is_empty());
    }
}
