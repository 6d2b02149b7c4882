//! The per-packet rule logic both user-space paths share (sockets/TUN in `path.rs`, AF_XDP
//! in crate `upf-xdp`), sans-IO: [`Rules`] takes a GTP-U datagram or an IPv4 packet and
//! says what to do with it; the path that owns the sockets does the I/O.
//!
//! Tables: the packet thread owns its [`Rules`] outright. [`RuleHandle`] (the PFCP side's
//! end) sends each change over a channel, and the thread calls [`Rules::apply_updates`]
//! after every wake-up, before it reads packets, so a rule installed before a packet is
//! sent applies to that packet. No lock is taken per packet; the only shared state are
//! atomic counters (per reason, per usage id) that the thread adds to with relaxed stores
//! and the handle reads.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use pfcp::gtpu::{ext_type, msg_type, Packet};

use crate::datapath::{
    DatapathError, DownlinkAction, DownlinkRule, Entries, Gate, UplinkAction, UplinkRule, Usage,
    UsageId,
};
use crate::mbr::Policer;

/// Packets kept per UE while its FAR buffers; older ones are dropped first.
const BUFFER_PER_UE: usize = 64;

/// Why a user-space path (TUN or AF_XDP) forwarded, answered, buffered or dropped a packet.
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
    /// Dropped (AF_XDP): no neighbour entry for the next hop, so no destination MAC.
    DropNoNeighbour,
    /// Dropped (AF_XDP): the other interface's TX ring or its free frames ran out.
    DropTxFull,
    /// Dropped (AF_XDP, which routes itself): the inner packet's TTL ran out (RFC 1812
    /// §5.3.1).
    DropTtlExpired,
    /// Dropped: the inner IPv4 header is inconsistent (RFC 791 §3.1: IHL below 5, or a Total
    /// Length shorter than the header).
    DropInnerHeader,
}

impl TunReason {
    /// How many reasons there are.
    pub const COUNT: usize = 21;
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
        TunReason::DropNoNeighbour,
        TunReason::DropTxFull,
        TunReason::DropTtlExpired,
        TunReason::DropInnerHeader,
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
            TunReason::DropNoNeighbour => "drop_no_neighbour",
            TunReason::DropTxFull => "drop_tx_full",
            TunReason::DropTtlExpired => "drop_ttl_expired",
            TunReason::DropInnerHeader => "drop_inner_header",
        }
    }

    /// A drop reason.
    pub fn is_drop(self) -> bool {
        self.name().starts_with("drop_")
    }
}

/// A user-space path's counters, a snapshot.
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

/// Implements [`crate::Datapath`] for `$ty` by handing every call to its [`RuleHandle`]
/// field `$field`, naming it `$name`: the user-space paths (sockets/TUN, AF_XDP) keep their
/// rules in their packet thread and differ only in their I/O.
#[macro_export]
macro_rules! datapath_via_rule_handle {
    ($ty:ty, $name:literal, $field:ident) => {
        impl $crate::Datapath for $ty {
            fn name(&self) -> &'static str {
                $name
            }

            fn install_uplink(
                &mut self,
                rule: &$crate::datapath::UplinkRule,
            ) -> Result<(), $crate::datapath::DatapathError> {
                self.$field.install_uplink(rule)
            }

            fn install_downlink(
                &mut self,
                rule: &$crate::datapath::DownlinkRule,
            ) -> Result<(), $crate::datapath::DatapathError> {
                self.$field.install_downlink(rule)
            }

            fn remove_uplink(&mut self, teid: u32) -> Result<(), $crate::datapath::DatapathError> {
                self.$field.remove_uplink(teid)
            }

            fn remove_downlink(
                &mut self,
                ue_ip: ::std::net::Ipv4Addr,
            ) -> Result<(), $crate::datapath::DatapathError> {
                self.$field.remove_downlink(ue_ip)
            }

            fn usage(
                &self,
                id: $crate::datapath::UsageId,
            ) -> Result<$crate::datapath::Usage, $crate::datapath::DatapathError> {
                self.$field.usage(id)
            }

            fn remove_usage(
                &mut self,
                id: $crate::datapath::UsageId,
            ) -> Result<(), $crate::datapath::DatapathError> {
                self.$field.remove_usage(id)
            }

            fn entries(
                &self,
            ) -> Result<$crate::datapath::Entries, $crate::datapath::DatapathError> {
                self.$field.entries()
            }
        }
    };
}

