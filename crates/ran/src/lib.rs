//! The RAN side of steer5g's load generator: emulated gNBs (and later UEs).
//!
//! - [`gnb`]: a gNB's NG Setup towards the AMF.

pub mod gnb;
