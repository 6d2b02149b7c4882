//! A whole core in virtual time, shaped like quinn-proto's test `Pair` (the sans-IO state
//! machines driven by a test harness that owns every link and the clock):
//! N worker hosts ([`nf::host::Host`], sharded or locked), each with the N2 side a core
//! worker has (NG Setup in [`AmfN2`], UE messages routed by
//! [`nf::amf::registration::route`]), the UPF node with its in-memory datapath behind the
//! SMF, the SQN persister over a [`MemStore`], and a [`Fleet`] of emulated gNBs and UEs,
//! joined by simulated links ([`link`]). No socket, no thread, no sleep: one clock that
//! jumps to the next message or timer, and one seeded generator for every loss and delay,
//! so a seed replays a run exactly ([`Sim::trace`]).
//!
//! What the I/O layer of `steer5g-core` does, the simulator does the same way: an h2c call
//! goes to the server worker its shard-aware owner names, or to the worker with the
//! caller's index without one, and is read there as a request of that worker's listener;
//! an NGAP message is sent on the worker that owns its association; every SQN write
//! reports back to the worker that asked. Tests can also play a gNB by hand
//! ([`Sim::open_association`], [`Sim::inject_ngap`], [`Sim::take_downlink`]), an SBI client
//! ([`Sim::sbi`]) or an NF the hosts call ([`Sim::set_external`]).
//!
//! Driving it: [`Sim::step`] does one thing (delivers the earliest message or runs the
//! timers due first); [`Sim::run_until_quiet`] runs until no message is in flight (timers
//! not yet due stay pending); [`Sim::run_until`] runs, timers included, until a condition
//! holds; [`Sim::advance`] runs everything due within a span of virtual time. Each run is
//! bounded by [`SimConfig::max_steps`] and panics with what was left when it is exceeded.

mod config;
pub mod fleet;
pub mod link;
pub mod population;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode};
use ids::{WorkerId, Workers};
use nf::amf::n2::{AmfN2, N2Output};
use nf::amf::registration::{route, Route};
use nf::host::{
    CallFailed, CallReply, CallToken, Hop, Host, Input, IoEvent, Locked, NfStats, Output,
    Placement, SbiCall, ServerToken, Sharded, UeNgap, WorkerCounters,
};
use proto::ids::GlobalRanNodeId;
use ran::gnb::{GnbConfig, N2Send};
use ran::ue::Ue;
use sbi::{NfType, SbiRequest, SbiResponse};
use store::MemStore;
use upf::{MemoryDatapath, UpfNode};

pub use config::{hn_key, SimConfig, HN_KEY_OCTETS, PFCP_PORT, SMF_PFCP_IP, SNN, UPF_IP};
pub use fleet::{Fleet, FleetSummary, SessionOutcome, UePlan, UeRecord};
pub use link::{Fate, Link, LinkConfig, LinkStats, Links, TraceEvent};

use link::{digest, Rng};

/// The recovery time stamp every simulated SMF associates with (TS 29.244 §8.2.65).
pub const SMF_RECOVERY_TIME_STAMP: u32 = 7;

/// A simulation of sharded hosts.
pub type ShardedSim = Sim<Sharded>;
/// A simulation of the locking baseline.
pub type LockedSim = Sim<Locked>;

/// A message on a link.
enum Msg {
    /// gNB → the worker owning `assoc`.
    N2Up {
        assoc: u32,
        stream: u16,
        pdu: Vec<u8>,
    },
    /// A worker → the gNB of `assoc`.
    N2Down {
        assoc: u32,
        stream: u16,
        pdu: Vec<u8>,
    },
    Hop {
        to: WorkerId,
        hop: Hop,
    },
    SbiRequest {
        to: usize,
        nf: NfType,
        req: SbiRequest,
        server: u64,
    },
    SbiReply {
        to: usize,
        call: CallToken,
        reply: Result<CallReply, CallFailed>,
    },
    /// SMF worker `from` → the UPF.
    N4Up {
        from: usize,
        bytes: Vec<u8>,
    },
    /// The UPF → SMF worker `to`.
    N4Down {
        to: usize,
        bytes: Vec<u8>,
    },
    SqnDone {
        to: usize,
        supi: String,
        claim: Option<store::sqn::Claim>,
    },
}

/// Who waits for the answer to a request a host's server read.
enum ServerOrigin {
    /// The test, under its request id.
    Raw(u64),
    /// An h2c call of worker `worker`; `log` its entry in the SBI log.
    Call {
        worker: usize,
        call: CallToken,
        log: Option<usize>,
    },
}

/// Who is at the other end of an association.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    Fleet(usize),
    Raw,
}

/// One worker's N2 side: NG Setup state of its associations and their id counter.
struct N2Worker {
    amf: AmfN2,
    next: u32,
}

