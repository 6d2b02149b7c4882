//! Which worker a UE-associated NGAP message belongs to, from the self-routing
//! identifiers alone: each one names its owner (`ids::amf`), so no table is consulted.
//!
//! The answer only picks a worker. It proves nothing: the owner still checks the
//! association and the RAN-UE-NGAP-ID against the context before it acts.

use ids::amf::{owner_of_amf_ue_ngap_id, owner_of_new_ue, owner_of_tmsi};
use ids::{WorkerId, Workers};
use proto::ngap::{self, MessageKind, Peek};

/// Where the runtime delivers one NGAP message read from an association.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// Non-UE-associated signalling (NG Setup, Error Indication...): the association's
    /// [`crate::amf::n2::AmfN2`].
    NonUe,
    /// The worker that owns the AMF-UE-NGAP-ID, or the 5G-TMSI of a returning UE.
    ToWorker(WorkerId),
    /// A new UE: the worker picked by a hash of (gNB, RAN-UE-NGAP-ID), so that one gNB's
    /// UEs spread over every worker.
    NewUe {
        /// The worker that will own the new context.
        worker: WorkerId,
        /// The gNB id the hash was taken over.
        gnb_id: u32,
        /// The RAN-UE-NGAP-ID the hash was taken over.
        ran_ue_ngap_id: u32,
    },
    /// No owner can be told (the envelope does not decode, the identifier is missing or
    /// does not decode, or the AMF-UE-NGAP-ID names no worker): handle it on the reading worker, whose [`super::Amf::handle_ngap`]
    /// answers with an ERROR INDICATION.
    ErrorIndication,
}

impl Route {
    /// The worker to deliver to, for the routes that name one.
    pub fn worker(self) -> Option<WorkerId> {
        match self {
            Self::ToWorker(w) | Self::NewUe { worker: w, .. } => Some(w),
            Self::NonUe | Self::ErrorIndication => None,
        }
    }
}

/// The route of one NGAP message received from gNB `gnb_id`. Total: any octets give a
/// route. The message is not decoded here: [`ngap::peek`] reads its kind and identifiers
/// from the octets, and the worker it goes to decodes it once.
pub fn route(bytes: &[u8], gnb_id: u32, workers: Workers) -> Route {
    let Ok(p) = ngap::peek(bytes) else {
        return Route::ErrorIndication;
    };
    match p.kind {
        MessageKind::InitialUeMessage => {
            // A returning UE goes back to the worker that allocated its 5G-TMSI, which
            // holds its security context.
            if let Some(w) = p.five_g_s_tmsi.and_then(|s| owner_of_tmsi(s.tmsi, workers)) {
                return Route::ToWorker(w);
            }
            let Some(ran_ue_ngap_id) = p.ran_ue_ngap_id else {
                return Route::ErrorIndication;
            };
            Route::NewUe {
                worker: owner_of_new_ue(gnb_id, ran_ue_ngap_id, workers),
                gnb_id,
                ran_ue_ngap_id,
            }
        }
        kind if Peek::walks(kind) => match p.amf_ue_ngap_id {
            Some(id) => {
                owner_of_amf_ue_ngap_id(id, workers).map_or(Route::ErrorIndication, Route::ToWorker)
            }
            None => Route::ErrorIndication,
        },
        _ => Route::NonUe,
    }
}
