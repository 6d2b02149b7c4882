//! A PFCP peer playing the SMF: our codec over a real UDP socket on loopback, against a
//! [`UpfService`] on an ephemeral port. Requests the UPF sends meanwhile (heartbeats, session
//! reports) are answered and kept for the test to inspect.
#![allow(dead_code, clippy::unwrap_used, unreachable_pub)]

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use pfcp::ie::NodeId;
use pfcp::message::{Heartbeat, SessionResponse};
use pfcp::{Cause, Message, PfcpMessage};
use upf::{MemoryDatapath, ServiceOptions, UpfService};

/// How long any one wait may take before the test fails (bounds every loop).
pub const WAIT: Duration = Duration::from_secs(10);

pub struct Peer {
    pub sock: UdpSocket,
    pub upf: SocketAddr,
    pub seq: u32,
    /// Requests the UPF sent us, in order.
    pub from_upf: Vec<PfcpMessage>,
    /// Every datagram the peer sent and received, in order (for the tshark oracle).
    pub wire: Vec<(bool, Vec<u8>)>,
}

pub fn smf_node() -> NodeId {
    NodeId::Ipv4(Ipv4Addr::LOCALHOST)
}

/// A UPF with fast timers (heartbeat every 200 ms, usage read every 20 ms) and a peer.
pub fn start() -> (UpfService, MemoryDatapath, Peer) {
    let mut opts = ServiceOptions::new(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        Ipv4Addr::new(127, 0, 0, 7),
    );
    opts.node.heartbeat_interval = Some(Duration::from_millis(200));
    opts.node.usage_poll = Duration::from_millis(20);
    opts.node.worker = 5;
    let dp = MemoryDatapath::new();
    let svc = UpfService::start(opts, Box::new(dp.clone())).unwrap();
    let peer = peer(svc.local_addr());
    (svc, dp, peer)
}

/// A peer on a loopback socket of its own, talking to the UPF at `upf`.
pub fn peer(upf: SocketAddr) -> Peer {
    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    Peer {
        sock,
        upf,
        seq: 0,
        from_upf: Vec::new(),
        wire: Vec::new(),
    }
}

impl Peer {
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.sock.send_to(bytes, self.upf).unwrap();
        self.wire.push((true, bytes.to_vec()));
    }

    /// One datagram from the UPF, if one comes within the socket timeout.
    fn recv(&mut self) -> Option<PfcpMessage> {
        let mut buf = [0u8; 65_536];
        let (n, from) = self.sock.recv_from(&mut buf).ok()?;
        assert_eq!(from, self.upf);
        self.wire.push((false, buf[..n].to_vec()));
        Some(PfcpMessage::parse(&buf[..n]).unwrap())
    }

    /// Answers a request of the UPF's and records it.
    fn serve(&mut self, m: PfcpMessage) {
        let seq = m.header.sequence;
        let rsp = match &m.message {
            Message::HeartbeatRequest(_) => Some(PfcpMessage::new(
                seq,
                None,
                Message::HeartbeatResponse(Heartbeat {
                    recovery_time_stamp: 7,
                    unknown: Vec::new(),
                }),
            )),
            Message::SessionReportRequest(_) => Some(PfcpMessage::new(
                seq,
                m.header.seid,
                Message::SessionReportResponse(SessionResponse::new(Cause::REQUEST_ACCEPTED)),
            )),
            _ => None,
        };
        self.from_upf.push(m);
        if let Some(r) = rsp {
            self.send_raw(&r.emit());
        }
    }

    /// Waits for the response to sequence number `seq`, serving the UPF's requests meanwhile.
    pub fn response(&mut self, seq: u32) -> PfcpMessage {
        let end = Instant::now() + WAIT;
        while Instant::now() < end {
            let Some(m) = self.recv() else { continue };
            if matches!(
                m.message,
                Message::HeartbeatRequest(_) | Message::SessionReportRequest(_)
            ) {
                self.serve(m);
                continue;
            }
            if m.header.sequence == seq {
                return m;
            }
            panic!("unexpected message from the UPF: {m:?}");
        }
        panic!("no response to {seq} within {WAIT:?}");
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, seid: Option<u64>, m: Message) -> PfcpMessage {
        self.seq += 1;
        let seq = self.seq;
        self.send_raw(&PfcpMessage::new(seq, seid, m).emit());
        self.response(seq)
    }

    /// Serves the UPF until `pred` holds for a request it sent, or fails after [`WAIT`].
    pub fn until(&mut self, what: &str, pred: impl Fn(&PfcpMessage) -> bool) -> PfcpMessage {
        let end = Instant::now() + WAIT;
        while Instant::now() < end {
            let Some(m) = self.recv() else { continue };
            let hit = pred(&m);
            self.serve(m.clone());
            if hit {
                return m;
            }
        }
        panic!("no {what} from the UPF within {WAIT:?}");
    }

    /// Stops listening for a moment, answering what the UPF sends.
    pub fn quiet(&mut self, rounds: u32) {
        for _ in 0..rounds {
            if let Some(m) = self.recv() {
                self.serve(m);
            }
        }
    }
}

