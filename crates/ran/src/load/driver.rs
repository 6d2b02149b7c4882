//! One UE's walk through the procedures of a run, as a sans-IO state machine.
//!
//! The runner owns the sockets, the [`crate::ue::Ue`] and the gNB's N2 side; the driver only
//! decides what comes next and when a procedure started, ended or failed. That keeps the
//! bookkeeping that the report rests on (what counts as done, where latency is measured)
//! testable without a network.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ue::{RegistrationKind, UeEvent};
use proto::nas::FiveGmmCause;
use serde::Serialize;

/// How many times a UE registers again after its back-off when the network rejected it
/// with #22 and T3346 (TS 24.501 §5.5.1.2.5, §5.3.9), unless told otherwise
/// ([`Driver::set_congestion_retries`]). A real UE keeps trying; a load run has to end.
pub const DEFAULT_CONGESTION_RETRIES: u32 = 1;

/// How long a UE whose gNB shed its new signalling connection (AMF overload, TS 38.413
/// §8.7.6.2) holds its slot before its run ends: the RRC reject's wait time (TS 38.331
/// §5.3.15 allows 1 to 16 s), so that a closed loop does not spin on refused starts.
pub const SHED_WAIT: Duration = Duration::from_secs(1);

/// After DEREGISTRATION ACCEPT, how long a UE waits for the AMF to release its N2 connection
/// (TS 24.501 §5.5.2.2.2: the AMF releases the signalling connection) before the runner drops
/// it locally and moves on.
pub const RELEASE_WAIT: Duration = Duration::from_secs(2);

/// What each UE does in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Initial registration only.
    Register,
    /// Initial registration, then UE-originating de-registration (not switch-off).
    RegisterDeregister,
    /// Register, deregister, mobility re-registration with the 5G-GUTI, deregister.
    Reregister,
}

impl Mode {
    /// The steps of one run.
    pub fn steps(self) -> &'static [Step] {
        match self {
            Mode::Register => &[Step::Register(RegistrationKind::Initial)],
            Mode::RegisterDeregister => {
                &[Step::Register(RegistrationKind::Initial), Step::Deregister]
            }
            Mode::Reregister => &[
                Step::Register(RegistrationKind::Initial),
                Step::Deregister,
                Step::Register(RegistrationKind::Mobility),
                Step::Deregister,
            ],
        }
    }

    /// The name the CLI and the report use.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Register => "register",
            Mode::RegisterDeregister => "register-deregister",
            Mode::Reregister => "reregister",
        }
    }
}

/// The highest PDU session ID, so the most sessions a UE can hold (TS 24.007 §11.2.3.1b:
/// IDs 1..=15; the ran crate's UE refuses others).
pub const MAX_PDU_SESSIONS: u8 = 15;

/// What each run does: a [`Mode`], and the PDU sessions it holds between registration and
/// de-registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunShape {
    /// The registration procedures.
    pub mode: Mode,
    /// PDU sessions (IDs 1..=N) each UE establishes after registering and releases
    /// before de-registering; 0 for none.
    pub pdu_sessions: u8,
    /// Also hold every UE after registration and after the releases, so that the
    /// establishments and the releases each run alone in a window of their own (the
    /// session bench measures those windows).
    pub phase_holds: bool,
}

impl RunShape {
    /// Registration procedures only.
    #[cfg(test)]
    pub fn registration(mode: Mode) -> Self {
        RunShape {
            mode,
            pdu_sessions: 0,
            phase_holds: false,
        }
    }

    /// The steps of one run: the mode's, or with sessions: register, [hold], establish
    /// 1..=N, hold until every UE holds its sessions, release 1..=N, [hold], deregister.
    pub fn steps(self) -> Result<Vec<Step>, String> {
        if self.pdu_sessions == 0 {
            return Ok(self.mode.steps().to_vec());
        }
        if self.pdu_sessions > MAX_PDU_SESSIONS {
            return Err(format!(
                "at most {MAX_PDU_SESSIONS} PDU sessions per UE (PDU session IDs 1..=15, TS 24.007 §11.2.3.1b)"
            ));
        }
        if self.mode != Mode::RegisterDeregister {
            return Err(format!(
                "PDU sessions need --procedure register-deregister, not {}",
                self.mode.name()
            ));
        }
        let ids = 1..=self.pdu_sessions;
        let mut steps = vec![Step::Register(RegistrationKind::Initial)];
        if self.phase_holds {
            steps.push(Step::Hold(HoldPoint::Registered));
        }
        steps.extend(ids.clone().map(Step::EstablishSession));
        steps.push(Step::Hold(HoldPoint::SessionsUp));
        steps.extend(ids.map(Step::ReleaseSession));
        if self.phase_holds {
            steps.push(Step::Hold(HoldPoint::SessionsReleased));
        }
        steps.push(Step::Deregister);
        Ok(steps)
    }

    /// The name the report uses.
    pub fn name(self) -> String {
        if self.pdu_sessions == 0 {
            self.mode.name().to_owned()
        } else {
            format!("register-{}-sessions-deregister", self.pdu_sessions)
        }
    }
}

/// A barrier: a UE that reaches it waits until no run can move without it (every run in
/// flight holds, and the schedule can start no other), then all go on together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldPoint {
    /// After registration, before the first establishment.
    Registered,
    /// Every establishment done or failed, before the first release: the user-plane hook
    /// runs here.
    SessionsUp,
    /// Every release done, before de-registration.
    SessionsReleased,
}

impl HoldPoint {
    /// The report's name.
    pub fn name(self) -> &'static str {
        match self {
            HoldPoint::Registered => "registered",
            HoldPoint::SessionsUp => "sessions_up",
            HoldPoint::SessionsReleased => "sessions_released",
        }
    }
}

