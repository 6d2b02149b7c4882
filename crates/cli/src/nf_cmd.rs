//! `steer5g ausf` and `steer5g udm`: one network function per process, on the same core crate as
//! `steer5g core` with only that NF hosted; the NFs it calls are reached over h2c at their
//! directory addresses.
//!
//! Also the machinery `steer5g amf` shares with them: the common flags, the options, the
//! wait for SIGINT/SIGTERM/`--duration`, and the mapping of core errors to exit statuses.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use sbi::{NfType, StaticDirectory};
use steer5g_config::Config;
use steer5g_core::{Core, CoreHandle, CoreOptions, CoreReport, NfSet, StateMode};

use crate::cli::{Global, NetworkArgs};
use crate::core_cmd::StateArg;
use crate::exit::CliError;

/// Flags every single-NF process shares.
#[derive(Debug, Args, Clone)]
pub(crate) struct NfRunArgs {
    /// Worker threads, each with one shard of the NF.
    #[arg(long, default_value_t = 1, env = "STEER5G_WORKERS")]
    pub(crate) workers: u16,
    /// Where per-UE state lives.
    #[arg(long, value_enum, default_value_t = StateArg::Sharded)]
    pub(crate) state: StateArg,
    /// Open a new SBI connection per request (the NFs this one calls).
    #[arg(long)]
    pub(crate) short_connections: bool,
    /// Pin worker threads to cores.
    #[arg(long)]
    pub(crate) pin: bool,
    /// Stop after this many seconds (default: run until SIGINT/SIGTERM).
    #[arg(long, value_name = "SECS")]
    pub(crate) duration: Option<f64>,
    #[command(flatten)]
    pub(crate) bpf: crate::core_cmd::BpfArgs,
    /// Worker count of the NF processes this one calls (AUSF, UDM, SMF, AMF), so that its
    /// shard-aware SBI client picks their owners' connections (default: the same as
    /// --workers).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub(crate) peer_workers: Option<u16>,
    #[command(flatten)]
    pub(crate) metrics: MetricsArgs,
    #[command(flatten)]
    pub(crate) limits: crate::cli::LimitArgs,
    #[command(flatten)]
    pub(crate) nrf: crate::nrf_agent::NrfUseArgs,
    /// Log every NGAP, NAS, SBI and PFCP message of this subscriber (repeat for several),
    /// at INFO under `steer5g::trace`, secrets redacted.
    #[arg(long, value_name = "SUPI", value_parser = parse_trace_supi)]
    pub(crate) trace_supi: Vec<String>,
}

/// `--trace-supi`: a SUPI as the store has it.
pub(crate) fn parse_trace_supi(s: &str) -> Result<String, String> {
    store::subscriber::validate_supi(s)
        .map(|()| s.to_owned())
        .map_err(|e| e.to_string())
}

/// Where the process serves Prometheus `GET /metrics` (by convention port 9090 of the NF's
/// address). One endpoint per process: `steer5g core` serves it on the AMF's.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct MetricsArgs {
    /// Serve /metrics here (default: the configuration's `metrics.addr`, else port 9090 of
    /// the first hosted NF's address: AMF, else AUSF, else UDM, else SMF).
    #[arg(long, value_name = "ADDR:PORT", conflicts_with = "no_metrics")]
    pub(crate) metrics_addr: Option<SocketAddr>,
    /// Serve no /metrics endpoint (as `metrics.enabled = false`).
    #[arg(long)]
    pub(crate) no_metrics: bool,
}

/// The UDR's provisioning API of a process that holds the store (`core`, `udm`): always on
/// the Unix socket `<data-dir>/provisioning.sock` (where `steer5g subscriber` finds it), and
/// on TCP if asked.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ProvisioningArgs {
    /// Also serve the provisioning API on TCP here. Off a loopback address it needs
    /// --provisioning-token-file.
    #[arg(long, value_name = "ADDR:PORT", env = "STEER5G_PROVISIONING_ADDR")]
    pub(crate) provisioning_addr: Option<SocketAddr>,
    /// File holding the bearer token TCP requests must carry (`Authorization: Bearer ...`);
    /// a request without it gets 401.
    #[arg(long, value_name = "FILE", env = "STEER5G_PROVISIONING_TOKEN_FILE")]
    pub(crate) provisioning_token_file: Option<PathBuf>,
    /// Serve no provisioning API (the store then cannot be changed while this runs; as
    /// `provisioning.enabled = false`).
    #[arg(long, conflicts_with_all = ["provisioning_addr", "provisioning_token_file"])]
    pub(crate) no_provisioning: bool,
}

