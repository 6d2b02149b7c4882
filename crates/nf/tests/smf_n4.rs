//! The SMF's N4 client when the UPF misbehaves, through a whole host in virtual time: one
//! worker's host (its SMF's PFCP retransmitted by the host's transaction layer, its UDM
//! answering the SMF in-process) and a real UPF node with its in-memory datapath behind a
//! "bad UPF" filter that mangles, holds or drops datagrams either way. The test plays the
//! AMF: it sends CreateSMContext, UpdateSMContext and ReleaseSMContext to the host and
//! answers the SMF's N1N2MessageTransfer. After each failure nothing may be left behind:
//! no SM context, no UE address, no UPF session (but where the UPF never named its
//! session), no PFCP request still retransmitted.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::StatusCode;
use ids::{WorkerId, Workers};
use nf::host::{
    CallReply, ConfigError, Host, HostConfig, Input, Output, SbiCall, SbiMode, ServerToken, Sharded,
};
use nf::smf::nsmf_requests as nsmf;
use nf::smf::{SmState, SmfStats};
use nf::udm::SidfKeys;
use oxirush_nas::nas_5gs as ox;
use pfcp::damage::without_ie;
use pfcp::ie::{ty, CreatedPdr, FTeid, NodeId};
use pfcp::message::SessionEstablishmentResponse;
use pfcp::txn::Retransmission;
use pfcp::{Message, MessageType, PfcpMessage};
use sbi::multipart::{self, Part};
use sbi::{NfType, SbiRequest, SbiResponse};
use store::{MemStore, OpOrOpc, Subscriber, SubscriberStore};
use upf::datapath::{Datapath, Entries};
use upf::{MemoryDatapath, NodeConfig, UpfNode};

const SMF_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 4);
const UPF_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 7);
const GNB: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const DNN: &str = "internet";
/// PDU SESSION ESTABLISHMENT REJECT (TS 24.501 §9.7 table 9.7.1).
const ESTABLISHMENT_REJECT: u8 = 0xc3;
/// 5GSM cause #26 "insufficient resources" (TS 24.501 §9.11.4.2).
const INSUFFICIENT_RESOURCES: u8 = 26;

fn supi(n: u32) -> String {
    format!("imsi-00101{n:010}")
}

fn smf_addr() -> SocketAddr {
    SocketAddr::from((SMF_IP, 40000))
}

fn upf_addr() -> SocketAddr {
    SocketAddr::from((UPF_IP, 8805))
}

fn host_config(store: Arc<MemStore>) -> HostConfig {
    let mut cfg = HostConfig::loopback(
        Workers::single(),
        store,
        "5G:mnc001.mcc001.3gppnetwork.org",
        SidfKeys::new(vec![]),
    )
    .with_loopback_smf(upf_addr());
    // The SMF asks the UDM in-process; Nsmf and Namf go out, to the test.
    cfg.smf_sbi = SbiMode::H2c;
    cfg.sbi_pool = false;
    cfg
}

/// What the bad UPF does to a datagram of type `msg_type`: pass it (maybe changed) or lose it.
type Filter = Box<dyn FnMut(u8, Vec<u8>) -> Option<Vec<u8>>>;

fn pass() -> Filter {
    Box::new(|_, b| Some(b))
}

/// Passes every datagram, those of type `t` changed by `f`.
fn change(t: u8, f: impl Fn(&[u8]) -> Vec<u8> + 'static) -> Filter {
    Box::new(move |ty, b| Some(if ty == t { f(&b) } else { b }))
}

struct Net {
    now: Instant,
    host: Host<Sharded>,
    upf: UpfNode,
    dp: MemoryDatapath,
    /// SMF → UPF.
    to_upf: Filter,
    /// UPF → SMF.
    to_smf: Filter,
    /// UPF → SMF datagrams held back by the test.
    held: Vec<Vec<u8>>,
    hold: bool,
    answers: HashMap<ServerToken, SbiResponse>,
    next_server: u64,
    n1n2: usize,
}

impl Net {
    fn new() -> Self {
        let store = Arc::new(MemStore::new());
        for n in 1..=8 {
            let s = Subscriber::new(&supi(n), [0x11; 16], OpOrOpc::Opc([0x22; 16])).unwrap();
            store.insert(&s).unwrap();
        }
        let now = Instant::now();
        let mut cfg = NodeConfig::new(NodeId::Ipv4(UPF_IP), UPF_IP, UPF_IP, 1000);
        cfg.heartbeat_interval = None;
        let mut net = Net {
            now,
            host: Host::new(host_config(store), &Sharded),
            upf: UpfNode::new(now, cfg),
            dp: MemoryDatapath::new(),
            to_upf: pass(),
            to_smf: pass(),
            held: Vec::new(),
            hold: false,
            answers: HashMap::new(),
            next_server: 0,
            n1n2: 0,
        };
        net.host.pfcp_open(now, 7);
        net.run();
        assert!(net.host.smf().unwrap().associated());
        net
    }

