//! PDU sessions end to end through a real core: gNB and UE emulators (`ran`) over SCTP with
//! UDP encapsulation on loopback register each UE, establish one PDU session per UE (AMF →
//! in-process Nsmf → SMF shard → PFCP to an in-process UPF over UDP → N1N2MessageTransfer →
//! PDU SESSION RESOURCE SETUP → UpdateSMContext → PFCP modification), check the UPF's rules,
//! release every session (UE-requested), and deregister. Sharded and locked, 1 and 2
//! workers, must give the same outcome, and so must Nsmf and N1N2MessageTransfer over h2c
//! (the `h2c_*` cases: AMF and SMF on their own listener groups in one process).
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use proto::ids::defaults;
use ran::gnb::{Gnb, GnbConfig, GnbEvent, GnbUeEvent, GnbUes};
use ran::ue::{RegistrationKind, SessionRequest, SuciScheme, Ue, UeConfig, UeEvent};
use rand::SeedableRng;
use sbi::NfType;
use sctp::{Endpoint, EndpointConfig, Event};
use sctp_io::{SctpSocket, Transport};
use steer5g_config::{Config, Transport as TransportKind};
use steer5g_core::{Core, CoreOptions, CoreReport, SbiMode, SmfOptions, StateMode, UpfOptions};
use store::{Profile, RedbStore, SubscriberStore};
use upf::datapath::DownlinkAction;
use upf::MemoryDatapath;

const UES: usize = 8;
const NGAP_PPID: u32 = 60;
const DEADLINE: Duration = Duration::from_secs(30);

/// How the sessions end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// The UE releases its session, then deregisters.
    Release,
    /// The UE deregisters with its session up: the AMF releases the SM context.
    Deregister,
    /// The UE asks for a DNN the SMF does not serve: rejected, then deregisters.
    Reject,
}

/// What the UEs, gNB and UPF saw.
#[derive(Debug, Default, PartialEq, Eq)]
struct Outcome {
    registered: usize,
    established: usize,
    rejected: usize,
    /// Sessions whose UPF rules matched the gNB's and UPF's tunnels.
    upf_checked: usize,
    released_sessions: usize,
    deregistered: usize,
    released: usize,
    /// Distinct UE addresses handed out.
    addresses: usize,
    /// UPF rules left after the releases.
    rules_left: usize,
    failures: Vec<String>,
}

/// A UE's address, the gNB's DL TEID and the UPF's UL TEID, as the UE and gNB learnt them.
type Tunnels = (Option<Ipv4Addr>, Option<u32>, Option<u32>);

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
    run_tweaked(net, workers, state, plan, sbi, |_| {})
}

fn run_tweaked(
    net: u8,
    workers: u16,
    state: StateMode,
    plan: Plan,
    sbi: SbiMode,
    tweak: fn(&mut CoreOptions),
) -> (Outcome, CoreReport) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(u64::from(net));
    let subs = store::generate::generate("imsi-001010000000001", UES as u64, &mut rng).unwrap();
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

    let ip = |host: u8| Ipv4Addr::new(127, 0, net, host);
    let mut config = Config::default();
    config.n2.addr = ip(1);
    config.n2.transports = vec![TransportKind::Udp];
    let mut opts = CoreOptions::new(dir.path().to_owned());
    opts.workers = workers;
    opts.state = state;
    opts.sbi = sbi;
    opts.smf_sbi = sbi;
    for (nf, host) in [
        (NfType::Amf, 5),
        (NfType::Smf, 4),
        (NfType::Ausf, 11),
        (NfType::Udm, 12),
    ] {
        opts.directory.set(nf, format!("http://{}:7777", ip(host)));
    }
    opts.config = config.clone();
    opts.rand_seed = Some(7);
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
    let n2 = core
        .listening()
        .n2
        .iter()
        .find(|(k, _)| *k == TransportKind::Udp)
        .unwrap()
        .1;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ues: Vec<Ue> = subs
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
    let outcome = rt.block_on(drive(
        ip(100),
        n2,
        config.n2.sctp_port,
        ues,
        &datapath,
        ip(7),
        plan,
    ));
    let report = core.stop().unwrap();
    (outcome, report)
}

