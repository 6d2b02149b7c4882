//! The runtime and the mesh together, on real threads: every message arrives once, at the
//! right worker, in per-sender order; back-pressure loses nothing; a parked worker is woken
//! once; stop gives work in flight its grace and abandons it after; panics end the runtime.
//! Orderings come from channels and hand-polled futures, never from sleeping.
#![allow(clippy::unwrap_used)]

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use steer::mesh::{Mesh, MeshCounters, SendError};
use steer::runtime::{Pinning, RuntimeError};
use steer::{Runtime, RuntimeOptions, WorkerCtx, WorkerId, Workers};
use tokio::sync::oneshot;

/// A tagged message: who sent it, to whom, and its place in that pair's sequence.
#[derive(Debug, Clone, Copy)]
struct Tagged {
    from: WorkerId,
    to: WorkerId,
    seq: u32,
}

/// Waits for a message, failing the test (instead of hanging it) if a wake-up is lost.
async fn ready(mesh: &steer::MeshEnd<Tagged>) {
    tokio::time::timeout(Duration::from_secs(30), mesh.recv_ready())
        .await
        .expect("no wake-up within 30 s: a message or a wake-up was lost");
}

fn opts(name: &str, capacity: usize) -> RuntimeOptions {
    RuntimeOptions {
        // Tests share a small machine with other builds: do not pin them.
        pin: false,
        name: name.to_owned(),
        queue_capacity: capacity,
        stop_grace: Duration::from_secs(5),
    }
}

/// Each worker sends `per_pair` messages to every other worker while reading its own, and
/// checks each message as it arrives. Returns per worker: messages received, sends refused.
async fn all_to_all(mut ctx: WorkerCtx<Tagged>, per_pair: u32) -> (u64, u64) {
    let n = usize::from(ctx.workers.count());
    let me = ctx.id;
    let others: Vec<WorkerId> = ctx.workers.iter().filter(|&w| w != me).collect();
    let mut next = vec![0u32; n];
    let mut expect = vec![0u32; n];
    let want = u64::from(per_pair) * (n as u64 - 1);
    let mut received = 0u64;
    let mut refused = 0u64;
    loop {
        let mut progressed = false;
        for &to in &others {
            // A burst per target, so that queues do fill up and the drain sees depth.
            for _ in 0..64 {
                let seq = next[to.index()];
                if seq == per_pair {
                    break;
                }
                match ctx.mesh.send(to, Tagged { from: me, to, seq }) {
                    Ok(()) => {
                        next[to.index()] = seq + 1;
                        progressed = true;
                    }
                    Err(SendError::Full(m)) => {
                        // Given back intact; it is resent on a later round.
                        assert_eq!(m.seq, seq);
                        refused += 1;
                        break;
                    }
                    Err(e) => panic!("unexpected send error {e}"),
                }
            }
        }
        let got = ctx.mesh.drain(|from, m| {
            assert_eq!(m.to, me, "message for {} delivered to {me}", m.to);
            assert_eq!(m.from, from, "sender tag and queue disagree");
            assert_eq!(m.seq, expect[from.index()], "out of order from {from}");
            expect[from.index()] += 1;
        });
        received += got as u64;
        progressed |= got > 0;
        let all_sent = others.iter().all(|w| next[w.index()] == per_pair);
        if all_sent && received == want {
            break;
        }
        if !progressed {
            if all_sent {
                ready(&ctx.mesh).await;
            } else {
                // Blocked on full queues with nothing to read: park briefly rather than
                // spin, but wake early if a message comes.
                let _ = tokio::time::timeout(Duration::from_millis(1), ctx.mesh.recv_ready()).await;
            }
        }
    }
    for w in &others {
        assert_eq!(expect[w.index()], per_pair, "missing messages from {w}");
    }
    assert!(!ctx.mesh.has_ready(), "a message beyond the expected ones");
    (received, refused)
}

