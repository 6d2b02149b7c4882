//! One worker: its shard of the AMF, AUSF and UDM, its SBI listeners or in-process
//! delivery, its end of the mesh, and its N2 socket(s) with the associations they carry.
//!
//! Everything a worker does happens in one loop that owns all of its state, so nothing is
//! shared inside a worker either: tasks it spawns (SBI client calls, h2c server streams)
//! report back through its local channel.

use std::collections::{HashMap, VecDeque};
use std::net::TcpListener;
use std::rc::Rc;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode};
use ids::ausf::owner_of_auth_ctx_id;
use ids::udm::owner_of_supi;
use nf::amf::n2::AmfN2Config;
use nf::amf::registration::{self, Amf, AmfConfig, IdleUe, UeContext};
use nf::ausf::{self, Ausf, AusfConfig, AuthContext, WallClock};
use nf::smf::{self, SmContext, Smf, SmfConfig};
use nf::state::{ContextMap, ShardMap};
use nf::udm::{self, Forwarded, SidfKeys, Udm, UdmConfig, UeRecord};
use sbi::paths::{resolve, Route};
use sbi::{NfType, ProblemDetails, SbiClient, SbiRequest, SbiResponse, StaticDirectory};
use steer::{MeshEnd, SendError, Stop, WorkerCtx, WorkerId, Workers};
use steer5g_config::N2Config;
use store::{SqnShard, SubscriberStore};
use tokio::sync::{mpsc as tmpsc, oneshot};

use crate::metrics::{Live, WakeCause, WakeCounters};
use crate::n2::{N2Side, UeMessage};
use ids::n2::assoc_owner;

use crate::persist::Job;
use crate::{
    CoreError, CoreOptions, LockedMaps, N2WorkerReport, NfSet, SbiMode, SmfOptions, StateMode,
    WorkerReport,
};

/// Longest a turn waits on the N2 socket(s) before looking at everything else.
const N2_TICK: Duration = Duration::from_millis(50);
/// How long a stopping core waits for its associations to shut down gracefully.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// Pause before retrying mesh sends that found a full queue.
const RETRY_PAUSE: Duration = Duration::from_millis(1);
/// Largest PFCP message the worker reads from the UPF (responses and reports are far
/// smaller; a longer datagram is cut and fails to decode, which the SMF logs).
const PFCP_BUF: usize = 8192;

/// Delivery-path counters of one worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerCounters {
    /// NGAP messages read from this worker's SCTP associations.
    pub ngap_read: u64,
    /// UE-associated NGAP messages handled by this worker's AMF where they were read.
    pub ngap_local: u64,
    /// UE-associated NGAP messages handed to another worker.
    pub ngap_handed_off: u64,
    /// UE-associated NGAP messages received from another worker.
    pub ngap_from_mesh: u64,
    /// NGAP messages this worker's AMF produced and handed to the worker that owns their
    /// association to send.
    pub ngap_out_relayed: u64,
    /// SBI requests read from an h2c connection of this worker.
    pub sbi_served: u64,
    /// SBI requests handled by the NF of the worker that read (or made) them.
    pub sbi_local: u64,
    /// SBI requests handed to the owner worker.
    pub sbi_handed_off: u64,
    /// SBI requests received from another worker.
    pub sbi_from_mesh: u64,
    /// SBI answers sent back to the worker that holds the request.
    pub sbi_answers_relayed: u64,
    /// UDM requests forwarded to the owner after SUCI deconcealment.
    pub udm_forwards: u64,
    /// h2c calls made by this worker's AMF and AUSF.
    pub h2c_calls: u64,
    /// Of those, transport failures answered with 504.
    pub call_failures: u64,
    /// SQN writes asked of the persister.
    pub sqn_writes: u64,
    /// Mesh sends that found the queue full and were retried.
    pub mesh_retries: u64,
    /// SBI requests read from a kernel-steered listener of this worker and handled here
    /// with no hop: the `sk_reuseport` program delivered them to their owner (requests
    /// whose owner only the NF can tell, a SUCI or a new authentication context, count too:
    /// they are handled where they land).
    pub sbi_kernel_steered: u64,
    /// SBI requests read from a kernel-steered listener of this worker that belong to
    /// another worker (a client that is not shard-aware): handed off one hop, and also
    /// counted in `sbi_handed_off`. Zero when every client is shard-aware.
    pub sbi_misdirected: u64,
    /// h2c requests this worker's client sent on the connection of the server worker that
    /// owns them (shard-aware pool).
    pub sbi_pool_steered: u64,
    /// Nsmf_PDUSession requests read from this worker's SMF h2c listener (also in
    /// `sbi_served`).
    pub nsmf_served: u64,
    /// Of those, read from a kernel-steered listener by their owner (no hop).
    pub nsmf_kernel_steered: u64,
    /// Nsmf_PDUSession requests this worker's AMF sent over h2c on the connection of the
    /// SMF worker owning them.
    pub nsmf_pool_steered: u64,
    /// Nsmf_PDUSession requests handed to the owner worker (also in `sbi_handed_off`).
    pub nsmf_handed_off: u64,
    /// Namf_Communication N1N2MessageTransfers read from this worker's AMF h2c listener
    /// (also in `sbi_served`).
    pub namf_served: u64,
    /// Of those, read from a kernel-steered listener by the worker holding the UE.
    pub namf_kernel_steered: u64,
    /// N1N2MessageTransfers this worker's SMF sent over h2c on the connection of the AMF
    /// worker with its own index (the one whose shard called it).
    pub namf_pool_steered: u64,
    /// N1N2MessageTransfers passed to another worker in search of the UE (also in
    /// `sbi_handed_off`): the SUPI in the path does not name the AMF worker, so a transfer
    /// that lands elsewhere goes round the workers until one holds the UE.
    pub namf_handed_off: u64,
    /// PFCP requests the SMF sent again after T1 (TS 29.244 §6.4): each is a session
    /// procedure that waited at least 3 s.
    pub pfcp_retransmitted: u64,
    /// PFCP requests given up on after N1 retransmissions.
    pub pfcp_timed_out: u64,
    /// PFCP datagrams the kernel dropped on this worker's socket (`SO_RXQ_OVFL`: a full
    /// receive buffer).
    pub pfcp_rx_dropped: u64,
    /// PFCP datagrams the socket refused to send (each lost until its retransmission).
    pub pfcp_send_failed: u64,
}

