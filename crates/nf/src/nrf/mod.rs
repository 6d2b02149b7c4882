//! The NRF (TS 29.510) as a sans-IO state machine: Nnrf_NFManagement (register, update and
//! heartbeat, deregister, status subscriptions and their notifications), Nnrf_NFDiscovery and
//! Nnrf_AccessToken.
//!
//! The NRF is not on a procedure's hot path (NFs cache discovery answers for their validity
//! period), so it is one state machine, not a shard per worker: `steer5g nrf` drives it from
//! one thread. [`Nrf::handle`] answers a request; the notifications it owes leave through
//! [`Nrf::poll_notification`]; [`Nrf::poll_timeout`] and [`Nrf::handle_timeout`] suspend the
//! instances whose heartbeat lapsed (TS 29.510 §5.2.2.3.2) and drop expired subscriptions.

mod discovery;
mod profile;
#[cfg(test)]
mod tests;
mod token;

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant, SystemTime};

use http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use sbi::model::{
    notified_profile, InvalidParam, NfProfile, NotificationData, SearchResult, SubscriptionData,
    EVENT_DEREGISTERED, EVENT_PROFILE_CHANGED, EVENT_REGISTERED, NF_REGISTERED, NF_SUSPENDED,
};
use sbi::problem::Cause;
use sbi::{ProblemDetails, SbiRequest, SbiResponse};
use serde_json::{json, Value};

pub use token::TokenIssuer;

/// NFManagement's API root.
pub const NNRF_NFM: &str = "/nnrf-nfm/v1";
/// NFDiscovery's API root.
pub const NNRF_DISC: &str = "/nnrf-disc/v1";
/// The AccessToken endpoint.
pub const OAUTH2_TOKEN: &str = "/oauth2/token";

/// How the NRF behaves.
#[derive(Debug, Clone)]
pub struct NrfConfig {
    /// The NRF's own instance ID: the `iss` of its tokens.
    pub instance_id: String,
    /// `scheme://host:port` the NRF serves on, for the URIs it hands out.
    pub base_uri: String,
    /// The heartbeat period it assigns (`heartBeatTimer`).
    pub heartbeat: Duration,
    /// How long past a missed heartbeat an instance stays REGISTERED: the period times this.
    pub heartbeat_grace: f64,
    /// Seconds a discovery answer may be cached (`validityPeriod`).
    pub validity_period_s: u32,
    /// How long a status subscription lives (`validityTime`).
    pub subscription_validity: Duration,
}

impl Default for NrfConfig {
    fn default() -> Self {
        NrfConfig {
            instance_id: "00000000-0000-4000-8000-00000000000a".into(),
            base_uri: sbi::NfType::Nrf.default_base_uri().into(),
            heartbeat: Duration::from_secs(10),
            heartbeat_grace: 1.5,
            validity_period_s: 30,
            subscription_validity: Duration::from_secs(86_400),
        }
    }
}

/// A registered NF instance.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    /// The profile as stored, every member kept.
    raw: Value,
    /// Its typed view.
    pub(crate) profile: NfProfile,
    last_heartbeat: Instant,
    /// Suspended by the NRF for a lapsed heartbeat, so that the next heartbeat restores it.
    lapsed: bool,
}

#[derive(Debug, Clone)]
struct Subscription {
    data: SubscriptionData,
    cond: Cond,
    expires: Instant,
}

/// `SubscrCond`, the variants steer5g evaluates.
#[derive(Debug, Clone, PartialEq)]
enum Cond {
    All,
    Instances(Vec<String>),
    Type(String),
    Services(Vec<String>),
}

