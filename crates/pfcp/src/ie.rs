//! PFCP Information Elements (TS 29.244 §8): the TLV framing, the scalar IEs this core uses,
//! and the grouped IEs of session rules (Create/Update/Remove PDR, FAR, QER, URR; Usage Report).
//!
//! Every grouped IE keeps the IEs it does not know as raw TLVs (`unknown`) and emits them back,
//! so a UPF forwards what a newer SMF sent rather than dropping it; vendor IEs (enterprise bit,
//! §8.1.1) are skipped.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::error::DecodeError;

/// IE type numbers (TS 29.244 §8.1.2, Table 8.1.2-1).
#[allow(missing_docs)]
pub mod ty {
    pub const CREATE_PDR: u16 = 1;
    pub const PDI: u16 = 2;
    pub const CREATE_FAR: u16 = 3;
    pub const FORWARDING_PARAMETERS: u16 = 4;
    pub const CREATE_URR: u16 = 6;
    pub const CREATE_QER: u16 = 7;
    pub const CREATED_PDR: u16 = 8;
    pub const UPDATE_PDR: u16 = 9;
    pub const UPDATE_FAR: u16 = 10;
    pub const UPDATE_FORWARDING_PARAMETERS: u16 = 11;
    pub const UPDATE_URR: u16 = 13;
    pub const UPDATE_QER: u16 = 14;
    pub const REMOVE_PDR: u16 = 15;
    pub const REMOVE_FAR: u16 = 16;
    pub const REMOVE_URR: u16 = 17;
    pub const REMOVE_QER: u16 = 18;
    pub const CAUSE: u16 = 19;
    pub const SOURCE_INTERFACE: u16 = 20;
    pub const F_TEID: u16 = 21;
    pub const NETWORK_INSTANCE: u16 = 22;
    pub const SDF_FILTER: u16 = 23;
    pub const GATE_STATUS: u16 = 25;
    pub const MBR: u16 = 26;
    pub const PRECEDENCE: u16 = 29;
    pub const VOLUME_THRESHOLD: u16 = 31;
    pub const TIME_THRESHOLD: u16 = 32;
    pub const REPORTING_TRIGGERS: u16 = 37;
    pub const REPORT_TYPE: u16 = 39;
    pub const OFFENDING_IE: u16 = 40;
    pub const DESTINATION_INTERFACE: u16 = 42;
    pub const UP_FUNCTION_FEATURES: u16 = 43;
    pub const APPLY_ACTION: u16 = 44;
    pub const PDR_ID: u16 = 56;
    pub const F_SEID: u16 = 57;
    pub const NODE_ID: u16 = 60;
    pub const MEASUREMENT_METHOD: u16 = 62;
    pub const USAGE_REPORT_TRIGGER: u16 = 63;
    pub const VOLUME_MEASUREMENT: u16 = 66;
    pub const DURATION_MEASUREMENT: u16 = 67;
    pub const START_TIME: u16 = 75;
    pub const END_TIME: u16 = 76;
    pub const USAGE_REPORT_SMR: u16 = 78;
    pub const USAGE_REPORT_SDR: u16 = 79;
    pub const USAGE_REPORT_SRR: u16 = 80;
    pub const URR_ID: u16 = 81;
    pub const OUTER_HEADER_CREATION: u16 = 84;
    pub const CP_FUNCTION_FEATURES: u16 = 89;
    pub const UE_IP_ADDRESS: u16 = 93;
    pub const OUTER_HEADER_REMOVAL: u16 = 95;
    pub const RECOVERY_TIME_STAMP: u16 = 96;
    pub const UR_SEQN: u16 = 104;
    pub const FAR_ID: u16 = 108;
    pub const QER_ID: u16 = 109;
}

/// TS 29.244 §8.1.1: an IE type with bit 16 set is vendor-specific and carries an Enterprise ID.
const ENTERPRISE_BIT: u16 = 0x8000;
/// Type (2) + Length (2).
const IE_HEADER_LEN: usize = 4;

/// One IE as it sits on the wire: its type and the octets after the length field (for a
/// vendor IE, after the Enterprise ID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawIe<'a> {
    /// IE type.
    pub ie_type: u16,
    /// Enterprise ID, for vendor IEs.
    pub enterprise_id: Option<u16>,
    /// Value octets.
    pub value: &'a [u8],
}

/// An IE this codec does not model, kept to be re-emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownIe {
    /// IE type.
    pub ie_type: u16,
    /// Value octets.
    pub value: Vec<u8>,
}

/// Walks a sequence of IEs (a message body or a grouped IE's value).
#[derive(Debug, Clone)]
pub struct IeIter<'a> {
    rest: &'a [u8],
}

impl<'a> IeIter<'a> {
    /// Starts at the first IE of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        IeIter { rest: buf }
    }
}

impl<'a> Iterator for IeIter<'a> {
    type Item = Result<RawIe<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let r = self.rest;
        let Some(hdr) = r.get(..IE_HEADER_LEN) else {
            self.rest = &[];
            // Not even a type: blame type 0 (reserved) since none can be read.
            let ie_type = r.get(..2).map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
            return Some(Err(DecodeError::InvalidLength { ie_type }));
        };
        let ie_type = u16::from_be_bytes([hdr[0], hdr[1]]);
        let len = usize::from(u16::from_be_bytes([hdr[2], hdr[3]]));
        let Some(body) = r.get(IE_HEADER_LEN..IE_HEADER_LEN + len) else {
            self.rest = &[];
            return Some(Err(DecodeError::InvalidLength { ie_type }));
        };
        self.rest = r.get(IE_HEADER_LEN + len..).unwrap_or(&[]);
        if ie_type & ENTERPRISE_BIT != 0 {
            let Some(eid) = body.get(..2) else {
                self.rest = &[];
                return Some(Err(DecodeError::InvalidLength { ie_type }));
            };
            return Some(Ok(RawIe {
                ie_type,
                enterprise_id: Some(u16::from_be_bytes([eid[0], eid[1]])),
                value: body.get(2..).unwrap_or(&[]),
            }));
        }
        Some(Ok(RawIe {
            ie_type,
            enterprise_id: None,
            value: body,
        }))
    }
}

/// Appends one IE, filling the value with `f` and then its length. A value longer than 65535
/// octets cannot be framed; its length saturates (no PFCP IE comes near it).
pub fn put_ie(out: &mut Vec<u8>, ie_type: u16, f: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(&ie_type.to_be_bytes());
    let at = out.len();
    out.extend_from_slice(&[0, 0]);
    f(out);
    let len = out.len() - at - 2;
    let len = u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes();
    out[at] = len[0];
    out[at + 1] = len[1];
}

/// Keeps an unknown IE (or skips a vendor one).
pub(crate) fn keep_unknown(unknown: &mut Vec<UnknownIe>, ie: &RawIe<'_>) {
    if ie.enterprise_id.is_none() {
        unknown.push(UnknownIe {
            ie_type: ie.ie_type,
            value: ie.value.to_vec(),
        });
    }
}

