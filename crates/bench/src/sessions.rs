//! `steer5g bench sessions`: PDU session establishments per second and core CPU time per
//! establishment of an in-process core (AMF, AUSF, UDM, SMF shards, in-process UPF over a
//! memory datapath), against the worker count, sharded vs locked.
//!
//! Each case gets a fresh data directory with its subscribers and an in-process core on
//! loopback addresses of its own (127.0.21.x for N2, 127.0.22.x and 127.0.23.x for the AUSF
//! and UDM, 127.0.24.x for the SMF's PFCP and the UPF). One load run carries every UE
//! through: register (null SUCI; not measured) → every UE held → establish N sessions →
//! every UE held → release them → every UE held → deregister. The holds split the run into
//! windows of their own, so the establishments are measured alone.
//!
//! Definitions (also in docs/PERFORMANCE.md):
//! - establishments/s: sessions established between the "registered" hold and the
//!   "sessions up" hold (the first UE let go to the last establishment done), over that
//!   window; releases/s likewise between "sessions up" and "sessions released";
//! - core CPU per establishment: CPU time of the core's threads (`core-*`: workers and the
//!   SQN persister, from /proc/self/task/*/schedstat) over the establishment window,
//!   divided by the establishments; the in-process UPF's thread (`upf-pfcp`) is given
//!   apart, as it stands in for a separate UPF;
//! - latency: request sent → both the accept at the UE and the resource setup at the gNB
//!   handled, from the load generator's histograms.
//!
//! Files: sessions.json (everything), sessions.csv (one row per case) and sessions.svg
//! (establishments/s and core CPU per establishment against workers, sharded vs locked).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use steer5g_config::Transport as TransportKind;
use steer5g_core::{Core, SbiMode, SmfOptions, UpfOptions};

use super::corecase::{
    core_options, next_slot, per, provision_range, ran_config, state_mode, threads_cpu, CaseAddrs,
    CORE_THREAD_PREFIX,
};
use super::machine::Machine;
use super::sweep::{
    self, median, shown, state_label, Axis, BenchState, Comparison, Out, Sweep, SweepArgs,
};
use super::sweepplot::{write_sweep, Panel};

use crate::BenchError;
use ran::load::driver::MAX_PDU_SESSIONS;
use ran::load::{suci_scheme, HoldPoint, LoadConfig, LoadReport, SessionPlan, SuciArg};

/// The in-process UPF's PFCP thread.
const UPF_THREAD_PREFIX: &str = "upf-pfcp";

/// `steer5g bench sessions`.
#[derive(Debug, Args)]
#[command(mut_arg("workers", |a| shown(a, Some("1..all"),
    "Core worker threads; a comma-separated list of counts and ranges (`1..4`, `1..all`, \
     `all`: the cores here) sweeps them.")))]
#[command(mut_arg("state", |a| shown(a, Some("sharded,locked"),
    "State mode of the core; a list sweeps them.")))]
#[command(mut_arg("rounds", |a| shown(a, Some("1"),
    "Measure every case this many times, interleaved, and report each case's median round.")
    .value_name("R")))]
#[command(mut_arg("out", |a| shown(a, Some("bench-results"),
    "Directory for sessions.json, .csv and .svg.")))]
pub struct SessionsArgs {
    /// UEs (subscribers) of each case.
    #[arg(long, default_value_t = 500, value_name = "N")]
    pub(crate) ues: u64,
    /// PDU sessions each UE establishes (IDs 1..=N, at most 15).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) pdu_sessions: u8,
    /// UEs in flight (closed loop).
    #[arg(long, default_value_t = 100, value_name = "K")]
    pub(crate) concurrency: usize,
    /// gNBs the UEs are spread over.
    #[arg(long, default_value_t = 4, value_name = "G")]
    pub(crate) gnbs: u32,
    /// Give up on NG Setup, and on each procedure, after this many seconds.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub(crate) timeout: f64,
    /// `--workers`, `--state`, `--rounds`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

/// One case of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Case {
    workers: u16,
    state: BenchState,
}

