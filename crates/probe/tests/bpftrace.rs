//! The probe against an independent tracer: Debian's bpftrace on the same tracepoints
//! (classic ones, through tracefs) with the same filter, attached together over one fixed
//! workload in namespaces of the test's own. The counts must be equal exactly and the NET_RX
//! softirq time within 10 %. Needs root and bpftrace (CI installs it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{in_netns, ns_path};
use probe::{netns, procfs, Filter, Probe};
use testkit::netns::{Pair, Side};
use testkit::process::ChildGuard;

const TRACEFS: &str = "/sys/kernel/tracing";

/// Mounts tracefs for bpftrace if it is not, and unmounts it on drop if it mounted it.
struct Tracefs {
    mounted_here: bool,
}

impl Tracefs {
    fn ensure() -> Tracefs {
        if Path::new(TRACEFS).join("events").is_dir() {
            return Tracefs {
                mounted_here: false,
            };
        }
        let st = Command::new("mount")
            .args(["-t", "tracefs", "nodev", TRACEFS])
            .status()
            .expect("mount runs");
        assert!(st.success(), "cannot mount tracefs at {TRACEFS}");
        Tracefs { mounted_here: true }
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.mounted_here {
            let _ = Command::new("umount").arg(TRACEFS).status();
        }
    }
}

/// bpftrace's version of the probe's logic for three stages, filtered by the receiving
/// interface's name (unique to the test's namespace): a NET_RX softirq counts when it
/// handled a matching packet, from its entry to its exit.
fn script(iface: &str) -> String {
    format!(
        r#"tracepoint:net:netif_receive_skb /str(args->name) == "{iface}"/ {{ @rcv = count(); @ours[cpu] = 1; }}
tracepoint:net:netif_rx /str(args->name) == "{iface}"/ {{ @rx = count(); }}
tracepoint:irq:softirq_entry /args->vec == 3/ {{ @t0[cpu] = nsecs; @ours[cpu] = 0; }}
tracepoint:irq:softirq_exit /args->vec == 3/ {{
  if (@ours[cpu] && @t0[cpu]) {{ @sirq_ns = sum(nsecs - @t0[cpu]); @sirq = count(); }}
  @t0[cpu] = 0;
}}
END {{ clear(@t0); clear(@ours); }}
"#
    )
}

/// The `@name` values of bpftrace's `-f json` output.
fn maps(out: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut all = serde_json::Map::new();
    for line in out.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            if v["type"] == "map" {
                if let Some(m) = v["data"].as_object() {
                    all.extend(m.clone());
                }
            }
        }
    }
    all
}

#[test]
fn counts_match_bpftrace_exactly_and_softirq_time_within_ten_percent() {
    if !testkit::privilege::require("probe vs bpftrace: namespaces, BPF, tracefs") {
        return;
    }
    if Command::new("bpftrace").arg("--version").output().is_err() {
        testkit::privilege::skip_missing_tool("bpftrace");
        return;
    }
    let _tracefs = Tracefs::ensure();
    let pair = Pair::new("prbbt").expect("veth pair");
    for side in [Side::A, Side::B] {
        let st = pair
            .exec(side, "sysctl")
            .args(["-qw", "net.ipv6.conf.all.disable_ipv6=1"])
            .status()
            .unwrap();
        assert!(st.success());
    }
    let (addr_a, addr_b) = (pair.addr(Side::A), pair.addr(Side::B));
    let rx = in_netns(&ns_path(&pair, Side::B), move || {
        UdpSocket::bind((addr_b, 9000)).unwrap()
    });
    rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let tx = in_netns(&ns_path(&pair, Side::A), move || {
        UdpSocket::bind((addr_a, 0)).unwrap()
    });
    // ARP once before either tracer starts, so that the window holds the datagrams only.
    tx.send_to(b"warm", (addr_b, 9000)).unwrap();
    rx.recv_from(&mut [0u8; 64]).unwrap();
    std::thread::sleep(Duration::from_millis(200));

    // bpftrace writes its JSON lines to a file: the test waits for "attached_probes" there
    // before it counts (bpftrace compiles with LLVM first, and a SIGINT before it attached
    // is not a clean stop).
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("bpftrace.json");
    let mut bt = ChildGuard::spawn(
        Command::new("bpftrace")
            .args(["-f", "json", "-o"])
            .arg(&out)
            .arg("-e")
            .arg(script(pair.iface(Side::B))),
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&out)
        .unwrap_or_default()
        .contains("attached_probes")
    {
        assert!(
            bt.is_running() && std::time::Instant::now() < deadline,
            "bpftrace did not attach: {}",
            bt.stderr_so_far()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let b = ns_path(&pair, Side::B);
    let filter = Filter {
        netns: procfs::netns_inode(&b).unwrap(),
        ifindex: netns::ifindex(Some(&b), pair.iface(Side::B)).unwrap(),
        pid: 0,
        tags: false,
    };
    let probe = Probe::attach(filter).unwrap();
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        bt.is_running(),
        "bpftrace ended early: {}",
        bt.stderr_so_far()
    );
    let s0 = probe.snapshot().unwrap();

    const N: u64 = 500;
    let mut buf = [0u8; 256];
    for i in 0..N {
        tx.send_to(&[i as u8; 100], (addr_b, 9000)).unwrap();
        rx.recv_from(&mut buf).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let d = probe.snapshot().unwrap().since(&s0);
    let done = bt.stop("INT", Duration::from_secs(30)).unwrap();
    assert_eq!(done.code(), Some(0), "bpftrace: {}", done.stderr);
    let m = maps(&std::fs::read_to_string(&out).unwrap());
    let get = |k: &str| m.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);

    let ours = |n: &str| d.stage(n).unwrap().count;
    assert_eq!(ours("netif_receive_skb"), N);
    assert_eq!(get("@rcv"), ours("netif_receive_skb"), "bpftrace: {m:?}");
    assert_eq!(get("@rx"), ours("netif_rx"), "bpftrace: {m:?}");
    let sirq = d.stage("softirq_net_rx").unwrap();
    assert_eq!(
        get("@sirq"),
        sirq.count,
        "NET_RX softirqs that handled our packets"
    );
    let (theirs, mine) = (get("@sirq_ns") as f64, sirq.sum_ns as f64);
    eprintln!(
        "probe vs bpftrace: netif_receive_skb {} / {}, netif_rx {} / {}, NET_RX softirqs {} / {}, \
         softirq time {mine} / {theirs} ns",
        ours("netif_receive_skb"),
        get("@rcv"),
        ours("netif_rx"),
        get("@rx"),
        sirq.count,
        get("@sirq")
    );
    assert!(
        (mine - theirs).abs() <= 0.10 * theirs,
        "softirq time: probe {mine} ns, bpftrace {theirs} ns"
    );
}
