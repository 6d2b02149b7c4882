//! Resource URIs of the SBI operations a registration uses, and a router that matches a
//! request's method and path against them and extracts the path variables.
//!
//! API roots and versions come from each YAML's `servers` entry (`{apiRoot}/nausf-auth/v1`,
//! `/nudm-ueau/v1`, `/nudm-uecm/v1`, `/nudm-sdm/v2`); the resource paths from its `paths`.

use http::Method;

use crate::model::ProblemDetails;

/// `{apiRoot}/nausf-auth/v1` (TS29509_Nausf_UEAuthentication.yaml `servers`).
pub const NAUSF_AUTH: &str = "/nausf-auth/v1";
/// `{apiRoot}/nudm-ueau/v1` (TS29503_Nudm_UEAU.yaml `servers`).
pub const NUDM_UEAU: &str = "/nudm-ueau/v1";
/// `{apiRoot}/nudm-uecm/v1` (TS29503_Nudm_UECM.yaml `servers`).
pub const NUDM_UECM: &str = "/nudm-uecm/v1";
/// `{apiRoot}/nudm-sdm/v2` (TS29503_Nudm_SDM.yaml `servers`).
pub const NUDM_SDM: &str = "/nudm-sdm/v2";

/// An SBI operation this crate routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Route {
    /// POST `/nausf-auth/v1/ue-authentications` (Nausf_UEAuthentication_Authenticate).
    UeAuthentications,
    /// PUT `/nausf-auth/v1/ue-authentications/{authCtxId}/5g-aka-confirmation`.
    FiveGAkaConfirmation,
    /// POST `/nudm-ueau/v1/{supiOrSuci}/security-information/generate-auth-data`.
    GenerateAuthData,
    /// POST `/nudm-ueau/v1/{supi}/auth-events` (Nudm_UEAuthentication_ResultConfirmation).
    AuthEvents,
    /// PUT `/nudm-uecm/v1/{ueId}/registrations/amf-3gpp-access` (Nudm_UECM_Registration).
    Amf3GppAccessRegistration,
    /// GET the same (Nudm_UECM_Get, TS 29.503 §5.3.2.5.2).
    Amf3GppAccessGet,
    /// PATCH the same (Nudm_UECM_Update, TS 29.503 §5.3.2.4.2; the AMF's purge).
    Amf3GppAccessUpdate,
    /// POST `/nudm-sdm/v2/{ueId}/sdm-subscriptions` (Nudm_SDM_Subscribe, §5.2.2.3.2).
    SdmSubscriptions,
    /// DELETE `/nudm-sdm/v2/{ueId}/sdm-subscriptions/{subscriptionId}` (Nudm_SDM_Unsubscribe).
    SdmSubscription,
    /// GET `/nudm-sdm/v2/{supi}/am-data`.
    AmData,
    /// GET `/nudm-sdm/v2/{supi}/smf-select-data`.
    SmfSelectData,
    /// GET `/nudm-sdm/v2/{supi}/nssai`.
    Nssai,
    /// GET `/nudm-sdm/v2/{supi}/sm-data` (Nudm_SDM_Get for session management data).
    SmData,
}

/// Every route, for iteration.
pub const ROUTES: &[Route] = &[
    Route::UeAuthentications,
    Route::FiveGAkaConfirmation,
    Route::GenerateAuthData,
    Route::AuthEvents,
    Route::Amf3GppAccessRegistration,
    Route::Amf3GppAccessGet,
    Route::Amf3GppAccessUpdate,
    Route::SdmSubscriptions,
    Route::SdmSubscription,
    Route::AmData,
    Route::SmfSelectData,
    Route::Nssai,
    Route::SmData,
];

