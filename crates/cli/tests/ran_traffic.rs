//! UE traffic from `steer5g ran --traffic` through a real UPF in the lab, the split-process
//! way: `steer5g lab up`, `lab echo` in the dn, `steer5g upf --datapath xdp --netns P-upf`
//! with PFCP on loopback, `steer5g core --smf --upf ... --dnn internet=<lab pool>`, then
//! `steer5g ran` with its N3 socket in P-ran. Loopback addresses 127.0.0.131-132 are this
//! test's own, so it runs in parallel with the other CLI tests.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::process::Command;
use std::time::Duration;

use common::{json_of, num, steer5g, Scratch, STOP_TIMEOUT};
use procs::{load_run, provision, start as spawn};
use serde_json::Value;

const RUN_TIMEOUT: Duration = Duration::from_secs(120);
const N2: &str = "127.0.0.131";
const N2_PORT: &str = "19931";
const PFCP: &str = "127.0.0.132:8805";
const UPF_METRICS: &str = "127.0.0.132:9090";
/// UEs (one PDU session each).
const UES: u64 = 2;

/// A lab with a prefix unique to this process; `lab down` when dropped.
struct Lab(String);

impl Lab {
    fn up() -> Lab {
        let lab = Lab(format!("rt{}", std::process::id()));
        let done = testkit::process::run_timeout(
            &mut steer5g(None, &["lab", "up", "--force", "--prefix", &lab.0]),
            RUN_TIMEOUT,
        )
        .unwrap();
        assert_eq!(done.code(), Some(0), "lab up: {}", done.stderr);
        lab
    }

    fn ns(&self, role: &str) -> String {
        format!("{}-{role}", self.0)
    }

    /// The IPv4 address of `ifname` in the lab's `role` namespace.
    fn addr(&self, role: &str, ifname: &str) -> String {
        let out = Command::new("ip")
            .args(["-n", &self.ns(role), "-j", "addr", "show", "dev", ifname])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v[0]["addr_info"][0]["local"].as_str().unwrap().to_owned()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = testkit::process::run_timeout(
            &mut steer5g(None, &["lab", "down", "--prefix", &self.0]),
            RUN_TIMEOUT,
        );
    }
}

