//! The AMF (TS 23.501 §6.2.1).
//!
//! - [`n2`]: NG Setup, Error Indication and NGAP error handling towards gNBs.

pub mod n2;
