//! Command-line surface: subcommands, their flags, and how flags and environment variables
//! land on top of the configuration file.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
pub(crate) use ran::load::args::TransportArg;
use steer5g_config::{Config, SliceConfig};

use crate::exit::CliError;

/// steer5g: a 5G core (AMF, AUSF, UDM/UDR, SMF, UPF) and RAN/UE load generator whose
/// throughput grows with every CPU core.
#[derive(Debug, Parser)]
#[command(name = "steer5g", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Flags every subcommand understands.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// Configuration file (TOML). Environment variables and flags override it.
    #[arg(long, global = true, env = "STEER5G_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Print one JSON object on standard output instead of the human report.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Log filter (tracing-subscriber syntax, e.g. `debug` or `sctp=trace`); default: RUST_LOG,
    /// else `info`. Logs always go to standard error.
    #[arg(long, global = true, value_name = "FILTER")]
    pub(crate) log: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the AMF alone: N2 (NGAP over SCTP, raw IP and/or UDP encapsulation) and
    /// registration, calling the AUSF and UDM over h2c.
    Amf(AmfArgs),
    /// Run the AUSF alone: 5G-AKA over h2c, calling the UDM over h2c.
    Ausf(crate::nf_cmd::AusfArgs),
    /// Run the UDM alone, with its subscriber store and home network keys in the data dir.
    Udm(crate::nf_cmd::UdmArgs),
    /// Run the SMF alone: Nsmf_PDUSession over h2c, PFCP to the UPF (--upf), calling the
    /// UDM and the AMF (N1N2MessageTransfer) over h2c.
    Smf(crate::smf_cmd::SmfArgs),
    /// Run the NRF: NF registration and heartbeats, discovery, status notifications and
    /// OAuth2 access tokens (TS 29.510), on 127.0.0.10:7777.
    Nrf(crate::nrf_cmd::NrfArgs),
    /// Run the core: AMF, AUSF and UDM in one process
    Core(crate::core_cmd::CoreArgs),
    /// Run gNB emulators against an AMF: NG Setup, and with --subscribers the UE load
    /// generator (registration, de-registration, re-registration).
    Ran(Box<RanArgs>),
    /// Run the core and the UE load generator together on loopback: N fresh subscribers
    /// register and deregister, then the report.
    Demo(DemoCmd),
    /// Run a benchmark scenario.
    Bench(BenchArgs),
    /// Manage subscribers in the UDR's store (add, list, show, delete, import CSV).
    Subscriber(crate::subscriber::SubscriberArgs),
    /// 3GPP security primitives: MILENAGE, the 5G-AKA key chain, SUCI concealment.
    Crypto(crate::crypto::CryptoArgs),
    /// Print the effective configuration (file < environment < flags) as TOML.
    Config(ConfigArgs),
    /// Create or remove the user-plane lab: namespaces ran, upf and dn with veth links.
    Lab(crate::lab_cmd::LabArgs),
    /// Run the UPF: PFCP (N4) on 127.0.0.7:8805, sessions installed into a user-plane
    /// datapath (`--datapath none` keeps rules only and forwards nothing).
    Upf(crate::upf_cmd::UpfArgs),
    /// Profile the kernel's receive path stage by stage (NAPI, backlog, GRO, protocol,
    /// NET_RX softirq, wake-up, read) on tracepoints, for --duration seconds.
    Probe(crate::probe_cmd::ProbeArgs),
}

/// The network the node belongs to; overrides the configuration file.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct NetworkArgs {
    /// Mobile country code (3 digits).
    #[arg(long, env = "STEER5G_MCC")]
    pub(crate) mcc: Option<String>,
    /// Mobile network code (2 or 3 digits).
    #[arg(long, env = "STEER5G_MNC")]
    pub(crate) mnc: Option<String>,
    /// Tracking area codes, comma-separated (decimal, or hex with 0x).
    #[arg(long, env = "STEER5G_TAC", value_delimiter = ',', value_parser = parse_tac)]
    pub(crate) tac: Option<Vec<u32>>,
    /// S-NSSAIs, comma-separated, each SST or SST:SD (SD as six hex digits), e.g. `1,2:0000ff`.
    #[arg(long, env = "STEER5G_SLICES", value_delimiter = ',', value_parser = parse_slice)]
    pub(crate) slice: Option<Vec<SliceConfig>>,
}

