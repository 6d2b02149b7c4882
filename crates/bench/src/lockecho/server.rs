//! The echo server of `bench echo`: N workers on the steer runtime, each reading its own
//! `SO_REUSEPORT` socket, doing the request's work and echoing the request back.
//!
//! The two designs run this same code and differ only where the state lives and how a
//! request reaches a worker:
//!
//! - sharded: the `sk_reuseport` program delivers each datagram to the socket of the worker
//!   that owns its key (`key % workers`), and that worker's records are its own map, touched
//!   without a lock. Without the program (no privilege), the kernel's hash spreads the
//!   datagrams and a worker hands a request it does not own one hop to its owner over the
//!   mesh, counted as `handed_off`.
//! - locked (the baseline of the AppSteer echo experiment, reference 001 §V, and the same kind of
//!   baseline steer5g's locked mode is): every record sits in one map behind one mutex and a
//!   request is served by whichever worker reads it. By default all workers wait on one shared
//!   socket (each registers the same socket in its own epoll, so a datagram wakes all of them and
//!   one wins: the "all workers woken" of a vanilla multi-threaded server). `--locked-rx hash`
//!   gives each worker its own `SO_REUSEPORT` socket instead and lets the kernel's 4-tuple hash
//!   spread the client's flows, which avoids the herd but balances only as well as a few flows
//!   hash.
//!
//! Every request does `outside` units of work, then takes the state (the lock, or nothing),
//! does `locked` units of work mixed into the key's record and lets go. The clocks around
//! the acquisition give the lock wait share that the USL projection uses as contention.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde::Serialize;
use steer::{Runtime, RuntimeOptions, WorkerCtx, WorkerId, Workers};
use steer_bpf::{GroupOptions, IdSpec, ReuseportGroup, Steering};

use super::work::{self, Variant};
use crate::BenchError;

/// Largest request the server reads; the client sends [`REQUEST_LEN`] bytes.
pub(crate) const REQUEST_MAX: usize = 64;
/// A request: the key (big-endian, where `IdSpec::FIRST_WORD` reads it), a sequence number,
/// and padding.
pub(crate) const REQUEST_LEN: usize = 16;
/// Datagrams a worker reads before it looks at its hand-off queues again.
const BATCH: usize = 32;

/// Where the state lives and how requests reach their worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    /// Per-worker state, requests delivered to the key's owner.
    Sharded,
    /// One shared map behind one mutex, requests on any worker.
    Locked,
}

/// How the locked design's workers receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LockedRx {
    /// One socket all workers wait on.
    Shared,
    /// One `SO_REUSEPORT` socket per worker, placed by the kernel's flow hash.
    Hash,
}

/// Units of work per request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub(crate) variant: Variant,
    /// Done before the state is taken.
    pub(crate) outside: u64,
    /// Done while the state is held, mixed into the key's record.
    pub(crate) locked: u64,
}

/// One key's record.
#[derive(Debug, Default, Clone, Copy)]
struct Record {
    value: u64,
    count: u64,
}

type Table = HashMap<u32, Record>;

/// The state one worker reaches: its own table, or the shared one.
enum State {
    Shard(Table),
    Locked(Arc<Mutex<Table>>),
}

impl State {
    /// Runs `f` on the table, returning its result and when the table was obtained (for a
    /// shard, at once).
    fn with<R>(&mut self, f: impl FnOnce(&mut Table) -> R) -> (R, Instant) {
        match self {
            State::Shard(t) => {
                let got = Instant::now();
                (f(t), got)
            }
            State::Locked(m) => {
                // A worker that panicked while holding the lock stopped the whole runtime; the
                // table itself is still whole (records are plain integers).
                let mut g = m.lock().unwrap_or_else(PoisonError::into_inner);
                let got = Instant::now();
                (f(&mut g), got)
            }
        }
    }
}

/// One worker's counters: written only by that worker, read by anyone.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct WorkerStats {
    served: AtomicU64,
    wait_ns: AtomicU64,
    held_ns: AtomicU64,
    service_ns: AtomicU64,
    handed_off: AtomicU64,
    handoff_dropped: AtomicU64,
    bad: AtomicU64,
    send_errors: AtomicU64,
    /// Thread CPU time, stored when the worker ends.
    cpu_ns: AtomicU64,
    /// Wake-ups that found nothing to read (another worker took the datagram).
    empty_wakeups: AtomicU64,
}

