//! `tshark::check` against captures whose every byte we know: a synthesized pcap (no root
//! needed) with a good SCTP checksum, a bad one and a truncated NGAP PDU; and a live capture
//! of two libusrsctp peers exchanging NGAP (root).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use testkit::capture::Capture;
use testkit::netns::Namespace;
use testkit::tshark::{self, ChecksumStatus, Severity};
use testkit::usrsctp::{self, NG_SETUP_FAILURE};
use testkit::{privilege, process};

/// CRC32c (Castagnoli, reflected), bit by bit: slow and obviously right.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// IPv4 / UDP 9900→9899 / SCTP with one DATA chunk (PPID 60) carrying `ngap`.
fn sctp_over_udp(ngap: &[u8], tsn: u32, corrupt_crc: bool) -> Vec<u8> {
    // RFC 9260 §3.3.1 DATA chunk: type 0, flags B|E, length, TSN, stream 0, SSN, PPID.
    let mut chunk = vec![0u8, 0x03];
    chunk.extend_from_slice(&((16 + ngap.len()) as u16).to_be_bytes());
    chunk.extend_from_slice(&tsn.to_be_bytes());
    chunk.extend_from_slice(&[0, 0, 0, 0]);
    chunk.extend_from_slice(&60u32.to_be_bytes());
    chunk.extend_from_slice(ngap);
    while chunk.len() % 4 != 0 {
        chunk.push(0);
    }
    // RFC 9260 §3.1 common header: ports, verification tag, checksum.
    let mut sctp = Vec::new();
    sctp.extend_from_slice(&38412u16.to_be_bytes());
    sctp.extend_from_slice(&38412u16.to_be_bytes());
    sctp.extend_from_slice(&0x1122_3344u32.to_be_bytes());
    sctp.extend_from_slice(&[0; 4]);
    sctp.extend_from_slice(&chunk);
    // RFC 9260 Appendix A: the CRC32c goes on the wire least significant byte first.
    let mut crc = crc32c(&sctp);
    if corrupt_crc {
        crc ^= 1;
    }
    sctp[8..12].copy_from_slice(&crc.to_le_bytes());
    let mut udp = Vec::new();
    udp.extend_from_slice(&9900u16.to_be_bytes());
    udp.extend_from_slice(&9899u16.to_be_bytes());
    udp.extend_from_slice(&((8 + sctp.len()) as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]); // no UDP checksum (allowed over IPv4)
    udp.extend_from_slice(&sctp);
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 2,
    ];
    ip[2..4].copy_from_slice(&((20 + udp.len()) as u16).to_be_bytes());
    let c = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&udp);
    ip
}

/// A classic pcap file with link type LINKTYPE_IPV4 (228).
fn write_pcap(path: &Path, packets: &[Vec<u8>]) {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&228u32.to_le_bytes());
    for (i, p) in packets.iter().enumerate() {
        f.extend_from_slice(&(1_700_000_000u32 + i as u32).to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(p);
    }
    std::fs::write(path, f).unwrap();
}

/// A file in a directory of its own per test (tests run in parallel and clean up).
fn scratch(test: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("testkit-tshark-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn have_tshark() -> bool {
    process::run(Command::new("tshark").arg("-v")).is_ok()
}

#[test]
fn crc32c_matches_rfc_3720_vector() {
    // RFC 3720 §B.4: 32 bytes of zeros -> 0x8a9136aa.
    assert_eq!(crc32c(&[0; 32]), 0x8a91_36aa);
}

#[test]
fn synthesized_capture_is_judged_right() {
    if !have_tshark() {
        eprintln!("skipped: tshark not installed");
        return;
    }
    let path = scratch("synth", "synth.pcap");
    write_pcap(
        &path,
        &[
            sctp_over_udp(&NG_SETUP_FAILURE, 1, false),
            sctp_over_udp(&NG_SETUP_FAILURE, 2, true),
            sctp_over_udp(&NG_SETUP_FAILURE[..5], 3, false),
        ],
    );
    let r = tshark::check(&path, &[]).unwrap();
    println!("{}", r.summary());
    assert_eq!(r.total(), 3);
    assert_eq!(r.sctp_packets, 3, "UDP 9899 is decoded as SCTP by itself");
    assert_eq!(r.packets[0].sctp_checksum, vec![ChecksumStatus::Good]);
    assert_eq!(r.packets[1].sctp_checksum, vec![ChecksumStatus::Bad]);
    assert_eq!(r.bad_checksum, 1);
    assert_eq!(r.unverified_checksum, 0);
    assert_eq!(r.packets[0].ngap, vec!["NGSetupFailure".to_owned()]);
    assert_eq!(r.packets[0].sctp_chunks, vec![0]);
    assert!(!r.packets[0].malformed);
    assert!(r.packets[2].malformed, "a truncated PDU is malformed");
    assert_eq!(r.malformed, 1);
    assert!(
        r.expert_count(Severity::Error) >= 2,
        "bad checksum and malformed are errors: {:?}",
        r.errors
    );

    // On another port tshark needs to be told, and then decodes the same.
    let mut moved = sctp_over_udp(&NG_SETUP_FAILURE, 1, false);
    moved[22..24].copy_from_slice(&40000u16.to_be_bytes()); // UDP destination port
    let path2 = scratch("synth", "moved.pcap");
    write_pcap(&path2, &[moved]);
    assert_eq!(tshark::check(&path2, &[]).unwrap().sctp_packets, 0);
    let r = tshark::check(&path2, &[tshark::decode_udp_as_sctp(40000)]).unwrap();
    assert_eq!(r.sctp_packets, 1);
    assert_eq!(r.ngap_count("NGSetupFailure"), 1);
    assert_eq!(r.bad_checksum, 0);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn missing_file_is_an_error() {
    if !have_tshark() {
        return;
    }
    assert!(tshark::check(Path::new("/nonexistent/x.pcap"), &[]).is_err());
}

#[test]
fn live_capture_of_two_usrsctp_peers() {
    if !privilege::require("capture of usrsctp peers") {
        return;
    }
    let peer = usrsctp::build_peer().unwrap();
    let ns = Namespace::new("tklive").unwrap();
    let path = scratch("live", "live.pcapng");
    let cap = Capture::start(Some(ns.name()), "lo", "udp port 9899", &path).unwrap();
    let (client, server) = usrsctp::exchange(
        ns.exec(&peer),
        ns.exec(&peer),
        usrsctp::UDP_PAIR,
        std::net::Ipv4Addr::LOCALHOST,
        &NG_SETUP_FAILURE,
        &NG_SETUP_FAILURE,
        Duration::from_secs(15),
    )
    .unwrap();
    assert_eq!(client.code(), Some(0), "{}", client.stderr);
    assert_eq!(
        server.wait_timeout(Duration::from_secs(10)).unwrap().code(),
        Some(0)
    );
    let path = cap.stop().unwrap();
    let r = tshark::check(&path, &[]).unwrap();
    println!("{}", r.summary());
    // INIT, INIT_ACK, COOKIE_ECHO, COOKIE_ACK, 2 DATA, SACKs, SHUTDOWN x3.
    assert!(r.sctp_packets >= 9, "{}", r.summary());
    assert_eq!(r.sctp_packets, r.total());
    assert_eq!(r.bad_checksum, 0);
    assert_eq!(r.unverified_checksum, 0);
    assert_eq!(r.ngap_count("NGSetupFailure"), 2);
    assert_eq!(r.malformed, 0);
    assert_eq!(r.expert_count(Severity::Error), 0, "{:?}", r.errors);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
