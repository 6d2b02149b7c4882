//! `steer5g bench overload`: AMF overload control (TS 23.501 §5.19.5; TS 38.413 §8.7.6,
//! §8.7.7; TS 24.501 §5.3.9) against an in-process core, in one run.
//!
//! 1. **Sustainable rate.** A core with overload control off takes open-loop registrations
//!    (register + de-register per UE, SCTP over UDP encapsulation) at rising rates: the
//!    start rate, doubled while sustainable, then bisected between the last sustainable and
//!    the first unsustainable rate. A rate is sustainable when every run completes, nothing
//!    times out, at most 1 % of the starts go out late, and the registrations' p99 stays
//!    within [`P99_GROWTH`] times the p99 at the start rate (at least [`P99_FLOOR_US`]):
//!    past the knee an open loop queues and p99 grows with the window.
//! 2. **Marks.** A probe at 0.8× that rate gives the registrations in flight there at its
//!    p99 latency (Little's law with the p99 instead of the mean: a level normal load
//!    reaches about 1 % of the time); the high mark is twice that, split over the workers
//!    and at least [`MIN_HIGH_MARK`], the low mark half the high one. In-flight
//!    registrations bounded near the high mark keep the admitted ones' latency near twice
//!    their latency at 0.8×, and 0.8× itself rarely meets the mark.
//! 3. **Measured.** A core with overload control on (those marks, the configured T3346 and
//!    traffic load reduction) takes 0.8× and 2× that rate, interleaved over `--rounds`
//!    through the shared sweep runner; each case reports its median round by p99.
//!
//! Pass criteria, at 2×: the admitted registrations' p99 is at most twice their p99 at 0.8×;
//! every run that was not admitted was rejected with #22 and T3346 (after its one retry
//! after T3346) or shed by its gNB at the AMF's OVERLOAD START (the AMF asked for it); no
//! procedure timed out.
//!
//! Files: overload.json (everything), overload.csv (one row per probe and case) and
//! overload.svg (p99, completed rate and refused share against the offered rate).

use std::collections::BTreeMap;
use std::net::SocketAddrV4;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use steer5g_config::{Config, Transport as TransportKind};
use steer5g_core::{Core, CoreHandle, SbiMode};

use super::corecase::{
    core_options, counter_delta, next_slot, provision_range, ran_config, CaseAddrs,
};
use super::machine::Machine;
use super::sweep::{self, median, seconds, shown, Axis, Out, Sweep, SweepArgs};
use super::sweepplot::{write_xy, XyPanel};
use crate::BenchError;
use ran::load::schedule::{Limit, Load};
use ran::load::{suci_scheme, LoadConfig, LoadReport, Mode, SuciArg};

/// A rate is sustainable while its p99 stays within this factor of the p99 at the start
/// rate.
const P99_GROWTH: f64 = 5.0;
/// ... or under this, whichever is larger: a few ms of jitter on a shared machine is not a
/// queue.
const P99_FLOOR_US: u64 = 20_000;
/// Share of starts that may go out late at a sustainable rate.
const LATE_SHARE: f64 = 0.01;
/// Most doublings of the search.
const MAX_DOUBLINGS: u32 = 10;
/// The lowest high mark per worker: a level of a few registrations in flight is the
/// jitter of a shared machine, not a queue, and marks that close together flap.
const MIN_HIGH_MARK: f64 = 4.0;
/// The offered rates of the measured cases, as factors of the sustainable rate.
const FACTORS: [f64; 2] = [0.8, 2.0];
/// Most bisection steps (`--bisect`): with [`MAX_DOUBLINGS`] this bounds the search to
/// 2 + 10 + 8 + 1 probes.
const MAX_BISECT: u32 = 8;

/// `steer5g bench overload`.
#[derive(Debug, Args)]
#[command(mut_arg("workers", |a| shown(a, Some("1"), "Core worker threads (one count).")))]
#[command(mut_arg("rounds", |a| shown(a, Some("1"),
    "Measure the 0.8× and 2× cases this many times, interleaved, and report each case's \
     median round (by p99).").value_name("R")))]
