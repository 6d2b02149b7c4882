//! The byte layouts of the BPF maps' keys and values: `repr(C)` structs of
//! `bpf/upf_xdp.c`, written field by field (keep the two in step).

use std::net::Ipv4Addr;

use upf::mbr::MbrParams;
use upf::{DownlinkAction, DownlinkRule, Gate, UplinkAction, UplinkRule, Usage};

/// Why the fast path forwarded, dropped or passed a packet: the index of its per-CPU
/// counter (`enum reason` in bpf/upf_xdp.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Reason {
    /// Uplink G-PDU decapsulated and redirected to N6.
    UlForwarded = 0,
    /// Downlink packet encapsulated and redirected to N3.
    DlForwarded,
    /// Dropped: GTP-U header, its length or the inner packet cut short.
    DropTruncated,
    /// Dropped: no uplink rule for the TEID.
    DropUnknownTeid,
    /// Dropped: extension header chain malformed, too long, or with an unknown type that
    /// requires comprehension.
    DropBadExtension,
    /// Dropped: the QER gate is closed.
    DropGateClosed,
    /// Dropped: the FAR says drop.
    DropFar,
    /// Dropped: inner source address is not the session's UE address.
    DropUeMismatch,
    /// Dropped: no route (FIB lookup failed).
    DropNoRoute,
    /// Dropped: not GTP-U version 1, or the inner packet is not IPv4.
    DropMalformed,
    /// Dropped: the PDU Session Container's QFI is not the rule's.
    DropQfiMismatch,
    /// Dropped: over the QER's MBR (the rule's token bucket is empty).
    DropMbr,
    /// Passed: a GTP-U message other than a G-PDU (echo, end marker, error indication…).
    PassSignalling,
    /// Passed: the FAR buffers.
    PassBuffer,
    /// Passed: the inner IPv4 TTL is 1 or 0; the kernel's forwarding path answers with ICMP
    /// Time Exceeded (RFC 1812 §5.3.1), which the fast path does not build.
    PassTtl,
    /// Passed: not GTP-U to port 2152 on N3 / no downlink rule on N6.
    PassNotForUs,
    /// Passed: the next hop's MAC address is not resolved yet.
    PassNoNeigh,
    /// A GTP-U Echo Request answered with an Echo Response on the spot (TS 29.281 §7.2).
    EchoAnswered,
    /// Passed: an outer IPv4/UDP fragment; the kernel reassembles it and the user-space
    /// path's GTP-U socket takes the G-PDU.
    PassFragment,
    /// Dropped: the inner IPv4 header does not hold together (RFC 791 §3.1: IHL below 5, or
    /// a Total Length shorter than the header).
    DropInnerHeader,
}

impl Reason {
    /// How many reasons there are.
    pub const COUNT: usize = 20;
    /// Every reason, in counter order.
    pub const ALL: [Reason; Reason::COUNT] = [
        Reason::UlForwarded,
        Reason::DlForwarded,
        Reason::DropTruncated,
        Reason::DropUnknownTeid,
        Reason::DropBadExtension,
        Reason::DropGateClosed,
        Reason::DropFar,
        Reason::DropUeMismatch,
        Reason::DropNoRoute,
        Reason::DropMalformed,
        Reason::DropQfiMismatch,
        Reason::DropMbr,
        Reason::PassSignalling,
        Reason::PassBuffer,
        Reason::PassTtl,
        Reason::PassNotForUs,
        Reason::PassNoNeigh,
        Reason::EchoAnswered,
        Reason::PassFragment,
        Reason::DropInnerHeader,
    ];

