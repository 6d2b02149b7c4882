//! The AKA exchanges around MILENAGE (TS 33.102 §6.3): the home network's authentication
//! vector with its AUTN, the USIM's check of an AUTN, and resynchronisation with AUTS.
//!
//! SQN freshness (the window of TS 33.102 Annex C) is the caller's decision: a UDM shard owns
//! the SQN, the UE emulator owns SQN_MS. This module only builds and checks the tokens.

use oxirush_security::Autn as OxAutn;

use crate::keys::{Ak, Amf, Autn, Auts, Ck, Ik, MacA, Rand, Res, Sqn, SqnXorAk};
use crate::milenage::{ox_rand, Milenage};
use crate::Error;

/// What the home network generates for one authentication (TS 33.102 §6.3.2): RAND, XRES,
/// CK, IK, AUTN; AK is kept for the 5G derivations that take SQN ⊕ AK.
#[derive(Debug, Clone)]
pub struct AuthVector {
    /// The challenge.
    pub rand: Rand,
    /// XRES, f2 of RAND.
    pub xres: Res,
    /// CK, f3 of RAND.
    pub ck: Ck,
    /// IK, f4 of RAND.
    pub ik: Ik,
    /// AK, f5 of RAND.
    pub ak: Ak,
    /// AUTN = SQN ⊕ AK || AMF || MAC-A.
    pub autn: Autn,
}

impl AuthVector {
    /// SQN ⊕ AK, the KAUSF input (TS 33.501 Annex A.2).
    pub fn sqn_xor_ak(&self) -> SqnXorAk {
        self.autn.sqn_xor_ak()
    }
}

/// What the USIM yields once an AUTN's MAC-A has verified (TS 33.102 §6.3.3).
#[derive(Debug, Clone)]
pub struct UsimResult {
    /// The network's SQN, unmasked with AK. Freshness is for the caller to check.
    pub sqn: Sqn,
    /// The AMF of the AUTN.
    pub amf: Amf,
    /// RES, f2 of RAND.
    pub res: Res,
    /// CK.
    pub ck: Ck,
    /// IK.
    pub ik: Ik,
}

impl Milenage {
    /// The home network's vector for `rand`, `sqn` and `amf` (TS 33.102 §6.3.2):
    /// MAC-A = f1(SQN, AMF), AUTN = SQN ⊕ AK || AMF || MAC-A.
    pub fn auth_vector(&self, rand: &Rand, sqn: &Sqn, amf: &Amf) -> AuthVector {
        let f = self.f2345(rand);
        let mac_a: MacA = self.f1(rand, sqn, amf);
        let autn = Autn::new(&SqnXorAk::mask(sqn, &f.ak), amf, &mac_a);
        AuthVector {
            rand: *rand,
            xres: f.res,
            ck: f.ck,
            ik: f.ik,
            ak: f.ak,
            autn,
        }
    }

    /// The USIM's check of an AUTN (TS 33.102 §6.3.3): unmask SQN with f5, recompute MAC-A
    /// with f1 and compare in constant time. A wrong MAC-A is [`Error::MacFailure`].
    pub fn check_autn(&self, rand: &Rand, autn: &Autn) -> Result<UsimResult, Error> {
        let r = self
            .inner()
            .check_autn(&ox_rand(rand), &OxAutn::new(autn.as_bytes()))
            .map_err(|e| match e {
                oxirush_security::SecurityError::MacFailure => Error::MacFailure,
                other => Error::from(other),
            })?;
        Ok(UsimResult {
            sqn: Sqn::from_bytes(*r.sqn().as_octets()),
            amf: Amf::from_bytes(*r.amf().as_octets()),
            res: Res::from_bytes(r.res().as_octets()),
            ck: Ck::from_bytes(r.ck().as_octets()),
            ik: Ik::from_bytes(r.ik().as_octets()),
        })
    }

