//! The SMF's N4 client (TS 29.244): its PFCP requests to the UPF, the answers to them, and
//! what it does when an answer is missing, does not decode, or cannot be used.
//!
//! Every request ends exactly once: with a response of its type (§7.2.2.2, matched as the
//! runtime's retransmission matches it, [`pfcp::txn::is_response_to`]), or when the runtime
//! gives up after N1 retransmissions ([`Smf::pfcp_timeout`]). A response whose header matches
//! but whose body does not decode ends the retransmission all the same, so it ends the
//! procedure too: as a refusal with the PFCP cause its decode error maps to (§7.6).
//!
//! An establishment abandoned after the UPF accepted it (its answer unusable, or the SM
//! context released meanwhile) is undone: a Session Deletion Request for the UP SEID,
//! retransmitted like any request, whose own failure is only logged and counted. The SM
//! context stays, `Releasing`, until that deletion ends, so that the UE's address is not
//! handed out again while the UPF still routes it. An establishment given up on unanswered
//! is remembered (the last [`GIVEN_UP_KEPT`]): if its answer comes after all and accepts
//! the session, that session is undone too, once.

use std::net::Ipv4Addr;

use http::StatusCode;
use pfcp::ie::{CreatedPdr, FTeid};
use pfcp::message::{SessionEstablishmentResponse, SessionReportRequest, SessionResponse};
use pfcp::requests::{self, UL_PDR};
use pfcp::salvage::salvage;
use pfcp::txn::{is_response_to, VERSION_NOT_SUPPORTED_RESPONSE};
use pfcp::{Cause as PfcpCause, DecodeError, Message, MessageType, PfcpMessage};
use sbi::model::{RefToBinaryData, SmContextUpdatedData};
use sbi::multipart::{self, Part};
use sbi::{ProblemDetails, SbiResponse};
use tracing::{debug, warn};

use super::nas::{self, GsmCause};
use super::{json_bytes, n2, problem, Action, Refusal, SmContext, SmState, Smf, N1_ID, N2_ID};
use crate::state::ContextMap;

/// How many establishments given up on unanswered are remembered for a late answer.
pub(super) const GIVEN_UP_KEPT: usize = 4096;

/// What a PFCP request of the SMF is for.
#[derive(Debug)]
pub(super) enum PfcpPending {
    Association,
    Establish {
        req_id: u64,
        sm_ref: u64,
    },
    Modify {
        req_id: u64,
        sm_ref: u64,
    },
    Delete {
        sm_ref: u64,
        /// The requests answered when it ends.
        waiters: Vec<Waiter>,
        /// What it leads to once it ends.
        then: Then,
    },
}

impl PfcpPending {
    /// The SM context the request is for.
    fn sm_ref(&self) -> Option<u64> {
        match self {
            PfcpPending::Association => None,
            PfcpPending::Establish { sm_ref, .. }
            | PfcpPending::Modify { sm_ref, .. }
            | PfcpPending::Delete { sm_ref, .. } => Some(*sm_ref),
        }
    }
}

/// What follows a PFCP Session Deletion once it ends, answered or given up on (besides
/// answering its [`Waiter`]s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Then {
    /// Nothing more: ReleaseSMContext, a UE-requested release, a session the AMF could not
    /// be told of.
    Nothing,
    /// It undoes an abandoned establishment: counted apart (`abandoned_*`), not as a
    /// release, and nobody waits for it.
    Undo,
    /// The SMF releases the session on its own (TS 23.502 §4.3.4.2 step 1e): the N1 PDU
    /// SESSION RELEASE COMMAND and the N2 Release Command Transfer, with this NGAP cause, go
    /// to the AMF in an N1N2MessageTransfer. A release the AMF asks for meanwhile joins the
    /// deletion and supersedes this: its answer tells the AMF, and no command follows.
    Network(proto::ngap::Cause),
}

impl PfcpPending {
    fn request_type(&self) -> MessageType {
        match self {
            PfcpPending::Association => MessageType::AssociationSetupRequest,
            PfcpPending::Establish { .. } => MessageType::SessionEstablishmentRequest,
            PfcpPending::Modify { .. } => MessageType::SessionModificationRequest,
            PfcpPending::Delete { .. } => MessageType::SessionDeletionRequest,
        }
    }
}

