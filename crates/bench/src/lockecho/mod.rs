//! `steer5g bench echo`: the echo microbenchmark of the AppSteer paper (reference 001 §V,
//! Fig. 8). A server does a fixed amount of work per request, a share of it under a lock on
//! shared state, and is run twice with the same code: sharded (each worker owns its keys'
//! records, requests steered to the owner, no lock) and locked (one map behind one mutex,
//! requests on any worker). Sweeping the lock share finds the crossover share above which
//! sharding wins.
//!
//! One share and `--json` prints the one line scripts read:
//! `{"workers","lock_share","work_us","sharded_rps","locked_rps"}`. A list of shares prints
//! one object holding every run; with `--out DIR` (the default for a list) the runs also go
//! to `DIR/lockecho.json`, `.csv` and `.svg`.

mod client;
pub(crate) mod mmsg;
pub(crate) mod plot;
mod server;
pub(crate) mod work;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use self::client::{ClientConfig, ClientOutcome};
use self::server::{Delivery, LockedRx, Mode, Plan, Server, ServerTotals};
use self::work::{Calibration, Variant};
use super::machine::Machine;
use super::sweep::{self, shown, Axis, Out, Sweep, SweepArgs};

use crate::BenchError;

/// The target the report checks: at 2 workers and a lock share of 0.25, sharded at least
/// this many times locked.
pub(crate) const TARGET_RATIO: f64 = 1.15;

/// `--realtime`'s SCHED_FIFO priorities, both low (no kernel thread is starved of more than
/// the bench's own run). The client (echo's client, steering's sender, registration's load
/// generator) gets the higher one, so that a batch it sends leaves whole: below the workers,
/// every datagram it sends wakes a pinned worker that preempts it at once, and the run turns
/// into one context switch per request (measured: both echo designs lose a third of their
/// rate). The price is that the client preempts a worker when it wakes, sometimes one that
/// holds the lock; `bench echo --client-priority below` measures the other order.
const LOW_FIFO: i32 = 1;
const HIGH_FIFO: i32 = 2;

/// `--realtime` of every bench (echo, usl, steering, registration): checks that this process
/// may make threads SCHED_FIFO, on a throwaway thread, so that a missing privilege is exit
/// status 3 before anything runs.
pub(crate) fn probe_realtime() -> Result<(), BenchError> {
    std::thread::spawn(|| mmsg::set_fifo(LOW_FIFO))
        .join()
        .map_err(|_| BenchError::Failed("the SCHED_FIFO probe panicked".into()))?
        .map_err(|e| BenchError::Privilege(format!("--realtime needs CAP_SYS_NICE: {e}")))
}

/// The calling thread as a `--realtime` thread (SCHED_FIFO at `priority`) until the guard
/// drops, when it goes back to SCHED_OTHER. For benches whose measured threads are the
/// caller itself, or are spawned by it (new threads inherit the policy).
pub(crate) struct RealtimeGuard(());

impl RealtimeGuard {
    /// SCHED_FIFO at `priority` (1 for servers' workers, 2 for clients, as `bench echo`).
    pub(crate) fn enter(priority: i32) -> Result<Self, BenchError> {
        mmsg::set_fifo(priority)
            .map_err(|e| BenchError::Privilege(format!("--realtime needs CAP_SYS_NICE: {e}")))?;
        Ok(RealtimeGuard(()))
    }
}

impl Drop for RealtimeGuard {
    fn drop(&mut self) {
        if let Err(e) = mmsg::set_normal() {
            tracing::warn!("cannot leave SCHED_FIFO: {e}");
        }
    }
}

/// `--realtime`'s priority for server threads (workers).
pub(crate) const REALTIME_WORKER: i32 = LOW_FIFO;
/// `--realtime`'s priority for client threads (above the workers).
pub(crate) const REALTIME_CLIENT: i32 = HIGH_FIFO;

/// Where `--realtime` puts the echo client against the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ClientPriority {
    /// FIFO 2 over workers at 1: the client preempts a worker each time it wakes.
    Above,
    /// FIFO 1 under workers at 2: the client runs on idle cores only.
    Below,
}

