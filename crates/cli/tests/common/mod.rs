//! Shared helpers of the N2 integration tests: run `steer5g amf` and `steer5g ran` as child
//! processes (optionally inside a network namespace), bounded in time, and read their JSON.
//!
//! Each test binary includes this module; not every binary uses every helper.
#![allow(dead_code, unreachable_pub)]

pub mod nfs;

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use testkit::process::{ChildGuard, Finished};

/// How long the AMF may take to log `N2 listening`.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a stopped AMF may take to shut its associations down and print its report.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_steer5g")
}

/// `steer5g ARGS`, inside namespace `netns` when given.
pub fn steer5g(netns: Option<&str>, args: &[&str]) -> Command {
    let mut cmd = testkit::process::in_netns(netns, bin());
    cmd.args(args)
        .env("RUST_LOG", "info")
        .env_remove("STEER5G_CONFIG");
    cmd
}

/// A `--json` run that failed with `code`: its standard output is the one error object,
/// `{"error": "steer5g ...", "exit": code}`.
pub fn assert_json_error(done: &Finished, code: i32) {
    assert_eq!(done.code(), Some(code), "{}", done.stderr);
    let v: Value = serde_json::from_str(done.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: stdout {:?}", done.stdout));
    assert_eq!(v["exit"], code, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("steer5g")),
        "{v}"
    );
}

/// The one JSON object a `--json` run prints on standard output.
pub fn json_of(done: &Finished) -> Value {
    let line = done
        .stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'));
    match line.map(serde_json::from_str::<Value>) {
        Some(Ok(v)) => v,
        _ => panic!(
            "no JSON object on stdout (exit {:?})\nstdout:\n{}\nstderr:\n{}",
            done.code(),
            done.stdout,
            done.stderr
        ),
    }
}

/// A JSON number as u64, with a message naming the path when it is missing.
pub fn num(v: &Value, path: &str) -> u64 {
    let mut cur = v;
    for key in path.split('.') {
        cur = &cur[key];
    }
    cur.as_u64()
        .unwrap_or_else(|| panic!("{path} is not a number in {v}"))
}

/// The AMF's count of NG Setup Failures sent: `n2.ng_setup_failed` is either a number or
/// an object of counts by reason, which are summed.
pub fn amf_setup_failed(a: &Value) -> u64 {
    let v = &a["n2"]["ng_setup_failed"];
    match (v.as_u64(), v.as_object()) {
        (Some(n), _) => n,
        (None, Some(by_reason)) => by_reason.values().filter_map(Value::as_u64).sum(),
        _ => panic!("n2.ng_setup_failed is neither a number nor an object in {a}"),
    }
}

/// A running `steer5g amf --json`, killed if the test ends without stopping it.
pub struct Amf {
    child: ChildGuard,
}

impl Amf {
    /// Starts the AMF with `args` (`--json` is added) and waits until it listens.
    pub fn start(netns: Option<&str>, args: &[&str]) -> Amf {
        let mut cmd = steer5g(netns, &["amf", "--json"]);
        cmd.args(args);
        let mut child = ChildGuard::spawn(&mut cmd).unwrap_or_else(|e| panic!("{e}"));
        if let Err(e) = child.wait_for_stderr("N2 listening", LISTEN_TIMEOUT) {
            panic!("AMF did not start listening: {e}");
        }
        Amf { child }
    }

    /// Stops the AMF with SIGTERM and returns how it ended and its JSON report.
    pub fn stop(self) -> (Finished, Value) {
        let done = self
            .child
            .stop("TERM", STOP_TIMEOUT)
            .unwrap_or_else(|e| panic!("stopping the AMF: {e}"));
        assert_eq!(
            done.code(),
            Some(0),
            "AMF exit status; stderr:\n{}",
            done.stderr
        );
        let v = json_of(&done);
        (done, v)
    }

    /// What the AMF logged so far (for failure messages).
    pub fn stderr(&self) -> String {
        self.child.stderr_so_far()
    }
}

/// Runs `steer5g ran --json ARGS` to completion within `timeout`.
pub fn ran(netns: Option<&str>, args: &[&str], timeout: Duration) -> (Finished, Value) {
    let mut cmd = steer5g(netns, &["ran", "--json"]);
    cmd.args(args);
    let done =
        testkit::process::run_timeout(&mut cmd, timeout).unwrap_or_else(|e| panic!("ran: {e}"));
    let v = json_of(&done);
    (done, v)
}

/// Asserts a ran report says all `n` gNBs completed NG Setup and it exited 0.
pub fn assert_all_ok(done: &Finished, v: &Value, n: u64) {
    assert_eq!(
        (
            num(v, "gnbs"),
            num(v, "ng_setup_ok"),
            num(v, "ng_setup_failed")
        ),
        (n, n, 0),
        "ran report: {v}\nstderr:\n{}",
        done.stderr
    );
    assert_eq!(done.code(), Some(0), "ran exit status; report: {v}");
}

