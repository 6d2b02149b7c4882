//! N2 over native SCTP (raw IP protocol 132) between two network namespaces: the AMF in one,
//! 16 gNB emulators in the other. Needs root.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{assert_all_ok, num, ran, Amf};
use testkit::netns::{Pair, Side};
use testkit::privilege;

#[test]
fn sixteen_gnbs_set_up_over_raw_sctp() {
    if !privilege::require("n2_raw_netns") {
        return;
    }
    let pair = Pair::new("n2raw").unwrap();
    let (amf_ip, ran_ip) = (
        pair.addr(Side::A).to_string(),
        pair.addr(Side::B).to_string(),
    );
    let amf = Amf::start(
        Some(pair.name(Side::A)),
        &["--transport", "raw", "--n2-addr", &amf_ip],
    );
    let (done, v) = ran(
        Some(pair.name(Side::B)),
        &[
            "--gnbs",
            "16",
            "--transport",
            "raw",
            "--amf",
            &amf_ip,
            "--local-addr",
            &ran_ip,
            "--timeout",
            "20",
        ],
        Duration::from_secs(60),
    );
    assert_all_ok(&done, &v, 16);
    assert_eq!(v["transport"], "raw", "{v}");
    assert_eq!(num(&v, "sctp.bad_checksum"), 0, "{v}");
    let (_, a) = amf.stop();
    assert_eq!(num(&a, "n2.ng_setup_ok"), 16, "AMF report: {a}");
    assert_eq!(num(&a, "sctp.bad_checksum"), 0, "AMF report: {a}");
    assert_eq!(
        num(&a, "sctp.associations_established"),
        16,
        "AMF report: {a}"
    );
}
