//! End-to-end scenarios between endpoints over a simulated link with virtual time.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::VecDeque;
use std::time::Duration;

use common::*;
use sctp::{CloseReason, ErrorCause, Event, State};

#[test]
fn handshake() {
    let (net, c, s) = Net::pair(1, |_| {});
    let ci = net.nodes[0].ep.info(c).unwrap();
    let si = net.nodes[1].ep.info(s).unwrap();
    assert_eq!(ci.state, State::Established);
    assert_eq!(si.state, State::Established);
    assert_eq!(ci.outbound_streams, 16);
    assert_eq!(si.inbound_streams, 16);
    assert_eq!(ci.local_vtag, si.peer_vtag);
    assert_eq!(si.local_vtag, ci.peer_vtag);
    assert_eq!(net.nodes[1].ep.stats().associations_established, 1);
    // 4-way handshake: INIT, INIT ACK, COOKIE ECHO, COOKIE ACK.
    assert_eq!(net.sent, 4);
}

fn msg_count(net: &Net, node: usize) -> usize {
    net.nodes[node]
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Message(_)))
        .count()
}

/// Sends `n` messages each way (sizes 1..=5000, 16 streams, 25% unordered) under `impair`
/// and checks exactly-once, in-order, intact delivery.
fn bulk(seed: u64, impair: Impair, n: u32) -> (Net, sctp::AssocId, sctp::AssocId) {
    let (mut net, c, s) = Net::pair(seed, |_| {});
    net.impair = impair;
    let plan_c = plan(seed * 10, n, 16, 5000);
    let plan_s = plan(seed * 10 + 1, n, 16, 5000);
    let mut qc: VecDeque<_> = plan_c.clone().into();
    let mut qs: VecDeque<_> = plan_s.clone().into();
    let start = net.now;
    let ok = net.run_until(Duration::from_secs(3600), |net| {
        feed(net, 0, c, &mut qc);
        feed(net, 1, s, &mut qs);
        msg_count(net, 1) == n as usize && msg_count(net, 0) == n as usize
    });
    let ci = net.nodes[0].ep.info(c);
    let si = net.nodes[1].ep.info(s);
    assert!(
        ok,
        "not all delivered: client got {}, server got {}; client {ci:?} server {si:?}",
        msg_count(&net, 0),
        msg_count(&net, 1)
    );
    eprintln!(
        "seed {seed}: virtual {:?}, packets {} dropped {}\n client {:?}\n client assoc {:?}",
        net.now - start,
        net.sent,
        net.dropped,
        net.nodes[0].ep.stats(),
        ci.as_ref().map(|i| (&i.counters, i.cwnd, i.rto, i.srtt)),
    );
    check_delivery(&net.messages(1), &plan_c);
    check_delivery(&net.messages(0), &plan_s);
    assert!(net.closed(0).is_empty() && net.closed(1).is_empty());
    (net, c, s)
}

/// [`bulk`] with 1000 messages each way over a 5 ms link that `impair` degrades further.
fn thousand_each_way(
    seed: u64,
    impair: impl FnOnce(&mut Impair),
) -> (Net, sctp::AssocId, sctp::AssocId) {
    let mut link = Impair {
        delay: Duration::from_millis(5),
        ..Impair::default()
    };
    impair(&mut link);
    bulk(seed, link, 1000)
}

/// The client's and the server's endpoint counters.
fn both_stats(net: &Net) -> (&sctp::EndpointStats, &sctp::EndpointStats) {
    (net.nodes[0].ep.stats(), net.nodes[1].ep.stats())
}

#[test]
fn thousand_messages_each_way_no_loss() {
    let (net, c, s) = thousand_each_way(2, |_| {});
    let st = net.nodes[0].ep.stats().clone();
    assert_eq!(st.retransmissions, 0, "{st:?}");
    assert_eq!(net.nodes[1].ep.stats().retransmissions, 0);
    let ci = net.nodes[0].ep.info(c).unwrap();
    let si = net.nodes[1].ep.info(s).unwrap();
    assert!(ci.srtt.is_some());
    assert_eq!(ci.counters.messages_delivered, 1000);
    assert_eq!(si.counters.messages_delivered, 1000);
}

