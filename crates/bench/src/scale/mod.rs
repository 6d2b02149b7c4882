//! `steer5g bench scale`: the multi-core figures of the references in one command that
//! keeps to a time budget, for machines with more cores than the 2-core one this project is
//! built on (docs/BENCHMARKS.md, "bench scale and the kit").
//!
//! It runs the existing scenarios' own measuring functions in this process, sized to the
//! budget rather than to their defaults:
//!
//! 1. registrations/s and core CPU per registration against workers, sharded and locked,
//!    in-process SBI and h2c ([`crate::registration::measure_case`]), after a pilot case
//!    that gives the cost of a case and of a UE, so that each case's UEs fit its time;
//! 2. the echo microbenchmark at the largest worker count over lock shares (the crossover)
//!    and at share 0.25 over the worker counts, from which the USL projection to 16 and 64
//!    cores is made with σ and κ measured separately ([`crate::usl::model`]);
//! 3. the steering cost per message of every path at the largest worker count (at least
//!    2), after a pilot of every case that gives the slowest one's cost per message.
//!
//! The budget is split by [`budget::plan`]; each phase ends at a fixed point of the budget
//! whatever the phase before it took, and a case that would not fit what is left of its
//! phase is skipped and named in the report, so that the command ends within the budget.

mod budget;
mod report;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Parser};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::floor::{self, CryptoFloor};
use super::lockecho::{self, EchoSettingsArgs, PointReport};
use super::machine::Machine;
use super::registration::{self, BenchConnections, BenchSbi, Case, CaseReport, RegistrationArgs};
use super::steering::{self, SteeringArgs, SteeringReport};
use super::sweep::{self, BenchState, Comparison, Out, SweepArgs, WorkerList};
use super::usl::{self, UslReport};
use crate::BenchError;
use ran::load::SuciArg;

pub(crate) use self::budget::Plan;

/// The lock share of the echo runs the USL projection is made from (`bench usl`'s default).
const USL_SHARE: f64 = 0.25;
/// The registration cases' loopback addresses: 127.0.51.x (N2), 127.0.52.x (AUSF) and
/// 127.0.53.x (UDM), used by no other bench or test.
const REGISTRATION_NET: u8 = 51;
/// UEs (and warm-up UEs) of the registration pilot.
const PILOT_UES: u64 = 30;
const PILOT_WARMUP_UES: u64 = 10;
/// How much slower than the in-process SBI a first h2c case is assumed to be, before one
/// is measured (2-2.5× the core CPU in docs/PERFORMANCE.md).
const H2C_SLOWER: f64 = 3.0;
/// Messages per case of the steering pilot, which runs every case of the phase; the cases
/// are then sized by the slowest per message (25× the fastest here), with this margin.
const STEERING_PILOT_MESSAGES: u64 = 2_000;
const STEERING_MARGIN: f64 = 1.5;
/// Steering: messages per system call, message size and SCTP messages per packet.
const STEERING_BATCH: usize = 8;
const STEERING_SIZE: usize = 64;
const STEERING_SCTP_K: [usize; 2] = [1, 8];
/// Paths that load a BPF program (CAP_BPF or CAP_SYS_ADMIN).
const BPF_PATHS: [&str; 2] = ["kernel-udp", "sockmap-tcp"];
const ALL_PATHS: [&str; 5] = [
    "kernel-udp",
    "one-hop-udp",
    "pool-tcp",
    "one-hop-tcp",
    "sockmap-tcp",
];

/// `steer5g bench scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Largest worker count: 1..=N are measured (above 8, in steps: 12, 16, 24, 32, 48, 64
    /// and N); at most 64. Default: the CPUs this process may run on.
    #[arg(long, value_name = "N")]
    pub(crate) max_workers: Option<u16>,
    /// Wall-clock budget of the whole command, in seconds; refused (exit 2) when too small
    /// for the cases, with the smallest budget that fits them.
    #[arg(long, value_name = "S", default_value_t = 600.0)]
    pub(crate) budget_s: f64,
    /// Lock shares of the echo crossover, at the largest worker count.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.05,0.1,0.25,0.5",
        value_name = "F[,F...]"
    )]
    pub(crate) lock_share: Vec<f64>,
    /// Directory for scale.json, the CSV files and the SVG plots.
    #[arg(long, value_name = "DIR", default_value = "bench-results")]
    pub(crate) out: PathBuf,
}

