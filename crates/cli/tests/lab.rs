//! `steer5g lab up|down|status`: namespaces, veth links, addresses, xdp_pass, offloads and
//! reachability, checked with `ip`/`ethtool` and real UDP datagrams. Needs root.
#![allow(clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use testkit::privilege;

const ECHO_PORT: u16 = 9999;

fn steer5g(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(args)
        .output()
        .unwrap()
}

fn ip(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Namespace names currently known to `ip netns list`.
fn namespaces() -> Vec<String> {
    ip(&["netns", "list"])
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// A lab that is taken down however the test ends.
struct Lab(String);

impl Lab {
    /// A prefix unique to this process and test, so parallel runs never share a lab.
    fn new(tag: &str) -> Self {
        Lab(format!("t{}{tag}", std::process::id()))
    }

    fn up(&self, extra: &[&str]) -> Output {
        let mut args = vec!["lab", "up", "--prefix", &self.0, "--json"];
        args.extend_from_slice(extra);
        steer5g(&args)
    }

    fn ns(&self, role: &str) -> String {
        format!("{}-{role}", self.0)
    }

    fn status(&self) -> Value {
        let out = steer5g(&["lab", "status", "--prefix", &self.0, "--json"]);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = steer5g(&["lab", "down", "--prefix", &self.0]);
    }
}

fn interface<'a>(status: &'a Value, ns: &str, ifname: &str) -> &'a Value {
    status["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == ns)
        .and_then(|n| {
            n["interfaces"]
                .as_array()?
                .iter()
                .find(|i| i["name"] == ifname)
        })
        .unwrap_or_else(|| panic!("no {ifname} in {ns}: {status}"))
}

/// The id of the XDP program `ip -n NS -j link show dev IF` reports, if any.
fn xdp_id(ns: &str, ifname: &str) -> Option<u64> {
    let v: Value =
        serde_json::from_str(&ip(&["-n", ns, "-j", "link", "show", "dev", ifname])).unwrap();
    v[0]["xdp"]["prog"]["id"].as_u64()
}

/// The address `ip -n NS addr show dev IF` reports.
fn addr_of(ns: &str, ifname: &str) -> String {
    let v: Value =
        serde_json::from_str(&ip(&["-n", ns, "-j", "addr", "show", "dev", ifname])).unwrap();
    let a = &v[0]["addr_info"][0];
    format!("{}/{}", a["local"].as_str().unwrap(), a["prefixlen"])
}

/// This test binary, run inside `ns` as the UDP echo helper below.
fn helper(ns: &str, role: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns])
        .arg(std::env::current_exe().unwrap())
        .args([
            "udp_echo_helper",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LAB_ECHO_ROLE", role);
    c
}

/// Sends a datagram from namespace `from` to `to` (inside namespace `server_ns`) and
/// expects it echoed back: proves the link, the addresses and both directions.
fn assert_udp_echo(from: &str, server_ns: &str, to: &str) {
    let mut server = helper(server_ns, &format!("server {to}:{ECHO_PORT}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = helper(from, &format!("client {to}:{ECHO_PORT}"))
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        client.status.success() && String::from_utf8_lossy(&client.stdout).contains("echo ok"),
        "no UDP echo from {from} to {to} in {server_ns}: {}{}",
        String::from_utf8_lossy(&client.stdout),
        String::from_utf8_lossy(&client.stderr)
    );
}

/// Not a test of its own: the UDP endpoint `assert_udp_echo` runs in a namespace through
/// `ip netns exec` (iputils-ping is not installed on every machine). Without its
/// environment variable it does nothing.
#[test]
fn udp_echo_helper() {
    let Ok(role) = std::env::var("LAB_ECHO_ROLE") else {
        return;
    };
    let (kind, addr) = role.split_once(' ').unwrap();
    let addr: SocketAddr = addr.parse().unwrap();
    let mut buf = [0u8; 64];
    match kind {
        "server" => {
            let s = UdpSocket::bind(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            while let Ok((n, peer)) = s.recv_from(&mut buf) {
                s.send_to(&buf[..n], peer).unwrap();
            }
        }
        _ => {
            let s = UdpSocket::bind("0.0.0.0:0").unwrap();
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            // The server may still be binding: retry for a few seconds.
            for _ in 0..10 {
                s.send_to(b"lab-echo", addr).unwrap();
                if let Ok((n, _)) = s.recv_from(&mut buf) {
                    assert_eq!(&buf[..n], b"lab-echo");
                    println!("echo ok");
                    return;
                }
            }
            panic!("no echo from {addr}");
        }
    }
}

#[test]
fn up_builds_the_lab_and_down_removes_it() {
    if !privilege::require("lab up/down") {
        return;
    }
    let lab = Lab::new("a");
    let out = lab.up(&[]);
    assert!(out.status.success(), "lab up: {out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["up"], true, "{report}");

    let (ran, upf, dn) = (lab.ns("ran"), lab.ns("upf"), lab.ns("dn"));
    let present = namespaces();
    for ns in [&ran, &upf, &dn] {
        assert!(present.contains(ns), "{ns} missing from {present:?}");
    }

    // The plan: N3 10.X.3.1 (ran) - 10.X.3.2 (upf), N6 10.X.6.1 (upf) - 10.X.6.2 (dn).
    let ran_n3 = addr_of(&ran, "n3");
    let net: u8 = ran_n3.split('.').nth(1).unwrap().parse().unwrap();
    assert_eq!(ran_n3, format!("10.{net}.3.1/24"));
    assert_eq!(addr_of(&upf, "n3"), format!("10.{net}.3.2/24"));
    assert_eq!(addr_of(&upf, "n6"), format!("10.{net}.6.1/24"));
    assert_eq!(addr_of(&dn, "n6"), format!("10.{net}.6.2/24"));
    assert_eq!(report["ue_pool"], format!("10.{net}.64.0/18"));

    // xdp_pass on the ends that receive XDP_TX/REDIRECT frames, nothing on the UPF's.
    let ran_xdp = xdp_id(&ran, "n3").expect("no XDP program on the ran's n3");
    let dn_xdp = xdp_id(&dn, "n6").expect("no XDP program on the dn's n6");
    assert_eq!(xdp_id(&upf, "n3"), None);
    assert_eq!(xdp_id(&upf, "n6"), None);
    assert_eq!(interface(&report, &ran, "n3")["xdp_prog_id"], ran_xdp);
    assert_eq!(interface(&report, &dn, "n6")["xdp_prog_id"], dn_xdp);

    // TX checksum offload off on every veth, and the UE pool routed back via the UPF.
    for (ns, ifname) in [(&ran, "n3"), (&upf, "n3"), (&upf, "n6"), (&dn, "n6")] {
        let iface = interface(&report, ns, ifname);
        assert_eq!(
            iface["tx_checksum_offload"], false,
            "{ns} {ifname}: {iface}"
        );
        assert_eq!(iface["up"], true, "{ns} {ifname}: {iface}");
    }
    let route = ip(&["-n", &dn, "route", "show", &format!("10.{net}.64.0/18")]);
    assert!(route.contains(&format!("via 10.{net}.6.1")), "{route}");

    // Reachability over N3 and N6, in both directions.
    assert_udp_echo(&ran, &upf, &format!("10.{net}.3.2"));
    assert_udp_echo(&dn, &upf, &format!("10.{net}.6.1"));

    // A second up fails clearly; --force rebuilds.
    let again = lab.up(&[]);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let forced = lab.up(&["--force"]);
    assert!(forced.status.success(), "{forced:?}");
    assert!(xdp_id(&ran, "n3").is_some());

    let down = steer5g(&["lab", "down", "--prefix", &lab.0]);
    assert!(down.status.success(), "{down:?}");
    let left: Vec<String> = namespaces()
        .into_iter()
        .filter(|n| n.starts_with(&format!("{}-", lab.0)))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(lab.status()["up"], false);
    // Down again: nothing to do, still success.
    let twice = steer5g(&["lab", "down", "--prefix", &lab.0]);
    assert!(twice.status.success(), "{twice:?}");
}

#[test]
fn two_labs_coexist() {
    if !privilege::require("lab up twice") {
        return;
    }
    let (one, two) = (Lab::new("b"), Lab::new("c"));
    let a = one.up(&[]);
    assert!(a.status.success(), "{a:?}");
    let b = two.up(&[]);
    assert!(b.status.success(), "{b:?}");
    assert_eq!(one.status()["up"], true);
    assert_eq!(two.status()["up"], true);
    drop(one);
    // Taking one down leaves the other intact.
    assert_eq!(two.status()["up"], true);
}

#[test]
fn a_bad_prefix_is_a_usage_error() {
    for bad in ["-x", "a/b", "waytoolongprefixforalabname"] {
        let out = steer5g(&["lab", "up", "--prefix", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
    }
}

#[test]
fn without_net_admin_the_exit_status_is_3() {
    if !privilege::require("dropping capabilities with setpriv") {
        return;
    }
    // Root without CAP_NET_ADMIN and CAP_SYS_ADMIN: the bounding set caps what exec grants.
    let lab = Lab::new("d");
    let out = Command::new("setpriv")
        .arg("--bounding-set=-net_admin,-sys_admin")
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_steer5g"))
        .args(["lab", "up", "--prefix", &lab.0])
        .output();
    let Ok(out) = out else {
        eprintln!("skipped: setpriv (util-linux) is not installed");
        return;
    };
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs root"));
    assert!(!namespaces().contains(&lab.ns("ran")));
}

#[test]
fn lab_echo_answers_udp_on_the_dn_address_until_its_duration() {
    if !privilege::require("steer5g lab echo") {
        return;
    }
    let lab = Lab::new("echo");
    let out = lab.up(&[]);
    assert!(out.status.success(), "{out:?}");
    let dn = lab.ns("dn");
    let addr = addr_of(&dn, "n6");
    let ip = addr.split('/').next().unwrap().to_owned();
    let echo = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args([
            "lab",
            "echo",
            "--prefix",
            &lab.0,
            "--port",
            "9998",
            "--duration",
            "3",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = helper(&dn, &format!("client {ip}:9998")).output().unwrap();
    assert!(
        String::from_utf8_lossy(&client.stdout).contains("echo ok"),
        "{client:?}"
    );
    // Bounded by --duration: the process ends by itself and reports.
    let out = echo.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["addr"], format!("{ip}:9998"));
    assert!(v["echoed"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["send_errors"], 0);
}