    /// A snake_case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Reason::UlForwarded => "ul_forwarded",
            Reason::DlForwarded => "dl_forwarded",
            Reason::DropTruncated => "drop_truncated",
            Reason::DropUnknownTeid => "drop_unknown_teid",
            Reason::DropBadExtension => "drop_bad_extension",
            Reason::DropGateClosed => "drop_gate_closed",
            Reason::DropFar => "drop_far",
            Reason::DropUeMismatch => "drop_ue_mismatch",
            Reason::DropNoRoute => "drop_no_route",
            Reason::DropMalformed => "drop_malformed",
            Reason::DropQfiMismatch => "drop_qfi_mismatch",
            Reason::PassSignalling => "pass_signalling",
            Reason::PassBuffer => "pass_buffer",
            Reason::DropMbr => "drop_mbr",
            Reason::PassTtl => "pass_ttl",
            Reason::PassNotForUs => "pass_not_for_us",
            Reason::PassNoNeigh => "pass_no_neigh",
            Reason::EchoAnswered => "echo_answered",
            Reason::PassFragment => "pass_fragment",
            Reason::DropInnerHeader => "drop_inner_header",
        }
    }

    /// A drop reason.
    pub fn is_drop(self) -> bool {
        self.name().starts_with("drop_")
    }

    /// A pass-to-kernel reason.
    pub fn is_pass(self) -> bool {
        self.name().starts_with("pass_")
    }
}

const ACT_FORWARD: u8 = 0;
const ACT_DROP: u8 = 1;
const ACT_BUFFER: u8 = 2;
const NO_QFI: u8 = 0xff;

/// Octets of `struct usage`.
pub(crate) const USAGE_LEN: usize = 40;

/// `struct config`.
pub(crate) fn config(n3: Ipv4Addr) -> [u8; 8] {
    let mut v = [0u8; 8];
    v[..4].copy_from_slice(&n3.octets());
    v
}

/// Octets of `struct ul_rule`.
pub(crate) const UL_RULE_LEN: usize = 40;
/// Octets of `struct dl_rule`.
pub(crate) const DL_RULE_LEN: usize = 48;

/// `mbr_rate`, `mbr_depth_ns` and `mbr_tat` (0: a full bucket) of a rule value, at `off`.
/// The spin lock before them is left zero: the kernel never copies it from user space.
fn put_mbr(v: &mut [u8], off: usize, gate: &Gate) {
    let (rate, depth_ns) =
        MbrParams::from_gate(gate).map_or((0, 0), |p| (p.bytes_per_s, p.depth_ns));
    for (i, x) in [rate, depth_ns, 0].into_iter().enumerate() {
        if let Some(dst) = v.get_mut(off + 8 * i..off + 8 * i + 8) {
            dst.copy_from_slice(&x.to_ne_bytes());
        }
    }
}

/// `struct ul_rule`.
pub(crate) fn uplink(r: &UplinkRule) -> [u8; UL_RULE_LEN] {
    let mut v = [0u8; UL_RULE_LEN];
    v[0..4].copy_from_slice(&r.ue_ip.octets());
    v[4..8].copy_from_slice(&r.usage.map_or(0, |u| u.0).to_ne_bytes());
    v[8] = u8::from(r.usage.is_some());
    v[9] = match r.action {
        UplinkAction::Forward => ACT_FORWARD,
        UplinkAction::Drop => ACT_DROP,
    };
    v[10] = u8::from(r.gate.open);
    v[11] = r.qfi.map_or(NO_QFI, |q| q & 0x3f);
    // 12..16: the bucket's spin lock.
    put_mbr(&mut v, 16, &r.gate);
    v
}

