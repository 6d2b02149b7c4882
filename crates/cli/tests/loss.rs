//! 5% packet loss on every interface of the core, injected with nftables (`numgen random`,
//! KERNEL.md "Traffic shaping") on the input hook, each direction of each interface its own
//! table: N2 (SCTP over UDP to and from the AMF's port), N4 (PFCP to and from 8805), SBI
//! (h2c to and from 7777) on the loopback of a namespace of the test's own where the five
//! NFs and `steer5g ran` run, and N3 (GTP-U down to the gNB) in the user-plane lab. Every
//! procedure must complete, the loss must really have happened (the tables' counters), and
//! what recovered from it must be counted: SCTP retransmissions (ran's and the AMF's
//! reports), PFCP T1 retransmissions (the SMF's and the UPF's), SBI call failures (every
//! NF's, none expected: a request the server cannot have processed, such as one whose
//! connection set-up outlasted the client's connect timeout, is sent again and counted in
//! `call_retries`) and the kernel's TCP retransmissions under them. On N3 the traffic
//! engine must measure the loss injected. The tables go with their guards and namespaces on
//! every exit path. Needs root.
#![allow(clippy::unwrap_used)]

mod common;

use common::nfs::{Lab, Net, Nf, RUN_TIMEOUT};
use common::{json_of, num, provision, steer5g, Scratch, STOP_TIMEOUT};
use serde_json::Value;
use testkit::netns::Namespace;
use testkit::nft::{self, LossGuard, Matcher};
use testkit::process::ChildGuard;

const LOSS_PERCENT: u8 = 5;
const UES: u64 = 8;
/// Runs: 4 of each UE, each with a PDU session.
const RUNS: u64 = 32;

/// The kernel's count of retransmitted TCP segments in `netns` (`/proc/net/snmp`).
fn tcp_retransmissions(netns: &str) -> u64 {
    let text =
        testkit::process::run(testkit::process::in_netns(Some(netns), "cat").arg("/proc/net/snmp"))
            .unwrap();
    let mut tcp = text.lines().filter(|l| l.starts_with("Tcp:"));
    let (Some(names), Some(values)) = (tcp.next(), tcp.next()) else {
        panic!("no Tcp lines in /proc/net/snmp:\n{text}");
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "RetransSegs")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap()
}

/// The dropped counts of the tables of one interface, summed.
fn dropped(guards: &[LossGuard]) -> u64 {
    guards.iter().map(|g| g.counters().unwrap().dropped).sum()
}

