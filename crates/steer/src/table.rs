//! The steering table: which worker handles an application id (AppSteer's `app_id`), as the
//! user-space half of the table whose kernel half is steer-bpf's exception map.
//!
//! The shape follows the reference design (AppSteer, reference 001, §III-B "API"):
//!
//! | AppSteer | here |
//! |---|---|
//! | `send(req, app_id)` | [`tag`] / [`untag`]: the first 4 bytes of a frame, big-endian (steer-bpf `IdSpec::FIRST_WORD`) |
//! | `map_thread_to_queue(queue)` | [`SteeringTable::with_queue_map`]: a one-to-one map of workers onto queues, fixed for the table's life |
//! | `map_appid_to_queue(app_id)` | [`AppId::default_queue`]: `app_id % queues`, as the BPF program computes it |
//! | `add_exception(app_id, queue)` | [`SteeringTable::set_exception`], or [`SteeringTable::begin_move`] to move state too |
//!
//! Every worker reads the table for every message, so a read takes no lock: the table is an
//! immutable [`Snapshot`] behind an `arc_swap::ArcSwap`, and each worker keeps a
//! [`TableReader`] whose cached `Arc` is re-validated with one atomic load per lookup. A change
//! clones the snapshot (exceptions are few: the hot ids), edits the copy and swaps it in, so
//! a reader sees the old table or the new one, never half of a change. Writers are rare (a
//! policy step, a move finishing) and take a mutex among themselves, which also serialises the
//! calls into the kernel mirror ([`ExceptionSink`]). A seqlock over a fixed array would avoid
//! the `Arc` counts but bounds the number of exceptions and needs `unsafe`; the table is read
//! through the reader's cache, so those counts are not touched per message anyway.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arc_swap::{ArcSwap, Cache};

use crate::{WorkerId, Workers};

/// The application id a request is steered by: a subscriber, a session, a tunnel id. The
/// kernel reads it from the first 4 bytes of a frame (or from the source port of a TCP
/// connection); see steer-bpf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AppId(pub u32);

impl AppId {
    /// The queue the id belongs to when it has no exception: `id % queues`, the same
    /// arithmetic as the BPF program (steer-bpf `steer.bpf.c`).
    pub fn default_queue(self, queues: Workers) -> QueueId {
        // The remainder is below `count`, which is a u16.
        QueueId((self.0 % u32::from(queues.count())) as u16)
    }
}

impl fmt::Display for AppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "app {:#x}", self.0)
    }
}

/// A receive queue: a listener socket's index in its `SO_REUSEPORT` group, the slot the BPF
/// program picks, and the mesh inbox of the worker that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueId(pub u16);

impl QueueId {
    /// The queue number as an index.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Display for QueueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "q{}", self.0)
    }
}

/// Bytes of the app id tag in front of a frame.
pub const TAG_LEN: usize = 4;

/// Append `app` (big-endian) and then `payload` to `buf`: the framing the BPF program reads
/// with `IdSpec::FIRST_WORD`.
pub fn tag_into(buf: &mut Vec<u8>, app: AppId, payload: &[u8]) {
    buf.reserve(TAG_LEN + payload.len());
    buf.extend_from_slice(&app.0.to_be_bytes());
    buf.extend_from_slice(payload);
}

/// `payload` tagged with `app` (AppSteer's `send(req, app_id)`), as a new frame.
///
/// ```
/// use steer::table::{tag, untag, AppId};
/// let frame = tag(AppId(0x1234), b"hello");
/// assert_eq!(&frame[..4], &[0, 0, 0x12, 0x34]);
/// assert_eq!(untag(&frame), Some((AppId(0x1234), &b"hello"[..])));
/// ```
pub fn tag(app: AppId, payload: &[u8]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(TAG_LEN + payload.len());
    tag_into(&mut buf, app, payload);
    buf
}

/// The app id and payload of a tagged frame; `None` if it is shorter than the tag.
pub fn untag(frame: &[u8]) -> Option<(AppId, &[u8])> {
    let (id, payload) = frame.split_first_chunk::<TAG_LEN>()?;
    Some((AppId(u32::from_be_bytes(*id)), payload))
}

/// A move of an app id's state from one worker to another, in progress (see
/// [`crate::migrate`]). Routing already sends the id to `to`; `to` holds its messages back
/// until `from` hands the state over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// The app id being moved.
    pub app: AppId,
    /// The worker that owned it.
    pub from: WorkerId,
    /// The worker that will own it.
    pub to: WorkerId,
    /// Unique and increasing over the table's life: tells markers of one move from another.
    pub epoch: u64,
}

