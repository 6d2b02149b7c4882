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
}

impl Sink {
    /// Binds `addr`:[`PORT`] inside `ns` and reads on a thread pinned to `cpu`.
    pub fn start(ns: PathBuf, cpu: usize, addr: Ipv4Addr) -> Result<Sink, Error> {
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let (r, s) = (received.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
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
                    let _ = tx.send(Ok(()));
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
        rx.recv()
            .map_err(|_| Error::Topology("sink thread ended".to_owned()))??;
        Ok(Sink {
            received,
            stop,
            thread: Some(thread),
        })
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

/// A CPU-bound task pinned to one CPU until dropped: the "CPU at full load" condition.
#[derive(Debug)]
pub struct Competitor {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
}

impl Competitor {
    /// Starts spinning on `cpu`.
    pub fn start(cpu: usize) -> Competitor {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            topo::pin(cpu);
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut rounds = 0u64;
            while !s.load(Ordering::Relaxed) {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.rotate_left(7) ^ x.wrapping_mul(31));
                }
                rounds += 1;
            }
            rounds
        });
        Competitor {
            stop,
            thread: Some(thread),
        }
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