fn bump(c: &AtomicU64, by: u64) {
    c.store(
        c.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

/// Counters summed over workers.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct ServerTotals {
    /// Requests served (echoed).
    pub(crate) served: u64,
    /// Time spent waiting to obtain the state (the lock), summed over workers.
    pub(crate) wait_s: f64,
    /// Time the state was held.
    pub(crate) held_s: f64,
    /// Time from the start of a request's work to the release of the state.
    pub(crate) service_s: f64,
    /// Requests a worker did not own and handed to their owner (sharded without BPF).
    pub(crate) handed_off: u64,
    /// Hand-offs refused by a full queue (the client resends after a timeout).
    pub(crate) handoff_dropped: u64,
    /// Datagrams too short to carry a key.
    pub(crate) bad: u64,
    /// Echoes the kernel refused.
    pub(crate) send_errors: u64,
    /// CPU time of the worker threads over the whole run (warm-up included).
    pub(crate) cpu_s: f64,
    /// Wake-ups that found the socket already emptied by another worker.
    pub(crate) empty_wakeups: u64,
}

impl ServerTotals {
    /// Share of service time spent waiting for the state.
    pub(crate) fn wait_share(&self) -> f64 {
        if self.service_s > 0.0 {
            self.wait_s / self.service_s
        } else {
            0.0
        }
    }

    /// Worker CPU time per served request, in microseconds.
    pub(crate) fn cpu_us_per_request(&self) -> f64 {
        if self.served > 0 {
            self.cpu_s * 1e6 / self.served as f64
        } else {
            0.0
        }
    }

    /// Share of service time spent holding the state.
    pub(crate) fn held_share(&self) -> f64 {
        if self.service_s > 0.0 {
            self.held_s / self.service_s
        } else {
            0.0
        }
    }
}

/// A request handed from the worker that read it to the worker that owns its key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Handoff {
    from: SocketAddr,
    len: u8,
    buf: [u8; REQUEST_MAX],
}

/// How requests reached the workers.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Delivery {
    /// `bpf` (sk_reuseport steered by key), `handoff` (kernel hash, then one hop to the
    /// owner); for the locked design `shared-socket` (all workers on one socket) or
    /// `kernel-hash` (the kernel's flow hash), served where they land.
    pub(crate) path: &'static str,
    /// Why the program is not attached, when sharded runs without it.
    pub(crate) unsteered_reason: Option<String>,
    /// The program's counters at the end of the run, when attached.
    pub(crate) bpf_steered: Option<u64>,
    pub(crate) bpf_fallbacks: Option<u64>,
    /// Served requests per worker.
    pub(crate) per_worker: Vec<u64>,
    /// Whether every worker thread got pinned to its own core.
    pub(crate) pinned: bool,
}

/// A running server.
pub(crate) struct Server {
    rt: Runtime,
    addr: SocketAddr,
    stats: Arc<[WorkerStats]>,
    steering: Option<Steering>,
    unsteered: Option<String>,
    mode: Mode,
    locked_rx: LockedRx,
}

impl Server {
    /// Binds the group and starts `workers` pinned workers in `mode`.
    pub(crate) fn start(
        mode: Mode,
        workers: u16,
        plan: Plan,
        require_bpf: bool,
        locked_rx: LockedRx,
        pin: bool,
        fifo: Option<i32>,
    ) -> Result<Self, BenchError> {
        let set = Workers::new(workers).ok_or_else(|| {
            BenchError::Invalid(format!("--workers must be 1..={}", Workers::MAX))
        })?;
        let any = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
        let (sockets, steering, unsteered, addr) = match mode {
            Mode::Sharded => {
                let group = ReuseportGroup::bind_udp(
                    any,
                    workers,
                    IdSpec::FIRST_WORD,
                    &GroupOptions { require_bpf },
                )
                .map_err(|e| match e {
                    steer_bpf::Error::NotPermitted(_) => BenchError::Privilege(e.to_string()),
                    other => BenchError::Failed(format!("sharded group: {other}")),
                })?;
                let unsteered = group.unsteered_reason().map(ToString::to_string);
                let addr = group.local_addr();
                let (sockets, steering) = group.into_parts();
                (sockets, steering, unsteered, addr)
            }
            Mode::Locked if locked_rx == LockedRx::Hash => {
                let (sockets, addr) = bind_plain_group(any, workers)?;
                (sockets, None, None, addr)
            }
            Mode::Locked => {
                let (mut sockets, addr) = bind_plain_group(any, 1)?;
                let first = sockets
                    .first()
                    .ok_or_else(|| BenchError::Failed("no socket".into()))?
                    .try_clone()?;
                // Clones share one open socket; each worker registers its own descriptor.
                for _ in 1..workers {
                    sockets.push(first.try_clone()?);
                }
                (sockets, None, None, addr)
            }
        };
        for s in &sockets {
            s.set_nonblocking(true)?;
        }
        let slots: Arc<Mutex<Vec<Option<UdpSocket>>>> =
            Arc::new(Mutex::new(sockets.into_iter().map(Some).collect()));
        let stats: Arc<[WorkerStats]> = (0..workers).map(|_| WorkerStats::default()).collect();
        let shared = Arc::new(Mutex::new(Table::new()));
        let st = Arc::clone(&stats);
        let opts = RuntimeOptions {
            pin,
            name: format!("echo-{}", mode.label()),
            ..RuntimeOptions::default()
        };
        let rt = Runtime::start(set, opts, move |ctx: WorkerCtx<Handoff>| {
            let sock = slots
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_mut(ctx.id.index())
                .and_then(Option::take);
            let state = match mode {
                Mode::Sharded => State::Shard(Table::new()),
                Mode::Locked => State::Locked(Arc::clone(&shared)),
            };
            let stats = Arc::clone(&st);
            async move {
                if let Some(prio) = fifo {
                    if let Err(e) = super::mmsg::set_fifo(prio) {
                        tracing::error!(
                            worker = ctx.id.0,
                            "cannot make the worker SCHED_FIFO: {e}"
                        );
                    }
                }
                let Some(sock) = sock else {
                    tracing::error!(worker = ctx.id.0, "no socket for this worker");
                    return;
                };
                if let Err(e) = worker_loop(ctx, sock, state, plan, mode, &stats).await {
                    tracing::error!("echo worker ended: {e}");
                }
            }
        })
        .map_err(|e| BenchError::Failed(format!("echo workers: {e}")))?;
        Ok(Server {
            rt,
            addr,
            stats,
            steering,
            unsteered,
            mode,
            locked_rx,
        })
    }

