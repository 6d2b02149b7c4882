//! QER gating, MBR policing and URR reporting observed on real traffic: a `UpfService` with
//! the XDP datapath in the upf namespace of a test bed, driven over PFCP by a small SMF in
//! this test (the pfcp crate's codec on a UDP socket), with G-PDUs from a gNB socket in ran
//! and packets from a host in dn. The fast path's per-reason counters say which path every
//! packet took, so nothing here can pass by falling back to the kernel.
//!
//! Octets are counted as the inner IPv4 packet (IP header included; GTP-U, UDP and the outer
//! IP header excluded) by the URR and by the MBR bucket alike; see docs/UPF.md.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pfcp::ie::{GateStatus, NodeId, Triggers, Volume};
use pfcp::message::{SessionModificationRequest, SessionResponse};
use pfcp::requests::{self, SessionSpec};
use pfcp::{Cause, Message, PfcpMessage};
use upf::userspace::craft;
use upf::userspace::testbed::{ue_ip, Host, Testbed, N3_RAN, N3_UPF, N6_DN, UE_POOL, UE_POOL_LEN};
use upf::userspace::{TunDatapath, TunOptions, TunReason};
use upf::{
    Datapath, DatapathError, DownlinkRule, Entries, ServiceOptions, UpfService, UplinkRule, Usage,
    UsageId,
};
use upf_xdp::{Counters, Reason, XdpDatapath};

const DN_PORT: u16 = 9000;
const UE_PORT: u16 = 41000;
const GNB_TEID: u32 = 0x00b0_0001;
const SMF_IP: Ipv4Addr = Ipv4Addr::LOCALHOST;
const CP_SEID: u64 = 0x5eed;
/// Inner IPv4 packets of this many octets (20 IP + 8 UDP + payload).
const PKT: usize = 1000;
const PAYLOAD: usize = PKT - 28;

/// The service owns the datapath; the test reads counters and maps through the same one.
struct Shared<T>(Arc<Mutex<T>>);

impl<T> Shared<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<T: Datapath> Datapath for Shared<T> {
    fn name(&self) -> &'static str {
        self.lock().name()
    }
    fn install_uplink(&mut self, rule: &UplinkRule) -> Result<(), DatapathError> {
        self.lock().install_uplink(rule)
    }
    fn install_downlink(&mut self, rule: &DownlinkRule) -> Result<(), DatapathError> {
        self.lock().install_downlink(rule)
    }
    fn remove_uplink(&mut self, teid: u32) -> Result<(), DatapathError> {
        self.lock().remove_uplink(teid)
    }
    fn remove_downlink(&mut self, ue_ip: Ipv4Addr) -> Result<(), DatapathError> {
        self.lock().remove_downlink(ue_ip)
    }
    fn usage(&self, id: UsageId) -> Result<Usage, DatapathError> {
        self.lock().usage(id)
    }
    fn remove_usage(&mut self, id: UsageId) -> Result<(), DatapathError> {
        self.lock().remove_usage(id)
    }
    fn entries(&self) -> Result<Entries, DatapathError> {
        self.lock().entries()
    }
}

struct Lab {
    // Field order is drop order: the service (which removes what is left of its sessions)
    // before the datapath (which detaches the programs) before the namespaces.
    upf: Option<UpfService>,
    path: Path,
    smf: UdpSocket,
    seq: u32,
    /// Session Report Requests that arrived while waiting for something else.
    reports: Vec<PfcpMessage>,
    gnb: UdpSocket,
    dn: UdpSocket,
    ue: Ipv4Addr,
    _bed: Testbed,
}

/// Which datapath the service drives.
enum Path {
    Xdp(Shared<XdpDatapath>),
    Tun(Shared<TunDatapath>),
}

/// What both paths count, in one shape.
#[derive(Debug, Clone, Copy, Default)]
struct Snap {
    ul_forwarded: u64,
    dl_forwarded: u64,
    drop_mbr: u64,
    /// Handed to the kernel (XDP only).
    passed: u64,
}

fn lab(tag: &str) -> Option<Lab> {
    lab_on(tag, false)
}

