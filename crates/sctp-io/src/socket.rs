//! [`SctpSocket`]: one sans-IO endpoint on one transport socket.

use std::io;
use std::time::Instant;

use sctp::Endpoint;

use crate::transport::Transport;

/// Packets read per wake-up before the endpoint's output is flushed: enough to amortise the
/// wake-up, small enough that SACKs and replies are not held back for long.
const RECV_BATCH: usize = 64;

/// Largest datagram we accept: an IPv4 datagram can be no larger.
const RECV_BUFFER: usize = 65_536;

/// Socket-level counters (the endpoint keeps the SCTP ones).
#[derive(Debug, Clone, Copy, Default)]
pub struct IoStats {
    /// Times `drive` woke up because packets were readable.
    pub wakeups: u64,
    /// Packets read from the socket.
    pub packets_in: u64,
    /// Packets written to the socket.
    pub packets_out: u64,
    /// Writes the kernel refused (an nftables drop on output, no route...): SCTP treats them
    /// as lost and retransmits.
    pub send_errors: u64,
}

/// An SCTP endpoint bound to a transport socket.
pub struct SctpSocket {
    transport: Transport,
    endpoint: Endpoint,
    buf: Vec<u8>,
    stats: IoStats,
}

impl std::fmt::Debug for SctpSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SctpSocket")
            .field("transport", &self.transport)
            .field("associations", &self.endpoint.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl SctpSocket {
    /// Pairs an endpoint with the socket that carries its packets.
    pub fn new(transport: Transport, endpoint: Endpoint) -> Self {
        SctpSocket {
            transport,
            endpoint,
            buf: vec![0; RECV_BUFFER],
            stats: IoStats::default(),
        }
    }

    /// The SCTP endpoint, to poll events from and to send on.
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    /// The SCTP endpoint, read-only.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The transport socket.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Socket-level counters.
    pub fn io_stats(&self) -> IoStats {
        self.stats
    }

    /// Sends every packet the endpoint has ready.
    pub async fn flush(&mut self) -> io::Result<()> {
        let now = Instant::now();
        while let Some(t) = self.endpoint.poll_transmit(now) {
            match self.transport.send(t.remote, &t.packet).await {
                Ok(()) => self.stats.packets_out += 1,
                Err(e) if is_fatal(&e) => return Err(e),
                Err(e) => {
                    // The packet is lost; SCTP's retransmission recovers it like any loss.
                    self.stats.send_errors += 1;
                    tracing::debug!(remote = %t.remote, error = %e, "SCTP packet not sent");
                }
            }
        }
        Ok(())
    }

    /// One turn of the loop: flush pending output, wait for packets, an SCTP timer or
    /// `deadline` (whichever comes first), feed what arrived to the endpoint, run due timers
    /// and flush again. The caller then drains [`Endpoint::poll_event`].
    pub async fn drive(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        self.flush().await?;
        let wake = match (self.endpoint.poll_timeout(), deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Self {
            transport,
            endpoint,
            buf,
            stats,
            ..
        } = self;
        let recv = transport.recv_batch(buf, RECV_BATCH, |remote, pkt| {
            endpoint.handle(Instant::now(), remote, pkt);
        });
        let got = match wake {
            Some(at) => {
                tokio::select! {
                    r = recv => Some(r?),
                    _ = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => None,
                }
            }
            None => Some(recv.await?),
        };
        if let Some(n) = got {
            stats.wakeups += 1;
            stats.packets_in += n as u64;
        }
        self.endpoint.handle_timeout(Instant::now());
        self.flush().await
    }
}

/// Send errors that mean the socket itself is broken, as opposed to one lost packet.
fn is_fatal(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EBADF) | Some(libc::ENOTSOCK))
}
