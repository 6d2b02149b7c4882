//! UDM/UDR per-subscriber data (SQN, UECM registration) has no identifier of its own: the
//! SUPI places it by hash.

use crate::worker::{owner_of_key, WorkerId, Workers};

/// The UDM worker that owns a subscriber's data (SQN, UECM registration): a hash of the SUPI
/// string as it appears on the SBI (`imsi-001010000000001`).
pub fn owner_of_supi(supi: &str, workers: Workers) -> WorkerId {
    owner_of_key(supi.as_bytes(), workers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::spread::{assert_spread, w};

    #[test]
    fn supi_placement_is_pinned() {
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
    }

    const PINNED_SUPI_OWNERS: [u16; 3] = [4, 5, 1];

    #[test]
    fn supis_spread_evenly() {
        for n in [2, 4, 8] {
            let supis = (1..=10_000u64).map(|i| format!("imsi-00101{i:010}"));
            let owners = supis.map(|s| owner_of_supi(&s, w(n))).collect::<Vec<_>>();
            assert_spread(owners.into_iter(), n, 10_000);
        }
    }
}
