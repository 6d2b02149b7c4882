//! MBR policing (TS 29.244 §5.2.1.11: a QER's Maximum Bitrate; §8.2.8: the MBR IE, in
//! kbit/s) as a sans-IO token bucket: the caller passes the time, so the user-space paths and
//! the tests drive the same arithmetic that `bpf/upf_xdp.c` runs in the XDP fast path.
//!
//! The bucket is kept in the GCRA form (ITU-T I.371 "virtual scheduling"): one timestamp, the
//! theoretical arrival time `tat`, instead of a token count and a last-refill time. A packet
//! of `len` octets costs `len / rate` seconds; it conforms when, after paying, the bucket
//! would not be more than `depth` octets in debt, i.e. `max(tat, now) + cost <= now +
//! depth/rate`. That is the classic token bucket of depth `depth` refilled at `rate`, but it
//! needs no multiplication of elapsed time by the rate (no overflow for any elapsed time) and
//! one integer division per packet, which the BPF side can afford.
//!
//! What is counted: the inner IPv4 packet's total length (the IP header's Total Length),
//! the same octets the URR volume counts (see [`crate::datapath::Usage`]); the GTP-U, UDP
//! and outer IP headers of N3 are not part of the user's bit rate.

use crate::datapath::Gate;

/// Nanoseconds per second.
const NS: u64 = 1_000_000_000;
/// The depth when the rate gives less: two full-size (1500-octet) packets, so a low MBR
/// still passes whole packets.
pub const MIN_DEPTH: u64 = 3000;
/// The depth is capped so that `depth * 1e9` fits in 64 bits with room (the BPF side
/// computes in 64 bits).
pub const MAX_DEPTH: u64 = 1 << 32;

/// The fixed parameters of one direction's bucket, derived from its MBR; shared by the XDP
/// map value and the user-space [`Policer`] so both paths police alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MbrParams {
    /// Refill rate, octets per second (never 0).
    pub bytes_per_s: u64,
    /// Bucket depth in octets: 100 ms worth of the rate, at least [`MIN_DEPTH`], at most
    /// [`MAX_DEPTH`].
    pub depth: u64,
    /// The depth as time: `depth / bytes_per_s` seconds, in nanoseconds.
    pub depth_ns: u64,
}

impl MbrParams {
    /// The bucket for `gate`'s MBR; `None` when the gate sets no rate (0 = unlimited).
    pub fn from_gate(gate: &Gate) -> Option<MbrParams> {
        Self::from_bps(gate.mbr_bps)
    }

    /// The bucket for `mbr_bps` bit/s; `None` for 0.
    pub fn from_bps(mbr_bps: u64) -> Option<MbrParams> {
        if mbr_bps == 0 {
            return None;
        }
        let bytes_per_s = (mbr_bps / 8).max(1);
        let depth = (bytes_per_s / 10).clamp(MIN_DEPTH, MAX_DEPTH);
        let depth_ns = u64::try_from(u128::from(depth) * u128::from(NS) / u128::from(bytes_per_s))
            .unwrap_or(u64::MAX);
        Some(MbrParams {
            bytes_per_s,
            depth,
            depth_ns,
        })
    }

    /// What `len` octets cost, in nanoseconds of the rate.
    pub fn cost_ns(&self, len: u64) -> u64 {
        u64::try_from(u128::from(len) * u128::from(NS) / u128::from(self.bytes_per_s.max(1)))
            .unwrap_or(u64::MAX)
    }
}

/// One direction's MBR bucket. Starts full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policer {
    params: MbrParams,
    /// Theoretical arrival time, in the caller's nanosecond clock.
    tat: u64,
}

impl Policer {
    /// A full bucket for `gate`'s MBR; `None` when the gate sets no rate.
    pub fn new(gate: &Gate) -> Option<Policer> {
        MbrParams::from_gate(gate).map(|params| Policer { params, tat: 0 })
    }

    /// The bucket's parameters.
    pub fn params(&self) -> &MbrParams {
        &self.params
    }

