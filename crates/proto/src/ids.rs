//! 3GPP identities that steer5g passes around: PLMN, S-NSSAI, TAC/TAI, GUAMI and the
//! Global RAN Node ID.
//!
//! These are plain values of our own, independent of any codec, so that configuration,
//! the NFs and the load generator agree on them without touching ASN.1 types. The
//! `ngap` module converts them to and from the wire. Every constructor checks the
//! field widths that the specifications give, and nothing here panics.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// Why a value is not a valid identity.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum IdError {
    /// An MCC is three decimal digits (TS 23.003 §2.2).
    #[error("{0:?} is not an MCC: three decimal digits")]
    Mcc(String),
    /// An MNC is two or three decimal digits (TS 23.003 §2.2).
    #[error("{0:?} is not an MNC: two or three decimal digits")]
    Mnc(String),
    /// A PLMN written as text is `MCC-MNC` or the 5 or 6 digits run together.
    #[error("{0:?} is not a PLMN: write MCC-MNC, as 001-01")]
    PlmnText(String),
    /// Three octets that are not a TBCD-coded PLMN identity.
    #[error("octets {0:02x?} are not a TBCD PLMN identity")]
    PlmnOctets([u8; 3]),
    /// A field wider than the bits the specification gives it.
    #[error("{what} {value:#x} does not fit in {bits} bits")]
    TooWide {
        /// The field.
        what: &'static str,
        /// The value given.
        value: u64,
        /// Its width.
        bits: u8,
    },
    /// A gNB ID is 22 to 32 bits long (TS 38.413 §9.3.1.6).
    #[error("a gNB ID has 22 to 32 bits, not {0}")]
    GnbIdLength(u8),
    /// Text that is not a number of the expected form.
    #[error("{0:?} is not a valid number here")]
    Number(String),
}

fn fits(what: &'static str, value: u64, bits: u8) -> Result<(), IdError> {
    if bits < 64 && value >> bits != 0 {
        return Err(IdError::TooWide { what, value, bits });
    }
    Ok(())
}

fn digits_of(text: &str) -> Option<Vec<u8>> {
    text.bytes()
        .map(|b| b.is_ascii_digit().then(|| b - b'0'))
        .collect()
}

/// A PLMN identity: MCC and a 2- or 3-digit MNC (TS 23.003 §2.2).
///
/// The MNC length matters: 001-01 and 001-010 are different networks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Plmn {
    mcc: [u8; 3],
    mnc: [u8; 3],
    mnc_len: u8,
}

impl Plmn {
    /// A PLMN from its MCC and MNC digits, as `Plmn::new("001", "01")`.
    pub fn new(mcc: &str, mnc: &str) -> Result<Self, IdError> {
        let mcc_d = digits_of(mcc)
            .and_then(|d| <[u8; 3]>::try_from(d).ok())
            .ok_or_else(|| IdError::Mcc(mcc.to_owned()))?;
        let mnc_d = digits_of(mnc)
            .filter(|d| d.len() == 2 || d.len() == 3)
            .ok_or_else(|| IdError::Mnc(mnc.to_owned()))?;
        let mut m = [0u8; 3];
        for (slot, d) in m.iter_mut().zip(mnc_d.iter()) {
            *slot = *d;
        }
        Ok(Self {
            mcc: mcc_d,
            mnc: m,
            mnc_len: mnc_d.len() as u8,
        })
    }

    /// The MCC as a number (001 is 1).
    pub fn mcc(&self) -> u16 {
        self.mcc
            .iter()
            .fold(0u16, |acc, d| acc * 10 + u16::from(*d))
    }

    /// The MNC as a number (01 is 1); see [`Plmn::mnc_len`] for its digit count.
    pub fn mnc(&self) -> u16 {
        self.mnc[..usize::from(self.mnc_len)]
            .iter()
            .fold(0u16, |acc, d| acc * 10 + u16::from(*d))
    }

