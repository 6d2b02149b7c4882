//! The load itself: driver threads, each a single-threaded Tokio runtime owning its share of
//! the HTTP/2 (h2c) connections, each connection carrying K streams. Closed loop: every
//! stream slot starts its next operation when the last one ends. Open loop: operations start
//! on a schedule at the given rate, and a start that finds all K streams of its connection
//! busy is counted as skipped rather than queued.
//!
//! It speaks through the `h2` crate directly rather than hyper's client: no connection pool
//! or body machinery per request, so that one core of driver can saturate one core of
//! server.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use h2::client::SendRequest;
use hdrhistogram::Histogram;
use http::StatusCode;

use super::exchange::{Exchange, Next, Request, Sub};

/// Where the operations go.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) addr: SocketAddr,
    /// `host:port`, the `:authority` of every request.
    pub(crate) authority: String,
}

/// One measurement's settings.
#[derive(Clone)]
pub(crate) struct Load {
    pub(crate) target: Target,
    pub(crate) exchange: Arc<Exchange>,
    pub(crate) subs: Arc<Vec<Sub>>,
    pub(crate) connections: usize,
    pub(crate) streams: usize,
    pub(crate) threads: usize,
    /// Open loop at this many operations per second, over all threads.
    pub(crate) rate: Option<f64>,
    pub(crate) timeout: Duration,
    /// First CPU to pin driver thread 0 to; thread i gets the i-th CPU after it.
    pub(crate) pin: Option<usize>,
}

/// What one thread (then the whole run) counted inside the measured window.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    pub(crate) ok: u64,
    pub(crate) failures: BTreeMap<String, u64>,
    /// Open loop: starts that found every stream of their connection busy.
    pub(crate) skipped: u64,
    /// Latency of successful operations, µs.
    pub(crate) latency: Histogram<u64>,
    /// Successful operations per second of the window.
    pub(crate) per_second: Vec<u64>,
}

impl Tally {
    pub(crate) fn new(seconds: usize) -> Result<Self, String> {
        Ok(Tally {
            ok: 0,
            failures: BTreeMap::new(),
            skipped: 0,
            // 1 µs to 10 min, 3 significant digits.
            latency: Histogram::new_with_bounds(1, 600_000_000, 3)
                .map_err(|e| format!("latency histogram: {e}"))?,
            per_second: vec![0; seconds],
        })
    }

    pub(crate) fn merge(&mut self, o: &Tally) {
        self.ok += o.ok;
        self.skipped += o.skipped;
        for (k, v) in &o.failures {
            *self.failures.entry(k.clone()).or_default() += v;
        }
        let _ = self.latency.add(&o.latency);
        for (a, b) in self.per_second.iter_mut().zip(&o.per_second) {
            *a += b;
        }
    }

    pub(crate) fn failed(&self) -> u64 {
        self.failures.values().sum()
    }
}

/// The window every thread measures: operations ending in `[from, until)` count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub(crate) start: Instant,
    pub(crate) from: Instant,
    pub(crate) until: Instant,
}

impl Window {
    pub(crate) fn seconds(&self) -> usize {
        (self.until - self.from).as_secs_f64().ceil().max(1.0) as usize
    }
}

/// Runs `load` in its threads over `window`, and returns each thread's tally.
pub(crate) fn run(load: &Load, window: Window) -> Result<Vec<Tally>, String> {
    let threads = load.threads.max(1);
    let mut handles = Vec::new();
    for t in 0..threads {
        // Connections spread over the threads, the first ones taking the remainder.
        let conns = load.connections / threads + usize::from(t < load.connections % threads);
        if conns == 0 {
            continue;
        }
        let load = load.clone();
        let h = std::thread::Builder::new()
            .name(format!("sbi-driver-{t}"))
            .spawn(move || {
                if let Some(first) = load.pin {
                    let _ = core_affinity::set_for_current(core_affinity::CoreId { id: first + t });
                }
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("runtime: {e}"))?;
                let tally = Tally::new(window.seconds())?;
                let local = tokio::task::LocalSet::new();
                Ok::<_, String>(
                    local.block_on(&rt, thread_main(load, tally, t, threads, conns, window)),
                )
            })
            .map_err(|e| format!("driver thread: {e}"))?;
        handles.push(h);
    }
    let mut out = Vec::new();
    for h in handles {
        out.push(
            h.join()
                .map_err(|_| "a driver thread panicked".to_owned())??,
        );
    }
    Ok(out)
}

