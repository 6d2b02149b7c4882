//! Workers and the stable hash: [`WorkerId`], [`Workers`] (the fixed worker count of a
//! process), [`stable_hash`] (FNV-1a 64) and [`owner_of_key`], which places state that no
//! identifier names yet.

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
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn worker_count_bounds() {
        assert!(Workers::new(0).is_none());
        assert!(Workers::new(257).is_none());
        assert_eq!(Workers::new(256).unwrap().count(), 256);
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
    fn worker_ids_display_and_index() {
        assert_eq!(WorkerId(7).to_string(), "w7");
        assert_eq!(WorkerId(300).index(), 300);
        assert!(Workers::new(4).unwrap().contains(WorkerId(3)));
        assert!(!Workers::new(4).unwrap().contains(WorkerId(4)));
    }
}