/// An SBI call to an NF the test plays ([`Sim::set_external`]).
#[derive(Debug, Clone)]
pub struct ExternalCall {
    /// The calling worker.
    pub worker: usize,
    /// The call, to answer with [`Sim::answer`].
    pub call: CallToken,
    /// The NF called.
    pub nf: NfType,
    /// Method.
    pub method: Method,
    /// Path, with its query.
    pub path: String,
    /// `Content-Type` of `body`.
    pub content_type: &'static str,
    /// Body.
    pub body: Bytes,
}

/// One h2c exchange ([`SimConfig::record`]).
#[derive(Debug, Clone)]
pub struct SbiExchange {
    /// The calling worker.
    pub from: usize,
    /// The worker whose listener read it (`None`: an NF the test plays).
    pub to: Option<usize>,
    /// The NF called.
    pub nf: NfType,
    /// The instance named by the link the caller followed, if it followed one.
    pub base: Option<String>,
    /// Method.
    pub method: Method,
    /// Path, with its query.
    pub path: String,
    /// `Content-Type` of the request.
    pub request_content_type: &'static str,
    /// The request body.
    pub request_body: Bytes,
    /// The answer's status, once answered.
    pub status: Option<StatusCode>,
    /// The answer's `Content-Type`.
    pub response_content_type: Option<String>,
    /// The answer's body.
    pub response_body: Bytes,
}

/// Which way a PFCP datagram went ([`Sim::pfcp_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum N4Direction {
    /// SMF worker → UPF.
    ToUpf,
    /// UPF → SMF worker.
    ToSmf,
}

/// What a test playing an NF answers a call with: `Some` at once, `None` to hold the call
/// for [`Sim::take_external`].
pub type ExternalHandler = Box<dyn FnMut(&ExternalCall) -> Option<Result<CallReply, CallFailed>>>;

/// The simulation; see the module docs.
pub struct Sim<P: Placement> {
    cfg: SimConfig,
    placement: P,
    workers: Workers,
    start: Instant,
    now: Instant,
    hosts: Vec<Host<P>>,
    n2: Vec<N2Worker>,
    upf: Option<(UpfNode, MemoryDatapath)>,
    fleet: Fleet,
    /// Fleet UEs waiting for T3346, by when it runs out.
    backoffs: BTreeMap<(Instant, usize), Instant>,
    /// (UE, rejected at, registered again at) of every T3346 run out.
    retries: Vec<(usize, Duration, Duration)>,
    peers: HashMap<u32, Peer>,
    gnb_assoc: Vec<u32>,
    raw_down: HashMap<u32, VecDeque<(u16, Vec<u8>)>>,
    queue: BTreeMap<(Instant, u64), (Link, Msg)>,
    seq: u64,
    rng: Rng,
    /// The last delivery time of each ordered flow.
    flows: HashMap<(Link, u64, u64), Instant>,
    servers: HashMap<u64, ServerOrigin>,
    next_server: u64,
    answers: HashMap<u64, SbiResponse>,
    next_request: u64,
    external: Vec<(NfType, ExternalHandler)>,
    held: VecDeque<ExternalCall>,
    /// The SBI log entries of held calls.
    held_logs: HashMap<CallToken, usize>,
    sbi_log: Vec<SbiExchange>,
    pfcp_log: Vec<(Duration, usize, N4Direction, Vec<u8>)>,
    stats: [LinkStats; 5],
    trace: Vec<TraceEvent>,
    steps: u64,
}

impl<P: Placement> std::fmt::Debug for Sim<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("workers", &self.workers)
            .field("elapsed", &self.elapsed())
            .field("in_flight", &self.queue.len())
            .field("fleet", &self.fleet)
            .finish_non_exhaustive()
    }
}

impl Sim<Sharded> {
    /// Sharded hosts of `cfg`.
    pub fn sharded(cfg: SimConfig) -> Self {
        Sim::new(cfg, Sharded)
    }
}

impl Sim<Locked> {
    /// Locked hosts of `cfg`, over one set of shared maps.
    pub fn locked(cfg: SimConfig) -> Self {
        Sim::new(cfg, Locked::default())
    }
}

