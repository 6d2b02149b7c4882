//! The requester side of PFCP transactions: requests in flight, their retransmission after
//! T1 and the verdict after N1 (TS 29.244 §6.4).

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use super::{is_response_to, Retransmission, MIN_T1};
use crate::header::HeaderRepr;
use crate::message::PfcpMessage;

#[derive(Debug)]
struct Pending<T> {
    msg_type: u8,
    bytes: Vec<u8>,
    due: Instant,
    retransmissions: u32,
    meta: T,
}

/// What came due at a [`Requester::poll_due`].
#[derive(Debug, PartialEq, Eq)]
pub enum Due<'a, T> {
    /// Send `bytes` again (retransmissions carry the sequence number of the original,
    /// §6.4); the request stays in flight.
    Retransmit {
        /// The request's sequence number.
        sequence: u32,
        /// The request as first sent.
        bytes: &'a [u8],
        /// What the caller attached to it.
        meta: &'a T,
    },
    /// No response after N1 retransmissions: the request is dropped and the peer counts as
    /// not answering.
    GaveUp {
        /// The request's sequence number.
        sequence: u32,
        /// What the caller attached to it.
        meta: T,
    },
}

/// Counters of a [`Requester`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequesterStats {
    /// Requests sent again after T1.
    pub retransmitted: u64,
    /// Requests given up on after N1 retransmissions.
    pub timed_out: u64,
}

/// Our requests in flight, by sequence number, each with the caller's `T` attached (the
/// peer and the procedure, say). Requests are due in the order they were (re)sent, since
/// every one waits the same T1, so a queue keeps the deadlines: entries of answered
/// requests are skipped when they reach its front.
#[derive(Debug)]
pub struct Requester<T> {
    cfg: Retransmission,
    pending: HashMap<u32, Pending<T>>,
    /// (deadline, sequence), in deadline order; the front is always a live request.
    queue: VecDeque<(Instant, u32)>,
    stats: RequesterStats,
}

impl<T> Requester<T> {
    /// An empty requester with the timers of `cfg` (a T1 under [`MIN_T1`] is taken as it).
    pub fn new(cfg: Retransmission) -> Self {
        Requester {
            cfg: Retransmission {
                t1: cfg.t1.max(MIN_T1),
                n1: cfg.n1,
            },
            pending: HashMap::new(),
            queue: VecDeque::new(),
            stats: RequesterStats::default(),
        }
    }

    /// The timers in use.
    pub fn config(&self) -> Retransmission {
        self.cfg
    }

    /// Counters so far.
    pub fn stats(&self) -> RequesterStats {
        self.stats
    }

    /// Requests in flight.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no request is in flight.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Request `sequence`, encoded as `bytes`, was sent at `now`. A request still in flight
    /// under the same number (the 24-bit space wrapped) is replaced.
    pub fn sent(&mut self, now: Instant, sequence: u32, bytes: Vec<u8>, meta: T) {
        let due = now + self.cfg.t1;
        let msg_type = bytes.get(1).copied().unwrap_or(0);
        self.pending.insert(
            sequence,
            Pending {
                msg_type,
                bytes,
                due,
                retransmissions: 0,
                meta,
            },
        );
        self.queue.push_back((due, sequence));
        self.settle();
    }

    /// What is attached to request `sequence`, if it is in flight.
    pub fn get(&self, sequence: u32) -> Option<&T> {
        self.pending.get(&sequence).map(|p| &p.meta)
    }

    /// Ends request `sequence` (its response came): no more retransmissions.
    pub fn remove(&mut self, sequence: u32) -> Option<T> {
        let p = self.pending.remove(&sequence)?;
        self.settle();
        Some(p.meta)
    }

    /// A datagram from the peer: if it is the response to a request in flight (same
    /// sequence number and the request's type + 1, §7.2.2.2 numbering each response right
    /// after its request, or a Version Not Supported Response), that request ends and is
    /// returned. Requests of the peer's own share no sequence space with ours and are
    /// left alone, as is anything that does not decode.
    pub fn answered(&mut self, bytes: &[u8]) -> Option<(u32, T)> {
        let h: HeaderRepr = PfcpMessage::parse_header(bytes).ok()?;
        let p = self.pending.get(&h.sequence)?;
        if !is_response_to(p.msg_type, h.msg_type) {
            return None;
        }
        self.remove(h.sequence).map(|m| (h.sequence, m))
    }

