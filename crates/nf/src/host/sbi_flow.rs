//! SBI requests through a host: where each is handled (here, one hop away at its owner,
//! or, for an N1N2MessageTransfer, at whichever worker holds its UE), how its answer finds
//! its origin, and how the NFs' calls go out (in-process or over h2c).

use std::time::Instant;

use bytes::Bytes;
use http::{Method, StatusCode};
use ids::{WorkerId, Workers};
use sbi::{NfType, ProblemDetails, SbiRequest, SbiResponse};
use tracing::debug;

use super::io::Caller;
use super::placement::{request_owner, Placement};
use super::{
    CallFailed, CallReply, CallToken, Hop, Host, Origin, Output, SbiCall, SbiMode, ServerToken,
};
use crate::trace::{redact_json, TARGET};

impl<P: Placement> Host<P> {
    /// Keeps `origin` under a new tag.
    pub(super) fn hold(&mut self, origin: Origin) -> u64 {
        let t = self.new_tag();
        if matches!(origin, Origin::Server(_) | Origin::Remote { .. }) {
            self.in_progress += 1;
        }
        self.origins.insert(t, origin);
        t
    }

    /// A request read by this worker's server.
    pub(super) fn on_served(
        &mut self,
        now: Instant,
        nf: NfType,
        steered: bool,
        req: SbiRequest,
        server: ServerToken,
    ) {
        self.counters.sbi_served += 1;
        match nf {
            NfType::Smf => self.counters.nsmf_served += 1,
            NfType::Amf => self.counters.namf_served += 1,
            _ => {}
        }
        if self.in_progress >= self.limits.sbi_max_in_progress {
            // TS 29.500 §5.2.7.2, §5.2.2.2: overloaded, try again after Retry-After; no NF
            // sees the request and nothing is held for it.
            self.counters.sbi_congested += 1;
            let response = SbiResponse::nf_congestion(
                format!("{} requests in progress", self.in_progress),
                self.limits.sbi_retry_after_s,
            );
            self.out.push_back(Output::SbiAnswer { server, response });
            return;
        }
        let tag = self.hold(Origin::Server(server));
        if let Some(supi) = self.cfg.trace.mentions(&req.path, &req.body) {
            tracing::info!(target: TARGET, %supi, "SBI ← {} {} {} {}", nf, req.method, req.path, redact_json(&req.body));
            self.traced.insert(tag, supi);
        }
        let to = P::sbi_worker(self.id, self.workers, nf, &req);
        if steered && P::COUNTS_STEERING {
            // The owner of an N1N2MessageTransfer is the worker holding its UE.
            let here =
                to == self.id && (nf != NfType::Amf || self.nfs.amf.holds_n1n2_target(&req.path));
            if here {
                self.counters.sbi_kernel_steered += 1;
                match nf {
                    NfType::Smf => self.counters.nsmf_kernel_steered += 1,
                    NfType::Amf => self.counters.namf_kernel_steered += 1,
                    _ => {}
                }
            } else {
                self.counters.sbi_misdirected += 1;
            }
        }
        self.deliver_to(now, to, nf, tag, req);
    }

    /// The outcome of an h2c call of this host's NF.
    pub(super) fn on_reply(
        &mut self,
        now: Instant,
        call: CallToken,
        reply: Result<CallReply, CallFailed>,
    ) {
        let traced = self.traced_calls.remove(&(call.caller, call.id));
        let r = reply.unwrap_or_else(|CallFailed| {
            self.counters.call_failures += 1;
            CallReply {
                status: StatusCode::GATEWAY_TIMEOUT,
                location: None,
                content_type: None,
                body: Bytes::new(),
            }
        });
        if let Some(supi) = traced.or_else(|| self.cfg.trace.mentions("", &r.body)) {
            tracing::info!(target: TARGET, %supi, "SBI {} ← {} {}", call.caller.name(), r.status.as_u16(), redact_json(&r.body));
        }
        let nfs = &mut self.nfs;
        match call.caller {
            Caller::Amf => nfs.amf.handle_sbi_response(
                now,
                call.id,
                r.status,
                r.location.as_deref(),
                r.content_type.as_deref(),
                &r.body,
            ),
            Caller::Ausf => nfs.ausf.handle_reply(now, call.id, r.status, &r.body),
            Caller::Smf => {
                if let Some(smf) = nfs.smf.as_mut() {
                    smf.handle_reply(call.id, r.status, &r.body);
                }
            }
            Caller::Udm => nfs.udm.handle_reply(call.id, r.status),
        }
    }

