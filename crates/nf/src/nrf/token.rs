//! Nnrf_AccessToken (TS 29.510 §5.4.2.2): POST `/oauth2/token`, the OAuth2 client credentials
//! grant (RFC 6749 §4.4) with the consumer authenticated by a Client Credentials Assertion
//! (TS 33.501 §13.3.8): in the `3gpp-Sbi-Client-Credentials` header, or as the RFC 7523
//! `client_assertion` form parameter.

use std::collections::BTreeMap;

use http::{header, HeaderMap, HeaderValue, StatusCode};
use sbi::model::{AccessTokenErr, AccessTokenRsp, NF_REGISTERED};
use sbi::oauth::{self, AccessTokenClaims, Audience, PublicKey, Signer};
use sbi::{SbiRequest, SbiResponse};

use super::Instance;

/// RFC 7523 §2.2.
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// What issues tokens: the NRF's key and the consumers' public keys.
#[derive(Debug)]
pub struct TokenIssuer {
    /// Signs the tokens.
    pub signer: Signer,
    /// Public key of each NF instance ID allowed to ask for tokens.
    pub clients: BTreeMap<String, PublicKey>,
    /// Seconds a token lives.
    pub lifetime_s: u32,
}

/// A refusal (RFC 6749 §5.2).
struct Refusal {
    status: StatusCode,
    error: &'static str,
    detail: String,
}

fn refuse(error: &'static str, detail: impl Into<String>) -> Refusal {
    Refusal {
        status: if error == "invalid_client" {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::BAD_REQUEST
        },
        error,
        detail: detail.into(),
    }
}

/// The outcome of one token request, for the NRF's counters.
pub(crate) enum Outcome {
    Granted,
    Refused,
}

