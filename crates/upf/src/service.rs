//! The PFCP node behind a real UDP socket: one thread running a Tokio `current_thread`
//! runtime that only moves datagrams and timer ticks between the socket and [`UpfNode`].
//!
//! One worker serves every session. With more workers, the PFCP socket would join an
//! `sk_reuseport` group steered by the top 16 bits of the header SEID (`IdSpec::PFCP_SEID_TOP16`)
//! so modifications and deletions reach the worker that owns the session; establishment
//! requests carry SEID 0 and would be placed by a hash of the CP F-SEID, and node messages
//! (association, heartbeat) would need a shared view of associations. That is not built yet.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use pfcp::ie::NodeId;
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

/// What the service needs to start.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    /// Where PFCP is served (DESIGN.md: 127.0.0.7:8805).
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
    /// Datapath entries after every session was removed: all zero unless removal failed.
    pub entries_after: Option<Entries>,
    /// The datapath's name.
    pub datapath: &'static str,
}

/// A running UPF PFCP service.
#[derive(Debug)]
pub struct UpfService {
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
        let local = sock.local_addr()?;
        let (tx, rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("upf-pfcp".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                rt.block_on(run(sock, opts.node, datapath, rx))
            })?;
        tracing::info!(pfcp = %local, "UPF serving PFCP");
        Ok(UpfService {
            local,
            stop: Some(tx),
            thread: Some(thread),
        })
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
) -> io::Result<ServiceReport> {
    let sock = tokio::net::UdpSocket::from_std(sock)?;
    let mut node = UpfNode::new(Instant::now(), cfg);
    // 64 KiB: the largest UDP payload, so no PFCP message is ever truncated.
    let mut buf = vec![0u8; 65_536];
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
            r = sock.recv_from(&mut buf) => match r {
                Ok((n, from)) => {
                    let data = buf.get(..n).unwrap_or(&[]);
                    node.handle(Instant::now(), from, data, dp.as_mut());
                }
                // ICMP port unreachable from a peer that went away shows up here on Linux;
                // it is no reason to stop serving the others.
                Err(e) => tracing::debug!(error = %e, "PFCP receive error"),
            },
            _ = sleep => node.handle_timeout(Instant::now(), dp.as_mut()),
        }
    }
    let sessions_at_stop = node.session_count();
    let associations_at_stop = node.association_count();
    node.clear(dp.as_mut());
    let entries_after = dp.entries().ok();
    Ok(ServiceReport {
        stats: node.stats().clone(),
        sessions_at_stop,
        associations_at_stop,
        entries_after,
        datapath: dp.name(),
    })
}
