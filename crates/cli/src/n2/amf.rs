//! `steer5g amf`: the AMF alone (every NF can run as a process of its own), on the core crate
//! with only the AMF hosted: N2 (NG Setup and the UE-associated NGAP of registration) on
//! worker 0's socket(s), registration shards on every worker, and the AUSF and UDM called
//! over h2c at their directory addresses (or `--ausf` / `--udm`).
//!
//! Without subscribers behind it (no AUSF/UDM running) it is still a complete N2 peer: NG
//! Setup needs no SBI, so the N2 tests run it alone.

use std::net::SocketAddr;
use std::path::PathBuf;

use sbi::NfType;
use serde::Serialize;
use steer5g_config::Transport as TransportKind;
use steer5g_core::{CoreReport, NfSet};

use crate::cli::{AmfArgs, Global};
use crate::exit::CliError;
use crate::nf_cmd;
use crate::report::GnbRow;
use ran::load::report::SctpCounters;

/// What one N2 transport saw (the gNB rows and the NGAP counters are on the first one:
/// the core keeps one NGAP state for every transport, and the report sums the rows).
#[derive(Debug, Serialize)]
pub(crate) struct WorkerReport {
    pub(crate) transport: String,
    pub(crate) local: String,
    pub(crate) gnbs: Vec<GnbRow>,
    pub(crate) n2: nf::amf::n2::N2Stats,
    pub(crate) sctp: SctpCounters,
}

/// The per-transport rows of the N2 report.
fn transport_reports(
    r: &CoreReport,
    listening: &[(TransportKind, SocketAddr)],
) -> Vec<WorkerReport> {
    let n2 = &r.n2;
    let mut out: Vec<WorkerReport> = Vec::new();
    for (kind, addr) in listening {
        let endpoint = n2.sctp.iter().find(|(k, _)| k == kind).map(|(_, s)| s);
        let io = n2
            .io
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, s)| *s)
            .unwrap_or_default();
        let first = out.is_empty();
        out.push(WorkerReport {
            transport: kind.to_string(),
            local: addr.to_string(),
            gnbs: if first {
                n2.gnb_contexts.iter().map(GnbRow::from).collect()
            } else {
                Vec::new()
            },
            n2: if first {
                n2.n2.clone()
            } else {
                nf::amf::n2::N2Stats::default()
            },
            sctp: endpoint
                .map(|s| SctpCounters::from_parts(s, io))
                .unwrap_or_default(),
        });
    }
    out
}

