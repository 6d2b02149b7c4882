//! The emulated USIM: MILENAGE with the subscriber's K and OPc, and the SQN freshness
//! check of TS 33.102 §6.3.3 / Annex C.2 with an IND-indexed array of SEQ values.
//!
//! SQN = SEQ || IND, IND the low [`IND_BITS`] bits (Annex C.3.2), the layout the UDM's
//! SQN shard issues (`store::sqn`). The USIM accepts a SQN when its SEQ is above the
//! SEQ last accepted in the same IND slot (Annex C.2.2) and not more than [`DELTA`]
//! ahead of the highest SEQ accepted in any slot (Annex C.2.1), which stops a replayed
//! or wildly advanced AUTN alike.

use security::aka::UsimResult;
use security::milenage::Milenage;
use security::{Amf, Autn, Auts, Opc, Rand, Sqn, K};

/// Bits of IND in SQN (TS 33.102 Annex C.3.2), as the UDM uses them.
pub const IND_BITS: u32 = 5;

/// Δ of TS 33.102 Annex C.2.1: how far ahead of the highest accepted SEQ a SEQ may be.
/// Annex C.3.3 suggests 2^28.
pub const DELTA: u64 = 1 << 28;

const SLOTS: usize = 1 << IND_BITS;
const IND_MASK: u64 = (1 << IND_BITS) - 1;

/// What the USIM made of an AUTN.
#[derive(Debug)]
pub(crate) enum UsimCheck {
    /// MAC-A and SQN both good: the USIM's outputs.
    Ok(UsimResult),
    /// MAC-A did not verify (TS 33.102 §6.3.3): cause #20.
    MacFailure,
    /// SQN out of range: cause #21 with this AUTS.
    SynchFailure(Auts),
}

/// The USIM's long-term secrets and SQN state.
pub(crate) struct Usim {
    milenage: Milenage,
    /// SEQ_MS per IND slot (Annex C.2.2).
    seq: [u64; SLOTS],
    /// The highest SQN accepted, the SQN_MS that goes into AUTS (Annex C.3.4).
    sqn_ms: u64,
    /// The SQN of the last AUTN whose MAC verified, fresh or not.
    last_seen: Option<u64>,
}

impl core::fmt::Debug for Usim {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Usim")
            .field("sqn_ms", &self.sqn_ms)
            .finish_non_exhaustive()
    }
}

impl Usim {
    /// A USIM provisioned with `sqn`: the SQN last issued to it (the store's value),
    /// so the next one the UDM issues is fresh.
    pub(crate) fn new(k: &[u8; 16], opc: &[u8; 16], sqn: u64) -> Self {
        let mut usim = Self {
            milenage: Milenage::new(&K::from_bytes(k), &Opc::from_bytes(opc)),
            seq: [0; SLOTS],
            sqn_ms: 0,
            last_seen: None,
        };
        usim.set_sqn(sqn);
        usim
    }

    /// Forces SQN_MS: every slot to the SEQ of `sqn`. A test hook to provoke a
    /// resynchronisation (set it ahead of the network).
    pub(crate) fn set_sqn(&mut self, sqn: u64) {
        let sqn = sqn & Sqn::MAX;
        self.seq = [sqn >> IND_BITS; SLOTS];
        self.sqn_ms = sqn;
    }

    /// Replaces K (keeping OPc): a test hook to provoke MAC failures.
    pub(crate) fn set_k(&mut self, k: &[u8; 16], opc: &[u8; 16]) {
        self.milenage = Milenage::new(&K::from_bytes(k), &Opc::from_bytes(opc));
    }

    /// SQN_MS: the highest SQN accepted (or provisioned).
    pub(crate) fn sqn_ms(&self) -> u64 {
        self.sqn_ms
    }

    /// The SQN of the last AUTN whose MAC verified (accepted or not): the network handed it
    /// out, so a restarted UDM that handed it out again shows here.
    pub(crate) fn last_seen(&self) -> Option<u64> {
        self.last_seen
    }

