//! OAuth2 on the SBI (TS 33.501 §13.4.1, TS 29.510 §5.4): the NRF's signed access tokens, the
//! check an SBI server makes on them, and the Client Credentials Assertion (TS 33.501 §13.3.8)
//! with which an NF authenticates its token request.
//!
//! Tokens and assertions are JWS compact serialisations signed with ES256 (ECDSA P-256,
//! SHA-256; RFC 7518 §3.4), through the `jsonwebtoken` crate on AWS-LC. Keys are PEM files:
//! PKCS#8 `PRIVATE KEY` for the signer, SubjectPublicKeyInfo `PUBLIC KEY` for the verifier,
//! so that operators can make them with `openssl` as well as with `steer5g nrf keys`.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use http::{header, HeaderMap, HeaderValue, StatusCode};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::message::SbiResponse;
use crate::model::ProblemDetails;

/// The header that carries a Client Credentials Assertion (TS 29.500 §5.2.3.2.x,
/// `3gpp-Sbi-Client-Credentials`).
pub const CLIENT_CREDENTIALS_HEADER: &str = "3gpp-sbi-client-credentials";

/// Seconds of clock difference tolerated on `exp` and `iat`.
const LEEWAY_S: u64 = 5;

/// Why a key, a token or an assertion was not usable.
#[derive(Debug, thiserror::Error)]
pub enum OauthError {
    /// The PEM text is not a P-256 key of the expected kind.
    #[error("not a P-256 {kind} key in PEM: {reason}")]
    Key {
        /// `private` or `public`.
        kind: &'static str,
        /// The library's reason.
        reason: String,
    },
    /// Signing failed.
    #[error("signing failed: {0}")]
    Sign(String),
    /// Key generation failed.
    #[error("key generation failed")]
    Generate,
}

/// A fresh P-256 key pair as PEM: (PKCS#8 private key, SubjectPublicKeyInfo public key).
pub fn generate_key_pair() -> Result<(String, String), OauthError> {
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map_err(|_| OauthError::Generate)?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref())
        .map_err(|_| OauthError::Generate)?;
    let spki = pair
        .public_key()
        .as_der()
        .map_err(|_| OauthError::Generate)?;
    let private = pem::encode(&pem::Pem::new("PRIVATE KEY", doc.as_ref().to_vec()));
    let public = pem::encode(&pem::Pem::new("PUBLIC KEY", spki.as_ref().to_vec()));
    Ok((private, public))
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The claims of an access token (TS 29.510 §6.3.5.2.4 `AccessTokenClaims`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessTokenClaims {
    /// The NRF's instance ID.
    pub iss: String,
    /// The consumer's instance ID.
    pub sub: String,
    /// The producer's NF type, or a list of producer instance IDs.
    pub aud: Audience,
    /// Space-separated service names.
    pub scope: String,
    /// Expiry, seconds since the epoch.
    pub exp: u64,
    /// Issue time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
}

/// `Audience`: an NF type or a list of NF instance IDs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    /// One NF type (or one instance).
    One(String),
    /// Several NF instances.
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, who: &str) -> bool {
        match self {
            Audience::One(a) => a == who,
            Audience::Many(v) => v.iter().any(|a| a == who),
        }
    }
}

/// Signs JWTs with a PKCS#8 P-256 private key.
#[derive(Clone)]
pub struct Signer {
    key: EncodingKey,
    kid: Option<String>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("Signer").field("kid", &self.kid).finish()
    }
}

impl Signer {
    /// From PEM text (`PRIVATE KEY`, PKCS#8).
    pub fn from_pem(pem: &[u8], kid: Option<String>) -> Result<Self, OauthError> {
        let key = EncodingKey::from_ec_pem(pem).map_err(|e| OauthError::Key {
            kind: "private",
            reason: e.to_string(),
        })?;
        Ok(Signer { key, kid })
    }

    /// The compact JWS of `claims`.
    pub fn sign<T: Serialize>(&self, claims: &T) -> Result<String, OauthError> {
        let mut h = Header::new(Algorithm::ES256);
        h.typ = Some("JWT".into());
        h.kid = self.kid.clone();
        jsonwebtoken::encode(&h, claims, &self.key).map_err(|e| OauthError::Sign(e.to_string()))
    }
}

/// Checks signatures with a P-256 public key.
#[derive(Clone)]
pub struct PublicKey {
    key: DecodingKey,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PublicKey(P-256)")
    }
}

impl PublicKey {
    /// From PEM text (`PUBLIC KEY`, SubjectPublicKeyInfo).
    pub fn from_pem(pem: &[u8]) -> Result<Self, OauthError> {
        let key = DecodingKey::from_ec_pem(pem).map_err(|e| OauthError::Key {
            kind: "public",
            reason: e.to_string(),
        })?;
        Ok(PublicKey { key })
    }

