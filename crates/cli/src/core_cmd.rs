//! `steer5g core`: the AMF, AUSF and UDM in one process on the thread-per-core runtime
//! (the `steer5g-core` crate does the work; this is its command line).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use proto::nas::{CipheringAlgorithm, IntegrityAlgorithm};
use steer5g_core::{CoreOptions, CoreReport, SbiMode, StateMode};

use crate::cli::{Global, N2ListenArgs, NetworkArgs};
use crate::exit::CliError;

/// Where per-UE state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StateArg {
    /// Each worker owns its UEs; messages hop to the owner.
    Sharded,
    /// Shared locked maps; messages handled where they are read (the baseline).
    Locked,
}

/// How the NFs talk to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SbiArg {
    /// HTTP/2 cleartext on loopback.
    H2c,
    /// In-process, same JSON bodies.
    Inproc,
}

/// `steer5g core`.
#[derive(Debug, Args)]
pub(crate) struct CoreArgs {
    #[command(flatten)]
    pub(crate) network: NetworkArgs,
    #[command(flatten)]
    pub(crate) listen: N2ListenArgs,
    #[command(flatten)]
    pub(crate) nrf: crate::nrf_agent::NrfUseArgs,
    /// Worker threads, each with one shard of every NF.
    #[arg(long, default_value_t = 1, env = "STEER5G_WORKERS")]
    pub(crate) workers: u16,
    /// Where per-UE state lives.
    #[arg(long, value_enum, default_value_t = StateArg::Sharded)]
    pub(crate) state: StateArg,
    /// How the NFs talk [default: h2c]. The AMF and the SMF (--smf) stay in-process unless
    /// `--sbi h2c` is given: then Nsmf_PDUSession and N1N2MessageTransfer go over h2c too,
    /// at the configuration's `sbi.smf` (127.0.0.4:7777) and `sbi.amf` (127.0.0.5:7777).
    #[arg(long, value_enum)]
    pub(crate) sbi: Option<SbiArg>,
    /// With `--sbi inproc`: serve the AUSF and the UDM over h2c as well, at the
    /// configuration's `sbi.ausf` and `sbi.udm`, for NFs of other processes (an AMF elsewhere,
    /// `steer5g bench sbi`), while the NFs of this process keep calling each other in-process.
    #[arg(long)]
    pub(crate) serve_sbi: bool,
    /// Open a new SBI connection per request.
    #[arg(long)]
    pub(crate) short_connections: bool,
    /// Pin worker threads to cores.
    #[arg(long)]
    pub(crate) pin: bool,
    /// Authenticate on every registration.
    #[arg(long)]
    pub(crate) always_auth: bool,
    /// Subscriber store and home network keys [default: the configuration's
    /// `store.data_dir`, ./steer5g-data].
    #[arg(long, env = "STEER5G_DATA_DIR", value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// The subscriber store on PostgreSQL (`postgres://user@host:port/db`; a password from
    /// PGPASSWORD), shared by several instances, instead of the file in --data-dir
    /// [default: the configuration's `store.url`].
    #[arg(long, env = "STEER5G_STORE", value_name = "URL")]
    pub(crate) store: Option<String>,
    /// Create the subscriber store and the home network keys in `--data-dir` when it has
    /// none. Without it a missing store is an error, so that a mistyped directory is not
    /// taken for a new, empty one.
    #[arg(long)]
    pub(crate) init: bool,
    /// N2 transports to listen on (default: the configuration's `n2.transports`, raw and
    /// udp; without CAP_NET_RAW and not asked for, udp alone with a warning).
    #[arg(long, value_enum, env = "STEER5G_N2_TRANSPORT")]
    pub(crate) transport: Option<crate::cli::ListenTransport>,
    /// Stop after this many seconds (default: run until SIGINT/SIGTERM).
    #[arg(long, value_name = "SECS")]
    pub(crate) duration: Option<f64>,
    #[command(flatten)]
    pub(crate) nas: NasAlgorithmArgs,
    #[command(flatten)]
    pub(crate) metrics: crate::nf_cmd::MetricsArgs,
    #[command(flatten)]
    pub(crate) provisioning: crate::nf_cmd::ProvisioningArgs,
    /// Log every NGAP, NAS, SBI and PFCP message of this subscriber (repeat for several),
    /// at INFO under `steer5g::trace`, secrets redacted.
    #[arg(long, value_name = "SUPI", value_parser = crate::nf_cmd::parse_trace_supi)]
    pub(crate) trace_supi: Vec<String>,
    #[command(flatten)]
    pub(crate) bpf: BpfArgs,
    #[command(flatten)]
    pub(crate) limits: crate::cli::LimitArgs,
    /// Host an SMF shard on every worker (PDU sessions; PFCP to the UPF at the
    /// configuration's `smf.upf`, 127.0.0.7:8805).
    #[arg(long)]
    pub(crate) smf: bool,
    /// Also run a UPF in this process (PFCP on the configuration's `upf.pfcp_addr`,
    /// 127.0.0.7:8805; rules kept in memory, no packet forwarding): PDU sessions without
    /// root. Implies `--smf`.
    #[arg(long)]
    pub(crate) upf_inproc: bool,
    /// The UPF's PFCP address, for --smf with a UPF of its own (`steer5g upf`) [default:
    /// the configuration's `smf.upf`].
    #[arg(
        long,
        value_name = "ADDR:PORT",
        requires = "smf",
        conflicts_with = "upf_inproc"
    )]
    pub(crate) upf: Option<std::net::SocketAddr>,
    /// A served DNN and its UE IPv4 pool, NAME=NET/LEN (repeatable; with --smf; default:
    /// the configuration's `smf.dnns`, internet=10.45.0.0/16), e.g. the lab's pool the data
    /// network routes via the UPF.
    #[arg(long, value_name = "NAME=NET/LEN")]
    pub(crate) dnn: Vec<String>,
    /// Seconds between the PFCP heartbeats each SMF worker sends the UPF to find out that it
    /// restarted and restore its sessions (0: none; with --smf) [default: the
    /// configuration's `pfcp.heartbeat_s`, 10].
    #[arg(long, value_name = "SECS")]
    pub(crate) pfcp_heartbeat: Option<f64>,
}

