//! The probe on real traffic in namespaces of the test's own: each stage's counter, filtered
//! to that namespace and interface, moves when and only when the test sends, by exactly the
//! packets sent where the kernel allows; and drops are counted where and why they happen.
//! Needs root (namespaces, BPF); fails instead of skipping in CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::thread::sleep;
use std::time::Duration;

use common::{in_netns, ns_path};
use probe::{netns, procfs, Counters, Filter, Probe};
use socket2::{Domain, Protocol, Socket, Type};
use testkit::netns::{Pair, Side};

/// No traffic but the test's: IPv6 off (no neighbour discovery, no MLD) and static ARP
/// entries both ways (no ARP).
fn quiet(pair: &Pair) {
    for side in [Side::A, Side::B] {
        let peer = side.peer();
        let out = pair
            .exec(side, "sysctl")
            .args(["-qw", "net.ipv6.conf.all.disable_ipv6=1"])
            .status()
            .expect("sysctl");
        assert!(out.success());
        let mac = std::process::Command::new("ip")
            .args([
                "-n",
                pair.name(peer),
                "-br",
                "link",
                "show",
                pair.iface(peer),
            ])
            .output()
            .expect("ip link");
        let text = String::from_utf8_lossy(&mac.stdout);
        let mac = text.split_whitespace().nth(2).expect("mac").to_owned();
        let st = std::process::Command::new("ip")
            .args(["-n", pair.name(side), "neigh", "replace"])
            .arg(pair.addr(peer).to_string())
            .args(["lladdr", &mac, "dev", pair.iface(side), "nud", "permanent"])
            .status()
            .expect("ip neigh");
        assert!(st.success());
    }
    // Let whatever the link's coming up sent drain before any probe starts.
    sleep(Duration::from_millis(200));
}

fn filter_for(pair: &Pair, pid: u32) -> Filter {
    let b = ns_path(pair, Side::B);
    Filter {
        netns: procfs::netns_inode(&b).expect("netns inode"),
        ifindex: netns::ifindex(Some(&b), pair.iface(Side::B)).expect("ifindex"),
        pid,
        tags: true,
    }
}

fn count(d: &Counters, name: &str) -> u64 {
    d.stage(name).expect(name).count
}

fn drop_code(name: &str) -> usize {
    let names = probe::drop_reason_names();
    let code = names
        .iter()
        .find(|(_, n)| n.as_str() == name)
        .map(|(c, _)| *c)
        .unwrap_or_else(|| panic!("this kernel's BTF has no drop reason {name}"));
    code as usize
}

