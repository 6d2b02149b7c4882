//! Wireshark's dissectors as an independent judge of what we put on the wire.
//!
//! [`check`] reads a capture with tshark, CRC32c validation of SCTP turned on (it is off by
//! default), and reports per packet and in total: SCTP checksum status, NGAP messages,
//! malformed packets and expert items. Field output (`-T fields`) is parsed rather than the
//! human summary, whose layout changes between Wireshark versions.

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;

use crate::process::run;
use crate::{Error, Result};

/// Separates multiple occurrences of a field within one packet (ASCII unit separator: it
/// cannot appear in any field text we read).
const AGGREGATOR: char = '\u{1f}';

/// The fields we ask for, in column order.
const FIELDS: [&str; 10] = [
    "frame.number",
    "_ws.col.Protocol",
    "_ws.col.Info",
    "sctp.checksum.status",
    "ngap.NGAP_PDU",
    "ngap.procedureCode",
    "_ws.malformed",
    "_ws.expert.severity",
    "_ws.expert.message",
    "sctp.chunk_type",
];

/// Severity of a Wireshark expert item (epan/proto.h `PI_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// `PI_COMMENT`: a packet comment.
    Comment,
    /// `PI_CHAT`: normal workflow, e.g. a TCP handshake.
    Chat,
    /// `PI_NOTE`: usual but noteworthy.
    Note,
    /// `PI_WARN`: possibly a problem.
    Warning,
    /// `PI_ERROR`: a serious problem, e.g. a malformed packet.
    Error,
    /// A value this version of the kit does not know.
    Other(u32),
}

impl Severity {
    /// From the numeric value tshark prints for `_ws.expert.severity`.
    pub fn from_raw(v: u32) -> Severity {
        match v {
            0x0010_0000 => Severity::Comment,
            0x0020_0000 => Severity::Chat,
            0x0040_0000 => Severity::Note,
            0x0060_0000 => Severity::Warning,
            0x0080_0000 => Severity::Error,
            other => Severity::Other(other),
        }
    }
}

/// What tshark concluded about an SCTP common header's CRC32c (`sctp.checksum.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumStatus {
    /// Wrong checksum.
    Bad,
    /// Right checksum.
    Good,
    /// Not checked.
    Unverified,
}

/// One packet of the capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Frame number (from 1).
    pub number: u64,
    /// The protocol column (the topmost dissected protocol).
    pub protocol: String,
    /// The info column.
    pub info: String,
    /// One status per SCTP common header in the frame.
    pub sctp_checksum: Vec<ChecksumStatus>,
    /// SCTP chunk types in the frame (RFC 9260 §3.2 numbers).
    pub sctp_chunks: Vec<u8>,
    /// The NGAP messages in the frame, by name.
    pub ngap: Vec<String>,
    /// True when a dissector flagged the frame as malformed.
    pub malformed: bool,
    /// Expert items (severity, message).
    pub expert: Vec<(Severity, String)>,
}

impl fmt::Display for Packet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>5} {:<6} {}",
            self.number,
            self.protocol,
            self.info.trim_end()
        )
    }
}

/// The result of [`check`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Every packet, in order.
    pub packets: Vec<Packet>,
    /// Frames with at least one SCTP common header.
    pub sctp_packets: usize,
    /// SCTP headers whose checksum was wrong.
    pub bad_checksum: usize,
    /// SCTP headers whose checksum was not verified (should be 0: we turn validation on).
    pub unverified_checksum: usize,
    /// NGAP messages by name, over the whole capture.
    pub ngap: BTreeMap<String, usize>,
    /// Frames flagged as malformed.
    pub malformed: usize,
    /// Expert items by severity.
    pub expert: BTreeMap<Severity, usize>,
    /// Texts of the warning-level expert items, with their frame numbers.
    pub warnings: Vec<String>,
    /// Texts of the error-level expert items, with their frame numbers.
    pub errors: Vec<String>,
}

impl Report {
    /// Number of packets in the capture.
    pub fn total(&self) -> usize {
        self.packets.len()
    }

    /// How many NGAP messages named `name` (e.g. `"NGSetupRequest"`) the capture holds.
    pub fn ngap_count(&self, name: &str) -> usize {
        self.ngap.get(name).copied().unwrap_or(0)
    }

