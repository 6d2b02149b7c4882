//! Protocol codecs and identities for steer5g.
//!
//! - [`ids`]: PLMN, S-NSSAI, TAC/TAI, GUAMI, Global RAN Node ID, and the project-wide
//!   defaults.
//! - [`ngap`]: NGAP (TS 38.413) over `oxirush-ngap`, behind types of our own.
//! - [`nas`]: NAS-5GS (TS 24.501) 5GMM messages of registration over `oxirush-nas`,
//!   and NAS security (§4.4).

pub mod ids;
pub mod nas;
pub mod ngap;
