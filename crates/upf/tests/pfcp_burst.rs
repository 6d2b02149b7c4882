//! A burst of PFCP requests against the UPF service, sent back to back without waiting for any
//! answer (one establishment in a 5000-UE `bench sessions` run once waited out T1 because a request
//! was dropped by a full receive buffer). Every request must be answered the first time: no
//! retransmission needed, nothing dropped by the kernel.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::time::Instant;

use pfcp::requests::{self, SessionSpec};
use pfcp::{Message, PfcpMessage};
use upf::service::PFCP_SOCKET_BUFFER;

/// Requests in the burst: several times what the default 208 KiB receive buffer holds
/// (each establishment request costs over 1 KiB of it), well within [`PFCP_SOCKET_BUFFER`].
const BURST: u32 = 1500;

/// What `net.core.rmem_max` lets an unprivileged socket have.
fn rmem_max() -> usize {
    std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_burst_of_establishments_is_answered_without_retransmission() {
    // Without CAP_NET_ADMIN the buffers stop at net.core.rmem_max (208 KiB by default),
    // which a burst this size overflows.
    if rmem_max() < PFCP_SOCKET_BUFFER
        && !testkit::privilege::require("SO_RCVBUFFORCE past net.core.rmem_max")
    {
        return;
    }
    let (svc, _dp, mut p) = common::start();
    p.request(None, requests::association_setup(common::smf_node(), 1));
    let upf = p.upf;
    // The answers are read on a thread of their own as they come, into a socket sized as
    // the SMF's are, so that this side is not what drops them.
    upf::service::size_pfcp_socket(&p.sock);
    let reader = p.sock.try_clone().unwrap();
    let answers = std::thread::spawn(move || {
        let mut got = BTreeSet::new();
        let mut buf = [0u8; 65_536];
        let end = Instant::now() + common::WAIT;
        while got.len() < BURST as usize && Instant::now() < end {
            let Ok((n, from)) = reader.recv_from(&mut buf) else {
                continue;
            };
            assert_eq!(from, upf);
            let m = PfcpMessage::parse(&buf[..n]).unwrap();
            if let Message::SessionEstablishmentResponse(r) = &m.message {
                assert!(r.cause.is_accepted(), "{:?}", r.cause);
                assert!(got.insert(m.header.sequence), "answered twice");
            }
        }
        got
    });
    for i in 0..BURST {
        let spec = SessionSpec::new(
            common::smf_node(),
            u64::from(i) + 1,
            Ipv4Addr::LOCALHOST,
            Ipv4Addr::from(0x0a2d_0000 + i),
        );
        let seq = 1000 + i;
        let m = Message::SessionEstablishmentRequest(requests::establishment(&spec));
        p.sock
            .send_to(&PfcpMessage::new(seq, Some(0), m).emit(), upf)
            .unwrap();
    }
    let got = answers.join().unwrap();
    let missing: Vec<u32> = (1000..1000 + BURST).filter(|s| !got.contains(s)).collect();
    let report = svc.stop().unwrap();
    assert_eq!(report.pfcp_dropped, 0, "the kernel dropped requests");
    assert!(
        missing.is_empty(),
        "unanswered: {} of {BURST}",
        missing.len()
    );
    assert_eq!(report.stats.sessions_established, u64::from(BURST));
    assert_eq!(report.stats.retransmissions_answered, 0);
    // The kernel reports twice the size asked (its bookkeeping included).
    assert!(
        report.buffers.recv / 2 >= PFCP_SOCKET_BUFFER,
        "{:?}",
        report.buffers
    );
}
