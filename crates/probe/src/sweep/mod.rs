//! The offered-load sweep of reference 004 §IV-V: UDP at set sizes and rates from a
//! generator namespace to a receiver namespace over veth, the probe attached to the
//! receiver's interface, one step per rate, up to and past the onset of drops; under two
//! conditions, the receiver's CPU otherwise idle and the receiver's CPU shared with a
//! pinned CPU-bound task.
//!
//! Topology on two CPUs: the generator on `gen_cpu`; the receiver's softirq (by RPS) and
//! its reading thread on `rx_cpu`. Every step is bounded in time and in packets.

pub mod overhead;
mod plot;
pub mod topo;
pub mod traffic;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::report::{self, Reading, StageReport};
use crate::{Error, Probe};

pub use plot::{chart, write_plots, Series};

/// One step's offered load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Datagrams per second.
    Pps(u64),
    /// As fast as the generator's CPU sends.
    Max,
}

impl Rate {
    /// `10000`, `10k`, `1.5m` or `max`.
    pub fn parse(s: &str) -> Result<Rate, String> {
        let t = s.trim().to_ascii_lowercase();
        if t == "max" {
            return Ok(Rate::Max);
        }
        let (num, mult) = match t.strip_suffix('k') {
            Some(n) => (n, 1e3),
            None => match t.strip_suffix('m') {
                Some(n) => (n, 1e6),
                None => (t.as_str(), 1.0),
            },
        };
        let v: f64 = num
            .parse()
            .map_err(|_| format!("rate {s:?}: a number of packets per second, or max"))?;
        let pps = (v * mult).round();
        if !(1.0..=1e8).contains(&pps) {
            return Err(format!("rate {s:?}: between 1 and 100m packets per second"));
        }
        Ok(Rate::Pps(pps as u64))
    }

    fn pps(self) -> Option<u64> {
        match self {
            Rate::Pps(p) => Some(p),
            Rate::Max => None,
        }
    }
}

/// The transport of the sink's traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Proto {
    /// Datagrams, each tagged: drops at the socket show, and latency by sequence.
    Udp,
    /// One connection per step carrying `payload`-octet messages: TCP's flow control holds
    /// the sender back instead of dropping, and reads are timed by skb.
    Tcp,
}

impl Proto {
    /// `udp` or `tcp`.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
        }
    }

    /// Octets on the wire per message besides its payload, one message per packet: UDP 8
    /// or TCP 20, IPv4 20, Ethernet 14.
    fn headers(self) -> usize {
        match self {
            Proto::Udp => 42,
            Proto::Tcp => 54,
        }
    }
}

/// Under what the receiver runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// Nothing else on the receiver's CPU.
    Idle,
    /// A pinned CPU-bound task shares the receiver's CPU (reference 004's full load).
    Loaded,
}

/// What to sweep.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The offered rates, one step each.
    pub rates: Vec<Rate>,
    /// The transport.
    pub proto: Proto,
    /// UDP payload or TCP message octets (at least the 16-octet tag).
    pub payload: usize,
    /// Length of a step.
    pub step: Duration,
    /// Most datagrams in a step.
    pub max_packets: u64,
    /// The conditions, each a full sweep.
    pub conditions: Vec<Condition>,
    /// The generator's CPU.
    pub gen_cpu: usize,
    /// The receiver's CPU (softirq by RPS, and the reading thread).
    pub rx_cpu: usize,
    /// Prefix of the namespace and interface names (short: interface names are 15 chars).
    pub tag: String,
    /// Where the receiver's softirq runs.
    pub steering: topo::Steering,
}

/// One step.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// The condition.
    pub condition: Condition,
    /// The rate asked for; null for `max`.
    pub target_pps: Option<u64>,
    /// What the generator achieved: datagrams sent per second.
    pub offered_pps: f64,
    /// Offered bandwidth, Mbit/s of UDP payload plus UDP/IP/Ethernet headers.
    pub offered_mbps: f64,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams the sender's kernel refused.
    pub refused: u64,
    /// Datagrams the application read.
    pub delivered: u64,
    /// Delivered per second of the step.
    pub delivered_pps: f64,
    /// Drops where the probe saw them, by kfree_skb reason.
    pub dropped: BTreeMap<String, u64>,
    /// Of those, the ones the UDP socket queue refused (udp_fail_queue_rcv_skb).
    pub udp_queue_failures: u64,
    /// Sent, neither read nor seen dropped.
    pub unaccounted: i64,
    /// Events the kernel did not hand to a probe program in the step because one was
    /// already running on that CPU (the programs' recursion misses): the counts are short
    /// by at most this.
    pub missed_events: u64,
    /// Packets per NAPI poll.
    pub packets_per_poll: f64,
    /// NAPI poll time per packet, ns.
    pub poll_ns_per_packet: f64,
    /// NET_RX softirq time per packet received, ns.
    pub softirq_ns_per_packet: f64,
    /// Share of the NET_RX softirq time that ran in ksoftirqd (the rest was borrowed).
    pub softirq_thread_share: f64,
    /// Under `loaded`: what took the receiver's CPU from the competitor, three ways.
    pub cpu_taken: Option<CpuTaken>,
    /// Every stage of the step.
    pub stages: Vec<StageReport>,
}

