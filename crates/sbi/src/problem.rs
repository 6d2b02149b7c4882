//! SBI application error causes, their HTTP status, `application/problem+json` bodies, and the
//! AMF's mapping of a received cause to the 5GMM cause it sends the UE (TS 29.524 §4).
//!
//! Cause names and statuses: TS 29.500 §5.2.7.2 Table 5.2.7.2-1 (protocol and generic errors),
//! TS 29.509 §6.1.7.3 (Nausf_UEAuthentication), TS 29.503 §6.1.7.3, §6.2.7.3, §6.3.7.3 (Nudm
//! SDM, UECM, UEAU). The OpenAPI files leave `cause` a free string, so these names come from
//! the spec text as we know it; the list is open ([`Cause::Other`]).

use std::fmt;

use crate::model::{InvalidParam, ProblemDetails};

/// The `Content-Type` of an SBI error body (RFC 7807 §3, TS 29.500 §5.2.7.1).
pub const PROBLEM_JSON: &str = "application/problem+json";

/// An SBI application error cause (`ProblemDetails.cause`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cause {
    /// 400: the message body is not valid JSON or not of the expected form (TS 29.500).
    InvalidMsgFormat,
    /// 400: a mandatory IE is present but wrong (TS 29.500).
    MandatoryIeIncorrect,
    /// 400: a mandatory IE is missing (TS 29.500).
    MandatoryIeMissing,
    /// 400: an optional IE is present with a value that prevents processing (TS 29.500).
    OptionalIeIncorrect,
    /// 400: the URI carries a query parameter the operation does not define (TS 29.500).
    InvalidQueryParam,
    /// 400: a mandatory query parameter has a wrong value (TS 29.500).
    MandatoryQueryParamIncorrect,
    /// 400: an optional query parameter has a value that prevents processing (TS 29.500).
    OptionalQueryParamIncorrect,
    /// 400: a mandatory query parameter is missing (TS 29.500).
    MandatoryQueryParamMissing,
    /// 403: the serving network may not use this subscriber (TS 29.509, TS 29.503).
    ServingNetworkNotAuthorized,
    /// 403: the user cannot be authenticated, e.g. a wrong RES* or no suitable method
    /// (TS 29.509, TS 29.503).
    AuthenticationRejected,
    /// 403: the SUCI's home network public key id is unknown (TS 29.509, TS 29.503).
    InvalidHnPublicKeyIdentifier,
    /// 403: the SUCI's scheme output cannot be deconcealed (TS 29.509, TS 29.503).
    InvalidSchemeOutput,
    /// 403: roaming not allowed (TS 29.503 UECM).
    RoamingNotAllowed,
    /// 403: the AMF is not the registered one and may not change the registration
    /// (TS 29.503 UECM).
    InvalidGuami,
    /// 404: the subscriber does not exist (TS 29.509, TS 29.503).
    UserNotFound,
    /// 404: the resource (e.g. an authCtxId) does not exist (TS 29.509, TS 29.503).
    ContextNotFound,
    /// 404: the requested subscription data does not exist (TS 29.503 SDM).
    DataNotFound,
    /// 404: no such SDM subscription (TS 29.503 SDM).
    SubscriptionNotFound,
    /// 404: the URI matches no resource of the API (TS 29.500).
    ResourceUriStructureNotFound,
    /// 413: the body is larger than we accept. UNCERTAIN: TS 29.500 may define 413 by status
    /// alone; the name is ours until checked against the spec text.
    PayloadTooLarge,
    /// 415: the body is not `application/json`. UNCERTAIN, as for [`Cause::PayloadTooLarge`].
    UnsupportedMediaType,
    /// 500: the UDM could not produce an authentication vector (TS 29.503).
    AvGenerationProblem,
    /// 500: unspecified failure in the responding NF (TS 29.500).
    UnspecifiedNfFailure,
    /// 500: system failure (TS 29.500).
    SystemFailure,
    /// 501: the SUCI protection scheme is not supported (TS 29.509, TS 29.503).
    UnsupportedProtectionScheme,
    /// 503: the responder is congested (TS 29.500).
    NfCongestion,
    /// 504: the upstream server (the UDM behind the AUSF) did not answer (TS 29.509).
    UpstreamServerError,
    /// 504: network failure towards the upstream server (TS 29.509).
    NetworkFailure,
    /// 504: the request timed out (TS 29.500).
    TimedOutRequest,
    /// A cause this crate does not know, kept verbatim.
    Other(String),
}

