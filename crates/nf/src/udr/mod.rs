//! The UDR's provisioning API, sans-IO: subscribers read, added, changed and deleted while
//! the process that holds the store runs (as Open5GS operators do through its WebUI or
//! dbctl). The process serves it on a Unix socket in the data directory (and, if asked, on
//! TCP with a token); `steer5g subscriber` finds it there.
//!
//! # Resources
//!
//! Under `/nudr-dr/v2/subscription-data`, shaped after Nudr_DataRepository (TS 29.504,
//! TS 29.505 §5.2) where it fits:
//!
//! | method | path | |
//! |---|---|---|
//! | GET, PATCH | `/{ueId}/authentication-data/authentication-subscription` | TS 29.505 §5.2.2.2.2 (PATCH: JSON Patch of the key, OPc, SQN, AMF) |
//! | GET | `/{ueId}/{servingPlmnId}/provisioned-data` | `ProvisionedDataSets` (am, SMF selection, sm) |
//! | GET | `/{ueId}/{servingPlmnId}/provisioned-data/am-data` | §5.2.2.4 |
//! | GET | `/{ueId}/{servingPlmnId}/provisioned-data/smf-selection-subscription-data` | §5.2.2.5 |
//! | GET | `/{ueId}/{servingPlmnId}/provisioned-data/sm-data` | §5.2.2.6 |
//!
//! and steer5g's extensions, on the record of [`store::SubscriberRecord`] (the CSV's
//! columns): `GET /` (a page: `after`, `limit`), `POST /` (create: 201, 409 if the SUPI
//! exists), `GET|PUT|DELETE /{ueId}` (read, create or replace, delete), `POST /import`
//! (`{"subscribers": [...]}`: added or replaced in one transaction, the higher SQN kept, as
//! `steer5g subscriber import` does).
//!
//! # Rules
//!
//! - K and OPc leave only with `?reveal=keys`, and never reach a log.
//! - An SQN is set lower than the stored one only together with a new K (a new SIM): 403
//!   MODIFICATION_NOT_ALLOWED otherwise.
//! - Every write names the subscribers it changed ([`Outcome::changed`]): the I/O layer tells
//!   each one's owning UDM shard ([`crate::udm::Udm::subscriber_changed`]), so the change
//!   takes effect at the subscriber's next procedure, with no restart.

// Every problem here goes straight into an answer, on a path far from the procedures';
// boxing them would only add an allocation.
#![allow(clippy::result_large_err)]

mod auth_subscription;

use std::sync::Arc;

use http::{Method, StatusCode};
use sbi::model::ProblemDetails;
use sbi::problem::Cause;
use sbi::{SbiRequest, SbiResponse};
use serde::Deserialize;
use serde_json::{json, Value};
use store::{StoreError, Subscriber, SubscriberRecord, SubscriberStore};

use crate::udm::{am_data, sm_data, smf_select};

/// Where the API's resources live.
pub const PREFIX: &str = "/nudr-dr/v2/subscription-data";

/// Largest page of `GET /`.
pub const MAX_PAGE: usize = 10_000;

/// What one request did: the answer, and the subscribers whose stored record changed.
#[derive(Debug)]
pub struct Outcome {
    /// The answer.
    pub response: SbiResponse,
    /// SUPIs written (added, changed, deleted).
    pub changed: Vec<String>,
}

impl Outcome {
    fn answer(response: SbiResponse) -> Self {
        Outcome {
            response,
            changed: Vec::new(),
        }
    }

    fn problem(p: ProblemDetails) -> Self {
        Self::answer(SbiResponse::problem(&p))
    }
}

/// The API over one store.
pub struct Provisioning {
    store: Arc<dyn SubscriberStore>,
}

impl std::fmt::Debug for Provisioning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provisioning").finish_non_exhaustive()
    }
}

/// A problem with `status` and a cause of TS 29.500 Table 5.2.7.2-1 or none.
fn problem(status: u16, cause: Option<&str>, detail: impl Into<String>) -> ProblemDetails {
    ProblemDetails {
        status: Some(status),
        title: StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .map(str::to_owned),
        cause: cause.map(str::to_owned),
        detail: Some(detail.into()),
        ..Default::default()
    }
}

/// The answer to a request without valid credentials (TCP with a token): 401, with the
/// `WWW-Authenticate` challenge of RFC 6750 §3.
pub fn unauthorized() -> SbiResponse {
    let mut r = SbiResponse::problem(&problem(
        401,
        None,
        "this endpoint needs Authorization: Bearer <token>",
    ));
    r.headers.insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer realm=\"steer5g-provisioning\""),
    );
    r
}

