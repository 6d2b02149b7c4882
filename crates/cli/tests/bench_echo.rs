//! `steer5g bench echo` and `bench usl` end to end on loopback, with short windows: the
//! output shape and that both designs echoed something. No rate or ratio is asserted (the
//! machine is shared and noisy); those come from release runs of the bench itself.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use serde_json::Value;
use testkit::process::run_timeout;

const TIMEOUT: Duration = Duration::from_secs(120);

fn run(args: &[&str]) -> testkit::process::Finished {
    let done = run_timeout(&mut common::steer5g(None, args), TIMEOUT).unwrap();
    assert_eq!(
        done.code(),
        Some(0),
        "steer5g {args:?} failed:\n{}",
        done.stderr
    );
    done
}

#[test]
fn single_share_prints_the_five_key_line() {
    let done = run(&[
        "bench",
        "echo",
        "--workers",
        "1",
        "--lock-share",
        "0.25",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--json",
    ]);
    // Exactly one line on standard output, and it is the object.
    let lines: Vec<&str> = done
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "stdout: {}", done.stdout);
    let v: Value = serde_json::from_str(lines[0]).unwrap();
    let obj = v.as_object().unwrap();
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "lock_share",
            "locked_rps",
            "sharded_rps",
            "work_us",
            "workers"
        ]
    );
    assert!(obj.values().all(Value::is_number), "{v}");
    assert_eq!(v["workers"], 1);
    assert_eq!(v["lock_share"], 0.25);
    assert_eq!(v["work_us"], 20.0);
    assert!(v["sharded_rps"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["locked_rps"].as_f64().unwrap() > 0.0, "{v}");
}

/// A two-share sweep writes its files, and the sharded runs say which path delivered them:
/// with root the sk_reuseport program (required, so no silent fallback) and nothing handed
/// off; without it the one-hop hand-off, counted.
#[test]
fn sweep_writes_files_and_reports_the_path() {
    let privileged = testkit::privilege::require("bench echo with sk_reuseport steering");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = vec![
        "bench",
        "echo",
        "--workers",
        "2",
        "--lock-share",
        "0,0.5",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--out",
        out,
        "--json",
    ];
    if privileged {
        args.push("--require-bpf");
    }
    let done = run(&args);
    let v = common::json_of(&done);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    for r in runs {
        assert!(r["sharded_rps"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["locked_rps"].as_f64().unwrap() > 0.0, "{r}");
        let sharded = &r["sharded"];
        let served = sharded["server"]["served"].as_u64().unwrap();
        let handed = sharded["server"]["handed_off"].as_u64().unwrap();
        assert!(served > 0, "{r}");
        if privileged {
            assert_eq!(sharded["delivery"]["path"], "bpf", "{r}");
            assert_eq!(handed, 0, "{r}");
            assert!(
                sharded["delivery"]["bpf_steered"].as_u64().unwrap() >= served,
                "{r}"
            );
        } else {
            assert_eq!(sharded["delivery"]["path"], "handoff", "{r}");
            assert!(handed > 0, "{r}");
        }
        assert_eq!(r["locked"]["delivery"]["path"], "shared-socket", "{r}");
        // The client keeps a window per worker's key space, so every worker served in both
        // designs; it batches, so there are fewer rounds (wake-ups) than echoes, and it
        // never has more echoes than requests.
        for mode in ["sharded", "locked"] {
            let m = &r[mode];
            let per_worker = m["delivery"]["per_worker"].as_array().unwrap();
            assert_eq!(per_worker.len(), 2, "{m}");
            assert!(per_worker.iter().all(|n| n.as_u64().unwrap() > 0), "{m}");
            let c = &m["client"];
            let received = c["received_total"].as_u64().unwrap();
            assert!(c["sent_total"].as_u64().unwrap() >= received, "{c}");
            assert!(c["rounds"].as_u64().unwrap() < received, "{c}");
            assert!(m["client_cpu_us_per_req"].as_f64().unwrap() > 0.0, "{m}");
        }
    }
    for f in ["lockecho.json", "lockecho.csv", "lockecho.svg"] {
        let p = dir.path().join(f);
        assert!(std::fs::metadata(&p).unwrap().len() > 0, "{}", p.display());
    }
    let csv = std::fs::read_to_string(dir.path().join("lockecho.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

#[test]
fn bad_shares_exit_2() {
    for share in ["1.5", "-0.1", "x"] {
        let done = run_timeout(
            &mut common::steer5g(None, &["bench", "echo", "--lock-share", share, "--json"]),
            TIMEOUT,
        )
        .unwrap();
        common::assert_json_error(&done, 2);
    }
}

#[test]
fn usl_prints_a_labelled_projection() {
    let dir = tempfile::tempdir().unwrap();
    let done = run(&[
        "bench",
        "usl",
        "--max-workers",
        "2",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--out",
        dir.path().to_str().unwrap(),
        "--json",
    ]);
    let v = common::json_of(&done);
    assert!(
        v["label"].as_str().unwrap().starts_with("PROJECTION"),
        "{v}"
    );
    let projections = v["projections"].as_array().unwrap();
    assert_eq!(projections.len(), 2, "{v}");
    for p in projections {
        assert_eq!(p["check"].as_array().unwrap().len(), 2, "{p}");
        assert!(p["fit_residual"].as_f64().unwrap().is_finite(), "{p}");
        let at: Vec<u64> = p["projected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["cores"].as_u64().unwrap())
            .collect();
        assert_eq!(at, [16, 64]);
        for x in p["projected"].as_array().unwrap() {
            let (lo, mid, hi) = (
                x["band_low"].as_f64().unwrap(),
                x["rps"].as_f64().unwrap(),
                x["band_high"].as_f64().unwrap(),
            );
            assert!(lo <= mid && mid <= hi, "{x}");
        }
    }
    assert!(dir.path().join("usl.svg").exists());
}

/// `--realtime` runs both designs with SCHED_FIFO threads when the privilege is there, and
/// exits 3 (missing privilege) before measuring anything when it is not.
#[test]
fn realtime_needs_and_uses_the_privilege() {
    let privileged = testkit::privilege::require("bench echo --realtime (SCHED_FIFO)");
    let args = [
        "bench",
        "echo",
        "--workers",
        "1",
        "--lock-share",
        "0.5",
        "--duration",
        "0.2",
        "--warmup",
        "0.05",
        "--realtime",
        "--json",
    ];
    let done = run_timeout(&mut common::steer5g(None, &args), TIMEOUT).unwrap();
    if privileged {
        assert_eq!(done.code(), Some(0), "{}", done.stderr);
        let v = common::json_of(&done);
        assert!(v["sharded_rps"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["locked_rps"].as_f64().unwrap() > 0.0, "{v}");
    } else if done.code() != Some(0) {
        // Without root the process may still hold CAP_SYS_NICE alone (then it runs, above);
        // otherwise it must say "missing privilege" and print nothing.
        common::assert_json_error(&done, 3);
    }
}
