//! GTP-U header codec (TS 29.281 §5) with extension header chains, including the PDU Session
//! Container that carries the QFI on N3/N9 (TS 38.415 §5.5.2).
//!
//! ```text
//!  octet 1    : Version(3)=1 | PT=1 | spare | E | S | PN
//!  octet 2    : Message Type
//!  octets 3-4 : Length (octets after the first 8: optional fields, extensions, payload)
//!  octets 5-8 : TEID
//!  if E|S|PN  : octets 9-10 Sequence Number, 11 N-PDU Number, 12 Next Extension Header Type
//!  extension  : Length (in 4-octet units) | contents | Next Extension Header Type
//! ```

/// Octet offsets and flag bits.
mod field {
    pub(crate) const FLAGS: usize = 0;
    pub(crate) const MSG_TYPE: usize = 1;
    pub(crate) const LENGTH: usize = 2;
    pub(crate) const TEID: usize = 4;
    pub(crate) const SEQ: usize = 8;
    pub(crate) const NPDU: usize = 10;
    pub(crate) const NEXT_EXT: usize = 11;
    pub(crate) const FLAG_PT: u8 = 0x10;
    pub(crate) const FLAG_E: u8 = 0x04;
    pub(crate) const FLAG_S: u8 = 0x02;
    pub(crate) const FLAG_PN: u8 = 0x01;
}

/// The mandatory part of the header.
pub const HEADER_LEN: usize = 8;
/// With the optional Sequence Number, N-PDU Number and Next Extension Header Type fields.
pub const HEADER_LEN_OPT: usize = 12;

/// Message types (TS 29.281 §6.1, Table 6.1-1).
pub mod msg_type {
    /// Echo Request.
    pub const ECHO_REQUEST: u8 = 1;
    /// Echo Response.
    pub const ECHO_RESPONSE: u8 = 2;
    /// Error Indication.
    pub const ERROR_INDICATION: u8 = 26;
    /// Supported Extension Headers Notification.
    pub const SUPPORTED_EXT_HEADERS_NOTIFICATION: u8 = 31;
    /// End Marker.
    pub const END_MARKER: u8 = 254;
    /// G-PDU: user data.
    pub const G_PDU: u8 = 255;
}

/// Extension header types (TS 29.281 §5.2.1, Figure 5.2.1-3).
pub mod ext_type {
    /// No more extension headers.
    pub const NONE: u8 = 0x00;
    /// Service Class Indicator.
    pub const SERVICE_CLASS_INDICATOR: u8 = 0x20;
    /// UDP Port.
    pub const UDP_PORT: u8 = 0x40;
    /// RAN Container.
    pub const RAN_CONTAINER: u8 = 0x81;
    /// Long PDCP PDU Number.
    pub const LONG_PDCP_PDU_NUMBER: u8 = 0x82;
    /// Xw RAN Container.
    pub const XW_RAN_CONTAINER: u8 = 0x83;
    /// NR RAN Container.
    pub const NR_RAN_CONTAINER: u8 = 0x84;
    /// PDU Session Container.
    pub const PDU_SESSION_CONTAINER: u8 = 0x85;
    /// PDCP PDU Number.
    pub const PDCP_PDU_NUMBER: u8 = 0xc0;

    /// Types this codec knows (and so may accept even when comprehension is required).
    pub(crate) fn is_known(t: u8) -> bool {
        matches!(
            t,
            SERVICE_CLASS_INDICATOR
                | UDP_PORT
                | RAN_CONTAINER
                | LONG_PDCP_PDU_NUMBER
                | XW_RAN_CONTAINER
                | NR_RAN_CONTAINER
                | PDU_SESSION_CONTAINER
                | PDCP_PDU_NUMBER
        )
    }
}

