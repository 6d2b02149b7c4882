//! Variable-length parameters of INIT, INIT ACK and HEARTBEAT (RFC 9260 §3.2.1, §3.3.2.1).

use std::net::Ipv4Addr;

use super::chunk::{pad_vec, tlv_at};
use super::{be16, be32, WireError};

/// Parameter type codes.
pub mod param_type {
    /// Heartbeat Info (RFC 9260 §3.3.5).
    pub const HEARTBEAT_INFO: u16 = 1;
    /// IPv4 Address.
    pub const IPV4_ADDRESS: u16 = 5;
    /// IPv6 Address.
    pub const IPV6_ADDRESS: u16 = 6;
    /// State Cookie.
    pub const STATE_COOKIE: u16 = 7;
    /// Unrecognized Parameter.
    pub const UNRECOGNIZED_PARAMETER: u16 = 8;
    /// Cookie Preservative.
    pub const COOKIE_PRESERVATIVE: u16 = 9;
    /// Host Name Address (deprecated, RFC 9260 §3.3.2.1.3).
    pub const HOST_NAME_ADDRESS: u16 = 11;
    /// Supported Address Types.
    pub const SUPPORTED_ADDRESS_TYPES: u16 = 12;
}

/// A parameter as it sits in the chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawParam<'a> {
    /// Parameter type.
    pub ty: u16,
    /// Value after the 4-byte header, unpadded.
    pub value: &'a [u8],
    /// Whole parameter, header included, unpadded (echoed in "Unrecognized Parameter").
    pub bytes: &'a [u8],
}

impl RawParam<'_> {
    /// RFC 9260 §3.2.1: the two upper bits say what to do with an unknown parameter.
    /// Returns `(continue_processing, report)`.
    pub fn unknown_action(&self) -> (bool, bool) {
        match self.ty >> 14 {
            0b00 => (false, false),
            0b01 => (false, true),
            0b10 => (true, false),
            _ => (true, true),
        }
    }
}

/// Iterator over a parameter area; stops after the first error.
#[derive(Debug, Clone)]
pub struct ParamIter<'a> {
    data: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> ParamIter<'a> {
    /// Iterates over the encoded parameters in `data`.
    pub fn new(data: &'a [u8]) -> Self {
        ParamIter {
            data,
            pos: 0,
            failed: false,
        }
    }
}

