//! `steer5g upf` as a process: an SMF-like peer sets up an association and a session over
//! loopback UDP, SIGTERM stops it, and the `--json` report counts what happened and shows an
//! empty datapath.
#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::process::Command;
use std::time::Duration;

use pfcp::ie::NodeId;
use pfcp::requests::{self, SessionSpec};
use pfcp::{Message, PfcpMessage};
use testkit::process::ChildGuard;

fn request(
    sock: &UdpSocket,
    upf: SocketAddr,
    seq: u32,
    seid: Option<u64>,
    m: Message,
) -> PfcpMessage {
    sock.send_to(&PfcpMessage::new(seq, seid, m).emit(), upf)
        .unwrap();
    let mut buf = [0u8; 65_536];
    // Bounded: 50 reads of at most 200 ms each.
    for _ in 0..50 {
        let Ok((n, _)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let r = PfcpMessage::parse(&buf[..n]).unwrap();
        if r.header.sequence == seq {
            return r;
        }
    }
    panic!("no response to {seq}");
}

#[test]
fn upf_serves_pfcp_and_reports_json() {
    let mut child = ChildGuard::spawn(Command::new(env!("CARGO_BIN_EXE_steer5g")).args([
        "upf",
        "--pfcp",
        "127.0.0.1:0",
        "--n3",
        "127.0.0.1:2152",
        "--json",
    ]))
    .unwrap();
    child
        .wait_for_stderr("PFCP on", Duration::from_secs(20))
        .unwrap();
    let err = child.stderr_so_far();
    let addr = err
        .split("PFCP on ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap();
    let upf: SocketAddr = addr.parse().unwrap();

    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let node = NodeId::Ipv4(Ipv4Addr::LOCALHOST);
    let r = request(
        &sock,
        upf,
        1,
        None,
        requests::association_setup(node.clone(), 1),
    );
    assert!(matches!(r.message, Message::AssociationSetupResponse(_)));
    let spec = SessionSpec::new(node, 7, Ipv4Addr::LOCALHOST, Ipv4Addr::new(10, 45, 0, 1));
    let r = request(
        &sock,
        upf,
        2,
        Some(0),
        Message::SessionEstablishmentRequest(requests::establishment(&spec)),
    );
    let Message::SessionEstablishmentResponse(e) = r.message else {
        panic!("{r:?}")
    };
    assert_eq!(e.cause, pfcp::Cause::REQUEST_ACCEPTED);
    let r = request(&sock, upf, 3, Some(0x1234), requests::deletion());
    assert_eq!(r.header.seid, Some(0));

    let done = child.stop("TERM", Duration::from_secs(20)).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let v: serde_json::Value = serde_json::from_str(done.stdout.trim()).unwrap();
    assert_eq!(v["nf"], "upf");
    assert_eq!(v["datapath"], "none");
    assert_eq!(v["sessions"]["established"], 1);
    assert_eq!(v["sessions"]["at_stop"], 1);
    assert_eq!(v["causes_sent"]["65"], 1);
    assert_eq!(
        v["messages"]["received"]["session_establishment_request"],
        1
    );
    assert_eq!(v["entries_after_stop"]["uplink"], 0);
    assert_eq!(v["entries_after_stop"]["downlink"], 0);
    assert_eq!(v["entries_after_stop"]["usage"], 0);
}

#[test]
fn upf_bad_usage_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(["upf", "--workers", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(["upf", "--pfcp", "not-an-address"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `steer5g upf --datapath tun|xdp|afxdp` in a namespace of its own: the real paths come up (the
/// TUN device is created, the XDP programs and AF_XDP sockets attach to a veth pair), the process says which
/// path it runs, and it leaves no rule behind.
#[test]
fn real_datapaths_come_up_in_a_namespace() {
    if !testkit::privilege::require("a TUN device and XDP programs in a namespace") {
        return;
    }
    let ns = testkit::netns::Namespace::new("upfcmd").unwrap();
    let ip = |args: &[&str]| {
        let ok = Command::new("ip")
            .args(["-n", ns.name()])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip {args:?}");
    };
    ip(&["link", "add", "un3", "type", "veth", "peer", "name", "un6"]);
    ip(&["link", "set", "un3", "up"]);
    ip(&["link", "set", "un6", "up"]);
    for (path, extra, name) in [
        ("tun", vec!["--tun-name", "upft0"], "tun"),
        ("xdp", vec!["--n3-if", "un3", "--n6-if", "un6"], "xdp"),
        ("afxdp", vec!["--n3-if", "un3", "--n6-if", "un6"], "af_xdp"),
    ] {
        let out = ns
            .exec(env!("CARGO_BIN_EXE_steer5g"))
            .args(["--json", "upf", "--datapath", path, "--duration", "0.5"])
            .args(&extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{path}: {stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["datapath"], name, "{v}");
        let left = &v["entries_after_stop"];
        assert_eq!(left["uplink"], 0, "{v}");
        assert_eq!(left["downlink"], 0, "{v}");
        let said = match path {
            "tun" => "sockets/TUN path",
            "afxdp" => "AF_XDP copy mode on un3 (N3) and un6 (N6)",
            _ => "XDP fast path on un3 (N3) and un6 (N6)",
        };
        assert!(stderr.contains(said), "{path}: {stderr}");
    }
}