    /// Expert items of severity `sev`.
    pub fn expert_count(&self, sev: Severity) -> usize {
        self.expert.get(&sev).copied().unwrap_or(0)
    }

    /// The malformed frames with their expert items: a malformed flag alone does not say
    /// what is wrong, and a Note-level item of the Malformed group sets it too.
    pub fn malformed_details(&self) -> Vec<String> {
        self.packets
            .iter()
            .filter(|p| p.malformed)
            .map(|p| {
                let items: Vec<String> = p
                    .expert
                    .iter()
                    .map(|(sev, msg)| format!("{sev:?}: {msg}"))
                    .collect();
                format!(
                    "frame {} ({}): {}",
                    p.number,
                    p.info.trim_end(),
                    items.join("; ")
                )
            })
            .collect()
    }

    /// Panics, listing what tshark objected to, when a frame is malformed or an expert item
    /// is an error: the verdict every capture test wants on our packets.
    pub fn assert_decodes_cleanly(&self) {
        assert_eq!(
            self.malformed,
            0,
            "malformed packets:\n{}",
            self.malformed_details().join("\n")
        );
        assert_eq!(
            self.expert_count(Severity::Error),
            0,
            "expert errors: {:?}",
            self.errors
        );
    }

    /// One line per packet, as a reader of a failed test wants to see them.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for p in &self.packets {
            s.push_str(&p.to_string());
            s.push('\n');
        }
        s
    }
}

/// The NGAP message name for a PDU choice (0 initiating, 1 successful, 2 unsuccessful
/// outcome) and a procedure code; TS 38.413 §9.4.7 (procedure codes) and §9.2 (messages).
pub fn ngap_message_name(pdu: u32, code: u32) -> String {
    // (code, initiating, successful outcome, unsuccessful outcome)
    #[rustfmt::skip]
    const TABLE: &[(u32, &str, &str, &str)] = &[
        (0, "AMFConfigurationUpdate", "AMFConfigurationUpdateAcknowledge", "AMFConfigurationUpdateFailure"),
        (1, "AMFStatusIndication", "", ""),
        (2, "CellTrafficTrace", "", ""),
        (3, "DeactivateTrace", "", ""),
        (4, "DownlinkNASTransport", "", ""),
        (9, "ErrorIndication", "", ""),
        (10, "HandoverCancel", "HandoverCancelAcknowledge", ""),
        (11, "HandoverNotify", "", ""),
        (12, "HandoverRequired", "HandoverCommand", "HandoverPreparationFailure"),
        (13, "HandoverRequest", "HandoverRequestAcknowledge", "HandoverFailure"),
        (14, "InitialContextSetupRequest", "InitialContextSetupResponse", "InitialContextSetupFailure"),
        (15, "InitialUEMessage", "", ""),
        (19, "NASNonDeliveryIndication", "", ""),
        (20, "NGReset", "NGResetAcknowledge", ""),
        (21, "NGSetupRequest", "NGSetupResponse", "NGSetupFailure"),
        (22, "OverloadStart", "", ""),
        (23, "OverloadStop", "", ""),
        (24, "Paging", "", ""),
        (25, "PathSwitchRequest", "PathSwitchRequestAcknowledge", "PathSwitchRequestFailure"),
        (26, "PDUSessionResourceModifyRequest", "PDUSessionResourceModifyResponse", ""),
        (27, "PDUSessionResourceModifyIndication", "PDUSessionResourceModifyConfirm", ""),
        (28, "PDUSessionResourceReleaseCommand", "PDUSessionResourceReleaseResponse", ""),
        (29, "PDUSessionResourceSetupRequest", "PDUSessionResourceSetupResponse", ""),
        (30, "PDUSessionResourceNotify", "", ""),
        (35, "RANConfigurationUpdate", "RANConfigurationUpdateAcknowledge", "RANConfigurationUpdateFailure"),
        (36, "RerouteNASRequest", "", ""),
        (40, "UEContextModificationRequest", "UEContextModificationResponse", "UEContextModificationFailure"),
        (41, "UEContextReleaseCommand", "UEContextReleaseComplete", ""),
        (42, "UEContextReleaseRequest", "", ""),
        (43, "UERadioCapabilityCheckRequest", "UERadioCapabilityCheckResponse", ""),
        (44, "UERadioCapabilityInfoIndication", "", ""),
        (46, "UplinkNASTransport", "", ""),
    ];
    let kind = [
        "initiatingMessage",
        "successfulOutcome",
        "unsuccessfulOutcome",
    ];
    let found = TABLE.iter().find(|e| e.0 == code).map(|e| [e.1, e.2, e.3]);
    match (found, usize::try_from(pdu).ok().filter(|&i| i < 3)) {
        (Some(names), Some(i)) if !names[i].is_empty() => names[i].to_owned(),
        (_, Some(i)) => format!("procedureCode {code} {}", kind[i]),
        (_, None) => format!("procedureCode {code} pdu {pdu}"),
    }
}