    /// TS 33.102 §6.3.3: verify MAC-A, then check SQN freshness; on success the SQN
    /// is recorded as accepted.
    pub(crate) fn authenticate(&mut self, rand: &Rand, autn: &Autn) -> UsimCheck {
        let Ok(res) = self.milenage.check_autn(rand, autn) else {
            return UsimCheck::MacFailure;
        };
        let sqn = res.sqn.to_u64();
        self.last_seen = Some(sqn);
        let (seq, ind) = (sqn >> IND_BITS, (sqn & IND_MASK) as usize);
        let highest = self.sqn_ms >> IND_BITS;
        let slot = self.seq.get(ind).copied().unwrap_or(u64::MAX);
        // Annex C.2.2: SEQ must exceed the slot's SEQ_MS; Annex C.2.1: and lie within
        // Δ of the highest SEQ accepted.
        if seq <= slot || seq.saturating_sub(highest) > DELTA {
            let sqn_ms = Sqn::from_u64(self.sqn_ms).unwrap_or(Sqn::from_bytes([0; 6]));
            return UsimCheck::SynchFailure(self.milenage.auts(rand, &sqn_ms));
        }
        if let Some(s) = self.seq.get_mut(ind) {
            *s = seq;
        }
        if seq > highest || (seq == highest && sqn > self.sqn_ms) {
            self.sqn_ms = sqn;
        }
        UsimCheck::Ok(res)
    }

    /// The AMF field's separation bit (TS 33.501 §6.1.3.2, Annex A: bit 0 of AMF).
    pub(crate) fn separation_bit(amf: &Amf) -> bool {
        amf.as_bytes()[0] & 0x80 != 0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const K_: [u8; 16] = [0x46; 16];
    const OPC: [u8; 16] = [0xcd; 16];

    fn autn(sqn: u64, rand: &Rand) -> Autn {
        let m = Milenage::new(&K::from_bytes(&K_), &Opc::from_bytes(&OPC));
        m.auth_vector(
            rand,
            &Sqn::from_u64(sqn).unwrap(),
            &Amf::from_bytes([0x80, 0]),
        )
        .autn
    }

    #[test]
    fn fresh_sqn_is_accepted_once() {
        let mut u = Usim::new(&K_, &OPC, 0);
        let rand = Rand::from_bytes([7; 16]);
        let a = autn(0x20, &rand);
        assert!(matches!(u.authenticate(&rand, &a), UsimCheck::Ok(_)));
        assert_eq!(u.sqn_ms(), 0x20);
        // Replay: same SQN again.
        assert!(matches!(
            u.authenticate(&rand, &a),
            UsimCheck::SynchFailure(_)
        ));
    }

    #[test]
    fn another_ind_slot_accepts_an_older_seq() {
        let mut u = Usim::new(&K_, &OPC, 0x40);
        let rand = Rand::from_bytes([9; 16]);
        // SEQ 3, IND 0 then SEQ 3, IND 1: both fresh in their slots.
        assert!(matches!(
            u.authenticate(&rand, &autn(0x60, &rand)),
            UsimCheck::Ok(_)
        ));
        assert!(matches!(
            u.authenticate(&rand, &autn(0x61, &rand)),
            UsimCheck::Ok(_)
        ));
        assert_eq!(u.sqn_ms(), 0x61);
    }

    #[test]
    fn too_far_ahead_is_a_synch_failure() {
        let mut u = Usim::new(&K_, &OPC, 0);
        let rand = Rand::from_bytes([1; 16]);
        let far = (DELTA + 2) << IND_BITS;
        assert!(matches!(
            u.authenticate(&rand, &autn(far, &rand)),
            UsimCheck::SynchFailure(_)
        ));
    }

    #[test]
    fn wrong_k_is_a_mac_failure() {
        let mut u = Usim::new(&[0x11; 16], &OPC, 0);
        let rand = Rand::from_bytes([1; 16]);
        assert!(matches!(
            u.authenticate(&rand, &autn(0x20, &rand)),
            UsimCheck::MacFailure
        ));
    }
}
