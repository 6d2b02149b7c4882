//! Hostile and malformed input against a server endpoint, driven by a hand-rolled fake peer
//! that builds packets with the public wire codec.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sctp::wire::{self, chunk_type, Chunk, CommonHeader, DataChunk, InitChunk, Packet, Param};
use sctp::{Endpoint, ErrorCause, Event};

use common::{addr, server_config, SERVER_PORT};

const MY_PORT: u16 = 40000;
const MY_TAG: u32 = 0x1234_5678;
const MY_TSN: u32 = 1000;

struct Fake {
    now: Instant,
    server: Endpoint,
    me: SocketAddr,
    server_tag: u32,
    next_tsn: u32,
    ssn: [u16; 16],
}

fn build(src: u16, dst: u16, vtag: u32, chunks: &[Chunk<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for c in chunks {
        c.emit(&mut body);
    }
    with_header(src, dst, vtag, &body)
}

/// A packet to the server whose chunks are given as octets, malformed ones included.
fn raw_packet(vtag: u32, chunk_bytes: &[u8]) -> Vec<u8> {
    with_header(MY_PORT, SERVER_PORT, vtag, chunk_bytes)
}

/// The common header, then `body`, then the checksum.
fn with_header(src: u16, dst: u16, vtag: u32, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    CommonHeader {
        src_port: src,
        dst_port: dst,
        verification_tag: vtag,
    }
    .emit(&mut b);
    b.extend_from_slice(body);
    wire::finish_packet(&mut b);
    b
}

fn init(os: u16, mis: u16) -> Vec<u8> {
    build(
        MY_PORT,
        SERVER_PORT,
        0,
        &[Chunk::Init(InitChunk {
            initiate_tag: MY_TAG,
            a_rwnd: 65536,
            outbound_streams: os,
            inbound_streams: mis,
            initial_tsn: MY_TSN,
            params: &[],
        })],
    )
}

/// Chunk types of a packet.
fn types(p: &[u8]) -> Vec<u8> {
    let pk = Packet::new_checked(p).unwrap();
    assert!(pk.verify_checksum());
    pk.chunks().map(|c| c.unwrap().ty).collect()
}

/// Error causes of every ERROR/ABORT chunk in a packet.
fn causes(p: &[u8]) -> Vec<ErrorCause> {
    let pk = Packet::new_checked(p).unwrap();
    let (_, chunks) = pk.parse().unwrap();
    chunks
        .iter()
        .flat_map(|c| c.causes().map(|r| r.unwrap()).collect::<Vec<_>>())
        .collect()
}

impl Fake {
    fn new() -> Self {
        Fake {
            now: Instant::now(),
            server: Endpoint::new(server_config(77)),
            me: addr(1, 0),
            server_tag: 0,
            next_tsn: MY_TSN,
            ssn: [0; 16],
        }
    }

    fn send(&mut self, p: &[u8]) {
        let (now, me) = (self.now, self.me);
        self.server.handle(now, me, p);
    }

    fn replies(&mut self) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        while let Some(t) = self.server.poll_transmit(self.now) {
            assert_eq!(t.remote, self.me);
            v.push(t.packet);
        }
        v
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        let now = self.now;
        self.server.handle_timeout(now);
    }

    fn events(&mut self) -> Vec<Event> {
        let mut v = Vec::new();
        while let Some((_, e)) = self.server.poll_event() {
            v.push(e);
        }
        v
    }

    /// Returns the cookie from the server's INIT ACK.
    fn get_cookie(&mut self) -> Vec<u8> {
        self.send(&init(4, 4));
        let r = self.replies();
        assert_eq!(r.len(), 1);
        let pk = Packet::new_checked(&r[0][..]).unwrap();
        assert_eq!(pk.verification_tag(), MY_TAG);
        let (_, chunks) = pk.parse().unwrap();
        let Chunk::InitAck(ia) = chunks[0] else {
            panic!("expected INIT ACK")
        };
        self.server_tag = ia.initiate_tag;
        ia.params()
            .find_map(|p| match Param::parse(p.unwrap()).unwrap() {
                Param::StateCookie(c) => Some(c.to_vec()),
                _ => None,
            })
            .unwrap()
    }

    fn cookie_echo(&self, cookie: &[u8]) -> Vec<u8> {
        build(
            MY_PORT,
            SERVER_PORT,
            self.server_tag,
            &[Chunk::CookieEcho { cookie }],
        )
    }

    fn established() -> Self {
        let mut f = Fake::new();
        let cookie = f.get_cookie();
        let ce = f.cookie_echo(&cookie);
        f.send(&ce);
        let r = f.replies();
        assert_eq!(r.len(), 1);
        assert_eq!(types(&r[0]), vec![chunk_type::COOKIE_ACK]);
        assert!(matches!(
            f.events()[..],
            [Event::Connected {
                inbound_streams: 4,
                outbound_streams: 4,
                ..
            }]
        ));
        f
    }

    fn next_ssn(&mut self, stream: u16) -> u16 {
        match self.ssn.get_mut(usize::from(stream)) {
            Some(s) => {
                *s += 1;
                *s - 1
            }
            None => 0,
        }
    }

    /// The next whole (B and E) NGAP message on `stream`, taking the next TSN and SSN.
    fn next_data<'a>(&mut self, stream: u16, payload: &'a [u8]) -> Chunk<'a> {
        let tsn = self.next_tsn;
        self.next_tsn += 1;
        let ssn = self.next_ssn(stream);
        Chunk::Data(DataChunk {
            flags: wire::data_flags::B | wire::data_flags::E,
            tsn,
            stream,
            ssn,
            ppid: 60,
            payload,
        })
    }

    fn data(&mut self, stream: u16, payload: &[u8]) -> Vec<u8> {
        let chunk = self.next_data(stream, payload);
        build(MY_PORT, SERVER_PORT, self.server_tag, &[chunk])
    }

    fn data_chunk_bytes(&mut self, stream: u16, payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        self.next_data(stream, payload).emit(&mut b);
        b
    }

    fn messages(&mut self) -> Vec<Vec<u8>> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Message(m) => Some(m.data.to_vec()),
                _ => None,
            })
            .collect()
    }

    /// Proves the association still works: a DATA chunk is delivered and SACKed.
    fn assert_alive(&mut self) {
        let p = self.data(0, b"alive");
        self.send(&p);
        assert_eq!(self.messages(), vec![b"alive".to_vec()]);
        self.advance(Duration::from_millis(250));
        let r = self.replies();
        assert!(r.iter().any(|p| types(p).contains(&chunk_type::SACK)));
        assert_eq!(self.server.len(), 1);
    }
}

