//! steer5g steering: deciding, from an identifier or a key alone, which worker owns the state
//! behind it (DESIGN.md "Identifiers and ownership").
//!
//! - [`owner`]: the one place where the bit layouts of the self-routing identifiers and the
//!   stable placement hash live. BPF programs will mirror it, so it is plain integer math.
//!
//! The thread-per-core runtime, the per-pair queues and the listener groups of DESIGN.md
//! will join this crate later.

pub mod owner;

pub use owner::{WorkerId, Workers};
