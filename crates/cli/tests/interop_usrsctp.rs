//! Our AMF against an SCTP stack we did not write: Debian's libusrsctp, driven by
//! `tests/interop/usrsctp_ngap.c` playing a gNB. It sends an NG Setup Request on stream 0
//! with PPID 60 and must receive an NG Setup Response, over UDP encapsulation on loopback
//! and over native SCTP between two namespaces (root).
#![allow(clippy::unwrap_used)]

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::{ng_setup_request, num, Amf};
use proto::ngap::{self, MessageKind, NgSetupResponse};
use testkit::netns::{Namespace, Pair, Side};
use testkit::privilege;
use testkit::process::run_timeout;
use testkit::usrsctp::{self, Mode, Recv};

/// Checks the peer's received message is a valid NG Setup Response on stream 0, PPID 60.
fn assert_ng_setup_response(r: &Recv) {
    assert_eq!(r.ppid, 60, "TS 38.412 §7: NGAP PPID");
    assert_eq!(r.sid, 0, "NG Setup answered on the stream it came on");
    let pdu = ngap::decode(&r.data).unwrap();
    assert_eq!(pdu.kind(), MessageKind::NgSetupResponse, "{pdu:?}");
    let rsp = NgSetupResponse::parse(&pdu).unwrap();
    assert!(!rsp.amf_name.is_empty());
    assert!(!rsp.served_guamis.is_empty());
}

#[test]
fn usrsctp_gnb_over_udp_encapsulation() {
    // Unprivileged this runs on the machine's loopback with addresses of its own; as root in
    // a private namespace, where usrsctp's raw socket sees nobody else's SCTP.
    let ns = if testkit::privilege::has_net_privilege() {
        Some(Namespace::new("iopudp").unwrap())
    } else {
        None
    };
    let netns = ns.as_ref().map(Namespace::name);
    let amf_ip = Ipv4Addr::new(127, 0, 0, 64);
    const AMF_UDP: u16 = 19_964;
    const PEER_UDP: u16 = 19_965;
    let amf = Amf::start(
        netns,
        &[
            "--transport",
            "udp",
            "--n2-addr",
            "127.0.0.64",
            "--udp-port",
            "19964",
        ],
    );
    let peer = usrsctp::build_peer().unwrap();
    let mut cmd = testkit::process::in_netns(netns, &peer);
    cmd.args(usrsctp::client_args(
        Mode::Udp {
            local: PEER_UDP,
            remote: AMF_UDP,
        },
        amf_ip,
        38412,
        &ng_setup_request(0x101),
    ));
    let done = run_timeout(&mut cmd, Duration::from_secs(20)).unwrap();
    let amf_log = amf.stderr();
    assert_eq!(
        done.code(),
        Some(0),
        "usrsctp peer failed: {}\nAMF log:\n{amf_log}",
        done.stderr
    );
    assert_ng_setup_response(&usrsctp::parse_recv(&done.stdout).unwrap());
    let (_, a) = amf.stop();
    assert_eq!(num(&a, "n2.ng_setup_ok"), 1, "AMF report: {a}");
    assert_eq!(num(&a, "sctp.bad_checksum"), 0, "AMF report: {a}");
}

#[test]
fn usrsctp_gnb_over_raw_sctp() {
    if !privilege::require("interop_usrsctp raw") {
        return;
    }
    let pair = Pair::new("iopraw").unwrap();
    let amf_ip = pair.addr(Side::A);
    let amf = Amf::start(
        Some(pair.name(Side::A)),
        &["--transport", "raw", "--n2-addr", &amf_ip.to_string()],
    );
    let peer = usrsctp::build_peer().unwrap();
    // The peer's raw socket sees every SCTP packet of its namespace: it lives in B, alone.
    let mut cmd = pair.exec(Side::B, &peer);
    cmd.args(usrsctp::client_args(
        Mode::Raw,
        amf_ip,
        38412,
        &ng_setup_request(0x102),
    ));
    let done = run_timeout(&mut cmd, Duration::from_secs(20)).unwrap();
    let amf_log = amf.stderr();
    assert_eq!(
        done.code(),
        Some(0),
        "usrsctp peer failed: {}\nAMF log:\n{amf_log}",
        done.stderr
    );
    assert_ng_setup_response(&usrsctp::parse_recv(&done.stdout).unwrap());
    let (_, a) = amf.stop();
    assert_eq!(num(&a, "n2.ng_setup_ok"), 1, "AMF report: {a}");
    assert_eq!(num(&a, "sctp.bad_checksum"), 0, "AMF report: {a}");
}