/// Whether `authorization` (the header's value) carries `token`, compared in constant time
/// (`subtle`) so that the answer's timing says nothing of how much of a guess was right.
pub fn bearer_matches(token: &str, authorization: Option<&str>) -> bool {
    use subtle::ConstantTimeEq as _;
    let Some(given) = authorization.and_then(|a| a.strip_prefix("Bearer ")) else {
        return false;
    };
    bool::from(token.as_bytes().ct_eq(given.trim().as_bytes()))
}

fn store_problem(e: &StoreError) -> ProblemDetails {
    match e {
        StoreError::NotFound(s) => ProblemDetails::user_not_found(format!("{s} unknown")),
        StoreError::AlreadyExists(_) => problem(409, None, e.to_string()),
        StoreError::Invalid { .. } => {
            ProblemDetails::from_cause(Cause::InvalidMsgFormat, e.to_string())
        }
        StoreError::NotAllowed { .. } => {
            problem(403, Some("MODIFICATION_NOT_ALLOWED"), e.to_string())
        }
        StoreError::Unavailable(_) => {
            ProblemDetails::from_cause(Cause::UpstreamServerError, format!("store: {e}"))
        }
        other => ProblemDetails::from_cause(Cause::SystemFailure, format!("store: {other}")),
    }
}

/// A body that is not what the resource takes, said without quoting the body's strings (a
/// misplaced key must not come back in an error).
fn body_problem(e: &serde_json::Error) -> ProblemDetails {
    let mut detail = String::new();
    let mut quoted = false;
    for c in e.to_string().chars() {
        if c == '"' {
            if !quoted {
                detail.push_str("\"…\"");
            }
            quoted = !quoted;
        } else if !quoted {
            detail.push(c);
        }
    }
    ProblemDetails::from_cause(Cause::InvalidMsgFormat, format!("body: {detail}"))
}

fn parse<T: for<'de> Deserialize<'de>>(req: &SbiRequest) -> Result<T, ProblemDetails> {
    serde_json::from_slice(&req.body).map_err(|e| body_problem(&e))
}

/// The query's `name`, if given.
fn query<'a>(req: &'a SbiRequest, name: &str) -> Option<&'a str> {
    req.query
        .as_deref()?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn reveal(req: &SbiRequest) -> bool {
    query(req, "reveal") == Some("keys")
}

fn json_ok<T: serde::Serialize>(v: &T) -> Outcome {
    Outcome::answer(SbiResponse::json(StatusCode::OK, v))
}

