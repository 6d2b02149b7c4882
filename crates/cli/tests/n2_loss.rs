//! N2 across a lossy link: 5% of the packets dropped in each direction (nftables on the
//! input hook of each namespace), 64 gNB emulators. Every NG Setup must complete, the loss
//! must really have happened (nft drop counters), SCTP must have retransmitted, and the AMF
//! must have seen each NG Setup Request exactly once. Needs root.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{amf_setup_failed, assert_all_ok, num, ran, Amf};
use testkit::netns::{Pair, Side};
use testkit::nft::{self, Matcher};
use testkit::privilege;

const GNBS: u64 = 64;
const LOSS_PERCENT: u8 = 5;

/// Runs the AMF in A and the emulators in B with `amf_args`/`ran_args`, loss installed by
/// the caller, and checks the outcome against the drop counters of `guards`.
fn run_lossy(
    pair: &Pair,
    transport: &str,
    amf_args: &[&str],
    ran_args: &[&str],
    guards: &[nft::LossGuard],
) {
    let amf = Amf::start(Some(pair.name(Side::A)), amf_args);
    let gnbs = GNBS.to_string();
    let mut args = vec!["--gnbs", &gnbs, "--transport", transport, "--timeout", "90"];
    args.extend_from_slice(ran_args);
    let (done, v) = ran(Some(pair.name(Side::B)), &args, Duration::from_secs(150));
    let amf_log = amf.stderr();
    let (_, a) = amf.stop();
    for g in guards {
        let c = g.counters().unwrap();
        println!("{}: {c:?}", g.table());
        assert!(
            c.dropped > 0,
            "no packet was dropped by {}: {c:?}",
            g.table()
        );
    }
    assert_all_ok(&done, &v, GNBS);
    let retrans = num(&v, "sctp.retransmissions")
        + num(&v, "sctp.fast_retransmits")
        + num(&a, "sctp.retransmissions")
        + num(&a, "sctp.fast_retransmits");
    println!("ran sctp: {}\namf sctp: {}", v["sctp"], a["sctp"]);
    assert!(
        retrans > 0,
        "loss without retransmission?\nran: {v}\namf: {a}\namf log:\n{amf_log}"
    );
    // No DATA lost or duplicated up to the application: one request, one response per gNB.
    assert_eq!(num(&a, "n2.ng_setup_ok"), GNBS, "AMF report: {a}");
    assert_eq!(amf_setup_failed(&a), 0, "AMF report: {a}");
    assert_eq!(
        num(&a, "sctp.bad_checksum") + num(&v, "sctp.bad_checksum"),
        0
    );
}

#[test]
fn raw_sctp_survives_five_percent_loss() {
    if !privilege::require("n2_loss raw") {
        return;
    }
    let pair = Pair::new("lossraw").unwrap();
    let amf_ip = pair.addr(Side::A).to_string();
    let ran_ip = pair.addr(Side::B).to_string();
    let guards = [
        nft::loss(Some(pair.name(Side::A)), LOSS_PERCENT, &Matcher::Sctp).unwrap(),
        nft::loss(Some(pair.name(Side::B)), LOSS_PERCENT, &Matcher::Sctp).unwrap(),
    ];
    run_lossy(
        &pair,
        "raw",
        &["--transport", "raw", "--n2-addr", &amf_ip],
        &["--amf", &amf_ip, "--local-addr", &ran_ip],
        &guards,
    );
}

#[test]
fn udp_encapsulation_survives_five_percent_loss() {
    if !privilege::require("n2_loss udp") {
        return;
    }
    const PORT: u16 = 19_971;
    let pair = Pair::new("lossudp").unwrap();
    let amf_ip = pair.addr(Side::A).to_string();
    let ran_ip = pair.addr(Side::B).to_string();
    let guards = [
        nft::loss(
            Some(pair.name(Side::A)),
            LOSS_PERCENT,
            &Matcher::UdpDport(PORT),
        )
        .unwrap(),
        nft::loss(
            Some(pair.name(Side::B)),
            LOSS_PERCENT,
            &Matcher::UdpSport(PORT),
        )
        .unwrap(),
    ];
    let port = PORT.to_string();
    let amf_at = format!("{amf_ip}:{PORT}");
    run_lossy(
        &pair,
        "udp",
        &[
            "--transport",
            "udp",
            "--n2-addr",
            &amf_ip,
            "--udp-port",
            &port,
        ],
        &["--amf", &amf_at, "--local-addr", &ran_ip],
        &guards,
    );
}
