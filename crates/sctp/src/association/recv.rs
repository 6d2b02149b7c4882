//! Receive side: TSN tracking for SACKs (RFC 9260 §6.2), reassembly (§6.9) and per-stream
//! ordering (§6.6).

use std::collections::{BTreeMap, HashMap};

use bytes::{Bytes, BytesMut};

use crate::types::Message;
use crate::wire::DataChunk;

/// Gap offsets in a SACK are 16 bits wide; TSNs further ahead cannot be reported, so they
/// are dropped (the sender retransmits them later).
const MAX_TSN_AHEAD: u32 = 65_535;
/// Most out-of-order TSN ranges tracked (a SACK in a 1200-byte packet reports ~290).
const MAX_RANGES: usize = 512;
/// Duplicate TSNs remembered for the next SACK.
const MAX_DUPS: usize = 32;

/// Outcome of offering a DATA chunk to the receive state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DataOutcome {
    /// New TSN, accepted.
    New,
    /// Already received.
    Duplicate,
    /// Not accepted (no buffer space or too far ahead): not acknowledged.
    Dropped,
}

#[derive(Debug)]
struct Fragment {
    flags: u8,
    stream: u16,
    ssn: u16,
    ppid: u32,
    data: Bytes,
}

#[derive(Debug, Default)]
struct InStream {
    next_ssn: u16,
    /// Complete ordered messages waiting for an earlier SSN.
    waiting: HashMap<u16, Message>,
}

/// Receive-side state of one association.
#[derive(Debug)]
pub(super) struct RecvState {
    /// Highest TSN received in sequence (the SACK's cumulative TSN ack).
    pub(super) cum: u32,
    /// `cum` widened to 64 bits so fragment keys never wrap.
    cum_ext: u64,
    /// Received TSN ranges above `cum + 1`, sorted, disjoint and non-adjacent.
    ranges: Vec<(u32, u32)>,
    pub(super) dups: Vec<u32>,
    frags: BTreeMap<u64, Fragment>,
    streams: Vec<InStream>,
    /// Bytes held in fragments and waiting messages (counts against a_rwnd).
    pub(super) buffered: usize,
    /// Most fragments held for reassembly ([`crate::AssociationConfig::max_reassembly_fragments`]).
    max_fragments: usize,
}

impl RecvState {
    pub(super) fn new(peer_initial_tsn: u32, in_streams: u16, max_fragments: usize) -> Self {
        let mut streams = Vec::with_capacity(usize::from(in_streams));
        streams.resize_with(usize::from(in_streams), InStream::default);
        RecvState {
            cum: peer_initial_tsn.wrapping_sub(1),
            cum_ext: 1 << 32,
            ranges: Vec::new(),
            dups: Vec::new(),
            frags: BTreeMap::new(),
            streams,
            buffered: 0,
            max_fragments,
        }
    }

    pub(super) fn has_gaps(&self) -> bool {
        !self.ranges.is_empty()
    }

    /// Gap ack blocks as offsets from `cum` (RFC 9260 §3.3.4), at most `max` of them.
    pub(super) fn gap_blocks(&self, out: &mut Vec<(u16, u16)>, max: usize) {
        out.clear();
        for &(s, e) in self.ranges.iter().take(max) {
            let so = s.wrapping_sub(self.cum);
            let eo = e.wrapping_sub(self.cum);
            if so > MAX_TSN_AHEAD || eo > MAX_TSN_AHEAD {
                break;
            }
            out.push((so as u16, eo as u16));
        }
    }

    /// Distance of `tsn` above the cumulative point.
    fn off(&self, tsn: u32) -> u32 {
        tsn.wrapping_sub(self.cum)
    }

    /// Index of the first range starting above `off` (ranges are sorted by offset).
    fn range_after(&self, off: u32) -> usize {
        self.ranges.partition_point(|&(s, _)| self.off(s) <= off)
    }

    fn is_received(&self, tsn: u32) -> bool {
        let off = self.off(tsn);
        if off == 0 || off > u32::MAX / 2 {
            return true;
        }
        let i = self.range_after(off);
        i > 0
            && self
                .ranges
                .get(i - 1)
                .is_some_and(|&(_, e)| self.off(e) >= off)
    }