/// `servingPlmnId` of TS 29.505: MCC and MNC, 5 or 6 digits. The data is the same for every
/// serving PLMN here; the value is only checked.
fn check_plmn(p: &str) -> Result<(), ProblemDetails> {
    if (5..=6).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(ProblemDetails::mandatory_ie_incorrect(
            "servingPlmnId",
            "expected MCC and MNC, 5 or 6 digits",
        ))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Import {
    subscribers: Vec<SubscriberRecord>,
}

impl Provisioning {
    /// The API over `store`.
    pub fn new(store: Arc<dyn SubscriberStore>) -> Self {
        Provisioning { store }
    }

    /// One request. Every write is logged at INFO by SUPI (never with a key).
    pub fn handle(&self, req: &SbiRequest) -> Outcome {
        let Some(rest) = req.path.strip_prefix(PREFIX) else {
            return Outcome::problem(ProblemDetails::resource_not_found(&req.path));
        };
        let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
        let m = &req.method;
        let out = match segs.as_slice() {
            [] if m == Method::GET => self.list(req),
            [] if m == Method::POST => self.create(req),
            ["import"] if m == Method::POST => self.import(req),
            [ue] if m == Method::GET => self.with_supi(ue, |s| self.read(s, req)),
            [ue] if m == Method::PUT => self.with_supi(ue, |s| self.put(s, req)),
            [ue] if m == Method::DELETE => self.with_supi(ue, |s| self.delete(s)),
            [ue, "authentication-data", "authentication-subscription"] if m == Method::GET => self
                .with_supi(ue, |s| {
                    self.get(s, |sub| auth_subscription::view(sub, reveal(req)))
                }),
            [ue, "authentication-data", "authentication-subscription"] if m == Method::PATCH => {
                self.with_supi(ue, |s| self.patch_auth(s, req))
            }
            [ue, plmn, "provisioned-data", rest @ ..] if m == Method::GET => {
                match check_plmn(plmn) {
                    Err(p) => Outcome::problem(p),
                    Ok(()) => self.with_supi(ue, |s| self.provisioned(s, rest, req)),
                }
            }
            _ => Outcome::problem(if known_path(&segs) {
                ProblemDetails::method_not_allowed(m.as_str(), &req.path)
            } else {
                ProblemDetails::resource_not_found(&req.path)
            }),
        };
        // An import logs its own line; one line per row of 100k would drown the log.
        if let [supi] = out.changed.as_slice() {
            tracing::info!(%supi, method = %m, status = out.response.status.as_u16(), "provisioning: subscriber changed");
        }
        out
    }

    fn with_supi(&self, ue: &str, f: impl FnOnce(&str) -> Outcome) -> Outcome {
        match store::subscriber::validate_supi(ue) {
            Ok(()) => f(ue),
            Err(e) => Outcome::problem(ProblemDetails::mandatory_ie_incorrect(
                "ueId",
                e.to_string(),
            )),
        }
    }

    fn get<T: serde::Serialize>(&self, supi: &str, f: impl FnOnce(&Subscriber) -> T) -> Outcome {
        match self.store.get(supi) {
            Ok(Some(sub)) => json_ok(&f(&sub)),
            Ok(None) => Outcome::problem(store_problem(&StoreError::NotFound(supi.to_owned()))),
            Err(e) => Outcome::problem(store_problem(&e)),
        }
    }

    fn read(&self, supi: &str, req: &SbiRequest) -> Outcome {
        self.get(supi, |s| SubscriberRecord::from_subscriber(s, reveal(req)))
    }

    fn provisioned(&self, supi: &str, rest: &[&str], req: &SbiRequest) -> Outcome {
        match rest {
            [] => self.get(supi, |s| {
                json!({
                    "amData": am_data(s),
                    "smfSelData": smf_select(s),
                    "smData": sm_data(s, None),
                })
            }),
            ["am-data"] => self.get(supi, am_data),
            ["smf-selection-subscription-data"] => self.get(supi, smf_select),
            ["sm-data"] => self.get(supi, |s| sm_data(s, query(req, "dnn"))),
            _ => Outcome::problem(ProblemDetails::resource_not_found(&req.path)),
        }
    }

    fn list(&self, req: &SbiRequest) -> Outcome {
        let limit = match query(req, "limit").map(str::parse::<usize>) {
            None => 100,
            Some(Ok(n)) if (1..=MAX_PAGE).contains(&n) => n,
            Some(_) => {
                return Outcome::problem(ProblemDetails::from_cause(
                    Cause::InvalidQueryParam,
                    format!("limit: expected 1..={MAX_PAGE}"),
                ))
            }
        };
        let page = self
            .store
            .list(query(req, "after"), limit)
            .and_then(|page| Ok((self.store.count()?, page)));
        match page {
            Ok((total, page)) => json_ok(&json!({
                "total": total,
                "subscribers": page
                    .iter()
                    .map(|s| SubscriberRecord::from_subscriber(s, reveal(req)))
                    .collect::<Vec<_>>(),
            })),
            Err(e) => Outcome::problem(store_problem(&e)),
        }
    }

    fn record(req: &SbiRequest) -> Result<Subscriber, ProblemDetails> {
        Self::subscriber_of(parse(req)?)
    }

    fn subscriber_of(r: SubscriberRecord) -> Result<Subscriber, ProblemDetails> {
        r.to_subscriber().map_err(|e| {
            ProblemDetails::from_cause(Cause::InvalidMsgFormat, format!("{}: {e}", r.supi))
        })
    }

    fn create(&self, req: &SbiRequest) -> Outcome {
        let sub = match Self::record(req) {
            Ok(s) => s,
            Err(p) => return Outcome::problem(p),
        };
        match self.store.insert(&sub) {
            Ok(()) => Outcome {
                response: SbiResponse::created(
                    &format!("{PREFIX}/{}", sub.supi),
                    &SubscriberRecord::from_subscriber(&sub, false),
                ),
                changed: vec![sub.supi],
            },
            Err(e) => Outcome::problem(store_problem(&e)),
        }
    }

    /// PUT `/{ueId}`: creates the subscriber, or replaces its record. An SQN left out keeps
    /// the stored one; an SQN given lower than the stored one needs a new K.
    fn put(&self, supi: &str, req: &SbiRequest) -> Outcome {
        // One parse: the record, and whether it gives an SQN at all.
        let body: Value = match parse(req) {
            Ok(v) => v,
            Err(p) => return Outcome::problem(p),
        };
        let sqn_given = body.get("sqn").is_some();
        let sub = match serde_json::from_value(body)
            .map_err(|e| body_problem(&e))
            .and_then(Self::subscriber_of)
        {
            Ok(s) => s,
            Err(p) => return Outcome::problem(p),
        };
        if sub.supi != supi {
            return Outcome::problem(ProblemDetails::mandatory_ie_incorrect(
                "/supi",
                "differs from the ueId of the path",
            ));
        }
        let replaced = self.store.modify(supi, &mut |stored| {
            let new_k = sub.k != stored.k;
            let mut next = sub.clone();
            if sqn_given {
                auth_subscription::lower_only_with_new_k(stored, sub.sqn, new_k)?;
            } else {
                next.sqn = stored.sqn;
            }
            *stored = next;
            Ok(())
        });
        let response = match replaced {
            Ok(_) => SbiResponse::no_content(),
            Err(StoreError::NotFound(_)) => match self.store.insert(&sub) {
                Ok(()) => SbiResponse::created(
                    &format!("{PREFIX}/{supi}"),
                    &SubscriberRecord::from_subscriber(&sub, false),
                ),
                Err(e) => return Outcome::problem(store_problem(&e)),
            },
            Err(e) => return Outcome::problem(store_problem(&e)),
        };
        Outcome {
            response,
            changed: vec![supi.to_owned()],
        }
    }

    fn delete(&self, supi: &str) -> Outcome {
        match self.store.delete(supi) {
            Ok(true) => Outcome {
                response: SbiResponse::no_content(),
                changed: vec![supi.to_owned()],
            },
            Ok(false) => Outcome::problem(store_problem(&StoreError::NotFound(supi.to_owned()))),
            Err(e) => Outcome::problem(store_problem(&e)),
        }
    }

    fn patch_auth(&self, supi: &str, req: &SbiRequest) -> Outcome {
        let ct = req.content_type.as_deref().unwrap_or_default();
        if !ct.starts_with("application/json-patch+json") {
            return Outcome::problem(ProblemDetails::from_cause(
                Cause::UnsupportedMediaType,
                "a PATCH takes application/json-patch+json",
            ));
        }
        let items: Vec<auth_subscription::PatchItem> = match parse(req) {
            Ok(i) => i,
            Err(p) => return Outcome::problem(p),
        };
        let edit = match auth_subscription::edit_of(&items) {
            Ok(e) => e,
            Err(auth_subscription::PatchError::Malformed(d)) => {
                return Outcome::problem(ProblemDetails::from_cause(Cause::InvalidMsgFormat, d))
            }
            Err(auth_subscription::PatchError::Refused(d)) => {
                return Outcome::problem(problem(403, Some("MODIFICATION_NOT_ALLOWED"), d))
            }
        };
        match self
            .store
            .modify(supi, &mut |s| auth_subscription::apply(&edit, s))
        {
            Ok(_) => Outcome {
                response: SbiResponse::no_content(),
                changed: vec![supi.to_owned()],
            },
            Err(e) => Outcome::problem(store_problem(&e)),
        }
    }

    fn import(&self, req: &SbiRequest) -> Outcome {
        let body: Import = match parse(req) {
            Ok(b) => b,
            Err(p) => return Outcome::problem(p),
        };
        let mut subs = Vec::with_capacity(body.subscribers.len());
        for (i, r) in body.subscribers.iter().enumerate() {
            match r.to_subscriber() {
                Ok(s) => subs.push(s),
                Err(e) => {
                    return Outcome::problem(ProblemDetails::from_cause(
                        Cause::InvalidMsgFormat,
                        format!("subscribers[{i}] ({}): {e}", r.supi),
                    ))
                }
            }
        }
        let done = self
            .store
            .put_batch(&subs)
            .and_then(|()| self.store.count());
        match done {
            Ok(total) => {
                tracing::info!(rows = subs.len(), total, "provisioning: import");
                Outcome {
                    response: SbiResponse::json(
                        StatusCode::OK,
                        &json!({ "imported": subs.len(), "total": total }),
                    ),
                    changed: subs.into_iter().map(|s| s.supi).collect(),
                }
            }
            Err(e) => Outcome::problem(store_problem(&e)),
        }
    }
}

/// Whether the path names a resource of the API (so that a wrong method is a 405).
fn known_path(segs: &[&str]) -> bool {
    matches!(
        segs,
        [] | ["import"]
            | [_]
            | [_, "authentication-data", "authentication-subscription"]
            | [_, _, "provisioned-data", ..]
    )
}

#[cfg(test)]
mod tests;
