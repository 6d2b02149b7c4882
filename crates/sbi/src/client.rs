//! SBI client: h2c with prior knowledge, one persistent HTTP/2 connection per target
//! authority (many concurrent requests multiplex on it as streams), reconnected when it fails;
//! or, for benchmarks, one connection per request.
//!
//! Like the server, the client is meant for one current-thread runtime: it is not `Send` and
//! holds its connections in `Rc`s. The connection driver tasks are `Send` and go through
//! `tokio::spawn`, so no `LocalSet` is needed.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::net::TcpStream;

use crate::model::ProblemDetails;
use crate::problem::{GmmCause, PROBLEM_JSON};
use crate::server::{SbiResponse, APPLICATION_3GPP_HAL_JSON, APPLICATION_JSON, DEFAULT_MAX_BODY};

/// Errors of an SBI request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SbiError {
    /// The URI does not parse or lacks an authority.
    #[error("invalid SBI URI {0:?}")]
    InvalidUri(String),
    /// Only `http` (h2c) is supported for now; TLS comes later.
    #[error("unsupported URI scheme {0:?}")]
    UnsupportedScheme(String),
    /// TCP connect failed.
    #[error("connect to {authority}: {source}")]
    Connect {
        /// Target authority.
        authority: String,
        /// The socket error.
        source: std::io::Error,
    },
    /// HTTP/2 handshake or exchange failed.
    #[error("http/2: {0}")]
    Http(#[from] hyper::Error),
    /// The request was not answered within the configured timeout.
    #[error("request timed out")]
    Timeout,
    /// The response body exceeded the limit.
    #[error("response body too large or unreadable: {0}")]
    Body(String),
    /// The peer answered with an error status and a problem body.
    #[error("{status}: {}", problem.cause.as_deref().unwrap_or("no cause"))]
    Problem {
        /// HTTP status.
        status: StatusCode,
        /// The decoded problem.
        problem: Box<ProblemDetails>,
    },
    /// The peer answered with a status the typed helper did not expect, without a problem
    /// body.
    #[error("unexpected status {status}")]
    Status {
        /// HTTP status.
        status: StatusCode,
        /// The raw body.
        body: Bytes,
    },
    /// The request body could not be encoded.
    #[error("encode request: {0}")]
    Encode(serde_json::Error),
    /// A 2xx body did not decode as the expected model.
    #[error("decode response: {0}")]
    Decode(serde_json::Error),
}

impl SbiError {
    /// The problem details, if the peer sent some.
    pub fn problem(&self) -> Option<&ProblemDetails> {
        match self {
            SbiError::Problem { problem, .. } => Some(problem),
            _ => None,
        }
    }

    /// The 5GMM cause for a Registration Reject caused by this error (TS 29.524 §4, see
    /// [`crate::problem::to_5gmm_cause`]). Transport failures and timeouts count as the
    /// temporary #15 (UNCERTAIN: TS 29.524 maps responses, not their absence).
    pub fn to_5gmm_cause(&self) -> Option<GmmCause> {
        match self {
            SbiError::Problem { status, problem } => {
                crate::problem::to_5gmm_cause(status.as_u16(), problem.cause_code().as_ref())
            }
            SbiError::Status { status, .. } => crate::problem::to_5gmm_cause(status.as_u16(), None),
            _ => Some(GmmCause::NO_SUITABLE_CELLS_IN_TA),
        }
    }
}

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Deadline for one request: connect (if needed), send, and read the whole response.
    pub timeout: Duration,
    /// Open a new connection for every request and close it afterwards, instead of keeping
    /// one per authority (the "short connection" mode of the benchmarks).
    pub short_connections: bool,
    /// Largest response body accepted.
    pub max_body: usize,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            timeout: Duration::from_secs(5),
            short_connections: false,
            max_body: DEFAULT_MAX_BODY,
        }
    }
}

/// A typed 2xx answer.
#[derive(Debug, Clone)]
pub struct JsonResponse<T> {
    /// HTTP status (2xx).
    pub status: StatusCode,
    /// `Location` header, set on 201 Created.
    pub location: Option<String>,
    /// Decoded body; an empty body decodes as JSON `null`, so `()` and `Option<_>` fit 204.
    pub body: T,
}

type Slot = Rc<tokio::sync::Mutex<Option<SendRequest<Full<Bytes>>>>>;

/// An SBI client; see the module docs.
#[derive(Debug, Default)]
pub struct SbiClient {
    config: ClientConfig,
    pool: RefCell<HashMap<String, Slot>>,
    opened: Cell<u64>,
}