impl Cond {
    fn parse(v: Option<&Value>) -> Result<Cond, &'static str> {
        let Some(v) = v else { return Ok(Cond::All) };
        let o = v.as_object().ok_or("an object")?;
        let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
        let l = |k: &str| {
            o.get(k).and_then(Value::as_array).map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
        };
        let c = if let Some(id) = s("nfInstanceId") {
            Cond::Instances(vec![id])
        } else if let Some(ids) = l("nfInstanceIdList") {
            Cond::Instances(ids)
        } else if let Some(t) = s("nfType") {
            Cond::Type(t)
        } else if let Some(n) = s("serviceName") {
            Cond::Services(vec![n])
        } else if let Some(n) = l("serviceNameList") {
            Cond::Services(n)
        } else {
            return Err("supported conditions: nfInstanceId, nfInstanceIdList, nfType, serviceName, serviceNameList");
        };
        if o.len() != 1 || matches!(&c, Cond::Instances(v) | Cond::Services(v) if v.is_empty()) {
            return Err("exactly one condition, not empty");
        }
        Ok(c)
    }

    fn covers(&self, p: &NfProfile) -> bool {
        match self {
            Cond::All => true,
            Cond::Instances(ids) => ids.contains(&p.nf_instance_id),
            Cond::Type(t) => *t == p.nf_type,
            Cond::Services(s) => s.iter().any(|s| p.offers(s)),
        }
    }
}

/// A notification the NRF owes a subscriber: POST `body` to `uri`.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The subscriber's `nfStatusNotificationUri`.
    pub uri: String,
    /// What happened.
    pub body: NotificationData,
}

/// Counters of an NRF.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NrfStats {
    /// NFRegister of a new instance.
    pub registrations: u64,
    /// NFRegister replacing a profile, and NFUpdate (heartbeats included).
    pub updates: u64,
    /// NFDeregister.
    pub deregistrations: u64,
    /// Instances suspended for a lapsed heartbeat.
    pub suspensions: u64,
    /// Discovery requests answered with 200.
    pub discoveries: u64,
    /// Status subscriptions created.
    pub subscriptions: u64,
    /// Notifications queued.
    pub notifications: u64,
    /// Access tokens issued.
    pub tokens_granted: u64,
    /// Token requests refused.
    pub tokens_refused: u64,
    /// Requests refused with 4xx.
    pub refused: u64,
}

/// The NRF.
#[derive(Debug)]
pub struct Nrf {
    cfg: NrfConfig,
    instances: BTreeMap<String, Instance>,
    subscriptions: BTreeMap<String, Subscription>,
    next_subscription: u64,
    tokens: Option<TokenIssuer>,
    outbox: VecDeque<Notification>,
    stats: NrfStats,
}