/// A request answered when the deletion of its SM context ends: ReleaseSMContext (204), or
/// a UE-requested release (`ue_release` is its PTI: 200 with the release commands).
#[derive(Debug, Clone, Copy)]
pub(super) struct Waiter {
    pub(super) req_id: u64,
    pub(super) ue_release: Option<u8>,
}

/// What an abandoned establishment left at the UPF, as far as its answer tells.
#[derive(Debug, Clone, Copy)]
pub(super) enum Held {
    /// Nothing: refused, or never sent (or no answer yet: a late one is undone then).
    Nothing,
    /// The session of this UP SEID.
    Session(u64),
    /// A session the answer accepted without naming its UP SEID: nothing can delete it.
    Unnamed,
}

/// The UPF's end of the uplink tunnel in an establishment's answer: the F-TEID it chose for
/// the UL PDR (§7.5.3.1: a Created PDR for each PDR whose F-TEID was CHOOSE). One still
/// CHOOSE, without an IPv4 address, with TEID 0 (GTP-U's path management, no tunnel) or an
/// address no gNB can send to is unusable.
fn uplink_tunnel(created: &[CreatedPdr]) -> Option<(u32, Ipv4Addr)> {
    let pdr = created.iter().find(|c| c.pdr_id == UL_PDR)?;
    match pdr.f_teid {
        Some(FTeid::Assigned {
            teid,
            ipv4: Some(ip),
            ..
        }) if teid != 0 && !(ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast()) => {
            Some((teid, ip))
        }
        _ => None,
    }
}

impl Refusal {
    /// The UPF refused the session (PFCP cause `c`).
    fn upf_refused(c: PfcpCause) -> Self {
        Refusal::new(
            GsmCause::InsufficientResources,
            500,
            "INSUFFICIENT_RESOURCES_SLICE_DNN",
            format!("UPF refused the session: PFCP cause {}", c.0),
        )
    }

    /// The UPF answered with something the SMF cannot use.
    fn upf_faulty(detail: String) -> Self {
        Refusal::new(
            GsmCause::InsufficientResources,
            500,
            "UNSPECIFIED_NF_FAILURE",
            detail,
        )
    }
}

impl<M: ContextMap<u64, SmContext>> Smf<M> {
    pub(super) fn send_pfcp(&mut self, seid: Option<u64>, m: Message, p: PfcpPending) {
        // Sequence numbers are 24 bits (TS 29.244 §7.2.2.2).
        let sequence = self.next_seq & 0x00ff_ffff;
        self.next_seq = (self.next_seq + 1) & 0x00ff_ffff;
        if matches!(p, PfcpPending::Establish { .. }) {
            self.stats.n4_establish_requests += 1;
        }
        if let Some(supi) = p.sm_ref().and_then(|r| self.traced(r)) {
            tracing::info!(target: crate::trace::TARGET, %supi, seid = seid.unwrap_or(0), sequence, "PFCP → {}", crate::trace::pfcp_name(m.msg_type().value()));
        }
        self.pfcp.insert(sequence, p);
        let bytes = PfcpMessage::new(sequence, seid, m).emit();
        self.actions.push_back(Action::Pfcp {
            to: self.cfg.upf,
            sequence,
            bytes,
        });
    }

