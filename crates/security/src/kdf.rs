//! The 5G-AKA key chain of TS 33.501 Annex A on oxirush-security: KAUSF (A.2), RES*/XRES*
//! (A.4), HRES*/HXRES* (A.5), KSEAF (A.6), KAMF (A.7), the NAS algorithm keys (A.8) and
//! KgNB (A.9). Every derivation is the generic KDF of TS 33.220 Annex B.2:
//! HMAC-SHA-256(key, FC || P0 || L0 || P1 || L1 ...).
//!
//! Who calls what: the UDM derives KAUSF and XRES*, the AUSF HXRES* and KSEAF, the AMF KAMF,
//! the NAS keys and KgNB; the UE emulator all of them, with RES* in place of XRES*.

use oxirush_security::nas_5gs as ox;
use oxirush_security::{Autn as OxAutn, Ck as OxCk, Ik as OxIk};

use crate::keys::{
    Ck, HresStar, HxresStar, Ik, Kamf, Kausf, Kgnb, KnasEnc, KnasInt, Kseaf, Rand, Res, ResStar,
    SqnXorAk, XresStar,
};
use crate::milenage::ox_rand;
use crate::nas::{CipheringAlgorithm, IntegrityAlgorithm};
use crate::Error;

/// FC of KAMF (TS 33.501 Annex A.7.1).
const FC_KAMF: u8 = 0x6d;

/// The serving network name (TS 24.501 §9.12.1), e.g. `5G:mnc001.mcc001.3gppnetwork.org`:
/// a KDF parameter of KAUSF, RES* and KSEAF, so both ends must agree on every byte.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServingNetworkName(String);

impl ServingNetworkName {
    /// Any non-empty printable ASCII name up to 65535 bytes (the KDF's length field).
    pub fn new(name: &str) -> Result<Self, Error> {
        if name.is_empty() {
            return Err(Error::invalid("serving network name", "empty"));
        }
        if name.len() > usize::from(u16::MAX) {
            return Err(Error::invalid(
                "serving network name",
                "longer than 65535 bytes",
            ));
        }
        if !name.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::invalid(
                "serving network name",
                "not printable ASCII",
            ));
        }
        Ok(Self(name.to_owned()))
    }

    /// The name of a PLMN: `5G:mncXXX.mccYYY.3gppnetwork.org`, a 2-digit MNC padded with a
    /// leading zero (TS 24.501 §9.12.1, TS 23.003 §28.2).
    pub fn from_plmn(mcc: &str, mnc: &str) -> Result<Self, Error> {
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if mcc.len() != 3 || !digits(mcc) {
            return Err(Error::invalid("MCC", "not 3 digits"));
        }
        if !(2..=3).contains(&mnc.len()) || !digits(mnc) {
            return Err(Error::invalid("MNC", "not 2 or 3 digits"));
        }
        Self::new(&format!("5G:mnc{mnc:0>3}.mcc{mcc}.3gppnetwork.org"))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A SUPI of IMSI type, `imsi-` followed by 5 to 15 digits (TS 23.003 §2.2A, TS 29.571
/// §5.3.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Supi(String);

impl Supi {
    /// From its SBI form, `imsi-DIGITS`.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let digits = text
            .strip_prefix("imsi-")
            .ok_or(Error::invalid("SUPI", "not of the form imsi-DIGITS"))?;
        Self::imsi(digits)
    }

    /// From the IMSI digits.
    pub fn imsi(digits: &str) -> Result<Self, Error> {
        if !(5..=15).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::invalid("SUPI", "the IMSI is not 5 to 15 digits"));
        }
        Ok(Self(digits.to_owned()))
    }

    /// The IMSI digits: what KAMF takes as P0 (TS 33.501 Annex A.7.0).
    pub fn digits(&self) -> &str {
        &self.0
    }
}

impl core::fmt::Display for Supi {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "imsi-{}", self.0)
    }
}

