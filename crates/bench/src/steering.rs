//! `steer5g bench steering`: what it costs, per message, to get a message to the worker that
//! owns it, for every delivery path (kernel-steered, client-steered, one-hop hand-off), measured
//! in one run on the same messages, and the SCTP hand-off cost by messages per packet.
//!
//! The paths, each with `--workers` workers and the same `--size`-byte messages written
//! `--batch` at a time:
//!
//! | case | transport | how a message reaches its owner |
//! |---|---|---|
//! | `kernel-udp` | UDP | `sk_reuseport` program picks the owner's socket (steer-bpf group) |
//! | `one-hop-udp` | UDP | one socket, read by worker 0, handed over the mesh |
//! | `pool-tcp` | TCP | one connection per worker, bound to an owner source port; the client writes each message on its owner's connection |
//! | `one-hop-tcp` | TCP | one connection, read by worker 0, split, handed over the mesh |
//! | `sockmap-tcp` | TCP | one connection, split in the kernel (sockmap + strparser) into unix sockets |
//!
//! Cost is the CPU time of every thread of the case (sender and workers) divided by the
//! messages; the kernel work done in those threads' syscalls and softirqs is in it, the
//! sockmap kworker's is not (reported separately from /proc/stat's system-wide busy time,
//! which also catches other jobs on a shared machine). The one-hop baselines use the same
//! transport as the path they are compared with, so a ratio isolates the steering.
//!
//! The SCTP part carries K = 1, 2, 4, 8, 16 messages per packet on one association (the
//! crates/sctp state machine over UDP encapsulation, RFC 6951), read by worker 0, which either
//! handles every message itself or hands the ones it does not own to worker 1; the difference
//! per handed-off message is the hand-off's cost at that bundling.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;
use cpu_time::ThreadTime;
use ids::{WorkerId, Workers};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use socket2::SockRef;
use steer::mesh::Mesh;
use steer_bpf::stream::{encode_header, FrameReader, HEADER_LEN};
use steer_bpf::{GroupOptions, IdSpec, ReuseportGroup, StreamSteering};

use super::lockecho::mmsg;
use super::lockecho::{RealtimeGuard, REALTIME_CLIENT, REALTIME_WORKER};
use super::machine::Machine;
use super::sweep::{self, shown, Axis, Out, Sweep, SweepArgs};

use crate::BenchError;

/// The target the report checks: kernel- and pool-steered paths at least this much cheaper
/// per message than the one-hop path over the same transport.
const TARGET_RATIO: f64 = 1.3;
/// Bytes every message starts with: the stream header (length, app id) and the message
/// number, which receivers use to check that each message arrived once, at its owner.
const MIN_SIZE: usize = HEADER_LEN + 4;
/// Datagrams in flight at most on the UDP paths, so that no socket buffer overflows.
const UDP_WINDOW: u64 = 2048;
/// Mesh queue depth between two workers.
const MESH_CAPACITY: usize = 4096;
/// SCTP: the packet size of the bench association (Ethernet MTU less IPv4 and UDP headers).
const SCTP_PMTU: usize = 1500 - 20 - 8;
/// NGAP's payload protocol identifier (TS 38.412 §7).
const NGAP_PPID: u32 = 60;

/// `steer5g bench steering`.
#[derive(Debug, Args)]
#[command(mut_arg("workers", |a| shown(a, Some("2"), "Workers each message is steered among.")
    .value_name("WORKERS")))]
#[command(mut_arg("rounds", |a| shown(a, Some("3"),
    "Measure everything this many times, interleaved; each case reports its median round.")))]
#[command(mut_arg("out", |a| shown(a, Some("bench-results"),
    "Directory for steering.json, steering.csv, steering-sctp.csv and steering.svg.")))]
pub struct SteeringArgs {
    /// Messages per case.
    #[arg(long, default_value_t = 200_000, value_name = "N")]
    pub(crate) messages: u64,
    /// Bytes per message, header included (NGAP-sized by default).
    #[arg(long, default_value_t = 64, value_name = "BYTES")]
    pub(crate) size: usize,
    /// Messages per system call: per write on the stream paths, per sendmmsg and (at most)
    /// per recvmmsg on UDP. A comma-separated list sweeps them; every path runs at every
    /// batch and the ratios are per batch.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,8,64",
        value_name = "LIST"
    )]
    pub(crate) batch: Vec<usize>,
    /// The paths to measure, comma-separated (kernel-udp, one-hop-udp, pool-tcp,
    /// one-hop-tcp, sockmap-tcp); default all. A ratio needs both of its cases.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub(crate) paths: Vec<String>,
    /// SCTP messages per packet to measure, comma-separated (empty: skip SCTP).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8,16",
        value_name = "LIST"
    )]
    pub(crate) sctp_k: Vec<usize>,
    /// Give up on a case that has not finished after this many seconds.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub(crate) timeout: f64,
    /// Run every case's workers SCHED_FIFO (priority 1) and its sender above them (2), as
    /// `bench echo --realtime`: ordinary jobs cannot take their cores, and a batch the
    /// sender writes leaves whole. Needs CAP_SYS_NICE (exit 3). Each case stays bounded by
    /// `--timeout`.
    #[arg(long)]
    pub(crate) realtime: bool,
    /// `--workers`, `--rounds`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

/// The settings every case shared.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Settings {
    pub(crate) messages: u64,
    pub(crate) size: usize,
    /// Messages per system call, one sweep point each.
    pub(crate) batch: Vec<usize>,
    /// The paths measured.
    pub(crate) paths: Vec<&'static str>,
    /// Workers SCHED_FIFO 1 and sender SCHED_FIFO 2 (`--realtime`).
    pub(crate) realtime: bool,
    pub(crate) workers: u16,
    pub(crate) sctp_k: Vec<usize>,
    pub(crate) rounds: u32,
    pub(crate) udp_window: u64,
    pub(crate) mesh_capacity: usize,
}

/// One measured path.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CaseReport {
    pub(crate) case: &'static str,
    pub(crate) transport: &'static str,
    /// Messages per send system call (and at most per receive call on UDP).
    pub(crate) batch: usize,
    pub(crate) messages: u64,
    pub(crate) elapsed_s: f64,
    pub(crate) msgs_per_s: f64,
    /// CPU time of all the case's threads per message: the figure the ratios use.
    pub(crate) cpu_ns_per_msg: f64,
    pub(crate) sender_cpu_ns_per_msg: f64,
    pub(crate) workers_cpu_ns_per_msg: f64,
    /// System-wide busy CPU time per message (/proc/stat): includes kworkers and softirqs
    /// run outside the case's threads, and anything else the machine was doing.
    pub(crate) system_cpu_ns_per_msg: Option<f64>,
    /// Messages the kernel delivered straight to their owner (program counters).
    pub(crate) kernel_steered: u64,
    /// Messages a worker handed to another over the mesh.
    pub(crate) handed_off: u64,
    /// Messages steered by the client (pool path).
    pub(crate) client_steered: u64,
    /// Kernel fallbacks (no id, missing socket, redirect failure): must be 0.
    pub(crate) fallbacks: u64,
    /// Receive system calls of all workers that returned messages.
    pub(crate) receive_calls: u64,
    /// Times a worker found nothing to do and went to sleep (poll, mesh wait), all workers.
    pub(crate) waits: u64,
    /// Messages per receive call that returned messages.
    pub(crate) msgs_per_receive_call: f64,
    /// Messages per wait (how many messages each wake-up paid for).
    pub(crate) msgs_per_wait: f64,
    /// One-hop paths: mesh messages sent (each carries a batch of handed-off messages).
    pub(crate) handoff_sends: u64,
    /// CPU ns per message of every round, in the order run.
    pub(crate) rounds_cpu_ns_per_msg: Vec<f64>,
}

/// One SCTP bundling factor and mode.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SctpReport {
    /// Messages queued per packet.
    pub(crate) k: usize,
    /// `local` or `hand-off`.
    pub(crate) mode: &'static str,
    pub(crate) messages: u64,
    /// DATA-carrying packets the reader received (SACK-only packets excluded on the sender
    /// side, as there are none).
    pub(crate) packets: u64,
    /// Measured messages per received packet.
    pub(crate) msgs_per_packet: f64,
    pub(crate) elapsed_s: f64,
    pub(crate) msgs_per_s: f64,
    /// Reader + owner CPU per message.
    pub(crate) workers_cpu_ns_per_msg: f64,
    pub(crate) sender_cpu_ns_per_msg: f64,
    pub(crate) handed_off: u64,
    pub(crate) rounds_workers_cpu_ns_per_msg: Vec<f64>,
}

/// Hand-off cost at one bundling factor.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SctpHandoff {
    pub(crate) k: usize,
    pub(crate) msgs_per_packet: f64,
    pub(crate) local_ns_per_msg: f64,
    pub(crate) handoff_ns_per_msg: f64,
    /// Extra CPU per handed-off message.
    pub(crate) ns_per_handed_off_msg: f64,
}

/// A ratio of one-hop cost to a steered path's cost over the same transport.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Ratio {
    pub(crate) name: &'static str,
    /// The batch both cases ran at.
    pub(crate) batch: usize,
    pub(crate) baseline: &'static str,
    pub(crate) path: &'static str,
    /// baseline CPU ns per message / path CPU ns per message (> 1: the path is cheaper).
    pub(crate) cpu_ratio: f64,
    /// path msgs/s / baseline msgs/s.
    pub(crate) rate_ratio: f64,
    /// Whether this ratio is one the report checks against [`TARGET_RATIO`].
    pub(crate) targeted: bool,
    pub(crate) meets_target: bool,
}

/// The content of steering.json and of `--json`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SteeringReport {
    pub(crate) scenario: &'static str,
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) settings: Settings,
    pub(crate) cases: Vec<CaseReport>,
    pub(crate) ratios: Vec<Ratio>,
    pub(crate) sctp: Vec<SctpReport>,
    pub(crate) sctp_handoff: Vec<SctpHandoff>,
    pub(crate) target_ratio: f64,
    /// Every targeted ratio met at every batch.
    pub(crate) meets_target: bool,
    /// The batches at which both targeted ratios were met.
    pub(crate) met_at_batches: Vec<usize>,
}