/// Why a GTP-U header could not be decoded or encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the header or than the length field says.
    #[error("GTP-U packet truncated")]
    Truncated,
    /// Version is not 1; TS 29.281 §5.1 asks for a Version Not Supported answer (GTPv1-C).
    #[error("unsupported GTP version {0}")]
    UnsupportedVersion(u8),
    /// PT=0 marks GTP' (charging), not GTP-U.
    #[error("PT=0: GTP' packet, not GTP-U")]
    NotGtpU,
    /// An extension header overruns the packet.
    #[error("extension header truncated")]
    ExtensionTruncated,
    /// An extension header with length 0 (TS 29.281 §5.2.1: length is in 4-octet units, ≥ 1).
    #[error("extension header of length zero")]
    ExtensionZeroLength,
    /// An unknown extension header whose type says comprehension is required (§5.2.1: bits 8
    /// and 7 of the type = 1x); the receiving endpoint discards the packet and may answer with
    /// a Supported Extension Headers Notification.
    #[error("unknown extension header {0:#04x} requires comprehension")]
    UnsupportedExtension(u8),
    /// A PDU Session Container whose content is too short or has an unknown PDU type.
    #[error("malformed PDU Session Container")]
    BadPduSessionContainer,
    /// Emit: the buffer is too small, or an extension or the packet is too long to encode.
    #[error("cannot encode: buffer too small or field too long")]
    Encode,
}

/// A borrowed view of a GTP-U packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checks; accessors may then panic. Prefer [`Packet::new_checked`].
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer after checking version, PT, and that the fixed header, the optional
    /// fields and the length field fit. The extension chain is checked by [`Packet::extensions`].
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let version = b[field::FLAGS] >> 5;
        if version != 1 {
            return Err(Error::UnsupportedVersion(version));
        }
        if b[field::FLAGS] & field::FLAG_PT == 0 {
            return Err(Error::NotGtpU);
        }
        let p = Packet { buffer };
        if p.total_len() > p.buffer.as_ref().len() || p.total_len() < p.fixed_len() {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    fn flags(&self) -> u8 {
        self.b()[field::FLAGS]
    }
    /// Whether the optional 4 octets (sequence, N-PDU, next extension type) are present.
    pub fn has_optional(&self) -> bool {
        self.flags() & (field::FLAG_E | field::FLAG_S | field::FLAG_PN) != 0
    }
    fn fixed_len(&self) -> usize {
        if self.has_optional() {
            HEADER_LEN_OPT
        } else {
            HEADER_LEN
        }
    }
    /// Message type.
    pub fn msg_type(&self) -> u8 {
        self.b()[field::MSG_TYPE]
    }
    /// Length field.
    pub fn length(&self) -> u16 {
        u16::from_be_bytes([self.b()[field::LENGTH], self.b()[field::LENGTH + 1]])
    }
    /// Octets the packet spans: 8 plus the length field.
    pub fn total_len(&self) -> usize {
        HEADER_LEN + usize::from(self.length())
    }
    /// TEID.
    pub fn teid(&self) -> u32 {
        let t = &self.b()[field::TEID..field::TEID + 4];
        u32::from_be_bytes([t[0], t[1], t[2], t[3]])
    }
    /// Sequence number, if S=1.
    pub fn sequence(&self) -> Option<u16> {
        (self.flags() & field::FLAG_S != 0)
            .then(|| u16::from_be_bytes([self.b()[field::SEQ], self.b()[field::SEQ + 1]]))
    }
    /// N-PDU number, if PN=1.
    pub fn npdu(&self) -> Option<u8> {
        (self.flags() & field::FLAG_PN != 0).then(|| self.b()[field::NPDU])
    }
    /// The first extension header type, if E=1.
    pub fn next_ext_type(&self) -> Option<u8> {
        (self.flags() & field::FLAG_E != 0).then(|| self.b()[field::NEXT_EXT])
    }

    /// Walks the extension chain: an iterator of (type, contents) and, at its end, the offset
    /// of the payload, via [`ExtIter::payload_offset`].
    pub fn extensions(&self) -> ExtIter<'_> {
        ExtIter {
            buf: self.b().get(..self.total_len()).unwrap_or(&[]),
            pos: self.fixed_len(),
            next: self.next_ext_type().unwrap_or(ext_type::NONE),
            failed: false,
        }
    }

    /// The T-PDU (or signalling IEs) after the header and its extensions.
    pub fn payload(&self) -> Result<&[u8], Error> {
        let mut it = self.extensions();
        for e in it.by_ref() {
            e?;
        }
        Ok(self.b().get(it.pos..self.total_len()).unwrap_or(&[]))
    }
}

/// Iterator over the extension headers of a [`Packet`].
#[derive(Debug, Clone)]
pub struct ExtIter<'a> {
    buf: &'a [u8],
    pos: usize,
    next: u8,
    failed: bool,
}