fn run_all_to_all(n: u16, per_pair: u32, capacity: usize) {
    let workers = Workers::new(n).unwrap();
    let results = Arc::new(Mutex::new(vec![None; usize::from(n)]));
    let out = Arc::clone(&results);
    let rt = Runtime::start(workers, opts("a2a", capacity), move |ctx| {
        let out = Arc::clone(&out);
        async move {
            let id = ctx.id;
            let r = all_to_all(ctx, per_pair).await;
            out.lock().unwrap()[id.index()] = Some(r);
        }
    })
    .unwrap();
    let stats = Arc::clone(rt.stats());
    rt.join().unwrap();

    let per_worker = u64::from(per_pair) * u64::from(n - 1);
    let results = results.lock().unwrap();
    for w in workers.iter() {
        let (received, refused) = results[w.index()].unwrap();
        let c: MeshCounters = stats.worker(w).unwrap();
        assert_eq!(received, per_worker, "{w} received");
        assert_eq!(c.received, per_worker, "{w} counter received");
        assert_eq!(c.sent, per_worker, "{w} counter sent");
        assert_eq!(c.full, refused, "{w} counter full");
        assert!(c.max_depth <= capacity as u64, "{w} depth beyond capacity");
    }
    let total = stats.total();
    assert_eq!(total.sent, total.received);
    assert_eq!(total.sent, per_worker * u64::from(n));
}

#[test]
fn two_workers_exchange_100k_each_exactly_once_in_order() {
    run_all_to_all(2, 100_000, 1024);
}

#[test]
fn four_workers_exchange_100k_each_exactly_once_in_order() {
    run_all_to_all(4, 100_000, 1024);
}

#[test]
fn back_pressure_with_a_slow_receiver_loses_nothing() {
    const COUNT: u32 = 5_000;
    let workers = Workers::new(2).unwrap();
    let full_seen = Arc::new(AtomicUsize::new(0));
    let full_out = Arc::clone(&full_seen);
    // The receiver reads nothing until the sender has been refused once: the queue fills
    // for certain, without relying on the receiver being slow enough.
    let (filled_tx, filled_rx) = oneshot::channel::<()>();
    let filled_tx = Arc::new(Mutex::new(Some(filled_tx)));
    let filled_rx = Arc::new(Mutex::new(Some(filled_rx)));
    let rt = Runtime::start(workers, opts("bp", 16), move |mut ctx| {
        let full_out = Arc::clone(&full_out);
        let mut filled_tx = (ctx.id == WorkerId(0)).then(|| filled_tx.lock().unwrap().take());
        let filled_rx = (ctx.id == WorkerId(1)).then(|| filled_rx.lock().unwrap().take());
        async move {
            if ctx.id == WorkerId(0) {
                let to = WorkerId(1);
                for seq in 0..COUNT {
                    let mut msg = Tagged {
                        from: ctx.id,
                        to,
                        seq,
                    };
                    loop {
                        match ctx.mesh.send(to, msg) {
                            Ok(()) => break,
                            Err(SendError::Full(back)) => {
                                full_out.fetch_add(1, Ordering::Relaxed);
                                if let Some(tx) = filled_tx.take().flatten() {
                                    tx.send(()).unwrap();
                                }
                                msg = back;
                                tokio::task::yield_now().await;
                            }
                            Err(e) => panic!("unexpected send error {e}"),
                        }
                    }
                }
            } else {
                filled_rx.flatten().unwrap().await.unwrap();
                let mut expect = 0u32;
                while expect < COUNT {
                    ready(&ctx.mesh).await;
                    ctx.mesh.drain(|_, m| {
                        assert_eq!(m.seq, expect);
                        expect += 1;
                    });
                }
            }
        }
    })
    .unwrap();
    let stats = Arc::clone(rt.stats());
    rt.join().unwrap();
    let c0 = stats.worker(WorkerId(0)).unwrap();
    let c1 = stats.worker(WorkerId(1)).unwrap();
    assert!(
        full_seen.load(Ordering::Relaxed) > 0,
        "the queue never filled"
    );
    assert_eq!(c0.full as usize, full_seen.load(Ordering::Relaxed));
    assert_eq!(c0.sent, u64::from(COUNT));
    assert_eq!(c1.received, u64::from(COUNT));
    // The first drain found the queue full.
    assert_eq!(c1.max_depth, 16);
}

