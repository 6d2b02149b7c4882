//! Chunks (RFC 9260 §3.2, §3.3): a raw TLV iterator and a typed representation.

use super::{be16, be32, pad4, CauseIter, ParamIter, WireError};

/// Chunk type codes (RFC 9260 §3.2).
pub mod chunk_type {
    /// Payload Data.
    pub const DATA: u8 = 0;
    /// Initiation.
    pub const INIT: u8 = 1;
    /// Initiation Acknowledgement.
    pub const INIT_ACK: u8 = 2;
    /// Selective Acknowledgement.
    pub const SACK: u8 = 3;
    /// Heartbeat Request.
    pub const HEARTBEAT: u8 = 4;
    /// Heartbeat Acknowledgement.
    pub const HEARTBEAT_ACK: u8 = 5;
    /// Abort.
    pub const ABORT: u8 = 6;
    /// Shutdown.
    pub const SHUTDOWN: u8 = 7;
    /// Shutdown Acknowledgement.
    pub const SHUTDOWN_ACK: u8 = 8;
    /// Operation Error.
    pub const ERROR: u8 = 9;
    /// State Cookie.
    pub const COOKIE_ECHO: u8 = 10;
    /// Cookie Acknowledgement.
    pub const COOKIE_ACK: u8 = 11;
    /// Shutdown Complete.
    pub const SHUTDOWN_COMPLETE: u8 = 14;
}

/// Length of the DATA chunk header including the chunk header (RFC 9260 §3.3.1).
pub const DATA_HEADER_LEN: usize = 16;
const INIT_FIXED_LEN: usize = 16;
const SACK_FIXED_LEN: usize = 12;

/// One chunk as it sits in the packet: type, flags and value, unpadded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawChunk<'a> {
    /// Chunk type.
    pub ty: u8,
    /// Chunk flags.
    pub flags: u8,
    /// The chunk value (after the 4-byte chunk header, before padding).
    pub value: &'a [u8],
    /// The whole chunk, header included, padding excluded (for "Unrecognized Chunk Type").
    pub bytes: &'a [u8],
}

/// Iterator over the chunks of a packet. It stops after the first error.
#[derive(Debug, Clone)]
pub struct ChunkIter<'a> {
    data: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> ChunkIter<'a> {
    /// Iterates over `data`, a sequence of padded chunks.
    pub fn new(data: &'a [u8]) -> Self {
        ChunkIter {
            data,
            pos: 0,
            failed: false,
        }
    }
}

