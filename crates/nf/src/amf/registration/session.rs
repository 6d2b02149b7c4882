//! The AMF's part of UE-requested PDU session establishment and release (TS 23.502
//! §4.3.2.2.1, §4.3.4.2): it relays 5GSM messages between the UE (UL/DL NAS TRANSPORT,
//! TS 24.501 §5.4.5) and the SMF (Nsmf_PDUSession CreateSMContext / UpdateSMContext, TS
//! 29.502), serves Namf_Communication N1N2MessageTransfer (TS 29.518 §5.2.2.3.1) and turns
//! its N2 SM information into PDU SESSION RESOURCE SETUP / RELEASE COMMAND (TS 38.413
//! §8.2.1, §8.2.2).
//!
//! # Routing of N1N2MessageTransfer
//!
//! The SMF names the UE by SUPI in the path (`ue-contexts/{supi}`). Each worker keeps a
//! SUPI → AMF-UE-NGAP-ID index of the UEs whose SM contexts it created; the SMF shard that
//! answers is the one the AMF called in-process, i.e. the same worker, so the transfer comes
//! back to the worker holding the index entry (in the sharded mode the UE's owner; in the
//! locked baseline the UE map is shared and any worker's entry finds it).
//!
//! # When the SMF does not answer, or answers too late
//!
//! - An Nsmf call that fails without an N1 SM message for the UE (no answer before the
//!   call timeout, the SMF unreachable, an error without `n1SmMsg`) sends the UE's own 5GSM
//!   message back in a DL NAS TRANSPORT with 5GMM cause #90 "payload was not forwarded"
//!   (TS 24.501 §5.4.5.2.5, §5.4.5.3.1 case e): the UE stops waiting (T3580) and may try
//!   again. A refusal with an N1 SM message (the SMF's PDU SESSION ESTABLISHMENT REJECT)
//!   goes to the UE as it is.
//! - The AMF owns the UE's list of PDU sessions and releases their SM contexts when the UE
//!   context goes (TS 23.502 §4.2.2.3.2 step 2). A CreateSMContext answered 201 for a UE
//!   context that is gone, or for a PDU session the UE context no longer holds, is released
//!   the same way at once (Nsmf ReleaseSMContext, [`SessionStats::orphans_released`]); an
//!   N1N2MessageTransfer to set up a session the UE context does not hold is refused, and
//!   the SMF then releases it itself.

use std::time::Instant;

use http::{Method, StatusCode};
use proto::ids::Snssai;
use proto::nas::sm_ue::{
    DlNasTransport, SmMessage, UlNasTransport, PAYLOAD_N1_SM, REQUEST_INITIAL,
};
use proto::nas::{Direction, FiveGmmCause, SecurityHeaderType};
use proto::ngap::{
    self as ngap, PduSessionResourceReleaseCommand, PduSessionResourceReleaseResponse,
    PduSessionResourceSetupRequest, PduSessionResourceSetupResponse, PduSessionSetupItem,
    PduSessionTransferItem,
};
use sbi::discovery::NfType;
use sbi::message::decode_json;
use sbi::model::{
    HexBytes, N1N2MessageTransferReqData, N1N2MessageTransferRspData, PlmnId, ProblemDetails,
    RefToBinaryData, SmContextCreateData, SmContextReleaseData, SmContextUpdateData,
    SmContextUpdatedData,
};
use sbi::multipart::{self, Part};
use sbi::problem::Cause;
use sbi::validate::{self, decode_valid, query, Violation};
use sbi::{SbiRequest, SbiResponse};
use tracing::debug;

use super::{Action, Amf, CallKind, Local, UeContext, UeState};
use crate::state::ContextMap;

/// `{apiRoot}/nsmf-pdusession/v1/sm-contexts`.
const SM_CONTEXTS: &str = "/nsmf-pdusession/v1/sm-contexts";
/// `{apiRoot}/namf-comm/v1/ue-contexts/`.
const UE_CONTEXTS: &str = "/namf-comm/v1/ue-contexts/";
/// Content-Id of the N1 part of the AMF's requests.
const N1_ID: &str = "n1SmMsg";
/// Content-Id of the N2 part.
const N2_ID: &str = "n2SmInfo";
/// 5GSM message type of PDU SESSION RELEASE COMPLETE (TS 24.501 §9.7 table 9.7.1).
const RELEASE_COMPLETE: u8 = 0xd4;

/// Where a PDU session stands, as the AMF sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// CreateSMContext sent.
    Creating,
    /// The SMF created the context; N2 setup not yet answered by the gNB.
    Activating,
    /// The gNB's tunnel went to the SMF.
    Active,
    /// Release command sent to the gNB and UE.
    Releasing,
}

/// One PDU session of a UE.
#[derive(Debug, Clone)]
pub struct PduSession {
    /// PDU session id.
    pub psi: u8,
    /// The SM context ref (last segment of the `Location` the SMF answered).
    pub sm_ref: Option<String>,
    /// State.
    pub state: SessionState,
    /// Slice.
    pub snssai: Snssai,
    /// The gNB's PDU Session Resource Setup Response Transfer when it came before the SMF's
    /// 201: over h2c the N1N2MessageTransfer (TS 23.502 §4.3.2.2.1 step 11) and the 201 of
    /// CreateSMContext (step 5) travel on different connections and may arrive in either
    /// order, so the UpdateSMContext (step 15) waits here for the SM context ref.
    pub pending_setup: Option<Vec<u8>>,
}

crate::summed_counters! {
    /// Session counters of one AMF worker.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct SessionStats {
        /// CreateSMContext calls.
        pub create_calls: u64,
        /// Contexts the SMF created (201).
        pub created: u64,
        /// Establishments the SMF refused.
        pub rejected: u64,
        /// N1N2MessageTransfers served (200).
        pub n1n2: u64,
        /// N1N2MessageTransfers refused (unknown UE, bad body).
        pub n1n2_refused: u64,
        /// PDU SESSION RESOURCE SETUP REQUESTs sent.
        pub setup_requests: u64,
        /// Sessions the SMF reported ACTIVATED.
        pub activated: u64,
        /// PDU SESSION RESOURCE RELEASE COMMANDs sent.
        pub release_commands: u64,
        /// Sessions removed after release.
        pub released: u64,
        /// UL NAS TRANSPORTs that were not acted on.
        pub dropped: u64,
        /// SM contexts released because their UE context went (ReleaseSMContext answered 2xx).
        pub released_with_ue: u64,
        /// ReleaseSMContexts of gone UEs that failed (the SMF answered an error or not at all).
        pub release_failures: u64,
        /// 5GSM messages sent back to the UE with 5GMM cause #90: the Nsmf call carrying them
        /// failed without an N1 SM message for the UE.
        pub not_forwarded: u64,
        /// SM contexts released because their CreateSMContext answer came for a UE context, or
        /// a PDU session, that was gone (ReleaseSMContext answered 2xx; failures count in
        /// `release_failures`).
        pub orphans_released: u64,
    }
}

/// An Nsmf reply with the headers the AMF reads.
pub(super) struct SmReply<'a> {
    pub(super) status: StatusCode,
    pub(super) location: Option<&'a str>,
    pub(super) content_type: Option<&'a str>,
    pub(super) body: &'a [u8],
    /// The UE's 5GSM message the call carried, if any.
    pub(super) sent: Option<Vec<u8>>,
}

/// The SM context ref of a created SM context: the last segment of its `Location`.
fn sm_ref_of(location: Option<&str>) -> Option<String> {
    location
        .and_then(|l| l.rsplit('/').next())
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
}