/// Kernel steering of the SBI listeners (`steer5g core`, `amf`, `ausf`, `udm`, `demo`).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct BpfArgs {
    /// Fail (exit status 3) when an sk_reuseport program (SBI listeners, the N2 UDP group)
    /// cannot be loaded, instead of falling back to the one-hop hand-off or the kernel's
    /// hash (CI sets it).
    #[arg(long, env = "STEER5G_REQUIRE_BPF", value_parser = clap::builder::FalseyValueParser::new())]
    pub(crate) require_bpf: bool,
}

impl BpfArgs {
    /// Puts the flag into `opts` (the environment variable already set the default there).
    pub(crate) fn apply(&self, opts: &mut CoreOptions) {
        if self.require_bpf {
            opts.bpf = steer5g_core::BpfPolicy::Require;
        }
    }
}

/// One start-up line per SBI listener group: how requests reach their owners. The mechanism
/// is chosen per interface, so the operator is told which one each interface got.
pub(crate) fn log_sbi_listeners(l: &steer5g_core::Listening) {
    // Info, not a warning: steer-bpf has already warned once about a failed load.
    for s in &l.sbi {
        tracing::info!("{s}");
    }
}

/// The NAS security algorithms the AMF may select (`steer5g core` and `steer5g demo`).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct NasAlgorithmArgs {
    /// NAS integrity algorithms the AMF may select, most preferred first, e.g. `nia2,nia1`
    /// (nia1, nia2, nia3; default: the configuration's `amf.nas_integrity`).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_nia)]
    pub(crate) nas_integrity: Option<Vec<IntegrityAlgorithm>>,
    /// NAS ciphering algorithms the AMF may select, most preferred first, e.g. `nea0`
    /// (nea0, nea1, nea2, nea3; default: the configuration's `amf.nas_ciphering`).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_nea)]
    pub(crate) nas_cipher: Option<Vec<CipheringAlgorithm>>,
}