impl<'a> Iterator for ChunkIter<'a> {
    type Item = Result<RawChunk<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let res = tlv_at(self.data, self.pos);
        match res {
            Ok((start, len, next)) => {
                self.pos = next;
                let bytes = self.data.get(start..start + len)?;
                Some(Ok(RawChunk {
                    ty: bytes[0],
                    flags: bytes[1],
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

/// Locates the TLV (chunk, parameter or cause: all share the 2+2 byte header with a length
/// at offset 2) starting at `pos`. Returns `(start, unpadded length, next position)`.
pub(crate) fn tlv_at(data: &[u8], pos: usize) -> Result<(usize, usize, usize), WireError> {
    let remaining = data.len().saturating_sub(pos);
    if remaining < 4 {
        return Err(WireError::Truncated);
    }
    let len16 = be16(data, pos + 2).ok_or(WireError::Truncated)?;
    let len = usize::from(len16);
    if len < 4 {
        return Err(WireError::LengthTooSmall(len16));
    }
    if len > remaining {
        return Err(WireError::LengthOverrun(len16));
    }
    let padded = pad4(len);
    let next = if padded <= remaining {
        pos + padded
    } else if len == remaining {
        // RFC 9260 §3.2: the receiver ignores padding; a last TLV without it is tolerated.
        data.len()
    } else {
        return Err(WireError::BadPadding);
    };
    Ok((pos, len, next))
}

/// Flag bits of a DATA chunk (RFC 9260 §3.3.1).
pub mod data_flags {
    /// Ending fragment.
    pub const E: u8 = 0x01;
    /// Beginning fragment.
    pub const B: u8 = 0x02;
    /// Unordered.
    pub const U: u8 = 0x04;
    /// Immediate (RFC 7053): the receiver should SACK at once.
    pub const I: u8 = 0x08;
}

/// The T bit of ABORT and SHUTDOWN COMPLETE (RFC 9260 §3.3.7, §3.3.13).
pub const T_BIT: u8 = 0x01;

/// A DATA chunk (RFC 9260 §3.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataChunk<'a> {
    /// Raw flags (U, B, E, I).
    pub flags: u8,
    /// Transmission sequence number.
    pub tsn: u32,
    /// Stream identifier.
    pub stream: u16,
    /// Stream sequence number.
    pub ssn: u16,
    /// Payload protocol identifier, opaque (60 = NGAP).
    pub ppid: u32,
    /// User data.
    pub payload: &'a [u8],
}

impl DataChunk<'_> {
    /// Unordered (U) bit.
    pub fn unordered(&self) -> bool {
        self.flags & data_flags::U != 0
    }
    /// Beginning fragment (B) bit.
    pub fn beginning(&self) -> bool {
        self.flags & data_flags::B != 0
    }
    /// Ending fragment (E) bit.
    pub fn ending(&self) -> bool {
        self.flags & data_flags::E != 0
    }
}

/// INIT or INIT ACK fixed fields plus the raw parameter area (RFC 9260 §3.3.2, §3.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitChunk<'a> {
    /// Initiate tag: the verification tag the sender expects in packets sent to it.
    pub initiate_tag: u32,
    /// Advertised receiver window credit.
    pub a_rwnd: u32,
    /// Number of outbound streams the sender wants.
    pub outbound_streams: u16,
    /// Maximum number of inbound streams the sender allows.
    pub inbound_streams: u16,
    /// First TSN the sender will use.
    pub initial_tsn: u32,
    /// Encoded optional/variable parameters.
    pub params: &'a [u8],
}

impl<'a> InitChunk<'a> {
    /// Iterates over the parameters.
    pub fn params(&self) -> ParamIter<'a> {
        ParamIter::new(self.params)
    }
}

/// A SACK (RFC 9260 §3.3.4); gap blocks and duplicate TSNs stay encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SackChunk<'a> {
    /// Cumulative TSN ack.
    pub cum_tsn_ack: u32,
    /// Advertised receiver window credit.
    pub a_rwnd: u32,
    gaps: &'a [u8],
    dups: &'a [u8],
}

impl<'a> SackChunk<'a> {
    /// Number of gap ack blocks.
    pub fn gap_count(&self) -> usize {
        self.gaps.len() / 4
    }
    /// Gap ack blocks as (start, end) offsets from the cumulative TSN ack, inclusive.
    pub fn gaps(&self) -> GapBlockIter<'a> {
        GapBlockIter {
            data: self.gaps,
            pos: 0,
        }
    }
    /// Duplicate TSNs reported by the peer.
    pub fn dups(&self) -> TsnIter<'a> {
        TsnIter {
            data: self.dups,
            pos: 0,
        }
    }
}

/// Iterator over SACK gap ack blocks.
#[derive(Debug, Clone)]
pub struct GapBlockIter<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Iterator for GapBlockIter<'_> {
    type Item = (u16, u16);
    fn next(&mut self) -> Option<(u16, u16)> {
        let s = be16(self.data, self.pos)?;
        let e = be16(self.data, self.pos + 2)?;
        self.pos += 4;
        Some((s, e))
    }
}

/// Iterator over a list of 32-bit TSNs.
#[derive(Debug, Clone)]
pub struct TsnIter<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Iterator for TsnIter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        let v = be32(self.data, self.pos)?;
        self.pos += 4;
        Some(v)
    }
}

