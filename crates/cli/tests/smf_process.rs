//! The SMF as its own process: `steer5g udm`, `ausf`, `smf` and `amf --smf` as four child
//! processes on their own loopback addresses (127.0.0.80-83), a UPF inside the test
//! (`upf::service::UpfService` over a `MemoryDatapath`) on PFCP, `steer5g ran
//! --subscribers` registering through them, then one UE driven with the `ran` crate through
//! a PDU session's life: establishment (AMF → Nsmf over h2c → SMF → PFCP → UPF →
//! N1N2MessageTransfer over h2c → AMF → gNB), the UPF's rules checked, UE-requested
//! release, deregistration.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use common::{num, steer5g, Scratch};
use procs::{load_run, provision, start_json as start, stop_nf as stop};
use proto::ids::defaults;
use ran::gnb::{Gnb, GnbConfig, GnbEvent, GnbUeEvent, GnbUes};
use ran::ue::{RegistrationKind, SessionRequest, SuciScheme, Ue, UeConfig, UeEvent};
use sctp::{Endpoint, EndpointConfig, Event};
use sctp_io::{SctpSocket, Transport};
use store::Profile;
use upf::datapath::DownlinkAction;
use upf::MemoryDatapath;

const RUN_TIMEOUT: Duration = Duration::from_secs(120);
const SUBSCRIBERS: u32 = 4;
const NGAP_PPID: u32 = 60;
const SESSION_DEADLINE: Duration = Duration::from_secs(30);

/// What the driven UE went through.
#[derive(Debug, Default, PartialEq, Eq)]
struct Walk {
    registered: bool,
    ue_ip: Option<Ipv4Addr>,
    /// The UPF's rules: UL PDR on its TEID for the UE's address, DL forwarding to the gNB.
    upf_checked: bool,
    released_session: bool,
    deregistered: bool,
    failures: Vec<String>,
}

