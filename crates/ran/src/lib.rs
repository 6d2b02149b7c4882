//! The RAN side of steer5g's load generator: emulated gNBs and UEs.
//!
//! - [`gnb`]: a gNB's NG Setup towards the AMF, and the UE-associated N2 signalling
//!   it carries for its UEs ([`gnb::GnbUes`]).
//! - [`ue`]: a UE's USIM and 5GMM NAS state machine, and its PDU sessions.
//! - [`userplane`]: uplink and downlink G-PDUs of the sessions, with loss and latency.

pub mod gnb;
pub mod ue;
pub mod userplane;
