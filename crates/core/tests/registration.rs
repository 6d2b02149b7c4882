//! Registrations end to end through a real core: the test runs gNB and UE emulators
//! (`ran`, planned by `testkit::sim::Fleet`) over SCTP on loopback against `Core::start`,
//! with real subscribers in a redb store and SUCIs concealed with Profile A under the data
//! directory's home network key. What is left here needs the sockets: the mesh and h2c of
//! a real two-worker core, short connections through the `sk_reuseport` program, both N2
//! transports, and starting and stopping the process. The mode matrix (1 to 3 workers,
//! sharded and locked, h2c and in-process) and its counters run in the simulator
//! (`crates/testkit/tests/sim.rs`).
#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use ran::gnb::GnbConfig;
use ran::ue::Ue;
use sbi::{NfType, StaticDirectory};
use sctp_io::Transport;
use steer5g_config::Transport as TransportKind;
use steer5g_core::{Core, CoreOptions, CoreReport, SbiMode, StateMode};

mod common;

const UES: usize = 20;
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
    run_on(net, workers, state, sbi, UES, false, Link::Udp)
}

/// How the gNB reaches the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// The core serves UDP encapsulation only.
    Udp,
    /// The core serves both; the gNB uses UDP encapsulation.
    UdpOfBoth,
    /// The core serves both; the gNB uses raw IP.
    RawOfBoth,
}

#[allow(clippy::too_many_arguments)]
fn run_on(
    net: u8,
    workers: u16,
    state: StateMode,
    sbi: SbiMode,
    ues: usize,
    short_connections: bool,
    link: Link,
) -> (Outcome, CoreReport) {
    let subs = common::subscribers(u64::from(net), ues);
    let mut opts = common::core_options(net, subs.dir.path(), workers, state, sbi);
    opts.config.n2.transports = match link {
        Link::Udp => vec![TransportKind::Udp],
        Link::UdpOfBoth | Link::RawOfBoth => vec![TransportKind::Raw, TransportKind::Udp],
    };
    opts.short_connections = short_connections;
    let sctp_port = opts.config.n2.sctp_port;
    let core = Core::start(opts).unwrap();
    let want = if link == Link::RawOfBoth {
        TransportKind::Raw
    } else {
        TransportKind::Udp
    };
    let n2 = common::n2_addr(&core, want);
    let local = Ipv4Addr::new(127, 0, net, 100);
    let rt = common::runtime();
    let outcome = rt.block_on(drive_ues(local, n2, sctp_port, subs.ues, want));
    let report = core.stop().unwrap();
    (outcome, report)
}

async fn drive_ues(
    local: Ipv4Addr,
    amf: SocketAddr,
    sctp_port: u16,
    ues: Vec<Ue>,
    kind: TransportKind,
) -> Outcome {
    let (transport, amf) = match kind {
        TransportKind::Raw => (
            Transport::bind_raw(local).unwrap(),
            SocketAddr::new(amf.ip(), 0),
        ),
        TransportKind::Udp => (
            Transport::bind_udp(SocketAddrV4::new(local, 0)).unwrap(),
            amf,
        ),
    };
    let (mut sock, assoc) = common::gnb_socket_on(transport, amf, 38412, sctp_port, 99);
    let (fleet, _, ok) =
        common::register_deregister(&mut sock, assoc, GnbConfig::default(), ues, DEADLINE).await;
    let s = fleet.summary();
    let mut failures = s.failures;
    if !ok {
        failures.push("association closed or deadline".into());
    }
    Outcome {
        registered: s.registered,
        deregistered: s.deregistered,
        released: s.released,
        failures,
    }
}

fn expect_all(outcome: &Outcome, report: &CoreReport) {
    expect_n(outcome, report, UES)
}

fn expect_n(outcome: &Outcome, report: &CoreReport, n: usize) {
    let want = Outcome {
        registered: n,
        deregistered: n,
        released: n,
        failures: Vec::new(),
    };
    assert_eq!(outcome, &want);
    let amf = report.amf_total();
    assert_eq!(amf.registrations, n as u64);
    assert_eq!(amf.deregistrations, n as u64);
    assert_eq!(amf.ues_created, n as u64);
    assert_eq!(report.n2.n2.ng_setup_ok, 1);
    let vectors: u64 = report.workers.iter().map(|w| w.udm.vectors).sum();
    assert_eq!(vectors, n as u64);
}

