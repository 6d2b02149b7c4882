//! All NFs of one worker behind one sans-IO interface, shaped like quinn-proto's
//! `Endpoint`: protocol logic with no I/O, driven by whatever owns the sockets.
//!
//! A [`Host`] owns one worker's AMF, AUSF, UDM and SMF, the bookkeeping that joins them
//! (which request waits for which answer, where an SBI request or an NGAP message is
//! handled, the search of an N1N2MessageTransfer for its UE), the SMF's PFCP
//! retransmission and the worker's delivery-path counters. The I/O layer feeds it
//! [`Input`]s with [`Host::handle`] and the time with [`Host::handle_timeout`], and carries
//! out every [`Output`] of [`Host::poll_output`]: NGAP to send, hops to other workers,
//! h2c calls and answers, PFCP datagrams, SQN writes. It owns no socket, thread or clock,
//! so the runtime in `steer5g-core`, the unit tests beside it and a simulator in virtual time
//! drive the same thing; given the same inputs and instants it does the same.
//!
//! Requests travel under tags: a request the host holds (read by its server, made
//! in-process by one of its NFs, or handed over by another worker) gets a tag and an
//! origin, the NF answers under that tag, and [`Host`] takes the answer back to the
//! origin: the server's reply channel, the calling NF, or the worker that holds it.
//! With [`SbiMode::Inproc`] a call to a co-located NF never leaves the host (or the
//! process: it goes one hop to the worker owning it).
//!
//! The sharded and locked modes differ only in the [`Placement`] a host is built with.
//!
//! # Bounds
//!
//! [`HostLimits`] bounds what a host holds (DESIGN.md principle 8): SBI requests in progress
//! (one read beyond the bound is answered 503 NF_CONGESTION with `Retry-After`), and the
//! SMF's SM contexts. The AMF's bounds are in its own configuration. A hop the I/O layer
//! cannot queue comes back through [`Host::hop_refused`] and is answered at ingress with
//! the protocol's overload answer. The AMF's overload transitions go to every worker's N2
//! side through [`Host::poll_overload`].

mod config;
mod counters;
mod io;
mod loopback;
mod nfs;
pub mod placement;
mod pump;
mod sbi_flow;

#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Instant;

use sbi::SbiResponse;

use ids::{WorkerId, Workers};
use pfcp::txn::{Due, Requester};
use tracing::{debug, warn};

use crate::amf::overload::OverloadSignal;
use crate::amf::registration::{AmfStats, SessionStats};
use crate::ausf::AusfStats;
use crate::smf::SmfStats;
use crate::udm::UdmStats;

pub use config::{
    ConfigError, HostConfig, SbiMode, SbiTimeouts, DEFAULT_SBI_CALL_TIMEOUT, NSMF_MARGIN,
};
pub use counters::{IoEvent, WorkerCounters};
pub use io::{CallFailed, CallReply, CallToken, Hop, Input, Output, SbiCall, ServerToken, UeNgap};
pub use nfs::{HostAmf, HostAusf, HostSmf, HostUdm};
pub use placement::{Locked, Placement, Sharded, Stores};

use io::Caller;
use nfs::Nfs;

/// Who waits for the answer to an SBI request the host holds.
#[derive(Debug)]
enum Origin {
    /// A request read by this worker's server.
    Server(ServerToken),
    /// A call of this host's NF (in-process SBI), under its call id.
    Call(Caller, u64),
    /// A request another worker holds under its own tag.
    Remote { from: WorkerId, tag: u64 },
}

/// What one host may hold ([`Host::set_limits`]); the defaults are the configuration's
/// (`[limits]` of `steer5g-config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimits {
    /// SBI requests the host holds at once for others: read by its servers, or handed over
    /// by another worker. A request read beyond it is answered 503 NF_CONGESTION
    /// (TS 29.500 §5.2.7.2) before any NF sees it.
    pub sbi_max_in_progress: usize,
    /// The `Retry-After` of those answers, seconds (TS 29.500 §5.2.2.2).
    pub sbi_retry_after_s: u32,
    /// SM contexts of the host's SMF ([`crate::smf::Smf::set_max_contexts`]).
    pub smf_max_sm_contexts: usize,
}

