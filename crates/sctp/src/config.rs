//! Configuration of associations and endpoints, with RFC 9260 §16 defaults.

use std::time::Duration;

/// Per-association parameters (RFC 9260 §16 protocol parameters plus local limits).
#[derive(Debug, Clone)]
pub struct AssociationConfig {
    /// Number of outbound streams requested (OS in INIT); default 16.
    pub outbound_streams: u16,
    /// Maximum number of inbound streams accepted (MIS in INIT); default 16.
    pub max_inbound_streams: u16,
    /// RTO.Initial, default 1 s.
    pub rto_initial: Duration,
    /// RTO.Min, default 1 s.
    pub rto_min: Duration,
    /// RTO.Max, default 60 s.
    pub rto_max: Duration,
    /// Max.Init.Retransmits, default 8.
    pub max_init_retransmits: u32,
    /// Association.Max.Retrans, default 10.
    pub association_max_retrans: u32,
    /// Path.Max.Retrans, default 5. With a single path, exceeding it only marks the path
    /// inactive in `AssocInfo::path_active`; `association_max_retrans` decides when the
    /// association is lost.
    pub path_max_retrans: u32,
    /// HB.interval, default 30 s; `Duration::ZERO` disables heartbeats.
    pub heartbeat_interval: Duration,
    /// Delayed SACK timeout, default 200 ms (RFC 9260 §6.2 requires at most 500 ms).
    pub sack_delay: Duration,
    /// Max.Burst, default 4: new DATA packets sent per transmission opportunity.
    pub max_burst: usize,
    /// SCTP packet size limit, common header included; default 1200.
    pub pmtu: usize,
    /// Advertised receiver window, default 1 MiB.
    pub a_rwnd: u32,
    /// Bytes of user data queued before `send` returns `SendError::Full`; default 4 MiB.
    pub max_send_buffer: usize,
    /// DATA fragments held for reassembly; default 4096. A fragment beyond it (other than
    /// the next TSN in sequence, which always lets the window move) is dropped without
    /// acknowledgement and counted, and the peer retransmits it (RFC 9260 §6.2): a peer
    /// scattering small fragments cannot make the receiver hold more.
    pub max_reassembly_fragments: usize,
}

impl Default for AssociationConfig {
    fn default() -> Self {
        AssociationConfig {
            outbound_streams: 16,
            max_inbound_streams: 16,
            rto_initial: Duration::from_secs(1),
            rto_min: Duration::from_secs(1),
            rto_max: Duration::from_secs(60),
            max_init_retransmits: 8,
            association_max_retrans: 10,
            path_max_retrans: 5,
            heartbeat_interval: Duration::from_secs(30),
            sack_delay: Duration::from_millis(200),
            max_burst: 4,
            pmtu: 1200,
            a_rwnd: 1 << 20,
            max_send_buffer: 4 << 20,
            max_reassembly_fragments: 4096,
        }
    }
}

impl AssociationConfig {
    /// The packet size actually used: at least enough for a DATA chunk with some payload.
    pub(crate) fn effective_pmtu(&self) -> usize {
        self.pmtu.clamp(256, 65_535)
    }
}

/// Endpoint-wide parameters.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Accept INITs on this SCTP port (server); `None` = client only.
    pub listen_port: Option<u16>,
    /// Parameters for every association of this endpoint.
    pub association: AssociationConfig,
    /// HMAC-SHA256 key for state cookies.
    pub cookie_key: [u8; 32],
    /// Valid.Cookie.Life, default 60 s.
    pub cookie_lifetime: Duration,
    /// INITs beyond this many live associations get ABORT "Out of Resource".
    pub max_associations: usize,
    /// Seed of the endpoint's RNG (verification tags, initial TSNs, jitter).
    pub rng_seed: u64,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            listen_port: None,
            association: AssociationConfig::default(),
            cookie_key: [0x5c; 32],
            cookie_lifetime: Duration::from_secs(60),
            max_associations: 4096,
            rng_seed: 0,
        }
    }
}