/// The JSON part and the binary parts of a body, multipart or plain JSON.
fn split_body(content_type: Option<&str>, body: &[u8]) -> Option<(bytes::Bytes, Vec<Part>)> {
    let ct = content_type.unwrap_or("");
    if ct.to_ascii_lowercase().starts_with("multipart/") {
        let parts = multipart::decode(ct, body).ok()?;
        let json = multipart::json_part(&parts)?.body.clone();
        Some((json, parts))
    } else {
        Some((bytes::Bytes::copy_from_slice(body), Vec::new()))
    }
}

fn part(parts: &[Part], r: Option<&RefToBinaryData>) -> Option<Vec<u8>> {
    r.and_then(|r| multipart::find_part(parts, &r.content_id))
        .map(|p| p.body.to_vec())
}

fn to_model_snssai(s: Snssai) -> sbi::model::Snssai {
    sbi::model::Snssai {
        sst: s.sst,
        sd: s.sd.map(|sd| {
            let b = sd.to_be_bytes();
            HexBytes([b[1], b[2], b[3]])
        }),
    }
}

pub(super) fn from_model_snssai(s: &sbi::model::Snssai) -> Snssai {
    Snssai {
        sst: s.sst,
        sd: s.sd.map(|h| {
            let b = h.as_bytes();
            u32::from_be_bytes([0, b[0], b[1], b[2]])
        }),
    }
}

/// The `ueContextId` of an N1N2MessageTransfer path (TS 29.518 §6.1.3.5.3.1).
fn n1n2_supi(path: &str) -> Option<&str> {
    path.strip_prefix(UE_CONTEXTS)
        .and_then(|r| r.strip_suffix("/n1-n2-messages"))
        .filter(|s| !s.contains('/'))
}

/// The prefix of the callback URIs the AMF gives its peers (TS 29.518 leaves their form to
/// the AMF).
pub(super) const CALLBACKS: &str = "/namf-callback/v1/";

/// A UE's callback the AMF serves for the UDM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UeCallback {
    /// `deregCallbackUri`: Nudm_UECM_DeregistrationNotification.
    Deregistration,
    /// An SDM subscription's `callbackReference`: Nudm_SDM_Notification.
    SdmChange,
}

/// The SUPI and kind of a UE callback path, `/namf-callback/v1/{supi}/dereg-notify` or
/// `/namf-callback/v1/{supi}/sdm-notify`.
fn ue_callback(path: &str) -> Option<(&str, UeCallback)> {
    let rest = path.strip_prefix(CALLBACKS)?;
    let (supi, kind) = rest.split_once('/')?;
    let kind = match kind {
        "dereg-notify" => UeCallback::Deregistration,
        "sdm-notify" => UeCallback::SdmChange,
        _ => return None,
    };
    (!supi.is_empty()).then_some((supi, kind))
}

/// Checks an N1N2MessageTransfer's N1 SM message against its JSON (TS 29.518 §6.1.6.2.1):
/// a 5GSM message whose header names the body's PDU session (TS 24.007 §11.2.3.1b), and,
/// where it carries an S-NSSAI (a PDU SESSION ESTABLISHMENT ACCEPT, TS 24.501 §8.3.2), the
/// slice of the N2 SM information. A mismatch is 400 MANDATORY_IE_INCORRECT naming the N1
/// message container.
#[allow(clippy::result_large_err)]
fn check_sm_parts(
    data: &N1N2MessageTransferReqData,
    n1: Option<&[u8]>,
) -> Result<(), ProblemDetails> {
    let (Some(c), Some(n1)) = (&data.n1_message_container, n1) else {
        return Ok(());
    };
    if c.n1_message_class != "SM" {
        return Ok(());
    }
    let sm = data
        .n2_info_container
        .as_ref()
        .and_then(|c| c.sm_info.as_ref());
    let psi = data.pdu_session_id.or(sm.map(|s| s.pdu_session_id));
    // Octet 1 the extended protocol discriminator of 5GSM, octet 2 the PDU session
    // identity (TS 24.501 §9.2, §9.4).
    let reason = match n1 {
        [0x2e, id, ..] if Some(*id) == psi => None,
        [0x2e, ..] => Some("TS 24.007 §11.2.3.1b: the N1 message names another PDU session"),
        _ => Some("TS 24.501 §9.2: not a 5GSM message"),
    };
    let reason = reason.or_else(|| match SmMessage::parse(n1) {
        Ok(SmMessage::EstablishmentAccept(a)) => {
            let n2 = sm.and_then(|s| s.s_nssai.as_ref()).map(from_model_snssai);
            match (a.snssai, n2) {
                (Some(a), Some(b)) if a != b => {
                    Some("TS 24.501 §8.3.2: the N1 message's S-NSSAI differs from sNssai")
                }
                _ => None,
            }
        }
        _ => None,
    });
    match reason {
        None => Ok(()),
        Some(reason) => Err(validate::problem(
            Cause::MandatoryIeIncorrect,
            &[Violation {
                param: "/n1MessageContainer".to_owned(),
                missing: false,
                reason,
            }],
        )),
    }
}