impl Default for HostLimits {
    fn default() -> Self {
        HostLimits {
            sbi_max_in_progress: 8192,
            sbi_retry_after_s: 1,
            smf_max_sm_contexts: crate::smf::DEFAULT_MAX_SM_CONTEXTS,
        }
    }
}

/// The counters of one worker's NFs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NfStats {
    /// The AMF's.
    pub amf: AmfStats,
    /// The AMF's PDU session counters.
    pub amf_sessions: SessionStats,
    /// The AUSF's.
    pub ausf: AusfStats,
    /// The UDM's.
    pub udm: UdmStats,
    /// The SMF's (zero without one).
    pub smf: SmfStats,
}

/// All NFs of one worker; see the module docs.
pub struct Host<P: Placement> {
    id: WorkerId,
    workers: Workers,
    cfg: HostConfig,
    nfs: Nfs<P>,
    /// The SMF's PFCP requests in flight, each with the UPF it went to.
    pfcp: Requester<SocketAddr>,
    next_tag: u64,
    origins: HashMap<u64, Origin>,
    /// Requests held here that name a traced SUPI (`--trace-supi`), by tag; and the h2c
    /// calls that do, by caller and call id. Empty unless tracing.
    traced: HashMap<u64, String>,
    traced_calls: HashMap<(Caller, u64), String>,
    out: VecDeque<Output>,
    counters: WorkerCounters,
    limits: HostLimits,
    /// Requests held for a server or another worker (the bounded ones).
    in_progress: usize,
    /// Overload transitions for this worker's N2 side.
    overload: VecDeque<OverloadSignal>,
}

impl<P: Placement> std::fmt::Debug for Host<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("worker", &self.id)
            .field("requests", &self.origins.len())
            .field("outputs", &self.out.len())
            .finish_non_exhaustive()
    }
}

impl<P: Placement> Host<P> {
    /// The host of worker `cfg.worker`, its NFs over the stores `placement` gives.
    pub fn new(cfg: HostConfig, placement: &P) -> Self {
        let nfs = Nfs::new(&cfg, placement.stores());
        Host {
            id: cfg.worker,
            workers: cfg.workers,
            pfcp: Requester::new(cfg.pfcp),
            nfs,
            cfg,
            next_tag: 0,
            origins: HashMap::new(),
            traced: HashMap::new(),
            traced_calls: HashMap::new(),
            out: VecDeque::new(),
            counters: WorkerCounters::default(),
            limits: HostLimits::default(),
            in_progress: 0,
            overload: VecDeque::new(),
        }
    }

    /// Sets the host's bounds (the defaults are [`HostLimits::default`]).
    pub fn set_limits(&mut self, limits: HostLimits) {
        self.limits = limits;
        if let Some(smf) = self.nfs.smf.as_mut() {
            smf.set_max_contexts(limits.smf_max_sm_contexts);
        }
    }

    /// The next overload transition for this worker's N2 side (each worker's AMF signals
    /// every worker): hand it to [`crate::amf::n2::AmfN2::overload`].
    pub fn poll_overload(&mut self) -> Option<OverloadSignal> {
        self.overload.pop_front()
    }

    /// The I/O layer could not queue `hop` for worker `to` (its hand-off queue and the
    /// outbox are full; only [`Hop::refusable`] hops are refused). It is answered where it
    /// entered, as its protocol answers overload: an SBI request with 503 NF_CONGESTION and
    /// `Retry-After` (TS 29.500 §5.2.7.2), a UE's NGAP message dropped and counted (the
    /// UE's NAS timers send it again, TS 24.501 §5.5.1.2.7).
    pub fn hop_refused(&mut self, now: Instant, to: WorkerId, hop: Hop) {
        debug!(to = to.0, "hand-off refused: queue full");
        let retry_after = self.limits.sbi_retry_after_s;
        let congested =
            || SbiResponse::nf_congestion("hand-off queue to the owner is full", retry_after);
        match hop {
            Hop::Ngap { .. } => self.counters.ngap_mesh_refused += 1,
            Hop::Request { from, tag, .. }
            | Hop::Forward { from, tag, .. }
            | Hop::Seek { from, tag, .. } => {
                self.counters.sbi_mesh_refused += 1;
                let resp = congested();
                if from == self.id {
                    self.complete(now, tag, resp);
                } else {
                    // A transfer seeking its UE, held by another worker: answer there.
                    self.counters.sbi_answers_relayed += 1;
                    self.hop(from, Hop::Answer { tag, resp });
                }
            }
            // Not refusable: the I/O layer keeps these whatever the queue holds.
            other => warn!(?other, "a hop that must not be refused was"),
        }
        self.pump(now);
    }