impl ExtIter<'_> {
    /// Where the payload starts, once the iterator has returned `None`.
    pub fn payload_offset(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for ExtIter<'a> {
    type Item = Result<(u8, &'a [u8]), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next == ext_type::NONE || self.failed {
            return None;
        }
        self.failed = true;
        let t = self.next;
        let Some(&units) = self.buf.get(self.pos) else {
            return Some(Err(Error::ExtensionTruncated));
        };
        if units == 0 {
            return Some(Err(Error::ExtensionZeroLength));
        }
        let len = usize::from(units) * 4;
        let Some(ext) = self.buf.get(self.pos..self.pos + len) else {
            return Some(Err(Error::ExtensionTruncated));
        };
        // TS 29.281 §5.2.1: types with bits 8-7 = 1x must be understood by the endpoint.
        if t & 0x80 != 0 && !ext_type::is_known(t) {
            return Some(Err(Error::UnsupportedExtension(t)));
        }
        self.failed = false;
        self.pos += len;
        self.next = ext[len - 1];
        Some(Ok((t, &ext[1..len - 1])))
    }
}

/// PDU Session Container (TS 38.415 §5.5.2.1 DL PDU SESSION INFORMATION, §5.5.2.2 UL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduSessionContainer {
    /// PDU Type: 0 DL PDU SESSION INFORMATION, 1 UL PDU SESSION INFORMATION.
    pub pdu_type: u8,
    /// Low 4 bits of octet 1 (DL: QMP, SNP, MSNP; UL: QMP, DL/UL delay ind, SNP).
    pub flags: u8,
    /// Bits 8-7 of octet 2 (DL: PPP, RQI; UL: N3/N9 delay ind, new IE flag).
    pub octet2_flags: u8,
    /// QoS Flow Identifier (6 bits).
    pub qfi: u8,
    /// Any further octets (optional fields and padding), as sent.
    pub rest: Vec<u8>,
}

impl PduSessionContainer {
    /// PDU Type of DL PDU SESSION INFORMATION.
    pub const DL: u8 = 0;
    /// PDU Type of UL PDU SESSION INFORMATION.
    pub const UL: u8 = 1;

    /// A minimal downlink container for `qfi` (what a UPF puts on N3).
    pub fn downlink(qfi: u8) -> Self {
        PduSessionContainer {
            pdu_type: Self::DL,
            flags: 0,
            octet2_flags: 0,
            qfi: qfi & 0x3f,
            rest: Vec::new(),
        }
    }
    /// A minimal uplink container for `qfi` (what a gNB puts on N3).
    pub fn uplink(qfi: u8) -> Self {
        PduSessionContainer {
            pdu_type: Self::UL,
            ..Self::downlink(qfi)
        }
    }
    /// DL only: the Reflective QoS Indicator.
    pub fn rqi(&self) -> bool {
        self.pdu_type == Self::DL && self.octet2_flags & 0x01 != 0
    }

    fn parse(content: &[u8]) -> Result<Self, Error> {
        let [o1, o2, rest @ ..] = content else {
            return Err(Error::BadPduSessionContainer);
        };
        let pdu_type = o1 >> 4;
        if pdu_type > Self::UL {
            return Err(Error::BadPduSessionContainer);
        }
        Ok(PduSessionContainer {
            pdu_type,
            flags: o1 & 0x0f,
            octet2_flags: o2 >> 6,
            qfi: o2 & 0x3f,
            rest: rest.to_vec(),
        })
    }
    fn content(&self) -> Vec<u8> {
        let mut c = vec![
            (self.pdu_type & 0x0f) << 4 | (self.flags & 0x0f),
            (self.octet2_flags & 0x03) << 6 | (self.qfi & 0x3f),
        ];
        c.extend_from_slice(&self.rest);
        c
    }
}

/// One extension header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtHeader {
    /// PDU Session Container (0x85).
    PduSessionContainer(PduSessionContainer),
    /// Any other type, contents as sent (padding included).
    Other {
        /// Extension header type.
        ext_type: u8,
        /// Contents between the length octet and the next-type octet.
        content: Vec<u8>,
    },
}