/// One HTTP/2 connection, (re)opened on demand.
struct Conn {
    target: Target,
    send: RefCell<Option<SendRequest<Bytes>>>,
    connecting: Cell<bool>,
    in_flight: Cell<usize>,
}

/// Why a request got no answer.
enum Fail {
    /// The connection is gone: drop it and open another.
    Lost(String),
    Other(String),
}

impl Conn {
    fn new(target: Target) -> Rc<Self> {
        Rc::new(Conn {
            target,
            send: RefCell::new(None),
            connecting: Cell::new(false),
            in_flight: Cell::new(0),
        })
    }

    /// The connection's sender, connecting first if there is none. `None` while another
    /// stream of this connection is connecting.
    async fn sender(&self) -> Result<Option<SendRequest<Bytes>>, String> {
        if let Some(s) = self.send.borrow().as_ref() {
            return Ok(Some(s.clone()));
        }
        if self.connecting.get() {
            return Ok(None);
        }
        self.connecting.set(true);
        let r = connect(&self.target).await;
        self.connecting.set(false);
        let s = r?;
        *self.send.borrow_mut() = Some(s.clone());
        Ok(Some(s))
    }

    async fn call(&self, req: &Request, timeout: Duration) -> Result<(StatusCode, Bytes), String> {
        let send = loop {
            match self.sender().await {
                Ok(Some(s)) => break s,
                Ok(None) => tokio::time::sleep(Duration::from_millis(5)).await,
                Err(e) => {
                    // Do not spin on a target that refuses connections.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    return Err(e);
                }
            }
        };
        match tokio::time::timeout(timeout, exchange(send, &self.target, req)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(Fail::Lost(e))) => {
                self.send.borrow_mut().take();
                Err(e)
            }
            Ok(Err(Fail::Other(e))) => Err(e),
            Err(_) => Err("timeout".to_owned()),
        }
    }
}

async fn connect(t: &Target) -> Result<SendRequest<Bytes>, String> {
    let tcp = tokio::net::TcpStream::connect(t.addr)
        .await
        .map_err(|e| format!("connect: {}", e.kind()))?;
    let _ = tcp.set_nodelay(true);
    let (send, conn) = h2::client::Builder::new()
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 24)
        .handshake::<_, Bytes>(tcp)
        .await
        .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
    tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    Ok(send)
}

async fn exchange(
    send: SendRequest<Bytes>,
    t: &Target,
    req: &Request,
) -> Result<(StatusCode, Bytes), Fail> {
    let mut send = send.ready().await.map_err(lost)?;
    let mut b = http::Request::builder()
        .method(req.method.clone())
        .uri(format!("http://{}{}", t.authority, req.path));
    if !req.body.is_empty() {
        b = b.header(http::header::CONTENT_TYPE, "application/json");
    }
    let head = b
        .body(())
        .map_err(|e| Fail::Other(format!("request: {e}")))?;
    let no_body = req.body.is_empty();
    let (resp, mut stream) = send.send_request(head, no_body).map_err(lost)?;
    if !no_body {
        stream.send_data(req.body.clone(), true).map_err(lost)?;
    }
    let (parts, mut body) = resp.await.map_err(lost)?.into_parts();
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(lost)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
    }
    Ok((parts.status, buf.freeze()))
}

fn lost(e: h2::Error) -> Fail {
    if e.is_io() || e.is_go_away() || e.is_library() {
        Fail::Lost(format!("connection lost: {e}"))
    } else {
        match e.reason() {
            Some(r) => Fail::Other(format!("stream reset: {r:?}")),
            None => Fail::Other(format!("HTTP/2: {e}")),
        }
    }
}

