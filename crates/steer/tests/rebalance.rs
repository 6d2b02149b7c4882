//! Hot-subscriber rebalancing on the real runtime: three workers read a skewed stream (two hot
//! ids that both hash to worker 0 carry half of it), hand each message to its owner over the
//! mesh, and the policy moves a hot id while the stream flows. Every id's state checks each
//! sender's sequence numbers as it goes and travels with the id, so at the end it tells
//! whether anything was lost, duplicated or reordered. All assertions are on counts.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use steer::policy::{imbalance, Decision, Policy, PolicyConfig, Reason};
use steer::steered::{
    IntervalReport, LoadBoard, Rebalancer, Shard, SteeredOptions, SteeredStats, SteeredWorker,
};
use steer::table::{AppId, SteeringTable};
use steer::{Runtime, RuntimeOptions, WorkerId, Workers};

const WORKERS: u16 = 3;
const TOTAL: u64 = 201_000;
const PER_WORKER: u64 = TOTAL / WORKERS as u64;
/// Each reader sends this much before it waits for the policy to have begun a move (bounded),
/// so that the move happens while most of the stream is still to come.
const PHASE1: u64 = PER_WORKER * 2 / 5;
/// Both default to worker 0 (id % 3 == 0).
const HOT1: AppId = AppId(300);
const HOT2: AppId = AppId(600);

#[derive(Debug, Clone, Copy)]
struct Msg {
    src: u16,
    seq: u32,
}

/// One id's state: how many messages it has seen and, per sender, the next sequence number
/// it expects.
#[derive(Debug, Clone, Default)]
struct KeyState {
    count: u64,
    next: [u32; WORKERS as usize],
}

#[derive(Debug, Default)]
struct Keys {
    state: HashMap<AppId, KeyState>,
    /// Messages that were not the next one expected from their sender, and states imported
    /// over an existing one.
    violations: u64,
}

impl Shard for Keys {
    type Msg = Msg;
    type State = Option<KeyState>;

    fn handle(&mut self, app: AppId, msg: Msg) {
        let st = self.state.entry(app).or_default();
        let next = &mut st.next[usize::from(msg.src)];
        if msg.seq != *next {
            self.violations += 1;
        }
        *next = msg.seq + 1;
        st.count += 1;
    }

    fn export(&mut self, app: AppId) -> Option<KeyState> {
        self.state.remove(&app)
    }

    fn import(&mut self, app: AppId, state: Option<KeyState>) {
        if let Some(s) = state {
            if self.state.insert(app, s).is_some() {
                self.violations += 1;
            }
        }
    }
}

/// What a worker hands back at the end.
struct Outcome {
    id: WorkerId,
    keys: Keys,
    /// Per id, how many messages this worker generated as a reader.
    generated: HashMap<AppId, u32>,
    stats: SteeredStats,
    backlog: usize,
}

fn pick(rng: &mut StdRng) -> AppId {
    match rng.gen_range(0..100) {
        0..=29 => HOT1,
        30..=49 => HOT2,
        _ => AppId(1000 + rng.gen_range(0..999)),
    }
}

/// What the test and every worker share.
#[derive(Clone)]
struct Shared {
    table: Arc<SteeringTable>,
    board: Arc<LoadBoard>,
    /// Messages handled, all workers.
    handled: Arc<AtomicU64>,
    /// The rebalancer makes no more moves: workers may end.
    done: Arc<AtomicBool>,
    outcomes: Arc<Mutex<Vec<Outcome>>>,
}

