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
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::net::TcpListener;

use crate::model::ProblemDetails;
use crate::problem::PROBLEM_JSON;

/// `Content-Type` of SBI JSON bodies (TS 29.500 §5.4).
pub const APPLICATION_JSON: &str = "application/json";

/// `Content-Type` of JSON bodies with HAL `_links` (TS 29.501 §6.3), e.g. the AUSF's
/// `UEAuthenticationCtx` in the 201 of POST `ue-authentications` (TS 29.509 §6.1.3.2.3.1).
pub const APPLICATION_3GPP_HAL_JSON: &str = "application/3gppHal+json";

/// Largest request body accepted by default: generous for the JSON of the registration
/// procedures (a few hundred bytes), small enough that a peer cannot make us buffer much.
pub const DEFAULT_MAX_BODY: usize = 256 * 1024;

/// One SBI request, body fully read.
#[derive(Debug, Clone)]
pub struct SbiRequest {
    /// HTTP method.
    pub method: Method,
    /// Path, percent-encoded as received, without the query.
    pub path: String,
    /// Query string without the `?`, if any.
    pub query: Option<String>,
    /// The body.
    pub body: Bytes,
    /// The `Content-Type` header, if present and visible ASCII.
    pub content_type: Option<String>,
}

/// One SBI response.
#[derive(Debug, Clone)]
pub struct SbiResponse {
    /// Status code.
    pub status: StatusCode,
    /// Extra headers, e.g. `Location` on 201 Created.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
    /// `Content-Type` of the body; `None` for an empty body.
    pub content_type: Option<&'static str>,
}

impl SbiResponse {
    /// A JSON response. Serialisation of our own models cannot fail in practice; if it does,
    /// the answer is a 500 problem rather than a panic.
    pub fn json<T: Serialize>(status: StatusCode, body: &T) -> Self {
        match serde_json::to_vec(body) {
            Ok(v) => SbiResponse {
                status,
                headers: HeaderMap::new(),
                body: Bytes::from(v),
                content_type: Some(APPLICATION_JSON),
            },
            Err(e) => Self::problem(&ProblemDetails::unspecified_nf_failure(format!(
                "response encoding: {e}"
            ))),
        }
    }

    /// 201 Created with a `Location` header (TS 29.500 §5.2.2: the URI of the new resource).
    pub fn created<T: Serialize>(location: &str, body: &T) -> Self {
        let mut r = Self::json(StatusCode::CREATED, body);
        match HeaderValue::from_str(location) {
            Ok(v) => {
                r.headers.insert(header::LOCATION, v);
                r
            }
            Err(_) => Self::problem(&ProblemDetails::unspecified_nf_failure(
                "location is not a valid header value",
            )),
        }
    }

    /// The same response with another `Content-Type`, e.g. [`APPLICATION_3GPP_HAL_JSON`].
    pub fn with_content_type(mut self, content_type: &'static str) -> Self {
        self.content_type = Some(content_type);
        self
    }

    /// 204 No Content.
    pub fn no_content() -> Self {
        SbiResponse {
            status: StatusCode::NO_CONTENT,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            content_type: None,
        }
    }

