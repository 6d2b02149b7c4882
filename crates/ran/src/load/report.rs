//! What a load run measured: per-procedure counts and latency histograms (hdrhistogram, in
//! µs), failures by cause, throughput, and the generator's own CPU time per procedure, so a
//! reader can tell whether the generator, not the core, was the bottleneck.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::driver::{FailureCause, Procedure};

/// Highest latency the histograms hold (µs); larger samples are clamped to it.
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Procedures counted.
const N: usize = Procedure::ALL.len();

/// Counters and histograms filled during the run.
#[derive(Debug)]
pub struct Stats {
    hist: [Histogram<u64>; N],
    completed: [u64; N],
    failed: [u64; N],
    causes: BTreeMap<String, u64>,
    /// Runs whose every step succeeded.
    pub runs_ok: u64,
    /// Runs that ended with a failure.
    pub runs_failed: u64,
    /// DEREGISTRATION ACCEPTs not followed by an N2 release in time.
    pub releases_missing: u64,
    /// UE-associated downlink messages the gNBs could not place (unknown UE, malformed).
    pub n2_anomalies: u64,
}

fn histogram() -> Result<Histogram<u64>, hdrhistogram::CreationError> {
    // 3 significant digits over 1 µs .. 1 h: a few hundred kB, fixed.
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
}

impl Stats {
    /// Empty counters.
    pub fn new() -> Result<Self, hdrhistogram::CreationError> {
        Ok(Stats {
            hist: [
                histogram()?,
                histogram()?,
                histogram()?,
                histogram()?,
                histogram()?,
            ],
            completed: [0; N],
            failed: [0; N],
            causes: BTreeMap::new(),
            runs_ok: 0,
            runs_failed: 0,
            releases_missing: 0,
            n2_anomalies: 0,
        })
    }

    /// A procedure completed after `latency`.
    pub fn completed(&mut self, p: Procedure, latency: Duration) {
        let i = p.index();
        self.completed[i] += 1;
        let us = u64::try_from(latency.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_LATENCY_US);
        // In bounds by the clamp, so recording cannot fail.
        let _ = self.hist[i].record(us);
    }

    /// A procedure failed.
    pub fn failed(&mut self, p: Procedure, cause: &FailureCause) {
        self.failed[p.index()] += 1;
        *self
            .causes
            .entry(format!("{}: {}", p.name(), cause.label()))
            .or_default() += 1;
    }

    /// A failure outside any procedure (e.g. NG Setup of a gNB, or runs that never started).
    pub fn other_failure(&mut self, label: String) {
        self.other_failures(label, 1);
    }

    /// `n` failures of one kind outside any procedure.
    pub fn other_failures(&mut self, label: String, n: u64) {
        *self.causes.entry(label).or_default() += n;
    }

    /// Procedures completed, all kinds.
    pub fn total_completed(&self) -> u64 {
        self.completed.iter().sum()
    }

    /// Procedures failed, all kinds.
    pub fn total_failed(&self) -> u64 {
        self.failed.iter().sum()
    }

    /// The report's per-procedure table over `elapsed`.
    pub fn procedures(&self, elapsed: Duration) -> BTreeMap<&'static str, ProcedureReport> {
        Procedure::ALL
            .iter()
            .filter(|p| self.completed[p.index()] + self.failed[p.index()] > 0)
            .map(|&p| {
                let i = p.index();
                (
                    p.name(),
                    ProcedureReport {
                        completed: self.completed[i],
                        failed: self.failed[i],
                        per_second: per_second(self.completed[i], elapsed),
                        latency_us: LatencyUs::from_histogram(&self.hist[i]),
                    },
                )
            })
            .collect()
    }

    /// Failures by cause.
    pub fn causes(&self) -> &BTreeMap<String, u64> {
        &self.causes
    }
}

/// `count` over `elapsed`, 0 for an empty window.
pub fn per_second(count: u64, elapsed: Duration) -> f64 {
    let s = elapsed.as_secs_f64();
    if s > 0.0 {
        count as f64 / s
    } else {
        0.0
    }
}

/// Latency percentiles of one procedure, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencyUs {
    /// 50th percentile.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest sample.
    pub max: u64,
    /// Mean.
    pub mean: f64,
}

impl LatencyUs {
    fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencyUs::default();
        }
        LatencyUs {
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
            mean: h.mean(),
        }
    }
}

