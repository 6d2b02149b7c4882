//! Hosts driven in memory by a loop of a few lines: hops go to the receiving host, SQN
//! writes to the store, everything else is kept for the test to read. Time is virtual.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use ids::udm::owner_of_supi;
use ids::{WorkerId, Workers};
use proto::nas::NasMessage;
use proto::ngap::{self, MessageKind};
use sbi::{NfType, SbiRequest};
use security::suci::{HomeNetworkPrivateKey, Profile};
use store::{MemStore, OpOrOpc, Subscriber, SubscriberStore};

use super::*;
use crate::amf::registration::test_initial_ue::initial_ue_pdu;
use crate::amf::registration::{self};
use crate::udm::SidfKeys;

const SNN: &str = "5G:mnc001.mcc001.3gppnetwork.org";
const K: [u8; 16] = [0x46; 16];
const OPC: [u8; 16] = [0xcd; 16];
const GNB: u32 = 0x1234;
const UPF: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::new(127, 0, 0, 7)), 8805);

fn supi(n: u32) -> String {
    format!("imsi-00101{n:010}")
}

/// A subscriber whose SUPI worker `w` of `workers` owns.
fn supi_owned_by(w: WorkerId, workers: Workers) -> u32 {
    (1..)
        .find(|n| owner_of_supi(&supi(*n), workers) == w)
        .unwrap()
}

/// Which kind of output it is, for the "every kind is produced" check.
fn kind(o: &Output) -> &'static str {
    match o {
        Output::Ngap { .. } => "ngap",
        Output::Hop { .. } => "hop",
        Output::SbiCall(_) => "sbi_call",
        Output::SbiAnswer { .. } => "sbi_answer",
        Output::Pfcp { .. } => "pfcp",
        Output::PersistSqn(_) => "persist_sqn",
        Output::SaveUdmState(_) => "save_udm_state",
    }
}

struct Net<P: Placement> {
    now: Instant,
    hosts: Vec<Host<P>>,
    store: Arc<MemStore>,
    /// Outputs the loop does not carry out itself, with the worker that produced them.
    seen: Vec<(usize, Output)>,
    /// Every kind of output produced.
    kinds: BTreeSet<&'static str>,
    /// Hops carried.
    hops: usize,
    next_server: u64,
}

struct Setup {
    workers: u16,
    sbi: SbiMode,
    smf: bool,
}

impl Setup {
    fn new(workers: u16, sbi: SbiMode, smf: bool) -> Self {
        Setup { workers, sbi, smf }
    }
}

impl<P: Placement> Net<P> {
    fn new(placement: &P, s: Setup) -> Self {
        let store = Arc::new(MemStore::new());
        for n in 1..=64 {
            let sub = Subscriber::new(&supi(n), K, OpOrOpc::Opc(OPC)).unwrap();
            store.insert(&sub).unwrap();
        }
        let workers = Workers::new(s.workers).unwrap();
        let _w0 = WorkerId(0);
        let hn = HomeNetworkPrivateKey::from_bytes(Profile::A, &[0x11; 32]).unwrap();
        let mut cfg =
            HostConfig::loopback(workers, store.clone(), SNN, SidfKeys::new(vec![(1, hn)]));
        if s.smf {
            cfg = cfg.with_loopback_smf(UPF);
        }
        cfg.sbi = s.sbi;
        cfg.smf_sbi = s.sbi;
        let hosts = workers
            .iter()
            .map(|w| {
                let mut c = cfg.clone();
                c.worker = w;
                Host::new(c, placement)
            })
            .collect();
        Net {
            now: Instant::now(),
            hosts,
            store,
            seen: Vec::new(),
            kinds: BTreeSet::new(),
            hops: 0,
            next_server: 0,
        }
    }

    fn host(&mut self, w: usize) -> &mut Host<P> {
        &mut self.hosts[w]
    }

    /// Carries hops and SQN writes until every host is quiet.
    fn run(&mut self) {
        loop {
            let mut progress = false;
            for i in 0..self.hosts.len() {
                while let Some(o) = self.hosts[i].poll_output() {
                    progress = true;
                    self.kinds.insert(kind(&o));
                    let now = self.now;
                    match o {
                        Output::Hop { to, hop } => {
                            self.hops += 1;
                            self.hosts[to.index()].handle(now, Input::Hop(hop))
                        }
                        Output::PersistSqn(p) => {
                            let hw = self.store.sqn_claim(&p.supi, p.floor, p.count).ok();
                            let done = Input::SqnDone {
                                supi: p.supi,
                                claim: hw,
                            };
                            self.hosts[i].handle(now, done);
                        }
                        other => self.seen.push((i, other)),
                    }
                }
            }
            if !progress {
                break;
            }
        }
    }

