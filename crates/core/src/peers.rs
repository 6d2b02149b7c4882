//! The instances of each peer NF type a worker calls, found through the NRF: the order to try
//! them in, and which failed lately. Each worker keeps its own copy (updates arrive on its
//! local channel), so a call reads it with no lock.
//!
//! A call whose request names no instance's resource (a POST creating an authentication
//! context, a UDM read) goes to the first instance not marked down; if it fails in transport
//! that instance is marked down for [`DOWN_FOR`] and the call is sent to the next one. A call
//! to a resource of one instance (the AUSF's `_links` for the confirmation) is not moved: its
//! state died with the instance, and the procedure fails as it would with one instance.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sbi::NfType;

/// How long an instance that failed a call is passed over.
pub(crate) const DOWN_FOR: Duration = Duration::from_secs(10);

/// A worker's peer instances.
#[derive(Debug, Default, Clone)]
pub(crate) struct Peers {
    /// Base URIs by type, in order of preference.
    bases: HashMap<NfType, Vec<String>>,
    /// Instances passed over until then.
    down: HashMap<String, Instant>,
}

impl Peers {
    pub(crate) fn new(bases: HashMap<NfType, Vec<String>>) -> Self {
        Peers {
            bases,
            down: HashMap::new(),
        }
    }

    /// Replaces the instances of `nf` (an NRF notification, or discovery again).
    pub(crate) fn set(&mut self, nf: NfType, bases: Vec<String>) {
        self.down.retain(|b, _| bases.contains(b));
        self.bases.insert(nf, bases);
    }

    /// The instances of `nf` to try, the ones not down first, at most `n`; empty when the
    /// worker knows none (then the static directory answers).
    pub(crate) fn candidates(&self, nf: NfType, now: Instant, n: usize) -> Vec<String> {
        let Some(all) = self.bases.get(&nf) else {
            return Vec::new();
        };
        let is_down = |b: &String| self.down.get(b).is_some_and(|&until| now < until);
        let (up, down): (Vec<&String>, Vec<&String>) = all.iter().partition(|b| !is_down(b));
        up.into_iter().chain(down).take(n).cloned().collect()
    }

    /// Marks `base` down until `now + DOWN_FOR`.
    pub(crate) fn failed(&mut self, base: &str, now: Instant) {
        self.down.insert(base.to_owned(), now + DOWN_FOR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_instance_is_tried_last_until_its_time_is_up() {
        let a = "http://127.0.0.11:7777".to_owned();
        let b = "http://127.0.1.11:7777".to_owned();
        let mut p = Peers::new(HashMap::from([(NfType::Ausf, vec![a.clone(), b.clone()])]));
        let t = Instant::now();
        assert_eq!(p.candidates(NfType::Ausf, t, 2), [a.clone(), b.clone()]);
        assert!(p.candidates(NfType::Udm, t, 2).is_empty());
        p.failed(&a, t);
        assert_eq!(p.candidates(NfType::Ausf, t, 2), [b.clone(), a.clone()]);
        assert_eq!(p.candidates(NfType::Ausf, t, 1), std::slice::from_ref(&b));
        assert_eq!(
            p.candidates(NfType::Ausf, t + DOWN_FOR, 2),
            [a.clone(), b.clone()]
        );
        // The NRF's list replaces the old one; a gone instance is forgotten.
        p.set(NfType::Ausf, vec![b.clone()]);
        assert_eq!(p.candidates(NfType::Ausf, t, 2), [b]);
    }
}
