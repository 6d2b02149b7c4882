//! The subscriber record the UDR keeps, its validation, and its on-disk encoding.
//!
//! The record holds secrets (K, OP/OPc), so `Debug` prints their presence but not their
//! value, and no error in this module quotes them.

use std::fmt;

use crate::sqn::SQN_MAX;

/// Default AMF field of new subscribers: the separation bit set, as TS 33.102 §6.3.2 and
/// TS 33.501 Annex A.7 require for authentication vectors used in 5G/EPS.
pub const DEFAULT_AMF: [u8; 2] = [0x80, 0x00];

/// Default subscribed UE-AMBR, both directions, in bits per second: 1 Gbps, the value most
/// open cores provision for a new subscriber, so that the default never throttles a test.
pub const DEFAULT_AMBR_BPS: u64 = 1_000_000_000;

/// Default DNN of new subscribers (the README's network defaults).
pub const DEFAULT_DNN: &str = "internet";

/// Longest DNN: an APN is at most 100 octets (TS 23.003 §9.1).
const DNN_MAX: usize = 100;

/// Most slices or DNNs one subscriber may have (the record stores the count in one octet).
const LIST_MAX: usize = 255;

/// Why a subscriber field is not acceptable. Never carries secret values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldError {
    /// The SUPI is not `imsi-` followed by 5 to 15 digits.
    #[error("SUPI {0:?}: expected imsi- followed by 5 to 15 digits")]
    Supi(String),
    /// A hex field (named) does not hold the expected number of hex digits.
    #[error("{field}: expected {digits} hex digits")]
    Hex {
        /// The field: `k`, `opc`, `op`, `amf`, `sd`.
        field: &'static str,
        /// How many hex digits it must have.
        digits: usize,
    },
    /// The SQN is not a number below 2^48 (decimal, or hex with `0x`).
    #[error("sqn {0:?}: expected a number below 2^48 (decimal, or hex with 0x)")]
    Sqn(String),
    /// The SST is not a number 0..=255.
    #[error("sst {0:?}: expected a number 0..=255")]
    Sst(String),
    /// The DNN is empty, too long, or has characters outside letters, digits, `-` and `.`.
    #[error("dnn {0:?}: expected 1..=100 characters of letters, digits, '-' and '.'")]
    Dnn(String),
    /// A slice is `SST[:SD]` with something else in it.
    #[error("slice {0:?}: expected SST or SST:SD (SD as six hex digits)")]
    Slice(String),
    /// A subscriber needs at least one slice and one DNN.
    #[error("{0}: at least one is needed")]
    Empty(&'static str),
    /// A subscriber has more than 255 slices or DNNs.
    #[error("{0}: at most 255")]
    TooMany(&'static str),
    /// Neither or both of OP and OPc were given.
    #[error("give exactly one of opc and op")]
    OperatorKey,
    /// A UE-AMBR (named) is not a positive decimal number of bit/s.
    #[error("{field} {value:?}: expected a positive number of bit/s (decimal)")]
    Ambr {
        /// `ambr_ul` or `ambr_dl`.
        field: &'static str,
        /// What was given (truncated).
        value: String,
    },
}

/// Operator variant algorithm configuration field: OP as given, or OPc already derived from it
/// with K (TS 35.206 §4.1). Most SIM vendors ship OPc; Open5GS-style imports may carry OP.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OpOrOpc {
    /// The operator's OP: OPc is derived from it with each subscriber's K.
    Op([u8; 16]),
    /// The subscriber's OPc.
    Opc([u8; 16]),
}

impl fmt::Debug for OpOrOpc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpOrOpc::Op(_) => f.write_str("Op(<redacted>)"),
            OpOrOpc::Opc(_) => f.write_str("Opc(<redacted>)"),
        }
    }
}

/// One S-NSSAI (TS 23.003 §28.4.2): slice/service type and an optional slice differentiator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Snssai {
    /// Slice/Service Type.
    pub sst: u8,
    /// Slice Differentiator, 24 bits.
    pub sd: Option<u32>,
}

impl Snssai {
    /// Parses `SST` or `SST:SD`, SD as six hex digits (the form used by the CLI and config).
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        let (sst, sd) = match s.split_once(':') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        let sst = parse_sst(sst).map_err(|_| FieldError::Slice(s.to_string()))?;
        let sd = match sd {
            Some(sd) => Some(parse_sd(sd).map_err(|_| FieldError::Slice(s.to_string()))?),
            None => None,
        };
        Ok(Snssai { sst, sd })
    }
}

