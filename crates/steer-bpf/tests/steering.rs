//! The `sk_reuseport` program on real sockets: every connection and datagram must reach the
//! socket of the worker that owns its app id, computed here independently of the crate, and
//! the program's counters must account for every packet.
//!
//! Needs root (CAP_BPF): skipped on a developer machine without it, failed in CI
//! (testkit::privilege). Each test uses its own ephemeral server port and its own client
//! loopback address (127.x.y.z from the pid and a counter), so tests run in parallel.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use common::{expected_worker, recv_n, tcp_client};
use socket2::SockRef;
use steer_bpf::{source_port_for, Error, GroupOptions, IdSpec, ReuseportGroup};

const REQUIRE: GroupOptions = GroupOptions { require_bpf: true };
const DEADLINE: Duration = Duration::from_secs(20);

fn privileged(what: &str) -> bool {
    testkit::privilege::require(what)
}

/// A loopback address no other test (in this process or another) uses as a client source.
fn client_ip() -> Ipv4Addr {
    static N: AtomicU8 = AtomicU8::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    Ipv4Addr::new(127, 100 + n % 100, (pid >> 8) as u8, (pid % 250) as u8 + 1)
}

fn server() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0)
}

fn udp_group(workers: u16, spec: IdSpec) -> ReuseportGroup<UdpSocket> {
    let g = ReuseportGroup::bind_udp(server(), workers, spec, &REQUIRE).unwrap();
    for s in g.sockets() {
        s.set_nonblocking(true).unwrap();
        // Root may exceed rmem_max; a batch of datagrams must never overflow a socket.
        let r = SockRef::from(s);
        r.set_recv_buffer_size(4 << 20).unwrap();
    }
    g
}

fn udp_client() -> UdpSocket {
    UdpSocket::bind(SocketAddr::new(IpAddr::V4(client_ip()), 0)).unwrap()
}

#[test]
fn udp_100k_datagrams_reach_their_owner() {
    if !privileged("sk_reuseport UDP steering") {
        return;
    }
    const WORKERS: u16 = 4;
    const TOTAL: u32 = 100_000;
    const BATCH: u32 = 1_000;
    let group = udp_group(WORKERS, IdSpec::FIRST_WORD);
    let to = group.local_addr();
    let client = udp_client();
    let mut per_worker = vec![0u64; usize::from(WORKERS)];
    let mut wrong = 0u32;
    for batch in 0..TOTAL / BATCH {
        let mut expect = HashMap::new();
        for k in batch * BATCH..(batch + 1) * BATCH {
            // Spread ids over the whole 32-bit space; k rides along to identify the datagram.
            let app_id = k.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995;
            let mut p = [0u8; 8];
            p[..4].copy_from_slice(&app_id.to_be_bytes());
            p[4..].copy_from_slice(&k.to_be_bytes());
            client.send_to(&p, to).unwrap();
            let w = expected_worker(app_id, u32::from(WORKERS));
            expect.insert(k, w);
            per_worker[w] += 1;
        }
        for (i, p) in recv_n(group.sockets(), BATCH as usize, DEADLINE) {
            let k = u32::from_be_bytes(p[4..8].try_into().unwrap());
            if expect.remove(&k) != Some(i) {
                wrong += 1;
            }
        }
        assert!(expect.is_empty(), "datagrams missing: {}", expect.len());
    }
    assert_eq!(wrong, 0, "datagrams on the wrong worker");
    let c = group.steering().unwrap().counters().unwrap();
    assert_eq!(c.steered, u64::from(TOTAL));
    assert_eq!(c.fallbacks(), 0, "{c:?}");
    assert_eq!(c.exception_hits, 0);
    assert_eq!(c.per_worker, per_worker);
}

#[test]
fn tcp_2000_connections_land_on_the_source_ports_worker() {
    if !privileged("sk_reuseport TCP steering") {
        return;
    }
    const WORKERS: u16 = 4;
    const TOTAL: u16 = 2_000;
    const BATCH: u16 = 200;
    let group = ReuseportGroup::bind_tcp(server(), WORKERS, &REQUIRE).unwrap();
    for l in group.sockets() {
        l.set_nonblocking(true).unwrap();
    }
    let to = group.local_addr();
    let ip = client_ip();
    let mut per_worker = vec![0u64; usize::from(WORKERS)];
    for batch in 0..TOTAL / BATCH {
        let mut clients = Vec::new();
        let mut expect = HashMap::new();
        for k in batch * BATCH..(batch + 1) * BATCH {
            let target = (k * 7 + 3) % WORKERS;
            // Disjoint 4-port windows, so every connection has its own source port.
            let port = source_port_for(target, WORKERS, 20_000 + 4 * k).unwrap();
            let w = expected_worker(u32::from(port), u32::from(WORKERS));
            assert_eq!(w, usize::from(target), "source_port_for({target}) = {port}");
            let s = tcp_client(ip, port, to);
            expect.insert(port, w);
            per_worker[w] += 1;
            clients.push(s);
        }
        let accepted = accept_n(group.sockets(), usize::from(BATCH));
        for (i, peer) in accepted {
            assert_eq!(peer.ip(), IpAddr::V4(ip));
            assert_eq!(
                expect.remove(&peer.port()),
                Some(i),
                "source port {} accepted on listener {i}",
                peer.port()
            );
        }
        assert!(expect.is_empty());
    }
    let c = group.steering().unwrap().counters().unwrap();
    // The program runs once per SYN it sees: a SYN the client sent again (its first one
    // lost while the machine was busy) is steered again, to the same worker, since the
    // four-tuple is the same. So each worker counts at least its connections, and every
    // decision went to a worker (no fallback); where each connection landed is checked
    // above, one by one.
    assert!(c.steered >= u64::from(TOTAL), "{c:?}");
    assert_eq!(c.fallbacks(), 0, "{c:?}");
    assert_eq!(c.steered, c.per_worker.iter().sum::<u64>(), "{c:?}");
    for (w, (&got, &want)) in c.per_worker.iter().zip(&per_worker).enumerate() {
        assert!(
            got >= want,
            "worker {w}: {got} steered, {want} connections: {c:?}"
        );
    }
}