#[command(mut_arg("duration", |a| shown(a, Some("10"),
    "Length of each measured load (0.8× and 2×), in seconds.")))]
#[command(mut_arg("out", |a| shown(a, Some("bench-results"),
    "Directory for overload.json, .csv and .svg.")))]
pub struct OverloadArgs {
    /// SUCI protection of the UEs.
    #[arg(long, value_enum, default_value = "a")]
    pub(crate) suci: SuciArg,
    /// Subscribers the runs cycle through (a subscriber runs once at a time, so this bounds
    /// the runs in flight, back-offs included).
    #[arg(long, default_value_t = 4000, value_name = "N")]
    pub(crate) ues: u64,
    /// gNBs the UEs are spread over.
    #[arg(long, default_value_t = 4, value_name = "G")]
    pub(crate) gnbs: u32,
    /// First offered rate of the search, registrations per second.
    #[arg(long, default_value_t = 50.0, value_name = "PER_S")]
    pub(crate) start_rate: f64,
    /// Length of each probe of the search, seconds.
    #[arg(long, default_value_t = 4.0, value_name = "SECS")]
    pub(crate) probe: f64,
    /// Bisection steps between the last sustainable and the first unsustainable rate.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub(crate) bisect: u32,
    /// T3346 the AMF sends with #22, seconds (each rejected UE registers once more after
    /// it).
    #[arg(long, default_value_t = 2, value_name = "SECS")]
    pub(crate) t3346: u32,
    /// The AMF Traffic Load Reduction Indication of OVERLOAD START, percent.
    #[arg(long, default_value_t = 50, value_name = "PERCENT")]
    pub(crate) reduction: u8,
    /// Give up on NG Setup, and on each procedure, after this many seconds.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub(crate) timeout: f64,
    /// `--workers`, `--rounds`, `--duration`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

/// One open-loop run of the search (overload control off).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Probe {
    pub(crate) offered_per_s: f64,
    pub(crate) runs_started: u64,
    pub(crate) runs_ok: u64,
    pub(crate) registrations_per_s: f64,
    pub(crate) registration_p50_us: u64,
    pub(crate) registration_p99_us: u64,
    pub(crate) registration_mean_us: f64,
    pub(crate) late_starts: u64,
    pub(crate) failures: BTreeMap<String, u64>,
    pub(crate) sustainable: bool,
}

/// One measured case (the median round's figures).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct CaseReport {
    pub(crate) factor: f64,
    pub(crate) offered_per_s: f64,
    pub(crate) runs_started: u64,
    pub(crate) runs_ok: u64,
    /// Registrations completed (admitted), retries after T3346 included.
    pub(crate) registrations: u64,
    pub(crate) registrations_per_s: f64,
    pub(crate) registration_p50_us: u64,
    /// p99 of the admitted registrations, from their (last) REGISTRATION REQUEST.
    pub(crate) registration_p99_us: u64,
    /// OVERLOAD STARTs the gNBs received, and the time they were in overload.
    pub(crate) overload_starts: u64,
    pub(crate) overload_s: f64,
    /// New UEs the gNBs shed at the AMF's request.
    pub(crate) shed: u64,
    /// Registrations rejected with #22 and T3346, as the UEs saw them.
    pub(crate) congestion_rejects: u64,
    pub(crate) retries_after_t3346: u64,
    /// Runs that ended with #22 after their retry.
    pub(crate) gave_up_with_22: u64,
    pub(crate) timeouts: u64,
    /// Failures other than #22 (timeouts included).
    pub(crate) other_failures: u64,
    pub(crate) failures: BTreeMap<String, u64>,
    /// The core's counters over the run (`amf_congestion_rejects`...).
    pub(crate) counters: BTreeMap<&'static str, u64>,
    pub(crate) rounds_p99_us: Vec<u64>,
}

