//! Error causes carried in ABORT and ERROR chunks (RFC 9260 §3.3.10).

use std::fmt;

use super::chunk::tlv_at;
use super::param::emit_tlv;
use super::{be16, be32, WireError};

/// A typed error cause. Variable parts are owned so causes can travel in events.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCause {
    /// 1: DATA arrived for a stream that does not exist.
    InvalidStreamIdentifier {
        /// The offending stream identifier.
        stream: u16,
    },
    /// 2: mandatory parameters are missing.
    MissingMandatoryParameter {
        /// Types of the missing parameters.
        params: Vec<u16>,
    },
    /// 3: a COOKIE ECHO carried an expired cookie.
    StaleCookie {
        /// How long past its life-span the cookie was, in microseconds.
        staleness_us: u32,
    },
    /// 4: the sender is out of resources.
    OutOfResource,
    /// 5: an address could not be resolved; the parameter is kept raw.
    UnresolvableAddress(Vec<u8>),
    /// 6: the receiver did not understand a chunk; carries the chunk.
    UnrecognizedChunkType(Vec<u8>),
    /// 7: a mandatory parameter had an invalid value.
    InvalidMandatoryParameter,
    /// 8: unrecognized parameters (raw TLVs).
    UnrecognizedParameters(Vec<u8>),
    /// 9: a DATA chunk had no user data.
    NoUserData {
        /// TSN of that chunk.
        tsn: u32,
    },
    /// 10: a COOKIE ECHO arrived while shutting down.
    CookieReceivedWhileShuttingDown,
    /// 11: restart of an association with new addresses (raw address TLVs).
    RestartWithNewAddresses(Vec<u8>),
    /// 12: the upper layer aborted; opaque reason.
    UserInitiatedAbort(Vec<u8>),
    /// 13: protocol violation; opaque information.
    ProtocolViolation(Vec<u8>),
    /// Any other cause code.
    Other {
        /// Cause code.
        code: u16,
        /// Cause-specific information.
        info: Vec<u8>,
    },
}

impl ErrorCause {
    /// The cause code (RFC 9260 §3.3.10).
    pub fn code(&self) -> u16 {
        match self {
            ErrorCause::InvalidStreamIdentifier { .. } => 1,
            ErrorCause::MissingMandatoryParameter { .. } => 2,
            ErrorCause::StaleCookie { .. } => 3,
            ErrorCause::OutOfResource => 4,
            ErrorCause::UnresolvableAddress(_) => 5,
            ErrorCause::UnrecognizedChunkType(_) => 6,
            ErrorCause::InvalidMandatoryParameter => 7,
            ErrorCause::UnrecognizedParameters(_) => 8,
            ErrorCause::NoUserData { .. } => 9,
            ErrorCause::CookieReceivedWhileShuttingDown => 10,
            ErrorCause::RestartWithNewAddresses(_) => 11,
            ErrorCause::UserInitiatedAbort(_) => 12,
            ErrorCause::ProtocolViolation(_) => 13,
            ErrorCause::Other { code, .. } => *code,
        }
    }

    /// Decodes a cause from its code and value.
    pub fn parse(code: u16, v: &[u8]) -> Result<Self, WireError> {
        let t = WireError::Truncated;
        Ok(match code {
            1 => ErrorCause::InvalidStreamIdentifier {
                stream: be16(v, 0).ok_or(t)?,
            },
            2 => {
                let n = be32(v, 0).ok_or(t)? as usize;
                let list = v.get(4..).unwrap_or(&[]);
                if list.len() / 2 < n {
                    return Err(t);
                }
                ErrorCause::MissingMandatoryParameter {
                    params: list
                        .chunks_exact(2)
                        .take(n)
                        .map(|c| u16::from_be_bytes([c[0], c[1]]))
                        .collect(),
                }
            }
            3 => ErrorCause::StaleCookie {
                staleness_us: be32(v, 0).ok_or(t)?,
            },
            4 => ErrorCause::OutOfResource,
            5 => ErrorCause::UnresolvableAddress(v.to_vec()),
            6 => ErrorCause::UnrecognizedChunkType(v.to_vec()),
            7 => ErrorCause::InvalidMandatoryParameter,
            8 => ErrorCause::UnrecognizedParameters(v.to_vec()),
            9 => ErrorCause::NoUserData {
                tsn: be32(v, 0).ok_or(t)?,
            },
            10 => ErrorCause::CookieReceivedWhileShuttingDown,
            11 => ErrorCause::RestartWithNewAddresses(v.to_vec()),
            12 => ErrorCause::UserInitiatedAbort(v.to_vec()),
            13 => ErrorCause::ProtocolViolation(v.to_vec()),
            code => ErrorCause::Other {
                code,
                info: v.to_vec(),
            },
        })
    }