    fn decode<T: serde::de::DeserializeOwned>(
        &self,
        jwt: &str,
        audience: Option<&str>,
        required: &[&str],
    ) -> Result<T, String> {
        let mut v = Validation::new(Algorithm::ES256);
        v.leeway = LEEWAY_S;
        v.set_required_spec_claims(required);
        match audience {
            Some(a) => v.set_audience(&[a]),
            None => v.validate_aud = false,
        }
        jsonwebtoken::decode::<T>(jwt, &self.key, &v)
            .map(|d| d.claims)
            .map_err(|e| e.to_string())
    }
}

/// The claims of a Client Credentials Assertion (TS 33.501 §13.3.8.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientAssertionClaims {
    /// The consumer's NF instance ID.
    pub sub: String,
    /// Issued at.
    pub iat: u64,
    /// Expiry.
    pub exp: u64,
    /// The NF type of the intended audience (`NRF` for a token request).
    pub aud: Audience,
}

/// An NF's credentials towards the NRF: its instance ID and private key.
#[derive(Debug, Clone)]
pub struct ClientCredentials {
    /// The NF's instance ID, the assertion's subject.
    pub nf_instance_id: String,
    signer: Signer,
}

impl ClientCredentials {
    /// From the NF's instance ID and its private key (PEM).
    pub fn new(nf_instance_id: impl Into<String>, private_pem: &[u8]) -> Result<Self, OauthError> {
        Ok(ClientCredentials {
            nf_instance_id: nf_instance_id.into(),
            signer: Signer::from_pem(private_pem, None)?,
        })
    }

    /// A fresh assertion for `audience` (an NF type), valid `lifetime_s` seconds from `now`.
    pub fn assertion(
        &self,
        audience: &str,
        now: u64,
        lifetime_s: u64,
    ) -> Result<String, OauthError> {
        self.signer.sign(&ClientAssertionClaims {
            sub: self.nf_instance_id.clone(),
            iat: now,
            exp: now + lifetime_s,
            aud: Audience::One(audience.to_owned()),
        })
    }
}

/// Checks a Client Credentials Assertion against the consumer's public key: the signature,
/// `exp`, the audience `NRF`, and that its subject is `nf_instance_id`.
pub fn verify_assertion(
    key: &PublicKey,
    jwt: &str,
    nf_instance_id: &str,
) -> Result<ClientAssertionClaims, String> {
    let c: ClientAssertionClaims = key.decode(jwt, Some("NRF"), &["exp", "sub", "aud"])?;
    if c.sub != nf_instance_id {
        return Err("the assertion's subject is another NF instance".into());
    }
    if c.iat > unix_now() + LEEWAY_S {
        return Err("the assertion is issued in the future".into());
    }
    Ok(c)
}

/// What an SBI server accepts: tokens signed by the NRF's key, for one of its NF types or
/// instance IDs, whose scope names the service addressed.
#[derive(Debug, Clone)]
pub struct TokenPolicy {
    key: PublicKey,
    audiences: Vec<String>,
}

/// Why a request's token was refused (RFC 6750 §3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// Missing, malformed, expired, forged, or for another audience: 401 `invalid_token`.
    InvalidToken(String),
    /// Valid, but its scope lacks the service: 403 `insufficient_scope`.
    InsufficientScope {
        /// The service the request addressed.
        service: String,
    },
}

impl TokenPolicy {
    /// Accepts tokens verified by `key` whose audience is one of `audiences` (NF types such as
    /// `AUSF`, or instance IDs).
    pub fn new(key: PublicKey, audiences: Vec<String>) -> Self {
        TokenPolicy { key, audiences }
    }

    /// Checks the `Authorization` header of a request to `path`. Callbacks (a service named
    /// `*-callback`, e.g. `namf-callback`) pass without one: the producer of a notification
    /// holds no token for its consumer's callback URI (TS 29.500 §6.7.3 leaves notifications
    /// out of the authorization of service requests).
    pub fn check(
        &self,
        headers: &HeaderMap,
        path: &str,
    ) -> Result<Option<AccessTokenClaims>, Denial> {
        if service_of(path).ends_with("-callback") {
            return Ok(None);
        }
        self.check_token(headers, path).map(Some)
    }

    fn check_token(&self, headers: &HeaderMap, path: &str) -> Result<AccessTokenClaims, Denial> {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            })
            .ok_or_else(|| Denial::InvalidToken("no bearer token".into()))?;
        let claims: AccessTokenClaims = self
            .key
            .decode(token, None, &["exp", "iss", "sub", "aud"])
            .map_err(Denial::InvalidToken)?;
        if !self.audiences.iter().any(|a| claims.aud.contains(a)) {
            return Err(Denial::InvalidToken(
                "the token is for another audience".into(),
            ));
        }
        let service = service_of(path);
        if !claims.scope.split(' ').any(|s| s == service) {
            return Err(Denial::InsufficientScope {
                service: service.to_owned(),
            });
        }
        Ok(claims)
    }
}

