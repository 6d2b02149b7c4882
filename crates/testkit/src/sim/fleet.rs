//! A fleet of emulated gNBs and UEs (`ran::gnb`, `ran::ue`) that follow a plan: register,
//! optionally establish a PDU session, hold it until told, release it, deregister. Sans-IO
//! like the emulators it drives: [`Fleet::connected`] and [`Fleet::downlink`] take what the
//! AMF sent and give the NGAP to send, so the simulator carries it over its N2 link and a
//! socket test over real SCTP, with one copy of the procedure logic.
//!
//! AMF overload as the load generator meets it (TS 38.413 §8.7.6-8.7.7, TS 24.501 §5.3.9):
//! a gNB under OVERLOAD START sheds its share of the UEs that start; a UE rejected with #22
//! and T3346 waits: [`Fleet::take_backoffs`] gives its back-off to the runtime, which owns
//! the clock and calls [`Fleet::retry`] when it has run out.

use std::time::Duration;

use proto::nas::{FiveGmmCause, Guti};
use ran::gnb::{Gnb, GnbConfig, GnbEvent, GnbUeEvent, GnbUes, N2Send};
use ran::ue::{RegistrationKind, SessionRequest, Ue, UeEvent};

/// What one UE does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UePlan {
    /// After registering, establish this session.
    pub session: Option<SessionRequest>,
    /// With the session up, wait for [`Fleet::proceed`].
    pub hold: bool,
    /// Release the session (UE-requested) before going on.
    pub release: bool,
    /// Deregister at the end (after the release, or with the session up).
    pub deregister: bool,
}

impl UePlan {
    /// Register, then deregister.
    pub fn register_deregister() -> Self {
        UePlan {
            session: None,
            hold: false,
            release: false,
            deregister: true,
        }
    }

    /// Register and stay registered.
    pub fn register() -> Self {
        UePlan {
            deregister: false,
            ..Self::register_deregister()
        }
    }

    /// Register, establish the default session, release it, deregister.
    pub fn session_release() -> Self {
        UePlan {
            session: Some(SessionRequest::default()),
            hold: false,
            release: true,
            deregister: true,
        }
    }
}

/// How a UE's session ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionOutcome {
    /// Accepted, with this address.
    Established(Option<std::net::Ipv4Addr>),
    /// Rejected with this cause.
    Rejected(ran::ue::SessionRefusal),
}

/// What happened to one UE.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UeRecord {
    /// Its gNB.
    pub gnb: usize,
    /// REGISTRATION ACCEPT received (and how many).
    pub registered: u32,
    /// The 5G-GUTI of the last accept.
    pub guti: Option<Guti>,
    /// RAN-UE-NGAP-ID and AMF-UE-NGAP-ID when it registered.
    pub ngap_ids: Option<(u32, u64)>,
    /// The session, once answered.
    pub session: Option<SessionOutcome>,
    /// The session released (RELEASE COMMAND received).
    pub session_released: bool,
    /// DEREGISTRATION ACCEPT received.
    pub deregistered: bool,
    /// UE CONTEXT RELEASE COMMANDs received.
    pub released: u32,
    /// The UE's events, in order.
    pub events: Vec<UeEvent>,
    /// Whatever went against the plan.
    pub failures: Vec<String>,
    /// The plan ran to its end (or the UE was shed).
    pub done: bool,
    /// Its gNB shed it at the start, under the AMF's OVERLOAD START: it never sent a
    /// message.
    pub shed: bool,
    /// The T3346 of every REGISTRATION REJECT with #22 it received, in order.
    pub t3346: Vec<Duration>,
    /// Registrations started again once T3346 ran out.
    pub retries: u32,
}

/// Totals over the fleet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetSummary {
    /// gNBs whose NG Setup succeeded.
    pub gnbs_ready: usize,
    /// UEs registered.
    pub registered: usize,
    /// Sessions established.
    pub established: usize,
    /// Sessions rejected.
    pub rejected: usize,
    /// Sessions released.
    pub released_sessions: usize,
    /// UEs deregistered (accept received).
    pub deregistered: usize,
    /// UE contexts released at the gNB.
    pub released: usize,
    /// UEs whose plan ran to its end.
    pub done: usize,
    /// UEs shed by their gNB at the start.
    pub shed: usize,
    /// REGISTRATION REJECTs with #22 and T3346.
    pub congestion_rejects: usize,
    /// Everything that went against a plan, gNB and UE.
    pub failures: Vec<String>,
}

struct FleetGnb {
    gnb: Gnb,
    ues: GnbUes,
    members: Vec<usize>,
    ready: bool,
    failures: Vec<String>,
    /// OVERLOAD START and STOP as received, in order.
    overload: Vec<GnbEvent>,
}

