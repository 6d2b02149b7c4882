//! Live provisioning: subscribers read, added, changed and deleted through the provisioning
//! API of a running `steer5g core` (by `steer5g subscriber` on the same data directory, and
//! by a plain HTTP/1.1 client written here), each change in effect at the subscriber's next
//! procedure; the API off loopback needs a token.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::path::Path;
use std::time::Duration;

use common::{num, steer5g, Scratch, STOP_TIMEOUT};
use procs::{load_run, provision, start_core};
use serde_json::Value;

const RUN_TIMEOUT: Duration = Duration::from_secs(60);
const K: &str = "465b5ce8b199b49faa5f0a2ee238a6bc";
const OPC: &str = "cd63cb71954a9f4e48a5994e37a02baf";
const PREFIX: &str = "/nudr-dr/v2/subscription-data";

/// One HTTP/1.1 request over `stream`, written by hand (not with the project's client):
/// the status and the body.
fn http<S: std::io::Read + std::io::Write>(
    mut stream: S,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: steer5g\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {out}"));
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn unix(dir: &str) -> std::os::unix::net::UnixStream {
    std::os::unix::net::UnixStream::connect(Path::new(dir).join("provisioning.sock")).unwrap()
}

/// `steer5g subscriber ARGS --data-dir DIR --json`: exit status and the JSON it printed.
fn subscriber(dir: &str, args: &[&str]) -> (i32, Value, String) {
    let mut a = vec!["--json", "subscriber"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--data-dir", dir]);
    let o = steer5g(None, &a).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let v = serde_json::from_str(out.trim()).unwrap_or(Value::Null);
    (o.status.code().unwrap_or(-1), v, format!("{out}{err}"))
}

/// The CSV `csv` with every subscriber's SQN column set to `sqn`: the USIMs of a ran run
/// start with SQN_MS there.
fn with_sqn(csv: &str, out: &Path, sqn: u64) -> String {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let col = header.split(',').position(|c| c == "sqn").unwrap();
    let mut t = format!("{header}\n");
    for l in lines {
        let mut f: Vec<String> = l.split(',').map(str::to_owned).collect();
        f[col] = sqn.to_string();
        t.push_str(&f.join(","));
        t.push('\n');
    }
    std::fs::write(out, t).unwrap();
    out.display().to_string()
}

#[test]
fn changes_reach_a_running_core_at_the_next_procedure() {
    live_changes("sharded", 171);
}

/// The locking baseline shares one SQN shard among the workers: the owner of the change
/// tells the others too (any of them may have parked a request).
#[test]
fn changes_reach_a_running_locked_core_at_the_next_procedure() {
    live_changes("locked", 173);
}

fn live_changes(state: &str, host: u8) {
    let scratch = Scratch::new(&format!("provisioning-live-{state}"));
    let (dir, csv) = provision(&scratch, 4);
    let port = 19800 + u16::from(host);
    let core = start_core(&dir, host, port, &["--state", state]);
    let amf = format!("127.0.0.{host}:{port}");
    let amf = amf.as_str();

    // every UE registers once: each owning UDM shard now holds its SQN in memory
    let (done, v) = load_run(&csv, &dir, amf, &[], RUN_TIMEOUT);
    assert_eq!(
        (done.code(), num(&v, "runs_ok")),
        (Some(0), 4),
        "{v}\n{}",
        done.stderr
    );

    // the store is read and written while the core holds it (no "in use by another process")
    let (code, v, out) = subscriber(&dir, &["list"]);
    assert_eq!((code, num(&v, "total")), (0, 4), "{out}");
    assert!(
        !out.contains(K) && v["subscribers"][0].get("k").is_none(),
        "{out}"
    );
    let supi = v["subscribers"][0]["supi"].as_str().unwrap().to_owned();
    assert!(
        num(&v["subscribers"][0], "sqn") > 0,
        "the SQN reservation is stored: {v}"
    );

    // raise every SQN far above what the shards issued, through TS 29.505's document:
    // without the hop that makes each owner forget its in-memory SQN, the next vectors
    // would come from the old count, each USIM would answer SYNCH FAILURE and the UDM
    // would resynchronise
    const HIGH: u64 = 0x10_0000;
    for s in v["subscribers"].as_array().unwrap() {
        let path = format!(
            "{PREFIX}/{}/authentication-data/authentication-subscription",
            s["supi"].as_str().unwrap()
        );
        let patch =
            format!(r#"[{{"op":"replace","path":"/sequenceNumber/sqn","value":"{HIGH:012x}"}}]"#);
        let (st, body) = http(
            unix(&dir),
            "PATCH",
            &path,
            &[("Content-Type", "application/json-patch+json")],
            &patch,
        );
        assert_eq!(st, 204, "{body}");
    }
    // lowering it again without a new K is refused, and says why
    let (st, body) = http(
        unix(&dir),
        "PATCH",
        &format!("{PREFIX}/{supi}/authentication-data/authentication-subscription"),
        &[("Content-Type", "application/json-patch+json")],
        r#"[{"op":"replace","path":"/sequenceNumber/sqn","value":"000000000000"}]"#,
    );
    assert_eq!(st, 403, "{body}");
    assert!(
        body.contains("MODIFICATION_NOT_ALLOWED") && body.contains("new K"),
        "{body}"
    );

    let high_csv = with_sqn(&csv, &scratch.0.join("high.csv"), HIGH);
    let (done, v) = load_run(&high_csv, &dir, amf, &[], RUN_TIMEOUT);
    assert_eq!(
        (done.code(), num(&v, "runs_ok")),
        (Some(0), 4),
        "{v}\n{}",
        done.stderr
    );

    // a subscriber added while the core runs registers; a deleted one is refused
    let new_supi = "imsi-001010000009999";
    let (code, _, out) = subscriber(&dir, &["add", "--supi", new_supi, "--k", K, "--opc", OPC]);
    assert_eq!(code, 0, "{out}");
    let (code, _, out) = subscriber(&dir, &["add", "--supi", new_supi, "--k", K, "--opc", OPC]);
    assert_eq!(code, 2, "a duplicate add is bad input: {out}");
    let (code, _, out) = subscriber(&dir, &["delete", "--supi", &supi]);
    assert_eq!(code, 0, "{out}");
    let mut rows: Vec<String> = std::fs::read_to_string(&high_csv)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    rows.push(format!(
        "{new_supi},{K},{OPC},8000,0,1,,internet,1000000000,1000000000"
    ));
    let mixed = scratch.0.join("mixed.csv");
    std::fs::write(&mixed, rows.join("\n") + "\n").unwrap();
    let (_, v) = load_run(&mixed.display().to_string(), &dir, amf, &[], RUN_TIMEOUT);
    assert_eq!(num(&v, "runs_ok"), 4, "{v}");
    let failures = v["failures"].as_object().unwrap();
    assert_eq!(
        failures.values().filter_map(Value::as_u64).sum::<u64>(),
        1,
        "only the deleted subscriber fails: {v}"
    );

    let done = core.stop("TERM", STOP_TIMEOUT).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let report: Value = serde_json::from_str(done.stdout.trim()).unwrap();
    assert_eq!(
        num(&report, "udm.resyncs"),
        0,
        "every owner started from the raised SQN: {report}"
    );
    assert!(num(&report, "udm.vectors") >= 12, "{report}");
    assert!(
        !done.stderr.contains(K) && !done.stderr.contains(OPC),
        "a key in the log"
    );
    assert!(
        done.stderr.contains("provisioning: subscriber changed"),
        "writes are logged"
    );
    // the socket goes with the process
    assert!(!Path::new(&dir).join("provisioning.sock").exists());
}

#[test]
fn the_api_off_loopback_needs_a_token_and_checks_it() {
    let scratch = Scratch::new("provisioning-token");
    let (dir, _) = provision(&scratch, 2);
    let token = scratch.0.join("token");
    std::fs::write(&token, "s3cret-token\n").unwrap();
    let token = token.display().to_string();

    // not loopback, no token: refused before anything starts
    let done = testkit::process::run_timeout(
        &mut steer5g(
            None,
            &[
                "core",
                "--data-dir",
                &dir,
                "--provisioning-addr",
                "0.0.0.0:0",
                "--duration",
                "1",
            ],
        ),
        RUN_TIMEOUT,
    )
    .unwrap();
    assert_eq!(done.code(), Some(2), "{}", done.stderr);
    assert!(done.stderr.contains("needs a token"), "{}", done.stderr);

    let addr = "127.0.0.172:19972";
    let core = start_core(
        &dir,
        172,
        19973,
        &[
            "--provisioning-addr",
            addr,
            "--provisioning-token-file",
            &token,
        ],
    );
    let tcp = || std::net::TcpStream::connect(addr).unwrap();
    let (st, body) = http(tcp(), "GET", PREFIX, &[], "");
    assert_eq!(st, 401, "{body}");
    let (st, _) = http(
        tcp(),
        "GET",
        PREFIX,
        &[("Authorization", "Bearer wrong-token!")],
        "",
    );
    assert_eq!(st, 401);
    let (st, body) = http(
        tcp(),
        "GET",
        PREFIX,
        &[("Authorization", "Bearer s3cret-token")],
        "",
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["total"], 2);

    // the CLI on another "host": --api and --token-file
    let url = format!("http://{addr}");
    let other = scratch.0.join("elsewhere").display().to_string();
    let (code, v, out) = subscriber(&other, &["list", "--api", &url, "--token-file", &token]);
    assert_eq!((code, num(&v, "total")), (0, 2), "{out}");
    let (code, _, out) = subscriber(&other, &["list", "--api", &url]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("401"), "{out}");
    let done = core.stop("TERM", STOP_TIMEOUT).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert!(
        !done.stderr.contains("s3cret-token"),
        "the token in the log"
    );
}

#[test]
fn a_store_held_without_the_api_says_so() {
    let scratch = Scratch::new("provisioning-off");
    let (dir, _) = provision(&scratch, 1);
    let core = start_core(&dir, 174, 19974, &["--no-provisioning"]);
    assert!(!Path::new(&dir).join("provisioning.sock").exists());
    let (code, _, out) = subscriber(&dir, &["list"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("in use by another process") && out.contains("--no-provisioning"),
        "{out}"
    );
    let done = core.stop("TERM", STOP_TIMEOUT).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
}
