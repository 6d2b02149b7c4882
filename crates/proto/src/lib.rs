//! Protocol codecs and identities for steer5g.
//!
//! - [`ids`]: PLMN, S-NSSAI, TAC/TAI, GUAMI, Global RAN Node ID, and the project-wide
//!   defaults.
//! - [`ngap`]: NGAP (TS 38.413) over `oxirush-ngap`, behind types of our own.

pub mod ids;
pub mod ngap;
