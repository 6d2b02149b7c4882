//! `steer5g ran`: the flags turned into a run of `ran::load`, NG Setup alone or, with
//! `--subscribers`, the UE load generator, and its report printed.

use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ran::load::{
    load_subscribers, report, suci_scheme, traffic, tun, GnbIdentity, LoadConfig, RanConfig,
};
use steer5g_config::{Config, Transport as TransportKind};

use crate::cli::{parse_host_port, Global, RanArgs};
use crate::exit::CliError;

/// The key file from `--hn-key-file`, else the configuration's `udm.hn_key_file` (by
/// default `<data-dir>/hn-keys.toml`).
pub(crate) fn key_file(hn_key_file: Option<&Path>, data_dir: &Path, cfg: &Config) -> PathBuf {
    hn_key_file.map_or_else(|| cfg.hn_key_file(data_dir), Path::to_path_buf)
}

/// What the gNBs broadcast: the core's own reading of the configuration.
pub(crate) fn gnb_identity(cfg: &Config) -> Result<GnbIdentity, CliError> {
    let (guami, tacs, slices) = steer5g_core::identity(cfg)?;
    Ok(GnbIdentity::new(guami.plmn, &tacs, slices)?)
}

/// Where the AMF is: its transport address and its SCTP port.
struct Target {
    cfg: Config,
    transport: TransportKind,
    amf: SocketAddrV4,
    /// The other AMFs of its set.
    amf_set: Vec<SocketAddrV4>,
    sctp_port: u16,
}

fn target(global: &Global, args: &RanArgs) -> Result<Target, CliError> {
    let cfg = crate::cli::load_config(global, &args.network, None)?;
    let transport: TransportKind = args.transport.into();
    let default_port = match transport {
        TransportKind::Raw => cfg.n2.sctp_port,
        TransportKind::Udp => cfg.n2.udp_port,
    };
    // `--amf A,B,...`: the first, then the other AMFs of its set.
    let mut amfs = Vec::new();
    for s in args
        .amf
        .iter()
        .flat_map(|a| a.split(','))
        .filter(|s| !s.is_empty())
    {
        amfs.push(parse_host_port(s, default_port)?);
    }
    let amf = match amfs.first() {
        Some(a) => *a,
        None => SocketAddrV4::new(cfg.n2.addr, default_port),
    };
    let amf_set = amfs.get(1..).unwrap_or_default().to_vec();
    let sctp_port = match (transport, args.sctp_port) {
        (_, Some(p)) => p,
        (TransportKind::Raw, None) => amf.port(),
        (TransportKind::Udp, None) => cfg.n2.sctp_port,
    };
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(CliError::Usage(
            "--timeout must be a positive number of seconds".into(),
        ));
    }
    if !(args.connect_timeout.is_finite() && args.connect_timeout > 0.0) {
        return Err(CliError::Usage(
            "--connect-timeout must be a positive number of seconds".into(),
        ));
    }
    Ok(Target {
        cfg,
        transport,
        amf,
        amf_set,
        sctp_port,
    })
}

/// The gNBs of `args` against the AMF of `t`.
fn ran_config(args: &RanArgs, t: &Target) -> Result<RanConfig, CliError> {
    Ok(RanConfig {
        identity: gnb_identity(&t.cfg)?,
        transport: t.transport,
        amf: t.amf,
        sctp_port: t.sctp_port,
        local_addr: args.local_addr,
        gnbs: args.gnbs,
        gnb_id_base: args.gnb_id_base,
        timeout: Duration::from_secs_f64(args.timeout),
        connect_timeout: Duration::from_secs_f64(args.connect_timeout),
        amf_set: t.amf_set.clone(),
        sctp: t.cfg.sctp,
    })
}

/// `steer5g ran`.
pub(crate) fn run(global: &Global, args: &RanArgs) -> Result<(), CliError> {
    if args.load.subscribers.is_some() {
        return run_ues(global, args);
    }
    let t = target(global, args)?;
    let report = ran::load::ng_setup(&ran_config(args, &t)?)?;
    if global.json {
        crate::report::print_json(&report)?;
    } else {
        ran::load::setup::print_human(&report);
    }
    if report.all_ok() {
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} of {} NG Setups failed",
            report.ng_setup_failed, report.gnbs
        )))
    }
}

/// `steer5g ran --subscribers ...`.
fn run_ues(global: &Global, args: &RanArgs) -> Result<(), CliError> {
    let la = &args.load;
    let Some(csv) = &la.subscribers else {
        return Err(CliError::Usage("--subscribers is required".into()));
    };
    let t = target(global, args)?;
    let subscribers = load_subscribers(csv)?;
    let (load, limit) = la.schedule(subscribers.len())?;
    // The public key file alone when one is named (flag, else configuration), unless the
    // flag names the private key file.
    let public = la.hn_public_key.clone().or_else(|| {
        la.hn_key_file
            .is_none()
            .then(|| t.cfg.ran.hn_public_key.clone())?
    });
    let (suci, suci_label) = match public {
        Some(p) => ran::load::suci_scheme_public(la.suci, &p)?,
        None => suci_scheme(
            la.suci,
            &key_file(
                la.hn_key_file.as_deref(),
                &crate::nf_cmd::data_dir(la.data_dir.as_deref(), &t.cfg),
                &t.cfg,
            ),
        )?,
    };
    let sessions = la.sessions()?;
    let traffic = la.traffic(&args.traffic)?;
    let tun = la.tun(&args.traffic)?;
    let with_traffic = traffic.is_some();
    let with_tun = tun.is_some();
    // Bound before any NG Setup: a missing privilege or a taken port ends the run early.
    let on_sessions_up = match (traffic, tun) {
        (Some(t), _) => {
            let sock = t.bind()?;
            Some(t.hook(sock))
        }
        (None, Some(t)) => {
            let sock = t.bind()?;
            Some(t.hook(sock))
        }
        (None, None) => None,
    };
    let plan = LoadConfig {
        ran: ran_config(args, &t)?,
        mode: la.procedure,
        load,
        limit,
        subscribers,
        suci,
        suci_label,
        sessions,
        on_sessions_up,
        on_hold: None,
    };
    plan.shape().steps().map_err(CliError::Usage)?;
    let report = ran::load::run(&plan)?;
    if global.json {
        crate::report::print_json(&report)?;
    } else {
        report::print_human(&report);
    }
    if report.ok {
        if with_traffic {
            traffic::verdict(report.user_plane.as_ref())?;
        }
        if with_tun {
            tun::verdict(report.user_plane.as_ref())?;
        }
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} procedure(s) failed, {} run(s) failed or not started",
            report.procedures_failed,
            report.runs_failed + report.runs_not_started
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_the_flag_else_the_configured_one_in_the_data_dir() {
        let cfg = Config::default();
        let dir = Path::new("/d");
        assert_eq!(
            key_file(None, dir, &cfg),
            dir.join(store::hn_keys::HN_KEY_FILE)
        );
        assert_eq!(
            key_file(Some(Path::new("/x/k.toml")), dir, &cfg),
            Path::new("/x/k.toml")
        );
    }
}
