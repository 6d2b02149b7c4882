//! `steer5g demo`: the whole core (AMF, AUSF, UDM on the thread-per-core runtime) and the UE
//! load generator in one process on the loopback plan, with a report.
//!
//! DESIGN.md's demo defaults: SCTP over UDP encapsulation (no privilege), h2c SBI on
//! loopback, SUCI Profile A, a fresh data directory provisioned with N subscribers. The core
//! runs an SMF and an in-process UPF (rules in memory, no packet forwarding) as `steer5g core
//! --smf --upf-inproc` does. Every UE registers, establishes `--pdu-sessions` PDU sessions,
//! holds them until every UE holds its own (where the user-plane stage goes:
//! [`user_plane_stage`]), releases them and deregisters; the run succeeds only if every UE
//! went through every stage and the UPF holds no rule at the end.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ran::userplane::UpSession;
use rand::rngs::OsRng;
use sbi::{NfType, StaticDirectory};
use serde::Serialize;
use steer5g_config::Transport as TransportKind;
use steer5g_core::{Core, CoreOptions, CoreReport, SbiMode, SmfOptions, StateMode, UpfOptions};
use upf::datapath::Datapath as _;

use crate::cli::{DemoArgs, DemoSbi, DemoState, Global, NetworkArgs};
use crate::exit::CliError;
use crate::loadgen::driver::MAX_PDU_SESSIONS;
use crate::loadgen::schedule::{Limit, Load};
use crate::loadgen::{run_load, suci_scheme, LoadPlan, LoadReport, Mode, SessionPlan, SuciArg};
use crate::report::SctpCounters;

/// The SBI port of every NF on the loopback plan (DESIGN.md Conventions).
const SBI_PORT: u16 = 7777;
/// The in-process UPF's PFCP and N3 address (DESIGN.md: 127.0.0.7); its PFCP port is the
/// OS's choice, so that demos can run side by side.
const UPF_ADDR: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 7);
/// How long the UPF may take to drop the last sessions' rules once the UEs are gone (the
/// SMF deletes them after the N2 side is done).
const RULES_SETTLE: Duration = Duration::from_secs(5);

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

/// Where the user-plane stage finds the network: the lead's traffic stage needs these.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserPlaneContext {
    /// The UPF's N3 address.
    pub(crate) upf_n3: Ipv4Addr,
    /// The gNBs' N3 address (their DL F-TEIDs).
    pub(crate) gnb_n3: Option<Ipv4Addr>,
}

/// The demo's user-plane stage, run once while every UE holds its sessions: not wired yet
/// (the in-process UPF forwards nothing), so it reports itself skipped. The traffic stage
/// replaces this function.
pub(crate) fn user_plane_stage(
    ctx: &UserPlaneContext,
    sessions: &[UpSession],
) -> Result<serde_json::Value, CliError> {
    Ok(serde_json::json!({
        "stage": "user_plane",
        "skipped": true,
        "reason": "traffic stage not wired",
        "sessions": sessions.len(),
        "upf_n3": ctx.upf_n3.to_string(),
        "gnb_n3": ctx.gnb_n3.map(|a| a.to_string()),
    }))
}

fn session_summary(r: &CoreReport, rules_left: u64) -> SessionSummary {
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
    s
}

/// The stages of a run of `ues` UEs with `per_ue` sessions each.
fn stages(load: &LoadReport, ues: u64, per_ue: u8) -> Vec<Stage> {
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
        let note = match &load.user_plane {
            Some(v) if v.get("skipped") == Some(&serde_json::Value::Bool(true)) => format!(
                "skipped: {}",
                v.get("reason")
                    .and_then(|r| r.as_str())
                    .unwrap_or("no reason")
            ),
            Some(v) => v.to_string(),
            None => "not run".into(),
        };
        let up_ok = load
            .user_plane
            .as_ref()
            .is_some_and(|v| v.get("ok") != Some(&serde_json::Value::Bool(false)));
        out.push(Stage {
            name: "user_plane",
            ok: up_ok,
            done: load
                .holds
                .iter()
                .find(|h| h.point == "sessions_up")
                .map_or(0, |h| h.sessions),
            expected: sessions,
            failed: 0,
            latency_p50_us: None,
            latency_p99_us: None,
            per_second: None,
            note: Some(note),
        });
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
        wakeups: 0,
        packets_in: r.n2.packets_in,
        packets_out: r.n2.packets_out,
        send_errors: 0,
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
            counters: crate::report::live_counters(r),
        },
    )
}

