//! The data network's echo host: a UDP echo service (RFC 862) for the probes a UE sends
//! through the UPF, bound inside a namespace (the test bed's dn) and answered from a
//! thread of its own. ICMP echo needs nothing of this: the dn kernel answers it.
//!
//! The socket is created by a thread that entered the namespace (so it belongs there);
//! the echo loop itself runs on an ordinary thread, which a socket needs no namespace
//! for. The loop is bounded: it ends on [`DnEcho::stop`], on drop, or after its time
//! limit, whichever comes first, and checks for that at least every 50 ms.

use std::io;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the loop looks at the stop flag and the clock while idle.
const POLL: Duration = Duration::from_millis(50);

/// What an echo host did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EchoStats {
    /// Datagrams echoed.
    pub echoed: u64,
    /// Payload octets echoed.
    pub bytes: u64,
    /// Datagrams whose echo could not be sent.
    pub send_errors: u64,
}

#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    echoed: AtomicU64,
    bytes: AtomicU64,
    send_errors: AtomicU64,
}

impl Shared {
    fn snapshot(&self) -> EchoStats {
        EchoStats {
            echoed: self.echoed.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            send_errors: self.send_errors.load(Ordering::Relaxed),
        }
    }
}

/// A running UDP echo host.
#[derive(Debug)]
pub struct DnEcho {
    local: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl DnEcho {
    /// Binds `addr` inside namespace `netns` (`None`: this one) and echoes every datagram
    /// back to its sender until stopped or `limit` has passed.
    pub fn start(netns: Option<&str>, addr: SocketAddrV4, limit: Duration) -> io::Result<Self> {
        let sock = super::netns::run_in(netns, move || UdpSocket::bind(addr))??;
        sock.set_read_timeout(Some(POLL))?;
        let local = sock.local_addr()?;
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("dn-echo".to_owned())
            .spawn(move || echo_loop(&sock, &s, Instant::now() + limit))?;
        Ok(DnEcho {
            local,
            shared,
            thread: Some(thread),
        })
    }

    /// The bound address (with the port the OS chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The counts so far.
    pub fn stats(&self) -> EchoStats {
        self.shared.snapshot()
    }

    /// Whether the loop has ended (stopped or out of time).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the loop and returns the final counts.
    pub fn stop(mut self) -> EchoStats {
        self.halt();
        self.shared.snapshot()
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DnEcho {
    fn drop(&mut self) {
        self.halt();
    }
}

fn echo_loop(sock: &UdpSocket, s: &Shared, until: Instant) {
    let mut buf = vec![0u8; 65_536];
    while !s.stop.load(Ordering::Relaxed) && Instant::now() < until {
        let (n, from) = match sock.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            // An ICMP error for an earlier echo shows up here on Linux; keep serving.
            Err(_) => continue,
        };
        let data = buf.get(..n).unwrap_or(&[]);
        match sock.send_to(data, from) {
            Ok(_) => {
                s.echoed.fetch_add(1, Ordering::Relaxed);
                s.bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(_) => {
                s.send_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn echoes_until_stopped() {
        let e = DnEcho::start(
            None,
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
            Duration::from_secs(30),
        )
        .unwrap();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 64];
        for i in 0..5u8 {
            c.send_to(&[i; 10], e.local_addr()).unwrap();
            let (n, from) = c.recv_from(&mut buf).unwrap();
            assert_eq!((&buf[..n], from), (&[i; 10][..], e.local_addr()));
        }
        assert!(!e.is_finished());
        let st = e.stop();
        assert_eq!(
            st,
            EchoStats {
                echoed: 5,
                bytes: 50,
                send_errors: 0
            }
        );
    }

    #[test]
    fn ends_by_itself_after_its_limit() {
        let e = DnEcho::start(
            None,
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
            Duration::ZERO,
        )
        .unwrap();
        // Bounded: the loop sees its deadline on the first turn.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !e.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(e.is_finished());
    }

    #[test]
    fn a_missing_namespace_is_an_error() {
        let r = DnEcho::start(
            Some("steer5g-no-such-ns"),
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
            Duration::from_secs(1),
        );
        assert!(r.is_err());
    }
}
