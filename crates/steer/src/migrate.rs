//! Moving an app id, with its state, from one worker to another without losing a message or
//! reordering those of one sender: the sans-IO core. [`crate::steered`] runs it on the
//! runtime and the mesh; docs/STEERING.md has the sequence diagram.
//!
//! The one guarantee the protocol builds on is the mesh's: each ordered pair of workers has
//! its own FIFO queue. A move of id X from O to N (epoch e), begun with
//! [`crate::table::SteeringTable::begin_move`], goes:
//!
//! 1. The table routes X to N from the new snapshot on.
//! 2. Each worker W, when it first sees that snapshot, sends `Marker(X, e)` to O (O marks
//!    itself). Whatever W sent O for X before, it sent on the same queue, so it is ahead
//!    of the marker; whatever W sends for X afterwards goes to N.
//! 3. N holds back every message for X, whoever sent it, in arrival order.
//! 4. O keeps handling X until it has a marker from every worker: it has then seen every
//!    message routed to it under the old snapshot. It hands X's state to N (behind anything
//!    it sent N before) and never touches X again.
//! 5. N takes the state, handles what it held back, in order, and reports the move done
//!    ([`Action::Completed`]; the adapter calls `finish_move`).
//!
//! Per sender, order holds: a sender's messages for X before its marker are handled by O
//! before the hand-over, and those after it reach N's holding buffer in the order sent.
//!
//! The core trusts one thing of its caller: before it is given a message that came from
//! another worker, it has [`Migrator::observe`]d a snapshot at least as new as the one the
//! sender routed by. Reading the table right before handling each message ensures it (the
//! sender's read of the table happened before its send, which happened before our receive).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::table::{AppId, Snapshot};
use crate::WorkerId;

/// Something the caller must do, in the order given.
#[derive(Debug, PartialEq, Eq)]
pub enum Action<M> {
    /// Handle `msg` for `app` here, now.
    Deliver {
        /// The id.
        app: AppId,
        /// The message.
        msg: M,
    },
    /// Send `msg` for `app` to worker `to`.
    Send {
        /// The worker.
        to: WorkerId,
        /// The id.
        app: AppId,
        /// The message.
        msg: M,
    },
    /// Send a marker for the move of `app` (epoch `epoch`, towards `target`) to `to`, its old
    /// owner.
    Marker {
        /// The old owner.
        to: WorkerId,
        /// The id.
        app: AppId,
        /// The move.
        epoch: u64,
        /// The new owner.
        target: WorkerId,
    },
    /// Take `app`'s state out of this worker's shard and send it to `to` as the hand-over of
    /// move `epoch`.
    Handover {
        /// The new owner.
        to: WorkerId,
        /// The id.
        app: AppId,
        /// The move.
        epoch: u64,
    },
    /// The move is done here: tell the table ([`crate::table::SteeringTable::finish_move`]).
    Completed {
        /// The id.
        app: AppId,
        /// The move.
        epoch: u64,
    },
}

/// What one worker's migrator has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MigrationStats {
    /// Messages handled here.
    pub delivered: u64,
    /// Messages sent to the worker that routes them.
    pub sent: u64,
    /// Messages held back while their id moved here.
    pub held: u64,
    /// Markers sent.
    pub markers_sent: u64,
    /// Markers received (or given to itself, as the old owner).
    pub markers_received: u64,
    /// States handed over.
    pub handovers_sent: u64,
    /// States taken over.
    pub handovers_received: u64,
    /// Messages that came from another worker for an id this worker neither owns nor is
    /// taking over; passed on to the owner. Zero unless the caller broke the contract above.
    pub misrouted: u64,
    /// Markers or hand-overs for a move this worker knew nothing of, or a superseded one.
    pub stale: u64,
}

/// A move away from this worker, waiting for markers.
#[derive(Debug)]
struct Outgoing {
    epoch: u64,
    to: WorkerId,
    /// Indexed by worker.
    marked: Vec<bool>,
    /// Set once the state is gone; kept until the move leaves the table.
    handed: bool,
}

/// A move to this worker, waiting for the state.
#[derive(Debug)]
struct Incoming<M> {
    epoch: u64,
    held: VecDeque<M>,
}

