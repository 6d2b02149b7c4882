//! The AMF (TS 23.501 §6.2.1).
//!
//! - [`n2`]: NG Setup, Error Indication and NGAP error handling towards gNBs.
//! - [`overload`]: overload control: the hysteresis of the measured signal, and OVERLOAD
//!   START / STOP towards the gNBs.
//! - [`pm`]: the performance measurements of TS 28.552 (registrations, authentications)
//!   under Open5GS's metric names.
//! - [`registration`]: the UE-associated side: registration, authentication, security
//!   mode, deregistration and UE context release.

pub mod n2;
pub mod overload;
pub mod pm;
pub mod registration;