/// `--limit KEY=VALUE`: one key of `[limits]` or `[overload]` (every command that runs an
/// NF; docs/steer5g.toml lists the keys).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct LimitArgs {
    /// Overrides one bound of the configuration, e.g. `--limit amf_max_ue_contexts=1000`
    /// or `--limit overload.high_mark=64` (repeatable; keys of [limits] and [overload]).
    #[arg(long = "limit", value_name = "KEY=VALUE")]
    pub(crate) limits: Vec<String>,
}

impl LimitArgs {
    /// Sets each `--limit` on `cfg`, validated.
    pub(crate) fn apply(&self, cfg: &mut Config) -> Result<(), CliError> {
        for l in &self.limits {
            cfg.set_limit(l)?;
        }
        Ok(())
    }
}

/// Which transports the AMF listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ListenTransport {
    /// Raw IPv4 protocol 132 only (needs CAP_NET_RAW).
    Raw,
    /// SCTP over UDP encapsulation only.
    Udp,
    /// Both.
    Both,
}

/// The AMF's N2 listener.
#[derive(Debug, Args, Clone)]
pub(crate) struct N2ListenArgs {
    /// The AMF's N2 address.
    #[arg(long, env = "STEER5G_N2_ADDR")]
    pub(crate) n2_addr: Option<Ipv4Addr>,
    /// SCTP port for NGAP.
    #[arg(long, env = "STEER5G_SCTP_PORT")]
    pub(crate) sctp_port: Option<u16>,
    /// UDP port of SCTP over UDP encapsulation.
    #[arg(long, env = "STEER5G_UDP_PORT")]
    pub(crate) udp_port: Option<u16>,
}

/// `steer5g amf`.
#[derive(Debug, Args)]
pub(crate) struct AmfArgs {
    #[command(flatten)]
    pub(crate) network: NetworkArgs,
    #[command(flatten)]
    pub(crate) listen: N2ListenArgs,
    /// Transports to listen on (default: the configuration's, which is both).
    #[arg(long, value_enum, env = "STEER5G_N2_TRANSPORT")]
    pub(crate) transport: Option<ListenTransport>,
    /// AMF name sent in NG Setup Response.
    #[arg(long)]
    pub(crate) amf_name: Option<String>,
    /// Workers, state mode, `--duration`.
    #[command(flatten)]
    pub(crate) run: crate::nf_cmd::NfRunArgs,
    /// Authenticate on every registration.
    #[arg(long)]
    pub(crate) always_auth: bool,
    /// The AUSF's base URI (default: the configuration's `sbi.ausf`, http://127.0.0.11:7777).
    #[arg(long, value_name = "URI")]
    pub(crate) ausf: Option<String>,
    /// The UDM's base URI (default: the configuration's `sbi.udm`, http://127.0.0.12:7777).
    #[arg(long, value_name = "URI")]
    pub(crate) udm: Option<String>,
    /// PDU sessions with the SMF at this base URI (e.g. http://127.0.0.4:7777): Nsmf over
    /// h2c, and N1N2MessageTransfer served on --sbi-addr. Without it UL NAS TRANSPORTs for
    /// PDU sessions find no SMF.
    #[arg(long, value_name = "URI")]
    pub(crate) smf: Option<String>,
    /// Where the AMF serves Namf_Communication for the SMF and its callbacks for the UDM
    /// (deregistration notifications) [default: the configuration's `sbi.amf` if set, else
    /// port 7777 of the N2 address].
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) sbi_addr: Option<std::net::SocketAddr>,
}