struct FleetUe {
    ue: Ue,
    plan: UePlan,
    record: UeRecord,
    held: bool,
    /// Waiting for T3346 to run out.
    backing_off: bool,
}

/// gNBs and their UEs; see the module docs.
#[derive(Default)]
pub struct Fleet {
    gnbs: Vec<FleetGnb>,
    ues: Vec<FleetUe>,
    /// Back-offs received and not yet taken by the runtime.
    backoffs: Vec<(usize, Duration)>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("gnbs", &self.gnbs.len())
            .field("ues", &self.ues.len())
            .finish()
    }
}

impl Fleet {
    /// No gNB yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A gNB of `cfg` spreading its UEs over `ue_streams` SCTP streams; its index.
    pub fn add_gnb(&mut self, cfg: GnbConfig, ue_streams: u16) -> usize {
        let ues = GnbUes::new(&cfg, 1, ue_streams);
        let gnb = Gnb::new(cfg).unwrap_or_else(|e| panic!("gNB configuration: {e}"));
        self.gnbs.push(FleetGnb {
            gnb,
            ues,
            members: Vec::new(),
            ready: false,
            failures: Vec::new(),
            overload: Vec::new(),
        });
        self.gnbs.len() - 1
    }

    /// A UE under gNB `gnb` following `plan`; its index (also its key at the gNB). A UE
    /// added to a ready gNB starts at once: send what [`Fleet::start`] gives.
    pub fn add_ue(&mut self, gnb: usize, ue: Ue, plan: UePlan) -> usize {
        let i = self.ues.len();
        self.ues.push(FleetUe {
            ue,
            plan,
            record: UeRecord {
                gnb,
                ..UeRecord::default()
            },
            held: false,
            backing_off: false,
        });
        if let Some(g) = self.gnbs.get_mut(gnb) {
            g.members.push(i);
        }
        i
    }

    /// How many gNBs.
    pub fn gnb_count(&self) -> usize {
        self.gnbs.len()
    }

    /// How many UEs.
    pub fn ue_count(&self) -> usize {
        self.ues.len()
    }

    /// Whether gNB `g`'s NG Setup succeeded.
    pub fn ready(&self, g: usize) -> bool {
        self.gnbs.get(g).is_some_and(|g| g.ready)
    }

    /// UE `u`.
    pub fn ue(&self, u: usize) -> &Ue {
        &self.ues[u].ue
    }

    /// What happened to UE `u`.
    pub fn record(&self, u: usize) -> &UeRecord {
        &self.ues[u].record
    }

    /// Every UE's record, in UE order.
    pub fn records(&self) -> impl Iterator<Item = &UeRecord> {
        self.ues.iter().map(|u| &u.record)
    }

    /// The OVERLOAD STARTs and STOPs gNB `g` received, in order.
    pub fn overload_log(&self, g: usize) -> &[GnbEvent] {
        &self.gnbs[g].overload
    }

    /// Whether gNB `g` is under an OVERLOAD START.
    pub fn overloaded(&self, g: usize) -> bool {
        self.gnbs.get(g).is_some_and(|g| g.gnb.overload().is_some())
    }

    /// The back-offs received since the last call: (UE, T3346). Call [`Fleet::retry`] for
    /// each once its time has passed.
    pub fn take_backoffs(&mut self) -> Vec<(usize, Duration)> {
        std::mem::take(&mut self.backoffs)
    }

    /// UE `u`'s T3346 ran out: it registers again, if its gNB admits it.
    pub fn retry(&mut self, u: usize) -> Vec<N2Send> {
        let Some(fu) = self.ues.get_mut(u) else {
            return Vec::new();
        };
        if !std::mem::take(&mut fu.backing_off) {
            return Vec::new();
        }
        fu.record.retries += 1;
        self.start(u)
    }

    /// gNB `g`'s UE side (its sessions, its NGAP ids).
    pub fn gnb_ues(&self, g: usize) -> &GnbUes {
        &self.gnbs[g].ues
    }

    /// gNB `g`'s UE side, to change (its N3 address).
    pub fn gnb_ues_mut(&mut self, g: usize) -> &mut GnbUes {
        &mut self.gnbs[g].ues
    }

