//! Oracle: Wireshark's PFCP and GTP-U dissectors must read every vector (and every message this
//! codec re-encodes) without a malformed packet or an expert error. Without tshark the test
//! skips, unless `CI` is set, where it fails.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use pfcp::PfcpMessage;

/// LINKTYPE_RAW: each record is an IPv4 packet.
const LINKTYPE_RAW: u32 = 101;

/// Wraps `payload` in IPv4/UDP from 10.0.0.4 to 10.0.0.7, both ports `port`.
fn ipv4_udp(port: u16, payload: &[u8]) -> Vec<u8> {
    let total = u16::try_from(20 + 8 + payload.len()).unwrap();
    let mut p = Vec::new();
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 4, 10, 0, 0, 7]);
    let c = common::ipv4_checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(&port.to_be_bytes());
    p.extend_from_slice(&port.to_be_bytes());
    p.extend_from_slice(&(total - 20).to_be_bytes());
    p.extend_from_slice(&[0, 0]); // RFC 768: zero checksum means none (IPv4)
    p.extend_from_slice(payload);
    p
}

/// A classic pcap file (magic 0xa1b2c3d4, version 2.4) of `packets`.
fn pcap(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    for v in [0u32, 0, 65535, LINKTYPE_RAW] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    for (i, p) in packets.iter().enumerate() {
        let len = u32::try_from(p.len()).unwrap();
        for v in [u32::try_from(i).unwrap(), 0, len, len] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(p);
    }
    f
}

fn tshark_present() -> bool {
    Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs tshark on the packets; returns the verbose dissection.
fn dissect(name: &str, packets: &[Vec<u8>]) -> String {
    let path: PathBuf =
        std::env::temp_dir().join(format!("pfcp-oracle-{}-{name}.pcap", std::process::id()));
    std::fs::write(&path, pcap(packets)).unwrap();
    let out = Command::new("tshark")
        .args(["-n", "-V", "-r"])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Fails on malformed packets and on expert errors or warnings.
fn assert_clean(text: &str) {
    for line in text.lines() {
        let bad = line.contains("Malformed")
            || line.contains("Expert Info (Error")
            || line.contains("Expert Info (Warning");
        assert!(!bad, "tshark complains: {line}\n---\n{text}");
    }
}

fn skip_without_tshark() -> bool {
    if tshark_present() {
        return false;
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v.is_empty()),
        "tshark missing and CI is set"
    );
    eprintln!("tshark not installed: skipping the Wireshark oracle");
    true
}

#[test]
fn tshark_decodes_pfcp_vectors_and_reencodings() {
    if skip_without_tshark() {
        return;
    }
    let vectors = common::pfcp_vectors();
    let mut packets = Vec::new();
    for (_, v) in &vectors {
        packets.push(ipv4_udp(8805, v));
        packets.push(ipv4_udp(8805, &PfcpMessage::parse(v).unwrap().emit()));
    }
    let text = dissect("pfcp", &packets);
    assert_clean(&text);
    let frames = text.matches("Packet Forwarding Control Protocol").count();
    assert_eq!(
        frames,
        packets.len(),
        "every frame dissected as PFCP\n{text}"
    );
    // Spot checks that tshark read the same values we did.
    assert!(text.contains("Session Establishment Request"), "{text}");
    assert!(text.contains("TEID: 0x00000101, IPv4 10.0.0.7"), "{text}");
    assert!(
        text.contains("Recovery Time Stamp: Jun 21, 2023 06:41:04"),
        "{text}"
    );
    assert!(text.contains("Choose Id: 01"), "{text}");
    assert!(
        text.contains("permit out ip from any to assigned"),
        "{text}"
    );
    assert!(text.contains("Duration: 120"), "{text}");
}

#[test]
fn tshark_decodes_gtpu_vectors() {
    if skip_without_tshark() {
        return;
    }
    let packets: Vec<_> = common::gtpu_vectors()
        .iter()
        .map(|(_, v)| ipv4_udp(2152, v))
        .collect();
    let text = dissect("gtpu", &packets);
    assert_clean(&text);
    let frames = text.matches("GPRS Tunneling Protocol").count();
    assert!(
        frames >= packets.len(),
        "every frame dissected as GTP-U\n{text}"
    );
    assert!(text.contains("QoS Flow Identifier (QFI): 9"), "{text}");
}

#[test]
fn tshark_oracle_can_fail() {
    if skip_without_tshark() {
        return;
    }
    // The same Heartbeat Request with its Recovery Time Stamp cut to 3 octets must make tshark
    // complain; otherwise the clean results above would prove nothing.
    let broken = common::h(&["20 01 000b 000001 00", "0060 0003 e83d1a"]);
    let text = dissect("broken", &[ipv4_udp(8805, &broken)]);
    let caught = std::panic::catch_unwind(|| assert_clean(&text));
    assert!(caught.is_err(), "tshark did not flag a broken IE:\n{text}");
}
