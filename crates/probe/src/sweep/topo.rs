//! The sweep's two hosts: a generator namespace and a receiver namespace joined by a veth
//! pair, with no traffic but the sweep's (IPv6 off, static ARP), and RPS sending the
//! receiver's packets to the receiver's CPU. Removed on drop.

use std::fs::File;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;

use serde::Serialize;

use crate::Error;

/// The two namespaces and their link.
#[derive(Debug)]
pub struct Topology {
    /// Generator namespace.
    pub gen_ns: String,
    /// Receiver namespace.
    pub rx_ns: String,
    /// The generator's veth end.
    pub gen_if: String,
    /// The receiver's veth end.
    pub rx_if: String,
    /// The generator's address.
    pub gen_addr: Ipv4Addr,
    /// The receiver's address.
    pub rx_addr: Ipv4Addr,
    /// The global RFS table size to put back on drop, when this topology raised it.
    rfs_restore: Option<u64>,
}

fn run(cmd: &mut Command) -> Result<String, Error> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| Error::Topology(format!("{shown}: {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(Error::Topology(format!(
            "{shown}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

fn ip(args: &[&str]) -> Result<String, Error> {
    run(Command::new("ip").args(args))
}

fn in_ns(ns: &str, args: &[&str]) -> Result<String, Error> {
    run(Command::new("ip").args(["netns", "exec", ns]).args(args))
}

/// Where the receiver's veth hands its packets' softirq work. A veth has no hardware
/// queue: without RPS the receive runs in the sender's `veth_xmit`, on the sender's CPU, as
/// a single-queue NIC's runs on the CPU its interrupt is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Steering {
    /// RPS to the receiver's CPU only (the sweep's topology).
    Rps,
    /// RFS: RPS over every CPU, each flow to the CPU where its socket was last read
    /// (`rps_flow_cnt` on the queue, the global `rps_sock_flow_entries`).
    Rfs,
    /// Neither: the receive stays on the sender's CPU.
    Off,
}

impl Steering {
    /// `rps`, `rfs` or `off`.
    pub fn parse(s: &str) -> Result<Steering, String> {
        match s {
            "rps" => Ok(Steering::Rps),
            "rfs" => Ok(Steering::Rfs),
            "off" => Ok(Steering::Off),
            _ => Err(format!("{s:?}: rps, rfs or off")),
        }
    }

    /// The name `parse` takes.
    pub fn name(self) -> &'static str {
        match self {
            Steering::Rps => "rps",
            Steering::Rfs => "rfs",
            Steering::Off => "off",
        }
    }
}

/// The global RFS table size the sweep asks for, and restores on drop.
const RFS_ENTRIES: u64 = 32_768;
const RFS_SYSCTL: &str = "/proc/sys/net/core/rps_sock_flow_entries";

impl Topology {
    /// Creates the namespaces `TAGg` and `TAGr` (removing stale ones of those names), the
    /// veth pair, addresses 10.213.0.1/.2, and steers the receiver's packets to `rx_cpu`
    /// with RPS so that its softirq runs there and not on the generator's CPU.
    pub fn create(tag: &str, rx_cpu: usize) -> Result<Topology, Error> {
        Self::create_steered(tag, rx_cpu, Steering::Rps)
    }

