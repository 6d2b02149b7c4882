//! The gNB side of PDU session resource management (TS 38.413 §8.2.1, §8.2.2): it takes
//! the SMF's UPF tunnel end and QoS flows from the setup request, allocates its own
//! downlink TEID, answers with its N3 end, and keeps a per-UE session table that the
//! user plane ([`crate::userplane`]) reads.

use std::net::Ipv4Addr;

use proto::ngap::{
    Cause, GtpTunnel, NgapPdu, PduSessionResourceReleaseCommand, PduSessionResourceReleaseResponse,
    PduSessionResourceReleaseResponseTransfer, PduSessionResourceSetupRequest,
    PduSessionResourceSetupRequestTransfer, PduSessionResourceSetupResponse,
    PduSessionResourceSetupResponseTransfer, PduSessionResourceSetupUnsuccessfulTransfer,
    PduSessionTransferItem, ProtocolCause,
};
use tracing::debug;

use super::{malformed, GnbUeEvent, GnbUeOutput, GnbUes, N2Send, RanUeNgapId, UeKey};

/// One PDU session of a UE, as the gNB holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GnbSession {
    /// The UE.
    pub ue: UeKey,
    /// PDU session ID.
    pub pdu_session_id: u8,
    /// The UPF's N3 end: where uplink G-PDUs go.
    pub upf: GtpTunnel,
    /// The gNB's N3 end: the TEID downlink G-PDUs carry.
    pub gnb: GtpTunnel,
    /// The QoS flow (the first of the request; the emulator maps all traffic to it).
    pub qfi: u8,
}

/// The gNB's N3 address and TEID allocator, and the session table.
#[derive(Debug)]
pub(super) struct SessionTable {
    n3: Ipv4Addr,
    next_teid: u32,
    sessions: Vec<GnbSession>,
}

impl Default for SessionTable {
    fn default() -> Self {
        Self {
            n3: Ipv4Addr::LOCALHOST,
            next_teid: 1,
            sessions: Vec::new(),
        }
    }
}

impl SessionTable {
    fn allocate_teid(&mut self) -> u32 {
        // TEID 0 is reserved for signalling without a tunnel (TS 29.281 §5.1); skip it
        // on wrap.
        let t = self.next_teid;
        self.next_teid = self.next_teid.checked_add(1).unwrap_or(1);
        t
    }

    pub(super) fn drop_ue(&mut self, ue: UeKey) {
        self.sessions.retain(|s| s.ue != ue);
    }
}

impl GnbUes {
    /// Sets the gNB's N3 (NG-U) IPv4 address, which setup responses announce.
    pub fn set_n3_address(&mut self, addr: Ipv4Addr) {
        self.sessions.n3 = addr;
    }

    /// Sets the first downlink TEID this gNB hands out. gNBs that share one N3 address
    /// (emulated gNBs on one host, one N3 socket) need disjoint TEID ranges, since the
    /// TEID is then all that tells their downlink G-PDUs apart. 0 is reserved and is
    /// replaced by 1.
    pub fn set_first_teid(&mut self, teid: u32) {
        self.sessions.next_teid = teid.max(1);
    }

    /// Every PDU session of every UE.
    pub fn sessions(&self) -> &[GnbSession] {
        &self.sessions.sessions
    }

    /// The sessions of one UE.
    pub fn sessions_of(&self, ue: UeKey) -> impl Iterator<Item = &GnbSession> {
        self.sessions.sessions.iter().filter(move |s| s.ue == ue)
    }

    /// The start both session procedures share (§8.2.1.2, §8.2.2.2): bind the request to
    /// its UE, take the stream the UE's signalling uses for the answer, and deliver the
    /// request's NAS-PDU to the UE before anything else.
    fn enter(
        &mut self,
        stream: u16,
        ran: RanUeNgapId,
        amf: u64,
        nas: Option<Vec<u8>>,
        procedure: &'static str,
        out: &mut GnbUeOutput,
    ) -> Option<(UeKey, u16)> {
        let ue = self.bind(stream, ran, amf, procedure, out)?;
        let stream = self.by_ran_id.get(&ran).map_or(stream, |u| u.stream);
        if let Some(nas) = nas {
            out.events.push(GnbUeEvent::NasToUe { ue, nas });
        }
        Some((ue, stream))
    }

