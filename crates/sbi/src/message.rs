//! One SBI request and response as whole values, and the decoding of their JSON bodies into
//! models with the 3GPP problem for each failure: everything an NF's state machine needs of
//! the SBI without a socket, a runtime or HTTP/2 (those are in [`crate::server`] and
//! [`crate::client`], behind the `io` feature).

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;

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

/// A body serialised as JSON into a buffer sized for the 3GPP bodies of the hot path
/// (an authentication vector answer is about 400 octets), so that it is not grown and
/// copied two or three times from serde_json's default of 128.
pub fn to_json(body: &impl Serialize) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(512);
    serde_json::to_writer(&mut out, body)?;
    Ok(out)
}

impl SbiResponse {
    /// A JSON response. Serialisation of our own models cannot fail in practice; if it does,
    /// the answer is a 500 problem rather than a panic.
    pub fn json<T: Serialize>(status: StatusCode, body: &T) -> Self {
        match to_json(body) {
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

    /// 503 NF_CONGESTION (TS 29.500 §5.2.7.2) with `Retry-After` in seconds (TS 29.500
    /// §5.2.2.2, RFC 9110 §10.2.3): the NF is overloaded, the client may try again then.
    pub fn nf_congestion(detail: impl Into<String>, retry_after_s: u32) -> Self {
        let p = ProblemDetails::from_cause(crate::problem::Cause::NfCongestion, detail);
        let mut r = Self::problem(&p);
        r.headers
            .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
        r
    }

    /// The `Retry-After` header in seconds, if any (the HTTP-date form is not read).
    pub fn retry_after(&self) -> Option<u32> {
        self.headers
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
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
    // The path is wanted only for the answer to a bad body: a good one is decoded without
    // tracking it (the tracking wraps every visitor and costs about as much as the decode).
    if let Ok(v) = serde_json::from_slice::<T>(body) {
        return Ok(v);
    }
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
    fn problem_response_has_problem_json() {
        let r = SbiResponse::problem(&ProblemDetails::user_not_found("x"));
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(r.content_type, Some(PROBLEM_JSON));
        let back: ProblemDetails = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(back.cause.as_deref(), Some("USER_NOT_FOUND"));
    }
}
