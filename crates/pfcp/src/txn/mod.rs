//! PFCP transactions (TS 29.244 §6.4), sans-IO: both ends of a request/response exchange
//! over an unreliable transport, shared by the SMF (through `nf::host`) and the UPF node.
//!
//! - [`Requester`]: our requests in flight. One unanswered after T1 is sent again, at most
//!   N1 times; at the next expiry the caller is told the peer gave no answer.
//! - [`ResponseCache`]: the responses we sent, kept long enough that a retransmitted
//!   request is answered with the very same bytes and never processed twice.
//!
//! Neither owns a socket or reads a clock: `now` comes in with every call, and
//! [`Requester::poll_timeout`] / [`ResponseCache::poll_timeout`] say when to come back.
//!
//! TS 29.244 §6.4 makes T1 and N1 configuration, without values of its own; the defaults
//! here, 3 s and 3, are the common choice of PFCP deployments (the values GTPv2-C peers use
//! for T3-RESPONSE and N3-REQUESTS, TS 29.274 §7.6) and what the UPF node and the SMF of
//! steer5g always used. A peer answering from its cache must keep a response for at least
//! T1 × (N1 + 1) of the requester: 12 s with these values, well inside the 60 s default.

mod requester;
mod responder;

pub use requester::{Due, Requester, RequesterStats};
pub use responder::ResponseCache;

use std::time::Duration;

/// Default T1: how long a request waits for its response before it is sent again.
pub const DEFAULT_T1: Duration = Duration::from_secs(3);
/// Default N1: retransmissions of a request before the peer counts as not answering.
pub const DEFAULT_N1: u32 = 3;
/// Default lifetime of a cached response.
pub const DEFAULT_CACHE_LIFETIME: Duration = Duration::from_secs(60);
/// Default bound on cached responses (the oldest go first).
pub const DEFAULT_CACHE_MAX: usize = 65_536;
/// Shortest T1 taken: a zero T1 would make a retransmitted request due again at once.
pub const MIN_T1: Duration = Duration::from_millis(1);

/// Version Not Supported Response (§7.4.4.7): the answer a peer of another version gives to
/// any request.
pub const VERSION_NOT_SUPPORTED_RESPONSE: u8 = 11;

/// Whether a message of type `msg_type` answers a request of type `request_type`: §7.2.2.2
/// numbers each response right after its request, and a Version Not Supported Response
/// answers any. The requester ends a transaction on this match whatever the body holds, so
/// whoever waits for the response must take it on the same match.
pub fn is_response_to(request_type: u8, msg_type: u8) -> bool {
    msg_type == request_type.wrapping_add(1) || msg_type == VERSION_NOT_SUPPORTED_RESPONSE
}

/// The requester's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retransmission {
    /// T1: time between a (re)transmission and the next one; at least [`MIN_T1`].
    pub t1: Duration,
    /// N1: retransmissions before giving up.
    pub n1: u32,
}

impl Retransmission {
    /// How long after its first transmission an unanswered request is given up on:
    /// T1 × (N1 + 1), the first wait and one per retransmission (T1 taken as at least
    /// [`MIN_T1`], as the requester does).
    pub fn give_up_after(&self) -> Duration {
        self.t1
            .max(MIN_T1)
            .saturating_mul(self.n1.saturating_add(1))
    }
}

impl Default for Retransmission {
    /// [`DEFAULT_T1`] and [`DEFAULT_N1`].
    fn default() -> Self {
        Retransmission {
            t1: DEFAULT_T1,
            n1: DEFAULT_N1,
        }
    }
}

/// How the responder's cache is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// How long a response is kept (at least T1 × (N1 + 1) of the peers).
    pub lifetime: Duration,
    /// At most this many responses are kept; 0 keeps none.
    pub max: usize,
}

impl Default for CacheConfig {
    /// [`DEFAULT_CACHE_LIFETIME`] and [`DEFAULT_CACHE_MAX`].
    fn default() -> Self {
        CacheConfig {
            lifetime: DEFAULT_CACHE_LIFETIME,
            max: DEFAULT_CACHE_MAX,
        }
    }
}