impl sweep::Round for CaseReport {
    fn ok(&self) -> bool {
        self.other_failures == 0
    }

    fn key(&self) -> f64 {
        self.registration_p99_us as f64
    }

    fn keep_rounds(&mut self, all: &[Self]) {
        self.rounds_p99_us = all.iter().map(|r| r.registration_p99_us).collect();
    }
}

/// The marks the measured core ran with.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Marks {
    /// Registrations in flight at 0.8× the sustainable rate (rate × mean latency), all
    /// workers.
    pub(crate) in_flight_at_0_8: f64,
    /// The same with the p99 latency: what the marks are made from.
    pub(crate) in_flight_p99_at_0_8: f64,
    /// Per worker.
    pub(crate) high_mark: u32,
    pub(crate) low_mark: u32,
    pub(crate) t3346_s: u32,
    pub(crate) traffic_load_reduction: u8,
}

/// The pass criteria at 2×.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Criteria {
    /// p99 at 2× over p99 at 0.8× (admitted registrations).
    pub(crate) p99_ratio: f64,
    /// `p99_ratio` ≤ 2.
    pub(crate) p99_within_2x: bool,
    /// Every run not admitted was rejected with #22 and T3346 or shed at the AMF's request.
    pub(crate) rest_rejected_with_22: bool,
    /// No procedure timed out.
    pub(crate) no_timeouts: bool,
    /// The 2× run met overload (OVERLOAD START or #22): the control was exercised.
    pub(crate) overload_reached: bool,
}

/// The settings of the run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Settings {
    pub(crate) workers: u16,
    pub(crate) suci: &'static str,
    pub(crate) ues: u64,
    pub(crate) gnbs: u32,
    pub(crate) rounds: u32,
    pub(crate) probe_s: f64,
    pub(crate) duration_s: f64,
    pub(crate) procedure: &'static str,
    pub(crate) n2_transport: &'static str,
    pub(crate) sbi: &'static str,
}

/// Everything one run measured: overload.json, and `--json`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct OverloadBenchReport {
    pub(crate) scenario: &'static str,
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) settings: Settings,
    pub(crate) probes: Vec<Probe>,
    /// The highest sustainable rate found, registrations per second.
    pub(crate) sustainable_per_s: f64,
    pub(crate) marks: Marks,
    pub(crate) cases: Vec<CaseReport>,
    pub(crate) criteria: Option<Criteria>,
    /// Every criterion met.
    pub(crate) ok: bool,
}

/// What every load run shares: the configuration, subscribers and SUCI scheme.
struct Bed {
    /// Holds the data directory while the run lasts.
    _temp: tempfile::TempDir,
    data_dir: std::path::PathBuf,
    cfg: Config,
    ausf: SocketAddrV4,
    udm: SocketAddrV4,
    subscribers: Vec<store::Subscriber>,
    suci: ran::ue::SuciScheme,
    suci_label: String,
    identity: ran::load::GnbIdentity,
    /// The next run's first gNB ID: every run has gNBs of its own.
    next_gnb: u32,
}

impl Bed {
    fn new(args: &OverloadArgs) -> Result<Self, BenchError> {
        let temp = crate::corecase::temp_data_dir("bench-overload")?;
        let CaseAddrs { cfg, ausf, udm } = CaseAddrs::new(15, next_slot());
        let (subscribers, key_file) = provision_range(temp.path(), &cfg, args.ues, args.ues)?;
        let (suci, suci_label) = suci_scheme(args.suci, &key_file)?;
        Ok(Bed {
            data_dir: temp.path().to_path_buf(),
            _temp: temp,
            ausf,
            udm,
            identity: crate::corecase::gnb_identity(&cfg)?,
            cfg,
            subscribers,
            suci,
            suci_label,
            next_gnb: 1,
        })
    }

