//! gNB and UE emulators (`ran`, planned by the simulator's `testkit::sim::Fleet`) driving UEs
//! through a real core over SCTP, shared by the socket tests: a store of generated subscribers and their UEs, and one
//! driver that registers every UE, establishes one PDU session each, hands the sessions to
//! the test once all are up, then releases (or deregisters) and waits for the UPF's rules
//! to go.
#![allow(clippy::unwrap_used, dead_code)]

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::time::{Duration, Instant};

use proto::ids::defaults;
use ran::gnb::GnbConfig;
use ran::ue::{SessionRequest, SuciScheme, Ue, UeConfig};
use ran::userplane::UpSession;
use rand::SeedableRng;
use sbi::NfType;
use sctp::{Endpoint, EndpointConfig, Event};
use sctp_io::{SctpSocket, Transport};
use steer5g_config::Transport as TransportKind;
use steer5g_core::{CoreHandle, CoreOptions, SbiMode, StateMode};
use store::{Profile, RedbStore, SubscriberStore};
use testkit::sim::{Fleet, SessionOutcome, UePlan};

const NGAP_PPID: u32 = 60;
const DEADLINE: Duration = Duration::from_secs(30);

/// A data directory holding `n` generated subscribers and the home network keys, and a
/// UE emulator for each (SUCI Profile A).
pub(crate) struct Subscribers {
    /// The core's data directory.
    pub(crate) dir: tempfile::TempDir,
    /// One UE per subscriber.
    pub(crate) ues: Vec<Ue>,
}

/// Generates `n` subscribers from `seed` into a fresh data directory.
pub(crate) fn subscribers(seed: u64, n: usize) -> Subscribers {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let subs = store::generate::generate("imsi-001010000000001", n as u64, &mut rng).unwrap();
    {
        let s = RedbStore::open_in(dir.path()).unwrap();
        s.put_batch(&subs).unwrap();
    }
    let (keys, _) =
        store::hn_keys::load_or_create(&dir.path().join(store::HN_KEY_FILE), &mut rng).unwrap();
    let hn = keys
        .keys
        .iter()
        .find(|k| k.profile == Profile::A)
        .unwrap()
        .clone();
    let ues = subs
        .iter()
        .map(|s| {
            let mut c = UeConfig::from_subscriber(s, defaults::PLMN).unwrap();
            c.suci = SuciScheme::Ecies {
                key: security::suci::HomeNetworkPrivateKey::from_bytes(
                    security::suci::Profile::A,
                    hn.private_octets(),
                )
                .unwrap()
                .public_key(),
                key_id: hn.id,
            };
            Ue::new(c).unwrap()
        })
        .collect();
    Subscribers { dir, ues }
}

/// Options of a core on 127.0.`net`.x over the data directory `dir`: N2 over UDP
/// encapsulation on .1, the AMF, AUSF and UDM SBI on .5, .11 and .12, `workers` workers
/// in `state` with `sbi`, and a fixed random seed.
pub(crate) fn core_options(
    net: u8,
    dir: &Path,
    workers: u16,
    state: StateMode,
    sbi: SbiMode,
) -> CoreOptions {
    let ip = |host: u8| Ipv4Addr::new(127, 0, net, host);
    let mut opts = CoreOptions::new(dir.to_owned());
    opts.config.n2.addr = ip(1);
    opts.config.n2.transports = vec![TransportKind::Udp];
    for (nf, host) in [(NfType::Amf, 5), (NfType::Ausf, 11), (NfType::Udm, 12)] {
        opts.directory.set(nf, format!("http://{}:7777", ip(host)));
    }
    opts.workers = workers;
    opts.state = state;
    opts.sbi = sbi;
    opts.rand_seed = Some(7);
    opts
}