    /// Appends the encoded cause, padded to four bytes.
    pub fn emit(&self, buf: &mut Vec<u8>) {
        let code = self.code();
        match self {
            ErrorCause::InvalidStreamIdentifier { stream } => {
                // The stream id is followed by 16 reserved bits.
                let s = stream.to_be_bytes();
                emit_tlv(buf, code, &[s[0], s[1], 0, 0]);
            }
            ErrorCause::MissingMandatoryParameter { params } => {
                let mut v = Vec::with_capacity(4 + 2 * params.len());
                v.extend_from_slice(&(params.len() as u32).to_be_bytes());
                for p in params {
                    v.extend_from_slice(&p.to_be_bytes());
                }
                emit_tlv(buf, code, &v);
            }
            ErrorCause::StaleCookie { staleness_us } => {
                emit_tlv(buf, code, &staleness_us.to_be_bytes())
            }
            ErrorCause::NoUserData { tsn } => emit_tlv(buf, code, &tsn.to_be_bytes()),
            ErrorCause::OutOfResource
            | ErrorCause::InvalidMandatoryParameter
            | ErrorCause::CookieReceivedWhileShuttingDown => emit_tlv(buf, code, &[]),
            ErrorCause::UnresolvableAddress(v)
            | ErrorCause::UnrecognizedChunkType(v)
            | ErrorCause::UnrecognizedParameters(v)
            | ErrorCause::RestartWithNewAddresses(v)
            | ErrorCause::UserInitiatedAbort(v)
            | ErrorCause::ProtocolViolation(v)
            | ErrorCause::Other { info: v, .. } => emit_tlv(buf, code, v),
        }
    }

    /// Encodes a list of causes.
    pub fn emit_all(causes: &[ErrorCause]) -> Vec<u8> {
        let mut v = Vec::new();
        for c in causes {
            c.emit(&mut v);
        }
        v
    }
}

impl fmt::Display for ErrorCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorCause::InvalidStreamIdentifier { stream } => {
                write!(f, "invalid stream identifier {stream}")
            }
            ErrorCause::MissingMandatoryParameter { params } => {
                write!(f, "missing mandatory parameters {params:?}")
            }
            ErrorCause::StaleCookie { staleness_us } => {
                write!(f, "stale cookie ({staleness_us} us)")
            }
            ErrorCause::OutOfResource => f.write_str("out of resource"),
            ErrorCause::UnresolvableAddress(_) => f.write_str("unresolvable address"),
            ErrorCause::UnrecognizedChunkType(c) => {
                write!(f, "unrecognized chunk type {:?}", c.first())
            }
            ErrorCause::InvalidMandatoryParameter => f.write_str("invalid mandatory parameter"),
            ErrorCause::UnrecognizedParameters(_) => f.write_str("unrecognized parameters"),
            ErrorCause::NoUserData { tsn } => write!(f, "no user data (TSN {tsn})"),
            ErrorCause::CookieReceivedWhileShuttingDown => {
                f.write_str("cookie received while shutting down")
            }
            ErrorCause::RestartWithNewAddresses(_) => f.write_str("restart with new addresses"),
            ErrorCause::UserInitiatedAbort(_) => f.write_str("user-initiated abort"),
            ErrorCause::ProtocolViolation(_) => f.write_str("protocol violation"),
            ErrorCause::Other { code, .. } => write!(f, "cause {code}"),
        }
    }
}

/// Iterator over encoded causes; stops after the first error.
#[derive(Debug, Clone)]
pub struct CauseIter<'a> {
    data: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> CauseIter<'a> {
    /// Iterates over the causes encoded in `data`.
    pub fn new(data: &'a [u8]) -> Self {
        CauseIter {
            data,
            pos: 0,
            failed: false,
        }
    }
}

impl Iterator for CauseIter<'_> {
    type Item = Result<ErrorCause, WireError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let r = tlv_at(self.data, self.pos).and_then(|(start, len, next)| {
            self.pos = next;
            let b = self
                .data
                .get(start..start + len)
                .ok_or(WireError::Truncated)?;
            let code = be16(b, 0).ok_or(WireError::Truncated)?;
            ErrorCause::parse(code, b.get(4..).unwrap_or(&[]))
        });
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cause_bytes() {
        // RFC 9260 §3.3.10.1 Invalid Stream Identifier 7; §3.3.10.3 Stale Cookie 1500 us;
        // §3.3.10.2 Missing Mandatory Parameter {State Cookie}.
        let b = [
            0, 1, 0, 8, 0, 7, 0, 0, //
            0, 3, 0, 8, 0, 0, 0x05, 0xdc, //
            0, 2, 0, 10, 0, 0, 0, 1, 0, 7, 0, 0,
        ];
        let cs: Vec<_> = CauseIter::new(&b).map(|c| c.unwrap()).collect();
        assert_eq!(
            cs,
            vec![
                ErrorCause::InvalidStreamIdentifier { stream: 7 },
                ErrorCause::StaleCookie { staleness_us: 1500 },
                ErrorCause::MissingMandatoryParameter { params: vec![7] },
            ]
        );
        assert_eq!(ErrorCause::emit_all(&cs), b);
    }

    #[test]
    fn bad_causes() {
        // Missing Mandatory Parameter claiming 5 entries with none present.
        let b = [0, 2, 0, 8, 0, 0, 0, 5];
        assert!(CauseIter::new(&b).next().unwrap().is_err());
        // Huge count must not allocate or overflow.
        let b = [0, 2, 0, 8, 0xff, 0xff, 0xff, 0xff];
        assert!(CauseIter::new(&b).next().unwrap().is_err());
        let b = [0, 9, 0, 4];
        assert!(CauseIter::new(&b).next().unwrap().is_err());
        // Unknown codes survive.
        let b = [0x12, 0x34, 0, 5, 1, 0, 0, 0];
        assert_eq!(
            CauseIter::new(&b).next().unwrap().unwrap(),
            ErrorCause::Other {
                code: 0x1234,
                info: vec![1]
            }
        );
    }
}