/// One immutable version of the table.
#[derive(Debug, Clone)]
pub struct Snapshot {
    version: u64,
    workers: Workers,
    /// Indexed by queue.
    worker_of_queue: Arc<[WorkerId]>,
    /// Indexed by worker.
    queue_of_worker: Arc<[QueueId]>,
    /// Sorted by app id. A sorted vector rather than a hash map: there are few exceptions
    /// (the hot ids), a binary search over them costs less than hashing the id, and an empty
    /// table (the common case) costs one length check.
    exceptions: Vec<(AppId, QueueId)>,
    moves: Vec<Move>,
}

impl Snapshot {
    /// Starts at 0 and grows by one with every change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The workers (and as many queues).
    pub fn workers(&self) -> Workers {
        self.workers
    }

    /// The queue of `app`: its exception, else [`AppId::default_queue`].
    pub fn queue(&self, app: AppId) -> QueueId {
        match self.exception(app) {
            Some(q) => q,
            None => app.default_queue(self.workers),
        }
    }

    /// The worker that handles `app` now.
    pub fn route(&self, app: AppId) -> WorkerId {
        let q = self.queue(app);
        // Every queue below `workers` has an entry; the fallback is not reachable.
        self.worker_of_queue
            .get(q.index())
            .copied()
            .unwrap_or(WorkerId(q.0))
    }

    /// The worker that handles `app` when it has no exception.
    pub fn default_route(&self, app: AppId) -> WorkerId {
        let q = app.default_queue(self.workers);
        self.worker_of_queue
            .get(q.index())
            .copied()
            .unwrap_or(WorkerId(q.0))
    }

    /// The exception of `app`, if any.
    pub fn exception(&self, app: AppId) -> Option<QueueId> {
        if self.exceptions.is_empty() {
            return None;
        }
        self.exceptions
            .binary_search_by_key(&app, |e| e.0)
            .ok()
            .and_then(|i| self.exceptions.get(i))
            .map(|e| e.1)
    }

    /// Every exception, by app id.
    pub fn exceptions(&self) -> impl Iterator<Item = (AppId, QueueId)> + '_ {
        self.exceptions.iter().copied()
    }

    fn insert_exception(&mut self, app: AppId, q: QueueId) {
        match self.exceptions.binary_search_by_key(&app, |e| e.0) {
            Ok(i) => {
                if let Some(e) = self.exceptions.get_mut(i) {
                    e.1 = q;
                }
            }
            Err(i) => self.exceptions.insert(i, (app, q)),
        }
    }

    fn remove_exception(&mut self, app: AppId) {
        if let Ok(i) = self.exceptions.binary_search_by_key(&app, |e| e.0) {
            self.exceptions.remove(i);
        }
    }

    /// The moves in progress, oldest first.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// The move of `app` in progress, if any.
    pub fn moving(&self, app: AppId) -> Option<&Move> {
        self.moves.iter().find(|m| m.app == app)
    }

    /// The worker serving queue `q`.
    pub fn worker_of(&self, q: QueueId) -> Option<WorkerId> {
        self.worker_of_queue.get(q.index()).copied()
    }

    /// The queue worker `w` serves.
    pub fn queue_of(&self, w: WorkerId) -> Option<QueueId> {
        self.queue_of_worker.get(w.index()).copied()
    }
}

/// What a kernel mirror of the exceptions reports when it fails.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Where the table mirrors its exceptions so that the kernel steers packets and connections
/// the same way: steer-bpf's `Steering` (its `set_exception`/`clear_exception` on the BPF
/// exception map) is meant to implement it. Calls come one at a time, from whichever thread
/// changes the table.
pub trait ExceptionSink: Send + Sync {
    /// From now on, steer `app` to `queue`.
    fn set(&self, app: AppId, queue: QueueId) -> Result<(), SinkError>;
    /// From now on, steer `app` by the default rule.
    fn clear(&self, app: AppId) -> Result<(), SinkError>;
}

