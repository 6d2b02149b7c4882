//! The UPF's user-space path over AF_XDP sockets in copy mode;
//! implements [`upf::Datapath`] beside the XDP fast path (crate `upf-xdp`) and the
//! sockets/TUN path ([`upf::userspace::TunDatapath`]), so the three can be compared.
//!
//! `bpf/upf_xsk.c` runs on the N3 and N6 interfaces and redirects GTP-U to the N3 address
//! and IPv4 to the UE pool into an XSKMAP by rx queue; everything else goes on to the
//! kernel. One AF_XDP socket per interface (queue 0, `XDP_COPY`: zero-copy does not work on
//! veth, KERNEL.md §3) receives those frames into its UMEM. One packet thread polls both
//! sockets, decides with the same rule logic as the TUN path ([`upf::userspace::rules`]),
//! rewrites the Ethernet header from the kernel's neighbour table and sends the result on
//! the other interface's socket. No frame goes through the kernel's IP stack.
//!
//! Known limits: one rx queue per interface (veths have one); IPv4 only; outer IP
//! fragments stay with the kernel (no reassembly here); a packet whose TTL runs out after
//! its rule matched has already been counted in the usage id.

mod frame;
mod xsk;

use std::collections::HashMap;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, ObjectBuilder};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use upf::userspace::rules::{self, DownlinkVerdict, RuleHandle, Rules, UplinkVerdict};
use upf::userspace::{craft, TunCounters, TunReason, GTPU_PORT};

use frame::{Mac, Tunnel};
pub use xsk::XskStats;

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/upf_xsk.bpf.o"));

/// Frames read from one socket per wake-up before the other gets a turn.
const BATCH: u32 = 64;
/// The only rx queue used (a veth has one).
const QUEUE: u32 = 0;
/// How often a missing neighbour may trigger a re-read of the neighbour table.
const NEIGH_REFRESH: Duration = Duration::from_millis(100);

/// Why the AF_XDP path could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The crate was built without clang: no BPF object is embedded.
    #[error("upf-afxdp was built without clang; no BPF object")]
    NotBuilt,
    /// Loading, attaching or creating the sockets needs CAP_BPF/CAP_NET_ADMIN/CAP_NET_RAW.
    #[error("not permitted: {0}")]
    NotPermitted(String),
    /// libbpf refused to open or load the object, or a map operation failed.
    #[error("bpf: {0}")]
    Bpf(String),
    /// The namespace, an interface or a socket could not be set up.
    #[error("{0}")]
    Setup(String),
}

fn bpf_err(what: &str, e: libbpf_rs::Error) -> Error {
    match e.kind() {
        libbpf_rs::ErrorKind::PermissionDenied => Error::NotPermitted(format!("{what}: {e}")),
        _ => Error::Bpf(format!("{what}: {e}")),
    }
}

fn io_err(what: &str, e: io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => Error::NotPermitted(format!("{what}: {e}")),
        _ => Error::Setup(format!("{what}: {e}")),
    }
}

/// Where to run the AF_XDP path.
#[derive(Debug, Clone)]
pub struct AfXdpOptions {
    /// Network namespace of the interfaces (`ip netns` name), `None` for the current one.
    pub netns: Option<String>,
    /// The N3 interface (towards the gNBs).
    pub n3_iface: String,
    /// The N6 interface (towards the data network).
    pub n6_iface: String,
    /// The UPF's N3 address: G-PDUs to it are taken, downlink G-PDUs come from it.
    pub n3_addr: Ipv4Addr,
    /// The UE pool (address, prefix length): N6 packets to it are taken.
    pub ue_pool: (Ipv4Addr, u8),
    /// The next hop on N6 for inner destinations without a neighbour entry of their own;
    /// `None`: only directly connected destinations are reached.
    pub n6_gateway: Option<Ipv4Addr>,
    /// UMEM frames per socket (a power of two); half receive, half send.
    pub frames: u32,
}

