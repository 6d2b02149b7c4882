//! `steer5g bench registration`: registrations per second and core-side CPU time per
//! registration of an in-process core, next to the crypto floor of a registration measured
//! in the same run.
//!
//! Each case gets a fresh data directory with its subscribers, an in-process core with the
//! case's workers, state mode and SBI mode on loopback addresses of its own
//! (127.0.15.x for N2, 127.0.16.x and 127.0.17.x for the AUSF and UDM), a warm-up load run
//! on subscribers of their own, then the measured load run: every UE registers and then
//! de-registers once (closed loop, K in flight, over SCTP with UDP encapsulation).
//!
//! Definitions (also in docs/PERFORMANCE.md):
//! - registrations/s: initial registrations completed in the load generator's measured
//!   window (NG Setup done, first UE started, to last procedure done) over its length;
//! - core CPU per registration: CPU time of the core's threads (`core-w*` workers and the
//!   `core-sqn` persister, from /proc/self/task/*/schedstat) over the whole measured load
//!   run, NG Setup of the gNBs and their SCTP shutdown included, divided by the
//!   registrations completed. Each registration comes with the de-registration of its UE, so
//!   this is the cost of one register + de-register cycle;
//! - crypto floor: see [`super::floor`]; the ratio is core CPU per registration over it;
//! - lock acquisitions, contended acquisitions, loop wake-ups (and those that found nothing)
//!   and hand-offs: the core's live counters (the ones `/metrics` serves) over the measured
//!   load run, the difference of two readings taken around it. Wake-ups per second are over
//!   the same wall time as the core CPU.
//!
//! Files: registration.json (everything), registration.csv (one row per case),
//! registration.svg (bars per case) and registration-sweep.svg (against workers: rate,
//! contended share of lock acquisitions, wake-ups per registration; one line per state,
//! connection kind and SBI mode).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::Serialize;
use steer5g_config::Transport as TransportKind;
use steer5g_core::{Core, SbiMode};

use super::corecase::{
    core_options, counter_delta, next_slot, per, provision_range, ran_config, state_mode,
    threads_cpu, threads_minor_faults, CaseAddrs, CORE_THREAD_PREFIX,
};
use super::floor::{self, CryptoFloor, Primitives};
use super::machine::Machine;
use super::sweep::{
    self, median, shown, state_label, Axis, BenchState, Comparison, Out, Sweep, SweepArgs,
};

use crate::BenchError;
use ran::load::{suci_scheme, LoadConfig, LoadReport, SuciArg};

/// The target the report checks: core CPU per Profile A registration with the in-process
/// SBI at most this many times its crypto floor (what the crypto alone costs).
const TARGET_RATIO: f64 = 3.0;

/// How the core's NFs call each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchSbi {
    /// Function calls between the NFs of a worker (and mesh messages between workers).
    Inproc,
    /// HTTP/2 cleartext over loopback TCP.
    H2c,
}

/// How the core's h2c clients use their connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchConnections {
    /// One long-lived connection per peer (HTTP/2 multiplexing).
    Persistent,
    /// A new connection per request (as some deployments do; only with `--sbi h2c`).
    Short,
}

/// `steer5g bench registration`.
#[derive(Debug, Args)]
#[command(mut_arg("workers", |a| shown(a, Some("1..all"),
    "Core worker threads; a comma-separated list of counts and ranges (`1..4`, `1..all`, \
     `all`: the cores here) sweeps them.")))]
#[command(mut_arg("state", |a| shown(a, Some("sharded"),
    "State mode of the core; a list sweeps them.")))]
#[command(mut_arg("rounds", |a| shown(a, Some("1"),
    "Measure every case this many times, interleaved, and report each case's median round.")
    .value_name("R")))]
#[command(mut_arg("out", |a| shown(a, Some("bench-results"),
    "Directory for registration.json, .csv, .svg and registration-sweep.svg.")))]
pub(crate) struct RegistrationArgs {
    /// SUCI protection of the UEs; a list sweeps them.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "a",
        value_name = "LIST"
    )]
    pub(crate) suci: Vec<SuciArg>,
    /// SBI between the NFs; a list sweeps them.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "inproc",
        value_name = "LIST"
    )]
    pub(crate) sbi: Vec<BenchSbi>,
    /// SBI connections of the core's h2c clients; a list sweeps them (short ones only with
    /// `--sbi h2c`: the in-process SBI has no connections).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "persistent",
        value_name = "LIST"
    )]
    pub(crate) connections: Vec<BenchConnections>,
    /// UEs (subscribers) of each measured run: each registers and de-registers once.
    #[arg(long, default_value_t = 2000, value_name = "N")]
    pub(crate) ues: u64,
    /// UEs in flight (closed loop).
    #[arg(long, default_value_t = 100, value_name = "K")]
    pub(crate) concurrency: usize,
    /// gNBs the UEs are spread over.
    #[arg(long, default_value_t = 4, value_name = "G")]
    pub(crate) gnbs: u32,
    /// UEs of the warm-up run before each measured run (subscribers of their own).
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub(crate) warmup_ues: u64,
    /// Give up on NG Setup, and on each procedure, after this many seconds.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub(crate) timeout: f64,
    /// `--workers`, `--state`, `--rounds`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

/// `steer5g bench registration` as the command line gives it: the sweep's arguments and
/// `--realtime` (kept out of [`RegistrationArgs`] so that code building those arguments
/// does not change).
#[derive(Debug, Args)]
pub struct RegistrationCmd {
    #[command(flatten)]
    pub(crate) args: RegistrationArgs,
    /// Run the core's threads SCHED_FIFO (priority 1) and the load generator above them
    /// (priority 2), as `bench echo --realtime`: ordinary jobs on the machine cannot take
    /// their cores (the papers' dedicated cores). Needs CAP_SYS_NICE (exit 3). Off by
    /// default: it takes the cores from everyone else for the run.
    #[arg(long)]
    pub(crate) realtime: bool,
}

