//! The endpoint's bounds (DESIGN.md principle 8), in virtual time: associations beyond
//! `max_associations` are refused with ABORT "Out of Resource" (RFC 9260 §3.3.10.4), and
//! fragments beyond `max_reassembly_fragments` are dropped unacknowledged, counted and
//! recovered by the sender's retransmissions (§6.2).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::VecDeque;
use std::time::Duration;

use common::*;
use sctp::{CloseReason, ErrorCause, Event};

#[test]
fn associations_beyond_the_limit_get_abort_out_of_resource() {
    let mut net = Net::new(21);
    net.add(client_config(22), addr(1, 0));
    net.add(client_config(23), addr(3, 0));
    let mut sc = server_config(24);
    sc.max_associations = 1;
    let server = net.add(sc, addr(2, 0));
    net.connect(0, server, 40000);
    assert!(net.run_until(Duration::from_secs(30), |n| !n.connected(server).is_empty()));
    net.connect(1, server, 40001);
    assert!(net.run_until(Duration::from_secs(30), |n| !n.closed(1).is_empty()));
    let (_, reason) = net.closed(1)[0].clone();
    match reason {
        CloseReason::AbortedByPeer { causes } => {
            assert_eq!(causes, vec![ErrorCause::OutOfResource]);
        }
        other => panic!("second association closed with {other:?}"),
    }
    let stats = net.nodes[server].ep.stats();
    assert_eq!(stats.associations_refused, 1);
    assert_eq!(stats.associations_established, 1);
    // The first association is untouched.
    assert_eq!(net.connected(server).len(), 1);
    assert!(net.closed(0).is_empty());
}

#[test]
fn fragments_beyond_the_limit_are_dropped_counted_and_recovered() {
    // Messages of up to 5000 bytes in 1200-byte packets arrive as fragments; reordering
    // scatters them past the cumulative point, where a receiver allowing only 4 held
    // fragments must refuse some.
    let (mut net, c, s) = Net::pair(31, |cfg| cfg.association.max_reassembly_fragments = 4);
    net.impair = Impair {
        delay: Duration::from_millis(5),
        jitter: Duration::from_millis(20),
        ..Impair::default()
    };
    let n = 200;
    let planned = plan(310, n, 4, 5000);
    let mut q: VecDeque<_> = planned.clone().into();
    let delivered = |net: &Net| {
        net.nodes[1]
            .events
            .iter()
            .filter(|(_, e)| matches!(e, Event::Message(_)))
            .count()
    };
    assert!(net.run_until(Duration::from_secs(3600), |net| {
        feed(net, 0, c, &mut q);
        delivered(net) == n as usize
    }));
    check_delivery(&net.messages(1), &planned);
    let server = net.nodes[1].ep.stats();
    assert!(
        server.data_dropped > 0,
        "no fragment was refused: {server:?}"
    );
    assert_eq!(
        net.nodes[1].ep.info(s).unwrap().counters.data_dropped,
        server.data_dropped
    );
    assert!(net.nodes[0].ep.stats().retransmissions > 0);
}