impl fmt::Display for Snssai {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.sd {
            Some(sd) => write!(f, "{}:{sd:06x}", self.sst),
            None => write!(f, "{}", self.sst),
        }
    }
}

/// A subscriber as the UDR stores it: identity, long-term secrets, the SQN high-water mark,
/// and the subscribed slices, DNNs and AMBR.
#[derive(Clone, PartialEq, Eq)]
pub struct Subscriber {
    /// `imsi-` followed by 5..=15 digits (TS 23.003 §2.2, TS 29.571 §5.3.2 `Supi`).
    pub supi: String,
    /// The subscriber key K.
    pub k: [u8; 16],
    /// OP or OPc.
    pub op_or_opc: OpOrOpc,
    /// SQN (48 bits, TS 33.102 §6.3.2): never below any SQN the UDM has issued
    /// (see [`crate::sqn`]).
    pub sqn: u64,
    /// The AMF field of the AUTN (TS 33.102 §6.3.2).
    pub amf: [u8; 2],
    /// Subscribed S-NSSAIs, the default one first.
    pub slices: Vec<Snssai>,
    /// Subscribed DNNs, the default one first.
    pub dnns: Vec<String>,
    /// Subscribed UE-AMBR uplink, bits per second.
    pub ambr_ul: u64,
    /// Subscribed UE-AMBR downlink, bits per second.
    pub ambr_dl: u64,
}

impl fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriber")
            .field("supi", &self.supi)
            .field("k", &"<redacted>")
            .field("op_or_opc", &self.op_or_opc)
            .field("sqn", &self.sqn)
            .field("amf", &format_args!("{}", hex(&self.amf)))
            .field("slices", &self.slices)
            .field("dnns", &self.dnns)
            .field("ambr_ul", &self.ambr_ul)
            .field("ambr_dl", &self.ambr_dl)
            .finish()
    }
}

impl Subscriber {
    /// A subscriber with the defaults: SQN 0, AMF 8000, slice SST 1, DNN `internet`,
    /// 1 Gbps AMBR both ways.
    pub fn new(supi: &str, k: [u8; 16], op_or_opc: OpOrOpc) -> Result<Self, FieldError> {
        validate_supi(supi)?;
        Ok(Subscriber {
            supi: supi.to_string(),
            k,
            op_or_opc,
            sqn: 0,
            amf: DEFAULT_AMF,
            slices: vec![Snssai { sst: 1, sd: None }],
            dnns: vec![DEFAULT_DNN.to_string()],
            ambr_ul: DEFAULT_AMBR_BPS,
            ambr_dl: DEFAULT_AMBR_BPS,
        })
    }

    /// The subscriber's OPc: as stored, or derived from OP and K (TS 35.206 §4.1).
    pub fn opc(&self) -> [u8; 16] {
        match &self.op_or_opc {
            OpOrOpc::Opc(opc) => *opc,
            OpOrOpc::Op(op) => {
                use oxirush_security::milenage::{Op, Opc, K};
                *Opc::from_op(&K::new(&self.k), &Op::new(op)).as_octets()
            }
        }
    }

    /// Checks every field: the store refuses records that fail this.
    pub fn validate(&self) -> Result<(), FieldError> {
        validate_supi(&self.supi)?;
        if self.sqn > SQN_MAX {
            return Err(FieldError::Sqn(self.sqn.to_string()));
        }
        for (field, v) in [("ambr_ul", self.ambr_ul), ("ambr_dl", self.ambr_dl)] {
            if v == 0 {
                return Err(FieldError::Ambr {
                    field,
                    value: v.to_string(),
                });
            }
        }
        if self.slices.is_empty() {
            return Err(FieldError::Empty("slices"));
        }
        if self.slices.len() > LIST_MAX {
            return Err(FieldError::TooMany("slices"));
        }
        if self.dnns.len() > LIST_MAX {
            return Err(FieldError::TooMany("dnns"));
        }
        if self
            .slices
            .iter()
            .any(|s| s.sd.is_some_and(|sd| sd > 0xff_ffff))
        {
            return Err(FieldError::Hex {
                field: "sd",
                digits: 6,
            });
        }
        if self.dnns.is_empty() {
            return Err(FieldError::Empty("dnns"));
        }
        for d in &self.dnns {
            validate_dnn(d)?;
        }
        Ok(())
    }
}

