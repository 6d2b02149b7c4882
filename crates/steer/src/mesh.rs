//! The one-hop hand-off: a lock-free single-producer single-consumer queue for every ordered
//! pair of workers: the path a message takes when it was read on a worker that does not own
//! its state and the kernel could not deliver it to the owner.
//!
//! A worker that reads a stream carrying many subscribers (an SCTP association, an HTTP/2
//! connection) splits it and hands each message to the worker that owns its subscriber. Each
//! pair of workers gets its own `rtrb` ring, so a hand-off is one store into a buffer only
//! the two of them touch: no lock, no compare-and-swap, and FIFO order per pair for free.
//! There is no queue from a worker to itself; its own messages never leave the thread.
//!
//! Wake-ups are the expensive part (a futex and a context switch), so a sender only wakes a
//! receiver that has said it is about to sleep: the receiver raises its `idle` flag before
//! it parks in [`MeshEnd::recv_ready`], and the sender that lowers it pays for the wake-up. A
//! busy receiver is never woken; it finds the messages on its next drain. [`MeshStats`]
//! counts both the wake-ups sent and those that found nothing, so the bench can show the
//! wake-up rate against the locking baseline.

use std::fmt;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use rtrb::{Consumer, Producer, PushError, RingBuffer};
use tokio::sync::Notify;

use crate::{WorkerId, Workers};

/// Why [`MeshEnd::send`] did not take a message; every variant gives the message back.
#[non_exhaustive]
pub enum SendError<M> {
    /// The queue to that worker is full: back off, count, or drop by policy.
    Full(M),
    /// There is no queue to that worker: it is this worker itself (handle the message
    /// locally) or a worker this mesh does not have.
    NoRoute(M),
    /// The receiving worker has gone (its [`MeshEnd`] was dropped, e.g. its thread ended),
    /// and the queue is full, so the message could never be read.
    Closed(M),
}

impl<M> SendError<M> {
    /// The message that was not sent.
    pub fn into_inner(self) -> M {
        match self {
            Self::Full(m) | Self::NoRoute(m) | Self::Closed(m) => m,
        }
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // No `M: Debug` bound: messages may hold packet buffers nobody wants in a log.
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::NoRoute(_) => f.write_str("NoRoute(..)"),
            Self::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Full(_) => "hand-off queue full",
            Self::NoRoute(_) => "no hand-off queue to that worker",
            Self::Closed(_) => "receiving worker has gone",
        })
    }
}

impl<M> std::error::Error for SendError<M> {}

/// Counters of one worker's hand-offs. Each is written only by the worker it belongs to
/// (a plain load and store, no read-modify-write on the hot path) and may be read by any
/// thread at any time.
///
/// Aligned to two cache lines so that one worker's counting does not invalidate the line
/// another worker is writing (adjacent-line prefetch pulls pairs of 64-byte lines).
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerStats {
    sent: AtomicU64,
    received: AtomicU64,
    full: AtomicU64,
    wakeups_sent: AtomicU64,
    wakeups_empty: AtomicU64,
    wakeups_received: AtomicU64,
    max_depth: AtomicU64,
    depth: AtomicU64,
}

/// Bump a single-writer counter: only the owning worker writes it, so load + store is exact
/// and cheaper than `fetch_add`.
fn bump(counter: &AtomicU64, by: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

/// A snapshot of one worker's hand-off counters (or the sum over workers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MeshCounters {
    /// Messages this worker handed to others.
    pub sent: u64,
    /// Messages this worker read from others.
    pub received: u64,
    /// Sends by this worker refused because the queue was full (each retry counts again).
    pub full: u64,
    /// Wake-ups this worker sent to idle receivers.
    pub wakeups_sent: u64,
    /// Times this worker woke up in [`MeshEnd::recv_ready`] and found no message.
    pub wakeups_empty: u64,
    /// Times this worker parked in [`MeshEnd::recv_ready`] and was woken by a sender.
    pub wakeups_received: u64,
    /// Deepest any one of this worker's inbound queues was when it drained it. In a sum over
    /// workers, the maximum.
    pub max_depth: u64,
    /// A gauge: messages waiting in all of this worker's inbound queues when its latest
    /// drain began (what it found, not what is waiting now: only the receiver may look at
    /// its queues). In a sum over workers, the sum.
    pub depth: u64,
}

