//! What the PFCP side (TS 29.244) tells a user-plane path, reduced to the lookups a packet
//! needs: an uplink G-PDU is found by its TEID (TS 29.281), a downlink packet by its
//! destination UE IPv4 address. Rules are plain values so that the XDP path can copy them
//! into BPF maps and the user-space paths into their own tables.
//!
//! TEIDs encode the owning worker in their top bits (`ids::upf`), so a G-PDU can be
//! steered to it without a table; UE addresses come from per-worker ranges of the DNN's pool.

use std::net::Ipv4Addr;

/// Index of one usage counter (one URR of one session), allocated by the PFCP side, unique
/// within one UPF. Both directions of a session may count into the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UsageId(pub u32);

/// A QER gate (TS 29.244 §8.2.7) and maximum bit rate, for one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// Packets pass only when open.
    pub open: bool,
    /// Maximum bit rate in bit/s of this direction; 0 = unlimited.
    pub mbr_bps: u64,
}

impl Gate {
    /// Open, no rate limit.
    pub const OPEN: Gate = Gate {
        open: true,
        mbr_bps: 0,
    };
}

/// What happens to an uplink G-PDU whose TEID matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UplinkAction {
    /// Remove the GTP-U/UDP/IP outer header (Outer Header Removal) and forward the inner
    /// IPv4 packet to N6 (FAR forward, destination interface Core).
    Forward,
    /// Drop (FAR drop), counted.
    Drop,
}

/// One uplink rule: a PDR with source interface Access and a local F-TEID, its FAR, QER and
/// URR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UplinkRule {
    /// The local TEID on N3 (the key).
    pub teid: u32,
    /// The session's UPF-side SEID (for usage reports and clean-up).
    pub seid: u64,
    /// The PDR id.
    pub pdr_id: u16,
    /// The UE's address: an uplink packet whose inner source is not this is dropped.
    pub ue_ip: Ipv4Addr,
    /// QFI expected in the PDU Session Container, if the PDR names one.
    pub qfi: Option<u8>,
    /// The FAR.
    pub action: UplinkAction,
    /// The QER of this direction.
    pub gate: Gate,
    /// The URR the packets count into.
    pub usage: Option<UsageId>,
}

/// What happens to a downlink packet whose destination UE address matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownlinkAction {
    /// Add a GTP-U/UDP/IPv4 header (Outer Header Creation) and send it to the gNB on N3.
    Forward {
        /// The gNB's TEID.
        teid: u32,
        /// The gNB's N3 address (UDP port 2152).
        peer: Ipv4Addr,
        /// QFI for the PDU Session Container (TS 38.415), when one is sent.
        qfi: Option<u8>,
    },
    /// Keep the packets until a modification says where to send them (FAR buffer); the
    /// XDP path passes these to user space, which buffers.
    Buffer,
    /// Drop, counted.
    Drop,
}

/// One downlink rule: a PDR with source interface Core and a UE IP address, its FAR, QER
/// and URR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownlinkRule {
    /// The UE's IPv4 address (the key).
    pub ue_ip: Ipv4Addr,
    /// The session's UPF-side SEID.
    pub seid: u64,
    /// The PDR id.
    pub pdr_id: u16,
    /// The FAR.
    pub action: DownlinkAction,
    /// The QER of this direction.
    pub gate: Gate,
    /// The URR the packets count into.
    pub usage: Option<UsageId>,
}

/// Cumulative counts of one usage id since it was first installed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uplink packets forwarded.
    pub ul_packets: u64,
    /// Uplink bytes forwarded (inner IP packet length).
    pub ul_bytes: u64,
    /// Downlink packets forwarded.
    pub dl_packets: u64,
    /// Downlink bytes forwarded (inner IP packet length).
    pub dl_bytes: u64,
    /// Packets dropped by a closed gate, the MBR or a drop FAR.
    pub dropped: u64,
}

/// How many entries a datapath holds: after every session has ended, all are zero (a rule
/// left behind would forward a released UE's packets and fill the maps over time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Entries {
    /// Uplink rules.
    pub uplink: usize,
    /// Downlink rules.
    pub downlink: usize,
    /// Usage counters.
    pub usage: usize,
}

/// Why a datapath refused or failed an operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatapathError {
    /// The table is full.
    #[error("{table} full ({capacity} entries)")]
    Full {
        /// Which table.
        table: &'static str,
        /// Its size.
        capacity: usize,
    },
    /// No such entry.
    #[error("no {table} entry for {key}")]
    NotFound {
        /// Which table.
        table: &'static str,
        /// The key, printed.
        key: String,
    },
    /// The kernel or the OS refused.
    #[error("{0}")]
    Os(String),
}

/// A user-plane path. The PFCP side calls these when sessions are established, modified and
/// deleted; installing an existing key replaces its rule.
pub trait Datapath {
    /// A short name for reports: "xdp", "tun", "af_xdp".
    fn name(&self) -> &'static str;
    /// Installs or replaces the uplink rule of `rule.teid`.
    fn install_uplink(&mut self, rule: &UplinkRule) -> Result<(), DatapathError>;
    /// Installs or replaces the downlink rule of `rule.ue_ip`.
    fn install_downlink(&mut self, rule: &DownlinkRule) -> Result<(), DatapathError>;
    /// Removes the uplink rule of `teid`.
    fn remove_uplink(&mut self, teid: u32) -> Result<(), DatapathError>;
    /// Removes the downlink rule of `ue_ip`.
    fn remove_downlink(&mut self, ue_ip: Ipv4Addr) -> Result<(), DatapathError>;
    /// Reads the cumulative counts of `id` (zeros if nothing was counted yet).
    fn usage(&self, id: UsageId) -> Result<Usage, DatapathError>;
    /// Forgets the counters of `id` (after its final usage report).
    fn remove_usage(&mut self, id: UsageId) -> Result<(), DatapathError>;
    /// How many entries the path holds now.
    fn entries(&self) -> Result<Entries, DatapathError>;
}
