//! The steering table, the migration protocol and the policy on the real runtime: what a
//! worker calls for each message it reads and on each turn of its loop, and the controller
//! that turns load reports into moves.
//!
//! A worker owns a [`SteeredWorker`] and its own shard (anything implementing [`Shard`]). It
//! hands every message it reads to [`SteeredWorker::submit`] and calls
//! [`SteeredWorker::poll`] on every turn of its loop (and at least now and then when idle, so
//! that it marks moves). Sends that find a queue full wait in a per-destination outbox, so a
//! full queue never reorders what goes to one worker (the protocol's FIFO assumption).
//!
//! The [`Rebalancer`] runs wherever the operator likes (a timer task, a control thread); each
//! [`Rebalancer::step`] is one policy interval over the counts in the [`LoadBoard`].

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::mesh::{MeshEnd, SendError};
use crate::migrate::{Action, MigrationStats, Migrator};
use crate::policy::{imbalance, Decision, Policy, TopK, WorkerLoad};
use crate::table::{AppId, SteeringTable, TableReader};
use crate::{WorkerId, Workers};

/// What travels on the mesh between steered workers.
#[derive(Debug)]
pub enum Wire<M, S> {
    /// A message for `app`, to be handled by its owner.
    Data {
        /// The id.
        app: AppId,
        /// The message.
        msg: M,
    },
    /// The sender has switched `app` to `target` for move `epoch`.
    Marker {
        /// The id.
        app: AppId,
        /// The move.
        epoch: u64,
        /// The new owner.
        target: WorkerId,
    },
    /// `app`'s state, from its old owner to its new one.
    Handover {
        /// The id.
        app: AppId,
        /// The move.
        epoch: u64,
        /// The state.
        state: S,
    },
}

/// A worker's per-app-id state: what the messages act on and what a move carries.
pub trait Shard {
    /// A message for one app id.
    type Msg;
    /// One app id's state, as it travels between workers.
    type State;
    /// Handle `msg` for `app`.
    fn handle(&mut self, app: AppId, msg: Self::Msg);
    /// Take `app`'s state out (it is moving away; an id with no state gives an empty one).
    fn export(&mut self, app: AppId) -> Self::State;
    /// Put `app`'s state in (it moved here).
    fn import(&mut self, app: AppId, state: Self::State);
}

#[derive(Debug)]
struct Slot {
    handled: u64,
    top: TopK,
}

/// Where workers post load for the controller: a slot per worker for the messages offered
/// to it (routed to it by every reader, itself included) and its hottest ids among them.
/// Readers count as they route and post every [`SteeredOptions::publish_every`] messages (not
/// per message); [`LoadBoard::collect`] empties the slots.
///
/// Offered rather than handled: a worker that runs flat out handles as many messages per
/// interval as any other, however deep its queues; what tells a hot worker is what is routed
/// to it.
#[derive(Debug)]
pub struct LoadBoard {
    slots: Box<[Mutex<Slot>]>,
}

impl LoadBoard {
    /// A board for `workers`, each keeping its `k` hottest ids.
    pub fn new(workers: Workers, k: usize) -> Self {
        Self {
            slots: workers
                .iter()
                .map(|_| {
                    Mutex::new(Slot {
                        handled: 0,
                        top: TopK::new(k),
                    })
                })
                .collect(),
        }
    }

    fn post(&self, w: WorkerId, handled: u64, top: &TopK) {
        if let Some(slot) = self.slots.get(w.index()) {
            let mut s = slot.lock().unwrap_or_else(PoisonError::into_inner);
            s.handled = s.handled.saturating_add(handled);
            s.top.merge(top);
        }
    }

    /// Messages posted since the last collect, over all workers.
    pub fn pending(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).handled)
            .sum()
    }

    /// Each worker's load since the last collect, and start a new interval.
    pub fn collect(&self) -> Vec<WorkerLoad> {
        self.slots
            .iter()
            .map(|slot| {
                let mut s = slot.lock().unwrap_or_else(PoisonError::into_inner);
                let load = WorkerLoad {
                    offered: s.handled,
                    top: s.top.top(),
                };
                s.handled = 0;
                s.top.clear();
                load
            })
            .collect()
    }
}

