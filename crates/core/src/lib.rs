//! `steer5g core`: the AMF, AUSF and UDM in one process, on the thread-per-core runtime
//! of [`steer`]: each worker is one thread with its own single-threaded runtime and owns
//! the state of the subscribers placed on it.
//!
//! Every worker drives one [`nf::host::Host`]: a shard of each NF behind one sans-IO
//! interface. This crate is its I/O: sockets, the mesh, timers, the SQN persister and
//! metrics. In [`StateMode::Sharded`] each shard owns its contexts in a
//! [`nf::state::ShardMap`] and a message read on a worker that does not own its state goes
//! one hop over the mesh to the owner; in [`StateMode::Locked`] (the baseline of the
//! papers) every worker holds clones of shared [`nf::state::LockedMap`]s and handles
//! whatever it reads ([`nf::host::placement`] has every difference). The NF code is the
//! same.
//!
//! N2 associations spread over the workers: with UDP encapsulation
//! every worker reads its own socket of an `SO_REUSEPORT` group, steered by SCTP source
//! port, and owns the associations and non-UE N2 state ([`nf::amf::n2::AmfN2`]) that reach
//! it; raw IP stays on worker 0 ([`N2Placement`]). UE-associated messages are split by owner
//! where they are read. The SBI is either real h2c ([`SbiMode::H2c`]: one
//! `SO_REUSEPORT` listener per worker and NF) or in-process ([`SbiMode::Inproc`]: the same
//! request and response bodies handed to the co-located NF, no sockets).
//!
//! # SBI steering
//!
//! Each h2c listener (AUSF, UDM) is a [`steer_bpf::ReuseportGroup`]: worker i accepts on
//! socket i, and the group's `sk_reuseport` program gives a new connection to worker
//! `source port % workers` (exception map first). The h2c clients of the workers are
//! shard-aware ([`sbi::pool`]): for a request whose owner the request itself names (a SUPI
//! in a UDM path, the worker written into an AUSF authCtxId) the client sends it on its
//! connection to that server worker, bound to a source port the program maps there; a
//! request whose owner only the server can tell (a SUCI, a new authentication context) goes
//! to the server worker with the caller's own index, so co-located shards keep talking to
//! their own core. Such a request then arrives at its owner with no hop:
//! [`WorkerCounters::sbi_kernel_steered`] on the server, [`WorkerCounters::sbi_pool_steered`]
//! on the client. A request that came through a steered listener but belongs elsewhere (a
//! client that is not shard-aware) is still handed one hop to its owner and counted in
//! [`WorkerCounters::sbi_misdirected`].
//!
//! Without the privilege to load BPF (or with [`BpfPolicy::Off`]) the listeners are
//! plain `SO_REUSEPORT` groups, the kernel's hash spreads connections, and each worker hands
//! requests it does not own one hop over the mesh ([`WorkerCounters::sbi_handed_off`]):
//! everything works, [`Listening::sbi`] says which mechanism each interface uses, and the
//! command line prints it. [`BpfPolicy::Require`] (`--require-bpf`, used by CI) makes a
//! failed load fatal ([`CoreError::Bpf`]) instead.
//!
//! Short connections close with `SO_LINGER` 0 after the whole response is read, so neither
//! side keeps TIME_WAIT sockets, and rotate through the owner's source ports
//! ([`sbi::pool`] has the reasoning).
//!
//! UDM SQN reservations are written by a persister thread off the hot path.
//!
//! # The SMF
//!
//! With [`CoreOptions::smf`] every worker also hosts an SMF shard (PFCP socket of its own).
//! The AMF and the SMF talk as [`CoreOptions::smf_sbi`] says: in-process, or over h2c
//! (Nsmf_PDUSession on the SMF's listener group, Namf_Communication N1N2MessageTransfer on
//! the AMF's), in one process or across processes (`steer5g smf`, `steer5g amf --smf`).
//! Nsmf requests are steered by the worker their SM context ref names; an N1N2 transfer
//! names its UE by SUPI only, so the SMF sends it to the AMF worker with its own index (the
//! one whose shard called it when worker counts match) and a transfer that lands on a worker
//! without the UE goes round the others ([`WorkerCounters::namf_handed_off`]).

mod metrics;
mod n2;
mod peers;
mod persist;
pub mod provisioning;
mod settings;
pub mod tokens;
mod worker;

use std::net::{SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use nf::amf::n2::{AmfN2Config, N2Stats};
use nf::amf::registration::SessionStats;
use nf::ausf::AusfStats;
use nf::host::Locked;
pub use nf::smf::DnnPool;
use nf::smf::SmfStats;
use nf::state::LockStats;
use nf::udm::{SidfKeys, UdmStats};
use proto::ids::{Guami, Plmn, Snssai, Tac, Tai};
use proto::nas::{CipheringAlgorithm, IntegrityAlgorithm};
use sbi::{NfType, StaticDirectory};
use steer::mesh::MeshCounters;
use steer::{Runtime, RuntimeOptions, Workers};
use steer5g_config::{Config, Transport as TransportKind};
use store::{MemStore, RedbStore, SubscriberStore};

pub use metrics::WakeCounters;
pub use nf::amf::registration::AmfStats;
pub use nf::host::{SbiMode, WorkerCounters};

/// Where per-UE state lives: the sharded mode, or the locking baseline that runs the same
/// NF code so that the two can be compared in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateMode {
    /// Each worker owns its shard; messages hop to the owner.
    Sharded,
    /// One locked map shared by every worker; messages handled where they are read.
    Locked,
}

/// Which NFs this process hosts; the others are reached over h2c at their
/// [`StaticDirectory`] addresses (each NF can also run as a process of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NfSet {
    /// The AMF: N2 sockets and registration on every worker ([`N2Placement`]).
    pub amf: bool,
    /// The AUSF and its h2c listener.
    pub ausf: bool,
    /// The UDM (with the UDR store and home network keys of the data dir) and its h2c
    /// listener.
    pub udm: bool,
}

impl NfSet {
    /// The AMF, AUSF and UDM together (`steer5g core`).
    pub const ALL: NfSet = NfSet {
        amf: true,
        ausf: true,
        udm: true,
    };
    /// The AMF alone (`steer5g amf`).
    pub const AMF: NfSet = NfSet {
        amf: true,
        ausf: false,
        udm: false,
    };
    /// The AUSF alone (`steer5g ausf`).
    pub const AUSF: NfSet = NfSet {
        amf: false,
        ausf: true,
        udm: false,
    };
    /// The UDM alone (`steer5g udm`).
    pub const UDM: NfSet = NfSet {
        amf: false,
        ausf: false,
        udm: true,
    };

    /// Whether `nf` is hosted here.
    pub fn hosts(&self, nf: NfType) -> bool {
        match nf {
            NfType::Amf => self.amf,
            NfType::Ausf => self.ausf,
            NfType::Udm => self.udm,
            _ => false,
        }
    }

    /// In-process SBI hands a request to the co-located callee, so every callee of a hosted
    /// NF must be hosted too: the AMF calls the AUSF and the UDM, the AUSF calls the UDM.
    fn inproc_problem(&self) -> Option<String> {
        if !(self.amf || self.ausf || self.udm) {
            return Some("no NF to host".to_owned());
        }
        if self.amf && !(self.ausf && self.udm) {
            return Some("in-process SBI needs the AUSF and UDM in the AMF's process".to_owned());
        }
        if self.ausf && !self.udm {
            return Some("in-process SBI needs the UDM in the AUSF's process".to_owned());
        }
        None
    }
}

impl Default for NfSet {
    fn default() -> Self {
        NfSet::ALL
    }
}