fn lab_on(tag: &str, tun: bool) -> Option<Lab> {
    if !testkit::privilege::require("UPF QoS on real traffic") {
        return None;
    }
    let bed = Testbed::new(tag).unwrap();
    let (path, dp): (Path, Box<dyn Datapath + Send>) = if tun {
        let dp = TunDatapath::start(&TunOptions {
            netns: Some(bed.ns(Host::Upf).to_owned()),
            n3_addr: N3_UPF,
            tun_name: "upfqos0".to_owned(),
            ue_pool: (UE_POOL, UE_POOL_LEN),
            n3_recv_buffer: upf::userspace::DEFAULT_N3_RECV_BUFFER,
        })
        .unwrap();
        let dp = Arc::new(Mutex::new(dp));
        (Path::Tun(Shared(dp.clone())), Box::new(Shared(dp)))
    } else {
        let dp = common::attach_xdp(&bed);
        let dp = Arc::new(Mutex::new(dp));
        (Path::Xdp(Shared(dp.clone())), Box::new(Shared(dp)))
    };
    let mut opts = ServiceOptions::new(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), N3_UPF);
    // Short poll so threshold reports come quickly; no heartbeats to answer.
    opts.node.usage_poll = Duration::from_millis(200);
    opts.node.heartbeat_interval = None;
    let upf = UpfService::start(opts, dp).unwrap();
    let smf = UdpSocket::bind((SMF_IP, 0)).unwrap();
    smf.connect(upf.local_addr()).unwrap();
    let (gnb, dn) = bed.gnb_and_dn(DN_PORT).unwrap();
    Some(Lab {
        upf: Some(upf),
        path,
        smf,
        seq: 0,
        reports: Vec::new(),
        gnb,
        dn,
        ue: ue_ip(7),
        _bed: bed,
    })
}

fn recv(sock: &UdpSocket, wait: Duration) -> Option<Vec<u8>> {
    sock.set_read_timeout(Some(wait)).unwrap();
    let mut buf = vec![0u8; 65_536];
    match sock.recv_from(&mut buf) {
        Ok((n, _)) => {
            buf.truncate(n);
            Some(buf)
        }
        Err(_) => None,
    }
}

fn is_request(m: &Message) -> bool {
    matches!(
        m,
        Message::HeartbeatRequest(_)
            | Message::AssociationSetupRequest(_)
            | Message::AssociationReleaseRequest(_)
            | Message::SessionEstablishmentRequest(_)
            | Message::SessionModificationRequest(_)
            | Message::SessionDeletionRequest(_)
            | Message::SessionReportRequest(_)
    )
}

