//! Where each NF is and what the process serves besides: the SBI addresses of the NFs, the
//! SMF's and the UPF's addresses and pools, the data directory, the metrics and
//! provisioning endpoints and the log filter. The defaults are the loopback plan of
//! DESIGN.md's Conventions (Open5GS's), so that two cores on one host differ only in these
//! keys.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{invalid, ConfigError};

/// The SBI (h2c) address of each NF: where it listens when this process hosts it, where it
/// is called when another does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SbiConfig {
    /// The AMF's base URI (Namf_Communication, the UDM's callbacks).
    pub amf: String,
    /// The SMF's (Nsmf_PDUSession).
    pub smf: String,
    /// The AUSF's (Nausf_UEAuthentication).
    pub ausf: String,
    /// The UDM's (Nudm_UEAU, Nudm_UECM, Nudm_SDM).
    pub udm: String,
    /// How long a client waits for an answer, milliseconds (TS 29.500 leaves it to the
    /// operator). An Nsmf_PDUSession call waits this plus the PFCP exchange it nests
    /// (T1 × (N1 + 1)) plus 3 s.
    pub timeout_ms: u32,
}

impl Default for SbiConfig {
    fn default() -> Self {
        SbiConfig {
            amf: "http://127.0.0.5:7777".into(),
            smf: "http://127.0.0.4:7777".into(),
            ausf: "http://127.0.0.11:7777".into(),
            udm: "http://127.0.0.12:7777".into(),
            timeout_ms: 5000,
        }
    }
}

impl SbiConfig {
    /// The call timeout as a duration.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(u64::from(self.timeout_ms))
    }

    fn validate(&self) -> Result<(), ConfigError> {
        for (field, uri) in [
            ("sbi.amf", &self.amf),
            ("sbi.smf", &self.smf),
            ("sbi.ausf", &self.ausf),
            ("sbi.udm", &self.udm),
        ] {
            sbi_listen_addr(uri).map_err(|m| invalid(field, m))?;
        }
        if !(100..=600_000).contains(&self.timeout_ms) {
            return Err(invalid("sbi.timeout_ms", "must be 100 to 600000"));
        }
        Ok(())
    }
}

/// The address a base URI `http://IP:PORT[/...]` listens on: the SBI here is h2c on an
/// address given as such (no name resolution, no TLS). What the core binds and what the
/// configuration accepts, read the same way.
pub fn sbi_listen_addr(uri: &str) -> Result<SocketAddr, String> {
    let rest = uri
        .strip_prefix("http://")
        .ok_or_else(|| format!("{uri:?}: an http:// URI is needed (the SBI is h2c)"))?;
    let host = rest.split('/').next().unwrap_or_default();
    host.parse::<SocketAddr>()
        .map_err(|_| format!("{uri:?}: expected http://IP:PORT, e.g. http://127.0.0.12:7777"))
}

/// The SMF's addresses and what it serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmfConfig {
    /// The address each worker's PFCP socket binds and advertises in its CP F-SEID.
    pub pfcp_addr: Ipv4Addr,
    /// The UPF's PFCP address.
    pub upf: SocketAddr,
    /// Served DNNs and their UE IPv4 pools, `NAME=NET/LEN`; each pool is split between the
    /// workers.
    pub dnns: Vec<String>,
}

impl Default for SmfConfig {
    fn default() -> Self {
        SmfConfig {
            pfcp_addr: Ipv4Addr::new(127, 0, 0, 4),
            upf: SocketAddr::from(([127, 0, 0, 7], 8805)),
            dnns: vec!["internet=10.45.0.0/16".into()],
        }
    }
}

/// One DNN's UE pool, parsed from `NAME=NET/LEN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnnPoolSpec {
    /// The DNN.
    pub dnn: String,
    /// The pool's network address.
    pub net: Ipv4Addr,
    /// Its prefix length, 1 to 30.
    pub prefix_len: u8,
}

/// Parses `NAME=NET/LEN` (`internet=10.45.0.0/16`).
pub fn parse_dnn_pool(s: &str) -> Result<DnnPoolSpec, String> {
    let bad = || format!("{s:?}: expected NAME=A.B.C.D/LEN");
    let (name, pool) = s.split_once('=').ok_or_else(bad)?;
    let (net, prefix_len) = parse_pool(pool).map_err(|_| bad())?;
    if name.is_empty() {
        return Err(bad());
    }
    Ok(DnnPoolSpec {
        dnn: name.to_owned(),
        net,
        prefix_len,
    })
}