/// How to run a core.
#[derive(Debug, Clone)]
pub struct CoreOptions {
    /// Which NFs this process hosts.
    pub nfs: NfSet,
    /// Worker threads (1 to [`Workers::MAX`]).
    pub workers: u16,
    /// Pin worker threads to cores.
    pub pin: bool,
    /// Sharded or locked state.
    pub state: StateMode,
    /// h2c or in-process SBI.
    pub sbi: SbiMode,
    /// With [`SbiMode::Inproc`], serve the hosted AUSF and UDM over h2c too, for NFs of
    /// other processes (an AMF elsewhere, a load driver), while the hosted NFs keep calling
    /// each other in-process. With [`SbiMode::H2c`] they are served anyway.
    pub serve_sbi: bool,
    /// h2c clients open a connection per request.
    pub short_connections: bool,
    /// Holds the subscriber store and the home network key file.
    pub data_dir: PathBuf,
    /// PLMN, AMF identity, TACs, slices and N2 listen addresses and transports.
    pub config: Config,
    /// Where the AUSF and UDM are reached; in h2c mode they also listen there.
    pub directory: StaticDirectory,
    /// Authenticate on every registration.
    pub always_auth: bool,
    /// NAS integrity algorithms, most preferred first; empty keeps the AMF's defaults.
    pub integrity: Vec<IntegrityAlgorithm>,
    /// NAS ciphering algorithms, most preferred first; empty keeps the AMF's defaults.
    pub ciphering: Vec<CipheringAlgorithm>,
    /// Seed of the UDM's RAND generator (tests only); `None` uses the OS.
    pub rand_seed: Option<u64>,
    /// Shard-aware h2c clients (sharded mode): each request on the connection of its
    /// owner's worker. Off, each worker keeps one connection per NF.
    pub sbi_pool: bool,
    /// An SMF shard on every worker (Nsmf_PDUSession, PFCP to a UPF); `None`: no SMF here,
    /// and the AMF's UL NAS TRANSPORTs for PDU sessions go to the SMF at its directory
    /// address with [`CoreOptions::smf_sbi`] [`SbiMode::H2c`], or find no SMF.
    pub smf: Option<SmfOptions>,
    /// How the AMF and the SMF talk: Nsmf_PDUSession (TS 29.502) and Namf_Communication
    /// N1N2MessageTransfer (TS 29.518). [`SbiMode::Inproc`] (the default) hands the same
    /// bodies to the co-located NF; [`SbiMode::H2c`] serves both over h2c listener groups at
    /// the directory addresses of the SMF (when [`CoreOptions::smf`] is set) and of the AMF
    /// (when it is hosted), and calls the other side there through the shard-aware pool,
    /// in one process or across processes.
    pub smf_sbi: SbiMode,
    /// A UPF started in this process (PFCP on its own thread, rules in memory), for tests
    /// and demos without root; its PFCP address replaces [`SmfOptions::upf`].
    pub upf: Option<UpfOptions>,
    /// Where to serve Prometheus `GET /metrics` (one endpoint per process, see the
    /// `metrics` module); `None` serves none. Off here so that cores started side by side
    /// (tests, benches) do not clash on a port; the CLI turns it on.
    pub metrics: Option<SocketAddr>,
    /// The UDR's provisioning API ([`provisioning`]), served when the process hosts the UDM
    /// (it holds the store); `None` serves none. Off here, like `metrics`; the CLI turns it
    /// on.
    pub provisioning: Option<provisioning::ProvisioningOptions>,
    /// The SUPIs whose NGAP, NAS, SBI and PFCP messages are logged (`--trace-supi`).
    pub trace_supis: Vec<String>,
    /// Attach an NRF-issued access token to every h2c call (TS 33.501 §13.4.1); `None`
    /// sends none.
    pub oauth_client: Option<tokens::OauthClientOptions>,
    /// Require such a token on every request the h2c listeners read; `None` requires none.
    pub require_tokens: Option<sbi::oauth::TokenPolicy>,
    /// The AMF's NF instance ID (`--nf-instance-id`); `None`: [`amf_instance_id`] of its
    /// GUAMI.
    pub amf_instance_id: Option<String>,
    /// Every known instance of each peer NF type, in order of preference (NRF discovery):
    /// calls fail over between them ([`peers`]). Empty: the directory's one address.
    pub peers: std::collections::HashMap<NfType, Vec<String>>,
    /// Kernel steering of the SBI listener groups and the N2 UDP encapsulation group
    /// (`--require-bpf` is [`BpfPolicy::Require`]). Defaults to [`BpfPolicy::Require`] when
    /// the environment has `STEER5G_REQUIRE_BPF=1` (or `true`), so that CI's setting reaches
    /// every core a command or a test starts, else [`BpfPolicy::Try`].
    pub bpf: BpfPolicy,
}

/// Whether socket groups are steered by `sk_reuseport` BPF.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BpfPolicy {
    /// Try; without the privilege (or the object) fall back to the kernel's hash and say so.
    #[default]
    Try,
    /// A failed BPF load is fatal ([`CoreError::N2Steering`]).
    Require,
    /// Do not load BPF (measures and tests the fallback).
    Off,
}

/// Where the associations of one N2 transport live, as reported at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum N2Placement {
    /// Every association on worker 0 (raw IP has no reuseport; or there is one worker);
    /// UE messages are handed off from there.
    Worker0,
    /// `sk_reuseport` BPF: the worker `SCTP source port % workers`.
    SourcePort,
    /// The kernel's reuseport hash of the 4-tuple: associations stay whole on one worker,
    /// which one is the kernel's choice. Why BPF is not steering.
    KernelHash(String),
}

impl std::fmt::Display for N2Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            N2Placement::Worker0 => write!(f, "associations on worker 0, UE messages handed off"),
            N2Placement::SourcePort => write!(
                f,
                "associations spread over workers by SCTP source port (sk_reuseport BPF), \
                 UE messages handed off by owner"
            ),
            N2Placement::KernelHash(why) => write!(
                f,
                "associations spread over workers by the kernel's reuseport hash ({why}), \
                 UE messages handed off by owner"
            ),
        }
    }
}

impl CoreOptions {
    /// Takes `cfg` as the configuration, and the directory's address of each NF from its
    /// `[sbi]` (where a hosted NF listens, where another is called); set a peer after this
    /// to override one.
    pub fn set_config(&mut self, cfg: Config) {
        let s = &cfg.sbi;
        for (nf, uri) in [
            (NfType::Amf, &s.amf),
            (NfType::Smf, &s.smf),
            (NfType::Ausf, &s.ausf),
            (NfType::Udm, &s.udm),
        ] {
            self.directory.set(nf, uri.clone());
        }
        self.config = cfg;
    }

    /// One sharded worker, h2c, the default configuration and directory, state in
    /// `data_dir`.
    pub fn new(data_dir: PathBuf) -> Self {
        Self {
            nfs: NfSet::ALL,
            workers: 1,
            pin: false,
            state: StateMode::Sharded,
            sbi: SbiMode::H2c,
            serve_sbi: false,
            short_connections: false,
            data_dir,
            config: Config::default(),
            directory: StaticDirectory::new(),
            always_auth: false,
            integrity: Vec::new(),
            ciphering: Vec::new(),
            rand_seed: None,
            bpf: BpfPolicy::from_env(),
            metrics: None,
            provisioning: None,
            trace_supis: Vec::new(),
            oauth_client: None,
            require_tokens: None,
            peers: std::collections::HashMap::new(),
            amf_instance_id: None,
            sbi_pool: true,
            smf: None,
            smf_sbi: SbiMode::Inproc,
            upf: None,
        }
    }
}

/// Replaces the instances of a peer NF type in every worker of a running core.
#[derive(Clone)]
pub struct PeerUpdater {
    locals: Vec<worker::LocalTx>,
}

impl std::fmt::Debug for PeerUpdater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerUpdater")
            .field("workers", &self.locals.len())
            .finish()
    }
}

impl PeerUpdater {
    /// From now on, calls to `nf` go to `bases` (base URIs, in order of preference).
    pub fn set(&self, nf: NfType, bases: Vec<String>) {
        for tx in &self.locals {
            // A worker that has stopped needs no update.
            let _ = tx.send(worker::Local::Peers {
                nf,
                bases: bases.clone(),
            });
        }
    }
}

/// How the SMF shards are set up.
#[derive(Debug, Clone)]
pub struct SmfOptions {
    /// The UPF's PFCP address (the loopback plan's 127.0.0.7:8805).
    pub upf: SocketAddr,
    /// The address each worker's PFCP socket binds (port chosen by the OS: one socket per
    /// worker, as each numbers its own requests) and advertises in its CP F-SEID.
    pub pfcp_ip: std::net::Ipv4Addr,
    /// Served DNNs and their UE address pools (split between the workers).
    pub dnns: Vec<DnnPool>,
    /// Served slices.
    pub slices: Vec<sbi::model::Snssai>,
    /// How often each worker heartbeats the UPF to find out that it restarted and restore
    /// its sessions (`nf::smf::restoration`); `None` sends none.
    pub heartbeat: Option<std::time::Duration>,
    /// The SMF's Recovery Time Stamp (TS 29.244 §8.2.65); `None`: the time the core
    /// starts. A process that may restart quickly passes
    /// `upf::service::fresh_recovery_time_stamp()`, so that the UPF sees the restart.
    pub recovery_time_stamp: Option<u32>,
}

