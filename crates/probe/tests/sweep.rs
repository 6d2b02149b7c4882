//! A short offered-load sweep over namespaces of its own: every datagram sent is either read
//! by the sink or seen dropped by the probe, with its reason; the report and its files have
//! the documented shape; nothing of the topology is left. Needs root; fails in CI without.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use probe::sweep::{self, Condition, Rate, Settings};

#[test]
fn every_datagram_is_read_or_seen_dropped() {
    if !testkit::privilege::require("probe sweep: namespaces and BPF") {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let tag = format!("s5t{:x}", std::process::id());
    let settings = Settings {
        rates: vec![Rate::Pps(2_000), Rate::Max],
        payload: 64,
        step: Duration::from_millis(300),
        max_packets: 200_000,
        conditions: vec![Condition::Idle, Condition::Loaded],
        gen_cpu: 0,
        rx_cpu: cpus.saturating_sub(1).min(1),
        tag: tag.clone(),
    };
    let progress = std::cell::Cell::new((0, 0));
    let report = sweep::run(&settings, &|done, total| progress.set((done, total))).unwrap();
    assert_eq!(progress.get(), (4, 4), "progress after every step");
    assert_eq!(report.steps.len(), 4);
    for s in &report.steps {
        assert!(s.sent > 0, "{s:?}");
        // Below the onset of drops every datagram is read; in overload every one is read or
        // seen dropped, within 0.1 %: in multi-step sweeps at full rate, up to 242 of about
        // 400 000 once entered netif_rx and were neither seen at netif_receive_skb in that
        // step nor freed through a tracepoint (docs/PROBE.md, not explained yet).
        let slack = if s.target_pps.is_some() {
            0
        } else {
            s.sent / 1000
        };
        assert!(
            s.unaccounted.unsigned_abs() <= slack,
            "sent {} read {} dropped {:?}: {} unaccounted",
            s.sent,
            s.delivered,
            s.dropped,
            s.unaccounted
        );
        let received = s
            .stages
            .iter()
            .find(|st| st.name == "netif_receive_skb")
            .unwrap()
            .count;
        // What reached the stack is what was read plus what the stack dropped after it.
        assert!(received <= s.sent && received >= s.delivered);
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
    assert_eq!(by_seq.count, slow.delivered);
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