/// One procedure in the report.
#[derive(Debug, Clone, Serialize)]
pub struct ProcedureReport {
    /// Procedures completed.
    pub completed: u64,
    /// Procedures failed.
    pub failed: u64,
    /// Completed per second of the measured window.
    pub per_second: f64,
    /// Latency of the completed ones, µs.
    pub latency_us: LatencyUs,
}

/// The generator's own cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct GeneratorCpu {
    /// CPU time of the generator's thread in the measured window, ms.
    pub cpu_ms: f64,
    /// That CPU time per completed procedure, µs (0 when none completed).
    pub us_per_procedure: f64,
    /// CPU time over wall time: near 1.0 means the generator was the bottleneck.
    pub utilisation: f64,
    /// CPU time spent before the window preparing UEs (SUCI concealment), ms.
    pub prepare_cpu_ms: f64,
}

impl GeneratorCpu {
    /// From the CPU time used in a window of `elapsed` that completed `procedures`.
    pub fn new(cpu: Duration, elapsed: Duration, procedures: u64, prepare: Duration) -> Self {
        let cpu_us = cpu.as_secs_f64() * 1e6;
        GeneratorCpu {
            cpu_ms: cpu_us / 1e3,
            us_per_procedure: if procedures > 0 {
                cpu_us / procedures as f64
            } else {
                0.0
            },
            utilisation: if elapsed.is_zero() {
                0.0
            } else {
                cpu.as_secs_f64() / elapsed.as_secs_f64()
            },
            prepare_cpu_ms: prepare.as_secs_f64() * 1e3,
        }
    }
}

/// How load was offered, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct LoadShape {
    /// "closed" or "open".
    pub kind: &'static str,
    /// Closed loop: UEs in flight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
    /// Open loop: starts per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Count limit, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Duration limit, s, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
}

/// A barrier the UEs were held at (PDU session runs).
#[derive(Debug, Clone, Serialize)]
pub struct HoldReport {
    /// `registered`, `sessions_up` or `sessions_released`.
    pub point: &'static str,
    /// When the last UE arrived, s from the start of the measured window.
    pub at_s: f64,
    /// UEs held there.
    pub ues: u64,
    /// PDU sessions up at that moment.
    pub sessions: u64,
}

/// How the run met AMF overload control (TS 23.501 §5.19.5; TS 38.413 §8.7.6, §8.7.7;
/// TS 24.501 §5.3.9).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct OverloadReport {
    /// OVERLOAD STARTs the gNBs received (one per gNB and overload period).
    pub starts: u64,
    /// OVERLOAD STOPs the gNBs received.
    pub stops: u64,
    /// Time in the measured window during which at least one gNB was in overload, s.
    pub seconds: f64,
    /// New UEs their gNB did not start, shedding the share the AMF asked for.
    pub shed: u64,
    /// Registrations rejected with 5GMM #22 and T3346.
    pub congestion_rejects: u64,
    /// Registrations sent again once their T3346 ran out.
    pub retries_after_t3346: u64,
}

/// The report of `steer5g ran --subscribers`.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// Every procedure and run succeeded, and every gNB was set up.
    pub ok: bool,
    /// What each run did (e.g. `register-deregister`, with its sessions).
    pub mode: String,
    /// PDU sessions each UE establishes and releases.
    pub pdu_sessions: u8,
    /// Closed or open loop, and its bound.
    pub load: LoadShape,
    /// The UEs' SUCI protection.
    pub suci: String,
    /// The SCTP transport.
    pub transport: String,
    /// The AMF as reached.
    pub amf: String,
    /// The generator's local address.
    pub local: String,
    /// Subscribers the runs cycled through.
    pub subscribers: usize,
    /// gNB emulators.
    pub gnbs: u32,
    /// gNBs that completed NG Setup.
    pub ng_setup_ok: u32,
    /// gNBs that did not.
    pub ng_setup_failed: u32,
    /// UE runs started.
    pub runs_started: u64,
    /// Runs whose every step succeeded.
    pub runs_ok: u64,
    /// Runs that ended with a failure.
    pub runs_failed: u64,
    /// Runs that a count asked for but that never started (no gNB was up, or the time ran out).
    pub runs_not_started: u64,
    /// Distinct UEs that completed an initial registration / a de-registration.
    pub ues_registered: u64,
    /// UEs that completed a de-registration.
    pub ues_deregistered: u64,
    /// Length of the measured window, s.
    pub elapsed_s: f64,
    /// Procedures completed in the window.
    pub procedures_completed: u64,
    /// Procedures failed in the window.
    pub procedures_failed: u64,
    /// Completed procedures per second.
    pub procedures_per_second: f64,
    /// Per procedure: counts, rate and latency.
    pub procedures: BTreeMap<&'static str, ProcedureReport>,
    /// Failures by cause.
    pub failures: BTreeMap<String, u64>,
    /// Open loop: starts that came later than scheduled.
    pub late_starts: u64,
    /// DEREGISTRATION ACCEPTs not followed by an N2 release in time.
    pub releases_missing: u64,
    /// UE-associated downlink messages the gNBs could not place.
    pub n2_anomalies: u64,
    /// AMF overload: periods, shed starts, #22 rejects and the retries after T3346.
    pub overload: OverloadReport,
    /// The generator's own CPU time.
    pub generator_cpu: GeneratorCpu,
    /// The generator's SCTP endpoint and socket counters.
    pub sctp: SctpCounters,
    /// The gNBs' N3 address in their DL F-TEIDs (PDU session runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gnb_n3: Option<String>,
    /// The barriers of a PDU session run, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub holds: Vec<HoldReport>,
    /// What the user-plane stage reported (when one ran at the sessions-up barrier).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_plane: Option<serde_json::Value>,
    /// Each time the AMF was lost: when, for how long, and the UEs that failed with it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<super::recovery::Outage>,
}

