//! `steer5g demo`: the whole core (AMF, AUSF, UDM on the thread-per-core runtime) and the UE
//! load generator in one process on the loopback plan, with a report.
//!
//! The demo's defaults, chosen so that it runs anywhere: SCTP over UDP encapsulation (no
//! privilege), h2c SBI on loopback, SUCI Profile A, a fresh data directory provisioned with N
//! subscribers. The core runs an SMF and an in-process UPF (rules in memory, no packet forwarding)
//! as `steer5g core --smf --upf-inproc` does. Every UE registers, establishes `--pdu-sessions` PDU
//! sessions, holds them until every UE holds its own (where the user-plane stage goes:
//! [`user_plane_stage`]), releases them and deregisters; the run succeeds only if every UE went
//! through every stage and the UPF holds no rule at the end.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use ran::load::args::TransportArg;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use proto::nas::{CipheringAlgorithm, IntegrityAlgorithm};
use ran::userplane::traffic::{TrafficPlan, TrafficReport};
use ran::userplane::UpSession;
use rand::rngs::OsRng;
use serde::Serialize;
use steer5g_config::{Config, Transport as TransportKind};
use steer5g_core::{BpfPolicy, Core, CoreReport, SbiMode, SmfOptions, StateMode, UpfOptions};
use upf::datapath::Datapath as _;

use crate::BenchError;
use lab::bed::{BedReport, PathKind, UserPlaneBed};
use ran::load::driver::MAX_PDU_SESSIONS;
use ran::load::report::SctpCounters;
use ran::load::{suci_scheme, LoadConfig, LoadReport, SessionPlan, SuciArg};

/// The in-process UPF's PFCP and N3 address (the loopback plan's 127.0.0.7); its PFCP port is the
/// OS's choice, so that demos can run side by side.
const UPF_ADDR: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 7);
/// How long the UPF may take to drop the last sessions' rules once the UEs are gone (the
/// SMF deletes them after the N2 side is done).
const RULES_SETTLE: Duration = Duration::from_secs(5);
/// How long the user-plane stage waits for the UPF to forward every session's downlink.
const FORWARDING_WAIT: Duration = Duration::from_secs(5);
/// Largest share of probes a user-plane round may lose and still pass: the path is local
/// veths, so anything lost is a fault, but one late reply should not fail a demo.
const MAX_LOSS: f64 = 0.01;

/// The flags of `steer5g demo` that are the demo's own (the cli adds the N2 listener and
/// the core's NAS and BPF flags).
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Number of UEs (subscribers provisioned in the fresh data directory).
    #[arg(long, default_value_t = 1000)]
    pub(crate) ues: u64,
    /// Number of gNB emulators.
    #[arg(long, default_value_t = 4)]
    pub(crate) gnbs: u32,
    /// UEs in flight at once (closed loop).
    #[arg(long, value_name = "K", default_value_t = 100)]
    pub(crate) concurrency: usize,
    /// Where per-UE state lives in the core.
    #[arg(long, value_enum, default_value_t = DemoState::Sharded)]
    pub(crate) state: DemoState,
    /// Core worker threads (default: one per CPU).
    #[arg(long)]
    pub(crate) workers: Option<u16>,
    /// How the AMF reaches the AUSF and UDM.
    #[arg(long, value_enum, default_value_t = DemoSbi::H2c)]
    pub(crate) sbi: DemoSbi,
    /// Data directory (default: a fresh temporary one, removed at the end). A store that
    /// already holds a subscriber of the demo's range is refused, never overwritten: pick a
    /// free range with `--first-supi`.
    #[arg(long, value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// The first of the demo's `--ues` subscribers (`imsi-` and 15 digits, the others
    /// follow it); default: MSIN 1 of the configured PLMN.
    #[arg(long, value_name = "SUPI")]
    pub(crate) first_supi: Option<String>,
    /// SCTP transport between the gNBs and the AMF (udp needs no privilege).
    #[arg(long, value_enum, default_value_t = TransportArg::Udp, env = "STEER5G_N2_TRANSPORT")]
    pub(crate) transport: TransportArg,
    /// The AUSF's SBI address (h2c).
    #[arg(long, default_value = "127.0.0.11:7777")]
    pub(crate) ausf_addr: SocketAddrV4,
    /// The UDM's SBI address (h2c).
    #[arg(long, default_value = "127.0.0.12:7777")]
    pub(crate) udm_addr: SocketAddrV4,
    /// PDU sessions each UE establishes after registering and releases before
    /// de-registering (through the core's SMF and a UPF), at most 15.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) pdu_sessions: u8,
    /// The user-plane stage: `auto` sends UE traffic through a UPF with the XDP fast path in
    /// three network namespaces (ran, upf, dn) when the process may create them (root,
    /// CAP_BPF) and otherwise runs the control plane only and says why; `xdp` and `tun`
    /// insist on that path (exit 3 without the privilege); `off` runs no traffic.
    #[arg(long, value_enum, default_value_t = DemoUserPlane::Auto)]
    pub(crate) user_plane: DemoUserPlane,
    /// Inner IP packet length of the user-plane stage's probes, in octets (64..=1400).
    #[arg(long, value_name = "OCTETS", default_value_t = 256)]
    pub(crate) packet_size: usize,
    /// Probes per second over all sessions, for each of the UDP and ICMP rounds (the name
    /// `steer5g ran` uses too, where `--rate` is the UEs' start rate).
    #[arg(long, value_name = "PPS", default_value_t = 2000)]
    pub(crate) traffic_rate: u64,
    /// Seconds of sending in each of the UDP and ICMP rounds.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub(crate) traffic_duration: f64,
    /// Give up on NG Setup, and on each procedure, after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub(crate) timeout: f64,
}

