//! Who owns what: the bit layouts of the identifiers steer5g hands out and the stable hash
//! that places new state (DESIGN.md principle 2 and its "Identifiers and ownership" table).
//!
//! Every function here is a few shifts, masks and multiplications on fixed-width integers,
//! because the `sk_reuseport` and XDP programs must compute the same answer in BPF. Change a
//! layout here and in `bpf/` together; the hard-coded values in the tests exist to make an
//! accidental change fail CI.
//!
//! | state | identifier | owner |
//! |---|---|---|
//! | AMF UE context | AMF-UE-NGAP-ID, 40 bits | bits 39..32 |
//! | AMF UE context, on return | 5G-TMSI, 32 bits | bits 31..24 |
//! | new UE | (gNB id, RAN-UE-NGAP-ID) | [`stable_hash`] of both, big-endian |
//! | AUSF auth context | authCtxId `wWW-CCCCCCCCCCCCCCCC` | the hex after `w` |
//! | UDM per-subscriber data | SUPI | [`stable_hash`] of the SUPI string |
//!
//! Not yet here: SMF SM context references and PFCP SEIDs (the plan is the top 16 bits of the
//! 64-bit SEID), and UPF GTP-U TEIDs (the top 8 bits of the 32-bit TEID) with per-worker UE
//! IP ranges. They belong in this module when the SMF and UPF land.
//!
//! Worker numbers are 8 bits wide inside identifiers, so a process has at most
//! [`Workers::MAX`] workers.

use std::fmt;

/// A worker (one pinned thread, one shard), numbered from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkerId(pub u16);

impl WorkerId {
    /// The worker number as an index.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "w{}", self.0)
    }
}

/// The number of workers of a process: fixed for its life (a change means a restart), and
/// announced to cooperating clients so that they compute the same owners.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Workers {
    count: u16,
}

impl Workers {
    /// Most workers a process may have: worker numbers travel in 8-bit fields.
    pub const MAX: u16 = 256;

    /// `count` workers; `None` unless `1 <= count <= 256`.
    pub fn new(count: u16) -> Option<Self> {
        (1..=Self::MAX).contains(&count).then_some(Self { count })
    }

    /// One worker: everything is owned by worker 0.
    pub fn single() -> Self {
        Self { count: 1 }
    }

    /// The number of workers.
    pub fn count(self) -> u16 {
        self.count
    }

    /// Whether `w` is one of these workers.
    pub fn contains(self, w: WorkerId) -> bool {
        w.0 < self.count
    }

    /// Every worker id, in order.
    pub fn iter(self) -> impl Iterator<Item = WorkerId> {
        (0..self.count).map(WorkerId)
    }
}

