//! SQN: owned by one UDM shard in memory, persisted ahead of use, never backwards.
//!
//! # Format and increment (TS 33.102 Annex C)
//!
//! SQN is 48 bits, `SEQ || IND` with IND the low 5 bits (Annex C.3.2). We use the
//! non-time-based scheme of Annex C.1.1.2: each authentication vector takes `SEQ + 1`, and IND
//! keeps the value the subscriber was provisioned with (0 unless the operator chose another).
//! One UDM shard issues every vector of a subscriber in order, so a single IND slot of the
//! USIM's array suffices and SEQ alone carries the freshness. In numbers: the next SQN is the
//! previous one plus 32. The stored value of a subscriber is the last SQN issued (or
//! provisioned), so a subscriber provisioned with SQN 0 gets 0x20 in its first vector.
//!
//! # Never backwards, off the hot path
//!
//! The shard ([`SqnShard`]) keeps each subscriber's last issued SQN in memory and hands out
//! the next one without touching the store. What the store holds is a *high-water mark*: an
//! SQN at or above every SQN the shard has issued. The shard may issue an SQN only if it is at
//! or below a high-water mark the store has acknowledged as durable. It asks for the next
//! block of [`SqnShard::block`] SQNs when half of the current one is used, through
//! [`SqnShard::poll_persist`]; the runtime performs that write whenever it likes (another
//! thread, a batch) and reports it back with [`SqnShard::persisted`]. Only when a subscriber
//! burns through a whole half-block before the write is acknowledged does
//! [`SqnShard::next`] answer [`SqnError::AwaitingPersist`].
//!
//! After a crash or a restart the shard loads the stored high-water mark as the "last issued"
//! value, so its first SQN is above every SQN issued before; at most one block of SQN space is
//! skipped, which the USIM accepts (TS 33.102 §6.3.3 only requires SQN to increase, within the
//! limit Δ of Annex C.2.1, far above the block size). The store's
//! [`crate::SubscriberStore::sqn_persist`] is compare-and-max, so a late or reordered write
//! can never lower the mark either.

use std::collections::{HashMap, VecDeque};

use crate::{StoreError, SubscriberStore};

/// Largest SQN: 48 bits (TS 33.102 §6.3.2).
pub const SQN_MAX: u64 = (1 << 48) - 1;

/// Bits of IND in SQN = SEQ || IND (TS 33.102 Annex C.3.2).
pub const IND_BITS: u32 = 5;

/// What one authentication vector adds to SQN: SEQ + 1, IND unchanged.
pub const SQN_STEP: u64 = 1 << IND_BITS;

/// Default number of SQNs reserved per store write.
pub const DEFAULT_BLOCK: u64 = 64;

/// The SQN `n` vectors after `sqn`: SEQ + n with IND kept, or `None` past 48 bits.
pub fn sqn_after(sqn: u64, n: u64) -> Option<u64> {
    n.checked_mul(SQN_STEP)
        .and_then(|d| sqn.checked_add(d))
        .filter(|s| *s <= SQN_MAX)
}

/// The SQN a subscriber gets in its next vector.
pub fn next_sqn(sqn: u64) -> Option<u64> {
    sqn_after(sqn, 1)
}

/// Why the shard cannot issue an SQN now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SqnError {
    /// The subscriber's stored SQN was not loaded into this shard.
    #[error("SQN of {0} not loaded in this shard")]
    NotLoaded(String),
    /// Every reserved SQN has been issued and the next reservation is not yet durable:
    /// persist what [`SqnShard::poll_persist`] asks, then try again.
    #[error("SQN reservation of {0} not yet persisted")]
    AwaitingPersist(String),
    /// SEQ has reached its 43-bit limit; the subscriber needs new credentials.
    #[error("SQN of {0} exhausted")]
    Exhausted(String),
}

/// A high-water mark the shard wants persisted before it issues SQNs beyond it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistRequest {
    /// The subscriber.
    pub supi: String,
    /// The high-water mark: at or above every SQN the shard will issue until the next request.
    pub high_water: u64,
}