    /// How many digits the MNC has: 2 or 3.
    pub fn mnc_len(&self) -> u8 {
        self.mnc_len
    }

    /// The MCC as its three digits.
    pub fn mcc_str(&self) -> String {
        self.mcc.iter().map(|d| char::from(b'0' + d)).collect()
    }

    /// The MNC as its two or three digits.
    pub fn mnc_str(&self) -> String {
        self.mnc[..usize::from(self.mnc_len)]
            .iter()
            .map(|d| char::from(b'0' + d))
            .collect()
    }

    /// The three octets of a PLMN Identity IE in NGAP.
    ///
    /// TS 38.413 §9.3.3.5: digit 2n-1 in bits 4..1 and digit 2n in bits 8..5 of octet n,
    /// the digits being MCC, then a filler and a 2-digit MNC, or a 3-digit MNC. For a
    /// 2-digit MNC this equals the TS 24.008 layout; for a 3-digit one it differs
    /// (310-410 is `13 40 01` here, `13 00 14` in NAS). Open5GS and UERANSIM do the same.
    pub fn to_ngap_octets(&self) -> [u8; 3] {
        let [c1, c2, c3] = self.mcc;
        let [n1, n2, n3] = self.mnc;
        if self.mnc_len == 2 {
            [c2 << 4 | c1, 0xf0 | c3, n2 << 4 | n1]
        } else {
            [c2 << 4 | c1, n1 << 4 | c3, n3 << 4 | n2]
        }
    }

    /// The PLMN of the three octets of an NGAP PLMN Identity (TS 38.413 §9.3.3.5).
    pub fn from_ngap_octets(o: [u8; 3]) -> Result<Self, IdError> {
        let nib = |b: u8| (b & 0x0f, b >> 4);
        let (c1, c2) = nib(o[0]);
        let (c3, d4) = nib(o[1]);
        let (d5, d6) = nib(o[2]);
        let (mnc, mnc_len) = if d4 == 0xf {
            ([d5, d6, 0], 2)
        } else {
            ([d4, d5, d6], 3)
        };
        Self::checked([c1, c2, c3], mnc, mnc_len).ok_or(IdError::PlmnOctets(o))
    }

    /// The three octets of a PLMN in NAS and MAP, TS 24.008 §10.5.1.3: MCC digit 3 and
    /// MNC digit 3 (or the filler `f`) share octet 2, MNC digits 1 and 2 are octet 3.
    pub fn to_nas_octets(&self) -> [u8; 3] {
        let [c1, c2, c3] = self.mcc;
        let [n1, n2, n3] = self.mnc;
        let n3 = if self.mnc_len == 2 { 0xf } else { n3 };
        [c2 << 4 | c1, n3 << 4 | c3, n2 << 4 | n1]
    }

    /// The PLMN of three octets in the TS 24.008 §10.5.1.3 layout.
    pub fn from_nas_octets(o: [u8; 3]) -> Result<Self, IdError> {
        let nib = |b: u8| (b & 0x0f, b >> 4);
        let (c1, c2) = nib(o[0]);
        let (c3, n3) = nib(o[1]);
        let (n1, n2) = nib(o[2]);
        let (mnc, mnc_len) = if n3 == 0xf {
            ([n1, n2, 0], 2)
        } else {
            ([n1, n2, n3], 3)
        };
        Self::checked([c1, c2, c3], mnc, mnc_len).ok_or(IdError::PlmnOctets(o))
    }

    fn checked(mcc: [u8; 3], mnc: [u8; 3], mnc_len: u8) -> Option<Self> {
        let all_digits = mcc
            .iter()
            .chain(mnc[..usize::from(mnc_len)].iter())
            .all(|d| *d <= 9);
        all_digits.then_some(Self { mcc, mnc, mnc_len })
    }
}

impl fmt::Display for Plmn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.mcc_str(), self.mnc_str())
    }
}