impl<P: Placement> Sim<P> {
    /// `cfg.host.workers` hosts over `placement`; each SMF opens its PFCP association.
    pub fn new(cfg: SimConfig, placement: P) -> Self {
        let workers = cfg.host.workers;
        let now = Instant::now();
        let hosts: Vec<Host<P>> = workers
            .iter()
            .map(|w| {
                let mut c = cfg.host.clone();
                c.worker = w;
                Host::new(c, &placement)
            })
            .collect();
        let n2 = workers
            .iter()
            .map(|_| N2Worker {
                amf: AmfN2::new(cfg.n2.clone()),
                next: 1,
            })
            .collect();
        let upf = cfg
            .host
            .smf
            .is_some()
            .then(|| (UpfNode::new(now, cfg.upf.clone()), MemoryDatapath::new()));
        let mut sim = Sim {
            rng: Rng::new(cfg.seed),
            placement,
            workers,
            start: now,
            now,
            hosts,
            n2,
            upf,
            fleet: Fleet::new(),
            backoffs: BTreeMap::new(),
            retries: Vec::new(),
            peers: HashMap::new(),
            gnb_assoc: Vec::new(),
            raw_down: HashMap::new(),
            queue: BTreeMap::new(),
            seq: 0,
            flows: HashMap::new(),
            servers: HashMap::new(),
            next_server: 0,
            answers: HashMap::new(),
            next_request: 0,
            external: Vec::new(),
            held: VecDeque::new(),
            held_logs: HashMap::new(),
            sbi_log: Vec::new(),
            pfcp_log: Vec::new(),
            stats: [LinkStats::default(); 5],
            trace: Vec::new(),
            steps: 0,
            cfg,
        };
        for h in &mut sim.hosts {
            h.pfcp_open(now, SMF_RECOVERY_TIME_STAMP);
        }
        sim.pump();
        sim
    }