/// Walks a sequence of IEs (a message body or a grouped IE's value): `take` decodes each IE
/// the caller models and answers `Ok(false)` for the others, which are kept
/// ([`keep_unknown`]) and returned.
pub(crate) fn walk<'a>(
    buf: &'a [u8],
    mut take: impl FnMut(&RawIe<'a>) -> Result<bool, DecodeError>,
) -> Result<Vec<UnknownIe>, DecodeError> {
    let mut unknown = Vec::new();
    for ie in IeIter::new(buf) {
        let ie = ie?;
        if !take(&ie)? {
            keep_unknown(&mut unknown, &ie);
        }
    }
    Ok(unknown)
}

pub(crate) fn emit_unknown(out: &mut Vec<u8>, unknown: &[UnknownIe]) {
    for u in unknown {
        put_ie(out, u.ie_type, |o| o.extend_from_slice(&u.value));
    }
}

/// TS 29.244 §7.6 (error handling): a repeated single-instance IE counts once, the first copy;
/// later copies are ignored rather than failing the whole message.
pub(crate) fn set_once<V>(
    slot: &mut Option<V>,
    v: Result<V, DecodeError>,
) -> Result<(), DecodeError> {
    if slot.is_none() {
        *slot = Some(v?);
    }
    Ok(())
}

pub(crate) fn mandatory<V>(slot: Option<V>, ie_type: u16) -> Result<V, DecodeError> {
    slot.ok_or(DecodeError::MandatoryIeMissing { ie_type })
}

/// A bounds-checked cursor over one IE's value; every short read is `InvalidLength` for it.
pub(crate) struct Cur<'a> {
    b: &'a [u8],
    ie_type: u16,
}

impl<'a> Cur<'a> {
    pub(crate) fn new(ie: &RawIe<'a>) -> Self {
        Cur {
            b: ie.value,
            ie_type: ie.ie_type,
        }
    }
    fn err(&self) -> DecodeError {
        DecodeError::InvalidLength {
            ie_type: self.ie_type,
        }
    }
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let (h, t) = self.b.split_at_checked(n).ok_or_else(|| self.err())?;
        self.b = t;
        Ok(h)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16, DecodeError> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    pub(crate) fn u24(&mut self) -> Result<u32, DecodeError> {
        let s = self.take(3)?;
        Ok(u32::from_be_bytes([0, s[0], s[1], s[2]]))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(crate) fn u40(&mut self) -> Result<u64, DecodeError> {
        let s = self.take(5)?;
        Ok(u64::from_be_bytes([0, 0, 0, s[0], s[1], s[2], s[3], s[4]]))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        let s = self.take(8)?;
        Ok(u64::from_be_bytes([
            s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
        ]))
    }
    pub(crate) fn ipv4(&mut self) -> Result<Ipv4Addr, DecodeError> {
        let s = self.take(4)?;
        Ok(Ipv4Addr::new(s[0], s[1], s[2], s[3]))
    }
    pub(crate) fn ipv6(&mut self) -> Result<Ipv6Addr, DecodeError> {
        let s = self.take(16)?;
        let mut a = [0u8; 16];
        a.copy_from_slice(s);
        Ok(Ipv6Addr::from(a))
    }
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.b)
    }
}

/// Decoders of fixed-size integer IEs (IDs, Precedence, time stamps, thresholds).
pub(crate) fn u8_ie(ie: &RawIe<'_>) -> Result<u8, DecodeError> {
    Cur::new(ie).u8()
}
pub(crate) fn u16_ie(ie: &RawIe<'_>) -> Result<u16, DecodeError> {
    Cur::new(ie).u16()
}
pub(crate) fn u32_ie(ie: &RawIe<'_>) -> Result<u32, DecodeError> {
    Cur::new(ie).u32()
}
pub(crate) fn put_u8(out: &mut Vec<u8>, t: u16, v: u8) {
    put_ie(out, t, |o| o.push(v));
}
pub(crate) fn put_u16(out: &mut Vec<u8>, t: u16, v: u16) {
    put_ie(out, t, |o| o.extend_from_slice(&v.to_be_bytes()));
}
pub(crate) fn put_u32(out: &mut Vec<u8>, t: u16, v: u32) {
    put_ie(out, t, |o| o.extend_from_slice(&v.to_be_bytes()));
}

fn incorrect(ie_type: u16) -> DecodeError {
    DecodeError::IeIncorrect { ie_type }
}

// ---------------------------------------------------------------------------------------------
// Scalar IEs
// ---------------------------------------------------------------------------------------------

/// Node ID (TS 29.244 §8.2.38).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeId {
    /// Type 0.
    Ipv4(Ipv4Addr),
    /// Type 1.
    Ipv6(Ipv6Addr),
    /// Type 2: FQDN, DNS label encoded (RFC 1035 §3.1), kept as sent.
    Fqdn(Vec<u8>),
}

impl NodeId {
    /// Decodes the value of a Node ID IE.
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        match c.u8()? & 0x0f {
            0 => Ok(NodeId::Ipv4(c.ipv4()?)),
            1 => Ok(NodeId::Ipv6(c.ipv6()?)),
            2 => {
                let f = c.rest();
                if f.is_empty() {
                    return Err(DecodeError::InvalidLength {
                        ie_type: ie.ie_type,
                    });
                }
                Ok(NodeId::Fqdn(f.to_vec()))
            }
            _ => Err(incorrect(ie.ie_type)),
        }
    }
    /// Appends the IE.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::NODE_ID, |o| match self {
            NodeId::Ipv4(a) => {
                o.push(0);
                o.extend_from_slice(&a.octets());
            }
            NodeId::Ipv6(a) => {
                o.push(1);
                o.extend_from_slice(&a.octets());
            }
            NodeId::Fqdn(f) => {
                o.push(2);
                o.extend_from_slice(f);
            }
        });
    }
}

/// F-SEID (TS 29.244 §8.2.37): a SEID and the node's address(es).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FSeid {
    /// SEID.
    pub seid: u64,
    /// IPv4 address (V4 flag).
    pub ipv4: Option<Ipv4Addr>,
    /// IPv6 address (V6 flag).
    pub ipv6: Option<Ipv6Addr>,
}

impl FSeid {
    /// Decodes the value of an F-SEID IE.
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        let flags = c.u8()?;
        let seid = c.u64()?;
        let ipv4 = if flags & 0x02 != 0 {
            Some(c.ipv4()?)
        } else {
            None
        };
        let ipv6 = if flags & 0x01 != 0 {
            Some(c.ipv6()?)
        } else {
            None
        };
        // §8.2.37: at least one of V4 and V6 shall be set.
        if ipv4.is_none() && ipv6.is_none() {
            return Err(incorrect(ie.ie_type));
        }
        Ok(FSeid { seid, ipv4, ipv6 })
    }
    /// Appends the IE.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::F_SEID, |o| {
            o.push(u8::from(self.ipv4.is_some()) << 1 | u8::from(self.ipv6.is_some()));
            o.extend_from_slice(&self.seid.to_be_bytes());
            if let Some(a) = self.ipv4 {
                o.extend_from_slice(&a.octets());
            }
            if let Some(a) = self.ipv6 {
                o.extend_from_slice(&a.octets());
            }
        });
    }
}