impl FromStr for Plmn {
    type Err = IdError;

    /// `001-01`, `001/01`, or the digits run together (`00101`, `001010`).
    fn from_str(s: &str) -> Result<Self, IdError> {
        let s = s.trim();
        if let Some((mcc, mnc)) = s.split_once(['-', '/']) {
            return Self::new(mcc, mnc);
        }
        match (s.get(..3), s.get(3..)) {
            (Some(mcc), Some(mnc)) if s.is_ascii() => Self::new(mcc, mnc),
            _ => Err(IdError::PlmnText(s.to_owned())),
        }
    }
}

/// Single Network Slice Selection Assistance Information (TS 23.003 §28.4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Snssai {
    /// Slice/Service Type.
    pub sst: u8,
    /// Slice Differentiator, 24 bits; `None` is "no SD" (not the reserved `ffffff`).
    pub sd: Option<u32>,
}

impl Snssai {
    /// A slice with an optional 24-bit SD; errors when the SD is wider.
    pub fn new(sst: u8, sd: Option<u32>) -> Result<Self, IdError> {
        if let Some(sd) = sd {
            fits("SD", u64::from(sd), 24)?;
        }
        Ok(Self { sst, sd })
    }

    /// The SD as its three octets, most significant first; errors when wider than 24 bits.
    pub fn sd_octets(&self) -> Result<Option<[u8; 3]>, IdError> {
        match self.sd {
            None => Ok(None),
            Some(sd) => {
                fits("SD", u64::from(sd), 24)?;
                let b = sd.to_be_bytes();
                Ok(Some([b[1], b[2], b[3]]))
            }
        }
    }
}

impl fmt::Display for Snssai {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.sd {
            Some(sd) => write!(f, "{}-{:06x}", self.sst, sd),
            None => write!(f, "{}", self.sst),
        }
    }
}

impl FromStr for Snssai {
    type Err = IdError;

    /// `1` or `1-000001` (SST in decimal, SD in hexadecimal).
    fn from_str(s: &str) -> Result<Self, IdError> {
        let bad = || IdError::Number(s.to_owned());
        let (sst, sd) = match s.trim().split_once(['-', ':']) {
            Some((sst, sd)) => (sst, Some(sd)),
            None => (s.trim(), None),
        };
        let sst = sst.parse::<u8>().map_err(|_| bad())?;
        let sd = match sd {
            Some(sd) => Some(u32::from_str_radix(sd, 16).map_err(|_| bad())?),
            None => None,
        };
        Self::new(sst, sd)
    }
}

/// A 24-bit Tracking Area Code (TS 23.003 §19.4.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tac(u32);

impl Tac {
    /// A TAC; errors when wider than 24 bits.
    pub fn new(tac: u32) -> Result<Self, IdError> {
        fits("TAC", u64::from(tac), 24)?;
        Ok(Self(tac))
    }

    /// The TAC as a number.
    pub fn value(&self) -> u32 {
        self.0
    }

    /// The three octets of the TAC IE, most significant first (TS 38.413 §9.3.3.10).
    pub fn to_octets(&self) -> [u8; 3] {
        let b = self.0.to_be_bytes();
        [b[1], b[2], b[3]]
    }

    /// The TAC of three octets.
    pub fn from_octets(o: [u8; 3]) -> Self {
        Self(u32::from_be_bytes([0, o[0], o[1], o[2]]))
    }
}

impl fmt::Display for Tac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:06x}", self.0)
    }
}

impl FromStr for Tac {
    type Err = IdError;

    /// Six hex digits as configs write them (`000001`), or `0x1`, or a decimal number.
    fn from_str(s: &str) -> Result<Self, IdError> {
        let s = s.trim();
        let bad = || IdError::Number(s.to_owned());
        let v = if let Some(hex) = s.strip_prefix("0x") {
            u32::from_str_radix(hex, 16).map_err(|_| bad())?
        } else if s.len() == 6 {
            // TACs are conventionally written as 6 hex digits (Open5GS, UERANSIM).
            u32::from_str_radix(s, 16).map_err(|_| bad())?
        } else {
            s.parse::<u32>().map_err(|_| bad())?
        };
        Self::new(v)
    }
}

