//! `steer5g probe` as scripts drive it: one JSON object with the documented shape, the
//! report still printed after SIGINT, nothing of the probe left in the kernel after SIGINT
//! or SIGKILL, exit 3 without the privilege and 2 for a filter that names nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use testkit::process::{run_timeout, ChildGuard};

fn steer5g() -> Command {
    Command::new(env!("CARGO_BIN_EXE_steer5g"))
}

/// Ids of the probe's programs loaded now (`bpftool prog show`).
fn probe_programs() -> BTreeSet<u64> {
    let out = Command::new("bpftool")
        .args(["prog", "show", "--json"])
        .output()
        .expect("bpftool runs");
    assert!(out.status.success(), "bpftool prog show failed");
    let progs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("bpftool json");
    progs
        .iter()
        .filter(|p| {
            p["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(probe::PROGRAM_PREFIX))
        })
        .filter_map(|p| p["id"].as_u64())
        .collect()
}

/// Waits until the probe started as `child` has attached, and returns its programs: those
/// that were not loaded before it started.
fn attached(child: &mut ChildGuard, before: &BTreeSet<u64>) -> BTreeSet<u64> {
    child
        .wait_for_stderr("probe attached", Duration::from_secs(20))
        .expect("the probe attaches");
    let mine: BTreeSet<u64> = probe_programs().difference(before).copied().collect();
    assert!(
        mine.len() >= 15,
        "only {} probe programs loaded while it runs",
        mine.len()
    );
    mine
}

/// Waits (the kernel frees programs after an RCU grace period) until none of `ids` is left.
fn assert_gone(ids: &BTreeSet<u64>, after: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<u64> = probe_programs().intersection(ids).copied().collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "after {after}, programs {left:?} are still loaded"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn check_shape(json: &serde_json::Value) {
    let stages = json["stages"].as_array().expect("a stages array");
    for name in [
        "napi_poll",
        "netif_rx",
        "netif_receive_skb",
        "softirq_net_rx",
        "kfree_skb",
    ] {
        let s = stages
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("stage {name} missing"));
        assert!(s["count"].is_u64(), "{name}: count");
        assert!(s["time_ns"].is_u64(), "{name}: time_ns");
    }
    assert!(json["duration_s"].as_f64().is_some_and(|d| d > 0.0));
}

// One test for everything that attaches: the programs found loaded must be this test's.
#[test]
fn json_shape_and_detach_after_sigint_and_sigkill() {
    if !testkit::privilege::require("steer5g probe loads BPF") {
        return;
    }
    // Whole machine, a short interval: the documented object.
    let done = run_timeout(
        steer5g().args(["probe", "--duration", "1", "--json"]),
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(done.code(), Some(0), "stderr: {}", done.stderr);
    let json: serde_json::Value = serde_json::from_str(done.stdout.trim()).expect("one object");
    check_shape(&json);

    // SIGINT ends the interval early, the report still comes, and the programs go.
    let before = probe_programs();
    let mut child =
        ChildGuard::spawn(steer5g().args(["probe", "--duration", "60", "--json"])).unwrap();
    let mine = attached(&mut child, &before);
    let done = child.stop("INT", Duration::from_secs(20)).unwrap();
    assert_eq!(done.code(), Some(0), "stderr: {}", done.stderr);
    let json: serde_json::Value = serde_json::from_str(done.stdout.trim()).expect("report");
    check_shape(&json);
    assert!(json["duration_s"].as_f64().unwrap() < 60.0);
    assert_gone(&mine, "SIGINT");

    // SIGKILL: no exit path runs, the kernel drops the links with the process's files.
    let before = probe_programs();
    let mut child = ChildGuard::spawn(steer5g().args(["probe", "--duration", "60"])).unwrap();
    let mine = attached(&mut child, &before);
    let done = child.stop("KILL", Duration::from_secs(20)).unwrap();
    assert_eq!(done.code(), None, "killed by the signal");
    assert_gone(&mine, "SIGKILL");
}

/// SIGINT in the middle of a sweep: it ends after the current step, reports the steps done,
/// and removes its namespaces (the default action would have left them).
#[test]
fn a_sweep_interrupted_reports_its_steps_and_removes_its_namespaces() {
    if !testkit::privilege::require("probe sweep makes namespaces and loads BPF") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let mut child = ChildGuard::spawn(
        steer5g()
            .args(["--json", "probe", "sweep", "--condition", "idle"])
            .args([
                "--rates",
                "2k,2k,2k,2k,2k,2k,2k,2k",
                "--step-seconds",
                "1",
                "--out",
            ])
            .arg(out.path()),
    )
    .unwrap();
    let tag = format!("s5p{:x}", child.pid());
    child
        .wait_for_stderr("sweep step 1/8 done", Duration::from_secs(30))
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let done = child.stop("INT", Duration::from_secs(30)).unwrap();
    assert_eq!(done.code(), Some(0), "stderr: {}", done.stderr);
    let json: serde_json::Value = serde_json::from_str(done.stdout.trim()).expect("report");
    assert_eq!(json["interrupted"], true);
    let steps = json["steps"].as_array().unwrap().len();
    assert!((1..8).contains(&steps), "{steps} steps");
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&left.stdout).contains(&tag),
        "namespaces {tag}* left after SIGINT"
    );
}

#[test]
fn without_the_privilege_it_exits_3() {
    if !testkit::privilege::require("dropping capabilities needs root") {
        return;
    }
    // Root without a capability: the bounding set emptied before exec.
    let done = run_timeout(
        Command::new("setpriv")
            .args(["--bounding-set=-all", "--inh-caps=-all"])
            .arg(env!("CARGO_BIN_EXE_steer5g"))
            .args(["probe", "--duration", "1"]),
        Duration::from_secs(30),
    )
    .unwrap();
    assert_eq!(done.code(), Some(3), "stderr: {}", done.stderr);
    assert!(done.stderr.contains("not permitted"), "{}", done.stderr);
    assert!(done.stdout.is_empty());
}

#[test]
fn filters_that_name_nothing_exit_2() {
    for args in [
        &["--netns", "no-such-namespace-s5g"][..],
        &["--iface", "no-such-if0"][..],
        &["--pid", "0"][..],
        &["--duration", "-1"][..],
        &["--netns", "4026531840", "--iface", "lo"][..],
        &["sweep", "--rx-cpu", "4096"][..],
        &["sweep", "--rates", "10k,fast"][..],
        &["sweep", "--size", "8"][..],
        &["sweep", "--step-seconds", "0"][..],
        &["sweep", "--rx-steering", "sideways"][..],
        &["sweep", "--target", "upf-xdp", "--condition", "loaded"][..],
        &["sweep", "--target", "upf-tun", "--rx-steering", "off"][..],
        &["sweep", "--target", "amf", "--rates", "0"][..],
        &["sweep", "--target", "amf", "--proto", "tcp"][..],
    ] {
        let done = run_timeout(steer5g().arg("probe").args(args), Duration::from_secs(30)).unwrap();
        assert_eq!(done.code(), Some(2), "{args:?}: {}", done.stderr);
    }
}
