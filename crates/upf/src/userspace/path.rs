//! [`TunDatapath`]: the sockets/TUN user plane and its packet thread.
//!
//! The rule tables and the per-packet decisions are in [`super::rules`] (shared with the
//! AF_XDP path); this file does the I/O: G-PDUs from the N3 socket, inner packets to and
//! from the TUN device.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::thread::JoinHandle;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::rules::{self, DownlinkVerdict, RuleHandle, Rules, TunCounters, UplinkVerdict};
use crate::userspace::rules::TunReason;

/// The GTP-U port (TS 29.281 §4.4.2).
pub const GTPU_PORT: u16 = 2152;
/// Packets read from one source per wake-up before the other gets a turn.
const BATCH: usize = 64;

/// Where to run the user-space path.
#[derive(Debug, Clone)]
pub struct TunOptions {
    /// Network namespace (`ip netns` name), `None` for the current one.
    pub netns: Option<String>,
    /// The UPF's N3 address: the GTP-U socket binds it, port 2152.
    pub n3_addr: Ipv4Addr,
    /// Name of the TUN device to create.
    pub tun_name: String,
    /// The UE pool routed into the TUN device (address, prefix length).
    pub ue_pool: (Ipv4Addr, u8),
    /// Receive buffer of the N3 socket, bytes ([`DEFAULT_N3_RECV_BUFFER`]); 0 keeps the
    /// kernel's default (`net.core.rmem_default`).
    pub n3_recv_buffer: usize,
}

/// The N3 socket's receive buffer unless told otherwise. The kernel's default (208 KiB)
/// holds ~1400 G-PDUs of 128 B; a packet thread descheduled for a few milliseconds while
/// the generator keeps sending overflows it. Measured with `steer5g bench upf --rates
/// ... --paths tun --n3-rcvbuf 0|4194304` (docs/PERFORMANCE.md, "Which receive-path
/// tunings pay on our NFs?").
pub const DEFAULT_N3_RECV_BUFFER: usize = 4 << 20;

/// Asks for `bytes` of receive buffer: past `net.core.rmem_max` when privileged
/// (`SO_RCVBUFFORCE`, CAP_NET_ADMIN, which the TUN device needs anyway), capped there
/// otherwise. A socket that keeps a smaller buffer still works, so failures are logged.
fn size_recv_buffer(sock: &UdpSocket, bytes: usize) {
    use nix::sys::socket::{getsockopt, setsockopt, sockopt};
    if setsockopt(sock, sockopt::RcvBufForce, &bytes).is_err() {
        if let Err(e) = setsockopt(sock, sockopt::RcvBuf, &bytes) {
            tracing::warn!(error = %e, "N3 socket: SO_RCVBUF");
        }
    }
    // The kernel reports twice what it granted (its bookkeeping included).
    let got = getsockopt(sock, sockopt::RcvBuf).unwrap_or(0) / 2;
    if got < bytes {
        tracing::warn!(
            granted = got,
            asked = bytes,
            "N3 socket: receive buffer capped by net.core.rmem_max (no CAP_NET_ADMIN)"
        );
    }
}

/// The sockets/TUN datapath. Dropping it stops the packet thread and removes the device.
#[derive(Debug)]
pub struct TunDatapath {
    handle: RuleHandle,
    thread: Option<JoinHandle<Option<()>>>,
}