fn split_multi(field: &str) -> impl Iterator<Item = &str> {
    field.split([AGGREGATOR, ',']).filter(|s| !s.is_empty())
}

fn parse_u<T: std::str::FromStr>(s: &str, what: &str, line: &str) -> Result<T> {
    s.trim().parse().map_err(|_| Error::Parse {
        what: "tshark -T fields".into(),
        detail: format!("bad {what} {s:?} in {line:?}"),
    })
}

/// Parses tshark's `-T fields` output for [`FIELDS`] (tab separated, occurrences joined by
/// [`AGGREGATOR`]).
pub fn parse_fields(text: &str) -> Result<Report> {
    let mut report = Report::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() != FIELDS.len() {
            return Err(Error::Parse {
                what: "tshark -T fields".into(),
                detail: format!(
                    "{} columns instead of {} in {line:?}",
                    cols.len(),
                    FIELDS.len()
                ),
            });
        }
        let number: u64 = parse_u(cols[0], "frame number", line)?;
        let mut sctp_checksum = Vec::new();
        for s in split_multi(cols[3]) {
            sctp_checksum.push(match parse_u::<u8>(s, "checksum status", line)? {
                0 => ChecksumStatus::Bad,
                1 => ChecksumStatus::Good,
                _ => ChecksumStatus::Unverified,
            });
        }
        let pdus: Vec<u32> = split_multi(cols[4])
            .map(|s| parse_u(s, "NGAP-PDU", line))
            .collect::<Result<_>>()?;
        let codes: Vec<u32> = split_multi(cols[5])
            .map(|s| parse_u(s, "procedureCode", line))
            .collect::<Result<_>>()?;
        // A truncated PDU can leave one list shorter: name what is complete.
        let ngap: Vec<String> = pdus
            .iter()
            .zip(&codes)
            .map(|(&p, &c)| ngap_message_name(p, c))
            .collect();
        let severities: Vec<u32> = split_multi(cols[7])
            .map(|s| parse_u(s, "expert severity", line))
            .collect::<Result<_>>()?;
        // Messages may contain commas, so split them on the aggregator only.
        let messages: Vec<&str> = cols[8].split(AGGREGATOR).collect();
        let expert: Vec<(Severity, String)> = severities
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                (
                    Severity::from_raw(s),
                    messages.get(i).copied().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let sctp_chunks: Vec<u8> = split_multi(cols[9])
            .map(|s| parse_u(s, "chunk type", line))
            .collect::<Result<_>>()?;
        let packet = Packet {
            number,
            protocol: cols[1].to_owned(),
            info: cols[2].to_owned(),
            sctp_checksum,
            sctp_chunks,
            ngap,
            malformed: !cols[6].is_empty(),
            expert,
        };
        if !packet.sctp_checksum.is_empty() {
            report.sctp_packets += 1;
        }
        for s in &packet.sctp_checksum {
            match s {
                ChecksumStatus::Bad => report.bad_checksum += 1,
                ChecksumStatus::Unverified => report.unverified_checksum += 1,
                ChecksumStatus::Good => {}
            }
        }
        for name in &packet.ngap {
            *report.ngap.entry(name.clone()).or_insert(0) += 1;
        }
        report.malformed += usize::from(packet.malformed);
        for (sev, msg) in &packet.expert {
            *report.expert.entry(*sev).or_insert(0) += 1;
            match sev {
                Severity::Warning => report.warnings.push(format!("frame {number}: {msg}")),
                Severity::Error => report.errors.push(format!("frame {number}: {msg}")),
                _ => {}
            }
        }
        report.packets.push(packet);
    }
    Ok(report)
}

