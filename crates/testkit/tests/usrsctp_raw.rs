//! The kit's pieces together over native SCTP: two libusrsctp peers in the two namespaces of
//! a veth pair (raw IP protocol 132), an nftables counter on SCTP in one namespace, and a
//! capture on the veth judged by tshark. Needs root.
#![allow(clippy::unwrap_used)]

use std::net::Ipv4Addr;
use std::time::Duration;

use testkit::capture::Capture;
use testkit::netns::{Pair, Side};
use testkit::nft::{self, Matcher};
use testkit::privilege;
use testkit::tshark::{self, Severity};
use testkit::usrsctp::{self, Mode, NG_SETUP_FAILURE};

#[test]
fn raw_exchange_across_a_pair_is_counted_and_clean() {
    if !privilege::require("usrsctp raw across a pair") {
        return;
    }
    let peer = usrsctp::build_peer().unwrap();
    let pair = Pair::new("tkraw").unwrap();
    let dir = std::env::temp_dir().join(format!("testkit-raw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cap = Capture::start(
        Some(pair.name(Side::A)),
        pair.iface(Side::A),
        "ip proto 132",
        &dir.join("raw.pcapng"),
    )
    .unwrap();
    // 0% loss: the rule only counts what reaches B's input hook.
    let seen_in_b = nft::loss(Some(pair.name(Side::B)), 0, &Matcher::Sctp).unwrap();
    let a: Ipv4Addr = pair.addr(Side::A);
    let (client, server) = usrsctp::exchange(
        pair.exec(Side::A, &peer),
        pair.exec(Side::B, &peer),
        (Mode::Raw, Mode::Raw),
        a,
        &NG_SETUP_FAILURE,
        &NG_SETUP_FAILURE,
        Duration::from_secs(20),
    )
    .unwrap();
    assert_eq!(client.code(), Some(0), "{}", client.stderr);
    assert_eq!(
        usrsctp::parse_recv(&client.stdout).unwrap().data,
        NG_SETUP_FAILURE
    );
    let server = server.wait_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(server.code(), Some(0), "{}", server.stderr);

    let c = seen_in_b.counters().unwrap();
    // INIT_ACK, COOKIE_ACK, DATA, SACK, SHUTDOWN_ACK at least.
    assert!(c.matched >= 5, "{c:?}");
    assert_eq!(c.dropped, 0);

    let path = cap.stop().unwrap();
    let r = tshark::check(&path, &[]).unwrap();
    println!("{}", r.summary());
    assert_eq!(r.sctp_packets, r.total());
    assert!(r.total() >= 9);
    assert_eq!(
        r.bad_checksum, 0,
        "TX offload is off, so veth carries full checksums"
    );
    assert_eq!(r.ngap_count("NGSetupFailure"), 2);
    assert_eq!(
        (r.malformed, r.expert_count(Severity::Error)),
        (0, 0),
        "{:?}",
        r.errors
    );
    let _ = std::fs::remove_dir_all(&dir);
}
