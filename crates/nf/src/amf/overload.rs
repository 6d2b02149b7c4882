//! AMF overload control (TS 23.501 §5.19.5.2; TS 38.413 §8.7.6, §8.7.7): the measured
//! signal's hysteresis, and what the N2 side tells its gNBs.
//!
//! Each AMF worker measures its registrations in flight (UE contexts between their
//! INITIAL UE MESSAGE and REGISTRATION COMPLETE or release). [`Hysteresis`] turns that level
//! into an overloaded / not overloaded state with two marks: above the high mark the
//! worker is overloaded, and it stays so until the level falls below the low mark, so a
//! level moving between the two marks changes nothing. An overloaded worker rejects new
//! registrations with 5GMM #22 and T3346 (TS 24.501 §5.5.1.2.5, §5.3.9).
//!
//! The gNBs see one AMF: [`OverloadedWorkers`] (held by every worker's N2 side) sends
//! OVERLOAD START to its gNBs when the first worker enters overload and OVERLOAD STOP when
//! the last one leaves it.

use std::collections::BTreeSet;

use proto::ngap::{OverloadAction, OverloadStart};

/// The marks and what OVERLOAD START asks of the gNBs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverloadConfig {
    /// Registrations in flight above which a worker is overloaded.
    pub high_mark: u64,
    /// Registrations in flight under which an overloaded worker recovers; below
    /// `high_mark`.
    pub low_mark: u64,
    /// The AMF Traffic Load Reduction Indication, 1 to 99 percent (TS 38.413 §9.3.1.106).
    pub traffic_load_reduction: u8,
}

impl Default for OverloadConfig {
    /// 2048 / 1024 registrations in flight, 50 % reduction (the configuration's defaults).
    fn default() -> Self {
        OverloadConfig {
            high_mark: 2048,
            low_mark: 1024,
            traffic_load_reduction: 50,
        }
    }
}

impl OverloadConfig {
    /// The OVERLOAD START the gNBs get: shed new signalling connections (a registration
    /// starts with an RRC connection establishment for mobile originated signalling) by the
    /// configured percentage (TS 38.413 §8.7.6.2, §9.3.1.105).
    pub fn start_message(&self) -> OverloadStart {
        OverloadStart {
            response: Some(OverloadAction::RejectRrcSignalling),
            traffic_load_reduction: Some(self.traffic_load_reduction.clamp(1, 99)),
        }
    }
}

/// A level against two marks, with memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hysteresis {
    high: u64,
    low: u64,
    active: bool,
}

impl Hysteresis {
    /// Not overloaded, with marks `high` > `low` (a `low` not below `high` is taken as
    /// `high - 1`, so that the two states stay apart).
    pub fn new(high: u64, low: u64) -> Self {
        let high = high.max(1);
        Hysteresis {
            high,
            low: low.min(high - 1),
            active: false,
        }
    }

    /// Whether the level is in overload.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// The level now; `Some(true)` when it just entered overload (above the high mark),
    /// `Some(false)` when it just left it (below the low mark), `None` when the state holds.
    pub fn update(&mut self, level: u64) -> Option<bool> {
        if !self.active && level > self.high {
            self.active = true;
            return Some(true);
        }
        if self.active && level < self.low {
            self.active = false;
            return Some(false);
        }
        None
    }
}

/// An AMF worker entered or left overload: what the host hands the N2 side of every worker
/// ([`crate::host::Host::poll_overload`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverloadSignal {
    /// The worker.
    pub worker: u16,
    /// `Some`: it is overloaded, and this is what the gNBs are to be told; `None`: it is
    /// not any more.
    pub start: Option<OverloadStart>,
}

/// The workers of the AMF now overloaded, as one N2 side knows them: what decides
/// OVERLOAD START and STOP towards its gNBs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverloadedWorkers {
    workers: BTreeSet<u16>,
    /// The OVERLOAD START in force (the latest a worker sent).
    start: Option<OverloadStart>,
}

/// What the gNBs are to be told after a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GnbOverload {
    /// OVERLOAD START (TS 38.413 §8.7.6): the first worker entered overload.
    Start(OverloadStart),
    /// OVERLOAD STOP (§8.7.7): the last one left it.
    Stop,
}

impl OverloadedWorkers {
    /// Takes one worker's signal; says what the gNBs are to be told, if anything.
    pub fn signal(&mut self, s: OverloadSignal) -> Option<GnbOverload> {
        let was = !self.workers.is_empty();
        match s.start {
            Some(start) => {
                self.workers.insert(s.worker);
                self.start = Some(start);
            }
            None => {
                self.workers.remove(&s.worker);
            }
        }
        match (was, self.workers.is_empty()) {
            (false, false) => self.start.map(GnbOverload::Start),
            (true, true) => Some(GnbOverload::Stop),
            _ => None,
        }
    }

    /// The OVERLOAD START a gNB that completes NG Setup now must get too, if the AMF is
    /// overloaded.
    pub fn current(&self) -> Option<OverloadStart> {
        if self.workers.is_empty() {
            None
        } else {
            self.start
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_between_the_marks_changes_nothing() {
        let mut h = Hysteresis::new(10, 5);
        let mut changes = Vec::new();
        // Up past the high mark, then wandering between the marks, then down below the low
        // mark, then back between them: one start, one stop, no flapping.
        for level in [0, 5, 10, 11, 9, 10, 11, 12, 6, 5, 11, 5, 4, 6, 9, 10, 5] {
            if let Some(c) = h.update(level) {
                changes.push((level, c));
            }
        }
        assert_eq!(changes, vec![(11, true), (4, false)]);
        assert!(!h.is_active());
    }

    #[test]
    fn marks_that_touch_are_kept_apart() {
        // A low mark of 7 above a high mark of 3 becomes 2.
        let mut h = Hysteresis::new(3, 7);
        assert_eq!(h.update(4), Some(true));
        assert_eq!(h.update(2), None);
        assert_eq!(h.update(1), Some(false));
    }

    #[test]
    fn the_gnbs_hear_start_with_the_first_worker_and_stop_with_the_last() {
        let start = OverloadConfig::default().start_message();
        let on = |worker| OverloadSignal {
            worker,
            start: Some(start),
        };
        let off = |worker| OverloadSignal {
            worker,
            start: None,
        };
        let mut w = OverloadedWorkers::default();
        assert_eq!(w.signal(off(0)), None);
        assert_eq!(w.signal(on(1)), Some(GnbOverload::Start(start)));
        assert_eq!(w.current(), Some(start));
        assert_eq!(w.signal(on(0)), None);
        assert_eq!(w.signal(on(0)), None);
        assert_eq!(w.signal(off(1)), None);
        assert_eq!(w.signal(off(0)), Some(GnbOverload::Stop));
        assert_eq!(w.current(), None);
        assert_eq!(
            start.traffic_load_reduction,
            Some(OverloadConfig::default().traffic_load_reduction)
        );
    }
}
