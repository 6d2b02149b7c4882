//! Nnrf bodies (TS 29.510): the NF profile of NFManagement and NFDiscovery, status
//! subscriptions and their notifications, and the OAuth2 access token exchange.
//!
//! The profile keeps every member it does not model in [`NfProfile::other`], so that an NRF
//! storing another vendor's profile hands it back whole in discovery answers.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{not_null, Guami, PlmnId, Snssai};

/// `NFStatus` values (TS 29.510 §6.1.6.3.2); the YAML leaves the enumeration open.
pub const NF_REGISTERED: &str = "REGISTERED";
/// An NF whose heartbeat lapsed (TS 29.510 §5.2.2.3.2).
pub const NF_SUSPENDED: &str = "SUSPENDED";
/// Registered but not to be returned by discovery.
pub const NF_UNDISCOVERABLE: &str = "UNDISCOVERABLE";

/// The vendor-specific member of [`NfProfile::custom_info`] in which a steer5g NF announces
/// its worker count, for the shard-aware connection pools of its peers.
pub const CUSTOM_WORKERS: &str = "steer5gWorkers";

/// An NF instance's profile (TS 29.510 §6.1.6.2.2 `NFProfile`), the members steer5g reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NfProfile {
    /// The instance's UUID.
    pub nf_instance_id: String,
    /// `NFType`, e.g. `"AUSF"`.
    pub nf_type: String,
    /// `REGISTERED`, `SUSPENDED`, `UNDISCOVERABLE`, ...
    pub nf_status: String,
    /// Seconds between heartbeats; the NRF sets it in its answer.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heart_beat_timer: Option<u32>,
    /// PLMNs served.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plmn_list: Option<Vec<PlmnId>>,
    /// Slices served (absent: all).
    #[serde(rename = "sNssais", default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s_nssais: Option<Vec<Snssai>>,
    /// FQDN of the instance.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
    /// IPv4 addresses the instance serves on.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4_addresses: Option<Vec<String>>,
    /// NF types allowed to discover it (absent: all).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_nf_types: Option<Vec<String>>,
    /// Selection priority, lower is preferred (0..=65535).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u16>,
    /// Static capacity (0..=65535).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u16>,
    /// Current load, percent.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<u8>,
    /// UDM information: the SUPIs and routing indicators it serves.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udm_info: Option<SupiServingInfo>,
    /// AUSF information, as the UDM's.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ausf_info: Option<SupiServingInfo>,
    /// AMF information: its set, region and GUAMIs.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amf_info: Option<AmfInfo>,
    /// SMF information: slices and DNNs.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smf_info: Option<SmfInfo>,
    /// UPF information: slices and DNNs.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upf_info: Option<UpfInfo>,
    /// Vendor-specific data; steer5g puts [`CUSTOM_WORKERS`] here.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_info: Option<Map<String, Value>>,
    /// The services the instance offers.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nf_services: Option<Vec<NfService>>,
    /// Every other member, kept as received.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl NfProfile {
    /// The worker count announced in [`CUSTOM_WORKERS`], if any and in range.
    pub fn workers(&self) -> Option<u16> {
        let n = self.custom_info.as_ref()?.get(CUSTOM_WORKERS)?.as_u64()?;
        u16::try_from(n).ok().filter(|&n| n > 0)
    }

    /// Whether the instance lists `service` (e.g. `"nausf-auth"`) among its services.
    pub fn offers(&self, service: &str) -> bool {
        self.nf_services
            .iter()
            .flatten()
            .any(|s| s.service_name == service)
    }

    /// The `scheme://host:port` its services answer on: the first service's endpoint, else
    /// the first IPv4 address or FQDN on the scheme's default port.
    pub fn base_uri(&self) -> Option<String> {
        if let Some(s) = self.nf_services.as_ref().and_then(|s| s.first()) {
            let host = s
                .ip_end_points
                .as_ref()
                .and_then(|e| e.first())
                .and_then(|e| e.ipv4_address.clone().map(|a| (a, e.port)))
                .or_else(|| {
                    self.ipv4_addresses
                        .as_ref()
                        .and_then(|a| a.first().cloned())
                        .map(|a| (a, None))
                })
                .or_else(|| s.fqdn.clone().or(self.fqdn.clone()).map(|f| (f, None)));
            let (host, port) = host?;
            let port = port.unwrap_or(if s.scheme == "https" { 443 } else { 80 });
            let prefix = s.api_prefix.as_deref().unwrap_or("");
            return Some(format!("{}://{host}:{port}{prefix}", s.scheme));
        }
        let host = self
            .ipv4_addresses
            .as_ref()
            .and_then(|a| a.first().cloned())
            .or(self.fqdn.clone())?;
        Some(format!("http://{host}:80"))
    }
}