impl Case {
    fn label(&self) -> String {
        format!("w{} {}", self.workers, state_label(self.state))
    }
}

/// One measured case (the median round's figures).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct CaseReport {
    pub(crate) case: String,
    pub(crate) workers: u16,
    pub(crate) state: &'static str,
    pub(crate) ok: bool,
    pub(crate) ues: u64,
    /// Sessions asked for: UEs × sessions per UE.
    pub(crate) sessions: u64,
    pub(crate) establishments: u64,
    pub(crate) releases: u64,
    /// Failed procedures of the whole run (registration included), by cause.
    pub(crate) failed_procedures: u64,
    pub(crate) failures: BTreeMap<String, u64>,
    /// The establishment window, s.
    pub(crate) establish_window_s: f64,
    /// The release window, s.
    pub(crate) release_window_s: f64,
    pub(crate) establishments_per_s: f64,
    pub(crate) releases_per_s: f64,
    pub(crate) establishment_p50_us: u64,
    pub(crate) establishment_p99_us: u64,
    /// The slowest establishment: one that waits out a retransmission timer stretches the
    /// window without moving p99.
    pub(crate) establishment_max_us: u64,
    pub(crate) release_p50_us: u64,
    pub(crate) release_p99_us: u64,
    /// CPU time of the core's threads in the establishment window, s.
    pub(crate) core_cpu_s: f64,
    /// Core CPU per establishment, µs.
    pub(crate) core_cpu_us_per_establishment: f64,
    /// Core CPU per release (in the release window), µs.
    pub(crate) core_cpu_us_per_release: f64,
    /// The in-process UPF's thread CPU per establishment, µs.
    pub(crate) upf_cpu_us_per_establishment: f64,
    /// Core CPU over the establishment window's wall time.
    pub(crate) core_utilisation: f64,
    /// The load generator's thread CPU over the wall time of its whole run (registration
    /// included): near 1, the generator was the bottleneck.
    pub(crate) generator_utilisation: f64,
    /// The generator's SCTP retransmissions (timer-based and fast) over the whole run: a
    /// lost packet costs an RTO (at least 1 s, 3 s before the first RTT sample) and shows
    /// as a stalled window.
    pub(crate) sctp_retransmissions: u64,
    /// PFCP requests the UPF received again and answered from its cache (a response that
    /// was lost or came after the SMF's T1 of 3 s).
    pub(crate) upf_retransmissions_answered: u64,
    /// PFCP messages the UPF received (first and repeated).
    pub(crate) upf_pfcp_received: u64,
    /// Establishments/s of every round, in the order run.
    pub(crate) rounds_establishments_per_s: Vec<f64>,
    /// Core CPU per establishment of every round, µs.
    pub(crate) rounds_core_cpu_us_per_establishment: Vec<f64>,
}

/// The settings every case shared.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Settings {
    pub(crate) ues: u64,
    pub(crate) pdu_sessions: u8,
    pub(crate) concurrency: usize,
    pub(crate) gnbs: u32,
    pub(crate) rounds: u32,
    pub(crate) n2_transport: &'static str,
    pub(crate) sbi: &'static str,
    pub(crate) upf: &'static str,
}

/// Everything one run measured: sessions.json, and `--json`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SessionsBenchReport {
    pub(crate) scenario: &'static str,
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) settings: Settings,
    pub(crate) cases: Vec<CaseReport>,
    pub(crate) comparisons: Vec<Comparison>,
    /// Every session of every case was established and released.
    pub(crate) ok: bool,
}

/// A reading of the clocks at a hold.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: Instant,
    core_cpu: Duration,
    upf_cpu: Duration,
}

