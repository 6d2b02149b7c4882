//! The backend-neutral store interface, its errors, and an in-memory implementation for tests
//! and for NF unit tests that need a UDR without a file.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use crate::sqn::{sqn_after, Claim, PersistRequest, SqnError, SQN_MAX};
use crate::subscriber::{DecodeError, FieldError, Subscriber};
use crate::udm_state::{StateField, StateWrite, UdmState};

/// Why a store operation failed. Never carries K, OP or OPc.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No subscriber with this SUPI.
    #[error("no subscriber {0}")]
    NotFound(String),
    /// A subscriber with this SUPI exists already.
    #[error("subscriber {0} exists already")]
    AlreadyExists(String),
    /// The record to write is not valid.
    #[error("subscriber {supi}: {source}")]
    Invalid {
        /// The subscriber's SUPI as given.
        supi: String,
        /// What is wrong.
        source: FieldError,
    },
    /// A stored record could not be decoded.
    #[error("stored record of {supi} is corrupt: {source}")]
    Corrupt {
        /// The subscriber.
        supi: String,
        /// What is wrong with the bytes.
        source: DecodeError,
    },
    /// The change asked for is refused (an SQN lowered without a new K).
    #[error("subscriber {supi}: {reason}")]
    NotAllowed {
        /// The subscriber.
        supi: String,
        /// Why.
        reason: String,
    },
    /// The store is held by another process (the embedded engine allows one at a time).
    #[error("store {0} is in use by another process")]
    Busy(String),
    /// An SQN operation cannot proceed.
    #[error(transparent)]
    Sqn(#[from] SqnError),
    /// The engine failed (I/O, storage).
    #[error("store engine: {0}")]
    Backend(String),
    /// The database server cannot be reached now (refused, restarting, connection lost):
    /// a temporary condition, the next call tries again.
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

/// The UDR's subscriber data, whatever holds it. Implemented by the embedded
/// [`crate::RedbStore`] and [`MemStore`]; a PostgreSQL backend will implement it later, which
/// is why nothing here exposes engine types or transactions.
///
/// Invariant of every implementation: a subscriber's stored SQN never decreases while the
/// subscriber exists, except through [`SubscriberStore::modify`] (whose caller lowers it only
/// with a new K: a new SIM). `put`, `put_batch` and `sqn_persist` keep the larger of the
/// stored and the written SQN (compare-and-max); only `delete` forgets it.
pub trait SubscriberStore: Send + Sync {
    /// The subscriber with this SUPI, if any.
    fn get(&self, supi: &str) -> Result<Option<Subscriber>, StoreError>;

    /// The subscriber as a serving NF reads it, several times per procedure: possibly from a
    /// cache, with every field at most a change notification old, except `sqn`, which may
    /// be behind the stored counter (SQNs are claimed in the store, never issued from this
    /// value: see [`crate::sqn`]). Tools and the provisioning API use [`Self::get`].
    fn get_cached(&self, supi: &str) -> Result<Option<Subscriber>, StoreError> {
        self.get(supi)
    }

    /// Adds a new subscriber; [`StoreError::AlreadyExists`] if the SUPI is taken.
    fn insert(&self, sub: &Subscriber) -> Result<(), StoreError>;

    /// Adds or replaces subscribers in one atomic, durable write; the SQN of a replaced
    /// subscriber becomes the larger of the old and the new.
    fn put_batch(&self, subs: &[Subscriber]) -> Result<(), StoreError>;

    /// Adds or replaces one subscriber (see [`SubscriberStore::put_batch`]).
    fn put(&self, sub: &Subscriber) -> Result<(), StoreError> {
        self.put_batch(std::slice::from_ref(sub))
    }

    /// Reads the subscriber, lets `change` edit it and writes the result back, in one atomic,
    /// durable write; returns what is stored. `change` sees the stored record as it is at that
    /// moment (the SQN the UDM persisted a millisecond ago included), so an edit that leaves
    /// a field alone never writes an older value of it. An error from `change` writes nothing
    /// and is returned as it is. The SUPI cannot be changed.
    fn modify(
        &self,
        supi: &str,
        change: &mut dyn FnMut(&mut Subscriber) -> Result<(), StoreError>,
    ) -> Result<Subscriber, StoreError>;

    /// Removes a subscriber; `false` if there was none.
    fn delete(&self, supi: &str) -> Result<bool, StoreError>;

    /// Up to `limit` subscribers in SUPI order, starting after `after` (exclusive): call again
    /// with the last SUPI of a page to get the next.
    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<Subscriber>, StoreError>;

    /// Number of subscribers.
    fn count(&self) -> Result<u64, StoreError>;

    /// Records that SQNs up to `sqn` may have been issued: the stored SQN becomes
    /// `max(stored, sqn)`, durably, and the result is returned.
    fn sqn_persist(&self, supi: &str, sqn: u64) -> Result<u64, StoreError>;

    /// Claims `count` vectors' worth of SQNs for one UDM shard, atomically and durably: the
    /// counter becomes `max(stored, floor)` raised by `count` vectors, and the answer is the
    /// range granted. No two claims ever overlap, even from several processes: the shard
    /// issues only inside its claims (see [`crate::sqn`]).
    fn sqn_claim(&self, supi: &str, floor: u64, count: u64) -> Result<Claim, StoreError>;

    /// [`sqn_claim`](Self::sqn_claim) for many subscribers at once, one result per entry in
    /// order. A backend makes it one durable write (group commit), so a burst of new
    /// subscribers costs one sync instead of one each; the default claims one by one.
    fn sqn_claim_batch(&self, batch: &[&PersistRequest]) -> Vec<Result<Claim, StoreError>> {
        batch
            .iter()
            .map(|p| self.sqn_claim(&p.supi, p.floor, p.count))
            .collect()
    }

    /// Whether this store keeps the UDM's state ([`crate::udm_state`]): when it does, a UDM
    /// writes its state behind and reads it back when its memory has none.
    fn keeps_udm_state(&self) -> bool {
        false
    }

    /// Applies `writes` in order, in one durable write; a write for a subscriber that is gone
    /// is dropped. The default keeps nothing.
    fn udm_state_save(&self, writes: &[StateWrite]) -> Result<(), StoreError> {
        let _ = writes;
        Ok(())
    }

    /// The state stored for `supi` (all `None` when there is none).
    fn udm_state(&self, supi: &str) -> Result<UdmState, StoreError> {
        let _ = supi;
        Ok(UdmState::default())
    }

    /// Visits every subscriber in SUPI order, a page at a time.
    fn for_each(
        &self,
        page: usize,
        f: &mut dyn FnMut(&Subscriber) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut after: Option<String> = None;
        loop {
            let batch = self.list(after.as_deref(), page.max(1))?;
            for s in &batch {
                f(s)?;
            }
            match batch.last() {
                Some(last) if batch.len() >= page.max(1) => after = Some(last.supi.clone()),
                _ => return Ok(()),
            }
        }
    }
}

/// Checks a record before any write (every backend calls it).
pub fn check(sub: &Subscriber) -> Result<(), StoreError> {
    sub.validate().map_err(|source| StoreError::Invalid {
        supi: sub.supi.chars().take(40).collect(),
        source,
    })
}

/// Applies a [`SubscriberStore::modify`] edit to `old` and checks the result.
pub fn modified(
    old: Subscriber,
    change: &mut dyn FnMut(&mut Subscriber) -> Result<(), StoreError>,
) -> Result<Subscriber, StoreError> {
    let mut sub = old.clone();
    change(&mut sub)?;
    if sub.supi != old.supi {
        return Err(StoreError::NotAllowed {
            supi: old.supi,
            reason: "the SUPI of a subscriber cannot be changed".to_owned(),
        });
    }
    check(&sub)?;
    Ok(sub)
}

/// The claim of `count` vectors above `max(stored, floor)`.
pub fn claim_above(supi: &str, stored: u64, floor: u64, count: u64) -> Result<Claim, StoreError> {
    let start = stored.max(floor.min(SQN_MAX));
    let end = sqn_after(start, count)
        .ok_or_else(|| StoreError::Sqn(SqnError::Exhausted(supi.to_string())))?;
    Ok(Claim { start, end })
}

/// Subscribers in a map behind a mutex: no persistence. For tests and in-process demos.
#[derive(Debug, Default)]
pub struct MemStore {
    map: Mutex<BTreeMap<String, Subscriber>>,
    /// The UDM's state, when this store keeps it (as a shared store would).
    state: Option<Mutex<BTreeMap<String, UdmState>>>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that also keeps the UDM's state, as PostgreSQL does: for tests of a
    /// UDM that reads its state back.
    pub fn keeping_udm_state() -> Self {
        MemStore {
            map: Mutex::default(),
            state: Some(Mutex::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Subscriber>> {
        // A panic elsewhere while holding the lock leaves the map consistent (every
        // operation is a single insert/remove), so a poisoned lock is still usable.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SubscriberStore for MemStore {
    fn get(&self, supi: &str) -> Result<Option<Subscriber>, StoreError> {
        Ok(self.lock().get(supi).cloned())
    }

    fn insert(&self, sub: &Subscriber) -> Result<(), StoreError> {
        check(sub)?;
        let mut m = self.lock();
        if m.contains_key(&sub.supi) {
            return Err(StoreError::AlreadyExists(sub.supi.clone()));
        }
        m.insert(sub.supi.clone(), sub.clone());
        Ok(())
    }

    fn put_batch(&self, subs: &[Subscriber]) -> Result<(), StoreError> {
        for s in subs {
            check(s)?;
        }
        let mut m = self.lock();
        for s in subs {
            let mut s = s.clone();
            if let Some(old) = m.get(&s.supi) {
                s.sqn = s.sqn.max(old.sqn);
            }
            m.insert(s.supi.clone(), s);
        }
        Ok(())
    }

    fn modify(
        &self,
        supi: &str,
        change: &mut dyn FnMut(&mut Subscriber) -> Result<(), StoreError>,
    ) -> Result<Subscriber, StoreError> {
        let mut m = self.lock();
        let old = m
            .get(supi)
            .cloned()
            .ok_or_else(|| StoreError::NotFound(supi.to_string()))?;
        let sub = modified(old, change)?;
        m.insert(sub.supi.clone(), sub.clone());
        Ok(sub)
    }

    fn delete(&self, supi: &str) -> Result<bool, StoreError> {
        let existed = self.lock().remove(supi).is_some();
        if let Some(state) = &self.state {
            state.lock().unwrap_or_else(|e| e.into_inner()).remove(supi);
        }
        Ok(existed)
    }

    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<Subscriber>, StoreError> {
        let m = self.lock();
        let lower = match after {
            Some(a) => Bound::Excluded(a),
            None => Bound::Unbounded,
        };
        Ok(m.range::<str, _>((lower, Bound::Unbounded))
            .take(limit)
            .map(|(_, s)| s.clone())
            .collect())
    }

    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.lock().len() as u64)
    }

    fn sqn_persist(&self, supi: &str, sqn: u64) -> Result<u64, StoreError> {
        let mut m = self.lock();
        let s = m
            .get_mut(supi)
            .ok_or_else(|| StoreError::NotFound(supi.to_string()))?;
        s.sqn = s.sqn.max(sqn.min(SQN_MAX));
        Ok(s.sqn)
    }

    fn keeps_udm_state(&self) -> bool {
        self.state.is_some()
    }

    fn udm_state_save(&self, writes: &[StateWrite]) -> Result<(), StoreError> {
        let Some(state) = &self.state else {
            return Ok(());
        };
        let known = self.lock();
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        for w in writes.iter().filter(|w| known.contains_key(&w.supi)) {
            let e = st.entry(w.supi.clone()).or_default();
            match w.field {
                StateField::AmfRegistration => e.amf_registration = Some(w.body.clone()),
                StateField::AuthEvent => e.auth_event = Some(w.body.clone()),
            }
        }
        Ok(())
    }

    fn udm_state(&self, supi: &str) -> Result<UdmState, StoreError> {
        Ok(self
            .state
            .as_ref()
            .and_then(|s| {
                s.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(supi)
                    .cloned()
            })
            .unwrap_or_default())
    }

    fn sqn_claim(&self, supi: &str, floor: u64, count: u64) -> Result<Claim, StoreError> {
        let mut m = self.lock();
        let s = m
            .get_mut(supi)
            .ok_or_else(|| StoreError::NotFound(supi.to_string()))?;
        let claim = claim_above(supi, s.sqn, floor, count)?;
        s.sqn = claim.end;
        Ok(claim)
    }
}