/// ABBA, the anti-bidding-down parameter (TS 33.501 Annex A.7.1; IE of TS 24.501
/// §9.11.3.10): 2 to 255 bytes, `0x0000` in the releases so far.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Abba(Vec<u8>);

impl Abba {
    /// From its bytes.
    pub fn new(bytes: &[u8]) -> Result<Self, Error> {
        if !(2..=255).contains(&bytes.len()) {
            return Err(Error::invalid("ABBA", "not 2 to 255 bytes"));
        }
        Ok(Self(bytes.to_vec()))
    }

    /// Its bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Default for Abba {
    fn default() -> Self {
        Self(vec![0, 0])
    }
}

fn ox_ck(ck: &Ck) -> OxCk {
    OxCk::new(ck.as_bytes())
}

fn ox_ik(ik: &Ik) -> OxIk {
    OxIk::new(ik.as_bytes())
}

/// KAUSF = KDF(CK || IK, FC 0x6A, SN name, SQN ⊕ AK) (TS 33.501 Annex A.2).
///
/// The `Result` of this and the other derivations over the serving network name or the
/// SUPI is the library's length check on a KDF parameter, which [`ServingNetworkName`],
/// [`Supi`] and [`Abba`] already guarantee; it is passed on rather than papered over with
/// a made-up key.
pub fn kausf(
    ck: &Ck,
    ik: &Ik,
    snn: &ServingNetworkName,
    sqn_xor_ak: &SqnXorAk,
) -> Result<Kausf, Error> {
    // Of the AUTN the derivation reads SQN ⊕ AK alone; AMF and MAC-A are left zero.
    let mut autn = [0u8; 16];
    autn[..6].copy_from_slice(sqn_xor_ak.as_bytes());
    let k = ox::derive_kausf(
        &ox_ck(ck),
        &ox_ik(ik),
        snn.as_str().as_bytes(),
        &OxAutn::new(&autn),
    )?;
    Ok(Kausf::from_bytes(k.as_octets()))
}

/// RES* = the low 128 bits of KDF(CK || IK, FC 0x6B, SN name, RAND, RES) (TS 33.501
/// Annex A.4), on the UE side.
pub fn res_star(
    ck: &Ck,
    ik: &Ik,
    snn: &ServingNetworkName,
    rand: &Rand,
    res: &Res,
) -> Result<ResStar, Error> {
    let r = ox::compute_res_star(
        &ox_ck(ck),
        &ox_ik(ik),
        snn.as_str().as_bytes(),
        &ox_rand(rand),
        res.as_bytes(),
    )?;
    Ok(ResStar::from_bytes(r.as_octets()))
}

/// XRES*, the same derivation over XRES in the home network (TS 33.501 Annex A.4).
pub fn xres_star(
    ck: &Ck,
    ik: &Ik,
    snn: &ServingNetworkName,
    rand: &Rand,
    xres: &Res,
) -> Result<XresStar, Error> {
    let x = ox::compute_xres_star(
        &ox_ck(ck),
        &ox_ik(ik),
        snn.as_str().as_bytes(),
        &ox_rand(rand),
        xres.as_bytes(),
    )?;
    Ok(XresStar::from_bytes(x.as_octets()))
}

/// HXRES* = the low 128 bits of SHA-256(RAND || XRES*) (TS 33.501 Annex A.5), in the AUSF.
pub fn hxres_star(rand: &Rand, xres_star: &XresStar) -> HxresStar {
    let x = ox::XresStar::new(xres_star.as_bytes());
    HxresStar::from_bytes(*ox::compute_hxres_star(&ox_rand(rand), &x).as_octets())
}

/// HRES* = the low 128 bits of SHA-256(RAND || RES*) (TS 33.501 Annex A.5), in the SEAF.
pub fn hres_star(rand: &Rand, res_star: &ResStar) -> HresStar {
    let r = ox::ResStar::new(res_star.as_bytes());
    HresStar::from_bytes(*ox::compute_hres_star(&ox_rand(rand), &r).as_octets())
}

