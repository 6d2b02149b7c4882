//! UE traffic end to end through a real UPF, once per user-plane path (XDP, TUN, AF_XDP), in lab
//! namespaces: a core (AMF, AUSF, UDM, SMF on 2 workers, in-process SBI) whose SMF talks
//! PFCP over loopback to a `UpfService` whose datapath sits on the test bed's upf
//! namespace; gNB and UE emulators register 8 UEs and establish one session each; then the
//! traffic engine sends UDP probes on half the sessions (echoed by a UDP echo host in dn)
//! and ICMP echo requests on the other half (answered by the dn kernel) from the gNB's N3
//! socket in the ran namespace; then every session is released and every UE deregisters.
//!
//! Asserted: nothing lost, every reply matched, latency recorded, the paths' own counters
//! saw exactly that traffic (the TUN test: the TUN path alone, no XDP program attached; the
//! XDP test: XDP with the TUN path behind it, every packet forwarded by XDP; the AF_XDP
//! test: its own redirect programs attached and its packet thread forwarding everything),
//! and the datapath holds no entry after the releases.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use common::{drive, Outcome, Plan, RanSide, UpfCheck};
use ran::userplane::traffic::{self, TrafficKind, TrafficPlan, TrafficReport};
use ran::userplane::UpSession;
use steer5g_config::{Config, Transport as TransportKind};
use steer5g_core::{Core, CoreOptions, DnnPool, SbiMode, SmfOptions, StateMode};
use upf::userspace::shared::SharedDatapath;
use upf::userspace::testbed::{Host, Testbed, N3_RAN, N3_UPF, N6_DN, UE_POOL, UE_POOL_LEN};
use upf::userspace::tiered::Tiered;
use upf::userspace::{TunCounters, TunDatapath, TunReason};
use upf::{Datapath, Entries, ServiceOptions, UpfService};
use upf_afxdp::{AfXdpDatapath, AfXdpOptions};
use upf_xdp::{Counters, Reason, XdpDatapath, XdpOptions};

const UES: usize = 8;
/// Probes per UE.
const PER_UE: u64 = 200;
const ECHO_PORT: u16 = 7;

/// Runs the traffic once all sessions forward downlink to the gNB.
struct Traffic<D> {
    dp: SharedDatapath<D>,
    gnb: UdpSocket,
    reports: Vec<TrafficReport>,
}

impl<D: Datapath> UpfCheck for Traffic<D> {
    fn established(&mut self, sessions: &[UpSession], out: &mut Outcome) -> bool {
        let ready = sessions
            .iter()
            .all(|s| self.dp.downlink_forward(s.ue_ip) == Some((s.gnb_teid, N3_RAN)));
        if !ready {
            return false;
        }
        let (udp, icmp) = sessions.split_at(sessions.len() / 2);
        // 200 probes per UE at 400 packets/s per half: 2 s each.
        let plan = |n: usize, size: usize| TrafficPlan {
            kind: TrafficKind::Udp {
                dst_port: ECHO_PORT,
            },
            max_duration: Duration::from_secs(5),
            ..TrafficPlan::udp(N6_DN, size, 400, PER_UE * n as u64)
        };
        for (half, plan) in [
            (udp, plan(udp.len(), 256)),
            (icmp, plan(icmp.len(), 1400).icmp()),
        ] {
            match traffic::run(&plan, half, &self.gnb) {
                Ok(r) => {
                    if r.received == r.sent {
                        out.upf_checked += half.len();
                    } else {
                        out.failures.push(format!("{}: {:?}", r.kind, r.lines()));
                    }
                    self.reports.push(r);
                }
                Err(e) => out.failures.push(format!("traffic: {e}")),
            }
        }
        true
    }

    fn rules_left(&self, _ips: &[Ipv4Addr]) -> usize {
        self.dp
            .entries()
            .map_or(usize::MAX, |e| e.uplink + e.downlink)
    }
}

/// What a run left to check.
struct Run<D> {
    outcome: Outcome,
    reports: Vec<TrafficReport>,
    dp: SharedDatapath<D>,
    entries_after: Option<Entries>,
    sessions_at_stop: usize,
}

