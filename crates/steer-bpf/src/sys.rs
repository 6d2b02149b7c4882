//! The one syscall libbpf and socket2 do not wrap, and the capability check: the seam where
//! this crate touches the kernel directly, kept in one place so that the `unsafe` it needs is
//! too.

// `unsafe` is allowed here, and only here: `setsockopt` takes a raw pointer. The pointer is
// to a live local `c_int` and the length is its size, so the kernel reads exactly that value.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `CAP_SYS_ADMIN` (linux/capability.h): loads BPF on kernels before 5.8 and still does.
const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_BPF` (linux/capability.h, since 5.8).
const CAP_BPF: u32 = 39;

/// `setsockopt(sock, SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF, &prog)`: attaches the program to
/// the whole reuseport group `sock` belongs to (socket(7)).
pub(crate) fn attach_reuseport_prog(sock: BorrowedFd<'_>, prog: BorrowedFd<'_>) -> io::Result<()> {
    let fd: libc::c_int = prog.as_raw_fd();
    // SAFETY: `sock` is an open socket for the duration of the call (borrowed), the value
    // pointer is to `fd` on our stack and `optlen` is its exact size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_EBPF,
            std::ptr::from_ref(&fd).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// True when the effective capabilities allow loading BPF programs (`CAP_BPF` or
/// `CAP_SYS_ADMIN`); false also when `/proc/self/status` cannot be read.
pub(crate) fn may_load_bpf() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| cap_eff(&s))
        .is_some_and(|caps| caps & (1 << CAP_BPF | 1 << CAP_SYS_ADMIN) != 0)
}

/// The `CapEff:` hex mask in the text of `/proc/PID/status`.
fn cap_eff(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_eff_parses() {
        assert_eq!(
            cap_eff("Name:\tx\nCapEff:\t000001fffeffffff\n"),
            Some(0x1ff_feff_ffff)
        );
        assert_eq!(cap_eff("CapEff:\tnope\n"), None);
        assert_eq!(cap_eff(""), None);
    }

    #[test]
    fn attach_to_a_non_socket_fails_cleanly() {
        let f = std::fs::File::open("/proc/self/status");
        let Ok(f) = f else { return };
        let fd = std::os::fd::AsFd::as_fd(&f);
        assert!(attach_reuseport_prog(fd, fd).is_err());
    }
}
