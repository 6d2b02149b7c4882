//! Whether this process may do what root-only tests need (namespaces, raw sockets, nftables).
//!
//! A test that needs privilege, or a tool, must not silently pass where it cannot run: in CI
//! a missing privilege or tool is a failure, on a developer's machine it is a visible skip.

use std::fs;

/// `CAP_NET_ADMIN` bit in the capability sets (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
/// `CAP_NET_RAW`: raw IP protocol 132 sockets and packet capture.
const CAP_NET_RAW: u32 = 13;
/// `CAP_SYS_ADMIN`: `ip netns add` mounts a namespace file and calls `unshare`.
const CAP_SYS_ADMIN: u32 = 21;

/// What [`require`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The privilege is there: run the test.
    Run,
    /// It is missing and this is a developer machine: skip the test.
    Skip,
    /// It is missing and CI demands it: fail the test.
    Fail,
}

/// True when the effective capability set holds everything the root-only tests use.
pub fn has_net_privilege() -> bool {
    match fs::read_to_string("/proc/self/status") {
        Ok(status) => parse_cap_eff(&status).is_some_and(|caps| {
            [CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN]
                .iter()
                .all(|&c| caps & (1 << c) != 0)
        }),
        Err(_) => false,
    }
}

/// Reads the `CapEff:` hex mask out of the text of `/proc/PID/status`.
fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

/// The policy, apart from the environment so it can be tested: `ci` is the value of `CI`,
/// `require_env` the value of `STEER5G_REQUIRE_PRIV`.
pub fn decide(privileged: bool, ci: Option<&str>, require_env: Option<&str>) -> Decision {
    if privileged {
        Decision::Run
    } else if ci.is_some_and(|v| !v.is_empty()) || require_env == Some("1") {
        Decision::Fail
    } else {
        Decision::Skip
    }
}

/// Call first in a test that needs root (`CAP_NET_ADMIN`, `CAP_NET_RAW`, `CAP_SYS_ADMIN`).
///
/// Returns true when the test may go on. Without the privilege it returns false after
/// printing `skipped: needs root (WHAT)`, so the test returns early; but when the
/// environment variable `CI` is non-empty or `STEER5G_REQUIRE_PRIV=1`, it panics instead,
/// because in CI a test that cannot run must fail rather than look green.
///
/// # Panics
/// In CI (see above) when the privilege is missing.
pub fn require(what: &str) -> bool {
    let ci = std::env::var("CI").ok();
    let req = std::env::var("STEER5G_REQUIRE_PRIV").ok();
    match decide(has_net_privilege(), ci.as_deref(), req.as_deref()) {
        Decision::Run => true,
        Decision::Skip => {
            eprintln!("skipped: needs root ({what})");
            false
        }
        Decision::Fail => panic!(
            "{what} needs root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN) and this process lacks it; \
             CI or STEER5G_REQUIRE_PRIV=1 is set, so this is a failure, not a skip"
        ),
    }
}

/// Call where a test cannot run because a tool it needs (`what`: a program, a library) is
/// not installed, then return from the test. On a developer machine this prints
/// `skipped: WHAT missing`; in CI (`CI` non-empty), which installs every tool
/// (scripts/install-deps.sh), it panics, since a test that cannot run must fail there.
///
/// # Panics
/// In CI.
pub fn skip_missing_tool(what: &str) {
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    assert!(!ci, "{what} missing in CI: a tool this test needs");
    eprintln!("skipped: {what} missing");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_runs_when_privileged_whatever_the_env() {
        assert_eq!(decide(true, Some("true"), Some("1")), Decision::Run);
        assert_eq!(decide(true, None, None), Decision::Run);
    }

    #[test]
    fn policy_skips_on_a_developer_machine() {
        assert_eq!(decide(false, None, None), Decision::Skip);
        assert_eq!(decide(false, Some(""), None), Decision::Skip);
        assert_eq!(decide(false, None, Some("0")), Decision::Skip);
    }

    #[test]
    fn policy_fails_in_ci() {
        assert_eq!(decide(false, Some("true"), None), Decision::Fail);
        assert_eq!(decide(false, Some("1"), None), Decision::Fail);
        assert_eq!(decide(false, None, Some("1")), Decision::Fail);
    }

    #[test]
    fn cap_eff_is_parsed_from_proc_status() {
        let status =
            "Name:\tcat\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\nCapBnd:\t0\n";
        assert_eq!(parse_cap_eff(status), Some(0x0000_01ff_feff_ffff));
        assert_eq!(parse_cap_eff("Name:\tx\n"), None);
        assert_eq!(parse_cap_eff("CapEff:\tzz\n"), None);
    }

    #[test]
    fn own_status_is_readable() {
        // Whatever the answer, reading our own status must not fail or panic.
        let status = fs::read_to_string("/proc/self/status");
        assert!(status.is_ok_and(|s| parse_cap_eff(&s).is_some()));
    }
}