    fn input(&mut self, w: usize, input: Input<'_>) {
        let now = self.now;
        self.hosts[w].handle(now, input);
        self.run();
    }

    /// An SBI request read by worker `w`'s server.
    fn serve(&mut self, w: usize, nf: NfType, steered: bool, req: SbiRequest) -> ServerToken {
        self.next_server += 1;
        let server = ServerToken(self.next_server);
        self.input(
            w,
            Input::SbiRequest {
                nf,
                steered,
                req,
                server,
            },
        );
        server
    }

    /// The answers given so far: (worker, token, status).
    fn answers(&self) -> Vec<(usize, ServerToken, u16)> {
        self.seen
            .iter()
            .filter_map(|(w, o)| match o {
                Output::SbiAnswer { server, response } => {
                    Some((*w, *server, response.status.as_u16()))
                }
                _ => None,
            })
            .collect()
    }

    /// Takes the outputs of one kind seen so far.
    fn take(&mut self, k: &str) -> Vec<(usize, Output)> {
        let (hit, rest) = std::mem::take(&mut self.seen)
            .into_iter()
            .partition(|(_, o)| kind(o) == k);
        self.seen = rest;
        hit
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        for i in 0..self.hosts.len() {
            let now = self.now;
            self.hosts[i].handle_timeout(now);
        }
        self.run();
    }
}

fn get(path: &str) -> SbiRequest {
    SbiRequest {
        method: Method::GET,
        path: path.to_owned(),
        query: None,
        body: bytes::Bytes::new(),
        content_type: None,
    }
}

/// An INITIAL UE MESSAGE with a REGISTRATION REQUEST by SUCI, as read on `assoc`.
fn initial_ue(n: u32, ran_ue_ngap_id: u32, assoc: u32, workers: Workers) -> UeNgap {
    let nssai = vec![proto::ids::Snssai { sst: 1, sd: None }];
    read_on(
        initial_ue_pdu(n, ran_ue_ngap_id, Some(nssai)),
        GNB,
        assoc,
        workers,
    )
}

/// `pdu`, the first of a UE, as read from `gnb_id` on stream 1 of the ready `assoc`.
pub(super) fn read_on(pdu: Vec<u8>, gnb_id: u32, assoc: u32, workers: Workers) -> UeNgap {
    UeNgap {
        route: registration::route(&pdu, gnb_id, workers),
        assoc,
        stream: 1,
        ready: true,
        gnb_id,
        pdu,
    }
}

/// The NAS message of a DOWNLINK NAS TRANSPORT sent on `assoc`.
fn downlink_nas(o: &Output, assoc_want: u32) -> NasMessage {
    let Output::Ngap { assoc, pdu, .. } = o else {
        panic!("not NGAP: {o:?}")
    };
    assert_eq!(*assoc, assoc_want);
    let pdu = ngap::decode(pdu).unwrap();
    assert_eq!(pdu.kind(), MessageKind::DownlinkNasTransport);
    let m = ngap::DownlinkNasTransport::parse(&pdu).unwrap();
    NasMessage::parse(&m.nas_pdu).unwrap()
}

/// Two sharded workers calling in-process (with an SMF if `smf`), their `Workers`, and the
/// first N2 association of worker 0.
fn two_workers_in_process(smf: bool) -> (Net<Sharded>, Workers, u32) {
    let net = Net::new(&Sharded, Setup::new(2, SbiMode::Inproc, smf));
    let workers = Workers::new(2).unwrap();
    (net, workers, ids::n2::assoc_id(WorkerId(0), 1))
}

// ---- SBI delivery ----

