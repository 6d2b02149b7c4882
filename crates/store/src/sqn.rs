//! SQN: owned by one UDM shard in memory, persisted ahead of use, never backwards.
//!
//! # Format and increment (TS 33.102 Annex C)
//!
//! SQN is 48 bits, `SEQ || IND` with IND the low 5 bits (Annex C.3.2). We use the
//! non-time-based scheme of Annex C.1.1.2: each authentication vector takes `SEQ + 1`. With one
//! UDM instance, IND keeps the value the subscriber was provisioned with (0 unless the operator
//! chose another): one shard issues every vector of a subscriber in order, so a single IND
//! slot of the USIM's array suffices and SEQ alone carries the freshness. In numbers: the next
//! SQN is the previous one plus 32. The stored value of a subscriber is a counter, the last SQN
//! claimed (or provisioned), so a subscriber provisioned with SQN 0 gets 0x20 in its first
//! vector.
//!
//! # Never backwards, never twice, off the hot path
//!
//! The shard ([`SqnShard`]) keeps each subscriber's last issued SQN in memory and hands out
//! the next one without touching the store. It may issue only SQNs the store has granted it in
//! a *claim*: the store raises the subscriber's counter by a block of [`SqnShard::block`]
//! vectors in one atomic, durable write and answers with the range (`start`, `end`]
//! ([`crate::SubscriberStore::sqn_claim`]). The shard asks for the next block when half of the
//! current one is used, through [`SqnShard::poll_persist`]; the runtime performs the write
//! whenever it likes (another thread, a batch) and reports it back with
//! [`SqnShard::claimed`]. Only when a subscriber burns through a whole half-block before the
//! claim is granted does [`SqnShard::next`] answer [`SqnError::AwaitingPersist`].
//!
//! After a crash or a restart the shard loads the stored counter as the "last issued" value,
//! so its first SQN is above every SQN issued before; at most one block of SQN space is
//! skipped, which the USIM accepts (TS 33.102 §6.3.3 only requires SQN to increase, within the
//! limit Δ of Annex C.2.1, far above the block size).
//!
//! # Several UDM instances on one store
//!
//! Claims are atomic on the shared counter, so two instances never hold the same range: no
//! two authentications anywhere get the same SEQ, whatever the interleaving, and a crash
//! between a claim and its use only leaves a gap. Each instance also issues from its own IND
//! ([`SqnShard::with_ind`], Annex C.1.2 and C.3: the array of the USIM has a slot per IND):
//! within one instance SEQ increases, so each (subscriber, IND) sequence the USIM checks is
//! increasing, even when instances interleave. A shard whose claim does not continue its
//! previous one (another instance claimed in between) jumps to the claim's start, so every
//! instance follows the shared counter: what an instance issues lags the newest SEQ by at most
//! the remainder of its current claim (under a block). That matters only to a USIM that
//! enforces the optional age limit L of Annex C.2.2, with L below the block size.

use std::collections::{HashMap, VecDeque};

use crate::{StoreError, SubscriberStore};

/// Largest SQN: 48 bits (TS 33.102 §6.3.2).
pub const SQN_MAX: u64 = (1 << 48) - 1;

/// Bits of IND in SQN = SEQ || IND (TS 33.102 Annex C.3.2).
pub const IND_BITS: u32 = 5;

/// What one authentication vector adds to SQN: SEQ + 1, IND unchanged.
pub const SQN_STEP: u64 = 1 << IND_BITS;

/// The IND bits of an SQN.
pub const IND_MASK: u64 = SQN_STEP - 1;

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

/// SQNs the shard wants claimed in the store before it issues them: the store raises the
/// subscriber's counter from `max(stored, floor)` by `count` vectors, atomically, and answers
/// with the [`Claim`] (see [`crate::SubscriberStore::sqn_claim`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistRequest {
    /// The subscriber.
    pub supi: String,
    /// The claim starts at or above this: the shard's own view (its last issued SQN and its
    /// last claim), which a re-synchronisation may have put above the stored counter.
    pub floor: u64,
    /// Vectors to claim.
    pub count: u64,
}