/// One case of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Case {
    pub(crate) workers: u16,
    pub(crate) suci: SuciArg,
    pub(crate) sbi: BenchSbi,
    pub(crate) state: BenchState,
    pub(crate) connections: BenchConnections,
}

impl Case {
    /// `w1 a inproc sharded`, with ` short` for short SBI connections.
    pub(crate) fn label(&self) -> String {
        format!(
            "w{} {} {} {}{}",
            self.workers,
            floor::suci_label(self.suci),
            sbi_label(self.sbi),
            state_label(self.state),
            match self.connections {
                BenchConnections::Persistent => "",
                BenchConnections::Short => " short",
            }
        )
    }
}

fn connections_label(c: BenchConnections) -> &'static str {
    match c {
        BenchConnections::Persistent => "persistent",
        BenchConnections::Short => "short",
    }
}

pub(crate) fn sbi_label(s: BenchSbi) -> &'static str {
    match s {
        BenchSbi::Inproc => "inproc",
        BenchSbi::H2c => "h2c",
    }
}

/// One measured case (the median round's figures).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct CaseReport {
    pub(crate) case: String,
    pub(crate) workers: u16,
    pub(crate) suci: &'static str,
    pub(crate) sbi: &'static str,
    pub(crate) state: &'static str,
    pub(crate) connections: &'static str,
    pub(crate) ok: bool,
    pub(crate) ues: u64,
    pub(crate) registrations: u64,
    pub(crate) deregistrations: u64,
    pub(crate) failed_procedures: u64,
    /// The load generator's measured window, s.
    pub(crate) elapsed_s: f64,
    pub(crate) registrations_per_s: f64,
    pub(crate) deregistrations_per_s: f64,
    pub(crate) registration_p50_us: u64,
    pub(crate) registration_p99_us: u64,
    /// CPU time of the core's threads over the measured load run, s.
    pub(crate) core_cpu_s: f64,
    /// Core CPU per registration (register + de-register cycle), µs.
    pub(crate) core_cpu_us_per_registration: f64,
    /// Minor page faults of the core's threads per registration: memory touched for the
    /// first time, which costs system time and is largest in the first case of a process.
    pub(crate) core_minor_faults_per_registration: f64,
    /// Core CPU over the wall time of the measured load run (at most the worker count, plus
    /// the persister).
    pub(crate) core_utilisation: f64,
    /// The load generator's thread CPU in its window per registration, µs.
    pub(crate) generator_cpu_us_per_registration: f64,
    /// The load generator's CPU over its window's wall time (near 1: it was the bottleneck).
    pub(crate) generator_utilisation: f64,
    /// The crypto floor of this case's SUCI scheme, µs per registration.
    pub(crate) floor_us_per_registration: f64,
    /// Core CPU per registration / crypto floor.
    pub(crate) ratio_to_floor: f64,
    /// Registrations/s of every round, in the order run.
    pub(crate) rounds_registrations_per_s: Vec<f64>,
    /// Core CPU per registration of every round, µs.
    pub(crate) rounds_core_cpu_us_per_registration: Vec<f64>,
    /// Acquisitions of the shared maps' locks in the measured run (0 when sharded).
    pub(crate) lock_acquisitions: u64,
    /// Of those, the ones that found the lock held.
    pub(crate) lock_contended: u64,
    /// Contended over all acquisitions (0 without acquisitions).
    pub(crate) contention_ratio: f64,
    /// Worker loop wake-ups in the measured run.
    pub(crate) wakeups: u64,
    /// Of those, wake-ups that handled no message or event.
    pub(crate) wakeups_empty: u64,
    /// Wake-ups per second of the measured run's wall time.
    pub(crate) wakeups_per_s: f64,
    /// Empty wake-ups over all wake-ups.
    pub(crate) wakeups_empty_share: f64,
    /// Wake-ups per registration.
    pub(crate) wakeups_per_registration: f64,
    /// Messages handed from one worker to another, per registration.
    pub(crate) handoffs_per_registration: f64,
    /// Every live counter over the measured run (queue depth: the deepest seen by its end).
    pub(crate) counters: BTreeMap<&'static str, u64>,
}

/// The settings every case shared.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Settings {
    pub(crate) ues: u64,
    pub(crate) warmup_ues: u64,
    pub(crate) concurrency: usize,
    pub(crate) gnbs: u32,
    pub(crate) rounds: u32,
    pub(crate) procedure: &'static str,
    pub(crate) n2_transport: &'static str,
    pub(crate) nas_algorithms: &'static str,
}

/// Locked against sharded at one worker count and setting: one row of a table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StatePair<T> {
    pub(crate) workers: u16,
    pub(crate) suci: &'static str,
    pub(crate) sbi: &'static str,
    pub(crate) connections: &'static str,
    pub(crate) locked: Option<T>,
    pub(crate) sharded: Option<T>,
}

/// Lock figures of one case.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Contention {
    pub(crate) acquisitions: u64,
    pub(crate) contended: u64,
    pub(crate) ratio: f64,
}

/// Wake-up figures of one case.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Wakeups {
    pub(crate) per_s: f64,
    pub(crate) empty_share: f64,
    pub(crate) per_registration: f64,
}

