//! steer5g configuration.
//!
//! One TOML file describes the network (PLMN, AMF identity, tracking areas, slices) and where
//! N2 listens. Precedence is file < environment < flags: this crate loads and validates the
//! file; the CLI binds each flag to an environment variable (clap's `env`) and applies the
//! values it got on top with the `override_*` helpers, so every source goes through the same
//! validation.
//!
//! The defaults are the README's conventions: the 3GPP test network (PLMN 001/01, TAC 000001,
//! S-NSSAI SST 1 without SD) and Open5GS's loopback plan (AMF on 127.0.0.5, SCTP port 38412,
//! UDP encapsulation on 9899).

pub mod env;
pub mod services;
pub mod timers;

pub use services::{
    parse_dnn_pool, parse_pool, sbi_listen_addr, DnnPoolSpec, LogConfig, MetricsConfig,
    ProvisioningConfig, SbiConfig, SmfConfig, StoreConfig, UpfConfig, DEFAULT_DATA_DIR,
};
pub use timers::{NasTimers, PfcpTimers, SctpTimers};

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Everything that can go wrong while loading or validating a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The path that was given.
        path: String,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown keys.
    #[error("invalid config file {path}: {message}")]
    Parse {
        /// The path that was given.
        path: String,
        /// The TOML parser's message (line and column included).
        message: String,
    },
    /// An environment variable's value does not fit its key.
    #[error("{var}: {message}")]
    Env {
        /// The variable (several, comma-separated, when the check of their sum failed).
        var: String,
        /// What is wrong with it.
        message: String,
    },
    /// A value is out of its range or badly formed.
    #[error("invalid {field}: {message}")]
    Invalid {
        /// The dotted name of the field (`plmn.mcc`, `amf.set_id`, ...).
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The home PLMN the core serves.
    pub plmn: PlmnConfig,
    /// The AMF's identity and what it serves.
    pub amf: AmfConfig,
    /// Where N2 (NGAP over SCTP) listens, and over which transports.
    pub n2: N2Config,
    /// The UDM's home network keys.
    pub udm: UdmConfig,
    /// The bound of every resource and the protocol's answer at it (DESIGN.md principle 8).
    pub limits: LimitsConfig,
    /// The AMF's overload control (TS 23.501 §5.19.5.2, TS 38.413 §8.7.6, §8.7.7).
    pub overload: OverloadConfig,
    /// The RAN/UE emulator's settings (`steer5g ran`).
    pub ran: RanConfig,
    /// The SBI address of each NF, and the call timeout.
    pub sbi: SbiConfig,
    /// The SMF's PFCP address, its UPF and its DNN pools.
    pub smf: SmfConfig,
    /// The UPF's PFCP and N3 addresses and its UE pool.
    pub upf: UpfConfig,
    /// The AMF's NAS timers (TS 24.501 §10.2).
    pub nas: NasTimers,
    /// The PFCP timers (TS 29.244).
    pub pfcp: PfcpTimers,
    /// SCTP's protocol parameters on N2 (RFC 9260 §16).
    pub sctp: SctpTimers,
    /// The data directory.
    pub store: StoreConfig,
    /// The Prometheus endpoint.
    pub metrics: MetricsConfig,
    /// The provisioning API.
    pub provisioning: ProvisioningConfig,
    /// The log filter.
    pub log: LogConfig,
}

/// `steer5g ran`'s settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RanConfig {
    /// The home network public key file (`steer5g subscriber keys --public`) the UEs
    /// conceal their SUPI with, in place of the data directory's private key file: what a
    /// RAN on another host is given, as a USIM is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hn_public_key: Option<PathBuf>,
}