/// F-TEID (TS 29.244 §8.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FTeid {
    /// A TEID with its address(es) (CH=0).
    Assigned {
        /// TEID.
        teid: u32,
        /// IPv4 address (V4).
        ipv4: Option<Ipv4Addr>,
        /// IPv6 address (V6).
        ipv6: Option<Ipv6Addr>,
    },
    /// CH=1: the UP function allocates the TEID; V4/V6 say which address families it picks.
    Choose {
        /// V4 flag.
        ipv4: bool,
        /// V6 flag.
        ipv6: bool,
        /// Choose ID (CHID=1): PDRs with the same id share one allocated F-TEID.
        choose_id: Option<u8>,
    },
}

impl FTeid {
    /// Decodes the value of an F-TEID IE.
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        let flags = c.u8()?;
        let (v4, v6, ch, chid) = (
            flags & 0x01 != 0,
            flags & 0x02 != 0,
            flags & 0x04 != 0,
            flags & 0x08 != 0,
        );
        if ch {
            // §8.2.3: with CH=1 the TEID and addresses are absent; CHID only with CH.
            let choose_id = if chid { Some(c.u8()?) } else { None };
            return Ok(FTeid::Choose {
                ipv4: v4,
                ipv6: v6,
                choose_id,
            });
        }
        if chid {
            return Err(incorrect(ie.ie_type));
        }
        let teid = c.u32()?;
        let ipv4 = if v4 { Some(c.ipv4()?) } else { None };
        let ipv6 = if v6 { Some(c.ipv6()?) } else { None };
        if ipv4.is_none() && ipv6.is_none() {
            return Err(incorrect(ie.ie_type));
        }
        Ok(FTeid::Assigned { teid, ipv4, ipv6 })
    }
    /// Appends the IE.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::F_TEID, |o| match *self {
            FTeid::Assigned { teid, ipv4, ipv6 } => {
                o.push(u8::from(ipv4.is_some()) | u8::from(ipv6.is_some()) << 1);
                o.extend_from_slice(&teid.to_be_bytes());
                if let Some(a) = ipv4 {
                    o.extend_from_slice(&a.octets());
                }
                if let Some(a) = ipv6 {
                    o.extend_from_slice(&a.octets());
                }
            }
            FTeid::Choose {
                ipv4,
                ipv6,
                choose_id,
            } => {
                o.push(
                    u8::from(ipv4)
                        | u8::from(ipv6) << 1
                        | 0x04
                        | u8::from(choose_id.is_some()) << 3,
                );
                if let Some(id) = choose_id {
                    o.push(id);
                }
            }
        });
    }
}

/// Source / Destination Interface value (TS 29.244 §8.2.2, §8.2.24). Open for new values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Interface(pub u8);

impl Interface {
    /// Access (N3 towards the RAN).
    pub const ACCESS: Interface = Interface(0);
    /// Core (N6/N9 towards the DN).
    pub const CORE: Interface = Interface(1);
    /// SGi-LAN / N6-LAN.
    pub const SGI_LAN: Interface = Interface(2);
    /// CP-function.
    pub const CP_FUNCTION: Interface = Interface(3);
    /// 5G VN Internal.
    pub const VN_INTERNAL: Interface = Interface(4);

    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        Ok(Interface(Cur::new(ie).u8()? & 0x0f))
    }
}

/// UE IP Address (TS 29.244 §8.2.62).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UeIpAddress {
    /// IPv4 address (V4).
    pub ipv4: Option<Ipv4Addr>,
    /// IPv6 address (V6).
    pub ipv6: Option<Ipv6Addr>,
    /// S/D: true when the address is a destination address (downlink PDI), false for source.
    pub destination: bool,
    /// IPv6 Prefix Delegation Bits (IPv6D).
    pub ipv6_prefix_delegation_bits: Option<u8>,
    /// CHV4: the UPF allocates the IPv4 address.
    pub choose_v4: bool,
    /// CHV6: the UPF allocates the IPv6 address.
    pub choose_v6: bool,
    /// IPv6 Prefix Length (IP6PL).
    pub ipv6_prefix_length: Option<u8>,
}

impl UeIpAddress {
    /// Decodes the value of a UE IP Address IE.
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        let f = c.u8()?;
        let ipv4 = if f & 0x02 != 0 { Some(c.ipv4()?) } else { None };
        let ipv6 = if f & 0x01 != 0 { Some(c.ipv6()?) } else { None };
        let pdb = if f & 0x08 != 0 { Some(c.u8()?) } else { None };
        let pl = if f & 0x40 != 0 { Some(c.u8()?) } else { None };
        Ok(UeIpAddress {
            ipv4,
            ipv6,
            destination: f & 0x04 != 0,
            ipv6_prefix_delegation_bits: pdb,
            choose_v4: f & 0x10 != 0,
            choose_v6: f & 0x20 != 0,
            ipv6_prefix_length: pl,
        })
    }
    /// Appends the IE.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::UE_IP_ADDRESS, |o| {
            o.push(
                u8::from(self.ipv6.is_some())
                    | u8::from(self.ipv4.is_some()) << 1
                    | u8::from(self.destination) << 2
                    | u8::from(self.ipv6_prefix_delegation_bits.is_some()) << 3
                    | u8::from(self.choose_v4) << 4
                    | u8::from(self.choose_v6) << 5
                    | u8::from(self.ipv6_prefix_length.is_some()) << 6,
            );
            if let Some(a) = self.ipv4 {
                o.extend_from_slice(&a.octets());
            }
            if let Some(a) = self.ipv6 {
                o.extend_from_slice(&a.octets());
            }
            o.extend(self.ipv6_prefix_delegation_bits);
            o.extend(self.ipv6_prefix_length);
        });
    }
}

/// SDF Filter (TS 29.244 §8.2.5).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SdfFilter {
    /// Flow Description (FD): an IPFilterRule as text (TS 29.212 §5.4.2).
    pub flow_description: Option<Vec<u8>>,
    /// ToS Traffic Class (TTC).
    pub tos_traffic_class: Option<u16>,
    /// Security Parameter Index (SPI).
    pub spi: Option<u32>,
    /// Flow Label (FL), 24 bits.
    pub flow_label: Option<u32>,
    /// SDF Filter ID (BID).
    pub filter_id: Option<u32>,
}

impl SdfFilter {
    /// Decodes the value of an SDF Filter IE.
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        let f = c.u8()?;
        let _spare = c.u8()?;
        let flow_description = if f & 0x01 != 0 {
            let n = c.u16()?;
            Some(c.take(usize::from(n))?.to_vec())
        } else {
            None
        };
        let tos_traffic_class = if f & 0x02 != 0 { Some(c.u16()?) } else { None };
        let spi = if f & 0x04 != 0 { Some(c.u32()?) } else { None };
        let flow_label = if f & 0x08 != 0 { Some(c.u24()?) } else { None };
        let filter_id = if f & 0x10 != 0 { Some(c.u32()?) } else { None };
        Ok(SdfFilter {
            flow_description,
            tos_traffic_class,
            spi,
            flow_label,
            filter_id,
        })
    }
    /// Appends the IE.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::SDF_FILTER, |o| {
            o.push(
                u8::from(self.flow_description.is_some())
                    | u8::from(self.tos_traffic_class.is_some()) << 1
                    | u8::from(self.spi.is_some()) << 2
                    | u8::from(self.flow_label.is_some()) << 3
                    | u8::from(self.filter_id.is_some()) << 4,
            );
            o.push(0);
            if let Some(fd) = &self.flow_description {
                let n = u16::try_from(fd.len()).unwrap_or(u16::MAX);
                o.extend_from_slice(&n.to_be_bytes());
                o.extend_from_slice(fd.get(..usize::from(n)).unwrap_or(fd));
            }
            if let Some(v) = self.tos_traffic_class {
                o.extend_from_slice(&v.to_be_bytes());
            }
            if let Some(v) = self.spi {
                o.extend_from_slice(&v.to_be_bytes());
            }
            if let Some(v) = self.flow_label {
                o.extend_from_slice(&v.to_be_bytes()[1..]);
            }
            if let Some(v) = self.filter_id {
                o.extend_from_slice(&v.to_be_bytes());
            }
        });
    }
}

