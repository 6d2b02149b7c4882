//! [`SctpSocket`]: one sans-IO endpoint on one transport socket.

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use sctp::{Endpoint, Transmit};

use crate::transport::{is_fatal, Transport};

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
    /// System calls that wrote them (`sendto`, or `sendmmsg` for several).
    pub send_calls: u64,
    /// Writes the kernel refused (an nftables drop on output, no route...): SCTP treats them
    /// as lost and retransmits.
    pub send_errors: u64,
}

/// An SCTP endpoint bound to a transport socket.
pub struct SctpSocket {
    transport: Transport,
    endpoint: Endpoint,
    buf: Vec<u8>,
    /// The packets of one flush, kept between flushes for their capacity.
    pending: Vec<Transmit>,
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
            pending: Vec::new(),
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

    /// Sends every packet the endpoint has ready, all of them in one `sendmmsg` where the
    /// socket takes them (a flush after a batch of reads holds a packet per association
    /// that had something to say).
    pub async fn flush(&mut self) -> io::Result<()> {
        let now = Instant::now();
        self.pending.clear();
        while let Some(t) = self.endpoint.poll_transmit(now) {
            self.pending.push(t);
        }
        match self.pending.as_slice() {
            [] => Ok(()),
            [t] => match self.transport.send(t.remote, &t.packet).await {
                Ok(()) => {
                    self.stats.packets_out += 1;
                    self.stats.send_calls += 1;
                    Ok(())
                }
                Err(e) if is_fatal(&e) => Err(e),
                Err(e) => {
                    self.stats.send_calls += 1;
                    self.stats.send_errors += 1;
                    lost(t.remote, &e);
                    Ok(())
                }
            },
            many => {
                let done = self.transport.send_batch(many, lost).await?;
                self.stats.packets_out += done.sent as u64;
                self.stats.send_errors += done.failed as u64;
                self.stats.send_calls += done.calls as u64;
                Ok(())
            }
        }
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

/// A packet the kernel refused is lost; SCTP's retransmission recovers it like any loss.
fn lost(remote: SocketAddr, e: &io::Error) {
    tracing::debug!(%remote, error = %e, "SCTP packet not sent");
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use sctp::{EndpointConfig, Event};
    use std::net::{Ipv4Addr, SocketAddrV4};
    use std::time::Duration;

    const ASSOCS: u16 = 8;

    /// Drives both sockets until `done` says so, within a bound.
    async fn until(
        a: &mut SctpSocket,
        b: &mut SctpSocket,
        mut done: impl FnMut(&mut SctpSocket, &mut SctpSocket) -> bool,
    ) {
        for _ in 0..200 {
            if done(a, b) {
                return;
            }
            let at = Some(Instant::now() + Duration::from_millis(5));
            a.drive(at).await.unwrap();
            b.drive(at).await.unwrap();
        }
        panic!("not done within 200 turns");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn one_flush_for_several_associations_is_one_system_call() {
        let lo = Ipv4Addr::LOCALHOST;
        let server_cfg = EndpointConfig {
            listen_port: Some(38_412),
            ..EndpointConfig::default()
        };
        let mut server = SctpSocket::new(
            Transport::bind_udp(SocketAddrV4::new(lo, 0)).unwrap(),
            Endpoint::new(server_cfg),
        );
        let mut client = SctpSocket::new(
            Transport::bind_udp(SocketAddrV4::new(lo, 0)).unwrap(),
            Endpoint::new(EndpointConfig::default()),
        );
        let to = SocketAddr::V4(server.transport().local());
        let ids: Vec<_> = (0..ASSOCS)
            .map(|i| {
                client
                    .endpoint_mut()
                    .connect(Instant::now(), to, 40_000 + i, 38_412)
                    .unwrap()
            })
            .collect();
        let mut up = 0;
        until(&mut client, &mut server, |c, _| {
            while let Some((_, e)) = c.endpoint_mut().poll_event() {
                up += u16::from(matches!(e, Event::Connected { .. }));
            }
            up == ASSOCS
        })
        .await;

        // Let the handshake's SACKs settle, then one message per association in one flush.
        until(&mut client, &mut server, |_, _| true).await;
        let before = client.io_stats();
        for &id in &ids {
            client
                .endpoint_mut()
                .send(id, 0, 60, false, bytes::Bytes::from_static(b"ngap"))
                .unwrap();
        }
        client.flush().await.unwrap();
        let after = client.io_stats();
        assert_eq!(after.packets_out - before.packets_out, u64::from(ASSOCS));
        assert_eq!(after.send_calls - before.send_calls, 1, "{after:?}");
        assert_eq!(after.send_errors, 0);

        let mut got = 0;
        until(&mut server, &mut client, |s, _| {
            while let Some((_, e)) = s.endpoint_mut().poll_event() {
                got += u16::from(matches!(e, Event::Message(_)));
            }
            got == ASSOCS
        })
        .await;
    }
}