/// The bound of every resource; docs/LIMITS.md has each one's answer and counter. Per worker
/// unless said otherwise: each worker owns its shard of the contexts, so a per-worker bound
/// needs no coordination (the locked baseline applies `workers ×` the bound to its shared
/// maps).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// SETTINGS_MAX_CONCURRENT_STREAMS our h2c servers advertise on each connection
    /// (RFC 9113 §6.5.2); a stream beyond it is reset with REFUSED_STREAM (§5.1.2).
    pub sbi_max_concurrent_streams: u32,
    /// SBI requests one worker holds at once (read by its servers or handed over by another
    /// worker); a request read beyond it is answered 503 NF_CONGESTION (TS 29.500 §5.2.7.2).
    pub sbi_max_requests_in_progress: u32,
    /// The `Retry-After` of that 503, in seconds (TS 29.500 §5.2.2.2, RFC 9110 §10.2.3).
    pub sbi_retry_after_s: u32,
    /// Connected UE contexts per AMF worker; a registration beyond it is rejected with
    /// 5GMM #22 and T3346 (TS 24.501 §5.5.1.2.5).
    pub amf_max_ue_contexts: u32,
    /// SM contexts per SMF worker; a CreateSMContext beyond it is refused (500
    /// INSUFFICIENT_RESOURCES, N1 reject with 5GSM #26, TS 24.501 §6.4.1.4).
    pub smf_max_sm_contexts: u32,
    /// Hand-off messages one worker keeps waiting for a full queue to another worker; a
    /// message beyond it is refused at ingress (an SBI request answered 503
    /// NF_CONGESTION, a UE-associated NGAP message dropped and counted).
    pub mesh_max_outbox: u32,
    /// SCTP associations of the AMF's N2 endpoint (split evenly, rounded up, between the
    /// workers holding N2 sockets); an INIT beyond it is answered with ABORT "Out of
    /// Resource" (RFC 9260 §3.3.10.4).
    pub n2_max_associations: u32,
    /// DATA fragments one SCTP association holds for reassembly; a fragment beyond it
    /// (other than the next in sequence) is dropped unacknowledged and counted, and the
    /// peer retransmits it (RFC 9260 §6.2).
    pub sctp_max_fragments: u32,
    /// The receive window (a_rwnd) of each SCTP association, in bytes: data held for
    /// reassembly and ordering (RFC 9260 §6.2).
    pub sctp_receive_window: u32,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            sbi_max_concurrent_streams: 1024,
            sbi_max_requests_in_progress: 8192,
            sbi_retry_after_s: 1,
            amf_max_ue_contexts: 250_000,
            smf_max_sm_contexts: 250_000,
            mesh_max_outbox: 8192,
            n2_max_associations: 4096,
            sctp_max_fragments: 4096,
            sctp_receive_window: 1 << 20,
        }
    }
}

/// The AMF's overload control: each worker measures its registrations in flight (UE
/// contexts between INITIAL UE MESSAGE and REGISTRATION COMPLETE or release); above
/// `high_mark` it rejects new registrations with 5GMM #22 and T3346 and the AMF sends
/// OVERLOAD START to its gNBs; once every worker is back under `low_mark` it sends
/// OVERLOAD STOP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OverloadConfig {
    /// Overload control on or off (the limits of `[limits]` apply either way).
    pub enabled: bool,
    /// Registrations in flight on one worker that start overload.
    pub high_mark: u32,
    /// Registrations in flight under which a worker leaves overload; below `high_mark`,
    /// so that a level between the two changes nothing (hysteresis).
    pub low_mark: u32,
    /// Traffic Load Reduction Indication of OVERLOAD START (TS 38.413 §9.3.1.106): the
    /// percentage of new signalling the gNBs are asked to shed, 1 to 99.
    pub traffic_load_reduction: u8,
    /// T3346 sent with 5GMM #22 (TS 24.501 §10.2, Annex A), seconds: how long a rejected
    /// UE waits before it tries again; also sent when `amf_max_ue_contexts` is reached.
    pub t3346_s: u32,
}

impl Default for OverloadConfig {
    fn default() -> Self {
        OverloadConfig {
            enabled: true,
            high_mark: 2048,
            low_mark: 1024,
            traffic_load_reduction: 50,
            t3346_s: 30,
        }
    }
}

/// Keys `--limit` may set ([`Config::set_limit`]): every key of `[limits]` and `[overload]`.
pub const LIMIT_SECTIONS: &[&str] = &["limits", "overload"];

/// The UDM's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UdmConfig {
    /// The home network SUCI key file (TS 33.501 §6.12.2): private keys for the SIDF, public
    /// keys for the UE emulator. A relative path is taken from the data directory; created
    /// with a Profile A and a Profile B key when absent.
    pub hn_key_file: PathBuf,
}

