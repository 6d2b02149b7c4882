//! The user-plane lab of `steer5g lab up|down|status|echo`, three network namespaces `{P}-ran`,
//! `{P}-upf` and `{P}-dn` joined by veth pairs (N3 and N6), with `xdp_pass` on the veth ends
//! that receive XDP_TX/XDP_REDIRECT frames and TX checksum offload off (KERNEL.md §3).
//!
//! [`plan`] holds the names and addresses, [`sys`] every call to `ip`/`ethtool`/`sysctl`.
//! `steer5g lab echo` runs the data network's UDP echo host inside `{P}-dn` for people running
//! the core, the UPF and the load generator as separate processes (ICMP echo is answered by
//! the dn kernel itself).
//!
//! [`bed`] is the demo's user-plane bed: the same three hosts made by
//! `upf::userspace::testbed`, with a UPF, its datapath and the DN echo host running in them.

pub mod bed;
mod plan;
mod sys;

use std::net::Ipv4Addr;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

pub use plan::{validate_prefix, End, Plan, MAX_PREFIX};
pub use sys::SysError;

/// Why a lab operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    /// A needed privilege is missing (root: CAP_NET_ADMIN and CAP_SYS_ADMIN).
    #[error("{0}")]
    Privilege(String),
    /// A system command failed.
    #[error(transparent)]
    Sys(#[from] SysError),
    /// The lab is not in the state the operation needs.
    #[error("{0}")]
    Failed(String),
}

/// `CAP_NET_ADMIN` (linux/capability.h): links, addresses, XDP.
const CAP_NET_ADMIN: u32 = 12;
/// `CAP_SYS_ADMIN`: `ip netns add` mounts the namespace file; `ip -n` enters it.
const CAP_SYS_ADMIN: u32 = 21;

/// Checks that this process may build a lab (root: CAP_NET_ADMIN and CAP_SYS_ADMIN).
pub fn require_privilege() -> Result<(), LabError> {
    let needed = (1u64 << CAP_NET_ADMIN) | (1u64 << CAP_SYS_ADMIN);
    match sys::cap_eff() {
        Some(caps) if caps & needed == needed => Ok(()),
        _ => Err(LabError::Privilege(
            "steer5g lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network \
             namespaces, veth links and attach XDP"
                .to_owned(),
        )),
    }
}

/// Creates the lab. An existing lab (any of its namespaces) is an error unless `force`.
/// A failure half-way removes what was built, so a retry starts clean. `exe` is the
/// `steer5g` binary, whose hidden `lab xdp-attach IFNAME` attaches `xdp_pass` inside a
/// namespace (`ip netns exec` moves the process there, so no `unsafe` setns is needed).
pub fn up(plan: &Plan, force: bool, exe: &Path) -> Result<(), LabError> {
    let existing: Vec<String> = sys::namespaces()?
        .into_iter()
        .filter(|n| plan.namespaces().contains(n))
        .collect();
    if !existing.is_empty() {
        if !force {
            return Err(LabError::Failed(format!(
                "lab {p} already exists (namespaces {}): run `steer5g lab down --prefix {p}` \
                 or pass --force",
                existing.join(", "),
                p = plan.prefix
            )));
        }
        down(plan)?;
    }
    build(plan, exe).inspect_err(|_| {
        // The error that stopped the build matters more than any failure of this clean-up.
        let _ = down(plan);
    })
}