#[derive(Debug, Clone)]
struct State {
    /// Last SQN issued (or the mark loaded at start).
    last: u64,
    /// Highest mark the store has acknowledged as durable.
    durable: u64,
    /// A mark asked for and not yet acknowledged.
    requested: Option<u64>,
}

/// The SQN state of the subscribers one UDM shard owns. Sans-IO: it never touches the store
/// itself; see the module documentation for the protocol.
#[derive(Debug)]
pub struct SqnShard {
    block: u64,
    subs: HashMap<String, State>,
    pending: VecDeque<PersistRequest>,
}

impl SqnShard {
    /// A shard reserving `block` SQNs per store write (at least 2).
    pub fn new(block: u64) -> Self {
        SqnShard {
            block: block.max(2),
            subs: HashMap::new(),
            pending: VecDeque::new(),
        }
    }

    /// SQNs reserved per store write.
    pub fn block(&self) -> u64 {
        self.block
    }

    /// Whether the subscriber's SQN is loaded here.
    pub fn is_loaded(&self, supi: &str) -> bool {
        self.subs.contains_key(supi)
    }

    /// Takes ownership of a subscriber's SQN, `stored` being the mark read from the store.
    /// Loading a subscriber twice keeps the higher of the two views.
    pub fn load(&mut self, supi: &str, stored: u64) {
        let s = self.subs.entry(supi.to_string()).or_insert(State {
            last: stored,
            durable: stored,
            requested: None,
        });
        s.last = s.last.max(stored);
        s.durable = s.durable.max(stored);
    }

    /// Forgets a subscriber (deleted, or handed to another shard after its pending writes).
    pub fn unload(&mut self, supi: &str) {
        self.subs.remove(supi);
        self.pending.retain(|p| p.supi != supi);
    }

    /// The SQN for the subscriber's next authentication vector (TS 33.102 Annex C.1.1.2).
    pub fn next(&mut self, supi: &str) -> Result<u64, SqnError> {
        let block = self.block;
        let s = self
            .subs
            .get_mut(supi)
            .ok_or_else(|| SqnError::NotLoaded(supi.to_string()))?;
        let Some(candidate) = next_sqn(s.last) else {
            return Err(SqnError::Exhausted(supi.to_string()));
        };
        // Ask for the next block while half of this one is left, so that the write has
        // half a block of vectors' time to land before anyone waits for it.
        let low_water = sqn_after(candidate, block / 2).unwrap_or(SQN_MAX);
        if s.requested.is_none() && low_water > s.durable {
            let base = s.durable.max(candidate);
            let mark = sqn_after(base, block).unwrap_or(SQN_MAX);
            if mark > s.durable {
                s.requested = Some(mark);
                self.pending.push_back(PersistRequest {
                    supi: supi.to_string(),
                    high_water: mark,
                });
            }
        }
        if candidate > s.durable {
            return Err(SqnError::AwaitingPersist(supi.to_string()));
        }
        s.last = candidate;
        Ok(candidate)
    }

    /// A re-synchronisation: the USIM reported SQN_MS in AUTS (TS 33.102 §6.3.5), so the next
    /// vector must be above it. Never lowers the shard's view.
    pub fn resync(&mut self, supi: &str, sqn_ms: u64) -> Result<(), SqnError> {
        let s = self
            .subs
            .get_mut(supi)
            .ok_or_else(|| SqnError::NotLoaded(supi.to_string()))?;
        s.last = s.last.max(sqn_ms.min(SQN_MAX));
        Ok(())
    }

    /// The next store write the shard needs, if any.
    pub fn poll_persist(&mut self) -> Option<PersistRequest> {
        self.pending.pop_front()
    }

    /// The store has durably recorded at least `high_water` for the subscriber.
    pub fn persisted(&mut self, supi: &str, high_water: u64) {
        if let Some(s) = self.subs.get_mut(supi) {
            s.durable = s.durable.max(high_water);
            if s.requested.is_some_and(|r| r <= s.durable) {
                s.requested = None;
            }
        }
    }

    /// A write failed: forget the request so that the next [`SqnShard::next`] asks again.
    pub fn persist_failed(&mut self, supi: &str) {
        if let Some(s) = self.subs.get_mut(supi) {
            s.requested = None;
        }
    }

