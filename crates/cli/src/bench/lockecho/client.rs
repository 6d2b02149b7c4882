//! The closed-loop client of `bench echo`: one thread, several UDP sockets (so that the
//! kernel's reuseport hash of the locked design has several flows to spread), each keeping
//! a fixed window of requests outstanding, with keys drawn uniformly from the key space.
//!
//! A socket that hears nothing for [`RESEND_AFTER`] sends its window again, so a lost
//! datagram shrinks no window for good; such resends are counted.

use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::server::REQUEST_LEN;

/// Silence after which a socket sends its whole window again.
const RESEND_AFTER: Duration = Duration::from_millis(200);

/// What the client does.
#[derive(Debug, Clone)]
pub(crate) struct ClientConfig {
    pub(crate) server: SocketAddr,
    pub(crate) sockets: u32,
    /// Requests outstanding per socket.
    pub(crate) window: u32,
    /// Keys are drawn from `0..keys`.
    pub(crate) keys: u32,
    pub(crate) warmup: Duration,
    pub(crate) duration: Duration,
    /// Core to pin the client thread to, when one is free of workers.
    pub(crate) core: Option<core_affinity::CoreId>,
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

/// Runs the client on the calling thread until the measured window ends.
pub(crate) fn run(cfg: &ClientConfig) -> std::io::Result<ClientOutcome> {
    let pinned = cfg.core.is_some_and(core_affinity::set_for_current);
    let cpu0 = cpu_time::ThreadTime::try_now().ok();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let received = Rc::new(Cell::new(0u64));
        let resends = Rc::new(Cell::new(0u64));
        let mut tasks = Vec::new();
        for i in 0..cfg.sockets {
            let sock = tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await?;
            sock.connect(cfg.server).await?;
            let received = Rc::clone(&received);
            let resends = Rc::clone(&resends);
            let (window, keys) = (cfg.window, cfg.keys);
            tasks.push(tokio::task::spawn_local(async move {
                let mut rng = Keys(0x9e37_79b9_7f4a_7c15 ^ ((u64::from(i) + 1) * 0x2545_f491));
                let mut seq = 0u32;
                let mut buf = [0u8; 64];
                loop {
                    for _ in 0..window {
                        seq = seq.wrapping_add(1);
                        sock.send(&request(rng.next(keys), seq)).await?;
                    }
                    loop {
                        match tokio::time::timeout(RESEND_AFTER, sock.recv(&mut buf)).await {
                            Ok(Ok(_)) => {
                                received.set(received.get().wrapping_add(1));
                                seq = seq.wrapping_add(1);
                                sock.send(&request(rng.next(keys), seq)).await?;
                            }
                            Ok(Err(e)) => return Err::<(), std::io::Error>(e),
                            Err(_) => {
                                resends.set(resends.get().wrapping_add(1));
                                break;
                            }
                        }
                    }
                }
            }));
        }
        tokio::time::sleep(cfg.warmup).await;
        let (c0, t0) = (received.get(), Instant::now());
        tokio::time::sleep(cfg.duration).await;
        let (c1, elapsed) = (received.get(), t0.elapsed());
        for t in &tasks {
            t.abort();
        }
        // A task that ended on its own hit an I/O error: report the first.
        for t in tasks {
            if let Ok(Err(e)) = t.await {
                return Err(e);
            }
        }
        let responses = c1.wrapping_sub(c0);
        let secs = elapsed.as_secs_f64();
        Ok(ClientOutcome {
            responses,
            elapsed_s: secs,
            rps: if secs > 0.0 {
                responses as f64 / secs
            } else {
                0.0
            },
            resends: resends.get(),
            received_total: received.get(),
            cpu_s: cpu0
                .and_then(|c| c.try_elapsed().ok())
                .map_or(0.0, |d| d.as_secs_f64()),
            pinned,
        })
    })
}

#[cfg(test)]
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
    }
}