impl Lab {
    fn xdp(&self) -> std::sync::MutexGuard<'_, XdpDatapath> {
        match &self.path {
            Path::Xdp(x) => x.lock(),
            Path::Tun(_) => panic!("not the XDP path"),
        }
    }

    fn counters(&self) -> Counters {
        self.xdp().counters().unwrap()
    }

    fn snap(&self) -> Snap {
        match &self.path {
            Path::Xdp(x) => {
                let c = x.lock().counters().unwrap();
                Snap {
                    ul_forwarded: c.get(Reason::UlForwarded),
                    dl_forwarded: c.get(Reason::DlForwarded),
                    drop_mbr: c.get(Reason::DropMbr),
                    passed: c.passed(),
                }
            }
            Path::Tun(t) => {
                let c = t.lock().counters();
                Snap {
                    ul_forwarded: c.get(TunReason::UlForwarded),
                    dl_forwarded: c.get(TunReason::DlForwarded),
                    drop_mbr: c.get(TunReason::DropMbr),
                    passed: 0,
                }
            }
        }
    }

    /// Sends a request and returns its response; reports arriving meanwhile are kept.
    fn request(&mut self, seid: Option<u64>, m: Message) -> PfcpMessage {
        self.seq += 1;
        self.smf
            .send(&PfcpMessage::new(self.seq, seid, m).emit())
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let Some(b) = recv(&self.smf, Duration::from_millis(500)) else {
                continue;
            };
            let r = PfcpMessage::parse(&b).unwrap();
            if is_request(&r.message) {
                self.reports.push(r);
            } else if r.header.sequence == self.seq {
                return r;
            }
        }
        panic!("no response to request {}", self.seq);
    }

    fn associate(&mut self) {
        let r = self.request(
            None,
            requests::association_setup(NodeId::Ipv4(SMF_IP), upf::service::ntp_now()),
        );
        let Message::AssociationSetupResponse(a) = r.message else {
            panic!("{r:?}")
        };
        assert_eq!(a.cause, Some(Cause::REQUEST_ACCEPTED));
    }

    /// Association, establishment and the modification that points the downlink at the
    /// gNB; returns (UP SEID, uplink TEID).
    fn session(&mut self, spec: &SessionSpec) -> (u64, u32) {
        self.associate();
        let r = self.request(
            Some(0),
            Message::SessionEstablishmentRequest(requests::establishment(spec)),
        );
        let Message::SessionEstablishmentResponse(e) = r.message else {
            panic!("{r:?}")
        };
        assert_eq!(e.cause, Cause::REQUEST_ACCEPTED, "{e:?}");
        let seid = e.up_f_seid.unwrap().seid;
        let Some(pfcp::ie::FTeid::Assigned { teid, ipv4, .. }) = e.created_pdr[0].f_teid else {
            panic!("{e:?}")
        };
        assert_eq!(ipv4, Some(N3_UPF));
        let m = self.modify(seid, requests::forward_downlink(GNB_TEID, N3_RAN));
        assert_eq!(m.cause, Cause::REQUEST_ACCEPTED, "{m:?}");
        (seid, teid)
    }

    /// A session with a URR (its threshold out of reach unless a test sets one), so that
    /// the datapath counts usage and drops.
    fn spec(&self) -> SessionSpec {
        let mut s = SessionSpec::new(NodeId::Ipv4(SMF_IP), CP_SEID, SMF_IP, self.ue);
        s.volume_threshold = Some(1 << 40);
        s
    }

    fn modify(&mut self, seid: u64, m: SessionModificationRequest) -> SessionResponse {
        let r = self.request(Some(seid), Message::SessionModificationRequest(m));
        assert_eq!(r.header.seid, Some(CP_SEID));
        let Message::SessionModificationResponse(s) = r.message else {
            panic!("{r:?}")
        };
        s
    }

    fn delete(&mut self, seid: u64) -> SessionResponse {
        let r = self.request(Some(seid), requests::deletion());
        let Message::SessionDeletionResponse(s) = r.message else {
            panic!("{r:?}")
        };
        assert_eq!(s.cause, Cause::REQUEST_ACCEPTED, "{s:?}");
        s
    }

    /// The next Session Report Request, within `wait`.
    fn report(&mut self, wait: Duration) -> Option<PfcpMessage> {
        if !self.reports.is_empty() {
            return Some(self.reports.remove(0));
        }
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if let Some(b) = recv(&self.smf, Duration::from_millis(100)) {
                let r = PfcpMessage::parse(&b).unwrap();
                if matches!(r.message, Message::SessionReportRequest(_)) {
                    return Some(r);
                }
            }
        }
        None
    }

    /// One uplink G-PDU carrying a `PKT`-octet inner packet.
    fn uplink_gpdu(&self, teid: u32) -> Vec<u8> {
        let inner = craft::ipv4_udp(self.ue, N6_DN, UE_PORT, DN_PORT, &[0x55; PAYLOAD]).unwrap();
        assert_eq!(inner.len(), PKT);
        craft::g_pdu(teid, None, &inner).unwrap()
    }

    fn send_up(&self, g: &[u8]) {
        self.gnb
            .send_to(g, SocketAddrV4::new(N3_UPF, 2152))
            .unwrap();
    }

    fn send_down(&self) {
        self.dn
            .send_to(&[0xaa; PAYLOAD], SocketAddrV4::new(self.ue, UE_PORT))
            .unwrap();
    }

    /// Waits until `pred` holds for the counters (the XDP programs run in softirq, after
    /// `send_to` returned); bounded.
    fn counters_until(&self, pred: impl Fn(&Counters) -> bool) -> Counters {
        let mut c = self.counters();
        for _ in 0..100 {
            if pred(&c) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            c = self.counters();
        }
        c
    }

    fn usage(&self, id: UsageId) -> Usage {
        match &self.path {
            Path::Xdp(x) => x.lock().usage(id).unwrap(),
            Path::Tun(t) => t.lock().usage(id).unwrap(),
        }
    }

    fn usage_id(&self) -> UsageId {
        let keys = self.xdp().keys();
        assert_eq!(keys.usage.len(), 1, "{keys:?}");
        keys.usage[0]
    }
}

