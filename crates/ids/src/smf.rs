//! SMF identifiers: the SM context ref and the CP SEID are one 64-bit value with the worker
//! that created the context in its top 16 bits. The ref travels on the SBI as 16 lower-case
//! hex digits (the last segment of `.../sm-contexts/{smContextRef}`), the CP SEID in PFCP
//! headers and F-SEIDs, so both an Nsmf request and a PFCP Session Report reach the owner
//! without a table, and a Session Report names its context directly.

use crate::worker::WorkerId;

/// Bits of an SM context ref or CP SEID below the worker field. The same as
/// [`crate::upf::SEID_WORKER_SHIFT`]: one `IdSpec` in `steer-bpf` reads the worker of both.
pub const SEID_WORKER_SHIFT: u32 = 48;
/// Mask of the per-worker counter inside an SM context ref or CP SEID.
pub const SEID_COUNTER_MASK: u64 = (1 << SEID_WORKER_SHIFT) - 1;

/// The SM context ref (and CP SEID) of counter value `counter` (masked to 48 bits) on
/// `worker`; all 16 bits of the worker number are kept.
pub fn sm_context_ref(worker: WorkerId, counter: u64) -> u64 {
    u64::from(worker.0) << SEID_WORKER_SHIFT | (counter & SEID_COUNTER_MASK)
}

/// The SBI form of an SM context ref: 16 lower-case hex digits.
pub fn format_sm_context_ref(v: u64) -> String {
    format!("{v:016x}")
}

/// The value of an SM context ref in SBI form; `None` unless `r` is 16 characters that read
/// as a hexadecimal `u64` (as `u64::from_str_radix` reads them).
pub fn parse_sm_context_ref(r: &str) -> Option<u64> {
    if r.len() != 16 {
        return None;
    }
    u64::from_str_radix(r, 16).ok()
}

/// The worker in the top 16 bits of an SM context ref (16 hex digits) or `None` if `r` is not
/// one of ours.
pub fn owner_of_sm_context_ref(r: &str) -> Option<WorkerId> {
    parse_sm_context_ref(r).map(owner_of_seid)
}

/// The worker in the top 16 bits of a CP SEID.
pub fn owner_of_seid(seid: u64) -> WorkerId {
    WorkerId((seid >> SEID_WORKER_SHIFT) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_carry_the_worker() {
        let v = 3u64 << SEID_WORKER_SHIFT | 42;
        let s = format_sm_context_ref(v);
        assert_eq!(s, "000300000000002a");
        assert_eq!(owner_of_sm_context_ref(&s), Some(WorkerId(3)));
        assert_eq!(owner_of_sm_context_ref("xyz"), None);
        assert_eq!(owner_of_sm_context_ref("zz0300000000002a"), None);
        assert_eq!(owner_of_seid(0x0002_0000_0000_0001), WorkerId(2));
    }

    #[test]
    fn layouts_are_fixed() {
        // Hard-coded values: a change of layout must be made here and in BPF together.
        assert_eq!(sm_context_ref(WorkerId(3), 42), 0x0003_0000_0000_002a);
        assert_eq!(
            sm_context_ref(WorkerId(0x1ff), u64::MAX),
            0x01ff_ffff_ffff_ffff
        );
        assert_eq!(
            parse_sm_context_ref("000300000000002a"),
            Some(0x0003_0000_0000_002a)
        );
        assert_eq!(parse_sm_context_ref("000300000000002"), None);
        assert_eq!(owner_of_seid(u64::MAX), WorkerId(0xffff));
    }

    #[test]
    fn cp_and_up_seids_share_the_worker_field() {
        // steer-bpf's IdSpec::PFCP_SEID_TOP16 steers PFCP to the SMF and to the UPF alike.
        assert_eq!(SEID_WORKER_SHIFT, crate::upf::SEID_WORKER_SHIFT);
    }
}
