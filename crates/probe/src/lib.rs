//! `steer5g probe`: the Linux receive path stage by stage, the measurement of reference 004
//! redone on kernels that refuse kprobes and fentry. Every program is tp_btf
//! (bpf/probe.c); per stage the probe reports its rate, its time per packet as a histogram,
//! NAPI batching, drops by reason, and which task the NET_RX softirq time was charged to,
//! next to what /proc says for the same interval.
//!
//! [`Probe`] loads and attaches (root), [`Counters`] is what the maps hold, and
//! [`report::build`] turns two readings into a [`Report`] without the kernel.

pub mod counters;
mod error;
pub mod hist;
mod load;
pub mod netns;
pub mod plot;
pub mod procfs;
pub mod report;
pub mod stages;
pub mod sweep;
pub mod tag;

pub use counters::Counters;
pub use error::Error;
pub use load::{drop_reason_names, Filter, Probe, RunStats, StatsGuard, PROGRAM_PREFIX};
pub use report::{Reading, Report};
