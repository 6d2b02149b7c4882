//! Unit tests of the registration procedures live in crates/nf/tests/amf_registration.rs.
