//! The emulated gNB's N2 side for non-UE-associated signalling: it sets up the NG
//! interface towards one AMF (TS 38.413 §8.7.1) and reads what the AMF answers.
//!
//! Sans-IO: [`Gnb::ng_setup_request`] gives the octets to send on stream 0 of the SCTP
//! association, [`Gnb::handle`] takes each NGAP message received, and
//! [`Gnb::poll_transmit`] gives the ERROR INDICATIONs the gNB owes the AMF. Timers
//! (retrying after Time To Wait) belong to the runtime, which reads them from
//! [`GnbState::Failed`].
//!
//! UE-associated signalling (INITIAL UE MESSAGE, NAS transport, context setup and
//! release) is [`GnbUes`]'s.
//!
//! AMF overload (TS 38.413 §8.7.6, §8.7.7): OVERLOAD START puts the gNB in overload
//! until OVERLOAD STOP; meanwhile [`Gnb::admit_new_ue`] sheds the share of new signalling
//! connections the AMF's Traffic Load Reduction Indication asks for.

use std::collections::VecDeque;

use proto::ids::{defaults, GlobalRanNodeId, GnbId, Guami, IdError, Plmn, Snssai, Tac};
use proto::ngap::{
    self, BroadcastPlmn, Cause, EncodeError, ErrorIndication, MessageKind, NgSetupFailure,
    NgSetupRequest, NgSetupResponse, NgapPdu, OverloadAction, OverloadStart, PagingDrx,
    PlmnSupport, ProtocolCause, SupportedTa, TimeToWait,
};
use thiserror::Error;
use tracing::{debug, info, warn};

#[cfg(test)]
mod tests;
mod ues;

pub use ues::{
    GnbSession, GnbUeError, GnbUeEvent, GnbUeOutput, GnbUes, N2Send, RanUeNgapId, UeKey,
};

/// What the emulated gNB announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GnbConfig {
    /// gNB ID.
    pub gnb_id: u32,
    /// Its length in bits, 22 to 32 (TS 38.413 §9.3.1.6).
    pub gnb_id_bits: u8,
    /// RAN Node Name (1 to 150 PrintableString characters).
    pub name: String,
    /// The PLMN it broadcasts, also that of its Global gNB ID.
    pub plmn: Plmn,
    /// The TA it serves.
    pub tac: Tac,
    /// The slices it supports in that TA.
    pub slices: Vec<Snssai>,
}

impl Default for GnbConfig {
    /// The project defaults: gNB 1 on 22 bits, "steer5g-gnb", 001-01, TAC 000001, SST 1.
    fn default() -> Self {
        Self {
            gnb_id: defaults::GNB_ID_VALUE,
            gnb_id_bits: defaults::GNB_ID_BITS,
            name: defaults::GNB_NAME.to_owned(),
            plmn: defaults::PLMN,
            tac: defaults::TAC,
            slices: vec![defaults::SNSSAI],
        }
    }
}

/// A configuration the gNB cannot announce.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum GnbError {
    /// The gNB ID does not fit its length, or the length is not 22..=32.
    #[error("invalid gNB ID: {0}")]
    Id(#[from] IdError),
    /// The NG SETUP REQUEST does not encode: an empty or non-printable name, no slice.
    #[error("NG SETUP REQUEST does not encode: {0}")]
    Encode(#[from] EncodeError),
}

/// Where NG Setup stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GnbState {
    /// Nothing sent yet.
    Idle,
    /// NG SETUP REQUEST sent, no answer yet.
    SetupSent,
    /// NG Setup succeeded: what the AMF announced.
    Ready {
        /// AMF Name.
        amf_name: String,
        /// Served GUAMI List.
        guamis: Vec<Guami>,
        /// Relative AMF Capacity.
        relative_capacity: u8,
        /// PLMN Support List.
        plmn_support: Vec<PlmnSupport>,
    },
    /// NG Setup failed.
    Failed {
        /// The cause the AMF gave, or the protocol error in its answer.
        cause: Cause,
        /// How long to wait before retrying (TS 38.413 §8.7.1.3), if the AMF said.
        time_to_wait: Option<TimeToWait>,
    },
}

