//! One echo measurement: a server thread and a client thread, each running a Tokio
//! `current_thread` runtime (pinned to its own core when the machine has two), exchanging
//! NGAP-sized messages over SCTP (raw IP or UDP encapsulation) or over plain UDP.
//!
//! The client keeps `window` messages in flight per association (closed loop): every echo
//! that comes back releases the next message of its association. The plain UDP case uses the
//! same transport code (`sctp_io::Transport`), the same batch size and the same wake-up
//! pattern as `SctpSocket::drive`, so the ratio between the two isolates what SCTP itself
//! costs.
//!
//! Phases are driven by the client and published through one atomic: warm-up, measured
//! window, drain (associations shut down), stop. Each thread reads its own CPU clock at the
//! edges of the measured window.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use core_affinity::CoreId;
use cpu_time::ThreadTime;
use sctp::{AssocId, AssociationConfig, Endpoint, Event, SendError};
use sctp_io::{SctpSocket, Transport};

use crate::BenchError;
use ran::load::NGAP_PPID;

/// The server's address. Raw sockets on loopback must be bound to different addresses: a raw
/// socket bound to an address sees every protocol-132 packet to it, so a shared address would
/// hand each side the other's packets.
pub(crate) const SERVER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 41);
/// The client's address.
pub(crate) const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 42);
/// The server's SCTP port: not NGAP's 38412, so that an AMF running on the same machine with
/// a raw socket on the wildcard address counts our packets as foreign instead of answering.
const SERVER_PORT: u16 = 38_499;
/// Client association `i` uses local SCTP port `CLIENT_PORT_BASE + i`.
const CLIENT_PORT_BASE: u16 = 40_500;
/// Most associations one case may open (the client port range above).
pub(crate) const MAX_ASSOCS: u32 = (u16::MAX - CLIENT_PORT_BASE) as u32;
/// Messages go round-robin over this many streams, so "echoed on the same stream" is checked
/// on more than stream 0. Below the 16 streams both sides negotiate by default.
const ECHO_STREAMS: u64 = 4;
/// Size of the header every payload starts with: association index (u32), sequence (u64).
pub(crate) const HEADER_LEN: usize = 12;
/// Datagrams read per wake-up in the plain UDP case; the same as `SctpSocket::drive` uses, so
/// both cases amortise their wake-ups alike.
const RECV_BATCH: usize = 64;
/// A case with no echo for this long fails instead of hanging.
pub(crate) const STALL: Duration = Duration::from_secs(5);
/// Longest an idle server sleeps before it looks at the phase again.
const PHASE_POLL: Duration = Duration::from_millis(50);
/// How long the client waits for its associations to shut down at the end of a case.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

const PHASE_WARMUP: u8 = 0;
const PHASE_MEASURE: u8 = 1;
const PHASE_DRAIN: u8 = 2;
const PHASE_STOP: u8 = 3;

/// What carries the echoed messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// SCTP over raw IPv4 protocol 132.
    SctpRaw,
    /// SCTP over UDP encapsulation (RFC 6951).
    SctpUdp,
    /// Plain UDP datagrams, one message each: the baseline.
    PlainUdp,
}

impl Kind {
    /// Short name used in reports.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::SctpRaw => "sctp/raw",
            Kind::SctpUdp => "sctp/udp",
            Kind::PlainUdp => "plain-udp",
        }
    }
}

/// The payloads: sizes cycle deterministically over `min..=max` (a sawtooth, one byte up per
/// message of an association), each starting with the association index and the sequence
/// number, followed by a fixed pattern so the echo can be checked byte for byte.
#[derive(Debug, Clone)]
pub(crate) struct Payloads {
    min: usize,
    span: u64,
    pattern: Vec<u8>,
}

impl Payloads {
    /// Payloads of `min..=max` bytes; `min` must be at least [`HEADER_LEN`].
    pub(crate) fn new(min: usize, max: usize) -> Self {
        let min = min.max(HEADER_LEN);
        let max = max.max(min);
        let pattern = (0..max)
            .map(|j| (j as u8).wrapping_mul(151).wrapping_add(7))
            .collect();
        Payloads {
            min,
            span: (max - min) as u64 + 1,
            pattern,
        }
    }

    /// Size of message `seq` of an association.
    pub(crate) fn size(&self, seq: u64) -> usize {
        self.min + (seq % self.span) as usize
    }