impl WorkerStats {
    /// The current values.
    pub fn snapshot(&self) -> MeshCounters {
        MeshCounters {
            sent: self.sent.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            full: self.full.load(Ordering::Relaxed),
            wakeups_sent: self.wakeups_sent.load(Ordering::Relaxed),
            wakeups_empty: self.wakeups_empty.load(Ordering::Relaxed),
            wakeups_received: self.wakeups_received.load(Ordering::Relaxed),
            max_depth: self.max_depth.load(Ordering::Relaxed),
            depth: self.depth.load(Ordering::Relaxed),
        }
    }
}

/// The hand-off counters of every worker of a mesh.
#[derive(Debug)]
pub struct MeshStats {
    workers: Box<[WorkerStats]>,
}

impl MeshStats {
    fn new(workers: Workers) -> Self {
        Self {
            workers: workers.iter().map(|_| WorkerStats::default()).collect(),
        }
    }

    /// The counters of worker `w`; `None` for a worker this mesh does not have.
    pub fn worker(&self, w: WorkerId) -> Option<MeshCounters> {
        self.workers.get(w.index()).map(WorkerStats::snapshot)
    }

    /// How many workers the mesh has.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// The counters summed over all workers (`max_depth`: the maximum).
    pub fn total(&self) -> MeshCounters {
        self.workers
            .iter()
            .map(WorkerStats::snapshot)
            .fold(MeshCounters::default(), |a, c| MeshCounters {
                sent: a.sent.wrapping_add(c.sent),
                received: a.received.wrapping_add(c.received),
                full: a.full.wrapping_add(c.full),
                wakeups_sent: a.wakeups_sent.wrapping_add(c.wakeups_sent),
                wakeups_empty: a.wakeups_empty.wrapping_add(c.wakeups_empty),
                wakeups_received: a.wakeups_received.wrapping_add(c.wakeups_received),
                max_depth: a.max_depth.max(c.max_depth),
                depth: a.depth.wrapping_add(c.depth),
            })
    }
}

/// How a sender reaches a parked receiver.
#[derive(Debug, Default)]
struct Doorbell {
    /// Raised by the receiver just before it parks; lowered by the sender that rings.
    idle: AtomicBool,
    /// Stores one permit when rung before the receiver awaits it, so no ring is lost.
    notify: Notify,
}

/// State shared by all ends of one mesh.
#[derive(Debug)]
struct Shared {
    doorbells: Box<[Doorbell]>,
    stats: Arc<MeshStats>,
}

/// All queues between `N` workers, before they are handed out with [`Mesh::into_ends`].
pub struct Mesh<M> {
    ends: Vec<MeshEnd<M>>,
    stats: Arc<MeshStats>,
}

impl<M> fmt::Debug for Mesh<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mesh")
            .field("workers", &self.ends.len())
            .finish_non_exhaustive()
    }
}