/// Checks `imsi-` + 5..=15 digits (TS 23.003 §2.2: MCC 3 + MNC 2..3 + MSIN, at most 15).
pub fn validate_supi(supi: &str) -> Result<(), FieldError> {
    let ok = supi
        .strip_prefix("imsi-")
        .is_some_and(|d| (5..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()));
    if ok {
        Ok(())
    } else {
        Err(FieldError::Supi(truncate(supi)))
    }
}

/// Checks a DNN: 1..=100 characters of letters, digits, `-` and `.` (TS 23.003 §9.1).
pub fn validate_dnn(dnn: &str) -> Result<(), FieldError> {
    let ok = !dnn.is_empty()
        && dnn.len() <= DNN_MAX
        && dnn
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(FieldError::Dnn(truncate(dnn)))
    }
}

/// Error messages quote bad input, but only a bounded prefix of it.
fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

/// Parses exactly `N` bytes written as `2N` hex digits. `field` names it in the error, which
/// never quotes the value (it may be a key).
pub fn parse_hex<const N: usize>(field: &'static str, s: &str) -> Result<[u8; N], FieldError> {
    let err = FieldError::Hex {
        field,
        digits: 2 * N,
    };
    let b = s.as_bytes();
    if b.len() != 2 * N {
        return Err(err);
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
        let (Some(hi), Some(lo)) = (
            pair.first().and_then(|c| hex_val(*c)),
            pair.get(1).and_then(|c| hex_val(*c)),
        ) else {
            return Err(err);
        };
        *o = (hi << 4) | lo;
    }
    Ok(out)
}

fn hex_val(c: u8) -> Option<u8> {
    char::from(c)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// Parses an SQN: decimal, or hex with `0x`; below 2^48.
pub fn parse_sqn(s: &str) -> Result<u64, FieldError> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse::<u64>(),
    };
    match v {
        Ok(v) if v <= SQN_MAX => Ok(v),
        _ => Err(FieldError::Sqn(truncate(s))),
    }
}

/// Parses a UE-AMBR (`field` is `ambr_ul` or `ambr_dl`): decimal bit/s, at least 1.
pub fn parse_ambr(field: &'static str, s: &str) -> Result<u64, FieldError> {
    match s.parse::<u64>() {
        Ok(v) if v > 0 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(v),
        _ => Err(FieldError::Ambr {
            field,
            value: truncate(s),
        }),
    }
}

/// Parses an SST: decimal 0..=255.
pub fn parse_sst(s: &str) -> Result<u8, FieldError> {
    // u8::from_str accepts a leading '+'; a CSV cell should not.
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(FieldError::Sst(truncate(s)));
    }
    s.parse::<u8>().map_err(|_| FieldError::Sst(truncate(s)))
}

/// Parses an SD: six hex digits (TS 23.003 §28.4.2).
pub fn parse_sd(s: &str) -> Result<u32, FieldError> {
    let b = parse_hex::<3>("sd", s)?;
    Ok(u32::from_be_bytes([0, b[0], b[1], b[2]]))
}

// On-disk encoding. Versioned so that a later release can read what this one wrote. All
// integers big-endian; strings and lists length-prefixed. Decoding is total: any byte string
// gives either a record or an error.
const ENC_VERSION: u8 = 1;
const KIND_OP: u8 = 0;
const KIND_OPC: u8 = 1;

/// Why a stored record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The record ends before its last field.
    #[error("record truncated")]
    Truncated,
    /// The record was written by an unknown encoder version.
    #[error("unknown record version {0}")]
    Version(u8),
    /// A field has a value no encoder writes.
    #[error("invalid field: {0}")]
    Invalid(&'static str),
    /// Bytes follow the last field.
    #[error("trailing bytes")]
    Trailing,
}

