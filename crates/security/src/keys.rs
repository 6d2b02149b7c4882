//! Byte-string newtypes: secrets (wiped on drop, redacted in `{:?}`, constant-time `==`) and
//! public values (printed as hex). Every one has a fixed size, checked on construction.

use core::fmt;

use subtle::ConstantTimeEq;
use zeroize::Zeroize;

use crate::Error;

/// A secret of `$len` bytes. Not `Copy`: every copy is an explicit `clone()` that is wiped in
/// its turn.
macro_rules! secret {
    ($(#[$doc:meta])* $name:ident, $what:literal, $len:literal) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name([u8; $len]);

        impl $name {
            /// Size in bytes.
            pub const LEN: usize = $len;

            /// From its bytes (by reference, so no stray copy is left on the caller's stack).
            pub fn from_bytes(bytes: &[u8; $len]) -> Self {
                Self(*bytes)
            }

            /// From a slice, which must be exactly [`Self::LEN`] bytes long.
            pub fn from_slice(bytes: &[u8]) -> Result<Self, Error> {
                <[u8; $len]>::try_from(bytes)
                    .map(Self)
                    .map_err(|_| Error::length($what, $len, bytes.len()))
            }

            /// Its bytes. The only way out: callers that print them (the operator's
            /// `crypto` tool) do so on purpose.
            pub fn as_bytes(&self) -> &[u8; $len] {
                &self.0
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                self.0.zeroize();
            }
        }

        impl zeroize::ZeroizeOnDrop for $name {}

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!(stringify!($name), "(<redacted>)"))
            }
        }

        // Constant time, so a comparison (XRES*, a MAC) leaks no prefix length.
        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.0.ct_eq(&other.0).into()
            }
        }

        impl Eq for $name {}
    };
}

/// A value that travels in clear, of `$len` bytes.
macro_rules! public {
    ($(#[$doc:meta])* $name:ident, $what:literal, $len:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name([u8; $len]);

        impl $name {
            /// Size in bytes.
            pub const LEN: usize = $len;

            /// From its bytes.
            pub const fn from_bytes(bytes: [u8; $len]) -> Self {
                Self(bytes)
            }

            /// From a slice, which must be exactly [`Self::LEN`] bytes long.
            pub fn from_slice(bytes: &[u8]) -> Result<Self, Error> {
                <[u8; $len]>::try_from(bytes)
                    .map(Self)
                    .map_err(|_| Error::length($what, $len, bytes.len()))
            }

            /// Its bytes.
            pub const fn as_bytes(&self) -> &[u8; $len] {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!(stringify!($name), "("))?;
                for b in &self.0 {
                    write!(f, "{b:02x}")?;
                }
                f.write_str(")")
            }
        }
    };
}

secret!(
    /// K, the subscriber key shared by the USIM and the home network (TS 35.206 §2.3).
    K, "K", 16
);
secret!(
    /// OP, the operator variant configuration field (TS 35.206 §3); secret to the operator.
    Op, "OP", 16
);
secret!(
    /// OPc = OP ⊕ E\[OP\]K (TS 35.206 §4.1), stored per subscriber in place of OP.
    Opc, "OPc", 16
);
secret!(
    /// CK, the cipher key from f3.
    Ck, "CK", 16
);
secret!(
    /// IK, the integrity key from f4.
    Ik, "IK", 16
);
secret!(
    /// AK, the anonymity key from f5 that masks SQN in an AUTN.
    Ak, "AK", 6
);
secret!(
    /// AK*, the anonymity key from f5* that masks SQN_MS in an AUTS.
    AkStar, "AK*", 6
);
secret!(
    /// RES (or XRES), the 64-bit response from f2. Whoever holds it answers the challenge.
    Res, "RES", 8
);
secret!(
    /// RES*, the UE's 5G response (TS 33.501 Annex A.4).
    ResStar, "RES*", 16
);
secret!(
    /// XRES*, the response the home network expects (TS 33.501 Annex A.4).
    XresStar, "XRES*", 16
);
secret!(
    /// KAUSF (TS 33.501 Annex A.2).
    Kausf, "KAUSF", 32
);
secret!(
    /// KSEAF, the anchor key of the serving network (TS 33.501 Annex A.6).
    Kseaf, "KSEAF", 32
);
secret!(
    /// KAMF (TS 33.501 Annex A.7).
    Kamf, "KAMF", 32
);
secret!(
    /// KNASint, the NAS integrity key (TS 33.501 Annex A.8).
    KnasInt, "KNASint", 16
);
secret!(
    /// KNASenc, the NAS ciphering key (TS 33.501 Annex A.8).
    KnasEnc, "KNASenc", 16
);
secret!(
    /// KgNB (TS 33.501 Annex A.9).
    Kgnb, "KgNB", 32
);