    /// When [`Requester::poll_due`] next has something.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.queue.front().map(|(t, _)| *t)
    }

    /// The next request due at `now`, if any: call until `None`. A retransmitted request
    /// is due again T1 later; one given up on is forgotten.
    pub fn poll_due(&mut self, now: Instant) -> Option<Due<'_, T>> {
        loop {
            let &(due, sequence) = self.queue.front()?;
            if due > now {
                return None;
            }
            self.queue.pop_front();
            let Some(p) = self.pending.get_mut(&sequence) else {
                continue;
            };
            if p.due != due {
                continue;
            }
            if p.retransmissions >= self.cfg.n1 {
                let p = self.pending.remove(&sequence)?;
                self.settle();
                self.stats.timed_out += 1;
                return Some(Due::GaveUp {
                    sequence,
                    meta: p.meta,
                });
            }
            p.retransmissions += 1;
            p.due = now + self.cfg.t1;
            self.queue.push_back((p.due, sequence));
            self.stats.retransmitted += 1;
            self.settle();
            let p = self.pending.get(&sequence)?;
            return Some(Due::Retransmit {
                sequence,
                bytes: &p.bytes,
                meta: &p.meta,
            });
        }
    }

    /// Drops queue entries of requests that ended or were rescheduled, so that the front
    /// names the next real deadline.
    fn settle(&mut self) {
        while let Some(&(due, sequence)) = self.queue.front() {
            if self.pending.get(&sequence).is_some_and(|p| p.due == due) {
                break;
            }
            self.queue.pop_front();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::message::{Heartbeat, Message};
    use crate::txn::VERSION_NOT_SUPPORTED_RESPONSE;

    fn heartbeat(seq: u32, request: bool) -> Vec<u8> {
        let hb = Heartbeat {
            recovery_time_stamp: 1,
            unknown: Vec::new(),
        };
        let m = if request {
            Message::HeartbeatRequest(hb)
        } else {
            Message::HeartbeatResponse(hb)
        };
        PfcpMessage::new(seq, None, m).emit()
    }

    const T1: Duration = Duration::from_secs(3);

    fn requester() -> Requester<&'static str> {
        Requester::new(Retransmission { t1: T1, n1: 3 })
    }

    #[test]
    fn unanswered_requests_are_sent_n1_times_then_given_up() {
        let t0 = Instant::now();
        let mut r = requester();
        let req = heartbeat(7, true);
        r.sent(t0, 7, req.clone(), "hb");
        assert_eq!(r.poll_timeout(), Some(t0 + T1));
        assert_eq!(r.poll_due(t0), None, "nothing before T1");
        assert_eq!(r.poll_due(t0 + T1 - Duration::from_millis(1)), None);
        let mut now = t0;
        for n in 1..=3 {
            now += T1;
            assert_eq!(
                r.poll_due(now),
                Some(Due::Retransmit {
                    sequence: 7,
                    bytes: &req[..],
                    meta: &"hb"
                }),
                "retransmission {n} at T1 × {n}"
            );
            assert_eq!(r.poll_due(now), None, "once per expiry");
            assert_eq!(r.poll_timeout(), Some(now + T1));
        }
        now += T1;
        assert_eq!(
            r.poll_due(now),
            Some(Due::GaveUp {
                sequence: 7,
                meta: "hb"
            })
        );
        assert_eq!(now - t0, r.config().give_up_after(), "T1 × (N1 + 1)");
        assert_eq!(r.poll_timeout(), None);
        assert!(r.is_empty());
        assert_eq!(
            r.stats(),
            RequesterStats {
                retransmitted: 3,
                timed_out: 1
            }
        );
    }

    #[test]
    fn only_the_matching_response_ends_a_request() {
        let t0 = Instant::now();
        let mut r = requester();
        r.sent(t0, 7, heartbeat(7, true), "hb");
        // The peer's own request with the same number, garbage, another number: in flight.
        assert_eq!(r.answered(&heartbeat(7, true)), None);
        assert_eq!(r.answered(&[0xff, 0x02]), None);
        assert_eq!(r.answered(&heartbeat(8, false)), None);
        assert!(r.poll_timeout().is_some());
        assert_eq!(r.answered(&heartbeat(7, false)), Some((7, "hb")));
        assert_eq!(r.poll_timeout(), None);
        assert_eq!(r.poll_due(t0 + T1 * 10), None);
        assert_eq!(r.stats(), RequesterStats::default());
    }

    #[test]
    fn version_not_supported_ends_any_request() {
        let mut r = requester();
        r.sent(Instant::now(), 9, heartbeat(9, true), "hb");
        let mut vns = Vec::new();
        HeaderRepr {
            msg_type: VERSION_NOT_SUPPORTED_RESPONSE,
            seid: None,
            sequence: 9,
            priority: None,
            follow_on: false,
        }
        .emit(&mut vns, 0);
        assert_eq!(r.answered(&vns), Some((9, "hb")));
    }

    #[test]
    fn deadlines_follow_each_request_and_skip_answered_ones() {
        let t0 = Instant::now();
        let mut r = requester();
        let s = Duration::from_secs(1);
        r.sent(t0, 1, heartbeat(1, true), "a");
        r.sent(t0 + s, 2, heartbeat(2, true), "b");
        r.sent(t0 + s * 2, 3, heartbeat(3, true), "c");
        assert_eq!(r.remove(1), Some("a"));
        // The answered request's deadline is gone from the front.
        assert_eq!(r.poll_timeout(), Some(t0 + s + T1));
        assert_eq!(r.remove(3), Some("c"));
        assert_eq!(r.poll_timeout(), Some(t0 + s + T1));
        let now = t0 + s * 10;
        assert!(matches!(
            r.poll_due(now),
            Some(Due::Retransmit { sequence: 2, .. })
        ));
        assert_eq!(r.poll_due(now), None);
        assert_eq!(r.get(2), Some(&"b"));
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn give_up_after_nests_the_timers() {
        assert_eq!(
            Retransmission::default().give_up_after(),
            Duration::from_secs(12)
        );
        let zero = Retransmission {
            t1: Duration::ZERO,
            n1: 1,
        };
        assert_eq!(zero.give_up_after(), MIN_T1 * 2);
        let huge = Retransmission {
            t1: Duration::MAX,
            n1: u32::MAX,
        };
        assert_eq!(huge.give_up_after(), Duration::MAX);
    }

    #[test]
    fn a_zero_t1_is_taken_as_the_minimum() {
        let t0 = Instant::now();
        let mut r = Requester::new(Retransmission {
            t1: Duration::ZERO,
            n1: 1,
        });
        r.sent(t0, 1, heartbeat(1, true), ());
        assert_eq!(r.config().t1, MIN_T1);
        assert!(matches!(
            r.poll_due(t0 + MIN_T1),
            Some(Due::Retransmit { .. })
        ));
        assert_eq!(r.poll_due(t0 + MIN_T1), None);
        assert!(matches!(
            r.poll_due(t0 + MIN_T1 * 2),
            Some(Due::GaveUp { sequence: 1, .. })
        ));
    }
}
