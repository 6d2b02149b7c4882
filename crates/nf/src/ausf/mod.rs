//! The AUSF as a sans-IO state machine: Nausf_UEAuthentication for 5G AKA (TS 29.509 §5.2,
//! §6.1; TS 33.501 §6.1.3.2).
//!
//! One [`Ausf`] runs per worker. Inputs: a request from the SBI server
//! ([`Ausf::handle_request`]), the reply to a call this AUSF made ([`Ausf::handle_reply`]),
//! and time ([`Ausf::handle_timeout`]). Outputs: [`Ausf::poll_action`] (answers and calls to
//! the UDM) and [`Ausf::poll_timeout`] (when to call `handle_timeout` next). It owns no
//! socket, thread or clock; `now` always comes from the caller.
//!
//! # Flow (TS 33.501 §6.1.3.2)
//!
//! 1. AMF: POST `ue-authentications` {supiOrSuci, servingNetworkName}. The AUSF checks the
//!    serving network name, then asks the UDM for a 5G HE AV (generate-auth-data).
//! 2. UDM: RAND, AUTN, XRES*, KAUSF (and the SUPI). The AUSF keeps XRES* and KSEAF in an
//!    auth context under a fresh authCtxId, and answers 201 with RAND, AUTN and HXRES*.
//! 3. AMF: PUT `{authCtxId}/5g-aka-confirmation` {resStar}. The AUSF compares RES* with
//!    XRES* in constant time, answers with the result (and the SUPI and KSEAF on success),
//!    reports the result to the UDM (auth-events) and forgets the context.
//!
//! A context never confirmed is dropped after [`AusfConfig::context_timeout`].
//!
//! # Ownership
//!
//! The authCtxId names the worker that holds the context ([`ids::ausf::auth_ctx_id`]),
//! so the confirmation goes back to that worker. A sharded AUSF answers 404 to an id of
//! another worker without looking; in the locking baseline any worker finds any context.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode};
use ids::ausf::{auth_ctx_id, owner_of_auth_ctx_id};
use ids::{WorkerId, Workers};
use sbi::discovery::NfType;
use sbi::message::decode_json;
use sbi::model::{
    AuthEvent, AuthResult, AuthType, AuthenticationInfo, AuthenticationInfoRequest,
    AuthenticationInfoResult, AuthenticationVector, Av5gAka, ConfirmationData,
    ConfirmationDataResponse, HexBytes, ProblemDetails, UeAuthenticationCtx,
};
use sbi::paths::{build, resolve, Route};
use sbi::validate::{parse_valid, query};
use sbi::{SbiRequest, SbiResponse};
use security::kdf::{self, ServingNetworkName};
use security::{Kausf, Kseaf, Rand, ResStar, XresStar};

use crate::state::ContextMap;

/// The operations an AUSF serves.
const AUSF_ROUTES: &[Route] = &[Route::UeAuthentications, Route::FiveGAkaConfirmation];

/// How long an unconfirmed auth context lives by default: the AMF's T3560 (6 s) times its
/// five retransmissions leaves the UE 30 s to answer (TS 24.501 §10.2).
pub const DEFAULT_CONTEXT_TIMEOUT: Duration = Duration::from_secs(30);

/// A point of wall-clock time the runtime vouches for, so that the AUSF can stamp auth
/// events (TS 29.503 `AuthEvent.timeStamp`) without reading a clock itself.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    /// A monotonic instant...
    pub at: Instant,
    /// ...and the Unix time in milliseconds at that instant.
    pub unix_ms: u64,
}

/// How one AUSF worker is set up.
#[derive(Debug, Clone)]
pub struct AusfConfig {
    /// This worker.
    pub worker: WorkerId,
    /// All workers of the process.
    pub workers: Workers,
    /// `scheme://host:port` the AUSF is reached at, for `Location` and `_links`.
    pub api_root: String,
    /// The serving network names this AUSF serves (its PLMN's, TS 33.501 §6.1.1.4).
    pub serving_networks: Vec<String>,
    /// The AUSF's NF instance id (UUID), sent to the UDM.
    pub instance_id: String,
    /// How long an unconfirmed context lives.
    pub context_timeout: Duration,
    /// Wall-clock reference for time stamps; without it they count from the Unix epoch at
    /// the first event (fine for tests, wrong for a real UDM).
    pub wall_clock: Option<WallClock>,
}

/// An authentication waiting for its confirmation.
#[derive(Debug, Clone)]
pub struct AuthContext {
    /// The subscriber.
    pub supi: String,
    /// The serving network it was authenticated for.
    pub serving_network_name: String,
    xres_star: XresStar,
    kseaf: Kseaf,
    expires: Instant,
}

