//! The network functions of steer5g as sans-IO state machines.
//!
//! - [`amf`]: the AMF; for now its N2 side for non-UE-associated signalling.

pub mod amf;