/// Outer Header Removal (TS 29.244 §8.2.64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OuterHeaderRemoval {
    /// Description: 0 GTP-U/UDP/IPv4, 1 GTP-U/UDP/IPv6, 2 UDP/IPv4, 3 UDP/IPv6, 4 IPv4, 5 IPv6,
    /// 6 GTP-U/UDP/IP, 7 VLAN S-TAG, 8 S-TAG and C-TAG.
    pub description: u8,
    /// GTP-U Extension Header Deletion octet, if present (bit 1: PDU Session Container).
    pub ext_header_deletion: Option<u8>,
}

impl OuterHeaderRemoval {
    /// GTP-U/UDP/IPv4.
    pub const GTPU_UDP_IPV4: u8 = 0;
    /// GTP-U/UDP/IPv6.
    pub const GTPU_UDP_IPV6: u8 = 1;
    /// GTP-U/UDP/IP (either family).
    pub const GTPU_UDP_IP: u8 = 6;

    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        let description = c.u8()?;
        let ext = c.rest().first().copied();
        Ok(OuterHeaderRemoval {
            description,
            ext_header_deletion: ext,
        })
    }
    fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::OUTER_HEADER_REMOVAL, |o| {
            o.push(self.description);
            o.extend(self.ext_header_deletion);
        });
    }
}

/// Apply Action flags (TS 29.244 §8.2.26): octet 5 in the low byte, octet 6 in the high byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApplyAction(pub u16);

impl ApplyAction {
    /// DROP.
    pub const DROP: u16 = 0x0001;
    /// FORW: forward.
    pub const FORW: u16 = 0x0002;
    /// BUFF: buffer.
    pub const BUFF: u16 = 0x0004;
    /// NOCP: notify the CP function on buffered downlink data.
    pub const NOCP: u16 = 0x0008;
    /// DUPL: duplicate.
    pub const DUPL: u16 = 0x0010;

    /// Whether all of `flags` are set.
    pub fn has(self, flags: u16) -> bool {
        self.0 & flags == flags
    }
    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        let lo = c.u8()?;
        let hi = c.rest().first().copied().unwrap_or(0);
        Ok(ApplyAction(u16::from(hi) << 8 | u16::from(lo)))
    }
    fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::APPLY_ACTION, |o| {
            let [hi, lo] = self.0.to_be_bytes();
            o.push(lo);
            if hi != 0 {
                o.push(hi);
            }
        });
    }
}

/// Outer Header Creation (TS 29.244 §8.2.56).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OuterHeaderCreation {
    /// Description (octets 5-6): bit 1 GTP-U/UDP/IPv4, 2 GTP-U/UDP/IPv6, 3 UDP/IPv4,
    /// 4 UDP/IPv6, 5 IPv4, 6 IPv6, 7 C-TAG, 8 S-TAG; octet 6 bit 1 N19, bit 2 N6.
    pub description: u16,
    /// TEID (GTP-U descriptions).
    pub teid: Option<u32>,
    /// IPv4 address.
    pub ipv4: Option<Ipv4Addr>,
    /// IPv6 address.
    pub ipv6: Option<Ipv6Addr>,
    /// UDP port (UDP descriptions).
    pub port: Option<u16>,
}

impl OuterHeaderCreation {
    /// Description bit: GTP-U/UDP/IPv4 (octet 5 bit 1).
    pub const GTPU_UDP_IPV4: u16 = 0x0100;
    /// Description bit: GTP-U/UDP/IPv6.
    pub const GTPU_UDP_IPV6: u16 = 0x0200;
    /// Description bit: UDP/IPv4.
    pub const UDP_IPV4: u16 = 0x0400;
    /// Description bit: UDP/IPv6.
    pub const UDP_IPV6: u16 = 0x0800;
    /// Description bit: IPv4.
    pub const IPV4: u16 = 0x1000;
    /// Description bit: IPv6.
    pub const IPV6: u16 = 0x2000;

    /// GTP-U/UDP/IPv4 towards `teid` at `addr`, the common N3/N9 case.
    pub fn gtpu_ipv4(teid: u32, addr: Ipv4Addr) -> Self {
        OuterHeaderCreation {
            description: Self::GTPU_UDP_IPV4,
            teid: Some(teid),
            ipv4: Some(addr),
            ipv6: None,
            port: None,
        }
    }

    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        let d = c.u16()?;
        let any = |m: u16| d & m != 0;
        let teid = if any(Self::GTPU_UDP_IPV4 | Self::GTPU_UDP_IPV6) {
            Some(c.u32()?)
        } else {
            None
        };
        let ipv4 = if any(Self::GTPU_UDP_IPV4 | Self::UDP_IPV4 | Self::IPV4) {
            Some(c.ipv4()?)
        } else {
            None
        };
        let ipv6 = if any(Self::GTPU_UDP_IPV6 | Self::UDP_IPV6 | Self::IPV6) {
            Some(c.ipv6()?)
        } else {
            None
        };
        let port = if any(Self::UDP_IPV4 | Self::UDP_IPV6) {
            Some(c.u16()?)
        } else {
            None
        };
        // C-TAG / S-TAG (3 octets each) would follow; not modelled, so their presence is an
        // unsupported description rather than silently lost data.
        if any(0x4000 | 0x8000) {
            return Err(incorrect(ie.ie_type));
        }
        Ok(OuterHeaderCreation {
            description: d,
            teid,
            ipv4,
            ipv6,
            port,
        })
    }
    fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::OUTER_HEADER_CREATION, |o| {
            o.extend_from_slice(&self.description.to_be_bytes());
            if let Some(v) = self.teid {
                o.extend_from_slice(&v.to_be_bytes());
            }
            if let Some(a) = self.ipv4 {
                o.extend_from_slice(&a.octets());
            }
            if let Some(a) = self.ipv6 {
                o.extend_from_slice(&a.octets());
            }
            if let Some(p) = self.port {
                o.extend_from_slice(&p.to_be_bytes());
            }
        });
    }
}

/// Gate Status (TS 29.244 §8.2.7): 0 OPEN, 1 CLOSED per direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GateStatus {
    /// UL gate (0 open, 1 closed).
    pub ul: u8,
    /// DL gate (0 open, 1 closed).
    pub dl: u8,
}

impl GateStatus {
    /// Gate open.
    pub const OPEN: u8 = 0;
    /// Gate closed.
    pub const CLOSED: u8 = 1;

    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let v = Cur::new(ie).u8()?;
        Ok(GateStatus {
            ul: (v >> 2) & 0x03,
            dl: v & 0x03,
        })
    }
    fn emit(&self, out: &mut Vec<u8>) {
        put_u8(out, ty::GATE_STATUS, (self.ul & 3) << 2 | (self.dl & 3));
    }
}

