//! The closed-loop client of `bench echo`: one thread, a few UDP sockets (so that the
//! kernel's reuseport hash of `--locked-rx hash` has several flows to spread), and a window
//! of requests outstanding **per worker's key space**: keys `k` with `k % workers == i` are
//! owned by worker `i` in the sharded design, and the client keeps `window` of those
//! outstanding for every `i`. So in the sharded design every worker always has queued work,
//! whatever the speed of the others (a window shared by all keys drains into the slowest
//! worker and gates the rest on it). The locked design gets the very same requests; for it
//! the split is only a way of choosing keys, uniform within each worker's space.
//!
//! The client is built to be cheap, because on a machine with no core to spare it takes its
//! CPU from the workers: it wakes every [`ClientConfig::pace`], takes every echo queued with
//! `recvmmsg`, and sends the refills of all windows with one `sendmmsg` (see [`super::mmsg`]),
//! so each wake-up and system call is shared by many requests. The windows are deep enough
//! (by default 32 requests, ~0.9 ms of a worker's work) that no worker runs dry between two
//! wake-ups.
//!
//! A worker's space that sees no echo for [`RESEND_AFTER`] while requests are outstanding is
//! taken as lost and its window sent again, so a dropped datagram shrinks no window for good;
//! such resends are counted.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::mmsg::{self, MAX_BATCH};
use super::server::{REQUEST_LEN, REQUEST_MAX};

/// Silence after which a worker's space has its window sent again.
const RESEND_AFTER: Duration = Duration::from_millis(200);

/// What the client does.
#[derive(Debug, Clone)]
pub(crate) struct ClientConfig {
    pub(crate) server: SocketAddr,
    pub(crate) sockets: u32,
    /// Requests outstanding per worker's key space.
    pub(crate) window: u32,
    /// The server's worker count: key `k` belongs to space `k % owners`.
    pub(crate) owners: u32,
    /// Keys are drawn from `0..keys`.
    pub(crate) keys: u32,
    /// Sleep between two rounds of receive-and-refill.
    pub(crate) pace: Duration,
    pub(crate) warmup: Duration,
    pub(crate) duration: Duration,
    /// Core to pin the client thread to, when one is free of workers.
    pub(crate) core: Option<core_affinity::CoreId>,
    /// `SCHED_FIFO` priority for the client thread (`--realtime`).
    pub(crate) fifo: Option<i32>,
}

/// What the client measured in its window.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct ClientOutcome {
    /// Echoes received in the measured window.
    pub(crate) responses: u64,
    pub(crate) elapsed_s: f64,
    /// Echoes per second.
    pub(crate) rps: f64,
    /// Windows sent again after silence, over the whole run.
    pub(crate) resends: u64,
    /// Echoes received over the whole run (warm-up included).
    pub(crate) received_total: u64,
    /// Requests sent over the whole run.
    pub(crate) sent_total: u64,
    /// Receive-and-refill rounds (wake-ups) over the whole run.
    pub(crate) rounds: u64,
    /// Client thread CPU time over the whole run.
    pub(crate) cpu_s: f64,
    /// Whether the thread was pinned.
    pub(crate) pinned: bool,
}

/// A small xorshift generator: keys need to be spread, not secret, and the same seed
/// gives the same sequence in both designs.
struct Keys(u64);

impl Keys {
    fn next(&mut self, keys: u32) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        // The remainder is below `keys`, a u32.
        (x % u64::from(keys.max(1))) as u32
    }
}

fn request(key: u32, seq: u32) -> [u8; REQUEST_LEN] {
    let mut r = [0u8; REQUEST_LEN];
    r[..4].copy_from_slice(&key.to_be_bytes());
    r[4..8].copy_from_slice(&seq.to_be_bytes());
    r
}

/// One worker's key space: the keys `k < keys` with `k % owners == index`.
struct Space {
    index: u32,
    /// How many keys the space holds (0 when `keys < owners` leaves it empty).
    size: u32,
    rng: Keys,
    outstanding: u32,
    /// When the space last heard an echo (or was first sent to with nothing outstanding).
    heard: Instant,
}

