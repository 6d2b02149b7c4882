//! The PFCP logic against the in-memory datapath, in virtual time: no sockets, no sleeps.
#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use pfcp::ie::{ty, GateStatus, NodeId, Triggers};
use pfcp::message::{SessionEstablishmentResponse, SessionModificationRequest, SessionResponse};
use pfcp::requests::{self, SessionSpec};
use pfcp::{Cause, Message, PfcpMessage};

use super::{NodeConfig, UpfNode};
use crate::datapath::{Datapath, DownlinkAction, Entries, UplinkAction, Usage, UsageId};
use crate::memory::MemoryDatapath;

const SMF: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 4);
const UPF: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 7);
const GNB: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const UE: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);
const WORKER: u8 = 3;

struct Harness {
    node: UpfNode,
    dp: MemoryDatapath,
    now: Instant,
    smf: SocketAddr,
    seq: u32,
}

impl Harness {
    fn new() -> Self {
        Self::with_n3(UPF)
    }

    /// A node whose N3 address (in the F-TEIDs it chooses) is `n3`.
    fn with_n3(n3: Ipv4Addr) -> Self {
        let now = Instant::now();
        let mut cfg = NodeConfig::new(NodeId::Ipv4(UPF), UPF, n3, 1000);
        cfg.worker = WORKER;
        Harness {
            node: UpfNode::new(now, cfg),
            dp: MemoryDatapath::new(),
            now,
            smf: SocketAddr::from((SMF, 8805)),
            seq: 0,
        }
    }

    fn smf_node() -> NodeId {
        NodeId::Ipv4(SMF)
    }

    /// Sends raw bytes; returns every datagram the node sent back.
    fn raw(&mut self, bytes: &[u8]) -> Vec<PfcpMessage> {
        let smf = self.smf;
        self.raw_from(smf, bytes)
    }

    /// Sends raw bytes from `from`; returns every datagram the node sent back (to `from`).
    fn raw_from(&mut self, from: SocketAddr, bytes: &[u8]) -> Vec<PfcpMessage> {
        self.octets_from(from, bytes)
            .iter()
            .map(|b| PfcpMessage::parse(b).unwrap())
            .collect()
    }

    /// Sends raw bytes from `from`; the datagrams the node sent back, as octets.
    fn octets_from(&mut self, from: SocketAddr, bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut dp = self.dp.clone();
        self.node.handle(self.now, from, bytes, &mut dp);
        let mut out = Vec::new();
        while let Some(t) = self.node.poll_transmit() {
            assert_eq!(t.destination, from);
            out.push(t.contents);
        }
        out
    }

    fn drain(&mut self) -> Vec<PfcpMessage> {
        let mut out = Vec::new();
        while let Some(t) = self.node.poll_transmit() {
            assert_eq!(t.destination, self.smf);
            out.push(PfcpMessage::parse(&t.contents).unwrap());
        }
        out
    }

    /// Sends `m` from `from` and returns the one answer.
    fn send_from(&mut self, from: SocketAddr, seid: Option<u64>, m: Message) -> PfcpMessage {
        self.seq += 1;
        let bytes = PfcpMessage::new(self.seq, seid, m).emit();
        let mut rsp = self.raw_from(from, &bytes);
        assert_eq!(rsp.len(), 1, "one response: {rsp:?}");
        rsp.remove(0)
    }

    fn send(&mut self, seid: Option<u64>, m: Message) -> PfcpMessage {
        self.seq += 1;
        let bytes = PfcpMessage::new(self.seq, seid, m).emit();
        let mut rsp = self.raw(&bytes);
        assert_eq!(rsp.len(), 1, "one response: {rsp:?}");
        let r = rsp.remove(0);
        assert_eq!(
            r.header.sequence, self.seq,
            "response carries the request's sequence"
        );
        r
    }

    fn advance(&mut self, d: Duration) -> Vec<PfcpMessage> {
        self.now += d;
        let mut dp = self.dp.clone();
        self.node.handle_timeout(self.now, &mut dp);
        self.drain()
    }

    fn associate(&mut self) {
        let r = self.send(None, requests::association_setup(Self::smf_node(), 7));
        let Message::AssociationSetupResponse(a) = r.message else {
            panic!("{r:?}")
        };
        assert_eq!(a.cause, Some(Cause::REQUEST_ACCEPTED));
        assert_eq!(a.node_id, NodeId::Ipv4(UPF));
        assert_eq!(a.recovery_time_stamp, 1000);
        // FTUP: we allocate F-TEIDs.
        assert_eq!(a.up_function_features.as_deref().map(|f| f[0] & 1), Some(1));
    }

    fn spec(&self) -> SessionSpec {
        SessionSpec::new(Self::smf_node(), 0x99, SMF, UE)
    }

    /// Sends a Session Establishment Request for `spec` from `from`; the answer's header SEID
    /// and body.
    fn establishment_from(
        &mut self,
        from: SocketAddr,
        spec: &SessionSpec,
    ) -> (Option<u64>, SessionEstablishmentResponse) {
        let m = Message::SessionEstablishmentRequest(requests::establishment(spec));
        let r = self.send_from(from, Some(0), m);
        let Message::SessionEstablishmentResponse(e) = r.message else {
            panic!("{r:?}")
        };
        (r.header.seid, e)
    }