/// SQNs a store granted: the shard may issue those above `start` up to `end`, and no other
/// claim anywhere gets any of them (the counter is `end` now).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The counter before the claim (exclusive bound).
    pub start: u64,
    /// The counter after the claim (inclusive bound).
    pub end: u64,
}

#[derive(Debug, Clone)]
struct State {
    /// Last SQN counter value issued (or the counter loaded at start).
    last: u64,
    /// End of the last claim the store granted: the shard issues nothing above it.
    durable: u64,
    /// A claim asked for and not yet answered.
    requested: bool,
}

/// The SQN state of the subscribers one UDM shard owns. Sans-IO: it never touches the store
/// itself; see the module documentation for the protocol.
#[derive(Debug)]
pub struct SqnShard {
    block: u64,
    ind: Option<u8>,
    subs: HashMap<String, State>,
    pending: VecDeque<PersistRequest>,
}

impl SqnShard {
    /// A shard claiming `block` SQNs per store write (at least 2) that keeps each
    /// subscriber's provisioned IND: the shard of the only UDM instance.
    pub fn new(block: u64) -> Self {
        Self::with_ind(block, None)
    }

    /// A shard of one of several UDM instances sharing a store: every SQN it issues carries
    /// IND `ind` (the instance's own, 0..=31), so that the USIM checks each instance's
    /// sequence in its own array slot (TS 33.102 Annex C.1.2, C.2.2). `None` keeps the
    /// provisioned IND.
    pub fn with_ind(block: u64, ind: Option<u8>) -> Self {
        SqnShard {
            block: block.max(2),
            ind: ind.map(|i| i & IND_MASK as u8),
            subs: HashMap::new(),
            pending: VecDeque::new(),
        }
    }

    /// SQNs claimed per store write.
    pub fn block(&self) -> u64 {
        self.block
    }

    /// The IND every issued SQN carries, if the shard sets one.
    pub fn ind(&self) -> Option<u8> {
        self.ind
    }

    /// Whether the subscriber's SQN is loaded here.
    pub fn is_loaded(&self, supi: &str) -> bool {
        self.subs.contains_key(supi)
    }

    /// Takes ownership of a subscriber's SQN, `stored` being the counter read from the store.
    /// Nothing is issued until a claim above it is granted. Loading a subscriber again keeps
    /// the higher of the two views, and a higher stored counter (another instance's claims)
    /// moves the last issued value past it, so the shard never issues inside another claim.
    pub fn load(&mut self, supi: &str, stored: u64) {
        let s = self.subs.entry(supi.to_string()).or_insert(State {
            last: stored,
            durable: stored,
            requested: false,
        });
        s.last = s.last.max(stored);
        s.durable = s.durable.max(stored);
    }

    /// Forgets a subscriber (deleted, or handed to another shard after its pending writes).
    pub fn unload(&mut self, supi: &str) {
        self.subs.remove(supi);
        self.pending.retain(|p| p.supi != supi);
    }

    /// The SQN for the subscriber's next authentication vector (TS 33.102 Annex C.1.1.2):
    /// SEQ + 1, with this shard's IND if it has one.
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
        if !s.requested && low_water > s.durable && s.durable < SQN_MAX {
            s.requested = true;
            self.pending.push_back(PersistRequest {
                supi: supi.to_string(),
                floor: s.durable.max(s.last),
                count: block,
            });
        }
        if candidate > s.durable {
            return Err(SqnError::AwaitingPersist(supi.to_string()));
        }
        s.last = candidate;
        Ok(match self.ind {
            Some(ind) => (candidate & !IND_MASK) | u64::from(ind),
            None => candidate,
        })
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