/// What one received message meant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GnbEvent {
    /// NG SETUP RESPONSE: the gNB is [`GnbState::Ready`].
    SetupOk,
    /// NG SETUP FAILURE, or a response we could not read.
    SetupFailed {
        /// The cause.
        cause: Cause,
        /// Time To Wait, if any.
        time_to_wait: Option<TimeToWait>,
    },
    /// ERROR INDICATION from the AMF (TS 38.413 §8.7.4), logged; state unchanged.
    ErrorIndication {
        /// Its cause, if it had one.
        cause: Option<Cause>,
        /// AMF UE NGAP ID, when it concerns a UE.
        amf_ue_ngap_id: Option<u64>,
        /// RAN UE NGAP ID, when it concerns a UE.
        ran_ue_ngap_id: Option<u32>,
    },
    /// OVERLOAD START (TS 38.413 §8.7.6): the AMF is overloaded; new signalling is shed
    /// as [`Gnb::admit_new_ue`] says until OVERLOAD STOP.
    OverloadStart {
        /// The AMF Overload Response's action, if given.
        action: Option<OverloadAction>,
        /// The AMF Traffic Load Reduction Indication, percent, if given.
        traffic_load_reduction: Option<u8>,
    },
    /// OVERLOAD STOP (§8.7.7): normal operation again.
    OverloadStop,
    /// Not an NGAP PDU: an ERROR INDICATION was queued (§10.2).
    Undecodable,
    /// A message this gNB does not handle (yet), or not in this state.
    Unexpected {
        /// The procedure's name.
        procedure: &'static str,
    },
}

/// The emulated gNB's NG Setup state machine.
#[derive(Debug)]
pub struct Gnb {
    cfg: GnbConfig,
    request: Vec<u8>,
    state: GnbState,
    transmit: VecDeque<(u16, Vec<u8>)>,
    /// The OVERLOAD START in force.
    overload: Option<OverloadStart>,
    /// Admission credit while overloaded, in percent: each new UE adds the share to
    /// admit, and one is admitted per 100.
    credit: u32,
}

impl Gnb {
    /// A gNB of `cfg`, whose NG SETUP REQUEST is checked and encoded once here.
    pub fn new(cfg: GnbConfig) -> Result<Self, GnbError> {
        let gnb_id = GnbId::new(cfg.gnb_id, cfg.gnb_id_bits)?;
        let request = NgSetupRequest {
            global_ran_node_id: GlobalRanNodeId::gnb(cfg.plmn, gnb_id),
            ran_node_name: Some(cfg.name.clone()),
            supported_tas: vec![SupportedTa {
                tac: cfg.tac,
                broadcast_plmns: vec![BroadcastPlmn {
                    plmn: cfg.plmn,
                    slices: cfg.slices.clone(),
                }],
            }],
            default_paging_drx: Some(PagingDrx::V128),
        }
        .encode()?;
        Ok(Self {
            cfg,
            request,
            state: GnbState::Idle,
            transmit: VecDeque::new(),
            overload: None,
            credit: 0,
        })
    }

    /// The OVERLOAD START in force, if the AMF is overloaded.
    pub fn overload(&self) -> Option<&OverloadStart> {
        self.overload.as_ref()
    }

    /// Whether a new UE may open a signalling connection now (TS 38.413 §8.7.6.2): always
    /// outside overload; during it, (100 - reduction) of every 100 in turn, evenly spread, so
    /// that the traffic towards the AMF falls by the indicated percentage. Without a
    /// percentage every new UE is shed (the action alone says to reject signalling).
    pub fn admit_new_ue(&mut self) -> bool {
        let Some(o) = &self.overload else {
            return true;
        };
        let keep = 100 - u32::from(o.traffic_load_reduction.unwrap_or(100).min(100));
        self.credit += keep;
        if self.credit >= 100 {
            self.credit -= 100;
            true
        } else {
            false
        }
    }

    /// The configuration.
    pub fn config(&self) -> &GnbConfig {
        &self.cfg
    }

    /// The NG SETUP REQUEST to send on stream [`ngap::NON_UE_STREAM`]; the gNB now
    /// awaits the answer. Calling it again (a retry) sends the same request.
    pub fn ng_setup_request(&mut self) -> Vec<u8> {
        self.state = GnbState::SetupSent;
        self.request.clone()
    }

    /// Where NG Setup stands.
    pub fn state(&self) -> &GnbState {
        &self.state
    }

    /// The next NGAP message the gNB wants sent, with its stream.
    pub fn poll_transmit(&mut self) -> Option<(u16, Vec<u8>)> {
        self.transmit.pop_front()
    }