/// A procedure whose latency and outcome the report counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Procedure {
    /// Initial registration: INITIAL UE MESSAGE sent → REGISTRATION COMPLETE sent.
    Registration,
    /// UE-originating de-registration: request sent → DEREGISTRATION ACCEPT received.
    Deregistration,
    /// Mobility registration updating with the 5G-GUTI: request sent → accept (or the
    /// REGISTRATION COMPLETE that acknowledges a new 5G-GUTI) handled.
    Reregistration,
    /// UE-requested PDU session establishment: PDU SESSION ESTABLISHMENT REQUEST sent →
    /// both the accept at the UE and the PDU SESSION RESOURCE SETUP at the gNB handled.
    SessionEstablishment,
    /// UE-requested PDU session release: PDU SESSION RELEASE REQUEST sent → the RELEASE
    /// COMMAND handled by the UE (its COMPLETE sent) and the gNB's resources released.
    SessionRelease,
}

impl Procedure {
    /// Every procedure, in report order.
    pub const ALL: [Procedure; 5] = [
        Procedure::Registration,
        Procedure::Deregistration,
        Procedure::Reregistration,
        Procedure::SessionEstablishment,
        Procedure::SessionRelease,
    ];

    /// Index into per-procedure arrays.
    pub fn index(self) -> usize {
        match self {
            Procedure::Registration => 0,
            Procedure::Deregistration => 1,
            Procedure::Reregistration => 2,
            Procedure::SessionEstablishment => 3,
            Procedure::SessionRelease => 4,
        }
    }

    /// The report's name.
    pub fn name(self) -> &'static str {
        match self {
            Procedure::Registration => "registration",
            Procedure::Deregistration => "deregistration",
            Procedure::Reregistration => "reregistration",
            Procedure::SessionEstablishment => "session_establishment",
            Procedure::SessionRelease => "session_release",
        }
    }
}

/// One thing the runner does for the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Send a REGISTRATION REQUEST of this kind in an INITIAL UE MESSAGE.
    Register(RegistrationKind),
    /// Send a DEREGISTRATION REQUEST (UE originating, not switch-off).
    Deregister,
    /// Send a PDU SESSION ESTABLISHMENT REQUEST for this PDU session ID in an UL NAS
    /// TRANSPORT.
    EstablishSession(u8),
    /// Send a PDU SESSION RELEASE REQUEST for this PDU session ID (skipped when the
    /// session was never established).
    ReleaseSession(u8),
    /// Send nothing: wait at a barrier until the runner resumes the UE.
    Hold(HoldPoint),
}

impl Step {
    /// The procedure the step starts (none for a hold).
    pub fn procedure(self) -> Option<Procedure> {
        match self {
            Step::Register(RegistrationKind::Initial) => Some(Procedure::Registration),
            Step::Register(_) => Some(Procedure::Reregistration),
            Step::Deregister => Some(Procedure::Deregistration),
            Step::EstablishSession(_) => Some(Procedure::SessionEstablishment),
            Step::ReleaseSession(_) => Some(Procedure::SessionRelease),
            Step::Hold(_) => None,
        }
    }
}

/// The label of [`FailureCause::AmfLost`], as the report and the outage list give it.
pub const AMF_LOST: &str = "AMF lost";

/// Why a procedure failed; [`FailureCause::label`] is the key of the report's failure table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureCause {
    /// REGISTRATION REJECT with this 5GMM cause.
    Rejected(FiveGmmCause),
    /// AUTHENTICATION REJECT.
    AuthenticationRejected,
    /// The UE sent SECURITY MODE REJECT with this cause.
    SecurityModeRejected(FiveGmmCause),
    /// 5GMM STATUS from the network.
    Status(FiveGmmCause),
    /// The network deregistered the UE while it was registering.
    DeregisteredByNetwork,
    /// UE CONTEXT RELEASE COMMAND before the procedure ended, with the NGAP cause.
    Released(String),
    /// ERROR INDICATION about the UE, with the NGAP cause.
    ErrorIndication(String),
    /// PDU SESSION ESTABLISHMENT REJECT with this 5GSM cause (or the 5GMM cause of a DL
    /// NAS TRANSPORT that could not route the request, as the ran crate reports both).
    SessionRejected(crate::ue::SessionRefusal),
    /// The gNB could not set up the session's resources, with the NGAP cause.
    ResourceSetupFailed(String),
    /// No answer within the timeout.
    Timeout,
    /// The generator could not send (SCTP, NAS or NGAP encoding).
    Local(String),
    /// The SCTP association of the UE's gNB went down while the procedure was under way
    /// (TS 38.413 §8.7.1: the UE-associated logical NG-connections went with it).
    AmfLost,
}

impl FailureCause {
    /// A short stable label.
    pub fn label(&self) -> String {
        match self {
            FailureCause::Rejected(c) => format!("registration reject {c}"),
            FailureCause::AuthenticationRejected => "authentication reject".into(),
            FailureCause::SecurityModeRejected(c) => format!("security mode reject {c}"),
            FailureCause::Status(c) => format!("5GMM status {c}"),
            FailureCause::DeregisteredByNetwork => "deregistered by the network".into(),
            FailureCause::Released(c) => format!("N2 released early: {c}"),
            FailureCause::ErrorIndication(c) => format!("error indication: {c}"),
            FailureCause::SessionRejected(c) => format!("session reject {c}"),
            FailureCause::ResourceSetupFailed(c) => format!("resource setup failed: {c}"),
            FailureCause::Timeout => "timeout".into(),
            FailureCause::Local(c) => format!("local: {c}"),
            FailureCause::AmfLost => AMF_LOST.into(),
        }
    }

    /// Whether the run goes on after it: a session the network refused is the
    /// network's answer, not a broken UE, so the UE carries on with its other sessions
    /// and de-registers (and the run counts as failed at its end).
    fn is_soft(&self) -> bool {
        matches!(
            self,
            FailureCause::SessionRejected(_) | FailureCause::ResourceSetupFailed(_)
        )
    }
}