fn build(plan: &Plan, exe: &Path) -> Result<(), LabError> {
    for ns in plan.namespaces() {
        sys::ip(&["netns", "add", &ns])?;
        sys::ip_in(&ns, &["link", "set", "dev", "lo", "up"])?;
    }
    for (a, b) in plan.links() {
        // Both ends are created directly inside their namespaces, so the fixed names never
        // appear (and never clash) in the root namespace.
        sys::ip(&[
            "link", "add", a.ifname, "netns", &a.ns, "type", "veth", "peer", "name", b.ifname,
            "netns", &b.ns,
        ])?;
        for end in [&a, &b] {
            let cidr = format!("{}/{}", end.addr, end.prefix_len);
            sys::ip_in(&end.ns, &["addr", "add", &cidr, "dev", end.ifname])?;
            sys::tx_checksum_off(&end.ns, end.ifname)?;
            sys::ip_in(&end.ns, &["link", "set", "dev", end.ifname, "up"])?;
        }
    }
    // Permanent neighbours both ways on both links: the UPF's XDP program forwards only
    // to a resolved neighbour and hands the packet to the kernel otherwise (`pass_no_neigh`),
    // so without them the first packets of every run would leave the fast path.
    for (a, b) in plan.links() {
        let (a_mac, b_mac) = (sys::mac(&a.ns, a.ifname)?, sys::mac(&b.ns, b.ifname)?);
        for (end, peer, peer_mac) in [(&a, &b, &b_mac), (&b, &a, &a_mac)] {
            sys::ip_in(
                &end.ns,
                &[
                    "neigh",
                    "replace",
                    &peer.addr.to_string(),
                    "lladdr",
                    peer_mac,
                    "dev",
                    end.ifname,
                    "nud",
                    "permanent",
                ],
            )?;
        }
    }
    // The UPF routes between N3 and N6; the dn answers UEs through the UPF.
    sys::sysctl_in(&plan.upf(), "net.ipv4.ip_forward=1")?;
    let (pool, len) = plan.ue_pool();
    sys::ip_in(
        &plan.dn(),
        &[
            "route",
            "add",
            &format!("{pool}/{len}"),
            "via",
            &plan.upf_n6().to_string(),
        ],
    )?;
    for end in plan.links().into_iter().flat_map(|(a, b)| [a, b]) {
        if end.xdp {
            sys::exec_in(&end.ns, exe.as_os_str(), &["lab", "xdp-attach", end.ifname])?;
        }
    }
    Ok(())
}

/// Removes the lab: XDP first (a namespace held open elsewhere would keep its veths and
/// their programs alive), then the namespaces. What is already gone is not an error.
pub fn down(plan: &Plan) -> Result<(), LabError> {
    let present = sys::namespaces()?;
    for end in plan.links().into_iter().flat_map(|(a, b)| [a, b]) {
        if end.xdp && present.contains(&end.ns) {
            // KERNEL.md §3: this is also how a crashed loader's program is removed.
            let _ = sys::ip_in(&end.ns, &["link", "set", "dev", end.ifname, "xdp", "off"]);
        }
    }
    for ns in plan.namespaces() {
        if present.contains(&ns) {
            sys::ip(&["netns", "del", &ns])?;
        }
    }
    Ok(())
}

/// What exists of one lab.
#[derive(Debug, Serialize)]
pub struct Status {
    prefix: String,
    /// All three namespaces exist.
    up: bool,
    n3_subnet: String,
    n6_subnet: String,
    ue_pool: String,
    namespaces: Vec<NsStatus>,
}

/// One namespace of a lab.
#[derive(Debug, Serialize)]
pub struct NsStatus {
    name: String,
    exists: bool,
    ip_forward: Option<bool>,
    interfaces: Vec<IfStatus>,
}

/// One interface of a namespace.
#[derive(Debug, Serialize)]
pub struct IfStatus {
    name: String,
    ifindex: u64,
    up: bool,
    addresses: Vec<String>,
    /// Id of the attached XDP program, if any.
    xdp_prog_id: Option<u64>,
    /// TX checksum offload (`ethtool -k` tx-checksumming); `None` for `lo`.
    tx_checksum_offload: Option<bool>,
}

impl Status {
    /// The human form, one line per namespace and interface.
    pub fn human(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "lab {}: {} (N3 {}, N6 {}, UE pool {})",
            self.prefix,
            if self.up { "up" } else { "not up" },
            self.n3_subnet,
            self.n6_subnet,
            self.ue_pool
        );
        for ns in &self.namespaces {
            if !ns.exists {
                let _ = writeln!(out, "  {}: absent", ns.name);
                continue;
            }
            let _ = writeln!(out, "  {}:", ns.name);
            for i in &ns.interfaces {
                let xdp = i
                    .xdp_prog_id
                    .map(|id| format!(" xdp={id}"))
                    .unwrap_or_default();
                let tx = match i.tx_checksum_offload {
                    Some(true) => " tx-csum=on",
                    Some(false) => " tx-csum=off",
                    None => "",
                };
                let _ = writeln!(
                    out,
                    "    {} {} {}{xdp}{tx}",
                    i.name,
                    if i.up { "up" } else { "down" },
                    i.addresses.join(",")
                );
            }
        }
        out
    }
}