    /// Carries every output until the host is quiet.
    fn run(&mut self) {
        while let Some(o) = self.host.poll_output() {
            match o {
                Output::Pfcp { to, bytes } => {
                    assert_eq!(to, upf_addr());
                    let t = bytes.get(1).copied().unwrap_or(0);
                    let Some(bytes) = (self.to_upf)(t, bytes) else {
                        continue;
                    };
                    let mut dp = self.dp.clone();
                    self.upf.handle(self.now, smf_addr(), &bytes, &mut dp);
                    while let Some(t) = self.upf.poll_transmit() {
                        let ty = t.contents.get(1).copied().unwrap_or(0);
                        if let Some(b) = (self.to_smf)(ty, t.contents) {
                            if self.hold {
                                self.held.push(b);
                            } else {
                                let now = self.now;
                                self.host.handle(now, Input::Pfcp(&b));
                            }
                        }
                    }
                }
                Output::SbiAnswer { server, response } => {
                    assert!(self.answers.insert(server, response).is_none());
                }
                Output::SbiCall(SbiCall { call, nf, path, .. }) => {
                    // The AMF takes every N1N2MessageTransfer.
                    assert_eq!(nf, NfType::Amf, "{path}");
                    self.n1n2 += 1;
                    let reply = CallReply {
                        status: StatusCode::OK,
                        location: None,
                        content_type: Some("application/json".into()),
                        body: Bytes::from_static(br#"{"cause":"N1_N2_TRANSFER_INITIATED"}"#),
                    };
                    let now = self.now;
                    self.host.handle(
                        now,
                        Input::SbiReply {
                            call,
                            reply: Ok(reply),
                        },
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// Delivers what was held back, in order.
    fn release_held(&mut self) {
        self.hold = false;
        for b in std::mem::take(&mut self.held) {
            let now = self.now;
            self.host.handle(now, Input::Pfcp(&b));
            self.run();
        }
    }

    /// Moves time on by `d`, running every timer at its own instant on the way.
    fn advance(&mut self, d: Duration) {
        let end = self.now + d;
        while let Some(t) = self.host.poll_timeout().filter(|t| *t <= end) {
            self.now = self.now.max(t);
            let now = self.now;
            self.host.handle_timeout(now);
            self.run();
        }
        self.now = end;
    }

    /// Sends an Nsmf request; its answer, if it came.
    fn send(&mut self, req: SbiRequest) -> ServerToken {
        self.next_server += 1;
        let server = ServerToken(self.next_server);
        let now = self.now;
        self.host.handle(
            now,
            Input::SbiRequest {
                nf: NfType::Smf,
                steered: false,
                req,
                server,
            },
        );
        self.run();
        server
    }

    fn answer(&mut self, t: ServerToken) -> Option<SbiResponse> {
        self.answers.remove(&t)
    }

    /// Sends an Nsmf request and returns its answer, if it came.
    fn request(&mut self, req: SbiRequest) -> Option<SbiResponse> {
        let t = self.send(req);
        self.answer(t)
    }

    fn stats(&mut self) -> SmfStats {
        self.host.smf().unwrap().stats()
    }

    fn contexts(&mut self) -> usize {
        self.host.smf().unwrap().context_count()
    }

    fn addresses(&mut self) -> usize {
        self.host.smf().unwrap().addresses_in_use(DNN)
    }

    /// Nothing is left: no SM context, no address, no request retransmitted, and the UPF
    /// holds `upf_sessions` sessions (with their rules, or none at all).
    fn assert_clean(&mut self, upf_sessions: usize) {
        assert_eq!(self.contexts(), 0, "SM contexts");
        assert_eq!(self.addresses(), 0, "UE addresses");
        assert_eq!(
            self.host.poll_timeout(),
            None,
            "a PFCP request still in flight"
        );
        assert_eq!(self.upf.session_count(), upf_sessions, "UPF sessions");
        if upf_sessions == 0 {
            assert_eq!(self.dp.entries().unwrap(), Entries::default());
        }
    }
}

fn establishment_request(psi: u8) -> Vec<u8> {
    let r = ox::NasPduSessionEstablishmentRequest::new(
        ox::NasIntegrityProtectionMaximumDataRate::new(0xffff),
    );
    ox::Nas5gsMessage::new_5gsm(r, psi, 1).encode().unwrap()
}

fn create_req(n: u32, psi: u8) -> SbiRequest {
    nsmf::create(
        &nsmf::create_data(supi(n), psi, DNN),
        establishment_request(psi),
    )
    .unwrap()
}

fn activate_req(sm_ref: &str, gnb_teid: u32) -> SbiRequest {
    let n2 = nf::smf::n2::build_setup_response_transfer(GNB, gnb_teid, 1).unwrap();
    let n2 = Part::binary(multipart::NGAP, "n2", n2);
    nsmf::modify(sm_ref, &nsmf::setup_response_data(), vec![n2]).unwrap()
}

/// The SM context ref of a 201.
fn sm_ref(r: &SbiResponse) -> String {
    assert_eq!(r.status, StatusCode::CREATED);
    r.location().unwrap().rsplit('/').next().unwrap().to_owned()
}

/// A refused creation: its status, its `cause`, and the 5GSM message type and cause of the
/// N1 SM message it carries.
fn refusal(r: &SbiResponse) -> (u16, String, u8, u8) {
    let ct = r.content_type.unwrap();
    let parts = multipart::decode(ct, &r.body).unwrap();
    let err: sbi::model::SmContextCreateError =
        serde_json::from_slice(&multipart::json_part(&parts).unwrap().body).unwrap();
    let n1 = multipart::find_part(&parts, &err.n1_sm_msg.unwrap().content_id).unwrap();
    (
        r.status.as_u16(),
        err.error.cause.unwrap(),
        n1.body[3],
        n1.body[4],
    )
}

/// [`refusal`]'s answer for a creation refused with `status` and `cause`: the UE gets
/// PDU SESSION ESTABLISHMENT REJECT #26.
fn rejected(status: u16, cause: &str) -> (u16, String, u8, u8) {
    (
        status,
        cause.to_owned(),
        ESTABLISHMENT_REJECT,
        INSUFFICIENT_RESOURCES,
    )
}

/// The message type [`change`] alters when the establishment answers are spoilt.
fn establishment_response() -> u8 {
    MessageType::SessionEstablishmentResponse.value()
}

/// Re-encodes an establishment response after `f` changed it.
fn rewrite(msg: &[u8], f: impl Fn(&mut SessionEstablishmentResponse)) -> Vec<u8> {
    let mut m = PfcpMessage::parse(msg).unwrap();
    let Message::SessionEstablishmentResponse(r) = &mut m.message else {
        panic!("{m:?}")
    };
    f(r);
    m.emit()
}

/// A response that answers its request by its header but does not decode (a mandatory IE
/// missing) fails the establishment at once: the UE gets #26 with the decode error's cause,
/// and the session the UPF kept is deleted if the answer still names it.
#[test]
fn an_undecodable_establishment_answer_fails_the_creation_and_undoes_the_session() {
    for (missing, named) in [(ty::NODE_ID, true), (ty::CAUSE, true), (ty::F_SEID, false)] {
        let mut net = Net::new();
        net.to_smf = change(establishment_response(), move |b| without_ie(b, missing));
        let t = net.send(create_req(1, 5));
        let r = net.answer(t).expect("the creation is answered at once");
        assert_eq!(
            refusal(&r),
            rejected(500, "UNSPECIFIED_NF_FAILURE"),
            "IE {missing} missing"
        );
        let s = net.stats();
        assert_eq!(s.pfcp_unparsed, 1);
        assert_eq!(s.rejected, 1);
        if named {
            assert_eq!((s.abandoned_deleted, s.abandoned_unnamed), (1, 0));
            net.assert_clean(0);
        } else {
            // Accepted without a UP F-SEID: nothing names the UPF's session. Counted, and the
            // one thing left behind.
            assert_eq!((s.abandoned_deleted, s.abandoned_unnamed), (0, 1));
            net.assert_clean(1);
        }
        assert_eq!(net.n1n2, 0);
        assert_eq!(net.host.counters().pfcp_retransmitted, 0);
    }
}

/// An accepted answer the SMF cannot use (no uplink F-TEID for the gNB) is refused to the
/// UE, and what the UPF accepted is deleted.
#[test]
fn an_unusable_accepted_answer_is_refused_and_its_session_deleted() {
    type Change = fn(&mut SessionEstablishmentResponse);
    let cases: [(&str, Change); 5] = [
        ("no Created PDR", |r| r.created_pdr.clear()),
        ("F-TEID still CHOOSE", |r| {
            for c in &mut r.created_pdr {
                c.f_teid = Some(FTeid::Choose {
                    ipv4: true,
                    ipv6: false,
                    choose_id: None,
                });
            }
        }),
        ("no F-TEID", |r| {
            for c in &mut r.created_pdr {
                c.f_teid = None;
            }
        }),
        ("F-TEID without IPv4", |r| {
            for c in &mut r.created_pdr {
                if let Some(FTeid::Assigned { ipv4, ipv6, .. }) = &mut c.f_teid {
                    *ipv4 = None;
                    *ipv6 = Some(std::net::Ipv6Addr::LOCALHOST);
                }
            }
        }),
        ("another PDR's F-TEID", |r| {
            let f = r.created_pdr.first().and_then(|c| c.f_teid);
            r.created_pdr = vec![CreatedPdr {
                pdr_id: 99,
                f_teid: f,
                unknown: Vec::new(),
            }];
        }),
    ];
    for (what, edit) in cases {
        let mut net = Net::new();
        net.to_smf = change(establishment_response(), move |b| rewrite(b, edit));
        let t = net.send(create_req(1, 5));
        let r = net.answer(t).unwrap();
        assert_eq!(
            refusal(&r),
            rejected(500, "UNSPECIFIED_NF_FAILURE"),
            "{what}"
        );
        let s = net.stats();
        assert_eq!(
            (
                s.abandoned_deleted,
                s.abandoned_delete_failed,
                s.pfcp_unparsed
            ),
            (1, 0, 0),
            "{what}"
        );
        assert_eq!(s.released, 0, "an abandoned establishment is no release");
        net.assert_clean(0);
        assert_eq!(net.n1n2, 0);
        // The pool and the UPF are usable again.
        net.to_smf = pass();
        let t = net.send(create_req(2, 5));
        let r = net.answer(t).unwrap();
        let sm = sm_ref(&r);
        assert_eq!(
            net.request(nsmf::release(&sm)).unwrap().status,
            StatusCode::NO_CONTENT
        );
        net.assert_clean(0);
    }
}

/// The deletion that undoes an abandoned establishment is retransmitted like any request;
/// when the UPF never answers it, the failure is counted and the context goes anyway.
#[test]
fn an_undo_that_fails_is_counted_and_the_context_still_goes() {
    let mut net = Net::new();
    net.to_smf = change(establishment_response(), |b| {
        rewrite(b, |r| r.created_pdr.clear())
    });
    let deletion = MessageType::SessionDeletionRequest.value();
    net.to_upf = Box::new(move |t, b| (t != deletion).then_some(b));
    let t = net.send(create_req(1, 5));
    assert_eq!(net.answer(t).unwrap().status.as_u16(), 500);
    // Until the deletion ends the context (and the UE's address, which the UPF still
    // routes) stays.
    assert_eq!(net.contexts(), 1);
    assert_eq!(net.addresses(), 1);
    let give_up = Retransmission::default().give_up_after();
    net.advance(give_up - Duration::from_millis(1));
    assert_eq!(net.contexts(), 1, "not before T1 × (N1 + 1)");
    net.advance(Duration::from_millis(1));
    let s = net.stats();
    assert_eq!((s.abandoned_deleted, s.abandoned_delete_failed), (0, 1));
    let c = *net.host.counters();
    assert_eq!(
        (c.pfcp_retransmitted, c.pfcp_timed_out),
        (u64::from(pfcp::txn::DEFAULT_N1), 1)
    );
    // The UPF never heard of the deletion: its session is the one thing left.
    net.assert_clean(1);
}

/// An accepted answer that comes after the SMF gave up on its request (the UPF was slow,
/// every copy of the answer late) names a session whose context is gone: deleted, once.
#[test]
fn a_late_accepted_answer_is_undone_once() {
    let mut net = Net::new();
    net.hold = true;
    let t = net.send(create_req(1, 5));
    assert!(net.answer(t).is_none());
    let give_up = Retransmission::default().give_up_after();
    net.advance(give_up);
    let r = net.answer(t).expect("answered when the UPF is given up on");
    assert_eq!(refusal(&r), rejected(504, "PEER_NOT_RESPONDING"));
    assert_eq!(net.contexts(), 0);
    // The original answer and the N1 answered from the UPF's cache.
    assert_eq!(net.held.len(), 1 + pfcp::txn::DEFAULT_N1 as usize);
    assert_eq!(net.upf.session_count(), 1);
    net.release_held();
    let s = net.stats();
    assert_eq!((s.abandoned_deleted, s.abandoned_delete_failed), (1, 0));
    let upf = net.upf.stats();
    assert_eq!(upf.sessions_deleted, 1);
    assert_eq!(
        upf.received.get("session_deletion_request"),
        Some(&1),
        "one deletion for the four copies of the answer"
    );
    net.assert_clean(0);
}

/// The modification and deletion answers fail their requests the same way.
#[test]
fn undecodable_modification_and_deletion_answers_end_their_requests() {
    let mut net = Net::new();
    let t = net.send(create_req(1, 5));
    let sm = sm_ref(&net.answer(t).unwrap());
    assert_eq!(net.n1n2, 1);
    let modification = MessageType::SessionModificationResponse.value();
    net.to_smf = change(modification, move |b| without_ie(b, ty::CAUSE));
    let r = net.request(activate_req(&sm, 0x42)).unwrap();
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    let ctx = net.host.smf().unwrap().context(&sm).unwrap();
    assert_eq!(ctx.state, SmState::Activating, "ready for the next try");
    assert_eq!(net.stats().pfcp_unparsed, 1);
    net.to_smf = pass();
    let r = net.request(activate_req(&sm, 0x42)).unwrap();
    assert_eq!(r.status, StatusCode::OK);
    let deletion = MessageType::SessionDeletionResponse.value();
    net.to_smf = change(deletion, move |b| without_ie(b, ty::CAUSE));
    let r = net.request(nsmf::release(&sm)).unwrap();
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(net.stats().pfcp_unparsed, 2);
    net.assert_clean(0);
}

/// A ReleaseSMContext while the UPF sets the session up is answered at once; the creation
/// gets its answer when the UPF's comes, and the session the UPF made is deleted.
#[test]
fn a_release_during_the_upf_setup_answers_both_and_leaves_nothing() {
    let mut net = Net::new();
    net.hold = true;
    let t = net.send(create_req(1, 5));
    // The context's ref is the first this worker hands out.
    let sm = format!("{:016x}", ids::smf::sm_context_ref(WorkerId(0), 1));
    assert_eq!(
        net.host.smf().unwrap().context(&sm).map(|c| c.state),
        Some(SmState::Establishing)
    );
    let r = net.request(nsmf::release(&sm)).unwrap();
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert!(net.answer(t).is_none());
    net.release_held();
    assert_eq!(net.answer(t).unwrap().status, StatusCode::NOT_FOUND);
    assert_eq!(net.stats().abandoned_deleted, 1);
    assert_eq!(net.n1n2, 0);
    net.assert_clean(0);
}

/// The SMF's worst case nests inside the AMF's Nsmf call timeout: with the UPF silent, the
/// SMF answers (504, #26) when its PFCP request is given up on, T1 × (N1 + 1) after it was
/// sent, while the AMF still waits.
#[test]
fn the_smf_answers_before_the_amf_gives_up() {
    let cfg = host_config(Arc::new(MemStore::new()));
    assert_eq!(cfg.check(), Ok(()));
    assert_eq!(cfg.call_timeout(NfType::Udm), Duration::from_secs(5));
    assert_eq!(cfg.call_timeout(NfType::Smf), Duration::from_secs(20));
    let give_up = cfg.pfcp.give_up_after();
    assert_eq!(give_up, Duration::from_secs(12));
    assert!(cfg.call_timeout(NfType::Smf) > cfg.call_timeout(NfType::Udm) + give_up);
    // Timers that do not nest are refused.
    let mut bad = cfg.clone();
    bad.sbi_timeouts.nsmf = Duration::from_secs(5);
    assert!(matches!(
        bad.check(),
        Err(ConfigError::TimersNotNested { .. })
    ));

    let mut net = Net::new();
    net.to_upf = Box::new(|_, _| None);
    let t0 = net.now;
    let t = net.send(create_req(1, 5));
    net.advance(give_up - Duration::from_millis(1));
    assert!(net.answer(t).is_none(), "PFCP still retransmitting");
    net.advance(Duration::from_millis(1));
    let r = net.answer(t).expect("answered");
    assert!(net.now - t0 < cfg.call_timeout(NfType::Smf));
    assert_eq!(r.status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(refusal(&r).3, INSUFFICIENT_RESOURCES);
    net.assert_clean(0);
}
