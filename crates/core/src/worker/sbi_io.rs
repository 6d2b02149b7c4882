//! A worker's SBI I/O: the requests its h2c server reads (handed to the loop, answered
//! through a reply channel the host names by [`ServerToken`]) and the h2c calls of its
//! host, each made by a task of its own.

use std::time::Instant;

use nf::host::{CallFailed, CallReply, Placement, SbiCall, ServerToken};
use sbi::{NfType, ProblemDetails, SbiRequest, SbiResponse};
use tokio::sync::oneshot;

use super::{Local, LocalTx, Worker};

/// The reply channels of the requests this worker's h2c server read, by
/// [`ServerToken`] (a slab: tokens are reused once answered).
#[derive(Default)]
pub(super) struct Replies {
    slots: Vec<Option<oneshot::Sender<SbiResponse>>>,
    free: Vec<usize>,
}

impl Replies {
    pub(super) fn hold(&mut self, reply: oneshot::Sender<SbiResponse>) -> ServerToken {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = Some(reply);
        }
        ServerToken(i as u64)
    }

    pub(super) fn answer(&mut self, token: ServerToken, response: SbiResponse) {
        let Ok(i) = usize::try_from(token.0) else {
            return;
        };
        if let Some(reply) = self.slots.get_mut(i).and_then(Option::take) {
            self.free.push(i);
            // The client may have gone; nothing to do then.
            let _ = reply.send(response);
        }
    }
}

impl<P: Placement> Worker<P> {
    /// An h2c call of the host, made by a task of its own; its outcome comes back on the
    /// local channel. Every call is answered (a transport failure as [`CallFailed`]).
    pub(super) fn call(&self, c: SbiCall) {
        // A call to one instance's resource goes there; any other may move to a second
        // instance of the type if the first fails in transport (`crate::peers`).
        let bases: Vec<String> = match &c.base {
            Some(base) => vec![base.clone()],
            None => {
                let known = self.peers.borrow().candidates(c.nf, Instant::now(), 2);
                if known.is_empty() {
                    self.shared
                        .host
                        .directory
                        .base_uri(c.nf)
                        .map(|b| vec![b.to_owned()])
                        .unwrap_or_default()
                } else {
                    known
                }
            }
        };
        // The host's timers nest (`nf::host::SbiTimeouts`): an Nsmf call outlasts the SMF's
        // own call and its PFCP retransmissions.
        let deadline = self.shared.host.call_timeout(c.nf);
        let client = self.client.clone();
        let tokens = self.tokens.clone();
        let peers = self.peers.clone();
        let failovers = self.failovers.clone();
        let tx = self.tx.clone();
        tokio::task::spawn_local(async move {
            let attempt = |base: &str| {
                let uri = format!("{base}{}", c.path);
                let (client, tokens) = (&client, &tokens);
                let (method, body) = (c.method.clone(), c.body.clone());
                async move {
                    let mut extra = http::HeaderMap::new();
                    if let Some(t) = tokens {
                        let v = t.bearer(c.nf).await?;
                        extra.insert(http::header::AUTHORIZATION, v);
                    }
                    let r = client
                        .request_with(
                            Some(c.call.user_agent()),
                            method,
                            &uri,
                            (!body.is_empty()).then_some(body),
                            c.content_type,
                            &extra,
                            c.owner,
                        )
                        .await
                        .map_err(|e| e.to_string())?;
                    // A refused token is fetched again for the next call.
                    if r.status == http::StatusCode::UNAUTHORIZED {
                        if let Some(t) = tokens {
                            t.forget(c.nf);
                        }
                    }
                    Ok::<_, String>(r)
                }
            };
            let all = async {
                let mut last = format!("no {} in the directory", c.nf);
                for (i, base) in bases.iter().enumerate() {
                    match attempt(base).await {
                        Ok(r) => return Ok(r),
                        Err(e) => {
                            if i + 1 < bases.len() {
                                peers.borrow_mut().failed(base, Instant::now());
                                failovers.set(failovers.get() + 1);
                                tracing::warn!(nf = %c.nf, from = %base, to = %bases[i + 1], error = %e, "SBI call failed over to another instance");
                            }
                            last = e;
                        }
                    }
                }
                Err(last)
            };
            let got = match tokio::time::timeout(deadline, all).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {deadline:?}")),
            };
            let reply = match got {
                Ok(r) => {
                    let header = |h| {
                        r.headers
                            .get(h)
                            .and_then(|v: &http::HeaderValue| v.to_str().ok())
                            .map(str::to_owned)
                    };
                    Ok(CallReply {
                        status: r.status,
                        location: header(http::header::LOCATION),
                        content_type: header(http::header::CONTENT_TYPE),
                        body: r.body,
                    })
                }
                Err(e) => {
                    // Rare (the caller then answers with its own failure cause), and what a
                    // lossy path's failure is traced by.
                    tracing::warn!(nf = %c.nf, error = %e, "SBI call failed");
                    Err(CallFailed)
                }
            };
            let _ = tx.send(Local::Reply {
                call: c.call,
                reply,
            });
        });
    }
}

/// One request read by a worker's h2c server: handed to the worker's loop, answered when
/// the host answers it.
pub(super) async fn serve(tx: LocalTx, nf: NfType, steered: bool, req: SbiRequest) -> SbiResponse {
    let (reply, answer) = oneshot::channel();
    let serve = Local::Serve {
        nf,
        steered,
        req,
        reply,
    };
    if tx.send(serve).is_err() {
        return SbiResponse::problem(&ProblemDetails::unspecified_nf_failure("NF stopping"));
    }
    answer.await.unwrap_or_else(|_| {
        SbiResponse::problem(&ProblemDetails::unspecified_nf_failure("request dropped"))
    })
}
