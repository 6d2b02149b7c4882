//! A user-plane test bed: three network namespaces like `steer5g lab` (ran, upf, dn) joined
//! by veth pairs N3 (ran ↔ upf) and N6 (upf ↔ dn), used by the datapath tests and by
//! `steer5g bench upf`. Names carry a tag, the process id and a counter, so tests in
//! parallel never collide; addresses are fixed because every bed has its own namespaces.
//!
//! ```text
//!  ran  10.203.3.2 ──N3── 10.203.3.1  upf  10.203.6.1 ──N6── 10.203.6.2  dn
//!                                     UE pool 10.203.64.0/18 is routed via 10.203.6.1 in dn
//! ```
//!
//! ran and dn also route each other's link through the UPF (plain IP forwarding), which
//! the bench's bare-redirect ceiling uses.
//!
//! Neighbours are installed as permanent entries so the first packet of a test already
//! takes the fast path (an unresolved neighbour would send it to the kernel instead), and
//! TX checksum offload is off on every veth end (KERNEL.md §3: locally generated packets
//! otherwise reach the peer through XDP with a bad UDP checksum).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::process::Command;
use std::time::Duration;

use crate::datapath::{
    Datapath, DatapathError, DownlinkAction, DownlinkRule, Entries, Gate, UplinkAction, UplinkRule,
    UsageId,
};
use pfcp::gtpu::{Packet, Repr};
use std::sync::atomic::{AtomicU32, Ordering};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The UPF's N3 address.
pub const N3_UPF: Ipv4Addr = Ipv4Addr::new(10, 203, 3, 1);
/// The UPF's GTP-U endpoint on N3 (TS 29.281 §4.4.2: UDP port 2152).
pub const N3_UPF_GTPU: SocketAddrV4 = SocketAddrV4::new(N3_UPF, 2152);
/// The gNB's N3 address (in the ran namespace).
pub const N3_RAN: Ipv4Addr = Ipv4Addr::new(10, 203, 3, 2);
/// The UPF's N6 address.
pub const N6_UPF: Ipv4Addr = Ipv4Addr::new(10, 203, 6, 1);
/// The data network host's address.
pub const N6_DN: Ipv4Addr = Ipv4Addr::new(10, 203, 6, 2);
/// First address of the UE pool 10.203.64.0/18.
pub const UE_POOL: Ipv4Addr = Ipv4Addr::new(10, 203, 64, 0);
/// Prefix length of the UE pool.
pub const UE_POOL_LEN: u8 = 18;

/// The `n`-th UE address of the pool (wrapping inside the /18, skipping .0).
pub fn ue_ip(n: u32) -> Ipv4Addr {
    let size = 1u32 << (32 - u32::from(UE_POOL_LEN));
    Ipv4Addr::from(u32::from(UE_POOL) + 1 + n % (size - 2))
}

/// Which side of the bed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// The gNB side of N3.
    Ran,
    /// The UPF, between N3 and N6.
    Upf,
    /// The data network side of N6.
    Dn,
}

/// The three namespaces and two veth pairs; all removed on drop.
#[derive(Debug)]
pub struct Testbed {
    ran: String,
    upf: String,
    dn: String,
    /// N3 interface in the upf namespace.
    pub n3_upf: String,
    /// N3 interface in the ran namespace.
    pub n3_ran: String,
    /// N6 interface in the upf namespace.
    pub n6_upf: String,
    /// N6 interface in the dn namespace.
    pub n6_dn: String,
}