/// The NG SETUP REQUEST a gNB of the test network (PLMN 001/01, TAC 1, SST 1) sends.
pub fn ng_setup_request(gnb_id: u32) -> Vec<u8> {
    use proto::ids::{GlobalRanNodeId, GnbId, Plmn, Snssai, Tac};
    use proto::ngap::{BroadcastPlmn, NgSetupRequest, PagingDrx, SupportedTa};
    let plmn = Plmn::new("001", "01").unwrap_or_else(|e| panic!("{e}"));
    let req = NgSetupRequest {
        global_ran_node_id: GlobalRanNodeId::Gnb {
            plmn,
            gnb_id: GnbId::new(gnb_id, 22).unwrap_or_else(|e| panic!("{e}")),
        },
        ran_node_name: Some(format!("usrsctp-gnb-{gnb_id}")),
        supported_tas: vec![SupportedTa {
            tac: Tac::new(1).unwrap_or_else(|e| panic!("{e}")),
            broadcast_plmns: vec![BroadcastPlmn {
                plmn,
                slices: vec![Snssai::new(1, None).unwrap_or_else(|e| panic!("{e}"))],
            }],
        }],
        default_paging_drx: Some(PagingDrx::V128),
    };
    req.encode().unwrap_or_else(|e| panic!("{e}"))
}

/// The NG SETUP RESPONSE an AMF of the test network (PLMN 001/01, SST 1) sends.
pub fn ng_setup_response() -> Vec<u8> {
    use proto::ids::{Guami, Plmn, Snssai};
    use proto::ngap::{NgSetupResponse, PlmnSupport};
    let plmn = Plmn::new("001", "01").unwrap_or_else(|e| panic!("{e}"));
    let rsp = NgSetupResponse {
        amf_name: "usrsctp-amf".to_owned(),
        served_guamis: vec![Guami::new(plmn, 2, 1, 0).unwrap_or_else(|e| panic!("{e}"))],
        relative_amf_capacity: 255,
        plmn_support: vec![PlmnSupport {
            plmn,
            slices: vec![Snssai::new(1, None).unwrap_or_else(|e| panic!("{e}"))],
        }],
        criticality_diagnostics: None,
    };
    rsp.encode().unwrap_or_else(|e| panic!("{e}"))
}

/// A scratch directory for this test's files, removed on drop.
pub struct Scratch(pub std::path::PathBuf);

impl Scratch {
    /// Creates `$TMPDIR/steer5g-cli-PID-NAME`.
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("steer5g-cli-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Keep the capture for a post-mortem when the test failed.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The Prometheus page at `addr` (its body), or `None` when it cannot be read.
pub fn scrape_page(addr: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let (_, body) = resp.split_once("\r\n\r\n")?;
    Some(body.to_owned())
}

/// The sum of every sample of metric family `family` on the Prometheus page at `addr`, or
/// `None` when the page cannot be read (the process is not up yet) or lacks the family.
pub fn scrape(addr: &str, family: &str) -> Option<u64> {
    let body = scrape_page(addr)?;
    let mut sum = None;
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        if series.split('{').next() == Some(family) {
            *sum.get_or_insert(0) += value.parse::<u64>().ok()?;
        }
    }
    sum
}

/// Polls `cond` every 50 ms until it holds; panics with `what` after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The SQNs of every AUTN each UE received, in order, from the `steer5g::sqn` debug lines
/// of a `ran` run's standard error (`RUST_LOG=...,steer5g::sqn=debug`).
pub fn sqns_by_supi(stderr: &str) -> std::collections::BTreeMap<String, Vec<u64>> {
    let mut out: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    let plain = strip_ansi(stderr);
    for line in plain.lines().filter(|l| l.contains("AUTN received")) {
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .map(str::to_owned)
        };
        if let (Some(supi), Some(sqn)) = (field("supi="), field("sqn=")) {
            if let Ok(sqn) = sqn.parse() {
                out.entry(supi).or_default().push(sqn);
            }
        }
    }
    out
}

/// `text` without ANSI escape sequences (colours of the log lines on a terminal-like
/// standard error).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ parameters... final letter
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `steer5g bench ARGS --json --out OUT` (logs at warn): it succeeds, prints exactly one line
/// of JSON, and reports `ok`; the report.
pub fn bench_json(args: &[&str], out: &std::path::Path) -> Value {
    let done = Command::new(bin())
        .args(args)
        .arg("--json")
        .arg("--out")
        .arg(out)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap_or_else(|e| panic!("steer5g {args:?}: {e}"));
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(
        stdout.lines().count(),
        1,
        "--json prints one line: {stdout}"
    );
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["ok"], true, "{v}");
    v
}
