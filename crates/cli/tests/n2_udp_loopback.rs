//! N2 over SCTP/UDP encapsulation on loopback, unprivileged: 16 gNB emulators set up with
//! the AMF; a gNB of a PLMN the AMF does not serve is refused with the right cause.
//!
//! Addresses and ports are this file's own (127.0.0.61-62, UDP 19961-19962) so the tests
//! run in parallel with each other and with other test binaries.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{amf_setup_failed, assert_all_ok, num, ran, Amf};

#[test]
fn sixteen_gnbs_set_up_over_udp() {
    let amf = Amf::start(
        None,
        &[
            "--transport",
            "udp",
            "--n2-addr",
            "127.0.0.61",
            "--udp-port",
            "19961",
        ],
    );
    let (done, v) = ran(
        None,
        &[
            "--gnbs",
            "16",
            "--transport",
            "udp",
            "--amf",
            "127.0.0.61:19961",
            "--local-addr",
            "127.0.0.61",
            "--timeout",
            "20",
        ],
        Duration::from_secs(60),
    );
    assert_all_ok(&done, &v, 16);
    assert_eq!(v["transport"], "udp", "{v}");
    assert_eq!(num(&v, "sctp.bad_checksum"), 0, "{v}");
    let (_, a) = amf.stop();
    assert_eq!(num(&a, "n2.ng_setup_ok"), 16, "AMF report: {a}");
    assert_eq!(amf_setup_failed(&a), 0, "AMF report: {a}");
    assert_eq!(num(&a, "sctp.bad_checksum"), 0, "AMF report: {a}");
    assert!(
        num(&a, "sctp.packets_received") >= 16 * 3,
        "AMF report: {a}"
    );
    // gNBs still known at exit (the emulators may have shut down first) must be ready.
    for g in a["gnbs"].as_array().into_iter().flatten() {
        assert_eq!(g["state"], "ready", "{g}");
    }
}

#[test]
fn unknown_plmn_is_refused() {
    let amf = Amf::start(
        None,
        &[
            "--transport",
            "udp",
            "--n2-addr",
            "127.0.0.62",
            "--udp-port",
            "19962",
        ],
    );
    let (done, v) = ran(
        None,
        &[
            "--gnbs",
            "2",
            "--transport",
            "udp",
            "--amf",
            "127.0.0.62:19962",
            "--local-addr",
            "127.0.0.62",
            "--timeout",
            "20",
            "--mcc",
            "999",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(
        done.code(),
        Some(1),
        "ran must fail; report: {v}\nstderr:\n{}",
        done.stderr
    );
    assert_eq!(
        (num(&v, "ng_setup_ok"), num(&v, "ng_setup_failed")),
        (0, 2),
        "{v}"
    );
    let failures = v["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 2, "{v}");
    for f in failures {
        let cause = f["cause"].as_str().unwrap_or_default();
        // TS 38.413 §9.3.1.2 CauseMisc unknown-PLMN-or-SNPN (Rel-16 on; "unknown-PLMN" before).
        assert!(
            cause.to_ascii_lowercase().contains("unknown-plmn"),
            "cause {cause:?} in {v}"
        );
    }
    let (_, a) = amf.stop();
    assert_eq!(amf_setup_failed(&a), 2, "AMF report: {a}");
    if let Some(n) = a["n2"]["ng_setup_failed"]["unknown_plmn"].as_u64() {
        assert_eq!(n, 2, "failures by reason: {a}");
    }
    assert_eq!(num(&a, "n2.ng_setup_ok"), 0, "AMF report: {a}");
}