    /// [`Self::establishment_from`] the SMF, checking the answer's sequence number.
    fn establishment(&mut self, spec: &SessionSpec) -> (Option<u64>, SessionEstablishmentResponse) {
        let m = Message::SessionEstablishmentRequest(requests::establishment(spec));
        let r = self.send(Some(0), m);
        let Message::SessionEstablishmentResponse(e) = r.message else {
            panic!("{r:?}")
        };
        (r.header.seid, e)
    }

    /// Establishes a session; returns (UP SEID, chosen TEID).
    fn establish(&mut self, spec: &SessionSpec) -> (u64, u32) {
        let (seid, e) = self.establishment(spec);
        assert_eq!(seid, Some(spec.cp_seid));
        assert_eq!(e.cause, Cause::REQUEST_ACCEPTED, "{e:?}");
        let up = e.up_f_seid.unwrap();
        assert_eq!(up.ipv4, Some(UPF));
        assert_eq!(e.created_pdr.len(), 1);
        assert_eq!(e.created_pdr[0].pdr_id, requests::UL_PDR);
        let Some(pfcp::ie::FTeid::Assigned { teid, ipv4, .. }) = e.created_pdr[0].f_teid else {
            panic!("{e:?}")
        };
        assert_eq!(ipv4, Some(self.node.cfg.n3_ip));
        (up.seid, teid)
    }

    fn modify(&mut self, seid: u64, m: SessionModificationRequest) -> SessionResponse {
        let r = self.send(Some(seid), Message::SessionModificationRequest(m));
        let Message::SessionModificationResponse(s) = r.message else {
            panic!("{r:?}")
        };
        s
    }

    fn delete(&mut self, seid: u64) -> (PfcpMessage, SessionResponse) {
        let r = self.send(Some(seid), requests::deletion());
        let Message::SessionDeletionResponse(s) = r.message.clone() else {
            panic!("{r:?}")
        };
        (r, s)
    }

    fn entries(&self) -> Entries {
        self.dp.entries().unwrap()
    }
}

#[test]
fn heartbeat_is_answered_without_association() {
    let mut h = Harness::new();
    let r = h.send(None, requests::heartbeat(5));
    let Message::HeartbeatResponse(hb) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(hb.recovery_time_stamp, 1000);
}

#[test]
fn sessions_need_an_association() {
    let mut h = Harness::new();
    let spec = h.spec();
    let (seid, e) = h.establishment(&spec);
    assert_eq!(e.cause, Cause::NO_ESTABLISHED_ASSOCIATION);
    assert_eq!(seid, Some(0));
    assert_eq!(h.entries(), Entries::default());
}

#[test]
fn session_life_cycle_installs_and_removes_rules() {
    let mut h = Harness::new();
    h.associate();
    let mut spec = h.spec();
    spec.mbr_kbps = Some((1000, 2000));
    let (seid, teid) = h.establish(&spec);
    // The worker is in the top 16 bits of the SEID and the top 8 of the TEID.
    assert_eq!(ids::upf::owner_of_seid(seid), u16::from(WORKER));
    assert_eq!(ids::upf::owner_of_teid(teid), WORKER);
    let ul = h.dp.uplink(teid).unwrap();
    assert_eq!(ul.action, UplinkAction::Forward);
    assert_eq!(ul.ue_ip, UE);
    assert_eq!(ul.seid, seid);
    assert_eq!(ul.gate.mbr_bps, 1_000_000);
    let dl = h.dp.downlink(UE).unwrap();
    assert_eq!(dl.action, DownlinkAction::Buffer);
    assert_eq!(dl.gate.mbr_bps, 2_000_000);
    assert!(dl.gate.open);

    // PDU Session Resource Setup done: BUFF → FORW towards the gNB.
    let m = h.modify(seid, requests::forward_downlink(0x1234, GNB));
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);
    assert!(m.created_pdr.is_empty());
    assert_eq!(
        h.dp.downlink(UE).unwrap().action,
        DownlinkAction::Forward {
            teid: 0x1234,
            peer: GNB,
            qfi: None
        }
    );
    // The QER gate closes the uplink.
    let m = h.modify(seid, requests::set_gate(GateStatus { ul: 1, dl: 0 }));
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);
    assert!(!h.dp.uplink(teid).unwrap().gate.open);
    assert!(h.dp.downlink(UE).unwrap().gate.open);

    let (r, d) = h.delete(seid);
    assert_eq!(r.header.seid, Some(0x99));
    assert_eq!(d.cause, Cause::REQUEST_ACCEPTED);
    assert_eq!(h.entries(), Entries::default());
    assert_eq!(h.node.session_count(), 0);
    assert_eq!(h.node.stats().sessions_deleted, 1);
}

#[test]
fn unknown_seid_gets_context_not_found_with_seid_zero() {
    let mut h = Harness::new();
    h.associate();
    let r = h.send(
        Some(0xdead),
        Message::SessionModificationRequest(SessionModificationRequest::default()),
    );
    assert_eq!(r.header.seid, Some(0));
    let Message::SessionModificationResponse(m) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(m.cause, Cause::SESSION_CONTEXT_NOT_FOUND);
    let r = h.send(Some(0xdead), requests::deletion());
    assert_eq!(r.header.seid, Some(0));
    let Message::SessionDeletionResponse(d) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(d.cause, Cause::SESSION_CONTEXT_NOT_FOUND);
    assert_eq!(h.node.stats().causes_sent.get(&65), Some(&2));
}