public!(
    /// RAND, the 128-bit challenge.
    Rand, "RAND", 16
);
public!(
    /// SQN, the 48-bit sequence number (TS 33.102 §6.3.7).
    Sqn, "SQN", 6
);
public!(
    /// AMF, the authentication management field of an AUTN (TS 33.102 Annex H).
    Amf, "AMF", 2
);
public!(
    /// MAC-A, the network authentication code from f1.
    MacA, "MAC-A", 8
);
public!(
    /// MAC-S, the resynchronisation authentication code from f1*.
    MacS, "MAC-S", 8
);
public!(
    /// SQN ⊕ AK, the first field of an AUTN and a KAUSF input.
    SqnXorAk, "SQN xor AK", 6
);
public!(
    /// AUTN = SQN ⊕ AK || AMF || MAC-A (TS 33.102 §6.3.2).
    Autn, "AUTN", 16
);
public!(
    /// AUTS = SQN_MS ⊕ AK* || MAC-S (TS 33.102 §6.3.3).
    Auts, "AUTS", 14
);
public!(
    /// HXRES*, which the AUSF hands the SEAF (TS 33.501 Annex A.5).
    HxresStar, "HXRES*", 16
);
public!(
    /// HRES*, which the SEAF computes from the UE's RES* (TS 33.501 Annex A.5).
    HresStar, "HRES*", 16
);

impl Sqn {
    /// Largest SQN: 2^48 - 1.
    pub const MAX: u64 = (1 << 48) - 1;