/// `steer5g ran`.
#[derive(Debug, Args)]
pub(crate) struct RanArgs {
    #[command(flatten)]
    pub(crate) network: NetworkArgs,
    /// Number of gNB emulators, each with its own SCTP association.
    #[arg(long, default_value_t = 1)]
    pub(crate) gnbs: u32,
    /// The AMF: HOST[:PORT]; PORT is the UDP encapsulation port (udp) or the SCTP port (raw).
    /// Several, comma-separated, are the AMFs of one AMF set: every gNB connects to each and
    /// sends a returning UE to the AMF its 5G-GUTI names (another of the set if that one is
    /// gone). Default: the configuration's N2 address.
    #[arg(long, env = "STEER5G_AMF")]
    pub(crate) amf: Option<String>,
    /// SCTP transport.
    #[arg(long, value_enum, default_value_t = TransportArg::Udp, env = "STEER5G_N2_TRANSPORT")]
    pub(crate) transport: TransportArg,
    /// The AMF's SCTP port when it is not the default (with --transport udp).
    #[arg(long)]
    pub(crate) sctp_port: Option<u16>,
    /// Local address (default: the address the kernel would use to reach the AMF).
    #[arg(long)]
    pub(crate) local_addr: Option<Ipv4Addr>,
    /// First gNB ID; the emulators use consecutive IDs from it.
    #[arg(long, default_value_t = 1)]
    pub(crate) gnb_id_base: u32,
    /// Give up on NG Setups (and, with --subscribers, on each procedure) not done after
    /// this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub(crate) timeout: f64,
    /// Give up when no AMF answers for this many seconds, at start or after losing it
    /// (the gNBs reconnect with backoff meanwhile); a warning names the AMF after 5 s.
    #[arg(long, value_name = "SECS", default_value_t = ran::load::recovery::DEFAULT_CONNECT_TIMEOUT.as_secs_f64())]
    pub(crate) connect_timeout: f64,
    #[command(flatten)]
    pub(crate) load: ran::load::args::LoadArgs,
    #[command(flatten)]
    pub(crate) traffic: ran::load::args::TrafficArgs,
}

/// `steer5g demo`: the demo's own flags, then the N2 listener and the core's NAS and BPF
/// flags as `steer5g core` reads them.
#[derive(Debug, Args)]
pub(crate) struct DemoCmd {
    #[command(flatten)]
    pub(crate) demo: bench::demo::DemoArgs,
    #[command(flatten)]
    pub(crate) listen: N2ListenArgs,
    #[command(flatten)]
    pub(crate) nas: crate::core_cmd::NasAlgorithmArgs,
    #[command(flatten)]
    pub(crate) bpf: crate::core_cmd::BpfArgs,
}

/// `steer5g bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    pub(crate) scenario: bench::Scenario,
}

/// `steer5g config`.
#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    #[command(flatten)]
    pub(crate) network: NetworkArgs,
    #[command(flatten)]
    pub(crate) listen: N2ListenArgs,
}

fn parse_tac(s: &str) -> Result<u32, String> {
    let v = match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .map_err(|e| format!("{s:?}: {e}"))?;
    if v > 0xff_ffff {
        return Err(format!("TAC {v} does not fit in 24 bits"));
    }
    Ok(v)
}

fn parse_slice(s: &str) -> Result<SliceConfig, String> {
    let (sst, sd) = match s.split_once(':') {
        Some((a, b)) => (a, Some(b.to_string())),
        None => (s, None),
    };
    let sst = sst.parse::<u8>().map_err(|e| format!("SST {sst:?}: {e}"))?;
    if let Some(sd) = &sd {
        steer5g_config::parse_sd(sd).map_err(|e| e.to_string())?;
    }
    Ok(SliceConfig { sst, sd })
}

