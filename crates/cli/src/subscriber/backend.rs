//! What `steer5g subscriber` provisions: the store file itself when no process holds it, or
//! the provisioning API of the process that does (found by its socket in the data
//! directory, or named with `--api`). Both answer in [`SubscriberRecord`]s, so that the
//! commands print the same whichever it is.

use http::{Method, StatusCode};
use serde_json::{json, Value};
use store::{StoreError, Subscriber, SubscriberRecord, SubscriberStore};

use super::remote::{Answer, Remote};
use crate::exit::CliError;

/// Rows per page when a command walks every subscriber.
const PAGE: usize = 4096;

pub(super) enum Backend {
    /// The embedded file, or PostgreSQL.
    Local(Box<dyn SubscriberStore>),
    Remote(Remote),
}

pub(super) fn store_err(e: StoreError) -> CliError {
    match e {
        // A SUPI already provisioned is the caller's input, as a malformed one is.
        StoreError::Invalid { .. }
        | StoreError::AlreadyExists(_)
        | StoreError::NotAllowed { .. } => CliError::Usage(e.to_string()),
        other => CliError::Failed(other.to_string()),
    }
}

const JSON: &str = "application/json";

fn body(v: &impl serde::Serialize) -> Result<Option<(&'static str, Vec<u8>)>, CliError> {
    serde_json::to_vec(v)
        .map(|b| Some((JSON, b)))
        .map_err(|e| CliError::Failed(format!("encoding the request: {e}")))
}

/// An answer that is not a success: bad input (400, 403, 409, 413, 415) is a usage error,
/// the rest a failure, each with the API's own words.
fn refused(r: &Remote, a: &Answer) -> CliError {
    let msg = format!("{}: {} ({})", r.describe(), a.detail(), a.status.as_u16());
    match a.status.as_u16() {
        400 | 403 | 409 | 413 | 415 => CliError::Usage(msg),
        _ => CliError::Failed(msg),
    }
}

fn records(v: &Value) -> Result<Vec<SubscriberRecord>, CliError> {
    serde_json::from_value(v["subscribers"].clone())
        .map_err(|e| CliError::Failed(format!("provisioning API answer: {e}")))
}

impl Backend {
    pub(super) fn insert(&self, sub: &Subscriber) -> Result<(), CliError> {
        match self {
            Backend::Local(s) => s.insert(sub).map_err(store_err),
            Backend::Remote(r) => {
                let rec = SubscriberRecord::from_subscriber(sub, true);
                let a = r.call(Method::POST, "", body(&rec)?)?;
                if a.status == StatusCode::CREATED {
                    Ok(())
                } else {
                    Err(refused(r, &a))
                }
            }
        }
    }

    pub(super) fn get(
        &self,
        supi: &str,
        reveal: bool,
    ) -> Result<Option<SubscriberRecord>, CliError> {
        match self {
            Backend::Local(s) => Ok(s
                .get(supi)
                .map_err(store_err)?
                .map(|s| SubscriberRecord::from_subscriber(&s, reveal))),
            Backend::Remote(r) => {
                let q = if reveal { "?reveal=keys" } else { "" };
                let a = r.call(Method::GET, &format!("/{supi}{q}"), None)?;
                match a.status {
                    StatusCode::OK => serde_json::from_slice(&a.body)
                        .map(Some)
                        .map_err(|e| CliError::Failed(format!("provisioning API answer: {e}"))),
                    StatusCode::NOT_FOUND => Ok(None),
                    _ => Err(refused(r, &a)),
                }
            }
        }
    }

    /// A page, and how many subscribers there are.
    pub(super) fn list(
        &self,
        after: Option<&str>,
        limit: usize,
        reveal: bool,
    ) -> Result<(u64, Vec<SubscriberRecord>), CliError> {
        match self {
            Backend::Local(s) => {
                let total = s.count().map_err(store_err)?;
                let page = s.list(after, limit).map_err(store_err)?;
                Ok((
                    total,
                    page.iter()
                        .map(|x| SubscriberRecord::from_subscriber(x, reveal))
                        .collect(),
                ))
            }
            Backend::Remote(r) => {
                let mut path = format!("?limit={}", limit.clamp(1, nf::udr::MAX_PAGE));
                if let Some(a) = after {
                    path.push_str(&format!("&after={a}"));
                }
                if reveal {
                    path.push_str("&reveal=keys");
                }
                let a = r.call(Method::GET, &path, None)?;
                if a.status != StatusCode::OK {
                    return Err(refused(r, &a));
                }
                let v = a.json();
                Ok((v["total"].as_u64().unwrap_or_default(), records(&v)?))
            }
        }
    }

    pub(super) fn delete(&self, supi: &str) -> Result<bool, CliError> {
        match self {
            Backend::Local(s) => s.delete(supi).map_err(store_err),
            Backend::Remote(r) => {
                let a = r.call(Method::DELETE, &format!("/{supi}"), None)?;
                match a.status {
                    StatusCode::NO_CONTENT => Ok(true),
                    StatusCode::NOT_FOUND => Ok(false),
                    _ => Err(refused(r, &a)),
                }
            }
        }
    }

    /// Adds or replaces `subs` in one transaction (the higher SQN kept); the store's count
    /// after.
    pub(super) fn import(&self, subs: &[Subscriber]) -> Result<u64, CliError> {
        match self {
            Backend::Local(s) => {
                s.put_batch(subs).map_err(store_err)?;
                s.count().map_err(store_err)
            }
            Backend::Remote(r) => {
                let recs: Vec<_> = subs
                    .iter()
                    .map(|s| SubscriberRecord::from_subscriber(s, true))
                    .collect();
                let a = r.call(
                    Method::POST,
                    "/import",
                    body(&json!({ "subscribers": recs }))?,
                )?;
                if a.status != StatusCode::OK {
                    return Err(refused(r, &a));
                }
                Ok(a.json()["total"].as_u64().unwrap_or_default())
            }
        }
    }

    /// Every subscriber with its keys, in SUPI order.
    pub(super) fn for_each(&self, f: &mut dyn FnMut(&Subscriber)) -> Result<(), CliError> {
        let mut after: Option<String> = None;
        loop {
            let (_, page) = self.list(after.as_deref(), PAGE, true)?;
            for rec in &page {
                let s = rec
                    .to_subscriber()
                    .map_err(|e| CliError::Failed(format!("{}: {e}", rec.supi)))?;
                f(&s);
            }
            match page.last() {
                Some(last) if page.len() >= PAGE => after = Some(last.supi.clone()),
                _ => return Ok(()),
            }
        }
    }
}
