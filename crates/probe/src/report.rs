//! The report of one probing interval: per stage its rate, time and histogram, NAPI
//! batching, drops by reason, NET_RX softirq time by the process it was charged to next to
//! that process's CPU time from /proc (what `top` shows), and /proc/stat's softirq and
//! steal. Built from two readings, without the kernel.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use serde::Serialize;

use crate::counters::Counters;
use crate::procfs::{self, CpuTimes};
use crate::stages::STAGES;
use crate::{hist, Filter};

/// Counters and /proc at one instant.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The probe's counters.
    pub counters: Counters,
    /// /proc/stat.
    pub cpu: Option<CpuTimes>,
    /// CPU ticks of every process then.
    pub process_ticks: BTreeMap<u32, u64>,
    /// When.
    pub at: Instant,
}

impl Reading {
    /// /proc now, with `counters` just read.
    pub fn now(counters: Counters) -> Reading {
        let process_ticks = std::fs::read_dir("/proc")
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                    .filter_map(|pid| Some((pid, procfs::process_ticks(pid)?)))
                    .collect()
            })
            .unwrap_or_default();
        Reading {
            counters,
            cpu: procfs::cpu_times(),
            process_ticks,
            at: Instant::now(),
        }
    }
}

/// One stage in the report.
#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    /// The tracepoint's name (or `softirq_net_rx*`, `sys_*`).
    pub name: &'static str,
    /// The tracepoints that bound it.
    pub source: &'static str,
    /// What reference 004 calls this part of the path.
    pub reference_004: &'static str,
    /// Whether it is timed; an untimed stage has 0 in every `_ns` field.
    pub timed: bool,
    /// Events in the interval.
    pub count: u64,
    /// Events per second.
    pub per_second: f64,
    /// Time of all events, ns.
    pub time_ns: u64,
    /// Mean per event, ns.
    pub mean_ns: f64,
    /// Median per event (middle of its log-linear bucket), ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Nonempty histogram buckets: `[low_ns, high_ns, count]`.
    pub histogram: Vec<[u64; 3]>,
}

/// NAPI batching.
#[derive(Debug, Clone, Serialize)]
pub struct NapiReport {
    /// Matching polls.
    pub polls: u64,
    /// Packets they handled.
    pub packets: u64,
    /// Packets per poll.
    pub packets_per_poll: f64,
    /// Poll time per packet, ns.
    pub poll_ns_per_packet: f64,
    /// Polls that used their whole budget.
    pub full_budget_polls: u64,
}

/// kfree_skb by reason.
#[derive(Debug, Clone, Serialize)]
pub struct DropReport {
    /// The kernel's name (`SOCKET_RCVBUFF`, `NO_SOCKET`, ...), from its BTF.
    pub reason: String,
    /// enum skb_drop_reason value on this kernel.
    pub code: u32,
    /// Packets.
    pub count: u64,
}

/// NET_RX softirq time charged to one process, beside its CPU time from /proc.
#[derive(Debug, Clone, Serialize)]
pub struct TaskReport {
    /// Process id (tgid); 0 is the idle task.
    pub pid: u32,
    /// Its name.
    pub comm: String,
    /// Whether these are the ksoftirqd threads.
    pub ksoftirqd: bool,
    /// NET_RX softirqs run inside it.
    pub softirqs: u64,
    /// Their time, ns: packet processing /proc charges to this process.
    pub softirq_ns: u64,
    /// Its CPU time in /proc over the same interval, ns (utime + stime, what `top` shows);
    /// absent for the idle task and for processes that have gone.
    pub proc_cpu_ns: Option<u64>,
}

/// /proc/stat over the interval, the whole machine.
#[derive(Debug, Clone, Serialize)]
pub struct ProcStatReport {
    /// Softirq time, all vectors, ns.
    pub softirq_ns: u64,
    /// Steal time, ns.
    pub steal_ns: u64,
    /// All CPU time, ns.
    pub total_ns: u64,
}