#[test]
fn a_request_on_the_wrong_worker_is_handled_by_its_owner_and_answered_at_the_origin() {
    let mut net = Net::new(&Sharded, Setup::new(2, SbiMode::H2c, false));
    let workers = Workers::new(2).unwrap();
    let n = supi_owned_by(WorkerId(1), workers);
    let req = get(&format!("/nudm-sdm/v2/{}/am-data", supi(n)));
    // Read by worker 0 from a kernel-steered listener: a client that is not shard-aware.
    let token = net.serve(0, NfType::Udm, true, req);
    assert_eq!(
        net.answers(),
        vec![(0, token, 200)],
        "answered where it was read"
    );
    let (c0, c1) = (*net.host(0).counters(), *net.host(1).counters());
    assert_eq!(
        (
            c0.sbi_served,
            c0.sbi_handed_off,
            c0.sbi_misdirected,
            c0.sbi_local
        ),
        (1, 1, 1, 0)
    );
    assert_eq!(c0.sbi_kernel_steered, 0);
    assert_eq!(
        (c1.sbi_from_mesh, c1.sbi_local, c1.sbi_answers_relayed),
        (1, 1, 1)
    );
    assert!(net.kinds.contains("hop") && net.kinds.contains("sbi_answer"));

    // Its owner reads the next one: no hop, counted as steered by the kernel.
    let req = get(&format!("/nudm-sdm/v2/{}/am-data", supi(n)));
    let token = net.serve(1, NfType::Udm, true, req);
    assert_eq!(net.answers().last(), Some(&(1, token, 200)));
    let c1 = *net.host(1).counters();
    assert_eq!(
        (c1.sbi_kernel_steered, c1.sbi_local, c1.sbi_handed_off),
        (1, 2, 0)
    );
}

#[test]
fn the_locked_baseline_handles_a_request_where_it_lands() {
    let locked = Locked::default();
    let mut net = Net::new(&locked, Setup::new(2, SbiMode::H2c, false));
    let n = supi_owned_by(WorkerId(1), Workers::new(2).unwrap());
    let token = net.serve(
        0,
        NfType::Udm,
        true,
        get(&format!("/nudm-sdm/v2/{}/am-data", supi(n))),
    );
    assert_eq!(net.answers(), vec![(0, token, 200)]);
    assert!(!net.kinds.contains("hop"), "no hop in the baseline");
    let c0 = *net.host(0).counters();
    assert_eq!((c0.sbi_local, c0.sbi_handed_off), (1, 0));
    assert_eq!(
        (c0.sbi_kernel_steered, c0.sbi_misdirected),
        (0, 0),
        "nothing to count without owners"
    );
}

#[test]
fn a_request_for_an_nf_not_hosted_is_404() {
    let mut net = Net::new(&Sharded, Setup::new(1, SbiMode::H2c, false));
    let token = net.serve(
        0,
        NfType::Smf,
        false,
        get("/nsmf-pdusession/v1/sm-contexts"),
    );
    assert_eq!(net.answers(), vec![(0, token, 404)]);
    assert_eq!(net.host(0).counters().nsmf_served, 1);
}

// ---- in-process calls ----

/// An initial registration on a one-worker host runs AMF → AUSF → UDM and back inside it:
/// the AUTHENTICATION REQUEST comes out with no call, hop or answer leaving the host.
fn registration_stays_inside_one_host<P: Placement>(placement: &P) {
    let mut net = Net::new(placement, Setup::new(1, SbiMode::Inproc, false));
    let one = Workers::single();
    let assoc = ids::n2::assoc_id(WorkerId(0), 1);
    net.input(0, Input::Ngap(initial_ue(3, 1, assoc, one)));
    let sent = net.take("ngap");
    assert_eq!(sent.len(), 1, "{:?}", net.seen);
    assert!(matches!(
        downlink_nas(&sent[0].1, assoc),
        NasMessage::AuthenticationRequest(_)
    ));
    assert!(net.seen.is_empty(), "{:?}", net.seen);
    let c = *net.host(0).counters();
    // The AUSF's authentication and the UDM's vector, both handled here.
    assert_eq!((c.sbi_local, c.h2c_calls, c.ngap_local), (2, 0, 1));
    assert_eq!(c.sqn_writes, 1, "the first reservation is persisted first");
    let stats = net.host(0).nf_stats();
    assert_eq!(
        (
            stats.ausf.contexts,
            stats.udm.vectors,
            stats.amf.ues_created
        ),
        (1, 1, 1)
    );
    assert!(net.kinds.contains("persist_sqn"));
    assert!(!net.kinds.contains("sbi_call") && !net.kinds.contains("hop"));
}

#[test]
fn an_inproc_registration_completes_inside_one_sharded_host() {
    registration_stays_inside_one_host(&Sharded);
}

