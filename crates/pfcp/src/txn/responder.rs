//! The responder side of PFCP transactions: a request retransmitted by its peer (same
//! sender, same sequence number) is answered with the response already sent, not
//! processed again (TS 29.244 §6.4).

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Instant;

use super::CacheConfig;

/// Responses we sent, by request key `K` (the peer and the request's sequence number),
/// each kept [`CacheConfig::lifetime`] after it was sent and at most [`CacheConfig::max`]
/// of them: the oldest go first.
#[derive(Debug)]
pub struct ResponseCache<K> {
    cfg: CacheConfig,
    map: HashMap<K, Vec<u8>>,
    /// (sent at, key) in sending order: one entry per key of `map`.
    order: VecDeque<(Instant, K)>,
}

impl<K: Eq + Hash + Clone> ResponseCache<K> {
    /// An empty cache.
    pub fn new(cfg: CacheConfig) -> Self {
        ResponseCache {
            cfg,
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// The response already sent to the request `key`, if it is a retransmission.
    pub fn get(&self, key: &K) -> Option<&[u8]> {
        self.map.get(key).map(Vec::as_slice)
    }

    /// Responses kept.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Keeps `bytes`, the response to request `key` sent at `now`. A full cache drops its
    /// oldest response first. A key already kept has its response replaced and keeps its
    /// place (and its expiry).
    pub fn insert(&mut self, now: Instant, key: K, bytes: Vec<u8>) {
        if self.cfg.max == 0 {
            return;
        }
        if let Some(slot) = self.map.get_mut(&key) {
            *slot = bytes;
            return;
        }
        if self.map.len() >= self.cfg.max {
            if let Some((_, old)) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
        self.map.insert(key.clone(), bytes);
        self.order.push_back((now, key));
    }

    /// When the oldest response expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.order.front().map(|(t, _)| *t + self.cfg.lifetime)
    }

    /// Forgets the responses older than the lifetime at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some((t, _)) = self.order.front() {
            if now < *t + self.cfg.lifetime {
                break;
            }
            if let Some((_, k)) = self.order.pop_front() {
                self.map.remove(&k);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    const LIFETIME: Duration = Duration::from_secs(60);

    fn cache(max: usize) -> ResponseCache<(u8, u32)> {
        ResponseCache::new(CacheConfig {
            lifetime: LIFETIME,
            max,
        })
    }

    #[test]
    fn a_duplicate_request_is_answered_from_the_cache_until_expiry() {
        let t0 = Instant::now();
        let mut c = cache(10);
        c.insert(t0, (1, 40), vec![1, 2, 3]);
        assert_eq!(c.get(&(1, 40)), Some(&[1u8, 2, 3][..]));
        // Another peer, or another number, is a new request.
        assert_eq!(c.get(&(2, 40)), None);
        assert_eq!(c.get(&(1, 41)), None);
        assert_eq!(c.poll_timeout(), Some(t0 + LIFETIME));
        c.handle_timeout(t0 + LIFETIME - Duration::from_millis(1));
        assert!(c.get(&(1, 40)).is_some(), "kept for the whole lifetime");
        c.handle_timeout(t0 + LIFETIME);
        assert_eq!(c.get(&(1, 40)), None);
        assert!(c.is_empty());
        assert_eq!(c.poll_timeout(), None);
    }

    #[test]
    fn expiry_goes_in_sending_order() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut c = cache(10);
        for i in 0..5u32 {
            c.insert(t0 + s * i, (0, i), vec![u8::try_from(i).unwrap()]);
        }
        c.handle_timeout(t0 + LIFETIME + s * 2);
        assert_eq!(c.len(), 2);
        assert!(c.get(&(0, 2)).is_none() && c.get(&(0, 3)).is_some());
        assert_eq!(c.poll_timeout(), Some(t0 + s * 3 + LIFETIME));
    }

    #[test]
    fn the_size_bound_drops_the_oldest() {
        let t0 = Instant::now();
        let mut c = cache(3);
        for i in 0..5u32 {
            c.insert(t0, (0, i), vec![0]);
        }
        assert_eq!(c.len(), 3);
        assert!(c.get(&(0, 0)).is_none() && c.get(&(0, 1)).is_none());
        assert!(c.get(&(0, 2)).is_some() && c.get(&(0, 4)).is_some());
        // Replacing a kept response does not push another out.
        c.insert(t0, (0, 2), vec![9]);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(&(0, 2)), Some(&[9u8][..]));
        assert!(c.get(&(0, 3)).is_some());
        // A cache of size 0 keeps nothing.
        let mut none = cache(0);
        none.insert(t0, (0, 0), vec![0]);
        assert!(none.is_empty());
    }
}
