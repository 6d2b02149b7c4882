//! The steering table's kernel mirror: exceptions changed through a
//! `steer::table::SteeringTable` whose sink is the group's `Steering` must steer the next
//! datagrams in the kernel, as the table routes them, and clearing them must restore the
//! default rule. Asserted from which socket each datagram reached and from the program's
//! counters (steered, exception hits, per worker), so a silent fallback to the kernel's hash
//! would fail the test.
//!
//! Needs root (CAP_BPF): skipped without it on a developer machine, failed in CI
//! (testkit::privilege).
#![allow(clippy::unwrap_used)]

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use steer::table::{AppId, SteeringTable};
use steer::{WorkerId, Workers};
use steer_bpf::{GroupOptions, IdSpec, ReuseportGroup, SharedSteering, Steering};

const WORKERS: u16 = 2;
/// Datagrams per phase: enough that a fallback to the kernel's 4-tuple hash (one flow, one
/// socket) could not pass by luck alongside the per-worker counters.
const PER_PHASE: u32 = 200;

/// Reads every socket until `want` datagrams arrived; returns how many each socket got and
/// checks that each carried `app`.
fn receive(sockets: &[UdpSocket], want: u32, app: u32) -> Vec<u32> {
    let start = Instant::now();
    let mut per_socket = vec![0u32; sockets.len()];
    let mut buf = [0u8; 64];
    while per_socket.iter().sum::<u32>() < want {
        let mut idle = true;
        for (i, s) in sockets.iter().enumerate() {
            loop {
                match s.recv(&mut buf) {
                    Ok(n) => {
                        assert!(n >= 4, "short datagram on socket {i}");
                        assert_eq!(u32::from_be_bytes(buf[..4].try_into().unwrap()), app);
                        per_socket[i] += 1;
                        idle = false;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("recv on socket {i}: {e}"),
                }
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "only {per_socket:?} of {want} datagrams arrived"
        );
        if idle {
            std::thread::yield_now();
        }
    }
    per_socket
}

fn send(client: &UdpSocket, to: SocketAddr, app: u32, n: u32) {
    for k in 0..n {
        let mut p = [0u8; 8];
        p[..4].copy_from_slice(&app.to_be_bytes());
        p[4..].copy_from_slice(&k.to_be_bytes());
        client.send_to(&p, to).unwrap();
    }
}

/// A group of [`WORKERS`] UDP sockets on loopback that the program steers: its sockets, its
/// address and its steering handle; `None` where the test is skipped for lack of privilege.
fn steered_group() -> Option<(Vec<UdpSocket>, SocketAddr, Arc<Steering>)> {
    if !testkit::privilege::require("sk_reuseport exceptions through the steering table") {
        return None;
    }
    let group = ReuseportGroup::bind_udp(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        WORKERS,
        IdSpec::FIRST_WORD,
        &GroupOptions { require_bpf: true },
    )
    .unwrap();
    let to = group.local_addr();
    let (sockets, steering) = group.into_parts();
    let steering = steering.expect("require_bpf: the group is steered");
    Some((sockets, to, Arc::new(steering)))
}

#[test]
fn table_exceptions_reach_the_kernel_and_back() {
    let Some((sockets, to, steering)) = steered_group() else {
        return;
    };
    for s in &sockets {
        s.set_nonblocking(true).unwrap();
    }
    let table = SteeringTable::new(Workers::new(WORKERS).unwrap());
    table
        .set_sink(Box::new(SharedSteering(Arc::clone(&steering))))
        .unwrap();
    let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();

    // An id whose default owner is worker 1, so that the exception sends it to worker 0.
    let x: u32 = 0x0bad_f00d | 1;
    let home = usize::from(WORKERS) - 1;
    assert_eq!((x % u32::from(WORKERS)) as usize, home);
    let other = 0usize;
    let n = u64::from(PER_PHASE);

    // 1. No exception: every datagram of X on its owner, steered by the program.
    assert_eq!(table.route(AppId(x)), WorkerId(home as u16));
    send(&client, to, x, PER_PHASE);
    let got = receive(&sockets, PER_PHASE, x);
    assert_eq!(got[home], PER_PHASE, "default owner: {got:?}");
    let c = steering.counters().unwrap();
    assert_eq!((c.steered, c.exception_hits, c.fallbacks()), (n, 0, 0));
    assert_eq!(c.per_worker[home], n);

    // 2. An exception through the table reaches the kernel map: X now lands on the other
    // worker, as exception hits.
    table
        .set_exception(AppId(x), WorkerId(other as u16))
        .unwrap();
    assert_eq!(steering.exception(x).unwrap(), Some(other as u16));
    assert_eq!(table.route(AppId(x)), WorkerId(other as u16));
    send(&client, to, x, PER_PHASE);
    let got = receive(&sockets, PER_PHASE, x);
    assert_eq!(got[other], PER_PHASE, "with the exception: {got:?}");
    let c = steering.counters().unwrap();
    assert_eq!((c.steered, c.exception_hits, c.fallbacks()), (2 * n, n, 0));
    assert_eq!((c.per_worker[home], c.per_worker[other]), (n, n));

    // 3. Cleared through the table: back to the default owner, no more exception hits.
    assert!(table.clear_exception(AppId(x)).unwrap());
    assert_eq!(steering.exception(x).unwrap(), None);
    send(&client, to, x, PER_PHASE);
    let got = receive(&sockets, PER_PHASE, x);
    assert_eq!(got[home], PER_PHASE, "after clearing: {got:?}");
    let c = steering.counters().unwrap();
    assert_eq!((c.steered, c.exception_hits, c.fallbacks()), (3 * n, n, 0));
    assert_eq!((c.per_worker[home], c.per_worker[other]), (2 * n, n));
}

#[test]
fn table_sink_rejects_a_queue_the_group_lacks() {
    let Some((_sockets, _, steering)) = steered_group() else {
        return;
    };
    // A table with more workers than the group has sockets: the kernel refuses the
    // exception, and the table is left as it was.
    let table = SteeringTable::new(Workers::new(WORKERS + 1).unwrap());
    table
        .set_sink(Box::new(SharedSteering(Arc::clone(&steering))))
        .unwrap();
    let err = table
        .set_exception(AppId(7), WorkerId(WORKERS))
        .unwrap_err();
    assert!(
        matches!(err, steer::table::TableError::Sink { .. }),
        "{err}"
    );
    assert_eq!(table.route(AppId(7)), WorkerId(7 % (WORKERS + 1)));
    assert_eq!(steering.exception(7).unwrap(), None);
}