#[test]
fn sharded_h2c_two_workers_hand_off() {
    let (o, r) = run_case(32, 2, StateMode::Sharded, SbiMode::H2c);
    expect_all(&o, &r);
    let c = r.counters_total();
    assert!(c.ngap_handed_off > 0, "{c:?}");
    assert_eq!(c.ngap_handed_off, c.ngap_from_mesh);
    assert!(c.sbi_served > 0);
    assert_eq!(r.locks.acquisitions, 0);
}

#[test]
fn idle_core_starts_and_stops_and_refuses_a_taken_address() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let opts = |d: &std::path::Path| {
        let mut o = CoreOptions::new(d.to_owned());
        o.workers = 2;
        o.config.n2.addr = Ipv4Addr::new(127, 0, 39, 1);
        o.config.n2.transports = vec![TransportKind::Udp];
        let mut dir = StaticDirectory::new();
        dir.set(NfType::Ausf, "http://127.0.39.11:7777");
        dir.set(NfType::Udm, "http://127.0.39.12:7777");
        o.directory = dir;
        o
    };
    let core = Core::start(opts(dir.path())).unwrap();
    assert_eq!(core.listening().n2.len(), 1);
    assert_eq!(
        core.listening().ausf,
        Some("127.0.39.11:7777".parse().unwrap())
    );
    // The N2 UDP port is taken: the second core says so and leaves nothing running.
    assert!(Core::start(opts(other.path())).is_err());
    let r = core.stop().unwrap();
    // A worker writes its report as the last thing it does; one dropped when the stop
    // grace ran out (it ignored the stop) would leave no report behind.
    assert_eq!(
        r.workers.iter().map(|w| w.worker).collect::<Vec<_>>(),
        [0, 1],
        "a worker did not end by itself"
    );
    assert_eq!(r.amf_total().ues_created, 0);
    assert_eq!(r.sqn_writes, 0);
    // Stopped, it holds none of its addresses: a core starts on all of them again.
    let again = Core::start(opts(other.path())).unwrap();
    assert_eq!(again.listening().n2.len(), 1);
    assert_eq!(again.stop().unwrap().workers.len(), 2);
}

#[test]
fn many_ues_on_two_sharded_workers_with_short_connections() {
    let (o, r) = run_on(
        40,
        2,
        StateMode::Sharded,
        SbiMode::H2c,
        200,
        true,
        Link::Udp,
    );
    expect_n(&o, &r, 200);
    let c = r.counters_total();
    if r.sbi_kernel.is_empty() {
        // No sk_reuseport program: the kernel's hash spreads connections, workers hop.
        assert!(c.sbi_handed_off > 0, "{c:?}");
    } else {
        // Shard-aware short connections through the program: every SBI request reached
        // its owner with no hop.
        assert!(c.sbi_kernel_steered > 0 && c.sbi_pool_steered > 0, "{c:?}");
        assert_eq!((c.sbi_handed_off, c.sbi_misdirected), (0, 0), "{c:?}");
    }
}

#[test]
fn both_transports_serve_registrations() {
    let (o, r) = run_on(
        42,
        2,
        StateMode::Sharded,
        SbiMode::Inproc,
        10,
        false,
        Link::UdpOfBoth,
    );
    expect_n(&o, &r, 10);
    assert_eq!(r.n2.sctp.len(), 2);
    if raw_allowed() {
        let (o, r) = run_on(
            43,
            2,
            StateMode::Sharded,
            SbiMode::Inproc,
            10,
            false,
            Link::RawOfBoth,
        );
        expect_n(&o, &r, 10);
    }
}

/// Raw IP sockets need CAP_NET_RAW (KERNEL.md).
fn raw_allowed() -> bool {
    let rt = common::runtime();
    rt.block_on(async { Transport::bind_raw(Ipv4Addr::new(127, 0, 44, 9)).is_ok() })
}
