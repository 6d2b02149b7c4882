//! Data types shared by several SBI services, per TS29571_CommonData.yaml (TS 29.571 §5),
//! plus the fixed-length hex strings that the 29.50x APIs use for keys and vectors.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A fixed-length octet string carried as `2 * N` hexadecimal characters.
///
/// 3GPP encodes RAND, AUTN, XRES*, K_AUSF and friends as patterns such as `^[A-Fa-f0-9]{32}$`
/// (TS29503_Nudm_UEAU.yaml `Rand`); holding the octets instead of the string means a body that
/// deserialises is already well-formed, and the NF logic never re-parses hex.
/// Decoding accepts either case; encoding emits lower case (both match the patterns).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HexBytes<const N: usize>(pub [u8; N]);

impl<const N: usize> HexBytes<N> {
    /// The octets.
    pub fn as_bytes(&self) -> &[u8; N] {
        &self.0
    }
}

impl<const N: usize> From<[u8; N]> for HexBytes<N> {
    fn from(b: [u8; N]) -> Self {
        Self(b)
    }
}

impl<const N: usize> fmt::Debug for HexBytes<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HexBytes({self})")
    }
}

impl<const N: usize> HexBytes<N> {
    /// Lower-case hex of the octets, built on the stack for the sizes 3GPP uses (up to
    /// 32 octets: K_AUSF, K_SEAF): this runs several times per authentication vector, where
    /// `{:02x}` per octet went through the formatting machinery once per octet.
    fn with_hex<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        const STACK: usize = 32;
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut stack = [0u8; 2 * STACK];
        let mut heap = Vec::new();
        let out: &mut [u8] = if N <= STACK {
            &mut stack[..2 * N]
        } else {
            heap.resize(2 * N, 0);
            &mut heap
        };
        for (pair, b) in out.chunks_exact_mut(2).zip(&self.0) {
            if let [hi, lo] = pair {
                *hi = DIGITS[usize::from(b >> 4)];
                *lo = DIGITS[usize::from(b & 0x0f)];
            }
        }
        // Only ASCII digits were written, so this never fails; the empty string is a safe
        // answer should it ever.
        f(std::str::from_utf8(out).unwrap_or_default())
    }
}

impl<const N: usize> fmt::Display for HexBytes<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_hex(|s| f.write_str(s))
    }
}

/// Why a hex string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HexError {
    /// The string does not have exactly `2 * N` characters.
    #[error("expected {expected} hex characters, got {got}")]
    Length {
        /// Characters required.
        expected: usize,
        /// Characters found.
        got: usize,
    },
    /// A character outside `[0-9A-Fa-f]`.
    #[error("invalid hex character")]
    Digit,
}

fn nibble(c: u8) -> Result<u8, HexError> {
    match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(HexError::Digit),
    }
}

impl<const N: usize> FromStr for HexBytes<N> {
    type Err = HexError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let raw = s.as_bytes();
        if raw.len() != 2 * N {
            return Err(HexError::Length {
                expected: 2 * N,
                got: raw.len(),
            });
        }
        let mut out = [0u8; N];
        for (o, pair) in out.iter_mut().zip(raw.chunks_exact(2)) {
            if let [hi, lo] = pair {
                *o = (nibble(*hi)? << 4) | nibble(*lo)?;
            }
        }
        Ok(Self(out))
    }
}

impl<const N: usize> Serialize for HexBytes<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.with_hex(|hex| s.serialize_str(hex))
    }
}

impl<'de, const N: usize> Deserialize<'de> for HexBytes<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Deserialises a field that is required but nullable (OpenAPI `nullable: true` inside
/// `required`): absent is an error, `null` is `None`.
pub(crate) fn required_nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// Deserialises an optional member that is not nullable (`#[serde(default, deserialize_with
/// = "not_null")]`): absent is `None` by the `default`, `null` is an error, as the YAML
/// (which marks the nullable ones) has it. serde alone would read `null` as absent.
pub(crate) fn not_null<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// Mobile Country Code and Mobile Network Code (TS 29.571 §5.4.4.3 `PlmnId`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlmnId {
    /// Three decimal digits (`^\d{3}$`).
    pub mcc: String,
    /// Two or three decimal digits (`^\d{2,3}$`).
    pub mnc: String,
}

