//! When the next UE starts: closed loop (K UEs in flight, a finished UE's slot goes to the
//! next subscriber) or open loop (R starts per second on a fixed token schedule, bounded in
//! flight), until a count of runs or a duration.
//!
//! Subscribers wait in a FIFO; a subscriber goes back to its end only when its run is over,
//! so when the count is larger than the CSV a subscriber never runs twice at once.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How load is offered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// K UEs in flight at all times.
    Closed {
        /// K.
        concurrency: usize,
    },
    /// R starts per second whatever the answers, at most `max_in_flight` at once.
    Open {
        /// R.
        rate: f64,
        /// The bound on runs in flight.
        max_in_flight: usize,
    },
}

/// When starting stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// After this many runs have started.
    Count(u64),
    /// After this long from the first start.
    Duration(Duration),
}

/// The start schedule.
#[derive(Debug)]
pub struct Scheduler {
    load: Load,
    limit: Limit,
    t0: Instant,
    started: u64,
    in_flight: usize,
    /// Runs waiting at a barrier: started, not over, but not holding a slot.
    parked: usize,
    idle: VecDeque<usize>,
    late: u64,
}

impl Scheduler {
    /// A schedule over `subscribers` subscribers (indices `0..subscribers`) from `t0`.
    pub fn new(load: Load, limit: Limit, subscribers: usize, t0: Instant) -> Self {
        Scheduler {
            load,
            limit,
            t0,
            started: 0,
            in_flight: 0,
            parked: 0,
            idle: (0..subscribers).collect(),
            late: 0,
        }
    }

    /// Runs started so far.
    pub fn started(&self) -> u64 {
        self.started
    }

    /// Runs in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Open loop: starts that went out later than one token interval (at least 1 ms) after
    /// their slot, because too many runs were in flight or the generator fell behind.
    pub fn late_starts(&self) -> u64 {
        self.late
    }

    /// The number of runs a count limit asks for, if any.
    pub fn target(&self) -> Option<u64> {
        match self.limit {
            Limit::Count(c) => Some(c),
            Limit::Duration(_) => None,
        }
    }

    fn may_start_more(&self, now: Instant) -> bool {
        match self.limit {
            Limit::Count(c) => self.started < c,
            Limit::Duration(d) => now < self.t0 + d,
        }
    }

    /// Open loop: the time of token `n` (0-based).
    fn slot(&self, rate: f64, n: u64) -> Instant {
        self.t0 + Duration::from_secs_f64(n as f64 / rate)
    }

    /// Appends to `out` the subscribers to start now, and counts them in flight.
    pub fn due(&mut self, now: Instant, out: &mut Vec<usize>) {
        loop {
            if !self.may_start_more(now) {
                return;
            }
            match self.load {
                Load::Closed { concurrency } => {
                    if self.in_flight >= concurrency {
                        return;
                    }
                }
                Load::Open {
                    rate,
                    max_in_flight,
                } => {
                    let slot = self.slot(rate, self.started);
                    if slot > now || self.in_flight >= max_in_flight {
                        return;
                    }
                    let slack = Duration::from_secs_f64(1.0 / rate).max(Duration::from_millis(1));
                    if now.saturating_duration_since(slot) > slack {
                        self.late += 1;
                    }
                }
            }
            let Some(sub) = self.idle.pop_front() else {
                return;
            };
            out.push(sub);
            self.started += 1;
            self.in_flight += 1;
        }
    }