impl NasAlgorithmArgs {
    /// Puts the preference lists into `opts`: the flags' when given, else the configuration's
    /// `amf.nas_integrity` / `amf.nas_ciphering`.
    pub(crate) fn apply(
        &self,
        amf: &steer5g_config::AmfConfig,
        opts: &mut CoreOptions,
    ) -> Result<(), CliError> {
        opts.integrity = match &self.nas_integrity {
            Some(list) => no_repeats(list, "--nas-integrity")?,
            None => from_config(&amf.nas_integrity, "amf.nas_integrity", parse_nia)?,
        };
        opts.ciphering = match &self.nas_cipher {
            Some(list) => no_repeats(list, "--nas-cipher")?,
            None => from_config(&amf.nas_ciphering, "amf.nas_ciphering", parse_nea)?,
        };
        Ok(())
    }
}

/// A configuration list of algorithm names; `Config::validate` has checked it, so an error
/// here means the two disagree on a name.
fn from_config<T>(
    names: &[String],
    field: &str,
    parse: fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, CliError> {
    names
        .iter()
        .map(|n| parse(n).map_err(|e| CliError::Usage(format!("{field}: {e}"))))
        .collect()
}

/// A preference list that names an algorithm twice is a typo, not a preference.
fn no_repeats<T: PartialEq + Copy + std::fmt::Debug>(
    list: &[T],
    flag: &str,
) -> Result<Vec<T>, CliError> {
    let mut out: Vec<T> = Vec::with_capacity(list.len());
    for &a in list {
        if out.contains(&a) {
            return Err(CliError::Usage(format!("{flag}: {a:?} listed twice")));
        }
        out.push(a);
    }
    Ok(out)
}

/// One NAS integrity algorithm by name. NIA0 is refused: TS 33.501 §5.5.2 allows null
/// integrity only for unauthenticated emergency sessions, which this AMF does not serve.
pub(crate) fn parse_nia(s: &str) -> Result<IntegrityAlgorithm, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "nia1" | "128-nia1" => Ok(IntegrityAlgorithm::Nia1),
        "nia2" | "128-nia2" => Ok(IntegrityAlgorithm::Nia2),
        "nia3" | "128-nia3" => Ok(IntegrityAlgorithm::Nia3),
        "nia0" => Err("nia0 (null integrity) is for emergency sessions only".into()),
        other => Err(format!(
            "unknown integrity algorithm {other:?} (nia1, nia2, nia3)"
        )),
    }
}

/// One NAS ciphering algorithm by name (NEA0, null ciphering, is allowed: TS 33.501 §5.5.1).
pub(crate) fn parse_nea(s: &str) -> Result<CipheringAlgorithm, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "nea0" => Ok(CipheringAlgorithm::Nea0),
        "nea1" | "128-nea1" => Ok(CipheringAlgorithm::Nea1),
        "nea2" | "128-nea2" => Ok(CipheringAlgorithm::Nea2),
        "nea3" | "128-nea3" => Ok(CipheringAlgorithm::Nea3),
        other => Err(format!(
            "unknown ciphering algorithm {other:?} (nea0, nea1, nea2, nea3)"
        )),
    }
}

/// The SMF of `--smf`/`--upf-inproc`, with `--upf` and `--dnn`; `--dnn` alone is bad usage.
fn smf_options(
    args: &CoreArgs,
    cfg: &steer5g_config::Config,
) -> Result<Option<steer5g_core::SmfOptions>, CliError> {
    if !(args.smf || args.upf_inproc) {
        if args.dnn.is_empty() {
            return Ok(None);
        }
        return Err(CliError::Usage(
            "--dnn needs --smf (or --upf-inproc)".into(),
        ));
    }
    let mut smf = crate::smf_cmd::configured(cfg)?;
    if let Some(h) = args.pfcp_heartbeat {
        smf.heartbeat = crate::smf_cmd::pfcp_heartbeat(h)?;
    }
    if let Some(u) = args.upf {
        smf.upf = u;
        // With a UPF of its own process, the SMF may be killed and started again while the
        // UPF lives on: it must announce a new stamp (TS 23.527 §4.4.2).
        smf.recovery_time_stamp = Some(upf::service::fresh_recovery_time_stamp());
    }
    if !args.dnn.is_empty() {
        smf.dnns = args
            .dnn
            .iter()
            .map(|d| crate::smf_cmd::parse_dnn(d))
            .collect::<Result<_, _>>()?;
    }
    Ok(Some(smf))
}

