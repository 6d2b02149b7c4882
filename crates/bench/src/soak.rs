//! `steer5g bench soak --minutes N`: mixed procedures at a steady rate for N minutes against
//! an in-process core, with the resources that must not leak sampled as it goes.
//!
//! The load is rounds, one started every `--round-secs`: each round's gNBs set up N2, every
//! UE of the round registers, establishes its PDU sessions, sends UDP probes through the
//! UPF to the DN and back (when the user-plane bed can be set up), releases its sessions and
//! deregisters; then the gNBs go. The same subscribers come back every round, so the SQNs
//! and the 5G-GUTIs turn over too.
//!
//! Sampled every `--sample-secs` and at the quiet point after every round (no UE in
//! flight): the core's contexts (AMF, AUSF, SMF, as the workers publish them), the UPF's
//! sessions and datapath entries (XDP map entries on the bed, rules in memory without it),
//! this process's file descriptors (/proc/self/fd) and its resident set (VmRSS).
//!
//! The verdict: every round ok; at the quiet point after the last round every count equals
//! its value at the quiet point after the first round (the warm-up round opens what stays
//! open: the bed's sockets, the SBI connections); the largest RSS sample of the last minute
//! exceeds that of the first minute by less than [`MAX_RSS_GROWTH_KIB`]. Anything else
//! fails the run (exit 1).
//!
//! Files: soak.json (settings, machine, rounds, samples, verdict), soak.csv (one row per
//! sample) and soak.svg (RSS, descriptors and held contexts against time).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use rand::rngs::OsRng;
use sbi::{NfType, StaticDirectory};
use serde::Serialize;
use steer5g_config::{Config, Transport as TransportKind};
use steer5g_core::{Core, CoreHandle, CoreOptions, SbiMode, SmfOptions, UpfOptions};
use upf::datapath::Datapath as _;

use super::machine::Machine;
use super::sweep::Out;
use crate::BenchError;
use lab::bed::{PathKind, UserPlaneBed};
use ran::load::driver::MAX_PDU_SESSIONS;
use ran::load::{suci_scheme, LoadConfig, SessionPlan, SuciArg};
use ran::userplane::traffic::TrafficPlan;
use ran::userplane::UpSession;

/// RSS growth between the first minute and the last at which the soak fails.
pub(crate) const MAX_RSS_GROWTH_KIB: u64 = 16 * 1024;
/// The SBI port of the in-process NFs.
const SBI_PORT: u16 = 7777;
/// The longest soak: every load loop is bounded.
const MAX_MINUTES: f64 = 24.0 * 60.0;
/// How long the quiet point after a round waits for the last releases to reach the UPF.
const SETTLE: Duration = Duration::from_secs(5);
/// How long a round's probes wait for the UPF to forward every session's downlink.
const FORWARDING_WAIT: Duration = Duration::from_secs(5);
/// Probes per round, and their rate.
const PROBES: u64 = 200;
const PROBE_PPS: u64 = 1000;

/// `steer5g bench soak`.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// How long to offer load, in minutes (fractions allowed); then the last round ends and
    /// the counts are compared.
    #[arg(long, default_value_t = 3.0, value_name = "N")]
    pub(crate) minutes: f64,
    /// UEs of each round (the same subscribers every round).
    #[arg(long, default_value_t = 40, value_name = "N")]
    pub(crate) ues: u64,
    /// A round starts every this many seconds (the steady rate: UEs per round over this).
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub(crate) round_secs: f64,
    /// PDU sessions of each UE, at most 15.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) pdu_sessions: u8,
    /// gNBs of each round.
    #[arg(long, default_value_t = 2, value_name = "G")]
    pub(crate) gnbs: u32,
    /// Core worker threads.
    #[arg(long, default_value_t = 2, value_name = "W")]
    pub(crate) workers: u16,
    /// Seconds between samples.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub(crate) sample_secs: f64,
    /// `auto` carries each round's probes through a UPF with the XDP fast path in network
    /// namespaces when this process may create them, else runs the UPF's rules in memory
    /// and says why; `xdp` insists (exit 3 without the privilege); `off` never tries.
    #[arg(long, value_enum, default_value_t = SoakUserPlane::Auto)]
    pub(crate) user_plane: SoakUserPlane,
    /// Give up on NG Setup, and on each procedure, after this many seconds.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub(crate) timeout: f64,
    /// Directory for soak.json, .csv and .svg.
    #[arg(long, default_value = "bench-results", value_name = "DIR")]
    pub(crate) out: PathBuf,
}