/// Everything one run measured: registration.json, and `--json`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RegistrationBenchReport {
    pub(crate) scenario: &'static str,
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) settings: Settings,
    /// The core's threads and the load generator ran SCHED_FIFO (`--realtime`).
    pub(crate) realtime: bool,
    /// Every primitive, median over the rounds.
    pub(crate) primitives: Primitives,
    /// `openssl speed ecdhx25519 ecdhp256` on this machine, for reference beside ours.
    pub(crate) openssl_ecdh: Option<crate::floor::OpensslEcdh>,
    /// The floor of each SUCI scheme measured.
    pub(crate) floors: Vec<CryptoFloor>,
    pub(crate) cases: Vec<CaseReport>,
    pub(crate) comparisons: Vec<Comparison>,
    /// The contention table: contended/total lock acquisitions, locked vs sharded.
    pub(crate) contention: Vec<StatePair<Contention>>,
    /// The wake-ups table: per second and the empty share, locked vs sharded.
    pub(crate) wakeups: Vec<StatePair<Wakeups>>,
    pub(crate) target_ratio: f64,
    /// Every in-process Profile A case is within the target ratio (`None` when none ran).
    pub(crate) meets_target: Option<bool>,
    /// Every registration of every case completed.
    pub(crate) ok: bool,
}

/// What one case measured, before the rounds are reduced.
struct Outcome {
    load: LoadReport,
    core_cpu: Duration,
    /// Minor page faults of the core's threads over the measured run.
    core_faults: u64,
    wall: Duration,
    /// The live counters' change over the measured run.
    counters: BTreeMap<&'static str, u64>,
}

/// Runs one case: fresh data directory, core, warm-up, measured run, core stopped.
fn run_case(case: Case, args: &RegistrationArgs, slot: u8) -> Result<Outcome, BenchError> {
    run_case_rt(case, args, CASE_NET, slot, false)
}

/// The first octet pair of the registration cases' loopback addresses (127.0.15-17.x).
const CASE_NET: u8 = 15;

/// One case measured on its own, on loopback addresses 127.0.`net`..`net + 2`.x of its own:
/// for `bench scale`, which sizes each case's UEs to what is left of its budget.
pub(crate) fn measure_case(
    case: Case,
    args: &RegistrationArgs,
    net: u8,
    floor: &CryptoFloor,
) -> Result<CaseReport, BenchError> {
    let o = run_case_rt(case, args, net, next_slot(), false)?;
    Ok(case_report(case, args.ues, &o, floor))
}

/// [`run_case`], with `realtime`: the core's threads are created SCHED_FIFO (they inherit
/// the policy of this thread, which is FIFO at the workers' priority while the core starts),
/// and this thread, which runs the load generator, is raised above them for the load runs.
/// The thread is back to SCHED_OTHER when this returns.
fn run_case_rt(
    case: Case,
    args: &RegistrationArgs,
    net: u8,
    slot: u8,
    realtime: bool,
) -> Result<Outcome, BenchError> {
    use super::lockecho::{RealtimeGuard, REALTIME_CLIENT, REALTIME_WORKER};
    let temp = crate::corecase::temp_data_dir("bench-reg")?;
    let CaseAddrs { cfg, ausf, udm } = CaseAddrs::new(net, slot);
    let total = args.ues.saturating_add(args.warmup_ues);
    let (mut subscribers, key_file) = provision_range(temp.path(), &cfg, total, args.ues)?;
    let (suci, suci_label) = suci_scheme(case.suci, &key_file)?;
    let warm = subscribers.split_off(usize::try_from(args.ues).unwrap_or(usize::MAX));

    let identity = crate::corecase::gnb_identity(&cfg)?;
    let mut opts = core_options(
        temp.path().to_path_buf(),
        case.workers,
        cfg.clone(),
        ausf,
        udm,
    );
    opts.state = state_mode(case.state);
    opts.sbi = match case.sbi {
        BenchSbi::H2c => SbiMode::H2c,
        BenchSbi::Inproc => SbiMode::Inproc,
    };
    opts.short_connections = case.connections == BenchConnections::Short;
    let core = {
        let _rt = realtime
            .then(|| RealtimeGuard::enter(REALTIME_WORKER))
            .transpose()?;
        Core::start(opts)?
    };
    // Every exit below (errors included) drops the guard and stops the core.
    let _rt = match realtime
        .then(|| RealtimeGuard::enter(REALTIME_CLIENT))
        .transpose()
    {
        Ok(g) => g,
        Err(e) => {
            let _ = core.stop();
            return Err(e);
        }
    };

    let plan = |subs: Vec<store::Subscriber>, gnb_id_base: u32| {
        let ues = subs.len() as u64;
        LoadConfig::register_deregister(
            ran_config(
                identity.clone(),
                &cfg,
                TransportKind::Udp,
                args.gnbs,
                gnb_id_base,
                args.timeout,
            ),
            subs,
            (suci.clone(), suci_label.clone()),
            args.concurrency.max(1),
            ues,
            ran::load::SessionPlan::default(),
        )
    };
    let result = (|| {
        if !warm.is_empty() {
            let w = ran::load::run(&plan(warm, 1))?;
            if !w.ok {
                return Err(BenchError::Failed(format!(
                    "{}: warm-up failed: {} procedure(s) failed, {:?}",
                    case.label(),
                    w.procedures_failed,
                    w.failures
                )));
            }
        }
        // The measured gNBs have IDs of their own: the warm-up's associations are gone.
        let p = plan(subscribers, 1 + args.gnbs);
        let live0 = core.live_totals();
        let cpu0 = threads_cpu(CORE_THREAD_PREFIX);
        let faults0 = threads_minor_faults(CORE_THREAD_PREFIX);
        let t0 = Instant::now();
        let load = ran::load::run(&p)?;
        let wall = t0.elapsed();
        let core_cpu = threads_cpu(CORE_THREAD_PREFIX).saturating_sub(cpu0);
        let core_faults = threads_minor_faults(CORE_THREAD_PREFIX).saturating_sub(faults0);
        let counters = counter_delta(&live0, &core.live_totals());
        Ok(Outcome {
            load,
            core_cpu,
            core_faults,
            wall,
            counters,
        })
    })();
    let stopped = core.stop();
    let outcome = result?;
    stopped?;
    Ok(outcome)
}