impl<M, P> Amf<M, P>
where
    M: ContextMap<u64, UeContext>,
    P: ContextMap<u32, super::IdleUe>,
{
    /// Session counters.
    pub fn session_stats(&self) -> SessionStats {
        self.local.sm_stats
    }

    /// Whether this AMF shard should answer a request for `path`: false only for an
    /// N1N2MessageTransfer naming a UE whose SM contexts another shard created (the SUPI in
    /// the path does not say which worker holds the UE, so a runtime whose transfers can
    /// land on any worker, h2c from a remote SMF, asks the others in turn).
    pub fn holds_n1n2_target(&self, path: &str) -> bool {
        match (n1n2_supi(path), ue_callback(path)) {
            (Some(supi), _) => self.local.supi_index.contains_key(supi),
            (None, Some((supi, _))) => {
                self.local.connected_supi.contains_key(supi)
                    || self.local.supi_index.contains_key(supi)
                    || self.idle_supi.contains_key(supi)
            }
            (None, None) => true,
        }
    }

    /// An SBI request to the AMF: Namf_Communication N1N2MessageTransfer (TS 29.518
    /// §5.2.2.3.1), and the UDM's deregistration notification to the `deregCallbackUri`.
    pub fn handle_request(&mut self, now: Instant, req_id: u64, req: SbiRequest) {
        match ue_callback(&req.path).map(|(s, k)| (s.to_owned(), k)) {
            Some((supi, UeCallback::Deregistration)) => {
                self.on_dereg_notify(now, req_id, &supi, &req)
            }
            Some((supi, UeCallback::SdmChange)) => self.on_sdm_notify(req_id, &supi, &req),
            None => self.on_request(req_id, req),
        }
        self.flush();
    }

    /// Nudm_SDM_Notification (TS 29.503 §5.2.2.3.5): the UE's subscription data changed at
    /// the UDM. A context kept for a UE without an N2 connection is dropped, so that its next
    /// registration reads the new data; a connected UE keeps what its registration read until
    /// it registers again. 204, or 404 CONTEXT_NOT_FOUND for a SUPI this AMF holds nothing
    /// for.
    fn on_sdm_notify(&mut self, req_id: u64, supi: &str, req: &SbiRequest) {
        let Some(data) = self
            .local
            .callback_body::<sbi::model::ModificationNotification>(req_id, req)
        else {
            return;
        };
        let l = &mut self.local;
        let connected = l.connected_supi.contains_key(supi) || l.supi_index.contains_key(supi);
        let idle = self.idle_supi.contains_key(supi);
        if !connected && !idle {
            return self.local.respond(
                req_id,
                ProblemDetails::context_not_found(format!("no UE context {supi}")),
            );
        }
        self.forget_idle(supi);
        let l = &mut self.local;
        l.stats.sdm_notifications += 1;
        tracing::info!(%supi, items = data.notify_items.len(), "UDM subscription data changed");
        l.emit(Action::Respond {
            req_id,
            response: SbiResponse::no_content(),
        });
    }

    /// Nudm_UECM_DeregistrationNotification (TS 29.503 §5.3.2.2.3): another AMF took the UE
    /// (TS 23.502 §4.2.2.2.2 step 14) or the subscription was withdrawn. The UE context
    /// goes: a connected UE's N2 connection is released, an idle context dropped. 204, or
    /// 404 CONTEXT_NOT_FOUND when this AMF holds none for the SUPI.
    fn on_dereg_notify(&mut self, now: Instant, req_id: u64, supi: &str, req: &SbiRequest) {
        let Some(data) = self
            .local
            .callback_body::<sbi::model::DeregistrationData>(req_id, req)
        else {
            return;
        };
        let l = &mut self.local;
        let id = l
            .connected_supi
            .get(supi)
            .or_else(|| l.supi_index.get(supi))
            .copied();
        let connected = match id {
            Some(id) => self.ues.with(&id, |u| {
                let ue = u?;
                l.release(now, ue, proto::ngap::NasCause::Deregister.into(), false);
                Some(l.take())
            }),
            None => None,
        };
        let idle = self.idle_supi.contains_key(supi);
        if connected.is_none() && !idle {
            return self.local.respond(
                req_id,
                ProblemDetails::context_not_found(format!("no UE context {supi}")),
            );
        }
        if let Some(effects) = connected {
            self.apply(effects);
        }
        self.forget_idle(supi);
        let l = &mut self.local;
        l.stats.dereg_notifications += 1;
        tracing::info!(%supi, reason = %data.dereg_reason, "UDM deregistration notification: UE context dropped");
        l.emit(Action::Respond {
            req_id,
            response: SbiResponse::no_content(),
        });
    }

    fn on_request(&mut self, req_id: u64, req: SbiRequest) {
        let l = &mut self.local;
        let supi = n1n2_supi(&req.path).map(str::to_owned);
        let Some(supi) = supi else {
            return l.respond(req_id, ProblemDetails::resource_not_found(&req.path));
        };
        if req.method != Method::POST {
            return l.respond(
                req_id,
                ProblemDetails::method_not_allowed(req.method.as_str(), &req.path),
            );
        }
        // TS 29.518 §6.1.3.5.4: N1N2MessageTransfer takes no query parameter.
        if let Err(p) = query::check(req.query.as_deref(), query::NONE) {
            l.sm_stats.n1n2_refused += 1;
            return l.respond(req_id, p);
        }
        let outcome = match l.supi_index.get(&supi).copied() {
            Some(id) => self.ues.with(&id, |u| {
                let ue = u?;
                let r = l.n1n2(ue, &supi, &req);
                Some((r, l.take()))
            }),
            None => None,
        };
        let Some((r, effects)) = outcome else {
            let l = &mut self.local;
            l.sm_stats.n1n2_refused += 1;
            return l.respond(
                req_id,
                ProblemDetails::context_not_found(format!("no UE context {supi}")),
            );
        };
        self.apply(effects);
        let l = &mut self.local;
        match r {
            Ok(()) => {
                l.sm_stats.n1n2 += 1;
                let body = N1N2MessageTransferRspData {
                    cause: "N1_N2_TRANSFER_INITIATED".into(),
                };
                l.emit(Action::Respond {
                    req_id,
                    response: SbiResponse::json(StatusCode::OK, &body),
                });
            }
            Err(p) => {
                l.sm_stats.n1n2_refused += 1;
                l.respond(req_id, p);
            }
        }
    }
}

impl Local {
    /// The JSON body of a POST to one of the AMF's callbacks, or `None` once the request is
    /// answered with its problem (405 for another method, 400/415 for the body).
    fn callback_body<T: serde::de::DeserializeOwned>(
        &mut self,
        req_id: u64,
        req: &SbiRequest,
    ) -> Option<T> {
        if req.method != Method::POST {
            self.respond(
                req_id,
                ProblemDetails::method_not_allowed(req.method.as_str(), &req.path),
            );
            return None;
        }
        match sbi::parse_json(req) {
            Ok(d) => Some(d),
            Err(p) => {
                self.respond(req_id, p);
                None
            }
        }
    }