#[test]
fn missing_mandatory_ie_names_it() {
    let mut h = Harness::new();
    h.associate();
    let spec = h.spec();
    let mut bytes = PfcpMessage::new(
        50,
        Some(0),
        Message::SessionEstablishmentRequest(requests::establishment(&spec)),
    )
    .emit();
    // Cut the F-SEID IE (type 57) out: it follows the Node ID (4 + 5 octets) after the
    // 16-octet header, and is 4 + 13 octets long.
    let at = 16 + 9;
    assert_eq!(&bytes[at..at + 2], &[0, 57]);
    bytes.drain(at..at + 17);
    let len = u16::try_from(bytes.len() - 4).unwrap().to_be_bytes();
    bytes[2..4].copy_from_slice(&len);
    let r = h.raw(&bytes);
    let Message::SessionEstablishmentResponse(e) = &r[0].message else {
        panic!("{r:?}")
    };
    assert_eq!(e.cause, Cause::MANDATORY_IE_MISSING);
    assert_eq!(e.offending_ie, Some(ty::F_SEID));
    assert_eq!(r[0].header.seid, Some(0));
    assert_eq!(h.node.stats().malformed, 1);
    assert_eq!(h.node.session_count(), 0);
}

#[test]
fn unknown_far_is_a_rule_failure_and_changes_nothing() {
    let mut h = Harness::new();
    h.associate();
    let spec = h.spec();
    let mut req = requests::establishment(&spec);
    req.create_pdr[0].far_id = Some(77);
    let r = h.send(Some(0), Message::SessionEstablishmentRequest(req));
    let Message::SessionEstablishmentResponse(e) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(e.cause, Cause::RULE_CREATION_FAILURE);
    // Failed Rule ID: type PDR (0), PDR id 1.
    assert_eq!(e.unknown.len(), 1);
    assert_eq!(e.unknown[0].ie_type, 114);
    assert_eq!(e.unknown[0].value, vec![0, 0, 1]);
    assert_eq!(h.entries(), Entries::default());

    // In a modification: the session's rules stay as they were.
    let (seid, teid) = h.establish(&spec);
    let before = h.dp.uplink(teid);
    let mut m = requests::forward_downlink(1, GNB);
    m.update_far[0].far_id = 55;
    let rsp = h.modify(seid, m);
    assert_eq!(rsp.cause, Cause::RULE_CREATION_FAILURE);
    assert_eq!(rsp.unknown[0].value, vec![1, 0, 0, 0, 55]);
    assert_eq!(h.dp.uplink(teid), before);
    assert_eq!(h.dp.downlink(UE).unwrap().action, DownlinkAction::Buffer);
}

#[test]
fn retransmitted_request_is_answered_from_cache() {
    let mut h = Harness::new();
    h.associate();
    let spec = h.spec();
    let bytes = PfcpMessage::new(
        40,
        Some(0),
        Message::SessionEstablishmentRequest(requests::establishment(&spec)),
    )
    .emit();
    let first = h.raw(&bytes);
    let again = h.raw(&bytes);
    assert_eq!(first, again);
    assert_eq!(h.node.session_count(), 1);
    assert_eq!(h.node.stats().sessions_established, 1);
    assert_eq!(h.node.stats().retransmissions_answered, 1);
    // After the cache time the same sequence number is a new request.
    h.advance(Duration::from_secs(61));
    // Processed anew: the UE address is now taken by the first session, so it is refused.
    let third = h.raw(&bytes);
    let Message::SessionEstablishmentResponse(e) = &third[0].message else {
        panic!("{third:?}")
    };
    assert_eq!(e.cause, Cause::RULE_CREATION_FAILURE);
    assert_eq!(h.node.session_count(), 1);
}

#[test]
fn volume_threshold_triggers_a_report_and_deletion_reports_the_rest() {
    let mut h = Harness::new();
    h.associate();
    let mut spec = h.spec();
    spec.volume_threshold = Some(10_000);
    let (seid, teid) = h.establish(&spec);
    let usage = h.dp.uplink(teid).unwrap().usage.unwrap();
    let bump = |dp: &MemoryDatapath, id: UsageId, ul: u64, dl: u64| {
        assert!(dp.count(
            id,
            Usage {
                ul_packets: 1,
                ul_bytes: ul,
                dl_packets: 1,
                dl_bytes: dl,
                dropped: 0
            }
        ));
    };
    bump(&h.dp, usage, 3000, 3000);
    assert!(
        h.advance(Duration::from_secs(1)).is_empty(),
        "below threshold"
    );
    // The node's N3 volume follows every poll, each octet once.
    let volume = |h: &Harness| (h.node.stats().n3_ul_bytes, h.node.stats().n3_dl_bytes);
    assert_eq!(volume(&h), (3000, 3000));
    bump(&h.dp, usage, 2000, 2500);
    let sent = h.advance(Duration::from_secs(1));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].header.seid, Some(0x99));
    let Message::SessionReportRequest(rep) = &sent[0].message else {
        panic!("{sent:?}")
    };
    assert_eq!(rep.report_type, 0x02);
    let u = &rep.usage_reports[0];
    assert_eq!(u.urr_id, requests::URR);
    assert_eq!(u.ur_seqn, 0);
    assert_eq!(u.trigger, Triggers(Triggers::VOLTH));
    let v = u.volume.unwrap();
    assert_eq!(
        (v.total, v.uplink, v.downlink),
        (Some(10_500), Some(5000), Some(5500))
    );
    assert_eq!(u.duration, Some(2));
    // The SMF answers; no retransmission follows.
    let rsp = PfcpMessage::new(
        sent[0].header.sequence,
        Some(seid),
        Message::SessionReportResponse(SessionResponse::new(Cause::REQUEST_ACCEPTED)),
    );
    assert!(h.raw(&rsp.emit()).is_empty());
    assert!(h.advance(Duration::from_secs(5)).is_empty());
    assert_eq!(h.node.stats().requests_retransmitted, 0);

    assert_eq!(volume(&h), (5000, 5500));
    bump(&h.dp, usage, 100, 0);
    let (_, d) = h.delete(seid);
    assert_eq!(
        volume(&h),
        (5100, 5500),
        "the last octets counted at deletion"
    );
    assert_eq!(d.usage_reports.len(), 1);
    let u = &d.usage_reports[0];
    assert_eq!(u.ur_seqn, 1);
    assert_eq!(u.trigger, Triggers(Triggers::TERMR));
    assert_eq!(u.volume.unwrap().total, Some(100));
    assert_eq!(h.entries(), Entries::default());
}

