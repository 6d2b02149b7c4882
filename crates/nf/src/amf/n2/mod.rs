//! The AMF's side of N2 for non-UE-associated signalling: NG Setup (TS 38.413 §8.7.1),
//! Error Indication (§8.7.4), AMF overload start and stop (§8.7.6, §8.7.7) and the error
//! handling of clause 10.
//!
//! Sans-IO: the runtime hands in each NGAP message received on an SCTP association
//! (identified by the transport's `u32` association id, with its stream id) and sends
//! what [`AmfN2::handle`] appends to its output. No sockets, clocks or threads here, so
//! the same code runs behind the user-space SCTP stack, in tests and under a fuzzer.

use std::collections::HashMap;

use proto::ids::{defaults, GlobalRanNodeId, Guami, Plmn, Snssai, Tac};
use proto::ngap::{
    self, Cause, CriticalityDiagnostics, ErrorIndication, IeDiagnostic, MessageKind, MiscCause,
    NgSetupFailure, NgSetupRequest, NgSetupResponse, NgapPdu, PagingDrx, PlmnSupport,
    ProtocolCause, ProtocolFault, SupportedTa,
};
use tracing::{debug, info, warn};

use crate::amf::overload::{GnbOverload, OverloadSignal, OverloadedWorkers};

#[cfg(test)]
mod tests;

/// What the AMF announces in NG Setup and which gNBs it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmfN2Config {
    /// AMF Name (1 to 150 PrintableString characters).
    pub amf_name: String,
    /// The GUAMIs this AMF serves.
    pub served_guamis: Vec<Guami>,
    /// The PLMNs this AMF serves, each with its S-NSSAIs.
    pub plmn_support: Vec<(Plmn, Vec<Snssai>)>,
    /// The TACs served, in every PLMN of `plmn_support`.
    pub tacs: Vec<Tac>,
    /// Relative AMF Capacity (TS 38.413 §9.2.6.2): this AMF's weight in its set.
    pub relative_capacity: u8,
}

impl Default for AmfN2Config {
    /// The project defaults: "steer5g-amf", GUAMI 001-01/02/001/00, PLMN 001-01 with
    /// SST 1, TAC 000001, capacity 255.
    fn default() -> Self {
        Self {
            amf_name: defaults::AMF_NAME.to_owned(),
            served_guamis: vec![defaults::GUAMI],
            plmn_support: vec![(defaults::PLMN, vec![defaults::SNSSAI])],
            tacs: vec![defaults::TAC],
            relative_capacity: defaults::RELATIVE_AMF_CAPACITY,
        }
    }
}

/// Where an association stands in NG Setup.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetupState {
    /// The association is up and no NG Setup has succeeded on it yet.
    Pending,
    /// NG Setup succeeded: the gNB's configuration below is current.
    Ready,
    /// The last NG Setup on the association failed with this cause.
    Failed {
        /// The cause sent in NG SETUP FAILURE.
        cause: Cause,
    },
}

/// What the AMF keeps of one gNB (one SCTP association).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GnbContext {
    /// The association the gNB speaks on.
    pub assoc: u32,
    /// Where NG Setup stands.
    pub state: SetupState,
    /// Global RAN Node ID, once an NG SETUP REQUEST was read.
    pub global_ran_node_id: Option<GlobalRanNodeId>,
    /// RAN Node Name, if the gNB sent one.
    pub name: Option<String>,
    /// The TAs the gNB supports, as its last accepted NG SETUP REQUEST listed them.
    pub supported_tas: Vec<SupportedTa>,
    /// Default Paging DRX of the last accepted request.
    pub default_paging_drx: Option<PagingDrx>,
}

impl GnbContext {
    fn new(assoc: u32) -> Self {
        Self {
            assoc,
            state: SetupState::Pending,
            global_ran_node_id: None,
            name: None,
            supported_tas: Vec::new(),
            default_paging_drx: None,
        }
    }
}