/// How a [`SteeredWorker`] behaves.
#[derive(Debug, Clone)]
pub struct SteeredOptions {
    /// Post load to the board after this many routed messages (and whenever idle).
    pub publish_every: u64,
    /// Counters of each of the worker's top-k sketches (one per destination).
    pub top_k: usize,
}

impl Default for SteeredOptions {
    fn default() -> Self {
        Self {
            publish_every: 1024,
            top_k: 16,
        }
    }
}

/// Counters of one steered worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SteeredStats {
    /// The protocol's counters.
    pub migration: MigrationStats,
    /// Messages handed to the shard.
    pub handled: u64,
    /// Sends that found the queue full and waited in the outbox.
    pub deferred: u64,
    /// Messages dropped because their worker has gone (the runtime is stopping).
    pub dropped: u64,
    /// `finish_move` calls the table refused (or whose kernel mirror failed).
    pub finish_errors: u64,
}

/// One worker's steering: its table reader, its side of the migration protocol, its
/// outboxes and its load meter.
pub struct SteeredWorker<M, S> {
    id: WorkerId,
    table: Arc<SteeringTable>,
    reader: TableReader,
    migrator: Migrator<M>,
    /// Indexed by destination worker.
    outbox: Vec<VecDeque<Wire<M, S>>>,
    scratch: Vec<(WorkerId, Wire<M, S>)>,
    board: Arc<LoadBoard>,
    /// Indexed by destination worker: messages this worker routed there since the last post,
    /// and their ids.
    offered: Vec<(u64, TopK)>,
    unposted: u64,
    opts: SteeredOptions,
    stats: SteeredStats,
}