/// The filter, as applied.
#[derive(Debug, Clone, Serialize)]
pub struct FilterReport {
    /// Network namespace inode, or null for every namespace.
    pub netns: Option<u32>,
    /// Interface index, or null for every interface.
    pub ifindex: Option<u32>,
    /// Process, or null for every process.
    pub pid: Option<u32>,
}

/// One interval's report (`steer5g probe --json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Length of the interval, s.
    pub duration_s: f64,
    /// What was counted.
    pub filter: FilterReport,
    /// Every stage, in path order.
    pub stages: Vec<StageReport>,
    /// NAPI batching.
    pub napi: NapiReport,
    /// Drops of matching packets by reason.
    pub drops: Vec<DropReport>,
    /// Where NET_RX softirq time was charged, most first.
    pub softirq_by_task: Vec<TaskReport>,
    /// /proc/stat over the same interval, for comparison.
    pub proc_stat: Option<ProcStatReport>,
    /// How the stages map to reference 004's and what this kernel allowed.
    pub notes: Vec<String>,
}

/// What the report says about its method, in every output.
pub fn method_notes() -> Vec<String> {
    vec![
        "every program is tp_btf (BTF-typed raw tracepoints): no kprobes or fentry, and no \
         tracefs needed"
            .to_owned(),
        "reference 004's stages netif_receive_skb, ip_rcv, ip_local_deliver and udp_rcv are one \
         stage here, netif_receive_skb: IP and IP-to-transport have no tracepoint between them"
            .to_owned(),
        "napi_poll's time runs from the softirq's start or the previous poll's end: the poll \
         has no entry tracepoint"
            .to_owned(),
        "syscalls come from raw_syscalls:sys_enter/sys_exit by number, which needs neither \
         tracefs nor the syscalls:* events (FTRACE_SYSCALLS)"
            .to_owned(),
        "percentiles are the middle of a log-linear bucket (4 per power of two): within 12.5 %"
            .to_owned(),
    ]
}

