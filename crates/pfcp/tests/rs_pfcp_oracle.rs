//! Oracle: the independent `rs-pfcp` crate must decode every hand-built vector to the same
//! message type, and what it re-encodes (IE order may differ) must decode here to the same
//! values as the original bytes.
#![allow(clippy::unwrap_used)]

mod common;

use pfcp::PfcpMessage;

#[test]
fn rs_pfcp_agrees_on_every_vector() {
    for (name, v) in common::pfcp_vectors() {
        let theirs = rs_pfcp::message::parse(&v).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(theirs.msg_type_code(), v[1], "{name}");
        let ours = PfcpMessage::parse(&v).unwrap();
        let re = theirs.marshal();
        let again = PfcpMessage::parse(&re).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            again.message, ours.message,
            "{name}: values differ after rs-pfcp"
        );
        assert_eq!(again.header.seid, ours.header.seid, "{name}");
        assert_eq!(again.header.sequence, ours.header.sequence, "{name}");
    }
}