impl ExtHeader {
    fn ext_type(&self) -> u8 {
        match self {
            ExtHeader::PduSessionContainer(_) => ext_type::PDU_SESSION_CONTAINER,
            ExtHeader::Other { ext_type, .. } => *ext_type,
        }
    }
    fn content(&self) -> Vec<u8> {
        match self {
            ExtHeader::PduSessionContainer(p) => p.content(),
            ExtHeader::Other { content, .. } => content.clone(),
        }
    }
    /// Octets on the wire: contents plus length and next-type octets, rounded up to 4.
    fn wire_len(&self) -> usize {
        (self.content().len() + 2).div_ceil(4) * 4
    }
}

/// A GTP-U header as plain values; the payload stays in the caller's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repr {
    /// Message type.
    pub msg_type: u8,
    /// TEID.
    pub teid: u32,
    /// Sequence number (S flag).
    pub sequence: Option<u16>,
    /// N-PDU number (PN flag).
    pub npdu: Option<u8>,
    /// Extension headers, in order.
    pub extensions: Vec<ExtHeader>,
    /// Octets after the header (T-PDU or IEs).
    pub payload_len: usize,
}

impl Repr {
    /// A G-PDU header for `payload_len` octets towards `teid`.
    pub fn g_pdu(teid: u32, payload_len: usize) -> Self {
        Repr {
            msg_type: msg_type::G_PDU,
            teid,
            sequence: None,
            npdu: None,
            extensions: Vec::new(),
            payload_len,
        }
    }