#[test]
fn a_parked_worker_is_woken_exactly_once_by_a_message() {
    let workers = Workers::new(2).unwrap();
    // Worker 1 says when it is parked; only then does worker 0 send.
    let (parked_tx, parked_rx) = oneshot::channel::<()>();
    let parked_tx = Arc::new(Mutex::new(Some(parked_tx)));
    let parked_rx = Arc::new(Mutex::new(Some(parked_rx)));
    let rt = Runtime::start(
        workers,
        opts("wake", 64),
        move |mut ctx: WorkerCtx<Tagged>| {
            let parked_tx = (ctx.id == WorkerId(1)).then(|| parked_tx.lock().unwrap().take());
            let parked_rx = (ctx.id == WorkerId(0)).then(|| parked_rx.lock().unwrap().take());
            async move {
                if let Some(parked) = parked_rx.flatten() {
                    parked.await.expect("worker 1 ended without parking");
                    let m = Tagged {
                        from: ctx.id,
                        to: WorkerId(1),
                        seq: 0,
                    };
                    assert!(ctx.mesh.send(WorkerId(1), m).is_ok());
                } else if let Some(parked) = parked_tx.flatten() {
                    {
                        let mut ready = pin!(ctx.mesh.recv_ready());
                        // Nothing is sent before the signal below, so this first poll finds no
                        // message and parks: the idle flag is up when worker 0 sends.
                        let first = poll_fn(|cx| Poll::Ready(ready.as_mut().poll(cx))).await;
                        assert!(first.is_pending(), "a message before any was sent");
                        parked.send(()).unwrap();
                        tokio::time::timeout(Duration::from_secs(30), ready)
                            .await
                            .expect("never woken: the wake-up was lost");
                    }
                    assert_eq!(ctx.mesh.drain(|_, m| assert_eq!(m.seq, 0)), 1);
                }
            }
        },
    )
    .unwrap();
    let stats = Arc::clone(rt.stats());
    rt.join().unwrap();
    // Worker 1 was parked, so the sender rang exactly once, and the ring found the message.
    let (c0, c1) = (
        stats.worker(WorkerId(0)).unwrap(),
        stats.worker(WorkerId(1)).unwrap(),
    );
    assert_eq!(c0.wakeups_sent, 1);
    assert_eq!((c1.wakeups_received, c1.wakeups_empty), (1, 0));
    assert_eq!(c1.received, 1);
}

/// The same accounting with no threads and no runtime: the receiver's `recv_ready` future is
/// polled by hand, so "parked" and "busy" are states the test sets, not timings.
#[test]
fn wake_ups_are_sent_only_to_a_parked_receiver_and_counted() {
    let mesh = Mesh::<u32>::new(Workers::new(2).unwrap(), 8);
    let stats = mesh.stats();
    let mut ends = mesh.into_ends();
    let mut e1 = ends.pop().unwrap();
    let mut e0 = ends.pop().unwrap();
    let woken = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);
    let c = |w: u16| stats.worker(WorkerId(w)).unwrap();

    // Busy (not waiting): a send rings nobody.
    e0.send(WorkerId(1), 1).unwrap();
    assert_eq!(c(0).wakeups_sent, 0);
    // A waiter with a message already there returns at once, without parking.
    assert!(pin!(e1.recv_ready()).poll(&mut cx).is_ready());
    assert_eq!(e1.drain(|_, _| {}), 1);

    // Parked: the first send rings once, the second finds the bell already answered.
    {
        let mut ready = pin!(e1.recv_ready());
        assert!(ready.as_mut().poll(&mut cx).is_pending());
        e0.send(WorkerId(1), 2).unwrap();
        e0.send(WorkerId(1), 3).unwrap();
        assert_eq!(woken.count(), 1);
        assert_eq!(c(0).wakeups_sent, 1);
        assert!(ready.as_mut().poll(&mut cx).is_ready());
    }
    assert_eq!((c(1).wakeups_received, c(1).wakeups_empty), (1, 0));
    assert_eq!(e1.drain(|_, _| {}), 2);

    // A waiter that gave up (its future dropped, e.g. the other branch of a select won) is
    // not rung.
    {
        let mut ready = pin!(e1.recv_ready());
        assert!(ready.as_mut().poll(&mut cx).is_pending());
    }
    e0.send(WorkerId(1), 4).unwrap();
    assert_eq!(c(0).wakeups_sent, 1);
    assert_eq!(woken.count(), 1);
}

