//! Creating a TUN device: the one ioctl (`TUNSETIFF`, linux/if_tun.h) that neither std nor
//! nix wraps safely, and the `ip` command that configures it (addresses, routes, rules).
//! Shared by the UPF's user-space datapath and the RAN emulator's per-UE TUNs. This module
//! is the only place in the crate with `unsafe`.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::process::Command;

/// `struct ifreq` is 40 octets on 64-bit Linux: the name (IFNAMSIZ = 16), then a union
/// whose first member for TUNSETIFF is `short ifr_flags`.
const IFREQ_LEN: usize = 40;
const IFNAMSIZ: usize = 16;

/// Opens `/dev/net/tun` and attaches it to TUN device `name` (layer 3, no packet-info
/// prefix, created if missing) in the calling thread's network namespace. Reads return one
/// IP packet each, writes inject one. The device goes away when the file is closed.
pub fn open(name: &str, nonblocking: bool) -> io::Result<File> {
    if name.is_empty() || name.len() >= IFNAMSIZ || name.contains(['/', '\0', ' ']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("TUN name {name:?}"),
        ));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(if nonblocking { libc::O_NONBLOCK } else { 0 })
        .open("/dev/net/tun")?;
    let mut ifr = [0u8; IFREQ_LEN];
    ifr[..name.len()].copy_from_slice(name.as_bytes());
    let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    ifr[IFNAMSIZ..IFNAMSIZ + 2].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: `file` is an open /dev/net/tun descriptor for the whole call; the argument
    // points to a live, writable 40-octet buffer laid out as `struct ifreq` (NUL-terminated
    // name of < 16 octets, flags at offset 16), which is all TUNSETIFF reads or writes.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, ifr.as_mut_ptr()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Runs `ip [-n NETNS] ARGS`; a failure carries the command and what `ip` said.
pub fn ip(netns: Option<&str>, args: &[&str]) -> io::Result<()> {
    let mut c = Command::new("ip");
    if let Some(ns) = netns {
        c.args(["-n", ns]);
    }
    let out = c.args(args).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_are_refused_before_any_syscall() {
        for n in ["", "a/b", "sixteen-chars-xx", "nul\0"] {
            assert_eq!(
                open(n, true).map(|_| ()).unwrap_err().kind(),
                io::ErrorKind::InvalidInput,
                "{n:?}"
            );
        }
    }
}