    /// A core of `workers` with `cfg`'s limits (overload control as it says).
    fn core(&self, workers: u16, cfg: Config) -> Result<CoreHandle, BenchError> {
        let mut opts = core_options(self.data_dir.clone(), workers, cfg, self.ausf, self.udm);
        opts.sbi = SbiMode::Inproc;
        Ok(Core::start(opts)?)
    }

    /// Open-loop registrations at `rate` for `window` against the core at `self.cfg`'s N2.
    fn load(
        &mut self,
        rate: f64,
        window: Duration,
        args: &OverloadArgs,
    ) -> Result<LoadReport, BenchError> {
        let base = self.next_gnb;
        self.next_gnb = self.next_gnb.saturating_add(args.gnbs);
        let plan = LoadConfig {
            ran: ran_config(
                self.identity.clone(),
                &self.cfg,
                TransportKind::Udp,
                args.gnbs,
                base,
                args.timeout,
            ),
            mode: Mode::RegisterDeregister,
            load: Load::Open {
                rate,
                max_in_flight: self.subscribers.len(),
            },
            limit: Limit::Duration(window),
            subscribers: self.subscribers.clone(),
            suci: self.suci.clone(),
            suci_label: self.suci_label.clone(),
            sessions: ran::load::SessionPlan::default(),
            on_sessions_up: None,
            on_hold: None,
        };
        Ok(ran::load::run(&plan)?)
    }
}

fn registration(r: &LoadReport) -> (u64, f64, u64, u64, f64) {
    r.procedures
        .get("registration")
        .map_or((0, 0.0, 0, 0, 0.0), |p| {
            (
                p.completed,
                p.per_second,
                p.latency_us.p50,
                p.latency_us.p99,
                p.latency_us.mean,
            )
        })
}

fn count_where(failures: &BTreeMap<String, u64>, f: impl Fn(&str) -> bool) -> u64 {
    failures.iter().filter(|(k, _)| f(k)).map(|(_, n)| *n).sum()
}

/// A #22 reject as the load report labels it (`registration reject #22 (Congestion)`).
fn is_congestion(label: &str) -> bool {
    label.contains("reject #22")
}

fn probe_of(rate: f64, r: &LoadReport, p99_bound: Option<u64>) -> Probe {
    let (_, per_s, p50, p99, mean) = registration(r);
    let late_ok = r.late_starts as f64 <= LATE_SHARE * r.runs_started.max(1) as f64;
    let sustainable = r.runs_failed == 0
        && r.failures.is_empty()
        && r.runs_ok == r.runs_started
        && r.runs_started > 0
        && late_ok
        && p99_bound.is_none_or(|b| p99 <= b);
    Probe {
        offered_per_s: rate,
        runs_started: r.runs_started,
        runs_ok: r.runs_ok,
        registrations_per_s: per_s,
        registration_p50_us: p50,
        registration_p99_us: p99,
        registration_mean_us: mean,
        late_starts: r.late_starts,
        failures: r.failures.clone(),
        sustainable,
    }
}