    // ---- what there is to look at ----

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Virtual time since the start.
    pub fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// The workers.
    pub fn workers(&self) -> Workers {
        self.workers
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// The links, to change mid-run (a UPF that stops answering: N4 loss 1.0).
    pub fn links_mut(&mut self) -> &mut Links {
        &mut self.cfg.links
    }

    /// The placement the hosts were built with (the locked one's lock counters).
    pub fn placement(&self) -> &P {
        &self.placement
    }

    /// Worker `w`'s host.
    pub fn host(&self, w: usize) -> &Host<P> {
        &self.hosts[w]
    }

    /// Worker `w`'s host, to reach its NFs.
    pub fn host_mut(&mut self, w: usize) -> &mut Host<P> {
        &mut self.hosts[w]
    }

    /// Worker `w`'s delivery-path counters.
    pub fn counters(&self, w: usize) -> WorkerCounters {
        *self.hosts[w].counters()
    }

    /// The delivery-path counters summed over the workers.
    pub fn counters_total(&self) -> WorkerCounters {
        let mut t = WorkerCounters::default();
        for h in &self.hosts {
            t.add(h.counters());
        }
        t
    }

    /// Worker `w`'s NF counters.
    pub fn nf_stats(&self, w: usize) -> NfStats {
        self.hosts[w].nf_stats()
    }

    /// Every worker's NF counters, in worker order.
    pub fn nf_stats_all(&self) -> Vec<NfStats> {
        self.hosts.iter().map(Host::nf_stats).collect()
    }

    /// Worker `w`'s N2 side (NG Setup state and counters).
    pub fn n2(&self, w: usize) -> &AmfN2 {
        &self.n2[w].amf
    }

    /// The subscriber store.
    pub fn store(&self) -> &Arc<MemStore> {
        &self.cfg.store
    }

    /// The UPF node (with an SMF).
    pub fn upf(&self) -> Option<&UpfNode> {
        self.upf.as_ref().map(|(n, _)| n)
    }

    /// The UPF node and its datapath, to drive by hand (with an SMF).
    pub fn upf_mut(&mut self) -> Option<(&mut UpfNode, &mut MemoryDatapath)> {
        self.upf.as_mut().map(|(n, d)| (n, d))
    }

    /// The UPF's datapath (with an SMF).
    pub fn datapath(&self) -> Option<&MemoryDatapath> {
        self.upf.as_ref().map(|(_, d)| d)
    }

    /// What `link` carried.
    pub fn link_stats(&self, link: Link) -> LinkStats {
        self.stats[link.index()]
    }

    /// Every message delivered or lost, in order.
    pub fn trace(&self) -> &[TraceEvent] {
        &self.trace
    }

    /// Every h2c exchange, with [`SimConfig::record`].
    pub fn sbi_log(&self) -> &[SbiExchange] {
        &self.sbi_log
    }

    /// Every PFCP datagram delivered (time, SMF worker, direction, octets), with
    /// [`SimConfig::record`].
    pub fn pfcp_log(&self) -> &[(Duration, usize, N4Direction, Vec<u8>)] {
        &self.pfcp_log
    }

    /// Messages in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// The gNBs and UEs.
    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    /// Every T3346 a fleet UE waited out: (UE, rejected at, registered again at), in
    /// virtual time since the start.
    pub fn retries(&self) -> &[(usize, Duration, Duration)] {
        &self.retries
    }

    /// The association of fleet gNB `g`.
    pub fn gnb_association(&self, g: usize) -> u32 {
        self.gnb_assoc[g]
    }

    // ---- the fleet ----

    /// A gNB of `cfg` (4 UE streams) on an association of worker `index % workers`, as a
    /// steered N2 group places consecutive source ports; it starts NG Setup. Its index.
    pub fn add_gnb(&mut self, cfg: GnbConfig) -> usize {
        let g = self.fleet.add_gnb(cfg, 4);
        let w = WorkerId((g % usize::from(self.workers.count())) as u16);
        let assoc = self.associate(w, Peer::Fleet(g));
        self.gnb_assoc.push(assoc);
        for s in self.fleet.connected(g) {
            self.uplink(assoc, s);
        }
        g
    }

    /// A UE under fleet gNB `g` following `plan`; it starts once its gNB is ready. Its
    /// index.
    pub fn add_ue(&mut self, g: usize, ue: Ue, plan: UePlan) -> usize {
        let u = self.fleet.add_ue(g, ue, plan);
        if self.fleet.ready(g) {
            let assoc = self.gnb_assoc[g];
            for s in self.fleet.start(u) {
                self.uplink(assoc, s);
            }
        }
        u
    }

    /// UEs holding their session go on with their plan.
    pub fn proceed(&mut self) {
        for (g, s) in self.fleet.proceed() {
            let assoc = self.gnb_assoc[g];
            self.uplink(assoc, s);
        }
    }

    // ---- a gNB played by hand ----

    /// A new association on worker `w` for a gNB the test plays; its core-wide id.
    pub fn open_association(&mut self, w: usize) -> u32 {
        self.associate(WorkerId(w as u16), Peer::Raw)
    }

    /// The association goes down (SCTP shutdown or abort): its gNB context is gone.
    pub fn close_association(&mut self, assoc: u32) {
        let w = ids::n2::assoc_owner(assoc).index();
        if let Some(n) = self.n2.get_mut(w) {
            n.amf.association_down(assoc);
        }
        self.peers.remove(&assoc);
    }

    /// The test's gNB sends `pdu` on `stream` of `assoc` (over the N2 link).
    pub fn inject_ngap(&mut self, assoc: u32, stream: u16, pdu: Vec<u8>) {
        self.uplink(assoc, N2Send { stream, pdu });
    }

    /// The oldest NGAP message the AMF sent on the test's association `assoc`.
    pub fn take_downlink(&mut self, assoc: u32) -> Option<(u16, Vec<u8>)> {
        self.raw_down.get_mut(&assoc).and_then(VecDeque::pop_front)
    }

    /// The NGAP messages waiting on the test's association `assoc`, oldest first.
    pub fn downlinks(&self, assoc: u32) -> impl Iterator<Item = &(u16, Vec<u8>)> {
        self.raw_down.get(&assoc).into_iter().flatten()
    }

    /// How many NGAP messages wait on the test's association `assoc`.
    pub fn downlink_len(&self, assoc: u32) -> usize {
        self.raw_down.get(&assoc).map_or(0, VecDeque::len)
    }

    // ---- an SBI client and NFs played by hand ----

    /// The test sends `req` to worker `w`'s listener of `nf`; the id to take the answer
    /// with ([`Sim::take_answer`]).
    pub fn sbi_request(&mut self, w: usize, nf: NfType, req: SbiRequest) -> u64 {
        self.next_request += 1;
        let id = self.next_request;
        let server = self.hold_server(ServerOrigin::Raw(id));
        let steered = self.cfg.sbi_kernel_steered;
        let now = self.now;
        self.hosts[w].handle(
            now,
            Input::SbiRequest {
                nf,
                steered,
                req,
                server: ServerToken(server),
            },
        );
        self.pump();
        id
    }

    /// The answer to the test's request `id`, once there is one.
    pub fn take_answer(&mut self, id: u64) -> Option<SbiResponse> {
        self.answers.remove(&id)
    }

    /// Sends `req` to worker `w`'s listener of `nf`, runs (timers included) until it is
    /// answered and then until quiet, and returns the answer. Panics when there is none.
    #[track_caller]
    pub fn sbi(&mut self, w: usize, nf: NfType, req: SbiRequest) -> SbiResponse {
        let id = self.sbi_request(w, nf, req);
        self.run_until(|s| s.answers.contains_key(&id));
        self.run_until_quiet();
        self.take_answer(id)
            .unwrap_or_else(|| panic!("no answer to the {nf} request on worker {w}"))
    }

    /// h2c calls to `nf` go to `handler` instead of a host: the test plays that NF.
    pub fn set_external(&mut self, nf: NfType, handler: ExternalHandler) {
        self.external.retain(|(n, _)| *n != nf);
        self.external.push((nf, handler));
    }

    /// The oldest call an external handler held.
    pub fn take_external(&mut self) -> Option<ExternalCall> {
        self.held.pop_front()
    }

    /// The calls external handlers hold, oldest first.
    pub fn held_external(&self) -> impl Iterator<Item = &ExternalCall> {
        self.held.iter()
    }

    /// Answers a held call (over the SBI link).
    pub fn answer(&mut self, call: &ExternalCall, reply: Result<CallReply, CallFailed>) {
        let log = self.held_logs.remove(&call.call);
        self.log_reply(log, &reply);
        self.send(
            Link::Sbi,
            None,
            Msg::SbiReply {
                to: call.worker,
                call: call.call,
                reply,
            },
        );
    }

    /// A PFCP datagram from the UPF to SMF worker `w`, as the test wrote it.
    pub fn inject_pfcp(&mut self, w: usize, bytes: Vec<u8>) {
        self.send(Link::N4, None, Msg::N4Down { to: w, bytes });
    }

    // ---- driving ----

    /// Does one thing: runs the timers due first, or delivers the earliest message. False
    /// when nothing is in flight and no timer is set.
    pub fn step(&mut self) -> bool {
        let event = self.queue.first_key_value().map(|((t, _), _)| *t);
        let timer = self.next_timer();
        let timers_first = match (event, timer) {
            (None, None) => return false,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(e), Some(t)) => t <= e,
        };
        self.steps += 1;
        if timers_first {
            if let Some(t) = timer {
                self.now = self.now.max(t);
            }
            self.fire_timers();
        } else if let Some(((t, _), (link, msg))) = self.queue.pop_first() {
            self.now = self.now.max(t);
            self.deliver(link, msg);
        }
        self.pump();
        true
    }

