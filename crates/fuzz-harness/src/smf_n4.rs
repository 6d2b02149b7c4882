//! The SMF's N4 client against a UPF whose answers the input spoils: the SMF
//! (`nf::smf::Smf`, one worker) sets up, activates and releases a few PDU sessions with a
//! real UPF node (`upf::UpfNode`) behind it, and each datagram the UPF sends back is
//! delivered, changed, lost or held back and delivered late, as the next input op says. So
//! the fuzzer starts from real responses and reaches what the SMF does with broken,
//! unusable, missing and late ones.
//!
//! Promises checked: no panic; every Nsmf request answered exactly once; once every PFCP
//! request has ended (answered or given up on) the SMF holds no SM context and no UE address.

use std::collections::{BTreeSet, VecDeque};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Instant;

use http::StatusCode;
use ids::{WorkerId, Workers};
use nf::smf::nsmf_requests as nsmf;
use nf::smf::{Action, DnnPool, SmContext, Smf, SmfConfig, SmfStats};
use nf::state::ShardMap;
use pfcp::ie::NodeId;
use sbi::model::Snssai;
use sbi::multipart::{self, Part};
use sbi::SbiRequest;
use upf::{MemoryDatapath, NodeConfig, UpfNode};

const SMF_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 4, 4);
const UPF_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 4, 7);
const SESSIONS: u8 = 3;
const SM_DATA: &[u8] = br#"[{"singleNssai":{"sst":1},"dnnConfigurations":{"internet":{"pduSessionTypes":{"defaultSessionType":"IPV4"},"sscModes":{"defaultSscMode":"SSC_MODE_1"}}}}]"#;

/// What happens to one datagram from the UPF.
#[derive(Debug, Clone, Copy)]
enum Fate {
    Deliver,
    /// One octet replaced (position, value).
    Corrupt(u16, u8),
    /// Cut after this many octets.
    Truncate(u16),
    /// The n-th top-level IE removed.
    StripIe(u8),
    /// Lost: the SMF gives the request up.
    Lose,
    /// Held back, delivered after the request was given up on.
    Late,
    /// Delivered twice.
    Twice,
}

struct Ops<'a>(&'a [u8]);

impl Ops<'_> {
    /// The next fate: ops of 4 octets `[op, a, b, c]`; past the end everything is delivered.
    fn next(&mut self) -> Fate {
        let [op, a, b, c, rest @ ..] = self.0 else {
            return Fate::Deliver;
        };
        self.0 = rest;
        let pos = u16::from_be_bytes([*a, *b]);
        match op % 8 {
            0 => Fate::Deliver,
            1 => Fate::Corrupt(pos, *c),
            2 => Fate::Truncate(pos),
            3 => Fate::StripIe(*c),
            4 => Fate::Lose,
            5 => Fate::Late,
            6 => Fate::Twice,
            _ => Fate::Corrupt(pos % 64, *c),
        }
    }
}

fn strip_ie(msg: &[u8], n: u8) -> Vec<u8> {
    let at = if msg.first().is_some_and(|f| f & 1 != 0) {
        16
    } else {
        8
    };
    let Some(head) = msg.get(..at) else {
        return msg.to_vec();
    };
    let mut out = head.to_vec();
    let mut rest = msg.get(at..).unwrap_or(&[]);
    let mut i = 0u8;
    while let [_, _, l0, l1, ..] = rest {
        let len = usize::from(u16::from_be_bytes([*l0, *l1])) + 4;
        let Some(ie) = rest.get(..len) else { break };
        if i != n {
            out.extend_from_slice(ie);
        }
        i = i.wrapping_add(1);
        rest = rest.get(len..).unwrap_or(&[]);
    }
    let n = u16::try_from(out.len().saturating_sub(4)).unwrap_or(u16::MAX);
    if let Some(l) = out.get_mut(2..4) {
        l.copy_from_slice(&n.to_be_bytes());
    }
    out
}

struct World<'a> {
    now: Instant,
    smf: Smf<ShardMap<u64, SmContext>>,
    upf: UpfNode,
    dp: MemoryDatapath,
    ops: Ops<'a>,
    /// Every PFCP request sequence the SMF sent.
    sent: Vec<u32>,
    held: VecDeque<Vec<u8>>,
    answered: BTreeSet<u64>,
    answers: Vec<(u64, StatusCode, Option<String>)>,
}

impl World<'_> {
    fn run(&mut self) {
        while let Some(a) = self.smf.poll_action() {
            match a {
                Action::Respond { req_id, response } => {
                    assert!(
                        self.answered.insert(req_id),
                        "request {req_id} answered twice"
                    );
                    let loc = response.location().map(str::to_owned);
                    self.answers.push((req_id, response.status, loc));
                }
                Action::Call { call_id, nf, .. } => {
                    let body: &[u8] = if nf == sbi::NfType::Udm {
                        SM_DATA
                    } else {
                        br#"{"cause":"N1_N2_TRANSFER_INITIATED"}"#
                    };
                    self.smf.handle_reply(call_id, StatusCode::OK, body);
                }
                Action::Pfcp {
                    sequence, bytes, ..
                } => {
                    self.sent.push(sequence);
                    self.send_upf(&bytes, Some(sequence));
                }
                Action::PfcpResponse { bytes, .. } => self.send_upf(&bytes, None),
                _ => {}
            }
        }
    }

    fn send_upf(&mut self, bytes: &[u8], request: Option<u32>) {
        let mut dp = self.dp.clone();
        let from = SocketAddr::V4(SocketAddrV4::new(SMF_IP, 8805));
        self.upf.handle(self.now, from, bytes, &mut dp);
        while let Some(t) = self.upf.poll_transmit() {
            let b = t.contents;
            let fate = self.ops.next();
            match fate {
                Fate::Deliver => self.smf.handle_pfcp(&b),
                Fate::Corrupt(pos, v) => {
                    let mut b = b;
                    let at = usize::from(pos) % b.len().max(1);
                    if let Some(x) = b.get_mut(at) {
                        *x = v;
                    }
                    self.smf.handle_pfcp(&b);
                }
                Fate::Truncate(n) => {
                    let n = usize::from(n).min(b.len());
                    self.smf.handle_pfcp(b.get(..n).unwrap_or(&[]));
                }
                Fate::StripIe(n) => self.smf.handle_pfcp(&strip_ie(&b, n)),
                Fate::Lose | Fate::Late => {
                    if matches!(fate, Fate::Late) {
                        self.held.push_back(b);
                    }
                    if let Some(seq) = request {
                        self.smf.pfcp_timeout(seq);
                    }
                }
                Fate::Twice => {
                    self.smf.handle_pfcp(&b);
                    self.smf.handle_pfcp(&b);
                }
            }
        }
    }
}