/// A new pair of ends: the PFCP side's [`RuleHandle`] and the packet thread's [`Rules`].
pub fn channel() -> (RuleHandle, Rules) {
    let shared = Arc::new(Shared {
        counts: std::array::from_fn(|_| AtomicU64::new(0)),
        cpu_ns: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let (tx, rx) = mpsc::channel();
    (
        RuleHandle {
            tx,
            shared: Arc::clone(&shared),
            usage: HashMap::new(),
            uplinks: HashSet::new(),
            downlinks: HashSet::new(),
        },
        Rules {
            rx,
            shared,
            uplink: HashMap::new(),
            downlink: HashMap::new(),
            buffers: HashMap::new(),
        },
    )
}

/// The PFCP side's end: the [`crate::Datapath`] operations of a user-space path, the
/// counters it reads, and the stop flag. The paths delegate to it.
#[derive(Debug)]
pub struct RuleHandle {
    tx: mpsc::Sender<Update>,
    shared: Arc<Shared>,
    usage: HashMap<UsageId, Arc<UsageCell>>,
    uplinks: HashSet<u32>,
    downlinks: HashSet<Ipv4Addr>,
}

impl RuleHandle {
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

    /// Asks the packet thread to end (it sees this within one poll timeout).
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }

    fn cell(&mut self, id: Option<UsageId>) -> Option<Arc<UsageCell>> {
        id.map(|id| Arc::clone(self.usage.entry(id).or_default()))
    }

    fn send(&self, u: Update) -> Result<(), DatapathError> {
        self.tx
            .send(u)
            .map_err(|_| DatapathError::Os("the packet thread has stopped".to_owned()))
    }

    /// [`crate::Datapath::install_uplink`].
    pub fn install_uplink(&mut self, rule: &UplinkRule) -> Result<(), DatapathError> {
        let cell = self.cell(rule.usage);
        self.send(Update::Uplink(*rule, cell))?;
        self.uplinks.insert(rule.teid);
        Ok(())
    }

    /// [`crate::Datapath::install_downlink`].
    pub fn install_downlink(&mut self, rule: &DownlinkRule) -> Result<(), DatapathError> {
        let cell = self.cell(rule.usage);
        self.send(Update::Downlink(*rule, cell))?;
        self.downlinks.insert(rule.ue_ip);
        Ok(())
    }

    /// [`crate::Datapath::remove_uplink`].
    pub fn remove_uplink(&mut self, teid: u32) -> Result<(), DatapathError> {
        if !self.uplinks.remove(&teid) {
            return Err(DatapathError::NotFound {
                table: "uplink",
                key: format!("TEID {teid:#x}"),
            });
        }
        self.send(Update::RemoveUplink(teid))
    }

    /// [`crate::Datapath::remove_downlink`].
    pub fn remove_downlink(&mut self, ue_ip: Ipv4Addr) -> Result<(), DatapathError> {
        if !self.downlinks.remove(&ue_ip) {
            return Err(DatapathError::NotFound {
                table: "downlink",
                key: ue_ip.to_string(),
            });
        }
        self.send(Update::RemoveDownlink(ue_ip))
    }

    /// [`crate::Datapath::usage`].
    pub fn usage(&self, id: UsageId) -> Result<Usage, DatapathError> {
        Ok(self.usage.get(&id).map_or(Usage::default(), |c| Usage {
            ul_packets: c.ul_packets.load(Ordering::Relaxed),
            ul_bytes: c.ul_bytes.load(Ordering::Relaxed),
            dl_packets: c.dl_packets.load(Ordering::Relaxed),
            dl_bytes: c.dl_bytes.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
        }))
    }

    /// [`crate::Datapath::remove_usage`].
    pub fn remove_usage(&mut self, id: UsageId) -> Result<(), DatapathError> {
        // A rule still holding the cell keeps counting into it; the id is forgotten here.
        self.usage
            .remove(&id)
            .map(|_| ())
            .ok_or_else(|| DatapathError::NotFound {
                table: "usage",
                key: id.0.to_string(),
            })
    }

    /// [`crate::Datapath::entries`].
    pub fn entries(&self) -> Result<Entries, DatapathError> {
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

/// What to do with an uplink GTP-U datagram.
#[derive(Debug, PartialEq, Eq)]
pub enum UplinkVerdict<'a> {
    /// Forward this inner IPv4 packet to N6 (usage already counted); the caller counts
    /// [`TunReason::UlForwarded`] or why it could not.
    Forward(&'a [u8]),
    /// Answer an Echo Request with this sequence number (TS 29.281 §7.2.2); the caller
    /// counts [`TunReason::EchoAnswered`] or why it could not.
    Echo(u16),
    /// Nothing to send: dropped or signalling, already counted.
    Done,
}

/// What to do with a downlink IPv4 packet.
#[derive(Debug, PartialEq, Eq)]
pub enum DownlinkVerdict<'a> {
    /// Encapsulate `inner` to `teid` at `peer` (usage already counted); the caller counts
    /// [`TunReason::DlForwarded`] or why it could not.
    Forward {
        /// The gNB's TEID.
        teid: u32,
        /// The gNB's N3 address.
        peer: Ipv4Addr,
        /// QFI of the DL PDU Session Container, if one is sent.
        qfi: Option<u8>,
        /// The inner packet, cut to its IPv4 total length.
        inner: &'a [u8],
    },
    /// Nothing to send: buffered or dropped, already counted.
    Done,
}

/// The packet thread's end: its rule tables and buffers.
#[derive(Debug)]
pub struct Rules {
    rx: mpsc::Receiver<Update>,
    shared: Arc<Shared>,
    uplink: HashMap<u32, UlEntry>,
    downlink: HashMap<Ipv4Addr, DlEntry>,
    buffers: HashMap<Ipv4Addr, VecDeque<Vec<u8>>>,
}

impl Rules {
    /// Counts one packet under `r`.
    pub fn count(&self, r: TunReason) {
        bump(&self.shared.counts[r as usize], 1);
    }

    /// True once the handle asked the thread to end.
    pub fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    /// Publishes the calling thread's CPU time for [`RuleHandle::cpu_ns`].
    pub fn record_cpu(&self) {
        self.shared.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
    }

    /// Applies the changes the handle sent since the last call. Packets a buffering FAR
    /// kept are appended to `released` when a forwarding FAR replaces it (TS 29.244
    /// §5.2.3); the caller runs them through [`Rules::downlink`].
    pub fn apply_updates(&mut self, released: &mut Vec<Vec<u8>>) {
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
                    if forwards {
                        if let Some(q) = self.buffers.remove(&ue) {
                            released.extend(q);
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

    /// Decides on one GTP-U datagram (the UDP payload) that arrived on N3.
    pub fn uplink<'a>(&mut self, dgram: &'a [u8]) -> UplinkVerdict<'a> {
        let shared = &self.shared;
        let count = |r: TunReason| {
            bump(&shared.counts[r as usize], 1);
            UplinkVerdict::Done
        };
        let p = match Packet::new_checked(dgram) {
            Ok(p) => p,
            Err(pfcp::gtpu::Error::Truncated) => return count(TunReason::DropTruncated),
            Err(_) => return count(TunReason::DropMalformed),
        };
        match p.msg_type() {
            msg_type::G_PDU => {}
            msg_type::ECHO_REQUEST => return UplinkVerdict::Echo(p.sequence().unwrap_or(0)),
            _ => return count(TunReason::Signalling),
        }
        let Some(entry) = self.uplink.get_mut(&p.teid()) else {
            return count(TunReason::DropUnknownTeid);
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
                        _ => return count(TunReason::DropBadExtension),
                    }
                }
                Ok(_) => {}
                Err(_) => return count(TunReason::DropBadExtension),
            }
        }
        if let (Some(want), Some(got)) = (entry.rule.qfi, qfi) {
            if want != got {
                return count(TunReason::DropQfiMismatch);
            }
        }
        let inner = dgram.get(it.payload_offset()..p.total_len()).unwrap_or(&[]);
        let inner = match inner_ipv4(inner) {
            Ok(i) => i,
            Err(r) => return count(r),
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
        UplinkVerdict::Forward(inner)
    }

    /// Decides on one IPv4 packet to the UE pool that arrived from N6.
    pub fn downlink<'a>(&mut self, pkt: &'a [u8]) -> DownlinkVerdict<'a> {
        let shared = &self.shared;
        let count = |r: TunReason| {
            bump(&shared.counts[r as usize], 1);
            DownlinkVerdict::Done
        };
        let inner = match inner_ipv4(pkt) {
            Ok(i) => i,
            Err(r) => return count(r),
        };
        let dst = Ipv4Addr::new(inner[16], inner[17], inner[18], inner[19]);
        let Some(entry) = self.downlink.get_mut(&dst) else {
            return count(TunReason::DropNoRule);
        };
        let (teid, peer, qfi) = match entry.rule.action {
            _ if !entry.rule.gate.open => (None, Ipv4Addr::UNSPECIFIED, None),
            DownlinkAction::Forward { teid, peer, qfi } => (Some(teid), peer, qfi),
            DownlinkAction::Buffer => {
                let q = self.buffers.entry(dst).or_default();
                if q.len() >= BUFFER_PER_UE {
                    q.pop_front();
                    bump(&shared.counts[TunReason::DropBufferFull as usize], 1);
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
        DownlinkVerdict::Forward {
            teid,
            peer,
            qfi,
            inner,
        }
    }
}

/// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in ns; 0 if unreadable.
pub fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| {
            u64::try_from(t.tv_sec())
                .unwrap_or(0)
                .saturating_mul(1_000_000_000)
                .saturating_add(u64::try_from(t.tv_nsec()).unwrap_or(0))
        })
        .unwrap_or(0)
}