/// `steer5g demo --state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DemoState {
    /// Per-worker shards, messages handed to the owner.
    Sharded,
    /// One shared map behind locks (the baseline).
    Locked,
}

/// `steer5g demo --user-plane`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DemoUserPlane {
    /// The XDP fast path if this process may set it up, else control plane only.
    Auto,
    /// The XDP fast path (with the TUN path behind it for what XDP passes up).
    Xdp,
    /// The sockets/TUN user-space path.
    Tun,
    /// No traffic.
    Off,
}

/// `steer5g demo --sbi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DemoSbi {
    /// HTTP/2 cleartext on loopback.
    H2c,
    /// In-process calls between co-located NFs.
    Inproc,
}

/// What the demo takes from the cli's reading of the configuration and of the core's flags.
#[derive(Debug, Clone)]
pub struct CoreSetup {
    /// The network and the N2 addresses.
    pub cfg: Config,
    /// NAS integrity algorithms the AMF may select, most preferred first.
    pub integrity: Vec<IntegrityAlgorithm>,
    /// NAS ciphering algorithms the AMF may select, most preferred first.
    pub ciphering: Vec<CipheringAlgorithm>,
    /// Whether a failed sk_reuseport program load is fatal.
    pub bpf: BpfPolicy,
}

#[derive(Serialize)]
struct DemoReport<'a> {
    demo: &'static str,
    ok: bool,
    ues: u64,
    pdu_sessions: u8,
    workers: u16,
    state: &'static str,
    sbi: &'static str,
    data_dir: String,
    /// Each stage in order, with its count and latency.
    stages: &'a [Stage],
    ran: &'a LoadReport,
    amf: AmfSummary,
    core: CoreSummary,
    /// The SMF's and UPF's side (absent without sessions).
    #[serde(skip_serializing_if = "Option::is_none")]
    sessions: Option<SessionSummary>,
    /// The user-plane bed's path counters (absent when the demo ran the control plane only).
    #[serde(skip_serializing_if = "Option::is_none")]
    user_plane_bed: Option<BedReport>,
}