/// The human form on standard output.
pub fn print_human(r: &LoadReport) {
    println!(
        "load: {} over {} gNB(s) ({} set up), {} subscribers, {} loop{}{}, SUCI {}, {} to {} from {}",
        r.mode,
        r.gnbs,
        r.ng_setup_ok,
        r.subscribers,
        r.load.kind,
        r.load
            .concurrency
            .map(|k| format!(" K={k}"))
            .unwrap_or_default(),
        r.load.rate.map(|x| format!(" R={x}/s")).unwrap_or_default(),
        r.suci,
        r.transport,
        r.amf,
        r.local
    );
    println!(
        "runs: {} started, {} ok, {} failed, {} not started; UEs registered {}, deregistered {}",
        r.runs_started,
        r.runs_ok,
        r.runs_failed,
        r.runs_not_started,
        r.ues_registered,
        r.ues_deregistered
    );
    println!(
        "{:<22} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "procedure", "completed", "failed", "per s", "p50 µs", "p90 µs", "p99 µs", "max µs"
    );
    for (name, p) in Procedure::ALL
        .iter()
        .filter_map(|p| r.procedures.get(p.name()).map(|x| (p.name(), x)))
    {
        println!(
            "{:<22} {:>9} {:>7} {:>10.1} {:>9} {:>9} {:>9} {:>9}",
            name,
            p.completed,
            p.failed,
            p.per_second,
            p.latency_us.p50,
            p.latency_us.p90,
            p.latency_us.p99,
            p.latency_us.max
        );
    }
    println!(
        "total: {} procedures in {:.3} s = {:.1}/s; generator CPU {:.1} µs/procedure ({:.0}% of wall time; {:.1} ms preparing SUCIs before the window)",
        r.procedures_completed,
        r.elapsed_s,
        r.procedures_per_second,
        r.generator_cpu.us_per_procedure,
        r.generator_cpu.utilisation * 100.0,
        r.generator_cpu.prepare_cpu_ms
    );
    for h in &r.holds {
        println!(
            "held at {}: {} UEs with {} PDU sessions up, at {:.3} s",
            h.point, h.ues, h.sessions, h.at_s
        );
    }
    if let Some(up) = &r.user_plane {
        // The ran traffic stage brings its own text lines; the demo's stage and others are
        // summarised from their JSON.
        match up.get("summary").and_then(serde_json::Value::as_array) {
            Some(lines) => {
                println!("user plane:");
                for l in lines.iter().filter_map(serde_json::Value::as_str) {
                    println!("  {l}");
                }
            }
            None => {
                for line in user_plane_lines(up) {
                    println!("user plane: {line}");
                }
            }
        }
    }
    if r.late_starts > 0 {
        println!("open loop: {} starts went out late", r.late_starts);
    }
    if r.releases_missing > 0 || r.n2_anomalies > 0 {
        println!(
            "N2: {} releases missing after DEREGISTRATION ACCEPT, {} anomalies",
            r.releases_missing, r.n2_anomalies
        );
    }
    for (i, o) in r.outages.iter().enumerate() {
        let lasted = o
            .duration_s
            .map_or_else(|| "not over at the end".to_owned(), |d| format!("{d:.3} s"));
        println!(
            "outage {}: AMF lost at {:.3} s ({}), {lasted}; {} gNB(s) lost, {} set up again after {} attempts; {} UE(s) failed",
            i + 1,
            o.started_at_s,
            o.cause,
            o.gnbs_lost,
            o.gnbs_recovered,
            o.reconnect_attempts,
            o.ues_failed.len()
        );
        for u in o.ues_failed.iter().take(20) {
            println!("  {} ({}): {}", u.supi, u.procedure, u.cause);
        }
        if o.ues_failed.len() > 20 {
            println!("  ... and {} more", o.ues_failed.len() - 20);
        }
    }
    let o = &r.overload;
    if o.starts > 0 || o.congestion_rejects > 0 {
        println!(
            "AMF overload: {} start(s), {} stop(s), {:.1} s overloaded; {} new UEs shed by their gNB, {} rejected with #22 + T3346, {} registered again after T3346",
            o.starts, o.stops, o.seconds, o.shed, o.congestion_rejects, o.retries_after_t3346
        );
    }
    if !r.failures.is_empty() {
        println!("failures:");
        for (cause, n) in &r.failures {
            println!("  {n:>8}  {cause}");
        }
    }
}

