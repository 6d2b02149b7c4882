//! Surviving the loss of the AMF, as sans-IO bookkeeping the runner drives.
//!
//! TS 38.413 §8.7.1.1: NG Setup is the first NGAP procedure on a new TNL association, and a
//! lost association takes every UE-associated logical NG-connection with it. So when the
//! association of a set-up gNB goes (the AMF sent ABORT or SHUTDOWN, or our SCTP gave up on
//! it: RFC 9260 §8.1 retransmissions or heartbeats unanswered), the runner fails that gNB's
//! UEs at once with [`super::driver::AMF_LOST`], and each gNB reconnects on a [`Link`]: an
//! exponential backoff up to a cap, every attempt bounded in time, and NG Setup again before
//! any UE goes on. [`Outages`] keeps what the report shows of each outage: when it started,
//! how long it lasted and which UEs failed with it.
//!
//! Nothing here owns a socket or reads a clock: `now` comes in, deadlines go out.

use std::time::{Duration, Instant};

use serde::Serialize;

/// How long the first association may stay unanswered before the generator says that
/// nobody answers (the user probably forgot to start the core).
pub const NO_ANSWER_WARNING: Duration = Duration::from_secs(5);

/// The default of `--connect-timeout`: how long the generator waits for an AMF to answer,
/// at start and after losing it, before it gives up.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// The first reconnection waits this long after the loss.
pub const BACKOFF_BASE: Duration = Duration::from_millis(200);

/// Reconnections wait at most this long between attempts.
pub const BACKOFF_CAP: Duration = Duration::from_secs(5);

/// An attempt (INIT to NG SETUP RESPONSE) gets at least this long before it is abandoned;
/// longer backoffs give it their own length.
pub const ATTEMPT_MIN: Duration = Duration::from_secs(2);

/// The line printed when no AMF answers, in the words users search for.
pub fn no_answer_message(amf: &str) -> String {
    format!("no answer from AMF at {amf} (is it running?)")
}

/// The delay before reconnection attempt `attempt` (0-based) of gNB `key`: `BACKOFF_BASE ×
/// 2^attempt` up to [`BACKOFF_CAP`], spread over 75–125 % by a hash of the gNB and the
/// attempt, so that a thousand emulators do not knock in lockstep on an AMF that just came
/// back.
pub fn backoff(attempt: u32, key: u32) -> Duration {
    let full = BACKOFF_BASE
        .checked_mul(1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX))
        .unwrap_or(BACKOFF_CAP)
        .min(BACKOFF_CAP);
    // Fibonacci hashing: cheap and stable, no RNG needed.
    let h = (key ^ attempt.rotate_left(16)).wrapping_mul(0x9e37_79b9) >> 24;
    let spread = 0.75 + f64::from(h) / 512.0;
    full.mul_f64(spread).min(BACKOFF_CAP)
}

/// Where one gNB's association stands after it was set up once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Set up: UEs may run on it.
    Up,
    /// Lost: the next attempt starts at `next_try`.
    Waiting {
        /// When to connect again.
        next_try: Instant,
        /// Attempts made since the loss.
        attempt: u32,
    },
    /// An attempt is under way (INIT sent, or NG SETUP REQUEST): it is given up at
    /// `deadline`.
    Trying {
        /// When the attempt is abandoned.
        deadline: Instant,
        /// Attempts made since the loss, this one included.
        attempt: u32,
    },
}

impl Link {
    /// The association of gNB `key` was lost at `now`.
    pub fn lost(now: Instant, key: u32) -> Self {
        Link::Waiting {
            next_try: now + backoff(0, key),
            attempt: 0,
        }
    }

    /// Whether an attempt should start now.
    pub fn due(&self, now: Instant) -> bool {
        matches!(self, Link::Waiting { next_try, .. } if *next_try <= now)
    }

    /// Whether the attempt under way ran out of time.
    pub fn expired(&self, now: Instant) -> bool {
        matches!(self, Link::Trying { deadline, .. } if *deadline <= now)
    }

    /// An attempt starts at `now`.
    pub fn start(&mut self, now: Instant, key: u32) {
        let attempt = match *self {
            Link::Waiting { attempt, .. } | Link::Trying { attempt, .. } => attempt,
            Link::Up => 0,
        };
        *self = Link::Trying {
            deadline: now + backoff(attempt, key).max(ATTEMPT_MIN),
            attempt: attempt.saturating_add(1),
        };
    }

