//! The two ways an SCTP packet travels here: raw IPv4 protocol 132 and UDP encapsulation.
//!
//! This is the only module of the crate that touches sockets: every system call sits behind one
//! seam, so the rest of the stack stays sans-IO and testable without a network. Both transports
//! hand the sans-IO endpoint the same thing: the SCTP packet from its common header on, and the
//! remote transport address as a `SocketAddr` whose port is the peer's UDP encapsulation port, or 0
//! for raw IP.

use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::UdpSocket;

use sctp::Transmit;

use crate::mmsg::send_to_many;

/// IANA protocol number of SCTP.
pub const IPPROTO_SCTP: i32 = 132;

/// Socket buffer size we ask for: bursts of NG Setups from hundreds of gNBs and the echo
/// benchmark both overflow the 208 KiB default.
const SOCKET_BUFFER: usize = 4 << 20;

/// Sizes both buffers to `bytes` (`SOCKET_BUFFER` for every transport), past `net.core.rmem_max`/`wmem_max` when the
/// process may (`SO_RCVBUFFORCE`/`SO_SNDBUFFORCE`, CAP_NET_ADMIN), up to them otherwise.
/// Plain `SO_RCVBUF` stops at rmem_max, 208 KiB on a stock kernel, and there a burst of 1000
/// gNBs' NG Setups over UDP lost 490-711 datagrams at the N2 socket (`SOCKET_RCVBUFF`) and
/// cost up to 110 retransmissions; forced to 4 MiB, none (`scripts/n2-setup-burst.sh`,
/// docs/PERFORMANCE.md "Which receive-path tunings pay on our NFs?"). A smaller buffer
/// still works, so a refusal is only logged.
fn size_buffers(sock: &Socket, bytes: usize, what: &str) {
    use nix::sys::socket::{getsockopt, setsockopt, sockopt};
    if setsockopt(sock, sockopt::RcvBufForce, &bytes).is_err() {
        let _ = sock.set_recv_buffer_size(bytes);
    }
    if setsockopt(sock, sockopt::SndBufForce, &bytes).is_err() {
        let _ = sock.set_send_buffer_size(bytes);
    }
    // The kernel reports twice what it granted (its bookkeeping included).
    let granted = getsockopt(sock, sockopt::RcvBuf).unwrap_or(0) / 2;
    // Once per process: an emulator opens a transport per gNB.
    static CAPPED: std::sync::Once = std::sync::Once::new();
    if granted < bytes {
        CAPPED.call_once(|| {
            tracing::warn!(
                socket = what,
                granted,
                asked = bytes,
                "SCTP socket: receive buffer capped by net.core.rmem_max (no CAP_NET_ADMIN): \
                 raise rmem_max for bursts of associations"
            )
        });
    }
}

/// Why a transport could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// Raw IP needs CAP_NET_RAW (exit status 3 in the CLI).
    #[error("raw IP protocol 132 needs CAP_NET_RAW (run as root, or use --transport udp): {0}")]
    Privilege(io::Error),
    /// Any other socket error (address in use, address not available, ...).
    #[error("cannot bind {what}: {source}")]
    Io {
        /// What we tried to bind.
        what: String,
        /// The error from the kernel.
        source: io::Error,
    },
}

/// Which transport a socket uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Raw IPv4, protocol 132.
    Raw,
    /// SCTP in UDP (RFC 6951).
    Udp,
}

/// An open transport socket.
#[derive(Debug)]
pub struct Transport {
    inner: Inner,
    local: SocketAddrV4,
}

#[derive(Debug)]
enum Inner {
    Raw(AsyncFd<Socket>),
    Udp(UdpSocket),
}