/// `p` cut to its IPv4 Total Length once its header holds together (RFC 791 §3.1): version 4,
/// IHL ≥ 5, IHL × 4 ≤ Total Length ≤ what arrived. Otherwise why it is dropped, under the
/// cause names the XDP fast path counts the same checks with.
pub fn inner_ipv4(p: &[u8]) -> Result<&[u8], TunReason> {
    let h = p.get(..20).ok_or(TunReason::DropTruncated)?;
    if h[0] >> 4 != 4 {
        return Err(TunReason::DropMalformed);
    }
    let header = usize::from(h[0] & 0x0f) * 4;
    if header < 20 {
        return Err(TunReason::DropInnerHeader);
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let pkt = p.get(..total).ok_or(TunReason::DropTruncated)?;
    if total < header {
        return Err(TunReason::DropInnerHeader);
    }
    Ok(pkt)
}

/// The longest header [`gtpu_header`] writes.
pub const GTPU_HEADER_MAX: usize = 16;

/// The G-PDU header (TS 29.281 §5.1) for `inner_len` octets to `teid`, with a DL PDU
/// Session Container (TS 38.415 §5.5.2.1) when `qfi` is set: the buffer and how much of
/// it is used.
pub fn gtpu_header(teid: u32, qfi: Option<u8>, inner_len: usize) -> ([u8; GTPU_HEADER_MAX], usize) {
    let mut h = [0u8; GTPU_HEADER_MAX];
    let ext = if qfi.is_some() { 8 } else { 0 };
    // Callers pass packets read from a TUN device or a frame (≤ 65535) so this never
    // saturates in practice; a too-long one gets a wrong length rather than a panic.
    let len = u16::try_from(inner_len.saturating_add(ext)).unwrap_or(u16::MAX);
    h[0] = if qfi.is_some() { 0x34 } else { 0x30 };
    h[1] = msg_type::G_PDU;
    h[2..4].copy_from_slice(&len.to_be_bytes());
    h[4..8].copy_from_slice(&teid.to_be_bytes());
    if let Some(q) = qfi {
        h[8..16].copy_from_slice(&[0, 0, 0, ext_type::PDU_SESSION_CONTAINER, 1, 0, q & 0x3f, 0]);
    }
    (h, 8 + ext)
}

/// Writes a G-PDU carrying `inner` to `teid` into `out` (see [`gtpu_header`]).
pub fn encap(out: &mut Vec<u8>, teid: u32, qfi: Option<u8>, inner: &[u8]) {
    out.clear();
    let (h, n) = gtpu_header(teid, qfi, inner.len());
    out.extend_from_slice(&h[..n]);
    out.extend_from_slice(inner);
}

/// An Echo Response (TS 29.281 §7.2.2) to the request with sequence number `seq`: a
/// Recovery IE (type 14, restart counter 0, TS 29.281 §8.2).
pub fn echo_response(seq: u16) -> [u8; 14] {
    let s = seq.to_be_bytes();
    [
        0x32,
        msg_type::ECHO_RESPONSE,
        0,
        6,
        0,
        0,
        0,
        0,
        s[0],
        s[1],
        0,
        0,
        14,
        0,
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use super::*;
    use crate::userspace::craft;
    use pfcp::gtpu::Repr;

    /// Session 1's uplink PDR 1: `teid` forwarded for `ue_ip` through an open gate, counted
    /// in `usage`.
    pub(in crate::userspace) fn forward_uplink(
        teid: u32,
        ue_ip: Ipv4Addr,
        usage: Option<UsageId>,
    ) -> UplinkRule {
        UplinkRule {
            teid,
            seid: 1,
            pdr_id: 1,
            ue_ip,
            qfi: None,
            action: UplinkAction::Forward,
            gate: Gate::OPEN,
            usage,
        }
    }

    #[test]
    fn encap_is_what_the_codec_reads() {
        let inner = craft::ipv4_udp(
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
    fn inner_ipv4_checks_version_header_and_length() {
        assert_eq!(inner_ipv4(&[0x45; 10]), Err(TunReason::DropTruncated));
        let mut p = vec![0u8; 30];
        p[0] = 0x45;
        p[3] = 25;
        assert_eq!(inner_ipv4(&p).map(<[u8]>::len), Ok(25));
        p[3] = 40;
        assert_eq!(inner_ipv4(&p), Err(TunReason::DropTruncated));
        p[3] = 30;
        // IHL 3 (12 octets): no IPv4 header is that short.
        p[0] = 0x43;
        assert_eq!(inner_ipv4(&p), Err(TunReason::DropInnerHeader));
        // IHL 7 (28 octets) in a 24-octet packet.
        p[0] = 0x47;
        p[3] = 24;
        assert_eq!(inner_ipv4(&p), Err(TunReason::DropInnerHeader));
        p[3] = 28;
        assert_eq!(inner_ipv4(&p).map(<[u8]>::len), Ok(28));
        p[0] = 0x60;
        assert_eq!(inner_ipv4(&p), Err(TunReason::DropMalformed));
    }

    /// An uplink G-PDU whose inner header is broken is dropped and counted, never
    /// forwarded, on the path every user-space datapath shares.
    #[test]
    fn broken_inner_headers_are_dropped_with_their_cause() {
        let (mut h, mut r) = channel();
        let ue = Ipv4Addr::new(10, 9, 0, 1);
        h.install_uplink(&forward_uplink(7, ue, None)).unwrap();
        r.apply_updates(&mut Vec::new());
        let good = craft::ipv4_udp(ue, Ipv4Addr::new(10, 8, 0, 1), 1, 2, b"inner").unwrap();
        for (ihl_byte, want) in [
            (0x43, TunReason::DropInnerHeader),
            (0x40, TunReason::DropInnerHeader),
            (0x4f, TunReason::DropInnerHeader),
        ] {
            let mut bad = good.clone();
            bad[0] = ihl_byte;
            let before = h.counters();
            let g = craft::g_pdu(7, None, &bad).unwrap();
            assert_eq!(r.uplink(&g), UplinkVerdict::Done, "{ihl_byte:#x}");
            assert_eq!(h.counters().since(&before).get(want), 1, "{ihl_byte:#x}");
        }
        let g = craft::g_pdu(7, None, &good).unwrap();
        assert_eq!(r.uplink(&g), UplinkVerdict::Forward(&good[..]));
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

    #[test]
    fn rules_decide_without_io() {
        let (mut h, mut r) = channel();
        let ue = Ipv4Addr::new(10, 9, 0, 1);
        let dn = Ipv4Addr::new(10, 8, 0, 1);
        h.install_uplink(&forward_uplink(7, ue, Some(UsageId(1))))
            .unwrap();
        h.install_downlink(&DownlinkRule {
            ue_ip: ue,
            seid: 1,
            pdr_id: 2,
            action: DownlinkAction::Forward {
                teid: 9,
                peer: dn,
                qfi: Some(5),
            },
            gate: Gate::OPEN,
            usage: Some(UsageId(1)),
        })
        .unwrap();
        let mut released = Vec::new();
        r.apply_updates(&mut released);
        assert!(released.is_empty());
        let inner = craft::ipv4_udp(ue, dn, 1, 2, b"up").unwrap();
        let g = craft::g_pdu(7, None, &inner).unwrap();
        assert_eq!(r.uplink(&g), UplinkVerdict::Forward(&inner[..]));
        let g = craft::g_pdu(8, None, &inner).unwrap();
        assert_eq!(r.uplink(&g), UplinkVerdict::Done);
        assert_eq!(r.uplink(&g[..5]), UplinkVerdict::Done);
        let back = craft::ipv4_udp(dn, ue, 2, 1, b"down").unwrap();
        assert_eq!(
            r.downlink(&back),
            DownlinkVerdict::Forward {
                teid: 9,
                peer: dn,
                qfi: Some(5),
                inner: &back[..]
            }
        );
        let c = h.counters();
        assert_eq!(c.get(TunReason::DropUnknownTeid), 1);
        assert_eq!(c.get(TunReason::DropTruncated), 1);
        let u = h.usage(UsageId(1)).unwrap();
        assert_eq!((u.ul_packets, u.dl_packets), (1, 1));
        h.remove_uplink(7).unwrap();
        h.remove_downlink(ue).unwrap();
        h.remove_usage(UsageId(1)).unwrap();
        assert_eq!(h.entries().unwrap(), Entries::default());
    }
}