/// `steer5g bench soak --user-plane`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SoakUserPlane {
    /// The XDP bed if it can be set up, else rules in memory.
    Auto,
    /// The XDP bed or nothing.
    Xdp,
    /// Rules in memory, no traffic.
    Off,
}

/// The resources watched, at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    pub(crate) amf_ues: u64,
    /// Contexts of deregistered UEs kept for their 5G-GUTI: one per SUPI, so the same UEs
    /// round after round leave as many as after the first.
    pub(crate) amf_idle: u64,
    pub(crate) ausf: u64,
    pub(crate) smf: u64,
    /// Datapath entries (XDP map entries, or in-memory rules): uplink, downlink, usage.
    pub(crate) upf_entries: u64,
    /// Open file descriptors of this process.
    pub(crate) fds: u64,
}

impl Counts {
    /// `(name, start, end)` of every count that differs.
    fn differences(&self, end: &Counts) -> Vec<(&'static str, u64, u64)> {
        let pairs = [
            ("amf_ues", self.amf_ues, end.amf_ues),
            // TS 23.502 §4.2.2.2.2: a new registration of a SUPI replaces its kept context.
            ("amf_idle", self.amf_idle, end.amf_idle),
            ("ausf", self.ausf, end.ausf),
            ("smf", self.smf, end.smf),
            ("upf_entries", self.upf_entries, end.upf_entries),
            ("fds", self.fds, end.fds),
        ];
        pairs.into_iter().filter(|(_, a, b)| a != b).collect()
    }
}

/// One sample.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Sample {
    /// Seconds since the first round started.
    pub(crate) t_s: f64,
    /// Rounds finished when it was taken.
    pub(crate) rounds: u64,
    /// Taken at a quiet point (after a round, nothing in flight).
    pub(crate) quiet: bool,
    #[serde(flatten)]
    pub(crate) counts: Counts,
    pub(crate) rss_kib: u64,
}

/// One round.
#[derive(Debug, Clone, Serialize)]
struct Round {
    n: u64,
    started_s: f64,
    took_s: f64,
    ok: bool,
    registrations: u64,
    sessions: u64,
    probes_sent: u64,
    probes_back: u64,
    /// Failed procedures, by cause.
    failures: std::collections::BTreeMap<String, u64>,
}

/// Whether the soak held: what the report and the exit code say.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Verdict {
    pub(crate) ok: bool,
    /// The quiet point after the first round.
    pub(crate) start: Option<Counts>,
    /// The quiet point after the last round.
    pub(crate) end: Option<Counts>,
    /// Largest RSS sample of the first minute and of the last, KiB.
    pub(crate) rss_first_minute_kib: u64,
    pub(crate) rss_last_minute_kib: u64,
    pub(crate) rss_growth_kib: i64,
    pub(crate) failed_rounds: u64,
    /// Why it failed, one line each.
    pub(crate) problems: Vec<String>,
}

