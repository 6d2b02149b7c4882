//! SCTP over real sockets: the sans-IO [`sctp::Endpoint`] driven by a Tokio runtime over raw
//! IPv4 (protocol 132) or UDP encapsulation (RFC 6951).
//!
//! The split follows quinn beside quinn-proto: everything SCTP decides lives in the `sctp`
//! crate; this crate only moves packets and keeps time. One [`SctpSocket`] is one endpoint on
//! one transport socket, owned by the thread that drives it, so associations are owned by a
//! core like every other piece of state in steer5g.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use sctp_io::{SctpSocket, Transport};
//! let transport = Transport::bind_udp("127.0.0.5:9899".parse()?)?;
//! let mut sock = SctpSocket::new(transport, sctp::Endpoint::new(sctp::EndpointConfig::default()));
//! loop {
//!     sock.drive(None).await?;
//!     while let Some((id, event)) = sock.endpoint_mut().poll_event() {
//!         println!("{id}: {event:?}");
//!     }
//! }
//! # }
//! ```

mod mmsg;
mod socket;
pub mod transport;

pub use socket::{IoStats, SctpSocket};
pub use transport::{BatchSent, BindError, Kind, Transport};
