//! Byte vectors built by hand from the TS 29.244 §7/§8 and TS 29.281 §5 tables, shared by the
//! vector, robustness and tshark tests. Each line is one IE (or header), derivation beside it.
#![allow(dead_code)]

/// Hex text (spaces ignored) to bytes.
pub(crate) fn h(parts: &[&str]) -> Vec<u8> {
    let s: String = parts
        .concat()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Heartbeat Request (§7.4.2.1): flags 0x20 (v1, S=0), type 1, length 12 = 4 (seq+spare) + 8;
/// seq 1; Recovery Time Stamp (96 = 0x60, len 4) = 0xe83d1a00.
pub(crate) fn heartbeat_request() -> Vec<u8> {
    h(&["20 01 000c 000001 00", "0060 0004 e83d1a00"])
}

/// Heartbeat Response (§7.4.2.2): type 2, same shape.
pub(crate) fn heartbeat_response() -> Vec<u8> {
    h(&["20 02 000c 000001 00", "0060 0004 e83d1a00"])
}

/// Association Setup Request (§7.4.4.1): length 4 + 9 + 8 = 21 (0x15), seq 2.
pub(crate) fn association_setup_request() -> Vec<u8> {
    h(&[
        "20 05 0015 000002 00",
        "003c 0005 00 0a000004", // Node ID (60): type 0 IPv4, 10.0.0.4
        "0060 0004 e83d1a00",    // Recovery Time Stamp
    ])
}

/// Association Setup Response (§7.4.4.2): length 4 + 9 + 5 + 8 + 6 = 32 (0x20).
pub(crate) fn association_setup_response() -> Vec<u8> {
    h(&[
        "20 06 0020 000002 00",
        "003c 0005 00 0a000007", // Node ID 10.0.0.7
        "0013 0001 01",          // Cause (19): 1 Request accepted
        "0060 0004 e83d1b00",    // Recovery Time Stamp
        "002b 0002 1000",        // UP Function Features (43): octet 5 bit 5 FTUP
    ])
}

/// Association Release Request (§7.4.4.5): length 4 + 9 = 13.
pub(crate) fn association_release_request() -> Vec<u8> {
    h(&["20 09 000d 000003 00", "003c 0005 00 0a000004"])
}

/// Association Release Response (§7.4.4.6): length 4 + 9 + 5 = 18.
pub(crate) fn association_release_response() -> Vec<u8> {
    h(&[
        "20 0a 0012 000003 00",
        "003c 0005 00 0a000007",
        "0013 0001 01",
    ])
}

/// Session Establishment Request (§7.5.2): S=1 (0x21), SEID 0 (none yet, §7.2.2.4.2), seq 4.
/// IEs: 9 + 17 + 75 + 107 + 39 + 17 + 44 + 31 = 339; length 12 + 339 = 351 (0x015f).
pub(crate) fn session_establishment_request() -> Vec<u8> {
    h(&[
        "21 32 015f 0000000000000000 000004 00",
        "003c 0005 00 0a000004",                  // Node ID 10.0.0.4 (9)
        "0039 000d 02 0000000000000001 0a000004", // CP F-SEID: V4, SEID 1, 10.0.0.4 (17)
        // Create PDR (1), value 6 + 8 + 28 + 5 + 8 + 8 + 8 = 71 (0x47): uplink
        "0001 0047",
        "0038 0002 0001",                // PDR ID 1
        "001d 0004 000000ff",            // Precedence 255
        "0002 0018",                     // PDI (2), value 5 + 6 + 13 = 24
        "0014 0001 00",                  // Source Interface: Access
        "0015 0002 0d 01",               // F-TEID: CH|CHID|V4, Choose ID 1
        "0016 0009 08 696e7465726e6574", // Network Instance "internet" (DNS label)
        "005f 0001 00",                  // Outer Header Removal: GTP-U/UDP/IPv4
        "006c 0004 00000001",            // FAR ID 1
        "0051 0004 00000001",            // URR ID 1
        "006d 0004 00000001",            // QER ID 1
        // Create PDR, value 6 + 8 + 73 + 8 + 8 = 103 (0x67): downlink
        "0001 0067",
        "0038 0002 0002",
        "001d 0004 000000ff",
        "0002 0045",                     // PDI, value 5 + 13 + 9 + 42 = 69
        "0014 0001 01",                  // Source Interface: Core
        "0016 0009 08 696e7465726e6574", // Network Instance
        "005d 0005 06 0a2d0002",         // UE IP Address: V4|S/D (destination), 10.45.0.2
        // SDF Filter (23), value 2 + 2 + 34: FD, "permit out ip from any to assigned"
        "0017 0026 01 00 0022 7065726d6974206f75742069702066726f6d20616e7920746f2061737369676e6564",
        "006c 0004 00000002", // FAR ID 2
        "006d 0004 00000001", // QER ID 1
        // Create FAR (3), value 8 + 5 + 22 = 35 (0x23): uplink, forward to Core
        "0003 0023",
        "006c 0004 00000001",
        "002c 0001 02", // Apply Action: FORW
        "0004 0012",    // Forwarding Parameters, value 5 + 13 = 18
        "002a 0001 01", // Destination Interface: Core
        "0016 0009 08 696e7465726e6574",
        // Create FAR, value 8 + 5 = 13: downlink, buffer and notify until the gNB TEID is known
        "0003 000d",
        "006c 0004 00000002",
        "002c 0001 0c", // Apply Action: BUFF|NOCP
        // Create URR (6), value 8 + 5 + 6 + 13 + 8 = 40 (0x28)
        "0006 0028",
        "0051 0004 00000001",
        "003e 0001 03",                  // Measurement Method: DURAT|VOLUM
        "0025 0002 0600",                // Reporting Triggers: VOLTH|TIMTH
        "001f 0009 01 000000003b9aca00", // Volume Threshold: TOVOL 10^9
        "0020 0004 00000e10",            // Time Threshold 3600 s
        // Create QER (7), value 8 + 5 + 14 = 27 (0x1b)
        "0007 001b",
        "006d 0004 00000001",
        "0019 0001 00",                    // Gate Status: UL open, DL open
        "001a 000a 00000f4240 00001e8480", // MBR: UL 1 000 000 kbps, DL 2 000 000 kbps
    ])
}

/// Session Establishment Response (§7.5.3): SEID 1 (the CP's), seq 4;
/// IEs 9 + 5 + 17 + 23 = 54, length 66 (0x42).
pub(crate) fn session_establishment_response() -> Vec<u8> {
    h(&[
        "21 33 0042 0000000000000001 000004 00",
        "003c 0005 00 0a000007",
        "0013 0001 01",
        "0039 000d 02 0001000000000001 0a000007", // UP F-SEID
        "0008 0013",                              // Created PDR (8), value 6 + 13
        "0038 0002 0001",
        "0015 0009 01 00000101 0a000007", // F-TEID: V4, TEID 0x101, 10.0.0.7
    ])
}

/// Session Modification Request (§7.5.4): SEID 0x0001000000000001, seq 5, priority 3 (MP);
/// IEs 10 + 40 + 17 = 67, length 79 (0x4f).
pub(crate) fn session_modification_request() -> Vec<u8> {
    h(&[
        "23 34 004f 0001000000000001 000005 30",
        "000f 0006 0038 0002 0003", // Remove PDR (15): PDR ID 3
        "000a 0024",                // Update FAR (10), value 8 + 5 + 23 = 36
        "006c 0004 00000002",
        "002c 0001 02",                     // Apply Action: FORW
        "000b 0013",                        // Update Forwarding Parameters (11), value 5 + 14 = 19
        "002a 0001 00",                     // Destination Interface: Access
        "0054 000a 0100 00000001 0a000009", // Outer Header Creation: GTP-U/UDP/IPv4 TEID 1 10.0.0.9
        "000e 000d",                        // Update QER (14), value 8 + 5
        "006d 0004 00000001",
        "0019 0001 04", // Gate Status: UL closed, DL open
    ])
}

/// Session Modification Response (§7.5.5): length 12 + 5.
pub(crate) fn session_modification_response() -> Vec<u8> {
    h(&["21 35 0011 0000000000000001 000005 00", "0013 0001 01"])
}

/// Session Deletion Request (§7.5.6): no IEs, length 12.
pub(crate) fn session_deletion_request() -> Vec<u8> {
    h(&["21 36 000c 0001000000000001 000006 00"])
}

/// Usage Report body shared by the deletion response and report request: value
/// 8 + 8 + 7 + 29 + 8 = 60 (0x3c).
fn usage_report(ie_type: &str, seqn: &str, trigger: &str) -> String {
    [
        ie_type,
        " 003c",
        " 0051 0004 00000001", // URR ID 1
        " 0068 0004 ",         // UR-SEQN (104)
        seqn,
        " 003f 0003 ", // Usage Report Trigger (63), 3 octets
        trigger,
        // Volume Measurement (66): TOVOL|ULVOL|DLVOL, 3000 total, 1000 up, 2000 down
        " 0042 0019 07 0000000000000bb8 00000000000003e8 00000000000007d0",
        " 0043 0004 00000078", // Duration Measurement (67): 120 s
    ]
    .concat()
}

/// Session Deletion Response (§7.5.7): Cause + Usage Report (79 = 0x4f) with trigger TERMR
/// (octet 6 bit 4); IEs 5 + 64, length 81 (0x51).
pub(crate) fn session_deletion_response() -> Vec<u8> {
    let ur = usage_report("004f", "00000000", "000800");
    h(&["21 37 0051 0000000000000001 000006 00", "0013 0001 01", &ur])
}

/// Session Report Request (§7.5.8): Report Type USAR + Usage Report (80 = 0x50), trigger
/// VOLTH; IEs 5 + 64, length 81.
pub(crate) fn session_report_request() -> Vec<u8> {
    let ur = usage_report("0050", "00000001", "020000");
    h(&["21 38 0051 0000000000000001 000007 00", "0027 0001 02", &ur])
}

/// Session Report Response (§7.5.9): length 12 + 5.
pub(crate) fn session_report_response() -> Vec<u8> {
    h(&["21 39 0011 0001000000000001 000007 00", "0013 0001 01"])
}

/// Every PFCP vector with a name.
pub(crate) fn pfcp_vectors() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("heartbeat_request", heartbeat_request()),
        ("heartbeat_response", heartbeat_response()),
        ("association_setup_request", association_setup_request()),
        ("association_setup_response", association_setup_response()),
        ("association_release_request", association_release_request()),
        (
            "association_release_response",
            association_release_response(),
        ),
        (
            "session_establishment_request",
            session_establishment_request(),
        ),
        (
            "session_establishment_response",
            session_establishment_response(),
        ),
        (
            "session_modification_request",
            session_modification_request(),
        ),
        (
            "session_modification_response",
            session_modification_response(),
        ),
        ("session_deletion_request", session_deletion_request()),
        ("session_deletion_response", session_deletion_response()),
        ("session_report_request", session_report_request()),
        ("session_report_response", session_report_response()),
    ]
}

