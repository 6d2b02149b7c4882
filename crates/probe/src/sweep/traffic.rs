//! The sweep's traffic: a paced generator writing the probe's tag into every UDP payload or
//! TCP message, a sink that reads and counts, and a CPU-bound competitor for the loaded
//! condition. Each is a thread pinned to its CPU and, for the first two, moved into its
//! namespace.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{topo, Proto};
use crate::{tag, Error};

/// The UDP (and TCP) port the sink listens on.
pub const PORT: u16 = 9;

/// How far ahead of its schedule a paced generator may send: datagrams leave in bursts of
/// up to a millisecond's worth.
pub const BURST: Duration = Duration::from_millis(1);

/// What one generator run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sent {
    /// Datagrams (TCP: messages) the kernel accepted.
    pub sent: u64,
    /// Datagrams it refused (ENOBUFS and the like; TCP: a write that failed, which ends
    /// the run).
    pub refused: u64,
    /// How long the run took.
    pub elapsed: Duration,
}

impl topo::Topology {
    /// Sends `payload`-octet datagrams (or TCP messages) from the generator's namespace and
    /// address (on a thread pinned to `cpu`) to the receiver at `rate` per second (`None`:
    /// as fast as the CPU allows) for `duration` or `max` of them, whichever ends first.
    /// Message i of `flow` carries tag (flow, i). For TCP: one connection for the run (`TCP_NODELAY`), each message written whole; a
    /// write blocks while the receiver's window is closed, so what is offered is what TCP
    /// let through.
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &self,
        proto: Proto,
        cpu: usize,
        payload: usize,
        rate: Option<u64>,
        duration: Duration,
        max: u64,
        flow: u32,
    ) -> Result<Sent, Error> {
        let (ns, from, to) = (self.gen_ns_path(), self.gen_addr, self.rx_addr);
        std::thread::spawn(move || -> Result<Sent, Error> {
            topo::enter(&ns)?;
            topo::pin(cpu);
            let mut sock = match proto {
                Proto::Udp => {
                    let s = UdpSocket::bind((from, 0))
                        .map_err(|e| Error::Topology(format!("generator socket: {e}")))?;
                    s.connect((to, PORT))
                        .map_err(|e| Error::Topology(format!("generator connect: {e}")))?;
                    Out::Udp(s)
                }
                Proto::Tcp => {
                    let s = TcpStream::connect((to, PORT))
                        .map_err(|e| Error::Topology(format!("generator connect: {e}")))?;
                    s.set_nodelay(true)
                        .map_err(|e| Error::Topology(format!("generator TCP_NODELAY: {e}")))?;
                    Out::Tcp(s)
                }
            };
            let mut buf = vec![0x5au8; payload.max(tag::LEN)];
            let mut out = Sent::default();
            let start = Instant::now();
            let mut i = 0u64;
            while i < max {
                let now = start.elapsed();
                if now >= duration {
                    break;
                }
                if let Some(r) = rate.filter(|&r| r > 0) {
                    // Datagram i is due at i / rate. The generator may run up to one burst
                    // window ahead, then sleeps: paced in bursts, never spinning, so that its
                    // CPU time is the sending and nothing else (the overhead measurement
                    // charges the whole machine's CPU to the packets).
                    let due = Duration::from_secs_f64(i as f64 / r as f64);
                    if due > now + BURST {
                        std::thread::sleep(due - now - BURST);
                        continue;
                    }
                }
                tag::write(&mut buf, flow, i);
                match &mut sock {
                    Out::Udp(s) => match s.send(&buf) {
                        Ok(_) => out.sent += 1,
                        Err(_) => out.refused += 1,
                    },
                    Out::Tcp(s) => match s.write_all(&buf) {
                        Ok(()) => out.sent += 1,
                        Err(_) => {
                            out.refused += 1;
                            break;
                        }
                    },
                }
                i += 1;
            }
            out.elapsed = start.elapsed();
            Ok(out)
        })
        .join()
        .unwrap_or_else(|_| Err(Error::Topology("generator thread panicked".to_owned())))
    }
}

/// The generator's socket.
enum Out {
    Udp(UdpSocket),
    Tcp(TcpStream),
}

/// The receiving application: reads and counts until stopped.
#[derive(Debug)]
pub struct Sink {
    /// Datagrams read (UDP), or octets read (TCP).
    received: Arc<AtomicU64>,
    /// Octets per message (TCP), 1 for UDP, where each datagram counts itself.
    per_message: u64,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    tid: i32,
}