    /// Runs until no message is in flight. Timers due before the last message fire on the
    /// way; later ones stay set.
    #[track_caller]
    pub fn run_until_quiet(&mut self) {
        let start = self.steps;
        while !self.queue.is_empty() {
            self.check_bound(start, "quiet");
            self.step();
        }
    }

    /// Runs, timers included, until `done` holds. Panics when nothing is left to do or the
    /// step bound is reached first.
    #[track_caller]
    pub fn run_until(&mut self, mut done: impl FnMut(&Self) -> bool) {
        let start = self.steps;
        while !done(self) {
            self.check_bound(start, "its condition");
            if !self.step() {
                panic!(
                    "simulation stalled at {:?}: no message in flight, no timer set, and \
                     the condition does not hold ({:?})",
                    self.elapsed(),
                    self.fleet.summary()
                );
            }
        }
    }

    /// Runs everything due within `d` of virtual time, then sets the clock to its end.
    #[track_caller]
    pub fn advance(&mut self, d: Duration) {
        let end = self.now + d;
        let start = self.steps;
        loop {
            let event = self.queue.first_key_value().map(|((t, _), _)| *t);
            let next = [event, self.next_timer()].into_iter().flatten().min();
            match next {
                Some(t) if t <= end => {
                    self.check_bound(start, "the end of the span");
                    self.step();
                }
                _ => break,
            }
        }
        self.now = self.now.max(end);
    }

    #[track_caller]
    fn check_bound(&self, start: u64, goal: &str) {
        let max = self.cfg.max_steps;
        if self.steps - start >= max {
            panic!(
                "simulation did not reach {goal} within {max} steps: at {:?}, {} messages in \
                 flight, fleet {:?}",
                self.elapsed(),
                self.queue.len(),
                self.fleet.summary()
            );
        }
    }

    /// When the next message is delivered or timer runs, if any.
    pub fn next_due(&self) -> Option<Instant> {
        let event = self.queue.first_key_value().map(|((t, _), _)| *t);
        [event, self.next_timer()].into_iter().flatten().min()
    }

    // ---- inside ----

    fn next_timer(&self) -> Option<Instant> {
        let hosts = self.hosts.iter().filter_map(Host::poll_timeout);
        let upf = self.upf.as_ref().and_then(|(n, _)| n.poll_timeout());
        let backoff = self.backoffs.first_key_value().map(|((t, _), _)| *t);
        hosts.chain(upf).chain(backoff).min()
    }

    fn fire_timers(&mut self) {
        let now = self.now;
        for h in &mut self.hosts {
            if h.poll_timeout().is_some_and(|t| t <= now) {
                h.handle_timeout(now);
            }
        }
        if let Some((n, dp)) = self.upf.as_mut() {
            if n.poll_timeout().is_some_and(|t| t <= now) {
                n.handle_timeout(now, dp);
            }
        }
        while let Some(e) = self.backoffs.first_entry() {
            let (at, u) = *e.key();
            if at > now {
                break;
            }
            let rejected = e.remove();
            self.retries
                .push((u, rejected - self.start, now - self.start));
            let g = self.fleet.record(u).gnb;
            let assoc = self.gnb_assoc[g];
            for s in self.fleet.retry(u) {
                self.uplink(assoc, s);
            }
        }
    }