/// `bench echo`'s own defaults for every echo setting, read from its flags.
#[derive(Debug, Parser)]
struct EchoDefaults {
    #[command(flatten)]
    settings: EchoSettingsArgs,
}

/// The registration phase.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RegistrationPhase {
    /// Procedure, SUCI protection, N2 transport.
    pub(crate) procedure: &'static str,
    /// The crypto floor of a registration here, the unit in which machines compare.
    pub(crate) floor: CryptoFloor,
    /// The pilot case the first case's size came from (not one of the cases).
    pub(crate) pilot: Option<CaseReport>,
    pub(crate) cases: Vec<CaseReport>,
    pub(crate) comparisons: Vec<Comparison>,
}

/// The content of scale.json and of `--json`.
#[derive(Debug, Serialize)]
pub(crate) struct ScaleReport {
    pub(crate) scenario: &'static str,
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) budget_s: f64,
    /// Wall time of the measurement, from the start of the command's work to the report.
    pub(crate) elapsed_s: f64,
    pub(crate) within_budget: bool,
    pub(crate) max_workers: u16,
    pub(crate) worker_counts: Vec<u16>,
    pub(crate) plan: Plan,
    /// When each phase ended against when the plan said it must.
    pub(crate) timeline: Vec<PhaseEnd>,
    pub(crate) registration: Option<RegistrationPhase>,
    /// The echo lock-share crossover at the largest worker count.
    pub(crate) echo: Option<lockecho::SweepReport>,
    /// PROJECTION to 16 and 64 cores from the echo runs at share 0.25 over the workers.
    pub(crate) usl: Option<UslReport>,
    /// Steering cost per message at the largest worker count (at least 2).
    pub(crate) steering: Option<SteeringReport>,
    /// Cases left out, and why (a missing privilege, no time left in their phase).
    pub(crate) skipped: Vec<String>,
    /// Phases or cases that failed; the command exits 1 when there is any.
    pub(crate) failures: Vec<String>,
    pub(crate) files: Vec<String>,
    pub(crate) ok: bool,
}

/// A phase's end, seconds from the start of the run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PhaseEnd {
    pub(crate) phase: &'static str,
    pub(crate) ended_s: f64,
    pub(crate) planned_end_s: f64,
}

/// The checked arguments.
struct Matrix {
    max: u16,
    counts: Vec<u16>,
    cases: Vec<Case>,
    /// Echo `(workers, share)` points: share 0.25 at every count, then the crossover's
    /// other shares at the largest count.
    echo_points: Vec<(u16, f64)>,
    steering_workers: u16,
    steering_paths: Vec<&'static str>,
    /// Why some steering paths are left out.
    steering_skipped: Option<String>,
}

fn matrix(args: &ScaleArgs) -> Result<Matrix, BenchError> {
    let max = args.max_workers.unwrap_or_else(sweep::all_cores);
    if !(1..=64).contains(&max) {
        return Err(BenchError::Invalid("--max-workers must be 1..=64".into()));
    }
    if args.lock_share.is_empty()
        || args.lock_share.len() > 8
        || args
            .lock_share
            .iter()
            .any(|f| !(f.is_finite() && (0.0..=1.0).contains(f)))
    {
        return Err(BenchError::Invalid(
            "--lock-share: 1 to 8 shares, each between 0 and 1".into(),
        ));
    }
    let counts = budget::worker_counts(max);
    let mut cases = Vec::new();
    for &workers in &counts {
        for sbi in [BenchSbi::Inproc, BenchSbi::H2c] {
            for state in [BenchState::Sharded, BenchState::Locked] {
                cases.push(Case {
                    workers,
                    suci: SuciArg::A,
                    sbi,
                    state,
                    connections: BenchConnections::Persistent,
                });
            }
        }
    }
    let mut echo_points: Vec<(u16, f64)> = counts.iter().map(|&w| (w, USL_SHARE)).collect();
    for &f in &args.lock_share {
        if !echo_points.contains(&(max, f)) {
            echo_points.push((max, f));
        }
    }
    let bpf = std::fs::read_to_string("/proc/self/status")
        .map(|s| may_load_bpf(&s))
        .unwrap_or(false);
    let steering_paths: Vec<&'static str> = ALL_PATHS
        .iter()
        .copied()
        .filter(|p| bpf || !BPF_PATHS.contains(p))
        .collect();
    Ok(Matrix {
        max,
        counts,
        cases,
        echo_points,
        steering_workers: max.max(2),
        steering_paths,
        steering_skipped: (!bpf).then(|| {
            format!(
                "steering {}: loading their BPF programs needs CAP_BPF (run as root)",
                BPF_PATHS.join(" and ")
            )
        }),
    })
}

