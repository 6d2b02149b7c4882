//! When the SBI client may send a failed request again: only when the server cannot have
//! processed it, on a new connection, within the call's own deadline.
//!
//! RFC 9113 §8.7 (the HTTP/2 that TS 29.500 §5.2 makes the SBI's transport) names the
//! requests a client knows were not processed: those whose connection never came up, those
//! reset with REFUSED_STREAM, and those above the last-stream-id of a GOAWAY (§6.8). Those
//! are sent again whatever their method. Anything else (a reset, a broken connection or a
//! timeout after the request went out) may have been acted on, and a POST that creates a
//! context must not be replayed blindly: the failure goes back to the NF, which answers it
//! the protocol's way (TS 29.500 §5.2.7, a 504 to its own caller).
//!
//! The rule is sans-IO: the client classifies what happened ([`Failure`]) and asks
//! [`may_retry`]; the deadline is the caller's timeout around the whole exchange.

use std::time::Duration;

/// How many times one request is sent again, whatever the reasons.
pub const MAX_RETRIES: u32 = 3;

/// How long one TCP connection attempt may take before it is given up and made again.
///
/// Linux resends a lost SYN after 1 s, then 2 s, 4 s... (`TCP_TIMEOUT_INIT`, doubled per
/// try), so two lost SYNs or SYN-ACKs in a row hold a connect for 3 s, three for 7 s: more
/// than the 5 s an NF gives most calls (`nf::host::SbiTimeouts::call`). A new attempt after
/// 1.5 s sends its SYN without waiting out the back-off, and is safe: nothing was sent on
/// the abandoned one.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(1500);

/// How a request failed, as far as its retry is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The TCP connection or the HTTP/2 handshake failed, or took longer than
    /// [`CONNECT_TIMEOUT`]: the request never left.
    Connect,
    /// The connection closed before the request was written (the client handed it back).
    NotSent,
    /// The server reset the stream with REFUSED_STREAM (RFC 9113 §8.7).
    Refused,
    /// A GOAWAY whose last-stream-id is below the request's stream (RFC 9113 §6.8).
    GoneAway,
    /// Anything after the request went out: it may have been processed.
    MaybeProcessed,
}

impl Failure {
    /// Whether the server cannot have processed the request.
    pub fn unprocessed(self) -> bool {
        !matches!(self, Failure::MaybeProcessed)
    }
}

/// Whether a request that failed with `failure`, already sent again `retries` times, may be
/// sent once more.
pub fn may_retry(failure: Failure, retries: u32) -> bool {
    failure.unprocessed() && retries < MAX_RETRIES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unprocessed_requests_are_sent_again_up_to_the_limit() {
        for f in [
            Failure::Connect,
            Failure::NotSent,
            Failure::Refused,
            Failure::GoneAway,
        ] {
            assert!(may_retry(f, 0), "{f:?}");
            assert!(may_retry(f, MAX_RETRIES - 1), "{f:?}");
            assert!(!may_retry(f, MAX_RETRIES), "{f:?}");
        }
    }

    #[test]
    fn a_request_that_may_have_been_processed_is_never_replayed() {
        assert!(!may_retry(Failure::MaybeProcessed, 0));
    }

    #[test]
    fn the_connect_timeout_lets_a_new_syn_out_before_the_kernels_second_resend() {
        // Kernel SYN resends after 1 s and 3 s: a new attempt comes between them, and two
        // attempts fit in a 5 s call with time left for the exchange.
        assert!(CONNECT_TIMEOUT > Duration::from_secs(1));
        assert!(CONNECT_TIMEOUT < Duration::from_secs(3));
        assert!(CONNECT_TIMEOUT * 2 < Duration::from_secs(5));
    }
}