    /// A PFCP datagram from the UPF.
    pub fn handle_pfcp(&mut self, bytes: &[u8]) {
        let msg = match PfcpMessage::parse(bytes) {
            Ok(m) => m,
            Err(e) => return self.undecodable(bytes, e),
        };
        // Stamps and cause 72 are looked at first; heartbeats and restorations end there.
        if self.n4_watch(&msg) {
            return;
        }
        let PfcpMessage { header, message } = msg;
        let sequence = header.sequence;
        let message = match message {
            // §6.2.2: a heartbeat is answered with our recovery time stamp.
            Message::HeartbeatRequest(_) => {
                let hb = Message::HeartbeatResponse(pfcp::message::Heartbeat {
                    recovery_time_stamp: self.recovery,
                    unknown: Vec::new(),
                });
                return self.pfcp_response(sequence, None, hb);
            }
            Message::SessionReportRequest(r) => {
                return self.session_report(sequence, header.seid.unwrap_or(0), r)
            }
            m => m,
        };
        let traced = match self.trace.is_on() {
            true => self
                .pfcp
                .get(&sequence)
                .and_then(PfcpPending::sm_ref)
                .and_then(|r| self.traced(r)),
            false => None,
        };
        if let Some(supi) = traced {
            tracing::info!(target: crate::trace::TARGET, %supi, seid = header.seid.unwrap_or(0), sequence, "PFCP ← {}", crate::trace::pfcp_name(header.msg_type));
        }
        let Some(p) = self.take_pending(sequence, header.msg_type) else {
            self.stats.stray_pfcp += 1;
            if let Message::SessionEstablishmentResponse(e) = &message {
                let up = e.up_f_seid.map(|f| f.seid);
                self.late_establishment(header.seid, Some(e.cause), up);
            }
            return;
        };
        match (p, message) {
            (PfcpPending::Association, Message::AssociationSetupResponse(a)) => {
                self.association_answered(Some(&a));
            }
            (
                PfcpPending::Establish { req_id, sm_ref },
                Message::SessionEstablishmentResponse(e),
            ) => self.establishment_answered(req_id, sm_ref, e),
            (PfcpPending::Modify { req_id, sm_ref }, Message::SessionModificationResponse(m)) => {
                if m.cause.is_accepted() {
                    self.modified(req_id, sm_ref);
                } else {
                    let detail = format!("UPF refused the modification: PFCP cause {}", m.cause.0);
                    self.modification_failed(
                        req_id,
                        sm_ref,
                        problem(500, "UNSPECIFIED_NF_FAILURE", detail),
                    );
                }
            }
            (
                PfcpPending::Delete {
                    sm_ref,
                    waiters,
                    then,
                },
                Message::SessionDeletionResponse(r),
            ) => {
                if then == Then::Undo {
                    self.cleanup_answered(sm_ref, r.cause);
                }
                // Whatever the cause, the UPF holds nothing more we could delete (§7.5.7.2:
                // "session context not found" means it is already gone).
                self.deleted(sm_ref, waiters, then);
            }
            // Of the response type but not the response's body: only a Version Not
            // Supported Response could be, and it does not decode; kept total all the same.
            (p, _) => {
                self.stats.stray_pfcp += 1;
                self.pfcp_failed(p, Failure::Undecodable("unexpected body".into()));
            }
        }
    }

    /// Takes the request `sequence` if a message of `msg_type` answers it.
    fn take_pending(&mut self, sequence: u32, msg_type: u8) -> Option<PfcpPending> {
        let p = self.pfcp.get(&sequence)?;
        if !is_response_to(p.request_type().value(), msg_type) {
            return None;
        }
        self.pfcp.remove(&sequence)
    }

    /// A datagram that does not decode: if its header answers one of our requests, the
    /// request fails with it; anything else is dropped.
    fn undecodable(&mut self, bytes: &[u8], e: DecodeError) {
        let Ok(s) = salvage(bytes) else {
            self.stats.stray_pfcp += 1;
            return;
        };
        let Some(p) = self.take_pending(s.header.sequence, s.header.msg_type) else {
            self.stats.stray_pfcp += 1;
            if s.header.msg_type == MessageType::SessionEstablishmentResponse.value() {
                self.late_establishment(s.header.seid, s.cause, s.f_seid.map(|f| f.seid));
            }
            return;
        };
        self.stats.pfcp_unparsed += 1;
        let why = if s.header.msg_type == VERSION_NOT_SUPPORTED_RESPONSE {
            "the UPF does not speak PFCP version 1".to_owned()
        } else {
            // §7.6: the cause the error maps to, as a refusal of ours would carry it.
            let c = e.cause().unwrap_or(PfcpCause::REQUEST_REJECTED);
            format!("UPF answer did not decode ({e}): PFCP cause {}", c.0)
        };
        warn!(sequence = s.header.sequence, error = %e, "PFCP response does not decode");
        match p {
            PfcpPending::Establish { req_id, sm_ref } => {
                // What the UPF kept: the session the F-SEID names, unless the readable
                // cause says it refused.
                let held = match (s.cause, s.f_seid) {
                    (Some(c), _) if !c.is_accepted() => Held::Nothing,
                    (_, Some(f)) => Held::Session(f.seid),
                    (_, None) => Held::Unnamed,
                };
                self.abandon_held(req_id, sm_ref, Refusal::upf_faulty(why), held);
            }
            p => self.pfcp_failed(p, Failure::Undecodable(why)),
        }
    }

