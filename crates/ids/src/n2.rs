//! N2 association ids: the core-wide number of a gNB's SCTP association keeps the worker that
//! reads the association in its top 8 bits, so a reply produced on any worker goes straight to
//! the worker that can send on it.

use crate::worker::WorkerId;

/// Association ids keep the owning worker above this many bits ([`crate::Workers::MAX`] is
/// 256, so 8 bits hold every worker; 2^24 associations per worker is far beyond the 65,536
/// an endpoint accepts).
pub const ASSOC_WORKER_SHIFT: u32 = 24;
/// Mask of the per-worker counter inside an association id.
pub const ASSOC_COUNTER_MASK: u32 = (1 << ASSOC_WORKER_SHIFT) - 1;

/// The worker that owns core-wide association `assoc`.
pub fn assoc_owner(assoc: u32) -> WorkerId {
    // The shift leaves 8 bits.
    WorkerId((assoc >> ASSOC_WORKER_SHIFT) as u16)
}

/// Core-wide association id `counter` of `worker` (the counter's top bits are dropped).
pub fn assoc_id(worker: WorkerId, counter: u32) -> u32 {
    (u32::from(worker.0) << ASSOC_WORKER_SHIFT) | (counter & ASSOC_COUNTER_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn association_ids_name_their_worker() {
        for w in [0u16, 1, 7, 255] {
            for c in [1u32, 2, 0x00ff_ffff, 0x0100_0001, u32::MAX] {
                let id = assoc_id(WorkerId(w), c);
                assert_eq!(assoc_owner(id), WorkerId(w), "w{w} c{c:#x}");
                assert_eq!(id & ASSOC_COUNTER_MASK, c & ASSOC_COUNTER_MASK);
            }
        }
        // Worker 0's ids are the plain counter, as before associations spread.
        assert_eq!(assoc_id(WorkerId(0), 5), 5);
    }

    #[test]
    fn layouts_are_fixed() {
        assert_eq!(assoc_id(WorkerId(2), 7), 0x0200_0007);
        assert_eq!(assoc_owner(0xff00_0001), WorkerId(255));
    }
}