/// The key file's name inside the data directory when the configuration names none.
pub const DEFAULT_HN_KEY_FILE: &str = "hn-keys.toml";

impl Default for UdmConfig {
    fn default() -> Self {
        UdmConfig {
            hn_key_file: PathBuf::from(DEFAULT_HN_KEY_FILE),
        }
    }
}

/// A PLMN identity as operators write it: MCC and MNC as decimal digit strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlmnConfig {
    /// Mobile country code, three digits.
    pub mcc: String,
    /// Mobile network code, two or three digits (the number of digits is significant).
    pub mnc: String,
}

/// The AMF identity (GUAMI parts, TS 23.003 §2.10.1) and what it serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AmfConfig {
    /// AMF name sent in NG Setup Response (TS 38.413 §9.3.3.21).
    pub name: String,
    /// AMF Region ID, 8 bits.
    pub region_id: u8,
    /// AMF Set ID, 10 bits.
    pub set_id: u16,
    /// AMF Pointer, 6 bits.
    pub pointer: u8,
    /// Relative AMF capacity sent to gNBs (0-255).
    pub relative_capacity: u8,
    /// Tracking area codes served (24 bits each).
    pub tacs: Vec<u32>,
    /// S-NSSAIs supported in the PLMN.
    pub slices: Vec<SliceConfig>,
    /// NAS integrity algorithms the AMF may select, most preferred first (`nia1`-`nia3`;
    /// TS 33.501 §5.5.2 leaves NIA0 to unauthenticated emergency sessions).
    pub nas_integrity: Vec<String>,
    /// NAS ciphering algorithms the AMF may select, most preferred first (`nea0`-`nea3`).
    pub nas_ciphering: Vec<String>,
    /// Tell the UDM when a UE deregisters (Nudm_UECM_Update with purgeFlag, TS 23.502
    /// §4.5.3).
    pub uecm_purge: bool,
    /// Subscribe to changes of a registering UE's access and mobility data at the UDM
    /// (Nudm_SDM_Subscribe, TS 23.502 §4.2.2.2.2 step 14c).
    pub sdm_subscribe: bool,
}

/// Names `amf.nas_integrity` accepts.
pub const NAS_INTEGRITY_NAMES: &[&str] = &["nia1", "nia2", "nia3"];
/// Names `amf.nas_ciphering` accepts.
pub const NAS_CIPHERING_NAMES: &[&str] = &["nea0", "nea1", "nea2", "nea3"];

/// One S-NSSAI (TS 23.003 §28.4.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceConfig {
    /// Slice/Service Type.
    pub sst: u8,
    /// Slice Differentiator: six hex digits, absent for "no SD".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd: Option<String>,
}

/// N2 transport settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct N2Config {
    /// The AMF's N2 address.
    pub addr: Ipv4Addr,
    /// SCTP port (NGAP's registered port is 38412, TS 38.412 §7).
    pub sctp_port: u16,
    /// UDP port for SCTP over UDP encapsulation (RFC 6951 registers 9899).
    pub udp_port: u16,
    /// Transports to listen on.
    pub transports: Vec<Transport>,
}

/// How SCTP packets travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Raw IPv4, protocol 132: the wire format of kernel SCTP stacks and real gNBs. Needs
    /// CAP_NET_RAW.
    Raw,
    /// SCTP over UDP (RFC 6951): unprivileged.
    Udp,
}

impl FromStr for Transport {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "raw" => Ok(Transport::Raw),
            "udp" => Ok(Transport::Udp),
            other => Err(ConfigError::Invalid {
                field: "n2.transports",
                message: format!("unknown transport {other:?} (expected raw or udp)"),
            }),
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Raw => "raw",
            Transport::Udp => "udp",
        })
    }
}

/// The AMF's default N2 address in the loopback plan (Open5GS's).
pub const DEFAULT_AMF_ADDR: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 5);
/// NGAP's SCTP port (TS 38.412 §7).
pub const DEFAULT_SCTP_PORT: u16 = 38412;
/// The IANA port of SCTP over UDP encapsulation (RFC 6951 §5).
pub const DEFAULT_UDP_ENCAP_PORT: u16 = 9899;