#[test]
fn five_percent_loss() {
    let (net, ..) = thousand_each_way(3, |i| i.loss = 0.05);
    let (a, b) = both_stats(&net);
    assert!(a.retransmissions + b.retransmissions > 0);
    assert!(a.fast_retransmits + b.fast_retransmits > 0, "{a:?} {b:?}");
}

#[test]
fn twenty_percent_loss() {
    let (net, c, s) = thousand_each_way(4, |i| i.loss = 0.20);
    let (a, b) = both_stats(&net);
    assert!(a.retransmissions > 0 && b.retransmissions > 0);
    let ci = net.nodes[0].ep.info(c).unwrap();
    let si = net.nodes[1].ep.info(s).unwrap();
    // Gap ack blocks were both sent and received.
    assert!(ci.counters.sacks_with_gaps_sent > 0 && si.counters.sacks_with_gaps_received > 0);
}

#[test]
fn reordering() {
    let (net, c, _) = thousand_each_way(5, |i| i.jitter = Duration::from_millis(20));
    let ci = net.nodes[0].ep.info(c).unwrap();
    assert!(ci.counters.sacks_with_gaps_sent > 0);
}

#[test]
fn duplication() {
    let (net, ..) = thousand_each_way(6, |i| i.dup = 0.1);
    let (a, b) = both_stats(&net);
    assert!(a.duplicate_tsns + b.duplicate_tsns > 0);
}

#[test]
fn loss_reorder_and_duplication_together() {
    bulk(
        7,
        Impair {
            loss: 0.1,
            dup: 0.05,
            delay: Duration::from_millis(5),
            jitter: Duration::from_millis(10),
        },
        500,
    );
}

#[test]
fn dead_peer_is_detected_by_heartbeats() {
    let hb = Duration::from_secs(5);
    let (mut net, c, _s) = Net::pair(8, |cfg| cfg.association.heartbeat_interval = hb);
    // A few heartbeats succeed while the link is up.
    net.run_for(Duration::from_secs(30));
    let ci = net.nodes[0].ep.info(c).unwrap();
    assert!(ci.counters.heartbeat_acks_received >= 2, "{ci:?}");
    assert_eq!(ci.error_count, 0);
    net.cut = true;
    let t0 = net.now;
    assert!(net.run_until(Duration::from_secs(3600), |n| !n.closed(0).is_empty()));
    let elapsed = net.now - t0;
    assert_eq!(net.closed(0), vec![(c, CloseReason::CommunicationLost)]);
    // Association.Max.Retrans = 10: the 11th unanswered heartbeat closes it. Each period is
    // HB.interval + RTO * [0.5, 1.5], with RTO doubling from 1 s up to RTO.Max = 60 s.
    let rtos = [1u64, 2, 4, 8, 16, 32, 60, 60, 60, 60, 60, 60];
    let min: f64 = rtos
        .iter()
        .map(|r| hb.as_secs_f64() + 0.5 * *r as f64)
        .sum::<f64>()
        - (hb.as_secs_f64() + 0.5 * 60.0);
    let max: f64 = rtos
        .iter()
        .map(|r| hb.as_secs_f64() + 1.5 * *r as f64)
        .sum();
    let e = elapsed.as_secs_f64();
    assert!(
        e >= min * 0.9 && e <= max,
        "lost after {e} s, expected {min}..{max}"
    );
    assert!(net.nodes[0].ep.is_empty());
    assert!(net.nodes[0].ep.stats().heartbeats_sent >= 11);
}

#[test]
fn dead_peer_with_data_outstanding_is_detected_by_t3() {
    let (mut net, c, _s) = Net::pair(9, |cfg| {
        cfg.association.heartbeat_interval = Duration::ZERO;
        cfg.association.association_max_retrans = 4;
    });
    net.cut = true;
    net.send(0, c, 0, 60, false, payload(0, 100));
    let t0 = net.now;
    assert!(net.run_until(Duration::from_secs(3600), |n| !n.closed(0).is_empty()));
    assert_eq!(net.closed(0), vec![(c, CloseReason::CommunicationLost)]);
    // T3 at 1, 2, 4, 8, 16 s (5 expiries > 4 retrans) = 31 s.
    let e = (net.now - t0).as_secs_f64();
    assert!((30.0..=32.0).contains(&e), "lost after {e} s");
    assert_eq!(net.nodes[0].ep.stats().retransmissions, 4);
}

