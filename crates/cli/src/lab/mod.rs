//! `steer5g lab up|down|status|echo`: the user-plane lab, three network namespaces `{P}-ran`,
//! `{P}-upf` and `{P}-dn` joined by veth pairs (N3 and N6), with `xdp_pass` on the veth ends
//! that receive XDP_TX/XDP_REDIRECT frames and TX checksum offload off (KERNEL.md §3).
//!
//! [`plan`] holds the names and addresses, [`sys`] every call to `ip`/`ethtool`/`sysctl`.
//! `echo` runs the data network's UDP echo host inside `{P}-dn` for people running the
//! core, the UPF and the load generator as separate processes (ICMP echo is answered by the
//! dn kernel itself).

mod plan;
mod sys;

use std::net::Ipv4Addr;

use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::Value;

use crate::cli::Global;
use crate::exit::CliError;
use plan::Plan;
use sys::SysError;

/// `CAP_NET_ADMIN` (linux/capability.h): links, addresses, XDP.
const CAP_NET_ADMIN: u32 = 12;
/// `CAP_SYS_ADMIN`: `ip netns add` mounts the namespace file; `ip -n` enters it.
const CAP_SYS_ADMIN: u32 = 21;

/// Arguments of `steer5g lab`.
#[derive(Debug, Args)]
pub(crate) struct LabArgs {
    #[command(subcommand)]
    action: LabAction,
}

#[derive(Debug, Subcommand)]
enum LabAction {
    /// Create the lab: namespaces, veth pairs, addresses, routes, xdp_pass, offloads off.
    Up(UpArgs),
    /// Remove the lab: detach XDP and delete its namespaces (what is already gone is fine).
    Down(PrefixArg),
    /// Show what exists of the lab.
    Status(PrefixArg),
    /// Echo UDP datagrams (RFC 862) on the dn's N6 address until SIGINT/SIGTERM or
    /// --duration: the DN end of UE probes sent through the UPF.
    Echo(EchoArgs),
    /// Internal: attach xdp_pass to IFNAME in the current namespace and print its id.
    /// `up` runs it through `ip netns exec`, which moves a process into a namespace
    /// without this crate needing `unsafe` setns.
    #[command(hide = true)]
    XdpAttach {
        /// The interface.
        ifname: String,
    },
}

#[derive(Debug, Args)]
struct PrefixArg {
    /// Prefix of the namespace names, so parallel labs (and tests) do not collide.
    #[arg(long, default_value = "s5g", value_parser = parse_prefix)]
    prefix: String,
}