fn create(psi: u8) -> Option<SbiRequest> {
    let data = nsmf::create_data(format!("imsi-00101000000000{psi}"), psi, "internet");
    // PDU SESSION ESTABLISHMENT REQUEST (TS 24.501 §8.3.1): header, and the integrity
    // protection maximum data rate.
    let n1 = vec![0x2e, psi, 1, 0xc1, 0xff, 0xff];
    nsmf::create(&data, n1).ok()
}

fn update(sm_ref: &str) -> Option<SbiRequest> {
    let n2 =
        nf::smf::n2::build_setup_response_transfer(Ipv4Addr::new(10, 1, 0, 1), 0x42, 1).ok()?;
    let n2 = Part::binary(multipart::NGAP, "n2", n2);
    nsmf::modify(sm_ref, &nsmf::setup_response_data(), vec![n2]).ok()
}

/// See the module docs. Input: ops of 4 octets `[op, a, b, c]`, one per datagram from the
/// UPF: op % 8 is 0 deliver, 1 replace octet `ab` by `c`, 2 cut after `ab` octets, 3 remove
/// top-level IE `c`, 4 lose, 5 deliver late, 6 deliver twice, 7 replace octet `ab % 64`.
pub fn smf_n4(data: &[u8]) {
    let _ = smf_n4_stats(data);
}

/// [`smf_n4`], returning the SMF's counters at the end, so that a test can tell which
/// branches a saved input reaches.
pub fn smf_n4_stats(data: &[u8]) -> SmfStats {
    let now = Instant::now();
    let Some(workers) = Workers::new(1) else {
        return SmfStats::default();
    };
    let cfg = SmfConfig {
        worker: WorkerId(0),
        workers,
        api_root: "http://10.0.4.4:7777".into(),
        node_id: NodeId::Ipv4(SMF_IP),
        pfcp_ip: SMF_IP,
        upf: SocketAddr::V4(SocketAddrV4::new(UPF_IP, 8805)),
        dnns: vec![DnnPool {
            dnn: "internet".into(),
            net: Ipv4Addr::new(10, 45, 0, 0),
            prefix_len: 24,
        }],
        slices: vec![Snssai { sst: 1, sd: None }],
        urr_volume_threshold: 1 << 30,
        // The harness's UPF node answers what the input lets through; heartbeats would only
        // add requests it never chose.
        heartbeat_interval: None,
        recovery_time_stamp: 1,
    };
    let mut node = NodeConfig::new(NodeId::Ipv4(UPF_IP), UPF_IP, UPF_IP, 1);
    node.heartbeat_interval = None;
    let mut w = World {
        now,
        smf: Smf::new(cfg, ShardMap::new()),
        upf: UpfNode::new(now, node),
        dp: MemoryDatapath::new(),
        ops: Ops(data),
        sent: Vec::new(),
        held: VecDeque::new(),
        answered: BTreeSet::new(),
        answers: Vec::new(),
    };
    w.smf.associate(1);
    w.run();
    let mut req = 0u64;
    let mut asked = 0u64;
    for psi in 1..=SESSIONS {
        let Some(create) = create(psi) else { continue };
        req += 1;
        asked += 1;
        w.smf.handle_request(req, create);
        w.run();
        let created = w
            .answers
            .iter()
            .find(|(r, s, _)| *r == req && *s == StatusCode::CREATED)
            .and_then(|(_, _, l)| l.as_deref()?.rsplit('/').next().map(str::to_owned));
        let Some(sm_ref) = created else { continue };
        if let Some(u) = update(&sm_ref) {
            req += 1;
            asked += 1;
            w.smf.handle_request(req, u);
            w.run();
        }
        req += 1;
        asked += 1;
        w.smf.handle_request(req, nsmf::release(&sm_ref));
        w.run();
    }
    // Every request still in flight is given up on, then the late answers come.
    loop {
        for seq in std::mem::take(&mut w.sent) {
            w.smf.pfcp_timeout(seq);
        }
        w.run();
        while let Some(b) = w.held.pop_front() {
            w.smf.handle_pfcp(&b);
            w.run();
        }
        if w.sent.is_empty() && w.held.is_empty() {
            break;
        }
    }
    assert_eq!(
        w.answered.len() as u64,
        asked,
        "a request was never answered"
    );
    assert_eq!(
        w.smf.context_count(),
        0,
        "an SM context outlived every request"
    );
    assert_eq!(w.smf.addresses_in_use("internet"), 0, "a UE address leaked");
    w.smf.stats()
}