impl WorkerCounters {
    /// Adds `o` to these counters.
    pub fn add(&mut self, o: &WorkerCounters) {
        self.ngap_read += o.ngap_read;
        self.ngap_local += o.ngap_local;
        self.ngap_handed_off += o.ngap_handed_off;
        self.ngap_from_mesh += o.ngap_from_mesh;
        self.ngap_out_relayed += o.ngap_out_relayed;
        self.sbi_served += o.sbi_served;
        self.sbi_local += o.sbi_local;
        self.sbi_handed_off += o.sbi_handed_off;
        self.sbi_from_mesh += o.sbi_from_mesh;
        self.sbi_answers_relayed += o.sbi_answers_relayed;
        self.udm_forwards += o.udm_forwards;
        self.h2c_calls += o.h2c_calls;
        self.call_failures += o.call_failures;
        self.sqn_writes += o.sqn_writes;
        self.mesh_retries += o.mesh_retries;
        self.sbi_kernel_steered += o.sbi_kernel_steered;
        self.sbi_misdirected += o.sbi_misdirected;
        self.sbi_pool_steered += o.sbi_pool_steered;
        self.nsmf_served += o.nsmf_served;
        self.nsmf_kernel_steered += o.nsmf_kernel_steered;
        self.nsmf_pool_steered += o.nsmf_pool_steered;
        self.nsmf_handed_off += o.nsmf_handed_off;
        self.namf_served += o.namf_served;
        self.namf_kernel_steered += o.namf_kernel_steered;
        self.namf_pool_steered += o.namf_pool_steered;
        self.namf_handed_off += o.namf_handed_off;
        self.pfcp_retransmitted += o.pfcp_retransmitted;
        self.pfcp_timed_out += o.pfcp_timed_out;
        self.pfcp_rx_dropped += o.pfcp_rx_dropped;
        self.pfcp_send_failed += o.pfcp_send_failed;
    }
}

/// What travels between workers.
#[derive(Debug)]
pub(crate) enum Msg {
    /// A UE-associated NGAP message for the receiver's AMF.
    Ngap {
        assoc: u32,
        stream: u16,
        ready: bool,
        gnb_id: u32,
        pdu: Vec<u8>,
    },
    /// An NGAP message for the worker that owns association `assoc` to send.
    NgapOut {
        assoc: u32,
        stream: u16,
        pdu: Vec<u8>,
    },
    /// An SBI request for the receiver's NF; answered with [`Msg::Answer`] under `tag`.
    Request {
        nf: NfType,
        from: WorkerId,
        tag: u64,
        req: SbiRequest,
    },
    /// A UDM request handed to the owner of its subscriber.
    Forward {
        from: WorkerId,
        tag: u64,
        fwd: Forwarded,
    },
    /// An N1N2MessageTransfer looking for the AMF worker that holds its UE; `left` workers
    /// not yet asked (the last one answers, 404 if it has no such UE). Answered with
    /// [`Msg::Answer`] under `tag` to `from`.
    Seek {
        from: WorkerId,
        tag: u64,
        req: SbiRequest,
        left: u16,
    },
    /// The answer to request `tag` of the receiver.
    Answer { tag: u64, resp: SbiResponse },
    /// An SQN write completed (the locked mode tells every worker).
    SqnDone {
        supi: String,
        high_water: Option<u64>,
    },
}

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
    /// The reply to an h2c call of the AMF, with the headers Nsmf answers need.
    AmfReply {
        call_id: u64,
        status: StatusCode,
        location: Option<String>,
        content_type: Option<String>,
        body: Bytes,
    },
    /// The reply to an h2c call of the AUSF.
    AusfReply {
        call_id: u64,
        status: StatusCode,
        body: Bytes,
    },
    /// The reply to an h2c call of the SMF.
    SmfReply {
        call_id: u64,
        status: StatusCode,
        body: Bytes,
    },
    /// An SQN write this worker asked for completed.
    SqnDone {
        supi: String,
        high_water: Option<u64>,
    },
}

pub(crate) type LocalTx = tmpsc::UnboundedSender<Local>;
type LocalRx = tmpsc::UnboundedReceiver<Local>;
/// A worker's SBI listeners: the NF, the socket, and whether its group is kernel-steered.
pub(crate) type Listeners = Vec<(NfType, TcpListener, bool)>;
type Ready = mpsc::Sender<Result<(), CoreError>>;

pub(crate) fn local_channels(workers: Workers) -> (Vec<LocalTx>, Vec<LocalRx>) {
    workers.iter().map(|_| tmpsc::unbounded_channel()).unzip()
}