impl Default for SmfOptions {
    /// UPF at 127.0.0.7:8805, PFCP from 127.0.0.4, DNN `internet` with 10.45.0.0/16, SST 1.
    fn default() -> Self {
        SmfOptions {
            upf: SocketAddr::from(([127, 0, 0, 7], 8805)),
            pfcp_ip: std::net::Ipv4Addr::new(127, 0, 0, 4),
            dnns: vec![DnnPool {
                dnn: "internet".to_owned(),
                net: std::net::Ipv4Addr::new(10, 45, 0, 0),
                prefix_len: 16,
            }],
            slices: vec![sbi::model::Snssai { sst: 1, sd: None }],
            heartbeat: Some(nf::smf::restoration::DEFAULT_HEARTBEAT_INTERVAL),
            recovery_time_stamp: None,
        }
    }
}

/// An in-process UPF ([`upf::service::UpfService`] over a [`upf::MemoryDatapath`]).
#[derive(Debug, Clone)]
pub struct UpfOptions {
    /// Where it serves PFCP (port 0: the OS picks).
    pub pfcp: SocketAddr,
    /// Its N3 address, advertised in the F-TEIDs it allocates.
    pub n3: std::net::Ipv4Addr,
    /// The rule tables; keep a clone to look at them.
    pub datapath: upf::MemoryDatapath,
}

impl Default for UpfOptions {
    /// PFCP on 127.0.0.7:8805, N3 127.0.0.7.
    fn default() -> Self {
        UpfOptions {
            pfcp: SocketAddr::from(([127, 0, 0, 7], 8805)),
            n3: std::net::Ipv4Addr::new(127, 0, 0, 7),
            datapath: upf::MemoryDatapath::new(),
        }
    }
}

