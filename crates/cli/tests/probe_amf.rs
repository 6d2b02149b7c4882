//! `steer5g probe sweep --target amf`: the offered-load sweep pointed at our AMF. The core
//! and the RAN emulator run in the sweep's two namespaces and speak NGAP over SCTP over UDP
//! across its veth; the probe on the receiver's veth must count exactly the packets the
//! gNB sent (nothing else crosses that link), and each step must say what the AMF did. The
//! UPF targets are `bench upf --rates` on the path named.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use testkit::process::run_timeout;

#[test]
fn the_amf_sweep_counts_every_gnb_packet_and_reports_each_step() {
    if !testkit::privilege::require("the AMF sweep makes namespaces and loads BPF") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let done = run_timeout(
        Command::new(env!("CARGO_BIN_EXE_steer5g"))
            .args(["--json", "probe", "sweep", "--target", "amf"])
            .args(["--rates", "200,max", "--condition", "idle"])
            .args(["--step-seconds", "1.5", "--out"])
            .arg(out.path()),
        Duration::from_secs(240),
    )
    .unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let r: serde_json::Value = serde_json::from_str(done.stdout.trim()).expect("one JSON object");
    assert_eq!(r["target"], "amf");
    assert_eq!(r["steering"], "rps");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for st in steps {
        let completed = st["procedures_completed"].as_u64().unwrap();
        assert!(completed > 0, "no procedure completed: {st}");
        assert_eq!(st["procedures_failed"], 0, "{st}");
        // Every packet the gNB sent crossed the veth into the AMF's namespace, and nothing
        // else did (static ARP, no IPv6): each was taken in by the stack or seen dropped,
        // short by at most what the kernel skipped of the probe and 2 %, the sink sweep
        // test's allowance: with both CPUs busy some packets are never seen at
        // `netif_receive_skb` (the sink sweep: 1-2 of 602 read but not seen; this test in a
        // CI run of the whole suite: 5 of 529; docs/PROBE.md). A drop is possible: another
        // test may load the receiver's CPU and overflow its backlog.
        let sent = st["offered_packets"].as_u64().unwrap();
        let received = st["received"].as_u64().unwrap();
        let dropped: u64 = st["dropped"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        let missed = st["missed_events"].as_u64().unwrap();
        assert!(
            received + dropped <= sent && sent - received - dropped <= missed + sent / 50,
            "the gNB sent {sent} packets, the AMF's veth took in {received} and dropped \
             {dropped} ({missed} probe events missed): {}",
            st["dropped"]
        );
        // The receive happened on the receiver's CPU, timed, with the core's wake-ups.
        assert!(st["softirq_ns_per_packet"].as_f64().unwrap() > 0.0, "{st}");
        assert!(
            st["amf_cpu_us_per_procedure"].as_f64().unwrap() > 0.0,
            "{st}"
        );
        let stage = |n: &str| {
            st["stages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == n)
                .map_or(0, |s| s["count"].as_u64().unwrap())
        };
        assert!(
            stage("sched_wakeup") > 0,
            "no wake-up of the core counted: {st}"
        );
        assert_eq!(stage("netif_receive_skb"), received);
    }
    // The paced step offered about what was asked; the closed loop more.
    let paced = steps[0]["offered_runs_per_s"].as_f64().unwrap();
    assert!(
        (150.0..=250.0).contains(&paced),
        "200 runs/s asked, {paced} offered"
    );
    assert!(steps[1]["target_runs_per_s"].is_null());
    for f in [
        "amf-sweep.json",
        "amf-sweep.csv",
        "amf-sweep-stages.svg",
        "amf-sweep-delivery.svg",
        "amf-core.log",
    ] {
        assert!(out.path().join(f).is_file(), "{f} missing");
    }
    let csv = std::fs::read_to_string(out.path().join("amf-sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

#[test]
fn the_upf_targets_run_the_upf_rate_sweep_on_their_path() {
    if !testkit::privilege::require("the UPF sweep makes namespaces and loads BPF") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let done = run_timeout(
        Command::new(env!("CARGO_BIN_EXE_steer5g"))
            .args(["--json", "probe", "sweep", "--target", "upf-xdp"])
            .args(["--rates", "5k", "--step-seconds", "0.5", "--out"])
            .arg(out.path()),
        Duration::from_secs(180),
    )
    .unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let r: serde_json::Value = serde_json::from_str(done.stdout.trim()).expect("one JSON object");
    assert_eq!(r["scenario"], "upf-rates");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0]["path"], "xdp");
    assert!(steps[0]["received"].as_u64().unwrap() > 0, "{}", steps[0]);
    assert!(out.path().join("upf-rates.json").is_file());
}