fn case_report(case: Case, ues: u64, o: &Outcome, floor: &CryptoFloor) -> CaseReport {
    let proc = |name: &str| o.load.procedures.get(name);
    let regs = proc("registration").map_or(0, |p| p.completed);
    let deregs = proc("deregistration").map_or(0, |p| p.completed);
    let elapsed = o.load.elapsed_s;
    let rate = |n: u64| {
        if elapsed > 0.0 {
            n as f64 / elapsed
        } else {
            0.0
        }
    };
    let core_us = per(o.core_cpu.as_secs_f64() * 1e6, regs);
    let ok = o.load.ok && regs == ues && deregs == ues && o.load.ues_registered == ues;
    let count = |k: &str| o.counters.get(k).copied().unwrap_or(0);
    let share = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    let wall = o.wall.as_secs_f64();
    CaseReport {
        case: case.label(),
        workers: case.workers,
        suci: floor::suci_label(case.suci),
        sbi: sbi_label(case.sbi),
        state: state_label(case.state),
        connections: connections_label(case.connections),
        lock_acquisitions: count("lock_acquisitions"),
        lock_contended: count("lock_contended"),
        contention_ratio: share(count("lock_contended"), count("lock_acquisitions")),
        wakeups: count("wakeups"),
        wakeups_empty: count("wakeups_empty"),
        wakeups_per_s: if wall > 0.0 {
            count("wakeups") as f64 / wall
        } else {
            0.0
        },
        wakeups_empty_share: share(count("wakeups_empty"), count("wakeups")),
        wakeups_per_registration: per(count("wakeups") as f64, regs),
        handoffs_per_registration: per(count("handoff_sent") as f64, regs),
        counters: o.counters.clone(),
        ok,
        ues,
        registrations: regs,
        deregistrations: deregs,
        failed_procedures: o.load.procedures_failed,
        elapsed_s: elapsed,
        registrations_per_s: rate(regs),
        deregistrations_per_s: rate(deregs),
        registration_p50_us: proc("registration").map_or(0, |p| p.latency_us.p50),
        registration_p99_us: proc("registration").map_or(0, |p| p.latency_us.p99),
        core_cpu_s: o.core_cpu.as_secs_f64(),
        core_cpu_us_per_registration: core_us,
        core_minor_faults_per_registration: per(o.core_faults as f64, regs),
        core_utilisation: if o.wall.is_zero() {
            0.0
        } else {
            o.core_cpu.as_secs_f64() / o.wall.as_secs_f64()
        },
        generator_cpu_us_per_registration: per(o.load.generator_cpu.cpu_ms * 1e3, regs),
        generator_utilisation: o.load.generator_cpu.utilisation,
        floor_us_per_registration: floor.us_per_registration,
        ratio_to_floor: if floor.us_per_registration > 0.0 {
            core_us / floor.us_per_registration
        } else {
            0.0
        },
        rounds_registrations_per_s: Vec::new(),
        rounds_core_cpu_us_per_registration: Vec::new(),
    }
}

/// The median of a case's rounds is by core CPU per registration: the steadier figure on a
/// shared machine.
impl sweep::Round for CaseReport {
    fn ok(&self) -> bool {
        self.ok
    }

    fn key(&self) -> f64 {
        self.core_cpu_us_per_registration
    }

    fn keep_rounds(&mut self, all: &[Self]) {
        self.rounds_registrations_per_s = all.iter().map(|r| r.registrations_per_s).collect();
        self.rounds_core_cpu_us_per_registration =
            all.iter().map(|r| r.core_cpu_us_per_registration).collect();
    }
}

/// Ratios between cases that differ in exactly one setting.
pub(crate) fn comparisons(cases: &[CaseReport]) -> Vec<Comparison> {
    let short = |c: &CaseReport| {
        if c.connections == "short" {
            " short"
        } else {
            ""
        }
    };
    let mut out = Vec::new();
    for a in cases {
        for b in cases {
            let same_w = a.workers == b.workers;
            let same_sbi = a.sbi == b.sbi;
            let same_state = a.state == b.state;
            // Every comparison is between cases of the same connection kind but the one
            // about connections.
            let same_suci = a.suci == b.suci && a.connections == b.connections;
            let (what, at) = if a.connections == "persistent"
                && b.connections == "short"
                && same_w
                && same_sbi
                && same_state
                && a.suci == b.suci
            {
                (
                    "short/persistent".to_owned(),
                    format!("w{} {} {} {}", a.workers, a.suci, a.sbi, a.state),
                )
            } else if a.state == "locked" && b.state == "sharded" && same_w && same_sbi && same_suci
            {
                (
                    "sharded/locked".to_owned(),
                    format!("w{} {} {}{}", a.workers, a.suci, a.sbi, short(a)),
                )
            } else if a.sbi == "inproc" && b.sbi == "h2c" && same_w && same_state && same_suci {
                (
                    "h2c/inproc".to_owned(),
                    format!("w{} {} {}", a.workers, a.suci, a.state),
                )
            } else if a.workers < b.workers && same_sbi && same_state && same_suci {
                (
                    format!("w{}/w{}", b.workers, a.workers),
                    format!("{} {} {}{}", a.suci, a.sbi, a.state, short(a)),
                )
            } else {
                continue;
            };
            // The ratio is b over a: sharded over locked, h2c over inproc, more workers over
            // fewer.
            out.push(Comparison::of(
                what,
                at,
                (b.registrations_per_s, b.core_cpu_us_per_registration),
                (a.registrations_per_s, a.core_cpu_us_per_registration),
            ));
        }
    }
    out
}

