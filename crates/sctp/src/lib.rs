//! A user-space SCTP stack (RFC 9260) as a sans-IO state machine.
//!
//! The [`Endpoint`] owns many associations and is driven with received packets
//! ([`Endpoint::handle`]), timer expiries ([`Endpoint::handle_timeout`]) and user calls
//! ([`Endpoint::connect`], [`Endpoint::send`], ...). It hands work back through
//! [`Endpoint::poll_transmit`], [`Endpoint::poll_event`] and [`Endpoint::poll_timeout`].
//! It never touches a socket or reads a clock: time comes in as `Instant` arguments and
//! randomness from a seeded RNG, so tests are deterministic.
//!
//! Single-homed and IPv4 only. The transport (raw IP protocol 132, or UDP encapsulation per
//! RFC 6951) lives elsewhere and identifies the peer by a `SocketAddr` whose port is the UDP
//! encapsulation port (0 for raw IP).

pub mod wire;
