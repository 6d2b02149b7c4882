//! One worker's I/O: its end of the mesh, its N2 socket(s) with the associations they
//! carry, its PFCP socket towards the UPF, its SBI listeners and h2c client, and the
//! timers, driving one [`nf::host::Host`] that holds the worker's NFs.
//!
//! Everything a worker does happens in one loop that owns all of its state, so nothing is
//! shared inside a worker either: tasks it spawns (SBI client calls, h2c server streams)
//! report back through its local channel. Each turn waits for something to be ready, feeds
//! what it read to the host, then carries out every output of the host. Which NF handles
//! what, and where, is the host's business; this module only moves bytes.

use std::net::TcpListener;
use std::rc::Rc;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use nf::amf::n2::AmfN2Config;
use nf::host::{
    CallFailed, CallReply, CallToken, Hop, Host, HostConfig, HostLimits, Input, IoEvent, Locked,
    Output, Placement, Sharded, UeNgap,
};
use sbi::{NfType, SbiClient, SbiRequest, SbiResponse};
use steer::{MeshEnd, Stop, WorkerCtx, WorkerId, Workers};
use steer5g_config::N2Config;
use tokio::sync::{mpsc as tmpsc, oneshot};

use crate::metrics::{Live, WakeCause, WakeCounters};
use crate::n2::N2Side;
use crate::persist::Job;
use crate::{CoreError, N2WorkerReport, NfSet, WorkerReport};

mod outbox;
mod pfcp;
mod sbi_io;

use outbox::Outbox;
use sbi_io::{serve, Replies};

/// Longest a turn waits on the N2 socket(s) before looking at everything else.
const N2_TICK: Duration = Duration::from_millis(50);
/// How long a stopping core waits for its associations to shut down gracefully.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// At stop, how long the mesh must stay quiet before a worker stops handling what the others
/// hand it, and the most it waits for that.
const MESH_SETTLE_QUIET: Duration = Duration::from_millis(20);
const MESH_SETTLE_MAX: Duration = Duration::from_millis(300);
/// Pause before retrying mesh sends that found a full queue.
const RETRY_PAUSE: Duration = Duration::from_millis(1);
/// Largest PFCP message the worker reads from the UPF (responses and reports are far
/// smaller; a longer datagram is cut and fails to decode, which the SMF logs).
const PFCP_BUF: usize = 8192;

/// What a worker's own tasks and the persister tell it.
#[derive(Debug)]
pub(crate) enum Local {
    /// A request read by this worker's h2c server.
    Serve {
        nf: NfType,
        /// Read from a kernel-steered listener.
        steered: bool,
        req: SbiRequest,
        reply: oneshot::Sender<SbiResponse>,
    },
    /// The outcome of an h2c call of the host.
    Reply {
        call: CallToken,
        reply: Result<CallReply, CallFailed>,
    },
    /// An SQN write this worker asked for completed.
    SqnDone {
        supi: String,
        claim: Option<store::sqn::Claim>,
    },
    /// The provisioning API changed a subscriber this worker's UDM owns.
    SubscriberChanged { supi: String },
    /// The instances of a peer NF type changed (NRF).
    Peers { nf: NfType, bases: Vec<String> },
}

pub(crate) type LocalTx = tmpsc::UnboundedSender<Local>;
type LocalRx = tmpsc::UnboundedReceiver<Local>;
/// A worker's SBI listeners: the NF, the socket, and whether its group is kernel-steered.
pub(crate) type Listeners = Vec<(NfType, TcpListener, bool)>;
type Ready = mpsc::Sender<Result<(), CoreError>>;

pub(crate) fn local_channels(workers: Workers) -> (Vec<LocalTx>, Vec<LocalRx>) {
    workers.iter().map(|_| tmpsc::unbounded_channel()).unzip()
}