/// Step 1 and 2: the sustainable rate and the marks, on a core without overload control.
fn search(
    bed: &mut Bed,
    args: &OverloadArgs,
    workers: u16,
) -> Result<(Vec<Probe>, f64, Marks), BenchError> {
    let window = seconds("probe", args.probe, 600.0)?;
    let bar = search_bar(u64::from(MAX_DOUBLINGS + args.bisect + 3));
    let mut cfg = bed.cfg.clone();
    cfg.overload.enabled = false;
    let core = bed.core(workers, cfg)?;
    let result = (|| {
        // Warm-up: caches, connections, the UDM's records; not reported.
        bar.set_message(format!("warm-up at {:.0}/s", args.start_rate));
        bed.load(args.start_rate, window.min(Duration::from_secs(2)), args)?;
        bar.inc(1);
        let mut probes = Vec::new();
        let first = bed.load(args.start_rate, window, args)?;
        let base = probe_of(args.start_rate, &first, None);
        let bound = base
            .registration_p99_us
            .saturating_mul(P99_GROWTH as u64)
            .max(P99_FLOOR_US);
        let base = probe_of(args.start_rate, &first, Some(bound));
        tell(&bar, &base);
        let mut good = base.sustainable.then_some(args.start_rate);
        let mut bad = None;
        probes.push(base);
        let mut rate = args.start_rate;
        for _ in 0..MAX_DOUBLINGS {
            if good.is_none() {
                break;
            }
            rate *= 2.0;
            let p = probe_of(rate, &bed.load(rate, window, args)?, Some(bound));
            tell(&bar, &p);
            let ok = p.sustainable;
            probes.push(p);
            if ok {
                good = Some(rate);
            } else {
                bad = Some(rate);
                break;
            }
        }
        let Some(mut lo) = good else {
            return Err(BenchError::Failed(format!(
                "--start-rate {}/s is not sustainable here: {:?}",
                args.start_rate,
                probes.last()
            )));
        };
        if let Some(mut hi) = bad {
            for _ in 0..args.bisect {
                let mid = (lo + hi) / 2.0;
                let p = probe_of(mid, &bed.load(mid, window, args)?, Some(bound));
                tell(&bar, &p);
                if p.sustainable {
                    lo = mid;
                } else {
                    hi = mid;
                }
                probes.push(p);
            }
        }
        // The calibration probe at 0.8×: its registrations in flight (Little's law).
        let at = 0.8 * lo;
        let cal = probe_of(at, &bed.load(at, window, args)?, Some(bound));
        tell(&bar, &cal);
        let in_flight = at * cal.registration_mean_us / 1e6;
        let in_flight_p99 = at * cal.registration_p99_us as f64 / 1e6;
        probes.push(cal);
        let per_worker = (2.0 * in_flight_p99 / f64::from(workers))
            .ceil()
            .max(MIN_HIGH_MARK);
        let high = u32::try_from(per_worker as u64).unwrap_or(u32::MAX);
        let marks = Marks {
            in_flight_at_0_8: in_flight,
            in_flight_p99_at_0_8: in_flight_p99,
            high_mark: high,
            low_mark: (high / 2).max(1),
            t3346_s: args.t3346,
            traffic_load_reduction: args.reduction,
        };
        Ok((probes, lo, marks))
    })();
    match &result {
        Ok(_) => bar.finish_with_message("done"),
        Err(_) => bar.abandon_with_message("failed"),
    }
    if !bar.is_hidden() {
        eprintln!();
    }
    core.stop()?;
    result
}

/// The search's progress bar: one step per probe, at most `len` (hidden by indicatif when
/// standard error is not a terminal).
fn search_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>22} [{bar:30}] {pos}/{len} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix("search");
    bar
}

/// One probe done: its figures on the bar.
fn tell(bar: &ProgressBar, p: &Probe) {
    bar.set_message(format!(
        "{:.0}/s offered: p99 {:.1} ms{}",
        p.offered_per_s,
        p.registration_p99_us as f64 / 1e3,
        if p.sustainable {
            ""
        } else {
            " (not sustainable)"
        }
    ));
    bar.inc(1);
}

fn case_of(
    factor: f64,
    rate: f64,
    r: &LoadReport,
    counters: BTreeMap<&'static str, u64>,
) -> CaseReport {
    let (regs, per_s, p50, p99, _) = registration(r);
    let timeouts = count_where(&r.failures, |k| k.contains("timeout"));
    CaseReport {
        factor,
        offered_per_s: rate,
        runs_started: r.runs_started,
        runs_ok: r.runs_ok,
        registrations: regs,
        registrations_per_s: per_s,
        registration_p50_us: p50,
        registration_p99_us: p99,
        overload_starts: r.overload.starts,
        overload_s: r.overload.seconds,
        shed: r.overload.shed,
        congestion_rejects: r.overload.congestion_rejects,
        retries_after_t3346: r.overload.retries_after_t3346,
        gave_up_with_22: count_where(&r.failures, is_congestion),
        timeouts,
        other_failures: count_where(&r.failures, |k| !is_congestion(k)),
        failures: r.failures.clone(),
        counters,
        rounds_p99_us: Vec::new(),
    }
}