/// What every path's run hands back.
#[derive(Debug, Default, Clone)]
struct Outcome {
    messages: u64,
    elapsed: Duration,
    sender_cpu: Duration,
    workers_cpu: Duration,
    system_busy: Option<Duration>,
    kernel_steered: u64,
    handed_off: u64,
    client_steered: u64,
    fallbacks: u64,
    packets: u64,
    rx: RxStats,
    handoff_sends: u64,
}

impl Outcome {
    /// The figures every path measures: `messages` in `elapsed`, the CPU of the sender and
    /// of the workers, what the workers' receives looked like, and the machine's busy time
    /// since `busy0` (read now, as the case is being summed up).
    fn measured(
        messages: u64,
        elapsed: Duration,
        busy0: Option<Duration>,
        (sender_cpu, workers_cpu): (Duration, Duration),
        rx: RxStats,
    ) -> Outcome {
        Outcome {
            messages,
            elapsed,
            sender_cpu,
            workers_cpu,
            system_busy: busy_since(busy0),
            rx,
            ..Outcome::default()
        }
    }

    /// What a one-hop path measured: [`Outcome::measured`] plus worker 0's hand-offs.
    fn one_hop(
        messages: u64,
        elapsed: Duration,
        busy0: Option<Duration>,
        run: OneHopRun,
    ) -> Outcome {
        Outcome {
            handed_off: run.handed,
            handoff_sends: run.sends,
            ..Outcome::measured(
                messages,
                elapsed,
                busy0,
                (run.sender_cpu, run.workers_cpu),
                run.rx,
            )
        }
    }
}

/// How the workers of a case received: the wake-up pattern the cost depends on.
#[derive(Debug, Default, Clone, Copy)]
struct RxStats {
    /// Receive system calls that returned messages.
    calls: u64,
    /// Times a worker had nothing and waited (poll or mesh wait).
    waits: u64,
}

impl RxStats {
    fn add(&mut self, o: RxStats) {
        self.calls += o.calls;
        self.waits += o.waits;
    }
}

/// The paths, in the order run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    KernelUdp,
    OneHopUdp,
    PoolTcp,
    OneHopTcp,
    SockmapTcp,
}

impl Route {
    const ALL: [Route; 5] = [
        Route::KernelUdp,
        Route::OneHopUdp,
        Route::PoolTcp,
        Route::OneHopTcp,
        Route::SockmapTcp,
    ];

    fn label(self) -> &'static str {
        match self {
            Route::KernelUdp => "kernel-udp",
            Route::OneHopUdp => "one-hop-udp",
            Route::PoolTcp => "pool-tcp",
            Route::OneHopTcp => "one-hop-tcp",
            Route::SockmapTcp => "sockmap-tcp",
        }
    }

    fn transport(self) -> &'static str {
        match self {
            Route::KernelUdp | Route::OneHopUdp => "udp",
            _ => "tcp",
        }
    }
}

/// The app id of message `k`: spread over the 32-bit space so owners interleave.
fn app_id(k: u64) -> u32 {
    (k as u32).wrapping_mul(2_654_435_761) ^ 0x5bd1_e995
}

fn owner(id: u32, workers: u16) -> usize {
    (id % u32::from(workers.max(1))) as usize
}

/// The messages of a case, back to back, each `size` bytes.
struct Messages {
    bytes: Vec<u8>,
    size: usize,
    count: u64,
}

impl Messages {
    fn new(count: u64, size: usize) -> Self {
        let mut bytes = Vec::with_capacity(size.saturating_mul(count as usize));
        for k in 0..count {
            let start = bytes.len();
            bytes.extend_from_slice(&encode_header(size as u32, app_id(k)));
            bytes.extend_from_slice(&(k as u32).to_be_bytes());
            bytes.resize(start + size, (k % 251) as u8);
        }
        Messages { bytes, size, count }
    }

    fn get(&self, k: u64) -> &[u8] {
        let s = k as usize * self.size;
        self.bytes.get(s..s + self.size).unwrap_or_default()
    }

    /// Messages `from..to` as one slice.
    fn range(&self, from: u64, to: u64) -> &[u8] {
        let (s, e) = (from as usize * self.size, to as usize * self.size);
        self.bytes.get(s..e).unwrap_or_default()
    }

    /// Per worker: how many messages it owns and the wrapping sum of their numbers.
    fn expected(&self, workers: u16) -> Vec<(u64, u64)> {
        let mut e = vec![(0u64, 0u64); usize::from(workers)];
        for k in 0..self.count {
            if let Some(slot) = e.get_mut(owner(app_id(k), workers)) {
                slot.0 += 1;
                slot.1 = slot.1.wrapping_add(k);
            }
        }
        e
    }
}

/// What a worker did with its messages: the check that each arrived once, at its owner.
#[derive(Debug, Default, Clone, Copy)]
struct Sink {
    count: u64,
    sum: u64,
    misrouted: u64,
}

impl Sink {
    /// The work a worker does with a message it owns: check its owner, account for it.
    #[inline]
    fn handle(&mut self, msg: &[u8], me: usize, workers: u16) {
        let id = msg
            .get(4..8)
            .and_then(|b| b.try_into().ok())
            .map_or(u32::MAX, u32::from_be_bytes);
        let k = msg
            .get(8..12)
            .and_then(|b| b.try_into().ok())
            .map_or(u32::MAX, u32::from_be_bytes);
        if owner(id, workers) != me {
            self.misrouted += 1;
        }
        self.count += 1;
        self.sum = self.sum.wrapping_add(u64::from(k));
    }
}

/// Checks every worker's sink against the expected table.
fn check(label: &str, sinks: &[Sink], expected: &[(u64, u64)]) -> Result<(), BenchError> {
    for (w, (s, e)) in sinks.iter().zip(expected).enumerate() {
        if s.misrouted > 0 || (s.count, s.sum) != *e {
            return Err(BenchError::Failed(format!(
                "{label}: worker {w} got {} messages ({} misrouted), expected {}; sums {} vs {}",
                s.count, s.misrouted, e.0, s.sum, e.1
            )));
        }
    }
    Ok(())
}

fn failed(what: impl std::fmt::Display) -> BenchError {
    BenchError::Failed(what.to_string())
}

/// A steer-bpf error as the CLI reports it: a missing capability is exit status 3.
fn bpf_error(e: steer_bpf::Error) -> BenchError {
    match e {
        steer_bpf::Error::NotPermitted(_) => {
            BenchError::Privilege(format!("{e} (kernel steering needs CAP_BPF: run as root)"))
        }
        other => BenchError::Failed(other.to_string()),
    }
}

/// System-wide busy CPU time so far, from the first line of /proc/stat.
fn system_busy() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let f: Vec<u64> = line
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
    let busy: u64 = f
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4 && *i < 8)
        .map(|(_, v)| *v)
        .sum();
    // USER_HZ is 100 on Linux.
    Some(Duration::from_millis(busy.saturating_mul(10)))
}

/// Runs `f` on a scoped thread and returns its result and CPU time.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = ThreadTime::now();
    let r = f();
    (r, t.elapsed())
}

/// Runs the sender of a case on the calling thread, timed; with `--realtime` it runs at the
/// client priority (above the workers, as `bench echo`'s client) and the thread goes back to
/// the workers' priority afterwards (the caller holds a [`RealtimeGuard`] for the case).
fn sender_timed<T>(a: &CaseArgs, f: impl FnOnce() -> T) -> (T, Duration) {
    if a.realtime {
        if let Err(e) = mmsg::set_fifo(REALTIME_CLIENT) {
            tracing::warn!("sender stays at the workers' priority: {e}");
        }
    }
    let r = timed(f);
    if a.realtime {
        if let Err(e) = mmsg::set_fifo(REALTIME_WORKER) {
            tracing::warn!("cannot lower the sender's priority: {e}");
        }
    }
    r
}

/// Every message of a hand-off batch: the batch is messages back to back, each framed by
/// its header (total length first), as they came off the wire.
fn frames(batch: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = batch;
    std::iter::from_fn(move || {
        let (len, _) = steer_bpf::stream::decode_header(rest)?;
        if len < HEADER_LEN || len > rest.len() {
            return None;
        }
        let (m, r) = rest.split_at(len);
        rest = r;
        Some(m)
    })
}

/// The one-hop owner workers (1..W): park on the mesh, drain, handle every message of each
/// hand-off batch, until each has its expected count or the deadline passes.
fn owner_loop(
    mut end: steer::mesh::MeshEnd<Vec<u8>>,
    want: u64,
    workers: u16,
    deadline: Instant,
) -> Result<(Sink, RxStats, Duration), BenchError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| failed(format!("owner runtime: {e}")))?;
    let me = end.id().index();
    let t = ThreadTime::now();
    let (sink, rx) = rt.block_on(async {
        let mut sink = Sink::default();
        let mut rx = RxStats::default();
        while sink.count < want {
            if Instant::now() > deadline {
                return Err(failed(format!(
                    "worker {me}: {} of {want} handed-off messages by the deadline",
                    sink.count
                )));
            }
            if !end.has_ready() {
                rx.waits += 1;
                let _ = tokio::time::timeout(Duration::from_millis(200), end.recv_ready()).await;
            }
            rx.calls += 1;
            end.drain(|_, batch| {
                for m in frames(&batch) {
                    sink.handle(m, me, workers);
                }
            });
        }
        Ok((sink, rx))
    })?;
    Ok((sink, rx, t.elapsed()))
}

/// Worker 0 of a one-hop path: handles its own messages, and gathers every other worker's
/// into one buffer per owner that goes over the mesh once per receive call ([`flush`]), so
/// the hop is paid per batch as the transport delivered it, not per message (what a one-hop
/// design would do; one `Vec` and one queue push per batch and owner).
///
/// [`flush`]: Handoff::flush
struct Handoff {
    pending: Vec<Vec<u8>>,
    workers: u16,
    /// Messages handed to another worker.
    handed: u64,
    /// Mesh messages sent.
    sends: u64,
}

impl Handoff {
    fn new(workers: u16) -> Self {
        Handoff {
            pending: vec![Vec::new(); usize::from(workers)],
            workers,
            handed: 0,
            sends: 0,
        }
    }

    /// Handles `msg` when worker 0 owns it, else queues it for its owner.
    #[inline]
    fn dispatch(&mut self, sink: &mut Sink, msg: &[u8]) {
        let id = msg
            .get(4..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_be_bytes);
        let w = owner(id, self.workers);
        if w == 0 {
            sink.handle(msg, 0, self.workers);
        } else if let Some(p) = self.pending.get_mut(w) {
            p.extend_from_slice(msg);
            self.handed += 1;
        }
    }

