//! SCTP wire format (RFC 9260 §3): the common header, chunks, parameters and error causes.
//!
//! Codecs follow the smoltcp shape: [`Packet`] is a checked view over a byte buffer, and the
//! chunk, parameter and cause types are plain representations with `parse` and `emit`.
//! Every decoder is total: malformed input yields a [`WireError`], never a panic.

mod cause;
mod chunk;
mod param;

pub use cause::{CauseIter, ErrorCause};
pub use chunk::{
    chunk_type, data_flags, Chunk, ChunkIter, DataChunk, GapBlockIter, InitChunk, RawChunk,
    SackChunk, TsnIter, DATA_HEADER_LEN, T_BIT,
};
pub(crate) use chunk::{emit_data, emit_sack};
pub(crate) use param::emit_tlv;
pub use param::{param_type, Param, ParamIter, RawParam};

use thiserror::Error;

/// Length of the SCTP common header (RFC 9260 §3.1).
pub const COMMON_HEADER_LEN: usize = 12;

mod field {
    pub(super) const SRC_PORT: core::ops::Range<usize> = 0..2;
    pub(super) const DST_PORT: core::ops::Range<usize> = 2..4;
    pub(super) const VTAG: core::ops::Range<usize> = 4..8;
    pub(super) const CHECKSUM: core::ops::Range<usize> = 8..12;
}

/// Decoding errors. Each names the first rule the input broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WireError {
    /// The buffer is shorter than the fixed part of the structure being decoded.
    #[error("truncated input")]
    Truncated,
    /// A chunk, parameter or cause length field is below its header size.
    #[error("length field {0} below minimum")]
    LengthTooSmall(u16),
    /// A length field points past the end of the enclosing buffer.
    #[error("length field {0} exceeds the remaining input")]
    LengthOverrun(u16),
    /// Padding is missing between two chunks or parameters.
    #[error("bad padding")]
    BadPadding,
    /// A chunk's fixed fields are inconsistent with its type (e.g. DATA without user data).
    #[error("malformed chunk of type {0}")]
    BadChunk(u8),
    /// The CRC32c in the common header does not match the packet contents.
    #[error("checksum mismatch")]
    BadChecksum,
}

/// Rounds a length up to the next multiple of four (RFC 9260 §3.2 padding).
#[inline]
pub fn pad4(len: usize) -> usize {
    (len + 3) & !3
}

/// Reads a big-endian u16 at `at`, or `None` past the end.
#[inline]
pub(crate) fn be16(buf: &[u8], at: usize) -> Option<u16> {
    let b = buf.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// Reads a big-endian u32 at `at`, or `None` past the end.
#[inline]
pub(crate) fn be32(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// A read-only or read-write view of an SCTP packet (common header onward).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; header fields of a buffer shorter than the
    /// common header read as zero. Use [`Packet::new_checked`] on untrusted input.
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer after checking that it holds at least the common header.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < COMMON_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Packet { buffer })
    }

    /// Unwraps the view.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn header(&self) -> [u8; COMMON_HEADER_LEN] {
        // `new_checked` guarantees the length; a short buffer behind `new_unchecked` reads as
        // zeros rather than panicking.
        let b = self.buffer.as_ref();
        b.get(..COMMON_HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .unwrap_or([0; COMMON_HEADER_LEN])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        let h = self.header();
        u16::from_be_bytes([h[field::SRC_PORT.start], h[field::SRC_PORT.start + 1]])
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        let h = self.header();
        u16::from_be_bytes([h[field::DST_PORT.start], h[field::DST_PORT.start + 1]])
    }

    /// Verification tag.
    pub fn verification_tag(&self) -> u32 {
        let h = self.header();
        let v = &h[field::VTAG];
        u32::from_be_bytes([v[0], v[1], v[2], v[3]])
    }

    /// The checksum field as it appears on the wire, interpreted as the CRC32c value.
    pub fn checksum(&self) -> u32 {
        let h = self.header();
        let v = &h[field::CHECKSUM];
        // RFC 9260 Appendix A: the CRC is stored least significant byte first.
        u32::from_le_bytes([v[0], v[1], v[2], v[3]])
    }

    /// Verifies the CRC32c over the packet (RFC 9260 §6.8).
    pub fn verify_checksum(&self) -> bool {
        compute_checksum(self.buffer.as_ref()) == self.checksum()
    }

    /// The chunk area after the common header.
    pub fn chunk_bytes(&self) -> &[u8] {
        self.buffer.as_ref().get(COMMON_HEADER_LEN..).unwrap_or(&[])
    }

    /// Iterates over the raw chunks in the packet.
    pub fn chunks(&self) -> ChunkIter<'_> {
        ChunkIter::new(self.chunk_bytes())
    }

    /// Decodes the common header and all chunks; any malformed chunk fails the whole packet.
    /// This is the entry point used by fuzzers.
    pub fn parse(&self) -> Result<(CommonHeader, Vec<Chunk<'_>>), WireError> {
        let header = CommonHeader::parse(self);
        let mut out = Vec::new();
        for raw in self.chunks() {
            out.push(Chunk::parse(raw?)?);
        }
        Ok((header, out))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Computes the CRC32c and writes it into the checksum field.
    pub fn fill_checksum(&mut self) {
        let crc = compute_checksum(self.buffer.as_ref());
        if let Some(f) = self.buffer.as_mut().get_mut(field::CHECKSUM) {
            f.copy_from_slice(&crc.to_le_bytes());
        }
    }
}