/// Why a change to the table was refused (or, for [`TableError::Sink`], only half done).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// The worker is not one of the table's.
    #[error("{0} is not one of this table's workers")]
    NoSuchWorker(WorkerId),
    /// The queue map does not give each worker exactly one queue of its own.
    #[error("the queue map must give each of the {0} workers exactly one queue")]
    BadQueueMap(u16),
    /// The id is being moved; wait for the move to finish.
    #[error("{app} is being moved (epoch {epoch})")]
    Moving {
        /// The id.
        app: AppId,
        /// The move in progress.
        epoch: u64,
    },
    /// The id already goes to that worker.
    #[error("{app} already goes to {worker}")]
    AlreadyThere {
        /// The id.
        app: AppId,
        /// Its worker.
        worker: WorkerId,
    },
    /// No such move is in progress (finished already, or never begun).
    #[error("no move of {app} with epoch {epoch} is in progress")]
    NoSuchMove {
        /// The id.
        app: AppId,
        /// The epoch asked for.
        epoch: u64,
    },
    /// The kernel mirror refused the change. For [`SteeringTable::set_exception`] and
    /// [`SteeringTable::clear_exception`] the table was left as it was; for
    /// [`SteeringTable::finish_move`] the user-space table did change (the move is over)
    /// and only the kernel still steers the id the old way.
    #[error("the kernel exception map refused the change for {app}")]
    Sink {
        /// The id.
        app: AppId,
        /// What the mirror said.
        #[source]
        source: SinkError,
    },
}

struct Writer {
    next_epoch: u64,
    sink: Option<Box<dyn ExceptionSink>>,
}

/// The steering table shared by all workers: app id → queue → worker, with exceptions and
/// moves changed at run time. Share it in an `Arc`.
///
/// ```
/// use std::sync::Arc;
/// use steer::table::{AppId, SteeringTable};
/// use steer::{WorkerId, Workers};
///
/// let table = Arc::new(SteeringTable::new(Workers::new(4).ok_or("workers")?));
/// let mut reader = table.reader(); // one per worker: lookups take no lock
/// assert_eq!(reader.route(AppId(10)), WorkerId(2)); // 10 % 4
///
/// table.set_exception(AppId(10), WorkerId(3))?; // a hot id goes elsewhere
/// assert_eq!(reader.route(AppId(10)), WorkerId(3));
/// assert!(table.clear_exception(AppId(10))?); // and back to the default rule
/// assert_eq!(reader.route(AppId(10)), WorkerId(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SteeringTable {
    current: Arc<ArcSwap<Snapshot>>,
    writer: Mutex<Writer>,
}

impl fmt::Debug for SteeringTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SteeringTable")
            .field("current", &self.current.load())
            .finish_non_exhaustive()
    }
}

impl SteeringTable {
    /// A table where worker `i` serves queue `i` and no id has an exception.
    pub fn new(workers: Workers) -> Self {
        let identity: Vec<WorkerId> = workers.iter().collect();
        Self::build(workers, identity)
    }

    /// A table where worker `worker_of_queue[q]` serves queue `q` (AppSteer's
    /// `map_thread_to_queue`). It must give each worker exactly one queue: a queue is a
    /// listener socket and a mesh inbox, which belong to one thread.
    pub fn with_queue_map(
        workers: Workers,
        worker_of_queue: Vec<WorkerId>,
    ) -> Result<Self, TableError> {
        let n = usize::from(workers.count());
        let mut seen = vec![false; n];
        for w in &worker_of_queue {
            match seen.get_mut(w.index()) {
                Some(s) if !*s => *s = true,
                _ => return Err(TableError::BadQueueMap(workers.count())),
            }
        }
        if worker_of_queue.len() != n {
            return Err(TableError::BadQueueMap(workers.count()));
        }
        Ok(Self::build(workers, worker_of_queue))
    }

    fn build(workers: Workers, worker_of_queue: Vec<WorkerId>) -> Self {
        let mut queue_of_worker = vec![QueueId(0); worker_of_queue.len()];
        for (q, w) in worker_of_queue.iter().enumerate() {
            if let Some(slot) = queue_of_worker.get_mut(w.index()) {
                // `q` is below the worker count, a u16.
                *slot = QueueId(q as u16);
            }
        }
        let snap = Snapshot {
            version: 0,
            workers,
            worker_of_queue: worker_of_queue.into(),
            queue_of_worker: queue_of_worker.into(),
            exceptions: Vec::new(),
            moves: Vec::new(),
        };
        Self {
            current: Arc::new(ArcSwap::from_pointee(snap)),
            writer: Mutex::new(Writer {
                next_epoch: 1,
                sink: None,
            }),
        }
    }