    /// Totals.
    pub fn summary(&self) -> FleetSummary {
        let mut s = FleetSummary {
            gnbs_ready: self.gnbs.iter().filter(|g| g.ready).count(),
            ..FleetSummary::default()
        };
        for (i, g) in self.gnbs.iter().enumerate() {
            s.failures
                .extend(g.failures.iter().map(|f| format!("gNB {i}: {f}")));
        }
        for (i, u) in self.ues.iter().enumerate() {
            let r = &u.record;
            s.registered += usize::from(r.registered > 0);
            match r.session {
                Some(SessionOutcome::Established(_)) => s.established += 1,
                Some(SessionOutcome::Rejected(_)) => s.rejected += 1,
                None => {}
            }
            s.released_sessions += usize::from(r.session_released);
            s.deregistered += usize::from(r.deregistered);
            s.released += r.released as usize;
            s.done += usize::from(r.done);
            s.shed += usize::from(r.shed);
            s.congestion_rejects += r.t3346.len();
            s.failures
                .extend(r.failures.iter().map(|f| format!("UE {i}: {f}")));
        }
        s
    }

    /// Whether every UE ran its plan to the end.
    pub fn all_done(&self) -> bool {
        self.ues.iter().all(|u| u.record.done && !u.backing_off)
    }

    /// Whether every UE with a session plan holds its session up.
    pub fn all_held(&self) -> bool {
        self.ues
            .iter()
            .filter(|u| u.plan.session.is_some() && u.plan.hold)
            .all(|u| u.held || u.record.done)
    }

    /// gNB `g`'s association is up: its NG SETUP REQUEST.
    pub fn connected(&mut self, g: usize) -> Vec<N2Send> {
        let Some(gnb) = self.gnbs.get_mut(g) else {
            return Vec::new();
        };
        vec![N2Send {
            stream: proto::ngap::NON_UE_STREAM,
            pdu: gnb.gnb.ng_setup_request(),
        }]
    }

    /// UE `u` starts its plan (its gNB must be ready): the INITIAL UE MESSAGE.
    pub fn start(&mut self, u: usize) -> Vec<N2Send> {
        let mut out = Vec::new();
        let Some(fu) = self.ues.get_mut(u) else {
            return out;
        };
        let g = fu.record.gnb;
        // TS 38.413 §8.7.6.2: an overloaded AMF's gNB turns the share it was told of new
        // signalling connections away before they reach the AMF.
        if !self.gnbs.get_mut(g).is_none_or(|g| g.gnb.admit_new_ue()) {
            fu.record.shed = true;
            fu.record.done = true;
            return out;
        }
        let reg = fu
            .ue
            .prepare()
            .and_then(|()| fu.ue.registration_request(RegistrationKind::Initial));
        match reg {
            Ok(nas) => match self.gnbs[g].ues.initial_ue_message(u as u64, &nas, None) {
                Ok(s) => out.push(s),
                Err(e) => fu.record.failures.push(format!("INITIAL UE MESSAGE: {e}")),
            },
            Err(e) => fu.record.failures.push(format!("registration: {e}")),
        }
        out
    }

    /// Held UEs go on with their plan.
    pub fn proceed(&mut self) -> Vec<(usize, N2Send)> {
        let mut out = Vec::new();
        for u in 0..self.ues.len() {
            if std::mem::take(&mut self.ues[u].held) {
                let g = self.ues[u].record.gnb;
                for s in self.after_session(u) {
                    out.push((g, s));
                }
            }
        }
        out
    }

    /// One NGAP message the AMF sent to gNB `g`: what the gNB sends back.
    pub fn downlink(&mut self, g: usize, stream: u16, pdu: &[u8]) -> Vec<N2Send> {
        let mut out = Vec::new();
        let Some(gnb) = self.gnbs.get_mut(g) else {
            return out;
        };
        if !gnb.ready {
            match gnb.gnb.handle(stream, pdu) {
                GnbEvent::SetupOk => {
                    gnb.ready = true;
                    let members = gnb.members.clone();
                    for u in members {
                        out.extend(self.start(u));
                    }
                }
                other => gnb.failures.push(format!("NG Setup: {other:?}")),
            }
            return out;
        }
        let o = gnb.ues.handle_downlink(stream, pdu);
        out.extend(o.transmit);
        for e in o.events {
            match e {
                GnbUeEvent::NasToUe { ue, nas } => out.extend(self.nas(g, ue as usize, &nas)),
                GnbUeEvent::Released { ue, .. } => {
                    if let Some(fu) = self.ues.get_mut(ue as usize) {
                        fu.record.released += 1;
                        if fu.record.deregistered
                            || (fu.record.registered == 0 && !fu.backing_off)
                            || !fu.plan.deregister
                        {
                            fu.record.done = true;
                        }
                    }
                }
                GnbUeEvent::NotUeAssociated { procedure } => {
                    let gnb = &mut self.gnbs[g];
                    match gnb.gnb.handle(stream, pdu) {
                        e @ (GnbEvent::OverloadStart { .. } | GnbEvent::OverloadStop) => {
                            gnb.overload.push(e)
                        }
                        other => gnb.failures.push(format!("{procedure}: {other:?}")),
                    }
                }
                GnbUeEvent::ContextSetup { .. }
                | GnbUeEvent::PduSessionSetup(_)
                | GnbUeEvent::PduSessionReleased { .. } => {}
                other => self.gnbs[g].failures.push(format!("{other:?}")),
            }
        }
        out
    }

