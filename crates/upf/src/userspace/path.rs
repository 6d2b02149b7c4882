//! [`TunDatapath`]: the sockets/TUN user plane and its packet thread.
//!
//! Tables: the packet thread owns its rule tables outright. [`TunDatapath`] (the PFCP
//! side's handle) sends each change over a channel, and the thread drains that channel
//! after every wake-up, before it reads packets, so a rule installed before a packet is sent
//! applies to that packet. No lock is taken per packet; the only shared state are atomic
//! counters (per reason, per usage id) that the thread adds to with relaxed stores and the
//! handle reads.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use pfcp::gtpu::{ext_type, msg_type, Packet};

use crate::datapath::{
    Datapath, DatapathError, DownlinkAction, DownlinkRule, Entries, Gate, UplinkAction, UplinkRule,
    Usage, UsageId,
};
use crate::mbr::Policer;

/// The GTP-U port (TS 29.281 §4.4.2).
pub const GTPU_PORT: u16 = 2152;
/// Packets kept per UE while its FAR buffers; older ones are dropped first.
const BUFFER_PER_UE: usize = 64;
/// Packets read from one source per wake-up before the other gets a turn.
const BATCH: usize = 64;

/// Why the user-space path forwarded, answered, buffered or dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TunReason {
    /// Uplink G-PDU decapsulated and written to the TUN device.
    UlForwarded = 0,
    /// Downlink packet encapsulated and sent to the gNB.
    DlForwarded,
    /// Dropped: header, length or inner packet cut short.
    DropTruncated,
    /// Dropped: no uplink rule for the TEID.
    DropUnknownTeid,
    /// Dropped: malformed extension chain, unknown comprehension-required type, or a
    /// container that is not UL PDU SESSION INFORMATION.
    DropBadExtension,
    /// Dropped: QER gate closed.
    DropGateClosed,
    /// Dropped: FAR drop.
    DropFar,
    /// Dropped: inner source is not the UE's address.
    DropUeMismatch,
    /// Dropped: not GTPv1-U, or the inner packet is not IPv4.
    DropMalformed,
    /// Dropped: the container's QFI is not the rule's.
    DropQfiMismatch,
    /// Dropped: over the QER's maximum bit rate.
    DropMbr,
    /// Dropped: a packet from the TUN device to an address without a downlink rule.
    DropNoRule,
    /// Echo Request answered with an Echo Response (TS 29.281 §7.2).
    EchoAnswered,
    /// End Marker, Error Indication or another non-G-PDU message: counted, not forwarded.
    Signalling,
    /// Downlink packet kept for a buffering FAR.
    Buffered,
    /// Dropped: the buffer of a buffering FAR was full.
    DropBufferFull,
    /// A socket or TUN read/write failed.
    IoError,
}

impl TunReason {
    /// How many reasons there are.
    pub const COUNT: usize = 17;
    /// Every reason, in counter order.
    pub const ALL: [TunReason; TunReason::COUNT] = [
        TunReason::UlForwarded,
        TunReason::DlForwarded,
        TunReason::DropTruncated,
        TunReason::DropUnknownTeid,
        TunReason::DropBadExtension,
        TunReason::DropGateClosed,
        TunReason::DropFar,
        TunReason::DropUeMismatch,
        TunReason::DropMalformed,
        TunReason::DropQfiMismatch,
        TunReason::DropMbr,
        TunReason::DropNoRule,
        TunReason::EchoAnswered,
        TunReason::Signalling,
        TunReason::Buffered,
        TunReason::DropBufferFull,
        TunReason::IoError,
    ];

    /// A snake_case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            TunReason::UlForwarded => "ul_forwarded",
            TunReason::DlForwarded => "dl_forwarded",
            TunReason::DropTruncated => "drop_truncated",
            TunReason::DropUnknownTeid => "drop_unknown_teid",
            TunReason::DropBadExtension => "drop_bad_extension",
            TunReason::DropGateClosed => "drop_gate_closed",
            TunReason::DropFar => "drop_far",
            TunReason::DropUeMismatch => "drop_ue_mismatch",
            TunReason::DropMalformed => "drop_malformed",
            TunReason::DropQfiMismatch => "drop_qfi_mismatch",
            TunReason::DropMbr => "drop_mbr",
            TunReason::DropNoRule => "drop_no_rule",
            TunReason::EchoAnswered => "echo_answered",
            TunReason::Signalling => "signalling",
            TunReason::Buffered => "buffered",
            TunReason::DropBufferFull => "drop_buffer_full",
            TunReason::IoError => "io_error",
        }
    }

    /// A drop reason.
    pub fn is_drop(self) -> bool {
        self.name().starts_with("drop_")
    }
}