    /// Sends every owner's gathered messages as one mesh message.
    fn flush(
        &mut self,
        end: &mut steer::mesh::MeshEnd<Vec<u8>>,
        deadline: Instant,
    ) -> Result<(), BenchError> {
        for (w, p) in self.pending.iter_mut().enumerate() {
            if p.is_empty() {
                continue;
            }
            let mut m = std::mem::take(p);
            let to = WorkerId(w as u16);
            loop {
                match end.send(to, m) {
                    Ok(()) => break,
                    Err(e) => {
                        if Instant::now() > deadline {
                            return Err(failed(format!("worker {w} stopped draining its queue")));
                        }
                        m = e.into_inner();
                        std::thread::yield_now();
                    }
                }
            }
            self.sends += 1;
        }
        Ok(())
    }
}

/// One worker's count of datagrams read, alone on its cache lines so that workers counting
/// never contend (the flow control must not add a cost that differs between the paths).
#[derive(Debug, Default)]
#[repr(align(128))]
struct ReadCount(AtomicU64);

impl ReadCount {
    /// Single writer: a load and a store, no read-modify-write.
    fn add(&self, n: u64) {
        self.0
            .store(self.0.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }
}

fn total_read(counts: &[ReadCount]) -> u64 {
    counts.iter().map(|c| c.0.load(Ordering::Relaxed)).sum()
}

/// Sends every message as its own datagram, `batch` per `sendmmsg`, keeping at most
/// [`UDP_WINDOW`] ahead of what the workers have read. `sock` is connected to the server.
fn udp_sender(
    sock: &UdpSocket,
    msgs: &Messages,
    batch: usize,
    read: &[ReadCount],
    deadline: Instant,
    progress: &ProgressBar,
) -> Result<(), BenchError> {
    let mut k = 0u64;
    let mut out: Vec<&[u8]> = Vec::with_capacity(batch);
    while k < msgs.count {
        while k.saturating_sub(total_read(read)) > UDP_WINDOW {
            if Instant::now() > deadline {
                return Err(failed(format!(
                    "UDP: workers stopped reading ({} of {k} sent)",
                    total_read(read)
                )));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        let end = (k + batch as u64).min(msgs.count);
        out.clear();
        out.extend((k..end).map(|j| msgs.get(j)));
        let mut sent = 0;
        while sent < out.len() {
            let n = mmsg::send_batch(sock, out.get(sent..).unwrap_or_default()).map_err(failed)?;
            if n == 0 {
                // The send buffer is full (not on loopback in practice): let it drain.
                if Instant::now() > deadline {
                    return Err(failed("UDP: send buffer stuck"));
                }
                std::thread::yield_now();
            }
            sent += n;
        }
        k = end;
        progress.set_position(k);
    }
    Ok(())
}

fn udp_receiver_socket(s: &UdpSocket) -> Result<(), BenchError> {
    // Root may go beyond rmem_max; the window keeps the queue far below this anyway.
    let _ = SockRef::from(s).set_recv_buffer_size(8 << 20);
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(failed)
}

/// Reads datagrams the way the core's workers do (an event loop over a non-blocking socket):
/// one wait until the socket is readable, then everything queued is drained without
/// blocking, up to `batch` datagrams per `recvmmsg`, so a wake-up is paid per burst, not per
/// datagram, in every UDP case alike. `on` gets each datagram and whether it is the last of
/// its receive call; it returns true when the reader has all it expects.
fn drain_udp(
    s: &UdpSocket,
    batch: usize,
    deadline: Instant,
    what: &str,
    rx: &mut RxStats,
    mut on: impl FnMut(&[u8], bool) -> Result<bool, BenchError>,
) -> Result<(), BenchError> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    s.set_nonblocking(true).map_err(failed)?;
    let want = batch.clamp(1, mmsg::MAX_BATCH);
    let mut bufs = vec![[0u8; 2048]; want];
    let mut lens = vec![0usize; want];
    loop {
        let n = mmsg::recv_batch(s, &mut bufs, &mut lens)
            .map_err(|e| failed(format!("{what}: {e}")))?;
        if n > 0 {
            rx.calls += 1;
            let mut done = false;
            for (i, (b, &l)) in bufs.iter().zip(&lens).take(n).enumerate() {
                done = on(b.get(..l).unwrap_or_default(), i + 1 == n)?;
            }
            if done {
                return Ok(());
            }
            continue;
        }
        if Instant::now() > deadline {
            return Err(failed(format!("{what}: datagrams missing at the deadline")));
        }
        rx.waits += 1;
        let mut fds = [PollFd::new(s.as_fd(), PollFlags::POLLIN)];
        // A timeout or EINTR just loops back to the deadline check.
        let _ = poll(&mut fds, PollTimeout::from(200u16));
    }
}

fn kernel_udp(
    msgs: &Messages,
    a: &CaseArgs,
    progress: &ProgressBar,
) -> Result<Outcome, BenchError> {
    let spec = IdSpec::new(4, 4, 0).map_err(bpf_error)?;
    let group = ReuseportGroup::bind_udp(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        a.workers,
        spec,
        &GroupOptions { require_bpf: true },
    )
    .map_err(bpf_error)?;
    let to = group.local_addr();
    let (sockets, steering) = group.into_parts();
    let steering = steering.ok_or_else(|| failed("UDP group not steered"))?;
    for s in &sockets {
        udp_receiver_socket(s)?;
    }
    let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(failed)?;
    client.connect(to).map_err(failed)?;
    let expected = msgs.expected(a.workers);
    let read: Vec<ReadCount> = sockets.iter().map(|_| ReadCount::default()).collect();
    let deadline = a.deadline();
    let busy0 = system_busy();
    let start = Instant::now();
    let (sinks, rx, cpu) = run_owners(
        a,
        sockets.iter().zip(&read),
        &expected,
        |w, (sock, read), want| {
            let mut sink = Sink::default();
            let mut rx = RxStats::default();
            if want > 0 {
                drain_udp(sock, a.batch, deadline, "kernel-udp", &mut rx, |msg, _| {
                    sink.handle(msg, w, a.workers);
                    read.add(1);
                    Ok(sink.count >= want)
                })?;
            }
            Ok((sink, rx))
        },
        || udp_sender(&client, msgs, a.batch, &read, deadline, progress),
    )?;
    let elapsed = start.elapsed();
    check("kernel-udp", &sinks, &expected)?;
    let c = steering.counters().map_err(bpf_error)?;
    Ok(Outcome {
        kernel_steered: c.steered,
        fallbacks: c.fallbacks(),
        ..Outcome::measured(msgs.count, elapsed, busy0, cpu, rx)
    })
}

fn busy_since(before: Option<Duration>) -> Option<Duration> {
    Some(system_busy()?.saturating_sub(before?))
}

type WorkerResult = (Result<(Sink, RxStats), BenchError>, Duration);

/// What the owners of a case hand back once joined: their sinks in worker order, their
/// receive counts summed, and the CPU of the sender and of all the owners.
type Joined = (Vec<Sink>, RxStats, (Duration, Duration));

/// Joins worker threads, adds their CPU and receive counts, and surfaces the first error.
fn join_all(
    workers: Vec<std::thread::ScopedJoinHandle<'_, WorkerResult>>,
    sent: Result<(), BenchError>,
    sender_cpu: Duration,
) -> Result<Joined, BenchError> {
    let mut sinks = Vec::new();
    let mut rx = RxStats::default();
    let mut cpu = Duration::ZERO;
    let mut first_err = sent.err();
    for h in workers {
        match h.join() {
            Ok((Ok((sink, r)), t)) => {
                sinks.push(sink);
                rx.add(r);
                cpu += t;
            }
            Ok((Err(e), _)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(failed("a worker thread panicked"));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok((sinks, rx, (sender_cpu, cpu))),
    }
}

/// Runs one owner thread per item beside `sender` (on this thread), and joins them: owner
/// `w` runs `owner(w, item, want)`, `want` being the messages it is expected to receive.
fn run_owners<T: Send>(
    a: &CaseArgs,
    items: impl IntoIterator<Item = T>,
    expected: &[(u64, u64)],
    owner: impl Fn(usize, T, u64) -> Result<(Sink, RxStats), BenchError> + Sync,
    sender: impl FnOnce() -> Result<(), BenchError>,
) -> Result<Joined, BenchError> {
    let owner = &owner;
    std::thread::scope(|s| {
        let workers: Vec<_> = items
            .into_iter()
            .zip(expected)
            .enumerate()
            .map(|(w, (item, e))| {
                let want = e.0;
                s.spawn(move || timed(|| owner(w, item, want)))
            })
            .collect();
        let (sent, sender_cpu) = sender_timed(a, sender);
        join_all(workers, sent, sender_cpu)
    })
}

/// Runs one owner per stream beside `sender`: owner `w` reads the framed messages it expects
/// off `streams[w]` into its sink, as [`read_frames`] does.
fn stream_owners<T>(
    route: Route,
    msgs: &Messages,
    a: &CaseArgs,
    streams: &[T],
    expected: &[(u64, u64)],
    deadline: Instant,
    sender: impl FnOnce() -> Result<(), BenchError>,
) -> Result<Joined, BenchError>
where
    T: std::os::fd::AsFd + Sync,
    for<'x> &'x T: Read,
{
    // Blocking reads on the sockmap's targets: they report EAGAIN early (KERNEL.md §2.2),
    // so readiness from poll is not relied on there.
    let polled = route != Route::SockmapTcp;
    run_owners(
        a,
        streams,
        expected,
        |w, sock, want| {
            let mut sink = Sink::default();
            let mut rx = RxStats::default();
            read_frames(
                sock,
                a.batch * msgs.size,
                want,
                deadline,
                route.label(),
                polled,
                &mut rx,
                |m| {
                    sink.handle(m, w, a.workers);
                    Ok(())
                },
                || Ok(()),
            )?;
            Ok((sink, rx))
        },
        sender,
    )
}

/// What a one-hop run hands back: every sink (worker 0's first), receive counts, sender
/// and workers CPU, and worker 0's hand-off counts.
struct OneHopRun {
    sinks: Vec<Sink>,
    rx: RxStats,
    sender_cpu: Duration,
    workers_cpu: Duration,
    handed: u64,
    sends: u64,
}

/// The owner threads of a one-hop path plus worker 0's `reader`, joined.
fn one_hop<R>(
    msgs: &Messages,
    a: &CaseArgs,
    reader: R,
    sender: impl FnOnce() -> Result<(), BenchError> + Send,
) -> Result<OneHopRun, BenchError>
where
    R: FnOnce(
            &mut steer::mesh::MeshEnd<Vec<u8>>,
            u64,
        ) -> Result<(Sink, Handoff, RxStats), BenchError>
        + Send,
{
    let workers = Workers::new(a.workers).ok_or_else(|| failed("bad worker count"))?;
    let expected = msgs.expected(a.workers);
    let mesh: Mesh<Vec<u8>> = Mesh::new(workers, MESH_CAPACITY);
    let mut ends = mesh.into_ends().into_iter();
    let mut first = ends.next().ok_or_else(|| failed("mesh without workers"))?;
    let deadline = a.deadline();
    let total = msgs.count;
    std::thread::scope(|s| {
        let owners: Vec<_> = ends
            .zip(expected.iter().skip(1))
            .map(|(end, e)| {
                let want = e.0;
                s.spawn(move || match owner_loop(end, want, a.workers, deadline) {
                    Ok((sink, rx, t)) => (Ok((sink, rx)), t),
                    Err(e) => (Err(e), Duration::ZERO),
                })
            })
            .collect();
        let w0 = s.spawn(move || timed(|| reader(&mut first, total)));
        let (sent, sender_cpu) = sender_timed(a, sender);
        let (r0, t0) = w0
            .join()
            .unwrap_or_else(|_| (Err(failed("worker 0 panicked")), Duration::ZERO));
        let (sink0, handoff, rx0) = r0?;
        let (mut sinks, mut rx, (sender_cpu, cpu)) = join_all(owners, sent, sender_cpu)?;
        sinks.insert(0, sink0);
        rx.add(rx0);
        Ok(OneHopRun {
            sinks,
            rx,
            sender_cpu,
            workers_cpu: cpu + t0,
            handed: handoff.handed,
            sends: handoff.sends,
        })
    })
}

fn one_hop_udp(
    msgs: &Messages,
    a: &CaseArgs,
    progress: &ProgressBar,
) -> Result<Outcome, BenchError> {
    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(failed)?;
    udp_receiver_socket(&sock)?;
    let to = sock.local_addr().map_err(failed)?;
    let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(failed)?;
    client.connect(to).map_err(failed)?;
    let read = [ReadCount::default()];
    let deadline = a.deadline();
    let busy0 = system_busy();
    let start = Instant::now();
    let workers = a.workers;
    let run = one_hop(
        msgs,
        a,
        |end, total| {
            let mut sink = Sink::default();
            let mut handoff = Handoff::new(workers);
            let mut rx = RxStats::default();
            let mut seen = 0u64;
            if total > 0 {
                drain_udp(
                    &sock,
                    a.batch,
                    deadline,
                    "one-hop-udp",
                    &mut rx,
                    |msg, last| {
                        seen += 1;
                        read[0].add(1);
                        handoff.dispatch(&mut sink, msg);
                        if last {
                            handoff.flush(end, deadline)?;
                        }
                        Ok(seen >= total)
                    },
                )?;
                handoff.flush(end, deadline)?;
            }
            Ok((sink, handoff, rx))
        },
        || udp_sender(&client, msgs, a.batch, &read, deadline, progress),
    )?;
    let elapsed = start.elapsed();
    check("one-hop-udp", &run.sinks, &msgs.expected(a.workers))?;
    Ok(Outcome::one_hop(msgs.count, elapsed, busy0, run))
}

/// Reads framed messages from a stream until `want` came, giving each to `f` and calling
/// `after_read` once the messages of a read are handled. With `polled` the stream is read as
/// the core's event loops do (non-blocking until it would block, then `poll`), and every
/// poll counts as a wait; without, reads block (with the stream's read timeout).
///
/// A read takes at most `max_read` bytes (the batch's worth of messages): a stream reader
/// otherwise takes whatever has piled up, so a reader that falls behind reads hundreds of
/// messages per call and one that keeps up reads one write's worth, and the cost per
/// message follows who fell behind rather than the path (the instability of the first
/// runs). Capped, every stream path's receive call carries at most `batch` messages, as
/// `recvmmsg` does on UDP.
#[allow(clippy::too_many_arguments)]
fn read_frames<S: Read + std::os::fd::AsFd>(
    mut sock: S,
    max_read: usize,
    want: u64,
    deadline: Instant,
    what: &str,
    polled: bool,
    rx: &mut RxStats,
    mut f: impl FnMut(&[u8]) -> Result<(), BenchError>,
    mut after_read: impl FnMut() -> Result<(), BenchError>,
) -> Result<(), BenchError> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut r = FrameReader::new();
    let mut buf = vec![0u8; max_read.clamp(HEADER_LEN, 1 << 16)];
    let mut got = 0u64;
    while got < want {
        let n = match sock.read(&mut buf) {
            Ok(0) => {
                return Err(failed(format!(
                    "{what}: stream closed after {got} messages"
                )))
            }
            Ok(n) => n,
            // Nothing queued (polled), read timeouts, and the early EAGAIN of a sockmap
            // target (KERNEL.md §2.2).
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if Instant::now() > deadline {
                    return Err(failed(format!(
                        "{what}: {got} of {want} messages by the deadline"
                    )));
                }
                rx.waits += 1;
                if polled {
                    let mut fds = [PollFd::new(sock.as_fd(), PollFlags::POLLIN)];
                    let _ = poll(&mut fds, PollTimeout::from(200u16));
                }
                continue;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(failed(format!("{what}: {e}"))),
        };
        rx.calls += 1;
        r.extend(buf.get(..n).unwrap_or_default());
        while let Some((_, m)) = r.next_message() {
            got += 1;
            f(m)?;
        }
        after_read()?;
        if r.is_corrupt() {
            return Err(failed(format!(
                "{what}: corrupt stream after {got} messages"
            )));
        }
    }
    Ok(())
}

fn pool_tcp(msgs: &Messages, a: &CaseArgs, progress: &ProgressBar) -> Result<Outcome, BenchError> {
    let group = ReuseportGroup::bind_tcp(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        a.workers,
        &GroupOptions { require_bpf: true },
    )
    .map_err(bpf_error)?;
    let to = group.local_addr();
    let (listeners, steering) = group.into_parts();
    let steering = steering.ok_or_else(|| failed("TCP group not steered"))?;
    // One connection per worker, bound to a source port the program maps to that worker.
    let mut conns = Vec::new();
    for w in 0..a.workers {
        conns.push(connect_from_owner_port(to, w, a.workers)?);
    }
    let mut accepted = Vec::new();
    for l in &listeners {
        let (s, _) = l.accept().map_err(failed)?;
        s.set_nonblocking(true).map_err(failed)?;
        accepted.push(s);
    }
    let expected = msgs.expected(a.workers);
    let deadline = a.deadline();
    let busy0 = system_busy();
    let start = Instant::now();
    let (sinks, rx, cpu) = stream_owners(
        Route::PoolTcp,
        msgs,
        a,
        &accepted,
        &expected,
        deadline,
        || -> Result<(), BenchError> {
            // The shard-aware client: each message goes into its owner's buffer, and a
            // buffer is written when it holds `batch` messages, so every connection gets
            // writes of the same size as the single connection of the one-hop path.
            let mut bufs: Vec<(Vec<u8>, usize)> =
                vec![(Vec::with_capacity(a.batch * msgs.size), 0); usize::from(a.workers)];
            for j in 0..msgs.count {
                let w = owner(app_id(j), a.workers);
                let (Some((b, n)), Some(mut c)) = (bufs.get_mut(w), conns.get(w)) else {
                    continue;
                };
                b.extend_from_slice(msgs.get(j));
                *n += 1;
                if *n == a.batch {
                    c.write_all(b).map_err(failed)?;
                    b.clear();
                    *n = 0;
                }
                if j % 1024 == 0 {
                    progress.set_position(j);
                }
            }
            for ((b, _), mut c) in bufs.iter().zip(&conns) {
                if !b.is_empty() {
                    c.write_all(b).map_err(failed)?;
                }
            }
            progress.set_position(msgs.count);
            Ok(())
        },
    )?;
    let elapsed = start.elapsed();
    check("pool-tcp", &sinks, &expected)?;
    let c = steering.counters().map_err(bpf_error)?;
    if c.steered != u64::from(a.workers) || c.fallbacks() != 0 {
        return Err(failed(format!(
            "pool-tcp: connections not steered by the program: {c:?}"
        )));
    }
    Ok(Outcome {
        client_steered: msgs.count,
        fallbacks: c.fallbacks(),
        ..Outcome::measured(msgs.count, elapsed, busy0, cpu, rx)
    })
}

/// A connection to `to` from a local port that maps to `worker`, trying successive ports
/// until one is free.
fn connect_from_owner_port(
    to: SocketAddr,
    worker: u16,
    workers: u16,
) -> Result<TcpStream, BenchError> {
    let base = 42_000u16.wrapping_add((std::process::id() % 4000) as u16 * 4);
    for port in steer_bpf::source_ports_for(worker, workers, base).take(200) {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .map_err(failed)?;
        if s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)).into())
            .is_err()
        {
            continue;
        }
        s.connect(&to.into()).map_err(failed)?;
        let _ = s.set_nodelay(true);
        return Ok(s.into());
    }
    Err(failed("no free source port for a pool connection"))
}