/// MBR (TS 29.244 §8.2.8): kilobits per second, 40 bits each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mbr {
    /// Uplink MBR.
    pub ul_kbps: u64,
    /// Downlink MBR.
    pub dl_kbps: u64,
}

impl Mbr {
    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        Ok(Mbr {
            ul_kbps: c.u40()?,
            dl_kbps: c.u40()?,
        })
    }
    fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::MBR, |o| {
            o.extend_from_slice(&self.ul_kbps.to_be_bytes()[3..]);
            o.extend_from_slice(&self.dl_kbps.to_be_bytes()[3..]);
        });
    }
}

/// Measurement Method flags (TS 29.244 §8.2.40).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MeasurementMethod(pub u8);

impl MeasurementMethod {
    /// DURAT: duration.
    pub const DURAT: u8 = 0x01;
    /// VOLUM: volume.
    pub const VOLUM: u8 = 0x02;
    /// EVENT.
    pub const EVENT: u8 = 0x04;
}

/// Reporting Triggers (TS 29.244 §8.2.19) or Usage Report Trigger (§8.2.41) bits: octet 5 in
/// the low byte, octet 6 next, octet 7 in bits 16..24.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Triggers(pub u32);

impl Triggers {
    /// PERIO: periodic reporting.
    pub const PERIO: u32 = 0x01;
    /// VOLTH: volume threshold.
    pub const VOLTH: u32 = 0x02;
    /// TIMTH: time threshold.
    pub const TIMTH: u32 = 0x04;
    /// START: start of traffic.
    pub const START: u32 = 0x10;
    /// STOPT: stop of traffic.
    pub const STOPT: u32 = 0x20;
    /// Usage Report Trigger TERMR (octet 6 bit 4): termination report.
    pub const TERMR: u32 = 0x0800;

    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let v = Cur::new(ie).rest();
        if v.is_empty() {
            return Err(DecodeError::InvalidLength {
                ie_type: ie.ie_type,
            });
        }
        let b = |i: usize| u32::from(v.get(i).copied().unwrap_or(0));
        Ok(Triggers(b(0) | b(1) << 8 | b(2) << 16))
    }
    /// Appends as IE `t` with at least `min` octets (2 for Reporting Triggers, 3 for Usage
    /// Report Trigger in Rel-15 and later).
    fn emit(&self, out: &mut Vec<u8>, t: u16, min: usize) {
        let bytes = self.0.to_le_bytes();
        let used = if bytes[2] != 0 { 3 } else { min.clamp(1, 3) };
        put_ie(out, t, |o| o.extend_from_slice(&bytes[..used]));
    }
}

/// Volume Threshold (§8.2.13) and Volume Measurement (§8.2.44) share this layout: a flags octet
/// and 8-octet counters present per flag. Thresholds use only the first three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Volume {
    /// TOVOL: total octets.
    pub total: Option<u64>,
    /// ULVOL: uplink octets.
    pub uplink: Option<u64>,
    /// DLVOL: downlink octets.
    pub downlink: Option<u64>,
    /// TONOP: total packets (measurement only).
    pub total_packets: Option<u64>,
    /// ULNOP: uplink packets (measurement only).
    pub uplink_packets: Option<u64>,
    /// DLNOP: downlink packets (measurement only).
    pub downlink_packets: Option<u64>,
}