    fn associate(&mut self, w: WorkerId, peer: Peer) -> u32 {
        let n = &mut self.n2[w.index()];
        let assoc = ids::n2::assoc_id(w, n.next);
        n.next += 1;
        n.amf.association_up(assoc);
        self.peers.insert(assoc, peer);
        assoc
    }

    fn hold_server(&mut self, origin: ServerOrigin) -> u64 {
        self.next_server += 1;
        self.servers.insert(self.next_server, origin);
        self.next_server
    }

    fn uplink(&mut self, assoc: u32, s: N2Send) {
        let flow = (Link::N2, u64::from(assoc), u64::from(s.stream));
        self.send(
            Link::N2,
            Some(flow),
            Msg::N2Up {
                assoc,
                stream: s.stream,
                pdu: s.pdu,
            },
        );
    }

    /// Puts `msg` on `link`: its delivery time from the link's delay, jitter and loss, kept
    /// in order behind the earlier messages of `flow`.
    fn send(&mut self, link: Link, flow: Option<(Link, u64, u64)>, msg: Msg) {
        let c = self.cfg.links.get(link);
        let st = &mut self.stats[link.index()];
        st.sent += 1;
        let mut at = self.now + c.delay + self.rng.up_to(c.jitter);
        if link.reliable() {
            // The transport sends it again until it gets through (bounded, so that a loss
            // rate of 1 stalls the link instead of the test).
            let mut tries = 0;
            while tries < 64 && self.rng.chance(c.loss) {
                at += c.rto;
                st.retransmitted += 1;
                tries += 1;
            }
            if let Some(f) = flow {
                let last = self.flows.entry(f).or_insert(at);
                at = at.max(*last);
                *last = at;
            }
        } else if self.rng.chance(c.loss) {
            st.dropped += 1;
            self.traced(link, &msg, Fate::Dropped);
            return;
        }
        self.seq += 1;
        self.queue.insert((at, self.seq), (link, msg));
    }

    /// Adds what became of `msg` on `link` to the trace.
    fn traced(&mut self, link: Link, msg: &Msg, fate: Fate) {
        let (kind, digest) = describe(msg);
        self.trace.push(TraceEvent {
            at: self.now - self.start,
            link,
            kind,
            digest,
            fate,
        });
    }

    fn deliver(&mut self, link: Link, msg: Msg) {
        self.stats[link.index()].delivered += 1;
        self.traced(link, &msg, Fate::Delivered);
        let now = self.now;
        match msg {
            Msg::N2Up { assoc, stream, pdu } => self.n2_read(assoc, stream, pdu),
            Msg::N2Down { assoc, stream, pdu } => match self.peers.get(&assoc) {
                Some(Peer::Fleet(g)) => {
                    let g = *g;
                    for s in self.fleet.downlink(g, stream, &pdu) {
                        self.uplink(assoc, s);
                    }
                    for (u, t3346) in self.fleet.take_backoffs() {
                        self.backoffs.insert((now + t3346, u), now);
                    }
                }
                Some(Peer::Raw) => self
                    .raw_down
                    .entry(assoc)
                    .or_default()
                    .push_back((stream, pdu)),
                None => {}
            },
            Msg::Hop { to, hop } => {
                if let Some(h) = self.hosts.get_mut(to.index()) {
                    h.handle(now, Input::Hop(hop));
                }
            }
            Msg::SbiRequest {
                to,
                nf,
                req,
                server,
            } => {
                let steered = self.cfg.sbi_kernel_steered;
                self.hosts[to].handle(
                    now,
                    Input::SbiRequest {
                        nf,
                        steered,
                        req,
                        server: ServerToken(server),
                    },
                );
            }
            Msg::SbiReply { to, call, reply } => {
                self.hosts[to].handle(now, Input::SbiReply { call, reply })
            }
            Msg::N4Up { from, bytes } => {
                if self.cfg.record {
                    self.pfcp_log
                        .push((now - self.start, from, N4Direction::ToUpf, bytes.clone()));
                }
                if let Some((n, dp)) = self.upf.as_mut() {
                    let src = SocketAddr::from((SMF_PFCP_IP, PFCP_PORT + from as u16));
                    n.handle(now, src, &bytes, dp);
                }
            }
            Msg::N4Down { to, bytes } => {
                if self.cfg.record {
                    self.pfcp_log
                        .push((now - self.start, to, N4Direction::ToSmf, bytes.clone()));
                }
                if let Some(h) = self.hosts.get_mut(to) {
                    h.handle(now, Input::Pfcp(&bytes));
                }
            }
            Msg::SqnDone { to, supi, claim } => {
                self.hosts[to].handle(now, Input::SqnDone { supi, claim })
            }
        }
    }