impl PlmnConfig {
    /// The SUPI `imsi-` MCC MNC MSIN of this PLMN with MSIN `msin`, zero-padded to 15
    /// digits in all (TS 23.003 §2.2).
    pub fn supi(&self, msin: u64) -> String {
        let prefix = format!("{}{}", self.mcc, self.mnc);
        let width = 15usize.saturating_sub(prefix.len());
        format!("imsi-{prefix}{msin:0width$}")
    }
}

impl Default for PlmnConfig {
    fn default() -> Self {
        PlmnConfig {
            mcc: "001".into(),
            mnc: "01".into(),
        }
    }
}

impl Default for AmfConfig {
    fn default() -> Self {
        AmfConfig {
            name: "steer5g-amf".into(),
            region_id: 2,
            set_id: 1,
            pointer: 0,
            relative_capacity: 255,
            tacs: vec![1],
            slices: vec![SliceConfig { sst: 1, sd: None }],
            // TS 33.501 §5.11.1.1 mandates NIA1/NIA2 and NEA0-2; AES first, ZUC last.
            nas_integrity: ["nia2", "nia1", "nia3"].map(String::from).to_vec(),
            nas_ciphering: ["nea2", "nea1", "nea3", "nea0"].map(String::from).to_vec(),
            uecm_purge: true,
            sdm_subscribe: true,
        }
    }
}

impl Default for N2Config {
    fn default() -> Self {
        N2Config {
            addr: DEFAULT_AMF_ADDR,
            sctp_port: DEFAULT_SCTP_PORT,
            udp_port: DEFAULT_UDP_ENCAP_PORT,
            transports: vec![Transport::Raw, Transport::Udp],
        }
    }
}

