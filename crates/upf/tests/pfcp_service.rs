//! A PFCP peer (our codec over UDP on loopback) against the UPF service: the session life
//! cycle, the error causes, retransmissions and usage reports.
#![allow(clippy::unwrap_used)]

mod common;

#[test]
fn session_life_cycle_over_udp() {
    let (svc, dp, peer) = common::start();
    common::life_cycle(svc, dp, peer);
}

#[test]
fn stop_removes_live_sessions_from_the_datapath() {
    use pfcp::requests::{self, SessionSpec};
    use pfcp::Message;
    use std::net::Ipv4Addr;
    use upf::Datapath;

    let (svc, dp, mut p) = common::start();
    p.request(None, requests::association_setup(common::smf_node(), 1));
    for i in 0..3u8 {
        let spec = SessionSpec::new(
            common::smf_node(),
            u64::from(i) + 1,
            Ipv4Addr::LOCALHOST,
            Ipv4Addr::new(10, 45, 1, i),
        );
        let r = p.request(
            Some(0),
            Message::SessionEstablishmentRequest(requests::establishment(&spec)),
        );
        assert!(matches!(
            r.message,
            Message::SessionEstablishmentResponse(_)
        ));
    }
    assert_eq!(dp.entries().unwrap().uplink, 3);
    let report = svc.stop().unwrap();
    assert_eq!(report.sessions_at_stop, 3);
    assert_eq!(report.entries_after, Some(upf::Entries::default()));
    assert_eq!(report.datapath, "none");
}