#[test]
fn every_procedure_completes_with_five_percent_loss_on_n2_n4_and_sbi() {
    if !testkit::privilege::require("loss on N2, N4 and SBI (nftables in a namespace)") {
        return;
    }
    let ns = Namespace::new("loss").unwrap();
    let netns = ns.name().to_owned();
    let scratch = Scratch::new("loss-cp");
    let (dir, csv) = provision(&scratch, UES as u32);
    let ip = |i: u8| format!("127.0.0.{}", 190 + i);
    let (udm, ausf, amf, smf, upf) = (ip(0), ip(1), ip(2), ip(3), ip(4));
    let sbi = |a: &str| format!("{a}:7777");
    let uri = |a: &str| format!("http://{a}:7777");
    const N2_PORT: u16 = 20_190;
    let n2_port = N2_PORT.to_string();
    let pfcp = format!("{upf}:8805");
    let (udm_sbi, ausf_sbi, amf_sbi, smf_sbi) = (sbi(&udm), sbi(&ausf), sbi(&amf), sbi(&smf));
    let (udm_uri, ausf_uri, amf_uri, smf_uri) = (uri(&udm), uri(&ausf), uri(&amf), uri(&smf));
    let mut net = Net::new(Some(&netns));
    net.set(
        Nf::Udm,
        &["udm", "--json", "--data-dir", &dir, "--sbi-addr", &udm_sbi],
    );
    net.set(
        Nf::Ausf,
        &["ausf", "--json", "--sbi-addr", &ausf_sbi, "--udm", &udm_uri],
    );
    net.set(
        Nf::Smf,
        &[
            "smf",
            "--json",
            "--sbi-addr",
            &smf_sbi,
            "--upf",
            &pfcp,
            "--amf",
            &amf_uri,
            "--udm",
            &udm_uri,
            "--pfcp-heartbeat",
            "1",
        ],
    );
    net.set(
        Nf::Amf,
        &[
            "amf",
            "--json",
            "--transport",
            "udp",
            "--n2-addr",
            &amf,
            "--udp-port",
            &n2_port,
            "--ausf",
            &ausf_uri,
            "--udm",
            &udm_uri,
            "--smf",
            &smf_uri,
            "--sbi-addr",
            &amf_sbi,
        ],
    );
    net.set(
        Nf::Upf,
        &[
            "upf",
            "--json",
            "--datapath",
            "none",
            "--pfcp",
            &pfcp,
            "--heartbeat",
            "1",
            "--duration",
            "300",
        ],
    );
    // The loss is on from the first packet: association and NG Setup included.
    let table = |m: Matcher| nft::loss(Some(&netns), LOSS_PERCENT, &m).unwrap();
    let n2 = [
        table(Matcher::UdpDport(N2_PORT)),
        table(Matcher::UdpSport(N2_PORT)),
    ];
    let n4 = [
        table(Matcher::UdpDport(8805)),
        table(Matcher::UdpSport(8805)),
    ];
    let sbi_loss = [
        table(Matcher::Expr("tcp dport 7777".into())),
        table(Matcher::Expr("tcp sport 7777".into())),
    ];
    let tcp_before = tcp_retransmissions(&netns);
    net.start_all();

    let amf_at = format!("{amf}:{n2_port}");
    let runs = RUNS.to_string();
    let mut cmd = steer5g(
        Some(&netns),
        &[
            "ran",
            "--json",
            "--subscribers",
            &csv,
            "--data-dir",
            &dir,
            "--amf",
            &amf_at,
            "--local-addr",
            &amf,
            "--gnbs",
            "2",
            "--ues",
            "4",
            "--count",
            &runs,
            "--pdu-sessions",
            "1",
            "--timeout",
            "60",
        ],
    );
    let done = testkit::process::run_timeout(&mut cmd, RUN_TIMEOUT).unwrap();
    let v = json_of(&done);
    // What the AMF and the SMF logged tells which call failed and how, when one does.
    let logs = format!(
        "AMF stderr:\n{}\nSMF stderr:\n{}",
        net.stderr(Nf::Amf),
        net.stderr(Nf::Smf)
    );
    let r = net.stop();
    let tcp = tcp_retransmissions(&netns) - tcp_before;
    let (d2, d4, ds) = (dropped(&n2), dropped(&n4), dropped(&sbi_loss));
    let all = format!("ran: {v}\n{r:#?}\nran stderr:\n{}\n{logs}", done.stderr);
    let _ = std::fs::write("/tmp/loss_all.txt", &all);

    // Every procedure completed.
    assert_eq!(done.code(), Some(0), "{all}");
    assert_eq!(v["ok"], true, "{all}");
    assert!(v["failures"].as_object().unwrap().is_empty(), "{all}");
    for p in [
        "registration",
        "session_establishment",
        "session_release",
        "deregistration",
    ] {
        assert_eq!(
            num(&v, &format!("procedures.{p}.completed")),
            RUNS,
            "{p}: {all}"
        );
    }
    assert_eq!(num(&v, "ues_registered"), UES);

    // The loss happened on each interface, and each recovered in its own way, counted.
    let sctp = num(&v, "sctp.retransmissions")
        + num(&v, "sctp.fast_retransmits")
        + num(&r["amf"], "sctp.retransmissions")
        + num(&r["amf"], "sctp.fast_retransmits");
    let pfcp_retrans =
        num(&r["smf"], "pfcp_retransmitted") + num(&r["upf"], "messages.requests_retransmitted");
    let answered_from_cache = num(&r["upf"], "messages.retransmissions_answered");
    let sbi = |k: &str| -> u64 {
        ["amf", "smf", "ausf", "udm"]
            .iter()
            .map(|nf| num(&r[nf], k))
            .sum()
    };
    let (sbi_calls, sbi_failures, sbi_retries) =
        (sbi("h2c_calls"), sbi("call_failures"), sbi("call_retries"));
    println!(
        "dropped: N2 {d2}, N4 {d4}, SBI {ds}; recovered: SCTP {sctp} retransmissions, PFCP {pfcp_retrans} T1 retransmissions ({answered_from_cache} answered from the UPF's cache), TCP {tcp} retransmitted segments, SBI {sbi_calls} calls, {sbi_retries} requests sent again, {sbi_failures} call failures"
    );
    assert!(
        d2 > 0 && d4 > 0 && ds > 0,
        "N2 {d2} N4 {d4} SBI {ds}: {all}"
    );
    assert!(sctp > 0, "N2 loss without SCTP retransmission: {all}");
    assert!(
        pfcp_retrans > 0,
        "N4 loss without PFCP retransmission: {all}"
    );
    assert!(tcp > 0, "SBI loss without TCP retransmission");
    // Every SBI call was answered: TCP recovered the lost segments, and a request lost
    // with its connection's set-up was sent again on a new one (at most
    // `sbi::retry::MAX_RETRIES` times each), never more often than there were calls.
    assert_eq!(sbi_failures, 0, "an SBI call failed: {all}");
    assert!(
        sbi_calls > 0 && sbi_retries <= sbi_calls * u64::from(sbi::retry::MAX_RETRIES),
        "{sbi_calls} calls, {sbi_retries} retries: {all}"
    );
    // Nothing left behind either.
    assert_eq!(num(&r["smf"], "held_at_stop.smf"), 0, "{all}");
    assert_eq!(num(&r["amf"], "held_at_stop.amf_ues"), 0, "{all}");
    assert_eq!(num(&r["upf"], "sessions.at_stop"), 0, "{all}");
}

