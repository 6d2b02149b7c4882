//! SBI client: h2c with prior knowledge, one persistent HTTP/2 connection per target
//! authority (many concurrent requests multiplex on it as streams), reconnected when it fails;
//! or, for benchmarks, one connection per request.
//!
//! With a [`PortPlan`] the client is shard-aware ([`crate::pool`]): a request sent with
//! [`SbiClient::request_to`] and its [`Owner`] goes on a connection of its own per server
//! worker, bound to a source port the server's `sk_reuseport` program maps to that worker.
//! Short connections then close with `SO_LINGER` 0 (the TIME_WAIT strategy is in
//! [`crate::pool`]).
//!
//! A request the server cannot have processed (its connection never came up, or the server
//! refused its stream or went away below it) is sent again on a new connection within the
//! call's deadline; one that may have been processed is not ([`crate::retry`]).
//!
//! Like the server, the client is meant for one current-thread runtime: it is not `Send` and
//! holds its connections in `Rc`s. The connection driver tasks are `Send` and go through
//! `tokio::spawn`, so no `LocalSet` is needed.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::net::{TcpSocket, TcpStream};

use crate::model::ProblemDetails;
use crate::pool::{Owner, PortPlan};
use crate::problem::{GmmCause, PROBLEM_JSON};
use crate::retry::{self, Failure};
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
    /// Deadline for one request: connect (if needed), send, and read the whole response,
    /// every retry included.
    pub timeout: Duration,
    /// Deadline for one TCP connection attempt; one that takes longer is made again
    /// ([`retry::CONNECT_TIMEOUT`] says why).
    pub connect_timeout: Duration,
    /// Open a new connection for every request and close it afterwards, instead of keeping
    /// one per authority (the "short connection" mode of the benchmarks).
    pub short_connections: bool,
    /// Largest response body accepted.
    pub max_body: usize,
    /// Source ports of this client worker: set, requests sent with an [`Owner`] go on
    /// connections bound to the owner's ports ([`crate::pool`]); `None` lets the kernel
    /// pick source ports and keeps one connection per authority.
    pub ports: Option<PortPlan>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            timeout: Duration::from_secs(5),
            connect_timeout: retry::CONNECT_TIMEOUT,
            short_connections: false,
            max_body: DEFAULT_MAX_BODY,
            ports: None,
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

type Sender = SendRequest<Full<Bytes>>;
type Slot = Rc<tokio::sync::Mutex<Option<Sender>>>;

/// A pooled connection: the authority and, for shard-aware requests, the owner it goes to.
type Key = (String, Option<Owner>);

/// How many ports of the owner's sequence one connection attempt tries before giving up.
const PORT_TRIES: usize = 64;

/// How many times a request whose stream the server refused is sent again (like any
/// request the server did not process: [`retry::MAX_RETRIES`]).
pub const MAX_REFUSED_RETRIES: u32 = retry::MAX_RETRIES;

/// What a client counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// TCP connections opened.
    pub connections_opened: u64,
    /// Requests sent on a connection bound to their owner's source port.
    pub steered: u64,
    /// Requests sent without an owner's connection (no owner given, or no [`PortPlan`]).
    pub unsteered: u64,
    /// Source ports skipped because they were taken (`EADDRINUSE` / `EADDRNOTAVAIL`).
    pub ports_skipped: u64,
    /// Requests sent again because the server reset their stream with REFUSED_STREAM (its
    /// SETTINGS_MAX_CONCURRENT_STREAMS reached; RFC 9113 §8.7: not processed, safe to
    /// retry), at most [`MAX_REFUSED_RETRIES`] times each.
    pub refused_retries: u64,
    /// Requests sent again, for any reason [`retry::may_retry`] allows (REFUSED_STREAM
    /// included): connection set-up failed or timed out, closed before the request went
    /// out, GOAWAY below the request's stream.
    pub retries: u64,
    /// TCP connection attempts given up after [`ClientConfig::connect_timeout`].
    pub connect_timeouts: u64,
}

/// An SBI client; see the module docs.
#[derive(Debug, Default)]
pub struct SbiClient {
    config: ClientConfig,
    pool: RefCell<HashMap<Key, Slot>>,
    /// Per owner, the index of the next port to try in its sequence (rotation).
    cursors: RefCell<HashMap<Key, usize>>,
    stats: Cell<ClientStats>,
}

