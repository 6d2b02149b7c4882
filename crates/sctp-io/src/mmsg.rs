//! `sendmmsg(2)` with a destination per datagram: the packets one flush of an endpoint
//! produces (DATA for several associations, SACKs, heartbeats) leave in one system call
//! instead of one `sendto` each. Neither std, tokio nor socket2 offers the batch call.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;

use socket2::SockAddr;

/// Largest batch one call moves (the kernel's own cap, UIO_MAXIOV, is far above).
pub(crate) const MAX_BATCH: usize = 64;

/// Sends `batch[..min(len, MAX_BATCH)]` in one non-blocking `sendmmsg` on `fd`, each
/// datagram to its own address. Returns how many the kernel took, in order; an error is the
/// first datagram's (WouldBlock when the send buffer is full), as `sendmmsg` reports it.
pub(crate) fn send_to_many(fd: RawFd, batch: &[(SockAddr, &[u8])]) -> io::Result<usize> {
    let n = batch.len().min(MAX_BATCH);
    if n == 0 {
        return Ok(0);
    }
    let mut iov = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX_BATCH];
    // SAFETY: an all-zero `mmsghdr` is a valid value (null name and control, no iovecs, no
    // flags); the fields that matter are set below.
    let mut hdrs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for (((addr, data), v), h) in batch.iter().zip(iov.iter_mut()).zip(hdrs.iter_mut()) {
        // The kernel only reads through a send iovec and name; `*mut` is what the C type asks.
        v.iov_base = data.as_ptr() as *mut libc::c_void;
        v.iov_len = data.len();
        h.msg_hdr.msg_iov = v;
        h.msg_hdr.msg_iovlen = 1;
        h.msg_hdr.msg_name = addr.as_ptr() as *mut libc::c_void;
        h.msg_hdr.msg_namelen = addr.len();
    }
    // SAFETY: `hdrs[..n]` are initialised headers, each pointing at one iovec of `iov` (each
    // at the readable bytes of one datagram of `batch`) and at the address of its `SockAddr`;
    // all of them outlive the call, which keeps no pointer. n <= MAX_BATCH fits a c_uint.
    let r = unsafe { libc::sendmmsg(fd, hdrs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // 0 <= r <= n here.
    Ok(r as usize)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn each_datagram_reaches_its_own_address_in_order() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx: Vec<UdpSocket> = (0..2)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let payloads: Vec<Vec<u8>> = (0..70u8).map(|i| vec![i; 1 + usize::from(i)]).collect();
        let addrs: Vec<SockAddr> = rx
            .iter()
            .map(|s| SockAddr::from(s.local_addr().unwrap()))
            .collect();
        let batch: Vec<(SockAddr, &[u8])> = payloads
            .iter()
            .enumerate()
            .map(|(i, p)| (addrs[i % 2].clone(), p.as_slice()))
            .collect();
        // One call takes at most MAX_BATCH; the rest go in a second.
        let first = send_to_many(tx.as_raw_fd(), &batch).unwrap();
        assert_eq!(first, MAX_BATCH);
        assert_eq!(
            send_to_many(tx.as_raw_fd(), &batch[first..]).unwrap(),
            70 - MAX_BATCH
        );
        assert_eq!(send_to_many(tx.as_raw_fd(), &[]).unwrap(), 0);
        let mut buf = [0u8; 128];
        for i in 0..70u8 {
            let (len, from) = rx[usize::from(i % 2)].recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..len], &payloads[usize::from(i)][..]);
            assert_eq!(from, tx.local_addr().unwrap());
        }
    }
}