/// Whether the effective capabilities in a /proc/PID/status text hold CAP_BPF (39) or
/// CAP_SYS_ADMIN (21), either of which lets the steering paths load their programs.
fn may_load_bpf(status: &str) -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_BPF: u32 = 39;
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_BPF | 1 << CAP_SYS_ADMIN) != 0)
}

/// The clock of the run: when it started and where each phase must end.
struct Clock {
    started: Instant,
    bar: ProgressBar,
}

impl Clock {
    fn new(budget_s: f64) -> Self {
        let budget = Duration::from_secs_f64(budget_s);
        let bar = ProgressBar::new(budget.as_millis() as u64);
        if let Ok(style) =
            ProgressStyle::with_template("bench scale [{bar:30}] {elapsed}/{len_s} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Clock {
            started: Instant::now(),
            bar,
        }
    }

    /// Seconds from the start to the end of a phase that ends `at_s` into the budget.
    fn left_until(&self, at_s: f64) -> f64 {
        at_s - self.started.elapsed().as_secs_f64()
    }

    /// Runs `f` with the bar out of the way (the scenarios draw bars of their own), then
    /// moves the bar to the time spent and says `msg`.
    fn step<T>(&self, msg: &str, f: impl FnOnce() -> T) -> T {
        self.bar.set_message(msg.to_owned());
        let out = self.bar.suspend(f);
        self.bar.set_position(
            (self.started.elapsed().as_millis() as u64).min(self.bar.length().unwrap_or(0)),
        );
        out
    }

    fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// What the phases leave behind.
#[derive(Default)]
struct Notes {
    skipped: Vec<String>,
    failures: Vec<String>,
}

/// `steer5g bench scale`.
pub(crate) fn run(json: bool, args: &ScaleArgs) -> Result<(), BenchError> {
    let m = matrix(args)?;
    // One pilot case beside the registration cases; the steering pilot beside its cases.
    let steering_cases = m.steering_paths.len() + 2 * STEERING_SCTP_K.len() + 1;
    let plan = budget::plan(
        args.budget_s,
        m.cases.len() + 1,
        2 * m.echo_points.len(),
        steering_cases,
    )?;
    let clock = Clock::new(args.budget_s);
    let mut out = Out::create(&args.out)?;
    // The scenarios run below warn about a debug build themselves.
    let machine = Machine::probe();
    let mut notes = Notes::default();
    notes.skipped.extend(m.steering_skipped.clone());

    // Each phase ends at a fixed point of the budget (half the reserve before the first,
    // for the calibrations; half after the last, for the report): a late phase leaves the
    // next less, never the command more.
    let reg_end = plan.reserve_s * 0.5 + plan.registration.total_s;
    let echo_end = reg_end + plan.echo.total_s;
    let steering_end = echo_end + plan.steering.total_s;

    let mut timeline = Vec::new();
    let mut ended = |phase: &'static str, planned_end_s: f64| {
        timeline.push(PhaseEnd {
            phase,
            ended_s: clock.elapsed_s(),
            planned_end_s,
        })
    };
    let registration = registration_phase(&m, &clock, reg_end, &mut notes);
    ended("registration", reg_end);
    let (echo, usl) = echo_phase(&m, &clock, echo_end, &machine, &mut notes);
    ended("echo", echo_end);
    let steering = steering_phase(&m, &clock, steering_end, &mut notes);
    ended("steering", steering_end);
    clock.bar.finish_and_clear();

