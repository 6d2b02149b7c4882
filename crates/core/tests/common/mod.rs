//! gNB and UE emulators (`ran`) driving UEs through a real core, shared by the PDU session
//! and the user-plane tests: a store of generated subscribers and their UEs, and one
//! driver that registers every UE, establishes one PDU session each, hands the sessions to
//! the test once all are up, then releases (or deregisters) and waits for the UPF's rules
//! to go.
#![allow(clippy::unwrap_used, dead_code)]

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use proto::ids::defaults;
use ran::gnb::{Gnb, GnbConfig, GnbEvent, GnbUeEvent, GnbUes};
use ran::ue::{RegistrationKind, SessionRequest, SuciScheme, Ue, UeConfig, UeEvent};
use ran::userplane::UpSession;
use rand::SeedableRng;
use sctp::{Endpoint, EndpointConfig, Event};
use sctp_io::{SctpSocket, Transport};
use store::{Profile, RedbStore, SubscriberStore};

const NGAP_PPID: u32 = 60;
const DEADLINE: Duration = Duration::from_secs(30);

/// A data directory holding `n` generated subscribers and the home network keys, and a
/// UE emulator for each (SUCI Profile A).
pub(crate) struct Subscribers {
    /// The core's data directory.
    pub(crate) dir: tempfile::TempDir,
    /// One UE per subscriber.
    pub(crate) ues: Vec<Ue>,
}

/// Generates `n` subscribers from `seed` into a fresh data directory.
pub(crate) fn subscribers(seed: u64, n: usize) -> Subscribers {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let subs = store::generate::generate("imsi-001010000000001", n as u64, &mut rng).unwrap();
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
    let ues = subs
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
    Subscribers { dir, ues }
}

/// How the sessions end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// The UE releases its session, then deregisters.
    Release,
    /// The UE deregisters with its session up: the AMF releases the SM context.
    Deregister,
    /// The UE asks for a DNN the SMF does not serve: rejected, then deregisters.
    Reject,
}

/// What the UEs, gNB and UPF saw.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) registered: usize,
    pub(crate) established: usize,
    pub(crate) rejected: usize,
    /// Sessions the test checked at the UPF (rules, or traffic) once all were up.
    pub(crate) upf_checked: usize,
    pub(crate) released_sessions: usize,
    pub(crate) deregistered: usize,
    pub(crate) released: usize,
    /// Distinct UE addresses handed out.
    pub(crate) addresses: usize,
    /// UPF rules left after the releases.
    pub(crate) rules_left: usize,
    pub(crate) failures: Vec<String>,
}

/// Where the emulated gNB stands.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RanSide {
    /// Local address of the gNB's SCTP (UDP encapsulation) socket.
    pub(crate) local: Ipv4Addr,
    /// The AMF's N2 address (UDP encapsulation) and SCTP port.
    pub(crate) amf: SocketAddr,
    pub(crate) sctp_port: u16,
    /// The gNB's N3 address announced in DL F-TEIDs (`None`: the emulator's default).
    pub(crate) gnb_n3: Option<Ipv4Addr>,
    /// The UPF's N3 address every UL F-TEID must carry.
    pub(crate) upf_n3: Ipv4Addr,
}

/// What the test does at the UPF.
pub(crate) trait UpfCheck {
    /// Every session is up (`sessions`, one per UE in UE order of establishment): check
    /// the UPF (count into `out.upf_checked`, push failures) and return true, or return
    /// false to be asked again shortly (rules not there yet).
    fn established(&mut self, sessions: &[UpSession], out: &mut Outcome) -> bool;
    /// UPF rules still held for these UE addresses (and any uplink rule at all).
    fn rules_left(&self, ips: &[Ipv4Addr]) -> usize;
}

/// Registers every UE, establishes one session each, lets `check` look at the UPF, then
/// ends the sessions per `plan` and waits (bounded) for the UPF's rules to go.
pub(crate) async fn drive(
    side: RanSide,
    mut ues: Vec<Ue>,
    plan: Plan,
    check: &mut dyn UpfCheck,
) -> Outcome {
    let transport = Transport::bind_udp(SocketAddrV4::new(side.local, 0)).unwrap();
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
    if let Some(n3) = side.gnb_n3 {
        n2ues.set_n3_address(n3);
    }
    let assoc = sock
        .endpoint_mut()
        .connect(Instant::now(), side.amf, 38412, side.sctp_port)
        .unwrap();
    let mut out = Outcome::default();
    let mut ready = false;
    let mut pending: Vec<(u16, Vec<u8>)> = Vec::new();
    // Per UE: its address, as its PDU SESSION ESTABLISHMENT ACCEPT gave it.
    let mut ue_ips: HashMap<u64, Ipv4Addr> = HashMap::new();
    let mut all_ips = Vec::new();
    let mut checked = false;
    let deadline = Instant::now() + DEADLINE;
    while out.released < ues.len() && Instant::now() < deadline {
        // Once every session is up at the UE and the gNB, hand them to the check, then
        // have every UE end its session.
        let gnb_up = n2ues.sessions().len();
        if !checked && out.established == ues.len() && gnb_up == ues.len() {
            let sessions: Vec<UpSession> = n2ues
                .sessions()
                .iter()
                .filter_map(|s| ue_ips.get(&s.ue).map(|ip| UpSession::new(*ip, s)))
                .collect();
            if check.established(&sessions, &mut out) {
                checked = true;
                for key in ue_ips.keys() {
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
                                        if let Some(ip) = ue_ip {
                                            ue_ips.insert(key, ip);
                                        }
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
                                if s.upf.addr != side.upf_n3 {
                                    out.failures.push(format!("UPF N3 {:?}", s.upf));
                                }
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
    all_ips.sort();
    all_ips.dedup();
    // The SMF deletes the UPF's sessions after the N2 side is done (on deregistration, once
    // the UE context is released): give that a bounded while.
    let settle = Instant::now() + Duration::from_secs(5);
    while check.rules_left(&all_ips) > 0 && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    out.addresses = all_ips.len();
    out.rules_left = check.rules_left(&all_ips);
    out
}