/// Why the core could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A setting is out of range or inconsistent.
    #[error("invalid setting: {0}")]
    Config(String),
    /// The subscriber store could not be opened.
    #[error("subscriber store: {0}")]
    Store(#[from] store::StoreError),
    /// The home network key file could not be read or created.
    #[error("home network keys: {0}")]
    Keys(String),
    /// A socket could not be bound.
    #[error("cannot bind {what}: {source}")]
    Bind {
        /// Which socket.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The N2 core could not start.
    #[error("N2: {0}")]
    N2(String),
    /// BPF steering of the N2 UDP group failed and was required ([`BpfPolicy::Require`]);
    /// [`steer_bpf::Error::NotPermitted`] is a missing privilege.
    #[error("N2 steering: {0}")]
    N2Steering(#[source] steer_bpf::Error),
    /// An N2 transport could not be bound (raw IP needs CAP_NET_RAW).
    #[error("N2 {transport}: {source}")]
    N2Bind {
        /// Which transport.
        transport: TransportKind,
        /// Why.
        #[source]
        source: sctp_io::BindError,
    },
    /// The runtime failed.
    #[error("runtime: {0}")]
    Runtime(#[from] steer::runtime::RuntimeError),
    /// A thread could not be started.
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
    /// The `/metrics` endpoint could not start (its address in use, most likely).
    #[error("metrics: {0}")]
    Metrics(#[from] steer_metrics::ServeError),
    /// The `sk_reuseport` program of an SBI listener could not be loaded and
    /// [`CoreOptions::bpf`] is [`BpfPolicy::Require`] (mostly a missing CAP_BPF).
    #[error("SBI {nf} {addr}: BPF steering required but unavailable: {source}")]
    Bpf {
        /// The NF whose listener it is.
        nf: NfType,
        /// The listener's address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: steer_bpf::Error,
    },
}

/// What one worker did.
#[derive(Debug, Clone, Default)]
pub struct WorkerReport {
    /// The worker number.
    pub worker: u16,
    /// Its AMF's counters.
    pub amf: AmfStats,
    /// Its AUSF's counters.
    pub ausf: AusfStats,
    /// Its UDM's counters.
    pub udm: UdmStats,
    /// Its AMF's PDU session counters.
    pub amf_sessions: SessionStats,
    /// Its SMF's counters (zero without an SMF).
    pub smf: SmfStats,
    /// SM contexts its SMF held when it stopped (in the locked mode: every worker's).
    pub smf_contexts: usize,
    /// Delivery-path counters.
    pub counters: WorkerCounters,
    /// Why its loop woke up.
    pub wakes: WakeCounters,
    /// The contexts its NFs held when it stopped.
    pub held: HeldContexts,
}

/// Contexts held at a moment: what a run, a restart or a soak must leave behind (nothing, or
/// only what a UE still registered owns). In the locked mode every worker sees the shared
/// maps, so each worker's count is the whole core's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeldContexts {
    /// AMF UE contexts (CM-CONNECTED or registered).
    pub amf_ues: u64,
    /// AMF contexts of registered idle UEs (kept for their 5G-GUTI).
    pub amf_idle: u64,
    /// AUSF authentication contexts.
    pub ausf: u64,
    /// SMF SM contexts.
    pub smf: u64,
}

impl HeldContexts {
    /// The larger of each count (the locked mode: every worker saw all of them).
    pub fn max(self, o: HeldContexts) -> HeldContexts {
        HeldContexts {
            amf_ues: self.amf_ues.max(o.amf_ues),
            amf_idle: self.amf_idle.max(o.amf_idle),
            ausf: self.ausf.max(o.ausf),
            smf: self.smf.max(o.smf),
        }
    }

    /// Both counts added (the sharded mode: each worker holds its own).
    pub fn plus(self, o: HeldContexts) -> HeldContexts {
        HeldContexts {
            amf_ues: self.amf_ues + o.amf_ues,
            amf_idle: self.amf_idle + o.amf_idle,
            ausf: self.ausf + o.ausf,
            smf: self.smf + o.smf,
        }
    }
}

/// The N2 side of every worker, summed; [`N2Report::workers`] has each worker's part.
#[derive(Debug, Clone, Default)]
pub struct N2Report {
    /// Non-UE N2 counters.
    pub n2: N2Stats,
    /// Associations still up when the core stopped.
    pub gnbs: usize,
    /// SCTP endpoint counters of each transport (summed over the workers).
    pub sctp: Vec<(TransportKind, sctp::EndpointStats)>,
    /// Socket counters of each transport (summed over the workers).
    pub io: Vec<(TransportKind, sctp_io::IoStats)>,
    /// The gNBs still known when the core stopped.
    pub gnb_contexts: Vec<nf::amf::n2::GnbContext>,
    /// Packets in/out of the N2 socket(s).
    pub packets_in: u64,
    /// Packets sent.
    pub packets_out: u64,
    /// System calls that sent them (one `sendmmsg` carries the packets of one flush).
    pub send_calls: u64,
    /// Associations that came up, over every worker.
    pub associations: u64,
    /// Each worker with an N2 socket, in worker order.
    pub workers: Vec<N2WorkerReport>,
    /// Counters of the UDP group's steering program when it was attached.
    pub steering: Option<steer_bpf::Counters>,
}

/// One worker's N2 side when the core stopped.
#[derive(Debug, Clone, Default)]
pub struct N2WorkerReport {
    /// The worker.
    pub worker: u16,
    /// Associations that came up on this worker.
    pub associations: u64,
    /// Its non-UE N2 counters.
    pub n2: N2Stats,
    /// Its gNBs still known when the core stopped.
    pub gnb_contexts: Vec<nf::amf::n2::GnbContext>,
    /// Its SCTP endpoint counters, per transport.
    pub sctp: Vec<(TransportKind, sctp::EndpointStats)>,
    /// Its socket counters, per transport.
    pub io: Vec<(TransportKind, sctp_io::IoStats)>,
}

impl N2Report {
    /// The sum of the workers' parts (kept with them in [`N2Report::workers`]).
    pub fn from_workers(mut workers: Vec<N2WorkerReport>) -> Self {
        workers.sort_by_key(|w| w.worker);
        let mut r = N2Report::default();
        for w in &workers {
            r.n2.merge(&w.n2);
            r.associations += w.associations;
            r.gnbs += w.gnb_contexts.len();
            r.gnb_contexts.extend(w.gnb_contexts.iter().cloned());
            for (kind, s) in &w.sctp {
                match r.sctp.iter_mut().find(|(k, _)| k == kind) {
                    Some((_, t)) => n2::add_endpoint_stats(t, s),
                    None => r.sctp.push((*kind, s.clone())),
                }
            }
            for (kind, s) in &w.io {
                r.packets_in += s.packets_in;
                r.packets_out += s.packets_out;
                r.send_calls += s.send_calls;
                match r.io.iter_mut().find(|(k, _)| k == kind) {
                    Some((_, t)) => n2::add_io_stats(t, s),
                    None => r.io.push((*kind, *s)),
                }
            }
        }
        r.workers = workers;
        r
    }
}

/// Everything the core counted, collected when it stopped.
#[derive(Debug, Clone, Default)]
pub struct CoreReport {
    /// Per worker, in worker order.
    pub workers: Vec<WorkerReport>,
    /// The N2 side.
    pub n2: N2Report,
    /// Mesh counters per worker, in worker order.
    pub mesh: Vec<MeshCounters>,
    /// Mesh counters summed.
    pub mesh_total: MeshCounters,
    /// Lock counters summed over every shared map (zero in the sharded mode).
    pub locks: LockStats,
    /// SQN writes the persister made.
    pub sqn_writes: u64,
    /// The `sk_reuseport` program's counters of each kernel-steered SBI listener, read
    /// just before the workers stopped.
    pub sbi_kernel: Vec<(NfType, steer_bpf::Counters)>,
    /// The in-process UPF's report, if one ran.
    pub upf: Option<upf::service::ServiceReport>,
}

impl CoreReport {
    /// One counter struct of every worker, summed.
    fn total<T: Default>(&self, of: impl Fn(&WorkerReport) -> &T, add: fn(&mut T, &T)) -> T {
        let mut t = T::default();
        for w in &self.workers {
            add(&mut t, of(w));
        }
        t
    }

    /// AMF counters summed over the workers.
    pub fn amf_total(&self) -> AmfStats {
        self.total(|w| &w.amf, AmfStats::add)
    }

    /// The AMF's PDU session counters summed over the workers.
    pub fn amf_sessions_total(&self) -> SessionStats {
        self.total(|w| &w.amf_sessions, SessionStats::add)
    }

    /// AUSF counters summed over the workers.
    pub fn ausf_total(&self) -> AusfStats {
        self.total(|w| &w.ausf, AusfStats::add)
    }

    /// UDM counters summed over the workers.
    pub fn udm_total(&self) -> UdmStats {
        self.total(|w| &w.udm, UdmStats::add)
    }

    /// SMF counters summed over the workers.
    pub fn smf_total(&self) -> SmfStats {
        self.total(|w| &w.smf, SmfStats::add)
    }

    /// Delivery counters summed over the workers.
    pub fn counters_total(&self) -> WorkerCounters {
        self.total(|w| &w.counters, WorkerCounters::add)
    }

    /// Loop wake-ups summed over the workers.
    pub fn wakes_total(&self) -> WakeCounters {
        self.total(|w| &w.wakes, WakeCounters::add)
    }

    /// The live counters' totals as the run reports print them: every delivery-path and
    /// wake-up counter summed over the workers (named as on `/metrics`, without the
    /// `steer5g_` prefix and `_total` suffix), then the lock and hand-off counters.
    pub fn summary(&self) -> Vec<(&'static str, u64)> {
        let mut out = Vec::new();
        self.counters_total()
            .for_each(|name, _, value| out.push((name, value)));
        self.wakes_total().for_each(|s| out.push((s.name, s.value)));
        out.push(("wakeups", self.wakes_total().total()));
        out.push(("lock_acquisitions", self.locks.acquisitions));
        out.push(("lock_contended", self.locks.contended));
        out.extend(metrics::mesh_rows(&self.mesh_total));
        out
    }

    /// The contexts the core held when it stopped: summed over the workers, or with
    /// `shared` maps (the locked mode) the largest count any worker saw.
    pub fn held(&self, shared: bool) -> HeldContexts {
        self.workers.iter().fold(HeldContexts::default(), |t, w| {
            if shared {
                t.max(w.held)
            } else {
                t.plus(w.held)
            }
        })
    }

    /// Messages (NGAP and SBI) handed from one worker to another.
    pub fn handoffs(&self) -> u64 {
        let c = self.counters_total();
        c.ngap_handed_off + c.ngap_out_relayed + c.sbi_handed_off + c.sbi_answers_relayed
    }
}

/// Where the running core listens.
#[derive(Debug, Clone)]
pub struct Listening {
    /// N2: the UDP encapsulation socket (UDP transport) or the raw address with the SCTP
    /// port.
    pub n2: Vec<(TransportKind, SocketAddr)>,
    /// Where each N2 transport's associations live (also logged at start-up).
    pub n2_placement: Vec<(TransportKind, N2Placement)>,
    /// AUSF h2c listener (h2c mode).
    pub ausf: Option<SocketAddr>,
    /// UDM h2c listener (h2c mode).
    pub udm: Option<SocketAddr>,
    /// SMF h2c listener (Nsmf_PDUSession; an SMF here with [`CoreOptions::smf_sbi`] h2c).
    pub smf: Option<SocketAddr>,
    /// AMF h2c listener (Namf_Communication; the AMF here with [`CoreOptions::smf_sbi`]
    /// h2c).
    pub amf: Option<SocketAddr>,
    /// The `/metrics` endpoint, when one was asked for.
    pub metrics: Option<SocketAddr>,
    /// The provisioning API's Unix socket, when it is served.
    pub provisioning_socket: Option<PathBuf>,
    /// The provisioning API's TCP listener, when one was asked for.
    pub provisioning_tcp: Option<SocketAddr>,
    /// Every h2c listener group and how it delivers requests to their owners.
    pub sbi: Vec<SbiListener>,
}

/// How requests arriving at an SBI listener group reach the worker owning their state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SbiDelivery {
    /// The group's `sk_reuseport` program gives each connection to the worker its source
    /// port names; shard-aware clients arrive at the owner with no hop.
    KernelSteered,
    /// The kernel's hash spreads connections; a worker hands each request it does not own
    /// one hop to the owner.
    OneHop {
        /// Why the program is not in use.
        reason: String,
    },
}

/// One h2c listener group, as chosen at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SbiListener {
    /// The NF it serves.
    pub nf: NfType,
    /// Its address.
    pub addr: SocketAddr,
    /// Listeners (one per worker).
    pub workers: u16,
    /// How requests reach their owners.
    pub delivery: SbiDelivery,
}

impl SbiListener {
    /// Whether the `sk_reuseport` program steers this group.
    pub fn kernel_steered(&self) -> bool {
        self.delivery == SbiDelivery::KernelSteered
    }
}

impl std::fmt::Display for SbiListener {
    /// The start-up line, e.g. `SBI UDM 127.0.0.12:7777: kernel-steered (sk_reuseport, 2
    /// workers)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SBI {} {}: ", self.nf, self.addr)?;
        match &self.delivery {
            SbiDelivery::KernelSteered => {
                let plural = if self.workers == 1 { "" } else { "s" };
                write!(
                    f,
                    "kernel-steered (sk_reuseport, {} worker{plural})",
                    self.workers
                )
            }
            SbiDelivery::OneHop { reason } => {
                write!(f, "one-hop hand-off (BPF not loaded: {reason})")
            }
        }
    }
}

/// A running core.
pub struct CoreHandle {
    runtime: Runtime,
    /// The program handles of the kernel-steered SBI groups (counters, exceptions).
    steering: Vec<(NfType, steer_bpf::Steering)>,
    locked: Option<Locked>,
    shared: Arc<worker::Shared>,
    persister: Option<JoinHandle<u64>>,
    /// This UDM instance's IND on a shared store, renewed while the core runs.
    ind_lease: Option<store_pg::IndLease>,
    listening: Listening,
    /// The N2 UDP group's steering program, kept for its counters.
    n2_steering: Option<steer_bpf::Steering>,
    metrics: Option<steer_metrics::MetricsServer>,
    provisioning: Option<provisioning::Server>,
    upf: Option<upf::service::UpfService>,
}

impl std::fmt::Debug for CoreHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreHandle")
            .field("listening", &self.listening)
            .finish_non_exhaustive()
    }
}

/// How long this UDM instance's IND lease lasts without renewal: another instance may take
/// the IND over only after a process has been gone (or cut off from the database) this long.
const IND_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// The core; see the crate docs.
#[derive(Debug)]
pub struct Core;

