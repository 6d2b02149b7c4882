//! The probe's own cost: the same paced UDP load with the probe detached and attached,
//! round after round, the CPU per packet of the whole machine both ways (/proc/stat), and
//! the kernel's BPF run statistics for the number of events the programs handled and the
//! time inside them.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use super::{topo, traffic};
use crate::{procfs, Error, Probe, RunStats};

/// What to measure.
#[derive(Debug, Clone)]
pub struct OverheadSettings {
    /// Offered datagrams per second (below the onset of drops, so that both ways carry the
    /// same packets).
    pub rate: u64,
    /// UDP payload octets.
    pub payload: usize,
    /// Length of one round.
    pub step: Duration,
    /// Rounds each way, interleaved.
    pub rounds: usize,
    /// The generator's CPU.
    pub gen_cpu: usize,
    /// The receiver's CPU.
    pub rx_cpu: usize,
    /// Prefix of the namespace and interface names.
    pub tag: String,
}

/// One round.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// Whether the probe was attached.
    pub attached: bool,
    /// Datagrams sent per second.
    pub offered_pps: f64,
    /// Datagrams read.
    pub delivered: u64,
    /// Busy CPU of the whole machine over the round, ns (/proc/stat: all but idle, I/O wait
    /// and steal).
    pub cpu_ns: u64,
    /// That per datagram read.
    pub cpu_ns_per_packet: f64,
    /// Program runs in the round (0 detached).
    pub events: u64,
    /// Time inside the programs, ns.
    pub bpf_ns: u64,
}

/// The report (`steer5g probe overhead --json`).
#[derive(Debug, Clone, Serialize)]
pub struct OverheadReport {
    /// Offered rate.
    pub rate: u64,
    /// Payload octets.
    pub payload: usize,
    /// Every round in the order run.
    pub rounds: Vec<Round>,
    /// Median datagrams per second read, detached.
    pub pps_detached: f64,
    /// Median datagrams per second read, attached.
    pub pps_attached: f64,
    /// Median CPU per packet detached, ns.
    pub cpu_ns_per_packet_detached: f64,
    /// Median CPU per packet attached, ns.
    pub cpu_ns_per_packet_attached: f64,
    /// Their difference, ns per packet.
    pub overhead_ns_per_packet: f64,
    /// Program runs per packet (every event on the machine the programs saw, not only the
    /// packet's own).
    pub events_per_packet: f64,
    /// The overhead per event, from the CPU difference: what the tracepoint dispatch and the
    /// program cost together.
    pub overhead_ns_per_event: f64,
    /// Time inside the programs per event, from the kernel's run statistics.
    pub bpf_ns_per_event: f64,
    /// Per program over the attached rounds: runs per packet and ns per run.
    pub programs: Vec<ProgramCost>,
}

/// One program's share of the overhead.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramCost {
    /// Its name (`s5p_...`).
    pub name: String,
    /// Runs per packet read.
    pub runs_per_packet: f64,
    /// Time inside it per run, ns.
    pub ns_per_run: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the rounds: detached, attached, detached, ... (`rounds` each).
