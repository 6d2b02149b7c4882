//! Send side: the retransmission queue (RFC 9260 §6.1, §6.3, §7.2.4) and congestion control
//! (§7.2). Chunks are fragmented and numbered when the user queues a message, so the queue
//! is contiguous in TSN and indexable in O(1) from the cumulative ack point.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

/// One DATA chunk waiting for transmission or acknowledgement.
#[derive(Debug)]
pub(super) struct OutChunk {
    pub(super) tsn: u32,
    pub(super) stream: u16,
    pub(super) ssn: u16,
    pub(super) ppid: u32,
    pub(super) flags: u8,
    pub(super) data: Bytes,
    /// Transmissions so far (0 = never sent).
    pub(super) sent_count: u32,
    pub(super) in_flight: bool,
    /// Acknowledged by a gap ack block.
    pub(super) acked: bool,
    /// Waiting for retransmission.
    pub(super) retx: bool,
    /// Already fast-retransmitted once (§7.2.4: only once per chunk).
    pub(super) fast_retx_done: bool,
    pub(super) miss: u8,
}

/// What one SACK did, for the congestion and timer logic.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct SackResult {
    pub(super) bytes_acked: usize,
    pub(super) cum_advanced: bool,
    pub(super) newly_fast_marked: usize,
    pub(super) rtt_acked: Option<Instant>,
    /// Previously gap-acked chunks this SACK no longer covers.
    pub(super) reneged: usize,
}

/// Gap blocks as `usize` offsets, cut at the first one that is empty, starts at 0 or does
/// not ascend (§3.3.4 requires ascending, non-overlapping blocks). Bounding the input this
/// way keeps a hostile SACK to one pass over the queue.
fn ascending(gaps: impl Iterator<Item = (u16, u16)>) -> impl Iterator<Item = (usize, usize)> {
    let mut prev_end = 0usize;
    gaps.map(|(s, e)| (usize::from(s), usize::from(e)))
        .take_while(move |&(s, e)| {
            let ok = s != 0 && e >= s && s > prev_end;
            if ok {
                prev_end = e;
            }
            ok
        })
}

#[derive(Debug)]
pub(super) struct SendQueue {
    pub(super) queue: VecDeque<OutChunk>,
    /// Index of the first never-sent chunk.
    pub(super) next_new: usize,
    /// Bytes of DATA in flight.
    pub(super) flight: usize,
    /// Bytes of user data in the queue.
    pub(super) buffered: usize,
    /// Chunks marked for retransmission.
    pub(super) retx_pending: usize,
    pub(super) next_tsn: u32,
    /// Peer's cumulative TSN ack; `queue[0].tsn == cum_ack + 1` when non-empty.
    pub(super) cum_ack: u32,
    /// RTT measurement in progress: (tsn, first transmission time). Karn: one at a time,
    /// abandoned when that chunk is retransmitted.
    pub(super) rtt_probe: Option<(u32, Instant)>,
    /// Next SSN per outbound stream.
    pub(super) ssn: Vec<u16>,
    /// Chunks currently marked gap-acked.
    pub(super) gap_acked: usize,
}

impl SendQueue {
    pub(super) fn new(initial_tsn: u32, out_streams: u16) -> Self {
        SendQueue {
            queue: VecDeque::new(),
            next_new: 0,
            flight: 0,
            buffered: 0,
            retx_pending: 0,
            next_tsn: initial_tsn,
            cum_ack: initial_tsn.wrapping_sub(1),
            rtt_probe: None,
            ssn: vec![0; usize::from(out_streams)],
            gap_acked: 0,
        }
    }

    /// Fragments and queues one message (RFC 9260 §6.9). The caller validated it.
    pub(super) fn push_message(
        &mut self,
        stream: u16,
        ppid: u32,
        unordered: bool,
        data: Bytes,
        max_fragment: usize,
    ) {
        let ssn = if unordered {
            0
        } else {
            let s = self.ssn.get_mut(usize::from(stream));
            match s {
                Some(s) => {
                    let v = *s;
                    *s = s.wrapping_add(1);
                    v
                }
                None => 0,
            }
        };
        let len = data.len();
        let max_fragment = max_fragment.max(1);
        let mut off = 0;
        while off < len {
            let end = (off + max_fragment).min(len);
            let mut flags = 0;
            if unordered {
                flags |= crate::wire::data_flags::U;
            }
            if off == 0 {
                flags |= crate::wire::data_flags::B;
            }
            if end == len {
                flags |= crate::wire::data_flags::E;
            }
            self.queue.push_back(OutChunk {
                tsn: self.next_tsn,
                stream,
                ssn,
                ppid,
                flags,
                data: data.slice(off..end),
                sent_count: 0,
                in_flight: false,
                acked: false,
                retx: false,
                fast_retx_done: false,
                miss: 0,
            });
            self.next_tsn = self.next_tsn.wrapping_add(1);
            off = end;
        }
        self.buffered += len;
    }

