//! What the fast-path tests share: the XDP datapath attached in a test bed's upf namespace.
#![allow(clippy::unwrap_used)]

use upf::userspace::testbed::{Host, Testbed, N3_UPF};
use upf_xdp::{XdpDatapath, XdpOptions};

/// Attaches the fast path to N3 and N6 in `bed`'s upf namespace, after `xdp_pass` on the
/// peers' ends (frames redirected to a veth reach a peer only if it runs XDP itself).
pub(crate) fn attach_xdp(bed: &Testbed) -> XdpDatapath {
    bed.attach_peer_pass().unwrap();
    XdpDatapath::attach(&XdpOptions {
        netns: Some(bed.ns(Host::Upf).to_owned()),
        n3_iface: bed.n3_upf.clone(),
        n6_iface: bed.n6_upf.clone(),
        n3_addr: N3_UPF,
    })
    .unwrap()
}