    /// One NGAP message received on `stream`. Never panics, whatever `pdu` holds.
    pub fn handle(&mut self, stream: u16, pdu: &[u8]) -> GnbEvent {
        let pdu = match ngap::decode(pdu) {
            Ok(pdu) => pdu,
            Err(e) => {
                // TS 38.413 §10.2.
                debug!(stream, error = %e, "undecodable NGAP message");
                self.queue_error_indication(
                    stream,
                    ErrorIndication::new(ProtocolCause::TransferSyntaxError),
                );
                return GnbEvent::Undecodable;
            }
        };
        match (pdu.kind(), &self.state) {
            (MessageKind::NgSetupResponse, GnbState::SetupSent) => self.on_response(stream, &pdu),
            (MessageKind::NgSetupFailure, GnbState::SetupSent) => self.on_failure(&pdu),
            (MessageKind::ErrorIndication, _) => on_error_indication(&pdu),
            (MessageKind::OverloadStart, GnbState::Ready { .. }) => {
                // Every IE is optional; one that does not decode counts as absent.
                let start = OverloadStart::parse(&pdu).unwrap_or_default();
                info!(action = ?start.response, reduction = ?start.traffic_load_reduction, "AMF overload start");
                self.overload = Some(start);
                self.credit = 0;
                GnbEvent::OverloadStart {
                    action: start.response,
                    traffic_load_reduction: start.traffic_load_reduction,
                }
            }
            (MessageKind::OverloadStop, GnbState::Ready { .. }) => {
                info!("AMF overload stop");
                self.overload = None;
                GnbEvent::OverloadStop
            }
            _ => {
                debug!(stream, procedure = pdu.procedure_name(), state = ?self.state, "unexpected message");
                GnbEvent::Unexpected {
                    procedure: pdu.procedure_name(),
                }
            }
        }
    }

    fn on_response(&mut self, stream: u16, pdu: &NgapPdu) -> GnbEvent {
        match NgSetupResponse::parse(pdu) {
            Ok(rsp) => {
                debug!(amf = %rsp.amf_name, guamis = rsp.served_guamis.len(), "NG Setup succeeded");
                self.state = GnbState::Ready {
                    amf_name: rsp.amf_name,
                    guamis: rsp.served_guamis,
                    relative_capacity: rsp.relative_amf_capacity,
                    plmn_support: rsp.plmn_support,
                };
                GnbEvent::SetupOk
            }
            Err(e) => {
                // §10.3.5: a response missing a mandatory IE of criticality reject ends
                // the procedure unsuccessfully; we tell the AMF with ERROR INDICATION.
                warn!(error = %e, "NG SETUP RESPONSE not understood");
                let fault = e.fault();
                let cause = fault
                    .as_ref()
                    .map_or(ProtocolCause::Unspecified, |f| f.cause);
                let ies = fault.map(|f| f.ies).unwrap_or_default();
                self.queue_error_indication(
                    stream,
                    ErrorIndication {
                        criticality_diagnostics: Some(pdu.diagnostics_for_error_indication(&ies)),
                        ..ErrorIndication::new(cause)
                    },
                );
                self.fail(Cause::Protocol(cause), None)
            }
        }
    }

    fn on_failure(&mut self, pdu: &NgapPdu) -> GnbEvent {
        // Every IE of NG SETUP FAILURE is of criticality ignore, so parsing only fails
        // for a message that is no IE container.
        let (cause, time_to_wait) = match NgSetupFailure::parse(pdu) {
            Ok(f) => (f.cause, f.time_to_wait),
            Err(_) => (Cause::Protocol(ProtocolCause::TransferSyntaxError), None),
        };
        info!(cause = %cause, wait = ?time_to_wait.map(TimeToWait::seconds), "NG Setup failed");
        self.fail(cause, time_to_wait)
    }

    fn fail(&mut self, cause: Cause, time_to_wait: Option<TimeToWait>) -> GnbEvent {
        self.state = GnbState::Failed {
            cause,
            time_to_wait,
        };
        GnbEvent::SetupFailed {
            cause,
            time_to_wait,
        }
    }

    fn queue_error_indication(&mut self, stream: u16, ei: ErrorIndication) {
        match ei.encode() {
            Ok(bytes) => self.transmit.push_back((stream, bytes)),
            Err(e) => warn!(error = %e, "ERROR INDICATION does not encode"),
        }
    }
}

/// §8.7.4: ERROR INDICATION only reports an error: logged, nothing else; §10.5: never
/// answered.
fn on_error_indication(pdu: &NgapPdu) -> GnbEvent {
    let ei = ErrorIndication::parse(pdu).unwrap_or_default();
    warn!(cause = ?ei.cause.map(|c| c.to_string()), "ERROR INDICATION received");
    GnbEvent::ErrorIndication {
        cause: ei.cause,
        amf_ue_ngap_id: ei.amf_ue_ngap_id,
        ran_ue_ngap_id: ei.ran_ue_ngap_id,
    }
}
