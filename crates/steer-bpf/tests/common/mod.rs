//! Shared by the delivery and steering tests: where the two ends of a test live (loopback,
//! or the two namespaces of a veth pair), a way to create sockets inside a namespace, and
//! the owner a datagram must reach and the draining of a group's sockets to check it, and a
//! TCP client bound to the source port that picks its owner.
//!
//! A socket belongs to the network namespace of the thread that created it, for its whole
//! life, whichever thread uses it later. So a test creates its server sockets on a short
//! thread that has entered namespace A and its client sockets on one inside B, and then
//! drives both from the test thread, which never leaves its own namespace.
#![allow(unsafe_code, dead_code, unreachable_pub)]

use std::fs::File;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};
use testkit::netns::{Pair, Side};

/// Runs `f` on a new thread inside network namespace `name` (`ip netns` name) and returns
/// its result.
pub fn in_netns<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            let ns = File::open(format!("/var/run/netns/{name}")).unwrap();
            // SAFETY: setns(2) with a namespace fd that is open for the call; it changes
            // only this (scoped, short-lived) thread's network namespace and touches no
            // memory of ours.
            let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {name}: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .unwrap()
    })
}

/// Where a test's server and client live.
pub enum Place {
    /// Both on this namespace's loopback; clients use their own 127.x address.
    Loopback(Ipv4Addr),
    /// Server in namespace A, clients in B, joined by a veth pair.
    Netns(Pair),
}

impl Place {
    pub fn loopback() -> Place {
        Place::Loopback(client_ip())
    }

    pub fn netns(tag: &str) -> Place {
        Place::Netns(Pair::new(tag).unwrap())
    }

    /// The address servers bind (port 0).
    pub fn server_addr(&self) -> SocketAddr {
        let ip = match self {
            Place::Loopback(_) => Ipv4Addr::LOCALHOST,
            Place::Netns(p) => p.addr(Side::A),
        };
        SocketAddr::new(IpAddr::V4(ip), 0)
    }

    /// The address clients bind.
    pub fn client_ip(&self) -> Ipv4Addr {
        match self {
            Place::Loopback(ip) => *ip,
            Place::Netns(p) => p.addr(Side::B),
        }
    }

    /// Runs `f` where servers live.
    pub fn server<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        match self {
            Place::Loopback(_) => f(),
            Place::Netns(p) => in_netns(p.name(Side::A), f),
        }
    }

    /// Runs `f` where clients live.
    pub fn client<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        match self {
            Place::Loopback(_) => f(),
            Place::Netns(p) => in_netns(p.name(Side::B), f),
        }
    }
}

/// A loopback address no other test (in this process or another) uses as a client source.
pub fn client_ip() -> Ipv4Addr {
    static N: AtomicU8 = AtomicU8::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    // 127.200-249.x.y: apart from tests/steering.rs, which uses 127.100-199.
    Ipv4Addr::new(127, 200 + n % 50, (pid >> 8) as u8, (pid % 250) as u8 + 1)
}

/// A client connected from `ip:port`; linger 0 so closing it sends RST and leaves no
/// TIME_WAIT behind on that port.
pub fn tcp_client(ip: Ipv4Addr, port: u16, to: SocketAddr) -> TcpStream {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.set_reuse_address(true).unwrap();
    s.set_linger(Some(Duration::ZERO)).unwrap();
    s.bind(&SocketAddr::new(IpAddr::V4(ip), port).into())
        .unwrap();
    s.connect_timeout(&to.into(), Duration::from_secs(5))
        .unwrap();
    s.into()
}

/// The owner without exceptions, written out here rather than taken from the crate, so that
/// a change of layout on one side fails the tests.
pub fn expected_worker(app_id: u32, workers: u32) -> usize {
    (app_id % workers) as usize
}

/// Drains every (non-blocking) socket until `want` datagrams arrived, failing after
/// `deadline`; returns (socket index, payload).
pub fn recv_n(sockets: &[UdpSocket], want: usize, deadline: Duration) -> Vec<(usize, Vec<u8>)> {
    let start = Instant::now();
    let mut got = Vec::with_capacity(want);
    let mut buf = [0u8; 2048];
    while got.len() < want {
        let mut idle = true;
        for (i, s) in sockets.iter().enumerate() {
            loop {
                match s.recv(&mut buf) {
                    Ok(n) => {
                        got.push((i, buf[..n].to_vec()));
                        idle = false;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("recv on socket {i}: {e}"),
                }
            }
        }
        assert!(
            start.elapsed() < deadline,
            "only {} of {want} datagrams arrived",
            got.len()
        );
        if idle {
            std::thread::yield_now();
        }
    }
    got
}