impl Cause {
    /// The cause string as it appears on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Cause::InvalidMsgFormat => "INVALID_MSG_FORMAT",
            Cause::MandatoryIeIncorrect => "MANDATORY_IE_INCORRECT",
            Cause::MandatoryIeMissing => "MANDATORY_IE_MISSING",
            Cause::OptionalIeIncorrect => "OPTIONAL_IE_INCORRECT",
            Cause::InvalidQueryParam => "INVALID_QUERY_PARAM",
            Cause::MandatoryQueryParamIncorrect => "MANDATORY_QUERY_PARAM_INCORRECT",
            Cause::OptionalQueryParamIncorrect => "OPTIONAL_QUERY_PARAM_INCORRECT",
            Cause::MandatoryQueryParamMissing => "MANDATORY_QUERY_PARAM_MISSING",
            Cause::ServingNetworkNotAuthorized => "SERVING_NETWORK_NOT_AUTHORIZED",
            Cause::AuthenticationRejected => "AUTHENTICATION_REJECTED",
            Cause::InvalidHnPublicKeyIdentifier => "INVALID_HN_PUBLIC_KEY_IDENTIFIER",
            Cause::InvalidSchemeOutput => "INVALID_SCHEME_OUTPUT",
            Cause::RoamingNotAllowed => "ROAMING_NOT_ALLOWED",
            Cause::InvalidGuami => "INVALID_GUAMI",
            Cause::UserNotFound => "USER_NOT_FOUND",
            Cause::ContextNotFound => "CONTEXT_NOT_FOUND",
            Cause::DataNotFound => "DATA_NOT_FOUND",
            Cause::SubscriptionNotFound => "SUBSCRIPTION_NOT_FOUND",
            Cause::ResourceUriStructureNotFound => "RESOURCE_URI_STRUCTURE_NOT_FOUND",
            Cause::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Cause::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            Cause::AvGenerationProblem => "AV_GENERATION_PROBLEM",
            Cause::UnspecifiedNfFailure => "UNSPECIFIED_NF_FAILURE",
            Cause::SystemFailure => "SYSTEM_FAILURE",
            Cause::UnsupportedProtectionScheme => "UNSUPPORTED_PROTECTION_SCHEME",
            Cause::NfCongestion => "NF_CONGESTION",
            Cause::UpstreamServerError => "UPSTREAM_SERVER_ERROR",
            Cause::NetworkFailure => "NETWORK_FAILURE",
            Cause::TimedOutRequest => "TIMED_OUT_REQUEST",
            Cause::Other(s) => s,
        }
    }

    /// Parses a wire cause; unknown strings become [`Cause::Other`].
    pub fn parse(s: &str) -> Cause {
        const KNOWN: &[Cause] = &[
            Cause::InvalidMsgFormat,
            Cause::MandatoryIeIncorrect,
            Cause::MandatoryIeMissing,
            Cause::OptionalIeIncorrect,
            Cause::InvalidQueryParam,
            Cause::MandatoryQueryParamIncorrect,
            Cause::OptionalQueryParamIncorrect,
            Cause::MandatoryQueryParamMissing,
            Cause::ServingNetworkNotAuthorized,
            Cause::AuthenticationRejected,
            Cause::InvalidHnPublicKeyIdentifier,
            Cause::InvalidSchemeOutput,
            Cause::RoamingNotAllowed,
            Cause::InvalidGuami,
            Cause::UserNotFound,
            Cause::ContextNotFound,
            Cause::DataNotFound,
            Cause::SubscriptionNotFound,
            Cause::ResourceUriStructureNotFound,
            Cause::PayloadTooLarge,
            Cause::UnsupportedMediaType,
            Cause::AvGenerationProblem,
            Cause::UnspecifiedNfFailure,
            Cause::SystemFailure,
            Cause::UnsupportedProtectionScheme,
            Cause::NfCongestion,
            Cause::UpstreamServerError,
            Cause::NetworkFailure,
            Cause::TimedOutRequest,
        ];
        KNOWN
            .iter()
            .find(|c| c.as_str() == s)
            .cloned()
            .unwrap_or_else(|| Cause::Other(s.to_owned()))
    }

    /// The HTTP status this cause is sent with.
    pub fn status(&self) -> u16 {
        match self {
            Cause::InvalidMsgFormat
            | Cause::MandatoryIeIncorrect
            | Cause::MandatoryIeMissing
            | Cause::OptionalIeIncorrect
            | Cause::InvalidQueryParam
            | Cause::MandatoryQueryParamIncorrect
            | Cause::OptionalQueryParamIncorrect
            | Cause::MandatoryQueryParamMissing => 400,
            Cause::ServingNetworkNotAuthorized
            | Cause::AuthenticationRejected
            | Cause::InvalidHnPublicKeyIdentifier
            | Cause::InvalidSchemeOutput
            | Cause::RoamingNotAllowed
            | Cause::InvalidGuami => 403,
            Cause::UserNotFound
            | Cause::ContextNotFound
            | Cause::DataNotFound
            | Cause::SubscriptionNotFound
            | Cause::ResourceUriStructureNotFound => 404,
            Cause::PayloadTooLarge => 413,
            Cause::UnsupportedMediaType => 415,
            Cause::AvGenerationProblem | Cause::UnspecifiedNfFailure | Cause::SystemFailure => 500,
            Cause::UnsupportedProtectionScheme => 501,
            Cause::NfCongestion => 503,
            Cause::UpstreamServerError | Cause::NetworkFailure | Cause::TimedOutRequest => 504,
            Cause::Other(_) => 500,
        }
    }

    /// A short title for the problem body.
    fn title(&self) -> &'static str {
        match self.status() {
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            413 => "Payload Too Large",
            415 => "Unsupported Media Type",
            501 => "Not Implemented",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            _ => "Internal Server Error",
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A 5GMM cause value (TS 24.501 §9.11.3.2, Annex A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GmmCause(pub u8);

impl GmmCause {
    /// #3 Illegal UE.
    pub const ILLEGAL_UE: GmmCause = GmmCause(3);
    /// #7 5GS services not allowed.
    pub const FIVEGS_SERVICES_NOT_ALLOWED: GmmCause = GmmCause(7);
    /// #9 UE identity cannot be derived by the network.
    pub const UE_IDENTITY_CANNOT_BE_DERIVED: GmmCause = GmmCause(9);
    /// #11 PLMN not allowed.
    pub const PLMN_NOT_ALLOWED: GmmCause = GmmCause(11);
    /// #15 No suitable cells in tracking area.
    pub const NO_SUITABLE_CELLS_IN_TA: GmmCause = GmmCause(15);
    /// #22 Congestion.
    pub const CONGESTION: GmmCause = GmmCause(22);
    /// #73 Serving network not authorized.
    pub const SERVING_NETWORK_NOT_AUTHORIZED: GmmCause = GmmCause(73);
    /// #111 Protocol error, unspecified.
    pub const PROTOCOL_ERROR_UNSPECIFIED: GmmCause = GmmCause(111);
}

/// Extension of [`ProblemDetails`] with constructors and the cause accessors.
impl ProblemDetails {
    /// A problem with `cause`, its status and a title.
    pub fn from_cause(cause: Cause, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        ProblemDetails {
            title: Some(cause.title().to_owned()),
            status: Some(cause.status()),
            detail: (!detail.is_empty()).then_some(detail),
            cause: Some(cause.as_str().to_owned()),
            ..Default::default()
        }
    }

    /// 404 USER_NOT_FOUND: the SUPI/SUCI is not a subscriber.
    pub fn user_not_found(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::UserNotFound, detail)
    }

    /// 403 AUTHENTICATION_REJECTED.
    pub fn authentication_rejected(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::AuthenticationRejected, detail)
    }

    /// 403 SERVING_NETWORK_NOT_AUTHORIZED.
    pub fn serving_network_not_authorized(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::ServingNetworkNotAuthorized, detail)
    }

    /// 403 INVALID_SCHEME_OUTPUT: the SUCI could not be deconcealed (TS 29.503 §6.3.7.3).
    pub fn deconcealment_failed(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::InvalidSchemeOutput, detail)
    }

    /// 403 INVALID_HN_PUBLIC_KEY_IDENTIFIER.
    pub fn invalid_hn_public_key_identifier(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::InvalidHnPublicKeyIdentifier, detail)
    }

    /// 400 INVALID_MSG_FORMAT: the body is not parseable JSON.
    pub fn invalid_msg_format(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::InvalidMsgFormat, detail)
    }

    /// 400 MANDATORY_IE_INCORRECT naming the offending member (a JSON pointer).
    pub fn mandatory_ie_incorrect(param: impl Into<String>, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        let mut p = Self::from_cause(Cause::MandatoryIeIncorrect, reason.clone());
        p.invalid_params = Some(vec![InvalidParam {
            param: param.into(),
            reason: Some(reason),
        }]);
        p
    }

    /// 400 MANDATORY_IE_MISSING naming the missing member (a JSON pointer).
    pub fn mandatory_ie_missing(param: impl Into<String>) -> Self {
        let param = param.into();
        let mut p = Self::from_cause(Cause::MandatoryIeMissing, format!("{param} is missing"));
        p.invalid_params = Some(vec![InvalidParam {
            param,
            reason: Some("missing".to_owned()),
        }]);
        p
    }

    /// 400 with `cause`, naming every parameter of `params` in `invalidParams` (TS 29.500
    /// §5.2.7.2, TS 29.571 `InvalidParam`). The detail lists the names only: reasons are
    /// fixed texts and no value is echoed, since a refused value may be key material.
    pub fn invalid_params(cause: Cause, params: Vec<InvalidParam>) -> Self {
        let names: Vec<&str> = params.iter().map(|p| p.param.as_str()).collect();
        let detail = format!("invalid: {}", names.join(", "));
        let mut p = Self::from_cause(cause, detail);
        p.invalid_params = (!params.is_empty()).then_some(params);
        p
    }

    /// The names of the parameters `invalidParams` lists, in order; none when it is absent.
    pub fn invalid_param_names(&self) -> Vec<String> {
        self.invalid_params
            .iter()
            .flatten()
            .map(|i| i.param.clone())
            .collect()
    }

    /// 404 CONTEXT_NOT_FOUND.
    pub fn context_not_found(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::ContextNotFound, detail)
    }

    /// 404 DATA_NOT_FOUND.
    pub fn data_not_found(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::DataNotFound, detail)
    }

    /// 404 RESOURCE_URI_STRUCTURE_NOT_FOUND: no route for this path.
    pub fn resource_not_found(path: &str) -> Self {
        Self::from_cause(
            Cause::ResourceUriStructureNotFound,
            format!("no resource at {path}"),
        )
    }

    /// 405: the method does not apply to this resource. No application cause: TS 29.500
    /// conveys this by the status code alone.
    pub fn method_not_allowed(method: &str, path: &str) -> Self {
        ProblemDetails {
            title: Some("Method Not Allowed".to_owned()),
            status: Some(405),
            detail: Some(format!("{method} not allowed on {path}")),
            ..Default::default()
        }
    }

    /// 500 AV_GENERATION_PROBLEM.
    pub fn av_generation_problem(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::AvGenerationProblem, detail)
    }

    /// 500 UNSPECIFIED_NF_FAILURE.
    pub fn unspecified_nf_failure(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::UnspecifiedNfFailure, detail)
    }

    /// 504 UPSTREAM_SERVER_ERROR.
    pub fn upstream_server_error(detail: impl Into<String>) -> Self {
        Self::from_cause(Cause::UpstreamServerError, detail)
    }

    /// The typed cause, if the body carries one.
    pub fn cause_code(&self) -> Option<Cause> {
        self.cause.as_deref().map(Cause::parse)
    }

    /// The cause string (empty without one) and the names of the `invalidParams`, in order:
    /// what a 400 says is wrong, without the reasons' free text.
    pub fn cause_and_params(&self) -> (String, Vec<String>) {
        let params = self
            .invalid_params
            .iter()
            .flatten()
            .map(|i| i.param.clone())
            .collect();
        (self.cause.clone().unwrap_or_default(), params)
    }

    /// The HTTP status to answer with: the body's `status`, else the cause's, else 500.
    pub fn http_status(&self) -> u16 {
        match self.status {
            Some(s) if (400..=599).contains(&s) => s,
            _ => self.cause_code().map_or(500, |c| c.status()),
        }
    }

    /// The 5GMM cause the AMF sends the UE when an NF answered with this problem during
    /// registration; `None` when the AMF should not reject with a cause of its own.
    /// See [`to_5gmm_cause`].
    pub fn to_5gmm_cause(&self) -> Option<GmmCause> {
        to_5gmm_cause(self.http_status(), self.cause_code().as_ref())
    }
}