#[test]
fn handshake_bytes_and_sack() {
    let mut f = Fake::established();
    let p = f.data(1, b"hello");
    f.send(&p);
    assert_eq!(f.messages(), vec![b"hello".to_vec()]);
    // Delayed SACK (200 ms) for a single packet.
    assert!(f.replies().is_empty());
    f.advance(Duration::from_millis(199));
    assert!(f.replies().is_empty());
    f.advance(Duration::from_millis(1));
    let r = f.replies();
    assert_eq!(r.len(), 1);
    let pk = Packet::new_checked(&r[0][..]).unwrap();
    assert_eq!(pk.verification_tag(), MY_TAG);
    let (_, chunks) = pk.parse().unwrap();
    let Chunk::Sack(s) = chunks[0] else { panic!() };
    assert_eq!(s.cum_tsn_ack, MY_TSN);
    assert_eq!(s.gap_count(), 0);
}

#[test]
fn second_packet_and_gaps_sacked_immediately() {
    let mut f = Fake::established();
    let p1 = f.data(0, b"1");
    let p2 = f.data(0, b"2");
    f.send(&p1);
    f.send(&p2);
    assert_eq!(
        f.replies().len(),
        1,
        "every second packet is acknowledged at once"
    );
    // Skip a TSN: a gap is reported at once.
    f.next_tsn += 1;
    let p4 = f.data(0, b"4");
    f.send(&p4);
    let r = f.replies();
    assert_eq!(r.len(), 1);
    let pk = Packet::new_checked(&r[0][..]).unwrap();
    let (_, chunks) = pk.parse().unwrap();
    let Chunk::Sack(s) = chunks[0] else { panic!() };
    assert_eq!(s.cum_tsn_ack, MY_TSN + 1);
    assert_eq!(s.gaps().collect::<Vec<_>>(), vec![(2, 2)]);
    // A duplicate is reported at once too.
    f.send(&p1);
    let r = f.replies();
    let pk = Packet::new_checked(&r[0][..]).unwrap();
    let (_, chunks) = pk.parse().unwrap();
    let Chunk::Sack(s) = chunks[0] else { panic!() };
    assert_eq!(s.dups().collect::<Vec<_>>(), vec![MY_TSN]);
    assert_eq!(f.server.stats().duplicate_tsns, 1);
}

