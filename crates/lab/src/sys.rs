//! The one seam between the lab and the system: every `ip`, `ethtool` and `sysctl` run the
//! lab makes goes through here (STYLE lesson 5), so the rest of the module is plain logic.

use std::ffi::OsStr;
use std::process::Command;

use serde_json::Value;

/// A command that could not be run or exited non-zero, with what it printed.
#[derive(Debug, thiserror::Error)]
#[error("`{cmd}` failed: {reason}")]
pub struct SysError {
    cmd: String,
    reason: String,
}

/// Runs `program args…` and returns its standard output.
fn run<I, S>(program: &str, args: I) -> Result<String, SysError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    let cmd = std::iter::once(program.to_owned())
        .chain(
            args.iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned()),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new(program)
        .args(&args)
        .output()
        .map_err(|e| SysError {
            cmd: cmd.clone(),
            reason: e.to_string(),
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(SysError {
            cmd,
            reason: format!(
                "{} ({})",
                String::from_utf8_lossy(&out.stderr).trim(),
                out.status
            ),
        })
    }
}

/// `ip ARGS…` in the current namespace.
pub(crate) fn ip(args: &[&str]) -> Result<String, SysError> {
    run("ip", args)
}

/// `ip -n NS ARGS…`.
pub(crate) fn ip_in(ns: &str, args: &[&str]) -> Result<String, SysError> {
    run("ip", ["-n", ns].iter().chain(args))
}

/// `ip netns exec NS PROGRAM ARGS…`, for tools without a `-n` flag.
pub(crate) fn exec_in(ns: &str, program: &OsStr, args: &[&str]) -> Result<String, SysError> {
    let mut all: Vec<&OsStr> = vec![OsStr::new("netns"), OsStr::new("exec"), OsStr::new(ns)];
    all.push(program);
    all.extend(args.iter().map(OsStr::new));
    run("ip", all)
}

/// The names of the network namespaces `ip netns list` knows.
pub(crate) fn namespaces() -> Result<Vec<String>, SysError> {
    // Lines read `NAME` or `NAME (id: N)`.
    Ok(ip(&["netns", "list"])?
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

/// `ip -j [-n NS] addr show`: every interface with its addresses and XDP state.
pub(crate) fn addr_json(ns: Option<&str>) -> Result<Vec<Value>, SysError> {
    let text = match ns {
        Some(ns) => ip_in(ns, &["-j", "addr", "show"])?,
        None => ip(&["-j", "addr", "show"])?,
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(v)) => Ok(v),
        _ => Err(SysError {
            cmd: "ip -j addr show".to_owned(),
            reason: "output is not a JSON array".to_owned(),
        }),
    }
}

/// The MAC address of `ifname` in namespace `ns` (`ip -o link show`: "link/ether MAC").
pub(crate) fn mac(ns: &str, ifname: &str) -> Result<String, SysError> {
    let out = ip_in(ns, &["-o", "link", "show", "dev", ifname])?;
    parse_mac(&out).ok_or_else(|| SysError {
        cmd: format!("ip -n {ns} -o link show dev {ifname}"),
        reason: format!("no link/ether address in {:?}", out.trim()),
    })
}

/// The word after "link/ether" in `ip -o link show` output.
pub(crate) fn parse_mac(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    words.by_ref().find(|w| *w == "link/ether")?;
    words.next().map(str::to_owned)
}

/// `ethtool -K IF tx off` inside `ns`: locally generated packets on a veth otherwise carry
/// CHECKSUM_PARTIAL and arrive with bad checksums once XDP touched them (KERNEL.md §3).
pub(crate) fn tx_checksum_off(ns: &str, ifname: &str) -> Result<(), SysError> {
    exec_in(ns, OsStr::new("ethtool"), &["-K", ifname, "tx", "off"]).map(drop)
}

/// Whether TX checksum offload is on for `ifname` in `ns`, from `ethtool -k`.
pub(crate) fn tx_checksum_on(ns: &str, ifname: &str) -> Result<bool, SysError> {
    let text = exec_in(ns, OsStr::new("ethtool"), &["-k", ifname])?;
    Ok(parse_tx_checksumming(&text).unwrap_or(false))
}

/// The value of the `tx-checksumming:` line of `ethtool -k` output.
pub(crate) fn parse_tx_checksumming(text: &str) -> Option<bool> {
    let value = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("tx-checksumming:"))?;
    Some(value.trim().starts_with("on"))
}

/// `sysctl -qw KEY=VALUE` inside `ns` (sysctls under net/ are per namespace).
pub(crate) fn sysctl_in(ns: &str, setting: &str) -> Result<(), SysError> {
    exec_in(ns, OsStr::new("sysctl"), &["-qw", setting]).map(drop)
}

/// The effective capability mask of this process, from `/proc/self/status`.
pub(crate) fn cap_eff() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_is_the_word_after_link_ether() {
        let line = "7: n3@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\\    link/ether 2e:8c:01:aa:bb:cc brd ff:ff:ff:ff:ff:ff link-netns x-upf";
        assert_eq!(parse_mac(line).as_deref(), Some("2e:8c:01:aa:bb:cc"));
        assert_eq!(parse_mac("1: lo: <LOOPBACK> link/loopback 00:00"), None);
    }

    #[test]
    fn tx_checksumming_line_is_read() {
        let on = "Features for n3:\nrx-checksumming: on\ntx-checksumming: on\n\ttx-checksum-ipv4: off [fixed]\n";
        assert_eq!(parse_tx_checksumming(on), Some(true));
        let off = "Features for n3:\ntx-checksumming: off\n";
        assert_eq!(parse_tx_checksumming(off), Some(false));
        assert_eq!(parse_tx_checksumming("garbage"), None);
    }

    #[test]
    fn a_missing_program_is_an_error() {
        assert!(run("/nonexistent/steer5g-no-such-tool", ["x"]).is_err());
    }
}