impl Core {
    /// Opens the store and keys in `opts.data_dir`, binds every socket and starts the
    /// workers. Returns once N2 (and in h2c mode the SBI) is listening.
    pub fn start(opts: CoreOptions) -> Result<CoreHandle, CoreError> {
        let workers = Workers::new(opts.workers).ok_or_else(|| {
            CoreError::Config(format!(
                "workers must be 1 to {}, not {}",
                Workers::MAX,
                opts.workers
            ))
        })?;
        opts.config
            .validate()
            .map_err(|e| CoreError::Config(e.to_string()))?;
        let smf_only = opts.smf.is_some() && !(opts.nfs.amf || opts.nfs.ausf || opts.nfs.udm);
        if opts.sbi == SbiMode::Inproc {
            if smf_only {
                return Err(CoreError::Config(
                    "in-process SBI needs the UDM in the SMF's process".to_owned(),
                ));
            }
            if let Some(p) = opts.nfs.inproc_problem() {
                return Err(CoreError::Config(p));
            }
        } else if !(opts.nfs.amf || opts.nfs.ausf || opts.nfs.udm || smf_only) {
            return Err(CoreError::Config("no NF to host".to_owned()));
        }
        if opts.smf.is_some() && !opts.nfs.amf && opts.smf_sbi == SbiMode::Inproc {
            return Err(CoreError::Config(
                "an SMF without the AMF in its process talks h2c to it (smf_sbi)".to_owned(),
            ));
        }
        let nf_cfgs = settings::NfSettings::from_options(&opts)?;
        let upf = match &opts.upf {
            Some(u) => {
                let mut svc_opts = upf::service::ServiceOptions::new(u.pfcp, u.n3);
                let pfcp = settings::pfcp_timers(&opts.config);
                (svc_opts.node.t1, svc_opts.node.n1) = (pfcp.t1, pfcp.n1);
                svc_opts.node.heartbeat_interval = opts.config.pfcp.heartbeat();
                let svc = upf::service::UpfService::start(svc_opts, Box::new(u.datapath.clone()))
                    .map_err(|source| CoreError::Bind {
                    what: format!("UPF PFCP {}", u.pfcp),
                    source,
                })?;
                Some(svc)
            }
            None => None,
        };
        let mut smf = opts.smf.clone();
        if let (Some(s), Some(u)) = (smf.as_mut(), upf.as_ref()) {
            s.upf = u.local_addr();
        }
        let mut sqn_ind = None;
        let mut ind_lease = None;
        let (store, hn) = if opts.nfs.udm {
            std::fs::create_dir_all(&opts.data_dir).map_err(|e| {
                CoreError::Config(format!("data dir {}: {e}", opts.data_dir.display()))
            })?;
            let store: Arc<dyn SubscriberStore> = match opts.config.store.url.as_deref() {
                Some(url) => {
                    let pg = store_pg::PgStore::connect(url)?;
                    // Several UDM instances share this database: each issues SQNs with an
                    // IND of its own (store::sqn), leased for as long as the process runs.
                    let holder = format!(
                        "{}:{}",
                        opts.directory.base_uri(NfType::Udm).unwrap_or_default(),
                        std::process::id()
                    );
                    let lease = pg.lease_ind(&holder, IND_LEASE)?;
                    tracing::info!(
                        target = pg.target(),
                        ind = lease.ind(),
                        "subscriber store on PostgreSQL"
                    );
                    sqn_ind = Some(lease.ind());
                    ind_lease = Some(lease);
                    Arc::new(pg)
                }
                None => Arc::new(RedbStore::open_in(&opts.data_dir)?),
            };
            let (hn, _) = store::hn_keys::load_or_create(
                &opts.config.hn_key_file(&opts.data_dir),
                &mut rand::rngs::OsRng,
            )
            .map_err(|e| CoreError::Keys(e.to_string()))?;
            (store, hn)
        } else {
            // No UDM here: its shards get no request, so they need neither the data dir
            // (which a UDM process of the same host may hold locked) nor the real keys.
            (
                Arc::new(MemStore::new()) as Arc<dyn SubscriberStore>,
                store::hn_keys::HnKeys::generate_default(&mut rand::rngs::OsRng),
            )
        };
        let sidf = SidfKeys::from_hn_keys(&hn).map_err(|e| CoreError::Keys(e.to_string()))?;

        // SBI listeners, bound here so that a bind error is reported synchronously.
        let mut sbi_listeners: Vec<worker::Listeners> = Vec::new();
        let mut listening = Listening {
            n2: Vec::new(),
            n2_placement: Vec::new(),
            ausf: None,
            udm: None,
            smf: None,
            amf: None,
            metrics: None,
            provisioning_socket: None,
            provisioning_tcp: None,
            sbi: Vec::new(),
        };
        let mut steering = Vec::new();
        sbi_listeners.resize_with(usize::from(workers.count()), Vec::new);
        {
            let sm_h2c = opts.smf_sbi == SbiMode::H2c;
            for nf in [NfType::Ausf, NfType::Udm, NfType::Smf, NfType::Amf] {
                let serve = match nf {
                    NfType::Smf => sm_h2c && opts.smf.is_some(),
                    // Namf_Communication: N1N2MessageTransfer, for the SMF; and the AMF's
                    // callbacks, for a UDM in another process (its deregistration
                    // notifications, TS 29.503 §5.3.2.2.3).
                    NfType::Amf => {
                        opts.nfs.amf && (sm_h2c || (opts.sbi == SbiMode::H2c && !opts.nfs.udm))
                    }
                    _ => (opts.sbi == SbiMode::H2c || opts.serve_sbi) && opts.nfs.hosts(nf),
                };
                if !serve {
                    continue;
                }
                let addr = listen_addr(&opts.directory, nf)?;
                let (sockets, info, handle) = sbi_group(nf, addr, workers.count(), &opts)?;
                let kernel = info.kernel_steered();
                match nf {
                    NfType::Ausf => listening.ausf = Some(info.addr),
                    NfType::Smf => listening.smf = Some(info.addr),
                    NfType::Amf => listening.amf = Some(info.addr),
                    _ => listening.udm = Some(info.addr),
                }
                for (ls, l) in sbi_listeners.iter_mut().zip(sockets) {
                    ls.push((nf, l, kernel));
                }
                listening.sbi.push(info);
                if let Some(h) = handle {
                    steering.push((nf, h));
                }
            }
        }

        // N2: the UDP group is bound here (a bind error is reported synchronously); raw IP
        // is opened by worker 0 inside its runtime.
        let (n2_raw, n2_udp) = n2_plan(&opts, workers, &mut listening)?;
        let (n2_udp_sockets, n2_steering) = match n2_udp {
            Some(g) => (g.sockets, g.steering),
            None => (Vec::new(), None),
        };

        let (locals, local_rxs) = worker::local_channels(workers);
        let (persist_tx, persist_rx) = mpsc::channel();
        let persister =
            persist::spawn(store.clone(), persist_rx, locals.clone()).map_err(CoreError::Thread)?;

        let provisioning = match (&opts.provisioning, opts.nfs.udm) {
            (Some(p), true) => {
                let locals = locals.clone();
                let notify: provisioning::Notify = Arc::new(move |supi: String| {
                    let owner = ids::udm::owner_of_supi(&supi, workers);
                    if let Some(tx) = locals.get(usize::from(owner.0)) {
                        // A worker that is gone has no SQN to forget.
                        let _ = tx.send(worker::Local::SubscriberChanged { supi });
                    }
                });
                let api = nf::udr::Provisioning::new(store.clone());
                let server = provisioning::Server::start(p, &opts.data_dir, api, notify)?;
                listening.provisioning_socket = Some(server.socket().to_path_buf());
                listening.provisioning_tcp = server.tcp();
                Some(server)
            }
            _ => None,
        };
        let locked = (opts.state == StateMode::Locked).then(Locked::default);
        let live = Arc::new(metrics::Live::new(
            usize::from(workers.count()),
            locked.clone(),
            opts.state,
            opts.sbi,
            opts.nfs,
            opts.smf.is_some(),
        ));
        let metrics_server = match opts.metrics {
            Some(addr) => {
                let l = live.clone();
                let s = steer_metrics::MetricsServer::start(addr, Arc::new(move || l.render()))?;
                listening.metrics = Some(s.local_addr());
                Some(s)
            }
            None => None,
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        let host = nf_cfgs.host_config(&opts, store, sidf, sqn_ind, smf.as_ref())?;
        let shared = Arc::new(worker::Shared {
            host,
            limits: settings::NfSettings::host_limits(&opts),
            max_outbox: usize::try_from(opts.config.limits.mesh_max_outbox).unwrap_or(usize::MAX),
            sbi_max_streams: opts.config.limits.sbi_max_concurrent_streams,
            n2_limits: n2::N2Limits::new(&opts.config, workers),
            n2_amf: nf_cfgs.n2.clone(),
            nfs: opts.nfs,
            short_connections: opts.short_connections,
            oauth_client: opts.oauth_client.clone(),
            require_tokens: opts.require_tokens.clone(),
            peers: opts.peers.clone(),
            n2_config: opts.config.n2.clone(),
            n2_raw,
            n2_udp: Mutex::new(n2_udp_sockets),
            locked: locked.clone(),
            inbox: Mutex::new(local_rxs.into_iter().zip(sbi_listeners).map(Some).collect()),
            persist: Mutex::new(persist_tx),
            ready: Mutex::new(Some(ready_tx)),
            reports: Mutex::new(vec![None; usize::from(workers.count())]),
            n2_report: Mutex::new(Vec::new()),
            locals,
            live: live.clone(),
        });
        let s2 = shared.clone();
        let rt_opts = RuntimeOptions {
            pin: opts.pin,
            name: "core".to_owned(),
            queue_capacity: 4096,
            stop_grace: Duration::from_secs(5),
        };
        let runtime = Runtime::start(workers, rt_opts, move |ctx| worker::run(ctx, s2.clone()))?;
        live.set_mesh(runtime.stats().clone());
        // Every worker says when its N2 sockets are open (or why not).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        for _ in workers.iter() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let failed = match ready_rx.recv_timeout(left) {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some(CoreError::N2("a worker did not start".into())),
            };
            if let Some(e) = failed {
                let _ = runtime.stop();
                return Err(e);
            }
        }
        for (kind, placement) in &listening.n2_placement {
            tracing::info!(transport = %kind, "N2 {kind}: {placement}");
        }
        Ok(CoreHandle {
            runtime,
            steering,
            locked,
            shared,
            persister: Some(persister),
            ind_lease,
            listening,
            n2_steering,
            metrics: metrics_server,
            provisioning,
            upf,
        })
    }
}