#[test]
fn bad_checksum_is_dropped_and_counted() {
    let mut f = Fake::established();
    let mut p = f.data(0, b"corrupt");
    f.next_tsn -= 1;
    f.ssn[0] -= 1;
    let n = p.len();
    p[n - 1] ^= 0x55;
    f.send(&p);
    assert!(f.replies().is_empty());
    assert!(f.messages().is_empty());
    assert_eq!(f.server.stats().bad_checksum, 1);
    f.assert_alive();
}

#[test]
fn wrong_verification_tag_is_dropped() {
    let mut f = Fake::established();
    let good = f.data(0, b"x");
    f.next_tsn -= 1;
    f.ssn[0] -= 1;
    let mut b = good.clone();
    b[4..8].copy_from_slice(&(f.server_tag ^ 1).to_be_bytes());
    wire::finish_packet(&mut b);
    f.send(&b);
    assert!(f.replies().is_empty());
    assert!(f.messages().is_empty());
    assert_eq!(f.server.stats().bad_vtag, 1);
    // ABORT with the T bit must carry the server's view of *our* tag, not its own.
    let abort_t = build(
        MY_PORT,
        SERVER_PORT,
        f.server_tag,
        &[Chunk::Abort {
            t_bit: true,
            causes: &[],
        }],
    );
    f.send(&abort_t);
    assert_eq!(f.server.stats().bad_vtag, 2);
    assert_eq!(f.server.len(), 1);
    f.assert_alive();
}

#[test]
fn truncated_and_overlong_chunks() {
    let mut f = Fake::established();
    let tag = f.server_tag;
    let cases: Vec<Vec<u8>> = vec![
        // Chunk length 2 (below the header).
        vec![0, 3, 0, 2],
        // Length beyond the packet.
        vec![0, 3, 0, 200, 0, 0, 0, 1],
        // DATA too short for its fixed fields.
        vec![0, 3, 0, 8, 0, 0, 3, 0xe8],
        // SACK whose gap count overruns the chunk.
        vec![3, 0, 0, 16, 0, 0, 3, 0xe7, 0, 1, 0, 0, 0, 9, 0, 0],
        // Three stray bytes after a chunk.
        vec![11, 0, 0, 4, 1, 2, 3],
        // Empty chunk area.
        vec![],
    ];
    for (i, c) in cases.iter().enumerate() {
        f.send(&raw_packet(tag, c));
        assert!(f.replies().is_empty(), "case {i}");
        assert_eq!(f.server.stats().malformed, i as u64 + 1, "case {i}");
    }
    // A packet shorter than the common header.
    f.send(&[1, 2, 3]);
    assert_eq!(f.server.stats().malformed, cases.len() as u64 + 1);
    assert!(f.messages().is_empty());
    f.assert_alive();
}