#[test]
fn peer_restart() {
    let (mut net, c, s) = Net::pair(10, |_| {});
    net.send(0, c, 0, 60, false, payload(1, 10));
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.messages(1).len(), 1);
    // The client host reboots: a fresh endpoint on the same address and port.
    net.nodes[0].ep = sctp::Endpoint::new(client_config(999));
    net.nodes[0].events.clear();
    let c2 = net.connect(0, 1, 40000);
    assert!(net.run_until(Duration::from_secs(60), |n| !n.connected(0).is_empty()));
    net.run_for(Duration::from_millis(100));
    let restarted: Vec<_> = net.nodes[1]
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Restarted))
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(
        restarted,
        vec![s],
        "server events: {:?}",
        net.nodes[1].events
    );
    assert_eq!(net.nodes[1].ep.len(), 1);
    // The restarted association works both ways.
    net.send(0, c2, 1, 61, false, payload(2, 3000));
    net.send(1, s, 2, 62, true, payload(3, 20));
    net.run_for(Duration::from_secs(2));
    let at_server = net.messages(1);
    assert_eq!(at_server.len(), 2);
    assert_eq!(at_server[1].1.data, payload(2, 3000));
    let at_client = net.messages(0);
    assert_eq!(at_client.len(), 1);
    assert_eq!(at_client[0].1.ppid, 62);
    assert!(net.closed(0).is_empty() && net.closed(1).is_empty());
}

#[test]
fn graceful_shutdown_flushes_data() {
    let (mut net, c, s) = Net::pair(11, |_| {});
    net.impair.loss = 0.1;
    for i in 0..50 {
        net.send(0, c, 0, i, false, payload(i, 2000));
    }
    net.nodes[0].ep.shutdown(net.now, c).unwrap();
    // No new data after shutdown().
    assert_eq!(
        net.nodes[0].ep.send(c, 0, 1, false, payload(1, 1)),
        Err(sctp::SendError::NotEstablished)
    );
    assert!(net.run_until(Duration::from_secs(600), |n| {
        !n.closed(0).is_empty() && !n.closed(1).is_empty()
    }));
    assert_eq!(net.closed(0), vec![(c, CloseReason::ShutdownComplete)]);
    assert_eq!(net.closed(1), vec![(s, CloseReason::ShutdownComplete)]);
    let got = net.messages(1);
    assert_eq!(got.len(), 50);
    for (i, (_, m)) in got.iter().enumerate() {
        assert_eq!(m.ppid, i as u32);
    }
    assert!(net.nodes[0].ep.is_empty() && net.nodes[1].ep.is_empty());
    assert!(!net.nodes[0].ep.owns_port(40000));
    assert_eq!(
        net.nodes[0].ep.send(c, 0, 1, false, payload(1, 1)),
        Err(sctp::SendError::UnknownAssociation)
    );
}

#[test]
fn shutdown_from_server_side() {
    let (mut net, c, s) = Net::pair(12, |_| {});
    net.send(1, s, 3, 60, false, payload(5, 100));
    net.nodes[1].ep.shutdown(net.now, s).unwrap();
    assert!(net.run_until(Duration::from_secs(60), |n| {
        !n.closed(0).is_empty() && !n.closed(1).is_empty()
    }));
    assert_eq!(net.messages(0).len(), 1);
    assert_eq!(net.closed(0), vec![(c, CloseReason::ShutdownComplete)]);
    assert_eq!(net.closed(1), vec![(s, CloseReason::ShutdownComplete)]);
}