#[test]
fn ran_sends_udp_and_icmp_through_the_lab_upf() {
    if !testkit::privilege::require("ran --traffic through the lab's XDP UPF") {
        return;
    }
    // Declared first, dropped last: the children are gone before the namespaces.
    let lab = Lab::up();
    let scratch = Scratch::new("ran-traffic");
    let (ran_n3, upf_n3, dn) = (
        lab.addr("ran", "n3"),
        lab.addr("upf", "n3"),
        lab.addr("dn", "n6"),
    );
    // The lab's UE pool is 10.X.64.0/18, X as in every lab subnet.
    let x = ran_n3.split('.').nth(1).unwrap().to_owned();
    let pool = format!("internet=10.{x}.64.0/18");
    // `lab up` installed permanent neighbours on both links: the XDP program forwards only
    // to a resolved next hop (else `pass_no_neigh`, and the UPF's report would show it).
    for (peer, ifname) in [(&ran_n3, "n3"), (&dn, "n6")] {
        let out = Command::new("ip")
            .args(["-n", &lab.ns("upf"), "neigh", "show", peer, "dev", ifname])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("PERMANENT"),
            "neighbour {peer} on {ifname}: {text}"
        );
    }

    let echo = spawn(
        &["lab", "echo", "--prefix", &lab.0, "--duration", "60"],
        "echoing UDP",
    );
    let upf_n3_sock = format!("{upf_n3}:2152");
    let upf = spawn(
        &[
            "upf",
            "--json",
            "--datapath",
            "xdp",
            "--netns",
            &lab.ns("upf"),
            "--n3-if",
            "n3",
            "--n6-if",
            "n6",
            "--pfcp",
            PFCP,
            "--n3",
            &upf_n3_sock,
            "--heartbeat",
            "0",
            "--duration",
            "300",
            "--metrics-addr",
            UPF_METRICS,
        ],
        "steer5g upf: PFCP on",
    );
    let (dir, csv) = provision(&scratch, UES);
    let core = spawn(
        &[
            "core",
            "--json",
            "--data-dir",
            &dir,
            "--sbi",
            "inproc",
            "--workers",
            "1",
            "--transport",
            "udp",
            "--n2-addr",
            N2,
            "--udp-port",
            N2_PORT,
            "--smf",
            "--upf",
            PFCP,
            "--dnn",
            &pool,
            "--duration",
            "300",
        ],
        "N2 listening",
    );

    let amf = format!("{N2}:{N2_PORT}");
    let out = scratch.0.join("out");
    let out_s = out.display().to_string();
    let mut forwarded = 0;
    for (kind, gnb_id) in [("udp", "1"), ("icmp", "100")] {
        let (done, v) = load_run(
            &csv,
            &dir,
            &amf,
            &[
                "--gnb-id-base",
                gnb_id,
                "--ues",
                "2",
                "--pdu-sessions",
                "1",
                "--traffic",
                kind,
                "--packet-size",
                "256",
                "--traffic-rate",
                "500",
                "--traffic-duration",
                "2",
                "--dn",
                &dn,
                "--n3-netns",
                &lab.ns("ran"),
                "--gnb-n3",
                &ran_n3,
                "--out",
                &out_s,
            ],
            RUN_TIMEOUT,
        );
        assert_eq!(done.code(), Some(0), "{kind}: {v}\n{}", done.stderr);
        assert_eq!(num(&v, "procedures.session_establishment.completed"), UES);
        let up = &v["user_plane"];
        assert_eq!(up["kind"], kind, "{up}");
        assert_eq!(num(up, "sessions"), UES, "{up}");
        assert_eq!(up["n3_netns"], lab.ns("ran"));
        assert_eq!(up["n3_socket"], format!("{ran_n3}:2152"));
        let sent = num(up, "sent");
        assert!(sent > 0, "{up}");
        assert_eq!(num(up, "received"), sent, "{kind}: {up}");
        assert_eq!(num(up, "lost"), 0, "{up}");
        assert_eq!(up["loss_ok"], true);
        assert!(up["latency"]["p50_us"].as_u64().unwrap() > 0, "{up}");
        assert!(!up["cdf"].as_array().unwrap().is_empty(), "{up}");
        forwarded += sent;
        // The files of --out.
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("traffic.json")).unwrap())
                .unwrap();
        assert_eq!(file["sent"], sent);
        let csv = std::fs::read_to_string(out.join("traffic-cdf.csv")).unwrap();
        assert!(csv.lines().count() > 1, "{csv}");
        assert!(std::fs::read_to_string(out.join("traffic-cdf.svg"))
            .unwrap()
            .contains("<svg"));
    }

    // The UPF's /metrics while it runs: TS 28.552 names as Open5GS exposes them, and
    // every series its Grafana dashboard charts.
    let page = common::scrape_page(UPF_METRICS).unwrap();
    let metric = |name: &str| common::scrape(UPF_METRICS, name).unwrap_or(u64::MAX);
    assert_eq!(
        metric("fivegs_upffunction_sm_n4sessionestabreq"),
        2 * UES,
        "{page}"
    );
    assert!(
        metric("fivegs_ep_n3_gtp_indatapktn3upf") >= forwarded,
        "{page}"
    );
    assert!(
        metric("fivegs_ep_n3_gtp_outdatapktn3upf") >= forwarded,
        "{page}"
    );
    // Octets, as the sessions' URRs measured them (every session has ended, so its last
    // octets are counted): each probe is a 256-octet inner packet, and no packet is larger
    // than the biggest a probe or reply can be.
    for (volume, packets) in [
        (
            "fivegs_ep_n3_gtp_indatavolumeqosleveln3upf",
            "fivegs_ep_n3_gtp_indatapktn3upf",
        ),
        (
            "fivegs_ep_n3_gtp_outdatavolumeqosleveln3upf",
            "fivegs_ep_n3_gtp_outdatapktn3upf",
        ),
    ] {
        let octets = metric(volume);
        assert!(octets >= 256 * forwarded, "{volume}: {page}");
        assert!(octets <= 1400 * metric(packets), "{volume}: {page}");
    }
    let dashboard = std::path::Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned()),
    )
    .join("../../contrib/grafana/steer5g-upf.json");
    for name in testkit::grafana::metric_names(&dashboard).unwrap() {
        assert!(page.contains(&format!("# TYPE {name} ")), "{name}: {page}");
    }
    let (n3_in, n3_out) = (
        metric("fivegs_ep_n3_gtp_indatapktn3upf"),
        metric("fivegs_ep_n3_gtp_outdatapktn3upf"),
    );

    let c = core.stop("TERM", STOP_TIMEOUT).unwrap();
    assert_eq!(c.code(), Some(0), "core: {}", c.stderr);
    let u = upf.stop("INT", STOP_TIMEOUT).unwrap();
    let uv = json_of(&u);
    assert_eq!(u.code(), Some(0), "upf: {uv}\n{}", u.stderr);
    assert_eq!(uv["netns"], lab.ns("upf"));
    assert_eq!(num(&uv, "sessions.established"), 2 * UES, "{uv}");
    assert_eq!(num(&uv, "sessions.at_stop"), 0, "{uv}");
    for k in ["uplink", "downlink", "usage"] {
        assert_eq!(num(&uv, &format!("entries_after_stop.{k}")), 0, "{uv}");
    }
    // The XDP program carried every probe and every reply (readiness probes included).
    assert!(num(&uv, "xdp.ul_forwarded") >= forwarded, "{uv}");
    // Nothing left the fast path for want of a neighbour.
    assert_eq!(num(&uv, "xdp.pass_no_neigh"), 0, "{uv}");
    assert!(num(&uv, "xdp.dl_forwarded") >= forwarded, "{uv}");
    // No packet crossed N3 after the scrape: the page and the report agree.
    let both = |k: &str| num(&uv, &format!("xdp.{k}")) + num(&uv, &format!("tun.{k}"));
    assert_eq!(
        (n3_in, n3_out),
        (both("ul_forwarded"), both("dl_forwarded")),
        "{uv}"
    );
    let e = echo.stop("INT", STOP_TIMEOUT).unwrap();
    assert_eq!(e.code(), Some(0), "lab echo: {}", e.stderr);
}