    /// A request this host holds under `tag`: handled here or one hop away at its owner.
    fn deliver(&mut self, now: Instant, nf: NfType, tag: u64, req: SbiRequest) {
        let to = P::sbi_worker(self.id, self.workers, nf, &req);
        self.deliver_to(now, to, nf, tag, req);
    }

    /// A request this host holds under `tag`, whose owner is `to`.
    fn deliver_to(&mut self, now: Instant, to: WorkerId, nf: NfType, tag: u64, req: SbiRequest) {
        if to == self.id {
            let count = self.workers.count();
            if nf == NfType::Amf && count > 1 && !self.nfs.amf.holds_n1n2_target(&req.path) {
                // The SUPI in an N1N2MessageTransfer's path does not say which worker holds
                // the UE: ask the others in turn.
                let from = self.id;
                return self.seek(from, tag, req, count - 1);
            }
            self.handle_here(now, nf, tag, req);
        } else {
            self.counters.sbi_handed_off += 1;
            if nf == NfType::Smf {
                self.counters.nsmf_handed_off += 1;
            }
            let from = self.id;
            self.hop(to, Hop::Request { nf, from, tag, req });
        }
    }

    /// Passes an N1N2MessageTransfer held by `from` under `tag` to the next worker.
    pub(super) fn seek(&mut self, from: WorkerId, tag: u64, req: SbiRequest, left: u16) {
        self.counters.sbi_handed_off += 1;
        self.counters.namf_handed_off += 1;
        let next = WorkerId((self.id.0 + 1) % self.workers.count());
        self.hop(
            next,
            Hop::Seek {
                from,
                tag,
                req,
                left,
            },
        );
    }

    /// A request handled by this host's NF `nf`, answered under `tag`.
    pub(super) fn handle_here(&mut self, now: Instant, nf: NfType, tag: u64, req: SbiRequest) {
        self.counters.sbi_local += 1;
        if !self.nfs.serves(nf) {
            let p = ProblemDetails::resource_not_found(&format!("{nf}: {}", req.path));
            return self.complete(now, tag, SbiResponse::problem(&p));
        }
        match nf {
            NfType::Ausf => self.nfs.ausf.handle_request(now, tag, req),
            NfType::Udm => self.nfs.udm.handle_request(tag, req),
            NfType::Amf => self.nfs.amf.handle_request(now, tag, req),
            _ => {
                if let Some(smf) = self.nfs.smf.as_mut() {
                    smf.handle_request(tag, req);
                }
            }
        }
    }

    /// The answer to the request held under `tag`.
    pub(super) fn complete(&mut self, now: Instant, tag: u64, resp: SbiResponse) {
        let origin = self.origins.remove(&tag);
        if self.cfg.trace.is_on() && !matches!(origin, Some(Origin::Remote { .. })) {
            let supi = self.traced.remove(&tag);
            if let Some(supi) = supi.or_else(|| self.cfg.trace.mentions("", &resp.body)) {
                tracing::info!(target: TARGET, %supi, "SBI answer {} {}", resp.status.as_u16(), redact_json(&resp.body));
            }
        }
        if matches!(origin, Some(Origin::Server(_) | Origin::Remote { .. })) {
            self.in_progress = self.in_progress.saturating_sub(1);
        }
        match origin {
            Some(Origin::Server(server)) => self.out.push_back(Output::SbiAnswer {
                server,
                response: resp,
            }),
            Some(Origin::Call(Caller::Amf, call_id)) => {
                let location = resp
                    .headers
                    .get(http::header::LOCATION)
                    .and_then(|v| v.to_str().ok());
                self.nfs.amf.handle_sbi_response(
                    now,
                    call_id,
                    resp.status,
                    location,
                    resp.content_type,
                    &resp.body,
                )
            }
            Some(Origin::Call(Caller::Ausf, call_id)) => {
                self.nfs
                    .ausf
                    .handle_reply(now, call_id, resp.status, &resp.body)
            }
            Some(Origin::Call(Caller::Smf, call_id)) => {
                if let Some(smf) = self.nfs.smf.as_mut() {
                    smf.handle_reply(call_id, resp.status, &resp.body);
                }
            }
            Some(Origin::Call(Caller::Udm, call_id)) => {
                self.nfs.udm.handle_reply(call_id, resp.status)
            }
            Some(Origin::Remote { from, tag }) => {
                self.counters.sbi_answers_relayed += 1;
                self.hop(from, Hop::Answer { tag, resp });
            }
            None => debug!(tag, "answer to no request"),
        }
    }