/// Work the AUSF hands to its runtime.
#[derive(Debug)]
#[non_exhaustive]
pub enum Action {
    /// Answer request `req_id`.
    Respond {
        /// The request being answered.
        req_id: u64,
        /// The answer.
        response: SbiResponse,
    },
    /// Send a request to another NF and report its reply with [`Ausf::handle_reply`] under
    /// `call_id`. The runtime must answer every call: a transport failure or timeout is a
    /// reply with status 504 and an empty body.
    Call {
        /// Identifies the reply.
        call_id: u64,
        /// Which NF.
        nf: NfType,
        /// HTTP method.
        method: Method,
        /// Path (no authority): the runtime prepends the NF's base URI.
        path: String,
        /// JSON body.
        body: Bytes,
    },
}

crate::summed_counters! {
    /// Counters of one AUSF worker.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct AusfStats {
        /// Contexts created (201 answered).
        pub contexts: u64,
        /// Confirmations with a matching RES*.
        pub successes: u64,
        /// Confirmations with a wrong or absent RES*.
        pub failures: u64,
        /// Contexts dropped unconfirmed after the timeout.
        pub expired: u64,
        /// Confirmations for an authCtxId of another worker.
        pub misrouted: u64,
        /// Auth events the UDM acknowledged.
        pub events_acked: u64,
        /// Auth events the UDM refused or that were lost.
        pub events_failed: u64,
        /// Replies to no outstanding call.
        pub stray_replies: u64,
    }
}

#[derive(Debug)]
enum Pending {
    /// generate-auth-data on behalf of AMF request `req_id`.
    Vector { req_id: u64, snn: String },
    /// auth-events, fire and forget.
    Event,
}

/// One AUSF worker; `M` holds the auth contexts by authCtxId.
#[derive(Debug)]
pub struct Ausf<M> {
    cfg: AusfConfig,
    contexts: M,
    next_ctx: u64,
    next_call: u64,
    pending: HashMap<u64, Pending>,
    /// (deadline, authCtxId) in creation order; the timeout is fixed, so also in deadline
    /// order.
    timers: VecDeque<(Instant, String)>,
    actions: VecDeque<Action>,
    epoch: Option<WallClock>,
    stats: AusfStats,
}