    /// TS 38.413 §8.2.1.2: deliver the NAS-PDUs to the UE, set up each session whose
    /// transfer reads, and answer with one response listing the set up and the failed.
    pub(super) fn on_pdu_session_setup(
        &mut self,
        stream: u16,
        pdu: &NgapPdu,
        procedure: &'static str,
        out: &mut GnbUeOutput,
    ) {
        let m = match PduSessionResourceSetupRequest::parse(pdu) {
            Ok(m) => m,
            Err(e) => return malformed(stream, pdu, procedure, &e, out),
        };
        let (ran, amf) = (m.ran_ue_ngap_id, m.amf_ue_ngap_id);
        let Some((ue, stream)) = self.enter(stream, ran, amf, m.nas_pdu, procedure, out) else {
            return;
        };
        let mut rsp = PduSessionResourceSetupResponse {
            amf_ue_ngap_id: m.amf_ue_ngap_id,
            ran_ue_ngap_id: m.ran_ue_ngap_id,
            setup: Vec::new(),
            failed: Vec::new(),
        };
        for item in m.sessions {
            let id = item.pdu_session_id;
            // §8.2.1.4: a session that already exists, or whose transfer does not
            // read, fails alone.
            let exists = self.sessions_of(ue).any(|s| s.pdu_session_id == id);
            let req = PduSessionResourceSetupRequestTransfer::decode(&item.transfer);
            let failure = match (&req, exists) {
                (_, true) => Some(Cause::RadioNetwork(
                    proto::ngap::RadioNetworkCause::MultiplePDUSessionIDInstances,
                )),
                (Err(e), _) => {
                    debug!(error = %e, "setup request transfer not understood");
                    Some(Cause::Protocol(ProtocolCause::SemanticError))
                }
                (Ok(t), _) if t.qos_flows.is_empty() => {
                    Some(Cause::Protocol(ProtocolCause::SemanticError))
                }
                _ => None,
            };
            if let Some(cause) = failure {
                if let Ok(transfer) =
                    (PduSessionResourceSetupUnsuccessfulTransfer { cause }).encode()
                {
                    rsp.failed.push(PduSessionTransferItem {
                        pdu_session_id: id,
                        transfer,
                    });
                }
                out.events.push(GnbUeEvent::PduSessionFailed {
                    ue,
                    pdu_session_id: id,
                    cause,
                });
                continue;
            }
            let Ok(req) = req else { continue };
            let qfis: Vec<u8> = req.qos_flows.iter().map(|f| f.qfi).collect();
            let gnb = GtpTunnel {
                addr: self.sessions.n3,
                teid: self.sessions.allocate_teid(),
            };
            let session = GnbSession {
                ue,
                pdu_session_id: id,
                upf: req.ul_tunnel,
                gnb,
                qfi: qfis.first().copied().unwrap_or(0),
            };
            let transfer = PduSessionResourceSetupResponseTransfer {
                dl_tunnel: gnb,
                qos_flows: qfis,
            }
            .encode();
            match transfer {
                Ok(transfer) => {
                    rsp.setup.push(PduSessionTransferItem {
                        pdu_session_id: id,
                        transfer,
                    });
                    self.sessions.sessions.push(session);
                    // §8.2.1.2: the PDU Session NAS-PDU of a session set up goes to
                    // the UE; that of a failed one is not sent.
                    if let Some(nas) = item.nas_pdu {
                        out.events.push(GnbUeEvent::NasToUe { ue, nas });
                    }
                    out.events.push(GnbUeEvent::PduSessionSetup(session));
                }
                Err(e) => debug!(error = %e, "setup response transfer does not encode"),
            }
        }
        match rsp.encode() {
            Ok(pdu) => out.transmit.push(N2Send { stream, pdu }),
            Err(e) => debug!(error = %e, "PDU SESSION RESOURCE SETUP RESPONSE does not encode"),
        }
    }

    /// TS 38.413 §8.2.2.2: deliver the NAS-PDU, drop the sessions, answer.
    pub(super) fn on_pdu_session_release(
        &mut self,
        stream: u16,
        pdu: &NgapPdu,
        procedure: &'static str,
        out: &mut GnbUeOutput,
    ) {
        let m = match PduSessionResourceReleaseCommand::parse(pdu) {
            Ok(m) => m,
            Err(e) => return malformed(stream, pdu, procedure, &e, out),
        };
        let (ran, amf) = (m.ran_ue_ngap_id, m.amf_ue_ngap_id);
        let Some((ue, stream)) = self.enter(stream, ran, amf, m.nas_pdu, procedure, out) else {
            return;
        };
        let Ok(transfer) = PduSessionResourceReleaseResponseTransfer.encode() else {
            return;
        };
        let mut released = Vec::new();
        for item in m.sessions {
            let id = item.pdu_session_id;
            self.sessions
                .sessions
                .retain(|s| !(s.ue == ue && s.pdu_session_id == id));
            // §8.2.2.2: the response lists every session of the command, released
            // now or unknown already.
            released.push(PduSessionTransferItem {
                pdu_session_id: id,
                transfer: transfer.clone(),
            });
            out.events.push(GnbUeEvent::PduSessionReleased {
                ue,
                pdu_session_id: id,
            });
        }
        let rsp = PduSessionResourceReleaseResponse {
            amf_ue_ngap_id: m.amf_ue_ngap_id,
            ran_ue_ngap_id: m.ran_ue_ngap_id,
            released,
        };
        match rsp.encode() {
            Ok(pdu) => out.transmit.push(N2Send { stream, pdu }),
            Err(e) => debug!(error = %e, "PDU SESSION RESOURCE RELEASE RESPONSE does not encode"),
        }
    }
}