#[test]
fn each_stage_moves_with_its_own_traffic_only() {
    if !testkit::privilege::require("probe: namespaces and BPF") {
        return;
    }
    let pair = Pair::new("prbst").expect("veth pair");
    quiet(&pair);
    let (addr_a, addr_b) = (pair.addr(Side::A), pair.addr(Side::B));
    let rx = in_netns(&ns_path(&pair, Side::B), move || {
        UdpSocket::bind((addr_b, 9000)).expect("bind in B")
    });
    rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let tx = in_netns(&ns_path(&pair, Side::A), move || {
        UdpSocket::bind((addr_a, 0)).expect("bind in A")
    });
    let probe = Probe::attach(filter_for(&pair, std::process::id())).expect("probe attaches");

    let s0 = probe.snapshot().expect("snapshot");
    sleep(Duration::from_millis(300));
    let s1 = probe.snapshot().expect("snapshot");
    let idle = s1.since(&s0);
    for name in [
        "netif_rx",
        "napi_gro_receive",
        "netif_receive_skb",
        "napi_poll",
        "softirq_net_rx",
        "skb_copy_datagram_iovec",
        "kfree_skb",
        "consume_skb",
    ] {
        assert_eq!(count(&idle, name), 0, "{name} moved with no traffic sent");
    }

    const N: u64 = 200;
    let mut buf = [0u8; 2048];
    for i in 0..N {
        let mut payload = [i as u8; 300];
        probe::tag::write(&mut payload, 1, i);
        tx.send_to(&payload, (addr_b, 9000)).expect("send");
        let (n, _) = rx.recv_from(&mut buf).expect("each datagram arrives");
        assert_eq!(n, 300);
    }
    sleep(Duration::from_millis(100));
    let s2 = probe.snapshot().expect("snapshot");
    let d = s2.since(&s1);
    // Every packet enters the stack once, by the backlog (veth without NAPI) or by GRO.
    assert_eq!(count(&d, "netif_receive_skb"), N, "netif_receive_skb");
    assert_eq!(
        count(&d, "netif_rx") + count(&d, "napi_gro_receive"),
        N,
        "netif_rx {} + napi_gro_receive {}",
        count(&d, "netif_rx"),
        count(&d, "napi_gro_receive")
    );
    let nrs = d.stage("netif_receive_skb").unwrap();
    assert_eq!(
        nrs.hist.iter().sum::<u64>(),
        N,
        "every packet's stage is timed"
    );
    assert!(nrs.sum_ns > 0);
    // Every datagram is read by this process, and its latency from driver to read is timed
    // by its tag: UDP copies a linear skb without the copy tracepoint.
    let by_seq = d.stage("read_by_sequence").unwrap();
    assert_eq!(by_seq.count, N, "read_by_sequence");
    assert_eq!(by_seq.hist.iter().sum::<u64>(), N);
    assert!(count(&d, "sys_recvfrom") >= N, "recvfrom of this process");
    assert!(count(&d, "softirq_net_rx") >= 1);
    assert!(count(&d, "napi_poll") >= 1);
    assert!(d.napi_packets >= N, "napi packets {}", d.napi_packets);
    assert_eq!(count(&d, "kfree_skb"), 0, "nothing was dropped");
    assert_eq!(count(&d, "udp_fail_queue_rcv_skb"), 0);
    assert!(
        !d.softirq_by_task.is_empty(),
        "the NET_RX time was charged to some task"
    );

    // TCP copies through skb_copy_datagram_iter: the latency keyed by skb.
    let listener = in_netns(&ns_path(&pair, Side::B), move || {
        std::net::TcpListener::bind((addr_b, 9002)).expect("listen in B")
    });
    let mut client = in_netns(&ns_path(&pair, Side::A), move || {
        std::net::TcpStream::connect((addr_b, 9002)).expect("connect from A")
    });
    let (mut server, _) = listener.accept().expect("accept");
    server
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let s3 = probe.snapshot().expect("snapshot");
    for _ in 0..20 {
        std::io::Write::write_all(&mut client, &[5u8; 100]).unwrap();
        let mut got = [0u8; 100];
        std::io::Read::read_exact(&mut server, &mut got).unwrap();
    }
    sleep(Duration::from_millis(50));
    let d = probe.snapshot().expect("snapshot").since(&s3);
    let copy = d.stage("skb_copy_datagram_iovec").unwrap();
    assert!(copy.count >= 1, "TCP reads copy through the tracepoint");
    assert_eq!(
        copy.hist.iter().sum::<u64>(),
        copy.count,
        "every copy is timed"
    );
    assert!(
        copy.count <= 20 + 3,
        "{} copies for 20 segments",
        copy.count
    );
}

