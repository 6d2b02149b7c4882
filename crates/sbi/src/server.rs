//! SBI server: HTTP/2 over cleartext TCP with prior knowledge (h2c, RFC 9113 §3.3; TS 29.500
//! §5.2.1 allows it where TLS is not used), on a current-thread Tokio runtime.
//!
//! The NF supplies a [`Handler`]: one whole request in, one whole response out. Nothing here is
//! `Send`: the project runs one pinned current-thread runtime per core, so connection and
//! stream tasks are spawned with `spawn_local` inside a `LocalSet` that [`Server::run`] owns.
//! Dropping the `run` future closes every connection it accepted.

use std::cell::Cell;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

// The sans-IO half (requests, responses, JSON bodies) lives in `message`; these names stay
// reachable here for the server's users.
pub use crate::message::{
    decode_json, parse_json, SbiRequest, SbiResponse, APPLICATION_3GPP_HAL_JSON, APPLICATION_JSON,
    DEFAULT_MAX_BODY,
};
use crate::model::ProblemDetails;
use crate::problem::PROBLEM_JSON;

/// The NF's request handler. Implemented for `Fn(SbiRequest) -> impl Future<Output =
/// SbiResponse>` closures too.
pub trait Handler: 'static {
    /// Answers one request.
    fn handle(&self, req: SbiRequest) -> impl Future<Output = SbiResponse>;

    /// Answers one request whose headers the handler reads (the NRF's token endpoint reads
    /// `3gpp-Sbi-Client-Credentials`). By default the headers are dropped: the NFs' requests
    /// cross workers, and carry only what their procedures use.
    fn handle_with_headers(
        &self,
        req: SbiRequest,
        headers: &http::HeaderMap,
    ) -> impl Future<Output = SbiResponse> {
        let _ = headers;
        self.handle(req)
    }
}

impl<F, Fut> Handler for F
where
    F: Fn(SbiRequest) -> Fut + 'static,
    Fut: Future<Output = SbiResponse>,
{
    fn handle(&self, req: SbiRequest) -> impl Future<Output = SbiResponse> {
        self(req)
    }
}

/// Counters of a running server, readable while it runs.
#[derive(Debug, Default)]
pub struct ServerStats {
    connections: Cell<u64>,
    requests: Cell<u64>,
}

impl ServerStats {
    /// TCP connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.connections.get()
    }
    /// Requests (HTTP/2 streams) handled so far.
    pub fn requests(&self) -> u64 {
        self.requests.get()
    }
}

/// Spawns `hyper` tasks with `spawn_local`, so that handler futures need not be `Send`.
#[derive(Clone, Copy, Debug)]
struct LocalExec;

impl<F> hyper::rt::Executor<F> for LocalExec
where
    F: Future + 'static,
{
    fn execute(&self, fut: F) {
        tokio::task::spawn_local(fut);
    }
}

/// An h2c SBI server on one listener.
pub struct Server<H> {
    listener: TcpListener,
    handler: Rc<H>,
    stats: Rc<ServerStats>,
    max_body: usize,
    max_streams: u32,
    tokens: Option<Rc<crate::oauth::TokenPolicy>>,
}

/// SETTINGS_MAX_CONCURRENT_STREAMS a [`Server`] advertises unless told otherwise: many UEs'
/// procedures share one connection, so the peer may open plenty of streams.
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 1024;

impl<H: Handler> Server<H> {
    /// A server answering every request on `listener` with `handler`.
    pub fn new(listener: TcpListener, handler: H) -> Self {
        Server {
            listener,
            handler: Rc::new(handler),
            stats: Rc::new(ServerStats::default()),
            max_body: DEFAULT_MAX_BODY,
            max_streams: DEFAULT_MAX_CONCURRENT_STREAMS,
            tokens: None,
        }
    }

    /// Requires an NRF-issued access token on every request (TS 33.501 §13.4.1.1): a request
    /// without a valid one is answered 401 or 403 (RFC 6750 §3) before the handler sees it.
    pub fn require_tokens(mut self, policy: crate::oauth::TokenPolicy) -> Self {
        self.tokens = Some(Rc::new(policy));
        self
    }

    /// Sets SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 §6.5.2), the streams a peer may have
    /// open on one connection; a stream beyond it is reset with REFUSED_STREAM (§5.1.2),
    /// which tells the peer the request was not processed and may be retried (§8.7).
    pub fn max_concurrent_streams(mut self, streams: u32) -> Self {
        self.max_streams = streams.max(1);
        self
    }

    /// Sets the largest request body; larger ones get 413.
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// The server's counters.
    pub fn stats(&self) -> Rc<ServerStats> {
        self.stats.clone()
    }

    /// Accepts and serves connections until the future is dropped. Accept errors (such as
    /// running out of descriptors) are logged and retried after a pause, not returned, so a
    /// burst of connections cannot stop the NF.
    pub async fn run(self) {
        let local = tokio::task::LocalSet::new();
        local.run_until(self.accept_loop()).await
    }