impl Transport {
    /// Opens a raw IPv4 protocol-132 socket bound to `local`. Binding filters what the kernel
    /// hands us by destination address; every SCTP packet to that address arrives, whatever
    /// its port, so the endpoint must ignore ports it does not own.
    pub fn bind_raw(local: Ipv4Addr) -> Result<Self, BindError> {
        let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(IPPROTO_SCTP)))
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => BindError::Privilege(e),
                _ => BindError::Io {
                    what: "raw IPv4 protocol 132 socket".into(),
                    source: e,
                },
            })?;
        let io_err = |what: &str, source| BindError::Io {
            what: format!("{what} (raw {local})"),
            source,
        };
        sock.bind(&SockAddr::from(SocketAddrV4::new(local, 0)))
            .map_err(|e| io_err("bind", e))?;
        sock.set_nonblocking(true)
            .map_err(|e| io_err("set_nonblocking", e))?;
        size_buffers(&sock, SOCKET_BUFFER, "raw");
        let fd = register(sock).map_err(|e| io_err("register with the runtime", e))?;
        Ok(Transport {
            inner: Inner::Raw(fd),
            local: SocketAddrV4::new(local, 0),
        })
    }

    /// Opens a UDP socket for SCTP over UDP encapsulation bound to `local` (port 0 picks one).
    /// Must be called inside a Tokio runtime.
    ///
    /// The socket stays unconnected (one per worker serves every gNB), so RFS cannot steer
    /// its packets: the kernel records a flow's CPU only for connected UDP sockets. Neither
    /// RPS nor RFS changed the AMF's CPU per procedure beyond the rounds' spread (`steer5g
    /// probe sweep --target amf --rx-steering rps|rfs|off`, docs/PERFORMANCE.md); the
    /// workers' own steering (`sk_reuseport`) is what places an association.
    pub fn bind_udp(local: SocketAddrV4) -> Result<Self, BindError> {
        let io_err = |what: &str, source| BindError::Io {
            what: format!("{what} (udp {local})"),
            source,
        };
        let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| io_err("socket", e))?;
        sock.set_nonblocking(true)
            .map_err(|e| io_err("set_nonblocking", e))?;
        size_buffers(&sock, SOCKET_BUFFER, "udp");
        sock.bind(&SockAddr::from(local))
            .map_err(|e| io_err("bind", e))?;
        let std_sock: std::net::UdpSocket = sock.into();
        let udp =
            UdpSocket::from_std(std_sock).map_err(|e| io_err("register with the runtime", e))?;
        let local = match udp.local_addr() {
            Ok(SocketAddr::V4(a)) => a,
            _ => local,
        };
        Ok(Transport {
            inner: Inner::Udp(udp),
            local,
        })
    }

    /// Wraps a UDP socket bound elsewhere (one socket of an `SO_REUSEPORT` group, so that
    /// several endpoints share the encapsulation port, each reading its own socket). Must be
    /// called inside a Tokio runtime.
    pub fn from_udp(sock: std::net::UdpSocket) -> Result<Self, BindError> {
        let local = match sock.local_addr() {
            Ok(SocketAddr::V4(a)) => a,
            Ok(other) => {
                return Err(BindError::Io {
                    what: format!("udp {other}"),
                    source: io::Error::other("UDP encapsulation is IPv4 only here"),
                })
            }
            Err(source) => {
                return Err(BindError::Io {
                    what: "udp local address".into(),
                    source,
                })
            }
        };
        let io_err = |what: &str, source| BindError::Io {
            what: format!("{what} (udp {local})"),
            source,
        };
        let sock = Socket::from(sock);
        sock.set_nonblocking(true)
            .map_err(|e| io_err("set_nonblocking", e))?;
        size_buffers(&sock, SOCKET_BUFFER, "udp");
        let udp =
            UdpSocket::from_std(sock.into()).map_err(|e| io_err("register with the runtime", e))?;
        Ok(Transport {
            inner: Inner::Udp(udp),
            local,
        })
    }

    /// Raw or UDP.
    pub fn kind(&self) -> Kind {
        match self.inner {
            Inner::Raw(_) => Kind::Raw,
            Inner::Udp(_) => Kind::Udp,
        }
    }

    /// The bound address (port 0 for raw IP; the real port for UDP, even when 0 was asked).
    pub fn local(&self) -> SocketAddrV4 {
        self.local
    }

    /// Waits until at least one packet is readable, then reads up to `max` packets without
    /// blocking and hands each SCTP packet to `f` with its remote transport address. Returns
    /// how many were read.
    pub async fn recv_batch(
        &self,
        buf: &mut [u8],
        max: usize,
        mut f: impl FnMut(SocketAddr, &[u8]),
    ) -> io::Result<usize> {
        match &self.inner {
            Inner::Raw(fd) => loop {
                let mut guard = fd.readable().await?;
                let mut n = 0;
                loop {
                    let res = guard.try_io(|inner| {
                        let mut sock: &Socket = inner.get_ref();
                        sock.read(buf)
                    });
                    match res {
                        Ok(Ok(len)) => {
                            let got = buf.get(..len).unwrap_or_default();
                            if let Some((src, range)) = parse_ipv4(got) {
                                if let Some(pkt) = got.get(range) {
                                    f(SocketAddr::V4(SocketAddrV4::new(src, 0)), pkt);
                                }
                            }
                            n += 1;
                            if n >= max {
                                return Ok(n);
                            }
                        }
                        Ok(Err(e)) if is_transient(&e) => continue,
                        Ok(Err(e)) => return Err(e),
                        Err(_would_block) => break,
                    }
                }
                if n > 0 {
                    return Ok(n);
                }
            },
            Inner::Udp(sock) => loop {
                sock.readable().await?;
                let mut n = 0;
                loop {
                    match sock.try_recv_from(buf) {
                        Ok((len, src)) => {
                            if let Some(pkt) = buf.get(..len) {
                                f(src, pkt);
                            }
                            n += 1;
                            if n >= max {
                                return Ok(n);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if is_transient(&e) => continue,
                        Err(e) => return Err(e),
                    }
                }
                if n > 0 {
                    return Ok(n);
                }
            },
        }
    }

    /// Sends one SCTP packet to `remote`, waiting for socket space if the buffer is full.
    pub async fn send(&self, remote: SocketAddr, packet: &[u8]) -> io::Result<()> {
        match &self.inner {
            Inner::Raw(fd) => {
                // The kernel builds the IPv4 header (protocol 132, source = our bound
                // address); the port in `remote` means nothing for raw IP.
                let dst = SockAddr::from(SocketAddr::new(remote.ip(), 0));
                loop {
                    let mut guard = fd.writable().await?;
                    match guard.try_io(|inner| inner.get_ref().send_to(packet, &dst)) {
                        Ok(res) => return res.map(|_| ()),
                        Err(_would_block) => continue,
                    }
                }
            }
            Inner::Udp(sock) => loop {
                match sock.try_send_to(packet, remote) {
                    Ok(_) => return Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => sock.writable().await?,
                    Err(e) => return Err(e),
                }
            },
        }
    }
}

/// What one [`Transport::send_batch`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchSent {
    /// Packets the kernel took.
    pub sent: usize,
    /// Packets it refused (each reported to the caller's `failed`).
    pub failed: usize,
    /// `sendmmsg` calls made, waits for socket space not counted.
    pub calls: usize,
}