    pub(super) fn pfcp_response(&mut self, sequence: u32, seid: Option<u64>, m: Message) {
        let bytes = PfcpMessage::new(sequence, seid, m).emit();
        self.actions.push_back(Action::PfcpResponse {
            to: self.cfg.upf,
            bytes,
        });
    }

    /// Session Report Request (TS 29.244 §7.5.8): count the usage, acknowledge it; an unknown
    /// SEID is answered with "session context not found" (§7.5.9.1).
    fn session_report(&mut self, sequence: u32, seid: u64, r: SessionReportRequest) {
        let octets: u64 = r
            .usage_reports
            .iter()
            .filter_map(|u| u.volume.as_ref().and_then(|v| v.total))
            .fold(0, u64::saturating_add);
        let n = r.usage_reports.len() as u64;
        self.stats.n4_reports += 1;
        let up = self.contexts.with(&seid, |c| {
            let c = c?;
            c.reported_octets = c.reported_octets.saturating_add(octets);
            Some(c.up_seid)
        });
        let (cause, up_seid) = match up {
            Some(up) => {
                self.stats.usage_reports += n;
                self.stats.n4_reports_accepted += 1;
                (PfcpCause::REQUEST_ACCEPTED, up)
            }
            None => (PfcpCause::SESSION_CONTEXT_NOT_FOUND, None),
        };
        // §7.2.2.4.2: the response carries the peer's SEID, 0 when the session is unknown.
        let m = Message::SessionReportResponse(SessionResponse::new(cause));
        self.pfcp_response(sequence, Some(up_seid.unwrap_or(0)), m);
    }

    /// The runtime gave up on PFCP request `sequence` (N1 retransmissions unanswered).
    pub fn pfcp_timeout(&mut self, sequence: u32) {
        if self.n4_timeout(sequence) {
            return;
        }
        if let Some(p) = self.pfcp.remove(&sequence) {
            self.pfcp_failed(p, Failure::Unanswered);
        }
    }

    fn pfcp_failed(&mut self, p: PfcpPending, f: Failure) {
        match p {
            PfcpPending::Association => self.association_answered(None),
            PfcpPending::Establish { req_id, sm_ref } => {
                self.stats.n4_establish_failures += 1;
                let r = match f {
                    // TS 29.502 table 6.1.3.2.3.1-3: 504 with the peer not answering.
                    Failure::Unanswered => {
                        // The UPF's state is unknown: a late answer may still name a session.
                        self.given_up.push_back(sm_ref);
                        if self.given_up.len() > GIVEN_UP_KEPT {
                            self.given_up.pop_front();
                        }
                        Refusal::new(
                            GsmCause::InsufficientResources,
                            504,
                            "PEER_NOT_RESPONDING",
                            "UPF did not answer",
                        )
                    }
                    Failure::Undecodable(why) => Refusal::upf_faulty(why),
                };
                self.abandon_held(req_id, sm_ref, r, Held::Nothing);
            }
            PfcpPending::Modify { req_id, sm_ref } => {
                let p = match f {
                    Failure::Unanswered => {
                        problem(504, "PEER_NOT_RESPONDING", "UPF did not answer")
                    }
                    Failure::Undecodable(why) => problem(500, "UNSPECIFIED_NF_FAILURE", why),
                };
                self.modification_failed(req_id, sm_ref, p);
            }
            // The UPF's state is unknown; ours goes regardless, as the AMF and UE go on.
            PfcpPending::Delete {
                sm_ref,
                waiters,
                then,
            } => {
                if then == Then::Undo {
                    self.cleanup_failed(sm_ref, &f);
                }
                self.deleted(sm_ref, waiters, then);
            }
        }
    }