impl Route {
    /// The path template, `{var}` marking a variable segment.
    pub fn template(self) -> &'static str {
        match self {
            Route::UeAuthentications => "/nausf-auth/v1/ue-authentications",
            Route::FiveGAkaConfirmation => {
                "/nausf-auth/v1/ue-authentications/{authCtxId}/5g-aka-confirmation"
            }
            Route::GenerateAuthData => {
                "/nudm-ueau/v1/{supiOrSuci}/security-information/generate-auth-data"
            }
            Route::AuthEvents => "/nudm-ueau/v1/{supi}/auth-events",
            Route::Amf3GppAccessRegistration
            | Route::Amf3GppAccessGet
            | Route::Amf3GppAccessUpdate => "/nudm-uecm/v1/{ueId}/registrations/amf-3gpp-access",
            Route::SdmSubscriptions => "/nudm-sdm/v2/{ueId}/sdm-subscriptions",
            Route::SdmSubscription => "/nudm-sdm/v2/{ueId}/sdm-subscriptions/{subscriptionId}",
            Route::AmData => "/nudm-sdm/v2/{supi}/am-data",
            Route::SmfSelectData => "/nudm-sdm/v2/{supi}/smf-select-data",
            Route::Nssai => "/nudm-sdm/v2/{supi}/nssai",
            Route::SmData => "/nudm-sdm/v2/{supi}/sm-data",
        }
    }

    /// The HTTP method of the operation.
    pub fn method(self) -> Method {
        match self {
            Route::UeAuthentications
            | Route::GenerateAuthData
            | Route::AuthEvents
            | Route::SdmSubscriptions => Method::POST,
            Route::FiveGAkaConfirmation | Route::Amf3GppAccessRegistration => Method::PUT,
            Route::Amf3GppAccessUpdate => Method::PATCH,
            Route::SdmSubscription => Method::DELETE,
            Route::Amf3GppAccessGet
            | Route::AmData
            | Route::SmfSelectData
            | Route::Nssai
            | Route::SmData => Method::GET,
        }
    }

    /// The path with `params` substituted in order, each percent-encoded as a path segment.
    /// Returns `None` if the number of params does not match the template.
    pub fn path(self, params: &[&str]) -> Option<String> {
        let mut out = String::with_capacity(self.template().len() + 32);
        let mut it = params.iter();
        for seg in self.template().split('/').skip(1) {
            out.push('/');
            if seg.starts_with('{') {
                encode_segment(it.next()?, &mut out);
            } else {
                out.push_str(seg);
            }
        }
        it.next().is_none().then_some(out)
    }
}

/// Builders for the request paths, for clients.
pub mod build {
    use super::Route;

    /// `/nausf-auth/v1/ue-authentications`.
    pub fn ue_authentications() -> String {
        Route::UeAuthentications.template().to_owned()
    }
    /// `/nausf-auth/v1/ue-authentications/{authCtxId}/5g-aka-confirmation`.
    pub fn five_g_aka_confirmation(auth_ctx_id: &str) -> String {
        Route::FiveGAkaConfirmation
            .path(&[auth_ctx_id])
            .unwrap_or_default()
    }
    /// `/nudm-ueau/v1/{supiOrSuci}/security-information/generate-auth-data`.
    pub fn generate_auth_data(supi_or_suci: &str) -> String {
        Route::GenerateAuthData
            .path(&[supi_or_suci])
            .unwrap_or_default()
    }
    /// `/nudm-ueau/v1/{supi}/auth-events`.
    pub fn auth_events(supi: &str) -> String {
        Route::AuthEvents.path(&[supi]).unwrap_or_default()
    }
    /// `/nudm-uecm/v1/{ueId}/registrations/amf-3gpp-access`.
    pub fn amf_3gpp_access_registration(ue_id: &str) -> String {
        Route::Amf3GppAccessRegistration
            .path(&[ue_id])
            .unwrap_or_default()
    }
    /// `/nudm-sdm/v2/{ueId}/sdm-subscriptions`.
    pub fn sdm_subscriptions(ue_id: &str) -> String {
        Route::SdmSubscriptions.path(&[ue_id]).unwrap_or_default()
    }
    /// `/nudm-sdm/v2/{ueId}/sdm-subscriptions/{subscriptionId}`.
    pub fn sdm_subscription(ue_id: &str, subscription_id: &str) -> String {
        Route::SdmSubscription
            .path(&[ue_id, subscription_id])
            .unwrap_or_default()
    }
    /// `/nudm-sdm/v2/{supi}/am-data`.
    pub fn am_data(supi: &str) -> String {
        Route::AmData.path(&[supi]).unwrap_or_default()
    }
    /// `/nudm-sdm/v2/{supi}/smf-select-data`.
    pub fn smf_select_data(supi: &str) -> String {
        Route::SmfSelectData.path(&[supi]).unwrap_or_default()
    }
    /// `/nudm-sdm/v2/{supi}/nssai`.
    pub fn nssai(supi: &str) -> String {
        Route::Nssai.path(&[supi]).unwrap_or_default()
    }
    /// `/nudm-sdm/v2/{supi}/sm-data`.
    pub fn sm_data(supi: &str) -> String {
        Route::SmData.path(&[supi]).unwrap_or_default()
    }
}

