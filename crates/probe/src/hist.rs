//! The log-linear histogram the BPF side fills (`bucket` in bpf/probe.c): 0-3 ns one bucket
//! each, then four buckets per power of two. Percentiles read from it are the middle of
//! their bucket, so within 12.5 % of the true value.

use crate::stages::HIST;

/// The bucket of `ns`, as bpf/probe.c computes it (clamped to the last bucket).
pub fn bucket(ns: u64) -> usize {
    if ns < 4 {
        return ns as usize;
    }
    let b = 63 - ns.leading_zeros() as usize;
    let idx = 4 * (b - 1) + ((ns >> (b - 2)) & 3) as usize;
    idx.min(HIST - 1)
}

/// The values bucket `idx` holds: `[low, high)` in ns.
pub fn edges(idx: usize) -> (u64, u64) {
    if idx < 4 {
        return (idx as u64, idx as u64 + 1);
    }
    let b = idx / 4 + 1;
    let sub = (idx % 4) as u64;
    let step = 1u64 << (b - 2);
    let low = (4 + sub) << (b - 2);
    (low, low + step)
}

/// The `q`-quantile (0..=1) of a histogram: the middle of the bucket it falls in; 0 when
/// the histogram is empty.
pub fn quantile(hist: &[u64], q: f64) -> u64 {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return 0;
    }
    // The rank of the quantile, 1-based, at least the first sample.
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (idx, &n) in hist.iter().enumerate() {
        seen += n;
        if seen >= rank {
            let (low, high) = edges(idx);
            return low + (high - low) / 2;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_inside_its_bucket() {
        let mut v = 0u64;
        while v < (1u64 << 31) {
            let (low, high) = edges(bucket(v));
            assert!(low <= v && v < high, "{v} not in [{low}, {high})");
            v = v * 5 / 4 + 1;
        }
        // The buckets tile the line: each starts where the previous ended.
        for idx in 1..HIST {
            assert_eq!(edges(idx - 1).1, edges(idx).0, "gap before bucket {idx}");
        }
    }

    #[test]
    fn buckets_are_within_an_eighth() {
        for idx in 8..HIST {
            let (low, high) = edges(idx);
            let mid = low + (high - low) / 2;
            assert!(
                (high - low) as f64 / mid as f64 <= 0.25 + 1e-9,
                "bucket {idx}"
            );
        }
    }

    #[test]
    fn large_values_land_in_the_last_bucket() {
        assert_eq!(bucket(u64::MAX), HIST - 1);
        assert_eq!(bucket(1 << 40), HIST - 1);
    }

    #[test]
    fn quantiles_of_a_known_histogram() {
        let mut hist = vec![0u64; HIST];
        // 90 samples at 1000 ns, 10 at 100 000 ns.
        hist[bucket(1000)] = 90;
        hist[bucket(100_000)] = 10;
        let p50 = quantile(&hist, 0.5);
        let p99 = quantile(&hist, 0.99);
        assert!((900..=1100).contains(&p50), "{p50}");
        assert!((90_000..=110_000).contains(&p99), "{p99}");
        assert_eq!(quantile(&[0; HIST], 0.5), 0);
    }
}