/// What every worker reads at start and writes at the end.
pub(crate) struct Shared {
    /// Every worker's host starts from this (its own worker written in).
    pub(crate) host: HostConfig,
    /// Every worker's host's bounds.
    pub(crate) limits: HostLimits,
    /// Refusable hops a worker's outbox holds at most (`limits.mesh_max_outbox`).
    pub(crate) max_outbox: usize,
    /// SETTINGS_MAX_CONCURRENT_STREAMS of the worker's h2c listeners.
    pub(crate) sbi_max_streams: u32,
    /// The N2 SCTP endpoints' bounds, per worker.
    pub(crate) n2_limits: crate::n2::N2Limits,
    /// The shared maps of the locked mode; `None`: sharded.
    pub(crate) locked: Option<Locked>,
    /// The AMF's non-UE N2 settings (NG Setup).
    pub(crate) n2_amf: AmfN2Config,
    pub(crate) nfs: NfSet,
    pub(crate) short_connections: bool,
    /// How calls get their access tokens, if they carry any.
    pub(crate) oauth_client: Option<crate::tokens::OauthClientOptions>,
    /// What the h2c listeners require of a request's token, if anything.
    pub(crate) require_tokens: Option<sbi::oauth::TokenPolicy>,
    /// The peer instances every worker starts with.
    pub(crate) peers: std::collections::HashMap<NfType, Vec<String>>,
    pub(crate) n2_config: N2Config,
    /// Whether worker 0 opens the raw IP N2 socket.
    pub(crate) n2_raw: bool,
    /// The N2 UDP group: worker i takes entry i.
    pub(crate) n2_udp: Mutex<Vec<Option<std::net::UdpSocket>>>,
    /// Each worker takes its own entry.
    pub(crate) inbox: Mutex<Vec<Option<(LocalRx, Listeners)>>>,
    pub(crate) persist: Mutex<mpsc::Sender<Job>>,
    pub(crate) ready: Mutex<Option<Ready>>,
    pub(crate) reports: Mutex<Vec<Option<WorkerReport>>>,
    /// Each worker with N2 sockets adds its part when it stops.
    pub(crate) n2_report: Mutex<Vec<N2WorkerReport>>,
    pub(crate) locals: Vec<LocalTx>,
    /// The live counters every worker publishes into.
    pub(crate) live: Arc<Live>,
}

/// The worker's body: its host over the shard or the shared maps, and its loop.
pub(crate) async fn run(ctx: WorkerCtx<Hop>, shared: Arc<Shared>) {
    let taken = shared
        .inbox
        .lock()
        .ok()
        .and_then(|mut v| v.get_mut(ctx.id.index()).and_then(Option::take));
    let Some((rx, listeners)) = taken else {
        tracing::error!(worker = ctx.id.0, "worker started twice");
        return;
    };
    match shared.locked.clone() {
        Some(locked) => Worker::new(ctx, shared, rx, &locked).run(listeners).await,
        None => Worker::new(ctx, shared, rx, &Sharded).run(listeners).await,
    }
}

struct Worker<P: Placement> {
    id: WorkerId,
    workers: Workers,
    mesh: MeshEnd<Hop>,
    stop: Stop,
    shared: Arc<Shared>,
    host: Host<P>,
    /// This worker's PFCP socket towards the UPF (with the SMF).
    pfcp: Option<Rc<tokio::net::UdpSocket>>,
    /// Receive buffer of the PFCP socket, reused for every datagram.
    pfcp_buf: Vec<u8>,
    /// Reads the PFCP socket with the kernel's drop count.
    pfcp_rx: upf::service::PfcpReceiver,
    rx: LocalRx,
    tx: LocalTx,
    client: Rc<SbiClient>,
    /// This worker's access tokens, when calls carry them.
    tokens: Option<Rc<crate::tokens::Tokens>>,
    /// The peer instances its calls go to, and which failed lately.
    peers: Rc<std::cell::RefCell<crate::peers::Peers>>,
    /// Calls sent to another instance after a transport failure.
    failovers: Rc<std::cell::Cell<u64>>,
    replies: Replies,
    /// Hops that met a full queue, in order, sent again next turn; bounded.
    outbox: Outbox,
    persist: mpsc::Sender<Job>,
    wakes: WakeCounters,
    n2: Option<N2Side>,
    /// UE-associated NGAP messages of one N2 poll, reused.
    ue_msgs: Vec<UeNgap>,
}