impl ClientPriority {
    /// (worker, client) SCHED_FIFO priorities.
    fn priorities(self) -> (i32, i32) {
        match self {
            ClientPriority::Above => (LOW_FIFO, HIGH_FIFO),
            ClientPriority::Below => (HIGH_FIFO, LOW_FIFO),
        }
    }
}

/// What every run of `bench echo` and `bench usl` shares.
#[derive(Debug, Clone, Args)]
pub(crate) struct EchoSettingsArgs {
    /// Work per request, in microseconds of this machine's calibrated units.
    #[arg(long, default_value_t = 20.0, value_name = "US")]
    pub(crate) work_us: f64,
    /// compute: the work is CPU; io: the work is system calls (pipe round trips).
    #[arg(long, value_enum, default_value_t = Variant::Compute)]
    pub(crate) variant: Variant,
    /// Client sockets (flows); default 2 per worker.
    #[arg(long, value_name = "N")]
    pub(crate) client_sockets: Option<u32>,
    /// Requests the client keeps outstanding per worker's key space (closed loop): every
    /// worker always has this many queued, however fast the others go.
    #[arg(long, default_value_t = 32, value_name = "W")]
    pub(crate) window: u32,
    /// The client's sleep between two rounds of batched receive and refill, in
    /// microseconds: longer means fewer client wake-ups per request.
    #[arg(long, default_value_t = 200, value_name = "US")]
    pub(crate) client_pace_us: u32,
    /// Keys (app ids) requests are drawn from.
    #[arg(long, default_value_t = 4096, value_name = "N")]
    pub(crate) keys: u32,
    /// Fail instead of falling back to the user-space hand-off when the sk_reuseport
    /// program cannot be loaded.
    #[arg(long)]
    pub(crate) require_bpf: bool,
    /// How the locked design's workers receive: one shared socket all of them wait on, or
    /// one reuseport socket each placed by the kernel's flow hash.
    #[arg(long, value_enum, default_value_t = LockedRx::Shared)]
    pub(crate) locked_rx: LockedRx,
    /// Leave the worker threads unpinned (the scheduler may move them to whichever core
    /// other jobs leave free); by default worker i is pinned to core i.
    #[arg(long)]
    pub(crate) no_pin: bool,
    /// Run the workers and the client as SCHED_FIFO threads (client above workers), so that
    /// ordinary jobs on the machine cannot take their cores: the dedicated cores of the
    /// paper's setting. A locked worker waiting for the mutex then leaves its core idle (or
    /// to other jobs), as it would on a dedicated server. Needs CAP_SYS_NICE (exit 3).
    #[arg(long)]
    pub(crate) realtime: bool,
    /// With `--realtime`: whether the client's SCHED_FIFO priority is above the workers'
    /// (it preempts a worker whenever it wakes, holding the lock or not) or below (it runs
    /// only on a core a worker left idle, as a client on a machine of its own never takes
    /// a worker's core).
    #[arg(long, value_enum, default_value_t = ClientPriority::Above)]
    pub(crate) client_priority: ClientPriority,
}

/// `steer5g bench echo`.
#[derive(Debug, Args)]
#[command(mut_arg("workers", |a| shown(a, Some("2"),
    "Server worker threads (each pinned to a core).").value_name("N")))]
#[command(mut_arg("duration", |a| shown(a, Some("3"),
    "Length of each measured window, in seconds.")))]
#[command(mut_arg("warmup", |a| shown(a, Some("0.5"),
    "Traffic before each measured window, in seconds.")))]
#[command(mut_arg("rounds", |a| shown(a, Some("1"), ROUNDS_HELP)))]
#[command(mut_arg("out", |a| shown(a, None,
    "Directory for lockecho.json, .csv and .svg (default for a sweep: bench-results).")))]
pub struct LockEchoArgs {
    /// Share of each request's work done under the lock (0..=1); a comma-separated list
    /// sweeps.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.25",
        value_name = "F[,F...]"
    )]
    pub(crate) lock_share: Vec<f64>,
    #[command(flatten)]
    pub(crate) settings: EchoSettingsArgs,
    /// `--workers`, `--duration`, `--warmup`, `--rounds`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

/// `--rounds` of `bench echo` and `bench usl`.
pub(crate) const ROUNDS_HELP: &str = "Measure each point this many times, alternating which \
    design goes first, and report each design's median round (a shared machine's load comes in \
    bursts).";