/// Accepts from every listener until `want` connections came; returns (listener, peer).
fn accept_n(listeners: &[TcpListener], want: usize) -> Vec<(usize, SocketAddr)> {
    let start = Instant::now();
    let mut got = Vec::with_capacity(want);
    while got.len() < want {
        for (i, l) in listeners.iter().enumerate() {
            loop {
                match l.accept() {
                    Ok((_s, peer)) => got.push((i, peer)),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("accept on listener {i}: {e}"),
                }
            }
        }
        assert!(
            start.elapsed() < DEADLINE,
            "only {} of {want} connections accepted",
            got.len()
        );
        std::thread::yield_now();
    }
    got
}

fn send_id(client: &UdpSocket, to: SocketAddr, app_id: u32) {
    client.send_to(&app_id.to_be_bytes(), to).unwrap();
}

fn one_socket(group: &ReuseportGroup<UdpSocket>) -> usize {
    let got = recv_n(group.sockets(), 1, DEADLINE);
    got[0].0
}

#[test]
fn udp_exception_moves_an_id_at_run_time() {
    if !privileged("sk_reuseport exceptions") {
        return;
    }
    let group = udp_group(4, IdSpec::FIRST_WORD);
    let steering = group.steering().unwrap();
    let (to, client) = (group.local_addr(), udp_client());
    let (hot, other) = (0x1000_0001u32, 0x1000_0002u32);

    send_id(&client, to, hot);
    assert_eq!(one_socket(&group), 1);
    steering.set_exception(hot, 3).unwrap();
    assert_eq!(steering.owner(hot).unwrap(), 3);
    send_id(&client, to, hot);
    assert_eq!(one_socket(&group), 3, "exception not honoured");
    send_id(&client, to, other);
    assert_eq!(one_socket(&group), 2, "exception leaked to another id");
    assert!(steering.clear_exception(hot).unwrap());
    assert!(!steering.clear_exception(hot).unwrap());
    send_id(&client, to, hot);
    assert_eq!(one_socket(&group), 1, "cleared exception still applies");

    assert!(matches!(
        steering.set_exception(hot, 4),
        Err(Error::NoSuchWorker {
            worker: 4,
            workers: 4
        })
    ));
    let c = steering.counters().unwrap();
    assert_eq!((c.steered, c.exception_hits, c.fallbacks()), (4, 1, 0));
    assert_eq!(c.per_worker, [0, 2, 1, 1]);
}

#[test]
fn tcp_exception_moves_a_source_port() {
    if !privileged("sk_reuseport TCP exceptions") {
        return;
    }
    let group = ReuseportGroup::bind_tcp(server(), 4, &REQUIRE).unwrap();
    for l in group.sockets() {
        l.set_nonblocking(true).unwrap();
    }
    let steering = group.steering().unwrap();
    let ip = client_ip();
    let port = source_port_for(0, 4, 30_000).unwrap();
    steering.set_exception(u32::from(port), 2).unwrap();
    let _c = tcp_client(ip, port, group.local_addr());
    let got = accept_n(group.sockets(), 1);
    assert_eq!(got[0].0, 2);
    assert_eq!(got[0].1.port(), port);
    let c = steering.counters().unwrap();
    assert_eq!((c.steered, c.exception_hits), (1, 1));
}

#[test]
fn short_datagram_falls_back_and_is_still_delivered() {
    if !privileged("sk_reuseport fallback") {
        return;
    }
    let group = udp_group(4, IdSpec::FIRST_WORD);
    let (to, client) = (group.local_addr(), udp_client());
    client.send_to(&[0xab, 0xcd], to).unwrap();
    let got = recv_n(group.sockets(), 1, DEADLINE);
    assert_eq!(got[0].1, [0xab, 0xcd]);
    let c = group.steering().unwrap().counters().unwrap();
    assert_eq!((c.steered, c.fallback_no_id), (0, 1), "{c:?}");
    // A well-formed one afterwards is steered again.
    send_id(&client, to, 7);
    assert_eq!(one_socket(&group), 3);
    assert_eq!(group.steering().unwrap().counters().unwrap().steered, 1);
}