fn run<D: Datapath + Send + 'static>(bed: &Testbed, net: u8, dp: D) -> Run<D> {
    let dp = SharedDatapath::new(dp);
    let ip = |host: u8| Ipv4Addr::new(127, 0, net, host);
    let upf = UpfService::start(
        ServiceOptions::new(SocketAddr::from((ip(7), 0)), N3_UPF),
        Box::new(dp.clone()),
    )
    .unwrap();
    let echo = bed.dn_echo(ECHO_PORT, Duration::from_secs(60)).unwrap();
    let gnb = bed
        .udp(
            Host::Ran,
            SocketAddrV4::new(N3_RAN, ran::userplane::GTPU_PORT),
        )
        .unwrap();

    let subs = common::subscribers(u64::from(net), UES);
    let mut config = Config::default();
    config.n2.addr = ip(1);
    config.n2.transports = vec![TransportKind::Udp];
    let mut opts = CoreOptions::new(subs.dir.path().to_owned());
    opts.workers = 2;
    opts.state = StateMode::Sharded;
    opts.sbi = SbiMode::Inproc;
    opts.config = config.clone();
    opts.rand_seed = Some(7);
    opts.upf = None;
    opts.smf = Some(SmfOptions {
        upf: upf.local_addr(),
        pfcp_ip: ip(4),
        dnns: vec![DnnPool {
            dnn: "internet".to_owned(),
            net: UE_POOL,
            prefix_len: UE_POOL_LEN,
        }],
        ..SmfOptions::default()
    });
    let core = Core::start(opts).unwrap();
    let side = RanSide {
        local: ip(100),
        amf: common::n2_addr(&core, TransportKind::Udp),
        sctp_port: config.n2.sctp_port,
        gnb_n3: Some(N3_RAN),
        upf_n3: N3_UPF,
    };
    let mut check = Traffic {
        dp: dp.clone(),
        gnb,
        reports: Vec::new(),
    };
    let outcome = common::runtime().block_on(drive(side, subs.ues, Plan::Release, &mut check));
    core.stop().unwrap();
    let echoed = echo.stop();
    let report = upf.stop().unwrap();
    let udp_sent: u64 = check
        .reports
        .iter()
        .filter(|r| r.kind == "udp")
        .map(|r| r.sent)
        .sum();
    for r in &check.reports {
        eprintln!("{}", r.lines().join("\n"));
    }
    assert_eq!(echoed.echoed, udp_sent, "the DN echoed every UDP probe");
    Run {
        outcome,
        reports: check.reports,
        dp,
        entries_after: report.entries_after,
        sessions_at_stop: report.sessions_at_stop,
    }
}

/// The common checks; returns (probes sent, replies received).
fn expect_clean<D>(r: &Run<D>) -> (u64, u64) {
    let want = Outcome::all_through(UES);
    assert_eq!(r.outcome, want);
    assert_eq!(r.reports.len(), 2);
    let kinds: Vec<_> = r.reports.iter().map(|t| t.kind).collect();
    assert_eq!(kinds, ["udp", "icmp"]);
    for t in &r.reports {
        assert_eq!(t.sent, PER_UE * (UES / 2) as u64, "{}", t.kind);
        assert_eq!(
            (t.received, t.lost, t.loss_ratio),
            (t.sent, 0, 0.0),
            "{}",
            t.kind
        );
        assert_eq!((t.duplicates, t.bad), (0, 0), "{}", t.kind);
        let l = t.latency.unwrap();
        assert!(l.min_us >= 1 && l.min_us <= l.p50_us && l.p99_us <= l.max_us);
        assert!(!t.cdf.is_empty());
    }
    assert_eq!(r.entries_after, Some(Entries::default()));
    assert_eq!(r.sessions_at_stop, 0);
    let sent = r.reports.iter().map(|t| t.sent).sum();
    let received = r.reports.iter().map(|t| t.received).sum();
    (sent, received)
}