#[test]
fn an_inproc_registration_completes_inside_one_locked_host() {
    let locked = Locked::default();
    registration_stays_inside_one_host(&locked);
    // The contexts went into the shared maps.
    assert!(locked.lock_total().acquisitions > 0);
}

/// Two sharded workers: the gNB's association lives on worker 0, the new UE on whichever
/// worker its hash picks; NGAP goes there and back, the UDM forwards to the SUPI's owner.
#[test]
fn ngap_hops_to_the_ue_owner_and_back_to_the_association() {
    let (mut net, workers, assoc) = two_workers_in_process(false);
    // A UE the hash of (gNB, RAN-UE-NGAP-ID) gives to worker 1.
    let ran_id = (1..)
        .find(|r| ids::amf::owner_of_new_ue(GNB, *r, workers) == WorkerId(1))
        .unwrap();
    let n = supi_owned_by(WorkerId(0), workers);
    net.input(0, Input::Ngap(initial_ue(n, ran_id, assoc, workers)));
    let sent = net.take("ngap");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, 0, "sent by the worker owning the association");
    assert!(matches!(
        downlink_nas(&sent[0].1, assoc),
        NasMessage::AuthenticationRequest(_)
    ));
    let (c0, c1) = (*net.host(0).counters(), *net.host(1).counters());
    assert_eq!((c0.ngap_handed_off, c1.ngap_from_mesh), (1, 1));
    assert_eq!(c1.ngap_out_relayed, 1);
    // The SUCI was deconcealed on worker 1 and the vector made at the SUPI's owner.
    assert_eq!(c1.udm_forwards, 1);
    assert_eq!(net.host(0).nf_stats().udm.vectors, 1);
}

// ---- h2c calls ----

#[test]
fn h2c_calls_go_out_with_their_owner_and_a_failed_one_is_a_504() {
    let mut net = Net::new(&Sharded, Setup::new(1, SbiMode::H2c, false));
    let assoc = ids::n2::assoc_id(WorkerId(0), 1);
    net.input(0, Input::Ngap(initial_ue(3, 1, assoc, Workers::single())));
    let calls = net.take("sbi_call");
    assert_eq!(calls.len(), 1);
    let Output::SbiCall(out) = &calls[0].1 else {
        unreachable!()
    };
    assert_eq!((out.nf, &out.method), (NfType::Ausf, &Method::POST));
    assert_eq!(out.path, "/nausf-auth/v1/ue-authentications");
    // A new authentication context names no owner: the AUSF worker of our own index.
    assert_eq!(out.owner, sbi::Owner::new(0, 1));
    let c = *net.host(0).counters();
    assert_eq!((c.h2c_calls, c.sbi_pool_steered), (1, 1));
    net.input(
        0,
        Input::SbiReply {
            call: out.call,
            reply: Err(CallFailed),
        },
    );
    assert_eq!(net.host(0).counters().call_failures, 1);
    // The AMF gives up on the UE: a REGISTRATION REJECT goes down (then the release).
    let sent = net.take("ngap");
    assert!(matches!(
        downlink_nas(&sent[0].1, assoc),
        NasMessage::RegistrationReject(_)
    ));
}

// ---- PFCP ----

/// One worker with an SMF whose PFCP association with the UPF was opened at the returned
/// instant: its setup request is among the outputs.
fn pfcp_opened() -> (Net<Sharded>, Instant) {
    let mut net = Net::new(&Sharded, Setup::new(1, SbiMode::Inproc, true));
    let now = net.now;
    net.host(0).pfcp_open(now, 1000);
    net.run();
    (net, now)
}

/// The SMF's association request, unanswered, comes out again at T1, N1 times, then the
/// SMF is told; an answered one stops.
#[test]
fn pfcp_requests_are_retransmitted_through_the_host() {
    let (mut net, now) = pfcp_opened();
    let first = net.take("pfcp");
    assert_eq!(first.len(), 1);
    let Output::Pfcp { to, bytes } = &first[0].1 else {
        unreachable!()
    };
    assert_eq!(*to, UPF);
    let t1 = pfcp::txn::DEFAULT_T1;
    assert_eq!(net.host(0).poll_timeout(), Some(now + t1));
    for n in 1..=pfcp::txn::DEFAULT_N1 {
        net.advance(t1 - Duration::from_millis(1));
        assert!(net.take("pfcp").is_empty(), "not before T1");
        net.advance(Duration::from_millis(1));
        let again = net.take("pfcp");
        assert_eq!(again.len(), 1, "retransmission {n}");
        assert!(matches!(&again[0].1, Output::Pfcp { bytes: b, .. } if b == bytes));
        assert_eq!(
            u32::try_from(net.host(0).counters().pfcp_retransmitted).unwrap(),
            n
        );
    }
    net.advance(t1);
    assert!(net.take("pfcp").is_empty());
    assert_eq!(net.host(0).counters().pfcp_timed_out, 1);
    assert!(!net.host(0).smf().unwrap().associated());
    assert_eq!(net.host(0).poll_timeout(), None);
}