    /// What a core worker's N2 side does with one NGAP message read on `assoc`.
    fn n2_read(&mut self, assoc: u32, stream: u16, pdu: Vec<u8>) {
        if !self.peers.contains_key(&assoc) {
            return;
        }
        let w = ids::n2::assoc_owner(assoc).index();
        let workers = self.workers;
        let now = self.now;
        let Some(n) = self.n2.get_mut(w) else {
            return;
        };
        self.hosts[w].record_io(IoEvent::NgapRead(1));
        let gnb_id = match n.amf.gnb(assoc).and_then(|g| g.global_ran_node_id) {
            Some(GlobalRanNodeId::Gnb { gnb_id, .. }) => gnb_id.id(),
            _ => 0,
        };
        let r = route(&pdu, gnb_id, workers);
        if r == Route::NonUe {
            let mut out = Vec::new();
            n.amf.handle(assoc, stream, &pdu, &mut out);
            for o in out {
                if let N2Output::Send { assoc, stream, pdu } = o {
                    self.downlink(assoc, stream, pdu);
                }
            }
            return;
        }
        let ready = n.amf.is_ready(assoc);
        self.hosts[w].handle(
            now,
            Input::Ngap(UeNgap {
                route: r,
                assoc,
                stream,
                ready,
                gnb_id,
                pdu,
            }),
        );
    }

    fn downlink(&mut self, assoc: u32, stream: u16, pdu: Vec<u8>) {
        let flow = (Link::N2, u64::from(assoc), 1 << 16 | u64::from(stream));
        self.send(Link::N2, Some(flow), Msg::N2Down { assoc, stream, pdu });
    }

    /// Carries out every output of every host and the UPF.
    fn pump(&mut self) {
        loop {
            let mut progress = false;
            for w in 0..self.hosts.len() {
                while let Some(o) = self.hosts[w].poll_output() {
                    progress = true;
                    self.carry(w, o);
                }
                // As a core worker does: the AMF's overload transitions go to this
                // worker's N2 side, which tells its gNBs (OVERLOAD START / STOP).
                while let Some(signal) = self.hosts[w].poll_overload() {
                    progress = true;
                    let mut out = Vec::new();
                    if let Some(n) = self.n2.get_mut(w) {
                        n.amf.overload(signal, &mut out);
                    }
                    for o in out {
                        if let N2Output::Send { assoc, stream, pdu } = o {
                            self.downlink(assoc, stream, pdu);
                        }
                    }
                }
            }
            if let Some((n, _)) = self.upf.as_mut() {
                let mut out = Vec::new();
                while let Some(t) = n.poll_transmit() {
                    out.push(t);
                }
                for t in out {
                    progress = true;
                    let to = usize::from(t.destination.port().saturating_sub(PFCP_PORT));
                    self.send(
                        Link::N4,
                        None,
                        Msg::N4Down {
                            to,
                            bytes: t.contents,
                        },
                    );
                }
            }
            if !progress {
                break;
            }
        }
    }

    fn carry(&mut self, w: usize, o: Output) {
        match o {
            Output::Ngap { assoc, stream, pdu } => self.downlink(assoc, stream, pdu),
            Output::Hop { to, hop } => {
                let flow = (Link::Mesh, w as u64, u64::from(to.0));
                self.send(Link::Mesh, Some(flow), Msg::Hop { to, hop });
            }
            Output::SbiCall(c) => self.call(w, c),
            Output::SbiAnswer { server, response } => match self.servers.remove(&server.0) {
                Some(ServerOrigin::Raw(id)) => {
                    self.answers.insert(id, response);
                }
                Some(ServerOrigin::Call { worker, call, log }) => {
                    let reply = Ok(CallReply {
                        status: response.status,
                        location: response.location().map(str::to_owned),
                        content_type: response.content_type.map(str::to_owned),
                        body: response.body,
                    });
                    self.log_reply(log, &reply);
                    self.send(
                        Link::Sbi,
                        None,
                        Msg::SbiReply {
                            to: worker,
                            call,
                            reply,
                        },
                    );
                }
                None => {}
            },
            Output::Pfcp { bytes, .. } => self.send(Link::N4, None, Msg::N4Up { from: w, bytes }),
            Output::SaveUdmState(w) => {
                // Written behind: nothing comes back, a failure is the store's to log.
                let _ = self.cfg.host.store.udm_state_save(std::slice::from_ref(&w));
            }
            Output::PersistSqn(p) => {
                use store::SubscriberStore;
                let claim = self.cfg.store.sqn_claim(&p.supi, p.floor, p.count).ok();
                self.send(
                    Link::Sqn,
                    None,
                    Msg::SqnDone {
                        to: w,
                        supi: p.supi,
                        claim,
                    },
                );
            }
        }
    }