    /// This worker.
    pub fn worker(&self) -> WorkerId {
        self.id
    }

    /// Whether the I/O layer's h2c client should be shard-aware (pick the owner's
    /// connection, [`SbiCall::owner`]).
    pub fn shard_aware_calls(&self) -> bool {
        self.cfg.sbi_pool && P::SHARD_AWARE_CALLS
    }

    /// One input at `now`.
    pub fn handle(&mut self, now: Instant, input: Input<'_>) {
        match input {
            Input::Ngap(m) => self.on_ngap(now, m),
            Input::Hop(h) => self.on_hop(now, h),
            Input::SbiRequest {
                nf,
                steered,
                req,
                server,
            } => self.on_served(now, nf, steered, req, server),
            Input::SbiReply { call, reply } => self.on_reply(now, call, reply),
            Input::Pfcp(bytes) => {
                self.pfcp.answered(bytes);
                if let Some(smf) = self.nfs.smf.as_mut() {
                    smf.handle_pfcp(bytes);
                }
            }
            Input::SqnDone { supi, claim } => {
                if P::SHARES_SQN_DONE {
                    // Any worker may have parked a request behind this reservation.
                    let me = self.id;
                    for w in self.workers.iter().filter(|w| *w != me) {
                        let supi = supi.clone();
                        self.hop(w, Hop::SqnDone { supi, claim });
                    }
                }
                self.nfs.sqn_done(&supi, claim);
            }
            Input::SubscriberChanged { supi } => {
                if P::SHARES_SQN_DONE {
                    let me = self.id;
                    for w in self.workers.iter().filter(|w| *w != me) {
                        let supi = supi.clone();
                        self.hop(w, Hop::SubscriberChanged { supi });
                    }
                }
                self.nfs.udm.subscriber_changed(&supi);
            }
        }
        self.pump(now);
    }

    /// The I/O layer opened the PFCP socket towards the UPF: the SMF starts its
    /// association (TS 29.244 §6.2.6), stamped with `recovery_time_stamp` (§8.2.65).
    pub fn pfcp_open(&mut self, now: Instant, recovery_time_stamp: u32) {
        if let Some(smf) = self.nfs.smf.as_mut() {
            smf.associate(recovery_time_stamp);
            // Starts its heartbeat timer.
            smf.handle_timeout(now);
        }
        self.pump(now);
    }