impl<M, S> fmt::Debug for SteeredWorker<M, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SteeredWorker")
            .field("id", &self.id)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<M, S> SteeredWorker<M, S> {
    /// The steering of worker `id`.
    pub fn new(
        id: WorkerId,
        table: Arc<SteeringTable>,
        board: Arc<LoadBoard>,
        opts: SteeredOptions,
    ) -> Self {
        let mut reader = table.reader();
        let snap = Arc::clone(reader.load());
        let n = usize::from(snap.workers().count());
        Self {
            id,
            migrator: Migrator::new(id, snap),
            table,
            reader,
            outbox: (0..n).map(|_| VecDeque::new()).collect(),
            scratch: Vec::new(),
            board,
            offered: (0..n).map(|_| (0, TopK::new(opts.top_k))).collect(),
            unposted: 0,
            opts,
            stats: SteeredStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> SteeredStats {
        SteeredStats {
            migration: self.migrator.stats(),
            ..self.stats
        }
    }

    /// Messages waiting for room in a full queue.
    pub fn backlog(&self) -> usize {
        self.outbox.iter().map(VecDeque::len).sum()
    }

    /// Ids this worker is taking over and holding messages for.
    pub fn holding(&self) -> usize {
        self.migrator.holding()
    }

    /// Observe the table's current version if it changed: one atomic load when it did not.
    fn refresh(&mut self) {
        let snap = self.reader.load();
        if snap.version() != self.migrator.snapshot().version() {
            self.migrator.observe(Arc::clone(snap));
        }
    }

    /// A message this worker read from outside, for `app`: handle it here or send it to its
    /// owner.
    pub fn submit<H>(&mut self, mesh: &mut MeshEnd<Wire<M, S>>, shard: &mut H, app: AppId, msg: M)
    where
        H: Shard<Msg = M, State = S>,
    {
        self.refresh();
        let to = self.migrator.snapshot().route(app);
        if let Some((n, top)) = self.offered.get_mut(to.index()) {
            *n += 1;
            top.record(app, 1);
        }
        self.unposted += 1;
        self.migrator.submit(app, msg);
        self.run(mesh, shard);
        if self.unposted >= self.opts.publish_every {
            self.post();
        }
    }

    /// One turn: mark new moves, read what other workers sent, retry full queues, post
    /// load. Returns how many mesh messages were read.
    pub fn poll<H>(&mut self, mesh: &mut MeshEnd<Wire<M, S>>, shard: &mut H) -> usize
    where
        H: Shard<Msg = M, State = S>,
    {
        self.refresh();
        self.run(mesh, shard);
        let mut scratch = std::mem::take(&mut self.scratch);
        let read = mesh.drain(|from, w| scratch.push((from, w)));
        for (from, wire) in scratch.drain(..) {
            // The sender read the table before it sent; reading it again here makes our
            // snapshot at least as new (the contract of `Migrator`).
            self.refresh();
            match wire {
                Wire::Data { app, msg } => self.migrator.on_data(from, app, msg),
                Wire::Marker { app, epoch, target } => {
                    self.migrator.on_marker(from, app, epoch, target)
                }
                Wire::Handover { app, epoch, state } => {
                    // The state goes in before the held messages come out.
                    shard.import(app, state);
                    self.migrator.on_handover(app, epoch);
                }
            }
            self.run(mesh, shard);
        }
        self.scratch = scratch;
        self.flush(mesh);
        if read == 0 || self.unposted >= self.opts.publish_every {
            self.post();
        }
        read
    }

    /// Post the load counted since the last post to the board.
    pub fn post(&mut self) {
        if self.unposted == 0 {
            return;
        }
        for (i, (n, top)) in self.offered.iter_mut().enumerate() {
            if *n > 0 {
                // `i` is below the worker count, a u16.
                self.board.post(WorkerId(i as u16), *n, top);
                *n = 0;
                top.clear();
            }
        }
        self.unposted = 0;
    }

    fn run<H>(&mut self, mesh: &mut MeshEnd<Wire<M, S>>, shard: &mut H)
    where
        H: Shard<Msg = M, State = S>,
    {
        while let Some(a) = self.migrator.poll_action() {
            match a {
                Action::Deliver { app, msg } => {
                    shard.handle(app, msg);
                    self.stats.handled += 1;
                }
                Action::Send { to, app, msg } => self.send(mesh, to, Wire::Data { app, msg }),
                Action::Marker {
                    to,
                    app,
                    epoch,
                    target,
                } => self.send(mesh, to, Wire::Marker { app, epoch, target }),
                Action::Handover { to, app, epoch } => {
                    let state = shard.export(app);
                    self.send(mesh, to, Wire::Handover { app, epoch, state });
                }
                Action::Completed { app, epoch } => {
                    if let Err(e) = self.table.finish_move(app, epoch) {
                        self.stats.finish_errors += 1;
                        tracing::warn!(worker = %self.id, %app, epoch, error = %e, "finishing a move");
                    }
                }
            }
        }
    }

    fn send(&mut self, mesh: &mut MeshEnd<Wire<M, S>>, to: WorkerId, w: Wire<M, S>) {
        let Some(q) = self.outbox.get_mut(to.index()) else {
            self.stats.dropped += 1;
            return;
        };
        if !q.is_empty() {
            // Behind what already waits: FIFO per destination.
            q.push_back(w);
            self.stats.deferred += 1;
            return;
        }
        match mesh.send(to, w) {
            Ok(()) => {}
            Err(SendError::Full(w)) => {
                q.push_back(w);
                self.stats.deferred += 1;
            }
            Err(_) => self.stats.dropped += 1,
        }
    }

    fn flush(&mut self, mesh: &mut MeshEnd<Wire<M, S>>) {
        for (i, q) in self.outbox.iter_mut().enumerate() {
            // `i` is below the worker count, a u16.
            let to = WorkerId(i as u16);
            while let Some(w) = q.pop_front() {
                match mesh.send(to, w) {
                    Ok(()) => {}
                    Err(SendError::Full(w)) => {
                        q.push_front(w);
                        break;
                    }
                    Err(_) => self.stats.dropped += 1,
                }
            }
        }
    }
}

/// One policy interval as the [`Rebalancer`] saw it.
#[derive(Debug, Clone)]
pub struct IntervalReport {
    /// Messages routed to each worker.
    pub offered: Vec<u64>,
    /// Max over mean of `offered`.
    pub imbalance: Option<f64>,
    /// Moves begun.
    pub moves: Vec<Decision>,
    /// Moves the table refused (the id began moving meanwhile, ...).
    pub refused: Vec<(Decision, String)>,
}

/// The controller: collects the board, asks the policy, begins the moves.
#[derive(Debug)]
pub struct Rebalancer {
    table: Arc<SteeringTable>,
    board: Arc<LoadBoard>,
    policy: Policy,
}

impl Rebalancer {
    /// A controller over `table` and `board` with `policy`.
    pub fn new(table: Arc<SteeringTable>, board: Arc<LoadBoard>, policy: Policy) -> Self {
        Self {
            table,
            board,
            policy,
        }
    }

    /// One interval.
    pub fn step(&mut self) -> IntervalReport {
        let loads = self.board.collect();
        let snap = self.table.snapshot();
        let decisions = self.policy.decide(&loads, &snap);
        let offered: Vec<u64> = loads.iter().map(|l| l.offered).collect();
        let mut report = IntervalReport {
            imbalance: imbalance(&offered),
            offered,
            moves: Vec::new(),
            refused: Vec::new(),
        };
        for d in decisions {
            match self.table.begin_move(d.app, d.to) {
                Ok(_) => {
                    tracing::info!(app = %d.app, from = %d.from, to = %d.to, load = d.load, reason = ?d.reason, "moving");
                    report.moves.push(d);
                }
                Err(e) => report.refused.push((d, e.to_string())),
            }
        }
        report
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::mesh::Mesh;

    /// Records every message in order; the state is the record.
    #[derive(Default)]
    struct Log(std::collections::HashMap<AppId, Vec<u32>>);

    impl Shard for Log {
        type Msg = u32;
        type State = Vec<u32>;
        fn handle(&mut self, app: AppId, msg: u32) {
            self.0.entry(app).or_default().push(msg);
        }
        fn export(&mut self, app: AppId) -> Vec<u32> {
            self.0.remove(&app).unwrap_or_default()
        }
        fn import(&mut self, app: AppId, state: Vec<u32>) {
            self.0.insert(app, state);
        }
    }

    /// Queues of one message: nearly every send waits in the outbox, and a move happens
    /// in the middle of the stream. The outbox must keep order per destination, markers
    /// included, and post its load to the board.
    #[test]
    fn full_queues_defer_in_order_across_a_move() {
        let workers = Workers::new(2).unwrap();
        let table = Arc::new(SteeringTable::new(workers));
        let board = Arc::new(LoadBoard::new(workers, 4));
        let mut ends = Mesh::<Wire<u32, Vec<u32>>>::new(workers, 1).into_ends();
        let mut m1 = ends.pop().unwrap();
        let mut m0 = ends.pop().unwrap();
        let opts = SteeredOptions {
            publish_every: 8,
            top_k: 4,
        };
        let mut w0 = SteeredWorker::new(
            WorkerId(0),
            Arc::clone(&table),
            Arc::clone(&board),
            opts.clone(),
        );
        let mut w1 = SteeredWorker::new(WorkerId(1), Arc::clone(&table), Arc::clone(&board), opts);
        let (mut s0, mut s1) = (Log::default(), Log::default());
        let x = AppId(4); // owned by w0
        for i in 0..20 {
            w1.submit(&mut m1, &mut s1, x, i);
        }
        assert!(w1.backlog() > 0, "queue of one: the rest waits");
        table.begin_move(x, WorkerId(1)).unwrap();
        for i in 20..40 {
            w1.submit(&mut m1, &mut s1, x, i);
        }
        for _ in 0..200 {
            w0.poll(&mut m0, &mut s0);
            w1.poll(&mut m1, &mut s1);
            if table.snapshot().moves().is_empty() && w0.backlog() == 0 && w1.backlog() == 0 {
                break;
            }
        }
        assert!(table.snapshot().moves().is_empty(), "the move finished");
        assert_eq!(s1.0[&x], (0..40).collect::<Vec<u32>>());
        assert!(s0.0.is_empty());
        let st = w1.stats();
        assert!(st.deferred > 0);
        assert_eq!(st.migration.handovers_received, 1);
        assert_eq!(w0.stats().migration.handovers_sent, 1);
        // w1 routed 20 messages to w0 and 20 to itself.
        let loads = board.collect();
        assert_eq!((loads[0].offered, loads[1].offered), (20, 20));
        assert_eq!(loads[0].top[0], (x, 20));
    }
}