/// Whether any interface of `host`'s namespace has an XDP program attached.
fn xdp_attached(bed: &Testbed, host: Host) -> bool {
    let out = bed
        .exec(host, "ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).contains("xdp")
}

/// The XDP fast path with the TUN path behind it, as a UPF serving an SMF runs it: what
/// the programs pass to the kernel (an expiring inner TTL, say) would be carried by the TUN
/// path. The SMF always sets the session AMBR as the QER's MBR (TS 23.501 §5.7.2.6) and the
/// programs police it themselves, so every probe here must take the fast path: counted as
/// forwarded by XDP, none passed, the TUN path idle.
#[test]
fn traffic_takes_the_xdp_fast_path() {
    if !testkit::privilege::require("XDP user plane end to end") {
        return;
    }
    let bed = Testbed::new("upxdp").unwrap();
    bed.attach_peer_pass().unwrap();
    let xdp = XdpDatapath::attach(&XdpOptions {
        netns: Some(bed.ns(Host::Upf).to_owned()),
        n3_iface: bed.n3_upf.clone(),
        n6_iface: bed.n6_upf.clone(),
        n3_addr: N3_UPF,
    })
    .unwrap();
    let before = xdp.counters().unwrap();
    let tun = TunDatapath::start(&bed.tun_options()).unwrap();
    let r = run(&bed, 91, Tiered::new(xdp, tun, "xdp+tun"));
    let (sent, received) = expect_clean(&r);
    let (c, t): (Counters, TunCounters) =
        r.dp.with(|d| (d.fast.counters().unwrap().since(&before), d.slow.counters()));
    eprintln!(
        "xdp {:?}\ntun {:?}",
        c.iter().filter(|x| x.1 > 0).collect::<Vec<_>>(),
        t.iter().filter(|x| x.1 > 0).collect::<Vec<_>>()
    );
    let (tun_ul, tun_dl) = (t.get(TunReason::UlForwarded), t.get(TunReason::DlForwarded));
    // Every packet forwarded once, by one path; nothing dropped.
    assert_eq!(c.get(Reason::UlForwarded) + tun_ul, sent, "{c:?} {t:?}");
    assert_eq!(c.get(Reason::DlForwarded) + tun_dl, received, "{c:?} {t:?}");
    assert_eq!((c.dropped(), t.dropped()), (0, 0), "{c:?} {t:?}");
    // The fast path carried all of it: nothing handed to the kernel, the TUN path idle.
    assert_eq!(c.passed(), 0, "{c:?}");
    assert_eq!((tun_ul, tun_dl), (0, 0), "{t:?}");
    assert_eq!(c.get(Reason::UlForwarded), sent, "{c:?}");
    assert_eq!(c.get(Reason::DlForwarded), received, "{c:?}");
    assert_eq!(r.dp.entries().unwrap(), Entries::default());
}

#[test]
fn traffic_takes_the_tun_path() {
    if !testkit::privilege::require("TUN user plane end to end") {
        return;
    }
    let bed = Testbed::new("uptun").unwrap();
    let dp = TunDatapath::start(&bed.tun_options()).unwrap();
    let r = run(&bed, 92, dp);
    let (sent, received) = expect_clean(&r);
    let c: TunCounters = r.dp.with(TunDatapath::counters);
    assert_eq!(c.get(TunReason::UlForwarded), sent, "{c:?}");
    assert_eq!(c.get(TunReason::DlForwarded), received, "{c:?}");
    assert_eq!(c.dropped(), 0, "{c:?}");
    // No XDP program anywhere on the UPF's interfaces: the TUN path carried it all.
    assert!(!xdp_attached(&bed, Host::Upf));
    assert_eq!(r.dp.entries().unwrap(), Entries::default());
}

/// The AF_XDP copy-mode path alone: its redirect programs on the UPF's interfaces, its
/// packet thread forwarding every probe both ways, counted by the path itself.
#[test]
fn traffic_takes_the_af_xdp_path() {
    if !testkit::privilege::require("AF_XDP user plane end to end") {
        return;
    }
    let bed = Testbed::new("upxsk").unwrap();
    let dp = AfXdpDatapath::start(&AfXdpOptions {
        netns: Some(bed.ns(Host::Upf).to_owned()),
        n3_iface: bed.n3_upf.clone(),
        n6_iface: bed.n6_upf.clone(),
        n3_addr: N3_UPF,
        ue_pool: (UE_POOL, UE_POOL_LEN),
        n6_gateway: None,
        frames: 1024,
    })
    .unwrap();
    let ids = dp.prog_ids();
    let r = run(&bed, 93, dp);
    let (sent, received) = expect_clean(&r);
    let c: TunCounters = r.dp.with(AfXdpDatapath::counters);
    assert_eq!(c.get(TunReason::UlForwarded), sent, "{c:?}");
    assert_eq!(c.get(TunReason::DlForwarded), received, "{c:?}");
    assert_eq!(c.dropped(), 0, "{c:?}");
    // The UPF's interfaces run the AF_XDP redirect programs, not the GTP-U fast path.
    for (iface, id, name) in [
        (&bed.n3_upf, ids[0], "upf_xsk_n3"),
        (&bed.n6_upf, ids[1], "upf_xsk_n6"),
    ] {
        let out = bed
            .exec(Host::Upf, "ip")
            .args(["-d", "link", "show", "dev", iface])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("prog/xdp id {id} name {name} ")),
            "{iface}: {text}"
        );
    }
    assert_eq!(r.dp.entries().unwrap(), Entries::default());
}
