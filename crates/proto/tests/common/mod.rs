//! What the NGAP vector tests share: hex fixtures, the PLMN of the lab captures, the
//! encode-then-parse check of hand-derived octets, the damaged inputs made from a real PDU,
//! and Wireshark as an independent oracle.
// Each test binary uses its own subset of these.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::fmt::Debug;
use std::fmt::Write as _;
use std::process::Command;

use proto::ids::Plmn;
use proto::ngap::{self, MessageKind, NgapPdu, ParseError, SCTP_PORT, SCTP_PPID};

/// Octets from hex; white space (used to group the fields of a derivation) is ignored.
pub fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    hex::decode(s).unwrap()
}

/// The PLMN of the Open5GS, free5GC and PacketRusher captures.
pub fn plmn_208_93() -> Plmn {
    Plmn::new("208", "93").unwrap()
}

/// A captured PDU given in hex: its octets and its decode, which must be a `kind`.
pub fn captured(pdu_hex: &str, kind: MessageKind) -> (Vec<u8>, NgapPdu) {
    let bytes = hex(pdu_hex);
    let pdu = ngap::decode(&bytes).unwrap();
    assert_eq!(pdu.kind(), kind);
    (bytes, pdu)
}

/// `encoded` (the encoding of `msg`) equals the hand-derived `want`, and `parse` reads it
/// back as `msg`.
pub fn assert_octets<T: PartialEq + Debug, E: Debug>(
    msg: &T,
    encoded: Vec<u8>,
    want: &str,
    parse: impl Fn(&NgapPdu) -> Result<T, E>,
) {
    assert_eq!(encoded, hex(want));
    assert_eq!(&parse(&ngap::decode(&encoded).unwrap()).unwrap(), msg);
}

/// Calls `f` with every proper prefix of `bytes` (truncation at each octet) and with
/// `bytes` with each single bit flipped: the damage a decoder meets on a real link.
pub fn for_each_prefix_and_bit_flip(bytes: &[u8], mut f: impl FnMut(&[u8])) {
    for n in 0..bytes.len() {
        f(&bytes[..n]);
    }
    for i in 0..bytes.len() * 8 {
        let mut b = bytes.to_vec();
        b[i / 8] ^= 0x80 >> (i % 8);
        f(&b);
    }
}

/// `parsed` is the error of a parser given another message.
pub fn assert_wrong_message<T: Debug>(parsed: Result<T, ParseError>) {
    assert!(
        matches!(parsed, Err(ParseError::WrongMessage { .. })),
        "{parsed:?}"
    );
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// Has Wireshark dissect `pdus`, each wrapped in an SCTP DATA chunk of PPID 60 on port
/// 38412 as on N2, and checks that each dissects as the message named with no malformed
/// packet and no expert info. Returns tshark's verbose dissection for further checks, or
/// `None`, with a note, where `tshark`/`text2pcap` are not installed.
pub fn wireshark_dissects(pdus: &[(&str, Vec<u8>)], tag: &str) -> Option<String> {
    if !have("tshark") || !have("text2pcap") {
        testkit::privilege::skip_missing_tool("tshark/text2pcap");
        return None;
    }
    let mut dump = String::new();
    for (_, bytes) in pdus {
        // text2pcap's hex dump: an offset, then the octets.
        dump.push_str("000000");
        for b in bytes {
            write!(dump, " {b:02x}").unwrap();
        }
        dump.push_str("\n\n");
    }
    let dir = std::env::temp_dir().join(format!("steer5g-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let txt = dir.join("ngap.txt");
    let pcap = dir.join("ngap.pcap");
    std::fs::write(&txt, dump).unwrap();
    let sctp = format!("{SCTP_PORT},{SCTP_PORT},{SCTP_PPID}");
    let status = Command::new("text2pcap")
        .args(["-q", "-S", &sctp])
        .arg(&txt)
        .arg(&pcap)
        .status()
        .unwrap();
    assert!(status.success());
    let summary = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&pcap)
        .args(["-T", "fields", "-e", "_ws.col.Info"])
        .output()
        .unwrap();
    let verbose = Command::new("tshark")
        .args(["-n", "-V", "-r"])
        .arg(&pcap)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let summary = String::from_utf8_lossy(&summary.stdout);
    let verbose = String::from_utf8_lossy(&verbose.stdout).into_owned();
    let infos: Vec<&str> = summary.lines().collect();
    assert_eq!(infos.len(), pdus.len(), "{summary}");
    for (info, (name, _)) in infos.iter().zip(pdus) {
        assert!(info.contains(name), "expected {name}, tshark says {info:?}");
    }
    for bad in ["Malformed", "Expert Info"] {
        assert!(!verbose.contains(bad), "tshark reports {bad}:\n{verbose}");
    }
    Some(verbose)
}