#[test]
fn unknown_chunk_types_follow_the_upper_bits() {
    // RFC 9260 §3.2: 00 stop, 01 stop + report, 10 skip, 11 skip + report.
    for (ty, delivered, reported) in [
        (0x3fu8, false, false),
        (0x7f, false, true),
        (0xbf, true, false),
        (0xff, true, true),
    ] {
        let mut f = Fake::established();
        let mut chunks = vec![ty, 0, 0, 6, 0xaa, 0xbb, 0, 0];
        chunks.extend(f.data_chunk_bytes(0, b"after"));
        let tag = f.server_tag;
        f.send(&raw_packet(tag, &chunks));
        let got = f.messages();
        assert_eq!(!got.is_empty(), delivered, "type {ty:#x}");
        f.advance(Duration::from_millis(300));
        let r = f.replies();
        let all_causes: Vec<ErrorCause> = r.iter().flat_map(|p| causes(p)).collect();
        let want = ErrorCause::UnrecognizedChunkType(vec![ty, 0, 0, 6, 0xaa, 0xbb]);
        assert_eq!(
            all_causes.contains(&want),
            reported,
            "type {ty:#x}: {all_causes:?}"
        );
        assert_eq!(f.server.stats().unknown_chunks, 1);
        if !delivered {
            // The DATA after a "stop" chunk was not processed: its TSN is still expected.
            f.next_tsn -= 1;
            f.ssn[0] -= 1;
        }
        f.assert_alive();
    }
}

#[test]
fn init_with_zero_streams_is_aborted() {
    for (os, mis) in [(0u16, 4u16), (4, 0)] {
        let mut f = Fake::new();
        f.send(&init(os, mis));
        let r = f.replies();
        assert_eq!(r.len(), 1);
        assert_eq!(types(&r[0]), vec![chunk_type::ABORT]);
        let pk = Packet::new_checked(&r[0][..]).unwrap();
        assert_eq!(pk.verification_tag(), MY_TAG);
        assert_eq!(causes(&r[0]), vec![ErrorCause::InvalidMandatoryParameter]);
        assert_eq!(f.server.stats().init_zero_streams, 1);
        assert!(f.server.is_empty());
    }
}

#[test]
fn init_with_zero_tag_or_bundled_or_nonzero_vtag_is_dropped() {
    let mut f = Fake::new();
    let mut p = init(4, 4);
    p[16..20].copy_from_slice(&[0, 0, 0, 0]); // Initiate Tag 0
    wire::finish_packet(&mut p);
    f.send(&p);
    let mut p = init(4, 4);
    p[4..8].copy_from_slice(&[0, 0, 0, 1]); // vtag must be 0 on INIT
    wire::finish_packet(&mut p);
    f.send(&p);
    let mut p = init(4, 4);
    p.extend_from_slice(&[11, 0, 0, 4]); // INIT bundled with COOKIE ACK
    wire::finish_packet(&mut p);
    f.send(&p);
    assert!(f.replies().is_empty());
    assert_eq!(f.server.stats().malformed, 2);
    assert_eq!(f.server.stats().bad_vtag, 1);
}

#[test]
fn init_unknown_params_are_reported_in_init_ack() {
    let mut f = Fake::new();
    let mut params = Vec::new();
    // 0xc00x: skip and report; 0x8001: skip silently; IPv4 address: ignored.
    for (ty, v) in [
        (0xc001u16, &[1u8, 2][..]),
        (0x8001, &[3, 4]),
        (5, &[10, 0, 0, 1]),
    ] {
        params.extend_from_slice(&ty.to_be_bytes());
        params.extend_from_slice(&((4 + v.len()) as u16).to_be_bytes());
        params.extend_from_slice(v);
        while params.len() % 4 != 0 {
            params.push(0);
        }
    }
    let p = build(
        MY_PORT,
        SERVER_PORT,
        0,
        &[Chunk::Init(InitChunk {
            initiate_tag: MY_TAG,
            a_rwnd: 65536,
            outbound_streams: 2,
            inbound_streams: 2,
            initial_tsn: 1,
            params: &params,
        })],
    );
    f.send(&p);
    let r = f.replies();
    let pk = Packet::new_checked(&r[0][..]).unwrap();
    let (_, chunks) = pk.parse().unwrap();
    let Chunk::InitAck(ia) = chunks[0] else {
        panic!()
    };
    let unrec: Vec<Vec<u8>> = ia
        .params()
        .filter_map(|p| match Param::parse(p.unwrap()).unwrap() {
            Param::UnrecognizedParameter(v) => Some(v.to_vec()),
            _ => None,
        })
        .collect();
    assert_eq!(unrec, vec![vec![0xc0, 0x01, 0, 6, 1, 2]]);
}

