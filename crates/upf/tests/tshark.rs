//! Oracle: Wireshark's PFCP dissector reads every message of a captured session life cycle
//! (both directions, errors included) without a malformed packet or an expert error.
#![allow(clippy::unwrap_used)]

mod common;

use testkit::capture::Capture;
use testkit::tshark::{self, Severity};

#[test]
fn captured_pfcp_exchange_is_clean_for_tshark() {
    if !testkit::privilege::require("packet capture on lo") {
        return;
    }
    let (svc, dp, peer) = common::start();
    let port = svc.local_addr().port();
    let path = std::env::temp_dir().join(format!("upf-pfcp-{}-{port}.pcapng", std::process::id()));
    let cap = Capture::start(None, "lo", &format!("udp port {port}"), &path).unwrap();
    let report = common::life_cycle(svc, dp, peer);
    let file = cap.stop().unwrap();
    let r = tshark::check(&file, &[format!("udp.port=={port},pfcp")]).unwrap();
    let _ = std::fs::remove_file(&file);
    let pfcp = r.packets.iter().filter(|p| p.protocol == "PFCP").count();
    assert!(pfcp >= 20, "PFCP frames: {pfcp}\n{}", r.summary());
    assert_eq!(pfcp, r.total(), "every frame is PFCP\n{}", r.summary());
    assert_eq!(r.malformed, 0, "{:?}", r.malformed_details());
    assert_eq!(r.expert_count(Severity::Error), 0, "{:?}", r.errors);
    assert_eq!(r.expert_count(Severity::Warning), 0, "{:?}", r.warnings);
    assert!(
        r.packets
            .iter()
            .any(|p| p.info.contains("PFCP Session Modification Response")),
        "{}",
        r.summary()
    );
    // The capture holds what the UPF said it sent (a slow CI machine may add retransmissions).
    let reports = r
        .packets
        .iter()
        .filter(|p| p.info.contains("PFCP Session Report Request"))
        .count();
    assert!(report.stats.session_reports >= 1);
    assert!(
        reports as u64 >= report.stats.session_reports,
        "{}",
        r.summary()
    );
}
