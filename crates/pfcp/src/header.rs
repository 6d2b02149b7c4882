//! The PFCP message header (TS 29.244 §7.2.2).
//!
//! ```text
//!  octet 1   : Version(3) | Spare(2) | FO | MP | S
//!  octet 2   : Message Type
//!  octets 3-4: Message Length (octets after the first 4)
//!  S=1: octets 5-12 SEID, 13-15 Sequence Number, 16 Message Priority(4) | Spare(4)
//!  S=0: octets 5-7 Sequence Number, 8 Spare
//! ```

use crate::error::DecodeError;

/// Octet offsets and bits of the header.
mod field {
    pub(crate) const FLAGS: usize = 0;
    pub(crate) const MSG_TYPE: usize = 1;
    pub(crate) const LENGTH: usize = 2;
    pub(crate) const SEID: usize = 4;
    pub(crate) const FLAG_S: u8 = 0x01;
    pub(crate) const FLAG_MP: u8 = 0x02;
    pub(crate) const FLAG_FO: u8 = 0x04;
}

/// Header length without SEID.
pub const HEADER_LEN_NODE: usize = 8;
/// Header length with SEID.
pub const HEADER_LEN_SESSION: usize = 16;
/// The only PFCP version (TS 29.244 §7.2.2.1).
pub const VERSION: u8 = 1;

/// A borrowed view of a PFCP message: header fields plus the IE area.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checks; accessors may then panic. Prefer [`Packet::new_checked`].
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer after checking the version, that the header fits, and that the length
    /// field stays inside the buffer. Bytes after the message (another message with FO=1)
    /// are allowed; [`Packet::total_len`] says where this one ends.
    pub fn new_checked(buffer: T) -> Result<Self, DecodeError> {
        let b = buffer.as_ref();
        let Some(&flags) = b.first() else {
            return Err(DecodeError::Truncated);
        };
        let version = flags >> 5;
        if version != VERSION {
            return Err(DecodeError::UnsupportedVersion(version));
        }
        let hlen = if flags & field::FLAG_S != 0 {
            HEADER_LEN_SESSION
        } else {
            HEADER_LEN_NODE
        };
        if b.len() < hlen {
            return Err(DecodeError::Truncated);
        }
        let p = Packet { buffer };
        let total = p.total_len();
        if total < hlen || total > p.buffer.as_ref().len() {
            return Err(DecodeError::Truncated);
        }
        Ok(p)
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Version (3 bits).
    pub fn version(&self) -> u8 {
        self.b()[field::FLAGS] >> 5
    }
    /// S flag: a SEID is present.
    pub fn has_seid(&self) -> bool {
        self.b()[field::FLAGS] & field::FLAG_S != 0
    }
    /// MP flag: a message priority is present.
    pub fn has_priority(&self) -> bool {
        self.b()[field::FLAGS] & field::FLAG_MP != 0
    }
    /// FO flag: another message follows in the same datagram.
    pub fn follow_on(&self) -> bool {
        self.b()[field::FLAGS] & field::FLAG_FO != 0
    }
    /// Message type.
    pub fn msg_type(&self) -> u8 {
        self.b()[field::MSG_TYPE]
    }
    /// Message Length field: octets after the first 4.
    pub fn length(&self) -> u16 {
        u16::from_be_bytes([self.b()[field::LENGTH], self.b()[field::LENGTH + 1]])
    }
    /// Length of this message: the 4 first octets plus the length field.
    pub fn total_len(&self) -> usize {
        usize::from(self.length()) + 4
    }
    /// Header length (8 or 16).
    pub fn header_len(&self) -> usize {
        if self.has_seid() {
            HEADER_LEN_SESSION
        } else {
            HEADER_LEN_NODE
        }
    }
    /// SEID, if S=1.
    pub fn seid(&self) -> Option<u64> {
        let s = self.b().get(field::SEID..field::SEID + 8)?;
        self.has_seid()
            .then(|| u64::from_be_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
    }
    /// Sequence number (24 bits).
    pub fn sequence(&self) -> u32 {
        let o = self.header_len() - 4;
        let b = self.b();
        u32::from_be_bytes([0, b[o], b[o + 1], b[o + 2]])
    }
    /// Message priority (4 bits), if MP=1. TS 29.244 §7.2.2.1: only in session messages.
    pub fn priority(&self) -> Option<u8> {
        (self.has_seid() && self.has_priority()).then(|| self.b()[HEADER_LEN_SESSION - 1] >> 4)
    }
    /// The IEs of this message.
    pub fn payload(&self) -> &[u8] {
        let b = self.b();
        b.get(self.header_len()..self.total_len()).unwrap_or(&[])
    }
}

/// The header as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderRepr {
    /// Message type.
    pub msg_type: u8,
    /// SEID: `Some` for session messages (S=1), `None` for node messages.
    pub seid: Option<u64>,
    /// Sequence number; only the low 24 bits go on the wire.
    pub sequence: u32,
    /// Message priority (0..=15), session messages only.
    pub priority: Option<u8>,
    /// FO flag.
    pub follow_on: bool,
}

