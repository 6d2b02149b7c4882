//! Attaching `bpf/xdp_pass.c` to an interface of the current network namespace.
//!
//! A veth only hands on frames its peer sent with `XDP_TX` or `XDP_REDIRECT` when the
//! receiving end runs an XDP program itself (KERNEL.md §3); `xdp_pass` is that program.
//! It is attached through netlink (`bpf_xdp_attach`), not a BPF link, so it stays attached
//! after this process exits: `steer5g lab up` is a short-lived command. [`detach`] (or
//! `ip link set dev IF xdp off`, or deleting the interface) removes it.

use std::os::fd::AsFd;

use libbpf_rs::{Xdp, XdpFlags};

use crate::{object, Error};

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xdp_pass.bpf.o"));
const PROG_NAME: &str = "xdp_pass";

/// Where in the driver the program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// In the driver (`XDP_FLAGS_DRV_MODE`). veth supports it, and only a native program
    /// makes a veth accept `XDP_TX`/`XDP_REDIRECT` frames from its peer.
    Native,
    /// On the generic skb path (`XDP_FLAGS_SKB_MODE`), for devices without driver
    /// support such as `lo`.
    Generic,
}

impl Mode {
    fn flags(self) -> XdpFlags {
        match self {
            Mode::Native => XdpFlags::DRV_MODE,
            Mode::Generic => XdpFlags::SKB_MODE,
        }
    }
}

/// Attaches `xdp_pass` to interface `ifindex` in `mode`, replacing any program already
/// there in that mode, and returns the kernel's id of the attached program.
pub fn attach_pass(ifindex: u32, mode: Mode) -> Result<u32, Error> {
    let ifindex = to_ifindex(ifindex)?;
    let object = load()?;
    let prog = object::program(&object, PROG_NAME)?;
    let xdp = Xdp::new(prog.as_fd());
    xdp.attach(ifindex, mode.flags())
        .map_err(|e| Error::Xdp(format!("attach to ifindex {ifindex}: {e}")))?;
    xdp.query_id(ifindex, mode.flags())
        .map_err(|e| Error::Xdp(format!("query ifindex {ifindex}: {e}")))
}

/// Removes whatever XDP program is attached to `ifindex` in `mode`. Succeeds when none is.
pub fn detach(ifindex: u32, mode: Mode) -> Result<(), Error> {
    let ifindex = to_ifindex(ifindex)?;
    // bpf_xdp_detach ignores the program; libbpf-rs still wants one to build its handle.
    let object = load()?;
    let prog = object::program(&object, PROG_NAME)?;
    Xdp::new(prog.as_fd())
        .detach(ifindex, mode.flags())
        .map_err(|e| Error::Xdp(format!("detach from ifindex {ifindex}: {e}")))
}

/// The id of the program attached to `ifindex` in `mode`, `None` when there is none.
pub fn attached_id(ifindex: u32, mode: Mode) -> Result<Option<u32>, Error> {
    let ifindex = to_ifindex(ifindex)?;
    let object = load()?;
    let prog = object::program(&object, PROG_NAME)?;
    let id = Xdp::new(prog.as_fd())
        .query_id(ifindex, mode.flags())
        .map_err(|e| Error::Xdp(format!("query ifindex {ifindex}: {e}")))?;
    Ok((id != 0).then_some(id))
}

fn to_ifindex(ifindex: u32) -> Result<i32, Error> {
    match i32::try_from(ifindex) {
        Ok(i) if i > 0 => Ok(i),
        _ => Err(Error::Xdp(format!("no such ifindex {ifindex}"))),
    }
}

fn load() -> Result<libbpf_rs::Object, Error> {
    object::load(OBJECT, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_is_embedded() {
        // CI builds with clang: an empty object would make every lab lose XDP silently.
        assert!(!OBJECT.is_empty(), "xdp_pass.bpf.o was not built");
    }

    #[test]
    fn bad_ifindex_is_an_error_not_a_panic() {
        assert!(matches!(attach_pass(0, Mode::Native), Err(Error::Xdp(_))));
        assert!(matches!(
            detach(u32::MAX, Mode::Generic),
            Err(Error::Xdp(_))
        ));
    }
}
