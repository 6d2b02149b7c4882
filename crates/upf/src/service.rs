//! The PFCP node behind a real UDP socket: one thread running a Tokio `current_thread`
//! runtime that only moves datagrams and timer ticks between the socket and [`UpfNode`].
//!
//! One worker serves every session. With more workers, the PFCP socket would join an
//! `sk_reuseport` group steered by the top 16 bits of the header SEID (`IdSpec::PFCP_SEID_TOP16`)
//! so modifications and deletions reach the worker that owns the session; establishment
//! requests carry SEID 0 and would be placed by a hash of the CP F-SEID, and node messages
//! (association, heartbeat) would need a shared view of associations. That is not built yet.

use std::io::{self, IoSliceMut};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::sys::socket::{
    getsockopt, recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage,
};
use pfcp::ie::NodeId;
use tokio::io::Interest;
use tokio::sync::oneshot;

use crate::datapath::{Datapath, Entries};
use crate::node::{NodeConfig, Stats, UpfNode};

/// Seconds from the NTP epoch (1900) to the Unix epoch (1970), RFC 5905 §6.
const NTP_UNIX_OFFSET: u64 = 2_208_988_800;

/// The current time as NTP seconds (the format of Recovery Time Stamp, TS 29.244 §8.2.65).
pub fn ntp_now() -> u32 {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // NTP era 0 wraps in 2036; the field is 32 bits, so wrap with it.
    u32::try_from(unix.wrapping_add(NTP_UNIX_OFFSET) & 0xffff_ffff).unwrap_or(0)
}

/// A Recovery Time Stamp no earlier incarnation of this node can have announced: the next
/// whole NTP second, waited for (up to a second) before it is returned.
///
/// The stamp counts seconds (TS 29.244 §8.2.65), and a peer learns of a restart only from a
/// stamp that changed (§6.2.2.2, §6.2.6.2.2). A node killed and started again within the
/// second it first started would announce the same stamp, and its peer would keep the
/// sessions of the dead one. An earlier incarnation spoke only after its own stamp's second
/// had begun, and this one starts after that: waiting for the next second makes this
/// stamp strictly larger.
pub fn fresh_recovery_time_stamp() -> u32 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let next = now.as_secs().saturating_add(1);
    let wait = std::time::Duration::from_secs(next).saturating_sub(now);
    std::thread::sleep(wait);
    u32::try_from(next.wrapping_add(NTP_UNIX_OFFSET) & 0xffff_ffff).unwrap_or(0)
}

/// The receive and send buffer asked for every PFCP socket: the UPF's and each SMF
/// worker's.
///
/// A PFCP burst (an SMF with a hundred establishments in flight, several workers sending at
/// once) can arrive while the one thread reading the socket is descheduled on a loaded
/// machine. A datagram is charged to the buffer at its `truesize`, not its length: on
/// loopback 1.3 KiB for 400 bytes, 2.3 KiB for 1000, so the default `rmem_default` (208 KiB)
/// holds only 90-160 Session Establishment Requests, and a datagram dropped there is only
/// sent again after T1 (3 s, TS 29.244 §6.4) — the 3 s establishments seen at 5000 UEs in
/// `bench sessions`. 4 MiB (which the kernel doubles for its bookkeeping) holds thousands,
/// more than any SMF here keeps in flight, and is little memory for the few PFCP sockets a
/// core has.
pub const PFCP_SOCKET_BUFFER: usize = 4 << 20;

/// The buffers a PFCP socket got from [`size_pfcp_socket`], as the kernel reports them
/// (`SO_RCVBUF`/`SO_SNDBUF`: twice what was asked, the kernel's bookkeeping included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocketBuffers {
    /// The receive buffer, bytes.
    pub recv: usize,
    /// The send buffer, bytes.
    pub send: usize,
    /// Whether `SO_RCVBUFFORCE` was allowed (`CAP_NET_ADMIN`); without it the kernel caps
    /// the receive buffer at `net.core.rmem_max`.
    pub forced: bool,
}