impl TokenIssuer {
    /// Answers a token request.
    pub(crate) fn handle<'a>(
        &self,
        nrf_id: &str,
        req: &SbiRequest,
        headers: &HeaderMap,
        instances: impl Iterator<Item = &'a Instance> + Clone,
    ) -> (SbiResponse, Outcome) {
        match self.grant(nrf_id, req, headers, instances) {
            Ok(rsp) => {
                let mut r = SbiResponse::json(StatusCode::OK, &rsp);
                no_store(&mut r.headers);
                (r, Outcome::Granted)
            }
            Err(f) => {
                tracing::warn!(error = f.error, detail = %f.detail, "access token refused");
                let body = AccessTokenErr {
                    error: f.error.to_owned(),
                    error_description: Some(f.detail),
                };
                let mut r = SbiResponse::json(f.status, &body);
                no_store(&mut r.headers);
                if f.status == StatusCode::UNAUTHORIZED {
                    r.headers.insert(
                        header::WWW_AUTHENTICATE,
                        HeaderValue::from_static("Bearer error=\"invalid_client\""),
                    );
                }
                (r, Outcome::Refused)
            }
        }
    }

    fn grant<'a>(
        &self,
        nrf_id: &str,
        req: &SbiRequest,
        headers: &HeaderMap,
        instances: impl Iterator<Item = &'a Instance> + Clone,
    ) -> Result<AccessTokenRsp, Refusal> {
        let form = req
            .content_type
            .as_deref()
            .and_then(|c| c.split(';').next())
            .is_some_and(|c| {
                c.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            });
        if !form {
            return Err(refuse(
                "invalid_request",
                "the body must be application/x-www-form-urlencoded",
            ));
        }
        let mut params = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(&req.body) {
            if params.insert(k.into_owned(), v.into_owned()).is_some() {
                return Err(refuse("invalid_request", "a parameter is repeated"));
            }
        }
        let get = |k: &str| params.get(k).map(String::as_str).filter(|v| !v.is_empty());
        match get("grant_type") {
            Some("client_credentials") => {}
            Some(g) => {
                return Err(refuse(
                    "unsupported_grant_type",
                    format!("grant_type {g} (only client_credentials)"),
                ))
            }
            None => return Err(refuse("invalid_request", "grant_type is missing")),
        }
        let nf_id = get("nfInstanceId")
            .ok_or_else(|| refuse("invalid_request", "nfInstanceId is missing"))?;
        let scope = get("scope").ok_or_else(|| refuse("invalid_request", "scope is missing"))?;

        // The consumer proves it holds the key registered for nf_id.
        let assertion = headers
            .get(oauth::CLIENT_CREDENTIALS_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| {
                (get("client_assertion_type") == Some(JWT_BEARER))
                    .then(|| get("client_assertion").map(str::to_owned))
                    .flatten()
            })
            .ok_or_else(|| {
                refuse(
                    "invalid_client",
                    "no client credentials assertion (3gpp-Sbi-Client-Credentials)",
                )
            })?;
        let key = self.clients.get(nf_id).ok_or_else(|| {
            refuse(
                "invalid_client",
                format!("NF instance {nf_id} has no key at this NRF"),
            )
        })?;
        oauth::verify_assertion(key, &assertion, nf_id)
            .map_err(|e| refuse("invalid_client", format!("assertion refused: {e}")))?;

        let requester_type = get("nfType");
        if let (Some(t), Some(me)) = (
            requester_type,
            instances
                .clone()
                .find(|i| i.profile.nf_instance_id == nf_id),
        ) {
            if me.profile.nf_type != t {
                return Err(refuse(
                    "invalid_request",
                    format!("nfType {t} differs from the registered profile's"),
                ));
            }
        }
        let target_type = get("targetNfType");
        let target_id = get("targetNfInstanceId");
        let services: Vec<&str> = scope.split(' ').filter(|s| !s.is_empty()).collect();
        // The producers the token may be used with: registered, of the target, offering every
        // service of the scope.
        let producers: Vec<&Instance> = instances
            .filter(|i| i.profile.nf_status == NF_REGISTERED)
            .filter(|i| target_type.is_none_or(|t| i.profile.nf_type == t))
            .filter(|i| target_id.is_none_or(|t| i.profile.nf_instance_id == t))
            .filter(|i| services.iter().all(|s| i.profile.offers(s)))
            .collect();
        if services.is_empty() || producers.is_empty() {
            return Err(refuse(
                "invalid_scope",
                format!("no registered producer offers {scope}"),
            ));
        }
        if let Some(t) = requester_type {
            let allowed = producers.iter().any(|p| {
                p.profile
                    .allowed_nf_types
                    .as_ref()
                    .is_none_or(|a| a.iter().any(|x| x == t))
            });
            if !allowed {
                return Err(refuse(
                    "unauthorized_client",
                    format!("{t} is not among the producers' allowedNfTypes"),
                ));
            }
        }
        let aud = match (target_id, target_type) {
            (Some(id), _) => Audience::Many(vec![id.to_owned()]),
            (None, Some(t)) => Audience::One(t.to_owned()),
            (None, None) => {
                let t = &producers[0].profile.nf_type;
                if producers.iter().any(|p| p.profile.nf_type != *t) {
                    return Err(refuse(
                        "invalid_request",
                        "the scope spans NF types: name targetNfType",
                    ));
                }
                Audience::One(t.clone())
            }
        };
        let now = oauth::unix_now();
        let claims = AccessTokenClaims {
            iss: nrf_id.to_owned(),
            sub: nf_id.to_owned(),
            aud,
            scope: services.join(" "),
            exp: now + u64::from(self.lifetime_s),
            iat: Some(now),
        };
        let token = self.signer.sign(&claims).map_err(|e| Refusal {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            error: "server_error",
            detail: e.to_string(),
        })?;
        Ok(AccessTokenRsp {
            access_token: token,
            token_type: "Bearer".into(),
            expires_in: Some(self.lifetime_s),
            scope: Some(claims.scope),
        })
    }
}

/// RFC 6749 §5.1: token answers are not cached.
fn no_store(h: &mut HeaderMap) {
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}