impl<M: ContextMap<String, AuthContext>> Ausf<M> {
    /// An AUSF worker with its (possibly shared) context map.
    pub fn new(cfg: AusfConfig, contexts: M) -> Self {
        let epoch = cfg.wall_clock;
        Self {
            cfg,
            contexts,
            next_ctx: 0,
            next_call: 0,
            pending: HashMap::new(),
            timers: VecDeque::new(),
            actions: VecDeque::new(),
            epoch,
            stats: AusfStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> AusfStats {
        self.stats
    }

    /// Contexts waiting for confirmation (in the locking baseline: of every worker).
    pub fn contexts(&self) -> usize {
        self.contexts.len()
    }

    /// The next piece of work for the runtime.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`Ausf::handle_timeout`] should run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.front().map(|(t, _)| *t)
    }

    /// Drops the contexts whose time is up.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some((t, _)) = self.timers.front() {
            if *t > now {
                break;
            }
            let Some((_, id)) = self.timers.pop_front() else {
                break;
            };
            if self.contexts.remove(&id).is_some() {
                self.stats.expired += 1;
            }
        }
    }

    fn respond(&mut self, req_id: u64, response: SbiResponse) {
        self.actions.push_back(Action::Respond { req_id, response });
    }

    fn problem(&mut self, req_id: u64, p: ProblemDetails) {
        self.respond(req_id, SbiResponse::problem(&p));
    }

    fn call<T: serde::Serialize>(&mut self, p: Pending, nf: NfType, path: String, body: &T) {
        let call_id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        let body = match sbi::message::to_json(body) {
            Ok(v) => Bytes::from(v),
            Err(e) => {
                if let Pending::Vector { req_id, .. } = p {
                    self.problem(
                        req_id,
                        ProblemDetails::unspecified_nf_failure(format!("request encoding: {e}")),
                    );
                }
                return;
            }
        };
        self.pending.insert(call_id, p);
        self.actions.push_back(Action::Call {
            call_id,
            nf,
            method: Method::POST,
            path,
            body,
        });
    }

    /// A request from the SBI server.
    pub fn handle_request(&mut self, now: Instant, req_id: u64, req: SbiRequest) {
        self.epoch.get_or_insert(WallClock {
            at: now,
            unix_ms: 0,
        });
        let m = match resolve(AUSF_ROUTES, &req.method, &req.path) {
            Ok(m) => m,
            Err(p) => return self.problem(req_id, p),
        };
        // TS 29.509 §6.1.3: neither operation takes a query parameter.
        if let Err(p) = query::check(req.query.as_deref(), query::NONE) {
            return self.problem(req_id, p);
        }
        match m.route {
            Route::UeAuthentications => self.authenticate(req_id, &req),
            _ => {
                let id = m.param("authCtxId").unwrap_or_default().to_owned();
                self.confirm(now, req_id, &id, &req)
            }
        }
    }

    /// POST `/ue-authentications` (TS 29.509 §5.2.2.2.2).
    fn authenticate(&mut self, req_id: u64, req: &SbiRequest) {
        let info: AuthenticationInfo = match parse_valid(req) {
            Ok(i) => i,
            Err(p) => return self.problem(req_id, p),
        };
        // TS 33.501 §6.1.3.2 step 2: the AUSF checks that the requesting SEAF is entitled
        // to the serving network name it sent.
        if let Some(p) =
            crate::serving::refusal(&self.cfg.serving_networks, &info.serving_network_name)
        {
            return self.problem(req_id, p);
        }
        let body = AuthenticationInfoRequest {
            supported_features: None,
            serving_network_name: info.serving_network_name.clone(),
            resynchronization_info: info.resynchronization_info,
            ausf_instance_id: self.cfg.instance_id.clone(),
        };
        self.call(
            Pending::Vector {
                req_id,
                snn: info.serving_network_name,
            },
            NfType::Udm,
            build::generate_auth_data(&info.supi_or_suci),
            &body,
        );
    }

    /// The reply to call `call_id`.
    pub fn handle_reply(&mut self, now: Instant, call_id: u64, status: StatusCode, body: &[u8]) {
        match self.pending.remove(&call_id) {
            Some(Pending::Vector { req_id, snn }) => {
                let response = if status == StatusCode::OK {
                    match self.new_context(now, &snn, body) {
                        Ok(r) => r,
                        Err(p) => SbiResponse::problem(&p),
                    }
                } else {
                    // TS 29.509 §5.2.2.2.2: a UDM error (unknown user, failed
                    // deconcealment, ...) is passed on to the AMF as it came.
                    SbiResponse::problem(&upstream_problem(status, body))
                };
                self.respond(req_id, response);
            }
            Some(Pending::Event) => {
                if status.is_success() {
                    self.stats.events_acked += 1;
                } else {
                    self.stats.events_failed += 1;
                }
            }
            None => self.stats.stray_replies += 1,
        }
    }

    /// The UDM's vector to a context and the 201 answer.
    // A problem goes straight into a response on this rare path; boxing it would only
    // add an allocation.
    #[allow(clippy::result_large_err)]
    fn new_context(
        &mut self,
        now: Instant,
        snn_text: &str,
        body: &[u8],
    ) -> Result<SbiResponse, ProblemDetails> {
        let bad = |what: &str| ProblemDetails::upstream_server_error(format!("UDM answer: {what}"));
        let result: AuthenticationInfoResult =
            decode_json(body).map_err(|p| bad(p.detail.as_deref().unwrap_or("undecodable")))?;
        let (Some(AuthenticationVector::FiveGHeAka(av)), AuthType::FiveGAka) =
            (result.authentication_vector, result.auth_type)
        else {
            return Err(bad("not a 5G HE AKA vector"));
        };
        let supi = result.supi.ok_or_else(|| bad("no SUPI"))?;
        let snn = ServingNetworkName::new(snn_text).map_err(|e| bad(&e.to_string()))?;
        let rand = Rand::from_bytes(av.rand.0);
        let xres_star = XresStar::from_bytes(&av.xres_star.0);
        // TS 33.501 §6.1.3.2 step 5: HXRES* (Annex A.5) for the SEAF, KSEAF (Annex A.6)
        // from KAUSF; KAUSF itself stays here.
        let hxres_star = kdf::hxres_star(&rand, &xres_star);
        let kseaf = kdf::kseaf(&Kausf::from_bytes(&av.kausf.0), &snn)
            .map_err(|e| ProblemDetails::unspecified_nf_failure(e.to_string()))?;
        let id = auth_ctx_id(self.cfg.worker, self.next_ctx);
        self.next_ctx = self.next_ctx.wrapping_add(1);
        let expires = now.checked_add(self.cfg.context_timeout).unwrap_or(now);
        self.contexts.insert(
            id.clone(),
            AuthContext {
                supi,
                serving_network_name: snn_text.to_owned(),
                xres_star,
                kseaf,
                expires,
            },
        );
        self.timers.push_back((expires, id.clone()));
        self.stats.contexts += 1;
        let location = format!("{}{}/{id}", self.cfg.api_root, build::ue_authentications());
        let ctx = UeAuthenticationCtx::five_g_aka(
            Av5gAka {
                rand: av.rand,
                hxres_star: HexBytes(*hxres_star.as_bytes()),
                autn: av.autn,
            },
            format!(
                "{}{}",
                self.cfg.api_root,
                build::five_g_aka_confirmation(&id)
            ),
            Some(snn_text.to_owned()),
        );
        Ok(SbiResponse::created(&location, &ctx))
    }

    /// PUT `/ue-authentications/{authCtxId}/5g-aka-confirmation` (TS 29.509 §5.2.2.2.2).
    fn confirm(&mut self, now: Instant, req_id: u64, id: &str, req: &SbiRequest) {
        let data: ConfirmationData = match parse_valid(req) {
            Ok(d) => d,
            Err(p) => return self.problem(req_id, p),
        };
        let not_found = || ProblemDetails::context_not_found(format!("no auth context {id}"));
        if !M::SHARED && owner_of_auth_ctx_id(id, self.cfg.workers) != Some(self.cfg.worker) {
            self.stats.misrouted += 1;
            return self.problem(req_id, not_found());
        }
        let Some(ctx) = self
            .contexts
            .remove(&id.to_owned())
            .filter(|c| c.expires > now)
        else {
            return self.problem(req_id, not_found());
        };
        // TS 33.501 §6.1.3.2 step 10: RES* against XRES*, in constant time.
        let success = data
            .res_star
            .is_some_and(|r| ctx.xres_star.accepts(&ResStar::from_bytes(&r.0)));
        let answer = if success {
            self.stats.successes += 1;
            ConfirmationDataResponse {
                auth_result: AuthResult::AuthenticationSuccess,
                supi: Some(ctx.supi.clone()),
                kseaf: Some(HexBytes(*ctx.kseaf.as_bytes())),
            }
        } else {
            self.stats.failures += 1;
            ConfirmationDataResponse {
                auth_result: AuthResult::AuthenticationFailure,
                supi: None,
                kseaf: None,
            }
        };
        self.respond(req_id, SbiResponse::json(StatusCode::OK, &answer));
        // TS 33.501 §6.1.4: the AUSF tells the UDM the result (Nudm_UEAuthentication_
        // ResultConfirmation), so that it can link later requests to this one.
        let event = AuthEvent {
            nf_instance_id: self.cfg.instance_id.clone(),
            success,
            time_stamp: self.time_stamp(now),
            auth_type: AuthType::FiveGAka,
            serving_network_name: ctx.serving_network_name.clone(),
            auth_removal_ind: None,
            nf_set_id: None,
        };
        self.call(
            Pending::Event,
            NfType::Udm,
            build::auth_events(&ctx.supi),
            &event,
        );
    }

    fn time_stamp(&self, now: Instant) -> String {
        let unix_ms = match self.epoch {
            Some(w) => {
                let since = now.saturating_duration_since(w.at).as_millis();
                w.unix_ms
                    .saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
            }
            None => 0,
        };
        rfc3339(unix_ms)
    }
}