/// Judges `samples` (in time order) and the count of failed rounds.
pub(crate) fn verdict(samples: &[Sample], failed_rounds: u64) -> Verdict {
    let quiet: Vec<&Sample> = samples.iter().filter(|s| s.quiet).collect();
    let start = quiet.first().map(|s| s.counts);
    let end = quiet.last().map(|s| s.counts);
    let t_end = samples.last().map_or(0.0, |s| s.t_s);
    let max_rss = |f: &dyn Fn(&Sample) -> bool| {
        samples
            .iter()
            .filter(|s| f(s))
            .map(|s| s.rss_kib)
            .max()
            .unwrap_or(0)
    };
    let first = max_rss(&|s| s.t_s < 60.0);
    let last = max_rss(&|s| s.t_s >= t_end - 60.0);
    let growth = i64::try_from(last).unwrap_or(i64::MAX) - i64::try_from(first).unwrap_or(0);
    let mut problems = Vec::new();
    if failed_rounds > 0 {
        problems.push(format!("{failed_rounds} round(s) had failed procedures"));
    }
    match (start, end, quiet.len()) {
        (Some(a), Some(b), n) if n >= 2 => {
            for (name, x, y) in a.differences(&b) {
                problems.push(format!("{name}: {x} after the first round, {y} at the end"));
            }
        }
        _ => problems.push("fewer than two rounds: nothing to compare".to_owned()),
    }
    if growth >= i64::try_from(MAX_RSS_GROWTH_KIB).unwrap_or(i64::MAX) {
        problems.push(format!(
            "RSS grew by {growth} KiB between the first minute and the last (limit {MAX_RSS_GROWTH_KIB})"
        ));
    }
    Verdict {
        ok: problems.is_empty(),
        start,
        end,
        rss_first_minute_kib: first,
        rss_last_minute_kib: last,
        rss_growth_kib: growth,
        failed_rounds,
        problems,
    }
}

#[derive(Serialize)]
struct SoakReport<'a> {
    scenario: &'static str,
    ok: bool,
    settings: Settings,
    machine: Machine,
    /// What carried the probes, or why none were sent.
    user_plane: String,
    verdict: &'a Verdict,
    rounds: &'a [Round],
    samples: &'a [Sample],
}

#[derive(Serialize)]
struct Settings {
    minutes: f64,
    ues: u64,
    round_secs: f64,
    pdu_sessions: u8,
    gnbs: u32,
    workers: u16,
    sample_secs: f64,
    /// UE runs started per second.
    ues_per_s: f64,
}

/// The datapath the soak's UPF forwards on.
enum UserPlane {
    Bed(Box<Mutex<UserPlaneBed>>),
    Memory(upf::MemoryDatapath, String),
}

impl UserPlane {
    fn setup(args: &SoakArgs, pfcp: SocketAddr) -> Result<Self, BenchError> {
        if args.user_plane == SoakUserPlane::Off || args.pdu_sessions == 0 {
            return Ok(UserPlane::Memory(
                upf::MemoryDatapath::new(),
                "rules in memory (--user-plane off), no probes".to_owned(),
            ));
        }
        let tag = format!("soak{}", std::process::id() % 100_000);
        match UserPlaneBed::start(PathKind::Xdp, &tag, pfcp) {
            Ok(bed) => Ok(UserPlane::Bed(Box::new(Mutex::new(bed)))),
            Err(e) if args.user_plane == SoakUserPlane::Auto => {
                let why = format!("rules in memory, no probes: {}", e.0);
                tracing::warn!("{why}");
                Ok(UserPlane::Memory(upf::MemoryDatapath::new(), why))
            }
            Err(e) => Err(BenchError::Privilege(format!("--user-plane xdp: {e}"))),
        }
    }

    fn describe(&self) -> String {
        match self {
            UserPlane::Bed(b) => format!(
                "{} path in network namespaces, {PROBES} UDP probes per round",
                b.lock().unwrap_or_else(PoisonError::into_inner).path()
            ),
            UserPlane::Memory(_, why) => why.clone(),
        }
    }

    /// Datapath entries now (`u64::MAX` if they cannot be read).
    fn entries(&self) -> u64 {
        match self {
            UserPlane::Bed(b) => b
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entries()
                .map_or(u64::MAX, |n| n as u64),
            UserPlane::Memory(d, _) => d
                .entries()
                .map_or(u64::MAX, |e| (e.uplink + e.downlink + e.usage) as u64),
        }
    }

