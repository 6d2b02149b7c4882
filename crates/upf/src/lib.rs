//! The steer5g UPF.
//!
//! - [`datapath`]: the forwarding state the PFCP side installs (uplink by TEID, downlink by
//!   UE IP, gates, usage counters) and the [`Datapath`] trait every user-plane path
//!   implements: the XDP fast path (crate `upf-xdp`) and the user-space paths.
//! - [`node`]: the N4 side (TS 29.244) as a sans-IO state machine, [`UpfNode`].
//! - [`service`]: that node behind a UDP socket on its own thread, [`UpfService`].
//! - [`memory`]: a rules-only datapath that forwards nothing (`--datapath none`, tests).
//! - [`mbr`]: the QER's MBR as a sans-IO token bucket, shared by every path.
//!
//! The SEID and TEID layouts that carry the owning worker live in `ids::upf`; the requests an
//! SMF sends for one PDU session (tests, load generators) in `pfcp::requests`.

pub mod datapath;
pub mod mbr;
pub mod memory;
pub mod node;
pub mod service;
pub mod userspace;

pub use datapath::{
    Datapath, DatapathError, DownlinkAction, DownlinkRule, Entries, Gate, UplinkAction, UplinkRule,
    Usage, UsageId,
};
pub use memory::MemoryDatapath;
pub use node::{NodeConfig, Stats, Transmit, UpfNode};

pub use service::{LiveCounts, ServiceLive, ServiceOptions, ServiceReport, UpfService};
