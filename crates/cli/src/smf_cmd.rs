//! `steer5g smf`: the SMF alone (every NF can run as a process of its own), on the core crate
//! with only SMF shards hosted: Nsmf_PDUSession (TS 29.502) served over h2c on a listener
//! group at its directory address (127.0.0.4:7777), PFCP (TS 29.244) from every worker to
//! the UPF, and the UDM (Nudm_SDM) and the AMF (Namf_Communication N1N2MessageTransfer)
//! called over h2c at theirs.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::Args;
use sbi::NfType;
use steer5g_core::{DnnPool, NfSet, SbiMode, SmfOptions};

use crate::cli::{Global, NetworkArgs};
use crate::exit::CliError;
use crate::nf_cmd::{self, NfRunArgs};

/// `steer5g smf`.
#[derive(Debug, Args)]
pub(crate) struct SmfArgs {
    #[command(flatten)]
    pub(crate) network: NetworkArgs,
    #[command(flatten)]
    pub(crate) run: NfRunArgs,
    /// Where the SMF listens for h2c (default: the configuration's `sbi.smf`, 127.0.0.4:7777).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) sbi_addr: Option<SocketAddr>,
    /// The UPF's PFCP address [default: with --nrf, the UPF the NRF offers for the first
    /// DNN; else the configuration's `smf.upf`, 127.0.0.7:8805].
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) upf: Option<SocketAddr>,
    /// The address every worker's PFCP socket binds and advertises in its CP F-SEID
    /// (default: the `--sbi-addr`'s IPv4 address, else the configuration's `smf.pfcp_addr`,
    /// 127.0.0.4).
    #[arg(long, value_name = "IPV4")]
    pub(crate) pfcp_addr: Option<Ipv4Addr>,
    /// A served DNN and its UE IPv4 pool, NAME=NET/LEN (repeatable; default: the
    /// configuration's `smf.dnns`, internet=10.45.0.0/16). Each pool is split between the
    /// workers.
    #[arg(long, value_name = "NAME=NET/LEN")]
    pub(crate) dnn: Vec<String>,
    /// The AMF's base URI, for N1N2MessageTransfer (default: the configuration's `sbi.amf`, http://127.0.0.5:7777).
    #[arg(long, value_name = "URI")]
    pub(crate) amf: Option<String>,
    /// The UDM's base URI, for the session management subscription data (default: the
    /// configuration's `sbi.udm`, http://127.0.0.12:7777).
    #[arg(long, value_name = "URI")]
    pub(crate) udm: Option<String>,
    /// Seconds between the PFCP heartbeats each worker sends the UPF to find out that it
    /// restarted and restore its sessions (0: none) [default: the configuration's
    /// `pfcp.heartbeat_s`, 10].
    #[arg(long, value_name = "SECS")]
    pub(crate) pfcp_heartbeat: Option<f64>,
}

/// `--pfcp-heartbeat SECS`: `None` for 0.
pub(crate) fn pfcp_heartbeat(secs: f64) -> Result<Option<std::time::Duration>, CliError> {
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(CliError::Usage(format!(
            "--pfcp-heartbeat {secs}: must be a non-negative number of seconds"
        )));
    }
    Ok((secs > 0.0).then(|| std::time::Duration::from_secs_f64(secs)))
}

/// `NAME=NET/LEN`, e.g. `internet=10.45.0.0/16`.
pub(crate) fn parse_dnn(s: &str) -> Result<DnnPool, CliError> {
    let p = steer5g_config::parse_dnn_pool(s).map_err(|e| CliError::Usage(format!("--dnn {e}")))?;
    Ok(dnn_pool(p))
}

fn dnn_pool(p: steer5g_config::DnnPoolSpec) -> DnnPool {
    DnnPool {
        dnn: p.dnn,
        net: p.net,
        prefix_len: p.prefix_len,
    }
}

/// The SMF as the configuration has it: `[smf]` (its PFCP address, the UPF, the DNN
/// pools) and `[pfcp]`'s heartbeat; the slices and the stamp stay the defaults.
pub(crate) fn configured(cfg: &steer5g_config::Config) -> Result<SmfOptions, CliError> {
    Ok(SmfOptions {
        upf: cfg.smf.upf,
        pfcp_ip: cfg.smf.pfcp_addr,
        dnns: cfg.smf.pools()?.into_iter().map(dnn_pool).collect(),
        heartbeat: cfg.pfcp.heartbeat(),
        ..SmfOptions::default()
    })
}