#[test]
fn abort() {
    let (mut net, c, s) = Net::pair(13, |_| {});
    net.nodes[0].ep.abort(net.now, c).unwrap();
    assert_eq!(net.nodes[0].ep.abort(net.now, c), Err(sctp::ClosedError));
    assert!(net.run_until(Duration::from_secs(10), |n| !n.closed(1).is_empty()));
    assert_eq!(net.closed(0), vec![(c, CloseReason::AbortedLocally)]);
    assert_eq!(
        net.closed(1),
        vec![(
            s,
            CloseReason::AbortedByPeer {
                causes: vec![ErrorCause::UserInitiatedAbort(Vec::new())]
            }
        )]
    );
    assert_eq!(net.nodes[1].ep.stats().aborts_received, 1);
    assert_eq!(net.nodes[0].ep.stats().aborts_sent, 1);
    assert!(net.nodes[1].ep.is_empty());
}

#[test]
fn sixteen_clients_one_server() {
    let mut net = Net::new(14);
    let server = net.add(server_config(15), addr(100, 9899));
    let clients: Vec<usize> = (0..16)
        .map(|i| {
            net.add(
                client_config(100 + i),
                addr(1 + (i % 4) as u8, 10000 + i as u16),
            )
        })
        .collect();
    net.impair.loss = 0.02;
    let ids: Vec<_> = clients
        .iter()
        .map(|&c| net.connect(c, server, 38412))
        .collect();
    assert!(net.run_until(Duration::from_secs(60), |n| {
        n.connected(server).len() == 16 && clients.iter().all(|&c| n.connected(c).len() == 1)
    }));
    for (k, (&c, &id)) in clients.iter().zip(&ids).enumerate() {
        for i in 0..50u32 {
            let idx = k as u32 * 1000 + i;
            net.send(c, id, (i % 4) as u16, idx, false, payload(idx, 300));
        }
    }
    // The server echoes everything back on the association it came from.
    let mut echoed = 0;
    assert!(net.run_until(Duration::from_secs(600), |n| {
        let evs: Vec<_> = n.nodes[server].events.drain(..).collect();
        for (id, e) in evs {
            if let Event::Message(m) = e {
                n.send(server, id, m.stream, m.ppid, false, m.data);
                echoed += 1;
            }
        }
        clients.iter().all(|&c| n.messages(c).len() == 50)
    }));
    assert_eq!(echoed, 800);
    for (k, &c) in clients.iter().enumerate() {
        let got = n_sorted(&net, c);
        let want: Vec<u32> = (0..50).map(|i| k as u32 * 1000 + i).collect();
        assert_eq!(got, want);
    }
    assert_eq!(net.nodes[server].ep.len(), 16);
}

fn n_sorted(net: &Net, node: usize) -> Vec<u32> {
    let mut v: Vec<u32> = net.messages(node).iter().map(|(_, m)| m.ppid).collect();
    v.sort();
    v
}

#[test]
fn init_retransmits_exhausted() {
    let mut net = Net::new(16);
    net.add(client_config(17), addr(1, 0));
    net.add(server_config(18), addr(2, 0));
    net.cut = true;
    let c = net.connect(0, 1, 40000);
    let t0 = net.now;
    assert!(net.run_until(Duration::from_secs(3600), |n| !n.closed(0).is_empty()));
    assert_eq!(net.closed(0), vec![(c, CloseReason::InitFailed)]);
    // 1 + 8 INITs: T1 at 1, 2, 4, 8, 16, 32, 60, 60, 60 s.
    let e = (net.now - t0).as_secs();
    assert_eq!(e, 243);
    assert_eq!(net.sent, 9);
}

#[test]
fn lost_handshake_packets_are_retransmitted() {
    for seed in 20..30 {
        let mut net = Net::new(seed);
        net.add(client_config(seed), addr(1, 0));
        net.add(server_config(seed), addr(2, 0));
        net.impair.loss = 0.25;
        net.connect(0, 1, 40000);
        let ok = net.run_until(Duration::from_secs(600), |n| {
            !n.connected(0).is_empty() && !n.connected(1).is_empty()
        });
        assert!(
            ok,
            "seed {seed}: {:?} {:?} {:?} {:?}",
            net.nodes[0].events,
            net.nodes[1].events,
            net.nodes[0].ep.info(sctp::AssocId(1)),
            net.nodes[0].ep.poll_timeout().map(|t| t - net.now)
        );
        assert_eq!(net.connected(1).len(), 1, "seed {seed}");
        assert!(net.closed(0).is_empty() && net.closed(1).is_empty());
    }
}

