//! UPF identifiers: the UP SEID carries the owning worker in its top 16 bits and the GTP-U
//! TEID in its top 8 bits, so that a PFCP message (by its header SEID) and an uplink G-PDU (by
//! its TEID) can be steered to the worker that holds the session without a lookup table.
//!
//! The BPF side reads the same fields: `IdSpec::PFCP_SEID_TOP16` and `IdSpec::GTPU_TEID_TOP8`
//! in `steer-bpf`, and the `STEER5G_UPF_*` names of [`crate::c_header`].

/// Bits of the SEID below the worker field.
pub const SEID_WORKER_SHIFT: u32 = 48;
/// Mask of the per-worker counter inside a SEID.
pub const SEID_COUNTER_MASK: u64 = (1 << SEID_WORKER_SHIFT) - 1;
/// Bits of the TEID below the worker field.
pub const TEID_WORKER_SHIFT: u32 = 24;
/// Mask of the per-worker counter inside a TEID.
pub const TEID_COUNTER_MASK: u32 = (1 << TEID_WORKER_SHIFT) - 1;

/// The SEID of counter value `counter` (masked to 48 bits) on `worker`.
pub fn seid(worker: u8, counter: u64) -> u64 {
    u64::from(worker) << SEID_WORKER_SHIFT | (counter & SEID_COUNTER_MASK)
}

/// The worker that owns `seid`: its top 16 bits.
pub fn owner_of_seid(seid: u64) -> u16 {
    // The shift leaves at most 16 significant bits, so the conversion cannot fail.
    u16::try_from(seid >> SEID_WORKER_SHIFT).unwrap_or(u16::MAX)
}

/// The TEID of counter value `counter` (masked to 24 bits) on `worker`.
pub fn teid(worker: u8, counter: u32) -> u32 {
    u32::from(worker) << TEID_WORKER_SHIFT | (counter & TEID_COUNTER_MASK)
}

/// The worker that owns `teid`: its top 8 bits.
pub fn owner_of_teid(teid: u32) -> u8 {
    teid.to_be_bytes()[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_fixed() {
        // Hard-coded values: a change of layout must be made here and in BPF together.
        assert_eq!(seid(3, 5), 0x0003_0000_0000_0005);
        assert_eq!(owner_of_seid(0x0003_0000_0000_0005), 3);
        assert_eq!(seid(1, u64::MAX), 0x0001_ffff_ffff_ffff);
        assert_eq!(teid(2, 7), 0x0200_0007);
        assert_eq!(owner_of_teid(0x0200_0007), 2);
        assert_eq!(teid(0xff, u32::MAX), 0xffff_ffff);
    }
}