/// What the driver is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    /// What the UE made of a downlink NAS message (after the runner sent its answer).
    Ue(&'a UeEvent),
    /// UE CONTEXT RELEASE COMMAND (already answered by the gNB), with its cause.
    Released(String),
    /// ERROR INDICATION naming this UE, with its cause.
    ErrorIndication(String),
    /// The gNB set up the resources of this PDU session (its response sent).
    SessionSetup(u8),
    /// The gNB could not set up this PDU session, with the NGAP cause.
    SessionSetupFailed(u8, String),
    /// The gNB holds no resources of this PDU session any more (released on command,
    /// or never set up).
    SessionReleased(u8),
    /// The barrier the UE holds at was lifted.
    Resume,
    /// The runner could not send the step's message.
    SendFailed(String),
    /// The association of the UE's gNB is gone: the run ends now, whatever it was doing.
    AmfLost,
    /// REGISTRATION REJECT with #22 Congestion and this T3346 (TS 24.501 §5.5.1.2.5): the
    /// UE may register again once it has run out (§5.3.9).
    Congestion(Duration),
    /// The deadline of [`Driver::deadline`] may have passed.
    Tick,
}

/// What the driver made of an input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reaction {
    /// A procedure ended successfully, with its latency.
    pub completed: Option<(Procedure, Duration)>,
    /// A procedure failed.
    pub failed: Option<(Procedure, FailureCause)>,
    /// The runner should start this step now.
    pub start: Option<Step>,
    /// The run is over (successfully unless `failed` or `degraded`): free the slot, drop
    /// N2 state.
    pub finished: bool,
    /// With `finished`: a procedure of the run failed earlier without ending it (a
    /// session rejected), so the run is not a success.
    pub degraded: bool,
    /// DEREGISTRATION ACCEPT came but no UE CONTEXT RELEASE COMMAND followed in time.
    pub release_missing: bool,
    /// The registration was rejected with #22 and this T3346: the UE waits it out, then
    /// registers again (the step comes back in `start` then, with `retried`).
    pub backed_off: Option<Duration>,
    /// The step in `start` is a registration sent again after its T3346 ran out.
    pub retried: bool,
    /// With `finished`: the run never started, its gNB shed it (AMF overload).
    pub shed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running {
        procedure: Procedure,
        started: Instant,
    },
    Holding(HoldPoint),
    AwaitRelease,
    /// T3346 runs (TS 24.501 §5.3.9): the step is sent again at `until`.
    BackOff {
        until: Instant,
    },
    /// The gNB shed the run's first signalling connection: it ends at `until`.
    Shed {
        until: Instant,
    },
    Finished,
}

/// One UE's run.
#[derive(Debug, Clone)]
pub struct Driver {
    steps: Arc<[Step]>,
    current: usize,
    phase: Phase,
    deadline: Instant,
    timeout: Duration,
    /// Bit `n` set: PDU session `n` is established (and not yet released).
    established: u16,
    /// The session step under way: the UE's half is done.
    ue_done: bool,
    /// The session step under way: the gNB's half is done.
    gnb_done: bool,
    /// A procedure failed without ending the run.
    degraded: bool,
    /// Registrations left to send again after a #22 back-off.
    congestion_retries: u32,
}

impl Driver {
    /// A run of `steps` starting now: the runner executes the returned first step.
    pub fn start(steps: Arc<[Step]>, now: Instant, timeout: Duration) -> (Self, Step) {
        // Every run has at least one step.
        let first = steps
            .first()
            .copied()
            .unwrap_or(Step::Register(RegistrationKind::Initial));
        let mut d = Driver {
            steps,
            current: 0,
            phase: Phase::Finished,
            deadline: now + timeout,
            timeout,
            established: 0,
            ue_done: false,
            gnb_done: false,
            degraded: false,
            congestion_retries: DEFAULT_CONGESTION_RETRIES,
        };
        d.enter(first, now);
        (d, first)
    }

    /// A run whose gNB shed its first signalling connection (AMF overload, TS 38.413
    /// §8.7.6.2): nothing is sent; it ends at `now + wait` with [`Reaction::shed`].
    pub fn shed(steps: Arc<[Step]>, now: Instant, wait: Duration) -> Self {
        Driver {
            steps,
            current: 0,
            phase: Phase::Shed { until: now + wait },
            deadline: now + wait,
            timeout: wait,
            established: 0,
            ue_done: false,
            gnb_done: false,
            degraded: false,
            congestion_retries: 0,
        }
    }

    /// How many times this run registers again after a #22 back-off.
    pub fn set_congestion_retries(&mut self, n: u32) {
        self.congestion_retries = n;
    }

