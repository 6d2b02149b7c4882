//! A short offered-load sweep over namespaces of its own: every datagram sent is either read
//! by the sink or seen dropped by the probe, with its reason; the report and its files have
//! the documented shape; nothing of the topology is left. Needs root; fails in CI without.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use probe::sweep::topo::{Steering, Topology};
use probe::sweep::{self, Condition, Proto, Rate, Settings};

#[test]
fn every_datagram_is_read_or_seen_dropped() {
    if !testkit::privilege::require("probe sweep: namespaces and BPF") {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let tag = format!("s5t{:x}", std::process::id());
    let settings = Settings {
        proto: Proto::Udp,
        rates: vec![Rate::Pps(2_000), Rate::Max],
        payload: 64,
        step: Duration::from_millis(300),
        max_packets: 200_000,
        conditions: vec![Condition::Idle, Condition::Loaded],
        gen_cpu: 0,
        rx_cpu: cpus.saturating_sub(1).min(1),
        tag: tag.clone(),
        steering: Steering::Rps,
    };
    let progress = std::cell::Cell::new((0, 0));
    let report = sweep::run(&settings, &|done, total| progress.set((done, total))).unwrap();
    assert_eq!(progress.get(), (4, 4), "progress after every step");
    assert_eq!(report.steps.len(), 4);
    for s in &report.steps {
        assert!(s.sent > 0, "{s:?}");
        // Every datagram is read or seen dropped, in the step that sent it, at a paced
        // rate, but for drops whose kfree_skb the kernel did not run the probe for (its
        // recursion guard, counted in `missed_events`). At the unpaced rate some have gone
        // neither way, unexplained (4 of 170 000 in a release run; 71 of 36 365 with both
        // CPUs busy with other work; 761 of 59 357, 1.3 %, in a CI run of the whole suite;
        // docs/PROBE.md): 2 % is allowed there.
        let slack = s.missed_events
            + if s.target_pps.is_some() {
                0
            } else {
                s.sent / 50
            };
        assert!(
            s.unaccounted.unsigned_abs() <= slack,
            "sent {} read {} dropped {:?}: {} unaccounted ({} missed events)",
            s.sent,
            s.delivered,
            s.dropped,
            s.unaccounted,
            s.missed_events
        );
        let received = s
            .stages
            .iter()
            .find(|st| st.name == "netif_receive_skb")
            .unwrap()
            .count;
        // What reached the stack is what was read plus what the stack dropped after it,
        // less the events the kernel did not run the probe for (its recursion guard),
        // which the step reports. With both CPUs busy with other work, 1-2 of 602
        // datagrams read were not seen at netif_receive_skb (nor their tags) with no miss
        // counted (docs/PROBE.md, not explained yet): 1 % is allowed for that.
        assert!(
            received <= s.sent && received + s.missed_events + s.delivered / 100 >= s.delivered,
            "netif_receive_skb {received} (+{} missed events), sent {}, read {}",
            s.missed_events,
            s.sent,
            s.delivered
        );
        assert!(s.packets_per_poll >= 1.0, "{}", s.packets_per_poll);
    }
    // The slow step: nothing dropped, every datagram read, and its latency keyed by tag.
    let slow = &report.steps[0];
    assert_eq!(slow.delivered, slow.sent);
    let by_seq = slow
        .stages
        .iter()
        .find(|st| st.name == "read_by_sequence")
        .unwrap();
    // Keyed by the tags the probe saw: the 1-2 of 602 datagrams read whose tag it did not
    // see (above) are missing here too (seen once in CI with both CPUs busy: 601 of 602).
    assert!(
        by_seq.count <= slow.delivered && by_seq.count + slow.delivered / 100 >= slow.delivered,
        "read_by_sequence {} of {} read",
        by_seq.count,
        slow.delivered
    );
    assert!(report.max_offered_pps >= slow.offered_pps);

    let dir = tempfile::tempdir().unwrap();
    sweep::write_plots(dir.path(), &report).unwrap();
    for f in ["sweep-stages.svg", "sweep-delivery.svg", "sweep-napi.svg"] {
        assert!(dir.path().join(f).metadata().unwrap().len() > 1000, "{f}");
    }
    assert_eq!(report.csv().lines().count(), 5);
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["steps"][0]["stages"].as_array().unwrap().len() > 10);

    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&netns.stdout).contains(&tag),
        "the sweep's namespaces are gone"
    );
}