    /// The address the client sends to.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn sum(stats: &[WorkerStats]) -> ServerTotals {
        let mut t = ServerTotals::default();
        let ns = |c: &AtomicU64| c.load(Ordering::Relaxed) as f64 * 1e-9;
        for w in stats {
            t.served += w.served.load(Ordering::Relaxed);
            t.wait_s += ns(&w.wait_ns);
            t.held_s += ns(&w.held_ns);
            t.service_s += ns(&w.service_ns);
            t.handed_off += w.handed_off.load(Ordering::Relaxed);
            t.handoff_dropped += w.handoff_dropped.load(Ordering::Relaxed);
            t.bad += w.bad.load(Ordering::Relaxed);
            t.send_errors += w.send_errors.load(Ordering::Relaxed);
            t.cpu_s += ns(&w.cpu_ns);
            t.empty_wakeups += w.empty_wakeups.load(Ordering::Relaxed);
        }
        t
    }

    /// How requests reached the workers.
    pub(crate) fn delivery(&self) -> Delivery {
        let counters = self.steering.as_ref().and_then(|s| s.counters().ok());
        Delivery {
            path: match (self.mode, &self.steering) {
                (Mode::Locked, _) if self.locked_rx == LockedRx::Hash => "kernel-hash",
                (Mode::Locked, _) => "shared-socket",
                (Mode::Sharded, Some(_)) => "bpf",
                (Mode::Sharded, None) => "handoff",
            },
            unsteered_reason: self.unsteered.clone(),
            bpf_steered: counters.as_ref().map(|c| c.steered),
            bpf_fallbacks: counters.as_ref().map(steer_bpf::Counters::fallbacks),
            per_worker: self
                .stats
                .iter()
                .map(|w| w.served.load(Ordering::Relaxed))
                .collect(),
            pinned: self.rt.report().all_pinned(),
        }
    }

    /// Stops and joins the workers; returns the final counters (CPU time included, which
    /// each worker stores as it ends) and the delivery.
    pub(crate) fn stop(self) -> Result<(ServerTotals, Delivery), BenchError> {
        let delivery = self.delivery();
        let Server { rt, stats, .. } = self;
        rt.stop()
            .map_err(|e| BenchError::Failed(format!("echo workers: {e}")))?;
        let s = Server::sum(&stats);
        Ok((s, delivery))
    }
}

impl Mode {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Mode::Sharded => "sharded",
            Mode::Locked => "locked",
        }
    }
}

/// `workers` `SO_REUSEPORT` UDP sockets on one port with no program: the kernel's hash of
/// the 4-tuple picks the socket.
fn bind_plain_group(
    addr: SocketAddr,
    workers: u16,
) -> Result<(Vec<UdpSocket>, SocketAddr), BenchError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let mut addr = addr;
    let mut out = Vec::with_capacity(usize::from(workers));
    for _ in 0..workers {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
        s.set_reuse_port(true)?;
        s.bind(&addr.into())?;
        if let Some(a) = s.local_addr()?.as_socket() {
            addr = a;
        }
        out.push(UdpSocket::from(s));
    }
    Ok((out, addr))
}