/// A waker that counts its wake-ups.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl CountingWaker {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn stop_ends_every_worker() {
    let workers = Workers::new(4).unwrap();
    let ended = Arc::new(AtomicUsize::new(0));
    let out = Arc::clone(&ended);
    let (running_tx, running) = mpsc::channel::<WorkerId>();
    let rt = Runtime::start(workers, opts("stop", 64), move |mut ctx| {
        let out = Arc::clone(&out);
        let running = running_tx.clone();
        async move {
            running.send(ctx.id).unwrap();
            loop {
                tokio::select! {
                    () = ctx.stop.stopped() => break,
                    () = ctx.mesh.recv_ready() => {}
                }
                ctx.mesh.drain(|_, _: ()| {});
            }
            out.fetch_add(1, Ordering::SeqCst);
        }
    })
    .unwrap();
    // Every worker is inside its loop before the stop, and none has left it.
    for _ in 0..4 {
        running.recv_timeout(WAIT).expect("a worker never started");
    }
    assert_eq!(
        ended.load(Ordering::SeqCst),
        0,
        "a worker ended before stop"
    );
    bounded(move || rt.stop()).unwrap();
    // Each returned by itself (the count is taken after the loop): none was dropped.
    assert_eq!(ended.load(Ordering::SeqCst), 4);
}

/// What a worker did once the stop token was raised, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    SawStop,
    /// A step of its work completed after the stop.
    Progress,
    /// Its work ran to the end.
    Finished,
    /// Its future was dropped before the end.
    Dropped,
}

/// Reports [`Life::Dropped`] when dropped while armed: the runtime abandoned the worker's
/// future.
struct DropWitness {
    events: mpsc::Sender<Life>,
    armed: bool,
}

impl Drop for DropWitness {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.events.send(Life::Dropped);
        }
    }
}

/// How long the test waits for a thread before calling it hung (a bound on a wait, never
/// an assertion about speed).
const WAIT: Duration = Duration::from_secs(60);

/// Runs `f` (a stop or join) on its own thread and fails the test instead of hanging if it
/// does not return.
fn bounded(
    f: impl FnOnce() -> Result<(), RuntimeError> + Send + 'static,
) -> Result<(), RuntimeError> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(WAIT).expect("the runtime never ended")
}

#[test]
fn stop_lets_work_in_flight_finish_within_the_grace() {
    let workers = Workers::single();
    let mut o = opts("grace-finish", 8);
    // Longer than any test run: the worker must end by itself.
    o.stop_grace = Duration::from_secs(3600);
    let (events_tx, events) = mpsc::channel();
    let (go_tx, go_rx) = oneshot::channel::<()>();
    let go_rx = Arc::new(Mutex::new(Some(go_rx)));
    let rt = Runtime::start(workers, o, move |ctx: WorkerCtx<()>| {
        let events = events_tx.clone();
        let go = go_rx.lock().unwrap().take().unwrap();
        async move {
            let mut witness = DropWitness {
                events: events.clone(),
                armed: true,
            };
            ctx.stop.stopped().await;
            events.send(Life::SawStop).unwrap();
            // The work in flight at the stop: it ends only when the test says so, after
            // the token is up.
            let _ = go.await;
            events.send(Life::Finished).unwrap();
            witness.armed = false;
        }
    })
    .unwrap();
    rt.stop_token().trigger();
    assert_eq!(events.recv_timeout(WAIT).unwrap(), Life::SawStop);
    // Dropped already (the grace ignored), the worker no longer holds the receiver.
    let _ = go_tx.send(());
    bounded(move || rt.join()).unwrap();
    assert_eq!(events.try_iter().collect::<Vec<_>>(), [Life::Finished]);
}