    async fn accept_loop(self) {
        let mut builder = hyper::server::conn::http2::Builder::new(LocalExec);
        // h2 enforces the limit from the connection's first frame, before the peer has
        // acknowledged our SETTINGS, so a burst at connection start is refused too.
        builder.max_concurrent_streams(self.max_streams);
        loop {
            let (stream, peer) = match self.listener.accept().await {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "sbi accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            // Small request/response exchanges: Nagle would add a round-trip of delay.
            let _ = stream.set_nodelay(true);
            self.stats.connections.set(self.stats.connections.get() + 1);
            let handler = self.handler.clone();
            let stats = self.stats.clone();
            let max_body = self.max_body;
            let tokens = self.tokens.clone();
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let handler = handler.clone();
                let stats = stats.clone();
                let tokens = tokens.clone();
                async move {
                    stats.requests.set(stats.requests.get() + 1);
                    if let Some(t) = &tokens {
                        if let Err(d) = t.check(req.headers(), req.uri().path()) {
                            tracing::warn!(target: "sbi::refusal", %peer, operation = %format_args!("{} {}", req.method(), mask_identities(req.uri().path())), ?d, "SBI request without a valid access token");
                            return Ok::<_, Infallible>(into_http(d.response()));
                        }
                    }
                    Ok::<_, Infallible>(dispatch(&*handler, req, max_body, peer).await)
                }
            });
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            tokio::task::spawn_local(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "sbi connection ended");
                }
            });
        }
    }
}

/// Serves `handler` on `listener` until the future is dropped; see [`Server`].
pub async fn serve<H: Handler>(listener: TcpListener, handler: H) {
    Server::new(listener, handler).run().await
}

async fn dispatch<H: Handler>(
    handler: &H,
    req: Request<Incoming>,
    max_body: usize,
    peer: SocketAddr,
) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, max_body).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            let p = if e.is::<http_body_util::LengthLimitError>() {
                ProblemDetails::from_cause(
                    crate::problem::Cause::PayloadTooLarge,
                    format!("body larger than {max_body} bytes"),
                )
            } else {
                ProblemDetails::invalid_msg_format(format!("reading body: {e}"))
            };
            return into_http(SbiResponse::problem(&p));
        }
    };
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let sbi = SbiRequest {
        method: parts.method,
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        body,
        content_type,
    };
    let (method, path) = (sbi.method.clone(), sbi.path.clone());
    let response = handler.handle_with_headers(sbi, &parts.headers).await;
    if response.status == StatusCode::BAD_REQUEST {
        log_refusal(peer, &method, &path, &response);
    }
    into_http(response)
}

/// One line per request refused as malformed (400): who sent it, to which operation, and
/// the cause and parameters the answer names. Values are never logged (the answer's reasons
/// are fixed texts), and subscriber identities in the path are masked.
fn log_refusal(peer: SocketAddr, method: &Method, path: &str, r: &SbiResponse) {
    let problem = refusal_problem(r);
    let params: Vec<&str> = problem
        .as_ref()
        .and_then(|p| p.invalid_params.as_ref())
        .into_iter()
        .flatten()
        .map(|i| i.param.as_str())
        .collect();
    tracing::warn!(
        target: "sbi::refusal",
        %peer,
        operation = %format_args!("{method} {}", mask_identities(path)),
        cause = problem.as_ref().and_then(|p| p.cause.as_deref()).unwrap_or("-"),
        params = %params.join(","),
        "SBI request refused"
    );
}

/// The problem of a refusal: the body itself (`application/problem+json`), or the `error`
/// of the JSON part of an Nsmf error (`SmContextCreateError` and its kin, TS 29.502).
fn refusal_problem(r: &SbiResponse) -> Option<ProblemDetails> {
    let json = match r.content_type {
        Some(PROBLEM_JSON) => r.body.clone(),
        Some(ct) if ct.starts_with("multipart/") => {
            let parts = crate::multipart::decode(ct, &r.body).ok()?;
            crate::multipart::json_part(&parts)?.body.clone()
        }
        _ => r.body.clone(),
    };
    let v: serde_json::Value = serde_json::from_slice(&json).ok()?;
    let p = v.get("error").unwrap_or(&v);
    serde_json::from_value(p.clone()).ok()
}

/// `path` with every segment that holds a subscriber or equipment identity (TS 23.003 §2.2A,
/// §28.7.3, §6.2) replaced by `*`: those are personal data, and an operator reading refusals
/// needs the operation, not the subscriber.
fn mask_identities(path: &str) -> String {
    const PREFIXES: &[&str] = &[
        "imsi-", "suci-", "nai-", "gci-", "gli-", "msisdn-", "extid-", "imei-", "imeisv-",
    ];
    path.split('/')
        .map(|seg| {
            let lower = seg.to_ascii_lowercase();
            if PREFIXES.iter().any(|p| lower.starts_with(p)) {
                "*"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn into_http(r: SbiResponse) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(r.body));
    *resp.status_mut() = r.status;
    *resp.headers_mut() = r.headers;
    if let Some(ct) = r.content_type {
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    resp
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_problem_and_mask_identities() {
        assert_eq!(
            mask_identities("/nudm-sdm/v2/imsi-001010000000001/am-data"),
            "/nudm-sdm/v2/*/am-data"
        );
        assert_eq!(
            mask_identities("/nsmf-pdusession/v1/sm-contexts/0001/modify"),
            "/nsmf-pdusession/v1/sm-contexts/0001/modify"
        );
        let r = SbiResponse::problem(&ProblemDetails::mandatory_ie_incorrect(
            "/pduSessionId",
            "x",
        ));
        let p = refusal_problem(&r).unwrap();
        assert_eq!(p.invalid_params.unwrap()[0].param, "/pduSessionId");
        let body = serde_json::json!({"error": {"cause": "N1_SM_ERROR", "status": 403}});
        let r = SbiResponse::json(StatusCode::FORBIDDEN, &body);
        assert_eq!(
            refusal_problem(&r).unwrap().cause.as_deref(),
            Some("N1_SM_ERROR")
        );
    }
}
