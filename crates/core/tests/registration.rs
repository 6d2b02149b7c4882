//! Registrations end to end through a real core: the test runs gNB and UE emulators
//! (`ran`) over SCTP with UDP encapsulation on loopback against `Core::start`, with real
//! subscribers in a redb store and SUCIs concealed with Profile A under the data
//! directory's home network key. Every mode (1 and 2 workers, sharded and locked, h2c and
//! in-process SBI) must give the same outcome: every UE registered and deregistered.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use proto::ids::defaults;
use ran::gnb::{Gnb, GnbConfig, GnbEvent, GnbUeEvent, GnbUes};
use ran::ue::{RegistrationKind, SuciScheme, Ue, UeConfig, UeEvent};
use rand::SeedableRng;
use sbi::{NfType, StaticDirectory};
use sctp::{Endpoint, EndpointConfig, Event};
use sctp_io::{SctpSocket, Transport};
use steer5g_config::{Config, Transport as TransportKind};
use steer5g_core::{Core, CoreOptions, CoreReport, SbiMode, StateMode};
use store::{Profile, RedbStore, SubscriberStore};

const UES: usize = 20;
const NGAP_PPID: u32 = 60;
const DEADLINE: Duration = Duration::from_secs(30);

/// What the UEs saw.
#[derive(Debug, Default, PartialEq, Eq)]
struct Outcome {
    registered: usize,
    deregistered: usize,
    released: usize,
    failures: Vec<String>,
}

/// A core on 127.0.`net`.x with `UES` subscribers, and the UEs registering and
/// deregistering through one gNB.
fn run_case(net: u8, workers: u16, state: StateMode, sbi: SbiMode) -> (Outcome, CoreReport) {
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
    let mut directory = StaticDirectory::new();
    directory.set(NfType::Amf, format!("http://{}:7777", ip(5)));
    directory.set(NfType::Ausf, format!("http://{}:7777", ip(11)));
    directory.set(NfType::Udm, format!("http://{}:7777", ip(12)));
    let mut opts = CoreOptions::new(dir.path().to_owned());
    opts.workers = workers;
    opts.state = state;
    opts.sbi = sbi;
    opts.config = config.clone();
    opts.directory = directory;
    opts.rand_seed = Some(7);
    let core = Core::start(opts).unwrap();
    let n2 = core.listening().n2[0].1;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ues: Vec<Ue> = subs
        .iter()
        .map(|s| {
            let mut c = UeConfig::from_subscriber(s, defaults::PLMN).unwrap();
            c.suci = SuciScheme::Ecies {
                key: hn.public_key().unwrap(),
                key_id: hn.id,
            };
            Ue::new(c).unwrap()
        })
        .collect();
    let outcome = rt.block_on(drive_ues(ip(100), n2, config.n2.sctp_port, ues));
    let report = core.stop().unwrap();
    (outcome, report)
}

async fn drive_ues(local: Ipv4Addr, amf: SocketAddr, sctp_port: u16, mut ues: Vec<Ue>) -> Outcome {
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
    let mut registered: HashMap<u64, bool> = HashMap::new();
    let deadline = Instant::now() + DEADLINE;
    while out.released < ues.len() && Instant::now() < deadline {
        for (stream, pdu) in pending.drain(..) {
            sock.endpoint_mut()
                .send(assoc, stream, NGAP_PPID, false, pdu.into())
                .unwrap();
        }
        sock.drive(Some(deadline)).await.unwrap();
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
                                        registered.insert(key, true);
                                        let d = ue.deregistration_request(false).unwrap();
                                        let s = n2ues.uplink_nas(key, &d).unwrap();
                                        pending.push((s.stream, s.pdu));
                                    }
                                    UeEvent::Deregistered => out.deregistered += 1,
                                    UeEvent::Authenticated | UeEvent::SecurityModeCompleted => {}
                                    other => out.failures.push(format!("UE {key}: {other:?}")),
                                }
                            }
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
    let _ = sock.endpoint_mut().shutdown(Instant::now(), assoc);
    let grace = Instant::now() + Duration::from_secs(1);
    while !sock.endpoint().is_empty() && Instant::now() < grace {
        sock.drive(Some(grace)).await.unwrap();
        while sock.endpoint_mut().poll_event().is_some() {}
    }
    out
}

fn expect_all(outcome: &Outcome, report: &CoreReport) {
    let want = Outcome {
        registered: UES,
        deregistered: UES,
        released: UES,
        failures: Vec::new(),
    };
    assert_eq!(outcome, &want);
    let amf = report.amf_total();
    assert_eq!(amf.registrations, UES as u64);
    assert_eq!(amf.deregistrations, UES as u64);
    assert_eq!(amf.ues_created, UES as u64);
    assert_eq!(report.n2.n2.ng_setup_ok, 1);
    let vectors: u64 = report.workers.iter().map(|w| w.udm.vectors).sum();
    assert_eq!(vectors, UES as u64);
}

#[test]
fn sharded_h2c_one_worker() {
    let (o, r) = run_case(31, 1, StateMode::Sharded, SbiMode::H2c);
    expect_all(&o, &r);
    assert_eq!(r.handoffs(), 0);
    assert_eq!(r.locks.acquisitions, 0);
    assert!(r.counters_total().sbi_served > 0);
}

#[test]
fn sharded_h2c_two_workers_hand_off() {
    let (o, r) = run_case(32, 2, StateMode::Sharded, SbiMode::H2c);
    expect_all(&o, &r);
    assert!(r.handoffs() > 0, "{:?}", r.counters_total());
    assert_eq!(r.locks.acquisitions, 0);
}

#[test]
fn locked_h2c_two_workers_take_locks() {
    let (o, r) = run_case(33, 2, StateMode::Locked, SbiMode::H2c);
    expect_all(&o, &r);
    assert!(r.locks.acquisitions > 0);
    let c = r.counters_total();
    assert_eq!(c.sbi_handed_off + c.udm_forwards, 0, "{c:?}");
}

#[test]
fn sharded_inproc_one_worker() {
    let (o, r) = run_case(34, 1, StateMode::Sharded, SbiMode::Inproc);
    expect_all(&o, &r);
    assert_eq!(r.counters_total().sbi_served, 0, "no sockets");
    assert_eq!(r.counters_total().h2c_calls, 0);
}

#[test]
fn sharded_inproc_two_workers_hand_off() {
    let (o, r) = run_case(35, 2, StateMode::Sharded, SbiMode::Inproc);
    expect_all(&o, &r);
    assert!(r.handoffs() > 0);
    assert!(r.mesh_total.sent > 0);
    assert_eq!(r.locks.acquisitions, 0);
}

#[test]
fn locked_inproc_two_workers_take_locks() {
    let (o, r) = run_case(36, 2, StateMode::Locked, SbiMode::Inproc);
    expect_all(&o, &r);
    assert!(r.locks.acquisitions > 0);
}

#[test]
fn locked_one_worker_both_sbi_modes() {
    for (net, sbi) in [(37, SbiMode::H2c), (38, SbiMode::Inproc)] {
        let (o, r) = run_case(net, 1, StateMode::Locked, sbi);
        expect_all(&o, &r);
        assert!(r.locks.acquisitions > 0);
        assert_eq!(r.handoffs(), 0);
    }
}