    /// Mirror every exception into `sink` from now on, starting with those already set.
    /// Moves in progress reach the sink when they finish.
    pub fn set_sink(&self, sink: Box<dyn ExceptionSink>) -> Result<(), TableError> {
        let mut w = self.lock();
        let snap = self.current.load_full();
        for (app, q) in snap.exceptions() {
            if snap.moving(app).is_none() {
                sink.set(app, q)
                    .map_err(|source| TableError::Sink { app, source })?;
            }
        }
        w.sink = Some(sink);
        Ok(())
    }

    /// The current version. Cheap, but for per-message lookups use a [`TableReader`].
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// A reader for one worker: a cached snapshot re-validated with one atomic load.
    pub fn reader(&self) -> TableReader {
        TableReader {
            cache: Cache::new(Arc::clone(&self.current)),
        }
    }

    /// The worker that handles `app` now.
    pub fn route(&self, app: AppId) -> WorkerId {
        self.current.load().route(app)
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        // The writer state stays consistent across a panic (each change is one store), so a
        // poisoned lock is still usable.
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn queue_for(snap: &Snapshot, worker: WorkerId) -> Result<QueueId, TableError> {
        snap.queue_of(worker)
            .filter(|_| snap.workers.contains(worker))
            .ok_or(TableError::NoSuchWorker(worker))
    }

    fn publish(&self, mut next: Snapshot) {
        next.version = next.version.wrapping_add(1);
        self.current.store(Arc::new(next));
    }

    /// Send `app` to `worker` from now on (AppSteer's `add_exception`), in user space and in
    /// the kernel mirror. Only the routing changes: state the old worker holds for `app` stays
    /// there, and messages already on their way are not ordered against new ones. For ids
    /// with state use [`SteeringTable::begin_move`].
    pub fn set_exception(&self, app: AppId, worker: WorkerId) -> Result<(), TableError> {
        let w = self.lock();
        let snap = self.current.load_full();
        let q = Self::queue_for(&snap, worker)?;
        if let Some(m) = snap.moving(app) {
            return Err(TableError::Moving {
                app,
                epoch: m.epoch,
            });
        }
        if let Some(sink) = &w.sink {
            sink.set(app, q)
                .map_err(|source| TableError::Sink { app, source })?;
        }
        let mut next = Snapshot::clone(&snap);
        next.insert_exception(app, q);
        self.publish(next);
        Ok(())
    }

    /// Steer `app` by the default rule again; returns whether it had an exception. Like
    /// [`SteeringTable::set_exception`], moves no state.
    pub fn clear_exception(&self, app: AppId) -> Result<bool, TableError> {
        let w = self.lock();
        let snap = self.current.load_full();
        if let Some(m) = snap.moving(app) {
            return Err(TableError::Moving {
                app,
                epoch: m.epoch,
            });
        }
        if snap.exception(app).is_none() {
            return Ok(false);
        }
        if let Some(sink) = &w.sink {
            sink.clear(app)
                .map_err(|source| TableError::Sink { app, source })?;
        }
        let mut next = Snapshot::clone(&snap);
        next.remove_exception(app);
        self.publish(next);
        Ok(true)
    }

    /// Start moving `app` and its state to worker `to` (the protocol of [`crate::migrate`]).
    /// From the returned snapshot on, `app` routes to `to` (an exception, or none if `to` is
    /// its default worker); the move stays listed until `to` calls
    /// [`SteeringTable::finish_move`]. The kernel mirror changes only then (see
    /// docs/STEERING.md: the kernel cannot take part in the marker protocol).
    pub fn begin_move(&self, app: AppId, to: WorkerId) -> Result<Move, TableError> {
        let mut w = self.lock();
        let snap = self.current.load_full();
        let q = Self::queue_for(&snap, to)?;
        if let Some(m) = snap.moving(app) {
            return Err(TableError::Moving {
                app,
                epoch: m.epoch,
            });
        }
        let from = snap.route(app);
        if from == to {
            return Err(TableError::AlreadyThere { app, worker: to });
        }
        let mv = Move {
            app,
            from,
            to,
            epoch: w.next_epoch,
        };
        w.next_epoch = w.next_epoch.wrapping_add(1);
        let mut next = Snapshot::clone(&snap);
        if q == app.default_queue(snap.workers) {
            next.remove_exception(app);
        } else {
            next.insert_exception(app, q);
        }
        next.moves.push(mv);
        self.publish(next);
        Ok(mv)
    }

    /// End the move of `app` with `epoch`: the new owner has its state. Then mirrors the
    /// new route into the kernel.
    pub fn finish_move(&self, app: AppId, epoch: u64) -> Result<(), TableError> {
        let w = self.lock();
        let snap = self.current.load_full();
        let Some(pos) = snap
            .moves
            .iter()
            .position(|m| m.app == app && m.epoch == epoch)
        else {
            return Err(TableError::NoSuchMove { app, epoch });
        };
        let mut next = Snapshot::clone(&snap);
        next.moves.remove(pos);
        let exception = next.exception(app);
        self.publish(next);
        if let Some(sink) = &w.sink {
            match exception {
                Some(q) => sink.set(app, q),
                None => sink.clear(app),
            }
            .map_err(|source| TableError::Sink { app, source })?;
        }
        Ok(())
    }
}

/// One worker's view of a [`SteeringTable`]: the snapshot it last saw, re-validated on every
/// lookup with one atomic load (no lock, no reference count change unless the table
/// changed). Not shared: each worker makes its own with [`SteeringTable::reader`].
pub struct TableReader {
    cache: Cache<Arc<ArcSwap<Snapshot>>, Arc<Snapshot>>,
}

impl fmt::Debug for TableReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableReader").finish_non_exhaustive()
    }
}