    /// Writes message `seq` of association `flow` into `out` (cleared first).
    pub(crate) fn write(&self, flow: u32, seq: u64, out: &mut Vec<u8>) {
        let size = self.size(seq);
        out.clear();
        out.extend_from_slice(&flow.to_be_bytes());
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(self.pattern.get(HEADER_LEN..size).unwrap_or_default());
    }

    /// Message `seq` of association `flow`.
    pub(crate) fn message(&self, flow: u32, seq: u64) -> Bytes {
        let mut v = Vec::with_capacity(self.size(seq));
        self.write(flow, seq, &mut v);
        Bytes::from(v)
    }

    /// The association index and sequence number of an echoed message, if it is exactly
    /// what was sent: right length for its sequence number, pattern intact.
    pub(crate) fn check(&self, data: &[u8]) -> Option<(u32, u64)> {
        let flow = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?);
        let seq = u64::from_be_bytes(data.get(4..HEADER_LEN)?.try_into().ok()?);
        if data.len() != self.size(seq) {
            return None;
        }
        (data.get(HEADER_LEN..) == self.pattern.get(HEADER_LEN..data.len())).then_some((flow, seq))
    }
}

/// The SCTP stream message `seq` travels on.
pub(crate) fn stream_for(seq: u64) -> u16 {
    (seq % ECHO_STREAMS) as u16
}

/// One case to measure.
#[derive(Debug, Clone)]
pub(crate) struct CaseConfig {
    /// What carries the messages.
    pub(crate) kind: Kind,
    /// Associations (SCTP) or flows (plain UDP) sharing one socket on each side.
    pub(crate) assocs: u32,
    /// Messages in flight per association.
    pub(crate) window: u32,
    /// The messages.
    pub(crate) payloads: Payloads,
    /// Traffic before the measured window, so that congestion windows have opened and caches
    /// are warm.
    pub(crate) warmup: Duration,
    /// The measured window.
    pub(crate) duration: Duration,
    /// Association parameters of both endpoints.
    pub(crate) association: AssociationConfig,
    /// Cores for the server and the client thread; `None` leaves placement to the scheduler.
    pub(crate) cores: Option<(CoreId, CoreId)>,
    /// Echoed messages to keep for inspection (tests); 0 in real runs.
    pub(crate) keep_samples: usize,
    /// A case with no echo (or no association up) for this long fails; [`STALL`] in real
    /// runs.
    pub(crate) stall: Duration,
}

/// An echoed message as the client received it.
#[derive(Debug, Clone)]
// Only tests read samples; real runs keep none.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Sample {
    /// SCTP stream (0 for plain UDP).
    pub(crate) stream: u16,
    /// SCTP PPID (0 for plain UDP).
    pub(crate) ppid: u32,
    /// The payload.
    pub(crate) data: Bytes,
}

/// What one case measured.
#[derive(Debug, Clone, Default)]
pub(crate) struct CaseOutcome {
    /// Round trips completed in the measured window.
    pub(crate) messages: u64,
    /// Payload bytes echoed in the measured window (one direction).
    pub(crate) bytes: u64,
    /// Length of the measured window.
    pub(crate) elapsed: Duration,
    /// Client thread CPU time in the window.
    pub(crate) client_cpu: Duration,
    /// Server thread CPU time in the window.
    pub(crate) server_cpu: Duration,
    /// Packets the client read in the window.
    pub(crate) client_packets_in: u64,
    /// Packets the client wrote in the window.
    pub(crate) client_packets_out: u64,
    /// DATA chunks retransmitted by either side over the whole case (SCTP only).
    pub(crate) retransmissions: u64,
    /// Of which fast retransmits.
    pub(crate) fast_retransmits: u64,
    /// Messages the server echoed over the whole case.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) server_echoed: u64,
    /// Echoes whose content, stream or PPID did not match what was sent.
    pub(crate) bad_echoes: u64,
    /// Whether both threads were pinned.
    pub(crate) pinned: bool,
    /// The first echoed messages (see [`CaseConfig::keep_samples`]).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) samples: Vec<Sample>,
}

#[derive(Debug, Default)]
struct Shared {
    phase: AtomicU8,
    /// Echoes received so far, for the progress bar.
    echoed: AtomicU64,
}

impl Shared {
    fn phase(&self) -> u8 {
        self.phase.load(Ordering::Relaxed)
    }

    fn set_phase(&self, p: u8) {
        self.phase.store(p, Ordering::Relaxed);
    }
}

/// What the server thread hands back.
#[derive(Debug, Default)]
struct ServerOut {
    cpu: Duration,
    retransmissions: u64,
    fast_retransmits: u64,
    echoed: u64,
    pinned: bool,
}

