//! The layouts as C `#define`s for the BPF programs in `bpf/`: their build scripts
//! (crates/steer-bpf, crates/upf-xdp, crates/upf-afxdp) write [`c_header`] to
//! `$OUT_DIR/steer5g_ids.h`, so no program repeats a value the Rust side defines.
//!
//! Every name is `STEER5G_` plus the module and the Rust constant's name.

use std::fmt::Write as _;

use crate::{amf, n2, smf, upf, worker, Workers};

/// How a value is spelt in C.
#[derive(Clone, Copy)]
enum Form {
    /// A small count or shift: plain decimal, an `int` in C.
    Decimal,
    /// A 32-bit mask: hex with a `U` suffix.
    Hex32,
    /// A 64-bit value: hex with a `ULL` suffix.
    Hex64,
}

/// Name, value, form, and the Rust item it comes from.
const DEFINES: &[(&str, u64, Form, &str)] = &[
    (
        "STEER5G_MAX_WORKERS",
        Workers::MAX as u64,
        Form::Decimal,
        "ids::Workers::MAX",
    ),
    (
        "STEER5G_FNV_OFFSET",
        worker::FNV_OFFSET,
        Form::Hex64,
        "ids::worker::FNV_OFFSET",
    ),
    (
        "STEER5G_FNV_PRIME",
        worker::FNV_PRIME,
        Form::Hex64,
        "ids::worker::FNV_PRIME",
    ),
    (
        "STEER5G_AMF_UE_NGAP_ID_BITS",
        amf::AMF_UE_NGAP_ID_BITS as u64,
        Form::Decimal,
        "ids::amf::AMF_UE_NGAP_ID_BITS",
    ),
    (
        "STEER5G_AMF_UE_NGAP_ID_WORKER_SHIFT",
        amf::AMF_UE_NGAP_ID_WORKER_SHIFT as u64,
        Form::Decimal,
        "ids::amf::AMF_UE_NGAP_ID_WORKER_SHIFT",
    ),
    (
        "STEER5G_AMF_TMSI_WORKER_SHIFT",
        amf::TMSI_WORKER_SHIFT as u64,
        Form::Decimal,
        "ids::amf::TMSI_WORKER_SHIFT",
    ),
    (
        "STEER5G_AMF_TMSI_COUNTER_MASK",
        amf::TMSI_COUNTER_MASK as u64,
        Form::Hex32,
        "ids::amf::TMSI_COUNTER_MASK",
    ),
    (
        "STEER5G_SMF_SEID_WORKER_SHIFT",
        smf::SEID_WORKER_SHIFT as u64,
        Form::Decimal,
        "ids::smf::SEID_WORKER_SHIFT",
    ),
    (
        "STEER5G_SMF_SEID_COUNTER_MASK",
        smf::SEID_COUNTER_MASK,
        Form::Hex64,
        "ids::smf::SEID_COUNTER_MASK",
    ),
    (
        "STEER5G_UPF_SEID_WORKER_SHIFT",
        upf::SEID_WORKER_SHIFT as u64,
        Form::Decimal,
        "ids::upf::SEID_WORKER_SHIFT",
    ),
    (
        "STEER5G_UPF_SEID_COUNTER_MASK",
        upf::SEID_COUNTER_MASK,
        Form::Hex64,
        "ids::upf::SEID_COUNTER_MASK",
    ),
    (
        "STEER5G_UPF_TEID_WORKER_SHIFT",
        upf::TEID_WORKER_SHIFT as u64,
        Form::Decimal,
        "ids::upf::TEID_WORKER_SHIFT",
    ),
    (
        "STEER5G_UPF_TEID_COUNTER_MASK",
        upf::TEID_COUNTER_MASK as u64,
        Form::Hex32,
        "ids::upf::TEID_COUNTER_MASK",
    ),
    (
        "STEER5G_N2_ASSOC_WORKER_SHIFT",
        n2::ASSOC_WORKER_SHIFT as u64,
        Form::Decimal,
        "ids::n2::ASSOC_WORKER_SHIFT",
    ),
    (
        "STEER5G_N2_ASSOC_COUNTER_MASK",
        n2::ASSOC_COUNTER_MASK as u64,
        Form::Hex32,
        "ids::n2::ASSOC_COUNTER_MASK",
    ),
];

