//! The UDM as a sans-IO state machine: Nudm_UEAuthentication (generate-auth-data,
//! auth-events; TS 29.503 §5.4, §6.3), Nudm_UECM AMF registration for 3GPP access (§5.3,
//! §6.2) and the Nudm_SDM reads a registration needs (§5.2, §6.1).
//!
//! One [`Udm`] runs per worker. Requests come in with [`Udm::handle_request`]; answers and
//! other work go out through [`Udm::poll_action`]. The UDM owns no socket, thread or clock:
//! subscriber records are read synchronously from a [`SubscriberStore`] (a read transaction
//! on the embedded store), and SQN reservations are handed to the runtime as
//! [`Action::PersistSqn`] so that the durable write stays off the hot path (see
//! [`store::sqn`]).
//!
//! # Ownership
//!
//! A subscriber's SQN and UECM state belong to the worker [`ids::udm::owner_of_supi`]
//! names. Requests naming a SUPI in the path are expected at the owner already (the client
//! hashes the SUPI). A generate-auth-data with a concealed SUCI cannot be routed that way:
//! the SUPI exists only after deconcealment, so the worker that received it deconceals it and
//! hands the request one hop to the owner ([`Action::Forward`], counted in
//! [`UdmStats::suci_hops`]). In the locking baseline every worker sees every subscriber and
//! nothing is forwarded.

mod data;
mod suci;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use http::StatusCode;
use ids::udm::owner_of_supi;
use ids::{WorkerId, Workers};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use sbi::model::{
    Amf3GppAccessRegistration, Amf3GppAccessRegistrationModification, AuthEvent, AuthType,
    AuthenticationInfoRequest, AuthenticationInfoResult, AuthenticationVector, Av5gHeAka, HexBytes,
    ProblemDetails, ResynchronizationInfo, SdmSubscription,
};
use sbi::paths::{resolve, Route};
use sbi::problem::Cause;
use sbi::validate::{self, parse_valid, parse_valid_patch, query, Checker};
use sbi::{SbiRequest, SbiResponse};
use security::kdf::{self, ServingNetworkName};
use security::milenage::Milenage;
use security::{Amf, Auts, Opc, Rand, Sqn, K};
use store::sqn::{Claim, PersistRequest, DEFAULT_BLOCK};
use store::{SqnError, SqnShard, StateField, StateWrite, StoreError, Subscriber, SubscriberStore};

use crate::state::ContextMap;

pub(crate) use data::{am_data, nssai, sm_data, smf_select};
pub use data::{bit_rate, DEFAULT_5QI, DEFAULT_ARP, SESSION_AMBR_BPS};
pub use suci::{deconceal, SidfKeys, SuciError};

/// The operations a UDM serves.
const UDM_ROUTES: &[Route] = &[
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
];

/// SDM subscriptions kept per subscriber: a few NFs (its AMF, its SMFs) subscribe to one.
pub const MAX_SDM_SUBSCRIPTIONS: usize = 16;

/// What a notification the UDM sends is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Notice {
    Deregistration,
    Sdm,
}

/// How one UDM worker is set up.
#[derive(Debug, Clone)]
pub struct UdmConfig {
    /// This worker.
    pub worker: WorkerId,
    /// All workers of the process.
    pub workers: Workers,
    /// `scheme://host:port` this UDM is reached at, for `Location` headers.
    pub api_root: String,
    /// Serving network names this home network serves (TS 33.501 §6.1.1.4); an
    /// authentication for another is refused.
    pub serving_networks: Vec<String>,
    /// The home network's SUCI private keys.
    pub hn_keys: SidfKeys,
    /// Seed of the RAND generator; `None` seeds from the operating system. A seed makes
    /// simulations reproducible and must not be used in production.
    pub rand_seed: Option<u64>,
    /// The IND every SQN of this UDM instance carries, when several instances share the
    /// store (see [`store::sqn`]); `None` keeps each subscriber's provisioned IND.
    pub sqn_ind: Option<u8>,
}

/// What the UDM keeps per subscriber besides the SQN.
#[derive(Debug, Clone, Default)]
pub struct UeRecord {
    /// The serving AMF's registration (Nudm_UECM).
    pub registration: Option<Amf3GppAccessRegistration>,
    /// The last authentication result the AUSF reported.
    pub last_auth_event: Option<AuthEvent>,
    /// Number of authentication results reported.
    pub auth_events: u64,
    /// The NFs subscribed to changes of this subscriber's data (Nudm_SDM_Subscribe), by
    /// subscription id.
    pub sdm_subscriptions: Vec<(String, SdmSubscription)>,
    /// The id of the next subscription.
    pub next_subscription: u64,
}

/// A request handed from one UDM worker to the owner of its subscriber. Opaque: pass it to
/// the owner's [`Udm::handle_forwarded`].
#[derive(Debug, Clone)]
pub struct Forwarded(Job);