#[test]
fn qer_gate_closes_and_reopens_the_uplink_only() {
    let Some(mut l) = lab("qosgate") else { return };
    let spec = l.spec();
    let (seid, teid) = l.session(&spec);
    let g = l.uplink_gpdu(teid);

    // Open: both directions flow.
    l.send_up(&g);
    assert!(recv(&l.dn, Duration::from_secs(3)).is_some(), "uplink lost");
    l.send_down();
    assert!(
        recv(&l.gnb, Duration::from_secs(3)).is_some(),
        "downlink lost"
    );
    let c0 = l.counters();
    assert_eq!(
        (c0.get(Reason::UlForwarded), c0.get(Reason::DlForwarded)),
        (1, 1),
        "{c0:?}"
    );

    // UL gate closed by a Session Modification: uplink dropped and counted, downlink flows.
    let m = l.modify(
        seid,
        requests::set_gate(GateStatus {
            ul: GateStatus::CLOSED,
            dl: GateStatus::OPEN,
        }),
    );
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);
    for _ in 0..5 {
        l.send_up(&g);
    }
    l.send_down();
    assert!(
        recv(&l.gnb, Duration::from_secs(3)).is_some(),
        "downlink stopped"
    );
    let c = l
        .counters_until(|c| c.since(&c0).get(Reason::DropGateClosed) >= 5)
        .since(&c0);
    assert!(
        recv(&l.dn, Duration::from_millis(300)).is_none(),
        "uplink passed a closed gate"
    );
    assert_eq!(c.get(Reason::DropGateClosed), 5, "{c:?}");
    assert_eq!(c.get(Reason::UlForwarded), 0, "{c:?}");
    assert_eq!(c.get(Reason::DlForwarded), 1, "{c:?}");
    assert_eq!(c.passed(), 0, "{c:?}");
    let u = l.usage(l.usage_id());
    assert_eq!(u.dropped, 5);

    // Reopened: the uplink flows again.
    let c1 = l.counters();
    let m = l.modify(seid, requests::set_gate(GateStatus::default()));
    assert_eq!(m.cause, Cause::REQUEST_ACCEPTED);
    l.send_up(&g);
    assert!(
        recv(&l.dn, Duration::from_secs(3)).is_some(),
        "uplink still blocked"
    );
    let c = l.counters().since(&c1);
    assert_eq!(c.get(Reason::UlForwarded), 1, "{c:?}");
    assert_eq!(c.dropped(), 0, "{c:?}");
    l.delete(seid);
    assert!(l.xdp().keys().is_empty());
}

/// Drains `sock` on a thread until `stop`; counts what arrived.
fn drain(
    sock: UdpSocket,
    stop: Arc<AtomicBool>,
    got: Arc<AtomicU64>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut buf = vec![0u8; 65_536];
        // Bounded: the test stops it, and it gives up after a minute in any case.
        let end = Instant::now() + Duration::from_secs(60);
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            if sock.recv_from(&mut buf).is_ok() {
                got.fetch_add(1, Ordering::Relaxed);
            }
        }
    })
}

struct Burst {
    sent: u64,
    forwarded: u64,
    dropped_mbr: u64,
    received: u64,
    span: Duration,
}

