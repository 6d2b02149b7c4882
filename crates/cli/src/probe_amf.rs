//! `steer5g probe sweep --target amf`: reference 004's offered-load sweep pointed at our AMF.
//! The core (`steer5g core`, one worker) runs in the sweep's receiver namespace on the
//! receiver's CPU, the RAN emulator (`steer5g ran`) in the generator namespace on the
//! generator's CPU, and they speak NGAP over SCTP over UDP (RFC 6951) across the veth pair.
//! Each step offers one rate of UE runs (registration, then deregistration) for the step's
//! length, with the probe on the receiver's veth and the core's PID, so that every packet
//! counted is one the gNB sent to the AMF: its stages, its NAPI batching, its drops, the
//! wake-ups of the core, and the CPU of both processes per procedure.
//!
//! The offered load is in UE runs per second (`max`: a closed loop of 64 UEs in flight),
//! not in datagrams: an AMF's load is procedures, and how many packets a procedure takes is
//! itself a result (SCTP bundles chunks under load).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use probe::report::{self, StageReport};
use probe::sweep::topo::{Steering, Topology};
use probe::sweep::traffic::Competitor;
use probe::sweep::{condition_name, Condition, CpuTaken, Rate, Shares};
use probe::{Filter, Probe, Reading};
use serde::Serialize;
use serde_json::Value;

use crate::exit::CliError;

/// UEs in flight for the `max` step (a closed loop: as fast as the AMF answers).
const MAX_IN_FLIGHT: u32 = 64;
/// Subscribers provisioned for the sweep; runs cycle through them.
const SUBSCRIBERS: u32 = 4000;
/// How long the core may take to listen.
const CORE_START: Duration = Duration::from_secs(15);
/// Longest a step's emulator may run past the step before it is interrupted.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);
/// What every figure ran over.
const INTERFACE: &str = "veth pair between two network namespaces (generator, receiver)";

/// What to sweep.
#[derive(Debug, Clone)]
pub(crate) struct AmfSettings {
    /// UE runs per second, one step each.
    pub(crate) rates: Vec<Rate>,
    /// Length of a step.
    pub(crate) step: Duration,
    /// The conditions, each a full sweep.
    pub(crate) conditions: Vec<Condition>,
    /// The RAN emulator's CPU.
    pub(crate) gen_cpu: usize,
    /// The core's CPU (and its softirq, by RPS).
    pub(crate) rx_cpu: usize,
    /// Where the receiver's softirq runs.
    pub(crate) steering: Steering,
    /// Prefix of the namespace and interface names.
    pub(crate) tag: String,
    /// Where the core's and the emulator's logs go.
    pub(crate) out: PathBuf,
}

/// One step.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AmfStep {
    condition: Condition,
    /// UE runs per second asked for; null for `max`.
    target_runs_per_s: Option<u64>,
    /// UE runs started per second.
    offered_runs_per_s: f64,
    /// Procedures (registrations and deregistrations) completed and failed.
    procedures_completed: u64,
    procedures_failed: u64,
    procedures_per_s: f64,
    /// Runs the open loop started late (the emulator's in-flight bound was reached).
    late_starts: u64,
    /// New UEs the gNB did not start because the AMF asked it to shed load (NGAP
    /// OVERLOAD START), and registrations the AMF rejected with 5GMM #22 (congestion) and
    /// T3346: the AMF's own overload control, which answers overload before the kernel drops.
    shed: u64,
    congestion_rejects: u64,
    /// Seconds the gNB was in overload.
    overload_s: f64,
    /// Seconds from the first start to the last answer (the offering window, then the
    /// drain: runs backed off by T3346 retry after it).
    elapsed_s: f64,
    registration_p50_us: f64,
    registration_p99_us: f64,
    /// SCTP packets the gNB's socket wrote, and per second: the offered packet rate.
    offered_packets: u64,
    offered_pps: f64,
    /// SCTP retransmissions by the gNB: packets the AMF did not acknowledge in time.
    retransmissions: u64,
    /// Packets the receiver's stack took in from the veth (`netif_receive_skb`).
    received: u64,
    /// Of those, per completed procedure.
    packets_per_procedure: f64,
    /// Drops in the receiver's namespace, by kfree_skb reason.
    dropped: BTreeMap<String, u64>,
    /// Probe events the kernel skipped (recursion): counts are short by at most this.
    missed_events: u64,
    packets_per_poll: f64,
    poll_ns_per_packet: f64,
    softirq_ns_per_packet: f64,
    softirq_ns_per_procedure: f64,
    /// Share of the NET_RX softirq time that ran in ksoftirqd.
    softirq_thread_share: f64,
    /// The tasks the NET_RX softirq ran inside (borrowed) or as (ksoftirqd), most time
    /// first: where the receive cost is charged.
    softirq_by_task: Vec<report::TaskReport>,
    /// Wake-ups of the core's threads per procedure.
    wakeups_per_procedure: f64,
    /// The core's CPU (all its threads, user and system) per procedure.
    amf_cpu_us_per_procedure: f64,
    /// The emulator's CPU per procedure, as it reports it.
    generator_cpu_us_per_procedure: f64,
    /// Under `loaded`: what took the receiver's CPU from the competitor.
    cpu_taken: Option<CpuTaken>,
    stages: Vec<StageReport>,
}