/// Builds the report of the interval between two readings.
pub fn build(
    before: &Reading,
    after: &Reading,
    filter: Filter,
    reason_names: &BTreeMap<u32, String>,
) -> Report {
    let d = after.counters.since(&before.counters);
    let secs = after.at.duration_since(before.at).as_secs_f64().max(1e-9);
    let stages = STAGES
        .iter()
        .zip(&d.stages)
        .map(|(s, c)| {
            let timed = s.time.is_some();
            let histogram = if timed {
                c.hist
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(i, &n)| {
                        let (lo, hi) = hist::edges(i);
                        [lo, hi, n]
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let timed_count: u64 = c.hist.iter().sum();
            StageReport {
                name: s.name,
                source: s.source,
                reference_004: s.reference_004,
                timed,
                count: c.count,
                per_second: c.count as f64 / secs,
                time_ns: if timed { c.sum_ns } else { 0 },
                mean_ns: if timed && timed_count > 0 {
                    c.sum_ns as f64 / timed_count as f64
                } else {
                    0.0
                },
                p50_ns: hist::quantile(&c.hist, 0.5),
                p90_ns: hist::quantile(&c.hist, 0.9),
                p99_ns: hist::quantile(&c.hist, 0.99),
                histogram,
            }
        })
        .collect::<Vec<_>>();
    let poll = &d.stages[0];
    let napi = NapiReport {
        polls: poll.count,
        packets: d.napi_packets,
        packets_per_poll: ratio(d.napi_packets, poll.count),
        poll_ns_per_packet: ratio(poll.sum_ns, d.napi_packets),
        full_budget_polls: d.napi_full_budget,
    };
    let drops = d
        .drops
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(code, &count)| {
            let code = code as u32;
            DropReport {
                reason: reason_names
                    .get(&code)
                    .cloned()
                    .unwrap_or_else(|| format!("reason {code}")),
                code,
                count,
            }
        })
        .collect();
    let tick_ns = 1_000_000_000 / procfs::ticks_per_second();
    let mut softirq_by_task: Vec<TaskReport> = d
        .softirq_by_task
        .iter()
        .map(|(&pid, t)| {
            let comm = if pid == 0 {
                "idle".to_owned()
            } else {
                procfs::comm(pid).unwrap_or_else(|| "(gone)".to_owned())
            };
            // A process missing from the first reading started during the interval: all
            // its time is inside it.
            let proc_cpu_ns = match (
                before.process_ticks.get(&pid),
                after.process_ticks.get(&pid),
            ) {
                (a, Some(b)) if pid != 0 => {
                    Some(b.saturating_sub(a.copied().unwrap_or(0)) * tick_ns)
                }
                _ => None,
            };
            TaskReport {
                pid,
                ksoftirqd: comm.starts_with("ksoftirqd/"),
                comm,
                softirqs: t.count,
                softirq_ns: t.ns,
                proc_cpu_ns,
            }
        })
        .collect();
    softirq_by_task.sort_by_key(|t| std::cmp::Reverse(t.softirq_ns));
    let proc_stat = match (before.cpu, after.cpu) {
        (Some(a), Some(b)) => Some(ProcStatReport {
            softirq_ns: b.softirq.saturating_sub(a.softirq) * tick_ns,
            steal_ns: b.steal.saturating_sub(a.steal) * tick_ns,
            total_ns: b.total.saturating_sub(a.total) * tick_ns,
        }),
        _ => None,
    };
    let nonzero = |v: u32| (v != 0).then_some(v);
    Report {
        duration_s: secs,
        filter: FilterReport {
            netns: nonzero(filter.netns),
            ifindex: nonzero(filter.ifindex),
            pid: nonzero(filter.pid),
        },
        stages,
        napi,
        drops,
        softirq_by_task,
        proc_stat,
        notes: method_notes(),
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

impl Report {
    /// The stage called `name`.
    pub fn stage(&self, name: &str) -> Option<&StageReport> {
        self.stages.iter().find(|s| s.name == name)
    }

    /// The human table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let f = &self.filter;
        let show = |v: Option<u32>| v.map_or_else(|| "any".to_owned(), |v| v.to_string());
        let _ = writeln!(
            out,
            "receive path, {:.1} s; netns {} ifindex {} pid {}",
            self.duration_s,
            show(f.netns),
            show(f.ifindex),
            show(f.pid)
        );
        let _ = writeln!(
            out,
            "{:<26} {:>10} {:>11} {:>10} {:>10} {:>10} {:>10}",
            "stage", "count", "per s", "mean ns", "p50 ns", "p99 ns", "total ms"
        );
        for s in &self.stages {
            if s.timed {
                let _ = writeln!(
                    out,
                    "{:<26} {:>10} {:>11.1} {:>10.0} {:>10} {:>10} {:>10.3}",
                    s.name,
                    s.count,
                    s.per_second,
                    s.mean_ns,
                    s.p50_ns,
                    s.p99_ns,
                    s.time_ns as f64 / 1e6
                );
            } else {
                let _ = writeln!(
                    out,
                    "{:<26} {:>10} {:>11.1} {:>10} {:>10} {:>10} {:>10}",
                    s.name, s.count, s.per_second, "-", "-", "-", "-"
                );
            }
        }
        let n = &self.napi;
        let _ = writeln!(
            out,
            "napi: {} polls, {} packets, {:.2} packets/poll, {:.0} ns/packet, {} at full budget",
            n.polls, n.packets, n.packets_per_poll, n.poll_ns_per_packet, n.full_budget_polls
        );
        if !self.drops.is_empty() {
            let list: Vec<String> = self
                .drops
                .iter()
                .map(|d| format!("{} {}", d.reason, d.count))
                .collect();
            let _ = writeln!(out, "drops: {}", list.join(", "));
        }
        if !self.softirq_by_task.is_empty() {
            let _ = writeln!(
                out,
                "NET_RX softirq time by the task it ran in (what top charges it to):"
            );
            let _ = writeln!(
                out,
                "  {:>8} {:<18} {:>9} {:>12} {:>14}",
                "pid", "task", "softirqs", "softirq ms", "its /proc ms"
            );
            for t in self.softirq_by_task.iter().take(10) {
                let proc_ms = t
                    .proc_cpu_ns
                    .map_or_else(|| "-".to_owned(), |ns| format!("{:.1}", ns as f64 / 1e6));
                let _ = writeln!(
                    out,
                    "  {:>8} {:<18} {:>9} {:>12.3} {:>14}",
                    t.pid,
                    t.comm,
                    t.softirqs,
                    t.softirq_ns as f64 / 1e6,
                    proc_ms
                );
            }
        }
        if let Some(p) = &self.proc_stat {
            let _ = writeln!(
                out,
                "/proc/stat: softirq {:.1} ms, steal {:.1} ms of {:.1} ms CPU",
                p.softirq_ns as f64 / 1e6,
                p.steal_ns as f64 / 1e6,
                p.total_ns as f64 / 1e6
            );
        }
        out
    }

    /// `stages.csv`: one row per stage.
    pub fn stages_csv(&self) -> String {
        let mut out =
            String::from("stage,timed,count,per_second,time_ns,mean_ns,p50_ns,p90_ns,p99_ns\n");
        for s in &self.stages {
            let _ = writeln!(
                out,
                "{},{},{},{:.3},{},{:.1},{},{},{}",
                s.name,
                s.timed,
                s.count,
                s.per_second,
                s.time_ns,
                s.mean_ns,
                s.p50_ns,
                s.p90_ns,
                s.p99_ns
            );
        }
        out
    }

    /// `histograms.csv`: one row per nonempty bucket of every timed stage.
    pub fn histograms_csv(&self) -> String {
        let mut out = String::from("stage,low_ns,high_ns,count\n");
        for s in &self.stages {
            for [lo, hi, n] in &s.histogram {
                let _ = writeln!(out, "{},{lo},{hi},{n}", s.name);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::{StageCounts, TaskTime};
    use std::time::Duration;

    fn reading(counters: Counters, at: Instant) -> Reading {
        Reading {
            counters,
            cpu: Some(CpuTimes::default()),
            process_ticks: BTreeMap::new(),
            at,
        }
    }

    #[test]
    fn a_report_from_two_readings() {
        let t0 = Instant::now();
        let before = reading(Counters::default(), t0);
        let mut c = Counters::default();
        let slot = crate::stages::slot("netif_receive_skb").expect("stage") as usize;
        let mut s = StageCounts {
            count: 10,
            sum_ns: 10_000,
            ..StageCounts::default()
        };
        s.hist[hist::bucket(1000)] = 10;
        c.add_stage(slot, &s);
        c.drops[3] = 2;
        c.softirq_by_task.insert(0, TaskTime { ns: 500, count: 1 });
        let after = reading(c, t0 + Duration::from_secs(2));
        let mut names = BTreeMap::new();
        names.insert(3, "NO_SOCKET".to_owned());
        let r = build(&before, &after, Filter::default(), &names);
        let st = r.stage("netif_receive_skb").expect("stage");
        assert_eq!(st.count, 10);
        assert!((st.per_second - 5.0).abs() < 1e-6);
        assert!((st.mean_ns - 1000.0).abs() < 1e-6);
        assert!((900..=1100).contains(&st.p50_ns));
        assert_eq!(r.drops[0].reason, "NO_SOCKET");
        assert_eq!(r.softirq_by_task[0].comm, "idle");
        assert!(r.filter.netns.is_none());
        let json = serde_json::to_value(&r).expect("serialises");
        assert!(json["stages"][0]["name"].is_string());
        assert!(r.table().contains("netif_receive_skb"));
        assert_eq!(r.stages_csv().lines().count(), 1 + STAGES.len());
        assert_eq!(r.histograms_csv().lines().count(), 2);
    }
}