#[derive(Debug, Clone)]
enum Job {
    /// generate-auth-data after deconcealment.
    Auth(AuthJob),
    /// A request with the SUPI in its path that reached another worker.
    Raw(SbiRequest),
}

#[derive(Debug, Clone)]
struct AuthJob {
    supi: String,
    snn: String,
    resync: Option<ResynchronizationInfo>,
}

/// Work the UDM hands to its runtime.
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
    /// Give the request to worker `to`'s UDM ([`Udm::handle_forwarded`]); its answer still
    /// goes to `req_id` wherever that request arrived.
    Forward {
        /// The owner.
        to: WorkerId,
        /// The request.
        req_id: u64,
        /// What to hand over.
        request: Forwarded,
    },
    /// Claim these SQNs in the store (`SubscriberStore::sqn_claim`), then call
    /// [`Udm::sqn_claimed`] or [`Udm::sqn_persist_failed`].
    PersistSqn(PersistRequest),
    /// Write this state behind, in order with the other writes of this UDM
    /// (`SubscriberStore::udm_state_save`); only for a store that keeps it.
    SaveState(StateWrite),
    /// POST `body` (JSON) to `uri`, an AMF's callback, and report the status with
    /// [`Udm::handle_reply`] under `call_id`.
    Notify {
        /// Names the call.
        call_id: u64,
        /// The absolute callback URI.
        uri: String,
        /// The JSON body.
        body: bytes::Bytes,
    },
}

crate::summed_counters! {
    /// Counters of one UDM worker.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct UdmStats {
        /// Authentication vectors issued.
        pub vectors: u64,
        /// Resynchronisations accepted (AUTS verified).
        pub resyncs: u64,
        /// Nudm_UECM_DeregistrationNotifications sent to an AMF whose registration another
        /// AMF replaced (TS 23.502 §4.2.2.2.2 step 14), and answered 2xx.
        pub dereg_notifications: u64,
        /// Those the old AMF refused or never answered.
        pub dereg_notification_failures: u64,
        /// Nudm_SDM_Notifications answered 2xx (a subscriber changed under a subscription).
        pub sdm_notifications: u64,
        /// Those refused or never answered.
        pub sdm_notification_failures: u64,
        /// AUTS refused (MAC-S wrong).
        pub resync_failures: u64,
        /// SUCIs deconcealed whose owner was another worker: one hop each.
        pub suci_hops: u64,
        /// SUPI-addressed requests that reached a worker other than the owner.
        pub misrouted: u64,
        /// Requests that waited for an SQN reservation to become durable.
        pub parked: u64,
        /// Registrations an AMF marked purged (Nudm_UECM_Update with purgeFlag).
        pub purges: u64,
        /// SDM subscriptions created.
        pub sdm_subscriptions: u64,
        /// AMF registrations or authentication results read back from the store.
        pub state_restores: u64,
    }
}

struct Parked {
    req_id: u64,
    snn: ServingNetworkName,
    sub: Subscriber,
}

/// One UDM worker. `M` holds per-subscriber records, `Q` the SQN shard (one entry under
/// the key `()`): [`crate::state::ShardMap`]s for the sharded mode, clones of
/// [`crate::state::LockedMap`]s for the locking baseline.
pub struct Udm<M, Q> {
    cfg: UdmConfig,
    store: Arc<dyn SubscriberStore>,
    ues: M,
    sqn: Q,
    rng: StdRng,
    actions: VecDeque<Action>,
    /// Names the next notification call.
    next_call: u64,
    /// What each outstanding notification is, by call.
    notices: std::collections::HashMap<u64, Notice>,
    parked: HashMap<String, Vec<Parked>>,
    stats: UdmStats,
}

impl<M, Q> std::fmt::Debug for Udm<M, Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Udm")
            .field("worker", &self.cfg.worker)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<M, Q> Udm<M, Q>