#[test]
fn init_collision() {
    // Both sides connect to each other at the same time (RFC 9260 §5.2.1, §5.2.4 B/D).
    let mut net = Net::new(31);
    let mut a = server_config(32);
    a.listen_port = Some(5000);
    let mut b = server_config(33);
    b.listen_port = Some(5000);
    net.add(a, addr(1, 0));
    net.add(b, addr(2, 0));
    let now = net.now;
    let ra = net.nodes[1].addr;
    let rb = net.nodes[0].addr;
    let ia = net.nodes[0].ep.connect(now, ra, 5000, 5000).unwrap();
    let ib = net.nodes[1].ep.connect(now, rb, 5000, 5000).unwrap();
    net.run_for(Duration::from_secs(5));
    assert_eq!(net.connected(0), vec![ia]);
    assert_eq!(net.connected(1), vec![ib]);
    net.send(0, ia, 0, 1, false, payload(1, 10));
    net.send(1, ib, 0, 2, false, payload(2, 10));
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.messages(0).len(), 1);
    assert_eq!(net.messages(1).len(), 1);
    assert_eq!(net.nodes[0].ep.len(), 1);
}

#[test]
fn stale_cookie_recovers_with_cookie_preservative() {
    // The server's cookies live 5 ms but the round trip is 20 ms: the first COOKIE ECHO is
    // stale, the client asks for more life (RFC 9260 §5.2.6) and the second attempt works.
    let mut net = Net::new(40);
    net.add(client_config(41), addr(1, 0));
    let mut sc = server_config(42);
    sc.cookie_lifetime = Duration::from_millis(5);
    net.add(sc, addr(2, 0));
    let c = net.connect(0, 1, 40000);
    assert!(net.run_until(Duration::from_secs(30), |n| !n.connected(0).is_empty()));
    assert_eq!(net.connected(0), vec![c]);
    assert_eq!(net.nodes[1].ep.stats().stale_cookies, 1);
    assert_eq!(net.nodes[1].ep.len(), 1);
}

#[test]
fn send_errors() {
    let (mut net, c, _) = Net::pair(43, |cfg| {
        cfg.association.outbound_streams = 2;
        cfg.association.max_send_buffer = 10_000;
    });
    let ep = &mut net.nodes[0].ep;
    use sctp::SendError::*;
    assert_eq!(ep.send(c, 0, 0, false, bytes::Bytes::new()), Err(Empty));
    assert_eq!(ep.send(c, 2, 0, false, payload(0, 1)), Err(InvalidStream));
    assert_eq!(
        ep.send(c, 0, 0, false, payload(0, sctp::MAX_MESSAGE_SIZE + 1)),
        Err(TooLarge)
    );
    assert_eq!(
        ep.send(sctp::AssocId(999), 0, 0, false, payload(0, 1)),
        Err(UnknownAssociation)
    );
    ep.send(c, 1, 0, false, payload(0, 9000)).unwrap();
    assert_eq!(ep.send(c, 1, 0, false, payload(0, 2000)), Err(Full));
    let info = ep.info(c).unwrap();
    assert_eq!(info.outbound_streams, 2);
    assert_eq!(info.send_buffered, 9000);
    // Once acknowledged, the buffer drains and sending works again.
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.nodes[0].ep.info(c).unwrap().send_buffered, 0);
    net.send(0, c, 1, 0, false, payload(0, 2000));
    // A client cannot send before the handshake completes.
    let c2 = net.nodes[0]
        .ep
        .connect(net.now, addr(2, 0), 40001, SERVER_PORT)
        .unwrap();
    assert_eq!(
        net.nodes[0].ep.send(c2, 0, 0, false, payload(0, 1)),
        Err(NotEstablished)
    );
    assert_eq!(
        net.nodes[0]
            .ep
            .connect(net.now, addr(2, 0), 40001, SERVER_PORT),
        Err(sctp::ConnectError::AlreadyExists)
    );
    assert!(net.nodes[0].ep.owns_port(40001));
}

