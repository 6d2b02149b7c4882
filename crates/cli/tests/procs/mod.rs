//! The `steer5g` child processes of the end-to-end tests: a data directory provisioned
//! through the CLI itself, a subcommand started and awaited until it serves, and an NF
//! stopped with its JSON report read back.
//!
//! Lives beside `common` (the N2 helpers) so that the tests that run whole cores and NFs
//! share one way of setting them up. Each test binary includes this module; not every
//! binary uses every helper.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use serde_json::Value;
use testkit::process::ChildGuard;

use crate::common::{json_of, steer5g, Scratch, LISTEN_TIMEOUT, STOP_TIMEOUT};

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

/// Starts `steer5g ARGS` and waits for `ready` on its standard error.
pub fn start(args: &[&str], ready: &str) -> ChildGuard {
    let mut child =
        ChildGuard::spawn(&mut steer5g(None, args)).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    if let Err(e) = child.wait_for_stderr(ready, LISTEN_TIMEOUT) {
        panic!("{args:?} did not start: {e}\n{}", child.stderr_so_far());
    }
    child
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