    /// The attempt under way failed (closed, refused, or out of time): wait, longer each
    /// time, then try again.
    pub fn failed(&mut self, now: Instant, key: u32) {
        let attempt = match *self {
            Link::Waiting { attempt, .. } | Link::Trying { attempt, .. } => attempt,
            Link::Up => 0,
        };
        *self = Link::Waiting {
            next_try: now + backoff(attempt, key),
            attempt,
        };
    }

    /// NG Setup succeeded again.
    pub fn up(&mut self) {
        *self = Link::Up;
    }

    /// Whether the gNB is being reconnected (lost and not yet set up again).
    pub fn is_down(&self) -> bool {
        !matches!(self, Link::Up)
    }

    /// The next instant the runner must look at this link.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match *self {
            Link::Up => None,
            Link::Waiting { next_try, .. } => Some(next_try),
            Link::Trying { deadline, .. } => Some(deadline),
        }
    }
}

/// A UE whose run the outage ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UeFailure {
    /// The UE.
    pub supi: String,
    /// The procedure under way (`registration`, ...), or `held at <barrier>` for a UE that
    /// waited at a barrier.
    pub procedure: String,
    /// Why it failed ([`super::driver::AMF_LOST`]).
    pub cause: String,
    /// From the loss of the association to the failure, ms: about zero, since the UE is
    /// failed when the loss is seen, not when its own timer runs out.
    pub after_ms: f64,
}

/// One outage as the report gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outage {
    /// When the first association went down, s from the start of the measured window.
    pub started_at_s: f64,
    /// How long until every lost gNB was set up again, s; `None` when the run ended (or gave
    /// up) first.
    pub duration_s: Option<f64>,
    /// Why the first association went down.
    pub cause: String,
    /// gNBs that lost their association in this outage.
    pub gnbs_lost: u32,
    /// Reconnection attempts made during it.
    pub reconnect_attempts: u64,
    /// gNBs set up again by its end.
    pub gnbs_recovered: u32,
    /// UEs whose runs it ended.
    pub ues_failed: Vec<UeFailure>,
}

/// The outages of a run: at most one open at a time (from the first loss until every lost
/// gNB is up again).
#[derive(Debug, Default)]
pub struct Outages {
    done: Vec<Outage>,
    open: Option<(Instant, Outage)>,
}

impl Outages {
    /// gNB associations went down at `now` (`t0`: the start of the window): opens an
    /// outage, or adds to the open one.
    pub fn lost(&mut self, now: Instant, t0: Instant, cause: &str) {
        match &mut self.open {
            Some((_, o)) => o.gnbs_lost += 1,
            None => {
                self.open = Some((
                    now,
                    Outage {
                        started_at_s: now.saturating_duration_since(t0).as_secs_f64(),
                        duration_s: None,
                        cause: cause.to_owned(),
                        gnbs_lost: 1,
                        reconnect_attempts: 0,
                        gnbs_recovered: 0,
                        ues_failed: Vec::new(),
                    },
                ));
            }
        }
    }

    /// A UE's run ended with the open outage.
    pub fn ue_failed(&mut self, now: Instant, supi: &str, procedure: &str, cause: &str) {
        if let Some((since, o)) = &mut self.open {
            o.ues_failed.push(UeFailure {
                supi: supi.to_owned(),
                procedure: procedure.to_owned(),
                cause: cause.to_owned(),
                after_ms: now.saturating_duration_since(*since).as_secs_f64() * 1e3,
            });
        }
    }

    /// A reconnection attempt started.
    pub fn attempt(&mut self) {
        if let Some((_, o)) = &mut self.open {
            o.reconnect_attempts += 1;
        }
    }

    /// A lost gNB is set up again; when `all_up`, the outage is over at `now`.
    pub fn recovered(&mut self, now: Instant, all_up: bool) {
        if let Some((_, o)) = &mut self.open {
            o.gnbs_recovered += 1;
        }
        if all_up {
            if let Some((since, mut o)) = self.open.take() {
                o.duration_s = Some(now.saturating_duration_since(since).as_secs_f64());
                self.done.push(o);
            }
        }
    }

    /// When the open outage started, if one is open.
    pub fn open_since(&self) -> Option<Instant> {
        self.open.as_ref().map(|(since, _)| *since)
    }