/// Sizes a PFCP socket's buffers for bursts ([`PFCP_SOCKET_BUFFER`]) and asks the kernel
/// to tell the datagrams it drops (`SO_RXQ_OVFL`, read by [`PfcpReceiver`]). Nothing here
/// is fatal: a socket that keeps its defaults still works, so failures are only logged.
pub fn size_pfcp_socket(sock: &impl AsFd) -> SocketBuffers {
    if let Err(e) = setsockopt(sock, sockopt::RxqOvfl, &1) {
        tracing::warn!(error = %e, "PFCP socket: no SO_RXQ_OVFL, drops will not be counted");
    }
    // The FORCE variants pass `rmem_max`/`wmem_max` when privileged (socket(7)); the plain
    // ones are capped there silently.
    let forced = setsockopt(sock, sockopt::RcvBufForce, &PFCP_SOCKET_BUFFER).is_ok();
    if !forced {
        if let Err(e) = setsockopt(sock, sockopt::RcvBuf, &PFCP_SOCKET_BUFFER) {
            tracing::warn!(error = %e, "PFCP socket: SO_RCVBUF");
        }
    }
    if setsockopt(sock, sockopt::SndBufForce, &PFCP_SOCKET_BUFFER).is_err() {
        if let Err(e) = setsockopt(sock, sockopt::SndBuf, &PFCP_SOCKET_BUFFER) {
            tracing::warn!(error = %e, "PFCP socket: SO_SNDBUF");
        }
    }
    let got = SocketBuffers {
        recv: getsockopt(sock, sockopt::RcvBuf).unwrap_or(0),
        send: getsockopt(sock, sockopt::SndBuf).unwrap_or(0),
        forced,
    };
    // Half of SO_RCVBUF is what was granted of the request.
    if got.recv / 2 < PFCP_SOCKET_BUFFER {
        tracing::warn!(
            recv = got.recv,
            asked = PFCP_SOCKET_BUFFER,
            "PFCP socket: receive buffer capped by net.core.rmem_max (no CAP_NET_ADMIN)"
        );
    }
    got
}

/// Reads datagrams from a PFCP socket with the kernel's count of the datagrams it dropped
/// (`SO_RXQ_OVFL` ancillary data, socket(7); [`size_pfcp_socket`] turns it on): a request
/// lost to a full receive buffer otherwise shows only as a T1 wait at its sender.
#[derive(Debug)]
pub struct PfcpReceiver {
    /// Room for the one `u32` control message, reused for every datagram.
    cmsg: Vec<u8>,
    dropped: u32,
}

impl Default for PfcpReceiver {
    fn default() -> Self {
        Self::new()
    }
}

impl PfcpReceiver {
    /// A receiver that has seen no drop yet.
    pub fn new() -> Self {
        PfcpReceiver {
            cmsg: nix::cmsg_space!(u32),
            dropped: 0,
        }
    }

    /// One datagram into `buf` without waiting (`WouldBlock` when there is none; Tokio's
    /// readiness is cleared then, so `sock.readable()` waits for the next): its length and
    /// sender.
    pub fn try_recv_from(
        &mut self,
        sock: &tokio::net::UdpSocket,
        buf: &mut [u8],
    ) -> io::Result<(usize, Option<SocketAddr>)> {
        let fd = sock.as_raw_fd();
        let cmsg = &mut self.cmsg;
        let (n, from, drops) = sock.try_io(Interest::READABLE, || {
            let mut iov = [IoSliceMut::new(buf)];
            let m = recvmsg::<SockaddrStorage>(fd, &mut iov, Some(cmsg), MsgFlags::empty())
                .map_err(|e: Errno| io::Error::from(e))?;
            // The kernel attaches the count only once it is non-zero.
            let drops = m.cmsgs().ok().and_then(|mut c| {
                c.find_map(|c| match c {
                    ControlMessageOwned::RxqOvfl(d) => Some(d),
                    _ => None,
                })
            });
            Ok((m.bytes, m.address.and_then(socket_addr), drops))
        })?;
        if let Some(d) = drops {
            // A count since the socket was made; it only grows (modulo 2^32).
            self.dropped = d;
        }
        Ok((n, from))
    }

    /// Datagrams the kernel dropped on this socket (a full receive buffer) so far, as of
    /// the last datagram read.
    pub fn dropped(&self) -> u64 {
        u64::from(self.dropped)
    }
}

fn socket_addr(a: SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = a.as_sockaddr_in() {
        return Some(SocketAddr::V4(SocketAddrV4::from(*v4)));
    }
    a.as_sockaddr_in6()
        .map(|v6| SocketAddr::V6(SocketAddrV6::from(*v6)))
}

/// What the service needs to start.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    /// Where PFCP is served (the loopback plan's 127.0.0.7:8805).
    pub pfcp: SocketAddr,
    /// The node's settings; `NodeConfig::new` from [`ServiceOptions::new`] by default.
    pub node: NodeConfig,
}

impl ServiceOptions {
    /// Options for a UPF serving PFCP on `pfcp` and advertising `n3` in F-TEIDs; the Node ID
    /// is the PFCP address and the recovery time stamp is now.
    pub fn new(pfcp: SocketAddr, n3: Ipv4Addr) -> Self {
        let ip = match pfcp {
            SocketAddr::V4(a) => *a.ip(),
            SocketAddr::V6(_) => Ipv4Addr::LOCALHOST,
        };
        ServiceOptions {
            pfcp,
            node: NodeConfig::new(NodeId::Ipv4(ip), ip, n3, ntp_now()),
        }
    }
}