impl Mark {
    fn now() -> Self {
        Mark {
            at: Instant::now(),
            core_cpu: threads_cpu(CORE_THREAD_PREFIX),
            upf_cpu: threads_cpu(UPF_THREAD_PREFIX),
        }
    }
}

/// What one case measured, before the rounds are reduced.
struct Outcome {
    load: LoadReport,
    marks: BTreeMap<HoldPoint, Mark>,
    /// The UPF's counters when the core stopped.
    upf: Option<upf::service::ServiceReport>,
}

/// Checks the arguments; the matrix of cases in run order.
fn matrix(args: &SessionsArgs) -> Result<Vec<Case>, BenchError> {
    args.sweep.only(
        "sessions",
        &[Axis::Workers, Axis::State, Axis::Rounds, Axis::Out],
    )?;
    let workers = args.sweep.workers(64)?;
    let states = args.sweep.states();
    if workers.is_empty() || states.is_empty() {
        return Err(BenchError::Invalid(
            "--workers and --state need at least one value".into(),
        ));
    }
    if args.ues == 0 || args.ues > 1_000_000 {
        return Err(BenchError::Invalid("--ues must be 1 to 1000000".into()));
    }
    if args.pdu_sessions == 0 || args.pdu_sessions > MAX_PDU_SESSIONS {
        return Err(BenchError::Invalid(format!(
            "--pdu-sessions must be 1 to {MAX_PDU_SESSIONS} (PDU session IDs 1..=15, TS 24.007 §11.2.3.1b)"
        )));
    }
    if args.concurrency == 0 {
        return Err(BenchError::Invalid(
            "--concurrency must be at least 1".into(),
        ));
    }
    if args.gnbs == 0 {
        return Err(BenchError::Invalid("--gnbs must be at least 1".into()));
    }
    args.sweep.rounds(100)?;
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        return Err(BenchError::Invalid(
            "--timeout must be a positive number of seconds, at most 3600".into(),
        ));
    }
    let mut cases = Vec::new();
    for &w in &workers {
        for &state in &states {
            let c = Case { workers: w, state };
            if !cases.contains(&c) {
                cases.push(c);
            }
        }
    }
    Ok(cases)
}

/// Runs one case: fresh data directory, core with SMF and UPF, the load run, core stopped.
fn run_case(case: Case, args: &SessionsArgs, slot: u8) -> Result<Outcome, BenchError> {
    let temp = crate::corecase::temp_data_dir("bench-sessions")?;
    let CaseAddrs { cfg, ausf, udm } = CaseAddrs::new(21, slot);
    let up = Ipv4Addr::new(127, 0, 24, slot);

    let (subscribers, key_file) = provision_range(temp.path(), &cfg, args.ues, args.ues)?;
    // Registration is not measured: the null scheme spares the ECIES work.
    let (suci, suci_label) = suci_scheme(SuciArg::Null, &key_file)?;

    let identity = crate::corecase::gnb_identity(&cfg)?;
    let mut opts = core_options(
        temp.path().to_path_buf(),
        case.workers,
        cfg.clone(),
        ausf,
        udm,
    );
    opts.state = state_mode(case.state);
    opts.sbi = SbiMode::Inproc;
    opts.smf = Some(SmfOptions {
        pfcp_ip: up,
        ..SmfOptions::default()
    });
    opts.upf = Some(UpfOptions {
        pfcp: SocketAddr::from((up, 0)),
        n3: up,
        datapath: upf::MemoryDatapath::new(),
    });
    let core = Core::start(opts)?;

    let marks: Arc<Mutex<BTreeMap<HoldPoint, Mark>>> = Arc::default();
    let seen = marks.clone();
    let plan = LoadConfig {
        on_hold: Some(Arc::new(move |point| {
            let m = Mark::now();
            if let Ok(mut v) = seen.lock() {
                // The first time only: a hold reached again (a UE that failed and ran
                // anew) does not move the window.
                v.entry(point).or_insert(m);
            }
        })),
        ..LoadConfig::register_deregister(
            ran_config(
                identity.clone(),
                &cfg,
                TransportKind::Udp,
                args.gnbs,
                1,
                args.timeout,
            ),
            subscribers,
            (suci, suci_label),
            args.concurrency,
            args.ues,
            SessionPlan {
                per_ue: args.pdu_sessions,
                phase_holds: true,
                ..SessionPlan::default()
            },
        )
    };
    let result = ran::load::run(&plan);
    let stopped = core.stop();
    let load = result?;
    let upf = stopped?.upf;
    let marks = marks.lock().map(|m| m.clone()).unwrap_or_default();
    Ok(Outcome { load, marks, upf })
}