    /// When [`Input::Tick`] is due, unless the run is over or holds at a barrier.
    pub fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Finished | Phase::Holding(_) => None,
            Phase::BackOff { until } | Phase::Shed { until } => Some(until),
            _ => Some(self.deadline),
        }
    }

    /// The barrier the UE waits at, if any.
    pub fn holding(&self) -> Option<HoldPoint> {
        match self.phase {
            Phase::Holding(p) => Some(p),
            _ => None,
        }
    }

    /// The procedure under way, if any.
    pub fn procedure(&self) -> Option<Procedure> {
        match self.phase {
            Phase::Running { procedure, .. } => Some(procedure),
            _ => None,
        }
    }

    /// Whether the run is over.
    #[cfg(test)]
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// The step under way (or last run).
    #[cfg(test)]
    pub fn step(&self) -> Option<Step> {
        self.steps.get(self.current).copied()
    }

    fn enter(&mut self, step: Step, now: Instant) {
        self.ue_done = false;
        self.gnb_done = false;
        self.deadline = now + self.timeout;
        self.phase = match step.procedure() {
            Some(procedure) => Phase::Running {
                procedure,
                started: now,
            },
            None => match step {
                Step::Hold(p) => Phase::Holding(p),
                // Only holds have no procedure.
                _ => Phase::Finished,
            },
        };
    }

    /// Feeds one input.
    pub fn handle(&mut self, now: Instant, input: Input<'_>) -> Reaction {
        let mut r = Reaction::default();
        match self.phase {
            Phase::Finished => {}
            Phase::Running { procedure, started } => {
                let step = self.steps.get(self.current).copied();
                let outcome = match (procedure, step) {
                    (Procedure::Registration | Procedure::Reregistration, _) => {
                        on_registering(&input)
                    }
                    (Procedure::Deregistration, _) => on_deregistering(&input),
                    (Procedure::SessionEstablishment, Some(Step::EstablishSession(id))) => {
                        self.on_establishing(id, &input)
                    }
                    (Procedure::SessionRelease, Some(Step::ReleaseSession(id))) => {
                        self.on_releasing(id, &input)
                    }
                    // A session procedure always runs its own step.
                    _ => common(&input),
                };
                let outcome = match (outcome, &input) {
                    (None, Input::Tick) if now >= self.deadline => Some(Err(FailureCause::Timeout)),
                    // TS 24.501 §5.5.1.2.5, §5.3.9: wait out T3346, then register again.
                    (None, Input::Congestion(t3346)) if self.congestion_retries > 0 => {
                        self.congestion_retries -= 1;
                        self.phase = Phase::BackOff {
                            until: now + *t3346,
                        };
                        r.backed_off = Some(*t3346);
                        return r;
                    }
                    (None, Input::Congestion(_)) => {
                        Some(Err(FailureCause::Rejected(FiveGmmCause::Congestion)))
                    }
                    (o, _) => o,
                };
                match outcome {
                    None => {}
                    Some(Ok(())) => {
                        r.completed = Some((procedure, now.saturating_duration_since(started)));
                        if procedure == Procedure::Deregistration {
                            self.phase = Phase::AwaitRelease;
                            self.deadline = now + RELEASE_WAIT;
                        } else {
                            self.advance(now, &mut r);
                        }
                    }
                    Some(Err(cause)) if cause.is_soft() => {
                        r.failed = Some((procedure, cause));
                        self.degraded = true;
                        self.advance(now, &mut r);
                    }
                    Some(Err(cause)) => {
                        r.failed = Some((procedure, cause));
                        r.finished = true;
                        self.phase = Phase::Finished;
                    }
                }
            }
            Phase::Holding(_) => {
                // Anything that went wrong meanwhile shows when the next step sends; a lost
                // AMF took the UE's sessions and registration with it, so the run is over.
                if input == Input::Resume {
                    self.advance(now, &mut r);
                } else if input == Input::AmfLost {
                    self.phase = Phase::Finished;
                    r.finished = true;
                    r.degraded = true;
                }
            }
            Phase::BackOff { until } => {
                // The release of the rejected connection and the like change nothing.
                if input == Input::Tick && now >= until {
                    if let Some(step) = self.steps.get(self.current).copied() {
                        self.enter(step, now);
                        r.start = Some(step);
                        r.retried = true;
                    }
                }
            }
            Phase::Shed { until } => {
                if input == Input::Tick && now >= until {
                    self.phase = Phase::Finished;
                    r.finished = true;
                    r.shed = true;
                }
            }
            Phase::AwaitRelease => match input {
                // The release would have ended the N2 connection the association took.
                Input::Released(_) | Input::AmfLost => self.advance(now, &mut r),
                Input::Tick if now >= self.deadline => {
                    r.release_missing = true;
                    self.advance(now, &mut r);
                }
                _ => {}
            },
        }
        r
    }

    fn advance(&mut self, now: Instant, r: &mut Reaction) {
        loop {
            self.current += 1;
            match self.steps.get(self.current).copied() {
                // A session that never came up has nothing to release.
                Some(Step::ReleaseSession(id)) if !self.is_established(id) => continue,
                Some(step) => {
                    self.enter(step, now);
                    r.start = Some(step);
                }
                None => {
                    self.phase = Phase::Finished;
                    r.finished = true;
                    r.degraded = self.degraded;
                }
            }
            return;
        }
    }

    fn is_established(&self, id: u8) -> bool {
        id < 16 && self.established & (1 << id) != 0
    }

    /// TS 24.501 §6.4.1.2-3 and TS 38.413 §8.2.1: the session is up once the UE has the
    /// accept and the gNB has set up its resources (the accept rides in the setup
    /// request, so both usually come in one NGAP message).
    fn on_establishing(&mut self, id: u8, input: &Input<'_>) -> Option<Result<(), FailureCause>> {
        match input {
            Input::Ue(UeEvent::PduSessionEstablished { pdu_session_id, .. })
                if *pdu_session_id == id =>
            {
                self.ue_done = true;
            }
            Input::SessionSetup(s) if *s == id => self.gnb_done = true,
            Input::Ue(UeEvent::PduSessionRejected {
                pdu_session_id,
                cause,
            }) if *pdu_session_id == id => {
                return Some(Err(FailureCause::SessionRejected(*cause)));
            }
            Input::SessionSetupFailed(s, cause) if *s == id => {
                return Some(Err(FailureCause::ResourceSetupFailed(cause.clone())));
            }
            other => return nas_ended(other),
        }
        self.both_done(id, true)
    }

    /// TS 24.501 §6.4.3.2-3 and TS 38.413 §8.2.2: the session is gone once the UE has
    /// handled the RELEASE COMMAND (its COMPLETE sent) and the gNB holds no resources.
    fn on_releasing(&mut self, id: u8, input: &Input<'_>) -> Option<Result<(), FailureCause>> {
        match input {
            Input::Ue(UeEvent::PduSessionReleased { pdu_session_id, .. })
                if *pdu_session_id == id =>
            {
                self.ue_done = true;
            }
            Input::SessionReleased(s) if *s == id => self.gnb_done = true,
            // TS 24.501 §6.4.3.6 e: the AMF could not forward the release request (its 5GSM
            // message back with 5GMM #90): the procedure is over, not to be waited out.
            Input::Ue(UeEvent::PduSessionRejected {
                pdu_session_id,
                cause,
            }) if *pdu_session_id == id => {
                if id < 16 {
                    self.established &= !(1 << id);
                }
                return Some(Err(FailureCause::SessionRejected(*cause)));
            }
            other => return nas_ended(other),
        }
        self.both_done(id, false)
    }

    /// A session step ends once the UE and the gNB have both done their part; the
    /// session is then held (`up`) or gone.
    fn both_done(&mut self, id: u8, up: bool) -> Option<Result<(), FailureCause>> {
        if !(self.ue_done && self.gnb_done) {
            return None;
        }
        if id < 16 {
            if up {
                self.established |= 1 << id;
            } else {
                self.established &= !(1 << id);
            }
        }
        Some(Ok(()))
    }
}

