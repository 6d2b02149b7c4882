//! 5GS mobile identity (TS 24.501 §9.11.3.4): the value octets of the IE, which we
//! write and read ourselves so that every identity has a type of its own.

use super::NasError;
use crate::ids::Plmn;

/// Type of identity, bits 3 to 1 of the first octet (TS 24.501 Table 9.11.3.4.1).
mod kind {
    pub(super) const NO_IDENTITY: u8 = 0;
    pub(super) const SUCI: u8 = 1;
    pub(super) const GUTI: u8 = 2;
    pub(super) const IMEI: u8 = 3;
    pub(super) const S_TMSI: u8 = 4;
    pub(super) const IMEISV: u8 = 5;
}

/// SUCI protection scheme identifier (TS 24.501 §9.11.3.4, TS 33.501 Annex C).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtectionScheme {
    /// The null scheme: the MSIN is in clear.
    Null,
    /// ECIES Profile A (X25519).
    ProfileA,
    /// ECIES Profile B (P-256).
    ProfileB,
    /// Another value (3..=15): reserved or operator specific.
    Other(u8),
}

impl ProtectionScheme {
    /// The 4-bit identifier.
    pub fn id(self) -> u8 {
        match self {
            Self::Null => 0,
            Self::ProfileA => 1,
            Self::ProfileB => 2,
            Self::Other(v) => v & 0x0f,
        }
    }

    /// The scheme of a 4-bit identifier.
    pub fn from_id(id: u8) -> Self {
        match id & 0x0f {
            0 => Self::Null,
            1 => Self::ProfileA,
            2 => Self::ProfileB,
            v => Self::Other(v),
        }
    }
}

/// The scheme output of a SUCI: the MSIN digits with the null scheme, the
/// concealed octets (ECC public key, ciphertext, MAC tag) with the others.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SchemeOutput {
    /// Null scheme: the MSIN, as decimal digits.
    Msin(String),
    /// Profile A, B or another scheme: the octets as they are.
    Concealed(Vec<u8>),
}

/// A SUCI of SUPI format IMSI (TS 24.501 figure 9.11.3.4.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Suci {
    /// Home network PLMN (MCC and MNC of the IMSI).
    pub plmn: Plmn,
    /// Routing indicator, 1 to 4 decimal digits ("0" when none is provisioned).
    pub routing_indicator: String,
    /// Protection scheme.
    pub scheme: ProtectionScheme,
    /// Home network public key identifier (0 with the null scheme).
    pub hn_key_id: u8,
    /// Scheme output.
    pub output: SchemeOutput,
}

/// A 5G-GUTI (TS 24.501 figure 9.11.3.4.1; TS 23.003 §2.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Guti {
    /// PLMN of the AMF.
    pub plmn: Plmn,
    /// AMF Region ID (8 bits).
    pub amf_region: u8,
    /// AMF Set ID (10 bits).
    pub amf_set: u16,
    /// AMF Pointer (6 bits).
    pub amf_pointer: u8,
    /// 5G-TMSI.
    pub tmsi: u32,
}

/// A 5G-S-TMSI (TS 24.501 figure 9.11.3.4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct STmsi {
    /// AMF Set ID (10 bits).
    pub amf_set: u16,
    /// AMF Pointer (6 bits).
    pub amf_pointer: u8,
    /// 5G-TMSI.
    pub tmsi: u32,
}

impl Guti {
    /// The 5G-S-TMSI of this GUTI (TS 23.003 §2.11).
    pub fn s_tmsi(&self) -> STmsi {
        STmsi {
            amf_set: self.amf_set,
            amf_pointer: self.amf_pointer,
            tmsi: self.tmsi,
        }
    }
}

/// A 5GS mobile identity (TS 24.501 §9.11.3.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MobileIdentity {
    /// No identity.
    NoIdentity,
    /// SUCI (SUPI format IMSI).
    Suci(Suci),
    /// 5G-GUTI.
    Guti(Guti),
    /// 5G-S-TMSI.
    STmsi(STmsi),
    /// IMEI, 15 digits.
    Imei(String),
    /// IMEISV, 16 digits.
    Imeisv(String),
}