/// Maps an SBI error seen by the AMF (HTTP status and application cause) to the 5GMM cause of
/// the REGISTRATION REJECT, after TS 29.524 §4.2 (Nausf) and §4.3 (Nudm).
///
/// Sources and certainty:
/// - TS 29.524 Table 4.2.2.2-1 (Rel-17 text as published on itecspec.com, "Mapping from HTTP
///   to 5GMM cause values – Request rejected by AUSF"): 403 SERVING_NETWORK_NOT_AUTHORIZED →
///   #11, #73, #12 or #15 by operator policy (NOTE 1); we pick #73 "Serving network not
///   authorized", the cause that names the condition.
/// - The same table gives AUTHENTICATION_REJECTED, INVALID_HN_PUBLIC_KEY_IDENTIFIER,
///   CONTEXT_NOT_FOUND and USER_NOT_FOUND as "N/A (NOTE 2)", i.e. the AMF ends the procedure
///   with an AUTHENTICATION REJECT, not a Registration Reject cause of this table. Where a
///   Registration Reject must still carry a cause, we use the values a deployed AMF documents
///   (Cisco UCC 5G AMF "Error Handling on AUSF Interface", 2023-03): #3 Illegal UE for
///   AUTHENTICATION_REJECTED / INVALID_HN_PUBLIC_KEY_IDENTIFIER / INVALID_SCHEME_OUTPUT, #7
///   "5GS services not allowed" for USER_NOT_FOUND / CONTEXT_NOT_FOUND / DATA_NOT_FOUND, #11
///   for UNSUPPORTED_PROTECTION_SCHEME, and #15 for the temporary 500/504 errors
///   (UPSTREAM_SERVER_ERROR, NETWORK_FAILURE, AV_GENERATION_PROBLEM) so that the UE tries
///   another network. UNCERTAIN: these are vendor choices, not the normative table.
/// - ROAMING_NOT_ALLOWED (Nudm_UECM 403) → #11 PLMN not allowed. UNCERTAIN (TS 29.524 §4.3
///   not read).
/// - A 404 without a cause (other cores answer an unknown SUPI so, Open5GS's AUSF among
///   them) → #7, as USER_NOT_FOUND.
/// - 400 errors (our own malformed request) → #111 Protocol error, unspecified. UNCERTAIN.
/// - 503 NF_CONGESTION → #22 Congestion. UNCERTAIN.
/// - Anything else with a 5xx status → #15 (temporary); other 4xx → #111. UNCERTAIN defaults.
pub fn to_5gmm_cause(status: u16, cause: Option<&Cause>) -> Option<GmmCause> {
    let by_cause = cause.and_then(|c| match c {
        Cause::ServingNetworkNotAuthorized => Some(GmmCause::SERVING_NETWORK_NOT_AUTHORIZED),
        Cause::AuthenticationRejected
        | Cause::InvalidHnPublicKeyIdentifier
        | Cause::InvalidSchemeOutput => Some(GmmCause::ILLEGAL_UE),
        Cause::UserNotFound | Cause::ContextNotFound | Cause::DataNotFound => {
            Some(GmmCause::FIVEGS_SERVICES_NOT_ALLOWED)
        }
        Cause::RoamingNotAllowed | Cause::UnsupportedProtectionScheme => {
            Some(GmmCause::PLMN_NOT_ALLOWED)
        }
        Cause::UpstreamServerError | Cause::NetworkFailure | Cause::AvGenerationProblem => {
            Some(GmmCause::NO_SUITABLE_CELLS_IN_TA)
        }
        Cause::NfCongestion => Some(GmmCause::CONGESTION),
        _ => None,
    });
    by_cause.or(match status {
        200..=399 => None,
        404 => Some(GmmCause::FIVEGS_SERVICES_NOT_ALLOWED),
        503 => Some(GmmCause::CONGESTION),
        500..=599 => Some(GmmCause::NO_SUITABLE_CELLS_IN_TA),
        _ => Some(GmmCause::PROTOCOL_ERROR_UNSPECIFIED),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn constructors_set_status_and_cause() {
        let p = ProblemDetails::user_not_found("imsi-001010000000001");
        assert_eq!(p.status, Some(404));
        assert_eq!(p.cause.as_deref(), Some("USER_NOT_FOUND"));
        assert_eq!(p.cause_code(), Some(Cause::UserNotFound));
        assert_eq!(ProblemDetails::deconcealment_failed("").status, Some(403));
        assert_eq!(ProblemDetails::deconcealment_failed("").detail, None);
        let p = ProblemDetails::mandatory_ie_incorrect("/servingNetworkName", "bad pattern");
        assert_eq!(p.http_status(), 400);
        assert_eq!(p.invalid_param_names(), ["/servingNetworkName"]);
        assert!(ProblemDetails::user_not_found("")
            .invalid_param_names()
            .is_empty());
        assert_eq!(
            p.invalid_params.unwrap()[0].param,
            "/servingNetworkName".to_owned()
        );
    }

    #[test]
    fn cause_strings_round_trip() {
        for c in [
            Cause::InvalidMsgFormat,
            Cause::UserNotFound,
            Cause::AvGenerationProblem,
            Cause::InvalidSchemeOutput,
            Cause::TimedOutRequest,
        ] {
            assert_eq!(Cause::parse(c.as_str()), c);
        }
        assert_eq!(Cause::parse("FOO"), Cause::Other("FOO".into()));
    }

    #[test]
    fn gmm_mapping() {
        let m = |p: ProblemDetails| p.to_5gmm_cause();
        assert_eq!(
            m(ProblemDetails::user_not_found("")),
            Some(GmmCause::FIVEGS_SERVICES_NOT_ALLOWED)
        );
        assert_eq!(
            m(ProblemDetails::authentication_rejected("")),
            Some(GmmCause::ILLEGAL_UE)
        );
        assert_eq!(
            m(ProblemDetails::serving_network_not_authorized("")),
            Some(GmmCause::SERVING_NETWORK_NOT_AUTHORIZED)
        );
        assert_eq!(
            m(ProblemDetails::av_generation_problem("")),
            Some(GmmCause::NO_SUITABLE_CELLS_IN_TA)
        );
        // Unknown cause falls back on the status.
        let p = ProblemDetails {
            status: Some(503),
            cause: Some("SOMETHING_NEW".into()),
            ..Default::default()
        };
        assert_eq!(m(p), Some(GmmCause::CONGESTION));
        assert_eq!(to_5gmm_cause(200, None), None);
        // A 404 without a cause is an unknown user, as USER_NOT_FOUND; a bare 400 is ours.
        assert_eq!(
            to_5gmm_cause(404, None),
            Some(GmmCause::FIVEGS_SERVICES_NOT_ALLOWED)
        );
        let bare = ProblemDetails {
            status: Some(404),
            ..Default::default()
        };
        assert_eq!(m(bare), Some(GmmCause::FIVEGS_SERVICES_NOT_ALLOWED));
        assert_eq!(
            to_5gmm_cause(400, None),
            Some(GmmCause::PROTOCOL_ERROR_UNSPECIFIED)
        );
    }

    #[test]
    fn http_status_ignores_nonsense_status_member() {
        let p = ProblemDetails {
            status: Some(42),
            cause: Some("USER_NOT_FOUND".into()),
            ..Default::default()
        };
        assert_eq!(p.http_status(), 404);
    }
}
