//! Rough in-memory throughput check: `cargo test --release -p sctp --test perf -- --ignored
//! --nocapture`. Not a benchmark gate; it shows the per-message cost of the stack alone.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Instant;

use bytes::Bytes;
use common::*;
use sctp::{Endpoint, Event};

fn echo(window: usize, total: usize, size: usize) {
    let mut now = Instant::now();
    let (ca, sa) = (addr(1, 0), addr(2, 0));
    let mut client = Endpoint::new(client_config(1));
    let mut server = Endpoint::new(server_config(2));
    let id = client.connect(now, sa, 40000, SERVER_PORT).unwrap();
    let payload = Bytes::from(vec![7u8; size]);
    let mut sent = 0usize;
    let mut received = 0usize;
    let mut established = false;
    let wall = Instant::now();
    let mut packets = 0u64;
    while received < total {
        let mut progress = false;
        while let Some(t) = client.poll_transmit(now) {
            server.handle(now, ca, &t.packet);
            packets += 1;
            progress = true;
        }
        while let Some((sid, e)) = server.poll_event() {
            if let Event::Message(m) = e {
                server.send(sid, m.stream, m.ppid, false, m.data).unwrap();
            }
        }
        while let Some(t) = server.poll_transmit(now) {
            client.handle(now, sa, &t.packet);
            packets += 1;
            progress = true;
        }
        while let Some((_, e)) = client.poll_event() {
            match e {
                Event::Connected { .. } => established = true,
                Event::Message(_) => received += 1,
                _ => {}
            }
        }
        if established {
            while sent < total && sent - received < window {
                client
                    .send(id, (sent % 4) as u16, 60, false, payload.clone())
                    .unwrap();
                sent += 1;
                progress = true;
            }
        }
        if !progress {
            // Only timers (delayed SACK) can move things along: jump to the next one.
            let next = [client.poll_timeout(), server.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .unwrap();
            now = now.max(next);
            client.handle_timeout(now);
            server.handle_timeout(now);
        }
    }
    let el = wall.elapsed();
    println!(
        "window {window:4} size {size:5}: {total} echoes in {el:?} = {:.0} msg/s each way, {} packets ({:.0} ns/packet)",
        total as f64 / el.as_secs_f64(),
        packets,
        el.as_nanos() as f64 / packets as f64
    );
}

#[test]
#[ignore]
fn echo_throughput() {
    echo(1, 50_000, 100);
    echo(16, 200_000, 100);
    echo(64, 200_000, 100);
    echo(64, 50_000, 3000);
}