/// One service of a profile (TS 29.510 §6.1.6.2.3 `NFService`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NfService {
    /// Unique within the profile.
    pub service_instance_id: String,
    /// `ServiceName`, e.g. `"nudm-ueau"`.
    pub service_name: String,
    /// API versions.
    pub versions: Vec<NfServiceVersion>,
    /// `http` or `https`.
    pub scheme: String,
    /// As the profile's status.
    pub nf_service_status: String,
    /// FQDN of the service.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
    /// Where the service listens.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_end_points: Option<Vec<IpEndPoint>>,
    /// Path prefix before the service name.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_prefix: Option<String>,
    /// Every other member, kept as received.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `NFServiceVersion`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NfServiceVersion {
    /// E.g. `"v1"`.
    pub api_version_in_uri: String,
    /// E.g. `"1.2.0"`.
    pub api_full_version: String,
}

/// `IpEndPoint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IpEndPoint {
    /// Dotted IPv4 address.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4_address: Option<String>,
    /// `TCP` (the default) or `STCP`.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Port.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// `UdmInfo` and `AusfInfo`, the members both have.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SupiServingInfo {
    /// The group the instance belongs to.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// The SUPIs it serves (absent: all).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supi_ranges: Option<Vec<SupiRange>>,
    /// The routing indicators it serves (absent: all).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing_indicators: Option<Vec<String>>,
    /// Every other member, kept as received.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `SupiRange`: digits `start..=end` of equal length, or a regular expression.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupiRange {
    /// First SUPI digits of the range.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Last SUPI digits of the range.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// A regular expression (ECMA-262) over the SUPI.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

/// `AmfInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AmfInfo {
    /// AMF Set ID, 3 hex characters (10 bits).
    pub amf_set_id: String,
    /// AMF Region ID, 2 hex characters.
    pub amf_region_id: String,
    /// The GUAMIs the AMF serves.
    pub guami_list: Vec<Guami>,
    /// Every other member, kept as received.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `SmfInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SmfInfo {
    /// Per slice, the DNNs served.
    pub s_nssai_smf_info_list: Vec<SnssaiDnnItem>,
    /// Every other member, kept as received.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `UpfInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpfInfo {
    /// Per slice, the DNNs served.
    pub s_nssai_upf_info_list: Vec<SnssaiDnnItem>,
    /// Every other member, kept as received.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `SnssaiSmfInfoItem` and `SnssaiUpfInfoItem`; the DNN list is `dnnSmfInfoList` in the one
/// and `dnnUpfInfoList` in the other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnssaiDnnItem {
    /// The slice.
    pub s_nssai: Snssai,
    /// DNNs of an SMF.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dnn_smf_info_list: Option<Vec<DnnItem>>,
    /// DNNs of a UPF.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dnn_upf_info_list: Option<Vec<DnnItem>>,
}

impl SnssaiDnnItem {
    /// The DNNs, whichever list holds them.
    pub fn dnns(&self) -> impl Iterator<Item = &str> {
        self.dnn_smf_info_list
            .iter()
            .chain(self.dnn_upf_info_list.iter())
            .flatten()
            .map(|d| d.dnn.as_str())
    }
}