/// The `-d` argument that makes tshark decode UDP port `port` as SCTP (RFC 6951
/// encapsulation); tshark does this by itself for the registered port 9899 only.
pub fn decode_udp_as_sctp(port: u16) -> String {
    format!("udp.port=={port},sctp")
}

/// Reads capture `path` with tshark and judges it. `decode_as` holds extra `-d` arguments,
/// e.g. [`decode_udp_as_sctp`] for a test's own encapsulation port.
pub fn check(path: &Path, decode_as: &[String]) -> Result<Report> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(path)
        .args(["-n", "-o", "sctp.checksum:CRC-32C"]);
    for d in decode_as {
        cmd.args(["-d", d]);
    }
    print_fields(&mut cmd, AGGREGATOR, &FIELDS);
    parse_fields(&run(&mut cmd)?)
}

/// Makes tshark `cmd` print `fields` of each frame on a line of its own: tab separated, the
/// occurrences of a field joined by `aggregator`.
pub fn print_fields(cmd: &mut Command, aggregator: char, fields: &[&str]) {
    cmd.args([
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=a",
        "-E",
    ]);
    cmd.arg(format!("aggregator={aggregator}"));
    for f in fields {
        cmd.args(["-e", f]);
    }
}

/// A G-PDU as Wireshark reads it: for the user-plane tests, an independent check of the
/// GTP-U header their datapath built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GPdu {
    /// The GTP-U TEID.
    pub teid: u32,
    /// Whether tshark found the outer IPv4 header checksum good.
    pub ip_checksum_good: bool,
    /// The QFI of the PDU session container, where the G-PDU carries one.
    pub qfi: Option<u8>,
}

/// The G-PDUs that `src` sent in capture `path`, in capture order.
pub fn g_pdus_from(path: &Path, src: Ipv4Addr) -> Result<Vec<GPdu>> {
    let filter = format!("ip.src == {src}");
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(path)
        .args(["-n", "-o", "ip.check_checksum:TRUE", "-Y", &filter])
        // The first occurrence of each field: the outer IPv4 header, not the inner one.
        .args(["-T", "fields", "-E", "occurrence=f"])
        .args(["-e", "gtp.teid", "-e", "ip.checksum.status"])
        .args(["-e", "gtp.ext_hdr.pdu_ses_con.qos_flow_id"]);
    run(&mut cmd)?.lines().map(parse_g_pdu).collect()
}