/// The NF settings every worker starts from.
#[derive(Debug, Clone)]
pub(crate) struct NfSettings {
    amf: AmfConfig,
    n2: AmfN2Config,
    snn: String,
    ausf_root: String,
    udm_root: String,
    smf_root: String,
    rand_seed: Option<u64>,
}

impl NfSettings {
    pub(crate) fn from_options(opts: &CoreOptions) -> Result<Self, CoreError> {
        let workers = Workers::new(opts.workers)
            .ok_or_else(|| CoreError::Config("worker count".to_owned()))?;
        let (guami, tacs, slices) = crate::identity(&opts.config)?;
        let mut amf = AmfConfig::new(WorkerId(0), workers);
        amf.guami = guami;
        amf.tais = crate::tais(&guami, &tacs);
        amf.slices = slices;
        amf.always_auth = opts.always_auth;
        if !opts.integrity.is_empty() {
            amf.integrity = opts.integrity.clone();
        }
        if !opts.ciphering.is_empty() {
            amf.ciphering = opts.ciphering.clone();
        }
        if let Some(root) = opts.directory.base_uri(NfType::Amf) {
            amf.api_root = root.to_owned();
        }
        let root = |nf| opts.directory.base_uri(nf).unwrap_or_default().to_owned();
        Ok(Self {
            snn: amf.serving_network_name(),
            n2: crate::amf_n2_config(&opts.config)?,
            amf,
            ausf_root: root(NfType::Ausf),
            udm_root: root(NfType::Udm),
            smf_root: root(NfType::Smf),
            rand_seed: opts.rand_seed,
        })
    }
}

/// What every worker reads at start and writes at the end.
pub(crate) struct Shared {
    pub(crate) settings: NfSettings,
    pub(crate) store: Arc<dyn SubscriberStore>,
    pub(crate) sidf: SidfKeys,
    pub(crate) state: StateMode,
    pub(crate) sbi: SbiMode,
    /// How the AMF and the SMF talk ([`CoreOptions::smf_sbi`]).
    pub(crate) smf_sbi: SbiMode,
    pub(crate) nfs: NfSet,
    pub(crate) short_connections: bool,
    /// Shard-aware h2c clients ([`sbi::pool`]).
    pub(crate) sbi_pool: bool,
    pub(crate) directory: StaticDirectory,
    pub(crate) n2_config: N2Config,
    /// Whether worker 0 opens the raw IP N2 socket.
    pub(crate) n2_raw: bool,
    /// The N2 UDP group: worker i takes entry i.
    pub(crate) n2_udp: Mutex<Vec<Option<std::net::UdpSocket>>>,
    pub(crate) locked: Option<LockedMaps>,
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
    /// The SMF shards' settings (`None`: no SMF), with the UPF address resolved.
    pub(crate) smf: Option<SmfOptions>,
}

/// The worker's body: builds its NF shards (sharded or over the shared maps) and runs.
pub(crate) async fn run(ctx: WorkerCtx<Msg>, shared: Arc<Shared>) {
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
        Some(m) if shared.state == StateMode::Locked => {
            let w = Worker::new(
                ctx,
                shared,
                rx,
                (m.ues, m.idle, m.auth, m.records, m.sqn, m.sm),
            );
            w.run(listeners).await
        }
        _ => {
            let w = Worker::new(
                ctx,
                shared,
                rx,
                (
                    ShardMap::new(),
                    ShardMap::new(),
                    ShardMap::new(),
                    ShardMap::new(),
                    ShardMap::new(),
                    ShardMap::new(),
                ),
            );
            w.run(listeners).await
        }
    }
}

/// Who waits for the answer to an SBI request this worker holds.
enum Origin {
    /// An h2c stream of this worker.
    Server(oneshot::Sender<SbiResponse>),
    /// A call of this worker's AMF (in-process SBI).
    Amf(u64),
    /// A call of this worker's AUSF (in-process SBI).
    Ausf(u64),
    /// A call of this worker's SMF (in-process SBI).
    Smf(u64),
    /// A request another worker holds under its own tag.
    Remote { from: WorkerId, tag: u64 },
}

#[derive(Clone, Copy)]
enum Caller {
    Amf(u64),
    Ausf(u64),
    Smf(u64),
}

