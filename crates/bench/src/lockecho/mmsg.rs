//! Batched datagram I/O for the echo client: `sendmmsg(2)` and `recvmmsg(2)` on connected
//! UDP sockets, so that the client pays one system call per batch rather than one per
//! datagram and leaves the cores it shares to the workers. Neither std, tokio nor socket2
//! offers the batch calls, so this is the one place of the bench that calls libc directly
//! (it also holds `--realtime`'s `sched_setscheduler(2)`).
#![allow(unsafe_code)]

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// Largest batch one call moves; bigger slices are moved in several calls.
pub(crate) const MAX_BATCH: usize = 64;

/// Sends every datagram of `msgs` that the socket takes without blocking, in order; returns
/// how many it took (fewer than `msgs.len()` when the send buffer filled).
pub(crate) fn send_batch<B: AsRef<[u8]>>(sock: &UdpSocket, msgs: &[B]) -> io::Result<usize> {
    let mut sent = 0;
    for chunk in msgs.chunks(MAX_BATCH) {
        let mut iov: [libc::iovec; MAX_BATCH] = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; MAX_BATCH];
        // SAFETY: an all-zero `mmsghdr` is a valid value (null name and control, no iovecs,
        // no flags); the fields that matter are set below.
        let mut hdrs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
        for ((m, v), h) in chunk.iter().zip(iov.iter_mut()).zip(hdrs.iter_mut()) {
            // The kernel only reads through a send iovec; the cast to `*mut` is what the C
            // type asks for.
            let m = m.as_ref();
            v.iov_base = m.as_ptr() as *mut libc::c_void;
            v.iov_len = m.len();
            h.msg_hdr.msg_iov = v;
            h.msg_hdr.msg_iovlen = 1;
        }
        // `chunk.len()` is at most MAX_BATCH (64), which fits in a c_uint.
        let n = chunk.len() as libc::c_uint;
        // SAFETY: `hdrs[..n]` are initialised headers, each pointing at one iovec of `iov`,
        // each pointing at the `iov_len` readable bytes of one message of `chunk`; all of them outlive the call, which
        // does not keep the pointers. The socket is connected, so no name is given.
        let r =
            unsafe { libc::sendmmsg(sock.as_raw_fd(), hdrs.as_mut_ptr(), n, libc::MSG_DONTWAIT) };
        if r < 0 {
            let e = io::Error::last_os_error();
            // A full send buffer ends the batch; what went out so far counts.
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(sent),
                _ => Err(e),
            };
        }
        // r is 0..=n, non-negative here.
        let r = r as usize;
        sent += r;
        if r < chunk.len() {
            break;
        }
    }
    Ok(sent)
}

/// Receives up to `bufs.len()` (at most [`MAX_BATCH`]) datagrams that are already queued,
/// without blocking; writes each one's length to `lens` and returns how many arrived (0
/// when none was queued).
pub(crate) fn recv_batch<B: AsMut<[u8]>>(
    sock: &UdpSocket,
    bufs: &mut [B],
    lens: &mut [usize],
) -> io::Result<usize> {
    let want = bufs.len().min(lens.len()).min(MAX_BATCH);
    if want == 0 {
        return Ok(0);
    }
    let mut iov: [libc::iovec; MAX_BATCH] = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX_BATCH];
    // SAFETY: an all-zero `mmsghdr` is a valid value; see `send_batch`.
    let mut hdrs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for ((b, v), h) in bufs
        .iter_mut()
        .zip(iov.iter_mut())
        .zip(hdrs.iter_mut())
        .take(want)
    {
        let b = b.as_mut();
        v.iov_base = b.as_mut_ptr().cast();
        v.iov_len = b.len();
        h.msg_hdr.msg_iov = v;
        h.msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `hdrs[..want]` each point at one iovec of `iov`, each at the `iov_len` writable bytes of
    // a distinct buffer of `bufs`, all borrowed mutably for the duration of the call; no name
    // or control buffer is asked for; a null timeout with MSG_DONTWAIT never blocks.
    let r = unsafe {
        libc::recvmmsg(
            sock.as_raw_fd(),
            hdrs.as_mut_ptr(),
            // want <= MAX_BATCH (64).
            want as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
            _ => Err(e),
        };
    }
    // r is 0..=want here.
    let r = (r as usize).min(want);
    for ((l, h), v) in lens.iter_mut().zip(hdrs.iter()).zip(iov.iter()).take(r) {
        // The kernel writes at most iov_len bytes; a truncated datagram reports iov_len.
        *l = (h.msg_len as usize).min(v.iov_len);
    }
    Ok(r)
}

