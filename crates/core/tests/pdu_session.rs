//! PDU sessions end to end through a real core: gNB and UE emulators (`ran`) over SCTP with
//! UDP encapsulation on loopback register each UE, establish one PDU session per UE (AMF →
//! in-process Nsmf → SMF shard → PFCP to an in-process UPF over UDP → N1N2MessageTransfer →
//! PDU SESSION RESOURCE SETUP → UpdateSMContext → PFCP modification), check the UPF's rules,
//! release every session (UE-requested), and deregister. Sharded and locked, 1 and 2
//! workers, must give the same outcome, and so must Nsmf and N1N2MessageTransfer over h2c
//! (the `h2c_*` cases: AMF and SMF on their own listener groups in one process).
#![allow(clippy::unwrap_used)]

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use common::{drive, Outcome, Plan, RanSide, UpfCheck};
use ran::userplane::UpSession;
use sbi::NfType;
use steer5g_config::Transport as TransportKind;
use steer5g_core::{Core, CoreOptions, CoreReport, SbiMode, SmfOptions, StateMode, UpfOptions};
use upf::datapath::DownlinkAction;
use upf::MemoryDatapath;

const UES: usize = 8;

/// Checks the in-process UPF's rule tables against the tunnels the gNB and UEs learnt.
struct Rules(MemoryDatapath);

impl UpfCheck for Rules {
    fn established(&mut self, sessions: &[UpSession], out: &mut Outcome) -> bool {
        // Wait for the UPF to forward downlink to the gNB (the modification after the
        // gNB's answer), then check each session's uplink rule.
        let all_forward = sessions.iter().all(|s| {
            matches!(
                self.0.downlink(s.ue_ip).map(|r| r.action),
                Some(DownlinkAction::Forward { teid, .. }) if teid == s.gnb_teid
            )
        });
        if !all_forward {
            return false;
        }
        for s in sessions {
            match self.0.uplink(s.upf.teid) {
                Some(ul) if ul.ue_ip == s.ue_ip => out.upf_checked += 1,
                other => out
                    .failures
                    .push(format!("UE {}: uplink rule {other:?}", s.ue_ip)),
            }
        }
        true
    }

    fn rules_left(&self, ips: &[Ipv4Addr]) -> usize {
        common::memory_rules_left(&self.0, ips)
    }
}

fn run_case(net: u8, workers: u16, state: StateMode) -> (Outcome, CoreReport) {
    run_plan(net, workers, state, Plan::Release)
}

fn run_plan(net: u8, workers: u16, state: StateMode, plan: Plan) -> (Outcome, CoreReport) {
    run_sbi(net, workers, state, plan, SbiMode::Inproc)
}

fn run_sbi(
    net: u8,
    workers: u16,
    state: StateMode,
    plan: Plan,
    sbi: SbiMode,
) -> (Outcome, CoreReport) {
    let (o, r, _) = run_with_gnb_n3(net, workers, state, plan, sbi, |_| {}, None);
    (o, r)
}

