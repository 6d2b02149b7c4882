//! What the BPF maps hold, summed over CPUs, and the difference between two readings: the
//! part of the probe that needs no kernel.

use std::collections::BTreeMap;

use crate::stages::{DROP_REASONS, HIST, STAGES};

/// One stage's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageCounts {
    /// Events (packets, polls, softirqs, wake-ups or syscalls).
    pub count: u64,
    /// Their time added up, ns (0 for a stage that is only counted).
    pub sum_ns: u64,
    /// Their times, log-linear (`hist`).
    pub hist: Vec<u64>,
}

impl Default for StageCounts {
    fn default() -> Self {
        StageCounts {
            count: 0,
            sum_ns: 0,
            hist: vec![0; HIST],
        }
    }
}

impl StageCounts {
    /// Reads the C `struct stage_stat` (count, sum_ns, hist[HIST], native-endian u64s).
    pub fn from_bytes(bytes: &[u8]) -> Option<StageCounts> {
        let mut words = bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        let count = words.next()?;
        let sum_ns = words.next()?;
        let hist: Vec<u64> = words.take(HIST).collect();
        (hist.len() == HIST).then_some(StageCounts {
            count,
            sum_ns,
            hist,
        })
    }

    fn add(&mut self, other: &StageCounts) {
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        for (a, b) in self.hist.iter_mut().zip(&other.hist) {
            *a += b;
        }
    }

    fn minus(&self, before: &StageCounts) -> StageCounts {
        StageCounts {
            count: self.count.saturating_sub(before.count),
            sum_ns: self.sum_ns.saturating_sub(before.sum_ns),
            hist: self
                .hist
                .iter()
                .zip(&before.hist)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
        }
    }
}

/// NET_RX softirq time charged to one process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskTime {
    /// Softirq time, ns.
    pub ns: u64,
    /// Softirqs.
    pub count: u64,
}

/// Everything the probe counts, summed over CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    /// By stage slot (`stages::STAGES`).
    pub stages: Vec<StageCounts>,
    /// Packets the matching NAPI polls handled.
    pub napi_packets: u64,
    /// Matching NAPI polls that used their whole budget.
    pub napi_full_budget: u64,
    /// kfree_skb of matching packets by enum skb_drop_reason value.
    pub drops: Vec<u64>,
    /// NET_RX softirq time by the process (tgid) it ran in.
    pub softirq_by_task: BTreeMap<u32, TaskTime>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            stages: vec![StageCounts::default(); STAGES.len()],
            napi_packets: 0,
            napi_full_budget: 0,
            drops: vec![0; DROP_REASONS as usize],
            softirq_by_task: BTreeMap::new(),
        }
    }
}

impl Counters {
    /// Adds one CPU's `stage_stat` for `slot`.
    pub fn add_stage(&mut self, slot: usize, counts: &StageCounts) {
        if let Some(s) = self.stages.get_mut(slot) {
            s.add(counts);
        }
    }

    /// The stage called `name`.
    pub fn stage(&self, name: &str) -> Option<&StageCounts> {
        let slot = crate::stages::slot(name)? as usize;
        self.stages.get(slot)
    }

    /// What happened between `before` and `self`. Counters only grow, but the per-process
    /// map is an LRU that may forget a process: a value below its earlier reading counts
    /// from zero.
    pub fn since(&self, before: &Counters) -> Counters {
        let stages = self
            .stages
            .iter()
            .zip(&before.stages)
            .map(|(a, b)| a.minus(b))
            .collect();
        let drops = self
            .drops
            .iter()
            .zip(&before.drops)
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        let softirq_by_task = self
            .softirq_by_task
            .iter()
            .filter_map(|(&pid, now)| {
                let then = before
                    .softirq_by_task
                    .get(&pid)
                    .copied()
                    .unwrap_or_default();
                let (ns, count) = if now.ns >= then.ns {
                    (now.ns - then.ns, now.count.saturating_sub(then.count))
                } else {
                    (now.ns, now.count)
                };
                (count > 0).then_some((pid, TaskTime { ns, count }))
            })
            .collect();
        Counters {
            stages,
            napi_packets: self.napi_packets.saturating_sub(before.napi_packets),
            napi_full_budget: self
                .napi_full_budget
                .saturating_sub(before.napi_full_budget),
            drops,
            softirq_by_task,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat_bytes(count: u64, sum: u64, bucket: usize) -> Vec<u8> {
        let mut words = vec![0u64; 2 + HIST];
        words[0] = count;
        words[1] = sum;
        words[2 + bucket] = count;
        words.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    #[test]
    fn reads_the_c_layout() {
        let s = StageCounts::from_bytes(&stat_bytes(3, 300, 7)).expect("parses");
        assert_eq!((s.count, s.sum_ns, s.hist[7]), (3, 300, 3));
        assert!(StageCounts::from_bytes(&[0u8; 16]).is_none());
    }

    #[test]
    fn difference_of_two_readings() {
        let mut before = Counters::default();
        let mut after = Counters::default();
        let one = StageCounts::from_bytes(&stat_bytes(2, 20, 1)).expect("parses");
        before.add_stage(0, &one);
        after.add_stage(0, &one);
        after.add_stage(0, &one);
        after.drops[2] = 5;
        before
            .softirq_by_task
            .insert(7, TaskTime { ns: 10, count: 1 });
        after
            .softirq_by_task
            .insert(7, TaskTime { ns: 30, count: 3 });
        after
            .softirq_by_task
            .insert(8, TaskTime { ns: 5, count: 1 });
        let d = after.since(&before);
        assert_eq!(
            (d.stages[0].count, d.stages[0].sum_ns, d.stages[0].hist[1]),
            (2, 20, 2)
        );
        assert_eq!(d.drops[2], 5);
        assert_eq!(d.softirq_by_task[&7], TaskTime { ns: 20, count: 2 });
        assert_eq!(d.softirq_by_task[&8], TaskTime { ns: 5, count: 1 });
    }

    #[test]
    fn stages_are_found_by_name() {
        let c = Counters::default();
        assert!(c.stage("netif_receive_skb").is_some());
        assert!(c.stage("ip_rcv").is_none());
    }
}