/// One row of [`g_pdus_from`]'s fields: `0x00a00000<TAB>1<TAB>9`.
fn parse_g_pdu(row: &str) -> Result<GPdu> {
    let bad = || Error::Parse {
        what: "tshark G-PDU fields".into(),
        detail: row.to_owned(),
    };
    let mut cols = row.split('\t');
    let teid = cols
        .next()
        .and_then(|t| t.strip_prefix("0x"))
        .ok_or_else(bad)?;
    let teid = u32::from_str_radix(teid, 16).map_err(|_| bad())?;
    // Wireshark's checksum status: 0 bad, 1 good, 2 not verified.
    let ip_checksum_good = cols.next() == Some("1");
    let qfi = match cols.next().unwrap_or("") {
        "" => None,
        q => Some(q.parse().map_err(|_| bad())?),
    };
    Ok(GPdu {
        teid,
        ip_checksum_good,
        qfi,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_g_pdu_rows() {
        assert_eq!(
            parse_g_pdu("0x00a00000\t1\t9").unwrap(),
            GPdu {
                teid: 0x00a0_0000,
                ip_checksum_good: true,
                qfi: Some(9)
            }
        );
        let g = parse_g_pdu("0x00c00001\t0\t").unwrap();
        assert_eq!(
            (g.teid, g.ip_checksum_good, g.qfi),
            (0x00c0_0001, false, None)
        );
        assert!(parse_g_pdu("teid\t1\t").is_err());
    }

    #[test]
    fn names_ngap_messages() {
        assert_eq!(ngap_message_name(0, 21), "NGSetupRequest");
        assert_eq!(ngap_message_name(1, 21), "NGSetupResponse");
        assert_eq!(ngap_message_name(2, 21), "NGSetupFailure");
        assert_eq!(ngap_message_name(0, 9), "ErrorIndication");
        assert_eq!(ngap_message_name(0, 15), "InitialUEMessage");
        assert_eq!(
            ngap_message_name(1, 15),
            "procedureCode 15 successfulOutcome"
        );
        assert_eq!(
            ngap_message_name(0, 99),
            "procedureCode 99 initiatingMessage"
        );
        assert_eq!(ngap_message_name(7, 21), "procedureCode 21 pdu 7");
    }

    #[test]
    fn procedure_codes_match_wiresharks_own_table() {
        // Cross-check our table against the value strings of the installed dissector.
        let Ok(values) = run(Command::new("tshark").args(["-G", "values"])) else {
            eprintln!("skipped: tshark not installed");
            return;
        };
        let mut checked = 0;
        for line in values.lines() {
            let cols: Vec<&str> = line.split('\t').collect();
            if cols.len() == 4 && cols[0] == "V" && cols[1] == "ngap.procedureCode" {
                let code: u32 = cols[2].parse().unwrap();
                let id = cols[3].trim_start_matches("id-");
                let name = ngap_message_name(0, code);
                if !name.starts_with("procedureCode") {
                    // Initiating messages of class 1 procedures add Request/Required etc.
                    let stem = id
                        .trim_end_matches("Notification")
                        .trim_end_matches("Preparation");
                    let stem = stem.trim_end_matches("ResourceAllocation");
                    assert!(
                        name.starts_with(stem) || name.starts_with(id),
                        "code {code}: {id} vs {name}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked >= 30, "only {checked} codes checked");
    }

    #[test]
    fn parses_field_output() {
        let a = AGGREGATOR;
        let text = format!(
            "1\tSCTP\tINIT \t1\t\t\t\t\t\t1\n\
             5\tNGAP\tNGSetupRequest\t1\t0\t21\t\t\t\t0\n\
             7\tNGAP\tNGSetupResponse[Malformed Packet]\t1\t1\t21\t[Malformed Packet: NGAP]{a}_ws.malformed\t8388608\tMalformed Packet (Exception occurred)\t0\n\
             8\tSCTP\tSACK, NGAP\t0{a}2\t0{a}1\t21{a}21\t\t6291456{a}4194304\tcomma, inside{a}note\t3{a}0\n"
        );
        let r = parse_fields(&text).unwrap();
        assert_eq!(r.total(), 4);
        assert_eq!(r.sctp_packets, 4);
        assert_eq!(r.bad_checksum, 1);
        assert_eq!(r.unverified_checksum, 1);
        assert_eq!(r.ngap_count("NGSetupRequest"), 2);
        assert_eq!(r.ngap_count("NGSetupResponse"), 2);
        assert_eq!(r.malformed, 1);
        assert_eq!(r.expert_count(Severity::Error), 1);
        assert_eq!(r.expert_count(Severity::Warning), 1);
        assert_eq!(r.expert_count(Severity::Note), 1);
        assert_eq!(r.warnings, vec!["frame 8: comma, inside".to_owned()]);
        assert_eq!(
            r.errors,
            vec!["frame 7: Malformed Packet (Exception occurred)".to_owned()]
        );
        assert_eq!(r.packets[3].sctp_chunks, vec![3, 0]);
        assert!(r.summary().contains("NGSetupRequest"));
        assert_eq!(
            r.malformed_details(),
            vec!["frame 7 (NGSetupResponse[Malformed Packet]): Error: Malformed Packet (Exception occurred)".to_owned()]
        );
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_fields("1\t2\n").is_err());
        assert!(parse_fields("x\tSCTP\t\t\t\t\t\t\t\t\n").is_err());
        assert!(parse_fields("1\tSCTP\t\tz\t\t\t\t\t\t\n").is_err());
        assert_eq!(parse_fields("").unwrap(), Report::default());
    }

    #[test]
    fn severities() {
        assert_eq!(Severity::from_raw(0x0080_0000), Severity::Error);
        assert_eq!(Severity::from_raw(0x0060_0000), Severity::Warning);
        assert_eq!(Severity::from_raw(1), Severity::Other(1));
        assert!(Severity::Error > Severity::Warning);
    }
}