/// Why NG Setups failed, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NgSetupFailureStats {
    /// None of the gNB's broadcast PLMNs is ours.
    pub unknown_plmn: u64,
    /// A PLMN is ours, but none of the gNB's TAs in our PLMNs is one we serve.
    pub no_common_ta: u64,
    /// The request had an abstract or transfer syntax error (TS 38.413 §10.2, §10.3).
    pub protocol_error: u64,
    /// The request decoded but a value was invalid (§10.4).
    pub semantic_error: u64,
    /// Our own NG SETUP RESPONSE did not encode: a configuration error.
    pub misconfigured: u64,
}

/// Counters of the N2 non-UE-associated signalling.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct N2Stats {
    /// NG SETUP RESPONSEs sent.
    pub ng_setup_ok: u64,
    /// NG SETUP FAILUREs sent, by reason.
    pub ng_setup_failed: NgSetupFailureStats,
    /// ERROR INDICATIONs received.
    pub error_indications_received: u64,
    /// ERROR INDICATIONs sent.
    pub error_indications_sent: u64,
    /// Messages that were not NGAP PDUs, or whose message was no IE container (§10.2).
    pub undecodable: u64,
    /// Decodable messages out of place: before NG Setup, not handled by this AMF, or
    /// otherwise not compatible with the receiver state (§10.4).
    pub unexpected: u64,
    /// Messages with abstract syntax errors other than in an NG SETUP REQUEST (§10.3).
    pub abstract_syntax_errors: u64,
    /// Messages silently ignored: unknown procedures of criticality ignore
    /// (§10.3.4.1), faulty ERROR INDICATIONs (§10.5).
    pub ignored: u64,
    /// OVERLOAD STARTs sent (§8.7.6), one per gNB.
    pub overload_starts_sent: u64,
    /// OVERLOAD STOPs sent (§8.7.7), one per gNB.
    pub overload_stops_sent: u64,
}

impl NgSetupFailureStats {
    /// All failures, whatever the reason.
    pub fn total(&self) -> u64 {
        self.unknown_plmn
            + self.no_common_ta
            + self.protocol_error
            + self.semantic_error
            + self.misconfigured
    }
}

impl N2Stats {
    /// Adds another worker's counters to these.
    pub fn merge(&mut self, o: &N2Stats) {
        self.ng_setup_ok += o.ng_setup_ok;
        let f = &mut self.ng_setup_failed;
        f.unknown_plmn += o.ng_setup_failed.unknown_plmn;
        f.no_common_ta += o.ng_setup_failed.no_common_ta;
        f.protocol_error += o.ng_setup_failed.protocol_error;
        f.semantic_error += o.ng_setup_failed.semantic_error;
        f.misconfigured += o.ng_setup_failed.misconfigured;
        self.error_indications_received += o.error_indications_received;
        self.error_indications_sent += o.error_indications_sent;
        self.undecodable += o.undecodable;
        self.unexpected += o.unexpected;
        self.abstract_syntax_errors += o.abstract_syntax_errors;
        self.ignored += o.ignored;
        self.overload_starts_sent += o.overload_starts_sent;
        self.overload_stops_sent += o.overload_stops_sent;
    }
}

impl std::fmt::Display for N2Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fail = &self.ng_setup_failed;
        write!(
            f,
            "NG Setup: {} accepted, {} rejected ({} unknown PLMN, {} no common TA, {} protocol error, \
             {} semantic error, {} misconfigured); Error Indication: {} sent, {} received; \
             {} undecodable, {} unexpected, {} ignored",
            self.ng_setup_ok,
            fail.total(),
            fail.unknown_plmn,
            fail.no_common_ta,
            fail.protocol_error,
            fail.semantic_error,
            fail.misconfigured,
            self.error_indications_sent,
            self.error_indications_received,
            self.undecodable,
            self.unexpected,
            self.ignored,
        )
    }
}