    /// Performs every pending write against `store`, synchronously. A runtime that wants the
    /// writes off its hot path calls this from another thread or drains
    /// [`SqnShard::poll_persist`] itself.
    pub fn flush(&mut self, store: &dyn SubscriberStore) -> Result<(), StoreError> {
        while let Some(p) = self.poll_persist() {
            match store.sqn_persist(&p.supi, p.high_water) {
                Ok(stored) => self.persisted(&p.supi, stored),
                Err(e) => {
                    self.persist_failed(&p.supi);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// [`SqnShard::next`], loading the subscriber and persisting reservations through `store`
    /// as needed: the simple synchronous driver (tools, tests, a single-threaded UDM).
    pub fn next_with(
        &mut self,
        store: &dyn SubscriberStore,
        supi: &str,
    ) -> Result<u64, StoreError> {
        if !self.is_loaded(supi) {
            let sub = store
                .get(supi)?
                .ok_or_else(|| StoreError::NotFound(supi.to_string()))?;
            self.load(supi, sub.sqn);
        }
        loop {
            match self.next(supi) {
                Ok(sqn) => {
                    self.flush(store)?;
                    return Ok(sqn);
                }
                Err(SqnError::AwaitingPersist(_)) => self.flush(store)?,
                Err(e) => return Err(StoreError::Sqn(e)),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn increments_seq_and_keeps_ind() {
        assert_eq!(next_sqn(0), Some(0x20));
        assert_eq!(next_sqn(0x23), Some(0x43));
        assert_eq!(next_sqn(SQN_MAX), None);
        assert_eq!(next_sqn(SQN_MAX - 31), None);
        assert_eq!(next_sqn(SQN_MAX - 32), Some(SQN_MAX));
        assert_eq!(sqn_after(0, u64::MAX), None);
    }

    #[test]
    fn issues_only_below_the_durable_mark() {
        let mut sh = SqnShard::new(4);
        sh.load("imsi-00101", 0);
        // nothing durable yet beyond 0: the first call asks for a block and waits
        assert_eq!(
            sh.next("imsi-00101"),
            Err(SqnError::AwaitingPersist("imsi-00101".into()))
        );
        let p = sh.poll_persist().unwrap();
        assert_eq!(p.high_water, 0x20 * 5);
        assert!(sh.poll_persist().is_none());
        sh.persisted(&p.supi, p.high_water);
        let mut issued = vec![];
        for _ in 0..5 {
            match sh.next("imsi-00101") {
                Ok(s) => issued.push(s),
                Err(SqnError::AwaitingPersist(_)) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(issued.iter().all(|s| *s <= p.high_water));
        assert_eq!(issued, vec![0x20, 0x40, 0x60, 0x80, 0xa0]);
        // half way through it asked for the next block, before running out
        let p2 = sh.poll_persist().unwrap();
        assert!(p2.high_water > p.high_water);
        assert_eq!(
            sh.next("imsi-00101"),
            Err(SqnError::AwaitingPersist("imsi-00101".into()))
        );
        sh.persisted(&p2.supi, p2.high_water);
        assert_eq!(sh.next("imsi-00101"), Ok(0xc0));
    }

    #[test]
    fn not_loaded_and_exhausted() {
        let mut sh = SqnShard::new(8);
        assert!(matches!(sh.next("imsi-00101"), Err(SqnError::NotLoaded(_))));
        sh.load("imsi-00101", SQN_MAX - 5);
        assert!(matches!(sh.next("imsi-00101"), Err(SqnError::Exhausted(_))));
    }

    #[test]
    fn resync_moves_forward_only() {
        let mut sh = SqnShard::new(8);
        sh.load("imsi-00101", 0x1000);
        sh.persisted("imsi-00101", 0x10000);
        sh.resync("imsi-00101", 0x20).unwrap();
        assert_eq!(sh.next("imsi-00101"), Ok(0x1020));
        sh.resync("imsi-00101", 0x2000).unwrap();
        assert_eq!(sh.next("imsi-00101"), Ok(0x2020));
    }
}