#[test]
fn a_pfcp_answer_ends_the_retransmissions() {
    let (mut net, now) = pfcp_opened();
    let req = net.take("pfcp");
    let Output::Pfcp { bytes, .. } = &req[0].1 else {
        unreachable!()
    };
    // A real UPF node answers it.
    let mut upf = upf::UpfNode::new(
        now,
        upf::NodeConfig::new(
            pfcp::ie::NodeId::Ipv4(Ipv4Addr::new(127, 0, 0, 7)),
            Ipv4Addr::new(127, 0, 0, 7),
            Ipv4Addr::new(127, 0, 0, 7),
            5,
        ),
    );
    let mut dp = upf::MemoryDatapath::new();
    let smf_addr = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 4), 40000));
    upf.handle(now, smf_addr, bytes, &mut dp);
    let answer = upf.poll_transmit().unwrap();
    // The answer lost, the request retransmitted: the UPF answers from its cache.
    net.advance(pfcp::txn::DEFAULT_T1);
    let again = net.take("pfcp");
    let Output::Pfcp { bytes: b2, .. } = &again[0].1 else {
        unreachable!()
    };
    upf.handle(net.now, smf_addr, b2, &mut dp);
    let answer2 = upf.poll_transmit().unwrap();
    assert_eq!(answer2, answer);
    assert_eq!(upf.stats().retransmissions_answered, 1);
    net.input(0, Input::Pfcp(&answer2.contents));
    assert!(net.host(0).smf().unwrap().associated());
    assert_eq!(
        net.host(0).poll_timeout(),
        None,
        "nothing left to retransmit"
    );
    // The duplicate answer (the first one, late) changes nothing.
    net.input(0, Input::Pfcp(&answer.contents));
    assert_eq!(net.host(0).counters().pfcp_retransmitted, 1);
}

// ---- the interface as a whole ----

#[test]
fn every_output_kind_is_produced_by_some_test_scenario() {
    let mut kinds = BTreeSet::new();
    let (mut net, workers, assoc) = two_workers_in_process(true);
    net.input(0, Input::Ngap(initial_ue(3, 1, assoc, workers)));
    let n = supi_owned_by(WorkerId(1), workers);
    net.serve(
        0,
        NfType::Udm,
        false,
        get(&format!("/nudm-sdm/v2/{}/am-data", supi(n))),
    );
    let now = net.now;
    net.host(0).pfcp_open(now, 1);
    net.run();
    kinds.extend(net.kinds.iter().copied());
    let mut h2c = Net::new(&Sharded, Setup::new(1, SbiMode::H2c, false));
    h2c.input(0, Input::Ngap(initial_ue(3, 1, assoc, Workers::single())));
    kinds.extend(h2c.kinds.iter().copied());
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "hop",
            "ngap",
            "persist_sqn",
            "pfcp",
            "sbi_answer",
            "sbi_call"
        ]
    );
}

#[test]
fn the_locked_placement_tells_every_worker_of_an_sqn_write() {
    /// Three workers of `placement`, worker 1 told that an SQN write completed.
    fn sqn_written<P: Placement>(placement: &P) -> Net<P> {
        let mut net = Net::new(placement, Setup::new(3, SbiMode::Inproc, false));
        net.input(
            1,
            Input::SqnDone {
                supi: supi(1),
                claim: Some(store::sqn::Claim { start: 0, end: 64 }),
            },
        );
        net
    }
    let net = sqn_written(&Locked::default());
    // One hop to each other worker, nothing else.
    assert_eq!(net.hops, 2);
    assert!(net.seen.is_empty());
    let sharded = sqn_written(&Sharded);
    assert_eq!(sharded.hops, 0);
    assert!(sharded.kinds.is_empty());
}