#[test]
fn n3_loss_is_measured_by_the_traffic_engine() {
    if !testkit::privilege::require("loss on N3 (the lab, XDP, nftables)") {
        return;
    }
    let lab = Lab::up("l3x");
    let scratch = Scratch::new("loss-n3");
    let (dir, csv) = provision(&scratch, 4);
    let (ran_n3, upf_n3, dn) = (
        lab.addr("ran", "n3"),
        lab.addr("upf", "n3"),
        lab.addr("dn", "n6"),
    );
    let pool = lab.dnn_pool();
    let (n2, n2_port, pfcp) = ("127.0.0.196", "20196", "127.0.0.197:8805");
    let upf_n3_sock = format!("{upf_n3}:2152");
    let upf_ns = lab.ns("upf");
    let mut upf = ChildGuard::spawn(&mut steer5g(
        None,
        &[
            "upf",
            "--json",
            "--datapath",
            "xdp",
            "--netns",
            &upf_ns,
            "--n3-if",
            "n3",
            "--n6-if",
            "n6",
            "--pfcp",
            pfcp,
            "--n3",
            &upf_n3_sock,
            "--heartbeat",
            "0",
            "--duration",
            "300",
        ],
    ))
    .unwrap();
    upf.wait_for_stderr("steer5g upf: PFCP on", common::LISTEN_TIMEOUT)
        .unwrap();
    let mut core = ChildGuard::spawn(&mut steer5g(
        None,
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
            n2,
            "--udp-port",
            n2_port,
            "--smf",
            "--upf",
            pfcp,
            "--dnn",
            &pool,
            "--duration",
            "300",
        ],
    ))
    .unwrap();
    core.wait_for_stderr("N2 listening", common::LISTEN_TIMEOUT)
        .unwrap();
    let echo = lab.echo();
    // Downlink GTP-U into the gNB's namespace: the UPF's XDP program sees every uplink
    // packet before nftables could, so the loss sits on the way back.
    let ran_ns = lab.ns("ran");
    let guard = nft::loss(Some(&ran_ns), LOSS_PERCENT, &Matcher::UdpDport(2152)).unwrap();
    let amf_at = format!("{n2}:{n2_port}");
    let (done, v) = common::ran(
        None,
        &[
            "--subscribers",
            &csv,
            "--data-dir",
            &dir,
            "--amf",
            &amf_at,
            "--ues",
            "4",
            "--pdu-sessions",
            "1",
            "--traffic",
            "udp",
            "--packet-size",
            "256",
            "--traffic-rate",
            "1000",
            "--packets",
            "5000",
            "--dn",
            &dn,
            "--n3-netns",
            &ran_ns,
            "--gnb-n3",
            &ran_n3,
            "--max-loss",
            "0.2",
        ],
        RUN_TIMEOUT,
    );
    let c = guard.counters().unwrap();
    drop(guard);
    let cv = core.stop("TERM", STOP_TIMEOUT).unwrap();
    assert_eq!(cv.code(), Some(0), "{}", cv.stderr);
    let u = upf.stop("INT", STOP_TIMEOUT).unwrap();
    assert_eq!(u.code(), Some(0), "{}", u.stderr);
    let e = echo.stop("INT", STOP_TIMEOUT).unwrap();
    assert_eq!(e.code(), Some(0), "{}", e.stderr);
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    let up: &Value = &v["user_plane"];
    let (sent, lost) = (num(up, "sent"), num(up, "lost"));
    let measured = lost as f64 / sent as f64;
    let injected = c.dropped as f64 / c.matched as f64;
    println!(
        "N3: {sent} probes, {lost} lost ({:.2} %); nft dropped {} of {} ({:.2} %)",
        measured * 100.0,
        c.dropped,
        c.matched,
        injected * 100.0
    );
    // 5 % ± 2: with 5000 probes one standard deviation is 0.3 %.
    assert!(sent >= 4000, "{up}");
    assert!(
        (0.03..=0.07).contains(&measured),
        "measured {measured}: {up}"
    );
    // Every probe lost was one the table dropped (readiness probes add to its count).
    assert!(c.dropped >= lost, "{c:?} {up}");
}
