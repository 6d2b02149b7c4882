//! `steer5g upf`: the UPF's PFCP side (N4) on its loopback-plan address, with a chosen user-plane
//! datapath, until SIGINT/SIGTERM or `--duration`; then the report (`--json`: one object).
//!
//! [`build_datapath`] is where the user-plane paths plug in: the XDP fast path (crate
//! `upf-xdp`, on `--n3-if`/`--n6-if`) with the sockets/TUN path behind it for what it hands
//! to the kernel (outer fragments after reassembly, buffering, unresolved next hops), the
//! user-space sockets/TUN path alone (`upf::userspace`, the way Open5GS's UPF works), the
//! user-space AF_XDP path (crate `upf-afxdp`, copy mode, on `--n3-if`/`--n6-if`) and the
//! rules-only `none`. The report carries each path's per-cause counters under its name
//! (`xdp`, `tun`, `af_xdp`) and every drop cause summed under `drops`.

use std::net::{Ipv4Addr, SocketAddr};

use clap::{Args, ValueEnum};
use upf::userspace::shared::SharedDatapath;
use upf::userspace::tiered::Tiered;
use upf::userspace::{TunCounters, TunDatapath};
use upf::{Datapath, MemoryDatapath, ServiceOptions, ServiceReport, UpfService};

use crate::caps::{has_cap, CAP_BPF, CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN};
use steer5g_config::{Config, UpfConfig};

use crate::cli::Global;
use crate::exit::CliError;
use crate::nf_cmd::{duration_limit, wait_for_stop};

/// Which user-plane path carries the packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DatapathArg {
    /// XDP GTP-U fast path on --n3-if/--n6-if, with the TUN path behind it for what XDP
    /// hands to the kernel (needs root: CAP_NET_ADMIN and CAP_BPF).
    Xdp,
    /// User-space path through a TUN device (needs root: CAP_NET_ADMIN).
    Tun,
    /// User-space path over AF_XDP sockets in copy mode on --n3-if/--n6-if (needs root:
    /// CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF).
    Afxdp,
    /// Rules kept in memory only: FORWARDS NO PACKETS. Runs the PFCP side alone, e.g. to
    /// test an SMF's N4 procedures.
    None,
}

