//! A fast path with a slow path behind it, as one [`Datapath`]: every rule goes into both,
//! and whatever the fast path hands to the kernel (the XDP program's `XDP_PASS`: rules with
//! an MBR it does not police, buffering, GTP-U signalling) reaches the slow path's socket or
//! TUN device in the same namespace and is handled there. That is how an XDP UPF serves
//! real SMF sessions; with the fast path alone those packets would end in the kernel.
//!
//! Each packet is forwarded by exactly one of the two, so usage counts are the sum of
//! both; entries are the sum too (zero only when both are empty).

use std::net::Ipv4Addr;

use crate::datapath::{Datapath, DatapathError, DownlinkRule, Entries, UplinkRule, Usage, UsageId};

/// `fast` in front, `slow` behind.
#[derive(Debug)]
pub struct Tiered<F, S> {
    /// The front path (XDP).
    pub fast: F,
    /// The path behind it (sockets/TUN).
    pub slow: S,
    name: &'static str,
}

impl<F: Datapath, S: Datapath> Tiered<F, S> {
    /// `fast` in front of `slow`, reported as `name` (e.g. "xdp+tun").
    pub fn new(fast: F, slow: S, name: &'static str) -> Self {
        Tiered { fast, slow, name }
    }
}

/// Both results; the first error if any (both sides are always tried, so a failure on
/// one does not leave a rule behind on the other).
fn both(a: Result<(), DatapathError>, b: Result<(), DatapathError>) -> Result<(), DatapathError> {
    a.and(b)
}

impl<F: Datapath, S: Datapath> Datapath for Tiered<F, S> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn install_uplink(&mut self, rule: &UplinkRule) -> Result<(), DatapathError> {
        // Slow path first: once the fast path has the rule it may pass packets behind it.
        let s = self.slow.install_uplink(rule);
        both(s, self.fast.install_uplink(rule))
    }

    fn install_downlink(&mut self, rule: &DownlinkRule) -> Result<(), DatapathError> {
        let s = self.slow.install_downlink(rule);
        both(s, self.fast.install_downlink(rule))
    }

    fn remove_uplink(&mut self, teid: u32) -> Result<(), DatapathError> {
        let f = self.fast.remove_uplink(teid);
        both(f, self.slow.remove_uplink(teid))
    }

    fn remove_downlink(&mut self, ue_ip: Ipv4Addr) -> Result<(), DatapathError> {
        let f = self.fast.remove_downlink(ue_ip);
        both(f, self.slow.remove_downlink(ue_ip))
    }

    fn usage(&self, id: UsageId) -> Result<Usage, DatapathError> {
        let (f, s) = (self.fast.usage(id)?, self.slow.usage(id)?);
        Ok(Usage {
            ul_packets: f.ul_packets.saturating_add(s.ul_packets),
            ul_bytes: f.ul_bytes.saturating_add(s.ul_bytes),
            dl_packets: f.dl_packets.saturating_add(s.dl_packets),
            dl_bytes: f.dl_bytes.saturating_add(s.dl_bytes),
            dropped: f.dropped.saturating_add(s.dropped),
        })
    }

    fn remove_usage(&mut self, id: UsageId) -> Result<(), DatapathError> {
        let f = self.fast.remove_usage(id);
        both(f, self.slow.remove_usage(id))
    }

    fn entries(&self) -> Result<Entries, DatapathError> {
        let (f, s) = (self.fast.entries()?, self.slow.entries()?);
        Ok(Entries {
            uplink: f.uplink + s.uplink,
            downlink: f.downlink + s.downlink,
            usage: f.usage + s.usage,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::datapath::{DownlinkAction, Gate};
    use crate::userspace::rules::tests::forward_uplink;
    use crate::MemoryDatapath;

    #[test]
    fn rules_go_to_both_and_leave_both() {
        let (f, s) = (MemoryDatapath::new(), MemoryDatapath::new());
        let mut t = Tiered::new(f.clone(), s.clone(), "a+b");
        let ue = Ipv4Addr::new(10, 203, 64, 1);
        t.install_uplink(&forward_uplink(5, ue, Some(UsageId(1))))
            .unwrap();
        t.install_downlink(&DownlinkRule {
            ue_ip: ue,
            seid: 1,
            pdr_id: 2,
            action: DownlinkAction::Buffer,
            gate: Gate::OPEN,
            usage: Some(UsageId(1)),
        })
        .unwrap();
        assert!(f.uplink(5).is_some() && s.uplink(5).is_some());
        assert!(f.downlink(ue).is_some() && s.downlink(ue).is_some());
        let e = t.entries().unwrap();
        assert_eq!((e.uplink, e.downlink), (2, 2));
        assert_eq!(t.name(), "a+b");
        t.remove_uplink(5).unwrap();
        t.remove_downlink(ue).unwrap();
        t.remove_usage(UsageId(1)).unwrap();
        assert_eq!(t.entries().unwrap(), Entries::default());
        // Gone from one side only: the other side is still cleaned, the error reported.
        assert!(t.remove_uplink(5).is_err());
    }
}