fn stream_sender(
    mut c: &TcpStream,
    msgs: &Messages,
    batch: usize,
    progress: &ProgressBar,
) -> Result<(), BenchError> {
    let mut k = 0u64;
    while k < msgs.count {
        let end = (k + batch as u64).min(msgs.count);
        c.write_all(msgs.range(k, end)).map_err(failed)?;
        k = end;
        progress.set_position(k);
    }
    Ok(())
}

fn connected_pair() -> Result<(TcpStream, TcpStream), BenchError> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(failed)?;
    let c = TcpStream::connect(l.local_addr().map_err(failed)?).map_err(failed)?;
    let _ = c.set_nodelay(true);
    let (s, _) = l.accept().map_err(failed)?;
    Ok((c, s))
}

fn one_hop_tcp(
    msgs: &Messages,
    a: &CaseArgs,
    progress: &ProgressBar,
) -> Result<Outcome, BenchError> {
    let (client, conn) = connected_pair()?;
    conn.set_nonblocking(true).map_err(failed)?;
    let deadline = a.deadline();
    let busy0 = system_busy();
    let start = Instant::now();
    let workers = a.workers;
    let run = one_hop(
        msgs,
        a,
        |end, total| {
            let mut sink = Sink::default();
            let handoff = std::cell::RefCell::new(Handoff::new(workers));
            let mut rx = RxStats::default();
            read_frames(
                &conn,
                a.batch * msgs.size,
                total,
                deadline,
                "one-hop-tcp",
                true,
                &mut rx,
                |m| {
                    handoff.borrow_mut().dispatch(&mut sink, m);
                    Ok(())
                },
                || handoff.borrow_mut().flush(end, deadline),
            )?;
            Ok((sink, handoff.into_inner(), rx))
        },
        || stream_sender(&client, msgs, a.batch, progress),
    )?;
    let elapsed = start.elapsed();
    check("one-hop-tcp", &run.sinks, &msgs.expected(a.workers))?;
    Ok(Outcome::one_hop(msgs.count, elapsed, busy0, run))
}

