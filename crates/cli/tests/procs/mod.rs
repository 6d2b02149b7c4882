//! The `steer5g` child processes of the end-to-end tests: a data directory provisioned
//! through the CLI itself, a subcommand started and awaited until it serves, and an NF
//! stopped with its JSON report read back; the binary without capabilities; and the AMF and gNBs of an NG Setup over native
//! SCTP between two namespaces.
//!
//! Lives beside `common` (the N2 helpers) so that the tests that run whole cores and NFs
//! share one way of setting them up. Each test binary includes this module; not every
//! binary uses every helper.
#![allow(dead_code, unreachable_pub)]

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use testkit::netns::{Pair, Side};
use testkit::process::{ChildGuard, Finished};

use crate::common::{
    assert_all_ok, bin, json_of, ran, steer5g, Amf, Scratch, LISTEN_TIMEOUT, STOP_TIMEOUT,
};

/// How long `steer5g subscriber generate` or `import` may take.
const PROVISION_TIMEOUT: Duration = Duration::from_secs(120);

/// `steer5g subscriber generate` + `import`: a data directory under `scratch` that knows `n`
/// subscribers, and their CSV for the generator.
pub fn provision(scratch: &Scratch, n: u64) -> (String, String) {
    let dir = scratch.0.join("data").display().to_string();
    let csv = scratch.0.join("subs.csv").display().to_string();
    let count = n.to_string();
    for args in [
        vec![
            "subscriber",
            "generate",
            "--count",
            &count,
            "--data-dir",
            &dir,
            &csv,
        ],
        vec!["subscriber", "import", "--data-dir", &dir, &csv],
    ] {
        let done = testkit::process::run_timeout(&mut steer5g(None, &args), PROVISION_TIMEOUT)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(done.code(), Some(0), "{args:?}: {}", done.stderr);
    }
    (dir, csv)
}

/// `steer5g ran --json` (in `netns`, or the test's own namespace) loading the subscribers of
/// `csv` (keys from data directory `dir`) against the AMF at `amf`, with `extra` flags.
pub fn ran_cmd(netns: Option<&str>, csv: &str, dir: &str, amf: &str, extra: &[&str]) -> Command {
    let mut cmd = steer5g(
        netns,
        &[
            "ran",
            "--json",
            "--subscribers",
            csv,
            "--data-dir",
            dir,
            "--amf",
            amf,
        ],
    );
    cmd.args(extra);
    cmd
}

/// [`ran_cmd`] run to completion within `timeout`.
pub fn load_run(
    csv: &str,
    dir: &str,
    amf: &str,
    extra: &[&str],
    timeout: Duration,
) -> (Finished, Value) {
    let done = testkit::process::run_timeout(&mut ran_cmd(None, csv, dir, amf, extra), timeout)
        .unwrap_or_else(|e| panic!("ran: {e}"));
    let v = json_of(&done);
    (done, v)
}

/// Starts `steer5g ARGS` and waits for `ready` on its standard error.
pub fn start(args: &[&str], ready: &str) -> ChildGuard {
    let mut child =
        ChildGuard::spawn(&mut steer5g(None, args)).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    if let Err(e) = child.wait_for_stderr(ready, LISTEN_TIMEOUT) {
        panic!("{args:?} did not start: {e}\n{}", child.stderr_so_far());
    }
    child
}

/// `steer5g core` on 127.0.0.`host`, UDP encapsulation on `port`, in-process SBI (no SBI
/// sockets to collide with the other tests), with `extra` flags.
pub fn start_core(dir: &str, host: u8, port: u16, extra: &[&str]) -> ChildGuard {
    let addr = format!("127.0.0.{host}");
    let port = port.to_string();
    let mut args = vec![
        "core",
        "--json",
        "--data-dir",
        dir,
        "--sbi",
        "inproc",
        "--workers",
        "2",
        "--transport",
        "udp",
        "--n2-addr",
        &addr,
        "--udp-port",
        &port,
    ];
    args.extend_from_slice(extra);
    start(&args, "N2 listening")
}

/// Starts `steer5g ARGS --json` (an NF that prints its report on exit) and waits for
/// `ready`.
pub fn start_json(args: &[&str], ready: &str) -> ChildGuard {
    let mut args = args.to_vec();
    args.push("--json");
    start(&args, ready)
}

/// Stops NF `what` with SIGTERM: it exits 0 and its JSON report names it.
pub fn stop_nf(what: &str, child: ChildGuard) -> Value {
    let done = child
        .stop("TERM", STOP_TIMEOUT)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(done.code(), Some(0), "{what}: {}", done.stderr);
    let v = json_of(&done);
    assert_eq!(v["nf"], what, "{v}");
    v
}

/// NG Setup of `gnbs` gNBs over native SCTP (IP protocol 132) across `pair`: `steer5g amf`
/// in side A, `steer5g ran` in side B. Every gNB must set up; the AMF is left running.
pub fn raw_ng_setups(pair: &Pair, gnbs: u64) -> (Amf, Value) {
    let (amf_ip, ran_ip) = (
        pair.addr(Side::A).to_string(),
        pair.addr(Side::B).to_string(),
    );
    let amf = Amf::start(
        Some(pair.name(Side::A)),
        &["--transport", "raw", "--n2-addr", &amf_ip],
    );
    let (done, v) = ran(
        Some(pair.name(Side::B)),
        &[
            "--gnbs",
            &gnbs.to_string(),
            "--transport",
            "raw",
            "--amf",
            &amf_ip,
            "--local-addr",
            &ran_ip,
            "--timeout",
            "20",
        ],
        Duration::from_secs(60),
    );
    assert_all_ok(&done, &v, gnbs);
    (amf, v)
}

/// The binary under test run by `setpriv` with every capability dropped: an empty bounding
/// set leaves even a root process without capabilities. Arguments follow.
pub fn without_caps() -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--bounding-set", "-all", "--inh-caps", "-all", bin()]);
    c
}

/// Short SCTP timers for a `ran` (its `[sctp]` configuration): a gNB finds an AMF that was
/// killed by its retransmissions within a second instead of RFC 9260's minute.
#[allow(dead_code)]
pub fn short_sctp_timers(cmd: &mut Command) {
    for (k, v) in [
        ("STEER5G_SCTP_RTO_INITIAL_MS", "200"),
        ("STEER5G_SCTP_RTO_MIN_MS", "200"),
        ("STEER5G_SCTP_RTO_MAX_MS", "400"),
        ("STEER5G_SCTP_ASSOCIATION_MAX_RETRANS", "2"),
        ("STEER5G_SCTP_PATH_MAX_RETRANS", "2"),
    ] {
        cmd.env(k, v);
    }
}

/// Starts `ran`, SIGKILLs `victims` `after` into its run (asserting it is still running
/// then), and waits for it to finish.
#[allow(dead_code)]
pub fn run_and_kill(ran: &mut Command, after: Duration, victims: Vec<ChildGuard>) -> Finished {
    let mut ran = ChildGuard::spawn(ran).unwrap_or_else(|e| panic!("ran: {e}"));
    std::thread::sleep(after);
    assert!(
        ran.is_running(),
        "the run ended before the kill: {}",
        ran.stderr_so_far()
    );
    for v in victims {
        v.stop("KILL", Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("kill: {e}"));
    }
    ran.wait_timeout(Duration::from_secs(180))
        .unwrap_or_else(|e| panic!("ran: {e}"))
}