async fn drive(
    local: Ipv4Addr,
    amf: SocketAddr,
    sctp_port: u16,
    mut ues: Vec<Ue>,
    dp: &MemoryDatapath,
    upf_n3: Ipv4Addr,
    plan: Plan,
) -> Outcome {
    let transport = Transport::bind_udp(SocketAddrV4::new(local, 0)).unwrap();
    let mut sock = SctpSocket::new(
        transport,
        Endpoint::new(EndpointConfig {
            listen_port: None,
            association: sctp::AssociationConfig::default(),
            cookie_key: [7; 32],
            cookie_lifetime: Duration::from_secs(60),
            max_associations: 16,
            rng_seed: 99,
        }),
    );
    let cfg = GnbConfig::default();
    let mut gnb = Gnb::new(cfg.clone()).unwrap();
    let mut n2ues = GnbUes::new(&cfg, 1, 4);
    let assoc = sock
        .endpoint_mut()
        .connect(Instant::now(), amf, 38412, sctp_port)
        .unwrap();
    let mut out = Outcome::default();
    let mut ready = false;
    let mut pending: Vec<(u16, Vec<u8>)> = Vec::new();
    // Per UE: its address, the gNB's DL TEID and the UPF's UL TEID.
    let mut sessions: HashMap<u64, Tunnels> = HashMap::new();
    let mut all_ips = Vec::new();
    let mut checked = false;
    let deadline = Instant::now() + DEADLINE;
    while out.released < ues.len() && Instant::now() < deadline {
        // Once every session is up, wait for the UPF to forward downlink to the gNB, check
        // each session's rules, then have every UE release its session.
        if !checked && out.established == ues.len() {
            let all_forward = sessions.values().all(|(ip, gnb_teid, _)| {
                matches!(
                    ip.and_then(|ip| dp.downlink(ip)).map(|r| r.action),
                    Some(DownlinkAction::Forward { teid, .. }) if Some(teid) == *gnb_teid
                )
            });
            if all_forward {
                checked = true;
                for (key, (ip, _, ul_teid)) in &sessions {
                    let ul = ul_teid.and_then(|t| dp.uplink(t));
                    match (ul, ip) {
                        (Some(ul), Some(ip)) if ul.ue_ip == *ip => out.upf_checked += 1,
                        other => out
                            .failures
                            .push(format!("UE {key}: uplink rule {other:?}")),
                    }
                }
                for key in sessions.keys() {
                    let ue = &mut ues[*key as usize];
                    let up = if plan == Plan::Deregister {
                        ue.deregistration_request(false).unwrap()
                    } else {
                        ue.pdu_session_release_request(1).unwrap()
                    };
                    let s = n2ues.uplink_nas(*key, &up).unwrap();
                    pending.push((s.stream, s.pdu));
                }
            } else {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        for (stream, pdu) in pending.drain(..) {
            sock.endpoint_mut()
                .send(assoc, stream, NGAP_PPID, false, pdu.into())
                .unwrap();
        }
        let turn = (Instant::now() + Duration::from_millis(20)).min(deadline);
        sock.drive(Some(turn)).await.unwrap();
        while let Some((_, ev)) = sock.endpoint_mut().poll_event() {
            match ev {
                Event::Connected { .. } => pending.push((0, gnb.ng_setup_request())),
                Event::Message(m) if !ready => match gnb.handle(m.stream, &m.data) {
                    GnbEvent::SetupOk => {
                        ready = true;
                        for (i, ue) in ues.iter_mut().enumerate() {
                            ue.prepare().unwrap();
                            let reg = ue.registration_request(RegistrationKind::Initial).unwrap();
                            let s = n2ues.initial_ue_message(i as u64, &reg, None).unwrap();
                            pending.push((s.stream, s.pdu));
                        }
                    }
                    other => out.failures.push(format!("NG Setup: {other:?}")),
                },
                Event::Message(m) => {
                    let o = n2ues.handle_downlink(m.stream, &m.data);
                    for t in o.transmit {
                        pending.push((t.stream, t.pdu));
                    }
                    for e in o.events {
                        match e {
                            GnbUeEvent::NasToUe { ue: key, nas } => {
                                let Some(ue) = ues.get_mut(key as usize) else {
                                    continue;
                                };
                                let r = ue.handle_downlink_nas(&nas);
                                if let Some(up) = r.uplink {
                                    let s = n2ues.uplink_nas(key, &up).unwrap();
                                    pending.push((s.stream, s.pdu));
                                }
                                match r.event {
                                    UeEvent::Registered => {
                                        out.registered += 1;
                                        let mut sr = SessionRequest::default();
                                        if plan == Plan::Reject {
                                            sr.dnn = "nope".into();
                                        }
                                        let req =
                                            ue.pdu_session_establishment_request(&sr).unwrap();
                                        let s = n2ues.uplink_nas(key, &req).unwrap();
                                        pending.push((s.stream, s.pdu));
                                    }
                                    UeEvent::PduSessionEstablished { ue_ip, .. } => {
                                        out.established += 1;
                                        sessions.entry(key).or_default().0 = ue_ip;
                                        all_ips.extend(ue_ip);
                                    }
                                    UeEvent::PduSessionRejected { .. } => {
                                        out.rejected += 1;
                                        let d = ue.deregistration_request(false).unwrap();
                                        let s = n2ues.uplink_nas(key, &d).unwrap();
                                        pending.push((s.stream, s.pdu));
                                    }
                                    UeEvent::PduSessionReleased { .. } => {
                                        out.released_sessions += 1;
                                        let d = ue.deregistration_request(false).unwrap();
                                        let s = n2ues.uplink_nas(key, &d).unwrap();
                                        pending.push((s.stream, s.pdu));
                                    }
                                    UeEvent::Deregistered => out.deregistered += 1,
                                    UeEvent::Authenticated | UeEvent::SecurityModeCompleted => {}
                                    other => out.failures.push(format!("UE {key}: {other:?}")),
                                }
                            }
                            GnbUeEvent::PduSessionSetup(s) => {
                                if s.upf.addr != upf_n3 {
                                    out.failures.push(format!("UPF N3 {:?}", s.upf));
                                }
                                let e = sessions.entry(s.ue).or_default();
                                e.1 = Some(s.gnb.teid);
                                e.2 = Some(s.upf.teid);
                            }
                            GnbUeEvent::PduSessionReleased { .. } => {}
                            GnbUeEvent::ContextSetup { .. } => {}
                            GnbUeEvent::Released { .. } => out.released += 1,
                            other => out.failures.push(format!("gNB: {other:?}")),
                        }
                    }
                }
                Event::Closed { reason } => {
                    out.failures.push(format!("association closed: {reason:?}"));
                    return out;
                }
                _ => {}
            }
        }
    }
    // The last UE CONTEXT RELEASE COMPLETEs: the AMF releases SM contexts on them.
    for (stream, pdu) in pending.drain(..) {
        sock.endpoint_mut()
            .send(assoc, stream, NGAP_PPID, false, pdu.into())
            .unwrap();
    }
    let flush = Instant::now() + Duration::from_millis(200);
    while Instant::now() < flush {
        sock.drive(Some(flush)).await.unwrap();
        while sock.endpoint_mut().poll_event().is_some() {}
    }
    let _ = sock.endpoint_mut().shutdown(Instant::now(), assoc);
    let grace = Instant::now() + Duration::from_secs(1);
    while !sock.endpoint().is_empty() && Instant::now() < grace {
        sock.drive(Some(grace)).await.unwrap();
        while sock.endpoint_mut().poll_event().is_some() {}
    }
    // The SMF deletes the UPF's sessions after the N2 side is done (on deregistration, once
    // the UE context is released): give that a bounded while.
    let settle = Instant::now() + Duration::from_secs(5);
    while !dp.uplink_rules().is_empty() && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    all_ips.sort();
    all_ips.dedup();
    out.addresses = all_ips.len();
    out.rules_left = dp.uplink_rules().len()
        + all_ips
            .iter()
            .filter(|ip| dp.downlink(**ip).is_some())
            .count();
    out
}

fn expect_all(o: &Outcome, r: &CoreReport) {
    let want = Outcome {
        registered: UES,
        established: UES,
        rejected: 0,
        upf_checked: UES,
        released_sessions: UES,
        deregistered: UES,
        released: UES,
        addresses: UES,
        rules_left: 0,
        failures: Vec::new(),
    };
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
fn unknown_dnn_is_rejected_to_the_ue() {
    let (o, r) = run_plan(66, 2, StateMode::Sharded, Plan::Reject);
    let want = Outcome {
        registered: UES,
        rejected: UES,
        deregistered: UES,
        released: UES,
        ..Outcome::default()
    };
    assert_eq!(o, want);
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
    let want = Outcome {
        registered: UES,
        rejected: UES,
        deregistered: UES,
        released: UES,
        ..Outcome::default()
    };
    assert_eq!(o, want);
    let rejected: u64 = r.workers.iter().map(|w| w.smf.rejected).sum();
    assert_eq!(rejected, UES as u64);
    assert_eq!(r.counters_total().namf_served, 0);
}

/// The SMF's client believes the AMF has one worker, so it sends every N1N2MessageTransfer
/// to AMF worker 0: the transfers of UEs owned by worker 1 go round to it.
#[test]
fn h2c_transfers_find_their_ue_on_another_worker() {
    let (o, r) = run_tweaked(
        73,
        2,
        StateMode::Sharded,
        Plan::Release,
        SbiMode::H2c,
        |o| {
            o.directory.set_workers(NfType::Amf, 1);
        },
    );
    expect_all(&o, &r);
    let c = r.counters_total();
    assert_eq!(c.namf_served, UES as u64, "{c:?}");
    assert!(c.namf_handed_off > 0, "{c:?}");
    assert!(c.namf_handed_off < UES as u64, "{c:?}");
    let n1n2: u64 = r.workers.iter().map(|w| w.amf_sessions.n1n2).sum();
    assert_eq!(n1n2, UES as u64);
}