/// One operation, start to end.
async fn operation(conn: &Conn, ex: &Exchange, sub: &Sub, timeout: Duration) -> Result<(), String> {
    let (status, body) = conn.call(&ex.first(sub), timeout).await?;
    match ex.on_first(sub, status, &body) {
        Next::Done => Ok(()),
        Next::Failed(c) => Err(c),
        Next::Send(req) => {
            let (status, body) = conn.call(&req, timeout).await?;
            match ex.on_confirmation(status, &body) {
                Next::Done => Ok(()),
                Next::Failed(c) => Err(c),
                Next::Send(_) => Err("unexpected third step".to_owned()),
            }
        }
    }
}

struct Shared {
    load: Load,
    window: Window,
    tally: RefCell<Tally>,
    /// The next subscriber index of this thread (stride: the thread count).
    next_sub: Cell<usize>,
    stride: usize,
}

impl Shared {
    fn pick(&self) -> usize {
        let n = self.load.subs.len().max(1);
        let i = self.next_sub.get();
        self.next_sub.set((i + self.stride) % n);
        i % n
    }

    fn record(&self, started: Instant, outcome: Result<(), String>) {
        let end = Instant::now();
        if end < self.window.from || end >= self.window.until {
            return;
        }
        let mut t = self.tally.borrow_mut();
        match outcome {
            Ok(()) => {
                t.ok += 1;
                let us = (end - started).as_micros().clamp(1, 600_000_000) as u64;
                let _ = t.latency.record(us);
                let sec = (end - self.window.from).as_secs() as usize;
                if let Some(s) = t.per_second.get_mut(sec) {
                    *s += 1;
                }
            }
            Err(cause) => *t.failures.entry(cause).or_default() += 1,
        }
    }
}

async fn thread_main(
    load: Load,
    tally: Tally,
    index: usize,
    threads: usize,
    conns: usize,
    window: Window,
) -> Tally {
    let shared = Rc::new(Shared {
        tally: RefCell::new(tally),
        next_sub: Cell::new(index),
        stride: threads,
        load,
        window,
    });
    let conns: Vec<Rc<Conn>> = (0..conns)
        .map(|_| Conn::new(shared.load.target.clone()))
        .collect();
    let mut tasks = Vec::new();
    match shared.load.rate {
        None => {
            for c in &conns {
                for _ in 0..shared.load.streams {
                    let (c, s) = (c.clone(), shared.clone());
                    tasks.push(tokio::task::spawn_local(async move {
                        while Instant::now() < s.window.until {
                            let sub = s.pick();
                            let Some(sub_ref) = s.load.subs.get(sub) else {
                                break;
                            };
                            let t0 = Instant::now();
                            let r = operation(&c, &s.load.exchange, sub_ref, s.load.timeout).await;
                            s.record(t0, r);
                        }
                    }));
                }
            }
        }
        Some(rate) => {
            let per_thread = rate / threads as f64;
            let mut issued: u64 = 0;
            let mut rr = 0usize;
            let mut tick = tokio::time::interval(Duration::from_millis(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            while Instant::now() < shared.window.until {
                tick.tick().await;
                let due =
                    ((Instant::now() - shared.window.start).as_secs_f64() * per_thread) as u64;
                while issued < due {
                    issued += 1;
                    let Some(c) = (0..conns.len())
                        .map(|k| &conns[(rr + k) % conns.len()])
                        .find(|c| c.in_flight.get() < shared.load.streams)
                        .cloned()
                    else {
                        let now = Instant::now();
                        if now >= shared.window.from && now < shared.window.until {
                            shared.tally.borrow_mut().skipped += 1;
                        }
                        continue;
                    };
                    rr = (rr + 1) % conns.len();
                    let s = shared.clone();
                    c.in_flight.set(c.in_flight.get() + 1);
                    tasks.push(tokio::task::spawn_local(async move {
                        let sub = s.pick();
                        if let Some(sub_ref) = s.load.subs.get(sub) {
                            let t0 = Instant::now();
                            let r = operation(&c, &s.load.exchange, sub_ref, s.load.timeout).await;
                            s.record(t0, r);
                        }
                        c.in_flight.set(c.in_flight.get().saturating_sub(1));
                    }));
                }
                // Finished tasks leave the list, so that a long open-loop run stays small.
                tasks.retain(|t| !t.is_finished());
            }
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    let tally = shared.tally.borrow().clone();
    tally
}