impl Sink {
    /// Binds `addr`:[`PORT`] inside `ns` over `proto` and reads on a thread pinned to `cpu`;
    /// a TCP sink accepts one connection after another and counts `payload` octets as one
    /// message.
    pub fn start(
        ns: PathBuf,
        cpu: usize,
        addr: Ipv4Addr,
        proto: Proto,
        payload: usize,
    ) -> Result<Sink, Error> {
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let (r, s) = (received.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let tid = nix::unistd::gettid().as_raw();
            let sock = topo::enter(&ns).and_then(|()| {
                topo::pin(cpu);
                let err =
                    |what: &str, e: std::io::Error| Error::Topology(format!("sink {what}: {e}"));
                match proto {
                    Proto::Udp => {
                        let sock = UdpSocket::bind((addr, PORT)).map_err(|e| err("socket", e))?;
                        sock.set_read_timeout(Some(READ_TIMEOUT))
                            .map_err(|e| err("timeout", e))?;
                        Ok(In::Udp(sock))
                    }
                    Proto::Tcp => {
                        let l = TcpListener::bind((addr, PORT)).map_err(|e| err("listener", e))?;
                        l.set_nonblocking(true).map_err(|e| err("listener", e))?;
                        Ok(In::Tcp(l))
                    }
                }
            });
            let sock = match sock {
                Ok(sock) => {
                    let _ = tx.send(Ok(tid));
                    sock
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let mut buf = [0u8; 65536];
            match sock {
                In::Udp(sock) => {
                    while !s.load(Ordering::Relaxed) {
                        if sock.recv(&mut buf).is_ok() {
                            r.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                In::Tcp(listener) => {
                    while !s.load(Ordering::Relaxed) {
                        match listener.accept() {
                            Ok((conn, _)) => read_stream(conn, &mut buf, &s, &r),
                            Err(_) => std::thread::sleep(Duration::from_millis(2)),
                        }
                    }
                }
            }
        });
        let tid = rx
            .recv()
            .map_err(|_| Error::Topology("sink thread ended".to_owned()))??;
        Ok(Sink {
            received,
            per_message: match proto {
                Proto::Udp => 1,
                Proto::Tcp => payload.max(tag::LEN) as u64,
            },
            stop,
            thread: Some(thread),
            tid,
        })
    }

    /// The reading thread's time on a CPU so far, ns (its schedstat).
    pub fn cpu_ns(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/self/task/{}/schedstat", self.tid))
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    /// Datagrams (TCP: whole messages) read so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed) / self.per_message
    }

    /// Waits until the count has not moved for `quiet` (at most `limit`): the queue drained.
    pub fn settle(&self, quiet: Duration, limit: Duration) -> u64 {
        let start = Instant::now();
        let mut last = self.received();
        let mut since = Instant::now();
        while start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(10));
            let now = self.received();
            if now != last {
                last = now;
                since = Instant::now();
            } else if since.elapsed() >= quiet {
                break;
            }
        }
        last
    }
}

/// How long a sink's read blocks before it looks at its stop flag.
const READ_TIMEOUT: Duration = Duration::from_millis(20);

/// The sink's socket.
enum In {
    Udp(UdpSocket),
    Tcp(TcpListener),
}

/// Reads one accepted TCP connection until the peer closes it or the sink stops, counting
/// octets.
fn read_stream(mut conn: TcpStream, buf: &mut [u8], stop: &AtomicBool, octets: &AtomicU64) {
    // The listener is non-blocking; the connection reads blocking, with a timeout.
    if conn.set_nonblocking(false).is_err() || conn.set_read_timeout(Some(READ_TIMEOUT)).is_err() {
        return;
    }
    while !stop.load(Ordering::Relaxed) {
        match conn.read(buf) {
            Ok(0) => return,
            Ok(n) => {
                octets.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A CPU-bound task pinned to one CPU until dropped: the "CPU at full load" condition, and
/// reference 004's `openssl speed` idea. Its work done per second, against a quiet
/// baseline, tells how much of the CPU something else took.
#[derive(Debug)]
pub struct Competitor {
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Competitor {
    /// Starts spinning on `cpu`.
    pub fn start(cpu: usize) -> Competitor {
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicU64::new(0));
        let (s, r) = (stop.clone(), rounds.clone());
        let thread = std::thread::spawn(move || {
            topo::pin(cpu);
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            while !s.load(Ordering::Relaxed) {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.rotate_left(7) ^ x.wrapping_mul(31));
                }
                r.fetch_add(1, Ordering::Relaxed);
            }
        });
        Competitor {
            stop,
            rounds,
            thread: Some(thread),
        }
    }

    /// Units of work done so far (10 000 multiply-rotates each).
    pub fn rounds(&self) -> u64 {
        self.rounds.load(Ordering::Relaxed)
    }

    /// Its rate alone on the CPU: units per second over `window`, nothing else running
    /// there on purpose.
    pub fn baseline(cpu: usize, window: Duration) -> f64 {
        let c = Competitor::start(cpu);
        // Let it get scheduled and pinned before counting.
        std::thread::sleep(Duration::from_millis(50));
        let (r0, t0) = (c.rounds(), Instant::now());
        std::thread::sleep(window);
        (c.rounds() - r0) as f64 / t0.elapsed().as_secs_f64().max(1e-9)
    }
}

impl Drop for Competitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
