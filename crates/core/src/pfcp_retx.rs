//! Retransmission of the SMF's PFCP requests (TS 29.244 §6.4): a request unanswered after T1
//! is sent again, up to N1 times, then the SMF is told the peer did not answer
//! (`Smf::pfcp_timeout`). Sans-IO: the worker sends what [`Retransmit::handle_timeout`]
//! returns and feeds every datagram from the UPF to [`Retransmit::answered`].

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// T1, as the UPF side uses by default (`upf::NodeConfig`).
pub(crate) const T1: Duration = Duration::from_secs(3);
/// N1: retransmissions before giving up.
pub(crate) const N1: u32 = 3;

/// Version Not Supported Response (§7.4.4.7) answers any request.
const VERSION_NOT_SUPPORTED: u8 = 11;

struct Pending {
    msg_type: u8,
    bytes: Vec<u8>,
    due: Instant,
    retransmissions: u32,
}

/// The requests in flight, by sequence number.
#[derive(Default)]
pub(crate) struct Retransmit {
    pending: BTreeMap<u32, Pending>,
    /// Requests sent again.
    pub(crate) retransmitted: u64,
    /// Requests given up on.
    pub(crate) timed_out: u64,
}

impl Retransmit {
    /// Request `sequence` (the encoded message `bytes`) was sent at `now`.
    pub(crate) fn sent(&mut self, now: Instant, sequence: u32, bytes: &[u8]) {
        let Some(&msg_type) = bytes.get(1) else {
            return;
        };
        self.pending.insert(
            sequence,
            Pending {
                msg_type,
                bytes: bytes.to_vec(),
                due: now + T1,
                retransmissions: 0,
            },
        );
    }

    /// A datagram from the UPF: if it is the response to a pending request (same sequence
    /// number, the request's type + 1 — §7.2.2.2 numbers each response right after its
    /// request — or Version Not Supported), that request is done. Requests of the UPF's own
    /// (heartbeats, session reports) share no sequence space with ours and are ignored.
    pub(crate) fn answered(&mut self, bytes: &[u8]) {
        let Ok(h) = pfcp::PfcpMessage::parse_header(bytes) else {
            return;
        };
        let Some(p) = self.pending.get(&h.sequence) else {
            return;
        };
        let t = bytes.get(1).copied().unwrap_or(0);
        if t == p.msg_type.wrapping_add(1) || t == VERSION_NOT_SUPPORTED {
            self.pending.remove(&h.sequence);
        }
    }

    /// When [`Retransmit::handle_timeout`] next has something to do.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.due).min()
    }

    /// Requests due at `now`: those to send again, and the sequence numbers given up on.
    pub(crate) fn handle_timeout(&mut self, now: Instant) -> (Vec<Vec<u8>>, Vec<u32>) {
        let mut resend = Vec::new();
        let mut expired = Vec::new();
        for (&seq, p) in self.pending.iter_mut() {
            if p.due > now {
                continue;
            }
            if p.retransmissions >= N1 {
                expired.push(seq);
            } else {
                p.retransmissions += 1;
                p.due = now + T1;
                resend.push(p.bytes.clone());
            }
        }
        for seq in &expired {
            self.pending.remove(seq);
        }
        self.retransmitted += resend.len() as u64;
        self.timed_out += expired.len() as u64;
        (resend, expired)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pfcp::message::Heartbeat;
    use pfcp::{Message, PfcpMessage};

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

    #[test]
    fn unanswered_requests_are_sent_n1_times_then_given_up() {
        let t0 = Instant::now();
        let mut r = Retransmit::default();
        r.sent(t0, 7, &heartbeat(7, true));
        assert_eq!(r.poll_timeout(), Some(t0 + T1));
        assert_eq!(r.handle_timeout(t0), (vec![], vec![]));
        let mut now = t0;
        for n in 1..=N1 {
            now += T1;
            let (resend, expired) = r.handle_timeout(now);
            assert_eq!(resend.len(), 1, "retransmission {n}");
            assert!(expired.is_empty());
        }
        now += T1;
        assert_eq!(r.handle_timeout(now), (vec![], vec![7]));
        assert_eq!(r.poll_timeout(), None);
        assert_eq!((r.retransmitted, r.timed_out), (u64::from(N1), 1));
    }

    #[test]
    fn only_the_matching_response_ends_a_request() {
        let t0 = Instant::now();
        let mut r = Retransmit::default();
        r.sent(t0, 7, &heartbeat(7, true));
        // The UPF's own request with the same number, garbage, another number: still pending.
        r.answered(&heartbeat(7, true));
        r.answered(&[0xff, 0x02]);
        r.answered(&heartbeat(8, false));
        assert!(r.poll_timeout().is_some());
        r.answered(&heartbeat(7, false));
        assert_eq!(r.poll_timeout(), None);
        assert_eq!(r.handle_timeout(t0 + T1 * 10), (vec![], vec![]));
    }
}