where
    M: ContextMap<String, UeRecord>,
    Q: ContextMap<(), SqnShard>,
{
    /// A UDM worker over `store`, with its (possibly shared) maps.
    pub fn new(cfg: UdmConfig, store: Arc<dyn SubscriberStore>, ues: M, sqn: Q) -> Self {
        let rng = match cfg.rand_seed {
            // Each worker draws its own stream from the one seed.
            Some(seed) => StdRng::seed_from_u64(seed ^ u64::from(cfg.worker.0)),
            None => StdRng::from_entropy(),
        };
        Self {
            cfg,
            store,
            ues,
            sqn,
            rng,
            actions: VecDeque::new(),
            next_call: 1,
            notices: std::collections::HashMap::new(),
            parked: HashMap::new(),
            stats: UdmStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> UdmStats {
        self.stats
    }

    /// The next piece of work for the runtime.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The per-subscriber record, if any (for tests and the CLI).
    pub fn record(&mut self, supi: &str) -> Option<UeRecord> {
        self.ues.with(&supi.to_owned(), |r| r.cloned())
    }

    /// Hands `body` to the runtime to write behind, when the store keeps the UDM's state.
    fn save(&mut self, supi: &str, field: StateField, body: &impl serde::Serialize) {
        if !self.store.keeps_udm_state() {
            return;
        }
        match serde_json::to_string(body) {
            Ok(json) => self.actions.push_back(Action::SaveState(StateWrite {
                supi: supi.to_owned(),
                field,
                body: json,
            })),
            Err(e) => tracing::warn!(%supi, error = %e, "UDM state not saved"),
        }
    }

    /// Reads back the AMF registration and the last authentication result of a subscriber
    /// this instance holds none for (it restarted, or another instance served the UE), when
    /// the store keeps them. A read that fails leaves memory as it is: the answer is then
    /// the one memory gives.
    fn restore(&mut self, supi: &str) {
        if !self.store.keeps_udm_state()
            || self.ues.with(&supi.to_owned(), |r| {
                r.is_some_and(|r| r.registration.is_some())
            })
        {
            return;
        }
        let state = match self.store.udm_state(supi) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(%supi, error = %e, "UDM state not read back");
                return;
            }
        };
        let registration = state
            .amf_registration
            .and_then(|j| serde_json::from_str::<Amf3GppAccessRegistration>(&j).ok());
        let event = state
            .auth_event
            .and_then(|j| serde_json::from_str::<AuthEvent>(&j).ok());
        if registration.is_none() && event.is_none() {
            return;
        }
        self.stats.state_restores += 1;
        self.ues
            .with_or_insert(supi.to_owned(), UeRecord::default, |r, _| {
                if r.registration.is_none() {
                    r.registration = registration;
                }
                if r.last_auth_event.is_none() {
                    r.last_auth_event = event;
                }
            });
    }

    /// Nudm_UECM_DeregistrationNotification (TS 29.503 §5.3.2.2.3) to `uri`.
    fn notify_dereg(&mut self, uri: &str, reason: &str) {
        let body = sbi::model::DeregistrationData {
            dereg_reason: reason.to_owned(),
            access_type: Some("3GPP_ACCESS".to_owned()),
        };
        self.notify(uri, &body, Notice::Deregistration);
    }

    /// Drops the SDM subscriptions to `supi` that `nf_instance_id` made with
    /// `implicitUnsubscribe`: that NF no longer serves the UE (TS 29.503 §6.1.6.2.3).
    fn implicit_unsubscribe(&mut self, supi: &str, nf_instance_id: &str) {
        self.ues.with(&supi.to_owned(), |r| {
            if let Some(r) = r {
                r.sdm_subscriptions.retain(|(_, s)| {
                    !(s.nf_instance_id == nf_instance_id && s.implicit_unsubscribe == Some(true))
                });
            }
        });
    }

    /// Nudm_SDM_Notification (TS 29.503 §5.2.2.3.5) to every subscription to `supi`'s data:
    /// the provisioning API changed the subscriber.
    fn notify_sdm(&mut self, supi: &str) {
        let subs = self.ues.with(&supi.to_owned(), |r| {
            r.map(|r| r.sdm_subscriptions.clone()).unwrap_or_default()
        });
        for (_, sub) in subs {
            let body = sbi::model::ModificationNotification {
                notify_items: sub
                    .monitored_resource_uris
                    .iter()
                    .map(|uri| sbi::model::NotifyItem {
                        resource_id: uri.clone(),
                        changes: vec![sbi::model::ChangeItem {
                            op: "REPLACE".to_owned(),
                            path: "/".to_owned(),
                        }],
                    })
                    .collect(),
            };
            self.notify(&sub.callback_reference, &body, Notice::Sdm);
        }
    }

    fn notify(&mut self, uri: &str, body: &impl serde::Serialize, kind: Notice) {
        let Ok(json) = sbi::message::to_json(body) else {
            return;
        };
        let call_id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        self.notices.insert(call_id, kind);
        self.actions.push_back(Action::Notify {
            call_id,
            uri: uri.to_owned(),
            body: bytes::Bytes::from(json),
        });
    }

    /// The answer to a notification this UDM sent.
    pub fn handle_reply(&mut self, call_id: u64, status: http::StatusCode) {
        let kind = self
            .notices
            .remove(&call_id)
            .unwrap_or(Notice::Deregistration);
        let ok = status.is_success();
        match (kind, ok) {
            (Notice::Deregistration, true) => self.stats.dereg_notifications += 1,
            (Notice::Deregistration, false) => self.stats.dereg_notification_failures += 1,
            (Notice::Sdm, true) => self.stats.sdm_notifications += 1,
            (Notice::Sdm, false) => self.stats.sdm_notification_failures += 1,
        }
        if !ok {
            tracing::warn!(call_id, %status, notice = ?kind, "notification refused or unanswered");
        }
    }

    /// Whether requests for subscribers of other workers must go to them.
    fn sharded() -> bool {
        !(M::SHARED && Q::SHARED)
    }

    fn respond(&mut self, req_id: u64, response: SbiResponse) {
        self.actions.push_back(Action::Respond { req_id, response });
    }

    fn problem(&mut self, req_id: u64, p: ProblemDetails) {
        self.respond(req_id, SbiResponse::problem(&p));
    }

    /// The owner of `supi` if it is not this worker (and the mode is sharded).
    fn foreign_owner(&self, supi: &str) -> Option<WorkerId> {
        let owner = owner_of_supi(supi, self.cfg.workers);
        (Self::sharded() && owner != self.cfg.worker).then_some(owner)
    }

    /// A request from the SBI server.
    pub fn handle_request(&mut self, req_id: u64, req: SbiRequest) {
        if let Some((supi, q)) = sm_data_supi(&req) {
            // A read of the subscriber store only: any worker may answer it.
            let response = match self.sm_data(&supi, q.as_deref()) {
                Ok(r) => r,
                Err(p) => SbiResponse::problem(&p),
            };
            return self.respond(req_id, response);
        }
        let m = match resolve(UDM_ROUTES, &req.method, &req.path) {
            Ok(m) => m,
            Err(p) => return self.problem(req_id, p),
        };
        // The path variable and the query are checked where the request arrives, before it
        // is handed to another worker.
        let (name, value) = m.params.first().cloned().unwrap_or(("supi", String::new()));
        let path_ok = if m.route == Route::GenerateAuthData {
            validate::path_supi_or_suci(name, &value)
        } else {
            validate::path_supi(name, &value)
        };
        if let Err(p) = path_ok {
            return self.problem(req_id, p);
        }
        if let Err(p) = query::check(req.query.as_deref(), query::for_route(m.route)) {
            return self.problem(req_id, p);
        }
        if m.route == Route::GenerateAuthData {
            return self.generate_auth_data(req_id, &value, &req);
        }
        let supi = value;
        if let Some(to) = self.foreign_owner(&supi) {
            self.stats.misrouted += 1;
            self.actions.push_back(Action::Forward {
                to,
                req_id,
                request: Forwarded(Job::Raw(req)),
            });
            return;
        }
        self.serve_supi(req_id, m.route, &supi, &req);
    }

    /// A request another worker handed over with [`Action::Forward`].
    pub fn handle_forwarded(&mut self, req_id: u64, fwd: Forwarded) {
        match fwd.0 {
            Job::Auth(job) => self.authenticate(req_id, job),
            Job::Raw(req) => match resolve(UDM_ROUTES, &req.method, &req.path) {
                Ok(m) => {
                    let supi = m.params.first().map(|(_, v)| v.clone()).unwrap_or_default();
                    self.serve_supi(req_id, m.route, &supi, &req)
                }
                Err(p) => self.problem(req_id, p),
            },
        }
    }

    /// POST `/{supiOrSuci}/security-information/generate-auth-data` (TS 29.503 §5.4.2.2).
    fn generate_auth_data(&mut self, req_id: u64, supi_or_suci: &str, req: &SbiRequest) {
        let body: AuthenticationInfoRequest = match parse_valid(req) {
            Ok(b) => b,
            Err(p) => return self.problem(req_id, p),
        };
        // TS 33.501 §6.1.2: the UDM checks that the serving network may use this home
        // network before it spends a vector.
        if let Some(p) =
            crate::serving::refusal(&self.cfg.serving_networks, &body.serving_network_name)
        {
            return self.problem(req_id, p);
        }
        let (supi, concealed) = if supi_or_suci.starts_with("suci-") {
            // TS 33.501 §6.12.2: the SIDF in the UDM deconceals the SUCI.
            match deconceal(supi_or_suci, &self.cfg.hn_keys) {
                Ok(s) => (s, true),
                Err(e) => return self.problem(req_id, e.problem()),
            }
        } else {
            (supi_or_suci.to_owned(), false)
        };
        let job = AuthJob {
            supi,
            snn: body.serving_network_name,
            resync: body.resynchronization_info,
        };
        if let Some(to) = self.foreign_owner(&job.supi) {
            if concealed {
                self.stats.suci_hops += 1;
            } else {
                self.stats.misrouted += 1;
            }
            self.actions.push_back(Action::Forward {
                to,
                req_id,
                request: Forwarded(Job::Auth(job)),
            });
            return;
        }
        self.authenticate(req_id, job);
    }

    /// The subscriber, or the problem to answer with.
    // A problem goes straight into a response on this rare path; boxing it would only
    // add an allocation.
    #[allow(clippy::result_large_err)]
    fn subscriber(&self, supi: &str) -> Result<Subscriber, ProblemDetails> {
        match self.store.get_cached(supi) {
            Ok(Some(s)) => Ok(s),
            Ok(None) => Err(ProblemDetails::user_not_found(format!("{supi} unknown"))),
            // The database behind the UDM is down or restarting: the UDR is this UDM's
            // upstream (TS 29.503: 504 UPSTREAM_SERVER_ERROR), and the AMF's answer to the
            // UE is a temporary one (#15, sbi::problem::to_5gmm_cause).
            Err(e @ StoreError::Unavailable(_)) => Err(ProblemDetails::upstream_server_error(
                format!("subscriber store: {e}"),
            )),
            Err(e) => Err(ProblemDetails::unspecified_nf_failure(format!(
                "subscriber store: {e}"
            ))),
        }
    }

    fn with_shard<R>(&mut self, f: impl FnOnce(&mut SqnShard) -> R) -> R {
        let ind = self.cfg.sqn_ind;
        self.sqn
            .with_or_insert((), || SqnShard::with_ind(DEFAULT_BLOCK, ind), |s, _| f(s))
    }

    /// Generate-auth-data at the owner: resynchronise if asked, then issue a vector.
    fn authenticate(&mut self, req_id: u64, job: AuthJob) {
        let sub = match self.subscriber(&job.supi) {
            Ok(s) => s,
            Err(p) => return self.problem(req_id, p),
        };
        let snn = match ServingNetworkName::new(&job.snn) {
            Ok(s) => s,
            Err(_) => {
                return self.problem(
                    req_id,
                    ProblemDetails::mandatory_ie_incorrect(
                        "/servingNetworkName",
                        "not a serving network name",
                    ),
                )
            }
        };
        // TS 33.102 §6.3.5: take SQN_MS only if MAC-S verifies. A wrong MAC-S means the
        // AUTS did not come from this USIM, and we refuse rather than hand out a vector
        // that the UE would reject again. Checked before the shard is touched, so that the
        // shard is accessed once for the whole request.
        let resync = match &job.resync {
            None => None,
            Some(r) => match milenage(&sub)
                .resync(&Rand::from_bytes(r.rand.0), &Auts::from_bytes(r.auts.0))
            {
                Ok(sqn_ms) => {
                    self.stats.resyncs += 1;
                    Some(sqn_ms.to_u64())
                }
                Err(_) => {
                    self.stats.resync_failures += 1;
                    return self.problem(
                        req_id,
                        ProblemDetails::authentication_rejected("AUTS MAC-S does not verify"),
                    );
                }
            },
        };
        let stored = sub.sqn;
        self.issue(Parked { req_id, snn, sub }, Some((stored, resync)));
    }

    /// Takes the next SQN and answers with a vector, or parks the request until the SQN
    /// reservation is durable. `first` is set on a new request: the subscriber's stored
    /// SQN (loaded if the shard has not seen it yet) and the SQN_MS of a verified
    /// resynchronisation. The SQN shard is accessed once.
    fn issue(&mut self, p: Parked, first: Option<(u64, Option<u64>)>) {
        let supi = p.sub.supi.clone();
        // The outer error is a failed resynchronisation, the inner one a failed take.
        let (taken, persist) = self.with_shard(|s| {
            let mut taken = Ok(());
            if let Some((stored, resync)) = first {
                if !s.is_loaded(&supi) {
                    s.load(&supi, stored);
                }
                if let Some(sqn_ms) = resync {
                    taken = s.resync(&supi, sqn_ms);
                }
            }
            let taken = taken.map(|()| s.next(&supi));
            (
                taken,
                std::iter::from_fn(|| s.poll_persist()).collect::<Vec<_>>(),
            )
        });
        self.actions
            .extend(persist.into_iter().map(Action::PersistSqn));
        let next = match taken {
            Ok(next) => next,
            Err(e) => {
                return self.problem(
                    p.req_id,
                    ProblemDetails::av_generation_problem(e.to_string()),
                )
            }
        };
        match next {
            Ok(sqn) => {
                let response = match self.vector(&p.sub, &p.snn, sqn) {
                    Ok(r) => SbiResponse::json(StatusCode::OK, &r),
                    Err(prob) => SbiResponse::problem(&prob),
                };
                self.respond(p.req_id, response);
            }
            Err(SqnError::AwaitingPersist(_)) => {
                self.stats.parked += 1;
                self.parked.entry(supi).or_default().push(p);
            }
            Err(e) => self.problem(
                p.req_id,
                ProblemDetails::av_generation_problem(e.to_string()),
            ),
        }
    }

    /// The 5G HE AV (TS 33.501 §6.1.3.2 step 2): MILENAGE, then KAUSF (Annex A.2) and XRES*
    /// (Annex A.4).
    // A problem goes straight into a response on this rare path; boxing it would only
    // add an allocation.
    #[allow(clippy::result_large_err)]
    fn vector(
        &mut self,
        sub: &Subscriber,
        snn: &ServingNetworkName,
        sqn: u64,
    ) -> Result<AuthenticationInfoResult, ProblemDetails> {
        let gen = |e: security::Error| ProblemDetails::av_generation_problem(e.to_string());
        let mut rand = [0u8; 16];
        self.rng.fill_bytes(&mut rand);
        let rand = Rand::from_bytes(rand);
        let sqn = Sqn::from_u64(sqn).map_err(gen)?;
        let av = milenage(sub).auth_vector(&rand, &sqn, &Amf::from_bytes(sub.amf));
        let kausf = kdf::kausf(&av.ck, &av.ik, snn, &av.sqn_xor_ak()).map_err(gen)?;
        let xres_star = kdf::xres_star(&av.ck, &av.ik, snn, &rand, &av.xres).map_err(gen)?;
        self.stats.vectors += 1;
        Ok(AuthenticationInfoResult {
            auth_type: AuthType::FiveGAka,
            supported_features: None,
            authentication_vector: Some(AuthenticationVector::FiveGHeAka(Av5gHeAka {
                rand: HexBytes(*rand.as_bytes()),
                xres_star: HexBytes(*xres_star.as_bytes()),
                autn: HexBytes(*av.autn.as_bytes()),
                kausf: HexBytes(*kausf.as_bytes()),
            })),
            supi: Some(sub.supi.clone()),
        })
    }

    /// The store granted `claim` for `supi`: requests waiting for it go on. In the locking
    /// baseline, report it to every worker (any of them may have parked a request behind the
    /// claim another one asked for).
    pub fn sqn_claimed(&mut self, supi: &str, claim: Claim) {
        self.with_shard(|s| s.claimed(supi, claim));
        for p in self.parked.remove(supi).unwrap_or_default() {
            self.issue(p, None);
        }
    }

    /// The SQN write failed: the requests waiting for it fail with AV_GENERATION_PROBLEM.
    pub fn sqn_persist_failed(&mut self, supi: &str) {
        self.with_shard(|s| s.persist_failed(supi));
        for p in self.parked.remove(supi).unwrap_or_default() {
            self.problem(
                p.req_id,
                ProblemDetails::av_generation_problem("SQN reservation could not be stored"),
            );
        }
    }

    /// The subscriber's record changed in the store, or it was deleted (the UDR's
    /// provisioning API tells the owner, one hop away): forget the SQN this shard holds, so
    /// that its next vector starts from the stored value. That is always safe: the shard
    /// never issues an SQN above what the store acknowledged, and the store keeps the
    /// maximum, so the reloaded value is at or above every SQN issued; and it is what a new
    /// SIM (a new K with a lower SQN) needs. Requests parked behind a reservation start over
    /// from the store; a deleted subscriber's UECM record goes.
    pub fn subscriber_changed(&mut self, supi: &str) {
        self.with_shard(|s| s.unload(supi));
        let parked = self.parked.remove(supi).unwrap_or_default();
        match self.subscriber(supi) {
            Ok(sub) => {
                self.notify_sdm(supi);
                for p in parked {
                    let stored = sub.sqn;
                    let sub = sub.clone();
                    self.issue(
                        Parked {
                            req_id: p.req_id,
                            snn: p.snn,
                            sub,
                        },
                        Some((stored, None)),
                    );
                }
            }
            Err(prob) => {
                if prob.http_status() == StatusCode::NOT_FOUND.as_u16() {
                    // The subscription is withdrawn: the AMF serving the UE is told to
                    // deregister it (TS 23.502 §4.2.2.3.3, TS 29.503 §5.3.2.2.3).
                    let registered = self
                        .ues
                        .remove(&supi.to_owned())
                        .and_then(|r| r.registration)
                        .filter(|r| r.purge_flag != Some(true));
                    if let Some(reg) = registered {
                        self.notify_dereg(
                            &reg.dereg_callback_uri,
                            sbi::model::DEREG_SUBSCRIPTION_WITHDRAWN,
                        );
                    }
                }
                for p in parked {
                    self.problem(p.req_id, prob.clone());
                }
            }
        }
    }

    /// Requests naming a SUPI in the path, at its owner.
    fn serve_supi(&mut self, req_id: u64, route: Route, supi: &str, req: &SbiRequest) {
        let response = match self.supi_response(route, supi, req) {
            Ok(r) => r,
            Err(p) => SbiResponse::problem(&p),
        };
        self.respond(req_id, response);
    }

    // A problem goes straight into a response on this rare path; boxing it would only
    // add an allocation.
    #[allow(clippy::result_large_err)]
    fn supi_response(
        &mut self,
        route: Route,
        supi: &str,
        req: &SbiRequest,
    ) -> Result<SbiResponse, ProblemDetails> {
        match route {
            // TS 29.503 §5.4.2.3 Nudm_UEAuthentication_ResultConfirmation.
            Route::AuthEvents => {
                let ev: AuthEvent = parse_valid(req)?;
                self.subscriber(supi)?;
                let n = self
                    .ues
                    .with_or_insert(supi.to_owned(), UeRecord::default, |r, _| {
                        r.last_auth_event = Some(ev.clone());
                        r.auth_events = r.auth_events.wrapping_add(1);
                        r.auth_events
                    });
                self.save(supi, StateField::AuthEvent, &ev);
                let location = format!("{}{}/{n}", self.cfg.api_root, req.path);
                Ok(SbiResponse::created(&location, &ev))
            }
            // TS 29.503 §5.3.2.2.2: 201 for a new registration, 200 when it replaces one.
            Route::Amf3GppAccessRegistration => {
                let reg: Amf3GppAccessRegistration = parse_valid(req)?;
                let mut c = Checker::new();
                reg.check_ue_id(supi, &mut c);
                if !c.is_clean() {
                    return Err(validate::body_problem(
                        <Amf3GppAccessRegistration as validate::Validate>::MANDATORY,
                        c.violations(),
                    ));
                }
                self.subscriber(supi)?;
                // The registration this one replaces may have been made at another instance.
                self.restore(supi);
                let old = self
                    .ues
                    .with_or_insert(supi.to_owned(), UeRecord::default, |r, _| {
                        r.registration.replace(reg.clone())
                    });
                self.save(supi, StateField::AmfRegistration, &reg);
                let replaced = old.is_some();
                // TS 23.502 §4.2.2.2.2 step 14: another AMF now serves the UE; the old one,
                // unless it already purged the UE, is told to drop its context.
                if let Some(old) = old.filter(|o| {
                    o.amf_instance_id != reg.amf_instance_id && o.purge_flag != Some(true)
                }) {
                    let reason = if reg.initial_registration_ind == Some(true) {
                        sbi::model::DEREG_UE_INITIAL_REGISTRATION
                    } else {
                        sbi::model::DEREG_UE_REGISTRATION_AREA_CHANGE
                    };
                    self.notify_dereg(&old.dereg_callback_uri, reason);
                    self.implicit_unsubscribe(supi, &old.amf_instance_id);
                }
                if replaced {
                    Ok(SbiResponse::json(StatusCode::OK, &reg))
                } else {
                    let location = format!("{}{}", self.cfg.api_root, req.path);
                    Ok(SbiResponse::created(&location, &reg))
                }
            }
            // TS 29.503 §5.3.2.5.2 Nudm_UECM_Get.
            Route::Amf3GppAccessGet => {
                self.subscriber(supi)?;
                self.restore(supi);
                let reg = self
                    .ues
                    .with(&supi.to_owned(), |r| r.and_then(|r| r.registration.clone()));
                match reg {
                    Some(reg) => Ok(SbiResponse::json(StatusCode::OK, &reg)),
                    None => Err(ProblemDetails::context_not_found(
                        "no AMF registration for 3GPP access",
                    )),
                }
            }
            // TS 29.503 §5.3.2.4.2 Nudm_UECM_Update: only the registered AMF (its GUAMI) may
            // change its registration; the purge flag says it has dropped the UE's context
            // (TS 23.502 §4.5.3).
            Route::Amf3GppAccessUpdate => {
                let m: Amf3GppAccessRegistrationModification = parse_valid_patch(req)?;
                self.subscriber(supi)?;
                self.restore(supi);
                let updated = self.ues.with(&supi.to_owned(), |r| {
                    let Some(reg) = r.and_then(|r| r.registration.as_mut()) else {
                        return Err(ProblemDetails::context_not_found(
                            "no AMF registration for 3GPP access",
                        ));
                    };
                    if reg.guami != m.guami {
                        return Err(ProblemDetails::from_cause(
                            Cause::InvalidGuami,
                            "not the GUAMI of the registered AMF",
                        ));
                    }
                    if let Some(p) = m.purge_flag {
                        reg.purge_flag = Some(p);
                    }
                    if let Some(pei) = &m.pei {
                        reg.pei = Some(pei.clone());
                    }
                    if let Some(v) = &m.ims_vo_ps {
                        reg.ims_vo_ps = Some(v.clone());
                    }
                    Ok(reg.clone())
                })?;
                self.save(supi, StateField::AmfRegistration, &updated);
                if m.purge_flag == Some(true) {
                    self.stats.purges += 1;
                    self.implicit_unsubscribe(supi, &updated.amf_instance_id);
                }
                Ok(SbiResponse::no_content())
            }
            // TS 29.503 §5.2.2.3.2 Nudm_SDM_Subscribe: 201 with the subscription and its
            // Location. The subscription is kept with the subscriber's record.
            Route::SdmSubscriptions => {
                let mut sub: SdmSubscription = parse_valid(req)?;
                self.subscriber(supi)?;
                let id = self
                    .ues
                    .with_or_insert(supi.to_owned(), UeRecord::default, |r, _| {
                        r.next_subscription = r.next_subscription.wrapping_add(1);
                        let id = r.next_subscription.to_string();
                        sub.subscription_id = Some(id.clone());
                        // An NF subscribing again with the same callback (after its restart,
                        // say) replaces its subscription; and the list is bounded, the
                        // oldest going first, so that no client can grow a record at will.
                        r.sdm_subscriptions.retain(|(_, s)| {
                            (&s.nf_instance_id, &s.callback_reference)
                                != (&sub.nf_instance_id, &sub.callback_reference)
                        });
                        if r.sdm_subscriptions.len() >= MAX_SDM_SUBSCRIPTIONS {
                            r.sdm_subscriptions.remove(0);
                        }
                        r.sdm_subscriptions.push((id.clone(), sub.clone()));
                        id
                    });
                self.stats.sdm_subscriptions += 1;
                let location = format!("{}{}/{id}", self.cfg.api_root, req.path);
                Ok(SbiResponse::created(&location, &sub))
            }
            // TS 29.503 §5.2.2.4.2 Nudm_SDM_Unsubscribe.
            Route::SdmSubscription => {
                let id = req.path.rsplit('/').next().unwrap_or_default();
                let removed = self.ues.with(&supi.to_owned(), |r| {
                    let r = r?;
                    let at = r.sdm_subscriptions.iter().position(|(i, _)| i == id)?;
                    Some(r.sdm_subscriptions.remove(at))
                });
                match removed {
                    Some(_) => Ok(SbiResponse::no_content()),
                    None => Err(ProblemDetails::from_cause(
                        Cause::SubscriptionNotFound,
                        format!("no SDM subscription {id}"),
                    )),
                }
            }
            Route::AmData => {
                let sub = self.subscriber(supi)?;
                Ok(SbiResponse::json(StatusCode::OK, &am_data(&sub)))
            }
            Route::SmfSelectData => {
                let sub = self.subscriber(supi)?;
                Ok(SbiResponse::json(StatusCode::OK, &smf_select(&sub)))
            }
            Route::Nssai => {
                let sub = self.subscriber(supi)?;
                Ok(SbiResponse::json(StatusCode::OK, &nssai(&sub)))
            }
            _ => Err(ProblemDetails::resource_not_found(&req.path)),
        }
    }
}