    /// The probes of a round: (sent, back), or why they could not run.
    fn probes(&self, sessions: &[UpSession]) -> Result<(u64, u64), String> {
        let UserPlane::Bed(bed) = self else {
            return Ok((0, 0));
        };
        let bed = bed.lock().unwrap_or_else(PoisonError::into_inner);
        let deadline = Instant::now() + FORWARDING_WAIT;
        while !bed.forwarding(sessions) {
            if Instant::now() > deadline {
                return Err("the UPF did not forward every session's downlink".to_owned());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut plan = TrafficPlan::udp(bed.dn(), 256, PROBE_PPS, PROBES);
        plan.max_duration = Duration::from_secs(10);
        let r = bed
            .run_traffic(sessions, &plan)
            .map_err(|e| e.to_string())?;
        Ok((r.sent, r.received))
    }
}

/// This process's open file descriptors.
fn fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

/// This process's resident set, KiB (VmRSS).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn counts(core: &CoreHandle, up: &UserPlane) -> Counts {
    let h = core.held_now();
    Counts {
        amf_ues: h.amf_ues,
        amf_idle: h.amf_idle,
        ausf: h.ausf,
        smf: h.smf,
        upf_entries: up.entries(),
        fds: fds(),
    }
}

fn check(args: &SoakArgs) -> Result<(), BenchError> {
    let pos = |v: f64| v.is_finite() && v > 0.0;
    if !pos(args.minutes) || args.minutes > MAX_MINUTES {
        return Err(BenchError::Invalid(format!(
            "--minutes {}: more than 0, at most {MAX_MINUTES}",
            args.minutes
        )));
    }
    if !pos(args.round_secs) || !pos(args.sample_secs) || !pos(args.timeout) {
        return Err(BenchError::Invalid(
            "--round-secs, --sample-secs and --timeout must be positive numbers of seconds".into(),
        ));
    }
    if args.ues == 0 || args.gnbs == 0 || args.workers == 0 {
        return Err(BenchError::Invalid(
            "--ues, --gnbs and --workers must be at least 1".into(),
        ));
    }
    if args.pdu_sessions > MAX_PDU_SESSIONS {
        return Err(BenchError::Invalid(format!(
            "--pdu-sessions {}: at most {MAX_PDU_SESSIONS}",
            args.pdu_sessions
        )));
    }
    Ok(())
}

/// What the soak measured.
struct Outcome {
    user_plane: String,
    rounds: Vec<Round>,
    samples: Vec<Sample>,
}

fn soak(args: &SoakArgs) -> Result<Outcome, BenchError> {
    let temp = crate::corecase::temp_data_dir("soak")?;
    let slot = super::corecase::next_slot();
    let mut cfg = Config::default();
    cfg.n2.addr = Ipv4Addr::new(127, 0, 31, slot);
    cfg.n2.transports = vec![TransportKind::Udp];
    let ausf = SocketAddrV4::new(Ipv4Addr::new(127, 0, 32, slot), SBI_PORT);
    let udm = SocketAddrV4::new(Ipv4Addr::new(127, 0, 33, slot), SBI_PORT);
    let up_addr = Ipv4Addr::new(127, 0, 34, slot);

    let first = cfg.plmn.supi(1);
    let subscribers = store::generate::generate(&first, args.ues, &mut OsRng)
        .map_err(|e| BenchError::Invalid(format!("--ues {}: {e}", args.ues)))?;
    let key_file = crate::corecase::provision(temp.path(), &cfg, &subscribers)?;
    let (suci, suci_label) = suci_scheme(SuciArg::A, &key_file)?;

    let up = Arc::new(UserPlane::setup(args, SocketAddr::from((up_addr, 0)))?);
    let mut directory = StaticDirectory::new();
    directory.set(NfType::Amf, format!("http://{}:{SBI_PORT}", cfg.n2.addr));
    directory.set(NfType::Ausf, format!("http://{ausf}"));
    directory.set(NfType::Udm, format!("http://{udm}"));
    let mut opts = CoreOptions::new(temp.path().to_path_buf());
    opts.workers = args.workers;
    opts.sbi = SbiMode::H2c;
    opts.config = cfg.clone();
    opts.directory = directory;
    let mut gnb_n3 = None;
    match up.as_ref() {
        UserPlane::Bed(bed) => {
            let (smf, n3) = crate::corecase::bed_smf(bed)?;
            (opts.smf, gnb_n3) = (Some(smf), Some(n3));
        }
        UserPlane::Memory(datapath, _) => {
            opts.smf = Some(SmfOptions {
                pfcp_ip: up_addr,
                ..SmfOptions::default()
            });
            opts.upf = Some(UpfOptions {
                pfcp: SocketAddr::from((up_addr, 0)),
                n3: up_addr,
                datapath: datapath.clone(),
            });
        }
    }
    let core = Core::start(opts)?;
    let identity = crate::corecase::gnb_identity(&cfg)?;

    let probes: Arc<Mutex<(u64, u64)>> = Arc::default();
    let hook_up = Arc::clone(&up);
    let hook_probes = Arc::clone(&probes);
    let plan = LoadConfig {
        on_sessions_up: Some(Arc::new(move |s: &[UpSession]| {
            let (sent, back) = hook_up.probes(s)?;
            *hook_probes.lock().unwrap_or_else(PoisonError::into_inner) = (sent, back);
            Ok(serde_json::json!({ "sent": sent, "back": back }))
        })),
        ..LoadConfig::register_deregister(
            crate::corecase::ran_config(
                identity,
                &cfg,
                TransportKind::Udp,
                args.gnbs,
                1,
                args.timeout,
            ),
            subscribers,
            (suci, suci_label),
            usize::try_from(args.ues).unwrap_or(usize::MAX),
            args.ues,
            SessionPlan {
                per_ue: args.pdu_sessions,
                gnb_n3,
                ..SessionPlan::default()
            },
        )
    };

    let total = Duration::from_secs_f64(args.minutes * 60.0);
    let every = Duration::from_secs_f64(args.round_secs);
    let sample_every = Duration::from_secs_f64(args.sample_secs);
    let bar = ProgressBar::new(total.as_secs().max(1));
    bar.set_style(
        ProgressStyle::with_template("soak {elapsed_precise} [{bar:30}] {pos}/{len} s {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let t0 = Instant::now();
    let mut rounds = Vec::new();
    let mut samples = Vec::new();
    let mut next_sample = t0;
    let sample = |rounds: u64, quiet: bool| Sample {
        t_s: t0.elapsed().as_secs_f64(),
        rounds,
        quiet,
        counts: counts(&core, &up),
        rss_kib: rss_kib(),
    };
    let mut n: u64 = 0;
    let result = std::thread::scope(|scope| -> Result<(), BenchError> {
        while t0.elapsed() < total {
            let started = t0 + every.mul_f64(n as f64);
            let at = Instant::now();
            *probes.lock().unwrap_or_else(PoisonError::into_inner) = (0, 0);
            let run = scope.spawn(|| ran::load::run(&plan));
            // Samples while the round runs, on the sampling grid.
            while !run.is_finished() {
                if Instant::now() >= next_sample {
                    samples.push(sample(n, false));
                    next_sample += sample_every;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let load = run
                .join()
                .map_err(|_| BenchError::Failed("the load generator panicked".into()))??;
            n += 1;
            let (sent, back) = *probes.lock().unwrap_or_else(PoisonError::into_inner);
            let ok = load.ok && load.failures.is_empty() && sent == back;
            let proc_done = |p: &str| load.procedures.get(p).map_or(0, |p| p.completed);
            rounds.push(Round {
                n,
                started_s: at.duration_since(t0).as_secs_f64(),
                took_s: at.elapsed().as_secs_f64(),
                ok,
                registrations: proc_done("registration"),
                sessions: proc_done("session_establishment"),
                probes_sent: sent,
                probes_back: back,
                failures: load.failures.clone(),
            });
            // The quiet point: the last releases may still be on their way to the UPF.
            let settle = Instant::now() + SETTLE;
            let mut quiet = sample(n, true);
            while (quiet.counts.upf_entries > 0 || quiet.counts.smf > 0) && Instant::now() < settle
            {
                std::thread::sleep(Duration::from_millis(20));
                quiet = sample(n, true);
            }
            samples.push(quiet);
            bar.set_position(t0.elapsed().as_secs().min(total.as_secs()));
            bar.set_message(format!(
                "round {n} {}; RSS {} MiB, {} fds",
                if ok { "ok" } else { "FAILED" },
                quiet.rss_kib / 1024,
                quiet.counts.fds
            ));
            // The next round on the grid; a round that overran starts the next at once.
            let next = started + every;
            while Instant::now() < next && t0.elapsed() < total {
                if Instant::now() >= next_sample {
                    samples.push(sample(n, false));
                    next_sample += sample_every;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    });
    bar.finish_and_clear();
    drop(plan);
    let stopped = core.stop();
    let user_plane = up.describe();
    if let Ok(UserPlane::Bed(b)) = Arc::try_unwrap(up) {
        b.into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .stop();
    }
    result?;
    stopped?;
    Ok(Outcome {
        user_plane,
        rounds,
        samples,
    })
}

fn csv(samples: &[Sample]) -> String {
    let mut s =
        String::from("t_s,rounds,quiet,amf_ues,amf_idle,ausf,smf,upf_entries,fds,rss_kib\n");
    for x in samples {
        let c = &x.counts;
        s.push_str(&format!(
            "{:.1},{},{},{},{},{},{},{},{},{}\n",
            x.t_s,
            x.rounds,
            x.quiet,
            c.amf_ues,
            c.amf_idle,
            c.ausf,
            c.smf,
            c.upf_entries,
            c.fds,
            x.rss_kib
        ));
    }
    s
}

/// soak.svg: RSS (MiB), open descriptors, and contexts held (AMF + SMF) and UPF entries
/// against time, one panel each.
fn write_svg(path: &Path, samples: &[Sample]) -> Result<(), String> {
    type Get = fn(&Sample) -> f64;
    let panels: [(&str, Get); 3] = [
        ("RSS, MiB", |s| s.rss_kib as f64 / 1024.0),
        ("open file descriptors", |s| s.counts.fds as f64),
        ("AMF + SMF contexts, UPF entries", |s| {
            (s.counts.amf_ues + s.counts.smf + s.counts.upf_entries) as f64
        }),
    ];
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::new(path, (1500, 450)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled("steer5g soak: resources against time", ("sans-serif", 20))
        .map_err(|e| err(&e))?;
    let tmax = samples.last().map_or(1.0, |s| s.t_s).max(1.0);
    for ((desc, get), area) in panels.iter().zip(root.split_evenly((1, 3)).iter()) {
        let ymax = samples.iter().map(get).fold(1.0f64, f64::max) * 1.1;
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(0.0..tmax, 0.0..ymax)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc(*desc)
            .draw()
            .map_err(|e| err(&e))?;
        chart
            .draw_series(LineSeries::new(
                samples.iter().map(|s| (s.t_s, get(s))),
                &RGBColor(31, 119, 180),
            ))
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// `steer5g bench soak`: the run, its files, its report; an error (exit 1) when a round
/// failed, a count did not come back, or RSS grew too much.
pub(crate) fn run(json: bool, args: &SoakArgs) -> Result<(), BenchError> {
    check(args)?;
    let mut out = Out::create(&args.out)?;
    let machine = Machine::probe();
    let o = soak(args)?;
    let failed = o.rounds.iter().filter(|r| !r.ok).count() as u64;
    let v = verdict(&o.samples, failed);
    let report = SoakReport {
        scenario: "soak",
        ok: v.ok,
        settings: Settings {
            minutes: args.minutes,
            ues: args.ues,
            round_secs: args.round_secs,
            pdu_sessions: args.pdu_sessions,
            gnbs: args.gnbs,
            workers: args.workers,
            sample_secs: args.sample_secs,
            ues_per_s: args.ues as f64 / args.round_secs,
        },
        machine,
        user_plane: o.user_plane.clone(),
        verdict: &v,
        rounds: &o.rounds,
        samples: &o.samples,
    };
    out.json("soak.json", &report)?;
    out.text("soak.csv", csv(&o.samples))?;
    out.plot("soak.svg", |p| write_svg(p, &o.samples))?;
    if json {
        crate::print_json(&report)?;
    } else {
        println!(
            "steer5g soak: {} rounds of {} UEs ({} PDU session(s) each) every {} s for {} min; user plane: {}",
            o.rounds.len(),
            args.ues,
            args.pdu_sessions,
            args.round_secs,
            args.minutes,
            o.user_plane
        );
        let show = |c: &Option<Counts>| {
            c.map_or_else(
                || "-".to_owned(),
                |c| {
                    format!(
                        "AMF {} (+{} idle), AUSF {}, SMF {}, UPF {} entries, {} fds",
                        c.amf_ues, c.amf_idle, c.ausf, c.smf, c.upf_entries, c.fds
                    )
                },
            )
        };
        println!("start (after round 1): {}", show(&v.start));
        println!("end   (after the last): {}", show(&v.end));
        println!(
            "RSS: {} MiB in the first minute, {} MiB in the last ({:+} KiB, limit {} MiB)",
            v.rss_first_minute_kib / 1024,
            v.rss_last_minute_kib / 1024,
            v.rss_growth_kib,
            MAX_RSS_GROWTH_KIB / 1024
        );
        println!("rounds failed: {}", v.failed_rounds);
        for p in &v.problems {
            println!("problem: {p}");
        }
        println!("result: {}", if v.ok { "ok" } else { "FAILED" });
        println!("wrote {}", out.list());
    }
    if v.ok {
        Ok(())
    } else {
        Err(BenchError::Failed(format!(
            "soak: {}",
            v.problems.join("; ")
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn s(t_s: f64, quiet: bool, fds: u64, smf: u64, rss_kib: u64) -> Sample {
        Sample {
            t_s,
            rounds: 0,
            quiet,
            counts: Counts {
                fds,
                smf,
                ..Counts::default()
            },
            rss_kib,
        }
    }

    #[test]
    fn a_soak_that_comes_back_passes() {
        let v = verdict(
            &[
                s(0.0, false, 10, 5, 1000),
                s(5.0, true, 12, 0, 2000),
                s(100.0, false, 40, 30, 9000),
                s(180.0, true, 12, 0, 9000),
            ],
            0,
        );
        assert!(v.ok, "{v:?}");
        assert_eq!(v.rss_growth_kib, 7000);
    }

    #[test]
    fn a_leaked_descriptor_a_context_or_a_failed_round_fails_it() {
        let v = verdict(&[s(5.0, true, 12, 0, 1), s(180.0, true, 13, 1, 1)], 1);
        assert!(!v.ok);
        assert_eq!(v.problems.len(), 3, "{:?}", v.problems);
        assert!(v.problems.iter().any(|p| p.starts_with("fds: 12")));
        assert!(v.problems.iter().any(|p| p.starts_with("smf: 0")));
    }

    #[test]
    fn idle_contexts_growing_round_after_round_fail_it() {
        let idle = |amf_idle| Sample {
            counts: Counts {
                amf_idle,
                ..Counts::default()
            },
            ..s(0.0, true, 1, 0, 1)
        };
        assert!(verdict(&[idle(40), idle(40)], 0).ok);
        let v = verdict(&[idle(40), idle(1440)], 0);
        assert_eq!(
            v.problems,
            ["amf_idle: 40 after the first round, 1440 at the end"]
        );
    }

    #[test]
    fn rss_growth_of_16_mib_fails_it() {
        let grow = |kib| {
            verdict(
                &[s(5.0, true, 1, 0, 1000), s(180.0, true, 1, 0, 1000 + kib)],
                0,
            )
        };
        assert!(grow(MAX_RSS_GROWTH_KIB - 1).ok);
        assert!(!grow(MAX_RSS_GROWTH_KIB).ok);
    }

    #[test]
    fn one_round_is_not_enough_to_judge() {
        assert!(!verdict(&[s(5.0, true, 1, 0, 1)], 0).ok);
        assert!(!verdict(&[], 0).ok);
    }

    #[test]
    fn the_csv_has_a_row_per_sample() {
        let c = csv(&[s(0.0, false, 3, 0, 7), s(1.0, true, 3, 0, 8)]);
        assert_eq!(c.lines().count(), 3);
        assert!(c.lines().nth(2).unwrap().starts_with("1.0,0,true,"));
    }
}