    /// UL NAS TRANSPORT from a UE (TS 24.501 §5.4.5.2.2): `plain` is the verified 5GMM
    /// message.
    pub(super) fn on_ul_nas_transport(&mut self, ue: &mut UeContext, plain: &[u8]) {
        let ul = match UlNasTransport::parse(plain) {
            Ok(m) => m,
            Err(e) => {
                debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, error = %e, "UL NAS TRANSPORT refused");
                self.sm_stats.dropped += 1;
                return;
            }
        };
        // §5.4.5.2.5: only N1 SM payloads of registered UEs with a PDU session id are
        // forwarded; anything else is dropped (this AMF relays no other payload type).
        let (Some(psi), true, Some(supi)) = (
            ul.pdu_session_id,
            ul.payload_container_type == PAYLOAD_N1_SM && ue.state == UeState::Registered,
            ue.supi.clone(),
        ) else {
            self.sm_stats.dropped += 1;
            return;
        };
        if let Some(i) = ue.sessions.iter().position(|s| s.psi == psi) {
            let (state, sm_ref) = match ue.sessions.get(i) {
                Some(s) => (s.state, s.sm_ref.clone()),
                None => return,
            };
            if state == SessionState::Releasing {
                // TS 23.502 §4.3.4.2 step 10: the SMF already dropped the context when it
                // released it; the RELEASE COMPLETE ends the session here.
                if ul.payload.get(3) == Some(&RELEASE_COMPLETE) {
                    ue.sessions.remove(i);
                    self.sm_stats.released += 1;
                    self.unindex(ue);
                }
                return;
            }
            let Some(sm_ref) = sm_ref else {
                self.sm_stats.dropped += 1;
                return;
            };
            let data = SmContextUpdateData {
                n1_sm_msg: Some(RefToBinaryData::new(N1_ID)),
                ..Default::default()
            };
            return self.sm_call(
                ue,
                CallKind::SmUpdate(psi),
                format!("{SM_CONTEXTS}/{sm_ref}/modify"),
                &data,
                Some(ul.payload),
                None,
            );
        }
        if ul.request_type.is_some_and(|t| t != REQUEST_INITIAL) {
            self.sm_stats.dropped += 1;
            return;
        }
        let snssai = ul
            .snssai
            .or_else(|| ue.allowed_nssai.first().copied())
            .unwrap_or(Snssai { sst: 1, sd: None });
        let g = &self.cfg.guami;
        let (Some(plmn), Some(guami)) = (
            PlmnId::new(&g.plmn.mcc_str(), &g.plmn.mnc_str()),
            self.sbi_guami(),
        ) else {
            self.sm_stats.dropped += 1;
            return;
        };
        // TS 23.502 §4.3.2.2.1 step 2: without a DNN from the UE, the subscribed default
        // for the slice, if the SMF selection data gave one.
        let dnn = ul.dnn.clone().or_else(|| {
            ue.default_dnns
                .iter()
                .find(|(s, _)| *s == snssai)
                .map(|(_, d)| d.clone())
        });
        let data = SmContextCreateData {
            supi: Some(supi.clone()),
            pdu_session_id: Some(psi),
            dnn,
            s_nssai: Some(to_model_snssai(snssai)),
            serving_nf_id: self.cfg.instance_id.clone(),
            guami: Some(guami),
            serving_network: plmn.into(),
            request_type: Some("INITIAL_REQUEST".into()),
            n1_sm_msg: Some(RefToBinaryData::new(N1_ID)),
            an_type: "3GPP_ACCESS".into(),
            sm_context_status_uri: format!(
                "{}/namf-callback/v1/sm-context-status",
                self.cfg.api_root
            ),
        };
        ue.sessions.push(PduSession {
            psi,
            sm_ref: None,
            state: SessionState::Creating,
            snssai,
            pending_setup: None,
        });
        self.supi_index.insert(supi, ue.amf_ue_ngap_id);
        self.sm_stats.create_calls += 1;
        self.sm_call(
            ue,
            CallKind::SmCreate(psi),
            SM_CONTEXTS.to_owned(),
            &data,
            Some(ul.payload),
            None,
        );
    }

    /// A multipart Nsmf call: the JSON and the N1 and/or N2 parts.
    fn sm_call<T: serde::Serialize>(
        &mut self,
        ue: &UeContext,
        kind: CallKind,
        path: String,
        json: &T,
        n1: Option<Vec<u8>>,
        n2: Option<Vec<u8>>,
    ) {
        let Ok(json) = serde_json::to_vec(json) else {
            return;
        };
        let mut parts = vec![Part::json(json)];
        let sent = n1.clone();
        if let Some(n1) = n1 {
            parts.push(Part::binary(multipart::NAS_5G, N1_ID, n1));
        }
        if let Some(n2) = n2 {
            parts.push(Part::binary(multipart::NGAP, N2_ID, n2));
        }
        let Ok(body) = multipart::encode(&parts) else {
            self.sm_stats.dropped += 1;
            return;
        };
        let call_id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        self.calls.insert(call_id, (ue.amf_ue_ngap_id, kind));
        if let Some(n1) = sent {
            self.sm_n1.insert(call_id, n1);
        }
        self.emit(Action::Call {
            call_id,
            nf: NfType::Smf,
            method: Method::POST,
            path,
            content_type: multipart::CONTENT_TYPE,
            body,
        });
    }

    /// The UE context goes (deregistration, AN release): its sessions do not survive the N2
    /// connection here (no idle-mode sessions or Service Request yet), so each SM context
    /// is released (TS 29.502 §5.2.2.4) and the UPF's rules with it.
    pub(super) fn release_sm_contexts(&mut self, ue: &mut UeContext) {
        let sessions = std::mem::take(&mut ue.sessions);
        self.unindex(ue);
        for s in sessions {
            // A session still being created has no ref yet: released when its 201 comes
            // (`orphan_created`).
            if let Some(sm_ref) = s.sm_ref {
                let kind = CallKind::SmRelease;
                let call = self.release_call(
                    ue.amf_ue_ngap_id,
                    kind,
                    &sm_ref,
                    "REL_DUE_TO_UE_DEREGISTRATION",
                );
                if let Some(call) = call {
                    let who = ue.who().to_owned();
                    self.releasing
                        .insert(call, (who, ue.assoc, ue.ran_ue_ngap_id));
                }
            }
        }
    }

    /// Nsmf ReleaseSMContext (TS 29.502 §5.2.2.4) of `sm_ref`, made for UE `amf_ue_ngap_id`;
    /// the call's id.
    fn release_call(
        &mut self,
        amf_ue_ngap_id: u64,
        kind: CallKind,
        sm_ref: &str,
        cause: &str,
    ) -> Option<u64> {
        let body = SmContextReleaseData {
            cause: Some(cause.into()),
        };
        let body = serde_json::to_vec(&body).ok()?;
        let call_id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        self.calls.insert(call_id, (amf_ue_ngap_id, kind));
        self.emit(Action::Call {
            call_id,
            nf: NfType::Smf,
            method: Method::POST,
            path: format!("{SM_CONTEXTS}/{sm_ref}/release"),
            content_type: multipart::JSON,
            body: body.into(),
        });
        Some(call_id)
    }

    /// The answer to the ReleaseSMContext of an ended UE context: a failure gets the UE's
    /// failure line (the SMF keeps a session the UE no longer has).
    pub(super) fn on_sm_released(&mut self, call_id: u64, status: StatusCode, body: &[u8]) {
        let who = self.releasing.remove(&call_id);
        if status.is_success() {
            self.sm_stats.released_with_ue += 1;
            return;
        }
        self.sm_stats.release_failures += 1;
        let cause = super::answer_cause(status, body);
        let (ue, assoc, ran_ue_ngap_id) = who.unwrap_or_else(|| ("unidentified".to_owned(), 0, 0));
        // Its own callsite, not `log_failure`'s: the test that reads this line captures the
        // log with a thread-local subscriber, and a callsite other tests hit on other
        // threads can have its interest cached without it (as sbi's refusal_log.rs notes).
        tracing::info!(
            ue = %ue,
            assoc,
            ran_ue_ngap_id,
            procedure = %"PDU session release",
            cause = %format_args!("ReleaseSMContext {cause}"),
            peer = %"SMF",
            "UE procedure failed"
        );
    }

    /// The answer to CreateSMContext for PDU session `psi` of UE `amf_ue_ngap_id`, which
    /// no longer holds that session (or is gone): a created SM context is released, as the
    /// AMF releases its UEs' sessions (TS 23.502 §4.2.2.3.2 step 2).
    pub(super) fn orphan_created(
        &mut self,
        amf_ue_ngap_id: u64,
        psi: u8,
        status: StatusCode,
        location: Option<&str>,
    ) {
        if status != StatusCode::CREATED {
            return;
        }
        let Some(sm_ref) = sm_ref_of(location) else {
            debug!(amf_ue_ngap_id, psi, "orphan SM context without a Location");
            return;
        };
        debug!(
            amf_ue_ngap_id,
            psi, sm_ref, "SM context created for a session that is gone"
        );
        let kind = CallKind::SmOrphan;
        self.release_call(
            amf_ue_ngap_id,
            kind,
            &sm_ref,
            "REL_DUE_TO_UNSPECIFIED_REASON",
        );
    }

    pub(super) fn on_orphan_released(&mut self, status: StatusCode) {
        if status.is_success() {
            self.sm_stats.orphans_released += 1;
        } else {
            self.sm_stats.release_failures += 1;
            debug!(%status, "ReleaseSMContext of an orphan failed");
        }
    }

    /// Drops the UE's index entry once it has no session left.
    fn unindex(&mut self, ue: &UeContext) {
        if ue.sessions.is_empty() {
            if let Some(supi) = &ue.supi {
                self.supi_index.remove(supi);
            }
        }
    }

    /// The answer to CreateSMContext.
    pub(super) fn on_sm_created(&mut self, ue: &mut UeContext, psi: u8, r: SmReply<'_>) {
        if r.status == StatusCode::CREATED {
            let sm_ref = sm_ref_of(r.location);
            // The one session this call was made for: its ref is still to come.
            let waiting = ue
                .sessions
                .iter_mut()
                .find(|s| s.psi == psi && s.sm_ref.is_none());
            let Some(s) = waiting else {
                return self.orphan_created(ue.amf_ue_ngap_id, psi, r.status, r.location);
            };
            s.sm_ref = sm_ref.clone();
            if s.state == SessionState::Creating {
                s.state = SessionState::Activating;
            }
            let pending = s.pending_setup.take();
            self.sm_stats.created += 1;
            if let (Some(sm_ref), Some(transfer)) = (sm_ref, pending) {
                self.setup_to_smf(ue, psi, &sm_ref, transfer);
            }
            return;
        }
        // TS 29.502 §5.2.2.2.1: a refusal may carry the N1 PDU SESSION ESTABLISHMENT
        // REJECT, which goes to the UE (TS 23.502 §4.3.2.2.1 step 3 onwards).
        self.sm_stats.rejected += 1;
        ue.sessions.retain(|s| s.psi != psi);
        self.unindex(ue);
        let err = split_body(r.content_type, r.body).and_then(|(json, parts)| {
            let err: sbi::model::SmContextCreateError = decode_json(&json).ok()?;
            Some((err.error, parts, err.n1_sm_msg))
        });
        // The SMF's application cause names why (DNN_DENIED, ...); without a body, the
        // status.
        let cause = err
            .as_ref()
            .and_then(|(p, _, _)| p.cause.clone())
            .unwrap_or_else(|| r.status.to_string());
        let n1 = err.and_then(|(_, parts, n1)| part(&parts, n1.as_ref()));
        // The 5GSM cause the UE gets, by name, beside the SMF's application cause.
        let sm_cause = n1
            .as_deref()
            .and_then(rejected_sm_cause)
            .map(|c| format!(", 5GSM cause {c}"))
            .unwrap_or_default();
        ue.log_failure(
            "PDU session establishment",
            &format_args!("{cause}{sm_cause} (PDU session {psi})"),
            Some(sbi::discovery::NfType::Smf),
        );
        match (n1, r.sent) {
            (Some(n1), _) => self.send_dl_nas_transport(ue, psi, n1),
            (None, Some(sent)) => self.send_back(ue, psi, sent),
            (None, None) => {}
        }
    }

    /// The answer to UpdateSMContext.
    pub(super) fn on_sm_updated(&mut self, ue: &mut UeContext, psi: u8, r: SmReply<'_>) {
        if r.status == StatusCode::NO_CONTENT {
            return;
        }
        if !r.status.is_success() {
            debug!(amf_ue_ngap_id = ue.amf_ue_ngap_id, psi, status = %r.status, "UpdateSMContext failed");
            // The UE waits for an answer to the 5GSM message the update carried; an N2-only
            // update leaves the UE nothing to wait for.
            let n1 = split_body(r.content_type, r.body).and_then(|(json, parts)| {
                let err: sbi::model::SmContextUpdateError = decode_json(&json).ok()?;
                part(&parts, err.n1_sm_msg.as_ref())
            });
            match (n1, r.sent) {
                (Some(n1), _) => self.send_dl_nas_transport(ue, psi, n1),
                (None, Some(sent)) => self.send_back(ue, psi, sent),
                (None, None) => {}
            }
            return;
        }
        let Some((json, parts)) = split_body(r.content_type, r.body) else {
            return;
        };
        let Ok(data) = decode_json::<SmContextUpdatedData>(&json) else {
            return;
        };
        match data.n2_sm_info_type.as_deref() {
            // TS 23.502 §4.3.4.2 step 3b-4: the release command goes to gNB and UE.
            Some("PDU_RES_REL_CMD") => {
                let n1 = part(&parts, data.n1_sm_msg.as_ref());
                let n2 = part(&parts, data.n2_sm_info.as_ref()).unwrap_or_default();
                if let Some(s) = ue.sessions.iter_mut().find(|s| s.psi == psi) {
                    s.state = SessionState::Releasing;
                }
                // An answer to the AMF's own call: there is no one to tell that the command
                // did not encode, so it is dropped.
                let _ = self.send_release_command(ue, psi, n1, n2);
            }
            _ if data.up_cnx_state.as_deref() == Some("ACTIVATED") => {
                if let Some(s) = ue.sessions.iter_mut().find(|s| s.psi == psi) {
                    if s.state != SessionState::Active {
                        s.state = SessionState::Active;
                        self.sm_stats.activated += 1;
                    }
                }
            }
            _ => {}
        }
    }

    /// PDU SESSION RESOURCE SETUP RESPONSE (TS 38.413 §8.2.1.2): each set-up session's
    /// transfer goes to its SMF (TS 23.502 §4.3.2.2.1 step 15).
    pub(super) fn on_setup_response(
        &mut self,
        ue: &mut UeContext,
        m: PduSessionResourceSetupResponse,
    ) {
        for item in m.setup {
            let Some(s) = ue
                .sessions
                .iter_mut()
                .find(|s| s.psi == item.pdu_session_id)
            else {
                continue;
            };
            match s.sm_ref.clone() {
                Some(sm_ref) => self.setup_to_smf(ue, item.pdu_session_id, &sm_ref, item.transfer),
                // The 201 is still on its way: sent when it comes (`on_sm_created`).
                None => s.pending_setup = Some(item.transfer),
            }
        }
        for item in m.failed {
            debug!(
                amf_ue_ngap_id = ue.amf_ue_ngap_id,
                psi = item.pdu_session_id,
                "PDU session resource setup failed"
            );
        }
    }

    /// UpdateSMContext with the gNB's PDU Session Resource Setup Response Transfer (TS
    /// 23.502 §4.3.2.2.1 step 15).
    fn setup_to_smf(&mut self, ue: &UeContext, psi: u8, sm_ref: &str, transfer: Vec<u8>) {
        let data = SmContextUpdateData {
            n2_sm_info: Some(RefToBinaryData::new(N2_ID)),
            n2_sm_info_type: Some("PDU_RES_SETUP_RSP".into()),
            ..Default::default()
        };
        self.sm_call(
            ue,
            CallKind::SmUpdate(psi),
            format!("{SM_CONTEXTS}/{sm_ref}/modify"),
            &data,
            None,
            Some(transfer),
        );
    }

    /// PDU SESSION RESOURCE RELEASE RESPONSE (TS 38.413 §8.2.2.2): the access side is
    /// gone; the session ends with the UE's RELEASE COMPLETE.
    pub(super) fn on_release_response(
        &mut self,
        ue: &mut UeContext,
        m: PduSessionResourceReleaseResponse,
    ) {
        debug!(
            amf_ue_ngap_id = ue.amf_ue_ngap_id,
            released = m.released.len(),
            "PDU session resources released"
        );
    }

    /// The UE's 5GSM message `n1` back to it in a DL NAS TRANSPORT with 5GMM cause #90
    /// "payload was not forwarded" (TS 24.501 §5.4.5.2.5, §5.4.5.3.1 case e).
    fn send_back(&mut self, ue: &mut UeContext, psi: u8, n1: Vec<u8>) {
        ue.log_failure(
            "PDU session",
            &format_args!("{} (PDU session {psi})", FiveGmmCause::PayloadNotForwarded),
            Some(sbi::discovery::NfType::Smf),
        );
        let cause = Some(FiveGmmCause::PayloadNotForwarded.value());
        if let Some(p) = self.protect_dl_nas_transport_with(ue, psi, n1, cause) {
            self.sm_stats.not_forwarded += 1;
            self.downlink(ue, p);
        }
    }

    /// A DL NAS TRANSPORT carrying `n1`, protected under the UE's current context.
    /// PDU SESSION RESOURCE RELEASE COMMAND for session `psi` (TS 38.413 §8.2.2.1): the
    /// SMF's N2 `transfer`, and its N1 SM message `n1`, if any, protected for the UE.
    fn send_release_command(
        &mut self,
        ue: &mut UeContext,
        psi: u8,
        n1: Option<Vec<u8>>,
        transfer: Vec<u8>,
    ) -> Result<(), ngap::EncodeError> {
        let nas_pdu = n1.and_then(|n1| self.protect_dl_nas_transport(ue, psi, n1));
        let pdu = PduSessionResourceReleaseCommand {
            amf_ue_ngap_id: ue.amf_ue_ngap_id,
            ran_ue_ngap_id: ue.ran_ue_ngap_id,
            nas_pdu,
            sessions: vec![PduSessionTransferItem {
                pdu_session_id: psi,
                transfer,
            }],
        }
        .encode()?;
        self.sm_stats.release_commands += 1;
        self.emit_to_gnb(ue, pdu);
        Ok(())
    }

    /// `pdu` to the gNB serving `ue`, on the UE's stream.
    fn emit_to_gnb(&mut self, ue: &UeContext, pdu: Vec<u8>) {
        self.emit_ue(ue, pdu);
    }

    fn protect_dl_nas_transport(
        &mut self,
        ue: &mut UeContext,
        psi: u8,
        n1: Vec<u8>,
    ) -> Option<Vec<u8>> {
        self.protect_dl_nas_transport_with(ue, psi, n1, None)
    }

    /// [`Self::protect_dl_nas_transport`] with a 5GMM cause.
    fn protect_dl_nas_transport_with(
        &mut self,
        ue: &mut UeContext,
        psi: u8,
        n1: Vec<u8>,
        fgmm_cause: Option<u8>,
    ) -> Option<Vec<u8>> {
        let plain = DlNasTransport {
            payload_container_type: PAYLOAD_N1_SM,
            payload: n1,
            pdu_session_id: Some(psi),
            fgmm_cause,
        }
        .encode()
        .ok()?;
        self.trace_nas(ue, "→", &plain);
        let sec = ue.sec.as_mut()?;
        sec.protect(
            &plain,
            SecurityHeaderType::IntegrityProtectedAndCiphered,
            Direction::Downlink,
        )
        .ok()
    }

    fn send_dl_nas_transport(&mut self, ue: &mut UeContext, psi: u8, n1: Vec<u8>) {
        if let Some(p) = self.protect_dl_nas_transport(ue, psi, n1) {
            self.downlink(ue, p);
        }
    }

    fn respond(&mut self, req_id: u64, p: ProblemDetails) {
        self.emit(Action::Respond {
            req_id,
            response: SbiResponse::problem(&p),
        });
    }

    #[allow(clippy::result_large_err)]
    fn n1n2(
        &mut self,
        ue: &mut UeContext,
        supi: &str,
        req: &SbiRequest,
    ) -> Result<(), ProblemDetails> {
        if ue.supi.as_deref() != Some(supi) {
            return Err(ProblemDetails::context_not_found(format!(
                "no UE context {supi}"
            )));
        }
        let (json, parts) = split_body(req.content_type.as_deref(), &req.body)
            .ok_or_else(|| ProblemDetails::invalid_msg_format("body does not decode"))?;
        let data: N1N2MessageTransferReqData = decode_valid(&json)?;
        let n1 = part(
            &parts,
            data.n1_message_container
                .as_ref()
                .map(|c| &c.n1_message_content),
        );
        check_sm_parts(&data, n1.as_deref())?;
        let sm = data
            .n2_info_container
            .as_ref()
            .and_then(|c| c.sm_info.as_ref());
        let n2 = part(
            &parts,
            sm.and_then(|s| s.n2_info_content.as_ref())
                .map(|c| &c.ngap_data),
        );
        let psi = data
            .pdu_session_id
            .or(sm.map(|s| s.pdu_session_id))
            .ok_or_else(|| ProblemDetails::mandatory_ie_missing("/pduSessionId"))?;
        let ie_type = sm
            .and_then(|s| s.n2_info_content.as_ref())
            .and_then(|c| c.ngap_ie_type.clone());
        match (ie_type.as_deref(), n2) {
            (Some("PDU_RES_SETUP_REQ"), Some(transfer)) => {
                // Only a session this UE context asked for and has not set up yet: one it
                // gave up on (a failed or late CreateSMContext) is the SMF's to release.
                let wanted = ue.sessions.iter().any(|s| {
                    s.psi == psi
                        && matches!(s.state, SessionState::Creating | SessionState::Activating)
                });
                if !wanted {
                    return Err(ProblemDetails::context_not_found(format!(
                        "no PDU session {psi} being set up"
                    )));
                }
                let snssai = sm
                    .and_then(|s| s.s_nssai.as_ref())
                    .map(from_model_snssai)
                    .or_else(|| ue.sessions.iter().find(|s| s.psi == psi).map(|s| s.snssai))
                    .unwrap_or(Snssai { sst: 1, sd: None });
                let nas_pdu = n1.and_then(|n1| self.protect_dl_nas_transport(ue, psi, n1));
                // TS 38.413 §8.2.1.2: the NAS-PDU rides in the session's item.
                let m = PduSessionResourceSetupRequest {
                    amf_ue_ngap_id: ue.amf_ue_ngap_id,
                    ran_ue_ngap_id: ue.ran_ue_ngap_id,
                    nas_pdu: None,
                    sessions: vec![PduSessionSetupItem {
                        pdu_session_id: psi,
                        nas_pdu,
                        snssai,
                        transfer,
                    }],
                    ue_ambr: None,
                };
                let pdu = m
                    .encode()
                    .map_err(|e| ProblemDetails::unspecified_nf_failure(e.to_string()))?;
                self.sm_stats.setup_requests += 1;
                self.emit_to_gnb(ue, pdu);
                Ok(())
            }
            (Some("PDU_RES_REL_CMD"), Some(transfer)) => {
                let Some(s) = ue.sessions.iter_mut().find(|s| s.psi == psi) else {
                    return Err(ProblemDetails::context_not_found(format!(
                        "no PDU session {psi}"
                    )));
                };
                // TS 23.502 §4.3.4.2 step 4: the network releases the session; the UE's
                // RELEASE COMPLETE ends it here (as after a release it asked for).
                s.state = SessionState::Releasing;
                self.send_release_command(ue, psi, n1, transfer)
                    .map_err(|e| ProblemDetails::unspecified_nf_failure(e.to_string()))
            }
            (_, None) => match n1 {
                Some(n1) => {
                    self.send_dl_nas_transport(ue, psi, n1);
                    Ok(())
                }
                None => Err(ProblemDetails::mandatory_ie_missing("/n1MessageContainer")),
            },
            (other, Some(_)) => Err(ProblemDetails::mandatory_ie_incorrect(
                "/n2InfoContainer",
                format!("{other:?} not handled"),
            )),
        }
    }
}