fn run(cmd: &mut Command) -> io::Result<String> {
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ip(args: &[&str]) -> io::Result<String> {
    run(Command::new("ip").args(args))
}

impl Testbed {
    /// Creates the bed. `tag` (alphanumerics, cut to fit interface names) tells whose it is.
    pub fn new(tag: &str) -> io::Result<Self> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let suffix = format!("{:x}x{n:x}", std::process::id());
        let room = 13usize.saturating_sub(suffix.len());
        let tag: String = tag
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(room)
            .collect();
        let id = format!("{tag}{suffix}");
        let bed = Testbed {
            ran: format!("{id}r"),
            upf: format!("{id}u"),
            dn: format!("{id}d"),
            n3_upf: format!("{id}3"),
            n3_ran: format!("{id}r"),
            n6_upf: format!("{id}6"),
            n6_dn: format!("{id}d"),
        };
        // Build into `bed` so a failure half-way still removes what exists (Drop).
        for ns in [&bed.ran, &bed.upf, &bed.dn] {
            let _ = ip(&["netns", "del", ns]);
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            // No IPv6: router solicitations and DAD would show up in the datapaths'
            // not-for-us counters, which the tests want to read as exactly zero.
            for key in [
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ] {
                run(Command::new("ip").args(["netns", "exec", ns, "sysctl", "-qw", key]))?;
            }
        }
        bed.link(&bed.upf, &bed.n3_upf, N3_UPF, &bed.ran, &bed.n3_ran, N3_RAN)?;
        bed.link(&bed.upf, &bed.n6_upf, N6_UPF, &bed.dn, &bed.n6_dn, N6_DN)?;
        let pool = format!("{UE_POOL}/{UE_POOL_LEN}");
        ip(&[
            "-n",
            &bed.dn,
            "route",
            "add",
            &pool,
            "via",
            &N6_UPF.to_string(),
        ])?;
        // Plain IPv4 across the UPF as a router, for the bench's bare-redirect ceiling.
        let (n3_upf, n6_upf) = (N3_UPF.to_string(), N6_UPF.to_string());
        ip(&[
            "-n",
            &bed.ran,
            "route",
            "add",
            "10.203.6.0/24",
            "via",
            &n3_upf,
        ])?;
        ip(&[
            "-n",
            &bed.dn,
            "route",
            "add",
            "10.203.3.0/24",
            "via",
            &n6_upf,
        ])?;
        for (ns, key) in [
            (&bed.upf, "net.ipv4.ip_forward=1"),
            (&bed.upf, "net.ipv4.conf.all.rp_filter=0"),
            (&bed.upf, "net.ipv4.conf.default.rp_filter=0"),
            (&bed.dn, "net.ipv4.conf.all.rp_filter=0"),
        ] {
            run(Command::new("ip").args(["netns", "exec", ns, "sysctl", "-qw", key]))?;
        }
        // Permanent neighbours both ways on both links.
        let pairs = [
            (&bed.upf, &bed.n3_upf, &bed.ran, &bed.n3_ran, N3_RAN, N3_UPF),
            (&bed.upf, &bed.n6_upf, &bed.dn, &bed.n6_dn, N6_DN, N6_UPF),
        ];
        for (ua, ui, pa, pi, paddr, uaddr) in pairs {
            let umac = mac(ua, ui)?;
            let pmac = mac(pa, pi)?;
            ip(&[
                "-n",
                ua,
                "neigh",
                "replace",
                &paddr.to_string(),
                "lladdr",
                &pmac,
                "dev",
                ui,
                "nud",
                "permanent",
            ])?;
            ip(&[
                "-n",
                pa,
                "neigh",
                "replace",
                &uaddr.to_string(),
                "lladdr",
                &umac,
                "dev",
                pi,
                "nud",
                "permanent",
            ])?;
        }
        Ok(bed)
    }

    fn link(
        &self,
        ns_a: &str,
        if_a: &str,
        addr_a: Ipv4Addr,
        ns_b: &str,
        if_b: &str,
        addr_b: Ipv4Addr,
    ) -> io::Result<()> {
        ip(&[
            "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b, "netns", ns_b,
        ])?;
        for (ns, iface, addr) in [(ns_a, if_a, addr_a), (ns_b, if_b, addr_b)] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", iface])?;
            ip(&["-n", ns, "link", "set", iface, "up"])?;
            run(
                Command::new("ip").args(["netns", "exec", ns, "ethtool", "-K", iface, "tx", "off"])
            )?;
        }
        Ok(())
    }

    /// The namespace name of `host`.
    pub fn ns(&self, host: Host) -> &str {
        match host {
            Host::Ran => &self.ran,
            Host::Upf => &self.upf,
            Host::Dn => &self.dn,
        }
    }

    /// The TUN path of a UPF on this bed: device `upftun0` in the upf namespace, N3 at
    /// [`N3_UPF`], the bed's UE pool behind it.
    pub fn tun_options(&self) -> super::TunOptions {
        super::TunOptions {
            netns: Some(self.upf.clone()),
            n3_addr: N3_UPF,
            tun_name: "upftun0".to_owned(),
            ue_pool: (UE_POOL, UE_POOL_LEN),
            n3_recv_buffer: super::DEFAULT_N3_RECV_BUFFER,
        }
    }

    /// A UDP socket bound to `addr` inside `host`'s namespace (a gNB on N3, a host in dn).
    pub fn udp(&self, host: Host, addr: SocketAddrV4) -> io::Result<UdpSocket> {
        super::netns::run_in(Some(self.ns(host)), move || UdpSocket::bind(addr))?
    }

    /// The two ends a datapath test talks through: the gNB's GTP-U socket (`N3_RAN:2152`
    /// in ran) and a host's socket on `N6_DN:dn_port` in dn.
    pub fn gnb_and_dn(&self, dn_port: u16) -> io::Result<(UdpSocket, UdpSocket)> {
        let gnb = self.udp(Host::Ran, SocketAddrV4::new(N3_RAN, 2152))?;
        let dn = self.udp(Host::Dn, SocketAddrV4::new(N6_DN, dn_port))?;
        Ok((gnb, dn))
    }

    /// Attaches `xdp_pass` to the ran and dn ends of N3 and N6: a veth delivers frames its
    /// peer redirected with XDP only when it runs an XDP program itself (KERNEL.md §3).
    pub fn attach_peer_pass(&self) -> io::Result<()> {
        for (ns, iface) in [(&self.ran, &self.n3_ran), (&self.dn, &self.n6_dn)] {
            let iface = iface.clone();
            super::netns::run_in(Some(ns), move || -> io::Result<u32> {
                let idx = nix::net::if_::if_nametoindex(iface.as_str()).map_err(io::Error::from)?;
                steer_bpf::xdp::attach_pass(idx, steer_bpf::xdp::Mode::Native)
                    .map_err(|e| io::Error::other(format!("xdp_pass on {iface}: {e}")))
            })??;
        }
        Ok(())
    }

    /// A UDP echo host on `N6_DN:port` in the dn namespace, for at most `limit`.
    pub fn dn_echo(
        &self,
        port: u16,
        limit: std::time::Duration,
    ) -> io::Result<super::echo::DnEcho> {
        super::echo::DnEcho::start(
            Some(self.ns(Host::Dn)),
            SocketAddrV4::new(N6_DN, port),
            limit,
        )
    }

    /// `ip netns exec NS PROGRAM` for `host`.
    pub fn exec(&self, host: Host, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.ns(host), program]);
        c
    }

    /// The ifindex of `iface` in `host`'s namespace.
    pub fn ifindex(&self, host: Host, iface: &str) -> io::Result<u32> {
        let iface = iface.to_owned();
        super::netns::run_in(Some(self.ns(host)), move || {
            nix::net::if_::if_nametoindex(iface.as_str()).map_err(io::Error::from)
        })?
    }
}