impl<M> Mesh<M> {
    /// `N × (N - 1)` queues of `capacity` messages each (at least 1), one per ordered pair
    /// of distinct workers.
    pub fn new(workers: Workers, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let n = usize::from(workers.count());
        let stats = Arc::new(MeshStats::new(workers));
        let shared = Arc::new(Shared {
            doorbells: (0..n).map(|_| Doorbell::default()).collect(),
            stats: Arc::clone(&stats),
        });
        let mut producers: Vec<Vec<Option<Producer<M>>>> =
            (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
        let mut consumers: Vec<Vec<(WorkerId, Consumer<M>)>> =
            (0..n).map(|_| Vec::with_capacity(n)).collect();
        for from in workers.iter() {
            for to in workers.iter().filter(|&to| to != from) {
                let (p, c) = RingBuffer::new(capacity);
                if let Some(slot) = producers
                    .get_mut(from.index())
                    .and_then(|row| row.get_mut(to.index()))
                {
                    *slot = Some(p);
                }
                if let Some(col) = consumers.get_mut(to.index()) {
                    col.push((from, c));
                }
            }
        }
        let ends = workers
            .iter()
            .zip(producers)
            .zip(consumers)
            .map(|((id, producers), consumers)| MeshEnd {
                id,
                workers,
                producers,
                budget: vec![0; consumers.len()],
                consumers,
                next: 0,
                shared: Arc::clone(&shared),
            })
            .collect();
        Self { ends, stats }
    }

    /// The counters of every worker, readable from any thread.
    pub fn stats(&self) -> Arc<MeshStats> {
        Arc::clone(&self.stats)
    }

    /// Each worker's end, indexed by worker number.
    pub fn into_ends(self) -> Vec<MeshEnd<M>> {
        self.ends
    }
}

/// One worker's end of the mesh: a producer towards every other worker and a consumer from
/// every other worker. Move it into the worker's thread; it is `Send` when `M` is.
pub struct MeshEnd<M> {
    id: WorkerId,
    workers: Workers,
    /// Indexed by receiving worker; `None` at this worker's own index.
    producers: Vec<Option<Producer<M>>>,
    /// One per sending worker, in worker order.
    consumers: Vec<(WorkerId, Consumer<M>)>,
    /// Scratch for [`MeshEnd::drain`]: how many messages each consumer still may give in
    /// this drain. Kept here so that a drain does not allocate.
    budget: Vec<usize>,
    /// The consumer the next drain starts with, so no sender is always served first.
    next: usize,
    shared: Arc<Shared>,
}

impl<M> fmt::Debug for MeshEnd<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeshEnd")
            .field("id", &self.id)
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl<M> MeshEnd<M> {
    /// The worker this end belongs to.
    pub fn id(&self) -> WorkerId {
        self.id
    }

    /// The workers of this mesh.
    pub fn workers(&self) -> Workers {
        self.workers
    }

    /// The counters of every worker of this mesh.
    pub fn stats(&self) -> &Arc<MeshStats> {
        &self.shared.stats
    }

    fn my_stats(&self) -> Option<&WorkerStats> {
        self.shared.stats.workers.get(self.id.index())
    }

    /// Hand `msg` to worker `to`, waking it if it is parked in [`MeshEnd::recv_ready`].
    /// Never blocks: a full queue gives the message back.
    pub fn send(&mut self, to: WorkerId, msg: M) -> Result<(), SendError<M>> {
        let Some(producer) = self.producers.get_mut(to.index()).and_then(Option::as_mut) else {
            return Err(SendError::NoRoute(msg));
        };
        match producer.push(msg) {
            Ok(()) => {}
            Err(PushError::Full(msg)) => {
                // Only on the slow path: `is_abandoned` reads the shared reference count.
                let closed = producer.is_abandoned();
                if let Some(s) = self.my_stats() {
                    bump(&s.full, 1);
                }
                return Err(if closed {
                    SendError::Closed(msg)
                } else {
                    SendError::Full(msg)
                });
            }
        }
        let Some(stats) = self.shared.stats.workers.get(self.id.index()) else {
            return Ok(());
        };
        bump(&stats.sent, 1);
        if let Some(bell) = self.shared.doorbells.get(to.index()) {
            // Pairs with the fence in `recv_ready`: either the receiver sees our message in
            // its re-check, or we see its idle flag here (no store-buffering between the
            // queue's tail and the flag), so a message is never left behind a sleeper.
            fence(Ordering::SeqCst);
            // Load first: the common case (receiver busy) stays a read of a shared line.
            if bell.idle.load(Ordering::Relaxed) && bell.idle.swap(false, Ordering::AcqRel) {
                bell.notify.notify_one();
                bump(&stats.wakeups_sent, 1);
            }
        }
        Ok(())
    }

    /// Whether any other worker has a message waiting for this one.
    pub fn has_ready(&self) -> bool {
        self.consumers.iter().any(|(_, c)| !c.is_empty())
    }

    /// Wait until a message is waiting. Returns at once if one already is; otherwise parks
    /// this worker's task until a sender rings. Cancel-safe: dropping the future (e.g. in a
    /// `select!` with a socket or the stop token) lowers the idle flag again.
    pub async fn recv_ready(&self) {
        let Some(bell) = self.shared.doorbells.get(self.id.index()) else {
            // Not reachable for an end built by `Mesh::new`; never wait on nothing.
            return;
        };
        let mut woken = false;
        loop {
            if self.has_ready() {
                return;
            }
            if woken {
                if let Some(s) = self.my_stats() {
                    bump(&s.wakeups_empty, 1);
                }
            }
            let guard = IdleGuard(&bell.idle);
            bell.idle.store(true, Ordering::Relaxed);
            // See `send`: the flag must be visible before we look at the queues again.
            fence(Ordering::SeqCst);
            if self.has_ready() {
                return;
            }
            bell.notify.notified().await;
            drop(guard);
            woken = true;
            if let Some(s) = self.my_stats() {
                bump(&s.wakeups_received, 1);
            }
        }
    }

    /// Read the messages that were waiting when the drain began, one per sender in turn
    /// (so one busy sender cannot starve the others), and give each to `f` with its
    /// sender. Messages from one sender come in the order it sent them. Returns how many
    /// were read.
    ///
    /// Messages that arrive during the drain are left for the next one, so a drain always
    /// ends, whatever the senders do.
    pub fn drain(&mut self, mut f: impl FnMut(WorkerId, M)) -> usize {
        let n = self.consumers.len();
        if n == 0 {
            return 0;
        }
        let mut left = 0usize;
        let mut deepest = 0usize;
        for ((_, c), b) in self.consumers.iter().zip(self.budget.iter_mut()) {
            *b = c.slots();
            left = left.saturating_add(*b);
            deepest = deepest.max(*b);
        }
        let waiting = left;
        let mut read = 0usize;
        let start = self.next % n;
        self.next = (start + 1) % n;
        while left > 0 {
            for k in 0..n {
                let i = (start + k) % n;
                let (Some((from, c)), Some(b)) =
                    (self.consumers.get_mut(i), self.budget.get_mut(i))
                else {
                    continue;
                };
                if *b == 0 {
                    continue;
                }
                *b -= 1;
                left = left.saturating_sub(1);
                // The count came from `slots()`, and only this thread pops, so the message
                // is there; should it not be, the budget still ends the loop.
                if let Ok(msg) = c.pop() {
                    read += 1;
                    f(*from, msg);
                }
            }
        }
        if let Some(s) = self.my_stats() {
            bump(&s.received, read as u64);
            s.depth.store(waiting as u64, Ordering::Relaxed);
            let deepest = deepest as u64;
            if deepest > s.max_depth.load(Ordering::Relaxed) {
                s.max_depth.store(deepest, Ordering::Relaxed);
            }
        }
        read
    }
}

/// Lowers a worker's idle flag when it stops waiting, however it stops (woken, or its
/// `recv_ready` future dropped), so senders do not ring a worker that is not asleep.
struct IdleGuard<'a>(&'a AtomicBool);