impl CoreHandle {
    /// Where the core listens.
    pub fn listening(&self) -> &Listening {
        &self.listening
    }

    /// A handle that replaces the instances of a peer NF type in every worker (the NRF
    /// agent's, on a status notification or a new discovery).
    pub fn peer_updater(&self) -> PeerUpdater {
        PeerUpdater {
            locals: self.shared.locals.clone(),
        }
    }

    /// The `/metrics` page as a scrape would see it now.
    pub fn metrics_page(&self) -> String {
        self.shared.live.render()
    }

    /// The live counters' totals now, keyed as [`CoreReport::summary`] (for a bench that
    /// wants the counts of one window: the difference of two calls).
    pub fn live_totals(&self) -> Vec<(&'static str, u64)> {
        self.shared.live.totals()
    }

    /// The contexts the core holds now (each worker's as of its last loop turn), counted as
    /// [`CoreReport::held`] counts them at stop.
    pub fn held_now(&self) -> HeldContexts {
        self.shared.live.held_now()
    }

    /// The `sk_reuseport` program's counters of each kernel-steered SBI listener group
    /// (those whose maps could be read).
    pub fn sbi_kernel_counters(&self) -> Vec<(NfType, steer_bpf::Counters)> {
        self.steering
            .iter()
            .filter_map(|(nf, s)| s.counters().ok().map(|c| (*nf, c)))
            .collect()
    }

    /// A clone of the stop token (e.g. for a signal handler).
    pub fn stop_token(&self) -> steer::Stop {
        self.runtime.stop_token()
    }

    /// Stops every worker (graceful SCTP shutdown of the associations) and the persister,
    /// and collects the counters.
    pub fn stop(mut self) -> Result<CoreReport, CoreError> {
        let sbi_kernel = self.sbi_kernel_counters();
        let mesh_stats = self.runtime.stats().clone();
        let workers = self.runtime.report().workers.len();
        if let Some(m) = self.metrics.take() {
            m.stop();
        }
        if let Some(p) = self.provisioning.take() {
            p.stop();
        }
        self.runtime.stop()?;
        // The workers held the persister's senders; with them gone it ends.
        if let Ok(mut g) = self.shared.persist.lock() {
            let (tx, _) = mpsc::channel();
            *g = tx;
        }
        let sqn_writes = match self.persister.take() {
            Some(h) => h.join().unwrap_or(0),
            None => 0,
        };
        // Every SQN claim has landed: the IND may go to another instance now.
        drop(self.ind_lease.take());
        let upf = match self.upf.take().map(upf::service::UpfService::stop) {
            Some(Ok(r)) => Some(r),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "UPF did not stop cleanly");
                None
            }
            None => None,
        };
        let mut report = CoreReport {
            sqn_writes,
            sbi_kernel,
            upf,
            ..CoreReport::default()
        };
        if let Ok(mut r) = self.shared.reports.lock() {
            report.workers = r.iter_mut().filter_map(Option::take).collect();
        }
        if let Ok(mut n) = self.shared.n2_report.lock() {
            report.n2 = N2Report::from_workers(std::mem::take(&mut *n));
        }
        report.n2.steering = self.n2_steering.as_ref().and_then(|s| s.counters().ok());
        for i in 0..workers {
            let id = steer::WorkerId(u16::try_from(i).unwrap_or(u16::MAX));
            report.mesh.push(mesh_stats.worker(id).unwrap_or_default());
        }
        report.mesh_total = mesh_stats.total();
        report.locks = self
            .locked
            .as_ref()
            .map(Locked::lock_total)
            .unwrap_or_default();
        Ok(report)
    }
}

/// Which N2 transports to open and where their associations live: raw IP (on worker 0)
/// and the UDP group (bound here), recorded in `listening` in configuration order.
fn n2_plan(
    opts: &CoreOptions,
    workers: Workers,
    listening: &mut Listening,
) -> Result<(bool, Option<n2::UdpGroup>), CoreError> {
    if !opts.nfs.amf {
        return Ok((false, None));
    }
    let cfg = &opts.config.n2;
    if cfg.transports.is_empty() {
        return Err(CoreError::Config("no N2 transport configured".to_owned()));
    }
    let mut raw = false;
    let mut udp = None;
    for &kind in &cfg.transports {
        if listening.n2.iter().any(|(k, _)| *k == kind) {
            continue;
        }
        let (addr, placement) = match kind {
            TransportKind::Raw => {
                raw = true;
                let local = SocketAddrV4::new(cfg.addr, 0);
                (n2_addr(kind, local, cfg.sctp_port), N2Placement::Worker0)
            }
            TransportKind::Udp => {
                let g = n2::UdpGroup::bind(cfg, workers, opts.bpf)?;
                let out = (n2_addr(kind, g.local, cfg.sctp_port), g.placement.clone());
                udp = Some(g);
                out
            }
        };
        listening.n2.push((kind, addr));
        listening.n2_placement.push((kind, placement));
    }
    Ok((raw, udp))
}

impl BpfPolicy {
    /// [`BpfPolicy::Require`] when `STEER5G_REQUIRE_BPF` is `1` or `true`, else
    /// [`BpfPolicy::Try`].
    pub fn from_env() -> Self {
        let required = std::env::var("STEER5G_REQUIRE_BPF")
            .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
        if required {
            BpfPolicy::Require
        } else {
            BpfPolicy::Try
        }
    }
}

fn listen_addr(dir: &StaticDirectory, nf: NfType) -> Result<SocketAddr, CoreError> {
    let base = dir
        .base_uri(nf)
        .ok_or_else(|| CoreError::Config(format!("no {nf} in the directory")))?;
    steer5g_config::sbi_listen_addr(base).map_err(|m| CoreError::Config(format!("{nf} URI {m}")))
}

/// The listener group of `nf` on `addr`, one listener per worker (non-blocking, for
/// tokio), steered by the `sk_reuseport` program when it loads.
fn sbi_group(
    nf: NfType,
    addr: SocketAddr,
    workers: u16,
    opts: &CoreOptions,
) -> Result<
    (
        Vec<std::net::TcpListener>,
        SbiListener,
        Option<steer_bpf::Steering>,
    ),
    CoreError,