impl Subscriber {
    /// Encodes the record (without the SUPI, which is the key).
    pub fn encode_value(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(64 + self.dnns.iter().map(|d| d.len() + 1).sum::<usize>());
        v.push(ENC_VERSION);
        v.extend_from_slice(&self.k);
        match &self.op_or_opc {
            OpOrOpc::Op(op) => {
                v.push(KIND_OP);
                v.extend_from_slice(op);
            }
            OpOrOpc::Opc(opc) => {
                v.push(KIND_OPC);
                v.extend_from_slice(opc);
            }
        }
        v.extend_from_slice(&self.sqn.to_be_bytes());
        v.extend_from_slice(&self.amf);
        v.extend_from_slice(&self.ambr_ul.to_be_bytes());
        v.extend_from_slice(&self.ambr_dl.to_be_bytes());
        // validate() bounds both lists well below 255 entries in practice; clamp anyway.
        let slices = &self.slices[..self.slices.len().min(255)];
        v.push(slices.len() as u8);
        for s in slices {
            v.push(s.sst);
            match s.sd {
                Some(sd) => {
                    v.push(1);
                    v.extend_from_slice(&sd.to_be_bytes()[1..]);
                }
                None => v.push(0),
            }
        }
        let dnns = &self.dnns[..self.dnns.len().min(255)];
        v.push(dnns.len() as u8);
        for d in dnns {
            let b = &d.as_bytes()[..d.len().min(255)];
            v.push(b.len() as u8);
            v.extend_from_slice(b);
        }
        v
    }