/// `steer5g upf`. The four settings the configuration also has (`upf.pfcp_addr`,
/// `upf.n3_addr`, `upf.ue_pool`, `pfcp.heartbeat_s`) are read as flags into `*_flag` and
/// settled by [`UpfArgs::settle`]: the flag, else the configuration.
#[derive(Debug, Clone, Args)]
pub(crate) struct UpfArgs {
    /// Register with the NRF at this base URI (e.g. http://127.0.0.10:7777), as a UPF
    /// profile (its PFCP address, slices and DNNs) that SMFs select through discovery.
    #[arg(long, value_name = "URI", env = "STEER5G_NRF")]
    pub(crate) nrf: Option<String>,
    /// PFCP (N4) address to serve [default: the configuration's `upf.pfcp_addr`,
    /// 127.0.0.7:8805].
    #[arg(long = "pfcp", value_name = "ADDR:PORT")]
    pfcp_flag: Option<SocketAddr>,
    #[arg(skip = UpfConfig::default().pfcp_addr)]
    pub(crate) pfcp: SocketAddr,
    /// GTP-U (N3) address: advertised in the F-TEIDs the UPF chooses [default: the
    /// configuration's `upf.n3_addr`, 127.0.0.7:2152].
    #[arg(long = "n3", value_name = "ADDR:PORT")]
    n3_flag: Option<SocketAddr>,
    #[arg(skip = UpfConfig::default().n3_addr)]
    pub(crate) n3: SocketAddr,
    /// User-plane datapath. `none` keeps the rules in memory and forwards nothing; `xdp` and
    /// `tun` need root.
    #[arg(long, value_enum, default_value_t = DatapathArg::None)]
    pub(crate) datapath: DatapathArg,
    /// N3 interface (towards the gNBs), for `--datapath xdp|afxdp`.
    #[arg(long, value_name = "IFNAME")]
    pub(crate) n3_if: Option<String>,
    /// N6 interface (towards the data network), for `--datapath xdp|afxdp`.
    #[arg(long, value_name = "IFNAME")]
    pub(crate) n6_if: Option<String>,
    /// Next hop on N6 for `--datapath afxdp` (its MAC comes from the kernel's neighbour
    /// table); without it only destinations with their own neighbour entry are reached.
    #[arg(long, value_name = "ADDR")]
    pub(crate) n6_gateway: Option<Ipv4Addr>,
    /// Network namespace (`ip netns` name, e.g. the lab's `{P}-upf`) of --n3-if/--n6-if
    /// and of the TUN device: the datapath works there while PFCP stays in this process's
    /// namespace (needs root).
    #[arg(long, value_name = "NS")]
    pub(crate) netns: Option<String>,
    /// Name of the TUN device `--datapath tun` creates.
    #[arg(long, default_value = "upf-tun0", value_name = "IFNAME")]
    pub(crate) tun_name: String,
    /// UE address pool `--datapath tun` routes into its TUN device and `--datapath afxdp`
    /// takes from N6 [default: the configuration's `upf.ue_pool`, 10.45.0.0/16].
    #[arg(long = "ue-pool", value_name = "ADDR/LEN", value_parser = parse_pool)]
    ue_pool_flag: Option<(Ipv4Addr, u8)>,
    #[arg(skip = (Ipv4Addr::new(10, 45, 0, 0), 16))]
    pub(crate) ue_pool: (Ipv4Addr, u8),
    /// Worker threads. Only 1 is supported so far: one worker serves every session (the
    /// worker number is still written into SEIDs and TEIDs).
    #[arg(long, default_value_t = 1, env = "STEER5G_WORKERS")]
    pub(crate) workers: u16,
    /// Seconds between our PFCP heartbeats to each associated SMF (0: none) [default: the
    /// configuration's `pfcp.heartbeat_s`, 10].
    #[arg(long = "heartbeat", value_name = "SECS")]
    heartbeat_flag: Option<f64>,
    #[arg(skip = 10.0)]
    pub(crate) heartbeat: f64,
    /// T1 and N1 of our PFCP requests (the configuration's `[pfcp]`).
    #[arg(skip = pfcp::txn::Retransmission::default())]
    pub(crate) pfcp_timers: pfcp::txn::Retransmission,
    /// Sessions held at most, on any datapath; an establishment beyond gets PFCP cause 75
    /// "No resources available". The default is the size of the XDP fast path's maps.
    #[arg(long, default_value_t = upf::node::DEFAULT_MAX_SESSIONS, value_name = "N")]
    pub(crate) max_sessions: usize,
    /// Stop after this many seconds (default: run until SIGINT/SIGTERM).
    #[arg(long, value_name = "SECS")]
    pub(crate) duration: Option<f64>,
    /// Serve Prometheus /metrics here (TS 28.552 measurements under Open5GS's names, and
    /// every path's packet counters), in this process's namespace, e.g. 127.0.0.7:9090.
    /// Default: none (several UPFs often share one address).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) metrics_addr: Option<SocketAddr>,
}

/// The XDP fast path with the TUN path behind it.
type XdpTun = Tiered<upf_xdp::XdpDatapath, TunDatapath>;

/// A path's per-cause counters, readable while the service runs (`/metrics`) and after it
/// has stopped (the report says which path carried the packets, and why each one it dropped
/// was dropped).
#[derive(Clone)]
enum Probe {
    Xdp(SharedDatapath<XdpTun>, upf_xdp::Counters),
    Tun(SharedDatapath<TunDatapath>),
    AfXdp(SharedDatapath<upf_afxdp::AfXdpDatapath>),
}

