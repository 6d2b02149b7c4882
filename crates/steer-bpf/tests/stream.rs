//! sockmap + strparser stream steering on real sockets: 100k framed messages over one TCP
//! connection must each arrive whole, in order, at the unix socket of the worker that owns
//! their app id (computed here independently), and the program's counters must account for
//! every one, on loopback and across a netns pair. Needs root (CAP_BPF).
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::{expected_worker, Place};
use steer_bpf::stream::{encode_header, FrameReader, HEADER_LEN};
use steer_bpf::{Error, StreamSteering};

const TOTAL: u32 = 100_000;
/// Messages per write: several per segment, and writes cut at odd offsets below, so headers
/// straddle segments and the parser's offset handling is exercised.
const BATCH: u32 = 32;

/// The app id of message `k`: spread over the whole 32-bit space.
fn app_id(k: u32) -> u32 {
    k.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995
}

/// Message `k`: header, then `k` itself, then filler up to a size that varies with k.
fn message(k: u32) -> Vec<u8> {
    let len = HEADER_LEN + 4 + (k % 7) as usize * 9;
    let mut m = encode_header(len as u32, app_id(k)).to_vec();
    m.extend_from_slice(&k.to_be_bytes());
    m.resize(len, (k % 251) as u8);
    m
}

/// Reads worker `w`'s socket until it has `want` messages; returns their k in arrival order.
fn worker_reads(mut sock: &UnixStream, want: usize) -> Vec<u32> {
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut r = FrameReader::new();
    let mut got = Vec::with_capacity(want);
    let mut buf = vec![0u8; 1 << 16];
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.len() < want {
        assert!(
            Instant::now() < deadline,
            "worker has {} of {want} messages",
            got.len()
        );
        let n = match sock.read(&mut buf) {
            Ok(n) => n,
            // A psock's receive path gives up early (EAGAIN) on a blocking socket while the
            // kworker has not delivered yet (KERNEL.md §2.2): read again.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => panic!("worker read after {} messages: {e}", got.len()),
        };
        assert!(n > 0, "worker socket closed after {} messages", got.len());
        r.extend(&buf[..n]);
        while let Some((id, m)) = r.next_message() {
            let k = u32::from_be_bytes(m[HEADER_LEN..HEADER_LEN + 4].try_into().unwrap());
            assert_eq!(id, app_id(k), "header of message {k}");
            assert_eq!(m, message(k).as_slice(), "body of message {k}");
            got.push(k);
        }
        assert!(
            !r.is_corrupt(),
            "worker stream corrupt after {} messages",
            got.len()
        );
    }
    assert_eq!(r.pending(), 0);
    got
}

fn steer_100k(place: &Place, workers: u16) {
    let (mut steering, sockets) = StreamSteering::new(workers).unwrap();
    let listener = place.server(|| TcpListener::bind(place.server_addr()).unwrap());
    let to = listener.local_addr().unwrap();
    let client_ip = place.client_ip();
    let mut client = place.client(|| {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.bind(&std::net::SocketAddr::new(client_ip.into(), 0).into())
            .unwrap();
        s.connect(&to.into()).unwrap();
        TcpStream::from(s)
    });
    let (conn, _) = listener.accept().unwrap();
    steering.add_stream(&conn).unwrap();

    // The expected table: which worker gets which k, in send order.
    let mut expect: Vec<Vec<u32>> = vec![Vec::new(); usize::from(workers)];
    for k in 0..TOTAL {
        expect[expected_worker(app_id(k), u32::from(workers))].push(k);
    }
    let got = std::thread::scope(|s| {
        let readers: Vec<_> = sockets
            .iter()
            .zip(&expect)
            .map(|(sock, e)| s.spawn(move || worker_reads(sock, e.len())))
            .collect();
        for start in (0..TOTAL).step_by(BATCH as usize) {
            let batch: Vec<u8> = (start..(start + BATCH).min(TOTAL))
                .flat_map(message)
                .collect();
            // Cut every batch at an odd offset: a header straddles the two writes.
            let cut = 13 + (start as usize / BATCH as usize) % 29;
            client.write_all(&batch[..cut]).unwrap();
            client.write_all(&batch[cut..]).unwrap();
        }
        readers
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    for (w, (g, e)) in got.iter().zip(&expect).enumerate() {
        assert!(
            g == e,
            "worker {w}: messages missing, misrouted or out of order"
        );
    }
    let c = steering.counters().unwrap();
    assert_eq!(c.steered, u64::from(TOTAL), "{c:?}");
    assert_eq!(c.fallbacks(), 0, "{c:?}");
    let per_worker: Vec<u64> = expect.iter().map(|e| e.len() as u64).collect();
    assert_eq!(c.per_worker, per_worker);
    drop(conn);
}

#[test]
fn sockmap_100k_messages_reach_their_owner_on_loopback() {
    if !testkit::privilege::require("sockmap stream steering") {
        return;
    }
    steer_100k(&Place::loopback(), 2);
}

#[test]
fn sockmap_100k_messages_reach_their_owner_across_netns() {
    if !testkit::privilege::require("sockmap stream steering across netns") {
        return;
    }
    steer_100k(&Place::netns("sms"), 4);
}

/// Reads `want` bytes from a sockmap target, retrying the early EAGAIN of a psock's blocking
/// receive path (KERNEL.md §2.2) until `limit` has passed.
fn read_exactly(mut sock: &UnixStream, want: usize, limit: Duration) -> Vec<u8> {
    sock.set_read_timeout(Some(limit)).unwrap();
    let deadline = Instant::now() + limit;
    let mut got = vec![0u8; want];
    let mut have = 0;
    while have < want {
        assert!(Instant::now() < deadline, "{have} of {want} bytes arrived");
        match sock.read(&mut got[have..]) {
            Ok(0) => panic!("target closed after {have} of {want} bytes"),
            Ok(n) => have += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("target read after {have} of {want} bytes: {e}"),
        }
    }
    got
}

#[test]
fn sockmap_exception_and_bad_frame() {
    if !testkit::privilege::require("sockmap exceptions") {
        return;
    }
    let (mut steering, sockets) = StreamSteering::new(2).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (conn, _) = listener.accept().unwrap();
    steering.add_stream(&conn).unwrap();
    assert!(matches!(
        steering.set_exception(4, 2),
        Err(Error::NoSuchWorker {
            worker: 2,
            workers: 2
        })
    ));
    // App id 4 belongs to worker 0; the exception sends it to worker 1.
    steering.set_exception(4, 1).unwrap();
    let mut m = encode_header(12, 4).to_vec();
    m.extend_from_slice(&[9, 9, 9, 9]);
    client.write_all(&m).unwrap();
    let got = read_exactly(&sockets[1], m.len(), Duration::from_secs(10));
    assert_eq!(got.as_slice(), m.as_slice());
    assert!(steering.clear_exception(4).unwrap());
    assert!(!steering.clear_exception(4).unwrap());
    // A length below the header is a framing error: counted, never delivered.
    client.write_all(&encode_header(3, 0)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let c = steering.counters().unwrap();
        if c.bad_header > 0 {
            assert_eq!((c.steered, c.exception_hits), (1, 1), "{c:?}");
            assert_eq!(c.per_worker, [0, 1]);
            break;
        }
        assert!(Instant::now() < deadline, "bad frame never counted: {c:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn bad_worker_counts_are_rejected() {
    for n in [0u16, 257] {
        assert!(matches!(StreamSteering::new(n), Err(Error::Workers(m)) if m == n));
    }
}
