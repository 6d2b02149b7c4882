//! The SMF's N4 failures end to end through a real core: gNB and UE emulators (`ran`) over
//! SCTP with UDP encapsulation register each UE and ask for a PDU session, while a bad UPF
//! answers every establishment wrongly: a real UPF (`upf::service::UpfService` over a
//! `MemoryDatapath`) behind a PFCP proxy that strips the Node ID from every other Session
//! Establishment Response (the answer no longer decodes) and the Created PDR from the
//! others (accepted, but no tunnel for the gNB). Every UE must get its reject and
//! deregister, and afterwards the UPF must hold no session and the SMF no SM context.
//! Beside it, an AMF whose SMF cannot be reached at all answers each UE with 5GMM cause
//! #90.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use common::{drive, Outcome, Plan, RanSide, UpfCheck};
use pfcp::damage::without_ie;
use pfcp::{Message, MessageType, PfcpMessage};
use ran::userplane::UpSession;
use sbi::NfType;
use steer5g_config::{Config, Transport as TransportKind};
use steer5g_core::{
    Core, CoreHandle, CoreOptions, CoreReport, NfSet, SbiMode, SmfOptions, StateMode,
};
use upf::service::{ServiceOptions, ServiceReport, UpfService};
use upf::MemoryDatapath;

const UES: usize = 6;

/// No session may come up here: the UPF's rules are only counted.
struct NoSessions(MemoryDatapath);

impl UpfCheck for NoSessions {
    fn established(&mut self, sessions: &[UpSession], out: &mut Outcome) -> bool {
        out.failures
            .push(format!("{} sessions came up", sessions.len()));
        true
    }

    fn rules_left(&self, ips: &[Ipv4Addr]) -> usize {
        common::memory_rules_left(&self.0, ips)
    }
}

/// The bad UPF's answers: every other establishment answer loses its Node ID, the others
/// their Created PDRs.
fn spoil(n: usize, msg: Vec<u8>) -> Vec<u8> {
    if n.is_multiple_of(2) {
        return without_ie(&msg, pfcp::ie::ty::NODE_ID);
    }
    let mut m = PfcpMessage::parse(&msg).unwrap();
    if let Message::SessionEstablishmentResponse(r) = &mut m.message {
        r.created_pdr.clear();
    }
    m.emit()
}

/// A PFCP proxy: the SMF's workers send to `front`; each SMF socket gets its own socket
/// towards the UPF (bound to the SMF's address, so the UPF sees the SMF's association), and
/// the UPF's Session Establishment Responses are spoilt on their way back.
struct Proxy {
    front: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<usize>>,
}