impl Space {
    fn spaces(owners: u32, keys: u32, now: Instant) -> Vec<Space> {
        let owners = owners.max(1);
        (0..owners)
            .map(|i| Space {
                index: i,
                size: keys / owners + u32::from(i < keys % owners),
                rng: Keys(0x9e37_79b9_7f4a_7c15 ^ ((u64::from(i) + 1) * 0x2545_f491)),
                outstanding: 0,
                heard: now,
            })
            .collect()
    }

    /// A key of this space (`size` > 0), uniform over it.
    fn key(&mut self, owners: u32) -> u32 {
        // index + owners * (size - 1) < keys, so no overflow.
        self.index
            .wrapping_add(owners.wrapping_mul(self.rng.next(self.size)))
    }
}

/// Which space an echo belongs to, from its key.
fn space_of(echo: &[u8], owners: u32) -> Option<usize> {
    let key = u32::from_be_bytes(echo.get(..4)?.try_into().ok()?);
    usize::try_from(key % owners.max(1)).ok()
}

/// Runs the client on the calling thread until the measured window ends.
pub(crate) fn run(cfg: &ClientConfig) -> std::io::Result<ClientOutcome> {
    let pinned = cfg.core.is_some_and(core_affinity::set_for_current);
    if let Some(prio) = cfg.fifo {
        mmsg::set_fifo(prio)?;
    }
    let cpu0 = cpu_time::ThreadTime::try_now().ok();
    let mut socks = Vec::new();
    for _ in 0..cfg.sockets.max(1) {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        s.connect(cfg.server)?;
        socks.push(s);
    }
    let owners = cfg.owners.max(1);
    let start = Instant::now();
    let mut spaces = Space::spaces(owners, cfg.keys, start);
    let warm_end = start + cfg.warmup;
    let mut window_start: Option<(Instant, u64)> = None;
    let (mut received, mut sent, mut resends, mut rounds) = (0u64, 0u64, 0u64, 0u64);
    let mut seq = 0u32;
    let mut bufs = [[0u8; REQUEST_MAX]; MAX_BATCH];
    let mut lens = [0usize; MAX_BATCH];
    let mut out: Vec<[u8; REQUEST_LEN]> = Vec::new();
    let mut owner_of: Vec<usize> = Vec::new();
    let (responses, elapsed) = loop {
        let now = Instant::now();
        match window_start {
            None if now >= warm_end => window_start = Some((now, received)),
            Some((t0, c0)) if now.saturating_duration_since(t0) >= cfg.duration => {
                break (received.wrapping_sub(c0), now.saturating_duration_since(t0));
            }
            _ => {}
        }
        rounds = rounds.wrapping_add(1);
        for s in &socks {
            loop {
                let n = mmsg::recv_batch(s, &mut bufs, &mut lens)?;
                for (b, &len) in bufs.iter().zip(&lens).take(n) {
                    let Some(sp) = b.get(..len).and_then(|e| space_of(e, owners)) else {
                        continue;
                    };
                    if let Some(sp) = spaces.get_mut(sp) {
                        sp.outstanding = sp.outstanding.saturating_sub(1);
                        sp.heard = now;
                    }
                    received = received.wrapping_add(1);
                }
                if n < MAX_BATCH {
                    break;
                }
            }
        }
        // Refill every window, interleaving the spaces so that a short send (full buffer)
        // shortchanges none of them.
        out.clear();
        owner_of.clear();
        for sp in &mut spaces {
            if sp.outstanding > 0 && now.saturating_duration_since(sp.heard) >= RESEND_AFTER {
                sp.outstanding = 0;
                resends = resends.wrapping_add(1);
            }
            if sp.outstanding == 0 {
                sp.heard = now;
            }
        }
        loop {
            let mut any = false;
            for (i, sp) in spaces.iter_mut().enumerate() {
                if sp.size > 0 && sp.outstanding < cfg.window {
                    seq = seq.wrapping_add(1);
                    out.push(request(sp.key(owners), seq));
                    owner_of.push(i);
                    sp.outstanding += 1;
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        if !out.is_empty() {
            // Rotating the socket per round spreads the flows for the kernel's hash.
            let idx = usize::try_from(rounds % socks.len() as u64).unwrap_or(0);
            let took = match socks.get(idx) {
                Some(s) => mmsg::send_batch(s, &out)?,
                None => 0,
            };
            sent = sent.wrapping_add(took as u64);
            // What the socket did not take is not outstanding.
            for &i in owner_of.get(took..).unwrap_or(&[]) {
                if let Some(sp) = spaces.get_mut(i) {
                    sp.outstanding = sp.outstanding.saturating_sub(1);
                }
            }
        }
        std::thread::sleep(cfg.pace);
    };
    let secs = elapsed.as_secs_f64();
    Ok(ClientOutcome {
        responses,
        elapsed_s: secs,
        rps: if secs > 0.0 {
            responses as f64 / secs
        } else {
            0.0
        },
        resends,
        received_total: received,
        sent_total: sent,
        rounds,
        cpu_s: cpu0
            .and_then(|c| c.try_elapsed().ok())
            .map_or(0.0, |d| d.as_secs_f64()),
        pinned,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_in_range_and_spread() {
        let mut k = Keys(12345);
        let mut seen = [0u32; 8];
        for _ in 0..8000 {
            let v = k.next(8);
            assert!(v < 8);
            seen[v as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 500), "{seen:?}");
        assert_eq!(Keys(1).next(0), 0);
    }

    #[test]
    fn requests_carry_key_first() {
        let r = request(0x0102_0304, 9);
        assert_eq!(steer_bpf::IdSpec::FIRST_WORD.extract(&r), Some(0x0102_0304));
        assert_eq!(r[7], 9);
        assert_eq!(space_of(&r, 4), Some(0x0102_0304 % 4));
        assert_eq!(space_of(&r[..3], 4), None);
    }

    /// Every key of a space is below `keys` and owned by that space, the spaces together
    /// cover every key, and a space too small to hold a key is empty.
    #[test]
    fn spaces_partition_the_keys() {
        let now = Instant::now();
        for (owners, keys) in [(2u32, 256u32), (3, 10), (4, 3), (1, 7)] {
            let mut spaces = Space::spaces(owners, keys, now);
            assert_eq!(spaces.iter().map(|s| s.size).sum::<u32>(), keys);
            let mut seen = vec![false; keys as usize];
            for sp in spaces.iter_mut().filter(|s| s.size > 0) {
                for _ in 0..(sp.size * 40) {
                    let k = sp.key(owners);
                    assert!(k < keys, "{owners} {keys} {k}");
                    assert_eq!(k % owners, sp.index);
                    seen[k as usize] = true;
                }
            }
            assert!(seen.iter().all(|&s| s), "{owners} {keys}");
        }
    }

    /// Against a plain echo on another thread: the client keeps its windows full, every
    /// space's requests come back, and no window is resent.
    #[test]
    fn windows_per_space_are_kept_full_against_an_echo() {
        let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
        echo.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let addr = echo.local_addr().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop2 = std::sync::Arc::clone(&stop);
        let per_space = std::thread::spawn(move || {
            let mut counts = [0u64; 3];
            let mut buf = [0u8; 64];
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok((n, from)) = echo.recv_from(&mut buf) {
                    if let Some(i) = space_of(&buf[..n], 3) {
                        counts[i] += 1;
                    }
                    echo.send_to(&buf[..n], from).unwrap();
                }
            }
            counts
        });
        let out = run(&ClientConfig {
            server: addr,
            sockets: 2,
            window: 4,
            owners: 3,
            keys: 100,
            pace: Duration::from_micros(200),
            warmup: Duration::from_millis(20),
            duration: Duration::from_millis(200),
            core: None,
            fifo: None,
        })
        .unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let counts = per_space.join().unwrap();
        assert!(out.responses > 0, "{out:?}");
        assert_eq!(out.resends, 0, "{out:?}");
        assert!(out.sent_total >= out.received_total, "{out:?}");
        // The sent total is at most what came back plus one window per space.
        assert!(out.sent_total <= out.received_total + 12, "{out:?}");
        assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
    }
}