    /// A call of this host's NF `caller` under its `call_id`. Every call is answered
    /// (TS 29.500 §5.2.7: a transport failure is a 504 to the caller).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call(
        &mut self,
        now: Instant,
        caller: Caller,
        call_id: u64,
        nf: NfType,
        method: Method,
        path: String,
        content_type: &'static str,
        body: Bytes,
    ) {
        // A link the producer gave (the AUSF's `5g-aka` href, TS 29.509 §6.1.3.2.3.1) names
        // the instance that holds the resource: its authority is kept for an h2c call, so
        // that with several instances the request reaches that one.
        let (base, path) = split_link(path);
        let traced = self.cfg.trace.mentions(&path, &body);
        if let Some(supi) = &traced {
            tracing::info!(target: TARGET, %supi, "SBI {} → {} {} {} {}", caller.name(), nf, method, path, redact_json(&body));
        }
        // In process only when this process hosts the NF and the call names no other
        // instance (a UDM's notification to an AMF callback of another process goes over
        // h2c even where the AMF is in-process here).
        let local = self.cfg.mode(nf) == SbiMode::Inproc
            && (nf != NfType::Amf || self.cfg.hosts_amf)
            && base
                .as_deref()
                .is_none_or(|b| self.cfg.directory.base_uri(nf) == Some(b));
        if local {
            let (path, query) = match path.split_once('?') {
                Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
                None => (path, None),
            };
            let req = SbiRequest {
                method,
                path,
                query,
                content_type: (!body.is_empty()).then(|| content_type.to_owned()),
                body,
            };
            let tag = self.hold(Origin::Call(caller, call_id));
            if let Some(supi) = traced {
                self.traced.insert(tag, supi);
            }
            return self.deliver(now, nf, tag, req);
        }
        self.counters.h2c_calls += 1;
        let owner = self.call_owner(nf, &method, &path);
        if owner.is_some() {
            self.counters.sbi_pool_steered += 1;
            match nf {
                NfType::Smf => self.counters.nsmf_pool_steered += 1,
                NfType::Amf => self.counters.namf_pool_steered += 1,
                _ => {}
            }
        }
        let call = CallToken {
            caller,
            id: call_id,
        };
        if let Some(supi) = traced {
            self.traced_calls.insert((caller, call_id), supi);
        }
        self.out.push_back(Output::SbiCall(SbiCall {
            call,
            nf,
            base,
            method,
            path,
            content_type,
            body,
            owner,
        }));
    }

    /// The server worker a shard-aware call goes to (`None` without the pool): the owner the
    /// request names, else the server worker with this worker's index, so that co-located
    /// shards keep calling their own core and new state spreads as the callers do (the
    /// AMF already placed its UEs by hash).
    fn call_owner(&self, nf: NfType, method: &Method, path: &str) -> Option<sbi::Owner> {
        if !self.shard_aware_calls() {
            return None;
        }
        let count = self
            .cfg
            .directory
            .workers(nf)
            .unwrap_or(self.workers.count());
        let target = Workers::new(count)?;
        let path = path.split_once('?').map_or(path, |(p, _)| p);
        let worker = match request_owner(nf, method, path, target) {
            Some(w) => w.0,
            None => self.id.0 % count,
        };
        sbi::Owner::new(worker, count)
    }
}

/// `http://host:port/rest` as (`Some("http://host:port")`, `/rest`); a bare path as is.
fn split_link(path: String) -> (Option<String>, String) {
    let Some(rest) = path.strip_prefix("http://") else {
        return (None, path);
    };
    match rest.find('/') {
        Some(i) => {
            let at = "http://".len() + i;
            (Some(path[..at].to_owned()), path[at..].to_owned())
        }
        None => (Some(path), "/".to_owned()),
    }
}

#[cfg(test)]
mod split_link_tests {
    use super::split_link;

    #[test]
    fn a_link_keeps_its_authority_and_a_path_has_none() {
        let s = |p: &str| split_link(p.to_owned());
        assert_eq!(
            s("http://127.0.1.11:7777/nausf-auth/v1/ue-authentications/0-1/5g-aka-confirmation"),
            (
                Some("http://127.0.1.11:7777".to_owned()),
                "/nausf-auth/v1/ue-authentications/0-1/5g-aka-confirmation".to_owned()
            )
        );
        assert_eq!(s("/nudm-sdm/v2/x"), (None, "/nudm-sdm/v2/x".to_owned()));
        assert_eq!(
            s("http://h:1"),
            (Some("http://h:1".to_owned()), "/".to_owned())
        );
    }
}