fn criteria(cases: &[CaseReport]) -> Option<Criteria> {
    let low = cases.iter().find(|c| c.factor < 1.0)?;
    let high = cases.iter().find(|c| c.factor > 1.0)?;
    let p99_ratio = if low.registration_p99_us > 0 {
        high.registration_p99_us as f64 / low.registration_p99_us as f64
    } else {
        f64::INFINITY
    };
    Some(Criteria {
        p99_ratio,
        p99_within_2x: p99_ratio <= 2.0,
        rest_rejected_with_22: high.other_failures == 0,
        no_timeouts: high.timeouts == 0 && low.timeouts == 0,
        overload_reached: high.overload_starts > 0 || high.congestion_rejects > 0,
    })
}

fn measure(args: &OverloadArgs) -> Result<OverloadBenchReport, BenchError> {
    args.sweep.only(
        "overload",
        &[Axis::Workers, Axis::Rounds, Axis::Duration, Axis::Out],
    )?;
    let workers = if args.sweep.workers.is_empty() {
        1
    } else {
        args.sweep.one_worker()?
    };
    let rounds = args.sweep.rounds(20)?;
    let duration = match args.sweep.duration {
        Some(d) => seconds("duration", d, 3600.0)?,
        None => Duration::from_secs(10),
    };
    if !(args.start_rate.is_finite() && args.start_rate > 0.0) {
        return Err(BenchError::Invalid("--start-rate must be above 0".into()));
    }
    if args.bisect > MAX_BISECT {
        return Err(BenchError::Invalid(format!(
            "--bisect is at most {MAX_BISECT}"
        )));
    }
    if !(1..=99).contains(&args.reduction) {
        return Err(BenchError::Invalid("--reduction must be 1 to 99".into()));
    }
    let machine = sweep::machine();
    let mut bed = Bed::new(args)?;
    let (probes, rate, marks) = search(&mut bed, args, workers)?;

    let mut cfg = bed.cfg.clone();
    cfg.overload.enabled = true;
    cfg.overload.high_mark = marks.high_mark;
    cfg.overload.low_mark = marks.low_mark;
    cfg.overload.t3346_s = marks.t3346_s;
    cfg.overload.traffic_load_reduction = marks.traffic_load_reduction;
    cfg.validate()
        .map_err(|e| BenchError::Invalid(format!("overload marks: {e}")))?;
    let core = bed.core(workers, cfg)?;
    let label = |f: &f64| format!("{f}×");
    let result = Sweep::new(&FACTORS, rounds).run(label, |v| {
        let factor = *v.case;
        let offered = factor * rate;
        let before = core.live_totals();
        let load = bed.load(offered, duration, args)?;
        let counters = counter_delta(&before, &core.live_totals());
        let c = case_of(factor, offered, &load, counters);
        v.say(format!(
            "{:.0}/s offered: p99 {:.1} ms, {} #22, {} shed",
            offered,
            c.registration_p99_us as f64 / 1e3,
            c.congestion_rejects,
            c.shed
        ));
        Ok(c)
    });
    core.stop()?;
    let cases: Vec<CaseReport> = result?.into_iter().filter_map(median).collect();
    let criteria = criteria(&cases);
    let ok = criteria.is_some_and(|c| {
        c.p99_within_2x && c.rest_rejected_with_22 && c.no_timeouts && c.overload_reached
    });
    Ok(OverloadBenchReport {
        scenario: "overload",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        settings: Settings {
            workers,
            suci: crate::floor::suci_label(args.suci),
            ues: args.ues,
            gnbs: args.gnbs,
            rounds,
            probe_s: args.probe,
            duration_s: duration.as_secs_f64(),
            procedure: "register-deregister, open loop",
            n2_transport: "sctp over udp (RFC 6951)",
            sbi: "inproc",
        },
        probes,
        sustainable_per_s: rate,
        marks,
        cases,
        criteria,
        ok,
    })
}