#[test]
fn closed_worker_socket_falls_back_without_loss() {
    if !privileged("sk_reuseport closed worker") {
        return;
    }
    let group = udp_group(4, IdSpec::FIRST_WORD);
    let (to, client) = (group.local_addr(), udp_client());
    let (mut sockets, steering) = group.into_parts();
    let steering = steering.unwrap();
    drop(sockets.remove(2));
    // Worker 2's ids now have no socket: the kernel's hash must place them on a live one.
    for k in 0..20u32 {
        send_id(&client, to, 4 * k + 2);
    }
    let got = recv_n(&sockets, 20, DEADLINE);
    assert_eq!(got.len(), 20);
    let c = steering.counters().unwrap();
    assert_eq!((c.steered, c.fallback_select_failed), (0, 20), "{c:?}");
}

#[test]
fn gtpu_teid_top_bits_pick_the_worker() {
    if !privileged("sk_reuseport GTP-U TEID steering") {
        return;
    }
    const WORKERS: u32 = 4;
    let group = udp_group(WORKERS as u16, IdSpec::GTPU_TEID_TOP8);
    let (to, client) = (group.local_addr(), udp_client());
    let mut expect = HashMap::new();
    for k in 0..400u32 {
        // TS 29.281 §5.1 G-PDU header, TEID = worker field (top 8 bits) + counter.
        let teid = ((k * 37 % 256) << 24) | k;
        let mut p = vec![0x30, 0xff, 0x00, 0x04];
        p.extend_from_slice(&teid.to_be_bytes());
        p.extend_from_slice(&k.to_be_bytes());
        client.send_to(&p, to).unwrap();
        expect.insert(k, expected_worker(teid >> 24, WORKERS));
    }
    for (i, p) in recv_n(group.sockets(), 400, DEADLINE) {
        let k = u32::from_be_bytes(p[8..12].try_into().unwrap());
        assert_eq!(expect.remove(&k), Some(i), "TEID datagram {k}");
    }
    let c = group.steering().unwrap().counters().unwrap();
    assert_eq!((c.steered, c.fallbacks()), (400, 0));
}

#[test]
fn bad_worker_counts_are_rejected() {
    // No privilege needed: the check comes before any socket or BPF call.
    for n in [0u16, 257] {
        assert!(matches!(
            ReuseportGroup::bind_tcp(server(), n, &REQUIRE),
            Err(Error::Workers(m)) if m == n
        ));
    }
}

/// Set in the child process of [`without_cap_bpf_groups_fall_back_or_fail_on_demand`].
const UNPRIV_CHILD: &str = "STEER_BPF_UNPRIVILEGED_CHILD";

#[test]
fn without_cap_bpf_groups_fall_back_or_fail_on_demand() {
    if !privileged("dropping CAP_BPF with setpriv") {
        return;
    }
    // Reruns this test binary's `unprivileged_child` with CAP_BPF and CAP_SYS_ADMIN out of
    // the bounding set, so root's effective set lacks them after exec.
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--bounding-set", "-bpf,-sys_admin"])
        .arg(exe)
        .args(["--exact", "unprivileged_child", "--nocapture"])
        .env(UNPRIV_CHILD, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("unprivileged child: checked"), "{text}");
}

/// Runs only inside the setpriv child above; elsewhere it has nothing to check.
#[test]
fn unprivileged_child() {
    if std::env::var_os(UNPRIV_CHILD).is_none() {
        return;
    }
    // Without the capability, a required load is a typed error...
    let required = ReuseportGroup::bind_udp(server(), 2, IdSpec::FIRST_WORD, &REQUIRE);
    assert!(
        matches!(required, Err(Error::NotPermitted(_))),
        "{required:?}"
    );
    // Stream steering has no fallback of its own: it says why it cannot load.
    let stream = steer_bpf::StreamSteering::new(2);
    assert!(
        matches!(stream, Err(Error::NotPermitted(_))),
        "{:?}",
        stream.err()
    );
    // ... and an optional group load gives a working, unsteered group that says why.
    let group = ReuseportGroup::bind_udp(
        server(),
        2,
        IdSpec::FIRST_WORD,
        &GroupOptions { require_bpf: false },
    )
    .unwrap();
    assert!(group.steering().is_none());
    assert!(matches!(
        group.unsteered_reason(),
        Some(Error::NotPermitted(_))
    ));
    for s in group.sockets() {
        s.set_nonblocking(true).unwrap();
    }
    let client = udp_client();
    for id in 0..10u32 {
        send_id(&client, group.local_addr(), id);
    }
    assert_eq!(recv_n(group.sockets(), 10, DEADLINE).len(), 10);
    println!("unprivileged child: checked");
}