/// (name, count) pairs as a JSON object.
fn object<'a>(pairs: impl Iterator<Item = (&'a str, u64)>) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> =
        pairs.map(|(k, v)| (k.to_owned(), v.into())).collect();
    map.into()
}

impl Probe {
    /// Each path's counters under its name ("xdp", "tun", "af_xdp").
    fn counters(&self) -> Vec<(&'static str, serde_json::Value)> {
        let tun = |c: TunCounters| object(c.iter());
        match self {
            Probe::Xdp(dp, before) => {
                let mut out = Vec::new();
                if let Ok(now) = dp.with(|t| t.fast.counters()) {
                    out.push(("xdp", object(now.since(before).iter())));
                }
                out.push(("tun", dp.with(|t| tun(t.slow.counters()))));
                out
            }
            Probe::Tun(dp) => vec![("tun", dp.with(|t| tun(t.counters())))],
            Probe::AfXdp(dp) => vec![("af_xdp", dp.with(|t| tun(t.counters())))],
        }
    }
}

/// Every drop cause (`drop_*`) of the paths' counters, summed over the paths: the same
/// cause names wherever the cause is the same.
fn drops(paths: &[(&'static str, serde_json::Value)]) -> serde_json::Value {
    let mut sum: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for (_, counters) in paths {
        for (k, v) in counters.as_object().into_iter().flatten() {
            if k.starts_with("drop_") {
                *sum.entry(k.clone()).or_default() += v.as_u64().unwrap_or(0);
            }
        }
    }
    object(sum.iter().map(|(k, v)| (k.as_str(), *v)))
}

fn tun_options(args: &UpfArgs) -> Result<upf::userspace::TunOptions, CliError> {
    Ok(upf::userspace::TunOptions {
        netns: args.netns.clone(),
        n3_addr: n3_ip(args)?,
        tun_name: args.tun_name.clone(),
        ue_pool: args.ue_pool,
        n3_recv_buffer: upf::userspace::DEFAULT_N3_RECV_BUFFER,
    })
}

/// The datapath for the CLI choice: checks the flags it needs (exit 2) and the privilege it
/// needs (exit 3) before building it; with the probe of its counters.
fn build_datapath(args: &UpfArgs) -> Result<(Box<dyn Datapath + Send>, Option<Probe>), CliError> {
    check_netns(args)?;
    match args.datapath {
        DatapathArg::None => Ok((Box::new(MemoryDatapath::new()), None)),
        DatapathArg::Xdp => {
            if args.n3_if.is_none() || args.n6_if.is_none() {
                return Err(CliError::Usage(
                    "--datapath xdp needs --n3-if and --n6-if".into(),
                ));
            }
            if !has_cap(CAP_NET_ADMIN) || !(has_cap(CAP_BPF) || has_cap(CAP_SYS_ADMIN)) {
                return Err(CliError::Privilege(
                    "--datapath xdp needs CAP_NET_ADMIN and CAP_BPF (run as root)".into(),
                ));
            }
            let (Some(n3_iface), Some(n6_iface)) = (args.n3_if.clone(), args.n6_if.clone()) else {
                return Err(CliError::Usage(
                    "--datapath xdp needs --n3-if and --n6-if".into(),
                ));
            };
            let opts = upf_xdp::XdpOptions {
                netns: args.netns.clone(),
                n3_iface,
                n6_iface,
                n3_addr: n3_ip(args)?,
            };
            let dp = upf_xdp::XdpDatapath::attach(&opts)
                .map_err(|e| CliError::Failed(format!("XDP datapath: {e}")))?;
            tracing::info!(
                "user plane: XDP fast path on {} (N3) and {} (N6)",
                opts.n3_iface,
                opts.n6_iface
            );
            let before = dp
                .counters()
                .map_err(|e| CliError::Failed(format!("XDP counters: {e}")))?;
            // What XDP hands to the kernel (outer fragments once reassembled, buffering FARs,
            // expiring TTLs, unresolved next hops) reaches the TUN path's GTP-U socket and
            // TUN device in the same namespace instead of being lost there.
            let tun = TunDatapath::start(&tun_options(args)?)
                .map_err(|e| CliError::Failed(format!("TUN path behind XDP: {e}")))?;
            let dp = SharedDatapath::new(Tiered::new(dp, tun, "xdp+tun"));
            Ok((Box::new(dp.clone()), Some(Probe::Xdp(dp, before))))
        }
        DatapathArg::Tun => {
            if !has_cap(CAP_NET_ADMIN) {
                return Err(CliError::Privilege(
                    "--datapath tun needs CAP_NET_ADMIN (run as root)".into(),
                ));
            }
            let opts = tun_options(args)?;
            let dp = TunDatapath::start(&opts)
                .map_err(|e| CliError::Failed(format!("TUN datapath: {e}")))?;
            tracing::info!(
                "user plane: sockets/TUN path, GTP-U on {}:2152, UE pool {}/{} into {}",
                opts.n3_addr,
                opts.ue_pool.0,
                opts.ue_pool.1,
                opts.tun_name
            );
            let dp = SharedDatapath::new(dp);
            Ok((Box::new(dp.clone()), Some(Probe::Tun(dp))))
        }
        DatapathArg::Afxdp => {
            let (Some(n3_iface), Some(n6_iface)) = (args.n3_if.clone(), args.n6_if.clone()) else {
                return Err(CliError::Usage(
                    "--datapath afxdp needs --n3-if and --n6-if".into(),
                ));
            };
            if !has_cap(CAP_NET_ADMIN)
                || !has_cap(CAP_NET_RAW)
                || !(has_cap(CAP_BPF) || has_cap(CAP_SYS_ADMIN))
            {
                return Err(CliError::Privilege(
                    "--datapath afxdp needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (run as root)"
                        .into(),
                ));
            }
            let opts = upf_afxdp::AfXdpOptions {
                netns: args.netns.clone(),
                n3_iface,
                n6_iface,
                n3_addr: n3_ip(args)?,
                ue_pool: args.ue_pool,
                n6_gateway: args.n6_gateway,
                frames: 4096,
            };
            let dp = upf_afxdp::AfXdpDatapath::start(&opts).map_err(|e| match e {
                upf_afxdp::Error::NotPermitted(m) => CliError::Privilege(format!("AF_XDP: {m}")),
                e => CliError::Failed(format!("AF_XDP datapath: {e}")),
            })?;
            tracing::info!(
                "user plane: AF_XDP copy mode on {} (N3) and {} (N6), UE pool {}/{}",
                opts.n3_iface,
                opts.n6_iface,
                opts.ue_pool.0,
                opts.ue_pool.1
            );
            let dp = SharedDatapath::new(dp);
            Ok((Box::new(dp.clone()), Some(Probe::AfXdp(dp))))
        }
    }
}

/// `--netns`: a plain name (exit 2), a datapath that has interfaces (exit 2), the
/// namespace present (exit 2) and the privilege to enter it (exit 3).
fn check_netns(args: &UpfArgs) -> Result<(), CliError> {
    let Some(ns) = &args.netns else {
        return Ok(());
    };
    if ns.is_empty() || ns.contains('/') {
        return Err(CliError::Usage(format!(
            "--netns {ns:?}: not a namespace name"
        )));
    }
    if args.datapath == DatapathArg::None {
        return Err(CliError::Usage(
            "--netns needs a datapath with interfaces (xdp, tun or afxdp)".into(),
        ));
    }
    if !upf::userspace::netns::path(ns).exists() {
        return Err(CliError::Usage(format!(
            "--netns {ns}: no such namespace (create the lab with `steer5g lab up`)"
        )));
    }
    if !has_cap(CAP_SYS_ADMIN) {
        return Err(CliError::Privilege(format!(
            "--netns {ns}: entering a network namespace needs CAP_SYS_ADMIN (run as root)"
        )));
    }
    Ok(())
}

/// The N3 address as IPv4 (exit 2 otherwise).
fn n3_ip(args: &UpfArgs) -> Result<Ipv4Addr, CliError> {
    match args.n3 {
        SocketAddr::V4(a) => Ok(*a.ip()),
        SocketAddr::V6(_) => Err(CliError::Usage(
            "--n3: an IPv4 address is needed (N3 is IPv4 here)".into(),
        )),
    }
}

/// `ADDR/LEN` of an IPv4 pool.
fn parse_pool(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("{s}: expected ADDR/LEN"))?;
    let addr: Ipv4Addr = a.parse().map_err(|_| format!("{a}: not an IPv4 address"))?;
    let len: u8 = l
        .parse()
        .ok()
        .filter(|l| (1..=32).contains(l))
        .ok_or_else(|| format!("{l}: prefix length must be 1 to 32"))?;
    Ok((addr, len))
}

impl UpfArgs {
    /// The flags over the configuration (file < environment < flags).
    fn settle(&self, cfg: &Config) -> Result<UpfArgs, CliError> {
        let mut a = self.clone();
        a.pfcp = self.pfcp_flag.unwrap_or(cfg.upf.pfcp_addr);
        a.n3 = self.n3_flag.unwrap_or(cfg.upf.n3_addr);
        a.ue_pool = match self.ue_pool_flag {
            Some(p) => p,
            None => steer5g_config::parse_pool(&cfg.upf.ue_pool)
                .map_err(|m| CliError::Usage(format!("upf.ue_pool: {m}")))?,
        };
        a.heartbeat = self
            .heartbeat_flag
            .unwrap_or(f64::from(cfg.pfcp.heartbeat_s));
        a.pfcp_timers = pfcp::txn::Retransmission {
            t1: cfg.pfcp.t1(),
            n1: cfg.pfcp.n1,
        };
        Ok(a)
    }
}

/// Checks the flags that need no system access.
fn options(args: &UpfArgs) -> Result<ServiceOptions, CliError> {
    if args.workers != 1 {
        return Err(CliError::Usage(format!(
            "--workers {}: the UPF runs one worker so far",
            args.workers
        )));
    }
    let n3: Ipv4Addr = match args.n3 {
        SocketAddr::V4(a) => *a.ip(),
        SocketAddr::V6(_) => {
            return Err(CliError::Usage(
                "--n3: an IPv4 address is needed (N3 is IPv4 here)".into(),
            ))
        }
    };
    if args.pfcp.is_ipv6() {
        return Err(CliError::Usage("--pfcp: an IPv4 address is needed".into()));
    }
    if !(args.heartbeat.is_finite() && args.heartbeat >= 0.0) {
        return Err(CliError::Usage(format!(
            "--heartbeat {}: must be a non-negative number",
            args.heartbeat
        )));
    }
    if args.max_sessions == 0 {
        return Err(CliError::Usage(
            "--max-sessions 0: at least one session must fit".into(),
        ));
    }
    let mut opts = ServiceOptions::new(args.pfcp, n3);
    opts.node.t1 = args.pfcp_timers.t1;
    opts.node.n1 = args.pfcp_timers.n1;
    opts.node.heartbeat_interval =
        (args.heartbeat > 0.0).then(|| std::time::Duration::from_secs_f64(args.heartbeat));
    opts.node.max_sessions = args.max_sessions;
    Ok(opts)
}

/// Runs `steer5g upf`.
pub(crate) fn run(global: &Global, args: &UpfArgs) -> Result<(), CliError> {
    let args = &args.settle(&crate::cli::file_and_env(global)?)?;
    let limit = duration_limit(args.duration)?;
    let mut opts = options(args)?;
    let (dp, probe) = build_datapath(args)?;
    // A UPF killed and started again at once must still announce a new stamp, or the SMF
    // would not see that its sessions are gone (TS 23.527 §4.3.2).
    opts.node.recovery_time_stamp = upf::service::fresh_recovery_time_stamp();
    let name = dp.name();
    let svc = UpfService::start(opts, dp).map_err(|e| {
        let m = format!("cannot serve PFCP on {}: {e}", args.pfcp);
        if crate::exit::unbindable(&e) {
            CliError::Usage(m)
        } else {
            CliError::Failed(m)
        }
    })?;
    let carrier = match args.datapath {
        DatapathArg::None => " (rules only, forwards nothing)".to_owned(),
        DatapathArg::Tun => format!(" (user space: GTP-U socket + TUN {})", args.tun_name),
        DatapathArg::Xdp | DatapathArg::Afxdp => format!(
            " ({} on N3 {} / N6 {})",
            if args.datapath == DatapathArg::Xdp {
                "XDP fast path, TUN path behind it,"
            } else {
                "user space: AF_XDP copy-mode sockets"
            },
            args.n3_if.as_deref().unwrap_or("?"),
            args.n6_if.as_deref().unwrap_or("?")
        ),
    };
    let netns = args
        .netns
        .as_ref()
        .map(|n| format!(" in namespace {n}"))
        .unwrap_or_default();
    let metrics = match args.metrics_addr {
        Some(addr) => {
            let (live, probe) = (svc.live(), probe.clone());
            let render: steer_metrics::Render = std::sync::Arc::new(move || {
                let paths = probe.as_ref().map(Probe::counters).unwrap_or_default();
                crate::upf_metrics::page(&live.read(), &paths, name)
            });
            // Like every other address, a taken one is bad input (exit 2): a flag fixes it.
            let s = steer_metrics::MetricsServer::start(addr, render).map_err(|e| {
                CliError::Usage(format!(
                    "{e} (choose another with --metrics-addr ADDR:PORT)"
                ))
            })?;
            Some(s)
        }
        None => None,
    };
    let metrics_note = metrics
        .as_ref()
        .map(|m| format!(", metrics http://{}/metrics", m.local_addr()))
        .unwrap_or_default();
    eprintln!(
        "steer5g upf: PFCP on {}, N3 {}, datapath {name}{carrier}{netns}{metrics_note}",
        svc.local_addr(),
        args.n3,
    );
    let agent = match &args.nrf {
        Some(nrf) => {
            let cfg = crate::cli::file_and_env(global)?;
            let profile = crate::nrf_agent::upf_profile(svc.local_addr(), &cfg)?;
            crate::nrf_agent::NrfUseArgs::registering(nrf.clone()).register(vec![profile], None)?
        }
        None => None,
    };
    wait_for_stop(limit)?;
    if let Some(a) = agent {
        a.stop();
    }
    if let Some(m) = metrics {
        m.stop();
    }
    let report = svc
        .stop()
        .map_err(|e| CliError::Failed(format!("UPF stop: {e}")))?;
    let paths = probe.as_ref().map(Probe::counters).unwrap_or_default();
    let no_neigh = paths
        .iter()
        .find(|(name, _)| *name == "xdp")
        .and_then(|(_, x)| x.get(upf_xdp::Reason::PassNoNeigh.name()))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if no_neigh > 0 {
        // Those took the slow path (the kernel, then the TUN path), not the fast one.
        tracing::warn!(
            "XDP: {no_neigh} packet(s) passed to the kernel for want of a resolved next hop; \
             give the UPF's namespace neighbour entries for its N3/N6 peers"
        );
    }
    let mut json = report_json(&report, args);
    if let Some(o) = json.as_object_mut() {
        for (name, counters) in &paths {
            o.insert((*name).into(), counters.clone());
        }
        o.insert("drops".into(), drops(&paths));
    }
    if global.json {
        crate::report::print_json(&json)?;
    } else {
        print_human(&report);
        for (name, counters) in &paths {
            let nonzero: Vec<String> = counters
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| v.as_u64() != Some(0))
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            println!("  {name} counters: {}", nonzero.join(", "));
        }
    }
    // The maps must be empty once every session has ended: an entry left behind would
    // forward a released UE's packets.
    match report.entries_after {
        Some(e) if e == upf::Entries::default() => Ok(()),
        Some(e) => Err(CliError::Failed(format!(
            "datapath not empty after stop: {} uplink, {} downlink, {} usage entries",
            e.uplink, e.downlink, e.usage
        ))),
        None => Err(CliError::Failed(
            "datapath entries unreadable after stop".into(),
        )),
    }
}

