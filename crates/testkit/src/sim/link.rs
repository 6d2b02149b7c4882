//! The simulated links and what they did: each interface (N2, SBI, N4, the mesh between
//! workers, the SQN persister) has a delay, a jitter that reorders what it may reorder, and
//! a loss rate, drawn from one seeded generator so that a seed replays a run exactly.
//!
//! | link | transport it stands for | a loss is | order kept |
//! |---|---|---|---|
//! | N2 | SCTP (RFC 9260) | a retransmission after `rto`, counted | per association and stream (§6.6) |
//! | SBI | HTTP/2 over TCP | a retransmission after `rto`, counted | none between calls (one stream each) |
//! | mesh | the per-pair queues between workers | a retry after `rto`, counted | per pair of workers |
//! | N4 | PFCP over UDP | a lost datagram: the PFCP retransmission (TS 29.244 §6.4) recovers | none |
//! | SQN | the persister's completions | never lost | none |

use std::time::Duration;

/// One simulated interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Link {
    /// NGAP between the gNBs and the workers' N2 sides.
    N2,
    /// SBI requests and answers between hosts (h2c).
    Sbi,
    /// PFCP between the SMF workers and the UPF.
    N4,
    /// Hops between the workers' hosts.
    Mesh,
    /// SQN write completions from the persister.
    Sqn,
}

impl Link {
    /// Every link, in [`Link::index`] order.
    pub const ALL: [Link; 5] = [Link::N2, Link::Sbi, Link::N4, Link::Mesh, Link::Sqn];

    /// The link's position in [`Link::ALL`].
    pub fn index(self) -> usize {
        match self {
            Link::N2 => 0,
            Link::Sbi => 1,
            Link::N4 => 2,
            Link::Mesh => 3,
            Link::Sqn => 4,
        }
    }

    /// Whether its transport recovers a loss by itself (a loss is then a delay).
    pub fn reliable(self) -> bool {
        !matches!(self, Link::N4)
    }
}

/// One link's behaviour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    /// One-way delay.
    pub delay: Duration,
    /// Up to this much more, uniformly: messages that may be reordered are.
    pub jitter: Duration,
    /// Probability that one transmission is lost, `0.0..=1.0`.
    pub loss: f64,
    /// How long a reliable transport takes to send a lost message again.
    pub rto: Duration,
}

impl LinkConfig {
    /// No loss, no jitter, `delay` each way.
    pub fn ideal(delay: Duration) -> Self {
        LinkConfig {
            delay,
            jitter: Duration::ZERO,
            loss: 0.0,
            rto: Duration::from_millis(200),
        }
    }

    /// `loss` and `jitter` on top of `delay`.
    pub fn lossy(delay: Duration, jitter: Duration, loss: f64) -> Self {
        LinkConfig {
            jitter,
            loss,
            ..Self::ideal(delay)
        }
    }
}

/// Every link's behaviour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Links {
    /// NGAP.
    pub n2: LinkConfig,
    /// SBI.
    pub sbi: LinkConfig,
    /// PFCP.
    pub n4: LinkConfig,
    /// Hops between workers.
    pub mesh: LinkConfig,
    /// SQN completions.
    pub sqn: LinkConfig,
}

impl Links {
    /// The same behaviour on every link (the SQN completions never lost).
    pub fn uniform(c: LinkConfig) -> Self {
        Links {
            n2: c,
            sbi: c,
            n4: c,
            mesh: c,
            sqn: LinkConfig { loss: 0.0, ..c },
        }
    }

    /// The behaviour of `link`.
    pub fn get(&self, link: Link) -> LinkConfig {
        match link {
            Link::N2 => self.n2,
            Link::Sbi => self.sbi,
            Link::N4 => self.n4,
            Link::Mesh => self.mesh,
            Link::Sqn => LinkConfig {
                loss: 0.0,
                ..self.sqn
            },
        }
    }
}

/// What one link carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Messages handed to the link.
    pub sent: u64,
    /// Messages delivered.
    pub delivered: u64,
    /// Messages lost for good (N4 only).
    pub dropped: u64,
    /// Transmissions lost and made again by the transport (N2, SBI, mesh).
    pub retransmitted: u64,
}

/// What became of a message, in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fate {
    /// Delivered at the event's time.
    Delivered,
    /// Lost at the event's time (sent then).
    Dropped,
}

/// One entry of the trace: when, on which link, what kind of message, a digest of its
/// octets (0 where there are none: hops, failures), and its fate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceEvent {
    /// Virtual time since the simulation started.
    pub at: Duration,
    /// The link.
    pub link: Link,
    /// The message kind: the NGAP procedure, the SBI method and path, the PFCP message type,
    /// the hop.
    pub kind: String,
    /// FNV-1a of the message's octets.
    pub digest: u64,
    /// Delivered or lost.
    pub fate: Fate,
}

/// FNV-1a, 64 bits: a stable digest of octets for the trace.
pub fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// SplitMix64: small, seeded and the same on every platform and build, which is all the
/// links need.
#[derive(Debug, Clone)]
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    pub(super) fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        // 53 random bits as a fraction in [0, 1).
        let x = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        x < p
    }

    /// Uniform in `0..=max`.
    pub(super) fn up_to(&mut self, max: Duration) -> Duration {
        let ns = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
        if ns == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.next_u64() % (ns + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_seeded_and_fair_enough() {
        let mut a = Rng::new(5);
        let mut b = Rng::new(5);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        let mut r = Rng::new(9);
        let hits = (0..10_000).filter(|_| r.chance(0.05)).count();
        assert!((300..700).contains(&hits), "{hits}");
        assert!(!Rng::new(1).chance(0.0));
        let d = Duration::from_millis(3);
        assert!((0..100).all(|_| r.up_to(d) <= d));
    }
}