#[test]
fn negotiated_streams_are_the_minimum() {
    let mut net = Net::new(44);
    let mut cc = client_config(45);
    cc.association.outbound_streams = 10;
    cc.association.max_inbound_streams = 3;
    let mut sc = server_config(46);
    sc.association.outbound_streams = 7;
    sc.association.max_inbound_streams = 5;
    net.add(cc, addr(1, 0));
    net.add(sc, addr(2, 0));
    let c = net.connect(0, 1, 40000);
    assert!(net.run_until(Duration::from_secs(10), |n| !n.connected(1).is_empty()));
    let ci = net.nodes[0].ep.info(c).unwrap();
    let si = net.nodes[1].ep.info(net.connected(1)[0]).unwrap();
    assert_eq!((ci.outbound_streams, ci.inbound_streams), (5, 3));
    assert_eq!((si.outbound_streams, si.inbound_streams), (3, 5));
}

#[test]
fn rtt_is_measured() {
    let (mut net, c, _) = Net::pair(47, |cfg| {
        cfg.association.rto_min = Duration::from_millis(10);
    });
    net.impair.delay = Duration::from_millis(50);
    for i in 0..20 {
        net.send(0, c, 0, i, false, payload(i, 100));
        net.run_for(Duration::from_millis(300));
    }
    let ci = net.nodes[0].ep.info(c).unwrap();
    let srtt = ci.srtt.unwrap();
    // One-way 50 ms; SACKs may wait for the 200 ms delayed-ack timer.
    assert!(
        srtt >= Duration::from_millis(100) && srtt <= Duration::from_millis(300),
        "{srtt:?}"
    );
    assert!(ci.rto >= srtt);
}