/// The user-space path's counters, a snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TunCounters {
    counts: [u64; TunReason::COUNT],
}

impl TunCounters {
    /// Packets counted under `r`.
    pub fn get(&self, r: TunReason) -> u64 {
        self.counts.get(r as usize).copied().unwrap_or(0)
    }
    /// Packets dropped, for any reason.
    pub fn dropped(&self) -> u64 {
        TunReason::ALL
            .iter()
            .filter(|r| r.is_drop())
            .map(|r| self.get(*r))
            .sum()
    }
    /// Counts since `earlier`.
    pub fn since(&self, earlier: &TunCounters) -> TunCounters {
        let mut c = TunCounters::default();
        for (i, v) in c.counts.iter_mut().enumerate() {
            *v = self.counts[i].saturating_sub(earlier.counts[i]);
        }
        c
    }
    /// (name, count) for every reason, for reports.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        TunReason::ALL.iter().map(|r| (r.name(), self.get(*r)))
    }
}

/// Where to run the user-space path.
#[derive(Debug, Clone)]
pub struct TunOptions {
    /// Network namespace (`ip netns` name), `None` for the current one.
    pub netns: Option<String>,
    /// The UPF's N3 address: the GTP-U socket binds it, port 2152.
    pub n3_addr: Ipv4Addr,
    /// Name of the TUN device to create.
    pub tun_name: String,
    /// The UE pool routed into the TUN device (address, prefix length).
    pub ue_pool: (Ipv4Addr, u8),
}

#[derive(Debug, Default)]
struct UsageCell {
    ul_packets: AtomicU64,
    ul_bytes: AtomicU64,
    dl_packets: AtomicU64,
    dl_bytes: AtomicU64,
    dropped: AtomicU64,
}