/// What woke the loop.
enum Wake {
    Stop,
    Mesh,
    Local(Option<Local>),
    N2(std::io::Result<()>),
    Timer,
    Retry,
    Pfcp(std::io::Result<()>),
}

impl Wake {
    /// What the wake-up counters file it under (`None`: stopping, not counted).
    fn cause(&self) -> Option<WakeCause> {
        Some(match self {
            Wake::Stop => return None,
            Wake::Mesh => WakeCause::Mesh,
            Wake::Local(_) => WakeCause::Local,
            Wake::N2(_) => WakeCause::N2,
            Wake::Timer => WakeCause::Timer,
            Wake::Retry => WakeCause::Retry,
            // PFCP is counted with the local wake-ups (no counter of its own yet).
            Wake::Pfcp(_) => WakeCause::Local,
        })
    }
}

impl<P: Placement> Worker<P> {
    fn new(ctx: WorkerCtx<Hop>, shared: Arc<Shared>, rx: LocalRx, placement: &P) -> Self {
        let mut cfg = shared.host.clone();
        cfg.worker = ctx.id;
        cfg.workers = ctx.workers;
        let mut host = Host::new(cfg, placement);
        host.set_limits(shared.limits);
        let tx = shared
            .locals
            .get(ctx.id.index())
            .cloned()
            .unwrap_or_else(|| tmpsc::unbounded_channel().0);
        let persist = match shared.persist.lock() {
            Ok(p) => p.clone(),
            Err(p) => p.into_inner().clone(),
        };
        // The range is sliced per worker, so two workers never try the same port.
        let ports = if host.shard_aware_calls() {
            sbi::PortPlan::new(ctx.id.0, ctx.workers.count())
                .map_err(|e| tracing::warn!(error = %e, "no shard-aware SBI ports"))
                .ok()
        } else {
            None
        };
        // Each call has its own deadline (`sbi_io`); the client's own only backs them up.
        let client = Rc::new(SbiClient::new(sbi::ClientConfig {
            short_connections: shared.short_connections,
            ports,
            timeout: shared.host.sbi_timeouts.longest(),
            ..sbi::ClientConfig::default()
        }));
        let tokens = shared
            .oauth_client
            .clone()
            .map(|o| Rc::new(crate::tokens::Tokens::new(o)));
        let peers = Rc::new(std::cell::RefCell::new(crate::peers::Peers::new(
            shared.peers.clone(),
        )));
        Self {
            id: ctx.id,
            workers: ctx.workers,
            tokens,
            peers,
            failovers: Rc::default(),
            mesh: ctx.mesh,
            stop: ctx.stop,
            host,
            pfcp: None,
            pfcp_buf: vec![0u8; PFCP_BUF],
            pfcp_rx: upf::service::PfcpReceiver::new(),
            rx,
            tx,
            client,
            replies: Replies::default(),
            outbox: Outbox::new(shared.max_outbox),
            persist,
            wakes: WakeCounters::default(),
            n2: None,
            ue_msgs: Vec::new(),
            shared,
        }
    }