/// The address the running `core` serves N2 on over `kind`.
pub(crate) fn n2_addr(core: &CoreHandle, kind: TransportKind) -> SocketAddr {
    core.listening()
        .n2
        .iter()
        .find(|(k, _)| *k == kind)
        .unwrap()
        .1
}

/// The single-threaded runtime a test drives its gNB on.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Registers and deregisters every UE of `ues` through one gNB (`gnb`) over `sock`'s
/// association, giving up `deadline` after the start, then closes the association. The
/// fleet after the run, the gNB's index in it, and whether the association carried every
/// UE to the end.
pub(crate) async fn register_deregister(
    sock: &mut SctpSocket,
    assoc: sctp::AssocId,
    gnb: GnbConfig,
    ues: Vec<Ue>,
    deadline: Duration,
) -> (Fleet, usize, bool) {
    let mut fleet = Fleet::new();
    let g = fleet.add_gnb(gnb, 4);
    for ue in ues {
        fleet.add_ue(g, ue, UePlan::register_deregister());
    }
    let deadline = Instant::now() + deadline;
    let ok = pump(sock, assoc, &mut fleet, g, deadline, |f, _| f.all_done()).await;
    close(sock, assoc).await;
    (fleet, g, ok)
}

/// How the sessions end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// The UE releases its session, then deregisters.
    Release,
    /// The UE deregisters with its session up: the AMF releases the SM context.
    Deregister,
    /// The UE asks for a DNN the SMF does not serve: rejected, then deregisters.
    Reject,
}

/// What the UEs, gNB and UPF saw.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) registered: usize,
    pub(crate) established: usize,
    pub(crate) rejected: usize,
    /// Sessions the test checked at the UPF (rules, or traffic) once all were up.
    pub(crate) upf_checked: usize,
    pub(crate) released_sessions: usize,
    pub(crate) deregistered: usize,
    pub(crate) released: usize,
    /// Distinct UE addresses handed out.
    pub(crate) addresses: usize,
    /// UPF rules left after the releases.
    pub(crate) rules_left: usize,
    pub(crate) failures: Vec<String>,
}

impl Outcome {
    /// All `n` UEs went the whole way: registered, one session each established, checked
    /// at the UPF and released, deregistered, with distinct addresses and no rule left.
    pub(crate) fn all_through(n: usize) -> Outcome {
        Outcome {
            registered: n,
            established: n,
            rejected: 0,
            upf_checked: n,
            released_sessions: n,
            deregistered: n,
            released: n,
            addresses: n,
            rules_left: 0,
            failures: Vec::new(),
        }
    }
}

/// Where the emulated gNB stands.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RanSide {
    /// Local address of the gNB's SCTP (UDP encapsulation) socket.
    pub(crate) local: Ipv4Addr,
    /// The AMF's N2 address (UDP encapsulation) and SCTP port.
    pub(crate) amf: SocketAddr,
    pub(crate) sctp_port: u16,
    /// The gNB's N3 address announced in DL F-TEIDs (`None`: the emulator's default).
    pub(crate) gnb_n3: Option<Ipv4Addr>,
    /// The UPF's N3 address every UL F-TEID must carry.
    pub(crate) upf_n3: Ipv4Addr,
}

/// What the test does at the UPF.
pub(crate) trait UpfCheck {
    /// Every session is up (`sessions`, one per UE in UE order of establishment): check
    /// the UPF (count into `out.upf_checked`, push failures) and return true, or return
    /// false to be asked again shortly (rules not there yet).
    fn established(&mut self, sessions: &[UpSession], out: &mut Outcome) -> bool;
    /// UPF rules still held for these UE addresses (and any uplink rule at all).
    fn rules_left(&self, ips: &[Ipv4Addr]) -> usize;
}

/// What `ues` UEs went through when every PDU session was rejected: registered, rejected,
/// deregistered and released.
pub(crate) fn all_rejected(ues: usize) -> Outcome {
    Outcome {
        registered: ues,
        rejected: ues,
        deregistered: ues,
        released: ues,
        ..Outcome::default()
    }
}