pub fn run(s: &OverheadSettings, progress: &dyn Fn(usize, usize)) -> Result<OverheadReport, Error> {
    let topo = topo::Topology::create(&s.tag, s.rx_cpu)?;
    let filter = topo.receiver_filter()?;
    let sink = traffic::Sink::start(
        topo.rx_ns_path(),
        s.rx_cpu,
        topo.rx_addr,
        super::Proto::Udp,
        s.payload,
    )?;
    let tick_ns = 1_000_000_000 / procfs::ticks_per_second();
    let mut rounds = Vec::new();
    let mut per_program: std::collections::BTreeMap<String, RunStats> = Default::default();
    let mut attached_packets = 0u64;
    let total = s.rounds * 2;
    for i in 0..total {
        let attached = i % 2 == 1;
        let probe = if attached {
            Some((Probe::attach(filter)?, RunStats::enable()?))
        } else {
            None
        };
        let progs0 = RunStats::by_program();
        let cpu0 = procfs::cpu_times();
        let read0 = sink.received();
        let sent = topo.send(
            super::Proto::Udp,
            s.gen_cpu,
            s.payload,
            Some(s.rate),
            s.step,
            u64::MAX,
            i as u32 + 1,
        )?;
        let read1 = sink.settle(Duration::from_millis(50), Duration::from_secs(2));
        let cpu1 = procfs::cpu_times();
        // One walk over the loaded programs per reading: the totals are their sum.
        let progs1 = RunStats::by_program();
        let stats = RunStats::total(&progs1).since(RunStats::total(&progs0));
        drop(probe);
        let delivered = read1.saturating_sub(read0);
        if attached {
            attached_packets += delivered;
            for (name, now) in progs1 {
                let then = progs0.get(&name).copied().unwrap_or_default();
                let d = now.since(then);
                let e = per_program.entry(name).or_default();
                e.runs += d.runs;
                e.ns += d.ns;
            }
        }
        let cpu_ns = match (cpu0, cpu1) {
            (Some(a), Some(b)) => b.busy().saturating_sub(a.busy()) * tick_ns,
            _ => 0,
        };
        rounds.push(Round {
            attached,
            offered_pps: sent.sent as f64 / sent.elapsed.as_secs_f64().max(1e-9),
            delivered,
            cpu_ns,
            cpu_ns_per_packet: cpu_ns as f64 / delivered.max(1) as f64,
            events: if attached { stats.runs } else { 0 },
            bpf_ns: if attached { stats.ns } else { 0 },
        });
        progress(i + 1, total);
    }
    drop(sink);
    drop(topo);
    let pick = |a: bool, f: &dyn Fn(&Round) -> f64| {
        median(rounds.iter().filter(|r| r.attached == a).map(f).collect())
    };
    let secs = s.step.as_secs_f64().max(1e-9);
    let detached = pick(false, &|r| r.cpu_ns_per_packet);
    let attached = pick(true, &|r| r.cpu_ns_per_packet);
    let events_per_packet = pick(true, &|r| r.events as f64 / r.delivered.max(1) as f64);
    let bpf_ns_per_event = pick(true, &|r| r.bpf_ns as f64 / r.events.max(1) as f64);
    let overhead = attached - detached;
    Ok(OverheadReport {
        rate: s.rate,
        payload: s.payload,
        pps_detached: pick(false, &|r| r.delivered as f64 / secs),
        pps_attached: pick(true, &|r| r.delivered as f64 / secs),
        cpu_ns_per_packet_detached: detached,
        cpu_ns_per_packet_attached: attached,
        overhead_ns_per_packet: overhead,
        events_per_packet,
        overhead_ns_per_event: if events_per_packet > 0.0 {
            overhead / events_per_packet
        } else {
            0.0
        },
        bpf_ns_per_event,
        programs: per_program
            .into_iter()
            .map(|(name, r)| ProgramCost {
                name,
                runs_per_packet: r.runs as f64 / attached_packets.max(1) as f64,
                ns_per_run: r.ns as f64 / r.runs.max(1) as f64,
            })
            .collect(),
        rounds,
    })
}

impl OverheadReport {
    /// The human table.
    pub fn table(&self) -> String {
        let each_way = self.rounds.len() / 2;
        let mut out = format!(
            "probe overhead: UDP {} octets at {} datagrams/s, {each_way} rounds each way\n",
            self.payload, self.rate
        );
        let _ = writeln!(
            out,
            "{:<10} {:>10} {:>14}",
            "probe", "read/s", "CPU ns/packet"
        );
        let _ = writeln!(
            out,
            "{:<10} {:>10.0} {:>14.0}",
            "detached", self.pps_detached, self.cpu_ns_per_packet_detached
        );
        let _ = writeln!(
            out,
            "{:<10} {:>10.0} {:>14.0}",
            "attached", self.pps_attached, self.cpu_ns_per_packet_attached
        );
        let _ = writeln!(
            out,
            "overhead: {:.0} ns per packet, {:.1} program runs per packet: {:.0} ns per event \
             (CPU difference), {:.0} ns per event inside the programs (BPF run statistics)",
            self.overhead_ns_per_packet,
            self.events_per_packet,
            self.overhead_ns_per_event,
            self.bpf_ns_per_event
        );
        let _ = writeln!(
            out,
            "{:<18} {:>12} {:>10}",
            "program", "runs/packet", "ns/run"
        );
        for p in &self.programs {
            let _ = writeln!(
                out,
                "{:<18} {:>12.2} {:>10.0}",
                p.name, p.runs_per_packet, p.ns_per_run
            );
        }
        out
    }
}
