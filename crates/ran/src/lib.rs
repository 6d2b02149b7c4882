//! The RAN side of steer5g's load generator: emulated gNBs and UEs.
//!
//! - [`gnb`]: a gNB's NG Setup towards the AMF, and the UE-associated N2 signalling
//!   it carries for its UEs ([`gnb::GnbUes`]).
//! - [`ue`]: a UE's USIM and 5GMM NAS state machine, and its PDU sessions.
//! - [`userplane`]: uplink and downlink G-PDUs of the sessions, with loss and latency.
//! - [`load`]: the load generator: many gNBs and UEs over real SCTP sockets, closed and open
//!   loop, with its report. The only module here that does I/O (tokio, sockets, clocks).

pub mod gnb;
pub mod load;
pub mod ue;
pub mod userplane;