/// One stage of the demo.
#[derive(Debug, Clone, Serialize)]
struct Stage {
    name: &'static str,
    ok: bool,
    /// UEs (registered, deregistered) or sessions (established, released) through it.
    done: u64,
    /// How many should have been.
    expected: u64,
    failed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_p50_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_p99_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_second: Option<f64>,
    /// Why a stage was skipped, or what it reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// The SMF's and the in-process UPF's counters.
#[derive(Debug, Clone, Default, Serialize)]
struct SessionSummary {
    smf_created: u64,
    smf_rejected: u64,
    smf_activated: u64,
    smf_released: u64,
    n1n2_sent: u64,
    n1n2_failed: u64,
    amf_setup_requests: u64,
    /// PFCP messages the UPF received and sent (first transmissions).
    pfcp_received: u64,
    pfcp_sent: u64,
    upf_sessions_established: u64,
    upf_sessions_deleted: u64,
    /// UPF sessions still there when the core stopped (the stop removes them).
    upf_sessions_at_stop: u64,
    /// UPF rules (uplink + downlink) left after the run, before the core stopped.
    upf_rules_left: u64,
}

/// What the demo's user-plane stage has to work with.
enum UserPlaneSetup {
    /// Namespaces with a UPF on a real path, the DN echo host and the gNB's N3 socket.
    Bed(Box<Mutex<UserPlaneBed>>),
    /// No traffic, and why.
    Skipped(String),
}

/// The probes of the user-plane stage: a UDP round (echoed by the DN host), then an ICMP
/// round (answered by the DN's kernel), each `count` packets at `rate_pps`.
#[derive(Debug, Clone, Copy)]
struct Probes {
    udp: TrafficPlan,
    icmp: TrafficPlan,
}

impl Probes {
    fn new(args: &DemoArgs) -> Result<Self, BenchError> {
        if !(args.traffic_duration.is_finite() && args.traffic_duration > 0.0) {
            return Err(BenchError::Invalid(
                "--traffic-duration must be a positive number of seconds".into(),
            ));
        }
        if args.traffic_rate == 0 {
            return Err(BenchError::Invalid(
                "--traffic-rate must be at least 1".into(),
            ));
        }
        // Saturating float-to-int conversion; a huge product is capped by max_duration.
        let count = (args.traffic_rate as f64 * args.traffic_duration)
            .ceil()
            .max(1.0) as u64;
        let mut udp = TrafficPlan::udp(
            Ipv4Addr::UNSPECIFIED,
            args.packet_size,
            args.traffic_rate,
            count,
        );
        udp.max_duration = Duration::from_secs_f64(args.traffic_duration * 2.0 + 1.0);
        udp.validate()
            .map_err(|e| BenchError::Invalid(format!("user-plane probes: {e}")))?;
        Ok(Probes {
            udp,
            icmp: udp.icmp(),
        })
    }
}

/// The demo's user-plane stage, run once while every UE holds its sessions: UDP and ICMP
/// probes from the gNB through the UPF to the DN and back, or a note saying why not.
fn user_plane_stage(
    setup: &UserPlaneSetup,
    probes: Probes,
    sessions: &[UpSession],
    kept: &Mutex<Vec<TrafficReport>>,
) -> Result<serde_json::Value, BenchError> {
    let bed = match setup {
        UserPlaneSetup::Skipped(reason) => {
            return Ok(serde_json::json!({
                "stage": "user_plane",
                "skipped": true,
                "reason": reason,
                "sessions": sessions.len(),
            }))
        }
        UserPlaneSetup::Bed(b) => b.lock().unwrap_or_else(PoisonError::into_inner),
    };
    // The UPF forwards a session's downlink once the modification that follows the gNB's
    // answer has arrived; probes sent before that would count as lost.
    let deadline = Instant::now() + FORWARDING_WAIT;
    while !bed.forwarding(sessions) {
        if Instant::now() > deadline {
            return Ok(serde_json::json!({
                "stage": "user_plane",
                "skipped": false,
                "ok": false,
                "path": bed.path(),
                "reason": format!("the UPF did not forward every session's downlink within {} s", FORWARDING_WAIT.as_secs()),
            }));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut rounds = Vec::new();
    for plan in [probes.udp, probes.icmp] {
        let r = bed
            .run_traffic(sessions, &plan)
            .map_err(|e| BenchError::Failed(format!("user plane: {e}")))?;
        tracing::info!(
            kind = r.kind,
            sent = r.sent,
            received = r.received,
            pps = r.achieved_pps,
            "user-plane round done"
        );
        rounds.push(r);
    }
    let ok = rounds
        .iter()
        .all(|r| r.sent > 0 && r.bad == 0 && r.loss_ratio <= MAX_LOSS);
    let report = serde_json::json!({
        "stage": "user_plane",
        "skipped": false,
        "ok": ok,
        "path": bed.path(),
        "max_loss": MAX_LOSS,
        "rounds": rounds,
    });
    // The report's own row reads the typed rounds, not this JSON back.
    *kept.lock().unwrap_or_else(PoisonError::into_inner) = rounds;
    Ok(report)
}

/// The bed for `--user-plane`, or why the demo runs without one. Only `auto` falls back;
/// an explicit path that cannot be set up is a missing privilege (exit 3).
fn user_plane_setup(args: &DemoArgs) -> Result<UserPlaneSetup, BenchError> {
    let path = match (args.pdu_sessions, args.user_plane) {
        (0, _) => {
            return Ok(UserPlaneSetup::Skipped(
                "no PDU sessions (--pdu-sessions 0)".into(),
            ))
        }
        (_, DemoUserPlane::Off) => return Ok(UserPlaneSetup::Skipped("--user-plane off".into())),
        (_, DemoUserPlane::Auto | DemoUserPlane::Xdp) => PathKind::Xdp,
        (_, DemoUserPlane::Tun) => PathKind::Tun,
    };
    let tag = format!("demo{}", std::process::id() % 100_000);
    match UserPlaneBed::start(path, &tag, SocketAddr::from((UPF_ADDR, 0))) {
        Ok(bed) => {
            tracing::info!(
                path = bed.path(),
                "user plane: UPF datapath in network namespaces"
            );
            Ok(UserPlaneSetup::Bed(Box::new(Mutex::new(bed))))
        }
        Err(e) if args.user_plane == DemoUserPlane::Auto => {
            let reason = format!("control plane only: {}", e.0);
            tracing::warn!("{reason}");
            Ok(UserPlaneSetup::Skipped(reason))
        }
        Err(e) => Err(BenchError::Privilege(format!("--user-plane: {e}"))),
    }
}

fn session_summary(r: &CoreReport, rules_left: u64, bed: Option<&BedReport>) -> SessionSummary {
    let mut s = SessionSummary {
        upf_rules_left: rules_left,
        ..SessionSummary::default()
    };
    for w in &r.workers {
        s.smf_created += w.smf.created;
        s.smf_rejected += w.smf.rejected;
        s.smf_activated += w.smf.activated;
        s.smf_released += w.smf.released;
        s.n1n2_sent += w.smf.n1n2_sent;
        s.n1n2_failed += w.smf.n1n2_failed;
        s.amf_setup_requests += w.amf_sessions.setup_requests;
    }
    if let Some(u) = &r.upf {
        s.pfcp_received = u.stats.received.values().sum();
        s.pfcp_sent = u.stats.sent.values().sum();
        s.upf_sessions_established = u.stats.sessions_established;
        s.upf_sessions_deleted = u.stats.sessions_deleted;
        s.upf_sessions_at_stop = u.sessions_at_stop as u64;
    }
    if let Some(b) = bed {
        s.pfcp_received = b.pfcp_received;
        s.pfcp_sent = b.pfcp_sent;
        s.upf_sessions_established = b.sessions_established;
        s.upf_sessions_deleted = b.sessions_deleted;
        s.upf_sessions_at_stop = b.sessions_at_stop as u64;
        // Entries the path still held after the UPF removed every session.
        s.upf_rules_left += b.entries_left.map_or(1, |n| n as u64);
    }
    s
}

/// The user-plane stage's row: probes answered of probes sent over the UDP and ICMP
/// rounds, or a skipped row whose note says why (a control-plane-only demo still passes).
fn user_plane_row(load: &LoadReport, sessions: u64, rounds: &[TrafficReport]) -> Stage {
    let mut row = Stage {
        name: "user_plane",
        ok: false,
        done: 0,
        expected: 0,
        failed: 0,
        latency_p50_us: None,
        latency_p99_us: None,
        per_second: None,
        note: Some("not run".into()),
    };
    let Some(v) = &load.user_plane else {
        return row;
    };
    if v.get("skipped") == Some(&serde_json::Value::Bool(true)) {
        row.ok = true;
        row.expected = sessions;
        row.note = Some(format!(
            "skipped: {}",
            v.get("reason")
                .and_then(|r| r.as_str())
                .unwrap_or("no reason")
        ));
        return row;
    }
    row.ok = v.get("ok") == Some(&serde_json::Value::Bool(true));
    row.done = rounds.iter().map(|r| r.received).sum();
    row.expected = rounds.iter().map(|r| r.sent).sum();
    row.failed = rounds.iter().map(|r| r.lost).sum();
    // The UDP round's latency: the DN host's echo, the path a data session takes.
    if let Some(l) = rounds.first().and_then(|r| r.latency.as_ref()) {
        row.latency_p50_us = Some(l.p50_us);
        row.latency_p99_us = Some(l.p99_us);
    }
    row.per_second = rounds.first().map(|r| r.achieved_pps);
    let path = v.get("path").and_then(|p| p.as_str()).unwrap_or("?");
    let mut note = format!("{path} path");
    for r in rounds {
        note.push_str(&format!(
            "; {} {} B: {}/{} back, {:.0} pps, {:.3} Gbit/s",
            r.kind, r.packet_size, r.received, r.sent, r.achieved_pps, r.inner_gbps
        ));
    }
    if let Some(reason) = v.get("reason").and_then(|r| r.as_str()) {
        note.push_str(&format!("; {reason}"));
    }
    row.note = Some(note);
    row
}

/// The stages of a run of `ues` UEs with `per_ue` sessions each.
fn stages(load: &LoadReport, ues: u64, per_ue: u8, rounds: &[TrafficReport]) -> Vec<Stage> {
    let proc = |name: &str| load.procedures.get(name);
    let stage = |name: &'static str, procedure: &str, done: u64, expected: u64| {
        let p = proc(procedure);
        Stage {
            name,
            ok: done == expected && p.map_or(0, |p| p.failed) == 0,
            done,
            expected,
            failed: p.map_or(0, |p| p.failed),
            latency_p50_us: p.map(|p| p.latency_us.p50),
            latency_p99_us: p.map(|p| p.latency_us.p99),
            per_second: p.map(|p| p.per_second),
            note: None,
        }
    };
    let mut out = vec![stage(
        "registered",
        "registration",
        load.ues_registered,
        ues,
    )];
    if per_ue > 0 {
        let sessions = ues * u64::from(per_ue);
        let established = proc("session_establishment").map_or(0, |p| p.completed);
        let mut e = stage(
            "sessions_established",
            "session_establishment",
            established,
            sessions,
        );
        let rejected: u64 = load
            .failures
            .iter()
            .filter(|(k, _)| k.starts_with("session_establishment: session reject"))
            .map(|(_, n)| n)
            .sum();
        e.note = Some(format!("{rejected} rejected"));
        out.push(e);
        out.push(user_plane_row(load, sessions, rounds));
        let released = proc("session_release").map_or(0, |p| p.completed);
        out.push(stage(
            "sessions_released",
            "session_release",
            released,
            established,
        ));
    }
    out.push(stage(
        "deregistered",
        "deregistration",
        load.ues_deregistered,
        ues,
    ));
    out
}

/// The AMF side of the run, as the core counted it.
#[derive(Serialize)]
struct AmfSummary {
    n2: nf::amf::n2::N2Stats,
    sctp: SctpCounters,
    ues_created: u64,
    registrations: u64,
    registration_rejects: u64,
    authentication_rejects: u64,
    resyncs: u64,
    deregistrations: u64,
    mac_failures: u64,
    error_indications: u64,
    retransmissions: u64,
    aborted: u64,
    releases: u64,
}

/// How messages travelled inside the core.
#[derive(Serialize)]
struct CoreSummary {
    handoffs: u64,
    ngap_read: u64,
    ngap_handed_off: u64,
    sbi_served: u64,
    sbi_handed_off: u64,
    h2c_calls: u64,
    call_failures: u64,
    udm_vectors: u64,
    mesh_sent: u64,
    lock_acquisitions: u64,
    lock_contended: u64,
    sqn_writes: u64,
    /// Every live counter's total (wake-ups, per-path messages, locks, hand-offs).
    counters: serde_json::Value,
}

fn summarise(r: &CoreReport) -> (AmfSummary, CoreSummary) {
    let a = r.amf_total();
    let c = r.counters_total();
    let io = sctp_io::IoStats {
        packets_in: r.n2.packets_in,
        packets_out: r.n2.packets_out,
        ..sctp_io::IoStats::default()
    };
    (
        AmfSummary {
            n2: r.n2.n2.clone(),
            // The demo's core listens on one transport: its endpoint is the only one.
            sctp: r
                .n2
                .sctp
                .first()
                .map(|(_, s)| SctpCounters::from_parts(s, io))
                .unwrap_or_default(),
            ues_created: a.ues_created,
            registrations: a.registrations,
            registration_rejects: a.registration_rejects,
            authentication_rejects: a.authentication_rejects,
            resyncs: a.resyncs,
            deregistrations: a.deregistrations,
            mac_failures: a.mac_failures,
            error_indications: a.error_indications,
            retransmissions: a.retransmissions,
            aborted: a.aborted,
            releases: a.releases,
        },
        CoreSummary {
            handoffs: r.handoffs(),
            ngap_read: c.ngap_read,
            ngap_handed_off: c.ngap_handed_off,
            sbi_served: c.sbi_served,
            sbi_handed_off: c.sbi_handed_off,
            h2c_calls: c.h2c_calls,
            call_failures: c.call_failures,
            udm_vectors: r.workers.iter().map(|w| w.udm.vectors).sum(),
            mesh_sent: r.mesh_total.sent,
            lock_acquisitions: r.locks.acquisitions,
            lock_contended: r.locks.contended,
            sqn_writes: r.sqn_writes,
            counters: crate::live::live_counters(r),
        },
    )
}

/// `steer5g demo`: the run, then its report on standard output (one JSON object with
/// `json`); an error when a stage lost UEs or sessions.
pub fn run(json: bool, args: &DemoArgs, core: CoreSetup) -> Result<(), BenchError> {
    let mut cfg = core.cfg;
    let transport: TransportKind = args.transport.into();
    cfg.n2.transports = vec![transport];
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(BenchError::Invalid(
            "--timeout must be a positive number of seconds".into(),
        ));
    }
    if args.ues == 0 {
        return Err(BenchError::Invalid("--ues must be at least 1".into()));
    }
    if args.pdu_sessions > MAX_PDU_SESSIONS {
        return Err(BenchError::Invalid(format!(
            "--pdu-sessions {}: at most {MAX_PDU_SESSIONS} (PDU session IDs are 1..=15, TS 24.007 §11.2.3.1b)",
            args.pdu_sessions
        )));
    }
    let workers = match args.workers {
        Some(w) => w,
        None => std::thread::available_parallelism()
            .map_or(1, |n| u16::try_from(n.get()).unwrap_or(u16::MAX)),
    };

    // A fresh data directory with N subscribers and the home network keys.
    let temp = match &args.data_dir {
        Some(_) => None,
        None => Some(crate::corecase::temp_data_dir("demo")?),
    };
    let data_dir = match (&args.data_dir, &temp) {
        (Some(d), _) => d.clone(),
        (None, Some(t)) => t.path().to_path_buf(),
        (None, None) => return Err(BenchError::Failed("no data directory".into())),
    };
    let plmn = format!("imsi-{}{}", cfg.plmn.mcc, cfg.plmn.mnc);
    let first = match &args.first_supi {
        Some(f) if !f.starts_with(&plmn) => {
            return Err(BenchError::Invalid(format!(
                "--first-supi {f}: not of the configured PLMN (a SUPI starting with {plmn})"
            )))
        }
        Some(f) => f.clone(),
        None => cfg.plmn.supi(1),
    };
    let subscribers = store::generate::generate(&first, args.ues, &mut OsRng).map_err(|e| {
        BenchError::Invalid(format!("--first-supi {first} --ues {}: {e}", args.ues))
    })?;
    let key_file = crate::corecase::provision(&data_dir, &cfg, &subscribers)?;
    let (suci, suci_label) = suci_scheme(SuciArg::A, &key_file)?;

    let mut opts = crate::corecase::core_options(
        data_dir.clone(),
        workers,
        cfg.clone(),
        args.ausf_addr,
        args.udm_addr,
    );
    opts.state = match args.state {
        DemoState::Sharded => StateMode::Sharded,
        DemoState::Locked => StateMode::Locked,
    };
    opts.sbi = match args.sbi {
        DemoSbi::H2c => SbiMode::H2c,
        DemoSbi::Inproc => SbiMode::Inproc,
    };
    opts.integrity = core.integrity;
    opts.ciphering = core.ciphering;
    opts.bpf = core.bpf;
    let probes = Probes::new(args)?;
    let setup = Arc::new(user_plane_setup(args)?);
    let datapath = upf::MemoryDatapath::new();
    let mut gnb_n3 = None;
    match setup.as_ref() {
        UserPlaneSetup::Bed(bed) => {
            let (smf, n3) = crate::corecase::bed_smf(bed)?;
            (opts.smf, gnb_n3) = (Some(smf), Some(n3));
        }
        UserPlaneSetup::Skipped(_) if args.pdu_sessions > 0 => {
            opts.smf = Some(SmfOptions::default());
            opts.upf = Some(UpfOptions {
                pfcp: SocketAddr::from((UPF_ADDR, 0)),
                n3: UPF_ADDR,
                datapath: datapath.clone(),
            });
        }
        UserPlaneSetup::Skipped(_) => {}
    }
    let core = Core::start(opts)?;
    for l in &core.listening().sbi {
        tracing::info!("{l}");
    }

    let plan = LoadConfig::register_deregister(
        crate::corecase::ran_config(
            crate::corecase::gnb_identity(&cfg)?,
            &cfg,
            transport,
            args.gnbs,
            1,
            args.timeout,
        ),
        subscribers,
        (suci, suci_label),
        args.concurrency.max(1),
        args.ues,
        SessionPlan {
            per_ue: args.pdu_sessions,
            gnb_n3,
            ..SessionPlan::default()
        },
    );
    let hook_setup = Arc::clone(&setup);
    let kept: Arc<Mutex<Vec<TrafficReport>>> = Arc::default();
    let hook_kept = Arc::clone(&kept);
    let plan = LoadConfig {
        on_sessions_up: Some(Arc::new(move |s: &[UpSession]| {
            user_plane_stage(&hook_setup, probes, s, &hook_kept).map_err(Into::into)
        })),
        ..plan
    };
    let load = ran::load::run(&plan);
    // The last releases reach the UPF after the UEs are done: give them a bounded while.
    let rules_left = if args.pdu_sessions > 0 {
        let settle = Instant::now() + RULES_SETTLE;
        let left = || match setup.as_ref() {
            UserPlaneSetup::Bed(b) => b
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entries()
                .map_or(u64::MAX, |n| n as u64),
            UserPlaneSetup::Skipped(_) => datapath
                .entries()
                .map_or(u64::MAX, |e| (e.uplink + e.downlink) as u64),
        };
        while left() > 0 && Instant::now() < settle {
            std::thread::sleep(Duration::from_millis(10));
        }
        left()
    } else {
        0
    };
    drop(plan);
    let core_report = core.stop()?;
    // The bed goes after the core, so the SMF never talks to a UPF that has gone.
    let bed: Option<BedReport> = match Arc::try_unwrap(setup) {
        Ok(UserPlaneSetup::Bed(b)) => Some(
            b.into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .stop(),
        ),
        _ => None,
    };
    let load = load?;
    let rounds = std::mem::take(&mut *kept.lock().unwrap_or_else(PoisonError::into_inner));
    let stages = stages(&load, args.ues, args.pdu_sessions, &rounds);
    let sessions =
        (args.pdu_sessions > 0).then(|| session_summary(&core_report, rules_left, bed.as_ref()));
    let rules_ok = sessions
        .as_ref()
        .is_none_or(|s| s.upf_rules_left == 0 && s.upf_sessions_at_stop == 0);
    let ok = load.ok && rules_ok && stages.iter().all(|s| s.ok);
    let (amf_summary, core_summary) = summarise(&core_report);
    let state = match args.state {
        DemoState::Sharded => "sharded",
        DemoState::Locked => "locked",
    };
    let sbi = match args.sbi {
        DemoSbi::H2c => "h2c",
        DemoSbi::Inproc => "inproc",
    };
    if json {
        crate::print_json(&DemoReport {
            demo: if args.pdu_sessions > 0 {
                "sessions"
            } else {
                "registration"
            },
            ok,
            ues: args.ues,
            pdu_sessions: args.pdu_sessions,
            stages: &stages,
            sessions: sessions.clone(),
            user_plane_bed: bed.clone(),
            workers,
            state,
            sbi,
            data_dir: data_dir.display().to_string(),
            ran: &load,
            amf: amf_summary,
            core: core_summary,
        })?;
    } else {
        println!(
            "steer5g demo: {} UEs register, establish {} PDU session(s) each, release them and deregister through {} gNB(s) over {}; core with {} {} worker(s), SBI {}",
            args.ues, args.pdu_sessions, load.gnbs, load.transport, workers, state, sbi
        );
        println!();
        ran::load::report::print_human(&load);
        println!();
        println!(
            "{:<22} {:>4} {:>9} {:>9} {:>7} {:>9} {:>9}  note",
            "stage", "ok", "done", "expected", "failed", "p50 µs", "p99 µs"
        );
        for st in &stages {
            let us = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
            println!(
                "{:<22} {:>4} {:>9} {:>9} {:>7} {:>9} {:>9}  {}",
                st.name,
                if st.ok { "yes" } else { "NO" },
                st.done,
                st.expected,
                st.failed,
                us(st.latency_p50_us),
                us(st.latency_p99_us),
                st.note.as_deref().unwrap_or("")
            );
        }
        if let Some(s) = &sessions {
            println!(
                "SMF: {} SM contexts created, {} activated, {} released, {} rejected; {} N1N2 transfers ({} failed)",
                s.smf_created, s.smf_activated, s.smf_released, s.smf_rejected, s.n1n2_sent, s.n1n2_failed
            );
            println!(
                "UPF: {} PFCP messages received, {} sent; {} sessions established, {} deleted; {} rules left after the run, {} sessions at stop",
                s.pfcp_received, s.pfcp_sent, s.upf_sessions_established, s.upf_sessions_deleted, s.upf_rules_left, s.upf_sessions_at_stop
            );
        }
        if let Some(b) = &bed {
            println!("{}", path_line(b));
        }
        println!();
        println!(
            "core: {} registrations, {} deregistrations, {} rejects, {} NG Setups; {} handoffs between workers, {} h2c calls ({} failed), {} lock acquisitions ({} contended), {} SQN writes",
            amf_summary.registrations,
            amf_summary.deregistrations,
            amf_summary.registration_rejects + amf_summary.authentication_rejects,
            amf_summary.n2.ng_setup_ok,
            core_summary.handoffs,
            core_summary.h2c_calls,
            core_summary.call_failures,
            core_summary.lock_acquisitions,
            core_summary.lock_contended,
            core_summary.sqn_writes
        );
        println!("      {}", crate::live::live_counters_line(&core_report));
        println!();
        println!(
            "result: {}",
            if !ok {
                "FAILED".to_string()
            } else if args.pdu_sessions > 0 {
                let traffic = stages
                    .iter()
                    .find(|s| s.name == "user_plane" && s.expected > 0 && s.done == s.expected)
                    .filter(|_| bed.is_some())
                    .map_or_else(String::new, |s| {
                        format!("; {} probes through the UPF and back", s.done)
                    });
                format!(
                    "every UE registered and deregistered, with {} PDU session(s) each established and released{traffic}; no UPF rule left",
                    args.pdu_sessions
                )
            } else {
                "every UE registered and deregistered".to_string()
            }
        );
    }
    if ok {
        Ok(())
    } else {
        let lost: Vec<String> = stages
            .iter()
            .filter(|s| !s.ok)
            .map(|s| format!("{}: {} of {}", s.name, s.done, s.expected))
            .collect();
        Err(BenchError::Failed(format!(
            "stages that lost UEs or sessions: [{}]; UPF rules left: {}",
            lost.join(", "),
            sessions.as_ref().map_or(0, |s| s.upf_rules_left)
        )))
    }
}

/// Which path carried the user plane, from the paths' own counters.
fn path_line(b: &BedReport) -> String {
    let sum = |m: &std::collections::BTreeMap<&'static str, u64>, p: &str| -> u64 {
        m.iter()
            .filter(|(k, _)| k.starts_with(p))
            .map(|(_, v)| *v)
            .sum()
    };
    let get =
        |m: &std::collections::BTreeMap<&'static str, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    let mut line = format!("UPF path {}:", b.path);
    if !b.xdp.is_empty() {
        line.push_str(&format!(
            " XDP forwarded {} uplink, {} downlink, passed up {}, dropped {};",
            get(&b.xdp, "ul_forwarded"),
            get(&b.xdp, "dl_forwarded"),
            sum(&b.xdp, "pass_"),
            sum(&b.xdp, "drop_")
        ));
    }
    line.push_str(&format!(
        " TUN forwarded {} uplink, {} downlink, dropped {}; DN echoed {}; {} entries left",
        get(&b.tun, "ul_forwarded"),
        get(&b.tun, "dl_forwarded"),
        sum(&b.tun, "drop_"),
        b.dn_echoed,
        b.entries_left
            .map_or_else(|| "unknown".to_owned(), |n| n.to_string())
    ));
    line
}