#[test]
fn unanswered_report_is_retransmitted_n1_times() {
    let mut h = Harness::new();
    h.associate();
    let mut spec = h.spec();
    spec.time_threshold = Some(5);
    h.establish(&spec);
    let mut reports = 0;
    let mut seqs = std::collections::BTreeSet::new();
    for _ in 0..30 {
        for m in h.advance(Duration::from_secs(1)) {
            if let Message::SessionReportRequest(r) = &m.message {
                assert_eq!(r.usage_reports[0].trigger, Triggers(Triggers::TIMTH));
                reports += 1;
                seqs.insert(m.header.sequence);
            }
        }
    }
    // First report at 5 s, retransmitted 3 times (T1 3 s); new periods at 10, 15, ... s.
    assert!(h.node.stats().requests_retransmitted >= 3);
    assert!(h.node.stats().requests_timed_out >= 1);
    assert!(reports > seqs.len());
}

#[test]
fn dead_peer_takes_its_sessions() {
    let mut h = Harness::new();
    h.associate();
    let spec = h.spec();
    h.establish(&spec);
    let mut heartbeats = 0;
    // Heartbeat at 10 s, retransmitted at 13, 16, 19 s, given up at 22 s.
    for _ in 0..25 {
        heartbeats += h
            .advance(Duration::from_secs(1))
            .iter()
            .filter(|m| matches!(m.message, Message::HeartbeatRequest(_)))
            .count();
    }
    assert_eq!(heartbeats, 4);
    assert_eq!(h.node.stats().peers_lost, 1);
    assert_eq!(h.node.association_count(), 0);
    assert_eq!(h.node.session_count(), 0);
    assert_eq!(h.entries(), Entries::default());
}

#[test]
fn answered_heartbeats_keep_the_peer() {
    let mut h = Harness::new();
    h.associate();
    for _ in 0..40 {
        let out = h.advance(Duration::from_secs(1));
        for m in out {
            if let Message::HeartbeatRequest(_) = m.message {
                let rsp = PfcpMessage::new(
                    m.header.sequence,
                    None,
                    Message::HeartbeatResponse(pfcp::message::Heartbeat {
                        recovery_time_stamp: 7,
                        unknown: Vec::new(),
                    }),
                );
                assert!(h.raw(&rsp.emit()).is_empty());
            }
        }
    }
    assert_eq!(h.node.stats().peers_lost, 0);
    assert_eq!(h.node.association_count(), 1);
    assert_eq!(h.node.stats().sent.get("heartbeat_request"), Some(&4));
}

#[test]
fn release_removes_the_sessions() {
    let mut h = Harness::new();
    h.associate();
    let spec = h.spec();
    h.establish(&spec);
    let r = h.send(None, requests::association_release(Harness::smf_node()));
    let Message::AssociationReleaseResponse(a) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(a.cause, Some(Cause::REQUEST_ACCEPTED));
    assert_eq!(h.entries(), Entries::default());
    assert_eq!(h.node.stats().sessions_dropped, 1);
}

#[test]
fn query_urr_and_remove_urr_report_usage() {
    let mut h = Harness::new();
    h.associate();
    let mut spec = h.spec();
    spec.volume_threshold = Some(1 << 40);
    let (seid, teid) = h.establish(&spec);
    let usage = h.dp.uplink(teid).unwrap().usage.unwrap();
    h.dp.count(
        usage,
        Usage {
            ul_bytes: 42,
            ..Usage::default()
        },
    );
    // Query URR (type 77) holding URR ID 1.
    let mut m = SessionModificationRequest::default();
    m.unknown.push(pfcp::ie::UnknownIe {
        ie_type: 77,
        value: vec![0, 81, 0, 4, 0, 0, 0, 1],
    });
    let rsp = h.modify(seid, m);
    assert_eq!(rsp.usage_reports.len(), 1);
    assert_eq!(rsp.usage_reports[0].trigger, Triggers(0x80));
    assert_eq!(rsp.usage_reports[0].volume.unwrap().uplink, Some(42));
    // Remove the URR (and the PDRs' references to it): its last usage comes back.
    h.dp.count(
        usage,
        Usage {
            dl_bytes: 8,
            ..Usage::default()
        },
    );
    let mut m = SessionModificationRequest {
        remove_urr: vec![requests::URR],
        ..SessionModificationRequest::default()
    };
    for id in [requests::UL_PDR, requests::DL_PDR] {
        m.update_pdr.push(pfcp::ie::UpdatePdr {
            pdr_id: id,
            ..Default::default()
        });
    }
    // A PDR still naming the removed URR is a rule failure.
    let rsp = h.modify(seid, m);
    assert_eq!(rsp.cause, Cause::RULE_CREATION_FAILURE);
    assert!(h.dp.uplink(teid).unwrap().usage.is_some());
    let mut m = SessionModificationRequest {
        remove_urr: vec![requests::URR],
        remove_pdr: vec![requests::DL_PDR],
        remove_far: vec![requests::DL_FAR],
        ..SessionModificationRequest::default()
    };
    m.remove_pdr.push(requests::UL_PDR);
    m.remove_far.push(requests::UL_FAR);
    let rsp = h.modify(seid, m);
    assert_eq!(rsp.cause, Cause::REQUEST_ACCEPTED);
    assert_eq!(rsp.usage_reports.len(), 1);
    assert_eq!(rsp.usage_reports[0].trigger, Triggers(Triggers::TERMR));
    assert_eq!(rsp.usage_reports[0].volume.unwrap().downlink, Some(8));
    assert_eq!(h.entries(), Entries::default());
    h.delete(seid);
}

