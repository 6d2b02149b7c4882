//! Which worker a UE-associated NGAP message belongs to, from the self-routing
//! identifiers alone (DESIGN.md "Identifiers and ownership").
//!
//! The answer only picks a worker. It proves nothing: the owner still checks the
//! association and the RAN-UE-NGAP-ID against the context before it acts.

use ids::amf::{owner_of_amf_ue_ngap_id, owner_of_new_ue, owner_of_tmsi};
use ids::{WorkerId, Workers};
use proto::ngap::{self, InitialUeMessage, MessageKind};

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
    /// No owner can be told (the message does not decode, or its AMF-UE-NGAP-ID names no
    /// worker): handle it on the reading worker, whose [`super::Amf::handle_ngap`]
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
/// route.
pub fn route(bytes: &[u8], gnb_id: u32, workers: Workers) -> Route {
    let Ok(pdu) = ngap::decode(bytes) else {
        return Route::ErrorIndication;
    };
    match pdu.kind() {
        MessageKind::InitialUeMessage => {
            let Ok(m) = InitialUeMessage::parse(&pdu) else {
                return Route::ErrorIndication;
            };
            // A returning UE goes back to the worker that allocated its 5G-TMSI, which
            // holds its security context.
            if let Some(w) = m.five_g_s_tmsi.and_then(|s| owner_of_tmsi(s.tmsi, workers)) {
                return Route::ToWorker(w);
            }
            Route::NewUe {
                worker: owner_of_new_ue(gnb_id, m.ran_ue_ngap_id, workers),
                gnb_id,
                ran_ue_ngap_id: m.ran_ue_ngap_id,
            }
        }
        MessageKind::UplinkNasTransport
        | MessageKind::NasNonDeliveryIndication
        | MessageKind::InitialContextSetupResponse
        | MessageKind::InitialContextSetupFailure
        | MessageKind::UeContextReleaseRequest
        | MessageKind::UeContextReleaseComplete
        | MessageKind::PduSessionResourceSetupResponse
        | MessageKind::PduSessionResourceReleaseResponse => match pdu.ue_ngap_ids().0 {
            Some(id) => {
                owner_of_amf_ue_ngap_id(id, workers).map_or(Route::ErrorIndication, Route::ToWorker)
            }
            None => Route::ErrorIndication,
        },
        _ => Route::NonUe,
    }
}