/// The whole session life cycle (association, establishment, modification, usage report,
/// deletion, release), checking every answer and that no rule is left; returns the UPF's
/// report.
/// Used by the plain test and by the tshark test (which captures it).
pub fn life_cycle(svc: UpfService, dp: MemoryDatapath, mut p: Peer) -> upf::ServiceReport {
    use pfcp::ie::{ty, FTeid, Triggers};
    use pfcp::requests::{self, SessionSpec};
    use upf::{Datapath, DownlinkAction, Entries, Usage};

    let ue = Ipv4Addr::new(10, 45, 0, 9);
    let gnb = Ipv4Addr::new(127, 0, 0, 1);
    let cp_seid = 0x0004_0000_0000_0042;

    // Heartbeat from us, answered before any association.
    let r = p.request(None, requests::heartbeat(7));
    assert!(matches!(r.message, Message::HeartbeatResponse(_)), "{r:?}");

    // A session before the association: cause 72.
    let spec = SessionSpec {
        volume_threshold: Some(5000),
        ..SessionSpec::new(smf_node(), cp_seid, Ipv4Addr::LOCALHOST, ue)
    };
    let est = Message::SessionEstablishmentRequest(requests::establishment(&spec));
    let r = p.request(Some(0), est.clone());
    let Message::SessionEstablishmentResponse(e) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(e.cause, Cause::NO_ESTABLISHED_ASSOCIATION);

    let r = p.request(None, requests::association_setup(smf_node(), 7));
    let Message::AssociationSetupResponse(a) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(a.cause, Some(Cause::REQUEST_ACCEPTED));

    // Establishment, sent twice with the same sequence number: one session, same answer.
    p.seq += 1;
    let est_seq = p.seq;
    let bytes = PfcpMessage::new(est_seq, Some(0), est).emit();
    p.send_raw(&bytes);
    let first = p.response(est_seq);
    p.send_raw(&bytes);
    let again = p.response(est_seq);
    assert_eq!(first, again);
    assert_eq!(first.header.seid, Some(cp_seid));
    let Message::SessionEstablishmentResponse(e) = first.message else {
        panic!("{first:?}")
    };
    assert_eq!(e.cause, Cause::REQUEST_ACCEPTED, "{e:?}");
    let up_seid = e.up_f_seid.unwrap().seid;
    assert_eq!(ids::upf::owner_of_seid(up_seid), 5, "worker 5 in the SEID");
    let Some(FTeid::Assigned { teid, ipv4, .. }) = e.created_pdr[0].f_teid else {
        panic!("{e:?}")
    };
    assert_eq!(ipv4, Some(Ipv4Addr::new(127, 0, 0, 7)));
    assert_eq!(ids::upf::owner_of_teid(teid), 5, "worker 5 in the TEID");
    let ul = dp.uplink(teid).unwrap();
    assert_eq!(dp.downlink(ue).unwrap().action, DownlinkAction::Buffer);

    // BUFF → FORW with the gNB's F-TEID.
    let r = p.request(
        Some(up_seid),
        Message::SessionModificationRequest(requests::forward_downlink(0xabcd, gnb)),
    );
    assert_eq!(r.header.seid, Some(cp_seid));
    let Message::SessionModificationResponse(m) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);
    assert_eq!(
        dp.downlink(ue).unwrap().action,
        DownlinkAction::Forward {
            teid: 0xabcd,
            peer: gnb,
            qfi: None
        }
    );

    // Traffic crosses the volume threshold: a Session Report Request with VOLTH.
    let id = ul.usage.unwrap();
    assert!(dp.count(
        id,
        Usage {
            ul_packets: 4,
            ul_bytes: 4000,
            dl_packets: 2,
            dl_bytes: 1500,
            dropped: 0
        }
    ));
    let rep = p.until("session report", |m| {
        matches!(m.message, Message::SessionReportRequest(_))
    });
    assert_eq!(rep.header.seid, Some(cp_seid));
    let Message::SessionReportRequest(rep) = rep.message else {
        unreachable!()
    };
    assert_eq!(rep.usage_reports[0].trigger, Triggers(Triggers::VOLTH));
    assert_eq!(rep.usage_reports[0].volume.unwrap().total, Some(5500));

    // The UPF heartbeats us too.
    p.until("heartbeat", |m| {
        matches!(m.message, Message::HeartbeatRequest(_))
    });

    // Unknown SEID: 65 with SEID 0.
    let r = p.request(Some(up_seid ^ 0xffff), requests::deletion());
    assert_eq!(r.header.seid, Some(0));
    let Message::SessionDeletionResponse(d) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(d.cause, Cause::SESSION_CONTEXT_NOT_FOUND);

    // Missing mandatory IE: a Create FAR without Apply Action → 66 naming Apply Action.
    let mut bad = requests::forward_downlink(1, gnb);
    bad.update_far.clear();
    let mut body = Vec::new();
    pfcp::ie::put_ie(&mut body, ty::CREATE_FAR, |o| {
        pfcp::ie::put_ie(o, ty::FAR_ID, |v| v.extend_from_slice(&9u32.to_be_bytes()));
    });
    p.seq += 1;
    let mut raw = PfcpMessage::new(
        p.seq,
        Some(up_seid),
        Message::SessionModificationRequest(bad),
    )
    .emit();
    raw.extend_from_slice(&body);
    let len = u16::try_from(raw.len() - 4).unwrap().to_be_bytes();
    raw[2..4].copy_from_slice(&len);
    p.send_raw(&raw);
    let r = p.response(p.seq);
    assert_eq!(r.header.seid, Some(cp_seid));
    let Message::SessionModificationResponse(m) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(m.cause, Cause::MANDATORY_IE_MISSING);
    assert_eq!(m.offending_ie, Some(ty::APPLY_ACTION));

    // A FAR that does not exist: rule failure (73) with Failed Rule ID (FAR 55).
    let mut unknown_far = requests::forward_downlink(1, gnb);
    unknown_far.update_far[0].far_id = 55;
    let r = p.request(
        Some(up_seid),
        Message::SessionModificationRequest(unknown_far),
    );
    let Message::SessionModificationResponse(m) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(m.cause, Cause::RULE_CREATION_FAILURE);
    assert_eq!(m.unknown[0].ie_type, 114);
    assert_eq!(m.unknown[0].value, vec![1, 0, 0, 0, 55]);

    // Deletion: the final usage report, and nothing left in the datapath.
    assert!(dp.count(
        id,
        Usage {
            dl_packets: 1,
            dl_bytes: 700,
            ..Usage::default()
        }
    ));
    let r = p.request(Some(up_seid), requests::deletion());
    let Message::SessionDeletionResponse(d) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(d.cause, Cause::REQUEST_ACCEPTED);
    assert_eq!(d.usage_reports.len(), 1);
    assert_eq!(d.usage_reports[0].trigger, Triggers(Triggers::TERMR));
    assert_eq!(d.usage_reports[0].volume.unwrap().downlink, Some(700));
    assert_eq!(dp.entries().unwrap(), Entries::default());

    let r = p.request(None, requests::association_release(smf_node()));
    let Message::AssociationReleaseResponse(a) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(a.cause, Some(Cause::REQUEST_ACCEPTED));

    let report = svc.stop().unwrap();
    assert_eq!(report.sessions_at_stop, 0);
    assert_eq!(report.entries_after, Some(Entries::default()));
    assert_eq!(report.stats.retransmissions_answered, 1);
    assert_eq!(report.stats.sessions_established, 1);
    assert_eq!(report.stats.sessions_deleted, 1);
    assert!(report.stats.session_reports >= 1);
    assert_eq!(report.stats.causes_sent.get(&65), Some(&1));
    assert_eq!(report.stats.causes_sent.get(&66), Some(&1));
    assert_eq!(report.stats.causes_sent.get(&72), Some(&1));
    assert_eq!(report.stats.causes_sent.get(&73), Some(&1));
    report
}