/// Checks the arguments; the matrix of cases in run order.
fn matrix(args: &RegistrationArgs) -> Result<Vec<Case>, BenchError> {
    args.sweep.only(
        "registration",
        &[Axis::Workers, Axis::State, Axis::Rounds, Axis::Out],
    )?;
    let workers = args.sweep.workers(64)?;
    let states = args.sweep.states();
    if workers.is_empty()
        || args.suci.is_empty()
        || args.sbi.is_empty()
        || states.is_empty()
        || args.connections.is_empty()
    {
        return Err(BenchError::Invalid(
            "--workers, --suci, --sbi, --state and --connections need at least one value".into(),
        ));
    }
    if !args.sbi.contains(&BenchSbi::H2c)
        && !args.connections.contains(&BenchConnections::Persistent)
    {
        return Err(BenchError::Invalid(
            "--connections short needs --sbi h2c (the in-process SBI has no connections)".into(),
        ));
    }
    if args.ues == 0 || args.ues > 10_000_000 {
        return Err(BenchError::Invalid("--ues must be 1 to 10000000".into()));
    }
    if args.concurrency == 0 {
        return Err(BenchError::Invalid(
            "--concurrency must be at least 1".into(),
        ));
    }
    let rounds = args.sweep.rounds(100)?;
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        return Err(BenchError::Invalid(
            "--timeout must be a positive number of seconds, at most 3600".into(),
        ));
    }
    let mut cases = Vec::new();
    for &suci in &args.suci {
        for &sbi in &args.sbi {
            for &connections in &args.connections {
                // In-process calls open no connection: a short variant would repeat the
                // persistent one.
                if sbi == BenchSbi::Inproc && connections == BenchConnections::Short {
                    continue;
                }
                for &state in &states {
                    for &workers in &workers {
                        let c = Case {
                            workers,
                            suci,
                            sbi,
                            state,
                            connections,
                        };
                        if !cases.contains(&c) {
                            cases.push(c);
                        }
                    }
                }
            }
        }
    }
    if cases.len() * rounds as usize > 250 {
        return Err(BenchError::Invalid(
            "at most 250 cases times rounds (one loopback address each)".into(),
        ));
    }
    Ok(cases)
}

/// Runs the whole matrix and gathers the report (no output but the progress bars).
pub(crate) fn measure(args: &RegistrationArgs) -> Result<RegistrationBenchReport, BenchError> {
    measure_rt(args, false)
}

/// [`measure`], every case run `--realtime` when `realtime` (see [`RegistrationCmd`]).
pub(crate) fn measure_rt(
    args: &RegistrationArgs,
    realtime: bool,
) -> Result<RegistrationBenchReport, BenchError> {
    if realtime {
        super::lockecho::probe_realtime()?;
    }
    let cases = matrix(args)?;
    let rounds = args.sweep.rounds(100)?;
    let machine = sweep::machine();
    let mut sucis: Vec<SuciArg> = Vec::new();
    for &s in &args.suci {
        if !sucis.contains(&s) {
            sucis.push(s);
        }
    }
    let mut measured_floors: Vec<Primitives> = Vec::new();
    let per_case = Sweep::new(&cases, rounds).run(Case::label, |v| {
        if v.first {
            // The floor of this round, on this thread, between the cases' runs.
            measured_floors.push(floor::measure(&sucis)?);
        }
        let case = *v.case;
        let outcome = if realtime {
            run_case_rt(case, args, CASE_NET, next_slot(), true)
        } else {
            run_case(case, args, next_slot())
        }?;
        let floor = measured_floors
            .last()
            .map(|p| p.floor(case.suci))
            .ok_or_else(|| BenchError::Failed("no crypto floor measured".into()))?;
        let report = case_report(case, args.ues, &outcome, &floor);
        v.say(format!(
            "{:.0} reg/s, {:.0} µs/reg",
            report.registrations_per_s, report.core_cpu_us_per_registration
        ));
        Ok(report)
    })?;
    let primitives = Primitives::median(&measured_floors)
        .ok_or_else(|| BenchError::Failed("no crypto floor measured".into()))?;
    let floors: Vec<CryptoFloor> = sucis.iter().map(|&s| primitives.floor(s)).collect();
    let mut cases: Vec<CaseReport> = per_case.into_iter().filter_map(median).collect();
    // The median round's ratio, against the floor of every round's median primitives.
    for c in &mut cases {
        if let Some(f) = floors.iter().find(|f| f.suci == c.suci) {
            c.floor_us_per_registration = f.us_per_registration;
            c.ratio_to_floor = if f.us_per_registration > 0.0 {
                c.core_cpu_us_per_registration / f.us_per_registration
            } else {
                0.0
            };
        }
    }
    let target: Vec<bool> = cases
        .iter()
        .filter(|c| c.suci == "a" && c.sbi == "inproc")
        .map(|c| c.ratio_to_floor <= TARGET_RATIO)
        .collect();
    let ok = cases.iter().all(|c| c.ok);
    let contention = pairs(&cases, |c| Contention {
        acquisitions: c.lock_acquisitions,
        contended: c.lock_contended,
        ratio: c.contention_ratio,
    });
    let wakeups = pairs(&cases, |c| Wakeups {
        per_s: c.wakeups_per_s,
        empty_share: c.wakeups_empty_share,
        per_registration: c.wakeups_per_registration,
    });
    Ok(RegistrationBenchReport {
        scenario: "registration",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        settings: Settings {
            ues: args.ues,
            warmup_ues: args.warmup_ues,
            concurrency: args.concurrency,
            gnbs: args.gnbs,
            rounds,
            procedure: "register-deregister",
            n2_transport: "sctp over udp (RFC 6951)",
            nas_algorithms: "NIA2 + NEA2",
        },
        realtime,
        comparisons: comparisons(&cases),
        contention,
        wakeups,
        primitives,
        openssl_ecdh: crate::floor::openssl_ecdh(1),
        floors,
        cases,
        target_ratio: TARGET_RATIO,
        meets_target: (!target.is_empty()).then(|| target.iter().all(|&t| t)),
        ok,
    })
}