/// The validated settings of a series of runs.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Settings {
    pub(crate) work_us: f64,
    pub(crate) variant: Variant,
    pub(crate) duration_s: f64,
    pub(crate) warmup_s: f64,
    /// Outstanding requests per worker's key space.
    pub(crate) window: u32,
    /// None: 2 per worker.
    pub(crate) client_sockets: Option<u32>,
    /// Client sleep between rounds, in microseconds.
    pub(crate) client_pace_us: u32,
    pub(crate) keys: u32,
    pub(crate) require_bpf: bool,
    pub(crate) locked_rx: LockedRx,
    pub(crate) pin: bool,
    /// Workers and client SCHED_FIFO (`--realtime`).
    pub(crate) realtime: bool,
    /// With `realtime`: the client above or below the workers.
    pub(crate) client_priority: ClientPriority,
    pub(crate) rounds: u32,
    pub(crate) calibration: Calibration,
}

impl Settings {
    /// Checks the flags and calibrates the work.
    pub(crate) fn from_args(a: &EchoSettingsArgs, sweep: &SweepArgs) -> Result<Self, BenchError> {
        if !(a.work_us.is_finite() && a.work_us > 0.0 && a.work_us <= 100_000.0) {
            return Err(BenchError::Invalid(
                "--work-us must be above 0 and at most 100000".into(),
            ));
        }
        let secs = |what: &str, v: f64, max: f64| {
            if v.is_finite() && (0.0..=max).contains(&v) {
                Ok(v)
            } else {
                Err(BenchError::Invalid(format!(
                    "--{what} must be between 0 and {max} seconds"
                )))
            }
        };
        let duration = secs("duration", sweep.duration_s(), 3600.0)?;
        if duration <= 0.0 {
            return Err(BenchError::Invalid("--duration must be positive".into()));
        }
        let warmup = secs("warmup", sweep.warmup_s(), 60.0)?;
        if a.window == 0 || a.window > 1024 {
            return Err(BenchError::Invalid("--window must be 1..=1024".into()));
        }
        if a.client_pace_us > 100_000 {
            return Err(BenchError::Invalid(
                "--client-pace-us must be at most 100000".into(),
            ));
        }
        if a.client_sockets.is_some_and(|n| n == 0 || n > 1024) {
            return Err(BenchError::Invalid(
                "--client-sockets must be 1..=1024".into(),
            ));
        }
        let rounds = sweep.rounds(50)?;
        if a.keys == 0 {
            return Err(BenchError::Invalid("--keys must be at least 1".into()));
        }
        if a.realtime {
            probe_realtime()?;
        }
        let calibration = Calibration::measure(a.variant)
            .map_err(|e| BenchError::Failed(format!("calibrating the work: {e}")))?;
        tracing::info!(
            variant = ?a.variant,
            units_per_us = calibration.units_per_us,
            "work calibrated"
        );
        Ok(Settings {
            work_us: a.work_us,
            variant: a.variant,
            duration_s: duration,
            warmup_s: warmup,
            window: a.window,
            client_sockets: a.client_sockets,
            client_pace_us: a.client_pace_us,
            keys: a.keys,
            require_bpf: a.require_bpf,
            locked_rx: a.locked_rx,
            pin: !a.no_pin,
            realtime: a.realtime,
            client_priority: a.client_priority,
            rounds,
            calibration,
        })
    }
}

/// One design measured once.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ModeReport {
    pub(crate) mode: Mode,
    pub(crate) rps: f64,
    /// Waiting for the state (the lock) / service time, over the whole run.
    pub(crate) wait_share: f64,
    /// Holding the state / service time: the lock share the workers actually saw.
    pub(crate) held_share: f64,
    /// Mean service time per request (work + lock wait + lock hold), in microseconds.
    pub(crate) service_us: f64,
    /// Worker thread CPU time per served request, in microseconds: unlike the rate, it
    /// holds when other jobs take cores away.
    pub(crate) server_cpu_us_per_req: f64,
    /// Client thread CPU time per echo received, in microseconds.
    pub(crate) client_cpu_us_per_req: f64,
    /// The rate of every round, in the order run (the figures above are the median's).
    pub(crate) rounds_rps: Vec<f64>,
    pub(crate) client: ClientOutcome,
    pub(crate) server: ServerTotals,
    pub(crate) delivery: Delivery,
}