#[test]
fn the_overhead_compares_the_same_load_both_ways() {
    if !testkit::privilege::require("probe overhead: namespaces and BPF") {
        return;
    }
    let stats_before = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap();
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let settings = sweep::overhead::OverheadSettings {
        rate: 2_000,
        payload: 64,
        step: Duration::from_millis(300),
        rounds: 1,
        gen_cpu: 0,
        rx_cpu: cpus.saturating_sub(1).min(1),
        tag: format!("s5v{:x}", std::process::id()),
    };
    let r = sweep::overhead::run(&settings, &|_, _| {}).unwrap();
    assert_eq!(r.rounds.len(), 2);
    let (detached, attached) = (&r.rounds[0], &r.rounds[1]);
    assert!(!detached.attached && attached.attached);
    assert_eq!(detached.events, 0);
    assert!(
        attached.events >= attached.delivered,
        "at least one program run per packet"
    );
    assert!(detached.delivered > 0 && attached.delivered > 0);
    assert!(r
        .programs
        .iter()
        .any(|p| p.name == "s5p_rcv_skb" && p.runs_per_packet >= 1.0));
    // The kernel's run statistics are back as they were.
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap(),
        stats_before
    );
}

/// What the receiver's veth queue says about where its packets' softirq goes.
fn queue(t: &Topology, file: &str) -> String {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &t.rx_ns, "cat"])
        .arg(format!("/sys/class/net/{}/queues/rx-0/{file}", t.rx_if))
        .output()
        .unwrap();
    assert!(out.status.success(), "{file}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn the_receive_is_steered_as_asked_and_rfs_is_put_back() {
    if !testkit::privilege::require("probe sweep topology: namespaces and sysfs") {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let rx_cpu = cpus.saturating_sub(1).min(1);
    let tag = format!("s5s{:x}", std::process::id());
    let entries = || -> u64 {
        std::fs::read_to_string("/proc/sys/net/core/rps_sock_flow_entries")
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let before = entries();

    let mask = |v: &str| u64::from_str_radix(&v.replace(',', ""), 16).unwrap();
    let t = Topology::create_steered(&tag, rx_cpu, Steering::Rps).unwrap();
    assert_eq!(mask(&queue(&t, "rps_cpus")), 1 << rx_cpu);
    drop(t);

    let t = Topology::create_steered(&tag, rx_cpu, Steering::Off).unwrap();
    assert_eq!(mask(&queue(&t, "rps_cpus")), 0);
    drop(t);

    let t = Topology::create_steered(&tag, rx_cpu, Steering::Rfs).unwrap();
    assert_eq!(
        mask(&queue(&t, "rps_cpus")).count_ones() as usize,
        cpus.min(64)
    );
    assert_eq!(queue(&t, "rps_flow_cnt"), "4096");
    assert!(entries() >= 32_768, "the global RFS table is sized");
    drop(t);
    assert_eq!(entries(), before, "rps_sock_flow_entries put back");
    let left = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&left.stdout).contains(&tag),
        "namespaces left"
    );
}

#[test]
fn every_tcp_message_is_read_and_its_reads_are_timed_by_skb() {
    if !testkit::privilege::require("probe sweep over TCP: namespaces and BPF") {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let settings = Settings {
        proto: Proto::Tcp,
        rates: vec![Rate::Pps(2_000), Rate::Max],
        payload: 200,
        step: Duration::from_millis(300),
        max_packets: 200_000,
        conditions: vec![Condition::Idle],
        gen_cpu: 0,
        rx_cpu: cpus.saturating_sub(1).min(1),
        tag: format!("s5c{:x}", std::process::id()),
        steering: Steering::Rps,
    };
    let report = sweep::run(&settings, &|_, _| {}).unwrap();
    assert_eq!(report.proto, Proto::Tcp);
    assert_eq!(report.steps.len(), 2);
    for st in &report.steps {
        assert!(st.sent > 0, "{st:?}");
        // TCP neither loses nor duplicates a message: every one written is read, whole.
        assert_eq!(st.delivered, st.sent, "{st:?}");
        assert_eq!(st.unaccounted, 0);
        let count = |n: &str| {
            st.stages
                .iter()
                .find(|s| s.name == n)
                .map_or(0, |s| s.count)
        };
        assert!(count("netif_receive_skb") > 0, "{st:?}");
        // The copy to the reader names its skb: TCP reads are timed without a tag.
        assert!(count("skb_copy_datagram_iovec") > 0, "{st:?}");
        assert_eq!(count("udp_fail_queue_rcv_skb"), 0);
    }
    // The paced step carried about its rate; the unpaced one more.
    assert!(report.steps[0].offered_pps > 1_000.0 && report.steps[0].offered_pps < 3_000.0);
    assert!(report.steps[1].offered_pps > report.steps[0].offered_pps);
}