/// One row per worker count and setting, with the locked and the sharded case side by side.
fn pairs<T>(cases: &[CaseReport], f: impl Fn(&CaseReport) -> T) -> Vec<StatePair<T>> {
    let mut rows: Vec<StatePair<T>> = Vec::new();
    for c in cases {
        let i = match rows.iter().position(|r| {
            r.workers == c.workers
                && r.suci == c.suci
                && r.sbi == c.sbi
                && r.connections == c.connections
        }) {
            Some(i) => i,
            None => {
                rows.push(StatePair {
                    workers: c.workers,
                    suci: c.suci,
                    sbi: c.sbi,
                    connections: c.connections,
                    locked: None,
                    sharded: None,
                });
                rows.len() - 1
            }
        };
        if let Some(r) = rows.get_mut(i) {
            if c.state == "locked" {
                r.locked = Some(f(c));
            } else {
                r.sharded = Some(f(c));
            }
        }
    }
    rows.sort_by(|a, b| {
        (a.suci, a.sbi, a.connections, a.workers).cmp(&(b.suci, b.sbi, b.connections, b.workers))
    });
    rows
}

/// registration.csv: one row per case.
fn csv(r: &RegistrationBenchReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::from(
        "case,workers,suci,sbi,connections,state,ok,registrations_per_s,core_cpu_us_per_registration,\
         ratio_to_floor,registration_p50_us,registration_p99_us,lock_acquisitions,lock_contended,\
         contention_ratio,wakeups,wakeups_empty,wakeups_per_s,wakeups_empty_share,\
         wakeups_per_registration,handoffs_per_registration\n",
    );
    for c in &r.cases {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{:.1},{:.2},{:.3},{},{},{},{},{:.6},{},{},{:.1},{:.4},{:.3},{:.3}",
            c.case,
            c.workers,
            c.suci,
            c.sbi,
            c.connections,
            c.state,
            c.ok,
            c.registrations_per_s,
            c.core_cpu_us_per_registration,
            c.ratio_to_floor,
            c.registration_p50_us,
            c.registration_p99_us,
            c.lock_acquisitions,
            c.lock_contended,
            c.contention_ratio,
            c.wakeups,
            c.wakeups_empty,
            c.wakeups_per_s,
            c.wakeups_empty_share,
            c.wakeups_per_registration,
            c.handoffs_per_registration
        );
    }
    s
}

/// `steer5g bench registration`.
pub(crate) fn run(json: bool, args: &RegistrationArgs) -> Result<(), BenchError> {
    run_rt(json, args, false)
}

/// `steer5g bench registration [--realtime]`.
pub(crate) fn run_cmd(json: bool, cmd: &RegistrationCmd) -> Result<(), BenchError> {
    if cmd.realtime {
        run_rt(json, &cmd.args, true)
    } else {
        run(json, &cmd.args)
    }
}

fn run_rt(json: bool, args: &RegistrationArgs, realtime: bool) -> Result<(), BenchError> {
    // Usage errors first, before the output directory is made.
    matrix(args)?;
    if realtime {
        super::lockecho::probe_realtime()?;
    }
    let mut out = Out::create(&args.sweep.out_or("bench-results"))?;
    let report = if realtime {
        measure_rt(args, true)?
    } else {
        measure(args)?
    };
    out.json("registration.json", &report)?;
    out.text("registration.csv", csv(&report))?;
    out.plot("registration.svg", |p| {
        super::regplot::write_svg(p, &report)
    })?;
    out.plot("registration-sweep.svg", |p| {
        super::regplot::write_sweep_svg(p, &report)
    })?;
    if json {
        crate::print_json(&report)?;
    } else {
        print!("{}", table(&report));
        println!("wrote {}", out.list());
    }
    if report.ok {
        Ok(())
    } else {
        let bad: Vec<&str> = report
            .cases
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.case.as_str())
            .collect();
        Err(BenchError::Failed(format!(
            "registrations failed or stalled in: {}",
            bad.join(", ")
        )))
    }
}