/// Both designs at one lock share.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PointReport {
    pub(crate) workers: u16,
    pub(crate) lock_share: f64,
    pub(crate) sharded_rps: f64,
    pub(crate) locked_rps: f64,
    /// sharded / locked.
    pub(crate) ratio: f64,
    pub(crate) sharded: ModeReport,
    pub(crate) locked: ModeReport,
}

/// The one line of a single-share `--json` run.
#[derive(Debug, Serialize)]
struct Line {
    workers: u16,
    lock_share: f64,
    work_us: f64,
    sharded_rps: f64,
    locked_rps: f64,
}

/// Where the sweep's ratio crosses 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Crossover {
    /// Sharded already wins at the smallest share measured (this share).
    AtOrBelow(f64),
    /// The ratio crosses 1 between two measured shares: this share, linearly interpolated.
    Interpolated(f64),
    /// Locked wins (or ties) at every share measured.
    NotReached,
}

/// The crossover of `(share, ratio)` points (any order).
pub(crate) fn crossover(points: &[(f64, f64)]) -> Crossover {
    let mut p: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(s, r)| s.is_finite() && r.is_finite())
        .collect();
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    let Some(&(s0, r0)) = p.first() else {
        return Crossover::NotReached;
    };
    if r0 > 1.0 {
        return Crossover::AtOrBelow(s0);
    }
    for w in p.windows(2) {
        if let [(sa, ra), (sb, rb)] = *w {
            if rb > 1.0 {
                // ra <= 1 < rb, so rb - ra > 0.
                return Crossover::Interpolated(sa + (1.0 - ra) * (sb - sa) / (rb - ra));
            }
        }
    }
    Crossover::NotReached
}

/// The sweep: the content of lockecho.json and of `--json` with a list.
#[derive(Debug, Serialize)]
pub(crate) struct SweepReport {
    pub(crate) scenario: &'static str,
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) workers: u16,
    pub(crate) settings: Settings,
    /// Whether the client thread had a core of its own.
    pub(crate) client_core: Option<usize>,
    pub(crate) runs: Vec<PointReport>,
    pub(crate) crossover: Crossover,
    /// The target check (2 workers, share 0.25: sharded >= 1.15 x locked), when this sweep
    /// measured that point.
    pub(crate) target: Option<TargetCheck>,
}

/// The target point.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TargetCheck {
    pub(crate) ratio: f64,
    pub(crate) target_ratio: f64,
    pub(crate) met: bool,
}

/// The core for the client: the first one no worker is pinned to (workers take cores
/// 0..N in the runtime's order), if there is one.
pub(crate) fn client_core(workers: u16) -> Option<core_affinity::CoreId> {
    core_affinity::get_core_ids().and_then(|c| c.get(usize::from(workers)).copied())
}