/// `steer5g amf`.
pub(crate) fn run(global: &Global, args: &AmfArgs) -> Result<(), CliError> {
    let mut cfg = crate::cli::load_config(global, &args.network, Some(&args.listen))?;
    args.run.limits.apply(&mut cfg)?;
    if let Some(name) = &args.amf_name {
        cfg.amf.name = name.clone();
        cfg.validate()?;
    }
    super::listen_transports(&mut cfg, args.transport);
    // Bad identities are usage errors: `Core::start` checks them before binding anything.
    let limit = nf_cmd::duration_limit(args.run.duration)?;
    // The AMF keeps no subscriber data: no data dir.
    let mut opts = nf_cmd::options(&args.run, NfSet::AMF, PathBuf::new(), cfg.clone());
    opts.always_auth = args.always_auth;
    // A peer named by its flag is used as named; the others are discovered with --nrf.
    let mut wanted = Vec::new();
    match &args.ausf {
        Some(u) => nf_cmd::set_peer(&mut opts.directory, NfType::Ausf, u)?,
        None => wanted.push(NfType::Ausf),
    }
    match &args.udm {
        Some(u) => nf_cmd::set_peer(&mut opts.directory, NfType::Udm, u)?,
        None => wanted.push(NfType::Udm),
    }
    if let Some(u) = &args.smf {
        nf_cmd::set_peer(&mut opts.directory, NfType::Smf, u)?;
        opts.smf_sbi = steer5g_core::SbiMode::H2c;
    }
    args.run.nrf.discover(NfType::Amf, &wanted, &mut opts)?;
    args.run
        .nrf
        .apply_tokens(&mut opts, NfType::Amf, &[NfType::Amf])?;
    // Where the AMF serves Namf and its callbacks: the flag's address, else port 7777 of its
    // N2 address (the address plan gives each NF one address), unless that is 0.0.0.0.
    match args.sbi_addr {
        Some(a) => {
            opts.directory.set(NfType::Amf, format!("http://{a}"));
        }
        None if !cfg.n2.addr.is_unspecified()
            && cfg.sbi.amf == steer5g_config::SbiConfig::default().amf =>
        {
            opts.directory
                .set(NfType::Amf, format!("http://{}:7777", cfg.n2.addr));
        }
        None => {}
    }
    let mut peers = format!(
        "AUSF at {}, UDM at {}",
        opts.directory.base_uri(NfType::Ausf).unwrap_or("?"),
        opts.directory.base_uri(NfType::Udm).unwrap_or("?")
    );
    if args.smf.is_some() {
        peers.push_str(&format!(
            ", SMF at {}",
            opts.directory.base_uri(NfType::Smf).unwrap_or("?")
        ));
    }
    let core = nf_cmd::start(opts, &args.run.metrics)?;
    if let Some(a) = core.listening().amf {
        tracing::info!("SBI listening: AMF {a} (Namf_Communication)");
    }
    let listening = core.listening().n2.clone();
    for (kind, local) in &listening {
        let what = match kind {
            TransportKind::Raw => format!("SCTP over raw IP on {local}"),
            TransportKind::Udp => format!(
                "SCTP port {} over UDP encapsulation on {local}",
                cfg.n2.sctp_port
            ),
        };
        tracing::info!("N2 listening: {what} ({peers})");
    }
    let agent = nf_cmd::register(&args.run, &core, &cfg, NfType::Amf, &wanted)?;
    nf_cmd::wait_for_stop(limit)?;
    if let Some(a) = agent {
        a.stop();
    }
    let r = nf_cmd::stop(core)?;
    let reports = transport_reports(&r, &listening);
    let amf = r.amf_total();
    if global.json {
        let mut v = serde_json::to_value(crate::report::AmfRunReport::new(&reports))
            .map_err(|e| CliError::Failed(format!("JSON report: {e}")))?;
        nf_cmd::merge(
            &mut v,
            serde_json::json!({
                "nf": "amf",
                "registration": {
                    "ues_created": amf.ues_created,
                    "registrations": amf.registrations,
                    "registration_rejects": amf.registration_rejects,
                    "authentication_rejects": amf.authentication_rejects,
                    "resyncs": amf.resyncs,
                    "identifications": amf.identifications,
                    "dereg_notifications": amf.dereg_notifications,
                    "sdm_subscriptions": amf.sdm_subscriptions,
                    "sdm_subscription_failures": amf.sdm_subscription_failures,
                    "sdm_notifications": amf.sdm_notifications,
                    "deregistrations": amf.deregistrations,
                    "mac_failures": amf.mac_failures,
                    "retransmissions": amf.retransmissions,
                    "aborted": amf.aborted,
                    "releases": amf.releases,
                },
                "sessions": sessions_json(&r),
            }),
        );
        nf_cmd::merge(&mut v, nf_cmd::runtime_json(&r, args.run.state));
        crate::report::print_json(&v)?;
    } else {
        crate::report::print_amf_human(&reports);
        let c = r.counters_total();
        println!(
            "  registration        {} registrations, {} rejected, {} deregistrations, {} UEs",
            amf.registrations, amf.registration_rejects, amf.deregistrations, amf.ues_created
        );
        println!(
            "  SBI                 {} h2c calls, {} failed, {} requests sent again; {} workers",
            c.h2c_calls,
            c.call_failures,
            c.call_retries,
            r.workers.len()
        );
    }
    Ok(())
}

/// The AMF's PDU session counters summed over the workers, with the Nsmf/Namf paths.
fn sessions_json(r: &CoreReport) -> serde_json::Value {
    let t = r.amf_sessions_total();
    let c = r.counters_total();
    serde_json::json!({
        "create_calls": t.create_calls,
        "created": t.created,
        "rejected": t.rejected,
        "n1n2": t.n1n2,
        "n1n2_refused": t.n1n2_refused,
        "setup_requests": t.setup_requests,
        "activated": t.activated,
        "release_commands": t.release_commands,
        "released": t.released,
        "released_with_ue": t.released_with_ue,
        "release_failures": t.release_failures,
        "not_forwarded": t.not_forwarded,
        "orphans_released": t.orphans_released,
        "dropped": t.dropped,
        "nsmf_pool_steered": c.nsmf_pool_steered,
        "namf_served": c.namf_served,
        "namf_kernel_steered": c.namf_kernel_steered,
        "namf_handed_off": c.namf_handed_off,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn gnbs_and_ngap_counters_are_reported_once() {
        let mut r = CoreReport::default();
        r.n2.n2.ng_setup_ok = 3;
        r.n2.sctp = vec![
            (TransportKind::Raw, sctp::EndpointStats::default()),
            (TransportKind::Udp, sctp::EndpointStats::default()),
        ];
        let listening = vec![
            (TransportKind::Raw, "127.0.0.1:38412".parse().unwrap()),
            (TransportKind::Udp, "127.0.0.1:9899".parse().unwrap()),
        ];
        let rows = transport_reports(&r, &listening);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].transport, "raw");
        assert_eq!(rows[1].local, "127.0.0.1:9899");
        let total = crate::report::AmfRunReport::new(&rows);
        assert_eq!(total.n2.ng_setup_ok, 3);
    }
}