    /// The answer to a Session Establishment Request (§7.5.3).
    fn establishment_answered(
        &mut self,
        req_id: u64,
        sm_ref: u64,
        e: SessionEstablishmentResponse,
    ) {
        if !e.cause.is_accepted() {
            self.stats.n4_establish_failures += 1;
            return self.abandon_held(req_id, sm_ref, Refusal::upf_refused(e.cause), Held::Nothing);
        }
        // §7.5.3.1: UP F-SEID present when accepted (the decoder holds to it; a missing one
        // is an answer that did not decode).
        let Some(up) = e.up_f_seid.map(|f| f.seid) else {
            self.stats.n4_establish_failures += 1;
            let r = Refusal::upf_faulty("UPF accepted the session without a UP F-SEID".into());
            return self.abandon_held(req_id, sm_ref, r, Held::Unnamed);
        };
        match uplink_tunnel(&e.created_pdr) {
            Some(ul) => self.established(req_id, sm_ref, up, ul),
            None => {
                self.stats.n4_establish_failures += 1;
                let r = Refusal::upf_faulty(
                    "UPF accepted the session without a usable uplink F-TEID".into(),
                );
                self.abandon_held(req_id, sm_ref, r, Held::Session(up));
            }
        }
    }

    /// A Session Establishment Response that answers no outstanding request: a duplicate
    /// (the UPF answers each retransmission with the same octets), or the answer to a
    /// request given up on. The first accepting answer of one given up on names an orphan
    /// session (its header SEID is ours, the SM context ref): deleted.
    fn late_establishment(
        &mut self,
        cp_seid: Option<u64>,
        cause: Option<PfcpCause>,
        up: Option<u64>,
    ) {
        let (Some(cp), Some(true), Some(up)) = (cp_seid, cause.map(PfcpCause::is_accepted), up)
        else {
            return;
        };
        let Some(i) = self.given_up.iter().position(|r| *r == cp) else {
            return;
        };
        self.given_up.remove(i);
        debug!(
            cp_seid = cp,
            up_seid = up,
            "late establishment answer: deleting its session"
        );
        self.undo(cp, up);
    }

    /// Refuses the creation of `sm_ref` and clears what it left: the UPF's session if the
    /// answer named one (the context goes when its deletion ends), else the context now.
    pub(super) fn abandon_held(&mut self, req_id: u64, sm_ref: u64, r: Refusal, held: Held) {
        let ctx = self
            .contexts
            .with(&sm_ref, |c| c.map(|c| (c.psi, c.pti, c.state)));
        match ctx {
            Some((psi, pti, state)) if state != SmState::Releasing => {
                self.refuse(req_id, psi, pti, r)
            }
            // Released while being established: the creation still gets its answer.
            _ => self.released_meanwhile(req_id),
        }
        match held {
            Held::Session(up) => self.undo(sm_ref, up),
            Held::Unnamed => {
                self.stats.abandoned_unnamed += 1;
                warn!(
                    sm_ref,
                    "UPF accepted a session it did not name: it cannot be deleted"
                );
                self.drop_context(sm_ref);
            }
            Held::Nothing => self.drop_context(sm_ref),
        }
    }

    /// Deletes the UPF's session `up_seid` of an abandoned establishment of `sm_ref`.
    pub(super) fn undo(&mut self, sm_ref: u64, up_seid: u64) {
        self.contexts.with(&sm_ref, |c| {
            if let Some(c) = c {
                c.up_seid = Some(up_seid);
                c.state = SmState::Releasing;
            }
        });
        self.send_pfcp(
            Some(up_seid),
            requests::deletion(),
            PfcpPending::Delete {
                sm_ref,
                waiters: Vec::new(),
                then: Then::Undo,
            },
        );
    }

    fn cleanup_answered(&mut self, sm_ref: u64, cause: PfcpCause) {
        if cause.is_accepted() {
            self.stats.abandoned_deleted += 1;
        } else if cause != PfcpCause::SESSION_CONTEXT_NOT_FOUND {
            self.stats.abandoned_delete_failed += 1;
            warn!(
                sm_ref,
                cause = cause.0,
                "UPF refused to delete an abandoned session"
            );
        }
    }