impl ProvisioningArgs {
    /// The API's settings, the token read from its file: the flags', else the
    /// configuration's `[provisioning]`.
    pub(crate) fn resolve(
        &self,
        cfg: &steer5g_config::ProvisioningConfig,
    ) -> Result<Option<steer5g_core::provisioning::ProvisioningOptions>, CliError> {
        let flagged = self.provisioning_addr.is_some() || self.provisioning_token_file.is_some();
        if self.no_provisioning || !(cfg.enabled || flagged) {
            return Ok(None);
        }
        let addr = self.provisioning_addr.or(cfg.addr);
        let token_file = self
            .provisioning_token_file
            .as_ref()
            .or(cfg.token_file.as_ref());
        // An unreadable file is named as the user gave it: flag (or its variable) or key.
        let given = if self.provisioning_token_file.is_some() {
            "--provisioning-token-file"
        } else {
            "provisioning.token_file"
        };
        let token = match token_file {
            Some(f) => {
                let t = std::fs::read_to_string(f)
                    .map_err(|e| CliError::Usage(format!("{given} {}: {e}", f.display())))?;
                Some(t.trim().to_owned())
            }
            None => None,
        };
        let opts = steer5g_core::provisioning::ProvisioningOptions {
            socket: None,
            tcp: addr,
            token,
        };
        opts.check()?;
        Ok(Some(opts))
    }
}

/// The Prometheus port of every NF (the README's conventions).
const METRICS_PORT: u16 = 9090;

impl MetricsArgs {
    /// The endpoint's address for a process started with `opts`: the flag's, else port 9090
    /// of the first hosted NF's address; `None` with `--no-metrics`.
    pub(crate) fn resolve(&self, opts: &CoreOptions) -> Option<SocketAddr> {
        if self.no_metrics {
            return None;
        }
        if let Some(a) = self.metrics_addr {
            return Some(a);
        }
        let m = &opts.config.metrics;
        if !m.enabled {
            return None;
        }
        if let Some(a) = m.addr {
            return Some(a);
        }
        let ip = if opts.nfs.amf {
            Some(std::net::IpAddr::V4(opts.config.n2.addr))
        } else {
            [NfType::Ausf, NfType::Udm, NfType::Smf]
                .into_iter()
                .filter(|&nf| opts.nfs.hosts(nf) || (nf == NfType::Smf && opts.smf.is_some()))
                .find_map(|nf| {
                    let base = opts.directory.base_uri(nf)?;
                    let host = base.strip_prefix("http://")?.split('/').next()?;
                    host.parse::<SocketAddr>().ok().map(|a| a.ip())
                })
        };
        ip.map(|ip| SocketAddr::new(ip, METRICS_PORT))
    }
}

/// `steer5g ausf`.
#[derive(Debug, Args)]
pub(crate) struct AusfArgs {
    #[command(flatten)]
    pub(crate) network: NetworkArgs,
    #[command(flatten)]
    pub(crate) run: NfRunArgs,
    /// Where the AUSF listens for h2c (default: the configuration's `sbi.ausf`, 127.0.0.11:7777).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) sbi_addr: Option<SocketAddr>,
    /// The UDM's base URI (default: the configuration's `sbi.udm`, http://127.0.0.12:7777).
    #[arg(long, value_name = "URI")]
    pub(crate) udm: Option<String>,
}