    fn ext(&self, tsn: u32) -> u64 {
        let d = tsn.wrapping_sub(self.cum) as i32;
        self.cum_ext.wrapping_add_signed(i64::from(d))
    }

    /// Records `tsn` as received. The caller checked it is new and not too far ahead.
    /// Ranges stay few in practice; the cap in `accept_tsn` bounds the `Vec` shifts.
    fn mark(&mut self, tsn: u32) {
        if tsn == self.cum.wrapping_add(1) {
            self.cum = tsn;
            self.cum_ext += 1;
            while let Some(&(s, e)) = self.ranges.first() {
                if s != self.cum.wrapping_add(1) {
                    break;
                }
                self.cum_ext += u64::from(e.wrapping_sub(self.cum));
                self.cum = e;
                self.ranges.remove(0);
            }
            return;
        }
        let i = self.range_after(self.off(tsn));
        let joins_prev = i > 0 && self.ranges[i - 1].1.wrapping_add(1) == tsn;
        let joins_next = i < self.ranges.len() && self.ranges[i].0 == tsn.wrapping_add(1);
        match (joins_prev, joins_next) {
            (true, true) => {
                self.ranges[i - 1].1 = self.ranges[i].1;
                self.ranges.remove(i);
            }
            (true, false) => self.ranges[i - 1].1 = tsn,
            (false, true) => self.ranges[i].0 = tsn,
            (false, false) => self.ranges.insert(i, (tsn, tsn)),
        }
    }

    /// Classifies a DATA chunk's TSN and, when it is new and acceptable, marks it received.
    /// `window` is the local a_rwnd; `len` the bytes the chunk would occupy.
    pub(super) fn accept_tsn(
        &mut self,
        tsn: u32,
        len: usize,
        fragment: bool,
        window: u32,
    ) -> DataOutcome {
        if self.is_received(tsn) {
            if self.dups.len() < MAX_DUPS {
                self.dups.push(tsn);
            }
            return DataOutcome::Duplicate;
        }
        let off = tsn.wrapping_sub(self.cum);
        if off > MAX_TSN_AHEAD {
            return DataOutcome::Dropped;
        }
        // RFC 9260 §6.2: with no room, drop DATA beyond the cumulative point. The next
        // in-sequence TSN is still taken so the window can always make progress.
        if self.buffered.saturating_add(len) > window as usize && off != 1 {
            return DataOutcome::Dropped;
        }
        if self.buffered.saturating_add(len) > (window as usize).saturating_mul(2) {
            return DataOutcome::Dropped;
        }
        // A peer scattering TSNs or tiny fragments could otherwise make every later chunk
        // expensive; legitimate traffic stays far below these bounds.
        if off != 1
            && (self.ranges.len() >= MAX_RANGES
                || (fragment && self.frags.len() >= self.max_fragments))
        {
            return DataOutcome::Dropped;
        }
        self.mark(tsn);
        DataOutcome::New
    }

    /// Takes a newly accepted DATA chunk's payload and pushes completed messages to `out`.
    pub(super) fn deliver(&mut self, d: &DataChunk<'_>, out: &mut impl FnMut(Message)) {
        if d.beginning() && d.ending() {
            let m = Message {
                stream: d.stream,
                ppid: d.ppid,
                unordered: d.unordered(),
                data: Bytes::copy_from_slice(d.payload),
            };
            self.order(m, d.ssn, out);
            return;
        }
        let key = self.ext(d.tsn);
        self.buffered += d.payload.len();
        self.frags.insert(
            key,
            Fragment {
                flags: d.flags,
                stream: d.stream,
                ssn: d.ssn,
                ppid: d.ppid,
                data: Bytes::copy_from_slice(d.payload),
            },
        );
        if let Some((m, ssn)) = self.reassemble(key) {
            self.order(m, ssn, out);
        }
    }