#[test]
fn stop_abandons_a_worker_still_busy_when_the_grace_ends() {
    const GRACE: Duration = Duration::from_millis(200);
    let workers = Workers::single();
    let mut o = opts("grace-drop", 8);
    o.stop_grace = GRACE;
    let (events_tx, events) = mpsc::channel();
    let rt = Runtime::start(workers, o, move |ctx: WorkerCtx<()>| {
        let events = events_tx.clone();
        async move {
            let _witness = DropWitness {
                events: events.clone(),
                armed: true,
            };
            ctx.stop.stopped().await;
            events.send(Life::SawStop).unwrap();
            // Half the grace in: this step is due before the runtime's own grace timer
            // (started in the same poll, after this one) and is polled first when both are
            // due, so it completes whatever the machine's load.
            tokio::time::sleep(GRACE / 2).await;
            events.send(Life::Progress).unwrap();
            // Then the worker never finishes.
            std::future::pending::<()>().await;
        }
    })
    .unwrap();
    bounded(move || rt.stop()).unwrap();
    assert_eq!(
        events.try_iter().collect::<Vec<_>>(),
        [Life::SawStop, Life::Progress, Life::Dropped]
    );
}

#[test]
fn a_panicking_worker_stops_the_others_and_comes_back_from_join() {
    let workers = Workers::new(3).unwrap();
    let rt = Runtime::start(workers, opts("panic", 8), |ctx: WorkerCtx<()>| async move {
        if ctx.id == WorkerId(2) {
            panic!("boom in worker two");
        }
        // The healthy workers wait for the stop that the panic raises (at once if it is
        // already up).
        ctx.stop.stopped().await;
    })
    .unwrap();
    match rt.join() {
        Err(RuntimeError::WorkerPanicked { worker, message }) => {
            assert_eq!(worker, WorkerId(2));
            assert!(message.contains("boom in worker two"), "{message}");
        }
        other => panic!("expected a panic error, got {other:?}"),
    }
}

#[test]
fn threads_are_named_and_the_report_says_whether_they_were_pinned() {
    let workers = Workers::new(2).unwrap();
    let names = Arc::new(Mutex::new(Vec::new()));
    let out = Arc::clone(&names);
    let rt = Runtime::start(workers, opts("named", 8), move |_ctx: WorkerCtx<()>| {
        let out = Arc::clone(&out);
        async move {
            let name = std::thread::current().name().map(str::to_owned);
            out.lock().unwrap().push(name);
        }
    })
    .unwrap();
    let report = rt.report().clone();
    rt.join().unwrap();
    let mut names = names.lock().unwrap().clone();
    names.sort();
    assert_eq!(
        names,
        vec![Some("named-w0".to_owned()), Some("named-w1".to_owned())]
    );
    assert_eq!(report.workers.len(), 2);
    assert!(report
        .workers
        .iter()
        .all(|w| w.pinning == Pinning::NotRequested));
    assert!(!report.all_pinned());

    // Asked to pin, each worker is pinned or says why not.
    let mut o = opts("pinned", 8);
    o.pin = true;
    let rt = Runtime::start(workers, o, |_ctx: WorkerCtx<()>| async {}).unwrap();
    let report = rt.report().clone();
    rt.join().unwrap();
    for w in &report.workers {
        match (w.pinning, report.cores) {
            (Pinning::Pinned(_) | Pinning::Refused(_), Some(_)) => {}
            (Pinning::NoCoreList, None) => {}
            other => panic!("inconsistent report {other:?}"),
        }
    }
}

#[test]
fn setup_may_build_non_send_state_and_spawn_local_tasks() {
    let workers = Workers::new(2).unwrap();
    let total = Arc::new(AtomicUsize::new(0));
    let out = Arc::clone(&total);
    let rt = Runtime::start(workers, opts("local", 8), move |ctx: WorkerCtx<()>| {
        let out = Arc::clone(&out);
        // A shard's state: `Rc<RefCell<..>>` is not `Send`, and need not be.
        let shard = Rc::new(RefCell::new(0usize));
        let child = {
            let shard = Rc::clone(&shard);
            tokio::task::spawn_local(async move {
                *shard.borrow_mut() += 1;
            })
        };
        async move {
            child.await.unwrap();
            *shard.borrow_mut() += usize::from(ctx.id.0);
            out.fetch_add(*shard.borrow(), Ordering::SeqCst);
        }
    })
    .unwrap();
    rt.join().unwrap();
    // 1 + 0 from worker 0, 1 + 1 from worker 1.
    assert_eq!(total.load(Ordering::SeqCst), 3);
}