/// The problem a non-200 UDM answer carries, or UPSTREAM_SERVER_ERROR when it carries none.
fn upstream_problem(status: StatusCode, body: &[u8]) -> ProblemDetails {
    match decode_json::<ProblemDetails>(body) {
        Ok(mut p) if status.is_client_error() || status.is_server_error() => {
            p.status = Some(status.as_u16());
            p
        }
        _ => ProblemDetails::upstream_server_error(format!("UDM answered {status}")),
    }
}

/// Unix milliseconds as an RFC 3339 UTC date-time (`2026-11-21T14:33:13.123Z`), the
/// `DateTime` of TS 29.571.
pub fn rfc3339(unix_ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(unix_ms);
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_795_271_593_123), "2026-11-21T14:33:13.123Z");
        assert_eq!(rfc3339(4_102_444_799_999), "2099-12-31T23:59:59.999Z");
    }

    #[test]
    fn upstream_problem_keeps_cause_and_status() {
        let p = ProblemDetails::user_not_found("x");
        let body = serde_json::to_vec(&p).unwrap_or_default();
        let got = upstream_problem(StatusCode::NOT_FOUND, &body);
        assert_eq!(got.cause.as_deref(), Some("USER_NOT_FOUND"));
        assert_eq!(got.http_status(), 404);
        let got = upstream_problem(StatusCode::GATEWAY_TIMEOUT, b"");
        assert_eq!(got.cause.as_deref(), Some("UPSTREAM_SERVER_ERROR"));
    }
}