/// CRC32c of an SCTP packet computed with the checksum field taken as zero (RFC 9260 §6.8).
/// Returns 0 for buffers shorter than the common header.
pub fn compute_checksum(packet: &[u8]) -> u32 {
    let (Some(head), Some(rest)) = (packet.get(..8), packet.get(COMMON_HEADER_LEN..)) else {
        return 0;
    };
    let crc = crc32c::crc32c(head);
    let crc = crc32c::crc32c_append(crc, &[0u8; 4]);
    crc32c::crc32c_append(crc, rest)
}

/// The SCTP common header (RFC 9260 §3.1) as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommonHeader {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Verification tag.
    pub verification_tag: u32,
}

impl CommonHeader {
    /// Reads the header from a checked packet view.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Self {
        CommonHeader {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            verification_tag: packet.verification_tag(),
        }
    }

    /// Appends the header with a zero checksum; call [`finish_packet`] once chunks are added.
    pub fn emit(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.src_port.to_be_bytes());
        buf.extend_from_slice(&self.dst_port.to_be_bytes());
        buf.extend_from_slice(&self.verification_tag.to_be_bytes());
        buf.extend_from_slice(&[0; 4]);
    }
}

/// Fills in the CRC32c of a packet built in `buf` (common header first).
pub fn finish_packet(buf: &mut [u8]) {
    Packet::new_unchecked(buf).fill_checksum_if_long();
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn fill_checksum_if_long(&mut self) {
        if self.buffer.as_ref().len() >= COMMON_HEADER_LEN {
            self.fill_checksum();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    // RFC 3720 Appendix B.4 CRC32c examples (iSCSI uses the same polynomial and bit order).
    #[test]
    fn crc32c_rfc3720_vectors() {
        assert_eq!(crc32c::crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c::crc32c(&[0xffu8; 32]), 0x62a8_ab43);
        let inc: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c::crc32c(&inc), 0x46dd_794e);
        let dec: Vec<u8> = (0u8..32).rev().collect();
        assert_eq!(crc32c::crc32c(&dec), 0x113f_db5c);
        // The "check" value of CRC-32C.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn checksum_is_little_endian_and_round_trips() {
        // An INIT, hand-built from RFC 9260 §3.1 and §3.3.2: ports 38412 -> 38412, vtag 0,
        // Initiate Tag 0x11223344, a_rwnd 65536, OS 2, MIS 2, initial TSN 1.
        let mut p = vec![
            0x96, 0x0c, 0x96, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, // common header
            1, 0, 0, 20, // INIT, flags 0, length 20
            0x11, 0x22, 0x33, 0x44, 0, 1, 0, 0, 0, 2, 0, 2, 0, 0, 0, 1,
        ];
        let expect = compute_checksum(&p);
        finish_packet(&mut p);
        assert_eq!(&p[8..12], &expect.to_le_bytes());
        let pk = Packet::new_checked(&p[..]).unwrap();
        assert!(pk.verify_checksum());
        assert_eq!(pk.src_port(), 38412);
        assert_eq!(pk.verification_tag(), 0);
        let (_, chunks) = pk.parse().unwrap();
        match &chunks[0] {
            Chunk::Init(i) => {
                assert_eq!(i.initiate_tag, 0x1122_3344);
                assert_eq!(i.a_rwnd, 65536);
                assert_eq!(i.outbound_streams, 2);
                assert_eq!(i.inbound_streams, 2);
                assert_eq!(i.initial_tsn, 1);
            }
            other => panic!("unexpected {other:?}"),
        }
        p[20] ^= 1;
        assert!(!Packet::new_checked(&p[..]).unwrap().verify_checksum());
    }

    #[test]
    fn short_packets_rejected() {
        assert_eq!(
            Packet::new_checked(&[0u8; 11][..]).err(),
            Some(WireError::Truncated)
        );
        assert_eq!(compute_checksum(&[1, 2, 3]), 0);
        let mut short = [0u8; 3];
        finish_packet(&mut short);
    }
}
