//! Where state lives and where work is done: every difference between the sharded mode and
//! the locking baseline, and nothing else of the host, is here: keeping them in one place is
//! what makes the sharded/locked ratio a measure of where state lives and nothing else.
//!
//! | question | [`Sharded`] | [`Locked`] |
//! |---|---|---|
//! | the NFs' per-UE stores ([`Stores`]) | a [`ShardMap`] per worker | clones of one shared [`LockedMap`] each |
//! | where a UE-associated NGAP message is handled | the worker its identifiers name | `stream % workers`: one UE's stream stays in order, as with one reader per stream |
//! | where an SBI request is handled | the worker owning the state it names ([`request_owner`]) | where it lands |
//! | hits of a kernel-steered listener | counted | not counted (no path to count) |
//! | shard-aware h2c calls | when configured | never (any worker serves any request) |
//! | an SQN write completed | told to the worker that asked | told to every worker (any may have parked a request behind it) |
//!
//! A host is generic over one [`Placement`] and monomorphic per mode: no dynamic dispatch
//! per message. A new NF with per-UE state adds its maps to [`Stores`] (and their rows to
//! [`Locked::lock_stats`]); nothing else changes with the mode.

use std::hash::Hash;

use http::Method;
use ids::ausf::owner_of_auth_ctx_id;
use ids::udm::owner_of_supi;
use ids::{WorkerId, Workers};
use sbi::paths::{resolve, Route as SbiRoute};
use sbi::{NfType, SbiRequest};
use store::SqnShard;

use crate::amf::registration::{IdleUe, Route, UeContext};
use crate::ausf::AuthContext;
use crate::smf::{self, SmContext};
use crate::state::{ContextMap, LockStats, LockedMap, ShardMap};
use crate::udm::UeRecord;

/// Where the NFs of a host keep their per-UE state and where the host does its work.
pub trait Placement: Sized {
    /// The store of every per-UE map.
    type Map<K: Eq + Hash, V>: ContextMap<K, V> + Default;

    /// Whether SBI requests read from a kernel-steered listener are counted as steered or
    /// misdirected.
    const COUNTS_STEERING: bool;
    /// Whether the host may pick the owner's connection for its h2c calls.
    const SHARD_AWARE_CALLS: bool;
    /// Whether a completed SQN write is told to every worker.
    const SHARES_SQN_DONE: bool;

    /// The stores of one worker's NFs.
    fn stores(&self) -> Stores<Self>;

    /// The worker that handles a UE-associated NGAP message read by `me` on `stream`.
    fn ngap_worker(me: WorkerId, workers: Workers, route: Route, stream: u16) -> WorkerId;

    /// The worker that handles an SBI request for `nf` held by `me`.
    fn sbi_worker(me: WorkerId, workers: Workers, nf: NfType, req: &SbiRequest) -> WorkerId;
}

/// The per-UE stores of one worker's NFs.
pub struct Stores<P: Placement> {
    /// AMF: connected UEs by AMF-UE-NGAP-ID.
    pub amf_ues: P::Map<u64, UeContext>,
    /// AMF: UEs without an N2 connection by 5G-TMSI.
    pub amf_idle: P::Map<u32, IdleUe>,
    /// AUSF: authentication contexts by authCtxId.
    pub ausf_contexts: P::Map<String, AuthContext>,
    /// UDM: per-subscriber records by SUPI.
    pub udm_records: P::Map<String, UeRecord>,
    /// UDM: the SQN shard.
    pub udm_sqn: P::Map<(), SqnShard>,
    /// SMF: SM contexts by ref.
    pub smf_contexts: P::Map<u64, SmContext>,
}

impl<P: Placement> Default for Stores<P> {
    /// Every map new and empty.
    fn default() -> Self {
        Stores {
            amf_ues: Default::default(),
            amf_idle: Default::default(),
            ausf_contexts: Default::default(),
            udm_records: Default::default(),
            udm_sqn: Default::default(),
            smf_contexts: Default::default(),
        }
    }
}

/// Each worker owns its shard; messages and requests go one hop to their owner.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sharded;

impl Placement for Sharded {
    type Map<K: Eq + Hash, V> = ShardMap<K, V>;

    const COUNTS_STEERING: bool = true;
    const SHARD_AWARE_CALLS: bool = true;
    const SHARES_SQN_DONE: bool = false;