/// The configuration file (or the defaults), then the flags (clap has already folded the
/// environment into them).
pub(crate) fn load_config(
    global: &Global,
    network: &NetworkArgs,
    listen: Option<&N2ListenArgs>,
) -> Result<Config, CliError> {
    // The file, then STEER5G_<SECTION>_<KEY>, then the flags.
    let mut cfg = file_and_env(global)?;
    if let Some(m) = &network.mcc {
        cfg.plmn.mcc = m.clone();
    }
    if let Some(m) = &network.mnc {
        cfg.plmn.mnc = m.clone();
    }
    if let Some(t) = &network.tac {
        cfg.amf.tacs = t.clone();
    }
    if let Some(s) = &network.slice {
        cfg.amf.slices = s.clone();
    }
    if let Some(l) = listen {
        if let Some(a) = l.n2_addr {
            cfg.n2.addr = a;
        }
        if let Some(p) = l.sctp_port {
            cfg.n2.sctp_port = p;
        }
        if let Some(p) = l.udp_port {
            cfg.n2.udp_port = p;
        }
    }
    cfg.validate().map_err(name_env_source)?;
    Ok(cfg)
}

/// The configuration file (or the defaults) with the `STEER5G_<SECTION>_<KEY>` variables
/// applied: what a command with no flags of its own over the file reads.
pub(crate) fn file_and_env(global: &Global) -> Result<Config, CliError> {
    let mut cfg = match &global.config {
        Some(path) => Config::from_file(path)?,
        None => Config::default(),
    };
    cfg.apply_env(std::env::vars())?;
    Ok(cfg)
}

/// The settings `load_config` takes from flags that environment variables may give:
/// configuration field, flag, variable.
const ENV_FIELDS: &[(&str, &str, &str)] = &[
    ("plmn.mcc", "--mcc", "STEER5G_MCC"),
    ("plmn.mnc", "--mnc", "STEER5G_MNC"),
    ("amf.tacs", "--tac", "STEER5G_TAC"),
    ("amf.slices", "--slice", "STEER5G_SLICES"),
    ("n2.addr", "--n2-addr", "STEER5G_N2_ADDR"),
    ("n2.sctp_port", "--sctp-port", "STEER5G_SCTP_PORT"),
    ("n2.udp_port", "--udp-port", "STEER5G_UDP_PORT"),
];

/// Whether `flag`'s value came from environment variable `var`: set, and the flag not on
/// the command line (which would win over it).
pub(crate) fn from_env(flag: &str, var: &str) -> bool {
    let eq = format!("{flag}=");
    std::env::var_os(var).is_some() && !std::env::args().any(|a| a == flag || a.starts_with(&eq))
}

/// A bad value that came from an environment variable is reported under the variable's
/// name, which is what the user wrote (`STEER5G_MCC: invalid plmn.mcc: ...`).
fn name_env_source(e: steer5g_config::ConfigError) -> CliError {
    if let steer5g_config::ConfigError::Invalid { field, .. } = &e {
        if let Some((_, flag, var)) = ENV_FIELDS.iter().find(|(f, _, _)| f == field) {
            if from_env(flag, var) {
                return CliError::Usage(format!("{var}: {e}"));
            }
        }
    }
    e.into()
}

/// A clap error about a value that came from an environment variable, reworded to name the
/// variable (`invalid value 'abc' for STEER5G_WORKERS (--workers)`); others unchanged.
pub(crate) fn name_env_in_clap_error(cmd: &clap::Command, e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue};
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) else {
        return e;
    };
    let long = arg.split_whitespace().next().unwrap_or_default();
    let Some(var) = env_of(cmd, long.trim_start_matches("--")) else {
        return e;
    };
    let given = std::env::var(&var).unwrap_or_default();
    if !from_env(long, &var) || !given.split(',').any(|v| v == value) {
        return e;
    }
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first.trim_start_matches("error: ");
    let reworded = first.replacen(&format!("'{arg}'"), &format!("{var} ({long})"), 1);
    clap::Error::raw(e.kind(), format!("{reworded}\n"))
}

/// The environment variable of the flag `--long` in `cmd` or any of its subcommands.
fn env_of(cmd: &clap::Command, long: &str) -> Option<String> {
    cmd.get_arguments()
        .find(|a| a.get_long() == Some(long))
        .and_then(|a| a.get_env())
        .map(|v| v.to_string_lossy().into_owned())
        .or_else(|| cmd.get_subcommands().find_map(|c| env_of(c, long)))
}