/// Reference 004's `openssl speed` cross-check on the receiver's CPU: the share of it a
/// pinned CPU-bound task lost against its quiet baseline, beside the shares the tracepoints
/// and /proc account for. They should add up; `residual` is what they leave unexplained
/// (scheduler, timer and other interrupt work, the competitor's own cache misses).
#[derive(Debug, Clone, Serialize)]
pub struct CpuTaken {
    /// 1 - the competitor's rate in the step / its baseline rate.
    pub competitor_lost: f64,
    /// NET_RX softirq time the probe saw / the step's time.
    pub softirq_probe: f64,
    /// The receiver CPU's softirq time in /proc/stat / its total.
    pub softirq_proc: f64,
    /// The reading thread's CPU time / the step's time.
    pub reader: f64,
    /// The receiver CPU's steal time in /proc/stat / its total.
    pub steal_proc: f64,
    /// competitor_lost - (softirq_probe + reader + steal_proc).
    pub residual: f64,
}

/// A whole sweep (`steer5g probe sweep --json`).
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// The transport.
    pub proto: Proto,
    /// UDP payload or TCP message octets.
    pub payload: usize,
    /// Step length, s.
    pub step_s: f64,
    /// Where the receiver's softirq was steered.
    pub steering: topo::Steering,
    /// The generator's and the receiver's CPUs.
    pub gen_cpu: usize,
    /// The receiver's CPU.
    pub rx_cpu: usize,
    /// Every step, condition by condition.
    pub steps: Vec<Step>,
    /// The highest rate the generator offered, datagrams per second.
    pub max_offered_pps: f64,
    /// Per condition, the lowest offered rate at which anything was dropped.
    pub drops_from_pps: BTreeMap<String, f64>,
    /// The competitor's work per second alone on the receiver's CPU (the cross-check's
    /// baseline; null without the loaded condition).
    pub competitor_baseline: Option<f64>,
    /// Whether SIGINT or SIGTERM ended the sweep before its last step.
    pub interrupted: bool,
    /// What the probe's method is (the same as `steer5g probe`'s).
    pub notes: Vec<String>,
}

/// Runs the sweep; `progress(done, total)` after each step.
pub fn run(settings: &Settings, progress: &dyn Fn(usize, usize)) -> Result<SweepReport, Error> {
    run_until(settings, progress, &AtomicBool::new(false))
}