impl Volume {
    fn fields(&self) -> [Option<u64>; 6] {
        [
            self.total,
            self.uplink,
            self.downlink,
            self.total_packets,
            self.uplink_packets,
            self.downlink_packets,
        ]
    }
    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut c = Cur::new(ie);
        let f = c.u8()?;
        let mut v = [None; 6];
        for (i, slot) in v.iter_mut().enumerate() {
            if f & (1 << i) != 0 {
                *slot = Some(c.u64()?);
            }
        }
        Ok(Volume {
            total: v[0],
            uplink: v[1],
            downlink: v[2],
            total_packets: v[3],
            uplink_packets: v[4],
            downlink_packets: v[5],
        })
    }
    fn emit(&self, out: &mut Vec<u8>, t: u16) {
        put_ie(out, t, |o| {
            let fields = self.fields();
            let mut f = 0u8;
            for (i, x) in fields.iter().enumerate() {
                f |= u8::from(x.is_some()) << i;
            }
            o.push(f);
            for x in fields.iter().flatten() {
                o.extend_from_slice(&x.to_be_bytes());
            }
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Grouped IEs
// ---------------------------------------------------------------------------------------------

/// PDI (TS 29.244 §7.5.2.2, Table 7.5.2.2-2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pdi {
    /// Source Interface (M).
    pub source_interface: Interface,
    /// Local F-TEID, possibly CHOOSE.
    pub f_teid: Option<FTeid>,
    /// Network Instance, as sent.
    pub network_instance: Option<Vec<u8>>,
    /// UE IP Address.
    pub ue_ip_address: Option<UeIpAddress>,
    /// SDF Filters.
    pub sdf_filters: Vec<SdfFilter>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

impl Pdi {
    /// A PDI with only the source interface.
    pub fn new(source_interface: Interface) -> Self {
        Pdi {
            source_interface,
            f_teid: None,
            network_instance: None,
            ue_ip_address: None,
            sdf_filters: Vec::new(),
            unknown: Vec::new(),
        }
    }
    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let (mut si, mut ft, mut ni, mut ue) = (None, None, None, None);
        let mut sdf = Vec::new();
        let unknown = walk(ie.value, |c| {
            match c.ie_type {
                ty::SOURCE_INTERFACE => set_once(&mut si, Interface::parse(c))?,
                ty::F_TEID => set_once(&mut ft, FTeid::parse(c))?,
                ty::NETWORK_INSTANCE => set_once(&mut ni, Ok(c.value.to_vec()))?,
                ty::UE_IP_ADDRESS => set_once(&mut ue, UeIpAddress::parse(c))?,
                ty::SDF_FILTER => sdf.push(SdfFilter::parse(c)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Pdi {
            source_interface: mandatory(si, ty::SOURCE_INTERFACE)?,
            f_teid: ft,
            network_instance: ni,
            ue_ip_address: ue,
            sdf_filters: sdf,
            unknown,
        })
    }
    fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::PDI, |o| {
            put_u8(o, ty::SOURCE_INTERFACE, self.source_interface.0 & 0x0f);
            if let Some(f) = &self.f_teid {
                f.emit(o);
            }
            if let Some(n) = &self.network_instance {
                put_ie(o, ty::NETWORK_INSTANCE, |o| o.extend_from_slice(n));
            }
            if let Some(u) = &self.ue_ip_address {
                u.emit(o);
            }
            for s in &self.sdf_filters {
                s.emit(o);
            }
            emit_unknown(o, &self.unknown);
        });
    }
}

/// Create PDR (TS 29.244 §7.5.2.2) and Update PDR (§7.5.4.2): in Update every field but the
/// PDR ID is optional, so one struct serves both with `Option`s checked per use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePdr {
    /// PDR ID (M).
    pub pdr_id: u16,
    /// Precedence (M).
    pub precedence: u32,
    /// PDI (M).
    pub pdi: Pdi,
    /// Outer Header Removal.
    pub outer_header_removal: Option<OuterHeaderRemoval>,
    /// FAR ID.
    pub far_id: Option<u32>,
    /// URR IDs.
    pub urr_ids: Vec<u32>,
    /// QER IDs.
    pub qer_ids: Vec<u32>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

/// Update PDR (TS 29.244 §7.5.4.2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UpdatePdr {
    /// PDR ID (M).
    pub pdr_id: u16,
    /// Outer Header Removal.
    pub outer_header_removal: Option<OuterHeaderRemoval>,
    /// Precedence.
    pub precedence: Option<u32>,
    /// PDI.
    pub pdi: Option<Pdi>,
    /// FAR ID.
    pub far_id: Option<u32>,
    /// URR IDs.
    pub urr_ids: Vec<u32>,
    /// QER IDs.
    pub qer_ids: Vec<u32>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

/// Fields common to Create and Update PDR, collected in one pass.
#[derive(Default)]
struct PdrFields {
    pdr_id: Option<u16>,
    precedence: Option<u32>,
    pdi: Option<Pdi>,
    ohr: Option<OuterHeaderRemoval>,
    far_id: Option<u32>,
    urr_ids: Vec<u32>,
    qer_ids: Vec<u32>,
    unknown: Vec<UnknownIe>,
}

impl PdrFields {
    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let mut f = PdrFields::default();
        f.unknown = walk(ie.value, |c| {
            match c.ie_type {
                ty::PDR_ID => set_once(&mut f.pdr_id, u16_ie(c))?,
                ty::PRECEDENCE => set_once(&mut f.precedence, u32_ie(c))?,
                ty::PDI => set_once(&mut f.pdi, Pdi::parse(c))?,
                ty::OUTER_HEADER_REMOVAL => set_once(&mut f.ohr, OuterHeaderRemoval::parse(c))?,
                ty::FAR_ID => set_once(&mut f.far_id, u32_ie(c))?,
                ty::URR_ID => f.urr_ids.push(u32_ie(c)?),
                ty::QER_ID => f.qer_ids.push(u32_ie(c)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(f)
    }
}

#[allow(clippy::too_many_arguments)]
fn emit_pdr(
    out: &mut Vec<u8>,
    t: u16,
    pdr_id: u16,
    ohr: Option<&OuterHeaderRemoval>,
    precedence: Option<u32>,
    pdi: Option<&Pdi>,
    far_id: Option<u32>,
    urr_ids: &[u32],
    qer_ids: &[u32],
    unknown: &[UnknownIe],
) {
    put_ie(out, t, |o| {
        put_u16(o, ty::PDR_ID, pdr_id);
        if let Some(p) = precedence {
            put_u32(o, ty::PRECEDENCE, p);
        }
        if let Some(p) = pdi {
            p.emit(o);
        }
        if let Some(r) = ohr {
            r.emit(o);
        }
        if let Some(f) = far_id {
            put_u32(o, ty::FAR_ID, f);
        }
        for &u in urr_ids {
            put_u32(o, ty::URR_ID, u);
        }
        for &q in qer_ids {
            put_u32(o, ty::QER_ID, q);
        }
        emit_unknown(o, unknown);
    });
}

impl CreatePdr {
    /// Decodes a Create PDR IE.
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let f = PdrFields::parse(ie)?;
        Ok(CreatePdr {
            pdr_id: mandatory(f.pdr_id, ty::PDR_ID)?,
            precedence: mandatory(f.precedence, ty::PRECEDENCE)?,
            pdi: mandatory(f.pdi, ty::PDI)?,
            outer_header_removal: f.ohr,
            far_id: f.far_id,
            urr_ids: f.urr_ids,
            qer_ids: f.qer_ids,
            unknown: f.unknown,
        })
    }
    /// Appends the IE.
    pub fn emit(&self, out: &mut Vec<u8>) {
        emit_pdr(
            out,
            ty::CREATE_PDR,
            self.pdr_id,
            self.outer_header_removal.as_ref(),
            Some(self.precedence),
            Some(&self.pdi),
            self.far_id,
            &self.urr_ids,
            &self.qer_ids,
            &self.unknown,
        );
    }
}

impl UpdatePdr {
    /// Decodes an Update PDR IE.
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let f = PdrFields::parse(ie)?;
        Ok(UpdatePdr {
            pdr_id: mandatory(f.pdr_id, ty::PDR_ID)?,
            outer_header_removal: f.ohr,
            precedence: f.precedence,
            pdi: f.pdi,
            far_id: f.far_id,
            urr_ids: f.urr_ids,
            qer_ids: f.qer_ids,
            unknown: f.unknown,
        })
    }
    /// Appends the IE.
    pub fn emit(&self, out: &mut Vec<u8>) {
        emit_pdr(
            out,
            ty::UPDATE_PDR,
            self.pdr_id,
            self.outer_header_removal.as_ref(),
            self.precedence,
            self.pdi.as_ref(),
            self.far_id,
            &self.urr_ids,
            &self.qer_ids,
            &self.unknown,
        );
    }
}

/// Forwarding Parameters (§7.5.2.3-2) and Update Forwarding Parameters (§7.5.4.3-2); the
/// Destination Interface is mandatory only in the former ([`crate::presence`] checks it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ForwardingParameters {
    /// Destination Interface.
    pub destination_interface: Option<Interface>,
    /// Network Instance.
    pub network_instance: Option<Vec<u8>>,
    /// Outer Header Creation.
    pub outer_header_creation: Option<OuterHeaderCreation>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

impl ForwardingParameters {
    fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let (mut di, mut ni, mut ohc) = (None, None, None);
        let unknown = walk(ie.value, |c| {
            match c.ie_type {
                ty::DESTINATION_INTERFACE => set_once(&mut di, Interface::parse(c))?,
                ty::NETWORK_INSTANCE => set_once(&mut ni, Ok(c.value.to_vec()))?,
                ty::OUTER_HEADER_CREATION => set_once(&mut ohc, OuterHeaderCreation::parse(c))?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(ForwardingParameters {
            destination_interface: di,
            network_instance: ni,
            outer_header_creation: ohc,
            unknown,
        })
    }
    fn emit(&self, out: &mut Vec<u8>, t: u16) {
        put_ie(out, t, |o| {
            if let Some(d) = self.destination_interface {
                put_u8(o, ty::DESTINATION_INTERFACE, d.0 & 0x0f);
            }
            if let Some(n) = &self.network_instance {
                put_ie(o, ty::NETWORK_INSTANCE, |o| o.extend_from_slice(n));
            }
            if let Some(h) = &self.outer_header_creation {
                h.emit(o);
            }
            emit_unknown(o, &self.unknown);
        });
    }
}

/// Create FAR (§7.5.2.3) and Update FAR (§7.5.4.3): `apply_action` is mandatory in Create
/// (checked with the other presence rules in [`crate::presence`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Far {
    /// FAR ID (M).
    pub far_id: u32,
    /// Apply Action (M in Create FAR).
    pub apply_action: Option<ApplyAction>,
    /// Forwarding Parameters (Create) or Update Forwarding Parameters (Update).
    pub forwarding_parameters: Option<ForwardingParameters>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

impl Far {
    /// Decodes a Create FAR (`create`) or Update FAR IE.
    pub fn parse(ie: &RawIe<'_>, create: bool) -> Result<Self, DecodeError> {
        let fp_type = if create {
            ty::FORWARDING_PARAMETERS
        } else {
            ty::UPDATE_FORWARDING_PARAMETERS
        };
        let (mut id, mut aa, mut fp) = (None, None, None);
        let unknown = walk(ie.value, |c| {
            match c.ie_type {
                ty::FAR_ID => set_once(&mut id, u32_ie(c))?,
                ty::APPLY_ACTION => set_once(&mut aa, ApplyAction::parse(c))?,
                t if t == fp_type => set_once(&mut fp, ForwardingParameters::parse(c))?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Far {
            far_id: mandatory(id, ty::FAR_ID)?,
            apply_action: aa,
            forwarding_parameters: fp,
            unknown,
        })
    }
    /// Appends as Create FAR (`create`) or Update FAR.
    pub fn emit(&self, out: &mut Vec<u8>, create: bool) {
        let (t, fpt) = if create {
            (ty::CREATE_FAR, ty::FORWARDING_PARAMETERS)
        } else {
            (ty::UPDATE_FAR, ty::UPDATE_FORWARDING_PARAMETERS)
        };
        put_ie(out, t, |o| {
            put_u32(o, ty::FAR_ID, self.far_id);
            if let Some(a) = &self.apply_action {
                a.emit(o);
            }
            if let Some(f) = &self.forwarding_parameters {
                f.emit(o, fpt);
            }
            emit_unknown(o, &self.unknown);
        });
    }
}

/// Create QER (§7.5.2.5) and Update QER (§7.5.4.5): `gate_status` is mandatory in Create
/// ([`crate::presence`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Qer {
    /// QER ID (M).
    pub qer_id: u32,
    /// Gate Status (M in Create).
    pub gate_status: Option<GateStatus>,
    /// Maximum Bitrate.
    pub mbr: Option<Mbr>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

impl Qer {
    /// Decodes a Create QER or Update QER IE (they share their layout).
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let (mut id, mut gs, mut mbr) = (None, None, None);
        let unknown = walk(ie.value, |c| {
            match c.ie_type {
                ty::QER_ID => set_once(&mut id, u32_ie(c))?,
                ty::GATE_STATUS => set_once(&mut gs, GateStatus::parse(c))?,
                ty::MBR => set_once(&mut mbr, Mbr::parse(c))?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Qer {
            qer_id: mandatory(id, ty::QER_ID)?,
            gate_status: gs,
            mbr,
            unknown,
        })
    }
    /// Appends as Create QER (`create`) or Update QER.
    pub fn emit(&self, out: &mut Vec<u8>, create: bool) {
        let t = if create {
            ty::CREATE_QER
        } else {
            ty::UPDATE_QER
        };
        put_ie(out, t, |o| {
            put_u32(o, ty::QER_ID, self.qer_id);
            if let Some(g) = &self.gate_status {
                g.emit(o);
            }
            if let Some(m) = &self.mbr {
                m.emit(o);
            }
            emit_unknown(o, &self.unknown);
        });
    }
}

/// Create URR (§7.5.2.4) and Update URR (§7.5.4.4): Measurement Method and Reporting Triggers
/// are mandatory in Create ([`crate::presence`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Urr {
    /// URR ID (M).
    pub urr_id: u32,
    /// Measurement Method (M in Create).
    pub measurement_method: Option<MeasurementMethod>,
    /// Reporting Triggers (M in Create).
    pub reporting_triggers: Option<Triggers>,
    /// Volume Threshold (total/UL/DL octets).
    pub volume_threshold: Option<Volume>,
    /// Time Threshold, seconds.
    pub time_threshold: Option<u32>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

impl Urr {
    /// Decodes a Create URR or Update URR IE (they share their layout).
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let (mut id, mut mm, mut rt, mut vt, mut tt) = (None, None, None, None, None);
        let unknown = walk(ie.value, |c| {
            match c.ie_type {
                ty::URR_ID => set_once(&mut id, u32_ie(c))?,
                ty::MEASUREMENT_METHOD => set_once(&mut mm, u8_ie(c).map(MeasurementMethod))?,
                ty::REPORTING_TRIGGERS => set_once(&mut rt, Triggers::parse(c))?,
                ty::VOLUME_THRESHOLD => set_once(&mut vt, Volume::parse(c))?,
                ty::TIME_THRESHOLD => set_once(&mut tt, u32_ie(c))?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Urr {
            urr_id: mandatory(id, ty::URR_ID)?,
            measurement_method: mm,
            reporting_triggers: rt,
            volume_threshold: vt,
            time_threshold: tt,
            unknown,
        })
    }
    /// Appends as Create URR (`create`) or Update URR.
    pub fn emit(&self, out: &mut Vec<u8>, create: bool) {
        let t = if create {
            ty::CREATE_URR
        } else {
            ty::UPDATE_URR
        };
        put_ie(out, t, |o| {
            put_u32(o, ty::URR_ID, self.urr_id);
            if let Some(m) = self.measurement_method {
                put_u8(o, ty::MEASUREMENT_METHOD, m.0);
            }
            if let Some(r) = &self.reporting_triggers {
                r.emit(o, ty::REPORTING_TRIGGERS, 2);
            }
            if let Some(v) = &self.volume_threshold {
                v.emit(o, ty::VOLUME_THRESHOLD);
            }
            if let Some(t) = self.time_threshold {
                put_u32(o, ty::TIME_THRESHOLD, t);
            }
            emit_unknown(o, &self.unknown);
        });
    }
}

/// Created PDR (TS 29.244 §7.5.3.2): the F-TEID the UP function chose for a CHOOSE request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedPdr {
    /// PDR ID (M).
    pub pdr_id: u16,
    /// Local F-TEID.
    pub f_teid: Option<FTeid>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

impl CreatedPdr {
    /// Decodes a Created PDR IE.
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let (mut id, mut ft) = (None, None);
        let unknown = walk(ie.value, |c| {
            match c.ie_type {
                ty::PDR_ID => set_once(&mut id, u16_ie(c))?,
                ty::F_TEID => set_once(&mut ft, FTeid::parse(c))?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(CreatedPdr {
            pdr_id: mandatory(id, ty::PDR_ID)?,
            f_teid: ft,
            unknown,
        })
    }
    /// Appends the IE.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_ie(out, ty::CREATED_PDR, |o| {
            put_u16(o, ty::PDR_ID, self.pdr_id);
            if let Some(f) = &self.f_teid {
                f.emit(o);
            }
            emit_unknown(o, &self.unknown);
        });
    }
}

/// Usage Report (TS 29.244 §7.5.5.2 in Session Report Request, §7.5.7.2 in Session Deletion
/// Response, §7.5.5.2 in Session Modification Response; IE types 80, 79, 78).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UsageReport {
    /// URR ID (M).
    pub urr_id: u32,
    /// UR-SEQN (M).
    pub ur_seqn: u32,
    /// Usage Report Trigger (M).
    pub trigger: Triggers,
    /// Start Time (NTP seconds).
    pub start_time: Option<u32>,
    /// End Time (NTP seconds).
    pub end_time: Option<u32>,
    /// Volume Measurement.
    pub volume: Option<Volume>,
    /// Duration Measurement, seconds.
    pub duration: Option<u32>,
    /// IEs not modelled here.
    pub unknown: Vec<UnknownIe>,
}

impl UsageReport {
    /// Decodes a Usage Report IE of any of the three types.
    pub fn parse(ie: &RawIe<'_>) -> Result<Self, DecodeError> {
        let (mut id, mut sq, mut tr, mut st, mut et, mut vm, mut dm) =
            (None, None, None, None, None, None, None);
        let unknown = walk(ie.value, |c| {
            match c.ie_type {
                ty::URR_ID => set_once(&mut id, u32_ie(c))?,
                ty::UR_SEQN => set_once(&mut sq, u32_ie(c))?,
                ty::USAGE_REPORT_TRIGGER => set_once(&mut tr, Triggers::parse(c))?,
                ty::START_TIME => set_once(&mut st, u32_ie(c))?,
                ty::END_TIME => set_once(&mut et, u32_ie(c))?,
                ty::VOLUME_MEASUREMENT => set_once(&mut vm, Volume::parse(c))?,
                ty::DURATION_MEASUREMENT => set_once(&mut dm, u32_ie(c))?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(UsageReport {
            urr_id: mandatory(id, ty::URR_ID)?,
            ur_seqn: mandatory(sq, ty::UR_SEQN)?,
            trigger: mandatory(tr, ty::USAGE_REPORT_TRIGGER)?,
            start_time: st,
            end_time: et,
            volume: vm,
            duration: dm,
            unknown,
        })
    }
    /// Appends the IE as type `t` (78, 79 or 80 depending on the message).
    pub fn emit(&self, out: &mut Vec<u8>, t: u16) {
        put_ie(out, t, |o| {
            put_u32(o, ty::URR_ID, self.urr_id);
            put_u32(o, ty::UR_SEQN, self.ur_seqn);
            self.trigger.emit(o, ty::USAGE_REPORT_TRIGGER, 3);
            if let Some(v) = self.start_time {
                put_u32(o, ty::START_TIME, v);
            }
            if let Some(v) = self.end_time {
                put_u32(o, ty::END_TIME, v);
            }
            if let Some(v) = &self.volume {
                v.emit(o, ty::VOLUME_MEASUREMENT);
            }
            if let Some(v) = self.duration {
                put_u32(o, ty::DURATION_MEASUREMENT, v);
            }
            emit_unknown(o, &self.unknown);
        });
    }
}

/// Decodes a Remove PDR/FAR/QER/URR IE: a group holding just the rule ID (`id_type`).
pub(crate) fn parse_remove(ie: &RawIe<'_>, id_type: u16) -> Result<u32, DecodeError> {
    let mut id = None;
    for c in IeIter::new(ie.value) {
        let c = c?;
        if c.ie_type == id_type {
            let v = if id_type == ty::PDR_ID {
                u16_ie(&c).map(u32::from)
            } else {
                u32_ie(&c)
            };
            set_once(&mut id, v)?;
        }
    }
    mandatory(id, id_type)
}

/// Appends a Remove PDR/FAR/QER/URR IE.
pub(crate) fn emit_remove(out: &mut Vec<u8>, t: u16, id_type: u16, id: u32) {
    put_ie(out, t, |o| {
        if id_type == ty::PDR_ID {
            put_u16(o, id_type, u16::try_from(id).unwrap_or(u16::MAX));
        } else {
            put_u32(o, id_type, id);
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn one(buf: &[u8]) -> RawIe<'_> {
        IeIter::new(buf).next().unwrap().unwrap()
    }

    #[test]
    fn tlv_framing_errors() {
        // Type 96 claiming 4 octets with 3 present.
        let mut it = IeIter::new(&[0, 96, 0, 4, 1, 2, 3]);
        assert_eq!(
            it.next(),
            Some(Err(DecodeError::InvalidLength { ie_type: 96 }))
        );
        assert_eq!(it.next(), None);
        // Vendor IE: type 0x8001, length 3 = enterprise 0x0102 + 1 octet.
        let v = one(&[0x80, 0x01, 0, 3, 1, 2, 9]);
        assert_eq!(v.enterprise_id, Some(0x0102));
        assert_eq!(v.value, &[9]);
    }

    #[test]
    fn f_teid_choose_and_assigned() {
        // §8.2.3: flags CH|CHID|V4 = 0x0d, Choose ID 7.
        let b = [0, 21, 0, 2, 0x0d, 7];
        let f = FTeid::parse(&one(&b)).unwrap();
        assert_eq!(
            f,
            FTeid::Choose {
                ipv4: true,
                ipv6: false,
                choose_id: Some(7)
            }
        );
        let mut out = Vec::new();
        f.emit(&mut out);
        assert_eq!(out, b);
        // V4, TEID 0x11223344, 10.0.0.1.
        let b = [0, 21, 0, 9, 0x01, 0x11, 0x22, 0x33, 0x44, 10, 0, 0, 1];
        let f = FTeid::parse(&one(&b)).unwrap();
        let mut out = Vec::new();
        f.emit(&mut out);
        assert_eq!(out, b);
        // No address flags with CH=0 is incorrect.
        let b = [0, 21, 0, 5, 0x00, 1, 2, 3, 4];
        assert_eq!(
            FTeid::parse(&one(&b)),
            Err(DecodeError::IeIncorrect { ie_type: 21 })
        );
    }

    #[test]
    fn outer_header_creation_gtpu_v4() {
        // §8.2.56: description 0x0100 (GTP-U/UDP/IPv4), TEID 1, 192.168.0.2.
        let b = [0, 84, 0, 10, 0x01, 0x00, 0, 0, 0, 1, 192, 168, 0, 2];
        let o = OuterHeaderCreation::parse(&one(&b)).unwrap();
        assert_eq!(
            o,
            OuterHeaderCreation::gtpu_ipv4(1, Ipv4Addr::new(192, 168, 0, 2))
        );
        let mut out = Vec::new();
        o.emit(&mut out);
        assert_eq!(out, b);
    }

    #[test]
    fn volume_measurement() {
        // §8.2.44: flags TOVOL|DLVOL = 0x05, total 1000, downlink 600.
        let mut b = vec![0, 66, 0, 17, 0x05];
        b.extend_from_slice(&1000u64.to_be_bytes());
        b.extend_from_slice(&600u64.to_be_bytes());
        let v = Volume::parse(&one(&b)).unwrap();
        assert_eq!(v.total, Some(1000));
        assert_eq!(v.downlink, Some(600));
        assert_eq!(v.uplink, None);
        let mut out = Vec::new();
        v.emit(&mut out, ty::VOLUME_MEASUREMENT);
        assert_eq!(out, b);
    }

    #[test]
    fn create_pdr_missing_pdi() {
        // Create PDR holding PDR ID 1 and Precedence 255 only.
        let b = [0, 1, 0, 14, 0, 56, 0, 2, 0, 1, 0, 29, 0, 4, 0, 0, 0, 255];
        assert_eq!(
            CreatePdr::parse(&one(&b)),
            Err(DecodeError::MandatoryIeMissing { ie_type: ty::PDI })
        );
    }
}