fn case_report(case: Case, args: &SessionsArgs, o: &Outcome) -> CaseReport {
    let proc = |name: &str| o.load.procedures.get(name);
    let est = proc("session_establishment");
    let rel = proc("session_release");
    let establishments = est.map_or(0, |p| p.completed);
    let releases = rel.map_or(0, |p| p.completed);
    let window = |a: HoldPoint, b: HoldPoint| match (o.marks.get(&a), o.marks.get(&b)) {
        (Some(a), Some(b)) => Some((
            b.at.saturating_duration_since(a.at),
            b.core_cpu.saturating_sub(a.core_cpu),
            b.upf_cpu.saturating_sub(a.upf_cpu),
        )),
        _ => None,
    };
    let (ew, ecpu, eupf) = window(HoldPoint::Registered, HoldPoint::SessionsUp).unwrap_or_default();
    let (rw, rcpu, _) =
        window(HoldPoint::SessionsUp, HoldPoint::SessionsReleased).unwrap_or_default();
    let rate = |n: u64, w: Duration| {
        if w.is_zero() {
            0.0
        } else {
            n as f64 / w.as_secs_f64()
        }
    };
    let sessions = args.ues * u64::from(args.pdu_sessions);
    CaseReport {
        case: case.label(),
        workers: case.workers,
        state: state_label(case.state),
        ok: o.load.ok && establishments == sessions && releases == sessions && o.marks.len() == 3,
        ues: args.ues,
        sessions,
        establishments,
        releases,
        failed_procedures: o.load.procedures_failed,
        failures: o.load.failures.clone(),
        establish_window_s: ew.as_secs_f64(),
        release_window_s: rw.as_secs_f64(),
        establishments_per_s: rate(establishments, ew),
        releases_per_s: rate(releases, rw),
        establishment_p50_us: est.map_or(0, |p| p.latency_us.p50),
        establishment_p99_us: est.map_or(0, |p| p.latency_us.p99),
        establishment_max_us: est.map_or(0, |p| p.latency_us.max),
        release_p50_us: rel.map_or(0, |p| p.latency_us.p50),
        release_p99_us: rel.map_or(0, |p| p.latency_us.p99),
        core_cpu_s: ecpu.as_secs_f64(),
        core_cpu_us_per_establishment: per(ecpu.as_secs_f64() * 1e6, establishments),
        core_cpu_us_per_release: per(rcpu.as_secs_f64() * 1e6, releases),
        upf_cpu_us_per_establishment: per(eupf.as_secs_f64() * 1e6, establishments),
        core_utilisation: if ew.is_zero() {
            0.0
        } else {
            ecpu.as_secs_f64() / ew.as_secs_f64()
        },
        generator_utilisation: o.load.generator_cpu.utilisation,
        sctp_retransmissions: o.load.sctp.retransmissions + o.load.sctp.fast_retransmits,
        upf_retransmissions_answered: o
            .upf
            .as_ref()
            .map_or(0, |u| u.stats.retransmissions_answered),
        upf_pfcp_received: o
            .upf
            .as_ref()
            .map_or(0, |u| u.stats.received.values().sum()),
        rounds_establishments_per_s: Vec::new(),
        rounds_core_cpu_us_per_establishment: Vec::new(),
    }
}