    let elapsed_s = clock.elapsed_s();
    let within_budget = elapsed_s <= args.budget_s;
    if !within_budget {
        tracing::warn!(
            elapsed_s,
            budget_s = args.budget_s,
            "bench scale ran over its budget"
        );
    }
    let ok = notes.failures.is_empty();
    let report = ScaleReport {
        scenario: "scale",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        budget_s: args.budget_s,
        elapsed_s,
        within_budget,
        max_workers: m.max,
        worker_counts: m.counts.clone(),
        plan,
        timeline,
        registration,
        echo,
        usl,
        steering,
        skipped: notes.skipped,
        failures: notes.failures,
        files: Vec::new(),
        ok,
    };
    let mut report = report;
    report::write(&mut out, &mut report)?;
    if json {
        crate::print_json(&report)?;
    } else {
        print!("{}", report::table(&report));
        println!("wrote {}", out.list());
    }
    if ok {
        Ok(())
    } else {
        Err(BenchError::Failed(format!(
            "bench scale: {}",
            report.failures.join("; ")
        )))
    }
}

/// The registration arguments of one case of `ues` UEs.
fn registration_args(ues: u64, warmup_ues: u64, timeout_s: f64) -> RegistrationArgs {
    RegistrationArgs {
        suci: vec![SuciArg::A],
        sbi: vec![BenchSbi::Inproc],
        connections: vec![BenchConnections::Persistent],
        ues,
        // `bench registration`'s defaults.
        concurrency: 100,
        gnbs: 4,
        warmup_ues,
        timeout: timeout_s.clamp(5.0, 30.0),
        sweep: SweepArgs::default(),
    }
}

/// What a registration case has cost so far: the fixed cost of a case and, per SBI mode,
/// the wall time per UE.
struct RegCost {
    fixed_s: f64,
    inproc_s_per_ue: f64,
    h2c_s_per_ue: Option<f64>,
}

impl RegCost {
    fn s_per_ue(&self, sbi: BenchSbi) -> f64 {
        match sbi {
            BenchSbi::Inproc => self.inproc_s_per_ue,
            BenchSbi::H2c => self
                .h2c_s_per_ue
                .unwrap_or(self.inproc_s_per_ue * H2C_SLOWER),
        }
    }

    /// Learns from a case of `ues + warmup` UEs that took `wall_s`.
    fn learn(&mut self, sbi: BenchSbi, ues: u64, warmup: u64, wall_s: f64) {
        let per = (wall_s - self.fixed_s).max(0.0) / (ues + warmup).max(1) as f64;
        match sbi {
            BenchSbi::Inproc => self.inproc_s_per_ue = per.max(1e-6),
            BenchSbi::H2c => self.h2c_s_per_ue = Some(per.max(1e-6)),
        }
    }
}