/// As `run`, ending before the next step once `stop` is set (SIGINT): the report then
/// holds the steps done and says it was interrupted, and the topology is removed as after
/// a whole sweep.
pub fn run_until(
    settings: &Settings,
    progress: &dyn Fn(usize, usize),
    stop: &AtomicBool,
) -> Result<SweepReport, Error> {
    if settings.rates.is_empty() || settings.conditions.is_empty() {
        return Err(Error::Filter(
            "a sweep needs a rate and a condition".to_owned(),
        ));
    }
    let topo = topo::Topology::create_steered(&settings.tag, settings.rx_cpu, settings.steering)?;
    let filter = topo.receiver_filter()?;
    let probe = Probe::attach(filter)?;
    let names = crate::drop_reason_names();
    let sink = traffic::Sink::start(
        topo.rx_ns_path(),
        settings.rx_cpu,
        topo.rx_addr,
        settings.proto,
        settings.payload,
    )?;
    let total = settings.rates.len() * settings.conditions.len();
    let baseline = settings
        .conditions
        .contains(&Condition::Loaded)
        .then(|| traffic::Competitor::baseline(settings.rx_cpu, Duration::from_secs(1)));
    let mut steps = Vec::with_capacity(total);
    let mut flow = 0u32;
    'conditions: for &condition in &settings.conditions {
        let competitor =
            (condition == Condition::Loaded).then(|| traffic::Competitor::start(settings.rx_cpu));
        for &rate in &settings.rates {
            if stop.load(Ordering::Relaxed) {
                break 'conditions;
            }
            flow += 1;
            let before = Reading::now(probe.snapshot()?);
            let read_before = sink.received();
            let misses0 = crate::RunStats::read().misses;
            let share0 = Shares::read(competitor.as_ref(), sink.cpu_ns(), settings.rx_cpu);
            let sent = topo.send(
                settings.proto,
                settings.gen_cpu,
                settings.payload,
                rate.pps(),
                settings.step,
                settings.max_packets,
                flow,
            )?;
            // The shares cover the sending only, not the drain after it.
            let share1 = Shares::read(competitor.as_ref(), sink.cpu_ns(), settings.rx_cpu);
            let dropped_before = before.counters.stage("kfree_skb").map_or(0, |s| s.count);
            // TCP retransmits what was dropped: only a read accounts for a message.
            let dropped_before = match settings.proto {
                Proto::Udp => Some(dropped_before),
                Proto::Tcp => None,
            };
            let read_after = settle(&probe, &sink, dropped_before, read_before, sent.sent)?;
            let after = Reading::now(probe.snapshot()?);
            let missed = crate::RunStats::read().misses.saturating_sub(misses0);
            let r = report::build(&before, &after, filter, &names);
            let mut st = step(
                condition,
                rate,
                settings,
                sent,
                read_after.saturating_sub(read_before),
                &r,
            );
            st.cpu_taken = baseline.and_then(|b| share1.taken(&share0, b, &r));
            st.missed_events = missed;
            steps.push(st);
            progress(steps.len(), total);
        }
        drop(competitor);
    }
    drop(sink);
    drop(probe);
    drop(topo);
    let interrupted = steps.len() < total;
    let max_offered_pps = steps.iter().map(|s| s.offered_pps).fold(0.0, f64::max);
    let mut drops_from_pps = BTreeMap::new();
    for c in &settings.conditions {
        let first = steps
            .iter()
            .filter(|s| s.condition == *c && s.dropped.values().sum::<u64>() > 0)
            .map(|s| s.offered_pps)
            .fold(f64::INFINITY, f64::min);
        if first.is_finite() {
            drops_from_pps.insert(condition_name(*c).to_owned(), first);
        }
    }
    Ok(SweepReport {
        proto: settings.proto,
        payload: settings.payload,
        step_s: settings.step.as_secs_f64(),
        steering: settings.steering,
        gen_cpu: settings.gen_cpu,
        rx_cpu: settings.rx_cpu,
        steps,
        max_offered_pps,
        drops_from_pps,
        competitor_baseline: baseline,
        interrupted,
        notes: report::method_notes(),
    })
}