/// The whole sweep (`--json`, amf-sweep.json).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AmfSweepReport {
    target: &'static str,
    transport: &'static str,
    procedure: &'static str,
    suci: &'static str,
    interface: &'static str,
    step_s: f64,
    steering: Steering,
    gen_cpu: usize,
    rx_cpu: usize,
    steps: Vec<AmfStep>,
    /// The highest rate of UE runs the emulator started.
    max_offered_runs_per_s: f64,
    /// Per condition, the lowest offered rate at which a packet was dropped, a procedure
    /// failed, the gNB retransmitted, or the AMF shed or rejected load.
    losses_from_runs_per_s: BTreeMap<String, f64>,
    competitor_baseline: Option<f64>,
    /// Whether SIGINT or SIGTERM ended the sweep before its last step.
    interrupted: bool,
    notes: Vec<String>,
}

/// The core under test: killed on drop if a step's error leaves it running.
struct Core {
    child: Child,
    pid: u32,
}

impl Core {
    fn start(
        exe: &Path,
        topo: &Topology,
        cpu: usize,
        data: &Path,
        log: &Path,
    ) -> Result<Core, CliError> {
        let log_file = File::create(log)
            .map_err(|e| CliError::Failed(format!("cannot create {}: {e}", log.display())))?;
        // `ip netns exec` and `taskset` both exec: the child's PID is the core's own.
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &topo.rx_ns,
                "taskset",
                "-c",
                &cpu.to_string(),
            ])
            .arg(exe)
            .args([
                "core",
                "--workers",
                "1",
                "--sbi",
                "inproc",
                "--transport",
                "udp",
            ])
            .args(["--n2-addr", &topo.rx_addr.to_string(), "--log", "info"])
            .args(["--no-metrics", "--no-provisioning", "--data-dir"])
            .arg(data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| CliError::Failed(format!("cannot start the core: {e}")))?;
        let mut core = Core {
            pid: child.id(),
            child,
        };
        let deadline = Instant::now() + CORE_START;
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if text.contains("N2 listening") {
                return Ok(core);
            }
            let exited = core.child.try_wait().ok().flatten().is_some();
            if exited || Instant::now() > deadline {
                return Err(CliError::Failed(format!(
                    "the core did not start listening on N2 (log {}): {}",
                    log.display(),
                    tail(&text)
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its CPU time so far, ns (all threads).
    fn cpu_ns(&self) -> u64 {
        let hz = probe::procfs::ticks_per_second().max(1);
        probe::procfs::process_ticks(self.pid).map_or(0, |t| t * 1_000_000_000 / hz)
    }

    fn stop(mut self) {
        interrupt(self.pid);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Drop kills it.
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn interrupt(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGINT,
        );
    }
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}

/// Provisions the sweep's subscribers into `data` and writes their CSV for the emulator.
fn provision(exe: &Path, dir: &Path) -> Result<(PathBuf, PathBuf), CliError> {
    let data = dir.join("db");
    let csv = dir.join("subscribers.csv");
    for args in [
        vec![
            "subscriber",
            "generate",
            "--count",
            &SUBSCRIBERS.to_string(),
        ],
        vec!["subscriber", "import"],
    ] {
        let out = Command::new(exe)
            .args(&args)
            .arg("--data-dir")
            .arg(&data)
            .arg(&csv)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| CliError::Failed(format!("cannot run steer5g {}: {e}", args[1])))?;
        if !out.status.success() {
            return Err(CliError::Failed(format!(
                "steer5g subscriber {}: {}",
                args[1],
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    Ok((data, csv))
}

/// What the emulator reported for one step.
struct Load {
    runs_started: u64,
    elapsed_s: f64,
    completed: u64,
    failed: u64,
    late_starts: u64,
    packets_sent: u64,
    retransmissions: u64,
    reg_p50_us: f64,
    reg_p99_us: f64,
    generator_cpu_us_per_procedure: f64,
    window_s: f64,
    shed: u64,
    congestion_rejects: u64,
    overload_s: f64,
}

impl Load {
    fn parse(v: &Value) -> Option<Load> {
        let u = |p: &str| v.pointer(p).and_then(Value::as_u64);
        let f = |p: &str| v.pointer(p).and_then(Value::as_f64);
        Some(Load {
            runs_started: u("/runs_started")?,
            elapsed_s: f("/elapsed_s")?,
            completed: u("/procedures_completed")?,
            failed: u("/procedures_failed")?,
            late_starts: u("/late_starts").unwrap_or(0),
            packets_sent: u("/sctp/socket_packets_out")?,
            retransmissions: u("/sctp/retransmissions").unwrap_or(0),
            reg_p50_us: f("/procedures/registration/latency_us/p50").unwrap_or(0.0),
            reg_p99_us: f("/procedures/registration/latency_us/p99").unwrap_or(0.0),
            generator_cpu_us_per_procedure: f("/generator_cpu/us_per_procedure").unwrap_or(0.0),
            window_s: f("/load/duration_s").unwrap_or(0.0),
            shed: u("/overload/shed").unwrap_or(0),
            congestion_rejects: u("/overload/congestion_rejects").unwrap_or(0),
            overload_s: f("/overload/seconds").unwrap_or(0.0),
        })
    }
}

/// Runs the emulator for one step and reads its JSON report.
fn offer(
    exe: &Path,
    topo: &Topology,
    s: &AmfSettings,
    rate: Rate,
    subs: &Path,
    data: &Path,
    log: &Path,
) -> Result<Load, CliError> {
    let log_file = File::options()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| CliError::Failed(format!("cannot open {}: {e}", log.display())))?;
    let secs = format!("{:.3}", s.step.as_secs_f64());
    let mut cmd = Command::new("ip");
    cmd.args([
        "netns",
        "exec",
        &topo.gen_ns,
        "taskset",
        "-c",
        &s.gen_cpu.to_string(),
    ])
    .arg(exe)
    .args(["--json", "ran", "--transport", "udp", "--suci", "null"])
    .args(["--procedure", "register-deregister", "--timeout", "5"])
    .args(["--amf", &topo.rx_addr.to_string()])
    .args([
        "--local-addr",
        &topo.gen_addr.to_string(),
        "--duration",
        &secs,
    ])
    .arg("--subscribers")
    .arg(subs)
    .arg("--data-dir")
    .arg(data);
    match rate {
        Rate::Pps(r) => cmd.args(["--rate", &r.to_string()]),
        Rate::Max => cmd.args(["--ues", &MAX_IN_FLIGHT.to_string()]),
    };
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .map_err(|e| CliError::Failed(format!("cannot start the RAN emulator: {e}")))?;
    // Bounded: the step, then the drain: the procedures' own timeout, and in overload the
    // T3346 back-off of the UEs the AMF rejected with #22, which retry once after it.
    let limit = Instant::now() + s.step + DRAIN_LIMIT;
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text);
            text
        });
        loop {
            if child.try_wait().ok().flatten().is_some() {
                break;
            }
            if Instant::now() > limit {
                // SIGINT: the emulator stops starting and waiting, and still reports.
                interrupt(child.id());
                let hard = Instant::now() + Duration::from_secs(5);
                while child.try_wait().ok().flatten().is_none() && Instant::now() < hard {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        stdout = reader.join().unwrap_or_default();
    }
    let _ = child.wait();
    // It exits 1 when procedures failed; the report still says how many.
    serde_json::from_str::<Value>(stdout.trim())
        .ok()
        .as_ref()
        .and_then(Load::parse)
        .ok_or_else(|| {
            CliError::Failed(format!(
                "the RAN emulator printed no report (log {}): {}",
                log.display(),
                tail(&std::fs::read_to_string(log).unwrap_or_default())
            ))
        })
}

/// Runs the sweep; `progress(done, total)` after each step; ends before the next step once
/// `stop` is set.
pub(crate) fn run(
    s: &AmfSettings,
    progress: &dyn Fn(usize, usize),
    stop: &AtomicBool,
) -> Result<AmfSweepReport, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Failed(format!("cannot find this executable: {e}")))?;
    std::fs::create_dir_all(&s.out)
        .map_err(|e| CliError::Failed(format!("cannot create {}: {e}", s.out.display())))?;
    let work = tempfile::tempdir()
        .map_err(|e| CliError::Failed(format!("cannot make a temporary directory: {e}")))?;
    let (data, subs) = provision(&exe, work.path())?;
    let topo = Topology::create_steered(&s.tag, s.rx_cpu, s.steering).map_err(probe_err)?;
    let core = Core::start(&exe, &topo, s.rx_cpu, &data, &s.out.join("amf-core.log"))?;
    let mut filter = topo.receiver_filter().map_err(probe_err)?;
    filter = Filter {
        pid: core.pid,
        tags: false,
        ..filter
    };
    let probe = Probe::attach(filter).map_err(probe_err)?;
    let names = probe::drop_reason_names();
    let baseline = s
        .conditions
        .contains(&Condition::Loaded)
        .then(|| Competitor::baseline(s.rx_cpu, Duration::from_secs(1)));
    let total = s.rates.len() * s.conditions.len();
    let ran_log = s.out.join("amf-ran.log");
    let mut steps = Vec::with_capacity(total);
    'conditions: for &condition in &s.conditions {
        let competitor = (condition == Condition::Loaded).then(|| Competitor::start(s.rx_cpu));
        for &rate in &s.rates {
            if stop.load(Ordering::Relaxed) {
                break 'conditions;
            }
            let before = Reading::now(probe.snapshot().map_err(probe_err)?);
            let misses0 = probe::RunStats::read().misses;
            let share0 = Shares::read(competitor.as_ref(), core.cpu_ns(), s.rx_cpu);
            let load = offer(&exe, &topo, s, rate, &subs, &data, &ran_log)?;
            let share1 = Shares::read(competitor.as_ref(), core.cpu_ns(), s.rx_cpu);
            // The last acknowledgements and the SHUTDOWN are on the wire as the emulator
            // exits, and a busy receiver CPU may hold them in its backlog: wait until each
            // packet the gNB sent is taken in or seen dropped (at most 2 s).
            settle(&probe, &before, load.packets_sent)?;
            let after = Reading::now(probe.snapshot().map_err(probe_err)?);
            let missed = probe::RunStats::read().misses.saturating_sub(misses0);
            let r = report::build(&before, &after, filter, &names);
            let amf_cpu_ns = share1.reader_ns().saturating_sub(share0.reader_ns());
            let mut st = step(condition, rate, &load, &r, amf_cpu_ns);
            st.cpu_taken = baseline.and_then(|b| share1.taken(&share0, b, &r));
            st.missed_events = missed;
            steps.push(st);
            progress(steps.len(), total);
        }
        drop(competitor);
    }
    drop(probe);
    core.stop();
    drop(topo);
    let interrupted = steps.len() < total;
    let max_offered_runs_per_s = steps
        .iter()
        .map(|st| st.offered_runs_per_s)
        .fold(0.0, f64::max);
    let mut losses_from_runs_per_s = BTreeMap::new();
    for c in &s.conditions {
        let first = steps
            .iter()
            .filter(|st| st.condition == *c && st.lost())
            .map(|st| st.offered_runs_per_s)
            .fold(f64::INFINITY, f64::min);
        if first.is_finite() {
            losses_from_runs_per_s.insert(condition_name(*c).to_owned(), first);
        }
    }
    let mut notes = report::method_notes();
    notes.push(
        "packets are the gNB's to the AMF only: the probe counts what the receiver's veth \
         takes in, not the AMF's answers"
            .to_owned(),
    );
    notes.push(format!(
        "the offered load is UE runs (registration then deregistration, SUCI null scheme) \
         per second; max is a closed loop of {MAX_IN_FLIGHT} UEs in flight"
    ));
    Ok(AmfSweepReport {
        target: "amf",
        transport: "NGAP over SCTP over UDP (RFC 6951)",
        procedure: "register-deregister",
        suci: "null",
        interface: INTERFACE,
        step_s: s.step.as_secs_f64(),
        steering: s.steering,
        gen_cpu: s.gen_cpu,
        rx_cpu: s.rx_cpu,
        steps,
        max_offered_runs_per_s,
        losses_from_runs_per_s,
        competitor_baseline: baseline,
        interrupted,
        notes,
    })
}

fn settle(probe: &Probe, before: &Reading, sent: u64) -> Result<(), CliError> {
    let count0 = |name: &str| before.counters.stage(name).map_or(0, |st| st.count);
    let (received0, dropped0) = (count0("netif_receive_skb"), count0("kfree_skb"));
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let received = probe.count("netif_receive_skb").map_err(probe_err)?;
        let dropped = probe.count("kfree_skb").map_err(probe_err)?;
        let seen = received.saturating_sub(received0) + dropped.saturating_sub(dropped0);
        if seen >= sent || Instant::now() >= deadline {
            // A quiet moment more for the core's own reads of what just arrived.
            std::thread::sleep(Duration::from_millis(20));
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn probe_err(e: probe::Error) -> CliError {
    super::probe_cmd::probe_error(e)
}

fn step(
    condition: Condition,
    rate: Rate,
    load: &Load,
    r: &report::Report,
    amf_cpu_ns: u64,
) -> AmfStep {
    let secs = load.elapsed_s.max(1e-9);
    let stage = |name: &str| r.stage(name).map_or(0, |st| st.count);
    let time = |name: &str| r.stage(name).map_or(0, |st| st.time_ns);
    let per = |v: f64, n: u64| if n > 0 { v / n as f64 } else { 0.0 };
    let received = stage("netif_receive_skb");
    let softirq = time("softirq_net_rx");
    let procs = load.completed;
    AmfStep {
        condition,
        target_runs_per_s: match rate {
            Rate::Pps(p) => Some(p),
            Rate::Max => None,
        },
        // Over the offering window: what was asked of the AMF, shed runs included.
        offered_runs_per_s: (load.runs_started + load.shed) as f64
            / if load.window_s > 0.0 {
                load.window_s.min(secs)
            } else {
                secs
            },
        procedures_completed: load.completed,
        procedures_failed: load.failed,
        procedures_per_s: load.completed as f64 / secs,
        late_starts: load.late_starts,
        shed: load.shed,
        congestion_rejects: load.congestion_rejects,
        overload_s: load.overload_s,
        elapsed_s: load.elapsed_s,
        registration_p50_us: load.reg_p50_us,
        registration_p99_us: load.reg_p99_us,
        offered_packets: load.packets_sent,
        offered_pps: load.packets_sent as f64 / secs,
        retransmissions: load.retransmissions,
        received,
        packets_per_procedure: per(received as f64, procs),
        dropped: r
            .drops
            .iter()
            .map(|d| (d.reason.clone(), d.count))
            .collect(),
        missed_events: 0,
        packets_per_poll: r.napi.packets_per_poll,
        poll_ns_per_packet: r.napi.poll_ns_per_packet,
        softirq_ns_per_packet: per(softirq as f64, received),
        softirq_ns_per_procedure: per(softirq as f64, procs),
        softirq_thread_share: per(time("softirq_net_rx_thread") as f64, softirq),
        softirq_by_task: r.softirq_by_task.iter().take(4).cloned().collect(),
        wakeups_per_procedure: per(stage("sched_wakeup") as f64, procs),
        amf_cpu_us_per_procedure: per(amf_cpu_ns as f64 / 1e3, procs),
        generator_cpu_us_per_procedure: load.generator_cpu_us_per_procedure,
        cpu_taken: None,
        stages: r.stages.clone(),
    }
}

impl AmfStep {
    /// Whether anything was lost or refused in the step: a drop, a failed procedure, a
    /// retransmission, a shed or congestion-rejected registration.
    fn lost(&self) -> bool {
        self.dropped.values().sum::<u64>() > 0
            || self.procedures_failed > 0
            || self.retransmissions > 0
            || self.shed > 0
            || self.congestion_rejects > 0
    }
}

impl AmfSweepReport {
    /// The human table.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "AMF offered-load sweep: {}, {}, over a {}; emulator CPU {}, core CPU {} (steering {}), {:.1} s steps",
            self.transport, self.procedure, self.interface, self.gen_cpu, self.rx_cpu,
            self.steering.name(), self.step_s
        );
        let _ = writeln!(
            out,
            "{:<7} {:>8} {:>9} {:>8} {:>7} {:>7} {:>7} {:>9} {:>8} {:>7} {:>8} {:>9} {:>10} {:>8} {:>9}",
            "cond", "runs/s", "procs/s", "failed", "shed", "#22", "drops", "pkts/s", "pkt/proc", "rtx",
            "pkt/poll", "sirq ns/p", "sirq ns/pr", "wake/pr", "amf us/pr"
        );
        for st in &self.steps {
            let _ = writeln!(
                out,
                "{:<7} {:>8.0} {:>9.0} {:>8} {:>7} {:>7} {:>7} {:>9.0} {:>8.2} {:>7} {:>8.2} {:>9.0} {:>10.0} {:>8.2} {:>9.1}",
                condition_name(st.condition),
                st.offered_runs_per_s,
                st.procedures_per_s,
                st.procedures_failed,
                st.shed,
                st.congestion_rejects,
                st.dropped.values().sum::<u64>(),
                st.offered_pps,
                st.packets_per_procedure,
                st.retransmissions,
                st.packets_per_poll,
                st.softirq_ns_per_packet,
                st.softirq_ns_per_procedure,
                st.wakeups_per_procedure,
                st.amf_cpu_us_per_procedure,
            );
        }
        if self.interrupted {
            let _ = writeln!(out, "interrupted: the steps done so far");
        }
        let _ = writeln!(
            out,
            "highest offered: {:.0} UE runs/s",
            self.max_offered_runs_per_s
        );
        for (c, r) in &self.losses_from_runs_per_s {
            let _ = writeln!(
                out,
                "losses (drops, failures, retransmissions, shed or #22) from {r:.0} runs/s ({c})"
            );
        }
        out
    }

    /// `amf-sweep.csv`: one row per step.
    pub(crate) fn csv(&self) -> String {
        let mut out = String::from(
            "condition,target_runs_per_s,offered_runs_per_s,procedures_per_s,procedures_failed,\
             shed,congestion_rejects,overload_s,elapsed_s,late_starts,registration_p50_us,registration_p99_us,offered_pps,retransmissions,\
             received,packets_per_procedure,dropped,packets_per_poll,poll_ns_per_packet,\
             softirq_ns_per_packet,softirq_ns_per_procedure,softirq_thread_share,\
             wakeups_per_procedure,amf_cpu_us_per_procedure,generator_cpu_us_per_procedure,\
             netif_receive_skb_ns\n",
        );
        for st in &self.steps {
            let rcv = st
                .stages
                .iter()
                .find(|x| x.name == "netif_receive_skb")
                .map_or(0.0, |x| x.mean_ns);
            let _ = writeln!(
                out,
                "{},{},{:.1},{:.1},{},{},{},{:.2},{:.2},{},{:.0},{:.0},{:.1},{},{},{:.3},{},{:.3},{:.1},{:.1},{:.1},{:.3},{:.3},{:.2},{:.2},{:.1}",
                condition_name(st.condition),
                st.target_runs_per_s.map_or_else(|| "max".to_owned(), |p| p.to_string()),
                st.offered_runs_per_s,
                st.procedures_per_s,
                st.procedures_failed,
                st.shed,
                st.congestion_rejects,
                st.overload_s,
                st.elapsed_s,
                st.late_starts,
                st.registration_p50_us,
                st.registration_p99_us,
                st.offered_pps,
                st.retransmissions,
                st.received,
                st.packets_per_procedure,
                st.dropped.values().sum::<u64>(),
                st.packets_per_poll,
                st.poll_ns_per_packet,
                st.softirq_ns_per_packet,
                st.softirq_ns_per_procedure,
                st.softirq_thread_share,
                st.wakeups_per_procedure,
                st.amf_cpu_us_per_procedure,
                st.generator_cpu_us_per_procedure,
                rcv,
            );
        }
        out
    }

    /// amf-sweep-stages.svg (ns per packet and per procedure) and amf-sweep-delivery.svg
    /// (procedures completed, failed, retransmitted and dropped), against offered runs/s.
    pub(crate) fn write_plots(&self, dir: &Path) -> Result<(), String> {
        let mut stages: Vec<probe::sweep::Series> = Vec::new();
        let mut delivery: Vec<probe::sweep::Series> = Vec::new();
        for c in [Condition::Idle, Condition::Loaded] {
            let steps: Vec<&AmfStep> = self.steps.iter().filter(|st| st.condition == c).collect();
            if steps.is_empty() {
                continue;
            }
            let cn = condition_name(c);
            // In x order: the closed-loop `max` step can offer less than an open-loop step
            // that drove the AMF into overload.
            let per = |f: &dyn Fn(&AmfStep) -> f64| -> Vec<(f64, f64)> {
                let mut p: Vec<(f64, f64)> = steps
                    .iter()
                    .map(|st| (st.offered_runs_per_s.max(1.0), f(st)))
                    .collect();
                p.sort_by(|a, b| a.0.total_cmp(&b.0));
                p
            };
            let mean = |st: &AmfStep, n: &str| {
                st.stages
                    .iter()
                    .find(|x| x.name == n)
                    .map_or(0.0, |x| x.mean_ns)
            };
            stages.push((
                format!("netif_receive_skb per packet ({cn})"),
                per(&|st| mean(st, "netif_receive_skb")),
            ));
            stages.push((
                format!("softirq per packet ({cn})"),
                per(&|st| st.softirq_ns_per_packet),
            ));
            stages.push((
                format!("NAPI poll per packet ({cn})"),
                per(&|st| st.poll_ns_per_packet),
            ));
            stages.push((
                format!("softirq per procedure ({cn})"),
                per(&|st| st.softirq_ns_per_procedure),
            ));
            stages.push((
                format!("AMF CPU per procedure ({cn})"),
                per(&|st| st.amf_cpu_us_per_procedure * 1e3),
            ));
            let secs = self.step_s.max(1e-9);
            delivery.push((
                format!("procedures/s ({cn})"),
                per(&|st| st.procedures_per_s),
            ));
            delivery.push((
                format!("packets/s offered ({cn})"),
                per(&|st| st.offered_pps),
            ));
            delivery.push((
                format!("failed/s ({cn})"),
                per(&|st| st.procedures_failed as f64 / secs),
            ));
            delivery.push((format!("shed/s ({cn})"), per(&|st| st.shed as f64 / secs)));
            delivery.push((
                format!("rejected #22/s ({cn})"),
                per(&|st| st.congestion_rejects as f64 / secs),
            ));
            delivery.push((
                format!("retransmitted/s ({cn})"),
                per(&|st| st.retransmissions as f64 / secs),
            ));
            delivery.push((
                format!("dropped/s ({cn})"),
                per(&|st| st.dropped.values().sum::<u64>() as f64 / secs),
            ));
        }
        let x = "offered UE runs/s (log)";
        probe::sweep::chart(
            &dir.join("amf-sweep-stages.svg"),
            "AMF receive cost against offered load (veth)",
            x,
            "ns (log)",
            &stages,
        )?;
        probe::sweep::chart(
            &dir.join("amf-sweep-delivery.svg"),
            "AMF procedures, losses and packets against offered load (veth)",
            x,
            "per second (log)",
            &delivery,
        )
    }
}