/// The human form of the report.
fn table(r: &RegistrationBenchReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "steer5g bench registration: {} UEs register + deregister per case ({} warm-up), K={}, {} gNBs, {} round(s), {} build",
        r.settings.ues, r.settings.warmup_ues, r.settings.concurrency, r.settings.gnbs, r.settings.rounds, r.machine.build
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "crypto floor (thread CPU per operation):");
    for p in &r.primitives.items {
        let _ = writeln!(s, "  {:<56} {:>9.2} µs", p.name, p.ns_per_op / 1e3);
    }
    if let Some(o) = &r.openssl_ecdh {
        for (name, us) in [("X25519", o.x25519_us), ("P-256", o.p256_us)] {
            if let Some(us) = us {
                let label = format!("openssl speed: {name} ECDH (this machine's reference)");
                let _ = writeln!(s, "  {label:<56} {us:>9.2} µs");
            }
        }
    }
    for f in &r.floors {
        let _ = writeln!(
            s,
            "  floor per registration, SUCI {:<4}                       {:>9.2} µs",
            f.suci, f.us_per_registration
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<24} {:>8} {:>10} {:>9} {:>9} {:>10} {:>7} {:>9} {:>5}",
        "case",
        "reg/s",
        "core µs/reg",
        "floor µs",
        "ratio",
        "gen µs/reg",
        "p50 ms",
        "core util",
        "ok"
    );
    for c in &r.cases {
        let _ = writeln!(
            s,
            "{:<24} {:>8.0} {:>11.1} {:>9.1} {:>8.2}x {:>10.1} {:>7.1} {:>9.2} {:>5}",
            c.case,
            c.registrations_per_s,
            c.core_cpu_us_per_registration,
            c.floor_us_per_registration,
            c.ratio_to_floor,
            c.generator_cpu_us_per_registration,
            c.registration_p50_us as f64 / 1e3,
            c.core_utilisation,
            if c.ok { "yes" } else { "NO" }
        );
    }
    if !r.comparisons.is_empty() {
        let _ = writeln!(s);
        for c in &r.comparisons {
            let _ = writeln!(
                s,
                "{:<16} at {:<24} rate {:>5.2}x  core CPU/reg {:>5.2}x",
                c.what, c.at, c.rate_ratio, c.cpu_ratio
            );
        }
    }
    let setting = |w: u16, suci: &str, sbi: &str, conn: &str| {
        format!(
            "w{w} {suci} {sbi}{}",
            if conn == "short" { " short" } else { "" }
        )
    };
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "lock contention (contended / acquisitions in the measured run):"
    );
    let _ = writeln!(
        s,
        "{:<22} {:>28} {:>28}",
        "workers, setting", "locked", "sharded"
    );
    let cell = |c: &Option<Contention>| match c {
        Some(c) => format!(
            "{}/{} ({:.2}%)",
            c.contended,
            c.acquisitions,
            c.ratio * 100.0
        ),
        None => "-".to_owned(),
    };
    for row in &r.contention {
        let _ = writeln!(
            s,
            "{:<22} {:>28} {:>28}",
            setting(row.workers, row.suci, row.sbi, row.connections),
            cell(&row.locked),
            cell(&row.sharded)
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "worker wake-ups (per second, share that found nothing, per registration):"
    );
    let _ = writeln!(
        s,
        "{:<22} {:>28} {:>28}",
        "workers, setting", "locked", "sharded"
    );
    let cell = |c: &Option<Wakeups>| match c {
        Some(c) => format!(
            "{:.0}/s {:.1}% empty {:.1}/reg",
            c.per_s,
            c.empty_share * 100.0,
            c.per_registration
        ),
        None => "-".to_owned(),
    };
    for row in &r.wakeups {
        let _ = writeln!(
            s,
            "{:<22} {:>28} {:>28}",
            setting(row.workers, row.suci, row.sbi, row.connections),
            cell(&row.locked),
            cell(&row.sharded)
        );
    }
    if let Some(m) = r.meets_target {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "target (inproc, profile A: core CPU/reg <= {}x floor): {}",
            r.target_ratio,
            if m { "met" } else { "NOT met" }
        );
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::sweep::{parse_workers, WorkerList};
    use super::*;

    fn args(ues: u64) -> RegistrationArgs {
        RegistrationArgs {
            connections: vec![BenchConnections::Persistent],
            suci: vec![SuciArg::A],
            sbi: vec![BenchSbi::Inproc],
            ues,
            concurrency: 5,
            gnbs: 1,
            warmup_ues: 5,
            timeout: 20.0,
            sweep: SweepArgs {
                workers: vec![WorkerList(vec![1])],
                state: vec![BenchState::Sharded],
                rounds: Some(1),
                out: Some(std::env::temp_dir()),
                ..SweepArgs::default()
            },
        }
    }

    #[test]
    fn realtime_runs_the_case_and_says_so_or_exits_3() {
        // With CAP_SYS_NICE (root, as in CI) the case runs SCHED_FIFO and the report records
        // it; without, the run is refused as a missing privilege (exit status 3), not failed.
        match measure_rt(&args(10), true) {
            Ok(r) => {
                assert!(r.realtime);
                assert!(r.ok, "{r:?}");
                assert_eq!(r.cases[0].registrations, 10);
            }
            Err(e) => assert!(matches!(e, BenchError::Privilege(_)), "{e}"),
        }
        // This thread is back to the normal policy after the run.
        assert_eq!(
            super::super::lockecho::mmsg::policy().unwrap(),
            libc::SCHED_OTHER
        );
        let r = measure(&args(5)).unwrap();
        assert!(!r.realtime);
    }

    #[test]
    fn a_tiny_case_reports_every_registration_and_a_ratio() {
        let r = measure(&args(20)).unwrap();
        assert!(r.ok, "{r:?}");
        assert_eq!(r.cases.len(), 1);
        let c = &r.cases[0];
        assert_eq!(c.registrations, 20);
        assert_eq!(c.deregistrations, 20);
        assert_eq!(c.failed_procedures, 0);
        assert!(c.registrations_per_s > 0.0);
        assert!(c.core_cpu_s > 0.0, "core threads were not found: {c:?}");
        assert!(c.floor_us_per_registration > 0.0);
        let want = c.core_cpu_us_per_registration / c.floor_us_per_registration;
        assert!((c.ratio_to_floor - want).abs() < 1e-9);
        assert_eq!(r.floors.len(), 1);
        assert_eq!(r.meets_target, Some(c.ratio_to_floor <= TARGET_RATIO));
        assert!(table(&r).contains("w1 a inproc sharded"));
    }

    #[test]
    fn locked_and_sharded_cases_fill_the_contention_and_wakeup_tables() {
        let mut a = args(20);
        a.sweep.workers = vec![WorkerList(vec![2])];
        a.sweep.state = vec![BenchState::Locked, BenchState::Sharded];
        let r = measure(&a).unwrap();
        assert!(r.ok, "{r:?}");
        let locked = r.cases.iter().find(|c| c.state == "locked").unwrap();
        let sharded = r.cases.iter().find(|c| c.state == "sharded").unwrap();
        // Live under load in the locked mode; none at all when sharded.
        assert!(locked.lock_acquisitions > 0, "{locked:?}");
        assert!(locked.lock_contended <= locked.lock_acquisitions);
        assert_eq!(sharded.lock_acquisitions, 0);
        for c in [locked, sharded] {
            assert!(c.wakeups > 0 && c.wakeups_per_s > 0.0, "{c:?}");
            assert!(c.wakeups_empty <= c.wakeups);
            assert_eq!(c.counters["wakeups"], c.wakeups);
            assert!(c.counters["ngap_read"] > 0);
        }
        // Two workers hand messages over in the sharded mode.
        assert!(sharded.handoffs_per_registration > 0.0, "{sharded:?}");
        assert_eq!(r.contention.len(), 1);
        let row = &r.contention[0];
        assert_eq!(row.workers, 2);
        assert_eq!(row.locked.unwrap().acquisitions, locked.lock_acquisitions);
        assert_eq!(row.sharded.unwrap().acquisitions, 0);
        assert_eq!(r.wakeups.len(), 1);
        let t = table(&r);
        assert!(t.contains("lock contention"), "{t}");
        assert!(t.contains("worker wake-ups"), "{t}");
        let csv = csv(&r);
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.lines().all(|l| l.split(',').count() == 21), "{csv}");
        let dir = tempfile::tempdir().unwrap();
        let sweep = dir.path().join("sweep.svg");
        super::super::regplot::write_sweep_svg(&sweep, &r).unwrap();
        let svg = std::fs::read_to_string(&sweep).unwrap();
        assert!(svg.contains("<svg") && svg.contains("sharded"), "{svg}");
    }

    #[test]
    fn bad_matrices_are_usage_errors() {
        let mut a = args(10);
        a.sweep.workers = vec![WorkerList(vec![0])];
        assert!(matches!(matrix(&a), Err(BenchError::Invalid(_))));
        a.sweep.workers = vec![WorkerList(vec![65])];
        assert!(matches!(matrix(&a), Err(BenchError::Invalid(_))));
        // A flag this scenario does not take.
        let mut a = args(10);
        a.sweep.warmup = Some(1.0);
        assert!(matches!(matrix(&a), Err(BenchError::Invalid(_))));
        let mut a = args(10);
        a.connections = vec![BenchConnections::Short];
        assert!(matches!(matrix(&a), Err(BenchError::Invalid(_))));
        a.sbi = vec![BenchSbi::Inproc, BenchSbi::H2c];
        a.connections = vec![BenchConnections::Persistent, BenchConnections::Short];
        // inproc persistent, h2c persistent, h2c short: the inproc short case is dropped.
        assert_eq!(matrix(&a).unwrap().len(), 3);
        assert!(matrix(&a).unwrap()[2].label().ends_with(" short"));
        let mut a = args(0);
        assert!(matches!(matrix(&a), Err(BenchError::Invalid(_))));
        a.ues = 1;
        a.sbi = vec![BenchSbi::Inproc, BenchSbi::H2c, BenchSbi::Inproc];
        a.sweep.workers = vec![parse_workers("1..2").unwrap()];
        assert_eq!(matrix(&a).unwrap().len(), 4);
    }

    #[test]
    fn comparisons_pair_cases_differing_in_one_setting() {
        let case = |w: u16, sbi: BenchSbi, state: BenchState, cpu: f64| {
            let mut c = CaseReport {
                case: String::new(),
                workers: w,
                suci: "a",
                sbi: sbi_label(sbi),
                state: state_label(state),
                ok: true,
                ues: 1,
                registrations: 1,
                deregistrations: 1,
                failed_procedures: 0,
                elapsed_s: 1.0,
                registrations_per_s: 1000.0 / cpu,
                deregistrations_per_s: 0.0,
                registration_p50_us: 0,
                registration_p99_us: 0,
                core_cpu_s: 0.0,
                core_cpu_us_per_registration: cpu,
                core_utilisation: 0.0,
                generator_cpu_us_per_registration: 0.0,
                generator_utilisation: 0.0,
                floor_us_per_registration: 0.0,
                ratio_to_floor: 0.0,
                rounds_registrations_per_s: Vec::new(),
                rounds_core_cpu_us_per_registration: Vec::new(),
                connections: "persistent",
                ..CaseReport::default()
            };
            c.case = format!("w{w}");
            c
        };
        let cs = vec![
            case(1, BenchSbi::Inproc, BenchState::Sharded, 100.0),
            case(1, BenchSbi::H2c, BenchState::Sharded, 250.0),
            case(1, BenchSbi::Inproc, BenchState::Locked, 110.0),
        ];
        let cmp = comparisons(&cs);
        let h2c = cmp.iter().find(|c| c.what == "h2c/inproc").unwrap();
        assert!((h2c.cpu_ratio - 2.5).abs() < 1e-9);
        let sl = cmp.iter().find(|c| c.what == "sharded/locked").unwrap();
        assert!((sl.cpu_ratio - 100.0 / 110.0).abs() < 1e-9);
        assert_eq!(cmp.len(), 2);
        let m = median(vec![cs[1].clone(), cs[0].clone(), cs[2].clone()]).unwrap();
        assert_eq!(m.core_cpu_us_per_registration, 110.0);
        assert_eq!(m.rounds_core_cpu_us_per_registration.len(), 3);
    }
}