/// What a stopped service reports.
#[derive(Debug, Clone)]
pub struct ServiceReport {
    /// The node's counters.
    pub stats: Stats,
    /// Sessions held when the stop came (then removed).
    pub sessions_at_stop: usize,
    /// Associations held when the stop came.
    pub associations_at_stop: usize,
    /// Datapath entries when the stop came, before the sessions were removed: what the
    /// live sessions held (a restart test counts them: nothing stale may be left).
    pub entries_at_stop: Option<Entries>,
    /// Datapath entries after every session was removed: all zero unless removal failed.
    pub entries_after: Option<Entries>,
    /// The datapath's name.
    pub datapath: &'static str,
    /// PFCP datagrams the kernel dropped on the service's socket (a full receive buffer);
    /// each is a request its sender waits T1 to send again.
    pub pfcp_dropped: u64,
    /// The PFCP socket's buffers.
    pub buffers: SocketBuffers,
}

/// What a running service's `/metrics` reads: stored by the service thread after each
/// datagram or timer it handles, read by a scrape at any time. Relaxed: each value is one the
/// thread stored, not a consistent cut across them.
#[derive(Debug, Default)]
pub struct ServiceLive {
    establishment_requests: AtomicU64,
    session_reports: AtomicU64,
    session_reports_answered: AtomicU64,
    sessions: AtomicU64,
    associations: AtomicU64,
    n3_ul_bytes: AtomicU64,
    n3_dl_bytes: AtomicU64,
}

/// One reading of [`ServiceLive`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveCounts {
    /// PFCP Session Establishment Requests received, retransmissions included.
    pub establishment_requests: u64,
    /// Session Report Requests sent.
    pub session_reports: u64,
    /// Session Report Responses received for them.
    pub session_reports_answered: u64,
    /// Sessions held now.
    pub sessions: u64,
    /// PFCP associations held now.
    pub associations: u64,
    /// Octets received on N3 and forwarded ([`crate::node::Stats::n3_ul_bytes`]).
    pub n3_ul_bytes: u64,
    /// Octets sent on N3 ([`crate::node::Stats::n3_dl_bytes`]).
    pub n3_dl_bytes: u64,
}

impl ServiceLive {
    fn publish(&self, node: &UpfNode) {
        let s = node.stats();
        let got = |name: &str| s.received.get(name).copied().unwrap_or(0);
        let put = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        put(
            &self.establishment_requests,
            got("session_establishment_request"),
        );
        put(&self.session_reports, s.session_reports);
        put(
            &self.session_reports_answered,
            got("session_report_response"),
        );
        put(&self.sessions, node.session_count() as u64);
        put(&self.associations, node.association_count() as u64);
        put(&self.n3_ul_bytes, s.n3_ul_bytes);
        put(&self.n3_dl_bytes, s.n3_dl_bytes);
    }

    /// The values now.
    pub fn read(&self) -> LiveCounts {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LiveCounts {
            establishment_requests: get(&self.establishment_requests),
            session_reports: get(&self.session_reports),
            session_reports_answered: get(&self.session_reports_answered),
            sessions: get(&self.sessions),
            associations: get(&self.associations),
            n3_ul_bytes: get(&self.n3_ul_bytes),
            n3_dl_bytes: get(&self.n3_dl_bytes),
        }
    }
}

/// A running UPF PFCP service.
#[derive(Debug)]
pub struct UpfService {
    live: Arc<ServiceLive>,
    local: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<ServiceReport>>>,
}

impl UpfService {
    /// Binds the PFCP socket (errors come back here, before any thread starts) and runs the
    /// node with `datapath` on a thread of its own.
    pub fn start(opts: ServiceOptions, datapath: Box<dyn Datapath + Send>) -> io::Result<Self> {
        let sock = UdpSocket::bind(opts.pfcp)?;
        sock.set_nonblocking(true)?;
        let buffers = size_pfcp_socket(&sock);
        let local = sock.local_addr()?;
        let (tx, rx) = oneshot::channel();
        let live = Arc::new(ServiceLive::default());
        let writer = Arc::clone(&live);
        let thread = std::thread::Builder::new()
            .name("upf-pfcp".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                rt.block_on(run(sock, opts.node, datapath, rx, buffers, &writer))
            })?;
        tracing::info!(
            pfcp = %local,
            recv_buffer = buffers.recv,
            send_buffer = buffers.send,
            "UPF serving PFCP"
        );
        Ok(UpfService {
            live,
            local,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// The counters a `/metrics` page reads while the service runs.
    pub fn live(&self) -> Arc<ServiceLive> {
        Arc::clone(&self.live)
    }

    /// The bound PFCP address (with the port the OS chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stops the service: every session is removed from the datapath, then the report.
    pub fn stop(mut self) -> io::Result<ServiceReport> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("UPF service thread panicked")),
            None => Err(io::Error::other("UPF service already stopped")),
        }
    }
}