/// A subscriber CSV under `scratch` with one subscriber, for runs refused before they reach
/// an AMF.
fn one_subscriber_csv(scratch: &Scratch) -> std::path::PathBuf {
    let csv = scratch.0.join("subs.csv");
    std::fs::write(
        &csv,
        "supi,k,opc,amf,sqn,sst,sd,dnn\nimsi-001010000000001,00112233445566778899aabbccddeeff,00112233445566778899aabbccddeeff,8000,0,1,,internet\n",
    )
    .unwrap();
    csv
}

#[test]
fn traffic_flags_without_sessions_or_dn_are_usage_errors() {
    let scratch = Scratch::new("ran-traffic-usage");
    let csv = one_subscriber_csv(&scratch);
    let csv = csv.display().to_string();
    let base = [
        "ran",
        "--subscribers",
        &csv,
        "--suci",
        "null",
        "--amf",
        "127.0.0.131:1",
    ];
    for extra in [
        // No sessions to carry it.
        &[
            "--traffic",
            "udp",
            "--dn",
            "10.0.0.2",
            "--gnb-n3",
            "10.0.0.1",
        ][..],
        // No DN.
        &[
            "--pdu-sessions",
            "1",
            "--traffic",
            "udp",
            "--gnb-n3",
            "10.0.0.1",
        ],
        // A packet out of the engine's bounds.
        &[
            "--pdu-sessions",
            "1",
            "--traffic",
            "icmp",
            "--dn",
            "10.0.0.2",
            "--gnb-n3",
            "10.0.0.1",
            "--packet-size",
            "9000",
        ],
        // A traffic flag without --traffic.
        &["--pdu-sessions", "1", "--packet-size", "100"],
    ] {
        let mut cmd = steer5g(None, &base);
        cmd.args(extra);
        let done = testkit::process::run_timeout(&mut cmd, RUN_TIMEOUT).unwrap();
        assert_eq!(done.code(), Some(2), "{extra:?}: {}", done.stderr);
    }
}

#[test]
fn entering_the_n3_namespace_without_cap_sys_admin_is_exit_3() {
    if !testkit::privilege::require("dropping capabilities with setpriv") {
        return;
    }
    let ns = testkit::netns::Namespace::new("rtpriv").unwrap();
    let scratch = Scratch::new("ran-traffic-priv");
    let csv = one_subscriber_csv(&scratch);
    // Root without CAP_SYS_ADMIN: the bounding set caps what exec grants; setns fails.
    let mut cmd = Command::new("setpriv");
    cmd.args(["--bounding-set=-sys_admin", "--", common::bin()])
        .args(["ran", "--subscribers"])
        .arg(&csv)
        .args([
            "--suci",
            "null",
            "--amf",
            "127.0.0.131:1",
            "--pdu-sessions",
            "1",
        ])
        .args([
            "--traffic",
            "udp",
            "--dn",
            "10.0.0.2",
            "--gnb-n3",
            "10.0.0.1",
        ])
        .args(["--n3-netns", ns.name()]);
    let done = testkit::process::run_timeout(&mut cmd, RUN_TIMEOUT).unwrap();
    assert_eq!(done.code(), Some(3), "{}", done.stderr);
    assert!(done.stderr.contains("CAP_SYS_ADMIN"), "{}", done.stderr);
}