/// Parses `A.B.C.D/LEN` with LEN 1 to 30: a pool needs host addresses to hand out, and /31
/// and /32 have none to spare.
pub fn parse_pool(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let bad = || format!("{s:?}: expected A.B.C.D/LEN with LEN 1 to 30");
    let (net, len) = s.split_once('/').ok_or_else(bad)?;
    let net: Ipv4Addr = net.parse().map_err(|_| bad())?;
    let len: u8 = len.parse().map_err(|_| bad())?;
    if !(1..=30).contains(&len) {
        return Err(bad());
    }
    Ok((net, len))
}

impl SmfConfig {
    /// The DNN pools, parsed (`validate` has checked them).
    pub fn pools(&self) -> Result<Vec<DnnPoolSpec>, ConfigError> {
        self.dnns
            .iter()
            .map(|d| parse_dnn_pool(d).map_err(|m| invalid("smf.dnns", m)))
            .collect()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let pools = self.pools()?;
        if pools.is_empty() {
            return Err(invalid("smf.dnns", "at least one DNN is needed"));
        }
        for (i, p) in pools.iter().enumerate() {
            if pools[..i].iter().any(|q| q.dnn == p.dnn) {
                return Err(invalid("smf.dnns", format!("{} listed twice", p.dnn)));
            }
        }
        Ok(())
    }
}

/// The UPF's addresses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpfConfig {
    /// Where it serves PFCP (N4).
    pub pfcp_addr: SocketAddr,
    /// Its N3 GTP-U address, advertised in the F-TEIDs it allocates (TS 29.281: port 2152).
    pub n3_addr: SocketAddr,
    /// The UE pool routed back through it from N6.
    pub ue_pool: String,
}

impl Default for UpfConfig {
    fn default() -> Self {
        UpfConfig {
            pfcp_addr: SocketAddr::from(([127, 0, 0, 7], 8805)),
            n3_addr: SocketAddr::from(([127, 0, 0, 7], 2152)),
            ue_pool: "10.45.0.0/16".into(),
        }
    }
}

impl UpfConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        parse_pool(&self.ue_pool).map_err(|m| invalid("upf.ue_pool", m))?;
        if !self.n3_addr.is_ipv4() {
            return Err(invalid("upf.n3_addr", "must be an IPv4 address"));
        }
        Ok(())
    }
}

/// The subscriber store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// The data directory: the store and the home network key file (`--data-dir`).
    pub data_dir: PathBuf,
    /// The subscriber store on PostgreSQL (`postgres://user@host:port/db`, `--store`)
    /// instead of the embedded file in the data directory; shared by several instances.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Whether `s` names a PostgreSQL store (`postgres://` or `postgresql://`), the only kind
/// `store.url` takes.
pub fn is_store_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// A store URL fit for printing: a password in it (`user:password@`) becomes `***`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_owned(),
    }
}

/// DESIGN.md's default data directory.
pub const DEFAULT_DATA_DIR: &str = "./steer5g-data";

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            url: None,
        }
    }
}

/// The Prometheus endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// Serve `/metrics` at all.
    pub enabled: bool,
    /// Where; absent: port 9090 of the first hosted NF's address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<SocketAddr>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            enabled: true,
            addr: None,
        }
    }
}

/// The provisioning API of a process that holds the store (docs/PROVISIONING.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProvisioningConfig {
    /// Serve it at all (on `<data-dir>/provisioning.sock`, and on `addr` when given).
    pub enabled: bool,
    /// Also serve it on TCP here; off loopback it needs `token_file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<SocketAddr>,
    /// The file holding the bearer token TCP requests must carry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
}

impl Default for ProvisioningConfig {
    fn default() -> Self {
        ProvisioningConfig {
            enabled: true,
            addr: None,
            token_file: None,
        }
    }
}

/// Logging.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// The filter, tracing-subscriber syntax (`info`, `debug,sctp=trace`); absent: RUST_LOG,
    /// else the command's default. `--log` wins over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
}