/// What the client thread hands back.
#[derive(Debug, Default)]
struct ClientOut {
    window: Measured,
    retransmissions: u64,
    fast_retransmits: u64,
    bad_echoes: u64,
    pinned: bool,
    samples: Vec<Sample>,
}

/// Runs one case. `progress` is called about ten times a second with the time since the
/// client started and the echoes so far.
pub(crate) fn run_case(
    cfg: &CaseConfig,
    mut progress: impl FnMut(Duration, u64),
) -> Result<CaseOutcome, BenchError> {
    let shared = Arc::new(Shared::default());
    // The server gives up on its own well after the client must have finished.
    let hard_deadline = Instant::now() + cfg.warmup + cfg.duration + cfg.stall * 4;
    let (ready_tx, ready_rx) = mpsc::channel();
    let server = {
        let cfg = cfg.clone();
        let shared = Arc::clone(&shared);
        thread::Builder::new()
            .name("bench-server".into())
            .spawn(move || {
                let core = cfg.cores.map(|c| c.0);
                on_runtime(core, |pinned| {
                    server_main(cfg, shared, ready_tx, hard_deadline, pinned)
                })
            })
            .map_err(|e| BenchError::Failed(format!("cannot start the server thread: {e}")))?
    };
    let server_addr = match ready_rx.recv_timeout(STALL) {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => {
            shared.set_phase(PHASE_STOP);
            let _ = server.join();
            return Err(e);
        }
        Err(_) => {
            shared.set_phase(PHASE_STOP);
            let _ = server.join();
            return Err(BenchError::Failed(format!(
                "{}: the echo server did not start within {STALL:?}",
                cfg.kind.label()
            )));
        }
    };
    let client = {
        let cfg = cfg.clone();
        let shared = Arc::clone(&shared);
        thread::Builder::new()
            .name("bench-client".into())
            .spawn(move || {
                let core = cfg.cores.map(|c| c.1);
                on_runtime(core, |pinned| client_main(cfg, shared, server_addr, pinned))
            })
    };
    let client = match client {
        Ok(c) => c,
        Err(e) => {
            shared.set_phase(PHASE_STOP);
            let _ = server.join();
            return Err(BenchError::Failed(format!(
                "cannot start the client thread: {e}"
            )));
        }
    };
    let started = Instant::now();
    while !client.is_finished() {
        thread::sleep(Duration::from_millis(100));
        progress(started.elapsed(), shared.echoed.load(Ordering::Relaxed));
    }
    let client_res = client.join();
    // Whatever became of the client, the server must go.
    shared.set_phase(PHASE_STOP);
    let server_res = server.join();
    let c = client_res.map_err(|_| BenchError::Failed("the client thread panicked".into()))??;
    let s = server_res.map_err(|_| BenchError::Failed("the server thread panicked".into()))??;
    Ok(CaseOutcome {
        messages: c.window.messages,
        bytes: c.window.bytes,
        elapsed: c.window.elapsed,
        client_cpu: c.window.cpu,
        server_cpu: s.cpu,
        client_packets_in: c.window.packets_in,
        client_packets_out: c.window.packets_out,
        retransmissions: c.retransmissions + s.retransmissions,
        fast_retransmits: c.fast_retransmits + s.fast_retransmits,
        server_echoed: s.echoed,
        bad_echoes: c.bad_echoes,
        pinned: c.pinned && s.pinned,
        samples: c.samples,
    })
}

/// Runs `f` on a fresh `current_thread` runtime on this thread, pinned to `core` if given.
fn on_runtime<T, F, Fut>(core: Option<CoreId>, f: F) -> Result<T, BenchError>
where
    F: FnOnce(bool) -> Fut,
    Fut: Future<Output = Result<T, BenchError>>,
{
    let pinned = core.is_some_and(core_affinity::set_for_current);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Failed(format!("cannot start a runtime: {e}")))?;
    rt.block_on(f(pinned))
}

fn bind(kind: Kind, ip: Ipv4Addr) -> Result<Transport, BenchError> {
    Ok(match kind {
        Kind::SctpRaw => Transport::bind_raw(ip)?,
        Kind::SctpUdp | Kind::PlainUdp => Transport::bind_udp(SocketAddrV4::new(ip, 0))?,
    })
}

fn io_failed(side: &str, e: std::io::Error) -> BenchError {
    BenchError::Failed(format!("echo {side}: socket error: {e}"))
}