impl PlmnId {
    /// Builds a PLMN id, checking the digit patterns of TS 29.571 `Mcc` and `Mnc`.
    pub fn new(mcc: &str, mnc: &str) -> Option<Self> {
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        let ok = mcc.len() == 3 && digits(mcc) && (2..=3).contains(&mnc.len()) && digits(mnc);
        ok.then(|| Self {
            mcc: mcc.to_owned(),
            mnc: mnc.to_owned(),
        })
    }
}

/// PLMN id with the optional NID of an SNPN (TS 29.571 §5.4.4.28 `PlmnIdNid`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlmnIdNid {
    /// Mobile Country Code.
    pub mcc: String,
    /// Mobile Network Code.
    pub mnc: String,
    /// Network identifier of an SNPN, 11 hex characters.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nid: Option<String>,
}

impl From<PlmnId> for PlmnIdNid {
    fn from(p: PlmnId) -> Self {
        Self {
            mcc: p.mcc,
            mnc: p.mnc,
            nid: None,
        }
    }
}

/// Globally Unique AMF Identifier (TS 29.571 §5.4.4.21 `Guami`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Guami {
    /// Serving PLMN (and NID).
    pub plmn_id: PlmnIdNid,
    /// AMF Region ID (8 bits), AMF Set ID (10 bits), AMF Pointer (6 bits), as 6 hex characters.
    pub amf_id: HexBytes<3>,
}

/// Single Network Slice Selection Assistance Information (TS 29.571 §5.4.4.2 `Snssai`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Snssai {
    /// Slice/Service Type, 0..=255.
    pub sst: u8,
    /// Slice Differentiator, absent when the slice has none.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sd: Option<HexBytes<3>>,
}

impl Snssai {
    /// The string form used as a map key: `"sst"` or `"sst-sd"` (TS 29.571 `Snssai`
    /// description), e.g. in `SmfSelectionSubscriptionData.subscribedSnssaiInfos`.
    pub fn to_key(&self) -> String {
        match self.sd {
            Some(sd) => format!("{}-{}", self.sst, sd),
            None => self.sst.to_string(),
        }
    }

    /// Parses the map-key form written by [`Snssai::to_key`].
    pub fn from_key(key: &str) -> Option<Self> {
        let (sst, sd) = match key.split_once('-') {
            Some((sst, sd)) => (sst, Some(sd.parse().ok()?)),
            None => (key, None),
        };
        if sst.is_empty() || sst.len() > 3 || !sst.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Self {
            sst: sst.parse().ok()?,
            sd,
        })
    }
}

/// Aggregate maximum bit rates (TS 29.571 §5.5.4.1 `Ambr`); strings such as `"1 Gbps"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ambr {
    /// Uplink bit rate, `^\d+(\.\d+)? (bps|Kbps|Mbps|Gbps|Tbps)$`.
    pub uplink: String,
    /// Downlink bit rate, same pattern.
    pub downlink: String,
}

/// Radio access type (TS 29.571 §5.4.3.2 `RatType`). The YAML makes it an open enumeration
/// (`anyOf` with a plain string), so values we do not know are kept, not refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RatType {
    /// NR.
    #[serde(rename = "NR")]
    Nr,
    /// E-UTRA.
    #[serde(rename = "EUTRA")]
    Eutra,
    /// WLAN.
    #[serde(rename = "WLAN")]
    Wlan,
    /// Virtual.
    #[serde(rename = "VIRTUAL")]
    Virtual,
    /// NB-IoT.
    #[serde(rename = "NBIOT")]
    NbIot,
    /// LTE-M.
    #[serde(rename = "LTE-M")]
    LteM,
    /// NR RedCap.
    #[serde(rename = "NR_REDCAP")]
    NrRedcap,
    /// Any other value of the open enumeration.
    #[serde(untagged)]
    Other(String),
}

/// Data of an invalid parameter in a [`ProblemDetails`] (TS 29.571 §5.2.4.2 `InvalidParam`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidParam {
    /// A JSON pointer for a body attribute, `"header X"`, `"query X"` or `"{var}"`.
    pub param: String,
    /// Human-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// RFC 7807 problem details with the 3GPP extensions (TS 29.571 §5.2.4.1 `ProblemDetails`),