    /// From a number; above [`Sqn::MAX`] is an error.
    pub fn from_u64(value: u64) -> Result<Self, Error> {
        if value > Self::MAX {
            return Err(Error::invalid("SQN", "above 2^48 - 1"));
        }
        let b = value.to_be_bytes();
        Ok(Self([b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// As a number.
    pub fn to_u64(&self) -> u64 {
        let b = self.0;
        u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
    }
}

fn xor6(a: &[u8; 6], b: &[u8; 6]) -> [u8; 6] {
    let mut out = [0u8; 6];
    for (o, (x, y)) in out.iter_mut().zip(a.iter().zip(b)) {
        *o = x ^ y;
    }
    out
}

impl SqnXorAk {
    /// SQN ⊕ AK, as the home network puts it in an AUTN (TS 33.102 §6.3.2).
    pub fn mask(sqn: &Sqn, ak: &Ak) -> Self {
        Self(xor6(sqn.as_bytes(), ak.as_bytes()))
    }

    /// SQN back from SQN ⊕ AK, as the USIM does with f5 of the RAND.
    pub fn unmask(&self, ak: &Ak) -> Sqn {
        Sqn(xor6(&self.0, ak.as_bytes()))
    }
}

impl Autn {
    /// AUTN = SQN ⊕ AK || AMF || MAC-A (TS 33.102 §6.3.2).
    pub fn new(sqn_xor_ak: &SqnXorAk, amf: &Amf, mac_a: &MacA) -> Self {
        let mut b = [0u8; 16];
        b[..6].copy_from_slice(sqn_xor_ak.as_bytes());
        b[6..8].copy_from_slice(amf.as_bytes());
        b[8..].copy_from_slice(mac_a.as_bytes());
        Self(b)
    }

    /// The SQN ⊕ AK field.
    pub fn sqn_xor_ak(&self) -> SqnXorAk {
        let [a, b, c, d, e, f, ..] = self.0;
        SqnXorAk([a, b, c, d, e, f])
    }

    /// The AMF field.
    pub fn amf(&self) -> Amf {
        Amf([self.0[6], self.0[7]])
    }

    /// The MAC-A field.
    pub fn mac_a(&self) -> MacA {
        let [.., a, b, c, d, e, f, g, h] = self.0;
        MacA([a, b, c, d, e, f, g, h])
    }
}

impl Auts {
    /// AUTS = SQN_MS ⊕ AK* || MAC-S (TS 33.102 §6.3.3).
    pub fn new(concealed_sqn_ms: &[u8; 6], mac_s: &MacS) -> Self {
        let mut b = [0u8; 14];
        b[..6].copy_from_slice(concealed_sqn_ms);
        b[6..].copy_from_slice(mac_s.as_bytes());
        Self(b)
    }

    /// The SQN_MS ⊕ AK* field.
    pub fn concealed_sqn_ms(&self) -> [u8; 6] {
        let [a, b, c, d, e, f, ..] = self.0;
        [a, b, c, d, e, f]
    }

    /// The MAC-S field.
    pub fn mac_s(&self) -> MacS {
        let [.., a, b, c, d, e, f, g, h] = self.0;
        MacS([a, b, c, d, e, f, g, h])
    }
}

impl XresStar {
    /// Whether the UE's RES* is the expected one, in constant time (TS 33.501 §6.1.3.2.0).
    pub fn accepts(&self, res_star: &ResStar) -> bool {
        self.0.ct_eq(res_star.as_bytes()).into()
    }
}

impl HxresStar {
    /// Whether HRES* (from the UE's RES*) matches, in constant time (TS 33.501 §6.1.3.2.0).
    pub fn accepts(&self, hres_star: &HresStar) -> bool {
        self.0.ct_eq(hres_star.as_bytes()).into()
    }
}

impl Res {
    /// Whether the UE's RES is this XRES, in constant time (EPS-AKA, TS 33.102 §6.3.3).
    pub fn accepts(&self, res: &Res) -> bool {
        self == res
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_public_values_are_not() {
        let k = K::from_bytes(&[0xab; 16]);
        assert_eq!(format!("{k:?}"), "K(<redacted>)");
        assert!(!format!("{k:?}").contains("ab"));
        let kamf = Kamf::from_bytes(&[0x5c; 32]);
        assert_eq!(format!("{kamf:?}"), "Kamf(<redacted>)");
        let rand = Rand::from_bytes([0x23; 16]);
        assert_eq!(format!("{rand:?}"), format!("Rand({})", "23".repeat(16)));
    }

    #[test]
    fn wrong_lengths_are_errors() {
        assert_eq!(
            K::from_slice(&[0; 15]),
            Err(Error::Length {
                what: "K",
                expected: 16,
                got: 15
            })
        );
        assert!(Sqn::from_slice(&[0; 7]).is_err());
        assert!(Kamf::from_slice(&[]).is_err());
        assert!(Sqn::from_u64(Sqn::MAX + 1).is_err());
    }

    #[test]
    fn sqn_round_trips_and_masks() {
        let sqn = Sqn::from_u64(0xff9b_b4d0_b607).unwrap();
        assert_eq!(sqn.as_bytes(), &[0xff, 0x9b, 0xb4, 0xd0, 0xb6, 0x07]);
        assert_eq!(sqn.to_u64(), 0xff9b_b4d0_b607);
        let ak = Ak::from_bytes(&[0xaa, 0x68, 0x9c, 0x64, 0x83, 0x70]);
        let masked = SqnXorAk::mask(&sqn, &ak);
        assert_eq!(masked.unmask(&ak), sqn);
        let autn = Autn::new(
            &masked,
            &Amf::from_bytes([0xb9, 0xb9]),
            &MacA::from_bytes([7; 8]),
        );
        assert_eq!(autn.sqn_xor_ak(), masked);
        assert_eq!(autn.amf().as_bytes(), &[0xb9, 0xb9]);
        assert_eq!(autn.mac_a().as_bytes(), &[7; 8]);
    }

    #[test]
    fn secret_equality_is_by_value() {
        assert_eq!(Ck::from_bytes(&[1; 16]), Ck::from_bytes(&[1; 16]));
        assert_ne!(Ck::from_bytes(&[1; 16]), Ck::from_bytes(&[2; 16]));
    }
}