/// `steer5g core`.
pub(crate) fn run(global: &Global, args: &CoreArgs) -> Result<(), CliError> {
    let mut cfg = crate::cli::load_config(global, &args.network, Some(&args.listen))?;
    args.limits.apply(&mut cfg)?;
    crate::n2::listen_transports(&mut cfg, args.transport);
    let limit = crate::nf_cmd::duration_limit(args.duration)?;
    crate::nf_cmd::store_url(args.store.as_deref(), &mut cfg)?;
    let data_dir = crate::nf_cmd::data_dir(args.data_dir.as_deref(), &cfg);
    let mut opts = CoreOptions::new(data_dir.clone());
    opts.set_config(cfg.clone());
    opts.workers = args.workers;
    opts.pin = args.pin;
    opts.state = match args.state {
        StateArg::Sharded => StateMode::Sharded,
        StateArg::Locked => StateMode::Locked,
    };
    opts.sbi = match args.sbi {
        Some(SbiArg::H2c) | None => SbiMode::H2c,
        Some(SbiArg::Inproc) => SbiMode::Inproc,
    };
    opts.serve_sbi = args.serve_sbi;
    if args.sbi == Some(SbiArg::H2c) && (args.smf || args.upf_inproc) {
        opts.smf_sbi = SbiMode::H2c;
    }
    opts.short_connections = args.short_connections;
    opts.always_auth = args.always_auth;
    args.nas.apply(&cfg.amf, &mut opts)?;
    args.bpf.apply(&mut opts);
    opts.smf = smf_options(args, &cfg)?;
    if args.upf_inproc {
        opts.upf = Some(steer5g_core::UpfOptions {
            pfcp: cfg.upf.pfcp_addr,
            n3: match cfg.upf.n3_addr.ip() {
                std::net::IpAddr::V4(ip) => ip,
                std::net::IpAddr::V6(_) => steer5g_core::UpfOptions::default().n3,
            },
            ..steer5g_core::UpfOptions::default()
        });
    }
    // Last of the checks: a bad flag is named before a missing store.
    crate::nf_cmd::check_store(&data_dir, args.init, &cfg)?;
    opts.provisioning = args.provisioning.resolve(&cfg.provisioning)?;
    opts.trace_supis = args.trace_supi.clone();
    args.nrf.apply_tokens(
        &mut opts,
        sbi::NfType::Amf,
        &[
            sbi::NfType::Amf,
            sbi::NfType::Ausf,
            sbi::NfType::Udm,
            sbi::NfType::Smf,
        ],
    )?;
    let core = crate::nf_cmd::start(opts, &args.metrics)?;
    for (kind, addr) in &core.listening().n2 {
        tracing::info!("N2 listening: {kind} {addr}");
    }
    if let (Some(a), Some(u)) = (core.listening().ausf, core.listening().udm) {
        tracing::info!("SBI listening: AUSF {a}, UDM {u}");
    }
    if let (Some(s), Some(a)) = (core.listening().smf, core.listening().amf) {
        tracing::info!("SBI listening: SMF {s}, AMF {a} (Nsmf, N1N2MessageTransfer)");
    }
    let agent = match &args.nrf.nrf {
        Some(_) => crate::nrf_agent::profiles_of(&core, args.workers, &cfg)
            .and_then(|p| args.nrf.register(p, None))?,
        None => None,
    };
    crate::nf_cmd::wait_for_stop(limit)?;
    if let Some(a) = agent {
        a.stop();
    }
    let report = crate::nf_cmd::stop(core)?;
    print_report(global, &report, args.state == StateArg::Locked)
}