fn registration_phase(
    m: &Matrix,
    clock: &Clock,
    end_s: f64,
    notes: &mut Notes,
) -> Option<RegistrationPhase> {
    let primitives = match clock.step("crypto floor", || floor::measure(&[SuciArg::A])) {
        Ok(p) => p,
        Err(e) => {
            notes.failures.push(format!("crypto floor: {e}"));
            return None;
        }
    };
    let floor = primitives.floor(SuciArg::A);
    let pilot_case = Case {
        workers: 1,
        suci: SuciArg::A,
        sbi: BenchSbi::Inproc,
        state: BenchState::Sharded,
        connections: BenchConnections::Persistent,
    };
    let left = clock.left_until(end_s);
    let t0 = Instant::now();
    let pilot = clock.step("registration pilot", || {
        registration::measure_case(
            pilot_case,
            &registration_args(PILOT_UES, PILOT_WARMUP_UES, left),
            REGISTRATION_NET,
            &floor,
        )
    });
    let pilot_wall = t0.elapsed().as_secs_f64();
    let pilot = match pilot {
        Ok(p) if p.ok && p.registrations > 0 => p,
        Ok(p) => {
            notes.failures.push(format!(
                "registration pilot: {} of {PILOT_UES} registered",
                p.registrations
            ));
            return None;
        }
        Err(e) => {
            notes.failures.push(format!("registration pilot: {e}"));
            return None;
        }
    };
    // The load's window per UE is the UE's cost; the rest of the pilot's wall time, its
    // warm-up's share of UEs excepted, is what any case costs.
    let window_per_ue = pilot.elapsed_s / pilot.registrations as f64;
    let mut cost = RegCost {
        fixed_s: (pilot_wall - window_per_ue * (PILOT_UES + PILOT_WARMUP_UES) as f64).max(0.0),
        inproc_s_per_ue: window_per_ue,
        h2c_s_per_ue: None,
    };
    let mut cases = Vec::new();
    for (i, &case) in m.cases.iter().enumerate() {
        let remaining = m.cases.len() - i;
        let per_case = clock.left_until(end_s) / remaining as f64;
        // Half the planned minimum still runs a case of the fewest UEs: a phase a little
        // late skips nothing, and the reserve covers the difference.
        if per_case < budget::MIN_REGISTRATION_CASE_S / 2.0 {
            notes.skipped.extend(
                m.cases[i..]
                    .iter()
                    .map(|c| format!("registration {}: no time left in its phase", c.label())),
            );
            break;
        }
        let ues = budget::registration_ues(per_case, cost.fixed_s, cost.s_per_ue(case.sbi));
        let warmup = budget::warmup_ues(ues);
        let t0 = Instant::now();
        let r = clock.step(&format!("registration {}", case.label()), || {
            registration::measure_case(
                case,
                &registration_args(ues, warmup, per_case),
                REGISTRATION_NET,
                &floor,
            )
        });
        cost.learn(case.sbi, ues, warmup, t0.elapsed().as_secs_f64());
        match r {
            Ok(c) => {
                if !c.ok {
                    notes.failures.push(format!(
                        "registration {}: {} of {ues} registered, {} procedures failed",
                        c.case, c.registrations, c.failed_procedures
                    ));
                }
                cases.push(c);
            }
            Err(e) => notes
                .failures
                .push(format!("registration {}: {e}", case.label())),
        }
    }
    Some(RegistrationPhase {
        procedure: "register + deregister, SUCI profile A, SCTP over UDP (RFC 6951), NIA2 + NEA2",
        floor,
        pilot: Some(pilot),
        comparisons: registration::comparisons(&cases),
        cases,
    })
}