    /// An `application/problem+json` error with the problem's status.
    pub fn problem(p: &ProblemDetails) -> Self {
        let status =
            StatusCode::from_u16(p.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(p).unwrap_or_default();
        SbiResponse {
            status,
            headers: HeaderMap::new(),
            body: Bytes::from(body),
            content_type: Some(PROBLEM_JSON),
        }
    }

    /// The `Location` header, if any.
    pub fn location(&self) -> Option<&str> {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
    }
}

impl From<ProblemDetails> for SbiResponse {
    fn from(p: ProblemDetails) -> Self {
        SbiResponse::problem(&p)
    }
}

/// Decodes a JSON request body into `T`.
///
/// Malformed JSON is 400 INVALID_MSG_FORMAT; well-formed JSON of the wrong shape is 400
/// MANDATORY_IE_MISSING or MANDATORY_IE_INCORRECT with the member as a JSON pointer in
/// `invalidParams` (TS 29.500 §5.2.7.2, TS 29.571 `InvalidParam`). A `Content-Type` other
/// than JSON is 415.
// The problem goes straight into a response on the rare error path; boxing it would only
// add an allocation there.
#[allow(clippy::result_large_err)]
pub fn parse_json<T: DeserializeOwned>(req: &SbiRequest) -> Result<T, ProblemDetails> {
    if let Some(ct) = &req.content_type {
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case(APPLICATION_JSON) {
            return Err(ProblemDetails::from_cause(
                crate::problem::Cause::UnsupportedMediaType,
                format!("content type {essence} is not {APPLICATION_JSON}"),
            ));
        }
    }
    decode_json(&req.body)
}

/// [`parse_json`] without the content-type check, for bodies from elsewhere.
// The problem goes straight into a response on the rare error path; boxing it would only
// add an allocation there.
#[allow(clippy::result_large_err)]
pub fn decode_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ProblemDetails> {
    decode_detailed(body).map_err(|e| match e {
        DecodeError::Syntax(detail) => ProblemDetails::invalid_msg_format(detail),
        DecodeError::Missing(param) => ProblemDetails::mandatory_ie_missing(param),
        DecodeError::Incorrect { param, reason } => {
            ProblemDetails::mandatory_ie_incorrect(param, reason)
        }
    })
}

/// Why a JSON body did not decode into its model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// Not JSON at all (or trailing garbage): the parser's message, which quotes no input.
    Syntax(String),
    /// A required member is absent: its JSON pointer.
    Missing(String),
    /// A member of the wrong type or value: its JSON pointer and a fixed reason.
    Incorrect {
        /// JSON pointer of the member (`/` for the root).
        param: String,
        /// Why, in words that never quote the value.
        reason: &'static str,
    },
}

/// Decodes `body` into `T`, naming the offending member through `serde_path_to_error`.
pub(crate) fn decode_detailed<T: DeserializeOwned>(body: &[u8]) -> Result<T, DecodeError> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    let e = match serde_path_to_error::deserialize::<_, T>(de) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let pointer = json_pointer(e.path());
    let inner = e.into_inner();
    if inner.classify() != serde_json::error::Category::Data {
        return Err(DecodeError::Syntax(inner.to_string()));
    }
    let msg = inner.to_string();
    // serde's wording for an absent required member.
    if let Some(field) = missing_field(&msg) {
        return Err(DecodeError::Missing(format!("{pointer}/{field}")));
    }
    let param = if pointer.is_empty() {
        "/".to_owned()
    } else {
        pointer
    };
    Err(DecodeError::Incorrect {
        param,
        reason: data_reason(&msg),
    })
}

/// A fixed reason for a serde data error: serde's own message may quote the value (`invalid
/// type: string "…"`), and a value in a request body may be key material.
fn data_reason(msg: &str) -> &'static str {
    if msg.starts_with("invalid type") {
        "wrong JSON type"
    } else if msg.starts_with("invalid value") {
        "value out of range"
    } else if msg.starts_with("invalid length") {
        "wrong number of elements"
    } else if msg.starts_with("unknown variant") {
        "not one of the enumerated values"
    } else if msg.starts_with("duplicate field") {
        "member repeated"
    } else if msg.starts_with("expected") && msg.contains("hex characters") {
        "wrong number of hex characters"
    } else if msg.starts_with("invalid hex character") {
        "not hexadecimal"
    } else {
        "malformed value"
    }
}

fn missing_field(msg: &str) -> Option<&str> {
    let rest = msg.strip_prefix("missing field `")?;
    rest.split('`').next()
}

/// RFC 6901 JSON pointer for a serde path (`a.b[0]` → `/a/b/0`).
fn json_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        out.push('/');
        match seg {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => out.push_str(variant),
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

/// The NF's request handler. Implemented for `Fn(SbiRequest) -> impl Future<Output =
/// SbiResponse>` closures too.
pub trait Handler: 'static {
    /// Answers one request.
    fn handle(&self, req: SbiRequest) -> impl Future<Output = SbiResponse>;
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
}