/// One worker's side of the protocol. Feed it snapshots and messages; take
/// [`Action`]s out with [`Migrator::poll_action`] after each call.
#[derive(Debug)]
pub struct Migrator<M> {
    me: WorkerId,
    snap: Arc<Snapshot>,
    /// The highest move epoch this worker has sent (or given itself) a marker for.
    marked_epoch: u64,
    outgoing: HashMap<AppId, Outgoing>,
    incoming: HashMap<AppId, Incoming<M>>,
    actions: VecDeque<Action<M>>,
    stats: MigrationStats,
}

impl<M> Migrator<M> {
    /// The migrator of worker `me`, starting from `snap` (usually version 0, with no moves;
    /// moves already listed in it are observed as new).
    pub fn new(me: WorkerId, snap: Arc<Snapshot>) -> Self {
        let mut m = Self {
            me,
            snap: Arc::clone(&snap),
            marked_epoch: 0,
            outgoing: HashMap::new(),
            incoming: HashMap::new(),
            actions: VecDeque::new(),
            stats: MigrationStats::default(),
        };
        m.react(&snap);
        m
    }

    /// The snapshot this worker routes by.
    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snap
    }

    /// Counters.
    pub fn stats(&self) -> MigrationStats {
        self.stats
    }

    /// The next thing to do.
    pub fn poll_action(&mut self) -> Option<Action<M>> {
        self.actions.pop_front()
    }

    /// Ids this worker is taking over and holds messages for.
    pub fn holding(&self) -> usize {
        self.incoming.len()
    }

    /// Route by `snap` from now on (ignored unless newer than the current one), marking
    /// every move it lists that this worker has not marked yet.
    pub fn observe(&mut self, snap: Arc<Snapshot>) {
        if snap.version() <= self.snap.version() {
            return;
        }
        self.snap = Arc::clone(&snap);
        self.react(&snap);
    }

    fn react(&mut self, snap: &Snapshot) {
        // A move stays in the table until its new owner has the state, which needs this
        // worker's marker, so no move can pass unseen between two snapshots we observe.
        let marked = self.marked_epoch;
        let mut highest = marked;
        for mv in snap.moves().iter().filter(|m| m.epoch > marked) {
            highest = highest.max(mv.epoch);
            if mv.to == self.me {
                self.incoming.entry(mv.app).or_insert_with(|| Incoming {
                    epoch: mv.epoch,
                    held: VecDeque::new(),
                });
            }
            if mv.from == self.me {
                // Everything this worker routed to itself under the old snapshot it has
                // already handled, on this thread: its own marker is implicit.
                self.marker(self.me, mv.app, mv.epoch, mv.to);
            } else {
                self.stats.markers_sent += 1;
                self.actions.push_back(Action::Marker {
                    to: mv.from,
                    app: mv.app,
                    epoch: mv.epoch,
                    target: mv.to,
                });
            }
        }
        self.marked_epoch = highest;
        // Forget moves that are over.
        self.outgoing
            .retain(|app, o| snap.moving(*app).is_some_and(|m| m.epoch == o.epoch));
    }

    /// A message this worker read from outside (a socket), for `app`.
    pub fn submit(&mut self, app: AppId, msg: M) {
        let to = self.snap.route(app);
        if to == self.me {
            self.local(app, msg);
        } else {
            self.stats.sent += 1;
            self.actions.push_back(Action::Send { to, app, msg });
        }
    }

    /// A message for `app` that worker `from` sent here.
    pub fn on_data(&mut self, from: WorkerId, app: AppId, msg: M) {
        let _ = from;
        if self.snap.route(app) == self.me {
            self.local(app, msg);
        } else if self.outgoing.get(&app).is_some_and(|o| !o.handed)
            || self
                .snap
                .moving(app)
                .is_some_and(|m| m.from == self.me && !self.outgoing.contains_key(&app))
        {
            // Sent before its sender's marker: this worker still owns `app`.
            self.stats.delivered += 1;
            self.actions.push_back(Action::Deliver { app, msg });
        } else {
            let to = self.snap.route(app);
            self.stats.misrouted += 1;
            self.stats.sent += 1;
            self.actions.push_back(Action::Send { to, app, msg });
        }
    }

    fn local(&mut self, app: AppId, msg: M) {
        if let Some(inc) = self.incoming.get_mut(&app) {
            self.stats.held += 1;
            inc.held.push_back(msg);
        } else {
            self.stats.delivered += 1;
            self.actions.push_back(Action::Deliver { app, msg });
        }
    }

    /// A marker that worker `from` sent for the move of `app` (epoch `epoch`, to `target`).
    pub fn on_marker(&mut self, from: WorkerId, app: AppId, epoch: u64, target: WorkerId) {
        self.marker(from, app, epoch, target);
    }

    fn marker(&mut self, from: WorkerId, app: AppId, epoch: u64, target: WorkerId) {
        self.stats.markers_received += 1;
        let n = usize::from(self.snap.workers().count());
        let o = self.outgoing.entry(app).or_insert_with(|| Outgoing {
            epoch,
            to: target,
            marked: vec![false; n],
            handed: false,
        });
        if o.epoch != epoch || o.handed {
            self.stats.stale += 1;
            return;
        }
        match o.marked.get_mut(from.index()) {
            Some(m) if !*m => *m = true,
            _ => {
                self.stats.stale += 1;
                return;
            }
        }
        if o.marked.iter().all(|&m| m) {
            o.handed = true;
            let to = o.to;
            self.stats.handovers_sent += 1;
            self.actions.push_back(Action::Handover { to, app, epoch });
        }
    }

    /// The state of `app` for move `epoch` has arrived and the caller has put it in its
    /// shard: release what was held back, in order, and report the move done.
    pub fn on_handover(&mut self, app: AppId, epoch: u64) {
        self.stats.handovers_received += 1;
        match self.incoming.remove(&app) {
            Some(inc) => {
                if inc.epoch != epoch {
                    self.stats.stale += 1;
                }
                for msg in inc.held {
                    self.stats.delivered += 1;
                    self.actions.push_back(Action::Deliver { app, msg });
                }
            }
            None => self.stats.stale += 1,
        }
        self.actions.push_back(Action::Completed { app, epoch });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::table::SteeringTable;
    use crate::Workers;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// A message in the model: its sender and its place in that sender's sequence for the
    /// id (the model has one id per sender stream that matters: the moving one).
    type Msg = (u16, u32);

    #[derive(Debug)]
    enum Wire {
        Data(AppId, Msg),
        Marker(AppId, u64, WorkerId),
        Handover(AppId, u64, Vec<Msg>),
    }

    /// A whole system in memory: the table, one migrator and shard per worker, and a FIFO
    /// per ordered pair. The scheduler picks at random (seeded) what happens next.
    struct Model {
        table: SteeringTable,
        nodes: Vec<Migrator<Msg>>,
        /// Per worker: per app, the messages handled, in order (the "state").
        shards: Vec<HashMap<AppId, Vec<Msg>>>,
        queues: HashMap<(u16, u16), VecDeque<Wire>>,
        completed: Vec<(AppId, u64)>,
    }

    impl Model {
        fn new(n: u16) -> Self {
            let table = SteeringTable::new(Workers::new(n).unwrap());
            let nodes = (0..n)
                .map(|w| Migrator::new(WorkerId(w), table.snapshot()))
                .collect();
            Self {
                table,
                nodes,
                shards: (0..n).map(|_| HashMap::new()).collect(),
                queues: HashMap::new(),
                completed: Vec::new(),
            }
        }

        fn run_actions(&mut self, w: u16) {
            while let Some(a) = self.nodes[usize::from(w)].poll_action() {
                match a {
                    Action::Deliver { app, msg } => self.shards[usize::from(w)]
                        .entry(app)
                        .or_default()
                        .push(msg),
                    Action::Send { to, app, msg } => self.push(w, to, Wire::Data(app, msg)),
                    Action::Marker {
                        to,
                        app,
                        epoch,
                        target,
                    } => self.push(w, to, Wire::Marker(app, epoch, target)),
                    Action::Handover { to, app, epoch } => {
                        let state = self.shards[usize::from(w)].remove(&app).unwrap_or_default();
                        self.push(w, to, Wire::Handover(app, epoch, state));
                    }
                    Action::Completed { app, epoch } => {
                        self.table.finish_move(app, epoch).unwrap();
                        self.completed.push((app, epoch));
                    }
                }
            }
        }

        fn push(&mut self, from: u16, to: WorkerId, w: Wire) {
            assert_ne!(from, to.0, "no queue to self");
            self.queues.entry((from, to.0)).or_default().push_back(w);
        }

        fn refresh(&mut self, w: u16) {
            let s = self.table.snapshot();
            self.nodes[usize::from(w)].observe(s);
            self.run_actions(w);
        }

        /// Deliver the head of queue `from → to`, refreshing `to` first (the caller's
        /// contract).
        fn deliver(&mut self, from: u16, to: u16) {
            let Some(wire) = self
                .queues
                .get_mut(&(from, to))
                .and_then(VecDeque::pop_front)
            else {
                return;
            };
            self.refresh(to);
            let node = &mut self.nodes[usize::from(to)];
            match wire {
                Wire::Data(app, msg) => node.on_data(WorkerId(from), app, msg),
                Wire::Marker(app, epoch, target) => {
                    node.on_marker(WorkerId(from), app, epoch, target)
                }
                Wire::Handover(app, epoch, state) => {
                    let shard = self.shards[usize::from(to)].entry(app).or_default();
                    assert!(shard.is_empty(), "state of {app} already at w{to}");
                    *shard = state;
                    node.on_handover(app, epoch);
                }
            }
            self.run_actions(to);
        }

        fn busy_queues(&self) -> Vec<(u16, u16)> {
            let mut v: Vec<_> = self
                .queues
                .iter()
                .filter(|(_, q)| !q.is_empty())
                .map(|(&k, _)| k)
                .collect();
            v.sort_unstable();
            v
        }
    }

    /// Every sender sends `per_sender` messages for each of `apps`; the table moves ids at
    /// random moments (each one whenever none of it is in flight), and workers refresh
    /// their snapshots at random moments. At the end each id's whole history sits at
    /// exactly one worker, its owner in the table, with every sender's sequence complete
    /// and in order.
    fn run(seed: u64, n: u16, apps: &[AppId], per_sender: u32, moves: usize) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut m = Model::new(n);
        let mut next_seq: Vec<HashMap<AppId, u32>> = (0..n).map(|_| HashMap::new()).collect();
        let mut moves_left = moves;
        let mut steps = 0u32;
        loop {
            steps += 1;
            assert!(steps < 1_000_000, "seed {seed}: no progress");
            let senders_left: Vec<u16> = (0..n)
                .filter(|&w| {
                    apps.iter()
                        .any(|a| next_seq[usize::from(w)].get(a).copied().unwrap_or(0) < per_sender)
                })
                .collect();
            let busy = m.busy_queues();
            let pending_moves = !m.table.snapshot().moves().is_empty();
            if senders_left.is_empty() && busy.is_empty() && moves_left == 0 && !pending_moves {
                break;
            }
            match rng.gen_range(0..10) {
                0..=3 if !senders_left.is_empty() => {
                    let w = senders_left[rng.gen_range(0..senders_left.len())];
                    let app = apps[rng.gen_range(0..apps.len())];
                    let seq = next_seq[usize::from(w)].entry(app).or_insert(0);
                    if *seq < per_sender {
                        let msg = (w, *seq);
                        *seq += 1;
                        m.nodes[usize::from(w)].submit(app, msg);
                        m.run_actions(w);
                    }
                }
                4..=6 if !busy.is_empty() => {
                    let (f, t) = busy[rng.gen_range(0..busy.len())];
                    m.deliver(f, t);
                }
                7 if moves_left > 0 => {
                    let app = apps[rng.gen_range(0..apps.len())];
                    let to = WorkerId(rng.gen_range(0..n));
                    if m.table.begin_move(app, to).is_ok() {
                        moves_left -= 1;
                    }
                }
                _ => {
                    let w = rng.gen_range(0..n);
                    m.refresh(w);
                }
            }
        }
        let snap = m.table.snapshot();
        for &app in apps {
            let holders: Vec<u16> = (0..n)
                .filter(|&w| m.shards[usize::from(w)].contains_key(&app))
                .collect();
            assert_eq!(
                holders,
                [snap.route(app).0],
                "seed {seed}: {app} state at {holders:?}, routed to {}",
                snap.route(app)
            );
            let log = &m.shards[usize::from(snap.route(app).0)][&app];
            for s in 0..n {
                let seqs: Vec<u32> = log.iter().filter(|x| x.0 == s).map(|x| x.1).collect();
                let want: Vec<u32> = (0..per_sender).collect();
                assert_eq!(seqs, want, "seed {seed}: {app} from w{s}");
            }
        }
        for (w, node) in m.nodes.iter().enumerate() {
            assert_eq!(node.stats().misrouted, 0, "seed {seed}: w{w}");
            assert_eq!(node.stats().stale, 0, "seed {seed}: w{w}");
            assert_eq!(node.holding(), 0, "seed {seed}: w{w} still holding");
        }
        assert_eq!(m.completed.len(), moves - moves_left);
    }

    #[test]
    fn random_interleavings_lose_and_reorder_nothing() {
        for seed in 0..400 {
            run(seed, 3, &[AppId(0), AppId(1), AppId(5)], 12, 4);
        }
        for seed in 1000..1100 {
            run(seed, 2, &[AppId(3)], 20, 3);
        }
        for seed in 2000..2050 {
            run(seed, 4, &[AppId(4), AppId(8), AppId(9)], 8, 6);
        }
    }

    /// The one order in which everything is slowest for the new owner: it gets post-switch
    /// messages and even its own before the hand-over, and must hold them all.
    #[test]
    fn new_owner_holds_until_handover() {
        let mut m = Model::new(3);
        let x = AppId(0); // owned by w0
        m.nodes[1].submit(x, (1, 0));
        m.run_actions(1);
        let mv = m.table.begin_move(x, WorkerId(2)).unwrap();
        // w1 sees the move: marker to w0 behind its first message, then sends to w2.
        m.refresh(1);
        m.nodes[1].submit(x, (1, 1));
        m.run_actions(1);
        m.deliver(1, 2);
        // w2 refreshed on receipt and holds; its own message too.
        m.nodes[2].submit(x, (2, 0));
        m.run_actions(2);
        assert_eq!(m.nodes[2].holding(), 1);
        assert_eq!(m.nodes[2].stats().held, 2);
        assert!(m.shards[2].is_empty());
        // w0 gets w1's old message and marker; w2's marker too; then hands over.
        m.deliver(1, 0);
        m.deliver(1, 0);
        assert_eq!(m.nodes[0].stats().handovers_sent, 0, "w2 has not marked");
        m.deliver(2, 0);
        assert_eq!(m.nodes[0].stats().handovers_sent, 1);
        m.deliver(0, 2);
        assert_eq!(m.completed, [(x, mv.epoch)]);
        assert_eq!(m.shards[2][&x], [(1, 0), (1, 1), (2, 0)]);
        assert!(m.shards[0].is_empty());
    }

    #[test]
    fn duplicate_and_unknown_markers_are_counted_not_obeyed() {
        let t = SteeringTable::new(Workers::new(2).unwrap());
        let mut a = Migrator::<Msg>::new(WorkerId(0), t.snapshot());
        let mv = t.begin_move(AppId(0), WorkerId(1)).unwrap();
        a.observe(t.snapshot());
        // Own marker given; a second one from itself is a duplicate.
        a.on_marker(WorkerId(0), AppId(0), mv.epoch, WorkerId(1));
        assert_eq!(a.stats().stale, 1);
        a.on_marker(WorkerId(7), AppId(0), mv.epoch, WorkerId(1));
        assert_eq!(a.stats().stale, 2);
        assert!(a.poll_action().is_none());
        a.on_marker(WorkerId(1), AppId(0), mv.epoch, WorkerId(1));
        assert_eq!(
            a.poll_action(),
            Some(Action::Handover {
                to: WorkerId(1),
                app: AppId(0),
                epoch: mv.epoch
            })
        );
        a.on_marker(WorkerId(1), AppId(0), mv.epoch, WorkerId(1));
        assert_eq!(a.stats().stale, 3);
        assert!(a.poll_action().is_none());
    }
}