/// Counters of the AF_XDP layer (the per-reason counters are [`AfXdpDatapath::counters`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AfXdpStats {
    /// Frames the N3 socket received.
    pub n3_rx: u64,
    /// Frames the N6 socket received.
    pub n6_rx: u64,
    /// Frames queued on the N3 socket (downlink G-PDUs, echo responses).
    pub n3_tx: u64,
    /// Frames queued on the N6 socket (decapsulated uplink packets).
    pub n6_tx: u64,
    /// Frames the XDP program redirected to a socket (both interfaces).
    pub bpf_to_xsk: u64,
    /// Frames the XDP program left to the kernel (both interfaces).
    pub bpf_passed: u64,
    /// The kernel's statistics of the N3 socket.
    pub n3: XskStats,
    /// The kernel's statistics of the N6 socket.
    pub n6: XskStats,
}

#[derive(Debug, Default)]
struct IoCounts {
    n3_rx: AtomicU64,
    n6_rx: AtomicU64,
    n3_tx: AtomicU64,
    n6_tx: AtomicU64,
}

/// The running AF_XDP path. Dropping it stops the packet thread and detaches the programs.
#[derive(Debug)]
pub struct AfXdpDatapath {
    handle: RuleHandle,
    io: Arc<IoCounts>,
    thread: Option<JoinHandle<Option<()>>>,
    // Links detach on drop; the sockets close after the thread ends.
    _links: Vec<Link>,
    counters: MapHandle,
    socks: [OwnedFd; 2],
    prog_ids: [u32; 2],
}

fn ifindex(name: &str) -> Result<u32, Error> {
    nix::net::if_::if_nametoindex(name).map_err(|e| Error::Setup(format!("interface {name}: {e}")))
}

fn own_mac(name: &str) -> Result<Mac, Error> {
    let addrs = nix::ifaddrs::getifaddrs().map_err(|e| Error::Setup(format!("getifaddrs: {e}")))?;
    addrs
        .filter(|a| a.interface_name == name)
        .find_map(|a| {
            a.address
                .and_then(|s| s.as_link_addr().and_then(|l| l.addr()))
        })
        .ok_or_else(|| Error::Setup(format!("no MAC address on {name}")))
}

fn map_of(obj: &libbpf_rs::Object, name: &str) -> Result<MapHandle, Error> {
    let m = obj
        .maps()
        .find(|m| m.name() == name)
        .ok_or_else(|| Error::Bpf(format!("object has no map {name}")))?;
    MapHandle::try_from(&m).map_err(|e| bpf_err(name, e))
}

struct Setup {
    n3: xsk::Xsk,
    n6: xsk::Xsk,
    links: Vec<Link>,
    n3_mac: Mac,
    n6_mac: Mac,
}