fn thread_cpu() -> Result<ThreadTime, BenchError> {
    ThreadTime::try_now().map_err(|e| BenchError::Failed(format!("thread CPU clock: {e}")))
}

/// The server's CPU time over the measured window, read when it sees the phase change.
#[derive(Debug, Default)]
struct CpuWindow {
    start: Option<ThreadTime>,
    total: Option<Duration>,
}

impl CpuWindow {
    fn observe(&mut self, phase: u8) -> Result<(), BenchError> {
        if phase >= PHASE_MEASURE && self.start.is_none() && self.total.is_none() {
            self.start = Some(thread_cpu()?);
        }
        if phase >= PHASE_DRAIN {
            if let Some(s) = self.start.take() {
                self.total = Some(thread_cpu()?.duration_since(s));
            }
        }
        Ok(())
    }

    fn total(&self) -> Duration {
        self.total.unwrap_or_default()
    }

    /// One turn of a server loop: follows the phase, and gives the time now while the
    /// server is to go on (neither the stop phase nor `hard_deadline` has come).
    fn turn(
        &mut self,
        shared: &Shared,
        hard_deadline: Instant,
    ) -> Result<Option<Instant>, BenchError> {
        let phase = shared.phase();
        self.observe(phase)?;
        let now = Instant::now();
        Ok((phase != PHASE_STOP && now < hard_deadline).then_some(now))
    }
}

async fn server_main(
    cfg: CaseConfig,
    shared: Arc<Shared>,
    ready: mpsc::Sender<Result<SocketAddr, BenchError>>,
    hard_deadline: Instant,
    pinned: bool,
) -> Result<ServerOut, BenchError> {
    let transport = match bind(cfg.kind, SERVER_IP) {
        Ok(t) => t,
        Err(e) => {
            let msg = e.to_string();
            let _ = ready.send(Err(e));
            return Err(BenchError::Failed(msg));
        }
    };
    let addr = match cfg.kind {
        Kind::SctpRaw => SocketAddr::V4(SocketAddrV4::new(SERVER_IP, 0)),
        Kind::SctpUdp | Kind::PlainUdp => SocketAddr::V4(transport.local()),
    };
    let _ = ready.send(Ok(addr));
    let mut out = match cfg.kind {
        Kind::PlainUdp => udp_server(transport, &shared, hard_deadline).await?,
        Kind::SctpRaw | Kind::SctpUdp => {
            sctp_server(transport, &cfg, &shared, hard_deadline).await?
        }
    };
    out.pinned = pinned;
    Ok(out)
}

/// Echoes every message back on its association, stream and PPID.
async fn sctp_server(
    transport: Transport,
    cfg: &CaseConfig,
    shared: &Shared,
    hard_deadline: Instant,
) -> Result<ServerOut, BenchError> {
    let mut ep_cfg = ran::load::endpoint_config(Some(SERVER_PORT));
    ep_cfg.association = cfg.association.clone();
    let mut sock = SctpSocket::new(transport, Endpoint::new(ep_cfg));
    // Echoes the send buffer had no room for, in arrival order, so that a stream's order is
    // kept. Bounded by the client's window.
    let mut backlog: VecDeque<(AssocId, sctp::Message)> = VecDeque::new();
    let mut cpu = CpuWindow::default();
    let mut echoed = 0u64;
    while let Some(now) = cpu.turn(shared, hard_deadline)? {
        sock.drive(Some(now + PHASE_POLL))
            .await
            .map_err(|e| io_failed("server", e))?;
        let ep = sock.endpoint_mut();
        while let Some((id, m)) = backlog.pop_front() {
            match echo(ep, id, m) {
                Ok(true) => echoed += 1,
                Ok(false) => {}
                Err(m) => {
                    backlog.push_front((id, m));
                    break;
                }
            }
        }
        while let Some((id, ev)) = ep.poll_event() {
            match ev {
                Event::Message(m) if backlog.is_empty() => match echo(ep, id, m) {
                    Ok(true) => echoed += 1,
                    Ok(false) => {}
                    Err(m) => backlog.push_back((id, m)),
                },
                Event::Message(m) => backlog.push_back((id, m)),
                Event::Closed { reason } => {
                    tracing::debug!(assoc = %id, ?reason, "bench server: association closed");
                }
                Event::Connected { .. } | Event::Restarted | Event::PeerError { .. } => {}
            }
        }
    }
    let stats = sock.endpoint().stats();
    Ok(ServerOut {
        cpu: cpu.total(),
        retransmissions: stats.retransmissions,
        fast_retransmits: stats.fast_retransmits,
        echoed,
        pinned: false,
    })
}