fn echo_phase(
    m: &Matrix,
    clock: &Clock,
    end_s: f64,
    machine: &Machine,
    notes: &mut Notes,
) -> (Option<lockecho::SweepReport>, Option<UslReport>) {
    let defaults = match EchoDefaults::try_parse_from(["echo"]) {
        Ok(d) => d.settings,
        Err(e) => {
            notes.failures.push(format!("echo settings: {e}"));
            return (None, None);
        }
    };
    // Any valid window: the real one is set once the calibrations have taken their time.
    let sweep_args = SweepArgs {
        duration: Some(1.0),
        warmup: Some(0.0),
        rounds: Some(1),
        ..SweepArgs::default()
    };
    let prepared = clock.step("echo calibration and hand-off", || {
        let s = lockecho::Settings::from_args(&defaults, &sweep_args)?;
        let h = usl::measure_handoff()?;
        Ok::<_, BenchError>((s, h))
    });
    let (mut settings, handoff) = match prepared {
        Ok(p) => p,
        Err(e) => {
            notes.failures.push(format!("echo: {e}"));
            return (None, None);
        }
    };
    let runs = 2 * m.echo_points.len();
    let per_run = clock.left_until(end_s) / runs as f64;
    if per_run < budget::MIN_ECHO_RUN_S {
        notes
            .skipped
            .push("echo and USL: no time left in their phase".into());
        return (None, None);
    }
    (settings.warmup_s, settings.duration_s) = budget::echo_window(per_run);
    lockecho::warn_about(machine, m.max);
    let measured = match clock.step("echo", || {
        lockecho::measure_points(&m.echo_points, &settings)
    }) {
        Ok(r) => r,
        Err(e) => {
            notes.failures.push(format!("echo: {e}"));
            return (None, None);
        }
    };
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut crossover_runs: Vec<PointReport> = measured
        .iter()
        .filter(|p| p.workers == m.max)
        .cloned()
        .collect();
    crossover_runs.sort_by(|a, b| a.lock_share.total_cmp(&b.lock_share));
    crossover_runs.dedup_by(|a, b| a.lock_share == b.lock_share);
    let crossover = lockecho::crossover(
        &crossover_runs
            .iter()
            .map(|r| (r.lock_share, r.ratio))
            .collect::<Vec<_>>(),
    );
    let echo = lockecho::SweepReport {
        scenario: "lock-echo",
        command: command.clone(),
        machine: machine.clone(),
        workers: m.max,
        settings: settings.clone(),
        client_core: lockecho::client_core(m.max).map(|c| c.id),
        runs: crossover_runs,
        crossover,
        target: None,
    };
    let usl_points: Vec<PointReport> = measured
        .into_iter()
        .filter(|p| p.lock_share == USL_SHARE && m.counts.contains(&p.workers))
        .collect();
    let usl = match usl::model(&usl_points, &handoff) {
        Ok(usl::Model {
            projections,
            projected_ratio,
        }) => Some(UslReport {
            scenario: "usl-projection",
            label: usl::LABEL,
            command,
            machine: machine.clone(),
            lock_share: USL_SHARE,
            settings,
            handoff,
            measured: usl_points,
            projections,
            projected_ratio,
        }),
        Err(e) => {
            notes.failures.push(format!("USL projection: {e}"));
            None
        }
    };
    (Some(echo), usl)
}

/// The steering arguments of a run.
fn steering_args(
    workers: u16,
    messages: u64,
    paths: Vec<String>,
    sctp_k: Vec<usize>,
    timeout_s: f64,
) -> SteeringArgs {
    SteeringArgs {
        messages,
        size: STEERING_SIZE,
        batch: vec![STEERING_BATCH],
        paths,
        sctp_k,
        timeout: timeout_s.clamp(1.0, 3600.0),
        realtime: false,
        sweep: SweepArgs {
            workers: vec![WorkerList(vec![workers])],
            rounds: Some(1),
            ..SweepArgs::default()
        },
    }
}