/// the body of every SBI error response (`application/problem+json`, TS 29.500 §5.2.7).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProblemDetails {
    /// URI reference identifying the problem type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub problem_type: Option<String>,
    /// Short summary of the problem type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The HTTP status code of this response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Explanation specific to this occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// URI of this occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Machine-readable application error cause, e.g. `USER_NOT_FOUND`; see
    /// [`crate::problem::Cause`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Parameters that were missing or wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_params: Option<Vec<InvalidParam>>,
    /// Supported features of the responder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
}

/// A link (TS 29.571 `Link`): `{"href": uri}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// The linked resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
}

/// Value of a `_links` map entry (TS 29.571 `LinksValueSchema`): one link or a non-empty list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LinksValue {
    /// A single link.
    One(Link),
    /// Several alternative links.
    Many(Vec<Link>),
}

impl LinksValue {
    /// The first href, whichever form the value took.
    pub fn first_href(&self) -> Option<&str> {
        match self {
            LinksValue::One(l) => l.href.as_deref(),
            LinksValue::Many(v) => v.first().and_then(|l| l.href.as_deref()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_case() {
        let h: HexBytes<3> = "aBcDeF".parse().unwrap();
        assert_eq!(h.0, [0xab, 0xcd, 0xef]);
        assert_eq!(h.to_string(), "abcdef");
        assert_eq!(serde_json::to_string(&h).unwrap(), "\"abcdef\"");
        // Both sides of the stack buffer's limit: every octet value, in order.
        let mut k = [0u8; 32];
        let mut big = [0u8; 40];
        for (i, b) in big.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37);
        }
        k.copy_from_slice(&big[..32]);
        for (hex, bytes) in [
            (HexBytes(k).to_string(), &k[..]),
            (HexBytes(big).to_string(), &big[..]),
        ] {
            let want: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex, want);
        }
        let back: HexBytes<40> =
            serde_json::from_str(&serde_json::to_string(&HexBytes(big)).unwrap()).unwrap();
        assert_eq!(back.0, big);
    }

    #[test]
    fn hex_rejects_bad_input_without_panicking() {
        assert_eq!(
            "abc".parse::<HexBytes<2>>(),
            Err(HexError::Length {
                expected: 4,
                got: 3
            })
        );
        assert_eq!("zz00".parse::<HexBytes<2>>(), Err(HexError::Digit));
        // A multi-byte UTF-8 character must not split into a panic.
        assert!("é0".parse::<HexBytes<1>>().is_err());
        assert!("éé".parse::<HexBytes<2>>().is_err());
        assert!(serde_json::from_str::<HexBytes<2>>("12").is_err());
    }

    #[test]
    fn snssai_key_forms() {
        let s = Snssai {
            sst: 1,
            sd: Some(HexBytes([0, 0, 1])),
        };
        assert_eq!(s.to_key(), "1-000001");
        assert_eq!(Snssai::from_key("1-000001"), Some(s));
        assert_eq!(Snssai::from_key("255"), Some(Snssai { sst: 255, sd: None }));
        for bad in ["", "256", "1-", "1-0000", "x", "-000001", "1000"] {
            assert_eq!(Snssai::from_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn rat_type_is_open() {
        let r: RatType = serde_json::from_str("\"NR\"").unwrap();
        assert_eq!(r, RatType::Nr);
        let r: RatType = serde_json::from_str("\"NR_LEO\"").unwrap();
        assert_eq!(r, RatType::Other("NR_LEO".into()));
        assert_eq!(serde_json::to_string(&r).unwrap(), "\"NR_LEO\"");
    }

    #[test]
    fn plmn_id_checks_digits() {
        assert!(PlmnId::new("001", "01").is_some());
        assert!(PlmnId::new("001", "001").is_some());
        assert!(PlmnId::new("01", "01").is_none());
        assert!(PlmnId::new("001", "1").is_none());
        assert!(PlmnId::new("0a1", "01").is_none());
    }
}
