//! The sweep's traffic: a paced UDP generator writing the probe's tag into every payload, a
//! sink that reads and counts, and a CPU-bound competitor for the loaded condition. Each is
//! a thread pinned to its CPU and, for the first two, moved into its namespace.

use std::net::{Ipv4Addr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::topo;
use crate::{tag, Error};

/// The UDP port the sink listens on.
pub const PORT: u16 = 9;

/// How far ahead of its schedule a paced generator may send: datagrams leave in bursts of
/// up to a millisecond's worth.
pub const BURST: Duration = Duration::from_millis(1);

/// What one generator run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sent {
    /// Datagrams the kernel accepted.
    pub sent: u64,
    /// Datagrams it refused (ENOBUFS and the like).
    pub refused: u64,
    /// How long the run took.
    pub elapsed: Duration,
}

impl topo::Topology {
    /// Sends `payload`-octet datagrams from the generator's namespace and address (on a
    /// thread pinned to `cpu`) to the receiver at `rate` per second (`None`: as fast as the
    /// CPU allows) for `duration` or `max` datagrams, whichever ends first. Datagram i of
    /// `flow` carries tag (flow, i).
    pub fn send(
        &self,
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
            let sock = UdpSocket::bind((from, 0))
                .map_err(|e| Error::Topology(format!("generator socket: {e}")))?;
            sock.connect((to, PORT))
                .map_err(|e| Error::Topology(format!("generator connect: {e}")))?;
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
                match sock.send(&buf) {
                    Ok(_) => out.sent += 1,
                    Err(_) => out.refused += 1,
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

/// The receiving application: reads and counts until stopped.
#[derive(Debug)]
pub struct Sink {
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    tid: i32,
}

impl Sink {
    /// Binds `addr`:[`PORT`] inside `ns` and reads on a thread pinned to `cpu`.
    pub fn start(ns: PathBuf, cpu: usize, addr: Ipv4Addr) -> Result<Sink, Error> {
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let (r, s) = (received.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let tid = nix::unistd::gettid().as_raw();
            let sock = topo::enter(&ns).and_then(|()| {
                topo::pin(cpu);
                let sock = UdpSocket::bind((addr, PORT))
                    .map_err(|e| Error::Topology(format!("sink socket: {e}")))?;
                sock.set_read_timeout(Some(Duration::from_millis(20)))
                    .map_err(|e| Error::Topology(format!("sink timeout: {e}")))?;
                Ok(sock)
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
            while !s.load(Ordering::Relaxed) {
                if sock.recv(&mut buf).is_ok() {
                    r.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let tid = rx
            .recv()
            .map_err(|_| Error::Topology("sink thread ended".to_owned()))??;
        Ok(Sink {
            received,
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

    /// Datagrams read so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
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
