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
//! engine must measure the loss injected, and a kernel TCP connection through `ran --tun`
//! must deliver every byte, recovering by retransmission. The tables go with their guards
//! and namespaces on every exit path. Needs root.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use common::nfs::{Addrs, Lab, Net, Nf, RUN_TIMEOUT};
use common::{json_of, num, Scratch, STOP_TIMEOUT};
use procs::{provision, ran_cmd, start, start_core};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::time::{Duration, Instant};

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
    let (dir, csv) = provision(&scratch, UES);
    const N2_PORT: u16 = 20_190;
    let addrs = Addrs::new(190, N2_PORT);
    let (amf, pfcp) = (addrs.ip(Nf::Amf), addrs.pfcp());
    let mut net = Net::new(Some(&netns));
    net.control_plane(&addrs, &dir, &[]);
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

    let amf_at = addrs.n2();
    let runs = RUNS.to_string();
    let mut cmd = ran_cmd(
        Some(&netns),
        &csv,
        &dir,
        &amf_at,
        &[
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

/// The lab's UPF (XDP datapath in `{P}-upf`) and a core (in-process SBI, N2 over UDP on
/// 127.0.0.`host`:`n2_port`, the SMF associated with the UPF on `pfcp`), both serving.
fn user_plane_core(
    lab: &Lab,
    dir: &str,
    host: u8,
    n2_port: u16,
    pfcp: &str,
) -> (ChildGuard, ChildGuard) {
    let pool = lab.dnn_pool();
    let upf_args = lab.upf_args(pfcp, "0");
    let upf_args: Vec<&str> = upf_args.iter().map(String::as_str).collect();
    let upf = start(&upf_args, "steer5g upf: PFCP on");
    let smf = ["--smf", "--upf", pfcp, "--dnn", &pool, "--duration", "300"];
    let core = start_core(dir, host, n2_port, &smf);
    (upf, core)
}

#[test]
fn n3_loss_is_measured_by_the_traffic_engine() {
    if !testkit::privilege::require("loss on N3 (the lab, XDP, nftables)") {
        return;
    }
    let lab = Lab::up("l3x");
    let scratch = Scratch::new("loss-n3");
    let (dir, csv) = provision(&scratch, 4);
    let (ran_n3, dn) = (lab.addr("ran", "n3"), lab.addr("dn", "n6"));
    let (n2, n2_port) = ("127.0.0.196", 20196);
    let (upf, core) = user_plane_core(&lab, &dir, 196, n2_port, "127.0.0.197:8805");
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

/// What the TCP test sends: 2 MiB, a pattern no retransmission or reordering bug could
/// reproduce by accident (xorshift).
fn payload(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// FNV-1a (64 bit): the checksum the report prints.
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The address `ran --tun` gave its first device, from the line it logs.
fn first_tun_ip(stderr: &str) -> Ipv4Addr {
    stderr
        .lines()
        .find_map(|l| l.split("TUN uesimtun0 up with ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no uesimtun0 address in ran's stderr:\n{stderr}"))
}

const TCP_BYTES: usize = 2 << 20;
/// Bound on every socket wait of the transfer.
const TCP_TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn tcp_through_the_tun_of_ran_completes_with_five_percent_n3_loss() {
    if !testkit::privilege::require("TCP through ran --tun with loss on N3 (the lab, XDP, TUN)") {
        return;
    }
    let lab = Lab::up("l3t");
    let scratch = Scratch::new("loss-tun");
    let (dir, csv) = provision(&scratch, 1);
    let (ran_n3, dn) = (lab.addr("ran", "n3"), lab.addr("dn", "n6"));
    let dn_ip: Ipv4Addr = dn.parse().unwrap();
    let (n2, n2_port) = ("127.0.0.198", 20198);
    let (upf, core) = user_plane_core(&lab, &dir, 198, n2_port, "127.0.0.199:8805");
    let (ran_ns, dn_ns) = (lab.ns("ran"), lab.ns("dn"));

    // The N6 side: a TCP echo server in the dn, one connection.
    let listener = upf::userspace::netns::run_in(Some(&dn_ns), move || {
        TcpListener::bind(SocketAddrV4::new(dn_ip, 0))
    })
    .unwrap()
    .unwrap();
    let server_at = match listener.local_addr().unwrap() {
        std::net::SocketAddr::V4(a) => a,
        other => panic!("{other}"),
    };
    let server = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut c, _) = listener.accept()?;
        c.set_read_timeout(Some(TCP_TIMEOUT))?;
        c.set_write_timeout(Some(TCP_TIMEOUT))?;
        let mut buf = vec![0u8; 64 << 10];
        let mut echoed = 0u64;
        loop {
            let n = c.read(&mut buf)?;
            if n == 0 {
                c.shutdown(std::net::Shutdown::Write)?;
                return Ok(echoed);
            }
            c.write_all(&buf[..n])?;
            echoed += n as u64;
        }
    });

    // Both directions of N3 lose 5 %: downlink G-PDUs on the gNB's input; uplink ones on
    // the gNB's output, since at the UPF XDP sees them before nftables could (the relay
    // takes the EPERM of a dropped send as the lost packet it stands for).
    let n3_down = nft::loss(Some(&ran_ns), LOSS_PERCENT, &Matcher::UdpDport(2152)).unwrap();
    let n3_up = nft::loss_on_output(Some(&ran_ns), LOSS_PERCENT, &Matcher::UdpDport(2152)).unwrap();
    let retrans_before = tcp_retransmissions(&ran_ns) + tcp_retransmissions(&dn_ns);
    let amf_at = format!("{n2}:{n2_port}");
    let mut ran = ChildGuard::spawn(&mut ran_cmd(
        None,
        &csv,
        &dir,
        &amf_at,
        &[
            "--ues",
            "1",
            "--pdu-sessions",
            "1",
            "--n3-netns",
            &ran_ns,
            "--gnb-n3",
            &ran_n3,
            "--tun",
            "--tun-duration",
            "120",
        ],
    ))
    .unwrap();
    ran.wait_for_stderr("steer5g ran: relaying", RUN_TIMEOUT)
        .unwrap_or_else(|e| panic!("{e}\n{}", ran.stderr_so_far()));
    let ue_ip = first_tun_ip(&ran.stderr_so_far());
    assert_eq!(
        ue_ip.octets()[..2],
        dn_ip.octets()[..2],
        "a UE address of the lab's pool"
    );

    // The UE side: a socket bound to the UE's address in the gNB's namespace, which only
    // the policy route of uesimtun0 leads anywhere (the namespace has no route to the dn).
    let sent = payload(TCP_BYTES);
    let t0 = Instant::now();
    let stream =
        upf::userspace::netns::run_in(Some(&ran_ns), move || -> std::io::Result<TcpStream> {
            let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
            s.bind(&SocketAddrV4::new(ue_ip, 0).into())?;
            s.connect_timeout(&server_at.into(), TCP_TIMEOUT)?;
            Ok(s.into())
        })
        .unwrap()
        .unwrap_or_else(|e| panic!("connect through the TUN: {e}\n{}", ran.stderr_so_far()));
    stream.set_read_timeout(Some(TCP_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(TCP_TIMEOUT)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let to_send = sent.clone();
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        for chunk in to_send.chunks(16 << 10) {
            writer.write_all(chunk)?;
        }
        writer.shutdown(std::net::Shutdown::Write)
    });
    let mut received = Vec::with_capacity(TCP_BYTES);
    let mut reader = stream;
    let read = reader.read_to_end(&mut received);
    let elapsed = t0.elapsed();
    let send = sender.join().unwrap();
    let echoed = server.join().unwrap();
    let retrans = tcp_retransmissions(&ran_ns) + tcp_retransmissions(&dn_ns) - retrans_before;

    // End the hold: ran removes the device, releases the session and reports.
    ran.signal("INT").unwrap();
    let done = ran.wait_timeout(RUN_TIMEOUT).unwrap();
    // Read once ran is gone: a last ACK may still have crossed N3 after the transfer.
    let (c, cu) = (n3_down.counters().unwrap(), n3_up.counters().unwrap());
    drop((n3_down, n3_up));
    let v = json_of(&done);
    let cv = core.stop("TERM", STOP_TIMEOUT).unwrap();
    assert_eq!(cv.code(), Some(0), "{}", cv.stderr);
    let u = upf.stop("INT", STOP_TIMEOUT).unwrap();
    assert_eq!(u.code(), Some(0), "{}", u.stderr);
    let uv = json_of(&u);
    let all = format!("ran: {v}\nran stderr:\n{}\nupf: {uv}", done.stderr);

    send.unwrap_or_else(|e| panic!("sending: {e}\n{all}"));
    read.unwrap_or_else(|e| panic!("receiving: {e}\n{all}"));
    assert_eq!(
        echoed.unwrap_or_else(|e| panic!("echo: {e}")),
        TCP_BYTES as u64
    );
    let up = &v["user_plane"];
    let dev = &up["devices"][0];
    println!(
        "TCP through uesimtun0 ({ue_ip}): {} B echoed in {:.2} s, fnv {:#x}; {retrans} TCP \
         retransmissions; N3 nft dropped {} of {} G-PDUs down, {} of {} up; relay up {} B / \
         down {} B, {} sends refused; UPF XDP forwarded {} up, {} down",
        received.len(),
        elapsed.as_secs_f64(),
        fnv(&received),
        c.dropped,
        c.matched,
        cu.dropped,
        cu.matched,
        num(dev, "counters.uplink.bytes"),
        num(dev, "counters.downlink.bytes"),
        num(up, "send_dropped"),
        num(&uv, "xdp.ul_forwarded"),
        num(&uv, "xdp.dl_forwarded"),
    );
    // Every byte came back, in order.
    assert_eq!(received.len(), TCP_BYTES, "{all}");
    assert_eq!(fnv(&received), fnv(&sent), "{all}");
    assert!(received == sent, "same length and checksum, other bytes");
    // The loss happened and TCP recovered from it.
    assert!(c.dropped > 0 && cu.dropped > 0, "{c:?} {cu:?}");
    assert_eq!(num(up, "send_dropped"), cu.dropped, "{all}");
    assert!(retrans > 0, "no TCP retransmission under {c:?}: {all}");
    // The bytes took the tunnel: the relay carried the whole transfer both ways, and N3
    // (the nft counters see every G-PDU) had at least a packet per full segment each way.
    let bytes = TCP_BYTES as u64;
    assert!(num(dev, "counters.uplink.bytes") >= bytes, "{all}");
    assert!(num(dev, "counters.downlink.bytes") >= bytes, "{all}");
    let mss = u64::from(ran::userplane::tun::TUN_MTU) - 40;
    assert!(
        c.matched >= bytes / mss && cu.matched >= bytes / mss,
        "{c:?} {cu:?}: {all}"
    );
    // The UPF's fast path forwarded each of them between N3 and N6.
    assert!(num(&uv, "xdp.ul_forwarded") >= bytes / mss, "{all}");
    assert!(num(&uv, "xdp.dl_forwarded") >= bytes / mss, "{all}");
    // ran ended the hold on the signal, released the session and exited cleanly.
    assert_eq!(done.code(), Some(0), "{all}");
    assert_eq!(up["ended_by"], "signal", "{all}");
    assert_eq!(num(&v, "procedures.session_release.completed"), 1, "{all}");
    let links =
        testkit::process::run(testkit::process::in_netns(Some(&ran_ns), "ip").args(["-o", "link"]))
            .unwrap();
    assert!(!links.contains("uesimtun"), "the TUN outlived ran: {links}");
    let rules =
        testkit::process::run(testkit::process::in_netns(Some(&ran_ns), "ip").arg("rule")).unwrap();
    assert!(
        !rules.contains(&ue_ip.to_string()),
        "a rule outlived ran: {rules}"
    );
}