impl Transport {
    /// Sends every packet of `packets`, in order, `sendmmsg` taking up to 64 per system call;
    /// waits for socket space when the buffer is full. A packet the kernel refuses (an
    /// nftables drop on output, no route, an ICMP error queued by an earlier datagram) is
    /// handed to `failed` and skipped, as a lost packet is; only an error that means the
    /// socket itself is broken ends the batch with `Err`.
    pub async fn send_batch(
        &self,
        packets: &[Transmit],
        mut failed: impl FnMut(SocketAddr, &io::Error),
    ) -> io::Result<BatchSent> {
        let raw = matches!(self.inner, Inner::Raw(_));
        let batch: Vec<(SockAddr, &[u8])> = packets
            .iter()
            .map(|t| {
                // Raw IP: the kernel builds the IPv4 header; a port means nothing there.
                let dst = if raw {
                    SocketAddr::new(t.remote.ip(), 0)
                } else {
                    t.remote
                };
                (SockAddr::from(dst), t.packet.as_slice())
            })
            .collect();
        let mut done = BatchSent::default();
        let mut at = 0;
        while let Some(rest) = batch.get(at..).filter(|r| !r.is_empty()) {
            let r = match &self.inner {
                Inner::Raw(fd) => {
                    let mut guard = fd.writable().await?;
                    match guard.try_io(|inner| send_to_many(inner.as_raw_fd(), rest)) {
                        Ok(r) => r,
                        Err(_would_block) => continue,
                    }
                }
                Inner::Udp(sock) => {
                    match sock.try_io(Interest::WRITABLE, || send_to_many(sock.as_raw_fd(), rest)) {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            sock.writable().await?;
                            continue;
                        }
                        r => r,
                    }
                }
            };
            done.calls += 1;
            match r {
                Ok(n) if n > 0 => {
                    done.sent += n;
                    at += n;
                }
                Err(e) if is_fatal(&e) => return Err(e),
                other => {
                    // `sendmmsg` reports the error of the first datagram it could not send
                    // (0 sent and no error cannot happen for a non-empty batch; it is
                    // treated the same, so that the loop always moves on).
                    let e = other
                        .err()
                        .unwrap_or_else(|| io::Error::other("no datagram sent"));
                    if let Some(t) = packets.get(at) {
                        failed(t.remote, &e);
                    }
                    done.failed += 1;
                    at += 1;
                }
            }
        }
        Ok(done)
    }
}