impl AfXdpDatapath {
    /// Loads `bpf/upf_xsk.c`, creates the two AF_XDP sockets, attaches the programs in
    /// native mode and starts the packet thread, all inside `opts.netns`.
    pub fn start(opts: &AfXdpOptions) -> Result<Self, Error> {
        if OBJECT.is_empty() {
            return Err(Error::NotBuilt);
        }
        let (pool, plen) = opts.ue_pool;
        if plen > 32 {
            return Err(Error::Setup(format!("UE pool prefix /{plen}")));
        }
        let open = ObjectBuilder::default()
            .open_memory(OBJECT)
            .map_err(|e| bpf_err("open", e))?;
        let obj = open.load().map_err(|e| bpf_err("load", e))?;
        let mask = u32::MAX.checked_shl(32 - u32::from(plen)).unwrap_or(0);
        let mut cfg = [0u8; 16];
        cfg[0..4].copy_from_slice(&opts.n3_addr.octets());
        cfg[4..8].copy_from_slice(&(u32::from(pool) & mask).to_be_bytes());
        cfg[8..12].copy_from_slice(&mask.to_be_bytes());
        map_of(&obj, "xsk_config")?
            .update(&0u32.to_ne_bytes(), &cfg, MapFlags::ANY)
            .map_err(|e| bpf_err("xsk_config", e))?;
        let xsks = [map_of(&obj, "xsks_n3")?, map_of(&obj, "xsks_n6")?];
        let counters = map_of(&obj, "xsk_counters")?;
        let mut prog_ids = [0u32; 2];
        for (i, name) in ["upf_xsk_n3", "upf_xsk_n6"].iter().enumerate() {
            let p = obj
                .progs()
                .find(|p| p.name() == *name)
                .ok_or_else(|| Error::Bpf(format!("object has no program {name}")))?;
            prog_ids[i] =
                libbpf_rs::Program::id_from_fd(p.as_fd()).map_err(|e| bpf_err(name, e))?;
        }

        let frames = opts.frames;
        let (n3_if, n6_if) = (opts.n3_iface.clone(), opts.n6_iface.clone());
        let ns = opts.netns.as_deref();
        let setup = upf::userspace::netns::run_in(ns, || -> Result<Setup, Error> {
            let (i3, i6) = (ifindex(&n3_if)?, ifindex(&n6_if)?);
            let n3 = xsk::Xsk::new(i3, QUEUE, frames)
                .map_err(|e| io_err(&format!("AF_XDP socket on {n3_if}"), e))?;
            let n6 = xsk::Xsk::new(i6, QUEUE, frames)
                .map_err(|e| io_err(&format!("AF_XDP socket on {n6_if}"), e))?;
            for (map, sock) in xsks.iter().zip([&n3, &n6]) {
                let fd = sock.fd().as_raw_fd();
                map.update(&QUEUE.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
                    .map_err(|e| bpf_err("xsks", e))?;
            }
            let mut links = Vec::new();
            for (name, idx) in [("upf_xsk_n3", i3), ("upf_xsk_n6", i6)] {
                let prog = obj
                    .progs_mut()
                    .find(|p| p.name() == name)
                    .ok_or_else(|| Error::Bpf(format!("object has no program {name}")))?;
                let idx = i32::try_from(idx).map_err(|_| Error::Setup("ifindex".to_owned()))?;
                links.push(
                    prog.attach_xdp(idx)
                        .map_err(|e| bpf_err(&format!("attach {name} to ifindex {idx}"), e))?,
                );
            }
            Ok(Setup {
                n3,
                n6,
                links,
                n3_mac: own_mac(&n3_if)?,
                n6_mac: own_mac(&n6_if)?,
            })
        })
        .map_err(|e| Error::Setup(format!("namespace {ns:?}: {e}")))??;

        let socks = [
            setup
                .n3
                .fd()
                .try_clone_to_owned()
                .map_err(|e| io_err("dup", e))?,
            setup
                .n6
                .fd()
                .try_clone_to_owned()
                .map_err(|e| io_err("dup", e))?,
        ];
        let (handle, rules) = rules::channel();
        let io = Arc::new(IoCounts::default());
        let worker = Worker {
            n3: setup.n3,
            n6: setup.n6,
            ctx: Ctx {
                rules,
                io: Arc::clone(&io),
                n3_if: opts.n3_iface.clone(),
                n6_if: opts.n6_iface.clone(),
                n3_mac: setup.n3_mac,
                n6_mac: setup.n6_mac,
                n3_addr: opts.n3_addr,
                n6_gateway: opts.n6_gateway,
                neigh_n3: HashMap::new(),
                neigh_n6: HashMap::new(),
                neigh_read: None,
                echoes: Vec::new(),
                released: Vec::new(),
            },
        };
        let thread = upf::userspace::netns::spawn_in(ns, "upf-afxdp", move || worker.run())
            .map_err(|e| io_err("packet thread", e))?;
        Ok(AfXdpDatapath {
            handle,
            io,
            thread: Some(thread),
            _links: setup.links,
            counters,
            socks,
            prog_ids,
        })
    }

    /// The per-reason counters (the same reasons as the TUN path).
    pub fn counters(&self) -> TunCounters {
        self.handle.counters()
    }

    /// CPU time the packet thread has used so far (CLOCK_THREAD_CPUTIME_ID), in ns.
    pub fn cpu_ns(&self) -> u64 {
        self.handle.cpu_ns()
    }

    /// The ids of the attached programs (N3, N6), to tell which path an interface runs.
    pub fn prog_ids(&self) -> [u32; 2] {
        self.prog_ids
    }

    /// The AF_XDP layer's counters.
    pub fn stats(&self) -> Result<AfXdpStats, Error> {
        let mut bpf = [0u64; 2];
        for (i, v) in bpf.iter_mut().enumerate() {
            let key = u32::try_from(i).unwrap_or(0).to_ne_bytes();
            let per_cpu = self
                .counters
                .lookup_percpu(&key, MapFlags::ANY)
                .map_err(|e| bpf_err("xsk_counters", e))?
                .unwrap_or_default();
            *v = per_cpu
                .iter()
                .filter_map(|b| b.get(..8).and_then(|s| s.try_into().ok()))
                .map(u64::from_ne_bytes)
                .sum();
        }
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Ok(AfXdpStats {
            n3_rx: ld(&self.io.n3_rx),
            n6_rx: ld(&self.io.n6_rx),
            n3_tx: ld(&self.io.n3_tx),
            n6_tx: ld(&self.io.n6_tx),
            bpf_to_xsk: bpf[0],
            bpf_passed: bpf[1],
            n3: xsk::stats(self.socks[0].as_fd()).map_err(|e| io_err("XDP_STATISTICS", e))?,
            n6: xsk::stats(self.socks[1].as_fd()).map_err(|e| io_err("XDP_STATISTICS", e))?,
        })
    }
}

impl Drop for AfXdpDatapath {
    fn drop(&mut self) {
        self.handle.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

upf::datapath_via_rule_handle!(AfXdpDatapath, "af_xdp", handle);

struct Worker {
    n3: xsk::Xsk,
    n6: xsk::Xsk,
    ctx: Ctx,
}

/// Everything the per-frame code needs besides the two sockets.
struct Ctx {
    rules: Rules,
    io: Arc<IoCounts>,
    n3_if: String,
    n6_if: String,
    n3_mac: Mac,
    n6_mac: Mac,
    n3_addr: Ipv4Addr,
    n6_gateway: Option<Ipv4Addr>,
    neigh_n3: HashMap<Ipv4Addr, Mac>,
    neigh_n6: HashMap<Ipv4Addr, Mac>,
    neigh_read: Option<Instant>,
    /// Echo responses (destination MAC, IPv4 packet) to send after the rx batch.
    echoes: Vec<(Mac, Vec<u8>)>,
    released: Vec<Vec<u8>>,
}

fn add(a: &AtomicU64, n: u64) {
    // Only the packet thread writes.
    a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

impl Worker {
    fn run(mut self) {
        self.ctx.refresh_neighbours();
        while !self.ctx.rules.stopped() {
            {
                let mut fds = [
                    PollFd::new(self.n3.fd(), PollFlags::POLLIN),
                    PollFd::new(self.n6.fd(), PollFlags::POLLIN),
                ];
                // A short timeout bounds how late a stop request or a rule change is seen
                // when no traffic wakes the thread.
                match poll(&mut fds, PollTimeout::from(20u16)) {
                    Ok(_) => {}
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => {
                        self.ctx.rules.count(TunReason::IoError);
                        break;
                    }
                }
            }
            let Worker { n3, n6, ctx } = &mut self;
            ctx.rules.apply_updates(&mut ctx.released);
            for p in std::mem::take(&mut ctx.released) {
                ctx.downlink(&p, n3);
            }
            // Both rx rings are read after every wake-up: an empty ring costs one load.
            let got = n3.receive(BATCH, |f| ctx.uplink(f, n6));
            add(&ctx.io.n3_rx, u64::from(got));
            for (mac, ip) in std::mem::take(&mut ctx.echoes) {
                let (src, io) = (ctx.n3_mac, &ctx.io);
                let r = match n3.send(|buf| frame::write_raw(buf, mac, src, &ip)) {
                    xsk::Tx::Queued => {
                        add(&io.n3_tx, 1);
                        TunReason::EchoAnswered
                    }
                    xsk::Tx::Skipped => TunReason::IoError,
                    xsk::Tx::Full => TunReason::DropTxFull,
                };
                ctx.rules.count(r);
            }
            let got = n6.receive(BATCH, |f| match frame::ipv4_of(f) {
                Ok(ip) => ctx.downlink(ip, n3),
                Err(r) => ctx.rules.count(r),
            });
            add(&ctx.io.n6_rx, u64::from(got));
            n3.flush();
            n6.flush();
            ctx.rules.record_cpu();
        }
    }
}

impl Ctx {
    fn refresh_neighbours(&mut self) {
        let now = Instant::now();
        if self
            .neigh_read
            .is_some_and(|t| now.duration_since(t) < NEIGH_REFRESH)
        {
            return;
        }
        self.neigh_read = Some(now);
        // This thread lives in the UPF's namespace; thread-self shows that namespace's
        // table (plain /proc/net follows the process's first thread).
        if let Ok(t) = std::fs::read_to_string("/proc/thread-self/net/arp") {
            self.neigh_n3 = frame::parse_arp(&t, &self.n3_if);
            self.neigh_n6 = frame::parse_arp(&t, &self.n6_if);
        }
    }

    fn neighbour(&mut self, n3: bool, ip: Ipv4Addr, gateway: Option<Ipv4Addr>) -> Option<Mac> {
        let find = |c: &Ctx| {
            let table = if n3 { &c.neigh_n3 } else { &c.neigh_n6 };
            table
                .get(&ip)
                .or_else(|| gateway.and_then(|g| table.get(&g)))
                .copied()
        };
        if let Some(m) = find(self) {
            return Some(m);
        }
        self.refresh_neighbours();
        find(self)
    }

    fn uplink(&mut self, f: &[u8], n6: &mut xsk::Xsk) {
        let udp = match frame::udp_of(f) {
            Ok(u) => u,
            Err(r) => return self.rules.count(r),
        };
        let inner = match self.rules.uplink(udp.payload) {
            UplinkVerdict::Done => return,
            UplinkVerdict::Echo(seq) => {
                let rsp = rules::echo_response(seq);
                return match craft::ipv4_udp(
                    self.n3_addr,
                    udp.src_ip,
                    GTPU_PORT,
                    udp.src_port,
                    &rsp,
                ) {
                    Some(ip) => self.echoes.push((udp.src_mac, ip)),
                    None => self.rules.count(TunReason::IoError),
                };
            }
            UplinkVerdict::Forward(inner) => inner,
        };
        if inner[8] <= 1 {
            return self.rules.count(TunReason::DropTtlExpired);
        }
        let dst = Ipv4Addr::new(inner[16], inner[17], inner[18], inner[19]);
        let Some(mac) = self.neighbour(false, dst, self.n6_gateway) else {
            return self.rules.count(TunReason::DropNoNeighbour);
        };
        let src = self.n6_mac;
        let r = match n6.send(|buf| frame::write_plain(buf, mac, src, inner)) {
            xsk::Tx::Queued => {
                add(&self.io.n6_tx, 1);
                TunReason::UlForwarded
            }
            xsk::Tx::Skipped => TunReason::IoError,
            xsk::Tx::Full => TunReason::DropTxFull,
        };
        self.rules.count(r);
    }

    fn downlink(&mut self, ip: &[u8], n3: &mut xsk::Xsk) {
        let DownlinkVerdict::Forward {
            teid,
            peer,
            qfi,
            inner,
        } = self.rules.downlink(ip)
        else {
            return;
        };
        if inner[8] <= 1 {
            return self.rules.count(TunReason::DropTtlExpired);
        }
        let Some(dst_mac) = self.neighbour(true, peer, None) else {
            return self.rules.count(TunReason::DropNoNeighbour);
        };
        let t = Tunnel {
            dst_mac,
            src_mac: self.n3_mac,
            src_ip: self.n3_addr,
            dst_ip: peer,
            teid,
            qfi,
        };
        let r = match n3.send(|buf| frame::write_gtpu(buf, &t, inner)) {
            xsk::Tx::Queued => {
                add(&self.io.n3_tx, 1);
                TunReason::DlForwarded
            }
            xsk::Tx::Skipped => TunReason::IoError,
            xsk::Tx::Full => TunReason::DropTxFull,
        };
        self.rules.count(r);
    }
}
