//! `steer5g ran` across the loss of its AMF (TS 38.413 §8.7.1): the core killed with SIGKILL
//! under load and started again on the same addresses and data directory, and an AMF that
//! never answers. Loopback addresses 127.0.0.150-152 are this file's own.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::time::Duration;

use common::nfs::stored_sqns;
use common::{json_of, num, scrape, sqns_by_supi, steer5g, wait_until, Scratch, STOP_TIMEOUT};
use procs::{provision, ran_cmd, start_core};
use serde_json::Value;
use testkit::process::ChildGuard;

const RUN_TIMEOUT: Duration = Duration::from_secs(180);
const SUBSCRIBERS: u32 = 24;
/// Registrations and de-registrations in all.
const RUNS: u64 = 96;

#[test]
fn ran_reconnects_after_the_core_is_killed_and_restarted() {
    let scratch = Scratch::new("ran-recovery");
    let (dir, csv) = provision(&scratch, SUBSCRIBERS.into());
    let (addr, port, metrics) = ("127.0.0.150", 20150, "127.0.0.150:20151");
    let before = stored_sqns(&dir);
    assert_eq!(before.len(), SUBSCRIBERS as usize);

    let core = start_core(&dir, 150, port, &["--metrics-addr", metrics]);
    let amf = format!("{addr}:{port}");
    let runs = RUNS.to_string();
    let mut cmd = ran_cmd(
        None,
        &csv,
        &dir,
        &amf,
        &[
            "--gnbs",
            "2",
            "--ues",
            "6",
            "--count",
            &runs,
            "--suci",
            "a",
            // Long enough that a UE waiting out its timeout would show as one.
            "--timeout",
            "90",
            "--connect-timeout",
            "60",
        ],
    );
    cmd.env("RUST_LOG", "info,steer5g::sqn=debug");
    let ran = ChildGuard::spawn(&mut cmd).unwrap();

    // Under load: the core has read a good share of the run's NGAP messages.
    let read = || {
        scrape(metrics, "steer5g_ngap_local_total").unwrap_or(0)
            + scrape(metrics, "steer5g_ngap_handed_off_total").unwrap_or(0)
    };
    wait_until("the core to read 60 NGAP messages", RUN_TIMEOUT, || {
        read() >= 60
    });
    core.signal("KILL").unwrap();
    let killed = core.wait_timeout(STOP_TIMEOUT).unwrap();
    assert_eq!(killed.code(), None, "the core ended by SIGKILL");

    // The same addresses and data directory: the gNBs' heartbeats reach the new process,
    // which answers with ABORT, and they set up again.
    let core = start_core(&dir, 150, port, &["--metrics-addr", metrics]);
    let done = ran.wait_timeout(RUN_TIMEOUT).unwrap();
    let v = json_of(&done);
    let c = core.stop("TERM", STOP_TIMEOUT).unwrap();
    assert_eq!(c.code(), Some(0), "core: {}", c.stderr);
    let cv = json_of(&c);

    // Some UEs failed, so the run did not succeed; they failed with the AMF, at once.
    assert_eq!(done.code(), Some(1), "{v}\n{}", done.stderr);
    let outages = v["outages"].as_array().unwrap();
    assert_eq!(outages.len(), 1, "{v}");
    let o = &outages[0];
    assert_eq!(num(o, "gnbs_lost"), 2, "{o}");
    assert_eq!(num(o, "gnbs_recovered"), 2, "{o}");
    assert!(num(o, "reconnect_attempts") >= 2, "{o}");
    assert!(o["duration_s"].as_f64().unwrap() > 0.0, "{o}");
    assert!(o["started_at_s"].as_f64().unwrap() > 0.0, "{o}");
    assert!(
        o["cause"].as_str().unwrap().contains("AbortedByPeer"),
        "{o}"
    );
    let failed = o["ues_failed"].as_array().unwrap();
    assert!(!failed.is_empty(), "{o}");
    for f in failed {
        assert_eq!(f["cause"], "AMF lost", "{f}");
        // Failed when the loss was seen, not after a timer of their own.
        assert!(f["after_ms"].as_f64().unwrap() < 1000.0, "{f}");
    }
    // Every failure of the run is one of those: no timeout, no "gNB is not set up".
    let failures = v["failures"].as_object().unwrap();
    let total: u64 = failures.values().map(|n| n.as_u64().unwrap()).sum();
    for cause in failures.keys() {
        assert!(cause.ends_with(": AMF lost"), "{cause}: {v}");
    }
    assert!(total >= 1 && total <= failed.len() as u64, "{v}");
    assert_eq!(num(&v, "runs_started"), RUNS, "{v}");
    assert_eq!(num(&v, "runs_not_started"), 0, "{v}");
    assert_eq!(
        num(&v, "runs_failed"),
        failed.len() as u64,
        "held and running UEs alike: {v}"
    );
    assert_eq!(num(&v, "runs_ok") + num(&v, "runs_failed"), RUNS, "{v}");
    // The rest registered: the runs placed on the second gNB while it was still taken for
    // up also failed with the AMF, but at most two rounds of the 6 in flight did.
    assert!(num(&v, "runs_ok") >= RUNS - 12, "{v}");
    assert!(num(&v, "sctp.aborts_received") >= 2, "{v}");
    assert_eq!(num(&cv, "ng_setup_ok"), 2, "{cv}");
    assert!(num(&cv, "registrations") > 0, "{cv}");

    // Nothing the UDR owns was lost, and no SQN was handed out twice: the SQNs each UE was
    // given only grow, across the restart too, and the store holds at least the last.
    let after = stored_sqns(&dir);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    let sqns = sqns_by_supi(&done.stderr);
    assert!(!sqns.is_empty(), "no AUTN logged:\n{}", done.stderr);
    let mut seen = 0;
    for (supi, list) in &sqns {
        seen += list.len();
        for w in list.windows(2) {
            assert!(w[0] < w[1], "{supi}: SQN {} then {}: {list:?}", w[0], w[1]);
        }
        let last = *list.last().unwrap();
        assert!(
            after[supi] >= last,
            "{supi}: store {} < {last}",
            after[supi]
        );
        assert!(
            list[0] > before[supi],
            "{supi}: {list:?} from {}",
            before[supi]
        );
    }
    // Every registration that got as far as authentication was logged.
    assert!(seen as u64 >= num(&v, "runs_ok"), "{seen} AUTNs: {v}");
}