fn sockmap_tcp(
    msgs: &Messages,
    a: &CaseArgs,
    progress: &ProgressBar,
) -> Result<Outcome, BenchError> {
    let (mut steering, targets) = StreamSteering::new(a.workers).map_err(bpf_error)?;
    let (client, conn) = connected_pair()?;
    steering.add_stream(&conn).map_err(bpf_error)?;
    for t in &targets {
        t.set_read_timeout(Some(Duration::from_millis(200)))
            .map_err(failed)?;
    }
    let expected = msgs.expected(a.workers);
    let deadline = a.deadline();
    let busy0 = system_busy();
    let start = Instant::now();
    let (sinks, rx, cpu) = stream_owners(
        Route::SockmapTcp,
        msgs,
        a,
        &targets,
        &expected,
        deadline,
        || stream_sender(&client, msgs, a.batch, progress),
    )?;
    let elapsed = start.elapsed();
    check("sockmap-tcp", &sinks, &expected)?;
    let c = steering.counters().map_err(bpf_error)?;
    drop(conn);
    Ok(Outcome {
        kernel_steered: c.steered,
        fallbacks: c.fallbacks(),
        ..Outcome::measured(msgs.count, elapsed, busy0, cpu, rx)
    })
}

/// SCTP: one association over UDP encapsulation, `k` messages queued per packet, read by
/// worker 0 which handles them (`handoff` false) or hands those of worker 1 over the mesh.
fn sctp_case(
    msgs: &Messages,
    a: &CaseArgs,
    k: usize,
    handoff: bool,
    progress: &ProgressBar,
) -> Result<Outcome, BenchError> {
    use sctp::{AssociationConfig, Endpoint, EndpointConfig, Event};
    const PORT: u16 = 38412;
    let assoc = AssociationConfig {
        pmtu: SCTP_PMTU,
        ..AssociationConfig::default()
    };
    let server_sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(failed)?;
    let client_sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(failed)?;
    udp_receiver_socket(&server_sock)?;
    udp_receiver_socket(&client_sock)?;
    server_sock
        .set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(failed)?;
    client_sock.set_nonblocking(true).map_err(failed)?;
    let server_addr = server_sock.local_addr().map_err(failed)?;
    let workers: u16 = 2;
    let total = msgs.count;
    let deadline = a.deadline();
    let connected = AtomicBool::new(false);
    let reader_done = AtomicBool::new(false);

    let mesh: Mesh<Bytes> = Mesh::new(
        Workers::new(workers).ok_or_else(|| failed("workers"))?,
        MESH_CAPACITY,
    );
    let mut ends = mesh.into_ends().into_iter();
    let mut end0 = ends.next().ok_or_else(|| failed("mesh"))?;
    let mut end1 = ends.next().ok_or_else(|| failed("mesh"))?;
    let expected1 = if handoff {
        (0..total)
            .filter(|&j| owner(app_id(j), workers) == 1)
            .count() as u64
    } else {
        0
    };
    let start = Instant::now();
    let result = std::thread::scope(|s| {
        // Worker 1: receives the hand-offs (idle in `local` mode).
        let w1 = s.spawn(move || -> (Result<Sink, BenchError>, Duration) {
            if expected1 == 0 {
                return (Ok(Sink::default()), Duration::ZERO);
            }
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => return (Err(failed(e)), Duration::ZERO),
            };
            let t = ThreadTime::now();
            let r = rt.block_on(async {
                let mut sink = Sink::default();
                while sink.count < expected1 {
                    if Instant::now() > deadline {
                        return Err(failed("sctp: worker 1 missing hand-offs"));
                    }
                    let _ =
                        tokio::time::timeout(Duration::from_millis(200), end1.recv_ready()).await;
                    end1.drain(|_, m| sink.handle(&m, 1, workers));
                }
                Ok(sink)
            });
            (r, t.elapsed())
        });
        // Worker 0: the association's reader.
        let connected = &connected;
        let reader_done = &reader_done;
        let server_sock = &server_sock;
        let server_assoc = assoc.clone();
        let w0 = s.spawn(move || {
            timed(|| -> Result<(Sink, u64, u64), BenchError> {
                let mut ep = Endpoint::new(EndpointConfig {
                    listen_port: Some(PORT),
                    association: server_assoc,
                    rng_seed: 2,
                    ..EndpointConfig::default()
                });
                let mut sink = Sink::default();
                let mut handed = 0u64;
                let mut seen = 0u64;
                let mut data_packets = 0u64;
                let mut buf = vec![0u8; 65_536];
                while seen < total {
                    let now = Instant::now();
                    if now > deadline {
                        return Err(failed(format!(
                            "sctp k={k}: {seen} of {total} by the deadline"
                        )));
                    }
                    match server_sock.recv_from(&mut buf) {
                        Ok((n, from)) => {
                            ep.handle(now, from, buf.get(..n).unwrap_or_default());
                        }
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                        Err(e) => return Err(failed(e)),
                    }
                    let mut in_packet = 0u64;
                    while let Some((_, ev)) = ep.poll_event() {
                        match ev {
                            Event::Message(m) => {
                                seen += 1;
                                in_packet += 1;
                                let id = m
                                    .data
                                    .get(4..8)
                                    .and_then(|b| b.try_into().ok())
                                    .map_or(0, u32::from_be_bytes);
                                let w = owner(id, workers);
                                if handoff && w != 0 {
                                    let mut msg = m.data;
                                    loop {
                                        match end0.send(WorkerId(1), msg) {
                                            Ok(()) => break,
                                            Err(e) => {
                                                if Instant::now() > deadline {
                                                    return Err(failed("sctp: worker 1 stuck"));
                                                }
                                                msg = e.into_inner();
                                                std::thread::yield_now();
                                            }
                                        }
                                    }
                                    handed += 1;
                                } else {
                                    // Local mode: the reader owns every message.
                                    let me = if handoff { 0 } else { w };
                                    sink.handle(&m.data, me, workers);
                                }
                            }
                            Event::Connected { .. } => connected.store(true, Ordering::Release),
                            _ => {}
                        }
                    }
                    if in_packet > 0 {
                        data_packets += 1;
                    }
                    let now = Instant::now();
                    if ep.poll_timeout().is_some_and(|t| t <= now) {
                        ep.handle_timeout(now);
                    }
                    while let Some(t) = ep.poll_transmit(now) {
                        let _ = server_sock.send_to(&t.packet, t.remote);
                    }
                }
                reader_done.store(true, Ordering::Release);
                Ok((sink, handed, data_packets))
            })
        });
        // The gNB side: queue k messages, flush, read SACKs.
        let (sent, sender_cpu) = sender_timed(a, || -> Result<(), BenchError> {
            let mut ep = Endpoint::new(EndpointConfig {
                association: assoc.clone(),
                rng_seed: 1,
                ..EndpointConfig::default()
            });
            let now = Instant::now();
            let id = ep
                .connect(now, server_addr, 40_000, PORT)
                .map_err(|e| failed(format!("sctp connect: {e:?}")))?;
            let mut buf = vec![0u8; 65_536];
            let mut next = 0u64;
            let mut up = false;
            loop {
                let now = Instant::now();
                if now > deadline {
                    return Err(failed(format!("sctp k={k}: sender stuck at {next}")));
                }
                loop {
                    match client_sock.recv_from(&mut buf) {
                        Ok((n, from)) => ep.handle(now, from, buf.get(..n).unwrap_or_default()),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => return Err(failed(e)),
                    }
                }
                while let Some((_, ev)) = ep.poll_event() {
                    if matches!(ev, Event::Connected { .. }) {
                        up = true;
                    }
                }
                if ep.poll_timeout().is_some_and(|t| t <= now) {
                    ep.handle_timeout(now);
                }
                // Queue the next k only once everything queued before has left, so that
                // each group of k travels together rather than merging with a backlog.
                let backlog = ep.info(id).is_some_and(|i| i.send_buffered > i.flight_size);
                if up && next < total && !backlog {
                    // k messages, then a flush: they leave bundled in one packet when the
                    // window allows (the measured messages per packet says how well).
                    let stop = (next + k as u64).min(total);
                    while next < stop {
                        let data = Bytes::copy_from_slice(msgs.get(next));
                        match ep.send(id, (next % 4) as u16, NGAP_PPID, false, data) {
                            Ok(()) => next += 1,
                            Err(_) => break,
                        }
                    }
                    progress.set_position(next);
                }
                let mut wrote = false;
                while let Some(t) = ep.poll_transmit(now) {
                    let _ = client_sock.send_to(&t.packet, t.remote);
                    wrote = true;
                }
                if reader_done.load(Ordering::Acquire) {
                    return Ok(());
                }
                if !wrote {
                    std::thread::sleep(Duration::from_micros(20));
                }
            }
        });
        let (r0, t0) = w0
            .join()
            .unwrap_or_else(|_| (Err(failed("sctp reader panicked")), Duration::ZERO));
        let (r1, t1) = w1
            .join()
            .unwrap_or_else(|_| (Err(failed("sctp owner panicked")), Duration::ZERO));
        sent?;
        let (sink0, handed, packets) = r0?;
        let sink1 = r1?;
        Ok::<_, BenchError>((sink0, sink1, handed, packets, sender_cpu, t0 + t1))
    })?;
    let (sink0, sink1, handed, packets, sender_cpu, workers_cpu) = result;
    let expected = msgs.expected(workers);
    let sinks = if handoff {
        vec![sink0, sink1]
    } else {
        // Local mode: worker 0 took everything; compare with the sum over owners.
        let all = expected.iter().fold((0u64, 0u64), |acc, e| {
            (acc.0 + e.0, acc.1.wrapping_add(e.1))
        });
        if (sink0.count, sink0.sum) != all || sink0.misrouted > 0 {
            return Err(failed(format!("sctp k={k} local: {sink0:?} vs {all:?}")));
        }
        Vec::new()
    };
    if handoff {
        check(&format!("sctp k={k}"), &sinks, &expected)?;
    }
    Ok(Outcome {
        messages: total,
        elapsed: start.elapsed(),
        sender_cpu,
        workers_cpu,
        handed_off: handed,
        packets,
        ..Outcome::default()
    })
}