/// The C header of every layout constant, one `#define` each (see the module doc).
pub fn c_header() -> String {
    let mut h = String::from(
        "// Generated from the Rust crate `ids` (crates/ids) by a build script: do not edit.\n\
         // The identifier layouts of steer5g; DESIGN.md \"Identifiers and ownership\".\n\
         #ifndef STEER5G_IDS_H\n\
         #define STEER5G_IDS_H\n\n",
    );
    for (name, value, form, from) in DEFINES {
        let value = match form {
            Form::Decimal => format!("{value}"),
            Form::Hex32 => format!("0x{value:08x}U"),
            Form::Hex64 => format!("0x{value:016x}ULL"),
        };
        // Writing to a String cannot fail.
        let _ = writeln!(h, "#define {name} {value} // {from}");
    }
    h.push_str("\n#endif // STEER5G_IDS_H\n");
    h
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Every `#define NAME VALUE` of the header but its guard, with the value read back as C
    /// would read it.
    fn defines(h: &str) -> BTreeMap<String, u64> {
        h.lines()
            .filter_map(|l| l.strip_prefix("#define "))
            .filter(|l| *l != "STEER5G_IDS_H")
            .map(|l| {
                let mut parts = l.split_whitespace();
                let name = parts.next().unwrap().to_owned();
                let v = parts.next().unwrap().trim_end_matches(['U', 'L']);
                let v = match v.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
                    None => v.parse().unwrap(),
                };
                (name, v)
            })
            .collect()
    }

    #[test]
    fn header_holds_every_constant_with_its_rust_value() {
        let h = c_header();
        let want: BTreeMap<String, u64> = [
            ("STEER5G_MAX_WORKERS", u64::from(Workers::MAX)),
            ("STEER5G_FNV_OFFSET", worker::FNV_OFFSET),
            ("STEER5G_FNV_PRIME", worker::FNV_PRIME),
            (
                "STEER5G_AMF_UE_NGAP_ID_BITS",
                u64::from(amf::AMF_UE_NGAP_ID_BITS),
            ),
            (
                "STEER5G_AMF_UE_NGAP_ID_WORKER_SHIFT",
                u64::from(amf::AMF_UE_NGAP_ID_WORKER_SHIFT),
            ),
            (
                "STEER5G_AMF_TMSI_WORKER_SHIFT",
                u64::from(amf::TMSI_WORKER_SHIFT),
            ),
            (
                "STEER5G_AMF_TMSI_COUNTER_MASK",
                u64::from(amf::TMSI_COUNTER_MASK),
            ),
            (
                "STEER5G_SMF_SEID_WORKER_SHIFT",
                u64::from(smf::SEID_WORKER_SHIFT),
            ),
            ("STEER5G_SMF_SEID_COUNTER_MASK", smf::SEID_COUNTER_MASK),
            (
                "STEER5G_UPF_SEID_WORKER_SHIFT",
                u64::from(upf::SEID_WORKER_SHIFT),
            ),
            ("STEER5G_UPF_SEID_COUNTER_MASK", upf::SEID_COUNTER_MASK),
            (
                "STEER5G_UPF_TEID_WORKER_SHIFT",
                u64::from(upf::TEID_WORKER_SHIFT),
            ),
            (
                "STEER5G_UPF_TEID_COUNTER_MASK",
                u64::from(upf::TEID_COUNTER_MASK),
            ),
            (
                "STEER5G_N2_ASSOC_WORKER_SHIFT",
                u64::from(n2::ASSOC_WORKER_SHIFT),
            ),
            (
                "STEER5G_N2_ASSOC_COUNTER_MASK",
                u64::from(n2::ASSOC_COUNTER_MASK),
            ),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_owned(), v))
        .collect();
        assert_eq!(defines(&h), want, "{h}");
    }

    #[test]
    fn header_spells_values_as_c_does() {
        let h = c_header();
        for line in [
            "#define STEER5G_MAX_WORKERS 256 ",
            "#define STEER5G_UPF_TEID_WORKER_SHIFT 24 ",
            "#define STEER5G_UPF_TEID_COUNTER_MASK 0x00ffffffU ",
            "#define STEER5G_UPF_SEID_WORKER_SHIFT 48 ",
            "#define STEER5G_SMF_SEID_COUNTER_MASK 0x0000ffffffffffffULL ",
            "#define STEER5G_FNV_PRIME 0x00000100000001b3ULL ",
        ] {
            assert!(h.contains(line), "missing {line:?} in\n{h}");
        }
        assert!(h.starts_with("// Generated"));
        assert!(h.contains("#ifndef STEER5G_IDS_H\n#define STEER5G_IDS_H\n"));
        assert!(h.ends_with("#endif // STEER5G_IDS_H\n"));
    }
}