/// `struct dl_rule`.
pub(crate) fn downlink(r: &DownlinkRule) -> [u8; DL_RULE_LEN] {
    let mut v = [0u8; DL_RULE_LEN];
    let (action, teid, peer, qfi) = match r.action {
        DownlinkAction::Forward { teid, peer, qfi } => (ACT_FORWARD, teid, peer, qfi),
        DownlinkAction::Buffer => (ACT_BUFFER, 0, Ipv4Addr::UNSPECIFIED, None),
        DownlinkAction::Drop => (ACT_DROP, 0, Ipv4Addr::UNSPECIFIED, None),
    };
    v[0..4].copy_from_slice(&teid.to_ne_bytes());
    v[4..8].copy_from_slice(&peer.octets());
    v[8..12].copy_from_slice(&r.usage.map_or(0, |u| u.0).to_ne_bytes());
    v[12] = u8::from(r.usage.is_some());
    v[13] = action;
    v[14] = u8::from(r.gate.open);
    v[15] = qfi.map_or(NO_QFI, |q| q & 0x3f);
    // 16..20: the bucket's spin lock, 20..24 padding.
    put_mbr(&mut v, 24, &r.gate);
    v
}

/// The native-endian u64 at octet `off` of `v` (0 if `v` is too short).
pub(crate) fn u64_at(v: &[u8], off: usize) -> u64 {
    v.get(off..off + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_ne_bytes)
}

/// Adds one CPU's `struct usage` to `acc`.
pub(crate) fn add_usage(acc: Usage, v: &[u8]) -> Usage {
    Usage {
        ul_packets: acc.ul_packets + u64_at(v, 0),
        ul_bytes: acc.ul_bytes + u64_at(v, 8),
        dl_packets: acc.dl_packets + u64_at(v, 16),
        dl_bytes: acc.dl_bytes + u64_at(v, 24),
        dropped: acc.dropped + u64_at(v, 32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use upf::{Gate, UsageId};

    #[test]
    fn reasons_are_in_counter_order() {
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
            // Every packet is dropped, passed up, or handled here (forwarded or answered).
            let handled = matches!(
                r,
                Reason::UlForwarded | Reason::DlForwarded | Reason::EchoAnswered
            );
            assert!(r.is_drop() ^ r.is_pass() ^ handled, "{}", r.name());
        }
    }

    #[test]
    fn uplink_layout() {
        let r = UplinkRule {
            teid: 1,
            seid: 2,
            pdr_id: 3,
            ue_ip: Ipv4Addr::new(10, 0, 0, 9),
            qfi: Some(5),
            action: UplinkAction::Forward,
            gate: Gate {
                open: false,
                mbr_bps: 1000,
            },
            usage: Some(UsageId(7)),
        };
        let v = uplink(&r);
        assert_eq!(&v[0..4], &[10, 0, 0, 9]);
        assert_eq!(u32::from_ne_bytes([v[4], v[5], v[6], v[7]]), 7);
        assert_eq!(&v[8..16], &[1, ACT_FORWARD, 0, 5, 0, 0, 0, 0]);
        // 1000 bit/s = 125 octets/s; depth 3000 octets = 24 s; a full bucket.
        assert_eq!(u64_at(&v, 16), 125);
        assert_eq!(u64_at(&v, 24), 24_000_000_000);
        assert_eq!(u64_at(&v, 32), 0);
    }

    #[test]
    fn downlink_layout() {
        let r = DownlinkRule {
            ue_ip: Ipv4Addr::new(10, 0, 0, 9),
            seid: 2,
            pdr_id: 3,
            action: DownlinkAction::Forward {
                teid: 0xabcd,
                peer: Ipv4Addr::new(10, 1, 1, 1),
                qfi: None,
            },
            gate: Gate::OPEN,
            usage: None,
        };
        let v = downlink(&r);
        assert_eq!(u32::from_ne_bytes([v[0], v[1], v[2], v[3]]), 0xabcd);
        assert_eq!(&v[4..8], &[10, 1, 1, 1]);
        assert_eq!(&v[12..16], &[0, ACT_FORWARD, 1, NO_QFI]);
        assert_eq!(&v[16..], &[0u8; 32][..], "no MBR: rate 0");
    }

    #[test]
    fn short_values_read_as_zero() {
        assert_eq!(u64_at(&[1, 2, 3], 0), 0);
        assert_eq!(add_usage(Usage::default(), &[]), Usage::default());
    }
}