/// The TAs of an NG SETUP REQUEST as `TAC (PLMN PLMN ...)` items: `000001 (001-01), 000002
/// (001-01 999-70)`.
fn offered_tas(tas: &[proto::ngap::SupportedTa]) -> String {
    let items: Vec<String> = tas
        .iter()
        .map(|ta| {
            let plmns: Vec<String> = ta
                .broadcast_plmns
                .iter()
                .map(|b| b.plmn.to_string())
                .collect();
            format!("{} ({})", ta.tac, plmns.join(" "))
        })
        .collect();
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// What this AMF serves, in the same words: `TACs 000001 000002 in PLMNs 001-01`.
fn served_tas(cfg: &AmfN2Config) -> String {
    let tacs: Vec<String> = cfg.tacs.iter().map(ToString::to_string).collect();
    let plmns: Vec<String> = cfg
        .plmn_support
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    format!("TACs {} in PLMNs {}", tacs.join(" "), plmns.join(" "))
}

/// What the runtime does after [`AmfN2::handle`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum N2Output {
    /// Send one NGAP PDU (SCTP PPID 60) on an association and stream.
    Send {
        /// The association.
        assoc: u32,
        /// The SCTP stream.
        stream: u16,
        /// The encoded NGAP PDU.
        pdu: Vec<u8>,
    },
}

/// The AMF's N2 non-UE-associated state: one [`GnbContext`] per SCTP association.
#[derive(Debug)]
pub struct AmfN2 {
    cfg: AmfN2Config,
    /// The NG SETUP RESPONSE is the same for every gNB, so it is encoded once; an
    /// error here is a configuration error, answered per request with a failure.
    response: Result<Vec<u8>, ngap::EncodeError>,
    gnbs: HashMap<u32, GnbContext>,
    /// Contexts of `gnbs` in [`SetupState::Ready`]: kept at each change of state, so that a
    /// worker's per-turn gauge reads a number instead of scanning its gNBs.
    ready: usize,
    stats: N2Stats,
    /// The AMF workers in overload.
    overload: OverloadedWorkers,
}

impl AmfN2 {
    /// An AMF with no association yet.
    pub fn new(cfg: AmfN2Config) -> Self {
        let response = response_of(&cfg, None).encode();
        if let Err(e) = &response {
            warn!(error = %e, "NG SETUP RESPONSE does not encode; every NG Setup will fail");
        }
        Self {
            cfg,
            response,
            gnbs: HashMap::new(),
            ready: 0,
            stats: N2Stats::default(),
            overload: OverloadedWorkers::default(),
        }
    }