/// Sends `m` back. `Ok(true)` when queued, `Ok(false)` when the association can no longer
/// take it (closing), `Err(m)` when the send buffer is full and `m` must wait.
fn echo(ep: &mut Endpoint, id: AssocId, m: sctp::Message) -> Result<bool, sctp::Message> {
    match ep.send(id, m.stream, m.ppid, m.unordered, m.data.clone()) {
        Ok(()) => Ok(true),
        Err(SendError::Full) => Err(m),
        Err(e) => {
            tracing::debug!(assoc = %id, error = %e, "bench server: echo dropped");
            Ok(false)
        }
    }
}

/// Echoes every datagram back to its sender: `recv_batch` then `send`, as `SctpSocket::drive`
/// does for SCTP packets.
async fn udp_server(
    transport: Transport,
    shared: &Shared,
    hard_deadline: Instant,
) -> Result<ServerOut, BenchError> {
    let mut buf = vec![0u8; 65_536];
    let mut arena: Vec<u8> = Vec::with_capacity(RECV_BATCH * 512);
    let mut pkts: Vec<(SocketAddr, usize, usize)> = Vec::with_capacity(RECV_BATCH);
    let mut cpu = CpuWindow::default();
    let mut echoed = 0u64;
    while let Some(now) = cpu.turn(shared, hard_deadline)? {
        arena.clear();
        pkts.clear();
        let recv = transport.recv_batch(&mut buf, RECV_BATCH, |from, p| {
            let start = arena.len();
            arena.extend_from_slice(p);
            pkts.push((from, start, arena.len()));
        });
        let wake = tokio::time::Instant::from_std(now + PHASE_POLL);
        tokio::select! {
            r = recv => { r.map_err(|e| io_failed("server", e))?; }
            _ = tokio::time::sleep_until(wake) => {}
        }
        for &(to, start, end) in &pkts {
            if let Some(p) = arena.get(start..end) {
                transport
                    .send(to, p)
                    .await
                    .map_err(|e| io_failed("server", e))?;
                echoed += 1;
            }
        }
    }
    Ok(ServerOut {
        cpu: cpu.total(),
        echoed,
        ..ServerOut::default()
    })
}

/// The client's view of the measured window.
#[derive(Debug, Default, Clone, Copy)]
struct Measured {
    messages: u64,
    bytes: u64,
    elapsed: Duration,
    cpu: Duration,
    packets_in: u64,
    packets_out: u64,
}

#[derive(Debug, Clone, Copy)]
struct Snapshot {
    at: Instant,
    received: u64,
    bytes: u64,
    cpu: ThreadTime,
    packets_in: u64,
    packets_out: u64,
}

/// Counts echoes, moves through the phases and watches for stalls.
#[derive(Debug)]
struct Meter {
    shared: Arc<Shared>,
    label: &'static str,
    stall: Duration,
    warm_end: Instant,
    duration: Duration,
    start: Option<Snapshot>,
    last_progress: Instant,
    received: u64,
    bytes: u64,
    bad: u64,
    keep_samples: usize,
    samples: Vec<Sample>,
}

enum Tick {
    /// Keep going; wake up by this instant at the latest.
    Wake(Instant),
    /// The measured window is over.
    Done(Measured),
}

impl Meter {
    fn new(cfg: &CaseConfig, shared: Arc<Shared>) -> Self {
        let now = Instant::now();
        shared.set_phase(PHASE_WARMUP);
        Meter {
            shared,
            label: cfg.kind.label(),
            stall: cfg.stall,
            warm_end: now + cfg.warmup,
            duration: cfg.duration,
            start: None,
            last_progress: now,
            received: 0,
            bytes: 0,
            bad: 0,
            keep_samples: cfg.keep_samples,
            samples: Vec::new(),
        }
    }

    /// Records one echo; `ok` is whether it matched what was sent.
    fn echo(&mut self, ok: bool, stream: u16, ppid: u32, data: &[u8], now: Instant) {
        self.last_progress = now;
        if !ok {
            self.bad += 1;
            return;
        }
        self.received += 1;
        self.bytes += data.len() as u64;
        if self.samples.len() < self.keep_samples {
            self.samples.push(Sample {
                stream,
                ppid,
                data: Bytes::copy_from_slice(data),
            });
        }
    }

