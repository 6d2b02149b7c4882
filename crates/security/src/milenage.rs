//! MILENAGE, the 3GPP example algorithm set for f1, f1*, f2, f3, f4, f5 and f5*
//! (TS 35.206 §4.1), on oxirush-security, with the standard constants c1..c5 and r1..r5.

use oxirush_security::milenage as ox;
use oxirush_security::Rand as OxRand;

use crate::keys::{Ak, AkStar, Amf, Ck, Ik, MacA, MacS, Op, Opc, Rand, Res, Sqn, K};

/// OPc = OP ⊕ E\[OP\]K (TS 35.206 §4.1), which the operator computes once per subscriber.
pub fn opc_from_op(k: &K, op: &Op) -> Opc {
    let k = ox::K::new(k.as_bytes());
    let op = ox::Op::new(op.as_bytes());
    Opc::from_bytes(ox::Opc::from_op(&k, &op).as_octets())
}

/// The outputs of f2..f5 for one RAND.
#[derive(Debug, Clone)]
pub struct F2345 {
    /// RES (XRES on the network side), from f2.
    pub res: Res,
    /// CK, from f3.
    pub ck: Ck,
    /// IK, from f4.
    pub ik: Ik,
    /// AK, from f5.
    pub ak: Ak,
}

/// MILENAGE keyed by one subscriber's K and OPc. Holds key material: wiped on drop by the
/// library, and `{:?}` shows nothing of it.
pub struct Milenage {
    inner: ox::Milenage,
}

impl core::fmt::Debug for Milenage {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Milenage(<redacted>)")
    }
}

impl Milenage {
    /// Keyed by K and OPc.
    pub fn new(k: &K, opc: &Opc) -> Self {
        let k = ox::K::new(k.as_bytes());
        let opc = ox::Opc::new(opc.as_bytes());
        Self {
            inner: ox::Milenage::new(&k, &opc),
        }
    }

    /// Keyed by K and OP: OPc is computed first (TS 35.206 §4.1).
    pub fn with_op(k: &K, op: &Op) -> Self {
        Self::new(k, &opc_from_op(k, op))
    }

    pub(crate) fn inner(&self) -> &ox::Milenage {
        &self.inner
    }

    /// f1: MAC-A over SQN and AMF, the network authentication code.
    pub fn f1(&self, rand: &Rand, sqn: &Sqn, amf: &Amf) -> MacA {
        let out = self.inner.f1(&ox_rand(rand), &ox_sqn(sqn), &ox_amf(amf));
        MacA::from_bytes(*out.as_octets())
    }

    /// f1*: MAC-S over SQN_MS and AMF, the resynchronisation code.
    pub fn f1_star(&self, rand: &Rand, sqn_ms: &Sqn, amf: &Amf) -> MacS {
        let out = self
            .inner
            .f1_star(&ox_rand(rand), &ox_sqn(sqn_ms), &ox_amf(amf));
        MacS::from_bytes(*out.as_octets())
    }

    /// f2: RES.
    pub fn f2(&self, rand: &Rand) -> Res {
        Res::from_bytes(self.inner.f2(&ox_rand(rand)).as_octets())
    }

    /// f3: CK.
    pub fn f3(&self, rand: &Rand) -> Ck {
        Ck::from_bytes(self.inner.f3(&ox_rand(rand)).as_octets())
    }

    /// f4: IK.
    pub fn f4(&self, rand: &Rand) -> Ik {
        Ik::from_bytes(self.inner.f4(&ox_rand(rand)).as_octets())
    }

    /// f5: AK.
    pub fn f5(&self, rand: &Rand) -> Ak {
        Ak::from_bytes(self.inner.f5(&ox_rand(rand)).as_octets())
    }

    /// f5*: AK*, the anonymity key of resynchronisation.
    pub fn f5_star(&self, rand: &Rand) -> AkStar {
        AkStar::from_bytes(self.inner.f5_star(&ox_rand(rand)).as_octets())
    }

    /// f2, f3, f4 and f5 in one pass (they share E\[RAND ⊕ OPc\]K).
    pub fn f2345(&self, rand: &Rand) -> F2345 {
        let (res, ck, ik, ak) = self.inner.f2345(&ox_rand(rand));
        F2345 {
            res: Res::from_bytes(res.as_octets()),
            ck: Ck::from_bytes(ck.as_octets()),
            ik: Ik::from_bytes(ik.as_octets()),
            ak: Ak::from_bytes(ak.as_octets()),
        }
    }
}

pub(crate) fn ox_rand(rand: &Rand) -> OxRand {
    OxRand::new(rand.as_bytes())
}

pub(crate) fn ox_sqn(sqn: &Sqn) -> ox::Sqn {
    ox::Sqn::new(sqn.as_bytes())
}

pub(crate) fn ox_amf(amf: &Amf) -> ox::Amf {
    ox::Amf::new(amf.as_bytes())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_key() {
        let m = Milenage::new(&K::from_bytes(&[0x46; 16]), &Opc::from_bytes(&[0xcd; 16]));
        assert_eq!(format!("{m:?}"), "Milenage(<redacted>)");
    }

    #[test]
    fn f2345_agrees_with_the_single_functions() {
        let m = Milenage::new(&K::from_bytes(&[1; 16]), &Opc::from_bytes(&[2; 16]));
        let rand = Rand::from_bytes([3; 16]);
        let all = m.f2345(&rand);
        assert_eq!(all.res, m.f2(&rand));
        assert_eq!(all.ck, m.f3(&rand));
        assert_eq!(all.ik, m.f4(&rand));
        assert_eq!(all.ak, m.f5(&rand));
    }
}