#[test]
fn data_for_a_closed_stream_gets_an_error_and_is_acked() {
    let mut f = Fake::established();
    let p = f.data(9, b"nope");
    f.send(&p);
    assert!(f.messages().is_empty());
    let r = f.replies();
    let all: Vec<ErrorCause> = r.iter().flat_map(|p| causes(p)).collect();
    assert_eq!(all, vec![ErrorCause::InvalidStreamIdentifier { stream: 9 }]);
    assert_eq!(f.server.stats().invalid_stream_data, 1);
    // The TSN was acknowledged (SACK cum = that TSN), possibly in the same packet.
    let sack_cum = r.iter().find_map(|p| {
        let pk = Packet::new_checked(&p[..]).unwrap();
        let (_, chunks) = pk.parse().unwrap();
        chunks.iter().find_map(|c| match c {
            Chunk::Sack(s) => Some(s.cum_tsn_ack),
            _ => None,
        })
    });
    assert_eq!(sack_cum, Some(MY_TSN));
    f.assert_alive();
}

#[test]
fn data_without_user_data_aborts() {
    let mut f = Fake::established();
    let p = f.data(0, b"");
    f.send(&p);
    let r = f.replies();
    assert_eq!(causes(&r[0]), vec![ErrorCause::NoUserData { tsn: MY_TSN }]);
    assert!(f.server.is_empty());
}