/// [`UpfCheck::rules_left`] of an in-memory UPF datapath: every uplink rule, and the
/// downlink rules of `ips`.
pub(crate) fn memory_rules_left(dp: &upf::MemoryDatapath, ips: &[Ipv4Addr]) -> usize {
    dp.uplink_rules().len() + ips.iter().filter(|ip| dp.downlink(**ip).is_some()).count()
}

/// Carries a fleet's gNB `g` over one SCTP association: NG Setup once it is up, then every
/// message each way, until `done` holds (it may queue more uplink messages) or `deadline`.
/// False when the association closed.
pub(crate) async fn pump(
    sock: &mut SctpSocket,
    assoc: sctp::AssocId,
    fleet: &mut Fleet,
    g: usize,
    deadline: Instant,
    mut done: impl FnMut(&mut Fleet, &mut Vec<(u16, Vec<u8>)>) -> bool,
) -> bool {
    let mut pending: Vec<(u16, Vec<u8>)> = Vec::new();
    while Instant::now() < deadline {
        if done(fleet, &mut pending) && pending.is_empty() {
            return true;
        }
        for (stream, pdu) in pending.drain(..) {
            sock.endpoint_mut()
                .send(assoc, stream, NGAP_PPID, false, pdu.into())
                .unwrap();
        }
        let turn = (Instant::now() + Duration::from_millis(20)).min(deadline);
        sock.drive(Some(turn)).await.unwrap();
        while let Some((_, ev)) = sock.endpoint_mut().poll_event() {
            let out = match ev {
                Event::Connected { .. } => fleet.connected(g),
                Event::Message(m) => fleet.downlink(g, m.stream, &m.data),
                Event::Closed { .. } => return false,
                _ => Vec::new(),
            };
            pending.extend(out.into_iter().map(|s| (s.stream, s.pdu)));
        }
    }
    false
}

/// A gNB's SCTP endpoint on `local` (UDP encapsulation), connected to `amf` from SCTP
/// source port `port`.
pub(crate) fn gnb_socket(
    local: Ipv4Addr,
    amf: SocketAddr,
    port: u16,
    sctp_port: u16,
    seed: u64,
) -> (SctpSocket, sctp::AssocId) {
    let transport = Transport::bind_udp(SocketAddrV4::new(local, 0)).unwrap();
    gnb_socket_on(transport, amf, port, sctp_port, seed)
}

/// The same over `transport`.
pub(crate) fn gnb_socket_on(
    transport: Transport,
    amf: SocketAddr,
    port: u16,
    sctp_port: u16,
    seed: u64,
) -> (SctpSocket, sctp::AssocId) {
    let mut sock = SctpSocket::new(
        transport,
        Endpoint::new(EndpointConfig {
            listen_port: None,
            association: sctp::AssociationConfig::default(),
            cookie_key: [7; 32],
            cookie_lifetime: Duration::from_secs(60),
            max_associations: 16,
            rng_seed: seed,
        }),
    );
    let assoc = sock
        .endpoint_mut()
        .connect(Instant::now(), amf, port, sctp_port)
        .unwrap();
    (sock, assoc)
}

/// Shuts the association down gracefully (bounded).
pub(crate) async fn close(sock: &mut SctpSocket, assoc: sctp::AssocId) {
    let _ = sock.endpoint_mut().shutdown(Instant::now(), assoc);
    let grace = Instant::now() + Duration::from_secs(1);
    while !sock.endpoint().is_empty() && Instant::now() < grace {
        sock.drive(Some(grace)).await.unwrap();
        while sock.endpoint_mut().poll_event().is_some() {}
    }
}

