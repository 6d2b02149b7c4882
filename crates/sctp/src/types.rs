//! Identifiers, events and errors shared by the endpoint and its associations.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use thiserror::Error;

use crate::wire::ErrorCause;

/// Handle of one association inside an [`crate::Endpoint`]; never reused by that endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AssocId(pub u32);

impl fmt::Display for AssocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "assoc#{}", self.0)
    }
}

/// One SCTP packet to send.
#[derive(Debug, Clone)]
pub struct Transmit {
    /// Destination (IPv4 address, UDP encapsulation port or 0).
    pub remote: SocketAddr,
    /// A full SCTP packet, common header onward, CRC32c filled in.
    pub packet: Vec<u8>,
}

/// A user message received on an association.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Stream identifier.
    pub stream: u16,
    /// Payload protocol identifier (60 = NGAP).
    pub ppid: u32,
    /// Sent unordered (U bit).
    pub unordered: bool,
    /// The reassembled user data.
    pub data: Bytes,
}

/// Why an association ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// SHUTDOWN / SHUTDOWN ACK / SHUTDOWN COMPLETE finished.
    ShutdownComplete,
    /// The peer sent ABORT.
    AbortedByPeer {
        /// Causes the peer gave.
        causes: Vec<ErrorCause>,
    },
    /// The local user called `abort` (or the stack aborted on a protocol error).
    AbortedLocally,
    /// Association.Max.Retrans (or Path.Max.Retrans) was exceeded (RFC 9260 §8.1).
    CommunicationLost,
    /// INIT or COOKIE ECHO retransmits were exhausted, or the peer refused the setup.
    InitFailed,
}

/// Something the user should know about an association.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The association reached ESTABLISHED.
    Connected {
        /// Peer transport address.
        remote: SocketAddr,
        /// Local SCTP port.
        local_port: u16,
        /// Peer SCTP port.
        remote_port: u16,
        /// Negotiated number of inbound streams.
        inbound_streams: u16,
        /// Negotiated number of outbound streams.
        outbound_streams: u16,
    },
    /// A complete user message.
    Message(Message),
    /// The peer restarted (RFC 9260 §5.2.4 case A); queued and in-flight data was dropped.
    Restarted,
    /// An ERROR chunk arrived.
    PeerError {
        /// Its causes.
        causes: Vec<ErrorCause>,
    },
    /// The association is gone.
    Closed {
        /// Why.
        reason: CloseReason,
    },
}

/// Association states (RFC 9260 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// INIT sent, waiting for INIT ACK.
    CookieWait,
    /// COOKIE ECHO sent, waiting for COOKIE ACK.
    CookieEchoed,
    /// Data transfer.
    Established,
    /// Local shutdown requested; flushing outstanding data.
    ShutdownPending,
    /// SHUTDOWN sent.
    ShutdownSent,
    /// SHUTDOWN received; flushing outstanding data.
    ShutdownReceived,
    /// SHUTDOWN ACK sent.
    ShutdownAckSent,
    /// Gone.
    Closed,
}

/// Per-association counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssocCounters {
    /// DATA chunks sent for the first time.
    pub data_chunks_sent: u64,
    /// DATA chunks received (including duplicates).
    pub data_chunks_received: u64,
    /// Messages delivered to the user.
    pub messages_delivered: u64,
    /// Messages accepted from the user.
    pub messages_sent: u64,
    /// DATA chunks retransmitted (timeout and fast retransmit).
    pub retransmissions: u64,
    /// DATA chunks fast-retransmitted.
    pub fast_retransmits: u64,
    /// T3-rtx expiries.
    pub t3_expirations: u64,
    /// SACKs sent.
    pub sacks_sent: u64,
    /// SACKs received.
    pub sacks_received: u64,
    /// SACKs sent that carried gap ack blocks.
    pub sacks_with_gaps_sent: u64,
    /// SACKs received that carried gap ack blocks.
    pub sacks_with_gaps_received: u64,
    /// Duplicate TSNs received.
    pub duplicate_tsns: u64,
    /// DATA chunks dropped unacknowledged for want of room (receive window or fragments
    /// held for reassembly, RFC 9260 §6.2); the peer retransmits them.
    pub data_dropped: u64,
    /// HEARTBEATs sent.
    pub heartbeats_sent: u64,
    /// HEARTBEAT ACKs received.
    pub heartbeat_acks_received: u64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets received and accepted (verification tag matched).
    pub packets_received: u64,
}