/// overload.csv: one row per probe, then per measured case.
fn csv(r: &OverloadBenchReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::from(
        "kind,offered_per_s,runs_started,runs_ok,registrations_per_s,p50_us,p99_us,\
         congestion_rejects,shed,retries_after_t3346,timeouts,other_failures\n",
    );
    for p in &r.probes {
        let timeouts = count_where(&p.failures, |k| k.contains("timeout"));
        let _ = writeln!(
            s,
            "probe,{:.1},{},{},{:.1},{},{},0,0,0,{},{}",
            p.offered_per_s,
            p.runs_started,
            p.runs_ok,
            p.registrations_per_s,
            p.registration_p50_us,
            p.registration_p99_us,
            timeouts,
            count_where(&p.failures, |_| true)
        );
    }
    for c in &r.cases {
        let _ = writeln!(
            s,
            "{}x,{:.1},{},{},{:.1},{},{},{},{},{},{},{}",
            c.factor,
            c.offered_per_s,
            c.runs_started,
            c.runs_ok,
            c.registrations_per_s,
            c.registration_p50_us,
            c.registration_p99_us,
            c.congestion_rejects,
            c.shed,
            c.retries_after_t3346,
            c.timeouts,
            c.other_failures
        );
    }
    s
}

/// overload.svg: against the offered rate, the p99 of the admitted registrations, the
/// completed rate, and the share of starts refused (#22 or shed).
fn plot(path: &std::path::Path, r: &OverloadBenchReport) -> Result<(), String> {
    let search = "search (no overload control)".to_owned();
    let control = "overload control".to_owned();
    let mut p99 = Vec::new();
    let mut done = Vec::new();
    let mut refused = Vec::new();
    for p in &r.probes {
        p99.push((
            search.clone(),
            p.offered_per_s,
            p.registration_p99_us as f64 / 1e3,
        ));
        done.push((search.clone(), p.offered_per_s, p.registrations_per_s));
    }
    for c in &r.cases {
        p99.push((
            control.clone(),
            c.offered_per_s,
            c.registration_p99_us as f64 / 1e3,
        ));
        done.push((control.clone(), c.offered_per_s, c.registrations_per_s));
        let share = if c.runs_started > 0 {
            100.0 * (c.gave_up_with_22 + c.shed) as f64 / c.runs_started as f64
        } else {
            0.0
        };
        refused.push((control.clone(), c.offered_per_s, share));
    }
    let title = format!(
        "AMF overload control: sustainable {:.0}/s, {} worker(s)",
        r.sustainable_per_s, r.settings.workers
    );
    write_xy(
        path,
        &title,
        "offered registrations/s",
        &[
            XyPanel {
                y_desc: "registration p99, ms".into(),
                points: p99,
            },
            XyPanel {
                y_desc: "registrations completed/s".into(),
                points: done,
            },
            XyPanel {
                y_desc: "starts refused (#22 or shed), %".into(),
                points: refused,
            },
        ],
    )
}