/// The 5GSM cause of a PDU SESSION ESTABLISHMENT REJECT (TS 24.501 §8.3.3: the cause
/// follows the 5GSM header), if `n1` is one.
fn rejected_sm_cause(n1: &[u8]) -> Option<proto::nas::FiveGsmCause> {
    const EPD_5GSM: u8 = 0x2e;
    const ESTABLISHMENT_REJECT: u8 = 0xc3;
    match n1 {
        [EPD_5GSM, _, _, ESTABLISHMENT_REJECT, cause, ..] => {
            Some(proto::nas::FiveGsmCause::from_value(*cause))
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::amf::registration::AmfConfig;
    use crate::state::ShardMap;
    use ids::{WorkerId, Workers};

    type TestAmf = Amf<ShardMap<u64, UeContext>, ShardMap<u32, super::super::IdleUe>>;

    fn amf() -> TestAmf {
        let cfg = AmfConfig::new(WorkerId(0), Workers::new(1).unwrap());
        Amf::new(cfg, ShardMap::new(), ShardMap::new())
    }

    fn request(method: Method, path: &str) -> SbiRequest {
        SbiRequest {
            method,
            path: path.to_owned(),
            query: None,
            content_type: Some(multipart::JSON.to_owned()),
            body: bytes::Bytes::from_static(b"{}"),
        }
    }

    fn answer(a: &mut TestAmf) -> (u64, StatusCode) {
        match a.poll_action() {
            Some(Action::Respond { req_id, response }) => (req_id, response.status),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn n1n2_for_an_unknown_ue_is_context_not_found() {
        let mut a = amf();
        a.handle_request(
            Instant::now(),
            7,
            request(
                Method::POST,
                "/namf-comm/v1/ue-contexts/imsi-001010000000001/n1-n2-messages",
            ),
        );
        assert_eq!(answer(&mut a), (7, StatusCode::NOT_FOUND));
        assert_eq!(a.session_stats().n1n2_refused, 1);
        // A runtime would look for the UE on another worker first; any other path is
        // answered here.
        assert!(
            !a.holds_n1n2_target("/namf-comm/v1/ue-contexts/imsi-001010000000001/n1-n2-messages")
        );
        assert!(a.holds_n1n2_target("/namf-comm/v1/subscriptions"));
        assert!(a.poll_action().is_none());
    }

    #[test]
    fn other_paths_and_methods_are_refused() {
        let mut a = amf();
        a.handle_request(
            Instant::now(),
            1,
            request(Method::POST, "/namf-comm/v1/ue-contexts/x/y/n1-n2-messages"),
        );
        assert_eq!(answer(&mut a), (1, StatusCode::NOT_FOUND));
        a.handle_request(
            Instant::now(),
            2,
            request(Method::POST, "/namf-comm/v1/subscriptions"),
        );
        assert_eq!(answer(&mut a), (2, StatusCode::NOT_FOUND));
        a.handle_request(
            Instant::now(),
            3,
            request(
                Method::GET,
                "/namf-comm/v1/ue-contexts/imsi-1/n1-n2-messages",
            ),
        );
        assert_eq!(answer(&mut a), (3, StatusCode::METHOD_NOT_ALLOWED));
    }

    /// Over h2c the gNB's setup response can come before the SMF's 201 (the
    /// N1N2MessageTransfer and the 201 travel on different connections): the
    /// UpdateSMContext waits for the SM context ref instead of being lost.
    #[test]
    fn a_setup_response_before_the_201_waits_for_the_sm_context_ref() {
        let mut a = amf();
        let mut ue = UeContext::new(1, 2, 3, 1);
        ue.sessions.push(PduSession {
            psi: 5,
            sm_ref: None,
            state: SessionState::Creating,
            snssai: Snssai { sst: 1, sd: None },
            pending_setup: None,
        });
        let rsp = PduSessionResourceSetupResponse {
            amf_ue_ngap_id: 1,
            ran_ue_ngap_id: 2,
            setup: vec![PduSessionTransferItem {
                pdu_session_id: 5,
                transfer: vec![9, 9],
            }],
            failed: Vec::new(),
        };
        a.local.on_setup_response(&mut ue, rsp);
        a.flush();
        assert!(a.poll_action().is_none());
        let reply = SmReply {
            status: StatusCode::CREATED,
            location: Some("http://127.0.0.4:7777/nsmf-pdusession/v1/sm-contexts/00000000000000aa"),
            content_type: Some(multipart::JSON),
            body: b"{}",
            sent: None,
        };
        a.local.on_sm_created(&mut ue, 5, reply);
        a.flush();
        match a.poll_action() {
            Some(Action::Call {
                nf,
                path,
                body,
                content_type,
                ..
            }) => {
                assert_eq!(nf, NfType::Smf);
                assert_eq!(path, format!("{SM_CONTEXTS}/00000000000000aa/modify"));
                let (_, parts) = split_body(Some(content_type), &body).unwrap();
                assert_eq!(
                    part(&parts, Some(&RefToBinaryData::new(N2_ID))),
                    Some(vec![9, 9])
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(ue.sessions.iter().all(|s| s.pending_setup.is_none()));
        assert_eq!(
            ue.sessions.first().map(|s| s.state),
            Some(SessionState::Activating)
        );
    }

    #[test]
    fn model_snssai_round_trips() {
        for s in [
            Snssai { sst: 1, sd: None },
            Snssai {
                sst: 2,
                sd: Some(0x00ab_cdef),
            },
        ] {
            assert_eq!(from_model_snssai(&to_model_snssai(s)), s);
        }
    }

    #[test]
    fn bodies_split_into_json_and_parts() {
        let parts = [
            Part::json(b"{\"a\":1}".to_vec()),
            Part::binary(multipart::NAS_5G, N1_ID, vec![0x2e, 1, 2]),
        ];
        let body = multipart::encode(&parts).unwrap();
        let (json, got) = split_body(Some(multipart::CONTENT_TYPE), &body).unwrap();
        assert_eq!(&json[..], b"{\"a\":1}");
        assert_eq!(
            part(&got, Some(&RefToBinaryData::new(N1_ID))),
            Some(vec![0x2e, 1, 2])
        );
        assert_eq!(part(&got, Some(&RefToBinaryData::new("other"))), None);
        assert!(split_body(Some(multipart::CONTENT_TYPE), b"garbage").is_none());
        let (json, got) = split_body(None, b"{}").unwrap();
        assert_eq!((&json[..], got.len()), (&b"{}"[..], 0));
    }

    const UE_PATH: &str = "/namf-comm/v1/ue-contexts/imsi-001010000000001/n1-n2-messages";

    /// An AMF holding one UE with PDU session 5 up, indexed by its SUPI.
    fn amf_with_session() -> TestAmf {
        let mut a = amf();
        let mut ue = UeContext::new(1, 2, 3, 1);
        ue.supi = Some("imsi-001010000000001".into());
        ue.sessions.push(PduSession {
            psi: 5,
            sm_ref: Some("00000000000000aa".into()),
            state: SessionState::Active,
            snssai: Snssai { sst: 1, sd: None },
            pending_setup: None,
        });
        a.local.supi_index.insert("imsi-001010000000001".into(), 1);
        a.ues.insert(1, ue);
        a
    }

    fn transfer(json: serde_json::Value, n1: Vec<u8>, n2: Vec<u8>) -> SbiRequest {
        let body = multipart::encode(&[
            Part::json(serde_json::to_vec(&json).unwrap()),
            Part::binary(multipart::NAS_5G, N1_ID, n1),
            Part::binary(multipart::NGAP, N2_ID, n2),
        ])
        .unwrap();
        SbiRequest {
            method: Method::POST,
            path: UE_PATH.to_owned(),
            query: None,
            content_type: Some(multipart::CONTENT_TYPE.to_owned()),
            body,
        }
    }

    fn json(ie_type: &str, psi: u8, sm_psi: u8) -> serde_json::Value {
        serde_json::json!({
            "n1MessageContainer": {"n1MessageClass": "SM", "n1MessageContent": {"contentId": N1_ID}},
            "n2InfoContainer": {"n2InformationClass": "SM", "smInfo": {
                "pduSessionId": sm_psi, "sNssai": {"sst": 1},
                "n2InfoContent": {"ngapIeType": ie_type, "ngapData": {"contentId": N2_ID}}
            }},
            "pduSessionId": psi
        })
    }

    fn release_command(psi: u8) -> Vec<u8> {
        SmMessage::ReleaseCommand(proto::nas::sm_ue::PduSessionReleaseCommand {
            pdu_session_id: psi,
            pti: 0,
            cause: 26,
        })
        .encode()
        .unwrap()
    }

    fn refusal(a: &mut TestAmf) -> (String, Vec<String>) {
        match a.poll_action() {
            Some(Action::Respond { response, .. }) => {
                assert_eq!(response.status, StatusCode::BAD_REQUEST);
                let p: ProblemDetails = serde_json::from_slice(&response.body).unwrap();
                (p.cause.clone().unwrap_or_default(), p.invalid_param_names())
            }
            other => panic!("{other:?}"),
        }
    }

    /// TS 29.518 §6.1.6.2.1 with TS 24.007 §11.2.3.1b: the JSON, the N2 SM information and
    /// the N1 message must name one PDU session of 1 to 15; nothing reaches the gNB
    /// otherwise.
    #[test]
    fn n1n2_session_ids_must_agree_and_be_in_range() {
        let mut a = amf_with_session();
        let incorrect = |p: &str| ("MANDATORY_IE_INCORRECT".to_owned(), vec![p.to_owned()]);
        a.handle_request(
            Instant::now(),
            1,
            transfer(json("PDU_RES_SETUP_REQ", 5, 5), release_command(6), vec![1]),
        );
        assert_eq!(refusal(&mut a), incorrect("/n1MessageContainer"));
        a.handle_request(
            Instant::now(),
            2,
            transfer(json("PDU_RES_SETUP_REQ", 5, 6), release_command(5), vec![1]),
        );
        assert_eq!(
            refusal(&mut a),
            incorrect("/n2InfoContainer/smInfo/pduSessionId")
        );
        a.handle_request(
            Instant::now(),
            3,
            transfer(json("PDU_RES_SETUP_REQ", 0, 0), release_command(0), vec![1]),
        );
        let (cause, params) = refusal(&mut a);
        assert_eq!(cause, "MANDATORY_IE_INCORRECT");
        assert_eq!(
            params,
            ["/n2InfoContainer/smInfo/pduSessionId", "/pduSessionId"]
        );
        a.handle_request(
            Instant::now(),
            4,
            transfer(json("PDU_RES_SETUP_REQ", 5, 5), vec![0x7e, 5], vec![1]),
        );
        assert_eq!(refusal(&mut a), incorrect("/n1MessageContainer"));
        let mut q = transfer(json("PDU_RES_SETUP_REQ", 5, 5), release_command(5), vec![1]);
        q.query = Some("x=1".into());
        a.handle_request(Instant::now(), 5, q);
        assert_eq!(
            refusal(&mut a),
            ("INVALID_QUERY_PARAM".to_owned(), vec!["x".to_owned()])
        );
        assert_eq!(a.session_stats().n1n2_refused, 5);
        assert_eq!(a.session_stats().setup_requests, 0);
        assert!(a.poll_action().is_none());
    }

    /// An accept whose S-NSSAI is not the slice of the N2 SM information is refused, and
    /// no setup reaches the gNB; with the same slice it goes through.
    #[test]
    fn n1n2_accept_slice_must_match() {
        let accept = |sst| {
            SmMessage::EstablishmentAccept(proto::nas::sm_ue::PduSessionEstablishmentAccept {
                pdu_session_id: 5,
                pti: 1,
                pdu_session_type: 1,
                ssc_mode: 1,
                qos_rules: proto::nas::sm_ue::default_qos_rule(1),
                session_ambr: proto::nas::sm_ue::SessionAmbr {
                    dl_kbps: 1000,
                    ul_kbps: 1000,
                },
                pdu_address: None,
                snssai: Some(Snssai { sst, sd: None }),
                dnn: Some("internet".into()),
            })
            .encode()
            .unwrap()
        };
        let mut a = amf_with_session();
        // A setup is for a session being set up (the 201 came, the accept not yet).
        a.ues.with(&1, |u| {
            if let Some(s) = u.and_then(|u| u.sessions.first_mut()) {
                s.state = SessionState::Activating;
            }
        });
        a.handle_request(
            Instant::now(),
            1,
            transfer(json("PDU_RES_SETUP_REQ", 5, 5), accept(2), vec![1]),
        );
        assert_eq!(
            refusal(&mut a),
            (
                "MANDATORY_IE_INCORRECT".to_owned(),
                vec!["/n1MessageContainer".to_owned()]
            )
        );
        assert_eq!(a.session_stats().setup_requests, 0);
        a.handle_request(
            Instant::now(),
            2,
            transfer(json("PDU_RES_SETUP_REQ", 5, 5), accept(1), vec![1]),
        );
        assert!(matches!(a.poll_action(), Some(Action::Ngap { .. })));
        assert_eq!(answer(&mut a), (2, StatusCode::OK));
    }

    /// TS 23.502 §4.3.4.2: a network-requested release is relayed to the gNB as a PDU
    /// SESSION RESOURCE RELEASE COMMAND, and the session waits for the UE's RELEASE COMPLETE.
    #[test]
    fn n1n2_release_command_goes_to_the_gnb() {
        let mut a = amf_with_session();
        a.handle_request(
            Instant::now(),
            9,
            transfer(
                json("PDU_RES_REL_CMD", 5, 5),
                release_command(5),
                vec![7, 7],
            ),
        );
        let Some(Action::Ngap { pdu, .. }) = a.poll_action() else {
            panic!("no NGAP")
        };
        let m =
            PduSessionResourceReleaseCommand::parse(&proto::ngap::decode(&pdu).unwrap()).unwrap();
        assert_eq!(m.sessions[0].pdu_session_id, 5);
        assert_eq!(m.sessions[0].transfer, vec![7, 7]);
        assert_eq!(answer(&mut a), (9, StatusCode::OK));
        let ue = a.ues.remove(&1).unwrap();
        assert_eq!(ue.sessions[0].state, SessionState::Releasing);
        assert_eq!(a.session_stats().release_commands, 1);
        // A release for a session the UE does not have is not found.
        a.ues.insert(1, ue);
        a.handle_request(
            Instant::now(),
            10,
            transfer(json("PDU_RES_REL_CMD", 6, 6), release_command(6), vec![7]),
        );
        assert_eq!(answer(&mut a), (10, StatusCode::NOT_FOUND));
    }

    #[test]
    fn the_5gsm_cause_of_a_reject_is_read_by_name() {
        let n1 = crate::smf::nas::establishment_reject(
            5,
            1,
            crate::smf::nas::GsmCause::MissingOrUnknownDnn,
        )
        .unwrap();
        assert_eq!(
            rejected_sm_cause(&n1).map(|c| c.to_string()).as_deref(),
            Some("#27 (Missing or unknown DNN)")
        );
        assert_eq!(rejected_sm_cause(&n1[..4]), None);
    }
}