    /// Advances the phases. `packets` are the client's (in, out) packet counters.
    fn tick(&mut self, now: Instant, packets: (u64, u64)) -> Result<Tick, BenchError> {
        self.shared.echoed.store(self.received, Ordering::Relaxed);
        if now.duration_since(self.last_progress) >= self.stall {
            return Err(BenchError::Failed(format!(
                "{}: no echo for {:?} ({} echoed so far); the peer stopped answering",
                self.label, self.stall, self.received
            )));
        }
        let boundary = match self.start {
            None if now >= self.warm_end => {
                self.start = Some(self.snapshot(now, packets)?);
                self.shared.set_phase(PHASE_MEASURE);
                now + self.duration
            }
            None => self.warm_end,
            Some(s) if now >= s.at + self.duration => {
                let end = self.snapshot(now, packets)?;
                self.shared.set_phase(PHASE_DRAIN);
                return Ok(Tick::Done(Measured {
                    messages: end.received - s.received,
                    bytes: end.bytes - s.bytes,
                    elapsed: end.at.duration_since(s.at),
                    cpu: end.cpu.duration_since(s.cpu),
                    packets_in: end.packets_in - s.packets_in,
                    packets_out: end.packets_out - s.packets_out,
                }));
            }
            Some(s) => s.at + self.duration,
        };
        Ok(Tick::Wake(boundary.min(self.last_progress + self.stall)))
    }

    fn snapshot(&self, now: Instant, packets: (u64, u64)) -> Result<Snapshot, BenchError> {
        Ok(Snapshot {
            at: now,
            received: self.received,
            bytes: self.bytes,
            cpu: thread_cpu()?,
            packets_in: packets.0,
            packets_out: packets.1,
        })
    }
}

async fn client_main(
    cfg: CaseConfig,
    shared: Arc<Shared>,
    server: SocketAddr,
    pinned: bool,
) -> Result<ClientOut, BenchError> {
    let transport = bind(cfg.kind, CLIENT_IP)?;
    let mut out = match cfg.kind {
        Kind::PlainUdp => udp_client(transport, &cfg, shared, server).await?,
        Kind::SctpRaw | Kind::SctpUdp => sctp_client(transport, &cfg, shared, server).await?,
    };
    out.pinned = pinned;
    Ok(out)
}

/// One association's sending side.
#[derive(Debug)]
struct Flow {
    assoc: AssocId,
    next_seq: u64,
    /// Messages it may send now (window minus in flight).
    credit: u32,
}

