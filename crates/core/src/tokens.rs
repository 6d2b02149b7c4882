//! Access tokens for a worker's SBI calls (TS 33.501 §13.4.1): fetched from the NRF with a
//! Client Credentials Assertion, one per target NF type, kept until shortly before they
//! expire. Each worker has its own cache, so no lock is taken; a worker's first call to a type
//! pays one token request.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use sbi::model::AccessTokenRsp;
use sbi::oauth::{ClientCredentials, CLIENT_CREDENTIALS_HEADER};
use sbi::{ClientConfig, NfType, SbiClient};

/// How this process's calls get their tokens.
#[derive(Debug, Clone)]
pub struct OauthClientOptions {
    /// The NRF's base URI (`http://host:port`).
    pub nrf: String,
    /// The instance ID and key the assertions are made with.
    pub credentials: ClientCredentials,
    /// The NF type the requests name (`nfType`): the registered profile's.
    pub nf_type: NfType,
}

/// A token is renewed this long before it expires, so that a call in flight does not carry
/// one that lapses on the way.
const MARGIN: Duration = Duration::from_secs(30);

/// A target's token, behind a worker-local async lock so that the calls made while the first
/// request is out wait for it instead of each asking the NRF (the worker is single-threaded:
/// no other core ever takes it).
type Slot = Rc<tokio::sync::Mutex<Option<(HeaderValue, Instant)>>>;

/// One worker's tokens.
pub(crate) struct Tokens {
    opts: OauthClientOptions,
    client: SbiClient,
    cache: RefCell<HashMap<NfType, Slot>>,
}

impl Tokens {
    pub(crate) fn new(opts: OauthClientOptions) -> Self {
        Tokens {
            opts,
            client: SbiClient::new(ClientConfig {
                timeout: Duration::from_secs(3),
                ..ClientConfig::default()
            }),
            cache: RefCell::new(HashMap::new()),
        }
    }

    /// The `Authorization` value for a call to `target`, from the cache or the NRF.
    pub(crate) async fn bearer(&self, target: NfType) -> Result<HeaderValue, String> {
        let slot = self.cache.borrow_mut().entry(target).or_default().clone();
        let mut held = slot.lock().await;
        let now = Instant::now();
        if let Some((v, until)) = held.as_ref() {
            if now < *until {
                return Ok(v.clone());
            }
        }
        let (v, lifetime) = self.fetch(target).await?;
        let until = now + lifetime.saturating_sub(MARGIN).max(Duration::from_secs(1));
        *held = Some((v.clone(), until));
        Ok(v)
    }

    /// Drops the token for `target`: the producer refused it (401).
    pub(crate) fn forget(&self, target: NfType) {
        self.cache.borrow_mut().remove(&target);
    }

    async fn fetch(&self, target: NfType) -> Result<(HeaderValue, Duration), String> {
        let o = &self.opts;
        let assertion = o
            .credentials
            .assertion("NRF", sbi::oauth::unix_now(), 60)
            .map_err(|e| e.to_string())?;
        let mut h = HeaderMap::new();
        h.insert(
            CLIENT_CREDENTIALS_HEADER,
            HeaderValue::from_str(&assertion).map_err(|e| e.to_string())?,
        );
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "client_credentials")
            .append_pair("nfInstanceId", &o.credentials.nf_instance_id)
            .append_pair("nfType", o.nf_type.as_str())
            .append_pair("targetNfType", target.as_str())
            .append_pair("scope", &target.service_names().join(" "))
            .finish();
        let r = self
            .client
            .request_with(
                Some(o.nf_type.as_str()),
                Method::POST,
                &format!("{}/oauth2/token", o.nrf),
                Some(Bytes::from(form)),
                "application/x-www-form-urlencoded",
                &h,
                None,
            )
            .await
            .map_err(|e| format!("token request to the NRF at {}: {e}", o.nrf))?;
        if r.status != StatusCode::OK {
            return Err(format!(
                "the NRF refused a token for {target}: {} {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            ));
        }
        let t: AccessTokenRsp =
            serde_json::from_slice(&r.body).map_err(|e| format!("token answer: {e}"))?;
        let v = HeaderValue::from_str(&format!("Bearer {}", t.access_token))
            .map_err(|_| "a token that is not a header value".to_owned())?;
        tracing::info!(target_nf = %target, expires_in = ?t.expires_in, "access token from the NRF");
        Ok((
            v,
            Duration::from_secs(u64::from(t.expires_in.unwrap_or(60))),
        ))
    }
}