/// Puts the calling thread in the `SCHED_FIFO` class at `priority` (1..=99): no ordinary
/// thread preempts it, so a core it keeps busy is as good as dedicated.
pub(crate) fn set_fifo(priority: i32) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `p` is a valid `sched_param` that outlives the call, which only reads it; on
    // Linux pid 0 names the calling thread.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Puts the calling thread back under the normal time-sharing policy (`SCHED_OTHER`, the
/// priority it must have there is 0), after a `--realtime` measurement ran on it.
pub(crate) fn set_normal() -> io::Result<()> {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: as in `set_fifo`: a valid `sched_param` that outlives the call; pid 0 is the
    // calling thread.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The calling thread's scheduling policy (`libc::SCHED_*`).
#[cfg(test)]
pub(crate) fn policy() -> io::Result<i32> {
    // SAFETY: no pointers; pid 0 is the calling thread.
    let r = unsafe { libc::sched_getscheduler(0) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        (a, b)
    }

    #[test]
    fn a_batch_arrives_whole_and_in_order() {
        let (a, b) = pair();
        let msgs: Vec<[u8; 16]> = (0..100u8).map(|i| [i; 16]).collect();
        assert_eq!(send_batch(&a, &msgs).unwrap(), 100);
        let mut got = Vec::new();
        let mut bufs = [[0u8; 64]; MAX_BATCH];
        let mut lens = [0usize; MAX_BATCH];
        // Loopback delivers synchronously, so everything is queued already.
        loop {
            let n = recv_batch(&b, &mut bufs, &mut lens).unwrap();
            if n == 0 {
                break;
            }
            for (buf, &len) in bufs.iter().zip(&lens).take(n) {
                assert_eq!(len, 16);
                got.push(buf[0]);
            }
        }
        assert_eq!(got, (0..100u8).collect::<Vec<_>>());
    }

    #[test]
    fn fifo_and_back_on_a_thread_of_its_own() {
        // Without CAP_SYS_NICE `set_fifo` fails and the thread stays normal; with it, the
        // thread becomes FIFO and `set_normal` brings it back. Either way it ends normal.
        std::thread::spawn(|| {
            match set_fifo(1) {
                Ok(()) => assert_eq!(policy().unwrap(), libc::SCHED_FIFO),
                Err(e) => assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}"),
            }
            set_normal().unwrap();
            assert_eq!(policy().unwrap(), libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn nothing_queued_is_zero_not_an_error() {
        let (_a, b) = pair();
        let mut bufs = [[0u8; 64]; 4];
        let mut lens = [0usize; 4];
        assert_eq!(recv_batch(&b, &mut bufs, &mut lens).unwrap(), 0);
        assert_eq!(recv_batch(&b, &mut bufs[..0], &mut lens).unwrap(), 0);
    }

    #[test]
    fn long_datagrams_are_cut_to_the_buffer() {
        let (a, b) = pair();
        a.send(&[7u8; 100]).unwrap();
        let mut bufs = [[0u8; 8]; 2];
        let mut lens = [0usize; 2];
        assert_eq!(recv_batch(&b, &mut bufs, &mut lens).unwrap(), 1);
        assert_eq!(lens[0], 8);
        assert_eq!(bufs[0], [7u8; 8]);
    }
}