/// The median of a case's rounds is by core CPU per establishment: the steadier figure on a
/// shared machine.
impl sweep::Round for CaseReport {
    fn ok(&self) -> bool {
        self.ok
    }

    fn key(&self) -> f64 {
        self.core_cpu_us_per_establishment
    }

    fn keep_rounds(&mut self, all: &[Self]) {
        self.rounds_establishments_per_s = all.iter().map(|r| r.establishments_per_s).collect();
        self.rounds_core_cpu_us_per_establishment = all
            .iter()
            .map(|r| r.core_cpu_us_per_establishment)
            .collect();
    }
}

/// Sharded over locked at each worker count, and more workers over fewer per state.
fn comparisons(cases: &[CaseReport]) -> Vec<Comparison> {
    let mut out = Vec::new();
    for a in cases {
        for b in cases {
            let (what, at) =
                if a.state == "locked" && b.state == "sharded" && a.workers == b.workers {
                    ("sharded/locked".to_owned(), format!("w{}", a.workers))
                } else if a.state == b.state && a.workers < b.workers {
                    (format!("w{}/w{}", b.workers, a.workers), a.state.to_owned())
                } else {
                    continue;
                };
            out.push(Comparison::of(
                what,
                at,
                (b.establishments_per_s, b.core_cpu_us_per_establishment),
                (a.establishments_per_s, a.core_cpu_us_per_establishment),
            ));
        }
    }
    out
}

/// Measures every case, rounds interleaved.
pub(crate) fn measure(args: &SessionsArgs) -> Result<SessionsBenchReport, BenchError> {
    let cases = matrix(args)?;
    let rounds = args.sweep.rounds(100)?;
    let machine = sweep::machine();
    let per_case = Sweep::new(&cases, rounds).run(Case::label, |v| {
        let outcome = run_case(*v.case, args, next_slot())?;
        let report = case_report(*v.case, args, &outcome);
        v.say(format!(
            "{:.0} est/s, {:.0} µs/est",
            report.establishments_per_s, report.core_cpu_us_per_establishment
        ));
        Ok(report)
    })?;
    let cases: Vec<CaseReport> = per_case.into_iter().filter_map(median).collect();
    let ok = cases.iter().all(|c| c.ok);
    Ok(SessionsBenchReport {
        scenario: "sessions",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        settings: Settings {
            ues: args.ues,
            pdu_sessions: args.pdu_sessions,
            concurrency: args.concurrency,
            gnbs: args.gnbs,
            rounds,
            n2_transport: "sctp over udp (RFC 6951)",
            sbi: "inproc",
            upf: "in-process, memory datapath (PFCP over loopback UDP)",
        },
        comparisons: comparisons(&cases),
        cases,
        ok,
    })
}

/// sessions.csv: one row per case.
fn csv(r: &SessionsBenchReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::from(
        "case,workers,state,ok,sessions,establishments,releases,failed_procedures,\
         establishments_per_s,releases_per_s,core_cpu_us_per_establishment,\
         core_cpu_us_per_release,upf_cpu_us_per_establishment,establishment_p50_us,\
         establishment_p99_us,establishment_max_us,release_p50_us,release_p99_us,core_utilisation,\
         generator_utilisation,sctp_retransmissions,upf_retransmissions_answered,\
         upf_pfcp_received\n",
    );
    for c in &r.cases {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{:.1},{:.1},{:.2},{:.2},{:.2},{},{},{},{},{},{:.3},{:.3},{},{},{}",
            c.case,
            c.workers,
            c.state,
            c.ok,
            c.sessions,
            c.establishments,
            c.releases,
            c.failed_procedures,
            c.establishments_per_s,
            c.releases_per_s,
            c.core_cpu_us_per_establishment,
            c.core_cpu_us_per_release,
            c.upf_cpu_us_per_establishment,
            c.establishment_p50_us,
            c.establishment_p99_us,
            c.establishment_max_us,
            c.release_p50_us,
            c.release_p99_us,
            c.core_utilisation,
            c.generator_utilisation,
            c.sctp_retransmissions,
            c.upf_retransmissions_answered,
            c.upf_pfcp_received
        );
    }
    s
}