/// `steer5g udm`.
#[derive(Debug, Args)]
pub(crate) struct UdmArgs {
    #[command(flatten)]
    pub(crate) network: NetworkArgs,
    #[command(flatten)]
    pub(crate) run: NfRunArgs,
    /// Where the UDM listens for h2c (default: the configuration's `sbi.udm`, 127.0.0.12:7777).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) sbi_addr: Option<SocketAddr>,
    /// Subscriber store (the UDR) and home network keys [default: the configuration's
    /// `store.data_dir`, ./steer5g-data].
    #[arg(long, env = "STEER5G_DATA_DIR", value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// The subscriber store on PostgreSQL (`postgres://user@host:port/db`; a password from
    /// PGPASSWORD), shared by several instances, instead of the file in --data-dir
    /// [default: the configuration's `store.url`].
    #[arg(long, env = "STEER5G_STORE", value_name = "URL")]
    pub(crate) store: Option<String>,
    /// Create the subscriber store and the home network keys in `--data-dir` when it has
    /// none (otherwise a missing store is an error).
    #[arg(long)]
    pub(crate) init: bool,
    #[command(flatten)]
    pub(crate) provisioning: ProvisioningArgs,
}

/// A process that holds the subscriber store (`core`, `udm`) opens one that exists: a
/// mistyped `--data-dir` must not become a new, empty store with new home network keys.
/// Creating one is explicit: `--init`, or `subscriber import|add`.
pub(crate) fn check_store(data_dir: &Path, init: bool, cfg: &Config) -> Result<(), CliError> {
    if init {
        return Ok(());
    }
    let hint = |what: &str, path: &Path| {
        CliError::Usage(format!(
            "no {what} at {}; create one with `steer5g subscriber import FILE.csv --data-dir {}` \
             or `--init`",
            path.display(),
            data_dir.display()
        ))
    };
    let present = |path: &Path| match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        // Permission denied is said as such, not as a missing store.
        Err(e) => Err(CliError::Failed(format!("{}: {e}", path.display()))),
    };
    // A PostgreSQL store is created by its migrations; the key file is still local.
    if cfg.store.url.is_none() && !present(&data_dir.join(store::STORE_FILE))? {
        return Err(hint("store", data_dir));
    }
    let keys = cfg.hn_key_file(data_dir);
    if !present(&keys)? {
        return Err(hint("home network key file", &keys));
    }
    Ok(())
}

/// `--store` (or `STEER5G_STORE`) over the configuration's `store.url`, checked.
pub(crate) fn store_url(flag: Option<&str>, cfg: &mut Config) -> Result<(), CliError> {
    if let Some(url) = flag {
        if !steer5g_config::services::is_store_url(url) {
            return Err(CliError::Usage(
                "--store: expected postgres://USER@HOST:PORT/DB (or postgresql://)".to_owned(),
            ));
        }
        cfg.store.url = Some(url.to_owned());
    }
    Ok(())
}

/// The data directory: the flag's (or `STEER5G_DATA_DIR`), else the configuration's
/// `store.data_dir`.
pub(crate) fn data_dir(flag: Option<&Path>, cfg: &Config) -> PathBuf {
    flag.map_or_else(|| cfg.store.data_dir.clone(), Path::to_path_buf)
}

/// `--duration` as a limit; checked before anything is bound.
pub(crate) fn duration_limit(d: Option<f64>) -> Result<Option<Duration>, CliError> {
    match d {
        Some(d) if d.is_finite() && d >= 0.0 => Ok(Some(Duration::from_secs_f64(d))),
        Some(d) => Err(CliError::Usage(format!(
            "--duration {d}: must be a non-negative number"
        ))),
        None => Ok(None),
    }
}

/// Points `nf` of `dir` at `uri`, which must be `http://` (the SBI here is h2c only).
pub(crate) fn set_peer(dir: &mut StaticDirectory, nf: NfType, uri: &str) -> Result<(), CliError> {
    if !uri.starts_with("http://") || uri.len() <= "http://".len() {
        return Err(CliError::Usage(format!(
            "--{} {uri}: an http:// URI is needed (the SBI is h2c)",
            nf.to_string().to_ascii_lowercase()
        )));
    }
    dir.set(nf, uri);
    Ok(())
}