#[test]
fn bad_input_never_panics_and_is_counted() {
    let mut h = Harness::new();
    h.associate();
    // Version 2: Version Not Supported Response with the same sequence number.
    let r = {
        let mut dp = h.dp.clone();
        h.node
            .handle(h.now, h.smf, &[0x40, 1, 0, 4, 0, 0, 9, 0], &mut dp);
        h.node.poll_transmit().unwrap()
    };
    assert_eq!(r.contents, vec![0x20, 11, 0, 4, 0, 0, 9, 0]);
    // Unknown message type 99: silently discarded.
    assert!(h.raw(&[0x20, 99, 0, 4, 0, 0, 1, 0]).is_empty());
    assert_eq!(h.node.stats().unknown_type, 1);
    // Garbage of every short length.
    for n in 0..40u8 {
        let junk: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37) ^ 0x21).collect();
        let _ = h.raw(&junk);
    }
    // An IE overrunning the message: Invalid Length (68) naming it.
    let mut bytes =
        PfcpMessage::new(3, None, requests::association_setup(Harness::smf_node(), 1)).emit();
    bytes[11] = 0x40; // Node ID length 0x0040, past the end.
    let r = h.raw(&bytes);
    let Message::AssociationSetupResponse(a) = &r[0].message else {
        panic!("{r:?}")
    };
    assert_eq!(a.cause, Some(Cause::INVALID_LENGTH));
}

#[test]
fn association_update_is_answered() {
    let mut h = Harness::new();
    h.associate();
    // Association Update Request (type 7) with our SMF's Node ID.
    let mut body = Vec::new();
    Harness::smf_node().emit(&mut body);
    let mut bytes = vec![0x20, 7];
    bytes.extend_from_slice(&u16::try_from(body.len() + 4).unwrap().to_be_bytes());
    bytes.extend_from_slice(&[0, 0, 5, 0]);
    bytes.extend_from_slice(&body);
    let mut dp = h.dp.clone();
    h.node.handle(h.now, h.smf, &bytes, &mut dp);
    let t = h.node.poll_transmit().unwrap();
    assert_eq!(t.contents[1], 8);
    // Cause IE (19) = 1 after our Node ID (4 + 5 octets) and the 8-octet header.
    assert_eq!(&t.contents[17..22], &[0, 19, 0, 1, 1]);
}

#[test]
fn two_sessions_may_not_share_a_ue_address() {
    let mut h = Harness::new();
    h.associate();
    let spec = h.spec();
    h.establish(&spec);
    let (_, e) = h.establishment(&spec);
    assert_eq!(e.cause, Cause::RULE_CREATION_FAILURE);
    assert_eq!(h.entries().downlink, 1);
    assert_eq!(h.node.session_count(), 1);
    // Nothing of the refused session was left behind either.
    assert_eq!(h.entries().uplink, 1);
    let _ = h.dp.entries();
    let mut dp = h.dp.clone();
    h.node.clear(&mut dp);
    assert_eq!(h.entries(), Entries::default());
}

/// Every single-octet mutation of valid requests: no panic, every answer decodes, and once
/// all sessions are removed the datapath is empty (no rule leaks on any error path).
#[test]
fn mutated_requests_never_panic_or_leak_rules() {
    let mut h = Harness::new();
    h.associate();
    let spec = SessionSpec {
        volume_threshold: Some(100),
        ..h.spec()
    };
    let (seid, _) = h.establish(&spec);
    let mut valid = vec![
        PfcpMessage::new(1, None, requests::heartbeat(3)).emit(),
        PfcpMessage::new(2, None, requests::association_setup(Harness::smf_node(), 7)).emit(),
        PfcpMessage::new(
            3,
            Some(seid),
            Message::SessionModificationRequest(requests::forward_downlink(9, GNB)),
        )
        .emit(),
        PfcpMessage::new(4, Some(seid), requests::deletion()).emit(),
    ];
    let mut other = h.spec();
    other.ue_ip = Ipv4Addr::new(10, 45, 7, 7);
    valid.push(
        PfcpMessage::new(
            5,
            Some(0),
            Message::SessionEstablishmentRequest(requests::establishment(&other)),
        )
        .emit(),
    );
    let mut seq = 100u32;
    for v in &valid {
        for i in 0..v.len() {
            for f in [|b: u8| b ^ 0x01, |b: u8| b ^ 0x80, |_| 0x00, |_| 0xff] {
                let mut m = v.clone();
                m[i] = f(m[i]);
                // A fresh sequence number, so no answer comes from the retransmission cache
                // (unless the mutation hit the sequence number itself).
                seq += 1;
                let s = seq.to_be_bytes();
                let at = if m[0] & 1 != 0 { 12 } else { 4 };
                if i < at || i >= at + 3 {
                    m[at..at + 3].copy_from_slice(&s[1..]);
                }
                let mut dp = h.dp.clone();
                h.node.handle(h.now, h.smf, &m, &mut dp);
                while let Some(t) = h.node.poll_transmit() {
                    if !matches!(t.contents[1], 8 | 11) {
                        assert!(PfcpMessage::parse(&t.contents).is_ok(), "{t:?}");
                    }
                }
            }
        }
    }
    h.advance(Duration::from_secs(2));
    let mut dp = h.dp.clone();
    h.node.clear(&mut dp);
    assert_eq!(h.entries(), Entries::default());
    assert!(h.node.stats().malformed > 0);
}