impl Drop for IdleGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ws(n: u16) -> Workers {
        Workers::new(n).unwrap()
    }

    #[test]
    fn no_queue_to_self_or_unknown_worker() {
        let mut ends = Mesh::<u32>::new(ws(3), 4).into_ends();
        let e0 = &mut ends[0];
        assert!(matches!(
            e0.send(WorkerId(0), 7),
            Err(SendError::NoRoute(7))
        ));
        assert!(matches!(
            e0.send(WorkerId(3), 8),
            Err(SendError::NoRoute(8))
        ));
        assert!(e0.send(WorkerId(2), 9).is_ok());
    }

    #[test]
    fn full_gives_message_back_and_counts() {
        let mesh = Mesh::<u32>::new(ws(2), 2);
        let stats = mesh.stats();
        let mut ends = mesh.into_ends();
        let mut e1 = ends.pop().unwrap();
        let mut e0 = ends.pop().unwrap();
        assert!(e0.send(WorkerId(1), 1).is_ok());
        assert!(e0.send(WorkerId(1), 2).is_ok());
        let e = e0.send(WorkerId(1), 3).unwrap_err();
        assert!(matches!(e, SendError::Full(3)));
        let mut got = Vec::new();
        assert_eq!(e1.drain(|from, m| got.push((from, m))), 2);
        assert_eq!(got, vec![(WorkerId(0), 1), (WorkerId(0), 2)]);
        let c0 = stats.worker(WorkerId(0)).unwrap();
        let c1 = stats.worker(WorkerId(1)).unwrap();
        assert_eq!((c0.sent, c0.full, c0.received), (2, 1, 0));
        assert_eq!((c1.sent, c1.received, c1.max_depth, c1.depth), (0, 2, 2, 2));
        // The gauge follows the latest drain.
        assert_eq!(e1.drain(|_, _| {}), 0);
        assert_eq!(stats.worker(WorkerId(1)).unwrap().depth, 0);
    }

    #[test]
    fn closed_when_receiver_gone_and_full() {
        let mut ends = Mesh::<u32>::new(ws(2), 1).into_ends();
        drop(ends.pop());
        let e0 = &mut ends[0];
        assert!(e0.send(WorkerId(1), 1).is_ok());
        assert!(matches!(e0.send(WorkerId(1), 2), Err(SendError::Closed(2))));
    }

    #[test]
    fn drain_is_round_robin_over_senders() {
        let mut ends = Mesh::<(u16, u32)>::new(ws(4), 8).into_ends();
        for from in 1..4u16 {
            for k in 0..3 {
                ends[usize::from(from)]
                    .send(WorkerId(0), (from, k))
                    .unwrap();
            }
        }
        let mut order = Vec::new();
        assert_eq!(ends[0].drain(|_, m| order.push(m)), 9);
        // One from each sender in turn, each sender's own messages in order.
        assert_eq!(
            order,
            vec![
                (1, 0),
                (2, 0),
                (3, 0),
                (1, 1),
                (2, 1),
                (3, 1),
                (1, 2),
                (2, 2),
                (3, 2)
            ]
        );
        // The next drain starts with the next sender.
        for from in 1..4u16 {
            ends[usize::from(from)]
                .send(WorkerId(0), (from, 9))
                .unwrap();
        }
        order.clear();
        ends[0].drain(|_, m| order.push(m));
        assert_eq!(order, vec![(2, 9), (3, 9), (1, 9)]);
    }

    #[test]
    fn single_worker_mesh_has_nothing_to_drain() {
        let mut ends = Mesh::<u8>::new(Workers::single(), 4).into_ends();
        assert_eq!(ends.len(), 1);
        assert!(!ends[0].has_ready());
        assert_eq!(ends[0].drain(|_, _| {}), 0);
    }

    #[test]
    fn busy_receiver_is_not_woken() {
        let mesh = Mesh::<u8>::new(ws(2), 4);
        let stats = mesh.stats();
        let mut ends = mesh.into_ends();
        ends[0].send(WorkerId(1), 1).unwrap();
        assert_eq!(stats.worker(WorkerId(0)).unwrap().wakeups_sent, 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn idle_receiver_is_woken_once() {
        let mesh = Mesh::<u8>::new(ws(2), 4);
        let stats = mesh.stats();
        let mut ends = mesh.into_ends();
        let e1 = ends.pop().unwrap();
        let mut e0 = ends.pop().unwrap();
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async move {
                let waiter = tokio::task::spawn_local(async move {
                    e1.recv_ready().await;
                    e1
                });
                // Let the waiter park with its idle flag raised.
                tokio::task::yield_now().await;
                e0.send(WorkerId(1), 1).unwrap();
                e0.send(WorkerId(1), 2).unwrap();
                let mut e1 = waiter.await.unwrap();
                assert_eq!(e1.drain(|_, _| {}), 2);
            })
            .await;
        let c0 = stats.worker(WorkerId(0)).unwrap();
        assert_eq!(c0.wakeups_sent, 1);
        let c1 = stats.worker(WorkerId(1)).unwrap();
        assert_eq!((c1.wakeups_received, c1.wakeups_empty), (1, 0));
        assert_eq!(c1.depth, 2);
        assert_eq!(stats.total().wakeups_received, 1);
    }
}