fn report_json(r: &ServiceReport, args: &UpfArgs) -> serde_json::Value {
    let s = &r.stats;
    let causes: serde_json::Map<String, serde_json::Value> = s
        .causes_sent
        .iter()
        .map(|(c, n)| (c.to_string(), (*n).into()))
        .collect();
    serde_json::json!({
        "nf": "upf",
        "pfcp": args.pfcp.to_string(),
        "n3": args.n3.to_string(),
        "datapath": r.datapath,
        "netns": args.netns,
        "workers": args.workers,
        "associations": {
            "setup": s.associations_setup,
            "ended": s.associations_ended,
            "peers_lost": s.peers_lost,
            "at_stop": r.associations_at_stop,
            "requests_foreign": s.association_requests_foreign,
        },
        "sessions": {
            "established": s.sessions_established,
            "deleted": s.sessions_deleted,
            "dropped": s.sessions_dropped,
            "at_stop": r.sessions_at_stop,
            "max": args.max_sessions,
            "refused_limit": s.sessions_refused_limit,
            "requests_unassociated": s.session_requests_unassociated,
            "requests_foreign": s.session_requests_foreign,
        },
        "messages": {
            "received": s.received,
            "sent": s.sent,
            "malformed": s.malformed,
            "unknown_type": s.unknown_type,
            "unexpected": s.unexpected,
            "retransmissions_answered": s.retransmissions_answered,
            "requests_retransmitted": s.requests_retransmitted,
            "requests_timed_out": s.requests_timed_out,
        },
        "causes_sent": causes,
        "usage": {
            "session_reports": s.session_reports,
            "usage_reports": s.usage_reports,
        },
        "datapath_errors": s.datapath_errors,
        "entries_at_stop": r.entries_at_stop.map(|e| serde_json::json!({
            "uplink": e.uplink,
            "downlink": e.downlink,
            "usage": e.usage,
        })),
        "entries_after_stop": r.entries_after.map(|e| serde_json::json!({
            "uplink": e.uplink,
            "downlink": e.downlink,
            "usage": e.usage,
        })),
    })
}