#[test]
fn periodic_reports_follow_the_measurement_period() {
    let mut h = Harness::new();
    h.associate();
    let spec = h.spec();
    let mut req = requests::establishment(&spec);
    req.create_urr.push(pfcp::ie::Urr {
        urr_id: 9,
        measurement_method: Some(pfcp::ie::MeasurementMethod(
            pfcp::ie::MeasurementMethod::DURAT,
        )),
        reporting_triggers: Some(Triggers(Triggers::PERIO)),
        volume_threshold: None,
        time_threshold: None,
        // Measurement Period (IE 64): 3 s.
        unknown: vec![pfcp::ie::UnknownIe {
            ie_type: 64,
            value: vec![0, 0, 0, 3],
        }],
    });
    req.create_pdr[0].urr_ids = vec![9];
    let r = h.send(Some(0), Message::SessionEstablishmentRequest(req));
    assert!(
        matches!(r.message, Message::SessionEstablishmentResponse(ref e) if e.cause == Cause::REQUEST_ACCEPTED)
    );
    let mut seen = Vec::new();
    for _ in 0..9 {
        for m in h.advance(Duration::from_secs(1)) {
            if let Message::SessionReportRequest(r) = &m.message {
                let u = &r.usage_reports[0];
                seen.push((u.ur_seqn, u.trigger, u.duration));
                let rsp = PfcpMessage::new(
                    m.header.sequence,
                    Some(0x99),
                    Message::SessionReportResponse(SessionResponse::new(Cause::REQUEST_ACCEPTED)),
                );
                h.raw(&rsp.emit());
            }
        }
    }
    let p = Triggers(Triggers::PERIO);
    assert_eq!(
        seen,
        vec![(0, p, Some(3)), (1, p, Some(3)), (2, p, Some(3))]
    );
}

/// A second SMF with its own association, and a host with none.
const SMF_B: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 44);
const STRANGER: Ipv4Addr = Ipv4Addr::new(10, 9, 9, 9);

fn at(ip: Ipv4Addr) -> SocketAddr {
    SocketAddr::from((ip, 8805))
}

/// SMF A (the harness's) with one session; SMF B associated too.
fn two_smfs() -> (Harness, u64, u32) {
    let mut h = Harness::new();
    h.associate();
    let spec = h.spec();
    let (seid, teid) = h.establish(&spec);
    let r = h.send_from(
        at(SMF_B),
        None,
        requests::association_setup(NodeId::Ipv4(SMF_B), 9),
    );
    assert!(
        matches!(r.message, Message::AssociationSetupResponse(ref a) if a.cause == Some(Cause::REQUEST_ACCEPTED)),
        "{r:?}"
    );
    (h, seid, teid)
}

/// The answer's octets with the sequence number (octets 12..15 of a session header)
/// blanked, to compare two answers.
fn without_seq(mut b: Vec<u8>) -> Vec<u8> {
    b[12..15].fill(0);
    b
}

/// TS 29.244 §7.2.2.4.2 with the session bound to its association: another associated SMF
/// naming A's SEID gets exactly what it gets for a SEID nobody holds, and A's session is
/// untouched (no blackholing by an Outer Header Creation of B's choosing, no teardown).
#[test]
fn another_associations_session_is_answered_like_an_unknown_seid() {
    let (mut h, seid, teid) = two_smfs();
    let before = (h.dp.uplink(teid), h.dp.downlink(UE));
    let unknown = seid ^ 0x00ff_0000;
    for (what, m) in [
        (
            "modification",
            Message::SessionModificationRequest(requests::forward_downlink(
                0x666,
                Ipv4Addr::new(10, 66, 6, 6),
            )),
        ),
        ("deletion", requests::deletion()),
    ] {
        let mut answers = Vec::new();
        for target in [seid, unknown] {
            h.seq += 1;
            let bytes = PfcpMessage::new(h.seq, Some(target), m.clone()).emit();
            let mut got = h.octets_from(at(SMF_B), &bytes);
            assert_eq!(got.len(), 1, "{what}");
            answers.push(without_seq(got.remove(0)));
        }
        assert_eq!(answers[0], answers[1], "{what}: the answers differ");
        let r = h.send_from(at(SMF_B), Some(seid), m.clone());
        assert_eq!(r.header.seid, Some(0), "{what}");
        let cause = match r.message {
            Message::SessionModificationResponse(s) | Message::SessionDeletionResponse(s) => {
                s.cause
            }
            other => panic!("{what}: {other:?}"),
        };
        assert_eq!(cause, Cause::SESSION_CONTEXT_NOT_FOUND, "{what}");
    }
    assert_eq!((h.dp.uplink(teid), h.dp.downlink(UE)), before);
    assert_eq!(h.node.session_count(), 1);
    assert_eq!(h.node.stats().session_requests_foreign, 4);
    // Its owner still can.
    let m = h.modify(seid, requests::forward_downlink(0x1234, GNB));
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);
    let (_, d) = h.delete(seid);
    assert_eq!(d.cause, Cause::REQUEST_ACCEPTED);
}

