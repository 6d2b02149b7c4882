//! The per-UE TUN devices of `steer5g ran --tun` (what UERANSIM calls `uesimtun0`) and the
//! loop that relays between them and the gNB's N3 socket, with [`super::relay`] deciding
//! what each packet becomes.
//!
//! Each device carries its UE's address (/32) and a policy route: `ip rule from UE lookup
//! TABLE` with a default route into the device in `TABLE`, so a socket bound to the UE's
//! address (`curl --interface`, `iperf3 -B`) leaves through its own UE's tunnel while the
//! rest of the namespace routes as before. A [`UeTun`] removes its rule when dropped; the
//! device and the routes through it go when its file closes, also when the process dies.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use upf::userspace::tun;

use super::relay::Relay;

/// Inner MTU of every UE device: a full-size inner packet plus its GTP-U, UDP and IPv4
/// headers (at most 56 octets with a PDU Session Container) still fits a 1500-octet N3 link,
/// and TCP's MSS follows from it on both ends.
pub const TUN_MTU: u16 = 1400;
/// Packets taken from one descriptor per wake-up, so that no device starves the others.
const BURST: usize = 256;
/// How long a poll waits when nothing arrives: bounds how late a stop request is seen.
const POLL_MS: u16 = 100;

/// One UE's TUN device in a namespace, with its address and policy route.
#[derive(Debug)]
pub struct UeTun {
    name: String,
    netns: Option<String>,
    ue_ip: Ipv4Addr,
    table: u32,
    file: File,
    rule: bool,
}

impl UeTun {
    /// Creates device `name` in `netns` (the process's own when `None`) with address
    /// `ue_ip`, and routes what `ue_ip` sends into it through routing table `table`.
    pub fn open(netns: Option<&str>, name: &str, ue_ip: Ipv4Addr, table: u32) -> io::Result<Self> {
        let owned = name.to_owned();
        let file = upf::userspace::netns::run_in(netns, move || tun::open(&owned, true))??;
        let mut t = UeTun {
            name: name.to_owned(),
            netns: netns.map(str::to_owned),
            ue_ip,
            table,
            file,
            rule: false,
        };
        // From here on a failure drops `t`, which undoes what was done.
        let ns = netns;
        let (addr, table_s, mtu) = (
            format!("{ue_ip}/32"),
            table.to_string(),
            TUN_MTU.to_string(),
        );
        tun::ip(ns, &["addr", "add", &addr, "dev", name])?;
        tun::ip(ns, &["link", "set", "dev", name, "mtu", &mtu, "up"])?;
        tun::ip(
            ns,
            &[
                "route", "replace", "default", "dev", name, "table", &table_s,
            ],
        )?;
        tun::ip(
            ns,
            &[
                "rule",
                "add",
                "from",
                &ue_ip.to_string(),
                "lookup",
                &table_s,
            ],
        )?;
        t.rule = true;
        Ok(t)
    }

    /// The device name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The UE's address on it.
    pub fn ue_ip(&self) -> Ipv4Addr {
        self.ue_ip
    }
}

impl Drop for UeTun {
    fn drop(&mut self) {
        if self.rule {
            let (ip, table) = (self.ue_ip.to_string(), self.table.to_string());
            if let Err(e) = tun::ip(
                self.netns.as_deref(),
                &["rule", "del", "from", &ip, "lookup", &table],
            ) {
                tracing::warn!("TUN {}: removing its routing rule: {e}", self.name);
            }
        }
    }
}

/// Why the relay stopped, and what it could not pass on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayOutcome {
    /// The stop flag was raised (a signal), rather than the time running out.
    pub stopped: bool,
    /// How long it relayed.
    pub elapsed: Duration,
    /// Uplink G-PDUs the N3 socket refused (full buffer, or a firewall's EPERM).
    pub send_dropped: u64,
    /// Downlink packets a TUN refused (its queue full).
    pub write_dropped: u64,
}

/// Relays between `tuns` (device `i` is session `i` of `relay`) and `sock` (the gNB's N3
/// socket) until `stop` is raised or `limit` has passed.
pub fn run(
    relay: &mut Relay,
    tuns: &[UeTun],
    sock: &UdpSocket,
    stop: &AtomicBool,
    limit: Duration,
) -> io::Result<RelayOutcome> {
    sock.set_nonblocking(true)?;
    let t0 = Instant::now();
    let mut out = RelayOutcome::default();
    let mut buf = vec![0u8; 65536];
    let mut gpdu = Vec::with_capacity(2048);
    let mut ready = vec![false; tuns.len() + 1];
    loop {
        if stop.load(Ordering::Relaxed) {
            out.stopped = true;
            break;
        }
        if t0.elapsed() >= limit {
            break;
        }
        {
            let mut fds = Vec::with_capacity(tuns.len() + 1);
            fds.push(PollFd::new(sock.as_fd(), PollFlags::POLLIN));
            fds.extend(
                tuns.iter()
                    .map(|t| PollFd::new(t.file.as_fd(), PollFlags::POLLIN)),
            );
            match poll(&mut fds, PollTimeout::from(POLL_MS)) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
            for (r, fd) in ready.iter_mut().zip(&fds) {
                *r = fd.revents().is_some_and(|e| !e.is_empty());
            }
        }
        if ready.first() == Some(&true) {
            downlink(relay, tuns, sock, &mut buf, &mut out)?;
        }
        for (i, t) in tuns.iter().enumerate() {
            if ready.get(i + 1) == Some(&true) {
                uplink(relay, i, t, sock, &mut buf, &mut gpdu, &mut out)?;
            }
        }
    }
    out.elapsed = t0.elapsed();
    Ok(out)
}

fn downlink(
    relay: &mut Relay,
    tuns: &[UeTun],
    sock: &UdpSocket,
    buf: &mut [u8],
    out: &mut RelayOutcome,
) -> io::Result<()> {
    for _ in 0..BURST {
        let len = match sock.recv(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let Some(datagram) = buf.get(..len) else {
            continue;
        };
        let Ok((session, inner)) = relay.downlink(datagram) else {
            continue;
        };
        let Some(t) = tuns.get(session) else {
            continue;
        };
        match (&t.file).write(inner) {
            Ok(_) => {}
            // A full device queue loses the packet, as a congested radio would.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => out.write_dropped += 1,
            Err(e) => return Err(io::Error::new(e.kind(), format!("TUN {}: {e}", t.name))),
        }
    }
    Ok(())
}

fn uplink(
    relay: &mut Relay,
    session: usize,
    t: &UeTun,
    sock: &UdpSocket,
    buf: &mut [u8],
    gpdu: &mut Vec<u8>,
    out: &mut RelayOutcome,
) -> io::Result<()> {
    for _ in 0..BURST {
        let len = match (&t.file).read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("TUN {}: {e}", t.name))),
        };
        let Some(packet) = buf.get(..len) else {
            continue;
        };
        let Ok(to) = relay.uplink(session, packet, gpdu) else {
            continue;
        };
        match sock.send_to(gpdu, to) {
            Ok(_) => {}
            // A full socket buffer, or a firewall's drop on the output hook (EPERM): the
            // packet is lost and TCP above recovers, as on a lossy link.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::PermissionDenied
                ) =>
            {
                out.send_dropped += 1
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