/// Waits until every datagram of the step is read or seen dropped (at most 3 s), and
/// returns the sink's count then; with `dropped_before` `None` (TCP), until every message
/// is read. A quiet spell at the sink is not enough: in overload the
/// softirq can starve the reader for longer than any such spell, and the step's last
/// packets would then be counted in the next one.
fn settle(
    probe: &Probe,
    sink: &traffic::Sink,
    dropped_before: Option<u64>,
    read_before: u64,
    sent: u64,
) -> Result<u64, Error> {
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        // Every drop of a matching packet counts the kfree_skb stage once.
        let dropped = match dropped_before {
            Some(d) => probe.count("kfree_skb")?.saturating_sub(d),
            None => 0,
        };
        let read = sink.received();
        if read.saturating_sub(read_before) + dropped >= sent
            || std::time::Instant::now() >= deadline
        {
            return Ok(read);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `idle` or `loaded`.
pub fn condition_name(c: Condition) -> &'static str {
    match c {
        Condition::Idle => "idle",
        Condition::Loaded => "loaded",
    }
}

fn step(
    condition: Condition,
    rate: Rate,
    settings: &Settings,
    sent: traffic::Sent,
    delivered: u64,
    r: &report::Report,
) -> Step {
    let secs = sent.elapsed.as_secs_f64().max(1e-9);
    let offered_pps = sent.sent as f64 / secs;
    let dropped: BTreeMap<String, u64> = r
        .drops
        .iter()
        .map(|d| (d.reason.clone(), d.count))
        .collect();
    let stage = |name: &str| r.stage(name).map_or(0, |s| s.count);
    let time = |name: &str| r.stage(name).map_or(0, |s| s.time_ns);
    let kfreed: u64 = r.drops.iter().map(|d| d.count).sum();
    let received = stage("netif_receive_skb");
    let softirq = time("softirq_net_rx");
    Step {
        condition,
        target_pps: rate.pps(),
        offered_pps,
        offered_mbps: offered_pps
            * ((settings.payload.max(crate::tag::LEN) + settings.proto.headers()) * 8) as f64
            / 1e6,
        sent: sent.sent,
        refused: sent.refused,
        delivered,
        delivered_pps: delivered as f64 / secs,
        dropped,
        udp_queue_failures: stage("udp_fail_queue_rcv_skb"),
        unaccounted: match settings.proto {
            Proto::Udp => sent.sent as i64 - delivered as i64 - kfreed as i64,
            Proto::Tcp => sent.sent as i64 - delivered as i64,
        },
        missed_events: 0,
        packets_per_poll: r.napi.packets_per_poll,
        poll_ns_per_packet: r.napi.poll_ns_per_packet,
        softirq_ns_per_packet: if received > 0 {
            softirq as f64 / received as f64
        } else {
            0.0
        },
        softirq_thread_share: if softirq > 0 {
            time("softirq_net_rx_thread") as f64 / softirq as f64
        } else {
            0.0
        },
        cpu_taken: None,
        stages: r.stages.clone(),
    }
}

/// The cross-check's readings at one instant: the competitor's work, the receiving
/// application's CPU time, and the receiver CPU's /proc/stat times.
#[derive(Debug, Clone, Copy)]
pub struct Shares {
    at: std::time::Instant,
    competitor: Option<u64>,
    reader_ns: u64,
    cpu: Option<crate::procfs::CpuTimes>,
}

impl Shares {
    /// Reads them now; `reader_ns` is the receiving application's CPU time so far.
    pub fn read(c: Option<&traffic::Competitor>, reader_ns: u64, cpu: usize) -> Shares {
        Shares {
            at: std::time::Instant::now(),
            competitor: c.map(traffic::Competitor::rounds),
            reader_ns,
            cpu: crate::procfs::cpu_times_of(cpu),
        }
    }

    /// The receiving application's CPU time at this reading, ns.
    pub fn reader_ns(&self) -> u64 {
        self.reader_ns
    }

    /// What changed since `before`, as shares of the receiver's CPU; `None` without a
    /// competitor in both readings.
    pub fn taken(&self, before: &Shares, baseline: f64, r: &report::Report) -> Option<CpuTaken> {
        let secs = self.at.duration_since(before.at).as_secs_f64().max(1e-9);
        let rate = self.competitor?.saturating_sub(before.competitor?) as f64 / secs;
        let (a, b) = (before.cpu?, self.cpu?);
        let total = b.total.saturating_sub(a.total).max(1) as f64;
        let softirq_ns = r.stage("softirq_net_rx").map_or(0, |s| s.time_ns);
        let softirq_probe = softirq_ns as f64 / 1e9 / secs;
        let reader = self.reader_ns.saturating_sub(before.reader_ns) as f64 / 1e9 / secs;
        let steal_proc = b.steal.saturating_sub(a.steal) as f64 / total;
        let competitor_lost = (1.0 - rate / baseline.max(1e-9)).max(0.0);
        Some(CpuTaken {
            competitor_lost,
            softirq_probe,
            softirq_proc: b.softirq.saturating_sub(a.softirq) as f64 / total,
            reader,
            steal_proc,
            residual: competitor_lost - (softirq_probe + reader + steal_proc),
        })
    }
}

impl SweepReport {
    /// The human table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "offered-load sweep: {} {} octets, generator CPU {}, receiver CPU {} (steering {}), {:.1} s steps",
            self.proto.name(),
            self.payload, self.gen_cpu, self.rx_cpu, self.steering.name(), self.step_s
        );
        let _ = writeln!(
            out,
            "{:<7} {:>10} {:>9} {:>10} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9}",
            "cond",
            "offered/s",
            "Mbit/s",
            "read/s",
            "dropped",
            "pkt/poll",
            "poll ns/p",
            "sirq ns/p",
            "rcv ns",
            "read p50"
        );
        for s in &self.steps {
            let mean = |n: &str| {
                s.stages
                    .iter()
                    .find(|st| st.name == n)
                    .map_or(0.0, |st| st.mean_ns)
            };
            let p50 = s
                .stages
                .iter()
                .find(|st| st.name == "read_by_sequence")
                .map_or(0, |st| st.p50_ns);
            let _ = writeln!(
                out,
                "{:<7} {:>10.0} {:>9.1} {:>10.0} {:>8} {:>8.2} {:>9.0} {:>9.0} {:>9.0} {:>9}",
                condition_name(s.condition),
                s.offered_pps,
                s.offered_mbps,
                s.delivered_pps,
                s.dropped.values().sum::<u64>(),
                s.packets_per_poll,
                s.poll_ns_per_packet,
                s.softirq_ns_per_packet,
                mean("netif_receive_skb"),
                p50
            );
        }
        let taken: Vec<&Step> = self
            .steps
            .iter()
            .filter(|s| s.cpu_taken.is_some())
            .collect();
        if !taken.is_empty() {
            let _ = writeln!(
                out,
                "receiver CPU taken from a pinned CPU-bound task (loaded), three ways:\n\
                 {:>10} {:>10} {:>11} {:>11} {:>8} {:>8} {:>9}",
                "offered/s", "lost", "sirq probe", "sirq /proc", "reader", "steal", "residual"
            );
            for s in taken {
                if let Some(t) = &s.cpu_taken {
                    let _ = writeln!(
                        out,
                        "{:>10.0} {:>9.1}% {:>10.1}% {:>10.1}% {:>7.1}% {:>7.1}% {:>8.1}%",
                        s.offered_pps,
                        t.competitor_lost * 100.0,
                        t.softirq_probe * 100.0,
                        t.softirq_proc * 100.0,
                        t.reader * 100.0,
                        t.steal_proc * 100.0,
                        t.residual * 100.0
                    );
                }
            }
        }
        if self.interrupted {
            let _ = writeln!(out, "interrupted: the steps done so far");
        }
        let _ = writeln!(
            out,
            "highest offered rate: {:.0} datagrams/s",
            self.max_offered_pps
        );
        for (c, pps) in &self.drops_from_pps {
            let _ = writeln!(out, "drops from {pps:.0} datagrams/s ({c})");
        }
        out
    }

    /// `sweep.csv`: one row per step.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "condition,target_pps,offered_pps,offered_mbps,sent,refused,delivered,delivered_pps,\
             dropped,unaccounted,packets_per_poll,poll_ns_per_packet,softirq_ns_per_packet,\
             softirq_thread_share,netif_rx_ns,netif_receive_skb_ns,sched_wakeup_ns,\
             sys_recvfrom_ns,read_by_sequence_p50_ns,read_by_sequence_p99_ns\n",
        );
        for s in &self.steps {
            let st = |n: &str| s.stages.iter().find(|x| x.name == n);
            let mean = |n: &str| st(n).map_or(0.0, |x| x.mean_ns);
            let _ = writeln!(
                out,
                "{},{},{:.1},{:.3},{},{},{},{:.1},{},{},{:.3},{:.1},{:.1},{:.3},{:.1},{:.1},{:.1},{:.1},{},{}",
                condition_name(s.condition),
                s.target_pps.map_or_else(|| "max".to_owned(), |p| p.to_string()),
                s.offered_pps,
                s.offered_mbps,
                s.sent,
                s.refused,
                s.delivered,
                s.delivered_pps,
                s.dropped.values().sum::<u64>(),
                s.unaccounted,
                s.packets_per_poll,
                s.poll_ns_per_packet,
                s.softirq_ns_per_packet,
                s.softirq_thread_share,
                mean("netif_rx"),
                mean("netif_receive_skb"),
                mean("sched_wakeup"),
                mean("sys_recvfrom"),
                st("read_by_sequence").map_or(0, |x| x.p50_ns),
                st("read_by_sequence").map_or(0, |x| x.p99_ns),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse() {
        assert_eq!(Rate::parse("10k"), Ok(Rate::Pps(10_000)));
        assert_eq!(Rate::parse("1.5M"), Ok(Rate::Pps(1_500_000)));
        assert_eq!(Rate::parse("250"), Ok(Rate::Pps(250)));
        assert_eq!(Rate::parse("max"), Ok(Rate::Max));
        assert!(Rate::parse("0").is_err());
        assert!(Rate::parse("fast").is_err());
        assert!(Rate::parse("-5k").is_err());
    }
}