/// TS 29.244 §6.2.6.1: any session message from an address of no association gets cause 72
/// and changes nothing, whatever SEID or Node ID it quotes.
#[test]
fn session_requests_from_no_association_get_72() {
    let (mut h, seid, teid) = two_smfs();
    let before = (h.dp.uplink(teid), h.dp.downlink(UE));
    for (seid_hdr, m) in [
        (
            Some(seid),
            Message::SessionModificationRequest(requests::forward_downlink(1, STRANGER)),
        ),
        (Some(seid), requests::deletion()),
        (Some(0xdead), requests::deletion()),
    ] {
        let r = h.send_from(at(STRANGER), seid_hdr, m);
        assert_eq!(r.header.seid, Some(0));
        let cause = match r.message {
            Message::SessionModificationResponse(s) | Message::SessionDeletionResponse(s) => {
                s.cause
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(cause, Cause::NO_ESTABLISHED_ASSOCIATION);
    }
    // An establishment quoting A's Node ID from a stranger's address.
    let mut spec = h.spec();
    spec.ue_ip = Ipv4Addr::new(10, 45, 9, 9);
    let (_, e) = h.establishment_from(at(STRANGER), &spec);
    assert_eq!(e.cause, Cause::NO_ESTABLISHED_ASSOCIATION);
    assert_eq!((h.dp.uplink(teid), h.dp.downlink(UE)), before);
    assert_eq!(h.node.session_count(), 1);
    assert_eq!(h.node.stats().session_requests_unassociated, 4);
}

/// An associated SMF may not open sessions on another's association by quoting its Node ID.
#[test]
fn establishment_quoting_another_node_id_gets_72() {
    let (mut h, _, _) = two_smfs();
    let mut spec = h.spec();
    spec.ue_ip = Ipv4Addr::new(10, 45, 8, 8);
    let (seid, e) = h.establishment_from(at(SMF_B), &spec);
    assert_eq!(e.cause, Cause::NO_ESTABLISHED_ASSOCIATION);
    assert_eq!(seid, Some(0));
    assert_eq!(h.node.session_count(), 1);
    // Under its own Node ID it may.
    spec.node_id = NodeId::Ipv4(SMF_B);
    spec.cp_ip = SMF_B;
    let (_, e) = h.establishment_from(at(SMF_B), &spec);
    assert_eq!(e.cause, Cause::REQUEST_ACCEPTED);
}

/// The addresses of a session's CP F-SEID belong to its association while the session
/// lives: the SMF may speak from there, and once the last session naming one is gone that
/// address is a stranger again.
#[test]
fn cp_f_seid_addresses_join_the_association_while_their_session_lives() {
    let mut h = Harness::new();
    h.associate();
    let other = Ipv4Addr::new(127, 0, 0, 40);
    let mut spec = h.spec();
    spec.cp_ip = other;
    let (seid, _) = h.establish(&spec);
    let r = h.send_from(
        at(other),
        Some(seid),
        Message::SessionModificationRequest(requests::forward_downlink(5, GNB)),
    );
    let Message::SessionModificationResponse(m) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);
    let r = h.send_from(at(other), Some(seid), requests::deletion());
    let Message::SessionDeletionResponse(d) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(d.cause, Cause::REQUEST_ACCEPTED);
    let r = h.send_from(at(other), Some(seid), requests::deletion());
    let Message::SessionDeletionResponse(d) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(d.cause, Cause::NO_ESTABLISHED_ASSOCIATION);
}

/// Association Release and Setup naming A's Node ID from B's address leave A's association
/// and sessions alone (a release would otherwise delete them, a setup with another recovery
/// time stamp drop them).
#[test]
fn association_requests_from_another_peer_change_nothing() {
    let (mut h, seid, teid) = two_smfs();
    let r = h.send_from(
        at(SMF_B),
        None,
        requests::association_release(Harness::smf_node()),
    );
    let Message::AssociationReleaseResponse(a) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(a.cause, Some(Cause::NO_ESTABLISHED_ASSOCIATION));
    let r = h.send_from(
        at(SMF_B),
        None,
        requests::association_setup(Harness::smf_node(), 12345),
    );
    let Message::AssociationSetupResponse(a) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(a.cause, Some(Cause::REQUEST_REJECTED));
    assert_eq!(h.node.session_count(), 1);
    assert_eq!(h.node.association_count(), 2);
    assert!(h.dp.uplink(teid).is_some());
    assert_eq!(h.node.stats().association_requests_foreign, 2);
    // A itself still may release.
    let m = h.modify(seid, requests::set_gate(GateStatus::default()));
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);
    let r = h.send(None, requests::association_release(Harness::smf_node()));
    assert!(
        matches!(r.message, Message::AssociationReleaseResponse(ref a) if a.cause == Some(Cause::REQUEST_ACCEPTED))
    );
    assert_eq!(h.node.session_count(), 0);
}