/// The crates whose debug and trace output is the HTTP/2 machinery's (frame dumps,
/// connection states), not steer5g's: `--log debug` means steer5g's debug.
const TRANSPORT_CRATES: &[&str] = &["h2", "hyper", "hyper_util"];

/// `filter` with the transport crates at `info` unless it names them itself, so that a
/// debug log shows the procedures, not every HTTP/2 frame (`--log debug,h2=trace` still gets
/// the frames). `trace` as the default level is everything, the frames included.
pub(crate) fn quiet_transport(filter: &str) -> String {
    if filter
        .split(',')
        .any(|d| d.trim().eq_ignore_ascii_case("trace"))
    {
        return filter.to_owned();
    }
    let mut out = filter.to_owned();
    for krate in TRANSPORT_CRATES {
        let named = filter.split(',').any(|d| {
            let target = d.trim().split(['=', '[']).next().unwrap_or_default();
            target == *krate || target.starts_with(&format!("{krate}::"))
        });
        if !named {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(krate);
            out.push_str("=info");
        }
    }
    out
}

/// Parses `HOST[:PORT]` with an IPv4 host.
pub(crate) fn parse_host_port(s: &str, default_port: u16) -> Result<SocketAddrV4, CliError> {
    if let Ok(a) = s.parse::<SocketAddrV4>() {
        return Ok(a);
    }
    if let Ok(ip) = s.parse::<Ipv4Addr>() {
        return Ok(SocketAddrV4::new(ip, default_port));
    }
    let name = if from_env("--amf", "STEER5G_AMF") {
        "STEER5G_AMF"
    } else {
        "--amf"
    };
    Err(CliError::Usage(format!(
        "{name} {s:?}: expected an IPv4 address with an optional port, e.g. 127.0.0.5:9899"
    )))
}

/// `steer5g config`: the effective configuration.
pub(crate) fn print_config(global: &Global, args: &ConfigArgs) -> Result<(), CliError> {
    let mut cfg = load_config(global, &args.network, Some(&args.listen))?;
    if let Some(url) = cfg.store.url.as_mut() {
        *url = steer5g_config::services::redact_url(url);
    }
    if global.json {
        crate::report::print_json(&cfg)?;
    } else {
        print!("{}", cfg.to_toml());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {

    #[test]
    fn the_transport_crates_stay_at_info_unless_named() {
        assert_eq!(
            quiet_transport("debug"),
            "debug,h2=info,hyper=info,hyper_util=info"
        );
        assert_eq!(quiet_transport("trace"), "trace");
        assert_eq!(
            quiet_transport("info,h2=trace"),
            "info,h2=trace,hyper=info,hyper_util=info"
        );
        assert_eq!(
            quiet_transport("hyper::proto=debug"),
            "hyper::proto=debug,h2=info,hyper_util=info"
        );
        assert_eq!(quiet_transport(""), "h2=info,hyper=info,hyper_util=info");
    }

    use super::*;

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_slices_and_tacs() {
        assert_eq!(parse_slice("1").unwrap(), SliceConfig { sst: 1, sd: None });
        assert_eq!(
            parse_slice("2:0000ff").unwrap().sd.as_deref(),
            Some("0000ff")
        );
        assert!(parse_slice("300").is_err());
        assert!(parse_slice("1:xyz").is_err());
        assert_eq!(parse_tac("0x10").unwrap(), 16);
        assert!(parse_tac("16777216").is_err());
    }

    #[test]
    fn host_port() {
        assert_eq!(
            parse_host_port("127.0.0.5", 9899).unwrap(),
            "127.0.0.5:9899".parse().unwrap()
        );
        assert_eq!(
            parse_host_port("10.0.0.1:1234", 9899).unwrap(),
            "10.0.0.1:1234".parse().unwrap()
        );
        assert!(parse_host_port("amf.example", 1).is_err());
    }
}