/// The service name a path addresses: its first segment (`/nausf-auth/v1/...` →
/// `nausf-auth`).
pub fn service_of(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

impl Denial {
    /// The answer: 401 or 403 with `WWW-Authenticate` (RFC 6750 §3) and a problem body.
    pub fn response(&self) -> SbiResponse {
        let (status, challenge, detail) = match self {
            Denial::InvalidToken(why) => (
                StatusCode::UNAUTHORIZED,
                "Bearer error=\"invalid_token\"".to_owned(),
                format!("access token refused: {why}"),
            ),
            Denial::InsufficientScope { service } => (
                StatusCode::FORBIDDEN,
                format!("Bearer error=\"insufficient_scope\", scope=\"{service}\""),
                format!("the access token's scope does not include {service}"),
            ),
        };
        let p = ProblemDetails {
            title: Some(status.canonical_reason().unwrap_or("").to_owned()),
            status: Some(status.as_u16()),
            detail: Some(detail),
            ..ProblemDetails::default()
        };
        let mut r = SbiResponse::problem(&p);
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            r.headers.insert(header::WWW_AUTHENTICATE, v);
        }
        r
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn bearer(t: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {t}")).unwrap(),
        );
        h
    }

    fn claims(aud: &str, scope: &str, exp: u64) -> AccessTokenClaims {
        AccessTokenClaims {
            iss: "nrf".into(),
            sub: "amf-1".into(),
            aud: Audience::One(aud.into()),
            scope: scope.into(),
            exp,
            iat: Some(unix_now()),
        }
    }

    #[test]
    fn tokens_are_checked_for_signature_expiry_audience_and_scope() {
        let (private, public) = generate_key_pair().unwrap();
        let signer = Signer::from_pem(private.as_bytes(), Some("k1".into())).unwrap();
        let policy = TokenPolicy::new(
            PublicKey::from_pem(public.as_bytes()).unwrap(),
            vec!["AUSF".into()],
        );
        let path = "/nausf-auth/v1/ue-authentications";
        let now = unix_now();
        let good = signer
            .sign(&claims("AUSF", "nausf-auth", now + 60))
            .unwrap();
        assert_eq!(
            policy.check(&bearer(&good), path).unwrap().unwrap().sub,
            "amf-1"
        );
        // A callback needs none.
        assert_eq!(
            policy.check(&HeaderMap::new(), "/namf-callback/v1/x/dereg-notify"),
            Ok(None)
        );

        let expired = signer
            .sign(&claims("AUSF", "nausf-auth", now - 60))
            .unwrap();
        assert!(matches!(
            policy.check(&bearer(&expired), path),
            Err(Denial::InvalidToken(_))
        ));
        let other_aud = signer.sign(&claims("UDM", "nausf-auth", now + 60)).unwrap();
        assert!(matches!(
            policy.check(&bearer(&other_aud), path),
            Err(Denial::InvalidToken(_))
        ));
        let scope = signer.sign(&claims("AUSF", "nudm-ueau", now + 60)).unwrap();
        let d = policy.check(&bearer(&scope), path).unwrap_err();
        assert_eq!(
            d,
            Denial::InsufficientScope {
                service: "nausf-auth".into()
            }
        );
        let r = d.response();
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        assert_eq!(
            r.headers[header::WWW_AUTHENTICATE],
            "Bearer error=\"insufficient_scope\", scope=\"nausf-auth\""
        );

        // Signed by another key: forged.
        let (other, _) = generate_key_pair().unwrap();
        let forged = Signer::from_pem(other.as_bytes(), None)
            .unwrap()
            .sign(&claims("AUSF", "nausf-auth", now + 60))
            .unwrap();
        let d = policy.check(&bearer(&forged), path).unwrap_err();
        assert!(matches!(d, Denial::InvalidToken(_)), "{d:?}");
        assert_eq!(d.response().status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            d.response().headers[header::WWW_AUTHENTICATE],
            "Bearer error=\"invalid_token\""
        );
        assert!(matches!(
            policy.check(&HeaderMap::new(), path),
            Err(Denial::InvalidToken(_))
        ));
    }

    #[test]
    fn assertions_bind_the_subject_and_the_nrf_audience() {
        let (private, public) = generate_key_pair().unwrap();
        let key = PublicKey::from_pem(public.as_bytes()).unwrap();
        let creds = ClientCredentials::new("amf-1", private.as_bytes()).unwrap();
        let now = unix_now();
        let a = creds.assertion("NRF", now, 60).unwrap();
        assert_eq!(verify_assertion(&key, &a, "amf-1").unwrap().sub, "amf-1");
        assert!(verify_assertion(&key, &a, "amf-2").is_err());
        let wrong_aud = creds.assertion("AUSF", now, 60).unwrap();
        assert!(verify_assertion(&key, &wrong_aud, "amf-1").is_err());
        let old = creds.assertion("NRF", now - 600, 60).unwrap();
        assert!(verify_assertion(&key, &old, "amf-1").is_err());
        assert!(PublicKey::from_pem(b"not a key").is_err());
        assert!(Signer::from_pem(public.as_bytes(), None).is_err());
    }
}
