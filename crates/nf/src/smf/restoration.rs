//! The SMF's side of N4 restoration: finding out that the UPF restarted, and giving it back
//! the sessions it lost.
//!
//! - The SMF sends the UPF a Heartbeat Request every [`SmfConfig::heartbeat_interval`]
//!   (TS 29.244 §6.2.2.1), one at a time. Every Recovery Time Stamp the UPF sends (in a
//!   Heartbeat Response, its own Heartbeat Request, an Association Setup Response) is
//!   compared with the one it gave when the association was set up.
//! - A session response with cause 72 "No established PFCP association" means the UPF does
//!   not know this SMF any more: the association is set up again, and its response tells
//!   whether the UPF restarted.
//! - A changed stamp means the UPF restarted and lost every PFCP session (§6.2.2.2). The
//!   behaviour chosen here is TS 23.527 §4.3.2's proactive restoration: the association is
//!   set up again and, first thing on it, every session this worker still holds is
//!   established again with the F-TEID the UPF had allocated and the downlink forwarding to
//!   the gNB as it was, with the restoration indication (RESTI) set. The UE and the gNB see
//!   nothing. A session the UPF refuses to take back (its TEID taken meanwhile) is released
//!   here and counted in [`SmfStats::restore_failed`](super::SmfStats): the UE keeps a session
//!   that no longer carries traffic until it releases it.
//!
//! A UPF that does not answer heartbeats is only counted: the sessions stay, since a UPF that
//! comes back without restarting still holds them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use pfcp::message::{Heartbeat, SessionEstablishmentResponse};
use pfcp::requests::{self, SessionSpec, UL_PDR};
use pfcp::{Cause as PfcpCause, Message, PfcpMessage};

use super::{Action, SmContext, SmState, Smf};
use crate::state::ContextMap;
use ids::smf::owner_of_seid;

/// The default of [`super::SmfConfig::heartbeat_interval`].
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(10);

/// A request of this module in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum N4Pending {
    Heartbeat,
    Restore {
        sm_ref: u64,
    },
    /// Deletion of a restored session whose context went meanwhile.
    Cleanup,
}

/// What one SMF worker knows of the UPF's life.
#[derive(Debug, Default)]
pub(super) struct N4Watch {
    /// When the next heartbeat goes; `None` until the first timer run.
    next_heartbeat: Option<Instant>,
    /// The UPF's Recovery Time Stamp as of the last association set up.
    upf_recovery: Option<u32>,
    /// The UPF restarted: the sessions go back once the association is set up again.
    restore: bool,
    /// An Association Setup Request of ours is in flight.
    associating: bool,
    pending: HashMap<u32, N4Pending>,
    /// A heartbeat of ours is in flight.
    heartbeat_out: bool,
    /// Session establishments that came while the association was being set up: they go
    /// once it is (TS 29.244 §6.2.6: no session before the association), or are refused if
    /// it fails.
    held: Vec<HeldEstablishment>,
}

/// A session establishment waiting for the association.
#[derive(Debug)]
struct HeldEstablishment {
    req_id: u64,
    sm_ref: u64,
    request: pfcp::message::SessionEstablishmentRequest,
}