/// The human form.
fn table(r: &OverloadBenchReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "bench overload: {} worker(s), SUCI {}, {} gNBs, {} subscribers ({})",
        r.settings.workers, r.settings.suci, r.settings.gnbs, r.settings.ues, r.machine.build
    );
    let _ = writeln!(s, "search (overload control off):");
    for p in &r.probes {
        let _ = writeln!(
            s,
            "  {:>8.1}/s offered: {:>8.1}/s done, p50 {:>7.1} ms, p99 {:>7.1} ms, {} late starts, {} failed{}",
            p.offered_per_s,
            p.registrations_per_s,
            p.registration_p50_us as f64 / 1e3,
            p.registration_p99_us as f64 / 1e3,
            p.late_starts,
            count_where(&p.failures, |_| true),
            if p.sustainable {
                ""
            } else {
                "  (not sustainable)"
            }
        );
    }
    let m = &r.marks;
    let _ = writeln!(
        s,
        "sustainable: {:.1}/s; registrations in flight at 0.8×: {:.1} (mean latency), {:.1} (p99 latency); marks per worker high {} low {}, T3346 {} s, reduction {} %",
        r.sustainable_per_s, m.in_flight_at_0_8, m.in_flight_p99_at_0_8, m.high_mark, m.low_mark, m.t3346_s, m.traffic_load_reduction
    );
    for c in &r.cases {
        let _ = writeln!(
            s,
            "  {}× ({:.1}/s): {:.1}/s admitted, p50 {:.1} ms, p99 {:.1} ms; {} OVERLOAD START ({:.1} s), {} shed, {} #22 + T3346 ({} retried, {} gave up), {} timeouts, {} other failures",
            c.factor,
            c.offered_per_s,
            c.registrations_per_s,
            c.registration_p50_us as f64 / 1e3,
            c.registration_p99_us as f64 / 1e3,
            c.overload_starts,
            c.overload_s,
            c.shed,
            c.congestion_rejects,
            c.retries_after_t3346,
            c.gave_up_with_22,
            c.timeouts,
            c.other_failures
        );
    }
    if let Some(c) = &r.criteria {
        let _ = writeln!(
            s,
            "criteria at 2×: p99 ratio {:.2} (≤ 2: {}), the rest #22 or shed: {}, no timeouts: {}, overload reached: {}",
            c.p99_ratio, c.p99_within_2x, c.rest_rejected_with_22, c.no_timeouts, c.overload_reached
        );
    }
    s
}

/// `steer5g bench overload`.
pub(crate) fn run(json: bool, args: &OverloadArgs) -> Result<(), BenchError> {
    let mut out = Out::create(&args.sweep.out_or("bench-results"))?;
    let report = measure(args)?;
    out.json("overload.json", &report)?;
    out.text("overload.csv", csv(&report))?;
    out.plot("overload.svg", |p| plot(p, &report))?;
    if json {
        crate::print_json(&report)?;
    } else {
        print!("{}", table(&report));
        println!("wrote {}", out.list());
    }
    if report.ok {
        Ok(())
    } else {
        Err(BenchError::Failed(match report.criteria {
            Some(c) => format!(
                "overload criteria missed at 2×: p99 ratio {:.2}, rest #22 or shed {}, no timeouts {}, overload reached {}",
                c.p99_ratio, c.rest_rejected_with_22, c.no_timeouts, c.overload_reached
            ),
            None => "the 0.8× and 2× cases did not both run".into(),
        }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn case(factor: f64, p99: u64, other: u64, timeouts: u64, starts: u64) -> CaseReport {
        CaseReport {
            factor,
            registration_p99_us: p99,
            other_failures: other,
            timeouts,
            overload_starts: starts,
            ..CaseReport::default()
        }
    }

    #[test]
    fn criteria_compare_2x_with_0_8x() {
        let c = criteria(&[case(0.8, 10_000, 0, 0, 0), case(2.0, 19_000, 0, 0, 3)]).unwrap();
        assert!(c.p99_within_2x && c.rest_rejected_with_22 && c.no_timeouts);
        assert!(c.overload_reached);
        let c = criteria(&[case(0.8, 10_000, 0, 0, 0), case(2.0, 21_000, 2, 1, 0)]).unwrap();
        assert!(!c.p99_within_2x && !c.rest_rejected_with_22 && !c.no_timeouts);
        assert!(!c.overload_reached);
        assert!(criteria(&[case(0.8, 1, 0, 0, 0)]).is_none());
    }

    #[test]
    fn congestion_rejects_are_told_from_other_failures_by_label() {
        use ran::load::driver::FailureCause;
        let label = format!(
            "registration: {}",
            FailureCause::Rejected(proto::nas::FiveGmmCause::Congestion).label()
        );
        assert!(is_congestion(&label));
        assert!(!is_congestion("registration: timeout"));
    }
}