fn bump(a: &AtomicU64, n: u64) {
    // Only the packet thread writes; a load and a store are enough and cheaper than an RMW.
    a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

#[derive(Debug)]
struct Shared {
    counts: [AtomicU64; TunReason::COUNT],
    cpu_ns: AtomicU64,
    stop: AtomicBool,
}

#[derive(Debug)]
enum Update {
    Uplink(UplinkRule, Option<Arc<UsageCell>>),
    Downlink(DownlinkRule, Option<Arc<UsageCell>>),
    RemoveUplink(u32),
    RemoveDownlink(Ipv4Addr),
}

/// The sockets/TUN datapath. Dropping it stops the packet thread and removes the device.
#[derive(Debug)]
pub struct TunDatapath {
    tx: mpsc::Sender<Update>,
    shared: Arc<Shared>,
    usage: HashMap<UsageId, Arc<UsageCell>>,
    uplinks: HashSet<u32>,
    downlinks: HashSet<Ipv4Addr>,
    thread: Option<JoinHandle<Option<()>>>,
}

fn ip_cmd(netns: Option<&str>, args: &[&str]) -> io::Result<()> {
    let mut c = Command::new("ip");
    if let Some(ns) = netns {
        c.args(["-n", ns]);
    }
    let out = c.args(args).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

impl TunDatapath {
    /// Creates the TUN device and the N3 socket in `opts.netns`, routes the UE pool into
    /// the device and starts the packet thread.
    pub fn start(opts: &TunOptions) -> io::Result<Self> {
        let ns = opts.netns.as_deref();
        let name = opts.tun_name.clone();
        let n3 = opts.n3_addr;
        let (tun, sock) = super::netns::run_in(ns, move || -> io::Result<(File, UdpSocket)> {
            let tun = super::tun::open(&name, true)?;
            let sock = UdpSocket::bind(SocketAddrV4::new(n3, GTPU_PORT))?;
            sock.set_nonblocking(true)?;
            Ok((tun, sock))
        })??;
        ip_cmd(ns, &["link", "set", &opts.tun_name, "up"])?;
        let pool = format!("{}/{}", opts.ue_pool.0, opts.ue_pool.1);
        ip_cmd(ns, &["route", "replace", &pool, "dev", &opts.tun_name])?;
        let shared = Arc::new(Shared {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            cpu_ns: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let (tx, rx) = mpsc::channel();
        let worker = Worker {
            sock,
            tun,
            rx,
            shared: Arc::clone(&shared),
            uplink: HashMap::new(),
            downlink: HashMap::new(),
            buffers: HashMap::new(),
            out: Vec::with_capacity(2048),
        };
        let thread = std::thread::Builder::new()
            .name("upf-tun".to_owned())
            .spawn(move || {
                worker.run();
                Some(())
            })?;
        Ok(TunDatapath {
            tx,
            shared,
            usage: HashMap::new(),
            uplinks: HashSet::new(),
            downlinks: HashSet::new(),
            thread: Some(thread),
        })
    }

    /// The per-reason counters.
    pub fn counters(&self) -> TunCounters {
        let mut c = TunCounters::default();
        for (v, a) in c.counts.iter_mut().zip(self.shared.counts.iter()) {
            *v = a.load(Ordering::Relaxed);
        }
        c
    }

    /// CPU time the packet thread has used so far (CLOCK_THREAD_CPUTIME_ID), in ns.
    pub fn cpu_ns(&self) -> u64 {
        self.shared.cpu_ns.load(Ordering::Relaxed)
    }

    fn cell(&mut self, id: Option<UsageId>) -> Option<Arc<UsageCell>> {
        id.map(|id| Arc::clone(self.usage.entry(id).or_default()))
    }

    fn send(&self, u: Update) -> Result<(), DatapathError> {
        self.tx
            .send(u)
            .map_err(|_| DatapathError::Os("the packet thread has stopped".to_owned()))
    }
}

impl Drop for TunDatapath {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Datapath for TunDatapath {
    fn name(&self) -> &'static str {
        "tun"
    }

    fn install_uplink(&mut self, rule: &UplinkRule) -> Result<(), DatapathError> {
        let cell = self.cell(rule.usage);
        self.send(Update::Uplink(*rule, cell))?;
        self.uplinks.insert(rule.teid);
        Ok(())
    }

    fn install_downlink(&mut self, rule: &DownlinkRule) -> Result<(), DatapathError> {
        let cell = self.cell(rule.usage);
        self.send(Update::Downlink(*rule, cell))?;
        self.downlinks.insert(rule.ue_ip);
        Ok(())
    }

    fn remove_uplink(&mut self, teid: u32) -> Result<(), DatapathError> {
        if !self.uplinks.remove(&teid) {
            return Err(DatapathError::NotFound {
                table: "uplink",
                key: format!("TEID {teid:#x}"),
            });
        }
        self.send(Update::RemoveUplink(teid))
    }

    fn remove_downlink(&mut self, ue_ip: Ipv4Addr) -> Result<(), DatapathError> {
        if !self.downlinks.remove(&ue_ip) {
            return Err(DatapathError::NotFound {
                table: "downlink",
                key: ue_ip.to_string(),
            });
        }
        self.send(Update::RemoveDownlink(ue_ip))
    }

    fn usage(&self, id: UsageId) -> Result<Usage, DatapathError> {
        Ok(self.usage.get(&id).map_or(Usage::default(), |c| Usage {
            ul_packets: c.ul_packets.load(Ordering::Relaxed),
            ul_bytes: c.ul_bytes.load(Ordering::Relaxed),
            dl_packets: c.dl_packets.load(Ordering::Relaxed),
            dl_bytes: c.dl_bytes.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
        }))
    }

    fn remove_usage(&mut self, id: UsageId) -> Result<(), DatapathError> {
        // A rule still holding the cell keeps counting into it; the id is forgotten here.
        self.usage
            .remove(&id)
            .map(|_| ())
            .ok_or_else(|| DatapathError::NotFound {
                table: "usage",
                key: id.0.to_string(),
            })
    }

    fn entries(&self) -> Result<Entries, DatapathError> {
        Ok(Entries {
            uplink: self.uplinks.len(),
            downlink: self.downlinks.len(),
            usage: self.usage.len(),
        })
    }
}

/// One direction's MBR bucket (TS 29.244 §5.2.1.11): [`Policer`], the arithmetic the XDP
/// path runs too, on this thread's monotonic clock.
#[derive(Debug)]
struct Bucket {
    policer: Policer,
    epoch: Instant,
}

impl Bucket {
    fn new(gate: &Gate) -> Option<Bucket> {
        Policer::new(gate).map(|policer| Bucket {
            policer,
            epoch: Instant::now(),
        })
    }

    /// `len` is the inner IPv4 packet's length, as in the XDP path and the URR counts.
    fn take(&mut self, len: usize) -> bool {
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.policer.admit(now, len as u64)
    }
}

#[derive(Debug)]
struct UlEntry {
    rule: UplinkRule,
    usage: Option<Arc<UsageCell>>,
    bucket: Option<Bucket>,
}

#[derive(Debug)]
struct DlEntry {
    rule: DownlinkRule,
    usage: Option<Arc<UsageCell>>,
    bucket: Option<Bucket>,
}

struct Worker {
    sock: UdpSocket,
    tun: File,
    rx: mpsc::Receiver<Update>,
    shared: Arc<Shared>,
    uplink: HashMap<u32, UlEntry>,
    downlink: HashMap<Ipv4Addr, DlEntry>,
    buffers: HashMap<Ipv4Addr, VecDeque<Vec<u8>>>,
    out: Vec<u8>,
}

fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| {
            u64::try_from(t.tv_sec())
                .unwrap_or(0)
                .saturating_mul(1_000_000_000)
                .saturating_add(u64::try_from(t.tv_nsec()).unwrap_or(0))
        })
        .unwrap_or(0)
}

impl Worker {
    fn count(&self, r: TunReason) {
        bump(&self.shared.counts[r as usize], 1);
    }

    fn run(mut self) {
        let mut buf = vec![0u8; 65536];
        while !self.shared.stop.load(Ordering::Relaxed) {
            let (sock_ready, tun_ready) = {
                let mut fds = [
                    PollFd::new(self.sock.as_fd(), PollFlags::POLLIN),
                    PollFd::new(self.tun.as_fd(), PollFlags::POLLIN),
                ];
                // A short timeout bounds how late a stop request or a rule change is seen
                // when no traffic wakes the thread.
                match poll(&mut fds, PollTimeout::from(20u16)) {
                    Ok(_) => {}
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => {
                        self.count(TunReason::IoError);
                        break;
                    }
                }
                let ready = |f: &PollFd<'_>| f.revents().is_some_and(|r| !r.is_empty());
                (ready(&fds[0]), ready(&fds[1]))
            };
            self.apply_updates();
            if sock_ready {
                for _ in 0..BATCH {
                    match self.sock.recv_from(&mut buf) {
                        Ok((n, from)) => self.uplink(&buf[..n.min(buf.len())], from),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            self.count(TunReason::IoError);
                            break;
                        }
                    }
                }
            }
            if tun_ready {
                for _ in 0..BATCH {
                    match self.tun.read(&mut buf) {
                        Ok(n) => {
                            let pkt = &buf[..n.min(buf.len())];
                            self.downlink(pkt);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            self.count(TunReason::IoError);
                            break;
                        }
                    }
                }
            }
            self.shared.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
        }
    }

    fn apply_updates(&mut self) {
        while let Ok(u) = self.rx.try_recv() {
            match u {
                Update::Uplink(rule, usage) => {
                    let bucket = Bucket::new(&rule.gate);
                    self.uplink.insert(
                        rule.teid,
                        UlEntry {
                            rule,
                            usage,
                            bucket,
                        },
                    );
                }
                Update::Downlink(rule, usage) => {
                    let bucket = Bucket::new(&rule.gate);
                    let ue = rule.ue_ip;
                    let forwards = matches!(rule.action, DownlinkAction::Forward { .. });
                    self.downlink.insert(
                        ue,
                        DlEntry {
                            rule,
                            usage,
                            bucket,
                        },
                    );
                    // A FAR that stops buffering releases what was kept (TS 29.244 §5.2.3).
                    if forwards {
                        if let Some(q) = self.buffers.remove(&ue) {
                            for p in q {
                                self.downlink(&p);
                            }
                        }
                    }
                }
                Update::RemoveUplink(teid) => {
                    self.uplink.remove(&teid);
                }
                Update::RemoveDownlink(ue) => {
                    self.downlink.remove(&ue);
                    self.buffers.remove(&ue);
                }
            }
        }
    }

    fn echo_response(&self, req: &Packet<&[u8]>, from: SocketAddr) {
        // TS 29.281 §7.2.2: same sequence number, a Recovery IE (type 14, restart counter 0,
        // TS 29.281 §8.2).
        let seq = req.sequence().unwrap_or(0).to_be_bytes();
        let rsp = [
            0x32,
            msg_type::ECHO_RESPONSE,
            0,
            6,
            0,
            0,
            0,
            0,
            seq[0],
            seq[1],
            0,
            0,
            14,
            0,
        ];
        if self.sock.send_to(&rsp, from).is_err() {
            self.count(TunReason::IoError);
        } else {
            self.count(TunReason::EchoAnswered);
        }
    }

    fn uplink(&mut self, dgram: &[u8], from: SocketAddr) {
        let p = match Packet::new_checked(dgram) {
            Ok(p) => p,
            Err(pfcp::gtpu::Error::Truncated) => return self.count(TunReason::DropTruncated),
            Err(_) => return self.count(TunReason::DropMalformed),
        };
        match p.msg_type() {
            msg_type::G_PDU => {}
            msg_type::ECHO_REQUEST => return self.echo_response(&p, from),
            _ => return self.count(TunReason::Signalling),
        }
        let Some(entry) = self.uplink.get_mut(&p.teid()) else {
            return self.count(TunReason::DropUnknownTeid);
        };
        // Walk the chain without allocating: only the PDU Session Container matters here.
        let mut qfi = None;
        let mut it = p.extensions();
        for e in it.by_ref() {
            match e {
                Ok((ext_type::PDU_SESSION_CONTAINER, c)) => {
                    // TS 38.415 §5.5.2.2: uplink carries PDU type 1.
                    match c {
                        [o1, o2, ..] if o1 >> 4 == 1 => qfi = Some(o2 & 0x3f),
                        _ => {
                            return bump(
                                &self.shared.counts[TunReason::DropBadExtension as usize],
                                1,
                            )
                        }
                    }
                }
                Ok(_) => {}
                Err(_) => {
                    return bump(&self.shared.counts[TunReason::DropBadExtension as usize], 1)
                }
            }
        }
        let shared = &self.shared;
        let count = |r: TunReason| bump(&shared.counts[r as usize], 1);
        if let (Some(want), Some(got)) = (entry.rule.qfi, qfi) {
            if want != got {
                return count(TunReason::DropQfiMismatch);
            }
        }
        let inner = dgram.get(it.payload_offset()..p.total_len()).unwrap_or(&[]);
        let Some(inner) = ipv4_packet(inner) else {
            return count(if inner.len() < 20 {
                TunReason::DropTruncated
            } else {
                TunReason::DropMalformed
            });
        };
        if inner.get(12..16) != Some(&entry.rule.ue_ip.octets()[..]) {
            return count(TunReason::DropUeMismatch);
        }
        let drop_reason = if !entry.rule.gate.open {
            Some(TunReason::DropGateClosed)
        } else if entry.rule.action == UplinkAction::Drop {
            Some(TunReason::DropFar)
        } else if entry.bucket.as_mut().is_some_and(|b| !b.take(inner.len())) {
            Some(TunReason::DropMbr)
        } else {
            None
        };
        if let Some(r) = drop_reason {
            if let Some(u) = &entry.usage {
                bump(&u.dropped, 1);
            }
            return count(r);
        }
        if let Some(u) = &entry.usage {
            bump(&u.ul_packets, 1);
            bump(&u.ul_bytes, inner.len() as u64);
        }
        // A TUN write takes one whole packet or fails; a short count would be a bug.
        match (&self.tun).write(inner) {
            Ok(n) if n == inner.len() => count(TunReason::UlForwarded),
            Ok(_) | Err(_) => count(TunReason::IoError),
        }
    }

    fn downlink(&mut self, pkt: &[u8]) {
        let Some(inner) = ipv4_packet(pkt) else {
            return self.count(TunReason::DropMalformed);
        };
        let dst = Ipv4Addr::new(inner[16], inner[17], inner[18], inner[19]);
        let Some(entry) = self.downlink.get_mut(&dst) else {
            return bump(&self.shared.counts[TunReason::DropNoRule as usize], 1);
        };
        let shared = &self.shared;
        let count = |r: TunReason| bump(&shared.counts[r as usize], 1);
        let (teid, peer, qfi) = match entry.rule.action {
            _ if !entry.rule.gate.open => (None, Ipv4Addr::UNSPECIFIED, None),
            DownlinkAction::Forward { teid, peer, qfi } => (Some(teid), peer, qfi),
            DownlinkAction::Buffer => {
                let q = self.buffers.entry(dst).or_default();
                if q.len() >= BUFFER_PER_UE {
                    q.pop_front();
                    count(TunReason::DropBufferFull);
                }
                q.push_back(inner.to_vec());
                return count(TunReason::Buffered);
            }
            DownlinkAction::Drop => (None, Ipv4Addr::UNSPECIFIED, None),
        };
        let over_mbr =
            teid.is_some() && entry.bucket.as_mut().is_some_and(|b| !b.take(inner.len()));
        let Some(teid) = teid.filter(|_| !over_mbr) else {
            if let Some(u) = &entry.usage {
                bump(&u.dropped, 1);
            }
            return count(if !entry.rule.gate.open {
                TunReason::DropGateClosed
            } else if over_mbr {
                TunReason::DropMbr
            } else {
                TunReason::DropFar
            });
        };
        if let Some(u) = &entry.usage {
            bump(&u.dl_packets, 1);
            bump(&u.dl_bytes, inner.len() as u64);
        }
        encap(&mut self.out, teid, qfi, inner);
        match self
            .sock
            .send_to(&self.out, SocketAddrV4::new(peer, GTPU_PORT))
        {
            Ok(_) => count(TunReason::DlForwarded),
            Err(_) => count(TunReason::IoError),
        }
    }
}

/// `p` cut to its IPv4 total length, if it is an IPv4 packet that fits.
fn ipv4_packet(p: &[u8]) -> Option<&[u8]> {
    let h = p.get(..20)?;
    if h[0] >> 4 != 4 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if total < 20 {
        return None;
    }
    p.get(..total)
}

/// Writes a G-PDU (TS 29.281 §5.1) carrying `inner` to `teid` into `out`, with a DL PDU
/// Session Container (TS 38.415 §5.5.2.1) when `qfi` is set.
fn encap(out: &mut Vec<u8>, teid: u32, qfi: Option<u8>, inner: &[u8]) {
    out.clear();
    let ext = if qfi.is_some() { 8 } else { 0 };
    // Callers pass packets read from a TUN device (≤ 65535) so this never saturates in
    // practice; a too-long one gets a wrong length rather than a panic.
    let len = u16::try_from(inner.len() + ext).unwrap_or(u16::MAX);
    out.push(if qfi.is_some() { 0x34 } else { 0x30 });
    out.push(msg_type::G_PDU);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&teid.to_be_bytes());
    if let Some(q) = qfi {
        out.extend_from_slice(&[0, 0, 0, ext_type::PDU_SESSION_CONTAINER, 1, 0, q & 0x3f, 0]);
    }
    out.extend_from_slice(inner);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pfcp::gtpu::Repr;

    #[test]
    fn encap_is_what_the_codec_reads() {
        let inner = crate::userspace::craft::ipv4_udp(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            1,
            2,
            b"x",
        )
        .unwrap();
        for qfi in [None, Some(9)] {
            let mut out = Vec::new();
            encap(&mut out, 0xdead_beef, qfi, &inner);
            let p = Packet::new_checked(&out[..]).unwrap();
            let r = Repr::parse(&p).unwrap();
            assert_eq!(r.teid, 0xdead_beef);
            assert_eq!(r.qfi(), qfi);
            assert_eq!(p.payload().unwrap(), &inner[..]);
        }
    }

    #[test]
    fn ipv4_packet_checks_version_and_length() {
        assert!(ipv4_packet(&[0x45; 10]).is_none());
        let mut p = vec![0u8; 30];
        p[0] = 0x45;
        p[3] = 25;
        assert_eq!(ipv4_packet(&p).map(<[u8]>::len), Some(25));
        p[3] = 40;
        assert!(ipv4_packet(&p).is_none());
        p[0] = 0x60;
        assert!(ipv4_packet(&p).is_none());
    }

    #[test]
    fn bucket_limits_and_refills() {
        let mut b = Bucket::new(&Gate {
            open: true,
            mbr_bps: 8_000,
        })
        .unwrap();
        assert_eq!(b.policer.params().depth, 3000);
        assert!(b.take(3000));
        assert!(!b.take(1500));
        assert!(Bucket::new(&Gate::OPEN).is_none());
    }
}