impl TableReader {
    /// The current snapshot (refreshing the cached one if the table changed).
    pub fn load(&mut self) -> &Arc<Snapshot> {
        self.cache.load()
    }

    /// The worker that handles `app` now.
    pub fn route(&mut self, app: AppId) -> WorkerId {
        self.cache.load().route(app)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn workers(n: u16) -> Workers {
        Workers::new(n).unwrap()
    }

    #[derive(Default)]
    struct Recorder {
        log: Mutex<Vec<(AppId, Option<QueueId>)>>,
        fail: AtomicBool,
    }

    impl ExceptionSink for Arc<Recorder> {
        fn set(&self, app: AppId, queue: QueueId) -> Result<(), SinkError> {
            if self.fail.load(Ordering::Relaxed) {
                return Err("refused".into());
            }
            self.log.lock().unwrap().push((app, Some(queue)));
            Ok(())
        }
        fn clear(&self, app: AppId) -> Result<(), SinkError> {
            if self.fail.load(Ordering::Relaxed) {
                return Err("refused".into());
            }
            self.log.lock().unwrap().push((app, None));
            Ok(())
        }
    }

    #[test]
    fn default_route_is_id_modulo_workers() {
        let t = SteeringTable::new(workers(3));
        for id in [0u32, 1, 2, 3, 7, u32::MAX] {
            assert_eq!(t.route(AppId(id)), WorkerId((id % 3) as u16));
        }
    }

    #[test]
    fn exception_overrides_and_removal_restores_default() {
        let t = SteeringTable::new(workers(4));
        let mut r = t.reader();
        t.set_exception(AppId(5), WorkerId(3)).unwrap();
        assert_eq!(r.route(AppId(5)), WorkerId(3));
        assert_eq!(r.route(AppId(9)), WorkerId(1), "others keep the default");
        assert!(t.clear_exception(AppId(5)).unwrap());
        assert!(!t.clear_exception(AppId(5)).unwrap());
        assert_eq!(r.route(AppId(5)), WorkerId(1));
        assert!(matches!(
            t.set_exception(AppId(5), WorkerId(4)),
            Err(TableError::NoSuchWorker(WorkerId(4)))
        ));
    }

    #[test]
    fn queue_map_routes_through_the_serving_worker() {
        let w = workers(3);
        let t =
            SteeringTable::with_queue_map(w, vec![WorkerId(2), WorkerId(0), WorkerId(1)]).unwrap();
        // 4 % 3 = queue 1, served by worker 0.
        assert_eq!(t.route(AppId(4)), WorkerId(0));
        t.set_exception(AppId(4), WorkerId(1)).unwrap();
        assert_eq!(t.snapshot().exception(AppId(4)), Some(QueueId(2)));
        assert_eq!(t.route(AppId(4)), WorkerId(1));
        for bad in [
            vec![WorkerId(0), WorkerId(0), WorkerId(1)],
            vec![WorkerId(0), WorkerId(1)],
            vec![WorkerId(0), WorkerId(1), WorkerId(3)],
        ] {
            assert!(matches!(
                SteeringTable::with_queue_map(w, bad),
                Err(TableError::BadQueueMap(3))
            ));
        }
    }

    #[test]
    fn tag_round_trips_and_short_frames_have_no_id() {
        let f = tag(AppId(0xdead_beef), b"x");
        assert_eq!(f, [0xde, 0xad, 0xbe, 0xef, b'x']);
        assert_eq!(untag(&f), Some((AppId(0xdead_beef), &b"x"[..])));
        assert_eq!(untag(&[1, 2, 3]), None);
        assert_eq!(untag(&[0, 0, 0, 1]), Some((AppId(1), &[][..])));
    }

    #[test]
    fn moves_route_at_once_and_reach_the_kernel_when_finished() {
        let t = SteeringTable::new(workers(2));
        let rec = Arc::new(Recorder::default());
        t.set_exception(AppId(7), WorkerId(0)).unwrap();
        t.set_sink(Box::new(Arc::clone(&rec))).unwrap();
        assert_eq!(*rec.log.lock().unwrap(), [(AppId(7), Some(QueueId(0)))]);
        let m = t.begin_move(AppId(2), WorkerId(1)).unwrap();
        assert_eq!((m.from, m.to), (WorkerId(0), WorkerId(1)));
        assert_eq!(t.route(AppId(2)), WorkerId(1));
        assert_eq!(
            rec.log.lock().unwrap().len(),
            1,
            "kernel untouched mid-move"
        );
        assert!(matches!(
            t.begin_move(AppId(2), WorkerId(0)),
            Err(TableError::Moving { .. })
        ));
        assert!(matches!(
            t.set_exception(AppId(2), WorkerId(0)),
            Err(TableError::Moving { .. })
        ));
        t.finish_move(AppId(2), m.epoch).unwrap();
        assert!(t.snapshot().moves().is_empty());
        assert_eq!(rec.log.lock().unwrap()[1], (AppId(2), Some(QueueId(1))));
        assert!(matches!(
            t.finish_move(AppId(2), m.epoch),
            Err(TableError::NoSuchMove { .. })
        ));
        // Moving back home clears the exception rather than pinning the default.
        let back = t.begin_move(AppId(2), WorkerId(0)).unwrap();
        assert!(back.epoch > m.epoch);
        assert_eq!(t.snapshot().exception(AppId(2)), None);
        t.finish_move(AppId(2), back.epoch).unwrap();
        assert_eq!(rec.log.lock().unwrap()[2], (AppId(2), None));
        assert!(matches!(
            t.begin_move(AppId(2), WorkerId(0)),
            Err(TableError::AlreadyThere { .. })
        ));
    }

    #[test]
    fn a_refusing_sink_leaves_the_table_unchanged() {
        let t = SteeringTable::new(workers(2));
        let rec = Arc::new(Recorder::default());
        t.set_sink(Box::new(Arc::clone(&rec))).unwrap();
        rec.fail.store(true, Ordering::Relaxed);
        let v = t.snapshot().version();
        assert!(matches!(
            t.set_exception(AppId(1), WorkerId(0)),
            Err(TableError::Sink { .. })
        ));
        assert_eq!(t.snapshot().version(), v);
        assert_eq!(t.route(AppId(1)), WorkerId(1));
    }

    /// The writer adds exception `k` as version `k`; a reader that sees version `v` must see
    /// exactly the exceptions `0..v`, each pointing where it was set: a snapshot is never a
    /// half-applied change, and versions never go back.
    #[test]
    fn concurrent_readers_see_whole_versions_in_order() {
        const CHANGES: u32 = 2000;
        let t = Arc::new(SteeringTable::new(workers(4)));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let t = Arc::clone(&t);
                std::thread::spawn(move || {
                    let mut r = t.reader();
                    let mut last = 0;
                    loop {
                        let s = r.load();
                        let v = s.version();
                        assert!(v >= last, "version went back from {last} to {v}");
                        last = v;
                        assert_eq!(s.exceptions().count() as u64, v);
                        for k in 0..v as u32 {
                            assert_eq!(s.route(AppId(k)), WorkerId(((k + 1) % 4) as u16));
                        }
                        if v == u64::from(CHANGES) {
                            return;
                        }
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        for k in 0..CHANGES {
            t.set_exception(AppId(k), WorkerId(((k + 1) % 4) as u16))
                .unwrap();
        }
        for r in readers {
            r.join().unwrap();
        }
    }
}