/// What exists of the lab of `plan`.
pub fn status(plan: &Plan) -> Result<Status, LabError> {
    let present = sys::namespaces()?;
    let mut namespaces = Vec::new();
    for ns in plan.namespaces() {
        let exists = present.contains(&ns);
        let mut interfaces = Vec::new();
        let mut ip_forward = None;
        if exists {
            for link in sys::addr_json(Some(&ns))? {
                interfaces.push(if_status(&ns, &link)?);
            }
            ip_forward = sys::exec_in(
                &ns,
                std::ffi::OsStr::new("sysctl"),
                &["-n", "net.ipv4.ip_forward"],
            )
            .ok()
            .map(|v| v.trim() == "1");
        }
        namespaces.push(NsStatus {
            name: ns,
            exists,
            ip_forward,
            interfaces,
        });
    }
    let [(n3, _), (n6, _)] = plan.links();
    let subnet = |a: Ipv4Addr| {
        let [x, y, z, _] = a.octets();
        format!("{}/24", Ipv4Addr::new(x, y, z, 0))
    };
    let (pool, len) = plan.ue_pool();
    Ok(Status {
        prefix: plan.prefix.clone(),
        up: namespaces.iter().all(|n| n.exists),
        n3_subnet: subnet(n3.addr),
        n6_subnet: subnet(n6.addr),
        ue_pool: format!("{pool}/{len}"),
        namespaces,
    })
}

fn if_status(ns: &str, link: &Value) -> Result<IfStatus, LabError> {
    let name = link["ifname"].as_str().unwrap_or_default().to_owned();
    let flags = link["flags"].as_array().cloned().unwrap_or_default();
    let addresses = link["addr_info"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|i| i["family"] == "inet")
                .filter_map(|i| Some(format!("{}/{}", i["local"].as_str()?, i["prefixlen"])))
                .collect()
        })
        .unwrap_or_default();
    let tx_checksum_offload = if name == "lo" {
        None
    } else {
        Some(sys::tx_checksum_on(ns, &name)?)
    };
    Ok(IfStatus {
        ifindex: link["ifindex"].as_u64().unwrap_or_default(),
        up: flags.iter().any(|f| f == "UP"),
        addresses,
        xdp_prog_id: xdp_prog_id(link),
        tx_checksum_offload,
        name,
    })
}

/// The XDP program id in one link of `ip -j` output: `xdp.prog.id` with one program,
/// `xdp.attached[].prog.id` with several modes.
fn xdp_prog_id(link: &Value) -> Option<u64> {
    let xdp = &link["xdp"];
    xdp["prog"]["id"].as_u64().or_else(|| {
        xdp["attached"]
            .as_array()?
            .iter()
            .find_map(|a| a["prog"]["id"].as_u64())
    })
}

/// The index of interface `ifname` in namespace `ns` (`None`: this one).
pub fn ifindex(ns: Option<&str>, ifname: &str) -> Result<u32, LabError> {
    sys::addr_json(ns)?
        .iter()
        .find(|l| l["ifname"] == ifname)
        .and_then(|l| l["ifindex"].as_u64())
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| LabError::Failed(format!("no interface {ifname}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdp_id_is_found_in_both_ip_shapes() {
        let one: Value =
            serde_json::from_str(r#"{"ifname":"n3","xdp":{"mode":1,"prog":{"id":42}}}"#)
                .unwrap_or_default();
        assert_eq!(xdp_prog_id(&one), Some(42));
        let many: Value =
            serde_json::from_str(r#"{"xdp":{"mode":4,"attached":[{"mode":1,"prog":{"id":7}}]}}"#)
                .unwrap_or_default();
        assert_eq!(xdp_prog_id(&many), Some(7));
        assert_eq!(xdp_prog_id(&serde_json::json!({"ifname": "lo"})), None);
    }
}