    /// Number of chunks ever sent that are still in the queue.
    fn sent_len(&self) -> usize {
        self.next_new
    }

    /// Processes a cumulative ack and gap blocks (RFC 9260 §6.2.1). Returns `None` when the
    /// SACK acknowledges TSNs never sent (a protocol violation).
    pub(super) fn on_sack(
        &mut self,
        cum: u32,
        gaps: impl Iterator<Item = (u16, u16)> + Clone,
        has_gaps: bool,
    ) -> Option<SackResult> {
        let mut res = SackResult::default();
        let adv = cum.wrapping_sub(self.cum_ack);
        if adv > u32::MAX / 2 {
            // Behind our cumulative point: an old, reordered SACK (§6.2.1 D i).
            return Some(res);
        }
        let adv = adv as usize;
        if adv > self.sent_len() {
            return None;
        }
        for _ in 0..adv {
            let Some(c) = self.queue.pop_front() else {
                break;
            };
            self.next_new -= 1;
            if c.acked {
                self.gap_acked = self.gap_acked.saturating_sub(1);
            }
            self.account_acked(&c, &mut res);
            self.buffered = self.buffered.saturating_sub(c.data.len());
            if c.retx {
                self.retx_pending = self.retx_pending.saturating_sub(1);
            }
        }
        if adv > 0 {
            res.cum_advanced = true;
            self.cum_ack = cum;
        }
        if self.gap_acked > 0 {
            self.detect_reneging(gaps.clone(), &mut res);
        }
        if !has_gaps {
            return Some(res);
        }
        // Gap blocks: offsets are from `cum`; blocks must ascend (§3.3.4), anything else is
        // ignored from there on so a hostile SACK costs at most one pass over the queue.
        let sent = self.sent_len();
        let mut highest_new: Option<usize> = None;
        for (s, e) in ascending(gaps) {
            let last = e.min(sent);
            for off in s..=last {
                let idx = off - 1;
                let Some(c) = self.queue.get_mut(idx) else {
                    break;
                };
                if c.acked {
                    continue;
                }
                c.acked = true;
                self.gap_acked += 1;
                let len = c.data.len();
                res.bytes_acked += len;
                if c.in_flight {
                    c.in_flight = false;
                    self.flight = self.flight.saturating_sub(len);
                }
                if c.retx {
                    c.retx = false;
                    self.retx_pending = self.retx_pending.saturating_sub(1);
                }
                if let Some((t, at)) = self.rtt_probe {
                    if t == c.tsn && c.sent_count == 1 {
                        res.rtt_acked = Some(at);
                        self.rtt_probe = None;
                    }
                }
                highest_new = Some(idx);
            }
            if e >= sent {
                break;
            }
        }
        // Miss indications (§7.2.4, HTNA): only TSNs below the highest newly acked one count.
        if let Some(h) = highest_new {
            for c in self.queue.iter_mut().take(h) {
                if c.acked || !c.in_flight || c.fast_retx_done {
                    continue;
                }
                c.miss = c.miss.saturating_add(1);
                if c.miss >= 3 {
                    c.in_flight = false;
                    c.retx = true;
                    c.fast_retx_done = true;
                    self.flight = self.flight.saturating_sub(c.data.len());
                    self.retx_pending += 1;
                    res.newly_fast_marked += 1;
                }
            }
        }
        Some(res)
    }

    /// RFC 9260 §6.2.1: a chunk gap-acked before but not covered by this SACK was reneged
    /// (dropped by the receiver); it goes back to the retransmission list.
    fn detect_reneging(&mut self, gaps: impl Iterator<Item = (u16, u16)>, res: &mut SackResult) {
        let mut blocks = ascending(gaps).peekable();
        let mut seen = 0usize;
        let total = self.gap_acked;
        for (idx, c) in self.queue.iter_mut().enumerate().take(self.next_new) {
            if seen == total {
                break;
            }
            if !c.acked {
                continue;
            }
            seen += 1;
            let off = idx + 1;
            while blocks.peek().is_some_and(|&(_, e)| e < off) {
                blocks.next();
            }
            if blocks.peek().is_some_and(|&(s, e)| s <= off && off <= e) {
                continue;
            }
            c.acked = false;
            c.retx = true;
            c.miss = 0;
            self.gap_acked -= 1;
            self.retx_pending += 1;
            res.reneged += 1;
        }
    }

    fn account_acked(&mut self, c: &OutChunk, res: &mut SackResult) {
        let len = c.data.len();
        if !c.acked {
            res.bytes_acked += len;
        }
        if c.in_flight {
            self.flight = self.flight.saturating_sub(len);
        }
        if let Some((t, at)) = self.rtt_probe {
            if t == c.tsn {
                if c.sent_count == 1 {
                    res.rtt_acked = Some(at);
                }
                self.rtt_probe = None;
            }
        }
    }