impl<'a> Iterator for ParamIter<'a> {
    type Item = Result<RawParam<'a>, WireError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        match tlv_at(self.data, self.pos) {
            Ok((start, len, next)) => {
                self.pos = next;
                let bytes = self.data.get(start..start + len)?;
                Some(Ok(RawParam {
                    ty: be16(bytes, 0)?,
                    value: bytes.get(4..).unwrap_or(&[]),
                    bytes,
                }))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// A decoded parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param<'a> {
    /// Heartbeat Info: opaque sender-specific data.
    HeartbeatInfo(&'a [u8]),
    /// IPv4 Address.
    Ipv4Address(Ipv4Addr),
    /// IPv6 Address (16 bytes, kept raw: this stack is IPv4 only).
    Ipv6Address(&'a [u8]),
    /// State Cookie.
    StateCookie(&'a [u8]),
    /// Unrecognized Parameter: the offending parameter TLV.
    UnrecognizedParameter(&'a [u8]),
    /// Cookie Preservative: suggested cookie life-span increment in milliseconds.
    CookiePreservative(u32),
    /// Host Name Address (deprecated; RFC 9260 §3.3.2.1.3 says to abort).
    HostNameAddress(&'a [u8]),
    /// Supported Address Types: a list of u16 parameter types.
    SupportedAddressTypes(&'a [u8]),
    /// Any other parameter type.
    Unknown(RawParam<'a>),
}

impl<'a> Param<'a> {
    /// Decodes one raw parameter.
    pub fn parse(raw: RawParam<'a>) -> Result<Self, WireError> {
        use param_type::*;
        let v = raw.value;
        Ok(match raw.ty {
            HEARTBEAT_INFO => Param::HeartbeatInfo(v),
            IPV4_ADDRESS => {
                let a = be32(v, 0).ok_or(WireError::Truncated)?;
                Param::Ipv4Address(Ipv4Addr::from(a))
            }
            IPV6_ADDRESS => {
                if v.len() < 16 {
                    return Err(WireError::Truncated);
                }
                Param::Ipv6Address(v)
            }
            STATE_COOKIE => Param::StateCookie(v),
            UNRECOGNIZED_PARAMETER => Param::UnrecognizedParameter(v),
            COOKIE_PRESERVATIVE => {
                Param::CookiePreservative(be32(v, 0).ok_or(WireError::Truncated)?)
            }
            HOST_NAME_ADDRESS => Param::HostNameAddress(v),
            SUPPORTED_ADDRESS_TYPES => Param::SupportedAddressTypes(v),
            _ => Param::Unknown(raw),
        })
    }

    /// Appends the encoded parameter, padded to four bytes.
    pub fn emit(&self, buf: &mut Vec<u8>) {
        use param_type::*;
        let (ty, value): (u16, &[u8]) = match self {
            Param::HeartbeatInfo(v) => (HEARTBEAT_INFO, v),
            Param::Ipv4Address(a) => {
                emit_tlv(buf, IPV4_ADDRESS, &a.octets());
                return;
            }
            Param::Ipv6Address(v) => (IPV6_ADDRESS, v),
            Param::StateCookie(v) => (STATE_COOKIE, v),
            Param::UnrecognizedParameter(v) => (UNRECOGNIZED_PARAMETER, v),
            Param::CookiePreservative(ms) => {
                emit_tlv(buf, COOKIE_PRESERVATIVE, &ms.to_be_bytes());
                return;
            }
            Param::HostNameAddress(v) => (HOST_NAME_ADDRESS, v),
            Param::SupportedAddressTypes(v) => (SUPPORTED_ADDRESS_TYPES, v),
            Param::Unknown(r) => (r.ty, r.value),
        };
        emit_tlv(buf, ty, value);
    }
}

/// Appends a type-length-value with a 16-bit type, padded.
pub(crate) fn emit_tlv(buf: &mut Vec<u8>, ty: u16, value: &[u8]) {
    buf.extend_from_slice(&ty.to_be_bytes());
    buf.extend_from_slice(&((4 + value.len()) as u16).to_be_bytes());
    buf.extend_from_slice(value);
    pad_vec(buf);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn init_params_bytes() {
        // IPv4 10.0.0.1, Cookie Preservative 1000 ms, Supported Address Types {IPv4},
        // then an unknown 0x8001 parameter with 2 bytes of value and 2 of padding.
        let b = [
            0, 5, 0, 8, 10, 0, 0, 1, //
            0, 9, 0, 8, 0, 0, 3, 0xe8, //
            0, 12, 0, 6, 0, 5, 0, 0, //
            0x80, 1, 0, 6, 9, 9, 0, 0,
        ];
        let ps: Vec<_> = ParamIter::new(&b)
            .map(|r| Param::parse(r.unwrap()).unwrap())
            .collect();
        assert_eq!(ps[0], Param::Ipv4Address(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(ps[1], Param::CookiePreservative(1000));
        assert_eq!(ps[2], Param::SupportedAddressTypes(&[0, 5]));
        let Param::Unknown(u) = ps[3] else { panic!() };
        assert_eq!(u.ty, 0x8001);
        assert_eq!(u.unknown_action(), (true, false));
        assert_eq!(u.bytes, &[0x80, 1, 0, 6, 9, 9]);
        let mut out = Vec::new();
        for p in &ps {
            p.emit(&mut out);
        }
        assert_eq!(out, b);
    }

    #[test]
    fn unknown_param_actions() {
        let mk = |ty: u16| RawParam {
            ty,
            value: &[],
            bytes: &[],
        };
        assert_eq!(mk(0x0100).unknown_action(), (false, false));
        assert_eq!(mk(0x4100).unknown_action(), (false, true));
        assert_eq!(mk(0x8100).unknown_action(), (true, false));
        assert_eq!(mk(0xc100).unknown_action(), (true, true));
    }

    #[test]
    fn bad_params() {
        let b = [0, 5, 0, 6, 10, 0];
        let r = ParamIter::new(&b).next().unwrap().unwrap();
        assert_eq!(Param::parse(r), Err(WireError::Truncated));
        assert_eq!(
            ParamIter::new(&[0, 7, 0, 9, 1]).next(),
            Some(Err(WireError::LengthOverrun(9)))
        );
    }
}
