//! Our N2 against an SCTP stack we did not write: Debian's libusrsctp, driven by
//! `tests/interop/usrsctp_ngap.c`.
//!
//! - As a gNB against our AMF: it sends an NG Setup Request on stream 0 with PPID 60 and
//!   must receive an NG Setup Response, over UDP encapsulation on loopback and over native
//!   SCTP between two namespaces (root).
//! - As an AMF against our gNB emulator (`steer5g ran`): it answers the NG Setup Request
//!   with an NG Setup Response, and `ran` must report the setup done.
//!
//! usrsctp only reaches addresses that are configured on an interface, which on loopback
//! is 127.0.0.1 alone (not the rest of 127/8), so these tests use 127.0.0.1 with UDP ports of
//! their own (19964-19967).
#![allow(clippy::unwrap_used)]

mod common;

use std::net::Ipv4Addr;
use std::process::Command;
use std::time::Duration;

use common::{assert_all_ok, ng_setup_request, ng_setup_response, num, ran, Amf};
use proto::ngap::{self, MessageKind, NgSetupRequest, NgSetupResponse};
use testkit::netns::{Namespace, Pair, Side};
use testkit::privilege;
use testkit::process::{run_timeout, ChildGuard};
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

/// A private namespace when we may make one (then usrsctp's raw socket sees nobody else's
/// SCTP); else the machine's own loopback.
fn private_ns(tag: &str) -> Option<Namespace> {
    privilege::has_net_privilege().then(|| Namespace::new(tag).unwrap())
}

#[test]
fn usrsctp_gnb_over_udp_encapsulation() {
    const AMF_UDP: u16 = 19_964;
    const PEER_UDP: u16 = 19_965;
    let ns = private_ns("iopudp");
    let netns = ns.as_ref().map(Namespace::name);
    let amf = Amf::start(
        netns,
        &[
            "--transport",
            "udp",
            "--n2-addr",
            "127.0.0.1",
            "--udp-port",
            &AMF_UDP.to_string(),
        ],
    );
    let peer = usrsctp::build_peer().unwrap();
    let mut cmd = testkit::process::in_netns(netns, &peer);
    cmd.args(usrsctp::client_args(
        Mode::Udp {
            local: PEER_UDP,
            remote: AMF_UDP,
        },
        Ipv4Addr::LOCALHOST,
        38412,
        &ng_setup_request(0x101),
    ));
    peer_sets_up_with(cmd, amf);
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
    peer_sets_up_with(cmd, amf);
}

/// Runs the usrsctp gNB `peer` against `amf`: the peer gets its NG Setup Response, and the
/// AMF counts one setup and no bad checksum.
fn peer_sets_up_with(mut peer: Command, amf: Amf) {
    let done = run_timeout(&mut peer, Duration::from_secs(20)).unwrap();
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

/// Checks what the usrsctp AMF received from our gNB: an NG Setup Request, stream 0, PPID 60.
fn assert_ng_setup_request(server: &testkit::process::Finished) {
    assert_eq!(
        server.code(),
        Some(0),
        "usrsctp AMF failed: {}",
        server.stderr
    );
    let r = usrsctp::parse_recv(&server.stdout).unwrap();
    assert_eq!((r.sid, r.ppid), (0, 60));
    let pdu = ngap::decode(&r.data).unwrap();
    assert_eq!(pdu.kind(), MessageKind::NgSetupRequest, "{pdu:?}");
    NgSetupRequest::parse(&pdu).unwrap();
}

#[test]
fn our_gnb_against_usrsctp_amf_over_udp() {
    const PEER_UDP: u16 = 19_966;
    let ns = private_ns("iopamfu");
    let netns = ns.as_ref().map(Namespace::name);
    let peer = usrsctp::build_peer().unwrap();
    let mut server = ChildGuard::spawn(testkit::process::in_netns(netns, &peer).args(
        usrsctp::server_args(
            Mode::Udp {
                local: PEER_UDP,
                remote: 0,
            },
            Ipv4Addr::LOCALHOST,
            38412,
            &ng_setup_response(),
        ),
    ))
    .unwrap();
    server
        .wait_for_stderr("listening", Duration::from_secs(5))
        .unwrap();
    let (done, v) = ran(
        netns,
        &[
            "--gnbs",
            "1",
            "--transport",
            "udp",
            "--amf",
            &format!("127.0.0.1:{PEER_UDP}"),
            "--timeout",
            "10",
        ],
        Duration::from_secs(30),
    );
    assert_all_ok(&done, &v, 1);
    assert_ng_setup_request(&server.wait_timeout(Duration::from_secs(10)).unwrap());
}

#[test]
fn our_gnb_against_usrsctp_amf_over_raw_sctp() {
    if !privilege::require("interop_usrsctp raw, usrsctp as AMF") {
        return;
    }
    let pair = Pair::new("iopamfr").unwrap();
    let (amf_ip, ran_ip) = (pair.addr(Side::A), pair.addr(Side::B).to_string());
    let peer = usrsctp::build_peer().unwrap();
    let mut server = ChildGuard::spawn(pair.exec(Side::A, &peer).args(usrsctp::server_args(
        Mode::Raw,
        amf_ip,
        38412,
        &ng_setup_response(),
    )))
    .unwrap();
    server
        .wait_for_stderr("listening", Duration::from_secs(5))
        .unwrap();
    let (done, v) = ran(
        Some(pair.name(Side::B)),
        &[
            "--gnbs",
            "1",
            "--transport",
            "raw",
            "--amf",
            &amf_ip.to_string(),
            "--local-addr",
            &ran_ip,
            "--timeout",
            "10",
        ],
        Duration::from_secs(30),
    );
    assert_all_ok(&done, &v, 1);
    assert_ng_setup_request(&server.wait_timeout(Duration::from_secs(10)).unwrap());
}