/// `DnnSmfInfoItem` / `DnnUpfInfoItem`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnnItem {
    /// The DNN, or `*` for any (SMF only).
    pub dnn: String,
}

/// Body of POST `/nnrf-nfm/v1/subscriptions` and of its 201 (TS 29.510 `SubscriptionData`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    /// Where the NRF POSTs `NotificationData`.
    pub nf_status_notification_uri: String,
    /// The subscribing NF instance.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub req_nf_instance_id: Option<String>,
    /// Which NFs to watch (absent: all). Kept as JSON: `SubscrCond` is a `oneOf`.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscr_cond: Option<Value>,
    /// Assigned by the NRF (read-only: absent in the request).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,
    /// Until when the subscription lives (RFC 3339); the NRF sets it.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validity_time: Option<String>,
    /// Events wanted (absent: all).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub req_notif_events: Option<Vec<String>>,
    /// The subscribing NF's type.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub req_nf_type: Option<String>,
}

/// `NotificationEventType` values.
pub const EVENT_REGISTERED: &str = "NF_REGISTERED";
/// An instance left (deregistered).
pub const EVENT_DEREGISTERED: &str = "NF_DEREGISTERED";
/// An instance's profile changed, its status included (suspended on a lapsed heartbeat).
pub const EVENT_PROFILE_CHANGED: &str = "NF_PROFILE_CHANGED";

/// Body of the NRF's notification POST (TS 29.510 §6.1.6.2.17 `NotificationData`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationData {
    /// One of the `EVENT_*` values.
    pub event: String,
    /// The instance's resource URI at the NRF.
    pub nf_instance_uri: String,
    /// The profile, for registrations and changes.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nf_profile: Option<Value>,
}

/// The members a notification's profile must not carry (TS 29.510 §6.1.6.2.17: the NRF
/// keeps who may discover an instance to itself).
const NOT_NOTIFIED: [&str; 5] = [
    "allowedPlmns",
    "allowedSnpns",
    "allowedNfTypes",
    "allowedNfDomains",
    "allowedNssais",
];

/// `profile` as a notification may carry it: without the `allowed*` members, in the profile
/// and in each of its services.
pub fn notified_profile(profile: &Value) -> Value {
    let mut p = profile.clone();
    let strip = |v: &mut Value| {
        if let Some(o) = v.as_object_mut() {
            for k in NOT_NOTIFIED {
                o.remove(k);
            }
        }
    };
    strip(&mut p);
    if let Some(services) = p.get_mut("nfServices").and_then(Value::as_array_mut) {
        services.iter_mut().for_each(strip);
    }
    if let Some(services) = p.get_mut("nfServiceList").and_then(Value::as_object_mut) {
        services.values_mut().for_each(strip);
    }
    p
}

impl NotificationData {
    /// The instance ID: the last segment of [`NotificationData::nf_instance_uri`].
    pub fn nf_instance_id(&self) -> &str {
        self.nf_instance_uri
            .rsplit('/')
            .next()
            .unwrap_or(&self.nf_instance_uri)
    }
}

/// Answer of Nnrf_NFDiscovery (TS 29.510 §6.2.6.2.2 `SearchResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    /// Seconds the answer may be cached.
    pub validity_period: u32,
    /// The matching profiles.
    pub nf_instances: Vec<Value>,
    /// Query parameters the NRF received but did not use to select.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored_query_params: Option<Vec<String>>,
}

/// Body of a 200 to POST `/oauth2/token` (TS 29.510 §6.3.5.2.3 `AccessTokenRsp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessTokenRsp {
    /// The signed JWT.
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds until it expires.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<u32>,
    /// The granted scope (space-separated service names).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// Body of a 400/401 to POST `/oauth2/token` (`AccessTokenErr`, RFC 6749 §5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessTokenErr {
    /// `invalid_request`, `invalid_client`, `invalid_grant`, `unauthorized_client`,
    /// `unsupported_grant_type` or `invalid_scope`.
    pub error: String,
    /// Human-readable detail.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_description: Option<String>,
}