    async fn run(mut self, listeners: Listeners) {
        {
            let r = if self.shared.nfs.amf {
                self.open_n2()
            } else {
                Ok(())
            };
            let ready = self.shared.ready.lock().ok().and_then(|g| g.clone());
            let failed = r.is_err();
            if let Some(ready) = ready {
                let _ = ready.send(r);
            }
            if failed {
                return;
            }
        }
        self.open_pfcp();
        // The PFCP Association Setup Request the SMF queued goes now, not at the first
        // wake-up (the heartbeat timer's, seconds later).
        self.perform();
        for (nf, l, steered) in listeners {
            match tokio::net::TcpListener::from_std(l) {
                Ok(l) => {
                    let tx = self.tx.clone();
                    let mut server =
                        sbi::Server::new(l, move |req| serve(tx.clone(), nf, steered, req))
                            .max_concurrent_streams(self.shared.sbi_max_streams);
                    if let Some(p) = &self.shared.require_tokens {
                        server = server.require_tokens(p.clone());
                    }
                    tokio::task::spawn_local(server.run());
                }
                Err(e) => tracing::error!(worker = self.id.0, %nf, error = %e, "SBI listener"),
            }
        }
        loop {
            self.flush_mesh();
            self.flush_n2().await;
            if self.stop.is_stopped() {
                break;
            }
            let timer = self.host.poll_timeout();
            let retry = !self.outbox.is_empty();
            let pfcp_sock = self.pfcp.clone();
            let wake = {
                // Readiness only: the datagrams are drained into the worker's one buffer.
                let pfcp = async move {
                    match pfcp_sock {
                        Some(s) => s.readable().await,
                        None => std::future::pending().await,
                    }
                };
                let n2 = async {
                    match self.n2.as_mut() {
                        Some(n) => n.drive(Instant::now() + N2_TICK).await,
                        None => std::future::pending().await,
                    }
                };
                let timer = async {
                    match timer {
                        Some(t) => tokio::time::sleep_until(t.into()).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    _ = self.stop.stopped() => Wake::Stop,
                    _ = self.mesh.recv_ready() => Wake::Mesh,
                    l = self.rx.recv() => Wake::Local(l),
                    r = n2 => Wake::N2(r),
                    p = pfcp => Wake::Pfcp(p),
                    _ = timer => Wake::Timer,
                    _ = tokio::time::sleep(RETRY_PAUSE), if retry => Wake::Retry,
                }
            };
            let cause = wake.cause();
            // Whether the wake-up found a message or event (see `WakeCounters::empty`).
            let mut handled = true;
            match wake {
                Wake::Stop => break,
                Wake::Mesh => {
                    let now = Instant::now();
                    let host = &mut self.host;
                    let got = self.mesh.drain(|_, hop| host.handle(now, Input::Hop(hop)));
                    handled = got > 0;
                }
                Wake::Local(Some(l)) => {
                    self.on_local(l);
                    while let Ok(l) = self.rx.try_recv() {
                        self.on_local(l);
                    }
                }
                Wake::Local(None) | Wake::Retry => handled = false,
                Wake::N2(r) => {
                    if let Err(e) = r {
                        tracing::error!(error = %e, "N2 socket failed");
                        break;
                    }
                    handled = self.on_n2_events();
                }
                Wake::Pfcp(r) => match r {
                    Ok(()) => handled = self.drain_pfcp(),
                    Err(e) => {
                        tracing::debug!(error = %e, "PFCP socket");
                        handled = false;
                    }
                },
                Wake::Timer => self.host.handle_timeout(Instant::now()),
            }
            if let Some(c) = cause {
                self.wakes.count(c, handled);
            }
            self.perform();
            self.publish();
        }
        self.settle_mesh().await;
        self.finish().await;
        self.publish();
    }

    /// Handles what the other workers handed this one before they saw the stop (an NGAP
    /// message read by another worker's association, an answer on its way back), so that
    /// a message already read is not dropped between two workers at shutdown: until the
    /// mesh has been quiet for [`MESH_SETTLE_QUIET`], at most [`MESH_SETTLE_MAX`].
    async fn settle_mesh(&mut self) {
        let start = Instant::now();
        let mut quiet_since = start;
        loop {
            self.flush_mesh();
            self.flush_n2().await;
            let now = Instant::now();
            let host = &mut self.host;
            if self.mesh.drain(|_, hop| host.handle(now, Input::Hop(hop))) > 0 {
                self.perform();
                quiet_since = now;
            }
            if now.duration_since(quiet_since) >= MESH_SETTLE_QUIET
                || now.duration_since(start) >= MESH_SETTLE_MAX
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        self.flush_mesh();
        self.flush_n2().await;
    }

    /// Copies the host's counters and this loop's wake-ups into the worker's block of the
    /// live counters (a few relaxed stores; see `crate::metrics`).
    fn publish(&mut self) {
        let client = self.client.stats();
        if client.refused_retries != self.host.counters().sbi_streams_refused {
            self.host
                .record_io(IoEvent::SbiStreamsRefused(client.refused_retries));
        }
        if client.retries != self.host.counters().call_retries {
            self.host.record_io(IoEvent::SbiRetries(client.retries));
        }
        let failovers = self.failovers.get();
        if failovers != self.host.counters().call_failovers {
            self.host.record_io(IoEvent::SbiFailovers(failovers));
        }
        self.shared
            .live
            .publish(self.id.index(), self.host.counters(), &self.wakes);
        let held = self.held();
        self.shared.live.publish_held(self.id.index(), held);
        let (live, w) = (&self.shared.live, self.id.index());
        self.host
            .amf()
            .drain_pm(|slot, v| live.publish_pm(w, slot, v));
        let registered = self.host.amf().registered_share();
        let gnbs = self.n2.as_ref().map_or(0, |n| n.gnb_count()) as u64;
        live.publish_amf_gauges(w, registered, gnbs);
        if let Some(s) = self.host.smf() {
            live.publish_smf(w, &s.stats());
        }
    }

    /// The contexts this worker's NFs hold.
    fn held(&mut self) -> crate::HeldContexts {
        crate::HeldContexts {
            amf_ues: self.host.amf().contexts() as u64,
            amf_idle: self.host.amf().idle_contexts() as u64,
            ausf: self.host.ausf().contexts() as u64,
            smf: self.host.smf().map_or(0, |s| s.context_count()) as u64,
        }
    }

    /// Carries out everything the host asked for.
    fn perform(&mut self) {
        while let Some(o) = self.host.poll_output() {
            match o {
                Output::Ngap { assoc, stream, pdu } => match self.n2.as_mut() {
                    Some(n) => n.send(assoc, stream, pdu),
                    None => tracing::debug!(assoc, "NGAP message for a worker without N2"),
                },
                Output::Hop { to, hop } => {
                    if let Err((to, hop)) = self.outbox.push(to, hop) {
                        // Refused at ingress: the host answers it (its outputs join this
                        // loop).
                        self.host.hop_refused(Instant::now(), to, hop);
                    }
                }
                Output::SbiCall(c) => self.call(c),
                Output::SbiAnswer { server, response } => self.replies.answer(server, response),
                Output::Pfcp { bytes, .. } => self.send_pfcp(&bytes),
                Output::PersistSqn(request) => {
                    let job = Job::Claim {
                        worker: self.id.index(),
                        request,
                    };
                    if let Err(mpsc::SendError(Job::Claim { request, .. })) = self.persist.send(job)
                    {
                        let done = Input::SqnDone {
                            supi: request.supi,
                            claim: None,
                        };
                        self.host.handle(Instant::now(), done);
                    }
                }
                // The persister is gone only when the core stops: the state is lost with it.
                Output::SaveUdmState(write) => {
                    let _ = self.persist.send(Job::State(write));
                }
            }
        }
    }

    /// Hands queued hops to the mesh; those that meet a full queue wait for the next turn,
    /// in order. Then the AMF's overload transitions go to this worker's N2 side.
    // SendError hands the hop back by value (see Outbox::push).
    #[allow(clippy::result_large_err)]
    fn flush_mesh(&mut self) {
        let mesh = &mut self.mesh;
        let f = self.outbox.flush(|to, hop| mesh.send(to, hop));
        if f.full {
            self.host.record_io(IoEvent::MeshRetry);
        }
        while let Some(signal) = self.host.poll_overload() {
            if let Some(n) = self.n2.as_mut() {
                n.overload(signal);
            }
        }
    }

    fn on_local(&mut self, l: Local) {
        let now = Instant::now();
        let input = match l {
            Local::Serve {
                nf,
                steered,
                req,
                reply,
            } => Input::SbiRequest {
                nf,
                steered,
                req,
                server: self.replies.hold(reply),
            },
            Local::Reply { call, reply } => Input::SbiReply { call, reply },
            Local::SqnDone { supi, claim } => Input::SqnDone { supi, claim },
            Local::SubscriberChanged { supi } => Input::SubscriberChanged { supi },
            Local::Peers { nf, bases } => {
                tracing::info!(worker = self.id.0, %nf, instances = ?bases, "peer instances");
                self.peers.borrow_mut().set(nf, bases);
                return;
            }
        };
        self.host.handle(now, input);
    }

    // ---- N2 ----

    fn open_n2(&mut self) -> Result<(), CoreError> {
        let udp = self
            .shared
            .n2_udp
            .lock()
            .ok()
            .and_then(|mut v| v.get_mut(self.id.index()).and_then(Option::take));
        let raw = self.shared.n2_raw && self.id == WorkerId(0);
        self.n2 = N2Side::open(
            self.id,
            &self.shared.n2_config,
            self.shared.n2_amf.clone(),
            self.shared.n2_limits,
            raw,
            udp,
        )?;
        Ok(())
    }

    async fn flush_n2(&mut self) {
        if let Some(n) = self.n2.as_mut() {
            n.flush().await;
        }
    }

    /// Handles the N2 side's events and gives its UE-associated messages to the host;
    /// false when no NGAP message was read.
    fn on_n2_events(&mut self) -> bool {
        let Some(n) = self.n2.as_mut() else {
            return false;
        };
        let read = n.poll(self.workers, &mut self.ue_msgs);
        self.host.record_io(IoEvent::NgapRead(read));
        let (associations_refused, data_dropped) = n.refusals();
        self.host.record_io(IoEvent::N2Sctp {
            associations_refused,
            data_dropped,
        });
        let now = Instant::now();
        for m in self.ue_msgs.drain(..) {
            self.host.handle(now, Input::Ngap(m));
        }
        read > 0
    }

    // ---- the end ----

    async fn finish(&mut self) {
        if let Some(n) = self.n2.as_mut() {
            let report = n.shutdown(SHUTDOWN_GRACE).await;
            if let Ok(mut g) = self.shared.n2_report.lock() {
                g.push(report);
            }
        }
        let c = *self.host.counters();
        if c.pfcp_rx_dropped > 0 || c.pfcp_send_failed > 0 || c.pfcp_retransmitted > 0 {
            tracing::warn!(
                worker = self.id.0,
                rx_dropped = c.pfcp_rx_dropped,
                send_failed = c.pfcp_send_failed,
                retransmitted = c.pfcp_retransmitted,
                timed_out = c.pfcp_timed_out,
                "PFCP datagrams lost on the SMF side"
            );
        }
        let nf = self.host.nf_stats();
        let held = self.held();
        let report = WorkerReport {
            worker: self.id.0,
            amf: nf.amf,
            ausf: nf.ausf,
            udm: nf.udm,
            amf_sessions: nf.amf_sessions,
            smf: nf.smf,
            smf_contexts: self.host.smf().map_or(0, |s| s.context_count()),
            counters: c,
            wakes: self.wakes,
            held,
        };
        if let Ok(mut g) = self.shared.reports.lock() {
            if let Some(slot) = g.get_mut(self.id.index()) {
                *slot = Some(report);
            }
        }
    }
}