    /// A run of `sub` is over: its subscriber may run again.
    pub fn finished(&mut self, sub: usize) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.idle.push_back(sub);
    }

    /// The next time [`Scheduler::due`] may start something without a run finishing first.
    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        match self.load {
            Load::Open { rate, .. } if self.may_start_more(now) => {
                Some(self.slot(rate, self.started))
            }
            _ => None,
        }
    }

    /// Whether every run has started and ended.
    pub fn is_done(&self, now: Instant) -> bool {
        self.in_flight == 0 && self.parked == 0 && (!self.may_start_more(now) || self.stalled())
    }

    /// No subscriber can ever start again (none at all).
    fn stalled(&self) -> bool {
        self.idle.is_empty() && self.in_flight == 0 && self.parked == 0
    }

    /// A run in flight waits at a barrier: its slot goes to the next start (so that a
    /// barrier can gather more runs than the concurrency), its subscriber stays taken.
    pub fn park(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.parked += 1;
    }

    /// A parked run goes on: it holds a slot again.
    pub fn unpark(&mut self) {
        self.parked = self.parked.saturating_sub(1);
        self.in_flight += 1;
    }

    /// Runs parked at a barrier.
    #[cfg(test)]
    pub fn parked(&self) -> usize {
        self.parked
    }

    /// Free slots: how many parked runs may go on now without exceeding the load's bound.
    pub fn room(&self) -> usize {
        let cap = match self.load {
            Load::Closed { concurrency } => concurrency,
            Load::Open { max_in_flight, .. } => max_in_flight,
        };
        cap.saturating_sub(self.in_flight)
    }

    /// Whether the parked runs are all there will be: none in flight, and no other run may
    /// ever start before one of them goes on (the limit is reached or every subscriber is
    /// taken). An open loop whose next start is merely later is not there yet.
    pub fn barrier_reached(&self, now: Instant) -> bool {
        if self.parked == 0 || self.in_flight > 0 {
            return false;
        }
        !self.may_start_more(now) || self.idle.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn closed_loop_keeps_k_in_flight_and_reuses_slots() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Load::Closed { concurrency: 3 }, Limit::Count(7), 5, t0);
        let mut out = Vec::new();
        s.due(t0, &mut out);
        assert_eq!(out, vec![0, 1, 2]);
        assert_eq!(s.in_flight(), 3);
        out.clear();
        s.due(t0, &mut out);
        assert!(out.is_empty(), "no slot is free");
        s.finished(1);
        s.due(t0, &mut out);
        assert_eq!(out, vec![3]);
        out.clear();
        s.finished(0);
        s.finished(2);
        s.due(t0, &mut out);
        // Subscribers 4, then 1 (back in the queue after its run): the CSV cycles.
        assert_eq!(out, vec![4, 1]);
        out.clear();
        s.finished(3);
        s.due(t0, &mut out);
        assert_eq!(out, vec![0]);
        assert_eq!(s.started(), 7);
        out.clear();
        for sub in [4, 1, 0] {
            s.finished(sub);
        }
        s.due(t0, &mut out);
        assert!(out.is_empty(), "count reached");
        assert!(s.is_done(t0));
    }

    #[test]
    fn a_subscriber_never_runs_twice_at_once() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Load::Closed { concurrency: 10 }, Limit::Count(10), 2, t0);
        let mut out = Vec::new();
        s.due(t0, &mut out);
        assert_eq!(out, vec![0, 1]);
        s.finished(0);
        out.clear();
        s.due(t0, &mut out);
        assert_eq!(out, vec![0]);
        assert!(!s.is_done(t0));
    }

    #[test]
    fn open_loop_follows_the_token_schedule() {
        let t0 = Instant::now();
        let load = Load::Open {
            rate: 100.0,
            max_in_flight: 1000,
        };
        let mut s = Scheduler::new(load, Limit::Count(1000), 1000, t0);
        let mut out = Vec::new();
        s.due(t0, &mut out);
        assert_eq!(out.len(), 1, "token 0 is due at t0");
        assert_eq!(s.next_wake(t0), Some(t0 + Duration::from_millis(10)));
        out.clear();
        // 95 ms later tokens 1..=9 are due.
        s.due(t0 + Duration::from_millis(95), &mut out);
        assert_eq!(out.len(), 9);
        assert_eq!(s.started(), 10);
        // Tokens 1..=8 went out more than 10 ms late.
        assert_eq!(s.late_starts(), 8);
    }

    #[test]
    fn open_loop_is_bounded_in_flight_and_by_duration() {
        let t0 = Instant::now();
        let load = Load::Open {
            rate: 1000.0,
            max_in_flight: 5,
        };
        let mut s = Scheduler::new(load, Limit::Duration(Duration::from_millis(50)), 100, t0);
        let mut out = Vec::new();
        s.due(t0 + Duration::from_millis(20), &mut out);
        assert_eq!(out.len(), 5);
        for sub in out.drain(..) {
            s.finished(sub);
        }
        s.due(t0 + Duration::from_millis(60), &mut out);
        assert!(out.is_empty(), "duration over");
        assert_eq!(s.next_wake(t0 + Duration::from_millis(60)), None);
        assert!(s.is_done(t0 + Duration::from_millis(60)));
        assert_eq!(s.target(), None);
    }

    #[test]
    fn no_subscribers_is_done_at_once() {
        let t0 = Instant::now();
        let s = Scheduler::new(Load::Closed { concurrency: 1 }, Limit::Count(5), 0, t0);
        assert!(s.is_done(t0));
    }

    #[test]
    fn parked_runs_free_their_slot_and_make_a_barrier_once_nothing_else_can_start() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Load::Closed { concurrency: 2 }, Limit::Count(3), 3, t0);
        let mut out = Vec::new();
        s.due(t0, &mut out);
        assert_eq!(out, vec![0, 1]);
        s.park();
        assert!(!s.barrier_reached(t0), "one run still in flight");
        out.clear();
        s.due(t0, &mut out);
        assert_eq!(out, vec![2], "the parked run's slot went to the next start");
        s.park();
        assert!(!s.barrier_reached(t0));
        s.park();
        assert!(
            s.barrier_reached(t0),
            "every run parked and the count reached"
        );
        assert!(!s.is_done(t0), "parked runs are not over");
        assert_eq!((s.parked(), s.room()), (3, 2));
        s.unpark();
        s.unpark();
        assert_eq!(s.room(), 0);
        assert!(!s.barrier_reached(t0));
        for sub in 0..3 {
            if sub == 2 {
                s.unpark();
            }
            s.finished(sub);
        }
        assert!(s.is_done(t0));
    }
}