struct Worker<AM, AP, AC, UR, UQ, SM> {
    id: WorkerId,
    workers: Workers,
    mesh: MeshEnd<Msg>,
    stop: Stop,
    shared: Arc<Shared>,
    amf: Amf<AM, AP>,
    ausf: Ausf<AC>,
    udm: Udm<UR, UQ>,
    smf: Option<Smf<SM>>,
    /// This worker's PFCP socket towards the UPF (with the SMF).
    pfcp: Option<Rc<tokio::net::UdpSocket>>,
    /// The SMF's PFCP requests in flight (T1/N1, TS 29.244 §6.4).
    pfcp_retx: crate::pfcp_retx::Retransmit,
    /// Receive buffer of the PFCP socket, reused for every datagram.
    pfcp_buf: Vec<u8>,
    /// Reads the PFCP socket with the kernel's drop count.
    pfcp_rx: upf::service::PfcpReceiver,
    rx: LocalRx,
    tx: LocalTx,
    client: Rc<SbiClient>,
    next_tag: u64,
    origins: HashMap<u64, Origin>,
    outbox: VecDeque<(WorkerId, Msg)>,
    persist: mpsc::Sender<Job>,
    counters: WorkerCounters,
    wakes: WakeCounters,
    n2: Option<N2Side>,
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

impl<AM, AP, AC, UR, UQ, SM> Worker<AM, AP, AC, UR, UQ, SM>
where
    AM: ContextMap<u64, UeContext>,
    AP: ContextMap<u32, IdleUe>,
    AC: ContextMap<String, AuthContext>,
    UR: ContextMap<String, UeRecord>,
    UQ: ContextMap<(), SqnShard>,
    SM: ContextMap<u64, SmContext>,
{
    fn new(
        ctx: WorkerCtx<Msg>,
        shared: Arc<Shared>,
        rx: LocalRx,
        maps: (AM, AP, AC, UR, UQ, SM),
    ) -> Self {
        let (ues, idle, auth, records, sqn, sm) = maps;
        let s = &shared.settings;
        let mut amf_cfg = s.amf.clone();
        amf_cfg.worker = ctx.id;
        amf_cfg.workers = ctx.workers;
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let ausf = Ausf::new(
            AusfConfig {
                worker: ctx.id,
                workers: ctx.workers,
                api_root: s.ausf_root.clone(),
                serving_networks: vec![s.snn.clone()],
                instance_id: "7c5d4a2e-0000-4000-8000-000000000011".to_owned(),
                context_timeout: ausf::DEFAULT_CONTEXT_TIMEOUT,
                wall_clock: Some(WallClock {
                    at: Instant::now(),
                    unix_ms,
                }),
            },
            auth,
        );
        let udm = Udm::new(
            UdmConfig {
                worker: ctx.id,
                workers: ctx.workers,
                api_root: s.udm_root.clone(),
                serving_networks: vec![s.snn.clone()],
                hn_keys: shared.sidf.clone(),
                rand_seed: s.rand_seed,
            },
            shared.store.clone(),
            records,
            sqn,
        );
        let smf = shared.smf.as_ref().map(|o| {
            Smf::new(
                SmfConfig {
                    worker: ctx.id,
                    workers: ctx.workers,
                    api_root: s.smf_root.clone(),
                    node_id: pfcp::ie::NodeId::Ipv4(o.pfcp_ip),
                    pfcp_ip: o.pfcp_ip,
                    upf: o.upf,
                    dnns: o.dnns.clone(),
                    slices: o.slices.clone(),
                    urr_volume_threshold: 1 << 30,
                },
                sm,
            )
        });
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
        let ports = if shared.sbi_pool {
            sbi::PortPlan::new(ctx.id.0, ctx.workers.count())
                .map_err(|e| tracing::warn!(error = %e, "no shard-aware SBI ports"))
                .ok()
        } else {
            None
        };
        let client = Rc::new(SbiClient::new(sbi::ClientConfig {
            short_connections: shared.short_connections,
            ports,
            ..sbi::ClientConfig::default()
        }));
        Self {
            id: ctx.id,
            workers: ctx.workers,
            mesh: ctx.mesh,
            stop: ctx.stop,
            amf: Amf::new(amf_cfg, ues, idle),
            ausf,
            udm,
            smf,
            pfcp: None,
            pfcp_retx: crate::pfcp_retx::Retransmit::default(),
            pfcp_buf: vec![0u8; PFCP_BUF],
            pfcp_rx: upf::service::PfcpReceiver::new(),
            rx,
            tx,
            client,
            next_tag: 0,
            origins: HashMap::new(),
            outbox: VecDeque::new(),
            persist,
            counters: WorkerCounters::default(),
            wakes: WakeCounters::default(),
            n2: None,
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
        for (nf, l, steered) in listeners {
            match tokio::net::TcpListener::from_std(l) {
                Ok(l) => {
                    let tx = self.tx.clone();
                    tokio::task::spawn_local(sbi::serve(l, move |req| {
                        serve(tx.clone(), nf, steered, req)
                    }));
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
            let timer = [
                self.amf.poll_timeout(),
                self.ausf.poll_timeout(),
                self.pfcp_retx.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
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
                    let mut got = Vec::new();
                    self.mesh.drain(|_, m| got.push(m));
                    handled = !got.is_empty();
                    for m in got {
                        self.on_msg(m);
                    }
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
                    let before = self.counters.ngap_read;
                    self.on_n2_events();
                    handled = self.counters.ngap_read != before;
                }
                Wake::Pfcp(r) => match r {
                    Ok(()) => handled = self.drain_pfcp(),
                    Err(e) => {
                        tracing::debug!(error = %e, "PFCP socket");
                        handled = false;
                    }
                },
                Wake::Timer => {
                    let now = Instant::now();
                    self.amf.handle_timeout(now);
                    self.ausf.handle_timeout(now);
                    let (resend, expired) = self.pfcp_retx.handle_timeout(now);
                    for bytes in &resend {
                        self.send_pfcp(bytes);
                    }
                    self.counters.pfcp_retransmitted = self.pfcp_retx.retransmitted;
                    self.counters.pfcp_timed_out = self.pfcp_retx.timed_out;
                    if let Some(smf) = self.smf.as_mut() {
                        for seq in expired {
                            smf.pfcp_timeout(seq);
                        }
                    }
                }
            }
            if let Some(c) = cause {
                self.wakes.count(c, handled);
            }
            self.pump();
            self.publish();
        }
        self.finish().await;
        self.publish();
    }

    /// Copies this worker's counters into its block of the live counters (a few relaxed
    /// stores; see `crate::metrics`).
    fn publish(&self) {
        self.shared
            .live
            .publish(self.id.index(), &self.counters, &self.wakes);
    }

    fn new_tag(&mut self) -> u64 {
        let t = self.next_tag;
        self.next_tag = self.next_tag.wrapping_add(1);
        t
    }

    fn send(&mut self, to: WorkerId, msg: Msg) {
        self.outbox.push_back((to, msg));
    }

    /// Hands queued messages to the mesh; those that meet a full queue wait for the next
    /// turn, in order.
    fn flush_mesh(&mut self) {
        while let Some((to, msg)) = self.outbox.pop_front() {
            match self.mesh.send(to, msg) {
                Ok(()) => {}
                Err(SendError::Full(m)) => {
                    self.counters.mesh_retries += 1;
                    self.outbox.push_front((to, m));
                    break;
                }
                Err(e) => {
                    tracing::error!(to = to.0, error = %e, "mesh send failed; message dropped");
                }
            }
        }
    }

    // ---- PFCP ----

    /// Binds this worker's PFCP socket (connected to the UPF) and starts the association.
    fn open_pfcp(&mut self) {
        let Some(o) = self.shared.smf.clone() else {
            return;
        };
        let sock = std::net::UdpSocket::bind((o.pfcp_ip, 0))
            .and_then(|s| {
                s.connect(o.upf)?;
                s.set_nonblocking(true)?;
                let b = upf::service::size_pfcp_socket(&s);
                tracing::debug!(
                    worker = self.id.0,
                    recv = b.recv,
                    send = b.send,
                    "PFCP socket"
                );
                Ok(s)
            })
            .and_then(tokio::net::UdpSocket::from_std);
        match sock {
            Ok(s) => {
                self.pfcp = Some(Rc::new(s));
                if let Some(smf) = self.smf.as_mut() {
                    smf.associate(upf::service::ntp_now());
                }
            }
            Err(e) => tracing::error!(worker = self.id.0, error = %e, "PFCP socket"),
        }
    }

    /// Hands every datagram the UPF has sent to the retransmission tracker and the SMF,
    /// without waiting; false when there was none (a spurious readiness).
    fn drain_pfcp(&mut self) -> bool {
        let Some(s) = self.pfcp.clone() else {
            return false;
        };
        let mut any = false;
        loop {
            match self.pfcp_rx.try_recv_from(&s, &mut self.pfcp_buf) {
                Ok((n, _)) => {
                    any = true;
                    let bytes = self.pfcp_buf.get(..n).unwrap_or_default();
                    self.pfcp_retx.answered(bytes);
                    if let Some(smf) = self.smf.as_mut() {
                        smf.handle_pfcp(bytes);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    // ICMP port unreachable before the UPF is up surfaces here.
                    tracing::debug!(error = %e, "PFCP receive");
                    break;
                }
            }
        }
        self.counters.pfcp_rx_dropped = self.pfcp_rx.dropped();
        any
    }

    fn send_pfcp(&mut self, bytes: &[u8]) {
        // Requests are sent again by `pfcp_retx` (TS 29.244 §6.4) when unanswered.
        let Some(s) = self.pfcp.as_ref() else {
            tracing::debug!("PFCP message without a PFCP socket");
            return;
        };
        // A plain send(2), not `try_send`: Tokio's `try_send` answers WouldBlock without
        // trying until its reactor has seen the socket writable, which a new socket has not
        // yet: a request sent right after the bind would be dropped unsent.
        if let Err(e) = socket2::SockRef::from(&**s).send(bytes) {
            self.counters.pfcp_send_failed += 1;
            // Loud at the 1st, 2nd, 4th, ... failure: a UPF that is down (ICMP refusals)
            // fails every send, which must not flood the log.
            if self.counters.pfcp_send_failed.is_power_of_two() {
                let n = self.counters.pfcp_send_failed;
                tracing::warn!(worker = self.id.0, error = %e, failures = n, "PFCP send failed; sent again after T1");
            } else {
                tracing::debug!(worker = self.id.0, error = %e, "PFCP send failed");
            }
        }
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
            self.shared.settings.n2.clone(),
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

    /// Sends on the association's own worker: here, or one hop away (its id names it).
    fn send_ngap(&mut self, assoc: u32, stream: u16, pdu: Vec<u8>) {
        let owner = assoc_owner(assoc);
        if owner == self.id {
            match self.n2.as_mut() {
                Some(n) => n.send(assoc, stream, pdu),
                None => tracing::debug!(assoc, "NGAP message for a worker without N2"),
            }
        } else if self.workers.contains(owner) {
            self.counters.ngap_out_relayed += 1;
            self.send(owner, Msg::NgapOut { assoc, stream, pdu });
        } else {
            tracing::debug!(assoc, "NGAP message for an association of no worker");
        }
    }

    fn on_n2_events(&mut self) {
        let mut ue_msgs = Vec::new();
        if let Some(n) = self.n2.as_mut() {
            self.counters.ngap_read += n.poll(self.workers, &mut ue_msgs);
        }
        for UeMessage {
            route,
            assoc,
            stream,
            ready,
            gnb_id,
            pdu,
        } in ue_msgs
        {
            let to = match self.shared.state {
                StateMode::Sharded => route.worker().unwrap_or(self.id),
                // The baseline handles a message wherever it lands; spreading by SCTP
                // stream keeps one UE's messages (one stream, RFC 9260 §6.6 ordered
                // delivery) in order, as one reader per stream would.
                StateMode::Locked => WorkerId(stream % self.workers.count()),
            };
            if to == self.id {
                self.counters.ngap_local += 1;
                self.amf
                    .handle_ngap(Instant::now(), assoc, stream, ready, gnb_id, &pdu);
            } else {
                self.counters.ngap_handed_off += 1;
                self.send(
                    to,
                    Msg::Ngap {
                        assoc,
                        stream,
                        ready,
                        gnb_id,
                        pdu,
                    },
                );
            }
        }
    }

    // ---- mesh and local events ----

    fn on_msg(&mut self, m: Msg) {
        match m {
            Msg::Ngap {
                assoc,
                stream,
                ready,
                gnb_id,
                pdu,
            } => {
                self.counters.ngap_from_mesh += 1;
                self.amf
                    .handle_ngap(Instant::now(), assoc, stream, ready, gnb_id, &pdu);
            }
            Msg::NgapOut { assoc, stream, pdu } => self.send_ngap(assoc, stream, pdu),
            Msg::Request { nf, from, tag, req } => {
                self.counters.sbi_from_mesh += 1;
                let t = self.new_tag();
                self.origins.insert(t, Origin::Remote { from, tag });
                self.handle_here(nf, t, req);
            }
            Msg::Forward { from, tag, fwd } => {
                self.counters.sbi_from_mesh += 1;
                let t = self.new_tag();
                self.origins.insert(t, Origin::Remote { from, tag });
                self.udm.handle_forwarded(t, fwd);
            }
            Msg::Seek {
                from,
                tag,
                req,
                left,
            } => {
                self.counters.sbi_from_mesh += 1;
                if left <= 1 || self.amf.holds_n1n2_target(&req.path) {
                    let t = self.new_tag();
                    self.origins.insert(t, Origin::Remote { from, tag });
                    self.handle_here(NfType::Amf, t, req);
                } else {
                    self.seek(from, tag, req, left - 1);
                }
            }
            Msg::Answer { tag, resp } => self.complete(tag, resp),
            Msg::SqnDone { supi, high_water } => self.sqn_done(&supi, high_water),
        }
    }

    fn on_local(&mut self, l: Local) {
        match l {
            Local::Serve {
                nf,
                steered,
                req,
                reply,
            } => {
                self.counters.sbi_served += 1;
                match nf {
                    NfType::Smf => self.counters.nsmf_served += 1,
                    NfType::Amf => self.counters.namf_served += 1,
                    _ => {}
                }
                let t = self.new_tag();
                self.origins.insert(t, Origin::Server(reply));
                let to = self.owner(nf, &req);
                // The locked baseline handles every request where it lands: no path to
                // count there.
                if steered && self.shared.state == StateMode::Sharded {
                    // The owner of an N1N2MessageTransfer is the worker holding its UE.
                    let here = to == self.id
                        && (nf != NfType::Amf || self.amf.holds_n1n2_target(&req.path));
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
                self.deliver_to(to, nf, t, req);
            }
            Local::AmfReply {
                call_id,
                status,
                location,
                content_type,
                body,
            } => self.amf.handle_sbi_response(
                Instant::now(),
                call_id,
                status,
                location.as_deref(),
                content_type.as_deref(),
                &body,
            ),
            Local::AusfReply {
                call_id,
                status,
                body,
            } => self
                .ausf
                .handle_reply(Instant::now(), call_id, status, &body),
            Local::SmfReply {
                call_id,
                status,
                body,
            } => {
                if let Some(smf) = self.smf.as_mut() {
                    smf.handle_reply(call_id, status, &body);
                }
            }
            Local::SqnDone { supi, high_water } => {
                if self.shared.state == StateMode::Locked {
                    // Any worker may have parked a request behind this reservation.
                    let me = self.id;
                    for w in self.workers.iter().filter(|w| *w != me) {
                        self.send(
                            w,
                            Msg::SqnDone {
                                supi: supi.clone(),
                                high_water,
                            },
                        );
                    }
                }
                self.sqn_done(&supi, high_water);
            }
        }
    }

    fn sqn_done(&mut self, supi: &str, high_water: Option<u64>) {
        match high_water {
            Some(hw) => self.udm.sqn_persisted(supi, hw),
            None => self.udm.sqn_persist_failed(supi),
        }
    }

    // ---- SBI ----

    /// The worker whose NF owns the state `req` touches (this one in the locked mode, and
    /// for requests that create state or whose owner only the NF can tell).
    fn owner(&self, nf: NfType, req: &SbiRequest) -> WorkerId {
        if self.shared.state == StateMode::Locked {
            return self.id;
        }
        request_owner(nf, &req.method, &req.path, self.workers).unwrap_or(self.id)
    }

    /// A request this worker holds under `tag`: handled here or one hop away at its owner.
    fn deliver(&mut self, nf: NfType, tag: u64, req: SbiRequest) {
        let to = self.owner(nf, &req);
        self.deliver_to(to, nf, tag, req);
    }

    /// A request this worker holds under `tag`, whose owner is `to`.
    fn deliver_to(&mut self, to: WorkerId, nf: NfType, tag: u64, req: SbiRequest) {
        if to == self.id {
            let count = self.workers.count();
            if nf == NfType::Amf && count > 1 && !self.amf.holds_n1n2_target(&req.path) {
                // The SUPI in an N1N2MessageTransfer's path does not say which worker holds
                // the UE: ask the others in turn.
                let from = self.id;
                return self.seek(from, tag, req, count - 1);
            }
            self.handle_here(nf, tag, req);
        } else {
            self.counters.sbi_handed_off += 1;
            if nf == NfType::Smf {
                self.counters.nsmf_handed_off += 1;
            }
            let from = self.id;
            self.send(to, Msg::Request { nf, from, tag, req });
        }
    }

    /// Passes an N1N2MessageTransfer held by `from` under `tag` to the next worker.
    fn seek(&mut self, from: WorkerId, tag: u64, req: SbiRequest, left: u16) {
        self.counters.sbi_handed_off += 1;
        self.counters.namf_handed_off += 1;
        let next = WorkerId((self.id.0 + 1) % self.workers.count());
        self.send(
            next,
            Msg::Seek {
                from,
                tag,
                req,
                left,
            },
        );
    }

    fn handle_here(&mut self, nf: NfType, tag: u64, req: SbiRequest) {
        self.counters.sbi_local += 1;
        match nf {
            NfType::Ausf => self.ausf.handle_request(Instant::now(), tag, req),
            NfType::Udm => self.udm.handle_request(tag, req),
            NfType::Amf => self.amf.handle_request(tag, req),
            NfType::Smf if self.smf.is_some() => {
                if let Some(smf) = self.smf.as_mut() {
                    smf.handle_request(tag, req);
                }
            }
            other => {
                let p = ProblemDetails::resource_not_found(&format!("{other}: {}", req.path));
                self.complete(tag, SbiResponse::problem(&p));
            }
        }
    }

    /// The answer to the request held under `tag`.
    fn complete(&mut self, tag: u64, resp: SbiResponse) {
        match self.origins.remove(&tag) {
            Some(Origin::Server(reply)) => {
                // The client may have gone; nothing to do then.
                let _ = reply.send(resp);
            }
            Some(Origin::Amf(call_id)) => {
                let location = resp
                    .headers
                    .get(http::header::LOCATION)
                    .and_then(|v| v.to_str().ok());
                self.amf.handle_sbi_response(
                    Instant::now(),
                    call_id,
                    resp.status,
                    location,
                    resp.content_type,
                    &resp.body,
                )
            }
            Some(Origin::Smf(call_id)) => {
                if let Some(smf) = self.smf.as_mut() {
                    smf.handle_reply(call_id, resp.status, &resp.body);
                }
            }
            Some(Origin::Ausf(call_id)) => {
                self.ausf
                    .handle_reply(Instant::now(), call_id, resp.status, &resp.body)
            }
            Some(Origin::Remote { from, tag }) => {
                self.counters.sbi_answers_relayed += 1;
                self.send(from, Msg::Answer { tag, resp });
            }
            None => tracing::debug!(tag, "answer to no request"),
        }
    }

    /// A call of this worker's AMF or AUSF. Every call is answered (TS 29.500 §5.2.7: a
    /// transport failure is a 504 to the caller).
    fn call(
        &mut self,
        caller: Caller,
        nf: NfType,
        method: Method,
        path: String,
        content_type: &'static str,
        body: Bytes,
    ) {
        // Nsmf and Namf_Communication follow the AMF-SMF setting, the AUSF and UDM the rest.
        let mode = match nf {
            NfType::Smf | NfType::Amf => self.shared.smf_sbi,
            _ => self.shared.sbi,
        };
        if mode == SbiMode::Inproc {
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
            let tag = self.new_tag();
            let origin = match caller {
                Caller::Amf(c) => Origin::Amf(c),
                Caller::Ausf(c) => Origin::Ausf(c),
                Caller::Smf(c) => Origin::Smf(c),
            };
            self.origins.insert(tag, origin);
            return self.deliver(nf, tag, req);
        }
        self.counters.h2c_calls += 1;
        let uri = self.shared.directory.uri(nf, &path);
        let owner = self.call_owner(nf, &method, &path);
        if owner.is_some() {
            self.counters.sbi_pool_steered += 1;
            match nf {
                NfType::Smf => self.counters.nsmf_pool_steered += 1,
                NfType::Amf => self.counters.namf_pool_steered += 1,
                _ => {}
            }
        }
        let client = self.client.clone();
        let tx = self.tx.clone();
        tokio::task::spawn_local(async move {
            let got = match uri {
                Some(uri) => client
                    .request_typed(
                        method,
                        &uri,
                        (!body.is_empty()).then_some(body),
                        content_type,
                        owner,
                    )
                    .await
                    .map_err(|e| e.to_string()),
                None => Err(format!("no {nf} in the directory")),
            };
            let (status, location, ct, body) = match got {
                Ok(r) => {
                    let header = |h| {
                        r.headers
                            .get(h)
                            .and_then(|v: &http::HeaderValue| v.to_str().ok())
                            .map(str::to_owned)
                    };
                    let location = header(http::header::LOCATION);
                    let ct = header(http::header::CONTENT_TYPE);
                    (r.status, location, ct, r.body)
                }
                Err(e) => {
                    tracing::debug!(%nf, error = %e, "SBI call failed");
                    (StatusCode::GATEWAY_TIMEOUT, None, None, Bytes::new())
                }
            };
            let msg = match caller {
                Caller::Amf(call_id) => Local::AmfReply {
                    call_id,
                    status,
                    location,
                    content_type: ct,
                    body,
                },
                Caller::Ausf(call_id) => Local::AusfReply {
                    call_id,
                    status,
                    body,
                },
                Caller::Smf(call_id) => Local::SmfReply {
                    call_id,
                    status,
                    body,
                },
            };
            let _ = tx.send(msg);
        });
    }

    /// The server worker a shard-aware call goes to (`None` without the pool): the owner the
    /// request names, else the server worker with this worker's index, so that co-located
    /// shards keep calling their own core and new state spreads as the callers do (the
    /// AMF already placed its UEs by hash).
    fn call_owner(&self, nf: NfType, method: &Method, path: &str) -> Option<sbi::Owner> {
        if !self.shared.sbi_pool {
            return None;
        }
        let count = self
            .shared
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

    /// Carries out what the NFs asked for until none has anything left.
    fn pump(&mut self) {
        loop {
            let mut progress = false;
            while let Some(a) = self.amf.poll_action() {
                progress = true;
                match a {
                    registration::Action::Ngap { assoc, stream, pdu } => {
                        self.send_ngap(assoc, stream, pdu)
                    }
                    registration::Action::Call {
                        call_id,
                        nf,
                        method,
                        path,
                        content_type,
                        body,
                    } => self.call(Caller::Amf(call_id), nf, method, path, content_type, body),
                    registration::Action::Respond { req_id, response } => {
                        self.complete(req_id, response)
                    }
                    other => tracing::warn!(?other, "AMF action this runtime does not carry out"),
                }
            }
            while let Some(a) = self.ausf.poll_action() {
                progress = true;
                match a {
                    ausf::Action::Respond { req_id, response } => self.complete(req_id, response),
                    ausf::Action::Call {
                        call_id,
                        nf,
                        method,
                        path,
                        body,
                    } => self.call(
                        Caller::Ausf(call_id),
                        nf,
                        method,
                        path,
                        sbi::multipart::JSON,
                        body,
                    ),
                    other => tracing::warn!(?other, "AUSF action this runtime does not carry out"),
                }
            }
            while let Some(a) = self.udm.poll_action() {
                progress = true;
                match a {
                    udm::Action::Respond { req_id, response } => self.complete(req_id, response),
                    udm::Action::Forward {
                        to,
                        req_id,
                        request,
                    } => {
                        self.counters.udm_forwards += 1;
                        let from = self.id;
                        self.send(
                            to,
                            Msg::Forward {
                                from,
                                tag: req_id,
                                fwd: request,
                            },
                        );
                    }
                    udm::Action::PersistSqn(p) => {
                        self.counters.sqn_writes += 1;
                        let job = Job {
                            worker: self.id.index(),
                            request: p,
                        };
                        if let Err(mpsc::SendError(job)) = self.persist.send(job) {
                            self.udm.sqn_persist_failed(&job.request.supi);
                        }
                    }
                    other => tracing::warn!(?other, "UDM action this runtime does not carry out"),
                }
            }
            while let Some(a) = self.smf.as_mut().and_then(Smf::poll_action) {
                progress = true;
                match a {
                    smf::Action::Respond { req_id, response } => self.complete(req_id, response),
                    smf::Action::Call {
                        call_id,
                        nf,
                        method,
                        path,
                        content_type,
                        body,
                    } => self.call(Caller::Smf(call_id), nf, method, path, content_type, body),
                    smf::Action::Pfcp {
                        sequence, bytes, ..
                    } => {
                        self.pfcp_retx.sent(Instant::now(), sequence, &bytes);
                        self.send_pfcp(&bytes)
                    }
                    smf::Action::PfcpResponse { bytes, .. } => self.send_pfcp(&bytes),
                    smf::Action::Forward { req_id, .. } => {
                        // `request_owner` already sends each Nsmf request to the worker its
                        // SM context ref names, so a hand-over here is a routing bug.
                        tracing::warn!("SMF asked to forward a request");
                        let p = ProblemDetails::unspecified_nf_failure("SM context misrouted");
                        self.complete(req_id, SbiResponse::problem(&p));
                    }
                    other => tracing::warn!(?other, "SMF action this runtime does not carry out"),
                }
            }
            if !progress {
                break;
            }
        }
    }

    // ---- the end ----

    async fn finish(&mut self) {
        if let Some(n) = self.n2.as_mut() {
            let report = n.shutdown(SHUTDOWN_GRACE).await;
            if let Ok(mut g) = self.shared.n2_report.lock() {
                g.push(report);
            }
        }
        let c = &self.counters;
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
        let report = WorkerReport {
            worker: self.id.0,
            amf: self.amf.stats(),
            ausf: self.ausf.stats(),
            udm: self.udm.stats(),
            amf_sessions: self.amf.session_stats(),
            smf: self.smf.as_ref().map(Smf::stats).unwrap_or_default(),
            counters: self.counters,
            wakes: self.wakes,
        };
        if let Ok(mut g) = self.shared.reports.lock() {
            if let Some(slot) = g.get_mut(self.id.index()) {
                *slot = Some(report);
            }
        }
    }
}

/// The worker of `workers` owning the state that `method path` at `nf` touches, when the
/// request names it: the worker written into an AUSF authCtxId, hash(SUPI) for the UDM.
/// `None` when only the NF can tell (a SUCI is deconcealed where it lands and the UDM
/// forwards it; a new authentication context is created where it lands). Both the server
/// (where to hand a request) and the shard-aware client (which connection to use) ask this.
pub(crate) fn request_owner(
    nf: NfType,
    method: &Method,
    path: &str,
    workers: Workers,
) -> Option<WorkerId> {
    match nf {
        NfType::Ausf => resolve(&[Route::FiveGAkaConfirmation], method, path)
            .ok()
            .and_then(|m| m.param("authCtxId").map(str::to_owned))
            .and_then(|id| owner_of_auth_ctx_id(&id, workers)),
        NfType::Udm => {
            let routes = [
                Route::GenerateAuthData,
                Route::AuthEvents,
                Route::Amf3GppAccessRegistration,
                Route::AmData,
                Route::SmfSelectData,
                Route::Nssai,
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

/// One request read by a worker's h2c server: handed to the worker's loop, answered when
/// the owning NF answers.
async fn serve(tx: LocalTx, nf: NfType, steered: bool, req: SbiRequest) -> SbiResponse {
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