/// KSEAF = KDF(KAUSF, FC 0x6C, SN name) (TS 33.501 Annex A.6).
pub fn kseaf(kausf: &Kausf, snn: &ServingNetworkName) -> Result<Kseaf, Error> {
    let k = ox::derive_kseaf(&ox::KAusf::new(kausf.as_bytes()), snn.as_str().as_bytes())?;
    Ok(Kseaf::from_bytes(k.as_octets()))
}

/// KAMF = KDF(KSEAF, FC 0x6D, SUPI digits, ABBA) (TS 33.501 Annex A.7).
///
/// Through the generic KDF rather than `derive_kamf`, whose SUPI type wants 6 digits or
/// more; TS 23.003 allows the 5-digit IMSIs our test plans use.
pub fn kamf(kseaf: &Kseaf, supi: &Supi, abba: &Abba) -> Result<Kamf, Error> {
    let s = oxirush_security::kdf::build_s(FC_KAMF, &[supi.digits().as_bytes(), abba.as_bytes()])?;
    let s = zeroize::Zeroizing::new(s);
    Ok(Kamf::from_bytes(&oxirush_security::kdf::kdf(
        kseaf.as_bytes(),
        &s,
    )))
}

/// KNASint for `algorithm`: the low 128 bits of KDF(KAMF, FC 0x69, 0x02, algorithm id)
/// (TS 33.501 Annex A.8).
pub fn knas_int(kamf: &Kamf, algorithm: IntegrityAlgorithm) -> KnasInt {
    let alg = oxirush_security::IntegrityAlgorithm::try_from(algorithm.id())
        .unwrap_or(oxirush_security::IntegrityAlgorithm::NIA0);
    let k = ox::derive_knas_int(&ox::KAmf::new(kamf.as_bytes()), alg);
    KnasInt::from_bytes(k.as_octets())
}

/// KNASenc for `algorithm`: the low 128 bits of KDF(KAMF, FC 0x69, 0x01, algorithm id)
/// (TS 33.501 Annex A.8).
pub fn knas_enc(kamf: &Kamf, algorithm: CipheringAlgorithm) -> KnasEnc {
    let alg = oxirush_security::CipheringAlgorithm::try_from(algorithm.id())
        .unwrap_or(oxirush_security::CipheringAlgorithm::NEA0);
    let k = ox::derive_knas_enc(&ox::KAmf::new(kamf.as_bytes()), alg);
    KnasEnc::from_bytes(k.as_octets())
}

/// KgNB = KDF(KAMF, FC 0x6E, uplink NAS COUNT, access type 0x01 (3GPP)) (TS 33.501
/// Annex A.9). `ul_nas_count` is the 24-bit NAS COUNT of the message that triggered the
/// derivation, or 2^32 - 1 at a handover (§6.9.2.3.3); anything else is an error.
pub fn kgnb(kamf: &Kamf, ul_nas_count: u32) -> Result<Kgnb, Error> {
    let count = oxirush_security::AccessKeyCount::try_from(ul_nas_count)
        .map_err(|_| Error::invalid("uplink NAS COUNT", "above 2^24 - 1"))?;
    let k = ox::derive_kgnb(&ox::KAmf::new(kamf.as_bytes()), count);
    Ok(Kgnb::from_bytes(k.as_octets()))
}

/// Every key and response of one 5G-AKA run from CK, IK and the vector's public parts: what
/// the UDM + AUSF + SEAF + AMF chain computes, in one call (and what `steer5g crypto kdf`
/// prints).
#[derive(Debug, Clone)]
pub struct AkaKeys {
    /// KAUSF.
    pub kausf: Kausf,
    /// XRES* (equal to the UE's RES* when RES = XRES).
    pub xres_star: XresStar,
    /// HXRES*.
    pub hxres_star: HxresStar,
    /// KSEAF.
    pub kseaf: Kseaf,
    /// KAMF.
    pub kamf: Kamf,
}

