//! `steer5g demo`: the whole core (AMF, AUSF, UDM on the thread-per-core runtime) and the UE
//! load generator in one process on the loopback plan, with a report.
//!
//! DESIGN.md's demo defaults: SCTP over UDP encapsulation (no privilege), h2c SBI on
//! loopback, SUCI Profile A, a fresh data directory provisioned with N subscribers. Every UE
//! registers and deregisters once; the run succeeds only if all of them did.

use std::net::SocketAddrV4;
use std::time::Duration;

use rand::rngs::OsRng;
use sbi::{NfType, StaticDirectory};
use serde::Serialize;
use steer5g_config::Transport as TransportKind;
use steer5g_core::{Core, CoreOptions, CoreReport, SbiMode, StateMode};

use crate::cli::{DemoArgs, DemoSbi, DemoState, Global, NetworkArgs};
use crate::exit::CliError;
use crate::loadgen::schedule::{Limit, Load};
use crate::loadgen::{run_load, suci_scheme, LoadPlan, Mode, SuciArg};
use crate::report::SctpCounters;

/// The SBI port of every NF on the loopback plan (DESIGN.md Conventions).
const SBI_PORT: u16 = 7777;

#[derive(Serialize)]
struct DemoReport<'a> {
    demo: &'static str,
    ok: bool,
    ues: u64,
    workers: u16,
    state: &'static str,
    sbi: &'static str,
    data_dir: String,
    ran: &'a crate::loadgen::LoadReport,
    amf: AmfSummary,
    core: CoreSummary,
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
    };
    let load = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))
        .and_then(|rt| rt.block_on(run_load(&plan)));
    let core_report = core.stop()?;
    let load = load?;
    let ok = load.ok && load.ues_registered == args.ues && load.ues_deregistered == args.ues;
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
            demo: "registration",
            ok,
            ues: args.ues,
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
            "steer5g demo: {} UEs register and deregister through {} gNB(s) over {}; core with {} {} worker(s), SBI {}",
            args.ues, load.gnbs, load.transport, workers, state, sbi
        );
        println!();
        crate::loadgen::report::print_human(&load);
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
            if ok {
                "every UE registered and deregistered"
            } else {
                "FAILED"
            }
        );
    }
    if ok {
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} of {} UEs registered, {} deregistered",
            load.ues_registered, args.ues, load.ues_deregistered
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