/// One UE through registration, a PDU session, its release and deregistration, over a gNB
/// on SCTP/UDP to the AMF at `amf`.
async fn walk(local: Ipv4Addr, amf: SocketAddr, mut ue: Ue, dp: &MemoryDatapath) -> Walk {
    let transport = Transport::bind_udp(SocketAddrV4::new(local, 0)).unwrap();
    let mut sock = SctpSocket::new(
        transport,
        Endpoint::new(EndpointConfig {
            listen_port: None,
            association: sctp::AssociationConfig::default(),
            cookie_key: [3; 32],
            cookie_lifetime: Duration::from_secs(60),
            max_associations: 4,
            rng_seed: 5,
        }),
    );
    // Not the gNB ids `steer5g ran` used before.
    let cfg = GnbConfig {
        gnb_id: 0x77,
        ..GnbConfig::default()
    };
    let mut gnb = Gnb::new(cfg.clone()).unwrap();
    let mut n2ues = GnbUes::new(&cfg, 1, 4);
    let assoc = sock
        .endpoint_mut()
        .connect(Instant::now(), amf, 38412, 38412)
        .unwrap();
    let mut w = Walk::default();
    let mut ready = false;
    let mut pending: Vec<(u16, Vec<u8>)> = Vec::new();
    let (mut gnb_teid, mut upf_teid) = (None, None);
    let deadline = Instant::now() + SESSION_DEADLINE;
    while !w.deregistered && Instant::now() < deadline && w.failures.is_empty() {
        if let (false, Some(ip), Some(teid)) = (w.upf_checked, w.ue_ip, gnb_teid) {
            let dl = dp.downlink(ip).map(|r| r.action);
            if matches!(dl, Some(DownlinkAction::Forward { teid: t, .. }) if t == teid) {
                let ul = upf_teid.and_then(|t| dp.uplink(t));
                w.upf_checked = ul.is_some_and(|r| r.ue_ip == ip);
                if !w.upf_checked {
                    w.failures.push(format!("uplink rule {ul:?}"));
                }
                let up = ue.pdu_session_release_request(1).unwrap();
                let s = n2ues.uplink_nas(0, &up).unwrap();
                pending.push((s.stream, s.pdu));
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
                        ue.prepare().unwrap();
                        let reg = ue.registration_request(RegistrationKind::Initial).unwrap();
                        let s = n2ues.initial_ue_message(0, &reg, None).unwrap();
                        pending.push((s.stream, s.pdu));
                    }
                    other => w.failures.push(format!("NG Setup: {other:?}")),
                },
                Event::Message(m) => {
                    let o = n2ues.handle_downlink(m.stream, &m.data);
                    pending.extend(o.transmit.into_iter().map(|t| (t.stream, t.pdu)));
                    for e in o.events {
                        match e {
                            GnbUeEvent::NasToUe { nas, .. } => {
                                let r = ue.handle_downlink_nas(&nas);
                                let mut up: Vec<Vec<u8>> = r.uplink.into_iter().collect();
                                match r.event {
                                    UeEvent::Registered => {
                                        w.registered = true;
                                        let sr = SessionRequest::default();
                                        up.push(ue.pdu_session_establishment_request(&sr).unwrap());
                                    }
                                    UeEvent::PduSessionEstablished { ue_ip, .. } => w.ue_ip = ue_ip,
                                    UeEvent::PduSessionReleased { .. } => {
                                        w.released_session = true;
                                        up.push(ue.deregistration_request(false).unwrap());
                                    }
                                    UeEvent::Deregistered => w.deregistered = true,
                                    UeEvent::Authenticated | UeEvent::SecurityModeCompleted => {}
                                    other => w.failures.push(format!("UE: {other:?}")),
                                }
                                for u in up {
                                    let s = n2ues.uplink_nas(0, &u).unwrap();
                                    pending.push((s.stream, s.pdu));
                                }
                            }
                            GnbUeEvent::PduSessionSetup(s) => {
                                gnb_teid = Some(s.gnb.teid);
                                upf_teid = Some(s.upf.teid);
                            }
                            GnbUeEvent::PduSessionReleased { .. }
                            | GnbUeEvent::ContextSetup { .. }
                            | GnbUeEvent::Released { .. } => {}
                            other => w.failures.push(format!("gNB: {other:?}")),
                        }
                    }
                }
                Event::Closed { reason } => {
                    w.failures.push(format!("association closed: {reason:?}"));
                }
                _ => {}
            }
        }
    }
    // The UE CONTEXT RELEASE COMPLETE: sent, and a moment for it to arrive.
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
    w
}

