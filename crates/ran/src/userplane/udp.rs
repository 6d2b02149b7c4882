//! A small N3 loop over a non-blocking `std` UDP socket: paced uplink probes on every
//! session in turn, downlink replies read between sends. Bounded by a probe count and
//! a wall-clock limit.

use std::io;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use super::{Pacer, UserPlane};

/// How long and how fast.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    /// Probes per second over all sessions.
    pub rate_pps: u64,
    /// Probes to send in all.
    pub count: u64,
    /// Wall-clock limit of the whole run, drain included.
    pub max_duration: Duration,
    /// How long after the last send replies are still awaited.
    pub drain: Duration,
}

/// What a run did, beside the counters in the [`UserPlane`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOutcome {
    /// Probes sent (a send refused by a full socket buffer included: it counts as lost).
    pub sent: u64,
    /// From the start to the last send: the time the offered rate was spread over.
    pub send_time: Duration,
    /// The whole run, drain included.
    pub total_time: Duration,
}

/// Sends `limits.count` probes round-robin over the sessions of `up` from `sock` (the
/// gNB's N3 socket) at `limits.rate_pps`, reads replies, then drains and counts the
/// unanswered as lost. Returns the number sent.
pub fn run(up: &mut UserPlane, sock: &UdpSocket, limits: RunLimits) -> io::Result<u64> {
    run_timed(up, sock, limits).map(|o| o.sent)
}

/// [`run`], also telling how long the sending and the whole run took.
pub fn run_timed(
    up: &mut UserPlane,
    sock: &UdpSocket,
    limits: RunLimits,
) -> io::Result<RunOutcome> {
    let n = up.sessions().len();
    if n == 0 {
        return Ok(RunOutcome::default());
    }
    let t0 = Instant::now();
    let now = || u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut pacer = Pacer::new(limits.rate_pps, 0);
    let mut buf = Vec::with_capacity(2048);
    let mut rx = vec![0u8; 65536];
    let mut sent = 0u64;
    let mut next_session = 0usize;
    let mut last_send = None;
    let mut send_time = Duration::ZERO;
    // Non-blocking: every pass sends what is due, then reads every reply queued, so
    // replies never wait behind the pacing; an idle pass blocks in a receive until the
    // next send is due, so a reply is timed when it arrives.
    sock.set_nonblocking(true)?;
    loop {
        if t0.elapsed() >= limits.max_duration {
            break;
        }
        let mut busy = false;
        if sent < limits.count {
            for _ in 0..pacer.due(now(), 256.min(limits.count - sent)) {
                let to = up
                    .build_uplink(next_session, now(), &mut buf)
                    .map_err(io::Error::other)?;
                match sock.send_to(&buf, to) {
                    Ok(_) => {}
                    // A full socket buffer drops the probe, as a congested link would:
                    // it stays in flight and counts as lost.
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                sent += 1;
                send_time = t0.elapsed();
                busy = true;
                next_session = (next_session + 1) % n;
            }
            if sent == limits.count {
                last_send = Some(Instant::now());
            }
        } else if last_send.is_some_and(|t| t.elapsed() >= limits.drain) || up.in_flight() == 0 {
            break;
        }
        for _ in 0..4096 {
            match sock.recv(&mut rx) {
                Ok(len) => {
                    up.handle_downlink(&rx[..len], now());
                    busy = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if !busy {
            let wait = if sent < limits.count {
                Duration::from_nanos(pacer.wait_ns(now()))
            } else {
                Duration::from_millis(1)
            };
            // Idle until the next send, but woken by a reply: a plain sleep would add up
            // to its length to every round trip measured. A zero timeout means "forever"
            // to the socket, hence the floor.
            let wait = wait.clamp(Duration::from_micros(20), Duration::from_millis(1));
            sock.set_nonblocking(false)?;
            sock.set_read_timeout(Some(wait))?;
            let r = sock.recv(&mut rx);
            sock.set_nonblocking(true)?;
            match r {
                Ok(len) => {
                    up.handle_downlink(&rx[..len], now());
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }
    up.finish();
    Ok(RunOutcome {
        sent,
        send_time,
        total_time: t0.elapsed(),
    })
}