impl TunDatapath {
    /// Creates the TUN device and the N3 socket in `opts.netns`, routes the UE pool into
    /// the device and starts the packet thread.
    pub fn start(opts: &TunOptions) -> io::Result<Self> {
        let ns = opts.netns.as_deref();
        let name = opts.tun_name.clone();
        let n3 = opts.n3_addr;
        let (tun, sock) = super::netns::run_in(ns, move || -> io::Result<(File, UdpSocket)> {
            let tun = super::tun::open(&name, true)?;
            let sock = UdpSocket::bind(SocketAddrV4::new(n3, GTPU_PORT))?;
            sock.set_nonblocking(true)?;
            Ok((tun, sock))
        })??;
        if opts.n3_recv_buffer > 0 {
            size_recv_buffer(&sock, opts.n3_recv_buffer);
        }
        super::tun::ip(ns, &["link", "set", &opts.tun_name, "up"])?;
        let pool = format!("{}/{}", opts.ue_pool.0, opts.ue_pool.1);
        super::tun::ip(ns, &["route", "replace", &pool, "dev", &opts.tun_name])?;
        let (handle, rules) = rules::channel();
        let worker = Worker {
            sock,
            tun,
            rules,
            out: Vec::with_capacity(2048),
            released: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("upf-tun".to_owned())
            .spawn(move || {
                worker.run();
                Some(())
            })?;
        Ok(TunDatapath {
            handle,
            thread: Some(thread),
        })
    }

    /// The per-reason counters.
    pub fn counters(&self) -> TunCounters {
        self.handle.counters()
    }

    /// CPU time the packet thread has used so far (CLOCK_THREAD_CPUTIME_ID), in ns.
    pub fn cpu_ns(&self) -> u64 {
        self.handle.cpu_ns()
    }
}

impl Drop for TunDatapath {
    fn drop(&mut self) {
        self.handle.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

crate::datapath_via_rule_handle!(TunDatapath, "tun", handle);

struct Worker {
    sock: UdpSocket,
    tun: File,
    rules: Rules,
    out: Vec<u8>,
    released: Vec<Vec<u8>>,
}

impl Worker {
    fn run(mut self) {
        let mut buf = vec![0u8; 65536];
        while !self.rules.stopped() {
            let (sock_ready, tun_ready) = {
                let mut fds = [
                    PollFd::new(self.sock.as_fd(), PollFlags::POLLIN),
                    PollFd::new(self.tun.as_fd(), PollFlags::POLLIN),
                ];
                // A short timeout bounds how late a stop request or a rule change is seen
                // when no traffic wakes the thread. Plain poll(), not busy polling: with
                // `net.core.busy_poll`/`busy_read` at 50 µs (and NAPI on the veths, which
                // busy polling needs) the path took 1.75-2.3x the CPU per packet at 20k/s,
                // +24 % at 50k/s and +10 % at 80k/s, for the same packets delivered
                // (docs/PERFORMANCE.md, "Which receive-path tunings pay on our NFs?").
                match poll(&mut fds, PollTimeout::from(20u16)) {
                    Ok(_) => {}
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => {
                        self.rules.count(TunReason::IoError);
                        break;
                    }
                }
                let ready = |f: &PollFd<'_>| f.revents().is_some_and(|r| !r.is_empty());
                (ready(&fds[0]), ready(&fds[1]))
            };
            self.rules.apply_updates(&mut self.released);
            for p in std::mem::take(&mut self.released) {
                self.downlink(&p);
            }
            if sock_ready {
                for _ in 0..BATCH {
                    match self.sock.recv_from(&mut buf) {
                        Ok((n, from)) => self.uplink(&buf[..n.min(buf.len())], from),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            self.rules.count(TunReason::IoError);
                            break;
                        }
                    }
                }
            }
            if tun_ready {
                for _ in 0..BATCH {
                    match self.tun.read(&mut buf) {
                        Ok(n) => {
                            let pkt = &buf[..n.min(buf.len())];
                            self.downlink(pkt);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            self.rules.count(TunReason::IoError);
                            break;
                        }
                    }
                }
            }
            self.rules.record_cpu();
        }
    }

    fn uplink(&mut self, dgram: &[u8], from: SocketAddr) {
        let r = match self.rules.uplink(dgram) {
            UplinkVerdict::Done => return,
            UplinkVerdict::Echo(seq) => match self.sock.send_to(&rules::echo_response(seq), from) {
                Ok(_) => TunReason::EchoAnswered,
                Err(_) => TunReason::IoError,
            },
            // A TUN write takes one whole packet or fails; a short count would be a bug.
            UplinkVerdict::Forward(inner) => match (&self.tun).write(inner) {
                Ok(n) if n == inner.len() => TunReason::UlForwarded,
                Ok(_) | Err(_) => TunReason::IoError,
            },
        };
        self.rules.count(r);
    }

    fn downlink(&mut self, pkt: &[u8]) {
        let DownlinkVerdict::Forward {
            teid,
            peer,
            qfi,
            inner,
        } = self.rules.downlink(pkt)
        else {
            return;
        };
        rules::encap(&mut self.out, teid, qfi, inner);
        let r = match self
            .sock
            .send_to(&self.out, SocketAddrV4::new(peer, GTPU_PORT))
        {
            Ok(_) => TunReason::DlForwarded,
            Err(_) => TunReason::IoError,
        };
        self.rules.count(r);
    }
}