/// The case-independent arguments, checked.
struct CaseArgs {
    workers: u16,
    batch: usize,
    timeout: Duration,
    /// The case runs SCHED_FIFO: the caller holds a [`RealtimeGuard`] at the workers'
    /// priority (threads it spawns inherit it) and the sender runs above them.
    realtime: bool,
}

impl CaseArgs {
    fn deadline(&self) -> Instant {
        Instant::now() + self.timeout
    }
}

fn per_msg_ns(d: Duration, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        d.as_secs_f64() * 1e9 / n as f64
    }
}

fn rate(n: u64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

fn case_report(p: Route, batch: usize, o: &Outcome) -> CaseReport {
    let per = |n: u64| {
        if n > 0 {
            o.messages as f64 / n as f64
        } else {
            0.0
        }
    };
    CaseReport {
        case: p.label(),
        transport: p.transport(),
        batch,
        messages: o.messages,
        elapsed_s: o.elapsed.as_secs_f64(),
        msgs_per_s: rate(o.messages, o.elapsed),
        cpu_ns_per_msg: per_msg_ns(o.sender_cpu + o.workers_cpu, o.messages),
        sender_cpu_ns_per_msg: per_msg_ns(o.sender_cpu, o.messages),
        workers_cpu_ns_per_msg: per_msg_ns(o.workers_cpu, o.messages),
        system_cpu_ns_per_msg: o.system_busy.map(|b| per_msg_ns(b, o.messages)),
        kernel_steered: o.kernel_steered,
        handed_off: o.handed_off,
        client_steered: o.client_steered,
        fallbacks: o.fallbacks,
        receive_calls: o.rx.calls,
        waits: o.rx.waits,
        msgs_per_receive_call: per(o.rx.calls),
        msgs_per_wait: per(o.rx.waits),
        handoff_sends: o.handoff_sends,
        rounds_cpu_ns_per_msg: Vec::new(),
    }
}

fn sctp_report(k: usize, handoff: bool, o: &Outcome) -> SctpReport {
    SctpReport {
        k,
        mode: if handoff { "hand-off" } else { "local" },
        messages: o.messages,
        packets: o.packets,
        msgs_per_packet: if o.packets > 0 {
            o.messages as f64 / o.packets as f64
        } else {
            0.0
        },
        elapsed_s: o.elapsed.as_secs_f64(),
        msgs_per_s: rate(o.messages, o.elapsed),
        workers_cpu_ns_per_msg: per_msg_ns(o.workers_cpu, o.messages),
        sender_cpu_ns_per_msg: per_msg_ns(o.sender_cpu, o.messages),
        handed_off: o.handed_off,
        rounds_workers_cpu_ns_per_msg: Vec::new(),
    }
}

/// One case of the sweep: a path at a batch, or SCTP at K messages per packet, with or
/// without the hand-off.
#[derive(Debug, Clone, Copy)]
enum Visit {
    Path(Route, usize),
    Sctp(usize, bool),
}

impl Visit {
    fn label(&self) -> String {
        match *self {
            Visit::Path(r, batch) => format!("{} b{batch}", r.label()),
            Visit::Sctp(k, handoff) => {
                format!("sctp k={k} {}", if handoff { "hand-off" } else { "local" })
            }
        }
    }
}

/// What a visit measured.
enum Measured {
    Path(CaseReport),
    Sctp(SctpReport),
}

/// The median of a path's rounds is by CPU per message.
impl sweep::Round for CaseReport {
    fn key(&self) -> f64 {
        self.cpu_ns_per_msg
    }

    fn keep_rounds(&mut self, all: &[Self]) {
        self.rounds_cpu_ns_per_msg = all.iter().map(|c| c.cpu_ns_per_msg).collect();
    }
}

/// The median of an SCTP case's rounds is by the workers' CPU per message.
impl sweep::Round for SctpReport {
    fn key(&self) -> f64 {
        self.workers_cpu_ns_per_msg
    }

    fn keep_rounds(&mut self, all: &[Self]) {
        self.rounds_workers_cpu_ns_per_msg = all.iter().map(|c| c.workers_cpu_ns_per_msg).collect();
    }
}

fn ratio(
    cases: &[CaseReport],
    batch: usize,
    name: &'static str,
    baseline: &'static str,
    path: &'static str,
    targeted: bool,
) -> Option<Ratio> {
    let b = cases
        .iter()
        .find(|c| c.case == baseline && c.batch == batch)?;
    let p = cases.iter().find(|c| c.case == path && c.batch == batch)?;
    let cpu_ratio = if p.cpu_ns_per_msg > 0.0 {
        b.cpu_ns_per_msg / p.cpu_ns_per_msg
    } else {
        0.0
    };
    let rate_ratio = if b.msgs_per_s > 0.0 {
        p.msgs_per_s / b.msgs_per_s
    } else {
        0.0
    };
    Some(Ratio {
        name,
        batch,
        baseline,
        path,
        cpu_ratio,
        rate_ratio,
        targeted,
        meets_target: !targeted || cpu_ratio >= TARGET_RATIO,
    })
}

fn bar(label: String, len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>22} [{bar:30}] {pos}/{len} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(label);
    bar
}

fn finish(bar: &ProgressBar, r: &Result<Outcome, BenchError>) {
    match r {
        Ok(o) => bar.finish_with_message(format!(
            "{:.0} ns/msg",
            per_msg_ns(o.sender_cpu + o.workers_cpu, o.messages)
        )),
        Err(_) => bar.abandon_with_message("failed"),
    }
    if !bar.is_hidden() {
        eprintln!();
    }
}

/// `steer5g bench steering`.
pub(crate) fn run(json: bool, args: &SteeringArgs) -> Result<(), BenchError> {
    let report = measure(args)?;
    let meets_target = report.meets_target;
    let mut out = Out::create(&args.sweep.out_or("bench-results"))?;
    out.json("steering.json", &report)?;
    out.text("steering.csv", cases_csv(&report))?;
    out.text("steering-sctp.csv", sctp_csv(&report))?;
    out.plot("steering.svg", |p| plot(p, &report))?;
    if json {
        crate::print_json(&report)?;
    } else {
        print!("{}", table(&report));
        println!(
            "wrote steering.json, steering.csv, steering-sctp.csv and steering.svg in {}",
            out.dir().display()
        );
    }
    if meets_target {
        Ok(())
    } else {
        Err(BenchError::Failed(format!(
            "target missed: a steered path is not {TARGET_RATIO}x cheaper per message than one-hop \
             at every batch (met at {:?})",
            report.met_at_batches
        )))
    }
}