    fn cleanup_failed(&mut self, sm_ref: u64, f: &Failure) {
        self.stats.abandoned_delete_failed += 1;
        match f {
            Failure::Unanswered => {
                warn!(
                    sm_ref,
                    "UPF did not answer the deletion of an abandoned session"
                )
            }
            Failure::Undecodable(why) => {
                warn!(sm_ref, why = %why, "deletion of an abandoned session failed")
            }
        }
    }

    /// Drops a context the UPF holds nothing of, and its address.
    pub(super) fn drop_context(&mut self, sm_ref: u64) {
        if let Some(ctx) = self.contexts.remove(&sm_ref) {
            self.unindex_session(&ctx, sm_ref);
            if let (Some(ip), Some(pool)) = (ctx.ue_ip, self.pools.get_mut(&ctx.dnn)) {
                pool.release(ip);
            }
        }
    }

    fn modified(&mut self, req_id: u64, sm_ref: u64) {
        // A release that came while the UPF was modifying the session leaves it `Releasing`:
        // the user plane did reach ACTIVATED, and the update is answered so, but the
        // deletion under way decides what follows. Only a context already gone is not found.
        let found = self.contexts.with(&sm_ref, |c| {
            let c = c?;
            if c.state == SmState::Modifying {
                c.state = SmState::Active;
            }
            Some(())
        });
        if found.is_none() {
            return self.problem(
                req_id,
                ProblemDetails::context_not_found("SM context released during its modification"),
            );
        }
        self.stats.activated += 1;
        let body = SmContextUpdatedData {
            up_cnx_state: Some("ACTIVATED".into()),
            ..Default::default()
        };
        self.respond(req_id, SbiResponse::json(StatusCode::OK, &body));
    }

    fn modification_failed(&mut self, req_id: u64, sm_ref: u64, p: ProblemDetails) {
        self.contexts.with(&sm_ref, |c| {
            if let Some(c) = c.filter(|c| c.state == SmState::Modifying) {
                c.state = SmState::Activating;
            }
        });
        self.problem(req_id, p);
    }

    /// Ends `sm_ref` at the UPF and here, answering `waiter` and going on with `then` when it
    /// is done. A deletion under way is joined, not repeated; a context whose establishment
    /// is still at the UPF is answered now and goes with the establishment's outcome.
    pub(super) fn delete_session(&mut self, sm_ref: u64, waiter: Option<Waiter>, then: Then) {
        let found = self.contexts.with(&sm_ref, |c| {
            let c = c?;
            let was = c.state;
            if was != SmState::Subscription {
                c.state = SmState::Releasing;
            }
            Some((was, c.up_seid))
        });
        let Some((was, up)) = found else {
            return self.deleted(sm_ref, waiter.into_iter().collect(), then);
        };
        match (was, up) {
            // Under way already: the waiter joins it, or (while the establishment's
            // outcome is awaited) is answered now.
            (SmState::Releasing | SmState::Establishing, _) => {
                let Some(w) = waiter else { return };
                if was == SmState::Establishing || !self.join_deletion(sm_ref, w) {
                    let ctx = self.contexts.with(&sm_ref, |c| c.cloned());
                    self.answer_release(w, ctx.as_ref());
                }
            }
            (_, Some(seid)) => self.send_pfcp(
                Some(seid),
                requests::deletion(),
                PfcpPending::Delete {
                    sm_ref,
                    waiters: waiter.into_iter().collect(),
                    then,
                },
            ),
            (_, None) => self.deleted(sm_ref, waiter.into_iter().collect(), then),
        }
    }

    /// Adds `w` to the deletion of `sm_ref` under way, if there is one. A release of the
    /// network's becomes one the AMF asked for: `w`'s answer is what it learns.
    fn join_deletion(&mut self, sm_ref: u64, w: Waiter) -> bool {
        for p in self.pfcp.values_mut() {
            if let PfcpPending::Delete {
                sm_ref: r,
                waiters,
                then,
            } = p
            {
                if *r == sm_ref {
                    waiters.push(w);
                    if let Then::Network(_) = then {
                        *then = Then::Nothing;
                    }
                    return true;
                }
            }
        }
        false
    }

