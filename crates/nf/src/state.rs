//! Where per-UE state lives: one procedure code, two state stores, so that the locking
//! baseline differs from the sharded mode in where state lives and in nothing else.
//!
//! The NF state machines are generic over [`ContextMap`]. In the sharded mode each worker
//! owns a [`ShardMap`]: a plain `HashMap`, touched only by its worker, with no lock anywhere.
//! In the locking baseline every worker holds a clone of one [`LockedMap`]: one `HashMap`
//! behind one mutex, and every access takes the lock and counts whether it had to wait.
//! Both run the same procedure code, so the ratio between the two modes measures where state
//! lives and nothing else.
//!
//! The interface hands out access through closures ([`ContextMap::with`]) rather than
//! references or guards: a guard would have to borrow from a lock and a reference could
//! outlive it, while a closure bounds the critical section to exactly the code the
//! procedure needs.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// Per-UE contexts keyed by `K`, wherever they live.
pub trait ContextMap<K, V> {
    /// Whether other workers see the same entries ([`LockedMap`]) or only this one does
    /// ([`ShardMap`]). A sharded NF refuses identifiers owned by another worker without a
    /// lookup; a shared one looks them up, since any worker may serve any UE.
    const SHARED: bool;

    /// Runs `f` on the entry of `k` (or `None`) and returns its result. In the locked store
    /// the lock is held for exactly the duration of `f`.
    fn with<R>(&mut self, k: &K, f: impl FnOnce(Option<&mut V>) -> R) -> R;

    /// Runs `f` on the entry of `k`, creating it with `default` first if absent; the `bool`
    /// tells `f` whether the entry is new.
    fn with_or_insert<R>(
        &mut self,
        k: K,
        default: impl FnOnce() -> V,
        f: impl FnOnce(&mut V, bool) -> R,
    ) -> R;

    /// Runs `f` on the entry of `k` (or `None`) like [`ContextMap::with`]; when `f` answers
    /// `true` beside its result, the entry leaves the map before the critical section ends
    /// and is handed back. This is how a context ends (a UE context release) in the same
    /// single access that decided it, with no moment where it is out of the map but alive.
    ///
    /// The default runs [`ContextMap::with`] then [`ContextMap::remove`], two critical
    /// sections; [`ShardMap`] and [`LockedMap`] do it in one.
    fn with_remove<R>(
        &mut self,
        k: &K,
        f: impl FnOnce(Option<&mut V>) -> (R, bool),
    ) -> (R, Option<V>) {
        let (r, remove) = self.with(k, f);
        let v = if remove { self.remove(k) } else { None };
        (r, v)
    }

    /// Inserts, returning the previous value.
    fn insert(&mut self, k: K, v: V) -> Option<V>;

    /// Removes, returning the value.
    fn remove(&mut self, k: &K) -> Option<V>;

    /// Number of entries.
    fn len(&self) -> usize;

    /// Every key, in no particular order (for the rare walks over all contexts, such as
    /// restoring a UPF's sessions; the locked store holds its lock while it copies them).
    fn keys(&self) -> Vec<K>
    where
        K: Clone;

    /// The number of entries without an access of its own: exact in a [`ShardMap`]; in a
    /// [`LockedMap`] the count as the last access of any worker left it, read without the
    /// lock. What bounds a map (DESIGN.md principle 8) reads this on the hot path, so that
    /// the baseline's lock counts stay one per message.
    fn len_hint(&self) -> usize {
        self.len()
    }

    /// Whether there are no entries.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The contexts one worker owns: a plain `HashMap`, used only by the worker that owns it.
/// There is no lock type anywhere inside, and it is deliberately not shared: moving it to
/// another thread moves the ownership with it.
#[derive(Debug, Clone)]
pub struct ShardMap<K, V> {
    map: HashMap<K, V>,
}

impl<K, V> Default for ShardMap<K, V> {
    fn default() -> Self {
        Self {
            map: HashMap::new(),
        }
    }
}

impl<K, V> ShardMap<K, V> {
    /// An empty shard.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<K: Eq + Hash, V> ContextMap<K, V> for ShardMap<K, V> {
    const SHARED: bool = false;

    fn with<R>(&mut self, k: &K, f: impl FnOnce(Option<&mut V>) -> R) -> R {
        f(self.map.get_mut(k))
    }