impl SbiClient {
    /// A client with `config`.
    pub fn new(config: ClientConfig) -> Self {
        SbiClient {
            config,
            pool: RefCell::new(HashMap::new()),
            cursors: RefCell::new(HashMap::new()),
            stats: Cell::new(ClientStats::default()),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// TCP connections this client has opened so far.
    pub fn connections_opened(&self) -> u64 {
        self.stats.get().connections_opened
    }

    /// Everything this client counted.
    pub fn stats(&self) -> ClientStats {
        self.stats.get()
    }

    fn count(&self, f: impl FnOnce(&mut ClientStats)) {
        let mut s = self.stats.get();
        f(&mut s);
        self.stats.set(s);
    }

    /// Sends one request and reads the whole response, whatever its status.
    pub async fn request(
        &self,
        method: Method,
        uri: &str,
        json_body: Option<Bytes>,
    ) -> Result<SbiResponse, SbiError> {
        self.request_to(method, uri, json_body, None).await
    }

    /// Sends one request on the connection of `owner`, the server worker that owns the
    /// state the request touches (when the client has a [`PortPlan`]; otherwise, or with no
    /// owner, on the authority's shared connection), and reads the whole response.
    pub async fn request_to(
        &self,
        method: Method,
        uri: &str,
        json_body: Option<Bytes>,
        owner: Option<Owner>,
    ) -> Result<SbiResponse, SbiError> {
        self.request_typed(method, uri, json_body, APPLICATION_JSON, owner)
            .await
    }

    /// [`SbiClient::request_to`] with a body of any `content_type`, e.g. the
    /// `multipart/related` of Nsmf_PDUSession and Namf_Communication (TS 29.502 §6.1.2.4,
    /// TS 29.518 §6.1.2.4), whose boundary parameter the content type carries. The response
    /// keeps every header: the boundary of a multipart answer is in its `Content-Type`.
    pub async fn request_typed(
        &self,
        method: Method,
        uri: &str,
        body: Option<Bytes>,
        content_type: &str,
        owner: Option<Owner>,
    ) -> Result<SbiResponse, SbiError> {
        self.request_as(None, method, uri, body, content_type, owner)
            .await
    }

    /// [`SbiClient::request_typed`] on behalf of the NF `agent` ("AMF", "AUSF", "SMF"), which
    /// the request names in its `User-Agent` (TS 29.500 §5.2.2.2, Table 5.2.2.2-1: the NF
    /// type of the consumer), so that a producer, or a capture, tells the consumers apart.
    pub async fn request_as(
        &self,
        agent: Option<&'static str>,
        method: Method,
        uri: &str,
        body: Option<Bytes>,
        content_type: &str,
        owner: Option<Owner>,
    ) -> Result<SbiResponse, SbiError> {
        self.request_with(
            agent,
            method,
            uri,
            body,
            content_type,
            &HeaderMap::new(),
            owner,
        )
        .await
    }

    /// [`SbiClient::request_as`] with `extra` headers, e.g. `Authorization` with an access
    /// token, or the `3gpp-Sbi-Client-Credentials` of a token request.
    #[allow(clippy::too_many_arguments)]
    pub async fn request_with(
        &self,
        agent: Option<&'static str>,
        method: Method,
        uri: &str,
        body: Option<Bytes>,
        content_type: &str,
        extra: &HeaderMap,
        owner: Option<Owner>,
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
        let ct = match body {
            Some(_) => Some(
                HeaderValue::from_str(content_type)
                    .map_err(|_| SbiError::InvalidUri(format!("content type {content_type}")))?,
            ),
            None => None,
        };
        let body = body.unwrap_or_default();
        // Built again for each attempt (the body bytes are shared): a request is copied only
        // when it is sent again.
        let make = || {
            let mut r = Request::new(Full::new(body.clone()));
            *r.method_mut() = method.clone();
            *r.uri_mut() = uri.clone();
            let h = r.headers_mut();
            h.insert(
                header::ACCEPT,
                HeaderValue::from_static(
                    "application/json, application/3gppHal+json, application/problem+json",
                ),
            );
            if let Some(ct) = &ct {
                h.insert(header::CONTENT_TYPE, ct.clone());
            }
            if let Some(a) = agent {
                h.insert(header::USER_AGENT, HeaderValue::from_static(a));
            }
            for (k, v) in extra {
                h.insert(k, v.clone());
            }
            r
        };
        let key = (authority, owner.filter(|_| self.config.ports.is_some()));
        tokio::time::timeout(self.config.timeout, self.exchange(&key, make))
            .await
            .map_err(|_| SbiError::Timeout)?
    }

    async fn exchange(
        &self,
        key: &Key,
        make: impl Fn() -> Request<Full<Bytes>>,
    ) -> Result<SbiResponse, SbiError> {
        if key.1.is_some() {
            self.count(|s| s.steered += 1);
        } else {
            self.count(|s| s.unsteered += 1);
        }
        let mut retries = 0;
        loop {
            match self.send_once(key, make()).await {
                // RFC 9113 §8.7: the server did not process it; send it again, on a new
                // connection unless the server only refused the stream (the connection has
                // learnt its limit by now and queues it). The caller's deadline bounds all.
                Err((failure, e)) if retry::may_retry(failure, retries) => {
                    retries += 1;
                    // Rare, and what a lossy path's recovery is traced by.
                    tracing::info!(?failure, error = %e, retries, "SBI request sent again");
                    self.count(|s| {
                        s.retries += 1;
                        if failure == Failure::Refused {
                            s.refused_retries += 1;
                        }
                    });
                }
                Err((_, e)) => return Err(e),
                Ok((resp, short)) => {
                    // The body is read while a short connection's sender still holds it
                    // open; dropping it afterwards closes the connection.
                    let r = self.read(resp).await;
                    drop(short);
                    return r;
                }
            }
        }
    }

    /// Sends `req` once and waits for the response head; with short connections, also the
    /// connection's sender, to be dropped once the body is read. A failure says whether the
    /// request may have been processed ([`Failure`]).
    async fn send_once(
        &self,
        key: &Key,
        req: Request<Full<Bytes>>,
    ) -> Result<(http::Response<hyper::body::Incoming>, Option<Sender>), (Failure, SbiError)> {
        if self.config.short_connections {
            let mut sender = self.connect(key).await.map_err(|e| (Failure::Connect, e))?;
            let resp = sender
                .send_request(req)
                .await
                .map_err(|e| (failure_of(&e), SbiError::Http(e)))?;
            return Ok((resp, Some(sender)));
        }
        let slot = self.slot(key);
        let mut sender = self
            .pooled(&slot, key)
            .await
            .map_err(|e| (Failure::Connect, e))?;
        let e = match sender.try_send_request(req).await {
            Ok(r) => return Ok((r, None)),
            Err(mut e) => {
                // The connection died before our request went out: resending it cannot
                // duplicate it.
                let failure = match e.take_message() {
                    Some(_) => Failure::NotSent,
                    None => failure_of(e.error()),
                };
                (failure, SbiError::Http(e.into_error()))
            }
        };
        let mut guard = slot.lock().await;
        // Forget the connection only if it is the broken one, not a newer one another
        // request has set up meanwhile.
        if guard.as_ref().is_some_and(SendRequest::is_closed) {
            guard.take();
        }
        Err(e)
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

    fn slot(&self, key: &Key) -> Slot {
        self.pool
            .borrow_mut()
            .entry(key.clone())
            .or_default()
            .clone()
    }

    /// The pooled sender for `authority`, connecting when there is none or it is closed.
    /// The slot's lock serialises connection setup so that concurrent first requests share
    /// one connection.
    async fn pooled(&self, slot: &Slot, key: &Key) -> Result<SendRequest<Full<Bytes>>, SbiError> {
        let mut guard = slot.lock().await;
        if let Some(s) = guard.as_mut() {
            if !s.is_closed() && s.ready().await.is_ok() {
                return Ok(s.clone());
            }
        }
        guard.take();
        let s = self.connect(key).await?;
        *guard = Some(s.clone());
        Ok(s)
    }

    async fn connect(&self, key: &Key) -> Result<SendRequest<Full<Bytes>>, SbiError> {
        let authority = key.0.as_str();
        let failed = |source| SbiError::Connect {
            authority: authority.to_owned(),
            source,
        };
        let stream = match (&self.config.ports, key.1) {
            (Some(plan), Some(owner)) => self.connect_owner(key, plan, owner).await?,
            _ => {
                let s = self
                    .within_connect_timeout(TcpStream::connect(authority))
                    .await
                    .map_err(failed)?;
                if self.config.short_connections {
                    // No TIME_WAIT left behind (see crate::pool).
                    s.set_zero_linger().map_err(failed)?;
                }
                s
            }
        };
        let _ = stream.set_nodelay(true);
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await?;
        self.count(|s| s.connections_opened += 1);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "sbi client connection ended");
            }
        });
        Ok(sender)
    }

    /// `connect`, given up after [`ClientConfig::connect_timeout`] (a `TimedOut` error).
    async fn within_connect_timeout(
        &self,
        connect: impl std::future::Future<Output = std::io::Result<TcpStream>>,
    ) -> std::io::Result<TcpStream> {
        match tokio::time::timeout(self.config.connect_timeout, connect).await {
            Ok(r) => r,
            Err(_) => {
                self.count(|s| s.connect_timeouts += 1);
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "TCP connection not set up within {:?}",
                        self.config.connect_timeout
                    ),
                ))
            }
        }
    }

    /// A TCP connection to `key`'s authority from a source port that the server's program
    /// maps to `owner`: the next port of the owner's rotation, stepping over taken ones.
    async fn connect_owner(
        &self,
        key: &Key,
        plan: &PortPlan,
        owner: Owner,
    ) -> Result<TcpStream, SbiError> {
        let authority = key.0.as_str();
        let failed = |source| SbiError::Connect {
            authority: authority.to_owned(),
            source,
        };
        let peer = resolve(authority).await.map_err(failed)?;
        let start = self.cursors.borrow().get(key).copied().unwrap_or(0);
        let tries = plan.count_for(owner).min(PORT_TRIES);
        for n in (start..).take(tries) {
            let Some(port) = plan.nth_port(owner, n) else {
                break;
            };
            self.cursors
                .borrow_mut()
                .insert(key.clone(), n.wrapping_add(1));
            let (socket, local) = match peer {
                SocketAddr::V4(_) => (TcpSocket::new_v4(), Ipv4Addr::UNSPECIFIED.into()),
                SocketAddr::V6(_) => (TcpSocket::new_v6(), IpAddr::from(Ipv6Addr::UNSPECIFIED)),
            };
            let socket = socket.map_err(failed)?;
            // SO_REUSEADDR lets a port whose last connection is still in TIME_WAIT (say, a
            // persistent one the server closed) be bound again; the kernel still refuses a
            // duplicate 4-tuple at connect.
            socket.set_reuseaddr(true).map_err(failed)?;
            if self.config.short_connections {
                socket.set_zero_linger().map_err(failed)?;
            }
            if let Err(e) = socket.bind(SocketAddr::new(local, port)) {
                if port_taken(&e) {
                    self.count(|s| s.ports_skipped += 1);
                    continue;
                }
                return Err(failed(e));
            }
            match self.within_connect_timeout(socket.connect(peer)).await {
                Ok(s) => return Ok(s),
                Err(e) if port_taken(&e) => self.count(|s| s.ports_skipped += 1),
                Err(e) => return Err(failed(e)),
            }
        }
        Err(failed(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!(
                "no free source port for server worker {} of {} in {:?}",
                owner.worker,
                owner.workers,
                plan.slice()
            ),
        )))
    }

    /// POSTs `body` as JSON and decodes a 2xx answer as `R`.
    pub async fn post_json<B: Serialize, R: DeserializeOwned>(
        &self,
        uri: &str,
        body: &B,
    ) -> Result<JsonResponse<R>, SbiError> {
        let b = crate::message::to_json(body).map_err(SbiError::Encode)?;
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
        let b = crate::message::to_json(body).map_err(SbiError::Encode)?;
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

/// What a failed exchange tells about its request (RFC 9113 §8.7): not processed if the
/// server reset its stream with REFUSED_STREAM, or went away (GOAWAY, §6.8) below it; h2
/// fails exactly the streams above the GOAWAY's last-stream-id, and those opened after it,
/// with the GOAWAY's error. Anything else may have been processed.
fn failure_of(e: &hyper::Error) -> Failure {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(h2) = c.downcast_ref::<h2::Error>() {
            return if h2.is_go_away() && h2.is_remote() {
                Failure::GoneAway
            } else if h2.is_reset() && h2.reason() == Some(h2::Reason::REFUSED_STREAM) {
                Failure::Refused
            } else {
                Failure::MaybeProcessed
            };
        }
        cause = c.source();
    }
    Failure::MaybeProcessed
}

/// The port is held by another socket: try the next one.
fn port_taken(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::AddrInUse | std::io::ErrorKind::AddrNotAvailable
    )
}

async fn resolve(authority: &str) -> std::io::Result<SocketAddr> {
    if let Ok(a) = authority.parse::<SocketAddr>() {
        return Ok(a);
    }
    tokio::net::lookup_host(authority)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{authority}: no address")))
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