    fn uplink(&mut self, u: usize, nas: &[u8]) -> Option<N2Send> {
        let g = self.ues[u].record.gnb;
        match self.gnbs[g].ues.uplink_nas(u as u64, nas) {
            Ok(s) => Some(s),
            Err(e) => {
                self.ues[u].record.failures.push(format!("uplink: {e}"));
                None
            }
        }
    }

    fn nas(&mut self, g: usize, u: usize, nas: &[u8]) -> Vec<N2Send> {
        let mut out = Vec::new();
        let Some(fu) = self.ues.get_mut(u) else {
            self.gnbs[g]
                .failures
                .push(format!("NAS for unknown UE {u}"));
            return out;
        };
        let r = fu.ue.handle_downlink_nas(nas);
        fu.record.events.push(r.event.clone());
        if let Some(up) = r.uplink {
            out.extend(self.uplink(u, &up));
        }
        let fu = &mut self.ues[u];
        let next: Option<Result<Vec<u8>, ran::ue::UeError>> = match r.event {
            UeEvent::Registered => {
                fu.record.registered += 1;
                fu.record.guti = fu.ue.guti().copied();
                let gu = &self.gnbs[g].ues;
                fu.record.ngap_ids = gu.ran_ue_ngap_id(u as u64).zip(gu.amf_ue_ngap_id(u as u64));
                match (&fu.plan.session, fu.plan.deregister) {
                    (Some(s), _) => Some(fu.ue.pdu_session_establishment_request(s)),
                    (None, true) => Some(fu.ue.deregistration_request(false)),
                    (None, false) => {
                        fu.record.done = true;
                        None
                    }
                }
            }
            UeEvent::PduSessionEstablished { ue_ip, .. } => {
                fu.record.session = Some(SessionOutcome::Established(ue_ip));
                if fu.plan.hold {
                    fu.held = true;
                    None
                } else {
                    return {
                        out.extend(self.after_session(u));
                        out
                    };
                }
            }
            UeEvent::PduSessionRejected { cause, .. } => {
                fu.record.session = Some(SessionOutcome::Rejected(cause));
                if fu.plan.deregister {
                    Some(fu.ue.deregistration_request(false))
                } else {
                    fu.record.done = true;
                    None
                }
            }
            UeEvent::PduSessionReleased { .. } => {
                fu.record.session_released = true;
                if fu.plan.deregister {
                    Some(fu.ue.deregistration_request(false))
                } else {
                    fu.record.done = true;
                    None
                }
            }
            UeEvent::Deregistered => {
                fu.record.deregistered = true;
                None
            }
            // TS 24.501 §5.5.1.2.5, §5.3.9: with T3346 the UE waits, then registers again.
            UeEvent::RegistrationRejected(FiveGmmCause::Congestion) if fu.ue.t3346().is_some() => {
                let t3346 = fu.ue.t3346().unwrap_or_default();
                fu.record.t3346.push(t3346);
                fu.record.done = false;
                fu.backing_off = true;
                self.backoffs.push((u, t3346));
                None
            }
            UeEvent::Authenticated
            | UeEvent::SecurityModeCompleted
            | UeEvent::IdentityProvided
            | UeEvent::AuthenticationFailed(_) => None,
            other => {
                fu.record.failures.push(format!("{other:?}"));
                None
            }
        };
        match next {
            Some(Ok(nas)) => out.extend(self.uplink(u, &nas)),
            Some(Err(e)) => self.ues[u].record.failures.push(format!("NAS: {e}")),
            None => {}
        }
        out
    }

    /// The step after an established session: release it, or deregister with it up.
    fn after_session(&mut self, u: usize) -> Vec<N2Send> {
        let fu = &mut self.ues[u];
        let id = fu.plan.session.as_ref().map_or(1, |s| s.pdu_session_id);
        let next = if fu.plan.release {
            Some(fu.ue.pdu_session_release_request(id))
        } else if fu.plan.deregister {
            Some(fu.ue.deregistration_request(false))
        } else {
            fu.record.done = true;
            None
        };
        match next {
            Some(Ok(nas)) => self.uplink(u, &nas).into_iter().collect(),
            Some(Err(e)) => {
                self.ues[u].record.failures.push(format!("NAS: {e}"));
                Vec::new()
            }
            None => Vec::new(),
        }
    }
}