#[test]
fn udm_ausf_smf_and_amf_as_four_processes_carry_a_pdu_session() {
    let scratch = Scratch::new("smf-process");
    let (dir_s, csv_s) = provision(&scratch, SUBSCRIBERS.into());

    let datapath = MemoryDatapath::new();
    let upf = upf::service::UpfService::start(
        upf::service::ServiceOptions::new("127.0.0.84:0".parse().unwrap(), [127, 0, 0, 84].into()),
        Box::new(datapath.clone()),
    )
    .unwrap();
    let upf_at = upf.local_addr().to_string();

    let (udm_uri, ausf_uri) = ("http://127.0.0.80:7777", "http://127.0.0.81:7777");
    let (amf_uri, smf_uri) = ("http://127.0.0.82:7777", "http://127.0.0.83:7777");
    let workers = ["--workers", "2"];
    let mut args = vec!["udm", "--data-dir", &dir_s, "--sbi-addr", "127.0.0.80:7777"];
    args.extend_from_slice(&workers);
    let udm = start(&args, "SBI listening");
    let mut args = vec!["ausf", "--sbi-addr", "127.0.0.81:7777", "--udm", udm_uri];
    args.extend_from_slice(&workers);
    let ausf = start(&args, "SBI listening");
    let mut args = vec![
        "smf",
        "--sbi-addr",
        "127.0.0.83:7777",
        "--upf",
        &upf_at,
        "--amf",
        amf_uri,
        "--udm",
        udm_uri,
    ];
    args.extend_from_slice(&workers);
    let smf = start(&args, "SBI listening");
    let mut args = vec![
        "amf",
        "--transport",
        "udp",
        "--n2-addr",
        "127.0.0.82",
        "--udp-port",
        "19882",
        "--ausf",
        ausf_uri,
        "--udm",
        udm_uri,
        "--smf",
        smf_uri,
        "--sbi-addr",
        "127.0.0.82:7777",
    ];
    args.extend_from_slice(&workers);
    let amf = start(&args, "N2 listening");

    // Registrations through the three NFs, from the load generator.
    let (done, v) = load_run(
        &csv_s,
        &dir_s,
        "127.0.0.82:19882",
        &[
            "--local-addr",
            "127.0.0.82",
            "--ues",
            "2",
            "--count",
            "4",
            "--suci",
            "a",
        ],
        RUN_TIMEOUT,
    );
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(num(&v, "procedures.registration.completed"), 4, "{v}");

    // One UE through a PDU session's life.
    let subs = store::csv::parse_csv(&std::fs::read_to_string(&csv_s).unwrap()).unwrap();
    let (keys, _) = store::hn_keys::load_or_create(
        &std::path::Path::new(&dir_s).join(store::HN_KEY_FILE),
        &mut rand::rngs::OsRng,
    )
    .unwrap();
    let hn = keys.keys.iter().find(|k| k.profile == Profile::A).unwrap();
    let mut c = UeConfig::from_subscriber(&subs[0], defaults::PLMN).unwrap();
    c.suci = SuciScheme::Ecies {
        key: security::suci::HomeNetworkPrivateKey::from_bytes(
            security::suci::Profile::A,
            hn.private_octets(),
        )
        .unwrap()
        .public_key(),
        key_id: hn.id,
    };
    let ue = Ue::new(c).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let w = rt.block_on(walk(
        Ipv4Addr::new(127, 0, 0, 82),
        "127.0.0.82:19882".parse().unwrap(),
        ue,
        &datapath,
    ));

    let a = stop("amf", amf);
    let s = stop("smf", smf);
    let au = stop("ausf", ausf);
    let u = stop("udm", udm);
    let up = upf.stop().unwrap();
    let all = format!("amf: {a}\nsmf: {s}\nausf: {au}\nudm: {u}");
    assert!(w.failures.is_empty(), "{w:?}\n{all}");
    assert!(
        w.registered && w.upf_checked && w.released_session && w.deregistered,
        "{w:?}\n{all}"
    );
    assert_eq!(up.sessions_at_stop, 0, "{all}");

    // The SMF process: one context created, activated and released, its Nsmf requests
    // (create, setup response, release request) served over h2c, one N1N2 sent.
    assert_eq!(num(&s, "smf.created"), 1, "{all}");
    assert_eq!(num(&s, "smf.activated"), 1, "{all}");
    assert_eq!(num(&s, "smf.released"), 1, "{all}");
    assert_eq!(num(&s, "smf.n1n2_sent"), 1, "{all}");
    assert_eq!(num(&s, "nsmf_served"), 3, "{all}");
    assert_eq!(num(&s, "call_failures"), 0, "{all}");
    // The AMF process: it called the SMF over h2c and served the N1N2MessageTransfer.
    assert_eq!(num(&a, "sessions.created"), 1, "{all}");
    assert_eq!(num(&a, "sessions.activated"), 1, "{all}");
    assert_eq!(num(&a, "sessions.released"), 1, "{all}");
    assert_eq!(num(&a, "sessions.n1n2"), 1, "{all}");
    assert_eq!(num(&a, "sessions.namf_served"), 1, "{all}");
    assert_eq!(num(&a, "registration.registrations"), 5, "{all}");
}

#[test]
fn smf_refuses_a_bad_dnn_pool_and_a_non_h2c_peer() {
    for bad in [
        ["--dnn", "internet=10.45.0.0"],
        ["--amf", "https://127.0.0.85:7777"],
    ] {
        let mut args = vec!["smf", "--sbi-addr", "127.0.0.85:7777", "--duration", "0"];
        args.extend_from_slice(&bad);
        let done = testkit::process::run_timeout(&mut steer5g(None, &args), RUN_TIMEOUT).unwrap();
        assert_eq!(done.code(), Some(2), "{bad:?}: {}", done.stderr);
    }
}
