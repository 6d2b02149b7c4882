//! Interoperability with libusrsctp (an independent implementation): our endpoint connects
//! over UDP encapsulation (RFC 6951) on loopback to a usrsctp echo server, sends messages of
//! mixed sizes (fragmented and not, ordered and unordered) and checks every echo, then shuts
//! down gracefully. Real sockets and real time; skipped when the C compiler or libusrsctp
//! is missing.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use sctp::{CloseReason, Endpoint, Event};

/// Kills and reaps the peer however the test ends (including by panic).
struct Peer(std::process::Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn build_peer(name: &str) -> Option<std::path::PathBuf> {
    let src = std::path::Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned()),
    )
    .join("tests/interop/usrsctp_echo.c");
    let out = std::env::temp_dir().join(format!("usrsctp_{name}_{}", std::process::id()));
    let ok = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&out)
        .arg(src)
        .args(["-lusrsctp", "-lpthread"])
        .status()
        .ok()?
        .success();
    ok.then_some(out)
}

/// One turn of the real-time loop against the peer: send what is queued, take at most one
/// datagram (the socket's read timeout bounds the wait), fire an expired timer.
fn turn(ep: &mut Endpoint, sock: &UdpSocket, buf: &mut [u8]) {
    let now = Instant::now();
    while let Some(t) = ep.poll_transmit(now) {
        sock.send_to(&t.packet, t.remote).unwrap();
    }
    if let Ok((n, from)) = sock.recv_from(buf) {
        ep.handle(Instant::now(), from, &buf[..n]);
    }
    let now = Instant::now();
    if ep.poll_timeout().is_some_and(|t| t <= now) {
        ep.handle_timeout(now);
    }
}

#[test]
fn echo_with_usrsctp() {
    let Some(bin) = build_peer("server") else {
        testkit::privilege::skip_missing_tool("the usrsctp peer (cc or libusrsctp-dev)");
        return;
    };
    const N: u32 = 300;
    let encaps = {
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut peer = Peer(
        Command::new(&bin)
            .args([encaps.to_string(), "38412".into(), N.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = &mut peer.0;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");

    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(5)))
        .unwrap();
    let peer: SocketAddr = format!("127.0.0.1:{encaps}").parse().unwrap();
    let mut ep = Endpoint::new(client_config(70));
    let id = ep.connect(Instant::now(), peer, 40000, 38412).unwrap();
    // usrsctp offers 10 outbound streams by default; echoes come back on the same stream.
    let mut todo: VecDeque<Planned> = plan(71, N, 4, 6000).into();
    let mut got = Vec::new();
    let mut closed = None;
    let mut connected = false;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = vec![0u8; 70_000];
    while closed.is_none() && Instant::now() < deadline {
        turn(&mut ep, &sock, &mut buf);
        while let Some((_, e)) = ep.poll_event() {
            match e {
                Event::Connected {
                    outbound_streams, ..
                } => {
                    assert!(outbound_streams >= 4);
                    connected = true;
                }
                Event::Message(m) => got.push(m),
                Event::Closed { reason } => closed = Some(reason),
                other => panic!("unexpected {other:?}"),
            }
        }
        if connected {
            while let Some(p) = todo.front() {
                match ep.send(id, p.stream, p.idx, p.unordered, payload(p.idx, p.len)) {
                    Ok(()) => {
                        todo.pop_front();
                    }
                    Err(sctp::SendError::Full) => break,
                    Err(e) => panic!("{e:?}"),
                }
            }
            if got.len() == N as usize
                && ep
                    .info(id)
                    .is_some_and(|i| i.state == sctp::State::Established)
            {
                ep.shutdown(Instant::now(), id).unwrap();
            }
        }
    }
    // The SHUTDOWN COMPLETE queued by the close.
    while let Some(t) = ep.poll_transmit(Instant::now()) {
        sock.send_to(&t.packet, t.remote).unwrap();
    }
    let mut status = None;
    for _ in 0..500 {
        status = child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if closed.is_none() || status.is_none() {
        panic!(
            "no close: got {} echoes; {:?} {:?}",
            got.len(),
            ep.info(id),
            ep.stats()
        );
    }
    let _ = std::fs::remove_file(&bin);
    assert!(status.unwrap().success());
    assert_eq!(lines.next().unwrap().unwrap(), format!("done {N}"));
    let plan_all = plan(71, N, 4, 6000);
    let got: Vec<_> = got.into_iter().map(|m| (id, m)).collect();
    check_delivery(&got, &plan_all);
    assert_eq!(closed, Some(CloseReason::ShutdownComplete));
    let st = ep.stats();
    assert_eq!(st.bad_checksum, 0);
    assert_eq!(st.malformed, 0);
}

#[test]
fn usrsctp_client_against_our_server() {
    let Some(bin) = build_peer("client") else {
        testkit::privilege::skip_missing_tool("the usrsctp peer (cc or libusrsctp-dev)");
        return;
    };
    const N: u32 = 200;
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(5)))
        .unwrap();
    let our_port = sock.local_addr().unwrap().port();
    let their_port = {
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut peer = Peer(
        Command::new(&bin)
            .args([
                "client".to_string(),
                their_port.to_string(),
                our_port.to_string(),
                SERVER_PORT.to_string(),
                N.to_string(),
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = &mut peer.0;
    let mut ep = Endpoint::new(server_config(72));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = vec![0u8; 70_000];
    let mut echoed = 0u32;
    let mut events = Vec::new();
    let mut status = None;
    while Instant::now() < deadline {
        turn(&mut ep, &sock, &mut buf);
        while let Some((id, e)) = ep.poll_event() {
            if let Event::Message(m) = &e {
                // usrsctp puts the PPID on the wire in network order: it is the index.
                let i = m.ppid;
                let want: Vec<u8> = (0..1 + (i as usize * 7919) % 3000)
                    .map(|k| (i as usize + k) as u8)
                    .collect();
                assert_eq!(&m.data[..], &want[..], "message {i}");
                ep.send(id, m.stream, m.ppid, false, m.data.clone())
                    .unwrap();
                echoed += 1;
            }
            events.push(e);
        }
        status = child.try_wait().unwrap();
        if status.is_some() && ep.is_empty() {
            break;
        }
    }
    let _ = std::fs::remove_file(&bin);
    assert!(
        status.is_some_and(|s| s.success()),
        "{events:?} {:?}",
        ep.stats()
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), format!("done {N}"));
    assert_eq!(echoed, N);
    assert!(matches!(events.first(), Some(Event::Connected { .. })));
    assert_eq!(
        events.last(),
        Some(&Event::Closed {
            reason: CloseReason::ShutdownComplete
        })
    );
    assert_eq!(ep.stats().bad_checksum, 0);
}
