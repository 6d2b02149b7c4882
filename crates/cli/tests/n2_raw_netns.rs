//! N2 over native SCTP (raw IP protocol 132) between two network namespaces: the AMF in one,
//! 16 gNB emulators in the other. Needs root.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use common::num;
use procs::raw_ng_setups;
use testkit::netns::Pair;
use testkit::privilege;

#[test]
fn sixteen_gnbs_set_up_over_raw_sctp() {
    if !privilege::require("n2_raw_netns") {
        return;
    }
    let pair = Pair::new("n2raw").unwrap();
    let (amf, v) = raw_ng_setups(&pair, 16);
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
