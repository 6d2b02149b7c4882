//! The AMF's bound on N2 associations over real sockets (DESIGN.md principle 8): with
//! `limits.n2_max_associations = 1`, a second gNB's INIT is answered with ABORT "Out of
//! Resource" (RFC 9260 §3.3.10.4), the first association is untouched, and the refusal is
//! counted in the run report and on `/metrics`.
#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use sbi::{NfType, StaticDirectory};
use sctp::{CloseReason, Endpoint, EndpointConfig, ErrorCause, Event};
use sctp_io::{SctpSocket, Transport};
use steer5g_config::{Config, Transport as TransportKind};
use steer5g_core::{BpfPolicy, Core, CoreOptions, SbiMode};

const DEADLINE: Duration = Duration::from_secs(20);

#[test]
fn associations_beyond_the_limit_are_aborted_out_of_resource() {
    let dir = tempfile::tempdir().unwrap();
    let ip = |host: u8| Ipv4Addr::new(127, 0, 91, host);
    let mut config = Config::default();
    config.n2.addr = ip(1);
    config.n2.udp_port = 0;
    config.n2.transports = vec![TransportKind::Udp];
    config.set_limit("n2_max_associations=1").unwrap();
    let mut directory = StaticDirectory::new();
    directory.set(NfType::Amf, format!("http://{}:7777", ip(5)));
    directory.set(NfType::Ausf, format!("http://{}:7777", ip(11)));
    directory.set(NfType::Udm, format!("http://{}:7777", ip(12)));
    let mut opts = CoreOptions::new(dir.path().to_owned());
    opts.sbi = SbiMode::Inproc;
    opts.config = config.clone();
    opts.directory = directory;
    opts.bpf = BpfPolicy::Off;
    let core = Core::start(opts).unwrap();
    let amf = core.listening().n2.first().unwrap().1;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (first, second) = rt.block_on(async {
        let transport = Transport::bind_udp(SocketAddrV4::new(ip(100), 0)).unwrap();
        let mut sock = SctpSocket::new(
            transport,
            Endpoint::new(EndpointConfig {
                rng_seed: 5,
                ..EndpointConfig::default()
            }),
        );
        let now = Instant::now();
        let a = sock
            .endpoint_mut()
            .connect(now, amf, 42_001, config.n2.sctp_port)
            .unwrap();
        let mut first = None;
        let mut second = None;
        let mut b = None;
        let deadline = Instant::now() + DEADLINE;
        while second.is_none() && Instant::now() < deadline {
            sock.drive(Some(deadline)).await.unwrap();
            while let Some((id, ev)) = sock.endpoint_mut().poll_event() {
                match ev {
                    // Only once the first is up does the second try: the limit is then
                    // reached.
                    Event::Connected { .. } if id == a => {
                        first = Some(Ok(()));
                        b = Some(
                            sock.endpoint_mut()
                                .connect(Instant::now(), amf, 42_002, config.n2.sctp_port)
                                .unwrap(),
                        );
                    }
                    Event::Closed { reason } if id == a => first = Some(Err(reason)),
                    Event::Connected { .. } if Some(id) == b => second = Some(Ok(())),
                    Event::Closed { reason } if Some(id) == b => second = Some(Err(reason)),
                    _ => {}
                }
            }
        }
        (first, second)
    });
    assert_eq!(first, Some(Ok(())), "the first association");
    assert_eq!(
        second,
        Some(Err(CloseReason::AbortedByPeer {
            causes: vec![ErrorCause::OutOfResource]
        })),
        "the second association"
    );
    // The worker publishes its counters at the end of the loop turn that refused the
    // INIT, which may come after the ABORT reached us: look until it is there.
    let want = "steer5g_sctp_associations_refused_total{worker=\"0\"} 1\n";
    let deadline = Instant::now() + DEADLINE;
    let mut page = core.metrics_page();
    while !page.contains(want) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        page = core.metrics_page();
    }
    assert!(page.contains(want), "{page}");
    let report = core.stop().unwrap();
    let udp = report
        .n2
        .sctp
        .iter()
        .find(|(k, _)| *k == TransportKind::Udp)
        .unwrap();
    assert_eq!(udp.1.associations_refused, 1);
    assert_eq!(udp.1.associations_established, 1);
    assert_eq!(report.counters_total().sctp_associations_refused, 1);
    assert!(report.summary().contains(&("sctp_associations_refused", 1)));
}