    /// Every outage, the open one last (with no duration).
    pub fn into_report(mut self) -> Vec<Outage> {
        if let Some((_, o)) = self.open.take() {
            self.done.push(o);
        }
        self.done
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_a_bounded_spread() {
        for key in 0..64 {
            let mut last = Duration::ZERO;
            for attempt in 0..40 {
                let d = backoff(attempt, key);
                let full = BACKOFF_BASE
                    .saturating_mul(1 << attempt.min(20))
                    .min(BACKOFF_CAP);
                assert!(d >= full.mul_f64(0.75) && d <= full.mul_f64(1.25).min(BACKOFF_CAP));
                if attempt > 0 && full < BACKOFF_CAP {
                    // Doubling beats any spread of 75-125 %: the sequence grows.
                    assert!(d > last.mul_f64(0.74), "{attempt}: {d:?} after {last:?}");
                }
                last = d;
            }
            assert!(backoff(u32::MAX, key) <= BACKOFF_CAP);
        }
        // The spread really spreads: not every gNB waits the same.
        let first: std::collections::BTreeSet<_> = (0..64).map(|k| backoff(0, k)).collect();
        assert!(first.len() > 8, "{first:?}");
    }

    #[test]
    fn a_link_waits_tries_backs_off_and_comes_up() {
        let t0 = Instant::now();
        let mut l = Link::lost(t0, 7);
        assert!(l.is_down());
        assert!(!l.due(t0));
        let first = l.poll_timeout().unwrap();
        assert!(first > t0 && first <= t0 + BACKOFF_BASE.mul_f64(1.25));
        assert!(l.due(first));
        l.start(first, 7);
        assert!(matches!(l, Link::Trying { attempt: 1, .. }));
        // An attempt gets at least ATTEMPT_MIN.
        assert!(!l.expired(first + ATTEMPT_MIN - ms(1)));
        assert!(l.expired(first + ATTEMPT_MIN));
        let t = first + ATTEMPT_MIN;
        l.failed(t, 7);
        let second = l.poll_timeout().unwrap();
        assert!(second - t >= backoff(1, 7) - ms(1));
        // Attempts go on, each waiting no more than the cap.
        let mut now = second;
        for _ in 0..20 {
            l.start(now, 7);
            let end = l.poll_timeout().unwrap();
            assert!(end - now <= BACKOFF_CAP.max(ATTEMPT_MIN));
            l.failed(end, 7);
            let next = l.poll_timeout().unwrap();
            assert!(next - end <= BACKOFF_CAP);
            now = next;
        }
        l.start(now, 7);
        l.up();
        assert_eq!(l, Link::Up);
        assert_eq!(l.poll_timeout(), None);
        assert!(!l.due(now + Duration::from_secs(100)));
    }

    #[test]
    fn an_outage_runs_from_the_first_loss_until_every_gnb_is_back() {
        let t0 = Instant::now();
        let mut o = Outages::default();
        // Nothing recorded without an open outage.
        o.ue_failed(t0, "imsi-1", "registration", "AMF lost");
        o.attempt();
        o.recovered(t0, true);
        assert!(o.open_since().is_none());
        let lost = t0 + ms(1500);
        o.lost(lost, t0, "SCTP association closed: AbortedByPeer");
        o.lost(lost + ms(1), t0, "SCTP association closed: AbortedByPeer");
        o.ue_failed(lost, "imsi-1", "registration", "AMF lost");
        o.ue_failed(lost + ms(1), "imsi-2", "held at sessions_up", "AMF lost");
        o.attempt();
        o.attempt();
        o.attempt();
        o.recovered(lost + ms(2000), false);
        assert_eq!(o.open_since(), Some(lost));
        o.recovered(lost + ms(2500), true);
        assert!(o.open_since().is_none());
        // A second outage that never ends.
        o.lost(
            t0 + ms(9000),
            t0,
            "SCTP association closed: CommunicationLost",
        );
        let r = o.into_report();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].started_at_s, 1.5);
        assert_eq!(r[0].duration_s, Some(2.5));
        assert_eq!((r[0].gnbs_lost, r[0].gnbs_recovered), (2, 2));
        assert_eq!(r[0].reconnect_attempts, 3);
        assert_eq!(r[0].ues_failed.len(), 2);
        assert_eq!(r[0].ues_failed[1].procedure, "held at sessions_up");
        assert_eq!(r[0].ues_failed[1].after_ms, 1.0);
        assert_eq!(r[1].duration_s, None);
        assert_eq!(r[1].started_at_s, 9.0);
    }

    #[test]
    fn the_no_answer_line_names_the_amf() {
        assert_eq!(
            no_answer_message("127.0.0.5:9899"),
            "no answer from AMF at 127.0.0.5:9899 (is it running?)"
        );
    }
}
