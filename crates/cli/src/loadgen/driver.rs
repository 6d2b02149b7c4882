//! One UE's walk through the procedures of a run, as a sans-IO state machine.
//!
//! The runner owns the sockets, the [`ran::ue::Ue`] and the gNB's N2 side; the driver only
//! decides what comes next and when a procedure started, ended or failed. That keeps the
//! bookkeeping that the report rests on (what counts as done, where latency is measured)
//! testable without a network.

use std::time::{Duration, Instant};

use proto::nas::FiveGmmCause;
use ran::ue::{RegistrationKind, UeEvent};
use serde::Serialize;

/// After DEREGISTRATION ACCEPT, how long a UE waits for the AMF to release its N2 connection
/// (TS 24.501 §5.5.2.2.2: the AMF releases the signalling connection) before the runner drops
/// it locally and moves on.
pub(crate) const RELEASE_WAIT: Duration = Duration::from_secs(2);

/// What each UE does in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Mode {
    /// Initial registration only.
    Register,
    /// Initial registration, then UE-originating de-registration (not switch-off).
    RegisterDeregister,
    /// Register, deregister, mobility re-registration with the 5G-GUTI, deregister.
    Reregister,
}

impl Mode {
    /// The steps of one run.
    pub(crate) fn steps(self) -> &'static [Step] {
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
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Register => "register",
            Mode::RegisterDeregister => "register-deregister",
            Mode::Reregister => "reregister",
        }
    }
}

/// A procedure whose latency and outcome the report counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Procedure {
    /// Initial registration: INITIAL UE MESSAGE sent → REGISTRATION COMPLETE sent.
    Registration,
    /// UE-originating de-registration: request sent → DEREGISTRATION ACCEPT received.
    Deregistration,
    /// Mobility registration updating with the 5G-GUTI: request sent → accept (or the
    /// REGISTRATION COMPLETE that acknowledges a new 5G-GUTI) handled.
    Reregistration,
}

impl Procedure {
    /// Every procedure, in report order.
    pub(crate) const ALL: [Procedure; 3] = [
        Procedure::Registration,
        Procedure::Deregistration,
        Procedure::Reregistration,
    ];

    /// Index into per-procedure arrays.
    pub(crate) fn index(self) -> usize {
        match self {
            Procedure::Registration => 0,
            Procedure::Deregistration => 1,
            Procedure::Reregistration => 2,
        }
    }

    /// The report's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Procedure::Registration => "registration",
            Procedure::Deregistration => "deregistration",
            Procedure::Reregistration => "reregistration",
        }
    }
}

/// One thing the runner does for the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send a REGISTRATION REQUEST of this kind in an INITIAL UE MESSAGE.
    Register(RegistrationKind),
    /// Send a DEREGISTRATION REQUEST (UE originating, not switch-off).
    Deregister,
}

impl Step {
    /// The procedure the step starts.
    pub(crate) fn procedure(self) -> Procedure {
        match self {
            Step::Register(RegistrationKind::Initial) => Procedure::Registration,
            Step::Register(_) => Procedure::Reregistration,
            Step::Deregister => Procedure::Deregistration,
        }
    }
}

/// Why a procedure failed; [`FailureCause::label`] is the key of the report's failure table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FailureCause {
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
    /// No answer within the timeout.
    Timeout,
    /// The generator could not send (SCTP, NAS or NGAP encoding).
    Local(String),
}

impl FailureCause {
    /// A short stable label.
    pub(crate) fn label(&self) -> String {
        match self {
            FailureCause::Rejected(c) => format!("registration reject {c}"),
            FailureCause::AuthenticationRejected => "authentication reject".into(),
            FailureCause::SecurityModeRejected(c) => format!("security mode reject {c}"),
            FailureCause::Status(c) => format!("5GMM status {c}"),
            FailureCause::DeregisteredByNetwork => "deregistered by the network".into(),
            FailureCause::Released(c) => format!("N2 released early: {c}"),
            FailureCause::ErrorIndication(c) => format!("error indication: {c}"),
            FailureCause::Timeout => "timeout".into(),
            FailureCause::Local(c) => format!("local: {c}"),
        }
    }
}

/// What the driver is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input<'a> {
    /// What the UE made of a downlink NAS message (after the runner sent its answer).
    Ue(&'a UeEvent),
    /// UE CONTEXT RELEASE COMMAND (already answered by the gNB), with its cause.
    Released(String),
    /// ERROR INDICATION naming this UE, with its cause.
    ErrorIndication(String),
    /// The runner could not send the step's message.
    SendFailed(String),
    /// The deadline of [`Driver::deadline`] may have passed.
    Tick,
}

/// What the driver made of an input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reaction {
    /// A procedure ended successfully, with its latency.
    pub(crate) completed: Option<(Procedure, Duration)>,
    /// A procedure failed.
    pub(crate) failed: Option<(Procedure, FailureCause)>,
    /// The runner should start this step now.
    pub(crate) start: Option<Step>,
    /// The run is over (successfully unless `failed`): free the slot, drop N2 state.
    pub(crate) finished: bool,
    /// DEREGISTRATION ACCEPT came but no UE CONTEXT RELEASE COMMAND followed in time.
    pub(crate) release_missing: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running {
        procedure: Procedure,
        started: Instant,
    },
    AwaitRelease,
    Finished,
}