#[test]
fn drops_are_counted_by_reason_where_they_happen() {
    if !testkit::privilege::require("probe: namespaces and BPF") {
        return;
    }
    let pair = Pair::new("prbdr").expect("veth pair");
    quiet(&pair);
    let (addr_a, addr_b) = (pair.addr(Side::A), pair.addr(Side::B));
    let b = ns_path(&pair, Side::B);
    let a = ns_path(&pair, Side::A);
    // A UDP socket that never reads, with the smallest receive buffer.
    let full = in_netns(&b, move || {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        s.set_recv_buffer_size(1).unwrap();
        s.bind(&SocketAddr::from((addr_b, 9001)).into()).unwrap();
        s
    });
    // A raw IP protocol 132 socket (what our SCTP reads from), also never read.
    let raw = in_netns(&b, || {
        let s = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(132))).unwrap();
        s.set_recv_buffer_size(1).unwrap();
        s
    });
    // A ping socket that never reads its echo replies.
    let st = pair
        .exec(Side::B, "sysctl")
        .args(["-qw", "net.ipv4.ping_group_range=0 0"])
        .status()
        .unwrap();
    assert!(st.success());
    let ping = in_netns(&b, || {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::ICMPV4)).unwrap();
        s.set_recv_buffer_size(1).unwrap();
        s
    });
    let tx = in_netns(&a, move || UdpSocket::bind((addr_a, 0)).unwrap());
    let raw_tx = in_netns(&a, || {
        Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(132))).unwrap()
    });
    let probe = Probe::attach(filter_for(&pair, 0)).expect("probe attaches");

    // A full UDP receive queue: SOCKET_RCVBUFF, each also a udp_fail_queue_rcv_skb.
    let s0 = probe.snapshot().unwrap();
    const FULL: u64 = 100;
    for _ in 0..FULL {
        tx.send_to(&[7u8; 1000], (addr_b, 9001)).unwrap();
    }
    sleep(Duration::from_millis(100));
    let s1 = probe.snapshot().unwrap();
    let d = s1.since(&s0);
    let rcvbuff = d.drops[drop_code("SOCKET_RCVBUFF")];
    assert!(
        (FULL - 10..=FULL).contains(&rcvbuff),
        "{rcvbuff} of {FULL} dropped at a full receive buffer"
    );
    assert_eq!(count(&d, "udp_fail_queue_rcv_skb"), rcvbuff);
    assert_eq!(count(&d, "netif_receive_skb"), FULL);

    // No listener: NO_SOCKET, exactly once per packet.
    const CLOSED: u64 = 20;
    for _ in 0..CLOSED {
        tx.send_to(&[1u8; 64], (addr_b, 9)).unwrap();
    }
    sleep(Duration::from_millis(100));
    let s2 = probe.snapshot().unwrap();
    let d = s2.since(&s1);
    assert_eq!(d.drops[drop_code("NO_SOCKET")], CLOSED, "no-socket drops");
    assert_eq!(count(&d, "udp_fail_queue_rcv_skb"), 0);

    // A full socket queued through the generic path (a ping socket): sock_rcvqueue_full,
    // each a SOCKET_RCVBUFF drop.
    const PINGS: u64 = 50;
    let to_a = SocketAddr::V4(SocketAddrV4::new(addr_a, 0));
    for i in 0..PINGS {
        let mut echo = vec![8u8, 0, 0, 0, 0, 0, 0, i as u8];
        echo.extend_from_slice(&[0u8; 400]);
        ping.send_to(&echo, &to_a.into()).unwrap();
    }
    sleep(Duration::from_millis(100));
    let s3 = probe.snapshot().unwrap();
    let d = s3.since(&s2);
    let full_q = count(&d, "sock_rcvqueue_full");
    assert!(
        (PINGS - 10..=PINGS).contains(&full_q),
        "{full_q} of {PINGS} echo replies found the ping socket full"
    );
    assert_eq!(d.drops[drop_code("SOCKET_RCVBUFF")], full_q);

    // A full raw socket (our SCTP's): kernels that queue first count sock_rcvqueue_full;
    // those that look at the buffer before cloning (6.18 here) deliver to no socket and
    // drop the packet as IP_NOPROTO. Either way each overflow is counted once.
    const RAW: u64 = 50;
    let to = SocketAddr::V4(SocketAddrV4::new(addr_b, 0));
    for _ in 0..RAW {
        raw_tx.send_to(&[0u8; 400], &to.into()).unwrap();
    }
    sleep(Duration::from_millis(100));
    let s4 = probe.snapshot().unwrap();
    let d = s4.since(&s3);
    let overflow = count(&d, "sock_rcvqueue_full") + d.drops[drop_code("IP_NOPROTO")];
    assert!(
        (RAW - 10..=RAW).contains(&overflow),
        "{overflow} of {RAW} overflowed the raw socket"
    );
    drop((full, raw, ping));
}