impl Nrf {
    /// An NRF with no instance registered; `tokens` is `None` when it issues no tokens.
    pub fn new(cfg: NrfConfig, tokens: Option<TokenIssuer>) -> Self {
        Nrf {
            cfg,
            instances: BTreeMap::new(),
            subscriptions: BTreeMap::new(),
            next_subscription: 1,
            tokens,
            outbox: VecDeque::new(),
            stats: NrfStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> &NrfStats {
        &self.stats
    }

    /// The registered instances' profiles.
    pub fn profiles(&self) -> impl Iterator<Item = &NfProfile> {
        self.instances.values().map(|i| &i.profile)
    }

    /// The next notification to send.
    pub fn poll_notification(&mut self) -> Option<Notification> {
        self.outbox.pop_front()
    }

    /// When [`Nrf::handle_timeout`] has work: the earliest heartbeat deadline or subscription
    /// expiry.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let lapse = self
            .instances
            .values()
            .filter(|i| i.profile.nf_status == NF_REGISTERED)
            .map(|i| i.last_heartbeat + self.grace());
        let expiry = self.subscriptions.values().map(|s| s.expires);
        lapse.chain(expiry).min()
    }

    fn grace(&self) -> Duration {
        self.cfg
            .heartbeat
            .mul_f64(self.cfg.heartbeat_grace.max(1.0))
    }

    /// Suspends the instances whose heartbeat lapsed and drops expired subscriptions.
    pub fn handle_timeout(&mut self, now: Instant) {
        let grace = self.grace();
        let lapsed: Vec<String> = self
            .instances
            .iter()
            .filter(|(_, i)| {
                i.profile.nf_status == NF_REGISTERED && now >= i.last_heartbeat + grace
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in lapsed {
            let Some(i) = self.instances.get_mut(&id) else {
                continue;
            };
            i.profile.nf_status = NF_SUSPENDED.into();
            i.raw["nfStatus"] = json!(NF_SUSPENDED);
            i.lapsed = true;
            self.stats.suspensions += 1;
            tracing::warn!(nf_instance_id = %id, nf_type = %i.profile.nf_type, "heartbeat lapsed: instance SUSPENDED");
            self.notify(&id, EVENT_PROFILE_CHANGED);
        }
        let before = self.subscriptions.len();
        self.subscriptions.retain(|_, s| s.expires > now);
        if self.subscriptions.len() < before {
            tracing::info!(
                expired = before - self.subscriptions.len(),
                "status subscriptions expired"
            );
        }
    }

    /// Answers one request.
    pub fn handle(
        &mut self,
        now: Instant,
        wall: SystemTime,
        req: &SbiRequest,
        headers: &HeaderMap,
    ) -> SbiResponse {
        let r = self.route(now, wall, req, headers);
        if r.status.is_client_error() {
            self.stats.refused += 1;
        }
        r
    }

    fn route(
        &mut self,
        now: Instant,
        wall: SystemTime,
        req: &SbiRequest,
        headers: &HeaderMap,
    ) -> SbiResponse {
        let path = req.path.trim_end_matches('/');
        let m = &req.method;
        if path == OAUTH2_TOKEN {
            return match (*m == Method::POST, &self.tokens) {
                (false, _) => method_not_allowed(m, path),
                (true, None) => SbiResponse::json(
                    StatusCode::BAD_REQUEST,
                    &sbi::model::AccessTokenErr {
                        error: "unauthorized_client".into(),
                        error_description: Some("this NRF issues no access tokens".into()),
                    },
                ),
                (true, Some(t)) => {
                    let (r, outcome) =
                        t.handle(&self.cfg.instance_id, req, headers, self.instances.values());
                    match outcome {
                        token::Outcome::Granted => self.stats.tokens_granted += 1,
                        token::Outcome::Refused => self.stats.tokens_refused += 1,
                    }
                    r
                }
            };
        }
        if path == format!("{NNRF_DISC}/nf-instances") {
            return if *m == Method::GET {
                self.discover(req)
            } else {
                method_not_allowed(m, path)
            };
        }
        if let Some(rest) = path.strip_prefix(NNRF_NFM) {
            if rest == "/nf-instances" {
                return if *m == Method::GET {
                    self.list(req)
                } else {
                    method_not_allowed(m, path)
                };
            }
            if let Some(id) = one_segment(rest, "/nf-instances/") {
                return match *m {
                    Method::PUT => self.register(now, id, req),
                    Method::PATCH => self.update(now, id, req),
                    Method::DELETE => self.deregister(id),
                    Method::GET => match self.instances.get(id) {
                        Some(i) => SbiResponse::json(StatusCode::OK, &i.raw),
                        None => not_found(id),
                    },
                    _ => method_not_allowed(m, path),
                };
            }
            if rest == "/subscriptions" {
                return if *m == Method::POST {
                    self.subscribe(now, wall, req)
                } else {
                    method_not_allowed(m, path)
                };
            }
            if let Some(id) = one_segment(rest, "/subscriptions/") {
                return match *m {
                    Method::DELETE => match self.subscriptions.remove(id) {
                        Some(_) => SbiResponse::no_content(),
                        None => subscription_not_found(id),
                    },
                    Method::PATCH => self.renew(now, wall, id, req),
                    _ => method_not_allowed(m, path),
                };
            }
        }
        SbiResponse::problem(&ProblemDetails::resource_not_found(&req.path))
    }

    fn instance_uri(&self, id: &str) -> String {
        format!("{}{NNRF_NFM}/nf-instances/{id}", self.cfg.base_uri)
    }

    /// NFRegister (TS 29.510 §5.2.2.2): PUT of the whole profile.
    fn register(&mut self, now: Instant, id: &str, req: &SbiRequest) -> SbiResponse {
        let (mut raw, mut profile) = match decode_profile(req) {
            Ok(x) => x,
            Err(p) => return SbiResponse::problem(&p),
        };
        if let Err(p) = profile::check(id, &profile) {
            return SbiResponse::problem(&p);
        }
        let hb = u32::try_from(self.cfg.heartbeat.as_secs().max(1)).unwrap_or(u32::MAX);
        profile.heart_beat_timer = Some(hb);
        raw["heartBeatTimer"] = json!(hb);
        let existed = self.instances.contains_key(id);
        let changed = self.instances.get(id).is_none_or(|i| i.raw != raw);
        tracing::info!(nf_instance_id = %id, nf_type = %profile.nf_type, status = %profile.nf_status, replaced = existed, "NF registered");
        self.instances.insert(
            id.to_owned(),
            Instance {
                raw: raw.clone(),
                profile,
                last_heartbeat: now,
                lapsed: false,
            },
        );
        if existed {
            self.stats.updates += 1;
            if changed {
                self.notify(id, EVENT_PROFILE_CHANGED);
            }
            SbiResponse::json(StatusCode::OK, &raw)
        } else {
            self.stats.registrations += 1;
            self.notify(id, EVENT_REGISTERED);
            SbiResponse::created(&self.instance_uri(id), &raw)
        }
    }

    /// NFUpdate (TS 29.510 §5.2.2.3): a JSON Patch, the heartbeat among them.
    fn update(&mut self, now: Instant, id: &str, req: &SbiRequest) -> SbiResponse {
        let Some(current) = self.instances.get(id) else {
            return not_found(id);
        };
        let ct = req.content_type.as_deref().unwrap_or("");
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json-patch+json")
            && !essence.eq_ignore_ascii_case("application/json")
        {
            return SbiResponse::problem(&ProblemDetails::from_cause(
                Cause::UnsupportedMediaType,
                format!("content type {essence} is not application/json-patch+json"),
            ));
        }
        let patch: json_patch::Patch = match serde_json::from_slice(&req.body) {
            Ok(p) => p,
            Err(_) => {
                return SbiResponse::problem(&ProblemDetails::invalid_msg_format(
                    "not an RFC 6902 JSON Patch array",
                ))
            }
        };
        let mut raw = current.raw.clone();
        if let Err(e) = json_patch::patch(&mut raw, &patch) {
            return SbiResponse::problem(&ProblemDetails::invalid_params(
                Cause::MandatoryIeIncorrect,
                vec![InvalidParam {
                    param: "/".into(),
                    reason: Some(format!("the patch does not apply: {e}")),
                }],
            ));
        }
        let mut profile: NfProfile = match serde_json::from_value(raw.clone()) {
            Ok(p) => p,
            Err(e) => {
                return SbiResponse::problem(&ProblemDetails::invalid_params(
                    Cause::MandatoryIeIncorrect,
                    vec![InvalidParam {
                        param: "/".into(),
                        reason: Some(format!("the patched profile is not an NFProfile: {e}")),
                    }],
                ))
            }
        };
        if let Err(p) = profile::check(id, &profile) {
            return SbiResponse::problem(&p);
        }
        if profile.nf_type != current.profile.nf_type {
            return SbiResponse::problem(&ProblemDetails::mandatory_ie_incorrect(
                "/nfType",
                "the NF type of an instance does not change",
            ));
        }
        let was_lapsed = current.lapsed;
        // A heartbeat proves the instance alive: one the NRF suspended is registered again.
        if was_lapsed && profile.nf_status == NF_SUSPENDED {
            profile.nf_status = NF_REGISTERED.into();
            raw["nfStatus"] = json!(NF_REGISTERED);
        }
        let changed = raw != current.raw;
        self.stats.updates += 1;
        if let Some(i) = self.instances.get_mut(id) {
            i.raw = raw;
            i.profile = profile;
            i.last_heartbeat = now;
            i.lapsed = false;
        }
        if changed {
            if was_lapsed {
                tracing::info!(nf_instance_id = %id, "heartbeat again: instance REGISTERED");
            }
            self.notify(id, EVENT_PROFILE_CHANGED);
        }
        SbiResponse::no_content()
    }

    /// NFDeregister (TS 29.510 §5.2.2.4).
    fn deregister(&mut self, id: &str) -> SbiResponse {
        if !self.instances.contains_key(id) {
            return not_found(id);
        }
        self.notify(id, EVENT_DEREGISTERED);
        if let Some(i) = self.instances.remove(id) {
            tracing::info!(nf_instance_id = %id, nf_type = %i.profile.nf_type, "NF deregistered");
        }
        // Its own subscriptions go with it: nobody is left to notify.
        self.subscriptions
            .retain(|_, s| s.data.req_nf_instance_id.as_deref() != Some(id));
        self.stats.deregistrations += 1;
        SbiResponse::no_content()
    }

    /// NFListRetrieval (TS 29.510 §5.2.2.6): the instances' URIs, optionally of one type.
    fn list(&self, req: &SbiRequest) -> SbiResponse {
        let mut nf_type = None;
        let mut limit = usize::MAX;
        for (k, v) in form_urlencoded::parse(req.query.as_deref().unwrap_or("").as_bytes()) {
            match k.as_ref() {
                "nf-type" => nf_type = Some(v.into_owned()),
                "limit" => match v.parse::<usize>() {
                    Ok(n) if n > 0 => limit = n,
                    _ => return query_problem("limit", "a positive integer"),
                },
                "page-number" | "page-size" => {}
                other => return query_problem(other, "not a parameter of NFListRetrieval"),
            }
        }
        let items: Vec<Value> = self
            .instances
            .values()
            .filter(|i| nf_type.as_ref().is_none_or(|t| *t == i.profile.nf_type))
            .take(limit)
            .map(|i| json!({ "href": self.instance_uri(&i.profile.nf_instance_id) }))
            .collect();
        let body = json!({
            "_links": {
                "self": { "href": format!("{}{NNRF_NFM}/nf-instances", self.cfg.base_uri) },
                "items": items,
            }
        });
        SbiResponse::json(StatusCode::OK, &body)
            .with_content_type(sbi::message::APPLICATION_3GPP_HAL_JSON)
    }

    /// NFDiscover (TS 29.510 §5.3.2.2).
    fn discover(&mut self, req: &SbiRequest) -> SbiResponse {
        let q = match discovery::parse(req.query.as_deref()) {
            Ok(q) => q,
            Err(p) => return SbiResponse::problem(&p),
        };
        let found: Vec<Value> = self
            .instances
            .values()
            .filter(|i| discovery::matches(&q, &i.profile))
            .take(q.limit.unwrap_or(usize::MAX))
            .map(|i| i.raw.clone())
            .collect();
        self.stats.discoveries += 1;
        let body = SearchResult {
            validity_period: self.cfg.validity_period_s,
            nf_instances: found,
            ignored_query_params: (!q.ignored.is_empty()).then_some(q.ignored),
        };
        let mut r = SbiResponse::json(StatusCode::OK, &body);
        if let Ok(v) = HeaderValue::from_str(&format!("max-age={}", self.cfg.validity_period_s)) {
            r.headers.insert(header::CACHE_CONTROL, v);
        }
        r
    }

    /// NFStatusSubscribe (TS 29.510 §5.2.2.5).
    fn subscribe(&mut self, now: Instant, wall: SystemTime, req: &SbiRequest) -> SbiResponse {
        let mut data: SubscriptionData = match sbi::parse_json(req) {
            Ok(d) => d,
            Err(p) => return SbiResponse::problem(&p),
        };
        if let Err(r) = sbi::validate::rules::callback_uri(&data.nf_status_notification_uri) {
            return SbiResponse::problem(&ProblemDetails::mandatory_ie_incorrect(
                "/nfStatusNotificationUri",
                r,
            ));
        }
        let cond = match Cond::parse(data.subscr_cond.as_ref()) {
            Ok(c) => c,
            Err(r) => {
                return SbiResponse::problem(&ProblemDetails::mandatory_ie_incorrect(
                    "/subscrCond",
                    r,
                ))
            }
        };
        for (i, e) in data.req_notif_events.iter().flatten().enumerate() {
            if ![EVENT_REGISTERED, EVENT_DEREGISTERED, EVENT_PROFILE_CHANGED].contains(&e.as_str())
            {
                return SbiResponse::problem(&ProblemDetails::mandatory_ie_incorrect(
                    format!("/reqNotifEvents/{i}"),
                    "NF_REGISTERED, NF_DEREGISTERED or NF_PROFILE_CHANGED",
                ));
            }
        }
        let id = format!("{:08x}", self.next_subscription);
        self.next_subscription += 1;
        data.subscription_id = Some(id.clone());
        data.validity_time = Some(
            humantime::format_rfc3339_seconds(wall + self.cfg.subscription_validity).to_string(),
        );
        let uri = format!("{}{NNRF_NFM}/subscriptions/{id}", self.cfg.base_uri);
        tracing::info!(subscription = %id, notify = %data.nf_status_notification_uri, "status subscription created");
        self.subscriptions.insert(
            id,
            Subscription {
                data: data.clone(),
                cond,
                expires: now + self.cfg.subscription_validity,
            },
        );
        self.stats.subscriptions += 1;
        SbiResponse::created(&uri, &data)
    }

    /// NFStatusSubscribe's update (TS 29.510 §5.2.2.5.6): a patch of `validityTime`; the NRF
    /// grants a fresh validity period whatever was asked.
    fn renew(&mut self, now: Instant, wall: SystemTime, id: &str, req: &SbiRequest) -> SbiResponse {
        let validity = self.cfg.subscription_validity;
        let Some(s) = self.subscriptions.get_mut(id) else {
            return subscription_not_found(id);
        };
        if serde_json::from_slice::<json_patch::Patch>(&req.body).is_err() {
            return SbiResponse::problem(&ProblemDetails::invalid_msg_format(
                "not an RFC 6902 JSON Patch array",
            ));
        }
        s.expires = now + validity;
        s.data.validity_time = Some(humantime::format_rfc3339_seconds(wall + validity).to_string());
        SbiResponse::json(StatusCode::OK, &s.data)
    }

    /// Queues `event` about instance `id` for every subscription that covers it.
    fn notify(&mut self, id: &str, event: &str) {
        let Some(i) = self.instances.get(id) else {
            return;
        };
        let body = NotificationData {
            event: event.to_owned(),
            nf_instance_uri: self.instance_uri(id),
            nf_profile: (event != EVENT_DEREGISTERED).then(|| notified_profile(&i.raw)),
        };
        for s in self.subscriptions.values() {
            let wanted = s
                .data
                .req_notif_events
                .as_ref()
                .is_none_or(|e| e.iter().any(|e| e == event));
            // An instance is not told about itself.
            let itself = s.data.req_nf_instance_id.as_deref() == Some(id);
            if wanted && !itself && s.cond.covers(&i.profile) {
                self.outbox.push_back(Notification {
                    uri: s.data.nf_status_notification_uri.clone(),
                    body: body.clone(),
                });
                self.stats.notifications += 1;
            }
        }
    }
}

/// The profile of a PUT, as JSON and typed, or the 400 naming the member.
#[allow(clippy::result_large_err)]
fn decode_profile(req: &SbiRequest) -> Result<(Value, NfProfile), ProblemDetails> {
    let raw: Value = sbi::parse_json(req)?;
    if !raw.is_object() {
        return Err(ProblemDetails::mandatory_ie_incorrect(
            "/",
            "an NFProfile object",
        ));
    }
    let profile: NfProfile = sbi::message::decode_json(&req.body)?;
    Ok((raw, profile))
}

/// `rest` is `prefix` and one non-empty path segment: that segment.
fn one_segment<'a>(rest: &'a str, prefix: &str) -> Option<&'a str> {
    rest.strip_prefix(prefix)
        .filter(|s| !s.is_empty() && !s.contains('/'))
}

fn not_found(id: &str) -> SbiResponse {
    SbiResponse::problem(&ProblemDetails::from_cause(
        Cause::ResourceUriStructureNotFound,
        format!("no NF instance {id} is registered"),
    ))
}

fn subscription_not_found(id: &str) -> SbiResponse {
    SbiResponse::problem(&ProblemDetails::from_cause(
        Cause::SubscriptionNotFound,
        format!("no subscription {id}"),
    ))
}

fn method_not_allowed(m: &Method, path: &str) -> SbiResponse {
    SbiResponse::problem(&ProblemDetails::method_not_allowed(m.as_str(), path))
}

fn query_problem(param: &str, reason: &str) -> SbiResponse {
    SbiResponse::problem(&ProblemDetails::invalid_params(
        Cause::InvalidQueryParam,
        vec![InvalidParam {
            param: format!("query {param}"),
            reason: Some(reason.to_owned()),
        }],
    ))
}