    fn with_or_insert<R>(
        &mut self,
        k: K,
        default: impl FnOnce() -> V,
        f: impl FnOnce(&mut V, bool) -> R,
    ) -> R {
        let mut new = false;
        let v = self.map.entry(k).or_insert_with(|| {
            new = true;
            default()
        });
        f(v, new)
    }

    fn with_remove<R>(
        &mut self,
        k: &K,
        f: impl FnOnce(Option<&mut V>) -> (R, bool),
    ) -> (R, Option<V>) {
        let (r, remove) = f(self.map.get_mut(k));
        (r, if remove { self.map.remove(k) } else { None })
    }

    fn insert(&mut self, k: K, v: V) -> Option<V> {
        self.map.insert(k, v)
    }

    fn remove(&mut self, k: &K) -> Option<V> {
        self.map.remove(k)
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn keys(&self) -> Vec<K>
    where
        K: Clone,
    {
        self.map.keys().cloned().collect()
    }
}

/// Lock counters shared by every clone of a [`LockedMap`].
#[derive(Debug, Default)]
struct Counters {
    acquisitions: AtomicU64,
    contended: AtomicU64,
}

/// A snapshot of a [`LockedMap`]'s lock counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LockStats {
    /// Times the lock was taken.
    pub acquisitions: u64,
    /// Of those, times another holder made us wait (the first `try_lock` failed).
    pub contended: u64,
}

impl LockStats {
    /// Contended share of acquisitions, 0 when there were none.
    pub fn contention_ratio(&self) -> f64 {
        if self.acquisitions == 0 {
            0.0
        } else {
            self.contended as f64 / self.acquisitions as f64
        }
    }
}

/// The locking baseline: every clone shares one `HashMap` behind one `std::sync::Mutex`, as a
/// conventional multi-threaded NF keeps its UE contexts. Each acquisition first tries the
/// lock; when that fails it counts a contended acquisition, then blocks.
#[derive(Debug)]
pub struct LockedMap<K, V> {
    inner: Arc<Mutex<HashMap<K, V>>>,
    counters: Arc<Counters>,
    /// The map's length, stored under the lock by every access that may change it.
    entries: Arc<AtomicUsize>,
}

impl<K, V> Clone for LockedMap<K, V> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            counters: Arc::clone(&self.counters),
            entries: Arc::clone(&self.entries),
        }
    }
}