impl HeaderRepr {
    /// Reads a checked packet's header.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> HeaderRepr {
        HeaderRepr {
            msg_type: p.msg_type(),
            seid: p.seid(),
            sequence: p.sequence(),
            priority: p.priority(),
            follow_on: p.follow_on(),
        }
    }

    /// Header length on the wire.
    pub fn header_len(&self) -> usize {
        if self.seid.is_some() {
            HEADER_LEN_SESSION
        } else {
            HEADER_LEN_NODE
        }
    }

    /// Appends the header for a message whose IEs take `payload_len` octets. The length field
    /// saturates at 65535; callers keep messages below that (a UDP datagram bound anyway).
    pub fn emit(&self, out: &mut Vec<u8>, payload_len: usize) {
        let mut flags = VERSION << 5;
        if self.seid.is_some() {
            flags |= field::FLAG_S;
            if self.priority.is_some() {
                flags |= field::FLAG_MP;
            }
        }
        if self.follow_on {
            flags |= field::FLAG_FO;
        }
        let len = payload_len.saturating_add(self.header_len() - 4);
        out.push(flags);
        out.push(self.msg_type);
        out.extend_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes());
        if let Some(seid) = self.seid {
            out.extend_from_slice(&seid.to_be_bytes());
        }
        out.extend_from_slice(&self.sequence.to_be_bytes()[1..]);
        let last = match (self.seid, self.priority) {
            (Some(_), Some(p)) => (p & 0x0f) << 4,
            _ => 0,
        };
        out.push(last);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    // TS 29.244 §7.2.2: Heartbeat Request, S=0: 0x20, type 1, length 12 (4 seq/spare + 8 IE),
    // seq 0x000102, spare; Recovery Time Stamp IE (96, len 4).
    const HB: [u8; 16] = [
        0x20, 0x01, 0x00, 0x0c, 0x00, 0x01, 0x02, 0x00, 0x00, 0x60, 0x00, 0x04, 0xe8, 0x00, 0x00,
        0x01,
    ];

    #[test]
    fn node_header() {
        let p = Packet::new_checked(&HB[..]).unwrap();
        let h = HeaderRepr::parse(&p);
        assert_eq!(h.msg_type, 1);
        assert_eq!(h.sequence, 0x102);
        assert_eq!(h.seid, None);
        assert_eq!(p.payload().len(), 8);
        let mut out = Vec::new();
        h.emit(&mut out, 8);
        assert_eq!(out, HB[..8]);
    }

    #[test]
    fn session_header_with_priority() {
        let h = HeaderRepr {
            msg_type: 52,
            seid: Some(0x0102030405060708),
            sequence: 0xabcdef,
            priority: Some(5),
            follow_on: false,
        };
        let mut out = Vec::new();
        h.emit(&mut out, 0);
        assert_eq!(
            out,
            [0x23, 52, 0, 12, 1, 2, 3, 4, 5, 6, 7, 8, 0xab, 0xcd, 0xef, 0x50]
        );
        let p = Packet::new_checked(&out[..]).unwrap();
        assert_eq!(HeaderRepr::parse(&p), h);
    }

    #[test]
    fn bad_headers() {
        assert_eq!(
            Packet::new_checked(&[][..]).err(),
            Some(DecodeError::Truncated)
        );
        assert_eq!(
            Packet::new_checked(&[0x40, 1, 0, 4, 0, 0, 0, 0][..]).err(),
            Some(DecodeError::UnsupportedVersion(2))
        );
        assert_eq!(
            Packet::new_checked(&HB[..15]).err(),
            Some(DecodeError::Truncated)
        );
        // Length field smaller than the header itself.
        assert_eq!(
            Packet::new_checked(&[0x21, 50, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..]).err(),
            Some(DecodeError::Truncated)
        );
    }
}