/// Tracking Area Identity: PLMN and TAC (TS 23.003 §19.4.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tai {
    /// The PLMN.
    pub plmn: Plmn,
    /// The TAC.
    pub tac: Tac,
}

impl fmt::Display for Tai {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.plmn, self.tac)
    }
}

/// Globally Unique AMF Identifier (TS 23.003 §2.10.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Guami {
    /// The PLMN.
    pub plmn: Plmn,
    /// AMF Region ID, 8 bits.
    pub amf_region_id: u8,
    /// AMF Set ID, 10 bits.
    pub amf_set_id: u16,
    /// AMF Pointer, 6 bits.
    pub amf_pointer: u8,
}

impl Guami {
    /// A GUAMI; errors when the set ID is wider than 10 bits or the pointer than 6.
    pub fn new(
        plmn: Plmn,
        amf_region_id: u8,
        amf_set_id: u16,
        amf_pointer: u8,
    ) -> Result<Self, IdError> {
        let g = Self {
            plmn,
            amf_region_id,
            amf_set_id,
            amf_pointer,
        };
        g.validate()?;
        Ok(g)
    }

    /// Checks the field widths, since the fields are public.
    pub fn validate(&self) -> Result<(), IdError> {
        fits("AMF Set ID", u64::from(self.amf_set_id), 10)?;
        fits("AMF Pointer", u64::from(self.amf_pointer), 6)
    }
}

impl fmt::Display for Guami {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{:02x}-{:03x}-{:02x}",
            self.plmn, self.amf_region_id, self.amf_set_id, self.amf_pointer
        )
    }
}

/// A gNB ID with its length in bits, 22 to 32 (TS 38.413 §9.3.1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GnbId {
    id: u32,
    bits: u8,
}

impl GnbId {
    /// A gNB ID of `bits` bits; errors for a length outside 22..=32 or an ID that does
    /// not fit in it.
    pub fn new(id: u32, bits: u8) -> Result<Self, IdError> {
        if !(22..=32).contains(&bits) {
            return Err(IdError::GnbIdLength(bits));
        }
        fits("gNB ID", u64::from(id), bits)?;
        Ok(Self { id, bits })
    }

    /// The ID.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Its length in bits.
    pub fn bits(&self) -> u8 {
        self.bits
    }
}

impl fmt::Display for GnbId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}/{}", self.id, self.bits)
    }
}

/// Global RAN Node ID (TS 38.413 §9.3.1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum GlobalRanNodeId {
    /// A gNB.
    Gnb {
        /// Its PLMN.
        plmn: Plmn,
        /// Its gNB ID.
        gnb_id: GnbId,
    },
    /// An ng-eNB (TS 38.413 §9.3.1.8), with its ID and the ID's length (18, 20 or 21).
    NgEnb {
        /// Its PLMN.
        plmn: Plmn,
        /// The ng-eNB ID.
        id: u32,
        /// Its length in bits.
        bits: u8,
    },
    /// An N3IWF, 16-bit ID (N3IWF-ID of TS 38.413 §9.4.5).
    N3iwf {
        /// Its PLMN.
        plmn: Plmn,
        /// The N3IWF ID.
        id: u16,
    },
    /// A choice extension of a later release (TNGF, TWIF, W-AGF): no ID we read.
    Other,
}

impl GlobalRanNodeId {
    /// A gNB's ID.
    pub fn gnb(plmn: Plmn, gnb_id: GnbId) -> Self {
        Self::Gnb { plmn, gnb_id }
    }