fn invalid(reason: impl Into<String>) -> NasError {
    NasError::InvalidIe {
        ie: "5GS mobile identity",
        reason: reason.into(),
    }
}

/// Packs decimal digits two to an octet, the first in the low half, `F` filling an odd
/// count (TS 24.008 §10.5.1.4 style).
pub(crate) fn bcd(digits: &str) -> Result<Vec<u8>, NasError> {
    let d: Vec<u8> = digits
        .bytes()
        .map(|b| {
            b.is_ascii_digit()
                .then(|| b - b'0')
                .ok_or_else(|| invalid(format!("{digits:?} is not decimal digits")))
        })
        .collect::<Result<_, _>>()?;
    Ok(d.chunks(2)
        .map(|p| p[0] | (p.get(1).copied().unwrap_or(0x0f) << 4))
        .collect())
}

/// The digits of BCD octets, stopping at an `F` filler in the last high half.
pub(crate) fn unbcd(octets: &[u8]) -> Result<String, NasError> {
    let mut s = String::with_capacity(octets.len() * 2);
    for (i, o) in octets.iter().enumerate() {
        for (n, half) in [o & 0x0f, o >> 4].into_iter().enumerate() {
            match half {
                0..=9 => s.push(char::from(b'0' + half)),
                0x0f if n == 1 && i + 1 == octets.len() => {}
                _ => return Err(invalid(format!("octet {o:#04x} is not BCD"))),
            }
        }
    }
    Ok(s)
}

fn set_and_pointer(amf_set: u16, amf_pointer: u8) -> Result<[u8; 2], NasError> {
    if amf_set >> 10 != 0 || amf_pointer >> 6 != 0 {
        return Err(invalid(format!(
            "AMF Set ID {amf_set:#x} or AMF Pointer {amf_pointer:#x} too wide"
        )));
    }
    Ok([
        (amf_set >> 2) as u8,
        (((amf_set & 0x03) as u8) << 6) | amf_pointer,
    ])
}

fn read_set_and_pointer(o: [u8; 2]) -> (u16, u8) {
    ((u16::from(o[0]) << 2) | u16::from(o[1] >> 6), o[1] & 0x3f)
}

fn array<const N: usize>(v: &[u8], at: usize) -> Result<[u8; N], NasError> {
    v.get(at..at + N)
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .ok_or_else(|| invalid("too short"))
}

impl MobileIdentity {
    /// The value octets of the IE (without IEI and length).
    pub fn encode(&self) -> Result<Vec<u8>, NasError> {
        Ok(match self {
            Self::NoIdentity => vec![kind::NO_IDENTITY],
            Self::Suci(s) => {
                let ri = &s.routing_indicator;
                if ri.is_empty() || ri.len() > 4 {
                    return Err(invalid("a routing indicator has 1 to 4 digits"));
                }
                // §9.11.3.4: unused digits of the routing indicator are coded 1111.
                let mut ri_oct = bcd(ri)?;
                ri_oct.resize(2, 0xff);
                let mut v = vec![kind::SUCI];
                v.extend_from_slice(&s.plmn.to_nas_octets());
                v.extend_from_slice(&ri_oct);
                v.push(s.scheme.id());
                v.push(s.hn_key_id);
                match (&s.output, s.scheme) {
                    (SchemeOutput::Msin(msin), ProtectionScheme::Null) => {
                        v.extend_from_slice(&bcd(msin)?)
                    }
                    (SchemeOutput::Concealed(out), s) if s != ProtectionScheme::Null => {
                        v.extend_from_slice(out)
                    }
                    _ => {
                        return Err(invalid(
                            "the null scheme carries the MSIN, the others concealed octets",
                        ))
                    }
                }
                v
            }
            Self::Guti(g) => {
                let mut v = vec![0xf0 | kind::GUTI];
                v.extend_from_slice(&g.plmn.to_nas_octets());
                v.push(g.amf_region);
                v.extend_from_slice(&set_and_pointer(g.amf_set, g.amf_pointer)?);
                v.extend_from_slice(&g.tmsi.to_be_bytes());
                v
            }
            Self::STmsi(t) => {
                let mut v = vec![0xf0 | kind::S_TMSI];
                v.extend_from_slice(&set_and_pointer(t.amf_set, t.amf_pointer)?);
                v.extend_from_slice(&t.tmsi.to_be_bytes());
                v
            }
            Self::Imei(d) | Self::Imeisv(d) => {
                let (k, len) = match self {
                    Self::Imei(_) => (kind::IMEI, 15),
                    _ => (kind::IMEISV, 16),
                };
                if d.len() != len {
                    return Err(invalid(format!("an IMEI(SV) of {} digits", d.len())));
                }
                // Figure 9.11.3.4.2: digit 1 in the first octet beside odd/even
                // and the type, the rest two to an octet.
                let b = bcd(d)?;
                let odd = (len % 2) as u8;
                let mut v = vec![((b[0] & 0x0f) << 4) | (odd << 3) | k];
                let rest = bcd(&d[1..])?;
                v.extend_from_slice(&rest);
                v
            }
        })
    }

