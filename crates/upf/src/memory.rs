//! A datapath that keeps rules in memory and forwards nothing: `steer5g upf --datapath none`
//! uses it to run the PFCP side alone, and the tests use it to see which rules the PFCP side
//! installed and to drive usage counters by hand.
//!
//! It is a cheap handle (clones share the same tables) so that a test can keep one while the
//! UPF service owns another.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::datapath::{Datapath, DatapathError, DownlinkRule, Entries, UplinkRule, Usage, UsageId};

#[derive(Debug, Default)]
struct Tables {
    uplink: HashMap<u32, UplinkRule>,
    downlink: HashMap<Ipv4Addr, DownlinkRule>,
    usage: HashMap<UsageId, Usage>,
}

/// In-memory rule tables; clones share them.
#[derive(Debug, Clone, Default)]
pub struct MemoryDatapath {
    tables: Arc<Mutex<Tables>>,
}

impl MemoryDatapath {
    /// Empty tables.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Tables> {
        // A panic in another holder cannot leave the maps half-updated (each operation is one
        // map call), so a poisoned lock is still usable.
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The uplink rule of `teid`, if installed.
    pub fn uplink(&self, teid: u32) -> Option<UplinkRule> {
        self.lock().uplink.get(&teid).copied()
    }

    /// The downlink rule of `ue_ip`, if installed.
    pub fn downlink(&self, ue_ip: Ipv4Addr) -> Option<DownlinkRule> {
        self.lock().downlink.get(&ue_ip).copied()
    }

    /// Every uplink rule.
    pub fn uplink_rules(&self) -> Vec<UplinkRule> {
        self.lock().uplink.values().copied().collect()
    }

    /// Adds `delta` to the counters of `id` as if packets had been forwarded; false when `id`
    /// is not installed.
    pub fn count(&self, id: UsageId, delta: Usage) -> bool {
        let mut t = self.lock();
        let Some(u) = t.usage.get_mut(&id) else {
            return false;
        };
        u.ul_packets = u.ul_packets.saturating_add(delta.ul_packets);
        u.ul_bytes = u.ul_bytes.saturating_add(delta.ul_bytes);
        u.dl_packets = u.dl_packets.saturating_add(delta.dl_packets);
        u.dl_bytes = u.dl_bytes.saturating_add(delta.dl_bytes);
        u.dropped = u.dropped.saturating_add(delta.dropped);
        true
    }
}

impl Datapath for MemoryDatapath {
    fn name(&self) -> &'static str {
        "none"
    }

    fn install_uplink(&mut self, rule: &UplinkRule) -> Result<(), DatapathError> {
        let mut t = self.lock();
        if let Some(id) = rule.usage {
            t.usage.entry(id).or_default();
        }
        t.uplink.insert(rule.teid, *rule);
        Ok(())
    }

    fn install_downlink(&mut self, rule: &DownlinkRule) -> Result<(), DatapathError> {
        let mut t = self.lock();
        if let Some(id) = rule.usage {
            t.usage.entry(id).or_default();
        }
        t.downlink.insert(rule.ue_ip, *rule);
        Ok(())
    }

    fn remove_uplink(&mut self, teid: u32) -> Result<(), DatapathError> {
        match self.lock().uplink.remove(&teid) {
            Some(_) => Ok(()),
            None => Err(DatapathError::NotFound {
                table: "uplink",
                key: format!("{teid:#010x}"),
            }),
        }
    }

    fn remove_downlink(&mut self, ue_ip: Ipv4Addr) -> Result<(), DatapathError> {
        match self.lock().downlink.remove(&ue_ip) {
            Some(_) => Ok(()),
            None => Err(DatapathError::NotFound {
                table: "downlink",
                key: ue_ip.to_string(),
            }),
        }
    }

    fn usage(&self, id: UsageId) -> Result<Usage, DatapathError> {
        Ok(self.lock().usage.get(&id).copied().unwrap_or_default())
    }

    fn remove_usage(&mut self, id: UsageId) -> Result<(), DatapathError> {
        match self.lock().usage.remove(&id) {
            Some(_) => Ok(()),
            None => Err(DatapathError::NotFound {
                table: "usage",
                key: id.0.to_string(),
            }),
        }
    }

    fn entries(&self) -> Result<Entries, DatapathError> {
        let t = self.lock();
        Ok(Entries {
            uplink: t.uplink.len(),
            downlink: t.downlink.len(),
            usage: t.usage.len(),
        })
    }
}