/// An inner IPv4/UDP packet (UE 10.45.0.2:49152 → 8.8.8.8:49153, 4 payload octets), checksum filled.
pub(crate) fn inner_ipv4() -> Vec<u8> {
    let mut p = h(&[
        "45 00 0020 0001 0000 40 11 0000 0a2d0002 08080808", // IPv4, total 32, UDP
        "c000 c001 000c 0000", // UDP 49152 → 49153 (no dissector), length 12, no checksum
        "deadbeef",
    ]);
    let c = ipv4_checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

/// RFC 791 §3.1 header checksum.
pub(crate) fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = hdr
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// GTP-U vectors (TS 29.281 §5.1, TS 38.415 §5.5.2).
pub(crate) fn gtpu_vectors() -> Vec<(&'static str, Vec<u8>)> {
    let inner = inner_ipv4();
    // G-PDU, no options: 0x30, 255, length 32, TEID 0x101.
    let mut plain = h(&["30 ff 0020 00000101"]);
    plain.extend_from_slice(&inner);
    // G-PDU, E=1: length 4 + 4 + 32 = 40; UL PDU Session Container (PDU type 1), QFI 9.
    let mut ul = h(&["34 ff 0028 00000101 0000 00 85", "01 10 09 00"]);
    ul.extend_from_slice(&inner);
    // DL container, S=1 seq 7, TEID 1.
    let mut dl = h(&["36 ff 0028 00000001 0007 00 85", "01 00 09 00"]);
    dl.extend_from_slice(&inner);
    vec![
        ("gpdu", plain),
        ("gpdu_ul_qfi", ul),
        ("gpdu_dl_qfi_seq", dl),
        // Echo Request (§7.2.1): S=1, TEID 0, seq 0x1234; Recovery IE (14) value 0 would follow
        // in Rel-99 but is optional since Rel-8; none here.
        ("echo_request", h(&["32 01 0004 00000000 1234 00 00"])),
        (
            "echo_response",
            h(&["32 02 0006 00000000 1234 00 00 0e 00"]),
        ),
        // End Marker (§7.3.2): TEID of the tunnel, no payload.
        ("end_marker", h(&["30 fe 0000 00000101"])),
        // Error Indication (§7.3.1): S=1, TEID 0; TEID Data I (16) 0x101, GTP-U Peer Address
        // (133 = 0x85, length 4) 10.0.0.7.
        (
            "error_indication",
            h(&[
                "32 1a 0010 00000000 0000 00 00",
                "10 00000101",
                "85 0004 0a000007",
            ]),
        ),
    ]
}