    /// Looks for a complete B..E run of consecutive TSNs through `key` (RFC 9260 §6.9:
    /// fragments of one message carry consecutive TSNs).
    fn reassemble(&mut self, key: u64) -> Option<(Message, u16)> {
        let mut start = key;
        loop {
            let f = self.frags.get(&start)?;
            if f.flags & crate::wire::data_flags::B != 0 {
                break;
            }
            start = start.checked_sub(1)?;
        }
        let mut end = key;
        loop {
            let f = self.frags.get(&end)?;
            if f.flags & crate::wire::data_flags::E != 0 {
                break;
            }
            end = end.checked_add(1)?;
        }
        let first = self.frags.get(&start)?;
        let (stream, ssn, ppid, flags) = (first.stream, first.ssn, first.ppid, first.flags);
        let mut total = 0usize;
        let mut consistent = true;
        for (_, f) in self.frags.range(start..=end) {
            total += f.data.len();
            consistent &= f.stream == stream && (f.flags ^ flags) & crate::wire::data_flags::U == 0;
        }
        let mut buf = BytesMut::with_capacity(total);
        for k in start..=end {
            if let Some(f) = self.frags.remove(&k) {
                buf.extend_from_slice(&f.data);
            }
        }
        self.buffered = self.buffered.saturating_sub(total);
        if !consistent {
            // A peer that mixes streams inside one message is broken; drop the message.
            return None;
        }
        Some((
            Message {
                stream,
                ppid,
                unordered: flags & crate::wire::data_flags::U != 0,
                data: buf.freeze(),
            },
            ssn,
        ))
    }

    /// Per-stream ordering (RFC 9260 §6.6); unordered messages pass straight through.
    fn order(&mut self, m: Message, ssn: u16, out: &mut impl FnMut(Message)) {
        if m.unordered {
            out(m);
            return;
        }
        let Some(st) = self.streams.get_mut(usize::from(m.stream)) else {
            return;
        };
        if ssn == st.next_ssn {
            out(m);
            st.next_ssn = st.next_ssn.wrapping_add(1);
            while let Some(next) = st.waiting.remove(&st.next_ssn) {
                self.buffered = self.buffered.saturating_sub(next.data.len());
                out(next);
                st.next_ssn = st.next_ssn.wrapping_add(1);
            }
        } else if ssn.wrapping_sub(st.next_ssn) < 0x8000 {
            self.buffered += m.data.len();
            if let Some(old) = st.waiting.insert(ssn, m) {
                // Same SSN twice on new TSNs: a peer bug; keep the newer copy's accounting.
                self.buffered = self.buffered.saturating_sub(old.data.len());
            }
        }
        // An SSN behind next_ssn on a new TSN is a peer bug; the message is dropped.
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::wire::data_flags::{B, E, U};

    fn data(tsn: u32, flags: u8, stream: u16, ssn: u16, payload: &[u8]) -> DataChunk<'_> {
        DataChunk {
            flags,
            tsn,
            stream,
            ssn,
            ppid: 60,
            payload,
        }
    }

    fn offer(r: &mut RecvState, d: DataChunk<'_>, got: &mut Vec<Message>) -> DataOutcome {
        let frag = !(d.beginning() && d.ending());
        let o = r.accept_tsn(d.tsn, d.payload.len(), frag, 1 << 20);
        if o == DataOutcome::New {
            r.deliver(&d, &mut |m| got.push(m));
        }
        o
    }

    #[test]
    fn gaps_and_dups() {
        let mut r = RecvState::new(10, 4, 64);
        let mut got = Vec::new();
        assert_eq!(
            offer(&mut r, data(10, B | E, 0, 0, b"a"), &mut got),
            DataOutcome::New
        );
        assert_eq!(
            offer(&mut r, data(12, B | E, 0, 2, b"c"), &mut got),
            DataOutcome::New
        );
        assert_eq!(
            offer(&mut r, data(14, B | E, 0, 4, b"e"), &mut got),
            DataOutcome::New
        );
        assert_eq!(
            offer(&mut r, data(15, B | E, 0, 5, b"f"), &mut got),
            DataOutcome::New
        );
        assert_eq!(r.cum, 10);
        let mut g = Vec::new();
        r.gap_blocks(&mut g, 10);
        assert_eq!(g, vec![(2, 2), (4, 5)]);
        assert_eq!(
            offer(&mut r, data(12, B | E, 0, 2, b"c"), &mut got),
            DataOutcome::Duplicate
        );
        assert_eq!(
            offer(&mut r, data(9, B | E, 0, 0, b"c"), &mut got),
            DataOutcome::Duplicate
        );
        assert_eq!(r.dups, vec![12, 9]);
        assert_eq!(got.len(), 1);
        assert_eq!(
            offer(&mut r, data(11, B | E, 0, 1, b"b"), &mut got),
            DataOutcome::New
        );
        assert_eq!(r.cum, 12);
        assert_eq!(
            offer(&mut r, data(13, B | E, 0, 3, b"d"), &mut got),
            DataOutcome::New
        );
        assert_eq!(r.cum, 15);
        assert!(!r.has_gaps());
        let s: Vec<u8> = got.iter().map(|m| m.data[0]).collect();
        assert_eq!(s, b"abcdef");
        assert_eq!(r.buffered, 0);
    }