/// `ran` against an address where nobody listens: the warning within 5 s, exit 1 after
/// `--connect-timeout`, in both modes.
#[test]
fn ran_says_nobody_answers_and_exits_1() {
    let scratch = Scratch::new("ran-no-amf");
    let csv = scratch.0.join("subs.csv");
    std::fs::write(
        &csv,
        "supi,k,opc,amf,sqn,sst,sd,dnn\nimsi-001010000000001,00112233445566778899aabbccddeeff,00112233445566778899aabbccddeeff,8000,0,1,,internet\n",
    )
    .unwrap();
    let csv = csv.display().to_string();
    let amf = "127.0.0.151:20152";
    let line = format!("no answer from AMF at {amf} (is it running?)");
    for extra in [&[][..], &["--subscribers", &csv, "--suci", "null"]] {
        let mut cmd = steer5g(
            None,
            &[
                "ran",
                "--json",
                "--amf",
                amf,
                "--gnbs",
                "3",
                "--connect-timeout",
                "8",
            ],
        );
        cmd.args(extra);
        let mut ran = ChildGuard::spawn(&mut cmd).unwrap();
        // Printed at 5 s; the margin is for a loaded machine, and it must come before the
        // exit at 8 s.
        ran.wait_for_stderr(&line, Duration::from_secs(7)).unwrap();
        assert!(
            ran.is_running(),
            "{extra:?}: exited before the connect timeout"
        );
        let done = ran.wait_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(done.code(), Some(1), "{extra:?}: {}", done.stderr);
        let v: Value = json_of(&done);
        assert_eq!(num(&v, "ng_setup_ok"), 0, "{v}");
        assert_eq!(num(&v, "ng_setup_failed"), 3, "{v}");
        if extra.is_empty() {
            assert_eq!(v["failures"][0]["cause"], line.as_str(), "{v}");
        } else {
            assert_eq!(num(&v, "runs_not_started"), 1, "{v}");
            let key = format!("NG Setup: {line}");
            assert_eq!(v["failures"][&key], 3, "{v}");
        }
    }
}