impl Config {
    /// Reads and validates a TOML file. Keys it does not set keep their defaults.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_toml(&text).map_err(|e| match e {
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                path: path.display().to_string(),
                message,
            },
            other => other,
        })
    }

    /// Parses and validates TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: "<text>".into(),
            message: e.to_string(),
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The configuration as TOML, as `steer5g config` prints it.
    pub fn to_toml(&self) -> String {
        // Serialising plain structs of strings and integers cannot fail.
        toml::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks every field's range; the CLI calls it again after applying flags.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_digits("plmn.mcc", &self.plmn.mcc, 3..=3)?;
        validate_digits("plmn.mnc", &self.plmn.mnc, 2..=3)?;
        if self.amf.set_id > 0x3ff {
            return Err(invalid("amf.set_id", "must fit in 10 bits (0-1023)"));
        }
        if self.amf.pointer > 0x3f {
            return Err(invalid("amf.pointer", "must fit in 6 bits (0-63)"));
        }
        if self.amf.name.is_empty() || self.amf.name.len() > 150 {
            // TS 38.413 §9.3.3.21: PrintableString (SIZE(1..150, ...)).
            return Err(invalid("amf.name", "must be 1 to 150 characters"));
        }
        if self.amf.tacs.is_empty() {
            return Err(invalid("amf.tacs", "at least one TAC is needed"));
        }
        for tac in &self.amf.tacs {
            if *tac > 0xff_ffff {
                return Err(invalid(
                    "amf.tacs",
                    format!("TAC {tac} does not fit in 24 bits"),
                ));
            }
        }
        if self.amf.slices.is_empty() {
            return Err(invalid("amf.slices", "at least one S-NSSAI is needed"));
        }
        for s in &self.amf.slices {
            if let Some(sd) = &s.sd {
                parse_sd(sd)?;
            }
        }
        validate_algorithms(
            "amf.nas_integrity",
            &self.amf.nas_integrity,
            NAS_INTEGRITY_NAMES,
        )?;
        validate_algorithms(
            "amf.nas_ciphering",
            &self.amf.nas_ciphering,
            NAS_CIPHERING_NAMES,
        )?;
        if self.udm.hn_key_file.as_os_str().is_empty() {
            return Err(invalid("udm.hn_key_file", "must name a file"));
        }
        if self.n2.transports.is_empty() {
            return Err(invalid("n2.transports", "at least one transport is needed"));
        }
        self.nas.validate()?;
        self.pfcp.validate()?;
        self.sctp.validate()?;
        services::validate(self)?;
        self.validate_limits()
    }

    fn validate_limits(&self) -> Result<(), ConfigError> {
        let l = &self.limits;
        for (field, v) in [
            (
                "limits.sbi_max_concurrent_streams",
                l.sbi_max_concurrent_streams,
            ),
            (
                "limits.sbi_max_requests_in_progress",
                l.sbi_max_requests_in_progress,
            ),
            ("limits.amf_max_ue_contexts", l.amf_max_ue_contexts),
            ("limits.smf_max_sm_contexts", l.smf_max_sm_contexts),
            ("limits.mesh_max_outbox", l.mesh_max_outbox),
            ("limits.n2_max_associations", l.n2_max_associations),
            ("limits.sctp_max_fragments", l.sctp_max_fragments),
        ] {
            if v == 0 {
                return Err(invalid(field, "must be at least 1"));
            }
        }
        // RFC 9260 §6.2: a window smaller than one full packet could never take a message.
        if l.sctp_receive_window < 1500 {
            return Err(invalid(
                "limits.sctp_receive_window",
                "must be at least 1500 bytes",
            ));
        }
        // RFC 9110 §10.2.3 sets no bound; a day is past any sensible back-off.
        if l.sbi_retry_after_s > 86_400 {
            return Err(invalid("limits.sbi_retry_after_s", "must be at most 86400"));
        }
        let o = &self.overload;
        if o.low_mark >= o.high_mark {
            return Err(invalid(
                "overload.low_mark",
                "must be below overload.high_mark (hysteresis)",
            ));
        }
        if !(1..=99).contains(&o.traffic_load_reduction) {
            return Err(invalid(
                "overload.traffic_load_reduction",
                "must be 1 to 99",
            ));
        }
        if o.t3346_s == 0 || o.t3346_s > 31 * 360 {
            return Err(invalid(
                "overload.t3346_s",
                "must be 1 to 11160 (GPRS timer 2, TS 24.008 §10.5.7.4)",
            ));
        }
        Ok(())
    }

    /// Sets one key of `[limits]` or `[overload]` from `KEY=VALUE` (`--limit`):
    /// `limits.amf_max_ue_contexts=1000`, `overload.high_mark=64`; a bare key names
    /// `[limits]`. The value is TOML (a number, `true`). Validates the result.
    pub fn set_limit(&mut self, assignment: &str) -> Result<(), ConfigError> {
        let bad = |m: String| invalid("--limit", m);
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| bad(format!("{assignment:?} is not KEY=VALUE")))?;
        let key = key.trim();
        let (section, name) = key.split_once('.').unwrap_or(("limits", key));
        if !LIMIT_SECTIONS.contains(&section) {
            return Err(bad(format!(
                "{key:?}: only keys of [limits] and [overload] can be set"
            )));
        }
        let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {}", value.trim()))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .ok_or_else(|| bad(format!("{key}: {value:?} is not a TOML value")))?;
        let mut whole = toml::Table::try_from(&*self).map_err(|e| bad(e.to_string()))?;
        let Some(toml::Value::Table(table)) = whole.get_mut(section) else {
            return Err(bad(format!("no section [{section}]")));
        };
        if !table.contains_key(name) {
            return Err(bad(format!("[{section}] has no key {name:?}")));
        }
        table.insert(name.to_owned(), value);
        let cfg: Config = toml::Value::Table(whole)
            .try_into()
            .map_err(|e: toml::de::Error| bad(format!("{key}: {}", e.message())))?;
        cfg.validate()?;
        *self = cfg;
        Ok(())
    }

    /// Where the home network key file is for a data directory: `udm.hn_key_file` as is when
    /// absolute, else inside `data_dir`.
    pub fn hn_key_file(&self, data_dir: &Path) -> PathBuf {
        if self.udm.hn_key_file.is_absolute() {
            self.udm.hn_key_file.clone()
        } else {
            data_dir.join(&self.udm.hn_key_file)
        }
    }

    /// Replaces the PLMN, validating it.
    pub fn override_plmn(
        &mut self,
        mcc: Option<String>,
        mnc: Option<String>,
    ) -> Result<(), ConfigError> {
        if let Some(m) = mcc {
            self.plmn.mcc = m;
        }
        if let Some(m) = mnc {
            self.plmn.mnc = m;
        }
        self.validate()
    }
}

