//! UE IPv4 address pools, one per DNN, each cut into one contiguous range per worker so that
//! workers allocate without talking to each other: each range has one owner, so no
//! allocation takes a lock or a hop.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// One worker's share of a DNN's pool.
#[derive(Debug, Clone)]
pub struct Ipv4Range {
    first: u32,
    /// One past the last usable address.
    end: u32,
    next: u32,
    /// Released addresses, handed out again (lowest first) only once the range has no fresh
    /// one left: an address just released may still be the destination of downlink packets
    /// in flight or of a DN's stale route, so it should not name another UE at once.
    free: BTreeSet<u32>,
    in_use: usize,
}

impl Ipv4Range {
    /// Worker `worker`'s share (of `workers`) of `net/prefix_len`, leaving out the network and
    /// broadcast addresses and the first host (the DN gateway, by convention).
    pub fn share(net: Ipv4Addr, prefix_len: u8, worker: u16, workers: u16) -> Self {
        let prefix_len = u32::from(prefix_len.min(32));
        let size: u64 = 1u64 << (32 - prefix_len);
        let base = u64::from(u32::from(net)) & !(size - 1);
        // Network, gateway and broadcast are not for UEs.
        let usable = size.saturating_sub(3);
        let workers = u64::from(workers.max(1));
        let chunk = usable / workers;
        let w = u64::from(worker).min(workers - 1);
        let first = base + 2 + w * chunk;
        let end = first + chunk;
        // base + size <= 2^32, so both fit in u32 once clamped.
        let first = u32::try_from(first).unwrap_or(u32::MAX);
        let end = u32::try_from(end).unwrap_or(u32::MAX);
        Ipv4Range {
            first,
            end,
            next: first,
            free: BTreeSet::new(),
            in_use: 0,
        }
    }

    /// An address, or `None` when the range is used up.
    pub fn allocate(&mut self) -> Option<Ipv4Addr> {
        let a = if self.next < self.end {
            let a = self.next;
            self.next += 1;
            a
        } else {
            self.free.pop_first()?
        };
        self.in_use += 1;
        Some(Ipv4Addr::from(a))
    }

    /// Gives `a` back; false if it is not an address of this range in use.
    pub fn release(&mut self, a: Ipv4Addr) -> bool {
        let a = u32::from(a);
        if a < self.first || a >= self.next || self.free.contains(&a) {
            return false;
        }
        self.free.insert(a);
        self.in_use -= 1;
        true
    }

    /// Addresses handed out and not given back.
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// Whether `a` falls in this worker's share.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        (self.first..self.end).contains(&u32::from(a))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_disjoint_and_reuse_addresses() {
        let net = Ipv4Addr::new(10, 45, 0, 0);
        let mut a = Ipv4Range::share(net, 24, 0, 2);
        let mut b = Ipv4Range::share(net, 24, 1, 2);
        let x = a.allocate().unwrap();
        let y = b.allocate().unwrap();
        assert_eq!(x, Ipv4Addr::new(10, 45, 0, 2));
        assert_eq!(y, Ipv4Addr::new(10, 45, 0, 2 + 126));
        assert!(!b.contains(x) && !a.contains(y));
        assert!(!a.release(y));
        assert!(a.release(x));
        assert!(!a.release(x), "double release");
        // A released address waits until the fresh ones are used up.
        let fresh: Vec<Ipv4Addr> = std::iter::from_fn(|| a.allocate()).take(200).collect();
        assert_eq!(fresh.len(), 126);
        assert_eq!(fresh.last(), Some(&x), "reused last");
        assert!(!fresh[..125].contains(&x));
        assert_eq!(a.allocate(), None);
        let mut tiny = Ipv4Range::share(net, 30, 0, 1);
        assert!(tiny.allocate().is_some());
        assert_eq!(tiny.allocate(), None);
        assert_eq!(tiny.in_use(), 1);
        // Degenerate prefixes do not panic.
        let _ = Ipv4Range::share(net, 32, 5, 0).allocate();
        let _ = Ipv4Range::share(net, 0, 3, 4).allocate();
    }
}