#[test]
fn stale_cookie_gets_an_error() {
    let mut f = Fake::new();
    let cookie = f.get_cookie();
    f.now += Duration::from_secs(61);
    let ce = f.cookie_echo(&cookie);
    f.send(&ce);
    let r = f.replies();
    assert_eq!(r.len(), 1);
    let pk = Packet::new_checked(&r[0][..]).unwrap();
    assert_eq!(pk.verification_tag(), MY_TAG);
    match &causes(&r[0])[..] {
        [ErrorCause::StaleCookie { staleness_us }] => {
            assert!(
                (900_000..=1_100_000).contains(staleness_us),
                "{staleness_us}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(f.server.stats().stale_cookies, 1);
    assert!(f.server.is_empty());
}

#[test]
fn forged_cookie_is_dropped_silently() {
    let mut f = Fake::new();
    let mut cookie = f.get_cookie();
    cookie[5] ^= 1;
    let ce = f.cookie_echo(&cookie);
    f.send(&ce);
    assert!(f.replies().is_empty());
    assert_eq!(f.server.stats().forged_cookies, 1);
    assert!(f.server.is_empty());
    // A genuine cookie presented from another address is not accepted either.
    let cookie = f.get_cookie();
    let ce = f.cookie_echo(&cookie);
    f.me = addr(9, 0);
    f.send(&ce);
    assert_eq!(f.server.stats().forged_cookies, 2);
    assert!(f.server.is_empty());
}

#[test]
fn packet_to_a_foreign_port_gets_no_reply() {
    let mut f = Fake::established();
    let p = build(MY_PORT, 5555, 0, &[Chunk::Shutdown { cum_tsn_ack: 1 }]);
    f.send(&p);
    let p = build(
        MY_PORT,
        5556,
        0,
        &[Chunk::Init(InitChunk {
            initiate_tag: 1,
            a_rwnd: 1,
            outbound_streams: 1,
            inbound_streams: 1,
            initial_tsn: 1,
            params: &[],
        })],
    );
    f.send(&p);
    // Even garbage after the ports is not looked at.
    let mut g = vec![0u8; 40];
    g[2..4].copy_from_slice(&5557u16.to_be_bytes());
    f.send(&g);
    assert!(f.replies().is_empty());
    assert_eq!(f.server.stats().foreign_port, 3);
    assert_eq!(f.server.stats().bad_checksum, 0);
    assert!(f.server.owns_port(SERVER_PORT));
    assert!(!f.server.owns_port(5555));
}

#[test]
fn out_of_the_blue_rules() {
    let mut f = Fake::new();
    // DATA with no association → ABORT, T bit, reflecting the packet's tag (§8.4 rule 8).
    let p = build(MY_PORT, SERVER_PORT, 0xdead_beef, &[Chunk::ShutdownAck]);
    f.send(&p);
    let r = f.replies();
    assert_eq!(types(&r[0]), vec![chunk_type::SHUTDOWN_COMPLETE]);
    let pk = Packet::new_checked(&r[0][..]).unwrap();
    assert_eq!(pk.verification_tag(), 0xdead_beef);
    assert_eq!(r[0][13] & 1, 1, "T bit");
    let mut f2 = Fake::new();
    let d = f2.data(0, b"x");
    f2.send(&d);
    let r = f2.replies();
    assert_eq!(types(&r[0]), vec![chunk_type::ABORT]);
    assert_eq!(r[0][13] & 1, 1, "T bit");
    // ABORT, SHUTDOWN COMPLETE, COOKIE ACK and ERROR are never answered.
    for c in [
        Chunk::Abort {
            t_bit: false,
            causes: &[],
        },
        Chunk::ShutdownComplete { t_bit: false },
        Chunk::CookieAck,
        Chunk::Error { causes: &[] },
    ] {
        f2.send(&build(MY_PORT, SERVER_PORT, 5, &[c]));
    }
    assert!(f2.replies().is_empty());
    assert_eq!(f2.server.stats().out_of_the_blue, 5);
}

#[test]
fn garbage_never_panics() {
    let mut rng = SmallRng::seed_from_u64(1234);
    let mut f = Fake::established();
    let tag = f.server_tag;
    let valid: Vec<Vec<u8>> = vec![
        init(4, 4),
        f.data(0, b"seed"),
        build(MY_PORT, SERVER_PORT, tag, &[Chunk::Sack(parse_sack())]),
        build(
            MY_PORT,
            SERVER_PORT,
            tag,
            &[Chunk::Shutdown { cum_tsn_ack: 5 }],
        ),
        build(
            MY_PORT,
            SERVER_PORT,
            tag,
            &[Chunk::Heartbeat {
                info: &[0, 1, 0, 8, 1, 2, 3, 4],
            }],
        ),
    ];
    for i in 0..20_000u32 {
        let mut p = if i % 3 == 0 {
            let n = rng.gen_range(12..200);
            let mut p: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            p[0..2].copy_from_slice(&MY_PORT.to_be_bytes());
            p[2..4].copy_from_slice(&SERVER_PORT.to_be_bytes());
            if rng.gen_bool(0.5) {
                p[4..8].copy_from_slice(&tag.to_be_bytes());
            }
            p
        } else {
            let mut p = valid[rng.gen_range(0..valid.len())].clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(12..p.len());
                p[at] ^= 1 << rng.gen_range(0..8);
            }
            p
        };
        wire::finish_packet(&mut p);
        f.send(&p);
        if i % 100 == 0 {
            f.advance(Duration::from_millis(50));
        }
        f.replies();
        f.events();
        let pk = Packet::new_checked(&p[..]).unwrap();
        let _ = pk.parse();
    }
    assert!(f.server.len() <= 1);
}

fn parse_sack() -> wire::SackChunk<'static> {
    static B: [u8; 24] = [
        3, 0, 0, 24, 0, 0, 3, 0xe8, 0, 1, 0, 0, 0, 1, 0, 1, 0, 2, 0, 3, 0, 0, 3, 0xe9,
    ];
    match Chunk::parse(wire::ChunkIter::new(&B).next().unwrap().unwrap()).unwrap() {
        Chunk::Sack(s) => s,
        _ => unreachable!(),
    }
}

#[test]
fn tampered_heartbeat_ack_is_harmless() {
    let mut f = Fake::established();
    // Wait for the server's first heartbeat (HB.interval 30 s + RTO jitter).
    let mut hb = None;
    for _ in 0..100 {
        f.advance(Duration::from_secs(1));
        for p in f.replies() {
            let pk = Packet::new_checked(&p[..]).unwrap();
            let (_, chunks) = pk.parse().unwrap();
            if let Some(Chunk::Heartbeat { info }) = chunks.first() {
                hb = Some(info.to_vec());
            }
        }
        if hb.is_some() {
            break;
        }
    }
    let mut info = hb.expect("no heartbeat");
    let tag = f.server_tag;
    // A far-future send time must not overflow the clock arithmetic.
    let n = info.len();
    info[n - 8..].copy_from_slice(&[0xff; 8]);
    f.send(&build(
        MY_PORT,
        SERVER_PORT,
        tag,
        &[Chunk::HeartbeatAck { info: &info }],
    ));
    info[n - 8..].copy_from_slice(&[0; 8]);
    f.send(&build(
        MY_PORT,
        SERVER_PORT,
        tag,
        &[Chunk::HeartbeatAck { info: &info }],
    ));
    // Garbage info.
    f.send(&build(
        MY_PORT,
        SERVER_PORT,
        tag,
        &[Chunk::HeartbeatAck {
            info: &[0, 1, 0, 5, 9],
        }],
    ));
    f.assert_alive();
    // The server answers our heartbeats by echoing the info verbatim.
    let hb = [0, 1, 0, 7, 1, 2, 3, 0];
    f.send(&build(
        MY_PORT,
        SERVER_PORT,
        tag,
        &[Chunk::Heartbeat { info: &hb[..7] }],
    ));
    let r = f.replies();
    let pk = Packet::new_checked(&r[0][..]).unwrap();
    let (_, chunks) = pk.parse().unwrap();
    assert_eq!(chunks[0], Chunk::HeartbeatAck { info: &hb[..7] });
}

#[test]
fn client_refuses_init_ack_with_zero_streams() {
    let now = Instant::now();
    let mut client = Endpoint::new(common::client_config(5));
    let server = addr(2, 0);
    let id = client.connect(now, server, MY_PORT, SERVER_PORT).unwrap();
    let init = client.poll_transmit(now).unwrap().packet;
    let pk = Packet::new_checked(&init[..]).unwrap();
    assert_eq!(pk.verification_tag(), 0);
    let (_, chunks) = pk.parse().unwrap();
    let Chunk::Init(i) = chunks[0] else { panic!() };
    assert_eq!((i.outbound_streams, i.inbound_streams), (16, 16));
    let ack = build(
        SERVER_PORT,
        MY_PORT,
        i.initiate_tag,
        &[Chunk::InitAck(InitChunk {
            initiate_tag: 77,
            a_rwnd: 1000,
            outbound_streams: 0,
            inbound_streams: 4,
            initial_tsn: 1,
            params: &[0, 7, 0, 8, 1, 2, 3, 4],
        })],
    );
    client.handle(now, server, &ack);
    let r = client.poll_transmit(now).unwrap().packet;
    assert_eq!(causes(&r), vec![ErrorCause::InvalidMandatoryParameter]);
    assert_eq!(Packet::new_checked(&r[..]).unwrap().verification_tag(), 77);
    assert_eq!(client.stats().init_zero_streams, 1);
    let ev: Vec<_> = std::iter::from_fn(|| client.poll_event()).collect();
    assert_eq!(
        ev,
        vec![(
            id,
            Event::Closed {
                reason: sctp::CloseReason::InitFailed
            }
        )]
    );
    assert!(client.is_empty());
    assert!(!client.owns_port(MY_PORT));
}

#[test]
fn client_refuses_init_ack_without_cookie() {
    let now = Instant::now();
    let mut client = Endpoint::new(common::client_config(6));
    let server = addr(2, 0);
    client.connect(now, server, MY_PORT, SERVER_PORT).unwrap();
    let init = client.poll_transmit(now).unwrap().packet;
    let tag = Packet::new_checked(&init[..])
        .unwrap()
        .parse()
        .map(|(_, c)| match c[0] {
            Chunk::Init(i) => i.initiate_tag,
            _ => 0,
        });
    let ack = build(
        SERVER_PORT,
        MY_PORT,
        tag.unwrap(),
        &[Chunk::InitAck(InitChunk {
            initiate_tag: 77,
            a_rwnd: 1000,
            outbound_streams: 4,
            inbound_streams: 4,
            initial_tsn: 1,
            params: &[],
        })],
    );
    client.handle(now, server, &ack);
    let r = client.poll_transmit(now).unwrap().packet;
    assert_eq!(
        causes(&r),
        vec![ErrorCause::MissingMandatoryParameter { params: vec![7] }]
    );
    assert!(client.is_empty());
}
