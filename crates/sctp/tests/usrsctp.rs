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

fn build_peer() -> Option<std::path::PathBuf> {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/usrsctp_echo.c");
    let out = std::env::temp_dir().join(format!("usrsctp_echo_{}", std::process::id()));
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

#[test]
fn echo_with_usrsctp() {
    let Some(bin) = build_peer() else {
        eprintln!("cannot build the usrsctp peer (cc or libusrsctp-dev missing); skipping");
        return;
    };
    const N: u32 = 300;
    let encaps = {
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut child = Command::new(&bin)
        .args([encaps.to_string(), "38412".into(), N.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
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
        let now = Instant::now();
        while let Some(t) = ep.poll_transmit(now) {
            sock.send_to(&t.packet, t.remote).unwrap();
        }
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            ep.handle(Instant::now(), from, &buf[..n]);
        }
        let now = Instant::now();
        if ep.poll_timeout().is_some_and(|t| t <= now) {
            ep.handle_timeout(now);
        }
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
    if closed.is_none() {
        let _ = child.kill();
        panic!(
            "no close: got {} echoes; {:?} {:?}",
            got.len(),
            ep.info(id),
            ep.stats()
        );
    }
    let status = child.wait().unwrap();
    let _ = std::fs::remove_file(&bin);
    let plan_all = plan(71, N, 4, 6000);
    let got: Vec<_> = got.into_iter().map(|m| (id, m)).collect();
    check_delivery(&got, &plan_all);
    assert_eq!(closed, Some(CloseReason::ShutdownComplete));
    assert!(status.success());
    let st = ep.stats();
    assert_eq!(st.bad_checksum, 0);
    assert_eq!(st.malformed, 0);
}