impl Drop for UpfService {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn run(
    sock: UdpSocket,
    cfg: NodeConfig,
    mut dp: Box<dyn Datapath + Send>,
    mut stop: oneshot::Receiver<()>,
    buffers: SocketBuffers,
    live: &ServiceLive,
) -> io::Result<ServiceReport> {
    let sock = tokio::net::UdpSocket::from_std(sock)?;
    let mut node = UpfNode::new(Instant::now(), cfg);
    // 64 KiB: the largest UDP payload, so no PFCP message is ever truncated.
    let mut buf = vec![0u8; 65_536];
    let mut rx = PfcpReceiver::new();
    loop {
        while let Some(t) = node.poll_transmit() {
            if let Err(e) = sock.send_to(&t.contents, t.destination).await {
                tracing::warn!(to = %t.destination, error = %e, "PFCP send failed");
            }
        }
        let deadline = node.poll_timeout();
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut stop => break,
            // One datagram per turn, so that its response goes out before the next is read.
            r = sock.readable() => match r.and_then(|()| rx.try_recv_from(&sock, &mut buf)) {
                Ok((n, Some(from))) => {
                    let data = buf.get(..n).unwrap_or(&[]);
                    node.handle(Instant::now(), from, data, dp.as_mut());
                    live.publish(&node);
                }
                Ok((_, None)) => tracing::debug!("PFCP datagram without a sender address"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // ICMP port unreachable from a peer that went away shows up here on Linux;
                // it is no reason to stop serving the others.
                Err(e) => tracing::debug!(error = %e, "PFCP receive error"),
            },
            _ = sleep => {
                node.handle_timeout(Instant::now(), dp.as_mut());
                live.publish(&node);
            }
        }
    }
    let sessions_at_stop = node.session_count();
    let associations_at_stop = node.association_count();
    let entries_at_stop = dp.entries().ok();
    node.clear(dp.as_mut());
    let entries_after = dp.entries().ok();
    if rx.dropped() > 0 {
        tracing::warn!(
            dropped = rx.dropped(),
            "PFCP datagrams dropped by the kernel on the UPF's socket (receive buffer full)"
        );
    }
    Ok(ServiceReport {
        stats: node.stats().clone(),
        sessions_at_stop,
        associations_at_stop,
        entries_at_stop,
        entries_after,
        datapath: dp.name(),
        pfcp_dropped: rx.dropped(),
        buffers,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Reads until the socket is empty; the datagrams read (each checked).
    async fn drain(sock: &tokio::net::UdpSocket, rx: &mut PfcpReceiver, from: SocketAddr) -> u32 {
        let mut buf = [0u8; 2048];
        let mut read = 0;
        loop {
            sock.readable().await.unwrap();
            match rx.try_recv_from(sock, &mut buf) {
                Ok((n, a)) => {
                    assert_eq!((n, a), (1000, Some(from)));
                    read += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return read,
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// A socket with the smallest receive buffer drops most of a burst sent before it is
    /// read; the next datagram read carries the kernel's count of them.
    #[test]
    fn the_receiver_counts_what_the_kernel_dropped() {
        const SENT: u32 = 100;
        let wait = Duration::from_secs(10);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        s.set_nonblocking(true).unwrap();
        setsockopt(&s, sockopt::RxqOvfl, &1).unwrap();
        // The kernel raises this to its minimum: room for a few datagrams.
        setsockopt(&s, sockopt::RcvBuf, &1).unwrap();
        let to = s.local_addr().unwrap();
        let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let from = tx.local_addr().unwrap();
        let (read, dropped) = rt.block_on(async {
            let sock = tokio::net::UdpSocket::from_std(s).unwrap();
            let mut rx = PfcpReceiver::new();
            for _ in 0..SENT {
                tx.send_to(&[7u8; 1000], to).unwrap();
            }
            let mut read = tokio::time::timeout(wait, drain(&sock, &mut rx, from))
                .await
                .unwrap();
            assert!(read < SENT, "nothing was dropped: the test proves nothing");
            assert_eq!(rx.dropped(), 0, "those read were queued before any drop");
            // One sent now carries the count.
            tx.send_to(&[7u8; 1000], to).unwrap();
            read += tokio::time::timeout(wait, drain(&sock, &mut rx, from))
                .await
                .unwrap();
            (read, rx.dropped())
        });
        assert_eq!(dropped, u64::from(SENT + 1 - read));
    }
}