/// Send errors that mean the socket itself is broken, as opposed to one lost packet.
pub(crate) fn is_fatal(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EBADF) | Some(libc::ENOTSOCK))
}

/// Registers the raw socket with the runtime's reactor.
#[allow(unsafe_code)]
fn register(sock: Socket) -> io::Result<AsyncFd<Socket>> {
    // SAFETY: `Socket` owns its file descriptor: it stays open, and `as_raw_fd` returns the
    // same descriptor, until the `Socket` is dropped, which only happens when the `AsyncFd`
    // that owns it is dropped (tokio's requirement for `register`).
    unsafe { AsyncFd::register(sock) }.map_err(io::Error::from)
}

/// Errors after which the socket is still fine: an ICMP error queued by an earlier datagram,
/// an interrupted call.
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
    )
}

/// Splits what a raw IPv4 socket returns (the IP header, then the SCTP packet) into the
/// source address and the byte range of the SCTP packet. Fragments never reach a raw socket
/// (the kernel reassembles them); anything that is not a well-formed IPv4 protocol-132
/// datagram is dropped.
pub fn parse_ipv4(datagram: &[u8]) -> Option<(Ipv4Addr, std::ops::Range<usize>)> {
    let first = *datagram.first()?;
    if first >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < 20 || datagram.len() < ihl {
        return None;
    }
    if i32::from(*datagram.get(9)?) != IPPROTO_SCTP {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([*datagram.get(2)?, *datagram.get(3)?]));
    let end = total.min(datagram.len());
    if end < ihl {
        return None;
    }
    let src = Ipv4Addr::new(
        *datagram.get(12)?,
        *datagram.get(13)?,
        *datagram.get(14)?,
        *datagram.get(15)?,
    );
    Some((src, ihl..end))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// With CAP_NET_ADMIN (CI is root) a socket gets what it asks even past
    /// `net.core.rmem_max` (208 KiB on a stock kernel); without it, up to rmem_max. The test
    /// asks for twice rmem_max, which only `SO_RCVBUFFORCE` can grant.
    #[test]
    fn sockets_get_the_asked_buffers_past_rmem_max_when_privileged() {
        let rmem_max: usize = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let asked = 2 * rmem_max;
        let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        size_buffers(&sock, asked, "test");
        let granted = sock.recv_buffer_size().unwrap() / 2;
        if nix::unistd::geteuid().is_root() {
            assert!(granted >= asked, "root asked {asked} bytes, got {granted}");
        } else {
            assert!(granted >= rmem_max, "asked {asked} bytes, got {granted}");
        }
    }

    #[test]
    fn parses_ipv4_header_with_options() {
        let mut d = vec![0u8; 24 + 12];
        d[0] = 0x46; // version 4, IHL 6 (one 4-byte option)
        d[2..4].copy_from_slice(&36u16.to_be_bytes());
        d[9] = 132;
        d[12..16].copy_from_slice(&[10, 1, 2, 3]);
        let (src, r) = parse_ipv4(&d).unwrap();
        assert_eq!(src, Ipv4Addr::new(10, 1, 2, 3));
        assert_eq!(r, 24..36);
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_ipv4(&[]).is_none());
        assert!(parse_ipv4(&[0x45]).is_none());
        assert!(parse_ipv4(&[0x60; 40]).is_none()); // IPv6
        let mut d = vec![0u8; 20];
        d[0] = 0x45;
        d[9] = 17; // UDP
        assert!(parse_ipv4(&d).is_none());
        d[9] = 132;
        d[0] = 0x4f; // IHL 60 > length
        assert!(parse_ipv4(&d).is_none());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn udp_round_trip() {
        let a = Transport::bind_udp(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        let b = Transport::bind_udp(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        a.send(SocketAddr::V4(b.local()), b"hello").await.unwrap();
        let mut buf = vec![0u8; 2048];
        let mut got = Vec::new();
        b.recv_batch(&mut buf, 8, |from, p| got.push((from, p.to_vec())))
            .await
            .unwrap();
        assert_eq!(got, vec![(SocketAddr::V4(a.local()), b"hello".to_vec())]);
    }
}