/// One UE's run.
#[derive(Debug, Clone)]
pub(crate) struct Driver {
    steps: &'static [Step],
    current: usize,
    phase: Phase,
    deadline: Instant,
    timeout: Duration,
}

impl Driver {
    /// A run of `mode` starting now: the runner executes the returned first step.
    pub(crate) fn start(mode: Mode, now: Instant, timeout: Duration) -> (Self, Step) {
        let steps = mode.steps();
        // Every mode has at least one step.
        let first = steps
            .first()
            .copied()
            .unwrap_or(Step::Register(RegistrationKind::Initial));
        let d = Driver {
            steps,
            current: 0,
            phase: Phase::Running {
                procedure: first.procedure(),
                started: now,
            },
            deadline: now + timeout,
            timeout,
        };
        (d, first)
    }

    /// When [`Input::Tick`] is due, unless the run is over.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        (self.phase != Phase::Finished).then_some(self.deadline)
    }

    /// Whether the run is over.
    #[cfg(test)]
    pub(crate) fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// The step under way (or last run).
    #[cfg(test)]
    pub(crate) fn step(&self) -> Option<Step> {
        self.steps.get(self.current).copied()
    }

    /// Feeds one input.
    pub(crate) fn handle(&mut self, now: Instant, input: Input<'_>) -> Reaction {
        let mut r = Reaction::default();
        match self.phase {
            Phase::Finished => {}
            Phase::Running { procedure, started } => {
                let outcome = match procedure {
                    Procedure::Registration | Procedure::Reregistration => on_registering(&input),
                    Procedure::Deregistration => on_deregistering(&input),
                };
                let outcome = match outcome {
                    None if input == Input::Tick && now >= self.deadline => {
                        Some(Err(FailureCause::Timeout))
                    }
                    o => o,
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
                    Some(Err(cause)) => {
                        r.failed = Some((procedure, cause));
                        r.finished = true;
                        self.phase = Phase::Finished;
                    }
                }
            }
            Phase::AwaitRelease => match input {
                Input::Released(_) => self.advance(now, &mut r),
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
        self.current += 1;
        match self.steps.get(self.current) {
            Some(&step) => {
                self.phase = Phase::Running {
                    procedure: step.procedure(),
                    started: now,
                };
                self.deadline = now + self.timeout;
                r.start = Some(step);
            }
            None => {
                self.phase = Phase::Finished;
                r.finished = true;
            }
        }
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
        Input::Ue(UeEvent::Status(c)) => Some(Err(FailureCause::Status(*c))),
        Input::Ue(UeEvent::Deregistered) => Some(Err(FailureCause::DeregisteredByNetwork)),
        other => common(other),
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

fn common(input: &Input<'_>) -> Option<Result<(), FailureCause>> {
    match input {
        Input::Released(c) => Some(Err(FailureCause::Released(c.clone()))),
        Input::ErrorIndication(c) => Some(Err(FailureCause::ErrorIndication(c.clone()))),
        Input::SendFailed(c) => Some(Err(FailureCause::Local(c.clone()))),
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

    #[test]
    fn register_deregister_measures_both_and_waits_for_release() {
        let t0 = Instant::now();
        let (mut d, first) = Driver::start(Mode::RegisterDeregister, t0, T);
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
        let (mut d, first) = Driver::start(Mode::Reregister, t0, T);
        let mut steps = vec![first];
        let mut done = Vec::new();
        for i in 1..=20u64 {
            let now = t0 + ms(i);
            let input = match d.step().unwrap() {
                Step::Register(_) => Input::Ue(&UeEvent::Registered),
                Step::Deregister => Input::Ue(&UeEvent::Deregistered),
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
        let (mut d, _) = Driver::start(Mode::RegisterDeregister, t0, T);
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

        let (mut d, _) = Driver::start(Mode::Register, t0, T);
        assert_eq!(d.deadline(), Some(t0 + T));
        // A tick before the deadline does nothing; after it, the procedure times out.
        assert_eq!(d.handle(t0 + ms(100), Input::Tick), Reaction::default());
        let r = d.handle(t0 + T, Input::Tick);
        assert_eq!(
            r.failed,
            Some((Procedure::Registration, FailureCause::Timeout))
        );
        assert_eq!(r.failed.unwrap().1.label(), "timeout");

        let (mut d, _) = Driver::start(Mode::RegisterDeregister, t0, T);
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
        let (mut d, _) = Driver::start(Mode::Register, t0, T);
        let r = d.handle(t0, Input::Released("radio: unspecified".into()));
        assert_eq!(r.failed.unwrap().0, Procedure::Registration);

        let (mut d, _) = Driver::start(Mode::RegisterDeregister, t0, T);
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
        let (mut d, _) = Driver::start(Mode::Register, t0, T);
        let r = d.handle(
            t0,
            Input::Ue(&UeEvent::AuthenticationFailed(FiveGmmCause::SynchFailure)),
        );
        assert_eq!(r, Reaction::default());
        let r = d.handle(t0, Input::SendFailed("SCTP: send buffer full".into()));
        assert_eq!(r.failed.unwrap().1.label(), "local: SCTP: send buffer full");
    }

    #[test]
    fn steps_map_to_procedures() {
        assert_eq!(
            Step::Register(RegistrationKind::Mobility).procedure(),
            Procedure::Reregistration
        );
        assert_eq!(Mode::Register.steps().len(), 1);
        for (i, p) in Procedure::ALL.iter().enumerate() {
            assert_eq!(p.index(), i);
        }
    }
}