impl SbiClient {
    /// A client with `config`.
    pub fn new(config: ClientConfig) -> Self {
        SbiClient {
            config,
            pool: RefCell::new(HashMap::new()),
            opened: Cell::new(0),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// TCP connections this client has opened so far.
    pub fn connections_opened(&self) -> u64 {
        self.opened.get()
    }

    /// Sends one request and reads the whole response, whatever its status.
    pub async fn request(
        &self,
        method: Method,
        uri: &str,
        json_body: Option<Bytes>,
    ) -> Result<SbiResponse, SbiError> {
        let uri: Uri = uri
            .parse()
            .map_err(|_| SbiError::InvalidUri(uri.to_owned()))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => return Err(SbiError::UnsupportedScheme(other.to_owned())),
            None => return Err(SbiError::InvalidUri(uri.to_string())),
        }
        let authority = match uri.authority() {
            Some(a) if a.port_u16().is_some() => a.as_str().to_owned(),
            Some(a) => format!("{}:80", a.host()),
            None => return Err(SbiError::InvalidUri(uri.to_string())),
        };
        let mut builder = Request::builder().method(method).uri(uri).header(
            header::ACCEPT,
            HeaderValue::from_static(
                "application/json, application/3gppHal+json, application/problem+json",
            ),
        );
        if json_body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, APPLICATION_JSON);
        }
        let req = builder
            .body(Full::new(json_body.unwrap_or_default()))
            .map_err(|e| SbiError::InvalidUri(e.to_string()))?;
        tokio::time::timeout(self.config.timeout, self.exchange(&authority, req))
            .await
            .map_err(|_| SbiError::Timeout)?
    }

    async fn exchange(
        &self,
        authority: &str,
        req: Request<Full<Bytes>>,
    ) -> Result<SbiResponse, SbiError> {
        if self.config.short_connections {
            let mut sender = self.connect(authority).await?;
            let resp = sender.send_request(req).await?;
            // The body is read while `sender` still holds the connection open; dropping it
            // afterwards closes the connection.
            return self.read(resp).await;
        }
        let slot = self.slot(authority);
        let mut sender = self.pooled(&slot, authority, false).await?;
        let resp = match sender.try_send_request(req).await {
            Ok(r) => r,
            Err(mut e) => match e.take_message() {
                // The connection died before our request went out, so resending it cannot
                // duplicate it: once, on a fresh connection.
                Some(req) => {
                    let mut sender = self.pooled(&slot, authority, true).await?;
                    sender.send_request(req).await?
                }
                None => {
                    let mut guard = slot.lock().await;
                    // Forget the connection only if it is the broken one, not a newer one
                    // another request has set up meanwhile.
                    if guard.as_ref().is_some_and(SendRequest::is_closed) {
                        guard.take();
                    }
                    return Err(SbiError::Http(e.into_error()));
                }
            },
        };
        self.read(resp).await
    }

    async fn read(
        &self,
        resp: http::Response<hyper::body::Incoming>,
    ) -> Result<SbiResponse, SbiError> {
        let (parts, body) = resp.into_parts();
        let body = Limited::new(body, self.config.max_body)
            .collect()
            .await
            .map_err(|e| SbiError::Body(e.to_string()))?
            .to_bytes();
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|ct| {
                if ct.starts_with(PROBLEM_JSON) {
                    PROBLEM_JSON
                } else if ct.starts_with(APPLICATION_JSON) {
                    APPLICATION_JSON
                } else if ct.starts_with(APPLICATION_3GPP_HAL_JSON) {
                    APPLICATION_3GPP_HAL_JSON
                } else {
                    "application/octet-stream"
                }
            });
        Ok(SbiResponse {
            status: parts.status,
            headers: parts.headers,
            body,
            content_type,
        })
    }

    fn slot(&self, authority: &str) -> Slot {
        self.pool
            .borrow_mut()
            .entry(authority.to_owned())
            .or_default()
            .clone()
    }

    /// The pooled sender for `authority`, connecting when there is none, it is closed, or
    /// `fresh` asks for a new one. The slot's lock serialises connection setup so that
    /// concurrent first requests share one connection.
    async fn pooled(
        &self,
        slot: &Slot,
        authority: &str,
        fresh: bool,
    ) -> Result<SendRequest<Full<Bytes>>, SbiError> {
        let mut guard = slot.lock().await;
        if !fresh {
            if let Some(s) = guard.as_mut() {
                if !s.is_closed() && s.ready().await.is_ok() {
                    return Ok(s.clone());
                }
            }
        }
        guard.take();
        let s = self.connect(authority).await?;
        *guard = Some(s.clone());
        Ok(s)
    }

    async fn connect(&self, authority: &str) -> Result<SendRequest<Full<Bytes>>, SbiError> {
        let stream = TcpStream::connect(authority)
            .await
            .map_err(|source| SbiError::Connect {
                authority: authority.to_owned(),
                source,
            })?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await?;
        self.opened.set(self.opened.get() + 1);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "sbi client connection ended");
            }
        });
        Ok(sender)
    }

    /// POSTs `body` as JSON and decodes a 2xx answer as `R`.
    pub async fn post_json<B: Serialize, R: DeserializeOwned>(
        &self,
        uri: &str,
        body: &B,
    ) -> Result<JsonResponse<R>, SbiError> {
        let b = serde_json::to_vec(body).map_err(SbiError::Encode)?;
        typed(
            self.request(Method::POST, uri, Some(Bytes::from(b)))
                .await?,
        )
    }

    /// PUTs `body` as JSON and decodes a 2xx answer as `R`.
    pub async fn put_json<B: Serialize, R: DeserializeOwned>(
        &self,
        uri: &str,
        body: &B,
    ) -> Result<JsonResponse<R>, SbiError> {
        let b = serde_json::to_vec(body).map_err(SbiError::Encode)?;
        typed(self.request(Method::PUT, uri, Some(Bytes::from(b))).await?)
    }

    /// GETs `uri` and decodes a 2xx answer as `R`.
    pub async fn get_json<R: DeserializeOwned>(
        &self,
        uri: &str,
    ) -> Result<JsonResponse<R>, SbiError> {
        typed(self.request(Method::GET, uri, None).await?)
    }
}

fn typed<R: DeserializeOwned>(r: SbiResponse) -> Result<JsonResponse<R>, SbiError> {
    if !r.status.is_success() {
        if let Ok(problem) = serde_json::from_slice::<ProblemDetails>(&r.body) {
            return Err(SbiError::Problem {
                status: r.status,
                problem: Box::new(problem),
            });
        }
        return Err(SbiError::Status {
            status: r.status,
            body: r.body,
        });
    }
    let body: &[u8] = if r.body.is_empty() { b"null" } else { &r.body };
    let decoded = serde_json::from_slice(body).map_err(SbiError::Decode)?;
    Ok(JsonResponse {
        status: r.status,
        location: r.location().map(str::to_owned),
        body: decoded,
    })
}