/// Parses a Slice Differentiator written as six hex digits (`"000001"`, `0x` prefix allowed).
pub fn parse_sd(sd: &str) -> Result<u32, ConfigError> {
    let digits = sd.strip_prefix("0x").unwrap_or(sd);
    if digits.len() != 6 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(
            "amf.slices.sd",
            format!("{sd:?} is not six hex digits"),
        ));
    }
    u32::from_str_radix(digits, 16).map_err(|e| invalid("amf.slices.sd", e.to_string()))
}

/// A preference list: at least one algorithm, each known and listed once.
fn validate_algorithms(
    field: &'static str,
    list: &[String],
    known: &[&str],
) -> Result<(), ConfigError> {
    if list.is_empty() {
        return Err(invalid(field, "at least one algorithm is needed"));
    }
    for (i, name) in list.iter().enumerate() {
        if !known.contains(&name.as_str()) {
            return Err(invalid(
                field,
                format!("unknown algorithm {name:?} (one of {})", known.join(", ")),
            ));
        }
        if list[..i].contains(name) {
            return Err(invalid(field, format!("{name:?} listed twice")));
        }
    }
    Ok(())
}

fn validate_digits(
    field: &'static str,
    value: &str,
    len: std::ops::RangeInclusive<usize>,
) -> Result<(), ConfigError> {
    if !len.contains(&value.len()) || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(
            field,
            format!(
                "{value:?} must be {}{} decimal digits",
                len.start(),
                if len.start() == len.end() {
                    String::new()
                } else {
                    format!(" to {}", len.end())
                }
            ),
        ));
    }
    Ok(())
}

pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field,
        message: message.into(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_3gpp_test_network() {
        let c = Config::default();
        c.validate().unwrap();
        assert_eq!(c.plmn.mcc, "001");
        assert_eq!(c.plmn.mnc, "01");
        assert_eq!(c.amf.tacs, vec![1]);
        assert_eq!(c.amf.slices, vec![SliceConfig { sst: 1, sd: None }]);
        assert_eq!(c.n2.addr, Ipv4Addr::new(127, 0, 0, 5));
        assert_eq!(c.n2.sctp_port, 38412);
        assert_eq!(c.n2.udp_port, 9899);
        assert_eq!(c.amf.nas_integrity, ["nia2", "nia1", "nia3"]);
        assert_eq!(c.amf.nas_ciphering, ["nea2", "nea1", "nea3", "nea0"]);
    }

    #[test]
    fn supis_are_fifteen_digits_in_the_plmn() {
        let p = |mcc: &str, mnc: &str| PlmnConfig {
            mcc: mcc.into(),
            mnc: mnc.into(),
        };
        assert_eq!(p("001", "01").supi(1), "imsi-001010000000001");
        assert_eq!(p("310", "410").supi(7), "imsi-310410000000007");
        assert_eq!(p("999", "070").supi(1), "imsi-999070000000001");
    }

    #[test]
    fn nas_algorithm_lists_come_from_the_file() {
        let c = Config::from_toml("[amf]\nnas_integrity = [\"nia1\"]\nnas_ciphering = [\"nea0\"]")
            .unwrap();
        assert_eq!(c.amf.nas_integrity, ["nia1"]);
        assert_eq!(c.amf.nas_ciphering, ["nea0"]);
    }

    #[test]
    fn file_overrides_only_what_it_sets() {
        let c = Config::from_toml(
            r#"
            [plmn]
            mcc = "999"
            mnc = "070"
            [amf]
            tacs = [1, 2, 0xffffff]
            slices = [{ sst = 1 }, { sst = 2, sd = "0000ff" }]
            [n2]
            transports = ["udp"]
            "#,
        )
        .unwrap();
        assert_eq!(c.plmn.mnc, "070");
        assert_eq!(c.amf.name, "steer5g-amf");
        assert_eq!(c.amf.tacs.len(), 3);
        assert_eq!(c.n2.transports, vec![Transport::Udp]);
        assert_eq!(c.n2.sctp_port, 38412);
        assert_eq!(
            parse_sd(c.amf.slices[1].sd.as_deref().unwrap()).unwrap(),
            0xff
        );
    }

    #[test]
    fn key_file_is_named_in_config_relative_to_the_data_dir() {
        let d = Path::new("/var/lib/steer5g");
        let c = Config::default();
        assert_eq!(c.hn_key_file(d), d.join("hn-keys.toml"));
        let c = Config::from_toml("[udm]\nhn_key_file = \"keys/hn.toml\"").unwrap();
        assert_eq!(c.hn_key_file(d), d.join("keys/hn.toml"));
        let c = Config::from_toml("[udm]\nhn_key_file = \"/etc/steer5g/hn.toml\"").unwrap();
        assert_eq!(c.hn_key_file(d), PathBuf::from("/etc/steer5g/hn.toml"));
        assert!(Config::from_toml("[udm]\nhn_key_file = \"\"").is_err());
    }

    #[test]
    fn round_trips_through_toml() {
        let c = Config::default();
        assert_eq!(Config::from_toml(&c.to_toml()).unwrap(), c);
    }

    #[test]
    fn rejects_bad_values() {
        for bad in [
            "[plmn]\nmcc = \"01\"\nmnc = \"01\"",
            "[plmn]\nmcc = \"0a1\"\nmnc = \"01\"",
            "[plmn]\nmcc = \"001\"\nmnc = \"1\"",
            "[amf]\nset_id = 1024",
            "[amf]\npointer = 64",
            "[amf]\ntacs = [16777216]",
            "[amf]\ntacs = []",
            "[amf]\nslices = [{ sst = 1, sd = \"12345\" }]",
            "[amf]\nnas_integrity = []",
            "[amf]\nnas_integrity = [\"nia0\"]",
            "[amf]\nnas_integrity = [\"nia2\", \"nia2\"]",
            "[amf]\nnas_ciphering = [\"nea4\"]",
            "[amf]\nnas_ciphering = [\"NEA0\"]",
            "[n2]\ntransports = [\"tcp\"]",
            "[n2]\ntransports = []",
            "[nope]\nx = 1",
        ] {
            assert!(Config::from_toml(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn limits_have_defaults_come_from_the_file_and_are_checked() {
        let c = Config::default();
        assert_eq!(c.limits.sbi_max_concurrent_streams, 1024);
        assert!(c.overload.low_mark < c.overload.high_mark);
        let c = Config::from_toml(
            "[limits]\namf_max_ue_contexts = 10\n[overload]\nhigh_mark = 8\nlow_mark = 4",
        )
        .unwrap();
        assert_eq!(c.limits.amf_max_ue_contexts, 10);
        assert_eq!((c.overload.high_mark, c.overload.low_mark), (8, 4));
        assert_eq!(c.limits.smf_max_sm_contexts, 250_000);
        for bad in [
            "[limits]\nsbi_max_concurrent_streams = 0",
            "[limits]\nsctp_receive_window = 100",
            "[limits]\nunknown = 1",
            "[overload]\nhigh_mark = 4\nlow_mark = 4",
            "[overload]\ntraffic_load_reduction = 100",
            "[overload]\nt3346_s = 0",
        ] {
            assert!(Config::from_toml(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn limit_flags_set_one_key_and_validate() {
        let mut c = Config::default();
        c.set_limit("amf_max_ue_contexts=7").unwrap();
        c.set_limit("overload.high_mark = 3000").unwrap();
        c.set_limit("limits.mesh_max_outbox=3").unwrap();
        assert_eq!(c.limits.amf_max_ue_contexts, 7);
        assert_eq!(c.overload.high_mark, 3000);
        assert_eq!(c.limits.mesh_max_outbox, 3);
        c.set_limit("overload.enabled=false").unwrap();
        assert!(!c.overload.enabled);
        for bad in [
            "amf_max_ue_contexts",
            "nope=1",
            "plmn.mcc=\"999\"",
            "limits.amf_max_ue_contexts=-1",
            "limits.amf_max_ue_contexts=ten",
            "overload.low_mark=3000",
        ] {
            assert!(c.set_limit(bad).is_err(), "accepted {bad:?}");
        }
        // A refused assignment changes nothing.
        assert_eq!(c.overload.low_mark, 1024);
    }

    #[test]
    fn transport_parses_case_insensitively() {
        assert_eq!("RAW".parse::<Transport>().unwrap(), Transport::Raw);
        assert!("sctp".parse::<Transport>().is_err());
    }
}