#[test]
fn many_seeds_mixed_impairments() {
    for seed in 100..(100
        + std::env::var("SCTP_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(30u64))
    {
        let k = seed % 5;
        let impair = Impair {
            loss: [0.0, 0.02, 0.1, 0.3, 0.05][k as usize],
            dup: [0.0, 0.05, 0.0, 0.02, 0.2][k as usize],
            delay: Duration::from_millis(1 + seed % 30),
            jitter: Duration::from_millis([0, 5, 40, 10, 1][k as usize]),
        };
        bulk(seed, impair, 200);
    }
}

#[test]
fn shutdown_under_loss_flushes_both_directions() {
    for seed in 200..(200 + env_seeds(20)) {
        let (mut net, c, s) = Net::pair(seed, |_| {});
        net.impair = Impair {
            loss: 0.1,
            dup: 0.02,
            delay: Duration::from_millis(3),
            jitter: Duration::from_millis(4),
        };
        let pc = plan(seed, 100, 16, 3000);
        let ps = plan(seed + 1000, 100, 16, 3000);
        feed(&mut net, 0, c, &mut pc.clone().into());
        feed(&mut net, 1, s, &mut ps.clone().into());
        net.nodes[0].ep.shutdown(net.now, c).unwrap();
        let ok = net.run_until(Duration::from_secs(3600), |n| {
            !n.closed(0).is_empty() && !n.closed(1).is_empty()
        });
        assert!(ok, "seed {seed}");
        assert_eq!(
            net.closed(0),
            vec![(c, CloseReason::ShutdownComplete)],
            "seed {seed}"
        );
        assert_eq!(
            net.closed(1),
            vec![(s, CloseReason::ShutdownComplete)],
            "seed {seed}"
        );
        check_delivery(&net.messages(1), &pc);
        check_delivery(&net.messages(0), &ps);
    }
}

#[test]
fn restart_under_loss() {
    for seed in 300..(300 + env_seeds(10)) {
        let (mut net, c, s) = Net::pair(seed, |_| {});
        net.impair.loss = 0.15;
        net.send(0, c, 0, 1, false, payload(1, 100));
        net.send(1, s, 0, 2, false, payload(2, 100));
        net.run_for(Duration::from_millis(50));
        net.nodes[0].ep = sctp::Endpoint::new(client_config(seed + 5000));
        net.nodes[0].events.clear();
        let c2 = net.connect(0, 1, 40000);
        assert!(
            net.run_until(Duration::from_secs(600), |n| !n.connected(0).is_empty()),
            "seed {seed}"
        );
        net.send(0, c2, 3, 9, false, payload(9, 50));
        assert!(
            net.run_until(Duration::from_secs(600), |n| n
                .messages(1)
                .iter()
                .any(|(id, m)| *id == s && m.ppid == 9)),
            "seed {seed}: {:?}",
            net.nodes[1].events
        );
        assert!(net.nodes[1]
            .events
            .iter()
            .any(|(id, e)| *id == s && matches!(e, Event::Restarted)));
        assert!(net.closed(1).is_empty(), "seed {seed}");
    }
}

/// Number of seeds for the randomized scenarios; `SCTP_SEEDS=1000` for a long soak.
fn env_seeds(default: u64) -> u64 {
    std::env::var("SCTP_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn server_restart_aborts_client() {
    // The server loses all state; the client's next packet is out of the blue and draws an
    // ABORT with the T bit (RFC 9260 §8.4 rule 8), which the client accepts (§8.5.1 B).
    let (mut net, c, _) = Net::pair(50, |_| {});
    net.nodes[1].ep = sctp::Endpoint::new(server_config(51));
    net.send(0, c, 0, 1, false, payload(1, 10));
    assert!(net.run_until(Duration::from_secs(10), |n| !n.closed(0).is_empty()));
    assert_eq!(
        net.closed(0),
        vec![(c, CloseReason::AbortedByPeer { causes: vec![] })]
    );
    assert_eq!(net.nodes[1].ep.stats().out_of_the_blue, 1);
    // And it can connect again.
    let c2 = net.connect(0, 1, 40000);
    assert!(net.run_until(Duration::from_secs(10), |n| n.connected(0).contains(&c2)));
}

#[test]
fn init_collision_under_loss() {
    for seed in 400..(400 + env_seeds(20)) {
        let mut net = Net::new(seed);
        let mut a = server_config(seed + 1);
        a.listen_port = Some(5000);
        let mut b = server_config(seed + 2);
        b.listen_port = Some(5000);
        net.add(a, addr(1, 0));
        net.add(b, addr(2, 0));
        net.impair = Impair {
            loss: 0.2,
            dup: 0.05,
            delay: Duration::from_millis(5),
            jitter: Duration::from_millis(10),
        };
        let now = net.now;
        let (ra, rb) = (net.nodes[1].addr, net.nodes[0].addr);
        let ia = net.nodes[0].ep.connect(now, ra, 5000, 5000).unwrap();
        let ib = net.nodes[1].ep.connect(now, rb, 5000, 5000).unwrap();
        let ok = net.run_until(Duration::from_secs(600), |n| {
            !n.connected(0).is_empty() && !n.connected(1).is_empty()
        });
        assert!(
            ok,
            "seed {seed}: {:?} {:?}",
            net.nodes[0].events, net.nodes[1].events
        );
        net.send(0, ia, 0, 1, false, payload(1, 10));
        net.send(1, ib, 0, 2, false, payload(2, 10));
        let ok = net.run_until(Duration::from_secs(600), |n| {
            n.messages(0).len() == 1 && n.messages(1).len() == 1
        });
        assert!(
            ok,
            "seed {seed}: {:?} {:?}",
            net.nodes[0].events, net.nodes[1].events
        );
        assert!(
            net.closed(0).is_empty() && net.closed(1).is_empty(),
            "seed {seed}"
        );
    }
}

#[test]
fn abort_under_loss_eventually_closes_both() {
    for seed in 500..(500 + env_seeds(10)) {
        let (mut net, c, _s) = Net::pair(seed, |cfg| {
            cfg.association.heartbeat_interval = Duration::from_secs(2);
        });
        net.impair.loss = 0.3;
        net.nodes[0].ep.abort(net.now, c).unwrap();
        // If the ABORT is lost the server finds out through heartbeats (the client answers
        // them with ABORT as out-of-the-blue, or not at all once the port is gone).
        assert!(
            net.run_until(Duration::from_secs(3600), |n| !n.closed(1).is_empty()),
            "seed {seed}"
        );
        assert!(net.nodes[1].ep.is_empty());
    }
}