/// The user-plane stage's result in a few lines: one per traffic round (a traffic report
/// has `kind` and `sent`; a stage may hold several under `rounds`), else the reason it was
/// skipped or failed, else the JSON itself without its latency CDF.
pub fn user_plane_lines(v: &serde_json::Value) -> Vec<String> {
    let num = |r: &serde_json::Value, k: &str| r.get(k).and_then(serde_json::Value::as_u64);
    let real = |r: &serde_json::Value, k: &str| {
        r.get(k).and_then(serde_json::Value::as_f64).unwrap_or(0.0)
    };
    let round = |r: &serde_json::Value| -> Option<String> {
        let kind = r.get("kind")?.as_str()?;
        let sent = num(r, "sent")?;
        let mut line = format!(
            "{kind} {} B: {sent} sent, {} back ({:.2} % lost), {:.0} pps, {:.4} Gbit/s inner",
            num(r, "packet_size").unwrap_or(0),
            num(r, "received").unwrap_or(0),
            real(r, "loss_ratio") * 100.0,
            real(r, "achieved_pps"),
            real(r, "inner_gbps"),
        );
        if let Some(l) = r.get("latency").filter(|l| !l.is_null()) {
            line.push_str(&format!(
                "; round trip p50 {} µs, p99 {} µs, max {} µs",
                num(l, "p50_us").unwrap_or(0),
                num(l, "p99_us").unwrap_or(0),
                num(l, "max_us").unwrap_or(0)
            ));
        }
        Some(line)
    };
    if let Some(line) = round(v) {
        return vec![line];
    }
    let mut out = Vec::new();
    if let Some(p) = v.get("path").and_then(|p| p.as_str()) {
        out.push(format!("path {p}"));
    }
    if let Some(rounds) = v.get("rounds").and_then(|r| r.as_array()) {
        out.extend(rounds.iter().filter_map(round));
    }
    for key in ["reason", "error"] {
        if let Some(t) = v.get(key).and_then(|t| t.as_str()) {
            out.push(format!("{key}: {t}"));
        }
    }
    if out.is_empty() {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("cdf");
        }
        out.push(v.to_string());
    }
    out
}

/// SCTP and socket counters of one endpoint.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SctpCounters {
    /// SCTP packets received.
    pub packets_received: u64,
    /// SCTP packets sent.
    pub packets_sent: u64,
    /// Packets dropped for a bad CRC32c.
    pub bad_checksum: u64,
    /// Packets dropped for a wrong verification tag.
    pub bad_vtag: u64,
    /// Packets that did not parse.
    pub malformed: u64,
    /// Out-of-the-blue packets (no association).
    pub out_of_the_blue: u64,
    /// Packets to a port no association uses.
    pub foreign_port: u64,
    /// Chunks of unknown type.
    pub unknown_chunks: u64,
    /// Expired state cookies.
    pub stale_cookies: u64,
    /// State cookies whose MAC did not verify.
    pub forged_cookies: u64,
    /// Retransmitted DATA chunks (timeouts).
    pub retransmissions: u64,
    /// Fast retransmits.
    pub fast_retransmits: u64,
    /// Associations established.
    pub associations_established: u64,
    /// Associations closed.
    pub associations_closed: u64,
    /// ABORTs sent.
    pub aborts_sent: u64,
    /// ABORTs received.
    pub aborts_received: u64,
    /// Duplicate TSNs received.
    pub duplicate_tsns: u64,
    /// Times the socket woke the loop.
    pub socket_wakeups: u64,
    /// Sends the socket refused.
    pub socket_send_errors: u64,
    /// Packets the socket wrote: `packets_sent` less the refused ones and those built after
    /// the socket's last flush.
    pub socket_packets_out: u64,
}