/// Measures one design at one share behind a progress bar.
pub(crate) fn measure_mode(
    mode: Mode,
    workers: u16,
    share: f64,
    s: &Settings,
) -> Result<ModeReport, BenchError> {
    let total = s.calibration.units(s.work_us);
    let locked = s.calibration.units(s.work_us * share);
    let plan = Plan {
        variant: s.variant,
        outside: total.saturating_sub(locked),
        locked,
    };
    let server = Server::start(
        mode,
        workers,
        plan,
        s.require_bpf,
        s.locked_rx,
        s.pin,
        s.realtime.then_some(s.client_priority.priorities().0),
    )?;
    let cfg = ClientConfig {
        server: server.addr(),
        sockets: s
            .client_sockets
            .unwrap_or_else(|| u32::from(workers).saturating_mul(2)),
        window: s.window,
        owners: u32::from(workers),
        keys: s.keys,
        pace: Duration::from_micros(u64::from(s.client_pace_us)),
        warmup: Duration::from_secs_f64(s.warmup_s),
        duration: Duration::from_secs_f64(s.duration_s),
        core: if s.pin { client_core(workers) } else { None },
        fifo: s.realtime.then_some(s.client_priority.priorities().1),
    };
    let total_ms = ((s.warmup_s + s.duration_s) * 1000.0) as u64;
    // Hidden by indicatif when standard error is not a terminal.
    let bar = ProgressBar::new(total_ms);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>24} [{bar:30}] {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(format!("{} x{} F={share}", mode.label(), workers));
    let started = Instant::now();
    let handle = std::thread::Builder::new()
        .name("echo-client".into())
        .spawn(move || client::run(&cfg))?;
    while !handle.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
        bar.set_position((started.elapsed().as_millis() as u64).min(total_ms));
    }
    let outcome = handle
        .join()
        .map_err(|_| BenchError::Failed("the echo client panicked".into()));
    let (totals, delivery) = server.stop()?;
    let client = match outcome {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            bar.abandon_with_message("failed");
            return Err(BenchError::Failed(format!("echo client: {e}")));
        }
        Err(e) => {
            bar.abandon_with_message("failed");
            return Err(e);
        }
    };
    bar.finish_with_message(format!("{:.0} req/s", client.rps));
    if !bar.is_hidden() {
        eprintln!();
    }
    if client.responses == 0 {
        return Err(BenchError::Failed(format!(
            "{} x{workers}: no echo in the measured window",
            mode.label()
        )));
    }
    if mode == Mode::Sharded {
        tracing::info!(
            path = delivery.path,
            handed_off = totals.handed_off,
            bpf_steered = ?delivery.bpf_steered,
            "sharded delivery"
        );
    }
    let service_us = if totals.served > 0 {
        totals.service_s * 1e6 / totals.served as f64
    } else {
        0.0
    };
    Ok(ModeReport {
        mode,
        rps: client.rps,
        wait_share: totals.wait_share(),
        held_share: totals.held_share(),
        service_us,
        server_cpu_us_per_req: totals.cpu_us_per_request(),
        client_cpu_us_per_req: if client.received_total > 0 {
            client.cpu_s * 1e6 / client.received_total as f64
        } else {
            0.0
        },
        rounds_rps: vec![client.rps],
        client,
        server: totals,
        delivery,
    })
}

/// The median of a design's rounds is by rate (the upper one of an even count).
impl sweep::Round for ModeReport {
    const UPPER: bool = true;

    fn key(&self) -> f64 {
        self.rps
    }

    fn keep_rounds(&mut self, all: &[Self]) {
        self.rounds_rps = all.iter().map(|r| r.rps).collect();
    }
}

/// Both designs at every `(workers, share)` point, each `rounds` times, round-major, with
/// the design that goes first alternating from round to round.
pub(crate) fn measure_points(
    points: &[(u16, f64)],
    s: &Settings,
) -> Result<Vec<PointReport>, BenchError> {
    let cases: Vec<(u16, f64, Mode)> = points
        .iter()
        .flat_map(|&(w, f)| [(w, f, Mode::Sharded), (w, f, Mode::Locked)])
        .collect();
    // Each run shows a bar of its own.
    let per_case = Sweep::new(&cases, s.rounds).alternate().quiet().run(
        |(w, f, m)| format!("{} x{w} F={f}", m.label()),
        |v| {
            let &(workers, share, mode) = v.case;
            measure_mode(mode, workers, share, s)
        },
    )?;
    let none = || BenchError::Failed("no round measured".into());
    let mut medians = per_case.into_iter().map(sweep::median);
    points
        .iter()
        .map(|&(workers, share)| {
            let sharded = medians.next().flatten().ok_or_else(none)?;
            let locked = medians.next().flatten().ok_or_else(none)?;
            let ratio = if locked.rps > 0.0 {
                sharded.rps / locked.rps
            } else {
                0.0
            };
            Ok(PointReport {
                workers,
                lock_share: share,
                sharded_rps: sharded.rps,
                locked_rps: locked.rps,
                ratio,
                sharded,
                locked,
            })
        })
        .collect()
}

/// Warns once about the things that make the figures weaker.
pub(crate) fn warn_about(machine: &Machine, workers: u16) {
    if machine.build == "debug" {
        tracing::warn!(
            "this is a debug build: the figures will not mean much; \
             build with `cargo build --release -p steer5g`"
        );
    }
    if client_core(workers).is_none() {
        tracing::warn!(
            workers,
            cores = machine.nproc,
            "no core is free of workers: the client thread shares the workers' cores \
             (and takes CPU from them in both designs alike)"
        );
    }
}

