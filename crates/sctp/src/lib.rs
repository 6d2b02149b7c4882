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
//!
//! # Limitations
//!
//! - One path per association: extra addresses in INIT / INIT ACK are ignored, there is no
//!   path failover, and Path.Max.Retrans only marks the path inactive in [`AssocInfo`].
//! - No extensions: PR-SCTP, AUTH, ASCONF, I-DATA, stream reconfiguration and ECN are not
//!   offered; their chunks and parameters are handled by the RFC 9260 §3.2 unknown-type rules.
//! - Received messages wait in the event queue until polled; the advertised window only
//!   accounts for data held for reassembly and ordering, not for unpolled events.
//!
//! ```
//! use std::time::Instant;
//! use bytes::Bytes;
//! use sctp::{Endpoint, EndpointConfig, Event};
//!
//! let now = Instant::now();
//! let (gnb_addr, amf_addr) = ("10.0.0.1:0".parse().unwrap(), "10.0.0.2:0".parse().unwrap());
//! let mut amf = Endpoint::new(EndpointConfig { listen_port: Some(38412), ..Default::default() });
//! let mut gnb = Endpoint::new(EndpointConfig { rng_seed: 1, ..Default::default() });
//! let id = gnb.connect(now, amf_addr, 40000, 38412).unwrap();
//! let mut got = None;
//! for _ in 0..4 {
//!     while let Some(t) = gnb.poll_transmit(now) { amf.handle(now, gnb_addr, &t.packet); }
//!     while let Some(t) = amf.poll_transmit(now) { gnb.handle(now, amf_addr, &t.packet); }
//!     while let Some((_, e)) = gnb.poll_event() {
//!         if let Event::Connected { .. } = e {
//!             gnb.send(id, 0, 60, false, Bytes::from_static(b"NGSetupRequest")).unwrap();
//!         }
//!     }
//!     while let Some((_, e)) = amf.poll_event() {
//!         if let Event::Message(m) = e { got = Some(m); }
//!     }
//! }
//! let m = got.unwrap();
//! assert_eq!((m.stream, m.ppid, &m.data[..]), (0, 60, &b"NGSetupRequest"[..]));
//! ```

pub mod wire;

mod association;
mod config;
mod cookie;
mod endpoint;
mod types;

pub use config::{AssociationConfig, EndpointConfig};
pub use endpoint::Endpoint;
pub use types::{
    AssocCounters, AssocId, AssocInfo, CloseReason, ClosedError, ConnectError, EndpointStats,
    Event, Message, SendError, State, Transmit, MAX_MESSAGE_SIZE,
};
pub use wire::ErrorCause;
