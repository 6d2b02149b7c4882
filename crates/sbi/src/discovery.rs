//! NF discovery by static configuration.
//!
//! steer5g does not run an NRF yet: every NF finds its peers in a [`StaticDirectory`] built
//! from the loopback address plan of the README's conventions (each NF on its own loopback
//! address, port 7777, as Open5GS lays them out), which
//! configuration may override. Nnrf_NFManagement (register, heartbeat) and Nnrf_NFDiscovery
//! (TS 29.510) come later, when NFs run as separate processes on several hosts; the
//! [`NfType::Nrf`] entry already reserves its address.

use std::collections::BTreeMap;
use std::fmt;

/// NF types we address (TS 29.510 §6.1.6.3.3 `NFType`, same spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum NfType {
    /// Access and Mobility Management Function.
    Amf,
    /// Authentication Server Function.
    Ausf,
    /// Unified Data Management.
    Udm,
    /// Unified Data Repository.
    Udr,
    /// NF Repository Function.
    Nrf,
    /// Session Management Function.
    Smf,
}

impl NfType {
    /// All types.
    pub const ALL: [NfType; 6] = [
        NfType::Amf,
        NfType::Ausf,
        NfType::Udm,
        NfType::Udr,
        NfType::Nrf,
        NfType::Smf,
    ];

    /// The TS 29.510 spelling, e.g. `"AUSF"`.
    pub fn as_str(self) -> &'static str {
        match self {
            NfType::Amf => "AMF",
            NfType::Ausf => "AUSF",
            NfType::Udm => "UDM",
            NfType::Udr => "UDR",
            NfType::Nrf => "NRF",
            NfType::Smf => "SMF",
        }
    }

    /// Parses the TS 29.510 spelling (case-insensitive).
    pub fn parse(s: &str) -> Option<NfType> {
        NfType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
    }

    /// The services an instance of this type offers, as TS 29.510 `ServiceName` spells them
    /// (the NRF profile's `nfServices`, the scope of an access token for it).
    pub fn service_names(self) -> &'static [&'static str] {
        match self {
            NfType::Amf => &["namf-comm"],
            NfType::Ausf => &["nausf-auth"],
            NfType::Udm => &["nudm-ueau", "nudm-uecm", "nudm-sdm"],
            NfType::Udr => &["nudr-dr"],
            NfType::Nrf => &["nnrf-nfm", "nnrf-disc"],
            NfType::Smf => &["nsmf-pdusession"],
        }
    }

    /// The default SBI base URI of the loopback address plan.
    pub fn default_base_uri(self) -> &'static str {
        match self {
            NfType::Amf => "http://127.0.0.5:7777",
            NfType::Ausf => "http://127.0.0.11:7777",
            NfType::Udm => "http://127.0.0.12:7777",
            NfType::Udr => "http://127.0.0.20:7777",
            NfType::Nrf => "http://127.0.0.10:7777",
            NfType::Smf => "http://127.0.0.4:7777",
        }
    }
}

impl fmt::Display for NfType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// NF type → base URI (`scheme://host:port`, no trailing slash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticDirectory {
    entries: BTreeMap<NfType, String>,
    /// Worker counts the NFs announce (what an NRF profile would carry), for shard-aware
    /// clients ([`crate::pool`]).
    workers: BTreeMap<NfType, u16>,
}

impl Default for StaticDirectory {
    fn default() -> Self {
        StaticDirectory {
            entries: NfType::ALL
                .into_iter()
                .map(|t| (t, t.default_base_uri().to_owned()))
                .collect(),
            workers: BTreeMap::new(),
        }
    }
}

impl StaticDirectory {
    /// The loopback address plan's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Overrides the base URI of `nf`; a trailing `/` is dropped.
    pub fn set(&mut self, nf: NfType, base_uri: impl Into<String>) -> &mut Self {
        let mut b = base_uri.into();
        while b.ends_with('/') {
            b.pop();
        }
        self.entries.insert(nf, b);
        self
    }

    /// The base URI of `nf`.
    pub fn base_uri(&self, nf: NfType) -> Option<&str> {
        self.entries.get(&nf).map(String::as_str)
    }

    /// Records that `nf` runs `workers` workers (its listener group's size).
    pub fn set_workers(&mut self, nf: NfType, workers: u16) -> &mut Self {
        self.workers.insert(nf, workers);
        self
    }

    /// The worker count `nf` announced, if known.
    pub fn workers(&self, nf: NfType) -> Option<u16> {
        self.workers.get(&nf).copied()
    }

    /// The absolute URI of `path` (from [`crate::paths::build`]) at `nf`.
    pub fn uri(&self, nf: NfType, path: &str) -> Option<String> {
        self.base_uri(nf).map(|b| format!("{b}{path}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_design() {
        let d = StaticDirectory::new();
        assert_eq!(d.base_uri(NfType::Ausf), Some("http://127.0.0.11:7777"));
        assert_eq!(d.base_uri(NfType::Udm), Some("http://127.0.0.12:7777"));
        assert_eq!(
            d.uri(NfType::Udm, "/nudm-sdm/v2/imsi-1/nssai").as_deref(),
            Some("http://127.0.0.12:7777/nudm-sdm/v2/imsi-1/nssai")
        );
    }

    #[test]
    fn override_and_parse() {
        let mut d = StaticDirectory::new();
        d.set(NfType::Ausf, "http://127.0.0.1:9000/");
        assert_eq!(d.base_uri(NfType::Ausf), Some("http://127.0.0.1:9000"));
        assert_eq!(NfType::parse("udr"), Some(NfType::Udr));
        assert_eq!(NfType::parse("pcf"), None);
    }
}