/// `steer5g bench echo`.
pub(crate) fn run(json: bool, args: &LockEchoArgs) -> Result<(), BenchError> {
    args.sweep.only(
        "echo",
        &[
            Axis::Workers,
            Axis::Duration,
            Axis::Warmup,
            Axis::Rounds,
            Axis::Out,
        ],
    )?;
    let workers = args.sweep.one_worker()?;
    if workers == 0 || workers > steer::Workers::MAX {
        return Err(BenchError::Invalid(format!(
            "--workers must be 1..={}",
            steer::Workers::MAX
        )));
    }
    if args.lock_share.is_empty()
        || args
            .lock_share
            .iter()
            .any(|f| !(f.is_finite() && (0.0..=1.0).contains(f)))
    {
        return Err(BenchError::Invalid(
            "--lock-share: each share must be between 0 and 1".into(),
        ));
    }
    let settings = Settings::from_args(&args.settings, &args.sweep)?;
    let machine = Machine::probe();
    warn_about(&machine, workers);
    let points: Vec<(u16, f64)> = args.lock_share.iter().map(|&f| (workers, f)).collect();
    let runs = measure_points(&points, &settings)?;
    let crossover = crossover(
        &runs
            .iter()
            .map(|r| (r.lock_share, r.ratio))
            .collect::<Vec<_>>(),
    );
    let target = runs
        .iter()
        .find(|r| r.workers == 2 && (r.lock_share - 0.25).abs() < 1e-9)
        .map(|r| TargetCheck {
            ratio: r.ratio,
            target_ratio: TARGET_RATIO,
            met: r.ratio >= TARGET_RATIO,
        });
    let report = SweepReport {
        scenario: "lock-echo",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        workers,
        settings,
        client_core: client_core(workers).map(|c| c.id),
        runs,
        crossover,
        target,
    };
    let sweep = report.runs.len() > 1;
    let out = args
        .sweep
        .out
        .clone()
        .or_else(|| sweep.then(|| PathBuf::from("bench-results")));
    let mut wrote = Vec::new();
    if let Some(dir) = out {
        let mut out = Out::create(&dir)?;
        out.json("lockecho.json", &report)?;
        out.text("lockecho.csv", csv(&report))?;
        out.plot("lockecho.svg", |p| plot::write_svg(p, &report))?;
        wrote = out.wrote().to_vec();
    }
    if json {
        match report.runs.as_slice() {
            [one] => crate::print_json(&Line {
                workers: one.workers,
                lock_share: one.lock_share,
                work_us: report.settings.work_us,
                sharded_rps: one.sharded_rps,
                locked_rps: one.locked_rps,
            })?,
            _ => crate::print_json(&report)?,
        }
    } else {
        print!("{}", table(&report));
        for p in &wrote {
            println!("wrote {}", p.display());
        }
    }
    if let Some(t) = &report.target {
        if !t.met {
            tracing::warn!(
                ratio = t.ratio,
                "sharded/locked at 2 workers and share 0.25 is below the target {TARGET_RATIO}"
            );
        }
    }
    Ok(())
}