    /// T3-rtx expiry (§6.3.3 E2): everything in flight is to be retransmitted.
    pub(super) fn mark_all_for_retransmit(&mut self) {
        for c in self.queue.iter_mut().take(self.next_new) {
            if c.in_flight && !c.acked {
                c.in_flight = false;
                c.retx = true;
                self.retx_pending += 1;
            }
        }
        self.flight = 0;
        self.rtt_probe = None;
    }

    /// Whether any chunk is outstanding (sent, not cumulatively acked).
    pub(super) fn has_outstanding(&self) -> bool {
        self.next_new > 0
    }

    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Highest TSN sent so far.
    pub(super) fn highest_sent(&self) -> u32 {
        self.cum_ack.wrapping_add(self.next_new as u32)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sent_queue(n: usize) -> SendQueue {
        let mut q = SendQueue::new(100, 1);
        for _ in 0..n {
            q.push_message(0, 0, false, Bytes::from_static(&[0u8; 100]), 1000);
        }
        for c in q.queue.iter_mut() {
            c.sent_count = 1;
            c.in_flight = true;
        }
        q.next_new = n;
        q.flight = 100 * n;
        q
    }

    #[test]
    fn fragmentation_flags() {
        let mut q = SendQueue::new(1, 2);
        q.push_message(1, 60, false, Bytes::from(vec![7u8; 2500]), 1000);
        let f: Vec<_> = q
            .queue
            .iter()
            .map(|c| (c.tsn, c.flags, c.data.len()))
            .collect();
        assert_eq!(f, vec![(1, 2, 1000), (2, 0, 1000), (3, 1, 500)]);
        q.push_message(1, 60, false, Bytes::from_static(b"x"), 1000);
        assert_eq!(q.queue[3].ssn, 1);
        assert_eq!(q.buffered, 2501);
    }

    #[test]
    fn cum_ack_and_gaps_and_fast_retransmit() {
        let mut q = sent_queue(6); // TSNs 100..=105
        let r = q.on_sack(100, [(2, 2)].into_iter(), true).unwrap();
        assert!(r.cum_advanced);
        assert_eq!(r.bytes_acked, 200);
        assert_eq!(q.queue[0].tsn, 101);
        assert_eq!(q.queue[0].miss, 1);
        let r = q.on_sack(100, [(2, 3)].into_iter(), true).unwrap();
        assert_eq!(r.bytes_acked, 100);
        assert_eq!(q.queue[0].miss, 2);
        let r = q.on_sack(100, [(2, 4)].into_iter(), true).unwrap();
        assert_eq!(r.newly_fast_marked, 1);
        assert!(q.queue[0].retx);
        assert_eq!(q.retx_pending, 1);
        assert_eq!(q.flight, 100);
        // Old SACK ignored; SACK beyond what was sent rejected.
        assert_eq!(
            q.on_sack(99, std::iter::empty(), false)
                .unwrap()
                .bytes_acked,
            0
        );
        assert!(q.on_sack(200, std::iter::empty(), false).is_none());
        let r = q.on_sack(105, std::iter::empty(), false).unwrap();
        assert_eq!(r.bytes_acked, 200);
        assert!(q.is_empty());
        assert_eq!(q.retx_pending, 0);
        assert_eq!(q.buffered, 0);
    }

    #[test]
    fn reneged_chunks_are_retransmitted() {
        let mut q = sent_queue(4); // TSNs 100..=103
        q.on_sack(99, [(2, 3)].into_iter(), true).unwrap();
        assert_eq!(q.gap_acked, 2);
        assert!(q.queue[1].acked && q.queue[2].acked);
        // The receiver dropped TSN 102 (offset 3) but kept 101.
        let r = q.on_sack(99, [(2, 2)].into_iter(), true).unwrap();
        assert_eq!(r.reneged, 1);
        assert!(!q.queue[2].acked && q.queue[2].retx);
        assert_eq!(q.gap_acked, 1);
        // A SACK without gaps reneges the rest.
        let r = q.on_sack(99, std::iter::empty(), false).unwrap();
        assert_eq!(r.reneged, 1);
        assert_eq!(q.gap_acked, 0);
        assert_eq!(q.retx_pending, 2);
        let r = q.on_sack(103, std::iter::empty(), false).unwrap();
        assert_eq!(r.bytes_acked, 400);
        assert_eq!(q.retx_pending, 0);
    }

    #[test]
    fn hostile_gap_blocks_are_bounded() {
        let mut q = sent_queue(3);
        let r = q
            .on_sack(99, [(1, 65535), (1, 65535), (0, 5)].into_iter(), true)
            .unwrap();
        assert_eq!(r.bytes_acked, 300);
        assert_eq!(q.flight, 0);
    }
}
