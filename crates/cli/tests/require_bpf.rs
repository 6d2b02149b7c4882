//! SBI kernel steering at the command line: each SBI listener says at
//! start-up how it delivers; without CAP_BPF a process still runs on the one-hop path and says
//! so, unless `--require-bpf` makes that exit status 3. As root the privilege is dropped for
//! the child with `setpriv` (an empty bounding set leaves a root process without
//! capabilities).
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::process::Command;
use std::time::Duration;

use testkit::privilege;
use testkit::process::run_timeout;

// No /metrics endpoint: the tests run in parallel and would share 127.0.0.1:9090.
const AUSF: [&str; 8] = [
    "ausf",
    "--workers",
    "2",
    "--sbi-addr",
    "127.0.0.1:0",
    "--duration",
    "0.3",
    "--no-metrics",
];

fn steer5g(drop_caps: bool, extra: &[&str]) -> Command {
    let mut c = if drop_caps {
        procs::without_caps()
    } else {
        Command::new(common::bin())
    };
    c.args(AUSF).args(extra).env_remove("STEER5G_REQUIRE_BPF");
    c
}

#[test]
fn without_cap_bpf_the_ausf_runs_one_hop_and_says_so() {
    if !privilege::require("dropping capabilities") {
        return;
    }
    let done = run_timeout(&mut steer5g(true, &[]), Duration::from_secs(20)).unwrap();
    assert_eq!(done.code(), Some(0), "stderr:\n{}", done.stderr);
    assert!(
        done.stderr.contains("one-hop hand-off (BPF not loaded: "),
        "stderr:\n{}",
        done.stderr
    );
}

#[test]
fn require_bpf_without_cap_bpf_exits_3() {
    if !privilege::require("dropping capabilities") {
        return;
    }
    let done = run_timeout(
        &mut steer5g(true, &["--require-bpf"]),
        Duration::from_secs(20),
    )
    .unwrap();
    assert_eq!(done.code(), Some(3), "stderr:\n{}", done.stderr);
    assert!(
        done.stderr.contains("BPF steering required"),
        "{}",
        done.stderr
    );
    // The environment variable does the same.
    let mut c = steer5g(true, &[]);
    c.env("STEER5G_REQUIRE_BPF", "1");
    let done = run_timeout(&mut c, Duration::from_secs(20)).unwrap();
    assert_eq!(done.code(), Some(3), "stderr:\n{}", done.stderr);
}

#[test]
fn with_cap_bpf_the_listener_is_kernel_steered() {
    if !privilege::require("sk_reuseport BPF") {
        return;
    }
    let done = run_timeout(
        &mut steer5g(false, &["--require-bpf"]),
        Duration::from_secs(20),
    )
    .unwrap();
    assert_eq!(done.code(), Some(0), "stderr:\n{}", done.stderr);
    assert!(
        done.stderr
            .contains(": kernel-steered (sk_reuseport, 2 workers)"),
        "stderr:\n{}",
        done.stderr
    );
}