/// Registers every UE, establishes one session each, lets `check` look at the UPF, then
/// ends the sessions per `plan` and waits (bounded) for the UPF's rules to go. The gNB and
/// UE procedure logic is the simulator's [`Fleet`]; this carries it over SCTP.
pub(crate) async fn drive(
    side: RanSide,
    ues: Vec<Ue>,
    plan: Plan,
    check: &mut dyn UpfCheck,
) -> Outcome {
    let (mut sock, assoc) = gnb_socket(side.local, side.amf, 38412, side.sctp_port, 99);
    let mut fleet = Fleet::new();
    let g = fleet.add_gnb(GnbConfig::default(), 4);
    if let Some(n3) = side.gnb_n3 {
        fleet.gnb_ues_mut(g).set_n3_address(n3);
    }
    let mut sr = SessionRequest::default();
    if plan == Plan::Reject {
        sr.dnn = "nope".into();
    }
    let ue_plan = UePlan {
        session: Some(sr),
        hold: plan != Plan::Reject,
        release: plan == Plan::Release,
        deregister: true,
    };
    let n = ues.len();
    for ue in ues {
        fleet.add_ue(g, ue, ue_plan.clone());
    }
    let mut out = Outcome::default();
    let mut checked = plan == Plan::Reject;
    let deadline = Instant::now() + DEADLINE;
    let closed = !pump(&mut sock, assoc, &mut fleet, g, deadline, |f, pending| {
        if !checked && f.all_held() && f.gnb_ues(g).sessions().len() == n {
            // Every session is up at the UE and the gNB: the check, then every UE ends it.
            let sessions: Vec<UpSession> = f
                .gnb_ues(g)
                .sessions()
                .iter()
                .filter_map(|s| match f.record(s.ue as usize).session {
                    Some(SessionOutcome::Established(Some(ip))) => Some(UpSession::new(ip, s)),
                    _ => None,
                })
                .collect();
            for s in f.gnb_ues(g).sessions() {
                if s.upf.addr != side.upf_n3 {
                    out.failures.push(format!("UPF N3 {:?}", s.upf));
                }
            }
            if check.established(&sessions, &mut out) {
                checked = true;
                pending.extend(f.proceed().into_iter().map(|(_, s)| (s.stream, s.pdu)));
            }
        }
        f.all_done()
    })
    .await;
    // The last UE CONTEXT RELEASE COMPLETEs reach the AMF, which releases SM contexts on
    // them.
    let flush = Instant::now() + Duration::from_millis(200);
    while Instant::now() < flush {
        sock.drive(Some(flush)).await.unwrap();
        while sock.endpoint_mut().poll_event().is_some() {}
    }
    close(&mut sock, assoc).await;
    if closed {
        out.failures.push("association closed or deadline".into());
    }
    let s = fleet.summary();
    out.registered = s.registered;
    out.established = s.established;
    out.rejected = s.rejected;
    out.released_sessions = s.released_sessions;
    out.deregistered = s.deregistered;
    out.released = s.released;
    out.failures.extend(s.failures);
    let mut all_ips: Vec<Ipv4Addr> = fleet
        .records()
        .filter_map(|r| match r.session {
            Some(SessionOutcome::Established(ip)) => ip,
            _ => None,
        })
        .collect();
    all_ips.sort();
    all_ips.dedup();
    // The SMF deletes the UPF's sessions after the N2 side is done (on deregistration, once
    // the UE context is released): give that a bounded while.
    let settle = Instant::now() + Duration::from_secs(5);
    while check.rules_left(&all_ips) > 0 && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    out.addresses = all_ips.len();
    out.rules_left = check.rules_left(&all_ips);
    out
}

/// The metric names the queries of Grafana dashboard `file` (in contrib/grafana) read.
pub(crate) fn dashboard_metrics(file: &str) -> Vec<String> {
    let path = std::path::Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned()),
    )
    .join("../../contrib/grafana")
    .join(file);
    let names = testkit::grafana::metric_names(&path).unwrap();
    assert!(names.len() >= 5, "{file}: {names:?}");
    names
}