    /// Decodes a record written by [`Subscriber::encode_value`].
    pub fn decode_value(supi: &str, bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader(bytes);
        let version = r.u8()?;
        if version != ENC_VERSION {
            return Err(DecodeError::Version(version));
        }
        let k = r.array::<16>()?;
        let op_or_opc = match r.u8()? {
            KIND_OP => OpOrOpc::Op(r.array()?),
            KIND_OPC => OpOrOpc::Opc(r.array()?),
            _ => return Err(DecodeError::Invalid("op/opc kind")),
        };
        let sqn = u64::from_be_bytes(r.array()?);
        if sqn > SQN_MAX {
            return Err(DecodeError::Invalid("sqn"));
        }
        let amf = r.array()?;
        let ambr_ul = u64::from_be_bytes(r.array()?);
        let ambr_dl = u64::from_be_bytes(r.array()?);
        let n = r.u8()?;
        let mut slices = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            let sst = r.u8()?;
            let sd = match r.u8()? {
                0 => None,
                1 => {
                    let [a, b, c] = r.array()?;
                    Some(u32::from_be_bytes([0, a, b, c]))
                }
                _ => return Err(DecodeError::Invalid("sd flag")),
            };
            slices.push(Snssai { sst, sd });
        }
        let n = r.u8()?;
        let mut dnns = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            let len = r.u8()?;
            let b = r.take(usize::from(len))?;
            let s = std::str::from_utf8(b).map_err(|_| DecodeError::Invalid("dnn"))?;
            dnns.push(s.to_string());
        }
        if !r.0.is_empty() {
            return Err(DecodeError::Trailing);
        }
        Ok(Subscriber {
            supi: supi.to_string(),
            k,
            op_or_opc,
            sqn,
            amf,
            slices,
            dnns,
            ambr_ul,
            ambr_dl,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError::Truncated);
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        let [b] = self.array::<1>()?;
        Ok(b)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let b = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample() -> Subscriber {
        let mut s =
            Subscriber::new("imsi-001010000000001", [0x46; 16], OpOrOpc::Opc([0xcd; 16])).unwrap();
        s.sqn = 0x1234;
        s.slices.push(Snssai {
            sst: 2,
            sd: Some(0xff),
        });
        s.dnns.push("ims".into());
        s
    }

    #[test]
    fn encoding_round_trips() {
        let s = sample();
        let bytes = s.encode_value();
        assert_eq!(Subscriber::decode_value(&s.supi, &bytes).unwrap(), s);
        let mut op = s.clone();
        op.op_or_opc = OpOrOpc::Op([1; 16]);
        assert_eq!(
            Subscriber::decode_value(&s.supi, &op.encode_value()).unwrap(),
            op
        );
    }

    #[test]
    fn decoding_is_total() {
        let bytes = sample().encode_value();
        for n in 0..bytes.len() {
            assert!(
                Subscriber::decode_value("imsi-00101", &bytes[..n]).is_err(),
                "prefix {n}"
            );
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(
            Subscriber::decode_value("imsi-00101", &long),
            Err(DecodeError::Trailing)
        );
        let mut v2 = bytes;
        v2[0] = 2;
        assert_eq!(
            Subscriber::decode_value("imsi-00101", &v2),
            Err(DecodeError::Version(2))
        );
    }

    #[test]
    fn random_bytes_never_panic() {
        let valid = sample().encode_value();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for round in 0..5000 {
            let mut b = valid.clone();
            // flip a few bytes of a valid record, or use pure noise
            for _ in 0..(1 + round % 4) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (seed >> 33) as usize % b.len();
                b[i] = (seed >> 17) as u8;
            }
            if round % 5 == 0 {
                b.truncate((seed >> 40) as usize % b.len());
            }
            if let Ok(s) = Subscriber::decode_value("imsi-00101", &b) {
                // whatever decodes, encodes back to the same bytes
                assert_eq!(s.encode_value(), b);
            }
        }
    }

    #[test]
    fn debug_hides_secrets() {
        let d = format!("{:?}", sample());
        assert!(!d.contains("46464646"), "{d}");
        assert!(!d.contains("70, 70"), "{d}");
        assert!(!d.contains("cdcd"), "{d}");
        assert!(!d.contains("205"), "{d}");
        assert!(d.contains("imsi-001010000000001"));
    }

    #[test]
    fn supi_rules() {
        assert!(validate_supi("imsi-00101").is_ok());
        assert!(validate_supi("imsi-001010123456789").is_ok());
        assert!(validate_supi("imsi-0010").is_err());
        assert!(validate_supi("imsi-0010101234567890").is_err());
        assert!(validate_supi("nai-00101").is_err());
        assert!(validate_supi("imsi-00101a").is_err());
        assert!(validate_supi("001010000000001").is_err());
    }

    #[test]
    fn field_parsers() {
        assert_eq!(parse_hex::<2>("amf", "8000").unwrap(), [0x80, 0]);
        assert_eq!(parse_hex::<2>("amf", "aBcD").unwrap(), [0xab, 0xcd]);
        assert!(parse_hex::<2>("amf", "800").is_err());
        assert!(parse_hex::<2>("amf", "80g0").is_err());
        // a multi-byte character must not split a slice on a char boundary and panic
        assert!(parse_hex::<2>("amf", "é0").is_err());
        assert_eq!(parse_sqn("32").unwrap(), 32);
        assert_eq!(parse_sqn("0x20").unwrap(), 32);
        assert_eq!(parse_sqn("0xffffffffffff").unwrap(), SQN_MAX);
        assert!(parse_sqn("0x1000000000000").is_err());
        assert!(parse_sqn("-1").is_err());
        assert_eq!(parse_sst("255").unwrap(), 255);
        assert!(parse_sst("256").is_err());
        assert!(parse_sst("+1").is_err());
        assert_eq!(
            Snssai::parse("1:0000ff").unwrap(),
            Snssai {
                sst: 1,
                sd: Some(0xff)
            }
        );
        assert_eq!(Snssai::parse("1").unwrap().to_string(), "1");
        assert_eq!(Snssai::parse("2:abcdef").unwrap().to_string(), "2:abcdef");
        assert!(Snssai::parse("1:ff").is_err());
        assert!(validate_dnn("internet").is_ok());
        assert!(validate_dnn("").is_err());
        assert!(validate_dnn("a,b").is_err());
        assert!(validate_dnn(&"a".repeat(101)).is_err());
    }

    #[test]
    fn opc_from_op_matches_ts_35_208_set_1() {
        let k = parse_hex("k", "465b5ce8b199b49faa5f0a2ee238a6bc").unwrap();
        let op = parse_hex("op", "cdc202d5123e20f62b6d676ac72cb318").unwrap();
        let s = Subscriber::new("imsi-00101", k, OpOrOpc::Op(op)).unwrap();
        assert_eq!(hex(&s.opc()), "cd63cb71954a9f4e48a5994e37a02baf");
    }

    #[test]
    fn hex_errors_do_not_quote_the_value() {
        let e = parse_hex::<16>("k", "zz465b5ce8b199b49faa5f0a2ee238a6bc").unwrap_err();
        assert!(!e.to_string().contains("465b"), "{e}");
    }
}
