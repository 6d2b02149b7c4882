//! Wireshark as an independent decoder: every packet of a lossy, reordered session (handshake,
//! fragmented DATA, SACKs with gap blocks and duplicates, HEARTBEATs, ERROR, SHUTDOWN) is
//! written to a pcap and must dissect without a malformed chunk and with a good CRC32c.
//! Skipped when `tshark` is not installed.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use common::*;

fn ipv4(sa: SocketAddr) -> [u8; 4] {
    match sa {
        SocketAddr::V4(a) => a.ip().octets(),
        SocketAddr::V6(_) => [0; 4],
    }
}

/// A pcap file with LINKTYPE_RAW (101): each record is an IPv4 packet carrying SCTP.
fn pcap(packets: &[(SocketAddr, SocketAddr, Vec<u8>)]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&0i32.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&101u32.to_le_bytes());
    for (i, (src, dst, sctp)) in packets.iter().enumerate() {
        let total = 20 + sctp.len();
        let mut ip = vec![
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            0,
            0x40,
            0,
            64,
            132,
            0,
            0,
        ];
        ip.extend_from_slice(&ipv4(*src));
        ip.extend_from_slice(&ipv4(*dst));
        let mut sum = 0u32;
        for w in ip.chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let ck = !(sum as u16);
        ip[10..12].copy_from_slice(&ck.to_be_bytes());
        ip.extend_from_slice(sctp);
        f.extend_from_slice(&(i as u32).to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&(ip.len() as u32).to_le_bytes());
        f.extend_from_slice(&(ip.len() as u32).to_le_bytes());
        f.extend_from_slice(&ip);
    }
    f
}

#[test]
fn wireshark_decodes_every_packet() {
    if Command::new("tshark").arg("-v").output().is_err() {
        testkit::privilege::skip_missing_tool("tshark");
        return;
    }
    let mut net = Net::new(60);
    net.record = true;
    let mut cc = client_config(61);
    let mut sc = server_config(62);
    cc.association.heartbeat_interval = Duration::from_secs(1);
    sc.association.heartbeat_interval = Duration::from_secs(1);
    net.add(cc, addr(1, 0));
    net.add(sc, addr(2, 0));
    let c = net.connect(0, 1, 40000);
    assert!(net.run_until(Duration::from_secs(10), |n| {
        !n.connected(0).is_empty() && !n.connected(1).is_empty()
    }));
    let s = net.connected(1)[0];
    net.impair = Impair {
        loss: 0.1,
        dup: 0.05,
        delay: Duration::from_millis(5),
        jitter: Duration::from_millis(10),
    };
    // PPID 0x1234, not 60: the payloads are not NGAP.
    let mut plan_c: VecDeque<Planned> = plan(61, 200, 16, 4000).into();
    let mut plan_s: VecDeque<Planned> = plan(62, 200, 16, 4000).into();
    let ok = net.run_until(Duration::from_secs(600), |n| {
        while let Some(p) = plan_c.pop_front() {
            n.nodes[0]
                .ep
                .send(c, p.stream, 0x1234, p.unordered, payload(p.idx, p.len))
                .unwrap();
        }
        while let Some(p) = plan_s.pop_front() {
            n.nodes[1]
                .ep
                .send(s, p.stream, 0x1234, p.unordered, payload(p.idx, p.len))
                .unwrap();
        }
        n.messages(0).len() == 200 && n.messages(1).len() == 200
    });
    assert!(ok);
    net.impair = Impair::default();
    net.run_for(Duration::from_secs(3));
    net.nodes[0].ep.shutdown(net.now, c).unwrap();
    assert!(net.run_until(Duration::from_secs(60), |n| !n.closed(1).is_empty()));
    let packets: Vec<_> = net
        .log
        .iter()
        .map(|(f, t, p)| (net.nodes[*f].addr, net.nodes[*t].addr, p.clone()))
        .collect();
    let path = std::env::temp_dir().join(format!("sctp-tshark-{}.pcap", std::process::id()));
    std::fs::write(&path, pcap(&packets)).unwrap();
    let out = Command::new("tshark")
        // Port 38412 makes Wireshark try NGAP on the random test payloads.
        .args(["-n", "--disable-protocol", "ngap", "-r"])
        .arg(&path)
        .args([
            "-o",
            "sctp.checksum:CRC-32C",
            "-T",
            "fields",
            "-E",
            "separator=;",
            "-e",
            "frame.number",
            "-e",
            "sctp.checksum.status",
            "-e",
            "sctp.chunk_type",
            "-e",
            "_ws.malformed",
            "-e",
            "_ws.expert.severity",
        ])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), packets.len());
    let mut types = std::collections::BTreeSet::new();
    for l in &lines {
        let f: Vec<&str> = l.split(';').collect();
        assert_eq!(f[1], "1", "bad or unverified CRC32c: {l}");
        assert!(f[3].is_empty(), "malformed: {l}");
        for t in f[2].split(',') {
            types.insert(t.parse::<u8>().unwrap());
        }
    }
    // DATA, INIT, INIT ACK, SACK, HEARTBEAT, HEARTBEAT ACK, SHUTDOWN, SHUTDOWN ACK,
    // COOKIE ECHO, COOKIE ACK, SHUTDOWN COMPLETE all went through the dissector.
    for t in [0u8, 1, 2, 3, 4, 5, 7, 8, 10, 11, 14] {
        assert!(types.contains(&t), "chunk type {t} not seen: {types:?}");
    }
}