    /// Decodes a checked packet, walking and validating the extension chain.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Self, Error> {
        let mut extensions = Vec::new();
        let mut it = p.extensions();
        for e in it.by_ref() {
            let (t, content) = e?;
            extensions.push(if t == ext_type::PDU_SESSION_CONTAINER {
                ExtHeader::PduSessionContainer(PduSessionContainer::parse(content)?)
            } else {
                ExtHeader::Other {
                    ext_type: t,
                    content: content.to_vec(),
                }
            });
        }
        Ok(Repr {
            msg_type: p.msg_type(),
            teid: p.teid(),
            sequence: p.sequence(),
            npdu: p.npdu(),
            extensions,
            payload_len: p.total_len().saturating_sub(it.payload_offset()),
        })
    }

    /// The PDU Session Container's QFI, if there is one.
    pub fn qfi(&self) -> Option<u8> {
        self.extensions.iter().find_map(|e| match e {
            ExtHeader::PduSessionContainer(p) => Some(p.qfi),
            ExtHeader::Other { .. } => None,
        })
    }

    fn has_optional(&self) -> bool {
        self.sequence.is_some() || self.npdu.is_some() || !self.extensions.is_empty()
    }

    /// Header length including optional fields and extensions (payload excluded).
    pub fn header_len(&self) -> usize {
        let base = if self.has_optional() {
            HEADER_LEN_OPT
        } else {
            HEADER_LEN
        };
        base + self
            .extensions
            .iter()
            .map(ExtHeader::wire_len)
            .sum::<usize>()
    }

    /// Writes the header into the start of `buf` (the payload goes after
    /// [`Repr::header_len`] octets) and returns the header length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        let hlen = self.header_len();
        let length = (hlen - HEADER_LEN)
            .checked_add(self.payload_len)
            .and_then(|l| u16::try_from(l).ok())
            .ok_or(Error::Encode)?;
        let hdr = buf.get_mut(..hlen).ok_or(Error::Encode)?;
        let mut flags = 0x20 | field::FLAG_PT;
        if !self.extensions.is_empty() {
            flags |= field::FLAG_E;
        }
        if self.sequence.is_some() {
            flags |= field::FLAG_S;
        }
        if self.npdu.is_some() {
            flags |= field::FLAG_PN;
        }
        hdr[field::FLAGS] = flags;
        hdr[field::MSG_TYPE] = self.msg_type;
        hdr[field::LENGTH..field::LENGTH + 2].copy_from_slice(&length.to_be_bytes());
        hdr[field::TEID..field::TEID + 4].copy_from_slice(&self.teid.to_be_bytes());
        if !self.has_optional() {
            return Ok(hlen);
        }
        hdr[field::SEQ..field::SEQ + 2].copy_from_slice(&self.sequence.unwrap_or(0).to_be_bytes());
        hdr[field::NPDU] = self.npdu.unwrap_or(0);
        // Each extension's last octet names the next; the fixed header names the first.
        let mut type_at = field::NEXT_EXT;
        let mut pos = HEADER_LEN_OPT;
        for e in &self.extensions {
            let len = e.wire_len();
            let units = u8::try_from(len / 4).map_err(|_| Error::Encode)?;
            hdr[type_at] = e.ext_type();
            let content = e.content();
            hdr[pos] = units;
            hdr[pos + 1..pos + 1 + content.len()].copy_from_slice(&content);
            hdr[pos + 1 + content.len()..pos + len].fill(0);
            type_at = pos + len - 1;
            pos += len;
        }
        hdr[type_at] = ext_type::NONE;
        Ok(hlen)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    // TS 29.281 §5.1 + TS 38.415 §5.5.2.1: G-PDU, E=1 (flags 0x34), length 8 (4 optional + 4
    // extension) + 4 payload = 12, TEID 1; seq 0, N-PDU 0, next 0x85; extension length 1,
    // DL PDU type 0, QFI 9, next type 0; payload 4 octets.
    const GPDU_QFI: [u8; 20] = [
        0x34, 0xff, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x85, 0x01, 0x00, 0x09,
        0x00, 0xde, 0xad, 0xbe, 0xef,
    ];

    #[test]
    fn gpdu_with_pdu_session_container() {
        let p = Packet::new_checked(&GPDU_QFI[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.msg_type, msg_type::G_PDU);
        assert_eq!(r.teid, 1);
        assert_eq!(r.qfi(), Some(9));
        assert_eq!(r.payload_len, 4);
        assert_eq!(p.payload().unwrap(), &[0xde, 0xad, 0xbe, 0xef]);
        let mut out = [0u8; 20];
        assert_eq!(r.emit(&mut out).unwrap(), 16);
        out[16..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(out, GPDU_QFI);
    }

    #[test]
    fn echo_request_with_sequence() {
        // Echo Request: S=1 (0x32), length 4, TEID 0, seq 0x1234; TS 29.281 §7.2.1.
        let b = [0x32, 1, 0, 4, 0, 0, 0, 0, 0x12, 0x34, 0, 0];
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r.sequence, Some(0x1234));
        assert_eq!(r.payload_len, 0);
        let mut out = [0u8; 12];
        r.emit(&mut out).unwrap();
        assert_eq!(out, b);
    }

    #[test]
    fn extension_errors() {
        // Unknown type 0xc1 (comprehension required) → reject.
        let mut b = GPDU_QFI;
        b[11] = 0xc1;
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Repr::parse(&p), Err(Error::UnsupportedExtension(0xc1)));
        // Unknown type 0x01 (comprehension not required) → kept raw.
        b[11] = 0x01;
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            r.extensions,
            vec![ExtHeader::Other {
                ext_type: 1,
                content: vec![0, 9]
            }]
        );
        // Zero length extension.
        let mut b = GPDU_QFI;
        b[12] = 0;
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Repr::parse(&p), Err(Error::ExtensionZeroLength));
        // Chain claims another extension past the end.
        let mut b = GPDU_QFI;
        b[15] = 0x85;
        b[3] = 8;
        let p = Packet::new_checked(&b[..16]).unwrap();
        assert_eq!(Repr::parse(&p), Err(Error::ExtensionTruncated));
    }

    #[test]
    fn header_errors() {
        assert_eq!(
            Packet::new_checked(&[0x30, 0xff][..]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            Packet::new_checked(&[0x50, 0xff, 0, 0, 0, 0, 0, 0][..]).err(),
            Some(Error::UnsupportedVersion(2))
        );
        assert_eq!(
            Packet::new_checked(&[0x20, 0xff, 0, 0, 0, 0, 0, 0][..]).err(),
            Some(Error::NotGtpU)
        );
        // E set but length 0: the optional fields do not fit.
        assert_eq!(
            Packet::new_checked(&[0x34, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0][..]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            Repr::g_pdu(1, 70000).emit(&mut [0u8; 8]),
            Err(Error::Encode)
        );
        assert_eq!(
            Repr::g_pdu(1, usize::MAX).emit(&mut [0u8; 8]),
            Err(Error::Encode)
        );
    }
}