/// `max_sessions` bounds the sessions on any datapath: cause 75 beyond it, counted, and a
/// deletion makes room again.
#[test]
fn the_session_limit_answers_75() {
    let mut h = Harness::new();
    h.node.cfg.max_sessions = 2;
    h.associate();
    let mut seids = Vec::new();
    for i in 0..3u8 {
        let mut spec = h.spec();
        spec.ue_ip = Ipv4Addr::new(10, 45, 3, i);
        spec.cp_seid = u64::from(i) + 1;
        let (seid, e) = h.establishment(&spec);
        if i < 2 {
            assert_eq!(e.cause, Cause::REQUEST_ACCEPTED);
            seids.push(e.up_f_seid.unwrap().seid);
        } else {
            assert_eq!(e.cause, Cause::NO_RESOURCES_AVAILABLE);
            assert_eq!(seid, Some(0));
        }
    }
    assert_eq!(h.node.session_count(), 2);
    assert_eq!(h.entries().uplink, 2);
    assert_eq!(h.node.stats().sessions_refused_limit, 1);
    h.delete(seids[0]);
    let mut spec = h.spec();
    spec.ue_ip = Ipv4Addr::new(10, 45, 3, 9);
    h.establish(&spec);
    assert_eq!(super::DEFAULT_MAX_SESSIONS, 65_536);
}

/// TS 29.244 Table 7.5.2.2-1: a Create PDR without FAR ID (and no predefined rules or MAR)
/// is refused with 67 naming FAR ID, not installed as a drop rule.
#[test]
fn a_create_pdr_without_far_id_is_refused() {
    let mut h = Harness::new();
    h.associate();
    let spec = h.spec();
    let mut req = requests::establishment(&spec);
    req.create_pdr[1].far_id = None;
    let r = h.send(Some(0), Message::SessionEstablishmentRequest(req));
    let Message::SessionEstablishmentResponse(e) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(e.cause, Cause::CONDITIONAL_IE_MISSING);
    assert_eq!(e.offending_ie, Some(ty::FAR_ID));
    assert_eq!(h.entries(), Entries::default());
    assert_eq!(h.node.session_count(), 0);
}

/// An Outer Header Creation towards an address no gNB can have is refused with 69 naming
/// it, and the downlink keeps its rule. Loopback gNBs are refused by a UPF on a routable N3
/// address; one whose N3 address is loopback itself (a rig on one host) takes them.
#[test]
fn outer_header_creation_towards_no_peer_is_refused() {
    let mut rig = Harness::new();
    rig.associate();
    let spec = rig.spec();
    let (seid, _) = rig.establish(&spec);
    let m = rig.modify(seid, requests::forward_downlink(7, Ipv4Addr::LOCALHOST));
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);

    let mut h = Harness::with_n3(Ipv4Addr::new(10, 1, 0, 7));
    h.associate();
    let spec = h.spec();
    let (seid, _) = h.establish(&spec);
    for bad in [
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::BROADCAST,
        Ipv4Addr::LOCALHOST,
        Ipv4Addr::new(127, 1, 2, 3),
        Ipv4Addr::new(224, 0, 0, 1),
        Ipv4Addr::new(239, 1, 1, 1),
    ] {
        let m = h.modify(seid, requests::forward_downlink(7, bad));
        assert_eq!(m.cause, Cause::MANDATORY_IE_INCORRECT, "{bad}");
        assert_eq!(m.offending_ie, Some(ty::OUTER_HEADER_CREATION), "{bad}");
        assert_eq!(h.dp.downlink(UE).unwrap().action, DownlinkAction::Buffer);
        // In a Create FAR too.
        let mut m = SessionModificationRequest::default();
        let mut far = requests::forward_downlink(7, bad).update_far.remove(0);
        far.far_id = 40;
        m.create_far.push(far);
        let r = h.modify(seid, m);
        assert_eq!(r.cause, Cause::MANDATORY_IE_INCORRECT, "{bad}");
        assert_eq!(r.offending_ie, Some(ty::OUTER_HEADER_CREATION), "{bad}");
    }
    let m = h.modify(seid, requests::forward_downlink(7, GNB));
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);
}

/// Tables 7.5.2.3-1 and 7.5.2.4-1 hold for a rule after its update: a FAR turned to FORW
/// with no forwarding parameters ever given, and a URR given PERIO with no Measurement
/// Period, are refused with 67 and leave the session as it was.
#[test]
fn updated_rules_still_follow_the_create_tables() {
    let mut h = Harness::new();
    h.associate();
    let mut spec = h.spec();
    spec.volume_threshold = Some(1000);
    let (seid, teid) = h.establish(&spec);
    let mut m = requests::forward_downlink(7, GNB);
    m.update_far[0].forwarding_parameters = None;
    let r = h.modify(seid, m);
    assert_eq!(r.cause, Cause::CONDITIONAL_IE_MISSING);
    assert_eq!(r.offending_ie, Some(ty::UPDATE_FORWARDING_PARAMETERS));
    assert_eq!(h.dp.downlink(UE).unwrap().action, DownlinkAction::Buffer);
    let m = SessionModificationRequest {
        update_urr: vec![pfcp::ie::Urr {
            urr_id: requests::URR,
            reporting_triggers: Some(Triggers(Triggers::PERIO)),
            ..Default::default()
        }],
        ..SessionModificationRequest::default()
    };
    let r = h.modify(seid, m);
    assert_eq!(r.cause, Cause::CONDITIONAL_IE_MISSING);
    assert_eq!(r.offending_ie, Some(64));
    // Nothing reported on a period that was refused.
    assert!(h.advance(Duration::from_secs(5)).is_empty());
    assert!(h.dp.uplink(teid).is_some());
}