/// One run with `tweak` applied to the core's options and the gNB's N3 address: what the
/// RAN side saw, the core's report, and the core's `/metrics` page as it stood once the RAN
/// side was done and before the core stopped.
fn run_with_gnb_n3(
    net: u8,
    workers: u16,
    state: StateMode,
    plan: Plan,
    sbi: SbiMode,
    tweak: fn(&mut CoreOptions),
    gnb_n3: Option<Ipv4Addr>,
) -> (Outcome, CoreReport, String) {
    let subs = common::subscribers(u64::from(net), UES);
    let ip = |host: u8| Ipv4Addr::new(127, 0, net, host);
    let mut opts = common::core_options(net, subs.dir.path(), workers, state, sbi);
    opts.smf_sbi = sbi;
    opts.directory
        .set(NfType::Smf, format!("http://{}:7777", ip(4)));
    let sctp_port = opts.config.n2.sctp_port;
    let datapath = MemoryDatapath::new();
    opts.upf = Some(UpfOptions {
        pfcp: SocketAddr::from((ip(7), 0)),
        n3: ip(7),
        datapath: datapath.clone(),
    });
    opts.smf = Some(SmfOptions {
        pfcp_ip: ip(4),
        ..SmfOptions::default()
    });
    tweak(&mut opts);
    let core = Core::start(opts).unwrap();
    let side = RanSide {
        local: ip(100),
        amf: common::n2_addr(&core, TransportKind::Udp),
        sctp_port,
        gnb_n3,
        upf_n3: ip(7),
    };
    let outcome = common::runtime().block_on(drive(side, subs.ues, plan, &mut Rules(datapath)));
    // The workers publish at the end of a loop turn: wait for the last release's.
    let mut page = core.metrics_page();
    for _ in 0..100 {
        if sample(&page, "fivegs_smffunction_sm_sessionnbr") == Some(0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        page = core.metrics_page();
    }
    let report = core.stop().unwrap();
    (outcome, report, page)
}

/// The value of an unlabelled sample of the page.
fn sample(page: &str, name: &str) -> Option<u64> {
    page.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

fn expect_all(o: &Outcome, r: &CoreReport) {
    let want = Outcome::all_through(UES);
    assert_eq!(o, &want);
    let smf = r.workers.iter().fold((0, 0, 0, 0), |t, w| {
        (
            t.0 + w.smf.created,
            t.1 + w.smf.activated,
            t.2 + w.smf.released,
            t.3 + w.amf_sessions.setup_requests,
        )
    });
    assert_eq!(smf, (UES as u64, UES as u64, UES as u64, UES as u64));
    let upf = r.upf.as_ref().unwrap();
    assert_eq!(upf.sessions_at_stop, 0);
    // Every PFCP message got through the first time: nothing dropped by a kernel buffer,
    // refused by a socket or waited out to T1.
    let c = r.counters_total();
    assert_eq!(
        (c.pfcp_rx_dropped, c.pfcp_send_failed, c.pfcp_retransmitted),
        (0, 0, 0)
    );
    assert_eq!(upf.pfcp_dropped, 0);
    assert_eq!(upf.stats.retransmissions_answered, 0);
}

#[test]
fn sharded_one_worker() {
    let (o, r) = run_case(61, 1, StateMode::Sharded);
    expect_all(&o, &r);
}

#[test]
fn sharded_two_workers() {
    let (o, r) = run_case(62, 2, StateMode::Sharded);
    expect_all(&o, &r);
    assert_eq!(r.locks.acquisitions, 0);
}

#[test]
fn locked_two_workers() {
    let (o, r) = run_case(63, 2, StateMode::Locked);
    expect_all(&o, &r);
    assert!(r.locks.acquisitions > 0);
}

#[test]
fn deregistration_releases_the_sessions() {
    for (net, workers, state) in [(64, 1, StateMode::Sharded), (65, 2, StateMode::Locked)] {
        let (o, r) = run_plan(net, workers, state, Plan::Deregister);
        let want = Outcome {
            registered: UES,
            established: UES,
            rejected: 0,
            upf_checked: UES,
            released_sessions: 0,
            deregistered: UES,
            released: UES,
            addresses: UES,
            rules_left: 0,
            failures: Vec::new(),
        };
        assert_eq!(o, want, "{state:?}");
        let (released, with_ue) = r.workers.iter().fold((0, 0), |t, w| {
            (t.0 + w.smf.released, t.1 + w.amf_sessions.released_with_ue)
        });
        assert_eq!((released, with_ue), (UES as u64, UES as u64));
        assert_eq!(r.upf.as_ref().unwrap().sessions_at_stop, 0);
    }
}

#[test]
fn the_smf_measurements_on_metrics_match_what_the_ues_saw() {
    let net = 79;
    let (o, r, page) = run_with_gnb_n3(
        net,
        2,
        StateMode::Sharded,
        Plan::Release,
        SbiMode::Inproc,
        |_| {},
        None,
    );
    expect_all(&o, &r);
    let ues = Some(UES as u64);
    // TS 28.552 names as Open5GS exposes them: every UE's session asked for, created, its
    // PFCP establishment sent once and accepted, and none held after the releases.
    assert_eq!(
        sample(&page, "fivegs_smffunction_sm_pdusessioncreationreq"),
        ues,
        "{page}"
    );
    assert_eq!(
        sample(&page, "fivegs_smffunction_sm_pdusessioncreationsucc"),
        ues
    );
    assert_eq!(
        sample(&page, "fivegs_smffunction_sm_pdusessioncreationfail"),
        Some(0)
    );
    assert_eq!(
        sample(&page, "fivegs_smffunction_sm_n4sessionestabreq"),
        ues
    );
    assert_eq!(
        sample(&page, "fivegs_smffunction_sm_n4sessionestabfail"),
        Some(0)
    );
    assert_eq!(sample(&page, "fivegs_smffunction_sm_sessionnbr"), Some(0));
    let reports: u64 = r.workers.iter().map(|w| w.smf.n4_reports).sum();
    assert_eq!(
        sample(&page, "fivegs_smffunction_sm_n4sessionreport"),
        Some(reports)
    );
    // Every series the SMF's Grafana dashboard charts is a family of the page.
    for name in common::dashboard_metrics("steer5g-smf.json") {
        assert!(
            page.contains(&format!("# TYPE {name} ")),
            "the SMF dashboard charts {name}, which the page does not have"
        );
    }
    // And the AMF's: registrations and authentications, one per UE.
    assert_eq!(sample(&page, "fivegs_amffunction_rm_reginitsucc"), ues);
    assert_eq!(sample(&page, "fivegs_amffunction_amf_authreq"), ues);
}

#[test]
fn unknown_dnn_is_rejected_to_the_ue() {
    let (o, r) = run_plan(66, 2, StateMode::Sharded, Plan::Reject);
    assert_eq!(o, common::all_rejected(UES));
    let (rejected, smf_rejected) = r.workers.iter().fold((0, 0), |t, w| {
        (t.0 + w.amf_sessions.rejected, t.1 + w.smf.rejected)
    });
    assert_eq!((rejected, smf_rejected), (UES as u64, UES as u64));
}

/// Every Nsmf request and N1N2MessageTransfer went over h2c: `transfers` N1N2s served; in
/// the sharded mode the AMF sent every Nsmf request on its owner's connection, and where
/// the listeners are kernel-steered each request arrived at its owner with no hop.
fn expect_h2c(r: &CoreReport, transfers: u64) {
    let c = r.counters_total();
    eprintln!(
        "{} workers, kernel-steered groups {:?}: {c:?}",
        r.workers.len(),
        r.sbi_kernel
    );
    assert_eq!(c.namf_served, transfers, "{c:?}");
    assert!(c.nsmf_served >= transfers, "{c:?}");
    if r.workers.len() > 1 && r.locks.acquisitions == 0 {
        assert_eq!(c.nsmf_pool_steered, c.nsmf_served, "{c:?}");
        assert_eq!(c.namf_pool_steered, c.namf_served, "{c:?}");
        let steered = r
            .sbi_kernel
            .iter()
            .filter(|(nf, _)| matches!(nf, NfType::Smf | NfType::Amf))
            .count();
        if steered == 2 {
            assert_eq!(c.nsmf_kernel_steered, c.nsmf_served, "{c:?}");
            assert_eq!(c.namf_kernel_steered, c.namf_served, "{c:?}");
            assert_eq!((c.nsmf_handed_off, c.namf_handed_off), (0, 0), "{c:?}");
        }
    }
}

#[test]
fn h2c_sharded_one_worker() {
    let (o, r) = run_sbi(67, 1, StateMode::Sharded, Plan::Release, SbiMode::H2c);
    expect_all(&o, &r);
    expect_h2c(&r, UES as u64);
}

#[test]
fn h2c_sharded_two_workers() {
    let (o, r) = run_sbi(68, 2, StateMode::Sharded, Plan::Release, SbiMode::H2c);
    expect_all(&o, &r);
    expect_h2c(&r, UES as u64);
    assert_eq!(r.locks.acquisitions, 0);
}

#[test]
fn h2c_locked_one_and_two_workers() {
    for (net, workers) in [(69, 1), (70, 2)] {
        let (o, r) = run_sbi(net, workers, StateMode::Locked, Plan::Release, SbiMode::H2c);
        expect_all(&o, &r);
        expect_h2c(&r, UES as u64);
        assert!(r.locks.acquisitions > 0);
    }
}

#[test]
fn h2c_deregistration_and_unknown_dnn() {
    let (o, r) = run_sbi(71, 2, StateMode::Sharded, Plan::Deregister, SbiMode::H2c);
    assert_eq!(
        (o.established, o.deregistered, o.released),
        (UES, UES, UES),
        "{o:?}"
    );
    assert!(o.failures.is_empty(), "{o:?}");
    let released: u64 = r
        .workers
        .iter()
        .map(|w| w.amf_sessions.released_with_ue)
        .sum();
    assert_eq!(released, UES as u64);
    assert_eq!(r.upf.as_ref().unwrap().sessions_at_stop, 0);
    let (o, r) = run_sbi(72, 2, StateMode::Locked, Plan::Reject, SbiMode::H2c);
    assert_eq!(o, common::all_rejected(UES));
    let rejected: u64 = r.workers.iter().map(|w| w.smf.rejected).sum();
    assert_eq!(rejected, UES as u64);
    assert_eq!(r.counters_total().namf_served, 0);
}

/// The SMF's client believes the AMF has one worker, so it sends every N1N2MessageTransfer
/// to AMF worker 0: the transfers of UEs owned by worker 1 go round to it.
#[test]
fn h2c_transfers_find_their_ue_on_another_worker() {
    let (o, r, _) = run_with_gnb_n3(
        73,
        2,
        StateMode::Sharded,
        Plan::Release,
        SbiMode::H2c,
        |o| {
            o.directory.set_workers(NfType::Amf, 1);
        },
        None,
    );
    expect_all(&o, &r);
    let c = r.counters_total();
    assert_eq!(c.namf_served, UES as u64, "{c:?}");
    assert!(c.namf_handed_off > 0, "{c:?}");
    assert!(c.namf_handed_off < UES as u64, "{c:?}");
    let n1n2: u64 = r.workers.iter().map(|w| w.amf_sessions.n1n2).sum();
    assert_eq!(n1n2, UES as u64);
}

/// The gNB announces 0.0.0.0 as its N3 address: the SMF refuses the PDU Session Resource
/// Setup Response Transfer, never installs that tunnel at the UPF, and releases each session
/// through the AMF (N1N2MessageTransfer with the release command and NGAP cause "transport
/// resource unavailable"). Every session ends released at the UE, the gNB, the AMF, the SMF
/// and the UPF; the UEs then deregister as after any release.
#[test]
fn an_unusable_gnb_address_ends_every_session_released() {
    for (net, workers, state, sbi) in [
        (74, 1, StateMode::Sharded, SbiMode::Inproc),
        (75, 2, StateMode::Sharded, SbiMode::H2c),
    ] {
        let (o, r, _) = run_with_gnb_n3(
            net,
            workers,
            state,
            Plan::Release,
            sbi,
            |_| {},
            Some(Ipv4Addr::UNSPECIFIED),
        );
        let want = Outcome {
            registered: UES,
            established: UES,
            rejected: 0,
            upf_checked: 0,
            released_sessions: UES,
            deregistered: UES,
            released: UES,
            addresses: UES,
            rules_left: 0,
            failures: Vec::new(),
        };
        assert_eq!(o, want, "{sbi:?}");
        let t = r.workers.iter().fold((0, 0, 0, 0, 0), |t, w| {
            (
                t.0 + w.smf.bad_tunnels,
                t.1 + w.smf.network_releases,
                t.2 + w.smf.activated,
                t.3 + w.smf.released,
                t.4 + w.amf_sessions.release_commands,
            )
        });
        let n = UES as u64;
        assert_eq!(t, (n, n, 0, n, n), "{sbi:?}");
        assert_eq!(r.upf.as_ref().unwrap().sessions_at_stop, 0);
    }
}