impl<M: ContextMap<u64, SmContext>> Smf<M> {
    /// When [`Smf::handle_timeout`] wants to run: the next heartbeat (none before the first
    /// call, which starts the timer).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.cfg.heartbeat_interval?;
        self.n4.next_heartbeat
    }

    /// Timers at `now`: the first call starts the heartbeat timer; when it is due, a
    /// heartbeat goes (TS 29.244 §6.2.2.1, one at a time), or, while no association is up
    /// (the UPF was not there yet, or refused), an Association Setup Request again.
    pub fn handle_timeout(&mut self, now: Instant) {
        let Some(interval) = self.cfg.heartbeat_interval else {
            return;
        };
        match self.n4.next_heartbeat {
            None => self.n4.next_heartbeat = Some(now + interval),
            Some(t) if t <= now => {
                self.n4.next_heartbeat = Some(now + interval);
                if !self.associated {
                    self.reassociate();
                } else if !self.n4.heartbeat_out {
                    self.n4.heartbeat_out = true;
                    self.stats.heartbeats_sent += 1;
                    self.send_n4(
                        None,
                        requests::heartbeat(self.recovery),
                        N4Pending::Heartbeat,
                    );
                }
            }
            Some(_) => {}
        }
    }

    fn send_n4(&mut self, seid: Option<u64>, m: Message, p: N4Pending) {
        let sequence = self.next_seq & 0x00ff_ffff;
        self.next_seq = (self.next_seq + 1) & 0x00ff_ffff;
        self.n4.pending.insert(sequence, p);
        let bytes = PfcpMessage::new(sequence, seid, m).emit();
        self.actions.push_back(Action::Pfcp {
            to: self.cfg.upf,
            sequence,
            bytes,
        });
    }

    /// A PFCP message from the UPF, before the SMF's own bookkeeping looks at it: a stamp to
    /// compare, a cause 72 to act on, or the answer to a request of this module (then true:
    /// nothing more is to be done with it).
    pub(super) fn n4_watch(&mut self, msg: &PfcpMessage) -> bool {
        let sequence = msg.header.sequence;
        match &msg.message {
            Message::HeartbeatRequest(h) => {
                self.upf_stamp(h.recovery_time_stamp);
                false
            }
            Message::HeartbeatResponse(h)
                if self.n4.pending.get(&sequence) == Some(&N4Pending::Heartbeat) =>
            {
                self.n4.pending.remove(&sequence);
                self.n4.heartbeat_out = false;
                self.heartbeat_answered(h);
                true
            }
            Message::SessionEstablishmentResponse(e) => match self.n4.pending.get(&sequence) {
                Some(N4Pending::Restore { sm_ref }) => {
                    let sm_ref = *sm_ref;
                    self.n4.pending.remove(&sequence);
                    self.restored(sm_ref, e);
                    true
                }
                _ => {
                    self.cause_seen(e.cause);
                    false
                }
            },
            Message::SessionDeletionResponse(_)
                if self.n4.pending.get(&sequence) == Some(&N4Pending::Cleanup) =>
            {
                self.n4.pending.remove(&sequence);
                true
            }
            Message::SessionModificationResponse(r) | Message::SessionDeletionResponse(r) => {
                self.cause_seen(r.cause);
                false
            }
            _ => false,
        }
    }

    /// The runtime gave up on request `sequence`; true when it was one of this module's.
    pub(super) fn n4_timeout(&mut self, sequence: u32) -> bool {
        match self.n4.pending.remove(&sequence) {
            Some(N4Pending::Heartbeat) => {
                // The UPF may be gone or the path lossy; the next heartbeat asks again, and a
                // UPF that comes back restarted says so in its answer.
                self.n4.heartbeat_out = false;
                self.stats.heartbeats_unanswered += 1;
                tracing::warn!(upf = %self.cfg.upf, "UPF did not answer a PFCP heartbeat");
                true
            }
            Some(N4Pending::Restore { sm_ref }) => {
                self.restore_failed(sm_ref, "UPF did not answer");
                true
            }
            Some(N4Pending::Cleanup) => true,
            None => false,
        }
    }

    fn heartbeat_answered(&mut self, h: &Heartbeat) {
        self.upf_stamp(h.recovery_time_stamp);
    }

    /// §6.2.2.2 / §6.2.6.2.2: the UPF's stamp as seen now.
    fn upf_stamp(&mut self, stamp: u32) {
        match self.n4.upf_recovery {
            Some(known) if known != stamp => self.upf_restarted(known, stamp, false),
            _ => {}
        }
    }

    /// The UPF restarted: its sessions go back on the next association, which is set up
    /// now unless `associated` (the news came in the answer to one).
    fn upf_restarted(&mut self, was: u32, now: u32, associated: bool) {
        if self.n4.restore {
            return;
        }
        self.stats.upf_restarts += 1;
        tracing::warn!(
            upf = %self.cfg.upf,
            was,
            now,
            "UPF restarted (new Recovery Time Stamp); restoring its PFCP sessions"
        );
        self.n4.restore = true;
        if !associated {
            self.reassociate();
        }
    }

    /// Cause 72 on a session response: the UPF has no association with us.
    fn cause_seen(&mut self, cause: PfcpCause) {
        if cause == PfcpCause::NO_ESTABLISHED_ASSOCIATION {
            tracing::warn!(upf = %self.cfg.upf, "UPF answered: no established PFCP association");
            self.reassociate();
        }
    }

    fn reassociate(&mut self) {
        if self.n4.associating {
            return;
        }
        self.associated = false;
        self.associate(self.recovery);
    }

    /// Sends session establishment `request` for SM context `sm_ref` (CreateSMContext
    /// `req_id`), or, while an Association Setup Request is in flight, holds it until the
    /// association is up: a UPF would refuse it with cause 72 meanwhile (TS 29.244 §6.2.6).
    pub(super) fn establish_when_associated(
        &mut self,
        req_id: u64,
        sm_ref: u64,
        request: pfcp::message::SessionEstablishmentRequest,
    ) {
        if self.n4.associating {
            self.n4.held.push(HeldEstablishment {
                req_id,
                sm_ref,
                request,
            });
            return;
        }
        // §7.2.2.4.2: an establishment request carries SEID 0 in its header.
        self.send_pfcp(
            Some(0),
            Message::SessionEstablishmentRequest(request),
            super::PfcpPending::Establish { req_id, sm_ref },
        );
    }

    /// The held establishments: sent now that the association is up, or refused (504, the
    /// UPF not answering or refusing the association).
    fn release_held(&mut self) {
        for h in std::mem::take(&mut self.n4.held) {
            if self.associated {
                self.establish_when_associated(h.req_id, h.sm_ref, h.request);
            } else {
                let r = super::Refusal::new(
                    super::GsmCause::InsufficientResources,
                    504,
                    "PEER_NOT_RESPONDING",
                    "no PFCP association with the UPF",
                );
                self.abandon_held(h.req_id, h.sm_ref, r, super::n4::Held::Nothing);
            }
        }
    }

    /// Marks an Association Setup Request as sent (from [`Smf::associate`]).
    pub(super) fn associating(&mut self) {
        self.n4.associating = true;
    }

    /// The Association Setup Response (or none: `None` when the request was never
    /// answered).
    pub(super) fn association_answered(&mut self, a: Option<&pfcp::message::AssociationSetup>) {
        self.n4.associating = false;
        let Some(a) = a else {
            self.associated = false;
            self.release_held();
            return;
        };
        self.associated = a.cause.is_some_and(PfcpCause::is_accepted);
        self.release_held();
        if !self.associated {
            return;
        }
        let stamp = a.recovery_time_stamp;
        if let Some(known) = self.n4.upf_recovery.filter(|k| *k != stamp) {
            // Set up again just now: the restoration goes on this association.
            self.upf_restarted(known, stamp, true);
        }
        self.n4.upf_recovery = Some(stamp);
        if self.n4.restore {
            self.n4.restore = false;
            self.restore_sessions();
        }
    }

    /// Every session this worker holds on the UPF, established again (TS 23.527 §4.3.2).
    fn restore_sessions(&mut self) {
        let me = self.cfg.worker;
        let mut refs = self.contexts.keys();
        refs.retain(|r| owner_of_seid(*r) == me);
        refs.sort_unstable();
        let mut sent = 0u64;
        for sm_ref in refs {
            let Some(ctx) = self.contexts.with(&sm_ref, |c| c.cloned()) else {
                continue;
            };
            let restorable = matches!(
                ctx.state,
                SmState::Activating | SmState::Modifying | SmState::Active
            );
            let (Some(ip), Some(ul), true) = (ctx.ue_ip, ctx.ul_tunnel, restorable) else {
                continue;
            };
            let mut spec =
                SessionSpec::new(self.cfg.node_id.clone(), ctx.cp_seid, self.cfg.pfcp_ip, ip);
            spec.mbr_kbps = Some((ctx.ambr_bps.0 / 1000, ctx.ambr_bps.1 / 1000));
            spec.volume_threshold = Some(self.cfg.urr_volume_threshold);
            let req = requests::restoration(&spec, ul, ctx.dl_tunnel);
            sent += 1;
            // §7.2.2.4.2: an establishment request carries SEID 0 in its header.
            self.send_n4(
                Some(0),
                Message::SessionEstablishmentRequest(req),
                N4Pending::Restore { sm_ref },
            );
        }
        tracing::info!(upf = %self.cfg.upf, sessions = sent, "PFCP sessions sent for restoration");
    }

    fn restored(&mut self, sm_ref: u64, e: &SessionEstablishmentResponse) {
        let ul_kept = e.created_pdr.iter().all(|c| c.pdr_id != UL_PDR);
        match (e.cause, e.up_f_seid.as_ref()) {
            (PfcpCause::REQUEST_ACCEPTED, Some(up)) if !ul_kept => {
                // The UPF chose another uplink TEID than the gNB sends to: of no use.
                self.send_n4(Some(up.seid), requests::deletion(), N4Pending::Cleanup);
                self.restore_failed(sm_ref, "UPF allocated another uplink F-TEID");
            }
            (PfcpCause::REQUEST_ACCEPTED, Some(up)) => {
                let known = self.contexts.with(&sm_ref, |c| {
                    c.map(|c| {
                        c.up_seid = Some(up.seid);
                    })
                });
                if known.is_some() {
                    self.stats.sessions_restored += 1;
                } else {
                    // Released while it was being restored: undo that on the UPF too.
                    self.send_n4(Some(up.seid), requests::deletion(), N4Pending::Cleanup);
                }
            }
            (cause, _) => {
                let why = format!("UPF refused it: PFCP cause {}", cause.0);
                self.restore_failed(sm_ref, &why);
            }
        }
    }

    fn restore_failed(&mut self, sm_ref: u64, why: &str) {
        self.stats.restore_failed += 1;
        tracing::warn!(
            sm_ref,
            why,
            "PFCP session not restored; SM context released"
        );
        self.drop_context(sm_ref);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::net::{Ipv4Addr, SocketAddr};

    use super::*;
    use crate::smf::{DnnPool, SmfConfig};
    use crate::state::ShardMap;
    use ids::{WorkerId, Workers};
    use pfcp::ie::NodeId;
    use upf::datapath::DownlinkAction;
    use upf::{MemoryDatapath, NodeConfig, UpfNode};

    const SMF_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 4);
    const UPF_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 7);
    const GNB: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 9);
    const HB: Duration = Duration::from_secs(2);

    type TestSmf = Smf<ShardMap<u64, SmContext>>;

    fn smf() -> TestSmf {
        Smf::new(
            SmfConfig {
                worker: WorkerId(0),
                workers: Workers::single(),
                api_root: "http://127.0.0.4:7777".into(),
                node_id: NodeId::Ipv4(SMF_IP),
                pfcp_ip: SMF_IP,
                upf: SocketAddr::from((UPF_IP, 8805)),
                dnns: vec![DnnPool {
                    dnn: "internet".into(),
                    net: Ipv4Addr::new(10, 45, 0, 0),
                    prefix_len: 16,
                }],
                slices: vec![sbi::model::Snssai { sst: 1, sd: None }],
                urr_volume_threshold: 1 << 30,
                heartbeat_interval: Some(HB),
                recovery_time_stamp: 500,
            },
            ShardMap::new(),
        )
    }

    /// One UPF incarnation with Recovery Time Stamp `stamp` and a datapath of its own.
    struct Upf {
        node: UpfNode,
        dp: MemoryDatapath,
        /// Drops every datagram (the UPF is down).
        down: bool,
    }

    impl Upf {
        fn new(now: Instant, stamp: u32) -> Self {
            let mut cfg = NodeConfig::new(NodeId::Ipv4(UPF_IP), UPF_IP, UPF_IP, stamp);
            cfg.heartbeat_interval = None;
            Upf {
                node: UpfNode::new(now, cfg),
                dp: MemoryDatapath::new(),
                down: false,
            }
        }
    }

    /// Moves PFCP between the SMF and the UPF until both are quiet; requests to a UPF that
    /// is down are reported as never answered.
    fn run(smf: &mut TestSmf, upf: &mut Upf, now: Instant) {
        let from = SocketAddr::from((SMF_IP, 40_000));
        while let Some(a) = smf.poll_action() {
            let (bytes, sequence) = match a {
                Action::Pfcp {
                    bytes, sequence, ..
                } => (bytes, Some(sequence)),
                Action::PfcpResponse { bytes, .. } => (bytes, None),
                other => panic!("{other:?}"),
            };
            if upf.down {
                if let Some(s) = sequence {
                    smf.pfcp_timeout(s);
                }
                continue;
            }
            let mut dp = upf.dp.clone();
            upf.node.handle(now, from, &bytes, &mut dp);
            while let Some(t) = upf.node.poll_transmit() {
                smf.handle_pfcp(&t.contents);
            }
        }
    }

    /// A session as the SMF keeps it once active: established on the UPF with a TEID the
    /// UPF chose, the downlink forwarding to the gNB.
    fn active_session(smf: &mut TestSmf, upf: &mut Upf, now: Instant, n: u64) -> u64 {
        let sm_ref = ids::smf::sm_context_ref(WorkerId(0), n);
        let ue_ip = Ipv4Addr::new(10, 45, 0, n as u8);
        let spec = SessionSpec::new(NodeId::Ipv4(SMF_IP), sm_ref, SMF_IP, ue_ip);
        let est = PfcpMessage::new(
            9000 + n as u32,
            Some(0),
            Message::SessionEstablishmentRequest(requests::establishment(&spec)),
        );
        let mut dp = upf.dp.clone();
        let from = SocketAddr::from((SMF_IP, 40_000));
        upf.node.handle(now, from, &est.emit(), &mut dp);
        let rsp = PfcpMessage::parse(&upf.node.poll_transmit().unwrap().contents).unwrap();
        let Message::SessionEstablishmentResponse(e) = rsp.message else {
            panic!("{rsp:?}")
        };
        let up_seid = e.up_f_seid.unwrap().seid;
        let Some(pfcp::ie::FTeid::Assigned { teid, .. }) = e.created_pdr[0].f_teid else {
            panic!("{e:?}")
        };
        let m = PfcpMessage::new(
            9100 + n as u32,
            Some(up_seid),
            Message::SessionModificationRequest(requests::forward_downlink(0x700 + n as u32, GNB)),
        );
        upf.node.handle(now, from, &m.emit(), &mut dp);
        assert!(upf.node.poll_transmit().is_some());
        smf.contexts.insert(
            sm_ref,
            SmContext {
                supi: format!("imsi-00101000000000{n}"),
                psi: 1,
                pti: 1,
                dnn: "internet".into(),
                snssai: sbi::model::Snssai { sst: 1, sd: None },
                ue_ip: Some(ue_ip),
                cp_seid: sm_ref,
                reported_octets: 0,
                up_seid: Some(up_seid),
                ul_tunnel: Some((teid, UPF_IP)),
                dl_tunnel: Some((0x700 + n as u32, GNB)),
                ambr_bps: (1_000_000_000, 1_000_000_000),
                five_qi: 9,
                arp_priority: 8,
                state: SmState::Active,
            },
        );
        sm_ref
    }

    fn check_restored(smf: &mut TestSmf, upf: &Upf, sm_ref: u64) {
        let ctx = smf.contexts.with(&sm_ref, |c| c.cloned()).unwrap();
        let (teid, _) = ctx.ul_tunnel.unwrap();
        let ip = ctx.ue_ip.unwrap();
        // The uplink TEID the gNB sends to, and the downlink to the gNB, as before.
        assert_eq!(upf.dp.uplink(teid).unwrap().ue_ip, ip);
        let (gnb_teid, gnb_ip) = ctx.dl_tunnel.unwrap();
        assert!(matches!(
            upf.dp.downlink(ip).unwrap().action,
            DownlinkAction::Forward { teid, .. } if teid == gnb_teid
        ));
        assert_eq!(gnb_ip, GNB);
    }

    /// The PFCP message types of the SMF's pending actions, in order; responses to the SBI
    /// as their status.
    fn drain(smf: &mut TestSmf) -> Vec<Result<u8, u16>> {
        let mut out = Vec::new();
        while let Some(a) = smf.poll_action() {
            out.push(match a {
                Action::Pfcp { bytes, .. } => Ok(bytes[1]),
                Action::Respond { response, .. } => Err(response.status.as_u16()),
                other => panic!("{other:?}"),
            });
        }
        out
    }

    fn establishment(n: u64) -> (u64, pfcp::message::SessionEstablishmentRequest) {
        let sm_ref = ids::smf::sm_context_ref(WorkerId(0), n);
        let ue_ip = Ipv4Addr::new(10, 45, 0, n as u8);
        let spec = SessionSpec::new(NodeId::Ipv4(SMF_IP), sm_ref, SMF_IP, ue_ip);
        (sm_ref, requests::establishment(&spec))
    }

    #[test]
    fn an_establishment_waits_for_the_association_in_flight() {
        const ASSOCIATION_SETUP: u8 = 5;
        const SESSION_ESTABLISHMENT: u8 = 50;
        let t0 = Instant::now();
        let mut smf = smf();
        let mut upf = Upf::new(t0, 1000);
        smf.associate(500);
        let association = smf.poll_action().unwrap();
        let (sm_ref, est) = establishment(1);
        smf.establish_when_associated(7, sm_ref, est);
        // Nothing goes before the association is up.
        assert!(drain(&mut smf).is_empty());
        let Action::Pfcp { bytes, .. } = association else {
            panic!("{association:?}")
        };
        assert_eq!(bytes[1], ASSOCIATION_SETUP);
        let mut dp = upf.dp.clone();
        upf.node
            .handle(t0, SocketAddr::from((SMF_IP, 40_000)), &bytes, &mut dp);
        while let Some(t) = upf.node.poll_transmit() {
            smf.handle_pfcp(&t.contents);
        }
        assert!(smf.associated());
        assert_eq!(drain(&mut smf), [Ok(SESSION_ESTABLISHMENT)]);
    }

    #[test]
    fn an_establishment_held_for_a_failed_association_is_refused() {
        let mut smf = smf();
        smf.associate(500);
        let Some(Action::Pfcp { sequence, .. }) = smf.poll_action() else {
            panic!("no association request")
        };
        let (sm_ref, est) = establishment(1);
        smf.establish_when_associated(7, sm_ref, est);
        smf.pfcp_timeout(sequence);
        assert!(!smf.associated());
        // Answered (the context is gone here: "released meanwhile"), never sent to the UPF.
        assert_eq!(drain(&mut smf), [Err(404)]);
    }

    /// An SMF associated (Recovery Time Stamp 500) with a UPF (1000), and two active
    /// sessions between them (PDU session IDs 1 and 2).
    fn two_active_sessions() -> (Instant, TestSmf, Upf, u64, u64) {
        let t0 = Instant::now();
        let mut smf = smf();
        let mut upf = Upf::new(t0, 1000);
        smf.associate(500);
        smf.handle_timeout(t0);
        run(&mut smf, &mut upf, t0);
        assert!(smf.associated());
        let a = active_session(&mut smf, &mut upf, t0, 1);
        let b = active_session(&mut smf, &mut upf, t0, 2);
        (t0, smf, upf, a, b)
    }

    #[test]
    fn a_restarted_upf_is_found_by_heartbeat_and_gets_its_sessions_back() {
        let (t0, mut smf, mut upf, a, b) = two_active_sessions();
        assert_eq!(smf.poll_timeout(), Some(t0 + HB));
        // Heartbeats to a UPF that lives on change nothing.
        smf.handle_timeout(t0 + HB);
        run(&mut smf, &mut upf, t0 + HB);
        assert_eq!(smf.stats().heartbeats_sent, 1);
        assert_eq!(smf.stats().upf_restarts, 0);

        // The UPF dies: heartbeats go unanswered, the sessions stay.
        upf.down = true;
        smf.handle_timeout(t0 + HB * 2);
        run(&mut smf, &mut upf, t0 + HB * 2);
        assert_eq!(smf.stats().heartbeats_unanswered, 1);
        assert_eq!(smf.context_count(), 2);

        // It comes back empty, with a new stamp: the next heartbeat finds out.
        let mut upf = Upf::new(t0 + HB * 3, 1001);
        assert_eq!(upf.node.session_count(), 0);
        smf.handle_timeout(t0 + HB * 3);
        run(&mut smf, &mut upf, t0 + HB * 3);
        let s = smf.stats();
        assert_eq!(
            (s.upf_restarts, s.sessions_restored, s.restore_failed),
            (1, 2, 0)
        );
        assert_eq!(upf.node.session_count(), 2);
        assert_eq!(upf.node.association_count(), 1);
        check_restored(&mut smf, &upf, a);
        check_restored(&mut smf, &upf, b);
        assert!(smf.associated());
        // The restored sessions are the SMF's again: their new UP SEIDs delete them.
        smf.delete_session(a, None, crate::smf::Then::Nothing);
        run(&mut smf, &mut upf, t0 + HB * 3);
        assert_eq!(upf.node.session_count(), 1);
        assert_eq!(smf.context_count(), 1);
    }

    #[test]
    fn cause_72_sets_the_association_up_again_and_restores() {
        let (t0, mut smf, _, a, b) = two_active_sessions();
        // Restarted between two heartbeats; a release reaches it first.
        let mut upf = Upf::new(t0, 1002);
        smf.delete_session(b, None, crate::smf::Then::Nothing);
        run(&mut smf, &mut upf, t0);
        let s = smf.stats();
        assert_eq!(s.upf_restarts, 1, "{s:?}");
        assert_eq!(s.sessions_restored, 1, "{s:?}");
        assert_eq!(upf.node.session_count(), 1);
        check_restored(&mut smf, &upf, a);
    }

    #[test]
    fn a_session_the_upf_will_not_take_back_is_released() {
        let (t0, mut smf, _, a, b) = two_active_sessions();
        // Both sessions claim the same uplink TEID: the UPF takes the first only.
        let teid = smf.contexts.with(&a, |c| c.unwrap().ul_tunnel).unwrap();
        smf.contexts.with(&b, |c| c.unwrap().ul_tunnel = Some(teid));
        let mut upf = Upf::new(t0, 1003);
        smf.handle_timeout(t0 + HB);
        run(&mut smf, &mut upf, t0 + HB);
        let s = smf.stats();
        assert_eq!((s.sessions_restored, s.restore_failed), (1, 1), "{s:?}");
        assert_eq!(smf.context_count(), 1);
        assert_eq!(upf.node.session_count(), 1);
        assert_eq!(smf.addresses_in_use("internet"), 0, "b's address went back");
    }
}
