//! Wireshark judges our N2 packets: captures of a few gNBs' NG Setups (SCTP over UDP on a
//! namespace's loopback, and native SCTP across a veth pair) must have a correct CRC32c on
//! every SCTP packet, NGSetupRequest and NGSetupResponse decoded as NGAP, no malformed
//! packet and no expert error. Needs root (capture, namespaces).
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::time::Duration;

use common::{assert_all_ok, ran, Amf, Scratch};
use procs::raw_ng_setups;
use testkit::capture::Capture;
use testkit::netns::{Namespace, Pair, Side};
use testkit::privilege;
use testkit::tshark::{self, Report};

const GNBS: usize = 4;

fn assert_clean(r: &Report) {
    println!("{}", r.summary());
    for w in &r.warnings {
        println!("tshark warning: {w}");
    }
    assert!(
        r.sctp_packets >= GNBS * 6,
        "too few SCTP packets captured:\n{}",
        r.summary()
    );
    assert_eq!(r.bad_checksum, 0, "bad SCTP checksums:\n{}", r.summary());
    assert_eq!(
        r.unverified_checksum,
        0,
        "checksums not verified:\n{}",
        r.summary()
    );
    assert_eq!(
        r.ngap_count("NGSetupRequest"),
        GNBS,
        "{:?}\n{}",
        r.ngap,
        r.summary()
    );
    assert_eq!(
        r.ngap_count("NGSetupResponse"),
        GNBS,
        "{:?}\n{}",
        r.ngap,
        r.summary()
    );
    r.assert_decodes_cleanly();
}

#[test]
fn udp_encapsulated_ng_setup_is_clean() {
    if !privilege::require("capture_tshark udp") {
        return;
    }
    let ns = Namespace::new("captudp").unwrap();
    let dir = Scratch::new("capture-udp");
    let path = dir.0.join("n2-udp.pcapng");
    // 9899 is the registered port: tshark decodes it as SCTP without being told.
    let cap = Capture::start(Some(ns.name()), "lo", "udp port 9899", &path).unwrap();
    let amf = Amf::start(
        Some(ns.name()),
        &[
            "--transport",
            "udp",
            "--n2-addr",
            "127.0.0.5",
            "--udp-port",
            "9899",
        ],
    );
    let (done, v) = ran(
        Some(ns.name()),
        &[
            "--gnbs",
            &GNBS.to_string(),
            "--transport",
            "udp",
            "--amf",
            "127.0.0.5:9899",
            "--timeout",
            "20",
        ],
        Duration::from_secs(60),
    );
    assert_all_ok(&done, &v, GNBS as u64);
    amf.stop();
    let path = cap.stop().unwrap();
    assert_clean(&tshark::check(&path, &[]).unwrap());
}

#[test]
fn raw_ng_setup_across_namespaces_is_clean() {
    if !privilege::require("capture_tshark raw") {
        return;
    }
    let pair = Pair::new("captraw").unwrap();
    let dir = Scratch::new("capture-raw");
    let path = dir.0.join("n2-raw.pcapng");
    let cap = Capture::start(
        Some(pair.name(Side::A)),
        pair.iface(Side::A),
        "ip proto 132",
        &path,
    )
    .unwrap();
    let (amf, _) = raw_ng_setups(&pair, GNBS as u64);
    amf.stop();
    let path = cap.stop().unwrap();
    assert_clean(&tshark::check(&path, &[]).unwrap());
}