impl Proxy {
    fn start(ip: Ipv4Addr, smf_ip: Ipv4Addr, upf: SocketAddr) -> Self {
        let front = UdpSocket::bind((ip, 0)).unwrap();
        front.set_nonblocking(true).unwrap();
        let addr = front.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut back: HashMap<SocketAddr, UdpSocket> = HashMap::new();
            let mut buf = vec![0u8; 65_536];
            let mut spoilt = 0;
            while !halt.load(Ordering::Relaxed) {
                let mut moved = false;
                while let Ok((n, from)) = front.recv_from(&mut buf) {
                    moved = true;
                    let up = back.entry(from).or_insert_with(|| {
                        let s = UdpSocket::bind((smf_ip, 0)).unwrap();
                        s.connect(upf).unwrap();
                        s.set_nonblocking(true).unwrap();
                        s
                    });
                    let _ = up.send(&buf[..n]);
                }
                for (smf, up) in &back {
                    while let Ok(n) = up.recv(&mut buf) {
                        moved = true;
                        let mut msg = buf[..n].to_vec();
                        if msg.get(1) == Some(&MessageType::SessionEstablishmentResponse.value()) {
                            msg = spoil(spoilt, msg);
                            spoilt += 1;
                        }
                        let _ = front.send_to(&msg, smf);
                    }
                }
                if !moved {
                    // Idle: nothing to carry (this loop polls sockets; it orders nothing).
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            spoilt
        });
        Proxy {
            front: addr,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops it; how many establishment answers it spoilt.
    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn options(net: u8, workers: u16, dir: &std::path::Path) -> (CoreOptions, Config) {
    let ip = |host: u8| Ipv4Addr::new(127, 0, net, host);
    let mut config = Config::default();
    config.n2.addr = ip(1);
    config.n2.transports = vec![TransportKind::Udp];
    let mut opts = CoreOptions::new(dir.to_owned());
    opts.workers = workers;
    opts.state = StateMode::Sharded;
    opts.sbi = SbiMode::Inproc;
    opts.smf_sbi = SbiMode::Inproc;
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
    (opts, config)
}

fn run(
    net: u8,
    core: CoreHandle,
    config: &Config,
    ues: Vec<ran::ue::Ue>,
    dp: MemoryDatapath,
) -> (Outcome, CoreReport) {
    let ip = |host: u8| Ipv4Addr::new(127, 0, net, host);
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
    let side = RanSide {
        local: ip(100),
        amf: n2,
        sctp_port: config.n2.sctp_port,
        gnb_n3: None,
        upf_n3: ip(7),
    };
    let outcome = rt.block_on(drive(side, ues, Plan::Release, &mut NoSessions(dp)));
    (outcome, core.stop().unwrap())
}

/// Undecodable and unusable establishment answers: every UE rejected (#26 in its PDU
/// SESSION ESTABLISHMENT REJECT), every session the UPF accepted deleted again, no SM
/// context left.
#[test]
fn bad_upf_answers_leave_no_session_and_no_context() {
    let net = 76;
    let ip = |host: u8| Ipv4Addr::new(127, 0, net, host);
    let subs = common::subscribers(u64::from(net), UES);
    let dp = MemoryDatapath::new();
    let upf = UpfService::start(
        ServiceOptions::new(SocketAddr::from((ip(7), 0)), ip(7)),
        Box::new(dp.clone()),
    )
    .unwrap();
    let proxy = Proxy::start(ip(8), ip(4), upf.local_addr());
    let (mut opts, config) = options(net, 2, subs.dir.path());
    opts.smf = Some(SmfOptions {
        upf: proxy.front,
        pfcp_ip: ip(4),
        ..SmfOptions::default()
    });
    let core = Core::start(opts).unwrap();
    let (o, r) = run(net, core, &config, subs.ues, dp.clone());
    let spoilt = proxy.stop();
    let upf: ServiceReport = upf.stop().unwrap();

    assert_eq!(o, common::all_rejected(UES));
    assert_eq!(
        spoilt, UES,
        "every establishment answer went through the proxy"
    );
    let smf = r.workers.iter().fold((0, 0, 0, 0, 0), |t, w| {
        (
            t.0 + w.smf.rejected,
            t.1 + w.smf.pfcp_unparsed,
            t.2 + w.smf.abandoned_deleted,
            t.3 + w.smf.abandoned_delete_failed,
            t.4 + w.smf_contexts,
        )
    });
    let half = (UES / 2) as u64;
    assert_eq!(smf, (UES as u64, half, UES as u64, 0, 0), "{:?}", r.workers);
    assert_eq!(upf.stats.sessions_established, UES as u64);
    assert_eq!(upf.stats.sessions_deleted, UES as u64);
    assert_eq!(upf.sessions_at_stop, 0);
    assert_eq!(upf.entries_after, Some(upf::Entries::default()));
}

/// An AMF whose SMF cannot be reached (h2c to an address where nothing listens): each UE's
/// PDU SESSION ESTABLISHMENT REQUEST comes back with 5GMM cause #90 "payload was not
/// forwarded", the UE gives up on it and deregisters.
#[test]
fn an_unreachable_smf_is_reported_to_the_ue_with_cause_90() {
    let net = 77;
    let subs = common::subscribers(u64::from(net), UES);
    let (mut opts, config) = options(net, 2, subs.dir.path());
    opts.nfs = NfSet::ALL;
    opts.smf = None;
    opts.smf_sbi = SbiMode::H2c;
    let core = Core::start(opts).unwrap();
    let (o, r) = run(net, core, &config, subs.ues, MemoryDatapath::new());
    assert_eq!(o, common::all_rejected(UES));
    let (not_forwarded, failures) = r.workers.iter().fold((0, 0), |t, w| {
        (
            t.0 + w.amf_sessions.not_forwarded,
            t.1 + w.counters.call_failures,
        )
    });
    assert_eq!(not_forwarded, UES as u64);
    assert_eq!(failures, UES as u64);
}