/// Checks the sections of this module.
pub(crate) fn validate(c: &crate::Config) -> Result<(), ConfigError> {
    c.sbi.validate()?;
    c.smf.validate()?;
    c.upf.validate()?;
    if c.store.data_dir.as_os_str().is_empty() {
        return Err(invalid("store.data_dir", "must name a directory"));
    }
    if let Some(url) = &c.store.url {
        if !is_store_url(url) {
            // The value is not echoed: it may hold a password.
            return Err(invalid(
                "store.url",
                "expected postgres://USER@HOST:PORT/DB (or postgresql://)",
            ));
        }
    }
    if c.log.filter.as_deref().is_some_and(|f| f.trim().is_empty()) {
        return Err(invalid("log.filter", "must not be empty"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn a_password_in_the_store_url_is_not_printed() {
        assert_eq!(
            redact_url("postgres://udm:s3cret@db:5432/steer5g?sslmode=disable"),
            "postgres://udm:***@db:5432/steer5g?sslmode=disable"
        );
        assert_eq!(
            redact_url("postgres://udm@db/steer5g"),
            "postgres://udm@db/steer5g"
        );
        assert_eq!(
            redact_url("postgresql:///steer5g?host=/run/pg"),
            "postgresql:///steer5g?host=/run/pg"
        );
    }

    #[test]
    fn defaults_are_the_loopback_plan() {
        let c = Config::default();
        assert_eq!(c.sbi.udm, "http://127.0.0.12:7777");
        assert_eq!(
            sbi_listen_addr(&c.sbi.ausf).unwrap(),
            "127.0.0.11:7777".parse().unwrap()
        );
        assert_eq!(c.smf.upf, "127.0.0.7:8805".parse().unwrap());
        assert_eq!(c.smf.pools().unwrap()[0].prefix_len, 16);
        assert_eq!(c.store.data_dir, PathBuf::from("./steer5g-data"));
        assert!(c.metrics.enabled && c.provisioning.enabled);
    }

    #[test]
    fn a_second_core_moves_every_address_in_the_file() {
        let c = Config::from_toml(
            r#"
            [sbi]
            amf = "http://127.0.1.5:7777"
            smf = "http://127.0.1.4:7777/"
            ausf = "http://127.0.1.11:7777"
            udm = "http://127.0.1.12:7778"
            [smf]
            pfcp_addr = "127.0.1.4"
            upf = "127.0.1.7:8805"
            dnns = ["internet=10.46.0.0/16", "ims=10.47.0.0/24"]
            [upf]
            pfcp_addr = "127.0.1.7:8805"
            [store]
            data_dir = "/var/lib/steer5g-b"
            [metrics]
            addr = "127.0.1.5:9090"
            [provisioning]
            addr = "127.0.0.1:7780"
            [log]
            filter = "debug"
            "#,
        )
        .unwrap();
        assert_eq!(
            sbi_listen_addr(&c.sbi.smf).unwrap(),
            "127.0.1.4:7777".parse().unwrap()
        );
        assert_eq!(c.smf.pools().unwrap()[1].dnn, "ims");
        assert_eq!(c.metrics.addr, Some("127.0.1.5:9090".parse().unwrap()));
        assert_eq!(Config::from_toml(&c.to_toml()).unwrap(), c);
    }

    #[test]
    fn bad_addresses_and_pools_are_named() {
        for (bad, field) in [
            ("[sbi]\nudm = \"https://127.0.0.12:7777\"", "sbi.udm"),
            ("[sbi]\namf = \"http://amf.local:7777\"", "sbi.amf"),
            ("[sbi]\ntimeout_ms = 1", "sbi.timeout_ms"),
            ("[smf]\ndnns = [\"internet\"]", "smf.dnns"),
            ("[smf]\ndnns = []", "smf.dnns"),
            (
                "[smf]\ndnns = [\"a=10.0.0.0/8\", \"a=10.1.0.0/16\"]",
                "smf.dnns",
            ),
            ("[upf]\nue_pool = \"10.45.0.0/32\"", "upf.ue_pool"),
            ("[store]\ndata_dir = \"\"", "store.data_dir"),
            ("[log]\nfilter = \" \"", "log.filter"),
        ] {
            let e = Config::from_toml(bad).unwrap_err().to_string();
            assert!(e.contains(field), "{bad:?}: {e}");
        }
        assert!(parse_dnn_pool("ims=10.0.0.0/31").is_err());
        assert!(parse_dnn_pool("=10.0.0.0/8").is_err());
    }

    #[test]
    fn addresses_and_pools_come_from_variables() {
        let mut c = Config::default();
        c.apply_env(
            [
                ("STEER5G_SBI_UDM", "http://127.0.2.12:7777"),
                ("STEER5G_SMF_DNNS", "internet=10.50.0.0/16,ims=10.51.0.0/24"),
                ("STEER5G_METRICS_ADDR", "127.0.2.5:9191"),
                ("STEER5G_STORE_DATA_DIR", "/srv/steer5g"),
                ("STEER5G_NAS_T3512_S", "600"),
            ]
            .map(|(a, b)| (a.to_owned(), b.to_owned())),
        )
        .unwrap();
        assert_eq!(c.sbi.udm, "http://127.0.2.12:7777");
        assert_eq!(c.smf.pools().unwrap().len(), 2);
        assert_eq!(c.metrics.addr, Some("127.0.2.5:9191".parse().unwrap()));
        assert_eq!(c.store.data_dir, PathBuf::from("/srv/steer5g"));
        assert_eq!(c.nas.t3512_s, 600);
    }
}