    /// Reads the value octets of the IE.
    pub fn parse(v: &[u8]) -> Result<Self, NasError> {
        let first = *v.first().ok_or_else(|| invalid("empty"))?;
        Ok(match first & 0x07 {
            kind::NO_IDENTITY => Self::NoIdentity,
            kind::SUCI => {
                if (first >> 4) & 0x07 != 0 {
                    return Err(invalid("a SUCI of SUPI format other than IMSI"));
                }
                let plmn =
                    Plmn::from_nas_octets(array(v, 1)?).map_err(|e| invalid(e.to_string()))?;
                let ri = array::<2>(v, 4)?;
                let ri_digits: Vec<u8> = [ri[0] & 0x0f, ri[0] >> 4, ri[1] & 0x0f, ri[1] >> 4]
                    .into_iter()
                    .take_while(|d| *d != 0x0f)
                    .collect();
                if ri_digits.is_empty() || ri_digits.iter().any(|d| *d > 9) {
                    return Err(invalid("routing indicator is not 1 to 4 digits"));
                }
                let routing_indicator = ri_digits.iter().map(|d| char::from(b'0' + d)).collect();
                let scheme =
                    ProtectionScheme::from_id(*v.get(6).ok_or_else(|| invalid("too short"))?);
                let hn_key_id = *v.get(7).ok_or_else(|| invalid("too short"))?;
                let out = v.get(8..).unwrap_or_default();
                let output = match scheme {
                    ProtectionScheme::Null => SchemeOutput::Msin(unbcd(out)?),
                    _ => SchemeOutput::Concealed(out.to_vec()),
                };
                Self::Suci(Suci {
                    plmn,
                    routing_indicator,
                    scheme,
                    hn_key_id,
                    output,
                })
            }
            kind::GUTI => {
                if v.len() != 11 {
                    return Err(invalid("a 5G-GUTI has 11 octets"));
                }
                let plmn =
                    Plmn::from_nas_octets(array(v, 1)?).map_err(|e| invalid(e.to_string()))?;
                let (amf_set, amf_pointer) = read_set_and_pointer(array(v, 5)?);
                Self::Guti(Guti {
                    plmn,
                    amf_region: v[4],
                    amf_set,
                    amf_pointer,
                    tmsi: u32::from_be_bytes(array(v, 7)?),
                })
            }
            kind::S_TMSI => {
                if v.len() != 7 {
                    return Err(invalid("a 5G-S-TMSI has 7 octets"));
                }
                let (amf_set, amf_pointer) = read_set_and_pointer(array(v, 1)?);
                Self::STmsi(STmsi {
                    amf_set,
                    amf_pointer,
                    tmsi: u32::from_be_bytes(array(v, 3)?),
                })
            }
            k @ (kind::IMEI | kind::IMEISV) => {
                // Figure 9.11.3.4.2: digit 1 beside the type, then two digits an
                // octet; an IMEISV's 16 digits leave the last high half a filler,
                // which some senders set to 0 rather than 1111, so it is not read.
                let (octets, digits) = if k == kind::IMEI { (8, 15) } else { (9, 16) };
                if v.len() != octets {
                    return Err(invalid(format!("an IMEI(SV) of {} octets", v.len())));
                }
                let halves = core::iter::once(first >> 4)
                    .chain(v.iter().skip(1).flat_map(|o| [o & 0x0f, o >> 4]))
                    .take(digits);
                let mut d = String::with_capacity(digits);
                for h in halves {
                    if h > 9 {
                        return Err(invalid("an IMEI(SV) digit is not BCD"));
                    }
                    d.push(char::from(b'0' + h));
                }
                if k == kind::IMEI {
                    Self::Imei(d)
                } else {
                    Self::Imeisv(d)
                }
            }
            other => return Err(invalid(format!("identity type {other} is not supported"))),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ids::defaults;

    #[test]
    fn null_scheme_suci_matches_the_spec_layout() {
        // oxirush-nas's doc example: suci-0-208-93-0000-0-0-00000001, the IE value
        // 01 02f839 0000 00 00 00000010.
        let v = hex_decode("0102f8390000000000000010");
        let id = MobileIdentity::parse(&v).unwrap();
        let MobileIdentity::Suci(s) = &id else {
            panic!("{id:?}")
        };
        assert_eq!(s.plmn, Plmn::new("208", "93").unwrap());
        assert_eq!(s.routing_indicator, "0000");
        assert_eq!(s.output, SchemeOutput::Msin("00000001".into()));
        assert_eq!(id.encode().unwrap(), v);
    }

    #[test]
    fn every_identity_round_trips() {
        let ids = [
            MobileIdentity::NoIdentity,
            MobileIdentity::Suci(Suci {
                plmn: defaults::PLMN,
                routing_indicator: "12".into(),
                scheme: ProtectionScheme::ProfileA,
                hn_key_id: 1,
                output: SchemeOutput::Concealed(vec![0xaa; 45]),
            }),
            MobileIdentity::Suci(Suci {
                plmn: Plmn::new("310", "410").unwrap(),
                routing_indicator: "0".into(),
                scheme: ProtectionScheme::Null,
                hn_key_id: 0,
                output: SchemeOutput::Msin("123456789".into()),
            }),
            MobileIdentity::Guti(Guti {
                plmn: defaults::PLMN,
                amf_region: 2,
                amf_set: 0x3ff,
                amf_pointer: 0x3f,
                tmsi: 0xdead_beef,
            }),
            MobileIdentity::STmsi(STmsi {
                amf_set: 1,
                amf_pointer: 0,
                tmsi: 7,
            }),
            MobileIdentity::Imei("356938035643809".into()),
            MobileIdentity::Imeisv("3569380356438091".into()),
        ];
        for id in ids {
            let v = id.encode().unwrap();
            assert_eq!(MobileIdentity::parse(&v).unwrap(), id, "{v:02x?}");
        }
    }

    #[test]
    fn guti_layout() {
        // oxirush-nas's doc example: GUTI 208-93, region ca, set 3fe, pointer 0,
        // TMSI 11223344 is f2 02f839 ca ff80 11223344.
        let g = MobileIdentity::Guti(Guti {
            plmn: Plmn::new("208", "93").unwrap(),
            amf_region: 0xca,
            amf_set: 0x3fe,
            amf_pointer: 0,
            tmsi: 0x1122_3344,
        });
        assert_eq!(g.encode().unwrap(), hex_decode("f202f839caff8011223344"));
    }

    #[test]
    fn garbage_never_panics() {
        for len in 0..16 {
            for seed in 0..=255u8 {
                let v: Vec<u8> = (0..len)
                    .map(|i| seed.wrapping_mul(31).wrapping_add(i))
                    .collect();
                let _ = MobileIdentity::parse(&v);
            }
        }
        assert!(MobileIdentity::parse(&[0x02, 1, 2]).is_err());
    }

    fn hex_decode(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }
}
