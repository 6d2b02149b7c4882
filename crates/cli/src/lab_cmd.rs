//! `steer5g lab up|down|status|echo`: the flags and the printing around the `lab` crate,
//! and the hidden `lab xdp-attach` that `lab up` runs inside a namespace.

use clap::{Args, Subcommand};
use lab::Plan;

use crate::cli::Global;
use crate::exit::CliError;

/// The longest an echo host runs.
const ECHO_MAX: std::time::Duration = std::time::Duration::from_secs(3600);

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

fn parse_prefix(s: &str) -> Result<String, String> {
    lab::validate_prefix(s).map(|()| s.to_owned())
}

/// Runs `steer5g lab …`.
pub(crate) fn run(global: &Global, args: &LabArgs) -> Result<(), CliError> {
    match &args.action {
        LabAction::Up(up) => {
            let plan = plan_of(&up.prefix)?;
            lab::require_privilege()?;
            let exe = std::env::current_exe()
                .map_err(|e| CliError::Failed(format!("cannot find my own executable: {e}")))?;
            lab::up(&plan, up.force, &exe)?;
            print_status(global, &lab::status(&plan)?)
        }
        LabAction::Down(p) => {
            let plan = plan_of(p)?;
            lab::require_privilege()?;
            lab::down(&plan)?;
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
            lab::require_privilege()?;
            print_status(global, &lab::status(&plan)?)
        }
        LabAction::Echo(e) => echo(global, e),
        LabAction::XdpAttach { ifname } => {
            let ifindex = lab::ifindex(None, ifname)?;
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
    lab::require_privilege()?;
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

fn print_status(global: &Global, s: &lab::Status) -> Result<(), CliError> {
    if global.json {
        crate::report::print_json(s)?;
    } else {
        print!("{}", s.human());
    }
    Ok(())
}
