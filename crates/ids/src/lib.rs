//! Who owns what: the bit layouts of every identifier steer5g hands out and the stable hash
//! that places new state. Because every identifier names its owner, any worker (or the
//! kernel, or a client) can deliver a message to the owner without a lookup table.
//!
//! This crate is the one place where those layouts live. It is plain integer and string math
//! with no dependencies, no runtime and no I/O, so the sans-IO NFs, the runtime, the load
//! generator and the BPF build scripts can all use it. The BPF programs in `bpf/` do not
//! repeat a layout: their build scripts write [`c_header`] to `$OUT_DIR/steer5g_ids.h` and the
//! programs include it. The hard-coded values in the tests exist to make an accidental change
//! of layout fail CI: a different owner for the same id splits a subscriber's state.
//!
//! | state | identifier | bits | owner field |
//! |---|---|---|---|
//! | AMF UE context | AMF-UE-NGAP-ID ([`amf`]) | 40 | bits 39..32 |
//! | AMF UE context, on return | 5G-TMSI ([`amf`]) | 32 | bits 31..24 |
//! | new UE | (gNB id, RAN-UE-NGAP-ID) ([`amf`]) | 32 + 32 | [`stable_hash`] of both, big-endian |
//! | AUSF auth context | authCtxId `wWW-CCCCCCCCCCCCCCCC` ([`ausf`]) | 20 chars | the 2 hex digits after `w` |
//! | UDM per-subscriber data | SUPI ([`udm`]) | string | [`stable_hash`] of the SUPI string |
//! | SMF session | SM context ref = CP SEID ([`smf`]) | 64 (16 hex digits) | bits 63..48 |
//! | UPF session | UP SEID ([`upf`]) | 64 | bits 63..48 |
//! | UPF session, user plane | GTP-U TEID ([`upf`]) | 32 | bits 31..24 |
//! | gNB's SCTP association | core-wide N2 association id ([`n2`]) | 32 | bits 31..24 |
//! | a connection or datagram steered in the kernel | app id ([`app`]): TCP source port, or bytes of the UDP payload | 32 | `id % workers`, unless an exception names another |
//!
//! Worker numbers are at most 8 bits wide inside identifiers, so a process has at most
//! [`Workers::MAX`] workers. The SEIDs keep 16 bits for the worker: `IdSpec::PFCP_SEID_TOP16`
//! (crate `steer-bpf`) reads the same top 16 bits of either SEID.

#![forbid(unsafe_code)]

pub mod amf;
pub mod app;
pub mod ausf;
mod c;
pub mod n2;
pub mod smf;
pub mod udm;
pub mod upf;
pub mod worker;

pub use c::c_header;
pub use worker::{owner_of_key, stable_hash, WorkerId, Workers};

/// Checks shared by the placement tests of several modules.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod spread {
    use crate::{WorkerId, Workers};

    /// `n` workers, for tests that name a count known to be valid.
    pub(crate) fn w(n: u16) -> Workers {
        Workers::new(n).unwrap()
    }

    /// Every one of `n` workers got `total / n` of `keys`, ±10 %.
    pub(crate) fn assert_spread(keys: impl Iterator<Item = WorkerId>, n: u16, total: usize) {
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
}