/// The core options of a process hosting `nfs`, with the shared flags applied.
pub(crate) fn options(run: &NfRunArgs, nfs: NfSet, data_dir: PathBuf, cfg: Config) -> CoreOptions {
    let mut opts = CoreOptions::new(data_dir);
    opts.trace_supis = run.trace_supi.clone();
    opts.nfs = nfs;
    opts.workers = run.workers;
    opts.pin = run.pin;
    opts.short_connections = run.short_connections;
    opts.state = state_mode(run.state);
    opts.set_config(cfg);
    run.bpf.apply(&mut opts);
    if let Some(n) = run.peer_workers {
        opts.directory.set_workers(NfType::Ausf, n);
        opts.directory.set_workers(NfType::Udm, n);
        opts.directory.set_workers(NfType::Smf, n);
        opts.directory.set_workers(NfType::Amf, n);
    }
    opts
}

fn state_mode(s: StateArg) -> StateMode {
    match s {
        StateArg::Sharded => StateMode::Sharded,
        StateArg::Locked => StateMode::Locked,
    }
}

fn state_name(s: StateArg) -> &'static str {
    match s {
        StateArg::Sharded => "sharded",
        StateArg::Locked => "locked",
    }
}

/// Starts the core, with its /metrics endpoint as `metrics` says, with the README's exit
/// statuses: bad settings 2 (a taken metrics port too: a flag fixes it), no CAP_NET_RAW (or
/// no CAP_BPF with `--require-bpf`) 3; says how each SBI listener delivers.
pub(crate) fn start(mut opts: CoreOptions, metrics: &MetricsArgs) -> Result<CoreHandle, CliError> {
    opts.metrics = metrics.resolve(&opts);
    match Core::start(opts) {
        Ok(core) => {
            crate::core_cmd::log_sbi_listeners(core.listening());
            if let Some(a) = core.listening().metrics {
                tracing::info!("metrics: http://{a}/metrics");
            }
            if let Some(p) = &core.listening().provisioning_socket {
                match core.listening().provisioning_tcp {
                    Some(a) => tracing::info!("provisioning API: {} and http://{a}", p.display()),
                    None => tracing::info!("provisioning API: {}", p.display()),
                }
            }
            Ok(core)
        }
        Err(e @ steer5g_core::CoreError::Metrics(_)) => Err(CliError::Usage(format!(
            "{e} (choose another with --metrics-addr ADDR:PORT, or --no-metrics)"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// With `--nrf`, registers the NFs `core` hosts, announcing `--workers`, and keeps the
/// instances of `targets` (the peers it discovered, as `requester`) current in its workers.
pub(crate) fn register(
    run: &NfRunArgs,
    core: &CoreHandle,
    cfg: &Config,
    requester: NfType,
    targets: &[NfType],
) -> Result<Option<crate::nrf_agent::Agent>, CliError> {
    if run.nrf.nrf.is_none() {
        return Ok(None);
    }
    let watch = (!targets.is_empty()).then(|| crate::nrf_agent::Watch {
        updater: core.peer_updater(),
        requester,
        targets: targets.to_vec(),
    });
    crate::nrf_agent::profiles_of(core, run.workers, cfg).and_then(|p| run.nrf.register(p, watch))
}

/// Stops the core and collects its counters.
pub(crate) fn stop(core: CoreHandle) -> Result<CoreReport, CliError> {
    tracing::info!("stopping");
    Ok(core.stop()?)
}

/// SIGINT and SIGTERM, watched from the start of a serving command ([`catch_stop_signals`])
/// so that one arriving while the process starts (after a test or a supervisor saw its ready
/// line, before [`wait_for_stop`]) stops it in order instead of killing it.
struct StopSignals {
    rt: tokio::runtime::Runtime,
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

static CAUGHT: std::sync::Mutex<Option<StopSignals>> = std::sync::Mutex::new(None);

impl StopSignals {
    fn install() -> Result<Self, CliError> {
        use tokio::signal::unix::{signal, SignalKind};
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))?;
        let (term, int) = {
            let _in = rt.enter();
            let watch = |k: SignalKind, name: &str| {
                signal(k).map_err(|e| CliError::Failed(format!("cannot watch {name}: {e}")))
            };
            (
                watch(SignalKind::terminate(), "SIGTERM")?,
                watch(SignalKind::interrupt(), "SIGINT")?,
            )
        };
        Ok(StopSignals { rt, term, int })
    }
}

/// Starts watching SIGINT and SIGTERM for a later [`wait_for_stop`]; called first thing by
/// the commands that serve until stopped.
pub(crate) fn catch_stop_signals() {
    match StopSignals::install() {
        Ok(s) => {
            if let Ok(mut c) = CAUGHT.lock() {
                *c = Some(s);
            }
        }
        // wait_for_stop installs them itself, later.
        Err(e) => tracing::debug!(error = %e, "stop signals not watched at start"),
    }
}

/// Blocks until SIGINT, SIGTERM (also one received since [`catch_stop_signals`]), or
/// `limit`.
pub(crate) fn wait_for_stop(limit: Option<Duration>) -> Result<(), CliError> {
    let caught = CAUGHT.lock().ok().and_then(|mut c| c.take());
    let StopSignals {
        rt,
        mut term,
        mut int,
    } = match caught {
        Some(s) => s,
        None => StopSignals::install()?,
    };
    rt.block_on(async {
        let sleep = async {
            match limit {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = sleep => {}
        }
    });
    Ok(())
}

/// The delivery and runtime counters every NF process reports.
pub(crate) fn runtime_json(r: &CoreReport, state: StateArg) -> serde_json::Value {
    let c = r.counters_total();
    serde_json::json!({
        "threads": r.workers.len(),
        "state": state_name(state),
        "sbi_served": c.sbi_served,
        "sbi_local": c.sbi_local,
        "sbi_handed_off": c.sbi_handed_off,
        "sbi_kernel_steered": c.sbi_kernel_steered,
        "sbi_pool_steered": c.sbi_pool_steered,
        "sbi_misdirected": c.sbi_misdirected,
        "h2c_calls": c.h2c_calls,
        "call_failures": c.call_failures,
        "call_retries": c.call_retries,
        "mesh_sent": r.mesh_total.sent,
        "mesh_max_depth": r.mesh_total.max_depth,
        "lock_acquisitions": r.locks.acquisitions,
        "lock_contended": r.locks.contended,
        "counters": bench::live::live_counters(r),
        "held_at_stop": held_json(r.held(state == StateArg::Locked)),
    })
}

/// The contexts a process held when it stopped, as its `--json` report gives them.
pub(crate) fn held_json(h: steer5g_core::HeldContexts) -> serde_json::Value {
    serde_json::json!({
        "amf_ues": h.amf_ues,
        "amf_idle": h.amf_idle,
        "ausf": h.ausf,
        "smf": h.smf,
    })
}

/// Adds every key of `extra` to the object `v`.
pub(crate) fn merge(v: &mut serde_json::Value, extra: serde_json::Value) {
    if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
}

/// `steer5g ausf`.
pub(crate) fn run_ausf(global: &Global, args: &AusfArgs) -> Result<(), CliError> {
    let mut cfg = crate::cli::load_config(global, &args.network, None)?;
    args.run.limits.apply(&mut cfg)?;
    let limit = duration_limit(args.run.duration)?;
    // Without a data dir of its own: the AUSF holds no subscriber data.
    let mut opts = options(&args.run, NfSet::AUSF, PathBuf::new(), cfg);
    if let Some(a) = args.sbi_addr {
        opts.directory.set(NfType::Ausf, format!("http://{a}"));
    }
    let watched: &[NfType] = match &args.udm {
        Some(u) => {
            set_peer(&mut opts.directory, NfType::Udm, u)?;
            &[]
        }
        None => &[NfType::Udm],
    };
    args.run.nrf.discover(NfType::Ausf, watched, &mut opts)?;
    args.run
        .nrf
        .apply_tokens(&mut opts, NfType::Ausf, &[NfType::Ausf])?;
    let udm = opts
        .directory
        .base_uri(NfType::Udm)
        .unwrap_or_default()
        .to_owned();
    let cfg = opts.config.clone();
    let core = start(opts, &args.run.metrics)?;
    let at = core.listening().ausf;
    if let Some(a) = at {
        tracing::info!("SBI listening: AUSF {a} (UDM at {udm})");
    }
    let agent = register(&args.run, &core, &cfg, NfType::Ausf, watched)?;
    wait_for_stop(limit)?;
    if let Some(a) = agent {
        a.stop();
    }
    let r = stop(core)?;
    let a = r.ausf_total();
    if global.json {
        let mut v = serde_json::json!({
            "nf": "ausf",
            "listening": at.map(|a| a.to_string()),
            "udm": udm,
            "ausf": {
                "contexts": a.contexts,
                "successes": a.successes,
                "failures": a.failures,
                "expired": a.expired,
                "misrouted": a.misrouted,
                "events_acked": a.events_acked,
                "events_failed": a.events_failed,
                "stray_replies": a.stray_replies,
            },
        });
        merge(&mut v, runtime_json(&r, args.run.state));
        crate::report::print_json(&v)?;
    } else {
        let c = r.counters_total();
        println!(
            "AUSF: {} workers ({}), {} authentications started, {} confirmed, {} failed, {} expired",
            r.workers.len(),
            state_name(args.run.state),
            a.contexts,
            a.successes,
            a.failures,
            a.expired
        );
        println!(
            "  SBI: {} served, {} handed off; {} calls to the UDM, {} failed",
            c.sbi_served, c.sbi_handed_off, c.h2c_calls, c.call_failures
        );
        println!("  {}", bench::live::live_counters_line(&r));
    }
    Ok(())
}

/// `steer5g udm`.
pub(crate) fn run_udm(global: &Global, args: &UdmArgs) -> Result<(), CliError> {
    let mut cfg = crate::cli::load_config(global, &args.network, None)?;
    args.run.limits.apply(&mut cfg)?;
    let limit = duration_limit(args.run.duration)?;
    store_url(args.store.as_deref(), &mut cfg)?;
    let data_dir = data_dir(args.data_dir.as_deref(), &cfg);
    check_store(&data_dir, args.init, &cfg)?;
    let provisioning = args.provisioning.resolve(&cfg.provisioning)?;
    let mut opts = options(&args.run, NfSet::UDM, data_dir.clone(), cfg);
    if let Some(a) = args.sbi_addr {
        opts.directory.set(NfType::Udm, format!("http://{a}"));
    }
    opts.provisioning = provisioning;
    args.run
        .nrf
        .apply_tokens(&mut opts, NfType::Udm, &[NfType::Udm])?;
    let cfg = opts.config.clone();
    let core = start(opts, &args.run.metrics)?;
    let at = core.listening().udm;
    if let Some(a) = at {
        tracing::info!("SBI listening: UDM {a} (data dir {})", data_dir.display());
    }
    let agent = register(&args.run, &core, &cfg, NfType::Udm, &[])?;
    wait_for_stop(limit)?;
    if let Some(a) = agent {
        a.stop();
    }
    let r = stop(core)?;
    let u = r.udm_total();
    let c = r.counters_total();
    if global.json {
        let mut v = serde_json::json!({
            "nf": "udm",
            "listening": at.map(|a| a.to_string()),
            "data_dir": data_dir.display().to_string(),
            "udm": {
                "vectors": u.vectors,
                "resyncs": u.resyncs,
                "dereg_notifications": u.dereg_notifications,
                "dereg_notification_failures": u.dereg_notification_failures,
                "sdm_notifications": u.sdm_notifications,
                "sdm_notification_failures": u.sdm_notification_failures,
                "resync_failures": u.resync_failures,
                "suci_hops": u.suci_hops,
                "misrouted": u.misrouted,
                "parked": u.parked,
            },
            "udm_forwards": c.udm_forwards,
            "sqn_writes": r.sqn_writes,
        });
        merge(&mut v, runtime_json(&r, args.run.state));
        crate::report::print_json(&v)?;
    } else {
        println!(
            "UDM: {} workers ({}), {} authentication vectors, {} resyncs, {} SQN writes",
            r.workers.len(),
            state_name(args.run.state),
            u.vectors,
            u.resyncs,
            r.sqn_writes
        );
        println!(
            "  SBI: {} served, {} handed off, {} forwarded after SUCI deconcealment",
            c.sbi_served, c.sbi_handed_off, c.udm_forwards
        );
        println!("  {}", bench::live::live_counters_line(&r));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// `[provisioning]` when no flag is given; a flag over it; an unreadable token file named
    /// as it was given.
    #[test]
    fn the_provisioning_api_follows_the_configuration_under_its_flags() {
        let none = ProvisioningArgs::default();
        let mut cfg = steer5g_config::ProvisioningConfig::default();
        assert!(none.resolve(&cfg).unwrap().is_some());
        cfg.enabled = false;
        assert!(none.resolve(&cfg).unwrap().is_none());
        let flagged = ProvisioningArgs {
            provisioning_addr: Some("127.0.0.1:7781".parse().unwrap()),
            ..ProvisioningArgs::default()
        };
        let o = flagged.resolve(&cfg).unwrap().unwrap();
        assert_eq!(o.tcp, Some("127.0.0.1:7781".parse().unwrap()));
        cfg.enabled = true;
        cfg.addr = Some("127.0.0.1:7782".parse().unwrap());
        cfg.token_file = Some(PathBuf::from("/nonexistent/steer5g-token"));
        let e = none.resolve(&cfg).unwrap_err().to_string();
        assert!(e.contains("provisioning.token_file"), "{e}");
        let named = ProvisioningArgs {
            provisioning_token_file: Some(PathBuf::from("/nonexistent/other")),
            ..ProvisioningArgs::default()
        };
        let e = named.resolve(&cfg).unwrap_err().to_string();
        assert!(e.contains("--provisioning-token-file"), "{e}");
    }

    #[test]
    fn durations_must_be_finite_and_non_negative() {
        assert_eq!(duration_limit(None).unwrap(), None);
        assert_eq!(
            duration_limit(Some(1.5)).unwrap(),
            Some(Duration::from_millis(1500))
        );
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(duration_limit(Some(bad)), Err(CliError::Usage(_))));
        }
    }

    #[test]
    fn peers_must_be_h2c_uris() {
        let mut d = StaticDirectory::new();
        set_peer(&mut d, NfType::Udm, "http://127.0.0.72:7000/").unwrap();
        assert_eq!(d.base_uri(NfType::Udm), Some("http://127.0.0.72:7000"));
        for bad in ["https://127.0.0.72:7000", "127.0.0.72:7000", "http://"] {
            assert!(matches!(
                set_peer(&mut d, NfType::Udm, bad),
                Err(CliError::Usage(_))
            ));
        }
        assert_eq!(d.base_uri(NfType::Udm), Some("http://127.0.0.72:7000"));
    }

    #[test]
    fn metrics_default_to_port_9090_of_the_first_hosted_nf() {
        let m = MetricsArgs::default();
        let mut o = CoreOptions::new(PathBuf::new());
        assert_eq!(m.resolve(&o), Some("127.0.0.5:9090".parse().unwrap()));
        o.nfs = NfSet::AUSF;
        assert_eq!(m.resolve(&o), Some("127.0.0.11:9090".parse().unwrap()));
        o.nfs = NfSet::UDM;
        o.directory.set(NfType::Udm, "http://127.0.9.12:7000");
        assert_eq!(m.resolve(&o), Some("127.0.9.12:9090".parse().unwrap()));
        o.nfs = NfSet {
            amf: false,
            ausf: false,
            udm: false,
        };
        assert_eq!(m.resolve(&o), None);
        o.smf = Some(steer5g_core::SmfOptions::default());
        assert_eq!(m.resolve(&o), Some("127.0.0.4:9090".parse().unwrap()));
        let off = MetricsArgs {
            metrics_addr: None,
            no_metrics: true,
        };
        assert_eq!(off.resolve(&o), None);
        let at = MetricsArgs {
            metrics_addr: Some("127.0.0.1:0".parse().unwrap()),
            no_metrics: false,
        };
        assert_eq!(at.resolve(&o), Some("127.0.0.1:0".parse().unwrap()));
    }

    #[test]
    fn merged_reports_keep_both_sides() {
        let mut v = serde_json::json!({"nf": "udm"});
        merge(&mut v, serde_json::json!({"threads": 2}));
        assert_eq!(v["nf"], "udm");
        assert_eq!(v["threads"], 2);
    }
}