/// The parameters of [`aka_keys`] that travel in clear.
#[derive(Debug, Clone)]
pub struct AkaContext<'a> {
    /// The serving network name.
    pub snn: &'a ServingNetworkName,
    /// RAND of the vector.
    pub rand: &'a Rand,
    /// SQN ⊕ AK of the AUTN.
    pub sqn_xor_ak: &'a SqnXorAk,
    /// The subscriber.
    pub supi: &'a Supi,
    /// ABBA.
    pub abba: &'a Abba,
}

/// The whole chain: KAUSF, XRES*, HXRES*, KSEAF, KAMF.
pub fn aka_keys(ck: &Ck, ik: &Ik, xres: &Res, ctx: &AkaContext<'_>) -> Result<AkaKeys, Error> {
    let kausf = kausf(ck, ik, ctx.snn, ctx.sqn_xor_ak)?;
    let xres_star = xres_star(ck, ik, ctx.snn, ctx.rand, xres)?;
    let hxres_star = hxres_star(ctx.rand, &xres_star);
    let kseaf = kseaf(&kausf, ctx.snn)?;
    let kamf = kamf(&kseaf, ctx.supi, ctx.abba)?;
    Ok(AkaKeys {
        kausf,
        xres_star,
        hxres_star,
        kseaf,
        kamf,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn serving_network_name_of_the_test_plmn() {
        let snn = ServingNetworkName::from_plmn("001", "01").unwrap();
        assert_eq!(snn.as_str(), "5G:mnc001.mcc001.3gppnetwork.org");
        let snn = ServingNetworkName::from_plmn("208", "093").unwrap();
        assert_eq!(snn.as_str(), "5G:mnc093.mcc208.3gppnetwork.org");
        assert!(ServingNetworkName::from_plmn("20", "93").is_err());
        assert!(ServingNetworkName::new("").is_err());
        assert!(ServingNetworkName::new("5G: bad").is_err());
    }

    #[test]
    fn supi_and_abba_rules() {
        assert_eq!(Supi::parse("imsi-00101").unwrap().digits(), "00101");
        assert_eq!(
            Supi::parse("imsi-001010000000001").unwrap().to_string(),
            "imsi-001010000000001"
        );
        for bad in [
            "imsi-0010",
            "imsi-0010100000000011",
            "nai-x@y",
            "imsi-00a01",
            "00101",
        ] {
            assert!(Supi::parse(bad).is_err(), "{bad}");
        }
        assert!(Abba::new(&[0]).is_err());
        assert!(Abba::new(&[0; 256]).is_err());
        assert_eq!(Abba::default().as_bytes(), &[0, 0]);
    }

    #[test]
    fn kgnb_refuses_a_count_above_24_bits() {
        let kamf = Kamf::from_bytes(&[1; 32]);
        assert!(kgnb(&kamf, 1 << 24).is_err());
        assert!(kgnb(&kamf, u32::MAX).is_ok());
        assert_ne!(kgnb(&kamf, 0).unwrap(), kgnb(&kamf, 1).unwrap());
    }

    #[test]
    fn res_star_and_xres_star_agree_and_hashes_match() {
        let (ck, ik) = (Ck::from_bytes(&[1; 16]), Ik::from_bytes(&[2; 16]));
        let snn = ServingNetworkName::from_plmn("001", "01").unwrap();
        let rand = Rand::from_bytes([3; 16]);
        let res = Res::from_bytes(&[4; 8]);
        let x = xres_star(&ck, &ik, &snn, &rand, &res).unwrap();
        let r = res_star(&ck, &ik, &snn, &rand, &res).unwrap();
        assert!(x.accepts(&r));
        assert!(hxres_star(&rand, &x).accepts(&hres_star(&rand, &r)));
        let wrong = res_star(&ck, &ik, &snn, &rand, &Res::from_bytes(&[5; 8])).unwrap();
        assert!(!x.accepts(&wrong));
    }
}