    fn stores(&self) -> Stores<Self> {
        Stores::default()
    }

    fn ngap_worker(me: WorkerId, _: Workers, route: Route, _: u16) -> WorkerId {
        route.worker().unwrap_or(me)
    }

    fn sbi_worker(me: WorkerId, workers: Workers, nf: NfType, req: &SbiRequest) -> WorkerId {
        // A lone worker owns everything; reading the path would only find it again.
        if workers.count() <= 1 {
            return me;
        }
        request_owner(nf, &req.method, &req.path, workers).unwrap_or(me)
    }
}

/// The locking baseline: every worker holds clones of the same shared maps and handles
/// whatever it reads. Clone it once per worker; the clones share the maps.
#[derive(Default)]
pub struct Locked {
    shared: Stores<Locked>,
}

impl Clone for Locked {
    fn clone(&self) -> Self {
        let s = &self.shared;
        Locked {
            shared: Stores {
                amf_ues: s.amf_ues.clone(),
                amf_idle: s.amf_idle.clone(),
                ausf_contexts: s.ausf_contexts.clone(),
                udm_records: s.udm_records.clone(),
                udm_sqn: s.udm_sqn.clone(),
                smf_contexts: s.smf_contexts.clone(),
            },
        }
    }
}

impl std::fmt::Debug for Locked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locked").finish_non_exhaustive()
    }
}

impl Locked {
    /// Each shared map: the NF owning it and its name (the `/metrics` labels), in
    /// [`Locked::lock_stats`] order.
    pub const MAPS: [(&'static str, &'static str); 6] = [
        ("amf", "ue_contexts"),
        ("amf", "idle_ues"),
        ("ausf", "auth_contexts"),
        ("udm", "ue_records"),
        ("udm", "sqn"),
        ("smf", "sm_contexts"),
    ];

    /// Each shared map's lock counters, with its NF and name ([`Locked::MAPS`]).
    pub fn lock_stats(&self) -> [(&'static str, &'static str, LockStats); 6] {
        let s = &self.shared;
        let [ues, idle, auth, records, sqn, sm] = Self::MAPS;
        let row = |(nf, map): (&'static str, &'static str), stats| (nf, map, stats);
        [
            row(ues, s.amf_ues.stats()),
            row(idle, s.amf_idle.stats()),
            row(auth, s.ausf_contexts.stats()),
            row(records, s.udm_records.stats()),
            row(sqn, s.udm_sqn.stats()),
            row(sm, s.smf_contexts.stats()),
        ]
    }

    /// The lock counters summed over every shared map.
    pub fn lock_total(&self) -> LockStats {
        let mut t = LockStats::default();
        for (_, _, s) in self.lock_stats() {
            t.acquisitions += s.acquisitions;
            t.contended += s.contended;
        }
        t
    }
}

impl Placement for Locked {
    type Map<K: Eq + Hash, V> = LockedMap<K, V>;

    const COUNTS_STEERING: bool = false;
    const SHARD_AWARE_CALLS: bool = false;
    const SHARES_SQN_DONE: bool = true;

    fn stores(&self) -> Stores<Self> {
        self.clone().shared
    }

    fn ngap_worker(_: WorkerId, workers: Workers, _: Route, stream: u16) -> WorkerId {
        // The baseline handles a message wherever it lands; spreading by SCTP stream keeps
        // one UE's messages (one stream, RFC 9260 §6.6 ordered delivery) in order, as one
        // reader per stream would.
        WorkerId(stream % workers.count())
    }

    fn sbi_worker(me: WorkerId, _: Workers, _: NfType, _: &SbiRequest) -> WorkerId {
        me
    }
}