/// TS 24.501 §5.5.1.2.4-5: accept ends the procedure (its REGISTRATION COMPLETE, if any,
/// was sent before the runner reported the event); a reject, or anything that ends the
/// UE's NAS context, fails it. AUTHENTICATION FAILURE is not final: the network may
/// resynchronise and retry (TS 33.102 §6.3.5).
fn on_registering(input: &Input<'_>) -> Option<Result<(), FailureCause>> {
    match input {
        Input::Ue(UeEvent::Registered) => Some(Ok(())),
        Input::Ue(UeEvent::RegistrationRejected(c)) => Some(Err(FailureCause::Rejected(*c))),
        Input::Ue(UeEvent::AuthenticationRejected) => {
            Some(Err(FailureCause::AuthenticationRejected))
        }
        Input::Ue(UeEvent::SecurityModeRejected(c)) => {
            Some(Err(FailureCause::SecurityModeRejected(*c)))
        }
        other => nas_ended(other),
    }
}

/// TS 24.501 §5.5.2.2.2: DEREGISTRATION ACCEPT ends it; the N2 release is expected after.
fn on_deregistering(input: &Input<'_>) -> Option<Result<(), FailureCause>> {
    match input {
        Input::Ue(UeEvent::Deregistered) => Some(Ok(())),
        Input::Ue(UeEvent::Status(c)) => Some(Err(FailureCause::Status(*c))),
        other => common(other),
    }
}

/// What fails a step that needs the UE registered: a 5GMM STATUS, or the network
/// deregistering the UE (TS 24.501 §5.5.2.3), beside what fails every step.
fn nas_ended(input: &Input<'_>) -> Option<Result<(), FailureCause>> {
    match input {
        Input::Ue(UeEvent::Status(c)) => Some(Err(FailureCause::Status(*c))),
        Input::Ue(UeEvent::Deregistered) => Some(Err(FailureCause::DeregisteredByNetwork)),
        other => common(other),
    }
}