fn table(r: &SweepReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "echo: {} workers, {} us of {:?} work per request ({:.1} units/us), client {}",
        r.workers,
        r.settings.work_us,
        r.settings.variant,
        r.settings.calibration.units_per_us,
        match r.client_core {
            Some(c) => format!("pinned to core {c}"),
            None => "on the workers' cores (no free core)".into(),
        }
    );
    let _ = writeln!(
        s,
        "{:>6} {:>10} {:>10} {:>6} {:>9} {:>9} {:>10} {:>10} {:>11} {:>11} {:>13} {:>7}",
        "share",
        "sharded/s",
        "locked/s",
        "ratio",
        "lock wait",
        "lock held",
        "cpu/req S",
        "cpu/req L",
        "client S",
        "client L",
        "split L",
        "path"
    );
    for p in &r.runs {
        let _ = writeln!(
            s,
            "{:>6.3} {:>10.0} {:>10.0} {:>6.3} {:>8.1}% {:>8.1}% {:>8.1}us {:>8.1}us \
             {:>7.2}us/r {:>7.2}us/r {:>13} {:>7}",
            p.lock_share,
            p.sharded_rps,
            p.locked_rps,
            p.ratio,
            p.locked.wait_share * 100.0,
            p.locked.held_share * 100.0,
            p.sharded.server_cpu_us_per_req,
            p.locked.server_cpu_us_per_req,
            p.sharded.client_cpu_us_per_req,
            p.locked.client_cpu_us_per_req,
            split(&p.locked.delivery.per_worker),
            p.sharded.delivery.path
        );
    }
    let _ = writeln!(
        s,
        "(cpu/req: worker CPU per request; client: client CPU per echo; split L: the locked \
         design's requests per worker, in %)"
    );
    let _ = match r.crossover {
        Crossover::AtOrBelow(f) => writeln!(s, "crossover: sharded wins already at share {f}"),
        Crossover::Interpolated(f) => writeln!(s, "crossover: share {f:.3} (interpolated)"),
        Crossover::NotReached => writeln!(s, "crossover: not reached (locked wins throughout)"),
    };
    if let Some(t) = &r.target {
        let _ = writeln!(
            s,
            "target (2 workers, share 0.25, sharded >= {}x locked): {:.3}x, {}",
            t.target_ratio,
            t.ratio,
            if t.met { "met" } else { "NOT met" }
        );
    }
    s
}

/// Per-worker shares of the served requests, in whole percent: `"52/48"`.
fn split(per_worker: &[u64]) -> String {
    let total: u64 = per_worker.iter().sum();
    if total == 0 {
        return "-".into();
    }
    per_worker
        .iter()
        .map(|&n| format!("{:.0}", n as f64 * 100.0 / total as f64))
        .collect::<Vec<_>>()
        .join("/")
}

pub(crate) fn csv(r: &SweepReport) -> String {
    let mut s = String::from(
        "workers,lock_share,work_us,variant,sharded_rps,locked_rps,ratio,\
         locked_wait_share,locked_held_share,sharded_cpu_us_per_req,locked_cpu_us_per_req,\
         sharded_path,sharded_handed_off,sharded_client_cpu_us_per_req,\
         locked_client_cpu_us_per_req\n",
    );
    for p in &r.runs {
        s.push_str(&format!(
            "{},{},{},{},{:.1},{:.1},{:.4},{:.4},{:.4},{:.3},{:.3},{},{},{:.3},{:.3}\n",
            p.workers,
            p.lock_share,
            r.settings.work_us,
            match r.settings.variant {
                Variant::Compute => "compute",
                Variant::Io => "io",
            },
            p.sharded_rps,
            p.locked_rps,
            p.ratio,
            p.locked.wait_share,
            p.locked.held_share,
            p.sharded.server_cpu_us_per_req,
            p.locked.server_cpu_us_per_req,
            p.sharded.delivery.path,
            p.sharded.server.handed_off,
            p.sharded.client_cpu_us_per_req,
            p.locked.client_cpu_us_per_req
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossover_interpolates_between_points() {
        let c = crossover(&[(0.0, 0.9), (0.1, 0.95), (0.2, 1.05), (0.3, 1.2)]);
        match c {
            Crossover::Interpolated(f) => assert!((f - 0.15).abs() < 1e-9, "{f}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn crossover_edges() {
        assert_eq!(
            crossover(&[(0.1, 1.3), (0.0, 1.1)]),
            Crossover::AtOrBelow(0.0)
        );
        assert_eq!(crossover(&[(0.0, 0.8), (0.5, 1.0)]), Crossover::NotReached);
        assert_eq!(crossover(&[]), Crossover::NotReached);
        assert_eq!(crossover(&[(f64::NAN, 2.0)]), Crossover::NotReached);
    }

    #[test]
    fn split_gives_whole_percentages() {
        assert_eq!(split(&[52, 48]), "52/48");
        assert_eq!(split(&[1, 3]), "25/75");
        assert_eq!(split(&[0, 0]), "-");
        assert_eq!(split(&[]), "-");
    }
}
