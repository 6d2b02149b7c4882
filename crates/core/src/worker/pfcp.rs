//! A worker's PFCP socket towards the UPF: bound and connected when the worker starts,
//! drained into one reused buffer, every datagram handed to the host; what the host sends
//! goes out with a plain send(2). Retransmissions come out of the host (TS 29.244 §6.4).

use std::rc::Rc;
use std::time::Instant;

use nf::host::{Input, IoEvent, Placement};

use super::Worker;

impl<P: Placement> Worker<P> {
    /// Binds this worker's PFCP socket (connected to the UPF) and starts the association.
    pub(super) fn open_pfcp(&mut self) {
        let Some(smf) = self.shared.host.smf.as_ref() else {
            return;
        };
        let (ip, upf) = (smf.pfcp_ip, smf.upf);
        let sock = std::net::UdpSocket::bind((ip, 0))
            .and_then(|s| {
                s.connect(upf)?;
                s.set_nonblocking(true)?;
                let b = upf::service::size_pfcp_socket(&s);
                tracing::debug!(
                    worker = self.id.0,
                    recv = b.recv,
                    send = b.send,
                    "PFCP socket"
                );
                Ok(s)
            })
            .and_then(tokio::net::UdpSocket::from_std);
        match sock {
            Ok(s) => {
                self.pfcp = Some(Rc::new(s));
                self.host.pfcp_open(Instant::now(), upf::service::ntp_now());
            }
            Err(e) => tracing::error!(worker = self.id.0, error = %e, "PFCP socket"),
        }
    }

    /// Hands every datagram the UPF has sent to the host, without waiting; false when
    /// there was none (a spurious readiness).
    pub(super) fn drain_pfcp(&mut self) -> bool {
        let Some(s) = self.pfcp.clone() else {
            return false;
        };
        let mut any = false;
        loop {
            match self.pfcp_rx.try_recv_from(&s, &mut self.pfcp_buf) {
                Ok((n, _)) => {
                    any = true;
                    let bytes = self.pfcp_buf.get(..n).unwrap_or_default();
                    self.host.handle(Instant::now(), Input::Pfcp(bytes));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    // ICMP port unreachable before the UPF is up surfaces here.
                    tracing::debug!(error = %e, "PFCP receive");
                    break;
                }
            }
        }
        self.host
            .record_io(IoEvent::PfcpRxDropped(self.pfcp_rx.dropped()));
        any
    }

    pub(super) fn send_pfcp(&mut self, bytes: &[u8]) {
        // Requests come out of the host again (TS 29.244 §6.4) when unanswered.
        let Some(s) = self.pfcp.as_ref() else {
            tracing::debug!("PFCP message without a PFCP socket");
            return;
        };
        // A plain send(2), not `try_send`: Tokio's `try_send` answers WouldBlock without
        // trying until its reactor has seen the socket writable, which a new socket has not
        // yet: a request sent right after the bind would be dropped unsent.
        if let Err(e) = socket2::SockRef::from(&**s).send(bytes) {
            self.host.record_io(IoEvent::PfcpSendFailed);
            let n = self.host.counters().pfcp_send_failed;
            // Loud at the 1st, 2nd, 4th, ... failure: a UPF that is down (ICMP refusals)
            // fails every send, which must not flood the log.
            if n.is_power_of_two() {
                tracing::warn!(worker = self.id.0, error = %e, failures = n, "PFCP send failed; sent again after T1");
            } else {
                tracing::debug!(worker = self.id.0, error = %e, "PFCP send failed");
            }
        }
    }
}