async fn sctp_client(
    transport: Transport,
    cfg: &CaseConfig,
    shared: Arc<Shared>,
    server: SocketAddr,
) -> Result<ClientOut, BenchError> {
    let label = cfg.kind.label();
    let mut ep_cfg = ran::load::endpoint_config(None);
    ep_cfg.association = cfg.association.clone();
    let mut sock = SctpSocket::new(transport, Endpoint::new(ep_cfg));
    let mut flows = Vec::with_capacity(cfg.assocs as usize);
    let mut index: HashMap<AssocId, u32> = HashMap::new();
    let now = Instant::now();
    for i in 0..cfg.assocs {
        let port = CLIENT_PORT_BASE.saturating_add(i as u16);
        let assoc = sock
            .endpoint_mut()
            .connect(now, server, port, SERVER_PORT)
            .map_err(|e| BenchError::Failed(format!("{label}: SCTP connect: {e}")))?;
        index.insert(assoc, i);
        flows.push(Flow {
            assoc,
            next_seq: 0,
            credit: 0,
        });
    }

    // RFC 9260 §5.1: four-way handshake for every association before any data.
    let deadline = now + cfg.stall;
    let mut connected = 0;
    while connected < cfg.assocs {
        if Instant::now() >= deadline {
            return Err(BenchError::Failed(format!(
                "{label}: only {connected} of {} associations came up within {:?}",
                cfg.assocs, cfg.stall
            )));
        }
        sock.drive(Some(deadline))
            .await
            .map_err(|e| io_failed("client", e))?;
        while let Some((id, ev)) = sock.endpoint_mut().poll_event() {
            let Some(&i) = index.get(&id) else { continue };
            match ev {
                Event::Connected { .. } => {
                    connected += 1;
                    if let Some(f) = flows.get_mut(i as usize) {
                        f.credit = cfg.window;
                    }
                }
                Event::Closed { reason } => {
                    return Err(BenchError::Failed(format!(
                        "{label}: association {i} failed to come up: {reason:?}{}",
                        raw_hint(cfg.kind)
                    )));
                }
                _ => {}
            }
        }
    }

    let mut meter = Meter::new(cfg, shared);
    pump(sock.endpoint_mut(), &mut flows, &cfg.payloads, label)?;
    let window = loop {
        let io = sock.io_stats();
        let wake = match meter.tick(Instant::now(), (io.packets_in, io.packets_out))? {
            Tick::Wake(at) => at,
            Tick::Done(m) => break m,
        };
        sock.drive(Some(wake))
            .await
            .map_err(|e| io_failed("client", e))?;
        let now = Instant::now();
        while let Some((id, ev)) = sock.endpoint_mut().poll_event() {
            let Some(&i) = index.get(&id) else { continue };
            match ev {
                Event::Message(m) => {
                    let ok = cfg.payloads.check(&m.data).is_some_and(|(flow, seq)| {
                        flow == i && m.ppid == NGAP_PPID && m.stream == stream_for(seq)
                    });
                    meter.echo(ok, m.stream, m.ppid, &m.data, now);
                    if let Some(f) = flows.get_mut(i as usize) {
                        f.credit += 1;
                    }
                }
                Event::Closed { reason } => {
                    return Err(BenchError::Failed(format!(
                        "{label}: association {i} closed during the run: {reason:?}{}",
                        raw_hint(cfg.kind)
                    )));
                }
                Event::Restarted => {
                    return Err(BenchError::Failed(format!(
                        "{label}: the server restarted association {i}"
                    )));
                }
                Event::Connected { .. } | Event::PeerError { .. } => {}
            }
        }
        pump(sock.endpoint_mut(), &mut flows, &cfg.payloads, label)?;
    };

    // RFC 9260 §9.2: leave with SHUTDOWN, bounded in time; the numbers are already taken.
    let now = Instant::now();
    for f in &flows {
        let _ = sock.endpoint_mut().shutdown(now, f.assoc);
    }
    let grace = now + SHUTDOWN_GRACE;
    while !sock.endpoint().is_empty() && Instant::now() < grace {
        sock.drive(Some(grace))
            .await
            .map_err(|e| io_failed("client", e))?;
        while sock.endpoint_mut().poll_event().is_some() {}
    }
    let stats = sock.endpoint().stats();
    Ok(ClientOut {
        window,
        retransmissions: stats.retransmissions,
        fast_retransmits: stats.fast_retransmits,
        bad_echoes: meter.bad,
        pinned: false,
        samples: meter.samples,
    })
}

/// A raw protocol-132 socket on the wildcard address sees our packets too, and a stack that
/// answers out-of-the-blue packets for ports it does not own (usrsctp does) ABORTs our
/// associations. A private network namespace keeps such neighbours out.
fn raw_hint(kind: Kind) -> &'static str {
    match kind {
        Kind::SctpRaw => {
            "; another raw SCTP stack on this host may be answering for our ports: run the \
             benchmark in its own network namespace, e.g. \
             unshare -n sh -c 'ip link set lo up && steer5g bench sctp'"
        }
        Kind::SctpUdp | Kind::PlainUdp => "",
    }
}

/// Sends what each association's window allows, until the send buffer pushes back.
fn pump(
    ep: &mut Endpoint,
    flows: &mut [Flow],
    payloads: &Payloads,
    label: &str,
) -> Result<(), BenchError> {
    for (i, f) in flows.iter_mut().enumerate() {
        while f.credit > 0 {
            let msg = payloads.message(i as u32, f.next_seq);
            match ep.send(f.assoc, stream_for(f.next_seq), NGAP_PPID, false, msg) {
                Ok(()) => {
                    f.credit -= 1;
                    f.next_seq += 1;
                }
                Err(SendError::Full) => break,
                Err(e) => {
                    return Err(BenchError::Failed(format!(
                        "{label}: send on association {i}: {e}"
                    )))
                }
            }
        }
    }
    Ok(())
}