    /// A worker of the AMF entered or left overload. The first to enter makes this side
    /// send OVERLOAD START to each of its gNBs (TS 38.413 §8.7.6.2), the last to leave
    /// OVERLOAD STOP (§8.7.7.2); gNBs that complete NG Setup meanwhile get OVERLOAD START
    /// after the NG SETUP RESPONSE.
    pub fn overload(&mut self, signal: OverloadSignal, out: &mut Vec<N2Output>) {
        let Some(change) = self.overload.signal(signal) else {
            return;
        };
        let pdu = match change {
            GnbOverload::Start(m) => m.encode(),
            GnbOverload::Stop => ngap::OverloadStop.encode(),
        };
        let pdu = match pdu {
            Ok(p) => p,
            Err(e) => return warn!(error = %e, "overload message does not encode"),
        };
        let mut ready: Vec<u32> = self
            .gnbs
            .values()
            .filter(|g| g.state == SetupState::Ready)
            .map(|g| g.assoc)
            .collect();
        ready.sort_unstable();
        info!(gnbs = ready.len(), ?change, "AMF overload");
        for assoc in ready {
            match change {
                GnbOverload::Start(_) => self.stats.overload_starts_sent += 1,
                GnbOverload::Stop => self.stats.overload_stops_sent += 1,
            }
            out.push(N2Output::Send {
                assoc,
                stream: ngap::NON_UE_STREAM,
                pdu: pdu.clone(),
            });
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AmfN2Config {
        &self.cfg
    }

    /// An SCTP association came up: it awaits NG Setup (TS 38.413 §8.7.1.1: NG Setup is
    /// the first procedure on a new TNL association).
    pub fn association_up(&mut self, assoc: u32) {
        debug!(assoc, "association up");
        if let Some(old) = self.gnbs.insert(assoc, GnbContext::new(assoc)) {
            self.unready(&old);
        }
    }

    /// A context leaving the map, or the Ready state, counts no more.
    fn unready(&mut self, ctx: &GnbContext) {
        if ctx.state == SetupState::Ready {
            self.ready = self.ready.saturating_sub(1);
        }
    }

    /// An SCTP association went down: its gNB context goes with it.
    pub fn association_down(&mut self, assoc: u32) {
        if let Some(ctx) = self.gnbs.remove(&assoc) {
            debug!(assoc, gnb = ?ctx.global_ran_node_id, "association down, gNB context removed");
            self.unready(&ctx);
        }
    }

    /// The gNBs whose NG Setup succeeded and whose association is up.
    pub fn ready_gnbs(&self) -> usize {
        self.ready
    }

    /// The gNB contexts, one per association, in no particular order.
    pub fn gnbs(&self) -> impl Iterator<Item = &GnbContext> {
        self.gnbs.values()
    }

    /// The gNB context of one association.
    pub fn gnb(&self, assoc: u32) -> Option<&GnbContext> {
        self.gnbs.get(&assoc)
    }

    /// Whether NG Setup has succeeded on `assoc`: a runtime that routes UE-associated
    /// messages to other code checks this first, since [`AmfN2::handle`] answers
    /// every message it does not run with ERROR INDICATION.
    pub fn is_ready(&self, assoc: u32) -> bool {
        self.gnbs
            .get(&assoc)
            .is_some_and(|g| g.state == SetupState::Ready)
    }

    /// The counters.
    pub fn stats(&self) -> &N2Stats {
        &self.stats
    }

    /// One NGAP message received on `assoc`/`stream`. Appends what to send to `out`.
    /// Never panics, whatever `pdu` holds.
    pub fn handle(&mut self, assoc: u32, stream: u16, pdu: &[u8], out: &mut Vec<N2Output>) {
        if !self.gnbs.contains_key(&assoc) {
            // The transport reported data before the association; take it as up.
            self.association_up(assoc);
        }
        let pdu = match ngap::decode(pdu) {
            Ok(pdu) => pdu,
            Err(e) => {
                // TS 38.413 §10.2: a message that does not decode is a transfer syntax
                // error, answered by ERROR INDICATION. Nothing identifies the
                // procedure, so there are no Criticality Diagnostics.
                self.stats.undecodable += 1;
                debug!(assoc, stream, error = %e, "undecodable NGAP message");
                let ei = ErrorIndication::new(ProtocolCause::TransferSyntaxError);
                self.send_error_indication(assoc, stream, &ei, out);
                return;
            }
        };
        if pdu.kind() == MessageKind::ErrorIndication {
            self.on_error_indication(assoc, &pdu);
            return;
        }
        let fault = match pdu.check() {
            Ok(fault) => fault,
            Err(e) => {
                // §10.2 again: the envelope decoded but its message is no IE container.
                self.stats.undecodable += 1;
                debug!(assoc, stream, error = %e, "NGAP message does not decode");
                let ei = ErrorIndication {
                    criticality_diagnostics: Some(pdu.diagnostics_for_error_indication(&[])),
                    ..ErrorIndication::new(ProtocolCause::TransferSyntaxError)
                };
                self.send_error_indication(assoc, stream, &ei, out);
                return;
            }
        };
        match pdu.kind() {
            MessageKind::NgSetupRequest => {
                self.on_ng_setup_request(assoc, stream, &pdu, fault, out)
            }
            // §10.3.4.1: a procedure code the receiver does not comprehend goes by the
            // PDU's criticality: ignored, or rejected / ignored with ERROR INDICATION.
            MessageKind::UnknownProcedure => match fault {
                None => {
                    self.stats.ignored += 1;
                    debug!(
                        assoc,
                        code = pdu.procedure_code(),
                        "unknown procedure ignored"
                    );
                }
                Some(fault) => self.on_abstract_syntax_error(assoc, stream, &pdu, &fault, out),
            },
            _ => match fault {
                // §10.3.4.2, §10.3.5, §10.3.6 for a message with no failure message of
                // ours: ERROR INDICATION with the protocol cause and the IEs at fault.
                Some(fault) if fault.rejects() => {
                    self.on_abstract_syntax_error(assoc, stream, &pdu, &fault, out)
                }
                _ => self.on_unexpected(assoc, stream, &pdu, out),
            },
        }
    }

    fn on_abstract_syntax_error(
        &mut self,
        assoc: u32,
        stream: u16,
        pdu: &NgapPdu,
        fault: &ProtocolFault,
        out: &mut Vec<N2Output>,
    ) {
        self.stats.abstract_syntax_errors += 1;
        debug!(assoc, code = pdu.procedure_code(), fault = %fault.description, "abstract syntax error");
        let ei = self.error_indication_for(pdu, fault.cause, &fault.ies);
        self.send_error_indication(assoc, stream, &ei, out);
    }

    /// §10.4: a message that is well formed but that this AMF cannot take now: before
    /// NG Setup, a procedure it does not run, or an outcome it never asked for.
    fn on_unexpected(&mut self, assoc: u32, stream: u16, pdu: &NgapPdu, out: &mut Vec<N2Output>) {
        self.stats.unexpected += 1;
        let ready = self.is_ready(assoc);
        debug!(
            assoc,
            stream,
            procedure = pdu.procedure_name(),
            direction = ?pdu.direction(),
            ready,
            "message not compatible with receiver state"
        );
        let ei = self.error_indication_for(
            pdu,
            ProtocolCause::MessageNotCompatibleWithReceiverState,
            &[],
        );
        self.send_error_indication(assoc, stream, &ei, out);
    }

    /// The ERROR INDICATION answering `pdu`: the UE NGAP IDs it carries, when it is
    /// UE-associated (§8.7.4.2), the cause, and diagnostics naming its procedure.
    fn error_indication_for(
        &self,
        pdu: &NgapPdu,
        cause: ProtocolCause,
        ies: &[IeDiagnostic],
    ) -> ErrorIndication {
        let (amf_ue_ngap_id, ran_ue_ngap_id) = pdu.ue_ngap_ids();
        ErrorIndication {
            amf_ue_ngap_id,
            ran_ue_ngap_id,
            cause: Some(Cause::Protocol(cause)),
            criticality_diagnostics: Some(pdu.diagnostics_for_error_indication(ies)),
        }
    }

    fn send_error_indication(
        &mut self,
        assoc: u32,
        stream: u16,
        ei: &ErrorIndication,
        out: &mut Vec<N2Output>,
    ) {
        match ei.encode() {
            Ok(pdu) => {
                self.stats.error_indications_sent += 1;
                out.push(N2Output::Send { assoc, stream, pdu });
            }
            // Only an AMF UE NGAP ID over 40 bits could fail here, and it came from a
            // decoded PDU, so this is a bug worth a log, not a panic.
            Err(e) => warn!(assoc, error = %e, "ERROR INDICATION does not encode"),
        }
    }

    /// §8.7.4: ERROR INDICATION only reports an error, it asks the receiver for nothing,
    /// so the AMF logs and counts it and keeps the association;
    /// §10.5: errors in it are handled locally, never answered.
    fn on_error_indication(&mut self, assoc: u32, pdu: &NgapPdu) {
        self.stats.error_indications_received += 1;
        match ErrorIndication::parse(pdu) {
            Ok(ei) => warn!(
                assoc,
                cause = ?ei.cause.map(|c| c.to_string()),
                amf_ue_ngap_id = ?ei.amf_ue_ngap_id,
                ran_ue_ngap_id = ?ei.ran_ue_ngap_id,
                diagnostics = ?ei.criticality_diagnostics,
                "ERROR INDICATION received"
            ),
            Err(e) => {
                self.stats.ignored += 1;
                warn!(assoc, error = %e, "faulty ERROR INDICATION received");
            }
        }
    }

    fn on_ng_setup_request(
        &mut self,
        assoc: u32,
        stream: u16,
        pdu: &NgapPdu,
        fault: Option<ProtocolFault>,
        out: &mut Vec<N2Output>,
    ) {
        // §10.3.4.2, §10.3.5, §10.3.6: NG Setup has a failure message, so an IE at fault
        // that makes us reject is reported in NG SETUP FAILURE with the protocol cause
        // and the Criticality Diagnostics of the response.
        let notify = match fault {
            Some(f) if f.rejects() => {
                debug!(assoc, fault = %f.description, "NG SETUP REQUEST rejected");
                self.stats.ng_setup_failed.protocol_error += 1;
                let failure = NgSetupFailure {
                    criticality_diagnostics: Some(pdu.diagnostics_for_response(&f.ies)),
                    ..NgSetupFailure::new(f.cause)
                };
                self.fail_setup(assoc, stream, failure, out);
                return;
            }
            // §10.3.4.2 "ignore IE and notify sender": go on, and list the IEs in the
            // response's Criticality Diagnostics.
            Some(f) => Some(pdu.diagnostics_for_response(&f.ies)),
            None => None,
        };
        let req = match NgSetupRequest::parse(pdu) {
            Ok(req) => req,
            Err(e) => {
                let fault = e.fault();
                let cause = fault
                    .as_ref()
                    .map_or(ProtocolCause::Unspecified, |f| f.cause);
                if cause == ProtocolCause::SemanticError {
                    self.stats.ng_setup_failed.semantic_error += 1;
                } else {
                    self.stats.ng_setup_failed.protocol_error += 1;
                }
                debug!(assoc, error = %e, "NG SETUP REQUEST does not parse");
                let failure = NgSetupFailure {
                    criticality_diagnostics: fault.map(|f| pdu.diagnostics_for_response(&f.ies)),
                    ..NgSetupFailure::new(cause)
                };
                self.fail_setup(assoc, stream, failure, out);
                return;
            }
        };

        let ours = |p: &Plmn| self.cfg.plmn_support.iter().any(|(q, _)| q == p);
        let plmn_known = req
            .supported_tas
            .iter()
            .flat_map(|ta| ta.broadcast_plmns.iter())
            .any(|b| ours(&b.plmn));
        let ta_served = req.supported_tas.iter().any(|ta| {
            self.cfg.tacs.contains(&ta.tac) && ta.broadcast_plmns.iter().any(|b| ours(&b.plmn))
        });
        let failed = &mut self.stats.ng_setup_failed;
        let refusal = if !plmn_known {
            // §8.7.1.4: an AMF that identifies none of the PLMNs of the request rejects
            // it; §9.3.1.2 names the cause "Unknown PLMN or SNPN".
            Some((&mut failed.unknown_plmn, "no PLMN of ours"))
        } else if !ta_served {
            // TS 38.413 has no cause for "none of your TAs is served here". The TAIs
            // the gNB broadcasts in our PLMNs identify nothing we serve, so like
            // Open5GS ("Cannot find Served TAI") we answer misc unknown-PLMN-or-SNPN,
            // the cause a gNB operator reads as "check the PLMN/TAC configuration";
            // the counters keep the two cases apart.
            Some((&mut failed.no_common_ta, "no TA we serve"))
        } else {
            None
        };
        if let Some((count, why)) = refusal {
            // What the gNB offered beside what this AMF serves: the operator's next question.
            info!(
                assoc,
                gnb = %req.global_ran_node_id,
                offered = %offered_tas(&req.supported_tas),
                served = %served_tas(&self.cfg),
                "NG Setup rejected: {why}"
            );
            *count += 1;
            self.fail_setup(
                assoc,
                stream,
                NgSetupFailure::new(MiscCause::UnknownPlmnOrSnpn),
                out,
            );
            return;
        }

        let response = match notify {
            // Rare: the request had IEs to notify about, so this response is its own.
            Some(d) => response_of(&self.cfg, Some(d)).encode(),
            None => self.response.clone(),
        };
        let response = match response {
            Ok(bytes) => bytes,
            Err(e) => {
                warn!(assoc, error = %e, "NG SETUP RESPONSE does not encode; check the AMF configuration");
                self.stats.ng_setup_failed.misconfigured += 1;
                self.fail_setup(
                    assoc,
                    stream,
                    NgSetupFailure::new(MiscCause::OmIntervention),
                    out,
                );
                return;
            }
        };
        // §8.7.1.1: NG Setup erases the existing application level configuration data
        // of the association and replaces it by the one received, so a repeated NG
        // Setup overwrites the context.
        info!(
            assoc,
            gnb = %req.global_ran_node_id,
            name = ?req.ran_node_name,
            tas = req.supported_tas.len(),
            "NG Setup accepted"
        );
        let ctx = self
            .gnbs
            .entry(assoc)
            .or_insert_with(|| GnbContext::new(assoc));
        if ctx.state != SetupState::Ready {
            self.ready += 1;
        }
        *ctx = GnbContext {
            assoc,
            state: SetupState::Ready,
            global_ran_node_id: Some(req.global_ran_node_id),
            name: req.ran_node_name,
            supported_tas: req.supported_tas,
            default_paging_drx: req.default_paging_drx,
        };
        self.stats.ng_setup_ok += 1;
        out.push(N2Output::Send {
            assoc,
            stream,
            pdu: response,
        });
        // §8.7.6: the AMF is overloaded now; the new gNB is told like the others.
        if let Some(start) = self.overload.current() {
            match start.encode() {
                Ok(pdu) => {
                    self.stats.overload_starts_sent += 1;
                    out.push(N2Output::Send { assoc, stream, pdu });
                }
                Err(e) => warn!(assoc, error = %e, "OVERLOAD START does not encode"),
            }
        }
    }

    /// Sends NG SETUP FAILURE (§8.7.1.3). The association's previous configuration, if
    /// NG Setup had succeeded before, stays: only a successful NG Setup erases and
    /// replaces it (§8.7.1.1).
    fn fail_setup(
        &mut self,
        assoc: u32,
        stream: u16,
        failure: NgSetupFailure,
        out: &mut Vec<N2Output>,
    ) {
        let cause = failure.cause;
        match failure.encode() {
            Ok(pdu) => out.push(N2Output::Send { assoc, stream, pdu }),
            Err(e) => {
                warn!(assoc, error = %e, "NG SETUP FAILURE does not encode");
                return;
            }
        }
        if let Some(ctx) = self.gnbs.get_mut(&assoc) {
            if ctx.state != SetupState::Ready {
                ctx.state = SetupState::Failed { cause };
            }
        }
    }
}

fn response_of(cfg: &AmfN2Config, diagnostics: Option<CriticalityDiagnostics>) -> NgSetupResponse {
    NgSetupResponse {
        amf_name: cfg.amf_name.clone(),
        served_guamis: cfg.served_guamis.clone(),
        relative_amf_capacity: cfg.relative_capacity,
        plmn_support: cfg
            .plmn_support
            .iter()
            .map(|(plmn, slices)| PlmnSupport {
                plmn: *plmn,
                slices: slices.clone(),
            })
            .collect(),
        criticality_diagnostics: diagnostics,
    }
}