/// A snapshot of an association.
#[derive(Debug, Clone)]
pub struct AssocInfo {
    /// Current state.
    pub state: State,
    /// Peer transport address.
    pub remote: SocketAddr,
    /// Local SCTP port.
    pub local_port: u16,
    /// Peer SCTP port.
    pub remote_port: u16,
    /// Negotiated inbound streams (0 before ESTABLISHED).
    pub inbound_streams: u16,
    /// Negotiated outbound streams (0 before ESTABLISHED).
    pub outbound_streams: u16,
    /// Smoothed RTT, once measured.
    pub srtt: Option<Duration>,
    /// Current retransmission timeout.
    pub rto: Duration,
    /// Congestion window in bytes.
    pub cwnd: usize,
    /// Slow-start threshold in bytes.
    pub ssthresh: usize,
    /// Bytes of DATA in flight.
    pub flight_size: usize,
    /// Peer's receive window as last computed.
    pub peer_rwnd: u32,
    /// Bytes of user data queued or in flight.
    pub send_buffered: usize,
    /// Verification tag the peer puts in packets to us.
    pub local_vtag: u32,
    /// Verification tag we put in packets to the peer.
    pub peer_vtag: u32,
    /// TSN the next new DATA chunk will carry.
    pub next_tsn: u32,
    /// Highest in-sequence TSN received from the peer.
    pub peer_cum_tsn: u32,
    /// Association error counter.
    pub error_count: u32,
    /// False once the error counter exceeds Path.Max.Retrans (RFC 9260 §8.2); with a single
    /// path this is informational, only Association.Max.Retrans closes the association.
    pub path_active: bool,
    /// Counters.
    pub counters: AssocCounters,
}

/// Endpoint-wide counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Packets handed to `handle`.
    pub packets_received: u64,
    /// Packets returned by `poll_transmit`.
    pub packets_sent: u64,
    /// Packets dropped for a bad CRC32c.
    pub bad_checksum: u64,
    /// Packets dropped for a wrong verification tag (RFC 9260 §8.5).
    pub bad_vtag: u64,
    /// Packets or chunks dropped as malformed.
    pub malformed: u64,
    /// Out-of-the-blue packets (RFC 9260 §8.4).
    pub out_of_the_blue: u64,
    /// Packets for SCTP ports this endpoint does not own; never answered.
    pub foreign_port: u64,
    /// Chunks of unknown type.
    pub unknown_chunks: u64,
    /// COOKIE ECHOs with an expired cookie.
    pub stale_cookies: u64,
    /// COOKIE ECHOs whose cookie failed authentication.
    pub forged_cookies: u64,
    /// INITs or INIT ACKs with zero inbound or outbound streams.
    pub init_zero_streams: u64,
    /// DATA chunks for a stream beyond the negotiated inbound streams.
    pub invalid_stream_data: u64,
    /// DATA chunks retransmitted.
    pub retransmissions: u64,
    /// DATA chunks fast-retransmitted.
    pub fast_retransmits: u64,
    /// Associations that reached ESTABLISHED.
    pub associations_established: u64,
    /// Associations that closed.
    pub associations_closed: u64,
    /// ABORT chunks sent.
    pub aborts_sent: u64,
    /// ABORT chunks accepted.
    pub aborts_received: u64,
    /// HEARTBEATs sent.
    pub heartbeats_sent: u64,
    /// Duplicate TSNs received.
    pub duplicate_tsns: u64,
    /// DATA chunks dropped unacknowledged for want of room (receive window or fragments
    /// held for reassembly, RFC 9260 §6.2).
    pub data_dropped: u64,
    /// INITs (and COOKIE ECHOs) refused with ABORT "Out of Resource" (RFC 9260 §3.3.10.4)
    /// because `max_associations` were up.
    pub associations_refused: u64,
}

/// Largest user message `send` accepts: 256 KiB. Bigger messages could not be reassembled
/// within a default receive window alongside other traffic, and NGAP messages are far smaller.
pub const MAX_MESSAGE_SIZE: usize = 256 * 1024;

/// Why `send` refused a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SendError {
    /// No such association.
    #[error("unknown association")]
    UnknownAssociation,
    /// The association is not (or no longer) ESTABLISHED.
    #[error("association not established")]
    NotEstablished,
    /// The stream id is not below the negotiated number of outbound streams.
    #[error("invalid stream")]
    InvalidStream,
    /// The send buffer is full; retry after data is acknowledged.
    #[error("send buffer full")]
    Full,
    /// Zero-length user data is not allowed (RFC 9260 §6.1).
    #[error("empty message")]
    Empty,
    /// The message is larger than [`MAX_MESSAGE_SIZE`].
    #[error("message too large")]
    TooLarge,
}

/// Why `connect` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// Port 0 is not a valid SCTP port.
    #[error("invalid port")]
    InvalidPort,
    /// Only IPv4 peers are supported.
    #[error("unsupported address family")]
    UnsupportedAddress,
    /// An association with the same addresses and ports exists.
    #[error("association already exists")]
    AlreadyExists,
    /// `max_associations` reached.
    #[error("too many associations")]
    TooManyAssociations,
}

/// The association does not exist (any more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("association closed or unknown")]
pub struct ClosedError;