/// Checks the arguments and measures every case (no output but the progress bars).
pub(crate) fn measure(args: &SteeringArgs) -> Result<SteeringReport, BenchError> {
    args.sweep
        .only("steering", &[Axis::Workers, Axis::Rounds, Axis::Out])?;
    let workers = args.sweep.one_worker()?;
    if args.messages == 0 || args.messages > 50_000_000 {
        return Err(BenchError::Invalid(
            "--messages must be 1..=50000000".into(),
        ));
    }
    if args.size < MIN_SIZE || args.size > 1400 {
        return Err(BenchError::Invalid(format!(
            "--size must be {MIN_SIZE}..=1400 bytes (one datagram, one SCTP packet)"
        )));
    }
    // Every case's messages are built up front, outside the measurement.
    if (args.messages as u128) * (args.size as u128) > 1 << 30 {
        return Err(BenchError::Invalid(
            "--messages x --size must stay within 1 GiB".into(),
        ));
    }
    let mut batches: Vec<usize> = Vec::new();
    for &b in &args.batch {
        if b == 0 || b > 4096 {
            return Err(BenchError::Invalid("--batch: each must be 1..=4096".into()));
        }
        if !batches.contains(&b) {
            batches.push(b);
        }
    }
    if batches.is_empty() || batches.len() > 16 {
        return Err(BenchError::Invalid("--batch takes 1 to 16 values".into()));
    }
    if !(2..=64).contains(&workers) {
        return Err(BenchError::Invalid("--workers must be 2..=64".into()));
    }
    if args.sctp_k.iter().any(|&k| k == 0 || k > 64) {
        return Err(BenchError::Invalid(
            "--sctp-k: each K must be 1..=64".into(),
        ));
    }
    let rounds = args.sweep.rounds(20)?;
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        return Err(BenchError::Invalid(
            "--timeout must be in (0, 3600] seconds".into(),
        ));
    }
    let routes: Vec<Route> = if args.paths.is_empty() {
        Route::ALL.to_vec()
    } else {
        let mut v = Vec::new();
        for p in &args.paths {
            let r = Route::ALL
                .iter()
                .copied()
                .find(|r| r.label() == p.trim())
                .ok_or_else(|| BenchError::Invalid(format!("--paths: no path named {p:?}")))?;
            if !v.contains(&r) {
                v.push(r);
            }
        }
        v
    };
    if args.realtime {
        super::lockecho::probe_realtime()?;
    }
    let machine = sweep::machine();
    let msgs = Messages::new(args.messages, args.size);
    let case_args = |batch: usize| CaseArgs {
        workers,
        batch,
        timeout: Duration::from_secs_f64(args.timeout),
        realtime: args.realtime,
    };

    // Every path at every batch; then SCTP, which bundles by K, not by the write batch.
    let plan: Vec<Visit> = batches
        .iter()
        .flat_map(|&b| routes.iter().map(move |&r| Visit::Path(r, b)))
        .chain(
            args.sctp_k
                .iter()
                .flat_map(|&k| [Visit::Sctp(k, false), Visit::Sctp(k, true)]),
        )
        .collect();
    // Each case shows a bar of its own.
    let per_case = Sweep::new(&plan, rounds).quiet().run(Visit::label, |v| {
        let label = format!("{} r{}", v.case.label(), v.round + 1);
        let b = bar(label, msgs.count);
        let r = {
            // Threads of the case inherit the workers' priority; the guard puts this
            // thread back to normal between cases (progress, files).
            let _rt = args
                .realtime
                .then(|| RealtimeGuard::enter(REALTIME_WORKER))
                .transpose()?;
            match *v.case {
                Visit::Path(p, batch) => {
                    let ca = case_args(batch);
                    match p {
                        Route::KernelUdp => kernel_udp(&msgs, &ca, &b),
                        Route::OneHopUdp => one_hop_udp(&msgs, &ca, &b),
                        Route::PoolTcp => pool_tcp(&msgs, &ca, &b),
                        Route::OneHopTcp => one_hop_tcp(&msgs, &ca, &b),
                        Route::SockmapTcp => sockmap_tcp(&msgs, &ca, &b),
                    }
                }
                Visit::Sctp(k, handoff) => {
                    let ca = case_args(batches.first().copied().unwrap_or(1));
                    sctp_case(&msgs, &ca, k, handoff, &b)
                }
            }
        };
        finish(&b, &r);
        let o = r?;
        Ok(match *v.case {
            Visit::Path(p, batch) => Measured::Path(case_report(p, batch, &o)),
            Visit::Sctp(k, handoff) => Measured::Sctp(sctp_report(k, handoff, &o)),
        })
    })?;
    let mut cases: Vec<CaseReport> = Vec::new();
    let mut sctp: Vec<SctpReport> = Vec::new();
    for rounds in per_case {
        let (mut paths, mut ks) = (Vec::new(), Vec::new());
        for m in rounds {
            match m {
                Measured::Path(c) => paths.push(c),
                Measured::Sctp(c) => ks.push(c),
            }
        }
        cases.extend(sweep::median(paths));
        sctp.extend(sweep::median(ks));
    }
    let sctp_handoff = args
        .sctp_k
        .iter()
        .filter_map(|&k| {
            let l = sctp.iter().find(|s| s.k == k && s.mode == "local")?;
            let h = sctp.iter().find(|s| s.k == k && s.mode == "hand-off")?;
            let extra = (h.workers_cpu_ns_per_msg - l.workers_cpu_ns_per_msg) * h.messages as f64;
            Some(SctpHandoff {
                k,
                msgs_per_packet: h.msgs_per_packet,
                local_ns_per_msg: l.workers_cpu_ns_per_msg,
                handoff_ns_per_msg: h.workers_cpu_ns_per_msg,
                ns_per_handed_off_msg: if h.handed_off > 0 {
                    extra / h.handed_off as f64
                } else {
                    0.0
                },
            })
        })
        .collect();
    let ratios: Vec<Ratio> = batches
        .iter()
        .flat_map(|&b| {
            [
                ratio(
                    &cases,
                    b,
                    "one-hop/kernel (udp)",
                    "one-hop-udp",
                    "kernel-udp",
                    true,
                ),
                ratio(
                    &cases,
                    b,
                    "one-hop/pool (tcp)",
                    "one-hop-tcp",
                    "pool-tcp",
                    true,
                ),
                ratio(
                    &cases,
                    b,
                    "one-hop/sockmap (tcp)",
                    "one-hop-tcp",
                    "sockmap-tcp",
                    false,
                ),
            ]
        })
        .flatten()
        .collect();
    let meets_target = ratios.iter().all(|r| r.meets_target);
    let met_at_batches = batches
        .iter()
        .copied()
        .filter(|&b| {
            ratios
                .iter()
                .filter(|r| r.batch == b && r.targeted)
                .all(|r| r.meets_target)
        })
        .collect();
    let report = SteeringReport {
        scenario: "steering",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        settings: Settings {
            messages: args.messages,
            size: args.size,
            batch: batches,
            paths: routes.iter().map(|r| r.label()).collect(),
            realtime: args.realtime,
            workers,
            sctp_k: args.sctp_k.clone(),
            rounds,
            udp_window: UDP_WINDOW,
            mesh_capacity: MESH_CAPACITY,
        },
        cases,
        ratios,
        sctp,
        sctp_handoff,
        target_ratio: TARGET_RATIO,
        meets_target,
        met_at_batches,
    };
    Ok(report)
}

pub(crate) fn cases_csv(r: &SteeringReport) -> String {
    let mut out = String::from(
        "case,transport,batch,messages,elapsed_s,msgs_per_s,cpu_ns_per_msg,sender_cpu_ns_per_msg,\
         workers_cpu_ns_per_msg,system_cpu_ns_per_msg,kernel_steered,handed_off,client_steered,\
         fallbacks,receive_calls,waits,msgs_per_receive_call,msgs_per_wait,handoff_sends\n",
    );
    for c in &r.cases {
        out.push_str(&format!(
            "{},{},{},{},{:.4},{:.0},{:.1},{:.1},{:.1},{},{},{},{},{},{},{},{:.2},{:.2},{}\n",
            c.case,
            c.transport,
            c.batch,
            c.messages,
            c.elapsed_s,
            c.msgs_per_s,
            c.cpu_ns_per_msg,
            c.sender_cpu_ns_per_msg,
            c.workers_cpu_ns_per_msg,
            c.system_cpu_ns_per_msg
                .map_or(String::new(), |v| format!("{v:.1}")),
            c.kernel_steered,
            c.handed_off,
            c.client_steered,
            c.fallbacks,
            c.receive_calls,
            c.waits,
            c.msgs_per_receive_call,
            c.msgs_per_wait,
            c.handoff_sends
        ));
    }
    out
}

pub(crate) fn sctp_csv(r: &SteeringReport) -> String {
    let mut out = String::from(
        "k,mode,messages,packets,msgs_per_packet,msgs_per_s,workers_cpu_ns_per_msg,\
         sender_cpu_ns_per_msg,handed_off\n",
    );
    for s in &r.sctp {
        out.push_str(&format!(
            "{},{},{},{},{:.2},{:.0},{:.1},{:.1},{}\n",
            s.k,
            s.mode,
            s.messages,
            s.packets,
            s.msgs_per_packet,
            s.msgs_per_s,
            s.workers_cpu_ns_per_msg,
            s.sender_cpu_ns_per_msg,
            s.handed_off
        ));
    }
    out
}

pub(crate) fn table(r: &SteeringReport) -> String {
    use std::fmt::Write;
    let s = &r.settings;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "steering cost: {} messages of {} B per case, {} workers, batch {:?}, {} round(s) (median){}",
        s.messages,
        s.size,
        s.workers,
        s.batch,
        s.rounds,
        if s.realtime { ", SCHED_FIFO" } else { "" }
    );
    let _ = writeln!(
        out,
        "{} nproc, kernel {}, commit {}, {} build, {}, load {}",
        r.machine.nproc,
        r.machine.kernel.as_deref().unwrap_or("?"),
        r.machine.git_commit.as_deref().unwrap_or("none"),
        r.machine.build,
        r.machine.date,
        r.machine.loadavg.as_deref().unwrap_or("?"),
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<12} {:>5} {:>11} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "case",
        "batch",
        "msgs/s",
        "cpu ns/msg",
        "sender",
        "workers",
        "system",
        "kernel",
        "handoff",
        "msg/call",
        "msg/wait"
    );
    for c in &r.cases {
        let _ = writeln!(
            out,
            "{:<12} {:>5} {:>11.0} {:>10.0} {:>10.0} {:>10.0} {:>10} {:>9} {:>9} {:>9.1} {:>9.1}",
            c.case,
            c.batch,
            c.msgs_per_s,
            c.cpu_ns_per_msg,
            c.sender_cpu_ns_per_msg,
            c.workers_cpu_ns_per_msg,
            c.system_cpu_ns_per_msg
                .map_or("-".into(), |v| format!("{v:.0}")),
            c.kernel_steered,
            c.handed_off,
            c.msgs_per_receive_call,
            c.msgs_per_wait
        );
    }
    let _ = writeln!(out);
    for x in &r.ratios {
        let _ = writeln!(
            out,
            "{:<22} batch {:>4}: cpu {:.2}x  rate {:.2}x{}",
            x.name,
            x.batch,
            x.cpu_ratio,
            x.rate_ratio,
            if x.targeted {
                if x.meets_target {
                    format!("  (target >= {:.1}: met)", r.target_ratio)
                } else {
                    format!("  (target >= {:.1}: NOT met)", r.target_ratio)
                }
            } else {
                String::new()
            }
        );
    }
    if !r.sctp_handoff.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "SCTP (UDP encapsulation), reader + owner CPU per message, 2 workers:"
        );
        let _ = writeln!(
            out,
            "{:>4} {:>9} {:>10} {:>12} {:>16}",
            "K", "msgs/pkt", "local ns", "hand-off ns", "ns per hand-off"
        );
        for h in &r.sctp_handoff {
            let _ = writeln!(
                out,
                "{:>4} {:>9.2} {:>10.0} {:>12.0} {:>16.0}",
                h.k,
                h.msgs_per_packet,
                h.local_ns_per_msg,
                h.handoff_ns_per_msg,
                h.ns_per_handed_off_msg
            );
        }
    }
    out
}