/// Offers `n` packets at `interval` in one direction; counts what the fast path did.
fn burst(l: &Lab, uplink: bool, teid: u32, n: u64, interval: Duration) -> Burst {
    let stop = Arc::new(AtomicBool::new(false));
    let got = Arc::new(AtomicU64::new(0));
    let rx = if uplink { &l.dn } else { &l.gnb };
    let t = drain(rx.try_clone().unwrap(), stop.clone(), got.clone());
    let g = l.uplink_gpdu(teid);
    let fwd = |s: &Snap| {
        if uplink {
            s.ul_forwarded
        } else {
            s.dl_forwarded
        }
    };
    let s0 = l.snap();
    let start = Instant::now();
    for i in 0..n {
        let due = start + interval * u32::try_from(i).unwrap();
        if let Some(d) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
        if uplink {
            l.send_up(&g);
        } else {
            l.send_down();
        }
    }
    let mut s = l.snap();
    for _ in 0..100 {
        if fwd(&s) - fwd(&s0) + s.drop_mbr - s0.drop_mbr >= n {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        s = l.snap();
    }
    // Every packet was processed by now: the policer's clock ran within this span.
    let span = start.elapsed();
    let forwarded = fwd(&s) - fwd(&s0);
    // Let the receiver catch the last ones, then stop it.
    for _ in 0..50 {
        if got.load(Ordering::Relaxed) >= forwarded {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
    assert_eq!(s.passed - s0.passed, 0, "{s:?}");
    Burst {
        sent: n,
        forwarded,
        dropped_mbr: s.drop_mbr - s0.drop_mbr,
        received: got.load(Ordering::Relaxed),
        span,
    }
}

#[test]
fn mbr_polices_both_directions_in_the_fast_path() {
    let Some(l) = lab("qosmbr") else { return };
    mbr_polices_both_directions(l);
}

/// The same offered load and the same bound on the sockets/TUN path, which runs the same
/// bucket (`upf::mbr::Policer`) in user space.
#[test]
fn mbr_polices_both_directions_on_the_tun_path_alike() {
    let Some(l) = lab_on("qosmbrtun", true) else {
        return;
    };
    mbr_polices_both_directions(l);
}

fn mbr_polices_both_directions(mut l: Lab) {
    // 800 kbit/s = 100 000 octets/s each way; the bucket holds 100 ms = 10 000 octets.
    let kbps = 800u64;
    let rate = kbps * 1000 / 8;
    let depth = upf::mbr::MbrParams::from_bps(kbps * 1000).unwrap().depth;
    assert_eq!(depth, 10_000);
    let mut spec = l.spec();
    spec.mbr_kbps = Some((kbps, kbps));
    let (seid, teid) = l.session(&spec);
    // About 4× the MBR: a 1000-octet packet every 2.5 ms, for 0.6 s.
    let n = 240;
    let interval = Duration::from_micros(2500);
    for uplink in [true, false] {
        let b = burst(&l, uplink, teid, n, interval);
        let delivered = b.forwarded * PKT as u64;
        let span_ns = u64::try_from(b.span.as_nanos()).unwrap();
        let bound = rate * span_ns / 1_000_000_000 + depth;
        let what = if uplink { "uplink" } else { "downlink" };
        eprintln!(
            "{what}: sent {} forwarded {} dropped {} received {} in {:?}; bound {bound} octets",
            b.sent, b.forwarded, b.dropped_mbr, b.received, b.span
        );
        assert_eq!(b.forwarded + b.dropped_mbr, b.sent, "{what}");
        assert!(b.dropped_mbr > 0, "{what}: nothing policed");
        // The full bucket passes its depth at once, whatever the timing.
        assert!(b.forwarded >= depth / PKT as u64, "{what}: {}", b.forwarded);
        assert!(delivered <= bound, "{what}: {delivered} > {bound} octets");
        assert_eq!(
            b.received, b.forwarded,
            "{what}: forwarded but not received"
        );
    }
    if matches!(l.path, Path::Xdp(_)) {
        let u = l.usage(l.usage_id());
        assert!(u.dropped > 0);
    }
    l.delete(seid);
}

fn total(v: &Volume) -> (u64, u64, u64) {
    (
        v.total.unwrap_or(0),
        v.uplink.unwrap_or(0),
        v.downlink.unwrap_or(0),
    )
}

#[test]
fn urr_volume_threshold_reports_real_traffic_and_deletion_leaves_no_map_entry() {
    let Some(mut l) = lab("qosurr") else { return };
    let threshold = 20_000u64;
    let mut spec = l.spec();
    spec.volume_threshold = Some(threshold);
    let (seid, teid) = l.session(&spec);
    let usage = l.usage_id();
    let g = l.uplink_gpdu(teid);
    // 15 up, 10 down: 25 000 octets of inner packets, each waited for.
    let (n_ul, n_dl) = (15u64, 10u64);
    for _ in 0..n_ul {
        l.send_up(&g);
        assert!(recv(&l.dn, Duration::from_secs(3)).is_some(), "uplink lost");
    }
    for _ in 0..n_dl {
        l.send_down();
        assert!(
            recv(&l.gnb, Duration::from_secs(3)).is_some(),
            "downlink lost"
        );
    }
    let (ul_sent, dl_sent) = (n_ul * PKT as u64, n_dl * PKT as u64);
    let c = l.counters();
    assert_eq!(c.redirected(), n_ul + n_dl, "{c:?}");
    assert_eq!(c.passed() + c.dropped(), 0, "{c:?}");

    let rep = l
        .report(Duration::from_secs(5))
        .expect("no Session Report Request");
    // The datapath's counters now: nothing is in flight any more.
    let now = l.usage(usage);
    assert_eq!((now.ul_bytes, now.dl_bytes), (ul_sent, dl_sent));
    assert_eq!(rep.header.seid, Some(CP_SEID));
    let Message::SessionReportRequest(r) = &rep.message else {
        panic!("{rep:?}")
    };
    assert_eq!(r.report_type, pfcp::message::SessionReportRequest::USAR);
    assert_eq!(r.usage_reports.len(), 1, "{r:?}");
    let u = &r.usage_reports[0];
    assert_eq!(u.urr_id, requests::URR);
    assert_eq!(u.trigger, Triggers(Triggers::VOLTH));
    let (tot, ul, dl) = total(&u.volume.unwrap());
    assert_eq!(tot, ul + dl);
    assert!(tot >= threshold, "{tot} below the threshold");
    // The report read the counters at one poll: at most what they hold now, and one poll
    // period of traffic at most behind (the traffic after the last poll before the report).
    assert!(ul <= now.ul_bytes && dl <= now.dl_bytes, "{u:?} vs {now:?}");
    let rsp = PfcpMessage::new(
        rep.header.sequence,
        Some(seid),
        Message::SessionReportResponse(SessionResponse::new(Cause::REQUEST_ACCEPTED)),
    );
    l.smf.send(&rsp.emit()).unwrap();

    // Deletion reports the rest: the two reports together are exactly what was sent.
    let d = l.delete(seid);
    assert_eq!(d.usage_reports.len(), 1, "{d:?}");
    let last = &d.usage_reports[0];
    assert_eq!(last.trigger, Triggers(Triggers::TERMR));
    assert_eq!(last.ur_seqn, u.ur_seqn + 1);
    let (tot2, ul2, dl2) = total(&last.volume.unwrap());
    assert_eq!((ul + ul2, dl + dl2), (ul_sent, dl_sent));
    assert_eq!(tot + tot2, ul_sent + dl_sent);

    // Nothing of the session stays in any map (iterated, not counted).
    let keys = l.xdp().keys();
    assert!(!keys.uplink.contains(&teid), "{keys:?}");
    assert!(!keys.downlink.contains(&l.ue), "{keys:?}");
    assert!(!keys.usage.contains(&usage), "{keys:?}");
    assert!(keys.is_empty(), "{keys:?}");

    let report = l.upf.take().unwrap().stop().unwrap();
    assert_eq!(
        report.stats.requests_retransmitted, 0,
        "report was answered"
    );
    assert_eq!(report.sessions_at_stop, 0);
}