    /// The USIM's AUTS for a SQN out of range (TS 33.102 §6.3.3): SQN_MS ⊕ AK* || MAC-S,
    /// MAC-S = f1*(SQN_MS, AMF = 0x0000) — the dummy AMF that §6.3.3 prescribes.
    pub fn auts(&self, rand: &Rand, sqn_ms: &Sqn) -> Auts {
        let ak_star = self.f5_star(rand);
        let mac_s = self.f1_star(rand, sqn_ms, &Amf::from_bytes([0, 0]));
        let mut concealed = [0u8; 6];
        for (c, (s, a)) in concealed
            .iter_mut()
            .zip(sqn_ms.as_bytes().iter().zip(ak_star.as_bytes()))
        {
            *c = s ^ a;
        }
        Auts::new(&concealed, &mac_s)
    }

    /// The home network's reading of an AUTS (TS 33.102 §6.3.5): SQN_MS unmasked with f5*,
    /// then MAC-S checked with f1* (AMF = 0x0000). A wrong MAC-S is
    /// [`Error::ResyncMacFailure`] and SQN_MS must then not be used.
    pub fn resync(&self, rand: &Rand, auts: &Auts) -> Result<Sqn, Error> {
        let ox_auts = oxirush_security::milenage::Auts::new(auts.as_bytes());
        match self.inner().verify_auts(&ox_rand(rand), &ox_auts) {
            Ok(sqn) => Ok(Sqn::from_bytes(*sqn.as_octets())),
            Err(oxirush_security::SecurityError::MacFailure) => Err(Error::ResyncMacFailure),
            Err(other) => Err(Error::from(other)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::keys::{Opc, K};
    use crate::milenage::ox_sqn;

    fn subscriber() -> Milenage {
        Milenage::new(&K::from_bytes(&[0x46; 16]), &Opc::from_bytes(&[0xcd; 16]))
    }

    #[test]
    fn a_vector_passes_the_usim_check() {
        let m = subscriber();
        let rand = Rand::from_bytes([0x23; 16]);
        let sqn = Sqn::from_u64(0x21).unwrap();
        let amf = Amf::from_bytes([0x80, 0x00]);
        let av = m.auth_vector(&rand, &sqn, &amf);
        let usim = m.check_autn(&rand, &av.autn).unwrap();
        assert_eq!(usim.sqn, sqn);
        assert_eq!(usim.amf, amf);
        assert!(av.xres.accepts(&usim.res));
        assert_eq!(usim.ck, av.ck);
        assert_eq!(usim.ik, av.ik);
        assert_eq!(av.sqn_xor_ak().unmask(&av.ak), sqn);
    }

    #[test]
    fn a_flipped_autn_bit_is_a_mac_failure() {
        let m = subscriber();
        let rand = Rand::from_bytes([0x23; 16]);
        let av = m.auth_vector(
            &rand,
            &Sqn::from_u64(1).unwrap(),
            &Amf::from_bytes([0x80, 0]),
        );
        for bit in 0..128 {
            let mut b = *av.autn.as_bytes();
            b[bit / 8] ^= 0x80 >> (bit % 8);
            assert_eq!(
                m.check_autn(&rand, &Autn::from_bytes(b)).unwrap_err(),
                Error::MacFailure,
                "bit {bit}"
            );
        }
        // Another subscriber's K fails too.
        let other = Milenage::new(&K::from_bytes(&[0x47; 16]), &Opc::from_bytes(&[0xcd; 16]));
        assert_eq!(
            other.check_autn(&rand, &av.autn).unwrap_err(),
            Error::MacFailure
        );
    }

    #[test]
    fn auts_round_trips_and_rejects_a_bad_mac_s() {
        let m = subscriber();
        let rand = Rand::from_bytes([0x99; 16]);
        let sqn_ms = Sqn::from_u64(0x0000_1234_5678).unwrap();
        let auts = m.auts(&rand, &sqn_ms);
        assert_eq!(m.resync(&rand, &auts).unwrap(), sqn_ms);
        // The library's own AUTS agrees with ours (same layout, AMF 0x0000).
        let lib = m.inner().auts(&ox_rand(&rand), &ox_sqn(&sqn_ms));
        assert_eq!(lib.as_octets(), auts.as_bytes());
        let mut bad = *auts.as_bytes();
        bad[13] ^= 1;
        assert_eq!(
            m.resync(&rand, &Auts::from_bytes(bad)).unwrap_err(),
            Error::ResyncMacFailure
        );
    }
}
