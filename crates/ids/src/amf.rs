//! AMF identifiers: the AMF-UE-NGAP-ID and the 5G-TMSI carry the worker that holds the UE
//! context, and a new UE (no identifier of ours yet) is placed by a hash of the gNB's ids.

use crate::worker::{owner_of_key, WorkerId, Workers};

/// Bits of an AMF-UE-NGAP-ID (TS 38.413 §9.3.3.1: INTEGER (0..2^40 - 1)).
pub const AMF_UE_NGAP_ID_BITS: u32 = 40;
/// Bits of the per-worker counter inside an AMF-UE-NGAP-ID; the worker sits above it.
pub const AMF_UE_NGAP_ID_WORKER_SHIFT: u32 = 32;

/// The AMF-UE-NGAP-ID with `worker` in bits 39..32 and `counter` below. Only the low 8 bits
/// of the worker are used ([`Workers::MAX`] keeps real ids within them).
pub fn amf_ue_ngap_id(worker: WorkerId, counter: u32) -> u64 {
    (u64::from(worker.0 & 0xff) << AMF_UE_NGAP_ID_WORKER_SHIFT) | u64::from(counter)
}

/// The owner of an AMF-UE-NGAP-ID; `None` if the id is not a valid 40-bit value or names a
/// worker this process does not have (a stale id from before a restart with fewer workers).
pub fn owner_of_amf_ue_ngap_id(id: u64, workers: Workers) -> Option<WorkerId> {
    if id >> AMF_UE_NGAP_ID_BITS != 0 {
        return None;
    }
    let w = WorkerId((id >> AMF_UE_NGAP_ID_WORKER_SHIFT) as u16);
    workers.contains(w).then_some(w)
}

/// Bits of the per-worker counter inside a 5G-TMSI; the worker sits above it.
pub const TMSI_WORKER_SHIFT: u32 = 24;
/// Mask of the per-worker counter inside a 5G-TMSI.
pub const TMSI_COUNTER_MASK: u32 = (1 << TMSI_WORKER_SHIFT) - 1;

/// A 5G-TMSI (TS 23.003 §2.10.1, 32 bits) with `worker` in bits 31..24 and the low 24 bits
/// of `counter` below, so a worker has 2^24 TMSIs before its counter wraps.
///
/// The whole TMSI space belongs to one AMF (one AMF Set ID and AMF Pointer in the GUTI), so
/// the AMF may spend 8 of its bits on the worker: no other AMF allocates from this space.
pub fn tmsi(worker: WorkerId, counter: u32) -> u32 {
    (u32::from(worker.0 & 0xff) << TMSI_WORKER_SHIFT) | (counter & TMSI_COUNTER_MASK)
}

/// The owner of a 5G-TMSI this AMF allocated; `None` for a worker it does not have.
pub fn owner_of_tmsi(tmsi: u32, workers: Workers) -> Option<WorkerId> {
    let w = WorkerId((tmsi >> TMSI_WORKER_SHIFT) as u16);
    workers.contains(w).then_some(w)
}

/// Where a new UE lands (an InitialUEMessage without a known 5G-S-TMSI): a hash of the gNB
/// id and RAN-UE-NGAP-ID, big-endian, so one gNB's UEs spread over every worker rather than
/// piling up on the core that reads its SCTP association.
pub fn owner_of_new_ue(gnb_id: u32, ran_ue_ngap_id: u32, workers: Workers) -> WorkerId {
    let mut key = [0u8; 8];
    key[..4].copy_from_slice(&gnb_id.to_be_bytes());
    key[4..].copy_from_slice(&ran_ue_ngap_id.to_be_bytes());
    owner_of_key(&key, workers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::spread::{assert_spread, w};

    #[test]
    fn new_ue_placement_is_pinned() {
        // If this changes, every BPF program and every announced layout must change with it:
        // a different owner for the same key splits a subscriber's state.
        assert_eq!(owner_of_new_ue(1, 1, w(8)).0, PINNED_NEW_UE_OWNER);
    }

    const PINNED_NEW_UE_OWNER: u16 = 2;

    #[test]
    fn layouts_are_fixed() {
        assert_eq!(amf_ue_ngap_id(WorkerId(3), 0x0000_0011), 0x03_0000_0011);
        assert_eq!(tmsi(WorkerId(3), 0x1234_5678), 0x0334_5678);
        assert_eq!(AMF_UE_NGAP_ID_WORKER_SHIFT, 32);
        assert_eq!(TMSI_WORKER_SHIFT, 24);
        assert_eq!(TMSI_COUNTER_MASK, 0x00ff_ffff);
    }

    #[test]
    fn amf_ue_ngap_id_round_trip_and_rejects() {
        let ws = w(4);
        for worker in ws.iter() {
            for counter in [0, 1, 0xdead_beef, u32::MAX] {
                let id = amf_ue_ngap_id(worker, counter);
                assert!(id < 1 << 40);
                assert_eq!(id & 0xffff_ffff, u64::from(counter));
                assert_eq!(owner_of_amf_ue_ngap_id(id, ws), Some(worker));
            }
        }
        assert_eq!(owner_of_amf_ue_ngap_id(1 << 40, ws), None);
        assert_eq!(owner_of_amf_ue_ngap_id(u64::MAX, ws), None);
        assert_eq!(
            owner_of_amf_ue_ngap_id(amf_ue_ngap_id(WorkerId(4), 7), ws),
            None
        );
        assert_eq!(
            owner_of_amf_ue_ngap_id(amf_ue_ngap_id(WorkerId(255), 7), w(256)),
            Some(WorkerId(255))
        );
    }

    #[test]
    fn tmsi_round_trip_and_rejects() {
        let ws = w(3);
        for worker in ws.iter() {
            for counter in [0, 5, 0x00ff_ffff, u32::MAX] {
                let t = tmsi(worker, counter);
                assert_eq!(t & 0x00ff_ffff, counter & 0x00ff_ffff);
                assert_eq!(owner_of_tmsi(t, ws), Some(worker));
            }
        }
        assert_eq!(owner_of_tmsi(tmsi(WorkerId(3), 1), ws), None);
        assert_eq!(owner_of_tmsi(u32::MAX, ws), None);
    }

    #[test]
    fn one_gnbs_new_ues_spread_evenly() {
        for n in [2, 4, 8] {
            let owners = (0..10_000u32)
                .map(|ran| owner_of_new_ue(0x0000_0001, ran, w(n)))
                .collect::<Vec<_>>();
            assert_spread(owners.into_iter(), n, 10_000);
        }
    }
}