#[derive(Debug, Args)]
struct UpArgs {
    #[command(flatten)]
    prefix: PrefixArg,
    /// Remove an existing lab with this prefix first instead of failing.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Args)]
struct EchoArgs {
    #[command(flatten)]
    prefix: PrefixArg,
    /// UDP port to echo on.
    #[arg(long, default_value_t = 7)]
    port: u16,
    /// Stop after this many seconds (at most, and by default, one hour: every loop here is
    /// bounded).
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
}

/// The longest an echo host runs.
const ECHO_MAX: std::time::Duration = std::time::Duration::from_secs(3600);

fn parse_prefix(s: &str) -> Result<String, String> {
    plan::validate_prefix(s).map(|()| s.to_owned())
}

impl From<SysError> for CliError {
    fn from(e: SysError) -> Self {
        CliError::Failed(e.to_string())
    }
}

/// Runs `steer5g lab …`.
pub(crate) fn run(global: &Global, args: &LabArgs) -> Result<(), CliError> {
    match &args.action {
        LabAction::Up(up) => {
            let plan = plan_of(&up.prefix)?;
            require_privilege()?;
            lab_up(&plan, up.force)?;
            print_status(global, &status(&plan)?)
        }
        LabAction::Down(p) => {
            let plan = plan_of(p)?;
            require_privilege()?;
            lab_down(&plan)?;
            if global.json {
                println!(
                    "{}",
                    serde_json::json!({ "prefix": plan.prefix, "down": true })
                );
            } else {
                println!("lab {}: down", plan.prefix);
            }
            Ok(())
        }
        LabAction::Status(p) => {
            let plan = plan_of(p)?;
            require_privilege()?;
            print_status(global, &status(&plan)?)
        }
        LabAction::Echo(e) => echo(global, e),
        LabAction::XdpAttach { ifname } => {
            let ifindex = ifindex(None, ifname)?;
            let id = steer_bpf::xdp::attach_pass(ifindex, steer_bpf::xdp::Mode::Native).map_err(
                |e| match e {
                    steer_bpf::Error::NotPermitted(_) => CliError::Privilege(e.to_string()),
                    other => CliError::Failed(format!("xdp_pass on {ifname}: {other}")),
                },
            )?;
            println!("{id}");
            Ok(())
        }
    }
}

/// `steer5g lab echo`: the echo host in `{P}-dn` until stopped, then what it echoed.
fn echo(global: &Global, args: &EchoArgs) -> Result<(), CliError> {
    let plan = plan_of(&args.prefix)?;
    let limit = crate::nf_cmd::duration_limit(args.duration)?.map_or(ECHO_MAX, |d| d.min(ECHO_MAX));
    require_privilege()?;
    let [_, (_, dn)] = plan.links();
    let addr = std::net::SocketAddrV4::new(dn.addr, args.port);
    let host = upf::userspace::echo::DnEcho::start(Some(&plan.dn()), addr, limit).map_err(|e| {
        CliError::Failed(format!(
            "echo on {addr} in {}: {e} (is the lab up? steer5g lab up --prefix {})",
            plan.dn(),
            plan.prefix
        ))
    })?;
    tracing::info!(%addr, ns = %plan.dn(), "echoing UDP");
    crate::nf_cmd::wait_for_stop(Some(limit))?;
    let st = host.stop();
    if global.json {
        println!(
            "{}",
            serde_json::json!({
                "prefix": plan.prefix,
                "addr": addr.to_string(),
                "echoed": st.echoed,
                "bytes": st.bytes,
                "send_errors": st.send_errors,
            })
        );
    } else {
        println!(
            "lab {} echo on {addr}: {} datagrams ({} B) echoed, {} send errors",
            plan.prefix, st.echoed, st.bytes, st.send_errors
        );
    }
    Ok(())
}

fn plan_of(p: &PrefixArg) -> Result<Plan, CliError> {
    Plan::new(&p.prefix).map_err(CliError::Usage)
}

fn require_privilege() -> Result<(), CliError> {
    let needed = (1u64 << CAP_NET_ADMIN) | (1u64 << CAP_SYS_ADMIN);
    match sys::cap_eff() {
        Some(caps) if caps & needed == needed => Ok(()),
        _ => Err(CliError::Privilege(
            "steer5g lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network \
             namespaces, veth links and attach XDP"
                .to_owned(),
        )),
    }
}

/// Creates the lab. An existing lab (any of its namespaces) is an error unless `force`.
/// A failure half-way removes what was built, so a retry starts clean.
fn lab_up(plan: &Plan, force: bool) -> Result<(), CliError> {
    let existing: Vec<String> = sys::namespaces()?
        .into_iter()
        .filter(|n| plan.namespaces().contains(n))
        .collect();
    if !existing.is_empty() {
        if !force {
            return Err(CliError::Failed(format!(
                "lab {p} already exists (namespaces {}): run `steer5g lab down --prefix {p}` \
                 or pass --force",
                existing.join(", "),
                p = plan.prefix
            )));
        }
        lab_down(plan)?;
    }
    build(plan).inspect_err(|_| {
        // The error that stopped the build matters more than any failure of this clean-up.
        let _ = lab_down(plan);
    })
}

fn build(plan: &Plan) -> Result<(), CliError> {
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
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Failed(format!("cannot find my own executable: {e}")))?;
    for end in plan.links().into_iter().flat_map(|(a, b)| [a, b]) {
        if end.xdp {
            sys::exec_in(&end.ns, exe.as_os_str(), &["lab", "xdp-attach", end.ifname])?;
        }
    }
    Ok(())
}

/// Removes the lab: XDP first (a namespace held open elsewhere would keep its veths and
/// their programs alive), then the namespaces. What is already gone is not an error.
fn lab_down(plan: &Plan) -> Result<(), CliError> {
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
struct Status {
    prefix: String,
    /// All three namespaces exist.
    up: bool,
    n3_subnet: String,
    n6_subnet: String,
    ue_pool: String,
    namespaces: Vec<NsStatus>,
}

#[derive(Debug, Serialize)]
struct NsStatus {
    name: String,
    exists: bool,
    ip_forward: Option<bool>,
    interfaces: Vec<IfStatus>,
}

#[derive(Debug, Serialize)]
struct IfStatus {
    name: String,
    ifindex: u64,
    up: bool,
    addresses: Vec<String>,
    /// Id of the attached XDP program, if any.
    xdp_prog_id: Option<u64>,
    /// TX checksum offload (`ethtool -k` tx-checksumming); `None` for `lo`.
    tx_checksum_offload: Option<bool>,
}

fn status(plan: &Plan) -> Result<Status, CliError> {
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

fn if_status(ns: &str, link: &Value) -> Result<IfStatus, CliError> {
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

fn ifindex(ns: Option<&str>, ifname: &str) -> Result<u32, CliError> {
    sys::addr_json(ns)?
        .iter()
        .find(|l| l["ifname"] == ifname)
        .and_then(|l| l["ifindex"].as_u64())
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| CliError::Failed(format!("no interface {ifname}")))
}

fn print_status(global: &Global, s: &Status) -> Result<(), CliError> {
    if global.json {
        let text = serde_json::to_string(s)
            .map_err(|e| CliError::Failed(format!("encoding the status: {e}")))?;
        println!("{text}");
        return Ok(());
    }
    println!(
        "lab {}: {} (N3 {}, N6 {}, UE pool {})",
        s.prefix,
        if s.up { "up" } else { "not up" },
        s.n3_subnet,
        s.n6_subnet,
        s.ue_pool
    );
    for ns in &s.namespaces {
        if !ns.exists {
            println!("  {}: absent", ns.name);
            continue;
        }
        println!("  {}:", ns.name);
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
            println!(
                "    {} {} {}{xdp}{tx}",
                i.name,
                if i.up { "up" } else { "down" },
                i.addresses.join(",")
            );
        }
    }
    Ok(())
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