/// `steer5g demo`.
pub(crate) fn run(global: &Global, args: &DemoArgs) -> Result<(), CliError> {
    let mut cfg = crate::cli::load_config(global, &NetworkArgs::default(), Some(&args.listen))?;
    let transport: TransportKind = args.transport.into();
    cfg.n2.transports = vec![transport];
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(CliError::Usage(
            "--timeout must be a positive number of seconds".into(),
        ));
    }
    if args.ues == 0 {
        return Err(CliError::Usage("--ues must be at least 1".into()));
    }
    if args.pdu_sessions > MAX_PDU_SESSIONS {
        return Err(CliError::Usage(format!(
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
        None => Some(crate::loadgen::temp_data_dir("demo")?),
    };
    let data_dir = match (&args.data_dir, &temp) {
        (Some(d), _) => d.clone(),
        (None, Some(t)) => t.path().to_path_buf(),
        (None, None) => return Err(CliError::Failed("no data directory".into())),
    };
    let first = first_supi(&cfg.plmn.mcc, &cfg.plmn.mnc);
    let subscribers = store::generate::generate(&first, args.ues, &mut OsRng)
        .map_err(|e| CliError::Usage(format!("--ues {}: {e}", args.ues)))?;
    let key_file = crate::loadgen::provision(&data_dir, &cfg, &subscribers)?;
    let (suci, suci_label) = suci_scheme(SuciArg::A, &key_file)?;

    let mut directory = StaticDirectory::new();
    directory.set(NfType::Amf, format!("http://{}:{SBI_PORT}", cfg.n2.addr));
    directory.set(NfType::Ausf, format!("http://{}", args.ausf_addr));
    directory.set(NfType::Udm, format!("http://{}", args.udm_addr));
    let mut opts = CoreOptions::new(data_dir.clone());
    opts.workers = workers;
    opts.state = match args.state {
        DemoState::Sharded => StateMode::Sharded,
        DemoState::Locked => StateMode::Locked,
    };
    opts.sbi = match args.sbi {
        DemoSbi::H2c => SbiMode::H2c,
        DemoSbi::Inproc => SbiMode::Inproc,
    };
    args.nas.apply(&cfg.amf, &mut opts)?;
    args.bpf.apply(&mut opts);
    opts.config = cfg.clone();
    opts.directory = directory;
    let datapath = upf::MemoryDatapath::new();
    if args.pdu_sessions > 0 {
        opts.smf = Some(SmfOptions::default());
        opts.upf = Some(UpfOptions {
            pfcp: SocketAddr::from((UPF_ADDR, 0)),
            n3: UPF_ADDR,
            datapath: datapath.clone(),
        });
    }
    let core = Core::start(opts)?;
    crate::core_cmd::log_sbi_listeners(core.listening());

    let amf = match transport {
        TransportKind::Raw => SocketAddrV4::new(cfg.n2.addr, cfg.n2.sctp_port),
        TransportKind::Udp => SocketAddrV4::new(cfg.n2.addr, cfg.n2.udp_port),
    };
    let plan = LoadPlan {
        cfg: cfg.clone(),
        transport,
        amf,
        sctp_port: cfg.n2.sctp_port,
        local_addr: None,
        gnbs: args.gnbs,
        gnb_id_base: 1,
        timeout: Duration::from_secs_f64(args.timeout),
        mode: Mode::RegisterDeregister,
        load: Load::Closed {
            concurrency: args.concurrency.max(1),
        },
        limit: Limit::Count(args.ues),
        subscribers,
        suci,
        suci_label,
        sessions: SessionPlan {
            per_ue: args.pdu_sessions,
            ..SessionPlan::default()
        },
        on_sessions_up: None,
        on_hold: None,
    };
    let ctx = UserPlaneContext {
        upf_n3: UPF_ADDR,
        gnb_n3: plan.sessions.gnb_n3,
    };
    let plan = LoadPlan {
        on_sessions_up: Some(Arc::new(move |s: &[UpSession]| user_plane_stage(&ctx, s))),
        ..plan
    };
    let load = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))
        .and_then(|rt| rt.block_on(run_load(&plan)));
    // The last releases reach the UPF after the UEs are done: give them a bounded while.
    let rules_left = if args.pdu_sessions > 0 {
        let settle = Instant::now() + RULES_SETTLE;
        let left = || {
            datapath
                .entries()
                .map_or(u64::MAX, |e| (e.uplink + e.downlink) as u64)
        };
        while left() > 0 && Instant::now() < settle {
            std::thread::sleep(Duration::from_millis(10));
        }
        left()
    } else {
        0
    };
    let core_report = core.stop()?;
    let load = load?;
    let stages = stages(&load, args.ues, args.pdu_sessions);
    let sessions = (args.pdu_sessions > 0).then(|| session_summary(&core_report, rules_left));
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
    if global.json {
        crate::report::print_json(&DemoReport {
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
        crate::loadgen::report::print_human(&load);
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
        println!("      {}", crate::report::live_counters_line(&core_report));
        println!();
        println!(
            "result: {}",
            if !ok {
                "FAILED".to_string()
            } else if args.pdu_sessions > 0 {
                format!(
                    "every UE registered and deregistered, with {} PDU session(s) each established and released; no UPF rule left",
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
        Err(CliError::Failed(format!(
            "stages that lost UEs or sessions: [{}]; UPF rules left: {}",
            lost.join(", "),
            sessions.as_ref().map_or(0, |s| s.upf_rules_left)
        )))
    }
}

/// The first SUPI of the demo's range: MCC, MNC, then an MSIN of 1 (15 digits in all).
fn first_supi(mcc: &str, mnc: &str) -> String {
    let prefix = format!("{mcc}{mnc}");
    let width = 15usize.saturating_sub(prefix.len());
    format!("imsi-{prefix}{:0width$}", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_supi_fills_15_digits() {
        assert_eq!(first_supi("001", "01"), "imsi-001010000000001");
        assert_eq!(first_supi("310", "410"), "imsi-310410000000001");
    }
}