/// sessions.svg: establishments/s and core CPU per establishment against workers.
fn write_svg(path: &std::path::Path, r: &SessionsBenchReport) -> Result<(), String> {
    let panel = |desc: &str, get: fn(&CaseReport) -> f64| Panel {
        y_desc: desc.to_owned(),
        points: r
            .cases
            .iter()
            .map(|c| (c.state.to_owned(), c.workers, get(c)))
            .collect(),
    };
    write_sweep(
        path,
        &format!(
            "steer5g PDU session establishments against workers, {} UEs x {} session(s), K={}",
            r.settings.ues, r.settings.pdu_sessions, r.settings.concurrency
        ),
        &[
            panel("establishments per second", |c| c.establishments_per_s),
            panel("core CPU per establishment, µs", |c| {
                c.core_cpu_us_per_establishment
            }),
        ],
    )
}

/// The human form of the report.
fn table(r: &SessionsBenchReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "steer5g bench sessions: {} UEs x {} PDU session(s) per case, K={}, {} gNBs, {} round(s), {} build",
        r.settings.ues,
        r.settings.pdu_sessions,
        r.settings.concurrency,
        r.settings.gnbs,
        r.settings.rounds,
        r.machine.build
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:>8} {:>11} {:>8} {:>8} {:>8} {:>11} {:>9} {:>8} {:>6} {:>4}",
        "case",
        "est/s",
        "core µs/est",
        "upf µs",
        "p50 ms",
        "p99 ms",
        "core µs/rel",
        "core util",
        "gen util",
        "failed",
        "ok"
    );
    for c in &r.cases {
        let _ = writeln!(
            s,
            "{:<12} {:>8.0} {:>11.1} {:>8.1} {:>8.2} {:>8.2} {:>11.1} {:>9.2} {:>8.2} {:>6} {:>4}",
            c.case,
            c.establishments_per_s,
            c.core_cpu_us_per_establishment,
            c.upf_cpu_us_per_establishment,
            c.establishment_p50_us as f64 / 1e3,
            c.establishment_p99_us as f64 / 1e3,
            c.core_cpu_us_per_release,
            c.core_utilisation,
            c.generator_utilisation,
            c.failed_procedures,
            if c.ok { "yes" } else { "NO" }
        );
    }
    if !r.comparisons.is_empty() {
        let _ = writeln!(s);
        for c in &r.comparisons {
            let _ = writeln!(
                s,
                "{:<16} at {:<8} rate {:>5.2}x  core CPU/establishment {:>5.2}x",
                c.what, c.at, c.rate_ratio, c.cpu_ratio
            );
        }
    }
    s
}