fn print_human(r: &ServiceReport) {
    let s = &r.stats;
    println!("UPF ({} datapath)", r.datapath);
    println!(
        "  associations: {} set up, {} ended, {} peers lost",
        s.associations_setup, s.associations_ended, s.peers_lost
    );
    println!(
        "  sessions: {} established, {} deleted, {} dropped, {} at stop",
        s.sessions_established, s.sessions_deleted, s.sessions_dropped, r.sessions_at_stop
    );
    println!(
        "  refused: {} at the session limit, {} from no association, {} for another \
         association's session, {} association requests for another peer's Node ID",
        s.sessions_refused_limit,
        s.session_requests_unassociated,
        s.session_requests_foreign,
        s.association_requests_foreign
    );
    for (name, n) in &s.received {
        println!("  received {name}: {n}");
    }
    for (cause, n) in &s.causes_sent {
        println!("  cause {cause} sent: {n}");
    }
    println!(
        "  malformed {}, retransmissions answered {}, usage reports {} ({} session reports)",
        s.malformed, s.retransmissions_answered, s.usage_reports, s.session_reports
    );
    if let Some(e) = r.entries_after {
        println!(
            "  datapath after stop: {} uplink, {} downlink, {} usage entries",
            e.uplink, e.downlink, e.usage
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct T {
        #[command(flatten)]
        a: UpfArgs,
    }

    fn parse(args: &[&str]) -> UpfArgs {
        T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
            .unwrap()
            .a
            .settle(&Config::default())
            .unwrap()
    }

    #[test]
    fn flags_win_over_the_configuration() {
        let cfg = Config::from_toml(
            "[upf]\npfcp_addr = \"127.0.5.7:8805\"\nue_pool = \"10.60.0.0/16\"\n\
             [pfcp]\nheartbeat_s = 0\nt1_ms = 700",
        )
        .unwrap();
        let a = T::try_parse_from(["t", "--n3", "127.0.6.7:2152"])
            .unwrap()
            .a
            .settle(&cfg)
            .unwrap();
        assert_eq!(a.pfcp, "127.0.5.7:8805".parse().unwrap());
        assert_eq!(a.n3, "127.0.6.7:2152".parse().unwrap());
        assert_eq!(a.ue_pool, (Ipv4Addr::new(10, 60, 0, 0), 16));
        let o = options(&a).unwrap();
        assert_eq!(o.node.heartbeat_interval, None);
        assert_eq!(o.node.t1, std::time::Duration::from_millis(700));
    }

    #[test]
    fn defaults_follow_design() {
        let a = parse(&[]);
        assert_eq!(a.pfcp, "127.0.0.7:8805".parse().unwrap());
        assert_eq!(a.n3, "127.0.0.7:2152".parse().unwrap());
        assert_eq!(a.datapath, DatapathArg::None);
        let o = options(&a).unwrap();
        assert_eq!(o.node.n3_ip, Ipv4Addr::new(127, 0, 0, 7));
        assert_eq!(o.node.max_sessions, upf::node::DEFAULT_MAX_SESSIONS);
        let o = options(&parse(&["--max-sessions", "3"])).unwrap();
        assert_eq!(o.node.max_sessions, 3);
    }

    #[test]
    fn bad_usage_is_exit_2() {
        let a = parse(&["--workers", "2"]);
        assert_eq!(options(&a).err().unwrap().exit_status(), 2);
        let a = parse(&["--heartbeat=-1"]);
        assert_eq!(options(&a).err().unwrap().exit_status(), 2);
        let a = parse(&["--max-sessions", "0"]);
        assert_eq!(options(&a).err().unwrap().exit_status(), 2);
        let a = parse(&["--datapath", "xdp"]);
        assert_eq!(build_datapath(&a).err().unwrap().exit_status(), 2);
        let a = parse(&["--datapath", "afxdp", "--n3-if", "eth0"]);
        assert_eq!(build_datapath(&a).err().unwrap().exit_status(), 2);
        let a = parse(&["--n3", "[::1]:2152"]);
        assert_eq!(options(&a).err().unwrap().exit_status(), 2);
        let a = parse(&["--datapath", "none", "--netns", "x"]);
        assert_eq!(build_datapath(&a).err().unwrap().exit_status(), 2);
        let a = parse(&["--datapath", "tun", "--netns", "a/b"]);
        assert_eq!(build_datapath(&a).err().unwrap().exit_status(), 2);
        let a = parse(&["--datapath", "tun", "--netns", "steer5g-no-such-ns-xyz"]);
        assert_eq!(build_datapath(&a).err().unwrap().exit_status(), 2);
    }

    #[test]
    fn none_datapath_is_built_unprivileged() {
        let a = parse(&["--datapath", "none"]);
        assert_eq!(build_datapath(&a).unwrap().0.name(), "none");
    }
}