/// `steer5g smf`.
pub(crate) fn run(global: &Global, args: &SmfArgs) -> Result<(), CliError> {
    let mut cfg = crate::cli::load_config(global, &args.network, None)?;
    args.run.limits.apply(&mut cfg)?;
    let limit = nf_cmd::duration_limit(args.run.duration)?;
    // The served slices are the configuration's (`--slice`), as the AMF's are.
    let (_, _, slices) = steer5g_core::identity(&cfg)?;
    let slices = slices
        .into_iter()
        .map(|s| sbi::model::Snssai {
            sst: s.sst,
            sd: s.sd.map(|sd| {
                let b = sd.to_be_bytes();
                sbi::model::HexBytes([b[1], b[2], b[3]])
            }),
        })
        .collect();
    let none = NfSet {
        amf: false,
        ausf: false,
        udm: false,
    };
    // The SMF keeps no subscriber data: no data dir.
    let mut opts = nf_cmd::options(&args.run, none, PathBuf::new(), cfg);
    opts.smf_sbi = SbiMode::H2c;
    if let Some(a) = args.sbi_addr {
        opts.directory.set(NfType::Smf, format!("http://{a}"));
    }
    let mut wanted = Vec::new();
    match &args.amf {
        Some(u) => nf_cmd::set_peer(&mut opts.directory, NfType::Amf, u)?,
        None => wanted.push(NfType::Amf),
    }
    match &args.udm {
        Some(u) => nf_cmd::set_peer(&mut opts.directory, NfType::Udm, u)?,
        None => wanted.push(NfType::Udm),
    }
    args.run.nrf.discover(NfType::Smf, &wanted, &mut opts)?;
    args.run
        .nrf
        .apply_tokens(&mut opts, NfType::Smf, &[NfType::Smf])?;
    let mut smf = SmfOptions {
        slices,
        // A new stamp even when killed and started again within a second, so that the UPF
        // drops the sessions of the SMF that died (TS 23.527 §4.4.2).
        recovery_time_stamp: Some(upf::service::fresh_recovery_time_stamp()),
        ..configured(&opts.config)?
    };
    match args.upf {
        Some(u) => smf.upf = u,
        None => {
            let dnn = smf.dnns.first().map(|d| d.dnn.clone());
            if let Some(u) = args.run.nrf.discover_upf(dnn.as_deref())? {
                smf.upf = u;
            }
        }
    }
    if let Some(h) = args.pfcp_heartbeat {
        smf.heartbeat = pfcp_heartbeat(h)?;
    }
    smf.pfcp_ip = match (args.pfcp_addr, args.sbi_addr) {
        (Some(ip), _) => ip,
        (None, Some(SocketAddr::V4(a))) => *a.ip(),
        (None, _) => smf.pfcp_ip,
    };
    if !args.dnn.is_empty() {
        smf.dnns = args
            .dnn
            .iter()
            .map(|d| parse_dnn(d))
            .collect::<Result<_, _>>()?;
    }
    let dnns: Vec<String> = smf.dnns.iter().map(|d| d.dnn.clone()).collect();
    let upf_addr = smf.upf;
    opts.smf = Some(smf);
    let peers = format!(
        "AMF at {}, UDM at {}, UPF at {upf_addr}",
        opts.directory.base_uri(NfType::Amf).unwrap_or("?"),
        opts.directory.base_uri(NfType::Udm).unwrap_or("?"),
    );
    let cfg = opts.config.clone();
    let core = nf_cmd::start(opts, &args.run.metrics)?;
    let at = core.listening().smf;
    if let Some(a) = at {
        tracing::info!("SBI listening: SMF {a} ({peers})");
    }
    let agent = nf_cmd::register(&args.run, &core, &cfg, NfType::Smf, &wanted)?;
    nf_cmd::wait_for_stop(limit)?;
    if let Some(a) = agent {
        a.stop();
    }
    let r = nf_cmd::stop(core)?;
    let s = r.smf_total();
    let c = r.counters_total();
    if global.json {
        let mut v = serde_json::json!({
            "nf": "smf",
            "listening": at.map(|a| a.to_string()),
            "upf": upf_addr.to_string(),
            "dnns": dnns,
            "smf": {
                "created": s.created,
                "rejected": s.rejected,
                "activated": s.activated,
                "released": s.released,
                "n1n2_sent": s.n1n2_sent,
                "n1n2_failed": s.n1n2_failed,
                "misrouted": s.misrouted,
                "stray_pfcp": s.stray_pfcp,
                "usage_reports": s.usage_reports,
                "heartbeats_sent": s.heartbeats_sent,
                "heartbeats_unanswered": s.heartbeats_unanswered,
                "upf_restarts": s.upf_restarts,
                "sessions_restored": s.sessions_restored,
                "restore_failed": s.restore_failed,
                "duplicates_released": s.duplicates_released,
                "pfcp_unparsed": s.pfcp_unparsed,
                "abandoned_deleted": s.abandoned_deleted,
                "abandoned_delete_failed": s.abandoned_delete_failed,
                "abandoned_unnamed": s.abandoned_unnamed,
            },
            "pfcp_retransmitted": c.pfcp_retransmitted,
            "pfcp_timed_out": c.pfcp_timed_out,
            "nsmf_served": c.nsmf_served,
            "nsmf_kernel_steered": c.nsmf_kernel_steered,
            "nsmf_handed_off": c.nsmf_handed_off,
            "namf_pool_steered": c.namf_pool_steered,
        });
        nf_cmd::merge(&mut v, nf_cmd::runtime_json(&r, args.run.state));
        crate::report::print_json(&v)?;
    } else {
        println!(
            "SMF: {} workers, {} SM contexts created, {} rejected, {} activated, {} released",
            r.workers.len(),
            s.created,
            s.rejected,
            s.activated,
            s.released
        );
        println!(
            "  Nsmf: {} served ({} kernel-steered, {} handed off); {} N1N2MessageTransfers, {} failed",
            c.nsmf_served, c.nsmf_kernel_steered, c.nsmf_handed_off, s.n1n2_sent, s.n1n2_failed
        );
        println!("  {}", bench::live::live_counters_line(&r));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn dnn_pools_parse_and_bad_ones_are_usage_errors() {
        let d = parse_dnn("ims=10.46.0.0/24").unwrap();
        assert_eq!(
            (d.dnn.as_str(), d.net, d.prefix_len),
            ("ims", Ipv4Addr::new(10, 46, 0, 0), 24)
        );
        for bad in [
            "ims",
            "=10.0.0.0/8",
            "ims=10.0.0.0",
            "ims=10.0.0/8",
            "ims=10.0.0.0/32",
            "ims=10.0.0.0/x",
        ] {
            assert!(matches!(parse_dnn(bad), Err(CliError::Usage(_))), "{bad}");
        }
    }
}