> {
    let bind = |source| CoreError::Bind {
        what: format!("SBI {nf} {addr}"),
        source,
    };
    // SO_REUSEPORT would let this core silently join another process's listeners on the
    // same address and take some of its connections: make sure nobody listens there yet.
    // (Our own listeners of the group are bound after this check.)
    if addr.port() != 0 {
        drop(std::net::TcpListener::bind(addr).map_err(bind)?);
    }
    let (sockets, steering, reason) = if opts.bpf == BpfPolicy::Off {
        let mut at = addr;
        let mut sockets = Vec::with_capacity(usize::from(workers));
        for _ in 0..workers {
            let l = reuseport_listener(at)?;
            // Port 0: every listener of the group on the port the first one got.
            if let Ok(local) = l.local_addr() {
                at.set_port(local.port());
            }
            sockets.push(l);
        }
        (sockets, None, Some("disabled by option".to_owned()))
    } else {
        let group_opts = steer_bpf::GroupOptions {
            require_bpf: opts.bpf == BpfPolicy::Require,
        };
        let group = match steer_bpf::ReuseportGroup::bind_tcp(addr, workers, &group_opts) {
            Ok(g) => g,
            Err(steer_bpf::Error::Socket { source, .. }) => return Err(bind(source)),
            Err(source) => return Err(CoreError::Bpf { nf, addr, source }),
        };
        let reason = group.unsteered_reason().map(ToString::to_string);
        let (sockets, steering) = group.into_parts();
        for s in &sockets {
            s.set_nonblocking(true).map_err(bind)?;
        }
        (sockets, steering, reason)
    };
    let local = sockets
        .first()
        .and_then(|s| s.local_addr().ok())
        .unwrap_or(addr);
    let delivery = match (&steering, reason) {
        (Some(_), _) => SbiDelivery::KernelSteered,
        (None, reason) => SbiDelivery::OneHop {
            reason: reason.unwrap_or_else(|| "unknown".to_owned()),
        },
    };
    let info = SbiListener {
        nf,
        addr: local,
        workers,
        delivery,
    };
    Ok((sockets, info, steering))
}

/// One of several listeners on the same address; the kernel spreads connections over them.
fn reuseport_listener(addr: SocketAddr) -> Result<std::net::TcpListener, CoreError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let bind = |source| CoreError::Bind {
        what: format!("SBI {addr}"),
        source,
    };
    let s =
        Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)).map_err(bind)?;
    s.set_reuse_address(true).map_err(bind)?;
    s.set_reuse_port(true).map_err(bind)?;
    s.set_nonblocking(true).map_err(bind)?;
    s.bind(&addr.into()).map_err(bind)?;
    s.listen(1024).map_err(bind)?;
    Ok(s.into())
}

/// What the AMF's N2 logic needs from the configuration.
pub(crate) fn amf_n2_config(cfg: &Config) -> Result<AmfN2Config, CoreError> {
    let (guami, tacs, slices) = identity(cfg)?;
    Ok(AmfN2Config {
        amf_name: cfg.amf.name.clone(),
        served_guamis: vec![guami],
        plmn_support: vec![(guami.plmn, slices)],
        tacs,
        relative_capacity: cfg.amf.relative_capacity,
    })
}

/// The AMF's NF instance ID (its `amfInstanceId` at the UDM) when none is given: a UUID
/// that holds its GUAMI (PLMN and AMF ID), so that the AMFs of one set, which differ by
/// their AMF Pointer, differ here too and the UDM tells them apart.
pub fn amf_instance_id(guami: &Guami) -> String {
    let amf_id = (u32::from(guami.amf_region_id) << 16)
        | (u32::from(guami.amf_set_id) << 6)
        | u32::from(guami.amf_pointer);
    let mnc = format!("{:f<3}", guami.plmn.mnc_str());
    format!(
        "00000000-0000-4000-8000-{}{mnc}{amf_id:06x}",
        guami.plmn.mcc_str()
    )
}