#[test]
fn rebalancing_moves_a_hot_app_id_without_loss_or_reordering() {
    let workers = Workers::new(WORKERS).unwrap();
    let shared = Shared {
        table: Arc::new(SteeringTable::new(workers)),
        board: Arc::new(LoadBoard::new(workers, 16)),
        handled: Arc::new(AtomicU64::new(0)),
        done: Arc::new(AtomicBool::new(false)),
        outcomes: Arc::new(Mutex::new(Vec::new())),
    };
    let opts = RuntimeOptions {
        pin: false,
        name: "rebal".to_owned(),
        // Small queues, so that some sends wait in the outbox.
        queue_capacity: 64,
        stop_grace: Duration::from_secs(5),
    };
    let rt = {
        let shared = shared.clone();
        Runtime::start(workers, opts, move |mut ctx| {
            let Shared {
                table,
                board,
                handled,
                done,
                outcomes,
            } = shared.clone();
            async move {
                let me = ctx.id;
                let mut sw = SteeredWorker::new(
                    me,
                    Arc::clone(&table),
                    board,
                    SteeredOptions {
                        publish_every: 256,
                        top_k: 16,
                    },
                );
                let mut keys = Keys::default();
                let mut rng = StdRng::seed_from_u64(0x5eed + u64::from(me.0));
                let mut generated: HashMap<AppId, u32> = HashMap::new();
                let mut produced = 0u64;
                let mut counted = 0u64;
                // A bound on the wait at the gate, not a measurement.
                let gate_deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let gate_open = produced < PHASE1
                        || table.snapshot().version() > 0
                        || Instant::now() > gate_deadline;
                    let mut sent = 0;
                    while gate_open && produced < PER_WORKER && sent < 64 {
                        let app = pick(&mut rng);
                        let seq = generated.entry(app).or_insert(0);
                        let msg = Msg {
                            src: me.0,
                            seq: *seq,
                        };
                        *seq += 1;
                        produced += 1;
                        sent += 1;
                        sw.submit(&mut ctx.mesh, &mut keys, app, msg);
                    }
                    let read = sw.poll(&mut ctx.mesh, &mut keys);
                    let h = sw.stats().handled;
                    handled.fetch_add(h - counted, Ordering::Relaxed);
                    counted = h;
                    if done.load(Ordering::Acquire)
                        && handled.load(Ordering::Relaxed) == TOTAL
                        && table.snapshot().moves().is_empty()
                        && sw.backlog() == 0
                    {
                        break;
                    }
                    if sent == 0 && read == 0 {
                        tokio::select! {
                            () = ctx.mesh.recv_ready() => {}
                            () = tokio::time::sleep(Duration::from_millis(1)) => {}
                            () = ctx.stop.stopped() => break,
                        }
                    }
                }
                sw.post();
                outcomes.lock().unwrap().push(Outcome {
                    id: me,
                    keys,
                    generated,
                    stats: sw.stats(),
                    backlog: sw.backlog(),
                });
            }
        })
        .unwrap()
    };
    let Shared {
        table,
        board,
        handled,
        done,
        outcomes,
    } = shared;

    let mut reb = Rebalancer::new(
        Arc::clone(&table),
        Arc::clone(&board),
        Policy::new(PolicyConfig {
            threshold: 1.3,
            sustain: 1,
            max_moves: 1,
            cooldown: 2,
            min_key_share: 0.05,
            min_gain: 0.1,
            min_interval_total: 3000,
            return_below: None,
        }),
    );
    let mut reports: Vec<IntervalReport> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while handled.load(Ordering::Relaxed) < TOTAL && Instant::now() < deadline {
        if board.pending() >= 3000 {
            reports.push(reb.step());
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // No new moves from here on; workers end once the last one has finished.
    done.store(true, Ordering::Release);
    let finish_deadline = Instant::now() + Duration::from_secs(60);
    while outcomes.lock().unwrap().len() < usize::from(WORKERS) && Instant::now() < finish_deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    rt.stop().unwrap();

    let mut outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    outcomes.sort_by_key(|o| o.id);
    assert_eq!(
        outcomes.len(),
        usize::from(WORKERS),
        "a worker did not finish"
    );
    let moves: Vec<Decision> = reports.iter().flat_map(|r| r.moves.clone()).collect();
    for r in &reports {
        eprintln!(
            "interval offered={:?} imbalance={:.2?} moves={:?} refused={:?}",
            r.offered, r.imbalance, r.moves, r.refused
        );
    }
    for o in &outcomes {
        eprintln!("{} {:?} backlog={}", o.id, o.stats, o.backlog);
    }

    // The policy saw the skew and moved a hot id (and only hot ids) off worker 0.
    assert!(
        reports[0].imbalance.unwrap() > 1.3,
        "the stream starts skewed"
    );
    assert!(!moves.is_empty(), "no move was made");
    assert!(moves
        .iter()
        .all(|d| [HOT1, HOT2].contains(&d.app) && d.reason == Reason::Hot));
    assert_eq!(moves[0].from, WorkerId(0));
    let snap = table.snapshot();
    assert!(snap.moves().is_empty(), "a move did not finish");

    // Each move went through the protocol: one hand-over sent and taken per move.
    let sum = |f: fn(&SteeredStats) -> u64| outcomes.iter().map(|o| f(&o.stats)).sum::<u64>();
    assert_eq!(sum(|s| s.migration.handovers_sent), moves.len() as u64);
    assert_eq!(sum(|s| s.migration.handovers_received), moves.len() as u64);
    // The move happened while the stream flowed (the readers wait at PHASE1 until it
    // begins), so the new owner had to hold messages back until the hand-over.
    assert!(
        sum(|s| s.migration.held) > 0,
        "nothing was held: the move ran idle"
    );
    assert_eq!(sum(|s| s.migration.misrouted), 0);
    assert_eq!(sum(|s| s.migration.stale), 0);
    assert_eq!(sum(|s| s.dropped), 0);
    assert_eq!(sum(|s| s.finish_errors), 0);
    assert_eq!(sum(|s| s.handled), TOTAL);

    // No loss, no duplicate, per-sender order: each id's state is at exactly one worker, its
    // owner in the table, with every sender's sequence complete.
    for o in &outcomes {
        assert_eq!(o.keys.violations, 0, "{}: out-of-order or duplicate", o.id);
        assert_eq!(o.backlog, 0);
    }
    let mut per_key: HashMap<AppId, [u32; WORKERS as usize]> = HashMap::new();
    for o in &outcomes {
        for (&app, &n) in &o.generated {
            per_key.entry(app).or_default()[o.id.index()] = n;
        }
    }
    assert_eq!(
        per_key
            .values()
            .flatten()
            .map(|&n| u64::from(n))
            .sum::<u64>(),
        TOTAL
    );
    for (&app, want) in &per_key {
        let holders: Vec<WorkerId> = outcomes
            .iter()
            .filter(|o| o.keys.state.contains_key(&app))
            .map(|o| o.id)
            .collect();
        assert_eq!(holders, [snap.route(app)], "{app}");
        let st = &outcomes[snap.route(app).index()].keys.state[&app];
        assert_eq!(&st.next, want, "{app}: a sender's sequence is incomplete");
        assert_eq!(st.count, want.iter().map(|&n| u64::from(n)).sum::<u64>());
    }

    // Every moved id ended where its last move sent it.
    for d in &moves {
        let last = moves.iter().rev().find(|m| m.app == d.app).unwrap();
        assert_eq!(snap.route(d.app), last.to, "{}", d.app);
    }

    // The placement is more balanced than the default one, for this very stream.
    let mut before = [0u64; WORKERS as usize];
    let mut after = [0u64; WORKERS as usize];
    for (&app, n) in &per_key {
        let n: u64 = n.iter().map(|&x| u64::from(x)).sum();
        before[snap.default_route(app).index()] += n;
        after[snap.route(app).index()] += n;
    }
    let (b, a) = (imbalance(&before).unwrap(), imbalance(&after).unwrap());
    eprintln!("placement load before {before:?} ({b:.2}), after {after:?} ({a:.2})");
    assert!(b > 1.8, "the stream is skewed: {b}");
    assert!(a < b - 0.4, "rebalanced {a} vs {b}");
}