    /// Whether a packet of `len` octets arriving at `now_ns` (a monotonic clock, any origin)
    /// is within the rate; if it is, its octets are taken from the bucket. A packet over the
    /// rate takes nothing (it is dropped, TS 29.244 §5.4.2).
    pub fn admit(&mut self, now_ns: u64, len: u64) -> bool {
        let start = self.tat.max(now_ns);
        let next = start.saturating_add(self.params.cost_ns(len));
        if next <= now_ns.saturating_add(self.params.depth_ns) {
            self.tat = next;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn gate(bps: u64) -> Gate {
        Gate {
            open: true,
            mbr_bps: bps,
        }
    }

    #[test]
    fn no_rate_no_bucket() {
        assert!(Policer::new(&Gate::OPEN).is_none());
        assert!(MbrParams::from_bps(0).is_none());
    }

    #[test]
    fn params_follow_the_mbr() {
        // 8 kbit/s = 1000 octets/s; 100 ms of that is below the minimum depth.
        let p = MbrParams::from_bps(8_000).unwrap();
        assert_eq!((p.bytes_per_s, p.depth, p.depth_ns), (1000, 3000, 3 * NS));
        // 80 Mbit/s = 10 MB/s: 100 ms = 1 MB.
        let p = MbrParams::from_bps(80_000_000).unwrap();
        assert_eq!(
            (p.bytes_per_s, p.depth, p.depth_ns),
            (10_000_000, 1_000_000, NS / 10)
        );
        // Below 8 bit/s the rate is still one octet per second, never zero.
        assert_eq!(MbrParams::from_bps(1).unwrap().bytes_per_s, 1);
        // The largest MBR the IE can carry (40 bits of kbit/s) does not overflow.
        let p = MbrParams::from_bps(((1u64 << 40) - 1) * 1000).unwrap();
        assert_eq!(p.depth, MAX_DEPTH);
        assert!(p.cost_ns(65_535) < 1000);
    }

    #[test]
    fn burst_then_rate() {
        let mut b = Policer::new(&gate(8_000)).unwrap();
        let t0 = 5 * NS;
        // Full bucket: 3000 octets pass at once, the next does not.
        assert!(b.admit(t0, 1500));
        assert!(b.admit(t0, 1500));
        assert!(!b.admit(t0, 1));
        // A refused packet takes nothing: after 100 ms (100 octets) a 100-octet one passes.
        assert!(!b.admit(t0 + NS / 20, 100));
        assert!(b.admit(t0 + NS / 10, 100));
        assert!(!b.admit(t0 + NS / 10, 1));
        // Long idle refills to the depth and no further.
        let t1 = t0 + 1000 * NS;
        assert!(b.admit(t1, 3000));
        assert!(!b.admit(t1, 1));
    }

    #[test]
    fn packets_larger_than_the_depth_never_pass() {
        let mut b = Policer::new(&gate(8_000)).unwrap();
        assert!(!b.admit(NS, 3001));
        assert!(b.admit(NS, 3000));
    }

    #[test]
    fn delivered_stays_within_rate_times_time_plus_depth() {
        // 1 Mbit/s offered 4 Mbit/s of 1000-octet packets for 2 s.
        let mut b = Policer::new(&gate(1_000_000)).unwrap();
        let p = *b.params();
        let (mut sent, mut passed) = (0u64, 0u64);
        let step = 2_000_000; // 1000 octets every 2 ms = 4 Mbit/s
        let mut now = 7 * NS;
        let start = now;
        for _ in 0..1000 {
            sent += 1000;
            if b.admit(now, 1000) {
                passed += 1000;
            }
            now += step;
        }
        let span = now - start;
        let bound = p.bytes_per_s * span / NS + p.depth;
        assert!(passed <= bound, "{passed} > {bound}");
        // And it is not far below: the rate is used, not just the burst.
        assert!(passed >= p.bytes_per_s * span / NS, "{passed}");
        assert!(passed < sent);
    }

    #[test]
    fn clock_going_backwards_does_not_panic_or_refill() {
        let mut b = Policer::new(&gate(8_000)).unwrap();
        assert!(b.admit(10 * NS, 3000));
        assert!(!b.admit(NS, 1));
        assert!(!b.admit(0, 1));
        assert!(b.admit(u64::MAX, 1));
    }
}
