//! Network namespaces as test hosts: one namespace with its own loopback ([`Namespace`]), or
//! two joined by a veth pair ([`Pair`]). Both are removed on drop, also when the test panics.
//!
//! Names carry the test's tag, the process id and a per-process counter, so tests in one
//! process and in concurrent processes never collide; addresses come from 10.0.0.0/8 /30
//! subnets that exist only inside these namespaces (nothing routes them anywhere).

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::process::{run, signal};
use crate::{Error, Result};

/// Longest interface name Linux accepts (IFNAMSIZ - 1).
const IFNAME_MAX: usize = 15;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// One end of a [`Pair`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The first namespace (by convention the core side).
    A,
    /// The second namespace (by convention the RAN side).
    B,
}

impl Side {
    /// The other end.
    pub fn peer(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// A unique short id `TAG` + pid + counter (hex), at most 14 characters so that a one-letter
/// suffix still makes a valid interface name.
fn unique_id(tag: &str, pid: u32, n: u32) -> String {
    let suffix = format!("{pid:x}x{n:x}");
    let room = (IFNAME_MAX - 1).saturating_sub(suffix.len());
    let tag: String = tag
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(room)
        .collect();
    format!("{tag}{suffix}")
}

/// The /30 subnet for a pair: derived from pid and counter so concurrent tests get different
/// ones (they could share one, since each pair is isolated, but distinct subnets keep
/// captures and logs unambiguous). Never 10.0.0.0/30, never a .0 second octet.
fn subnet(pid: u32, n: u32) -> Ipv4Addr {
    // 22 bits of subnet index: 10.X.Y.(Z*4) with X in 1..=255.
    let index = pid.wrapping_mul(64).wrapping_add(n % 64) % ((255 << 14) - 1);
    let x = 1 + (index >> 14);
    let y = (index >> 6) & 0xff;
    let z = (index & 0x3f) * 4;
    Ipv4Addr::new(10, x as u8, y as u8, z as u8)
}

fn ip<I, S>(args: I) -> Result<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run(Command::new("ip").args(args))
}

/// One network namespace with its loopback up; deleted on drop.
#[derive(Debug)]
pub struct Namespace {
    name: String,
}

impl Namespace {
    /// Creates namespace `name` (removing a stale one of that name first: the name embeds
    /// our pid, so a leftover is from a dead process that had the same pid) and brings `lo`
    /// up.
    pub fn create(name: &str) -> Result<Self> {
        if name.is_empty() || name.contains('/') {
            return Err(Error::Invalid(format!("namespace name {name:?}")));
        }
        if ip(["netns", "list"])?
            .lines()
            .any(|l| l.split_whitespace().next() == Some(name))
        {
            let _ = ip(["netns", "del", name]);
        }
        ip(["netns", "add", name])?;
        let ns = Namespace {
            name: name.to_owned(),
        };
        ip(["-n", name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// A new namespace with a unique name derived from `tag`.
    pub fn new(tag: &str) -> Result<Self> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        Self::create(&unique_id(tag, std::process::id(), n))
    }

    /// The namespace's name (for `ip netns exec NAME`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip netns exec NAME PROGRAM`: add arguments and run it.
    pub fn exec(&self, program: impl AsRef<OsStr>) -> Command {
        crate::process::in_netns(Some(&self.name), program)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // A process left inside would keep the namespace alive after `ip netns del`; those
        // processes are this test's own children (ChildGuards normally got them already).
        if let Ok(pids) = ip(["netns", "pids", &self.name]) {
            for pid in pids
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
            {
                let _ = signal(pid, "KILL");
            }
        }
        // Deleting the namespace also deletes the veth end inside it, and so its peer.
        let _ = ip(["netns", "del", &self.name]);
    }
}

/// Two namespaces joined by a veth pair with addresses from one /30; all removed on drop.
#[derive(Debug)]
pub struct Pair {
    // Field order is drop order: nothing here depends on it, both get deleted.
    a: Namespace,
    b: Namespace,
    iface_a: String,
    iface_b: String,
    addr_a: Ipv4Addr,
    addr_b: Ipv4Addr,
}

impl Pair {
    /// Creates the two namespaces `TAG…a` and `TAG…b` and the veth pair between them,
    /// addresses .1 and .2 of a fresh /30, links and loopbacks up, TX checksum offload off.
    ///
    /// TX offload is off because locally generated packets on veth otherwise carry
    /// `CHECKSUM_PARTIAL` and show up with bad UDP checksums in captures (and after XDP);
    /// see KERNEL.md §3.
    pub fn new(tag: &str) -> Result<Self> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let id = unique_id(tag, pid, n);
        let a = Namespace::create(&format!("{id}a"))?;
        let b = Namespace::create(&format!("{id}b"))?;
        let (iface_a, iface_b) = (format!("{id}a"), format!("{id}b"));
        let net = u32::from(subnet(pid, n));
        let (addr_a, addr_b) = (Ipv4Addr::from(net + 1), Ipv4Addr::from(net + 2));
        ip([
            "link",
            "add",
            &iface_a,
            "netns",
            a.name(),
            "type",
            "veth",
            "peer",
            "name",
            &iface_b,
            "netns",
            b.name(),
        ])?;
        for (ns, iface, addr) in [(&a, &iface_a, addr_a), (&b, &iface_b, addr_b)] {
            ip([
                "-n",
                ns.name(),
                "addr",
                "add",
                &format!("{addr}/30"),
                "dev",
                iface,
            ])?;
            ip(["-n", ns.name(), "link", "set", iface, "up"])?;
            run(ns.exec("ethtool").args(["-K", iface, "tx", "off"]))?;
        }
        Ok(Pair {
            a,
            b,
            iface_a,
            iface_b,
            addr_a,
            addr_b,
        })
    }

    /// The namespace of `side`.
    pub fn ns(&self, side: Side) -> &Namespace {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }

    /// The name of `side`'s namespace.
    pub fn name(&self, side: Side) -> &str {
        self.ns(side).name()
    }

    /// The veth interface inside `side`'s namespace.
    pub fn iface(&self, side: Side) -> &str {
        match side {
            Side::A => &self.iface_a,
            Side::B => &self.iface_b,
        }
    }

    /// The IPv4 address of `side`'s veth end.
    pub fn addr(&self, side: Side) -> Ipv4Addr {
        match side {
            Side::A => self.addr_a,
            Side::B => self.addr_b,
        }
    }

    /// `ip netns exec <side's namespace> PROGRAM`: add arguments and run it.
    pub fn exec(&self, side: Side, program: impl AsRef<OsStr>) -> Command {
        self.ns(side).exec(program)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::privilege;

    #[test]
    fn ids_are_short_and_unique() {
        let a = unique_id("n2loss-test!", 4_194_303, 0);
        let b = unique_id("n2loss-test!", 4_194_303, 1);
        assert_ne!(a, b);
        assert!(a.len() < IFNAME_MAX, "{a}");
        assert!(a.starts_with("n2loss"));
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        // The pid keeps processes apart even with a truncated tag.
        assert_ne!(unique_id("t", 10, 0), unique_id("t", 1, 0x0a));
        assert!(unique_id("", 1, 1).len() < IFNAME_MAX);
    }

    #[test]
    fn subnets_are_valid_slash30s() {
        for (pid, n) in [
            (0, 0),
            (1, 0),
            (1, 1),
            (4_194_303, 63),
            (u32::MAX, u32::MAX),
            (12345, 7),
        ] {
            let s = subnet(pid, n).octets();
            assert_eq!(s[0], 10);
            assert_ne!(s[1], 0);
            assert_eq!(s[3] % 4, 0, "{s:?}");
        }
        assert_ne!(subnet(100, 0), subnet(100, 1));
        assert_ne!(subnet(100, 0), subnet(101, 0));
    }

    #[test]
    fn side_peer() {
        assert_eq!(Side::A.peer(), Side::B);
        assert_eq!(Side::B.peer(), Side::A);
    }

    #[test]
    fn pair_carries_packets_and_is_removed_on_drop() {
        if !privilege::require("netns::Pair") {
            return;
        }
        let pair = Pair::new("tkpair").unwrap();
        // A reaches B: datagrams sent in A show up in B's receive counter.
        let rx = || -> u64 {
            let path = format!(
                "/sys/class/net/{}/statistics/rx_packets",
                pair.iface(Side::B)
            );
            run(pair.exec(Side::B, "cat").arg(path))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let before = rx();
        let target = pair.addr(Side::B).to_string();
        let script = format!("for i in 1 2 3; do echo x > /dev/udp/{target}/9; done");
        run(pair.exec(Side::A, "bash").args(["-c", &script])).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(rx() >= before + 3, "veth pair does not carry packets");
        let offload = run(pair
            .exec(Side::A, "ethtool")
            .args(["-k", pair.iface(Side::A)]))
        .unwrap();
        assert!(offload.contains("tx-checksumming: off"), "{offload}");
        let names = [pair.name(Side::A).to_owned(), pair.name(Side::B).to_owned()];
        drop(pair);
        let list = ip(["netns", "list"]).unwrap();
        for n in names {
            assert!(
                !list
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(n.as_str())),
                "{n} left behind"
            );
        }
    }

    #[test]
    fn namespace_is_removed_even_on_panic() {
        if !privilege::require("netns::Namespace") {
            return;
        }
        let name = std::sync::Mutex::new(String::new());
        let res = std::panic::catch_unwind(|| {
            let ns = Namespace::new("tkpanic").unwrap();
            *name.lock().unwrap() = ns.name().to_owned();
            panic!("test body failed");
        });
        assert!(res.is_err());
        let name = name.into_inner().unwrap();
        assert!(!name.is_empty());
        assert!(!ip(["netns", "list"])
            .unwrap()
            .lines()
            .any(|l| l.split_whitespace().next() == Some(name.as_str())));
    }
}