/// FNV-1a 64-bit offset basis (Fowler/Noll/Vo, draft-eastlake-fnv).
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `bytes`: the same value on every run, machine and in BPF (unlike SipHash
/// with a random key, which `std` uses for `HashMap`).
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The worker that owns a key placed by hash. The two halves of the hash are folded first:
/// FNV-1a's low bits mix poorly for keys that differ only in their last characters (such as
/// consecutive SUPIs), and a modulus by a small power of two would see only those bits.
pub fn owner_of_key(bytes: &[u8], workers: Workers) -> WorkerId {
    let h = stable_hash(bytes);
    let folded = (h >> 32) ^ (h & 0xffff_ffff);
    // The remainder is below `count`, which is a u16.
    WorkerId((folded % u64::from(workers.count)) as u16)
}

/// Bits of an AMF-UE-NGAP-ID (TS 38.413 §9.3.3.1: INTEGER (0..2^40 - 1)).
pub const AMF_UE_NGAP_ID_BITS: u32 = 40;
/// Bits of the per-worker counter inside an AMF-UE-NGAP-ID; the worker sits above it.
const AMF_UE_NGAP_ID_COUNTER_BITS: u32 = 32;

/// The AMF-UE-NGAP-ID with `worker` in bits 39..32 and `counter` below. Only the low 8 bits
/// of the worker are used ([`Workers::MAX`] keeps real ids within them).
pub fn amf_ue_ngap_id(worker: WorkerId, counter: u32) -> u64 {
    (u64::from(worker.0 & 0xff) << AMF_UE_NGAP_ID_COUNTER_BITS) | u64::from(counter)
}

/// The owner of an AMF-UE-NGAP-ID; `None` if the id is not a valid 40-bit value or names a
/// worker this process does not have (a stale id from before a restart with fewer workers).
pub fn owner_of_amf_ue_ngap_id(id: u64, workers: Workers) -> Option<WorkerId> {
    if id >> AMF_UE_NGAP_ID_BITS != 0 {
        return None;
    }
    let w = WorkerId((id >> AMF_UE_NGAP_ID_COUNTER_BITS) as u16);
    workers.contains(w).then_some(w)
}

/// Bits of the per-worker counter inside a 5G-TMSI.
const TMSI_COUNTER_BITS: u32 = 24;

/// A 5G-TMSI (TS 23.003 §2.10.1, 32 bits) with `worker` in bits 31..24 and the low 24 bits
/// of `counter` below, so a worker has 2^24 TMSIs before its counter wraps.
///
/// The whole TMSI space belongs to one AMF (one AMF Set ID and AMF Pointer in the GUTI), so
/// the AMF may spend 8 of its bits on the worker: no other AMF allocates from this space.
pub fn tmsi(worker: WorkerId, counter: u32) -> u32 {
    (u32::from(worker.0 & 0xff) << TMSI_COUNTER_BITS) | (counter & 0x00ff_ffff)
}

/// The owner of a 5G-TMSI this AMF allocated; `None` for a worker it does not have.
pub fn owner_of_tmsi(tmsi: u32, workers: Workers) -> Option<WorkerId> {
    let w = WorkerId((tmsi >> TMSI_COUNTER_BITS) as u16);
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

/// Length of an authCtxId: `w`, 2 hex digits, `-`, 16 hex digits.
const AUTH_CTX_ID_LEN: usize = 20;

/// An AUSF authCtxId naming its worker: `w{worker:02x}-{counter:016x}`. TS 29.509 leaves the
/// id's form to the AUSF; this one is short, URI-safe and parseable without a table.
pub fn auth_ctx_id(worker: WorkerId, counter: u64) -> String {
    format!("w{:02x}-{counter:016x}", worker.0 & 0xff)
}

fn hex_value(digits: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for d in digits {
        let n = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | u64::from(n);
    }
    Some(v)
}

/// The owner written in an authCtxId made by [`auth_ctx_id`]; `None` for any other string
/// (wrong length, upper-case or non-hex digits) or a worker this process does not have.
pub fn owner_of_auth_ctx_id(id: &str, workers: Workers) -> Option<WorkerId> {
    let b = id.as_bytes();
    if b.len() != AUTH_CTX_ID_LEN {
        return None;
    }
    let (head, counter) = b.split_at(4);
    let [b'w', w1, w2, b'-'] = head else {
        return None;
    };
    hex_value(counter)?;
    let w = WorkerId(hex_value(&[*w1, *w2])? as u16);
    workers.contains(w).then_some(w)
}

/// The UDM worker that owns a subscriber's data (SQN, UECM registration): a hash of the SUPI
/// string as it appears on the SBI (`imsi-001010000000001`).
pub fn owner_of_supi(supi: &str, workers: Workers) -> WorkerId {
    owner_of_key(supi.as_bytes(), workers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn w(n: u16) -> Workers {
        Workers::new(n).unwrap()
    }

    #[test]
    fn worker_count_bounds() {
        assert!(Workers::new(0).is_none());
        assert!(Workers::new(257).is_none());
        assert_eq!(w(256).count(), 256);
        assert_eq!(Workers::single().iter().collect::<Vec<_>>(), [WorkerId(0)]);
    }

    #[test]
    fn fnv1a_reference_values() {
        // FNV-1a 64 test vectors (draft-eastlake-fnv, Appendix C): "", "a", "foobar".
        assert_eq!(stable_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(stable_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(stable_hash(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn placement_is_pinned() {
        // If one of these changes, every BPF program and every announced layout must change
        // with it: a different owner for the same key splits a subscriber's state.
        let got: Vec<u16> = [
            "imsi-001010000000001",
            "imsi-001010000000002",
            "imsi-208930000000003",
        ]
        .iter()
        .map(|s| owner_of_supi(s, w(8)).0)
        .collect();
        assert_eq!(got, PINNED_SUPI_OWNERS);
        assert_eq!(owner_of_new_ue(1, 1, w(8)).0, PINNED_NEW_UE_OWNER);
    }

    const PINNED_SUPI_OWNERS: [u16; 3] = [4, 5, 1];
    const PINNED_NEW_UE_OWNER: u16 = 2;

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
    fn auth_ctx_id_round_trip_and_rejects() {
        let ws = w(16);
        for worker in ws.iter() {
            for counter in [0, 1, u64::MAX] {
                let id = auth_ctx_id(worker, counter);
                assert_eq!(id.len(), 20);
                assert_eq!(owner_of_auth_ctx_id(&id, ws), Some(worker));
            }
        }
        assert_eq!(auth_ctx_id(WorkerId(10), 255), "w0a-00000000000000ff");
        for bad in [
            "",
            "w0a",
            "w0a-00000000000000f",
            "w0a-00000000000000fff",
            "x0a-00000000000000ff",
            "w0A-00000000000000ff",
            "w0a_00000000000000ff",
            "w0a-00000000000000fg",
            "w10-00000000000000ff",
            "wé-00000000000000ff",
            "w0a-0000000000000éff",
        ] {
            assert_eq!(owner_of_auth_ctx_id(bad, ws), None, "{bad}");
        }
    }

    fn assert_spread(keys: impl Iterator<Item = WorkerId> + Clone, n: u16, total: usize) {
        let mut counts = vec![0usize; usize::from(n)];
        for k in keys {
            counts[k.index()] += 1;
        }
        let expected = total / usize::from(n);
        for (i, c) in counts.iter().enumerate() {
            let dev = c.abs_diff(expected);
            assert!(
                dev * 10 <= expected,
                "{n} workers: worker {i} got {c}, expected {expected} ±10%: {counts:?}"
            );
        }
    }

    #[test]
    fn supis_spread_evenly() {
        for n in [2, 4, 8] {
            let supis = (1..=10_000u64).map(|i| format!("imsi-00101{i:010}"));
            let owners = supis.map(|s| owner_of_supi(&s, w(n))).collect::<Vec<_>>();
            assert_spread(owners.into_iter(), n, 10_000);
        }
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
