//! Oracle: Wireshark's NGAP, NAS-5GS and GTP-U dissectors read what the emulator and
//! the NGAP builders put on the wire: PDU session resource messages with their
//! transfers and plain 5GSM payloads, and uplink/downlink G-PDUs whose outer and inner
//! checksums tshark verifies.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{establishment_accept, setup_transfer};
use proto::ids::defaults;
use proto::nas::sm_ue::{
    self, DlNasTransport, PduSessionReleaseCommand, SmMessage, UlNasTransport,
};
use proto::ngap::{
    Cause, GtpTunnel, NasCause, PduSessionResourceReleaseCommand,
    PduSessionResourceReleaseCommandTransfer, PduSessionResourceReleaseResponse,
    PduSessionResourceReleaseResponseTransfer, PduSessionResourceSetupRequest,
    PduSessionResourceSetupResponse, PduSessionResourceSetupResponseTransfer, PduSessionSetupItem,
    PduSessionTransferItem, UplinkNasTransport,
};
use ran::userplane::{
    checksum, reflect_gpdu, FlowConfig, ProbeKind, UpSession, UserPlane, GTPU_PORT,
};

/// A classic pcap file of `linktype` holding `packets`.
fn write_pcap(name: &str, linktype: u32, packets: &[Vec<u8>]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("ran-{name}-{}.pcap", std::process::id()));
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    for v in [0u32, 0, 65535, linktype] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (i, p) in packets.iter().enumerate() {
        let len = u32::try_from(p.len()).unwrap();
        for v in [u32::try_from(i).unwrap(), 0, len, len] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(p);
    }
    std::fs::write(&path, out).unwrap();
    path
}