fn mac(ns: &str, iface: &str) -> io::Result<String> {
    let out = ip(&["-n", ns, "-o", "link", "show", iface])?;
    let mut words = out.split_whitespace();
    words
        .by_ref()
        .find(|w| *w == "link/ether")
        .and_then(|_| words.next())
        .map(str::to_owned)
        .ok_or_else(|| io::Error::other(format!("no MAC for {iface} in {ns}")))
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for ns in [&self.ran, &self.upf, &self.dn] {
            // Deleting a namespace deletes its veth ends and so their peers.
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// A datapath under test in its bed, with the gNB and DN sockets the test talks through.
/// Fields drop in order: the datapath (its links and programs) before the namespaces.
pub struct Rig<D> {
    /// The datapath under test.
    pub dp: D,
    /// The gNB's GTP-U socket on N3.
    pub gnb: UdpSocket,
    /// A DN host's socket on N6.
    pub dn: UdpSocket,
    /// The namespaces and links.
    pub bed: Testbed,
}

impl<D> Rig<D> {
    /// Rigs `dp`, already started in `bed`, with the gNB socket and a DN host on `dn_port`
    /// ([`Testbed::gnb_and_dn`]).
    pub fn new(bed: Testbed, dp: D, dn_port: u16) -> io::Result<Self> {
        let (gnb, dn) = bed.gnb_and_dn(dn_port)?;
        Ok(Rig { dp, gnb, dn, bed })
    }

    /// Sends `g_pdu` from the gNB to the UPF's GTP-U endpoint.
    pub fn send_gpdu(&self, g_pdu: &[u8]) -> io::Result<()> {
        self.gnb.send_to(g_pdu, N3_UPF_GTPU).map(drop)
    }

    /// The next G-PDU the gNB gets from the UPF's GTP-U endpoint within three seconds, as
    /// (TEID, QFI, inner packet); `None` when none came, it came from elsewhere or it does
    /// not parse.
    pub fn recv_gpdu(&self) -> Option<(u32, Option<u8>, Vec<u8>)> {
        let (g, from) = recv_within(&self.gnb, Duration::from_secs(3))?;
        if from != SocketAddr::V4(N3_UPF_GTPU) {
            return None;
        }
        let p = Packet::new_checked(&g[..]).ok()?;
        let repr = Repr::parse(&p).ok()?;
        Some((repr.teid, repr.qfi(), p.payload().ok()?.to_vec()))
    }

    /// What `read` gives once `done` holds for it, or the last reading after about two
    /// seconds: datapaths count on their own threads, after the packet has left.
    pub fn read_when<C>(&self, read: impl Fn(&D) -> C, done: impl Fn(&C) -> bool) -> C {
        let mut c = read(&self.dp);
        for _ in 0..100 {
            if done(&c) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            c = read(&self.dp);
        }
        c
    }
}

impl<D: Datapath> Rig<D> {
    /// Ends the sessions `(local TEID, i)` set up with [`uplink_rule`] and
    /// [`downlink_rule`] (both rules and usage id `i`); the entries left afterwards.
    pub fn end_sessions(
        &mut self,
        sessions: impl IntoIterator<Item = (u32, u32)>,
    ) -> Result<Entries, DatapathError> {
        for (teid, i) in sessions {
            self.dp.remove_uplink(teid)?;
            self.dp.remove_downlink(ue_ip(i))?;
            self.dp.remove_usage(UsageId(i))?;
        }
        self.dp.entries()
    }
}

/// The next datagram on `sock` within `wait`, with its sender; `None` when none came.
pub fn recv_within(sock: &UdpSocket, wait: Duration) -> Option<(Vec<u8>, SocketAddr)> {
    sock.set_read_timeout(Some(wait)).ok()?;
    let mut buf = vec![0u8; 2048];
    let (n, from) = sock.recv_from(&mut buf).ok()?;
    buf.truncate(n);
    Some((buf, from))
}

/// Session `i`'s uplink rule: local TEID `teid`, UE `ue_ip(i)`, forward to N6, open gate,
/// counted into usage id `i`.
pub fn uplink_rule(i: u32, teid: u32, qfi: Option<u8>) -> UplinkRule {
    UplinkRule {
        teid,
        seid: u64::from(i),
        pdr_id: 1,
        ue_ip: ue_ip(i),
        qfi,
        action: UplinkAction::Forward,
        gate: Gate::OPEN,
        usage: Some(UsageId(i)),
    }
}

/// Session `i`'s downlink rule: UE `ue_ip(i)` encapsulated towards the gNB's TEID
/// `gnb_teid` at [`N3_RAN`], open gate, counted into usage id `i`.
pub fn downlink_rule(i: u32, gnb_teid: u32, qfi: Option<u8>) -> DownlinkRule {
    DownlinkRule {
        ue_ip: ue_ip(i),
        seid: u64::from(i),
        pdr_id: 2,
        action: DownlinkAction::Forward {
            teid: gnb_teid,
            peer: N3_RAN,
            qfi,
        },
        gate: Gate::OPEN,
        usage: Some(UsageId(i)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ue_ips_stay_in_the_pool() {
        assert_eq!(ue_ip(0), Ipv4Addr::new(10, 203, 64, 1));
        assert_eq!(ue_ip(255), Ipv4Addr::new(10, 203, 65, 0));
        for n in [0, 1, 16381, 16382, 16383, u32::MAX] {
            let a = u32::from(ue_ip(n));
            assert!(a > u32::from(UE_POOL), "{n}");
            assert!(a < u32::from(UE_POOL) + (1 << 14) - 1, "{n}");
        }
    }
}