/// A matched route and its decoded path variables, in template order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// Which operation.
    pub route: Route,
    /// `(name, value)` of each `{var}`, percent-decoded.
    pub params: Vec<(&'static str, String)>,
}

impl Matched {
    /// The value of the variable `name` (without braces).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Matches `path` (no query) against `routes`.
///
/// A path that fits no template gives 404 RESOURCE_URI_STRUCTURE_NOT_FOUND; a path that fits
/// only with another method gives 405 (TS 29.500 §5.2.7.2).
// The problem goes straight into a response on the rare error path; boxing it would only
// add an allocation there.
#[allow(clippy::result_large_err)]
pub fn resolve(routes: &[Route], method: &Method, path: &str) -> Result<Matched, ProblemDetails> {
    let mut path_matched = false;
    for &route in routes {
        if let Some(params) = match_template(route.template(), path) {
            if route.method() == *method {
                return Ok(Matched { route, params });
            }
            path_matched = true;
        }
    }
    if path_matched {
        Err(ProblemDetails::method_not_allowed(method.as_str(), path))
    } else {
        Err(ProblemDetails::resource_not_found(path))
    }
}

fn match_template(template: &'static str, path: &str) -> Option<Vec<(&'static str, String)>> {
    // A request is tried against every route of its server, twice per request (once to
    // find its owner, once to serve it), so the shape is checked in one pass over the
    // bytes with nothing allocated, and only the route that matches has its variables
    // decoded.
    if !walk(template, path, |_, _| true) {
        return None;
    }
    let mut params = Vec::with_capacity(2);
    let decoded = walk(template, path, |name, raw| match decode_component(raw) {
        Some(v) if !v.is_empty() => {
            params.push((name, v));
            true
        }
        _ => false,
    });
    decoded.then_some(params)
}

/// Walks `path` along `template`: literal bytes must be equal, and each `{name}` takes one
/// non-empty segment (up to the next `/`), which `on_var` sees raw and may refuse. True when
/// both end together and nothing was refused.
fn walk<'p>(
    template: &'static str,
    path: &'p str,
    mut on_var: impl FnMut(&'static str, &'p str) -> bool,
) -> bool {
    let t = template.as_bytes();
    let p = path.as_bytes();
    let (mut i, mut j) = (0, 0);
    while let Some(&tc) = t.get(i) {
        if tc == b'{' {
            let Some(close) = template.get(i..).and_then(|rest| rest.find('}')) else {
                return false;
            };
            let name = template.get(i + 1..i + close).unwrap_or_default();
            let end = p
                .get(j..)
                .and_then(|rest| rest.iter().position(|&c| c == b'/'))
                .map_or(p.len(), |k| j + k);
            // Every byte before `j` matched an ASCII byte of the template, so `j` and the
            // `/` at `end` are character boundaries.
            match path.get(j..end) {
                Some(raw) if !raw.is_empty() && on_var(name, raw) => {}
                _ => return false,
            }
            i += close + 1;
            j = end;
        } else {
            if p.get(j) != Some(&tc) {
                return false;
            }
            i += 1;
            j += 1;
        }
    }
    j == p.len()
}