/// The SUPI and query of a GET `/nudm-sdm/v2/{supi}/sm-data` (TS 29.503 §6.1.3.7), if `req`
/// is one. The query may also trail the path, as in an `Action::Call` path.
fn sm_data_supi(req: &SbiRequest) -> Option<(String, Option<String>)> {
    if req.method != http::Method::GET {
        return None;
    }
    let (path, query) = match req.path.split_once('?') {
        Some((p, q)) => (p, Some(q.to_owned())),
        None => (req.path.as_str(), req.query.clone()),
    };
    let supi = path
        .strip_prefix("/nudm-sdm/v2/")?
        .strip_suffix("/sm-data")?;
    (!supi.is_empty() && !supi.contains('/')).then(|| (supi.to_owned(), query))
}

impl<M, Q> Udm<M, Q>
where
    M: ContextMap<String, UeRecord>,
    Q: ContextMap<(), SqnShard>,
{
    /// GET sm-data: one `SessionManagementSubscriptionData` per subscribed slice, each with
    /// every subscribed DNN (or only the `dnn` of the query).
    /// Session AMBR [`SESSION_AMBR_BPS`] each way, 5QI [`DEFAULT_5QI`], ARP [`DEFAULT_ARP`].
    #[allow(clippy::result_large_err)]
    fn sm_data(&self, supi: &str, q: Option<&str>) -> Result<SbiResponse, ProblemDetails> {
        validate::path_supi("supi", supi)?;
        let q = query::check(q, query::SM_DATA)?;
        let sub = self.subscriber(supi)?;
        let list = data::sm_data(&sub, q.get("dnn"));
        Ok(SbiResponse::json(StatusCode::OK, &list))
    }
}

fn milenage(sub: &Subscriber) -> Milenage {
    Milenage::new(&K::from_bytes(&sub.k), &Opc::from_bytes(&sub.opc()))
}