    #[test]
    fn reassembly_out_of_order_and_unordered() {
        let mut r = RecvState::new(u32::MAX - 1, 2, 64);
        let mut got = Vec::new();
        // A 3-fragment ordered message across the TSN wrap, arriving E, B, middle.
        offer(&mut r, data(0, E, 1, 0, b"cc"), &mut got);
        offer(&mut r, data(u32::MAX - 1, B, 1, 0, b"aa"), &mut got);
        assert!(got.is_empty());
        // An unordered single chunk overtakes.
        offer(&mut r, data(1, B | E | U, 0, 0, b"u"), &mut got);
        assert_eq!(got.len(), 1);
        assert!(got[0].unordered);
        offer(&mut r, data(u32::MAX, 0, 1, 0, b"bb"), &mut got);
        assert_eq!(got.len(), 2);
        assert_eq!(&got[1].data[..], b"aabbcc");
        assert_eq!(got[1].stream, 1);
        assert_eq!(r.cum, 1);
        assert_eq!(r.buffered, 0);
    }

    #[test]
    fn window_and_far_tsns() {
        let mut r = RecvState::new(1, 1, 64);
        assert_eq!(
            r.accept_tsn(1 + 70_000, 10, false, 1000),
            DataOutcome::Dropped
        );
        r.buffered = 995;
        assert_eq!(r.accept_tsn(3, 10, false, 1000), DataOutcome::Dropped);
        assert_eq!(r.accept_tsn(1, 10, false, 1000), DataOutcome::New);
    }

    #[test]
    fn fragments_held_for_reassembly_are_bounded() {
        let mut r = RecvState::new(1, 1, 3);
        let mut got = Vec::new();
        // Beginnings of messages that never end, scattered past the cumulative point.
        for tsn in [3, 5, 7] {
            assert_eq!(
                offer(&mut r, data(tsn, B, 0, 0, b"x"), &mut got),
                DataOutcome::New
            );
        }
        assert_eq!(
            offer(&mut r, data(9, B, 0, 0, b"x"), &mut got),
            DataOutcome::Dropped
        );
        // Unfragmented data still gets through, and so does the next TSN in sequence
        // even as a fragment: the window must always be able to move.
        assert_eq!(
            offer(&mut r, data(10, B | E, 0, 0, b"y"), &mut got),
            DataOutcome::New
        );
        assert_eq!(
            offer(&mut r, data(1, B, 0, 0, b"z"), &mut got),
            DataOutcome::New
        );
        assert_eq!(r.frags.len(), 4);
    }

    #[test]
    fn scattered_tsns_are_bounded() {
        let mut r = RecvState::new(1, 1, 64);
        for i in 0..2000u32 {
            r.accept_tsn(3 + 2 * i, 1, false, 1 << 20);
        }
        assert_eq!(r.ranges.len(), MAX_RANGES);
        // Still correct: in-sequence TSNs are taken and merge the ranges.
        assert_eq!(r.accept_tsn(1, 1, false, 1 << 20), DataOutcome::New);
        assert_eq!(r.accept_tsn(2, 1, false, 1 << 20), DataOutcome::New);
        assert_eq!(r.cum, 3);
        assert!(r.is_received(5));
        assert!(!r.is_received(4));
        assert_eq!(r.ranges.len(), MAX_RANGES - 1);
    }
}