fn common(input: &Input<'_>) -> Option<Result<(), FailureCause>> {
    match input {
        Input::Released(c) => Some(Err(FailureCause::Released(c.clone()))),
        Input::ErrorIndication(c) => Some(Err(FailureCause::ErrorIndication(c.clone()))),
        Input::SendFailed(c) => Some(Err(FailureCause::Local(c.clone()))),
        Input::AmfLost => Some(Err(FailureCause::AmfLost)),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(5);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn start(mode: Mode, t0: Instant) -> (Driver, Step) {
        Driver::start(RunShape::registration(mode).steps().unwrap().into(), t0, T)
    }

    #[test]
    fn register_deregister_measures_both_and_waits_for_release() {
        let t0 = Instant::now();
        let (mut d, first) = start(Mode::RegisterDeregister, t0);
        assert_eq!(first, Step::Register(RegistrationKind::Initial));
        // Intermediate events end nothing.
        let r = d.handle(t0 + ms(1), Input::Ue(&UeEvent::Authenticated));
        assert_eq!(r, Reaction::default());
        let r = d.handle(t0 + ms(2), Input::Ue(&UeEvent::SecurityModeCompleted));
        assert_eq!(r, Reaction::default());
        let r = d.handle(t0 + ms(7), Input::Ue(&UeEvent::Registered));
        assert_eq!(r.completed, Some((Procedure::Registration, ms(7))));
        assert_eq!(r.start, Some(Step::Deregister));
        assert!(!r.finished);
        let r = d.handle(t0 + ms(10), Input::Ue(&UeEvent::Deregistered));
        assert_eq!(r.completed, Some((Procedure::Deregistration, ms(3))));
        assert_eq!(r.start, None);
        assert!(!r.finished, "the slot stays busy until N2 is released");
        let r = d.handle(t0 + ms(11), Input::Released("nas: deregister".into()));
        assert!(r.finished);
        assert!(r.failed.is_none() && !r.release_missing);
        assert!(d.is_finished());
        assert_eq!(d.deadline(), None);
        // Late input after the end is ignored.
        let r = d.handle(t0 + ms(12), Input::ErrorIndication("x".into()));
        assert_eq!(r, Reaction::default());
    }

    #[test]
    fn reregister_runs_four_steps_in_order() {
        let t0 = Instant::now();
        let (mut d, first) = start(Mode::Reregister, t0);
        let mut steps = vec![first];
        let mut done = Vec::new();
        for i in 1..=20u64 {
            let now = t0 + ms(i);
            let input = match d.step().unwrap() {
                Step::Register(_) => Input::Ue(&UeEvent::Registered),
                Step::Deregister => Input::Ue(&UeEvent::Deregistered),
                other => panic!("{other:?} in a registration mode"),
            };
            let mut r = d.handle(now, input);
            if let Some((p, _)) = r.completed {
                done.push(p);
            }
            if r.start.is_none() && !r.finished {
                r = d.handle(now, Input::Released("ok".into()));
                assert_eq!(r.completed, None);
            }
            steps.extend(r.start);
            if r.finished {
                break;
            }
        }
        assert_eq!(
            steps,
            vec![
                Step::Register(RegistrationKind::Initial),
                Step::Deregister,
                Step::Register(RegistrationKind::Mobility),
                Step::Deregister
            ]
        );
        assert_eq!(
            done,
            vec![
                Procedure::Registration,
                Procedure::Deregistration,
                Procedure::Reregistration,
                Procedure::Deregistration
            ]
        );
        assert!(d.is_finished());
    }

    #[test]
    fn reject_timeout_and_error_indication_fail_the_run() {
        let t0 = Instant::now();
        let (mut d, _) = start(Mode::RegisterDeregister, t0);
        let r = d.handle(
            t0,
            Input::Ue(&UeEvent::RegistrationRejected(FiveGmmCause::IllegalUe)),
        );
        assert_eq!(
            r.failed,
            Some((
                Procedure::Registration,
                FailureCause::Rejected(FiveGmmCause::IllegalUe)
            ))
        );
        assert!(r.finished && r.start.is_none());

        let (mut d, _) = start(Mode::Register, t0);
        assert_eq!(d.deadline(), Some(t0 + T));
        // A tick before the deadline does nothing; after it, the procedure times out.
        assert_eq!(d.handle(t0 + ms(100), Input::Tick), Reaction::default());
        let r = d.handle(t0 + T, Input::Tick);
        assert_eq!(
            r.failed,
            Some((Procedure::Registration, FailureCause::Timeout))
        );
        assert_eq!(r.failed.unwrap().1.label(), "timeout");

        let (mut d, _) = start(Mode::RegisterDeregister, t0);
        d.handle(t0 + ms(1), Input::Ue(&UeEvent::Registered));
        let r = d.handle(
            t0 + ms(2),
            Input::ErrorIndication("radio: unspecified".into()),
        );
        assert_eq!(
            r.failed.unwrap(),
            (
                Procedure::Deregistration,
                FailureCause::ErrorIndication("radio: unspecified".into())
            )
        );
    }

    #[test]
    fn release_during_registration_fails_but_missing_release_after_accept_does_not() {
        let t0 = Instant::now();
        let (mut d, _) = start(Mode::Register, t0);
        let r = d.handle(t0, Input::Released("radio: unspecified".into()));
        assert_eq!(r.failed.unwrap().0, Procedure::Registration);

        let (mut d, _) = start(Mode::RegisterDeregister, t0);
        d.handle(t0, Input::Ue(&UeEvent::Registered));
        let r = d.handle(t0 + ms(1), Input::Ue(&UeEvent::Deregistered));
        assert_eq!(r.completed.unwrap().0, Procedure::Deregistration);
        assert_eq!(d.deadline(), Some(t0 + ms(1) + RELEASE_WAIT));
        let r = d.handle(t0 + ms(1) + RELEASE_WAIT, Input::Tick);
        assert!(r.finished && r.release_missing && r.failed.is_none());
    }

    #[test]
    fn authentication_failure_is_not_final_but_send_failure_is() {
        let t0 = Instant::now();
        let (mut d, _) = start(Mode::Register, t0);
        let r = d.handle(
            t0,
            Input::Ue(&UeEvent::AuthenticationFailed(FiveGmmCause::SynchFailure)),
        );
        assert_eq!(r, Reaction::default());
        let r = d.handle(t0, Input::SendFailed("SCTP: send buffer full".into()));
        assert_eq!(r.failed.unwrap().1.label(), "local: SCTP: send buffer full");
    }

    #[test]
    fn a_lost_amf_ends_every_phase_at_once() {
        let t0 = Instant::now();
        // Registering: failed now, not at the deadline.
        let (mut d, _) = start(Mode::RegisterDeregister, t0);
        let r = d.handle(t0 + ms(1), Input::AmfLost);
        assert_eq!(
            r.failed,
            Some((Procedure::Registration, FailureCause::AmfLost))
        );
        assert!(r.finished);
        assert_eq!(r.failed.unwrap().1.label(), AMF_LOST);
        // Holding at a barrier: no procedure to blame, but the run is over and not a success.
        let (mut d, _) = Driver::start(sessions(1, false), t0, T);
        d.handle(t0, Input::Ue(&UeEvent::Registered));
        d.handle(t0, Input::Ue(&established(1)));
        d.handle(t0, Input::SessionSetup(1));
        assert_eq!(d.holding(), Some(HoldPoint::SessionsUp));
        let r = d.handle(t0 + ms(2), Input::AmfLost);
        assert!(r.finished && r.degraded && r.failed.is_none());
        assert_eq!(d.deadline(), None);
        // Waiting for the release after DEREGISTRATION ACCEPT: the run is done, and fine.
        let (mut d, _) = start(Mode::RegisterDeregister, t0);
        d.handle(t0, Input::Ue(&UeEvent::Registered));
        d.handle(t0, Input::Ue(&UeEvent::Deregistered));
        let r = d.handle(t0 + ms(3), Input::AmfLost);
        assert!(r.finished && !r.degraded && r.failed.is_none() && !r.release_missing);
    }

    #[test]
    fn steps_map_to_procedures() {
        assert_eq!(
            Step::Register(RegistrationKind::Mobility).procedure(),
            Some(Procedure::Reregistration)
        );
        assert_eq!(Step::Hold(HoldPoint::SessionsUp).procedure(), None);
        assert_eq!(Mode::Register.steps().len(), 1);
        for (i, p) in Procedure::ALL.iter().enumerate() {
            assert_eq!(p.index(), i);
        }
    }

    fn sessions(n: u8, phase_holds: bool) -> Arc<[Step]> {
        RunShape {
            mode: Mode::RegisterDeregister,
            pdu_sessions: n,
            phase_holds,
        }
        .steps()
        .unwrap()
        .into()
    }

    fn established(id: u8) -> UeEvent {
        UeEvent::PduSessionEstablished {
            pdu_session_id: id,
            ue_ip: Some(std::net::Ipv4Addr::new(10, 45, 0, id)),
        }
    }

    fn not_forwarded() -> crate::ue::SessionRefusal {
        crate::ue::SessionRefusal::NotForwarded(proto::nas::FiveGmmCause::PayloadNotForwarded)
    }

    fn unknown_dnn() -> crate::ue::SessionRefusal {
        crate::ue::SessionRefusal::Sm(proto::nas::FiveGsmCause::MissingOrUnknownDnn)
    }

    fn released(id: u8) -> UeEvent {
        UeEvent::PduSessionReleased {
            pdu_session_id: id,
            cause: 36,
        }
    }

    #[test]
    fn session_steps_are_register_establish_hold_release_deregister() {
        let s = sessions(2, false);
        assert_eq!(
            &s[..],
            &[
                Step::Register(RegistrationKind::Initial),
                Step::EstablishSession(1),
                Step::EstablishSession(2),
                Step::Hold(HoldPoint::SessionsUp),
                Step::ReleaseSession(1),
                Step::ReleaseSession(2),
                Step::Deregister,
            ]
        );
        let s = sessions(1, true);
        assert_eq!(s[1], Step::Hold(HoldPoint::Registered));
        assert_eq!(s[s.len() - 2], Step::Hold(HoldPoint::SessionsReleased));
        let shape = |mode, n| RunShape {
            mode,
            pdu_sessions: n,
            phase_holds: false,
        };
        assert!(shape(Mode::RegisterDeregister, 15).steps().is_ok());
        assert!(shape(Mode::RegisterDeregister, 16).steps().is_err());
        assert!(shape(Mode::Reregister, 1).steps().is_err());
        assert_eq!(shape(Mode::Register, 0).steps().unwrap().len(), 1);
        assert_eq!(
            shape(Mode::RegisterDeregister, 2).name(),
            "register-2-sessions-deregister"
        );
        assert_eq!(shape(Mode::Register, 0).name(), "register");
    }

    #[test]
    fn establishment_needs_the_accept_and_the_resource_setup() {
        let t0 = Instant::now();
        let (mut d, _) = Driver::start(sessions(1, false), t0, T);
        let r = d.handle(t0 + ms(5), Input::Ue(&UeEvent::Registered));
        assert_eq!(r.start, Some(Step::EstablishSession(1)));
        // The accept alone, or a setup of another session, ends nothing.
        assert_eq!(
            d.handle(t0 + ms(6), Input::Ue(&established(1))),
            Reaction::default()
        );
        assert_eq!(
            d.handle(t0 + ms(6), Input::SessionSetup(2)),
            Reaction::default()
        );
        let r = d.handle(t0 + ms(8), Input::SessionSetup(1));
        assert_eq!(r.completed, Some((Procedure::SessionEstablishment, ms(3))));
        assert_eq!(r.start, Some(Step::Hold(HoldPoint::SessionsUp)));
        assert_eq!(d.holding(), Some(HoldPoint::SessionsUp));
        // No timeout while holding, and nothing but Resume moves it.
        assert_eq!(d.deadline(), None);
        assert_eq!(d.handle(t0 + T * 10, Input::Tick), Reaction::default());
        let r = d.handle(t0 + ms(100), Input::Resume);
        assert_eq!(r.start, Some(Step::ReleaseSession(1)));
        assert_eq!(d.deadline(), Some(t0 + ms(100) + T));
        // Release: the gNB's half first this time.
        assert_eq!(
            d.handle(t0 + ms(101), Input::SessionReleased(1)),
            Reaction::default()
        );
        let r = d.handle(t0 + ms(104), Input::Ue(&released(1)));
        assert_eq!(r.completed, Some((Procedure::SessionRelease, ms(4))));
        assert_eq!(r.start, Some(Step::Deregister));
        let r = d.handle(t0 + ms(105), Input::Ue(&UeEvent::Deregistered));
        assert_eq!(r.completed.unwrap().0, Procedure::Deregistration);
        let r = d.handle(t0 + ms(106), Input::Released("nas".into()));
        assert!(r.finished && !r.degraded && r.failed.is_none());
    }

    #[test]
    fn a_release_request_sent_back_with_cause_90_fails_the_release_at_once() {
        let t0 = Instant::now();
        let (mut d, _) = Driver::start(sessions(1, false), t0, T);
        d.handle(t0, Input::Ue(&UeEvent::Registered));
        d.handle(t0 + ms(1), Input::SessionSetup(1));
        d.handle(t0 + ms(1), Input::Ue(&established(1)));
        let r = d.handle(t0 + ms(2), Input::Resume);
        assert_eq!(r.start, Some(Step::ReleaseSession(1)));
        let r = d.handle(
            t0 + ms(3),
            Input::Ue(&UeEvent::PduSessionRejected {
                pdu_session_id: 1,
                cause: not_forwarded(),
            }),
        );
        assert_eq!(
            r.failed,
            Some((
                Procedure::SessionRelease,
                FailureCause::SessionRejected(not_forwarded())
            ))
        );
        assert_eq!(
            r.failed.as_ref().unwrap().1.label(),
            "session reject not forwarded, 5GMM cause #90 (Payload was not forwarded)"
        );
        assert_eq!(r.start, Some(Step::Deregister));
    }

    #[test]
    fn a_rejected_session_is_counted_skipped_at_release_and_fails_the_run_at_its_end() {
        let t0 = Instant::now();
        let (mut d, _) = Driver::start(sessions(2, false), t0, T);
        d.handle(t0, Input::Ue(&UeEvent::Registered));
        let r = d.handle(
            t0 + ms(1),
            Input::Ue(&UeEvent::PduSessionRejected {
                pdu_session_id: 1,
                cause: unknown_dnn(),
            }),
        );
        assert_eq!(
            r.failed,
            Some((
                Procedure::SessionEstablishment,
                FailureCause::SessionRejected(unknown_dnn())
            ))
        );
        assert_eq!(
            r.failed.as_ref().unwrap().1.label(),
            "session reject 5GSM cause #27 (Missing or unknown DNN)"
        );
        assert!(!r.finished);
        assert_eq!(r.start, Some(Step::EstablishSession(2)));
        d.handle(t0 + ms(2), Input::SessionSetup(2));
        let r = d.handle(t0 + ms(2), Input::Ue(&established(2)));
        assert_eq!(r.start, Some(Step::Hold(HoldPoint::SessionsUp)));
        // Session 1 never came up: only session 2 is released.
        let r = d.handle(t0 + ms(3), Input::Resume);
        assert_eq!(r.start, Some(Step::ReleaseSession(2)));
        d.handle(t0 + ms(4), Input::Ue(&released(2)));
        let r = d.handle(t0 + ms(4), Input::SessionReleased(2));
        assert_eq!(r.start, Some(Step::Deregister));
        d.handle(t0 + ms(5), Input::Ue(&UeEvent::Deregistered));
        let r = d.handle(t0 + ms(6), Input::Released("nas".into()));
        assert!(r.finished && r.degraded);
    }

    #[test]
    fn resource_setup_failure_is_soft_but_timeout_and_release_end_the_run() {
        let t0 = Instant::now();
        let (mut d, _) = Driver::start(sessions(1, false), t0, T);
        d.handle(t0, Input::Ue(&UeEvent::Registered));
        let r = d.handle(t0, Input::SessionSetupFailed(1, "radio: x".into()));
        assert_eq!(
            r.failed.unwrap().1.label(),
            "resource setup failed: radio: x"
        );
        assert_eq!(r.start, Some(Step::Hold(HoldPoint::SessionsUp)));
        // Nothing to release after the hold: straight to de-registration.
        let r = d.handle(t0, Input::Resume);
        assert_eq!(r.start, Some(Step::Deregister));

        let (mut d, _) = Driver::start(sessions(1, false), t0, T);
        d.handle(t0, Input::Ue(&UeEvent::Registered));
        d.handle(t0 + ms(1), Input::Ue(&established(1)));
        let r = d.handle(t0 + T, Input::Tick);
        assert_eq!(
            r.failed,
            Some((Procedure::SessionEstablishment, FailureCause::Timeout))
        );
        assert!(r.finished);

        let (mut d, _) = Driver::start(sessions(1, false), t0, T);
        d.handle(t0, Input::Ue(&UeEvent::Registered));
        d.handle(t0, Input::Ue(&established(1)));
        d.handle(t0, Input::SessionSetup(1));
        d.handle(t0, Input::Resume);
        let r = d.handle(t0 + ms(1), Input::Released("radio: x".into()));
        assert_eq!(r.failed.unwrap().0, Procedure::SessionRelease);
        assert!(r.finished);
    }

    #[test]
    fn phase_holds_wrap_the_establishments_and_releases() {
        let t0 = Instant::now();
        let (mut d, _) = Driver::start(sessions(1, true), t0, T);
        let r = d.handle(t0, Input::Ue(&UeEvent::Registered));
        assert_eq!(r.start, Some(Step::Hold(HoldPoint::Registered)));
        // Holding ignores what would fail a procedure; the next step will see it.
        assert_eq!(
            d.handle(t0, Input::SendFailed("x".into())),
            Reaction::default()
        );
        let r = d.handle(t0, Input::Resume);
        assert_eq!(r.start, Some(Step::EstablishSession(1)));
        d.handle(t0, Input::Ue(&established(1)));
        d.handle(t0, Input::SessionSetup(1));
        d.handle(t0, Input::Resume);
        d.handle(t0, Input::SessionReleased(1));
        let r = d.handle(t0, Input::Ue(&released(1)));
        assert_eq!(r.start, Some(Step::Hold(HoldPoint::SessionsReleased)));
        let r = d.handle(t0, Input::Resume);
        assert_eq!(r.start, Some(Step::Deregister));
        assert_eq!(d.step(), Some(Step::Deregister));
    }

    /// TS 24.501 §5.5.1.2.5, §5.3.9: a registration rejected with #22 and T3346 waits the
    /// back-off out (the release of the rejected connection meanwhile changes nothing),
    /// then registers again, measured from the new request; past its retries the reject
    /// fails the run.
    #[test]
    fn a_congestion_reject_backs_off_t3346_then_registers_again() {
        let t0 = Instant::now();
        let (mut d, _) = start(Mode::Register, t0);
        d.set_congestion_retries(1);
        let back_off = Duration::from_secs(30);
        let r = d.handle(t0 + ms(3), Input::Congestion(back_off));
        assert_eq!(r.backed_off, Some(back_off));
        assert!(r.failed.is_none() && !r.finished && r.start.is_none());
        assert_eq!(d.deadline(), Some(t0 + ms(3) + back_off));
        let r = d.handle(t0 + ms(4), Input::Released("nas: unspecified".into()));
        assert_eq!(r, Reaction::default());
        // Past the procedure's own timeout, but the back-off is not over: no timeout.
        let r = d.handle(t0 + T + ms(10), Input::Tick);
        assert_eq!(r, Reaction::default());
        let again = t0 + ms(3) + back_off;
        let r = d.handle(again, Input::Tick);
        assert_eq!(r.start, Some(Step::Register(RegistrationKind::Initial)));
        assert!(r.retried);
        assert_eq!(d.deadline(), Some(again + T));
        let r = d.handle(again + ms(9), Input::Ue(&UeEvent::Registered));
        assert_eq!(r.completed, Some((Procedure::Registration, ms(9))));
        assert!(r.finished && r.failed.is_none());

        // With its retry used up, the next reject fails the run.
        let (mut d, _) = start(Mode::Register, t0);
        d.set_congestion_retries(0);
        let r = d.handle(t0 + ms(1), Input::Congestion(back_off));
        assert_eq!(
            r.failed,
            Some((
                Procedure::Registration,
                FailureCause::Rejected(FiveGmmCause::Congestion)
            ))
        );
        assert!(r.finished && r.backed_off.is_none());
    }

    #[test]
    fn a_shed_run_sends_nothing_and_ends_after_its_wait() {
        let t0 = Instant::now();
        let steps: Arc<[Step]> = RunShape::registration(Mode::Register)
            .steps()
            .unwrap()
            .into();
        let mut d = Driver::shed(steps, t0, SHED_WAIT);
        assert_eq!(d.deadline(), Some(t0 + SHED_WAIT));
        assert_eq!(d.handle(t0 + ms(10), Input::Tick), Reaction::default());
        let r = d.handle(t0 + SHED_WAIT, Input::Tick);
        assert!(r.finished && r.shed && r.failed.is_none() && r.completed.is_none());
        assert!(d.is_finished());
    }
}