/// steering.svg: CPU ns per message of every path (left), and SCTP reader CPU per message,
/// local vs hand-off, by K (right).
pub(crate) fn plot(path: &Path, r: &SteeringReport) -> Result<(), String> {
    use super::plot::{above, bars, finish, legend, line, svg_err, svg_root, Slots};
    use plotters::prelude::*;

    const BASE: RGBColor = RGBColor(170, 170, 170);
    const HAND: RGBColor = RGBColor(255, 127, 14);
    let root = svg_root(path, (1200, 520))?
        .titled(
            &format!(
                "steering cost per message ({} B, {} workers, {} build{})",
                r.settings.size,
                r.settings.workers,
                r.machine.build,
                if r.settings.realtime {
                    ", SCHED_FIFO"
                } else {
                    ""
                }
            ),
            ("sans-serif", 20),
        )
        .map_err(svg_err)?;
    let (left, right) = root.split_horizontally(640);
    let above = above(13);

    // CPU per message against the batch, one line per path, both axes log: the paths span
    // two orders of magnitude (sockmap against the TCP paths) and the batches 1..64.
    let ymax = r
        .cases
        .iter()
        .map(|c| c.cpu_ns_per_msg)
        .fold(100.0f64, f64::max)
        * 2.0;
    let floor = 10.0f64;
    let bmax = r.settings.batch.iter().copied().max().unwrap_or(1).max(2) as f64 * 1.5;
    let mut chart = ChartBuilder::on(&left)
        .margin(14)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d((0.7f64..bmax).log_scale(), (floor..ymax).log_scale())
        .map_err(svg_err)?;
    chart
        .configure_mesh()
        .x_desc("messages per system call (batch)")
        .y_desc("CPU ns per message, all threads (log)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(svg_err)?;
    for (i, route) in Route::ALL.iter().enumerate() {
        let pts: Vec<(f64, f64)> = r
            .cases
            .iter()
            .filter(|c| c.case == route.label())
            .map(|c| (c.batch as f64, c.cpu_ns_per_msg.max(floor)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let color = Palette99::pick(i).to_rgba();
        let dashed = route.label().starts_with("one-hop");
        let width = if dashed { 1 } else { 2 };
        line(&mut chart, pts.clone(), color, width, route.label(), 16)?;
        chart
            .draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
            )
            .map_err(svg_err)?;
        chart
            .draw_series(
                pts.iter()
                    .map(|&(x, y)| Text::new(format!("{y:.0}"), (x, y * 1.08), above.clone())),
            )
            .map_err(svg_err)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;

    let slots = Slots::new(
        r.sctp_handoff
            .iter()
            .map(|h| format!("K={}", h.k))
            .collect(),
    );
    let ymax = r
        .sctp_handoff
        .iter()
        .map(|h| h.handoff_ns_per_msg.max(h.local_ns_per_msg))
        .fold(1.0f64, f64::max)
        * 1.2;
    let mut chart = slots.chart(
        ChartBuilder::on(&right)
            .margin(14)
            .caption("SCTP reader CPU per message", ("sans-serif", 15))
            .x_label_area_size(36)
            .y_label_area_size(64),
        ymax,
        "ns per message",
        Some(&|y| format!("{y:.0}")),
    )?;
    let local = r.sctp_handoff.iter().map(|h| h.local_ns_per_msg);
    bars(&mut chart, local, (12, 38), BASE, Some("local"))?;
    let handed = r.sctp_handoff.iter().map(|h| h.handoff_ns_per_msg);
    bars(&mut chart, handed, (50, 38), HAND, Some("hand-off"))?;
    finish(&mut chart, &root, SeriesLabelPosition::UpperRight)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_header_id_and_number() {
        let m = Messages::new(10, 20);
        for k in 0..10u64 {
            let msg = m.get(k);
            assert_eq!(msg.len(), 20);
            assert_eq!(steer_bpf::stream::decode_header(msg), Some((20, app_id(k))));
            assert_eq!(&msg[8..12], &(k as u32).to_be_bytes());
        }
        assert_eq!(m.range(2, 5).len(), 60);
        let e = m.expected(2);
        assert_eq!(e.iter().map(|x| x.0).sum::<u64>(), 10);
        assert_eq!(e.iter().fold(0u64, |a, x| a.wrapping_add(x.1)), 45);
    }

    #[test]
    fn sink_check_catches_misrouting() {
        let m = Messages::new(4, 16);
        let mut sinks = vec![Sink::default(); 2];
        for k in 0..4 {
            let w = owner(app_id(k), 2);
            sinks[w].handle(m.get(k), w, 2);
        }
        assert!(check("t", &sinks, &m.expected(2)).is_ok());
        // The same message at the other worker is a misroute.
        let k0_owner = owner(app_id(0), 2);
        sinks[1 - k0_owner].handle(m.get(0), 1 - k0_owner, 2);
        assert!(check("t", &sinks, &m.expected(2)).is_err());
    }

    #[test]
    fn one_hop_paths_deliver_every_message_at_its_owner() {
        // Unprivileged paths only (no BPF): a small run of each one-hop case.
        let msgs = Messages::new(5_000, 64);
        let b = ProgressBar::hidden();
        for batch in [1, 8, 64] {
            let a = CaseArgs {
                workers: 2,
                batch,
                timeout: Duration::from_secs(30),
                realtime: false,
            };
            let o = one_hop_tcp(&msgs, &a, &b).unwrap();
            assert_eq!(o.messages, 5_000);
            assert_eq!(o.handed_off, msgs.expected(2)[1].0);
            // Hand-offs travel in batches, at most one per message and one per receive call.
            assert!(
                o.handoff_sends > 0 && o.handoff_sends <= o.handed_off,
                "{o:?}"
            );
            assert!(o.handoff_sends <= o.rx.calls, "{o:?}");
            let o = one_hop_udp(&msgs, &a, &b).unwrap();
            assert_eq!(o.handed_off, msgs.expected(2)[1].0);
            assert!(
                o.handoff_sends > 0 && o.handoff_sends <= o.handed_off,
                "{o:?}"
            );
            // A receive call carries at most `batch` datagrams.
            assert!(o.rx.calls * batch as u64 >= 5_000, "{o:?}");
            if batch == 1 {
                assert!(o.rx.calls >= 5_000, "{o:?}");
            }
        }
        let a = CaseArgs {
            workers: 2,
            batch: 32,
            timeout: Duration::from_secs(30),
            realtime: false,
        };
        let o = sctp_case(&msgs, &a, 4, true, &b).unwrap();
        assert_eq!(o.handed_off, msgs.expected(2)[1].0);
        assert!(o.packets > 0 && o.packets <= 5_000);
        let o = sctp_case(&msgs, &a, 4, false, &b).unwrap();
        assert_eq!(o.handed_off, 0);
    }

    #[test]
    fn realtime_cases_run_and_leave_the_thread_normal() {
        // Root (CI): the one-hop cases run with SCHED_FIFO workers and sender, bounded by the
        // timeout; without CAP_SYS_NICE the guard refuses with a privilege error.
        let msgs = Messages::new(3_000, 64);
        let a = CaseArgs {
            workers: 2,
            batch: 8,
            timeout: Duration::from_secs(30),
            realtime: true,
        };
        let b = ProgressBar::hidden();
        let run = std::thread::spawn(move || -> Result<(), BenchError> {
            {
                let _rt = RealtimeGuard::enter(REALTIME_WORKER)?;
                assert_eq!(mmsg::policy().unwrap(), libc::SCHED_FIFO);
                let o = one_hop_udp(&msgs, &a, &b)?;
                assert_eq!(o.handed_off, msgs.expected(2)[1].0);
                let o = one_hop_tcp(&msgs, &a, &b)?;
                assert_eq!(o.handed_off, msgs.expected(2)[1].0);
            }
            assert_eq!(mmsg::policy().unwrap(), libc::SCHED_OTHER);
            Ok(())
        })
        .join()
        .unwrap();
        if let Err(e) = run {
            assert!(matches!(e, BenchError::Privilege(_)), "{e}");
        }
    }

    #[test]
    fn handoff_batches_split_back_into_their_messages() {
        let m = Messages::new(50, 24);
        let mut sink = Sink::default();
        let mut h = Handoff::new(2);
        for k in 0..50 {
            h.dispatch(&mut sink, m.get(k));
        }
        let theirs = m.expected(2)[1];
        assert_eq!(h.handed, theirs.0);
        assert_eq!((sink.count, sink.sum), m.expected(2)[0]);
        let batch = std::mem::take(&mut h.pending[1]);
        let mut owner1 = Sink::default();
        for f in frames(&batch) {
            owner1.handle(f, 1, 2);
        }
        assert_eq!(
            (owner1.count, owner1.sum, owner1.misrouted),
            (theirs.0, theirs.1, 0)
        );
        // A truncated or corrupt batch ends the split instead of reading past it.
        assert_eq!(
            frames(&batch[..batch.len() - 1]).count() as u64,
            theirs.0 - 1
        );
        assert_eq!(frames(&[0u8; 8]).count(), 0);
        assert_eq!(frames(&[]).count(), 0);
    }

    #[test]
    fn ratios_compare_cpu_per_message() {
        let mk = |case: &'static str, cpu: f64| CaseReport {
            case,
            transport: "udp",
            batch: 8,
            messages: 1,
            elapsed_s: 1.0,
            msgs_per_s: 1000.0 / cpu,
            cpu_ns_per_msg: cpu,
            sender_cpu_ns_per_msg: 0.0,
            workers_cpu_ns_per_msg: 0.0,
            system_cpu_ns_per_msg: None,
            kernel_steered: 0,
            handed_off: 0,
            client_steered: 0,
            fallbacks: 0,
            receive_calls: 0,
            waits: 0,
            msgs_per_receive_call: 0.0,
            msgs_per_wait: 0.0,
            handoff_sends: 0,
            rounds_cpu_ns_per_msg: Vec::new(),
        };
        let cases = [mk("one-hop-udp", 1300.0), mk("kernel-udp", 1000.0)];
        let r = ratio(&cases, 8, "x", "one-hop-udp", "kernel-udp", true).unwrap();
        assert!((r.cpu_ratio - 1.3).abs() < 1e-9);
        assert!(r.meets_target);
        let cases = [mk("one-hop-udp", 1200.0), mk("kernel-udp", 1000.0)];
        assert!(
            !ratio(&cases, 8, "x", "one-hop-udp", "kernel-udp", true)
                .unwrap()
                .meets_target
        );
        assert!(ratio(&cases, 8, "x", "nope", "kernel-udp", true).is_none());
        // Cases of another batch are not compared.
        assert!(ratio(&cases, 1, "x", "one-hop-udp", "kernel-udp", true).is_none());
        // The median round by CPU per message, with every round's figure.
        let m = sweep::median(vec![mk("a", 3.0), mk("a", 1.0), mk("a", 2.0)]).unwrap();
        assert_eq!(m.cpu_ns_per_msg, 2.0);
        assert_eq!(m.rounds_cpu_ns_per_msg, vec![3.0, 1.0, 2.0]);
    }
}