    /// Runs every timer due at `now`: the NFs' and the PFCP retransmissions.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.nfs.amf.handle_timeout(now);
        self.nfs.ausf.handle_timeout(now);
        if let Some(smf) = self.nfs.smf.as_mut() {
            smf.handle_timeout(now);
        }
        while let Some(due) = self.pfcp.poll_due(now) {
            match due {
                Due::Retransmit { bytes, meta, .. } => {
                    self.counters.pfcp_retransmitted += 1;
                    self.out.push_back(Output::Pfcp {
                        to: *meta,
                        bytes: bytes.to_vec(),
                    });
                }
                Due::GaveUp { sequence, .. } => {
                    self.counters.pfcp_timed_out += 1;
                    if let Some(smf) = self.nfs.smf.as_mut() {
                        smf.pfcp_timeout(sequence);
                    }
                }
            }
        }
        self.pump(now);
    }

    /// The next piece of work for the I/O layer.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// When [`Host::handle_timeout`] should run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.nfs.amf.poll_timeout(),
            self.nfs.ausf.poll_timeout(),
            self.pfcp.poll_timeout(),
            self.nfs.smf.as_ref().and_then(|s| s.poll_timeout()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Counts something only the I/O layer sees.
    pub fn record_io(&mut self, event: IoEvent) {
        self.counters.record(event);
    }

    /// The delivery-path counters.
    pub fn counters(&self) -> &WorkerCounters {
        &self.counters
    }

    /// The NFs' counters.
    pub fn nf_stats(&self) -> NfStats {
        self.nfs.stats()
    }

    /// The AMF.
    pub fn amf(&mut self) -> &mut HostAmf<P> {
        &mut self.nfs.amf
    }

    /// The AUSF.
    pub fn ausf(&mut self) -> &mut HostAusf<P> {
        &mut self.nfs.ausf
    }

    /// The UDM.
    pub fn udm(&mut self) -> &mut HostUdm<P> {
        &mut self.nfs.udm
    }

    /// The SMF, if this host has one.
    pub fn smf(&mut self) -> Option<&mut HostSmf<P>> {
        self.nfs.smf.as_mut()
    }

    fn hop(&mut self, to: WorkerId, hop: Hop) {
        self.out.push_back(Output::Hop { to, hop });
    }

    fn new_tag(&mut self) -> u64 {
        let t = self.next_tag;
        self.next_tag = self.next_tag.wrapping_add(1);
        t
    }

    /// A UE-associated NGAP message read here: handled here or handed to its worker.
    fn on_ngap(&mut self, now: Instant, m: UeNgap) {
        let to = P::ngap_worker(self.id, self.workers, m.route, m.stream);
        if to == self.id {
            self.counters.ngap_local += 1;
            self.nfs
                .amf
                .handle_ngap(now, m.assoc, m.stream, m.ready, m.gnb_id, &m.pdu);
        } else {
            self.counters.ngap_handed_off += 1;
            let UeNgap {
                assoc,
                stream,
                ready,
                gnb_id,
                pdu,
                ..
            } = m;
            self.hop(
                to,
                Hop::Ngap {
                    assoc,
                    stream,
                    ready,
                    gnb_id,
                    pdu,
                },
            );
        }
    }

    /// Sends on the association's own worker: here, or one hop away (its id names it).
    fn send_ngap(&mut self, assoc: u32, stream: u16, pdu: Vec<u8>) {
        let owner = ids::n2::assoc_owner(assoc);
        if owner == self.id {
            self.out.push_back(Output::Ngap { assoc, stream, pdu });
        } else if self.workers.contains(owner) {
            self.counters.ngap_out_relayed += 1;
            self.hop(owner, Hop::NgapOut { assoc, stream, pdu });
        } else {
            debug!(assoc, "NGAP message for an association of no worker");
        }
    }

    fn on_hop(&mut self, now: Instant, h: Hop) {
        match h {
            Hop::Ngap {
                assoc,
                stream,
                ready,
                gnb_id,
                pdu,
            } => {
                self.counters.ngap_from_mesh += 1;
                self.nfs
                    .amf
                    .handle_ngap(now, assoc, stream, ready, gnb_id, &pdu);
            }
            Hop::NgapOut { assoc, stream, pdu } => self.send_ngap(assoc, stream, pdu),
            Hop::Request { nf, from, tag, req } => {
                self.counters.sbi_from_mesh += 1;
                let t = self.hold(Origin::Remote { from, tag });
                self.handle_here(now, nf, t, req);
            }
            Hop::Forward { from, tag, fwd } => {
                self.counters.sbi_from_mesh += 1;
                let t = self.hold(Origin::Remote { from, tag });
                self.nfs.udm.handle_forwarded(t, fwd);
            }
            Hop::Seek {
                from,
                tag,
                req,
                left,
            } => {
                self.counters.sbi_from_mesh += 1;
                if left <= 1 || self.nfs.amf.holds_n1n2_target(&req.path) {
                    let t = self.hold(Origin::Remote { from, tag });
                    self.handle_here(now, sbi::NfType::Amf, t, req);
                } else {
                    self.seek(from, tag, req, left - 1);
                }
            }
            Hop::Answer { tag, resp } => self.complete(now, tag, resp),
            Hop::SqnDone { supi, claim } => self.nfs.sqn_done(&supi, claim),
            Hop::SubscriberChanged { supi } => self.nfs.udm.subscriber_changed(&supi),
            Hop::Overload { from, start } => self.overload.push_back(OverloadSignal {
                worker: from.0,
                start,
            }),
        }
    }
}