/// GUAMI, TACs and S-NSSAIs from the configuration, checked (a bad value is
/// [`CoreError::Config`]). The gNB emulators read their PLMN, TAC and slices through it too,
/// so both sides of N2 interpret the configuration the same way.
pub fn identity(cfg: &Config) -> Result<(Guami, Vec<Tac>, Vec<Snssai>), CoreError> {
    let bad = |what: &str, e: &dyn std::fmt::Display| CoreError::Config(format!("{what}: {e}"));
    let plmn = Plmn::new(&cfg.plmn.mcc, &cfg.plmn.mnc).map_err(|e| bad("PLMN", &e))?;
    let guami = Guami::new(plmn, cfg.amf.region_id, cfg.amf.set_id, cfg.amf.pointer)
        .map_err(|e| bad("GUAMI", &e))?;
    let tacs = cfg
        .amf
        .tacs
        .iter()
        .map(|&t| Tac::new(t).map_err(|e| bad("TAC", &e)))
        .collect::<Result<Vec<_>, _>>()?;
    let slices = cfg
        .amf
        .slices
        .iter()
        .map(|s| {
            let sd = match &s.sd {
                Some(sd) => Some(steer5g_config::parse_sd(sd).map_err(|e| bad("SD", &e))?),
                None => None,
            };
            Snssai::new(s.sst, sd).map_err(|e| bad("S-NSSAI", &e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((guami, tacs, slices))
}

/// The TAIs of the configured TACs.
pub(crate) fn tais(guami: &Guami, tacs: &[Tac]) -> Vec<Tai> {
    tacs.iter()
        .map(|&tac| Tai {
            plmn: guami.plmn,
            tac,
        })
        .collect()
}

/// Address an N2 transport is reported at.
pub(crate) fn n2_addr(kind: TransportKind, local: SocketAddrV4, sctp_port: u16) -> SocketAddr {
    match kind {
        TransportKind::Raw => SocketAddr::new((*local.ip()).into(), sctp_port),
        TransportKind::Udp => SocketAddr::V4(local),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn listen_addresses_come_from_the_directory() {
        let mut d = StaticDirectory::new();
        assert_eq!(
            listen_addr(&d, NfType::Ausf).unwrap(),
            "127.0.0.11:7777".parse().unwrap()
        );
        d.set(NfType::Udm, "http://127.0.9.12:8080/");
        assert_eq!(
            listen_addr(&d, NfType::Udm).unwrap(),
            "127.0.9.12:8080".parse().unwrap()
        );
        d.set(NfType::Udm, "https://127.0.9.12:8080");
        assert!(matches!(
            listen_addr(&d, NfType::Udm),
            Err(CoreError::Config(_))
        ));
        d.set(NfType::Udm, "http://udm.example:80");
        assert!(matches!(
            listen_addr(&d, NfType::Udm),
            Err(CoreError::Config(_))
        ));
    }

    #[test]
    fn bad_worker_counts_are_refused_before_anything_is_opened() {
        let dir = std::env::temp_dir().join("steer5g-core-never-created");
        for n in [0, Workers::MAX + 1] {
            let mut o = CoreOptions::new(dir.clone());
            o.workers = n;
            assert!(matches!(Core::start(o), Err(CoreError::Config(_))));
        }
        assert!(!dir.exists());
    }

    #[test]
    fn inproc_needs_every_callee_in_the_process() {
        assert_eq!(NfSet::ALL.inproc_problem(), None);
        assert_eq!(NfSet::UDM.inproc_problem(), None);
        for nfs in [NfSet::AMF, NfSet::AUSF] {
            assert!(nfs.inproc_problem().is_some(), "{nfs:?}");
        }
        let none = NfSet {
            amf: false,
            ausf: false,
            udm: false,
        };
        assert!(none.inproc_problem().is_some());
        assert!(NfSet::AMF.hosts(NfType::Amf) && !NfSet::AMF.hosts(NfType::Udm));
    }

    #[test]
    fn an_amf_alone_refuses_inproc_and_needs_no_data_dir() {
        let dir =
            std::env::temp_dir().join(format!("steer5g-core-amf-only-{}", std::process::id()));
        let mut o = CoreOptions::new(dir.clone());
        o.nfs = NfSet::AMF;
        o.sbi = SbiMode::Inproc;
        assert!(matches!(Core::start(o), Err(CoreError::Config(_))));
        let mut o = CoreOptions::new(dir.clone());
        o.nfs = NfSet {
            amf: false,
            ausf: false,
            udm: false,
        };
        assert!(matches!(Core::start(o), Err(CoreError::Config(_))));
        // An AUSF alone on an ephemeral port: up, no data dir, no N2.
        let mut o = CoreOptions::new(dir.clone());
        o.nfs = NfSet::AUSF;
        o.directory.set(NfType::Ausf, "http://127.0.0.1:0");
        let core = Core::start(o).unwrap();
        assert!(core.listening().n2.is_empty());
        assert!(core.listening().ausf.is_some());
        assert!(core.listening().udm.is_none());
        let r = core.stop().unwrap();
        assert_eq!(r.workers.len(), 1);
        assert!(!dir.exists());
    }

    /// An SMF alone over h2c (as `steer5g smf` runs it): malformed Nsmf JSON and multipart
    /// bodies are 400 problem+json (TS 29.502 §6.1.7, TS 29.500 §5.2.7.2), an unknown SM
    /// context 404 CONTEXT_NOT_FOUND, and the workers keep answering.
    #[test]
    fn malformed_nsmf_requests_are_400_and_the_smf_lives_on() {
        use sbi::{ClientConfig, SbiClient};
        let dir = std::env::temp_dir().join("steer5g-core-smf-only-never-created");
        let mut o = CoreOptions::new(dir.clone());
        o.nfs = NfSet {
            amf: false,
            ausf: false,
            udm: false,
        };
        o.workers = 2;
        o.smf_sbi = SbiMode::H2c;
        o.smf = Some(SmfOptions {
            // Nobody serves PFCP there: the association requests go unanswered.
            upf: "127.0.73.7:8805".parse().unwrap(),
            pfcp_ip: std::net::Ipv4Addr::new(127, 0, 73, 4),
            ..SmfOptions::default()
        });
        o.directory.set(NfType::Smf, "http://127.0.73.4:0");
        let core = Core::start(o).unwrap();
        assert!(core.listening().n2.is_empty() && core.listening().amf.is_none());
        let smf = core.listening().smf.unwrap();
        let base = format!("http://{smf}/nsmf-pdusession/v1/sm-contexts");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        let answers = local.block_on(&rt, async {
            let client = SbiClient::new(ClientConfig::default());
            let mut out = Vec::new();
            let cases: [(&str, &str, &[u8]); 5] = [
                (base.as_str(), "application/json", b"{not json"),
                (
                    base.as_str(),
                    "multipart/related; boundary=b",
                    b"--b\r\nno end",
                ),
                (base.as_str(), "multipart/related", b"no boundary"),
                // A ref of worker 1, handed over there.
                (
                    &format!("{base}/0001000000000001/modify"),
                    "application/json",
                    b"{}",
                ),
                // Well-formed JSON of the wrong shape.
                (base.as_str(), "application/json", b"[1]"),
            ];
            for (uri, ct, body) in cases {
                let r = client
                    .request_typed(
                        Method::POST,
                        uri,
                        Some(bytes::Bytes::copy_from_slice(body)),
                        ct,
                        None,
                    )
                    .await
                    .unwrap();
                let p: sbi::ProblemDetails = serde_json::from_slice(&r.body).unwrap();
                out.push((r.status.as_u16(), r.content_type, p.cause));
            }
            out
        });
        let report = core.stop().unwrap();
        let problem = Some(sbi::problem::PROBLEM_JSON);
        let bad = |cause: &str| (400, problem, Some(cause.to_owned()));
        assert_eq!(
            answers,
            vec![
                bad("INVALID_MSG_FORMAT"),
                bad("INVALID_MSG_FORMAT"),
                bad("INVALID_MSG_FORMAT"),
                (404, problem, Some("CONTEXT_NOT_FOUND".to_owned())),
                bad("MANDATORY_IE_INCORRECT"),
            ]
        );
        let c = report.counters_total();
        assert_eq!(c.nsmf_served, 5);
        assert!(!dir.exists());
    }

    #[test]
    fn sbi_listeners_say_how_they_deliver() {
        let l = SbiListener {
            nf: NfType::Udm,
            addr: "127.0.0.12:7777".parse().unwrap(),
            workers: 2,
            delivery: SbiDelivery::KernelSteered,
        };
        assert!(l.kernel_steered());
        assert_eq!(
            l.to_string(),
            "SBI UDM 127.0.0.12:7777: kernel-steered (sk_reuseport, 2 workers)"
        );
        let l = SbiListener {
            workers: 1,
            delivery: SbiDelivery::OneHop {
                reason: "no CAP_BPF".into(),
            },
            ..l
        };
        assert!(!l.kernel_steered());
        assert_eq!(
            l.to_string(),
            "SBI UDM 127.0.0.12:7777: one-hop hand-off (BPF not loaded: no CAP_BPF)"
        );
    }

    #[test]
    fn without_bpf_a_port_zero_group_shares_one_port() {
        let dir = std::env::temp_dir().join("steer5g-core-no-bpf-never-created");
        let mut o = CoreOptions::new(dir.clone());
        o.nfs = NfSet::AUSF;
        o.workers = 2;
        o.bpf = BpfPolicy::Off;
        o.directory.set(NfType::Ausf, "http://127.0.0.1:0");
        let core = Core::start(o).unwrap();
        let sbi = core.listening().sbi.clone();
        assert_eq!(sbi.len(), 1);
        assert_eq!(
            sbi[0].delivery,
            SbiDelivery::OneHop {
                reason: "disabled by option".into()
            }
        );
        assert_ne!(sbi[0].addr.port(), 0);
        assert_eq!(core.listening().ausf, Some(sbi[0].addr));
        assert!(core.sbi_kernel_counters().is_empty());
        // Both workers' listeners hold the port: a third plain bind fails.
        assert!(std::net::TcpListener::bind(sbi[0].addr).is_err());
        core.stop().unwrap();
        assert!(!dir.exists());
    }

    #[test]
    fn identity_follows_the_configuration() {
        let mut cfg = Config::default();
        cfg.amf.tacs = vec![1, 7];
        let (guami, tacs, slices) = identity(&cfg).unwrap();
        assert_eq!(guami.plmn, Plmn::new("001", "01").unwrap());
        assert_eq!(tais(&guami, &tacs).len(), 2);
        assert!(!slices.is_empty());
        cfg.amf.tacs = vec![1 << 24];
        assert!(matches!(identity(&cfg), Err(CoreError::Config(_))));
    }

    #[test]
    fn n2_reports_sum_per_transport_and_keep_each_worker() {
        let stats = |n| sctp::EndpointStats {
            associations_established: n,
            packets_received: 10 * n,
            ..sctp::EndpointStats::default()
        };
        let io = |n| sctp_io::IoStats {
            packets_in: n,
            packets_out: 2 * n,
            ..sctp_io::IoStats::default()
        };
        let w1 = N2WorkerReport {
            worker: 1,
            associations: 3,
            n2: N2Stats {
                ng_setup_ok: 3,
                ..N2Stats::default()
            },
            sctp: vec![(TransportKind::Udp, stats(3))],
            io: vec![(TransportKind::Udp, io(30))],
            ..N2WorkerReport::default()
        };
        let w0 = N2WorkerReport {
            worker: 0,
            associations: 2,
            n2: N2Stats {
                ng_setup_ok: 1,
                ..N2Stats::default()
            },
            sctp: vec![
                (TransportKind::Raw, stats(1)),
                (TransportKind::Udp, stats(1)),
            ],
            io: vec![(TransportKind::Raw, io(5)), (TransportKind::Udp, io(7))],
            ..N2WorkerReport::default()
        };
        // Workers report in the order they stop; the sum keeps worker order.
        let r = N2Report::from_workers(vec![w1, w0]);
        assert_eq!(
            r.workers.iter().map(|w| w.worker).collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(r.associations, 5);
        assert_eq!(r.n2.ng_setup_ok, 4);
        assert_eq!(r.packets_in, 42);
        assert_eq!(r.packets_out, 84);
        let udp = r
            .sctp
            .iter()
            .find(|(k, _)| *k == TransportKind::Udp)
            .unwrap();
        assert_eq!(udp.1.associations_established, 4);
        assert_eq!(udp.1.packets_received, 40);
        assert_eq!(r.sctp.len(), 2);
        assert_eq!(r.io.len(), 2);
    }

    #[test]
    fn counters_add_up() {
        let a = WorkerCounters {
            ngap_handed_off: 2,
            sbi_handed_off: 3,
            ..WorkerCounters::default()
        };
        let mut r = CoreReport::default();
        r.workers.push(WorkerReport {
            counters: a,
            ..WorkerReport::default()
        });
        r.workers.push(WorkerReport {
            counters: a,
            ..WorkerReport::default()
        });
        assert_eq!(r.counters_total().ngap_handed_off, 4);
        assert_eq!(r.handoffs(), 10);
    }
}
