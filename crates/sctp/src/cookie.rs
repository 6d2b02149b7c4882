//! The state cookie (RFC 9260 §5.1.3): everything the server needs to create the association
//! when the COOKIE ECHO arrives, so it keeps no state after answering an INIT.
//!
//! Layout (big-endian): version, creation time in µs since the endpoint's epoch, life-span in
//! ms, both tags, both initial TSNs, the peer's a_rwnd, negotiated stream counts, ports, the
//! peer's IPv4 address and UDP port, the tie-tags (§5.2.2), then an HMAC-SHA256 over all that.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::wire::{be16, be32};

const VERSION: u8 = 1;
const BODY_LEN: usize = 1 + 8 + 4 + 4 * 5 + 2 * 4 + 6 + 4 * 2;
const MAC_LEN: usize = 32;
/// Encoded cookie length.
pub(crate) const COOKIE_LEN: usize = BODY_LEN + MAC_LEN;

/// What the cookie carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CookieData {
    pub(crate) timestamp_us: u64,
    pub(crate) lifetime_ms: u32,
    /// Our verification tag (the Initiate Tag of our INIT ACK).
    pub(crate) local_tag: u32,
    /// The peer's verification tag (its INIT's Initiate Tag).
    pub(crate) peer_tag: u32,
    pub(crate) local_tsn: u32,
    pub(crate) peer_tsn: u32,
    pub(crate) peer_rwnd: u32,
    pub(crate) outbound_streams: u16,
    pub(crate) inbound_streams: u16,
    pub(crate) local_port: u16,
    pub(crate) remote_port: u16,
    pub(crate) remote: SocketAddrV4,
    pub(crate) local_tie_tag: u32,
    pub(crate) peer_tie_tag: u32,
}

/// Why a cookie was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CookieError {
    /// Wrong length or version.
    Malformed,
    /// The MAC does not verify (RFC 9260 §5.1.5 step 2).
    BadMac,
}

fn mac(key: &[u8; 32]) -> Hmac<Sha256> {
    // HMAC accepts keys of any length, so this cannot fail; fall back to a fixed key anyway
    // rather than panic.
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => <Hmac<Sha256> as Mac>::new(&Default::default()),
    }
}

impl CookieData {
    pub(crate) fn encode(&self, key: &[u8; 32]) -> Vec<u8> {
        let mut b = Vec::with_capacity(COOKIE_LEN);
        b.push(VERSION);
        b.extend_from_slice(&self.timestamp_us.to_be_bytes());
        b.extend_from_slice(&self.lifetime_ms.to_be_bytes());
        for v in [
            self.local_tag,
            self.peer_tag,
            self.local_tsn,
            self.peer_tsn,
            self.peer_rwnd,
        ] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        for v in [
            self.outbound_streams,
            self.inbound_streams,
            self.local_port,
            self.remote_port,
        ] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(&self.remote.ip().octets());
        b.extend_from_slice(&self.remote.port().to_be_bytes());
        b.extend_from_slice(&self.local_tie_tag.to_be_bytes());
        b.extend_from_slice(&self.peer_tie_tag.to_be_bytes());
        let mut m = mac(key);
        m.update(&b);
        b.extend_from_slice(&m.finalize().into_bytes());
        b
    }

    pub(crate) fn decode(bytes: &[u8], key: &[u8; 32]) -> Result<Self, CookieError> {
        if bytes.len() != COOKIE_LEN {
            return Err(CookieError::Malformed);
        }
        let (body, tag) = bytes.split_at(BODY_LEN);
        let mut m = mac(key);
        m.update(body);
        // Constant-time comparison: a forger learns nothing from timing.
        m.verify_slice(tag).map_err(|_| CookieError::BadMac)?;
        if body.first() != Some(&VERSION) {
            return Err(CookieError::Malformed);
        }
        let r32 = |at| be32(body, at).ok_or(CookieError::Malformed);
        let r16 = |at| be16(body, at).ok_or(CookieError::Malformed);
        let ts = body
            .get(1..9)
            .and_then(|s| <[u8; 8]>::try_from(s).ok())
            .ok_or(CookieError::Malformed)?;
        let ip = r32(41)?;
        Ok(CookieData {
            timestamp_us: u64::from_be_bytes(ts),
            lifetime_ms: r32(9)?,
            local_tag: r32(13)?,
            peer_tag: r32(17)?,
            local_tsn: r32(21)?,
            peer_tsn: r32(25)?,
            peer_rwnd: r32(29)?,
            outbound_streams: r16(33)?,
            inbound_streams: r16(35)?,
            local_port: r16(37)?,
            remote_port: r16(39)?,
            remote: SocketAddrV4::new(Ipv4Addr::from(ip), r16(45)?),
            local_tie_tag: r32(47)?,
            peer_tie_tag: r32(51)?,
        })
    }

    pub(crate) fn remote_addr(&self) -> SocketAddr {
        SocketAddr::V4(self.remote)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample() -> CookieData {
        CookieData {
            timestamp_us: 123_456_789,
            lifetime_ms: 60_000,
            local_tag: 1,
            peer_tag: 2,
            local_tsn: 3,
            peer_tsn: 4,
            peer_rwnd: 5,
            outbound_streams: 6,
            inbound_streams: 7,
            local_port: 38412,
            remote_port: 9,
            remote: SocketAddrV4::new(Ipv4Addr::new(10, 1, 2, 3), 9899),
            local_tie_tag: 10,
            peer_tie_tag: 11,
        }
    }

    #[test]
    fn round_trip() {
        let k = [7u8; 32];
        let c = sample().encode(&k);
        assert_eq!(c.len(), COOKIE_LEN);
        assert_eq!(CookieData::decode(&c, &k).unwrap(), sample());
    }

    #[test]
    fn tamper_and_wrong_key_rejected() {
        let k = [7u8; 32];
        let mut c = sample().encode(&k);
        assert_eq!(CookieData::decode(&c, &[8u8; 32]), Err(CookieError::BadMac));
        c[20] ^= 0x40;
        assert_eq!(CookieData::decode(&c, &k), Err(CookieError::BadMac));
        assert_eq!(
            CookieData::decode(&c[..10], &k),
            Err(CookieError::Malformed)
        );
    }
}
