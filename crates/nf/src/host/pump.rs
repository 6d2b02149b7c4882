//! Carrying out what the NFs ask for: every action of every NF becomes an [`Output`], a
//! hop, an in-process call or an answer inside the host, until no NF has anything left.
//! The matches are exhaustive (the NFs' `Action` enums are this crate's own), so an action
//! added to an NF does not compile until the host carries it out.

use std::time::Instant;

use sbi::{ProblemDetails, SbiResponse};
use tracing::warn;

use super::io::Caller;
use super::placement::Placement;
use super::{Hop, Host, Output};
use crate::amf::overload::OverloadSignal;
use crate::amf::registration;
use crate::{ausf, smf, udm};

impl<P: Placement> Host<P> {
    /// Drains the NFs' actions; an in-process call or an answer may give an NF more to do,
    /// so this goes round until every NF is quiet.
    pub(super) fn pump(&mut self, now: Instant) {
        loop {
            let mut progress = false;
            while let Some(a) = self.nfs.amf.poll_action() {
                progress = true;
                self.amf_action(now, a);
            }
            while let Some(a) = self.nfs.ausf.poll_action() {
                progress = true;
                self.ausf_action(now, a);
            }
            while let Some(a) = self.nfs.udm.poll_action() {
                progress = true;
                self.udm_action(now, a);
            }
            while let Some(a) = self.nfs.smf.as_mut().and_then(smf::Smf::poll_action) {
                progress = true;
                self.smf_action(now, a);
            }
            if !progress {
                break;
            }
        }
        self.after_pump();
    }

    /// What the NFs' state says once they are quiet: the AMF's overload transitions go to
    /// every worker's N2 side, and the NFs' bound counters to the worker's.
    fn after_pump(&mut self) {
        while let Some(entered) = self.nfs.amf.poll_overload() {
            let start = entered
                .then(|| self.cfg.amf.overload.map(|o| o.start_message()))
                .flatten();
            let me = self.id;
            for w in self.workers.iter().filter(|w| *w != me) {
                self.hop(w, Hop::Overload { from: me, start });
            }
            self.overload.push_back(OverloadSignal {
                worker: me.0,
                start,
            });
        }
        let a = self.nfs.amf.stats();
        let c = &mut self.counters;
        c.amf_congestion_rejects = a.congestion_rejects;
        c.amf_context_limit_rejects = a.context_limit_rejects;
        c.amf_initial_ue_dropped = a.initial_ue_dropped;
        c.amf_overload_starts = a.overload_starts;
        if let Some(smf) = self.nfs.smf.as_ref() {
            c.smf_context_limit_rejects = smf.stats().context_limit_rejects;
        }
    }

    fn amf_action(&mut self, now: Instant, a: registration::Action) {
        match a {
            registration::Action::Ngap { assoc, stream, pdu } => self.send_ngap(assoc, stream, pdu),
            registration::Action::Call {
                call_id,
                nf,
                method,
                path,
                content_type,
                body,
            } => self.call(
                now,
                Caller::Amf,
                call_id,
                nf,
                method,
                path,
                content_type,
                body,
            ),
            registration::Action::Respond { req_id, response } => {
                self.complete(now, req_id, response)
            }
        }
    }

    fn ausf_action(&mut self, now: Instant, a: ausf::Action) {
        match a {
            ausf::Action::Respond { req_id, response } => self.complete(now, req_id, response),
            ausf::Action::Call {
                call_id,
                nf,
                method,
                path,
                body,
            } => self.call(
                now,
                Caller::Ausf,
                call_id,
                nf,
                method,
                path,
                sbi::multipart::JSON,
                body,
            ),
        }
    }

    fn udm_action(&mut self, now: Instant, a: udm::Action) {
        match a {
            udm::Action::Respond { req_id, response } => self.complete(now, req_id, response),
            udm::Action::Forward {
                to,
                req_id,
                request,
            } => {
                self.counters.udm_forwards += 1;
                let from = self.id;
                self.hop(
                    to,
                    Hop::Forward {
                        from,
                        tag: req_id,
                        fwd: request,
                    },
                );
            }
            udm::Action::SaveState(w) => self.out.push_back(Output::SaveUdmState(w)),
            udm::Action::Notify { call_id, uri, body } => self.call(
                now,
                Caller::Udm,
                call_id,
                sbi::NfType::Amf,
                http::Method::POST,
                uri,
                sbi::multipart::JSON,
                body,
            ),
            udm::Action::PersistSqn(p) => {
                self.counters.sqn_writes += 1;
                self.out.push_back(Output::PersistSqn(p));
            }
        }
    }

    fn smf_action(&mut self, now: Instant, a: smf::Action) {
        match a {
            smf::Action::Respond { req_id, response } => self.complete(now, req_id, response),
            smf::Action::Call {
                call_id,
                nf,
                method,
                path,
                content_type,
                body,
            } => self.call(
                now,
                Caller::Smf,
                call_id,
                nf,
                method,
                path,
                content_type,
                body,
            ),
            smf::Action::Pfcp {
                to,
                sequence,
                bytes,
            } => {
                // TS 29.244 §6.4: sent again after T1 until answered (`Host::handle_timeout`).
                self.pfcp.sent(now, sequence, bytes.clone(), to);
                self.out.push_back(Output::Pfcp { to, bytes });
            }
            smf::Action::PfcpResponse { to, bytes } => {
                self.out.push_back(Output::Pfcp { to, bytes })
            }
            smf::Action::Forward { req_id, .. } => {
                // The placement already sends each Nsmf request to the worker its SM
                // context ref names, so a hand-over here is a routing bug.
                warn!("SMF asked to forward a request");
                let p = ProblemDetails::unspecified_nf_failure("SM context misrouted");
                self.complete(now, req_id, SbiResponse::problem(&p));
            }
        }
    }
}
