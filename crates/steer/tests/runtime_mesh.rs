//! The runtime and the mesh together, on real threads: every message arrives once, at the
//! right worker, in per-sender order; back-pressure loses nothing; idle workers wake; stop
//! and panics end the runtime.
#![allow(clippy::unwrap_used)]

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use steer::mesh::{MeshCounters, SendError};
use steer::runtime::{Pinning, RuntimeError};
use steer::{Runtime, RuntimeOptions, WorkerCtx, WorkerId, Workers};

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
    let rt = Runtime::start(workers, opts("bp", 16), move |mut ctx| {
        let full_out = Arc::clone(&full_out);
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
                                msg = back;
                                tokio::task::yield_now().await;
                            }
                            Err(e) => panic!("unexpected send error {e}"),
                        }
                    }
                }
            } else {
                let mut expect = 0u32;
                while expect < COUNT {
                    ready(&ctx.mesh).await;
                    // Slow: a blocking pause per drain keeps the queue full on the other
                    // side.
                    std::thread::sleep(Duration::from_micros(200));
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
    assert!(c1.max_depth <= 16);
}

#[test]
fn idle_worker_wakes_promptly_when_a_message_arrives() {
    let workers = Workers::new(2).unwrap();
    let sent_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let latency: Arc<Mutex<Option<Duration>>> = Arc::new(Mutex::new(None));
    let (s_out, l_out) = (Arc::clone(&sent_at), Arc::clone(&latency));
    let rt = Runtime::start(workers, opts("wake", 64), move |mut ctx| {
        let (sent_at, latency) = (Arc::clone(&s_out), Arc::clone(&l_out));
        async move {
            if ctx.id == WorkerId(0) {
                // Give worker 1 time to park.
                tokio::time::sleep(Duration::from_millis(100)).await;
                *sent_at.lock().unwrap() = Some(Instant::now());
                let m = Tagged {
                    from: ctx.id,
                    to: WorkerId(1),
                    seq: 0,
                };
                assert!(ctx.mesh.send(WorkerId(1), m).is_ok());
            } else {
                tokio::time::timeout(Duration::from_secs(10), ctx.mesh.recv_ready())
                    .await
                    .expect("never woken");
                let woke = Instant::now();
                let sent = sent_at.lock().unwrap().expect("woken before the send");
                *latency.lock().unwrap() = Some(woke.duration_since(sent));
                assert_eq!(ctx.mesh.drain(|_, _| {}), 1);
            }
        }
    })
    .unwrap();
    let stats = Arc::clone(rt.stats());
    rt.join().unwrap();
    let latency = latency.lock().unwrap().unwrap();
    assert!(latency < Duration::from_secs(1), "woke after {latency:?}");
    // Worker 1 was parked, so the sender rang exactly once.
    assert_eq!(stats.worker(WorkerId(0)).unwrap().wakeups_sent, 1);
}

#[test]
fn stop_ends_every_worker() {
    let workers = Workers::new(4).unwrap();
    let ended = Arc::new(AtomicUsize::new(0));
    let out = Arc::clone(&ended);
    let rt = Runtime::start(workers, opts("stop", 64), move |mut ctx| {
        let out = Arc::clone(&out);
        async move {
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
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        ended.load(Ordering::SeqCst),
        0,
        "a worker ended before stop"
    );
    rt.stop().unwrap();
    assert_eq!(ended.load(Ordering::SeqCst), 4);
}

#[test]
fn stop_drops_a_worker_that_ignores_it_after_the_grace() {
    let workers = Workers::new(2).unwrap();
    let mut o = opts("grace", 8);
    o.stop_grace = Duration::from_millis(50);
    let rt = Runtime::start(workers, o, |_ctx: WorkerCtx<()>| {
        std::future::pending::<()>()
    })
    .unwrap();
    rt.stop().unwrap();
}

#[test]
fn a_panicking_worker_stops_the_others_and_comes_back_from_join() {
    let workers = Workers::new(3).unwrap();
    let rt = Runtime::start(workers, opts("panic", 8), |ctx: WorkerCtx<()>| async move {
        if ctx.id == WorkerId(2) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            panic!("boom in worker two");
        }
        // The healthy workers wait for the stop that the panic raises.
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