/// tshark's field output, one row per packet, occurrences joined by `,`.
fn tshark(path: &Path, opts: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(path).arg("-n");
    for o in opts {
        cmd.args(["-o", o]);
    }
    cmd.args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd
        .output()
        .expect("tshark is installed (scripts/install-deps.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

/// PI_ERROR and PI_WARN of epan/proto.h.
const SEVERE: [&str; 2] = ["8388608", "6291456"];

fn dl_sm(sm: &SmMessage) -> Vec<u8> {
    DlNasTransport {
        payload_container_type: sm_ue::PAYLOAD_N1_SM,
        payload: sm.encode().unwrap(),
        pdu_session_id: Some(sm.pdu_session_id()),
        fgmm_cause: None,
    }
    .encode()
    .unwrap()
}

#[test]
fn ngap_pdu_session_messages_are_clean_for_tshark() {
    let accept = dl_sm(&establishment_accept(1, 1));
    let transfer = setup_transfer();
    let item = |transfer: Vec<u8>| PduSessionTransferItem {
        pdu_session_id: 1,
        transfer,
    };
    let request = UlNasTransport {
        payload_container_type: sm_ue::PAYLOAD_N1_SM,
        payload: SmMessage::EstablishmentRequest(sm_ue::PduSessionEstablishmentRequest {
            pdu_session_id: 1,
            pti: 1,
            pdu_session_type: Some(sm_ue::PDU_SESSION_TYPE_IPV4),
            ssc_mode: Some(sm_ue::SSC_MODE_1),
        })
        .encode()
        .unwrap(),
        pdu_session_id: Some(1),
        request_type: Some(sm_ue::REQUEST_INITIAL),
        snssai: Some(defaults::SNSSAI),
        dnn: Some("internet".into()),
    }
    .encode()
    .unwrap();
    let pdus = vec![
        UplinkNasTransport {
            amf_ue_ngap_id: 5,
            ran_ue_ngap_id: 6,
            nas_pdu: request,
            user_location: None,
        }
        .encode()
        .unwrap(),
        PduSessionResourceSetupRequest {
            amf_ue_ngap_id: 5,
            ran_ue_ngap_id: 6,
            nas_pdu: None,
            sessions: vec![PduSessionSetupItem {
                pdu_session_id: 1,
                nas_pdu: Some(accept),
                snssai: defaults::SNSSAI,
                transfer,
            }],
            ue_ambr: None,
        }
        .encode()
        .unwrap(),
        PduSessionResourceSetupResponse {
            amf_ue_ngap_id: 5,
            ran_ue_ngap_id: 6,
            setup: vec![item(
                PduSessionResourceSetupResponseTransfer {
                    dl_tunnel: GtpTunnel {
                        addr: Ipv4Addr::LOCALHOST,
                        teid: 1,
                    },
                    qos_flows: vec![1],
                }
                .encode()
                .unwrap(),
            )],
            failed: vec![],
        }
        .encode()
        .unwrap(),
        PduSessionResourceReleaseCommand {
            amf_ue_ngap_id: 5,
            ran_ue_ngap_id: 6,
            nas_pdu: Some(dl_sm(&SmMessage::ReleaseCommand(
                PduSessionReleaseCommand {
                    pdu_session_id: 1,
                    pti: 0,
                    cause: sm_ue::CAUSE_REGULAR_DEACTIVATION,
                },
            ))),
            sessions: vec![item(
                PduSessionResourceReleaseCommandTransfer {
                    cause: Cause::Nas(NasCause::NormalRelease),
                }
                .encode()
                .unwrap(),
            )],
        }
        .encode()
        .unwrap(),
        PduSessionResourceReleaseResponse {
            amf_ue_ngap_id: 5,
            ran_ue_ngap_id: 6,
            released: vec![item(
                PduSessionResourceReleaseResponseTransfer.encode().unwrap(),
            )],
        }
        .encode()
        .unwrap(),
    ];
    // DLT 147 (USER0) mapped to NGAP: the PDUs without SCTP around them.
    let path = write_pcap("ngap", 147, &pdus);
    let rows = tshark(
        &path,
        &[r#"uat:user_dlts:"User 0 (DLT=147)","ngap","0","","0","""#],
        &[
            "_ws.col.Info",
            "_ws.malformed",
            "_ws.expert.severity",
            "_ws.expert.message",
            "nas_5gs.sm.message_type",
            "nas_5gs.sm.pdu_addr_inf_ipv4",
            "gtp.teid",
            "ngap.gTP_TEID",
            "nas_5gs.sm.qfi",
        ],
    );
    let _ = std::fs::remove_file(&path);
    assert_eq!(rows.len(), pdus.len(), "{rows:?}");
    let expected = [
        "UplinkNASTransport",
        "PDUSessionResourceSetupRequest",
        "PDUSessionResourceSetupResponse",
        "PDUSessionResourceReleaseCommand",
        "PDUSessionResourceReleaseResponse",
    ];
    for (row, name) in rows.iter().zip(expected) {
        assert!(row[0].contains(name), "{row:?}");
        assert!(row[1].is_empty(), "malformed: {row:?}");
        assert!(
            !row[2].split(',').any(|s| SEVERE.contains(&s)),
            "expert: {row:?}"
        );
    }
    // Wireshark read into the NAS payloads and the transfers.
    assert_eq!(rows[0][4], "0xc1", "{:?}", rows[0]);
    assert_eq!(rows[1][4], "0xc2", "{:?}", rows[1]);
    assert_eq!(rows[1][5], "10.45.0.2", "{:?}", rows[1]);
    // The UPF's and the gNB's TEIDs in the transfers, and the QFI of the QoS rule.
    assert_eq!(rows[1][7], "00000100", "{:?}", rows[1]);
    assert_eq!(rows[1][8], "1", "{:?}", rows[1]);
    assert_eq!(rows[2][7], "00000001", "{:?}", rows[2]);
    assert_eq!(rows[3][4], "0xd3", "{:?}", rows[3]);
}

/// An outer IPv4/UDP header around a GTP-U datagram, checksums computed.
fn outer(src: Ipv4Addr, dst: Ipv4Addr, gtp: &[u8]) -> Vec<u8> {
    let udp_len = u16::try_from(8 + gtp.len()).unwrap();
    let mut p = vec![0u8; 20 + usize::from(udp_len)];
    let total = u16::try_from(p.len()).unwrap();
    p[0] = 0x45;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    let c = checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p[20..22].copy_from_slice(&GTPU_PORT.to_be_bytes());
    p[22..24].copy_from_slice(&GTPU_PORT.to_be_bytes());
    p[24..26].copy_from_slice(&udp_len.to_be_bytes());
    p[28..].copy_from_slice(gtp);
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&udp_len.to_be_bytes());
    pseudo.extend_from_slice(&p[20..]);
    let c = checksum(&pseudo);
    p[26..28].copy_from_slice(&c.to_be_bytes());
    p
}

#[test]
fn gpdus_are_clean_for_tshark() {
    let gnb = Ipv4Addr::new(127, 0, 0, 5);
    let upf = Ipv4Addr::new(127, 0, 0, 9);
    let session = UpSession {
        ue_ip: Ipv4Addr::new(10, 45, 0, 2),
        upf: GtpTunnel {
            addr: upf,
            teid: 0x100,
        },
        gnb_teid: 7,
        qfi: 5,
    };
    let mut packets = Vec::new();
    for (kind, size) in [
        (
            ProbeKind::Udp {
                src_port: 40000,
                dst_port: 9,
            },
            100,
        ),
        (ProbeKind::IcmpEcho, 1400),
        (ProbeKind::IcmpEcho, 53),
    ] {
        let cfg = FlowConfig {
            kind,
            inner_size: size,
            ..FlowConfig::default()
        };
        let mut up = UserPlane::new(cfg, vec![session]).unwrap();
        let mut buf = Vec::new();
        up.build_uplink(0, 0, &mut buf).unwrap();
        packets.push(outer(gnb, upf, &buf));
        packets.push(outer(upf, gnb, &reflect_gpdu(&buf, 7).unwrap()));
    }
    // LINKTYPE_RAW: IPv4 packets without a link layer.
    let path = write_pcap("gtpu", 101, &packets);
    let rows = tshark(
        &path,
        &["ip.check_checksum:TRUE", "udp.check_checksum:TRUE"],
        &[
            "_ws.col.Protocol",
            "_ws.malformed",
            "_ws.expert.severity",
            "ip.checksum.status",
            "udp.checksum.status",
            "icmp.checksum.status",
            "gtp.teid",
            "gtp.ext_hdr.pdu_ses_con.qos_flow_id",
            "ip.dst",
        ],
    );
    let _ = std::fs::remove_file(&path);
    assert_eq!(rows.len(), packets.len(), "{rows:?}");
    for (i, row) in rows.iter().enumerate() {
        assert!(row[1].is_empty(), "malformed: {row:?}");
        assert!(
            !row[2].split(',').any(|s| SEVERE.contains(&s)),
            "expert: {row:?}"
        );
        // Outer and inner IPv4 header checksums, and the UDP/ICMP ones, are good (1).
        assert_eq!(row[3], "1,1", "{row:?}");
        // The inner packet's own checksum was verified too: a second UDP status, or
        // the ICMP one.
        if row[0].contains("ICMP") {
            assert_eq!((row[4].as_str(), row[5].as_str()), ("1", "1"), "{row:?}");
        } else {
            assert_eq!(row[4], "1,1", "{row:?}");
        }
        for status in [&row[4], &row[5]] {
            assert!(
                status.split(',').all(|s| s == "1" || s.is_empty()),
                "{row:?}"
            );
        }
        let teid = if i % 2 == 0 {
            "0x00000100"
        } else {
            "0x00000007"
        };
        assert_eq!(row[6], teid, "{row:?}");
        assert_eq!(row[7], "5", "{row:?}");
    }
    assert!(rows[1][8].ends_with("10.45.0.2"), "{:?}", rows[1]);
    assert!(rows[2][0].contains("ICMP"), "{:?}", rows[2]);
}
