//! The UDM's per-subscriber state that must outlive one UDM instance (TS 29.503): the serving
//! AMF's registration for 3GPP access (Nudm_UECM) and the last authentication result the AUSF
//! reported (auth-events). A UDM keeps both in memory; a store that is shared between
//! instances ([`crate::PgStore`]) also keeps a copy, written behind (off the hot path) and read
//! when an instance has none in memory (after its restart, or for a UE another instance
//! served). The embedded store keeps none: with one process, its memory is the state.

/// Which part of the state a write replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateField {
    /// `Amf3GppAccessRegistration` (TS 29.503 §6.2.6.2.2).
    AmfRegistration,
    /// `AuthEvent` (TS 29.503 §6.3.6.2.6).
    AuthEvent,
}

/// One write: `body` (the SBI JSON) replaces `field` of `supi`'s state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateWrite {
    /// The subscriber.
    pub supi: String,
    /// What is replaced.
    pub field: StateField,
    /// The JSON body.
    pub body: String,
}

/// A subscriber's stored state, each part as its SBI JSON body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UdmState {
    /// The serving AMF's registration.
    pub amf_registration: Option<String>,
    /// The last authentication result.
    pub auth_event: Option<String>,
}