impl<K, V> Default for LockedMap<K, V> {
    fn default() -> Self {
        Self {
            inner: Arc::new(Mutex::new(HashMap::new())),
            counters: Arc::new(Counters::default()),
            entries: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl<K, V> LockedMap<K, V> {
    /// An empty shared map; clone it once per worker.
    pub fn new() -> Self {
        Self::default()
    }

    /// The lock counters, summed over every clone. Reading them takes no lock.
    pub fn stats(&self) -> LockStats {
        LockStats {
            acquisitions: self.counters.acquisitions.load(Ordering::Relaxed),
            contended: self.counters.contended.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, V>> {
        self.counters.acquisitions.fetch_add(1, Ordering::Relaxed);
        match self.inner.try_lock() {
            Ok(g) => g,
            // A holder that panicked left the map as it was between operations (each
            // operation is one HashMap call or one closure), so carry on with it.
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.counters.contended.fetch_add(1, Ordering::Relaxed);
                self.inner.lock().unwrap_or_else(|p| p.into_inner())
            }
        }
    }
}

impl<K: Eq + Hash, V> ContextMap<K, V> for LockedMap<K, V> {
    const SHARED: bool = true;

    fn with<R>(&mut self, k: &K, f: impl FnOnce(Option<&mut V>) -> R) -> R {
        let mut g = self.lock();
        f(g.get_mut(k))
    }

    fn with_or_insert<R>(
        &mut self,
        k: K,
        default: impl FnOnce() -> V,
        f: impl FnOnce(&mut V, bool) -> R,
    ) -> R {
        let mut g = self.lock();
        let mut new = false;
        let v = g.entry(k).or_insert_with(|| {
            new = true;
            default()
        });
        let r = f(v, new);
        self.entries.store(g.len(), Ordering::Relaxed);
        r
    }

    fn with_remove<R>(
        &mut self,
        k: &K,
        f: impl FnOnce(Option<&mut V>) -> (R, bool),
    ) -> (R, Option<V>) {
        let mut g = self.lock();
        let (r, remove) = f(g.get_mut(k));
        let gone = if remove { g.remove(k) } else { None };
        self.entries.store(g.len(), Ordering::Relaxed);
        (r, gone)
    }

    fn insert(&mut self, k: K, v: V) -> Option<V> {
        let mut g = self.lock();
        let old = g.insert(k, v);
        self.entries.store(g.len(), Ordering::Relaxed);
        old
    }

    fn remove(&mut self, k: &K) -> Option<V> {
        let mut g = self.lock();
        let old = g.remove(k);
        self.entries.store(g.len(), Ordering::Relaxed);
        old
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    fn keys(&self) -> Vec<K>
    where
        K: Clone,
    {
        self.lock().keys().cloned().collect()
    }

    fn len_hint(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[derive(Debug, PartialEq)]
    enum Out {
        With(Option<u32>),
        WithRemove(Option<u32>, Option<u32>),
        Upsert(u32, bool),
        Insert(Option<u32>),
        Remove(Option<u32>),
        Len(usize),
    }

    fn step<M: ContextMap<u8, u32>>(m: &mut M, op: u8, k: u8, v: u32) -> Out {
        match op % 6 {
            0 => Out::With(m.with(&k, |e| {
                e.map(|x| {
                    *x = x.wrapping_add(v);
                    *x
                })
            })),
            1 => {
                let (x, new) = m.with_or_insert(k, || v, |x, new| (*x, new));
                Out::Upsert(x, new)
            }
            2 => Out::Insert(m.insert(k, v)),
            3 => Out::Remove(m.remove(&k)),
            4 => {
                // Removes the entries whose value is odd after the addition.
                let (seen, gone) = m.with_remove(&k, |e| match e {
                    Some(x) => {
                        *x = x.wrapping_add(v);
                        (Some(*x), *x % 2 == 1)
                    }
                    None => (None, false),
                });
                Out::WithRemove(seen, gone)
            }
            _ => Out::Len(m.len()),
        }
    }

    #[test]
    fn shard_and_locked_maps_behave_identically() {
        for seed in 0..20u64 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut a: ShardMap<u8, u32> = ShardMap::new();
            let mut b: LockedMap<u8, u32> = LockedMap::new();
            let mut b2 = b.clone();
            for i in 0..2_000 {
                let (op, k, v) = (rng.gen::<u8>(), rng.gen_range(0..16u8), rng.gen::<u32>());
                // Alternate between two clones: they must be one map.
                let other = if i % 2 == 0 { &mut b } else { &mut b2 };
                assert_eq!(step(&mut a, op, k, v), step(other, op, k, v), "seed {seed}");
            }
            assert_eq!(a.len(), b.len());
            assert_eq!(a.is_empty(), b2.is_empty());
            let before = b.stats().acquisitions;
            assert_eq!(b2.len_hint(), b.len());
            assert_eq!(a.len_hint(), a.len());
            assert_eq!(b.stats().acquisitions, before + 1, "len_hint takes no lock");
            let s = b.stats();
            assert!(s.acquisitions >= 2_000);
            assert_eq!(s.contended, 0, "one thread never waits");
        }
    }

    #[test]
    fn locked_with_remove_is_one_critical_section() {
        let mut m: LockedMap<u8, u32> = LockedMap::new();
        m.insert(1, 7);
        let before = m.stats().acquisitions;
        let (seen, gone) = m.with_remove(&1, |e| (e.map(|x| *x), true));
        assert_eq!((seen, gone), (Some(7), Some(7)));
        let (seen, gone) = m.with_remove(&1, |e| (e.is_some(), true));
        assert_eq!((seen, gone), (false, None));
        assert_eq!(m.stats().acquisitions - before, 2, "one lock per call");
    }

    #[test]
    fn locked_map_counts_contention_between_threads() {
        let mut a: LockedMap<u8, u32> = LockedMap::new();
        let mut b = a.clone();
        let watcher = a.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            a.with_or_insert(
                1,
                || 0,
                |v, _| {
                    tx.send(()).unwrap();
                    // Keep the lock until the other thread has found it taken.
                    while watcher.stats().contended == 0 {
                        std::thread::yield_now();
                    }
                    *v += 1;
                },
            );
        });
        rx.recv().unwrap();
        let seen = b.with(&1, |v| v.copied());
        holder.join().unwrap();
        assert_eq!(seen, Some(1), "the waiter ran after the holder");
        let s = b.stats();
        assert_eq!(s.acquisitions, 2);
        assert_eq!(s.contended, 1);
        assert!((s.contention_ratio() - 0.5).abs() < 1e-9);
    }
}