fn steering_phase(
    m: &Matrix,
    clock: &Clock,
    end_s: f64,
    notes: &mut Notes,
) -> Option<SteeringReport> {
    let cases = m.steering_paths.len() + 2 * STEERING_SCTP_K.len();
    // The pilot (every case, a few messages each) may take what one case may.
    let per_case = clock.left_until(end_s) / (cases + 1) as f64;
    if per_case < budget::MIN_STEERING_CASE_S {
        notes
            .skipped
            .push("steering: no time left in its phase".into());
        return None;
    }
    let paths: Vec<String> = m.steering_paths.iter().map(|p| (*p).to_string()).collect();
    let t0 = Instant::now();
    let pilot = clock.step("steering pilot", || {
        steering::measure(&steering_args(
            m.steering_workers,
            STEERING_PILOT_MESSAGES,
            paths.clone(),
            STEERING_SCTP_K.to_vec(),
            per_case * 4.0,
        ))
    });
    let pilot_wall = t0.elapsed().as_secs_f64();
    let pilot = match pilot {
        Ok(p) => p,
        Err(e) => {
            notes.failures.push(format!("steering pilot: {e}"));
            return None;
        }
    };
    // Every case's window, per message and in all: the slowest sizes the cases, and the
    // rest of the pilot's wall time is what a case costs besides its messages.
    let windows: Vec<(f64, u64)> = pilot
        .cases
        .iter()
        .map(|c| (c.elapsed_s, c.messages))
        .chain(pilot.sctp.iter().map(|c| (c.elapsed_s, c.messages)))
        .filter(|&(_, n)| n > 0)
        .collect();
    if windows.is_empty() {
        notes
            .failures
            .push("steering pilot: no case measured".into());
        return None;
    }
    let slowest = windows
        .iter()
        .map(|&(s, n)| s / n as f64)
        .fold(0.0f64, f64::max);
    let fixed =
        (pilot_wall - windows.iter().map(|w| w.0).sum::<f64>()).max(0.0) / windows.len() as f64;
    let per_case = clock.left_until(end_s) / cases as f64;
    let messages = budget::steering_messages(per_case, fixed, slowest, STEERING_MARGIN);
    let args = steering_args(
        m.steering_workers,
        messages,
        paths,
        STEERING_SCTP_K.to_vec(),
        // A stuck case ends at the phase's end rather than at the command's.
        clock.left_until(end_s).max(1.0),
    );
    match clock.step("steering", || steering::measure(&args)) {
        Ok(r) => Some(r),
        Err(e) => {
            notes.failures.push(format!("steering: {e}"));
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(max: Option<u16>) -> ScaleArgs {
        ScaleArgs {
            max_workers: max,
            budget_s: 300.0,
            lock_share: vec![0.05, 0.25, 0.5],
            out: PathBuf::from("unused"),
        }
    }

    #[test]
    fn the_matrix_has_four_cases_per_count_and_shares_the_usl_point() {
        let m = matrix(&args(Some(2))).unwrap();
        assert_eq!(m.counts, vec![1, 2]);
        assert_eq!(m.cases.len(), 8);
        assert_eq!(
            m.cases.iter().map(Case::label).take(4).collect::<Vec<_>>(),
            [
                "w1 a inproc sharded",
                "w1 a inproc locked",
                "w1 a h2c sharded",
                "w1 a h2c locked"
            ]
        );
        // Share 0.25 at 1 and 2 workers, then 0.05 and 0.5 at 2: (2, 0.25) only once.
        assert_eq!(
            m.echo_points,
            vec![(1, 0.25), (2, 0.25), (2, 0.05), (2, 0.5)]
        );
        assert_eq!(m.steering_workers, 2);
        assert_eq!(matrix(&args(Some(1))).unwrap().steering_workers, 2);
        assert!(m.steering_paths.contains(&"one-hop-tcp"));
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        for max in [0, 65] {
            assert!(matches!(
                matrix(&args(Some(max))),
                Err(BenchError::Invalid(_))
            ));
        }
        for shares in [vec![], vec![1.5], vec![f64::NAN], vec![0.1; 9]] {
            let mut a = args(Some(1));
            a.lock_share = shares;
            assert!(matches!(matrix(&a), Err(BenchError::Invalid(_))));
        }
        assert!(matrix(&args(None)).is_ok());
    }

    #[test]
    fn bpf_paths_need_cap_bpf_or_cap_sys_admin() {
        let status = |caps: u64| format!("Name:\tx\nCapEff:\t{caps:016x}\nCapBnd:\t0\n");
        assert!(may_load_bpf(&status(1 << 39)));
        assert!(may_load_bpf(&status(1 << 21)));
        assert!(may_load_bpf(&status(0x000001ffffffffff)));
        assert!(!may_load_bpf(&status(1 << 12)));
        assert!(!may_load_bpf("Name:\tx\n"));
    }

    #[test]
    fn registration_costs_are_learned_per_sbi_mode() {
        let mut c = RegCost {
            fixed_s: 1.0,
            inproc_s_per_ue: 0.001,
            h2c_s_per_ue: None,
        };
        assert!((c.s_per_ue(BenchSbi::H2c) - 0.001 * H2C_SLOWER).abs() < 1e-12);
        c.learn(BenchSbi::H2c, 900, 100, 3.0);
        assert!((c.s_per_ue(BenchSbi::H2c) - 0.002).abs() < 1e-12);
        assert!((c.s_per_ue(BenchSbi::Inproc) - 0.001).abs() < 1e-12);
        // A case faster than the fixed cost never gives a zero cost.
        c.learn(BenchSbi::Inproc, 10, 10, 0.5);
        assert!(c.s_per_ue(BenchSbi::Inproc) > 0.0);
    }
}
