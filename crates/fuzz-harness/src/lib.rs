//! Fuzz harnesses: each function takes arbitrary bytes and drives one decoder or state machine
//! with them. The cargo-fuzz targets in `fuzz/` are one line each around these functions, and
//! the stable test suite replays the saved corpus (`fuzz/corpus/<target>/`) through the same
//! functions, so what a fuzzer once found stays tested without a nightly toolchain.
//!
//! A harness panics only when the code under test breaks a promise (a panic inside it, or an
//! invariant checked here); arbitrary input must never do that.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use sctp::wire::{finish_packet, Packet};
use sctp::{AssocId, Endpoint, EndpointConfig, Event};

/// A harness: arbitrary bytes in, a panic only on a broken promise.
pub type Harness = fn(&[u8]);

/// The harnesses, by the name of their cargo-fuzz target.
pub const TARGETS: &[(&str, Harness)] = &[
    ("sctp_packet", sctp_packet),
    ("sctp_endpoint", sctp_endpoint),
    ("ngap_decode", ngap_decode),
    ("amf_n2", amf_n2),
];

/// The SCTP packet decoder: header, checksum, every chunk and its parameters.
pub fn sctp_packet(data: &[u8]) {
    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let _ = packet.verify_checksum();
    if let Ok((_, chunks)) = packet.parse() {
        for c in &chunks {
            let _ = format!("{c:?}");
        }
    }
    for c in packet.chunks() {
        let _ = format!("{c:?}");
    }
}

const SERVER_PORT: u16 = 38412;
const CLIENT_PORT: u16 = 40000;

fn addr(last: u8) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, last), 9899))
}

/// Moves packets both ways until neither side has anything to send (bounded).
fn exchange(now: Instant, client: &mut Endpoint, server: &mut Endpoint) {
    for _ in 0..64 {
        let mut moved = false;
        while let Some(t) = client.poll_transmit(now) {
            server.handle(now, addr(1), &t.packet);
            moved = true;
        }
        while let Some(t) = server.poll_transmit(now) {
            client.handle(now, addr(2), &t.packet);
            moved = true;
        }
        if !moved {
            break;
        }
    }
}

/// An SCTP endpoint fed a sequence of arbitrary packets, timer expiries and user calls, after
/// a real handshake so that the established association's paths are reachable. Each packet
/// may get the association's verification tag and a correct CRC32c patched in (the first
/// op byte's bits), so the fuzzer gets past both checks and into the chunk handling.
///
/// Input: a sequence of ops `[op, len_hi, len_lo, bytes...]`.
pub fn sctp_endpoint(data: &[u8]) {
    let start = Instant::now();
    let mut now = start;
    let mut server = Endpoint::new(EndpointConfig {
        listen_port: Some(SERVER_PORT),
        rng_seed: 1,
        ..EndpointConfig::default()
    });
    let mut client = Endpoint::new(EndpointConfig {
        rng_seed: 2,
        ..EndpointConfig::default()
    });
    let Ok(cid) = client.connect(now, addr(2), CLIENT_PORT, SERVER_PORT) else {
        return;
    };
    exchange(now, &mut client, &mut server);
    let server_vtag = client.info(cid).map(|i| i.peer_vtag).unwrap_or(0);
    let mut sid: Option<AssocId> = None;
    while let Some((id, ev)) = server.poll_event() {
        if let Event::Connected { .. } = ev {
            sid = Some(id);
        }
    }

    let mut rest = data;
    while let [op, hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (body, next) = tail.split_at(len);
        rest = next;
        match op % 8 {
            0..=3 => {
                let mut pkt = body.to_vec();
                if op & 1 != 0 {
                    if let Some(v) = pkt.get_mut(4..8) {
                        v.copy_from_slice(&server_vtag.to_be_bytes());
                    }
                    if let Some(p) = pkt.get_mut(0..4) {
                        p[..2].copy_from_slice(&CLIENT_PORT.to_be_bytes());
                        p[2..].copy_from_slice(&SERVER_PORT.to_be_bytes());
                    }
                }
                if op & 2 != 0 {
                    finish_packet(&mut pkt);
                }
                server.handle(now, addr(1), &pkt);
            }
            4 => {
                let ms = body.first().copied().unwrap_or(1);
                now += Duration::from_millis(u64::from(ms) * 50);
                server.handle_timeout(now);
                client.handle_timeout(now);
            }
            5 => {
                if let Some(id) = sid {
                    let stream = u16::from(body.first().copied().unwrap_or(0) % 20);
                    let _ = server.send(
                        id,
                        stream,
                        60,
                        op & 0x10 != 0,
                        bytes::Bytes::copy_from_slice(body),
                    );
                }
            }
            6 => exchange(now, &mut client, &mut server),
            _ => {
                client.handle(now, addr(2), body);
            }
        }
        while server.poll_transmit(now).is_some() {}
        while server.poll_event().is_some() {}
        while client.poll_event().is_some() {}
        if let Some(t) = server.poll_timeout() {
            // A timer in the past would make a runtime spin.
            assert!(t + Duration::from_secs(3600) > start, "timer before start");
        }
    }
}

/// The NGAP decoder and the checks that classify a decoded PDU (TS 38.413 §10).
pub fn ngap_decode(data: &[u8]) {
    if let Ok(pdu) = proto::ngap::decode(data) {
        let _ = pdu.check();
        let _ = pdu.kind();
        let _ = proto::ngap::encode(&pdu);
    }
}

/// The AMF's N2 handler: every input gets at most one answer, on the same association and
/// stream, and every answer is itself a decodable NGAP PDU.
pub fn amf_n2(data: &[u8]) {
    use nf::amf::n2::{AmfN2, AmfN2Config, N2Output};
    let mut amf = AmfN2::new(AmfN2Config::default());
    amf.association_up(7);
    let mut out = Vec::new();
    // Split on a marker so one input can carry several PDUs (NG Setup, then the rest).
    for pdu in data.split(|&b| b == 0xfe) {
        amf.handle(7, 0, pdu, &mut out);
        assert!(out.len() <= 1, "more than one answer to one PDU");
        for o in out.drain(..) {
            if let N2Output::Send { assoc, stream, pdu } = o {
                assert_eq!(
                    (assoc, stream),
                    (7, 0),
                    "answer on another association or stream"
                );
                assert!(
                    proto::ngap::decode(&pdu).is_ok(),
                    "our own answer does not decode"
                );
            }
        }
    }
}