    /// An h2c call of worker `w`: to the server worker the shard-aware owner names, or the
    /// one with `w`'s index, as the core's client connects; or to the test playing `nf`.
    fn call(&mut self, w: usize, c: SbiCall) {
        let log = self.cfg.record.then(|| {
            self.sbi_log.push(SbiExchange {
                from: w,
                to: None,
                nf: c.nf,
                base: c.base.clone(),
                method: c.method.clone(),
                path: c.path.clone(),
                request_content_type: c.content_type,
                request_body: c.body.clone(),
                status: None,
                response_content_type: None,
                response_body: Bytes::new(),
            });
            self.sbi_log.len() - 1
        });
        let call = c.call;
        if let Some(i) = self.external.iter().position(|(n, _)| *n == c.nf) {
            let ext = ExternalCall {
                worker: w,
                call,
                nf: c.nf,
                method: c.method,
                path: c.path,
                content_type: c.content_type,
                body: c.body,
            };
            match (self.external[i].1)(&ext) {
                Some(reply) => {
                    self.log_reply(log, &reply);
                    self.send(Link::Sbi, None, Msg::SbiReply { to: w, call, reply });
                }
                None => {
                    if let Some(i) = log {
                        self.held_logs.insert(call, i);
                    }
                    self.held.push_back(ext);
                }
            }
            return;
        }
        let count = self.workers.count();
        let to = match c.owner {
            Some(o) if o.worker < count => usize::from(o.worker),
            _ => w % usize::from(count),
        };
        if let Some(i) = log {
            if let Some(e) = self.sbi_log.get_mut(i) {
                e.to = Some(to);
            }
        }
        let (path, query) = match c.path.split_once('?') {
            Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
            None => (c.path, None),
        };
        let req = SbiRequest {
            method: c.method,
            path,
            query,
            content_type: (!c.body.is_empty()).then(|| c.content_type.to_owned()),
            body: c.body,
        };
        let server = self.hold_server(ServerOrigin::Call {
            worker: w,
            call,
            log,
        });
        self.send(
            Link::Sbi,
            None,
            Msg::SbiRequest {
                to,
                nf: c.nf,
                req,
                server,
            },
        );
    }

    fn log_reply(&mut self, log: Option<usize>, reply: &Result<CallReply, CallFailed>) {
        let Some(e) = log.and_then(|i| self.sbi_log.get_mut(i)) else {
            return;
        };
        if let Ok(r) = reply {
            e.status = Some(r.status);
            e.response_content_type = r.content_type.clone();
            e.response_body = r.body.clone();
        }
    }
}

/// A message's kind and digest, for the trace.
fn describe(msg: &Msg) -> (String, u64) {
    let ngap = |dir: &str, pdu: &[u8]| match proto::ngap::peek(pdu) {
        Ok(p) => format!("{dir} {:?}", p.kind),
        Err(_) => format!("{dir} undecodable"),
    };
    match msg {
        Msg::N2Up { pdu, .. } => (ngap("up", pdu), digest(pdu)),
        Msg::N2Down { pdu, .. } => (ngap("down", pdu), digest(pdu)),
        Msg::Hop { to, hop } => {
            let what = match hop {
                Hop::Ngap { .. } => "ngap".to_owned(),
                Hop::NgapOut { .. } => "ngap out".to_owned(),
                Hop::Request { nf, req, .. } => format!("request {nf} {} {}", req.method, req.path),
                Hop::Forward { .. } => "udm forward".to_owned(),
                Hop::Seek { .. } => "seek".to_owned(),
                Hop::Answer { resp, .. } => format!("answer {}", resp.status.as_u16()),
                Hop::SqnDone { .. } => "sqn done".to_owned(),
                _ => "other".to_owned(),
            };
            (format!("hop to {}: {what}", to.0), 0)
        }
        Msg::SbiRequest { nf, req, to, .. } => (
            format!("{nf} {} {} at {to}", req.method, req.path),
            digest(&req.body),
        ),
        Msg::SbiReply { reply, .. } => match reply {
            Ok(r) => (format!("reply {}", r.status.as_u16()), digest(&r.body)),
            Err(CallFailed) => ("reply failed".to_owned(), 0),
        },
        Msg::N4Up { bytes, from } => (
            format!("pfcp {} from {from}", bytes.get(1).copied().unwrap_or(0)),
            digest(bytes),
        ),
        Msg::N4Down { bytes, to } => (
            format!("pfcp {} to {to}", bytes.get(1).copied().unwrap_or(0)),
            digest(bytes),
        ),
        Msg::SqnDone { claim, .. } => (format!("sqn done {claim:?}"), 0),
    }
}
