//! A datapath shared between the PFCP service that installs its rules and the code that
//! watches it (a test bed, a demo): [`UpfService::start`](crate::UpfService::start) takes
//! the datapath by value, yet its per-path counters (XDP reasons, TUN reasons) are what
//! prove which path carried the traffic. [`SharedDatapath`] is a cloneable handle; every
//! clone reaches the same datapath behind a mutex, taken only for a rule change or a read
//! (never per packet: the packets never pass through here).
//!
//! It also remembers where each UE's downlink is forwarded, so a watcher can tell when
//! the session modification after the gNB's answer has arrived (the SMF installs the
//! downlink rule buffering first, TS 23.502 §4.3.2.2.1 steps 10-16).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::datapath::{
    Datapath, DatapathError, DownlinkAction, DownlinkRule, Entries, UplinkRule, Usage, UsageId,
};

#[derive(Debug)]
struct Inner<D> {
    dp: D,
    /// UE address → (gNB TEID, gNB address) of its forwarding downlink rule.
    forwards: HashMap<Ipv4Addr, (u32, Ipv4Addr)>,
}

/// A cloneable handle on one datapath.
#[derive(Debug)]
pub struct SharedDatapath<D> {
    inner: Arc<Mutex<Inner<D>>>,
}

impl<D> Clone for SharedDatapath<D> {
    fn clone(&self) -> Self {
        SharedDatapath {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<D: Datapath> SharedDatapath<D> {
    /// Shares `dp`.
    pub fn new(dp: D) -> Self {
        SharedDatapath {
            inner: Arc::new(Mutex::new(Inner {
                dp,
                forwards: HashMap::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<D>> {
        // A panic while holding the lock leaves plain tables behind; keep using them.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on the datapath (to read its own counters).
    pub fn with<T>(&self, f: impl FnOnce(&D) -> T) -> T {
        f(&self.lock().dp)
    }

    /// The gNB TEID and address `ue_ip`'s downlink is forwarded to, if it is.
    pub fn downlink_forward(&self, ue_ip: Ipv4Addr) -> Option<(u32, Ipv4Addr)> {
        self.lock().forwards.get(&ue_ip).copied()
    }
}

impl<D: Datapath> Datapath for SharedDatapath<D> {
    fn name(&self) -> &'static str {
        self.lock().dp.name()
    }

    fn install_uplink(&mut self, rule: &UplinkRule) -> Result<(), DatapathError> {
        self.lock().dp.install_uplink(rule)
    }

    fn install_downlink(&mut self, rule: &DownlinkRule) -> Result<(), DatapathError> {
        let mut g = self.lock();
        g.dp.install_downlink(rule)?;
        match rule.action {
            DownlinkAction::Forward { teid, peer, .. } => {
                g.forwards.insert(rule.ue_ip, (teid, peer));
            }
            DownlinkAction::Buffer | DownlinkAction::Drop => {
                g.forwards.remove(&rule.ue_ip);
            }
        }
        Ok(())
    }

    fn remove_uplink(&mut self, teid: u32) -> Result<(), DatapathError> {
        self.lock().dp.remove_uplink(teid)
    }

    fn remove_downlink(&mut self, ue_ip: Ipv4Addr) -> Result<(), DatapathError> {
        let mut g = self.lock();
        g.forwards.remove(&ue_ip);
        g.dp.remove_downlink(ue_ip)
    }

    fn usage(&self, id: UsageId) -> Result<Usage, DatapathError> {
        self.lock().dp.usage(id)
    }

    fn remove_usage(&mut self, id: UsageId) -> Result<(), DatapathError> {
        self.lock().dp.remove_usage(id)
    }

    fn entries(&self) -> Result<Entries, DatapathError> {
        self.lock().dp.entries()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::datapath::Gate;
    use crate::MemoryDatapath;

    #[test]
    fn clones_reach_one_datapath_and_track_forwards() {
        let mut a = SharedDatapath::new(MemoryDatapath::new());
        let b = a.clone();
        let ue = Ipv4Addr::new(10, 203, 64, 1);
        let mut rule = DownlinkRule {
            ue_ip: ue,
            seid: 1,
            pdr_id: 2,
            action: DownlinkAction::Buffer,
            gate: Gate::OPEN,
            usage: None,
        };
        a.install_downlink(&rule).unwrap();
        assert_eq!(b.downlink_forward(ue), None);
        assert_eq!(b.entries().unwrap().downlink, 1);
        let gnb = Ipv4Addr::new(10, 203, 3, 2);
        rule.action = DownlinkAction::Forward {
            teid: 7,
            peer: gnb,
            qfi: Some(1),
        };
        a.install_downlink(&rule).unwrap();
        assert_eq!(b.downlink_forward(ue), Some((7, gnb)));
        assert_eq!(
            b.with(|d| d.downlink(ue).map(|r| r.action)),
            Some(rule.action)
        );
        a.remove_downlink(ue).unwrap();
        assert_eq!(b.downlink_forward(ue), None);
        assert_eq!(b.entries().unwrap(), Entries::default());
        assert_eq!(b.name(), "none");
    }
}