impl<H: Handler> Server<H> {
    /// A server answering every request on `listener` with `handler`.
    pub fn new(listener: TcpListener, handler: H) -> Self {
        Server {
            listener,
            handler: Rc::new(handler),
            stats: Rc::new(ServerStats::default()),
            max_body: DEFAULT_MAX_BODY,
        }
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
        // Many UEs' procedures share one connection; let the peer open enough streams.
        builder.max_concurrent_streams(1024);
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
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let handler = handler.clone();
                let stats = stats.clone();
                async move {
                    stats.requests.set(stats.requests.get() + 1);
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
    let response = handler.handle(sbi).await;
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
    use crate::model::{AuthenticationInfo, ConfirmationData};

    fn req(body: &str) -> SbiRequest {
        SbiRequest {
            method: Method::POST,
            path: "/".into(),
            query: None,
            body: Bytes::copy_from_slice(body.as_bytes()),
            content_type: Some("application/json".into()),
        }
    }

    #[test]
    fn malformed_json_is_invalid_msg_format() {
        let e = parse_json::<AuthenticationInfo>(&req("{\"supiOrSuci\": ")).unwrap_err();
        assert_eq!(e.status, Some(400));
        assert_eq!(e.cause.as_deref(), Some("INVALID_MSG_FORMAT"));
        let e = parse_json::<AuthenticationInfo>(&req("")).unwrap_err();
        assert_eq!(e.cause.as_deref(), Some("INVALID_MSG_FORMAT"));
    }

    #[test]
    fn missing_member_is_named() {
        let e = parse_json::<AuthenticationInfo>(&req(r#"{"supiOrSuci":"imsi-001010000000001"}"#))
            .unwrap_err();
        assert_eq!(e.cause.as_deref(), Some("MANDATORY_IE_MISSING"));
        assert_eq!(
            e.invalid_params.unwrap()[0].param,
            "/servingNetworkName".to_owned()
        );
    }

    #[test]
    fn wrong_member_is_pointed_at() {
        let e = parse_json::<ConfirmationData>(&req(r#"{"resStar":"123"}"#)).unwrap_err();
        assert_eq!(e.cause.as_deref(), Some("MANDATORY_IE_INCORRECT"));
        assert_eq!(e.invalid_params.unwrap()[0].param, "/resStar".to_owned());
    }

    #[test]
    fn wrong_content_type_is_415() {
        let mut r = req("{}");
        r.content_type = Some("text/plain".into());
        let e = parse_json::<ConfirmationData>(&r).unwrap_err();
        assert_eq!(e.status, Some(415));
        r.content_type = Some("application/json; charset=utf-8".into());
        assert!(parse_json::<ConfirmationData>(&r).is_err_and(|e| e.status == Some(400)));
    }

    /// Arbitrary and mutated bodies: every outcome is a value or a 4xx problem, never a panic.
    #[test]
    fn decoding_is_total_on_garbage() {
        use crate::model::*;
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let seeds: [&[u8]; 3] = [
            br#"{"supiOrSuci":"imsi-001010000000001","servingNetworkName":"5G:mnc001.mcc001.3gppnetwork.org"}"#,
            br#"{"authType":"5G_AKA","authenticationVector":{"avType":"5G_HE_AKA","rand":"00000000000000000000000000000000","xresStar":"00000000000000000000000000000000","autn":"00000000000000000000000000000000","kausf":"0000000000000000000000000000000000000000000000000000000000000000"}}"#,
            br#"{"amfInstanceId":"a","deregCallbackUri":"b","guami":{"plmnId":{"mcc":"001","mnc":"01"},"amfId":"020040"},"ratType":"NR"}"#,
        ];
        for i in 0..3000 {
            let mut body: Vec<u8> = seeds[i % seeds.len()].to_vec();
            for _ in 0..(next() % 4 + 1) {
                let len = body.len().max(1) as u64;
                let pos = (next() % len) as usize;
                match next() % 3 {
                    0 => {
                        if let Some(b) = body.get_mut(pos) {
                            *b = next() as u8;
                        }
                    }
                    1 => body.truncate(pos),
                    _ => body.insert(pos.min(body.len()), next() as u8),
                }
            }
            for r in [
                decode_json::<AuthenticationInfo>(&body).err(),
                decode_json::<AuthenticationInfoResult>(&body).err(),
                decode_json::<Amf3GppAccessRegistration>(&body).err(),
                decode_json::<UeAuthenticationCtx>(&body).err(),
                decode_json::<ConfirmationData>(&body).err(),
            ]
            .into_iter()
            .flatten()
            {
                assert!(matches!(r.status, Some(400)), "{r:?}");
            }
        }
    }

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

    #[test]
    fn problem_response_has_problem_json() {
        let r = SbiResponse::problem(&ProblemDetails::user_not_found("x"));
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(r.content_type, Some(PROBLEM_JSON));
        let back: ProblemDetails = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(back.cause.as_deref(), Some("USER_NOT_FOUND"));
    }
}