fn print_report(global: &Global, r: &CoreReport, locked: bool) -> Result<(), CliError> {
    let amf = r.amf_total();
    let c = r.counters_total();
    if global.json {
        let v = serde_json::json!({
            "workers": r.workers.len(),
            "registrations": amf.registrations,
            "deregistrations": amf.deregistrations,
            "ues_created": amf.ues_created,
            "ng_setup_ok": r.n2.n2.ng_setup_ok,
            "ngap_local": c.ngap_local,
            "ngap_handed_off": c.ngap_handed_off,
            "sbi_local": c.sbi_local,
            "sbi_handed_off": c.sbi_handed_off,
            "sbi_kernel_steered": c.sbi_kernel_steered,
            "sbi_pool_steered": c.sbi_pool_steered,
            "sbi_misdirected": c.sbi_misdirected,
            "udm_forwards": c.udm_forwards,
            "mesh_sent": r.mesh_total.sent,
            "mesh_max_depth": r.mesh_total.max_depth,
            "lock_acquisitions": r.locks.acquisitions,
            "lock_contended": r.locks.contended,
            "sqn_writes": r.sqn_writes,
            "udm": {
                "vectors": r.udm_total().vectors,
                "resyncs": r.udm_total().resyncs,
                "resync_failures": r.udm_total().resync_failures,
            },
            "n2_packets_in": r.n2.packets_in,
            "n2_packets_out": r.n2.packets_out,
            "n2_send_calls": r.n2.send_calls,
            "n2_associations": r.n2.associations,
            "n2_associations_per_worker": r.n2.workers.iter().map(|w| w.associations).collect::<Vec<_>>(),
            "counters": bench::live::live_counters(r),
            "held_at_stop": crate::nf_cmd::held_json(r.held(locked)),
        });
        crate::report::print_json(&v)?;
    } else {
        println!(
            "core: {} workers, {} NG Setups, {} registrations, {} deregistrations",
            r.workers.len(),
            r.n2.n2.ng_setup_ok,
            amf.registrations,
            amf.deregistrations
        );
        println!(
            "  NGAP: {} local, {} handed off; SBI: {} local, {} handed off, {} UDM forwards",
            c.ngap_local, c.ngap_handed_off, c.sbi_local, c.sbi_handed_off, c.udm_forwards
        );
        let per_worker: Vec<String> =
            r.n2.workers
                .iter()
                .map(|w| format!("w{} {}", w.worker, w.associations))
                .collect();
        println!(
            "  N2 associations: {} ({})",
            r.n2.associations,
            per_worker.join(", ")
        );
        println!(
            "  SBI paths: {} kernel-steered, {} sent on the owner's connection, {} misdirected",
            c.sbi_kernel_steered, c.sbi_pool_steered, c.sbi_misdirected
        );
        println!(
            "  mesh: {} sent, max depth {}; locks: {} taken, {} contended; {} SQN writes",
            r.mesh_total.sent,
            r.mesh_total.max_depth,
            r.locks.acquisitions,
            r.locks.contended,
            r.sqn_writes
        );
        println!("  {}", bench::live::live_counters_line(r));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use steer5g_config::Config;

    fn core_args(args: &[&str]) -> CoreArgs {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct T {
            #[command(flatten)]
            a: CoreArgs,
        }
        T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
            .unwrap()
            .a
    }

    #[test]
    fn an_external_upf_and_dnn_pools_reach_the_smf() {
        assert!(smf_options(&core_args(&[]), &Config::default())
            .unwrap()
            .is_none());
        let smf = smf_options(
            &core_args(&[
                "--smf",
                "--upf",
                "127.0.0.132:8805",
                "--dnn",
                "internet=10.9.64.0/18",
                "--dnn",
                "ims=10.46.0.0/24",
            ]),
            &Config::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(smf.upf, "127.0.0.132:8805".parse().unwrap());
        let pools: Vec<_> = smf
            .dnns
            .iter()
            .map(|d| (d.dnn.as_str(), d.net, d.prefix_len))
            .collect();
        assert_eq!(
            pools,
            [
                ("internet", std::net::Ipv4Addr::new(10, 9, 64, 0), 18),
                ("ims", std::net::Ipv4Addr::new(10, 46, 0, 0), 24)
            ]
        );
        // The default UPF without --upf.
        let smf = smf_options(&core_args(&["--smf"]), &Config::default())
            .unwrap()
            .unwrap();
        assert_eq!(smf.upf, steer5g_core::SmfOptions::default().upf);
        // Without flags, the configuration's `[smf]` and `[pfcp]`.
        let cfg = Config::from_toml(
            "[smf]\nupf = \"127.0.3.7:8805\"\npfcp_addr = \"127.0.3.4\"\n\
             dnns = [\"ims=10.47.0.0/24\"]\n[pfcp]\nheartbeat_s = 0",
        )
        .unwrap();
        let smf = smf_options(&core_args(&["--smf"]), &cfg).unwrap().unwrap();
        assert_eq!(smf.upf, "127.0.3.7:8805".parse().unwrap());
        assert_eq!(smf.pfcp_ip, std::net::Ipv4Addr::new(127, 0, 3, 4));
        assert_eq!(smf.dnns[0].dnn, "ims");
        assert_eq!(smf.heartbeat, None);
        // --dnn without an SMF, or a bad pool: exit 2.
        for bad in [
            &["--dnn", "internet=10.9.64.0/18"][..],
            &["--smf", "--dnn", "x"],
        ] {
            let e = smf_options(&core_args(bad), &Config::default()).unwrap_err();
            assert_eq!(e.exit_status(), 2, "{bad:?}");
        }
    }

    #[test]
    fn parses_algorithm_names() {
        assert_eq!(parse_nia("NIA2").unwrap(), IntegrityAlgorithm::Nia2);
        assert_eq!(parse_nia("128-nia3").unwrap(), IntegrityAlgorithm::Nia3);
        assert!(parse_nia("nia0").is_err());
        assert!(parse_nia("nea1").is_err());
        assert!(parse_nia("").is_err());
        assert_eq!(parse_nea("nea0").unwrap(), CipheringAlgorithm::Nea0);
        assert_eq!(parse_nea(" nea1").unwrap(), CipheringAlgorithm::Nea1);
        assert!(parse_nea("nea4").is_err());
    }

    #[test]
    fn lists_go_into_the_options_in_order() {
        let amf = steer5g_config::AmfConfig::default();
        let mut opts = CoreOptions::new(PathBuf::from("unused"));
        let args = NasAlgorithmArgs {
            nas_integrity: Some(vec![IntegrityAlgorithm::Nia1, IntegrityAlgorithm::Nia2]),
            nas_cipher: Some(vec![CipheringAlgorithm::Nea0]),
        };
        args.apply(&amf, &mut opts).unwrap();
        assert_eq!(
            opts.integrity,
            vec![IntegrityAlgorithm::Nia1, IntegrityAlgorithm::Nia2]
        );
        assert_eq!(opts.ciphering, vec![CipheringAlgorithm::Nea0]);
        let twice = NasAlgorithmArgs {
            nas_integrity: None,
            nas_cipher: Some(vec![CipheringAlgorithm::Nea2, CipheringAlgorithm::Nea2]),
        };
        assert!(matches!(
            twice.apply(&amf, &mut CoreOptions::new(PathBuf::from("unused"))),
            Err(CliError::Usage(_))
        ));
    }

    #[test]
    fn lists_not_given_come_from_the_configuration() {
        let mut amf = steer5g_config::AmfConfig::default();
        let mut opts = CoreOptions::new(PathBuf::from("unused"));
        NasAlgorithmArgs::default().apply(&amf, &mut opts).unwrap();
        use CipheringAlgorithm::*;
        use IntegrityAlgorithm::*;
        assert_eq!(opts.integrity, vec![Nia2, Nia1, Nia3]);
        assert_eq!(opts.ciphering, vec![Nea2, Nea1, Nea3, Nea0]);
        amf.nas_ciphering = vec!["nea0".into()];
        let args = NasAlgorithmArgs {
            nas_integrity: Some(vec![Nia3]),
            nas_cipher: None,
        };
        args.apply(&amf, &mut opts).unwrap();
        assert_eq!(opts.integrity, vec![Nia3]);
        assert_eq!(opts.ciphering, vec![Nea0]);
    }
}