    /// The store granted `claim` for the subscriber. A claim that does not continue the
    /// previous one (another instance claimed the SQNs between) moves the shard past the gap.
    pub fn claimed(&mut self, supi: &str, claim: Claim) {
        if let Some(s) = self.subs.get_mut(supi) {
            if claim.start > s.durable {
                s.last = s.last.max(claim.start);
            }
            s.durable = s.durable.max(claim.end);
            s.requested = false;
        }
    }

    /// A write failed: forget the request so that the next [`SqnShard::next`] asks again.
    pub fn persist_failed(&mut self, supi: &str) {
        if let Some(s) = self.subs.get_mut(supi) {
            s.requested = false;
        }
    }

    /// Performs every pending claim against `store`, synchronously. A runtime that wants the
    /// writes off its hot path calls this from another thread or drains
    /// [`SqnShard::poll_persist`] itself.
    pub fn flush(&mut self, store: &dyn SubscriberStore) -> Result<(), StoreError> {
        while let Some(p) = self.poll_persist() {
            match store.sqn_claim(&p.supi, p.floor, p.count) {
                Ok(claim) => self.claimed(&p.supi, claim),
                Err(e) => {
                    self.persist_failed(&p.supi);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// [`SqnShard::next`], loading the subscriber and claiming SQNs through `store` as needed:
    /// the simple synchronous driver (tools, tests, a single-threaded UDM).
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
    fn issues_only_inside_claims() {
        let mut sh = SqnShard::new(4);
        sh.load("imsi-00101", 0);
        // nothing claimed yet beyond 0: the first call asks for a block and waits
        assert_eq!(
            sh.next("imsi-00101"),
            Err(SqnError::AwaitingPersist("imsi-00101".into()))
        );
        let p = sh.poll_persist().unwrap();
        assert_eq!((p.floor, p.count), (0, 4));
        assert!(sh.poll_persist().is_none());
        sh.claimed(
            &p.supi,
            Claim {
                start: 0,
                end: 0x80,
            },
        );
        let mut issued = vec![];
        for _ in 0..5 {
            match sh.next("imsi-00101") {
                Ok(s) => issued.push(s),
                Err(SqnError::AwaitingPersist(_)) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(issued, vec![0x20, 0x40, 0x60, 0x80]);
        // half way through it asked for the next block, before running out
        let p2 = sh.poll_persist().unwrap();
        assert_eq!(p2.floor, 0x80);
        assert_eq!(
            sh.next("imsi-00101"),
            Err(SqnError::AwaitingPersist("imsi-00101".into()))
        );
        // the counter moved on meanwhile (another instance claimed 0x80..=0x100): the shard
        // jumps past that claim
        sh.claimed(
            &p2.supi,
            Claim {
                start: 0x100,
                end: 0x180,
            },
        );
        assert_eq!(sh.next("imsi-00101"), Ok(0x120));
    }

    #[test]
    fn an_instance_ind_replaces_the_provisioned_one() {
        let mut sh = SqnShard::with_ind(8, Some(3));
        sh.load("imsi-00101", 0x41); // provisioned with IND 1
        let p = sh.poll_persist();
        assert!(p.is_none());
        assert!(sh.next("imsi-00101").is_err());
        let p = sh.poll_persist().unwrap();
        sh.claimed(
            &p.supi,
            Claim {
                start: 0x41,
                end: 0x141,
            },
        );
        assert_eq!(sh.next("imsi-00101"), Ok(0x63));
        assert_eq!(sh.next("imsi-00101"), Ok(0x83));
        assert_eq!(SqnShard::with_ind(8, Some(40)).ind(), Some(8));
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
        sh.claimed(
            "imsi-00101",
            Claim {
                start: 0x1000,
                end: 0x10000,
            },
        );
        sh.resync("imsi-00101", 0x20).unwrap();
        assert_eq!(sh.next("imsi-00101"), Ok(0x1020));
        sh.resync("imsi-00101", 0x2000).unwrap();
        assert_eq!(sh.next("imsi-00101"), Ok(0x2020));
    }
}