impl SctpCounters {
    /// The counters of `s` and of the socket `io`.
    pub fn from_parts(s: &sctp::EndpointStats, io: sctp_io::IoStats) -> Self {
        SctpCounters {
            packets_received: s.packets_received,
            packets_sent: s.packets_sent,
            bad_checksum: s.bad_checksum,
            bad_vtag: s.bad_vtag,
            malformed: s.malformed,
            out_of_the_blue: s.out_of_the_blue,
            foreign_port: s.foreign_port,
            unknown_chunks: s.unknown_chunks,
            stale_cookies: s.stale_cookies,
            forged_cookies: s.forged_cookies,
            retransmissions: s.retransmissions,
            fast_retransmits: s.fast_retransmits,
            associations_established: s.associations_established,
            associations_closed: s.associations_closed,
            aborts_sent: s.aborts_sent,
            aborts_received: s.aborts_received,
            duplicate_tsns: s.duplicate_tsns,
            socket_wakeups: io.wakeups,
            socket_send_errors: io.send_errors,
            socket_packets_out: io.packets_out,
        }
    }

    /// Adds `o` to these counters.
    pub fn add(&mut self, o: &SctpCounters) {
        self.packets_received += o.packets_received;
        self.packets_sent += o.packets_sent;
        self.bad_checksum += o.bad_checksum;
        self.bad_vtag += o.bad_vtag;
        self.malformed += o.malformed;
        self.out_of_the_blue += o.out_of_the_blue;
        self.foreign_port += o.foreign_port;
        self.unknown_chunks += o.unknown_chunks;
        self.stale_cookies += o.stale_cookies;
        self.forged_cookies += o.forged_cookies;
        self.retransmissions += o.retransmissions;
        self.fast_retransmits += o.fast_retransmits;
        self.associations_established += o.associations_established;
        self.associations_closed += o.associations_closed;
        self.aborts_sent += o.aborts_sent;
        self.aborts_received += o.aborts_received;
        self.duplicate_tsns += o.duplicate_tsns;
        self.socket_wakeups += o.socket_wakeups;
        self.socket_send_errors += o.socket_send_errors;
        self.socket_packets_out += o.socket_packets_out;
    }
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Latency {
    /// 50th percentile.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest sample.
    pub max: f64,
}

impl Latency {
    /// Nearest-rank percentiles of `samples` (sorted in place).
    pub fn from_durations(samples: &mut [Duration]) -> Self {
        if samples.is_empty() {
            return Latency::default();
        }
        samples.sort_unstable();
        let pick = |q: f64| {
            let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            samples[rank - 1].as_secs_f64() * 1e3
        };
        Latency {
            p50: pick(0.50),
            p90: pick(0.90),
            p99: pick(0.99),
            max: pick(1.0),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_rates() {
        let mut s = Stats::new().unwrap();
        for ms in 1..=100u64 {
            s.completed(Procedure::Registration, Duration::from_millis(ms));
        }
        s.completed(Procedure::Deregistration, Duration::from_micros(250));
        s.failed(Procedure::Deregistration, &FailureCause::Timeout);
        s.failed(Procedure::Deregistration, &FailureCause::Timeout);
        let t = s.procedures(Duration::from_secs(2));
        let reg = &t["registration"];
        assert_eq!(reg.completed, 100);
        assert!((reg.per_second - 50.0).abs() < 1e-9);
        // hdrhistogram keeps 3 significant digits: equal within 0.1 %.
        let near = |a: u64, b: u64| a.abs_diff(b) * 1000 <= b;
        assert!(near(reg.latency_us.p50, 50_000), "{}", reg.latency_us.p50);
        assert!(near(reg.latency_us.p90, 90_000));
        assert!(near(reg.latency_us.p99, 99_000));
        assert!(near(reg.latency_us.max, 100_000));
        let dereg = &t["deregistration"];
        assert_eq!((dereg.completed, dereg.failed), (1, 2));
        assert!(
            !t.contains_key("reregistration"),
            "unused procedures are left out"
        );
        assert_eq!(s.causes()["deregistration: timeout"], 2);
        assert_eq!(s.total_completed(), 101);
        assert_eq!(s.total_failed(), 2);
    }

    #[test]
    fn zero_latency_and_huge_latency_are_clamped() {
        let mut s = Stats::new().unwrap();
        s.completed(Procedure::Registration, Duration::ZERO);
        s.completed(Procedure::Registration, Duration::from_secs(1 << 40));
        let t = s.procedures(Duration::ZERO);
        let r = &t["registration"];
        assert_eq!(r.per_second, 0.0, "an empty window has no rate");
        assert_eq!(r.latency_us.p50, 1);
        assert!(r.latency_us.max >= MAX_LATENCY_US);
    }

    #[test]
    fn generator_cpu_per_procedure() {
        let c = GeneratorCpu::new(
            Duration::from_millis(30),
            Duration::from_millis(120),
            300,
            Duration::from_millis(5),
        );
        assert!((c.us_per_procedure - 100.0).abs() < 1e-9);
        assert!((c.utilisation - 0.25).abs() < 1e-9);
        assert!((c.cpu_ms - 30.0).abs() < 1e-9);
        assert!((c.prepare_cpu_ms - 5.0).abs() < 1e-9);
        let none = GeneratorCpu::new(Duration::from_millis(1), Duration::ZERO, 0, Duration::ZERO);
        assert_eq!((none.us_per_procedure, none.utilisation), (0.0, 0.0));
    }

    #[test]
    fn session_procedures_have_their_rows_and_failures_their_5gsm_cause() {
        let mut s = Stats::new().unwrap();
        for ms in 1..=4u64 {
            s.completed(
                Procedure::SessionEstablishment,
                Duration::from_millis(ms * 10),
            );
        }
        s.completed(Procedure::SessionRelease, Duration::from_millis(5));
        s.failed(
            Procedure::SessionEstablishment,
            &FailureCause::SessionRejected(crate::ue::SessionRefusal::Sm(
                proto::nas::FiveGsmCause::from_value(27),
            )),
        );
        s.failed(Procedure::SessionRelease, &FailureCause::Timeout);
        let t = s.procedures(Duration::from_secs(1));
        let est = &t["session_establishment"];
        assert_eq!((est.completed, est.failed), (4, 1));
        assert!((est.per_second - 4.0).abs() < 1e-9);
        assert!(est.latency_us.p50 >= 19_000 && est.latency_us.p50 <= 20_100);
        assert_eq!(t["session_release"].completed, 1);
        assert_eq!(
            s.causes()
                ["session_establishment: session reject 5GSM cause #27 (Missing or unknown DNN)"],
            1
        );
        assert_eq!(s.causes()["session_release: timeout"], 1);
        assert_eq!(s.total_completed(), 5);
        assert_eq!(s.total_failed(), 2);
        // A hold serialises with its point's name.
        let h = HoldReport {
            point: "sessions_up",
            at_s: 1.5,
            ues: 3,
            sessions: 6,
        };
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["point"], "sessions_up");
        assert_eq!(v["sessions"], 6);
    }

    #[test]
    fn user_plane_lines_summarise_rounds_and_reasons() {
        let v = serde_json::json!({
            "path": "xdp+tun",
            "rounds": [{"kind": "udp", "packet_size": 256, "sent": 10, "received": 9,
                "loss_ratio": 0.1, "achieved_pps": 100.0, "inner_gbps": 0.001,
                "latency": {"p50_us": 5, "p99_us": 9, "max_us": 12}, "cdf": []}],
        });
        let lines = user_plane_lines(&v);
        assert_eq!(lines[0], "path xdp+tun");
        assert!(
            lines[1].starts_with("udp 256 B: 10 sent, 9 back (10.00 % lost)"),
            "{lines:?}"
        );
        assert!(
            lines[1].ends_with("p50 5 µs, p99 9 µs, max 12 µs"),
            "{lines:?}"
        );
        let skipped = serde_json::json!({"skipped": true, "reason": "no root"});
        assert_eq!(user_plane_lines(&skipped), ["reason: no root"]);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = Latency::from_durations(&mut v);
        assert_eq!(l.p50, 50.0);
        assert_eq!(l.p90, 90.0);
        assert_eq!(l.p99, 99.0);
        assert_eq!(l.max, 100.0);
        assert_eq!(Latency::from_durations(&mut []).max, 0.0);
    }
}
