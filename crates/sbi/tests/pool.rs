//! The shard-aware pool's socket work, without BPF: a connection for owner `s` leaves from a
//! port of `s`'s sequence in the client's slice, a taken port is stepped over to the next
//! one of the same residue, and short connections rotate through the sequence. The test's
//! listener only accepts and looks at the peer's port; the requests themselves fail.

#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::Duration;

use http::Method;
use sbi::{ClientConfig, Owner, PortPlan, SbiClient};

fn client(plan: PortPlan, short: bool) -> SbiClient {
    SbiClient::new(ClientConfig {
        ports: Some(plan),
        short_connections: short,
        timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    })
}

/// Sends one request to `listener` for `owner` and returns the source port the listener
/// saw. The listener closes the connection at once, so the request itself fails.
fn port_of_one_request(c: &SbiClient, listener: &TcpListener, owner: Owner) -> u16 {
    let addr = listener.local_addr().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let accept = listener.try_clone().unwrap();
    let seen = std::thread::spawn(move || accept.accept().unwrap().1.port());
    let uri = format!("http://{addr}/nudm-sdm/v2/imsi-001010000000001/nssai");
    let r = rt.block_on(c.request_to(Method::GET, &uri, None, Some(owner)));
    assert!(r.is_err(), "the listener speaks no HTTP/2");
    seen.join().unwrap()
}

#[test]
fn connections_leave_from_the_owners_ports() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let plan = PortPlan::in_range(1, 2, 24_000..24_400).unwrap();
    for workers in [2u16, 3] {
        for w in 0..workers {
            let owner = Owner::new(w, workers).unwrap();
            let c = client(plan.clone(), true);
            let port = port_of_one_request(&c, &listener, owner);
            assert!(plan.slice().contains(&port), "{port}");
            assert_eq!(port % workers, w, "port {port} for {owner:?}");
            assert_eq!(c.stats().steered, 1);
        }
    }
}

#[test]
fn a_taken_port_is_stepped_over_within_the_residue() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let plan = PortPlan::in_range(0, 1, 24_400..24_500).unwrap();
    let owner = Owner::new(1, 4).unwrap();
    let first = plan.nth_port(owner, 0).unwrap();
    // A listening socket holds the first port of the owner's sequence.
    let _squatter = TcpListener::bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, first))).unwrap();
    let c = client(plan.clone(), false);
    let port = port_of_one_request(&c, &listener, owner);
    assert_eq!(port, plan.nth_port(owner, 1).unwrap());
    assert_eq!(port % 4, 1);
    assert_eq!(c.stats().ports_skipped, 1);
}

#[test]
fn short_connections_rotate_through_the_sequence() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let plan = PortPlan::in_range(0, 1, 24_500..24_520).unwrap();
    let owner = Owner::new(0, 2).unwrap();
    assert_eq!(plan.count_for(owner), 10);
    let c = client(plan.clone(), true);
    let ports: Vec<u16> = (0..12)
        .map(|_| port_of_one_request(&c, &listener, owner))
        .collect();
    let seq: Vec<u16> = plan.ports_for(owner).collect();
    let expected: Vec<u16> = seq.iter().cycle().take(12).copied().collect();
    assert_eq!(ports, expected);
}

#[test]
fn without_a_plan_or_an_owner_requests_are_unsteered() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let c = SbiClient::new(ClientConfig {
        timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    });
    let accept = listener.try_clone().unwrap();
    let t = std::thread::spawn(move || drop(accept.accept().unwrap()));
    let uri = format!("http://{addr}/x");
    let owner = Owner::new(0, 2);
    assert!(rt
        .block_on(c.request_to(Method::GET, &uri, None, owner))
        .is_err());
    t.join().unwrap();
    assert_eq!((c.stats().steered, c.stats().unsteered), (0, 1));
}
