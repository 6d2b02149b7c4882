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

/// Starts `steer5g upf ARGS` and waits for its PFCP address.
fn spawn_upf(args: &[&str]) -> (ChildGuard, SocketAddr) {
    let mut child =
        ChildGuard::spawn(Command::new(env!("CARGO_BIN_EXE_steer5g")).args(args)).unwrap();
    child
        .wait_for_stderr("PFCP on", Duration::from_secs(20))
        .unwrap();
    let err = child.stderr_so_far();
    let addr = err
        .split("PFCP on ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap();
    (child, addr.parse().unwrap())
}

/// An SMF-like peer on loopback, associated with the UPF at `upf` (sequence number 1).
fn associated_peer(upf: SocketAddr) -> (UdpSocket, NodeId) {
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
    assert!(
        matches!(r.message, Message::AssociationSetupResponse(_)),
        "{r:?}"
    );
    (sock, node)
}

/// An establishment of `spec`; the answer.
fn establish(
    sock: &UdpSocket,
    upf: SocketAddr,
    seq: u32,
    spec: &SessionSpec,
) -> pfcp::message::SessionEstablishmentResponse {
    let r = request(
        sock,
        upf,
        seq,
        Some(0),
        Message::SessionEstablishmentRequest(requests::establishment(spec)),
    );
    let Message::SessionEstablishmentResponse(e) = r.message else {
        panic!("{r:?}")
    };
    e
}

#[test]
fn upf_serves_pfcp_and_reports_json() {
    let (child, upf) = spawn_upf(&[
        "upf",
        "--pfcp",
        "127.0.0.1:0",
        "--n3",
        "127.0.0.1:2152",
        "--json",
    ]);

    let (sock, node) = associated_peer(upf);
    let spec = SessionSpec::new(node, 7, Ipv4Addr::LOCALHOST, Ipv4Addr::new(10, 45, 0, 1));
    let e = establish(&sock, upf, 2, &spec);
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
    assert_eq!(v["sessions"]["max"], upf::node::DEFAULT_MAX_SESSIONS);
    assert_eq!(v["sessions"]["refused_limit"], 0);
}

/// `--max-sessions` bounds the sessions of the rules-only path: the one past it gets PFCP
/// cause 75, and the report counts the refusal.
#[test]
fn max_sessions_answers_75_and_is_counted() {
    let (child, upf) = spawn_upf(&[
        "upf",
        "--pfcp",
        "127.0.0.1:0",
        "--n3",
        "127.0.0.1:2152",
        "--max-sessions",
        "2",
        "--json",
    ]);
    let (sock, node) = associated_peer(upf);
    let causes: Vec<pfcp::Cause> = (0..3u8)
        .map(|i| {
            let spec = SessionSpec::new(
                node.clone(),
                u64::from(i) + 1,
                Ipv4Addr::LOCALHOST,
                Ipv4Addr::new(10, 45, 0, i + 1),
            );
            establish(&sock, upf, u32::from(i) + 2, &spec).cause
        })
        .collect();
    assert_eq!(
        causes,
        [
            pfcp::Cause::REQUEST_ACCEPTED,
            pfcp::Cause::REQUEST_ACCEPTED,
            pfcp::Cause::NO_RESOURCES_AVAILABLE
        ]
    );
    let done = child.stop("TERM", Duration::from_secs(20)).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let v: serde_json::Value = serde_json::from_str(done.stdout.trim()).unwrap();
    assert_eq!(v["sessions"]["max"], 2, "{v}");
    assert_eq!(v["sessions"]["established"], 2, "{v}");
    assert_eq!(v["sessions"]["refused_limit"], 1, "{v}");
    assert_eq!(v["causes_sent"]["75"], 1, "{v}");
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
        ("xdp", vec!["--n3-if", "un3", "--n6-if", "un6"], "xdp+tun"),
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
        // Every path reports its per-cause counters, and the drops summed by cause.
        for counters in counters_of(path) {
            assert!(v[counters]["drop_truncated"].is_u64(), "{path}: {v}");
        }
        assert!(v["drops"]["drop_inner_header"].is_u64(), "{path}: {v}");
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

/// The JSON keys of the counters `--datapath PATH` reports.
fn counters_of(path: &str) -> &'static [&'static str] {
    match path {
        "xdp" => &["xdp", "tun"],
        "afxdp" => &["af_xdp"],
        _ => &["tun"],
    }
}

/// `steer5g upf --datapath xdp` on the three-namespace test bed, driven over PFCP: a G-PDU
/// larger than the N3 link's MTU, fragmented by the gNB's stack, reaches the data network
/// (XDP hands the fragments to the kernel, whose reassembly feeds the TUN path behind), and
/// `--max-sessions` holds on the XDP path too.
#[test]
fn xdp_datapath_carries_fragmented_g_pdus_and_keeps_its_session_limit() {
    use upf::userspace::craft;
    use upf::userspace::testbed::{ue_ip, Host, Testbed, N3_RAN, N3_UPF, N6_DN};

    if !testkit::privilege::require("XDP and TUN paths in the test bed's namespaces") {
        return;
    }
    // Declared first, dropped last: the UPF process is gone before the namespaces.
    let bed = Testbed::new("upfcmdfrag").unwrap();
    bed.attach_peer_pass().unwrap();
    let n3 = format!("{N3_UPF}:2152");
    let pool = format!(
        "{}/{}",
        upf::userspace::testbed::UE_POOL,
        upf::userspace::testbed::UE_POOL_LEN
    );
    let (child, upf) = spawn_upf(&[
        "--json",
        "upf",
        "--datapath",
        "xdp",
        "--netns",
        bed.ns(Host::Upf),
        "--n3-if",
        &bed.n3_upf,
        "--n6-if",
        &bed.n6_upf,
        "--n3",
        &n3,
        "--ue-pool",
        &pool,
        "--pfcp",
        "127.0.0.1:0",
        "--heartbeat",
        "0",
        "--max-sessions",
        "1",
    ]);
    let (sock, node) = associated_peer(upf);
    let spec = SessionSpec::new(node.clone(), 1, Ipv4Addr::LOCALHOST, ue_ip(0));
    let e = establish(&sock, upf, 2, &spec);
    assert_eq!(e.cause, pfcp::Cause::REQUEST_ACCEPTED, "{e:?}");
    let Some(pfcp::ie::FTeid::Assigned { teid, .. }) = e.created_pdr[0].f_teid else {
        panic!("{e:?}")
    };
    let second = SessionSpec::new(node, 2, Ipv4Addr::LOCALHOST, ue_ip(1));
    assert_eq!(
        establish(&sock, upf, 3, &second).cause,
        pfcp::Cause::NO_RESOURCES_AVAILABLE
    );

    let gnb = bed
        .udp(Host::Ran, std::net::SocketAddrV4::new(N3_RAN, 2152))
        .unwrap();
    let dn = bed
        .udp(Host::Dn, std::net::SocketAddrV4::new(N6_DN, 9000))
        .unwrap();
    // 2400 octets: fragmented on the 1500-octet N3 link; the inner packet (DF clear) is
    // fragmented again on N6 by the UPF's kernel and reassembled by the DN's.
    let payload: Vec<u8> = (0..2400u32).map(|i| (i % 241) as u8).collect();
    let mut inner = craft::ipv4_udp(ue_ip(0), N6_DN, 41000, 9000, &payload).unwrap();
    inner[6] = 0;
    inner[10..12].copy_from_slice(&[0, 0]);
    let c = craft::checksum(&inner[..20]);
    inner[10..12].copy_from_slice(&c.to_be_bytes());
    gnb.send_to(
        &craft::g_pdu(teid, None, &inner).unwrap(),
        std::net::SocketAddrV4::new(N3_UPF, 2152),
    )
    .unwrap();
    dn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = vec![0u8; 4096];
    let (n, _) = dn
        .recv_from(&mut buf)
        .expect("the fragmented G-PDU was lost");
    assert_eq!(&buf[..n], &payload[..]);

    let done = child.stop("TERM", Duration::from_secs(20)).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let v: serde_json::Value = serde_json::from_str(done.stdout.trim()).unwrap();
    assert_eq!(v["datapath"], "xdp+tun", "{v}");
    assert!(v["xdp"]["pass_fragment"].as_u64().unwrap() >= 2, "{v}");
    assert_eq!(v["tun"]["ul_forwarded"], 1, "{v}");
    assert_eq!(v["sessions"]["refused_limit"], 1, "{v}");
    assert_eq!(v["entries_after_stop"]["uplink"], 0, "{v}");
}