/// A worker: read, route, serve, echo, until stopped.
async fn worker_loop(
    mut ctx: WorkerCtx<Handoff>,
    sock: UdpSocket,
    mut state: State,
    plan: Plan,
    mode: Mode,
    all: &[WorkerStats],
) -> std::io::Result<()> {
    let Some(stats) = all.get(ctx.id.index()) else {
        return Ok(());
    };
    let cpu0 = cpu_time::ThreadTime::try_now().ok();
    let r = serve_loop(&mut ctx, sock, &mut state, plan, mode, stats).await;
    if let Some(c) = cpu0 {
        let used = c.try_elapsed().unwrap_or_default();
        stats.cpu_ns.store(
            u64::try_from(used.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }
    r
}

async fn serve_loop(
    ctx: &mut WorkerCtx<Handoff>,
    sock: UdpSocket,
    state: &mut State,
    plan: Plan,
    mode: Mode,
    stats: &WorkerStats,
) -> std::io::Result<()> {
    let sock = tokio::net::UdpSocket::from_std(sock)?;
    let mut work = work::Worker::new(plan.variant)?;
    let mut woken = false;
    let me = ctx.id;
    let n = u32::from(ctx.workers.count());
    let mut inbox: Vec<Handoff> = Vec::with_capacity(BATCH);
    let mut buf = [0u8; REQUEST_MAX];
    loop {
        if ctx.stop.is_stopped() {
            return Ok(());
        }
        ctx.mesh.drain(|_, m| inbox.push(m));
        for m in inbox.drain(..) {
            let req = m.buf.get(..usize::from(m.len)).unwrap_or(&[]);
            serve(&sock, req, m.from, state, &mut work, plan, stats)?;
        }
        let mut got = 0;
        while got < BATCH {
            let (len, from) = match sock.try_recv_from(&mut buf) {
                Ok(r) => r,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            };
            got += 1;
            let req = buf.get(..len).unwrap_or(&[]);
            let Some(key) = IdSpec::FIRST_WORD.extract(req) else {
                bump(&stats.bad, 1);
                continue;
            };
            let owner = WorkerId((key % n) as u16);
            if mode == Mode::Sharded && owner != me {
                let mut m = Handoff {
                    from,
                    len: 0,
                    buf: [0; REQUEST_MAX],
                };
                if let Some(dst) = m.buf.get_mut(..len) {
                    dst.copy_from_slice(req);
                    m.len = len as u8;
                }
                match ctx.mesh.send(owner, m) {
                    Ok(()) => bump(&stats.handed_off, 1),
                    Err(_) => bump(&stats.handoff_dropped, 1),
                }
                continue;
            }
            serve(&sock, req, from, state, &mut work, plan, stats)?;
        }
        if woken && got == 0 {
            bump(&stats.empty_wakeups, 1);
        }
        woken = false;
        if got == 0 && !ctx.mesh.has_ready() {
            woken = true;
            tokio::select! {
                r = sock.readable() => r?,
                () = ctx.mesh.recv_ready(), if mode == Mode::Sharded => {}
                () = ctx.stop.stopped() => return Ok(()),
            }
        }
    }
}

/// One request: the work outside, the work on the record under the state, the echo.
fn serve(
    sock: &tokio::net::UdpSocket,
    req: &[u8],
    from: SocketAddr,
    state: &mut State,
    work: &mut work::Worker,
    plan: Plan,
    stats: &WorkerStats,
) -> std::io::Result<()> {
    let key = IdSpec::FIRST_WORD.extract(req).unwrap_or(0);
    let seq = IdSpec::new(4, 4, 0)
        .ok()
        .and_then(|s| s.extract(req))
        .unwrap_or(0);
    let start = Instant::now();
    let x = work.run((u64::from(key) << 32) | u64::from(seq), plan.outside)?;
    let asked = Instant::now();
    let (r, got) = state.with(|t| {
        let rec = t.entry(key).or_default();
        let v = work.run(rec.value ^ x, plan.locked);
        if let Ok(v) = v {
            rec.value = v;
            rec.count = rec.count.wrapping_add(1);
        }
        v
    });
    let done = Instant::now();
    r?;
    let ns = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    bump(&stats.wait_ns, ns(got.saturating_duration_since(asked)));
    bump(&stats.held_ns, ns(done.saturating_duration_since(got)));
    bump(&stats.service_ns, ns(done.saturating_duration_since(start)));
    bump(&stats.served, 1);
    // The client's socket buffer has room for its whole window, so a full one means the
    // client is gone: count and move on rather than wait.
    if sock.try_send_to(req, from).is_err() {
        bump(&stats.send_errors, 1);
    }
    Ok(())
}