async fn udp_client(
    transport: Transport,
    cfg: &CaseConfig,
    shared: Arc<Shared>,
    server: SocketAddr,
) -> Result<ClientOut, BenchError> {
    let mut meter = Meter::new(cfg, shared);
    let mut next_seq = vec![0u64; cfg.assocs as usize];
    let mut credit = vec![cfg.window; cfg.assocs as usize];
    let mut buf = vec![0u8; 65_536];
    let mut msg = Vec::with_capacity(cfg.payloads.size(0).max(1) * 2);
    let (mut packets_in, mut packets_out) = (0u64, 0u64);
    let window = loop {
        let now = Instant::now();
        for (i, c) in credit.iter_mut().enumerate() {
            let Some(seq) = next_seq.get_mut(i) else {
                continue;
            };
            while *c > 0 {
                cfg.payloads.write(i as u32, *seq, &mut msg);
                transport
                    .send(server, &msg)
                    .await
                    .map_err(|e| io_failed("client", e))?;
                packets_out += 1;
                *c -= 1;
                *seq += 1;
            }
        }
        let wake = match meter.tick(now, (packets_in, packets_out))? {
            Tick::Wake(at) => at,
            Tick::Done(m) => break m,
        };
        let recv = transport.recv_batch(&mut buf, RECV_BATCH, |_from, p| {
            let flow = cfg.payloads.check(p).map(|(flow, _)| flow);
            let slot = flow.and_then(|f| credit.get_mut(f as usize));
            let ok = slot.is_some();
            if let Some(c) = slot {
                *c += 1;
            }
            meter.echo(ok, 0, 0, p, Instant::now());
        });
        tokio::select! {
            r = recv => { packets_in += r.map_err(|e| io_failed("client", e))? as u64; }
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(wake)) => {}
        }
    };
    Ok(ClientOut {
        window,
        bad_echoes: meter.bad,
        samples: std::mem::take(&mut meter.samples),
        ..ClientOut::default()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sizes_cycle_over_the_range() {
        let p = Payloads::new(100, 300);
        let sizes: Vec<usize> = (0..402).map(|s| p.size(s)).collect();
        assert_eq!(sizes[0], 100);
        assert_eq!(sizes[200], 300);
        assert_eq!(sizes[201], 100);
        assert_eq!(*sizes.iter().min().unwrap(), 100);
        assert_eq!(*sizes.iter().max().unwrap(), 300);
        let fixed = Payloads::new(200, 200);
        assert!((0..10).all(|s| fixed.size(s) == 200));
    }

    #[test]
    fn payload_check_catches_changes() {
        let p = Payloads::new(100, 300);
        let m = p.message(3, 57);
        assert_eq!(m.len(), 157);
        assert_eq!(p.check(&m), Some((3, 57)));
        let mut flipped = m.to_vec();
        flipped[120] ^= 1;
        assert_eq!(p.check(&flipped), None);
        assert_eq!(p.check(&m[..156]), None);
        assert_eq!(p.check(&m[..5]), None);
        assert_eq!(p.check(&[]), None);
        // The sequence number decides the size: a header naming another message fails.
        let mut other = m.to_vec();
        other[11] = 58;
        assert_eq!(p.check(&other), None);
    }

    fn silent_peer_case(kind: Kind) -> CaseConfig {
        CaseConfig {
            kind,
            assocs: 2,
            window: 4,
            payloads: Payloads::new(100, 300),
            warmup: Duration::from_millis(50),
            duration: Duration::from_secs(30),
            association: AssociationConfig::default(),
            cores: None,
            keep_samples: 0,
            stall: Duration::from_millis(300),
        }
    }

    /// Runs the client alone against a UDP socket that never answers.
    fn against_silent_peer(kind: Kind) -> (Result<ClientOut, BenchError>, Duration) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let peer = silent.local_addr().unwrap();
            let started = Instant::now();
            let cfg = silent_peer_case(kind);
            let r = client_main(cfg, Arc::new(Shared::default()), peer, false).await;
            (r, started.elapsed())
        })
    }

    /// The `kind` client against a silent peer fails, saying `why`, well before the case
    /// would have ended.
    fn gives_up(kind: Kind, why: &str) {
        let (r, took) = against_silent_peer(kind);
        let e = r.unwrap_err();
        assert!(matches!(e, BenchError::Failed(_)), "{e}");
        assert!(e.to_string().contains(why), "{e}");
        assert!(took < Duration::from_secs(5), "took {took:?}");
    }

    #[test]
    fn plain_udp_client_gives_up_when_nothing_comes_back() {
        gives_up(Kind::PlainUdp, "no echo for");
    }

    #[test]
    fn sctp_client_gives_up_when_no_association_comes_up() {
        gives_up(Kind::SctpUdp, "0 of 2 associations came up");
    }

    #[test]
    fn streams_rotate() {
        let s: Vec<u16> = (0..6).map(stream_for).collect();
        assert_eq!(s, vec![0, 1, 2, 3, 0, 1]);
    }
}