    /// As `create`, with the receiver's packets steered as `steering` says.
    pub fn create_steered(tag: &str, rx_cpu: usize, steering: Steering) -> Result<Topology, Error> {
        let mut t = Topology {
            rfs_restore: None,
            gen_ns: format!("{tag}g"),
            rx_ns: format!("{tag}r"),
            gen_if: format!("{tag}g"),
            rx_if: format!("{tag}r"),
            gen_addr: Ipv4Addr::new(10, 213, 0, 1),
            rx_addr: Ipv4Addr::new(10, 213, 0, 2),
        };
        for ns in [&t.gen_ns, &t.rx_ns] {
            let _ = ip(&["netns", "del", ns]);
            ip(&["netns", "add", ns])?;
        }
        // From here on, Drop removes what exists.
        ip(&[
            "link", "add", &t.gen_if, "netns", &t.gen_ns, "type", "veth", "peer", "name", &t.rx_if,
            "netns", &t.rx_ns,
        ])?;
        for (ns, ifname, addr) in [
            (&t.gen_ns, &t.gen_if, t.gen_addr),
            (&t.rx_ns, &t.rx_if, t.rx_addr),
        ] {
            in_ns(ns, &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])?;
            in_ns(
                ns,
                &["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"],
            )?;
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{addr}/30"),
                "dev",
                ifname,
            ])?;
            ip(&["-n", ns, "link", "set", ifname, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        for (ns, ifname, peer_ns, peer_if, peer_addr) in [
            (&t.gen_ns, &t.gen_if, &t.rx_ns, &t.rx_if, t.rx_addr),
            (&t.rx_ns, &t.rx_if, &t.gen_ns, &t.gen_if, t.gen_addr),
        ] {
            let mac = Self::mac(peer_ns, peer_if)?;
            ip(&[
                "-n",
                ns,
                "neigh",
                "replace",
                &peer_addr.to_string(),
                "lladdr",
                &mac,
                "dev",
                ifname,
                "nud",
                "permanent",
            ])?;
        }
        t.steer(steering, rx_cpu)?;
        Ok(t)
    }

    fn steer(&mut self, steering: Steering, rx_cpu: usize) -> Result<(), Error> {
        let cpus = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(64);
        let (mask, flows) = match steering {
            Steering::Rps => (1u64 << rx_cpu.min(63), 0),
            Steering::Rfs => (u64::MAX >> (64 - cpus), 4096),
            Steering::Off => (0, 0),
        };
        if steering == Steering::Rfs {
            let before: u64 = std::fs::read_to_string(RFS_SYSCTL)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if before < RFS_ENTRIES {
                std::fs::write(RFS_SYSCTL, RFS_ENTRIES.to_string())
                    .map_err(|e| Error::Topology(format!("{RFS_SYSCTL}: {e}")))?;
                self.rfs_restore = Some(before);
            }
        }
        let queue = format!("/sys/class/net/{}/queues/rx-0", self.rx_if);
        in_ns(
            &self.rx_ns,
            &[
                "sh",
                "-c",
                &format!("echo {mask:x} > {queue}/rps_cpus && echo {flows} > {queue}/rps_flow_cnt"),
            ],
        )?;
        Ok(())
    }

    fn mac(ns: &str, ifname: &str) -> Result<String, Error> {
        let out = ip(&["-n", ns, "-br", "link", "show", ifname])?;
        out.split_whitespace()
            .nth(2)
            .map(str::to_owned)
            .ok_or_else(|| Error::Topology(format!("no MAC address for {ifname} in {ns}")))
    }

    /// The namespace file of the receiver (`/run/netns/NAME`).
    pub fn rx_ns_path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.rx_ns)
    }

    /// The probe's filter for this topology: the receiver's namespace and interface, this
    /// process's reader, the generator's tags.
    pub fn receiver_filter(&self) -> Result<crate::Filter, Error> {
        let rx_ns = self.rx_ns_path();
        Ok(crate::Filter {
            netns: crate::procfs::netns_inode(&rx_ns)
                .map_err(|e| Error::Topology(format!("receiver namespace: {e}")))?,
            ifindex: crate::netns::ifindex(Some(&rx_ns), &self.rx_if)?,
            pid: std::process::id(),
            tags: true,
        })
    }

    /// The namespace file of the generator.
    pub fn gen_ns_path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.gen_ns)
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        // Deleting a namespace deletes its veth end, and so the pair.
        for ns in [&self.gen_ns, &self.rx_ns] {
            let _ = ip(&["netns", "del", ns]);
        }
        if let Some(v) = self.rfs_restore {
            let _ = std::fs::write(RFS_SYSCTL, v.to_string());
        }
    }
}

/// Moves the calling thread into the namespace at `path` (only this thread: setns).
pub fn enter(path: &std::path::Path) -> Result<(), Error> {
    let file = File::open(path)
        .map_err(|e| Error::Topology(format!("namespace {}: {e}", path.display())))?;
    nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| Error::Topology(format!("joining {}: {e}", path.display())))
}

/// Pins the calling thread to `cpu`; false when the CPU does not exist or is not allowed.
pub fn pin(cpu: usize) -> bool {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).is_ok()
        && nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).is_ok()
}