/// RFC 3986 §2.1 percent-decoding of one path segment or query component; `None` on a bad
/// escape or non-UTF-8. A `+` stays a `+` (form encoding's space is not RFC 3986's).
pub(crate) fn decode_component(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            let hi = hex_val(*b.get(i + 1)?)?;
            let lo = hex_val(*b.get(i + 2)?)?;
            out.push((hi << 4) | lo);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex_val(c: u8) -> Option<u8> {
    char::from(c)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Appends `s` percent-encoded so that it stays one path segment (RFC 3986 §3.3 `pchar`).
fn encode_segment(s: &str, out: &mut String) {
    for &c in s.as_bytes() {
        let keep = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
            );
        if keep {
            out.push(char::from(c));
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn resolves_each_route_with_params() {
        let m = resolve(
            ROUTES,
            &Method::POST,
            "/nudm-ueau/v1/suci-0-001-01-0000-0-0-0000000001/security-information/generate-auth-data",
        )
        .unwrap();
        assert_eq!(m.route, Route::GenerateAuthData);
        assert_eq!(
            m.param("supiOrSuci"),
            Some("suci-0-001-01-0000-0-0-0000000001")
        );
        for &r in ROUTES {
            let params: Vec<&str> = r
                .template()
                .split('/')
                .filter(|s| s.starts_with('{'))
                .map(|_| "imsi-001010000000001")
                .collect();
            let p = r.path(&params).unwrap();
            let m = resolve(ROUTES, &r.method(), &p).unwrap();
            assert_eq!(m.route, r);
        }
    }

    #[test]
    fn unknown_path_is_404_wrong_method_is_405() {
        let e = resolve(ROUTES, &Method::GET, "/nudm-sdm/v2/imsi-1/bogus").unwrap_err();
        assert_eq!(e.status, Some(404));
        let e = resolve(ROUTES, &Method::DELETE, "/nudm-sdm/v2/imsi-1/am-data").unwrap_err();
        assert_eq!(e.status, Some(405));
        // An empty variable does not match.
        let e = resolve(ROUTES, &Method::GET, "/nudm-sdm/v2//am-data").unwrap_err();
        assert_eq!(e.status, Some(404));
    }

    #[test]
    fn resolve_is_total_on_garbage_paths() {
        let alphabet = b"/%{}aZ09-._~\xc3\xa9?#";
        let mut x: u32 = 0x1234_5678;
        for _ in 0..5000 {
            let mut p = String::from("/nudm-sdm/v2/");
            for _ in 0..(x % 24) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let c = alphabet[(x as usize) % alphabet.len()];
                p.push(char::from(c));
            }
            for m in [Method::GET, Method::POST, Method::PUT] {
                let _ = resolve(ROUTES, &m, &p);
            }
        }
    }

    /// The route matching as the templates read: split both on `/`, equal segment counts,
    /// equal literals, and each variable a non-empty segment that percent-decodes.
    fn reference_match(template: &'static str, path: &str) -> Option<Vec<(&'static str, String)>> {
        let t: Vec<&'static str> = template.split('/').collect();
        let p: Vec<&str> = path.split('/').collect();
        if t.len() != p.len() {
            return None;
        }
        let mut params = Vec::new();
        for (ts, ps) in t.into_iter().zip(p) {
            match ts.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => {
                    let v = decode_component(ps).filter(|v| !v.is_empty())?;
                    params.push((name, v));
                }
                None if ts != ps => return None,
                None => {}
            }
        }
        Some(params)
    }

    #[test]
    fn byte_walk_matches_the_segment_reading() {
        let pieces = [
            "/",
            "nudm-sdm",
            "v2",
            "nausf-auth",
            "v1",
            "ue-authentications",
            "imsi-001",
            "%41",
            "%zz",
            "%C3%A9",
            "am-data",
            "nssai",
            "5g-aka-confirmation",
            "registrations",
            "amf-3gpp-access",
            "",
            "{supi}",
            "é",
        ];
        let mut x: u32 = 0x9e37_79b9;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as usize
        };
        let mut matched = 0;
        for _ in 0..20_000 {
            let r = ROUTES[next() % ROUTES.len()];
            // Start from a real path of a route half of the time, so that matches happen.
            let mut p = if next() % 2 == 0 {
                let n = r.template().matches('{').count();
                r.path(&vec!["imsi-001010000000001"; n]).unwrap_or_default()
            } else {
                String::new()
            };
            for _ in 0..next() % 4 {
                let piece = pieces[next() % pieces.len()];
                if next() % 2 == 0 {
                    p.push('/');
                }
                p.push_str(piece);
            }
            for &route in ROUTES {
                let want = reference_match(route.template(), &p);
                matched += usize::from(want.is_some());
                assert_eq!(
                    match_template(route.template(), &p),
                    want,
                    "{route:?} {p:?}"
                );
            }
        }
        assert!(
            matched > 1000,
            "too few matching paths to compare: {matched}"
        );
    }

    #[test]
    fn percent_coding_round_trips_and_bad_escapes_fail() {
        let p = Route::AmData.path(&["a/b c"]).unwrap();
        assert_eq!(p, "/nudm-sdm/v2/a%2Fb%20c/am-data");
        let m = resolve(ROUTES, &Method::GET, &p).unwrap();
        assert_eq!(m.param("supi"), Some("a/b c"));
        assert!(resolve(ROUTES, &Method::GET, "/nudm-sdm/v2/%G1/am-data").is_err());
        assert!(resolve(ROUTES, &Method::GET, "/nudm-sdm/v2/%/am-data").is_err());
        assert!(resolve(ROUTES, &Method::GET, "/nudm-sdm/v2/%FF/am-data").is_err());
        assert_eq!(Route::AmData.path(&[]), None);
        assert_eq!(Route::AmData.path(&["a", "b"]), None);
    }
}