/// A decoded chunk, borrowing variable parts from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// DATA.
    Data(DataChunk<'a>),
    /// INIT.
    Init(InitChunk<'a>),
    /// INIT ACK.
    InitAck(InitChunk<'a>),
    /// SACK.
    Sack(SackChunk<'a>),
    /// HEARTBEAT; `info` is the whole value (the Heartbeat Info parameter TLV).
    Heartbeat {
        /// Chunk value, echoed verbatim in the HEARTBEAT ACK.
        info: &'a [u8],
    },
    /// HEARTBEAT ACK.
    HeartbeatAck {
        /// Chunk value as echoed by the peer.
        info: &'a [u8],
    },
    /// ABORT.
    Abort {
        /// T bit: the verification tag is the sender's own (reflected) tag.
        t_bit: bool,
        /// Encoded error causes.
        causes: &'a [u8],
    },
    /// SHUTDOWN.
    Shutdown {
        /// Cumulative TSN ack.
        cum_tsn_ack: u32,
    },
    /// SHUTDOWN ACK.
    ShutdownAck,
    /// ERROR.
    Error {
        /// Encoded error causes.
        causes: &'a [u8],
    },
    /// COOKIE ECHO.
    CookieEcho {
        /// The state cookie.
        cookie: &'a [u8],
    },
    /// COOKIE ACK.
    CookieAck,
    /// SHUTDOWN COMPLETE.
    ShutdownComplete {
        /// T bit.
        t_bit: bool,
    },
    /// A chunk type this implementation does not know.
    Unknown(RawChunk<'a>),
}

impl<'a> Chunk<'a> {
    /// Decodes one raw chunk.
    pub fn parse(raw: RawChunk<'a>) -> Result<Self, WireError> {
        use chunk_type::*;
        let v = raw.value;
        let bad = WireError::BadChunk(raw.ty);
        Ok(match raw.ty {
            DATA => {
                if v.len() < DATA_HEADER_LEN - 4 {
                    return Err(bad);
                }
                Chunk::Data(DataChunk {
                    flags: raw.flags,
                    tsn: be32(v, 0).ok_or(bad)?,
                    stream: be16(v, 4).ok_or(bad)?,
                    ssn: be16(v, 6).ok_or(bad)?,
                    ppid: be32(v, 8).ok_or(bad)?,
                    payload: v.get(12..).unwrap_or(&[]),
                })
            }
            INIT | INIT_ACK => {
                if v.len() < INIT_FIXED_LEN {
                    return Err(bad);
                }
                let c = InitChunk {
                    initiate_tag: be32(v, 0).ok_or(bad)?,
                    a_rwnd: be32(v, 4).ok_or(bad)?,
                    outbound_streams: be16(v, 8).ok_or(bad)?,
                    inbound_streams: be16(v, 10).ok_or(bad)?,
                    initial_tsn: be32(v, 12).ok_or(bad)?,
                    params: v.get(INIT_FIXED_LEN..).unwrap_or(&[]),
                };
                if raw.ty == INIT {
                    Chunk::Init(c)
                } else {
                    Chunk::InitAck(c)
                }
            }
            SACK => {
                let ngap = usize::from(be16(v, 8).ok_or(bad)?);
                let ndup = usize::from(be16(v, 10).ok_or(bad)?);
                let gap_end = SACK_FIXED_LEN + 4 * ngap;
                let dup_end = gap_end + 4 * ndup;
                let gaps = v.get(SACK_FIXED_LEN..gap_end).ok_or(bad)?;
                let dups = v.get(gap_end..dup_end).ok_or(bad)?;
                Chunk::Sack(SackChunk {
                    cum_tsn_ack: be32(v, 0).ok_or(bad)?,
                    a_rwnd: be32(v, 4).ok_or(bad)?,
                    gaps,
                    dups,
                })
            }
            HEARTBEAT => Chunk::Heartbeat { info: v },
            HEARTBEAT_ACK => Chunk::HeartbeatAck { info: v },
            ABORT => Chunk::Abort {
                t_bit: raw.flags & T_BIT != 0,
                causes: v,
            },
            SHUTDOWN => Chunk::Shutdown {
                cum_tsn_ack: be32(v, 0).ok_or(bad)?,
            },
            SHUTDOWN_ACK => Chunk::ShutdownAck,
            ERROR => Chunk::Error { causes: v },
            COOKIE_ECHO => Chunk::CookieEcho { cookie: v },
            COOKIE_ACK => Chunk::CookieAck,
            SHUTDOWN_COMPLETE => Chunk::ShutdownComplete {
                t_bit: raw.flags & T_BIT != 0,
            },
            _ => Chunk::Unknown(raw),
        })
    }

    /// Iterates over the error causes of an ABORT or ERROR (empty for other chunks).
    pub fn causes(&self) -> CauseIter<'a> {
        match self {
            Chunk::Abort { causes, .. } | Chunk::Error { causes } => CauseIter::new(causes),
            _ => CauseIter::new(&[]),
        }
    }

    fn type_flags(&self) -> (u8, u8) {
        use chunk_type::*;
        match self {
            Chunk::Data(d) => (DATA, d.flags),
            Chunk::Init(_) => (INIT, 0),
            Chunk::InitAck(_) => (INIT_ACK, 0),
            Chunk::Sack(_) => (SACK, 0),
            Chunk::Heartbeat { .. } => (HEARTBEAT, 0),
            Chunk::HeartbeatAck { .. } => (HEARTBEAT_ACK, 0),
            Chunk::Abort { t_bit, .. } => (ABORT, u8::from(*t_bit)),
            Chunk::Shutdown { .. } => (SHUTDOWN, 0),
            Chunk::ShutdownAck => (SHUTDOWN_ACK, 0),
            Chunk::Error { .. } => (ERROR, 0),
            Chunk::CookieEcho { .. } => (COOKIE_ECHO, 0),
            Chunk::CookieAck => (COOKIE_ACK, 0),
            Chunk::ShutdownComplete { t_bit } => (SHUTDOWN_COMPLETE, u8::from(*t_bit)),
            Chunk::Unknown(r) => (r.ty, r.flags),
        }
    }

    fn value_len(&self) -> usize {
        match self {
            Chunk::Data(d) => DATA_HEADER_LEN - 4 + d.payload.len(),
            Chunk::Init(i) | Chunk::InitAck(i) => INIT_FIXED_LEN + tlv_list_len(i.params),
            Chunk::Sack(s) => SACK_FIXED_LEN + s.gaps.len() + s.dups.len(),
            Chunk::Heartbeat { info } | Chunk::HeartbeatAck { info } => tlv_list_len(info),
            Chunk::Abort { causes, .. } | Chunk::Error { causes } => tlv_list_len(causes),
            Chunk::Shutdown { .. } => 4,
            Chunk::CookieEcho { cookie } => cookie.len(),
            Chunk::ShutdownAck | Chunk::CookieAck | Chunk::ShutdownComplete { .. } => 0,
            Chunk::Unknown(r) => r.value.len(),
        }
    }

    /// Encoded size including padding.
    pub fn buffer_len(&self) -> usize {
        pad4(4 + self.value_len())
    }

    /// Appends the encoded chunk, padded to four bytes. Values longer than a chunk can carry
    /// are the caller's bug; the length field is then truncated to 16 bits.
    pub fn emit(&self, buf: &mut Vec<u8>) {
        let (ty, flags) = self.type_flags();
        let len = 4 + self.value_len();
        buf.push(ty);
        buf.push(flags);
        buf.extend_from_slice(&(len as u16).to_be_bytes());
        match self {
            Chunk::Data(d) => {
                buf.extend_from_slice(&d.tsn.to_be_bytes());
                buf.extend_from_slice(&d.stream.to_be_bytes());
                buf.extend_from_slice(&d.ssn.to_be_bytes());
                buf.extend_from_slice(&d.ppid.to_be_bytes());
                buf.extend_from_slice(d.payload);
            }
            Chunk::Init(i) | Chunk::InitAck(i) => {
                buf.extend_from_slice(&i.initiate_tag.to_be_bytes());
                buf.extend_from_slice(&i.a_rwnd.to_be_bytes());
                buf.extend_from_slice(&i.outbound_streams.to_be_bytes());
                buf.extend_from_slice(&i.inbound_streams.to_be_bytes());
                buf.extend_from_slice(&i.initial_tsn.to_be_bytes());
                buf.extend_from_slice(unpadded(i.params));
            }
            Chunk::Sack(s) => {
                buf.extend_from_slice(&s.cum_tsn_ack.to_be_bytes());
                buf.extend_from_slice(&s.a_rwnd.to_be_bytes());
                buf.extend_from_slice(&((s.gaps.len() / 4) as u16).to_be_bytes());
                buf.extend_from_slice(&((s.dups.len() / 4) as u16).to_be_bytes());
                buf.extend_from_slice(s.gaps);
                buf.extend_from_slice(s.dups);
            }
            Chunk::Heartbeat { info } | Chunk::HeartbeatAck { info } => buf.extend_from_slice(info),
            Chunk::Abort { causes, .. } | Chunk::Error { causes } => buf.extend_from_slice(causes),
            Chunk::Shutdown { cum_tsn_ack } => buf.extend_from_slice(&cum_tsn_ack.to_be_bytes()),
            Chunk::CookieEcho { cookie } => buf.extend_from_slice(cookie),
            Chunk::ShutdownAck | Chunk::CookieAck | Chunk::ShutdownComplete { .. } => {}
            Chunk::Unknown(r) => buf.extend_from_slice(r.value),
        }
        pad_vec(buf);
    }
}

/// Length of an encoded parameter or cause list without the last element's padding:
/// RFC 9260 §3.2 says the chunk length includes the padding of every variable-length
/// parameter except the last one. Lists that do not parse are taken whole.
fn tlv_list_len(list: &[u8]) -> usize {
    let mut pos = 0;
    let mut end = 0;
    while pos < list.len() {
        match tlv_at(list, pos) {
            Ok((start, len, next)) => {
                end = start + len;
                pos = next;
            }
            Err(_) => return list.len(),
        }
    }
    end
}

fn unpadded(list: &[u8]) -> &[u8] {
    list.get(..tlv_list_len(list)).unwrap_or(list)
}

/// Appends a SACK built from gap blocks (offsets from `cum_tsn_ack`) and duplicate TSNs.
pub(crate) fn emit_sack(
    buf: &mut Vec<u8>,
    cum_tsn_ack: u32,
    a_rwnd: u32,
    gaps: &[(u16, u16)],
    dups: &[u32],
) {
    let len = 4 + SACK_FIXED_LEN + 4 * gaps.len() + 4 * dups.len();
    buf.push(chunk_type::SACK);
    buf.push(0);
    buf.extend_from_slice(&(len as u16).to_be_bytes());
    buf.extend_from_slice(&cum_tsn_ack.to_be_bytes());
    buf.extend_from_slice(&a_rwnd.to_be_bytes());
    buf.extend_from_slice(&(gaps.len() as u16).to_be_bytes());
    buf.extend_from_slice(&(dups.len() as u16).to_be_bytes());
    for (s, e) in gaps {
        buf.extend_from_slice(&s.to_be_bytes());
        buf.extend_from_slice(&e.to_be_bytes());
    }
    for d in dups {
        buf.extend_from_slice(&d.to_be_bytes());
    }
}

/// Appends a DATA chunk header and payload (RFC 9260 §3.3.1), padded.
pub(crate) fn emit_data(buf: &mut Vec<u8>, d: &DataChunk<'_>) {
    Chunk::Data(*d).emit(buf)
}

/// Pads `buf` with zeros to a multiple of four bytes.
pub(crate) fn pad_vec(buf: &mut Vec<u8>) {
    while !buf.len().is_multiple_of(4) {
        buf.push(0);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn one(bytes: &[u8]) -> Result<Chunk<'_>, WireError> {
        let mut it = ChunkIter::new(bytes);
        Chunk::parse(it.next().unwrap()?)
    }

    #[test]
    fn data_chunk_bytes() {
        // RFC 9260 §3.3.1 layout: type 0, flags UBE=011, length 16+3, TSN 7, SID 1, SSN 2,
        // PPID 60 (NGAP), 3 bytes of data, 1 byte of padding.
        let b = [
            0, 0x03, 0, 19, 0, 0, 0, 7, 0, 1, 0, 2, 0, 0, 0, 60, 0xaa, 0xbb, 0xcc, 0,
        ];
        let c = one(&b).unwrap();
        let Chunk::Data(d) = c else { panic!() };
        assert_eq!((d.tsn, d.stream, d.ssn, d.ppid), (7, 1, 2, 60));
        assert!(d.beginning() && d.ending() && !d.unordered());
        assert_eq!(d.payload, &[0xaa, 0xbb, 0xcc]);
        let mut out = Vec::new();
        c.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(c.buffer_len(), 20);
    }

    #[test]
    fn sack_chunk_bytes() {
        // RFC 9260 §3.3.4: cum 100, a_rwnd 4096, 2 gap blocks (2-3, 5-5), 1 dup TSN 99.
        let b = [
            3, 0, 0, 28, 0, 0, 0, 100, 0, 0, 0x10, 0, 0, 2, 0, 1, 0, 2, 0, 3, 0, 5, 0, 5, 0, 0, 0,
            99,
        ];
        let c = one(&b).unwrap();
        let Chunk::Sack(s) = c else { panic!() };
        assert_eq!(s.cum_tsn_ack, 100);
        assert_eq!(s.a_rwnd, 4096);
        assert_eq!(s.gaps().collect::<Vec<_>>(), vec![(2, 3), (5, 5)]);
        assert_eq!(s.dups().collect::<Vec<_>>(), vec![99]);
        let mut out = Vec::new();
        emit_sack(&mut out, 100, 4096, &[(2, 3), (5, 5)], &[99]);
        assert_eq!(out, b);
        let mut out2 = Vec::new();
        c.emit(&mut out2);
        assert_eq!(out2, b);
    }

    #[test]
    fn sack_with_lying_counts_is_rejected() {
        // Claims 3 gap blocks but carries one.
        let b = [3, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 1];
        assert_eq!(one(&b), Err(WireError::BadChunk(3)));
    }

    #[test]
    fn length_errors() {
        // Length below the header size.
        assert_eq!(
            ChunkIter::new(&[0, 0, 0, 2]).next(),
            Some(Err(WireError::LengthTooSmall(2)))
        );
        // Length beyond the buffer.
        assert_eq!(
            ChunkIter::new(&[11, 0, 0, 8, 0, 0]).next(),
            Some(Err(WireError::LengthOverrun(8)))
        );
        // Fewer than four bytes left.
        assert_eq!(
            ChunkIter::new(&[11, 0]).next(),
            Some(Err(WireError::Truncated))
        );
        // Missing padding between chunks: a 5-byte chunk followed directly by another.
        let b = [4, 0, 0, 5, 1, 11, 0];
        assert_eq!(ChunkIter::new(&b).next(), Some(Err(WireError::BadPadding)));
        // Missing padding on the last chunk is tolerated.
        let b = [4, 0, 0, 5, 1];
        assert!(ChunkIter::new(&b).next().unwrap().is_ok());
        // The iterator stops after an error.
        let mut it = ChunkIter::new(&[0, 0, 0, 2, 11, 0, 0, 4]);
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }

    #[test]
    fn truncated_fixed_parts() {
        assert_eq!(one(&[0, 3, 0, 8, 0, 0, 0, 1]), Err(WireError::BadChunk(0)));
        assert_eq!(one(&[1, 0, 0, 8, 0, 0, 0, 1]), Err(WireError::BadChunk(1)));
        assert_eq!(one(&[7, 0, 0, 6, 0, 0, 0, 0]), Err(WireError::BadChunk(7)));
    }

    #[test]
    fn control_chunks_round_trip() {
        let cases = [
            Chunk::Abort {
                t_bit: true,
                causes: &[0, 4, 0, 4],
            },
            Chunk::Shutdown { cum_tsn_ack: 9 },
            Chunk::ShutdownAck,
            Chunk::CookieAck,
            Chunk::ShutdownComplete { t_bit: true },
            Chunk::CookieEcho {
                cookie: &[1, 2, 3, 4, 5],
            },
            Chunk::Heartbeat {
                info: &[0, 1, 0, 6, 7, 8],
            },
            Chunk::Error {
                causes: &[0, 1, 0, 8, 0, 7, 0, 0],
            },
        ];
        for c in cases {
            let mut out = Vec::new();
            c.emit(&mut out);
            assert_eq!(out.len(), c.buffer_len());
            assert_eq!(one(&out).unwrap(), c);
        }
        // The last parameter's padding is outside the chunk length (RFC 9260 §3.2): an
        // ABORT with one 5-byte cause has length 9 and 3 bytes of padding.
        let mut out = Vec::new();
        Chunk::Abort {
            t_bit: false,
            causes: &[0, 12, 0, 5, 0xee, 0, 0, 0],
        }
        .emit(&mut out);
        assert_eq!(out, [6, 0, 0, 9, 0, 12, 0, 5, 0xee, 0, 0, 0]);
        // SHUTDOWN COMPLETE with T bit, bytes per RFC 9260 §3.3.13.
        assert_eq!(
            one(&[14, 1, 0, 4]).unwrap(),
            Chunk::ShutdownComplete { t_bit: true }
        );
    }
}