    /// `sm_ref` is gone from the UPF (or given up on): the context goes, its address back
    /// to the pool, the network's release command (if `then` is one) to the AMF, and every
    /// waiter gets its answer.
    pub(super) fn deleted(&mut self, sm_ref: u64, waiters: Vec<Waiter>, then: Then) {
        let ctx = self.contexts.remove(&sm_ref);
        if let Some(ctx) = &ctx {
            self.unindex_session(ctx, sm_ref);
            if then != Then::Undo {
                self.stats.released += 1;
            }
            if let (Some(ip), Some(pool)) = (ctx.ue_ip, self.pools.get_mut(&ctx.dnn)) {
                pool.release(ip);
            }
            if let Then::Network(cause) = then {
                self.network_release(ctx, cause);
            }
        }
        for w in waiters {
            self.answer_release(w, ctx.as_ref());
        }
    }

    fn answer_release(&mut self, w: Waiter, ctx: Option<&SmContext>) {
        let response = match (w.ue_release, ctx) {
            // TS 23.502 §4.3.4.2 step 3b: the N1 Release Command and the N2 Release Command
            // Transfer go back in the update's answer.
            (Some(pti), Some(ctx)) => {
                let msgs = nas::release_command(ctx.psi, pti, GsmCause::RegularDeactivation)
                    .and_then(|n1| Ok((n1, n2::release_command_transfer()?)));
                match msgs {
                    Ok((n1, n2)) => {
                        let body = SmContextUpdatedData {
                            n1_sm_msg: Some(RefToBinaryData::new(N1_ID)),
                            n2_sm_info: Some(RefToBinaryData::new(N2_ID)),
                            n2_sm_info_type: Some("PDU_RES_REL_CMD".into()),
                            ..Default::default()
                        };
                        Self::multipart_response(
                            StatusCode::OK,
                            &[
                                Part::json(json_bytes(&body)),
                                Part::binary(multipart::NAS_5G, N1_ID, n1),
                                Part::binary(multipart::NGAP, N2_ID, n2),
                            ],
                        )
                    }
                    Err(e) => {
                        SbiResponse::problem(&ProblemDetails::unspecified_nf_failure(e.to_string()))
                    }
                }
            }
            _ => SbiResponse::no_content(),
        };
        self.respond(w.req_id, response);
    }
}

/// Why a PFCP request failed.
#[derive(Debug)]
enum Failure {
    /// No answer after N1 retransmissions.
    Unanswered,
    /// An answer that does not decode, with what to tell about it.
    Undecodable(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(f_teid: Option<FTeid>) -> Vec<CreatedPdr> {
        vec![CreatedPdr {
            pdr_id: UL_PDR,
            f_teid,
            unknown: Vec::new(),
        }]
    }

    #[test]
    fn only_a_chosen_routable_uplink_f_teid_is_usable() {
        let ip = Ipv4Addr::new(127, 0, 0, 7);
        let assigned = |teid, ipv4| FTeid::Assigned {
            teid,
            ipv4,
            ipv6: None,
        };
        assert_eq!(
            uplink_tunnel(&created(Some(assigned(5, Some(ip))))),
            Some((5, ip))
        );
        for bad in [
            None,
            Some(FTeid::Choose {
                ipv4: true,
                ipv6: false,
                choose_id: None,
            }),
            Some(assigned(5, None)),
            Some(assigned(0, Some(ip))),
            Some(assigned(5, Some(Ipv4Addr::UNSPECIFIED))),
            Some(assigned(5, Some(Ipv4Addr::BROADCAST))),
            Some(assigned(5, Some(Ipv4Addr::new(224, 0, 0, 1)))),
        ] {
            assert_eq!(uplink_tunnel(&created(bad)), None, "{bad:?}");
        }
        let other = vec![CreatedPdr {
            pdr_id: UL_PDR + 1,
            f_teid: Some(assigned(5, Some(ip))),
            unknown: Vec::new(),
        }];
        assert_eq!(uplink_tunnel(&other), None, "not the UL PDR's");
    }
}