/// The worker of `workers` owning the state that `method path` at `nf` touches, when the
/// request names it: the worker written into an AUSF authCtxId, hash(SUPI) for the UDM,
/// the worker field of an SM context ref for the SMF. `None` when only the NF can tell (a
/// SUCI is deconcealed where it lands and the UDM forwards it; a new authentication
/// context is created where it lands). Both the server side (where to hand a request) and
/// the shard-aware client (which connection to use) ask this.
pub fn request_owner(
    nf: NfType,
    method: &Method,
    path: &str,
    workers: Workers,
) -> Option<WorkerId> {
    match nf {
        NfType::Ausf => resolve(&[SbiRoute::FiveGAkaConfirmation], method, path)
            .ok()
            .and_then(|m| m.param("authCtxId").map(str::to_owned))
            .and_then(|id| owner_of_auth_ctx_id(&id, workers)),
        NfType::Udm => {
            let routes = [
                SbiRoute::GenerateAuthData,
                SbiRoute::AuthEvents,
                SbiRoute::Amf3GppAccessRegistration,
                SbiRoute::Amf3GppAccessGet,
                SbiRoute::Amf3GppAccessUpdate,
                SbiRoute::SdmSubscriptions,
                SbiRoute::SdmSubscription,
                SbiRoute::AmData,
                SbiRoute::SmfSelectData,
                SbiRoute::Nssai,
            ];
            match resolve(&routes, method, path) {
                Ok(m) => match m.params.first() {
                    Some((_, v)) if v.starts_with("imsi-") => Some(owner_of_supi(v, workers)),
                    _ => None,
                },
                Err(_) => None,
            }
        }
        NfType::Smf => path
            .strip_prefix(smf::NSMF_PDUSESSION)
            .and_then(|p| p.strip_prefix("/sm-contexts/"))
            .and_then(|p| p.split('/').next())
            .and_then(ids::smf::owner_of_sm_context_ref)
            .filter(|w| workers.contains(*w)),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn req(method: Method, path: &str) -> SbiRequest {
        SbiRequest {
            method,
            path: path.to_owned(),
            query: None,
            body: bytes::Bytes::new(),
            content_type: None,
        }
    }

    #[test]
    fn requests_go_to_the_owner_only_when_sharded() {
        let w = Workers::new(4).unwrap();
        let supi = "imsi-001010000000001";
        let owner = owner_of_supi(supi, w);
        let r = req(Method::GET, &format!("/nudm-sdm/v2/{supi}/am-data"));
        let me = WorkerId((owner.0 + 1) % 4);
        assert_eq!(Sharded::sbi_worker(me, w, NfType::Udm, &r), owner);
        assert_eq!(Locked::sbi_worker(me, w, NfType::Udm, &r), me);
        // A SUCI names no owner: handled where it lands in both modes.
        let suci = req(
            Method::POST,
            "/nudm-ueau/v1/suci-0-001-01-0000-0-0-0000000001/security-information/generate-auth-data",
        );
        assert_eq!(Sharded::sbi_worker(me, w, NfType::Udm, &suci), me);
        // An SM context ref names its worker; one of no worker is handled here.
        let sm = req(
            Method::POST,
            "/nsmf-pdusession/v1/sm-contexts/0002000000000001/modify",
        );
        assert_eq!(Sharded::sbi_worker(me, w, NfType::Smf, &sm), WorkerId(2));
        let far = req(
            Method::POST,
            "/nsmf-pdusession/v1/sm-contexts/0009000000000001/modify",
        );
        assert_eq!(Sharded::sbi_worker(me, w, NfType::Smf, &far), me);
    }

    #[test]
    fn ngap_goes_by_route_or_by_stream() {
        let w = Workers::new(3).unwrap();
        let me = WorkerId(0);
        let to2 = Route::ToWorker(WorkerId(2));
        assert_eq!(Sharded::ngap_worker(me, w, to2, 7), WorkerId(2));
        assert_eq!(Sharded::ngap_worker(me, w, Route::ErrorIndication, 7), me);
        assert_eq!(Locked::ngap_worker(me, w, to2, 7), WorkerId(1));
        assert_eq!(Locked::ngap_worker(me, w, to2, 6), WorkerId(0));
    }

    #[test]
    fn locked_clones_share_their_maps_and_sharded_stores_do_not() {
        let locked = Locked::default();
        let mut a = locked.stores();
        let mut b = locked.clone().stores();
        a.udm_records
            .insert("imsi-1".to_owned(), UeRecord::default());
        assert_eq!(b.udm_records.len(), 1);
        assert!(b.udm_records.remove(&"imsi-1".to_owned()).is_some());
        assert!(locked.lock_total().acquisitions >= 3);
        let mut s = Sharded.stores();
        s.udm_records
            .insert("imsi-1".to_owned(), UeRecord::default());
        assert_eq!(Sharded.stores().udm_records.len(), 0);
    }
}