/// `steer5g bench sessions`.
pub(crate) fn run(json: bool, args: &SessionsArgs) -> Result<(), BenchError> {
    // Usage errors first, before the output directory is made.
    matrix(args)?;
    let mut out = Out::create(&args.sweep.out_or("bench-results"))?;
    let report = measure(args)?;
    out.json("sessions.json", &report)?;
    out.text("sessions.csv", csv(&report))?;
    out.plot("sessions.svg", |p| write_svg(p, &report))?;
    if json {
        crate::print_json(&report)?;
    } else {
        print!("{}", table(&report));
        println!("wrote {}", out.list());
    }
    if report.ok {
        Ok(())
    } else {
        let bad: Vec<String> = report
            .cases
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{} ({:?})", c.case, c.failures))
            .collect();
        Err(BenchError::Failed(format!(
            "sessions failed or stalled in: {}",
            bad.join(", ")
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::sweep::WorkerList;
    use super::*;

    fn args() -> SessionsArgs {
        SessionsArgs {
            ues: 10,
            pdu_sessions: 1,
            concurrency: 5,
            gnbs: 1,
            timeout: 20.0,
            sweep: SweepArgs {
                workers: vec![WorkerList(vec![1, 2])],
                state: vec![BenchState::Sharded, BenchState::Locked],
                rounds: Some(1),
                out: Some("x".into()),
                ..SweepArgs::default()
            },
        }
    }

    #[test]
    fn matrix_checks_usage_and_dedups() {
        let a = args();
        let m = matrix(&a).unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].label(), "w1 sharded");
        assert_eq!(m[3].label(), "w2 locked");
        for bad in [
            SessionsArgs {
                pdu_sessions: 16,
                ..args()
            },
            SessionsArgs {
                pdu_sessions: 0,
                ..args()
            },
            SessionsArgs { ues: 0, ..args() },
            SessionsArgs {
                sweep: SweepArgs {
                    rounds: Some(0),
                    ..args().sweep
                },
                ..args()
            },
            SessionsArgs {
                sweep: SweepArgs {
                    state: vec![],
                    ..args().sweep
                },
                ..args()
            },
            SessionsArgs {
                sweep: SweepArgs {
                    duration: Some(1.0),
                    ..args().sweep
                },
                ..args()
            },
        ] {
            assert!(matches!(matrix(&bad), Err(BenchError::Invalid(_))));
        }
    }

    fn case(workers: u16, state: &'static str, rate: f64, cpu: f64, ok: bool) -> CaseReport {
        CaseReport {
            case: format!("w{workers} {state}"),
            workers,
            state,
            ok,
            establishments_per_s: rate,
            core_cpu_us_per_establishment: cpu,
            ..CaseReport::default()
        }
    }

    #[test]
    fn median_round_and_comparisons() {
        let m = median(vec![
            case(1, "sharded", 100.0, 30.0, true),
            case(1, "sharded", 300.0, 10.0, true),
            case(1, "sharded", 200.0, 20.0, true),
        ])
        .unwrap();
        assert_eq!(m.core_cpu_us_per_establishment, 20.0);
        assert_eq!(m.rounds_establishments_per_s, vec![100.0, 300.0, 200.0]);
        let failed = median(vec![
            case(1, "sharded", 100.0, 30.0, true),
            case(1, "sharded", 5.0, 90.0, false),
        ])
        .unwrap();
        assert!(!failed.ok, "a failed round is never hidden");
        let cs = comparisons(&[
            case(1, "sharded", 200.0, 10.0, true),
            case(1, "locked", 100.0, 20.0, true),
            case(2, "sharded", 400.0, 10.0, true),
        ]);
        let sl = cs.iter().find(|c| c.what == "sharded/locked").unwrap();
        assert_eq!(
            (sl.at.as_str(), sl.rate_ratio, sl.cpu_ratio),
            ("w1", 2.0, 0.5)
        );
        let w = cs.iter().find(|c| c.what == "w2/w1").unwrap();
        assert_eq!((w.at.as_str(), w.rate_ratio), ("sharded", 2.0));
    }

    #[test]
    fn csv_has_a_row_per_case() {
        let r = SessionsBenchReport {
            scenario: "sessions",
            command: String::new(),
            machine: Machine::probe(),
            settings: Settings {
                ues: 1,
                pdu_sessions: 1,
                concurrency: 1,
                gnbs: 1,
                rounds: 1,
                n2_transport: "",
                sbi: "",
                upf: "",
            },
            cases: vec![
                case(1, "sharded", 1.0, 1.0, true),
                case(1, "locked", 1.0, 1.0, true),
            ],
            comparisons: Vec::new(),
            ok: true,
        };
        let text = csv(&r);
        assert_eq!(text.lines().count(), 3);
        assert!(text
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("w1 sharded,1,sharded,true"));
    }
}