    /// The PLMN of the node, when it has one we read.
    pub fn plmn(&self) -> Option<Plmn> {
        match self {
            Self::Gnb { plmn, .. } | Self::NgEnb { plmn, .. } | Self::N3iwf { plmn, .. } => {
                Some(*plmn)
            }
            Self::Other => None,
        }
    }
}

impl fmt::Display for GlobalRanNodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Gnb { plmn, gnb_id } => write!(f, "gNB {plmn}/{gnb_id}"),
            Self::NgEnb { plmn, id, bits } => write!(f, "ng-eNB {plmn}/{id:#x}/{bits}"),
            Self::N3iwf { plmn, id } => write!(f, "N3IWF {plmn}/{id:#x}"),
            Self::Other => f.write_str("RAN node of another kind"),
        }
    }
}

/// The values the whole project agrees on out of the box (the README's conventions): the
/// 3GPP test network 001/01, TAC 000001, S-NSSAI SST 1 without SD.
pub mod defaults {
    use super::{GnbId, Guami, Plmn, Snssai, Tac, Tai};

    /// PLMN 001-01, the test network of TS 23.003 / TS 36.523.
    pub const PLMN: Plmn = Plmn {
        mcc: [0, 0, 1],
        mnc: [0, 1, 0],
        mnc_len: 2,
    };
    /// TAC 000001.
    pub const TAC: Tac = Tac(1);
    /// TAI 001-01-000001.
    pub const TAI: Tai = Tai {
        plmn: PLMN,
        tac: TAC,
    };
    /// S-NSSAI SST 1 (eMBB), no SD.
    pub const SNSSAI: Snssai = Snssai { sst: 1, sd: None };
    /// AMF Region ID 0x02.
    pub const AMF_REGION_ID: u8 = 0x02;
    /// AMF Set ID 1.
    pub const AMF_SET_ID: u16 = 1;
    /// AMF Pointer 0.
    pub const AMF_POINTER: u8 = 0;
    /// The AMF's GUAMI: 001-01, region 2, set 1, pointer 0.
    pub const GUAMI: Guami = Guami {
        plmn: PLMN,
        amf_region_id: AMF_REGION_ID,
        amf_set_id: AMF_SET_ID,
        amf_pointer: AMF_POINTER,
    };
    /// The AMF Name sent in NG Setup Response.
    pub const AMF_NAME: &str = "steer5g-amf";
    /// Relative AMF Capacity (TS 38.413 §9.2.6.2): the maximum, as a lone AMF.
    pub const RELATIVE_AMF_CAPACITY: u8 = 255;
    /// The emulated gNB's ID.
    pub const GNB_ID_VALUE: u32 = 1;
    /// The emulated gNB's ID length: 22 bits, the shortest (most cells per gNB).
    pub const GNB_ID_BITS: u8 = 22;
    /// The emulated gNB's ID, 1 on 22 bits.
    pub const GNB_ID: GnbId = GnbId {
        id: GNB_ID_VALUE,
        bits: GNB_ID_BITS,
    };
    /// The emulated gNB's RAN Node Name.
    pub const GNB_NAME: &str = "steer5g-gnb";
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn plmn_two_digit_mnc_octets_agree_in_ngap_and_nas() {
        let p = Plmn::new("208", "93").unwrap();
        assert_eq!(p.to_ngap_octets(), [0x02, 0xf8, 0x39]);
        assert_eq!(p.to_nas_octets(), [0x02, 0xf8, 0x39]);
        assert_eq!(Plmn::from_ngap_octets([0x02, 0xf8, 0x39]).unwrap(), p);
        assert_eq!(Plmn::from_nas_octets([0x02, 0xf8, 0x39]).unwrap(), p);
        assert_eq!(defaults::PLMN.to_ngap_octets(), [0x00, 0xf1, 0x10]);
        assert_eq!(defaults::PLMN, Plmn::new("001", "01").unwrap());
    }

