//! The steer5g UPF.
//!
//! - [`datapath`]: the forwarding state the PFCP side installs (uplink by TEID, downlink by
//!   UE IP, gates, usage counters) and the [`Datapath`] trait every user-plane path
//!   implements: the XDP fast path (crate `upf-xdp`) and the user-space paths.

pub mod datapath;
pub mod userspace;

pub use datapath::{
    Datapath, DatapathError, DownlinkAction, DownlinkRule, Entries, Gate, UplinkAction, UplinkRule,
    Usage, UsageId,
};