    #[test]
    fn plmn_three_digit_mnc_differs_between_ngap_and_nas() {
        let p = Plmn::new("310", "410").unwrap();
        // TS 38.413 §9.3.3.5 digit order.
        assert_eq!(p.to_ngap_octets(), [0x13, 0x40, 0x01]);
        // TS 24.008 §10.5.1.3 figure 10.5.13.
        assert_eq!(p.to_nas_octets(), [0x13, 0x00, 0x14]);
        assert_eq!(Plmn::from_ngap_octets([0x13, 0x40, 0x01]).unwrap(), p);
        assert_eq!(Plmn::from_nas_octets([0x13, 0x00, 0x14]).unwrap(), p);
        assert_eq!((p.mcc(), p.mnc(), p.mnc_len()), (310, 410, 3));
        // 001-01 and 001-010 are different networks.
        assert_ne!(
            Plmn::new("001", "01").unwrap(),
            Plmn::new("001", "010").unwrap()
        );
    }

    #[test]
    fn plmn_text_forms() {
        let p: Plmn = "001-01".parse().unwrap();
        assert_eq!(p.to_string(), "001-01");
        assert_eq!("00101".parse::<Plmn>().unwrap(), p);
        assert_eq!("001/01".parse::<Plmn>().unwrap(), p);
        assert_eq!("001010".parse::<Plmn>().unwrap().mnc_str(), "010");
        for bad in [
            "", "01-01", "0011", "001-1", "001-0101", "a01-01", "ü0101", "00-101",
        ] {
            assert!(bad.parse::<Plmn>().is_err(), "{bad}");
        }
    }

    #[test]
    fn plmn_octets_with_non_digits_are_refused() {
        for o in [[0xab, 0xcd, 0xef], [0x0f, 0xf1, 0x10], [0x00, 0xf1, 0x1a]] {
            assert!(Plmn::from_ngap_octets(o).is_err(), "{o:02x?}");
            assert!(Plmn::from_nas_octets(o).is_err(), "{o:02x?}");
        }
        // Every octet triple is handled without panicking.
        for a in 0..=255u8 {
            let _ = Plmn::from_ngap_octets([a, a, a]);
            let _ = Plmn::from_nas_octets([a, 0xf0 | (a & 0xf), a]);
        }
    }

    #[test]
    fn widths_are_checked() {
        assert!(Tac::new(0xff_ffff).is_ok());
        assert!(Tac::new(0x100_0000).is_err());
        assert_eq!(Tac::new(0x123456).unwrap().to_octets(), [0x12, 0x34, 0x56]);
        assert_eq!(Tac::from_octets([0, 0, 1]), defaults::TAC);
        assert_eq!("000001".parse::<Tac>().unwrap(), defaults::TAC);
        assert_eq!("0x10".parse::<Tac>().unwrap().value(), 16);
        assert!(Snssai::new(1, Some(0x100_0000)).is_err());
        assert_eq!(
            Snssai::new(1, Some(0x010203)).unwrap().sd_octets().unwrap(),
            Some([1, 2, 3])
        );
        assert_eq!(
            "1-000001".parse::<Snssai>().unwrap(),
            Snssai::new(1, Some(1)).unwrap()
        );
        assert!(Guami::new(defaults::PLMN, 2, 1023, 63).is_ok());
        assert!(Guami::new(defaults::PLMN, 2, 1024, 0).is_err());
        assert!(Guami::new(defaults::PLMN, 2, 1, 64).is_err());
        assert!(GnbId::new(1, 21).is_err());
        assert!(GnbId::new(1, 33).is_err());
        assert!(GnbId::new(0x3f_ffff, 22).is_ok());
        assert!(GnbId::new(0x40_0000, 22).is_err());
        assert!(GnbId::new(u32::MAX, 32).is_ok());
        assert_eq!(defaults::GNB_ID, GnbId::new(1, 22).unwrap());
        assert!(defaults::GUAMI.validate().is_ok());
    }
}
